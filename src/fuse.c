/* fuse.c — the epilogue-fusion decision (see fuse.h): may a Conv / ConvTranspose / Gemm / MatMul
 * absorb its consumers, and which bias and activation do they make. */
#include <float.h>
#include <string.h>

#include "fuse.h"
#include "lower_nn.h"

static bool is_graph_output(bd_graph *g, int v) {
    if (bd_graph_value(g, v)->flags & BD_VALUE_OUTPUT) return true;
    for (size_t i = 0; i < g->outputs.len; i++)
        if (BD_VEC_AT(&g->outputs, int, i) == v) return true;
    return false;
}

/* The live nodes reading value v (each once), at most `max` of them; returns how many there are
 * (may exceed max, then only max are stored). */
static int consumers(bd_graph *g, int v, int *out, int max) {
    int count = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        bool uses = false;
        for (int k = 0; k < n->n_inputs && !uses; k++) uses = n->inputs[k] == v;
        if (!uses) continue;
        if (count < max) out[count] = (int)i;
        count++;
    }
    return count;
}

/* The live node producing value v, or -1. */
static int producer_of(bd_graph *g, int v) {
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] == v) return (int)i;
    }
    return -1;
}

/* A float32, non-constant output of static shape equal to ref's. */
static bool same_float_shape(const bd_value *v, const bd_value *ref) {
    if (!v || v->constant || v->dtype != BD_DT_FLOAT || !bd_value_shape_known(v) || v->rank != ref->rank)
        return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] != ref->dims[i]) return false;
    return true;
}

/* The single consumer of value v when v may disappear (one live reader, not a graph output). */
static int sole_consumer(bd_graph *g, int v) {
    int c;
    if (is_graph_output(g, v) || consumers(g, v, &c, 1) != 1) return -1;
    return c;
}

/* A constant float scalar input (k) of node n, into *out; absent (omitted) inputs keep *out. */
static bool const_scalar(bd_graph *g, const bd_node *n, int k, float *out) {
    if (k >= n->n_inputs || n->inputs[k] < 0) return true;
    const bd_value *v = bd_graph_value(g, n->inputs[k]);
    if (!v->constant || v->dtype != BD_DT_FLOAT || v->constant->numel != 1) return false;
    *out = (float)bd_tensor_get_f64(v->constant, 0);
    return true;
}

/* Consumer node c (of value cur, shape ref) as a single-node activation, into ep. */
static bool match_unary_act(bd_graph *g, int c, int cur, const bd_value *ref, bd_fuse_epilogue *ep) {
    const bd_node *n = bd_graph_node(g, c);
    if (n->n_inputs < 1 || n->inputs[0] != cur || n->n_outputs < 1 || n->outputs[0] < 0) return false;
    if (!same_float_shape(bd_graph_value(g, n->outputs[0]), ref)) return false;
    switch (n->op) {
    case BD_OP_RELU: ep->act = BD_NN_ACT_RELU; return true;
    case BD_OP_LEAKY_RELU:
        ep->act = BD_NN_ACT_LEAKY_RELU;
        ep->act_min = bd_attr_float(n, "alpha", 0.01f);
        return true;
    case BD_OP_HARD_SWISH: ep->act = BD_NN_ACT_HARD_SWISH; return true;
    case BD_OP_CLIP: {
        float lo = -FLT_MAX, hi = FLT_MAX;
        if (n->opset < 11) {
            lo = bd_attr_float(n, "min", -FLT_MAX);
            hi = bd_attr_float(n, "max", FLT_MAX);
        } else {
            for (int k = 1; k < n->n_inputs; k++)
                if (n->inputs[k] == cur) return false;
            if (!const_scalar(g, n, 1, &lo) || !const_scalar(g, n, 2, &hi)) return false;
        }
        if (lo != lo || hi != hi) return false; /* NaN bounds: leave to the elementwise code */
        ep->act = BD_NN_ACT_CLIP;
        ep->act_min = lo;
        ep->act_max = hi;
        return true;
    }
    default: return false;
    }
}

/* SiLU: value cur read by exactly Sigmoid s and Mul m = cur * s(cur) (either order). */
static bool match_silu(bd_graph *g, int cur, const bd_value *ref, bd_fuse_epilogue *ep) {
    int c[3];
    if (is_graph_output(g, cur) || consumers(g, cur, c, 3) != 2) return false;
    for (int t = 0; t < 2; t++) {
        int s = c[t], m = c[1 - t];
        const bd_node *sn = bd_graph_node(g, s), *mn = bd_graph_node(g, m);
        if (sn->op != BD_OP_SIGMOID || mn->op != BD_OP_MUL || mn->n_inputs != 2 || mn->n_outputs < 1 ||
            sn->n_outputs < 1 || sn->outputs[0] < 0 || mn->outputs[0] < 0)
            continue;
        int sv = sn->outputs[0];
        if (!same_float_shape(bd_graph_value(g, sv), ref) || sole_consumer(g, sv) != m) continue;
        if (!((mn->inputs[0] == cur && mn->inputs[1] == sv) || (mn->inputs[0] == sv && mn->inputs[1] == cur)))
            continue;
        if (!same_float_shape(bd_graph_value(g, mn->outputs[0]), ref)) continue;
        ep->act = BD_NN_ACT_SILU;
        ep->absorbed[ep->n_absorbed++] = s;
        ep->absorbed[ep->n_absorbed++] = m;
        ep->out = mn->outputs[0];
        return true;
    }
    return false;
}

/* Add node c = cur + bias (either order) with bias broadcast along the last dim (N values). */
static bool match_bias(bd_graph *g, int node, int c, int cur, const bd_value *ref, bd_fuse_epilogue *ep) {
    const bd_node *n = bd_graph_node(g, c);
    if (n->op != BD_OP_ADD || n->opset < 7 || n->n_inputs != 2 || n->n_outputs < 1 || n->outputs[0] < 0)
        return false;
    int other = n->inputs[0] == cur ? n->inputs[1] : n->inputs[0];
    if (other < 0 || other == cur || (n->inputs[0] != cur && n->inputs[1] != cur)) return false;
    if (producer_of(g, other) >= node) return false;
    const bd_value *b = bd_graph_value(g, other);
    if (b->dtype != BD_DT_FLOAT || !bd_value_shape_known(b) || b->rank < 1 || b->rank > ref->rank ||
        ref->rank < 1)
        return false;
    int64_t N = ref->dims[ref->rank - 1];
    if (b->dims[b->rank - 1] != N) return false;
    for (int i = 0; i < b->rank - 1; i++)
        if (b->dims[i] != 1) return false;
    if (!same_float_shape(bd_graph_value(g, n->outputs[0]), ref)) return false;
    ep->bias = other;
    return true;
}

/* Add node c = cur + r (either order) with r of exactly ref's shape (a residual connection). */
static bool match_residual(bd_graph *g, int node, int c, int cur, const bd_value *ref,
                           bd_fuse_epilogue *ep) {
    const bd_node *n = bd_graph_node(g, c);
    if (n->op != BD_OP_ADD || n->opset < 7 || n->n_inputs != 2 || n->n_outputs < 1 || n->outputs[0] < 0)
        return false;
    int other = n->inputs[0] == cur ? n->inputs[1] : n->inputs[0];
    if (other < 0 || other == cur || (n->inputs[0] != cur && n->inputs[1] != cur)) return false;
    if (producer_of(g, other) >= node) return false; /* computed after the product: not yet there */
    const bd_value *r = bd_graph_value(g, other);
    if (r->dtype != BD_DT_FLOAT || !bd_value_shape_known(r) || r->rank != ref->rank) return false;
    for (int i = 0; i < r->rank; i++)
        if (r->dims[i] != ref->dims[i]) return false;
    if (!same_float_shape(bd_graph_value(g, n->outputs[0]), ref)) return false;
    ep->residual = other;
    return true;
}

bool bd_fuse_match(const bd_program *p, int node, bd_fuse_epilogue *ep) {
    bd_graph *g = p->graph;
    memset(ep, 0, sizeof *ep);
    ep->act = BD_NN_ACT_NONE;
    ep->bias = ep->residual = -1;
    const bd_node *n = bd_graph_node(g, node);
    ep->out = n->n_outputs > 0 ? n->outputs[0] : -1;
    if (p->fusion != BD_FUSION_OP || n->dead || ep->out < 0) return false;
    if (n->op != BD_OP_CONV && n->op != BD_OP_CONV_TRANSPOSE && n->op != BD_OP_GEMM && n->op != BD_OP_MATMUL)
        return false;
    const bd_value *y = bd_graph_value(g, ep->out);
    if (y->constant || y->dtype != BD_DT_FLOAT || !bd_value_shape_known(y)) return false;
    int cur = ep->out;
    /* MatMul with an N axis (B not 1-D): a bias Add first */
    if (n->op == BD_OP_MATMUL && n->n_inputs >= 2 && n->inputs[1] >= 0 &&
        bd_graph_value(g, n->inputs[1])->rank >= 2) {
        int c = sole_consumer(g, cur);
        if (c >= 0 && match_bias(g, node, c, cur, y, ep)) {
            ep->absorbed[ep->n_absorbed++] = c;
            cur = ep->out = bd_graph_node(g, c)->outputs[0];
        }
    }
    int c = sole_consumer(g, cur);
    if (c >= 0 && match_residual(g, node, c, cur, y, ep)) {
        ep->absorbed[ep->n_absorbed++] = c;
        cur = ep->out = bd_graph_node(g, c)->outputs[0];
        c = sole_consumer(g, cur);
    }
    if (c >= 0 && match_unary_act(g, c, cur, y, ep)) {
        ep->absorbed[ep->n_absorbed++] = c;
        ep->out = bd_graph_node(g, c)->outputs[0];
    } else if (c < 0) {
        match_silu(g, cur, y, ep);
    }
    if (ep->n_absorbed == 0) {
        ep->act = BD_NN_ACT_NONE;
        return false;
    }
    return true;
}

/* Whether node pr is a product whose nest absorbs node. */
static bool absorbs(const bd_program *p, int pr, int node) {
    bd_graph *g = p->graph;
    bd_op op = bd_graph_node(g, pr)->op;
    if (op != BD_OP_CONV && op != BD_OP_CONV_TRANSPOSE && op != BD_OP_GEMM && op != BD_OP_MATMUL) return false;
    bd_fuse_epilogue ep;
    if (!bd_fuse_match(p, pr, &ep)) return false;
    for (int i = 0; i < ep.n_absorbed; i++)
        if (ep.absorbed[i] == node) return true;
    return false;
}

bool bd_fuse_absorbed(const bd_program *p, int node) {
    if (p->fusion != BD_FUSION_OP) return false;
    bd_graph *g = p->graph;
    const bd_node *n = bd_graph_node(g, node);
    switch (n->op) {
    case BD_OP_RELU: case BD_OP_CLIP: case BD_OP_LEAKY_RELU: case BD_OP_HARD_SWISH:
    case BD_OP_SIGMOID: case BD_OP_MUL: case BD_OP_ADD: break;
    default: return false;
    }
    /* The producer sits one link back (the product itself), two (through a bias or residual Add,
     * or the Sigmoid of a SiLU) or three (bias Add, residual Add, then an activation). */
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        int pr = producer_of(g, n->inputs[k]);
        if (pr < 0) continue;
        if (absorbs(p, pr, node)) return true;
        const bd_node *pn = bd_graph_node(g, pr);
        if (pn->op != BD_OP_ADD && pn->op != BD_OP_SIGMOID) continue;
        for (int j = 0; j < pn->n_inputs; j++) {
            int pp = pn->inputs[j] >= 0 ? producer_of(g, pn->inputs[j]) : -1;
            if (pp < 0) continue;
            if (absorbs(p, pp, node)) return true;
            /* three links back: bias Add, then residual Add, then this */
            const bd_node *ppn = bd_graph_node(g, pp);
            if (ppn->op != BD_OP_ADD) continue;
            for (int i = 0; i < ppn->n_inputs; i++) {
                int p3 = ppn->inputs[i] >= 0 ? producer_of(g, ppn->inputs[i]) : -1;
                if (p3 >= 0 && absorbs(p, p3, node)) return true;
            }
        }
    }
    return false;
}
