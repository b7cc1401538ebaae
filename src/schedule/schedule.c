/* schedule.c — the schedules of schedule.h: the nests in program order (which lowering and fusion
 * keep topological), and for `block` the task DAG built from the dependency boxes. */
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"

static int new_task(bd_schedule *s, int nest, int64_t block) {
    if (s->n_tasks == s->task_cap) {
        s->task_cap = s->task_cap ? s->task_cap * 2 : 64;
        s->task_nest = realloc(s->task_nest, (size_t)s->task_cap * sizeof *s->task_nest);
        s->task_block = realloc(s->task_block, (size_t)s->task_cap * sizeof *s->task_block);
        BD_ASSERT(s->task_nest && s->task_block);
    }
    s->task_nest[s->n_tasks] = nest;
    s->task_block[s->n_tasks] = block;
    return s->n_tasks++;
}

void bd_schedule_add_edge(bd_schedule *s, int from, int to) {
    BD_ASSERT(from >= 0 && to >= 0 && from != to);
    *(int64_t *)bd_vec_push(&s->pending) = (int64_t)from << 32 | (int64_t)(uint32_t)to;
}

int bd_schedule_event(bd_schedule *s, int nest) {
    if (s->event_task[nest] >= 0) return s->event_task[nest];
    int ev = new_task(s, -1 - nest, 0);
    s->event_task[nest] = ev;
    int first = s->first_task[nest];
    BD_ASSERT(first >= 0);
    /* the blocks of a nest are numbered together, so they are first .. first + n_blocks */
    for (int t = first; t < s->n_tasks && s->task_nest[t] == nest; t++)
        bd_schedule_add_edge(s, t, ev);
    return ev;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void bd_schedule_finish(bd_schedule *s) {
    size_t n = s->pending.len;
    int64_t *e = s->pending.data;
    if (n) qsort(e, n, sizeof *e, cmp_i64);
    free(s->succ_start);
    free(s->succ);
    free(s->n_preds);
    s->succ_start = calloc((size_t)s->n_tasks + 2, sizeof *s->succ_start);
    s->n_preds = calloc((size_t)s->n_tasks + 1, sizeof *s->n_preds);
    s->succ = malloc((n + 1) * sizeof *s->succ);
    BD_ASSERT(s->succ_start && s->n_preds && s->succ);
    s->n_edges = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && e[i] == e[i - 1]) continue;
        int from = (int)(e[i] >> 32), to = (int)(uint32_t)e[i];
        s->succ_start[from + 1]++;
        s->succ[s->n_edges++] = to;
        s->n_preds[to]++;
    }
    for (int t = 0; t < s->n_tasks; t++)
        s->succ_start[t + 1] += s->succ_start[t];
}

int bd_schedule_topo_order(const bd_schedule *s, int *order) {
    int *left = malloc(((size_t)s->n_tasks + 1) * sizeof *left);
    BD_ASSERT(left);
    int head = 0, tail = 0;
    for (int t = 0; t < s->n_tasks; t++)
        if (!(left[t] = s->n_preds[t])) order[tail++] = t;
    while (head < tail) {
        int t = order[head++];
        for (int j = s->succ_start[t]; j < s->succ_start[t + 1]; j++)
            if (--left[s->succ[j]] == 0) order[tail++] = s->succ[j];
    }
    free(left);
    return tail;
}

/* The tasks and the dependency edges of the block schedule. */
static void build_dag(const bd_program *p, const bd_deps *deps, bd_schedule *s) {
    size_t nn = p->nests.len;
    for (int i = 0; i < s->n_steps; i++) {
        int k = s->order[i];
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, k);
        for (int64_t b = 0; b < n->n_blocks; b++) {
            int t = new_task(s, k, b);
            if (b == 0) s->first_task[k] = t;
        }
    }
    for (size_t c = 0; c < nn; c++) {
        for (int ei = deps->edge_start[c]; ei < deps->edge_start[c + 1]; ei++) {
            const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, ei);
            const bd_nest *pn = &BD_VEC_AT(&p->nests, bd_nest, e->producer);
            int ev = e->cls == BD_DEP_ALL && pn->n_blocks > 1 ? bd_schedule_event(s, e->producer)
                                                               : -1;
            for (int64_t b = 0; b < e->consumer_blocks; b++) {
                int to = s->first_task[c] + (int)b;
                int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK], pt[BD_MAX_RANK];
                if (ev >= 0) {
                    bd_schedule_add_edge(s, ev, to);
                    continue;
                }
                if (!bd_dep_box(e, b, lo, hi)) continue;
                memcpy(pt, lo, sizeof pt);
                do
                    bd_schedule_add_edge(s, s->first_task[e->producer] +
                                                (int)bd_dep_block_index(pn, pt), to);
                while (bd_dep_box_next(e->rank, lo, hi, pt));
            }
        }
    }
}

/* How long the block schedule may still be running a step: overlap_end[s] is the step before the
 * first later one that is tied to it, every block of which waits (directly or through others)
 * for some block of step s; at most OVERLAP_MAX_STEPS on. The steps in between have blocks that
 * need nothing of step s and may run beside it (an Inception block's other branches, a pool
 * whose channels from one branch of a Concat are ready before the other's). Found by marking
 * what step s's tasks reach in the task DAG, within those steps. */
enum { OVERLAP_MAX_STEPS = 32 };

static void build_overlaps(const bd_program *p, bd_schedule *s) {
    size_t nn = p->nests.len;
    int *step_of = malloc((nn + 1) * sizeof *step_of);
    int *mark = calloc((size_t)s->n_tasks + 1, sizeof *mark); /* i + 1: reached from step i */
    int *stack = malloc(((size_t)s->n_tasks + 1) * sizeof *stack);
    s->overlap_end = malloc(((size_t)s->n_steps + 1) * sizeof *s->overlap_end);
    BD_ASSERT(step_of && mark && stack && s->overlap_end);
    for (int i = 0; i < s->n_steps; i++)
        step_of[s->order[i]] = i;
    for (int i = 0; i < s->n_steps; i++) {
        int end = i + OVERLAP_MAX_STEPS < s->n_steps ? i + OVERLAP_MAX_STEPS : s->n_steps - 1;
        int k = s->order[i], first = s->first_task[k], top = 0;
        int64_t nb = BD_VEC_AT(&p->nests, bd_nest, k).n_blocks;
        for (int64_t b = 0; first >= 0 && b < nb; b++) {
            mark[first + b] = i + 1;
            stack[top++] = first + (int)b;
        }
        while (top) {
            int t = stack[--top];
            for (int j = s->succ_start[t]; j < s->succ_start[t + 1]; j++) {
                int u = s->succ[j], un = s->task_nest[u];
                int ustep = step_of[un >= 0 ? un : -1 - un];
                if (mark[u] == i + 1 || ustep > end) continue;
                mark[u] = i + 1;
                stack[top++] = u;
            }
        }
        for (int t = i + 1; t <= end; t++) {
            const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[t]);
            int ft = s->first_task[s->order[t]];
            bool tied = ft >= 0;
            for (int64_t b = 0; tied && b < n->n_blocks; b++)
                tied = mark[ft + b] == i + 1;
            if (tied) {
                end = t - 1;
                break;
            }
        }
        s->overlap_end[i] = end;
    }
    free(step_of);
    free(mark);
    free(stack);
}

bd_status bd_schedule_program(const bd_program *p, const bd_deps *deps, bd_schedule_mode mode,
                              bd_schedule *s, bd_diag *d) {
    memset(s, 0, sizeof *s);
    size_t nn = p->nests.len;
    s->mode = mode;
    s->pending = BD_VEC(int64_t);
    s->n_steps = (int)nn;
    s->order = malloc((nn + 1) * sizeof *s->order);
    s->first_task = malloc((nn + 1) * sizeof *s->first_task);
    s->event_task = malloc((nn + 1) * sizeof *s->event_task);
    BD_ASSERT(s->order && s->first_task && s->event_task);
    for (size_t i = 0; i < nn; i++) {
        s->order[i] = (int)i;
        s->first_task[i] = s->event_task[i] = -1;
    }
    if (mode == BD_SCHEDULE_BLOCK) {
        int64_t blocks = 0;
        for (size_t i = 0; i < nn; i++)
            blocks += BD_VEC_AT(&p->nests, bd_nest, i).n_blocks;
        /* task numbers are int32 in the executable's tables */
        if (blocks + (int64_t)nn >= INT32_MAX / 2)
            return bd_fail(d, BD_ERR_UNSUPPORTED,
                           "the block schedule has %lld blocks, too many for its task tables; "
                           "use --schedule op",
                           (long long)blocks);
        build_dag(p, deps, s);
        s->chain = deps->critical_blocks == deps->total_blocks;
    }
    bd_schedule_finish(s);
    if (mode == BD_SCHEDULE_BLOCK) build_overlaps(p, s);
    return BD_OK;
}

/* Multiply-adds (or comparisons) per output element of a nest, roughly: the most elements one
 * output element reads of an operand (a convolution's C x KH x KW, a product's K). */
static int64_t work_per_output(const bd_program *p, const bd_nest *n) {
    int64_t w = 1;
    for (int k = 0; k < n->n_operands; k++) {
        if (n->operands[k].write) continue;
        int64_t f = bd_operand_footprint(p->graph, &n->operands[k]);
        if (f > w) w = f;
    }
    return w;
}

enum { RANK_BLOCK_OVERHEAD = 1000 }; /* a block's fixed cost, in the same units */

typedef struct rank_item {
    double level; /* bottom level */
    int pos;      /* in a topological order, for ties (an event and the blocks after it) */
} rank_item;

static int cmp_rank(const void *a, const void *b) {
    const rank_item *x = a, *y = b;
    if (x->level != y->level) return x->level < y->level ? 1 : -1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

void bd_schedule_rank(const bd_program *p, bd_schedule *s) {
    free(s->rank);
    s->rank = NULL;
    if (s->mode != BD_SCHEDULE_BLOCK) return;
    int n = s->n_tasks;
    int *topo = malloc(((size_t)n + 1) * sizeof *topo);
    double *level = malloc(((size_t)n + 1) * sizeof *level);
    rank_item *items = malloc(((size_t)n + 1) * sizeof *items);
    s->rank = malloc(((size_t)n + 1) * sizeof *s->rank);
    BD_ASSERT(topo && level && items && s->rank);
    BD_ASSERT(bd_schedule_topo_order(s, topo) == n);
    for (int i = n - 1; i >= 0; i--) {
        int t = topo[i], k = s->task_nest[t];
        double cost = 0, most = 0;
        if (k >= 0) {
            const bd_nest *nest = &BD_VEC_AT(&p->nests, bd_nest, k);
            int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK];
            double elems = 1;
            bd_nest_block_range(nest, s->task_block[t], lo, hi);
            for (int d = 0; d < nest->n_iter; d++) elems *= (double)(hi[d] - lo[d]);
            cost = elems * (double)work_per_output(p, nest) + RANK_BLOCK_OVERHEAD;
        }
        for (int j = s->succ_start[t]; j < s->succ_start[t + 1]; j++)
            if (level[s->succ[j]] > most) most = level[s->succ[j]];
        level[t] = cost + most;
        items[i] = (rank_item){level[t], i};
    }
    qsort(items, (size_t)n, sizeof *items, cmp_rank);
    for (int r = 0; r < n; r++)
        s->rank[topo[items[r].pos]] = r;
    for (int t = 0; t < n; t++) /* a topological order: every edge goes forward */
        for (int j = s->succ_start[t]; j < s->succ_start[t + 1]; j++)
            BD_ASSERT(s->rank[t] < s->rank[s->succ[j]]);
    free(topo);
    free(level);
    free(items);
}

void bd_schedule_free(bd_schedule *s) {
    free(s->order);
    free(s->task_nest);
    free(s->task_block);
    free(s->overlap_end);
    free(s->rank);
    free(s->first_task);
    free(s->event_task);
    bd_vec_free(&s->pending);
    free(s->succ_start);
    free(s->succ);
    free(s->n_preds);
    memset(s, 0, sizeof *s);
}

void bd_schedule_dump(const bd_program *p, const bd_schedule *s, FILE *f) {
    if (s->mode == BD_SCHEDULE_OP) {
        for (int i = 0; i < s->n_steps; i++) {
            const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[i]);
            fprintf(f, "step %d: nest %d, %lld blocks, then a barrier\n", i, s->order[i],
                    (long long)n->n_blocks);
        }
        return;
    }
    for (int i = 0; i < s->n_steps; i++) {
        int k = s->order[i], t0 = s->first_task[k];
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, k);
        if (t0 < 0) {
            fprintf(f, "nest %d: no blocks\n", k);
            continue;
        }
        int64_t waits = 0, most = 0;
        for (int64_t b = 0; b < n->n_blocks; b++) {
            int x = s->n_preds[t0 + b];
            waits += x;
            if (x > most) most = x;
        }
        fprintf(f, "nest %d: tasks %d..%lld, %lld waits (at most %lld per block)", k, t0,
                (long long)(t0 + n->n_blocks - 1), (long long)waits, (long long)most);
        if (s->event_task[k] >= 0) fprintf(f, ", completion event task %d", s->event_task[k]);
        if (s->overlap_end && s->overlap_end[i] > i)
            fprintf(f, ", may run beside steps %d..%d", i + 1, s->overlap_end[i]);
        fprintf(f, "\n");
    }
    fprintf(f, "block schedule: %d tasks, %d edges\n", s->n_tasks, s->n_edges);
}

bd_status bd_schedule_verify(const bd_program *p, const bd_schedule *s, bd_diag *d) {
    (void)d;
    bd_graph *g = p->graph;
    size_t nv = g->values.len;
    bool *seen = calloc(p->nests.len + 1, 1), *written = calloc(nv + 1, 1);
    BD_ASSERT(seen && written && s->n_steps == (int)p->nests.len);
    for (int i = 0; i < s->n_steps; i++) {
        int k = s->order[i];
        BD_ASSERT(k >= 0 && k < (int)p->nests.len && !seen[k]);
        seen[k] = true;
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, k);
        for (int j = 0; j < n->n_operands; j++) {
            const bd_operand *o = &n->operands[j];
            int root = bd_program_root(p, o->value);
            const bd_value *v = bd_graph_value(g, root);
            int64_t numel = 1;
            bd_dims_numel(v->rank, v->dims, &numel);
            /* an empty value is read without anyone writing it (its writers have no blocks) */
            /* a slice of a container written whole (siblings.c) is written with it */
            bool in_written = p->inside_of && p->inside_of[root] >= 0 && written[p->inside_of[root]];
            if (!o->write && !v->constant && !(v->flags & BD_VALUE_INPUT) && numel != 0)
                BD_ASSERT(written[root] || in_written);
        }
        for (int j = 0; j < n->n_operands; j++) {
            int v = n->operands[j].value;
            if (!n->operands[j].write) continue;
            written[v] = true;
            if (p->inside_of && p->inside_of[v] >= 0) written[p->inside_of[v]] = true;
        }
    }
    free(seen);
    free(written);
    if (s->mode != BD_SCHEDULE_BLOCK) return BD_OK;
    /* Every block is one task, and Kahn's algorithm consumes every task: the DAG is acyclic. */
    int64_t blocks = 0;
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        blocks += n->n_blocks;
        for (int64_t b = 0; b < n->n_blocks; b++)
            BD_ASSERT(s->task_nest[s->first_task[i] + b] == (int)i &&
                      s->task_block[s->first_task[i] + b] == b);
    }
    int events = 0;
    for (int t = 0; t < s->n_tasks; t++)
        events += s->task_nest[t] < 0;
    BD_ASSERT(blocks + events == s->n_tasks);
    int *order = malloc(((size_t)s->n_tasks + 1) * sizeof *order);
    BD_ASSERT(order);
    BD_ASSERT(bd_schedule_topo_order(s, order) == s->n_tasks);
    free(order);
    return BD_OK;
}
