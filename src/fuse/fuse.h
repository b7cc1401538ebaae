/* fuse.h — fusion, a pass over the nest program after lowering.
 *
 * With fusion on (`bdc compile --fusion op`, and `block`, the CPU's default), a CONV,
 * CONV_TRANSPOSE or MATMUL nest whose float32 output has no other use (one reading nest, not a
 * graph output) absorbs the elementwise nests that consume it, in this order:
 *   - MATMUL whose B has an N axis: an Add of a bias broadcast along the last dim (N values,
 *     shape [N] or [1, ..., 1, N]), which becomes its C (the GEMM kernel's per-column bias);
 *   - then an Add of another tensor of exactly the output's shape, read where the block writes
 *     (a residual): the nest's epilogue adds it;
 *   - then one activation: an expression of the value alone (Relu, LeakyRelu, HardSwish, Clip
 *     with constant bounds), or SiLU written as Mul(x, Sigmoid(x)) (both nests absorbed; x read
 *     by exactly those two, the expression op SILU): the epilogue's expression, composed from
 *     the absorbed nest's.
 * An 8-bit convolution on the CPU kernel's direct path then takes the QuantizeLinear after it
 * (requant), and with fusion block, after the elementwise chains merge, the nest computing a QDQ
 * residual Add of its bytes, requantized (qresidual).
 * With fusion block the chains and tables.c's lookups alternate until nothing changes (an 8-bit
 * value whose DequantizeLinear several nests read stays stored for them), and the chains'
 * QuantizeLinear-DequantizeLinear pairs are simplified (bd_expr_simplify).
 * A BatchNormalization nest (NORM) that no Conv took in (DenseNet's, on a Concat) absorbs only
 * the activation, which its printers apply before the store.
 * A tensor added must be computed before the absorbing nest. The nest then writes the last
 * absorbed nest's output, the absorbed nests are removed, and the intermediate values are never
 * stored. The decisions read only the nests (bodies, expressions, access maps) and the values'
 * shapes; producer and consumer indices are built once, so the pass is linear in the program. */
#ifndef BD_FUSE_H
#define BD_FUSE_H

#include "nest/loopnest.h"

bd_status bd_fuse(bd_program *p, bd_diag *d);

/* Producer and consumer indices over the nests (fuse.c), built once by a pass. */
typedef struct bd_fuse_index {
    int *last_writer;   /* per value: the last nest writing it, -1 */
    int *reader_start;  /* per value: its readers are reader[reader_start[v] .. reader_start[v+1]) */
    int *reader;        /* nest indices, each nest once per value */
    bool *graph_output; /* per value */
} bd_fuse_index;
void bd_fuse_index_build(const bd_program *p, bd_fuse_index *ix);
void bd_fuse_index_free(bd_fuse_index *ix);
/* The one nest reading v when v may disappear (a single reader, not a graph output), else -1. */
int bd_fuse_sole_reader(const bd_fuse_index *ix, int v);
/* Per-element cost of an expression, in rough flops (fuse.c): what a consumer recomputes when it
 * inlines a producer that another consumer also inlines. */
int bd_fuse_expr_cost(const bd_expr *x);
/* tables.c: with fusion block, each elementwise nest computing an expensive function of one 8-bit
 * tensor (its other operands one-element values) becomes a lookup in a table of the function's
 * 256 values, which a new nest just before it computes; true if any did. */
bool bd_fuse_tables(bd_program *p);
/* tables.c: the operand of nest n whose bytes n's expression is a function of (every other
 * operand it loads holds one element, tables aside), or -1. */
int bd_table_index(const bd_program *p, const bd_nest *n);
/* --dump=fuse: every fusion decision, taken or not, and why. */
void bd_fusion_dump(const bd_program *p, FILE *f);

/* siblings.c: with fusion block, convolutions of the same input and window, each followed by the
 * same activation alone (an Inception block's 1x1 branches), become one convolution over their
 * stacked weights and one activation; each branch's output is a slice of the stacked output
 * (inside_of). Runs after lowering, before tiling. */
void bd_fuse_siblings(bd_program *p);
/* A fusion formed after the tile pass (attention.c, conv_pool.c), with fusion block where the
 * target has a tiler for it (none over a range of batches, whose nests plan/batch.c slices as
 * the tile pass tiled them): at(p, ix, i, dead, tile) over every nest not yet absorbed, one index
 * built for the pass (a fusion keeps every value's writer and reader count but the dropped
 * ones'), then the nests marked dead dropped and the program verified. */
typedef bool (*bd_fuse_tiled_at)(bd_program *p, const bd_fuse_index *ix, int i, bool *dead,
                                 bool (*tile)(const bd_graph *, bd_nest *, int));
bd_status bd_fuse_tiled_pass(bd_program *p, bd_fuse_tiled_at at,
                             bool (*tile)(const bd_graph *, bd_nest *, int), bd_diag *d);
/* attention.c: with fusion block, attention (a product, an optional elementwise score, a
 * softmax along the last dim, a product) becomes one ATTENTION nest computed per block of rows,
 * tiled by `tile` (the target's tile_attention; where it returns false the nests stay). Runs
 * after bd_fuse. */
bd_status bd_fuse_attention(bd_program *p, bool (*tile)(const bd_graph *, bd_nest *, int), bd_diag *d);
/* conv_pool.c: with fusion block, a packed 2-D convolution whose output only a 2-D MaxPool reads
 * absorbs the pool (bd_conv_params.pooled), tiled by `tile` (the target's tile_conv_pool; where
 * it returns false the nests stay). Runs after bd_fuse. */
bd_status bd_fuse_conv_pool(bd_program *p, bool (*tile)(const bd_graph *, bd_nest *, int), bd_diag *d);
/* views.c: Reshape-family copies whose output need not own its bytes become views of their
 * input (bd_program.view_of); their nests are removed. Runs after bd_fuse, with fusion op or block. */
void bd_make_views(bd_program *p);
/* views.c: Concat parts written in place into contiguous slices of the output (inside_of), and
 * concat chains (DenseNet's) into their last concat, the earlier concats its slices; their copy
 * nests are removed. After bd_make_views, with fusion op or block. */
void bd_concat_in_place(bd_program *p);

#endif
