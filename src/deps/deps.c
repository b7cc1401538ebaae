/* deps.c — the block-dependency analysis of deps.h: boxes per (edge, consumer block), classes,
 * counts, and the critical path in blocks. */
#include <stdlib.h>
#include <string.h>

#include "deps/deps.h"

static const char *const class_names[BD_DEP_CLASS_COUNT] = {"IDENTITY", "LOCAL", "PANEL", "ALL"};

const char *bd_dep_class_name(bd_dep_class c) {
    return (unsigned)c < BD_DEP_CLASS_COUNT ? class_names[c] : "?";
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return -floor_div(-a, b);
}


/* Region [rlo, rhi] (inclusive) of view y as a region of its root x: per dim group of the
 * reshape, the bounding box of the group's linear index span, exact when the region is whole in
 * the group's inner dims. */
static void view_region(const bd_value *x, const bd_value *y, const int64_t *rlo,
                        const int64_t *rhi, int64_t *xlo, int64_t *xhi) {
    bd_reshape_groups r;
    bd_reshape_groups_of(x, y, &r);
    for (int k = 0; k < x->rank; k++)
        xlo[k] = xhi[k] = 0; /* unit dims */
    for (int gi = 0; gi < r.n; gi++) {
        int64_t first = 0, last = 0;
        for (int j = r.gy0[gi]; j < r.gy1[gi]; j++) {
            int d = r.yd[j];
            first = first * y->dims[d] + rlo[d];
            last = last * y->dims[d] + rhi[d];
        }
        /* digits of first and last in the group's x dims, outermost first */
        int64_t fd[BD_MAX_RANK], ld[BD_MAX_RANK];
        for (int i = r.gx1[gi] - 1; i >= r.gx0[gi]; i--) {
            int64_t e = x->dims[r.xd[i]];
            fd[i] = first % e, ld[i] = last % e;
            first /= e, last /= e;
        }
        bool same = true; /* the outer digits agree so far: the next dim is bounded by them */
        for (int i = r.gx0[gi]; i < r.gx1[gi]; i++) {
            int d = r.xd[i];
            xlo[d] = same ? fd[i] : 0;
            xhi[d] = same ? ld[i] : x->dims[d] - 1;
            same = same && fd[i] == ld[i];
        }
    }
}

/* The producer blocks that write region [rlo, rhi] (inclusive) of the value p writes through w,
 * as an inclusive box; false when none. */
static bool pull_back(const bd_value *v, const int64_t *rlo, const int64_t *rhi,
                      const bd_nest *p, const bd_operand *w, int64_t *blo, int64_t *bhi) {
    int64_t ilo[BD_MAX_RANK], ihi[BD_MAX_RANK];
    for (int j = 0; j < p->n_iter; j++) {
        ilo[j] = 0;
        ihi[j] = p->extent[j] - 1;
    }
    for (int k = 0; k < v->rank; k++) {
        if (rlo[k] > rhi[k]) return false;
        const bd_access_dim *a = &w->dims[k];
        BD_ASSERT(a->kind == BD_ACCESS_AFFINE);
        if (a->iter < 0 || a->scale == 0) { /* the producer writes [offset, offset + window] */
            if (a->offset > rhi[k] || a->offset + a->window < rlo[k]) return false;
            continue;
        }
        /* iterations i whose written range [s*i + off, s*i + off + win] meets [rlo, rhi] */
        int64_t s = a->scale, lo, hi;
        if (s > 0) {
            lo = ceil_div(rlo[k] - a->offset - a->window, s);
            hi = floor_div(rhi[k] - a->offset, s);
        } else {
            lo = ceil_div(rhi[k] - a->offset, s);
            hi = floor_div(rlo[k] - a->offset - a->window, s);
        }
        if (lo > ilo[a->iter]) ilo[a->iter] = lo;
        if (hi < ihi[a->iter]) ihi[a->iter] = hi;
    }
    for (int j = 0; j < p->n_iter; j++) {
        if (ilo[j] > ihi[j]) return false;
        blo[j] = ilo[j] / p->tile[j];
        bhi[j] = ihi[j] / p->tile[j];
    }
    return true;
}

bool bd_dep_box(const bd_dep_edge *e, int64_t b, int64_t *lo, int64_t *hi) {
    for (int j = 0; j < e->rank; j++) {
        lo[j] = e->lo[b * e->rank + j];
        hi[j] = e->hi[b * e->rank + j];
        if (lo[j] > hi[j]) return false;
    }
    return e->rank > 0 || e->lo[b] == 0;
}

int64_t bd_dep_block_index(const bd_nest *p, const int64_t *point) {
    int64_t b = 0;
    for (int j = 0; j < p->n_iter; j++)
        b = b * p->grid[j] + point[j];
    return b;
}

bool bd_dep_box_next(int rank, const int64_t *lo, const int64_t *hi, int64_t *point) {
    for (int j = rank - 1; j >= 0; j--) {
        if (point[j] < hi[j]) {
            point[j]++;
            return true;
        }
        point[j] = lo[j];
    }
    return false;
}

int64_t bd_operand_footprint(const bd_graph *g, const bd_operand *o) {
    const bd_value *v = bd_graph_value((bd_graph *)g, o->value);
    int64_t n = 1;
    for (int k = 0; k < o->rank; k++) {
        const bd_access_dim *a = &o->dims[k];
        int64_t w = a->kind == BD_ACCESS_AFFINE ? a->window + 1 : v->dims[k];
        if (w > v->dims[k]) w = v->dims[k];
        if (!bd_mul_i64(n, w, &n)) return INT64_MAX;
    }
    return n;
}

static void classify(const bd_nest *p, bd_dep_edge *e, int64_t *hits) {
    bool all = true, identity = true;
    bool spans[BD_MAX_RANK];
    int64_t halo = 0;
    for (int j = 0; j < e->rank; j++)
        spans[j] = p->grid[j] > 1;
    memset(hits, 0, (size_t)p->n_blocks * sizeof *hits);
    for (int64_t b = 0; b < e->consumer_blocks; b++) {
        int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK], size = 1;
        if (!bd_dep_box(e, b, lo, hi)) {
            all = identity = false;
            continue;
        }
        for (int j = 0; j < e->rank; j++) {
            int64_t w = hi[j] - lo[j] + 1;
            size *= w;
            if (w - 1 > halo) halo = w - 1;
            if (w != p->grid[j]) spans[j] = false;
        }
        if (size != p->n_blocks) all = false;
        if (size != 1)
            identity = false;
        else if (hits[bd_dep_block_index(p, lo)]++)
            identity = false;
        e->block_edges += size;
    }
    if (e->consumer_blocks != p->n_blocks) identity = false;
    bool panel = false;
    for (int j = 0; j < e->rank; j++)
        panel |= spans[j];
    e->cls = identity ? BD_DEP_IDENTITY : all ? BD_DEP_ALL : panel ? BD_DEP_PANEL : BD_DEP_LOCAL;
    e->halo = e->cls == BD_DEP_LOCAL ? halo : 0;
}

/* Region [lo, hi] of container y as a region of x, written into y in place at inside_at along
 * inside_axis; false when the region misses x's slice. */
static bool inside_region(const bd_program *p, int x, int64_t *lo, int64_t *hi) {
    const bd_value *xv = bd_graph_value(p->graph, x);
    int axis = p->inside_axis[x];
    int64_t at = p->inside_at[x];
    lo[axis] -= at;
    hi[axis] -= at;
    if (lo[axis] < 0) lo[axis] = 0;
    if (hi[axis] > xv->dims[axis] - 1) hi[axis] = xv->dims[axis] - 1;
    return lo[axis] <= hi[axis];
}

/* The edge from producer pi (its operand wk writes the value read, or a value written into it
 * in place, or the container the value read is a slice of) to consumer ci's read operand k. */
static void edge_build(const bd_program *p, int pi, int wk, int ci, int k, int64_t *hits,
                       bd_deps *out) {
    bd_graph *g = p->graph;
    const bd_nest *pn = &BD_VEC_AT(&p->nests, bd_nest, pi), *cn = &BD_VEC_AT(&p->nests, bd_nest, ci);
    const bd_operand *o = &cn->operands[k];
    int root = bd_program_root(p, o->value);
    const bd_operand *w = &pn->operands[wk];
    int written = w->value; /* root, or a value written into root in place */
    const bd_value *v = bd_graph_value(g, o->value), *rv = bd_graph_value(g, root),
                   *wv = bd_graph_value(g, written);
    bd_dep_edge *e = bd_vec_push(&out->edges);
    e->producer = pi;
    e->consumer = ci;
    e->value = o->value; /* the value read: a view's edge is to its root's writer */
    e->operand = k;
    e->rank = pn->n_iter;
    e->consumer_blocks = cn->n_blocks;
    size_t slots = (size_t)cn->n_blocks * (size_t)(e->rank ? e->rank : 1);
    e->lo = malloc(slots * sizeof *e->lo);
    e->hi = malloc(slots * sizeof *e->hi);
    BD_ASSERT(e->lo && e->hi);
    for (int64_t b = 0; b < cn->n_blocks; b++) {
        int64_t clo[BD_MAX_RANK], chi[BD_MAX_RANK], blo[BD_MAX_RANK], bhi[BD_MAX_RANK];
        int64_t rlo[BD_MAX_RANK], rhi[BD_MAX_RANK], xlo[BD_MAX_RANK], xhi[BD_MAX_RANK];
        bd_nest_block_range(cn, b, clo, chi);
        bd_operand_region(cn, o, v, clo, chi, rlo, rhi);
        bool empty = false;
        for (int j = 0; j < v->rank; j++) empty |= rlo[j] > rhi[j];
        if (root != o->value && !empty) view_region(rv, v, rlo, rhi, xlo, xhi);
        else memcpy(xlo, rlo, sizeof xlo), memcpy(xhi, rhi, sizeof xhi);
        if (written != root && !empty) {
            /* a slice read and its container written, or another slice of that container (a
             * concat chain's, fuse/views.c): the region into the container's coordinates */
            int container = p->inside_of ? p->inside_of[root] : -1;
            if (container >= 0 && (container == written || container == p->inside_of[written])) {
                xlo[p->inside_axis[root]] += p->inside_at[root];
                xhi[p->inside_axis[root]] += p->inside_at[root];
            }
            if (container != written) empty = !inside_region(p, written, xlo, xhi);
        }
        bool any = !empty && pull_back(wv, xlo, xhi, pn, w, blo, bhi);
        if (e->rank == 0) {
            e->lo[b] = any ? 0 : 1;
            e->hi[b] = 0;
            continue;
        }
        for (int j = 0; j < e->rank; j++) {
            e->lo[b * e->rank + j] = any ? (int32_t)blo[j] : 1;
            e->hi[b * e->rank + j] = any ? (int32_t)bhi[j] : 0;
        }
    }
    classify(pn, e, hits);
    int64_t points = 1;
    for (int j = 0; j < cn->n_iter; j++)
        points *= cn->extent[j];
    if (!bd_mul_i64(points, bd_operand_footprint(g, o), &e->element_pairs))
        e->element_pairs = INT64_MAX;
}

/* The longest chain of blocks: depth of a block = 1 + the deepest producer block it needs. */
static int64_t critical_path(const bd_program *p, const bd_deps *deps) {
    size_t nn = p->nests.len;
    int64_t *first = malloc((nn + 1) * sizeof *first), *deepest = calloc(nn + 1, sizeof *deepest);
    BD_ASSERT(first && deepest);
    int64_t total = 0, best = 0;
    for (size_t i = 0; i < nn; i++) {
        first[i] = total;
        total += BD_VEC_AT(&p->nests, bd_nest, i).n_blocks;
    }
    int64_t *depth = calloc((size_t)total + 1, sizeof *depth);
    BD_ASSERT(depth);
    for (size_t c = 0; c < nn; c++) {
        const bd_nest *cn = &BD_VEC_AT(&p->nests, bd_nest, c);
        for (int64_t b = 0; b < cn->n_blocks; b++) {
            int64_t d = 0;
            for (int ei = deps->edge_start[c]; ei < deps->edge_start[c + 1]; ei++) {
                const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, ei);
                const bd_nest *pn = &BD_VEC_AT(&p->nests, bd_nest, e->producer);
                int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK], pt[BD_MAX_RANK];
                if (e->cls == BD_DEP_ALL) {
                    if (deepest[e->producer] > d) d = deepest[e->producer];
                    continue;
                }
                if (!bd_dep_box(e, b, lo, hi)) continue;
                memcpy(pt, lo, sizeof pt);
                do {
                    int64_t x = depth[first[e->producer] + bd_dep_block_index(pn, pt)];
                    if (x > d) d = x;
                } while (bd_dep_box_next(e->rank, lo, hi, pt));
            }
            depth[first[c] + b] = d + 1;
            if (d + 1 > deepest[c]) deepest[c] = d + 1;
            if (d + 1 > best) best = d + 1;
        }
    }
    free(first);
    free(deepest);
    free(depth);
    return best;
}

bd_status bd_deps_analyze(const bd_program *p, bd_deps *out, bd_diag *d) {
    bd_graph *g = p->graph;
    size_t nn = p->nests.len, nv = g->values.len;
    memset(out, 0, sizeof *out);
    int64_t blocks = 0;
    for (size_t i = 0; i < nn; i++)
        if (!bd_add_i64(blocks, BD_VEC_AT(&p->nests, bd_nest, i).n_blocks, &blocks)) blocks = INT64_MAX;
    if (blocks > BD_DEPS_MAX_BLOCKS)
        return bd_fail(d, BD_ERR_IO,
                       "the model's nests have %lld blocks, more than the block-dependency "
                       "analysis handles (%lld)",
                       (long long)blocks, (long long)BD_DEPS_MAX_BLOCKS);
    out->edges = BD_VEC(bd_dep_edge);
    out->edge_start = calloc(nn + 2, sizeof *out->edge_start);
    /* Writer lists: last[v] is the latest write of v, as nest * BD_NEST_MAX_OPERANDS + operand
     * (plus nests * BD_NEST_MAX_OPERANDS for a write into a concat output in place), and prev[w]
     * the write of the same value before w. */
    int *last = malloc((nv + 1) * sizeof *last),
        *prev = malloc(2 * (nn + 1) * BD_NEST_MAX_OPERANDS * sizeof *prev);
    int64_t max_blocks = 1;
    for (size_t i = 0; i < nn; i++) {
        int64_t nb = BD_VEC_AT(&p->nests, bd_nest, i).n_blocks;
        if (nb > max_blocks) max_blocks = nb;
        out->total_blocks += nb;
    }
    int64_t *hits = malloc((size_t)max_blocks * sizeof *hits);
    BD_ASSERT(out->edge_start && last && prev && hits);
    for (size_t v = 0; v < nv; v++)
        last[v] = -1;
    for (size_t c = 0; c < nn; c++) {
        const bd_nest *cn = &BD_VEC_AT(&p->nests, bd_nest, c);
        out->edge_start[c] = (int)out->edges.len;
        for (int k = 0; k < cn->n_operands && cn->n_blocks > 0; k++) {
            const bd_operand *o = &cn->operands[k];
            if (o->write) continue;
            bool again = false; /* the same value through two operands: one edge, the wider map */
            for (int j = 0; j < k && !again; j++)
                again = !cn->operands[j].write && cn->operands[j].value == o->value &&
                        memcmp(cn->operands[j].dims, o->dims, sizeof o->dims) == 0;
            if (again) continue;
            /* a slice of a container written whole (siblings.c) is written by the container's
             * writer; a concat part has a writer of its own */
            int root = bd_program_root(p, o->value), first = last[root];
            if (first < 0 && p->inside_of && p->inside_of[root] >= 0)
                first = last[p->inside_of[root]];
            for (int w = first; w >= 0; w = prev[w]) {
                int pi = w % ((int)nn * BD_NEST_MAX_OPERANDS) / BD_NEST_MAX_OPERANDS;
                const bd_nest *pn = &BD_VEC_AT(&p->nests, bd_nest, pi);
                if (pn->n_blocks == 0) continue;
                edge_build(p, pi, w % BD_NEST_MAX_OPERANDS, (int)c, k, hits, out);
            }
        }
        /* Its written values join their writer lists (Concat's parts write one value each). */
        for (int k = 0; k < cn->n_operands; k++) {
            const bd_operand *o = &cn->operands[k];
            if (!o->write) continue;
            int w = (int)c * BD_NEST_MAX_OPERANDS + k;
            prev[w] = last[o->value];
            last[o->value] = w;
            /* a value written into a concat output in place also writes that output: the same
             * write again, numbered past every nest's */
            if (p->inside_of && p->inside_of[o->value] >= 0) {
                int y = p->inside_of[o->value], w2 = w + (int)nn * BD_NEST_MAX_OPERANDS;
                prev[w2] = last[y];
                last[y] = w2;
            }
        }
    }
    out->edge_start[nn] = (int)out->edges.len;
    /* operator edges: distinct (producer, consumer) pairs */
    for (size_t i = 0; i < out->edges.len; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&out->edges, bd_dep_edge, i);
        bool seen = false;
        for (int j = out->edge_start[e->consumer]; j < (int)i && !seen; j++)
            seen = BD_VEC_AT(&out->edges, bd_dep_edge, j).producer == e->producer;
        out->op_edges += !seen;
        out->block_edges += e->block_edges;
        out->class_edges[e->cls]++;
        if (!bd_add_i64(out->element_pairs, e->element_pairs, &out->element_pairs))
            out->element_pairs = INT64_MAX;
    }
    out->critical_blocks = critical_path(p, out);
    free(last);
    free(prev);
    free(hits);
    return BD_OK;
}

void bd_deps_free(bd_deps *deps) {
    for (size_t i = 0; i < deps->edges.len; i++) {
        free(BD_VEC_AT(&deps->edges, bd_dep_edge, i).lo);
        free(BD_VEC_AT(&deps->edges, bd_dep_edge, i).hi);
    }
    bd_vec_free(&deps->edges);
    free(deps->edge_start);
    memset(deps, 0, sizeof *deps);
}

void bd_deps_dump(const bd_program *p, const bd_deps *deps, FILE *f) {
    bd_graph *g = p->graph;
    for (size_t i = 0; i < deps->edges.len; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, i);
        fprintf(f, "edge nest %d -> nest %d via t%d '%s': %s", e->producer, e->consumer, e->value,
                bd_quote(bd_graph_value(g, e->value)->name), bd_dep_class_name(e->cls));
        if (e->cls == BD_DEP_LOCAL) fprintf(f, " halo %lld", (long long)e->halo);
        fprintf(f, ", %lld block edges over %lld consumer blocks, %lld element pairs\n",
                (long long)e->block_edges, (long long)e->consumer_blocks,
                (long long)e->element_pairs);
    }
    fprintf(f,
            "deps: %lld operator edges, %lld block edges, %lld element pairs; "
            "%lld IDENTITY, %lld LOCAL, %lld PANEL, %lld ALL\n",
            (long long)deps->op_edges, (long long)deps->block_edges,
            (long long)deps->element_pairs, (long long)deps->class_edges[BD_DEP_IDENTITY],
            (long long)deps->class_edges[BD_DEP_LOCAL], (long long)deps->class_edges[BD_DEP_PANEL],
            (long long)deps->class_edges[BD_DEP_ALL]);
    fprintf(f, "deps: %lld blocks, critical path %lld blocks, parallelism %.2f\n",
            (long long)deps->total_blocks, (long long)deps->critical_blocks,
            deps->critical_blocks ? (double)deps->total_blocks / (double)deps->critical_blocks
                                  : 0.0);
}
