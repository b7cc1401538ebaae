/* plan.h — where every value of a nest program lives at run time.
 *
 * Graph inputs and outputs live in the caller's buffers; constants in one blob embedded in the
 * executable; every other value at an offset in one arena, planned by lifetimes over the
 * schedule's order (largest first, first fit, 64-byte aligned): two values share bytes only when
 * no step between the first and the last use of one touches the other, a last use counting
 * under the block schedule until the last step that may run beside it (schedule.h overlap_end).
 * A view (a zero-copy reshape, fuse/views.c) has its root's storage, and its uses count as the
 * root's. With fusion
 * op or block, an elementwise nest (or an inference BatchNormalization) whose input dies in it
 * and is read exactly where the output is written writes its output in place, over that input
 * (in_place_of). Per-thread scratch is the largest any nest asks for. The activation cap
 * (--max-activations) is checked here, before any code exists. Printers read the plan; they
 * decide nothing about memory. */
#ifndef BD_PLAN_H
#define BD_PLAN_H

#include "schedule/schedule.h"

typedef enum bd_store_kind {
    BD_STORE_NONE = 0,
    BD_STORE_INPUT,  /* the caller's input buffer `where` */
    BD_STORE_OUTPUT, /* the caller's output buffer `where` */
    BD_STORE_CONST,  /* the constant blob, at byte offset `where` */
    BD_STORE_ARENA,  /* the arena, at byte offset `where` */
} bd_store_kind;

typedef struct bd_storage {
    bd_store_kind kind;
    int64_t where;
} bd_storage;

typedef struct bd_memory_plan {
    bd_storage *storage;   /* per value index */
    int *in_place_of;      /* per value: the value whose bytes it overwrites in place, -1 */
    int64_t arena_bytes;   /* the planned arena */
    int64_t scratch_bytes; /* per thread, 64-byte aligned */
    int largest;           /* the largest arena value, -1 when none */
    bd_vec constants;      /* int: the constant values in the blob, in blob order */
    int64_t const_bytes;   /* the blob bytes they take (each at a 64-byte aligned offset) */
} bd_memory_plan;

/* max_activation_bytes: arena + scratch above it fails with BD_ERR_IO (0: no cap). */
bd_status bd_plan_memory(const bd_program *p, const bd_schedule *s, int64_t max_activation_bytes,
                         bd_memory_plan *m, bd_diag *d);
void bd_memory_plan_free(bd_memory_plan *m);
/* Before the analysis and the schedule, which work per block: a lower bound of what the plan
 * will need (the graph outputs and the largest intermediate) against the cap, so that a model
 * whose output alone is petabytes fails here with the cap's message (BD_ERR_IO). */
bd_status bd_plan_precheck(const bd_program *p, int64_t max_activation_bytes, bd_diag *d);
/* Every operand has storage, arena values lie in the arena 64-byte aligned, and no value is
 * written over bytes another value still live at that step holds. */
bd_status bd_memory_plan_verify(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                                bd_diag *d);
/* --dump=memory: one line per planned value. */
void bd_memory_plan_dump(const bd_program *p, const bd_memory_plan *m, FILE *f);

#endif
