/* pool_test.c — stress test of the runtime's thread pool and aligned allocation.
 *
 * For pools of 1, 2, 3 and 8 threads (8 oversubscribes small machines), with the default spin
 * and with BDRT_SPIN_US=0 (every wait goes to the futex): many runs of many block counts, each
 * block recording that it ran exactly once, on a valid thread index; sums checked after every
 * run. Also: a nested call from inside a task (runs inline), two outside threads sharing one
 * pool (serialised), blocks of very uneven cost, and the flush-denormals mode of the caller
 * reaching every worker (x86) and being restored; bdrt_help from inside blocks (every item once,
 * on a valid thread, its effects visible to the caller; two blocks asking at once; outside a
 * pool, on the caller), with the default spin and with every idle worker asleep. The block DAG
 * executor (bdrt_dag_run) on random DAGs with completion events, on 2, 3 and 8 threads: every
 * block runs once per run, on a valid thread, after every block it waits for (directly or
 * through an event). Prints the
 * measured per-call overhead of
 * bdrt_pool_run (2 threads, 1000 tiny blocks). Closing line "N passed, M failed". */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bdrt.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

static int passed, failed;

static void expect(int cond, const char *what) {
    if (cond) {
        passed++;
    } else {
        failed++;
        printf("FAIL  %s\n", what);
    }
}

#define MAX_BLOCKS  20000
#define MAX_THREADS 16

typedef struct counts {
    bdrt_pool *pool;
    int threads;
    unsigned char hits[MAX_BLOCKS];
    struct {
        _Alignas(64) int64_t sum;
    } per_thread[MAX_THREADS];
    _Atomic int bad_thread;
    _Atomic int64_t spin; /* uneven work */
} counts;

static void count_block(void *ctx, int64_t b, int thread) {
    counts *c = ctx;
    if (thread < 0 || thread >= c->threads) {
        atomic_store(&c->bad_thread, 1);
        return;
    }
    c->hits[b]++;
    c->per_thread[thread].sum += b;
}

static void uneven_block(void *ctx, int64_t b, int thread) {
    counts *c = ctx;
    int64_t x = 0;
    for (int64_t i = 0; i < (b % 17 == 0 ? 20000 : 10); i++)
        x += i ^ atomic_load_explicit(&c->spin, memory_order_relaxed);
    atomic_store_explicit(&c->spin, x & 1, memory_order_relaxed);
    count_block(c, b, thread);
}

/* Runs n blocks and checks each ran once; returns 0 when right. */
static int run_and_check(counts *c, int64_t n, bdrt_task_fn fn) {
    memset(c->hits, 0, (size_t)(n > 0 ? n : 0));
    for (int t = 0; t < MAX_THREADS; t++)
        c->per_thread[t].sum = 0;
    bdrt_pool_run(c->pool, n, fn, c);
    int64_t sum = 0;
    for (int t = 0; t < MAX_THREADS; t++)
        sum += c->per_thread[t].sum;
    int ok = !atomic_load(&c->bad_thread) && sum == (n > 0 ? n * (n - 1) / 2 : 0);
    for (int64_t b = 0; ok && b < n; b++)
        ok = c->hits[b] == 1;
    return ok ? 0 : -1;
}

static void stress(int threads, int runs) {
    static counts c;
    char what[128];
    memset(&c, 0, sizeof c);
    c.pool = bdrt_pool_create(threads);
    snprintf(what, sizeof what, "create pool of %d threads", threads);
    expect(c.pool != NULL, what);
    if (!c.pool) return;
    c.threads = bdrt_pool_threads(c.pool);
    snprintf(what, sizeof what, "pool of %d threads reports %d", threads, c.threads);
    expect(c.threads == threads, what);
    static const int64_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, 4099, MAX_BLOCKS};
    int bad = 0;
    for (int r = 0; r < runs; r++) {
        int64_t n = sizes[(size_t)r % (sizeof sizes / sizeof sizes[0])];
        if (run_and_check(&c, n, count_block)) bad++;
    }
    snprintf(what, sizeof what, "%d threads: %d runs, every block once (%d bad)", threads, runs,
             bad);
    expect(bad == 0, what);
    bad = 0;
    for (int r = 0; r < runs / 20; r++)
        if (run_and_check(&c, 1000 + r, uneven_block)) bad++;
    snprintf(what, sizeof what, "%d threads: uneven blocks (%d bad)", threads, bad);
    expect(bad == 0, what);
    bdrt_pool_destroy(c.pool);
}

/* ---- nested calls ---- */

typedef struct nested {
    bdrt_pool *pool;
    _Atomic int64_t inner_sum;
    _Atomic int wrong_thread;
} nested;

typedef struct inner_ctx {
    nested *n;
    int outer_thread;
} inner_ctx;

static void inner_block(void *ctx, int64_t b, int thread) {
    inner_ctx *ic = ctx;
    if (thread != ic->outer_thread) atomic_store(&ic->n->wrong_thread, 1);
    atomic_fetch_add(&ic->n->inner_sum, b);
}

static void outer_block(void *ctx, int64_t b, int thread) {
    (void)b;
    nested *n = ctx;
    inner_ctx ic = {n, thread};
    bdrt_pool_run(n->pool, 10, inner_block, &ic);
}

static void test_nested(void) {
    nested n = {bdrt_pool_create(2), 0, 0};
    expect(n.pool != NULL, "create pool for nested calls");
    if (!n.pool) return;
    for (int r = 0; r < 100; r++)
        bdrt_pool_run(n.pool, 50, outer_block, &n);
    expect(atomic_load(&n.inner_sum) == 100 * 50 * 45, "nested calls run every inner block");
    expect(!atomic_load(&n.wrong_thread), "nested calls keep the caller's thread index");
    bdrt_pool_destroy(n.pool);
}

/* ---- help inside a block ---- */

typedef struct helped {
    int threads;
    int64_t items;
    int64_t out[64][256]; /* per calling block, per item: written by whoever runs the item */
    _Atomic int bad;
    _Atomic int64_t others; /* items run by a thread other than the block's */
} helped;

typedef struct help_call {
    helped *h;
    int64_t block;
    int thread; /* the calling block's */
} help_call;

static void help_item(void *ctx, int64_t i, int thread) {
    help_call *c = ctx;
    if (thread < 0 || thread >= c->h->threads || c->h->out[c->block][i] != 0) atomic_store(&c->h->bad, 1);
    c->h->out[c->block][i] = c->block * 1000 + i + 1;
    if (thread != c->thread) atomic_fetch_add(&c->h->others, 1);
}

static void helping_block(void *ctx, int64_t b, int thread) {
    helped *h = ctx;
    help_call c = {h, b, thread};
    for (int rep = 0; rep < 3; rep++) { /* steps: each sees the last one's items */
        for (int64_t i = 0; i < h->items; i++) h->out[b][i] = 0;
        bdrt_help(h->items, help_item, &c);
        for (int64_t i = 0; i < h->items; i++)
            if (h->out[b][i] != b * 1000 + i + 1) atomic_store(&h->bad, 1);
    }
}

static void test_help(void) {
    static helped h;
    static const int tcounts[] = {1, 2, 3, 8};
    for (int spin = 0; spin < 2; spin++) {
        if (spin) setenv("BDRT_SPIN_US", "0", 1); /* idle workers asleep: woken by bdrt_help */
        for (size_t t = 0; t < sizeof tcounts / sizeof tcounts[0]; t++) {
            bdrt_pool *p = bdrt_pool_create(tcounts[t]);
            expect(p != NULL, "create pool for bdrt_help");
            if (!p) continue;
            memset(&h, 0, sizeof h);
            h.threads = tcounts[t];
            for (int r = 0; r < 300; r++) {
                h.items = 1 + r % 200;
                bdrt_pool_run(p, 1 + r % 3, helping_block, &h); /* 1 block: run inline */
            }
            char what[96];
            snprintf(what, sizeof what, "bdrt_help: every item once, seen by its caller (%d threads%s)",
                     tcounts[t], spin ? ", no spin" : "");
            expect(!atomic_load(&h.bad), what);
            printf("info  bdrt_help, %d threads%s: %" PRId64 " items run by helpers\n", tcounts[t],
                   spin ? ", no spin" : "", atomic_load(&h.others));
            bdrt_pool_destroy(p);
        }
    }
    unsetenv("BDRT_SPIN_US");
    memset(&h, 0, sizeof h);
    h.threads = 1;
    h.items = 17;
    helping_block(&h, 0, 0); /* outside any pool: all on the caller */
    expect(!atomic_load(&h.bad) && atomic_load(&h.others) == 0 && bdrt_help_threads() == 1,
           "bdrt_help outside a pool runs every item on the caller");
}

/* ---- two outside threads on one pool ---- */

typedef struct shared {
    bdrt_pool *pool;
    int threads;
    _Atomic int errors;
} shared;

typedef struct sum_ctx {
    _Atomic int64_t sum;
    _Atomic int in_use[MAX_THREADS]; /* a thread index used by two tasks at once would clash */
    _Atomic int clash;
} sum_ctx;

static void sum_block(void *ctx, int64_t b, int thread) {
    sum_ctx *s = ctx;
    if (atomic_fetch_add(&s->in_use[thread], 1) != 0) atomic_store(&s->clash, 1);
    atomic_fetch_add(&s->sum, b);
    atomic_fetch_sub(&s->in_use[thread], 1);
}

static void *outside_caller(void *arg) {
    shared *sh = arg;
    for (int r = 0; r < 300; r++) {
        sum_ctx s;
        memset(&s, 0, sizeof s);
        bdrt_pool_run(sh->pool, 500, sum_block, &s);
        if (atomic_load(&s.sum) != 500 * 499 / 2 || atomic_load(&s.clash))
            atomic_fetch_add(&sh->errors, 1);
    }
    return NULL;
}

static void test_outside_threads(void) {
    shared sh = {bdrt_pool_create(3), 0, 0};
    expect(sh.pool != NULL, "create pool for outside callers");
    if (!sh.pool) return;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, outside_caller, &sh);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    expect(atomic_load(&sh.errors) == 0, "two outside threads share a pool safely");
    bdrt_pool_destroy(sh.pool);
}

/* ---- denormals: the caller's FTZ/DAZ mode on every thread ---- */

#if defined(__x86_64__) || defined(__i386__)
typedef struct fp_seen {
    _Atomic int flushed, kept, on_worker;
} fp_seen;

static void fp_block(void *ctx, int64_t b, int thread) {
    fp_seen *s = ctx;
    volatile int64_t spin = 0;
    for (int i = 0; i < 20000; i++) spin += i + b; /* long enough for workers to join */
    if ((_mm_getcsr() & 0x8040u) == 0x8040u) atomic_fetch_add(&s->flushed, 1);
    else atomic_fetch_add(&s->kept, 1);
    if (thread) atomic_fetch_add(&s->on_worker, 1);
}

static void test_denormals(void) {
    bdrt_pool *p = bdrt_pool_create(4);
    if (!p) return;
    unsigned before = _mm_getcsr();
    fp_seen on = {0}, off = {0};
    for (int run = 0; run < 50 && !atomic_load(&on.on_worker); run++) {
        unsigned saved = bdrt_fp_flush_denormals();
        bdrt_pool_run(p, 64, fp_block, &on);
        bdrt_fp_restore(saved);
    }
    expect(_mm_getcsr() == before, "bdrt_fp_restore gives the caller its MXCSR back");
    for (int run = 0; run < 50 && !atomic_load(&off.on_worker); run++)
        bdrt_pool_run(p, 64, fp_block, &off);
    expect(atomic_load(&on.on_worker) > 0 && atomic_load(&off.on_worker) > 0,
           "denormals: workers ran some of the blocks");
    expect(atomic_load(&on.kept) == 0, "denormals: every block of a flushing caller flushes");
    expect(atomic_load(&off.flushed) == 0, "denormals: workers go back to the caller's IEEE mode");
    bdrt_pool_destroy(p);
}
#else
static void test_denormals(void) {}
#endif

/* ---- allocation ---- */

static void test_alloc(void) {
    int ok = 1;
    void *p[64];
    for (size_t i = 0; i < 64; i++) {
        p[i] = bdrt_alloc(i * 13);
        ok = ok && p[i] && ((uintptr_t)p[i] % 64) == 0;
        if (p[i]) memset(p[i], 1, i * 13);
    }
    for (int i = 0; i < 64; i++)
        bdrt_free(p[i]);
    expect(ok, "bdrt_alloc: 64-byte aligned, 0 bytes gives a pointer");
    expect(bdrt_alloc((size_t)-1) == NULL, "bdrt_alloc: impossible size gives NULL");
    bdrt_free(NULL);
}

/* ---- overhead ---- */

static void tiny_block(void *ctx, int64_t b, int thread) {
    (void)b;
    ((int64_t *)ctx)[thread * 8]++;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void overhead(int threads, int64_t blocks, int calls) {
    bdrt_pool *p = bdrt_pool_create(threads);
    if (!p) return;
    _Alignas(64) int64_t cnt[MAX_THREADS * 8] = {0}; /* one cache line per thread */
    for (int i = 0; i < calls / 10; i++)
        bdrt_pool_run(p, blocks, tiny_block, cnt);
    double t0 = now_s();
    for (int i = 0; i < calls; i++)
        bdrt_pool_run(p, blocks, tiny_block, cnt);
    double per = (now_s() - t0) / calls;
    int64_t total = 0;
    for (int t = 0; t < threads; t++)
        total += cnt[t * 8];
    printf("info  bdrt_pool_run: %d threads, %" PRId64 " tiny blocks: %.2f us per call%s\n",
           threads, blocks, per * 1e6,
           total == (int64_t)(calls + calls / 10) * blocks ? "" : " (COUNT WRONG)");
    bdrt_pool_destroy(p);
}

/* ---- the block DAG executor ---- */

enum { DAG_TASKS = 600, DAG_MAX_PREDS = 4 };

typedef struct dag_case {
    int32_t task_fn[DAG_TASKS], task_block[DAG_TASKS], task_blocks[DAG_TASKS], n_preds[DAG_TASKS];
    int32_t succ_start[DAG_TASKS + 1], succ[DAG_TASKS * DAG_MAX_PREDS], touch_start[DAG_TASKS + 1];
    int32_t preds[DAG_TASKS][DAG_MAX_PREDS];
    int threads;
    _Atomic int32_t ran[DAG_TASKS]; /* the run number, when it ran in it */
    _Atomic int32_t times[DAG_TASKS];
    int32_t run;
    _Atomic int bad;
} dag_case;

static bool dag_done(dag_case *c, int32_t p) {
    if (c->task_fn[p] >= 0) return atomic_load(&c->ran[p]) == c->run;
    for (int j = 0; j < c->n_preds[p]; j++) /* an event: its blocks */
        if (!dag_done(c, c->preds[p][j])) return false;
    return true;
}

static void dag_block(void *ctx, int64_t b, int thread) {
    dag_case *c = ctx;
    int32_t t = (int32_t)b; /* each block's number is its task's */
    for (int j = 0; j < c->n_preds[t]; j++)
        if (!dag_done(c, c->preds[t][j])) atomic_store(&c->bad, 1);
    if (thread < 0 || thread >= c->threads) atomic_store(&c->bad, 1);
    atomic_fetch_add(&c->times[t], 1);
    atomic_store(&c->ran[t], c->run);
}

/* A random DAG in topological order: blocks with up to DAG_MAX_PREDS earlier tasks to wait for,
 * and every tenth task an event of up to DAG_MAX_PREDS earlier blocks (at least one). */
static void dag_build(dag_case *c, uint64_t seed) {
    uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
    int32_t count[DAG_TASKS + 1] = {0};
    for (int32_t t = 0; t < DAG_TASKS; t++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        bool event = t > 0 && t % 10 == 0;
        c->task_fn[t] = event ? -1 : 0;
        c->task_block[t] = t;
        /* homes: contiguous shares of the tasks, every third task a nest of one block (no home:
         * the thread that makes it ready runs it) */
        c->task_blocks[t] = event ? 0 : t % 3 ? DAG_TASKS : 1;
        int want = t == 0  ? 0
                   : event ? 1 + (int)(r % DAG_MAX_PREDS)
                           : (int)(r % (DAG_MAX_PREDS + 1));
        c->n_preds[t] = 0;
        for (int j = 0; j < want; j++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            int32_t p = (int32_t)(r % (uint64_t)t);
            if (event && c->task_fn[p] < 0) continue; /* an event waits for blocks */
            bool dup = false;
            for (int i = 0; i < c->n_preds[t]; i++) dup |= c->preds[t][i] == p;
            if (dup) continue;
            c->preds[t][c->n_preds[t]++] = p;
            count[p]++;
        }
        if (event && !c->n_preds[t]) { /* t - 1 is a block: t % 10 == 0 */
            c->preds[t][c->n_preds[t]++] = t - 1;
            count[t - 1]++;
        }
    }
    c->succ_start[0] = 0;
    for (int32_t t = 0; t < DAG_TASKS; t++) {
        c->succ_start[t + 1] = c->succ_start[t] + count[t];
        count[t] = c->succ_start[t];
        c->touch_start[t] = 0;
    }
    c->touch_start[DAG_TASKS] = 0;
    for (int32_t t = 0; t < DAG_TASKS; t++)
        for (int j = 0; j < c->n_preds[t]; j++) c->succ[count[c->preds[t][j]]++] = t;
}

static void test_dag(int runs) {
    static dag_case c;
    static const int tcounts[] = {2, 3, 8};
    const bdrt_task_fn fns[1] = {dag_block};
    for (int variant = 0; variant < 3; variant++) {
        memset(&c, 0, sizeof c);
        dag_build(&c, 7 + (uint64_t)variant);
        /* variant 2 without homes (every task's home thread 0: the others take them) */
        bdrt_dag dag = {DAG_TASKS, fns, c.task_fn, c.task_block, c.n_preds, c.succ_start, c.succ,
                        0, NULL, NULL, c.touch_start, c.succ, 0, 0, variant == 2 ? NULL : c.task_blocks};
        for (size_t i = 0; i < sizeof tcounts / sizeof tcounts[0]; i++) {
            c.threads = tcounts[i];
            bdrt_pool *p = bdrt_pool_create(tcounts[i]);
            bdrt_dag_exec *x = p ? bdrt_dag_exec_create(&dag) : NULL;
            expect(p && x, "create a pool and a DAG executor");
            if (!p || !x) {
                bdrt_dag_exec_destroy(x);
                bdrt_pool_destroy(p);
                continue;
            }
            for (int r = 1; r <= runs; r++) {
                c.run = r;
                bdrt_dag_run(x, p, &c, NULL);
            }
            bool once = true;
            for (int32_t t = 0; t < DAG_TASKS; t++)
                once &= c.task_fn[t] < 0 ? atomic_load(&c.times[t]) == 0
                                         : atomic_load(&c.times[t]) == runs;
            char what[128];
            snprintf(what, sizeof what, "DAG %d: each block once a run, after what it waits for "
                     "(%d threads)", variant, tcounts[i]);
            expect(once && !atomic_load(&c.bad), what);
            memset((void *)c.times, 0, sizeof c.times);
            bdrt_dag_exec_destroy(x);
            bdrt_pool_destroy(p);
        }
    }
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick"); /* for slow sanitizer builds */
    int runs = quick ? 400 : 3000;
    test_alloc();
    int ncpu = bdrt_cpu_count();
    expect(ncpu >= 1, "bdrt_cpu_count is positive");
    bdrt_pool *d = bdrt_pool_create(0);
    expect(d && bdrt_pool_threads(d) == ncpu, "threads <= 0 means every CPU in the mask");
    bdrt_pool_destroy(d);
    static const int tcounts[] = {1, 2, 3, 8};
    for (int spin = 0; spin < 2; spin++) {
        if (spin) setenv("BDRT_SPIN_US", "0", 1); /* every wait sleeps on the futex */
        for (size_t i = 0; i < sizeof tcounts / sizeof tcounts[0]; i++)
            stress(tcounts[i], tcounts[i] > ncpu ? runs / 4 : runs);
    }
    unsetenv("BDRT_SPIN_US");
    test_nested();
    test_help();
    test_dag(quick ? 100 : 1000);
    test_outside_threads();
    test_denormals();
    if (!quick) {
        overhead(1, 1000, 20000); /* the blocks themselves, inline */
        overhead(2, 1000, 20000);
        overhead(2, 2, 100000); /* the synchronisation alone */
        overhead(2, 1, 200000); /* inline */
        if (ncpu > 2) overhead(ncpu, 1000, 20000);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
