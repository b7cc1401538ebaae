/* pipeline.h — the compiler as a list of passes (pipeline.c): the front half over the graph, the
 * back half over the nest program. */
#ifndef BD_PIPELINE_H
#define BD_PIPELINE_H

#include "front/passes.h"
#include "plan/plan.h"

/* Which intermediate forms to print to stderr (--dump=...). */
typedef struct bd_dumps {
    bool graph, lower, tiles, sched, memory;
} bd_dumps;

/* Lowering to the planned program: lower -> [verify] -> fuse -> [verify] -> schedule ->
 * [verify] -> plan memory. The program, schedule and plan are the printers' whole input. */
typedef struct bd_planned {
    bd_program prog;
    bd_schedule sched;
    bd_memory_plan mem;
} bd_planned;

bd_status bd_plan_program(bd_graph *g, bd_fusion fusion, int64_t max_activation_bytes,
                          const bd_dumps *dumps, bd_planned *out, bd_diag *d);
void bd_planned_free(bd_planned *pl);

#endif
