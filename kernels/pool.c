/* pool.c — 2-D max pooling tiles (bd_f32_maxpool2d_tile): on the instruction set's rows kernel
 * where it has one (bd_maxpool_rows_ok: windows up to 3 columns wide at column stride 2, or at
 * unit strides up to 3 rows high: the pools of SqueezeNet, ResNet, GoogLeNet, DenseNet and UNet),
 * else in plain C over the taps inside the input. SqueezeNet's first pool (64 planes of 111x111)
 * took 0.078 ms as generated C (gcc's strided loads), 1.5x onnxruntime's time, and 0.058 on the
 * AVX-512 rows; GoogLeNet's 3x3 stride-1 branch pool over 512 planes of 14x14 0.041 -> 0.016. */
#include <math.h>

#include "bd_kernels_internal.h"

/* The largest tap of output (oh, ow)'s window inside the input (a NaN tap never wins). */
static float window_max(const bd_pool2d_shape *s, const float *xp, int64_t oh, int64_t ow) {
    const int64_t bh = oh * s->stride_h - s->pad_top, bw = ow * s->stride_w - s->pad_left;
    const int64_t kh0 = bh < 0 ? -bh : 0, kh1 = s->H - bh < s->KH ? s->H - bh : s->KH;
    const int64_t kw0 = bw < 0 ? -bw : 0, kw1 = s->W - bw < s->KW ? s->W - bw : s->KW;
    float v = -INFINITY;
    for (int64_t kh = kh0; kh < kh1; kh++)
        for (int64_t kw = kw0; kw < kw1; kw++) {
            const float t = xp[(bh + kh) * s->W + bw + kw];
            v = t > v ? t : v;
        }
    return v;
}

enum { POOL_RUNS = 64 }; /* column runs computed at a time */

void bd_f32_maxpool2d_tile(const bd_pool2d_shape *s, const float *x, float *y, int64_t c0,
                           int64_t c1, int64_t oh0, int64_t oh1, int64_t ow0, int64_t ow1) {
    BD_KCHECK(s->H > 0 && s->W > 0 && s->OH > 0 && s->OW > 0 && s->KH > 0 && s->KW > 0 &&
              s->stride_h > 0 && s->stride_w > 0 && s->pad_top >= 0 && s->pad_left >= 0);
    BD_KCHECK(0 <= c0 && c0 <= c1 && 0 <= oh0 && oh0 <= oh1 && oh1 <= s->OH && 0 <= ow0 &&
              ow0 <= ow1 && ow1 <= s->OW);
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    if (!kd->maxpool_rows || !bd_maxpool_rows_ok(s)) {
        for (int64_t c = c0; c < c1; c++)
            for (int64_t oh = oh0; oh < oh1; oh++)
                for (int64_t ow = ow0; ow < ow1; ow++)
                    y[(c * s->OH + oh) * s->OW + ow] = window_max(s, x + c * s->H * s->W, oh, ow);
        return;
    }
    const int64_t lanes = kd->maxpool_lanes, plane = s->H * s->W;
    bd_pool_run ru[POOL_RUNS];
    for (int64_t g = ow0; g < ow1; g += POOL_RUNS * lanes) {
        const int64_t gz = ow1 - g < POOL_RUNS * lanes ? ow1 : g + POOL_RUNS * lanes;
        int64_t nru = 0;
        for (int64_t ow = g; ow < gz; ow += lanes, nru++) {
            const int64_t n = gz - ow < lanes ? gz - ow : lanes;
            bd_pool_run_set(&ru[nru], ow, n, ow * s->stride_w - s->pad_left,
                            s->stride_w * (n - 1) + s->KW, s->W, plane, lanes);
        }
        kd->maxpool_rows(s, x, y, c0, c1, oh0, oh1, ru, nru);
    }
}
