/* bdrt_dag.c — dataflow execution of the block schedule's task DAG (bdrt.h), and its test mode.
 *
 * The pool runs one job whose "blocks" are the threads: each thread loops taking ready tasks
 * until every task is done. A task's counter starts at its predecessor count; the thread that
 * drops it to zero makes it ready. The ready queue is a binary min-heap of task numbers under a
 * spin lock: a block takes microseconds and a lock hand-off tens of nanoseconds, and on a few
 * cores a work-stealing deque would buy nothing measurable. A thread that finds the queue empty
 * while tasks are still running spins (pause, then yield). */
#define _GNU_SOURCE /* sched_yield */

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bdrt.h"
#include "bdrt_profile.h"

enum { READY_BATCH = 64 };

struct bdrt_dag_exec {
    const bdrt_dag *dag;
    _Atomic int32_t *left; /* per task: predecessors not yet done */
    int32_t *heap;         /* ready tasks, a min-heap of heap_len */
    int32_t heap_len;
    atomic_flag lock;
    _Atomic int32_t queued; /* heap_len, readable without the lock: idle threads test it first, so
                               they do not take the lock from the threads pushing work */
    _Alignas(64) _Atomic int32_t done;
    void *ctx;
    /* test mode */
    bool check;
    uint64_t rng;
    int32_t *touch_left; /* per value: tasks still to touch it */
    unsigned char *alive; /* per value: 0 not yet, 1 alive, 2 dead */
};

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

static void lock(bdrt_dag_exec *x) {
    while (atomic_flag_test_and_set_explicit(&x->lock, memory_order_acquire))
        relax();
}

static void unlock(bdrt_dag_exec *x) {
    atomic_flag_clear_explicit(&x->lock, memory_order_release);
}

static void heap_push(bdrt_dag_exec *x, int32_t t) {
    int32_t i = x->heap_len++;
    atomic_store_explicit(&x->queued, x->heap_len, memory_order_relaxed);
    while (i > 0 && x->heap[(i - 1) / 2] > t) {
        x->heap[i] = x->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    x->heap[i] = t;
}

static int32_t heap_pop(bdrt_dag_exec *x) {
    if (!x->heap_len) return -1;
    int32_t top = x->heap[0], last = x->heap[--x->heap_len], i = 0;
    atomic_store_explicit(&x->queued, x->heap_len, memory_order_relaxed);
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= x->heap_len) break;
        if (c + 1 < x->heap_len && x->heap[c + 1] < x->heap[c]) c++;
        if (x->heap[c] >= last) break;
        x->heap[i] = x->heap[c];
        i = c;
    }
    x->heap[i] = last;
    return top;
}

bdrt_dag_exec *bdrt_dag_exec_create(const bdrt_dag *dag) {
    bdrt_dag_exec *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->dag = dag;
    size_t n = (size_t)dag->n_tasks + 1, nv = (size_t)dag->n_values + 1;
    x->left = malloc(n * sizeof *x->left);
    x->heap = malloc(n * sizeof *x->heap);
    x->touch_left = malloc(nv * sizeof *x->touch_left);
    x->alive = malloc(nv);
    atomic_flag_clear(&x->lock);
    const char *seed = getenv("BDRT_SCHEDULE_SEED");
    if (seed && *seed) {
        x->check = true;
        x->rng = strtoull(seed, NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    }
    if (!x->left || !x->heap || !x->touch_left || !x->alive) {
        bdrt_dag_exec_destroy(x);
        return NULL;
    }
    return x;
}

void bdrt_dag_exec_destroy(bdrt_dag_exec *x) {
    if (!x) return;
    free(x->left);
    free(x->heap);
    free(x->touch_left);
    free(x->alive);
    free(x);
}

/* Marks task t done: its successors that become ready go to *next (the lowest one, if *next is
 * still free) or to the queue; an event that becomes ready completes at once. */
static void complete(bdrt_dag_exec *x, int32_t t, int32_t *next) {
    const bdrt_dag *g = x->dag;
    int32_t ready[READY_BATCH], n = 0;
    for (int32_t j = g->succ_start[t]; j < g->succ_start[t + 1]; j++) {
        int32_t s = g->succ[j];
        if (atomic_fetch_sub_explicit(&x->left[s], 1, memory_order_acq_rel) != 1) continue;
        if (g->task_fn[s] < 0) {
            complete(x, s, next);
            continue;
        }
        if (*next < 0) {
            *next = s;
            continue;
        }
        if (s < *next) { /* keep the lowest for this thread */
            int32_t u = *next;
            *next = s;
            s = u;
        }
        ready[n++] = s;
        if (n == READY_BATCH) {
            lock(x);
            for (int32_t i = 0; i < n; i++) heap_push(x, ready[i]);
            unlock(x);
            n = 0;
        }
    }
    if (n) {
        lock(x);
        for (int32_t i = 0; i < n; i++) heap_push(x, ready[i]);
        unlock(x);
    }
    atomic_fetch_add_explicit(&x->done, 1, memory_order_release);
}

static void worker(void *arg, int64_t unused, int thread) {
    (void)unused;
    bdrt_dag_exec *x = arg;
    const bdrt_dag *g = x->dag;
    int32_t next = -1;
    unsigned idle = 0;
    for (;;) {
        int32_t t = next;
        next = -1;
        if (t < 0 && atomic_load_explicit(&x->queued, memory_order_relaxed) > 0) {
            lock(x);
            t = heap_pop(x);
            unlock(x);
        }
        if (t < 0) {
            if (atomic_load_explicit(&x->done, memory_order_acquire) == g->n_tasks) return;
            bdrt_help_poll();
            if (++idle > 2000) sched_yield();
            else relax();
            continue;
        }
        idle = 0;
        bdrt_call_block(g->fns[g->task_fn[t]], x->ctx, g->task_block[t], thread);
        complete(x, t, &next);
    }
}

/* ---- the test mode ---- */

static uint64_t next_random(bdrt_dag_exec *x) {
    x->rng ^= x->rng << 13; /* xorshift64 */
    x->rng ^= x->rng >> 7;
    x->rng ^= x->rng << 17;
    return x->rng;
}

/* Fills value v's bytes with 0xff, except bytes of values alive now. */
static void poison(bdrt_dag_exec *x, unsigned char *arena, int32_t v) {
    const bdrt_dag *g = x->dag;
    int64_t lo = g->value_offset[v], hi = lo + g->value_bytes[v];
    for (int64_t at = lo; at < hi;) {
        int64_t end = hi; /* poison [at, end) up to the next alive value's bytes */
        for (int32_t u = 0; u < g->n_values; u++) {
            if (x->alive[u] != 1 || u == v) continue;
            int64_t ulo = g->value_offset[u], uhi = ulo + g->value_bytes[u];
            if (ulo <= at && at < uhi) {
                at = uhi;
                end = -1;
                break;
            }
            if (ulo > at && ulo < end) end = ulo;
        }
        if (end < 0) continue;
        memset(arena + at, 0xff, (size_t)(end - at));
        at = end;
    }
}

static void touch(bdrt_dag_exec *x, unsigned char *arena, int32_t t, bool after) {
    const bdrt_dag *g = x->dag;
    for (int32_t j = g->touch_start[t]; j < g->touch_start[t + 1]; j++) {
        int32_t v = g->touch[j];
        if (!after) {
            if (!x->alive[v]) x->alive[v] = 1;
        } else if (--x->touch_left[v] == 0) {
            x->alive[v] = 2;
            poison(x, arena, v);
        }
    }
}

static void run_checked(bdrt_dag_exec *x, unsigned char *arena) {
    const bdrt_dag *g = x->dag;
    memset(arena, 0xff, (size_t)g->arena_bytes);
    memset(x->alive, 0, (size_t)g->n_values + 1);
    for (int32_t v = 0; v < g->n_values; v++) x->touch_left[v] = 0;
    for (int32_t t = 0; t < g->n_tasks; t++)
        for (int32_t j = g->touch_start[t]; j < g->touch_start[t + 1]; j++) x->touch_left[g->touch[j]]++;
    int32_t n_ready = 0; /* x->heap as an unordered ready set */
    for (int32_t t = 0; t < g->n_tasks; t++)
        if (!atomic_load_explicit(&x->left[t], memory_order_relaxed)) x->heap[n_ready++] = t;
    while (n_ready) {
        int32_t i = (int32_t)(next_random(x) % (uint64_t)n_ready), t = x->heap[i];
        x->heap[i] = x->heap[--n_ready];
        if (g->task_fn[t] >= 0) {
            touch(x, arena, t, false);
            bdrt_call_block(g->fns[g->task_fn[t]], x->ctx, g->task_block[t], 0);
            touch(x, arena, t, true);
        }
        for (int32_t j = g->succ_start[t]; j < g->succ_start[t + 1]; j++)
            if (atomic_fetch_sub_explicit(&x->left[g->succ[j]], 1, memory_order_relaxed) == 1)
                x->heap[n_ready++] = g->succ[j];
    }
}

void bdrt_dag_run(bdrt_dag_exec *x, bdrt_pool *pool, void *ctx, unsigned char *arena) {
    const bdrt_dag *g = x->dag;
    if (!g->n_tasks) return;
    x->ctx = ctx;
    x->heap_len = 0;
    atomic_store_explicit(&x->done, 0, memory_order_relaxed);
    for (int32_t t = 0; t < g->n_tasks; t++) {
        atomic_store_explicit(&x->left[t], g->n_preds[t], memory_order_relaxed);
        if (!g->n_preds[t]) x->heap[x->heap_len++] = t; /* ascending: already a heap */
    }
    if (x->check) {
        run_checked(x, arena);
        return;
    }
    if (g->serial || bdrt_pool_threads(pool) == 1) {
        for (int32_t t = 0; t < g->n_tasks; t++)
            if (g->task_fn[t] >= 0) bdrt_call_block(g->fns[g->task_fn[t]], ctx, g->task_block[t], 0);
        return;
    }
    atomic_store_explicit(&x->queued, x->heap_len, memory_order_relaxed);
    /* Every event waits for its nest's blocks, so the initially ready tasks are all blocks. */
    bdrt_pool_run_unrecorded(pool, bdrt_pool_threads(pool), worker, x);
}
