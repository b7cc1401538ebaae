/* hazards.c — write-after-read / write-after-write edges for shared arena bytes (hazards.h). */
#include <stdlib.h>
#include <string.h>

#include "plan/hazards.h"

bool bd_block_bytes(const bd_graph *g, const bd_nest *n, const bd_operand *o, int64_t b,
                    int64_t *lo, int64_t *hi) {
    const bd_value *v = bd_graph_value((bd_graph *)g, o->value);
    int64_t clo[BD_MAX_RANK], chi[BD_MAX_RANK], rlo[BD_MAX_RANK], rhi[BD_MAX_RANK],
        strides[BD_MAX_RANK];
    bd_nest_block_range(n, b, clo, chi);
    bd_operand_region(n, o, v, clo, chi, rlo, rhi);
    bd_dims_strides(v->rank, v->dims, strides);
    int64_t first = 0, last = 0;
    for (int k = 0; k < v->rank; k++) {
        if (rlo[k] > rhi[k]) return false;
        first += rlo[k] * strides[k];
        last += rhi[k] * strides[k];
    }
    int bits = bd_dtype_bits(v->dtype);
    *lo = first * bits / 8;
    *hi = ((last + 1) * bits + 7) / 8;
    return true;
}

typedef struct access {
    int task;
    bool write;
    int64_t lo, hi; /* absolute arena bytes */
} access;

typedef struct value_accesses {
    int first_step;
    bd_vec list; /* access */
} value_accesses;

/* Which tasks each task already waits for, through the edges the schedule has: reach[t] holds
 * task u as bit u. A hazard edge from a task in reach[w] to w is implied and skipped; without
 * this a buffer read by an early layer of DenseNet and reused a hundred layers later gives a
 * hundred thousand edges the schedule already has. The sets take n_tasks^2 bits, so a schedule
 * of more than REACH_MAX_TASKS tasks skips nothing (its edges stay correct, only more). */
enum { REACH_MAX_TASKS = 16384 };

typedef struct reach_sets {
    size_t words; /* per task; 0: not computed */
    uint64_t *bits;
} reach_sets;

static bool reaches(const reach_sets *r, int from, int to) {
    return r->words && (r->bits[(size_t)to * r->words + (size_t)from / 64] >> (from % 64)) & 1;
}

static void reach_build(const bd_schedule *s, reach_sets *r) {
    memset(r, 0, sizeof *r);
    if (s->n_tasks > REACH_MAX_TASKS) return;
    size_t n = (size_t)s->n_tasks;
    r->words = (n + 63) / 64;
    r->bits = calloc(n * r->words + 1, sizeof *r->bits);
    int *order = malloc((n + 1) * sizeof *order);
    BD_ASSERT(r->bits && order);
    int tasks = bd_schedule_topo_order(s, order);
    for (int i = 0; i < tasks; i++) { /* topological order: a task's set is complete when taken */
        int t = order[i];
        const uint64_t *from = r->bits + (size_t)t * r->words;
        for (int j = s->succ_start[t]; j < s->succ_start[t + 1]; j++) {
            uint64_t *to = r->bits + (size_t)s->succ[j] * r->words;
            for (size_t k = 0; k < r->words; k++)
                to[k] |= from[k];
            to[t / 64] |= (uint64_t)1 << (t % 64);
        }
    }
    free(order);
}

/* Edges from the accesses in xs (grouped by nest, in block order) whose bytes meet those of
 * write w, to w's task: one per block, or one from the nest's completion event when more than
 * HAZARD_EVENT_MIN of its blocks meet w (a buffer read whole by a later layer would otherwise
 * give blocks x blocks edges). */
enum { HAZARD_EVENT_MIN = 2 };

/* Accesses by two blocks of one nest never need ordering: one nest reads a value and writes
 * another over the same bytes only in place, element by element through identity maps, so its
 * blocks touch disjoint elements even where their bounding byte intervals interleave. */
static bool same_nest(const bd_schedule *s, const access *a, const access *w) {
    return s->task_nest[a->task] == s->task_nest[w->task];
}

static bool needs_edge(const bd_schedule *s, const reach_sets *r, const access *a,
                       const access *w) {
    return a->lo < w->hi && w->lo < a->hi && !same_nest(s, a, w) && !reaches(r, a->task, w->task);
}

static void order_before(bd_schedule *s, const reach_sets *r, const bd_vec *xs, const access *w) {
    const access *ax = xs->data;
    for (size_t i = 0; i < xs->len;) {
        int nest = s->task_nest[ax[i].task];
        size_t end = i, meet = 0;
        while (end < xs->len && s->task_nest[ax[end].task] == nest)
            meet += needs_edge(s, r, &ax[end++], w);
        if (meet > HAZARD_EVENT_MIN) {
            bd_schedule_add_edge(s, bd_schedule_event(s, nest), w->task);
        } else if (meet) {
            for (size_t k = i; k < end; k++)
                if (needs_edge(s, r, &ax[k], w)) bd_schedule_add_edge(s, ax[k].task, w->task);
        }
        i = end;
    }
}

/* Every arena value's block accesses, with their absolute byte intervals, in nest order. */
static value_accesses *collect(const bd_program *p, const bd_memory_plan *m, const bd_schedule *s) {
    bd_graph *g = p->graph;
    size_t nv = g->values.len;
    value_accesses *va = calloc(nv + 1, sizeof *va);
    BD_ASSERT(va);
    for (size_t v = 0; v < nv; v++) {
        va[v].first_step = -1;
        va[v].list = BD_VEC(access);
    }
    for (int step = 0; step < s->n_steps; step++) {
        int k = s->order[step];
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, k);
        for (int j = 0; j < n->n_operands; j++) {
            const bd_operand *o = &n->operands[j];
            const bd_storage *st = &m->storage[o->value];
            if (st->kind != BD_STORE_ARENA) continue;
            if (va[o->value].first_step < 0) va[o->value].first_step = step;
            for (int64_t b = 0; b < n->n_blocks; b++) {
                int64_t lo, hi;
                if (!bd_block_bytes(g, n, o, b, &lo, &hi)) continue;
                access *a = bd_vec_push(&va[o->value].list);
                *a = (access){s->first_task[k] + (int)b, o->write, st->where + lo, st->where + hi};
            }
        }
    }
    return va;
}

static void span(const bd_vec *list, int64_t *lo, int64_t *hi) {
    const access *a = list->data;
    *lo = a[0].lo, *hi = a[0].hi;
    for (size_t i = 1; i < list->len; i++) {
        if (a[i].lo < *lo) *lo = a[i].lo;
        if (a[i].hi > *hi) *hi = a[i].hi;
    }
}

/* Calls fn(ctx, &earlier value's access list, later value's write) for every pair of distinct
 * arena values (not parts of one storage root) whose bytes meet, for each write of the later one. */
typedef void (*pair_fn)(void *ctx, bd_schedule *s, const bd_vec *xs, const access *w);

static void each_pair(const bd_program *p, const bd_memory_plan *m, bd_schedule *s,
                      value_accesses *va, pair_fn fn, void *ctx) {
    size_t nv = p->graph->values.len;
    for (size_t x = 0; x < nv; x++) {
        if (m->storage[x].kind != BD_STORE_ARENA || !va[x].list.len) continue;
        for (size_t y = 0; y < nv; y++) {
            if (y == x || m->storage[y].kind != BD_STORE_ARENA || !va[y].list.len ||
                va[y].first_step <= va[x].first_step ||
                bd_program_storage_root(p, (int)x) == bd_program_storage_root(p, (int)y))
                continue;
            int64_t x_lo, x_hi, y_lo, y_hi;
            span(&va[x].list, &x_lo, &x_hi);
            span(&va[y].list, &y_lo, &y_hi);
            if (x_hi <= y_lo || y_hi <= x_lo) continue;
            const access *ay = va[y].list.data;
            for (size_t j = 0; j < va[y].list.len; j++)
                if (ay[j].write) fn(ctx, s, &va[x].list, &ay[j]);
        }
    }
}

static void free_accesses(const bd_program *p, value_accesses *va) {
    for (size_t v = 0; v < p->graph->values.len; v++)
        bd_vec_free(&va[v].list);
    free(va);
}

static void add_edges(void *reach, bd_schedule *s, const bd_vec *xs, const access *w) {
    order_before(s, reach, xs, w);
}

/* Calls fn for every sharing pair with the DAG's current predecessor sets. */
static void over_pairs(const bd_program *p, const bd_memory_plan *m, bd_schedule *s, pair_fn fn) {
    reach_sets reach;
    reach_build(s, &reach);
    value_accesses *va = collect(p, m, s);
    each_pair(p, m, s, va, fn, &reach);
    free_accesses(p, va);
    free(reach.bits);
}

void bd_plan_hazards(const bd_program *p, const bd_memory_plan *m, bd_schedule *s) {
    if (s->mode != BD_SCHEDULE_BLOCK) return;
    over_pairs(p, m, s, add_edges);
    bd_schedule_finish(s);
}

static void check_ordered(void *reach, bd_schedule *s, const bd_vec *xs, const access *w) {
    const access *ax = xs->data;
    for (size_t i = 0; i < xs->len; i++)
        if (ax[i].lo < w->hi && w->lo < ax[i].hi && !same_nest(s, &ax[i], w))
            BD_ASSERT(reaches(reach, ax[i].task, w->task));
}

void bd_plan_hazards_verify(const bd_program *p, const bd_memory_plan *m, bd_schedule *s) {
    if (s->mode == BD_SCHEDULE_BLOCK && s->n_tasks <= REACH_MAX_TASKS)
        over_pairs(p, m, s, check_ordered);
}
