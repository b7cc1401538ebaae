/* gemm_bf16.c — C = A * B with both operands rounded to bfloat16 and fp32 sums (--precision bf16
 * on the CPU target): B pre-packed once (weights), A rounded as each call packs it.
 *
 * Rounding is to nearest even, as VCVTNEPS2BF16 does (a NaN stays a NaN). A product of two
 * bfloat16 values is exact in fp32, so the only differences from the fp32 GEMM are the operands'
 * rounding (relative 2^-9 each) and the order of the sums. Where the CPU has AVX512_BF16 the
 * micro-kernel is bd_bf16_ukr_avx512 (gemm_avx512.c): one VDPBF16PS takes 32 products, twice the
 * work of an FMA at the same rate; elsewhere the same products in plain C.
 *
 * Layouts (K rounded up to a pair, Kp; the pair's even k in the low half of a 32-bit word, as
 * VDPBF16PS reads them):
 * - packed B: a 64-byte header, then panels of 32 columns; pair p of a panel is 64 bf16 values,
 *   columns 0..15 (two each), then 16..31. Columns past N and the k past K are zero.
 * - A in scratch, per row block of BF16_MC rows and depth block of BF16_KC (kc): panels of 12
 *   rows, row r's kc / 2 words (pairs) at panel + r kc / 2, as converted, without a transpose
 *   (scattering each word to its pair's 12 took a tenth of BERT's time); rows past M zero.
 */
#include <string.h>

#include "bd_kernels_internal.h"

enum { BF16_MR = 12, BF16_NR = 32, BF16_MC = 240, BF16_KC = 256 };

static int64_t imin(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

uint16_t bd_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(u >> 16 | 0x40); /* quiet NaN */
    u += 0x7FFFu + (u >> 16 & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

size_t bd_bf16_gemm_packed_b_bytes(int64_t K, int64_t N) {
    if (K < 0) K = 0;
    if (N < 0) N = 0;
    return (size_t)BD_PACK_HDR_FLOATS * sizeof(float) +
           (size_t)(round_up(N, BF16_NR) * round_up(K, 2)) * sizeof(uint16_t);
}

void bd_bf16_gemm_pack_b(int64_t K, int64_t N, const float *B, int64_t ldb, int transB,
                         void *packed) {
    if (K < 0) K = 0;
    if (N < 0) N = 0;
    bd_pack_hdr h = {0, BD_PACK_BF16_B, (int32_t)BD_KERNELS_ISA_PORTABLE, BF16_NR, N, K, 0};
    bd_pack_hdr_write(packed, &h);
    const int64_t Kp = round_up(K, 2);
    uint16_t *dst = (uint16_t *)((float *)packed + BD_PACK_HDR_FLOATS);
    for (int64_t j0 = 0; j0 < N; j0 += BF16_NR) {
        uint16_t *panel = dst + j0 * Kp;
        for (int64_t k = 0; k < Kp; k++)
            for (int64_t jj = 0; jj < BF16_NR; jj++) {
                const int64_t j = j0 + jj;
                const float v = k < K && j < N ? (transB ? B[j * ldb + k] : B[k * ldb + j]) : 0.0f;
                panel[k / 2 * 64 + jj / 16 * 32 + jj % 16 * 2 + k % 2] = bd_bf16_round(v);
            }
    }
}

/* The rows [0, rows) x depth [k0, k0 + kc) of A (kc even, rows <= BF16_MC) as rows of words,
 * row i's at dst + i kc / 2, up to a whole panel of 12; k past K and rows past `rows` zero. */
static void pack_a_portable(const float *A, int64_t lda, int transA, int64_t rows, int64_t K,
                            int64_t k0, int64_t kc, uint32_t *dst) {
    for (int64_t i = 0; i < round_up(rows, BF16_MR); i++)
        for (int64_t p = 0; p < kc / 2; p++) {
            const int64_t k = k0 + 2 * p;
            uint16_t lo = 0, hi = 0;
            if (i < rows) {
                if (k < K) lo = bd_bf16_round(transA ? A[k * lda + i] : A[i * lda + k]);
                if (k + 1 < K) hi = bd_bf16_round(transA ? A[(k + 1) * lda + i] : A[i * lda + k + 1]);
            }
            dst[i * (kc / 2) + p] = (uint32_t)lo | (uint32_t)hi << 16;
        }
}

/* The 12 x 32 tile of bd_bf16_ukr_avx512, in plain C. */
static void ukr_portable(int64_t kp, const uint32_t *a, int64_t lda, const uint16_t *b, float *c,
                         int64_t ldc, int m, const bd_ukr_epi *ep) {
    float acc[BF16_MR][BF16_NR] = {{0}};
    for (int64_t p = 0; p < kp; p++) {
        const uint16_t *bp = b + p * 64;
        for (int r = 0; r < BF16_MR; r++) {
            const float a0 = bf16_to_float((uint16_t)a[r * lda + p]);
            const float a1 = bf16_to_float((uint16_t)(a[r * lda + p] >> 16));
            for (int j = 0; j < BF16_NR; j++) {
                const uint16_t *e = bp + j / 16 * 32 + j % 16 * 2;
                acc[r][j] += a0 * bf16_to_float(e[0]) + a1 * bf16_to_float(e[1]);
            }
        }
    }
    for (int r = 0; r < m; r++) {
        float *cr = c + r * ldc;
        for (int j = 0; j < ep->cols; j++) {
            float v = acc[r][j];
            if (ep->bias_n) v += ep->bias_n[j];
            if (ep->load_c) v += cr[j];
            if (ep->bias_m) v += ep->bias_m[r];
            cr[j] = bd_act_apply(v, ep->act, ep->act_min, ep->act_max);
        }
    }
}

size_t bd_bf16_gemm_scratch_bytes(int64_t M, int64_t K) {
    const int64_t rows = round_up(imin(M < 1 ? 1 : M, BF16_MC), BF16_MR);
    return (size_t)(rows * imin(round_up(K < 1 ? 1 : K, 2), BF16_KC)) * sizeof(uint16_t) + 64;
}

void bd_bf16_gemm_packed_b(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A,
                           int64_t lda, int transA, const void *Bpacked, float *C, int64_t ldc,
                           const float *bias_n, const float *bias_m, int accumulate, int act,
                           float act_min, float act_max, void *scratch) {
    bd_pack_hdr h;
    bd_pack_hdr_read(Bpacked, BD_PACK_BF16_B, &h);
    BD_KCHECK(h.K == K && 0 <= n0 && n0 <= n1 && n1 <= h.rows && n0 % BF16_NR == 0);
    if (M <= 0 || n1 <= n0) return;
    const int hw = bd_kernels_cpu_has_bf16();
    const int64_t Kp = round_up(K, 2);
    const uint16_t *bpk = (const uint16_t *)((const float *)Bpacked + BD_PACK_HDR_FLOATS);
    uint32_t *apk = bd_align64(scratch);
    for (int64_t m0 = 0; m0 < M; m0 += BF16_MC) {
        const int64_t mc = imin(BF16_MC, M - m0);
        const float *Am = transA ? A + m0 : A + m0 * lda;
        for (int64_t k0 = 0; k0 < Kp; k0 += BF16_KC) {
            const int64_t kc = imin(BF16_KC, Kp - k0);
            const int first = k0 == 0, last = k0 + kc >= Kp;
#if BD_KERNELS_X86
            if (hw && !transA)
                bd_bf16_pack_a_avx512(Am, lda, mc, K, k0, kc, apk);
            else
#endif
                pack_a_portable(Am, lda, transA, mc, K, k0, kc, apk);
            for (int64_t j = n0; j < n1; j += BF16_NR) {
                const uint16_t *bp = bpk + j * Kp + k0 / 2 * 64;
                for (int64_t i = 0; i < mc; i += BF16_MR) {
                    bd_ukr_epi ep = {first && bias_n ? bias_n + j : NULL,
                                     first && bias_m ? bias_m + m0 + i : NULL,
                                     !first || accumulate,
                                     last ? act : BD_ACT_NONE,
                                     act_min,
                                     act_max,
                                     (int)imin(BF16_NR, n1 - j),
                                     0,
                                     0,
                                     0};
                    float *c = C + (m0 + i) * ldc + j;
                    const int m = (int)imin(BF16_MR, mc - i);
#if BD_KERNELS_X86
                    if (hw)
                        bd_bf16_ukr_avx512(kc / 2, apk + i * kc / 2, kc / 2, bp, c, ldc, m, &ep);
                    else
#endif
                        ukr_portable(kc / 2, apk + i * kc / 2, kc / 2, bp, c, ldc, m, &ep);
                }
            }
        }
    }
}

/* ---- a pointwise convolution: A from pack time, B (the input planes) packed per call ---------- */

/* Only where the CPU has AVX512_BF16 (conv2d.c takes it there alone). */
void bd_bf16_gemm_rows(const uint32_t *a, int64_t lda, int64_t m_lo, int64_t m_hi, const float *b,
                       int64_t ldb, int64_t N, int64_t K, const float *pre_a, const float *pre_b,
                       int pre_relu, float *c, int64_t ldc, const float *bias_m, int act,
                       float act_min, float act_max, void *scratch) {
#if BD_KERNELS_X86
    BD_KCHECK(bd_kernels_cpu_has_bf16());
    const int64_t Kp = round_up(K, 2);
    uint16_t *bpk = bd_align64(scratch);
    for (int64_t j = 0; j < N; j += BF16_NR)
        for (int64_t k0 = 0; k0 < Kp; k0 += BF16_KC) {
            const int64_t kc = imin(BF16_KC, Kp - k0);
            const int first = k0 == 0, last = k0 + kc >= Kp;
            bd_bf16_pack_b_avx512(b, ldb, K, N, j, k0, kc, pre_a, pre_b, pre_relu, bpk);
            for (int64_t i = m_lo; i < m_hi; i += BF16_MR) {
                bd_ukr_epi ep = {NULL, first && bias_m ? bias_m + (i - m_lo) : NULL, !first,
                                 last ? act : BD_ACT_NONE, act_min, act_max,
                                 (int)imin(BF16_NR, N - j), 0, 0, 0};
                const uint32_t *ai = a + i * lda + k0 / 2;
                float *ci = c + (i - m_lo) * ldc + j;
                bd_bf16_ukr_avx512(kc / 2, ai, lda, bpk, ci, ldc, (int)imin(BF16_MR, m_hi - i), &ep);
            }
        }
#else
    (void)a, (void)lda, (void)m_lo, (void)m_hi, (void)b, (void)ldb, (void)N, (void)K, (void)c;
    (void)pre_a, (void)pre_b, (void)pre_relu;
    (void)ldc, (void)bias_m, (void)act, (void)act_min, (void)act_max, (void)scratch;
    BD_KCHECK(!"bd_bf16_gemm_rows without AVX512_BF16");
#endif
}
