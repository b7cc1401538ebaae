/* fold_bn.c — per-channel affine maps after a Conv folded into its weights and bias.
 *
 * An inference-mode BatchNormalization y = (x - mean) / sqrt(var + eps) * scale + B, or a Mul or
 * Add by a constant that is one number per output channel (or one number), is y = x * s[c] + t[c]
 * along the channel axis. When x is the only use of a float32 Conv's output with constant weights
 * W and bias b, y is the same Conv with weights W[c] * s[c] and bias b[c] * s[c] + t[c]: the map
 * costs nothing at run time, and the Conv's other epilogue (a Relu, a residual Add) can then be
 * fused into it. PyTorch folds BatchNormalization when it exports; other exporters keep it.
 *
 * The Conv takes over the map's output value (so the names that consumers, graph outputs and
 * messages use stay the same), gets two new unnamed constants for its weights and bias, and the
 * map node is marked dead. Factors and shifts are computed in double and rounded once; a map with
 * a non-finite factor or shift (var + eps <= 0, an infinite constant) is left as it is, so that
 * what it does to the Conv's output stays exactly what it was. One forward sweep: a chain
 * Conv -> BatchNormalization -> Mul folds twice, since the Conv produces the next map's input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "front/passes.h"

static bool const_f32(const bd_value *v) {
    return v && v->constant && v->constant->dtype == BD_DT_FLOAT && v->constant->data;
}

/* A constant vector of m floats (a BatchNormalization parameter). */
static const float *param(bd_graph *g, const bd_node *n, int i, int64_t m) {
    const bd_value *v = bd_node_in(g, n, i);
    if (!const_f32(v) || v->constant->rank != 1 || v->constant->numel != m) return NULL;
    return v->constant->data;
}

/* BatchNormalization in inference mode over m channels: s = scale / sqrt(var + eps),
 * t = B - mean * s. */
static bool bn_affine(bd_graph *g, const bd_node *n, int64_t m, double *s, double *t) {
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) return false; /* training outputs */
    if (bd_attr_int(n, "training_mode", 0) != 0) return false;
    const float *scale = param(g, n, 1, m), *b = param(g, n, 2, m);
    const float *mean = param(g, n, 3, m), *var = param(g, n, 4, m);
    if (!scale || !b || !mean || !var) return false;
    double eps = bd_attr_float(n, "epsilon", 1e-5f);
    for (int64_t c = 0; c < m; c++) {
        s[c] = scale[c] / sqrt(var[c] + eps);
        t[c] = b[c] - mean[c] * s[c];
    }
    return true;
}

/* The constant operand of a Mul or Add as one value per channel (axis 1 of an output of rank
 * `rank` with m channels): every other axis 1, so that the map does not broadcast x. */
static bool channel_const(const bd_value *k, int rank, int64_t m, double *out) {
    if (!const_f32(k) || k->constant->rank > rank) return false;
    const bd_tensor *c = k->constant;
    for (int a = 0; a < c->rank; a++) {
        int axis = rank - c->rank + a;
        if (c->dims[a] != 1 && !(axis == 1 && c->dims[a] == m)) return false;
    }
    const float *p = c->data;
    for (int64_t ch = 0; ch < m; ch++)
        out[ch] = p[c->numel == 1 ? 0 : ch];
    return true;
}

/* The Conv whose only use is input k of n, or -1. */
static int sole_conv_input(bd_graph *g, const bd_node *n, int k, const int *uses) {
    if (k >= n->n_inputs || n->inputs[k] < 0) return -1;
    const bd_value *x = bd_graph_value(g, n->inputs[k]);
    if (x->producer < 0 || uses[n->inputs[k]] != 1 || (x->flags & BD_VALUE_OUTPUT)) return -1;
    const bd_node *c = bd_graph_node(g, x->producer);
    if (c->dead || c->op != BD_OP_CONV || c->outputs[0] != n->inputs[k]) return -1;
    if (x->dtype != BD_DT_FLOAT || x->rank < 3 || !bd_value_shape_known(x) || x->dims[1] < 1)
        return -1;
    const bd_value *w = bd_node_in(g, c, 1), *b = bd_node_in(g, c, 2);
    if (!const_f32(w) || w->constant->rank < 1 || w->constant->dims[0] != x->dims[1]) return -1;
    if (b && (!const_f32(b) || b->constant->numel != x->dims[1])) return -1;
    return x->producer;
}

/* Conv ci absorbs y = x * s + t and produces y (value yi) itself. */
static void fold(bd_graph *g, int ci, int yi, const double *s, const double *t) {
    bd_arena *a = &g->model->arena;
    bd_node *c = bd_graph_node(g, ci);
    const int xi = c->outputs[0];
    const bd_value *x = bd_graph_value(g, xi);
    const bd_tensor *w = bd_node_in(g, c, 1)->constant;
    const bd_value *bv = bd_node_in(g, c, 2);
    const float *b = bv ? bv->constant->data : NULL;
    int64_t m = x->dims[1], per = w->numel / m;
    bd_tensor *w2 = bd_tensor_new(a, BD_DT_FLOAT, w->rank, w->dims);
    bd_tensor *b2 = bd_tensor_new(a, BD_DT_FLOAT, 1, &m);
    BD_ASSERT(w2 && b2);
    const float *wp = w->data;
    float *w2p = w2->data, *b2p = b2->data;
    for (int64_t ch = 0; ch < m; ch++) {
        for (int64_t j = 0; j < per; j++)
            w2p[ch * per + j] = (float)(wp[ch * per + j] * s[ch]);
        b2p[ch] = (float)((b ? b[ch] : 0.0) * s[ch] + t[ch]);
    }
    if (c->n_inputs < 3) { /* room for the bias */
        int *in = bd_arena_array(a, 3, sizeof *in);
        BD_ASSERT(in);
        memcpy(in, c->inputs, (size_t)c->n_inputs * sizeof *in);
        for (int k = c->n_inputs; k < 3; k++)
            in[k] = -1;
        c->inputs = in;
        c->n_inputs = 3;
    }
    c->inputs[1] = bd_graph_add_constant(g, c, w2);
    c->inputs[2] = bd_graph_add_constant(g, c, b2);
    bd_graph_value(g, xi)->producer = -1;
    c->outputs[0] = yi;
    bd_graph_value(g, yi)->producer = ci;
}

void bd_fold_into_conv(bd_graph *g) {
    if (bd_graph_has_subgraphs(g)) return; /* bodies refer to values by name: keep every producer */
    int *uses = calloc(g->values.len ? g->values.len : 1, sizeof *uses);
    BD_ASSERT(uses);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        for (int k = 0; !n->dead && k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) uses[n->inputs[k]]++;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        uses[BD_VEC_AT(&g->outputs, int, i)]++;
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        bool bn = n->op == BD_OP_BATCH_NORMALIZATION, mul = n->op == BD_OP_MUL;
        if (n->dead || (!bn && !mul && n->op != BD_OP_ADD) || n->n_outputs < 1 || n->outputs[0] < 0)
            continue;
        int k = 0, ci = sole_conv_input(g, n, 0, uses);
        if (ci < 0 && !bn) ci = sole_conv_input(g, n, k = 1, uses);
        if (ci < 0) continue;
        const bd_value *x = bd_graph_value(g, n->inputs[k]), *y = bd_node_out(g, n, 0);
        bool same = y->dtype == BD_DT_FLOAT && y->rank == x->rank;
        for (int a = 0; same && a < x->rank; a++)
            same = y->dims[a] == x->dims[a];
        if (!same) continue;
        int64_t m = x->dims[1];
        double *s = malloc((size_t)m * 2 * sizeof *s), *t = s + m;
        BD_ASSERT(s);
        bool ok;
        if (bn) {
            ok = bn_affine(g, n, m, s, t);
        } else {
            ok = channel_const(bd_node_in(g, n, 1 - k), x->rank, m, mul ? s : t);
            for (int64_t ch = 0; ok && ch < m; ch++)
                *(mul ? &t[ch] : &s[ch]) = mul ? 0.0 : 1.0;
        }
        for (int64_t ch = 0; ok && ch < m; ch++)
            ok = isfinite(s[ch]) && isfinite(t[ch]);
        if (ok) {
            fold(g, ci, n->outputs[0], s, t);
            n->dead = true;
        }
        free(s);
    }
    free(uses);
}
