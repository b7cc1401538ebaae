/* deconv.c — transposed 2-D convolutions whose stride equals their kernel, without padding (the
 * upsampling of U-Nets and decoders), on the blocked GEMM driver.
 *
 * Output pixel (oh, ow) takes the single tap (oh % KH, ow % KW) of input pixel (oh / KH,
 * ow / KW). So for each of the KH*KW taps, the outputs it feeds are one GEMM: the tap's M x C
 * weights (packed once, as an A operand) times the C x P input pixels of the tile's input rows,
 * which the tile packs once into B panels for all its taps. The bias and activation run in the
 * GEMM's epilogue; the tile then scatters the tap's product to every KH-th row and KW-th column.
 */
#include <string.h>

#include "bd_kernels_internal.h"

static int64_t imin(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

int bd_deconv_shape_valid(const bd_conv2d_shape *s) {
    return bd_conv2d_shape_valid(s) && s->group == 1 && s->winograd == 0 &&
           s->stride_h == s->KH && s->stride_w == s->KW && s->dil_h == 1 && s->dil_w == 1 &&
           s->pad_top == 0 && s->pad_left == 0 && s->OH == s->H * s->KH && s->OW == s->W * s->KW;
}

size_t bd_f32_deconv_packed_w_bytes(const bd_conv2d_shape *s) {
    BD_KCHECK(bd_deconv_shape_valid(s));
    const int64_t mr = bd_gemm_kernel_current()->mr;
    return (size_t)(BD_PACK_HDR_FLOATS + s->KH * s->KW * round_up(s->M, mr) * s->C) * sizeof(float);
}

void bd_f32_deconv_pack_w(const bd_conv2d_shape *s, const float *w, float *packed) {
    BD_KCHECK(bd_deconv_shape_valid(s));
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    const int64_t M = s->M, C = s->C, taps = s->KH * s->KW, mr = kd->mr;
    const int64_t per_tap = round_up(M, mr) * C;
    bd_pack_hdr h = {0, BD_PACK_DECONV, (int32_t)kd->isa, kd->mr, M, C, taps};
    bd_pack_hdr_write(packed, &h);
    float *dst = packed + BD_PACK_HDR_FLOATS;
    memset(dst, 0, (size_t)(taps * per_tap) * sizeof(float)); /* rows past M stay zero */
    /* tap t's A operand: panel m / mr holds C x mr floats; w is C x M x taps */
    for (int64_t c = 0; c < C; c++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t t = 0; t < taps; t++)
                dst[t * per_tap + (m / mr) * C * mr + c * mr + m % mr] = w[(c * M + m) * taps + t];
}

/* The input rows a tile of output rows [oh0, oh0 + rows) reads: at most ceil(rows / KH) + 1. */
static int64_t in_rows(const bd_conv2d_shape *s, int64_t rows) {
    return imin((rows + s->KH - 1) / s->KH + 1, s->H);
}

size_t bd_f32_deconv_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile) {
    BD_KCHECK(bd_deconv_shape_valid(s));
    if (oh_tile < 1) oh_tile = 1;
    if (oh_tile > s->OH) oh_tile = s->OH;
    const int64_t P = in_rows(s, oh_tile) * s->W;
    /* the products, the packed input rows (B panels of NR <= 32 columns), the GEMM driver's edge
     * tile (both operands pre-packed), each 64-byte aligned */
    return (size_t)(s->M * P + s->C * round_up(P, 32) + 32) * sizeof(float) +
           bd_gemm_scratch_bytes_all(0, 0, 0, 1);
}

void bd_f32_deconv_tile(const bd_conv2d_shape *s, const float *x, const float *wpacked,
                        const float *bias, float *y, int64_t n, int64_t oc0, int64_t oc1,
                        int64_t oh0, int64_t oh1, int act, float act_min, float act_max,
                        void *scratch) {
    BD_KCHECK(bd_deconv_shape_valid(s));
    BD_KCHECK(0 <= n && n < s->N && 0 <= oc0 && oc0 <= oc1 && oc1 <= s->M && 0 <= oh0 &&
              oh0 <= oh1 && oh1 <= s->OH);
    if (oc0 == oc1 || oh0 == oh1) return;
    bd_pack_hdr h;
    const bd_gemm_kernel *kd = bd_pack_hdr_read(wpacked, BD_PACK_DECONV, &h);
    const int64_t KH = s->KH, KW = s->KW, W = s->W, OW = s->OW, C = s->C, Mt = oc1 - oc0;
    BD_KCHECK(h.rows == s->M && h.K == C && h.extra == KH * KW && h.tile == kd->mr);
    const int64_t ih0 = oh0 / KH, ih1 = (oh1 + KH - 1) / KH, P = (ih1 - ih0) * W;
    BD_KCHECK(ih1 - ih0 <= in_rows(s, oh1 - oh0));
    float *z = bd_align64(scratch), *xpk = bd_align64(z + Mt * P);
    float *gemm_scratch = bd_align64(xpk + C * round_up(P, kd->nr));
    const int64_t per_tap = round_up(s->M, kd->mr) * C;
    /* the input rows as C x P, packed once (whole depth) for the KH*KW products */
    const bd_raw_matrix xm = {x + n * C * s->H * W + ih0 * W, s->H * W, 0};
    bd_pack_b_raw(&xm, 0, C, 0, P, kd->nr, xpk);
    const bd_gemm_operand b = {xpk, NULL, NULL, NULL};
    const bd_gemm_epilogue ep = {NULL, bias ? bias + oc0 : NULL, 0, act, act_min, act_max};
    float *yn = y + (n * s->M + oc0) * s->OH * OW;
    for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++) {
            const bd_gemm_operand a = {wpacked + BD_PACK_HDR_FLOATS + (kh * KW + kw) * per_tap,
                                       NULL, NULL, NULL};
            bd_gemm_run(kd, oc0, oc1, 0, P, C, &a, &b, z, P, &ep, gemm_scratch);
            for (int64_t ih = ih0; ih < ih1; ih++) {
                const int64_t oh = ih * KH + kh;
                if (oh < oh0 || oh >= oh1) continue;
                for (int64_t m = 0; m < Mt; m++) {
                    const float *zr = z + m * P + (ih - ih0) * W;
                    float *yr = yn + (m * s->OH + oh) * OW + kw;
                    for (int64_t iw = 0; iw < W; iw++)
                        yr[iw * KW] = zr[iw];
                }
            }
        }
}
