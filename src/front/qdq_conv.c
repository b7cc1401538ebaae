/* qdq_conv.c — a Conv (or MatMul) of DequantizeLinear'd 8-bit X and W computed on the 8-bit
 * values.
 *
 * onnxruntime's quantizer (QDQ format) writes a quantized convolution as
 * Conv(DequantizeLinear(xq, sx, zx), DequantizeLinear(wq, sw, zw), B): X and W are integers times
 * their scales, so the Conv is conv(xq - zx, wq - zw) * sx * sw[m] + B[m] with the sum exact in
 * int32. Inference has already folded W's DequantizeLinear into float weights; this pass goes back
 * to the 8-bit ones and turns the Conv into an internal DequantizedConv node of
 * (xq, wq, B, sx, zx, sw, zw), which lowering (lower/nn.c) computes on int8 kernels where the
 * target has them. The node keeps the Conv's name, attributes and output value; the
 * DequantizeLinear nodes die in bd_dead_code when nothing else reads them.
 *
 * It applies when X's scale and zero point are one constant value each, W is a constant 8-bit
 * tensor dequantized per tensor or per output channel (axis 0) with one zero point (a per-channel
 * zero point whose values are all equal counts as one), and both dequantize to float32. Anything
 * else stays a float Conv of the dequantized values. A MatMul of a DequantizeLinear'd activation
 * and constant weights (a QDQ transformer's projections) becomes a DequantizedMatMul the same way
 * (rewrite_matmul), which also absorbs the QuantizeLinear after it (absorb_quantize), and so does
 * a Gemm of them with alpha and beta 1 (a QDQ classifier, rewrite_gemm), its C the bias. */
#include <string.h>

#include "front/passes.h"

/* The live DequantizeLinear node producing value v in float32, or NULL. */
static bd_node *dequantize_of(bd_graph *g, const bd_value *v) {
    if (!v || v->producer < 0 || v->dtype != BD_DT_FLOAT) return NULL;
    bd_node *q = bd_graph_node(g, v->producer);
    if (q->dead || q->op != BD_OP_DEQUANTIZE_LINEAR || q->n_outputs < 1 ||
        bd_attr_int(q, "block_size", 0) != 0)
        return NULL;
    const bd_value *x = bd_node_in(g, q, 0), *scale = bd_node_in(g, q, 1);
    const bd_value *zero = bd_node_in(g, q, 2);
    if (!x || !bd_dtype_is_byte(x->dtype) || !scale || !scale->constant || scale->dtype != BD_DT_FLOAT ||
        (zero && (!zero->constant || zero->dtype != x->dtype || zero->constant->numel != scale->constant->numel)))
        return NULL;
    return q;
}

static bool one_element(const bd_value *v) { return v->constant && v->constant->numel == 1; }

/* The zero point input of W's DequantizeLinear q as one value: the input itself when it has one
 * element, -1 when it is absent or all zeros; false when its values differ. */
static bool weight_zero(bd_graph *g, const bd_node *q, int *out) {
    *out = -1;
    const bd_value *z = bd_node_in(g, q, 2);
    if (!z) return true;
    const bd_tensor *t = z->constant;
    int64_t first = bd_tensor_get_i64(t, 0);
    for (int64_t i = 1; i < t->numel; i++)
        if (bd_tensor_get_i64(t, i) != first) return false;
    if (t->numel == 1) *out = q->inputs[2];
    return t->numel == 1 || first == 0;
}

/* What Conv and MatMul ask of their two DequantizeLinears: qx's (the activation's) scale and zero
 * point one value each; qw's input constant, of rank `rank`, its scale one value or 1-D along
 * that input's axis `axis` (W's output channels, B's columns); its zero point one value
 * (*zw, -1: none). */
static bool dq_operands_fit(bd_graph *g, const bd_node *qx, const bd_node *qw, int rank, int axis,
                            int *zw) {
    const bd_value *sx = bd_node_in(g, qx, 1), *zx = bd_node_in(g, qx, 2);
    const bd_value *wq = bd_node_in(g, qw, 0), *sw = bd_node_in(g, qw, 1);
    if (!one_element(sx) || (zx && !one_element(zx)) || !wq->constant || wq->rank != rank)
        return false;
    if (!one_element(sw)) {
        int at;
        if (sw->rank != 1 || !bd_norm_axis(bd_attr_int(qw, "axis", 1), wq->rank, &at) ||
            at != axis || sw->dims[0] != wq->dims[axis])
            return false;
    }
    return weight_zero(g, qw, zw);
}

static void rewrite(bd_graph *g, bd_node *n) {
    const bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (!y || y->constant || y->dtype != BD_DT_FLOAT || !w || !w->constant || w->rank < 3) return;
    bd_node *qx = dequantize_of(g, x), *qw = dequantize_of(g, w);
    if (!qx || !qw || x->constant) return;
    int zw; /* W's scale one value or one per output channel (axis 0) */
    if (!dq_operands_fit(g, qx, qw, w->rank, 0, &zw)) return;
    const bd_value *zx = bd_node_in(g, qx, 2);
    int *in = bd_arena_alloc(&g->model->arena, 7 * sizeof *in);
    if (!in) return;
    in[0] = qx->inputs[0];
    in[1] = qw->inputs[0];
    in[2] = n->n_inputs > 2 ? n->inputs[2] : -1;
    in[3] = qx->inputs[1];
    in[4] = zx ? qx->inputs[2] : -1;
    in[5] = qw->inputs[1];
    in[6] = zw;
    n->op = BD_OP_DEQUANTIZED_CONV;
    n->inputs = in;
    n->n_inputs = 7;
}

/* The live node that alone reads value v (not a graph output), or NULL (uses counted). */
static bd_node *sole_reader(bd_graph *g, int v) {
    if (bd_graph_value(g, v)->n_uses != 1) return NULL;
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        for (int k = 0; k < n->n_inputs && !n->dead; k++)
            if (n->inputs[k] == v) return n;
    }
    return NULL;
}

/* A DequantizedMatMul n whose float output only a QuantizeLinear to 8 bits reads (one float32
 * scale, a zero point, per tensor): n takes its scale and zero point as inputs 6 and 7 and
 * writes its output, requantizing right after the product (lower/nn.c); the QuantizeLinear
 * dies. */
static void absorb_quantize(bd_graph *g, bd_node *n) {
    bd_node *q = sole_reader(g, n->outputs[0]);
    if (!q || q->op != BD_OP_QUANTIZE_LINEAR || q->n_outputs != 1 ||
        q->inputs[0] != n->outputs[0] || bd_attr_int(q, "block_size", 0) != 0 ||
        bd_attr_int(q, "precision", 0) != 0)
        return;
    const bd_value *s = bd_node_in(g, q, 1), *z = bd_node_in(g, q, 2), *y = bd_node_out(g, q, 0);
    if (!s || !one_element(s) || s->dtype != BD_DT_FLOAT || !z || !one_element(z) ||
        !bd_dtype_is_byte(z->dtype) || !y || y->dtype != z->dtype)
        return;
    int count = n->n_inputs > 8 ? n->n_inputs : 8; /* (a Gemm's bias stays input 8) */
    int *in = bd_arena_alloc(&g->model->arena, (size_t)count * sizeof *in);
    if (!in) return;
    memcpy(in, n->inputs, (size_t)n->n_inputs * sizeof *in);
    in[6] = q->inputs[1];
    in[7] = q->inputs[2];
    int at = bd_graph_value(g, n->outputs[0])->producer;
    bd_graph_value(g, n->outputs[0])->producer = -1; /* the float values, now unused */
    bd_graph_value(g, q->outputs[0])->producer = at;
    n->inputs = in;
    n->n_inputs = count;
    n->outputs[0] = q->outputs[0];
    q->dead = true;
}

/* Node n becomes the DequantizedMatMul of (aq, bq, a_scale, a_zero, b_scale, b_zero), read from
 * the DequantizeLinears qa and qb but for bq (qb's 8-bit input, or a transposed copy of it) and
 * zb (B's zero point, -1: none), with `bias` (-1: none) as input 8; then it absorbs the
 * QuantizeLinear after it. */
static void become_dequantized_matmul(bd_graph *g, bd_node *n, const bd_node *qa, const bd_node *qb,
                                      int bq, int zb, int bias) {
    int *in = bd_arena_alloc(&g->model->arena, 9 * sizeof *in);
    if (!in) return;
    in[0] = qa->inputs[0];
    in[1] = bq;
    in[2] = qa->inputs[1];
    in[3] = bd_node_in(g, qa, 2) ? qa->inputs[2] : -1;
    in[4] = qb->inputs[1];
    in[5] = zb;
    in[6] = in[7] = -1;
    in[8] = bias;
    n->op = BD_OP_DEQUANTIZED_MATMUL;
    n->inputs = in;
    n->n_inputs = bias >= 0 ? 9 : 6;
    n->n_attrs = 0; /* (a Gemm's: transB done, the rest the defaults) */
    absorb_quantize(g, n);
}

/* MatMul(DequantizeLinear(aq), DequantizeLinear(bq)) with B constant (a QDQ transformer's
 * weights), A's scale and zero point one value each, B's scale one value or one per column (the
 * DequantizeLinear's axis is B's last) and one zero point: the internal DequantizedMatMul of
 * (aq, bq, a_scale, a_zero, b_scale, b_zero), which lowering computes as the int32 product on
 * the int8 kernels, scaled to float. */
static void rewrite_matmul(bd_graph *g, bd_node *n) {
    const bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (!y || y->constant || y->dtype != BD_DT_FLOAT || !a || a->constant || !b || !b->constant ||
        b->rank < 2)
        return;
    bd_node *qa = dequantize_of(g, a), *qb = dequantize_of(g, b);
    if (!qa || !qb) return;
    int zb; /* B's scale one value or one per column (its last axis) */
    if (!dq_operands_fit(g, qa, qb, b->rank, b->rank - 1, &zb)) return;
    become_dequantized_matmul(g, n, qa, qb, qb->inputs[0], zb, -1);
}

/* The 8-bit [N, K] tensor w as [K, N], or NULL (out of memory). */
static bd_tensor *transposed(bd_graph *g, const bd_tensor *w) {
    const int64_t N = w->dims[0], K = w->dims[1], dims[2] = {K, N};
    bd_tensor *t = bd_tensor_new(&g->model->arena, w->dtype, 2, dims);
    if (!t) return NULL;
    const uint8_t *src = w->data;
    uint8_t *dst = t->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) dst[k * N + j] = src[j * K + k];
    return t;
}

/* Gemm(DequantizeLinear(aq), DequantizeLinear(bq), C) with A 2-D and not transposed, B constant,
 * alpha 1 and beta 1 (or no C), C a float constant of one value or one per column: the
 * DequantizedMatMul of rewrite_matmul with C as its input 8, the bias (lower/nn.c adds it to the
 * scaled product). B's scale is one value or one per output column (the DequantizeLinear's axis
 * 0 when transB is set, as exporters write a classifier's weights, else 1); a transposed B is
 * stored transposed as a new constant, so the product is a MatMul's. */
static void rewrite_gemm(bd_graph *g, bd_node *n) {
    const bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    const bd_value *c = n->n_inputs > 2 ? bd_node_in(g, n, 2) : NULL;
    if (!y || y->constant || y->dtype != BD_DT_FLOAT || y->rank != 2 || !a || a->constant ||
        a->rank != 2 || !b || !b->constant || b->rank != 2 || bd_attr_int(n, "transA", 0) ||
        bd_attr_float(n, "alpha", 1.0f) != 1.0f || (c && bd_attr_float(n, "beta", 1.0f) != 1.0f))
        return;
    if (c && (!c->constant || c->dtype != BD_DT_FLOAT || c->rank != 1 ||
              (c->dims[0] != 1 && c->dims[0] != y->dims[1])))
        return;
    bd_node *qa = dequantize_of(g, a), *qb = dequantize_of(g, b);
    if (!qa || !qb) return;
    const bool trans_b = bd_attr_int(n, "transB", 0) != 0;
    int zb;
    if (!dq_operands_fit(g, qa, qb, 2, trans_b ? 0 : 1, &zb)) return;
    const int bias = c ? n->inputs[2] : -1;
    int bq = qb->inputs[0];
    if (trans_b) {
        bd_tensor *bt = transposed(g, bd_node_in(g, qb, 0)->constant);
        if (!bt) return;
        bq = bd_graph_add_constant(g, n, bt); /* (moves every bd_value: no pointers past here) */
    }
    become_dequantized_matmul(g, n, qa, qb, bq, zb, bias);
}

void bd_dequantize_into_conv(bd_graph *g) {
    bd_graph_count_uses(g);
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (!n->dead && n->op == BD_OP_CONV)
            rewrite(g, n);
        else if (!n->dead && n->op == BD_OP_MATMUL)
            rewrite_matmul(g, n);
        else if (!n->dead && n->op == BD_OP_GEMM)
            rewrite_gemm(g, n);
    }
}
