/* lower_nn.h — resolved parameters of the neural-network nests (CONV, CONV_TRANSPOSE, POOL,
 * GLOBAL_POOL, MATMUL, NORM, LSTM), shared by their lowering (lower_nn.c) and their C bodies
 * (emit_c_nn.c). A lowering fills one of these structs into `nest->params` (BD_NEST_PARAMS);
 * everything the body needs beyond the operands' shapes is here, already resolved: explicit
 * pads after auto_pad, defaults of absent attributes, which operand is which.
 *
 * Operand fields (`x`, `w`, ...) are indices into nest->operands, -1 when the operand is absent. */
#ifndef BD_LOWER_NN_H
#define BD_LOWER_NN_H

#include "loopnest.h"

enum { BD_NN_MAX_SPATIAL = BD_MAX_RANK - 2 };

/* Fused activation of an epilogue (fuse.h decides which). NONE, RELU and CLIP equal BD_ACT_* of
 * kernels/bd_kernels.h and run inside the micro-kernels; the others are applied by generated code
 * to the block just computed. LEAKY_RELU keeps its alpha in act_min. */
enum {
    BD_NN_ACT_NONE = 0, BD_NN_ACT_RELU = 1, BD_NN_ACT_CLIP = 2,
    BD_NN_ACT_LEAKY_RELU = 3, BD_NN_ACT_HARD_SWISH = 4, BD_NN_ACT_SILU = 5
};

/* Conv and ConvTranspose. pads are the resolved leading pads then trailing pads. */
typedef struct bd_conv_params {
    int x, w, b, y;
    int nsp;       /* spatial rank */
    int64_t group;
    int64_t kernel[BD_NN_MAX_SPATIAL];
    int64_t strides[BD_NN_MAX_SPATIAL];
    int64_t dilations[BD_NN_MAX_SPATIAL];
    int64_t pads[2 * BD_NN_MAX_SPATIAL];
    bool packed;   /* Conv: float32, 1-D or 2-D, constant W: packed weights + bd_f32_conv2d_tile */
    int act;       /* BD_NN_ACT_* applied to the output */
    float act_min, act_max;
    int res;       /* an absorbed residual Add: operand of Y's shape added before act, or -1 */
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

/* How Gemm's C enters the result. */
enum {
    BD_MM_C_NONE = 0,
    BD_MM_C_BIAS_N, /* one value per column (C is [N] or [1, N]), beta folded or 1 */
    BD_MM_C_GENERAL /* any broadcast of C: y = alpha * AB + beta * C in an epilogue loop */
};

/* MatMul and Gemm. The output is [batch..., M, N] with the M axis absent when A is 1-D and the N
 * axis absent when B is 1-D (MatMul); Gemm has no batch axes. */
typedef struct bd_matmul_params {
    int a, b, c, y;
    int n_batch;         /* batch axes of the output */
    int m_iter, n_iter;  /* iteration dims of M and N, -1 when absent */
    int64_t M, N, K;
    bool trans_a, trans_b;
    float alpha, beta;
    int c_mode;          /* BD_MM_C_* */
    bool b_packed;       /* float32, B constant and shared by every batch: packed at create */
    /* B shared by every batch and A laid out like the output's rows: the batch axes and M form
     * one run of rows, and a block is rows [r0, r1): iteration dims before `cut` have tile 1, those
     * after it (up to M) are whole, and `cut_rows` rows lie under one index of `cut`. */
    bool merged;
    int cut;
    int64_t cut_rows;
    bool alpha_in_b;     /* b_packed and alpha != 1: B is scaled by alpha before packing */
    /* Element strides of A, B and Y along each output batch axis (0 where A or B broadcasts). */
    int64_t a_bstride[BD_MAX_RANK], b_bstride[BD_MAX_RANK], y_bstride[BD_MAX_RANK];
    int act;             /* BD_NN_ACT_*, after C (or the absorbed bias) and the residual */
    float act_min, act_max;
    int res;             /* an absorbed residual Add: operand of Y's shape, or -1 */
} bd_matmul_params;

enum { BD_NORM_BATCH = 0, BD_NORM_LAYER = 1 };

/* BatchNormalization (inference) and LayerNormalization. */
typedef struct bd_norm_params {
    int kind;            /* BD_NORM_* */
    int x, scale, bias, mean, var, y, mean_out, inv_out;
    double epsilon;
    /* BatchNormalization: channels C and the elements per channel of one batch item (inner);
     * per_activation (opset < 9, spatial = 0): the parameters have one value per (c, inner). */
    int64_t channels, inner;
    bool per_activation;
    bool folded;         /* all parameters constant: y = x * a + b with a, b computed at compile time */
    /* LayerNormalization: rows = prod(X[:axis]), cols = prod(X[axis:]). */
    int axis;
    int64_t rows, cols;
} bd_norm_params;

/* LSTM activation functions. */
enum {
    BD_RNN_SIGMOID = 0, BD_RNN_TANH, BD_RNN_RELU, BD_RNN_AFFINE, BD_RNN_LEAKY_RELU,
    BD_RNN_THRESHOLDED_RELU, BD_RNN_SCALED_TANH, BD_RNN_HARD_SIGMOID, BD_RNN_ELU,
    BD_RNN_SOFTSIGN, BD_RNN_SOFTPLUS
};

typedef struct bd_rnn_act {
    int fn; /* BD_RNN_* */
    float alpha, beta;
} bd_rnn_act;

typedef struct bd_lstm_params {
    int x, w, r, b, lens, h0, c0, p, y, yh, yc;
    int num_dir;
    bool reverse;        /* direction = reverse (one direction, run backwards) */
    bool batch_major;    /* layout = 1 */
    int64_t seq, batch, input, hidden;
    bool has_clip;
    float clip;
    bool input_forget;
    bool packed;         /* W and R constant: packed at create time */
    bd_rnn_act act[2][3]; /* per direction: f, g, h */
} bd_lstm_params;

#endif
