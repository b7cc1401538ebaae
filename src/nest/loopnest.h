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

#include "front/graph.h"
#include "nest/params.h"

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

/* What computes one block, and the member of bd_nest_params it uses. One row per kind; a printer
 * has one function per kind. */
#define BD_BODIES(X)                                                                               \
    X(ELEMENTWISE, expr)  /* an expression per element (unary/binary/ternary maps, Cast, Where) */ \
    X(COPY, copy)         /* index remapping: Transpose, Slice, Expand, Concat/Split, Reshape */   \
    X(PAD, pad)                                                                                    \
    X(GATHER, gather)                                                                              \
    X(RESIZE, resize)                                                                              \
    X(ROI_ALIGN, roi_align)                                                                        \
    X(CONV, conv)         /* Conv (grouped, any rank) */                                           \
    X(CONV_TRANSPOSE, conv)                                                                        \
    X(POOL, pool)         /* MaxPool, AveragePool */                                               \
    X(GLOBAL_POOL, global_pool)                                                                    \
    X(MATMUL, matmul)     /* MatMul, Gemm */                                                       \
    X(ATTENTION, attention) /* softmax(Q K^T) V per block of rows (fuse/attention.c) */            \
    X(REDUCE, reduce)     /* ReduceSum/Mean/Max */                                                 \
    X(SOFTMAX, softmax)   /* Softmax, LogSoftmax */                                                \
    X(NORM, norm)         /* BatchNormalization (inference), LayerNormalization */                 \
    X(LSTM, lstm)         /* the recurrence: a block is one (direction, batch tile), all steps */  \
    X(SCATTER, scatter)   /* ScatterElements/ND, MaxUnpool: one block, data then each update */   \
    X(CONSTANT, none)     /* writes a compile-time constant (graph outputs that folded) */

typedef enum bd_body {
#define X(k, params) BD_BODY_##k,
    BD_BODIES(X)
#undef X
    BD_BODY_COUNT
} bd_body;

enum { BD_NEST_MAX_OPERANDS = 16 };

/* What a nest applies to each value it computes before storing it. Fusion (fuse/fuse.c) fills it
 * when a nest absorbs the elementwise consumers of its output; only bodies whose printers apply
 * epilogues get one (CONV, CONV_TRANSPOSE, MATMUL; NORM, BatchNormalization's, an activation
 * only). */
typedef struct bd_epilogue {
    int residual; /* operand added to the value (an absorbed residual Add), -1: none */
    bd_expr act;  /* then this expression of LOAD 0 (the value): an absorbed activation; n == 0: none */
    /* then an absorbed QuantizeLinear: the output (8-bit) is saturate(round(v / q_scale) + q_zero),
     * act then only clamps (bd_expr_clamp_bounds); set for the 8-bit convolution kernel only */
    bool requant;
    double q_scale, q_zero;
    /* then, with requant, an absorbed quantized residual Add (fuse.c): residual is an 8-bit
     * operand, and the requantized result y1 (of dtype q_dtype) becomes
     * saturate(round(clamp((y1 - qr_y_zero) * qr_y_scale + (r - qr_r_zero) * qr_r_scale,
     * qr_lo, qr_hi) / qr_scale) + qr_zero), the output operand's dtype */
    bool qresidual;
    int q_dtype;
    double qr_y_scale, qr_y_zero, qr_r_scale, qr_r_zero, qr_lo, qr_hi, qr_scale, qr_zero;
} bd_epilogue;

typedef struct bd_nest {
    int node;          /* graph node this nest computes (or part of: Concat/Split give one each) */
    bd_body body;
    int part;          /* which piece of a multi-nest op (Concat input k, Split output k) */
    int n_iter;        /* iteration dims = rank of the tiled output */
    int64_t extent[BD_MAX_RANK];
    int64_t tile[BD_MAX_RANK];
    int64_t grid[BD_MAX_RANK]; /* ceil(extent / tile) */
    bool whole[BD_MAX_RANK];   /* iteration dims every block must cover whole (the body reads
                                  them entirely: a softmax axis, normalised axes); tilers keep them */
    int64_t n_blocks;          /* product of grid (1 for rank 0) */
    int n_reduce;              /* reduction dims, always whole inside a block */
    int64_t reduce_extent[4];
    int n_operands;
    bd_operand operands[BD_NEST_MAX_OPERANDS];
    int64_t scratch_bytes;     /* per-thread scratch the body needs */
    bd_nest_params params;     /* the body's resolved parameters: read through BD_NEST_PARAMS */
    bd_epilogue epi;
} bd_nest;

/* The body's parameters, checked against the body: BD_NEST_PARAMS(nest, conv). */
void bd_nest_params_check(bd_body body, bd_param_kind kind);
#define BD_NEST_PARAMS(nest, member)                                                               \
    (bd_nest_params_check((nest)->body, BD_PARAMS_##member), &(nest)->params.member)

/* --fusion: none = one nest per node; op = a Conv/Gemm/MatMul absorbs a following bias, residual
 * Add and activation into its epilogue; block = op, then chains of elementwise nests joined by
 * IDENTITY block dependencies become one nest (fuse.c). Set before bd_lower. */
typedef enum bd_fusion { BD_FUSION_NONE = 0, BD_FUSION_OP = 1, BD_FUSION_BLOCK = 2 } bd_fusion;

/* One fusion decision, for `bdc analyze`: the node of the nest absorbed (or not) into the node of
 * another (-1: none), and why it was or was not fused (a static string). */
typedef struct bd_fusion_note {
    int absorbed_node, into_node;
    bool fused;
    const char *why;
} bd_fusion_note;

typedef struct bd_program {
    bd_graph *graph;
    bd_fusion fusion;
    bool winograd; /* --winograd on: the CPU tiler may run 3x3 convolutions by Winograd */
    int tile_threads; /* --tile-threads: the most threads the CPU tiler sizes blocks for */
    bool i8_direct;   /* the CPU tiler may put int8 convolutions on the kernel's direct path */
    /* --precision bf16 on the CPU: the 16-lane direct convolution runs in bfloat16, so the tiler
     * takes no Winograd tiles (the direct products at twice the rate beat them) and sizes that
     * kernel's scratch for its rows in bfloat16 too */
    bool bf16;
    /* the CPU's multiply-adds are 256 bits wide, half the rate the tiler's cycles count: AVX2
     * without AVX-512, or AVX-512 run as two 256-bit halves (AMD Zen 4); so the CPU tiler weighs
     * Winograd's transforms and dispatch at half their cycles against the products, from 16
     * channels (tile.c wino_tiling) */
    bool fma_half;
    bd_vec fusion_notes; /* bd_fusion_note, in decision order */
    int *view_of; /* per value: the value whose bytes it is (a zero-copy reshape), -1; NULL: none */
    /* per value: the Concat output it is written into in place (fuse/views.c; for a concat chain's
     * slice, the chain's container, and the slice has no writer), -1, and where: index inside_at
     * along dim inside_axis of the container; NULL: none */
    int *inside_of, *inside_axis;
    int64_t *inside_at;
    bd_vec nests;   /* bd_nest, in a valid execution order */
    bd_arena arena; /* tables the nests point to (Resize sampling tables) */
} bd_program;

/* Allocates inside_of, inside_axis and inside_at for every value of the graph, nothing inside
 * anything (the passes that place values inside others call it once every value is made). */
void bd_program_inside_init(bd_program *p);
/* After a pass added values to the graph (there were `before`): the per-value arrays already
 * allocated (view_of, inside_*) cover them, as not views and inside nothing. */
void bd_program_values_added(bd_program *p, size_t before);

/* The value whose storage v uses: v itself, or the root of the view v is (fuse/views.c). */
static inline int bd_program_root(const bd_program *p, int v) {
    return p->view_of && p->view_of[v] >= 0 ? p->view_of[v] : v;
}

/* The value whose storage v's bytes are part of: its view root, or the Concat output that root is
 * written into in place. */
static inline int bd_program_storage_root(const bd_program *p, int v) {
    v = bd_program_root(p, v);
    return p->inside_of && p->inside_of[v] >= 0 ? p->inside_of[v] : v;
}

/* Per-op lowering functions named by the op table's `lower` column (lower_*.c). */
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower)                              \
    bd_status lower(bd_program *p, int node, bd_diag *d);
#include "front/ops.def"
BD_OPS(X)
#undef X

/* lower/support.c: calls report() for every node (or graph input/output) bdc cannot compile,
 * with the reason; returns how many. node is NULL for a graph input/output, named by value. Runs
 * before lowering and lists every offender at once, including what a node's lowering refuses. */
typedef void (*bd_unsupported_fn)(void *ctx, const bd_node *node, const bd_value *value,
                                  const char *reason);
int bd_support_check(bd_graph *g, bd_unsupported_fn report, void *ctx);

/* lower.c: one or more nests per live node, in topological order (verified); or those of one
 * node, appended to p. */
bd_status bd_lower(bd_graph *g, bd_program *p, bd_diag *d);
bd_status bd_lower_node(bd_program *p, int node, bd_diag *d);
void bd_program_free(bd_program *p);

/* Helpers for the per-op lowering functions (lower.c). */
bd_nest *bd_nest_begin(bd_program *p, int node, bd_body body, const bd_value *out);
bd_operand *bd_nest_operand(bd_nest *n, int value, bool write, int rank);
void bd_access_identity(bd_operand *o, int first_iter);        /* dim k <- iter first_iter+k */
void bd_access_broadcast(bd_operand *o, const bd_value *in, const bd_value *out); /* numpy rules */
void bd_access_full(bd_operand *o);
void bd_access_opaque(bd_operand *o);
/* Whether operand o of a nest with n_iter iteration dims is the identity map (dim k <- iter k,
 * no offset or window): it touches exactly the element the nest's iteration is at. */
bool bd_access_is_identity(const bd_operand *o, int n_iter);
/* Sets the tile (clamped to the extents) and the grid, then the access maps that depend on the
 * tile (a grouped convolution's input channels, a reshape's split dims): the one way tilers and
 * lowering set a tile, so a nest's maps are always those of its tile. */
void bd_nest_set_tile(const bd_graph *g, bd_nest *n, const int64_t *tile);
/* Tiling of whole trailing dims up to about target elements per block, splitting leading dims
 * (the tilers' common default). */
void bd_nest_tile_default(const bd_graph *g, bd_nest *n, int64_t target_elems);
/* Tiling with the dims marked whole uncut and the others cut from the innermost out so that a
 * block holds about target elements (at least the whole dims). */
void bd_nest_tile_keeping_whole(const bd_graph *g, bd_nest *n, int64_t target);

/* A reshape's dims in groups whose extents multiply to the same count on both sides (unit dims
 * left out): group k is input dims xd[gx0[k] .. gx1[k]) and output dims yd[gy0[k] .. gy1[k]). */
typedef struct bd_reshape_groups {
    int n, nx, ny;
    int xd[BD_MAX_RANK], yd[BD_MAX_RANK];
    int gx0[BD_MAX_RANK], gx1[BD_MAX_RANK], gy0[BD_MAX_RANK], gy1[BD_MAX_RANK];
} bd_reshape_groups;
void bd_reshape_groups_of(const bd_value *x, const bd_value *y, bd_reshape_groups *r);

/* The region of operand o (inclusive lo/hi per dim) that block b of nest n touches. */
void bd_nest_block_range(const bd_nest *n, int64_t block, int64_t *lo, int64_t *hi);
void bd_operand_region(const bd_nest *n, const bd_operand *o, const bd_value *v, const int64_t *lo,
                       const int64_t *hi, int64_t *rlo, int64_t *rhi);

/* Text dump (--dump=tiles) and the verifier run between passes in test builds. */
void bd_program_dump(const bd_program *p, FILE *f);
bd_status bd_program_verify(const bd_program *p, bd_diag *d);

#endif
