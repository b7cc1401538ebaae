/* views.c — Reshape-family copies become zero-copy views (fuse.h).
 *
 * A Reshape, Flatten, Squeeze or Unsqueeze nest copies its input's bytes unchanged: the output is
 * the same row-major data under other dims. When the output need not own its bytes (it is not a
 * graph output, and the input is not a constant the printer embeds), the nest is dropped and the
 * output becomes a view of the input's root value: the memory plan gives both the same bytes
 * and one lifetime, the printers address the view through its own dims, and the block-dependency
 * analysis maps a region of the view to a region of the root through the reshape's dim groups
 * (deps.c). A chain of views points at the first root.
 *
 * Concat in place: a Concat part (a copy of x into output y at an offset along one dim) whose
 * slice of y is contiguous (every dim of y before the axis is 1, as for a batch-1 channel
 * concat) is dropped, and x is stored inside y at that slice (bd_program.inside_of): x's producer
 * writes straight into the concat output. x must be an intermediate with a writer that only
 * this part reads (another reader would keep all of y alive as long as x: DenseNet reads each
 * feature again in every later layer's concat, and its arena would grow by 75%), not a view;
 * y must be an intermediate that is not itself written into another concat.
 *
 * Concat chains (DenseNet's dense blocks): layer k concatenates the block's input and the
 * features of layers 1..k-1, so each concat's inputs are the first inputs of the next one's, at
 * the same offsets, and every feature is read again by every later concat. The container of such
 * a chain (a concat that is not itself a slice of another) holds each of its inputs in place,
 * and each concat whose inputs all sit in the container at one common shift is a slice of it
 * (inside_of, with no writer of its own): its readers read the container's bytes, and every
 * copy of the chain goes. A feature then lives as long as the container, as it did as an input
 * of the last concat. */
#include <stdlib.h>

#include "fuse/fuse.h"

void bd_make_views(bd_program *p) {
    if (p->fusion == BD_FUSION_NONE) return; /* the one-nest-per-node baseline */
    bd_graph *g = p->graph;
    size_t nv = g->values.len, kept = 0;
    p->view_of = malloc((nv + 1) * sizeof *p->view_of);
    BD_ASSERT(p->view_of);
    for (size_t v = 0; v < nv; v++)
        p->view_of[v] = -1;
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (n->body == BD_BODY_COPY && n->params.copy.reshape && n->n_operands == 2 &&
            !n->operands[0].write && n->operands[1].write) {
            int x = n->operands[0].value, y = n->operands[1].value;
            const bd_value *xv = bd_graph_value(g, x), *yv = bd_graph_value(g, y);
            int root = bd_program_root(p, x);
            if (xv->dtype == yv->dtype && !bd_graph_value(g, root)->constant &&
                !bd_graph_is_output(g, y)) {
                p->view_of[y] = root;
                continue; /* the nest goes */
            }
        }
        BD_VEC_AT(&p->nests, bd_nest, kept++) = *n;
    }
    p->nests.len = kept;
}

/* A plain copy of x (read by the identity) into y: whole (*axis -1, *at 0: a Concat of one
 * input), or at an offset along one dim (the write map's only offset) into *axis, *at. */
static bool plain_copy(const bd_graph *g, const bd_nest *n, int *axis, int64_t *at) {
    if (n->body != BD_BODY_COPY || n->params.copy.reshape || n->params.copy.fill ||
        n->n_operands != 2 || n->operands[0].write || !n->operands[1].write)
        return false;
    const bd_operand *r = &n->operands[0], *w = &n->operands[1];
    const bd_value *x = bd_graph_value((bd_graph *)g, r->value), *y = bd_graph_value((bd_graph *)g, w->value);
    if (x->dtype != y->dtype || x->rank != y->rank || r->rank != n->n_iter || w->rank != n->n_iter)
        return false;
    *axis = -1;
    *at = 0;
    for (int k = 0; k < x->rank; k++) {
        const bd_access_dim *a = &r->dims[k], *b = &w->dims[k];
        if (a->kind != BD_ACCESS_AFFINE || a->iter != k || a->scale != 1 || a->offset || a->window ||
            b->kind != BD_ACCESS_AFFINE || b->iter != k || b->scale != 1 || b->window)
            return false;
        if (b->offset || x->dims[k] != y->dims[k]) {
            if (*axis >= 0) return false;
            *axis = k;
            *at = b->offset;
        }
    }
    return true;
}

/* A Concat part nest: a plain copy of x into y at an offset along one dim. */
static bool concat_part(const bd_graph *g, const bd_nest *n, int *axis, int64_t *at) {
    return plain_copy(g, n, axis, at) && *axis >= 0;
}

/* A value with bytes of its own that a pass may place: an intermediate (no constant, graph input
 * or output), the root of its views and none itself, inside nothing and holding nothing. */
static bool placeable(const bd_program *p, const bool *holds, const bool *viewed, int v) {
    const bd_value *val = bd_graph_value(p->graph, v);
    return bd_program_root(p, v) == v && !viewed[v] && p->inside_of[v] < 0 && !holds[v] &&
           !val->constant && !(val->flags & BD_VALUE_INPUT) && !bd_graph_is_output(p->graph, v);
}

/* One Concat part nest, and the concat output it belongs to (its group). */
typedef struct chain_part {
    int y, x, axis, nest, group;
    int64_t at;
} chain_part;

/* A concat output whose writers are all parts: parts [first, first + count) of the array. */
typedef struct chain_group {
    int y, first, count;
    bool member, container; /* a slice of another group / has one */
} chain_group;

/* A member group inside a container group, shifted along the axis. */
typedef struct chain_pair {
    int member, container;
    int64_t shift;
} chain_pair;

static int cmp_part_y(const void *a, const void *b) {
    const chain_part *u = a, *v = b;
    return u->y != v->y ? (u->y < v->y ? -1 : 1) : (u->nest < v->nest ? -1 : u->nest > v->nest);
}

/* Whether group m's parts all sit among group c's at one shift along the axis (into *shift). */
static bool chain_inside(const chain_part *parts, const chain_group *m, const chain_group *c,
                         int64_t *shift) {
    for (int i = 0; i < m->count; i++) {
        const chain_part *mp = &parts[m->first + i];
        int found = -1;
        for (int j = 0; j < c->count && found < 0; j++)
            if (parts[c->first + j].x == mp->x && parts[c->first + j].axis >= 0 &&
                (mp->axis < 0 || parts[c->first + j].axis == mp->axis))
                found = j;
        if (found < 0) return false;
        int64_t s = parts[c->first + found].at - mp->at;
        if (i > 0 && s != *shift) return false;
        *shift = s;
    }
    return *shift >= 0;
}

/* Places the concat chains (the header); their copy nests are marked in drop[]. */
static void concat_chains(bd_program *p, bool *holds, const bool *viewed, bool *drop) {
    bd_graph *g = p->graph;
    size_t nv = g->values.len, nn = p->nests.len;
    int *writers = calloc(nv + 1, sizeof *writers), *first_write = malloc((nv + 1) * sizeof *first_write);
    chain_part *parts = malloc((nn + 1) * sizeof *parts);
    chain_group *groups = malloc((nn + 1) * sizeof *groups);
    int *by_x = malloc((nn + 1) * sizeof *by_x); /* parts of each input, as lists from x_head */
    int *x_head = malloc((nv + 1) * sizeof *x_head);
    BD_ASSERT(writers && first_write && parts && groups && by_x && x_head);
    for (size_t v = 0; v < nv; v++)
        first_write[v] = x_head[v] = -1;
    int np = 0, ng = 0;
    for (size_t i = 0; i < nn; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        for (int k = 0; k < n->n_operands; k++) {
            int v = n->operands[k].value;
            bool again = false; /* a nest counts once per value */
            for (int j = 0; j < k; j++) again |= n->operands[j].write && n->operands[j].value == v;
            if (!n->operands[k].write || again) continue;
            writers[v]++;
            if (first_write[v] < 0) first_write[v] = (int)i;
        }
        chain_part c = {n->n_operands == 2 ? n->operands[1].value : -1,
                        n->operands[0].value, 0, (int)i, -1, 0};
        if (plain_copy(g, n, &c.axis, &c.at)) parts[np++] = c; /* axis -1: a whole copy */
    }
    qsort(parts, (size_t)np, sizeof *parts, cmp_part_y);
    for (int i = 0; i < np;) { /* groups: the concat outputs written by parts alone */
        int e = i;
        int64_t covered = 0;
        bool ok = true;
        const int axis = parts[i].axis; /* -1: a whole copy, alone in its group */
        while (e < np && parts[e].y == parts[i].y) {
            ok &= parts[e].axis == axis;
            for (int j = i; j < e; j++) ok &= parts[j].x != parts[e].x; /* no input twice */
            if (axis >= 0) covered += bd_graph_value(g, parts[e].x)->dims[axis];
            e++;
        }
        const bd_value *yv = bd_graph_value(g, parts[i].y);
        ok &= axis >= 0 || e - i == 1;
        ok &= e - i == writers[parts[i].y] && (axis < 0 || covered == yv->dims[axis]) &&
              placeable(p, holds, viewed, parts[i].y);
        for (int k = 0; k < axis; k++) ok &= yv->dims[k] == 1; /* contiguous slices */
        if (ok) {
            groups[ng] = (chain_group){parts[i].y, i, e - i, false, false};
            for (int j = i; j < e; j++) {
                parts[j].group = ng;
                by_x[j] = x_head[parts[j].x];
                x_head[parts[j].x] = j;
            }
            ng++;
        }
        i = e;
    }
    /* pairs: a group inside another takes the other's parts with its first input */
    bd_vec pairs = BD_VEC(chain_pair);
    for (int m = 0; m < ng; m++)
        for (int q = x_head[parts[groups[m].first].x]; q >= 0; q = by_x[q]) {
            chain_pair pr = {m, parts[q].group, 0};
            if (pr.container == m || !chain_inside(parts, &groups[m], &groups[pr.container], &pr.shift))
                continue;
            *(chain_pair *)bd_vec_push(&pairs) = pr;
            groups[m].member = groups[pr.container].container = true;
        }
    for (int z = 0; z < ng; z++) {
        chain_group *c = &groups[z];
        if (c->member || !c->container) continue;
        bool ok = true; /* each input written before it is copied, and placeable */
        for (int i = 0; i < c->count && ok; i++) {
            const chain_part *cp = &parts[c->first + i];
            ok = first_write[cp->x] >= 0 && first_write[cp->x] < cp->nest && placeable(p, holds, viewed, cp->x);
        }
        if (!ok) continue;
        for (int i = 0; i < c->count; i++) {
            const chain_part *cp = &parts[c->first + i];
            p->inside_of[cp->x] = c->y;
            p->inside_axis[cp->x] = cp->axis;
            p->inside_at[cp->x] = cp->at;
            drop[cp->nest] = true;
        }
        holds[c->y] = true;
        for (size_t i = 0; i < pairs.len; i++) {
            const chain_pair *pr = &BD_VEC_AT(&pairs, chain_pair, i);
            const chain_group *m = &groups[pr->member];
            if (pr->container != z || p->inside_of[m->y] >= 0) continue;
            p->inside_of[m->y] = c->y;
            p->inside_axis[m->y] = parts[c->first].axis;
            p->inside_at[m->y] = pr->shift;
            for (int j = 0; j < m->count; j++)
                drop[parts[m->first + j].nest] = true;
        }
    }
    bd_vec_free(&pairs);
    free(writers);
    free(first_write);
    free(parts);
    free(groups);
    free(by_x);
    free(x_head);
}

void bd_concat_in_place(bd_program *p) {
    if (p->fusion == BD_FUSION_NONE) return;
    bd_graph *g = p->graph;
    size_t nv = g->values.len, kept = 0;
    bool *holds = calloc(nv + 1, sizeof *holds); /* a value something is written into */
    bool *drop = calloc(p->nests.len + 1, sizeof *drop), *viewed = calloc(nv + 1, sizeof *viewed);
    BD_ASSERT(holds && drop && viewed);
    if (!p->inside_of) bd_program_inside_init(p); /* siblings.c may have placed slices */
    for (size_t v = 0; p->view_of && v < nv; v++)
        if (p->view_of[v] >= 0) viewed[p->view_of[v]] = true;
    concat_chains(p, holds, viewed, drop);
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        int axis;
        int64_t at;
        if (drop[i]) continue; /* a concat chain's copy */
        if (concat_part(g, n, &axis, &at)) {
            int x = n->operands[0].value, y = n->operands[1].value;
            const bd_value *xv = bd_graph_value(g, x), *yv = bd_graph_value(g, y);
            /* contiguous slice: every dim before the axis is 1 in the output */
            bool contiguous = true;
            for (int k = 0; k < axis; k++) contiguous &= yv->dims[k] == 1;
            bool writable = bd_program_root(p, x) == x && p->inside_of[x] < 0 && !holds[x] &&
                            !xv->constant && !(xv->flags & BD_VALUE_INPUT) && !bd_graph_is_output(g, x);
            bool container = bd_program_root(p, y) == y && p->inside_of[y] < 0 && !yv->constant &&
                             !(yv->flags & BD_VALUE_INPUT) && !bd_graph_is_output(g, y);
            /* x written by a nest before this one (not a graph input, which has no writer) */
            bool written = false;
            for (size_t j = 0; j < i && !written; j++) {
                const bd_nest *w = &BD_VEC_AT(&p->nests, bd_nest, j);
                for (int k = 0; k < w->n_operands; k++)
                    written |= w->operands[k].write && w->operands[k].value == x;
            }
            /* no view of x (a view would need its own place inside y): viewed[x] */
            /* and no other reader: one would keep all of y alive for x (DenseNet reads each
             * feature again in every later layer's concat) */
            bool shared = false;
            for (size_t j = 0; j < p->nests.len && !shared; j++) {
                const bd_nest *o = &BD_VEC_AT(&p->nests, bd_nest, j);
                for (int k = 0; k < o->n_operands && j != i; k++)
                    shared |= !o->operands[k].write && o->operands[k].value == x;
            }
            if (contiguous && writable && container && written && !viewed[x] && !shared) {
                p->inside_of[x] = y;
                p->inside_axis[x] = axis;
                p->inside_at[x] = at;
                holds[y] = true;
                continue; /* the copy goes: x's producer writes into y's bytes */
            }
        }
        BD_VEC_AT(&p->nests, bd_nest, kept++) = *n;
    }
    p->nests.len = kept;
    free(holds);
    free(drop);
    free(viewed);
}
