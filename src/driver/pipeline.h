/* pipeline.h — the compiler as a list of passes (pipeline.c): the front half over the graph, the
 * back half over the nest program. */
#ifndef BD_PIPELINE_H
#define BD_PIPELINE_H

#include "front/passes.h"
#include "target/target.h"

/* Which intermediate forms to print to stderr (--dump=...). */
typedef struct bd_dumps {
    bool graph, lower, tiles, fuse, deps, sched, memory;
} bd_dumps;

/* Lowering to the planned program: lower -> [verify] -> tile (the target's) -> [verify] ->
 * fuse -> [verify] -> block dependencies -> schedule -> [verify] -> plan memory -> [verify] ->
 * reuse hazards (block schedule) -> [verify]. The program, schedule and plan are the printer's
 * whole input; the dependencies are also `bdc analyze`'s. */
typedef struct bd_planned {
    bd_program prog;
    bd_deps deps;
    bd_schedule sched;
    bd_memory_plan mem;
} bd_planned;

typedef struct bd_plan_opts {
    bd_fusion fusion;
    bd_schedule_mode schedule;
    int64_t max_activation_bytes;
    bool winograd; /* --winograd on (the CPU target) */
    int tile_threads; /* --tile-threads (the CPU target): see bd_program */
    bool i8_direct;   /* the CPU target: see bd_program */
    bool bf16;        /* --precision bf16 (the CPU target): see bd_program */
    bool fma_half;    /* the CPU target: see bd_program */
} bd_plan_opts;

bd_status bd_plan_program(bd_graph *g, const bd_target *t, const bd_plan_opts *opts,
                          const bd_dumps *dumps, bd_planned *out, bd_diag *d);
void bd_planned_free(bd_planned *pl);

/* The support check's reporter for commands: "bdc: node 'NAME' (OP): REASON" on stderr. */
void bd_print_unsupported(void *ctx, const bd_node *node, const bd_value *value, const char *why);

#endif
