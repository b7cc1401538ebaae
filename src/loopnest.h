/* loopnest.h — the tiled loop-nest IR: what every operator becomes before code generation.
 *
 * A nest is one parallel loop over the blocks of an iteration domain. The domain's dims are the
 * output dims of the op (plus reduction dims, described by extent only: a block always covers
 * them whole). A tiling cuts every output dim into tiles; the cross product of tiles is the grid of
 * blocks, each one unit of parallel work (one CPU task, one GPU thread block).
 *
 * Every operand, read or written, carries an access map: per operand dim, which index range a
 * block touches, as a function of the block's range [lo, hi) along one iteration dim:
 *
 *   AFFINE  [scale*lo + offset, scale*(hi-1) + offset + window]  (inclusive, clamped to the extent)
 *           covers elementwise (1,0,0), broadcast (scale 0, offset 0, window 0), strided and
 *           dilated windows (stride, -pad, (k-1)*dilation), transpose (another iter dim), slices
 *           and concat/split offsets;
 *   FULL    the whole extent (a reduced dim, or a dim the op reads entirely, e.g. softmax's axis);
 *   OPAQUE  some subset that depends on data (Gather's indices) or on a reshape that mixes dims:
 *           consumers must assume the whole extent.
 *
 * The block-dependency analysis, fusion and scheduling read only this IR: pushing a consumer
 * block's footprint through its input's access map into the producer's output space and
 * intersecting with the producer's grid gives the producer blocks it needs. So no op may bypass
 * it: a nest's `body` names the hand-written or generated code that computes one block, but what
 * that code reads and writes must be exactly what the access maps say (a superset is allowed only
 * as FULL/OPAQUE). */
#ifndef BD_LOOPNEST_H
#define BD_LOOPNEST_H

#include <stdio.h>

#include "graph.h"

typedef enum bd_access_kind {
    BD_ACCESS_AFFINE = 0,
    BD_ACCESS_FULL,
    BD_ACCESS_OPAQUE,
} bd_access_kind;

typedef struct bd_access_dim {
    bd_access_kind kind;
    int iter;       /* AFFINE: the iteration dim driving this operand dim, -1 = none (constant) */
    int64_t scale;  /* AFFINE: index = scale * i + offset (+ 0..window) */
    int64_t offset;
    int64_t window;
} bd_access_dim;

typedef struct bd_operand {
    int value;      /* value index in the graph */
    bool write;     /* written by the nest (its outputs), else read */
    int rank;
    bd_access_dim dims[BD_MAX_RANK];
} bd_operand;

/* What computes one block. One row per kind; the C emitter has one function per kind. */
#define BD_BODIES(X)                                                                               \
    X(ELEMENTWISE) /* unary/binary/ternary maps with broadcasting, Cast, Where, Clip, ... */       \
    X(COPY)        /* index remapping: Transpose, Slice, Expand, Concat/Split pieces, Reshape */   \
    X(PAD)                                                                                         \
    X(GATHER)                                                                                      \
    X(RESIZE)                                                                                      \
    X(CONV)        /* Conv (grouped, any rank), with the packed-weight GEMM micro-kernel */       \
    X(CONV_TRANSPOSE)                                                                              \
    X(POOL)        /* MaxPool, AveragePool */                                                     \
    X(GLOBAL_POOL)                                                                                 \
    X(MATMUL)      /* MatMul, Gemm */                                                             \
    X(REDUCE)      /* ReduceSum/Mean/Max */                                                       \
    X(SOFTMAX)     /* Softmax, LogSoftmax */                                                      \
    X(NORM)        /* BatchNormalization (inference), LayerNormalization */                       \
    X(LSTM)        /* the recurrence: a block is one (direction, batch tile) over all steps */    \
    X(CONSTANT)    /* writes a compile-time constant (graph outputs that folded) */

typedef enum bd_body {
#define X(k) BD_BODY_##k,
    BD_BODIES(X)
#undef X
    BD_BODY_COUNT
} bd_body;

enum { BD_NEST_MAX_OPERANDS = 16 };

typedef struct bd_nest {
    int node;          /* graph node this nest computes (or part of: Concat/Split give one each) */
    bd_body body;
    int part;          /* which piece of a multi-nest op (Concat input k, Split output k) */
    int n_iter;        /* iteration dims = rank of the tiled output */
    int64_t extent[BD_MAX_RANK];
    int64_t tile[BD_MAX_RANK];
    int64_t grid[BD_MAX_RANK]; /* ceil(extent / tile) */
    int64_t n_blocks;          /* product of grid (1 for rank 0) */
    int n_reduce;              /* reduction dims, always whole inside a block */
    int64_t reduce_extent[4];
    int n_operands;
    bd_operand operands[BD_NEST_MAX_OPERANDS];
    int64_t scratch_bytes;     /* per-thread scratch the body needs */
    /* Resolved op parameters (explicit pads, strides, perms, ...) for the body, laid out as the
     * struct its lowering file declares (e.g. bd_conv_params in lower_nn.h); see BD_NEST_PARAMS. */
    _Alignas(8) unsigned char params[1024];
} bd_nest;

/* Typed view of a nest's params, checked to fit. */
#define BD_NEST_PARAMS(nest, type)                                                                 \
    ((void)sizeof(char[sizeof(type) <= sizeof((nest)->params) ? 1 : -1]), (type *)(nest)->params)

/* --fusion: none = one nest per node; op = a Conv/Gemm/MatMul absorbs a following bias, residual
 * Add and activation into its epilogue (fuse.c). Set before bd_lower. */
typedef enum bd_fusion { BD_FUSION_NONE = 0, BD_FUSION_OP = 1 } bd_fusion;

typedef struct bd_program {
    bd_graph *graph;
    bd_fusion fusion;
    bd_vec nests; /* bd_nest, in a valid execution order */
} bd_program;

/* Per-op lowering functions named by the op table's `lower` column (lower_*.c). */
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower)                              \
    bd_status lower(bd_program *p, int node, bd_diag *d);
#include "ops.def"
BD_OPS(X)
#undef X

/* lower.c: one or more nests per live node, in topological order. */
bd_status bd_lower(bd_graph *g, bd_program *p, bd_diag *d);
void bd_program_free(bd_program *p);

/* Helpers for the per-op lowering functions (lower.c). */
bd_nest *bd_nest_begin(bd_program *p, int node, bd_body body, const bd_value *out);
bd_operand *bd_nest_operand(bd_nest *n, int value, bool write, int rank);
void bd_access_identity(bd_operand *o, int first_iter);        /* dim k <- iter first_iter+k */
void bd_access_broadcast(bd_operand *o, const bd_value *in, const bd_value *out); /* numpy rules */
void bd_access_full(bd_operand *o);
void bd_access_opaque(bd_operand *o);
void bd_nest_tile(bd_nest *n, const int64_t *tile); /* sets tile (clamped to extents) and grid */
/* Default tiling: whole trailing dims up to about target elements per block, splitting leading
 * dims, so that there are enough blocks for all threads. */
void bd_nest_tile_default(bd_nest *n, int64_t target_elems);

/* The region of operand o (inclusive lo/hi per dim) that block b of nest n touches. */
void bd_nest_block_range(const bd_nest *n, int64_t block, int64_t *lo, int64_t *hi);
void bd_operand_region(const bd_nest *n, const bd_operand *o, const bd_value *v, const int64_t *lo,
                       const int64_t *hi, int64_t *rlo, int64_t *rhi);

/* Text dump (--dump=tiles) and the verifier run between passes in test builds. */
void bd_program_dump(const bd_program *p, FILE *f);
bd_status bd_program_verify(const bd_program *p, bd_diag *d);

#endif
