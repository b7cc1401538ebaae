/* nn.c — lowering of the neural-network ops: Conv, ConvTranspose, MaxPool/AveragePool,
 * GlobalAveragePool, MatMul/Gemm, BatchNormalization/LayerNormalization/InstanceNormalization,
 * LSTM, GRU and RNN (unrolled), and the integer products (MatMulInteger, QLinearMatMul,
 * ConvInteger, QLinearConv) as MATMUL and CONV nests between elementwise ones.
 *
 * Each op becomes one nest over its output. The access maps follow the window arithmetic: an
 * output tile [lo, hi) along a spatial axis of a convolution or pooling reads the input rows
 * [lo*stride - pad, (hi-1)*stride - pad + (kernel-1)*dilation]; grouped convolutions read the
 * input channels of the groups their output-channel tile meets, as an affine map when the tile is
 * whole groups and the channel ratio is an integer, else FULL. Reduced dims (K of a matrix
 * product, the input channels of an ungrouped convolution) are FULL.
 *
 * Every nest starts as one block: the target's tile pass (target/cpu/tile.c) picks the tile and
 * the kernels, and bd_nest_set_tile recomputes the channel maps that follow the tile. The
 * geometry helpers (window reading, auto_pad resolution) repeat the ones of infer/nn.c, which
 * computes the same extents for shape inference: here they also give the pads actually applied.
 *
 * Each nest writes the op's own output: the bias Add, residual Add and activation that may follow
 * are their own nests here, and fusion (fuse/fuse.c) folds them into this one's epilogue. */
#include <math.h>
#include <string.h>

#include "lower/lower.h"

static int64_t imax64(int64_t a, int64_t b) { return a > b ? a : b; }

static bool is_float_dtype(int dt) { return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE; }


static bd_status need_dtype_float(bd_diag *d, const bd_node *n, const bd_value *v,
                                  const char *what) {
    if (is_float_dtype(v->dtype)) return BD_OK;
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%s is %s; only float32 and float64 are "
                        "compiled", what, bd_dtype_name(v->dtype));
}

/* ---------------------------------------------------------------- sliding windows */

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

typedef struct nn_window {
    int nsp;
    int auto_pad;
    int64_t kernel[BD_NN_MAX_SPATIAL], strides[BD_NN_MAX_SPATIAL], dilations[BD_NN_MAX_SPATIAL];
    int64_t pads[2 * BD_NN_MAX_SPATIAL];
} nn_window;

/* Reads an INTS attribute of `want` values (default dflt when absent); inference checked them. */
static void read_ints(const bd_node *n, const char *name, int want, int64_t dflt, int64_t *out) {
    const bd_attr *a = bd_node_attr(n, name);
    for (int i = 0; i < want; i++)
        out[i] = a && a->type == BD_ATTR_INTS && a->n == want ? a->ints[i] : dflt;
}

static bd_status read_window(bd_graph *g, const bd_node *n, bd_diag *d, int nsp, bool has_dilations,
                             nn_window *w) {
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    if (nsp < 1 || nsp > BD_NN_MAX_SPATIAL)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%d spatial axes", nsp);
    const char *ap = bd_attr_string(g, n, "auto_pad", "NOTSET");
    w->auto_pad = strcmp(ap, "SAME_UPPER") == 0   ? PAD_SAME_UPPER
                  : strcmp(ap, "SAME_LOWER") == 0 ? PAD_SAME_LOWER
                  : strcmp(ap, "VALID") == 0      ? PAD_VALID
                                                  : PAD_NOTSET;
    read_ints(n, "strides", nsp, 1, w->strides);
    if (has_dilations) read_ints(n, "dilations", nsp, 1, w->dilations);
    else
        for (int i = 0; i < nsp; i++) w->dilations[i] = 1;
    read_ints(n, "pads", 2 * nsp, 0, w->pads);
    if (w->auto_pad != PAD_NOTSET)
        for (int i = 0; i < 2 * nsp; i++) w->pads[i] = 0;
    return BD_OK;
}

/* The pads a forward window (Conv, pooling) applies, given the input and output extents: the
 * explicit pads, none for VALID, and for SAME_* the total that makes the output cover the input,
 * split with the odd element at the end (UPPER) or the start (LOWER). */
static void resolve_forward_pads(nn_window *w, const int64_t *in, const int64_t *out) {
    if (w->auto_pad != PAD_SAME_UPPER && w->auto_pad != PAD_SAME_LOWER) return;
    for (int i = 0; i < w->nsp; i++) {
        int64_t span = (w->kernel[i] - 1) * w->dilations[i] + 1;
        int64_t total = imax64(0, (out[i] - 1) * w->strides[i] + span - in[i]);
        int64_t head = w->auto_pad == PAD_SAME_UPPER ? total / 2 : total - total / 2;
        w->pads[i] = head;
        w->pads[w->nsp + i] = total - head;
    }
}

/* ---------------------------------------------------------------- shared access maps */

static bd_access_dim affine(int iter, int64_t scale, int64_t offset, int64_t window) {
    return (bd_access_dim){BD_ACCESS_AFFINE, iter, scale, offset, window};
}

static bd_access_dim full_dim(void) { return (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0}; }

/* Value v is absent (-1) or holds one element (a scalar or [1]). */
static bool one_value(bd_graph *g, int v) {
    if (v < 0) return true;
    const bd_value *x = bd_graph_value(g, v);
    return x->rank == 0 || (x->rank == 1 && x->dims[0] == 1);
}

/* Reads a quantization value v (a scale or zero point) into nest and returns its operand index: a
 * scalar or [1] is broadcast, a longer 1-D v is one per index of iteration dim `along` (a channel
 * or column); along < 0: v is one value, broadcast whatever its length. */
static int quant_operand(bd_graph *g, bd_nest *nest, int v, int along) {
    const bd_value *x = bd_graph_value(g, v);
    int at = nest->n_operands;
    bd_operand *o = bd_nest_operand(nest, v, false, x->rank);
    if (x->rank == 1)
        o->dims[0] = x->dims[0] == 1 || along < 0 ? affine(-1, 0, 0, 0) : affine(along, 1, 0, 0);
    return at;
}

/* ---------------------------------------------------------------- Conv */

/* The quantization operands of an 8-bit convolution (values, -1: none): one-value zero points of
 * X and W, and for a float result X's scale (one value) and W's (one, or one per channel). */
typedef struct conv_quant {
    int x_zero, w_zero, x_scale, w_scale;
} conv_quant;
static const conv_quant no_quant = {-1, -1, -1, -1};

/* The operands after X and W that Conv and ConvTranspose share: the bias (one per output channel),
 * the quantization operands and the written output. */
static void conv_tail_operands(bd_graph *g, bd_nest *nest, bd_conv_params *cp, int bv,
                               const conv_quant *q, int yv, int rank) {
    cp->w = 1;
    cp->b = -1;
    if (bv >= 0) {
        bd_operand *ob = bd_nest_operand(nest, bv, false, 1);
        ob->dims[0] = affine(1, 1, 0, 0);
        cp->b = 2;
    }
    int values[4] = {q->x_zero, q->w_zero, q->x_scale, q->w_scale};
    int *ops[4] = {&cp->x_zero, &cp->w_zero, &cp->x_scale, &cp->w_scale};
    for (int k = 0; k < 4; k++) {
        *ops[k] = values[k] < 0 ? -1 : quant_operand(g, nest, values[k], 1);
    }
    cp->y = nest->n_operands;
    bd_access_identity(bd_nest_operand(nest, yv, true, rank), 0);
}

/* What Conv, ConvTranspose and DequantizedConv lowering start from (X, W and B are their inputs
 * 0 to 2): static shapes, float X unless 8-bit (DequantizedConv), and the window attributes with
 * the kernel taken from W. */
static bd_status conv_window(bd_graph *g, bd_node *n, bd_diag *d, bool float_x, nn_window *win) {
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *b = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0 (X)")) || (s = bd_need_static(d, n, w, "input 1 (W)")) ||
        (s = bd_need_static(d, n, b, "input 2 (B)")) ||
        (s = bd_need_static(d, n, bd_node_out(g, n, 0), "output 0")) ||
        (float_x && (s = need_dtype_float(d, n, x, "input 0 (X)"))))
        return s;
    int nsp = x->rank - 2;
    if ((s = read_window(g, n, d, nsp, true, win))) return s;
    for (int i = 0; i < nsp; i++) win->kernel[i] = w->dims[2 + i];
    return BD_OK;
}

/* The start Conv and ConvTranspose share: their values and window; false when there is nothing
 * more to do (*s: BD_OK when the output folded, else the failure). */
static bool conv_begin(bd_graph *g, bd_node *n, bd_diag *d, bd_value **x, bd_value **w,
                       bd_value **b, bd_value **y, nn_window *win, bd_status *s) {
    *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *b = bd_node_in(g, n, 2);
    *y = bd_node_out(g, n, 0);
    *s = BD_OK;
    return !(*y)->constant && !(*s = conv_window(g, n, d, true, win));
}

/* The nest of a Conv or ConvTranspose node and its window parameters. */
static bd_nest *conv_nest_begin(bd_program *p, int node, bd_body body, const bd_value *y,
                                const nn_window *win) {
    bd_nest *nest = bd_nest_begin(p, node, body, y);
    bd_conv_params *cp = BD_NEST_PARAMS(nest, conv);
    memset(cp, 0, sizeof *cp);
    cp->nsp = win->nsp;
    cp->group = bd_attr_int(bd_graph_node(p->graph, node), "group", 1);
    memcpy(cp->kernel, win->kernel, sizeof cp->kernel);
    memcpy(cp->strides, win->strides, sizeof cp->strides);
    memcpy(cp->dilations, win->dilations, sizeof cp->dilations);
    memcpy(cp->pads, win->pads, sizeof cp->pads);
    return nest;
}

/* The CONV nest y = conv(x, w) (+ b when bv >= 0) of node's window, from values; for 8-bit x
 * and w, q's zero points are subtracted inside the sum and its scales give a float y. */
static void conv_values(bd_program *p, int node, nn_window win, int xv, int wv, int bv,
                        const conv_quant *q, int yv) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, xv), *w = bd_graph_value(g, wv);
    const bd_value *y = bd_graph_value(g, yv);
    int nsp = win.nsp;
    resolve_forward_pads(&win, x->dims + 2, y->dims + 2);
    bd_nest *nest = conv_nest_begin(p, node, BD_BODY_CONV, y, &win);
    bd_conv_params *cp = BD_NEST_PARAMS(nest, conv);
    bd_operand *ox = bd_nest_operand(nest, xv, false, x->rank);
    ox->dims[0] = affine(0, 1, 0, 0);
    for (int i = 0; i < nsp; i++)
        ox->dims[2 + i] = affine(2 + i, win.strides[i], -win.pads[i],
                                 (win.kernel[i] - 1) * win.dilations[i]);
    cp->x = 0;
    bd_operand *ow = bd_nest_operand(nest, wv, false, w->rank);
    ow->dims[0] = affine(1, 1, 0, 0);
    conv_tail_operands(g, nest, cp, bv, q, yv, y->rank);
    bd_nest_set_tile(g, nest, nest->tile); /* X's channel map, which follows the tile */
}

bd_status bd_lower_conv(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x, *w, *b, *y;
    nn_window win;
    bd_status s;
    if (!conv_begin(g, n, d, &x, &w, &b, &y, &win, &s)) return s;
    conv_values(p, node, win, n->inputs[0], n->inputs[1], b ? n->inputs[2] : -1, &no_quant,
                n->outputs[0]);
    return BD_OK;
}

/* ---------------------------------------------------------------- DequantizedConv */

/* The internal DequantizedConv (front/qdq_conv.c): inputs xq, wq, B, x_scale, x_zero, w_scale,
 * w_zero. One CONV nest of the 8-bit xq and wq: the sum less the zero points in int32, then
 * y = float(sum) * (x_scale * w_scale[m]) + B[m] in float32 (whose Relu and residual Add fusion
 * then absorbs like a float Conv's). */
bd_status bd_lower_dequantized_conv(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    if (bd_node_out(g, n, 0)->constant) return BD_OK;
    nn_window win;
    bd_status s = conv_window(g, n, d, false, &win);
    if (s) return s;
    conv_quant q = {n->inputs[4], n->inputs[6], n->inputs[3], n->inputs[5]};
    conv_values(p, node, win, n->inputs[0], n->inputs[1], n->inputs[2], &q, n->outputs[0]);
    return BD_OK;
}

/* ---------------------------------------------------------------- ConvTranspose */

bd_status bd_lower_conv_transpose(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x, *w, *b, *y;
    nn_window win;
    bd_status s;
    if (!conv_begin(g, n, d, &x, &w, &b, &y, &win, &s)) return s;
    int nsp = win.nsp;
    int64_t out_pad[BD_NN_MAX_SPATIAL];
    read_ints(n, "output_padding", nsp, 0, out_pad);
    /* With output_shape or SAME_*, the pads come from the total padding between the unpadded
     * extent and the output; the odd element goes to the end for SAME_UPPER, else the start. */
    bool derived = bd_node_attr(n, "output_shape") || win.auto_pad == PAD_SAME_UPPER ||
                   win.auto_pad == PAD_SAME_LOWER;
    for (int i = 0; i < nsp && derived; i++) {
        int64_t span = (win.kernel[i] - 1) * win.dilations[i] + 1;
        int64_t full = win.strides[i] * (x->dims[2 + i] - 1) + out_pad[i] + span;
        int64_t total = imax64(0, full - y->dims[2 + i]);
        int64_t head = win.auto_pad == PAD_SAME_UPPER ? total / 2 : total - total / 2;
        win.pads[i] = head;
        win.pads[nsp + i] = total - head;
    }
    bd_nest *nest = conv_nest_begin(p, node, BD_BODY_CONV_TRANSPOSE, y, &win);
    bd_conv_params *cp = BD_NEST_PARAMS(nest, conv);
    int64_t group = cp->group;
    /* X along a spatial axis: output [lo, hi) gathers inputs (o + pad - k*dil) / stride, an
     * affine range for stride 1, otherwise FULL. */
    bd_operand *ox = bd_nest_operand(nest, n->inputs[0], false, x->rank);
    ox->dims[0] = affine(0, 1, 0, 0);
    for (int i = 0; i < nsp; i++) {
        int64_t reach = (win.kernel[i] - 1) * win.dilations[i];
        ox->dims[2 + i] = win.strides[i] == 1 ? affine(2 + i, 1, win.pads[i] - reach, reach)
                                              : full_dim();
    }
    cp->x = 0;
    /* W is [C, M/group, k...]: its axis 0 follows X's channels, axis 1 the output channel. */
    bd_operand *ow = bd_nest_operand(nest, n->inputs[1], false, w->rank);
    if (group == 1) ow->dims[1] = affine(1, 1, 0, 0);
    conv_tail_operands(g, nest, cp, b ? n->inputs[2] : -1, &no_quant, n->outputs[0], y->rank);
    bd_nest_set_tile(g, nest, nest->tile); /* X's and W's channel maps, which follow the tile */
    return BD_OK;
}

/* ---------------------------------------------------------------- pooling */

/* LpPool: (sum over the window of |x|^p)^(1/p), the sum an AveragePool nest counting the pads
 * times the window size, between two elementwise nests. With ceil_mode a last window may be cut
 * short, where that product is not the sum: refused. */
static bd_status lower_lp_pool(bd_program *p, int node, const nn_window *win, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    int nsp = win->nsp, dt = x->dtype, r = x->rank;
    if (n->opset >= 18 && bd_attr_int(n, "ceil_mode", 0) != 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "ceil_mode = 1 is not supported");
    double pw = (double)bd_attr_int(n, "p", 2), kn = 1;
    if (pw < 1) return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'p' must be at least 1");
    for (int i = 0; i < nsp; i++) kn *= (double)win->kernel[i];
    int64_t xd[BD_MAX_RANK], yd[BD_MAX_RANK];
    for (int k = 0; k < r; k++) xd[k] = x->dims[k], yd[k] = y->dims[k];
    int xv = n->inputs[0], yv = n->outputs[0];
    /* (adding values moves x and y: only indices from here) */
    int powed = bd_lower_temp(g, dt, r, xd), avg = bd_lower_temp(g, dt, r, yd);
    for (int step = 0; step < 2; step++) { /* |x|^p, then (K avg)^(1/p) */
        int in = step ? avg : xv, out = step ? yv : powed;
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
        bd_access_identity(bd_nest_operand(nest, in, false, r), 0);
        bd_access_identity(bd_nest_operand(nest, out, true, r), 0);
        bd_expr *e = BD_NEST_PARAMS(nest, expr);
        int v = bd_expr_load(e, 0, dt);
        if (!step) {
            v = pw == 2 ? bd_expr_binary(e, BD_EXPR_MUL, dt, v, v) : bd_expr_unary(e, BD_EXPR_ABS, dt, v);
            if (pw != 1 && pw != 2)
                v = bd_expr_binary(e, BD_EXPR_POW, dt, v, bd_expr_const(e, pw, dt));
        } else {
            v = bd_expr_binary(e, BD_EXPR_MUL, dt, v, bd_expr_const(e, kn, dt));
            if (pw == 2) v = bd_expr_unary(e, BD_EXPR_SQRT, dt, v);
            else if (pw != 1) v = bd_expr_binary(e, BD_EXPR_POW, dt, v, bd_expr_const(e, 1 / pw, dt));
        }
        bd_expr_compact(e, v);
        if (step) break;
        nest = bd_nest_begin(p, node, BD_BODY_POOL, bd_graph_value(g, avg));
        bd_pool_params *pp = BD_NEST_PARAMS(nest, pool);
        memset(pp, 0, sizeof *pp);
        pp->nsp = nsp;
        pp->count_include_pad = true;
        memcpy(pp->kernel, win->kernel, sizeof pp->kernel);
        memcpy(pp->strides, win->strides, sizeof pp->strides);
        memcpy(pp->dilations, win->dilations, sizeof pp->dilations);
        memcpy(pp->pads, win->pads, sizeof pp->pads);
        bd_operand *ox = bd_nest_operand(nest, powed, false, r);
        ox->dims[0] = affine(0, 1, 0, 0);
        ox->dims[1] = affine(1, 1, 0, 0);
        for (int i = 0; i < nsp; i++)
            ox->dims[2 + i] = affine(2 + i, win->strides[i], -win->pads[i],
                                     (win->kernel[i] - 1) * win->dilations[i]);
        pp->x = 0;
        pp->y = 1;
        pp->indices = -1;
        bd_access_identity(bd_nest_operand(nest, avg, true, r), 0);
    }
    return BD_OK;
}

bd_status bd_lower_pool(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0), *ind = bd_node_out(g, n, 1);
    bool is_max = n->op == BD_OP_MAX_POOL;
    if (y->constant && (!ind || ind->constant)) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0 (X)")) || (s = bd_need_static(d, n, y, "output 0")))
        return s;
    bool int8 = x->dtype == BD_DT_INT8 || x->dtype == BD_DT_UINT8;
    if (!is_float_dtype(x->dtype) && !(is_max && int8))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 0 (X) is %s",
                            bd_dtype_name(x->dtype));
    int nsp = x->rank - 2;
    nn_window win;
    bool lp = n->op == BD_OP_LP_POOL;
    bool has_dilations = is_max ? n->opset >= 10 : n->opset >= (lp ? 18 : 19);
    if ((s = read_window(g, n, d, nsp, has_dilations, &win))) return s;
    read_ints(n, "kernel_shape", nsp, 1, win.kernel);
    resolve_forward_pads(&win, x->dims + 2, y->dims + 2);
    if (lp) return lower_lp_pool(p, node, &win, d);

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_POOL, y);
    bd_pool_params *pp = BD_NEST_PARAMS(nest, pool);
    memset(pp, 0, sizeof *pp);
    pp->nsp = nsp;
    pp->is_max = is_max;
    pp->count_include_pad = !is_max && bd_attr_int(n, "count_include_pad", 0) != 0;
    pp->column_major = is_max && bd_attr_int(n, "storage_order", 0) != 0;
    memcpy(pp->kernel, win.kernel, sizeof pp->kernel);
    memcpy(pp->strides, win.strides, sizeof pp->strides);
    memcpy(pp->dilations, win.dilations, sizeof pp->dilations);
    memcpy(pp->pads, win.pads, sizeof pp->pads);

    bd_operand *ox = bd_nest_operand(nest, n->inputs[0], false, x->rank);
    ox->dims[0] = affine(0, 1, 0, 0);
    ox->dims[1] = affine(1, 1, 0, 0);
    for (int i = 0; i < nsp; i++)
        ox->dims[2 + i] = affine(2 + i, win.strides[i], -win.pads[i],
                                 (win.kernel[i] - 1) * win.dilations[i]);
    pp->x = 0;
    pp->y = 1;
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    pp->indices = -1;
    if (ind) {
        if ((s = bd_need_static(d, n, ind, "output 1 (Indices)"))) return s;
        pp->indices = 2;
        bd_access_identity(bd_nest_operand(nest, n->outputs[1], true, ind->rank), 0);
    }
    return BD_OK;
}

bd_status bd_lower_global_pool(bd_program *p, int node, bd_diag *d) {
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0 (X)", "output 0", &n, &x, &y, &s)) return s;
    if ((s = need_dtype_float(d, n, x, "input 0 (X)"))) return s;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_GLOBAL_POOL, y);
    bd_global_pool_params *gp = BD_NEST_PARAMS(nest, global_pool);
    memset(gp, 0, sizeof *gp);
    gp->spatial = 1;
    for (int i = 2; i < x->rank; i++) gp->spatial *= x->dims[i];
    bd_operand *ox = bd_nest_operand(nest, n->inputs[0], false, x->rank);
    ox->dims[0] = affine(0, 1, 0, 0);
    ox->dims[1] = affine(1, 1, 0, 0);
    gp->x = 0;
    gp->y = 1;
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    return BD_OK;
}

/* ---------------------------------------------------------------- MatMul, Gemm */

static bool matmul_dtype_ok(int dt) {
    return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE || dt == BD_DT_INT32 || dt == BD_DT_INT64 ||
           dt == BD_DT_UINT32 || dt == BD_DT_UINT64;
}

/* Element strides of v's batch axes (all but the last two, or none for rank <= 2) along the
 * n_batch output batch axes, right-aligned; 0 where v broadcasts. Sets the access map of those
 * axes too. */
static void batch_strides(const bd_value *v, bd_operand *o, const bd_value *y, int n_batch,
                          int64_t *out) {
    int vb = v->rank > 2 ? v->rank - 2 : 0;
    int64_t st[BD_MAX_RANK], acc = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= v->dims[i];
    }
    for (int j = 0; j < n_batch; j++) out[j] = 0;
    for (int k = 0; k < vb; k++) {
        int j = k + n_batch - vb;
        if (v->dims[k] == 1 && y->dims[j] != 1) {
            o->dims[k] = affine(-1, 0, 0, 0);
        } else {
            o->dims[k] = affine(j, 1, 0, 0);
            out[j] = v->dims[k] == 1 ? 0 : st[k];
        }
    }
}

/* The MATMUL nest y = a b (MatMul's broadcasting) or, for a Gemm node, its y = alpha a' b' +
 * beta c; values av, bv, cv (-1: none) and yv, all static. zav, zbv (-1: none): one zero point
 * each of 8-bit a and b, subtracted inside the product (MatMulInteger). */
static void matmul_values(bd_program *p, int node, bool gemm, int av, int bv, int cv, int zav, int zbv,
                          int yv) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *a = bd_graph_value(g, av), *b = bd_graph_value(g, bv);
    bd_value *c = bd_graph_value(g, cv), *y = bd_graph_value(g, yv);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_MATMUL, y);
    bd_matmul_params *mp = BD_NEST_PARAMS(nest, matmul);
    memset(mp, 0, sizeof *mp);
    mp->a_zero = mp->b_zero = -1;
    mp->gemm = gemm;
    mp->alpha = 1.0f;
    mp->beta = 1.0f;
    mp->c = -1;
    bool a_vec = false, b_vec = false;
    if (gemm) {
        mp->trans_a = bd_attr_int(n, "transA", 0) != 0;
        mp->trans_b = bd_attr_int(n, "transB", 0) != 0;
        mp->alpha = bd_attr_float(n, "alpha", 1.0f);
        mp->beta = bd_attr_float(n, "beta", 1.0f);
        mp->M = y->dims[0];
        mp->N = y->dims[1];
        mp->K = a->dims[mp->trans_a ? 0 : 1];
        mp->n_batch = 0;
        mp->m_iter = 0;
        mp->n_iter = 1;
    } else {
        a_vec = a->rank == 1;
        b_vec = b->rank == 1;
        mp->K = a->dims[a->rank - 1];
        mp->M = a_vec ? 1 : a->dims[a->rank - 2];
        mp->N = b_vec ? 1 : b->dims[b->rank - 1];
        mp->n_batch = y->rank - !a_vec - !b_vec;
        mp->m_iter = a_vec ? -1 : mp->n_batch;
        mp->n_iter = b_vec ? -1 : mp->n_batch + !a_vec;
    }

    bd_operand *oa = bd_nest_operand(nest, av, false, a->rank);
    bd_operand *ob = bd_nest_operand(nest, bv, false, b->rank);
    mp->a = 0;
    mp->b = 1;
    if (gemm) {
        oa->dims[mp->trans_a ? 1 : 0] = affine(0, 1, 0, 0);
        ob->dims[mp->trans_b ? 0 : 1] = affine(1, 1, 0, 0);
    } else {
        batch_strides(a, oa, y, mp->n_batch, mp->a_bstride);
        batch_strides(b, ob, y, mp->n_batch, mp->b_bstride);
        if (!a_vec) oa->dims[a->rank - 2] = affine(mp->m_iter, 1, 0, 0);
        if (!b_vec) ob->dims[b->rank - 1] = affine(mp->n_iter, 1, 0, 0);
    }
    int64_t ys = 1;
    for (int i = y->rank - 1; i >= 0; i--) {
        if (i < mp->n_batch) mp->y_bstride[i] = ys;
        ys *= y->dims[i];
    }

    if (c) {
        mp->c = nest->n_operands;
        bd_access_broadcast(bd_nest_operand(nest, cv, false, c->rank), c, y);
    }
    int zero[2] = {zav, zbv}, *zero_op[2] = {&mp->a_zero, &mp->b_zero};
    for (int k = 0; k < 2; k++) {
        if (zero[k] >= 0) *zero_op[k] = quant_operand(g, nest, zero[k], -1);
    }
    mp->y = nest->n_operands;
    bd_access_identity(bd_nest_operand(nest, yv, true, y->rank), 0);
}

bd_status bd_lower_matmul(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bool gemm = n->op == BD_OP_GEMM;
    bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, 1);
    bd_value *c = gemm ? bd_node_in(g, n, 2) : NULL, *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, a, "input 0 (A)")) || (s = bd_need_static(d, n, b, "input 1 (B)")) ||
        (s = bd_need_static(d, n, c, "input 2 (C)")) || (s = bd_need_static(d, n, y, "output 0")))
        return s;
    if (!matmul_dtype_ok(a->dtype))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 0 (A) is %s",
                            bd_dtype_name(a->dtype));
    matmul_values(p, node, gemm, n->inputs[0], n->inputs[1], c ? n->inputs[2] : -1, -1, -1,
                  n->outputs[0]);
    return BD_OK;
}

/* ---------------------------------------------------------------- normalisation */

static bd_status lower_batchnorm(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    if (n->opset >= 14 && bd_attr_int(n, "training_mode", 0) != 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'training_mode' = 1 (training "
                            "statistics) is not compiled");
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && bd_graph_value(g, n->outputs[k])->n_uses > 0)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output %d (a training statistic) is "
                                "not compiled", k);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0 (X)")) || (s = bd_need_static(d, n, y, "output 0")) ||
        (s = need_dtype_float(d, n, x, "input 0 (X)")))
        return s;
    for (int k = 1; k < 5; k++) {
        bd_value *v = bd_node_in(g, n, k);
        if ((s = bd_need_static(d, n, v, "a parameter input")) ||
            (s = need_dtype_float(d, n, v, "a parameter input")))
            return s;
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_NORM, y);
    bd_norm_params *np = BD_NEST_PARAMS(nest, norm);
    memset(np, 0, sizeof *np);
    np->kind = BD_NORM_BATCH;
    np->epsilon = bd_attr_float(n, "epsilon", 1e-5f);
    np->channels = x->dims[1];
    np->inner = 1;
    for (int i = 2; i < x->rank; i++) np->inner *= x->dims[i];
    np->per_activation = n->opset < 9 && bd_attr_int(n, "spatial", 1) == 0;
    np->folded = true;
    for (int k = 1; k < 5; k++) np->folded &= bd_node_in(g, n, k)->constant != NULL;
    np->mean_out = np->inv_out = -1;

    bd_access_identity(bd_nest_operand(nest, n->inputs[0], false, x->rank), 0);
    np->x = 0;
    int *slot[4] = {&np->scale, &np->bias, &np->mean, &np->var};
    for (int k = 1; k < 5; k++) {
        bd_value *v = bd_node_in(g, n, k);
        *slot[k - 1] = nest->n_operands;
        bd_access_identity(bd_nest_operand(nest, n->inputs[k], false, v->rank), 1);
    }
    np->y = nest->n_operands;
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    return BD_OK;
}

static bd_status lower_layernorm(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *sc = bd_node_in(g, n, 1), *bias = bd_node_in(g, n, 2);
    bd_value *y = bd_node_out(g, n, 0), *mo = bd_node_out(g, n, 1), *io = bd_node_out(g, n, 2);
    if (y->constant && (!mo || mo->constant) && (!io || io->constant)) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0 (X)")) || (s = bd_need_static(d, n, sc, "input 1 (Scale)")) ||
        (s = bd_need_static(d, n, bias, "input 2 (B)")) || (s = bd_need_static(d, n, y, "output 0")) ||
        (s = need_dtype_float(d, n, x, "input 0 (X)")))
        return s;
    if (bd_attr_int(n, "stash_type", 1) != 1)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'stash_type' = %lld (only 1, "
                            "float, is compiled)", (long long)bd_attr_int(n, "stash_type", 1));
    int axis;
    if (x->rank < 1 || !bd_norm_axis(bd_attr_int(n, "axis", -1), x->rank, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_NORM, y);
    bd_norm_params *np = BD_NEST_PARAMS(nest, norm);
    memset(np, 0, sizeof *np);
    np->kind = n->op == BD_OP_RMS_NORMALIZATION ? BD_NORM_RMS : BD_NORM_LAYER;
    np->epsilon = bd_attr_float(n, "epsilon", 1e-5f);
    np->axis = axis;
    np->rows = 1;
    np->cols = 1;
    for (int i = 0; i < x->rank; i++) *(i < axis ? &np->rows : &np->cols) *= x->dims[i];
    np->mean = np->var = np->bias = np->mean_out = np->inv_out = -1;

    for (int i = axis; i < x->rank; i++) nest->whole[i] = true; /* normalised axes */
    bd_access_identity(bd_nest_operand(nest, n->inputs[0], false, x->rank), 0);
    np->x = 0;
    np->scale = 1;
    bd_access_broadcast(bd_nest_operand(nest, n->inputs[1], false, sc->rank), sc, y);
    if (bias) {
        np->bias = nest->n_operands;
        bd_access_broadcast(bd_nest_operand(nest, n->inputs[2], false, bias->rank), bias, y);
    }
    np->y = nest->n_operands;
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    bd_value *stats[2] = {mo, io};
    int *stat_slot[2] = {&np->mean_out, &np->inv_out};
    for (int k = 0; k < 2; k++) {
        if (!stats[k]) continue;
        if ((s = bd_need_static(d, n, stats[k], "a statistics output"))) return s;
        *stat_slot[k] = nest->n_operands;
        bd_operand *o = bd_nest_operand(nest, n->outputs[1 + k], true, stats[k]->rank);
        for (int i = 0; i < o->rank; i++) o->dims[i] = i < axis ? affine(i, 1, 0, 0) : affine(-1, 0, 0, 0);
    }
    return BD_OK;
}

/* InstanceNormalization is LayerNormalization over the spatial dims (axis 2) with a scale of 1
 * into an unnamed value, then an elementwise nest applying the per-channel scale and B. */
static bd_status lower_instancenorm(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0 (input)")) ||
        (s = bd_need_static(d, n, y, "output")) ||
        (s = need_dtype_float(d, n, x, "input 0 (input)")))
        return s;
    int dt = x->dtype, r = x->rank, xv = n->inputs[0], yv = n->outputs[0];
    int64_t one_dim = 1, dims[BD_MAX_RANK], rows = x->dims[0] * x->dims[1], cols = 1;
    for (int i = 0; i < r; i++) dims[i] = x->dims[i];
    for (int i = 2; i < r; i++) cols *= dims[i];
    if (rows * cols == 0) return BD_OK;
    bd_tensor *ones = bd_tensor_new(&g->model->arena, dt, 1, &one_dim);
    if (!ones) return bd_node_fail(d, BD_ERR_IO, n, "out of memory");
    bd_tensor_set_f64(ones, 0, 1.0);
    int unit = bd_graph_add_value(g, ""), normed = bd_graph_add_value(g, ""); /* unnamed */
    bd_value *uv = bd_graph_value(g, unit), *tv = bd_graph_value(g, normed);
    uv->dtype = dt, uv->rank = 1, uv->dims[0] = 1, uv->constant = ones;
    tv->dtype = dt, tv->rank = r;
    memcpy(tv->dims, dims, (size_t)r * sizeof *dims);

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_NORM, tv);
    bd_norm_params *np = BD_NEST_PARAMS(nest, norm);
    memset(np, 0, sizeof *np);
    np->kind = BD_NORM_LAYER;
    np->epsilon = bd_attr_float(n, "epsilon", 1e-5f);
    np->axis = 2;
    np->rows = rows;
    np->cols = cols;
    np->bias = np->mean = np->var = np->mean_out = np->inv_out = -1;
    for (int i = 2; i < r; i++) nest->whole[i] = true; /* normalised axes */
    bd_access_identity(bd_nest_operand(nest, xv, false, r), 0);
    np->x = 0;
    np->scale = 1;
    bd_access_broadcast(bd_nest_operand(nest, unit, false, 1), uv, tv);
    np->y = 2;
    bd_access_identity(bd_nest_operand(nest, normed, true, r), 0);

    nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_identity(bd_nest_operand(nest, normed, false, r), 0);
    for (int k = 1; k <= 2; k++) /* scale and B along the channel dim */
        bd_nest_operand(nest, n->inputs[k], false, 1)->dims[0] = affine(1, 1, 0, 0);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int v = bd_expr_binary(e, BD_EXPR_MUL, dt, bd_expr_load(e, 0, dt), bd_expr_load(e, 1, dt));
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_ADD, dt, v, bd_expr_load(e, 2, dt)));
    return BD_OK;
}

bd_status bd_lower_norm(bd_program *p, int node, bd_diag *d) {
    bd_node *n = bd_graph_node(p->graph, node);
    if (n->op == BD_OP_INSTANCE_NORMALIZATION) return lower_instancenorm(p, node, d);
    return n->op == BD_OP_BATCH_NORMALIZATION ? lower_batchnorm(p, node, d)
                                              : lower_layernorm(p, node, d);
}

/* ---------------------------------------------------------------- LSTM */

/* The activation names LSTM accepts (case-insensitive), which of alpha/beta each consumes from
 * activation_alpha/activation_beta (in order, as onnxruntime reads them) and their defaults. */
static const struct {
    const char *name;
    int fn;
    bool uses_alpha, uses_beta;
    float alpha, beta;
} rnn_acts[] = {
    {"Sigmoid", BD_RNN_SIGMOID, false, false, 0, 0},
    {"Tanh", BD_RNN_TANH, false, false, 0, 0},
    {"Relu", BD_RNN_RELU, false, false, 0, 0},
    {"Affine", BD_RNN_AFFINE, true, true, 1.0f, 0.0f},
    {"LeakyRelu", BD_RNN_LEAKY_RELU, true, false, 0.01f, 0},
    {"ThresholdedRelu", BD_RNN_THRESHOLDED_RELU, true, false, 1.0f, 0},
    {"ScaledTanh", BD_RNN_SCALED_TANH, true, true, 1.0f, 1.0f},
    {"HardSigmoid", BD_RNN_HARD_SIGMOID, true, true, 0.2f, 0.5f},
    {"Elu", BD_RNN_ELU, true, false, 1.0f, 0},
    {"Softsign", BD_RNN_SOFTSIGN, false, false, 0, 0},
    {"Softplus", BD_RNN_SOFTPLUS, false, false, 0, 0},
};

/* The per_dir activations of each of num_dir directions (defaults where absent) into act. */
static bd_status rnn_activations(const bd_node *n, bd_diag *d, int num_dir, int per_dir,
                                 const int *defaults, bd_rnn_act act_of[2][3]) {
    for (int dir = 0; dir < 2; dir++)
        for (int k = 0; k < per_dir; k++) act_of[dir][k] = (bd_rnn_act){defaults[k], 0, 0};
    const bd_attr *names = bd_node_attr(n, "activations");
    if (!names) return BD_OK;
    const bd_attr *al = bd_node_attr(n, "activation_alpha"), *be = bd_node_attr(n, "activation_beta");
    int na = al && al->type == BD_ATTR_FLOATS ? al->n : 0, nb = be && be->type == BD_ATTR_FLOATS ? be->n : 0;
    int ia = 0, ib = 0;
    for (int i = 0; i < names->n && i < per_dir * num_dir; i++) {
        size_t k = 0;
        while (k < BD_COUNT(rnn_acts) && !bd_bytes_equal_nocase(&names->strings[i], rnn_acts[k].name)) k++;
        if (k == BD_COUNT(rnn_acts))
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'activations' value %d is "
                                "not a supported function", i);
        bd_rnn_act *act = &act_of[i / per_dir][i % per_dir];
        act->fn = rnn_acts[k].fn;
        act->alpha = rnn_acts[k].alpha;
        act->beta = rnn_acts[k].beta;
        if (rnn_acts[k].uses_alpha && ia < na) act->alpha = al->floats[ia++];
        if (rnn_acts[k].uses_beta && ib < nb) act->beta = be->floats[ib++];
    }
    return BD_OK;
}

bd_status bd_lower_lstm(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *in[8], *out[3];
    for (int k = 0; k < 8; k++) in[k] = bd_node_in(g, n, k);
    for (int k = 0; k < 3; k++) out[k] = bd_node_out(g, n, k);
    bool any = false;
    for (int k = 0; k < 3; k++) any |= out[k] && !out[k]->constant;
    if (!any) return BD_OK;
    bd_status s;
    static const char *const in_names[8] = {"input 0 (X)", "input 1 (W)", "input 2 (R)",
                                            "input 3 (B)", "input 4 (sequence_lens)",
                                            "input 5 (initial_h)", "input 6 (initial_c)",
                                            "input 7 (P)"};
    for (int k = 0; k < 8; k++)
        if ((s = bd_need_static(d, n, in[k], in_names[k]))) return s;
    for (int k = 0; k < 3; k++)
        if ((s = bd_need_static(d, n, out[k], "an output"))) return s;
    if (in[0]->dtype != BD_DT_FLOAT)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 0 (X) is %s; LSTM is compiled for "
                            "float32 only", bd_dtype_name(in[0]->dtype));

    bd_lstm_params lp;
    memset(&lp, 0, sizeof lp);
    const char *dir = bd_attr_string(g, n, "direction", "forward");
    lp.num_dir = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    lp.reverse = strcmp(dir, "reverse") == 0;
    lp.batch_major = n->opset >= 14 && bd_attr_int(n, "layout", 0) != 0;
    lp.seq = in[0]->dims[lp.batch_major ? 1 : 0];
    lp.batch = in[0]->dims[lp.batch_major ? 0 : 1];
    lp.input = in[0]->dims[2];
    lp.hidden = in[2]->dims[2];
    lp.input_forget = bd_attr_int(n, "input_forget", 0) != 0;
    const bd_attr *clip = bd_node_attr(n, "clip");
    lp.has_clip = clip != NULL;
    lp.clip = clip ? clip->f : 0.0f;
    if (lp.has_clip && !(lp.clip > 0.0f))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'clip' = %g, expected a positive "
                            "threshold", (double)lp.clip);
    static const int lstm_defaults[3] = {BD_RNN_SIGMOID, BD_RNN_TANH, BD_RNN_TANH};
    if ((s = rnn_activations(n, d, lp.num_dir, 3, lstm_defaults, lp.act))) return s;

    /* The body keeps the input projections of every step of a batch row in scratch. */
    int64_t per_row = lp.seq * 4 * lp.hidden;
    if (per_row > ((int64_t)1 << 24))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "seq_length x 4 x hidden_size = %lld is too "
                            "large for the per-step input projections", (long long)per_row);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_LSTM, NULL);
    nest->n_iter = 2;
    nest->extent[0] = lp.num_dir;
    nest->extent[1] = lp.batch;
    bd_nest_set_tile(g, nest, nest->extent); /* one block until the target tiles it */
    bd_lstm_params *np = BD_NEST_PARAMS(nest, lstm);
    *np = lp;
    int *slots[8] = {&np->x, &np->w, &np->r, &np->b, &np->lens, &np->h0, &np->c0, &np->p};
    int bdim = lp.batch_major ? 0 : 1; /* batch axis of X */
    int sdir = lp.batch_major ? 1 : 0, sbatch = lp.batch_major ? 0 : 1; /* of the state tensors */
    for (int k = 0; k < 8; k++) {
        *slots[k] = -1;
        if (!in[k]) continue;
        *slots[k] = nest->n_operands;
        bd_operand *o = bd_nest_operand(nest, n->inputs[k], false, in[k]->rank);
        switch (k) {
        case 0: o->dims[bdim] = affine(1, 1, 0, 0); break;
        case 4: o->dims[0] = affine(1, 1, 0, 0); break;
        case 5:
        case 6:
            o->dims[sdir] = affine(0, 1, 0, 0);
            o->dims[sbatch] = affine(1, 1, 0, 0);
            break;
        default: o->dims[0] = affine(0, 1, 0, 0); break; /* W, R, B, P: per direction */
        }
    }
    int *oslots[3] = {&np->y, &np->yh, &np->yc};
    for (int k = 0; k < 3; k++) {
        *oslots[k] = -1;
        if (!out[k]) continue;
        *oslots[k] = nest->n_operands;
        bd_operand *o = bd_nest_operand(nest, n->outputs[k], true, out[k]->rank);
        for (int i = 0; i < o->rank; i++) o->dims[i] = affine(-1, 0, 0, out[k]->dims[i] - 1);
        if (k == 0) { /* Y: [seq, dir, batch, hidden] or [batch, seq, dir, hidden] */
            o->dims[lp.batch_major ? 2 : 1] = affine(0, 1, 0, 0);
            o->dims[lp.batch_major ? 0 : 2] = affine(1, 1, 0, 0);
        } else {
            o->dims[sdir] = affine(0, 1, 0, 0);
            o->dims[sbatch] = affine(1, 1, 0, 0);
        }
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- GRU, RNN */

/* A COPY nest of value out (rank r) from value in: out index i reads in element base + sum(i_k
 * in_stride[k]); in's map is given per in dim (map), out is written at offset out_off[k] of its
 * own dims, as Concat's parts are, into a value of dims outd (out_base the matching element). */
static void copy_into(bd_program *p, int node, int in, const bd_access_dim *map, int64_t base,
                      const int64_t *in_stride, int out, int r, const int64_t *ext,
                      const int64_t *out_off) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, in), *y = bd_graph_value(g, out);
    bd_value dom = *y; /* the iteration domain: ext */
    dom.rank = r;
    for (int k = 0; k < r; k++) dom.dims[k] = ext[k];
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, &dom);
    bd_operand *xo = bd_nest_operand(nest, in, false, x->rank);
    for (int k = 0; k < x->rank; k++) xo->dims[k] = map[k];
    bd_operand *yo = bd_nest_operand(nest, out, true, y->rank);
    int64_t ys[BD_MAX_RANK];
    bd_dims_strides(y->rank, y->dims, ys);
    bd_copy_params *cp = BD_NEST_PARAMS(nest, copy);
    memset(cp, 0, sizeof *cp);
    cp->in_base = base;
    for (int k = 0; k < r; k++) cp->in_stride[k] = in_stride[k];
    /* y's dims: the last r are the domain's, the ones before it fixed at out_off */
    int lead = y->rank - r;
    for (int k = 0; k < y->rank; k++) {
        if (k < lead) {
            yo->dims[k] = affine(-1, 0, out_off[k], 0);
            cp->out_base += out_off[k] * ys[k];
        } else {
            yo->dims[k] = affine(k - lead, 1, 0, 0);
            cp->out_stride[k - lead] = ys[k];
        }
    }
}

/* The expression of activation a applied to node v. */
static int rnn_act_expr(bd_expr *e, int dt, const bd_rnn_act *a, int v) {
    switch (a->fn) {
    case BD_RNN_SIGMOID: return bd_expr_unary(e, BD_EXPR_SIGMOID, dt, v);
    case BD_RNN_TANH: return bd_expr_unary(e, BD_EXPR_TANH, dt, v);
    case BD_RNN_RELU: return bd_expr_unary(e, BD_EXPR_RELU, dt, v);
    case BD_RNN_AFFINE:
        return bd_expr_binary(e, BD_EXPR_ADD, dt,
                              bd_expr_binary(e, BD_EXPR_MUL, dt, bd_expr_const(e, a->alpha, dt), v),
                              bd_expr_const(e, a->beta, dt));
    case BD_RNN_LEAKY_RELU: return bd_expr_unary_k(e, BD_EXPR_LEAKY_RELU, dt, v, a->alpha, 0);
    case BD_RNN_THRESHOLDED_RELU:
        return bd_expr_unary_k(e, BD_EXPR_THRESHOLDED_RELU, dt, v, a->alpha, 0);
    case BD_RNN_SCALED_TANH:
        return bd_expr_binary(e, BD_EXPR_MUL, dt, bd_expr_const(e, a->alpha, dt),
                              bd_expr_unary(e, BD_EXPR_TANH, dt,
                                            bd_expr_binary(e, BD_EXPR_MUL, dt,
                                                           bd_expr_const(e, a->beta, dt), v)));
    case BD_RNN_HARD_SIGMOID:
        return bd_expr_unary_k(e, BD_EXPR_HARD_SIGMOID, dt, v, a->alpha, a->beta);
    case BD_RNN_ELU: return bd_expr_unary_k(e, BD_EXPR_ELU, dt, v, a->alpha, 0);
    case BD_RNN_SOFTSIGN: return bd_expr_unary(e, BD_EXPR_SOFTSIGN, dt, v);
    default: return bd_expr_unary(e, BD_EXPR_SOFTPLUS, dt, v);
    }
}

/* The clipped activation of the sum of the loaded operands a and b (b < 0: a alone). */
static int rnn_gate(bd_expr *e, int dt, const bd_rnn_act *act, bool clip, double c, int a) {
    if (clip)
        a = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, dt,
                           bd_expr_binary(e, BD_EXPR_CLAMP_MIN, dt, a, bd_expr_const(e, -c, dt)),
                           bd_expr_const(e, c, dt));
    return rnn_act_expr(e, dt, act, a);
}

/* A Gemm nest y[M, N] = a[M, K] b[N, K]^T (+ c[N] when c >= 0). */
static void gemm_nest(bd_program *p, int node, int a, int b, int c, int y) {
    bd_graph *g = p->graph;
    const bd_value *av = bd_graph_value(g, a), *yv = bd_graph_value(g, y);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_MATMUL, yv);
    bd_matmul_params *mp = BD_NEST_PARAMS(nest, matmul);
    memset(mp, 0, sizeof *mp);
    mp->a_zero = mp->b_zero = -1;
    mp->gemm = true;
    mp->trans_b = true;
    mp->alpha = mp->beta = 1.0f;
    mp->M = yv->dims[0], mp->N = yv->dims[1], mp->K = av->dims[1];
    mp->m_iter = 0, mp->n_iter = 1;
    bd_nest_operand(nest, a, false, 2)->dims[0] = affine(0, 1, 0, 0);
    bd_operand *ob = bd_nest_operand(nest, b, false, 2);
    ob->dims[0] = affine(1, 1, 0, 0);
    mp->a = 0, mp->b = 1, mp->c = -1;
    if (c >= 0) {
        mp->c = nest->n_operands;
        bd_nest_operand(nest, c, false, 1)->dims[0] = affine(1, 1, 0, 0);
    }
    mp->y = nest->n_operands;
    bd_access_identity(bd_nest_operand(nest, y, true, 2), 0);
}

/* GRU and RNN, unrolled over the (static) sequence: per direction the gates' weights, recurrence
 * weights and biases are COPY slices of W, R and B; per step X_t is a COPY slice, every gate's
 * projections X_t W^T + Wb and H R^T + Rb are Gemm nests, and an elementwise nest makes the new
 * state from them (RNN: f(x + h); GRU: z = f(x_z + h_z), r = f(x_r + h_r), the candidate
 * g(x_h + r (H R_h^T + Rb_h)) with linear_before_reset, else g(x_h + (r H) R_h^T + Rb_h) through
 * one more elementwise and Gemm nest, and (1 - z) candidate + z H), which COPY nests store into
 * Y and Y_h. About 6 nests a step for RNN and 12 for GRU: for the short sequences these ops see;
 * the LSTM body does its recurrence in one nest. sequence_lens is compiled only when it is a
 * constant equal to seq_length everywhere (no padding). */
bd_status bd_lower_rnn(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bool gru = n->op == BD_OP_GRU;
    bd_value *in[6], *out[2];
    for (int k = 0; k < 6; k++) in[k] = bd_node_in(g, n, k);
    for (int k = 0; k < 2; k++) out[k] = bd_node_out(g, n, k);
    if ((!out[0] || out[0]->constant) && (!out[1] || out[1]->constant)) return BD_OK;
    bd_status s;
    for (int k = 0; k < 6; k++)
        if ((s = bd_need_static(d, n, in[k], "an input"))) return s;
    for (int k = 0; k < 2; k++)
        if ((s = bd_need_static(d, n, out[k], "an output"))) return s;
    int dt = in[0]->dtype;
    if ((s = need_dtype_float(d, n, in[0], "input 0 (X)"))) return s;
    const char *dir = bd_attr_string(g, n, "direction", "forward");
    int nd = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    bool rev = strcmp(dir, "reverse") == 0;
    bool bm = n->opset >= 14 && bd_attr_int(n, "layout", 0) != 0;
    int64_t S = in[0]->dims[bm ? 1 : 0], B = in[0]->dims[bm ? 0 : 1], I = in[0]->dims[2];
    int64_t H = in[2]->dims[2];
    int G = gru ? 3 : 1;
    bool lbr = gru && bd_attr_int(n, "linear_before_reset", 0) != 0;
    const bd_attr *ca = bd_node_attr(n, "clip");
    bool clip = ca != NULL;
    double cv = ca ? ca->f : 0;
    if (clip && !(cv > 0))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'clip' = %g, expected a positive "
                            "threshold", cv);
    if (in[4]) { /* sequence_lens: only the trivial one */
        const bd_tensor *t = in[4]->constant;
        bool full = t != NULL;
        for (int64_t i = 0; full && i < t->numel; i++) full = bd_tensor_get_i64(t, i) == S;
        if (!full)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 4 (sequence_lens) is compiled "
                                "only as a constant equal to seq_length everywhere");
    }
    if (S * nd * (gru ? 12 : 6) > 4096)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "seq_length %lld is too long for the "
                            "unrolled recurrence", (long long)S);
    bd_rnn_act act[2][3];
    static const int gru_defaults[2] = {BD_RNN_SIGMOID, BD_RNN_TANH};
    static const int rnn_defaults[1] = {BD_RNN_TANH};
    if ((s = rnn_activations(n, d, nd, gru ? 2 : 1, gru ? gru_defaults : rnn_defaults, act)))
        return s;
    int xv = n->inputs[0], wv = n->inputs[1], rv = n->inputs[2];
    int bv = in[3] ? n->inputs[3] : -1, h0v = in[5] ? n->inputs[5] : -1;
    int yv = out[0] ? n->outputs[0] : -1, yhv = out[1] ? n->outputs[1] : -1;
    /* (adding values moves every bd_value: only indices from here) */

    int64_t bh[2] = {B, H}, hi[2] = {H, I}, hh[2] = {H, H}, bi[2] = {B, I};
    for (int dn = 0; dn < nd; dn++) {
        bool back = rev || dn == 1;
        int w[3], r[3], wb[3] = {-1, -1, -1}, rb[3] = {-1, -1, -1};
        for (int k = 0; k < G; k++) { /* gate k's slices of W [nd, G H, I], R, B [nd, 2 G H] */
            int64_t st2[2] = {I, 1}, str[2] = {H, 1}, st1 = 1, off[1] = {0};
            bd_access_dim mw[3] = {affine(-1, 0, dn, 0), affine(0, 1, k * H, 0), affine(1, 1, 0, 0)};
            w[k] = bd_lower_temp(g, dt, 2, hi);
            copy_into(p, node, wv, mw, (dn * G + k) * H * I, st2, w[k], 2, hi, off);
            r[k] = bd_lower_temp(g, dt, 2, hh);
            copy_into(p, node, rv, mw, (dn * G + k) * H * H, str, r[k], 2, hh, off);
            if (bv < 0) continue;
            for (int t = 0; t < 2; t++) {
                int64_t o = (dn * 2 * G + t * G + k) * H;
                bd_access_dim mb[2] = {affine(-1, 0, dn, 0), affine(0, 1, o - dn * 2 * G * H, 0)};
                int *dst = t ? &rb[k] : &wb[k];
                *dst = bd_lower_temp(g, dt, 1, &H);
                copy_into(p, node, bv, mb, o, &st1, *dst, 1, &H, off);
            }
        }
        int h = -1; /* the state: initial_h's slice, or zeros */
        if (h0v >= 0) {
            int64_t st[2] = {bm ? nd * H : H, 1}, off[1] = {0};
            bd_access_dim m0[3] = {affine(-1, 0, dn, 0), affine(0, 1, 0, 0), affine(1, 1, 0, 0)};
            if (bm) m0[0] = affine(0, 1, 0, 0), m0[1] = affine(-1, 0, dn, 0);
            h = bd_lower_temp(g, dt, 2, bh);
            copy_into(p, node, h0v, m0, bm ? dn * H : dn * B * H, st, h, 2, bh, off);
        } else {
            bd_tensor *z = bd_tensor_new(&g->model->arena, dt, 2, bh);
            if (!z) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the initial state");
            h = bd_lower_temp(g, dt, 2, bh);
            bd_graph_value(g, h)->constant = z;
        }
        for (int step = 0; step < S; step++) {
            int64_t t = back ? S - 1 - step : step;
            int64_t xs[2] = {bm ? S * I : I, 1}, off[1] = {0};
            bd_access_dim mx[3] = {affine(-1, 0, t, 0), affine(0, 1, 0, 0), affine(1, 1, 0, 0)};
            if (bm) mx[0] = affine(0, 1, 0, 0), mx[1] = affine(-1, 0, t, 0);
            int xt = bd_lower_temp(g, dt, 2, bi);
            copy_into(p, node, xv, mx, bm ? t * I : t * B * I, xs, xt, 2, bi, off);
            int xg[3], hg[3];
            for (int k = 0; k < G; k++) {
                xg[k] = bd_lower_temp(g, dt, 2, bh);
                gemm_nest(p, node, xt, w[k], wb[k], xg[k]);
                if (gru && k == 2 && !lbr) continue; /* needs r first */
                hg[k] = bd_lower_temp(g, dt, 2, bh);
                gemm_nest(p, node, h, r[k], rb[k], hg[k]);
            }
            int next = bd_lower_temp(g, dt, 2, bh);
            bd_nest *nest;
            bd_expr *e;
            if (gru && !lbr) { /* (r H) R_h^T + Rb_h */
                int rh = bd_lower_temp(g, dt, 2, bh);
                nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, rh));
                int ops[3] = {xg[1], hg[1], h};
                for (int k = 0; k < 3; k++)
                    bd_access_identity(bd_nest_operand(nest, ops[k], false, 2), 0);
                bd_access_identity(bd_nest_operand(nest, rh, true, 2), 0);
                e = BD_NEST_PARAMS(nest, expr);
                int rg = rnn_gate(e, dt, &act[dn][0], clip, cv,
                                  bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_load(e, 0, dt),
                                                 bd_expr_load(e, 1, dt)));
                bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_MUL, dt, rg, bd_expr_load(e, 2, dt)));
                hg[2] = bd_lower_temp(g, dt, 2, bh);
                gemm_nest(p, node, rh, r[2], rb[2], hg[2]);
            }
            nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, next));
            bd_access_identity(bd_nest_operand(nest, h, false, 2), 0);
            for (int k = 0; k < G; k++) {
                bd_access_identity(bd_nest_operand(nest, xg[k], false, 2), 0);
                bd_access_identity(bd_nest_operand(nest, hg[k], false, 2), 0);
            }
            bd_access_identity(bd_nest_operand(nest, next, true, 2), 0);
            e = BD_NEST_PARAMS(nest, expr);
            int hp = bd_expr_load(e, 0, dt);
#define GATE_SUM(k) bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_load(e, 1 + 2 * (k), dt), \
                                   bd_expr_load(e, 2 + 2 * (k), dt))
            int res;
            if (!gru) {
                res = rnn_gate(e, dt, &act[dn][0], clip, cv, GATE_SUM(0));
            } else {
                int z = rnn_gate(e, dt, &act[dn][0], clip, cv, GATE_SUM(0));
                int cand;
                if (lbr) {
                    int rg = rnn_gate(e, dt, &act[dn][0], clip, cv, GATE_SUM(1));
                    cand = bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_load(e, 5, dt),
                                          bd_expr_binary(e, BD_EXPR_MUL, dt, rg,
                                                         bd_expr_load(e, 6, dt)));
                } else {
                    cand = GATE_SUM(2);
                }
                cand = rnn_gate(e, dt, &act[dn][1], clip, cv, cand);
                int keep = bd_expr_binary(e, BD_EXPR_SUB, dt, bd_expr_const(e, 1, dt), z);
                res = bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_binary(e, BD_EXPR_MUL, dt, keep, cand),
                                     bd_expr_binary(e, BD_EXPR_MUL, dt, z, hp));
            }
#undef GATE_SUM
            if (e->overflow)
                return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "the activations make the step's "
                                    "expression too large");
            bd_expr_compact(e, res);
            h = next;
            if (yv >= 0) { /* Y [S, nd, B, H] or [B, S, nd, H] */
                int64_t st[2] = {H, 1}, ext[2] = {B, H}, offs[2] = {t, dn};
                bd_access_dim id2[2] = {affine(0, 1, 0, 0), affine(1, 1, 0, 0)};
                if (!bm) {
                    copy_into(p, node, h, id2, 0, st, yv, 2, ext, offs);
                } else { /* [B, S, nd, H]: b is not a leading dim; iterate (b, s=t, d, h) */
                    int64_t ext4[4] = {B, 1, 1, H}, st4[4] = {H, 0, 0, 1}, none[1] = {0};
                    bd_access_dim m4[2] = {affine(0, 1, 0, 0), affine(3, 1, 0, 0)};
                    int before = (int)p->nests.len;
                    copy_into(p, node, h, m4, 0, st4, yv, 4, ext4, none);
                    bd_nest *cn = &BD_VEC_AT(&p->nests, bd_nest, before);
                    bd_operand *yo = &cn->operands[1];
                    yo->dims[1] = affine(1, 1, t, 0);
                    yo->dims[2] = affine(2, 1, dn, 0);
                    BD_NEST_PARAMS(cn, copy)->out_base = (t * nd + dn) * H;
                }
            }
        }
        if (yhv >= 0) { /* Y_h [nd, B, H] or [B, nd, H] */
            int64_t st[2] = {H, 1}, ext[2] = {B, H}, offs[1] = {dn};
            bd_access_dim id2[2] = {affine(0, 1, 0, 0), affine(1, 1, 0, 0)};
            if (!bm) {
                copy_into(p, node, h, id2, 0, st, yhv, 2, ext, offs);
            } else {
                int64_t ext3[3] = {B, 1, H}, st3[3] = {H, 0, 1}, none[1] = {0};
                bd_access_dim m3[2] = {affine(0, 1, 0, 0), affine(2, 1, 0, 0)};
                int before = (int)p->nests.len;
                copy_into(p, node, h, m3, 0, st3, yhv, 3, ext3, none);
                bd_nest *cn = &BD_VEC_AT(&p->nests, bd_nest, before);
                cn->operands[1].dims[1] = affine(1, 1, dn, 0);
                BD_NEST_PARAMS(cn, copy)->out_base = dn * H;
            }
        }
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- MatMulInteger, QLinearMatMul */

/* An elementwise nest int32(v) - int32(zero point) into a new int32 value of v's shape; the zero
 * point is a scalar (or one value), or 1-D along dim `along` of v (A's rows, B's columns). */
static int minus_zero_point(bd_program *p, int node, int v, int zp, int along) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, v);
    int r = x->rank, xd = x->dtype, zd = zp >= 0 ? bd_graph_value(g, zp)->dtype : 0;
    int64_t dims[BD_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = x->dims[k];
    int out = bd_lower_temp(g, BD_DT_INT32, r, dims);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
    bd_access_identity(bd_nest_operand(nest, v, false, r), 0);
    if (zp >= 0) quant_operand(g, nest, zp, along);
    bd_access_identity(bd_nest_operand(nest, out, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int a = bd_expr_cast(e, BD_DT_INT32, bd_expr_load(e, 0, xd));
    if (zp >= 0)
        a = bd_expr_binary(e, BD_EXPR_SUB, BD_DT_INT32, a,
                           bd_expr_cast(e, BD_DT_INT32, bd_expr_load(e, 1, zd)));
    bd_expr_compact(e, a);
    return out;
}

/* MatMulInteger: an int32 MATMUL of the 8-bit operands that subtracts their zero points, when
 * each has one; with per-row or per-column zero points, the operands less them as int32
 * (elementwise nests), then the int32 MATMUL. QLinearMatMul: that product, then
 * y = saturate(round(C (a_scale b_scale / y_scale)) + y_zero_point), the multiplier in float and
 * the rest in double as the reference has it; its scales and zero points one value each
 * (per-row or per-column ones are refused). */
bd_status bd_lower_matmul_integer(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bool q = n->op == BD_OP_QLINEAR_MATMUL;
    bd_value *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    for (int k = 0; k < n->n_inputs; k++)
        if ((s = bd_need_static(d, n, bd_node_in(g, n, k), "an input"))) return s;
    if ((s = bd_need_static(d, n, y, "output 0"))) return s;
    int ia = 0, ib = q ? 3 : 1, iza = q ? 2 : 2, izb = q ? 5 : 3;
    bd_value *a = bd_node_in(g, n, ia), *b = bd_node_in(g, n, ib);
    if (a->rank < 1 || b->rank < 1)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "scalar operands are not supported");
    int arow = a->rank >= 2 ? a->rank - 2 : -1, bcol = b->rank >= 2 ? b->rank - 1 : -1;
    for (int k = 1; k < n->n_inputs && q; k++) {
        bd_value *v = bd_node_in(g, n, k);
        if (k != ib && v && !one_value(g, n->inputs[k]))
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input %d: per-row or per-column "
                                "quantization is not supported", k);
    }
    int ydt = y->dtype, yr = y->rank;
    int64_t lo = ydt == BD_DT_INT8 ? -128 : 0, hi = ydt == BD_DT_INT8 ? 127 : 255;
    if (q && ydt != BD_DT_INT8 && ydt != BD_DT_UINT8)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output dtype %s is not supported",
                            bd_dtype_name(ydt));
    int64_t ydims[BD_MAX_RANK];
    for (int k = 0; k < yr; k++) ydims[k] = y->dims[k];
    int av = n->inputs[ia], bv = n->inputs[ib], yv = n->outputs[0];
    int zav = bd_node_in(g, n, iza) ? n->inputs[iza] : -1;
    int zbv = bd_node_in(g, n, izb) ? n->inputs[izb] : -1;
    int in[8];
    for (int k = 0; k < n->n_inputs && k < 8; k++) in[k] = bd_node_in(g, n, k) ? n->inputs[k] : -1;
    /* (adding values moves every bd_value: only indices from here) */
    int c = q ? bd_lower_temp(g, BD_DT_INT32, yr, ydims) : yv;
    if (one_value(g, zav) && one_value(g, zbv)) {
        /* the zero points inside the product: the 8-bit operands as they are (int8 kernels) */
        matmul_values(p, node, false, av, bv, -1, zav, zbv, c);
    } else {
        int a32 = minus_zero_point(p, node, av, zav, arow);
        int b32 = minus_zero_point(p, node, bv, zbv, bcol);
        matmul_values(p, node, false, a32, b32, -1, -1, -1, c);
    }
    if (!q) return BD_OK;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_identity(bd_nest_operand(nest, c, false, yr), 0);
    int scales[3] = {in[1], in[4], in[6]};
    for (int k = 0; k < 3; k++)
        quant_operand(g, nest, scales[k], -1);
    if (in[7] >= 0) quant_operand(g, nest, in[7], -1);
    bd_access_identity(bd_nest_operand(nest, yv, true, yr), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int F = BD_DT_FLOAT, D = BD_DT_DOUBLE;
    int sd[3];
    for (int k = 0; k < 3; k++) sd[k] = bd_graph_value(g, scales[k])->dtype;
    int m = bd_expr_binary(e, BD_EXPR_DIV, F,
                           bd_expr_binary(e, BD_EXPR_MUL, F,
                                          bd_expr_cast(e, F, bd_expr_load(e, 1, sd[0])),
                                          bd_expr_cast(e, F, bd_expr_load(e, 2, sd[1]))),
                           bd_expr_cast(e, F, bd_expr_load(e, 3, sd[2])));
    int v = bd_expr_binary(e, BD_EXPR_MUL, D, bd_expr_cast(e, D, bd_expr_load(e, 0, BD_DT_INT32)),
                           bd_expr_cast(e, D, m));
    if (in[7] >= 0)
        v = bd_expr_binary(e, BD_EXPR_ADD, D, v, bd_expr_cast(e, D, bd_expr_load(e, 4, ydt)));
    v = bd_expr_unary(e, BD_EXPR_ROUND, D, v);
    v = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, D,
                       bd_expr_binary(e, BD_EXPR_CLAMP_MIN, D, v, bd_expr_const(e, (double)lo, D)),
                       bd_expr_const(e, (double)hi, D));
    bd_expr_compact(e, bd_expr_cast(e, ydt, v));
    return BD_OK;
}

/* The internal DequantizedMatMul (front/qdq_conv.c): inputs aq, bq, a_scale, a_zero, b_scale,
 * b_zero, each zero point one value (or absent) and b_scale one value or one per column of B;
 * then, when a QuantizeLinear was absorbed, y_scale and y_zero (one value each); then, from a
 * Gemm, its bias (one value or one per column). The int32 MATMUL of the 8-bit operands less
 * their zero points (the int8 kernels when B is constant), then one elementwise nest:
 * v = float(sum) * (a_scale * b_scale[n]) (+ bias[n]) in float32, and with the QuantizeLinear
 * y = saturate(round_half_even(v / y_scale) + y_zero), as bd_lower_quantize computes it. */
bd_status bd_lower_dequantized_matmul(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    for (int k = 0; k < n->n_inputs; k++)
        if ((s = bd_need_static(d, n, bd_node_in(g, n, k), "an input"))) return s;
    if ((s = bd_need_static(d, n, y, "output 0"))) return s;
    int yr = y->rank, yv = n->outputs[0], ydt = y->dtype, in[9];
    for (int k = 0; k < 9; k++)
        in[k] = k < n->n_inputs && bd_node_in(g, n, k) ? n->inputs[k] : -1;
    int64_t ydims[BD_MAX_RANK];
    for (int k = 0; k < yr; k++)
        ydims[k] = y->dims[k];
    /* (adding values moves every bd_value: only indices from here) */
    int c = bd_lower_temp(g, BD_DT_INT32, yr, ydims);
    matmul_values(p, node, false, in[0], in[1], -1, in[3], in[5], c);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_identity(bd_nest_operand(nest, c, false, yr), 0);
    for (int k = 2; k <= 4; k += 2) /* the scales: b's along y's last dim (B's columns) */
        quant_operand(g, nest, in[k], yr - 1);
    bool requant = in[6] >= 0;
    for (int k = 6; k <= 7 && requant; k++) /* y's scale and zero point: one value each */
        quant_operand(g, nest, in[k], -1);
    int bias = in[8] >= 0 ? quant_operand(g, nest, in[8], yr - 1) : -1;
    bd_access_identity(bd_nest_operand(nest, yv, true, yr), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int F = BD_DT_FLOAT;
    int scale = bd_expr_binary(e, BD_EXPR_MUL, F, bd_expr_load(e, 1, F), bd_expr_load(e, 2, F));
    int v = bd_expr_binary(e, BD_EXPR_MUL, F, bd_expr_cast(e, F, bd_expr_load(e, 0, BD_DT_INT32)),
                           scale);
    if (bias >= 0) v = bd_expr_binary(e, BD_EXPR_ADD, F, v, bd_expr_load(e, bias, F));
    if (requant) { /* (the cast to y's type saturates, NaN to 0) */
        int zdt = bd_graph_value(g, in[7])->dtype;
        v = bd_expr_unary(e, BD_EXPR_ROUND, F,
                          bd_expr_binary(e, BD_EXPR_DIV, F, v, bd_expr_load(e, 3, F)));
        v = bd_expr_cast(
            e, ydt,
            bd_expr_binary(e, BD_EXPR_ADD, F, v, bd_expr_cast(e, F, bd_expr_load(e, 4, zdt))));
    }
    bd_expr_compact(e, v);
    return BD_OK;
}

/* ---------------------------------------------------------------- ConvInteger, QLinearConv */

/* An elementwise nest double(v) - double(zero point) into a new double value of v's shape; the
 * zero point is one value, or 1-D along dim 0 of v (W's output channels). */
static int centered_double(bd_program *p, int node, int v, int zp) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, v);
    int r = x->rank, xd = x->dtype, D = BD_DT_DOUBLE;
    int64_t dims[BD_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = x->dims[k];
    int out = bd_lower_temp(g, D, r, dims);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
    bd_access_identity(bd_nest_operand(nest, v, false, r), 0);
    int zd = 0;
    if (zp >= 0) {
        zd = bd_graph_value(g, zp)->dtype;
        quant_operand(g, nest, zp, 0);
    }
    bd_access_identity(bd_nest_operand(nest, out, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int a = bd_expr_cast(e, D, bd_expr_load(e, 0, xd));
    if (zp >= 0) a = bd_expr_binary(e, BD_EXPR_SUB, D, a, bd_expr_cast(e, D, bd_expr_load(e, 1, zd)));
    bd_expr_compact(e, a);
    return out;
}

/* ConvInteger and QLinearConv: with one zero point per operand, an int32 CONV nest of the 8-bit
 * X and W and their zero points (and QLinearConv's int32 bias); otherwise (per-channel W zero
 * points) X and W less their zero points as doubles (elementwise nests; a double holds every
 * integer sum of 8-bit products exactly) and a double CONV nest with the bias. Then, for
 * QLinearConv, an elementwise nest y = saturate(round(c x_scale w_scale / y_scale +
 * y_zero_point)), the multiplier in float as the reference has it (w_scale per output channel or
 * one value). */
bd_status bd_lower_conv_integer(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bool q = n->op == BD_OP_QLINEAR_CONV;
    bd_value *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    for (int k = 0; k < n->n_inputs; k++)
        if ((s = bd_need_static(d, n, bd_node_in(g, n, k), "an input"))) return s;
    if ((s = bd_need_static(d, n, y, "output 0"))) return s;
    int ix = 0, iw = q ? 3 : 1, izx = 2, izw = q ? 5 : 3;
    bd_value *x = bd_node_in(g, n, ix), *w = bd_node_in(g, n, iw);
    int nsp = x->rank - 2;
    if (nsp < 1 || w->rank != x->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input ranks %d and %d are not a convolution's",
                            x->rank, w->rank);
    nn_window win;
    if ((s = read_window(g, n, d, nsp, true, &win))) return s;
    for (int i = 0; i < nsp; i++) win.kernel[i] = w->dims[2 + i];
    if (q) {
        for (int k = 1; k < 8; k++) {
            bd_value *v = bd_node_in(g, n, k);
            bool per_channel = k == 4 || k == 5;
            if (k != iw && v && v->rank > 0 && !(v->rank == 1 && (v->dims[0] == 1 || per_channel)))
                return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input %d: per-channel "
                                    "quantization is supported for W only", k);
        }
        if (y->dtype != BD_DT_INT8 && y->dtype != BD_DT_UINT8)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output dtype %s is not supported",
                                bd_dtype_name(y->dtype));
    }
    int ydt = y->dtype, yr = y->rank;
    int64_t ydims[BD_MAX_RANK], M = w->dims[0];
    for (int k = 0; k < yr; k++) ydims[k] = y->dims[k];
    int in[9];
    for (int k = 0; k < 9; k++) in[k] = bd_node_in(g, n, k) ? n->inputs[k] : -1;
    int yv = n->outputs[0];
    /* (adding values moves every bd_value: only indices from here) */
    int cdt = BD_DT_DOUBLE, c;
    if (one_value(g, in[izx]) && one_value(g, in[izw])) {
        /* exact in int32: the 8-bit operands as they are, the zero points inside the sum (int8
         * kernels), QLinearConv's int32 bias added to it */
        cdt = BD_DT_INT32;
        c = q ? bd_lower_temp(g, cdt, yr, ydims) : yv;
        conv_quant zeros = {in[izx], in[izw], -1, -1};
        conv_values(p, node, win, in[ix], in[iw], q ? in[8] : -1, &zeros, c);
        if (!q) return BD_OK;
    } else {
        int xdv = centered_double(p, node, in[ix], in[izx]);
        int wdv = centered_double(p, node, in[iw], in[izw]);
        int bdv = -1;
        if (q && in[8] >= 0) { /* the int32 bias, as double */
            bdv = bd_lower_temp(g, BD_DT_DOUBLE, 1, &M);
            bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, bdv));
            bd_access_identity(bd_nest_operand(nest, in[8], false, 1), 0);
            bd_access_identity(bd_nest_operand(nest, bdv, true, 1), 0);
            bd_expr *e = BD_NEST_PARAMS(nest, expr);
            bd_expr_compact(e, bd_expr_cast(e, BD_DT_DOUBLE,
                                            bd_expr_load(e, 0, bd_graph_value(g, in[8])->dtype)));
        }
        c = bd_lower_temp(g, BD_DT_DOUBLE, yr, ydims);
        conv_values(p, node, win, xdv, wdv, bdv, &no_quant, c);
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_identity(bd_nest_operand(nest, c, false, yr), 0);
    int scales[3] = {in[1], in[4], in[6]}, F = BD_DT_FLOAT, D = BD_DT_DOUBLE;
    if (q) {
        for (int k = 0; k < 3; k++)
            quant_operand(g, nest, scales[k], 1);
        if (in[7] >= 0) quant_operand(g, nest, in[7], -1);
    }
    bd_access_identity(bd_nest_operand(nest, yv, true, yr), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int v = bd_expr_cast(e, D, bd_expr_load(e, 0, cdt));
    if (q) {
        int sd[3];
        for (int k = 0; k < 3; k++) sd[k] = bd_graph_value(g, scales[k])->dtype;
        int m = bd_expr_binary(e, BD_EXPR_DIV, F,
                               bd_expr_binary(e, BD_EXPR_MUL, F,
                                              bd_expr_cast(e, F, bd_expr_load(e, 1, sd[0])),
                                              bd_expr_cast(e, F, bd_expr_load(e, 2, sd[1]))),
                               bd_expr_cast(e, F, bd_expr_load(e, 3, sd[2])));
        v = bd_expr_binary(e, BD_EXPR_MUL, D, v, bd_expr_cast(e, D, m));
        if (in[7] >= 0)
            v = bd_expr_binary(e, BD_EXPR_ADD, D, v, bd_expr_cast(e, D, bd_expr_load(e, 4, ydt)));
        double lo = ydt == BD_DT_INT8 ? -128 : 0, hi = ydt == BD_DT_INT8 ? 127 : 255;
        v = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, D,
                           bd_expr_binary(e, BD_EXPR_CLAMP_MIN, D,
                                          bd_expr_unary(e, BD_EXPR_ROUND, D, v),
                                          bd_expr_const(e, lo, D)),
                           bd_expr_const(e, hi, D));
    }
    bd_expr_compact(e, bd_expr_cast(e, ydt, v));
    return BD_OK;
}
