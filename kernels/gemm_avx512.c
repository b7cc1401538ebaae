/* gemm_avx512.c — the AVX-512F GEMM micro-kernel, 12 x 32, and the direct convolution with 16
 * output channels in the lanes.
 *
 * Same scheme as the AVX2 6x16 kernel at twice the width: a 12 x 32 tile of C lives in 24 zmm
 * accumulators; each step of k loads one 32-float row of the packed B panel (2 zmm) and
 * broadcasts 12 A values, for 24 FMAs. 24 independent chains cover the latency of two FMA
 * pipes; 14 loads per 24 FMAs stay under the load ports' rate. Tiles with fewer rows use a
 * copy of the loop specialised for that row count. Narrow grouped convolutions run on the AVX2
 * kernel's 8 channels in the lanes (bd_f32_conv8_avx2: on a Zen 5 core it was 1.0x to 2.4x as
 * fast per layer as 16-column depthwise rows in zmm, which lose lanes to short rows and column
 * strides); depthwise ones (bd_f32_conv8_avx512) and other direct convolutions
 * (bd_f32_conv16d_avx512) are the AVX2 kernels' schemes with 16 channels in a zmm, on the same
 * interleaved rows.
 *
 * A pre-packed A (the weights: bd_ukr_epi.stream_a) is prefetched BD_STREAM_A_FLOATS ahead. A
 * model's weights are evicted between runs, and this kernel's demand of 4 bytes a cycle from one
 * A stream outruns the hardware prefetchers: ResNet-18's 3x3 512-channel layers read theirs at
 * 3 GB/s and ran at half speed. A pre-packed B (a MatMul's weights: stream_b) is prefetched the
 * same way by the first row tile of its panel, the one that reads it from memory (GPT-2 took
 * 1.17x its time without). Operands packed per call are in L2 already and skip it.
 *
 * Functions carry __attribute__((target("avx512f"))); gemm.c checks the CPU first.
 */
#include "bd_kernels_internal.h"

#if BD_KERNELS_X86

#include <immintrin.h>

#define BD_ROWS_TARGET __attribute__((target("avx512f")))
#define BD_ROWS_MASK16
#include "conv8_rows.h"

#define BD_AVX512 __attribute__((target("avx512f")))
#define BD_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define BD_INLINE static inline __attribute__((always_inline))

/* e^-x for x already clamped to [-80, 87], as bd_kernels_internal.h explains; 2^n applied by
 * vscalefps. The reduction runs on s = x + n ln2 = -r and the polynomial's odd coefficients
 * change sign, which rounds exactly as e^t at t = -x does and saves negating x. */
BD_INLINE BD_AVX512 __m512 exp_neg16(__m512 x) {
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(-1.44269504089f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 s = _mm512_fmadd_ps(n, _mm512_set1_ps(BD_LN2_HI), x);
    s = _mm512_fmadd_ps(n, _mm512_set1_ps(BD_LN2_LO), s);
    __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(-BD_EXP_P0), s, _mm512_set1_ps(BD_EXP_P1));
    y = _mm512_fnmadd_ps(y, s, _mm512_set1_ps(BD_EXP_P2));
    y = _mm512_fnmadd_ps(y, s, _mm512_set1_ps(BD_EXP_P3));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(s, s), _mm512_sub_ps(_mm512_set1_ps(1.0f), s));
    return _mm512_scalef_ps(y, n);
}

/* 1 / d, the estimate refined by one Newton step. */
BD_INLINE BD_AVX512 __m512 recip16(__m512 d) {
    __m512 q = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(q, _mm512_fnmadd_ps(d, q, _mm512_set1_ps(2.0f)));
}

BD_INLINE BD_AVX512 __m512 silu16(__m512 x) {
    /* x clamped as bd_kernels_internal.h explains (NaN kept) */
    __m512 t = _mm512_min_ps(_mm512_set1_ps(87.0f), _mm512_max_ps(_mm512_set1_ps(-80.0f), x));
    return _mm512_mul_ps(x, recip16(_mm512_add_ps(exp_neg16(t), _mm512_set1_ps(1.0f))));
}

/* GELU with bd_kernels_internal.h's erf (NaN stays NaN: it takes the second branch's arithmetic). */
BD_INLINE BD_AVX512 __m512 gelu16(__m512 v) {
    const __m512 x = _mm512_mul_ps(v, _mm512_set1_ps(BD_SQRT1_2));
    const __m512 ax = _mm512_abs_ps(x), z = _mm512_mul_ps(x, x);
    __m512 s = _mm512_fmadd_ps(z, _mm512_set1_ps(BD_ERF_T9), _mm512_set1_ps(BD_ERF_T7));
    s = _mm512_fmadd_ps(z, s, _mm512_set1_ps(BD_ERF_T5));
    s = _mm512_fmadd_ps(z, s, _mm512_set1_ps(BD_ERF_T3));
    s = _mm512_fmadd_ps(z, s, _mm512_set1_ps(BD_ERF_T1));
    const __m512 small = _mm512_mul_ps(ax, s); /* |erf| below 0.5 */
    /* past 10, erf is 1 in float; clamped there, an infinite x gives no inf * 0 */
    const __m512 axc = _mm512_min_ps(ax, _mm512_set1_ps(10.0f)), zc = _mm512_mul_ps(axc, axc);
    const __m512 t = recip16(_mm512_fmadd_ps(axc, _mm512_set1_ps(BD_ERF_P), _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_fmadd_ps(t, _mm512_set1_ps(BD_ERF_A5), _mm512_set1_ps(BD_ERF_A4));
    p = _mm512_fmadd_ps(t, p, _mm512_set1_ps(BD_ERF_A3));
    p = _mm512_fmadd_ps(t, p, _mm512_set1_ps(BD_ERF_A2));
    p = _mm512_fmadd_ps(t, p, _mm512_set1_ps(BD_ERF_A1));
    const __m512 ez = exp_neg16(_mm512_min_ps(_mm512_set1_ps(87.0f), zc));
    const __m512 big = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), ez, _mm512_set1_ps(1.0f));
    __m512 e = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.5f), _CMP_LT_OQ), big, small);
    /* the sign of x back on |erf| */
    e = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(e),
                                            _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

BD_INLINE BD_AVX512 __m512 act16(__m512 v, int act, __m512 lo, __m512 hi) {
    /* max/min return their second operand when one is NaN: NaN passes through */
    if (act == BD_ACT_RELU) return _mm512_max_ps(_mm512_setzero_ps(), v);
    if (act == BD_ACT_CLIP) return _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    if (act == BD_ACT_SILU) return silu16(v);
    if (act == BD_ACT_GELU) return gelu16(v);
    if (act == BD_ACT_HARD_SWISH) {
        __m512 t = _mm512_fmadd_ps(v, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
        return _mm512_mul_ps(v, _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_max_ps(_mm512_setzero_ps(), t)));
    }
    return v;
}

/* The epilogue of one row of the tile: + C, + column bias, + row bias, activation, store; only
 * the columns in masks m0 (0..15) and m1 (16..31) are read or written. */
BD_INLINE BD_AVX512 void store_row32(float *cr, __m512 v0, __m512 v1, __m512 bn0, __m512 bn1,
                                     const float *bm, const bd_ukr_epi *ep, __m512 lo, __m512 hi,
                                     __mmask16 m0, __mmask16 m1) {
    v0 = _mm512_add_ps(v0, bn0);
    v1 = _mm512_add_ps(v1, bn1);
    if (ep->load_c) {
        v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
        v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    if (bm) {
        __m512 b = _mm512_set1_ps(*bm);
        v0 = _mm512_add_ps(v0, b);
        v1 = _mm512_add_ps(v1, b);
    }
    _mm512_mask_storeu_ps(cr, m0, act16(v0, ep->act, lo, hi));
    if (m1) _mm512_mask_storeu_ps(cr + 16, m1, act16(v1, ep->act, lo, hi));
}

/* The same for a half tile (16 columns), whose sums started from the row bias. */
BD_INLINE BD_AVX512 void store_half(float *cr, __m512 v0, __m512 bn0, const bd_ukr_epi *ep,
                                    __m512 lo, __m512 hi, __mmask16 m0) {
    v0 = _mm512_add_ps(v0, bn0);
    if (ep->load_c) v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
    _mm512_mask_storeu_ps(cr, m0, act16(v0, ep->act, lo, hi));
}

/* The epilogue of one row of a direct tile: + C (gathered from the runs), activation, one masked
 * store per run and half. */
BD_INLINE BD_AVX512 void store_runs(float *cr, __m512 v0, __m512 v1, const bd_ukr_epi *ep,
                                    __m512 lo, __m512 hi, const bd_ukr_out *o) {
    if (ep->load_c) {
        __m512 o0 = _mm512_setzero_ps(), o1 = _mm512_setzero_ps();
        for (int s = 0; s < o->nseg; s++) {
            const float *p = cr + o->coff[s];
            o0 = _mm512_mask_loadu_ps(o0, (__mmask16)(o->mask[s] & 0xFFFFu), p);
            o1 = _mm512_mask_loadu_ps(o1, (__mmask16)(o->mask[s] >> 16), p + 16);
        }
        v0 = _mm512_add_ps(v0, o0);
        v1 = _mm512_add_ps(v1, o1);
    }
    v0 = act16(v0, ep->act, lo, hi);
    v1 = act16(v1, ep->act, lo, hi);
    for (int s = 0; s < o->nseg; s++) {
        float *p = cr + o->coff[s];
        _mm512_mask_storeu_ps(p, (__mmask16)(o->mask[s] & 0xFFFFu), v0);
        _mm512_mask_storeu_ps(p + 16, (__mmask16)(o->mask[s] >> 16), v1);
    }
}

enum { STREAM_A = 1, STREAM_B = 2 };

/* Named accumulators (arrays of vectors end up on the stack with some compilers). They start
 * from the row bias: one add a vector fewer in the epilogue, which for the few input channels of
 * MobileNet's expansions (16 to 32 products a sum) is 1.5-2.5% of a layer's time. */
#define ACC_ZERO(r)                                                                                \
    __m512 c##r##0 = R > r && ep->bias_m ? _mm512_set1_ps(ep->bias_m[r]) : _mm512_setzero_ps(),  \
           c##r##1 = c##r##0
#define ACC_FMA(r)                                                                                 \
    do {                                                                                           \
        if (R > r) {                                                                               \
            __m512 ar = _mm512_set1_ps(SA ? (r < 3 ? a : ag[r / 3])[(r % 3) * lda] : a[r]);       \
            c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);                                            \
            if (NV > 1) c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1);                                \
        }                                                                                          \
    } while (0)
#define ACC_STORE(r)                                                                               \
    do {                                                                                           \
        if (R > r && D)                                                                            \
            store_runs(c + r * ldc, c##r##0, c##r##1, ep, lo, hi, out);                           \
        else if (R > r && NV == 1)                                                                 \
            store_half(c + r * ldc, c##r##0, bn0, ep, lo, hi, m0);                                \
        else if (R > r)                                                                            \
            store_row32(c + r * ldc, c##r##0, c##r##1, bn0, bn1, NULL, ep, lo, hi, m0, m1);       \
    } while (0)

/* R rows (1..12) x NV vectors of 16 columns (2: the whole tile, 1: its first half). D (direct):
 * B row k is read in place at b + boff[k] and the tile is stored through `out` (NV == 2). SA:
 * A is read in place (row r at a + r * ep->lda), as MLAS does, instead of from a packed panel:
 * an activation's rows would otherwise be packed again for every column block of C. */
BD_INLINE BD_AVX512 void ukr_12x32(const int R, const int NV, const int D, const int SA, int64_t kc,
                                   const float *a, const float *b, const int64_t *boff, float *c,
                                   int64_t ldc, const bd_ukr_out *out, const bd_ukr_epi *ep) {
    const int64_t lda = SA ? ep->lda : 0;
    /* A in place: rows 3g, 3g + 1 and 3g + 2 at ag[g], ag[g] + lda and ag[g] + 2 lda (for g = 0,
     * a itself), which x86 addresses as base + lda x 4 or x 8: five registers for twelve rows.
     * Twelve row offsets of their own outnumbered the registers, and gcc reloaded two of them from
     * the stack and a vector register every k step (5-8% of the kernel's time on a Zen 4 core). */
    const float *ag[4] = {a, a, a, a};
    for (int g = 1; SA && g < 4 && 3 * g < R; g++) ag[g] = a + 3 * g * lda;
    ACC_ZERO(0);
    ACC_ZERO(1);
    ACC_ZERO(2);
    ACC_ZERO(3);
    ACC_ZERO(4);
    ACC_ZERO(5);
    ACC_ZERO(6);
    ACC_ZERO(7);
    ACC_ZERO(8);
    ACC_ZERO(9);
    ACC_ZERO(10);
    ACC_ZERO(11);
    for (int r = 0; r < R && !D; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 31), _MM_HINT_T0);
    }
/* stream: which pre-packed operand the step prefetches (0: none, STREAM_A, STREAM_B) */
#define K_STEP(stream)                                                                             \
    do {                                                                                           \
        const float *bk = D ? b + boff[k] : b;                                                     \
        __m512 b0 = _mm512_loadu_ps(bk);                                                           \
        __m512 b1 = NV > 1 ? _mm512_loadu_ps(bk + 16) : _mm512_setzero_ps();                       \
        ACC_FMA(0);                                                                                \
        ACC_FMA(1);                                                                                \
        ACC_FMA(2);                                                                                \
        ACC_FMA(3);                                                                                \
        ACC_FMA(4);                                                                                \
        ACC_FMA(5);                                                                                \
        ACC_FMA(6);                                                                                \
        ACC_FMA(7);                                                                                \
        ACC_FMA(8);                                                                                \
        ACC_FMA(9);                                                                                \
        ACC_FMA(10);                                                                               \
        ACC_FMA(11);                                                                               \
        if (stream == STREAM_A) /* (an integer address: it may lie past the panel) */             \
            _mm_prefetch((const char *)((uintptr_t)a + 4 * BD_STREAM_A_FLOATS), _MM_HINT_T0);     \
        if (stream == STREAM_B) {                                                                  \
            _mm_prefetch((const char *)((uintptr_t)b + 4 * BD_STREAM_A_FLOATS), _MM_HINT_T0);     \
            _mm_prefetch((const char *)((uintptr_t)b + 4 * BD_STREAM_A_FLOATS + 64), _MM_HINT_T0);\
        }                                                                                          \
        a += SA ? 1 : 12;                                                                          \
        if (SA) ag[1]++, ag[2]++, ag[3]++;                                                         \
        if (!D) b += 32;                                                                           \
    } while (0)
    if (R == 1 && !D) {
        /* One row (a matrix-vector product, as a classifier's Gemm at batch 1): each vector's
         * FMAs form one dependent chain, one step per FMA latency. Four chains over alternate k
         * steps, summed at the end, run at the load ports' rate instead. A pre-packed B is all
         * the work reads, from memory: its eight lines a step are prefetched 3 KiB ahead (a
         * Zen 4 core streamed a classifier's weights at 14 GB/s without, about 20 with, 21-25
         * with gemm.c's whole depth in one block as well). */
        __m512 p0 = _mm512_setzero_ps(), p1 = p0, q0 = p0, q1 = p0, r0 = p0, r1 = p0;
        const int64_t as = SA ? 1 : 12;
        int64_t k = 0;
        for (; k + 4 <= kc; k += 4, a += 4 * as, b += 128) {
            if (ep->stream_b)
                for (int l = 0; l < 8; l++)
                    _mm_prefetch((const char *)((uintptr_t)b + 4 * BD_STREAM_A_FLOATS + 64 * l),
                                 _MM_HINT_T0);
            const __m512 x0 = _mm512_set1_ps(a[0]), x1 = _mm512_set1_ps(a[as]);
            const __m512 x2 = _mm512_set1_ps(a[2 * as]), x3 = _mm512_set1_ps(a[3 * as]);
            c00 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b), c00);
            p0 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b + 32), p0);
            q0 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(b + 64), q0);
            r0 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(b + 96), r0);
            if (NV > 1) {
                c01 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b + 16), c01);
                p1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b + 48), p1);
                q1 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(b + 80), q1);
                r1 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(b + 112), r1);
            }
        }
        for (; k < kc; k++) K_STEP(0);
        c00 = _mm512_add_ps(_mm512_add_ps(c00, p0), _mm512_add_ps(q0, r0));
        c01 = _mm512_add_ps(_mm512_add_ps(c01, p1), _mm512_add_ps(q1, r1));
    } else if (ep->stream_a && !SA)
        for (int64_t k = 0; k < kc; k++) K_STEP(STREAM_A);
    else if (ep->stream_b && !D)
        for (int64_t k = 0; k < kc; k++) K_STEP(STREAM_B);
    else
        for (int64_t k = 0; k < kc; k++) K_STEP(0);
#undef K_STEP
    /* columns that exist: ep->cols of the 16 * NV computed */
    const int cols = ep->cols < 16 * NV ? ep->cols : 16 * NV;
    const __mmask16 m0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32  ? (__mmask16)0xFFFF
                         : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1)
                                     : (__mmask16)0;
    __m512 bn0 = _mm512_setzero_ps(), bn1 = _mm512_setzero_ps();
    if (ep->bias_n) {
        bn0 = _mm512_maskz_loadu_ps(m0, ep->bias_n);
        if (NV > 1) bn1 = _mm512_maskz_loadu_ps(m1, ep->bias_n + 16);
    }
    const __m512 lo = _mm512_set1_ps(ep->act_min), hi = _mm512_set1_ps(ep->act_max);
    ACC_STORE(0);
    ACC_STORE(1);
    ACC_STORE(2);
    ACC_STORE(3);
    ACC_STORE(4);
    ACC_STORE(5);
    ACC_STORE(6);
    ACC_STORE(7);
    ACC_STORE(8);
    ACC_STORE(9);
    ACC_STORE(10);
    ACC_STORE(11);
}
#undef ACC_ZERO
#undef ACC_FMA
#undef ACC_STORE

/* One copy of the kernel per row count m (1..12), NV vectors of columns, A packed or in place. */
#define GEMM_ROWS(NV, SA)                                                                          \
    do {                                                                                           \
        switch (m) {                                                                               \
        case 12: ukr_12x32(12, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                \
        case 11: ukr_12x32(11, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                \
        case 10: ukr_12x32(10, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                \
        case 9: ukr_12x32(9, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 8: ukr_12x32(8, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 7: ukr_12x32(7, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 6: ukr_12x32(6, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 5: ukr_12x32(5, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 4: ukr_12x32(4, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 3: ukr_12x32(3, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        case 2: ukr_12x32(2, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                  \
        default: ukr_12x32(1, NV, 0, SA, kc, a, b, NULL, c, ldc, NULL, ep); break;                 \
        }                                                                                          \
    } while (0)

static BD_AVX512 void bd_f32_gemm_avx512_12x32(int64_t kc, const float *a, const float *b, float *c,
                                               int64_t ldc, int m, const bd_ukr_epi *ep) {
    if (ep->lda)
        GEMM_ROWS(2, 1);
    else
        GEMM_ROWS(2, 0);
}

/* The first 16 columns only (for column edges with at most 16 columns left). */
static BD_AVX512 void bd_f32_gemm_avx512_12x16(int64_t kc, const float *a, const float *b, float *c,
                                               int64_t ldc, int m, const bd_ukr_epi *ep) {
    if (ep->lda)
        GEMM_ROWS(1, 1);
    else
        GEMM_ROWS(1, 0);
}
#undef GEMM_ROWS

/* B read in place, stored through runs (convolutions without im2col, conv2d.c). */
static BD_AVX512 void bd_f32_conv_direct_avx512_12x32(int64_t kc, const float *a, const float *b,
                                                      const int64_t *boff, float *c, int64_t ldc,
                                                      int m, const bd_ukr_out *out,
                                                      const bd_ukr_epi *ep) {
    switch (m) {
    case 12: ukr_12x32(12, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 11: ukr_12x32(11, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 10: ukr_12x32(10, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 9: ukr_12x32(9, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 8: ukr_12x32(8, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 7: ukr_12x32(7, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 6: ukr_12x32(6, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 5: ukr_12x32(5, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 4: ukr_12x32(4, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 3: ukr_12x32(3, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    case 2: ukr_12x32(2, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    default: ukr_12x32(1, 2, 1, 0, kc, a, b, boff, c, ldc, out, ep); break;
    }
}

/* ---- direct convolution, 16 output channels in the lanes -------------------------------------- */

/* bd_f32_conv8d_avx2's scheme at twice the width: the same input rows with 8 channels
 * interleaved (conv8_rows.h), weights packed for blocks of 16 output channels, and per step two
 * blocks x NP (12; 8 or 4 for the last pixels of a chunk) pixels: two weight loads and NP
 * broadcasts for 2 NP FMAs (24 chains at 12 pixels, against 16 at 8: 4-10% faster on ResNet's
 * 3x3 layers on an Intel Xeon, and each pass over the weights serves 12 pixels). Pixel i of the
 * group reads from px[i] (or, where CONTIG is a pixel stride in floats, from px[0] + CONTIG i)
 * and is stored at o0 / o1 + 16 i.
 * Both weight streams are prefetched BD_STREAM_A_FLOATS ahead, as the GEMM's A is: the first
 * group of a block reads them from memory, and ResNet-18's 512-channel 7x7 layers (9.4 MB of
 * weights each) took 1.3x their time without it. */
BD_INLINE BD_AVX512 void conv16d_group(const int NOB, const int NP, const int KH_, const int KW_,
                                       const int CONTIG, const bd_conv8d_job *j,
                                       const float *const px[12],
                                       int64_t rs, int64_t bs, int64_t ncb, int clast,
                                       const float *w, int64_t wob, __m512 bias0, __m512 bias1,
                                       float *o0, float *o1) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ > 0 ? KH_ : s->KH, KW = KH_ > 0 ? KW_ : s->KW;
    const int64_t cs = KH_ > 0 ? 8 : s->dil_w * 8, hs = s->dil_h * rs;
    const __m512 lo = _mm512_set1_ps(j->act_min), hi = _mm512_set1_ps(j->act_max);
    /* named accumulators: as an array, some were kept on the stack */
    __m512 a0 = bias0, a1 = bias0, a2 = bias0, a3 = bias0, a4 = bias0, a5 = bias0, a6 = bias0,
           a7 = bias0, a8 = bias0, a9 = bias0, a10 = bias0, a11 = bias0;
    __m512 b0 = bias1, b1 = bias1, b2 = bias1, b3 = bias1, b4 = bias1, b5 = bias1, b6 = bias1,
           b7 = bias1, b8 = bias1, b9 = bias1, b10 = bias1, b11 = bias1;
    const float *wp = w;
    /* one input channel c of the tap at off: two weight loads, NP broadcasts, 2 NP FMAs */
#define BD_STEP(i, A, B)                                                                           \
    if (i < NP) {                                                                                  \
        x = _mm512_set1_ps(CONTIG ? px[0][CONTIG * i + off + c] : px[i][off + c]);                 \
        A = _mm512_fmadd_ps(wa, x, A);                                                             \
        if (NOB == 2) B = _mm512_fmadd_ps(wb, x, B);                                               \
    }
#define BD_CHANNEL                                                                                 \
    {                                                                                              \
        const __m512 wa = _mm512_loadu_ps(wp);                                                     \
        const __m512 wb = NOB == 2 ? _mm512_loadu_ps(wp + wob) : wa;                               \
        _mm_prefetch((const char *)((uintptr_t)wp + 4 * BD_STREAM_A_FLOATS), _MM_HINT_T0);         \
        if (NOB == 2)                                                                              \
            _mm_prefetch((const char *)((uintptr_t)(wp + wob) + 4 * BD_STREAM_A_FLOATS),           \
                         _MM_HINT_T0);                                                             \
        __m512 x;                                                                                  \
        BD_STEP(0, a0, b0)                                                                         \
        BD_STEP(1, a1, b1)                                                                         \
        BD_STEP(2, a2, b2)                                                                         \
        BD_STEP(3, a3, b3)                                                                         \
        BD_STEP(4, a4, b4)                                                                         \
        BD_STEP(5, a5, b5)                                                                         \
        BD_STEP(6, a6, b6)                                                                         \
        BD_STEP(7, a7, b7)                                                                         \
        BD_STEP(8, a8, b8)                                                                         \
        BD_STEP(9, a9, b9)                                                                         \
        BD_STEP(10, a10, b10)                                                                      \
        BD_STEP(11, a11, b11)                                                                      \
    }
    const int64_t nfull = clast == 8 ? ncb : ncb - 1;
    for (int64_t cb = 0; cb < nfull; cb++)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                const int64_t off = cb * bs + kh * hs + kw * cs;
                for (int c = 0; c < 8; c++, wp += 16)
                    BD_CHANNEL
            }
    if (nfull < ncb) /* a last partial block: its channels, then past its padding */
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++, wp += (8 - clast) * 16) {
                const int64_t off = nfull * bs + kh * hs + kw * cs;
                for (int c = 0; c < clast; c++, wp += 16)
                    BD_CHANNEL
            }
#undef BD_CHANNEL
#undef BD_STEP
#define BD_STORE(i, A, B)                                                                          \
    if (i < NP) {                                                                                  \
        _mm512_store_ps(o0 + 16 * i, act16(A, j->act, lo, hi));                                   \
        if (NOB == 2) _mm512_store_ps(o1 + 16 * i, act16(B, j->act, lo, hi));                      \
    }
    BD_STORE(0, a0, b0)
    BD_STORE(1, a1, b1)
    BD_STORE(2, a2, b2)
    BD_STORE(3, a3, b3)
    BD_STORE(4, a4, b4)
    BD_STORE(5, a5, b5)
    BD_STORE(6, a6, b6)
    BD_STORE(7, a7, b7)
    BD_STORE(8, a8, b8)
    BD_STORE(9, a9, b9)
    BD_STORE(10, a10, b10)
    BD_STORE(11, a11, b11)
#undef BD_STORE
}

/* The last group of a chunk, of 8 or 4 pixels, apart: inlined next to the main loop, a 4-pixel
 * group cost it 5-9% on the 3x3 layers (register allocation), where no such group occurs. */
static BD_AVX512 __attribute__((noinline)) void
conv16d_last_group(int nob, int np, const bd_conv8d_job *j, const float *const px[12], int64_t rs,
                   int64_t bs, int64_t ncb, int clast, const float *w, int64_t wob, __m512 bias0,
                   __m512 bias1, float *o0, float *o1) {
    if (nob == 2 && np == 8)
        conv16d_group(2, 8, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
    else if (nob == 2)
        conv16d_group(2, 4, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
    else if (np == 8)
        conv16d_group(1, 8, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
    else
        conv16d_group(1, 4, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
}

/* The npix output pixels of a chunk in groups of 12, the last one of 4, 8 or 12 (the fewest
 * that hold what is left: a 7x7 plane was 6 groups of 8 and one of 1 padded to 8); its pixels
 * past npix recompute pixel 0 into the spare end of o0 / o1 (16 floats a pixel).
 * wide (stride 1): the pixels are the chunk's columns of interleaved input rows, cols a row, the
 * KW - 1 past OW computed and never stored, so that pixel p reads rows + 8 p and a whole group
 * takes one base address: with twelve pointers, gcc kept them in vector registers and moved
 * them back for each channel, on the FMA port. At column stride 2 a group within one output row
 * takes one base address too (pixel p + i at px[0] + 16 i): the 3 -> 64 7x7/2 stem at 224x224
 * 2.40-2.50 -> 2.28-2.29 ms warm on a Zen 4 core, 3x3/2 layers at 28 and 14 columns 1-2% less;
 * groups across a row's end keep the pointers. */
BD_INLINE BD_AVX512 void conv16d_pixels(const int NOB, const int KH_, const int KW_, const int wide,
                                        const bd_conv8d_job *j, const float *rows, int64_t npix,
                                        int64_t rs, int64_t bs, int64_t ncb, int clast,
                                        const float *w, int64_t wob, __m512 bias0, __m512 bias1,
                                        float *o0, float *o1) {
    const bd_conv2d_shape *s = j->s;
    const int64_t OW = wide ? rs / 8 : s->OW, ps = s->stride_w * 8, prow = s->stride_h * rs;
    int64_t row = 0, col = 0; /* of pixel g, stepped without divisions */
    for (int64_t g = 0; g < npix;) {
        const int np = npix - g <= 4 ? 4 : npix - g <= 8 ? 8 : 12;
        const int in_row = col + 12 <= OW;
        const float *px[12];
        for (int i = 0, r = (int)row, c = (int)col; i < 12; i++) {
            px[i] = g + i < npix ? rows + r * prow + c * ps : rows;
            if (++c == OW) c = 0, r++;
        }
        for (col += np; col >= OW; col -= OW)
            row++;
        if (np < 12)
            conv16d_last_group(NOB, np, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1,
                               o0 + g * 16, o1 + g * 16);
        else if (wide && g + 12 <= npix)
            conv16d_group(NOB, 12, KH_, KW_, 8, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1,
                          o0 + g * 16, o1 + g * 16);
        else if (!wide && ps == 16 && in_row)
            conv16d_group(NOB, 12, KH_, KW_, 16, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1,
                          o0 + g * 16, o1 + g * 16);
        else
            conv16d_group(NOB, 12, KH_, KW_, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1,
                          o0 + g * 16, o1 + g * 16);
        g += np;
    }
}

BD_INLINE BD_AVX512 __m512 conv16d_bias(const bd_conv8d_job *j, int64_t m0) {
    float b[16];
    for (int c = 0; c < 16; c++)
        b[c] = j->bias && m0 + c >= j->m_lo && m0 + c < j->m_hi ? j->bias[m0 + c] : 0.0f;
    return _mm512_loadu_ps(b);
}

/* Lanes [lo, hi) of one output row of 16-lane pixels, as two 8-lane halves. */
BD_INLINE BD_AVX512 void conv16d_store_row(const float *o, int64_t OW, float *yrow, int64_t plane,
                                           int64_t lo, int64_t hi) {
    if (lo < 8) conv8_store_row(o, 16, OW, yrow, plane, lo, hi < 8 ? hi : 8);
    if (hi > 8) conv8_store_row(o + 8, 16, OW, yrow + 8 * plane, plane, lo > 8 ? lo - 8 : 0, hi - 8);
}

/* The prologue on the interleaved rows just prepared (1x1 convolutions: no padding columns to
 * keep at zero; the columns past OW are computed and never stored): two columns of 8 channels
 * per vector, lanes past the last block's channels left as they are (never read). */
/* v * a + b, then max(0, .) where relu (NaN kept): an absorbed BatchNormalization's prologue,
 * computed alike wherever the input is read (these rows, and the bf16 GEMM's packing of B). */
BD_INLINE BD_AVX512 __m512 prologue16(__m512 v, __m512 a, __m512 b, int relu) {
    v = _mm512_add_ps(_mm512_mul_ps(v, a), b);
    return relu ? _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v,
                                       _mm512_setzero_ps())
                : v;
}

static BD_AVX512 __attribute__((noinline)) void
conv16d_prologue(const bd_conv8d_job *j, float *rows, int64_t rows_in, int64_t cols, int64_t rs,
                 int64_t bs, int64_t ncb, int clast) {
    for (int64_t cb = 0; cb < ncb; cb++) {
        const int nch = cb + 1 < ncb ? 8 : clast;
        float a8[16] = {0}, b8[16] = {0};
        for (int c = 0; c < nch; c++)
            a8[c] = a8[c + 8] = j->pre_a[cb * 8 + c], b8[c] = b8[c + 8] = j->pre_b[cb * 8 + c];
        const __m512 a = _mm512_loadu_ps(a8), b = _mm512_loadu_ps(b8);
        for (int64_t r = 0; r < rows_in; r++) {
            float *d = rows + cb * bs + r * rs;
            for (int64_t k = 0; k < cols * 8; k += 16) {
                const __mmask16 m = cols * 8 - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)0xFF;
                _mm512_mask_storeu_ps(d + k, m,
                                      prologue16(_mm512_maskz_loadu_ps(m, d + k), a, b, j->pre_relu));
            }
        }
    }
}

/* Input row ih of the nin (0..8) planes from x at column stride SW, the OW columns a 1x1
 * convolution reads (bd_conv8d_subsampled), interleaved into d as conv8_prep_row does. At
 * stride 2 each block of 8 is one 16-column load per plane and a permute taking the even ones. */
static BD_AVX512 __attribute__((noinline)) void
conv16d_prep_sub_row(const bd_conv2d_shape *s, const float *x, int64_t nin, int64_t ih, float *d) {
    const int64_t W = s->W, HW = s->H * s->W, OW = s->OW, SW = s->stride_w;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m256i step = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32((int)SW));
    const float *row = x + ih * W;
    for (int64_t ow0 = 0; ow0 < OW; ow0 += 8) {
        const int64_t n = OW - ow0 < 8 ? OW - ow0 : 8;
        const float *p = row + ow0 * SW;
        __m256 r[8];
        for (int c = 0; c < 8; c++) {
            if (c >= nin) {
                r[c] = _mm256_setzero_ps(); /* times the weights' zero padding: finite */
            } else if (SW == 2) {
                const int64_t left = W - ow0 * 2; /* columns of the row from p */
                const __m512 v = left >= 16 ? _mm512_loadu_ps(p + c * HW)
                                            : _mm512_maskz_loadu_ps((__mmask16)((1u << left) - 1u),
                                                                    p + c * HW);
                r[c] = _mm512_castps512_ps256(_mm512_permutexvar_ps(even, v));
            } else {
                const __m256i m = first_lanes(n);
                r[c] = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), p + c * HW, step,
                                                _mm256_castsi256_ps(m), 4);
            }
        }
        transpose8(r);
        float *e = d + ow0 * 8; /* whole blocks, as conv8_prep_row */
        for (int k = 0; k < 8; k++)
            _mm256_store_ps(e + 8 * k, r[k]);
    }
}

/* ---- the same in bfloat16 (--precision bf16, BD_PACK_CONV8_BF16) ---------------------------- */

typedef int32_t bd_word_alias __attribute__((may_alias));

/* conv16d_group on the chunk's rows rounded to bfloat16 (px: the pixels in them, at the float
 * rows' element offsets) and weights packed per pair of input channels: per pair of a tap, two
 * weight loads (16 lanes x 2 channels) and NP broadcasts of the pixels' pairs for 2 NP VDPBF16PS,
 * each two products a lane, so that a step does twice the FMA's work. */
BD_INLINE BD_AVX512_BF16 void conv16d_group_bf16(const int NOB, const int NP, const int KH_,
                                                 const int KW_, const int CONTIG,
                                                 const bd_conv8d_job *j,
                                                 const uint16_t *const px[12], int64_t rs,
                                                 int64_t bs, int64_t ncb, int clast,
                                                 const uint16_t *w, int64_t wob, __m512 bias0,
                                                 __m512 bias1, float *o0, float *o1) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ > 0 ? KH_ : s->KH, KW = KH_ > 0 ? KW_ : s->KW;
    const int64_t cs = KH_ > 0 ? 8 : s->dil_w * 8, hs = s->dil_h * rs;
    const __m512 lo = _mm512_set1_ps(j->act_min), hi = _mm512_set1_ps(j->act_max);
    __m512 a0 = bias0, a1 = bias0, a2 = bias0, a3 = bias0, a4 = bias0, a5 = bias0, a6 = bias0,
           a7 = bias0, a8 = bias0, a9 = bias0, a10 = bias0, a11 = bias0;
    __m512 b0 = bias1, b1 = bias1, b2 = bias1, b3 = bias1, b4 = bias1, b5 = bias1, b6 = bias1,
           b7 = bias1, b8 = bias1, b9 = bias1, b10 = bias1, b11 = bias1;
    const uint16_t *wp = w;
#define BD_STEP(i, A, B)                                                                           \
    if (i < NP) {                                                                                  \
        x = (__m512bh)_mm512_set1_epi32(                                                           \
            *(const bd_word_alias *)(CONTIG ? px[0] + 8 * i + off + 2 * q : px[i] + off + 2 * q)); \
        A = _mm512_dpbf16_ps(A, x, wa);                                                            \
        if (NOB == 2) B = _mm512_dpbf16_ps(B, x, wb);                                              \
    }
#define BD_PAIR                                                                                    \
    {                                                                                              \
        const __m512bh wa = (__m512bh)_mm512_loadu_si512(wp);                                      \
        const __m512bh wb = NOB == 2 ? (__m512bh)_mm512_loadu_si512(wp + wob) : wa;                \
        _mm_prefetch((const char *)((uintptr_t)wp + 4 * BD_STREAM_A_FLOATS), _MM_HINT_T0);         \
        if (NOB == 2)                                                                              \
            _mm_prefetch((const char *)((uintptr_t)(wp + wob) + 4 * BD_STREAM_A_FLOATS),           \
                         _MM_HINT_T0);                                                             \
        __m512bh x;                                                                                \
        BD_STEP(0, a0, b0)                                                                         \
        BD_STEP(1, a1, b1)                                                                         \
        BD_STEP(2, a2, b2)                                                                         \
        BD_STEP(3, a3, b3)                                                                         \
        BD_STEP(4, a4, b4)                                                                         \
        BD_STEP(5, a5, b5)                                                                         \
        BD_STEP(6, a6, b6)                                                                         \
        BD_STEP(7, a7, b7)                                                                         \
        BD_STEP(8, a8, b8)                                                                         \
        BD_STEP(9, a9, b9)                                                                         \
        BD_STEP(10, a10, b10)                                                                      \
        BD_STEP(11, a11, b11)                                                                      \
    }
    const int64_t nfull = clast == 8 ? ncb : ncb - 1;
    const int qlast = (clast + 1) / 2; /* the last block's pairs (its odd channel's twin is 0) */
    for (int64_t cb = 0; cb < nfull; cb++)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                const int64_t off = cb * bs + kh * hs + kw * cs;
                for (int q = 0; q < 4; q++, wp += 32)
                    BD_PAIR
            }
    if (nfull < ncb)
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++, wp += (4 - qlast) * 32) {
                const int64_t off = nfull * bs + kh * hs + kw * cs;
                for (int q = 0; q < qlast; q++, wp += 32)
                    BD_PAIR
            }
#undef BD_PAIR
#undef BD_STEP
#define BD_STORE(i, A, B)                                                                          \
    if (i < NP) {                                                                                  \
        _mm512_store_ps(o0 + 16 * i, act16(A, j->act, lo, hi));                                   \
        if (NOB == 2) _mm512_store_ps(o1 + 16 * i, act16(B, j->act, lo, hi));                      \
    }
    BD_STORE(0, a0, b0)
    BD_STORE(1, a1, b1)
    BD_STORE(2, a2, b2)
    BD_STORE(3, a3, b3)
    BD_STORE(4, a4, b4)
    BD_STORE(5, a5, b5)
    BD_STORE(6, a6, b6)
    BD_STORE(7, a7, b7)
    BD_STORE(8, a8, b8)
    BD_STORE(9, a9, b9)
    BD_STORE(10, a10, b10)
    BD_STORE(11, a11, b11)
#undef BD_STORE
}

static BD_AVX512_BF16 __attribute__((noinline)) void
conv16d_last_group_bf16(int nob, int np, const bd_conv8d_job *j, const uint16_t *const px[12],
                        int64_t rs, int64_t bs, int64_t ncb, int clast, const uint16_t *w,
                        int64_t wob, __m512 bias0, __m512 bias1, float *o0, float *o1) {
    if (nob == 2 && np == 8)
        conv16d_group_bf16(2, 8, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
    else if (nob == 2)
        conv16d_group_bf16(2, 4, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
    else if (np == 8)
        conv16d_group_bf16(1, 8, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
    else
        conv16d_group_bf16(1, 4, 0, 0, 0, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1, o0, o1);
}

/* conv16d_pixels on the rounded rows r16 (the same pixels, in groups of 12 and a last of 4, 8
 * or 12). */
BD_INLINE BD_AVX512_BF16 void conv16d_pixels_bf16(const int NOB, const int KH_, const int KW_,
                                                  const int wide, const bd_conv8d_job *j,
                                                  const uint16_t *r16, int64_t npix, int64_t rs,
                                                  int64_t bs, int64_t ncb, int clast,
                                                  const uint16_t *w, int64_t wob, __m512 bias0,
                                                  __m512 bias1, float *o0, float *o1) {
    const bd_conv2d_shape *s = j->s;
    const int64_t OW = wide ? rs / 8 : s->OW, ps = s->stride_w * 8, prow = s->stride_h * rs;
    int64_t row = 0, col = 0;
    for (int64_t g = 0; g < npix;) {
        const int np = npix - g <= 4 ? 4 : npix - g <= 8 ? 8 : 12;
        const uint16_t *px[12];
        for (int i = 0, r = (int)row, c = (int)col; i < 12; i++) {
            px[i] = g + i < npix ? r16 + r * prow + c * ps : r16;
            if (++c == OW) c = 0, r++;
        }
        for (col += np; col >= OW; col -= OW)
            row++;
        if (np < 12)
            conv16d_last_group_bf16(NOB, np, j, px, rs, bs, ncb, clast, w, wob, bias0, bias1,
                                    o0 + g * 16, o1 + g * 16);
        else if (wide && g + 12 <= npix)
            conv16d_group_bf16(NOB, 12, KH_, KW_, 1, j, px, rs, bs, ncb, clast, w, wob, bias0,
                               bias1, o0 + g * 16, o1 + g * 16);
        else
            conv16d_group_bf16(NOB, 12, KH_, KW_, 0, j, px, rs, bs, ncb, clast, w, wob, bias0,
                               bias1, o0 + g * 16, o1 + g * 16);
        g += np;
    }
}

/* One output block pair's products in bfloat16, the window unrolled where conv16d_run's is. */
static BD_AVX512_BF16 __attribute__((noinline)) void
conv16d_products_bf16(int two, int kh_, int wide, const bd_conv8d_job *j, const uint16_t *r16,
                      int64_t npix, int64_t rs, int64_t bs, int64_t ncb, int clast,
                      const uint16_t *w, int64_t wob, __m512 bias0, __m512 bias1, float *o0,
                      float *o1) {
#define BD_PRODUCTS(KH_, KW_)                                                                      \
    if (two && wide)                                                                               \
        conv16d_pixels_bf16(2, KH_, KW_, 1, j, r16, npix, rs, bs, ncb, clast, w, wob, bias0,       \
                            bias1, o0, o1);                                                        \
    else if (two)                                                                                  \
        conv16d_pixels_bf16(2, KH_, KW_, 0, j, r16, npix, rs, bs, ncb, clast, w, wob, bias0,       \
                            bias1, o0, o1);                                                        \
    else                                                                                           \
        conv16d_pixels_bf16(1, KH_, KW_, wide, j, r16, npix, rs, bs, ncb, clast, w, wob, bias0,    \
                            bias0, o0, o1);
    if (kh_ == 3) {
        BD_PRODUCTS(3, 3)
    } else if (kh_ == 1) {
        BD_PRODUCTS(1, 1)
    } else {
        BD_PRODUCTS(0, 0)
    }
#undef BD_PRODUCTS
}

/* The chunk's prepared rows of each input block, n floats from rows + cb bs, rounded to
 * bfloat16 at the same offsets of r16. */
static BD_AVX512_BF16 __attribute__((noinline)) void
conv16d_round_rows(const float *rows, uint16_t *r16, int64_t ncb, int64_t bs, int64_t n) {
    for (int64_t cb = 0; cb < ncb; cb++)
        for (int64_t k = 0; k < n; k += 16) {
            const __mmask16 m = n - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - k)) - 1u);
            const __m512 v = _mm512_maskz_loadu_ps(m, rows + cb * bs + k);
            _mm256_mask_storeu_epi16(r16 + cb * bs + k, m, (__m256i)_mm512_cvtneps_pbh(v));
        }
}

BD_INLINE BD_AVX512 void conv16d_run(const int KH_, const int KW_, const bd_conv8d_job *job) {
    /* a strided 1x1 convolution runs at stride 1 on the pixels it reads */
    const int sub = bd_conv8d_subsampled(job->s);
    const bd_conv2d_shape sub_s = bd_conv8d_sub_shape(job->s);
    bd_conv8d_job sub_j = *job;
    sub_j.s = &sub_s;
    const bd_conv8d_job *j = sub ? &sub_j : job;
    const bd_conv2d_shape *s = j->s;
    const int64_t Cg = s->C / s->group, ncb = (Cg + 7) / 8, taps = s->KH * s->KW;
    const int clast = (int)(Cg - (ncb - 1) * 8);
    const int64_t OW = s->OW, OHW = s->OH * s->OW, HW = s->H * s->W;
    const int64_t cols = bd_conv8_cols(s), rs = cols * 8, R = bd_conv8d_chunk_rows(s);
    const int64_t rows_max = (R - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
    const int64_t bs = rows_max * rs, wob = ncb * taps * 128, opix = bd_conv8d_out_pixels(s);
    float *o0 = j->scratch, *o1 = o0 + opix * 16, *rows = o1 + opix * 16;
    uint16_t *r16 = bd_align64(rows + ncb * bs + 64); /* bf16: the rows rounded */
    /* conv16d_pixels' wide mode where the columns computed past OW are at most an eighth */
    const int wide = s->stride_h == 1 && s->stride_w == 1 && (cols - OW) * 8 <= OW;
    const int64_t npix_of_row = wide ? cols : OW;
    for (int64_t r0 = j->oh0; r0 < j->oh1; r0 += R) {
        const int64_t nr = j->oh1 - r0 < R ? j->oh1 - r0 : R;
        const int64_t rows_in = (nr - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
        const int64_t ih0 = r0 * s->stride_h - s->pad_top;
        for (int64_t cb = 0; cb < ncb; cb++)
            for (int64_t r = 0; r < rows_in; r++)
                if (sub)
                    conv16d_prep_sub_row(job->s, j->x + cb * 8 * job->s->H * job->s->W,
                                         cb + 1 < ncb ? 8 : clast, (r0 + r) * job->s->stride_h,
                                         rows + cb * bs + r * rs);
                else
                    conv8_prep_row(s, j->x + cb * 8 * HW, cb + 1 < ncb ? 8 : clast, ih0 + r, cols,
                                   rows + cb * bs + r * rs, 8);
        if (j->pre_a) conv16d_prologue(j, rows, rows_in, cols, rs, bs, ncb, clast);
        if (j->bf16) conv16d_round_rows(rows, r16, ncb, bs, rows_in * rs);
        for (int64_t m0 = j->m_lo / 16 * 16; m0 < j->m_hi; m0 += 32) {
            const int two = m0 + 16 < j->m_hi;
            const __m512 bias0 = conv16d_bias(j, m0), bias1 = two ? conv16d_bias(j, m0 + 16) : bias0;
            const float *w = j->w + m0 / 16 * wob;
            const int64_t npix = (nr - 1) * npix_of_row + OW;
            /* two blocks: wide as a constant; passed as a variable, ResNet's and SqueezeNet's
             * 56- and 28-column layers took 7-14% longer */
            if (j->bf16)
                conv16d_products_bf16(two, KH_ == 3 && KW_ == 3 ? 3 : KH_ == 1 && KW_ == 1 ? 1 : 0,
                                      wide, j, r16, npix, rs, bs, ncb, clast,
                                      (const uint16_t *)(const void *)j->w + m0 / 16 * wob, wob,
                                      bias0, bias1, o0, o1);
            else if (two && wide)
                conv16d_pixels(2, KH_, KW_, 1, j, rows, npix, rs, bs, ncb, clast, w, wob, bias0,
                               bias1, o0, o1);
            else if (two)
                conv16d_pixels(2, KH_, KW_, 0, j, rows, npix, rs, bs, ncb, clast, w, wob, bias0,
                               bias1, o0, o1);
            else
                conv16d_pixels(1, KH_, KW_, wide, j, rows, npix, rs, bs, ncb, clast, w, wob,
                               bias0, bias0, o0, o1);
            const int64_t lo0 = j->m_lo > m0 ? j->m_lo - m0 : 0;
            const int64_t hi0 = j->m_hi - m0 < 16 ? j->m_hi - m0 : 16;
            const int64_t hi1 = j->m_hi - m0 - 16 < 16 ? j->m_hi - m0 - 16 : 16;
            for (int64_t o = 0; o < nr; o++) {
                float *yrow = j->y + m0 * OHW + (r0 + o) * OW;
                conv16d_store_row(o0 + o * npix_of_row * 16, OW, yrow, OHW, lo0, hi0);
                if (two)
                    conv16d_store_row(o1 + o * npix_of_row * 16, OW, yrow + 16 * OHW, OHW, 0, hi1);
            }
        }
    }
}

BD_AVX512 void bd_f32_conv16d_avx512(const bd_conv8d_job *j) {
    const bd_conv2d_shape *s = j->s;
    if (s->KH == 3 && s->KW == 3 && s->dil_w == 1)
        conv16d_run(3, 3, j);
    else if (s->KH == 7 && s->KW == 7 && s->dil_w == 1 && s->C / s->group <= 8)
        conv16d_run(7, 7, j); /* stems of 3 channels: 3-9% faster with the taps unrolled */
    else if (s->KH == 1 && s->KW == 1)
        conv16d_run(1, 1, j);
    else
        conv16d_run(0, 0, j);
}

/* ---- depthwise convolution on the planes ---------------------------------------------------- */

/* The masks of a tap's load on a plane row: the n output columns of a vector read, at column
 * stride SW, the input columns b, b + SW, ..., of which those inside [0, W) are loaded; as a
 * 32-bit mask, lo and hi for the two loads at stride 2 (hi unused at stride 1). */
BD_INLINE void planes_tap_masks(int64_t b, int64_t n, int64_t SW, int64_t W, __mmask16 *lo,
                                __mmask16 *hi) {
    const int64_t from = b < 0 ? -b : 0, span = SW * n - SW + 1, to = W - b < span ? W - b : span;
    const uint64_t m = to > from ? ((1ull << to) - 1ull) & ~((1ull << from) - 1ull) : 0;
    *lo = (__mmask16)(m & 0xFFFFu);
    *hi = (__mmask16)(m >> 16 & 0xFFFFu);
}

/* Per channel, per block of 16 output columns, DW_ROWS output rows at a time: each input row
 * they read is loaded once per tap column (a masked load of the 16 input columns it reads;
 * stride 2: two loads of 32 columns and a permute taking the even ones), the masks zeroing the
 * padding, and added into every one of the rows' sums it reaches (DW_ROWS independent chains).
 * Nothing is copied or transposed: with 16 channels in the lanes instead (bd_f32_conv8_avx512),
 * interleaving the input rows and transposing the outputs back took most of the time of
 * MobileNetV2's 56x56 and 112x112 layers. 3x3 windows at stride 2 load each row's 33 columns
 * once (two plain loads and a broadcast inside the plane) and split them into the three taps'
 * vectors (the even columns, the odd ones, the even ones one further): 6 masked loads and 3
 * permutes before, 0.051 -> 0.042 ms for 144 channels 56 -> 28 and 0.090 -> 0.072 for 64
 * channels 112 -> 56 (warm); at stride 1 the same, two loads and two lane shifts for three
 * loads, measured level and is not done. KH_, KW_: the window when unrolled (3x3), else 0; at
 * most 3x3 (bd_dw_planes_ok). */
enum { DW_ROWS = 8 };
BD_INLINE BD_AVX512 void dw_planes_run(const int KH_, const int KW_, const int SW, const int SH,
                                       const bd_dw_planes_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW;
    const int64_t H = s->H, W = s->W, OH = s->OH, OW = s->OW;
    const int64_t in_rows = (DW_ROWS - 1) * SH + KH; /* input rows of DW_ROWS output rows */
    const __m512 lo = _mm512_set1_ps(j->act_min), hi = _mm512_set1_ps(j->act_max);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 zero = _mm512_setzero_ps();
    const int S23 = SW == 2 && KW_ == 3; /* a row's three taps from one pair of loads */
    for (int64_t ch = 0; ch < j->nch; ch++) {
        const float *xc = j->x + ch * H * W, *wc = j->w + ch * KH * KW;
        float *yc = j->y + ch * OH * OW;
        const __m512 bias = _mm512_set1_ps(j->bias ? j->bias[ch] : 0.0f);
        __m512 wv[9];
        for (int64_t t = 0; t < KH * KW; t++)
            wv[t] = _mm512_set1_ps(wc[t]);
        for (int64_t oh = j->oh0; oh < j->oh1; oh += DW_ROWS) {
            /* the next band's new input rows, or the next channel's first band */
            const int64_t band_ih = oh * SH - s->pad_top;
            if (oh + DW_ROWS < j->oh1)
                bd_prefetch_rows(xc, band_ih + in_rows, band_ih + DW_ROWS * SH + in_rows, H, W);
            else if (ch + 1 < j->nch)
                bd_prefetch_rows(xc + H * W, j->oh0 * SH - s->pad_top,
                              j->oh0 * SH - s->pad_top + in_rows, H, W);
            /* across the rows' columns, so that their input rows are read in order */
            for (int64_t ow0 = 0; ow0 < OW; ow0 += 16) {
                const int64_t n = OW - ow0 < 16 ? OW - ow0 : 16;
                const __mmask16 mout = (__mmask16)((1u << n) - 1u);
                __mmask16 m0[3], m1[3];
                const int64_t first = ow0 * SW - s->pad_left;
                /* stride 2, 3 columns (S23): the block's 2n + 1 input columns from first, loaded
                 * once per row and split into the three taps' vectors (zeros shifted in at the
                 * left edge, those past the right one, read from the next row, zeroed after) */
                bd_pool_run ru = {0};
                if (S23)
                    bd_pool_run_set(&ru, ow0, n, first, 2 * n + 1, W, H * W, 16);
                else
                    for (int64_t kw = 0; kw < KW; kw++)
                        planes_tap_masks(first + kw, n, SW, W, &m0[kw], &m1[kw]);
                /* the run in registers for the rows below */
                const int64_t span = 2 * n + 1, lim = ru.lim;
                const int fix = ru.fix;
                const __mmask16 va_m = (__mmask16)ru.valid, vb_m = (__mmask16)(ru.valid >> 16),
                                vc_m = (__mmask16)(ru.valid >> 32);
                /* lane i of the first vector: column first + i, the row's column i - lo */
                const __m512i shift = _mm512_add_epi32(lane, _mm512_set1_epi32(16 - (int)ru.lo));
                /* named sums: as an array, gcc kept them on the stack */
                __m512 a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias,
                       a7 = bias;
                const int64_t ih0 = oh * SH - s->pad_top;
#pragma GCC unroll 24
                for (int64_t r = 0; r < in_rows; r++) {
                    const int64_t ih = ih0 + r;
                    if (ih < 0 || ih >= H) continue;
                    /* lanes outside the masks are neither read nor formed into an address */
                    const uintptr_t row = (uintptr_t)(xc + ih * W) + (uintptr_t)(first * 4);
                    __m512 t0 = zero, t1 = zero, t2 = zero; /* S23: the taps' vectors */
                    if (S23) {
                        __m512 va, vb = zero, vc = zero;
                        if (ih <= lim) { /* the loads the span needs, as lim counted them */
                            const float *p = xc + ih * W + first;
                            va = ru.lo ? _mm512_permutex2var_ps(zero, shift,
                                                                _mm512_loadu_ps(xc + ih * W))
                                       : _mm512_loadu_ps(p);
                            if (span > 16) vb = _mm512_loadu_ps(p + 16);
                            if (span > 32) vc = _mm512_set1_ps(p[32]);
                        } else {
                            va = _mm512_maskz_loadu_ps(va_m, (const float *)row);
                            vb = _mm512_maskz_loadu_ps(vb_m, (const float *)(row + 64));
                            vc = _mm512_maskz_loadu_ps(vc_m, (const float *)(row + 128));
                        }
                        if (fix) { /* the padding's columns (the next row's, in plain loads) */
                            va = _mm512_maskz_mov_ps(va_m, va);
                            vb = _mm512_maskz_mov_ps(vb_m, vb);
                            vc = _mm512_maskz_mov_ps(vc_m, vc);
                        }
                        t0 = _mm512_permutex2var_ps(va, even, vb);
                        t1 = _mm512_permutex2var_ps(va, odd, vb);
                        t2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(vc),
                                                                     _mm512_castps_si512(t0), 1));
                    }
#pragma GCC unroll 8
                    for (int64_t kw = 0; kw < KW; kw++) {
                        const float *p = (const float *)(row + (uintptr_t)(kw * 4));
                        __m512 v;
                        if (S23) {
                            v = kw == 0 ? t0 : kw == 1 ? t1 : t2;
                        } else {
                            v = _mm512_maskz_loadu_ps(m0[kw], p);
                            if (SW == 2)
                                v = _mm512_permutex2var_ps(v, even,
                                                           _mm512_maskz_loadu_ps(m1[kw], p + 16));
                        }
                        /* output row oh + i takes this input row as its tap row r - i SH */
#define BD_TAP(i, A)                                                                               \
    if (r - (i)*SH >= 0 && r - (i)*SH < KH) A = _mm512_fmadd_ps(wv[(r - (i)*SH) * KW + kw], v, A);
                        BD_TAP(0, a0)
                        BD_TAP(1, a1)
                        BD_TAP(2, a2)
                        BD_TAP(3, a3)
                        BD_TAP(4, a4)
                        BD_TAP(5, a5)
                        BD_TAP(6, a6)
                        BD_TAP(7, a7)
#undef BD_TAP
                    }
                }
                float *yr = yc + oh * OW + ow0;
                const int64_t left = j->oh1 - oh;
                _mm512_mask_storeu_ps(yr, mout, act16(a0, j->act, lo, hi));
                if (left > 1) _mm512_mask_storeu_ps(yr + OW, mout, act16(a1, j->act, lo, hi));
                if (left > 2) _mm512_mask_storeu_ps(yr + 2 * OW, mout, act16(a2, j->act, lo, hi));
                if (left > 3) _mm512_mask_storeu_ps(yr + 3 * OW, mout, act16(a3, j->act, lo, hi));
                if (left > 4) _mm512_mask_storeu_ps(yr + 4 * OW, mout, act16(a4, j->act, lo, hi));
                if (left > 5) _mm512_mask_storeu_ps(yr + 5 * OW, mout, act16(a5, j->act, lo, hi));
                if (left > 6) _mm512_mask_storeu_ps(yr + 6 * OW, mout, act16(a6, j->act, lo, hi));
                if (left > 7) _mm512_mask_storeu_ps(yr + 7 * OW, mout, act16(a7, j->act, lo, hi));
            }
        }
    }
}

BD_AVX512 void bd_f32_dw_planes_avx512(const bd_dw_planes_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int k3 = s->KH == 3 && s->KW == 3;
    if (k3 && s->stride_h == 1 && s->stride_w == 1)
        dw_planes_run(3, 3, 1, 1, j);
    else if (k3 && s->stride_h == 2 && s->stride_w == 2)
        dw_planes_run(3, 3, 2, 2, j);
    else if (s->stride_w == 1)
        dw_planes_run(0, 0, 1, (int)s->stride_h, j);
    else
        dw_planes_run(0, 0, 2, (int)s->stride_h, j);
}

/* ---- few input channels on the output planes ------------------------------------------------ */

/* bd_conv_planes_job: per output row, the input columns every tap reads for a run of up to
 * BD_PLANES_COLS output columns are first staged in scratch, one aligned row per tap (plain loads
 * inside the input row, masked ones zeroing the padding at its edges; stride 2: two loads and a
 * permute taking the even columns); then per 48 columns (three vectors; one or two left over),
 * per 8 output channels, 24 sums, each tap three aligned loads feeding 24 FMAs with 8 broadcast
 * weights (one row of the packing per tap). Loading and permuting the input for every 8 channels
 * instead, as before, loaded it 8 times over for SqueezeNet's 64 channels, most loads split across
 * two cache lines, and a row of 111 columns took four 32-column blocks: its 3 -> 64 3x3/2 stem
 * 0.267 -> 0.22 ms warm (the staging alone, with masks computed per row, had cost 0.03). KH_,
 * KW_, C_: the window and channels when unrolled (3x3, 3), else 0. */
/* The masks of the staged loads of a run of ncols output columns from cb: per tap column kw and
 * vector v, mk[kw][v][0] and [1] (the same for every row and channel). */
BD_INLINE BD_AVX512 void conv_planes_masks(const bd_conv2d_shape *s, int64_t KW, int64_t SW,
                                           int64_t cb, int64_t ncols,
                                           __mmask16 mk[3][BD_PLANES_COLS / 16][2]) {
    const int64_t first = cb * SW - s->pad_left;
    for (int64_t kw = 0; kw < KW; kw++)
        for (int64_t v = 0; v * 16 < ncols; v++) {
            const int64_t n = ncols - v * 16 < 16 ? ncols - v * 16 : 16;
            planes_tap_masks(first + 16 * SW * v + kw, n, SW, s->W, &mk[kw][v][0], &mk[kw][v][1]);
        }
}

/* Stages the taps' input columns of output row oh's run from cb: tap (c, kh, kw) at st + tap *
 * rs, zeros for the padding. */
BD_INLINE BD_AVX512 void conv_planes_stage(const int C_, const int KH_, const int KW_, const int SW,
                                           const bd_conv_planes_job *j, int64_t oh, int64_t cb,
                                           int64_t ncols, int64_t rs,
                                           __mmask16 mk[3][BD_PLANES_COLS / 16][2], float *st) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW, C = C_ ? C_ : s->C;
    const int64_t H = s->H, W = s->W, nvec = (ncols + 15) / 16;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const int64_t first = cb * SW - s->pad_left;
    for (int64_t c = 0; c < C; c++)
        for (int64_t kh = 0; kh < KH; kh++) {
            const int64_t ih = oh * s->stride_h - s->pad_top + kh;
            float *d = st + (c * KH + kh) * KW * rs;
            if (ih < 0 || ih >= H) {
                memset(d, 0, (size_t)(KW * rs) * sizeof(float));
                continue;
            }
            /* lanes outside the masks are neither read nor formed into an address */
            const uintptr_t row = (uintptr_t)(j->x + (c * H + ih) * W) + (uintptr_t)(first * 4);
            for (int64_t kw = 0; kw < KW; kw++, d += rs)
                for (int64_t v = 0; v < nvec; v++) {
                    const float *p = (const float *)(row + (uintptr_t)((16 * SW * v + kw) * 4));
                    const int64_t b = first + 16 * SW * v + kw; /* p's column */
                    __m512 x;
                    if (b >= 0 && b + 16 * SW <= W) /* inside the row: plain loads */
                        x = SW == 2 ? _mm512_permutex2var_ps(_mm512_loadu_ps(p), even,
                                                             _mm512_loadu_ps(p + 16))
                                    : _mm512_loadu_ps(p);
                    else if (SW == 2)
                        x = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(mk[kw][v][0], p), even,
                                                   _mm512_maskz_loadu_ps(mk[kw][v][1], p + 16));
                    else
                        x = _mm512_maskz_loadu_ps(mk[kw][v][0], p);
                    _mm512_store_ps(d + v * 16, x);
                }
        }
}

/* 8 output channels from m0 over NV (1 to 3) vectors of 16 staged columns from column ow of the
 * run; out[v]: the columns of vector v to store; next_row: OW where the tile has a next output
 * row, else 0. */
BD_INLINE BD_AVX512 void conv_planes_block(const int NV, const bd_conv_planes_job *j, int64_t taps,
                                           const float *st, int64_t rs, int64_t ow, float *yr,
                                           int64_t m0, const __mmask16 *out, int64_t next_row) {
    const int64_t OHW = j->s->OH * j->s->OW;
    const float *wt = j->w + m0 * taps;
    float bias[8];
    for (int i = 0; i < 8; i++)
        bias[i] = j->bias && m0 + i < j->m_hi && m0 + i >= j->m_lo ? j->bias[m0 + i] : 0.0f;
    __m512 a0 = _mm512_set1_ps(bias[0]), a1 = _mm512_set1_ps(bias[1]), a2 = _mm512_set1_ps(bias[2]),
           a3 = _mm512_set1_ps(bias[3]), a4 = _mm512_set1_ps(bias[4]), a5 = _mm512_set1_ps(bias[5]),
           a6 = _mm512_set1_ps(bias[6]), a7 = _mm512_set1_ps(bias[7]);
    __m512 b0 = a0, b1 = a1, b2 = a2, b3 = a3, b4 = a4, b5 = a5, b6 = a6, b7 = a7;
    __m512 c0 = a0, c1 = a1, c2 = a2, c3 = a3, c4 = a4, c5 = a5, c6 = a6, c7 = a7;
    const float *p = st + ow;
#pragma GCC unroll 3
    for (int64_t t = 0; t < taps; t++, p += rs, wt += 8) {
        const __m512 x0 = _mm512_load_ps(p), x1 = NV > 1 ? _mm512_load_ps(p + 16) : x0;
        const __m512 x2 = NV > 2 ? _mm512_load_ps(p + 32) : x0;
#define BD_CH(i, A, B, C)                                                                          \
    {                                                                                              \
        const __m512 wb = _mm512_set1_ps(wt[i]);                                                   \
        A = _mm512_fmadd_ps(wb, x0, A);                                                            \
        if (NV > 1) B = _mm512_fmadd_ps(wb, x1, B);                                                \
        if (NV > 2) C = _mm512_fmadd_ps(wb, x2, C);                                                \
    }
        BD_CH(0, a0, b0, c0)
        BD_CH(1, a1, b1, c1)
        BD_CH(2, a2, b2, c2)
        BD_CH(3, a3, b3, c3)
        BD_CH(4, a4, b4, c4)
        BD_CH(5, a5, b5, c5)
        BD_CH(6, a6, b6, c6)
        BD_CH(7, a7, b7, c7)
#undef BD_CH
    }
    const __m512 lo = _mm512_set1_ps(j->act_min), hi = _mm512_set1_ps(j->act_max);
    yr += m0 * OHW;
    /* the same columns of the next output row, for writing: a row into each of many planes is
     * more streams than the prefetchers follow, and a model run has left the output in memory
     * (SqueezeNet's 3 -> 64 3x3/2 stem 0.60-0.79 -> 0.56-0.60 ms in the model, 2% slower warm) */
    for (int i = 0; i < 8 && next_row; i++)
        for (int v = 0; v < NV && m0 + i >= j->m_lo && m0 + i < j->m_hi; v++)
            __builtin_prefetch(yr + i * OHW + next_row + 16 * v, 1, 3);
#define BD_OUT(i, A, B, C)                                                                         \
    if (m0 + i >= j->m_lo && m0 + i < j->m_hi) {                                                   \
        _mm512_mask_storeu_ps(yr + i * OHW, out[0], act16(A, j->act, lo, hi));                     \
        if (NV > 1) _mm512_mask_storeu_ps(yr + i * OHW + 16, out[1], act16(B, j->act, lo, hi));    \
        if (NV > 2) _mm512_mask_storeu_ps(yr + i * OHW + 32, out[2], act16(C, j->act, lo, hi));    \
    }
    BD_OUT(0, a0, b0, c0)
    BD_OUT(1, a1, b1, c1)
    BD_OUT(2, a2, b2, c2)
    BD_OUT(3, a3, b3, c3)
    BD_OUT(4, a4, b4, c4)
    BD_OUT(5, a5, b5, c5)
    BD_OUT(6, a6, b6, c6)
    BD_OUT(7, a7, b7, c7)
#undef BD_OUT
}

enum { PLANES_AHEAD = 2 }; /* output rows */
BD_INLINE BD_AVX512 void conv_planes_run(const int C_, const int KH_, const int KW_, const int SW,
                                         const bd_conv_planes_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW, C = C_ ? C_ : s->C;
    const int64_t H = s->H, W = s->W, OW = s->OW, taps = C * KH * KW;
    const int64_t rs = OW < BD_PLANES_COLS ? (OW + 15) / 16 * 16 : BD_PLANES_COLS; /* staged row */
    float *st = (float *)(((uintptr_t)j->scratch + 63) & ~(uintptr_t)63);
    for (int64_t cb = 0; cb < OW; cb += BD_PLANES_COLS) {
        const int64_t ncols = OW - cb < BD_PLANES_COLS ? OW - cb : BD_PLANES_COLS;
        __mmask16 mk[3][BD_PLANES_COLS / 16][2];
        conv_planes_masks(s, KW, SW, cb, ncols, mk);
        for (int64_t oh = j->oh0; oh < j->oh1; oh++) {
            /* the rows output row oh + PLANES_AHEAD adds to the window */
            const int64_t next = oh * s->stride_h - s->pad_top + PLANES_AHEAD * s->stride_h;
            for (int64_t c = 0; c < C && oh + PLANES_AHEAD < j->oh1; c++)
                bd_prefetch_rows(j->x + c * H * W, next + KH - s->stride_h, next + KH, H, W);
            conv_planes_stage(C_, KH_, KW_, SW, j, oh, cb, ncols, rs, mk, st);
            float *yr = j->y + oh * OW + cb;
            for (int64_t ow = 0; ow < ncols; ow += 48) {
                /* three vectors of columns at a time (24 sums), the last one or two alone */
                const int64_t nv = ncols - ow > 32 ? 3 : ncols - ow > 16 ? 2 : 1;
                __mmask16 out[3] = {0, 0, 0};
                for (int64_t v = 0; v < nv; v++) {
                    const int64_t n = ncols - ow - 16 * v;
                    out[v] = (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
                }
                const int64_t next_row = oh + 1 < j->oh1 ? OW : 0;
                for (int64_t m0 = j->m_lo / 8 * 8; m0 < j->m_hi; m0 += 8) {
                    if (nv == 3)
                        conv_planes_block(3, j, taps, st, rs, ow, yr + ow, m0, out, next_row);
                    else if (nv == 2)
                        conv_planes_block(2, j, taps, st, rs, ow, yr + ow, m0, out, next_row);
                    else
                        conv_planes_block(1, j, taps, st, rs, ow, yr + ow, m0, out, next_row);
                }
            }
        }
    }
}

BD_AVX512 void bd_f32_conv_planes_avx512(const bd_conv_planes_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int k3 = s->KH == 3 && s->KW == 3, c3 = s->C == 3;
    if (c3 && k3 && s->stride_w == 1)
        conv_planes_run(3, 3, 3, 1, j);
    else if (c3 && k3)
        conv_planes_run(3, 3, 3, 2, j);
    else if (s->stride_w == 1)
        conv_planes_run(0, 0, 0, 1, j);
    else
        conv_planes_run(0, 0, 0, 2, j);
}

/* ---- depthwise convolution, 16 channels in the lanes ----------------------------------------- */

/* bd_f32_conv8_avx2's depthwise scheme with 16 channels in a zmm: each input row interleaved 16
 * planes at a time (two 8-lane halves, conv8_rows.h), and per output row eight pixels at a time
 * (eight FMA chains: a depthwise FMA has its own load, so eight cover the latency at two loads a
 * cycle). Grouped convolutions stay on the 8-lane kernel. */
BD_INLINE BD_AVX512 void dw16_prep_row(const bd_conv2d_shape *s, const float *x, int64_t nin,
                                       int64_t ih, int64_t cols, float *d) {
    conv8_prep_row(s, x, nin < 8 ? nin : 8, ih, cols, d, 16);
    conv8_prep_row(s, nin > 8 ? x + 8 * s->H * s->W : x, nin > 8 ? nin - 8 : 0, ih, cols, d + 8,
                   16);
}

/* The activation over n 16-lane pixels, its choice made once. */
BD_INLINE BD_AVX512 void act_row16(float *o, int64_t n, int act, __m512 lo, __m512 hi) {
    if (act == BD_ACT_NONE) return;
#define BD_ACT_LOOP(ACT)                                                                           \
    for (int64_t i = 0; i < n; i++)                                                                \
        _mm512_store_ps(o + i * 16, act16(_mm512_load_ps(o + i * 16), ACT, lo, hi));
    switch (act) {
    case BD_ACT_RELU: BD_ACT_LOOP(BD_ACT_RELU) break;
    case BD_ACT_CLIP: BD_ACT_LOOP(BD_ACT_CLIP) break;
    case BD_ACT_HARD_SWISH: BD_ACT_LOOP(BD_ACT_HARD_SWISH) break;
    default: BD_ACT_LOOP(act) break;
    }
#undef BD_ACT_LOOP
}

/* One output row from the interleaved rows at p (row stride rs floats), into orow (16 floats a
 * pixel, rounded up to 8 pixels: a last partial group computes those too, reading spare columns
 * of the scratch). KH_ > 0: taps KH_ x KW_, column stride SW_, column dilation 1. */
BD_INLINE BD_AVX512 void dw16_row(const int KH_, const int KW_, const int SW_, const bd_conv8_job *j,
                                  const float *p, int64_t rs, const float *w16, __m512 bias,
                                  float *orow) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ > 0 ? KH_ : s->KH, KW = KH_ > 0 ? KW_ : s->KW, OW = s->OW;
    const int64_t cs = KH_ > 0 ? 16 : s->dil_w * 16, ps = KH_ > 0 ? SW_ * 16 : s->stride_w * 16;
    const int64_t hs = s->dil_h * rs;
    for (int64_t ow = 0; ow < OW; ow += 8) {
        const float *q0 = p + ow * ps;
        __m512 s0 = bias, s1 = bias, s2 = bias, s3 = bias, s4 = bias, s5 = bias, s6 = bias,
               s7 = bias;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                const float *q = q0 + kh * hs + kw * cs;
                const __m512 wt = _mm512_load_ps(w16 + (kh * KW + kw) * 16);
                s0 = _mm512_fmadd_ps(wt, _mm512_load_ps(q), s0);
                s1 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + ps), s1);
                s2 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + 2 * ps), s2);
                s3 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + 3 * ps), s3);
                s4 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + 4 * ps), s4);
                s5 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + 5 * ps), s5);
                s6 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + 6 * ps), s6);
                s7 = _mm512_fmadd_ps(wt, _mm512_load_ps(q + 7 * ps), s7);
            }
        float *e = orow + ow * 16;
        _mm512_store_ps(e, s0);
        _mm512_store_ps(e + 16, s1);
        _mm512_store_ps(e + 32, s2);
        _mm512_store_ps(e + 48, s3);
        _mm512_store_ps(e + 64, s4);
        _mm512_store_ps(e + 80, s5);
        _mm512_store_ps(e + 96, s6);
        _mm512_store_ps(e + 112, s7);
    }
    act_row16(orow, OW, j->act, _mm512_set1_ps(j->act_min), _mm512_set1_ps(j->act_max));
}

BD_INLINE BD_AVX512 void dw16_run(const int KH_, const int KW_, const int SW_, const bd_conv8_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int64_t taps = s->KH * s->KW, OW = s->OW, OHW = s->OH * s->OW;
    const int64_t cols = bd_conv8_cols(s), rs = cols * 16, ow8 = (OW + 7) / 8 * 8;
    const int64_t lane_lo = j->lane_lo, lane_hi = j->lane_hi;
    float *w16 = j->scratch, *orow = w16 + taps * 16, *rows = orow + ow8 * 16;
    for (int64_t t = 0; t < taps; t++) /* the lanes' taps side by side */
        for (int c = 0; c < 16; c++)
            w16[t * 16 + c] = c < lane_hi ? j->w[c * taps + t] : 0.0f;
    float b[16];
    for (int c = 0; c < 16; c++)
        b[c] = c >= lane_lo && c < lane_hi && j->bias ? j->bias[c] : 0.0f;
    const __m512 bias = _mm512_loadu_ps(b);
    memset(orow + OW * 16, 0, (size_t)((ow8 - OW) * 16) * sizeof(float)); /* read, never stored */
    for (int64_t r0 = j->oh0; r0 < j->oh1; r0 += BD_CONV8_CHUNK) {
        const int64_t nr = j->oh1 - r0 < BD_CONV8_CHUNK ? j->oh1 - r0 : BD_CONV8_CHUNK;
        const int64_t rows_in = (nr - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
        const int64_t ih0 = r0 * s->stride_h - s->pad_top;
        for (int64_t r = 0; r < rows_in; r++)
            dw16_prep_row(s, j->x, j->nin, ih0 + r, cols, rows + r * rs);
        for (int64_t o = 0; o < nr; o++) {
            dw16_row(KH_, KW_, SW_, j, rows + o * s->stride_h * rs, rs, w16, bias, orow);
            conv16d_store_row(orow, OW, j->y + (r0 + o) * OW, OHW, lane_lo, lane_hi);
        }
    }
}

/* Depthwise convolutions with 16 channels in the lanes; the rest on the AVX2 8-lane kernel. */
BD_AVX512 void bd_f32_conv8_avx512(const bd_conv8_job *j) {
    const bd_conv2d_shape *s = j->s;
    if (!(s->group == s->C && s->group == s->M)) {
        bd_f32_conv8_avx2(j);
        return;
    }
    const int k = s->dil_w != 1 ? 0 : s->KH == 3 && s->KW == 3 ? 3 : s->KH == 5 && s->KW == 5 ? 5 : 0;
    if (k == 3 && s->stride_w == 1)
        dw16_run(3, 3, 1, j);
    else if (k == 3 && s->stride_w == 2)
        dw16_run(3, 3, 2, j);
    else if (k == 5 && s->stride_w == 1)
        dw16_run(5, 5, 1, j);
    else if (k == 5 && s->stride_w == 2)
        dw16_run(5, 5, 2, j);
    else
        dw16_run(0, 0, 0, j);
}

/* ---- max pooling at column stride 2 ---------------------------------------------------------- */

/* bd_maxpool_rows_fn for bd_maxpool_rows_ok: per run of 16 outputs, the 33 input columns their
 * windows span are maxed over the window's rows (two plain loads and a broadcast a row), then the
 * even columns (tap 0), the odd ones (tap 1) and the even ones one further (tap 2, a lane shift)
 * are maxed across. Columns outside the input become -inf: at the left edge the row's first
 * columns are shifted into place by a permute, past the right edge (the next row's, in plain
 * loads) they are replaced after the rows. Masked loads only where plain ones would leave the
 * plane: they took 1.3x the time warm and 4.5x with the input out of the caches. KH_, KW_: the
 * window when unrolled (3x3), else 0. A max keeps its second operand when either is NaN,
 * so a NaN tap never wins. */
BD_INLINE BD_AVX512 void maxpool_rows16(const int KH_, const int KW_, const bd_pool2d_shape *s,
                                        const float *x, float *y, int64_t c0, int64_t c1,
                                        int64_t oh0, int64_t oh1, const bd_pool_run *ru,
                                        int64_t nru) {
    const int64_t W = s->W, KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    for (int64_t c = c0; c < c1; c++) {
        const float *xp = x + c * s->H * W;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            const int64_t bh = oh * s->stride_h - s->pad_top;
            const int64_t kh0 = bh < 0 ? -bh : 0, kh1 = s->H - bh < KH ? s->H - bh : KH;
            const int all_rows = kh0 == 0 && kh1 == KH;
            float *yr = y + (c * s->OH + oh) * s->OW;
            for (const bd_pool_run *r = ru; r < ru + nru; r++) {
                const int64_t span = 2 * r->n - 2 + KW; /* at most 33 */
                __m512 va = lowest, vb = lowest, vc = lowest;
                if (all_rows && !r->lo && bh + KH - 1 <= r->lim) { /* plain loads, no masks */
                    const float *p = xp + bh * W + r->b;
                    for (int64_t kh = 0; kh < KH; kh++, p += W) {
                        va = _mm512_max_ps(_mm512_loadu_ps(p), va);
                        if (span > 16) vb = _mm512_max_ps(_mm512_loadu_ps(p + 16), vb);
                        if (span > 32) vc = _mm512_max_ps(_mm512_set1_ps(p[32]), vc);
                    }
                } else {
                    const __mmask16 ma = (__mmask16)r->valid, mb = (__mmask16)(r->valid >> 16),
                                    mc = (__mmask16)(r->valid >> 32);
                    /* lane i of the first vector: column b + i, the row's column i - lo */
                    const __m512i shift =
                        _mm512_add_epi32(lane, _mm512_set1_epi32(16 - (int)r->lo));
                    for (int64_t kh = kh0; kh < kh1; kh++) {
                        const int64_t ih = bh + kh;
                        if (ih <= r->lim) {
                            const float *p = xp + ih * W + r->b;
                            va = _mm512_max_ps(
                                r->lo ? _mm512_permutex2var_ps(lowest, shift,
                                                               _mm512_loadu_ps(xp + ih * W))
                                      : _mm512_loadu_ps(p),
                                va);
                            if (span > 16) vb = _mm512_max_ps(_mm512_loadu_ps(p + 16), vb);
                            if (span > 32) vc = _mm512_max_ps(_mm512_set1_ps(p[32]), vc);
                        } else { /* lanes outside the masks are neither read nor formed into an
                                    address */
                            const uintptr_t p = (uintptr_t)(xp + ih * W) + (uintptr_t)(r->b * 4);
                            va = _mm512_max_ps(_mm512_mask_loadu_ps(lowest, ma, (const float *)p),
                                               va);
                            vb = _mm512_max_ps(
                                _mm512_mask_loadu_ps(lowest, mb, (const float *)(p + 64)), vb);
                            vc = _mm512_max_ps(
                                _mm512_mask_loadu_ps(lowest, mc, (const float *)(p + 128)), vc);
                        }
                    }
                }
                if (r->fix) { /* columns past the input (the next row's, in plain loads) */
                    va = _mm512_mask_mov_ps(lowest, (__mmask16)r->valid, va);
                    vb = _mm512_mask_mov_ps(lowest, (__mmask16)(r->valid >> 16), vb);
                    vc = _mm512_mask_mov_ps(lowest, (__mmask16)(r->valid >> 32), vc);
                }
                const __m512 e = _mm512_permutex2var_ps(va, even, vb);
                __m512 v = e;
                if (KW >= 2) v = _mm512_max_ps(_mm512_permutex2var_ps(va, odd, vb), v);
                if (KW == 3)
                    v = _mm512_max_ps(_mm512_castsi512_ps(_mm512_alignr_epi32(
                                          _mm512_castps_si512(vc), _mm512_castps_si512(e), 1)),
                                      v);
                if (r->n == 16)
                    _mm512_storeu_ps(yr + r->ow, v);
                else
                    _mm512_mask_storeu_ps(yr + r->ow, (__mmask16)((1u << r->n) - 1u), v);
            }
        }
    }
}

/* Unit strides (GoogLeNet's branch pools): each input row's horizontal maxima over the run's
 * windows (the row's columns and the two lane shifts of them) are taken once and kept in
 * registers for the KH output rows that read the row (h0..h2, oldest first), run by run down the
 * plane; the rows' -inf columns as at stride 2. */
BD_INLINE BD_AVX512 __m512 maxpool_hrow16(const bd_pool2d_shape *s, const float *xp, int64_t ih,
                                          const bd_pool_run *r, int64_t span, __m512i shift) {
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    if (ih < 0 || ih >= s->H) return lowest;
    const __mmask16 ma = (__mmask16)r->valid, mb = (__mmask16)(r->valid >> 16);
    __m512 va, vb = lowest;
    if (ih <= r->lim) {
        const float *p = xp + ih * s->W + r->b;
        va = r->lo ? _mm512_permutex2var_ps(lowest, shift, _mm512_loadu_ps(xp + ih * s->W))
                   : _mm512_loadu_ps(p);
        if (span > 16) vb = _mm512_loadu_ps(p + 16);
    } else { /* lanes outside the masks are neither read nor formed into an address */
        const uintptr_t p = (uintptr_t)(xp + ih * s->W) + (uintptr_t)(r->b * 4);
        va = _mm512_mask_loadu_ps(lowest, ma, (const float *)p);
        vb = _mm512_mask_loadu_ps(lowest, mb, (const float *)(p + 64));
    }
    if (r->fix) { /* columns past the input (the next row's, in plain loads) */
        va = _mm512_mask_mov_ps(lowest, ma, va);
        vb = _mm512_mask_mov_ps(lowest, mb, vb);
    }
    const __m512i ia = _mm512_castps_si512(va), ib = _mm512_castps_si512(vb);
    __m512 v = _mm512_max_ps(va, lowest); /* a NaN never wins: max keeps its second operand */
    if (s->KW >= 2) v = _mm512_max_ps(_mm512_castsi512_ps(_mm512_alignr_epi32(ib, ia, 1)), v);
    if (s->KW == 3) v = _mm512_max_ps(_mm512_castsi512_ps(_mm512_alignr_epi32(ib, ia, 2)), v);
    return v;
}

BD_INLINE BD_AVX512 void maxpool_rows16_s1(const bd_pool2d_shape *s, const float *x, float *y,
                                           int64_t c0, int64_t c1, int64_t oh0, int64_t oh1,
                                           const bd_pool_run *ru, int64_t nru) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const int64_t KH = s->KH, top = s->pad_top;
    for (int64_t c = c0; c < c1; c++) {
        const float *xp = x + c * s->H * s->W;
        float *yp = y + c * s->OH * s->OW;
        for (const bd_pool_run *r = ru; r < ru + nru; r++) {
            const int64_t span = r->n - 1 + s->KW; /* at most 18 */
            const __m512i shift = _mm512_add_epi32(lane, _mm512_set1_epi32(16 - (int)r->lo));
            const __mmask16 mo = (__mmask16)((1u << r->n) - 1u);
            /* output row oh reads input rows oh - top .. oh - top + KH - 1 */
            __m512 h0 = maxpool_hrow16(s, xp, oh0 - top, r, span, shift);
            __m512 h1 = KH >= 2 ? maxpool_hrow16(s, xp, oh0 - top + 1, r, span, shift) : h0;
            __m512 h2 = KH >= 3 ? maxpool_hrow16(s, xp, oh0 - top + 2, r, span, shift) : h1;
            for (int64_t oh = oh0; oh < oh1; oh++) {
                const __m512 v = _mm512_max_ps(h2, _mm512_max_ps(h1, h0));
                _mm512_mask_storeu_ps(yp + oh * s->OW + r->ow, mo, v);
                if (oh + 1 == oh1) break;
                const __m512 next = maxpool_hrow16(s, xp, oh + 1 - top + KH - 1, r, span, shift);
                if (KH == 3)
                    h0 = h1, h1 = h2, h2 = next;
                else if (KH == 2)
                    h0 = h1 = h2, h2 = next; /* h0 = h1: the max stays of two rows */
                else
                    h0 = h1 = h2 = next;
            }
        }
    }
}

BD_AVX512 void bd_f32_maxpool_rows_avx512(const bd_pool2d_shape *s, const float *x, float *y,
                                          int64_t c0, int64_t c1, int64_t oh0, int64_t oh1,
                                          const bd_pool_run *ru, int64_t nru) {
    if (s->stride_w == 1)
        maxpool_rows16_s1(s, x, y, c0, c1, oh0, oh1, ru, nru);
    else if (s->KH == 3 && s->KW == 3)
        maxpool_rows16(3, 3, s, x, y, c0, c1, oh0, oh1, ru, nru);
    else
        maxpool_rows16(0, 0, s, x, y, c0, c1, oh0, oh1, ru, nru);
}

/* ---- a transposed copy ------------------------------------------------------------------- */

/* The 16 x 16 block in r transposed in registers: 32-bit, 64-bit and two 128-bit lane shuffles. */
BD_INLINE BD_AVX512 void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]),
                      c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
        t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
        r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
    }
}

/* bd_transpose_fn in 16 x 16 blocks, masked at the edges (conv2d.c's transposed pointwise
 * product into the planes: 8-16% of MobileNetV2's 7x7 expansions copied an element at a time). */
BD_AVX512 void bd_f32_transpose_avx512(const float *in, int64_t ldi, float *out, int64_t ldo,
                                       int64_t P, int64_t M) {
    for (int64_t m0 = 0; m0 < M; m0 += 16) {
        const int mn = M - m0 < 16 ? (int)(M - m0) : 16;
        const __mmask16 mk = (__mmask16)((1u << mn) - 1u);
        for (int64_t p0 = 0; p0 < P; p0 += 16) {
            const int pn = P - p0 < 16 ? (int)(P - p0) : 16;
            const __mmask16 pk = (__mmask16)((1u << pn) - 1u);
            __m512 r[16];
            for (int i = 0; i < 16; i++)
                r[i] = i < pn ? _mm512_maskz_loadu_ps(mk, in + (p0 + i) * ldi + m0)
                              : _mm512_setzero_ps();
            transpose16(r);
            for (int i = 0; i < mn; i++)
                _mm512_mask_storeu_ps(out + (m0 + i) * ldo + p0, pk, r[i]);
        }
    }
}

const bd_gemm_kernel bd_f32_gemm_kernel_avx512 = {"bd_f32_gemm_avx512_12x32",
                                                  BD_KERNELS_ISA_AVX512,
                                                  12,
                                                  32,
                                                  256,
                                                  240,
                                                  2048,
                                                  512,
                                                  bd_f32_gemm_avx512_12x32,
                                                  bd_f32_gemm_avx512_12x16,
                                                  NULL,
                                                  1,
                                                  bd_f32_conv_direct_avx512_12x32,
                                                  bd_f32_conv8_avx512,
                                                  bd_f32_conv16d_avx512,
                                                  1,
                                                  16,
                                                  16,
                                                  bd_f32_dw_planes_avx512,
                                                  bd_f32_conv_planes_avx512,
                                                  bd_f32_maxpool_rows_avx512,
                                                  16,
                                                  bd_f32_transpose_avx512};

#else
typedef int bd_gemm_avx512_unused; /* ISO C needs a declaration in every translation unit */
#endif

/* ---- bfloat16 GEMM (gemm_bf16.c) on AVX512_BF16 ----------------------------------------------- */

/* Per row, 16 floats at a time rounded by VCVTNEPS2BF16 into 8 words (pairs of k), stored in
 * place: row i's words at dst + i kc / 2 (12-row panels follow each other); the last block of a
 * row masked (zeros past K). */
BD_AVX512_BF16 void bd_bf16_pack_a_avx512(const float *A, int64_t lda, int64_t rows, int64_t K,
                                          int64_t k0, int64_t kc, uint32_t *dst) {
    const int64_t rows_p = (rows + 11) / 12 * 12;
    for (int64_t i = 0; i < rows_p; i++) {
        uint16_t *row = (uint16_t *)(dst + i * (kc / 2));
        const float *a = A + i * lda + k0;
        for (int64_t k = 0; k < kc; k += 16) {
            const int64_t left = i < rows ? K - (k0 + k) : 0; /* valid floats from a + k */
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF
                                : left > 0 ? (__mmask16)((1u << left) - 1u) : (__mmask16)0;
            const __m256i w = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, a + k));
            const __mmask16 sm = kc - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (kc - k)) - 1u);
            _mm256_mask_storeu_epi16(row + k, sm, w);
        }
    }
}

BD_AVX512_BF16 void bd_bf16_ukr_avx512(int64_t kp, const uint32_t *a, int64_t lda, const uint16_t *b,
                                       float *c, int64_t ldc, int m, const bd_ukr_epi *ep) {
    __m512 z = _mm512_setzero_ps();
    /* named accumulators: as an array, some were kept on the stack */
    __m512 a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z, a8 = z, a9 = z, a10 = z,
           a11 = z, b0 = z, b1 = z, b2 = z, b3 = z, b4 = z, b5 = z, b6 = z, b7 = z, b8 = z, b9 = z,
           b10 = z, b11 = z;
    for (int64_t p = 0; p < kp; p++) {
        const uint16_t *bp = b + p * 64;
        _mm_prefetch((const char *)(bp + 16 * 64), _MM_HINT_T0);
        _mm_prefetch((const char *)(bp + 16 * 64 + 32), _MM_HINT_T0);
        const __m512bh w0 = (__m512bh)_mm512_loadu_si512(bp);
        const __m512bh w1 = (__m512bh)_mm512_loadu_si512(bp + 32);
#define BD_BF16_ROW(r)                                                                             \
    {                                                                                              \
        const __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[r * lda + p]);                       \
        a##r = _mm512_dpbf16_ps(a##r, x, w0);                                                      \
        b##r = _mm512_dpbf16_ps(b##r, x, w1);                                                      \
    }
        BD_BF16_ROW(0)
        BD_BF16_ROW(1)
        BD_BF16_ROW(2)
        BD_BF16_ROW(3)
        BD_BF16_ROW(4)
        BD_BF16_ROW(5)
        BD_BF16_ROW(6)
        BD_BF16_ROW(7)
        BD_BF16_ROW(8)
        BD_BF16_ROW(9)
        BD_BF16_ROW(10)
        BD_BF16_ROW(11)
#undef BD_BF16_ROW
    }
    const int cols = ep->cols;
    const __mmask16 m0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u);
    const __mmask16 m1 = cols >= 32 ? (__mmask16)0xFFFF
                         : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1u) : (__mmask16)0;
    const __m512 bn0 = ep->bias_n ? _mm512_maskz_loadu_ps(m0, ep->bias_n) : z;
    const __m512 bn1 = ep->bias_n ? _mm512_maskz_loadu_ps(m1, ep->bias_n + 16) : z;
    const __m512 lo = _mm512_set1_ps(ep->act_min), hi = _mm512_set1_ps(ep->act_max);
#define BD_BF16_STORE(r)                                                                           \
    if (r < m)                                                                                     \
        store_row32(c + r * ldc, a##r, b##r, bn0, bn1, ep->bias_m ? ep->bias_m + r : NULL, ep, lo, \
                    hi, m0, m1);
    BD_BF16_STORE(0)
    BD_BF16_STORE(1)
    BD_BF16_STORE(2)
    BD_BF16_STORE(3)
    BD_BF16_STORE(4)
    BD_BF16_STORE(5)
    BD_BF16_STORE(6)
    BD_BF16_STORE(7)
    BD_BF16_STORE(8)
    BD_BF16_STORE(9)
    BD_BF16_STORE(10)
    BD_BF16_STORE(11)
#undef BD_BF16_STORE
}

/* Two rows of B (k, k + 1) at a time, 16 columns a half: each (through the prologue,
 * prologue16) rounded by VCVTNEPS2BF16, widened to 32 bits and the odd row's shifted into the
 * high halves, so that a column's pair is one word (k past K zero). */
BD_INLINE BD_AVX512 __m512 bf16_pre(__m512 v, const float *pre_a, const float *pre_b, int relu,
                                   int64_t k) {
    return pre_a ? prologue16(v, _mm512_set1_ps(pre_a[k]), _mm512_set1_ps(pre_b[k]), relu) : v;
}

BD_AVX512_BF16 void bd_bf16_pack_b_avx512(const float *b, int64_t ldb, int64_t K, int64_t n,
                                          int64_t j0, int64_t k0, int64_t kc, const float *pre_a,
                                          const float *pre_b, int pre_relu, uint16_t *dst) {
    const int64_t left = n - j0; /* columns of the panel that exist */
    const __mmask16 m0 = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1u) : 0;
    const __mmask16 m1 = left >= 32 ? (__mmask16)0xFFFF
                         : left > 16 ? (__mmask16)((1u << (left - 16)) - 1u) : (__mmask16)0;
    for (int64_t k = 0; k < kc; k += 2) {
        const int64_t kk = k0 + k;
        const float *r0 = b + kk * ldb + j0, *r1 = r0 + ldb;
        for (int h = 0; h < 2; h++) {
            const __mmask16 m = h ? m1 : m0;
            const __m512 v0 = kk < K ? bf16_pre(_mm512_maskz_loadu_ps(m, r0 + 16 * h), pre_a, pre_b,
                                                pre_relu, kk)
                                     : _mm512_setzero_ps();
            const __m512 v1 = kk + 1 < K ? bf16_pre(_mm512_maskz_loadu_ps(m, r1 + 16 * h), pre_a,
                                                    pre_b, pre_relu, kk + 1)
                                         : _mm512_setzero_ps();
            const __m512i w0 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(v0));
            const __m512i w1 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(v1));
            _mm512_storeu_si512(dst + k / 2 * 64 + 32 * h, _mm512_or_si512(w0, _mm512_slli_epi32(w1, 16)));
        }
    }
}
