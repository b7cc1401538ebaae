/* bdrt_dag.c — dataflow execution of the block schedule's task DAG (bdrt.h), and its test mode.
 *
 * The pool runs one job whose "blocks" are the threads: each thread loops taking ready tasks
 * until every task is done. A task's counter starts at its predecessor count; the thread that
 * drops it to zero makes it ready. Each thread has a home: the tasks of block b of a nest of B
 * blocks belong to thread b * T / B (the contiguous shares a static partition gives; a nest of
 * one block to the thread that makes it ready), so that
 * consecutive nests split alike leave each block's inputs in the cache of the core that wrote
 * them. Where two cores share no cache, a line written by one core and read by the other moved
 * at 12 GB/s against 70 read where it was written (a 2-vCPU Zen 3 guest); handed to whichever
 * thread came first, MobileNetV2's blocks ran 1.5x longer at 2 threads than at 1. Ready tasks
 * wait on their home thread's binary min-heap of task numbers; a thread with none left takes one
 * from the thread with the most (a leaf of its heap: a later task, the earlier ones stay with
 * their home). The heaps share one spin lock: a block takes microseconds and a lock hand-off
 * tens of nanoseconds. A thread that finds no task while tasks are still running spins (pause,
 * then yield). */
#define _GNU_SOURCE /* sched_yield */

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bdrt.h"
#include "bdrt_profile.h"

enum { READY_BATCH = 64 };

typedef struct ready_heap {
    int32_t *task; /* a min-heap of len task numbers */
    int32_t len;
} ready_heap;

struct bdrt_dag_exec {
    const bdrt_dag *dag;
    _Atomic int32_t *left; /* per task: predecessors not yet done */
    int32_t *heap;         /* the test mode's ready set */
    int32_t heap_len;
    ready_heap *ready;     /* per thread, for `threads` threads (made at the first run) */
    int32_t *home;         /* per task: its thread (-1: the one that makes it ready) */
    int threads;
    atomic_flag lock;
    _Atomic int32_t queued; /* tasks in the heaps, readable without the lock: idle threads test it
                               first, so they do not take the lock from the threads pushing work */
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

static void heap_push(ready_heap *h, int32_t t) {
    int32_t i = h->len++;
    while (i > 0 && h->task[(i - 1) / 2] > t) {
        h->task[i] = h->task[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->task[i] = t;
}

static int32_t heap_pop(ready_heap *h) {
    if (!h->len) return -1;
    int32_t top = h->task[0], last = h->task[--h->len], i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= h->len) break;
        if (c + 1 < h->len && h->task[c + 1] < h->task[c]) c++;
        if (h->task[c] >= last) break;
        h->task[i] = h->task[c];
        i = c;
    }
    h->task[i] = last;
    return top;
}

/* Under the lock: task t, made ready by `thread`, onto its home's heap (one-block nests: that
 * thread's). */
static void push_ready(bdrt_dag_exec *x, int32_t t, int thread) {
    heap_push(&x->ready[x->home[t] >= 0 ? x->home[t] : thread], t);
    atomic_fetch_add_explicit(&x->queued, 1, memory_order_relaxed);
}

/* Under the lock: the lowest task of thread's heap, else a leaf of the fullest other heap's (a
 * later task), else -1. */
static int32_t pop_ready(bdrt_dag_exec *x, int thread) {
    int32_t t = heap_pop(&x->ready[thread]);
    if (t < 0) {
        ready_heap *most = NULL;
        for (int i = 0; i < x->threads; i++)
            if (x->ready[i].len && (!most || x->ready[i].len > most->len)) most = &x->ready[i];
        if (most) t = most->task[--most->len]; /* a leaf: the rest stays a heap */
    }
    if (t >= 0) atomic_fetch_sub_explicit(&x->queued, 1, memory_order_relaxed);
    return t;
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

/* The heaps and homes for `threads` threads; false when out of memory. */
static bool make_homes(bdrt_dag_exec *x, int threads) {
    const bdrt_dag *g = x->dag;
    if (x->threads == threads) return true;
    for (int i = 0; i < x->threads; i++) free(x->ready[i].task);
    free(x->ready);
    free(x->home);
    x->threads = 0;
    x->ready = calloc((size_t)threads, sizeof *x->ready);
    x->home = malloc(((size_t)g->n_tasks + 1) * sizeof *x->home);
    if (!x->ready || !x->home) return false;
    for (int i = 0; i < threads; i++) {
        x->ready[i].task = malloc(((size_t)g->n_tasks + 1) * sizeof *x->ready[i].task);
        if (!x->ready[i].task) {
            for (int j = 0; j < i; j++) free(x->ready[j].task);
            return false;
        }
    }
    for (int32_t t = 0; t < g->n_tasks; t++) {
        int64_t blocks = g->task_blocks ? g->task_blocks[t] : 0;
        /* a nest of one block has no share to keep: the thread that makes it ready runs it */
        x->home[t] = blocks > 1 ? (int32_t)(g->task_block[t] * (int64_t)threads / blocks)
                     : blocks == 1 ? -1 : 0;
    }
    x->threads = threads;
    return true;
}

void bdrt_dag_exec_destroy(bdrt_dag_exec *x) {
    if (!x) return;
    for (int i = 0; i < x->threads; i++) free(x->ready[i].task);
    free(x->ready);
    free(x->home);
    free(x->left);
    free(x->heap);
    free(x->touch_left);
    free(x->alive);
    free(x);
}

/* Marks task t done on `thread`: its successors that become ready go to *next (the lowest one
 * of this thread's, if *next is still free) or to their home's heap; an event that becomes ready
 * completes at once. */
static void complete(bdrt_dag_exec *x, int32_t t, int thread, int32_t *next) {
    const bdrt_dag *g = x->dag;
    int32_t ready[READY_BATCH], n = 0;
    for (int32_t j = g->succ_start[t]; j < g->succ_start[t + 1]; j++) {
        int32_t s = g->succ[j];
        if (atomic_fetch_sub_explicit(&x->left[s], 1, memory_order_acq_rel) != 1) continue;
        if (g->task_fn[s] < 0) {
            complete(x, s, thread, next);
            continue;
        }
        bool mine = x->home[s] < 0 || x->home[s] == thread;
        if (*next < 0 && mine) {
            *next = s;
            continue;
        }
        if (mine && s < *next) { /* keep this thread's lowest */
            int32_t u = *next;
            *next = s;
            s = u;
        }
        ready[n++] = s;
        if (n == READY_BATCH) {
            lock(x);
            for (int32_t i = 0; i < n; i++) push_ready(x, ready[i], thread);
            unlock(x);
            n = 0;
        }
    }
    if (n) {
        lock(x);
        for (int32_t i = 0; i < n; i++) push_ready(x, ready[i], thread);
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
            t = pop_ready(x, thread);
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
        complete(x, t, thread, &next);
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
    int threads = bdrt_pool_threads(pool);
    if (g->serial || threads == 1 || !make_homes(x, threads)) { /* (out of memory: serially) */
        for (int32_t t = 0; t < g->n_tasks; t++)
            if (g->task_fn[t] >= 0) bdrt_call_block(g->fns[g->task_fn[t]], ctx, g->task_block[t], 0);
        return;
    }
    /* Every event waits for its nest's blocks, so the initially ready tasks are all blocks. */
    atomic_store_explicit(&x->queued, 0, memory_order_relaxed);
    for (int i = 0; i < threads; i++) x->ready[i].len = 0;
    for (int32_t i = 0; i < x->heap_len; i++) push_ready(x, x->heap[i], 0);
    bdrt_pool_run_unrecorded(pool, threads, worker, x);
}
