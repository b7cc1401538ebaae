/* conv2d.c — float32 2-D convolution tiles (NCHW) on top of the GEMM driver, and the depthwise
 * path.
 *
 * A convolution group is the GEMM Y[oc, p] = W[oc, (c,kh,kw)] * X[(c,kh,kw), p] over the output
 * pixels p of the tile. The weights are the A operand, packed once per model into MR-row panels
 * per group. The B operand is never materialised whole: the driver asks for one KC x NC block at
 * a time, and im2col_pack writes that block straight into the NR-column panel layout the
 * micro-kernel reads ("implicit im2col"), with zeros where the window falls in the padding.
 * So a tile of any size needs only the GEMM's fixed scratch. A 1x1 convolution with stride 1 and
 * no padding is a plain GEMM on the input rows and skips im2col; so does any other stride-1
 * convolution with wide enough rows on kernels that can read B in place (direct_tile below).
 *
 * Depthwise convolutions (group == C == M) have one input channel per output channel, too little
 * reuse for a GEMM. Each channel's input rows for a chunk of output rows are copied once into
 * scratch, zero-padded and split by the column stride, so that every tap of every output column
 * is a contiguous (vectorisable) read; the portable row kernel then does multiply-adds. AVX2
 * and AVX-512 instead interleave 8 channels into the lanes (bd_conv8_job): no lane is lost to a
 * short row or a column stride, for the price of transposing the rows in and out. The same kernel
 * takes grouped convolutions of at most 8 input channels per group (RegNet's, ResNeXt's), whose
 * GEMMs are too small to fill a register tile, with 8 of a group's output channels in the lanes.
 */
#include <string.h>

#include "bd_kernels_internal.h"

#if BD_KERNELS_X86
#include <immintrin.h>
#endif

static int64_t imin(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t imax(int64_t a, int64_t b) {
    return a > b ? a : b;
}
static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

int bd_conv2d_shape_valid(const bd_conv2d_shape *s) {
    return s && s->N >= 1 && s->C >= 1 && s->H >= 1 && s->W >= 1 && s->M >= 1 && s->OH >= 1 &&
           s->OW >= 1 && s->KH >= 1 && s->KW >= 1 && s->group >= 1 && s->C % s->group == 0 &&
           s->M % s->group == 0 && s->stride_h >= 1 && s->stride_w >= 1 && s->dil_h >= 1 &&
           s->dil_w >= 1 && s->pad_top >= 0 && s->pad_left >= 0 &&
           (s->winograd == 0 || ((s->winograd == 2 || s->winograd == 4) && bd_wino_shape_ok(s))) &&
           (s->pre == 0 || ((s->pre == 1 || s->pre == 2) && s->KH == 1 && s->KW == 1 &&
                            s->stride_h == 1 && s->stride_w == 1 && s->pad_top == 0 &&
                            s->pad_left == 0 && s->group == 1 && s->OH == s->H && s->OW == s->W &&
                            s->winograd == 0));
}

/* Depthwise convolutions take their own path (column strides past 16 are left to the GEMM). */
static int is_depthwise(const bd_conv2d_shape *s) {
    return s->group == s->C && s->group == s->M && s->stride_w <= 16 && !s->pre;
}

/* Grouped convolutions for the kernel's 8-lane path: at most 8 input and a multiple of 8 output
 * channels per group (weights packed as BD_PACK_GROUP8). */
static int is_group8(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    const int64_t Cg = s->C / s->group, Mg = s->M / s->group;
    return kd->conv8 && s->group > 1 && Cg <= 8 && Mg % 8 == 0 && !s->winograd;
}

/* A 1x1 stride-1 unpadded convolution reads input pixel p for output pixel p. */
static int is_pointwise(const bd_conv2d_shape *s) {
    return s->KH == 1 && s->KW == 1 && s->stride_h == 1 && s->stride_w == 1 && s->pad_top == 0 &&
           s->pad_left == 0 && s->OW == s->W && s->OH <= s->H;
}

static int pointwise_in_place_ok(const bd_gemm_kernel *kd, const bd_conv2d_shape *s);

/* Few input channels on the output planes (bd_conv_planes_ok, AVX-512 and AVX2): 3-channel 3x3
 * stems, which on the GEMM pack an im2col of 27 rows and with channels in the lanes transpose every
 * output. Measured in the models against the path each took before (GEMM or 16 lanes): 15-40%
 * less time (MobileNetV2's 0.29 -> 0.20 ms, MobileNetV3's 0.18 -> 0.11, SqueezeNet's 3->64 3x3/2
 * 10%, where writing its 3 MB output is most of the time either way). */
static int is_planes(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    return kd->conv_planes && bd_conv_planes_ok(s) && !s->pre;
}

/* Pointwise convolutions of a few pixels, transposed: the GEMM's 32-column tiles span the pixels
 * and compute whole 16-column halves, 64 columns for a 7x7 image's 49 pixels and 16 for the one
 * pixel of a squeeze-and-excitation block's 1x1 convolutions. Computed as X^T W^T instead, the
 * pixels are the tile's rows (12 at a time, a last short tile costing its rows alone) and the
 * output channels its columns (W^T packed as B panels once, BD_PACK_CONV_T); the product then
 * goes through scratch into the output planes. Measured on a Zen 4 core (one tile of the whole
 * layer, warm) against the GEMM: 7x7 images 160 -> 960 and 192 -> 1152 1.16x faster, 96 -> 576
 * 1.10x, 128 -> 512 1.13x; 6x6, 5x5 and 3x3 images 1.02-1.56x; one pixel 160 -> 960 5.8x.
 * Against the 16-lane direct kernel (reductions, and expansions of 256 or more inputs): 1.0-1.04x
 * warm on most 7x7 shapes (2048 -> 512 1.16x), but GoogLeNet's 832 -> 128 and 832 -> 448 took
 * 2-4% longer in the model, so those stay direct but for one pixel (a squeeze-and-excitation
 * block's reduction, 960 -> 160 1.3x). Where the pixels fill the tiles (8x8, 4x4) or at 14x14
 * (a 196-pixel image's tiles waste 6%) the transposed product measured level to 13% slower, so
 * the rule is the waste: a fifth of the pixels or more. */
static int64_t tile_columns(int64_t P) {
    const int64_t r = P % 32;
    return P - r + (r == 0 ? 0 : r <= 16 ? 16 : 32);
}

static int transposed_shape(const bd_conv2d_shape *s) {
    const int64_t P = s->OH * s->OW;
    return is_pointwise(s) && s->group == 1 && !s->pre && !is_depthwise(s) && P <= 64 &&
           5 * tile_columns(P) >= 6 * P;
}

/* The transposed product's row stride: an odd number of 64-byte lines, so that its rows (read
 * down a column by the copy into the planes) do not all fall into a few cache sets. */
static int64_t transposed_ld(int64_t ncols) {
    return round_up(ncols, 16) | 16;
}

/* Convolutions for the kernel's direct path (8 or 16 output channels in the lanes): a multiple
 * of 8 output channels per group (weights packed as BD_PACK_CONV8) and windows up to 7x7, except
 * 1x1 expansions (more than twice the outputs of inputs), whose few input channels leave the
 * transposes of their many outputs a large share. Measured in models: those expansions
 * (MobileNetV2's) and ViT's 16x16 patch embedding stay faster as GEMMs; on AVX-512, where the
 * GEMM reads a pointwise convolution's input in place at the full width, so do pointwise
 * convolutions of more than 196 pixels (MobileNetV2's 56x56 projections 25% slower direct, its
 * 28x28 ones level, its 14x14 and 7x7 ones 7-13% faster, where the GEMM's 32-column tiles
 * fit the pixels worst) and those of more than 512 outputs (SqueezeNet's 1000-class 13x13 one
 * 10% slower direct) but for 7x7 images of 256 or more inputs (wide_few_pixels below), while
 * every other shape measured ran 1.0x to 2x faster direct
 * (bdckernels_bench). Where is_planes does not take them, also left to the GEMM on AVX-512:
 * windows of at most 36 products per output
 * (3-channel 3x3 stems) at stride 1 or with at least 48 outputs, where the transposing store of
 * the 16 lanes outweighs the few FMAs before it: 3->16 and 3->32 3x3 1.5-1.7x faster as GEMMs,
 * SqueezeNet's 3->64 3x3/2 1.3x, 3->48 3x3/2 1.25x; MobileNetV2's 3->32 3x3/2 measured level
 * alone and 1.15x slower in the model, so it stays; 3-channel 7x7 stems (147 products) run
 * 1.15x faster direct. On AVX2 too pointwise convolutions of more than 196 pixels stay off the
 * 8-lane kernel, since the 6x16 tile stores without per-row dispatch (a Zen 3 core: RegNetY's
 * 32 -> 48 at 112x112 0.578 -> 0.512 ms, 104 -> 208 and 104 -> 104 at 28x28 1.09-1.11x,
 * ResNet-50's 512 -> 128 at 28x28 1.05x; at 14x14, 384 -> 64 was 7% slower as a GEMM). */
static int conv8d_shape(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    const int64_t Cg = s->C / s->group, Mg = s->M / s->group;
    const int few_products = kd->conv8d_lanes == 16 && s->KH * s->KW > 1 &&
                             Cg * s->KH * s->KW <= 36 && (s->stride_h == 1 || Mg >= 48);
    /* a 7x7 image's 49 pixels fill 64 GEMM columns, and 256 or more inputs make the 16 lanes'
     * transposes small: the 320 -> 1280 heads of MobileNetV2 and EfficientNet-B0 took 18-22%
     * less time direct in the models (0.295 -> 0.229 ms), while MobileNetV2's 160 -> 960
     * expansions were level and EfficientNet-B0's 192 -> 1152 ones 3% slower, so those stay */
    const int wide_few_pixels = kd->conv8d_lanes == 16 && s->OH * s->OW <= 64 && Cg >= 256;
    return kd->conv8d && Mg % 8 == 0 && s->KH * s->KW <= 49 && !s->winograd &&
           (!s->pre || kd->conv8d_lanes == 16) && !is_depthwise(s) &&
           !is_planes(kd, s) &&
           !is_group8(kd, s) && !few_products &&
           !(is_pointwise(s) && !wide_few_pixels &&
             (Mg > 2 * Cg || (kd->conv8d_lanes == 16 && (s->OH * s->OW > 196 || Mg > 512)) ||
              (kd->conv8d_lanes == 8 && s->OH * s->OW > 196)));
}

/* The transposed pointwise product (transposed_shape) where the kernel copies transposed and
 * the GEMM would take the shape, or of one pixel on AVX-512; bf16 (the user's opt-in) keeps its
 * own paths. On AVX2 a one-pixel reduction stays on the 8-lane direct kernel: MobileNetV3's
 * 960 -> 240 and 672 -> 168 took 0.073 and 0.075 ms transposed against 0.061 and 0.066 direct
 * (a Zen 3 core, in the model), while its expansions, GEMMs before, ran 0.104 -> 0.070 ms. Deep
 * reductions to 256 or more outputs are faster transposed there too (ResNet-50's 2048 -> 512 at
 * 7x7 1.52 -> 1.18 ms; with fewer inputs the gain alone was 1.02-1.05x, and RegNetY's 440 -> 440
 * layers measured slower in the model; 960 -> 160 0.98x, 1024 -> 128 0.95x alone). */
static int is_pointwise_transposed(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    const int64_t P = s->OH * s->OW;
    return kd->transpose && transposed_shape(s) &&
           !(s->bf16 && bd_kernels_cpu_has_bf16()) &&
           ((P == 1 && kd->conv8d_lanes == 16) ||
            (P > 1 && kd->conv8d_lanes == 8 && s->M / s->group >= 256 &&
             s->C / s->group >= 1024) ||
            !conv8d_shape(kd, s));
}

static int is_conv8d(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    return conv8d_shape(kd, s) && !is_pointwise_transposed(kd, s);
}

/* The direct kernel in bfloat16 (--precision bf16): the 16-lane kernel where the CPU has
 * AVX512_BF16. */
static int is_conv16d_bf16(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    return s->bf16 && is_conv8d(kd, s) && kd->conv8d_lanes == 16 && bd_kernels_cpu_has_bf16();
}

/* A pointwise convolution on the GEMM path in bfloat16 (--precision bf16, AVX512_BF16):
 * bd_bf16_gemm_rows, the weights rounded at pack time (rows of pairs), the input planes as each
 * tile packs them (through an absorbed BatchNormalization's prologue where there is one). The
 * in-place path's few outputs stay fp32. */
static int is_pointwise_bf16(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    return s->bf16 && s->group == 1 && is_pointwise(s) && !is_conv8d(kd, s) &&
           !pointwise_in_place_ok(kd, s) && bd_kernels_cpu_has_bf16();
}

/* A group's output channels in the packed weights of the direct kernel: whole blocks of its
 * lanes. */
static int64_t conv8d_mg(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    return round_up(s->M / s->group, kd->conv8d_lanes);
}

/* ---- implicit im2col ----------------------------------------------------------------------- */

typedef struct im2col_ctx {
    const bd_conv2d_shape *s;
    const float *x;     /* batch item n, first channel of the group */
    const float *x_end; /* end of the whole input tensor: reads stay below it */
    int64_t oh0;        /* first output row of the tile (column 0 of B) */
} im2col_ctx;

/* A run of B columns inside one panel that lie on one output row. */
typedef struct im2col_seg {
    int64_t ih, iw; /* input position of its first column for kh = kw = 0 */
    int pos, len;   /* position in the panel row, length */
} im2col_seg;

/* Splits the panel of columns [j, j+cols) into runs on one output row each; returns how many. */
static inline __attribute__((always_inline)) int im2col_segments(const im2col_ctx *ctx, int64_t j,
                                                                 int cols, im2col_seg *seg) {
    const bd_conv2d_shape *s = ctx->s;
    int nseg = 0;
    for (int pos = 0; pos < cols;) {
        int64_t pix = j + pos;
        int64_t oh = ctx->oh0 + pix / s->OW, ow = pix % s->OW;
        int len = (int)imin(cols - pos, s->OW - ow);
        seg[nseg].ih = oh * s->stride_h - s->pad_top;
        seg[nseg].iw = ow * s->stride_w - s->pad_left;
        seg[nseg].pos = pos;
        seg[nseg].len = len;
        nseg++;
        pos += len;
    }
    return nseg;
}

/* dst[0:nr) = src[0:nr) / = 0, with nr a constant for the common widths (vector moves). */
static inline __attribute__((always_inline)) void copy_window(float *dst, const float *src,
                                                              int nr) {
    if (nr == 16)
        memcpy(dst, src, 16 * sizeof(float));
    else if (nr == 32)
        memcpy(dst, src, 32 * sizeof(float));
    else
        memcpy(dst, src, (size_t)nr * sizeof(float));
}
static inline __attribute__((always_inline)) void zero_window(float *dst, int nr) {
    if (nr == 16)
        memset(dst, 0, 16 * sizeof(float));
    else if (nr == 32)
        memset(dst, 0, 32 * sizeof(float));
    else
        memset(dst, 0, (size_t)nr * sizeof(float));
}

/* Rows [k0, k0+kc) = (c, kh, kw) and columns [j0, j0+nc) = output pixels of B, as NR panels.
 *
 * A panel row is a few runs (segments) of consecutive output columns, one per output row it
 * touches. With column stride 1 a segment is a contiguous piece of an input row, zero where it
 * hangs into the padding. Each segment is written as one fixed-size window copy of NR floats
 * (vector moves) that may run past the segment's end: whatever it overwrites there (the next
 * segment, the next row of the panel, the next panel, or NR floats of slack after the block,
 * which the scratch layout provides) is written again later. Only the padding columns of border
 * segments are then fixed up one by one. Windows that would read past the input tensor, and
 * other column strides, take an exact loop. */
static inline __attribute__((always_inline)) void
im2col_body(const void *vctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float *dst) {
    const im2col_ctx *ctx = vctx;
    const bd_conv2d_shape *s = ctx->s;
    const int64_t H = s->H, W = s->W, KH = s->KH, KW = s->KW;
    const int64_t sw = s->stride_w, dh = s->dil_h, dw = s->dil_w;
    im2col_seg seg[64];
    BD_KCHECK(nr <= 64);
    for (int64_t p0 = 0; p0 < nc; p0 += nr, dst += kc * nr) {
        int cols = (int)imin(nr, nc - p0);
        int nseg = im2col_segments(ctx, j0 + p0, cols, seg);
        int64_t c = k0 / (KH * KW), kh = (k0 / KW) % KH, kw = k0 % KW;
        for (int64_t k = 0; k < kc; k++) {
            float *d = dst + k * nr;
            const float *xc = ctx->x + c * H * W;
            for (int i = 0; i < nseg; i++) {
                float *ds = d + seg[i].pos;
                const int len = seg[i].len;
                const int64_t ih = seg[i].ih + kh * dh, iw0 = seg[i].iw + kw * dw;
                if (ih < 0 || ih >= H) {
                    zero_window(ds, nr);
                    continue;
                }
                const float *row = xc + ih * W;
                if (sw == 1) {
                    int lo = (int)imin(len, imax(0, -iw0)), hi = (int)imax(lo, imin(len, W - iw0));
                    if (lo == hi) {
                        zero_window(ds, nr);
                        continue;
                    }
                    const float *src = row + iw0 + lo;
                    if (ctx->x_end - src >= nr) {
                        copy_window(ds + lo, src, nr);
                    } else {
                        for (int t = lo; t < hi; t++)
                            ds[t] = src[t - lo];
                    }
                    for (int t = 0; t < lo; t++)
                        ds[t] = 0.0f;
                    for (int t = hi; t < len; t++)
                        ds[t] = 0.0f;
                } else if (iw0 >= 0 && iw0 + (len - 1) * sw < W) { /* inside the row */
                    const float *src = row + iw0;
                    if (sw == 2) { /* constant stride: compilers vectorise it */
                        for (int t = 0; t < len; t++)
                            ds[t] = src[2 * t];
                    } else {
                        for (int t = 0; t < len; t++)
                            ds[t] = src[t * sw];
                    }
                } else {
                    for (int t = 0; t < len; t++) {
                        int64_t iw = iw0 + t * sw;
                        ds[t] = iw >= 0 && iw < W ? row[iw] : 0.0f;
                    }
                }
            }
            for (int t = cols; t < nr; t++)
                d[t] = 0.0f;
            if (++kw == KW) {
                kw = 0;
                if (++kh == KH) {
                    kh = 0;
                    c++;
                }
            }
        }
    }
}

#if BD_KERNELS_X86
/* Column stride 1, vector versions: each panel row is assembled in registers from one masked
 * load per segment and vector register (lanes outside the segment's valid columns are masked
 * off, and masked lanes are never read), then stored once. The address of lane 0 may lie
 * outside the input row, so it is computed as an integer. */
__attribute__((target("avx512f"))) static void im2col_pack_s1_avx512(const im2col_ctx *ctx,
                                                                     int64_t k0, int64_t kc,
                                                                     int64_t j0, int64_t nc,
                                                                     float *dst) {
    const bd_conv2d_shape *s = ctx->s;
    const int64_t H = s->H, W = s->W, KH = s->KH, KW = s->KW, dh = s->dil_h, dw = s->dil_w;
    im2col_seg seg[32];
    for (int64_t p0 = 0; p0 < nc; p0 += 32, dst += kc * 32) {
        int nseg = im2col_segments(ctx, j0 + p0, (int)imin(32, nc - p0), seg);
        int64_t c = k0 / (KH * KW), kh = (k0 / KW) % KH, kw = k0 % KW;
        for (int64_t k = 0; k < kc; k++) {
            const float *xc = ctx->x + c * H * W;
            __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
            for (int i = 0; i < nseg; i++) {
                const int64_t ih = seg[i].ih + kh * dh, iw0 = seg[i].iw + kw * dw;
                if (ih < 0 || ih >= H) continue;
                const int len = seg[i].len, pos = seg[i].pos;
                int lo = (int)imin(len, imax(0, -iw0)), hi = (int)imax(lo, imin(len, W - iw0));
                if (lo == hi) continue;
                /* lanes [pos+lo, pos+hi) of the 32 */
                uint32_t bits = (pos + hi >= 32 ? 0xffffffffu : (1u << (pos + hi)) - 1u) &
                                ~((1u << (pos + lo)) - 1u);
                uintptr_t lane0 = (uintptr_t)(xc + ih * W) + (uintptr_t)((iw0 - pos) * 4);
                if (bits & 0xffffu)
                    v0 = _mm512_mask_loadu_ps(v0, (__mmask16)(bits & 0xffffu), (const void *)lane0);
                if (bits >> 16)
                    v1 = _mm512_mask_loadu_ps(v1, (__mmask16)(bits >> 16),
                                              (const void *)(lane0 + 64));
            }
            _mm512_storeu_ps(dst + k * 32, v0);
            _mm512_storeu_ps(dst + k * 32 + 16, v1);
            if (++kw == KW) {
                kw = 0;
                if (++kh == KH) {
                    kh = 0;
                    c++;
                }
            }
        }
    }
}

/* Sixteen vectors r[t] (t a pixel, lanes its 16 consecutive taps) turned into r[g] (lanes the
 * pixels, tap g): unpacks, then 64-bit and 128-bit shuffles. */
__attribute__((target("avx512f"))) static inline void transpose16_avx512(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + e], 128-bit lane L: element 4L + e of rows 4i .. 4i + 3 */
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int e = 0; e < 4; e++) {
        __m512 a = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x88), b = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xDD);
        __m512 c = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x88),
               d = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xDD);
        t[e] = _mm512_shuffle_f32x4(a, c, 0x88);
        t[8 + e] = _mm512_shuffle_f32x4(a, c, 0xDD);
        t[4 + e] = _mm512_shuffle_f32x4(b, d, 0x88);
        t[12 + e] = _mm512_shuffle_f32x4(b, d, 0xDD);
    }
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

/* Column strides of 3 or more without column dilation (ViT's 16x16/16 patches): a panel row
 * gathers one float every stride, one element per cycle at best. Instead, for up to 16
 * consecutive kw of one (c, kh), each pixel's taps are one contiguous masked load (lanes outside
 * the input masked off, never read), and a 16x16 transpose makes them panel rows. ViT's patch
 * embedding packs in a fraction of the time. */
__attribute__((target("avx512f"))) static void im2col_pack_wide_avx512(const im2col_ctx *ctx,
                                                                       int64_t k0, int64_t kc,
                                                                       int64_t j0, int64_t nc,
                                                                       float *dst) {
    const bd_conv2d_shape *s = ctx->s;
    const int64_t H = s->H, W = s->W, KH = s->KH, KW = s->KW, dh = s->dil_h;
    im2col_seg seg[32];
    int64_t ih0[32], iw0[32]; /* per panel column: input position of tap (0, 0) */
    for (int64_t p0 = 0; p0 < nc; p0 += 32, dst += kc * 32) {
        const int cols = (int)imin(32, nc - p0);
        const int nseg = im2col_segments(ctx, j0 + p0, cols, seg);
        for (int i = 0; i < nseg; i++)
            for (int t = seg[i].pos; t < seg[i].pos + seg[i].len; t++) {
                ih0[t] = seg[i].ih;
                iw0[t] = seg[i].iw + (t - seg[i].pos) * s->stride_w;
            }
        int64_t c = k0 / (KH * KW), kh = (k0 / KW) % KH, kw = k0 % KW;
        for (int64_t k = 0; k < kc;) {
            const int g = (int)imin(16, imin(KW - kw, kc - k)); /* taps kw .. kw + g - 1 */
            const float *xc = ctx->x + c * H * W;
            for (int half = 0; half < 2; half++) {
                __m512 r[16];
                for (int i = 0; i < 16; i++) {
                    const int t = 16 * half + i;
                    r[i] = _mm512_setzero_ps();
                    if (t >= cols) continue;
                    const int64_t ih = ih0[t] + kh * dh, iw = iw0[t] + kw;
                    if (ih < 0 || ih >= H) continue;
                    const int64_t lo = imax(0, -iw), hi = imin(g, W - iw); /* taps inside */
                    if (lo >= hi) continue;
                    const __mmask16 m = (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
                    const uintptr_t lane0 = (uintptr_t)(xc + ih * W) + (uintptr_t)(iw * 4);
                    r[i] = _mm512_maskz_loadu_ps(m, (const void *)lane0);
                }
                transpose16_avx512(r);
                for (int i = 0; i < g; i++)
                    _mm512_storeu_ps(dst + (k + i) * 32 + 16 * half, r[i]);
            }
            k += g;
            if ((kw += g) == KW) {
                kw = 0;
                if (++kh == KH) {
                    kh = 0;
                    c++;
                }
            }
        }
    }
}

__attribute__((target("avx2,fma"))) static void im2col_pack_s1_avx2(const im2col_ctx *ctx,
                                                                    int64_t k0, int64_t kc,
                                                                    int64_t j0, int64_t nc,
                                                                    float *dst) {
    const bd_conv2d_shape *s = ctx->s;
    const int64_t H = s->H, W = s->W, KH = s->KH, KW = s->KW, dh = s->dil_h, dw = s->dil_w;
    const __m256i idx0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i idx1 = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
    im2col_seg seg[16];
    for (int64_t p0 = 0; p0 < nc; p0 += 16, dst += kc * 16) {
        int nseg = im2col_segments(ctx, j0 + p0, (int)imin(16, nc - p0), seg);
        int64_t c = k0 / (KH * KW), kh = (k0 / KW) % KH, kw = k0 % KW;
        for (int64_t k = 0; k < kc; k++) {
            const float *xc = ctx->x + c * H * W;
            __m256 v0 = _mm256_setzero_ps(), v1 = _mm256_setzero_ps();
            for (int i = 0; i < nseg; i++) {
                const int64_t ih = seg[i].ih + kh * dh, iw0 = seg[i].iw + kw * dw;
                if (ih < 0 || ih >= H) continue;
                const int len = seg[i].len, pos = seg[i].pos;
                int lo = (int)imin(len, imax(0, -iw0)), hi = (int)imax(lo, imin(len, W - iw0));
                if (lo == hi) continue;
                /* lanes [pos+lo, pos+hi) of the 16: lo-1 < lane < hi */
                const __m256i a = _mm256_set1_epi32(pos + lo - 1), b = _mm256_set1_epi32(pos + hi);
                uintptr_t lane0 = (uintptr_t)(xc + ih * W) + (uintptr_t)((iw0 - pos) * 4);
                if (pos + lo < 8) {
                    __m256i m =
                        _mm256_and_si256(_mm256_cmpgt_epi32(idx0, a), _mm256_cmpgt_epi32(b, idx0));
                    v0 = _mm256_or_ps(v0, _mm256_maskload_ps((const float *)lane0, m));
                }
                if (pos + hi > 8) {
                    __m256i m =
                        _mm256_and_si256(_mm256_cmpgt_epi32(idx1, a), _mm256_cmpgt_epi32(b, idx1));
                    v1 = _mm256_or_ps(v1, _mm256_maskload_ps((const float *)(lane0 + 32), m));
                }
            }
            _mm256_storeu_ps(dst + k * 16, v0);
            _mm256_storeu_ps(dst + k * 16 + 8, v1);
            if (++kw == KW) {
                kw = 0;
                if (++kh == KH) {
                    kh = 0;
                    c++;
                }
            }
        }
    }
}
#endif

/* The same code compiled for each instruction set, so that the window copies become wide
 * vector moves; column stride 1 with the register tile of that set takes the masked-load
 * versions. */
static void im2col_pack(const void *vctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr,
                        float *dst) {
    im2col_body(vctx, k0, kc, j0, nc, nr, dst);
}
#if BD_KERNELS_X86
__attribute__((target("avx2,fma"))) static void im2col_pack_avx2(const void *vctx, int64_t k0,
                                                                 int64_t kc, int64_t j0, int64_t nc,
                                                                 int nr, float *dst) {
    const im2col_ctx *ctx = vctx;
    if (nr == 16 && ctx->s->stride_w == 1)
        im2col_pack_s1_avx2(ctx, k0, kc, j0, nc, dst);
    else
        im2col_body(vctx, k0, kc, j0, nc, nr, dst);
}
__attribute__((target("avx512f,avx2,fma"))) static void im2col_pack_avx512(const void *vctx,
                                                                           int64_t k0, int64_t kc,
                                                                           int64_t j0, int64_t nc,
                                                                           int nr, float *dst) {
    const im2col_ctx *ctx = vctx;
    if (nr == 32 && ctx->s->stride_w == 1)
        im2col_pack_s1_avx512(ctx, k0, kc, j0, nc, dst);
    else if (nr == 32 && ctx->s->stride_w >= 3 && ctx->s->dil_w == 1)
        im2col_pack_wide_avx512(ctx, k0, kc, j0, nc, dst);
    else
        im2col_body(vctx, k0, kc, j0, nc, nr, dst);
}
#endif

static bd_pack_b_fn im2col_for(const bd_gemm_kernel *kd) {
#if BD_KERNELS_X86
    if (kd->isa == BD_KERNELS_ISA_AVX512) return im2col_pack_avx512;
    if (kd->isa == BD_KERNELS_ISA_AVX2) return im2col_pack_avx2;
#endif
    (void)kd;
    return im2col_pack;
}

/* ---- depthwise ----------------------------------------------------------------------------- */

enum { DW_CHUNK = 16 }; /* output rows prepared at a time */

typedef struct dw_geom {
    int64_t row_len, rows_in, taps;
} dw_geom;

static dw_geom dw_geometry(const bd_conv2d_shape *s, int64_t oh_rows) {
    dw_geom g;
    /* vector kernels read whole blocks of 8 columns (up to 16 for wider ones) at every tap */
    g.row_len = round_up(s->OW, 16) + (s->KW - 1) * s->dil_w / s->stride_w + 8;
    g.rows_in = (oh_rows - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
    g.taps = s->KH * s->KW;
    return g;
}

/* Scratch: 64-byte alignment slack, the tap offsets (int64), the prepared rows. */
static size_t dw_scratch_floats(const bd_conv2d_shape *s) {
    dw_geom g = dw_geometry(s, DW_CHUNK);
    int64_t rows = 16 + round_up(2 * g.taps, 16) + g.rows_in * s->stride_w * g.row_len;
    return (size_t)imax(rows, 16 + bd_conv8_scratch_floats(s));
}

void bd_f32_dwconv_portable(const bd_dw_job *j) {
    const int64_t taps = j->KH * j->KW;
    for (int64_t o = 0; o < j->nrows_out; o++) {
        const float *base = j->rows + o * j->sh * j->sw * j->row_len;
        float *out = j->out + o * j->OW;
        for (int64_t ow = 0; ow < j->OW; ow++)
            out[ow] = j->bias;
        for (int64_t t = 0; t < taps; t++) {
            const float *p = base + j->tap_off[t];
            const float wt = j->w[t];
            for (int64_t ow = 0; ow < j->OW; ow++)
                out[ow] += wt * p[ow];
        }
        bd_act_apply_row(out, j->OW, j->act, j->act_min, j->act_max);
    }
}

/* Phase q of a prepared row: column j holds input column j*sw + first, valid for j in
 * [jlo, jhi) (zero elsewhere). */
typedef struct dw_phase {
    int64_t first, jlo, jhi;
} dw_phase;

/* Output channels [oc0, oc1) on the 8-lane kernel, 8 at a time from a multiple of 8 (a block
 * that starts or ends inside the range computes all 8 and stores its part). Depthwise
 * (BD_PACK_DW): lane c reads input plane b0 + c and its raw taps; grouped (BD_PACK_GROUP8, a
 * multiple of 8 outputs per group, so blocks never span groups): every lane reads the group's Cg
 * planes, and the block's packed weights. With Cg == Mg == 1 both are at the same offsets. */
static void conv8_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s, const float *x,
                       const float *w, const float *bias, float *y, int64_t n, int64_t oc0,
                       int64_t oc1, int64_t oh0, int64_t oh1, int act, float lo, float hi,
                       void *scratch) {
    const int64_t Mg = s->M / s->group, Cg = s->C / s->group, taps = s->KH * s->KW;
    const int depthwise = is_depthwise(s);
    const int64_t L = depthwise ? kd->conv8_dw_lanes : 8;
    for (int64_t b0 = oc0 / L * L; b0 < oc1; b0 += L) {
        const int64_t g = b0 / Mg, lane_lo = imax(oc0 - b0, 0), lane_hi = imin(oc1 - b0, L);
        bd_conv8_job j8 = {s,
                           x + (n * s->C + g * Cg) * s->H * s->W,
                           depthwise ? lane_hi : Cg,
                           y + (n * s->M + b0) * s->OH * s->OW,
                           lane_lo,
                           lane_hi,
                           w + b0 * taps * Cg,
                           bias ? bias + b0 : NULL,
                           oh0,
                           oh1,
                           act,
                           lo,
                           hi,
                           bd_align64(scratch)};
        kd->conv8(&j8);
    }
}

static void dw_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s, const float *x,
                    const float *w, const float *bias, float *y, int64_t n, int64_t oc0,
                    int64_t oc1, int64_t oh0, int64_t oh1, int act, float lo, float hi,
                    void *scratch) {
    const int64_t H = s->H, W = s->W, sw = s->stride_w;
    const dw_geom g0 = dw_geometry(s, DW_CHUNK);
    BD_KCHECK(scratch != NULL);
    if (kd->dw_planes && bd_dw_planes_ok(s)) {
        bd_dw_planes_job jp = {s,
                               x + (n * s->C + oc0) * H * W,
                               y + (n * s->M + oc0) * s->OH * s->OW,
                               w + oc0 * g0.taps,
                               bias ? bias + oc0 : NULL,
                               oc1 - oc0,
                               oh0,
                               oh1,
                               act,
                               lo,
                               hi};
        kd->dw_planes(&jp);
        return;
    }
    if (kd->conv8) {
        conv8_tile(kd, s, x, w, bias, y, n, oc0, oc1, oh0, oh1, act, lo, hi, scratch);
        return;
    }
    BD_KCHECK(kd->dw != NULL); /* the portable row kernel */
    uintptr_t u = (uintptr_t)bd_align64(scratch);
    int64_t *tap_off = (int64_t *)(void *)u;
    float *rows = (float *)(void *)u + round_up(2 * g0.taps, 16);
    for (int64_t kh = 0; kh < s->KH; kh++)
        for (int64_t kw = 0; kw < s->KW; kw++) {
            int64_t cw = kw * s->dil_w;
            tap_off[kh * s->KW + kw] = (kh * s->dil_h * sw + cw % sw) * g0.row_len + cw / sw;
        }
    bd_dw_job job;
    job.rows = rows;
    job.row_len = g0.row_len;
    job.OW = s->OW;
    job.KH = s->KH;
    job.KW = s->KW;
    job.sh = s->stride_h;
    job.sw = sw;
    job.dh = s->dil_h;
    job.dw = s->dil_w;
    job.tap_off = tap_off;
    job.act = act;
    job.act_min = lo;
    job.act_max = hi;
    dw_phase ph[16];
    BD_KCHECK(sw <= 16);
    for (int64_t q = 0; q < sw; q++) {
        int64_t first = q - s->pad_left;
        int64_t jlo = first >= 0 ? 0 : (-first + sw - 1) / sw;
        int64_t jhi = W - first <= 0 ? 0 : (W - first + sw - 1) / sw;
        ph[q].first = first;
        ph[q].jlo = imin(jlo, g0.row_len);
        ph[q].jhi = imax(ph[q].jlo, imin(jhi, g0.row_len));
    }
    for (int64_t c = oc0; c < oc1; c++) {
        const float *xc = x + (n * s->C + c) * H * W;
        job.w = w + c * g0.taps;
        job.bias = bias ? bias[c] : 0.0f;
        for (int64_t r0 = oh0; r0 < oh1; r0 += DW_CHUNK) {
            int64_t nr_out = imin(DW_CHUNK, oh1 - r0);
            dw_geom g = dw_geometry(s, nr_out);
            int64_t ih0 = r0 * s->stride_h - s->pad_top;
            /* prepare input rows ih0 .. ih0 + rows_in - 1 */
            for (int64_t r = 0; r < g.rows_in; r++) {
                int64_t ih = ih0 + r;
                float *d = rows + r * sw * g0.row_len;
                if (ih < 0 || ih >= H) {
                    memset(d, 0, (size_t)(sw * g0.row_len) * sizeof(float));
                    continue;
                }
                const float *src = xc + ih * W;
                for (int64_t q = 0; q < sw; q++, d += g0.row_len) {
                    const int64_t jlo = ph[q].jlo, jhi = ph[q].jhi, first = ph[q].first;
                    memset(d, 0, (size_t)jlo * sizeof(float));
                    if (sw == 1) {
                        memcpy(d + jlo, src + jlo + first, (size_t)(jhi - jlo) * sizeof(float));
                    } else if (sw == 2) { /* constant stride: compilers vectorise it */
                        for (int64_t jj = jlo; jj < jhi; jj++)
                            d[jj] = src[2 * jj + first];
                    } else {
                        for (int64_t jj = jlo; jj < jhi; jj++)
                            d[jj] = src[jj * sw + first];
                    }
                    memset(d + jhi, 0, (size_t)(g0.row_len - jhi) * sizeof(float));
                }
            }
            job.nrows_out = nr_out;
            job.out = y + ((n * s->M + c) * s->OH + r0) * s->OW;
            kd->dw(&job);
        }
    }
}

/* ---- direct stride-1 convolution (no im2col) ------------------------------------------------ */

/* With unit strides, lay the output pixels of a tile out on rows of the padded input width
 * Wp = OW + (KW-1)*dw: pixel (r, ow) is column j = r*Wp + ow. Then row k = (c, kh, kw) of the B
 * operand is one contiguous run of a zero-padded copy Xp of the tile's input rows, starting at
 * c*CS + kh*dh*Wp + kw*dw. The micro-kernel reads those runs in place through a table of row
 * offsets, so the block copies its input once instead of KH*KW times (im2col). The Wp - OW
 * columns per row that are not pixels are computed but never stored (the kernel stores each
 * 32-column panel as runs of consecutive pixels), which is why this path is taken only when
 * they are at most an eighth of the row. */
typedef struct direct_geom {
    int64_t Wp, rows_in, cs, offs_floats, xp_floats;
} direct_geom;

static direct_geom direct_geometry(const bd_conv2d_shape *s, int64_t nrows) {
    direct_geom g;
    g.Wp = s->OW + (s->KW - 1) * s->dil_w;
    g.rows_in = nrows + (s->KH - 1) * s->dil_h;
    g.cs = g.rows_in * g.Wp;
    g.offs_floats = round_up(2 * (s->C / s->group) * s->KH * s->KW, 16);
    g.xp_floats = (s->C / s->group) * g.cs + 64; /* the last panel reads up to 31 floats past */
    return g;
}

static int direct_ok(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    int64_t waste = (s->KW - 1) * s->dil_w;
    return kd->ukr_direct && kd->nr == 32 && s->stride_h == 1 && s->stride_w == 1 &&
           !is_pointwise(s) && s->OW >= 16 && waste * 8 <= s->OW;
}

static size_t direct_scratch_floats(const bd_conv2d_shape *s, int64_t nrows) {
    direct_geom g = direct_geometry(s, nrows);
    return (size_t)(16 + g.offs_floats + g.xp_floats);
}

/* One NR-column panel of B read in place (row k at b + boff[k]) times output channels
 * [m_lo, m_hi) of the packed A (m_lo a multiple of MR), the depth Kd in equal chunks of at most
 * the kernel's kc, stored through `out`. */
static void direct_panel(const bd_gemm_kernel *kd, int64_t Kd, const float *apacked,
                         const float *b, const int64_t *boff, float *c, int64_t ldc, int64_t m_lo,
                         int64_t m_hi, const float *bias_m, const bd_ukr_out *out, int act,
                         float act_min, float act_max) {
    const int64_t mr = kd->mr, nk = (Kd + kd->kc - 1) / kd->kc, kc_even = (Kd + nk - 1) / nk;
    for (int64_t pc = 0; pc < Kd; pc += kc_even) {
        const int64_t kc = imin(kc_even, Kd - pc);
        const int first = pc == 0, last = pc + kc >= Kd;
        for (int64_t i0 = m_lo; i0 < m_hi; i0 += mr) {
            bd_ukr_epi ep = {NULL, first && bias_m ? bias_m + (i0 - m_lo) : NULL, !first,
                             last ? act : BD_ACT_NONE, act_min, act_max, kd->nr, 1, 0, 0};
            kd->ukr_direct(kc, apacked + (i0 / mr) * Kd * mr + pc * mr, b, boff + pc,
                           c + (i0 - m_lo) * ldc, ldc, (int)imin(mr, m_hi - i0), out, &ep);
        }
    }
}

/* Output channels [m_lo, m_hi) of group g (m_lo a multiple of MR), output rows [oh0, oh1). */
static void direct_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s, const float *xg,
                        const float *apacked, const float *bias_m, float *c, int64_t m_lo,
                        int64_t m_hi, int64_t oh0, int64_t oh1, int act, float act_min,
                        float act_max, void *scratch) {
    const int64_t Cg = s->C / s->group, KH = s->KH, KW = s->KW, Kd = Cg * KH * KW;
    const int64_t H = s->H, W = s->W, OW = s->OW, nrows = oh1 - oh0;
    const direct_geom g = direct_geometry(s, nrows);
    uintptr_t u = (uintptr_t)bd_align64(scratch);
    int64_t *boff = (int64_t *)u;
    float *xp = (float *)u + g.offs_floats;
    /* the zero-padded input rows, channel by channel */
    const int64_t ih0 = oh0 - s->pad_top, left = s->pad_left;
    const int64_t cols_lo = imin(imax(left, 0), g.Wp);
    const int64_t cols_hi = imax(cols_lo, imin(left + W, g.Wp));
    for (int64_t ch = 0; ch < Cg; ch++) {
        for (int64_t r = 0; r < g.rows_in; r++) {
            float *d = xp + ch * g.cs + r * g.Wp;
            int64_t ih = ih0 + r;
            if (ih < 0 || ih >= H) {
                memset(d, 0, (size_t)g.Wp * sizeof(float));
                continue;
            }
            memset(d, 0, (size_t)cols_lo * sizeof(float));
            memcpy(d + cols_lo, xg + (ch * H + ih) * W + (cols_lo - left),
                   (size_t)(cols_hi - cols_lo) * sizeof(float));
            memset(d + cols_hi, 0, (size_t)(g.Wp - cols_hi) * sizeof(float));
        }
    }
    memset(xp + Cg * g.cs, 0, 64 * sizeof(float));
    for (int64_t k = 0; k < Kd; k++) {
        int64_t ch = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
        boff[k] = ch * g.cs + kh * s->dil_h * g.Wp + kw * s->dil_w;
    }
    const int64_t ldc = s->OH * OW, total = (nrows - 1) * g.Wp + OW;
    for (int64_t j0 = 0; j0 < total; j0 += 32) {
        bd_ukr_out out = {0, {0}, {0}};
        for (int64_t r = j0 / g.Wp; r < nrows && r * g.Wp < j0 + 32; r++) {
            int64_t a = imax(r * g.Wp, j0) - j0, b = imin(r * g.Wp + OW, j0 + 32) - j0;
            if (a >= b) continue;
            BD_KCHECK(out.nseg < BD_UKR_MAX_SEGS);
            out.mask[out.nseg] = (b >= 32 ? 0xFFFFFFFFu : (1u << b) - 1u) & ~((1u << a) - 1u);
            out.coff[out.nseg++] = j0 - r * (g.Wp - OW); /* column L -> pixel j0 + L - r*(Wp-OW) */
        }
        direct_panel(kd, Kd, apacked, xp + j0, boff, c, ldc, m_lo, m_hi, bias_m, &out, act,
                     act_min, act_max);
    }
}

/* Pointwise convolutions of few outputs per group: the input read in place (row k of each
 * NR-pixel panel is NR floats of channel k's plane), not packed as the GEMM's B. With
 * few outputs the packing copied as many bytes as the FMAs consumed: in the models MobileNetV2's
 * 32 -> 16 at 112x112 0.144 -> 0.108 ms, MobileNetV3's 16 -> 16 at 112x112 0.113 -> 0.089,
 * SqueezeNet's 64 -> 16 at 55x55 0.070 -> 0.056. The many planes a panel reads at once defeat
 * the hardware prefetchers, so pointwise_tile prefetches the panel POINTWISE_AHEAD ahead: with
 * that, reductions to at most 64 outputs gain too (bdckernels_bench on a Zen 5 core, warm / with
 * the input evicted: 144 -> 24 at 56x56 0.135 / 0.242 -> 0.104 / 0.199 ms, 256 -> 64 0.505 ->
 * 0.454 ms warm), where without it 144 -> 24 had taken 1.17x as long as the GEMM. Expansions
 * beyond 16 outputs stay GEMMs (32 -> 64, 24 -> 144: level or slower). On AVX2 (16-pixel
 * panels) they replace the 8-lane direct kernel over more than 196 pixels (conv8d_shape; a Zen 3
 * core, in the model: MobileNetV2's 144 -> 24 and 96 -> 24 at 56x56 0.37 -> 0.33 and 0.24 -> 0.20
 * ms, its 192 -> 32 at 28x28 7% faster; its 384 -> 64 at 14x14 10-15% slower, so those stay) and
 * the GEMM where the outputs are not whole blocks of 8 (ShuffleNetV2's 58 -> 58 at 28x28 about
 * 20% faster). */
static int pointwise_in_place_ok(const bd_gemm_kernel *kd, const bd_conv2d_shape *s) {
    const int64_t Mg = s->M / s->group, Cg = s->C / s->group;
    return kd->ukr_direct && is_pointwise(s) && !s->pre &&
           ((Mg <= 16 && Cg <= 64) || (Mg <= 64 && Cg >= Mg));
}

/* pointwise_tile's scratch: two int64 offsets per input channel, then a 32-pixel panel. */
static size_t pointwise_scratch_floats(const bd_conv2d_shape *s) {
    const int64_t Cg = s->C / s->group;
    return (size_t)(16 + 4 * Cg + 16 + 32 * Cg);
}

/* Output channels [m_lo, m_hi) of group g (m_lo a multiple of MR), pixels [p0, p1), in panels
 * of the kernel's NR pixels (32 on AVX-512, 16 on AVX2). */
enum { POINTWISE_AHEAD = 4 };
static void pointwise_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s, const float *xg,
                           const float *apacked, const float *bias_m, float *c, int64_t m_lo,
                           int64_t m_hi, int64_t p0, int64_t p1, int act, float act_min,
                           float act_max, void *scratch) {
    const int64_t Kd = s->C / s->group, HW = s->H * s->W, P = p1 - p0, nr = kd->nr;
    const uint32_t full = nr == 32 ? 0xFFFFFFFFu : (1u << nr) - 1u;
    uintptr_t u = (uintptr_t)bd_align64(scratch);
    int64_t *boff = (int64_t *)u, *toff = boff + Kd;
    float *tail = (float *)bd_align64(toff + Kd);
    for (int64_t k = 0; k < Kd; k++) {
        boff[k] = k * HW;
        toff[k] = k * nr;
    }
    const int64_t ldc = s->OH * s->OW;
    for (int64_t j0 = 0; j0 < P; j0 += nr) {
        const int64_t n = imin(nr, P - j0);
        const float *b = xg + p0 + j0;
        const int64_t *offs = boff;
        if (p0 + j0 + nr > HW) { /* the plane ends inside the panel: read a copy */
            for (int64_t k = 0; k < Kd; k++) {
                memcpy(tail + k * nr, b + k * HW, (size_t)n * sizeof(float));
                memset(tail + k * nr + n, 0, (size_t)(nr - n) * sizeof(float));
            }
            b = tail;
            offs = toff;
        }
        /* panel j0 + AHEAD: the lines each of its rows spans, but for its first, which is the
         * last of the panel before (prefetched by the step before) or the one its last shares
         * (one prefetch a row on AVX2, where three took 9% of a 144 -> 24 layer's time) */
        if (j0 + nr * (POINTWISE_AHEAD + 1) <= P)
            for (int64_t k = 0; k < Kd; k++) {
                const float *q = xg + k * HW + p0 + j0 + nr * POINTWISE_AHEAD;
                if (j0 == 0) __builtin_prefetch(q, 0, 3);
                if (nr > 16) __builtin_prefetch(q + 16, 0, 3);
                __builtin_prefetch(q + nr - 1, 0, 3);
            }
        bd_ukr_out out = {1, {n >= nr ? full : (1u << n) - 1u}, {j0}};
        direct_panel(kd, Kd, apacked, b, offs, c, ldc, m_lo, m_hi, bias_m, &out, act, act_min,
                     act_max);
    }
}

/* ---- packing and tiles --------------------------------------------------------------------- */

size_t bd_f32_conv2d_packed_w_bytes(const bd_conv2d_shape *s) {
    BD_KCHECK(bd_conv2d_shape_valid(s));
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    if (is_pointwise_transposed(kd, s))
        return (size_t)(BD_PACK_HDR_FLOATS + round_up(s->M, kd->nr) * s->C) * sizeof(float);
    if (is_planes(kd, s))
        return (size_t)(BD_PACK_HDR_FLOATS + round_up(s->M, 8) * s->C * s->KH * s->KW) *
               sizeof(float);
    if (is_conv8d(kd, s)) /* bfloat16: two bytes a weight */
        return BD_PACK_HDR_FLOATS * sizeof(float) +
               (size_t)(s->group * conv8d_mg(kd, s) * bd_conv8d_cin(s) * s->KH * s->KW) *
                   (is_conv16d_bf16(kd, s) ? sizeof(uint16_t) : sizeof(float));
    if (is_depthwise(s) || is_group8(kd, s))
        return (size_t)(BD_PACK_HDR_FLOATS + s->M * (s->C / s->group) * s->KH * s->KW) *
               sizeof(float);
    if (is_pointwise_bf16(kd, s)) /* rows of bfloat16 pairs, 12 zero rows after */
        return (size_t)(BD_PACK_HDR_FLOATS + (s->M + 12) * round_up(s->C, 2) / 2) * sizeof(float);
    const int64_t mr = kd->mr;
    if (s->winograd) return (BD_PACK_HDR_FLOATS + bd_wino_packed_floats(s, (int)mr)) * sizeof(float);
    const int64_t Mg = s->M / s->group, Kd = s->C / s->group * s->KH * s->KW;
    return (size_t)(BD_PACK_HDR_FLOATS + s->group * round_up(Mg, mr) * Kd) * sizeof(float);
}

void bd_f32_conv2d_pack_w(const bd_conv2d_shape *s, const float *w, float *packed) {
    BD_KCHECK(bd_conv2d_shape_valid(s));
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    const int64_t Mg = s->M / s->group, Kd = s->C / s->group * s->KH * s->KW;
    if (s->winograd) {
        bd_pack_hdr h = {0, BD_PACK_WINO, (int32_t)kd->isa, kd->mr, s->M, s->C, s->winograd};
        bd_pack_hdr_write(packed, &h);
        bd_wino_pack(s, w, packed + BD_PACK_HDR_FLOATS, kd->mr);
        return;
    }
    if (is_pointwise_transposed(kd, s)) { /* B[c][m] = w[m][c], in NR-column panels */
        bd_pack_hdr h = {0, BD_PACK_CONV_T, (int32_t)kd->isa, kd->nr, s->M, s->C, 1};
        bd_pack_hdr_write(packed, &h);
        bd_raw_matrix wt = {w, s->C, 1};
        bd_pack_b_raw(&wt, 0, s->C, 0, s->M, kd->nr, packed + BD_PACK_HDR_FLOATS);
        return;
    }
    const int kind = is_depthwise(s)    ? BD_PACK_DW
                     : is_pointwise_bf16(kd, s) ? BD_PACK_CONV_BF16
                     : is_planes(kd, s) ? BD_PACK_PLANES
                     : is_group8(kd, s) ? BD_PACK_GROUP8
                     : is_conv16d_bf16(kd, s) ? BD_PACK_CONV8_BF16
                     : is_conv8d(kd, s) ? BD_PACK_CONV8
                                        : BD_PACK_CONV;
    bd_pack_hdr h = {0, kind, (int32_t)kd->isa, kd->mr, s->M, Kd, s->group};
    bd_pack_hdr_write(packed, &h);
    float *dst = packed + BD_PACK_HDR_FLOATS;
    if (kind == BD_PACK_CONV_BF16) { /* row m: pairs (c, c + 1) of rounded weights, low c */
        const int64_t words = round_up(s->C, 2) / 2;
        uint32_t *d32 = (uint32_t *)(void *)dst;
        memset(d32, 0, (size_t)((s->M + 12) * words) * sizeof(uint32_t));
        for (int64_t m = 0; m < s->M; m++)
            for (int64_t c = 0; c < s->C; c++)
                d32[m * words + c / 2] |= (uint32_t)bd_bf16_round(w[m * s->C + c]) << (16 * (c % 2));
        return;
    }
    if (kind == BD_PACK_CONV8 || kind == BD_PACK_CONV8_BF16) {
        /* per group, block of L outputs: [input block][tap][c][lane] floats, or in bfloat16
         * [input block][tap][c / 2][lane][c % 2] (a lane's pair of input channels one word) */
        const int bf16 = kind == BD_PACK_CONV8_BF16;
        const int64_t Cg = s->C / s->group, taps = s->KH * s->KW, Cp = bd_conv8d_cin(s),
                      ncb = Cp / 8, L = kd->conv8d_lanes, Mp = conv8d_mg(kd, s);
        uint16_t *d16 = (uint16_t *)(void *)dst;
        memset(dst, 0, (size_t)(s->group * Mp * Cp * taps) * (bf16 ? sizeof(uint16_t) : sizeof(float)));
        for (int64_t g = 0; g < s->group; g++)
            for (int64_t m = 0; m < Mg; m++)
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t t = 0; t < taps; t++) {
                        const float v = w[((g * Mg + m) * Cg + c) * taps + t];
                        const int64_t block = g * Mp * Cp * taps +
                                              ((m / L * ncb + c / 8) * taps + t) * 8 * L;
                        if (bf16)
                            d16[block + c % 8 / 2 * 2 * L + m % L * 2 + c % 2] = bd_bf16_round(v);
                        else
                            dst[block + c % 8 * L + m % L] = v;
                    }
        return;
    }
    if (kind == BD_PACK_PLANES) { /* per block of 8 output channels: [c, kh, kw][lane] */
        memset(dst, 0, (size_t)(round_up(s->M, 8) * Kd) * sizeof(float));
        for (int64_t m = 0; m < s->M; m++)
            for (int64_t t = 0; t < Kd; t++)
                dst[(m / 8 * Kd + t) * 8 + m % 8] = w[m * Kd + t];
        return;
    }
    if (kind == BD_PACK_GROUP8) { /* per block of 8 output channels: [tap][c][lane] */
        const int64_t Cg = s->C / s->group, taps = s->KH * s->KW;
        for (int64_t m = 0; m < s->M; m++)
            for (int64_t c = 0; c < Cg; c++)
                for (int64_t t = 0; t < taps; t++)
                    dst[(m / 8 * taps + t) * Cg * 8 + c * 8 + m % 8] = w[(m * Cg + c) * taps + t];
        return;
    }
    if (is_depthwise(s)) {
        memcpy(dst, w, (size_t)(s->M * Kd) * sizeof(float));
        return;
    }
    for (int64_t g = 0; g < s->group; g++) {
        bd_raw_matrix wm = {w + g * Mg * Kd, Kd, 0};
        bd_pack_a_raw(&wm, 0, Mg, 0, Kd, kd->mr, dst + g * round_up(Mg, kd->mr) * Kd);
    }
}

size_t bd_f32_conv2d_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile) {
    BD_KCHECK(bd_conv2d_shape_valid(s));
    if (oh_tile < 1) oh_tile = 1;
    if (oh_tile > s->OH) oh_tile = s->OH;
    if (is_depthwise(s)) return dw_scratch_floats(s) * sizeof(float);
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    if (is_group8(kd, s)) return (size_t)(16 + bd_conv8_scratch_floats(s)) * sizeof(float);
    if (is_conv8d(kd, s)) return (size_t)(16 + bd_conv8d_scratch_floats(s)) * sizeof(float);
    if (is_pointwise_bf16(kd, s)) return BD_BF16_ROWS_SCRATCH;
    if (s->winograd) return bd_wino_scratch_floats(s, oh_tile) * sizeof(float);
    if (is_planes(kd, s)) return (size_t)bd_conv_planes_scratch_floats(s) * sizeof(float);
    const int64_t Mg = s->M / s->group, Kd = s->C / s->group * s->KH * s->KW;
    size_t gemm = bd_gemm_scratch_bytes_all(Mg, oh_tile * s->OW, Kd, 1);
    if (transposed_shape(s)) { /* the product, then the GEMM's (B pre-packed: no B block) */
        const int64_t P = oh_tile * s->OW;
        size_t transposed = (size_t)(16 + P * transposed_ld(s->M)) * sizeof(float) +
                            bd_gemm_scratch_bytes_all(P, 0, s->C, 0);
        if (transposed > gemm) gemm = transposed;
    }
    size_t direct = direct_scratch_floats(s, oh_tile) * sizeof(float);
    if (pointwise_in_place_ok(kd, s) && pointwise_scratch_floats(s) * sizeof(float) > gemm)
        gemm = pointwise_scratch_floats(s) * sizeof(float);
    return direct_ok(kd, s) && direct > gemm ? direct : gemm;
}

/* A tile on the direct lane kernel (weights BD_PACK_CONV8), group by group; pre_a, pre_b: the
 * prologue of bd_f32_conv2d_tile_pre (the 16-lane kernel only), or NULL. */
static void conv8d_tiles(const bd_conv2d_shape *s, const float *x, const float *pre_a,
                         const float *pre_b, const float *wpacked, const float *bias, float *y,
                         int64_t n, int64_t oc0, int64_t oc1, int64_t oh0, int64_t oh1, int act,
                         float act_min, float act_max, void *scratch) {
    const int64_t Mg = s->M / s->group, Cg = s->C / s->group, Kd = Cg * s->KH * s->KW;
    bd_pack_hdr h;
    memcpy(&h, wpacked, sizeof h);
    const int bf16 = h.kind == BD_PACK_CONV8_BF16;
    const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, bf16 ? BD_PACK_CONV8_BF16 : BD_PACK_CONV8, &h);
    BD_KCHECK(h.rows == s->M && h.K == Kd && h.extra == s->group && kd->conv8d &&
              (!pre_a || kd->conv8d_lanes == 16) &&
              (!bf16 || (kd->conv8d_lanes == 16 && bd_kernels_cpu_has_bf16() && s->bf16)));
    for (int64_t g = oc0 / Mg; g * Mg < oc1; g++) {
        /* the group's weights: bfloat16 pairs take half the bytes of floats */
        const int64_t wg = g * conv8d_mg(kd, s) * bd_conv8d_cin(s) * s->KH * s->KW;
        bd_conv8d_job j = {s,
                           x + (n * s->C + g * Cg) * s->H * s->W,
                           y + (n * s->M + g * Mg) * s->OH * s->OW,
                           bf16 ? (const float *)((const uint16_t *)(wpacked + BD_PACK_HDR_FLOATS) + wg)
                                : wpacked + BD_PACK_HDR_FLOATS + wg,
                           bias ? bias + g * Mg : NULL,
                           imax(oc0 - g * Mg, 0),
                           imin(oc1 - g * Mg, Mg),
                           oh0,
                           oh1,
                           act,
                           act_min,
                           act_max,
                           bd_align64(scratch),
                           pre_a,
                           pre_b,
                           s->pre == 2,
                           bf16};
        kd->conv8d(&j);
    }
}

/* A tile of a pointwise convolution in bfloat16 (BD_PACK_CONV_BF16) on bd_bf16_gemm_rows; pre_a,
 * pre_b: the prologue of bd_f32_conv2d_tile_pre, or NULL. */
static void pointwise_bf16_tile(const bd_conv2d_shape *s, const float *x, const float *pre_a,
                                const float *pre_b, const float *wpacked, const float *bias,
                                float *y, int64_t n, int64_t oc0, int64_t oc1, int64_t oh0,
                                int64_t oh1, int act, float act_min, float act_max, void *scratch) {
    bd_pack_hdr h;
    bd_pack_hdr_read(wpacked, BD_PACK_CONV_BF16, &h);
    BD_KCHECK(h.rows == s->M && h.K == s->C && s->bf16 && bd_kernels_cpu_has_bf16());
    const int64_t HW = s->H * s->W;
    bd_bf16_gemm_rows((const uint32_t *)(const void *)(wpacked + BD_PACK_HDR_FLOATS),
                      round_up(s->C, 2) / 2, oc0, oc1, x + n * s->C * HW + oh0 * s->W, HW,
                      (oh1 - oh0) * s->OW, s->C, pre_a, pre_b, s->pre == 2,
                      y + (n * s->M + oc0) * HW + oh0 * s->W, HW, bias ? bias + oc0 : NULL, act,
                      act_min, act_max, scratch);
}

/* The prologue of bd_f32_conv2d_tile_pre: the input rows (channels) packed as bd_pack_b_raw
 * packs them, each value v of channel k as v * a[k] + b[k] (relu: then max(0, .); NaN kept). */
typedef struct pre_matrix {
    bd_raw_matrix m;
    const float *a, *b;
    int relu;
} pre_matrix;

static inline __attribute__((always_inline)) void
pack_b_pre_body(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float *dst) {
    const pre_matrix *pm = ctx;
    for (int64_t k = 0; k < kc; k++) {
        const float *src = pm->m.p + (k0 + k) * pm->m.ld + j0;
        const float a = pm->a[k0 + k], b = pm->b[k0 + k];
        for (int64_t p = 0; p < nc; p += nr) {
            float *d = dst + p * kc + k * nr;
            const int64_t cols = imin(nr, nc - p);
            if (pm->relu)
                for (int64_t j = 0; j < cols; j++) {
                    const float v = src[p + j] * a + b;
                    d[j] = v < 0.0f ? 0.0f : v;
                }
            else
                for (int64_t j = 0; j < cols; j++)
                    d[j] = src[p + j] * a + b;
            for (int64_t j = cols; j < nr; j++)
                d[j] = 0.0f;
        }
    }
}

/* compiled for each instruction set, so that the loops become vector FMAs and maxima */
static void pack_b_pre(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr,
                       float *dst) {
    pack_b_pre_body(ctx, k0, kc, j0, nc, nr, dst);
}
#if BD_KERNELS_X86
__attribute__((target("avx2,fma"))) static void pack_b_pre_avx2(const void *ctx, int64_t k0, int64_t kc,
                                                               int64_t j0, int64_t nc, int nr,
                                                               float *dst) {
    pack_b_pre_body(ctx, k0, kc, j0, nc, nr, dst);
}
__attribute__((target("avx512f,avx2,fma"))) static void pack_b_pre_avx512(const void *ctx, int64_t k0,
                                                                         int64_t kc, int64_t j0,
                                                                         int64_t nc, int nr, float *dst) {
    pack_b_pre_body(ctx, k0, kc, j0, nc, nr, dst);
}
#endif

static bd_pack_b_fn pack_b_pre_for(const bd_gemm_kernel *kd) {
#if BD_KERNELS_X86
    if (kd->isa == BD_KERNELS_ISA_AVX512) return pack_b_pre_avx512;
    if (kd->isa == BD_KERNELS_ISA_AVX2) return pack_b_pre_avx2;
#endif
    (void)kd;
    return pack_b_pre;
}

void bd_f32_conv2d_tile_pre(const bd_conv2d_shape *s, const float *x, const float *pre_a,
                            const float *pre_b, const float *wpacked, const float *bias, float *y,
                            int64_t n, int64_t oc0, int64_t oc1, int64_t oh0, int64_t oh1, int act,
                            float act_min, float act_max, void *scratch) {
    BD_KCHECK(bd_conv2d_shape_valid(s) && s->pre && pre_a && pre_b);
    BD_KCHECK(0 <= n && n < s->N && 0 <= oc0 && oc0 <= oc1 && oc1 <= s->M && 0 <= oh0 &&
              oh0 <= oh1 && oh1 <= s->OH);
    if (oc0 == oc1 || oh0 == oh1) return;
    bd_pack_hdr h;
    const int64_t HW = s->H * s->W;
    memcpy(&h, wpacked, sizeof h);
    if (h.kind == BD_PACK_CONV8 || h.kind == BD_PACK_CONV8_BF16) { /* the 16-lane direct kernel */
        conv8d_tiles(s, x, pre_a, pre_b, wpacked, bias, y, n, oc0, oc1, oh0, oh1, act, act_min,
                     act_max, scratch);
        return;
    }
    if (h.kind == BD_PACK_CONV_BF16) { /* bfloat16 on the GEMM, the prologue in B's packing */
        pointwise_bf16_tile(s, x, pre_a, pre_b, wpacked, bias, y, n, oc0, oc1, oh0, oh1, act,
                            act_min, act_max, scratch);
        return;
    }
    const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_CONV, &h);
    BD_KCHECK(h.rows == s->M && h.K == s->C && h.extra == 1 && h.tile == kd->mr);
    /* 1x1, stride 1, ungrouped: the GEMM of W by the input's rows [oh0, oh1), B packed through
     * the prologue */
    pre_matrix pm = {{x + n * s->C * HW + oh0 * s->W, HW, 0}, pre_a, pre_b, s->pre == 2};
    bd_gemm_operand a = {wpacked + BD_PACK_HDR_FLOATS, NULL, NULL, NULL};
    bd_gemm_operand b = {NULL, NULL, pack_b_pre_for(kd), &pm};
    bd_gemm_epilogue ep = {NULL, bias ? bias + oc0 : NULL, 0, act, act_min, act_max};
    bd_gemm_run(kd, oc0, oc1, 0, (oh1 - oh0) * s->OW, s->C, &a, &b,
                y + (n * s->M + oc0) * HW + oh0 * s->W, HW, &ep, scratch);
}

/* Output channels [oc0, oc1) x rows [oh0, oh1) of a BD_PACK_CONV_T convolution: the product
 * X^T W^T of those pixels and channels into scratch (bias and activation in the GEMM's
 * epilogue), then copied transposed into the planes by the kernel's transpose. */
static void pointwise_transposed_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s,
                                      const float *x, const float *bpacked, const float *bias,
                                      float *y, int64_t n, int64_t oc0, int64_t oc1, int64_t oh0,
                                      int64_t oh1, int act, float act_min, float act_max,
                                      void *scratch) {
    const int64_t HW = s->H * s->W, OHW = s->OH * s->OW, P = (oh1 - oh0) * s->OW;
    const int64_t ncols = oc1 - oc0, ldt = transposed_ld(ncols);
    float *t = bd_align64(scratch);
    /* X^T[p][c] = x[c][p]; of a one-pixel image, the row of channels itself, which the GEMM
     * reads in place and streams B's panels for in one pass (bd_gemm_run) */
    bd_raw_matrix xt = {x + n * s->C * HW + oh0 * s->W, HW, 1};
    if (HW == 1) xt = (bd_raw_matrix){x + n * s->C, s->C, 0};
    bd_gemm_operand a = {NULL, bd_pack_a_raw, NULL, &xt};
    bd_gemm_operand b = {bpacked, NULL, NULL, NULL};
    bd_gemm_epilogue ep = {bias ? bias + oc0 : NULL, NULL, 0, act, act_min, act_max};
    bd_gemm_run(kd, 0, P, oc0, oc1, s->C, &a, &b, t, ldt, &ep, t + P * ldt);
    kd->transpose(t, ldt, y + (n * s->M + oc0) * OHW + oh0 * s->OW, OHW, P, ncols);
}

void bd_f32_conv2d_tile(const bd_conv2d_shape *s, const float *x, const float *wpacked,
                        const float *bias, float *y, int64_t n, int64_t oc0, int64_t oc1,
                        int64_t oh0, int64_t oh1, int act, float act_min, float act_max,
                        void *scratch) {
    BD_KCHECK(bd_conv2d_shape_valid(s) && !s->pre);
    BD_KCHECK(0 <= n && n < s->N && 0 <= oc0 && oc0 <= oc1 && oc1 <= s->M && 0 <= oh0 &&
              oh0 <= oh1 && oh1 <= s->OH);
    if (oc0 == oc1 || oh0 == oh1) return;
    const int64_t Mg = s->M / s->group, Cg = s->C / s->group;
    const int64_t Kd = Cg * s->KH * s->KW;
    bd_pack_hdr h;
    if (is_depthwise(s)) {
        const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_DW, &h);
        BD_KCHECK(h.rows == s->M && h.K == Kd);
        dw_tile(kd, s, x, wpacked + BD_PACK_HDR_FLOATS, bias, y, n, oc0, oc1, oh0, oh1, act,
                act_min, act_max, scratch);
        return;
    }
    if (s->winograd) {
        const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_WINO, &h);
        BD_KCHECK(h.rows == s->M && h.K == s->C && h.extra == s->winograd && h.tile == kd->mr);
        bd_wino_tile(kd, s, x + n * s->C * s->H * s->W, wpacked + BD_PACK_HDR_FLOATS,
                     bias ? bias + oc0 : NULL, y + (n * s->M + oc0) * s->OH * s->OW + oh0 * s->OW,
                     oc0, oc1, oh0, oh1, act, act_min, act_max, scratch);
        return;
    }
    memcpy(&h, wpacked, sizeof h);
    if (h.kind == BD_PACK_CONV_T) {
        const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_CONV_T, &h);
        BD_KCHECK(h.rows == s->M && h.K == s->C && h.tile == kd->nr && kd->transpose &&
                  transposed_shape(s));
        pointwise_transposed_tile(kd, s, x, wpacked + BD_PACK_HDR_FLOATS, bias, y, n, oc0, oc1,
                                  oh0, oh1, act, act_min, act_max, scratch);
        return;
    }
    if (h.kind == BD_PACK_PLANES) {
        const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_PLANES, &h);
        BD_KCHECK(h.rows == s->M && h.K == Kd && kd->conv_planes && bd_conv_planes_ok(s));
        bd_conv_planes_job jp = {s,
                                 x + n * s->C * s->H * s->W,
                                 y + n * s->M * s->OH * s->OW,
                                 wpacked + BD_PACK_HDR_FLOATS,
                                 bias,
                                 oc0,
                                 oc1,
                                 oh0,
                                 oh1,
                                 act,
                                 act_min,
                                 act_max,
                                 scratch};
        kd->conv_planes(&jp);
        return;
    }
    if (h.kind == BD_PACK_GROUP8) {
        const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_GROUP8, &h);
        BD_KCHECK(h.rows == s->M && h.K == Kd && h.extra == s->group && kd->conv8);
        conv8_tile(kd, s, x, wpacked + BD_PACK_HDR_FLOATS, bias, y, n, oc0, oc1, oh0, oh1, act,
                   act_min, act_max, scratch);
        return;
    }
    if (h.kind == BD_PACK_CONV8 || h.kind == BD_PACK_CONV8_BF16) {
        conv8d_tiles(s, x, NULL, NULL, wpacked, bias, y, n, oc0, oc1, oh0, oh1, act, act_min, act_max,
                     scratch);
        return;
    }
    if (h.kind == BD_PACK_CONV_BF16) {
        pointwise_bf16_tile(s, x, NULL, NULL, wpacked, bias, y, n, oc0, oc1, oh0, oh1, act,
                            act_min, act_max, scratch);
        return;
    }
    const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_CONV, &h);
    BD_KCHECK(h.rows == s->M && h.K == Kd && h.extra == s->group && h.tile == kd->mr);
    const int64_t HW = s->H * s->W, OHW = s->OH * s->OW;
    const int64_t P = (oh1 - oh0) * s->OW;
    for (int64_t g = oc0 / Mg; g * Mg < oc1; g++) {
        int64_t m_lo = imax(oc0 - g * Mg, 0), m_hi = imin(oc1 - g * Mg, Mg);
        bd_gemm_operand a = {wpacked + BD_PACK_HDR_FLOATS + g * round_up(Mg, kd->mr) * Kd, NULL, NULL,
                        NULL};
        const float *xg = x + (n * s->C + g * Cg) * HW;
        float *c = y + (n * s->M + g * Mg + m_lo) * OHW + oh0 * s->OW;
        bd_gemm_epilogue ep = {NULL, bias ? bias + g * Mg + m_lo : NULL, 0, act, act_min, act_max};
        if (direct_ok(kd, s) && m_lo % kd->mr == 0) {
            direct_tile(kd, s, xg, a.packed, ep.bias_m, c, m_lo, m_hi, oh0, oh1, act, act_min,
                        act_max, scratch);
            continue;
        }
        if (pointwise_in_place_ok(kd, s) && m_lo % kd->mr == 0) {
            pointwise_tile(kd, s, xg, a.packed, ep.bias_m, c, m_lo, m_hi,
                           oh0 * s->OW, oh1 * s->OW, act, act_min, act_max, scratch);
            continue;
        }
        bd_raw_matrix xm = {xg, HW, 0};
        im2col_ctx ictx = {s, xg, x + s->N * s->C * HW, oh0};
        bd_gemm_operand b = {NULL, NULL, im2col_for(kd), &ictx};
        if (is_pointwise(s)) { /* B is the input itself: Cg rows of H*W pixels */
            xm.p = xg + oh0 * s->W;
            b.pack_b = bd_pack_b_raw;
            b.ctx = &xm;
        }
        bd_gemm_run(kd, m_lo, m_hi, 0, P, Kd, &a, &b, c, OHW, &ep, scratch);
    }
}
