/* passes.h — the front half's passes (load, bind inputs, verify, infer + fold, simplify), in the order
 * bd_compile_front() calls them, and the per-op inference/folding functions named by the op
 * table. The passes over the nest program are declared by their folders (nest/, fuse/, ...). */
#ifndef BD_PASSES_H
#define BD_PASSES_H

#include "front/graph.h"

/* Resource caps (a model beyond them fails with BD_ERR_IO, exit 4). All but the activation cap
 * are applied while loading, before the data they count is allocated; the activation cap is
 * applied to the planned arena when C is emitted (bd_emit_opts), before the executable exists. */
typedef struct bd_limits {
    int64_t max_file_bytes;       /* model file plus external data */
    int64_t max_weight_bytes;     /* sum of initializer bytes */
    int64_t max_nodes;            /* nodes across all graphs */
    int max_graph_depth;          /* nesting of subgraphs */
    int64_t max_activation_bytes; /* the generated program's arena + scratch */
} bd_limits;
extern const bd_limits bd_default_limits;

/* onnx_load.c: from a file, or from bytes already in memory (path only names it in messages;
 * external data is looked up in dir). */
bd_status bd_onnx_load(const char *path, const bd_limits *lim, bd_model **out, bd_diag *d);
bd_status bd_onnx_load_buffer(const uint8_t *buf, size_t len, const char *path, const char *dir,
                              const bd_limits *lim, bd_model **out, bd_diag *d);
/* Graph-input bindings from the command line, each as the user wrote it: --shape "NAME=1x3x8x8",
 * --dim "SYMBOL=N", --const "NAME=FILE". */
typedef struct bd_input_binds {
    const char **shapes, **dims, **consts;
    int n_shapes, n_dims, n_consts;
    int64_t batch_at; /* a ranged --dim (SYMBOL=LO..HI) is bound to this extent; 0: to HI */
} bd_input_binds;
/* bind.c: pins input shapes, binds symbolic dims and freezes inputs to constants, before
 * inference; a binding the model contradicts or that names nothing is BD_ERR_USAGE. */
bd_status bd_bind_inputs(bd_model *m, const bd_input_binds *b, bd_diag *d);
/* Why graph input v is not static, with the options that would pin it, into buf; NULL when it
 * is static (or not a tensor). */
const char *bd_input_unbound(const bd_value *v, char *buf, size_t len);
/* onnx_load.c: a tensor from a .npy (v1-3) or ONNX TensorProto .pb file, in m's arena. */
bd_status bd_tensor_read_file(bd_model *m, const char *path, bd_tensor **out, bd_diag *d);
bd_status bd_verify(bd_model *m, bd_diag *d);        /* verify.c: names, order, arity, types */
bd_status bd_infer_graph(bd_graph *g, bd_diag *d);   /* infer.c: shapes + folding, topological;
                                                     * If/Loop/Scan are inlined as it reaches
                                                     * them (inline_control.c) */
/* inline_control.c: why the If, Loop or Scan n was left in place (its condition or trip count
 * is known only at run time, ...), into buf; NULL if it can be inlined. */
const char *bd_control_refusal(bd_graph *g, const bd_node *n, char *buf, size_t len);
void bd_remove_identities(bd_graph *g);             /* simplify.c: Identity / Dropout bypass,
                                                     * then bd_fold_into_conv */
void bd_fold_into_conv(bd_graph *g); /* fold_bn.c: BatchNorm, Mul/Add by per-channel constants */
void bd_dequantize_into_conv(bd_graph *g); /* qdq_conv.c: Conv (MatMul) of DequantizeLinear'd 8-bit
                                            * X and W as the internal DequantizedConv
                                            * (DequantizedMatMul) */
void bd_quantized_moves(bd_graph *g); /* qdq_moves.c: Q(op(DQ(x))) of one scale and zero point,
                                       * op a MaxPool, Reshape, Transpose, ..., as op(x) on the
                                       * 8-bit values */
void bd_dead_code(bd_graph *g);                     /* simplify.c: drop unused and folded nodes */


/* Load, bind inputs (binds may be NULL), verify, infer + fold, simplify: everything that
 * precedes lowering. qdq_int8: QDQ convolutions and matrix products become DequantizedConv and
 * DequantizedMatMul nodes computed on 8-bit values (bd_dequantize_into_conv; --qdq), and QDQ
 * MaxPools, Reshapes, Transposes, ... run on the 8-bit values (bd_quantized_moves); else they
 * stay float ops. */
bd_status bd_compile_front(const char *path, const bd_limits *lim, const bd_input_binds *binds,
                           bool qdq_int8, bd_model **out, bd_diag *d);
/* The same stages after loading, on a model already in memory (pipeline.c; used by the fuzzer). */
bd_status bd_front_passes(bd_model *m, bool qdq_int8, bd_diag *d);

/* Per-op functions referenced by ops.def. */
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower)                                     \
    bd_status infer(bd_graph *g, bd_node *n, bd_diag *d);                                          \
    bd_status fold(bd_graph *g, bd_node *n, bd_diag *d);
#include "front/ops.def"
BD_OPS(X)
#undef X

/* Shared inference helpers (graph.c unless noted). */
/* Numpy-style broadcast of two shapes (-1 = unknown extent); false when incompatible. An unknown
 * rank (< 0) on either side gives true with *rout = -1; out may alias a or b.
 * (infer/elementwise.c) */
bool bd_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                         int64_t *out);
/* Normalises axis in [-rank, rank) to [0, rank); false when out of range. */
bool bd_norm_axis(int64_t axis, int rank, int *out);
/* The integer contents of a constant value (1-D or scalar, at most max elements); false when the
 * value is absent, not constant, not an integer type or too long. */
bool bd_value_const_ints(const bd_value *v, int64_t *out, int max, int *n);

/* Where a Slice reads: per input axis, the first index, the step and the output extent (-1 when
 * not known at compile time), from its starts/ends/axes/steps clamped as the spec says; validates
 * them (infer/data.c; inference, folding and lowering all read Slice through it). */
typedef struct bd_slice_plan {
    int rank; /* input rank, -1 when unknown */
    int64_t start[BD_MAX_RANK], step[BD_MAX_RANK], dims[BD_MAX_RANK];
} bd_slice_plan;
bd_status bd_slice_plan_of(bd_graph *g, const bd_node *n, bd_diag *d, bd_slice_plan *p);

/* An Einsum equation resolved against its inputs' ranks (infer/reduce.c; inference and lowering
 * both read it): every distinct label (ellipsis dims are labels too) is a dim of the equation's
 * domain, the output's labels first, in output order, then the summed ones. Input k's dim j has
 * label label_of[k][j]; extents are -1 where unknown. */
enum { BD_EINSUM_MAX_INPUTS = 8 };
typedef struct bd_einsum_plan {
    int n_in, n_labels, n_out;
    int64_t extent[BD_MAX_RANK];
    int in_rank[BD_EINSUM_MAX_INPUTS];
    int label_of[BD_EINSUM_MAX_INPUTS][BD_MAX_RANK];
} bd_einsum_plan;
bd_status bd_einsum_plan_of(bd_graph *g, const bd_node *n, bd_diag *d, bd_einsum_plan *p);

/* A DFT node's axis, dft_length, output extent along the axis and mode (infer/reduce.c). */
bd_status bd_dft_plan_of(bd_graph *g, const bd_node *n, bd_diag *d, int *axis, int64_t *len,
                         int64_t *out_len, bool *inverse, bool *onesided);

/* Largest tensor (elements) that constant folding materialises; bigger results stay runtime work.
 * Folding stops altogether once BD_FOLD_MAX_TOTAL_BYTES have been folded, so that the compiler's
 * memory stays proportional to the model file whatever chain of folds a model asks for. */
#define BD_FOLD_MAX_ELEMS (1 << 20)
#define BD_FOLD_MAX_TOTAL_BYTES ((int64_t)256 << 20)

#endif
