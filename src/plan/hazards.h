/* hazards.h — the edges that make the memory plan's buffer reuse safe under the block schedule.
 *
 * The plan (plan.h) lets two arena values share bytes when their lifetimes in the nest order are
 * disjoint. Under the operator schedule the barriers make that safe; under the block schedule the
 * nests overlap, so a block writing the later value Y could run before a block still reading the
 * earlier value X. For every such pair, every block accessing X (read or write) whose bytes meet
 * the bytes a block of Y writes gets an edge to that Y block (write-after-read and
 * write-after-write). Bytes are compared as each block's bounding byte interval, so the edges are
 * conservative, and skipped where the dependency edges already imply them. The cost is some
 * lost overlap, only where bytes are actually shared; the plan already keeps a value's bytes
 * while steps that do not wait for its last use may still run (schedule.h overlap_end). */
#ifndef BD_HAZARDS_H
#define BD_HAZARDS_H

#include "plan/plan.h"

/* The bounding byte interval [*lo, *hi) within value o->value that block b of nest n touches
 * through operand o; false when the block touches nothing. */
bool bd_block_bytes(const bd_graph *g, const bd_nest *n, const bd_operand *o, int64_t b,
                    int64_t *lo, int64_t *hi);

/* Adds the edges to s (block schedule only) and rebuilds its successor lists. */
void bd_plan_hazards(const bd_program *p, const bd_memory_plan *m, bd_schedule *s);
/* The verifier: recomputes every task's transitive predecessors from the final DAG and asserts
 * that each access of an earlier value precedes each later write over the same bytes (schedules
 * of up to 16384 tasks; the schedule test mode checks the rest at run time). */
void bd_plan_hazards_verify(const bd_program *p, const bd_memory_plan *m, bd_schedule *s);

#endif
