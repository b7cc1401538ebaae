/* schedule.h — the run order of a nest program: which nest's blocks run when.
 *
 * Today's schedule is the operator-level baseline: every nest in program order, each one's blocks
 * handed to the thread pool together, with a barrier between nests. The dataflow scheduler (a
 * block runs when the producer blocks it needs are done) will replace it and read the block
 * dependencies the analysis computes; the memory plan and the printers read only this. */
#ifndef BD_SCHEDULE_H
#define BD_SCHEDULE_H

#include "nest/loopnest.h"

typedef struct bd_schedule {
    int n_steps;
    int *order; /* nest indices, in run order; every nest appears once */
} bd_schedule;

bd_status bd_schedule_program(const bd_program *p, bd_schedule *s, bd_diag *d);
void bd_schedule_free(bd_schedule *s);
/* --dump=sched: one line per step. */
void bd_schedule_dump(const bd_program *p, const bd_schedule *s, FILE *f);
/* Every nest once, and every value written before it is read (graph inputs and constants
 * aside). */
bd_status bd_schedule_verify(const bd_program *p, const bd_schedule *s, bd_diag *d);

#endif
