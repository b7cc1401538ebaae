/* plan.c — the memory plan of plan.h: storage classes, then the arena by lifetimes. */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* The bytes of v's tensor, INT64_MAX when they overflow. */
static int64_t value_bytes(const bd_value *v) {
    int64_t numel, bytes;
    if (!bd_dims_numel(v->rank, v->dims, &numel) || !bd_dtype_nbytes(v->dtype, numel, &bytes))
        return INT64_MAX;
    return bytes;
}

static int64_t align64(int64_t x) {
    return (x + 63) & ~(int64_t)63;
}

typedef struct live_range {
    int value;
    int first, last; /* schedule steps */
    int64_t bytes, offset;
} live_range;

static int cmp_by_size(const void *a, const void *b) {
    const live_range *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->value - y->value;
}

/* Greedy by size, first fit among ranges whose lifetimes overlap: a classic, good-enough plan. */
static int64_t plan_arena(live_range *r, int n) {
    qsort(r, (size_t)n, sizeof *r, cmp_by_size);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t off = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (int j = 0; j < i; j++) {
                bool overlap_time = r[j].first <= r[i].last && r[i].first <= r[j].last;
                bool overlap_mem = r[j].offset < off + r[i].bytes && off < r[j].offset + r[j].bytes;
                if (overlap_time && overlap_mem) {
                    off = align64(r[j].offset + r[j].bytes);
                    moved = true;
                }
            }
        }
        r[i].offset = off;
        if (off + r[i].bytes > total) total = off + r[i].bytes;
    }
    return total;
}

static bd_status place(const bd_program *p, const bd_schedule *s, bd_memory_plan *m,
                       live_range *ranges, int *index, int *n_ranges, bd_diag *d) {
    bd_graph *g = p->graph;
    for (int step = 0; step < s->n_steps; step++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[step]);
        for (int k = 0; k < n->n_operands; k++) {
            /* a view lives in its root, a concat part written in place in the concat output */
            int v = bd_program_storage_root(p, n->operands[k].value);
            const bd_value *val = bd_graph_value(g, v);
            if (!bd_dtype_supported(val->dtype))
                return bd_fail(d, BD_ERR_UNSUPPORTED,
                               "value '%s' has dtype %s, which code "
                               "generation does not handle",
                               bd_quote(val->name), bd_dtype_name(val->dtype));
            bd_storage *st = &m->storage[v];
            if (st->kind == BD_STORE_INPUT || st->kind == BD_STORE_OUTPUT) continue;
            if (val->constant && !n->operands[k].write) {
                if (st->kind == BD_STORE_NONE) {
                    *st = (bd_storage){BD_STORE_CONST, align64(m->const_bytes)};
                    m->const_bytes = st->where + val->constant->nbytes;
                    *(int *)bd_vec_push(&m->constants) = v;
                }
                continue;
            }
            if (index[v] < 0) {
                int64_t numel, bytes;
                if (!bd_dims_numel(val->rank, val->dims, &numel) ||
                    !bd_dtype_nbytes(val->dtype, numel, &bytes))
                    return bd_fail(d, BD_ERR_IO, "value '%s' is too large", bd_quote(val->name));
                index[v] = *n_ranges;
                ranges[(*n_ranges)++] = (live_range){v, step, step, align64(bytes ? bytes : 1), 0};
            }
            ranges[index[v]].last = step;
        }
    }
    return BD_OK;
}

/* Whether operand o reads, at every element of nest n, the element n writes there (the identity
 * over n's domain) of a value of the output's shape and dtype. */
static bool reads_in_step(const bd_nest *n, const bd_operand *o, const bd_value *x,
                          const bd_value *y) {
    if (!bd_access_is_identity(o, n->n_iter) || x->rank != y->rank || x->dtype != y->dtype)
        return false;
    for (int k = 0; k < x->rank; k++)
        if (x->dims[k] != y->dims[k]) return false;
    return true;
}

/* In place: an elementwise nest whose input dies in it (its last use) and is read exactly where
 * the output is written takes the input's bytes for its output; the two ranges merge into one
 * (ranges[index[y]] then gets no bytes of its own, bytes -1). Each element is read before it is
 * written by the same iteration, so the body is safe; the elementwise printer loads such an
 * input through the output's pointer, the BatchNormalization printers through an unrestricted
 * one. A BatchNormalization written over its input took DenseNet-121's 62 of them from 2.4 to
 * 1.0 ms at 1 thread: writing a fresh buffer cost each line a read for ownership. */
static void merge_in_place(const bd_program *p, const bd_schedule *s, bd_memory_plan *m,
                           live_range *ranges, const int *index) {
    bd_graph *g = p->graph;
    for (int step = 0; step < s->n_steps; step++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[step]);
        /* and an inference BatchNormalization, elementwise too (DenseNet's, on its Concats) */
        const bool batchnorm = n->body == BD_BODY_NORM && n->params.norm.kind == BD_NORM_BATCH &&
                               n->params.norm.y == n->n_operands - 1;
        if (n->body != BD_BODY_ELEMENTWISE && !batchnorm) continue;
        const bd_operand *w = &n->operands[n->n_operands - 1];
        int y = w->value;
        if (bd_program_root(p, y) != y || index[y] < 0 || ranges[index[y]].first != step) continue;
        for (int k = 0; k < n->n_operands - 1; k++) {
            int x = n->operands[k].value;
            if (bd_program_root(p, x) != x || index[x] < 0) continue;
            int rep = m->in_place_of[x] >= 0 ? m->in_place_of[x] : x;
            live_range *rx = &ranges[index[rep]], *ry = &ranges[index[y]];
            if (rx->last != step || rx->bytes < ry->bytes ||
                !reads_in_step(n, &n->operands[k], bd_graph_value(g, x), bd_graph_value(g, y)))
                continue;
            bool again = false; /* x read through a second, other map would be overwritten */
            for (int j = 0; j < n->n_operands - 1 && !again; j++)
                again = j != k && n->operands[j].value == x &&
                        memcmp(n->operands[j].dims, n->operands[k].dims, sizeof w->dims);
            if (again) continue;
            rx->last = ry->last;
            ry->bytes = -1;
            m->in_place_of[y] = rep;
            break;
        }
    }
}

static int cmp_planned_first(const void *a, const void *b) {
    const live_range *x = a, *y = b;
    return (x->bytes < 0) - (y->bytes < 0);
}

bd_status bd_plan_memory(const bd_program *p, const bd_schedule *s, int64_t max_activation_bytes,
                         bd_memory_plan *m, bd_diag *d) {
    bd_graph *g = p->graph;
    size_t nv = g->values.len;
    memset(m, 0, sizeof *m);
    m->constants = BD_VEC(int);
    m->largest = -1;
    m->storage = calloc(nv + 1, sizeof *m->storage);
    live_range *ranges = calloc(nv + 1, sizeof *ranges);
    int *index = malloc((nv + 1) * sizeof *index);
    BD_ASSERT(m->storage && ranges && index);
    for (size_t v = 0; v < nv; v++)
        index[v] = -1;
    for (size_t i = 0; i < g->inputs.len; i++)
        m->storage[BD_VEC_AT(&g->inputs, int, i)] = (bd_storage){BD_STORE_INPUT, (int64_t)i};
    for (size_t i = 0; i < g->outputs.len; i++) {
        int v = BD_VEC_AT(&g->outputs, int, i);
        if (m->storage[v].kind == BD_STORE_NONE)
            m->storage[v] = (bd_storage){BD_STORE_OUTPUT, (int64_t)i};
    }
    int n_ranges = 0;
    m->in_place_of = malloc((nv + 1) * sizeof *m->in_place_of);
    BD_ASSERT(m->in_place_of);
    for (size_t v = 0; v < nv; v++)
        m->in_place_of[v] = -1;
    bd_status st = place(p, s, m, ranges, index, &n_ranges, d);
    /* Under the block schedule a value stays live until its last step can no longer be running:
     * a later value in its bytes would otherwise need edges (plan/hazards.c) that hold its
     * writers back behind blocks they do not depend on. */
    for (int i = 0; !st && s->overlap_end && i < n_ranges; i++)
        ranges[i].last = s->overlap_end[ranges[i].last];
    live_range *plain = malloc(((size_t)n_ranges + 1) * sizeof *plain);
    BD_ASSERT(plain);
    memcpy(plain, ranges, (size_t)n_ranges * sizeof *ranges);
    if (!st && p->fusion != BD_FUSION_NONE) merge_in_place(p, s, m, ranges, index);
    if (!st) {
        /* the ranges merged into another go last and take no bytes */
        qsort(ranges, (size_t)n_ranges, sizeof *ranges, cmp_planned_first);
        int planned = 0;
        while (planned < n_ranges && ranges[planned].bytes >= 0) planned++;
        m->arena_bytes = plan_arena(ranges, planned);
        /* Merged ranges are longer, and first fit can pack them worse (DenseNet by a fifth):
         * keep the in-place plan only when its arena is no larger than the plain one. */
        int64_t plain_bytes = planned < n_ranges ? plan_arena(plain, n_ranges) : INT64_MAX;
        if (plain_bytes < m->arena_bytes) {
            memcpy(ranges, plain, (size_t)n_ranges * sizeof *ranges);
            planned = n_ranges;
            m->arena_bytes = plain_bytes;
            for (size_t v = 0; v < nv; v++)
                m->in_place_of[v] = -1;
        }
        m->largest = planned ? ranges[0].value : -1; /* plan_arena sorted them, largest first */
        for (int i = 0; i < planned; i++)
            m->storage[ranges[i].value] = (bd_storage){BD_STORE_ARENA, ranges[i].offset};
        for (size_t v = 0; v < nv; v++)
            if (m->in_place_of[v] >= 0) m->storage[v] = m->storage[m->in_place_of[v]];
        for (size_t v = 0; p->inside_of && v < nv; v++) {
            if (p->inside_of[v] < 0) continue;
            const bd_value *y = bd_graph_value(g, p->inside_of[v]);
            int64_t strides[BD_MAX_RANK], bytes;
            bd_dims_strides(y->rank, y->dims, strides);
            bd_dtype_nbytes(y->dtype, p->inside_at[v] * strides[p->inside_axis[v]], &bytes);
            m->storage[v] = m->storage[p->inside_of[v]];
            m->storage[v].where += bytes;
        }
        for (size_t v = 0; p->view_of && v < nv; v++)
            if (p->view_of[v] >= 0) m->storage[v] = m->storage[p->view_of[v]];
        for (size_t i = 0; i < p->nests.len; i++) {
            const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
            if (n->scratch_bytes > m->scratch_bytes) m->scratch_bytes = n->scratch_bytes;
        }
        m->scratch_bytes = align64(m->scratch_bytes);
    }
    free(ranges);
    free(plain);
    free(index);
    /* The executable allocates this much when it starts (the arena, each thread's scratch at
     * least once, and the graph outputs it hands back): refuse here rather than fail there. */
    int64_t outputs = 0;
    for (size_t i = 0; i < g->outputs.len && !st; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->outputs, int, i));
        int64_t bytes = value_bytes(v);
        if (bytes == INT64_MAX || !bd_add_i64(outputs, bytes, &outputs))
            st = bd_fail(d, BD_ERR_IO, "graph output '%s' is too large", bd_quote(v->name));
    }
    int64_t need = m->arena_bytes + m->scratch_bytes;
    if (!st && !bd_add_i64(need, outputs, &need)) need = INT64_MAX;
    if (!st && max_activation_bytes > 0 && need > max_activation_bytes) {
        const bd_value *big = m->largest >= 0 ? bd_graph_value(g, m->largest) : NULL;
        int64_t big_bytes = big ? value_bytes(big) : 0;
        for (size_t i = 0; i < g->outputs.len; i++) { /* an output may be the largest tensor */
            const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->outputs, int, i));
            int64_t b = value_bytes(v);
            if (b > big_bytes) big = v, big_bytes = b;
        }
        char shape[256] = "-";
        if (big) bd_shape_str(big, shape, sizeof shape);
        st = bd_fail(d, BD_ERR_IO,
                     "the model needs %lld bytes of activation memory, above the limit of %lld "
                     "(largest tensor '%s': %s%s; %lld bytes of intermediates and scratch, %lld "
                     "of graph outputs); raise it with --max-activations",
                     (long long)need, (long long)max_activation_bytes,
                     big ? bd_quote(big->name) : "-", big ? bd_dtype_name(big->dtype) : "", shape,
                     (long long)(m->arena_bytes + m->scratch_bytes), (long long)outputs);
    }
    return st;
}

bd_status bd_plan_precheck(const bd_program *p, int64_t max_activation_bytes, bd_diag *d) {
    if (max_activation_bytes <= 0) return BD_OK;
    bd_graph *g = p->graph;
    int64_t outputs = 0, largest = 0;
    const bd_value *big = NULL;
    for (size_t i = 0; i < g->outputs.len; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->outputs, int, i));
        int64_t bytes = value_bytes(v);
        if (bytes == INT64_MAX || !bd_add_i64(outputs, bytes, &outputs)) outputs = INT64_MAX;
        if (bytes > largest) largest = bytes, big = v;
    }
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        for (int k = 0; k < n->n_operands; k++) {
            const bd_value *v = bd_graph_value(g, n->operands[k].value);
            if (v->constant || (v->flags & (BD_VALUE_INPUT | BD_VALUE_OUTPUT))) continue;
            int64_t bytes = value_bytes(v);
            if (bytes > largest) largest = bytes, big = v;
        }
    }
    int64_t need = outputs;
    if (big && !(big->flags & BD_VALUE_OUTPUT) && !bd_add_i64(need, largest, &need)) need = INT64_MAX;
    if (need <= max_activation_bytes) return BD_OK;
    char shape[256] = "-";
    if (big) bd_shape_str(big, shape, sizeof shape);
    return bd_fail(d, BD_ERR_IO,
                   "the model needs %lld bytes of activation memory at least, graph outputs "
                   "included, above the limit of %lld (largest tensor '%s': %s%s); raise it with "
                   "--max-activations",
                   (long long)need, (long long)max_activation_bytes, big ? bd_quote(big->name) : "-",
                   big ? bd_dtype_name(big->dtype) : "", shape);
}

void bd_memory_plan_free(bd_memory_plan *m) {
    free(m->storage);
    free(m->in_place_of);
    bd_vec_free(&m->constants);
    memset(m, 0, sizeof *m);
}

void bd_memory_plan_dump(const bd_program *p, const bd_memory_plan *m, FILE *f) {
    static const char *const kinds[] = {"none", "input", "output", "const", "arena"};
    bd_graph *g = p->graph;
    fprintf(f, "arena %lld bytes, scratch %lld bytes per thread, constants %lld bytes\n",
            (long long)m->arena_bytes, (long long)m->scratch_bytes, (long long)m->const_bytes);
    for (size_t v = 0; v < g->values.len; v++) {
        const bd_storage *s = &m->storage[v];
        if (s->kind == BD_STORE_NONE) continue;
        fprintf(f, "  t%zu '%s': %s %lld", v, bd_quote(bd_graph_value(g, (int)v)->name),
                kinds[s->kind], (long long)s->where);
        if (m->in_place_of && m->in_place_of[v] >= 0)
            fprintf(f, ", in place over t%d", m->in_place_of[v]);
        if (p->view_of && p->view_of[v] >= 0) fprintf(f, ", a view of t%d", p->view_of[v]);
        fprintf(f, "\n");
    }
}

bd_status bd_memory_plan_verify(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                                bd_diag *d) {
    (void)d;
    bd_graph *g = p->graph;
    size_t nv = g->values.len;
    int *first = malloc((nv + 1) * sizeof *first), *last = malloc((nv + 1) * sizeof *last);
    int64_t *bytes = calloc(nv + 1, sizeof *bytes);
    int *live = malloc((nv + 1) * sizeof *live), n_live = 0;
    BD_ASSERT(first && last && bytes && live);
    for (size_t v = 0; v < nv; v++) first[v] = last[v] = -1;
    for (int step = 0; step < s->n_steps; step++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[step]);
        for (int k = 0; k < n->n_operands; k++) {
            int v = bd_program_storage_root(p, n->operands[k].value);
            const bd_storage *st = &m->storage[v];
            BD_ASSERT(st->kind != BD_STORE_NONE);
            BD_ASSERT(!memcmp(&m->storage[bd_program_root(p, n->operands[k].value)],
                              &m->storage[n->operands[k].value], sizeof *st)); /* views */
            if (st->kind != BD_STORE_ARENA) continue;
            if (first[v] < 0) {
                const bd_value *val = bd_graph_value(g, v);
                int64_t numel = 0;
                BD_ASSERT(bd_dims_numel(val->rank, val->dims, &numel) &&
                          bd_dtype_nbytes(val->dtype, numel, &bytes[v]));
                BD_ASSERT(st->where % 64 == 0 && st->where + bytes[v] <= m->arena_bytes);
                first[v] = step;
            }
            last[v] = step;
        }
    }
    /* Sweep the steps: a value that starts at a step must not share bytes with one live there. */
    for (int step = 0; step < s->n_steps; step++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[step]);
        int kept = 0;
        for (int i = 0; i < n_live; i++)
            if (last[live[i]] >= step) live[kept++] = live[i];
        n_live = kept;
        for (int k = 0; k < n->n_operands; k++) {
            int v = bd_program_storage_root(p, n->operands[k].value);
            if (first[v] != step || m->storage[v].kind != BD_STORE_ARENA) continue;
            bool listed = false;
            int64_t lo = m->storage[v].where, hi = lo + bytes[v];
            int rep_v = m->in_place_of && m->in_place_of[v] >= 0 ? m->in_place_of[v] : v;
            for (int i = 0; i < n_live; i++) {
                int u = live[i];
                listed |= u == v;
                int rep_u = m->in_place_of && m->in_place_of[u] >= 0 ? m->in_place_of[u] : u;
                if (u == v || rep_u == rep_v) continue; /* one value, or an in-place pair */
                int64_t ulo = m->storage[u].where, uhi = ulo + bytes[u];
                BD_ASSERT(hi <= ulo || uhi <= lo);
            }
            if (!listed) live[n_live++] = v;
        }
    }
    free(first);
    free(last);
    free(bytes);
    free(live);
    return BD_OK;
}
