/* gemm_avx2.c — AVX2 + FMA kernels: the 6x16 GEMM micro-kernel and the depthwise row kernel.
 *
 * Every function carries __attribute__((target("avx2,fma"))), so this file needs no special
 * compiler flags; gemm.c only calls into it after checking the CPU.
 *
 * bd_f32_gemm_avx2_6x16 keeps a 6 x 16 tile of C in 12 ymm accumulators. Each step of k loads
 * one 16-float row of the packed B panel (2 ymm), broadcasts the 6 A values of the packed A
 * panel one at a time and issues 12 FMAs: 12 independent chains cover the FMA latency of two
 * FMA pipes, and 8 loads per 12 FMAs stay under the load ports' rate. A tile with fewer rows
 * uses a copy of the loop specialised for that row count.
 *
 * bd_f32_dwconv_avx2 computes depthwise rows from the zero-padded, stride-split input rows that
 * conv2d.c prepares, so every tap is one unaligned load and one FMA, four blocks of 8 output
 * columns at a time; the 3x3 and 5x5 cases are unrolled.
 */
#include "bd_kernels_internal.h"

#if BD_KERNELS_X86

#include <immintrin.h>

#define BD_AVX2   __attribute__((target("avx2,fma")))
#define BD_INLINE static inline __attribute__((always_inline))

BD_INLINE BD_AVX2 __m256 silu8(__m256 x) {
    /* t = -x clamped as bd_kernels_internal.h explains, so that e^t = e^-x */
    __m256 t = _mm256_sub_ps(_mm256_setzero_ps(), x);
    t = _mm256_max_ps(_mm256_set1_ps(-87.0f), _mm256_min_ps(_mm256_set1_ps(80.0f), t));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504089f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(BD_LN2_HI), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(BD_LN2_LO), r);
    __m256 y = _mm256_set1_ps(BD_EXP_P0);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(BD_EXP_P1));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(BD_EXP_P2));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(BD_EXP_P3));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(BD_EXP_P4));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(BD_EXP_P5));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    e = _mm256_slli_epi32(e, 23); /* the bits of 2^n */
    __m256 d = _mm256_fmadd_ps(y, _mm256_castsi256_ps(e), _mm256_set1_ps(1.0f)); /* 1 + e^-x */
    __m256 q = _mm256_rcp_ps(d);
    q = _mm256_mul_ps(q, _mm256_fnmadd_ps(d, q, _mm256_set1_ps(2.0f)));
    return _mm256_mul_ps(x, q);
}

BD_INLINE BD_AVX2 __m256 act8(__m256 v, int act, __m256 lo, __m256 hi) {
    /* max/min return their second operand when one is NaN: NaN passes through */
    if (act == BD_ACT_RELU) return _mm256_max_ps(_mm256_setzero_ps(), v);
    if (act == BD_ACT_CLIP) return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    if (act == BD_ACT_SILU) return silu8(v);
    if (act == BD_ACT_HARD_SWISH) {
        __m256 t = _mm256_fmadd_ps(v, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
        return _mm256_mul_ps(v, _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_setzero_ps(), t)));
    }
    return v;
}

/* Loads and stores of 8 columns, masked (m: lanes whose sign bit is set) for a partial tile;
 * full tiles keep plain ones, which are faster than the masked forms on AMD cores. */
BD_INLINE BD_AVX2 __m256 load8(const float *p, int part, __m256i m) {
    return part ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}
BD_INLINE BD_AVX2 void store8(float *p, __m256 v, int part, __m256i m) {
    if (part) _mm256_maskstore_ps(p, m, v);
    else _mm256_storeu_ps(p, v);
}

/* The epilogue of one row of the tile: + C, + column bias, + row bias, activation, store; a
 * partial tile reads and writes only the columns in masks m0 (0..7) and m1 (8..15). */
BD_INLINE BD_AVX2 void store_row16(float *cr, __m256 v0, __m256 v1, __m256 bn0, __m256 bn1,
                                   const float *bm, const bd_ukr_epi *ep, __m256 lo, __m256 hi,
                                   int part, __m256i m0, __m256i m1) {
    v0 = _mm256_add_ps(v0, bn0);
    v1 = _mm256_add_ps(v1, bn1);
    if (ep->load_c) {
        v0 = _mm256_add_ps(v0, load8(cr, part, m0));
        v1 = _mm256_add_ps(v1, load8(cr + 8, part, m1));
    }
    if (bm) {
        __m256 b = _mm256_broadcast_ss(bm);
        v0 = _mm256_add_ps(v0, b);
        v1 = _mm256_add_ps(v1, b);
    }
    store8(cr, act8(v0, ep->act, lo, hi), part, m0);
    store8(cr + 8, act8(v1, ep->act, lo, hi), part, m1);
}

/* The same for a half tile (8 columns). */
BD_INLINE BD_AVX2 void store_half(float *cr, __m256 v0, __m256 bn0, const float *bm,
                                  const bd_ukr_epi *ep, __m256 lo, __m256 hi, int part,
                                  __m256i m0) {
    v0 = _mm256_add_ps(v0, bn0);
    if (ep->load_c) v0 = _mm256_add_ps(v0, load8(cr, part, m0));
    if (bm) v0 = _mm256_add_ps(v0, _mm256_broadcast_ss(bm));
    store8(cr, act8(v0, ep->act, lo, hi), part, m0);
}

/* Named accumulators (arrays of vectors end up on the stack with some compilers). */
#define ACC_ZERO(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps()
#define ACC_FMA(r)                                                                                 \
    do {                                                                                           \
        if (R > r) {                                                                               \
            __m256 ar = _mm256_broadcast_ss(a + r);                                                \
            c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                                            \
            if (NV > 1) c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);                                \
        }                                                                                          \
    } while (0)
#define ACC_STORE(r)                                                                               \
    do {                                                                                           \
        if (R > r && NV == 1)                                                                      \
            store_half(c + r * ldc, c##r##0, bn0, ep->bias_m ? ep->bias_m + r : NULL, ep, lo, hi, \
                       part, m0);                                                                  \
        else if (R > r)                                                                            \
            store_row16(c + r * ldc, c##r##0, c##r##1, bn0, bn1,                                   \
                        ep->bias_m ? ep->bias_m + r : NULL, ep, lo, hi, part, m0, m1);             \
    } while (0)

/* R rows (1..6) x NV vectors of 8 columns (2: the whole tile, 1: its first half). */
BD_INLINE BD_AVX2 void ukr_6x16(const int R, const int NV, int64_t kc, const float *a,
                                const float *b, float *c, int64_t ldc, const bd_ukr_epi *ep) {
    ACC_ZERO(0);
    ACC_ZERO(1);
    ACC_ZERO(2);
    ACC_ZERO(3);
    ACC_ZERO(4);
    ACC_ZERO(5);
    for (int r = 0; r < R; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 15), _MM_HINT_T0);
    }
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(b);
        __m256 b1 = NV > 1 ? _mm256_loadu_ps(b + 8) : _mm256_setzero_ps();
        ACC_FMA(0);
        ACC_FMA(1);
        ACC_FMA(2);
        ACC_FMA(3);
        ACC_FMA(4);
        ACC_FMA(5);
        a += 6;
        b += 16;
    }
    /* columns that exist: ep->cols of the 8 * NV computed */
    const int cols = ep->cols < 8 * NV ? ep->cols : 8 * NV, part = cols < 8 * NV;
    const __m256i ncols = _mm256_set1_epi32(cols);
    const __m256i m0 = _mm256_cmpgt_epi32(ncols, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i m1 = _mm256_cmpgt_epi32(ncols, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
    __m256 bn0 = _mm256_setzero_ps(), bn1 = _mm256_setzero_ps();
    if (ep->bias_n) {
        bn0 = load8(ep->bias_n, part, m0);
        if (NV > 1) bn1 = load8(ep->bias_n + 8, part, m1);
    }
    const __m256 lo = _mm256_set1_ps(ep->act_min), hi = _mm256_set1_ps(ep->act_max);
    ACC_STORE(0);
    ACC_STORE(1);
    ACC_STORE(2);
    ACC_STORE(3);
    ACC_STORE(4);
    ACC_STORE(5);
}
#undef ACC_ZERO
#undef ACC_FMA
#undef ACC_STORE

static BD_AVX2 void bd_f32_gemm_avx2_6x16(int64_t kc, const float *a, const float *b, float *c,
                                          int64_t ldc, int m, const bd_ukr_epi *ep) {
    switch (m) {
    case 6: ukr_6x16(6, 2, kc, a, b, c, ldc, ep); break;
    case 5: ukr_6x16(5, 2, kc, a, b, c, ldc, ep); break;
    case 4: ukr_6x16(4, 2, kc, a, b, c, ldc, ep); break;
    case 3: ukr_6x16(3, 2, kc, a, b, c, ldc, ep); break;
    case 2: ukr_6x16(2, 2, kc, a, b, c, ldc, ep); break;
    default: ukr_6x16(1, 2, kc, a, b, c, ldc, ep); break;
    }
}

/* The first 8 columns only (for column edges with at most 8 columns left). */
static BD_AVX2 void bd_f32_gemm_avx2_6x8(int64_t kc, const float *a, const float *b, float *c,
                                         int64_t ldc, int m, const bd_ukr_epi *ep) {
    switch (m) {
    case 6: ukr_6x16(6, 1, kc, a, b, c, ldc, ep); break;
    case 5: ukr_6x16(5, 1, kc, a, b, c, ldc, ep); break;
    case 4: ukr_6x16(4, 1, kc, a, b, c, ldc, ep); break;
    case 3: ukr_6x16(3, 1, kc, a, b, c, ldc, ep); break;
    case 2: ukr_6x16(2, 1, kc, a, b, c, ldc, ep); break;
    default: ukr_6x16(1, 1, kc, a, b, c, ldc, ep); break;
    }
}

/* ---- depthwise rows ------------------------------------------------------------------------ */

/* All output rows of a job, as items of 8 output columns (row o, columns 8b..8b+7), four items
 * at a time so that four independent FMA chains hide the FMA latency however narrow the rows
 * are. Reads past a row's last column stay inside the zero-padded prepared row; stores are cut
 * at OW. T > 0: the tap count known at compile time (weights then stay in registers). */
BD_INLINE BD_AVX2 void dw_items(const int T, const bd_dw_job *j) {
    const int64_t taps = T > 0 ? T : j->KH * j->KW;
    const int64_t *off = j->tap_off;
    const float *w = j->w;
    const __m256 bias = _mm256_set1_ps(j->bias);
    const __m256 lo = _mm256_set1_ps(j->act_min), hi = _mm256_set1_ps(j->act_max);
    const int64_t OW = j->OW, nb = (OW + 7) / 8, total = j->nrows_out * nb;
    const int64_t rstride = j->sh * j->sw * j->row_len;
    for (int64_t it = 0; it < total; it += 4) {
        const float *src[4];
        float *dst[4];
        int64_t n[4];
        for (int i = 0; i < 4; i++) {
            int64_t item = it + i < total ? it + i : it; /* spare lanes recompute the first item */
            int64_t o = item / nb, ow = item % nb * 8;
            src[i] = j->rows + o * rstride + ow;
            dst[i] = j->out + o * OW + ow;
            n[i] = it + i < total ? (OW - ow < 8 ? OW - ow : 8) : 0;
        }
        __m256 s0 = bias, s1 = bias, s2 = bias, s3 = bias;
        for (int64_t t = 0; t < taps; t++) {
            __m256 wt = _mm256_broadcast_ss(w + t);
            s0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(src[0] + off[t]), s0);
            s1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(src[1] + off[t]), s1);
            s2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(src[2] + off[t]), s2);
            s3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(src[3] + off[t]), s3);
        }
        __m256 v[4] = {act8(s0, j->act, lo, hi), act8(s1, j->act, lo, hi), act8(s2, j->act, lo, hi),
                       act8(s3, j->act, lo, hi)};
        for (int i = 0; i < 4; i++) {
            if (n[i] == 8) {
                _mm256_storeu_ps(dst[i], v[i]);
            } else if (n[i] > 0) {
                float t8[8];
                _mm256_storeu_ps(t8, v[i]);
                for (int64_t e = 0; e < n[i]; e++)
                    dst[i][e] = t8[e];
            }
        }
    }
}

BD_AVX2 void bd_f32_dwconv_avx2(const bd_dw_job *j) {
    switch (j->KH * j->KW) {
    case 9: dw_items(9, j); break;
    case 25: dw_items(25, j); break;
    default: dw_items(0, j); break;
    }
}

const bd_gemm_kernel bd_f32_gemm_kernel_avx2 = {
    "bd_f32_gemm_avx2_6x16", BD_KERNELS_ISA_AVX2, 6, 16, 256, 240, 2048, 512, bd_f32_gemm_avx2_6x16,
    bd_f32_gemm_avx2_6x8,    bd_f32_dwconv_avx2, 1, NULL};

#else
typedef int bd_gemm_avx2_unused; /* ISO C needs a declaration in every translation unit */
#endif
