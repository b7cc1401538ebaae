/* gemm_i8.c — exact 8-bit integer matrix products: C (int32) = (A - a_zero) x (B - b_zero).
 *
 * MatMulInteger and QLinearMatMul with a constant B (a quantized model's weights). B is packed
 * once as B' = B - b_zero in int8, with its column sums; then for any A,
 *     C[i][j] = sum_k A'[i][k] B'[k][j] - a_zero' * colsum(B')[j],
 * where A' = A as uint8 (int8 A is moved by +128, and a_zero with it), so that every product is
 * the unsigned x signed byte product of AVX-512 VNNI's vpdpbusd: four of them summed into each
 * int32 lane per instruction, 64 multiply-adds a cycle per port, without saturation. The sums are
 * exact while K <= BD_I8_GEMM_MAX_K.
 *
 * Packed B: a 64-byte header, colsum(B') (int32, N rounded up to 32), then panels of 32 columns;
 * a panel holds, for every group of 4 consecutive k (K rounded up to 4, zeros past K), the 4
 * bytes of each of its 32 columns together: 128 bytes, the two zmm operands of one step. The
 * layout is the same for every instruction set (but for the split pairs, below). The
 * micro-kernel computes an 8 x 32 tile in 16 zmm accumulators: per k group, 2 loads of B, 8
 * broadcasts of 4 bytes of A and 16 vpdpbusd.
 * It reads uint8 A in place when the tile has 8 rows and K is a multiple of 4; otherwise (and
 * for int8 A, flipped on the way) the rows are first copied to scratch (4 bytes of k per row, 32
 * bytes per k group), zero past K and past the last row. Stores mask the columns outside
 * [n0, n1) and skip the padding rows.
 *
 * With AMX-INT8 (and the AVX-512 kernels chosen), whole 32-row blocks of C when K is a multiple
 * of 64 are computed on AMX tiles from the same packed B (gemm_amx), the rest by the VNNI tile.
 *
 * Without AVX-512 VNNI (or when the AVX-512 kernels are not chosen): an AVX2 tile, by AVX-VNNI's
 * vpdpbusd on ymm where the CPU has it; else the split tiles (quad_split_avx2's comment), by
 * vpmaddubsw on a B packed for them: its pairs of k that could saturate vpmaddubsw's int16 sums
 * keep their first weight in the panel, and the second is added apart, from a list of
 * corrections per column after the panels (header.split); a B packed at run time (the
 * convolution's im2col slices) by vpmaddwd on sign-extended int16. Else the same loops in plain
 * C (a split B's corrections added after them). */
#include <stdbool.h>
#include <string.h>

#include "bd_kernels_internal.h"

#if BD_KERNELS_X86
#include <immintrin.h>
#endif

enum { I8_MR = 8, I8_NR = 32, I8_HDR = 64, I8_MAGIC = 0x38693862 /* "b8i8" */ };
enum { I8_SPLIT_MR = 16 }; /* the split tiles' rows */
/* Bytes of packed B a column block of the VNNI loop runs over (in L2 with A and C). */
enum { I8_B_BLOCK = 256 * 1024 };

typedef struct i8_hdr {
    int32_t magic, split; /* split: the pairs that could saturate vpmaddubsw are split (below) */
    int64_t K, N;
} i8_hdr;

/* A correction of the split packing: column j (its list, in order of columns) adds the product
 * of these 4 bytes with A's 4 bytes of k group q. */
typedef struct i8_fix {
    int32_t q;
    int8_t w[4];
} i8_fix;

static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

size_t bd_i8_gemm_flipped_bytes(int64_t K, int64_t N) {
    int64_t np = round_up(N < 0 ? 0 : N, I8_NR);
    return (size_t)(I8_HDR + np * 4 + np * round_up(K < 0 ? 0 : K, 4));
}

/* Where the split packing's per-column starts (np + 1 int32) and corrections lie. */
static int64_t fix_starts_at(int64_t K, int64_t np) {
    return round_up(I8_HDR + np * 4 + np * round_up(K, 4), 8);
}

static int64_t fixes_at(int64_t K, int64_t np) {
    return fix_starts_at(K, np) + round_up((np + 1) * 4, 8);
}

/* Room for a correction per column and k group at most; a model's weights use a fraction of a
 * percent of it (the rest is never written, nor, allocated, resident). */
size_t bd_i8_gemm_packed_b_bytes(int64_t K, int64_t N) {
    int64_t np = round_up(N < 0 ? 0 : N, I8_NR), k4 = round_up(K < 0 ? 0 : K, 4);
    return (size_t)(fixes_at(k4, np) + np * (k4 / 4) * (int64_t)sizeof(i8_fix));
}

/* Whether B is packed for the split tiles (quad_split_avx2): where no VNNI of either width runs. */
static bool split_tiles(void) {
#if BD_KERNELS_X86
    bd_kernels_isa isa = bd_kernels_get_isa();
    return isa >= BD_KERNELS_ISA_AVX2 &&
           !(isa == BD_KERNELS_ISA_AVX512 && bd_kernels_cpu_has_vnni()) &&
           !bd_kernels_cpu_has_avx_vnni();
#else
    return false;
#endif
}

int bd_i8_gemm_pack_b(int64_t K, int64_t N, const void *B, int64_t ldb, int b_signed, int32_t b_zero,
                      void *packed) {
    if (K < 0 || N < 0 || K > BD_I8_GEMM_MAX_K) return -1;
    int64_t np = round_up(N, I8_NR), k4 = round_up(K, 4);
    unsigned char *base = packed;
    int32_t *colsum = (int32_t *)(base + I8_HDR);
    int8_t *panels = (int8_t *)(base + I8_HDR + np * 4);
    memset(colsum, 0, (size_t)np * 4);
    memset(panels, 0, (size_t)(np * k4));
    const uint8_t *bu = B;
    const int8_t *bs = B;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) {
            int32_t v = (b_signed ? (int32_t)bs[k * ldb + j] : (int32_t)bu[k * ldb + j]) - b_zero;
            if (v < -128 || v > 127) return -1;
            colsum[j] += v;
            panels[(j / I8_NR) * (k4 * I8_NR) + (k / 4) * (4 * I8_NR) + (j % I8_NR) * 4 + k % 4] =
                (int8_t)v;
        }
    i8_hdr h = {I8_MAGIC, split_tiles(), K, N};
    memcpy(base, &h, sizeof h);
    if (!h.split) return 0;
    int32_t *start = (int32_t *)(base + fix_starts_at(k4, np));
    i8_fix *fix = (i8_fix *)(base + fixes_at(k4, np));
    int32_t n = 0;
    for (int64_t j = 0; j < np; j++) {
        start[j] = n;
        for (int64_t q = 0; j < N && q < k4 / 4; q++) {
            int8_t *v = panels + (j / I8_NR) * (k4 * I8_NR) + q * (4 * I8_NR) + (j % I8_NR) * 4;
            i8_fix f = {(int32_t)q, {0, 0, 0, 0}};
            if (bd_i8_split4(v, f.w)) fix[n++] = f;
        }
    }
    start[np] = n;
    return 0;
}

/* The 4 bytes of k group q of 16 columns, from rows r0..r3 (16 bytes each) flipped by f: two
 * byte interleaves and two 16-bit ones make the 4 x 16 transposition, 64 bytes out. The four
 * rows' int8 values are added into the columns' int16 sums s[0] (columns 0..7), s[1] (8..15). */
#if BD_KERNELS_X86
static void group16_sse2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                         __m128i f, uint8_t *out, __m128i s[2]) {
    __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)r0), f);
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)r1), f);
    __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i *)r2), f);
    __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i *)r3), f);
    __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
    __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
    /* each 16-bit lane of ab0 holds a's byte low, b's high: the arithmetic shifts sign-extend */
    s[0] = _mm_add_epi16(s[0], _mm_add_epi16(_mm_srai_epi16(_mm_slli_epi16(ab0, 8), 8), _mm_srai_epi16(ab0, 8)));
    s[0] = _mm_add_epi16(s[0], _mm_add_epi16(_mm_srai_epi16(_mm_slli_epi16(cd0, 8), 8), _mm_srai_epi16(cd0, 8)));
    s[1] = _mm_add_epi16(s[1], _mm_add_epi16(_mm_srai_epi16(_mm_slli_epi16(ab1, 8), 8), _mm_srai_epi16(ab1, 8)));
    s[1] = _mm_add_epi16(s[1], _mm_add_epi16(_mm_srai_epi16(_mm_slli_epi16(cd1, 8), 8), _mm_srai_epi16(cd1, 8)));
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi16(ab0, cd0));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_unpackhi_epi16(ab0, cd0));
    _mm_storeu_si128((__m128i *)(out + 32), _mm_unpacklo_epi16(ab1, cd1));
    _mm_storeu_si128((__m128i *)(out + 48), _mm_unpackhi_epi16(ab1, cd1));
}

/* Adds 8 int16 sums, sign-extended, into 8 int32 ones. */
static void flush16_sse2(__m128i s, int32_t *sum) {
    __m128i lo = _mm_srai_epi32(_mm_unpacklo_epi16(s, s), 16), hi = _mm_srai_epi32(_mm_unpackhi_epi16(s, s), 16);
    _mm_storeu_si128((__m128i *)sum, _mm_add_epi32(_mm_loadu_si128((const __m128i *)sum), lo));
    _mm_storeu_si128((__m128i *)(sum + 4), _mm_add_epi32(_mm_loadu_si128((const __m128i *)(sum + 4)), hi));
}
#endif

void bd_i8_gemm_pack_b_flipped(int64_t K, int64_t N, const uint8_t *B, int64_t ldb, uint8_t flip,
                               void *packed) {
    BD_KCHECK(K >= 0 && K % 4 == 0 && K <= BD_I8_GEMM_MAX_K && N >= 0 && N % I8_NR == 0);
    unsigned char *base = packed;
    int32_t *colsum = (int32_t *)(base + I8_HDR);
    int8_t *panels = (int8_t *)(base + I8_HDR + N * 4);
    memset(colsum, 0, (size_t)N * 4);
    for (int64_t p0 = 0; p0 < N; p0 += I8_NR) {
        int8_t *panel = panels + p0 * K;
#if BD_KERNELS_X86
        /* the column sums ride along in int16: a group adds at most 4 x 128 in magnitude, so 63
         * groups stay below 2^15 before they are added into the int32 sums */
        const __m128i f = _mm_set1_epi8((char)flip);
        __m128i s[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
#endif
        for (int64_t q = 0; q < K / 4; q++) {
            const uint8_t *r0 = B + 4 * q * ldb + p0, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
            uint8_t *out = (uint8_t *)panel + q * 4 * I8_NR;
#if BD_KERNELS_X86
            group16_sse2(r0, r1, r2, r3, f, out, s);
            group16_sse2(r0 + 16, r1 + 16, r2 + 16, r3 + 16, f, out + 64, s + 2);
            if (q % 63 == 62 || q == K / 4 - 1)
                for (int h = 0; h < 4; h++) {
                    flush16_sse2(s[h], colsum + p0 + 8 * h);
                    s[h] = _mm_setzero_si128();
                }
#else
            for (int j = 0; j < I8_NR; j++) {
                out[4 * j] = r0[j] ^ flip;
                out[4 * j + 1] = r1[j] ^ flip;
                out[4 * j + 2] = r2[j] ^ flip;
                out[4 * j + 3] = r3[j] ^ flip;
                colsum[p0 + j] += (int8_t)out[4 * j] + (int8_t)out[4 * j + 1] + (int8_t)out[4 * j + 2] +
                                  (int8_t)out[4 * j + 3];
            }
#endif
        }
    }
    i8_hdr h = {I8_MAGIC, 0, K, N};
    memcpy(base, &h, sizeof h);
}

/* A row tile's copy: 8 rows (16 for the split tiles) of K rounded up to 4 bytes. */
size_t bd_i8_gemm_scratch_bytes(int64_t K) {
    return (size_t)(I8_SPLIT_MR * round_up(K < 0 ? 0 : K, 4) + 64);
}

/* Rows [i0, i0 + mr) of A into ap[k group][tile_rows rows][4 bytes] (8 rows for the tiles, 16
 * for the split tiles), as uint8 (int8 v + 128); zeros elsewhere. */
static void pack_a_rows(const void *A, int64_t lda, int a_signed, int64_t i0, int mr, int64_t K,
                        int64_t k4, int tile_rows, uint8_t *ap) {
    memset(ap, 0, (size_t)(tile_rows * k4));
    const uint8_t *a = A;
    uint32_t flip = a_signed ? 0x80808080u : 0;
    for (int r = 0; r < mr; r++) {
        const uint8_t *row = a + (i0 + r) * lda;
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            uint32_t v;
            memcpy(&v, row + k, 4);
            v ^= flip;
            memcpy(ap + k * tile_rows + r * 4, &v, 4);
        }
        for (; k < K; k++) ap[k / 4 * 4 * tile_rows + r * 4 + k % 4] = row[k] ^ (uint8_t)flip;
    }
}

/* One 8 x 32 tile over every k group, in plain C. Row r's 4 bytes (uint8) of k group q are at
 * a + r * rs + q * qs (the packed copy, or A itself); C gets columns [j0, j1) of the panel
 * (panel relative) for rows < mr: the sum less za * colsum. No sum can overflow (the K bound);
 * the final subtraction wraps in unsigned like the vector lanes. */
static void tile_portable(const uint8_t *a, int64_t rs, int64_t qs, const int8_t *bp, int64_t groups,
                          int mr, int j0, int j1, int32_t za, const int32_t *colsum, int32_t *C,
                          int64_t ldc) {
    int32_t acc[I8_MR][I8_NR];
    memset(acc, 0, sizeof acc);
    for (int64_t q = 0; q < groups; q++) {
        const int8_t *b = bp + q * 4 * I8_NR;
        for (int r = 0; r < mr; r++) {
            const uint8_t *ar = a + r * rs + q * qs;
            const int32_t a0 = ar[0], a1 = ar[1], a2 = ar[2], a3 = ar[3];
            for (int j = 0; j < I8_NR; j++)
                acc[r][j] += a0 * b[4 * j] + a1 * b[4 * j + 1] + a2 * b[4 * j + 2] +
                             a3 * b[4 * j + 3];
        }
    }
    for (int r = 0; r < mr; r++)
        for (int j = j0; j < j1; j++)
            C[r * ldc + j] = (int32_t)((uint32_t)acc[r][j] - (uint32_t)za * (uint32_t)colsum[j]);
}

/* tile_portable's C plus the split packing's corrections of its columns [j0, j1) (fix and
 * start from the panel's first column on). */
static void fix_portable(const uint8_t *a, int64_t rs, int64_t qs, int mr, int j0, int j1,
                         const i8_fix *fix, const int32_t *start, int32_t *C, int64_t ldc) {
    for (int j = j0; j < j1; j++)
        for (int32_t e = start[j]; e < start[j + 1]; e++)
            for (int r = 0; r < mr; r++) {
                const uint8_t *ar = a + r * rs + fix[e].q * qs;
                int32_t v = ar[0] * fix[e].w[0] + ar[1] * fix[e].w[1] + ar[2] * fix[e].w[2] +
                            ar[3] * fix[e].w[3];
                C[r * ldc + j] = (int32_t)((uint32_t)C[r * ldc + j] + (uint32_t)v);
            }
}

#if BD_KERNELS_X86
#define BD_VNNI __attribute__((target("avx512f,avx512vnni")))

/* AVX2 without VNNI, exactly: the panel's 128 bytes of a k group sign-extended to int16 (8 ymm,
 * each 4 columns x 4 k), times the row's 4 bytes of A as int16 repeated, by vpmaddwd: int32
 * sums of k pairs, two per column, added at the end. (vpmaddubsw would saturate int16.) */
static __attribute__((target("avx2"))) void tile_avx2(const uint8_t *a, int64_t rs, int64_t qs,
                                                       const int8_t *bp, int64_t groups, int mr,
                                                       int j0, int j1, int32_t za,
                                                       const int32_t *colsum, int32_t *C,
                                                       int64_t ldc) {
    __m256i acc[I8_MR][8];
    for (int r = 0; r < I8_MR; r++)
        for (int i = 0; i < 8; i++)
            acc[r][i] = _mm256_setzero_si256();
    for (int64_t q = 0; q < groups; q++) {
        const int8_t *b = bp + q * 4 * I8_NR;
        __m256i bw[8];
        for (int i = 0; i < 8; i++)
            bw[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16 * i)));
        for (int r = 0; r < mr; r++) {
            const uint8_t *ar = a + r * rs + q * qs;
            const __m256i aw = _mm256_set1_epi64x((int64_t)((uint64_t)ar[0] | (uint64_t)ar[1] << 16 |
                                                            (uint64_t)ar[2] << 32 | (uint64_t)ar[3] << 48));
            for (int i = 0; i < 8; i++)
                acc[r][i] = _mm256_add_epi32(acc[r][i], _mm256_madd_epi16(aw, bw[i]));
        }
    }
    for (int r = 0; r < mr; r++) {
        int32_t pairs[2 * I8_NR];
        for (int i = 0; i < 8; i++)
            _mm256_storeu_si256((__m256i *)(pairs + 8 * i), acc[r][i]);
        for (int j = j0; j < j1; j++)
            C[r * ldc + j] = (int32_t)((uint32_t)pairs[2 * j] + (uint32_t)pairs[2 * j + 1] -
                                       (uint32_t)za * (uint32_t)colsum[j]);
    }
}

/* The split tiles: the split packing on AVX2 (no VNNI), C's transpose in effect. 4 columns x 16
 * rows at a time (8 accumulators, a column's 16 rows in two): per k group, the 16 rows' 4 bytes
 * each (ap, the unsigned operand of vpmaddubsw) times a column's 4 bytes of B broadcast, the
 * int16 pair sums summed into int32 by vpmaddwd with ones; then the columns' corrections, and the 4 x 16 sums
 * transposed in registers into out[16][4], less za * colsum. Twice the vpmaddwd tile's
 * multiply-adds a cycle (both take two a cycle on a Zen 3 core, 32 against 16 products). */
#define SPLIT_COL(j) BD_I8_DOT4_BCAST2_AVX2(c##j##0, c##j##1, a0, a1, b + 4 * j, ones);
#define SPLIT_FIX(j)                                                                               \
    for (int32_t e = start[j]; e < start[j + 1]; e++) {                                            \
        const uint8_t *aq = ap + fix[e].q * 4 * I8_SPLIT_MR;                                       \
        BD_I8_DOT4_BCAST2_AVX2(c##j##0, c##j##1, _mm256_load_si256((const __m256i *)aq),           \
                               _mm256_load_si256((const __m256i *)(aq + 32)), fix[e].w, ones);    \
    }

static __attribute__((target("avx2"))) void
quad_split_avx2(const uint8_t *ap, const int8_t *bp, int64_t groups, const i8_fix *fix,
                const int32_t *start, const __m128i corr, int32_t out[I8_SPLIT_MR][4]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00;
    for (int64_t q = 0; q < groups; q++) {
        const __m256i a0 = _mm256_load_si256((const __m256i *)(ap + q * 4 * I8_SPLIT_MR));
        const __m256i a1 = _mm256_load_si256((const __m256i *)(ap + q * 4 * I8_SPLIT_MR + 32));
        const int8_t *b = bp + q * 4 * I8_NR;
        SPLIT_COL(0) SPLIT_COL(1) SPLIT_COL(2) SPLIT_COL(3)
    }
    SPLIT_FIX(0) SPLIT_FIX(1) SPLIT_FIX(2) SPLIT_FIX(3)
    /* columns 0-3 of rows r (low lanes) and r + 4 (high lanes) per register: 4 x 4 transposes */
    const __m256i cz = _mm256_broadcastsi128_si256(corr);
#define SPLIT_OUT(h)                                                                               \
    {                                                                                              \
        __m256i t0 = _mm256_unpacklo_epi32(c0##h, c1##h);                                          \
        __m256i t1 = _mm256_unpackhi_epi32(c0##h, c1##h);                                          \
        __m256i t2 = _mm256_unpacklo_epi32(c2##h, c3##h);                                          \
        __m256i t3 = _mm256_unpackhi_epi32(c2##h, c3##h);                                          \
        __m256i u[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),              \
                        _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};             \
        for (int r = 0; r < 4; r++) {                                                              \
            __m256i v = _mm256_sub_epi32(u[r], cz);                                                \
            _mm_storeu_si128((__m128i *)out[8 * h + r], _mm256_castsi256_si128(v));                \
            _mm_storeu_si128((__m128i *)out[8 * h + r + 4], _mm256_extracti128_si256(v, 1));       \
        }                                                                                          \
    }
    SPLIT_OUT(0)
    SPLIT_OUT(1)
#undef SPLIT_OUT
}

/* Columns [n0, n1) of a column block [p_lo, p_hi) of panels for rows [i0, i0 + mr) (mr <= 16),
 * whose copy is ap: per panel, its quads of 4 columns. */
static __attribute__((target("avx2"))) void
block_split_avx2(const uint8_t *ap, const int8_t *panels, int64_t k4, const int32_t *colsum,
                 const i8_fix *fix, const int32_t *start, int32_t za, int64_t p_lo, int64_t p_hi,
                 int64_t n0, int64_t n1, int mr, int32_t *C, int64_t ldc) {
    int32_t out[I8_SPLIT_MR][4] __attribute__((aligned(16)));
    for (int64_t c0 = p_lo > n0 / 4 * 4 ? p_lo : n0 / 4 * 4; c0 < p_hi && c0 < n1; c0 += 4) {
        const __m128i corr =
            _mm_mullo_epi32(_mm_set1_epi32(za), _mm_loadu_si128((const __m128i *)(colsum + c0)));
        quad_split_avx2(ap, panels + c0 / I8_NR * (k4 * I8_NR) + c0 % I8_NR * 4, k4 / 4, fix,
                        start + c0, corr, out);
        int64_t j0 = c0 < n0 ? n0 - c0 : 0, j1 = n1 - c0 < 4 ? n1 - c0 : 4;
        for (int r = 0; r < mr; r++) {
            int32_t *row = C + r * ldc + c0;
            if (j0 == 0 && j1 == 4)
                memcpy(row, out[r], 16);
            else
                for (int64_t j = j0; j < j1; j++) row[j] = out[r][j];
        }
    }
}

/* tile_avx2's product by AVX-VNNI's vpdpbusd on ymm: 4 rows x 32 columns (16 accumulators) at a
 * time, twice; per k group 4 loads of B, 4 broadcasts of A's 4 bytes, 16 vpdpbusd. Rows past mr
 * are zeros of the packed copy (in-place A always has 8 rows), computed and not stored. */
static __attribute__((target("avx2,avxvnni"))) void
tile_avxvnni(const uint8_t *a, int64_t rs, int64_t qs, const int8_t *bp, int64_t groups, int mr,
             int j0, int j1, int32_t za, const int32_t *colsum, int32_t *C, int64_t ldc) {
    for (int r0 = 0; r0 < mr; r0 += 4) {
        __m256i acc[4][4];
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < 4; i++)
                acc[r][i] = _mm256_setzero_si256();
        for (int64_t q = 0; q < groups; q++) {
            const int8_t *b = bp + q * 4 * I8_NR;
            __m256i bv[4];
            for (int i = 0; i < 4; i++)
                bv[i] = _mm256_loadu_si256((const __m256i *)(b + 32 * i));
            for (int r = 0; r < 4; r++) {
                int32_t four;
                memcpy(&four, a + (r0 + r) * rs + q * qs, 4);
                const __m256i av = _mm256_set1_epi32(four);
                for (int i = 0; i < 4; i++)
                    acc[r][i] = _mm256_dpbusd_avx_epi32(acc[r][i], av, bv[i]);
            }
        }
        for (int r = 0; r < 4 && r0 + r < mr; r++) {
            int32_t sums[I8_NR];
            for (int i = 0; i < 4; i++)
                _mm256_storeu_si256((__m256i *)(sums + 8 * i), acc[r][i]);
            for (int j = j0; j < j1; j++)
                C[(r0 + r) * ldc + j] =
                    (int32_t)((uint32_t)sums[j] - (uint32_t)za * (uint32_t)colsum[j]);
        }
    }
}

/* 16 named accumulators and broadcasts straight from memory (vpbroadcastd zmm, m32: a load, no
 * shuffle port), so that the loop is 2 loads of B, 8 broadcasts and 16 vpdpbusd. A is unsigned
 * here: int8 A always goes through the flipped copy. */
#define I8_ROW_STEP(r)                                                                             \
    {                                                                                              \
        const __m512i av = _mm512_broadcastd_epi32(_mm_loadu_si32(a##r));                          \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);                                            \
        c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);                                            \
        a##r += qs;                                                                                \
    }
#define I8_ROW_STORE(r)                                                                            \
    if (r < mr) {                                                                                  \
        _mm512_mask_storeu_epi32(C + r * ldc, m0, _mm512_sub_epi32(c##r##0, corr0));               \
        _mm512_mask_storeu_epi32(C + r * ldc + 16, m1, _mm512_sub_epi32(c##r##1, corr1));          \
    }

static BD_VNNI void tile_vnni(const uint8_t *a, int64_t rs, int64_t qs, const int8_t *bp, int64_t groups,
                              int mr, int j0, int j1, int32_t za, const int32_t *colsum, int32_t *C,
                              int64_t ldc) {
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
            c70 = c00, c71 = c00;
    const uint8_t *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs,
                  *a5 = a + 5 * rs, *a6 = a + 6 * rs, *a7 = a + 7 * rs;
    for (int64_t q = 0; q < groups; q++, bp += 4 * I8_NR) {
        const __m512i b0 = _mm512_loadu_si512(bp), b1 = _mm512_loadu_si512(bp + 64);
        I8_ROW_STEP(0) I8_ROW_STEP(1) I8_ROW_STEP(2) I8_ROW_STEP(3)
        I8_ROW_STEP(4) I8_ROW_STEP(5) I8_ROW_STEP(6) I8_ROW_STEP(7)
    }
    const __m512i vza = _mm512_set1_epi32(za);
    const __m512i corr0 = _mm512_mullo_epi32(vza, _mm512_loadu_si512(colsum));
    const __m512i corr1 = _mm512_mullo_epi32(vza, _mm512_loadu_si512(colsum + 16));
    uint32_t cols = (j1 - j0 >= 32 ? 0xffffffffu : ((1u << (j1 - j0)) - 1u)) << j0;
    const __mmask16 m0 = (__mmask16)(cols & 0xffff), m1 = (__mmask16)(cols >> 16);
    I8_ROW_STORE(0) I8_ROW_STORE(1) I8_ROW_STORE(2) I8_ROW_STORE(3)
    I8_ROW_STORE(4) I8_ROW_STORE(5) I8_ROW_STORE(6) I8_ROW_STORE(7)
}

/* AMX: 32 x 32 blocks of C in four 16 x 16 int32 tiles (tmm0-3), from two 16-row tiles of A
 * (tmm4-5: 64 bytes of k per row, read in place at any lda) and the panel's two 16-column halves
 * (tmm6-7): a k group's 128 bytes are 32 columns x 4 bytes, so 16 groups of one half are a tile
 * of 16 rows of 64 bytes at a stride of 128, exactly tdpbusd's B layout. uint8 A takes tdpbusd,
 * int8 A tdpbssd on its own bytes (za is then a_zero itself). K must be a multiple of 64; rows
 * past the last whole 32 are left to the caller. The tiles go through a buffer on the stack to
 * take the zero-point correction and the column mask. Returns the rows done. */
typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

#define AMX_K_LOOP(dp)                                                                             \
    for (int64_t k = 0; k < K; k += 64) {                                                          \
        _tile_loadd(4, a + k, lda);                                                                \
        _tile_loadd(5, a + 16 * lda + k, lda);                                                     \
        _tile_loadd(6, bp + k * I8_NR, 4 * I8_NR);                                                 \
        _tile_loadd(7, bp + k * I8_NR + 64, 4 * I8_NR);                                            \
        dp(0, 4, 6);                                                                               \
        dp(1, 4, 7);                                                                               \
        dp(2, 5, 6);                                                                               \
        dp(3, 5, 7);                                                                               \
    }

static __attribute__((target("avx512f,amx-tile,amx-int8"))) int64_t
gemm_amx(int64_t M, int64_t n0, int64_t n1, int64_t K, const uint8_t *A, int64_t lda, int a_signed,
         int32_t za, const int8_t *panels, int64_t k4, const int32_t *colsum, int32_t *C, int64_t ldc) {
    amx_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    int32_t out[4][16 * 16] __attribute__((aligned(64)));
    const __m512i vza = _mm512_set1_epi32(za);
    int64_t rows = M / 32 * 32;
    for (int64_t p0 = n0 / I8_NR * I8_NR; p0 < n1; p0 += I8_NR) {
        int j0 = (int)(n0 > p0 ? n0 - p0 : 0), j1 = (int)(n1 - p0 < I8_NR ? n1 - p0 : I8_NR);
        uint32_t cols = (j1 - j0 >= 32 ? 0xffffffffu : ((1u << (j1 - j0)) - 1u)) << j0;
        const __mmask16 mask[2] = {(__mmask16)(cols & 0xffff), (__mmask16)(cols >> 16)};
        const __m512i corr[2] = {_mm512_mullo_epi32(vza, _mm512_loadu_si512(colsum + p0)),
                                 _mm512_mullo_epi32(vza, _mm512_loadu_si512(colsum + p0 + 16))};
        const int8_t *bp = panels + p0 * k4;
        for (int64_t i0 = 0; i0 < rows; i0 += 32) {
            const uint8_t *a = A + i0 * lda;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            if (a_signed)
                AMX_K_LOOP(_tile_dpbssd)
            else
                AMX_K_LOOP(_tile_dpbusd)
            _tile_stored(0, out[0], 64);
            _tile_stored(1, out[1], 64);
            _tile_stored(2, out[2], 64);
            _tile_stored(3, out[3], 64);
            for (int r = 0; r < 32; r++)
                for (int h = 0; h < 2; h++)
                    _mm512_mask_storeu_epi32(
                        C + (i0 + r) * ldc + p0 + 16 * h, mask[h],
                        _mm512_sub_epi32(_mm512_load_si512(out[r / 16 * 2 + h] + r % 16 * 16), corr[h]));
        }
    }
    _tile_release();
    return rows;
}

#endif

void bd_i8_gemm_packed_b(int64_t M, int64_t n0, int64_t n1, int64_t K, const void *A, int64_t lda,
                         int a_signed, int32_t a_zero, const void *Bpacked, int32_t *C, int64_t ldc,
                         void *scratch) {
    const unsigned char *base = Bpacked;
    i8_hdr h;
    memcpy(&h, base, sizeof h);
    BD_KCHECK(h.magic == I8_MAGIC && h.K == K && 0 <= n0 && n0 <= n1 && n1 <= h.N);
    if (M <= 0 || n0 == n1) return;
    int64_t np = round_up(h.N, I8_NR), k4 = round_up(K, 4);
    const int32_t *colsum = (const int32_t *)(base + I8_HDR);
    const int8_t *panels = (const int8_t *)(base + I8_HDR + np * 4);
    uint8_t *ap = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    int32_t za = a_zero + (a_signed ? 128 : 0);
    void (*tile)(const uint8_t *, int64_t, int64_t, const int8_t *, int64_t, int, int, int, int32_t,
                 const int32_t *, int32_t *, int64_t) = tile_portable;
    /* Columns in blocks of panels of about I8_B_BLOCK bytes, each run by every row tile while it
     * stays in L2: row tiles over the whole of B read it from memory (or L3) once per 8 rows. A
     * row tile that is copied (int8 A, a last partial tile) is copied again per block: 8 x K
     * bytes against 8 x K x (block columns) products. */
    const int64_t p_first = n0 / I8_NR * I8_NR;
    int64_t block = I8_B_BLOCK / (k4 * I8_NR) * I8_NR;
    if (block < I8_NR) block = I8_NR;
    const i8_fix *fix = (const i8_fix *)(base + fixes_at(k4, np));
    const int32_t *start = (const int32_t *)(base + fix_starts_at(k4, np));
#if BD_KERNELS_X86
    bd_kernels_isa isa = bd_kernels_get_isa();
    if (h.split && isa >= BD_KERNELS_ISA_AVX2) { /* the split tiles, 16 rows at a time */
        for (int64_t b0 = p_first; b0 < n1; b0 += block)
            for (int64_t i0 = 0; i0 < M; i0 += I8_SPLIT_MR) {
                int mr = (int)(M - i0 < I8_SPLIT_MR ? M - i0 : I8_SPLIT_MR);
                pack_a_rows(A, lda, a_signed, i0, mr, K, k4, I8_SPLIT_MR, ap);
                block_split_avx2(ap, panels, k4, colsum, fix, start, za, b0, b0 + block, n0, n1, mr,
                                 C + i0 * ldc, ldc);
            }
        return;
    }
    int64_t done = 0; /* rows the AMX tiles took */
    if (isa == BD_KERNELS_ISA_AVX512 && bd_kernels_cpu_has_vnni()) {
        tile = tile_vnni;
        if (M >= 32 && K % 64 == 0 && bd_kernels_cpu_has_amx())
            done = gemm_amx(M, n0, n1, K, A, lda, a_signed, a_zero, panels, k4, colsum, C, ldc);
    } else if (isa >= BD_KERNELS_ISA_AVX2) {
        tile = bd_kernels_cpu_has_avx_vnni() ? tile_avxvnni : tile_avx2;
    }
#else
    const int64_t done = 0;
#endif
    for (int64_t b0 = p_first; b0 < n1; b0 += block) {
        const int64_t b1 = b0 + block < n1 ? b0 + block : n1;
        for (int64_t i0 = done; i0 < M; i0 += I8_MR) {
            int mr = (int)(M - i0 < I8_MR ? M - i0 : I8_MR);
            /* full row tiles of uint8 A with whole k groups read A in place; the others (int8 A
             * is flipped there) a zero-padded copy */
            bool direct = mr == I8_MR && K % 4 == 0 && !a_signed;
            const uint8_t *a = direct ? (const uint8_t *)A + i0 * lda : ap;
            if (!direct) pack_a_rows(A, lda, a_signed, i0, mr, K, k4, I8_MR, ap);
            for (int64_t p0 = b0; p0 < b1; p0 += I8_NR) {
                int j0 = (int)(n0 > p0 ? n0 - p0 : 0), j1 = (int)(n1 - p0 < I8_NR ? n1 - p0 : I8_NR);
                tile(a, direct ? lda : 4, direct ? 4 : 4 * I8_MR, panels + p0 * k4, k4 / 4, mr, j0,
                     j1, za, colsum + p0, C + i0 * ldc + p0, ldc);
                if (h.split) /* packed for the split tiles, run elsewhere */
                    fix_portable(a, direct ? lda : 4, direct ? 4 : 4 * I8_MR, mr, j0, j1, fix,
                                 start + p0, C + i0 * ldc + p0, ldc);
            }
        }
    }
}
