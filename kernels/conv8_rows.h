/* conv8_rows.h — the row transposes of the kernels with 8 channels in the vector lanes
 * (bd_kernels_internal.h's bd_conv8_job and bd_conv8d_job): input rows interleaved 8 planes at a
 * time, and output rows of 8-lane pixels transposed back to their planes. Included by the AVX2
 * kernels and by the AVX-512 ones, so that both read and write the same layouts.
 */
#ifndef BD_CONV8_ROWS_H
#define BD_CONV8_ROWS_H

#include <immintrin.h>
#include <string.h>

#include "bd_kernels_internal.h"

/* The includer's instruction set (AVX2 or AVX-512), so that these inline into its kernels. */
#ifndef BD_ROWS_TARGET
#error "define BD_ROWS_TARGET before including conv8_rows.h"
#endif
/* BD_ROWS_MASK16 (AVX-512 includers): partial rows are stored under a k-mask, not by vmaskmovps,
 * which is slow on AMD cores: a Zen 4 core ran 1152 depthwise channels at 7x7 in 0.061 ms with
 * it, 0.038 without. */
#define BD_ROWS_INLINE static inline __attribute__((always_inline))

/* r[k] (lane c) becomes r[c] (lane k): rows to columns of an 8 x 8 block. */
BD_ROWS_INLINE BD_ROWS_TARGET void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* Lanes [0, n) set, for masked loads and stores of a partial block. */
BD_ROWS_INLINE BD_ROWS_TARGET __m256i first_lanes(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* n pixels of 8 lanes (ps floats apart) set to zero. */
BD_ROWS_INLINE BD_ROWS_TARGET void conv8_zero_pixels(float *d, int64_t n, int64_t ps) {
    if (ps == 8) {
        memset(d, 0, (size_t)(n * 8) * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        _mm256_store_ps(d + i * ps, _mm256_setzero_ps());
}

/* Input row ih of the nin (0..8) planes from x, interleaved into d (cols columns of 8 lanes, ps
 * floats apart: 8, or 16 for the low or high half of 16 lanes). */
BD_ROWS_INLINE BD_ROWS_TARGET void conv8_prep_row(const bd_conv2d_shape *s, const float *x, int64_t nin,
                                      int64_t ih, int64_t cols, float *d, int64_t ps) {
    const int64_t W = s->W, HW = s->H * s->W, left = s->pad_left;
    if (ih < 0 || ih >= s->H) {
        conv8_zero_pixels(d, cols, ps);
        return;
    }
    const int64_t jlo = left < cols ? left : cols;
    const int64_t jhi = left + W < cols ? left + W : cols;
    conv8_zero_pixels(d, jlo, ps);
    if (jhi < cols) conv8_zero_pixels(d + jhi * ps, cols - jhi, ps);
    const float *src = x + ih * W - left;
    for (int64_t c0 = jlo; c0 < jhi; c0 += 8) {
        const int64_t n = jhi - c0 < 8 ? jhi - c0 : 8;
        const __m256i m = first_lanes(n);
        const float *p = src + c0;
        __m256 r[8];
        if (nin == 8 && n == 8) {
            for (int c = 0; c < 8; c++)
                r[c] = _mm256_loadu_ps(p + c * HW);
        } else {
            for (int c = 0; c < 8; c++)
                r[c] = c < nin ? _mm256_maskload_ps(p + c * HW, m) : _mm256_setzero_ps();
        }
        transpose8(r);
        /* Whole blocks even past jhi (the masked loads made those columns zeros, and the
         * scratch has a block to spare after the last row); spelt out, as compilers turn a loop
         * into a memcpy through the stack. */
        float *e = d + c0 * ps;
        _mm256_store_ps(e, r[0]);
        _mm256_store_ps(e + ps, r[1]);
        _mm256_store_ps(e + 2 * ps, r[2]);
        _mm256_store_ps(e + 3 * ps, r[3]);
        _mm256_store_ps(e + 4 * ps, r[4]);
        _mm256_store_ps(e + 5 * ps, r[5]);
        _mm256_store_ps(e + 6 * ps, r[6]);
        _mm256_store_ps(e + 7 * ps, r[7]);
    }
}

/* Lanes [lane_lo, lane_hi) of one output row of 8-lane pixels (orow, pixels ps floats apart, a
 * multiple of 8; rounded up to 8 pixels) transposed back to their planes (yrow: lane 0's row,
 * planes plane floats apart). Without AVX-512's k-masks, a row's partial last block is its last 8
 * pixels again, whole, where the row has 8 (the overlap rewrites what the block before stored,
 * the same values), else stored a float at a time: vmaskmovps stores are microcoded on AMD cores,
 * and on a Zen 3 core the stores after them took a quarter of the samples of 14x14 depthwise
 * layers. */
BD_ROWS_INLINE BD_ROWS_TARGET void conv8_store_row(const float *orow, int64_t ps, int64_t OW, float *yrow,
                                       int64_t plane, int64_t lane_lo, int64_t lane_hi) {
    for (int64_t ow0 = 0; ow0 < OW; ow0 += 8) {
        int64_t ow = ow0, n = OW - ow0 < 8 ? OW - ow0 : 8;
#ifndef BD_ROWS_MASK16
        if (n < 8 && OW >= 8) ow = OW - 8, n = 8;
#endif
        const float *e = orow + ow * ps;
        __m256 r[8];
        for (int i = 0; i < 8; i++)
            r[i] = _mm256_load_ps(e + i * ps);
        transpose8(r);
        float *q = yrow + ow;
        if (n == 8) {
            for (int64_t c = lane_lo; c < lane_hi; c++)
                _mm256_storeu_ps(q + c * plane, r[c]);
        } else {
#ifdef BD_ROWS_MASK16
            const __mmask16 m = (__mmask16)((1u << n) - 1u);
            for (int64_t c = lane_lo; c < lane_hi; c++)
                _mm512_mask_storeu_ps(q + c * plane, m, _mm512_castps256_ps512(r[c]));
#else
            for (int64_t c = lane_lo; c < lane_hi; c++) {
                float t[8];
                _mm256_storeu_ps(t, r[c]);
                for (int64_t j = 0; j < n; j++) q[c * plane + j] = t[j];
            }
#endif
        }
    }
}

#endif /* BD_CONV8_ROWS_H */
