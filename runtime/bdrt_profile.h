/* bdrt_profile.h — the runtime's block profiler (bdrt_profile.c), internal to the runtime.
 *
 * Every block any schedule runs goes through bdrt_call_block. While profiling is off (always,
 * except for the one run `--profile FILE` records) that is one relaxed atomic load and the call;
 * while on, the block is timed and recorded (function, block, thread, start, end) into one
 * preallocated array through an atomic index. */
#ifndef BDRT_PROFILE_H
#define BDRT_PROFILE_H

#include <stdatomic.h>
#include <stddef.h>

#include "bdrt.h"

typedef struct bdrt_profile_event {
    bdrt_task_fn fn;
    int64_t block;
    int thread;
    double t0_us, t1_us; /* CLOCK_MONOTONIC, from bdrt_profile_begin */
} bdrt_profile_event;

extern _Atomic int bdrt_profiling;

void bdrt_profile_block(bdrt_task_fn fn, void *ctx, int64_t block, int thread);

static inline void bdrt_call_block(bdrt_task_fn fn, void *ctx, int64_t block, int thread) {
    if (atomic_load_explicit(&bdrt_profiling, memory_order_relaxed))
        bdrt_profile_block(fn, ctx, block, thread);
    else
        fn(ctx, block, thread);
}

/* bdrt_pool_run without the profiler around each call: for the runtime's own loops that run the
 * recorded blocks themselves (the DAG executor's per-thread workers). */
void bdrt_pool_run_unrecorded(bdrt_pool *p, int64_t n_blocks, bdrt_task_fn fn, void *ctx);

/* Starts recording into room for capacity events (0 on success, -1 out of memory); end stops it
 * and returns the events kept (those past capacity are counted in *dropped). */
int bdrt_profile_begin(size_t capacity);
size_t bdrt_profile_end(const bdrt_profile_event **events, size_t *dropped);
void bdrt_profile_free(void);

#endif
