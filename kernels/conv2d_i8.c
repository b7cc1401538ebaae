/* conv2d_i8.c — exact 8-bit 2-D convolution (NCHW): y (int32) = conv(x - x_zero, w - w_zero).
 *
 * ConvInteger, QLinearConv and the Conv of a QDQ model's DequantizeLinear'd operands. Two paths:
 * the direct one (below, "the direct path"), on AVX-512 VNNI or AVX2 for convolutions other than
 * 1x1 with unit strides whose w - w_zero fit int8, which alone can also requantize its float
 * result to 8 bits (a QuantizeLinear absorbed by fusion); and this im2col GEMM for the others.
 * Per tile (output channels [oc0, oc1) x output rows [oh0, oh1) of one image) it is one int8 GEMM
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
#include <stdbool.h>
#include <stdint.h>
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
    int32_t direct; /* the direct path's packing (below): DIRECT_NONE, _EXACT or _SPLIT */
} i8c_hdr;

static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

static int64_t k_of(const bd_conv2d_shape *s) {
    return s->C * s->KH * s->KW;
}

/* ---- the direct path ------------------------------------------------------------------------
 *
 * With AVX-512 VNNI or AVX2 (or in plain C where a tile must requantize and the CPU lacks them),
 * and weights whose w - w_zero fit int8, a tile reads no im2col. Its input rows are copied once
 * into planes of 4 channels interleaved per pixel (uint8, int8 x moved by +128), x_zero's byte in
 * the padding, one plane per channel group and stride phase: plane
 * (g, ph, pw) row r, column c holds channels 4g..4g+3 of input row oh0*sh - pt + r*sh + ph,
 * column c*sw + pw - pl. Output pixels are numbered on the planes' grid, p = row * Wq + ow, so
 * that the pixel tap (kh, kw) reads is p + (kh*dh/sh) * Wq + kw*dw/sw in plane
 * (g, kh*dh % sh, kw*dw % sw): 16 consecutive pixels of one tap and group are one 64-byte load,
 * the unsigned operand of vpdpbusd, and the signed one is 4 bytes of w - w_zero broadcast. The
 * columns ow >= OW of the grid are computed and never stored. (The AVX2 kernels number the
 * pixels as y's instead where that pays, a vector across a row's end two loads blended:
 * direct_vecs.)
 *
 * The micro-kernel computes 8 output channels x 32 pixels (16 accumulators) over every step
 * (group, kh, kw): 2 loads, 8 broadcasts, 16 vpdpbusd per step, the weights prefetched 4 KiB
 * ahead (a model's weights stream from memory: ResNet-18's 512-channel layers took 1.5x as long
 * without). The sum, less xzu * rowsum(w - w_zero) for the byte xzu that x_zero is in the
 * planes, is exact. The epilogue stores the runs of each panel that are output pixels: int32,
 * float (* scale + bias), or float requantized as QuantizeLinear computes it. Against the
 * im2col GEMM it saves the K x P slice and its packing, about a quarter of the int8 ResNet-18's
 * time (its 3x3 layers ran at 32-54% of the VNNI peak in the model, now 69-80%).
 *
 * On short rows the grid's columns past OW and the last panel's padding are much of that work
 * (2 of 9 columns at 7x7; 14x14's 224 grid pixels fill 7 panels for 196 outputs). There a second
 * micro-kernel puts the output channels in the lanes instead (lanes_sums): 32 channels x up to 8
 * pixels of one row, a pixel's 4 bytes broadcast from the same planes, the weights of two 8-channel
 * blocks one vector, and a requantized result transposed as bytes in registers. A cost model picks
 * the kernel per tile (lanes_faster). On a Zen 4 core, requantized: 512 channels at 7x7 342 ->
 * 440 GOP/s, 256 at 14x14 391 -> 433, 128 at 28x28 397 -> 422, SqueezeNet's 64 -> 256 at 13x13
 * 327 -> 392; 56x56 and SqueezeNet's 16 -> 64 at 55x55 stay on the pixel kernel.
 *
 * Without VNNI, on AVX2, the micro-kernel multiplies by vpmaddubsw, which sums two products of
 * an unsigned and a signed byte into int16 with saturation, then sums those pairs into int32 by
 * vpmaddwd with ones: 32 products per two multiplies, both at two a cycle on a Zen 3 core (the
 * float FMA's 16 per cycle and port, doubled). A weight pair (w0, w1) of a channel and step can
 * saturate it only when its positive or negative parts add up past 128 (255 * 129 > 32767);
 * the split packing (DIRECT_SPLIT) keeps w0 and moves w1 to a list of corrections per block of
 * 8 channels, added to the tile's sums after the micro-kernel (direct_fix_avx2). Which input
 * channels share a pair is chosen at packing (direct_order): with a channel of large weights
 * beside one of small ones, a correction for 0.9-3.1% of int8 ResNet-18's (channel, step) pairs
 * of its 3x3 layers, 3.5-7.4% of its 1x1 ones (1.4-4.7% and 6.3-12.5% in channel order). Its
 * 3x3 layers run at 150-165 GOP/s on a Zen 3 core (the float kernel's 85 GFLOP/s). Its
 * channels-in-lanes kernel (lanes_sums_avx2: 16 channels x up to 5 pixels of a row) takes the
 * 7x7 and 13x13 outputs, by a cost model of its own (lanes_faster_avx2). Its pixel kernel skips
 * the grid's columns where there are 2 or more past each row (3x3 stride 1): int8 ResNet-18's
 * 56x56 and 28x28 layers 0.96-0.97x of the time in the model, 14x14 level (the panels 7 -> 6.5,
 * and most vectors blended).
 *
 * Packed weights (after the header, rowsum[M] and scale[M]): blocks of 8 output channels, each
 * S = G * KH * KW steps of 8 x 4 bytes (channel r's w - w_zero of input channels order[4g..4g+3]
 * at tap (kh, kw)), zeros past M and C; for the split packing, then its corrections; then the
 * channel order (direct_weight_bytes). */
enum { DIRECT_MR = 8, DIRECT_PANEL = 32, DIRECT_PREFETCH = 4096 };
enum { DIRECT_NONE, DIRECT_EXACT, DIRECT_SPLIT };

/* A correction of the split packing: channel at % 8 of its block at step at / 8 adds the
 * product of these 4 bytes with the step's 4 bytes of x. */
typedef struct direct_fix {
    int32_t at;
    int8_t w[4];
} direct_fix;

typedef struct direct_geom {
    int64_t G, S;           /* channel groups of 4; steps G * KH * KW */
    int64_t kh_off, kw_off; /* the largest tap offsets, in plane rows and columns */
    int64_t Hq, Wq;         /* a plane's rows and columns */
    int64_t plane;          /* a plane's stride in pixels (of 4 bytes), room for the last panel */
    int64_t phases;         /* planes per group: sh * sw */
} direct_geom;

static direct_geom direct_geometry(const bd_conv2d_shape *s, int64_t rows) {
    direct_geom d;
    d.G = (s->C + 3) / 4;
    d.S = d.G * s->KH * s->KW;
    d.kh_off = (s->KH - 1) * s->dil_h / s->stride_h;
    d.kw_off = (s->KW - 1) * s->dil_w / s->stride_w;
    d.Hq = rows + d.kh_off;
    d.Wq = s->OW + d.kw_off;
    d.plane = round_up(d.Hq * d.Wq + d.kw_off + DIRECT_PANEL, 16);
    d.phases = s->stride_h * s->stride_w;
    return d;
}

/* The step offsets (int64), the planes, the 8 x 32 sums (or the channels-in-lanes kernel's 8
 * pixels x 32 channels and their transpose, 32 x 32), each 64-byte aligned. */
static int64_t direct_scratch_bytes(const bd_conv2d_shape *s, int64_t rows) {
    direct_geom d = direct_geometry(s, rows);
    return 64 + round_up(d.S * 8, 64) + d.G * d.phases * d.plane * 4 +
           (8 + DIRECT_PANEL) * DIRECT_PANEL * 4;
}

/* The weight blocks (M rounded up to 8, S steps, 4 bytes); then, for the split packing, where
 * each block's corrections start in the list (blocks + 1 int32) and room for the list itself: a
 * correction for every (channel, step) at most, of which a model's weights use a few percent
 * (the rest of the room is written only by direct_order's scratch, about C^2 + C KH KW
 * bytes of it). */
static int64_t direct_block_bytes(const bd_conv2d_shape *s) {
    return round_up(s->M, DIRECT_MR) * ((s->C + 3) / 4) * s->KH * s->KW * 4;
}

static int64_t direct_fixes_at(const bd_conv2d_shape *s) {
    return direct_block_bytes(s) + round_up(((s->M + DIRECT_MR - 1) / DIRECT_MR + 1) * 4, 8);
}

/* The split packing's channel order: position p (group p / 4, byte p % 4) holds input channel
 * order[p], int32 for each of the 4 G positions (those past C hold channels of zero weights). */
static int64_t direct_order_at(const bd_conv2d_shape *s) {
    return direct_fixes_at(s) + direct_block_bytes(s) / 4 * (int64_t)sizeof(direct_fix);
}

static size_t direct_weight_bytes(const bd_conv2d_shape *s) {
    return (size_t)(direct_order_at(s) + (s->C + 3) / 4 * 4 * (int64_t)sizeof(int32_t));
}

/* A 1x1 stride-1 convolution's im2col is a plain copy, and its GEMM stores fewer, longer runs:
 * it stays on the GEMM (measured faster on MobileNetV2's 1x1 layers). */
static bool direct_shape(const bd_conv2d_shape *s) {
    return s->KH * s->KW > 1 || s->stride_h > 1 || s->stride_w > 1;
}

static int32_t weight_at(const void *w, int w_signed, int32_t w_zero, int64_t i) {
    return (w_signed ? ((const int8_t *)w)[i] : ((const uint8_t *)w)[i]) - w_zero;
}

/* Whether every w - w_zero fits int8 (the signed operand): any does for int8 w less 0 and
 * uint8 w less 128 (a model's usual zero points: no scan of its weights at start-up). */
static bool direct_weights_fit(int64_t n, const void *w, int w_signed, int32_t w_zero) {
    if (w_zero == (w_signed ? 0 : 128)) return true;
    for (int64_t i = 0; i < n; i++) {
        int32_t v = weight_at(w, w_signed, w_zero, i);
        if (v < -128 || v > 127) return false;
    }
    return true;
}

/* The split packing's channel order: channels paired so that few pairs saturate. Which two
 * channels share a vpmaddubsw pair is free (the planes interleave any 4 channel rows), and
 * pairing a channel of large weights with one of small ones leaves fewer corrections: 0.63x as
 * many on int8 ResNet-18's layers, the model 0.97x the time on a Zen 3 core. cost[a][b] counts
 * the (output channel, tap) at which a and b saturate together; then, most costly channel first,
 * each takes the free partner of least cost. A pair saturates only when one weight passes 64 (an
 * anchor), so each (m, tap) row of weights is scanned for anchors and, per anchor, for the
 * partners past 128 less it, 32 bytes a compare (a pair of two anchors counts twice; the counts
 * saturate at 255, which chose the same order on that model): about 30 ms at start-up for
 * int8 ResNet-18. Only the split packing, which runs on AVX2, takes it: elsewhere, where its
 * scratch does not fit the corrections' room (which the corrections overwrite afterwards), or
 * where the counting would take long, the order stays the identity. The scratch: cost (P x P32
 * bytes), output channel m's weights as a row of P32 bytes per tap, tot and taken per channel. */
#if BD_KERNELS_X86
static __attribute__((target("avx2"))) void
direct_order_avx2(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero,
                  uint8_t *room, int64_t room_bytes, int32_t *order) {
    int64_t P = (s->C + 3) / 4 * 4, taps = s->KH * s->KW, K = s->C * taps, P32 = round_up(P, 32);
    int64_t rows_at = P * P32, tot_at = rows_at + round_up(taps * P32, 64);
    int64_t taken_at = tot_at + P * (int64_t)sizeof(int64_t);
    if (taken_at + P > room_bytes) return; /* the identity order stays */
    uint8_t *cost = room; /* rows of P32 (the columns past P never read) */
    int8_t *rows = (int8_t *)(room + rows_at);
    int64_t *tot = (int64_t *)(room + tot_at);
    uint8_t *taken = room + taken_at;
    memset(cost, 0, (size_t)(P * P32));
    const __m256i big = _mm256_set1_epi8(64), nbig = _mm256_set1_epi8(-64);
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t m = 0; m < s->M; m++) {
        /* output channel m's weights as one row of P32 bytes per tap */
        memset(rows, 0, (size_t)(taps * P32));
        for (int64_t c = 0; c < s->C; c++)
            for (int64_t t = 0; t < taps; t++)
                rows[t * P32 + c] = (int8_t)weight_at(w, w_signed, w_zero, m * K + c * taps + t);
        for (int64_t t = 0; t < taps; t++) {
            const int8_t *row = rows + t * P32;
            for (int64_t c0 = 0; c0 < P32; c0 += 32) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(row + c0));
                uint32_t anchors = (uint32_t)_mm256_movemask_epi8(
                    _mm256_or_si256(_mm256_cmpgt_epi8(v, big), _mm256_cmpgt_epi8(nbig, v)));
                for (; anchors; anchors &= anchors - 1) {
                    int64_t a = c0 + __builtin_ctz(anchors);
                    int va = row[a];
                    /* the partners: the same sign, past 128 - |va| in magnitude (a itself
                     * too, on the diagonal, never read) */
                    __m256i thr = _mm256_set1_epi8((char)(va > 0 ? 128 - va : -128 - va));
                    uint8_t *ca = cost + a * P32;
                    for (int64_t b0 = 0; b0 < P32; b0 += 32) {
                        __m256i u = _mm256_loadu_si256((const __m256i *)(row + b0));
                        __m256i hit =
                            va > 0 ? _mm256_cmpgt_epi8(u, thr) : _mm256_cmpgt_epi8(thr, u);
                        __m256i *p = (__m256i *)(ca + b0);
                        _mm256_storeu_si256(
                            p, _mm256_adds_epu8(_mm256_loadu_si256(p), _mm256_and_si256(hit, one)));
                    }
                }
            }
        }
    }
    /* symmetric: a pair of two anchors counted from both */
    for (int64_t a = 0; a < P; a++)
        for (int64_t b = a + 1; b < P; b++) {
            uint32_t v = (uint32_t)cost[a * P32 + b] + cost[b * P32 + a];
            cost[a * P32 + b] = cost[b * P32 + a] = (uint8_t)(v < UINT8_MAX ? v : UINT8_MAX);
        }
    for (int64_t a = 0; a < P; a++) {
        int64_t sum = 0;
        for (int64_t b = 0; b < P; b++)
            sum += b == a ? 0 : cost[a * P32 + b];
        tot[a] = sum;
        taken[a] = 0;
    }
    for (int64_t k = 0; k < P; k += 2) {
        int64_t a = -1, b = -1; /* the free channel of most cost (the first such), its partner */
        for (int64_t c = 0; c < P; c++)
            if (!taken[c] && (a < 0 || tot[c] > tot[a])) a = c;
        taken[a] = 1;
        for (int64_t c = 0; c < P; c++)
            if (!taken[c] && (b < 0 || cost[a * P32 + c] < cost[a * P32 + b])) b = c;
        taken[b] = 1;
        order[k] = (int32_t)a;
        order[k + 1] = (int32_t)b;
    }
}
#endif

static void direct_order(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero,
                         bool split, void *room, int64_t room_bytes, int32_t *order) {
    int64_t P = (s->C + 3) / 4 * 4, P32 = round_up(P, 32), taps = s->KH * s->KW;
    for (int64_t p = 0; p < P; p++)
        order[p] = (int32_t)p;
    /* its time goes as M taps P^2 / 32 partner compares a few percent of the weights make (the
     * anchors): up to 2^30 (512 -> 512 3x3: 2^25, about 10 ms) */
    double work = (double)s->M * (double)taps * (double)P * (double)(P32 / 32);
    if (!split || work > 0x1p30) return;
#if BD_KERNELS_X86
    direct_order_avx2(s, w, w_signed, w_zero, room, room_bytes, order);
#else
    (void)w, (void)w_signed, (void)w_zero, (void)room, (void)room_bytes;
#endif
}

/* Packs the blocks, input channel order[p] at position p; with split, a pair that could
 * saturate vpmaddubsw keeps its first weight and its second goes to the block's corrections. */
static void direct_pack(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero,
                        bool split, int32_t *rowsum, int8_t *blocks) {
    int64_t G = (s->C + 3) / 4, taps = s->KH * s->KW, S = G * taps, K = s->C * taps;
    int32_t *order = (int32_t *)(blocks + direct_order_at(s));
    direct_order(s, w, w_signed, w_zero, split, blocks + direct_fixes_at(s),
                 direct_order_at(s) - direct_fixes_at(s), order);
    memset(blocks, 0, (size_t)direct_block_bytes(s));
    for (int64_t m = 0; m < s->M; m++) {
        int32_t sum = 0;
        int8_t *b = blocks + (m / DIRECT_MR) * S * DIRECT_MR * 4 + (m % DIRECT_MR) * 4;
        for (int64_t p = 0; p < G * 4; p++) {
            int64_t c = order[p];
            if (c >= s->C) continue; /* a zero channel */
            for (int64_t t = 0; t < taps; t++) {
                int32_t v = weight_at(w, w_signed, w_zero, m * K + c * taps + t);
                sum += v;
                b[((p / 4) * taps + t) * DIRECT_MR * 4 + p % 4] = (int8_t)v;
            }
        }
        rowsum[m] = sum;
    }
    if (!split) return;
    int64_t nblocks = (s->M + DIRECT_MR - 1) / DIRECT_MR, n = 0;
    int32_t *start = (int32_t *)(blocks + direct_block_bytes(s));
    direct_fix *fix = (direct_fix *)(blocks + direct_fixes_at(s));
    for (int64_t blk = 0; blk < nblocks; blk++) {
        start[blk] = (int32_t)n;
        for (int64_t r = 0; r < DIRECT_MR; r++) /* a channel's together (one row of sums) */
            for (int64_t st = 0; st < S; st++) {
                int64_t at = st * DIRECT_MR + r;
                direct_fix f = {(int32_t)at, {0, 0, 0, 0}};
                if (bd_i8_split4(blocks + (blk * S * DIRECT_MR + at) * 4, f.w)) fix[n++] = f;
            }
    }
    start[nblocks] = (int32_t)n;
}

static void fill32(uint8_t *dst, uint32_t v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + 4 * i, &v, 4);
}

/* Plane columns [lo, hi) of one plane row: the bytes of 4 channel rows r[j] at columns
 * c * sw (r[j] already at the plane's first column), flipped, interleaved per pixel. Up to 15
 * pixels past hi may be written too (the caller pads them afterwards), reading no byte at or
 * past r[j] + room. */
static void interleave_row(uint8_t *dst, const uint8_t *const r[4], int64_t lo, int64_t hi,
                           int64_t sw, int64_t room, uint8_t flip) {
    int64_t c = lo;
#if BD_KERNELS_X86
    /* 16 pixels at a time: a stride-2 row is 32 bytes, its even ones kept */
    const __m128i f = _mm_set1_epi8((char)flip), even = _mm_set1_epi16(0xff);
    for (; c < hi && ((sw == 1 && c + 16 <= room) || (sw == 2 && 2 * c + 32 <= room)); c += 16) {
        __m128i v[4];
        for (int j = 0; j < 4; j++) {
            if (sw == 1) {
                v[j] = _mm_loadu_si128((const __m128i *)(r[j] + c));
            } else {
                __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(r[j] + 2 * c)), even);
                __m128i b =
                    _mm_and_si128(_mm_loadu_si128((const __m128i *)(r[j] + 2 * c + 16)), even);
                v[j] = _mm_packus_epi16(a, b);
            }
            v[j] = _mm_xor_si128(v[j], f);
        }
        __m128i ab0 = _mm_unpacklo_epi8(v[0], v[1]), ab1 = _mm_unpackhi_epi8(v[0], v[1]);
        __m128i cd0 = _mm_unpacklo_epi8(v[2], v[3]), cd1 = _mm_unpackhi_epi8(v[2], v[3]);
        _mm_storeu_si128((__m128i *)(dst + 4 * c), _mm_unpacklo_epi16(ab0, cd0));
        _mm_storeu_si128((__m128i *)(dst + 4 * c + 16), _mm_unpackhi_epi16(ab0, cd0));
        _mm_storeu_si128((__m128i *)(dst + 4 * c + 32), _mm_unpacklo_epi16(ab1, cd1));
        _mm_storeu_si128((__m128i *)(dst + 4 * c + 48), _mm_unpackhi_epi16(ab1, cd1));
    }
#else
    (void)room;
#endif
    for (; c < hi; c++)
        for (int j = 0; j < 4; j++)
            dst[4 * c + j] = r[j][c * sw] ^ flip;
}

/* The planes of the tile's output rows [oh0, oh0 + rows), for every group and used phase. */
static void direct_fill(const bd_conv2d_shape *s, const direct_geom *d, const int32_t *order,
                        const uint8_t *xn, int64_t oh0, uint8_t flip, uint8_t pad,
                        uint8_t *planes) {
    int64_t sh = s->stride_h, sw = s->stride_w;
    uint32_t padv = pad * 0x01010101u;
    for (int64_t ph = 0; ph < sh; ph++)
        for (int64_t pw = 0; pw < sw; pw++) {
            bool used = false; /* a 1x1 strided convolution reads one phase of four */
            for (int64_t kh = 0; kh < s->KH; kh++)
                for (int64_t kw = 0; kw < s->KW; kw++)
                    used |= kh * s->dil_h % sh == ph && kw * s->dil_w % sw == pw;
            if (!used) continue;
            /* plane columns whose input column c * sw + pw - pl lies in [0, W): [lo, hi) */
            int64_t off = pw - s->pad_left, lo = 0, hi = d->Wq;
            while (lo < hi && lo * sw + off < 0)
                lo++;
            while (hi > lo && (hi - 1) * sw + off >= s->W)
                hi--;
            for (int64_t g = 0; g < d->G; g++) {
                uint8_t *plane = planes + (g * d->phases + ph * sw + pw) * d->plane * 4;
                for (int64_t r = 0; r < d->Hq; r++) {
                    int64_t ih = oh0 * sh - s->pad_top + r * sh + ph;
                    uint8_t *row = plane + r * d->Wq * 4;
                    if (ih < 0 || ih >= s->H || lo == hi) {
                        fill32(row, padv, d->Wq);
                        continue;
                    }
                    const uint8_t *src[4];
                    int64_t room = INT64_MAX;     /* bytes of the image readable from every src */
                    for (int j = 0; j < 4; j++) { /* channels past C: any byte (zero weights) */
                        int64_t c = order[4 * g + j] < s->C ? order[4 * g + j] : s->C - 1;
                        int64_t at = (c * s->H + ih) * s->W + off, left = s->C * s->H * s->W - at;
                        src[j] = xn + at;
                        room = left < room ? left : room;
                    }
                    fill32(row, padv, lo);
                    interleave_row(row, src, lo, hi, sw, room, flip);
                    fill32(row + hi * 4, padv, d->Wq - hi);
                }
                memset(plane + d->Hq * d->Wq * 4, 0, (size_t)((d->plane - d->Hq * d->Wq) * 4));
            }
        }
}

/* acc[8][32] = the sums of one 8-channel block (w: its S steps) over the 32 pixels at x (the
 * first 16 when !two), in plain C. */
static void direct_sums_portable(const int8_t *w, const uint8_t *x, const int64_t *off, int64_t S,
                                 bool two, int32_t *acc) {
    int lanes = two ? DIRECT_PANEL : 16;
    memset(acc, 0, sizeof(int32_t) * DIRECT_MR * DIRECT_PANEL);
    for (int64_t st = 0; st < S; st++, w += DIRECT_MR * 4) {
        const uint8_t *xs = x + off[st];
        for (int r = 0; r < DIRECT_MR; r++)
            for (int p = 0; p < lanes; p++)
                acc[r * DIRECT_PANEL + p] += xs[4 * p] * w[4 * r] + xs[4 * p + 1] * w[4 * r + 1] +
                                             xs[4 * p + 2] * w[4 * r + 2] +
                                             xs[4 * p + 3] * w[4 * r + 3];
    }
}

/* Adds n corrections of the split packing (one block's) to its sums acc[8][32], in plain C. */
static void direct_fix_portable(const direct_fix *f, int64_t n, const uint8_t *x,
                                const int64_t *off, bool two, int32_t *acc) {
    int lanes = two ? DIRECT_PANEL : 16;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *xs = x + off[f[i].at / DIRECT_MR];
        int32_t *a = acc + f[i].at % DIRECT_MR * DIRECT_PANEL;
        for (int p = 0; p < lanes; p++)
            a[p] += xs[4 * p] * f[i].w[0] + xs[4 * p + 1] * f[i].w[1] + xs[4 * p + 2] * f[i].w[2] +
                    xs[4 * p + 3] * f[i].w[3];
    }
}

/* A run of at most 16 lanes of a panel that are pixels of one output row: lanes
 * [lane, lane + count) go to y's channel planes at offset dst. */
typedef struct direct_run {
    int lane, count;
    int64_t dst;
} direct_run;

/* Where the AVX2 micro-kernels read a panel's four 8-pixel vectors, their pixels numbered as
 * y's (pitch OW, no grid columns between rows): vector k's lanes [0, split[k]) are the planes'
 * grid pixels from byte at[k] on, the rest (past a row's end) those from at[k] + shift on, shift
 * being the grid's kw_off columns past each row. On the grid (pitch Wq) split is 8. */
typedef struct direct_vecs {
    int64_t at[4];
    int32_t split[4];
    int64_t shift;
} direct_vecs;

/* The panels' vectors in order: a walk over the rows and columns of the pixels the four vectors
 * start at, numbered with `pitch` (without a division per panel: a 1x1 layer's call takes a few
 * hundred cycles). */
typedef struct direct_walk {
    int64_t pitch, pixels, p0; /* pixels in all; the panel the walk is at */
    int64_t r[4], c[4];
} direct_walk;

static void walk_start(direct_walk *w, int64_t pitch, int64_t pixels) {
    *w = (direct_walk){.pitch = pitch, .pixels = pixels};
    for (int k = 0; k < 4; k++)
        w->r[k] = 8 * k / pitch, w->c[k] = 8 * k % pitch;
}

/* v = the vectors of the panel at pixel p0 (the walk's panel, or the next; from 0 again after
 * the last): vectors wholly past the pixels read the plane's start (any bytes, their lanes never
 * stored). */
static void walk_to(direct_walk *w, const bd_conv2d_shape *s, const direct_geom *d, int64_t p0,
                    direct_vecs *v) {
    if (p0 == 0) walk_start(w, w->pitch, w->pixels);
    for (; w->p0 < p0; w->p0 += DIRECT_PANEL)
        for (int k = 0; k < 4; k++)
            for (w->c[k] += DIRECT_PANEL; w->c[k] >= w->pitch; w->c[k] -= w->pitch)
                w->r[k]++;
    v->shift = d->kw_off * 4;
    for (int k = 0; k < 4; k++) {
        bool past = p0 + 8 * k >= w->pixels;
        v->at[k] = past ? 0 : (w->r[k] * d->Wq + w->c[k]) * 4;
        int64_t left = s->OW - w->c[k]; /* pixels to the row's end */
        v->split[k] = past || w->pitch == d->Wq || left >= 8 ? 8 : (int32_t)left;
    }
}

/* The runs of pixels [p0, pend), p0 a panel's first, numbered p = row * pitch + ow (pitch Wq on
 * the grid, OW where they are numbered as y's pixels): the pixels ow < OW of each row, a run
 * going on into the next row where the two are adjacent in y (pitch OW). */
static int direct_runs(const bd_conv2d_shape *s, int64_t pitch, int64_t oh0, int64_t p0,
                       int64_t pend, direct_run *runs) {
    int n = 0;
    for (int64_t p = p0; p < pend;) {
        int64_t r = p / pitch, ow = p % pitch;
        if (ow >= s->OW) {
            p = (r + 1) * pitch;
            continue;
        }
        int64_t count = pitch == s->OW || s->OW - ow > pend - p ? pend - p : s->OW - ow;
        count = count < 16 ? count : 16;
        runs[n++] = (direct_run){(int)(p - p0), (int)count, (oh0 + r) * s->OW + ow};
        p += count;
    }
    return n;
}

/* What a tile stores: its sums (less the zero point's part, xzu * rowsum) as int32 + bias, or as
 * float * scale + bias, and then optionally requantized to 8 bits. */
typedef struct direct_out {
    const int32_t *rowsum;
    int32_t xzu;
    const float *scale; /* NULL: an int32 result */
    const void *bias;
    const bd_i8_requant *rq;
    void *y;           /* batch item n's output */
    int64_t plane_out; /* OH * OW */
} direct_out;

/* What QuantizeLinear computes of the float v, as the generated code does (the clamp being the
 * activation before it): saturate(nearbyint(v / scale) + zero), NaN to 0.
 * The AVX2 stores reach the same bytes by other steps: vcvtps2dq rounds halves to even as
 * nearbyintf does (the default rounding mode), the zero point is added to that integer, and the
 * packs saturate. The quotient has to stay within int32 for that, which clamping v to
 * +-REQUANT_MOST scales first does; a v past that saturates either way. (v is never NaN there:
 * sums of integers and bytes times finite scales.) */
#define REQUANT_MOST 0x1p30f
static int32_t requant_portable(float v, const bd_i8_requant *rq) {
    v = v < rq->lo ? rq->lo : v > rq->hi ? rq->hi : v;
    float q = nearbyintf(v / rq->scale) + rq->zero, qlo = rq->out_signed ? -128.0f : 0.0f;
    q = q != q ? 0.0f : q < qlo ? qlo : q > qlo + 255.0f ? qlo + 255.0f : q;
    return (int32_t)q;
}

/* rq's clamp narrowed to +-REQUANT_MOST scales, for those steps. */
static inline void requant_bounds(const bd_i8_requant *rq, float *lo, float *hi) {
    float most = REQUANT_MOST * rq->scale;
    *lo = rq->lo > -most ? rq->lo : -most;
    *hi = rq->hi < most ? rq->hi : most;
}

/* Output channels [m0, m1) of the block at channel mb, from acc, along the runs. */
static void direct_store_portable(const int32_t *acc, int64_t mb, int64_t m0, int64_t m1,
                                  const direct_run *runs, int n_runs, const direct_out *o) {
    for (int64_t m = m0; m < m1; m++) {
        const int32_t *a = acc + (m - mb) * DIRECT_PANEL;
        uint32_t corr = (uint32_t)o->xzu * (uint32_t)o->rowsum[m];
        for (int i = 0; i < n_runs; i++)
            for (int l = 0; l < runs[i].count; l++) {
                int32_t v = (int32_t)((uint32_t)a[runs[i].lane + l] - corr);
                int64_t at = m * o->plane_out + runs[i].dst + l;
                if (!o->scale) {
                    ((int32_t *)o->y)[at] =
                        (int32_t)((uint32_t)v +
                                  (uint32_t)(o->bias ? ((const int32_t *)o->bias)[m] : 0));
                    continue;
                }
                float f = (float)v * o->scale[m] + (o->bias ? ((const float *)o->bias)[m] : 0.0f);
                if (!o->rq)
                    ((float *)o->y)[at] = f;
                else if (o->rq->out_signed)
                    ((int8_t *)o->y)[at] = (int8_t)requant_portable(f, o->rq);
                else
                    ((uint8_t *)o->y)[at] = (uint8_t)requant_portable(f, o->rq);
            }
    }
}

#if BD_KERNELS_X86
#define BD_I8_VNNI __attribute__((target("avx512f,avx512vnni")))

#define DIRECT_ROW(r)                                                                              \
    {                                                                                              \
        const __m512i wv = _mm512_broadcastd_epi32(_mm_loadu_si32(w + 4 * r));                     \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, x0, wv);                                            \
        if (two) c##r##1 = _mm512_dpbusd_epi32(c##r##1, x1, wv);                                   \
    }
#define DIRECT_STORE(r)                                                                            \
    _mm512_storeu_si512(acc + r * DIRECT_PANEL, c##r##0);                                          \
    _mm512_storeu_si512(acc + r * DIRECT_PANEL + 16, c##r##1);

/* direct_sums_portable by vpdpbusd, the weights prefetched (they stream from memory). */
static inline BD_I8_VNNI __attribute__((always_inline)) void
direct_sums(const int8_t *w, const uint8_t *x, const int64_t *off, int64_t S, bool two,
            int32_t *acc) {
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
            c70 = c00, c71 = c00;
    for (int64_t st = 0; st < S; st++, w += DIRECT_MR * 4) {
        const uint8_t *xs = x + off[st];
        _mm_prefetch((const char *)w + DIRECT_PREFETCH, _MM_HINT_T0);
        const __m512i x0 = _mm512_loadu_si512(xs), x1 = two ? _mm512_loadu_si512(xs + 64) : x0;
        DIRECT_ROW(0)
        DIRECT_ROW(1)
        DIRECT_ROW(2) DIRECT_ROW(3) DIRECT_ROW(4) DIRECT_ROW(5) DIRECT_ROW(6) DIRECT_ROW(7)
    }
    DIRECT_STORE(0)
    DIRECT_STORE(1)
    DIRECT_STORE(2) DIRECT_STORE(3) DIRECT_STORE(4) DIRECT_STORE(5) DIRECT_STORE(6) DIRECT_STORE(7)
}

static BD_I8_VNNI void direct_sums_vnni(const int8_t *w, const uint8_t *x, const int64_t *off,
                                        int64_t S, bool two, int32_t *acc) {
    if (two)
        direct_sums(w, x, off, S, true, acc);
    else
        direct_sums(w, x, off, S, false, acc);
}

/* direct_store_portable 16 lanes at a time, masked to each run; the 8-bit results narrowed in a
 * register and stored by a byte mask (vpmovdb to memory is slow on Zen). Taken with VNNI, which
 * every AVX-512 CPU that has it pairs with BW and VL. (Computing each half panel once and storing
 * its runs from that register under shifted masks measured slower on a Zen 5 core.) */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) void
direct_store_avx512(const int32_t *acc, int64_t mb, int64_t m0, int64_t m1, const direct_run *runs,
                    int n_runs, const direct_out *o) {
    const bd_i8_requant *rq = o->rq;
    const float qlo = rq && rq->out_signed ? -128.0f : 0.0f;
    for (int64_t m = m0; m < m1; m++) {
        const int32_t *a = acc + (m - mb) * DIRECT_PANEL;
        const __m512i corr =
            _mm512_set1_epi32((int32_t)((uint32_t)o->xzu * (uint32_t)o->rowsum[m]));
        if (!o->scale) {
            const __m512i b = _mm512_sub_epi32(
                _mm512_set1_epi32(o->bias ? ((const int32_t *)o->bias)[m] : 0), corr);
            int32_t *ym = (int32_t *)o->y + m * o->plane_out;
            for (int i = 0; i < n_runs; i++) {
                const __mmask16 k = (__mmask16)((1u << runs[i].count) - 1u);
                __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, a + runs[i].lane), b);
                _mm512_mask_storeu_epi32(ym + runs[i].dst, k, v);
            }
            continue;
        }
        const __m512 sc = _mm512_set1_ps(o->scale[m]);
        const __m512 b = _mm512_set1_ps(o->bias ? ((const float *)o->bias)[m] : 0.0f);
        for (int i = 0; i < n_runs; i++) {
            const __mmask16 k = (__mmask16)((1u << runs[i].count) - 1u);
            __m512i v = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(k, a + runs[i].lane), corr);
            __m512 f = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), sc), b);
            int64_t at = m * o->plane_out + runs[i].dst;
            if (!rq) {
                _mm512_mask_storeu_ps((float *)o->y + at, k, f);
                continue;
            }
            /* the clamp, then requant_portable's steps (no NaN arises from int32 sums and finite
             * scales; max/min would turn one into a bound) */
            f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(rq->lo)), _mm512_set1_ps(rq->hi));
            f = _mm512_roundscale_ps(_mm512_div_ps(f, _mm512_set1_ps(rq->scale)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            f = _mm512_add_ps(f, _mm512_set1_ps(rq->zero));
            f = _mm512_min_ps(_mm512_max_ps(f, _mm512_set1_ps(qlo)), _mm512_set1_ps(qlo + 255.0f));
            _mm_mask_storeu_epi8((int8_t *)o->y + at, k,
                                 _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(f)));
        }
    }
}

/* The split packing's micro-kernel on AVX2: the 8 x 32 sums as four passes of 4 channels x 16
 * pixels (8 accumulators), per step two pixel vectors' 32 bytes of x (v's), the unsigned operand
 * of vpmaddubsw, times each channel's 4 weight bytes broadcast, the int16 pair sums summed by
 * vpmaddwd with ones into int32. No pair saturates (bd_i8_pair_saturates); the corrections
 * follow. A vector that crosses a row's end is two loads blended; the multiplies bound the loop,
 * and the blend and load fit beside them. (8 channels x 8 pixels measured 5-8% slower, 2 x 32
 * level; a prefetch of the weights or a loop unrolled twice no faster on a Zen 3 core.) */
#define SPLIT_ROW(r) BD_I8_DOT4_BCAST2_AVX2(c##r##0, c##r##1, x0, x1, ws + 4 * r, ones);
#define SPLIT_STORE(r)                                                                             \
    _mm256_storeu_si256((__m256i *)(a + r * DIRECT_PANEL), c##r##0);                               \
    _mm256_storeu_si256((__m256i *)(a + r * DIRECT_PANEL + 8), c##r##1);

/* Lanes split and above of 8 int32 all ones. */
static inline __attribute__((target("avx2"), always_inline)) __m256i lanes_from(int32_t split) {
    return _mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                              _mm256_set1_epi32(split - 1));
}

static __attribute__((target("avx2"))) void direct_sums_avx2(const int8_t *w, const uint8_t *x,
                                                              const direct_vecs *v,
                                                              const int64_t *off, int64_t S,
                                                              bool two, int32_t *acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int q = 0; q < (two ? 2 : 1); q++) {
        const uint8_t *a0 = x + v->at[2 * q], *a1 = x + v->at[2 * q + 1];
        const bool whole = v->split[2 * q] == 8 && v->split[2 * q + 1] == 8;
        const __m256i m0 = lanes_from(v->split[2 * q]), m1 = lanes_from(v->split[2 * q + 1]);
        for (int h = 0; h < 2; h++) {
            __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,
                    c21 = c00, c30 = c00, c31 = c00;
            const int8_t *ws = w + 16 * h;
            if (whole) {
                for (int64_t st = 0; st < S; st++, ws += DIRECT_MR * 4) {
                    const __m256i x0 = _mm256_loadu_si256((const __m256i *)(a0 + off[st]));
                    const __m256i x1 = _mm256_loadu_si256((const __m256i *)(a1 + off[st]));
                    SPLIT_ROW(0) SPLIT_ROW(1) SPLIT_ROW(2) SPLIT_ROW(3)
                }
            } else {
                const int64_t shift = v->shift;
                for (int64_t st = 0; st < S; st++, ws += DIRECT_MR * 4) {
                    const uint8_t *b0 = a0 + off[st], *b1 = a1 + off[st];
                    const __m256i x0 = _mm256_blendv_epi8(
                        _mm256_loadu_si256((const __m256i *)b0),
                        _mm256_loadu_si256((const __m256i *)(b0 + shift)), m0);
                    const __m256i x1 = _mm256_blendv_epi8(
                        _mm256_loadu_si256((const __m256i *)b1),
                        _mm256_loadu_si256((const __m256i *)(b1 + shift)), m1);
                    SPLIT_ROW(0) SPLIT_ROW(1) SPLIT_ROW(2) SPLIT_ROW(3)
                }
            }
            int32_t *a = acc + 16 * q + 4 * h * DIRECT_PANEL;
            SPLIT_STORE(0) SPLIT_STORE(1) SPLIT_STORE(2) SPLIT_STORE(3)
        }
    }
}

/* direct_fix_portable likewise (a correction's pairs have one weight each: none saturates), a
 * channel's row of sums in registers while its corrections (packed together) are added; the
 * vectors read as the sums' (whole: none crosses a row's end, no blends). */
static inline __attribute__((target("avx2"), always_inline)) void
fix_rows(const direct_fix *f, int64_t n, const uint8_t *const b[4], int64_t shift,
         const __m256i m[4], bool whole, bool two, const int64_t *off, int32_t *acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n;) {
        int32_t *a = acc + f[i].at % DIRECT_MR * DIRECT_PANEL;
        __m256i s0 = _mm256_loadu_si256((const __m256i *)a);
        __m256i s1 = _mm256_loadu_si256((const __m256i *)(a + 8));
        __m256i s2 = _mm256_loadu_si256((const __m256i *)(a + 16));
        __m256i s3 = _mm256_loadu_si256((const __m256i *)(a + 24));
        int32_t r = f[i].at % DIRECT_MR;
        for (; i < n && f[i].at % DIRECT_MR == r; i++) {
            int32_t w4;
            memcpy(&w4, f[i].w, 4);
            const __m256i wv = _mm256_set1_epi32(w4);
            const int64_t o = off[f[i].at / DIRECT_MR];
#define FIX_ADD(k)                                                                                 \
    {                                                                                              \
        __m256i xk = _mm256_loadu_si256((const __m256i *)(b[k] + o));                              \
        if (!whole)                                                                                \
            xk = _mm256_blendv_epi8(xk, _mm256_loadu_si256((const __m256i *)(b[k] + o + shift)),   \
                                    m[k]);                                                         \
        s##k = BD_I8_DOT4_AVX2(s##k, xk, wv, ones);                                                \
    }
            FIX_ADD(0)
            FIX_ADD(1)
            if (two) {
                FIX_ADD(2)
                FIX_ADD(3)
            }
#undef FIX_ADD
        }
        _mm256_storeu_si256((__m256i *)a, s0);
        _mm256_storeu_si256((__m256i *)(a + 8), s1);
        _mm256_storeu_si256((__m256i *)(a + 16), s2);
        _mm256_storeu_si256((__m256i *)(a + 24), s3);
    }
}

static __attribute__((target("avx2"))) void direct_fix_avx2(const direct_fix *f, int64_t n,
                                                             const uint8_t *x, const direct_vecs *v,
                                                             const int64_t *off, bool two,
                                                             int32_t *acc) {
    const uint8_t *const b[4] = {x + v->at[0], x + v->at[1], x + v->at[2], x + v->at[3]};
    const __m256i m[4] = {lanes_from(v->split[0]), lanes_from(v->split[1]),
                          lanes_from(v->split[2]), lanes_from(v->split[3])};
    bool whole = v->split[0] == 8 && v->split[1] == 8 && v->split[2] == 8 && v->split[3] == 8;
    if (whole) fix_rows(f, n, b, v->shift, m, true, two, off, acc);
    else fix_rows(f, n, b, v->shift, m, false, two, off, acc);
}

/* The first n (1 to 8) 4-byte lanes of v at dst: from 4 on as two overlapping halves (AVX2's
 * masked stores are microcoded on AMD). */
static inline __attribute__((target("avx2"), always_inline)) void store_lanes(void *dst, __m256i v,
                                                                             int n) {
    if (n == 8) {
        _mm256_storeu_si256((__m256i *)dst, v);
        return;
    }
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)t, v);
    if (n >= 4) {
        memcpy(dst, t, 16);
        memcpy((char *)dst + 4 * (n - 4), t + n - 4, 16);
        return;
    }
    for (int i = 0; i < n; i++) memcpy((char *)dst + 4 * i, t + i, 4);
}

/* The first n (1 to 8) bytes of b at dst, likewise. */
static inline void store_bytes(void *dst, uint64_t b, int n) {
    if (n == 8) {
        memcpy(dst, &b, 8);
    } else if (n >= 4) {
        uint32_t lo = (uint32_t)b, hi = (uint32_t)(b >> (8 * (n - 4)));
        memcpy(dst, &lo, 4);
        memcpy((char *)dst + n - 4, &hi, 4);
    } else {
        for (int i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)(b >> (8 * i));
    }
}

/* direct_store_avx512 8 lanes at a time (the float steps the same, without FMA contraction: the
 * target has none; the rounding and saturation as requant_portable says). A partial 8 reads
 * lanes past the run, in acc's room, and stores none. The constants are read into locals first:
 * the byte stores may alias anything, and gcc reloaded them from *o and *o->rq after each one. */
static __attribute__((target("avx2"))) void
direct_store_avx2(const int32_t *acc, int64_t mb, int64_t m0, int64_t m1, const direct_run *runs,
                  int n_runs, const direct_out *o) {
    const bd_i8_requant *rq = o->rq;
    const int32_t *rowsum = o->rowsum;
    const uint32_t xzu = (uint32_t)o->xzu;
    const float *scale = o->scale;
    const void *bias = o->bias;
    const int64_t plane_out = o->plane_out;
    if (!scale) {
        for (int64_t m = m0; m < m1; m++) {
            const int32_t *a = acc + (m - mb) * DIRECT_PANEL;
            uint32_t bm = bias ? (uint32_t)((const int32_t *)bias)[m] : 0u;
            const __m256i b = _mm256_set1_epi32((int32_t)(bm - xzu * (uint32_t)rowsum[m]));
            int32_t *ym = (int32_t *)o->y + m * plane_out;
            for (int i = 0; i < n_runs; i++)
                for (int l = 0; l < runs[i].count; l += 8) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(a + runs[i].lane + l));
                    int n = runs[i].count - l < 8 ? runs[i].count - l : 8;
                    store_lanes(ym + runs[i].dst + l, _mm256_add_epi32(v, b), n);
                }
        }
        return;
    }
    const int out_signed = rq && rq->out_signed;
    float qlo = 0.0f, qhi = 0.0f;
    if (rq) requant_bounds(rq, &qlo, &qhi);
    const __m256 lo = _mm256_set1_ps(qlo), hi = _mm256_set1_ps(qhi);
    const __m256 qscale = _mm256_set1_ps(rq ? rq->scale : 1.0f);
    const __m256i qzero = _mm256_set1_epi32(rq ? (int32_t)rq->zero : 0);
    for (int64_t m = m0; m < m1; m++) {
        const int32_t *a = acc + (m - mb) * DIRECT_PANEL;
        const __m256i corr = _mm256_set1_epi32((int32_t)(xzu * (uint32_t)rowsum[m]));
        const __m256 sc = _mm256_set1_ps(scale[m]);
        const __m256 b = _mm256_set1_ps(bias ? ((const float *)bias)[m] : 0.0f);
        for (int i = 0; i < n_runs; i++)
            for (int l = 0; l < runs[i].count; l += 8) {
                __m256i v = _mm256_sub_epi32(
                    _mm256_loadu_si256((const __m256i *)(a + runs[i].lane + l)), corr);
                __m256 f = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), sc), b);
                int64_t at = m * plane_out + runs[i].dst + l;
                int n = runs[i].count - l < 8 ? runs[i].count - l : 8;
                if (!rq) {
                    store_lanes((float *)o->y + at, _mm256_castps_si256(f), n);
                    continue;
                }
                f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
                __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_div_ps(f, qscale)), qzero);
                __m128i w16 =
                    _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
                __m128i b8 = out_signed ? _mm_packs_epi16(w16, w16) : _mm_packus_epi16(w16, w16);
                store_bytes((uint8_t *)o->y + at, (uint64_t)_mm_cvtsi128_si64(b8), n);
            }
    }
}

/* The channels-in-lanes micro-kernel, for images whose rows are short: np (1 to 8) consecutive
 * output pixels of one row x 16 nv output channels (nv 1 or 2), each accumulator one pixel's 16
 * channels. Per step: the two 8-channel blocks of each 16 loaded as one vector, np broadcasts of
 * a pixel's 4 bytes (its 4 channels in the planes) and np * nv vpdpbusd. The pixel-in-lanes
 * kernel computes the grid's columns past OW too (2 of 9 at 7x7, a panel of 32 for 28 pixels of
 * a 14x14 row pair); this one only the pixels. wb[k]: the k-th 8-channel block's weights
 * (a repeated block where it is past M: its lanes are computed and never stored). out[np][32]. */
static inline BD_I8_VNNI __attribute__((always_inline)) void
lanes_sums(const int8_t *const wb[4], const uint8_t *x, const int64_t *off, int64_t S, const int np,
           const int nv, int32_t *out) {
    __m512i acc[8][2];
    for (int i = 0; i < np; i++)
        for (int j = 0; j < nv; j++) acc[i][j] = _mm512_setzero_si512();
    for (int64_t st = 0; st < S; st++) {
        const uint8_t *xs = x + off[st];
        __m512i wv[2];
        for (int j = 0; j < nv; j++) {
            const int8_t *lo = wb[2 * j] + st * DIRECT_MR * 4, *hi = wb[2 * j + 1] + st * DIRECT_MR * 4;
            _mm_prefetch((const char *)lo + DIRECT_PREFETCH, _MM_HINT_T0);
            _mm_prefetch((const char *)hi + DIRECT_PREFETCH, _MM_HINT_T0);
            wv[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                                       _mm256_loadu_si256((const __m256i *)hi), 1);
        }
        for (int i = 0; i < np; i++) {
            int32_t px;
            memcpy(&px, xs + 4 * i, 4);
            const __m512i xv = _mm512_set1_epi32(px);
            for (int j = 0; j < nv; j++) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], xv, wv[j]);
        }
    }
    for (int i = 0; i < np; i++)
        for (int j = 0; j < nv; j++) _mm512_storeu_si512(out + i * 32 + j * 16, acc[i][j]);
}

typedef void lanes_fn(const int8_t *const wb[4], const uint8_t *x, const int64_t *off, int64_t S,
                      int32_t *out);
#define LANES_FN(np, nv)                                                                           \
    static BD_I8_VNNI void lanes_##np##_##nv(const int8_t *const wb[4], const uint8_t *x,         \
                                             const int64_t *off, int64_t S, int32_t *out) {       \
        lanes_sums(wb, x, off, S, np, nv, out);                                                    \
    }
#define LANES_FNS(np) LANES_FN(np, 1) LANES_FN(np, 2)
LANES_FNS(1) LANES_FNS(2) LANES_FNS(3) LANES_FNS(4) LANES_FNS(5) LANES_FNS(6) LANES_FNS(7) LANES_FNS(8)
static lanes_fn *const lanes_fns[9][2] = {
    {NULL, NULL},         {lanes_1_1, lanes_1_2}, {lanes_2_1, lanes_2_2}, {lanes_3_1, lanes_3_2},
    {lanes_4_1, lanes_4_2}, {lanes_5_1, lanes_5_2}, {lanes_6_1, lanes_6_2}, {lanes_7_1, lanes_7_2},
    {lanes_8_1, lanes_8_2}};

/* A chunk of lanes_sums requantized as direct_store_avx512 does, but with the channels in lanes
 * (their scales and biases loaded as vectors), then its np x 16 bytes transposed in registers
 * into 16 channel rows of np bytes. Transposing the int32 sums through memory and storing them
 * channel by channel, as the float and int32 results are, made the kernel lose to the pixel loop
 * on every layer but 7x7 and 14x14 ones. */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) void
lanes_store_requant(const int32_t *out, int np, int64_t mb, int64_t m0, int64_t m1, int64_t dst,
                    const direct_out *o) {
    const bd_i8_requant *rq = o->rq;
    const float qlo = rq->out_signed ? -128.0f : 0.0f;
    const __m512 lo = _mm512_set1_ps(rq->lo), hi = _mm512_set1_ps(rq->hi);
    const __m512 qs = _mm512_set1_ps(rq->scale), qz = _mm512_set1_ps(rq->zero);
    const __m512 qmin = _mm512_set1_ps(qlo), qmax = _mm512_set1_ps(qlo + 255.0f);
    const __mmask16 px = (__mmask16)((1u << np) - 1u);
    for (int64_t c0 = mb; c0 < m1; c0 += 16) {
        /* the channels [c0, c0 + 16) that exist: scale, bias and rowsum are read there alone */
        int64_t valid = m1 - c0 < 16 ? m1 - c0 : 16;
        const __mmask16 k = (__mmask16)((1u << valid) - 1u);
        const __m512i corr = _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(k, o->rowsum + c0),
                                                _mm512_set1_epi32(o->xzu));
        const __m512 sc = _mm512_maskz_loadu_ps(k, o->scale + c0);
        const __m512 b = o->bias ? _mm512_maskz_loadu_ps(k, (const float *)o->bias + c0)
                                 : _mm512_setzero_ps();
        __m128i r[8];
        for (int i = 0; i < 8; i++) {
            if (i >= np) {
                r[i] = _mm_setzero_si128();
                continue;
            }
            __m512i v = _mm512_sub_epi32(_mm512_loadu_si512(out + i * 32 + (c0 - mb)), corr);
            __m512 f = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), sc), b);
            f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
            f = _mm512_roundscale_ps(_mm512_div_ps(f, qs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            f = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(f, qz), qmin), qmax);
            r[i] = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(f));
        }
        /* 8 pixels x 16 channels of bytes -> 16 channels x 8 pixels: bytes, words, dwords */
        __m128i a[8], w[8], d[8];
        for (int i = 0; i < 4; i++) {
            a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);     /* channels 0-7 */
            a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]); /* channels 8-15 */
        }
        for (int h = 0; h < 2; h++)     /* channel half */
            for (int q = 0; q < 2; q++) { /* pixels 0-3, 4-7 */
                w[h * 4 + q * 2] = _mm_unpacklo_epi16(a[q * 4 + h], a[q * 4 + 2 + h]);
                w[h * 4 + q * 2 + 1] = _mm_unpackhi_epi16(a[q * 4 + h], a[q * 4 + 2 + h]);
            }
        for (int h = 0; h < 2; h++)
            for (int q = 0; q < 2; q++) { /* channels 8h + 4q .. + 3, two to a register */
                d[h * 4 + q * 2] = _mm_unpacklo_epi32(w[h * 4 + q], w[h * 4 + 2 + q]);
                d[h * 4 + q * 2 + 1] = _mm_unpackhi_epi32(w[h * 4 + q], w[h * 4 + 2 + q]);
            }
        for (int e = 0; e < 8; e++)
            for (int half = 0; half < 2; half++) {
                int64_t m = c0 + 2 * e + half;
                if (m < m0 || m >= m1) continue;
                __m128i row = half ? _mm_unpackhi_epi64(d[e], d[e]) : d[e];
                _mm_mask_storeu_epi8((int8_t *)o->y + m * o->plane_out + dst, px, row);
            }
    }
}

/* lanes_tile cuts each output row into row_chunks(OW, 8) chunks of at most 8 pixels (the AVX2
 * one of 5), as even as they go (7 + 7 for 14); chunk c has chunk_pixels of them. lanes_faster
 * counts the same. */
static int64_t row_chunks(int64_t OW, int64_t most) {
    return (OW + most - 1) / most;
}

static int chunk_pixels(int64_t OW, int64_t chunks, int64_t c) {
    return (int)(OW / chunks + (c < OW % chunks));
}

/* The tile by lanes_sums: per 32 output channels (from mb0), each output row chunk by chunk,
 * each chunk requantized by lanes_store_requant, or its sums transposed into t (channel rows, as
 * the pixel-in-lanes kernel leaves them) and stored as one run. */
static void lanes_tile(const bd_conv2d_shape *s, const direct_geom *d, const int8_t *blocks_w,
                       const uint8_t *planes, const int64_t *off, int32_t *out, int32_t *t,
                       const direct_out *o, int64_t oc0, int64_t oc1, int64_t oh0, int64_t rows) {
    int64_t mend = round_up(s->M, DIRECT_MR), chunks = row_chunks(s->OW, 8);
    for (int64_t mb = oc0 / DIRECT_MR * DIRECT_MR; mb < oc1; mb += 4 * DIRECT_MR) {
        const int8_t *wb[4] = {blocks_w + mb * d->S * 4};
        for (int k = 1; k < 4; k++)
            wb[k] = mb + DIRECT_MR * k < mend ? wb[k - 1] + DIRECT_MR * d->S * 4 : wb[k - 1];
        int nv = oc1 - mb > 16 ? 2 : 1;
        int64_t m0 = mb > oc0 ? mb : oc0, m1 = mb + 32 < oc1 ? mb + 32 : oc1;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0, ow = 0; c < chunks; c++) {
                int np = chunk_pixels(s->OW, chunks, c);
                int64_t dst = (oh0 + r) * s->OW + ow;
                lanes_fns[np][nv - 1](wb, planes + (r * d->Wq + ow) * 4, off, d->S, out);
                if (o->rq) {
                    lanes_store_requant(out, np, mb, m0, m1, dst, o);
                } else {
                    for (int i = 0; i < np; i++)
                        for (int m = 0; m < 16 * nv; m++) t[m * DIRECT_PANEL + i] = out[i * 32 + m];
                    direct_run run = {0, np, dst};
                    direct_store_avx512(t, mb, m0, m1, &run, 1, o);
                }
                ow += np;
            }
    }
}

/* Whether lanes_tile is expected to take less time than the pixel-in-lanes loop, in cycles of one
 * vpdpbusd a cycle. That loop computes the grid's panels (16 S a panel and block) and stores each
 * panel's runs; lanes_tile computes np * nv a step per chunk (or its loads where they are more,
 * two a cycle) and stores 16 channels of a chunk at a time. The store costs were fitted on a Zen 4
 * core, where the model then came within 5% of the measured times of ResNet's 3x3 layers and
 * SqueezeNet's expands but one (the pixel loop at 13x13, 15% under). */
static bool lanes_faster(const bd_conv2d_shape *s, const direct_geom *d, int64_t rows, int64_t oc0,
                         int64_t oc1, bool requant) {
    int64_t mb0 = oc0 / DIRECT_MR * DIRECT_MR, chunks = row_chunks(s->OW, 8);
    int64_t panels = (rows * d->Wq + DIRECT_PANEL - 1) / DIRECT_PANEL;
    int64_t runs = DIRECT_PANEL / s->OW + 2, run_cost = requant ? 150 : 100;
    int64_t vector_cost = requant ? 240 : 380; /* the float and int32 results transposed in memory */
    double pixel = (double)((oc1 - mb0 + DIRECT_MR - 1) / DIRECT_MR) * panels *
                   (16 * d->S + run_cost * runs);
    double lanes = 0;
    for (int64_t mb = mb0; mb < oc1; mb += 4 * DIRECT_MR) {
        int64_t nv = oc1 - mb > 16 ? 2 : 1;
        for (int64_t c = 0; c < chunks; c++) {
            int64_t np = chunk_pixels(s->OW, chunks, c), loads = (4 * nv + np + 1) / 2;
            lanes += (double)rows * (d->S * (np * nv > loads ? np * nv : loads) + vector_cost * nv);
        }
    }
    return lanes < pixel;
}
#endif

#if BD_KERNELS_X86
/* The channels-in-lanes kernel of the split packing on AVX2: np (1 to 5) consecutive output
 * pixels of one row x the 16 channels of two 8-channel blocks (w0, w1: the second a repeat
 * where it is past M), a pixel's 4 bytes broadcast, a block's 32 weight bytes of a step one
 * vector: per step 2 loads, np broadcasts, 2 np vpmaddubsw and vpmaddwd. out[np][16]. */
static inline __attribute__((target("avx2"), always_inline)) void
lanes_sums_avx2(const int8_t *w0, const int8_t *w1, const uint8_t *x, const int64_t *off, int64_t S,
                const int np, int pf, int32_t *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[5][2];
    for (int i = 0; i < np; i++) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    for (int64_t st = 0; st < S; st++) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)(w0 + st * DIRECT_MR * 4));
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(w1 + st * DIRECT_MR * 4));
        if (pf) {
            _mm_prefetch((const char *)(w0 + st * DIRECT_MR * 4) + 2048, _MM_HINT_T0);
            _mm_prefetch((const char *)(w1 + st * DIRECT_MR * 4) + 2048, _MM_HINT_T0);
        }
        const uint8_t *xs = x + off[st];
        for (int i = 0; i < np; i++) {
            int32_t px;
            memcpy(&px, xs + 4 * i, 4);
            const __m256i xv = _mm256_set1_epi32(px);
            acc[i][0] = BD_I8_DOT4_AVX2(acc[i][0], xv, b0, ones);
            acc[i][1] = BD_I8_DOT4_AVX2(acc[i][1], xv, b1, ones);
        }
    }
    for (int i = 0; i < np; i++) {
        _mm256_storeu_si256((__m256i *)(out + 16 * i), acc[i][0]);
        _mm256_storeu_si256((__m256i *)(out + 16 * i + 8), acc[i][1]);
    }
}

typedef void lanes_avx2_fn(const int8_t *w0, const int8_t *w1, const uint8_t *x, const int64_t *off,
                           int64_t S, int pf, int32_t *out);
#define LANES_AVX2_FN(np)                                                                          \
    static __attribute__((target("avx2"))) void lanes_avx2_##np(                                 \
        const int8_t *w0, const int8_t *w1, const uint8_t *x, const int64_t *off, int64_t S,       \
        int pf, int32_t *out) {                                                                    \
        if (pf) lanes_sums_avx2(w0, w1, x, off, S, np, 1, out);                                    \
        else lanes_sums_avx2(w0, w1, x, off, S, np, 0, out);                                       \
    }
LANES_AVX2_FN(1) LANES_AVX2_FN(2) LANES_AVX2_FN(3) LANES_AVX2_FN(4) LANES_AVX2_FN(5)
static lanes_avx2_fn *const lanes_avx2_fns[6] = {NULL,           lanes_avx2_1, lanes_avx2_2,
                                                  lanes_avx2_3, lanes_avx2_4, lanes_avx2_5};

/* The tile by lanes_sums_avx2: per 16 output channels, each output row in spans of up to 32
 * pixels, each span chunk by chunk; the chunks' sums transposed into t (an 8 x 32 block per 8
 * channels: channel rows, as the pixel-in-lanes kernel leaves them), then each block corrected
 * and stored as one run per span (a 7-pixel row's corrections once, not once per chunk: on
 * int8 ResNet-18's 7x7 layers they had cost a sixth of the time). The first pass over a block
 * of weights prefetches them (they stream from memory). */
static void lanes_tile_avx2(const bd_conv2d_shape *s, const direct_geom *d, const int8_t *blocks_w,
                            const int32_t *fix_start, const direct_fix *fixes,
                            const uint8_t *planes, const int64_t *off, int32_t *out, int32_t *t,
                            const direct_out *o, int64_t oc0, int64_t oc1, int64_t oh0,
                            int64_t rows) {
    int64_t mend = round_up(s->M, DIRECT_MR);
    const direct_vecs along = {{0, 32, 64, 96}, {8, 8, 8, 8}, 0}; /* a span's pixels, in a row */
    for (int64_t mb = oc0 / DIRECT_MR * DIRECT_MR; mb < oc1; mb += 2 * DIRECT_MR) {
        const int8_t *w0 = blocks_w + mb * d->S * 4;
        const int8_t *w1 = mb + DIRECT_MR < mend ? w0 + DIRECT_MR * d->S * 4 : w0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t ow0 = 0; ow0 < s->OW; ow0 += DIRECT_PANEL) {
                int64_t span = s->OW - ow0 < DIRECT_PANEL ? s->OW - ow0 : DIRECT_PANEL;
                int64_t chunks = row_chunks(span, 5);
                const uint8_t *x = planes + (r * d->Wq + ow0) * 4;
                for (int64_t c = 0, i0 = 0; c < chunks; c++) {
                    int np = chunk_pixels(span, chunks, c);
                    lanes_avx2_fns[np](w0, w1, x + i0 * 4, off, d->S, r == 0 && ow0 == 0 && c == 0,
                                       out);
                    for (int h = 0; h < 2; h++)
                        for (int m = 0; m < DIRECT_MR; m++)
                            for (int i = 0; i < np; i++)
                                t[(h * DIRECT_MR + m) * DIRECT_PANEL + i0 + i] =
                                    out[16 * i + DIRECT_MR * h + m];
                    i0 += np;
                }
                direct_run run = {0, (int)span, (oh0 + r) * s->OW + ow0};
                for (int64_t h = 0, b = mb; h < 2 && b < oc1; h++, b += DIRECT_MR) {
                    int32_t *th = t + h * DIRECT_MR * DIRECT_PANEL;
                    int64_t blk = b / DIRECT_MR;
                    direct_fix_avx2(fixes + fix_start[blk], fix_start[blk + 1] - fix_start[blk], x,
                                    &along, off, span > 16, th);
                    int64_t m0 = b > oc0 ? b : oc0, m1 = b + DIRECT_MR < oc1 ? b + DIRECT_MR : oc1;
                    direct_store_avx2(th, b, m0, m1, &run, 1, o);
                }
            }
    }
}

/* Whether lanes_tile_avx2 is expected to take less time than the pixel-in-lanes loop, in cycles
 * of two multiplies a cycle. That loop computes the grid's panels (32 S a panel and block, 16 S
 * a last half panel) and stores each panel's runs; lanes_tile_avx2 computes 2 np S per chunk and
 * 16 channels, at 1.1 times that, and transposes, corrects and stores (250 a chunk). The
 * factors were fitted on a Zen 3 core to the 7x7, 14x14 and 28x28 layers of the list in
 * tests/kernels/bench_kernels.c (250 a chunk since a row's corrections and store are once per
 * span); the model then picks the faster kernel on the others measured there: lanes for 7x7
 * outputs (512 channels 141 -> 178 GOP/s, ResNet-50's 1x1/2 1024 -> 2048 1.11x) and SqueezeNet's
 * 13x13 (1.07x), the pixel loop from 14x14 up (lanes level at 14x14, 0.83x at 27x27). */
static bool lanes_faster_avx2(const bd_conv2d_shape *s, const direct_geom *d, int64_t rows,
                              int64_t oc0, int64_t oc1) {
    int64_t mb0 = oc0 / DIRECT_MR * DIRECT_MR, chunks = row_chunks(s->OW, 5);
    int64_t pixels = rows * d->Wq, rest = pixels % DIRECT_PANEL;
    double halves = 2.0 * (double)(pixels / DIRECT_PANEL) + (rest == 0 ? 0 : rest > 16 ? 2 : 1);
    int64_t blocks8 = (oc1 - mb0 + DIRECT_MR - 1) / DIRECT_MR, blocks16 = (blocks8 + 1) / 2;
    double runs = (double)(pixels + DIRECT_PANEL - 1) / DIRECT_PANEL * (DIRECT_PANEL / s->OW + 2);
    double pixel = (double)blocks8 * (halves * 16.0 * (double)d->S + runs * 100.0);
    double lanes = (double)blocks16 * (double)rows *
                   ((double)s->OW * 2.0 * 1.1 * (double)d->S + (double)chunks * 250.0);
    return lanes < pixel;
}
#endif

/* Whether the direct path's micro-kernel is the VNNI one here. */
static bool direct_vnni(void) {
#if BD_KERNELS_X86
    return bd_kernels_get_isa() == BD_KERNELS_ISA_AVX512 && bd_kernels_cpu_has_vnni();
#else
    return false;
#endif
}

/* Whether it is the AVX2 one of the split packing. */
static bool direct_split(void) {
#if BD_KERNELS_X86
    return !direct_vnni() && bd_kernels_get_isa() >= BD_KERNELS_ISA_AVX2;
#else
    return false;
#endif
}

static void direct_tile(const bd_conv2d_shape *s, const unsigned char *base, int32_t packing,
                        const uint8_t *xn, int x_signed, int32_t x_zero, direct_out *o,
                        int64_t oc0, int64_t oc1, int64_t oh0, int64_t oh1, void *scratch) {
    const int8_t *blocks_w = (const int8_t *)(base + I8C_HDR + s->M * 8);
    bool split = packing == DIRECT_SPLIT;
    const int32_t *fix_start = (const int32_t *)(blocks_w + direct_block_bytes(s));
    const direct_fix *fixes = (const direct_fix *)(blocks_w + direct_fixes_at(s));
    int64_t rows = oh1 - oh0;
    direct_geom d = direct_geometry(s, rows);
    int64_t *off = bd_align64(scratch);
    uint8_t *planes = (uint8_t *)off + round_up(d.S * 8, 64);
    int32_t *acc = (int32_t *)(planes + d.G * d.phases * d.plane * 4);
    uint8_t flip = x_signed ? 0x80 : 0, xzu = (uint8_t)((uint8_t)x_zero ^ flip);
    o->xzu = xzu;
    void (*sums)(const int8_t *, const uint8_t *, const int64_t *, int64_t, bool, int32_t *) =
        direct_sums_portable;
    void (*store)(const int32_t *, int64_t, int64_t, int64_t, const direct_run *, int,
                  const direct_out *) = direct_store_portable;
    bool split_avx2 = false;
#if BD_KERNELS_X86
    /* the split packing on its AVX2 kernels, which any AVX2 CPU runs (below) */
    split_avx2 = split && bd_kernels_get_isa() >= BD_KERNELS_ISA_AVX2;
    if (!split && direct_vnni()) sums = direct_sums_vnni;
    if (direct_vnni()) store = direct_store_avx512;
    else if (bd_kernels_get_isa() >= BD_KERNELS_ISA_AVX2) store = direct_store_avx2;
#endif
    for (int64_t g = 0, st = 0; g < d.G; g++)
        for (int64_t kh = 0; kh < s->KH; kh++)
            for (int64_t kw = 0; kw < s->KW; kw++, st++) {
                int64_t th = kh * s->dil_h, tw = kw * s->dil_w;
                int64_t plane = g * d.phases + (th % s->stride_h) * s->stride_w + tw % s->stride_w;
                off[st] = (plane * d.plane + th / s->stride_h * d.Wq + tw / s->stride_w) * 4;
            }
    direct_fill(s, &d, (const int32_t *)(blocks_w + direct_order_at(s)), xn, oh0, flip, xzu, planes);
#if BD_KERNELS_X86
    if (!split && direct_vnni() && lanes_faster(s, &d, rows, oc0, oc1, o->rq != NULL)) {
        lanes_tile(s, &d, blocks_w, planes, off, acc, acc + 8 * DIRECT_PANEL, o, oc0, oc1, oh0, rows);
        return;
    }
    if (split_avx2 && lanes_faster_avx2(s, &d, rows, oc0, oc1)) {
        lanes_tile_avx2(s, &d, blocks_w, fix_start, fixes, planes, off, acc, acc + 8 * DIRECT_PANEL,
                        o, oc0, oc1, oh0, rows);
        return;
    }
#endif
    /* The AVX2 kernels number the pixels as y's rows (no grid columns computed: 2 of 30 at 28x28,
     * and a run per panel to store) where a row holds a vector (8 pixels) and the grid has 2 or
     * more columns past each row (one, a 3x3/2 layer's, costs less than the blends: 0.99x of the
     * time alone, 1.04x in int8 ResNet-18); the others on the grid. */
    bool compact = split_avx2 && s->OW >= 8 && d.kw_off >= 2;
    int64_t pitch = compact ? s->OW : d.Wq, pixels = rows * pitch;
    int64_t mb0 = oc0 / DIRECT_MR * DIRECT_MR, panels = (pixels + DIRECT_PANEL - 1) / DIRECT_PANEL;
    int64_t blocks = (oc1 - mb0 + DIRECT_MR - 1) / DIRECT_MR;
    /* Whichever operand is bigger is read once: the planes panel by panel while every weight
     * block passes over each (a wide image), or each weight block while it meets every panel (a
     * small image of many channels, whose weights would otherwise stream from memory per panel). */
    bool panels_outer = d.G * d.phases * d.plane > (oc1 - mb0) * d.S;
    direct_walk walk;
    walk_start(&walk, pitch, pixels);
    int64_t outer = panels_outer ? panels : blocks, inner = panels_outer ? blocks : panels;
    for (int64_t i_out = 0; i_out < outer; i_out++)
        for (int64_t i_in = 0; i_in < inner; i_in++) {
            int64_t p0 = (panels_outer ? i_out : i_in) * DIRECT_PANEL;
            int64_t mb = mb0 + (panels_outer ? i_in : i_out) * DIRECT_MR;
            int64_t pend = p0 + DIRECT_PANEL < pixels ? p0 + DIRECT_PANEL : pixels;
            direct_run runs[DIRECT_PANEL];
            int n_runs = direct_runs(s, pitch, oh0, p0, pend, runs);
            if (!n_runs) continue;
            bool two = pend - p0 > 16;
            int64_t blk = mb / DIRECT_MR, nfix = split ? fix_start[blk + 1] - fix_start[blk] : 0;
#if BD_KERNELS_X86
            if (split_avx2) {
                direct_vecs v;
                walk_to(&walk, s, &d, p0, &v);
                direct_sums_avx2(blocks_w + mb * d.S * 4, planes, &v, off, d.S, two, acc);
                direct_fix_avx2(fixes + fix_start[blk], nfix, planes, &v, off, two, acc);
            } else
#endif
            {
                sums(blocks_w + mb * d.S * 4, planes + p0 * 4, off, d.S, two, acc);
                if (split)
                    direct_fix_portable(fixes + fix_start[blk], nfix, planes + p0 * 4, off, two,
                                        acc);
            }
            store(acc, mb, mb > oc0 ? mb : oc0, mb + DIRECT_MR < oc1 ? mb + DIRECT_MR : oc1, runs,
                  n_runs, o);
        }
}

int bd_i8_conv2d_shape_ok(const bd_conv2d_shape *s) {
    return bd_conv2d_shape_valid(s) && s->group == 1 && s->winograd == 0 &&
           round_up(k_of(s), 4) <= BD_I8_GEMM_MAX_K;
}

static size_t im2col_weight_bytes(const bd_conv2d_shape *s) {
    return (size_t)(s->M * round_up(k_of(s), 4));
}

size_t bd_i8_conv2d_packed_w_bytes(const bd_conv2d_shape *s) {
    size_t a = im2col_weight_bytes(s), b = direct_weight_bytes(s);
    return (size_t)(I8C_HDR + s->M * 8) + (a > b ? a : b);
}

int bd_i8_conv2d_direct_ok(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero) {
    return bd_i8_conv2d_shape_ok(s) && direct_shape(s) &&
           direct_weights_fit(s->M * k_of(s), w, w_signed, w_zero);
}

void bd_i8_conv2d_pack_w(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero,
                         const float *x_scale, const float *w_scale, int64_t w_scales, int requant,
                         void *packed) {
    BD_KCHECK(bd_i8_conv2d_shape_ok(s) && (!x_scale || (w_scale && (w_scales == 1 || w_scales == s->M))));
    int64_t K = k_of(s), K4 = round_up(K, 4);
    unsigned char *base = packed;
    int32_t *rowsum = (int32_t *)(base + I8C_HDR);
    float *scale = (float *)(rowsum + s->M);
    uint8_t *rows = base + I8C_HDR + s->M * 8;
    const uint8_t *wu = w;
    const int8_t *ws = w;
    /* direct where VNNI or AVX2 (split) runs it, and always for tiles that requantize (only it
     * does: in plain C where neither runs) */
    bool fits = bd_i8_conv2d_direct_ok(s, w, w_signed, w_zero);
    int32_t direct = !fits ? DIRECT_NONE
                     : direct_split()                 ? DIRECT_SPLIT
                     : direct_vnni() || requant       ? DIRECT_EXACT
                                                      : DIRECT_NONE;
    BD_KCHECK(direct || !requant);
    if (direct) direct_pack(s, w, w_signed, w_zero, direct == DIRECT_SPLIT, rowsum, (int8_t *)rows);
    for (int64_t m = 0; m < s->M; m++)
        scale[m] = x_scale ? x_scale[0] * w_scale[w_scales > 1 ? m : 0] : 0.0f;
    i8c_hdr h = {I8C_MAGIC, w_zero + (w_signed ? 128 : 0), s->M, K, K4, x_scale != NULL, direct};
    memcpy(base, &h, sizeof h);
    if (direct) return;
    memset(rows, 0, (size_t)(s->M * K4));
    for (int64_t m = 0; m < s->M; m++) {
        int32_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            int32_t v = w_signed ? ws[m * K + k] : wu[m * K + k];
            sum += v - w_zero;
            rows[m * K4 + k] = (uint8_t)(w_signed ? v + 128 : v);
        }
        rowsum[m] = sum;
    }
}

/* The tile's pieces in scratch: im2col slice (K4 x P32 bytes), packed B, the GEMM's scratch. */
typedef struct i8c_scratch {
    int64_t col_bytes, packed_bytes;
} i8c_scratch;

static i8c_scratch scratch_layout(const bd_conv2d_shape *s, int64_t rows) {
    int64_t K4 = round_up(k_of(s), 4), P32 = round_up(rows * s->OW, 32);
    i8c_scratch l = {round_up(K4 * P32, 64),
                     round_up((int64_t)bd_i8_gemm_flipped_bytes(K4, P32), 64)};
    return l;
}

size_t bd_i8_conv2d_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile) {
    i8c_scratch l = scratch_layout(s, oh_tile);
    size_t im2col = (size_t)(64 + l.col_bytes + l.packed_bytes) +
                    bd_i8_gemm_scratch_bytes(round_up(k_of(s), 4));
    size_t direct = (size_t)direct_scratch_bytes(s, oh_tile);
    return im2col > direct ? im2col : direct;
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
    if (h.direct) {
        const int32_t *rowsum = (const int32_t *)(base + I8C_HDR);
        direct_out o = {rowsum,       0,    h.scaled ? (const float *)(rowsum + s->M) : NULL,
                        bias,         NULL, (int32_t *)y + n * s->M * s->OH * s->OW,
                        s->OH * s->OW};
        direct_tile(s, base, h.direct, (const uint8_t *)x + n * s->C * s->H * s->W, x_signed,
                    x_zero, &o, oc0, oc1, oh0, oh1, scratch);
        return;
    }
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

void bd_i8_conv2d_tile_requant(const bd_conv2d_shape *s, const void *x, int x_signed,
                               int32_t x_zero, const void *wpacked, const float *bias,
                               const bd_i8_requant *rq, void *y, int64_t n, int64_t oc0,
                               int64_t oc1, int64_t oh0, int64_t oh1, void *scratch) {
    const unsigned char *base = wpacked;
    i8c_hdr h;
    memcpy(&h, base, sizeof h);
    BD_KCHECK(h.magic == I8C_MAGIC && h.M == s->M && h.K == k_of(s) && h.direct && h.scaled && rq &&
              rq->scale > 0 && 0 <= n && n < s->N && 0 <= oc0 && oc0 <= oc1 && oc1 <= s->M &&
              0 <= oh0 && oh0 <= oh1 && oh1 <= s->OH);
    if (oc0 == oc1 || oh0 == oh1) return;
    const int32_t *rowsum = (const int32_t *)(base + I8C_HDR);
    direct_out o = {rowsum,       0,  (const float *)(rowsum + s->M),
                    bias,         rq, (uint8_t *)y + n * s->M * s->OH * s->OW,
                    s->OH * s->OW};
    direct_tile(s, base, h.direct, (const uint8_t *)x + n * s->C * s->H * s->W, x_signed, x_zero,
                &o, oc0, oc1, oh0, oh1, scratch);
}

/* ---- the quantized residual Add -------------------------------------------------------------
 *
 * A QDQ ResNet adds each block's 8-bit output to its 8-bit shortcut through two
 * DequantizeLinear, the Add and a QuantizeLinear; as a nest of its own that pass read both
 * tensors back from the caches (2.4% of int8 ResNet-18's time). Here it follows the tile's
 * requantized stores over the same bytes, while they are in cache. */

/* y1 = y[i] (int8 when y_signed) and r[i] to their residual sum, requantized, in y[i]. */
static void residual_run_portable(uint8_t *y, const uint8_t *r, int64_t n, int y_signed,
                                  const bd_i8_residual *ra) {
    for (int64_t i = 0; i < n; i++) {
        float a = ((float)(y_signed ? (int8_t)y[i] : y[i]) - ra->y_zero) * ra->y_scale;
        float b = ((float)(ra->r_signed ? (int8_t)r[i] : r[i]) - ra->r_zero) * ra->r_scale;
        y[i] = (uint8_t)requant_portable(a + b, &ra->out);
    }
}

#if BD_KERNELS_X86
/* residual_run_portable 8 bytes at a time, the rest in plain C; the same results bit for bit, by
 * other steps where they are exact:
 * - a byte b in float is the float of bits 0x4B000000 | b, 2^23 + b, less 2^23 (folded into
 *   the zero point, 2^23 + zero exact too): two OR in place of conversions;
 * - a signed byte is read as its unsigned self less 128 (b ^ 0x80 is b + 128 as uint8, the zero
 *   point taking the 128), and a signed result stored as its unsigned self plus 128;
 * - the rounding and saturation by vcvtps2dq and the packs (requant_portable). */
static __attribute__((target("avx2"))) void residual_run_avx2(uint8_t *y, const uint8_t *r,
                                                              int64_t n, int y_signed,
                                                              const bd_i8_residual *ra) {
    const int r_signed = ra->r_signed, out_signed = ra->out.out_signed;
    const __m128i yflip = _mm_set1_epi8(y_signed ? (char)0x80 : 0);
    const __m128i rflip = _mm_set1_epi8(r_signed ? (char)0x80 : 0);
    const __m128i oflip = _mm_set1_epi8(out_signed ? (char)0x80 : 0);
    const __m256i bits = _mm256_set1_epi32(0x4B000000);
    const __m256 ys = _mm256_set1_ps(ra->y_scale), rs = _mm256_set1_ps(ra->r_scale);
    const __m256 yz = _mm256_set1_ps(0x1p23f + ra->y_zero + (y_signed ? 128.0f : 0.0f));
    const __m256 rz = _mm256_set1_ps(0x1p23f + ra->r_zero + (r_signed ? 128.0f : 0.0f));
    float qlo, qhi;
    requant_bounds(&ra->out, &qlo, &qhi);
    const __m256 lo = _mm256_set1_ps(qlo), hi = _mm256_set1_ps(qhi);
    const __m256 qscale = _mm256_set1_ps(ra->out.scale);
    const __m256i qzero = _mm256_set1_epi32((int32_t)ra->out.zero + (out_signed ? 128 : 0));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i y8 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(y + i)), yflip);
        __m128i r8 = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(r + i)), rflip);
        __m256 yf = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cvtepu8_epi32(y8), bits));
        __m256 rf = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cvtepu8_epi32(r8), bits));
        __m256 f = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(yf, yz), ys),
                                 _mm256_mul_ps(_mm256_sub_ps(rf, rz), rs));
        f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
        __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_div_ps(f, qscale)), qzero);
        __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(y + i), _mm_xor_si128(_mm_packus_epi16(w16, w16), oflip));
    }
    residual_run_portable(y + i, r + i, n - i, y_signed, ra);
}
#endif

void bd_i8_conv2d_tile_requant_add(const bd_conv2d_shape *s, const void *x, int x_signed,
                                   int32_t x_zero, const void *wpacked, const float *bias,
                                   const bd_i8_requant *rq, const bd_i8_residual *ra,
                                   const void *r, void *y, int64_t n, int64_t oc0, int64_t oc1,
                                   int64_t oh0, int64_t oh1, void *scratch) {
    BD_KCHECK(ra && r && ra->out.scale > 0);
    bd_i8_conv2d_tile_requant(s, x, x_signed, x_zero, wpacked, bias, rq, y, n, oc0, oc1, oh0, oh1,
                              scratch);
    void (*run)(uint8_t *, const uint8_t *, int64_t, int, const bd_i8_residual *) =
        residual_run_portable;
#if BD_KERNELS_X86
    if (bd_kernels_get_isa() >= BD_KERNELS_ISA_AVX2) run = residual_run_avx2;
#endif
    int64_t plane = s->OH * s->OW, len = (oh1 - oh0) * s->OW;
    for (int64_t m = oc0; m < oc1; m++) {
        int64_t at = (n * s->M + m) * plane + oh0 * s->OW;
        run((uint8_t *)y + at, (const uint8_t *)r + at, len, rq->out_signed, ra);
    }
}
