/* bench_kernels.c — single-threaded GFLOP/s of the kernels/ GEMM and convolution tiles, next to
 * the machine's measured FMA peak.
 *
 * The peak is measured, not looked up: a loop of independent FMAs on ymm (AVX2) and zmm
 * (AVX-512) registers gives flops per second at the clock the core actually runs. Each
 * benchmark repeats its call in batches and reports the best batch. Times are the thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID), so that other processes sharing the core do not count; they
 * still pollute the shared caches, which only ever makes a batch slower.
 *
 * Usage: bdckernels_bench [--isa portable|avx2|avx512|all] [--quick] [--only TEXT] [--cold]
 *   default: every vector instruction set this CPU supports; --only: just the convolution layers
 *   whose name contains TEXT (no GEMMs); --cold: each convolution layer also timed whole with the
 *   caches emptied before every call (the median), as a model run meets it.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bd_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BENCH_X86 1
#else
#define BENCH_X86 0
#endif

static int g_quick, g_cold;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static float *frandom(int64_t n) {
    float *p = xmalloc((size_t)n * sizeof(float));
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    }
    return p;
}

/* ---- peak ----------------------------------------------------------------------------------- */

#if BENCH_X86
#define FMA12(F, b, c)                                                                             \
    a0 = F(a0, b, c);                                                                              \
    a1 = F(a1, b, c);                                                                              \
    a2 = F(a2, b, c);                                                                              \
    a3 = F(a3, b, c);                                                                              \
    a4 = F(a4, b, c);                                                                              \
    a5 = F(a5, b, c);                                                                              \
    a6 = F(a6, b, c);                                                                              \
    a7 = F(a7, b, c);                                                                              \
    a8 = F(a8, b, c);                                                                              \
    a9 = F(a9, b, c);                                                                              \
    a10 = F(a10, b, c);                                                                            \
    a11 = F(a11, b, c);

__attribute__((target("avx2,fma"))) static double peak_avx2(long iters) {
    __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2),
           a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
           a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8),
           a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
    double t = now();
    for (long i = 0; i < iters; i++) {
        FMA12(_mm256_fmadd_ps, b, c)
        __asm__ volatile("" : "+x"(b));
    }
    t = now() - t;
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float f[8];
    _mm256_storeu_ps(f, s);
    if (f[0] == 1.5f) printf(" ");
    return (double)iters * 12 * 16 / t * 1e-9;
}

__attribute__((target("avx512f"))) static double peak_avx512(long iters) {
    __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2),
           a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),
           a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8),
           a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
    double t = now();
    for (long i = 0; i < iters; i++) {
        FMA12(_mm512_fmadd_ps, b, c)
        __asm__ volatile("" : "+v"(b));
    }
    t = now() - t;
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    float f[16];
    _mm512_storeu_ps(f, s);
    if (f[0] == 1.5f) printf(" ");
    return (double)iters * 12 * 32 / t * 1e-9;
}

/* vpdpbusd: 64 8-bit multiply-adds (16 lanes of 4) per instruction */
__attribute__((target("avx512f,avx512vnni"))) static double peak_vnni(long iters) {
    __m512i b = _mm512_set1_epi32(0x01010101), c = _mm512_set1_epi32(0x02020202);
    __m512i a0 = _mm512_set1_epi32(0), a1 = _mm512_set1_epi32(1), a2 = _mm512_set1_epi32(2),
            a3 = _mm512_set1_epi32(3), a4 = _mm512_set1_epi32(4), a5 = _mm512_set1_epi32(5),
            a6 = _mm512_set1_epi32(6), a7 = _mm512_set1_epi32(7), a8 = _mm512_set1_epi32(8),
            a9 = _mm512_set1_epi32(9), a10 = _mm512_set1_epi32(10), a11 = _mm512_set1_epi32(11);
    double t = now();
    for (long i = 0; i < iters; i++) {
        FMA12(_mm512_dpbusd_epi32, b, c)
        __asm__ volatile("" : "+v"(b));
    }
    t = now() - t;
    __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                                 _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));
    s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
    int32_t f[16];
    _mm512_storeu_si512(f, s);
    if (f[0] == 15) printf(" ");
    return (double)iters * 12 * 64 * 2 / t * 1e-9;
}
#endif

/* ---- timing --------------------------------------------------------------------------------- */

typedef void (*bench_fn)(void *arg);

/* Seconds per call: the best of several batches of about `batch_s` seconds each. */
static double time_call(bench_fn fn, void *arg) {
    const double batch_s = g_quick ? 0.02 : 0.05;
    const int batches = g_quick ? 5 : 15;
    fn(arg); /* warm-up */
    double t0 = now();
    fn(arg);
    double one = now() - t0;
    long reps = one > 0 ? (long)(batch_s / one) : 1000;
    if (reps < 1) reps = 1;
    double best = 1e30;
    for (int b = 0; b < batches; b++) {
        t0 = now();
        for (long r = 0; r < reps; r++)
            fn(arg);
        double per = (now() - t0) / (double)reps;
        if (per < best) best = per;
    }
    return best;
}

/* Seconds per call with the caches emptied before each (--cold): what a layer costs inside a
 * model run, whose other layers have pushed its input and weights out to memory. The median of
 * 31 calls, each after writing a 64 MiB buffer (beyond any L3 here). */
static double time_cold(bench_fn fn, void *arg) {
    enum { RUNS = 31, EVICT = 64 << 20 };
    static unsigned char *evict;
    if (!evict) evict = xmalloc(EVICT);
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        for (size_t i = 0; i < EVICT; i += 64)
            evict[i] = (unsigned char)(evict[i] + 1);
        double t0 = now();
        fn(arg);
        t[r] = now() - t0;
    }
    for (int a = 1; a < RUNS; a++) /* insertion sort */
        for (int b = a; b > 0 && t[b] < t[b - 1]; b--) {
            double x = t[b];
            t[b] = t[b - 1];
            t[b - 1] = x;
        }
    return t[RUNS / 2];
}

/* ---- GEMM ----------------------------------------------------------------------------------- */

typedef struct gemm_arg {
    int64_t M, N, K;
    float *A, *B, *C, *Bp, *bias;
    void *scratch;
} gemm_arg;

static void run_gemm(void *v) {
    gemm_arg *g = v;
    bd_f32_gemm(g->M, g->N, g->K, g->A, g->K, 0, g->B, g->N, 0, g->C, g->N, NULL, NULL, 0, 0, 0.0f,
                0.0f, g->scratch);
}

static void run_gemm_packed_b(void *v) {
    gemm_arg *g = v;
    bd_f32_gemm_packed_b(g->M, 0, g->N, g->K, g->A, g->K, 0, g->Bp, g->C, g->N, g->bias, NULL, 0,
                         BD_ACT_RELU, 0.0f, 0.0f, g->scratch);
}

static void run_gemm_bf16(void *v) {
    gemm_arg *g = v;
    bd_bf16_gemm_packed_b(g->M, 0, g->N, g->K, g->A, g->K, 0, g->Bp, g->C, g->N, g->bias, NULL, 0,
                          BD_ACT_RELU, 0.0f, 0.0f, g->scratch);
}

/* bf16: also the same product with --precision bf16's kernel (bd_bf16_gemm_packed_b), against
 * the fp32 FMA peak (VDPBF16PS doubles it where the CPU has AVX512_BF16). */
static void bench_gemm(int64_t M, int64_t N, int64_t K, double peak, int bf16) {
    gemm_arg g = {M, N, K, frandom(M * K), frandom(K * N), frandom(M * N), NULL, frandom(N), NULL};
    g.scratch = xmalloc(bd_f32_gemm_scratch_bytes(M, N, K));
    g.Bp = xmalloc(bd_f32_gemm_packed_b_bytes(K, N));
    bd_f32_gemm_pack_b(K, N, g.B, N, 0, g.Bp);
    double flops = 2.0 * (double)M * (double)N * (double)K;
    double t1 = time_call(run_gemm, &g), t2 = time_call(run_gemm_packed_b, &g);
    printf("  sgemm %5lldx%5lldx%5lld        %7.1f GFLOP/s %5.1f%%   packed B+bias+relu %7.1f "
           "GFLOP/s %5.1f%%\n",
           (long long)M, (long long)N, (long long)K, flops / t1 * 1e-9,
           100 * flops / t1 * 1e-9 / peak, flops / t2 * 1e-9, 100 * flops / t2 * 1e-9 / peak);
    if (bf16) {
        free(g.Bp);
        free(g.scratch);
        g.Bp = xmalloc(bd_bf16_gemm_packed_b_bytes(K, N));
        bd_bf16_gemm_pack_b(K, N, g.B, N, 0, g.Bp);
        g.scratch = xmalloc(bd_bf16_gemm_scratch_bytes(M, K));
        double t3 = time_call(run_gemm_bf16, &g);
        printf("    bf16 (%s)%*s packed B+bias+relu %7.1f GFLOP/s %5.1f%% of the fp32 peak, %.2fx "
               "the fp32 packed B\n",
               bd_kernels_cpu_has_bf16() ? "vdpbf16ps" : "plain C",
               bd_kernels_cpu_has_bf16() ? 18 : 20, "", flops / t3 * 1e-9,
               100 * flops / t3 * 1e-9 / peak, t2 / t3);
    }
    free(g.A);
    free(g.B);
    free(g.C);
    free(g.Bp);
    free(g.bias);
    free(g.scratch);
}

/* ---- 8-bit GEMM ----------------------------------------------------------------------------- */

typedef struct i8_arg {
    int64_t M, N, K;
    uint8_t *A;
    int32_t *C;
    void *Bp, *scratch;
} i8_arg;

static void run_i8_gemm(void *v) {
    i8_arg *g = v;
    bd_i8_gemm_packed_b(g->M, 0, g->N, g->K, g->A, g->K, 0, 3, g->Bp, g->C, g->N, g->scratch);
}

/* The i-th of an int8 weight tensor as a model's are: most small, one in 32 anywhere in int8
 * (ResNet-18's per-channel int8 weights need about as many of the AVX2 kernels' corrections). */
static int8_t model_weight(int64_t i) {
    uint32_t h = (uint32_t)i * 2246822519u;
    h ^= h >> 15;
    return (int8_t)(h % 32 == 0 ? (int)(h >> 24) - 128 : (int)((h >> 8) % 41) - 20);
}

/* GOP/s counts a multiply and an add per product, like GFLOP/s; peak: the vpdpbusd loop's */
static void bench_i8_gemm(int64_t M, int64_t N, int64_t K, double peak) {
    i8_arg g = {M, N, K, xmalloc((size_t)(M * K)), xmalloc((size_t)(M * N) * 4), NULL, NULL};
    int8_t *B = xmalloc((size_t)(K * N));
    for (int64_t i = 0; i < M * K; i++)
        g.A[i] = (uint8_t)(i * 37 % 251);
    for (int64_t i = 0; i < K * N; i++) /* as a model's weights are (bench_i8_conv) */
        B[i] = model_weight(i);
    g.Bp = xmalloc(bd_i8_gemm_packed_b_bytes(K, N));
    bd_i8_gemm_pack_b(K, N, B, N, 1, 0, g.Bp);
    g.scratch = xmalloc(bd_i8_gemm_scratch_bytes(K));
    double ops = 2.0 * (double)M * (double)N * (double)K, t = time_call(run_i8_gemm, &g);
    printf("  i8 gemm %5lldx%5lldx%5lld      %7.1f GOP/s", (long long)M, (long long)N, (long long)K,
           ops / t * 1e-9);
    if (peak > 0) printf(" %5.1f%% of the VNNI peak", 100 * ops / t * 1e-9 / peak);
    printf("\n");
    free(g.A);
    free(g.C);
    free(B);
    free(g.Bp);
    free(g.scratch);
}

/* ---- convolution ---------------------------------------------------------------------------- */

typedef struct conv_layer {
    const char *name;
    int64_t C, H, M, K, stride, pad, group;
} conv_layer;

typedef struct conv_arg {
    bd_conv2d_shape s;
    float *x, *wp, *bias, *y;
    void *scratch;
    int64_t oc_tile, oh_tile;
} conv_arg;

static void run_conv(void *v) {
    conv_arg *c = v;
    for (int64_t oc = 0; oc < c->s.M; oc += c->oc_tile)
        for (int64_t oh = 0; oh < c->s.OH; oh += c->oh_tile) {
            int64_t oc1 = oc + c->oc_tile < c->s.M ? oc + c->oc_tile : c->s.M;
            int64_t oh1 = oh + c->oh_tile < c->s.OH ? oh + c->oh_tile : c->s.OH;
            bd_f32_conv2d_tile(&c->s, c->x, c->wp, c->bias, c->y, 0, oc, oc1, oh, oh1, BD_ACT_RELU,
                               0.0f, 0.0f, c->scratch);
        }
}

/* One layer, whole (one tile) and cut into tiles of about 64 channels x 8 rows; winograd: the
 * output tile m of a Winograd variant (0: direct or im2col). GFLOP/s count the direct
 * convolution's flops, so a Winograd row's figure can exceed the peak. Returns the whole
 * layer's time in ms. */
static double bench_conv(const conv_layer *l, int winograd, double peak) {
    conv_arg c;
    memset(&c, 0, sizeof c);
    bd_conv2d_shape *s = &c.s;
    s->winograd = winograd;
    s->N = 1;
    s->C = l->C;
    s->H = s->W = l->H;
    s->M = l->M;
    s->KH = s->KW = l->K;
    s->group = l->group;
    s->stride_h = s->stride_w = l->stride;
    s->dil_h = s->dil_w = 1;
    s->pad_top = s->pad_left = l->pad;
    s->OH = s->OW = (l->H + 2 * l->pad - l->K) / l->stride + 1;
    c.x = frandom(s->C * s->H * s->W);
    float *w = frandom(s->M * (s->C / s->group) * s->KH * s->KW);
    c.wp = xmalloc(bd_f32_conv2d_packed_w_bytes(s));
    bd_f32_conv2d_pack_w(s, w, c.wp);
    c.bias = frandom(s->M);
    c.y = xmalloc((size_t)(s->M * s->OH * s->OW) * sizeof(float));
    c.scratch = xmalloc(bd_f32_conv2d_scratch_bytes(s, s->OH));
    double flops = 2.0 * (double)(s->M * s->OH * s->OW) * (double)(s->C / s->group * s->KH * s->KW);
    c.oc_tile = s->M;
    c.oh_tile = s->OH;
    double t1 = time_call(run_conv, &c);
    c.oc_tile = s->group == s->C ? 16 : winograd ? 60 : 64; /* Winograd: whole 12-row panels */
    c.oh_tile = 8;
    double t2 = time_call(run_conv, &c);
    char name[80];
    snprintf(name, sizeof name, "%s%s", l->name,
             winograd == 2 ? " F(2x2,3x3)" : winograd == 4 ? " F(4x4,3x3)" : "");
    printf("  %-34s %7.1f GFLOP/s %5.1f%%   tiles %lldx%lld %7.1f GFLOP/s %5.1f%%  (%.3f ms",
           name, flops / t1 * 1e-9, 100 * flops / t1 * 1e-9 / peak, (long long)c.oc_tile,
           (long long)c.oh_tile, flops / t2 * 1e-9, 100 * flops / t2 * 1e-9 / peak, t1 * 1e3);
    if (g_cold) {
        c.oc_tile = s->M;
        c.oh_tile = s->OH;
        printf(", cold %.3f ms", time_cold(run_conv, &c) * 1e3);
    }
    printf(")\n");
    free(c.x);
    free(w);
    free(c.wp);
    free(c.bias);
    free(c.y);
    free(c.scratch);
    return t1 * 1e3;
}

typedef struct i8_conv_arg {
    bd_conv2d_shape s;
    uint8_t *x;
    void *wp;
    float *bias, *y;
    void *scratch;
    int64_t oc_tile, oh_tile;
    const bd_i8_requant *rq; /* a QuantizeLinear absorbed: 8-bit y */
} i8_conv_arg;

static void run_i8_conv(void *v) {
    i8_conv_arg *c = v;
    for (int64_t oc = 0; oc < c->s.M; oc += c->oc_tile)
        for (int64_t oh = 0; oh < c->s.OH; oh += c->oh_tile) {
            int64_t oc1 = oc + c->oc_tile < c->s.M ? oc + c->oc_tile : c->s.M;
            int64_t oh1 = oh + c->oh_tile < c->s.OH ? oh + c->oh_tile : c->s.OH;
            if (c->rq)
                bd_i8_conv2d_tile_requant(&c->s, c->x, 0, 131, c->wp, c->bias, c->rq, c->y, 0, oc,
                                          oc1, oh, oh1, c->scratch);
            else
                bd_i8_conv2d_tile(&c->s, c->x, 0, 131, c->wp, c->bias, c->y, 0, oc, oc1, oh, oh1,
                                  c->scratch);
        }
}

/* The layer's time as one tile (whole) and in tiles of 64 channels x 8 rows. */
static void time_i8_tiles(i8_conv_arg *c, double *whole, double *tiles) {
    c->oc_tile = c->s.M;
    c->oh_tile = c->s.OH;
    *whole = time_call(run_i8_conv, c);
    c->oc_tile = 64;
    c->oh_tile = 8;
    *tiles = time_call(run_i8_conv, c);
}

/* The same layer as a QDQ Conv on the int8 convolution (uint8 X with a zero point, int8 W per
 * channel, float result), tiled alike; GOP/s and its time against the float row's (f32_ms). */
static void bench_i8_conv(const conv_layer *l, double f32_ms) {
    i8_conv_arg c;
    memset(&c, 0, sizeof c);
    bd_conv2d_shape *s = &c.s;
    s->N = 1, s->C = l->C, s->H = s->W = l->H, s->M = l->M, s->KH = s->KW = l->K, s->group = 1;
    s->stride_h = s->stride_w = l->stride, s->dil_h = s->dil_w = 1;
    s->pad_top = s->pad_left = l->pad;
    s->OH = s->OW = (l->H + 2 * l->pad - l->K) / l->stride + 1;
    int64_t K = s->C * s->KH * s->KW;
    c.x = xmalloc((size_t)(s->C * s->H * s->W));
    uint8_t *w = xmalloc((size_t)(s->M * K));
    for (int64_t i = 0; i < s->C * s->H * s->W; i++) c.x[i] = (uint8_t)(i * 2654435761u >> 24);
    for (int64_t i = 0; i < s->M * K; i++) w[i] = (uint8_t)model_weight(i);
    float x_scale = 0.02f, *w_scale = frandom(s->M);
    c.wp = xmalloc(bd_i8_conv2d_packed_w_bytes(s));
    bd_i8_conv2d_pack_w(s, w, 1, 0, &x_scale, w_scale, s->M, 0, c.wp);
    c.bias = frandom(s->M);
    c.y = xmalloc((size_t)(s->M * s->OH * s->OW) * sizeof(float));
    c.scratch = xmalloc(bd_i8_conv2d_scratch_bytes(s, s->OH));
    double ops = 2.0 * (double)(s->M * s->OH * s->OW) * (double)K;
    double t1, t2, t3, t4;
    time_i8_tiles(&c, &t1, &t2);
    printf("  %-34s %7.1f GOP/s           tiles 64x8 %7.1f GOP/s         (%.3f ms, %.2fx the "
           "float time)\n", "  int8 (QDQ)", ops / t1 * 1e-9, ops / t2 * 1e-9, t1 * 1e3, t1 * 1e3 / f32_ms);
    /* requantized to uint8 by the tile, as a QDQ model's Conv before a QuantizeLinear runs */
    if (bd_i8_conv2d_direct_ok(s, w, 1, 0)) {
        bd_i8_requant rq = {0.0f, INFINITY, 0.05f, 3.0f, 0};
        bd_i8_conv2d_pack_w(s, w, 1, 0, &x_scale, w_scale, s->M, 1, c.wp);
        c.rq = &rq;
        time_i8_tiles(&c, &t3, &t4);
        c.rq = NULL;
        printf("  %-34s %7.1f GOP/s           tiles 64x8 %7.1f GOP/s         (%.3f ms)\n",
               "  int8 requantized", ops / t3 * 1e-9, ops / t4 * 1e-9, t3 * 1e3);
    }
    free(c.x);
    free(w);
    free(w_scale);
    free(c.wp);
    free(c.bias);
    free(c.y);
    free(c.scratch);
}

int main(int argc, char **argv) {
    const char *isa_arg = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            isa_arg = argv[++i];
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--cold") == 0) {
            g_cold = 1;
        } else {
            fprintf(stderr, "usage: %s [--isa portable|avx2|avx512|all] [--quick] [--only TEXT] [--cold]\n",
                    argv[0]);
            return 2;
        }
    }
    double peak2 = 0, peak5 = 0, peak_i8 = 0;
#if BENCH_X86
    if (bd_kernels_isa_supported(BD_KERNELS_ISA_AVX2)) {
        for (int i = 0; i < 10; i++) {
            double p = peak_avx2(20000000);
            if (p > peak2) peak2 = p;
        }
        printf(
            "measured FMA peak, one core: AVX2 %.1f GFLOP/s (= 2 FMA x 8 floats x 2 flops x %.2f "
            "GHz)\n",
            peak2, peak2 / 32);
    }
    if (bd_kernels_isa_supported(BD_KERNELS_ISA_AVX512)) {
        for (int i = 0; i < 10; i++) {
            double p = peak_avx512(20000000);
            if (p > peak5) peak5 = p;
        }
        printf(
            "                             AVX-512 %.1f GFLOP/s (%.1f flops/cycle at that clock)\n",
            peak5, peak5 / (peak2 / 32));
    }
    if (bd_kernels_isa_supported(BD_KERNELS_ISA_AVX512) && __builtin_cpu_supports("avx512vnni")) {
        for (int i = 0; i < 10; i++) {
            double p = peak_vnni(20000000);
            if (p > peak_i8) peak_i8 = p;
        }
        printf("                             VNNI %.1f GOP/s (8-bit multiply-adds x 2)\n", peak_i8);
    }
#endif
    static const conv_layer layers[] = {
        {"resnet conv1 3->64 7x7/2 224", 3, 224, 64, 7, 2, 3, 1},
        {"vit patches 3->256 16x16/16 224", 3, 224, 256, 16, 16, 0, 1},
        {"squeezenet conv1 3->64 3x3/2 224", 3, 224, 64, 3, 2, 0, 1},
        {"mobilenet stem 3->32 3x3/2 224", 3, 224, 32, 3, 2, 1, 1},
        {"unet conv1 3->16 3x3 128", 3, 128, 16, 3, 1, 1, 1},
        {"3x3 64->64 56x56", 64, 56, 64, 3, 1, 1, 1},
        {"3x3/2 64->128 56->28", 64, 56, 128, 3, 2, 1, 1},
        {"3x3 128->128 28x28", 128, 28, 128, 3, 1, 1, 1},
        {"3x3 256->256 14x14", 256, 14, 256, 3, 1, 1, 1},
        {"3x3 512->512 7x7", 512, 7, 512, 3, 1, 1, 1},
        {"3x3 16->64 55x55 (SqueezeNet)", 16, 55, 64, 3, 1, 1, 1},
        {"3x3 32->128 27x27 (SqueezeNet)", 32, 27, 128, 3, 1, 1, 1},
        {"3x3 64->256 13x13 (SqueezeNet)", 64, 13, 256, 3, 1, 1, 1},
        {"1x1 128->16 55x55 (SqueezeNet)", 128, 55, 16, 1, 1, 0, 1},
        {"1x1 512->1000 13x13 (SqueezeNet)", 512, 13, 1000, 1, 1, 0, 1},
        {"1x1/2 64->128 56->28 (downsample)", 64, 56, 128, 1, 2, 0, 1},
        {"1x1/2 256->512 14->7 (downsample)", 256, 14, 512, 1, 2, 0, 1},
        {"1x1/2 256->512 56->28 (ResNet-50)", 256, 56, 512, 1, 2, 0, 1},
        {"1x1/2 512->1024 28->14 (ResNet-50)", 512, 28, 1024, 1, 2, 0, 1},
        {"1x1/2 1024->2048 14->7 (ResNet-50)", 1024, 14, 2048, 1, 2, 0, 1},
        {"1x1 64->256 56x56", 64, 56, 256, 1, 1, 0, 1},
        {"1x1 256->64 56x56", 256, 56, 64, 1, 1, 0, 1},
        {"1x1 512->512 7x7", 512, 7, 512, 1, 1, 0, 1},
        {"1x1 32->16 112x112 (MobileNetV2)", 32, 112, 16, 1, 1, 0, 1},
        {"1x1 16->96 112x112 (MobileNetV2)", 16, 112, 96, 1, 1, 0, 1},
        {"1x1 16->16 112x112 (MobileNetV3)", 16, 112, 16, 1, 1, 0, 1},
        {"1x1 144->24 56x56 (MobileNetV2)", 144, 56, 24, 1, 1, 0, 1},
        {"1x1 320->1280 7x7 (MobileNetV2)", 320, 7, 1280, 1, 1, 0, 1},
        {"1x1 960->160 7x7 (MobileNetV2)", 960, 7, 160, 1, 1, 0, 1},
        {"1x1 576->96 14x14 (MobileNetV2)", 576, 14, 96, 1, 1, 0, 1},
        {"1x1 160->960 7x7 (MobileNetV2)", 160, 7, 960, 1, 1, 0, 1},
        {"1x1 96->576 14x14 (MobileNetV2)", 96, 14, 576, 1, 1, 0, 1},
        {"1x1 64->384 14x14 (MobileNetV2)", 64, 14, 384, 1, 1, 0, 1},
        {"1x1 80->480 14x14 (EfficientNet)", 80, 14, 480, 1, 1, 0, 1},
        {"1x1 192->1152 7x7 (EfficientNet)", 192, 7, 1152, 1, 1, 0, 1},
        {"1x1 112->672 14x14 (EfficientNet)", 112, 14, 672, 1, 1, 0, 1},
        {"1x1 512->2048 7x7 (ResNet-50)", 512, 7, 2048, 1, 1, 0, 1},
        {"1x1 256->128 56x56 (ResNet-50)", 256, 56, 128, 1, 1, 0, 1},
        {"1x1 128->512 28x28 (ResNet-50)", 128, 28, 512, 1, 1, 0, 1},
        {"1x1 512->128 28x28 (ResNet-50)", 512, 28, 128, 1, 1, 0, 1},
        {"1x1 512->256 28x28 (ResNet-50)", 512, 28, 256, 1, 1, 0, 1},
        {"1x1 256->1024 14x14 (ResNet-50)", 256, 14, 1024, 1, 1, 0, 1},
        {"1x1 1024->256 14x14 (ResNet-50)", 1024, 14, 256, 1, 1, 0, 1},
        {"1x1 1024->512 14x14 (ResNet-50)", 1024, 14, 512, 1, 1, 0, 1},
        {"1x1 2048->512 7x7 (ResNet-50)", 2048, 7, 512, 1, 1, 0, 1},
        {"depthwise 3x3 32 112x112", 32, 112, 32, 3, 1, 1, 32},
        {"depthwise 3x3/2 144 56->28", 144, 56, 144, 3, 2, 1, 144},
        {"depthwise 5x5 240 28x28", 240, 28, 240, 5, 1, 2, 240},
        {"depthwise 3x3/2 64 112->56", 64, 112, 64, 3, 2, 1, 64},
        {"depthwise 5x5/2 72 56->28", 72, 56, 72, 5, 2, 2, 72},
        {"depthwise 3x3 480 14x14", 480, 14, 480, 3, 1, 1, 480},
        {"depthwise 5x5 960 7x7", 960, 7, 960, 5, 1, 2, 960},
        {"group8 3x3/2 48 112->56 (RegNetY)", 48, 112, 48, 3, 2, 1, 6},
        {"group8 3x3 104 28x28 (RegNetY)", 104, 28, 104, 3, 1, 1, 13},
        {"group8 3x3 208 14x14 (RegNetY)", 208, 14, 208, 3, 1, 1, 26},
    };
    bd_kernels_isa isas[3];
    int nisa = 0;
    for (int i = BD_KERNELS_ISA_PORTABLE; i <= BD_KERNELS_ISA_AVX512; i++) {
        const char *name = bd_kernels_isa_name((bd_kernels_isa)i);
        int want = isa_arg ? (strcmp(isa_arg, "all") == 0 || strcmp(isa_arg, name) == 0)
                           : i != BD_KERNELS_ISA_PORTABLE || !BENCH_X86;
        if (want && bd_kernels_isa_supported((bd_kernels_isa)i)) isas[nisa++] = (bd_kernels_isa)i;
    }
    for (int i = 0; i < nisa; i++) {
        bd_kernels_set_isa(isas[i]);
        double peak = isas[i] == BD_KERNELS_ISA_AVX512 ? peak5 : peak2;
        if (peak <= 0) peak = 1;
        printf("\n%s (%s), %% of the %s peak:\n", bd_kernels_isa_name(isas[i]),
               bd_kernels_gemm_name(), isas[i] == BD_KERNELS_ISA_AVX512 ? "AVX-512" : "AVX2");
        static const int64_t sq[] = {256, 512, 1024, 2048};
        for (int k = 0; k < 4 && !only; k++) {
            if (g_quick && sq[k] > 1024) continue;
            bench_gemm(sq[k], sq[k], sq[k], peak, 0);
        }
        if (!only) {
            bench_gemm(64, 3136, 576, peak, 0); /* a conv-shaped GEMM */
            bench_gemm(1, 1000, 512, peak, 0);  /* batch-1 classifier */
            bench_gemm(128, 768, 768, peak, 1); /* transformer projection, 128 tokens */
            bench_gemm(128, 3072, 768, peak, 1); /* BERT-base's FFN up and down, 128 tokens */
            bench_gemm(128, 768, 3072, peak, 1);
            /* the int8 BERT's products (MatMulInteger), then a large square; only the AVX-512
             * tile gets a percentage of the (AVX-512) VNNI peak. The AVX2 tile runs on AVX-VNNI
             * where the CPU has it, else on vpmaddubsw (the split weights); the AVX-512 one on
             * AMX tiles where the CPU has them, then again on VNNI. */
            double i8_peak = isas[i] == BD_KERNELS_ISA_AVX512 ? peak_i8 : 0;
            int avx2 = isas[i] == BD_KERNELS_ISA_AVX2, avx512 = isas[i] == BD_KERNELS_ISA_AVX512;
            for (int off = 0; off < 2; off++) {
                if (off && !(avx2 && bd_kernels_avx_vnni_off(1)) && !(avx512 && bd_kernels_amx_off(1)))
                    break;
                if (avx2)
                    printf("  (8-bit products by %s)\n", off || !bd_kernels_avx_vnni_off(0) ?
                                                          "vpmaddubsw" : "AVX-VNNI vpdpbusd");
                if (avx512)
                    printf("  (8-bit products by %s)\n", off || !bd_kernels_amx_off(0) ?
                                                          "AVX-512 VNNI vpdpbusd" : "AMX tdpbusd where K allows");
                bench_i8_gemm(128, 256, 256, i8_peak);
                bench_i8_gemm(128, 1024, 256, i8_peak);
                bench_i8_gemm(128, 256, 1024, i8_peak);
                bench_i8_gemm(128, 768, 768, i8_peak);
                bench_i8_gemm(128, 3072, 768, i8_peak); /* BERT-base's FFN: B outgrows L2 */
                bench_i8_gemm(128, 768, 3072, i8_peak);
                bench_i8_gemm(1024, 1024, 1024, i8_peak);
            }
            bd_kernels_avx_vnni_off(0);
            bd_kernels_amx_off(0);
        }
        for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
            if (!only || strstr(layers[l].name, only)) {
                const conv_layer *cl = &layers[l];
                double f32_ms = bench_conv(cl, 0, peak);
                if (cl->group == 1) bench_i8_conv(cl, f32_ms);
                for (int m = 2; m <= 4 && cl->K == 3 && cl->stride == 1 && cl->group == 1; m += 2)
                    bench_conv(cl, m, peak);
            }
    }
    return 0;
}
