/* bdrt_pool.c — the CPU thread pool generated code runs its blocks on, and aligned allocation.
 *
 * Generated code calls bdrt_pool_run once per operator, hundreds of times per inference, so a
 * call must cost microseconds, not a thread creation. The pool keeps threads-1 workers alive.
 * A call publishes the job (fn, ctx, n_blocks) and bumps a generation counter; workers that are
 * spinning see it within nanoseconds, sleeping ones are woken through a futex on the counter
 * (only when some are asleep, so back-to-back calls make no system call). Every thread, the
 * caller included, then claims blocks from one atomic counter in guided chunks (a CAS takes
 * remaining / (2 * threads) blocks, at least n_blocks / (32 * threads) and at least one), so
 * thousands of tiny blocks cost a few dozen atomic operations while uneven blocks still balance.
 *
 * Finishing does not wait for workers that never showed up: on a loaded machine a descheduled
 * worker would otherwise stall every call for a time slice. A worker registers in `active`
 * before touching the job and then re-checks that the job is still open; the caller, once the
 * block counter is exhausted, closes the job and waits only until `active` drops to zero, i.e.
 * for the blocks that were actually claimed. A worker that registers too late sees the job
 * closed (or a newer generation) and leaves without reading it. All of these are seq_cst, so
 * either the caller sees the registration or the worker sees the close. The caller's wait on
 * `active` spins, then sleeps on a futex. Idle threads spin for BDRT_SPIN_US microseconds
 * (default 1000) before sleeping, and yield instead of pausing when there are more threads than
 * CPUs.
 *
 * Every job carries the caller's floating-point control state (x86: MXCSR, which holds the
 * flush-denormals bits the generated run() sets), and a worker takes it on before running
 * blocks, so a run computes alike on every thread.
 *
 * bdrt_help shares a loop inside one block with the threads idle at that moment: it publishes the
 * loop in `help`, wakes sleeping workers, and takes items itself; spinning workers and the
 * caller's own wait (spin) join it, as do the block schedule's idle threads (bdrt_help_poll).
 * It never waits for a thread to arrive, only for items already taken.
 *
 * Off Linux the futex becomes a mutex + condition variable with the same protocol. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, syscall */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "bdrt.h"
#include "bdrt_profile.h"

#define CACHE_LINE 64

struct bdrt_pool {
    /* Written by the caller before the generation bump, read by workers after seeing it. */
    bdrt_task_fn fn;
    void *ctx;
    int64_t n_blocks;
    int recorded; /* blocks go through the profiler (not the DAG executor's thread loops) */
    unsigned fp_control; /* the caller's floating-point control state (fp_control_get) */
    int threads;
    int yield;    /* more threads than CPUs: yield instead of pause while spinning */
    long spin_ns; /* how long idle threads spin before sleeping */
    pthread_t *tids;
    pthread_mutex_t call_mu; /* serialises calls from different outside threads */
#ifndef __linux__
    pthread_mutex_t mu;
    pthread_cond_t cv;
#endif
    _Alignas(CACHE_LINE) _Atomic int64_t next; /* next unclaimed block */
    _Alignas(CACHE_LINE) _Atomic uint32_t gen; /* job generation (futex word for workers) */
    _Atomic int sleepers;                      /* workers asleep on gen */
    _Atomic int stop;
    _Atomic uint32_t closed;                      /* the last generation whose job is closed */
    _Alignas(CACHE_LINE) _Atomic uint32_t active; /* workers inside the job (futex word) */
    _Atomic int caller_sleeping;
    /* bdrt_help: the help under way (NULL: none), and the threads that may be reading it */
    _Alignas(CACHE_LINE) struct help *_Atomic help;
    _Atomic int helping;
};

/* One bdrt_help call, on its caller's stack. */
typedef struct help {
    bdrt_help_fn fn;
    void *ctx;
    int64_t n;
    unsigned fp_control; /* the caller's, taken on by helpers as a job's is */
    _Atomic int64_t next, done;
} help;

/* Which pool (and thread index) the current thread is working for, to run nested calls inline. */
static _Thread_local const bdrt_pool *tl_pool;
static _Thread_local int tl_thread;

/* ---- floating-point control state ---- */

/* x86: MXCSR's control bits (DAZ bit 6, exception masks, rounding, FTZ bit 15; not the sticky
 * exception flags below them, which arithmetic keeps changing). Elsewhere nothing is changed:
 * denormals are kept. */
static unsigned fp_control_get(void) {
#if defined(__x86_64__) || defined(__i386__)
    return _mm_getcsr() & 0xffc0u;
#else
    return 0;
#endif
}

static void fp_control_set(unsigned v) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(v);
#else
    (void)v;
#endif
}

unsigned bdrt_fp_flush_denormals(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u); /* FTZ | DAZ */
    return saved;
#else
    return 0;
#endif
}

void bdrt_fp_restore(unsigned saved) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(saved);
#else
    (void)saved;
#endif
}

/* ---- waiting ---- */

static void wait_on(bdrt_pool *p, _Atomic uint32_t *word, uint32_t seen) {
#ifdef __linux__
    (void)p;
    syscall(SYS_futex, (uint32_t *)(uintptr_t)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&p->mu);
    while (atomic_load(word) == seen)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
#endif
}

static void wake_all(bdrt_pool *p, _Atomic uint32_t *word) {
#ifdef __linux__
    (void)p;
    syscall(SYS_futex, (uint32_t *)(uintptr_t)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
#endif
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* ---- help inside a block ---- */

/* Takes items of h until none is left. */
static void help_items(help *h, int thread) {
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&h->next, 1, memory_order_relaxed);
        if (i >= h->n) return;
        h->fn(h->ctx, i, thread);
        atomic_fetch_add_explicit(&h->done, 1, memory_order_release);
    }
}

/* An idle thread of p joins the help under way, if any; whether there was one. Registering in
 * `helping` before reading the pointer (both seq_cst) lets bdrt_help, which clears the pointer
 * and then waits for `helping` to drop, return only once no thread can still touch its help. */
static bool help_join(bdrt_pool *p, int thread) {
    if (!atomic_load_explicit(&p->help, memory_order_relaxed)) return false;
    atomic_fetch_add(&p->helping, 1);
    help *h = atomic_load(&p->help);
    if (h) {
        if (fp_control_get() != h->fp_control) fp_control_set(h->fp_control);
        help_items(h, thread);
    }
    atomic_fetch_sub(&p->helping, 1);
    return h != NULL;
}

void bdrt_help(int64_t n, bdrt_help_fn fn, void *ctx) {
    bdrt_pool *p = (bdrt_pool *)tl_pool;
    int thread = p ? tl_thread : 0;
    help h = {fn, ctx, n, 0, 0, 0};
    help *none = NULL;
    h.fp_control = fp_control_get();
    if (!p || p->threads == 1 || n <= 1 || !atomic_compare_exchange_strong(&p->help, &none, &h)) {
        for (int64_t i = 0; i < n; i++) fn(ctx, i, thread);
        return;
    }
    /* a sleeping worker is woken (its wait re-checks `help`; one that falls asleep just after
     * misses this call's wake-up, and the caller does its items) */
    if (atomic_load(&p->sleepers) > 0) wake_all(p, &p->gen);
    help_items(&h, thread);
    while (atomic_load_explicit(&h.done, memory_order_acquire) < n) cpu_relax();
    atomic_store(&p->help, NULL);
    while (atomic_load(&p->helping)) cpu_relax();
}

int bdrt_help_threads(void) {
    return tl_pool ? tl_pool->threads : 1;
}

void bdrt_help_poll(void) {
    if (tl_pool) help_join((bdrt_pool *)tl_pool, tl_thread);
}

/* Spins until (*word == value) == until_equal, or the spin time is up; returns the last value
 * read. Meanwhile it joins any help under way (and then spins its full time again). */
static uint32_t spin(bdrt_pool *p, _Atomic uint32_t *word, uint32_t value, bool until_equal) {
    long start = 0;
    for (unsigned i = 0;; i++) {
        uint32_t v = atomic_load_explicit(word, memory_order_acquire);
        if ((v == value) == until_equal) return v;
        if (help_join(p, tl_thread)) start = 0;
        if (p->yield)
            sched_yield();
        else
            cpu_relax();
        if ((i & 255) == 255) {
            long t = now_ns();
            if (!start)
                start = t;
            else if (t - start > p->spin_ns)
                return v;
        }
    }
}

/* ---- blocks ---- */

static void run_blocks(bdrt_pool *p, int thread) {
    const int64_t n = p->n_blocks, div = 2 * (int64_t)p->threads;
    const int64_t min_chunk =
        n / (32 * (int64_t)p->threads) > 1 ? n / (32 * (int64_t)p->threads) : 1;
    const bdrt_task_fn fn = p->fn;
    void *const ctx = p->ctx;
    const int recorded = p->recorded;
    int64_t cur = atomic_load_explicit(&p->next, memory_order_relaxed);
    while (cur < n) {
        int64_t chunk = (n - cur) / div;
        if (chunk < min_chunk) chunk = min_chunk < n - cur ? min_chunk : n - cur;
        if (atomic_compare_exchange_weak_explicit(&p->next, &cur, cur + chunk, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            for (int64_t b = cur, e = cur + chunk; b < e; b++)
                if (recorded) bdrt_call_block(fn, ctx, b, thread);
                else fn(ctx, b, thread);
            cur = atomic_load_explicit(&p->next, memory_order_relaxed);
        }
    }
}

typedef struct worker_arg {
    bdrt_pool *pool;
    int id;
} worker_arg;

static void *worker_main(void *arg_) {
    worker_arg arg = *(worker_arg *)arg_;
    bdrt_pool *p = arg.pool;
    free(arg_);
    tl_pool = p;
    tl_thread = arg.id;
    unsigned fp_control = fp_control_get();
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = spin(p, &p->gen, seen, false);
        if (g == seen) {
            atomic_fetch_add(&p->sleepers, 1);
            while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->help))
                wait_on(p, &p->gen, seen);
            atomic_fetch_sub(&p->sleepers, 1);
            if (g == seen) continue; /* woken by bdrt_help: spin, which helps */
        }
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        atomic_fetch_add(&p->active, 1);
        if (atomic_load(&p->gen) == g && atomic_load(&p->closed) != g) {
            if (p->fp_control != fp_control) fp_control_set(fp_control = p->fp_control);
            run_blocks(p, arg.id);
        }
        if (atomic_fetch_sub(&p->active, 1) == 1 && atomic_load(&p->caller_sleeping))
            wake_all(p, &p->active);
    }
    return NULL;
}

/* ---- public ---- */

int bdrt_cpu_count(void) {
#ifdef __linux__
    for (int ncpu = 1024; ncpu <= (1 << 20); ncpu *= 4) {
        cpu_set_t *set = CPU_ALLOC((size_t)ncpu);
        size_t size = CPU_ALLOC_SIZE((size_t)ncpu);
        if (!set) break;
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            int n = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            if (n > 0) return n;
            break;
        }
        CPU_FREE(set);
        if (errno != EINVAL) break;
    }
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (n > INT_MAX ? INT_MAX : (int)n) : 1;
}

static long spin_ns_from_env(void) {
    const char *s = getenv("BDRT_SPIN_US");
    if (!s || !*s) return 1000000L;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0) return 1000000L;
    if (v > 10000000L) v = 10000000L; /* 10 s */
    return v * 1000L;
}

bdrt_pool *bdrt_pool_create(int threads) {
    int ncpu = bdrt_cpu_count();
    if (threads <= 0) threads = ncpu;
    if (threads > BDRT_POOL_MAX_THREADS) threads = BDRT_POOL_MAX_THREADS;
    bdrt_pool *p = bdrt_alloc(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->threads = threads;
    p->yield = threads > ncpu;
    p->spin_ns = spin_ns_from_env();
    atomic_init(&p->next, 0);
    atomic_init(&p->gen, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->closed, 0);
    atomic_init(&p->active, 0);
    atomic_init(&p->caller_sleeping, 0);
    atomic_init(&p->help, NULL);
    atomic_init(&p->helping, 0);
    if (pthread_mutex_init(&p->call_mu, NULL)) {
        bdrt_free(p);
        return NULL;
    }
#ifndef __linux__
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
#endif
    p->tids = calloc((size_t)threads, sizeof *p->tids);
    if (!p->tids) {
        p->threads = 1;
        bdrt_pool_destroy(p);
        return NULL;
    }
    for (int i = 1; i < threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) {
            a->pool = p;
            a->id = i;
        }
        if (!a || pthread_create(&p->tids[i], NULL, worker_main, a)) {
            free(a);
            p->threads = i; /* destroy joins the workers started so far */
            bdrt_pool_destroy(p);
            return NULL;
        }
    }
    return p;
}

void bdrt_pool_destroy(bdrt_pool *p) {
    if (!p) return;
    if (p->threads > 1) {
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        atomic_fetch_add(&p->gen, 1);
        wake_all(p, &p->gen);
        for (int i = 1; i < p->threads; i++)
            pthread_join(p->tids[i], NULL);
    }
    free(p->tids);
    pthread_mutex_destroy(&p->call_mu);
#ifndef __linux__
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
#endif
    bdrt_free(p);
}

int bdrt_pool_threads(const bdrt_pool *p) {
    return p ? p->threads : 1;
}

static void pool_run(bdrt_pool *p, int64_t n_blocks, bdrt_task_fn fn, void *ctx, int recorded) {
    if (n_blocks <= 0) return;
    if (!p || tl_pool == p || p->threads == 1 || n_blocks == 1) {
        /* Inline: no pool, a nested call from one of this pool's tasks, or nothing to share. A
         * lone block runs as the pool's thread 0, so that it may call bdrt_help. */
        const bdrt_pool *saved_pool = tl_pool;
        int saved_thread = tl_thread;
        if (p && tl_pool != p) tl_pool = p, tl_thread = 0;
        int thread = p ? tl_thread : 0;
        for (int64_t b = 0; b < n_blocks; b++)
            if (recorded) bdrt_call_block(fn, ctx, b, thread);
            else fn(ctx, b, thread);
        tl_pool = saved_pool;
        tl_thread = saved_thread;
        return;
    }
    pthread_mutex_lock(&p->call_mu);
    const bdrt_pool *saved_pool = tl_pool;
    int saved_thread = tl_thread;
    tl_pool = p;
    tl_thread = 0;

    p->fn = fn;
    p->ctx = ctx;
    p->n_blocks = n_blocks;
    p->recorded = recorded;
    p->fp_control = fp_control_get();
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    /* seq_cst: publishes the job, ordered before the load of sleepers */
    uint32_t g = atomic_fetch_add(&p->gen, 1) + 1;
    if (atomic_load(&p->sleepers) > 0) wake_all(p, &p->gen);

    run_blocks(p, 0);

    atomic_store(&p->closed, g); /* no worker registering from now on touches this job */
    uint32_t left = spin(p, &p->active, 0, true);
    if (left) {
        atomic_store(&p->caller_sleeping, 1);
        while ((left = atomic_load(&p->active)) != 0)
            wait_on(p, &p->active, left);
        atomic_store(&p->caller_sleeping, 0);
    }
    atomic_thread_fence(memory_order_acquire);

    tl_pool = saved_pool;
    tl_thread = saved_thread;
    pthread_mutex_unlock(&p->call_mu);
}

void bdrt_pool_run(bdrt_pool *p, int64_t n_blocks, bdrt_task_fn fn, void *ctx) {
    pool_run(p, n_blocks, fn, ctx, 1);
}

void bdrt_pool_run_unrecorded(bdrt_pool *p, int64_t n_blocks, bdrt_task_fn fn, void *ctx) {
    pool_run(p, n_blocks, fn, ctx, 0);
}

/* ---- aligned allocation ---- */

void *bdrt_alloc(size_t bytes) {
    void *p = NULL;
    if (bytes > SIZE_MAX - 63) return NULL;
    bytes = bytes ? (bytes + 63) & ~(size_t)63 : 64;
    if (posix_memalign(&p, 64, bytes)) return NULL;
    return p;
}

void bdrt_free(void *p) {
    free(p);
}
