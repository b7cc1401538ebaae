/* schedule.h — the run order of a nest program: which blocks run when.
 *
 * Two schedules, chosen by `--schedule`:
 *   op     the operator-level baseline: the nests in program order, each one's blocks handed to
 *          the thread pool together, with a barrier after every nest;
 *   block  dataflow: a block runs as soon as the producer blocks it needs are done. The tasks are
 *          the blocks of every nest; an edge runs from each producer block a consumer block needs
 *          (the boxes of the block-dependency analysis, deps/deps.h) to that consumer block. An ALL
 *          edge goes through the producer's completion event instead (one task per nest that
 *          waits for all its blocks), so a reduction after a 1000-block nest costs 1000 + n edges,
 *          not 1000 * n. The memory plan later adds the edges that make its buffer reuse safe
 *          (plan/hazards.c).
 * Both keep `order`, the nests in a topological order: the memory plan's lifetimes are over it.
 * Block tasks are numbered in that order, so a smaller number is also the runtime's higher
 * priority; the events (which do no work) come after them. */
#ifndef BD_SCHEDULE_H
#define BD_SCHEDULE_H

#include "deps/deps.h"

typedef enum bd_schedule_mode { BD_SCHEDULE_OP = 0, BD_SCHEDULE_BLOCK = 1 } bd_schedule_mode;

typedef struct bd_schedule {
    bd_schedule_mode mode;
    int n_steps;
    int *order; /* nest indices, in run order; every nest appears once */

    /* block: the task DAG. */
    int n_tasks, task_cap;
    int *task_nest;      /* per task: its nest; for an event task, -1 - the nest it completes */
    int64_t *task_block; /* per task: the block (0 for an event) */
    int *first_task;     /* per nest: the task of its block 0, -1 for a nest without blocks */
    int *event_task;     /* per nest: its completion event task, -1 while it has none */
    bd_vec pending;      /* int64_t: edges (from << 32 | to) added before bd_schedule_finish */
    int n_edges;
    int *succ_start;     /* per task: successors succ[succ_start[t] .. succ_start[t + 1]) */
    int *succ;
    int *n_preds;        /* per task: how many tasks it waits for */
    bool chain;          /* the blocks form one chain (critical path = all blocks): nothing can
                            overlap, and the runtime runs them in order on the calling thread */
    int *overlap_end;    /* per step: the last step whose blocks may run while some of its own
                            still do (the step before the first one that waits for all of them,
                            at most 32 steps on); NULL under `op` */
    int *rank;           /* per task: its place in the run order (bd_schedule_rank); NULL under
                            `op` */
} bd_schedule;

bd_status bd_schedule_program(const bd_program *p, const bd_deps *deps, bd_schedule_mode mode,
                              bd_schedule *s, bd_diag *d);
/* block: "task from runs before task to"; then bd_schedule_finish builds the successor lists
 * (duplicates merged). */
void bd_schedule_add_edge(bd_schedule *s, int from, int to);
/* The completion event of nest n, made on first use (its blocks all lead to it). */
int bd_schedule_event(bd_schedule *s, int nest);
void bd_schedule_finish(bd_schedule *s);
/* Kahn's order of the task DAG into order[0 .. n_tasks): returns how many tasks it holds, fewer
 * than n_tasks when the DAG has a cycle. */
int bd_schedule_topo_order(const bd_schedule *s, int *order);
/* The run order, once the DAG is final (the memory plan's edges added): the tasks by decreasing
 * bottom level (a block's estimated work, in multiply-adds, plus the most of its successors'),
 * so that of the ready blocks the runtime starts those with the longest chain of work behind
 * them first; a topological order, which a one-thread pool runs as it is. */
void bd_schedule_rank(const bd_program *p, bd_schedule *s);
void bd_schedule_free(bd_schedule *s);
/* --dump=sched: op, one line per step; block, per nest its tasks and waits, then totals. */
void bd_schedule_dump(const bd_program *p, const bd_schedule *s, FILE *f);
/* Every nest once, and every value written before it is read (graph inputs and constants
 * aside); block: the task DAG is acyclic and covers every block once. */
bd_status bd_schedule_verify(const bd_program *p, const bd_schedule *s, bd_diag *d);

#endif
