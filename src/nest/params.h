/* params.h — the resolved parameters of every nest body, the typed part of the loop-nest IR.
 *
 * Lowering fills the member of bd_nest_params that the nest's body names (BD_BODIES in
 * loopnest.h); passes after it and the printers read it through BD_NEST_PARAMS, which checks the
 * body. Everything a body needs beyond its operands' shapes is here, already resolved: explicit
 * pads after auto_pad, defaults of absent attributes, which operand is which, sampling tables.
 * Nothing after lowering reads ONNX attributes. Operand fields (`x`, `w`, ...) are indices into
 * nest->operands, -1 when the operand is absent.
 *
 * COPY is one strided remap serving Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze,
 * Transpose, Slice, Expand and the pieces of Concat and Split: iteration index (i0..ir) reads input
 * element in_base + sum(ik * in_stride[k]) and writes output element out_base + sum(ik *
 * out_stride[k]). Strides may be 0 (broadcast) or negative (reversed slices). */
#ifndef BD_NEST_PARAMS_H
#define BD_NEST_PARAMS_H

#include "front/graph.h"
#include "nest/expr.h"

/* ---------------------------------------------------------------- data movement */

typedef struct bd_copy_params {
    int64_t in_base, out_base;
    int64_t in_stride[BD_MAX_RANK], out_stride[BD_MAX_RANK]; /* elements, per iteration dim */
    bool fill;    /* no input operand: every element becomes fill_value (Dropout's mask) */
    bool reshape; /* a Reshape-family copy: operand 0's map follows the tile (nest.c) */
    double fill_value;
} bd_copy_params;

typedef enum bd_pad_mode { BD_PAD_CONSTANT, BD_PAD_REFLECT, BD_PAD_EDGE, BD_PAD_WRAP } bd_pad_mode;

/* Pad: negative pads crop first, then positive pads grow around the cropped input (what
 * onnxruntime does); reflect/edge/wrap read the cropped input. Output index i along dim k maps to
 * cropped index j = i - pad_lo[k] (resolved by the mode when outside [0, kept[k])), i.e. input
 * index j + crop_lo[k]. */
typedef struct bd_pad_params {
    bd_pad_mode mode;
    int64_t pad_lo[BD_MAX_RANK];  /* head padding, >= 0 */
    int64_t crop_lo[BD_MAX_RANK]; /* head elements cropped away, >= 0 */
    int64_t kept[BD_MAX_RANK];    /* extent of the cropped input */
    int value_operand;            /* operand index of the constant_value input, -1: value below */
    double value;                 /* constant (opset < 11 attribute 'value', else 0) */
} bd_pad_params;

typedef struct bd_gather_params {
    int axis;     /* in the data operand */
    int idx_rank; /* rank of indices: output dims [axis, axis + idx_rank) walk them */
} bd_gather_params;

typedef enum bd_resize_coord {
    BD_RESIZE_HALF_PIXEL,
    BD_RESIZE_HALF_PIXEL_SYMMETRIC,
    BD_RESIZE_PYTORCH_HALF_PIXEL,
    BD_RESIZE_ALIGN_CORNERS,
    BD_RESIZE_ASYMMETRIC,
    BD_RESIZE_TF_HALF_PIXEL_FOR_NN,
    BD_RESIZE_TF_CROP_AND_RESIZE,
} bd_resize_coord;

typedef enum bd_resize_nearest {
    BD_NEAREST_ROUND_PREFER_FLOOR,
    BD_NEAREST_ROUND_PREFER_CEIL,
    BD_NEAREST_FLOOR,
    BD_NEAREST_CEIL,
    BD_NEAREST_SIMPLE, /* opset 10: truncate when upsampling, ceil when downsampling */
} bd_resize_nearest;

typedef enum bd_resize_interp {
    BD_INTERP_NEAREST,
    BD_INTERP_LINEAR,
    BD_INTERP_CUBIC,
} bd_resize_interp;

typedef struct bd_resize_params {
    bd_resize_interp interp;
    bool antialias;       /* linear, cubic: the filter widened by 1/scale to downsample */
    bool exclude_outside; /* taps outside the input get weight 0, the rest renormalised */
    double cubic_coeff_a;
    bd_resize_coord coord;
    bd_resize_nearest nearest;
    double extrapolation_value; /* tf_crop_and_resize outside the input */
    double scale[BD_MAX_RANK];  /* per dim, as the coordinate transform uses it */
    double roi_start[BD_MAX_RANK], roi_end[BD_MAX_RANK];
    int64_t in_extent[BD_MAX_RANK], out_extent[BD_MAX_RANK];
    bool active[BD_MAX_RANK]; /* dims whose sampling is not the identity */
    int64_t row_elems;        /* filter modes, 2+ active dims: elements of the per-thread row
                                 buffer the active dims but the last are combined into */
    bool filter;              /* cubic or antialiased linear: weighed windows of taps */
    /* The sampling tables of each active dim k, computed once by lowering (in the program's
     * arena), indexed by output index o along k:
     *   nearest and plain linear: input indices idx0[k][o], idx1[k][o] (clamped to the extent)
     *     and the weight w1[k][o] of idx1 (idx0's is 1 - w1); idx0 == -1 where the output takes
     *     the extrapolation value;
     *   filters: taps[k] taps per output index, tap t reading input index
     *     tap_idx[k][o * taps + t] with weight tap_w[k][o * taps + t]; outside[k][o] where the
     *     output takes the extrapolation value. */
    const int64_t *idx0[BD_MAX_RANK], *idx1[BD_MAX_RANK];
    const float *w1[BD_MAX_RANK];
    int taps[BD_MAX_RANK];
    const int64_t *tap_idx[BD_MAX_RANK];
    const double *tap_w[BD_MAX_RANK];
    const bool *outside[BD_MAX_RANK];
} bd_resize_params;

/* RoiAlign over Y [R, C, oh, ow]: operand 0 is X [N, C, H, W], 1 the rois [R, 4] (x1, y1, x2, y2),
 * 2 the batch indices [R] (clamped into [0, N)), 3 Y. Each output element computes its roi's box
 * and sample grid from the rois row at run time, as onnxruntime does. */
typedef struct bd_roi_align_params {
    bool is_max;       /* mode max: the largest weighted corner of any sample (onnxruntime's) */
    double scale;      /* spatial_scale */
    double offset;     /* subtracted from every scaled coordinate: 0.5 for half_pixel, else 0 */
    bool at_least_one; /* output_half_pixel (and opset 10): a roi is at least 1 long */
    int64_t ratio;     /* sampling_ratio; 0: ceil(bin length) samples along each dim, per roi */
} bd_roi_align_params;

/* ---------------------------------------------------------------- neural-network ops */

enum { BD_NN_MAX_SPATIAL = BD_MAX_RANK - 2 };

/* Conv and ConvTranspose. pads are the resolved leading pads then trailing pads. */
typedef struct bd_conv_params {
    int x, w, b, y;
    int nsp; /* spatial rank */
    int64_t group;
    int64_t kernel[BD_NN_MAX_SPATIAL];
    int64_t strides[BD_NN_MAX_SPATIAL];
    int64_t dilations[BD_NN_MAX_SPATIAL];
    int64_t pads[2 * BD_NN_MAX_SPATIAL];
    /* ConvInteger, QLinearConv and a Conv of DequantizeLinear'd 8-bit X and W (front/qdq_conv.c)
     * with one zero point per operand: X and W are the 8-bit tensors and the sum is
     * conv(X - x_zero, W - w_zero) in int32; y is that sum (+ b) in int32, or with x_scale (one
     * value) and w_scale (one, or one per output channel) float y = float(sum) * (x_scale *
     * w_scale[m]) + b[m]. Operands, -1 when absent. */
    int x_zero, w_zero, x_scale, w_scale;
    bool packed; /* Conv: float32, 1-D or 2-D, constant W: packed weights + bd_f32_conv2d_tile */
    bool i8_packed; /* 8-bit, 2-D, ungrouped, constant W and w_zero: bd_i8_conv2d_tile */
    bool i8_direct; /* and on the kernel's direct path, which can requantize its output */
    int64_t winograd; /* packed 3x3 stride 1: 0, or the Winograd output tile m (2, 4) the CPU
                       * tiler chose (kernels/winograd.c) */
    /* pre: a packed 1x1 convolution reads x through an inference BatchNormalization it absorbed
     * (fuse.c; the kernel applies it as it packs x: bd_f32_conv2d_tile_pre), its parameters the
     * operands pre_scale, pre_bias, pre_mean, pre_var, then a Relu where pre_relu */
    bool pre, pre_relu;
    int pre_scale, pre_bias, pre_mean, pre_var;
    double pre_epsilon;
    /* pooled: a packed 2-D convolution that absorbed the MaxPool reading its output alone
     * (fuse/conv_pool.c): the nest iterates over the pool's output, y is the pool's, and a block
     * computes the convolution's rows its pool rows read, pool_band pool rows at a time, into
     * scratch (from byte pool_band_at) and pools them from there, so the convolution's output
     * is never stored. conv_oh x conv_ow: the convolution's output plane; pool_kernel,
     * pool_strides, pool_pads (top, left): the pool's window (no dilation, Indices or storage
     * order) */
    bool pooled;
    int64_t conv_oh, conv_ow;
    int64_t pool_kernel[2], pool_strides[2], pool_pads[2];
    int64_t pool_band, pool_band_at;
} bd_conv_params;

/* MaxPool and AveragePool. */
typedef struct bd_pool_params {
    int x, y, indices;
    int nsp;
    bool is_max;
    bool count_include_pad;
    bool column_major; /* MaxPool storage_order = 1: Indices count the spatial axes column-major */
    int64_t kernel[BD_NN_MAX_SPATIAL];
    int64_t strides[BD_NN_MAX_SPATIAL];
    int64_t dilations[BD_NN_MAX_SPATIAL];
    int64_t pads[2 * BD_NN_MAX_SPATIAL];
} bd_pool_params;

typedef struct bd_global_pool_params {
    int x, y;
    int64_t spatial; /* elements averaged per (n, c) */
} bd_global_pool_params;

/* MatMul and Gemm. The output is [batch..., M, N] with the M axis absent when A is 1-D and the N
 * axis absent when B is 1-D (MatMul); Gemm has no batch axes. */
typedef struct bd_matmul_params {
    int a, b, c, y;     /* c: Gemm's C, or a bias fusion absorbed (y = alpha AB + beta C) */
    /* MatMulInteger/QLinearMatMul with one zero point per operand: A and B are the 8-bit
     * tensors and y = (A - a_zero)(B - b_zero) in y's int32 (operands, -1 when absent) */
    int a_zero, b_zero;
    bool gemm;          /* Gemm (C, transposes, alpha, beta), else MatMul */
    int n_batch;        /* batch axes of the output */
    int m_iter, n_iter; /* iteration dims of M and N, -1 when absent */
    int64_t M, N, K;
    bool trans_a, trans_b;
    float alpha, beta;
    /* Chosen by the target's tiler (CPU: target/cpu/tile.c): */
    bool b_packed; /* float32, B constant and shared by every batch: packed at create */
    /* B shared by every batch and A laid out like the output's rows: the batch axes and M form
     * one run of rows, and a block is rows [r0, r1): iteration dims before `cut` have tile 1, those
     * after it (up to M) are whole, and `cut_rows` rows lie under one index of `cut`. */
    bool merged;
    int cut;
    int64_t cut_rows;
    bool alpha_in_b; /* b_packed and alpha != 1: B is scaled by alpha before packing */
    /* 8-bit A and B, B constant and shared by every batch, B - b_zero within int8 and b_zero
     * constant: the int8 kernel, B packed at create */
    bool i8_packed;
    /* Element strides of A, B and Y along each output batch axis (0 where A or B broadcasts). */
    int64_t a_bstride[BD_MAX_RANK], b_bstride[BD_MAX_RANK], y_bstride[BD_MAX_RANK];
} bd_matmul_params;

enum { BD_NORM_BATCH = 0, BD_NORM_LAYER = 1, BD_NORM_RMS = 2 };

/* BatchNormalization (inference), LayerNormalization and RMSNormalization (LayerNormalization
 * with a mean of 0 and no bias). */
typedef struct bd_norm_params {
    int kind; /* BD_NORM_* */
    int x, scale, bias, mean, var, y, mean_out, inv_out;
    double epsilon;
    /* BatchNormalization: channels C and the elements per channel of one batch item (inner);
     * per_activation (opset < 9, spatial = 0): the parameters have one value per (c, inner). */
    int64_t channels, inner;
    bool per_activation;
    bool folded; /* all parameters constant: y = x * a + b with a, b computed at compile time */
    /* LayerNormalization: rows = prod(X[:axis]), cols = prod(X[axis:]). */
    int axis;
    int64_t rows, cols;
} bd_norm_params;

/* LSTM activation functions. */
enum {
    BD_RNN_SIGMOID = 0,
    BD_RNN_TANH,
    BD_RNN_RELU,
    BD_RNN_AFFINE,
    BD_RNN_LEAKY_RELU,
    BD_RNN_THRESHOLDED_RELU,
    BD_RNN_SCALED_TANH,
    BD_RNN_HARD_SIGMOID,
    BD_RNN_ELU,
    BD_RNN_SOFTSIGN,
    BD_RNN_SOFTPLUS
};

typedef struct bd_rnn_act {
    int fn; /* BD_RNN_* */
    float alpha, beta;
} bd_rnn_act;

typedef struct bd_lstm_params {
    int x, w, r, b, lens, h0, c0, p, y, yh, yc;
    int num_dir;
    bool reverse;     /* direction = reverse (one direction, run backwards) */
    bool batch_major; /* layout = 1 */
    int64_t seq, batch, input, hidden;
    bool has_clip;
    float clip;
    bool input_forget;
    bool packed;          /* W and R constant: packed at create time */
    bd_rnn_act act[2][3]; /* per direction: f, g, h */
} bd_lstm_params;

/* ---------------------------------------------------------------- reductions */

typedef enum bd_reduce_kind {
    BD_REDUCE_SUM = 0,
    BD_REDUCE_MEAN,
    BD_REDUCE_MAX,
} bd_reduce_kind;

/* A REDUCE nest: operand 0 is the input, operand 1 the output. The iteration dims are the output
 * dims; input dim k is either kept (it is output dim iter_of[k]) or reduced (iter_of[k] == -1;
 * with keepdims its output dim has extent 1 and is not named here). */
typedef struct bd_reduce_params {
    bd_reduce_kind kind;
    int in_rank;
    int iter_of[BD_MAX_RANK];
    int64_t count; /* elements reduced into each output element (the divisor of ReduceMean) */
} bd_reduce_params;

/* A SOFTMAX nest: operand 0 is the input, operand 1 the output (same shape; the iteration dims are
 * its dims). Softmax runs along the dims first..last, which a block covers whole: one dim from
 * opset 13, all dims from `axis` on before (the input coerced to 2-D). */
typedef struct bd_softmax_params {
    bool log; /* LogSoftmax */
    int first, last;
} bd_softmax_params;

/* A SCATTER nest (reduction none, seen from the updates: a "push"): operand 0 is the data,
 * 1 the indices, 2 the updates, 3 the output (the iteration dims are its dims, all whole: one
 * block copies the data, then writes every update where its index names). ScatterND when
 * components > 0 (the index tuples' length, over the data's leading dims), else
 * ScatterElements along `axis`, the indices and updates of one shape. */
typedef struct bd_scatter_params {
    int components;
    int axis;
} bd_scatter_params;

/* An ATTENTION nest (fuse/attention.c): Y = softmax(score(A B)) V along the last dim, one block
 * of rows at a time, the scores never stored. qk and pv are the two products' parameters as
 * lowering and the tiler left them, their operand indices renumbered to this nest's (qk.y and
 * pv.a, the scores, are -1: no operand); the iteration dims are pv's output's, and qk's batch
 * axes are the same ones. score, when n > 0, is the elementwise expression that stood between
 * the first product and the softmax: it loads the scores' element through operand index s
 * (this nest's output, which it never loads otherwise) and its other inputs (a mask, constants)
 * through operands of this nest, at element strides score_stride[k][i] along qk's iteration dim
 * i (their maps here read whole rows, the scores' columns being no iteration dim of the nest). */
typedef struct bd_attention_params {
    bd_matmul_params qk, pv;
    bd_expr score;
    int s;
    int64_t score_stride[16][BD_MAX_RANK]; /* 16: BD_NEST_MAX_OPERANDS (loopnest.h) */
} bd_attention_params;

/* The member of bd_nest_params each body uses (see BD_BODIES), NONE for bodies without. */
#define BD_PARAM_KINDS(X)                                                                          \
    X(none)                                                                                        \
    X(expr) X(copy) X(pad) X(gather) X(resize) X(roi_align) X(conv) X(pool) X(global_pool)         \
        X(matmul) X(attention) X(reduce) X(softmax) X(norm) X(lstm) X(scatter)

typedef union bd_nest_params {
    char none;
    bd_expr expr; /* ELEMENTWISE: the element's value, loading the inputs (the last operand is the
                     output, which it never loads) */
    bd_copy_params copy;
    bd_pad_params pad;
    bd_gather_params gather;
    bd_resize_params resize;
    bd_roi_align_params roi_align;
    bd_conv_params conv;
    bd_pool_params pool;
    bd_global_pool_params global_pool;
    bd_matmul_params matmul;
    bd_attention_params attention;
    bd_reduce_params reduce;
    bd_softmax_params softmax;
    bd_norm_params norm;
    bd_lstm_params lstm;
    bd_scatter_params scatter;
} bd_nest_params;

typedef enum bd_param_kind {
#define X(m) BD_PARAMS_##m,
    BD_PARAM_KINDS(X)
#undef X
} bd_param_kind;

#endif
