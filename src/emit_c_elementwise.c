/* emit_c_elementwise.c — C bodies for ELEMENTWISE nests (every unary, binary, variadic and
 * ternary map, Cast, Clip, Where) and CONSTANT nests (graph outputs that folded).
 *
 * A block walks its tile with one loop per iteration dim; each operand's element offset is the sum
 * of index x stride, with stride 0 along broadcast dims, so broadcasting needs no copies. The op
 * becomes one C expression over the loaded operands `a`, `b`, `c`, ...; integer arithmetic is
 * compiled with -fwrapv (ONNX integer overflow wraps), and the operations C leaves undefined
 * (division by zero, INT_MIN / -1, float-to-int out of range) are guarded.
 *
 * float16 and bfloat16 operands are uint16_t bit patterns: they are loaded through bd_h2f / bd_bf2f
 * (exact), the op computes in float, and the result is rounded back to nearest even by bd_f2h /
 * bd_f2bf (the prelude in emit_c.c). Cast to a 16-bit float rounds once from its source: a double or
 * integer source goes through bd_d2h / bd_d2bf, never through float first. Where, and Cast to the
 * same type, move the bit patterns unchanged. */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "emit_c.h"

static const char *const operand_names[] = {"a", "b", "c", "e", "f", "g", "h", "k",
                                            "m", "p", "q", "r", "s", "t", "u", "v"};

static bool is_half(int dtype) { return dtype == BD_DT_FLOAT16 || dtype == BD_DT_BFLOAT16; }

/* The dtype an operand is computed in once loaded: float for the 16-bit floats. */
static int compute_dtype(int dtype) { return is_half(dtype) ? BD_DT_FLOAT : dtype; }

/* `f` suffix of <math.h> functions for float, none for double. */
static const char *math_suffix(int dtype) { return dtype == BD_DT_FLOAT ? "f" : ""; }

static const char *float_literal(bd_emitter *e, double x, int dtype) {
    if (x != x) return "NAN";
    if (x > DBL_MAX) return "INFINITY";
    if (x < -DBL_MAX) return "(-INFINITY)";
    char buf[40];
    snprintf(buf, sizeof buf, dtype == BD_DT_FLOAT ? "%.9g" : "%.17g", x);
    /* "1" must become "1.0f", not "1f" */
    const char *dot = strpbrk(buf, ".e") ? "" : ".0";
    return bd_emit_str(e, "%s%s%s", buf, dot, dtype == BD_DT_FLOAT ? "f" : "");
}

/* Clip's bound k (1 = min, 2 = max): an input scalar (its operand letter: operands are the present
 * inputs in order), an attribute (opset < 11), or none. */
static const char *clip_bound(bd_emitter *e, const bd_node *n, int k, int dtype) {
    if (n->opset < 11) {
        const bd_attr *a = bd_node_attr(n, k == 1 ? "min" : "max");
        if (a && a->type == BD_ATTR_FLOAT) return float_literal(e, a->f, dtype);
        return NULL;
    }
    if (k >= n->n_inputs || n->inputs[k] < 0) return NULL;
    int operand = 0;
    for (int i = 0; i < k; i++) operand += n->inputs[i] >= 0;
    return operand_names[operand];
}

static const char *unary_expr(bd_emitter *e, const bd_node *n, int dt) {
    const char *f = math_suffix(dt);
    bool is_float = dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE;
    bool is_signed = bd_dtype_is_signed(dt);
    switch (n->op) {
    case BD_OP_ABS: return is_float ? bd_emit_str(e, "fabs%s(a)", f) : is_signed ? "(a < 0 ? -a : a)" : "a";
    case BD_OP_NEG: return "-a";
    case BD_OP_NOT: return "!a";
    case BD_OP_RELU: return is_float ? "(a < 0 ? 0 : a)" : "(a < 0 ? 0 : a)";
    case BD_OP_SQRT: return bd_emit_str(e, "sqrt%s(a)", f);
    case BD_OP_EXP: return dt == BD_DT_FLOAT ? "bd_exp_v(a)" : "exp(a)";
    case BD_OP_LOG: return bd_emit_str(e, "log%s(a)", f);
    case BD_OP_ERF: return dt == BD_DT_FLOAT ? "bd_erf_v(a)" : "erf(a)";
    case BD_OP_TANH: return dt == BD_DT_FLOAT ? "bd_tanh_v(a)" : "tanh(a)";
    case BD_OP_RECIPROCAL: return "1 / a";
    case BD_OP_SIGMOID: return dt == BD_DT_FLOAT ? "1 / (1 + bd_exp_v(-a))" : "1 / (1 + exp(-a))";
    case BD_OP_LEAKY_RELU: {
        const char *alpha = float_literal(e, bd_attr_float(n, "alpha", 0.01f), dt);
        return bd_emit_str(e, "(a < 0 ? %s * a : a)", alpha);
    }
    case BD_OP_HARD_SIGMOID: {
        const char *alpha = float_literal(e, bd_attr_float(n, "alpha", 0.2f), dt);
        const char *beta = float_literal(e, bd_attr_float(n, "beta", 0.5f), dt);
        return bd_emit_str(e, "fmax%s(0, fmin%s(1, %s * a + %s))", f, f, alpha, beta);
    }
    case BD_OP_HARD_SWISH: return bd_emit_str(e, "a * fmax%s(0, fmin%s(1, a / 6 + 0.5%s))", f, f, f);
    case BD_OP_GELU:
        if (bd_node_attr(n, "approximate") && bd_node_attr(n, "approximate")->s.len == 4)
            return dt == BD_DT_FLOAT
                       ? "0.5f * a * (1 + bd_tanh_v(0.7978845608028654f * (a + 0.044715f * a * a * a)))"
                       : "0.5 * a * (1 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))";
        return dt == BD_DT_FLOAT ? "0.5f * a * (1 + bd_erf_v(a * 0.7071067811865476f))"
                                 : "0.5 * a * (1 + erf(a * 0.7071067811865476))";
    default: return NULL;
    }
}

/* The C expression computing the output element from operands a, b, ... */
static const char *op_expr(bd_emitter *e, const bd_nest *nest, const bd_node *n, int in_dt, int out_dt) {
    bool is_float = in_dt == BD_DT_FLOAT || in_dt == BD_DT_DOUBLE;
    const char *f = math_suffix(in_dt);
    switch (n->op) {
    case BD_OP_ADD: return "a + b";
    case BD_OP_SUB: return "a - b";
    case BD_OP_MUL: return "a * b";
    case BD_OP_DIV:
        if (is_float) return "a / b";
        if (bd_dtype_is_signed(in_dt)) return "(b == 0 ? 0 : b == -1 ? -a : a / b)";
        return "(b == 0 ? 0 : a / b)";
    case BD_OP_POW: {
        /* x^2, x^3 (GELU's tanh form), x^0.5 as plain arithmetic when the exponent is a constant. */
        const bd_value *ex = bd_graph_value(e->graph, nest->operands[1].value);
        if (is_float && ex->constant && ex->constant->numel == 1 && bd_c_type(ex->dtype) &&
            !is_half(ex->dtype)) {
            double k = bd_tensor_get_f64(ex->constant, 0);
            if (k == 1) return "a";
            if (k == 2) return "a * a";
            if (k == 3) return "a * a * a";
            if (k == 0.5) return bd_emit_str(e, "sqrt%s(a)", f);
        }
        if (is_float) return bd_emit_str(e, "pow%s(a, b)", f);
        return bd_emit_str(e, "bd_f2i_%s(pow((double)a, (double)b))", bd_c_type(out_dt));
    }
    case BD_OP_EQUAL: return "a == b";
    case BD_OP_LESS: return "a < b";
    case BD_OP_GREATER: return "a > b";
    case BD_OP_AND: return "a && b";
    case BD_OP_WHERE: return "a ? b : c";
    case BD_OP_CAST: {
        if (out_dt == BD_DT_BOOL) return "a != 0";
        /* Rounded by the store: from a float (a float32 or the other 16-bit type), else from a
         * double holding the source exactly (integers of more than 53 bits are far beyond
         * float16's range; for bfloat16 they round twice). */
        if (is_half(out_dt)) return in_dt == BD_DT_FLOAT ? "a" : "(double)a";
        bool from_float = is_float, to_float = out_dt == BD_DT_FLOAT || out_dt == BD_DT_DOUBLE;
        if (from_float && !to_float) return bd_emit_str(e, "bd_f2i_%s((double)a)", bd_c_type(out_dt));
        return bd_emit_str(e, "(%s)a", bd_c_type(out_dt));
    }
    case BD_OP_CLIP: {
        const char *lo = clip_bound(e, n, 1, in_dt), *hi = clip_bound(e, n, 2, in_dt);
        const char *x = "a";
        if (lo) x = bd_emit_str(e, "(%s < %s ? %s : %s)", x, lo, lo, x);
        if (hi) x = bd_emit_str(e, "(%s > %s ? %s : %s)", x, hi, hi, x);
        return x;
    }
    case BD_OP_MIN:
    case BD_OP_MAX: {
        /* Fold left over the operands; NaN wins, as in numpy's minimum/maximum. */
        const char *cmp = n->op == BD_OP_MIN ? "<" : ">";
        const char *x = "a";
        for (int i = 1; i < nest->n_operands - 1; i++) {
            const char *y = operand_names[i];
            if (is_float)
                x = bd_emit_str(e, "bd_pick%s(%s, %s, %s %s %s)", f, x, y, y, cmp, x);
            else
                x = bd_emit_str(e, "(%s %s %s ? %s : %s)", y, cmp, x, y, x);
        }
        return x;
    }
    default: return unary_expr(e, n, in_dt);
    }
}

bd_status bd_emit_body_ELEMENTWISE(bd_emitter *e, const bd_nest *nest, bd_emit_phase phase, bd_diag *d) {
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    bd_graph *g = e->graph;
    const bd_node *n = bd_emit_node(e, nest);
    const bd_operand *out = &nest->operands[nest->n_operands - 1];
    const bd_value *vout = bd_graph_value(g, out->value);
    int out_dt = vout->dtype;
    int in_dt = bd_graph_value(g, nest->operands[n->op == BD_OP_WHERE ? 1 : 0].value)->dtype;
    /* Bit patterns move unchanged; everything else computes 16-bit floats in float. */
    bool raw = n->op == BD_OP_WHERE || (n->op == BD_OP_CAST && in_dt == out_dt);
    int cin = raw ? in_dt : compute_dtype(in_dt);
    const char *expr = op_expr(e, nest, n, cin, out_dt);
    if (!expr) return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "no C expression for this op and dtype");
    const char *store;
    if (raw || !is_half(out_dt))
        store = bd_emit_str(e, "(%s)(%s)", bd_c_type(out_dt), expr);
    else if (n->op == BD_OP_CAST && cin != BD_DT_FLOAT)
        store = bd_emit_str(e, "%s(%s)", out_dt == BD_DT_FLOAT16 ? "bd_d2h" : "bd_d2bf", expr);
    else
        store = bd_emit_str(e, "%s(%s)", out_dt == BD_DT_FLOAT16 ? "bd_f2h" : "bd_f2bf", expr);

    int r = nest->n_iter;
    /* Pointers, then one loop per dim with running offsets per operand. The output never shares
     * memory with an input (the storage plan keeps values live in one nest apart), so the pointers
     * are restrict; with that, and a constant trip count for the innermost loop (whenever the tile
     * divides the extent), GCC vectorizes the loop without runtime alias checks or a guessed trip
     * count (at -O2 too, where its "very cheap" cost model refuses both). */
    for (int k = 0; k < nest->n_operands; k++) {
        const bd_operand *o = &nest->operands[k];
        const char *t = bd_c_type(bd_graph_value(g, o->value)->dtype);
        bd_emit(e, "%s%s *restrict P%d = %s;", o->write ? "" : "const ", t, k, bd_emit_ptr(e, o->value));
    }
    /* stride of operand k along iteration dim i */
    int64_t stride[BD_NEST_MAX_OPERANDS][BD_MAX_RANK] = {{0}};
    for (int k = 0; k < nest->n_operands; k++) {
        const bd_operand *o = &nest->operands[k];
        const bd_value *v = bd_graph_value(g, o->value);
        int64_t vs[BD_MAX_RANK];
        bd_value_strides(v, vs);
        for (int j = 0; j < o->rank; j++)
            if (o->dims[j].kind == BD_ACCESS_AFFINE && o->dims[j].iter >= 0)
                stride[k][o->dims[j].iter] += vs[j] * o->dims[j].scale;
    }
    for (int i = 0; i < r; i++) {
        if (i == r - 1 && nest->tile[i] > 0 && nest->extent[i] % nest->tile[i] == 0)
            bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < lo[%d] + %lld; i%d++)", i, i, i, i,
                         (long long)nest->tile[i], i);
        else
            bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", i, i, i, i, i);
    }
    for (int k = 0; k < nest->n_operands; k++) {
        const char *sum = "0";
        for (int i = 0; i < r; i++)
            if (stride[k][i]) sum = bd_emit_str(e, "%s + i%d * %lld", sum, i, (long long)stride[k][i]);
        int dt = bd_graph_value(g, nest->operands[k].value)->dtype;
        if (nest->operands[k].write)
            bd_emit(e, "const int64_t o%d = %s;", k, sum);
        else if (is_half(dt) && !raw)
            bd_emit(e, "const float %s = %s(P%d[%s]);", operand_names[k],
                    dt == BD_DT_FLOAT16 ? "bd_h2f" : "bd_bf2f", k, sum);
        else
            bd_emit(e, "const %s %s = P%d[%s];", bd_c_type(dt), operand_names[k], k, sum);
    }
    /* An expression may ignore an operand (Pow with a constant exponent becomes a * a). */
    for (int k = 0; k < nest->n_operands - 1; k++) bd_emit(e, "(void)%s;", operand_names[k]);
    bd_emit(e, "P%d[o%d] = %s;", nest->n_operands - 1, nest->n_operands - 1, store);
    for (int i = 0; i < r; i++) bd_emit_close(e, NULL);
    return BD_OK;
}

bd_status bd_emit_body_CONSTANT(bd_emitter *e, const bd_nest *nest, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_operand *out = &nest->operands[0];
    const bd_value *v = bd_graph_value(e->graph, out->value);
    int64_t off = bd_emit_blob(e, v->constant->data, (size_t)v->constant->nbytes);
    bd_emit(e, "memcpy(%s, bd_weights + %lld, %lld);", bd_emit_ptr(e, out->value), (long long)off,
            (long long)v->constant->nbytes);
    return BD_OK;
}
