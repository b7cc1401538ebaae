/* elementwise.c — lowering of elementwise ops (unary math and activations, broadcasting binary,
 * variadic Min/Max/Sum/Mean, Where, Cast/CastLike, Clip, comparisons and logic) and of the
 * constant-producing ops.
 *
 * An elementwise nest iterates over the output; each input reads the same index, or index 0 along
 * a broadcast dim: exactly the IDENTITY / broadcast access maps. Its body is an expression
 * (nest/expr.h) built here from the node, once: its op, attributes and dtypes are resolved into
 * expression nodes, so that nothing after lowering reads the ONNX node. float16 and bfloat16
 * inputs are converted to float when loaded, the op computes in float, and the result is rounded
 * back when stored; Where, and Cast to the same type, move bit patterns unchanged. */
#include <math.h>
#include <string.h>

#include "lower/lower.h"

static bool is_half(int dt) {
    return dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16;
}

/* The expression ops of the elementwise ONNX ops that map one to one. */
static bd_expr_op direct_op(bd_op op) {
    switch (op) {
    case BD_OP_ABS: return BD_EXPR_ABS;
    case BD_OP_NEG: return BD_EXPR_NEG;
    case BD_OP_NOT: return BD_EXPR_NOT;
    case BD_OP_RELU: return BD_EXPR_RELU;
    case BD_OP_SQRT: return BD_EXPR_SQRT;
    case BD_OP_EXP: return BD_EXPR_EXP;
    case BD_OP_LOG: return BD_EXPR_LOG;
    case BD_OP_ERF: return BD_EXPR_ERF;
    case BD_OP_TANH: return BD_EXPR_TANH;
    case BD_OP_RECIPROCAL: return BD_EXPR_RECIPROCAL;
    case BD_OP_SIGMOID: return BD_EXPR_SIGMOID;
    case BD_OP_HARD_SWISH: return BD_EXPR_HARD_SWISH;
    case BD_OP_ADD: return BD_EXPR_ADD;
    case BD_OP_SUB: return BD_EXPR_SUB;
    case BD_OP_MUL: return BD_EXPR_MUL;
    case BD_OP_DIV: return BD_EXPR_DIV;
    case BD_OP_EQUAL: return BD_EXPR_EQUAL;
    case BD_OP_LESS: return BD_EXPR_LESS;
    case BD_OP_GREATER: return BD_EXPR_GREATER;
    case BD_OP_AND: return BD_EXPR_AND;
    case BD_OP_OR: return BD_EXPR_OR;
    case BD_OP_BITWISE_NOT: return BD_EXPR_BIT_NOT;
    case BD_OP_BITWISE_AND: return BD_EXPR_BIT_AND;
    case BD_OP_BITWISE_OR: return BD_EXPR_BIT_OR;
    case BD_OP_BITWISE_XOR: return BD_EXPR_BIT_XOR;
    case BD_OP_XOR: return BD_EXPR_XOR;
    case BD_OP_GREATER_OR_EQUAL: return BD_EXPR_GREATER_EQUAL;
    case BD_OP_LESS_OR_EQUAL: return BD_EXPR_LESS_EQUAL;
    case BD_OP_IS_NAN: return BD_EXPR_ISNAN;
    case BD_OP_PRELU: return BD_EXPR_PRELU;
    case BD_OP_SIN: return BD_EXPR_SIN;
    case BD_OP_COS: return BD_EXPR_COS;
    case BD_OP_TAN: return BD_EXPR_TAN;
    case BD_OP_ASIN: return BD_EXPR_ASIN;
    case BD_OP_ACOS: return BD_EXPR_ACOS;
    case BD_OP_ATAN: return BD_EXPR_ATAN;
    case BD_OP_SINH: return BD_EXPR_SINH;
    case BD_OP_COSH: return BD_EXPR_COSH;
    case BD_OP_ASINH: return BD_EXPR_ASINH;
    case BD_OP_ACOSH: return BD_EXPR_ACOSH;
    case BD_OP_ATANH: return BD_EXPR_ATANH;
    case BD_OP_CEIL: return BD_EXPR_CEIL;
    case BD_OP_FLOOR: return BD_EXPR_FLOOR;
    case BD_OP_ROUND: return BD_EXPR_ROUND;
    case BD_OP_SIGN: return BD_EXPR_SIGN;
    case BD_OP_SOFTPLUS: return BD_EXPR_SOFTPLUS;
    case BD_OP_SOFTSIGN: return BD_EXPR_SOFTSIGN;
    case BD_OP_MISH: return BD_EXPR_MISH;
    default: return BD_EXPR_OP_COUNT;
    }
}

/* x^1, x^2, x^3 (GELU's tanh form) and x^0.5 as plain arithmetic when the exponent is a float
 * constant; -1 otherwise. */
static int pow_by_constant(bd_expr *x, const bd_value *ex, int dt, int a) {
    if (!ex->constant || ex->constant->numel != 1 || is_half(ex->dtype) ||
        !(bd_dtype_is_float(ex->dtype) || bd_dtype_is_int(ex->dtype)))
        return -1;
    double k = bd_tensor_get_f64(ex->constant, 0);
    if (k == 1) return a;
    if (k == 2) return bd_expr_binary(x, BD_EXPR_MUL, dt, a, a);
    if (k == 3)
        return bd_expr_binary(x, BD_EXPR_MUL, dt, bd_expr_binary(x, BD_EXPR_MUL, dt, a, a), a);
    if (k == 0.5) return bd_expr_unary(x, BD_EXPR_SQRT, dt, a);
    return -1;
}

/* The expression of node n over its loaded inputs in[] (operand order: the present inputs),
 * computed in dtype cin; the output dtype is out_dt. -1 when there is none. */
static int op_expr(bd_graph *g, const bd_node *n, bd_expr *x, const int *in, int n_in, int cin,
                   int out_dt) {
    bool is_float = cin == BD_DT_FLOAT || cin == BD_DT_DOUBLE;
    bd_expr_op direct = direct_op(n->op);
    if (direct == BD_EXPR_EQUAL || direct == BD_EXPR_LESS || direct == BD_EXPR_GREATER ||
        direct == BD_EXPR_GREATER_EQUAL || direct == BD_EXPR_LESS_EQUAL ||
        direct == BD_EXPR_AND || direct == BD_EXPR_OR || direct == BD_EXPR_XOR)
        return bd_expr_binary(x, direct, BD_DT_BOOL, in[0], in[1]);
    if (direct == BD_EXPR_ISNAN) return bd_expr_unary(x, direct, BD_DT_BOOL, in[0]);
    if (direct != BD_EXPR_OP_COUNT && bd_expr_arity(direct) == 2)
        return bd_expr_binary(x, direct, cin, in[0], in[1]);
    if (direct != BD_EXPR_OP_COUNT) return bd_expr_unary(x, direct, cin, in[0]);
    switch (n->op) {
    case BD_OP_POW: {
        int k = is_float ? pow_by_constant(x, bd_node_in(g, n, 1), cin, in[0]) : -1;
        if (k >= 0) return k;
        return bd_expr_binary(x, BD_EXPR_POW, is_float ? cin : out_dt, in[0], in[1]);
    }
    case BD_OP_WHERE: return bd_expr_select(x, cin, in[0], in[1], in[2]);
    case BD_OP_CAST: return bd_expr_cast(x, out_dt, in[0]);
    case BD_OP_CLIP: {
        /* Bounds: attributes before opset 11 (absent: none), then optional inputs. */
        int lo = -1, hi = -1;
        if (n->opset < 11) {
            const bd_attr *a = bd_node_attr(n, "min"), *b = bd_node_attr(n, "max");
            if (a && a->type == BD_ATTR_FLOAT) lo = bd_expr_const(x, a->f, cin);
            if (b && b->type == BD_ATTR_FLOAT) hi = bd_expr_const(x, b->f, cin);
        } else {
            int operand = 1;
            if (n->n_inputs > 1 && n->inputs[1] >= 0) lo = in[operand++];
            if (n->n_inputs > 2 && n->inputs[2] >= 0) hi = in[operand];
        }
        int v = in[0];
        if (lo >= 0) v = bd_expr_binary(x, BD_EXPR_CLAMP_MIN, cin, v, lo);
        if (hi >= 0) v = bd_expr_binary(x, BD_EXPR_CLAMP_MAX, cin, v, hi);
        return v;
    }
    case BD_OP_MIN:
    case BD_OP_MAX: { /* folded left over the inputs; NaN wins, as in numpy */
        int v = in[0];
        for (int i = 1; i < n_in; i++)
            v = bd_expr_binary(x, n->op == BD_OP_MIN ? BD_EXPR_MIN : BD_EXPR_MAX, cin, v, in[i]);
        return v;
    }
    case BD_OP_LEAKY_RELU:
        return bd_expr_unary_k(x, BD_EXPR_LEAKY_RELU, cin, in[0], bd_attr_float(n, "alpha", 0.01f),
                               0);
    case BD_OP_HARD_SIGMOID:
        return bd_expr_unary_k(x, BD_EXPR_HARD_SIGMOID, cin, in[0], bd_attr_float(n, "alpha", 0.2f),
                               bd_attr_float(n, "beta", 0.5f));
    case BD_OP_GELU: {
        bool tanh_form = strcmp(bd_attr_string(g, n, "approximate", "none"), "tanh") == 0;
        return bd_expr_unary(x, tanh_form ? BD_EXPR_GELU_TANH : BD_EXPR_GELU, cin, in[0]);
    }
    case BD_OP_ELU:
        return bd_expr_unary_k(x, BD_EXPR_ELU, cin, in[0], bd_attr_float(n, "alpha", 1.0f), 0);
    case BD_OP_SELU:
        return bd_expr_unary_k(x, BD_EXPR_SELU, cin, in[0],
                               bd_attr_float(n, "alpha", 1.67326319217681884765625f),
                               bd_attr_float(n, "gamma", 1.05070102214813232421875f));
    case BD_OP_CELU:
        return bd_expr_unary_k(x, BD_EXPR_CELU, cin, in[0], bd_attr_float(n, "alpha", 1.0f), 0);
    case BD_OP_THRESHOLDED_RELU:
        return bd_expr_unary_k(x, BD_EXPR_THRESHOLDED_RELU, cin, in[0],
                               bd_attr_float(n, "alpha", 1.0f), 0);
    case BD_OP_SHRINK: /* the spec allows integers, whose bounds would need their own rounding */
        if (!is_float) return -1;
        return bd_expr_unary_k(x, BD_EXPR_SHRINK, cin, in[0], bd_attr_float(n, "lambd", 0.5f),
                               bd_attr_float(n, "bias", 0.0f));
    case BD_OP_IS_INF: {
        bool neg = bd_attr_int(n, "detect_negative", 1), pos = bd_attr_int(n, "detect_positive", 1);
        if (!neg && !pos) return bd_expr_const(x, 0, BD_DT_BOOL);
        int v = neg && pos ? bd_expr_unary(x, BD_EXPR_ABS, cin, in[0]) : in[0];
        return bd_expr_binary(x, BD_EXPR_EQUAL, BD_DT_BOOL, v,
                              bd_expr_const(x, neg && !pos ? -INFINITY : INFINITY, cin));
    }
    case BD_OP_MOD:
        return bd_expr_binary(x, bd_attr_int(n, "fmod", 0) ? BD_EXPR_FMOD : BD_EXPR_MOD, cin, in[0],
                              in[1]);
    case BD_OP_BIT_SHIFT: {
        bool left = strcmp(bd_attr_string(g, n, "direction", ""), "LEFT") == 0;
        if (!bd_dtype_is_int(cin) || bd_dtype_is_signed(cin)) return -1;
        return bd_expr_binary(x, left ? BD_EXPR_SHIFT_LEFT : BD_EXPR_SHIFT_RIGHT, cin, in[0],
                              in[1]);
    }
    case BD_OP_SUM:
    case BD_OP_MEAN: { /* summed left to right, then divided, as the reference does */
        int v = in[0];
        for (int i = 1; i < n_in; i++) v = bd_expr_binary(x, BD_EXPR_ADD, cin, v, in[i]);
        if (n->op == BD_OP_MEAN && n_in > 1)
            v = bd_expr_binary(x, BD_EXPR_DIV, cin, v, bd_expr_const(x, n_in, cin));
        return v;
    }
    case BD_OP_CAST_LIKE: return bd_expr_cast(x, out_dt, in[0]);
    case BD_OP_SWISH: { /* x * sigmoid(alpha x) */
        float alpha = bd_attr_float(n, "alpha", 1.0f);
        int ax = alpha == 1.0f ? in[0] : bd_expr_binary(x, BD_EXPR_MUL, cin, in[0],
                                                         bd_expr_const(x, alpha, cin));
        return bd_expr_binary(x, BD_EXPR_MUL, cin, in[0], bd_expr_unary(x, BD_EXPR_SIGMOID, cin, ax));
    }
    default: return -1;
    }
}

/* Trilu is a select between the input and 0: element (i, j) of the last two dims is kept when
 * j - i >= k (upper) or <= k (lower). The diagonal index j - i is a constant computed here, which
 * the nest broadcasts over the leading dims, so k may be a run-time input. */
static bd_status lower_trilu(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0);
    bool upper = bd_attr_int(n, "upper", 1) != 0;
    int64_t dims[2] = {x->dims[x->rank - 2], x->dims[x->rank - 1]};
    bd_status s = bd_need_table(d, n, dims[0] * dims[1], "the diagonal index");
    if (s) return s;
    bd_tensor *t = bd_tensor_new(&g->model->arena, BD_DT_INT64, 2, dims);
    if (!t) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the diagonal index");
    for (int64_t i = 0; i < dims[0]; i++)
        for (int64_t j = 0; j < dims[1]; j++) ((int64_t *)t->data)[i * dims[1] + j] = j - i;
    int diag = bd_graph_add_value(g, ""); /* unnamed: never looked up, never an I/O */
    bd_value *dv = bd_graph_value(g, diag), *y = bd_node_out(g, n, 0), *kv = bd_node_in(g, n, 1);
    x = bd_node_in(g, n, 0);
    dv->dtype = BD_DT_INT64;
    dv->rank = 2;
    dv->dims[0] = dims[0], dv->dims[1] = dims[1];
    dv->constant = t;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
    bd_access_identity(bd_nest_operand(nest, n->inputs[0], false, x->rank), 0);
    bd_access_broadcast(bd_nest_operand(nest, diag, false, 2), dv, y);
    if (kv) bd_access_broadcast(bd_nest_operand(nest, n->inputs[1], false, kv->rank), kv, y);
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int k = kv ? bd_expr_load(e, 2, BD_DT_INT64) : bd_expr_const(e, 0, BD_DT_INT64);
    int keep = bd_expr_binary(e, upper ? BD_EXPR_GREATER_EQUAL : BD_EXPR_LESS_EQUAL, BD_DT_BOOL,
                              bd_expr_load(e, 1, BD_DT_INT64), k);
    int v = bd_expr_select(e, y->dtype, keep, bd_expr_load(e, 0, y->dtype),
                           bd_expr_const(e, 0, y->dtype));
    bd_expr_compact(e, v);
    return BD_OK;
}

bd_status bd_lower_elementwise(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *out = bd_node_out(g, n, 0);
    if (out->constant) return BD_OK; /* folded: stored with the weights */
    if (!bd_value_shape_known(out))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output shape is not static");
    if (n->op == BD_OP_TRILU) {
        if (!bd_dtype_supported(out->dtype))
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "dtype %s is not supported",
                                bd_dtype_name(out->dtype));
        int64_t count = 1;
        for (int i = 0; i < out->rank; i++) count *= out->dims[i];
        return count ? lower_trilu(p, node, d) : BD_OK;
    }
    /* An expression node has a dtype: refuse a value the memory plan would refuse too */
    for (int k = -1; k < n->n_inputs; k++) {
        const bd_value *v = k < 0 ? out : bd_node_in(g, n, k);
        if (v && !bd_dtype_supported(v->dtype))
            return bd_fail(d, BD_ERR_UNSUPPORTED, "value '%s' has dtype %s, which code generation "
                           "does not handle", bd_quote(v->name), bd_dtype_name(v->dtype));
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, out);
    int dts[BD_NEST_MAX_OPERANDS];
    for (int k = 0; k < n->n_inputs; k++) {
        bd_value *in = bd_node_in(g, n, k);
        if (!in || (n->op == BD_OP_CAST_LIKE && k == 1)) continue; /* only its dtype matters */
        if (n->n_inputs + 1 > BD_NEST_MAX_OPERANDS)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "more than %d inputs",
                                BD_NEST_MAX_OPERANDS - 1);
        dts[nest->n_operands] = in->dtype;
        bd_access_broadcast(bd_nest_operand(nest, n->inputs[k], false, in->rank), in, out);
    }
    int n_in = nest->n_operands;
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, out->rank), 0);

    bd_expr *x = BD_NEST_PARAMS(nest, expr);
    int in_dt = n_in ? dts[n->op == BD_OP_WHERE ? 1 : 0] : out->dtype;
    bool is_cast = n->op == BD_OP_CAST || n->op == BD_OP_CAST_LIKE;
    bool raw = n->op == BD_OP_WHERE || (is_cast && in_dt == out->dtype);
    int cin = raw || !is_half(in_dt) ? in_dt : BD_DT_FLOAT;
    int loads[BD_NEST_MAX_OPERANDS];
    for (int k = 0; k < n_in; k++) {
        loads[k] = bd_expr_load(x, k, dts[k]);
        if (is_half(dts[k]) && !raw) loads[k] = bd_expr_cast(x, BD_DT_FLOAT, loads[k]);
    }
    int v = op_expr(g, n, x, loads, n_in, cin, out->dtype);
    v = bd_expr_cast(x, out->dtype, v);
    if (x->overflow)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "the expression is too large to compile");
    if (v < 0) return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "no expression for this op and dtype");
    bd_expr_compact(x, v);
    return BD_OK;
}

/* Constant, Range and Shape fold whenever shapes are static (ConstantOfShape too, unless it is too
 * big: lower/data.c); a graph output that is such a constant gets a CONSTANT nest that copies it
 * into the caller's buffer. */
bd_status bd_lower_constant(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *out = bd_node_out(g, n, 0);
    if (!out->constant)
        return bd_node_fail(
            d, BD_ERR_UNSUPPORTED, n,
            "output is not a compile-time constant (its inputs depend on runtime data)");
    return BD_OK;
}

/* QuantizeLinear y = saturate(round_half_even(x / scale) + zero_point) and DequantizeLinear
 * y = (x - zero_point) * scale, one elementwise nest each, computed in float (double with a
 * double scale) as the reference does. The scale and zero point are scalars, or 1-D along `axis`
 * (read through that axis' iteration dim); blocked scales (opset 21 block_size), float8 and
 * 4-bit types are refused. */
bd_status bd_lower_quantize(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0 (x)", "output", &n, &x, &y, &s)) return s;
    bd_value *sc = bd_node_in(g, n, 1), *zp = bd_node_in(g, n, 2);
    if ((s = bd_need_static(d, n, sc, "input 1 (scale)")) ||
        (s = bd_need_static(d, n, zp, "input 2 (zero_point)")))
        return s;
    bool q = n->op == BD_OP_QUANTIZE_LINEAR;
    int it = q ? y->dtype : x->dtype; /* the integer side */
    bool known = it == BD_DT_UINT8 || it == BD_DT_INT8 || it == BD_DT_UINT16 || it == BD_DT_INT16 ||
                 it == BD_DT_INT32;
    if (!known || (q && it == BD_DT_INT32))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "quantized dtype %s is not supported",
                            bd_dtype_name(it));
    int axis = 0;
    if (sc->rank > 1 || bd_attr_int(n, "block_size", 0) != 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "blocked scales are not supported");
    if (sc->rank == 1 && (!bd_norm_axis(bd_attr_int(n, "axis", 1), x->rank, &axis) ||
                          (sc->dims[0] != x->dims[axis] && sc->dims[0] != 1)))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (scale) has %lld values for axis "
                            "extent %lld", (long long)sc->dims[0],
                            (long long)(x->rank > axis ? x->dims[axis] : -1));
    if (zp && (zp->rank != sc->rank || (zp->rank == 1 && zp->dims[0] != sc->dims[0])))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (zero_point) does not match the scale");
    int ct = sc->dtype == BD_DT_DOUBLE ? BD_DT_DOUBLE : BD_DT_FLOAT, r = x->rank;
    /* Opset 23: `precision` names the division's type (default: the scale's). */
    int64_t precision = q ? bd_attr_int(n, "precision", 0) : 0;
    if (precision && precision != BD_DT_FLOAT && precision != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'precision' = %lld (only float "
                            "and double are compiled)", (long long)precision);
    if (precision) ct = (int)precision;
    int xdt = x->dtype, sdt = sc->dtype, zdt = zp ? zp->dtype : 0;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
    bd_access_identity(bd_nest_operand(nest, n->inputs[0], false, r), 0);
    for (int k = 1; k <= (zp ? 2 : 1); k++) {
        bd_operand *o = bd_nest_operand(nest, n->inputs[k], false, sc->rank);
        if (sc->rank == 1)
            o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, sc->dims[0] == 1 ? -1 : axis,
                                         sc->dims[0] != 1, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int xv = bd_expr_cast(e, ct, bd_expr_load(e, 0, xdt));
    int sv = bd_expr_cast(e, ct, bd_expr_load(e, 1, sdt));
    int zv = zp ? bd_expr_cast(e, ct, bd_expr_load(e, 2, zdt)) : bd_expr_const(e, 0, ct);
    int v;
    if (q) {
        /* saturate to [lo, hi]: the cast to y's type does it (every printer's float-to-integer
         * cast saturates, NaN to 0), so no clamp of its own, which took half the vector code */
        v = bd_expr_unary(e, BD_EXPR_ROUND, ct, bd_expr_binary(e, BD_EXPR_DIV, ct, xv, sv));
        v = bd_expr_binary(e, BD_EXPR_ADD, ct, v, zv);
    } else {
        v = bd_expr_binary(e, BD_EXPR_MUL, ct, bd_expr_binary(e, BD_EXPR_SUB, ct, xv, zv), sv);
    }
    bd_expr_compact(e, bd_expr_cast(e, y->dtype, v));
    return BD_OK;
}
