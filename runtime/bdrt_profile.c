/* bdrt_profile.c — the block profiler of bdrt_profile.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdlib.h>
#include <time.h>

#include "bdrt_profile.h"

_Atomic int bdrt_profiling;
static bdrt_profile_event *events;
static size_t capacity;
static _Atomic size_t next_event;
static double origin_us;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void bdrt_profile_block(bdrt_task_fn fn, void *ctx, int64_t block, int thread) {
    double t0 = now_us();
    fn(ctx, block, thread);
    double t1 = now_us();
    size_t i = atomic_fetch_add_explicit(&next_event, 1, memory_order_relaxed);
    if (i < capacity) events[i] = (bdrt_profile_event){fn, block, thread, t0 - origin_us, t1 - origin_us};
}

int bdrt_profile_begin(size_t cap) {
    bdrt_profile_free();
    events = malloc((cap ? cap : 1) * sizeof *events);
    if (!events) return -1;
    capacity = cap;
    atomic_store(&next_event, 0);
    origin_us = now_us();
    atomic_store(&bdrt_profiling, 1);
    return 0;
}

size_t bdrt_profile_end(const bdrt_profile_event **out, size_t *dropped) {
    atomic_store(&bdrt_profiling, 0);
    size_t n = atomic_load(&next_event);
    *dropped = n > capacity ? n - capacity : 0;
    *out = events;
    return n < capacity ? n : capacity;
}

void bdrt_profile_free(void) {
    free(events);
    events = NULL;
    capacity = 0;
}
