/* fuse.h — epilogue fusion decided at lowering time: which consumers a Conv, ConvTranspose, Gemm
 * or MatMul node absorbs into its own nest.
 *
 * With fusion on (`bdc compile --fusion op`, the default), a producer whose output has no other
 * use (one consuming node, not a graph output) absorbs, in this order:
 *   - MatMul only: an Add (opset >= 7) of a bias broadcast along the last dim (N values, shape
 *     [N] or [1, ..., 1, N]), computed by the GEMM kernel's per-column bias;
 *   - then an Add (opset >= 7) of another tensor of exactly the output's shape (a residual);
 *   - then one activation: Relu, Clip with constant scalar bounds (attributes before opset 11),
 *     LeakyRelu, HardSwish, or SiLU written as Mul(x, Sigmoid(x)) (Sigmoid and Mul both absorbed;
 *     here x has exactly those two consumers).
 * The producer's nest then writes the last absorbed node's output and applies bias, residual and
 * activation in its epilogue; the intermediate values are never stored, and the absorbed nodes get no nest (their
 * lowering returns early when bd_fuse_absorbed says so). Only float32 outputs are fused.
 *
 * The decision is a pure function of the graph (no side table): the producer's lowering and the
 * consumer's query both call bd_fuse_match, so they always agree. */
#ifndef BD_FUSE_H
#define BD_FUSE_H

#include "loopnest.h"

enum { BD_FUSE_MAX_ABSORBED = 4 };

typedef struct bd_fuse_epilogue {
    int act;                /* BD_NN_ACT_* of lower_nn.h */
    float act_min, act_max; /* CLIP bounds; LEAKY_RELU: alpha in act_min */
    int bias;               /* value index of the bias added along the last dim (MatMul), or -1 */
    int residual;           /* value index of an added tensor of the output's shape, or -1 */
    int out;                /* value the fused nest writes: the last absorbed node's output */
    int n_absorbed;
    int absorbed[BD_FUSE_MAX_ABSORBED]; /* node indices */
} bd_fuse_epilogue;

/* Whether node (a Conv, ConvTranspose, Gemm or MatMul) absorbs consumers, and which. On false,
 * ep says: no activation, no bias, out = the node's own output. */
bool bd_fuse_match(const bd_program *p, int node, bd_fuse_epilogue *ep);

/* Whether node was absorbed by its producer's nest (its lowering must then emit nothing). */
bool bd_fuse_absorbed(const bd_program *p, int node);

#endif
