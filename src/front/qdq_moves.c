/* qdq_moves.c — ops that only move or select values (MaxPool, Reshape, Transpose, ...) between
 * DequantizeLinear and QuantizeLinear of one scale and zero point run on the 8-bit values.
 *
 * onnxruntime's quantizer (QDQ format) wraps such an op as Q(op(DQ(xq))) with the same scale s
 * and zero point z on both sides: a MaxPool, and a transformer's Reshape and Transpose of each
 * attention head (eight per layer). DequantizeLinear is (q - z) * s, non-decreasing in q for
 * s > 0, so the maximum of the dequantized window is the dequantized maximum, and a move moves
 * the dequantized values; and QuantizeLinear gives back the integer exactly: (k * s) / s rounds
 * to k for |k| <= 255 (the two roundings move it by less than 255 * 2^-23). So the op reads xq
 * and writes the QuantizeLinear's output itself: the float tensors before and after it, and the
 * two passes that made them, disappear (the move copies a byte per element, or nothing as a
 * view). The DequantizeLinear stays while anything else reads its output.
 *
 * It applies when both scales are the same normal positive float32 constant (one value), the
 * zero points the same constant of xq's type (or both absent), a MaxPool has no Indices output,
 * and the QuantizeLinear alone reads the op's values (which are not a graph output). */
#include <float.h>
#include <math.h>

#include "front/passes.h"

/* The one constant element of v as a double, or NAN. */
static double constant_of(const bd_value *v) {
    return v && v->constant && v->constant->numel == 1 ? bd_tensor_get_f64(v->constant, 0) : NAN;
}

/* Whether the scale and zero point inputs (1, 2) of a and b are the same constants. */
static bool same_quantization(bd_graph *g, const bd_node *a, const bd_node *b) {
    double sa = constant_of(bd_node_in(g, a, 1)), sb = constant_of(bd_node_in(g, b, 1));
    const bd_value *za = bd_node_in(g, a, 2), *zb = bd_node_in(g, b, 2);
    if (!(sa == sb && sa >= FLT_MIN && sa <= FLT_MAX / 256) ||
        bd_node_in(g, a, 1)->dtype != BD_DT_FLOAT || bd_node_in(g, b, 1)->dtype != BD_DT_FLOAT)
        return false;
    if (!za || !zb) return !za && !zb;
    return za->dtype == zb->dtype && constant_of(za) == constant_of(zb);
}

/* The live node that alone reads value v (not a graph output), or NULL. */
static bd_node *sole_reader(bd_graph *g, int v) {
    if (bd_graph_value(g, v)->n_uses != 1) return NULL;
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v) return n;
    }
    return NULL; /* a graph output */
}

/* The ops whose output is input 0's values moved or selected (the other inputs are shapes, axes,
 * bounds). */
static bool moves_values(bd_op op) {
    return op == BD_OP_MAX_POOL || op == BD_OP_RESHAPE || op == BD_OP_TRANSPOSE ||
           op == BD_OP_FLATTEN || op == BD_OP_SQUEEZE || op == BD_OP_UNSQUEEZE ||
           op == BD_OP_SLICE || op == BD_OP_EXPAND;
}

static void rewrite(bd_graph *g, int at) {
    bd_node *mover = bd_graph_node(g, at);
    if (mover->n_outputs != 1 || mover->n_inputs < 1) return;
    const bd_value *x = bd_node_in(g, mover, 0);
    if (!x || x->producer < 0 || x->dtype != BD_DT_FLOAT) return;
    bd_node *dq = bd_graph_node(g, x->producer);
    if (dq->dead || dq->op != BD_OP_DEQUANTIZE_LINEAR || bd_attr_int(dq, "block_size", 0) != 0)
        return;
    const bd_value *xq = bd_node_in(g, dq, 0);
    bd_node *q = sole_reader(g, mover->outputs[0]);
    if (!xq || !bd_dtype_is_byte(xq->dtype) || !q || q->op != BD_OP_QUANTIZE_LINEAR || q->n_outputs != 1 ||
        bd_node_out(g, q, 0)->dtype != xq->dtype || !same_quantization(g, dq, q))
        return;
    bd_graph_value(g, mover->outputs[0])->producer = -1; /* the float values, now unused */
    bd_graph_value(g, q->outputs[0])->producer = at;
    mover->inputs[0] = dq->inputs[0];
    mover->outputs[0] = q->outputs[0];
    q->dead = true;
    bd_graph_count_uses(g);
}

void bd_quantized_moves(bd_graph *g) {
    if (bd_graph_has_subgraphs(g)) return;
    bd_graph_count_uses(g);
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (!n->dead && moves_values(n->op)) rewrite(g, (int)i);
    }
}
