/* bd_kernels_internal.h — what the kernel files share: the micro-kernel contract, the kernel
 * descriptors of each instruction set, the packed-buffer header and the blocked GEMM driver
 * that both the GEMM entry points (gemm.c) and the convolution tiles (conv2d.c) run on.
 *
 * Packed layouts. An A operand is packed in panels of MR rows: panel p holds rows
 * [p*MR, p*MR+MR) as kc x MR floats (a[k*MR + r]), rows past M zero. A B operand is packed in
 * panels of NR columns: kc x NR floats (b[k*NR + j]), columns past N zero. A pre-packed operand
 * holds its whole K in each panel (panel stride K*MR or K*NR), so a block of K rows starting at
 * k0 is the panel base + k0*MR (or k0*NR).
 */
#ifndef BD_KERNELS_INTERNAL_H
#define BD_KERNELS_INTERNAL_H

#include <math.h>

#include "bd_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#define BD_KERNELS_X86 1
#else
#define BD_KERNELS_X86 0
#endif

/* A check that stays on in release builds: kernels are called from generated code, and a
 * violated precondition must stop the program rather than write out of bounds. */
#define BD_KCHECK(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) bd_kernels_fail(__FILE__, __LINE__, #cond);                                   \
    } while (0)
_Noreturn void bd_kernels_fail(const char *file, int line, const char *what);

/* The first 64-byte boundary at or after p (scratch buffers come with 64 bytes to spare). */
static inline void *bd_align64(void *p) {
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* 1 when the CPU has AVX-512 VNNI (probed once, with the instruction sets; gemm.c). */
int bd_kernels_cpu_has_vnni(void);
/* 1 when the CPU has AVX-VNNI and bd_kernels_avx_vnni_off has not turned it off. */
int bd_kernels_cpu_has_avx_vnni(void);
/* 1 when AMX-INT8 is usable (CPU, OS, permission) and bd_kernels_amx_off has not turned it off. */
int bd_kernels_cpu_has_amx(void);

/* bd_i8_gemm_pack_b for a B that is already B' = B ^ flip (0, or 0x80: uint8 less 128), K a
 * multiple of 4 and N of 32 (gemm_i8.c; the int8 convolution's im2col slices, packed per tile),
 * into bd_i8_gemm_flipped_bytes(K, N). */
size_t bd_i8_gemm_flipped_bytes(int64_t K, int64_t N);
void bd_i8_gemm_pack_b_flipped(int64_t K, int64_t N, const uint8_t *B, int64_t ldb, uint8_t flip,
                               void *packed);

/* Whether AVX2's vpmaddubsw can saturate on the signed weight pair (a, b): for some unsigned
 * bytes x0, x1, x0 * a + x1 * b is outside int16 (255 * 128 = 32640 is inside, 255 * 129 is
 * not). The 8-bit kernels split such pairs: the first weight stays, the second is added apart. */
static inline int bd_i8_pair_saturates(int a, int b) {
    int pos = (a > 0 ? a : 0) + (b > 0 ? b : 0), neg = (a < 0 ? -a : 0) + (b < 0 ? -b : 0);
    return pos > 128 || neg > 128;
}
/* Splits a step's 4 weight bytes w (two pairs) so: the second weight of a pair that could
 * saturate moves from w to apart (zeros elsewhere). Returns whether any moved. */
static inline int bd_i8_split4(int8_t w[4], int8_t apart[4]) {
    int any = 0;
    for (int e = 0; e < 4; e += 2) {
        apart[e] = apart[e + 1] = 0;
        if (bd_i8_pair_saturates(w[e], w[e + 1])) {
            apart[e + 1] = w[e + 1];
            w[e + 1] = 0;
            any = 1;
        }
    }
    return any;
}
/* acc (8 int32) + the products of x's unsigned bytes and w's signed ones, 4 summed a lane: the
 * int16 pair sums of vpmaddubsw, summed by vpmaddwd with `ones` (16-bit 1s). */
#define BD_I8_DOT4_AVX2(acc, x, w, ones)                                                           \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((x), (w)), (ones)))
/* c0 and c1 plus BD_I8_DOT4_AVX2 of x0 and x1 with the 4 signed bytes at w broadcast: one weight
 * step of two accumulators, as the 8-bit micro-kernels take them. */
#define BD_I8_DOT4_BCAST2_AVX2(c0, c1, x0, x1, w, ones)                                            \
    do {                                                                                           \
        int32_t w4_;                                                                               \
        memcpy(&w4_, (w), 4);                                                                      \
        const __m256i wv_ = _mm256_set1_epi32(w4_);                                                \
        (c0) = BD_I8_DOT4_AVX2((c0), (x0), wv_, (ones));                                           \
        (c1) = BD_I8_DOT4_AVX2((c1), (x1), wv_, (ones));                                           \
    } while (0)

/* What a micro-kernel does after the k loop, on the m x NR tile it computed. */
typedef struct bd_ukr_epi {
    const float *bias_n; /* NR column biases of this tile, or NULL */
    const float *bias_m; /* m row biases of this tile, or NULL */
    int load_c;          /* add the C already in memory */
    int act;             /* BD_ACT_*, applied last */
    float act_min, act_max;
    int cols;            /* columns of C that exist (1..NR): only a kernel with partial_cols
                          * honours it (reading and writing no others); the rest need NR */
    int stream_a;        /* a is a pre-packed operand (weights), which a model run streams from
                          * memory: the AVX-512 kernel prefetches it BD_STREAM_A_FLOATS ahead
                          * (the AVX2 one, at half the FMA rate, measured no gain) */
    int64_t lda;         /* 0: a is a packed MR-row panel; else (kernels with a_in_place) a is A
                          * read in place: row r at a + r * lda, k consecutive */
    int stream_b;        /* b is a pre-packed operand read here for the first time in this call
                          * (the first row tile of its panel): prefetched as stream_a is */
} bd_ukr_epi;

/* How far ahead a kernel prefetches a streamed A panel: 3 KiB, 64 steps of k of a 12-row panel,
 * about a memory latency of FMAs ahead. Without it, weights too large for the caches (ResNet-18's
 * 512-channel layers) streamed at 3 GB/s, and those layers took twice their time. */
enum { BD_STREAM_A_FLOATS = 768 };

/* C[0:m, 0:NR] = a * b (+ epilogue), a: packed MR-row panel, b: packed NR-column panel, both
 * kc deep; 1 <= m <= MR (rows of the panel past m are not computed); kc may be 0. */
typedef void (*bd_ukr_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int m,
                          const bd_ukr_epi *ep);

/* Where a tile computed from B rows read in place (bd_ukr_direct_fn) goes: its NR columns (32
 * or 16) are up to BD_UKR_MAX_SEGS runs of consecutive output pixels; run s covers the columns
 * whose bit is set in mask[s] and puts column L at c + coff[s] + L (row i at + i * ldc). */
enum { BD_UKR_MAX_SEGS = 4 };
typedef struct bd_ukr_out {
    int nseg;
    uint32_t mask[BD_UKR_MAX_SEGS];
    int64_t coff[BD_UKR_MAX_SEGS];
} bd_ukr_out;

/* As bd_ukr_fn, but row k of the B panel is the NR floats at b + boff[k] (unpacked, read in
 * place), and the tile is stored through `out`. Only bias_m, load_c and the activation of the
 * epilogue apply. */
typedef void (*bd_ukr_direct_fn)(int64_t kc, const float *a, const float *b, const int64_t *boff,
                                 float *c, int64_t ldc, int m, const bd_ukr_out *out,
                                 const bd_ukr_epi *ep);

/* Depthwise convolution of some output rows of one channel, from input rows that conv2d.c has
 * zero-padded and split by column stride (phase q of a row holds padded columns q, q+sw, ...):
 * output row o, column ow = bias + sum over taps t of w[t] * (rows + o*sh*sw*row_len)[tap_off[t]
 * + ow], then the activation. */
typedef struct bd_dw_job {
    const float *rows; /* prepared input rows: row r, phase q at rows + (r*sw + q)*row_len */
    int64_t row_len;   /* floats per phase row: >= round_up(OW, 16) + (KW-1)*dw/sw, zero-padded */
    int64_t nrows_out; /* output rows to compute */
    int64_t OW, KH, KW, sh, sw, dh, dw;
    const int64_t *tap_off; /* per tap (kh, kw): ((kh*dh)*sw + (kw*dw)%sw)*row_len + (kw*dw)/sw */
    const float *w;         /* KH*KW taps */
    float bias;
    float *out; /* first output row; rows are OW apart */
    int act;
    float act_min, act_max;
} bd_dw_job;
typedef void (*bd_dw_fn)(const bd_dw_job *job);

/* Depthwise convolutions on the channels' own planes, a row's output columns in the lanes (16
 * at a time): no transposes, for images wide enough to fill the lanes (bd_dw_planes_ok). */
typedef struct bd_dw_planes_job {
    const bd_conv2d_shape *s;
    const float *x;    /* the first channel's input plane; planes H*W apart */
    float *y;          /* its output plane; planes OH*OW apart */
    const float *w;    /* KH*KW taps per channel */
    const float *bias; /* per channel, or NULL */
    int64_t nch;       /* channels */
    int64_t oh0, oh1;  /* output rows */
    int act;
    float act_min, act_max;
} bd_dw_planes_job;
typedef void (*bd_dw_planes_fn)(const bd_dw_planes_job *job);

/* Windows up to 3x3, column stride 1 or 2, no dilation, outputs at least 14 columns wide (a
 * 14-column row fills 14 of 16 lanes; 7x7 images stay with the channels in the lanes). 5x5
 * windows stay there too: their 25 weights and the row sums outgrow the registers, and
 * EfficientNet-B0's 5x5 layers at 28x28 and 14x14 ran 10-20% slower on the planes. */
static inline int bd_dw_planes_ok(const bd_conv2d_shape *s) {
    return s->OW >= 14 && s->KH <= 3 && s->KW <= 3 && (s->stride_w == 1 || s->stride_w == 2) &&
           s->dil_h == 1 && s->dil_w == 1;
}

/* Convolutions of few input channels (3-channel stems) on the output planes: per output row,
 * the input columns each tap reads staged in scratch (bd_conv_planes_scratch_floats), then 32
 * output columns of one row (two vectors of 16) for 8 output channels at a time, each staged
 * vector times a broadcast weight; weights packed as [M/8][C*KH*KW][8] (BD_PACK_PLANES, zero past
 * M). No im2col, no transposes: the outputs are stored as rows of their planes. */
typedef struct bd_conv_planes_job {
    const bd_conv2d_shape *s;
    const float *x;   /* batch item n's input (C planes, H*W apart) */
    float *y;         /* batch item n's output (M planes, OH*OW apart) */
    const float *w;   /* packed weights */
    const float *bias;
    int64_t m_lo, m_hi, oh0, oh1;
    int act;
    float act_min, act_max;
    void *scratch;    /* bd_conv_planes_scratch_floats, any alignment */
} bd_conv_planes_job;
typedef void (*bd_conv_planes_fn)(const bd_conv_planes_job *job);

/* Ungrouped, at most 4 input channels, windows up to 3x3, column stride 1 or 2, no dilation,
 * outputs at least 16 columns wide. */
static inline int bd_conv_planes_ok(const bd_conv2d_shape *s) {
    return s->group == 1 && s->C <= 4 && s->KH <= 3 && s->KW <= 3 && s->OW >= 16 &&
           (s->stride_w == 1 || s->stride_w == 2) && s->dil_h == 1 && s->dil_w == 1 &&
           !s->winograd;
}
/* Prefetches input rows [r0, r1) of a plane (rows of W floats; rows outside [0, H) skipped)
 * into L1: the direct kernels on planes read a few rows at a time from many planes at once, more
 * streams than the hardware prefetchers follow, and a tensor a model run has left in memory cost
 * about one memory latency per row (MobileNetV2's stem 0.14 ms warm, 0.33 ms cold, two thirds of
 * it its 600 KB input). A few rows ahead of the rows being computed hides that. */
static inline void bd_prefetch_rows(const float *plane, int64_t r0, int64_t r1, int64_t H,
                                    int64_t W) {
    if (r0 < 0) r0 = 0;
    if (r1 > H) r1 = H;
    for (int64_t r = r0; r < r1; r++) {
        const char *p = (const char *)(plane + r * W), *end = (const char *)(plane + (r + 1) * W);
        for (p = (const char *)((uintptr_t)p & ~(uintptr_t)63); p < end; p += 64)
            __builtin_prefetch(p, 0, 3);
    }
}

enum { BD_PLANES_COLS = 128 }; /* output columns staged at a time */
/* Every tap's staged run of output columns (rounded up to 16), and 64-byte alignment. */
static inline int64_t bd_conv_planes_scratch_floats(const bd_conv2d_shape *s) {
    const int64_t cols = s->OW < BD_PLANES_COLS ? (s->OW + 15) / 16 * 16 : BD_PLANES_COLS;
    return s->C * s->KH * s->KW * cols + 16;
}

/* Depthwise and narrow grouped convolutions with 8 output channels in the vector lanes: per
 * chunk of BD_CONV8_CHUNK output rows, the input rows the chunk reads are transposed into a
 * channel-interleaved copy (column j, lane c = input plane c's column j - pad_left, zeros in the
 * padding), every tap of an output pixel is then aligned loads and FMAs whatever the strides, and
 * each output row is transposed back to the channels' planes.
 * - Depthwise (group == C == M): lane c is channel c, its own input plane and taps.
 * - Grouped with Cg <= 8 input and a multiple of 8 output channels per group: the lanes are 8
 *   output channels of one group, and each of the group's Cg input values is broadcast to them,
 *   with weights packed as [tap][c][8 lanes] (BD_PACK_GROUP8). */
enum { BD_CONV8_CHUNK = 16 };
/* Interleaved input columns a chunk of output rows reads. */
static inline int64_t bd_conv8_cols(const bd_conv2d_shape *s) {
    return (s->OW - 1) * s->stride_w + (s->KW - 1) * s->dil_w + 1;
}
typedef struct bd_conv8_job {
    const bd_conv2d_shape *s;
    const float *x;           /* the first input plane (batch item n); planes H*W apart */
    int64_t nin;              /* input planes, 1..8 */
    float *y;                 /* lane 0's output plane; planes OH*OW apart */
    int64_t lane_lo, lane_hi; /* lanes stored (0 <= lo < hi <= 8) */
    const float *w;           /* depthwise: KH*KW taps per lane; grouped: packed, KH*KW*Cg*8 */
    const float *bias;        /* lane 0's bias, or NULL (read for the stored lanes only) */
    int64_t oh0, oh1;         /* output rows */
    int act;
    float act_min, act_max;
    float *scratch; /* bd_conv8_scratch_floats(s) floats, 32-byte aligned */
} bd_conv8_job;
typedef void (*bd_conv8_fn)(const bd_conv8_job *job);
/* Its scratch, for up to 16 lanes: the taps' weights (depthwise), one output row (a pixel per
 * lane group, rounded up to 8 pixels), the chunk's input rows and spare pixels after them (rows
 * are written in whole blocks of 8 pixels, and read for up to 7 pixels past the last output
 * column). */
static inline int64_t bd_conv8_scratch_floats(const bd_conv2d_shape *s) {
    int64_t rows_in = (BD_CONV8_CHUNK - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
    return 16 *
           (s->KH * s->KW + (s->OW + 7) / 8 * 8 + rows_in * bd_conv8_cols(s) + 8 + 7 * s->stride_w);
}

/* Convolutions with a multiple of 8 output channels per group, directly (no im2col), with L
 * output channels in the lanes (the kernel's conv8d_lanes: 8 on AVX2, 16 on AVX-512): the
 * chunk's input rows interleaved 8 channels at a time (block cb, row r, column j, lane c =
 * channel 8*cb + c; a last partial block zero-filled), weights packed per block of L output
 * channels as [input block][tap][c][L lanes] (BD_PACK_CONV8, zero past the group's channels),
 * and per step two output blocks x a few pixels (AVX2: 6, 12 accumulators; AVX-512: 8, 16)
 * summed over every input channel and tap: one weight load per block and one broadcast per
 * pixel for each pair of FMAs. */
typedef struct bd_conv8d_job {
    const bd_conv2d_shape *s;
    const float *x;     /* the group's first input plane (batch item n) */
    float *y;           /* the output plane of the group's channel 0 */
    const float *w;     /* the group's packed weights */
    const float *bias;  /* the bias of the group's channel 0, or NULL */
    int64_t m_lo, m_hi; /* the group's output channels to compute */
    int64_t oh0, oh1;   /* output rows */
    int act;
    float act_min, act_max;
    float *scratch; /* bd_conv8d_scratch_floats(s) floats, 32-byte aligned */
    /* a prologue (bd_f32_conv2d_tile_pre, the 16-lane kernel only): each input channel c read as
     * x * pre_a[c] + pre_b[c], then max(0, .) where pre_relu; pre_a NULL: none */
    const float *pre_a, *pre_b;
    int pre_relu;
    /* the 16-lane kernel only: w is BD_PACK_CONV8_BF16's bfloat16 pairs, and the prepared rows
     * are rounded to bfloat16 before the products (vdpbf16ps, two input channels a step) */
    int bf16;
} bd_conv8d_job;
typedef void (*bd_conv8d_fn)(const bd_conv8d_job *job);

/* An unpadded 1x1 convolution at a stride above 1 (ResNet's downsampling). The 16-lane kernel
 * prepares only the input pixels it reads, packed, and then runs it as the stride-1 1x1
 * convolution of bd_conv8d_sub_shape. Prepared whole, the rows hold 3 pixels for each one read,
 * and a chunk held 1 output row of 28 or 14 pixels. */
static inline int bd_conv8d_subsampled(const bd_conv2d_shape *s) {
    return s->KH == 1 && s->KW == 1 && (s->stride_h > 1 || s->stride_w > 1) && s->pad_top == 0 &&
           s->pad_left == 0;
}
static inline bd_conv2d_shape bd_conv8d_sub_shape(const bd_conv2d_shape *s) {
    bd_conv2d_shape t = *s;
    t.H = s->OH, t.W = s->OW, t.stride_h = t.stride_w = 1;
    return t;
}

/* A group's input channels rounded up to whole blocks of 8. */
static inline int64_t bd_conv8d_cin(const bd_conv2d_shape *s) {
    return (s->C / s->group + 7) / 8 * 8;
}
/* Output rows per chunk: the interleaved input rows kept near 128 KB (at least one row). */
static inline int64_t bd_conv8d_chunk_rows(const bd_conv2d_shape *s) {
    const int64_t per_row = bd_conv8d_cin(s) * bd_conv8_cols(s), halo = (s->KH - 1) * s->dil_h + 1;
    int64_t r = (32768 / (per_row > 0 ? per_row : 1) - halo) / s->stride_h + 1;
    return r < 1 ? 1 : r > 16 ? 16 : r;
}
/* Output pixels per output block in a chunk: its rows' pixels (counting the columns of the
 * input rows, which AVX-512 computes at stride 1), rounded up to the kernels' groups (6 pixels on
 * AVX2, 12 on AVX-512 with a last one of 4, 8 or 12: a multiple of 24 covers both), and 8 more
 * (rows are read back in blocks of 8). */
static inline int64_t bd_conv8d_out_pixels(const bd_conv2d_shape *s) {
    return (bd_conv8d_chunk_rows(s) * bd_conv8_cols(s) + 23) / 24 * 24 + 8;
}
/* The chunk's interleaved rows, 8 spare pixels after them (written in blocks of 8), and two
 * output blocks' pixels of up to 16 lanes. */
static inline int64_t bd_conv8d_layout_floats(const bd_conv2d_shape *s) {
    const int64_t rows_in =
        (bd_conv8d_chunk_rows(s) - 1) * s->stride_h + (s->KH - 1) * s->dil_h + 1;
    const int64_t rows = bd_conv8d_cin(s) * rows_in * bd_conv8_cols(s);
    /* bf16: the rows again as bfloat16 (half the floats), 64-byte aligned */
    return rows + 64 + 32 * bd_conv8d_out_pixels(s) + (s->bf16 ? rows / 2 + 32 : 0);
}
/* ... for the layout the kernel uses: the 8-lane kernel prepares whole rows at any stride */
static inline int64_t bd_conv8d_scratch_floats(const bd_conv2d_shape *s) {
    const int64_t whole = bd_conv8d_layout_floats(s);
    if (!bd_conv8d_subsampled(s)) return whole;
    const bd_conv2d_shape t = bd_conv8d_sub_shape(s);
    const int64_t sub = bd_conv8d_layout_floats(&t);
    return whole > sub ? whole : sub;
}

/* A run of up to 16 (AVX2: 8) output columns of a window op at column stride 1 or 2 (max
 * pooling, and the depthwise 3x3 stride-2 rows on the planes): outputs [ow, ow + n), whose
 * windows span the input columns [b, b + span); valid: those inside the input, as bits from b
 * (columns left of 0 need a shift, lo > 0; past the right edge, fix); input rows up to lim can be
 * read with plain vector loads without leaving the plane. The same for every row and plane. */
typedef struct bd_pool_run {
    int64_t ow, n, b, lo, lim;
    uint64_t valid;
    int fix;
} bd_pool_run;
/* Fills r for spans up to 2 * lanes + 1 columns (at most 33) in rows of W floats, planes of
 * `plane`: plain loads read one vector (the first from the row's start when lo > 0), two, or two
 * and one column, from b. */
static inline void bd_pool_run_set(bd_pool_run *r, int64_t ow, int64_t n, int64_t b, int64_t span,
                                   int64_t W, int64_t plane, int64_t lanes) {
    const int64_t lo = b < 0 ? -b : 0, in = W - b < span ? W - b : span;
    const int64_t need = b + (span > 2 * lanes ? 2 * lanes + 1 : span > lanes ? 2 * lanes : lanes);
    const int64_t reach = need > lanes ? need : lanes; /* the plain loads' end in the row */
    r->ow = ow, r->n = n, r->b = b, r->lo = lo;
    r->lim = plane >= reach ? (plane - reach) / W : -1;
    r->valid = in > lo ? ((1ull << in) - 1ull) & ~((1ull << lo) - 1ull) : 0;
    r->fix = in < span;
}
/* Max pooling of planes [c0, c1) (x, y: plane 0), output rows [oh0, oh1), over the column runs
 * of ru: the vector kernels' bd_f32_maxpool2d_tile. */
typedef void (*bd_maxpool_rows_fn)(const bd_pool2d_shape *s, const float *x, float *y, int64_t c0,
                                   int64_t c1, int64_t oh0, int64_t oh1, const bd_pool_run *ru,
                                   int64_t nru);
/* Column stride 2, or unit strides with windows up to 3 rows high; windows 1 to 3 columns wide,
 * at most 15 columns of padding on the left. */
static inline int bd_maxpool_rows_ok(const bd_pool2d_shape *s) {
    return (s->stride_w == 2 || (s->stride_w == 1 && s->stride_h == 1 && s->KH <= 3)) &&
           s->KW >= 1 && s->KW <= 3 && s->pad_left < 16;
}

/* Copies a P x M matrix (rows ldi apart) transposed: out[m * ldo + p] = in[p * ldi + m]. */
typedef void (*bd_transpose_fn)(const float *in, int64_t ldi, float *out, int64_t ldo, int64_t P,
                                int64_t M);

/* One instruction set's kernels and cache blocking. */
typedef struct bd_gemm_kernel {
    const char *name;
    bd_kernels_isa isa;
    int mr, nr;          /* register tile */
    int64_t kc, mc, nc;  /* cache blocking (mc a multiple of mr, nc of nr) */
    int64_t nc_packed_a; /* nc when A is pre-packed (no A packing to amortise: B block in L2) */
    bd_ukr_fn ukr;
    bd_ukr_fn ukr_half; /* columns [0, NR/2) only (same panels), or NULL */
    bd_dw_fn dw;        /* depthwise rows, where conv8 is NULL */
    int partial_cols;   /* ukr/ukr_half store bd_ukr_epi.cols < NR columns themselves (masked) */
    bd_ukr_direct_fn ukr_direct; /* or NULL (conv2d.c's direct_tile: NR == 32 only) */
    bd_conv8_fn conv8;           /* 8 output channels in the lanes (replaces dw), or NULL */
    bd_conv8d_fn conv8d;         /* direct, conv8d_lanes output channels in the lanes, or NULL */
    int a_in_place;              /* ukr/ukr_half honour bd_ukr_epi.lda (A unpacked) */
    int conv8d_lanes;            /* 8 or 16: conv8d's output block (BD_PACK_CONV8's lanes) */
    int conv8_dw_lanes;          /* 8 or 16: the channels conv8 takes at once when depthwise */
    bd_dw_planes_fn dw_planes;   /* depthwise where bd_dw_planes_ok (before conv8), or NULL */
    bd_conv_planes_fn conv_planes; /* where bd_conv_planes_ok (BD_PACK_PLANES), or NULL */
    bd_maxpool_rows_fn maxpool_rows; /* where bd_maxpool_rows_ok, or NULL */
    int maxpool_lanes;               /* maxpool_rows' outputs per run (bd_pool_run.n) */
    bd_transpose_fn transpose;       /* out[m * ldo + p] = in[p * ldi + m], or NULL */
} bd_gemm_kernel;

extern const bd_gemm_kernel bd_f32_gemm_kernel_portable;
#if BD_KERNELS_X86
extern const bd_gemm_kernel bd_f32_gemm_kernel_avx2;
extern const bd_gemm_kernel bd_f32_gemm_kernel_avx512;
#endif

/* The kernel of the current instruction set / of a given one (NULL when unsupported). */
const bd_gemm_kernel *bd_gemm_kernel_current(void);
const bd_gemm_kernel *bd_gemm_kernel_for(bd_kernels_isa isa);

/* The portable depthwise row kernel, and the 8-lane convolutions (AVX2, also taken by AVX-512). */
void bd_f32_dwconv_portable(const bd_dw_job *job);
#if BD_KERNELS_X86
void bd_f32_conv8_avx2(const bd_conv8_job *job);
void bd_f32_conv8_avx512(const bd_conv8_job *job);
void bd_f32_conv8d_avx2(const bd_conv8d_job *job);
void bd_f32_conv16d_avx512(const bd_conv8d_job *job);
void bd_f32_dw_planes_avx512(const bd_dw_planes_job *job);
void bd_f32_conv_planes_avx2(const bd_conv_planes_job *job);
void bd_f32_conv_planes_avx512(const bd_conv_planes_job *job);
void bd_f32_maxpool_rows_avx2(const bd_pool2d_shape *s, const float *x, float *y, int64_t c0,
                              int64_t c1, int64_t oh0, int64_t oh1, const bd_pool_run *ru,
                              int64_t nru);
void bd_f32_maxpool_rows_avx512(const bd_pool2d_shape *s, const float *x, float *y, int64_t c0,
                                int64_t c1, int64_t oh0, int64_t oh1, const bd_pool_run *ru,
                                int64_t nru);
void bd_f32_transpose_avx2(const float *in, int64_t ldi, float *out, int64_t ldo, int64_t P,
                           int64_t M);
void bd_f32_transpose_avx512(const float *in, int64_t ldi, float *out, int64_t ldo, int64_t P,
                             int64_t M);
#endif

/* ---- bfloat16 GEMM (gemm_bf16.c) ------------------------------------------------------------ */

/* f rounded to bfloat16, to nearest even (a NaN stays a NaN). */
uint16_t bd_bf16_round(float f);
/* A pointwise convolution's product in bfloat16 (conv2d.c, BD_PACK_CONV_BF16): rows [m_lo, m_hi)
 * of C (row stride ldc) = A (rows of bfloat16 pairs, lda words apart, from pack time, with 12
 * zero rows after the last: a tile reads 12) times the N columns of B (K rows ldb apart, floats
 * rounded as they are packed), + bias_m, then act. pre_a: NULL, or bd_f32_conv2d_tile_pre's
 * prologue on B's rows (row k read as x * pre_a[k] + pre_b[k], then max(0, .) where pre_relu;
 * NaN kept), applied before the rounding. */
void bd_bf16_gemm_rows(const uint32_t *a, int64_t lda, int64_t m_lo, int64_t m_hi, const float *b,
                       int64_t ldb, int64_t N, int64_t K, const float *pre_a, const float *pre_b,
                       int pre_relu, float *c, int64_t ldc, const float *bias_m, int act,
                       float act_min, float act_max, void *scratch);
/* Its scratch: one B panel of BF16_KC deep (and alignment). */
enum { BD_BF16_ROWS_SCRATCH = 256 * 32 * 2 + 64 };
#if BD_KERNELS_X86
/* gemm_bf16.c's A panels from rows [0, rows) of a row-major A, depth [k0, k0 + kc) (kc even),
 * on AVX512_BF16's conversion: row i's kc / 2 words at dst + i kc / 2, rows up to a multiple of
 * 12 (zeros past `rows`). */
void bd_bf16_pack_a_avx512(const float *A, int64_t lda, int64_t rows, int64_t K, int64_t k0,
                           int64_t kc, uint32_t *dst);
/* The 12 x 32 tile of C from kp pairs of k: a: 12 rows of words (pairs), row r at a + r lda, b:
 * the B panel at the block's first pair; stores m rows and ep->cols columns through the
 * epilogue. */
void bd_bf16_ukr_avx512(int64_t kp, const uint32_t *a, int64_t lda, const uint16_t *b, float *c,
                        int64_t ldc, int m, const bd_ukr_epi *ep);
/* gemm_bf16.c's B panel of 32 columns [j0, j0 + 32) and depth [k0, k0 + kc) (kc even; k past K
 * zero; the columns past n are never stored) from a row-major B (row k at b + k ldb), through
 * bd_bf16_gemm_rows' prologue where pre_a is not NULL, on AVX512_BF16's conversion. */
void bd_bf16_pack_b_avx512(const float *b, int64_t ldb, int64_t K, int64_t n, int64_t j0,
                           int64_t k0, int64_t kc, const float *pre_a, const float *pre_b,
                           int pre_relu, uint16_t *dst);
#endif

/* ---- packed-buffer header ------------------------------------------------------------------ */

#define BD_PACK_HDR_FLOATS 16 /* 64 bytes, keeps the panels 64-byte aligned to the buffer */
enum {
    BD_PACK_A = 1,
    BD_PACK_B = 2,
    BD_PACK_CONV = 3,
    BD_PACK_DW = 4,
    BD_PACK_WINO = 5,
    BD_PACK_DECONV = 6,
    BD_PACK_GROUP8 = 7,
    BD_PACK_CONV8 = 8,
    BD_PACK_PLANES = 9,
    BD_PACK_BF16_B = 10,
    BD_PACK_CONV8_BF16 = 11,
    BD_PACK_CONV_BF16 = 12,
    BD_PACK_CONV_T = 13 /* a pointwise convolution's W^T as B panels (conv2d.c, few pixels) */
};
typedef struct bd_pack_hdr {
    uint32_t magic;
    int32_t kind;  /* BD_PACK_* */
    int32_t isa;   /* bd_kernels_isa the layout belongs to */
    int32_t tile;  /* MR (A, conv) or NR (B) */
    int64_t rows;  /* M (A), N (B), M (conv) */
    int64_t K;     /* depth; for conv: C/group*KH*KW */
    int64_t extra; /* conv: group; Winograd: the output tile m; deconv: KH*KW */
} bd_pack_hdr;
void bd_pack_hdr_write(float *packed, const bd_pack_hdr *h);
/* Reads and checks the header (magic, kind); returns the kernel of its instruction set. */
const bd_gemm_kernel *bd_pack_hdr_read(const float *packed, int kind, bd_pack_hdr *h);

/* ---- the blocked driver ---------------------------------------------------------------------- */

/* Packs rows [i0, i0+mc) x depth [k0, k0+kc) of an A operand into MR-row panels. */
typedef void (*bd_pack_a_fn)(const void *ctx, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                             int mr, float *dst);
/* Packs depth [k0, k0+kc) x columns [j0, j0+nc) of a B operand into NR-column panels; may
 * write up to NR floats past the end of the block (the driver's scratch has that slack). */
typedef void (*bd_pack_b_fn)(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
                             int nr, float *dst);

/* A GEMM operand: either pre-packed panels (whole depth K, panel stride K*MR or K*NR, panel 0 at
 * row/column 0) or a packer called block by block. */
typedef struct bd_gemm_operand {
    const float *packed;
    bd_pack_a_fn pack_a;
    bd_pack_b_fn pack_b;
    const void *ctx;
} bd_gemm_operand;

/* Raw row-major operands and their packers. */
typedef struct bd_raw_matrix {
    const float *p;
    int64_t ld;
    int trans;
} bd_raw_matrix;
void bd_pack_a_raw(const void *ctx, int64_t i0, int64_t mc, int64_t k0, int64_t kc, int mr,
                   float *dst);
void bd_pack_b_raw(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr,
                   float *dst);

typedef struct bd_gemm_epilogue {
    const float *bias_n; /* indexed by column - n0, or NULL */
    const float *bias_m; /* indexed by row - m0, or NULL */
    int accumulate, act;
    float act_min, act_max;
} bd_gemm_epilogue;

/* C[m0:m1, n0:n1] of A*B with kernel kd; C points at element (m0, n0). Row/column indices are
 * those of the operands (a pre-packed operand's panel grid starts at index 0). */
void bd_gemm_run(const bd_gemm_kernel *kd, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                 int64_t K, const bd_gemm_operand *a, const bd_gemm_operand *b, float *C, int64_t ldc,
                 const bd_gemm_epilogue *ep, void *scratch);
/* Scratch floats bd_gemm_run needs with kernel kd for an (up to) M x N x K problem; a_packed:
 * only for calls whose A operand is pre-packed. */
size_t bd_gemm_scratch_floats(const bd_gemm_kernel *kd, int64_t M, int64_t N, int64_t K,
                              int a_packed);
/* The same bound over every instruction set, in bytes. */
size_t bd_gemm_scratch_bytes_all(int64_t M, int64_t N, int64_t K, int a_packed);

/* ---- Winograd convolutions (winograd.c) ------------------------------------------------------ */

/* 3x3, unit strides and dilations, one group: what bd_conv2d_shape.winograd may be set for. */
int bd_wino_shape_ok(const bd_conv2d_shape *s);
/* The transformed weights: (m+2)^2 matrices M x C, each packed as an A operand of MR-row
 * panels. */
size_t bd_wino_packed_floats(const bd_conv2d_shape *s, int mr);
void bd_wino_pack(const bd_conv2d_shape *s, const float *w, float *dst, int mr);
/* Scratch for tiles of up to `rows` output rows, a bound for every instruction set. */
size_t bd_wino_scratch_floats(const bd_conv2d_shape *s, int64_t rows);
void bd_wino_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s, const float *x,
                  const float *upacked, const float *bias, float *y, int64_t m_lo, int64_t m_hi,
                  int64_t oh0, int64_t oh1, int act, float act_min, float act_max, void *scratch);

/* Scalar activation with NaN passed through. */
static inline float bd_act_apply(float v, int act, float lo, float hi) {
    if (act == BD_ACT_RELU) return v < 0.0f ? 0.0f : v;
    if (act == BD_ACT_CLIP) return v < lo ? lo : (v > hi ? hi : v);
    if (act == BD_ACT_SILU) return v / (1.0f + expf(-v));
    if (act == BD_ACT_HARD_SWISH) {
        float t = v * (1.0f / 6.0f) + 0.5f;
        return v * (t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t));
    }
    if (act == BD_ACT_GELU) return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    return v;
}

/* The activation over a row, its choice made once: the common ones compile to vector min/max,
 * where a per-element dispatch (with a libm call on one of its paths) keeps a loop scalar. */
static inline __attribute__((always_inline)) void bd_act_apply_row(float *v, int64_t n, int act,
                                                                   float lo, float hi) {
    if (act == BD_ACT_NONE) return;
    if (act == BD_ACT_RELU) {
        for (int64_t i = 0; i < n; i++) v[i] = v[i] < 0.0f ? 0.0f : v[i];
    } else if (act == BD_ACT_CLIP) {
        for (int64_t i = 0; i < n; i++) v[i] = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
    } else {
        for (int64_t i = 0; i < n; i++) v[i] = bd_act_apply(v[i], act, lo, hi);
    }
}

/* The vector SiLU below computes exp(t) as 2^n * p(r), t = n ln2 + r, |r| <= ln2/2, with
 * p(r) = 1 + r + r^2 (P3 + r (P2 + r (P1 + r P0))), a degree-5 minimax fit of relative error
 * 1.05e-7 (1.9e-7 in float arithmetic; Cephes' degree-7 expf took two more FMAs a vector for
 * 1.1e-7, and the FMAs are what the SiLU epilogue is bound by on a Zen 4 core), after clamping
 * t = -x to [-87, 80], that is x to [-80, 87] (NaN kept: min/max return their second operand on
 * NaN): e^-87 is still a normal float, and past 80 the result is 0 to within 1e-33. The vector
 * code reduces x itself (exp_neg16: s = x + n ln2 = -r, odd coefficients negated), which rounds
 * exactly as the reduction of t does with one op fewer. The division becomes a reciprocal
 * estimate refined by one Newton step. */
#define BD_EXP_P0 8.3125261839e-3f
#define BD_EXP_P1 4.1890115611e-2f
#define BD_EXP_P2 1.6667114462e-1f
#define BD_EXP_P3 4.9999231775e-1f
#define BD_LN2_HI 0.693359375f
#define BD_LN2_LO (-2.12194440e-4f)

/* The vector GELU's erf (the generated code's too): below 0.5 its Taylor series to x^9, above it
 * Abramowitz and Stegun 7.1.26, 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^-x^2 with
 * t = 1 / (1 + p x) (absolute error 1.5e-7), the reciprocal refined by one Newton step. */
#define BD_SQRT1_2 0.7071067811865476f /* 1 / sqrt 2 */
#define BD_ERF_T1 1.1283791671f
#define BD_ERF_T3 (-0.3761263890f)
#define BD_ERF_T5 0.1128379167f
#define BD_ERF_T7 (-0.0268661706f)
#define BD_ERF_T9 0.0052239776f
#define BD_ERF_P 0.3275911f
#define BD_ERF_A1 0.254829592f
#define BD_ERF_A2 (-0.284496736f)
#define BD_ERF_A3 1.421413741f
#define BD_ERF_A4 (-1.453152027f)
#define BD_ERF_A5 1.061405429f

#endif /* BD_KERNELS_INTERNAL_H */
