/* conv2d_i8.c — exact 8-bit 2-D convolution (NCHW): y (int32) = conv(x - x_zero, w - w_zero).
 *
 * ConvInteger, QLinearConv and the Conv of a QDQ model's DequantizeLinear'd operands. Per tile
 * (output channels [oc0, oc1) x output rows [oh0, oh1) of one image) it is one int8 GEMM
 * (gemm_i8.c): A is the weights, M x K with K = C * KH * KW (as they are stored, moved to uint8
 * when int8), B the tile's im2col slice, K x P for P = rows * OW output pixels, packed per tile;
 * C lands in y's NCHW rows directly, since a channel's P pixels are contiguous there.
 *
 * The im2col slice holds x's bytes with x_zero in the padding, and the GEMM's signed operand must
 * be B - b_zero within int8, so it takes b_zero = 128 for uint8 x (any uint8 less 128 is an
 * int8) and 0 for int8 x. The sum it computes is then off by (b_zero - x_zero) times the sum of
 * (w - w_zero) over the row, a constant per output channel added with the bias at the end:
 *     sum (w - w_zero)(x - x_zero) = sum (w - w_zero)(x - b_zero) + (b_zero - x_zero) rowsum[m].
 * K is padded to a multiple of 4 and P to one of 32 with b_zero bytes (zero in B - b_zero), so
 * that the GEMM reads A in place and packs whole panels.
 *
 * A float result (a QDQ model's Conv) is y = float(sum) * scale[m] + bias[m] with scale[m] =
 * x_scale * w_scale[m], in the same pass over the tile's output, while it is in cache.
 *
 * Packed weights: a 64-byte header, rowsum[M] (int32, sum over k of w - w_zero), scale[M] (float,
 * for a float result), then M rows of K4 = round_up(K, 4) bytes of uint8 w (int8 w + 128), zeros
 * past K. */
#include <string.h>

#include "bd_kernels_internal.h"

#if BD_KERNELS_X86
#include <immintrin.h>
#endif

enum { I8C_HDR = 64, I8C_MAGIC = 0x63386962 /* "bi8c" */ };

typedef struct i8c_hdr {
    int32_t magic, a_zero; /* a_zero: w_zero as the GEMM sees it (+128 for int8 w) */
    int64_t M, K, K4;
    int32_t scaled; /* a float result */
} i8c_hdr;

static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

static int64_t k_of(const bd_conv2d_shape *s) {
    return s->C * s->KH * s->KW;
}

int bd_i8_conv2d_shape_ok(const bd_conv2d_shape *s) {
    return bd_conv2d_shape_valid(s) && s->group == 1 && s->winograd == 0 &&
           round_up(k_of(s), 4) <= BD_I8_GEMM_MAX_K;
}

size_t bd_i8_conv2d_packed_w_bytes(const bd_conv2d_shape *s) {
    return (size_t)(I8C_HDR + s->M * 8 + s->M * round_up(k_of(s), 4));
}

void bd_i8_conv2d_pack_w(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero,
                         const float *x_scale, const float *w_scale, int64_t w_scales,
                         void *packed) {
    BD_KCHECK(bd_i8_conv2d_shape_ok(s) && (!x_scale || (w_scale && (w_scales == 1 || w_scales == s->M))));
    int64_t K = k_of(s), K4 = round_up(K, 4);
    unsigned char *base = packed;
    int32_t *rowsum = (int32_t *)(base + I8C_HDR);
    float *scale = (float *)(rowsum + s->M);
    uint8_t *rows = base + I8C_HDR + s->M * 8;
    const uint8_t *wu = w;
    const int8_t *ws = w;
    memset(rows, 0, (size_t)(s->M * K4));
    for (int64_t m = 0; m < s->M; m++) {
        int32_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            int32_t v = w_signed ? ws[m * K + k] : wu[m * K + k];
            sum += v - w_zero;
            rows[m * K4 + k] = (uint8_t)(w_signed ? v + 128 : v);
        }
        rowsum[m] = sum;
        scale[m] = x_scale ? x_scale[0] * w_scale[w_scales > 1 ? m : 0] : 0.0f;
    }
    i8c_hdr h = {I8C_MAGIC, w_zero + (w_signed ? 128 : 0), s->M, K, K4, x_scale != NULL};
    memcpy(base, &h, sizeof h);
}

/* The tile's pieces in scratch: im2col slice (K4 x P32 bytes), packed B, the GEMM's scratch. */
typedef struct i8c_scratch {
    int64_t col_bytes, packed_bytes;
} i8c_scratch;

static i8c_scratch scratch_layout(const bd_conv2d_shape *s, int64_t rows) {
    int64_t K4 = round_up(k_of(s), 4), P32 = round_up(rows * s->OW, 32);
    i8c_scratch l = {round_up(K4 * P32, 64), round_up((int64_t)bd_i8_gemm_packed_b_bytes(K4, P32), 64)};
    return l;
}

size_t bd_i8_conv2d_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile) {
    i8c_scratch l = scratch_layout(s, oh_tile);
    return (size_t)(64 + l.col_bytes + l.packed_bytes) + bd_i8_gemm_scratch_bytes(round_up(k_of(s), 4));
}

/* dst[ow] = src[2 * ow] for ow in [lo, hi), reading no byte at or past src + limit. */
static void gather_stride2(uint8_t *dst, const uint8_t *src, int64_t lo, int64_t hi, int64_t limit) {
    int64_t ow = lo;
#if BD_KERNELS_X86
    const __m128i even = _mm_set1_epi16(0xff);
    for (; ow + 16 <= hi && 2 * ow + 32 <= limit; ow += 16) {
        __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(src + 2 * ow)), even);
        __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(src + 2 * ow + 16)), even);
        _mm_storeu_si128((__m128i *)(dst + ow), _mm_packus_epi16(a, b));
    }
#else
    (void)limit;
#endif
    for (; ow < hi; ow++) dst[ow] = src[2 * ow];
}

/* Row k = (c, kh, kw) of the im2col slice for output rows [oh0, oh1): x's bytes where the tap
 * falls inside the image, the pad byte elsewhere. A stride-1 convolution as wide as its input
 * (3x3 "same") reads consecutive input rows for consecutive output rows, so its inside rows are
 * one copy, their few pad columns written after it: a call per row cost more than the bytes. */
static void im2col_row(const bd_conv2d_shape *s, const uint8_t *xc, int64_t kh, int64_t kw,
                       int64_t oh0, int64_t oh1, uint8_t pad, uint8_t *dst) {
    /* output columns whose tap is inside: iw = ow * sw - pl + kw * dw in [0, W) */
    int64_t off = kw * s->dil_w - s->pad_left, lo = 0, hi = s->OW, OW = s->OW;
    while (lo < hi && lo * s->stride_w + off < 0) lo++;
    while (hi > lo && (hi - 1) * s->stride_w + off >= s->W) hi--;
    /* output rows whose tap row ih = oh * sh + base is inside [0, H): [a, b) */
    int64_t base = kh * s->dil_h - s->pad_top, sh = s->stride_h;
    int64_t a = base >= 0 ? 0 : (-base + sh - 1) / sh, b = base > s->H - 1 ? 0 : (s->H - 1 - base) / sh + 1;
    a = a < oh0 ? oh0 : a > oh1 ? oh1 : a;
    b = lo == hi ? a : b > oh1 ? oh1 : b < a ? a : b;
    if (a > oh0) memset(dst, pad, (size_t)((a - oh0) * OW));
    if (b < oh1) memset(dst + (b - oh0) * OW, pad, (size_t)((oh1 - b) * OW));
    if (a == b) return;
    uint8_t *d = dst + (a - oh0) * OW;
    const uint8_t *src = xc + (a * sh + base) * s->W + off;
    if (s->stride_w == 1 && s->stride_h == 1 && OW == s->W) {
        memcpy(d + lo, src + lo, (size_t)((b - a - 1) * OW + (hi - lo)));
        if (lo <= 1 && OW - hi <= 1) { /* 3x3 "same": a byte at most each side, stored as such */
            for (int64_t r = 0; r < b - a; r++, d += OW) {
                if (lo) d[0] = pad;
                if (hi < OW) d[OW - 1] = pad;
            }
            return;
        }
        for (int64_t r = 0; r < b - a; r++, d += OW) {
            memset(d, pad, (size_t)lo);
            memset(d + hi, pad, (size_t)(OW - hi));
        }
        return;
    }
    for (int64_t oh = a; oh < b; oh++, d += OW, src += sh * s->W) {
        for (int64_t ow = 0; ow < lo; ow++) d[ow] = pad;
        if (s->stride_w == 1) memcpy(d + lo, src + lo, (size_t)(hi - lo));
        else if (s->stride_w == 2) gather_stride2(d, src, lo, hi, s->W - off);
        else
            for (int64_t ow = lo; ow < hi; ow++) d[ow] = src[ow * s->stride_w];
        for (int64_t ow = hi; ow < OW; ow++) d[ow] = pad;
    }
}

/* One output channel's P sums as floats in place: (sum + add) * mult + b. The loop is the same
 * for every instruction set; the compiler vectorises it at each one's width. */
static inline __attribute__((always_inline)) void scale_row(int32_t *row, int64_t P, int32_t add, float mult, float b) {
    for (int64_t p = 0; p < P; p++) { /* (the float's bits stored through the int32 row) */
        float v = (float)(int32_t)((uint32_t)row[p] + (uint32_t)add) * mult + b;
        memcpy(&row[p], &v, sizeof v);
    }
}

static void scale_row_portable(int32_t *row, int64_t P, int32_t add, float mult, float b) {
    scale_row(row, P, add, mult, b);
}

#if BD_KERNELS_X86
__attribute__((target("avx2"))) static void scale_row_avx2(int32_t *row, int64_t P, int32_t add,
                                                          float mult, float b) {
    scale_row(row, P, add, mult, b);
}

__attribute__((target("avx512f"))) static void scale_row_avx512(int32_t *row, int64_t P, int32_t add,
                                                               float mult, float b) {
    scale_row(row, P, add, mult, b);
}
#endif

void bd_i8_conv2d_tile(const bd_conv2d_shape *s, const void *x, int x_signed, int32_t x_zero,
                       const void *wpacked, const void *bias, void *y, int64_t n, int64_t oc0,
                       int64_t oc1, int64_t oh0, int64_t oh1, void *scratch) {
    const unsigned char *base = wpacked;
    i8c_hdr h;
    memcpy(&h, base, sizeof h);
    BD_KCHECK(h.magic == I8C_MAGIC && h.M == s->M && h.K == k_of(s) && 0 <= n && n < s->N &&
              0 <= oc0 && oc0 <= oc1 && oc1 <= s->M && 0 <= oh0 && oh0 <= oh1 && oh1 <= s->OH);
    if (oc0 == oc1 || oh0 == oh1) return;
    const int32_t *rowsum = (const int32_t *)(base + I8C_HDR);
    const float *scale = (const float *)(rowsum + s->M);
    const uint8_t *wrows = base + I8C_HDR + s->M * 8;
    int64_t K = h.K, K4 = h.K4, P = (oh1 - oh0) * s->OW, P32 = round_up(P, 32);
    i8c_scratch l = scratch_layout(s, oh1 - oh0);
    uint8_t *col = (uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    void *packed = col + l.col_bytes, *gemm_scratch = (unsigned char *)packed + l.packed_bytes;
    int32_t b_zero = x_signed ? 0 : 128;
    uint8_t pad = (uint8_t)x_zero, fill = (uint8_t)b_zero; /* fill: B - b_zero = 0 */
    const uint8_t *xn = (const uint8_t *)x + n * s->C * s->H * s->W;
    int64_t k = 0;
    for (int64_t c = 0; c < s->C; c++)
        for (int64_t kh = 0; kh < s->KH; kh++)
            for (int64_t kw = 0; kw < s->KW; kw++, k++) {
                uint8_t *dst = col + k * P32;
                im2col_row(s, xn + c * s->H * s->W, kh, kw, oh0, oh1, pad, dst);
                memset(dst + P, fill, (size_t)(P32 - P));
            }
    memset(col + K * P32, fill, (size_t)((K4 - K) * P32));
    bd_i8_gemm_pack_b_flipped(K4, P32, col, P32, x_signed ? 0 : 0x80, packed);
    int64_t ldc = s->OH * s->OW, at = (n * s->M + oc0) * ldc + oh0 * s->OW;
    int32_t *yt = (int32_t *)y + at; /* the sums, then (scaled) their float values in place */
    bd_i8_gemm_packed_b(oc1 - oc0, 0, P, K4, wrows + oc0 * K4, K4, 0, h.a_zero, packed, yt, ldc,
                        gemm_scratch);
    int32_t shift = b_zero - x_zero;
    void (*scale_fn)(int32_t *, int64_t, int32_t, float, float) = scale_row_portable;
#if BD_KERNELS_X86
    bd_kernels_isa isa = bd_kernels_get_isa();
    if (isa == BD_KERNELS_ISA_AVX512) scale_fn = scale_row_avx512;
    else if (isa >= BD_KERNELS_ISA_AVX2) scale_fn = scale_row_avx2;
#endif
    for (int64_t m = oc0; m < oc1; m++) {
        int32_t *row = yt + (m - oc0) * ldc;
        int32_t add = (int32_t)((uint32_t)shift * (uint32_t)rowsum[m]);
        if (h.scaled) {
            scale_fn(row, P, add, scale[m], bias ? ((const float *)bias)[m] : 0.0f);
        } else {
            add = (int32_t)((uint32_t)add + (uint32_t)(bias ? ((const int32_t *)bias)[m] : 0));
            if (add == 0) continue;
            for (int64_t p = 0; p < P; p++) row[p] = (int32_t)((uint32_t)row[p] + (uint32_t)add);
        }
    }
}
