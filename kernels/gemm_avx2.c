/* gemm_avx2.c — AVX2 + FMA kernels: the 6x16 GEMM micro-kernel and the 8-lane convolutions.
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
 * bd_f32_conv8_avx2 (depthwise and narrow grouped convolutions) and bd_f32_conv8d_avx2 (direct
 * convolutions) put 8 channels in the lanes of a ymm register; the AVX-512 descriptor takes the
 * first too.
 */
#include "bd_kernels_internal.h"

#if BD_KERNELS_X86

#include <immintrin.h>
#include <string.h>

#define BD_ROWS_TARGET __attribute__((target("avx2,fma")))
#include "conv8_rows.h"

#define BD_AVX2   __attribute__((target("avx2,fma")))
#define BD_INLINE static inline __attribute__((always_inline))

/* e^-x for x already clamped to [-80, 87], as bd_kernels_internal.h explains, reduced on
 * s = x + n ln2 = -r as gemm_avx512.c's exp_neg16 is (the same roundings, one negation fewer). */
BD_INLINE BD_AVX2 __m256 exp_neg8(__m256 x) {
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(-1.44269504089f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 s = _mm256_fmadd_ps(n, _mm256_set1_ps(BD_LN2_HI), x);
    s = _mm256_fmadd_ps(n, _mm256_set1_ps(BD_LN2_LO), s);
    __m256 y = _mm256_fmadd_ps(_mm256_set1_ps(-BD_EXP_P0), s, _mm256_set1_ps(BD_EXP_P1));
    y = _mm256_fnmadd_ps(y, s, _mm256_set1_ps(BD_EXP_P2));
    y = _mm256_fnmadd_ps(y, s, _mm256_set1_ps(BD_EXP_P3));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(s, s), _mm256_sub_ps(_mm256_set1_ps(1.0f), s));
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    e = _mm256_slli_epi32(e, 23); /* the bits of 2^n */
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

/* 1 / d, the estimate refined by one Newton step. */
BD_INLINE BD_AVX2 __m256 recip8(__m256 d) {
    __m256 q = _mm256_rcp_ps(d);
    return _mm256_mul_ps(q, _mm256_fnmadd_ps(d, q, _mm256_set1_ps(2.0f)));
}

BD_INLINE BD_AVX2 __m256 silu8(__m256 x) {
    /* x clamped as bd_kernels_internal.h explains (NaN kept) */
    __m256 t = _mm256_min_ps(_mm256_set1_ps(87.0f), _mm256_max_ps(_mm256_set1_ps(-80.0f), x));
    return _mm256_mul_ps(x, recip8(_mm256_add_ps(exp_neg8(t), _mm256_set1_ps(1.0f))));
}

/* GELU with bd_kernels_internal.h's erf (NaN stays NaN: it takes the second branch's arithmetic). */
BD_INLINE BD_AVX2 __m256 gelu8(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 x = _mm256_mul_ps(v, _mm256_set1_ps(BD_SQRT1_2));
    const __m256 ax = _mm256_andnot_ps(sign, x), z = _mm256_mul_ps(x, x);
    __m256 s = _mm256_fmadd_ps(z, _mm256_set1_ps(BD_ERF_T9), _mm256_set1_ps(BD_ERF_T7));
    s = _mm256_fmadd_ps(z, s, _mm256_set1_ps(BD_ERF_T5));
    s = _mm256_fmadd_ps(z, s, _mm256_set1_ps(BD_ERF_T3));
    s = _mm256_fmadd_ps(z, s, _mm256_set1_ps(BD_ERF_T1));
    const __m256 small = _mm256_mul_ps(ax, s); /* |erf| below 0.5 */
    /* past 10, erf is 1 in float; clamped there, an infinite x gives no inf * 0 */
    const __m256 axc = _mm256_min_ps(ax, _mm256_set1_ps(10.0f)), zc = _mm256_mul_ps(axc, axc);
    const __m256 t = recip8(_mm256_fmadd_ps(axc, _mm256_set1_ps(BD_ERF_P), _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_fmadd_ps(t, _mm256_set1_ps(BD_ERF_A5), _mm256_set1_ps(BD_ERF_A4));
    p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(BD_ERF_A3));
    p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(BD_ERF_A2));
    p = _mm256_fmadd_ps(t, p, _mm256_set1_ps(BD_ERF_A1));
    const __m256 ez = exp_neg8(_mm256_min_ps(_mm256_set1_ps(87.0f), zc));
    const __m256 big = _mm256_fnmadd_ps(_mm256_mul_ps(p, t), ez, _mm256_set1_ps(1.0f));
    __m256 e = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
    e = _mm256_or_ps(e, _mm256_and_ps(sign, x)); /* the sign of x back on |erf| */
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

BD_INLINE BD_AVX2 __m256 act8(__m256 v, int act, __m256 lo, __m256 hi) {
    /* max/min return their second operand when one is NaN: NaN passes through */
    if (act == BD_ACT_RELU) return _mm256_max_ps(_mm256_setzero_ps(), v);
    if (act == BD_ACT_CLIP) return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    if (act == BD_ACT_SILU) return silu8(v);
    if (act == BD_ACT_GELU) return gelu8(v);
    if (act == BD_ACT_HARD_SWISH) {
        __m256 t = _mm256_fmadd_ps(v, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
        return _mm256_mul_ps(v, _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_setzero_ps(), t)));
    }
    return v;
}

/* The statements after OTHER with ACT the activation `act`, a constant (the statements compiled
 * once per case, act8's tests folded away), for the activations the kernels meet after most
 * convolutions; OTHER for the rest. The kernels choose once per tile or row, not per vector: per
 * row in the 6x16 tile's epilogue, a pointwise expansion of 16 inputs had spent as long storing
 * as in its 16 steps of k. BD_WITH_ACT: the rest run the same statements, ACT the value itself. */
#define BD_WITH_ACT_OR(act, OTHER, ...)                                                            \
    switch (act) {                                                                                 \
    case BD_ACT_NONE: { const int ACT = BD_ACT_NONE; __VA_ARGS__; } break;                       \
    case BD_ACT_RELU: { const int ACT = BD_ACT_RELU; __VA_ARGS__; } break;                       \
    case BD_ACT_CLIP: { const int ACT = BD_ACT_CLIP; __VA_ARGS__; } break;                       \
    case BD_ACT_SILU: { const int ACT = BD_ACT_SILU; __VA_ARGS__; } break;                       \
    case BD_ACT_HARD_SWISH: { const int ACT = BD_ACT_HARD_SWISH; __VA_ARGS__; } break;           \
    default: OTHER; break;                                                                         \
    }
#define BD_WITH_ACT(act, ...) BD_WITH_ACT_OR(act, { const int ACT = (act); __VA_ARGS__; }, __VA_ARGS__)

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

/* The epilogue of one whole row of a tile that adds nothing from memory, its activation ACT a
 * constant: the common case of the GEMM path, stored without the per-row tests of store_row16. */
BD_INLINE BD_AVX2 void store_row16_plain(float *cr, __m256 v0, __m256 v1, const float *bm,
                                         const int ACT, __m256 lo, __m256 hi) {
    if (bm) {
        const __m256 b = _mm256_broadcast_ss(bm);
        v0 = _mm256_add_ps(v0, b);
        v1 = _mm256_add_ps(v1, b);
    }
    _mm256_storeu_ps(cr, act8(v0, ACT, lo, hi));
    _mm256_storeu_ps(cr + 8, act8(v1, ACT, lo, hi));
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

/* The lanes of an 8-bit mask, as a vector mask. */
BD_INLINE BD_AVX2 __m256i lanes8(unsigned bits) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), bit), bit);
}

/* The epilogue of one row of a direct tile: + C (gathered from the runs), + row bias, activation,
 * stored per run (plain stores for a run of all 16 columns: a masked store is microcoded on some
 * CPUs). */
BD_INLINE BD_AVX2 void store_runs16(float *cr, __m256 v0, __m256 v1, const float *bm,
                                    const bd_ukr_epi *ep, __m256 lo, __m256 hi,
                                    const bd_ukr_out *o) {
    if (ep->load_c) {
        __m256 o0 = _mm256_setzero_ps(), o1 = _mm256_setzero_ps();
        for (int s = 0; s < o->nseg; s++) { /* the runs' lanes are disjoint: masked-off ones load 0 */
            const float *p = cr + o->coff[s];
            o0 = _mm256_or_ps(o0, _mm256_maskload_ps(p, lanes8(o->mask[s] & 0xFFu)));
            o1 = _mm256_or_ps(o1, _mm256_maskload_ps(p + 8, lanes8(o->mask[s] >> 8 & 0xFFu)));
        }
        v0 = _mm256_add_ps(v0, o0);
        v1 = _mm256_add_ps(v1, o1);
    }
    if (bm) {
        const __m256 b = _mm256_broadcast_ss(bm);
        v0 = _mm256_add_ps(v0, b);
        v1 = _mm256_add_ps(v1, b);
    }
    v0 = act8(v0, ep->act, lo, hi);
    v1 = act8(v1, ep->act, lo, hi);
    for (int s = 0; s < o->nseg; s++) {
        float *p = cr + o->coff[s];
        const unsigned m = o->mask[s] & 0xFFFFu;
        if (m == 0xFFFFu) {
            _mm256_storeu_ps(p, v0);
            _mm256_storeu_ps(p + 8, v1);
            continue;
        }
        if (m & 0xFFu) _mm256_maskstore_ps(p, lanes8(m & 0xFFu), v0);
        if (m >> 8) _mm256_maskstore_ps(p + 8, lanes8(m >> 8), v1);
    }
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
#define ACC_STORE_PLAIN(r, ACT)                                                                    \
    do {                                                                                           \
        if (R > r)                                                                                 \
            store_row16_plain(c + r * ldc, c##r##0, c##r##1, bm ? bm + r : NULL, ACT, lo, hi);     \
    } while (0)
#define ACC_STORE_ALL_PLAIN(ACT)                                                                   \
    do {                                                                                           \
        ACC_STORE_PLAIN(0, ACT);                                                                   \
        ACC_STORE_PLAIN(1, ACT);                                                                   \
        ACC_STORE_PLAIN(2, ACT);                                                                   \
        ACC_STORE_PLAIN(3, ACT);                                                                   \
        ACC_STORE_PLAIN(4, ACT);                                                                   \
        ACC_STORE_PLAIN(5, ACT);                                                                   \
    } while (0)
#define ACC_STORE(r)                                                                               \
    do {                                                                                           \
        if (R > r && D)                                                                            \
            store_runs16(c + r * ldc, c##r##0, c##r##1, ep->bias_m ? ep->bias_m + r : NULL, ep,  \
                         lo, hi, out);                                                             \
        else if (R > r && NV == 1)                                                                 \
            store_half(c + r * ldc, c##r##0, bn0, ep->bias_m ? ep->bias_m + r : NULL, ep, lo, hi, \
                       part, m0);                                                                  \
        else if (R > r)                                                                            \
            store_row16(c + r * ldc, c##r##0, c##r##1, bn0, bn1,                                   \
                        ep->bias_m ? ep->bias_m + r : NULL, ep, lo, hi, part, m0, m1);             \
    } while (0)

/* R rows (1..6) x NV vectors of 8 columns (2: the whole tile, 1: its first half). D (direct):
 * B row k is read in place at b + boff[k] and the tile is stored through `out` (NV == 2), as
 * gemm_avx512.c's direct tile is. */
BD_INLINE BD_AVX2 void ukr_6x16(const int R, const int NV, const int D, int64_t kc, const float *a,
                                const float *b, const int64_t *boff, float *c, int64_t ldc,
                                const bd_ukr_out *out, const bd_ukr_epi *ep) {
    ACC_ZERO(0);
    ACC_ZERO(1);
    ACC_ZERO(2);
    ACC_ZERO(3);
    ACC_ZERO(4);
    ACC_ZERO(5);
    for (int r = 0; r < R && !D; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 15), _MM_HINT_T0);
    }
    int64_t k = 0;
    if (R == 1 && !D) {
        /* One row (a classifier's Gemm or an LSTM step at batch 1): each vector's FMAs form one
         * dependent chain, one step per FMA latency, which held a Zen 3 core to 16 bytes of B a
         * cycle. Four chains over alternate k steps, summed at the end, run at the load ports'
         * rate: the LSTM of hidden 256, its R read from L3 every step, 0.84-0.88x of its time.
         * gemm_avx512.c's prefetch of a pre-packed B measured no gain here (MobileNetV3's
         * classifier products, streamed from memory, 0.03 ms slower each with it). */
        __m256 p0 = _mm256_setzero_ps(), p1 = p0, q0 = p0, q1 = p0, r0 = p0, r1 = p0;
        for (; k + 4 <= kc; k += 4, a += 24, b += 64) {
            const __m256 x0 = _mm256_broadcast_ss(a), x1 = _mm256_broadcast_ss(a + 6);
            const __m256 x2 = _mm256_broadcast_ss(a + 12), x3 = _mm256_broadcast_ss(a + 18);
            c00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b), c00);
            p0 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + 16), p0);
            q0 = _mm256_fmadd_ps(x2, _mm256_loadu_ps(b + 32), q0);
            r0 = _mm256_fmadd_ps(x3, _mm256_loadu_ps(b + 48), r0);
            if (NV > 1) {
                c01 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b + 8), c01);
                p1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b + 24), p1);
                q1 = _mm256_fmadd_ps(x2, _mm256_loadu_ps(b + 40), q1);
                r1 = _mm256_fmadd_ps(x3, _mm256_loadu_ps(b + 56), r1);
            }
        }
        c00 = _mm256_add_ps(_mm256_add_ps(c00, p0), _mm256_add_ps(q0, r0));
        c01 = _mm256_add_ps(_mm256_add_ps(c01, p1), _mm256_add_ps(q1, r1));
    }
    for (; k < kc; k++) {
        const float *bk = D ? b + boff[k] : b;
        __m256 b0 = _mm256_loadu_ps(bk);
        __m256 b1 = NV > 1 ? _mm256_loadu_ps(bk + 8) : _mm256_setzero_ps();
        ACC_FMA(0);
        ACC_FMA(1);
        ACC_FMA(2);
        ACC_FMA(3);
        ACC_FMA(4);
        ACC_FMA(5);
        a += 6;
        if (!D) b += 16;
    }
    /* columns that exist: ep->cols of the 8 * NV computed */
    const int cols = ep->cols < 8 * NV ? ep->cols : 8 * NV, part = cols < 8 * NV;
    const __m256 lo = _mm256_set1_ps(ep->act_min), hi = _mm256_set1_ps(ep->act_max);
    const int whole_run = D && out->nseg == 1 && (out->mask[0] & 0xFFFFu) == 0xFFFFu;
    if ((D ? whole_run : NV == 2 && !part && !ep->bias_n) && !ep->load_c) {
        const float *bm = ep->bias_m;
        if (D) c += out->coff[0];
        /* the other activations (GELU) take the generic epilogue below */
        BD_WITH_ACT_OR(ep->act, (void)0, ACC_STORE_ALL_PLAIN(ACT); return);
    }
    const __m256i ncols = _mm256_set1_epi32(cols);
    const __m256i m0 = _mm256_cmpgt_epi32(ncols, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i m1 = _mm256_cmpgt_epi32(ncols, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15));
    __m256 bn0 = _mm256_setzero_ps(), bn1 = _mm256_setzero_ps();
    if (ep->bias_n) {
        bn0 = load8(ep->bias_n, part, m0);
        if (NV > 1) bn1 = load8(ep->bias_n + 8, part, m1);
    }
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
#undef ACC_STORE_PLAIN
#undef ACC_STORE_ALL_PLAIN

static BD_AVX2 void bd_f32_gemm_avx2_6x16(int64_t kc, const float *a, const float *b, float *c,
                                          int64_t ldc, int m, const bd_ukr_epi *ep) {
    switch (m) {
    case 6: ukr_6x16(6, 2, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 5: ukr_6x16(5, 2, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 4: ukr_6x16(4, 2, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 3: ukr_6x16(3, 2, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 2: ukr_6x16(2, 2, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    default: ukr_6x16(1, 2, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    }
}

/* bd_ukr_direct_fn: B rows read in place, the tile stored through `out` (conv2d.c's pointwise
 * convolutions of few outputs read their input planes so instead of packing them). */
static BD_AVX2 void bd_f32_conv_direct_avx2_6x16(int64_t kc, const float *a, const float *b,
                                                 const int64_t *boff, float *c, int64_t ldc, int m,
                                                 const bd_ukr_out *out, const bd_ukr_epi *ep) {
    switch (m) {
    case 6: ukr_6x16(6, 2, 1, kc, a, b, boff, c, ldc, out, ep); break;
    case 5: ukr_6x16(5, 2, 1, kc, a, b, boff, c, ldc, out, ep); break;
    case 4: ukr_6x16(4, 2, 1, kc, a, b, boff, c, ldc, out, ep); break;
    case 3: ukr_6x16(3, 2, 1, kc, a, b, boff, c, ldc, out, ep); break;
    case 2: ukr_6x16(2, 2, 1, kc, a, b, boff, c, ldc, out, ep); break;
    default: ukr_6x16(1, 2, 1, kc, a, b, boff, c, ldc, out, ep); break;
    }
}

/* The first 8 columns only (for column edges with at most 8 columns left). */
static BD_AVX2 void bd_f32_gemm_avx2_6x8(int64_t kc, const float *a, const float *b, float *c,
                                         int64_t ldc, int m, const bd_ukr_epi *ep) {
    switch (m) {
    case 6: ukr_6x16(6, 1, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 5: ukr_6x16(5, 1, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 4: ukr_6x16(4, 1, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 3: ukr_6x16(3, 1, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    case 2: ukr_6x16(2, 1, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    default: ukr_6x16(1, 1, 0, kc, a, b, NULL, c, ldc, NULL, ep); break;
    }
}

/* ---- 8 output channels in the lanes (depthwise, narrow groups) ------------------------------- */

/* The activation over n 8-lane pixels, its choice made once: inside the pixel loop, the
 * dispatch with every activation's code inlined four times slowed the depthwise layers. */
BD_INLINE BD_AVX2 void act_row8(float *o, int64_t n, int act, __m256 lo, __m256 hi) {
    if (act == BD_ACT_NONE) return;
    BD_WITH_ACT(act, for (int64_t i = 0; i < n; i++)
                         _mm256_store_ps(o + i * 8, act8(_mm256_load_ps(o + i * 8), ACT, lo, hi)));
}

/* conv8_row of a 3x3 depthwise convolution: the 9 weights in registers, loaded once per row (in
 * conv8_row's loop gcc reloads them for every 4 pixels, as the stores to orow might change them),
 * and the activation ACT applied before the sums are stored. */
BD_INLINE BD_AVX2 void dw3_row(const int ACT, const float *p, int64_t ps, int64_t cs, int64_t hs,
                               int64_t OW, const float *w8, __m256 bias, __m256 lo, __m256 hi,
                               float *orow) {
    __m256 wv[9];
    for (int t = 0; t < 9; t++)
        wv[t] = _mm256_load_ps(w8 + t * 8);
    for (int64_t ow = 0; ow < OW; ow += 4) {
        const float *q0 = p + ow * ps;
        __m256 s0 = bias, s1 = bias, s2 = bias, s3 = bias;
        for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) {
                const float *q = q0 + kh * hs + kw * cs;
                const __m256 wt = wv[kh * 3 + kw];
                s0 = _mm256_fmadd_ps(wt, _mm256_load_ps(q), s0);
                s1 = _mm256_fmadd_ps(wt, _mm256_load_ps(q + ps), s1);
                s2 = _mm256_fmadd_ps(wt, _mm256_load_ps(q + 2 * ps), s2);
                s3 = _mm256_fmadd_ps(wt, _mm256_load_ps(q + 3 * ps), s3);
            }
        _mm256_store_ps(orow + ow * 8, act8(s0, ACT, lo, hi));
        _mm256_store_ps(orow + ow * 8 + 8, act8(s1, ACT, lo, hi));
        _mm256_store_ps(orow + ow * 8 + 16, act8(s2, ACT, lo, hi));
        _mm256_store_ps(orow + ow * 8 + 24, act8(s3, ACT, lo, hi));
    }
}

/* One output row from the interleaved rows at p (row stride rs floats), pixels four at a time
 * (four FMA chains). CG_ == 0: depthwise (lane times lane); CG_ > 0: the group's CG_ input
 * values broadcast. KH_ > 0: taps KH_ x KW_ and column stride SW_ with column dilation 1, known
 * at compile time, so a row's taps are constant offsets (and depthwise weights stay in
 * registers). A last partial group computes pixels up to the next multiple of 4 too: orow has
 * room for them, and their reads stay in the scratch (spare pixels follow a chunk's rows). */
BD_INLINE BD_AVX2 void conv8_row(const int CG_, const int KH_, const int KW_, const int SW_,
                                 const bd_conv8_job *j, const float *p, int64_t rs, const float *w8,
                                 __m256 bias, float *orow) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ > 0 ? KH_ : s->KH, KW = KH_ > 0 ? KW_ : s->KW, OW = s->OW;
    const int64_t cs = KH_ > 0 ? 8 : s->dil_w * 8, ps = KH_ > 0 ? SW_ * 8 : s->stride_w * 8;
    const int64_t hs = s->dil_h * rs, Cg = CG_;
    const __m256 lo = _mm256_set1_ps(j->act_min), hi = _mm256_set1_ps(j->act_max);
    if (CG_ == 0 && KH_ == 3 && KW_ == 3) {
        BD_WITH_ACT_OR(j->act,
                       { /* the rest applied after the row is stored */
                           dw3_row(BD_ACT_NONE, p, ps, cs, hs, OW, w8, bias, lo, hi, orow);
                           act_row8(orow, OW, j->act, lo, hi);
                       },
                       dw3_row(ACT, p, ps, cs, hs, OW, w8, bias, lo, hi, orow));
        return;
    }
    for (int64_t ow = 0; ow < OW; ow += 4) {
        const float *q0 = p + ow * ps;
        __m256 s0 = bias, s1 = bias, s2 = bias, s3 = bias;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                const float *q = q0 + kh * hs + kw * cs;
                if (CG_ == 0) {
                    const __m256 wt = _mm256_load_ps(w8 + (kh * KW + kw) * 8);
                    s0 = _mm256_fmadd_ps(wt, _mm256_load_ps(q), s0);
                    s1 = _mm256_fmadd_ps(wt, _mm256_load_ps(q + ps), s1);
                    s2 = _mm256_fmadd_ps(wt, _mm256_load_ps(q + 2 * ps), s2);
                    s3 = _mm256_fmadd_ps(wt, _mm256_load_ps(q + 3 * ps), s3);
                    continue;
                }
                const float *wc = w8 + (kh * KW + kw) * Cg * 8;
                for (int64_t c = 0; c < Cg; c++) {
                    const __m256 wt = _mm256_loadu_ps(wc + c * 8); /* packed: 4-byte aligned */
                    s0 = _mm256_fmadd_ps(wt, _mm256_broadcast_ss(q + c), s0);
                    s1 = _mm256_fmadd_ps(wt, _mm256_broadcast_ss(q + ps + c), s1);
                    s2 = _mm256_fmadd_ps(wt, _mm256_broadcast_ss(q + 2 * ps + c), s2);
                    s3 = _mm256_fmadd_ps(wt, _mm256_broadcast_ss(q + 3 * ps + c), s3);
                }
            }
        _mm256_store_ps(orow + ow * 8, s0);
        _mm256_store_ps(orow + ow * 8 + 8, s1);
        _mm256_store_ps(orow + ow * 8 + 16, s2);
        _mm256_store_ps(orow + ow * 8 + 24, s3);
    }
    act_row8(orow, OW, j->act, lo, hi);
}

BD_INLINE BD_AVX2 void conv8_run(const int CG_, const int KH_, const int KW_, const int SW_,
                                 const bd_conv8_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int64_t taps = s->KH * s->KW, OW = s->OW, OHW = s->OH * s->OW;
    const int64_t cols = bd_conv8_cols(s), rs = cols * 8, ow8 = (OW + 7) / 8 * 8;
    const int64_t lane_lo = j->lane_lo, lane_hi = j->lane_hi;
    float *w8 = j->scratch, *orow = w8 + taps * 8, *rows = orow + ow8 * 8;
    const float *wk = j->w;
    if (CG_ == 0) { /* depthwise: the lanes' taps side by side */
        for (int64_t t = 0; t < taps; t++)
            for (int c = 0; c < 8; c++)
                w8[t * 8 + c] = c < lane_hi ? j->w[c * taps + t] : 0.0f;
        wk = w8;
    }
    float b[8];
    for (int c = 0; c < 8; c++)
        b[c] = c >= lane_lo && c < lane_hi && j->bias ? j->bias[c] : 0.0f;
    const __m256 bias = _mm256_loadu_ps(b);
    memset(orow + OW * 8, 0, (size_t)((ow8 - OW) * 8) * sizeof(float)); /* read, never stored */
    for (int64_t r0 = j->oh0; r0 < j->oh1; r0 += BD_CONV8_CHUNK) {
        const int64_t nr = j->oh1 - r0 < BD_CONV8_CHUNK ? j->oh1 - r0 : BD_CONV8_CHUNK;
        const int64_t rows_in = (nr - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
        const int64_t ih0 = r0 * s->stride_h - s->pad_top;
        for (int64_t r = 0; r < rows_in; r++)
            conv8_prep_row(s, j->x, j->nin, ih0 + r, cols, rows + r * rs, 8);
        for (int64_t o = 0; o < nr; o++) {
            conv8_row(CG_, KH_, KW_, SW_, j, rows + o * s->stride_h * rs, rs, wk, bias, orow);
            conv8_store_row(orow, 8, OW, j->y + (r0 + o) * OW, OHW, lane_lo, lane_hi);
        }
    }
}

/* The shapes worth a copy specialised at compile time; the rest run the general loops. */
BD_INLINE BD_AVX2 void conv8_taps(const int CG_, const bd_conv8_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int k = s->dil_w != 1              ? 0
                  : s->KH == 3 && s->KW == 3 ? 3
                  : s->KH == 5 && s->KW == 5 ? 5
                                             : 0;
    if (k == 3 && s->stride_w == 1)
        conv8_run(CG_, 3, 3, 1, j);
    else if (k == 3 && s->stride_w == 2)
        conv8_run(CG_, 3, 3, 2, j);
    else if (k == 5 && s->stride_w == 1 && CG_ == 0)
        conv8_run(CG_, 5, 5, 1, j);
    else if (k == 5 && s->stride_w == 2 && CG_ == 0)
        conv8_run(CG_, 5, 5, 2, j);
    else
        conv8_run(CG_, 0, 0, 0, j);
}

BD_AVX2 void bd_f32_conv8_avx2(const bd_conv8_job *j) {
    const int64_t Cg = j->s->C / j->s->group;
    if (j->s->group == j->s->C && j->s->group == j->s->M) {
        conv8_taps(0, j);
        return;
    }
    switch (Cg) { /* the group's inputs, known at compile time: its loop unrolled */
    case 8: conv8_taps(8, j); break;
    case 4: conv8_taps(4, j); break;
    case 1: conv8_run(1, 0, 0, 0, j); break;
    case 2: conv8_run(2, 0, 0, 0, j); break;
    case 3: conv8_run(3, 0, 0, 0, j); break;
    case 5: conv8_run(5, 0, 0, 0, j); break;
    case 6: conv8_run(6, 0, 0, 0, j); break;
    case 7: conv8_run(7, 0, 0, 0, j); break;
    default: BD_KCHECK(Cg >= 1 && Cg <= 8);
    }
}

/* ---- direct convolution, 8 output channels in the lanes -------------------------------------- */

/* Six pixels of one 8-channel block, activated, to e (8 floats per pixel). */
BD_INLINE BD_AVX2 void act_store6(float *e, __m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4,
                                  __m256 v5, int act, __m256 lo, __m256 hi) {
    _mm256_store_ps(e, act8(v0, act, lo, hi));
    _mm256_store_ps(e + 8, act8(v1, act, lo, hi));
    _mm256_store_ps(e + 16, act8(v2, act, lo, hi));
    _mm256_store_ps(e + 24, act8(v3, act, lo, hi));
    _mm256_store_ps(e + 32, act8(v4, act, lo, hi));
    _mm256_store_ps(e + 40, act8(v5, act, lo, hi));
}

/* The pixels [0, npix) of a chunk (its rows one after another, OW per row) for NOB (1, 2)
 * blocks of 8 output channels, six pixels at a time: pixel i reads the interleaved rows from
 * px[i] (row stride rs, input block stride bs floats). w: the first block's packed weights (wob
 * floats per block). KH_ > 0: taps KH_ x KW_, column dilation 1, known at compile time. The last
 * group's pixels past npix recompute pixel 0 into the spare end of o0 / o1. */
BD_INLINE BD_AVX2 void conv8d_pixels(const int NOB, const int KH_, const int KW_,
                                     const bd_conv8d_job *j, const float *rows, int64_t npix,
                                     int64_t rs, int64_t bs, int64_t ncb, int clast, const float *w,
                                     int64_t wob, __m256 bias0, __m256 bias1, float *o0,
                                     float *o1) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ > 0 ? KH_ : s->KH, KW = KH_ > 0 ? KW_ : s->KW, OW = s->OW;
    const int64_t cs = KH_ > 0 ? 8 : s->dil_w * 8, hs = s->dil_h * rs;
    const int64_t ps = s->stride_w * 8, prow = s->stride_h * rs;
    const __m256 lo = _mm256_set1_ps(j->act_min), hi = _mm256_set1_ps(j->act_max);
    int64_t row = 0, col = 0; /* of pixel g, stepped without divisions */
    for (int64_t g = 0; g < npix; g += 6) {
        const float *px[6];
        for (int i = 0, r = (int)row, c = (int)col; i < 6; i++) {
            px[i] = g + i < npix ? rows + r * prow + c * ps : rows;
            if (++c == OW) c = 0, r++;
        }
        for (col += 6; col >= OW; col -= OW)
            row++;
        __m256 a0 = bias0, a1 = bias0, a2 = bias0, a3 = bias0, a4 = bias0, a5 = bias0;
        __m256 b0 = bias1, b1 = bias1, b2 = bias1, b3 = bias1, b4 = bias1, b5 = bias1;
        const float *wp = w;
        /* one input channel c of the tap at off: two weight loads, six broadcasts, 12 FMAs */
#define BD_STEP(i, A, B)                                                                           \
    x = _mm256_broadcast_ss(px[i] + off + c);                                                      \
    A = _mm256_fmadd_ps(wa, x, A);                                                                 \
    if (NOB == 2) B = _mm256_fmadd_ps(wb, x, B);
#define BD_CHANNEL                                                                                 \
    {                                                                                              \
        const __m256 wa = _mm256_loadu_ps(wp); /* packed: 4-byte aligned */                        \
        const __m256 wb = NOB == 2 ? _mm256_loadu_ps(wp + wob) : wa;                               \
        __m256 x;                                                                                  \
        BD_STEP(0, a0, b0)                                                                         \
        BD_STEP(1, a1, b1)                                                                         \
        BD_STEP(2, a2, b2)                                                                         \
        BD_STEP(3, a3, b3)                                                                         \
        BD_STEP(4, a4, b4)                                                                         \
        BD_STEP(5, a5, b5)                                                                         \
    }
        const int64_t nfull = clast == 8 ? ncb : ncb - 1;
        for (int64_t cb = 0; cb < nfull; cb++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    const int64_t off = cb * bs + kh * hs + kw * cs;
                    for (int c = 0; c < 8; c++, wp += 8)
                        BD_CHANNEL
                }
        if (nfull < ncb) /* a last partial block: its channels, then past its padding */
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++, wp += (8 - clast) * 8) {
                    const int64_t off = nfull * bs + kh * hs + kw * cs;
                    for (int c = 0; c < clast; c++, wp += 8)
                        BD_CHANNEL
                }
#undef BD_CHANNEL
#undef BD_STEP
        act_store6(o0 + g * 8, a0, a1, a2, a3, a4, a5, j->act, lo, hi);
        if (NOB == 2) act_store6(o1 + g * 8, b0, b1, b2, b3, b4, b5, j->act, lo, hi);
    }
}

BD_INLINE BD_AVX2 __m256 conv8d_bias(const bd_conv8d_job *j, int64_t m0) {
    float b[8];
    for (int c = 0; c < 8; c++)
        b[c] = j->bias && m0 + c >= j->m_lo && m0 + c < j->m_hi ? j->bias[m0 + c] : 0.0f;
    return _mm256_loadu_ps(b);
}

BD_INLINE BD_AVX2 void conv8d_run(const int KH_, const int KW_, const bd_conv8d_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int64_t Cg = s->C / s->group, ncb = (Cg + 7) / 8, taps = s->KH * s->KW;
    const int clast = (int)(Cg - (ncb - 1) * 8);
    const int64_t OW = s->OW, OHW = s->OH * s->OW, HW = s->H * s->W;
    const int64_t cols = bd_conv8_cols(s), rs = cols * 8, R = bd_conv8d_chunk_rows(s);
    const int64_t rows_max = (R - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
    const int64_t bs = rows_max * rs, wob = ncb * taps * 64, opix = bd_conv8d_out_pixels(s);
    float *o0 = j->scratch, *o1 = o0 + opix * 8, *rows = o1 + opix * 8;
    for (int64_t r0 = j->oh0; r0 < j->oh1; r0 += R) {
        const int64_t nr = j->oh1 - r0 < R ? j->oh1 - r0 : R;
        const int64_t rows_in = (nr - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
        const int64_t ih0 = r0 * s->stride_h - s->pad_top;
        for (int64_t cb = 0; cb < ncb; cb++)
            for (int64_t r = 0; r < rows_in; r++)
                conv8_prep_row(s, j->x + cb * 8 * HW, cb + 1 < ncb ? 8 : clast, ih0 + r, cols,
                               rows + cb * bs + r * rs, 8);
        for (int64_t m0 = j->m_lo / 8 * 8; m0 < j->m_hi; m0 += 16) {
            const int two = m0 + 8 < j->m_hi;
            const __m256 bias0 = conv8d_bias(j, m0), bias1 = two ? conv8d_bias(j, m0 + 8) : bias0;
            const float *w = j->w + m0 / 8 * wob;
            if (two)
                conv8d_pixels(2, KH_, KW_, j, rows, nr * OW, rs, bs, ncb, clast, w, wob, bias0,
                              bias1, o0, o1);
            else
                conv8d_pixels(1, KH_, KW_, j, rows, nr * OW, rs, bs, ncb, clast, w, wob, bias0,
                              bias0, o0, o1);
            const int64_t lo0 = j->m_lo > m0 ? j->m_lo - m0 : 0;
            const int64_t hi0 = j->m_hi - m0 < 8 ? j->m_hi - m0 : 8;
            const int64_t hi1 = j->m_hi - m0 - 8 < 8 ? j->m_hi - m0 - 8 : 8;
            for (int64_t o = 0; o < nr; o++) {
                float *yrow = j->y + m0 * OHW + (r0 + o) * OW;
                conv8_store_row(o0 + o * OW * 8, 8, OW, yrow, OHW, lo0, hi0);
                if (two) conv8_store_row(o1 + o * OW * 8, 8, OW, yrow + 8 * OHW, OHW, 0, hi1);
            }
        }
    }
}

BD_AVX2 void bd_f32_conv8d_avx2(const bd_conv8d_job *j) {
    const bd_conv2d_shape *s = j->s;
    if (s->KH == 3 && s->KW == 3 && s->dil_w == 1)
        conv8d_run(3, 3, j);
    else if (s->KH == 1 && s->KW == 1)
        conv8d_run(1, 1, j);
    else
        conv8d_run(0, 0, j);
}

/* ---- max pooling at column stride 2 ---------------------------------------------------------- */

/* bd_f32_maxpool_rows_avx512's scheme on 8 lanes: per run of 8 outputs, the 17 input columns
 * their windows span maxed over the rows, then split into even and odd columns (two shuffles and
 * a lane permute each) and maxed across the taps; columns outside the input replaced by -inf
 * after the rows; masked loads only where plain ones would leave the plane, masked stores only
 * for a last partial run. */
BD_INLINE BD_AVX2 void maxpool_rows8(const int KH_, const int KW_, const bd_pool2d_shape *s,
                                     const float *x, float *y, int64_t c0, int64_t c1, int64_t oh0,
                                     int64_t oh1, const bd_pool_run *ru, int64_t nru) {
    const int64_t W = s->W, KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i next = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 lowest = _mm256_set1_ps(-INFINITY);
    for (int64_t c = c0; c < c1; c++) {
        const float *xp = x + c * s->H * W;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            const int64_t bh = oh * s->stride_h - s->pad_top;
            const int64_t kh0 = bh < 0 ? -bh : 0, kh1 = s->H - bh < KH ? s->H - bh : KH;
            const int all_rows = kh0 == 0 && kh1 == KH;
            float *yr = y + (c * s->OH + oh) * s->OW;
            for (const bd_pool_run *r = ru; r < ru + nru; r++) {
                if (KW_ == 3 && all_rows && r->n == 8 && !r->lo && r->b + 18 <= W) {
                    /* a whole run inside the rows: per row, columns 0..15 and 2..17 of the run
                     * as loaded; the even, odd and next even columns are then one in-lane
                     * shuffle each (outputs in the order 0 1 4 5 | 2 3 6 7), put in order by one
                     * permute at the end instead of one per column set */
                    const float *p = xp + bh * W + r->b;
                    __m256 a = lowest, b = lowest, a2 = lowest, b2 = lowest;
                    for (int64_t kh = 0; kh < KH; kh++, p += W) {
                        a = _mm256_max_ps(_mm256_loadu_ps(p), a);
                        b = _mm256_max_ps(_mm256_loadu_ps(p + 8), b);
                        a2 = _mm256_max_ps(_mm256_loadu_ps(p + 2), a2);
                        b2 = _mm256_max_ps(_mm256_loadu_ps(p + 10), b2);
                    }
                    const __m256 v = _mm256_max_ps(
                        _mm256_max_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xDD)),
                        _mm256_shuffle_ps(a2, b2, 0x88));
                    _mm256_storeu_ps(yr + r->ow, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8)));
                    continue;
                }
                const int64_t span = 2 * r->n - 2 + KW; /* at most 17 */
                /* the valid columns as lane masks */
                const __m256i oka = _mm256_cmpeq_epi32(
                    _mm256_and_si256(_mm256_set1_epi32((int)(r->valid & 0xFF)), bit), bit);
                const __m256i okb = _mm256_cmpeq_epi32(
                    _mm256_and_si256(_mm256_set1_epi32((int)(r->valid >> 8 & 0xFF)), bit), bit);
                const int okc = (int)(r->valid >> 16 & 1);
                __m256 va = lowest, vb = lowest, vc = lowest;
                if (all_rows && !r->lo && bh + KH - 1 <= r->lim) { /* plain loads, no masks */
                    const float *p = xp + bh * W + r->b;
                    for (int64_t kh = 0; kh < KH; kh++, p += W) {
                        va = _mm256_max_ps(_mm256_loadu_ps(p), va);
                        if (span > 8) vb = _mm256_max_ps(_mm256_loadu_ps(p + 8), vb);
                        if (span > 16) vc = _mm256_max_ps(_mm256_broadcast_ss(p + 16), vc);
                    }
                } else {
                    /* lane i of the first vector: column b + i, the row's column i - lo */
                    const __m256i shift = _mm256_sub_epi32(lane, _mm256_set1_epi32((int)r->lo));
                    for (int64_t kh = kh0; kh < kh1; kh++) {
                        const int64_t ih = bh + kh;
                        if (ih <= r->lim) {
                            const float *p = xp + ih * W + r->b;
                            va = _mm256_max_ps(r->lo ? _mm256_permutevar8x32_ps(
                                                           _mm256_loadu_ps(xp + ih * W), shift)
                                                     : _mm256_loadu_ps(p),
                                               va);
                            if (span > 8) vb = _mm256_max_ps(_mm256_loadu_ps(p + 8), vb);
                            if (span > 16) vc = _mm256_max_ps(_mm256_broadcast_ss(p + 16), vc);
                        } else { /* lanes outside the masks are neither read nor formed into an
                                    address */
                            const uintptr_t p = (uintptr_t)(xp + ih * W) + (uintptr_t)(r->b * 4);
                            va = _mm256_max_ps(_mm256_maskload_ps((const float *)p, oka), va);
                            vb =
                                _mm256_max_ps(_mm256_maskload_ps((const float *)(p + 32), okb), vb);
                            if (okc)
                                vc =
                                    _mm256_max_ps(_mm256_broadcast_ss((const float *)(p + 64)), vc);
                        }
                    }
                }
                if (r->lo || r->fix) { /* columns outside the input */
                    va = _mm256_blendv_ps(lowest, va, _mm256_castsi256_ps(oka));
                    vb = _mm256_blendv_ps(lowest, vb, _mm256_castsi256_ps(okb));
                    if (!okc) vc = lowest;
                }
                /* [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6] */
                const __m256 e = _mm256_castpd_ps(
                    _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(va, vb, 0x88)), 0xD8));
                __m256 v = e;
                if (KW >= 2)
                    v = _mm256_max_ps(_mm256_castpd_ps(_mm256_permute4x64_pd(
                                          _mm256_castps_pd(_mm256_shuffle_ps(va, vb, 0xDD)), 0xD8)),
                                      v);
                if (KW == 3) /* the even columns one further: lanes 1..7 of e, then column 16 */
                    v = _mm256_max_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(e, next), vc, 0x80),
                                      v);
                if (r->n == 8) /* a masked store is microcoded on some CPUs */
                    _mm256_storeu_ps(yr + r->ow, v);
                else
                    _mm256_maskstore_ps(yr + r->ow,
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r->n), lane), v);
            }
        }
    }
}

/* maxpool_rows16_s1 on 8 lanes: each input row's horizontal maxima over the run's windows taken
 * once (the lanes one and two further by permutes of both vectors and a blend) and kept for the
 * KH output rows that read it. */
BD_INLINE BD_AVX2 __m256 maxpool_hrow8(const bd_pool2d_shape *s, const float *xp, int64_t ih,
                                       const bd_pool_run *r, int64_t span, __m256i shift,
                                       __m256i oka, __m256i okb) {
    const __m256 lowest = _mm256_set1_ps(-INFINITY);
    if (ih < 0 || ih >= s->H) return lowest;
    const __m256i next = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
    const __m256i next2 = _mm256_setr_epi32(2, 3, 4, 5, 6, 7, 0, 1);
    __m256 va, vb = lowest;
    if (ih <= r->lim) {
        const float *p = xp + ih * s->W + r->b;
        va = r->lo ? _mm256_permutevar8x32_ps(_mm256_loadu_ps(xp + ih * s->W), shift)
                   : _mm256_loadu_ps(p);
        if (span > 8) vb = _mm256_loadu_ps(p + 8);
    } else { /* lanes outside the masks are neither read nor formed into an address */
        const uintptr_t p = (uintptr_t)(xp + ih * s->W) + (uintptr_t)(r->b * 4);
        va = _mm256_maskload_ps((const float *)p, oka);
        vb = _mm256_maskload_ps((const float *)(p + 32), okb);
    }
    if (r->lo || r->fix) { /* columns outside the input */
        va = _mm256_blendv_ps(lowest, va, _mm256_castsi256_ps(oka));
        vb = _mm256_blendv_ps(lowest, vb, _mm256_castsi256_ps(okb));
    }
    __m256 v = _mm256_max_ps(va, lowest); /* a NaN never wins: max keeps its second operand */
    if (s->KW >= 2)
        v = _mm256_max_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(va, next),
                                          _mm256_permutevar8x32_ps(vb, next), 0x80),
                          v);
    if (s->KW == 3)
        v = _mm256_max_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(va, next2),
                                          _mm256_permutevar8x32_ps(vb, next2), 0xC0),
                          v);
    return v;
}

BD_INLINE BD_AVX2 void maxpool_rows8_s1(const bd_pool2d_shape *s, const float *x, float *y,
                                        int64_t c0, int64_t c1, int64_t oh0, int64_t oh1,
                                        const bd_pool_run *ru, int64_t nru) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const int64_t KH = s->KH, top = s->pad_top;
    for (int64_t c = c0; c < c1; c++) {
        const float *xp = x + c * s->H * s->W;
        float *yp = y + c * s->OH * s->OW;
        for (const bd_pool_run *r = ru; r < ru + nru; r++) {
            const int64_t span = r->n - 1 + s->KW; /* at most 10 */
            const __m256i shift = _mm256_sub_epi32(lane, _mm256_set1_epi32((int)r->lo));
            const __m256i oka = _mm256_cmpeq_epi32(
                _mm256_and_si256(_mm256_set1_epi32((int)(r->valid & 0xFF)), bit), bit);
            const __m256i okb = _mm256_cmpeq_epi32(
                _mm256_and_si256(_mm256_set1_epi32((int)(r->valid >> 8 & 0xFF)), bit), bit);
            const __m256i mo = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r->n), lane);
            __m256 h0 = maxpool_hrow8(s, xp, oh0 - top, r, span, shift, oka, okb);
            __m256 h1 =
                KH >= 2 ? maxpool_hrow8(s, xp, oh0 - top + 1, r, span, shift, oka, okb) : h0;
            __m256 h2 =
                KH >= 3 ? maxpool_hrow8(s, xp, oh0 - top + 2, r, span, shift, oka, okb) : h1;
            for (int64_t oh = oh0; oh < oh1; oh++) {
                const __m256 v = _mm256_max_ps(h2, _mm256_max_ps(h1, h0));
                if (r->n == 8) /* a masked store is microcoded on some CPUs */
                    _mm256_storeu_ps(yp + oh * s->OW + r->ow, v);
                else
                    _mm256_maskstore_ps(yp + oh * s->OW + r->ow, mo, v);
                if (oh + 1 == oh1) break;
                const __m256 nx =
                    maxpool_hrow8(s, xp, oh + 1 - top + KH - 1, r, span, shift, oka, okb);
                if (KH == 3)
                    h0 = h1, h1 = h2, h2 = nx;
                else if (KH == 2)
                    h0 = h1 = h2, h2 = nx; /* h0 = h1: the max stays of two rows */
                else
                    h0 = h1 = h2 = nx;
            }
        }
    }
}

BD_AVX2 void bd_f32_maxpool_rows_avx2(const bd_pool2d_shape *s, const float *x, float *y,
                                      int64_t c0, int64_t c1, int64_t oh0, int64_t oh1,
                                      const bd_pool_run *ru, int64_t nru) {
    if (s->stride_w == 1)
        maxpool_rows8_s1(s, x, y, c0, c1, oh0, oh1, ru, nru);
    else if (s->KH == 3 && s->KW == 3)
        maxpool_rows8(3, 3, s, x, y, c0, c1, oh0, oh1, ru, nru);
    else
        maxpool_rows8(0, 0, s, x, y, c0, c1, oh0, oh1, ru, nru);
}

/* ---- few input channels on the output planes ------------------------------------------------ */

/* gemm_avx512.c's bd_f32_conv_planes_avx512 with 8 columns a vector: per output row, the input
 * columns every tap reads for a run of up to BD_PLANES_COLS output columns staged in scratch, one
 * aligned row per tap (stride 2: two loads, a shuffle and a permute taking the even columns; a
 * vector reaching into the padding assembled lane by lane, a few a row); then per 24 columns
 * (three vectors; one or two left over), per 4 output channels, 12 sums, each tap three aligned
 * loads feeding 12 FMAs with 4 broadcast weights (half a row of the 8-channel packing). On the
 * GEMM instead, these stems pack an im2col of 27 rows and ran at a third of the FMA peak. */
BD_INLINE BD_AVX2 void conv_planes_stage8(const int C_, const int KH_, const int KW_, const int SW,
                                          const bd_conv_planes_job *j, int64_t oh, int64_t cb,
                                          int64_t ncols, int64_t rs, float *st) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW, C = C_ ? C_ : s->C;
    const int64_t H = s->H, W = s->W, nvec = (ncols + 7) / 8;
    const int64_t first = cb * SW - s->pad_left;
    for (int64_t c = 0; c < C; c++)
        for (int64_t kh = 0; kh < KH; kh++) {
            const int64_t ih = oh * s->stride_h - s->pad_top + kh;
            float *d = st + (c * KH + kh) * KW * rs;
            if (ih < 0 || ih >= H) {
                memset(d, 0, (size_t)(KW * rs) * sizeof(float));
                continue;
            }
            const float *row = j->x + (c * H + ih) * W;
            for (int64_t kw = 0; kw < KW; kw++, d += rs)
                for (int64_t v = 0; v < nvec; v++) {
                    const int64_t b = first + 8 * SW * v + kw; /* the vector's first column */
                    __m256 x;
                    if (b >= 0 && b + 8 * SW <= W) { /* inside the row: plain loads */
                        x = _mm256_loadu_ps(row + b);
                        if (SW == 2) {
                            const __m256 t = _mm256_shuffle_ps(x, _mm256_loadu_ps(row + b + 8), 0x88);
                            x = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), 0xD8));
                        }
                    } else {
                        float t[8];
                        for (int i = 0; i < 8; i++) {
                            const int64_t col = b + SW * i;
                            t[i] = col >= 0 && col < W ? row[col] : 0.0f;
                        }
                        x = _mm256_loadu_ps(t);
                    }
                    _mm256_store_ps(d + v * 8, x);
                }
        }
}

/* 4 output channels from m0 over NV (1 to 3) vectors of 8 staged columns from column ow of the
 * run, of which n exist; next_row: OW where the tile has a next output row, else 0. */
BD_INLINE BD_AVX2 void conv_planes_block8(const int NV, const bd_conv_planes_job *j, int64_t taps,
                                          const float *st, int64_t rs, int64_t ow, float *yr,
                                          int64_t m0, int64_t n, int64_t next_row) {
    const int64_t OHW = j->s->OH * j->s->OW;
    const float *wt = j->w + m0 / 8 * 8 * taps + m0 % 8;
    float bias[4];
    for (int i = 0; i < 4; i++)
        bias[i] = j->bias && m0 + i < j->m_hi && m0 + i >= j->m_lo ? j->bias[m0 + i] : 0.0f;
    __m256 a0 = _mm256_set1_ps(bias[0]), a1 = _mm256_set1_ps(bias[1]), a2 = _mm256_set1_ps(bias[2]),
           a3 = _mm256_set1_ps(bias[3]);
    __m256 b0 = a0, b1 = a1, b2 = a2, b3 = a3, c0 = a0, c1 = a1, c2 = a2, c3 = a3;
    const float *p = st + ow;
#pragma GCC unroll 3
    for (int64_t t = 0; t < taps; t++, p += rs, wt += 8) {
        const __m256 x0 = _mm256_load_ps(p), x1 = NV > 1 ? _mm256_load_ps(p + 8) : x0;
        const __m256 x2 = NV > 2 ? _mm256_load_ps(p + 16) : x0;
#define BD_CH(i, A, B, C)                                                                          \
    {                                                                                              \
        const __m256 wb = _mm256_broadcast_ss(wt + i);                                             \
        A = _mm256_fmadd_ps(wb, x0, A);                                                            \
        if (NV > 1) B = _mm256_fmadd_ps(wb, x1, B);                                                \
        if (NV > 2) C = _mm256_fmadd_ps(wb, x2, C);                                                \
    }
        BD_CH(0, a0, b0, c0)
        BD_CH(1, a1, b1, c1)
        BD_CH(2, a2, b2, c2)
        BD_CH(3, a3, b3, c3)
#undef BD_CH
    }
    const __m256 lo = _mm256_set1_ps(j->act_min), hi = _mm256_set1_ps(j->act_max);
    yr += m0 * OHW;
    /* the same columns of the next output row, for writing, as the AVX-512 kernel does */
    for (int i = 0; i < 4 && next_row; i++)
        for (int v = 0; v < NV && m0 + i >= j->m_lo && m0 + i < j->m_hi; v++)
            __builtin_prefetch(yr + i * OHW + next_row + 8 * v, 1, 3);
    /* the last vector's columns that exist (n - 8 (NV - 1) of 8) */
    const int last = (int)(n - 8 * (NV - 1)), part = last < 8;
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(last),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#define BD_OUT(i, A, B, C, ACT)                                                                    \
    if (m0 + i >= j->m_lo && m0 + i < j->m_hi) {                                                   \
        float *o = yr + i * OHW;                                                                   \
        store8(o, act8(A, ACT, lo, hi), NV == 1 && part, m);                                       \
        if (NV > 1) store8(o + 8, act8(B, ACT, lo, hi), NV == 2 && part, m);                       \
        if (NV > 2) store8(o + 16, act8(C, ACT, lo, hi), part, m);                                 \
    }
#define BD_OUT_ALL(ACT)                                                                            \
    BD_OUT(0, a0, b0, c0, ACT)                                                                     \
    BD_OUT(1, a1, b1, c1, ACT)                                                                     \
    BD_OUT(2, a2, b2, c2, ACT)                                                                     \
    BD_OUT(3, a3, b3, c3, ACT)
    BD_WITH_ACT(j->act, BD_OUT_ALL(ACT));
#undef BD_OUT_ALL
#undef BD_OUT
}

enum { PLANES_AHEAD = 2 }; /* output rows */
BD_INLINE BD_AVX2 void conv_planes_run8(const int C_, const int KH_, const int KW_, const int SW,
                                        const bd_conv_planes_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int64_t KH = KH_ ? KH_ : s->KH, KW = KW_ ? KW_ : s->KW, C = C_ ? C_ : s->C;
    const int64_t H = s->H, W = s->W, OW = s->OW, taps = C * KH * KW;
    const int64_t rs = OW < BD_PLANES_COLS ? (OW + 15) / 16 * 16 : BD_PLANES_COLS; /* staged row */
    float *st = (float *)(((uintptr_t)j->scratch + 63) & ~(uintptr_t)63);
    for (int64_t cb = 0; cb < OW; cb += BD_PLANES_COLS) {
        const int64_t ncols = OW - cb < BD_PLANES_COLS ? OW - cb : BD_PLANES_COLS;
        for (int64_t oh = j->oh0; oh < j->oh1; oh++) {
            /* the rows output row oh + PLANES_AHEAD adds to the window */
            const int64_t next = oh * s->stride_h - s->pad_top + PLANES_AHEAD * s->stride_h;
            for (int64_t c = 0; c < C && oh + PLANES_AHEAD < j->oh1; c++)
                bd_prefetch_rows(j->x + c * H * W, next + KH - s->stride_h, next + KH, H, W);
            conv_planes_stage8(C_, KH_, KW_, SW, j, oh, cb, ncols, rs, st);
            float *yr = j->y + oh * OW + cb;
            const int64_t next_row = oh + 1 < j->oh1 ? OW : 0;
            for (int64_t ow = 0; ow < ncols; ow += 24) {
                /* three vectors of columns at a time (12 sums), the last one or two alone */
                const int64_t n = ncols - ow < 24 ? ncols - ow : 24;
                for (int64_t m0 = j->m_lo / 4 * 4; m0 < j->m_hi; m0 += 4) {
                    if (n > 16)
                        conv_planes_block8(3, j, taps, st, rs, ow, yr + ow, m0, n, next_row);
                    else if (n > 8)
                        conv_planes_block8(2, j, taps, st, rs, ow, yr + ow, m0, n, next_row);
                    else
                        conv_planes_block8(1, j, taps, st, rs, ow, yr + ow, m0, n, next_row);
                }
            }
        }
    }
}

BD_AVX2 void bd_f32_conv_planes_avx2(const bd_conv_planes_job *j) {
    const bd_conv2d_shape *s = j->s;
    const int k3 = s->KH == 3 && s->KW == 3, c3 = s->C == 3;
    if (c3 && k3 && s->stride_w == 1)
        conv_planes_run8(3, 3, 3, 1, j);
    else if (c3 && k3)
        conv_planes_run8(3, 3, 3, 2, j);
    else if (s->stride_w == 1)
        conv_planes_run8(0, 0, 0, 1, j);
    else
        conv_planes_run8(0, 0, 0, 2, j);
}

/* ---- transposed copy ---------------------------------------------------------------------- */

/* bd_transpose_fn in 8 x 8 blocks shuffled in registers (conv8_rows.h's transpose8), the
 * columns and rows past the last whole block copied one at a time: conv2d.c's transposed
 * pointwise product into the planes (7x7 images' expansions, a squeeze-and-excitation block's
 * one-pixel convolutions), which on AVX2 had run as GEMMs of 16-column tiles over 49 pixels or
 * one. */
BD_AVX2 void bd_f32_transpose_avx2(const float *in, int64_t ldi, float *out, int64_t ldo,
                                   int64_t P, int64_t M) {
    const int64_t P8 = P / 8 * 8, M8 = M / 8 * 8;
    for (int64_t m0 = 0; m0 < M8; m0 += 8)
        for (int64_t p0 = 0; p0 < P8; p0 += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(in + (p0 + i) * ldi + m0);
            transpose8(r);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(out + (m0 + i) * ldo + p0, r[i]);
        }
    for (int64_t m = M8; m < M; m++)
        for (int64_t p = 0; p < P8; p++) out[m * ldo + p] = in[p * ldi + m];
    for (int64_t p = P8; p < P; p++)
        for (int64_t m = 0; m < M; m++) out[m * ldo + p] = in[p * ldi + m];
}

const bd_gemm_kernel bd_f32_gemm_kernel_avx2 = {"bd_f32_gemm_avx2_6x16",
                                                BD_KERNELS_ISA_AVX2,
                                                6,
                                                16,
                                                256,
                                                240,
                                                2048,
                                                512,
                                                bd_f32_gemm_avx2_6x16,
                                                bd_f32_gemm_avx2_6x8,
                                                NULL,
                                                1,
                                                bd_f32_conv_direct_avx2_6x16,
                                                bd_f32_conv8_avx2,
                                                bd_f32_conv8d_avx2,
                                                0,
                                                8,
                                                8,
                                                NULL,
                                                bd_f32_conv_planes_avx2,
                                                bd_f32_maxpool_rows_avx2,
                                                8,
                                                bd_f32_transpose_avx2};

#else
typedef int bd_gemm_avx2_unused; /* ISO C needs a declaration in every translation unit */
#endif
