/* test_kernels.c — randomised correctness tests of kernels/ against naive double-precision
 * references, for every instruction set this CPU supports (portable C always).
 *
 * Covers: bd_f32_gemm over a grid of sizes with every transpose combination, biases,
 * accumulation and activations; pre-packed B computed in column tiles and pre-packed A in row
 * tiles (tile edges on and off the register-tile grid); convolutions (1x1, 3x3 stride 1/2, 5x5,
 * 7x7 stride 2 pad 3, dilation, groups, depthwise, odd and asymmetric shapes) computed as
 * several output-channel x output-row tiles, 1x1 ones with a per-channel prologue too. Every output buffer has guard cells around what a
 * call may write, checked afterwards. Scratch is deliberately misaligned.
 *
 * Prints one line per group and per failing case, then "N passed, M failed"; exit 1 on failure.
 * Usage: bdckernels_test [--quick]
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bd_kernels.h"

static int g_passed, g_failed;
static int g_quick;

/* ---- helpers -------------------------------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
static float frand(void) {
    return (float)((rnd() % 2000001u) / 1000000.0 - 1.0);
}
/* Each test_*_all starts the generator afresh (per instruction set too), so that its data does
 * not change when another test gains or loses cases: the error bounds are measured on it. */
static void reseed(uint64_t salt) {
    g_rng = 0x9e3779b97f4a7c15ull ^ (salt * 0x2545f4914f6cdd1dull);
    if (!g_rng) g_rng = 1;
}
static int64_t irand(int64_t n) {
    return n <= 0 ? 0 : (int64_t)(rnd() % (uint64_t)n);
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
    for (int64_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

/* Scratch returned 1..63 bytes past a 64-byte boundary, to catch alignment assumptions. */
typedef struct scratch {
    void *base;
    void *p;
} scratch;
static scratch scratch_new(size_t bytes) {
    scratch s;
    size_t off = 1 + (size_t)irand(62);
    s.base = xmalloc(bytes + 64 + off);
    uintptr_t u = ((uintptr_t)s.base + 63) & ~(uintptr_t)63;
    s.p = (char *)u + off;
    return s;
}

/* Whether convolution weights were packed in bfloat16: the header's kind (after its magic) is
 * 11 or 12, the 16-lane kernel's and the pointwise GEMM's bfloat16 pairs. */
static int packed_in_bf16(const float *wp) {
    int32_t kind;
    memcpy(&kind, (const char *)wp + 4, sizeof kind);
    return kind == 11 || kind == 12;
}

/* Round to nearest even at bit 16 (bfloat16), NaN kept: the reference's own rounding. */
static double bf16_ref(float f) {
    if (f != f) return f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t lo = u & 0xFFFFu, r = u & 0xFFFF0000u;
    if (lo > 0x8000u || (lo == 0x8000u && (u >> 16 & 1u))) r += 0x10000u;
    float g;
    memcpy(&g, &r, sizeof g);
    return g;
}

static double act_ref(double v, int act, float lo, float hi) {
    if (act == BD_ACT_RELU) return v < 0 ? 0 : v;
    if (act == BD_ACT_CLIP) return v < lo ? lo : (v > hi ? hi : v);
    if (act == BD_ACT_SILU) return v / (1.0 + exp(-v));
    if (act == BD_ACT_HARD_SWISH) return v * fmin(1.0, fmax(0.0, v / 6.0 + 0.5));
    if (act == BD_ACT_GELU) return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    return v;
}

static const float GUARD = -12345.5f;

/* Compares got with ref where mask says a value was expected; elsewhere got must be GUARD.
 * mag: per element magnitude for the relative tolerance. */
/* The relative tolerance of compare(), and the largest error it saw, relative to the same
 * magnitude (the Winograd tests loosen the first and report the second). */
static double g_rel_tol = 1e-4, g_rel_err_max = 0;

static int compare(const char *what, const float *got, const double *ref, const double *mag,
                   const unsigned char *mask, int64_t n) {
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        int ok;
        if (mask[i]) {
            double err = fabs((double)got[i] - ref[i]) / (mag[i] + 1e-3);
            if (err > g_rel_err_max || err != err) g_rel_err_max = err != err ? INFINITY : err;
            ok = err <= g_rel_tol;
        } else {
            ok = got[i] == GUARD;
        }
        if (!ok) {
            if (first < 0) first = i;
            bad++;
        }
    }
    if (bad) {
        g_failed++;
        printf("FAIL %s: %lld wrong, first at %lld: got %.7g expected %s%.7g\n", what,
               (long long)bad, (long long)first, (double)got[first],
               mask[first] ? "" : "untouched ", mask[first] ? ref[first] : (double)GUARD);
        return 0;
    }
    g_passed++;
    return 1;
}

/* ---- GEMM ----------------------------------------------------------------------------------- */

typedef struct gemm_case {
    int64_t M, N, K;
    int transA, transB, bias_n, bias_m, accumulate, act;
} gemm_case;

typedef struct gemm_data {
    gemm_case c;
    int64_t lda, ldb, ldc;
    float *A, *B, *C0, *bn, *bm;
    double *ref, *mag;
} gemm_data;

static gemm_data gemm_data_new(gemm_case c) {
    gemm_data d;
    d.c = c;
    int64_t arows = c.transA ? c.K : c.M, acols = c.transA ? c.M : c.K;
    int64_t brows = c.transB ? c.N : c.K, bcols = c.transB ? c.K : c.N;
    d.lda = acols + irand(3);
    d.ldb = bcols + irand(3);
    d.ldc = c.N + 1 + irand(3);
    d.A = frandom(arows * d.lda + 1);
    d.B = frandom(brows * d.ldb + 1);
    d.C0 = frandom((c.M + 2) * d.ldc);
    d.bn = frandom(c.N + 1);
    d.bm = frandom(c.M + 1);
    d.ref = xmalloc((size_t)((c.M + 2) * d.ldc) * sizeof(double));
    d.mag = xmalloc((size_t)((c.M + 2) * d.ldc) * sizeof(double));
    for (int64_t i = 0; i < c.M; i++)
        for (int64_t j = 0; j < c.N; j++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < c.K; k++) {
                double a = c.transA ? d.A[k * d.lda + i] : d.A[i * d.lda + k];
                double b = c.transB ? d.B[j * d.ldb + k] : d.B[k * d.ldb + j];
                s += a * b;
                m += fabs(a * b);
            }
            int64_t o = (i + 1) * d.ldc + j; /* row 0 of the buffer is a guard row */
            if (c.accumulate) s += d.C0[o], m += fabs(d.C0[o]);
            if (c.bias_n) s += d.bn[j], m += fabs(d.bn[j]);
            if (c.bias_m) s += d.bm[i], m += fabs(d.bm[i]);
            d.ref[o] = act_ref(s, c.act, -0.5f, 0.75f);
            d.mag[o] = m;
        }
    return d;
}

static void gemm_data_free(gemm_data *d) {
    free(d->A);
    free(d->B);
    free(d->C0);
    free(d->bn);
    free(d->bm);
    free(d->ref);
    free(d->mag);
}

/* The output buffer: guard row, M rows of ldc (N used), guard row. Cells in [m0,m1)x[n0,n1)
 * get C0 (for accumulation), everything else GUARD. */
static float *gemm_out(const gemm_data *d, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                       unsigned char **mask) {
    int64_t total = (d->c.M + 2) * d->ldc;
    float *C = xmalloc((size_t)total * sizeof(float));
    *mask = xmalloc((size_t)total);
    for (int64_t t = 0; t < total; t++) {
        int64_t i = t / d->ldc - 1, j = t % d->ldc;
        int in = i >= m0 && i < m1 && j >= n0 && j < n1;
        C[t] = in ? d->C0[t] : GUARD;
        (*mask)[t] = (unsigned char)in;
    }
    return C;
}

static void case_name(char *buf, size_t n, const char *kind, const gemm_case *c) {
    snprintf(buf, n, "%s %s M=%lld N=%lld K=%lld tA=%d tB=%d bn=%d bm=%d acc=%d act=%d", kind,
             bd_kernels_isa_name(bd_kernels_get_isa()), (long long)c->M, (long long)c->N,
             (long long)c->K, c->transA, c->transB, c->bias_n, c->bias_m, c->accumulate, c->act);
}

static void test_gemm_plain(const gemm_data *d) {
    const gemm_case *c = &d->c;
    unsigned char *mask;
    float *C = gemm_out(d, 0, c->M, 0, c->N, &mask);
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(c->M, c->N, c->K));
    bd_f32_gemm(c->M, c->N, c->K, d->A, d->lda, c->transA, d->B, d->ldb, c->transB, C + d->ldc,
                d->ldc, c->bias_n ? d->bn : NULL, c->bias_m ? d->bm : NULL, c->accumulate, c->act,
                -0.5f, 0.75f, s.p);
    char name[200];
    case_name(name, sizeof name, "gemm", c);
    compare(name, C, d->ref, d->mag, mask, (c->M + 2) * d->ldc);
    free(s.base);
    free(C);
    free(mask);
}

/* Random cut points of [0, n) into up to `parts` tiles (some may be empty). */
static int cuts(int64_t n, int parts, int64_t *at) {
    int k = 0;
    at[k++] = 0;
    for (int i = 1; i < parts; i++)
        at[k++] = irand(n + 1);
    at[k++] = n;
    for (int i = 1; i < k; i++) /* sort */
        for (int j = i; j > 0 && at[j] < at[j - 1]; j--) {
            int64_t t = at[j];
            at[j] = at[j - 1];
            at[j - 1] = t;
        }
    return k;
}

static void test_gemm_packed_b(const gemm_data *d) {
    const gemm_case *c = &d->c;
    float *Bp = xmalloc(bd_f32_gemm_packed_b_bytes(c->K, c->N));
    bd_f32_gemm_pack_b(c->K, c->N, d->B, d->ldb, c->transB, Bp);
    int64_t at[8];
    int k = cuts(c->N, 1 + (int)irand(4), at);
    unsigned char *mask;
    float *C = gemm_out(d, 0, c->M, 0, c->N, &mask);
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(c->M, c->N, c->K));
    for (int t = 0; t + 1 < k; t++)
        bd_f32_gemm_packed_b(c->M, at[t], at[t + 1], c->K, d->A, d->lda, c->transA, Bp, C + d->ldc,
                             d->ldc, c->bias_n ? d->bn : NULL, c->bias_m ? d->bm : NULL,
                             c->accumulate, c->act, -0.5f, 0.75f, s.p);
    char name[200];
    case_name(name, sizeof name, "packed_b", c);
    compare(name, C, d->ref, d->mag, mask, (c->M + 2) * d->ldc);
    free(s.base);
    free(C);
    free(mask);
    free(Bp);
}

static void test_gemm_packed_a(const gemm_data *d) {
    const gemm_case *c = &d->c;
    float *Ap = xmalloc(bd_f32_gemm_packed_a_bytes(c->M, c->K));
    bd_f32_gemm_pack_a(c->M, c->K, d->A, d->lda, c->transA, Ap);
    int64_t at[8];
    int k = cuts(c->M, 1 + (int)irand(4), at);
    unsigned char *mask;
    float *C = gemm_out(d, 0, c->M, 0, c->N, &mask);
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(c->M, c->N, c->K));
    for (int t = 0; t + 1 < k; t++)
        bd_f32_gemm_packed_a(at[t], at[t + 1], c->N, c->K, Ap, d->B, d->ldb, c->transB, C + d->ldc,
                             d->ldc, c->bias_n ? d->bn : NULL, c->bias_m ? d->bm : NULL,
                             c->accumulate, c->act, -0.5f, 0.75f, s.p);
    char name[200];
    case_name(name, sizeof name, "packed_a", c);
    compare(name, C, d->ref, d->mag, mask, (c->M + 2) * d->ldc);
    free(s.base);
    free(C);
    free(mask);
    free(Ap);
}

/* A single column tile [n0, n1) of a packed B must leave the other columns alone. */
static void test_gemm_packed_b_one_tile(const gemm_data *d) {
    const gemm_case *c = &d->c;
    float *Bp = xmalloc(bd_f32_gemm_packed_b_bytes(c->K, c->N));
    bd_f32_gemm_pack_b(c->K, c->N, d->B, d->ldb, c->transB, Bp);
    int64_t n0 = irand(c->N + 1), n1 = n0 + irand(c->N - n0 + 1);
    unsigned char *mask;
    float *C = gemm_out(d, 0, c->M, n0, n1, &mask);
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(c->M, c->N, c->K));
    bd_f32_gemm_packed_b(c->M, n0, n1, c->K, d->A, d->lda, c->transA, Bp, C + d->ldc, d->ldc,
                         c->bias_n ? d->bn : NULL, c->bias_m ? d->bm : NULL, c->accumulate, c->act,
                         -0.5f, 0.75f, s.p);
    char name[240];
    case_name(name, sizeof name, "packed_b_tile", c);
    snprintf(name + strlen(name), sizeof name - strlen(name), " n0=%lld n1=%lld", (long long)n0,
             (long long)n1);
    compare(name, C, d->ref, d->mag, mask, (c->M + 2) * d->ldc);
    free(s.base);
    free(C);
    free(mask);
    free(Bp);
}

static void test_gemm_packed_a_one_tile(const gemm_data *d) {
    const gemm_case *c = &d->c;
    float *Ap = xmalloc(bd_f32_gemm_packed_a_bytes(c->M, c->K));
    bd_f32_gemm_pack_a(c->M, c->K, d->A, d->lda, c->transA, Ap);
    int64_t m0 = irand(c->M + 1), m1 = m0 + irand(c->M - m0 + 1);
    unsigned char *mask;
    float *C = gemm_out(d, m0, m1, 0, c->N, &mask);
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(c->M, c->N, c->K));
    bd_f32_gemm_packed_a(m0, m1, c->N, c->K, Ap, d->B, d->ldb, c->transB, C + d->ldc, d->ldc,
                         c->bias_n ? d->bn : NULL, c->bias_m ? d->bm : NULL, c->accumulate, c->act,
                         -0.5f, 0.75f, s.p);
    char name[240];
    case_name(name, sizeof name, "packed_a_tile", c);
    snprintf(name + strlen(name), sizeof name - strlen(name), " m0=%lld m1=%lld", (long long)m0,
             (long long)m1);
    compare(name, C, d->ref, d->mag, mask, (c->M + 2) * d->ldc);
    free(s.base);
    free(C);
    free(mask);
    free(Ap);
}

static void test_gemm_all(void) {
    reseed(1);
    static const int64_t sizes[] = {0, 1, 2, 5, 6, 7, 15, 16, 17, 31, 64, 100, 255, 257};
    static const int64_t ksizes[] = {0, 1, 5, 16, 17, 64, 257, 300};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    const int nk = (int)(sizeof ksizes / sizeof ksizes[0]);
    int before = g_failed, cases = 0;
    for (int mi = 0; mi < ns; mi++)
        for (int ni = 0; ni < ns; ni++)
            for (int ki = 0; ki < nk; ki++) {
                if (g_quick && (mi + ni + ki) % 5) continue;
                gemm_case c = {sizes[mi],     sizes[ni],     ksizes[ki],
                               (int)irand(2), (int)irand(2), (int)irand(2),
                               (int)irand(2), (int)irand(2), (int)irand(6)};
                gemm_data d = gemm_data_new(c);
                test_gemm_plain(&d);
                cases++;
                /* the packed variants on a subset, to bound the run time */
                if ((mi + 2 * ni + 3 * ki) % 3 == 0) {
                    test_gemm_packed_b(&d);
                    test_gemm_packed_a(&d);
                    test_gemm_packed_b_one_tile(&d);
                    test_gemm_packed_a_one_tile(&d);
                    cases += 4;
                }
                gemm_data_free(&d);
            }
    /* every transpose/epilogue combination on awkward sizes, K over several depth blocks */
    for (int t = 0; t < 32; t++) {
        gemm_case c = {37,           45,           600,          t & 1, (t >> 1) & 1,
                       (t >> 2) & 1, (t >> 3) & 1, (t >> 4) & 1, t % 6};
        gemm_data d = gemm_data_new(c);
        test_gemm_plain(&d);
        test_gemm_packed_b(&d);
        test_gemm_packed_a(&d);
        cases += 3;
        gemm_data_free(&d);
    }
    /* larger than one cache block in every dimension */
    {
        gemm_case c = {300, 2100, 520, 0, 0, 1, 1, 1, BD_ACT_RELU};
        if (g_quick) c.N = 300;
        gemm_data d = gemm_data_new(c);
        test_gemm_plain(&d);
        test_gemm_packed_b(&d);
        test_gemm_packed_a(&d);
        cases += 3;
        gemm_data_free(&d);
    }
    printf("%s gemm %s: %d cases\n", g_failed == before ? "ok" : "FAILED",
           bd_kernels_isa_name(bd_kernels_get_isa()), cases);
}

/* ---- convolution ---------------------------------------------------------------------------- */

typedef struct conv_case {
    const char *name;
    int64_t N, C, H, W, M, KH, KW, group, sh, sw, dh, dw, pt, pl, pb, pr;
    int act;
} conv_case;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

/* A tile entry point of the convolution kernels (conv2d and deconv share one signature). */
typedef void (*conv_tile_fn)(const bd_conv2d_shape *s, const float *x, const float *wpacked,
                             const float *bias, float *y, int64_t n, int64_t oc0, int64_t oc1,
                             int64_t oh0, int64_t oh1, int act, float act_min, float act_max,
                             void *scratch);
typedef size_t (*conv_scratch_fn)(const bd_conv2d_shape *s, int64_t oh_tile);

/* Runs the last batch item of s as random cuts of the channels and of the rows (scratch sized by
 * the tallest tile) into an output of guard cells, and compares it with ref (where the other
 * batch items must stay untouched). */
static void check_conv_tiles(const char *what, const bd_conv2d_shape *s, const float *x,
                             const float *wp, const float *bias, int act, const double *ref,
                             const double *mag, conv_tile_fn tile, conv_scratch_fn scratch_bytes) {
    const int64_t yn = s->N * s->M * s->OH * s->OW, n = s->N - 1;
    unsigned char *mask = xmalloc((size_t)yn);
    float *y = xmalloc((size_t)yn * sizeof(float));
    for (int64_t t = 0; t < yn; t++) {
        y[t] = GUARD;
        mask[t] = (unsigned char)(t / (s->M * s->OH * s->OW) == n);
    }
    int64_t mc[8], rc[8];
    int km = cuts(s->M, 1 + (int)irand(3), mc), kr = cuts(s->OH, 1 + (int)irand(3), rc);
    int64_t tallest = 0;
    for (int i = 0; i + 1 < kr; i++)
        if (rc[i + 1] - rc[i] > tallest) tallest = rc[i + 1] - rc[i];
    scratch sc = scratch_new(scratch_bytes(s, tallest));
    for (int i = 0; i + 1 < km; i++)
        for (int r = 0; r + 1 < kr; r++)
            tile(s, x, wp, bias, y, n, mc[i], mc[i + 1], rc[r], rc[r + 1], act, -0.5f, 0.75f, sc.p);
    char name[240];
    snprintf(name, sizeof name, "%s %s (M cuts %d, row cuts %d, bias %d)", what,
             bd_kernels_isa_name(bd_kernels_get_isa()), km - 1, kr - 1, bias != NULL);
    compare(name, y, ref, mag, mask, yn);
    free(sc.base);
    free(mask);
    free(y);
}

/* bf16: --precision bf16's shape flag. Where the kernels take it (the 16-lane direct kernel on
 * a CPU with AVX512_BF16: the packed weights' kind says so) the reference sums the bfloat16-rounded
 * input and weights; elsewhere the fp32 one. Returns 1 when the bf16 path ran. */
static int test_conv(const conv_case *cc, int winograd, int bf16) {
    bd_conv2d_shape s = {0};
    s.winograd = winograd;
    s.bf16 = bf16;
    s.N = cc->N;
    s.C = cc->C;
    s.H = cc->H;
    s.W = cc->W;
    s.M = cc->M;
    s.KH = cc->KH;
    s.KW = cc->KW;
    s.group = cc->group;
    s.stride_h = cc->sh;
    s.stride_w = cc->sw;
    s.dil_h = cc->dh;
    s.dil_w = cc->dw;
    s.pad_top = cc->pt;
    s.pad_left = cc->pl;
    s.OH = out_size(cc->H, cc->KH, cc->sh, cc->dh, cc->pt, cc->pb);
    s.OW = out_size(cc->W, cc->KW, cc->sw, cc->dw, cc->pl, cc->pr);
    if (!bd_conv2d_shape_valid(&s)) {
        g_failed++;
        printf("FAIL conv %s: shape not valid\n", cc->name);
        return 0;
    }
    const int64_t Cg = s.C / s.group, Mg = s.M / s.group;
    const int64_t xn = s.N * s.C * s.H * s.W, wn = s.M * Cg * s.KH * s.KW;
    const int64_t yn = s.N * s.M * s.OH * s.OW;
    float *x = frandom(xn), *w = frandom(wn), *bias = frandom(s.M);
    int use_bias = (int)irand(4) != 0;
    float *wp = xmalloc(bd_f32_conv2d_packed_w_bytes(&s));
    bd_f32_conv2d_pack_w(&s, w, wp);
    const int rounded = packed_in_bf16(wp);
    double *ref = xmalloc((size_t)yn * sizeof(double)), *mag = xmalloc((size_t)yn * sizeof(double));
    const int64_t n = s.N - 1; /* the batch item computed */
    for (int64_t m = 0; m < s.M; m++) {
        int64_t g = m / Mg;
        for (int64_t oh = 0; oh < s.OH; oh++)
            for (int64_t ow = 0; ow < s.OW; ow++) {
                double acc = use_bias ? bias[m] : 0.0, mg = use_bias ? fabs(bias[m]) : 0.0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t kh = 0; kh < s.KH; kh++)
                        for (int64_t kw = 0; kw < s.KW; kw++) {
                            int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dil_h;
                            int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dil_w;
                            if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                            const float xv = x[((n * s.C + g * Cg + c) * s.H + ih) * s.W + iw],
                                        wv = w[((m * Cg + c) * s.KH + kh) * s.KW + kw];
                            double v = rounded ? bf16_ref(xv) * bf16_ref(wv) : (double)xv * wv;
                            acc += v;
                            mg += fabs(v);
                        }
                int64_t o = ((n * s.M + m) * s.OH + oh) * s.OW + ow;
                ref[o] = act_ref(acc, cc->act, -0.5f, 0.75f);
                mag[o] = mg;
            }
    }
    if (winograd) {
        /* a Winograd output is a combination of its whole m x m tile: its error scales with the
         * largest magnitude among the outputs that may share its tile */
        double *tile_mag = xmalloc((size_t)yn * sizeof(double));
        for (int64_t m = 0; m < s.M; m++)
            for (int64_t oh = 0; oh < s.OH; oh++)
                for (int64_t ow = 0; ow < s.OW; ow++) {
                    double big = 0;
                    for (int64_t i = oh - winograd + 1; i < oh + winograd; i++)
                        for (int64_t j = ow - winograd + 1; j < ow + winograd; j++)
                            if (i >= 0 && i < s.OH && j >= 0 && j < s.OW)
                                big = fmax(big, mag[((n * s.M + m) * s.OH + i) * s.OW + j]);
                    tile_mag[((n * s.M + m) * s.OH + oh) * s.OW + ow] = big;
                }
        free(mag);
        mag = tile_mag;
    }
    char what[160];
    snprintf(what, sizeof what, "conv %s%s%s", cc->name,
             winograd == 2 ? " winograd F(2x2,3x3)" : winograd == 4 ? " winograd F(4x4,3x3)" : "",
             rounded ? " bf16" : "");
    check_conv_tiles(what, &s, x, wp, use_bias ? bias : NULL, cc->act, ref, mag,
                     bd_f32_conv2d_tile, bd_f32_conv2d_scratch_bytes);
    free(x);
    free(w);
    free(bias);
    free(wp);
    free(ref);
    free(mag);
    return rounded;
}

/* ---- convolutions with a prologue (bd_f32_conv2d_tile_pre) ---------------------------------- */

static const float *g_pre_a, *g_pre_b;

static void tile_pre(const bd_conv2d_shape *s, const float *x, const float *wpacked, const float *bias,
                     float *y, int64_t n, int64_t oc0, int64_t oc1, int64_t oh0, int64_t oh1, int act,
                     float act_min, float act_max, void *sc) {
    bd_f32_conv2d_tile_pre(s, x, g_pre_a, g_pre_b, wpacked, bias, y, n, oc0, oc1, oh0, oh1, act, act_min,
                           act_max, sc);
}

/* 1x1 convolutions of x * a[c] + b[c] (then Relu where pre is 2), an inference BatchNormalization
 * absorbed, against the double-precision sum over the transformed input. */
static void test_conv_pre_all(void) {
    reseed(9);
    /* N C H W M pre act */
    static const int64_t cases[][7] = {
        {1, 20, 9, 11, 24, 2, 0},           {2, 7, 5, 5, 13, 1, BD_ACT_RELU},
        {1, 224, 14, 14, 128, 2, 0},        {1, 96, 7, 7, 40, 2, BD_ACT_CLIP},
        {1, 3, 4, 37, 40, 2, 0},            {1, 1, 3, 3, 1, 1, 0},
        {1, 64, 28, 28, 128, 2, BD_ACT_RELU}, {2, 37, 15, 17, 80, 1, BD_ACT_SILU},
    };
    int before = g_failed, count = 0, rounded_count = 0;
    /* then with --precision bf16's flag: where the kernels take it (the packed weights' kind 11 or
     * 12), against the rounded operands, the prologue computed in float as the kernels do */
    for (size_t ci = 0; ci < 2 * (sizeof cases / sizeof cases[0]); ci++) {
        const size_t i = ci % (sizeof cases / sizeof cases[0]);
        const int64_t *c = cases[i];
        bd_conv2d_shape s = {0};
        s.N = c[0], s.C = c[1], s.H = s.OH = c[2], s.W = s.OW = c[3], s.M = c[4], s.pre = c[5];
        s.bf16 = ci >= sizeof cases / sizeof cases[0];
        s.KH = s.KW = s.group = s.stride_h = s.stride_w = s.dil_h = s.dil_w = 1;
        if (!bd_conv2d_shape_valid(&s)) {
            g_failed++;
            printf("FAIL conv prologue case %zu: shape not valid\n", i);
            continue;
        }
        const int64_t HW = s.H * s.W, xn = s.N * s.C * HW, yn = s.N * s.M * HW, n = s.N - 1;
        float *x = frandom(xn), *w = frandom(s.M * s.C), *bias = frandom(s.M);
        float *a = frandom(s.C), *b = frandom(s.C);
        float *wp = xmalloc(bd_f32_conv2d_packed_w_bytes(&s));
        bd_f32_conv2d_pack_w(&s, w, wp);
        const int rounded = packed_in_bf16(wp);
        rounded_count += rounded;
        double *ref = xmalloc((size_t)yn * sizeof(double)), *mag = xmalloc((size_t)yn * sizeof(double));
        for (int64_t m = 0; m < s.M; m++)
            for (int64_t p = 0; p < HW; p++) {
                double acc = bias[m], mg = fabs(bias[m]);
                for (int64_t k = 0; k < s.C; k++) {
                    double t = (double)x[(n * s.C + k) * HW + p] * a[k] + b[k];
                    if (rounded) {
                        float tf = x[(n * s.C + k) * HW + p] * a[k];
                        tf = tf + b[k];
                        t = tf;
                    }
                    if (s.pre == 2 && t < 0) t = 0;
                    acc += rounded ? bf16_ref((float)t) * bf16_ref(w[m * s.C + k]) : t * w[m * s.C + k];
                    mg += fabs(t * w[m * s.C + k]) + fabs((double)x[(n * s.C + k) * HW + p] * a[k] * w[m * s.C + k]);
                }
                ref[(n * s.M + m) * HW + p] = act_ref(acc, (int)c[6], -0.5f, 0.75f);
                mag[(n * s.M + m) * HW + p] = mg;
            }
        g_pre_a = a, g_pre_b = b;
        char what[80];
        snprintf(what, sizeof what, "conv prologue %lldx%lldx%lld -> %lld pre %lld%s", (long long)s.C,
                 (long long)s.H, (long long)s.W, (long long)s.M, (long long)s.pre,
                 rounded ? " bf16" : s.bf16 ? " (bf16 flag, fp32 path)" : "");
        check_conv_tiles(what, &s, x, wp, bias, (int)c[6], ref, mag, tile_pre, bd_f32_conv2d_scratch_bytes);
        count++;
        free(x), free(w), free(bias), free(a), free(b), free(wp), free(ref), free(mag);
    }
    printf("%s conv prologue %s: %d cases, %d of them in bfloat16\n",
           g_failed == before ? "ok" : "FAILED", bd_kernels_isa_name(bd_kernels_get_isa()), count,
           rounded_count);
}

static void test_conv_all(void) {
    reseed(2);
    /* name, N C H W M KH KW group sh sw dh dw pt pl pb pr act */
    static const conv_case cases[] = {
        {"1x1", 1, 16, 9, 11, 24, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},
        {"1x1 relu batch2", 2, 7, 5, 5, 13, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_RELU},
        {"1x1 stride2", 1, 20, 10, 9, 33, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0},
        {"1x1 pad1", 1, 5, 6, 7, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"1x1 wide", 1, 64, 14, 14, 100, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_CLIP},
        {"3x3 pad1", 1, 8, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"3x3 pad1 relu", 2, 19, 13, 17, 29, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"3x3 pad1 stride2", 1, 16, 15, 14, 32, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, 0},
        {"3x3 nopad", 1, 3, 8, 10, 5, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_CLIP},
        {"3x3 deep", 1, 64, 9, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"3x3 7x7 image", 1, 40, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"5x5 pad2", 1, 6, 11, 13, 10, 5, 5, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0},
        {"7x7 stride2 pad3", 1, 3, 23, 21, 16, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3, BD_ACT_RELU},
        /* stride 2 on long rows: groups of 12 within a row (one base address) and across a
         * row's end (pointers), the chunk's last pixels in groups of 4, 8 or 12 */
        {"7x7 stride2 stem 78 columns", 1, 3, 9, 155, 48, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3, BD_ACT_RELU},
        {"7x7 stride2 stem 69 columns", 1, 3, 11, 137, 32, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3, 0},
        {"3x3 stride2 65 columns", 1, 16, 7, 130, 32, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, BD_ACT_CLIP},
        {"3x3 dilation2", 1, 7, 12, 13, 9, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0},
        {"3x3 dilation2x3 stride1x2", 1, 5, 14, 15, 7, 3, 3, 1, 1, 2, 2, 3, 1, 3, 2, 1, 0},
        {"3x3 groups2", 1, 12, 10, 11, 18, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"1x1 groups4", 1, 16, 6, 6, 20, 1, 1, 4, 1, 1, 1, 1, 0, 0, 0, 0, 0},
        {"3x3 groups3 stride2", 2, 9, 9, 8, 15, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"depthwise 3x3", 1, 16, 14, 15, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"depthwise 3x3 relu wide", 2, 5, 9, 70, 5, 3, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"depthwise 3x3 stride2", 1, 8, 17, 16, 8, 3, 3, 8, 2, 2, 1, 1, 1, 1, 1, 1, BD_ACT_CLIP},
        {"depthwise 5x5", 1, 6, 20, 37, 6, 5, 5, 6, 1, 1, 1, 1, 2, 2, 2, 2, 0},
        {"depthwise 5x5 stride2", 1, 4, 21, 22, 4, 5, 5, 4, 2, 2, 1, 1, 2, 2, 2, 2, 0},
        {"depthwise 3x3 dilation2", 1, 3, 12, 40, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0},
        {"depthwise 7x3 stride 2x3", 1, 3, 19, 41, 3, 7, 3, 3, 2, 3, 1, 1, 3, 1, 3, 1, 0},
        {"depthwise multiplier2", 1, 4, 8, 9, 8, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"odd 1x4 kernel asym pads", 1, 5, 7, 9, 11, 1, 4, 1, 1, 1, 1, 1, 0, 2, 0, 1, 0},
        {"4x2 stride3x1 pads", 1, 6, 13, 8, 7, 4, 2, 1, 3, 1, 1, 1, 2, 0, 1, 1, 0},
        /* column strides of 3 or more: taps gathered by loads and a transpose on AVX-512 */
        {"patches 16x16/16", 1, 3, 64, 160, 20, 16, 16, 1, 16, 16, 1, 1, 0, 0, 0, 0, 0},
        {"patches 14x14/14 pads", 1, 2, 43, 71, 13, 14, 14, 1, 14, 14, 1, 1, 1, 1, 1, 2,
         BD_ACT_RELU},
        {"5x5 stride4 pads (K blocks)", 1, 40, 33, 37, 12, 5, 5, 1, 4, 4, 1, 1, 2, 2, 2, 2, 0},
        {"3x3 stride3 row dilation2", 1, 4, 20, 26, 9, 3, 3, 1, 3, 3, 2, 1, 1, 1, 1, 1, 0},
        {"tiny 1x1 image", 1, 3, 1, 1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"kernel larger than image", 1, 2, 3, 3, 3, 5, 5, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0},
        {"big pads", 1, 2, 4, 5, 3, 3, 3, 1, 1, 1, 1, 1, 3, 4, 3, 4, BD_ACT_RELU},
        {"resnet-like 3x3", 1, 32, 28, 28, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"many channels 3x3 (K blocks)", 1, 70, 6, 5, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"1x1 silu", 1, 24, 10, 13, 40, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_SILU},
        /* stride 1 with rows of 16+ pixels: read in place on AVX-512 (direct_tile) */
        {"direct 3x3 pad1 W16", 1, 8, 9, 16, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"direct 3x3 pad1 W33 batch2", 2, 5, 6, 33, 26, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"direct 3x3 nopad W40", 1, 7, 8, 42, 12, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_CLIP},
        {"direct 3x3 deep K blocks", 1, 70, 5, 30, 25, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_RELU},
        {"direct 5x5 pad2 W45", 1, 4, 7, 45, 30, 5, 5, 1, 1, 1, 1, 1, 2, 2, 2, 2, BD_ACT_SILU},
        {"direct 3x3 dilation2 W40", 1, 6, 10, 40, 9, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0},
        {"direct 1x3 asym pads W20", 1, 5, 4, 20, 14, 1, 3, 1, 1, 1, 1, 1, 0, 2, 0, 0, 0},
        {"direct 3x3 groups2 W24", 1, 8, 6, 24, 36, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"direct 3x1 tall pads W17", 1, 3, 11, 17, 5, 3, 1, 1, 1, 1, 1, 1, 2, 0, 1, 0, 0},
        {"3x3 pad1 silu edge columns", 1, 9, 7, 7, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_SILU},
        {"depthwise 3x3 silu", 1, 16, 14, 40, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_SILU},
        {"depthwise 5x5 stride2 silu", 1, 8, 21, 22, 8, 5, 5, 8, 2, 2, 1, 1, 2, 2, 2, 2,
         BD_ACT_SILU},
        {"1x1 hardswish", 1, 24, 10, 13, 40, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_HARD_SWISH},
        {"direct 3x3 hardswish W20", 1, 6, 7, 20, 26, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_HARD_SWISH},
        {"depthwise 3x3 hardswish", 1, 16, 14, 40, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_HARD_SWISH},
        {"depthwise 5x5 stride2 hardswish", 1, 8, 21, 22, 8, 5, 5, 8, 2, 2, 1, 1, 2, 2, 2, 2,
         BD_ACT_HARD_SWISH},
        /* 8 output channels in the lanes on AVX2: depthwise tails, and groups of <= 8 inputs
         * and a multiple of 8 outputs */
        {"depthwise 3x3 40 channels 14x14", 1, 40, 14, 14, 40, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"depthwise 5x5 7x7 image", 1, 20, 7, 7, 20, 5, 5, 20, 1, 1, 1, 1, 2, 2, 2, 2, BD_ACT_RELU},
        {"group8 3x3 (RegNet)", 1, 32, 14, 13, 32, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"group8 3x3 stride2 batch2", 2, 24, 15, 17, 24, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
         BD_ACT_CLIP},
        {"group8 3x3 Cg4 Mg16", 1, 8, 9, 10, 32, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_SILU},
        {"group8 5x5 Cg3 dilation2", 1, 6, 12, 11, 16, 5, 5, 2, 1, 1, 2, 2, 4, 4, 4, 4, 0},
        {"group8 1x1", 1, 16, 7, 9, 16, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0},
        {"group8 3x3 7x7 image", 1, 16, 7, 7, 16, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_HARD_SWISH},
        {"group8 3x2 stride 1x3 asym pads", 1, 16, 9, 20, 24, 3, 2, 2, 1, 3, 1, 1, 1, 0, 2, 1, 0},
        {"direct8 3x3 C20 M24 stride2", 1, 20, 11, 13, 24, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1,
         BD_ACT_RELU},
        {"direct8 5x5 C5 dilation2 stride1x2", 1, 5, 13, 17, 16, 5, 5, 1, 1, 2, 2, 2, 4, 4, 4, 4,
         BD_ACT_SILU},
        {"direct8 1x1 projection 7x7", 1, 96, 7, 7, 32, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_CLIP},
        /* a pointwise expansion of 256+ inputs over at most 64 pixels: direct on AVX-512 */
        {"direct16 1x1 expansion 256->528 6x7", 1, 256, 6, 7, 528, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
         0, BD_ACT_RELU},
        /* pointwise, at most 16 outputs and 64 inputs per group, or reductions to at most 64
         * outputs: read in place on AVX-512 (and on AVX2 over more than 196 pixels), the next
         * panels prefetched, the planes ending inside a 32-pixel panel */
        {"pointwise in place 48->16 batch2", 2, 48, 25, 27, 16, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_RELU},
        {"pointwise in place 64->11 29x31", 1, 64, 29, 31, 11, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_HARD_SWISH},
        {"pointwise in place groups2 20->12", 1, 40, 9, 37, 24, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0,
         0},
        {"pointwise in place 144->24 9x56", 1, 144, 9, 56, 24, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_CLIP},
        {"pointwise in place groups2 100->64", 1, 200, 7, 45, 128, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0,
         0, BD_ACT_RELU},
        /* (on AVX2 too, in 16-pixel panels, where more than 196 pixels) the depth in two chunks,
         * the second adding to the stored first */
        {"pointwise in place 320->40 15x17", 1, 320, 15, 17, 40, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_SILU},
        /* pointwise over few pixels that fill the GEMM's 32-column tiles badly, transposed on
         * AVX-512 (X^T W^T, pixels as the tile's rows): a 7x7 expansion past a panel of 32
         * outputs, one pixel (a squeeze-and-excitation block's) both ways, batch 2 on a 5x5
         * image with outputs the direct kernel does not take, a 6x6 expansion */
        {"pointwise transposed 60->200 7x7", 1, 60, 7, 7, 200, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_CLIP},
        {"pointwise transposed one pixel 40->120", 1, 40, 1, 1, 120, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
         0, BD_ACT_SILU},
        {"pointwise transposed one pixel 300->17", 1, 300, 1, 1, 17, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
         0, 0},
        {"pointwise transposed 70->33 5x5 batch2", 2, 70, 5, 5, 33, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0,
         0, BD_ACT_RELU},
        {"pointwise transposed 48->112 6x6", 1, 48, 6, 6, 112, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_HARD_SWISH},
        /* 16 output channels in the lanes on AVX-512: half blocks, groups of 9+ inputs, strides */
        {"direct16 3x3 groups2 Cg16 Mg24 stride2", 1, 32, 12, 11, 48, 3, 3, 2, 2, 2, 1, 1, 1, 1,
         1, 1, BD_ACT_RELU},
        {"direct16 1x1 stride2 downsample", 1, 24, 14, 14, 40, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0},
        /* pointwise on the GEMM (more than 196 pixels, more than 64 outputs): with the bf16 flag,
         * bd_bf16_gemm_rows; an odd number of inputs (a pair's twin zero), batch 2, K past a
         * block of 256 */
        {"1x1 GEMM 40->96 20x20", 1, 40, 20, 20, 96, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_RELU},
        {"1x1 GEMM 37->80 15x17 batch2", 2, 37, 15, 17, 80, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
         BD_ACT_SILU},
        {"1x1 GEMM 300->130 16x13", 1, 300, 16, 13, 130, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},
        /* strided 1x1 on the pixels it reads (bd_conv8d_subsampled): rows past 16 columns with a
         * masked end, a partial input block, batch 2; row stride alone; a gathered column stride */
        {"direct16 1x1 stride2 odd width", 2, 20, 23, 37, 48, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0,
         BD_ACT_RELU},
        {"direct16 1x1 stride3x2", 1, 16, 17, 40, 32, 1, 1, 1, 3, 2, 1, 1, 0, 0, 0, 0, 0},
        {"direct16 1x1 stride1x3", 1, 9, 10, 50, 16, 1, 1, 1, 1, 3, 1, 1, 0, 0, 0, 0, 0},
        {"direct16 7x7 stride2 C3 M40", 1, 3, 30, 29, 40, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3,
         BD_ACT_HARD_SWISH},
        {"direct16 3x3 C19 M56 silu", 1, 19, 9, 23, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_SILU},
        {"depthwise16 3x3 37 channels stride2", 2, 37, 15, 19, 37, 3, 3, 37, 2, 2, 1, 1, 1, 1, 1, 1,
         BD_ACT_HARD_SWISH},
        {"depthwise16 5x5 dilation2 24 channels", 1, 24, 13, 29, 24, 5, 5, 24, 1, 1, 2, 2, 4, 4, 4,
         4, BD_ACT_CLIP},
        {"depthwise16 7x7 33 channels", 1, 33, 11, 12, 33, 7, 7, 33, 1, 1, 1, 1, 3, 3, 3, 3, 0},
        /* on the planes (AVX-512, at most 3x3, 14 output columns or more): row blocks of 8 and
         * columns of 16 with partial ends, pads on one side only, generic windows and strides;
         * 3x3 at stride 2 loads each row's columns once for its three taps */
        {"depthwise planes 3x3 stride2 pads 0/1", 1, 20, 23, 45, 20, 3, 3, 20, 2, 2, 1, 1, 0, 0, 1,
         1, BD_ACT_RELU},
        {"depthwise planes 3x3 stride2 pads 1/0", 2, 17, 30, 33, 17, 3, 3, 17, 2, 2, 1, 1, 1, 1, 0,
         0, BD_ACT_CLIP},
        /* an odd width padded on both sides: the last window reaches the right padding */
        {"depthwise planes 3x3 stride2 pads 1/1 odd width", 1, 18, 20, 45, 18, 3, 3, 18, 2, 2, 1,
         1, 1, 1, 1, 1, BD_ACT_CLIP},
        {"depthwise planes 3x3 unpadded", 1, 9, 12, 18, 9, 3, 3, 9, 1, 1, 1, 1, 0, 0, 0, 0, 0},
        {"depthwise planes 3x1 stride 2x1", 1, 5, 19, 31, 5, 3, 1, 5, 2, 1, 1, 1, 1, 0, 1, 0, 0},
        {"depthwise planes 2x3 stride 1x2", 1, 6, 11, 40, 6, 2, 3, 6, 1, 2, 1, 1, 0, 1, 1, 1,
         BD_ACT_HARD_SWISH},
        /* few input channels on the output planes (AVX-512: at most 4 channels and 3x3, 16
         * output columns or more), 8 channels at a time with partial ones and column vectors */
        {"stem planes 3->20 3x3 stride2", 2, 3, 21, 35, 20, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1,
         BD_ACT_CLIP},
        {"stem planes 3->24 3x3 stride2 unpadded", 1, 3, 17, 41, 24, 3, 3, 1, 2, 2, 1, 1, 0, 0, 0,
         0, BD_ACT_RELU},
        {"stem planes 1->8 3x3", 1, 1, 9, 40, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"stem planes 4->16 2x3 stride 1x2", 1, 4, 10, 47, 16, 2, 3, 1, 1, 2, 1, 1, 1, 0, 0, 2,
         BD_ACT_SILU},
        /* column vectors in threes with one or two left over: 111 columns (inside the input),
         * 48 (reaching the padding), 18; 150 columns staged as two runs (128 and 22) */
        {"stem planes 3->16 3x3 stride2 111 columns", 1, 3, 9, 223, 16, 3, 3, 1, 2, 2, 1, 1, 0, 0,
         0, 0, BD_ACT_RELU},
        {"stem planes 3->8 3x3 48 columns", 1, 3, 6, 48, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_CLIP},
        {"stem planes 3->8 3x3 stride2 18 columns", 1, 3, 7, 36, 8, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1,
         BD_ACT_NONE},
        {"stem planes 2->16 3x3 150 columns", 1, 2, 5, 150, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1,
         BD_ACT_RELU},
        /* MobileNetV3's stem: HardSwish, whose epilogue the AVX2 kernel chooses per block */
        {"stem planes 3->16 3x3 stride2 hardswish", 1, 3, 11, 61, 16, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1,
         1, BD_ACT_HARD_SWISH},
    };
    int before = g_failed, count = 0;
    g_rel_err_max = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int rep = 0; rep < (g_quick ? 1 : 3); rep++) {
            test_conv(&cases[i], 0, 0);
            count++;
        }
    printf("%s conv %s: %d cases, largest error %.2g of the sum of |products|\n",
           g_failed == before ? "ok" : "FAILED", bd_kernels_isa_name(bd_kernels_get_isa()), count,
           g_rel_err_max);
    /* --precision bf16's flag on every case: the 16-lane kernel's cases against the rounded
     * operands' sums, the others (other paths, or a CPU without AVX512_BF16) against fp32's */
    before = g_failed, count = 0;
    int rounded = 0;
    g_rel_err_max = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rounded += test_conv(&cases[i], 0, 1);
        count++;
    }
    printf("%s conv %s with the bf16 flag: %d cases, %d of them in bfloat16, largest error %.2g "
           "of the sum of |products|\n",
           g_failed == before ? "ok" : "FAILED", bd_kernels_isa_name(bd_kernels_get_isa()), count,
           rounded, g_rel_err_max);
}

/* Winograd F(2x2,3x3) and F(4x4,3x3): 3x3 stride-1 ungrouped cases and layers of real
 * networks, against the same double-precision direct sums. The error is measured relative to
 * the largest sum of absolute products among the outputs that may share the output's tile
 * (test_conv) and bounded per variant: the transforms' constants (up to 8 and 1/24 for
 * F(4x4,3x3)) magnify rounding. */
static void test_winograd_all(void) {
    reseed(3);
    /* name, N C H W M KH KW group sh sw dh dw pt pl pb pr act */
    static const conv_case cases[] = {
        {"3x3 pad1", 1, 8, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"3x3 pad1 relu batch2", 2, 19, 13, 17, 29, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"3x3 nopad clip", 1, 3, 8, 10, 5, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, BD_ACT_CLIP},
        {"3x3 deep", 1, 64, 9, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"3x3 7x7 image", 1, 40, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"tiny 1x1 image", 1, 3, 1, 1, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"big pads", 1, 2, 4, 5, 3, 3, 3, 1, 1, 1, 1, 1, 3, 4, 3, 4, BD_ACT_RELU},
        {"asymmetric pads", 1, 6, 9, 11, 13, 3, 3, 1, 1, 1, 1, 1, 0, 2, 1, 0, 0},
        {"silu", 1, 9, 7, 7, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_SILU},
        {"hardswish wide", 1, 6, 7, 37, 26, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_HARD_SWISH},
        {"resnet 56x56", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
        {"resnet 14x14 deep", 1, 256, 14, 14, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
        {"resnet 7x7 deep", 1, 512, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, BD_ACT_RELU},
    };
    static const double bound[5] = {0, 0, 1e-6, 0, 1e-5}; /* by output tile m, 5x the measured */
    for (int m = 2; m <= 4; m += 2) {
        int before = g_failed, count = 0;
        g_rel_tol = bound[m];
        g_rel_err_max = 0;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            for (int rep = 0; rep < (g_quick ? 1 : 2); rep++) {
                test_conv(&cases[i], m, 0);
                count++;
            }
        printf("%s conv %s winograd F(%dx%d,3x3): %d cases, largest error %.2g of the tile's sum "
               "of |products| (bound %.0e)\n",
               g_failed == before ? "ok" : "FAILED", bd_kernels_isa_name(bd_kernels_get_isa()), m,
               m, count, g_rel_err_max, bound[m]);
    }
    g_rel_tol = 1e-4;
}

/* ---- transposed convolution, stride = kernel ------------------------------------------------ */

typedef struct deconv_case {
    const char *name;
    int64_t N, C, H, W, M, KH, KW;
    int act;
} deconv_case;

static void test_deconv(const deconv_case *dc) {
    bd_conv2d_shape s = {0};
    s.N = dc->N;
    s.C = dc->C;
    s.H = dc->H;
    s.W = dc->W;
    s.M = dc->M;
    s.KH = s.stride_h = dc->KH;
    s.KW = s.stride_w = dc->KW;
    s.group = s.dil_h = s.dil_w = 1;
    s.OH = s.H * s.KH;
    s.OW = s.W * s.KW;
    if (!bd_deconv_shape_valid(&s)) {
        g_failed++;
        printf("FAIL deconv %s: shape not valid\n", dc->name);
        return;
    }
    const int64_t taps = s.KH * s.KW, xn = s.N * s.C * s.H * s.W, yn = s.N * s.M * s.OH * s.OW;
    float *x = frandom(xn), *w = frandom(s.C * s.M * taps), *bias = frandom(s.M);
    int use_bias = (int)irand(4) != 0;
    float *wp = xmalloc(bd_f32_deconv_packed_w_bytes(&s));
    bd_f32_deconv_pack_w(&s, w, wp);
    double *ref = xmalloc((size_t)yn * sizeof(double)), *mag = xmalloc((size_t)yn * sizeof(double));
    const int64_t n = s.N - 1; /* the batch item computed */
    for (int64_t m = 0; m < s.M; m++)
        for (int64_t oh = 0; oh < s.OH; oh++)
            for (int64_t ow = 0; ow < s.OW; ow++) {
                double acc = use_bias ? bias[m] : 0.0, mg = use_bias ? fabs(bias[m]) : 0.0;
                for (int64_t c = 0; c < s.C; c++) {
                    double v = (double)x[((n * s.C + c) * s.H + oh / s.KH) * s.W + ow / s.KW] *
                               w[((c * s.M + m) * s.KH + oh % s.KH) * s.KW + ow % s.KW];
                    acc += v;
                    mg += fabs(v);
                }
                int64_t o = ((n * s.M + m) * s.OH + oh) * s.OW + ow;
                ref[o] = act_ref(acc, dc->act, -0.5f, 0.75f);
                mag[o] = mg;
            }
    char what[160];
    snprintf(what, sizeof what, "deconv %s", dc->name);
    check_conv_tiles(what, &s, x, wp, use_bias ? bias : NULL, dc->act, ref, mag,
                     bd_f32_deconv_tile, bd_f32_deconv_scratch_bytes);
    free(x);
    free(w);
    free(bias);
    free(wp);
    free(ref);
    free(mag);
}

static void test_deconv_all(void) {
    reseed(4);
    /* name, N C H W M KH KW act */
    static const deconv_case cases[] = {
        {"2x2", 1, 16, 9, 9, 24, 2, 2, 0},
        {"2x2 relu batch2", 2, 7, 5, 6, 13, 2, 2, BD_ACT_RELU},
        {"3x3 clip", 1, 5, 4, 7, 9, 3, 3, BD_ACT_CLIP},
        {"2x1", 1, 12, 6, 5, 10, 2, 1, 0},
        {"1x1", 1, 8, 5, 5, 6, 1, 1, BD_ACT_SILU},
        {"u-net 128->64 16x16", 1, 128, 16, 16, 64, 2, 2, 0},
        {"one pixel", 1, 3, 1, 1, 4, 2, 2, 0},
    };
    int before = g_failed, count = 0;
    g_rel_err_max = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int rep = 0; rep < (g_quick ? 1 : 3); rep++) {
            test_deconv(&cases[i]);
            count++;
        }
    printf("%s deconv %s: %d cases, largest error %.2g of the sum of |products|\n",
           g_failed == before ? "ok" : "FAILED", bd_kernels_isa_name(bd_kernels_get_isa()), count,
           g_rel_err_max);
}

/* ---- 2-D max pooling ------------------------------------------------------------------------- */

typedef struct pool_case {
    const char *name;
    int64_t C, H, W, KH, KW, sh, sw, pt, pl, pb, pr;
} pool_case;

/* The output cut into random tiles (channels, rows, columns), each tile's call checked to write
 * exactly its cells, all compared bit for bit with a scalar reference; the input allocated to
 * its exact size (the sanitised build catches a read past it), with NaNs sprinkled in (a NaN tap
 * never wins). */
static void test_pool(const pool_case *pc) {
    bd_pool2d_shape s = {pc->H,
                         pc->W,
                         (pc->H + pc->pt + pc->pb - pc->KH) / pc->sh + 1,
                         (pc->W + pc->pl + pc->pr - pc->KW) / pc->sw + 1,
                         pc->KH,
                         pc->KW,
                         pc->sh,
                         pc->sw,
                         pc->pt,
                         pc->pl};
    const int64_t C = pc->C, nx = C * s.H * s.W, ny = C * s.OH * s.OW;
    float *x = frandom(nx);
    for (int64_t i = 0; i < nx / 50; i++)
        x[irand(nx)] = NAN;
    float *ref = xmalloc((size_t)ny * sizeof(float)),
          *y = xmalloc((size_t)(ny + 16) * sizeof(float));
    for (int64_t c = 0; c < C; c++)
        for (int64_t oh = 0; oh < s.OH; oh++)
            for (int64_t ow = 0; ow < s.OW; ow++) {
                float v = -INFINITY;
                for (int64_t kh = 0; kh < s.KH; kh++)
                    for (int64_t kw = 0; kw < s.KW; kw++) {
                        const int64_t ih = oh * s.stride_h - s.pad_top + kh;
                        const int64_t iw = ow * s.stride_w - s.pad_left + kw;
                        if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                        const float t = x[(c * s.H + ih) * s.W + iw];
                        if (t > v) v = t;
                    }
                ref[(c * s.OH + oh) * s.OW + ow] = v;
            }
    for (int64_t i = 0; i < ny + 16; i++)
        y[i] = 12345.0f;
    int64_t cuts[3][4];
    const int64_t ext[3] = {C, s.OH, s.OW};
    for (int d = 0; d < 3; d++) { /* [0, a, b, ext]: up to three pieces */
        int64_t a = irand(ext[d] + 1), b = irand(ext[d] + 1);
        cuts[d][0] = 0, cuts[d][1] = a < b ? a : b, cuts[d][2] = a < b ? b : a, cuts[d][3] = ext[d];
    }
    int ok = 1;
    unsigned char *done = calloc((size_t)ny, 1);
    for (int ic = 0; ic < 3; ic++)
        for (int ir = 0; ir < 3; ir++)
            for (int iw = 0; iw < 3; iw++) {
                const int64_t c0 = cuts[0][ic], c1 = cuts[0][ic + 1], r0 = cuts[1][ir],
                              r1 = cuts[1][ir + 1], w0 = cuts[2][iw], w1 = cuts[2][iw + 1];
                bd_f32_maxpool2d_tile(&s, x, y, c0, c1, r0, r1, w0, w1);
                for (int64_t c = c0; c < c1; c++)
                    for (int64_t oh = r0; oh < r1; oh++)
                        for (int64_t ow = w0; ow < w1; ow++)
                            done[(c * s.OH + oh) * s.OW + ow] = 1;
                for (int64_t i = 0; i < ny; i++) /* the tiles so far written, nothing else */
                    if (done[i] ? memcmp(&y[i], &ref[i], 4) != 0 : y[i] != 12345.0f) ok = 0;
            }
    free(done);
    for (int64_t i = 0; i < ny; i++)
        if (memcmp(&y[i], &ref[i], 4) != 0) ok = 0;
    for (int64_t i = ny; i < ny + 16; i++)
        if (y[i] != 12345.0f) ok = 0;
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        printf("FAILED maxpool %s (%s)\n", pc->name, bd_kernels_isa_name(bd_kernels_get_isa()));
    }
    free(x), free(ref), free(y);
}

static void test_pool_all(void) {
    reseed(6);
    /* name, C H W KH KW sh sw pads (top left bottom right): column stride 1 or 2 up to 3 columns
     * wide on the vector rows (SqueezeNet's and GoogLeNet's ceil-mode pools, ResNet's padded one,
     * UNet's 2x2, GoogLeNet's padded stride-1 branch pools), the rest in C */
    static const pool_case cases[] = {
        {"3x3/2 ceil 111", 3, 111, 111, 3, 3, 2, 2, 0, 0, 1, 1},
        {"3x3/2 ceil 112 (the last window past the edge)", 2, 112, 112, 3, 3, 2, 2, 0, 0, 1, 1},
        {"2x2/2 ceil 13", 3, 13, 13, 2, 2, 2, 2, 0, 0, 1, 1},
        {"3x3/2 pads 2", 2, 20, 37, 3, 3, 2, 2, 2, 2, 2, 2},
        {"3x3/2 2101 columns (runs computed in groups)", 1, 5, 2101, 3, 3, 2, 2, 1, 1, 1, 1},
        {"3x3/2 pad 1 (resnet)", 2, 40, 45, 3, 3, 2, 2, 1, 1, 1, 1},
        {"2x2/2 (unet)", 4, 20, 38, 2, 2, 2, 2, 0, 0, 0, 0},
        {"1x1/2", 2, 9, 33, 1, 1, 2, 2, 0, 0, 0, 0},
        {"3x3/2 pad 1 narrow", 3, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1},
        {"3x2 row stride 1, column stride 2", 2, 11, 67, 3, 2, 1, 2, 1, 0, 1, 1},
        {"3x3/2 13 columns", 5, 27, 27, 3, 3, 2, 2, 0, 0, 0, 0},
        {"5x5/2 (plain C)", 2, 19, 23, 5, 5, 2, 2, 2, 2, 2, 2},
        {"3x3/3 (plain C)", 2, 13, 20, 3, 3, 3, 3, 1, 1, 1, 1},
        {"3x3/1 pad 1 (googlenet's branch pools)", 3, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1},
        {"3x3/1 pad 1 7x7", 4, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1},
        {"3x3/1 pad 1 narrow", 2, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1},
        {"2x3/1 pads 2 and 0", 2, 12, 37, 2, 3, 1, 1, 0, 2, 1, 0},
        {"2x2/1", 2, 6, 21, 2, 2, 1, 1, 0, 0, 0, 0},
        {"windows entirely in the padding", 1, 2, 3, 3, 3, 2, 2, 3, 3, 3, 3},
        {"windows entirely in the padding, wide", 2, 2, 40, 3, 3, 2, 2, 3, 1, 3, 1},
    };
    int before = g_failed, count = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int rep = 0; rep < (g_quick ? 1 : 3); rep++) {
            test_pool(&cases[i]);
            count++;
        }
    printf("%s maxpool %s: %d cases\n", g_failed == before ? "ok" : "FAILED",
           bd_kernels_isa_name(bd_kernels_get_isa()), count);
}

/* ---- 8-bit integer GEMM ---------------------------------------------------------------------- */

/* Random shapes, signedness and zero points, column tiles cut at random points, rows with a
 * stride past K; compared exactly with an int64 reference, guard cells around every row. */
static void test_i8_gemm_all(void) {
    reseed(5);
    /* 32 rows and more with K a multiple of 64 take the AMX tiles where the CPU has them */
    static const int64_t Ms[] = {1, 3, 8, 9, 17, 40, 32, 75}, Ns[] = {1, 5, 31, 32, 33, 70, 100},
                         Ks[] = {1, 3, 4, 5, 64, 131, 300, 128, 256};
    int cases = g_quick ? 12 : 60, bad_cases = 0;
    for (int t = 0; t < cases; t++) {
        int64_t M = Ms[irand(8)], N = Ns[irand(7)], K = Ks[irand(9)];
        int64_t lda = K + irand(3), ldb = N + irand(2), ldc = N + 3;
        int a_signed = (int)irand(2), b_signed = (int)irand(2);
        int32_t a_zero = a_signed ? (int32_t)irand(256) - 128 : (int32_t)irand(256);
        /* B - b_zero within int8: int8 B with b_zero 0 or small values, uint8 around 128 */
        int32_t b_zero = b_signed ? (irand(2) ? 0 : (int32_t)irand(64) - 32) : 128 + (int32_t)irand(9) - 4;
        uint8_t *A = xmalloc((size_t)(M * lda)), *B = xmalloc((size_t)(K * ldb));
        for (int64_t i = 0; i < M * lda; i++)
            A[i] = (uint8_t)rnd();
        for (int64_t i = 0; i < K * ldb; i++) {
            int32_t v = (int32_t)irand(256) - 128 + b_zero; /* B - b_zero in [-128, 127] */
            if (b_signed) v = v < -128 ? -128 : v > 127 ? 127 : v;
            else v = v < 0 ? 0 : v > 255 ? 255 : v;
            B[i] = (uint8_t)v;
        }
        void *Bp = xmalloc(bd_i8_gemm_packed_b_bytes(K, N));
        int ok = bd_i8_gemm_pack_b(K, N, B, ldb, b_signed, b_zero, Bp) == 0;
        int32_t *C = xmalloc((size_t)((M + 2) * ldc) * 4);
        for (int64_t i = 0; i < (M + 2) * ldc; i++)
            C[i] = -7777777;
        scratch sc = scratch_new(bd_i8_gemm_scratch_bytes(K));
        int64_t at[4];
        int parts = cuts(N, 1 + (int)irand(3), at) - 1;
        /* one case in 6 runs in plain C what was packed for this instruction set (an AVX2 one
         * packs for its split tiles, whose corrections plain C then adds) */
        bd_kernels_isa isa = bd_kernels_get_isa();
        if (t % 6 == 5) bd_kernels_set_isa(BD_KERNELS_ISA_PORTABLE);
        for (int p = 0; p < parts; p++)
            bd_i8_gemm_packed_b(M, at[p], at[p + 1], K, A, lda, a_signed, a_zero, Bp, C + ldc, ldc,
                                sc.p);
        bd_kernels_set_isa(isa);
        for (int64_t i = -1; i <= M && ok; i++)
            for (int64_t j = 0; j < ldc && ok; j++) {
                int64_t want = -7777777;
                if (i >= 0 && i < M && j < N) {
                    want = 0;
                    for (int64_t k = 0; k < K; k++) {
                        int64_t a = a_signed ? (int8_t)A[i * lda + k] : A[i * lda + k];
                        int64_t b = b_signed ? (int8_t)B[k * ldb + j] : B[k * ldb + j];
                        want += (a - a_zero) * (b - b_zero);
                    }
                }
                if (C[(i + 1) * ldc + j] != want) {
                    printf("FAIL i8 gemm %lldx%lldx%lld (A %s zero %d, B %s zero %d, %d tiles, %s): "
                           "C[%lld][%lld] = %d, want %lld\n", (long long)M, (long long)N,
                           (long long)K, a_signed ? "int8" : "uint8", a_zero,
                           b_signed ? "int8" : "uint8", b_zero, parts,
                           bd_kernels_isa_name(bd_kernels_get_isa()), (long long)i, (long long)j,
                           C[(i + 1) * ldc + j], (long long)want);
                    ok = 0;
                }
            }
        if (ok) g_passed++;
        else g_failed++, bad_cases++;
        free(sc.base);
        free(C);
        free(Bp);
        free(A);
        free(B);
    }
    /* a B - b_zero outside int8 is refused */
    uint8_t b[2] = {0, 255};
    unsigned char buf[512];
    int refused = bd_i8_gemm_pack_b(1, 2, b, 2, 0, 0, buf) == -1 &&
                  bd_i8_gemm_pack_b(BD_I8_GEMM_MAX_K + 1, 0, b, 0, 0, 0, buf) == -1;
    if (refused) g_passed++;
    else g_failed++, printf("FAIL i8 gemm: an out-of-range B or K was packed\n");
    printf("%s i8 gemm (%s): %d cases exact\n", bad_cases || !refused ? "FAILED" : "ok",
           bd_kernels_isa_name(bd_kernels_get_isa()), cases - bad_cases);
}

/* ---- 8-bit integer convolution --------------------------------------------------------------- */

/* Random shapes (strides, dilations, pads, 1x1 to 7x7), signedness, zero points and an optional
 * int32 bias; the output cut into random channel x row tiles; compared exactly with an int64
 * direct convolution whose padding takes x_zero (contributes nothing), guard cells around y. A
 * float result is compared bit for bit with the kernel's float steps, a requantized one (and a
 * residual added to it, requantized again) with QuantizeLinear's steps in plain C. */
static void test_i8_conv_all(void) {
    reseed(6);
    int cases = g_quick ? 10 : 50, bad_cases = 0, requantized = 0, residuals = 0;
    for (int t = 0; t < cases; t++) {
        bd_conv2d_shape s = {0};
        s.N = 1 + irand(2), s.C = 1 + irand(20), s.M = 1 + irand(40);
        s.KH = 1 + irand(4) * 2 * (irand(3) == 0), s.KW = irand(4) == 0 ? s.KH + 1 : s.KH;
        if (s.KH > 7) s.KH = 7;
        if (s.KW > 7) s.KW = 7;
        s.stride_h = 1 + irand(2), s.stride_w = irand(3) == 0 ? 3 - s.stride_h : s.stride_h;
        s.dil_h = 1 + (irand(5) == 0), s.dil_w = s.dil_h;
        s.pad_top = irand(s.KH), s.pad_left = irand(s.KW);
        s.H = s.KH * s.dil_h + irand(12), s.W = s.KW * s.dil_w + irand(40);
        if (t < 3) { /* the shapes of the im2col's fast paths: ResNet's 3x3 "same", its strided */
            static const int64_t fixed[3][4] = {{3, 1, 1, 56}, {3, 2, 1, 57}, {7, 2, 3, 70}};
            s.KH = s.KW = fixed[t][0], s.stride_h = s.stride_w = fixed[t][1];
            s.pad_top = s.pad_left = fixed[t][2], s.W = fixed[t][3], s.dil_h = s.dil_w = 1;
            s.H = 5 + irand(8);
        }
        bool deep = t >= cases - 6; /* many channels, short rows: the channels-in-lanes kernel */
        if (deep) {
            s.C = 24 + irand(50), s.M = 1 + irand(70), s.KH = s.KW = 3, s.dil_h = s.dil_w = 1;
            s.pad_top = s.pad_left = 1, s.H = 3 + irand(10), s.W = 3 + irand(20);
        }
        s.OH = (s.H + 2 * s.pad_top - (s.KH - 1) * s.dil_h - 1) / s.stride_h + 1;
        s.OW = (s.W + 2 * s.pad_left - (s.KW - 1) * s.dil_w - 1) / s.stride_w + 1;
        s.group = 1;
        int x_signed = (int)irand(2), w_signed = (int)irand(2), with_bias = (int)irand(2);
        int scaled = deep || irand(2), w_scales = irand(2) ? (int)s.M : 1; /* a float result */
        int32_t x_zero = x_signed ? (int32_t)irand(256) - 128 : (int32_t)irand(256);
        int32_t w_zero = irand(2) ? 0 : w_signed ? (int32_t)irand(256) - 128 : (int32_t)irand(256);
        int64_t K = s.C * s.KH * s.KW, xn = s.N * s.C * s.H * s.W, yn = s.N * s.M * s.OH * s.OW;
        uint8_t *x = xmalloc((size_t)xn), *w = xmalloc((size_t)(s.M * K));
        int32_t *bias = xmalloc((size_t)s.M * 4), *y = xmalloc((size_t)(yn + 2) * 4);
        float *fbias = xmalloc((size_t)s.M * 4), *w_scale = xmalloc((size_t)s.M * 4);
        float x_scale = 0.001f + (float)irand(1000) * 1e-5f;
        for (int64_t i = 0; i < xn; i++) x[i] = (uint8_t)rnd();
        /* two thirds of the cases keep w - w_zero within int8, which the direct path computes:
         * half of those anywhere in it (on AVX2, a correction for about half the weights), half
         * as a model's are, most near w_zero and one in 30 large (a few corrections) */
        int w_kind = deep ? 1 + (int)irand(2) : (int)irand(3);
        for (int64_t i = 0; i < s.M * K; i++) {
            int32_t d = w_kind == 1 || irand(30) == 0 ? (int32_t)irand(256) - 128
                                                      : (int32_t)irand(41) - 20;
            int32_t v = w_zero + d, lo = w_signed ? -128 : 0;
            v = v < lo ? lo : v > lo + 255 ? lo + 255 : v;
            w[i] = w_kind ? (uint8_t)v : (uint8_t)rnd();
        }
        for (int64_t m = 0; m < s.M; m++) {
            bias[m] = (int32_t)irand(200001) - 100000;
            fbias[m] = (float)bias[m] * 1e-3f;
            w_scale[m] = 0.002f + (float)irand(1000) * 1e-5f;
        }
        for (int64_t i = 0; i < yn + 2; i++) y[i] = -7777777;
        /* a float result requantized by the tile (a QuantizeLinear absorbed), where it can be */
        int requant = scaled && bd_i8_conv2d_direct_ok(&s, w, w_signed, w_zero) &&
                      (deep ? t % 3 != 0 : irand(2));
        static const float los[3] = {-INFINITY, 0.0f, -20.0f}, his[3] = {INFINITY, INFINITY, 30.0f};
        int clamp = (int)irand(3), q_signed = (int)irand(2);
        bd_i8_requant rq = {los[clamp], his[clamp], 0.05f + (float)irand(100) * 0.01f,
                            (float)(q_signed ? (int)irand(256) - 128 : (int)irand(256)), q_signed};
        if (requant && requantized % 4 == 3) /* a tiny scale: quotients past int32, saturated */
            rq.scale = 1e-9f;
        uint8_t *yq = xmalloc((size_t)(yn + 2));
        memset(yq, 0xa5, (size_t)(yn + 2));
        /* two thirds of the requantized cases then add an 8-bit residual (a QuantizeLinear'd
         * residual Add absorbed after the requantization), requantized again by other constants */
        int resid = requant && requantized % 3 != 0;
        int r_signed = (int)irand(2), o_signed = (int)irand(2);
        int oclamp = (int)irand(3);
        bd_i8_residual ra = {0.02f + (float)irand(100) * 0.002f, (float)((int)irand(21) - 10),
                             0.01f + (float)irand(100) * 0.003f,
                             (float)(r_signed ? (int)irand(256) - 128 : (int)irand(256)), r_signed,
                             {los[oclamp], his[oclamp], 0.03f + (float)irand(100) * 0.004f,
                              (float)(o_signed ? (int)irand(256) - 128 : (int)irand(256)),
                              o_signed}};
        if (residuals % 3 == 1) /* scales of 2^-k: sums on halves, ties for the rounding */
            ra.y_scale = 0.5f, ra.r_scale = 0.25f, ra.out.scale = 1.0f;
        else if (residuals % 3 == 2) /* a tiny scale: quotients past int32, saturated */
            ra.out.scale = 1e-9f;
        uint8_t *res = xmalloc((size_t)yn);
        for (int64_t i = 0; i < yn; i++) res[i] = (uint8_t)rnd();
        int ok = bd_i8_conv2d_shape_ok(&s);
        void *wp = xmalloc(bd_i8_conv2d_packed_w_bytes(&s));
        bd_i8_conv2d_pack_w(&s, w, w_signed, w_zero, scaled ? &x_scale : NULL, w_scale, w_scales,
                            requant, wp);
        int64_t ch[4], rows[4];
        int nch = cuts(s.M, 1 + (int)irand(3), ch) - 1, nrow = cuts(s.OH, 1 + (int)irand(3), rows) - 1;
        int64_t most = 0;
        for (int r = 0; r < nrow; r++) most = rows[r + 1] - rows[r] > most ? rows[r + 1] - rows[r] : most;
        scratch sc = scratch_new(bd_i8_conv2d_scratch_bytes(&s, most));
        /* one case in 6 runs in plain C what was packed for this instruction set (AVX2's split
         * weights, whose corrections plain C then adds) */
        bd_kernels_isa isa = bd_kernels_get_isa();
        if (t % 6 == 5) bd_kernels_set_isa(BD_KERNELS_ISA_PORTABLE);
        for (int64_t n = 0; n < s.N; n++)
            for (int a = 0; a < nch; a++)
                for (int r = 0; r < nrow; r++) {
                    if (resid) {
                        bd_i8_conv2d_tile_requant_add(&s, x, x_signed, x_zero, wp,
                                                      with_bias ? fbias : NULL, &rq, &ra, res,
                                                      yq + 1, n, ch[a], ch[a + 1], rows[r],
                                                      rows[r + 1], sc.p);
                        continue;
                    }
                    if (requant) {
                        bd_i8_conv2d_tile_requant(&s, x, x_signed, x_zero, wp,
                                                  with_bias ? fbias : NULL, &rq, yq + 1, n, ch[a],
                                                  ch[a + 1], rows[r], rows[r + 1], sc.p);
                        continue;
                    }
                    bd_i8_conv2d_tile(&s, x, x_signed, x_zero, wp,
                                      with_bias ? (scaled ? (void *)fbias : (void *)bias) : NULL,
                                      y + 1, n, ch[a], ch[a + 1], rows[r], rows[r + 1], sc.p);
                }
        bd_kernels_set_isa(isa);
        ok = ok && y[0] == -7777777 && y[yn + 1] == -7777777 && yq[0] == 0xa5 && yq[yn + 1] == 0xa5;
        for (int64_t n = 0; n < s.N && ok; n++)
            for (int64_t m = 0; m < s.M && ok; m++)
                for (int64_t oh = 0; oh < s.OH && ok; oh++)
                    for (int64_t ow = 0; ow < s.OW && ok; ow++) {
                        int64_t want = with_bias && !scaled ? bias[m] : 0;
                        for (int64_t c = 0; c < s.C; c++)
                            for (int64_t kh = 0; kh < s.KH; kh++)
                                for (int64_t kw = 0; kw < s.KW; kw++) {
                                    int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dil_h;
                                    int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dil_w;
                                    if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                                    uint8_t xb = x[((n * s.C + c) * s.H + ih) * s.W + iw];
                                    uint8_t wb = w[m * K + (c * s.KH + kh) * s.KW + kw];
                                    int64_t xv = x_signed ? (int8_t)xb : xb, wv = w_signed ? (int8_t)wb : wb;
                                    want += (xv - x_zero) * (wv - w_zero);
                                }
                        int32_t got = y[1 + ((n * s.M + m) * s.OH + oh) * s.OW + ow];
                        if (scaled) { /* the kernel's float expression, bit for bit */
                            float k = x_scale * w_scale[w_scales > 1 ? m : 0];
                            float f = (float)(int32_t)want * k + (with_bias ? fbias[m] : 0.0f), gf;
                            if (requant) { /* then the clamp and QuantizeLinear's steps */
                                f = f < rq.lo ? rq.lo : f > rq.hi ? rq.hi : f;
                                float q = nearbyintf(f / rq.scale) + rq.zero,
                                      qlo = q_signed ? -128.0f : 0.0f;
                                q = q < qlo ? qlo : q > qlo + 255.0f ? qlo + 255.0f : q;
                                int64_t at = ((n * s.M + m) * s.OH + oh) * s.OW + ow;
                                uint8_t gq = yq[1 + at];
                                int32_t wantq = (int32_t)q, gotq = q_signed ? (int8_t)gq : gq;
                                if (resid) { /* both dequantized, added, requantized */
                                    float ya = ((float)wantq - ra.y_zero) * ra.y_scale;
                                    float rb = ((float)(r_signed ? (int8_t)res[at] : res[at]) -
                                                ra.r_zero) * ra.r_scale;
                                    f = ya + rb;
                                    f = f < ra.out.lo ? ra.out.lo : f > ra.out.hi ? ra.out.hi : f;
                                    q = nearbyintf(f / ra.out.scale) + ra.out.zero;
                                    qlo = o_signed ? -128.0f : 0.0f;
                                    q = q < qlo ? qlo : q > qlo + 255.0f ? qlo + 255.0f : q;
                                    wantq = (int32_t)q, gotq = o_signed ? (int8_t)gq : gq;
                                }
                                if (gotq == wantq) continue;
                                printf("FAIL i8 conv (requantized%s): %d, want %d (%g)\n",
                                       resid ? ", residual added" : "", gotq, wantq, (double)f);
                                ok = 0;
                                continue;
                            }
                            memcpy(&gf, &got, 4);
                            if (gf == f) continue;
                            printf("FAIL i8 conv (float result): %g, want %g\n", (double)gf, (double)f);
                            ok = 0;
                            continue;
                        }
                        if (got != want) {
                            printf("FAIL i8 conv N%lld C%lld %lldx%lld M%lld k%lldx%lld s%lldx%lld "
                                   "d%lld p%lld,%lld (x %s zero %d, w %s zero %d, %s): y[%lld][%lld]"
                                   "[%lld][%lld] = %d, want %lld\n", (long long)s.N, (long long)s.C,
                                   (long long)s.H, (long long)s.W, (long long)s.M, (long long)s.KH,
                                   (long long)s.KW, (long long)s.stride_h, (long long)s.stride_w,
                                   (long long)s.dil_h, (long long)s.pad_top, (long long)s.pad_left,
                                   x_signed ? "int8" : "uint8", x_zero, w_signed ? "int8" : "uint8",
                                   w_zero, bd_kernels_isa_name(bd_kernels_get_isa()), (long long)n,
                                   (long long)m, (long long)oh, (long long)ow, got, (long long)want);
                            ok = 0;
                        }
                    }
        if (ok) g_passed++;
        else g_failed++, bad_cases++;
        free(sc.base);
        free(wp);
        free(x);
        free(w);
        free(bias);
        free(fbias);
        free(w_scale);
        free(y);
        free(yq);
        free(res);
        requantized += requant;
        residuals += resid;
    }
    printf("%s i8 conv (%s): %d cases exact, %d of them requantized, %d of those with a residual\n",
           bad_cases ? "FAILED" : "ok", bd_kernels_isa_name(bd_kernels_get_isa()),
           cases - bad_cases, requantized, residuals);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static void test_dispatch(void) {
    int ok = bd_kernels_isa_supported(BD_KERNELS_ISA_PORTABLE) &&
             bd_kernels_set_isa(BD_KERNELS_ISA_PORTABLE) == 0 &&
             bd_kernels_get_isa() == BD_KERNELS_ISA_PORTABLE && bd_kernels_gemm_mr() > 0 &&
             bd_kernels_gemm_nr() > 0 && bd_kernels_set_isa((bd_kernels_isa)99) == -1 &&
             bd_kernels_get_isa() == BD_KERNELS_ISA_PORTABLE &&
             bd_kernels_set_isa(BD_KERNELS_ISA_AUTO) == 0 &&
             bd_kernels_get_isa() != BD_KERNELS_ISA_AUTO;
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        printf("FAIL dispatch\n");
    }
    printf("%s dispatch: best is %s (%s)\n", ok ? "ok" : "FAILED",
           bd_kernels_isa_name(bd_kernels_get_isa()), bd_kernels_gemm_name());
}

/* A buffer packed under one instruction set is computed with that set's kernel even after the
 * choice changes. */
static void test_packed_across_isa(void) {
    if (!bd_kernels_isa_supported(BD_KERNELS_ISA_AVX2)) return;
    gemm_case c = {23, 41, 77, 0, 1, 1, 0, 0, 0};
    gemm_data d = gemm_data_new(c);
    bd_kernels_set_isa(BD_KERNELS_ISA_AVX2);
    float *Bp = xmalloc(bd_f32_gemm_packed_b_bytes(c.K, c.N));
    bd_f32_gemm_pack_b(c.K, c.N, d.B, d.ldb, c.transB, Bp);
    bd_kernels_set_isa(BD_KERNELS_ISA_PORTABLE);
    unsigned char *mask;
    float *C = gemm_out(&d, 0, c.M, 0, c.N, &mask);
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(c.M, c.N, c.K));
    bd_f32_gemm_packed_b(c.M, 0, c.N, c.K, d.A, d.lda, c.transA, Bp, C + d.ldc, d.ldc, d.bn, NULL,
                         0, 0, 0.0f, 0.0f, s.p);
    compare("packed under avx2, computed after switching to portable", C, d.ref, d.mag, mask,
            (c.M + 2) * d.ldc);
    bd_kernels_set_isa(BD_KERNELS_ISA_AUTO);
    free(s.base);
    free(C);
    free(mask);
    free(Bp);
    gemm_data_free(&d);
}

/* ---- bfloat16 GEMM -------------------------------------------------------------------------- */

/* bd_bf16_gemm_packed_b against double sums of the bfloat16-rounded operands (tight: only fp32
 * summation), in column tiles at multiples of 32 and row tiles, with every epilogue; and the
 * error against the unrounded operands' sums reported (the precision's own cost). */
static void test_bf16_gemm_all(void) {
    reseed(31);
    static const int64_t shapes[][3] = {{1, 1, 1},     {5, 31, 3},    {12, 32, 2},  {13, 33, 255},
                                        {37, 100, 256}, {250, 70, 257}, {30, 64, 600}, {24, 96, 768}};
    double worst_vs_fp32 = 0;
    const int n = g_quick ? 4 : (int)(sizeof shapes / sizeof shapes[0]);
    for (int si = 0; si < n; si++)
        for (int variant = 0; variant < 4; variant++) {
            gemm_case c = {shapes[si][0], shapes[si][1], shapes[si][2], variant & 1, variant >> 1 & 1,
                           variant != 1, variant == 2, variant == 3, variant == 3 ? BD_ACT_GELU : variant};
            gemm_data d = gemm_data_new(c); /* ref, mag: the unrounded operands */
            double *ref16 = xmalloc((size_t)((c.M + 2) * d.ldc) * sizeof(double));
            for (int64_t i = 0; i < c.M; i++)
                for (int64_t j = 0; j < c.N; j++) {
                    double sum = 0;
                    for (int64_t k = 0; k < c.K; k++)
                        sum += bf16_ref(c.transA ? d.A[k * d.lda + i] : d.A[i * d.lda + k]) *
                               bf16_ref(c.transB ? d.B[j * d.ldb + k] : d.B[k * d.ldb + j]);
                    int64_t o = (i + 1) * d.ldc + j;
                    if (c.accumulate) sum += d.C0[o];
                    if (c.bias_n) sum += d.bn[j];
                    if (c.bias_m) sum += d.bm[i];
                    ref16[o] = act_ref(sum, c.act, -0.5f, 0.75f);
                }
            void *Bp = xmalloc(bd_bf16_gemm_packed_b_bytes(c.K, c.N));
            bd_bf16_gemm_pack_b(c.K, c.N, d.B, d.ldb, c.transB, Bp);
            unsigned char *mask;
            float *C = gemm_out(&d, 0, c.M, 0, c.N, &mask);
            const int64_t m_mid = irand(c.M + 1);
            scratch s = scratch_new(bd_bf16_gemm_scratch_bytes(c.M, c.K));
            for (int64_t n0 = 0; n0 < c.N;) {
                int64_t n1 = n0 + 32 * (1 + irand(3));
                if (n1 > c.N) n1 = c.N;
                const int64_t rows[3] = {0, m_mid, c.M};
                for (int r = 0; r < 2; r++) {
                    const int64_t m0 = rows[r], m1 = rows[r + 1];
                    const float *A = c.transA ? d.A + m0 : d.A + m0 * d.lda;
                    bd_bf16_gemm_packed_b(m1 - m0, n0, n1, c.K, A, d.lda, c.transA, Bp,
                                          C + (m0 + 1) * d.ldc, d.ldc, c.bias_n ? d.bn : NULL,
                                          c.bias_m ? d.bm + m0 : NULL, c.accumulate, c.act, -0.5f,
                                          0.75f, s.p);
                }
                n0 = n1;
            }
            char name[200];
            case_name(name, sizeof name, bd_kernels_cpu_has_bf16() ? "bf16 (vdpbf16ps)" : "bf16 (C)",
                      &c);
            g_rel_tol = 1e-5;
            compare(name, C, ref16, d.mag, mask, (c.M + 2) * d.ldc);
            g_rel_tol = 1e-4;
            for (int64_t t = 0; t < (c.M + 2) * d.ldc; t++)
                if (mask[t]) {
                    double e = fabs((double)C[t] - d.ref[t]) / (d.mag[t] + 1e-3);
                    if (e > worst_vs_fp32) worst_vs_fp32 = e;
                }
            free(s.base);
            free(C);
            free(mask);
            free(Bp);
            free(ref16);
            gemm_data_free(&d);
        }
    printf("ok bf16 gemm (%s): %d shapes x 4 epilogues, within 1e-5 of the sums of the rounded "
           "operands; largest error against the unrounded ones %.2g of the sum of |products|\n",
           bd_kernels_cpu_has_bf16() ? "AVX512_BF16" : "plain C", n, worst_vs_fp32);
}

/* K == 0: only the epilogue; A and B may be NULL then. */
static void test_gemm_k0_null(void) {
    float C[3 * 5], bn[5] = {1, 2, 3, 4, 5}, bm[3] = {10, 20, 30};
    double ref[15], mag[15];
    unsigned char mask[15];
    for (int i = 0; i < 15; i++) {
        C[i] = 100.0f;
        ref[i] = 100.0 + bn[i % 5] + bm[i / 5];
        mag[i] = ref[i];
        mask[i] = 1;
    }
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(3, 5, 0));
    bd_f32_gemm(3, 5, 0, NULL, 0, 0, NULL, 0, 0, C, 5, bn, bm, 1, 0, 0.0f, 0.0f, s.p);
    compare("gemm K=0 with NULL A and B", C, ref, mag, mask, 15);
    free(s.base);
}

/* Every activation on NaN, infinities and values around its bends, on both a full and a partial
 * column tile: NaN must stay NaN (ONNX's Relu, Clip, HardSwish and onnxruntime do), the others
 * match the reference. SiLU below -80 is left out: the vector kernels clamp e^-x to e^80 (so
 * -1e30 gives -2e-5, not -0, and -inf gives -inf where x / (1 + e^-x) is NaN). */
static void test_act_special(void) {
    static const float vals[] = {NAN,  INFINITY, -INFINITY, -1e30f, 1e30f, -3.0f, 3.0f, -3.1f,
                                 2.9f, -0.5f,    0.75f,     0.0f,   -2.0f, 1.0f,  -4.0f, 5.0f};
    enum { NV = sizeof vals / sizeof vals[0], N = 2 * NV + 5 };
    static const int acts[] = {BD_ACT_NONE, BD_ACT_RELU, BD_ACT_CLIP, BD_ACT_SILU,
                               BD_ACT_HARD_SWISH, BD_ACT_GELU};
    const float A[2] = {1.0f, -1.0f};
    float B[N], C[2 * N];
    for (int j = 0; j < N; j++)
        B[j] = vals[j % NV];
    scratch s = scratch_new(bd_f32_gemm_scratch_bytes(2, N, 1));
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        bd_f32_gemm(2, N, 1, A, 1, 0, B, N, 0, C, N, NULL, NULL, 0, acts[a], -0.5f, 0.75f, s.p);
        int bad = -1;
        for (int i = 0; i < 2 * N && bad < 0; i++) {
            double v = (double)A[i / N] * B[i % N];
            if (acts[a] == BD_ACT_SILU && v < -80.0) continue;
            double want = act_ref(v, acts[a], -0.5f, 0.75f);
            bool ok = isnan(want) ? isnan(C[i])
                      : isinf(want) ? C[i] == want
                                    : fabs(C[i] - want) <= 1e-6 * (fabs(want) + 1.0);
            if (!ok) bad = i;
        }
        if (bad < 0) {
            g_passed++;
        } else {
            g_failed++;
            printf("FAIL activation %d on special values (%s): element %d of %g is %g\n", acts[a],
                   bd_kernels_isa_name(bd_kernels_get_isa()), bad,
                   (double)A[bad / N] * B[bad % N], (double)C[bad]);
        }
    }
    free(s.base);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    test_dispatch();
    test_packed_across_isa();
    static const bd_kernels_isa isas[] = {BD_KERNELS_ISA_PORTABLE, BD_KERNELS_ISA_AVX2,
                                          BD_KERNELS_ISA_AVX512};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!bd_kernels_isa_supported(isas[i])) {
            printf("skip %s: not supported by this CPU\n", bd_kernels_isa_name(isas[i]));
            continue;
        }
        bd_kernels_set_isa(isas[i]);
        test_gemm_k0_null();
        test_act_special();
        test_gemm_all();
        test_bf16_gemm_all();
        test_conv_all();
        test_conv_pre_all();
        test_winograd_all();
        test_deconv_all();
        test_pool_all();
        test_i8_gemm_all();
        test_i8_conv_all();
        /* the AVX2 8-bit products by AVX-VNNI (above, where the CPU has it) and by vpmaddwd */
        if (isas[i] == BD_KERNELS_ISA_AVX2 && bd_kernels_avx_vnni_off(1)) {
            printf("the AVX2 8-bit products again without AVX-VNNI:\n");
            test_i8_gemm_all();
            test_i8_conv_all();
        }
        bd_kernels_avx_vnni_off(0);
        /* the AVX-512 8-bit products on AMX tiles (above, where the CPU has them) and by VNNI */
        if (isas[i] == BD_KERNELS_ISA_AVX512 && bd_kernels_amx_off(1)) {
            printf("the AVX-512 8-bit products again without AMX:\n");
            test_i8_gemm_all();
            test_i8_conv_all();
        }
        bd_kernels_amx_off(0);
    }
    bd_kernels_set_isa(BD_KERNELS_ISA_AUTO);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
