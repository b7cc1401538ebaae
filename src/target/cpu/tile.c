/* tile.c — the CPU target's tiling pass: for every nest, the tile (its block grid) and the choices
 * that go with it on this target: which convolutions and matrix products run on the packed-weight
 * micro-kernels of kernels/, the per-thread scratch their bodies need, the row-merged layout of
 * batched products.
 *
 * Tilings aim at enough blocks for every thread (dynamic scheduling balances uneven ones) while
 * keeping each block big enough that the micro-kernels run at speed. Convolutions and float32
 * matrix products that run on kernels/ pick their tile by a small search over a cost model (the
 * register-tile work, the packing each block repeats, a dispatch cost), scored over 1 to 8
 * threads; depthwise convolutions cut channels; elementwise, data-movement and reduction nests
 * keep trailing dims whole up to a few thousand elements. Every tile is set through
 * bd_nest_set_tile, which keeps the nest's tile-dependent access maps right; dims a body must see
 * whole (bd_nest.whole) are never cut. */
#include <string.h>

#include "target/cpu/target.h"

/* Work (multiply-adds) worth one block, and the most blocks one op is cut into (generated-loop
 * convolutions, matrix products); enough for a few threads with dynamic scheduling, few enough
 * that each block keeps the micro-kernels busy. */
enum {
    CONV_BLOCK_WORK = 1 << 20,
    CONV_MAX_BLOCKS = 16,
    MM_BLOCK_WORK = 1 << 20,
    MM_MAX_BLOCKS = 16
};

static int64_t imin64(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t imax64(int64_t a, int64_t b) {
    return a > b ? a : b;
}
static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}
static int64_t round_up(int64_t a, int64_t m) {
    return ceil_div(a, m) * m;
}

static const bd_value *operand_value(const bd_graph *g, const bd_nest *n, int k) {
    return bd_graph_value((bd_graph *)g, n->operands[k].value);
}

/* The work of one block with tile sizes `tile` (product) times `per_elem`. */
static int64_t tile_work(const bd_nest *nest, const int64_t *tile, int64_t per_elem) {
    int64_t w = per_elem;
    for (int i = 0; i < nest->n_iter; i++)
        w *= tile[i];
    return w;
}

static int64_t tile_blocks(const bd_nest *nest, const int64_t *tile) {
    int64_t b = 1;
    for (int i = 0; i < nest->n_iter; i++)
        b *= ceil_div(nest->extent[i], tile[i] ? tile[i] : 1);
    return b;
}

/* An upper bound of bd_f32_gemm_scratch_bytes(M, N, K) over every instruction set of kernels/
 * (whose cache blocking keeps kc <= 512, nc <= 4096, mc <= 512 and a register tile of at most
 * 32 x 32). The generated create() checks the real figure against the scratch it allocated. */
static int64_t gemm_scratch_bound(int64_t M, int64_t N, int64_t K) {
    int64_t kc = imin64(imax64(K, 0), 512), nc = imin64(imax64(N, 1), 4096) + 64;
    int64_t mc = imin64(imax64(M, 1), 512) + 64;
    return (kc * nc + mc * kc + 32 * 32 + 64) * 4 + 64;
}

/* An ATTENTION nest (fuse/attention.c): a block is a band of rows at one batch index, as many
 * as keep its scores (rows x the first product's columns) within ATTENTION_SCORE_FLOATS, about
 * half a core's L2, then halved (in whole register tiles of 12 rows) while there are fewer than
 * two blocks a thread. Each block packs both products' B operands again, so bands of 48 rows
 * (BERT's 128 rows in 3) took 1.07x the four unfused nests' time; whole heads, level (BERT) to
 * 0.96x (ViT). Scratch:
 * the scores (in 64-byte lines of their own) and either product's GEMM blocks. */
enum { ATTENTION_SCORE_FLOATS = 1 << 17 };
bool bd_cpu_tile_attention(const bd_graph *g, bd_nest *n, int threads) {
    const bd_attention_params *ap = &n->params.attention;
    int r = n->n_iter;
    int64_t tile[BD_MAX_RANK], cols = ap->qk.N, L = n->extent[r - 2], batches = 1;
    for (int i = 0; i < r; i++)
        tile[i] = 1;
    for (int i = 0; i < r - 2; i++)
        batches *= n->extent[i];
    int64_t rows = imin64(L, imax64(12, ATTENTION_SCORE_FLOATS / imax64(cols, 1) / 12 * 12));
    while (rows > 12 && batches * ceil_div(L, rows) < 2 * threads)
        rows = imax64(12, round_up(rows / 2, 12));
    tile[r - 2] = rows;
    tile[r - 1] = n->extent[r - 1];
    bd_nest_set_tile(g, n, tile);
    n->scratch_bytes = (rows * cols * 4 + 63) / 64 * 64 +
                       imax64(gemm_scratch_bound(rows, cols, ap->qk.K),
                              gemm_scratch_bound(rows, ap->pv.N, ap->pv.K));
    return true;
}

/* The scratch of kernels/'s pointwise convolution read in place (pointwise_scratch_floats): two
 * offsets and a 32-float panel row per input channel of the group, and alignment. */
static int64_t pointwise_scratch_bound(int64_t Cg) {
    return (32 + 36 * Cg) * 4 + 64;
}

/* The scratch of kernels/'s pointwise convolution of at most 64 pixels computed transposed
 * (conv2d.c transposed_shape): the product, its rows padded to an odd number of 64-byte lines,
 * and the GEMM's A block and edge tile. */
static int64_t transposed_pointwise_scratch_bound(int64_t P, int64_t M, int64_t C) {
    return (16 + P * (round_up(M, 16) | 16)) * 4 + gemm_scratch_bound(P, 0, C);
}

/* An upper bound of the scratch of kernels/'s direct (im2col-free) stride-1 convolution of a
 * tile of `rows` output rows: the tap offsets of the Cg*KH*KW depth and the block's zero-padded
 * input rows. */
static int64_t direct_conv_scratch_bound(int64_t Cg, int64_t rows, int64_t OW, int64_t KH,
                                         int64_t KW, int64_t dh, int64_t dw) {
    int64_t rows_in = rows + (KH - 1) * dh, wp = OW + (KW - 1) * dw;
    return (16 + round_up(2 * Cg * KH * KW, 16) + Cg * rows_in * wp + 64) * 4 + 64;
}

/* An upper bound of the scratch of the kernels' lane convolutions (depthwise with 8 or 16
 * channels in the lanes, and groups of at most 8 inputs and a multiple of 8 outputs): a chunk of
 * up to 32 output rows' input rows with the channels interleaved, one output row, the taps'
 * weights, spare pixels. */
static int64_t conv8_scratch_bound(int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                                   int64_t dh, int64_t dw) {
    int64_t rows_in = 31 * sh + (KH - 1) * dh + 1, cols = (OW - 1) * sw + (KW - 1) * dw + 1;
    return (64 + 16 * (KH * KW + round_up(OW, 8) + rows_in * cols + 8 + 7 * sw)) * 4 + 64;
}

/* The scratch of the kernels' direct convolution with 8 or 16 output channels in the lanes (a
 * multiple of 8 output channels per group, on AVX2 and AVX-512), as kernels/bd_kernels_internal.h
 * sizes it: a chunk of output rows' input rows interleaved (Cg8: the group's input channels
 * rounded up to 8; rows chosen to keep them near 128 KB), and two blocks of up to 16 output
 * channels for the chunk's pixels; bf16 (--precision bf16): the rows again in bfloat16. A
 * strided 1x1 convolution may also be laid out as the stride-1 one on the pixels it reads
 * (bd_conv8d_subsampled): the larger of the two. */
static int64_t conv8d_scratch_bound(int64_t Cg8, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                                    int64_t sw, int64_t dh, int64_t dw, bool bf16) {
    int64_t cols = (OW - 1) * sw + (KW - 1) * dw + 1, halo = (KH - 1) * dh + 1;
    int64_t rows = imin64(16, imax64(1, (32768 / imax64(Cg8 * cols, 1) - halo) / sh + 1));
    int64_t out_pixels = (rows * cols + 23) / 24 * 24 + 8;
    int64_t in = Cg8 * ((rows - 1) * sh + halo) * cols;
    int64_t bytes = (16 + in + 64 + 32 * out_pixels + (bf16 ? in / 2 + 32 : 0)) * 4 + 64;
    if (KH == 1 && KW == 1 && (sh > 1 || sw > 1))
        bytes = imax64(bytes, conv8d_scratch_bound(Cg8, OW, 1, 1, 1, 1, 1, 1, bf16));
    return bytes;
}

/* An upper bound of bd_f32_conv2d_scratch_bytes for a depthwise convolution: the larger of the
 * row kernels' (input rows for a chunk of up to 32 output rows, split by column stride, plus the
 * tap table) and the 8-lane one's. */
static int64_t dwconv_scratch_bound(int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                                    int64_t dh, int64_t dw) {
    int64_t row_len = round_up(OW, 16) + (KW - 1) * dw / sw + 16;
    int64_t rows_in = 31 * sh + (KH - 1) * dh + 1;
    int64_t rows = (64 + round_up(2 * KH * KW, 16) + rows_in * sw * row_len) * 4 + 64;
    return imax64(rows, conv8_scratch_bound(OW, KH, KW, sh, sw, dh, dw));
}

/* Tiles a convolution output [N, M, spatial...]: one batch item per block, whole trailing spatial
 * axes, then output rows (first spatial axis) and channel tiles cut until the op has its blocks.
 * Every block re-packs (im2col) the input columns it reads, once for all its channels, so rows
 * are cut first while a block keeps `min_cols` output pixels, channels (in multiples of `mstep`)
 * only down to `min_m`, and rows again down to 32 pixels: past that the op gets fewer blocks. */
static void conv_tiling(const bd_graph *g, bd_nest *nest, int64_t work_per_out, int64_t mstep,
                        int64_t min_m, bool cut_rows, int64_t min_cols) {
    int64_t tile[BD_MAX_RANK];
    int r = nest->n_iter;
    for (int i = 0; i < r; i++)
        tile[i] = nest->extent[i];
    tile[0] = 1;
    int64_t want =
        imin64(CONV_MAX_BLOCKS, tile_work(nest, nest->extent, work_per_out) / CONV_BLOCK_WORK);
    int64_t inner = 1; /* output pixels of one row of the first spatial axis */
    for (int i = 3; i < r; i++)
        inner *= nest->extent[i];
    while (tile_blocks(nest, tile) < want) {
        int64_t rows = tile[2], mt = tile[1], half_rows = ceil_div(rows, 2);
        int64_t half_m = round_up(ceil_div(mt, 2), mstep);
        if (cut_rows && rows > 1 && half_rows * inner >= min_cols)
            tile[2] = half_rows;
        else if (half_m < mt && half_m >= min_m)
            tile[1] = half_m;
        else if (cut_rows && rows > 1 && half_rows * inner >= imin64(min_cols, 32))
            tile[2] = half_rows;
        else
            break;
    }
    bd_nest_set_tile(g, nest, tile);
}

/* Thread-time of running `blocks` blocks of `cost` each on T threads, summed over T = 1, 2, 4, ...
 * up to `threads` (bd_program.tile_threads: the machine's CPUs, at most 8, when it builds for
 * itself): what a tiling costs whether the machine is idle, busy or as wide as it can be
 * (dynamic scheduling, equal blocks: the slowest thread runs ceil(blocks / T) of them). Sizing
 * blocks for 8 threads on a 2-core machine kept ResNet-18's 28x28 and smaller layers off
 * Winograd (too few blocks), at 1.5x the single-thread time. */
static double spread_cost(int64_t blocks, double cost, int threads) {
    double total = 0;
    for (int t = 1; t == 1 || t <= threads; t *= 2)
        total += (double)t * (double)ceil_div(blocks, t) * cost;
    return total;
}

/* How many thread counts spread_cost sums. */
static int spread_counts(int threads) {
    int n = 1;
    for (int t = 2; t <= threads; t *= 2) n++;
    return n;
}

/* A convolution's tile: one image, `channels` output channels, `rows` output rows (2-D), the
 * rest whole. */
static void set_conv_tile(const bd_graph *g, bd_nest *nest, int64_t channels, int64_t rows) {
    int64_t tile[BD_MAX_RANK];
    for (int i = 0; i < nest->n_iter; i++)
        tile[i] = nest->extent[i];
    tile[0] = 1;
    tile[1] = channels;
    if (nest->n_iter > 3) tile[2] = rows;
    bd_nest_set_tile(g, nest, tile);
}

/* Which of kernels/'s paths (AVX-512) a convolution's tiles run on, for their cost. */
typedef enum {
    CONV_PATH_GEMM,
    CONV_PATH_LANES16,           /* the 16-lane direct kernel */
    CONV_PATH_LANES16_POINTWISE, /* the same, on a 1x1 convolution */
    CONV_PATH_TRANSPOSED,        /* the transposed pointwise product */
} conv_path;

/* A 1x1 convolution's path, as kernels/conv2d.c chooses it (conv8d_shape, transposed_shape,
 * is_pointwise_transposed): the 16-lane direct kernel for reductions of at most 196 pixels and
 * 512 outputs, and for images of at most 64 pixels and 256 or more inputs; the transposed
 * product X^T W^T for images of at most 64 pixels whose 32-column tiles would waste a fifth of
 * the work or more, where the GEMM would take the shape or the image is one pixel, and no
 * BatchNormalization is absorbed before it (`pre`); else the GEMM. Costed as GEMMs, MobileNetV2's
 * 7x7 layers on both paths were cut into rows of 4 and 3 (28 pixels fill one GEMM tile of 32
 * columns, 49 take two): one thread idle a seventh of the layer, and both streaming all of W. */
static conv_path pointwise_path(const bd_nest *nest, int64_t C, int64_t M, bool pre) {
    int64_t P = 1;
    for (int i = 2; i < nest->n_iter; i++)
        P *= nest->extent[i];
    const bool wide_few_pixels = P <= 64 && C >= 256;
    const bool lanes16 = M % 8 == 0 && (wide_few_pixels || (M <= 2 * C && P <= 196 && M <= 512));
    const int64_t r = P % 32, columns = P - r + (r == 0 ? 0 : r <= 16 ? 16 : 32);
    const bool transposed = !pre && P <= 64 && 5 * columns >= 6 * P && (P == 1 || !lanes16);
    if (transposed) return CONV_PATH_TRANSPOSED;
    return lanes16 ? CONV_PATH_LANES16_POINTWISE : CONV_PATH_GEMM;
}

/* Tiling of a GEMM-based convolution (packed weights, not depthwise) by a small search over
 * (channel tile, row tile), in cycles of the AVX-512 kernel: a block computes mt x K x cols
 * multiply-adds, 32 a cycle on register tiles of 12 rows x 32 columns (partial tiles cost whole
 * ones, but the last tile of a row of columns may be a half of 16); it re-packs (implicit
 * im2col) its K x cols input columns, once per group it meets, at about 0.8 cycle an element
 * (measured on ResNet-18); and it pays a fixed dispatch cost. The winner minimises spread_cost.
 * Channel tiles are whole groups when the convolution is grouped. `path` says which kernel runs
 * the tiles (pointwise_path). The 16-lane direct convolution's granules are 16 channels x 8
 * pixels and it packs no im2col; its tile is chosen by that (a 7x7 image split
 * in rows of 4 and 3 leaves one thread idle an eighth of the layer, 16 channels at a time do
 * not), while the cost returned, which wino_tiling compares with Winograd's (fitted against it),
 * stays the GEMM's, in whole tiles of 32 columns as when it was fitted. Counting the half tiles
 * moves SqueezeNet's 512 -> 1000 13x13 classifier from rows of 7 and 6 (91 and 78 pixels: one
 * thread idle a sixth of the layer) to 504 and 496 channels. */
static double conv_gemm_tiling(const bd_graph *g, bd_nest *nest, int64_t K, int64_t Mg,
                               int64_t group, conv_path path, int threads) {
    const bool lanes16 = path == CONV_PATH_LANES16 || path == CONV_PATH_LANES16_POINTWISE;
    const bool transposed = path == CONV_PATH_TRANSPOSED;
    /* On 1x1 layers the 16-lane kernel's costs count, as measured there: its two blocks of 16
     * channels a step (MobileNetV2's 960 -> 160 7x7 layers took 5-9% longer in tiles of 80
     * channels than of 160), and the input interleaved again by every channel tile at the rate
     * that 0.2 a product is at 3x3, 1.8 an input value (SqueezeNet's 384 -> 48 13x13 squeezes
     * took 1.1-1.4x as long in tiles of 24 channels as in rows of 7 and 6). */
    const bool pointwise16 = path == CONV_PATH_LANES16_POINTWISE;
    const int64_t lanes_step = pointwise16 ? 32 : 16;
    const double interleave = pointwise16 ? 1.8 : 0.2;
    int64_t M = nest->extent[1], OH = nest->n_iter > 3 ? nest->extent[2] : 1;
    int64_t inner = 1;
    for (int i = nest->n_iter > 3 ? 3 : 2; i < nest->n_iter; i++)
        inner *= nest->extent[i];
    int64_t N = nest->extent[0];
    int64_t best_m = M, best_r = OH, best16_m = M, best16_r = OH, best_t_m = M, best_t_r = OH;
    double best = -1, best_half = -1, best16 = -1, best_t = -1;
    for (int64_t km = 1; km <= 16; km++) {
        int64_t mt = ceil_div(M, km);
        if (group > 1)
            mt = round_up(mt, Mg);
        else if (km > 1 && transposed) /* whole panels of W^T */
            mt = round_up(mt, 32);
        else if (km > 1)
            mt = mt % 16 == 0 ? mt : round_up(mt, 12);
        if (mt > M || (km > 1 && ceil_div(M, mt) != km)) continue;
        for (int64_t kr = 1; kr <= OH; kr++) {
            int64_t rows = ceil_div(OH, kr);
            if (ceil_div(OH, rows) != kr) continue;
            int64_t cols = rows * inner;
            int64_t m_eff = group > 1 ? ceil_div(mt, Mg) * round_up(Mg, 12) : round_up(mt, 12);
            double gemm = (double)m_eff * (double)K * (double)round_up(cols, 32) / 32.0;
            double gemm_half = (double)m_eff * (double)K * (double)round_up(cols, 16) / 32.0;
            double pack = 0.8 * (double)K * (double)cols * (double)(group > 1 ? mt / Mg : 1);
            double total = spread_cost(N * km * kr, gemm + pack + 20000.0, threads);
            double total_half = spread_cost(N * km * kr, gemm_half + pack + 20000.0, threads);
            if (best < 0 || total < best * 0.999) best = total;
            if (best_half < 0 || total_half < best_half * 0.999) {
                best_half = total_half;
                best_m = mt;
                best_r = rows;
            }
            double direct16 =
                (double)round_up(mt, lanes_step) * (double)K * (double)round_up(cols, 8) / 32.0 +
                interleave * (double)K * (double)cols + 20000.0;
            double total16 = spread_cost(N * km * kr, direct16, threads);
            if (lanes16 && (best16 < 0 || total16 < best16 * 0.999)) {
                best16 = total16;
                best16_m = mt;
                best16_r = rows;
            }
            /* transposed: the block's pixels are the register tiles' rows (a short last one
             * costs its rows), its channels the columns in halves of 16; W^T streams once a
             * block (2 bytes a cycle, as Winograd's weights), X^T is packed (as the GEMM's B)
             * and the product copied transposed into the planes (estimated, not fitted) */
            double product_t = (double)cols * (double)K * (double)round_up(mt, 16) / 32.0 +
                               2.0 * (double)K * (double)mt + 0.8 * (double)K * (double)cols +
                               0.25 * (double)cols * (double)mt + 20000.0;
            double total_t = spread_cost(N * km * kr, product_t, threads);
            if (transposed && (best_t < 0 || total_t < best_t * 0.999)) {
                best_t = total_t;
                best_t_m = mt;
                best_t_r = rows;
            }
        }
    }
    set_conv_tile(g, nest, lanes16 ? best16_m : transposed ? best_t_m : best_m,
                  lanes16 ? best16_r : transposed ? best_t_r : best_r);
    return best;
}

/* Winograd F(m x m, 3x3) for a 3x3 stride-1 convolution (kernels/winograd.c): what a tile of
 * mt channels x rows costs, in conv_gemm_tiling's cycles, fitted (to within 15%) to ResNet-18's
 * layers run in the model on one thread. The tile's input is cut into P patches (computed in
 * lanes of 16). Each of the (m+2)^2 products, mt x C by C x P, runs at 0.7 of the kernel's peak
 * or at the rate its transformed weights stream from memory (2 bytes a cycle: each is used P
 * times and a model's weights outgrow the caches), whichever is slower. Transforming the input
 * costs 1.5 cycles an element, the output (with its scattered stores) 3. */
typedef struct wino_geom {
    int64_t T, P, Pp;
} wino_geom;

static wino_geom wino_geometry(int64_t m, int64_t rows, int64_t OW) {
    wino_geom w;
    w.T = (m + 2) * (m + 2);
    w.P = ceil_div(rows, m) * ceil_div(OW, m);
    w.Pp = round_up(w.P, 16);
    return w;
}

static double wino_tile_cost(int64_t m, int64_t mt, int64_t C, int64_t rows, int64_t OW,
                             double other) {
    const wino_geom w = wino_geometry(m, rows, OW);
    double compute = (double)round_up(mt, 12) * (double)C * (double)w.Pp / 32.0 / 0.7;
    double stream = 4.0 * (double)mt * (double)C / 2.0;
    double gemm = (double)w.T * (compute > stream ? compute : stream);
    double transforms = (double)w.T * (double)w.Pp * (1.5 * (double)C + 3.0 * (double)mt);
    return gemm + other * (transforms + 20000.0);
}

/* What conv_gemm_tiling leaves out of a direct convolution's cost, for comparing it with
 * Winograd's: its M x K weights streaming from memory once a run, at about 1.3 bytes a cycle
 * (fitted on the same layers), counted for each thread count spread_cost sums. */
static double direct_weight_cost(int64_t M, int64_t K, int threads) {
    return spread_counts(threads) * 4.0 * (double)M * (double)K / 1.3;
}

/* An upper bound of kernels/'s Winograd scratch (bd_wino_scratch_floats) for tiles of `rows`
 * output rows: its output patch tables, input pass buffers (phases of lane-rounded patch rows),
 * transformed input, products, 64-byte alignment of each, and the GEMM driver's blocks. */
static int64_t wino_scratch_bound(int64_t m, int64_t C, int64_t M, int64_t rows, int64_t OW) {
    const wino_geom w = wino_geometry(m, rows, OW);
    int64_t a = m + 2, rows_in = ceil_div(rows, m) * m + 2, twr = round_up(ceil_div(OW, m), 16);
    int64_t floats = 2 * w.Pp + w.Pp / 2 + 16 + (rows_in + 1) * m * (twr + 16) + rows_in * a * twr +
                     48 + w.T * C * (w.Pp + 16) + 16 + w.T * M * w.Pp + 16 + 16 + 7 * 16;
    return floats * 4 + gemm_scratch_bound(M, w.Pp, C);
}

/* When a Winograd tiling (m = 2 or 4, row tiles of whole patch rows searched as
 * conv_gemm_tiling does) beats `direct` (conv_gemm_tiling's best), take it: cp->winograd and
 * the tile. A tile keeps every output channel: each channel tile would transform and pack the
 * whole input again (measured 1.6x to 2x slower per layer than one tile on ResNet-18, beyond
 * what the cost model predicts). Convolutions with fewer than WINO_MIN_CHANNELS input or output
 * channels stay direct: the transforms are then most of the work, and the cost model was fitted
 * only above (DenseNet-121's 128 -> 32 convolutions ran 15% slower by Winograd).
 *
 * Where the CPU's multiply-adds are 256 bits wide (fma_half: AVX2 without AVX-512, or Zen 4's
 * AVX-512 in two halves), the products take twice the cycles of the transforms and the dispatch,
 * so those count half (`other`), and convolutions from 16 channels are weighed: on a Zen 4 core
 * SqueezeNet's 16 -> 64 expand at 55x55 took 0.418 ms by F(4x4,3x3) against 0.577 direct, its
 * 32 -> 128 at 27x27 0.329 against 0.525, in the model; on a Zen 3 core (AVX2) 0.58 against
 * 0.68 and 0.45 against 0.63, and DenseNet-121's 128 -> 32 at 56x56 1.78 against 2.80. The
 * weights' streaming from memory keeps its weight: halving it too took ResNet-18's 512-channel
 * 7x7 layers to Winograd in one block, and the model to 0.94x of its time at 1 thread but 1.14x
 * at 2. */
enum { WINO_MIN_CHANNELS = 64, WINO_MIN_CHANNELS_FMA_HALF = 16 };
static void wino_tiling(const bd_graph *g, bd_nest *nest, int64_t C, double direct, int threads,
                        bool fma_half) {
    bd_conv_params *cp = &nest->params.conv;
    int64_t N = nest->extent[0], M = nest->extent[1], OH = nest->extent[2], OW = nest->extent[3];
    int64_t least = fma_half ? WINO_MIN_CHANNELS_FMA_HALF : WINO_MIN_CHANNELS;
    if (C < least || M < least) return;
    /* and few outputs on a small image stay direct on such a CPU too: DenseNet-121's 128 -> 32
     * convolutions took 0.192 ms by F(2x2,3x3) at 14x14 against 0.146 on the 16-lane kernel,
     * 0.077 against 0.041 at 7x7 (a Zen 4 core, in the model), while at 28x28 and 56x56 the
     * transforms paid (0.49 against 0.57 ms, 1.49 against 2.3) */
    if (fma_half && M < WINO_MIN_CHANNELS && OH * OW <= 196) return;
    double other = fma_half ? 0.5 : 1.0;
    int64_t best_m = 0, best_r = OH;
    double best = direct + direct_weight_cost(M, 9 * C, threads);
    for (int64_t m = 2; m <= 4; m += 2)
        for (int64_t kr = 1; kr <= ceil_div(OH, m); kr++) {
            int64_t rows = imin64(round_up(ceil_div(OH, kr), m), OH); /* whole patch rows */
            if (ceil_div(OH, rows) != kr) continue;
            double total = spread_cost(N * kr, wino_tile_cost(m, M, C, rows, OW, other), threads);
            if (total < best * 0.999) {
                best = total;
                best_m = m;
                best_r = rows;
            }
        }
    if (!best_m) return;
    int64_t tile[BD_MAX_RANK] = {1, M, best_r, OW};
    bd_nest_set_tile(g, nest, tile);
    cp->winograd = best_m;
}

/* A depthwise convolution's tile: whole lane blocks of channels (16 for the AVX-512 kernel's
 * lanes, which the AVX2 one's 8 divide; 8 or all below that) by output rows, by a small search: a block costs its outputs' taps, the input
 * rows it interleaves (its rows and the window's halo), and a fixed dispatch cost, spread over 1,
 * 2, ... threads (spread_cost). Cutting the channels into about work / 2^18 blocks rounded to
 * the lanes left MobileNetV2's 144-channel 28x28 layer in 3 blocks, one thread doing two of them
 * at 2 threads (72 us against onnxruntime's 39). */
static void dwconv_tiling(const bd_graph *g, bd_nest *nest, int64_t ksize, int threads) {
    const bd_conv_params *cp = &nest->params.conv;
    int64_t tile[BD_MAX_RANK];
    for (int i = 0; i < nest->n_iter; i++)
        tile[i] = nest->extent[i];
    tile[0] = 1;
    const int64_t M = nest->extent[1], lanes = M >= 16 ? 16 : M >= 8 ? 8 : M;
    const bool rows = nest->n_iter > 3; /* 2-D: rows can be cut */
    const int64_t OH = rows ? nest->extent[2] : 1, OW = nest->extent[nest->n_iter - 1];
    const int64_t sh = rows ? cp->strides[0] : 1, halo = rows ? (cp->kernel[0] - 1) * cp->dilations[0] : 0;
    const int64_t in_w = (OW - 1) * cp->strides[cp->nsp - 1] + 1;
    double best = -1;
    for (int64_t ct = lanes; ct < M + lanes; ct += lanes) {
        const int64_t cb = ceil_div(M, imin64(ct, M));
        if (ct > lanes && ceil_div(M, ct - lanes) == cb) continue; /* the smallest tile of cb blocks */
        for (int64_t kr = 1; kr <= 16 && kr <= OH; kr++) {
            const int64_t rt = ceil_div(OH, kr);
            if (ceil_div(OH, rt) != kr) continue;
            const double outputs = (double)imin64(ct, M) * (double)rt * (double)OW;
            const double prep = (double)imin64(ct, M) * (double)(rt * sh + halo) * (double)in_w;
            const double cost = outputs * (double)ksize / 16.0 + prep / 8.0 + 2000.0;
            const double total = spread_cost(nest->extent[0] * cb * kr, cost, threads);
            if (best < 0 || total < best * 0.999) {
                best = total;
                tile[1] = imin64(ct, M);
                if (rows) tile[2] = rt;
            }
        }
    }
    bd_nest_set_tile(g, nest, tile);
}

/* Tiles [batch..., M?, N?]: batches one at a time (several when each is tiny), then cuts M and N
 * until the op has its blocks. Every block packs its own rows of A (and, unless B was packed at
 * create time, its own columns of B), so with a packed B the rows are cut first (in multiples of
 * 48, a multiple of every register tile's MR) and the columns only down to 128; otherwise the
 * larger of the two is halved. */
/* (rows, columns) tile of an R x N float32 (or int8-kernel) product split into `batches`
 * independent products, by a small search like conv_gemm_tiling's: a block costs its register
 * tiles (12 x 32, int8 8 x 32; partial ones whole), packing its rows of A, packing (or, when
 * pre-packed, streaming) its columns of B, and a fixed dispatch cost. */
static void matmul_search(const bd_matmul_params *mp, int64_t R, int64_t batches, bool has_m,
                          bool has_n, int threads, int64_t *mt_out, int64_t *nt_out) {
    int64_t N = has_n ? mp->N : 1, K = imax64(mp->K, 1);
    int64_t mr = mp->i8_packed ? 8 : 12; /* the register tile's rows: int8 8 x 32, float 12 x 32 */
    if (!has_m) R = 1;
    double best = -1;
    *mt_out = R;
    *nt_out = N;
    for (int64_t km = 1; km <= 32 && km <= R; km++) {
        int64_t mt = km == 1 ? R : round_up(ceil_div(R, km), mr);
        if (ceil_div(R, mt) != km) continue;
        for (int64_t kn = 1; kn <= 32 && kn <= N; kn++) {
            int64_t nt = kn == 1 ? N : round_up(ceil_div(N, kn), 32);
            if (ceil_div(N, nt) != kn) continue;
            double gemm = (double)round_up(mt, mr) * (double)K * (double)round_up(nt, 32) / 32.0;
            double pack_a = 1.5 * (double)mt * (double)K * (double)ceil_div(nt, 2048);
            double pack_b = (mp->b_packed || mp->i8_packed ? 0.1 : 1.0) * (double)K * (double)nt;
            double total = spread_cost(batches * km * kn, gemm + pack_a + pack_b + 10000.0, threads);
            if (best < 0 || total < best * 0.999) {
                best = total;
                *mt_out = mt;
                *nt_out = nt;
            }
        }
    }
}

/* Merged rows (see bd_matmul_params): tile the R = batch x M rows as one axis. */
static void matmul_tiling_merged(const bd_graph *g, bd_nest *nest, bd_matmul_params *mp,
                                 int threads) {
    int mi = mp->m_iter;
    int64_t R = 1;
    for (int i = 0; i <= mi; i++)
        R *= nest->extent[i];
    int64_t rt, nt;
    matmul_search(mp, R, 1, true, mp->n_iter >= 0, threads, &rt, &nt);
    int64_t tile[BD_MAX_RANK];
    for (int i = 0; i < nest->n_iter; i++)
        tile[i] = nest->extent[i];
    if (mp->n_iter >= 0) tile[mp->n_iter] = nt;
    /* the longest suffix of (batch..., M) that fits in rt rows stays whole */
    int k = mi + 1;
    int64_t inner = 1;
    while (k > 0 && inner * nest->extent[k - 1] <= rt)
        inner *= nest->extent[--k];
    mp->cut = k > 0 ? k - 1 : 0;
    if (k > 0) {
        for (int i = 0; i < k - 1; i++)
            tile[i] = 1;
        tile[k - 1] = imax64(1, rt / inner);
        mp->cut_rows = inner;
    } else {
        mp->cut_rows = R / imax64(nest->extent[0], 1);
    }
    bd_nest_set_tile(g, nest, tile);
}

/* Tiles [batch..., M?, N?]: one batch per block (several when each is tiny); products on the
 * kernels (float32, int8) search their (M, N) tile, the others (generated loops) halve the larger
 * of M and N until the op has about one block per MM_BLOCK_WORK multiply-adds. */
static void matmul_tiling(const bd_graph *g, bd_nest *nest, const bd_matmul_params *mp, bool kernel,
                          int threads) {
    int64_t tile[BD_MAX_RANK];
    for (int i = 0; i < nest->n_iter; i++)
        tile[i] = nest->extent[i];
    int64_t per_batch = mp->M * mp->N * imax64(mp->K, 1), batches = 1;
    for (int i = 0; i < mp->n_batch; i++)
        tile[i] = 1;
    if (mp->n_batch > 0) {
        int last = mp->n_batch - 1;
        tile[last] = imax64(1, imin64(nest->extent[last], MM_BLOCK_WORK / imax64(per_batch, 1)));
    }
    for (int i = 0; i < mp->n_batch; i++)
        batches *= ceil_div(nest->extent[i], tile[i]);
    if (kernel) {
        int64_t mt, nt;
        matmul_search(mp, mp->M, batches, mp->m_iter >= 0, mp->n_iter >= 0, threads, &mt, &nt);
        if (mp->m_iter >= 0) tile[mp->m_iter] = mt;
        if (mp->n_iter >= 0) tile[mp->n_iter] = nt;
        bd_nest_set_tile(g, nest, tile);
        return;
    }
    int64_t want = imin64(MM_MAX_BLOCKS, imax64(1, per_batch * batches / MM_BLOCK_WORK));
    while (tile_blocks(nest, tile) < want) {
        int64_t mt = mp->m_iter >= 0 ? tile[mp->m_iter] : 1;
        int64_t nt = mp->n_iter >= 0 ? tile[mp->n_iter] : 1;
        if (mp->n_iter >= 0 && nt >= 128 && (mt < 96 || nt >= mt))
            tile[mp->n_iter] = round_up(ceil_div(nt, 2), 64);
        else if (mp->m_iter >= 0 && mt >= 24)
            tile[mp->m_iter] = round_up(ceil_div(mt, 2), 12);
        else
            break;
    }
    bd_nest_set_tile(g, nest, tile);
}

/* ---------------------------------------------------------------- per body */

/* Elements per data-movement block: about 1/64 of the op, between 4096 and 16384 (16-64 KiB of
 * float), so that a big copy spreads over every thread while a block stays long enough to
 * amortise its dispatch. Elementwise blocks: about 16384 elements. */
enum { TILE_MIN = 4096, TILE_MAX = 16384, TILE_SPREAD = 64, ELEMENTWISE_TILE = 16384 };

static int64_t data_tile_target(const bd_nest *n) {
    int64_t total = 1;
    for (int k = 0; k < n->n_iter; k++)
        total *= n->extent[k];
    int64_t t = total / TILE_SPREAD;
    return t < TILE_MIN ? TILE_MIN : t > TILE_MAX ? TILE_MAX : t;
}

/* A reshape: the default, moved so that a split group is cut only at its outermost dim (so that
 * its input dim maps affinely), unless that makes blocks far too big. */
static void tile_reshape(const bd_graph *g, bd_nest *nest) {
    const bd_value *x = operand_value(g, nest, 0),
                   *y = operand_value(g, nest, nest->n_operands - 1);
    bd_reshape_groups r;
    bd_reshape_groups_of(x, y, &r);
    bd_nest_tile_default(g, nest, data_tile_target(nest));
    for (int gi = r.n - 1; gi >= 0; gi--) {
        if (r.gx1[gi] - r.gx0[gi] != 1 || r.gy1[gi] - r.gy0[gi] < 2) continue;
        int first = r.yd[r.gy0[gi]];
        bool inner_whole = true;
        for (int j = r.gy0[gi] + 1; j < r.gy1[gi]; j++)
            inner_whole &= nest->tile[r.yd[j]] == nest->extent[r.yd[j]];
        if (inner_whole) continue;
        /* Only when the dims before the group are cut to 1, i.e. the default's cut lies in or
         * after the group. */
        bool outer_ones = true;
        for (int k = 0; k < first; k++)
            outer_ones &= nest->tile[k] == 1;
        if (!outer_ones) continue;
        int64_t tile[BD_MAX_RANK], inner = 1;
        for (int k = 0; k < y->rank; k++)
            tile[k] = nest->tile[k];
        for (int j = first + 1; j < y->rank; j++) {
            if (j <= r.yd[r.gy1[gi] - 1]) tile[j] = y->dims[j];
            inner *= tile[j];
        }
        int64_t target = data_tile_target(nest);
        if (inner > 4 * target) continue;
        int64_t t = target / inner;
        tile[first] = t < 1 ? 1 : t;
        bd_nest_set_tile(g, nest, tile);
    }
}

/* A transposing copy whose input is contiguous along an outer dim kx (NHWC -> NCHW: kx = C):
 * the default tile cuts kx to a few elements, so that every block reads one float of each input
 * line and 16 blocks read each line again (ConvNeXt's 56x56 permutes back to NCHW took 0.2 ms,
 * 2.5x the other direction; 0.075 ms so). Where a tile holds fewer than 16 of kx, it takes 32
 * and the dims inside kx whole but the outermost of them, so that they merge into one loop and
 * the copy runs as emit_data.c's blocked 2-D walk, each line read once. Only where those dims
 * continue in both layouts (so that they merge). */
static void tile_transpose(const bd_graph *g, bd_nest *nest) {
    bd_nest_tile_default(g, nest, data_tile_target(nest));
    const bd_copy_params *cp = &nest->params.copy;
    const int r = nest->n_iter, ky = r - 1;
    int kx = -1;
    for (int k = 0; k < r; k++)
        if (cp->in_stride[k] == 1 && nest->extent[k] > 1) kx = k;
    if (kx < 0 || kx >= ky || cp->out_stride[ky] != 1 || cp->in_stride[ky] == 1 ||
        nest->tile[kx] >= imin64(nest->extent[kx], 16))
        return; /* a block reads whole 64-byte lines of the input already */
    for (int k = kx + 1; k < ky; k++) /* dims kx+1 .. ky continue into each other */
        if (cp->in_stride[k] != cp->in_stride[k + 1] * nest->extent[k + 1] ||
            cp->out_stride[k] != cp->out_stride[k + 1] * nest->extent[k + 1])
            return;
    for (int k = 0; k <= kx; k++) /* the dims this tile cuts */
        if (nest->whole[k]) return;
    int64_t tile[BD_MAX_RANK], inner = 1;
    for (int k = 0; k < r; k++)
        tile[k] = k < kx ? 1 : nest->extent[k];
    tile[kx] = imin64(nest->extent[kx], 32);
    for (int k = kx + 2; k < r; k++)
        inner *= nest->extent[k];
    if (kx + 1 < ky && !nest->whole[kx + 1])
        tile[kx + 1] =
            imax64(1, imin64(nest->extent[kx + 1], data_tile_target(nest) / (tile[kx] * inner)));
    bd_nest_set_tile(g, nest, tile);
}

/* Mirrors of kernels/gemm_i8.c (the compiler does not link the kernels): the bound on K, and its
 * scratch, 16 rows of A (its split tiles' copy) with K rounded up to 4, plus alignment. */
enum { I8_GEMM_MAX_K = 32768 };
static size_t i8_scratch_bound(int64_t K) {
    return (size_t)(16 * round_up(imax64(K, 0), 4) + 64);
}

/* A mirror of bd_i8_conv2d_scratch_bytes (kernels/conv2d_i8.c) for tiles of `rows` output
 * rows: the im2col slice (K rounded up to 4, pixels to 32), its packed copy with column sums and
 * header, the GEMM's scratch, alignment. */
static int64_t i8_conv_scratch_bound(int64_t K, int64_t rows, int64_t OW) {
    int64_t K4 = round_up(K, 4), P32 = round_up(rows * OW, 32);
    return 64 + round_up(K4 * P32, 64) + round_up(64 + P32 * 4 + P32 * K4, 64) +
           (int64_t)i8_scratch_bound(K4);
}

/* The int8 convolution kernel's cases: 8-bit X and constant W (ConvInteger, QLinearConv, a QDQ
 * Conv), an int32 result or a float one with constant scales, 1-D or 2-D, ungrouped, a constant
 * W zero point, K within the bound. */
static bool i8_conv_fits(const bd_graph *g, const bd_nest *nest, int64_t K) {
    const bd_conv_params *cp = &nest->params.conv;
    const bd_value *x = operand_value(g, nest, cp->x), *w = operand_value(g, nest, cp->w);
    const bd_value *y = operand_value(g, nest, cp->y);
    bool scaled = cp->x_scale >= 0;
    if (!bd_dtype_is_byte(x->dtype) || !bd_dtype_is_byte(w->dtype) || !w->constant || !w->constant->data ||
        y->dtype != (scaled ? BD_DT_FLOAT : BD_DT_INT32) || cp->group != 1 ||
        (cp->nsp != 1 && cp->nsp != 2) || round_up(K, 4) > I8_GEMM_MAX_K)
        return false;
    for (int k = 0; k < 2 && scaled; k++) {
        const bd_value *v = operand_value(g, nest, k ? cp->w_scale : cp->x_scale);
        if (!v->constant || !v->constant->data || v->dtype != BD_DT_FLOAT) return false;
    }
    const bd_value *zw = cp->w_zero >= 0 ? operand_value(g, nest, cp->w_zero) : NULL;
    return !zw || (zw->constant && zw->constant->data);
}

/* The int8 kernel's direct path (kernels/conv2d_i8.c), taken on AVX-512 VNNI when every
 * w - w_zero fits int8 and the convolution is not 1x1 with unit strides; the tiler counts on it
 * when bd_program.i8_direct says the target CPU has VNNI. Mirrors of its geometry: tap offsets,
 * plane width, plane stride. */
typedef struct i8_direct_geom {
    int64_t G, S, Wq, plane, phases;
} i8_direct_geom;

static i8_direct_geom i8_direct_geometry(const bd_conv_params *cp, int64_t C, int64_t rows,
                                         int64_t OW) {
    int nsp = cp->nsp;
    int64_t kh = nsp == 2 ? cp->kernel[0] : 1, kw = cp->kernel[nsp - 1];
    int64_t sh = nsp == 2 ? cp->strides[0] : 1, sw = cp->strides[nsp - 1];
    int64_t dh = nsp == 2 ? cp->dilations[0] : 1, dw = cp->dilations[nsp - 1];
    int64_t kh_off = (kh - 1) * dh / sh, kw_off = (kw - 1) * dw / sw;
    i8_direct_geom d;
    d.G = ceil_div(C, 4);
    d.S = d.G * kh * kw;
    d.Wq = OW + kw_off;
    d.plane = round_up((rows + kh_off) * d.Wq + kw_off + 32, 16);
    d.phases = sh * sw;
    return d;
}

static int64_t i8_direct_scratch_bound(const bd_conv_params *cp, int64_t C, int64_t rows,
                                       int64_t OW) {
    i8_direct_geom d = i8_direct_geometry(cp, C, rows, OW);
    return 64 + round_up(d.S * 8, 64) + d.G * d.phases * d.plane * 4 + (8 + 32) * 32 * 4;
}

static bool i8_direct_taken(const bd_graph *g, const bd_nest *nest) {
    const bd_conv_params *cp = &nest->params.conv;
    bool one_by_one = true;
    for (int i = 0; i < cp->nsp; i++)
        one_by_one &= cp->kernel[i] == 1 && cp->strides[i] == 1;
    if (one_by_one) return false;
    const bd_tensor *w = operand_value(g, nest, cp->w)->constant;
    const bd_value *zw = cp->w_zero >= 0 ? operand_value(g, nest, cp->w_zero) : NULL;
    int64_t zero = zw ? bd_tensor_get_i64(zw->constant, 0) : 0;
    for (int64_t i = 0; i < w->numel; i++) {
        int64_t v = bd_tensor_get_i64(w, i) - zero;
        if (v < -128 || v > 127) return false;
    }
    return true;
}

/* Tiles for the direct path, searched like conv_gemm_tiling's, in its cycles: a block computes
 * blocks of 8 channels x panels of 32 pixels of the planes' grid (rows x Wq, whose columns past
 * OW are computed too; a last panel of at most 16 costs half), 16 vpdpbusd (2 a cycle) per step
 * for a whole panel; it fills its planes at about a cycle per 4-byte pixel (measured ResNet-18:
 * the fill and stores are a tenth of a layer); and it pays a fixed dispatch cost. On short rows
 * the kernel may take its channels-in-lanes micro-kernel instead (lanes_faster there), cheaper
 * than counted here (it takes any tile). */
static void i8_direct_tiling(const bd_graph *g, bd_nest *nest, int64_t C, int threads) {
    const bd_conv_params *cp = &nest->params.conv;
    int64_t N = nest->extent[0], M = nest->extent[1], OH = cp->nsp == 2 ? nest->extent[2] : 1;
    int64_t OW = nest->extent[cp->nsp == 2 ? 3 : 2];
    int64_t best_m = M, best_r = OH;
    double best = -1;
    for (int64_t km = 1; km <= 16; km++) {
        int64_t mt = round_up(ceil_div(M, km), 8);
        if (mt > M) mt = M;
        if (ceil_div(M, mt) != km) continue;
        for (int64_t kr = 1; kr <= OH; kr++) {
            int64_t rows = ceil_div(OH, kr);
            if (ceil_div(OH, rows) != kr) continue;
            i8_direct_geom d = i8_direct_geometry(cp, C, rows, OW);
            int64_t pixels = rows * d.Wq, rest = pixels % 32;
            double halves = 2.0 * (double)(pixels / 32) + (rest == 0 ? 0 : rest > 16 ? 2 : 1);
            double sums = (double)ceil_div(mt, 8) * halves * (double)d.S * 4.0;
            double fill = (double)(d.G * d.phases * d.plane);
            double total = spread_cost(N * km * kr, sums + fill + 20000.0, threads);
            if (best < 0 || total < best * 0.999) {
                best = total;
                best_m = mt;
                best_r = rows;
            }
        }
    }
    set_conv_tile(g, nest, best_m, best_r);
}

/* The scratch of a packed float convolution's tiles of `rows` output rows of OW columns, on
 * whichever path kernels/conv2d.c takes them. */
static int64_t packed_conv_scratch(const bd_graph *g, const bd_nest *nest, int64_t rows, int64_t OW,
                                   bool bf16) {
    const bd_conv_params *cp = &nest->params.conv;
    const bd_value *x = operand_value(g, nest, cp->x), *y = operand_value(g, nest, cp->y);
    int nsp = cp->nsp;
    int64_t group = cp->group, C = x->dims[1], M = y->dims[1], Cg = C / group, Mg = M / group;
    int64_t ksize = 1;
    for (int i = 0; i < nsp; i++)
        ksize *= cp->kernel[i];
    int64_t kh = nsp == 2 ? cp->kernel[0] : 1, kw = cp->kernel[nsp - 1];
    int64_t dh = nsp == 2 ? cp->dilations[0] : 1, dw = cp->dilations[nsp - 1];
    int64_t sh = nsp == 2 ? cp->strides[0] : 1, sw = cp->strides[nsp - 1];
    if (group == C && group == M) return dwconv_scratch_bound(OW, kh, kw, sh, sw, dh, dw);
    if (cp->winograd) return wino_scratch_bound(cp->winograd, C, M, rows, OW);
    bool unit_strides = cp->strides[0] == 1 && cp->strides[nsp - 1] == 1;
    int64_t bytes = gemm_scratch_bound(Mg, rows * OW, Cg * ksize);
    if (ksize == 1) bytes = imax64(bytes, pointwise_scratch_bound(Cg));
    if (ksize == 1 && group == 1 && rows * OW <= 64)
        bytes = imax64(bytes, transposed_pointwise_scratch_bound(rows * OW, M, C));
    if (group > 1 && Cg <= 8 && Mg % 8 == 0) /* the 8-lane kernels on AVX2 */
        bytes = imax64(bytes, conv8_scratch_bound(OW, kh, kw, sh, sw, dh, dw));
    else if (Mg % 8 == 0 && kh * kw <= 49)
        bytes = imax64(bytes, conv8d_scratch_bound(round_up(Cg, 8), OW, kh, kw, sh, sw, dh, dw, bf16));
    if (unit_strides) bytes = imax64(bytes, direct_conv_scratch_bound(Cg, rows, OW, kh, kw, dh, dw));
    return bytes;
}

static void tile_conv(const bd_graph *g, bd_nest *nest, bool allow_winograd, bool allow_i8_direct,
                      bool bf16, bool fma_half, int threads) {
    bd_conv_params *cp = &nest->params.conv;
    const bd_value *x = operand_value(g, nest, cp->x), *w = operand_value(g, nest, cp->w);
    const bd_value *y = operand_value(g, nest, cp->y);
    int nsp = cp->nsp;
    int64_t group = cp->group, C = x->dims[1], M = y->dims[1], Cg = C / group, Mg = M / group;
    /* Packed weights and the kernels' conv tiles: float32, 1-D (as 2-D of height 1) or 2-D,
     * constant W. */
    cp->packed = x->dtype == BD_DT_FLOAT && w->constant && (nsp == 1 || nsp == 2);
    bool depthwise = group == C && group == M;
    int64_t ksize = 1;
    for (int i = 0; i < nsp; i++)
        ksize *= cp->kernel[i];
    int64_t mstep = group > 1 ? Mg * imax64(1, 48 / Mg) : 48; /* whole groups */
    cp->winograd = 0;
    bool wino_shape = nsp == 2 && group == 1 && cp->kernel[0] == 3 && cp->kernel[1] == 3 &&
                      cp->strides[0] == 1 && cp->strides[1] == 1 && cp->dilations[0] == 1 &&
                      cp->dilations[1] == 1;
    cp->i8_packed = i8_conv_fits(g, nest, C * ksize);
    cp->i8_direct = false;
    if (cp->i8_packed) { /* direct, or an im2col GEMM like the float one, on the int8 kernel */
        cp->i8_direct = allow_i8_direct && i8_direct_taken(g, nest);
        if (cp->i8_direct)
            i8_direct_tiling(g, nest, C, threads);
        else
            conv_gemm_tiling(g, nest, C * ksize, M, 1, CONV_PATH_GEMM, threads);
        int64_t rows = nsp == 2 ? nest->tile[2] : 1, OW = y->dims[1 + nsp];
        nest->scratch_bytes = imax64(i8_conv_scratch_bound(C * ksize, rows, OW),
                                     i8_direct_scratch_bound(cp, C, rows, OW));
        return;
    }
    if (cp->packed && !depthwise) {
        /* the kernels' 16-lane direct convolution (kernels/conv2d.c is_conv8d, on AVX-512):
         * ungrouped, 16 output channels at a time, windows up to 7x7 but not 1x1, and not
         * 36 products per output or fewer at stride 1 or 48 outputs or more (is_conv8d: those
         * 3-channel 3x3 stems go to the output planes, is_planes, or to the GEMM; any tile
         * suits the planes) */
        bool few = Cg * ksize <= 36 && (cp->strides[0] == 1 || M >= 48);
        bool lanes16 = group == 1 && M % 16 == 0 && ksize > 1 && ksize <= 49 && !few;
        conv_path path = lanes16 ? CONV_PATH_LANES16 : CONV_PATH_GEMM;
        if (ksize == 1 && group == 1 && !bf16) path = pointwise_path(nest, C, M, cp->pre);
        double direct = conv_gemm_tiling(g, nest, Cg * ksize, Mg, group, path, threads);
        if (wino_shape && allow_winograd) wino_tiling(g, nest, C, direct, threads, fma_half);
    } else if (cp->packed)
        dwconv_tiling(g, nest, ksize, threads);
    else
        conv_tiling(g, nest, Cg * ksize, mstep, mstep, true, 1);
    if (!cp->packed) return;
    nest->scratch_bytes = packed_conv_scratch(g, nest, nsp == 2 ? nest->tile[2] : 1, y->dims[1 + nsp], bf16);
}

/* The nest fuse/conv_pool.c forms: a packed convolution and the max pool after it, over the
 * pool's output, tiled as the tile pass tiled the convolution (the tile it still holds): its
 * channel tile, and as many row blocks, in pool rows. A block computes its convolution rows a
 * band of pool rows at a time into scratch, the band's rows of all its channels within
 * POOL_BAND_BYTES (about half a core's L2), each plane OH x OW floats apart as the kernels
 * address them (only the band's rows are touched), after the conv kernel's own scratch. */
enum { POOL_BAND_BYTES = 192 * 1024 };
bool bd_cpu_tile_conv_pool(const bd_graph *g, bd_nest *n, int threads) {
    (void)threads;
    bd_conv_params *cp = &n->params.conv;
    const int64_t OH = cp->conv_oh, OW = cp->conv_ow, PH = n->extent[2];
    const int64_t kp = cp->pool_kernel[0], sp = cp->pool_strides[0];
    const int64_t ct = imin64(n->tile[1], n->extent[1]);
    const int64_t rt = ceil_div(PH, ceil_div(OH, imax64(n->tile[2], 1)));
    int64_t band = rt;
    while (band > 1 && ct * ((band - 1) * sp + kp) * OW * 4 > POOL_BAND_BYTES)
        band--;
    const int64_t rows = imin64((band - 1) * sp + kp, OH);
    int64_t tile[BD_MAX_RANK] = {imin64(n->tile[0], n->extent[0]), ct, rt, n->extent[3]};
    bd_nest_set_tile(g, n, tile);
    cp->pool_band = band;
    cp->pool_band_at = round_up(packed_conv_scratch(g, n, rows, OW, true), 64);
    n->scratch_bytes = cp->pool_band_at + ((ct - 1) * OH * OW + rows * OW) * 4;
    return true;
}

/* An upper bound of bd_f32_deconv_scratch_bytes for tiles of `rows` output rows: the products
 * and the packed input of the input rows they read (at most ceil(rows / KH) + 1 of H), and the
 * GEMM driver's edge tile. */
static int64_t deconv_scratch_bound(int64_t C, int64_t M, int64_t H, int64_t W, int64_t KH,
                                    int64_t rows) {
    int64_t P = imin64(ceil_div(rows, KH) + 1, H) * W;
    return (M * P + C * round_up(P, 32) + 32) * 4 + gemm_scratch_bound(0, 0, 0);
}

static void tile_conv_transpose(const bd_graph *g, bd_nest *nest, int threads) {
    bd_conv_params *cp = &nest->params.conv;
    int64_t group = cp->group;
    const bd_value *x = operand_value(g, nest, cp->x), *w = operand_value(g, nest, cp->w);
    const bd_value *y = operand_value(g, nest, cp->y);
    /* Stride = kernel without padding (U-Net upsampling): kernels/deconv.c, a GEMM per tap, tiled
     * as a convolution of depth C whose row tiles are whole input rows (multiples of KH). */
    cp->packed = x->dtype == BD_DT_FLOAT && w->constant && cp->nsp == 2 && group == 1;
    for (int i = 0; i < 2 && cp->packed; i++)
        cp->packed = cp->strides[i] == cp->kernel[i] && cp->dilations[i] == 1 &&
                     cp->pads[i] == 0 && cp->pads[2 + i] == 0 &&
                     y->dims[2 + i] == x->dims[2 + i] * cp->kernel[i];
    if (cp->packed) {
        int64_t C = x->dims[1], M = y->dims[1], OH = y->dims[2], OW = y->dims[3];
        conv_gemm_tiling(g, nest, C, M, 1, CONV_PATH_GEMM, threads);
        int64_t rows = imin64(round_up(nest->tile[2], cp->kernel[0]), OH);
        int64_t tile[BD_MAX_RANK] = {1, nest->tile[1], rows, OW};
        bd_nest_set_tile(g, nest, tile);
        nest->scratch_bytes = deconv_scratch_bound(C, M, x->dims[2], x->dims[3], cp->kernel[0], rows);
        return;
    }
    int64_t Cg = operand_value(g, nest, cp->x)->dims[1] / group;
    int64_t Mg = operand_value(g, nest, cp->y)->dims[1] / group;
    int64_t ksize = 1;
    for (int i = 0; i < cp->nsp; i++)
        ksize *= cp->kernel[i];
    /* Each output element gathers about Cg * ksize / stride^nsp products. */
    int64_t per_out = Cg * ksize;
    for (int i = 0; i < cp->nsp; i++)
        per_out = imax64(1, per_out / cp->strides[i]);
    conv_tiling(g, nest, per_out, group > 1 ? Mg : 1, group > 1 ? Mg : 1, true, 1);
}

static void tile_pool(const bd_graph *g, bd_nest *nest) {
    const bd_pool_params *pp = &nest->params.pool;
    int64_t ksize = 1;
    for (int i = 0; i < pp->nsp; i++)
        ksize *= pp->kernel[i];
    bd_nest_tile_default(g, nest, imax64(64, (1 << 16) / ksize));
    /* the row buffer of emit_pool_rows: the block's run of the last spatial axis */
    nest->scratch_bytes = nest->tile[nest->n_iter - 1] * 8 + 64;
    int64_t copy = bd_cpu_maxpool_copy_elems(g, nest); /* emit_maxpool_s1's copy and maxima */
    if (copy > 0) nest->scratch_bytes = 2 * copy * 8 + 64;
}

/* MatMulInteger's product for the int8 kernel: 8-bit A, B constant and shared by every batch,
 * b_zero constant, and every B - b_zero within int8 (the kernel's signed operand). */
static bool i8_kernel_fits(const bd_graph *g, const bd_nest *nest, const bd_matmul_params *mp,
                           bool b_shared) {
    const bd_value *a = operand_value(g, nest, mp->a), *b = operand_value(g, nest, mp->b);
    const bd_value *y = operand_value(g, nest, mp->y);
    if (mp->gemm || y->dtype != BD_DT_INT32 || !bd_dtype_is_byte(a->dtype) || !bd_dtype_is_byte(b->dtype) ||
        !b->constant || !b->constant->data || b->constant->dtype != b->dtype || !b_shared ||
        b->rank < 2 || mp->K > I8_GEMM_MAX_K || mp->c >= 0)
        return false;
    int32_t zb = 0;
    if (mp->b_zero >= 0) {
        const bd_value *z = operand_value(g, nest, mp->b_zero);
        if (!z->constant || !z->constant->data || z->constant->dtype != b->dtype) return false;
        zb = b->dtype == BD_DT_INT8 ? *(const int8_t *)z->constant->data : *(const uint8_t *)z->constant->data;
    }
    for (int64_t i = 0; i < b->constant->numel; i++) {
        int32_t v = b->dtype == BD_DT_INT8 ? ((const int8_t *)b->constant->data)[i]
                                           : ((const uint8_t *)b->constant->data)[i];
        if (v - zb < -128 || v - zb > 127) return false;
    }
    return mp->a_zero < 0 || operand_value(g, nest, mp->a_zero)->dtype == a->dtype;
}

static void tile_matmul(const bd_graph *g, bd_nest *nest, int threads) {
    bd_matmul_params *mp = &nest->params.matmul;
    const bd_value *a = operand_value(g, nest, mp->a), *b = operand_value(g, nest, mp->b);
    const bd_value *y = operand_value(g, nest, mp->y);
    bool b_shared = true; /* one B matrix for every batch */
    for (int i = 0; i < mp->n_batch; i++)
        b_shared &= mp->b_bstride[i] == 0;
    /* B packed once at create time for the kernels (scaled by alpha when that is not 1) */
    mp->b_packed = a->dtype == BD_DT_FLOAT && b->constant && b_shared && b->rank >= 2;
    mp->alpha_in_b = mp->b_packed && mp->alpha != 1.0f;
    mp->i8_packed = i8_kernel_fits(g, nest, mp, b_shared);
    bool kernel = a->dtype == BD_DT_FLOAT || mp->i8_packed; /* float32 or int8 kernel calls */
    /* A's batch axes contiguous like the output's (no broadcasting, no transpose): rows merge */
    mp->merged = !mp->gemm && mp->m_iter >= 0 && b_shared && mp->n_batch > 0;
    for (int j = 0; j < mp->n_batch && mp->merged; j++) {
        int64_t rows_after = mp->M * mp->K;
        for (int i = j + 1; i < mp->n_batch; i++)
            rows_after *= y->dims[i];
        mp->merged = y->dims[j] == 1 || mp->a_bstride[j] == rows_after;
    }
    if (mp->merged && kernel)
        matmul_tiling_merged(g, nest, mp, threads);
    else
        matmul_tiling(g, nest, mp, kernel, threads);
    mp->merged &= kernel;
    if (mp->i8_packed) {
        nest->scratch_bytes = i8_scratch_bound(mp->K);
    } else if (kernel) {
        int64_t mt = mp->m_iter >= 0 ? nest->tile[mp->m_iter] : 1;
        if (mp->merged) mt = nest->tile[mp->cut] * mp->cut_rows;
        int64_t nt = mp->n_iter >= 0 ? nest->tile[mp->n_iter] : 1;
        nest->scratch_bytes = gemm_scratch_bound(mt, nt, mp->K);
    }
}

static void tile_norm(const bd_graph *g, bd_nest *nest) {
    const bd_norm_params *np = &nest->params.norm;
    const bd_value *x = operand_value(g, nest, np->x);
    int64_t tile[BD_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        tile[i] = x->dims[i];
    if (np->kind == BD_NORM_BATCH) {
        tile[0] = 1;
        tile[1] = imax64(1, imin64(x->dims[1], (1 << 15) / imax64(np->inner, 1)));
        bd_nest_set_tile(g, nest, tile);
        if (nest->n_blocks < 4 && x->rank > 2) bd_nest_tile_default(g, nest, 1 << 14);
        return;
    }
    /* LayerNormalization: normalised axes whole in every block; the outer ones cut to about 16K
     * elements a block. */
    int64_t target = imax64(1, (1 << 14) / imax64(np->cols, 1)), rows_in = 1;
    for (int i = np->axis - 1; i >= 0; i--) {
        if (rows_in * x->dims[i] <= target) {
            rows_in *= x->dims[i];
        } else {
            tile[i] = imax64(1, target / rows_in);
            for (int j = i - 1; j >= 0; j--)
                tile[j] = 1;
            break;
        }
    }
    bd_nest_set_tile(g, nest, tile);
}

/* LSTM: one block per (direction, batch tile); the recurrence runs inside the block. Its scratch
 * holds the input projections of every step for its batch rows, so batch tiles are capped at
 * about 32 MiB of those; a single direction with a batch of 4 or more is cut in two so that two
 * threads share the work. */
static void tile_lstm(const bd_graph *g, bd_nest *nest) {
    bd_lstm_params *lp = &nest->params.lstm;
    int64_t H4 = 4 * lp->hidden, per_row = imax64(1, lp->seq * H4);
    int64_t bt = imax64(1, imin64(lp->batch, ((int64_t)1 << 23) / per_row));
    if (lp->num_dir == 1 && lp->batch >= 4 && bt == lp->batch) bt = ceil_div(lp->batch, 2);
    bd_nest_set_tile(g, nest, (int64_t[]){1, bt});
    /* W and R packed at create time when constant */
    lp->packed = operand_value(g, nest, lp->w)->constant && operand_value(g, nest, lp->r)->constant;
    /* Scratch: input projections of every step, h, c, the gates of one step, the summed biases,
     * and the GEMM's own. */
    int64_t floats = lp->seq * bt * H4 + 2 * bt * lp->hidden + bt * H4 + H4 + lp->hidden + 64;
    nest->scratch_bytes =
        floats * 4 + 256 +
        gemm_scratch_bound(imax64(lp->seq * bt, 1), H4, imax64(lp->input, lp->hidden));
}

enum {
    REDUCE_WORK_TARGET = 16384, /* input elements a reduction block reads, about */
    REDUCE_MIN_ROW = 64,        /* least tile of a column reduction's contiguous inner dim */
    SOFTMAX_TILE = 2048,        /* elements per softmax block, about (rows are never cut) */
    ROI_ALIGN_TILE = 1024,      /* RoiAlign outputs per block: each samples its bin several times
                                   (a count the rois decide at run time, often 4 to 16) */
};

/* About REDUCE_WORK_TARGET input elements per block. When the innermost non-unit input dim is
 * kept (a column reduction), its tile is the body's contiguous inner loop: at least 64 wide, and
 * accumulated in scratch in the accumulator type (8 bytes at most). */
static void tile_reduce(const bd_graph *g, bd_nest *nest) {
    const bd_reduce_params *prm = &nest->params.reduce;
    const bd_value *x = operand_value(g, nest, 0), *y = operand_value(g, nest, 1);
    int64_t per_out = prm->count > 0 ? prm->count : 1;
    int64_t target = REDUCE_WORK_TARGET / per_out > 0 ? REDUCE_WORK_TARGET / per_out : 1;
    int column_iter = -1;
    for (int k = x->rank - 1; k >= 0; k--) {
        if (x->dims[k] == 1) continue;
        column_iter = prm->iter_of[k];
        break;
    }
    if (column_iter >= 0 && target < REDUCE_MIN_ROW)
        target = y->dims[column_iter] < REDUCE_MIN_ROW ? y->dims[column_iter] : REDUCE_MIN_ROW;
    bd_nest_tile_keeping_whole(g, nest, target);
    if (column_iter >= 0) nest->scratch_bytes = 8 * nest->tile[column_iter];
}

static void tile_softmax(const bd_graph *g, bd_nest *nest) {
    const bd_softmax_params *prm = &nest->params.softmax;
    bd_nest_tile_keeping_whole(g, nest, SOFTMAX_TILE);
    /* Along an inner axis (dims after it): per-column max and sum over the tile's last dim. */
    if (prm->last < nest->n_iter - 1) nest->scratch_bytes = 2 * 8 * nest->tile[nest->n_iter - 1];
}

bd_status bd_cpu_tile(bd_program *p, bd_diag *d) {
    const bd_graph *g = p->graph;
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        /* A batch range (--dim batch=LO..HI, compiled at HI): a nest over the batch is tiled as
         * at LO, so that a run at the smallest batch has the blocks its threads need; a larger
         * batch adds blocks along dim 0 (plan/batch.h). */
        bool at_min = g->batch_max && n->n_iter > 0 && n->extent[0] == g->batch_max && !n->whole[0];
        if (at_min) n->extent[0] = g->batch_min;
        switch (n->body) {
        case BD_BODY_ELEMENTWISE: bd_nest_tile_default(g, n, ELEMENTWISE_TILE); break;
        case BD_BODY_COPY:
            if (n->params.copy.reshape)
                tile_reshape(g, n);
            else if (!n->params.copy.fill)
                tile_transpose(g, n);
            else
                bd_nest_tile_default(g, n, data_tile_target(n));
            break;
        case BD_BODY_PAD:
        case BD_BODY_GATHER: bd_nest_tile_default(g, n, data_tile_target(n)); break;
        case BD_BODY_ROI_ALIGN: bd_nest_tile_default(g, n, ROI_ALIGN_TILE); break;
        case BD_BODY_ATTENTION: bd_cpu_tile_attention(g, n, p->tile_threads); break;
        case BD_BODY_RESIZE:
            bd_nest_tile_default(g, n, data_tile_target(n));
            n->scratch_bytes = imax64(n->params.resize.row_elems, bd_cpu_resize_row_elems(n)) *
                               (operand_value(g, n, 1)->dtype == BD_DT_DOUBLE ? 8 : 4);
            break;
        case BD_BODY_CONV: tile_conv(g, n, p->winograd && !p->bf16, p->i8_direct, p->bf16, p->fma_half, p->tile_threads); break;
        case BD_BODY_CONV_TRANSPOSE: tile_conv_transpose(g, n, p->tile_threads); break;
        case BD_BODY_POOL: tile_pool(g, n); break;
        case BD_BODY_GLOBAL_POOL: {
            int64_t spatial = imax64(n->params.global_pool.spatial, 1);
            bd_nest_tile_default(g, n, imax64(1, (1 << 16) / spatial));
            break;
        }
        case BD_BODY_MATMUL: tile_matmul(g, n, p->tile_threads); break;
        case BD_BODY_REDUCE: tile_reduce(g, n); break;
        case BD_BODY_SOFTMAX: tile_softmax(g, n); break;
        case BD_BODY_NORM: tile_norm(g, n); break;
        case BD_BODY_LSTM: tile_lstm(g, n); break;
        case BD_BODY_SCATTER: bd_nest_tile_keeping_whole(g, n, 1); break; /* every dim whole */
        case BD_BODY_CONSTANT: break; /* one block */
        case BD_BODY_COUNT: BD_ASSERT(!"no body");
        }
        if (at_min) {
            int64_t tile[BD_MAX_RANK];
            memcpy(tile, n->tile, sizeof tile);
            n->extent[0] = g->batch_max;
            bd_nest_set_tile(g, n, tile);
        }
    }
    return bd_program_verify(p, d);
}
