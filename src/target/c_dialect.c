/* c_dialect.c — how C spells the expression ops of nest/expr.h: the table the shared expression
 * printer (target/print.c) reads for elementwise bodies and fused epilogues. The CPU target prints
 * C; the GPU targets print CUDA C, HIP and OpenCL C, which read the same table: their preludes
 * (target/gpu/dialect.c) give the few names it uses that a dialect spells differently.
 *
 * float32 math goes through the prelude's straight-line bd_exp_v / bd_tanh_v / bd_erf_v so that
 * loops of it vectorize (emit.c); float64 through libm. float16 and bfloat16 values are uint16_t
 * bit patterns, converted exactly to float by bd_h2f / bd_bf2f and rounded back to nearest even by
 * bd_f2h / bd_f2bf (from float) or bd_d2h / bd_d2bf (from anything wider, rounding once).
 * Integer arithmetic is compiled with -fwrapv (ONNX integer overflow wraps), and what C leaves
 * undefined (division by zero, INT_MIN / -1, float-to-int out of range) is guarded. */
#include "target/print.h"

const char *bd_c_type(int dtype) {
    switch (dtype) {
    case BD_DT_FLOAT: return "float";
    case BD_DT_DOUBLE: return "double";
    case BD_DT_INT8: return "int8_t";
    case BD_DT_UINT8:
    case BD_DT_BOOL: return "uint8_t";
    case BD_DT_INT16: return "int16_t";
    case BD_DT_UINT16:
    case BD_DT_FLOAT16:  /* stored as bit patterns: bodies that compute convert with bd_h2f/bd_f2h */
    case BD_DT_BFLOAT16: return "uint16_t";
    case BD_DT_INT32: return "int32_t";
    case BD_DT_UINT32: return "uint32_t";
    case BD_DT_INT64: return "int64_t";
    case BD_DT_UINT64: return "uint64_t";
    default: return NULL;
    }
}

static bool is_half(int dt) { return dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16; }

static const char *c_cast(bd_printer *p, const char *a, int from, int to) {
    if (is_half(from)) {
        a = bd_print_str(p, "%s(%s)", from == BD_DT_FLOAT16 ? "bd_h2f" : "bd_bf2f", a);
        from = BD_DT_FLOAT;
        if (to == BD_DT_FLOAT) return a;
    }
    if (to == BD_DT_BOOL) return bd_print_str(p, "%s != 0", a);
    if (is_half(to)) {
        const char *f = to == BD_DT_FLOAT16 ? "h" : "bf";
        return from == BD_DT_FLOAT ? bd_print_str(p, "bd_f2%s(%s)", f, a)
                                   : bd_print_str(p, "bd_d2%s((double)%s)", f, a);
    }
    bool from_float = from == BD_DT_FLOAT || from == BD_DT_DOUBLE;
    bool to_float = to == BD_DT_FLOAT || to == BD_DT_DOUBLE;
    bool narrow = to == BD_DT_INT8 || to == BD_DT_UINT8 || to == BD_DT_INT16 || to == BD_DT_UINT16;
    if (from == BD_DT_FLOAT && narrow) return bd_print_str(p, "bd_float_to_%s(%s)", bd_c_type(to), a);
    if (from_float && !to_float) return bd_print_str(p, "bd_f2i_%s((double)%s)", bd_c_type(to), a);
    return bd_print_str(p, "(%s)%s", bd_c_type(to), a);
}

#define ALL(t) {t, t, t, t}
#define FLOATS(f32, f64) {f32, f64, NULL, NULL}

const bd_expr_dialect bd_c_dialect = {
    .type = bd_c_type,
    .cast = c_cast,
    .tmpl = {
        [BD_EXPR_NEG] = ALL("-$0"),
        [BD_EXPR_ABS] = {"fabsf($0)", "fabs($0)", "($0 < 0 ? -$0 : $0)", "$0"},
        [BD_EXPR_NOT] = ALL("!$0"),
        [BD_EXPR_BIT_NOT] = {NULL, NULL, "~$0", "~$0"},
        [BD_EXPR_RELU] = ALL("($0 < 0 ? 0 : $0)"),
        [BD_EXPR_SQRT] = FLOATS("sqrtf($0)", "sqrt($0)"),
        [BD_EXPR_EXP] = FLOATS("bd_exp_v($0)", "exp($0)"),
        [BD_EXPR_LOG] = FLOATS("logf($0)", "log($0)"),
        [BD_EXPR_ERF] = FLOATS("bd_erf_v($0)", "erf($0)"),
        [BD_EXPR_TANH] = FLOATS("bd_tanh_v($0)", "tanh($0)"),
        [BD_EXPR_RECIPROCAL] = FLOATS("1 / $0", "1 / $0"),
        [BD_EXPR_SIGMOID] = FLOATS("1 / (1 + bd_exp_v(-$0))", "1 / (1 + exp(-$0))"),
        [BD_EXPR_LEAKY_RELU] = FLOATS("($0 < 0 ? $k0 * $0 : $0)", "($0 < 0 ? $k0 * $0 : $0)"),
        /* selects, not fminf/fmaxf: those are libm calls in a loop (GCC inlines them only
         * with -ffinite-math-only), and they would turn NaN into a bound */
        [BD_EXPR_HARD_SIGMOID] =
            FLOATS("($k0 * $0 + $k1 < 0 ? 0 : $k0 * $0 + $k1 > 1 ? 1 : $k0 * $0 + $k1)",
                   "($k0 * $0 + $k1 < 0 ? 0 : $k0 * $0 + $k1 > 1 ? 1 : $k0 * $0 + $k1)"),
        [BD_EXPR_HARD_SWISH] =
            FLOATS("$0 * ($0 * 0.166666667f + 0.5f < 0 ? 0 : $0 * 0.166666667f + 0.5f > 1 ? 1 : "
                   "$0 * 0.166666667f + 0.5f)",
                   "$0 * ($0 * 0.16666666666666666 + 0.5 < 0 ? 0 : $0 * 0.16666666666666666 + 0.5 > 1 "
                   "? 1 : $0 * 0.16666666666666666 + 0.5)"),
        [BD_EXPR_GELU] = FLOATS("0.5f * $0 * (1 + bd_erf_v($0 * 0.7071067811865476f))",
                                "0.5 * $0 * (1 + erf($0 * 0.7071067811865476))"),
        [BD_EXPR_GELU_TANH] =
            FLOATS("0.5f * $0 * (1 + bd_tanh_v(0.7978845608028654f * ($0 + 0.044715f * $0 * $0 * $0)))",
                   "0.5 * $0 * (1 + tanh(0.7978845608028654 * ($0 + 0.044715 * $0 * $0 * $0)))"),
        [BD_EXPR_SILU] = FLOATS("$0 / (1.0f + bd_exp_v(-$0))", "$0 / (1.0 + exp(-$0))"),
        [BD_EXPR_SIN] = FLOATS("sinf($0)", "sin($0)"),
        [BD_EXPR_COS] = FLOATS("cosf($0)", "cos($0)"),
        [BD_EXPR_TAN] = FLOATS("tanf($0)", "tan($0)"),
        [BD_EXPR_ASIN] = FLOATS("asinf($0)", "asin($0)"),
        [BD_EXPR_ACOS] = FLOATS("acosf($0)", "acos($0)"),
        [BD_EXPR_ATAN] = FLOATS("atanf($0)", "atan($0)"),
        [BD_EXPR_SINH] = FLOATS("sinhf($0)", "sinh($0)"),
        [BD_EXPR_COSH] = FLOATS("coshf($0)", "cosh($0)"),
        [BD_EXPR_ASINH] = FLOATS("asinhf($0)", "asinh($0)"),
        [BD_EXPR_ACOSH] = FLOATS("acoshf($0)", "acosh($0)"),
        [BD_EXPR_ATANH] = FLOATS("atanhf($0)", "atanh($0)"),
        [BD_EXPR_CEIL] = FLOATS("ceilf($0)", "ceil($0)"),
        [BD_EXPR_FLOOR] = FLOATS("floorf($0)", "floor($0)"),
        /* nearbyint rounds in the current mode, which is C's default, to nearest even */
        [BD_EXPR_ROUND] = FLOATS("nearbyintf($0)", "nearbyint($0)"),
        [BD_EXPR_SIGN] = {"($0 > 0 ? 1.0f : $0 < 0 ? -1.0f : $0)",
                          "($0 > 0 ? 1.0 : $0 < 0 ? -1.0 : $0)", "($0 > 0 ? 1 : $0 < 0 ? -1 : 0)",
                          "($0 > 0 ? 1 : 0)"},
        /* classed by their bool result: the argument is a float or double */
        [BD_EXPR_ISNAN] = {NULL, NULL, NULL, "isnan($0)"},
        [BD_EXPR_SOFTPLUS] = FLOATS("($0 > 0 ? $0 + log1pf(expf(-$0)) : log1pf(expf($0)))",
                                    "($0 > 0 ? $0 + log1p(exp(-$0)) : log1p(exp($0)))"),
        [BD_EXPR_SOFTSIGN] = FLOATS("$0 / (1 + fabsf($0))", "$0 / (1 + fabs($0))"),
        [BD_EXPR_MISH] = FLOATS("$0 * tanhf($0 > 0 ? $0 + log1pf(expf(-$0)) : log1pf(expf($0)))",
                                "$0 * tanh($0 > 0 ? $0 + log1p(exp(-$0)) : log1p(exp($0)))"),
        [BD_EXPR_ELU] = FLOATS("($0 < 0 ? $k0 * expm1f($0) : $0)",
                               "($0 < 0 ? $k0 * expm1($0) : $0)"),
        [BD_EXPR_SELU] = FLOATS("$k1 * ($0 <= 0 ? $k0 * expm1f($0) : $0)",
                                "$k1 * ($0 <= 0 ? $k0 * expm1($0) : $0)"),
        [BD_EXPR_CELU] = FLOATS("fmaxf(0, $0) + fminf(0, $k0 * expm1f($0 / $k0))",
                                "fmax(0, $0) + fmin(0, $k0 * expm1($0 / $k0))"),
        [BD_EXPR_THRESHOLDED_RELU] = FLOATS("($0 > $k0 ? $0 : 0)", "($0 > $k0 ? $0 : 0)"),
        [BD_EXPR_SHRINK] = FLOATS("($0 < -$k0 ? $0 + $k1 : $0 > $k0 ? $0 - $k1 : 0)",
                                  "($0 < -$k0 ? $0 + $k1 : $0 > $k0 ? $0 - $k1 : 0)"),
        [BD_EXPR_ADD] = ALL("$0 + $1"),
        [BD_EXPR_SUB] = ALL("$0 - $1"),
        [BD_EXPR_MUL] = ALL("$0 * $1"),
        [BD_EXPR_DIV] = {"$0 / $1", "$0 / $1", "($1 == 0 ? 0 : $1 == -1 ? -$0 : $0 / $1)",
                         "($1 == 0 ? 0 : $0 / $1)"},
        [BD_EXPR_POW] = {"powf($0, $1)", "pow($0, $1)", "bd_f2i_$T(pow((double)$0, (double)$1))",
                         "bd_f2i_$T(pow((double)$0, (double)$1))"},
        [BD_EXPR_EQUAL] = ALL("$0 == $1"),
        [BD_EXPR_LESS] = ALL("$0 < $1"),
        [BD_EXPR_GREATER] = ALL("$0 > $1"),
        [BD_EXPR_AND] = ALL("$0 && $1"),
        [BD_EXPR_OR] = ALL("$0 || $1"),
        [BD_EXPR_BIT_AND] = {NULL, NULL, "$0 & $1", "$0 & $1"},
        [BD_EXPR_BIT_OR] = {NULL, NULL, "$0 | $1", "$0 | $1"},
        [BD_EXPR_BIT_XOR] = {NULL, NULL, "$0 ^ $1", "$0 ^ $1"},
        [BD_EXPR_XOR] = ALL("$0 != $1"),
        /* classed by their bool result; C compares any two arithmetic values alike */
        [BD_EXPR_GREATER_EQUAL] = ALL("$0 >= $1"),
        [BD_EXPR_LESS_EQUAL] = ALL("$0 <= $1"),
        [BD_EXPR_PRELU] = ALL("($0 < 0 ? $1 * $0 : $0)"),
        [BD_EXPR_FMOD] = {"fmodf($0, $1)", "fmod($0, $1)", "($1 == 0 || $1 == -1 ? 0 : $0 % $1)",
                          "($1 == 0 ? 0 : $0 % $1)"},
        [BD_EXPR_MOD] = {"(fmodf($0, $1) != 0 && (fmodf($0, $1) < 0) != ($1 < 0) ? "
                         "fmodf($0, $1) + $1 : fmodf($0, $1))",
                         "(fmod($0, $1) != 0 && (fmod($0, $1) < 0) != ($1 < 0) ? fmod($0, $1) + $1 "
                         ": fmod($0, $1))",
                         "($1 == 0 || $1 == -1 ? 0 : $0 % $1 != 0 && ($0 % $1 < 0) != ($1 < 0) ? "
                         "$0 % $1 + $1 : $0 % $1)",
                         "($1 == 0 ? 0 : $0 % $1)"},
        /* a shift by the width or more is undefined in C, and ONNX's reference gives 0 */
        [BD_EXPR_SHIFT_LEFT] = {NULL, NULL, NULL,
                                "((uint64_t)$1 >= 8 * sizeof($T) ? 0 : ($T)((uint64_t)$0 << $1))"},
        [BD_EXPR_SHIFT_RIGHT] = {NULL, NULL, NULL,
                                 "((uint64_t)$1 >= 8 * sizeof($T) ? 0 : ($T)($0 >> $1))"},
        [BD_EXPR_MIN] = {"bd_pickf($0, $1, $1 < $0)", "bd_pick($0, $1, $1 < $0)", "($1 < $0 ? $1 : $0)",
                         "($1 < $0 ? $1 : $0)"},
        [BD_EXPR_MAX] = {"bd_pickf($0, $1, $1 > $0)", "bd_pick($0, $1, $1 > $0)", "($1 > $0 ? $1 : $0)",
                         "($1 > $0 ? $1 : $0)"},
        [BD_EXPR_CLAMP_MIN] = ALL("($0 < $1 ? $1 : $0)"),
        [BD_EXPR_CLAMP_MAX] = ALL("($0 > $1 ? $1 : $0)"),
        [BD_EXPR_SELECT] = ALL("$0 ? $1 : $2"),
        [BD_EXPR_SATURATE] = FLOATS("bd_satf($0, $k0, $k1)", "bd_sat($0, $k0, $k1)"),
    },
};
