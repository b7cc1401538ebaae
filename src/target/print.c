/* print.c — the shared printing layer of print.h: text, safe comments and literals, and the
 * expression translator every dialect uses. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/print.h"
#include "nest/loopnest.h"

static void text_append(bd_printer *p, const char *s, size_t n) { bd_vec_append(&p->text, s, n); }

static void print_line(bd_printer *p, const char *fmt, va_list ap, const char *suffix) {
    char stack[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(stack, sizeof stack, fmt, ap);
    char *buf = stack;
    if (n >= (int)sizeof stack) {
        buf = malloc((size_t)n + 1);
        BD_ASSERT(buf);
        vsnprintf(buf, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    for (int i = 0; i < p->indent; i++)
        text_append(p, "    ", 4);
    text_append(p, buf, (size_t)n);
    if (suffix) text_append(p, suffix, strlen(suffix));
    text_append(p, "\n", 1);
    if (buf != stack) free(buf);
}

void bd_print_line(bd_printer *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_line(p, fmt, ap, NULL);
    va_end(ap);
}

void bd_print_blank(bd_printer *p) {
    text_append(p, "\n", 1);
}

void bd_print_open(bd_printer *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_line(p, fmt, ap, " {");
    va_end(ap);
    p->indent++;
}

void bd_print_close(bd_printer *p, const char *suffix) {
    p->indent--;
    bd_print_line(p, "}%s", suffix ? suffix : "");
}

const char *bd_print_str(bd_printer *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = bd_arena_alloc(&p->scratch, (size_t)n + 1);
    BD_ASSERT(s);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* Only printable ASCII survives; the comment terminator, backslashes (line splices), '?'
 * (trigraphs) and everything else become '_' or are escaped. Long strings are cut. */
void bd_print_comment(bd_printer *p, const char *prefix, const char *untrusted) {
    char buf[200];
    size_t o = 0;
    const char *s = untrusted ? untrusted : "";
    for (; *s && o < 120; s++) {
        unsigned char c = (unsigned char)*s;
        bool plain = c >= 0x20 && c < 0x7f && c != '\\' && c != '?' && c != '*' && c != '/';
        buf[o++] = plain ? (char)c : '_';
    }
    if (*s) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = 0;
    bd_print_line(p, "/* %s%s */", prefix, buf);
}

const char *bd_print_string_literal(bd_printer *p, const char *s) {
    size_t n = strlen(s);
    char *out = bd_arena_alloc(&p->scratch, n * 4 + 3);
    BD_ASSERT(out);
    size_t o = 0;
    out[o++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '_' || c == ' ' || c == '.' || c == '-';
        if (plain)
            out[o++] = (char)c;
        else
            o += (size_t)sprintf(out + o, "\\%03o", c);
    }
    out[o++] = '"';
    out[o] = 0;
    return out;
}

const char *bd_print_float(bd_printer *p, double x, int dtype) {
    bool f32 = dtype != BD_DT_DOUBLE;
    if (x != x) return f32 ? "NAN" : "(double)NAN";
    if (isinf(x)) return x > 0 ? "INFINITY" : "(-INFINITY)";
    const char *s = bd_print_str(p, f32 ? "%.9g" : "%.17g", x);
    bool plain = !strpbrk(s, ".e");
    return bd_print_str(p, "%s%s%s", s, plain ? ".0" : "", f32 ? "f" : "");
}

void bd_printer_free(bd_printer *p) {
    bd_vec_free(&p->text);
    bd_arena_free(&p->scratch);
}

/* ---------------------------------------------------------------- expressions */

/* A name, a number, a call, or wrapped in one pair of parentheses: safe as an operand. */
static bool is_primary(const char *s) {
    size_t n = strlen(s), i = 0;
    if (!n) return false;
    while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.'))
        i++;
    if (i == n) return true;
    if (s[i] != '(' || s[n - 1] != ')') return false;
    int depth = 0;
    for (size_t j = i; j < n; j++) {
        depth += s[j] == '(' ? 1 : s[j] == ')' ? -1 : 0;
        if (depth == 0 && j != n - 1) return false; /* "(a) + (b)" */
    }
    return true;
}

static const char *primary(bd_printer *p, const char *s) {
    return is_primary(s) ? s : bd_print_str(p, "(%s)", s);
}

static int dtype_class(int dt) {
    if (dt == BD_DT_FLOAT || dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16) return BD_CLASS_F32;
    if (dt == BD_DT_DOUBLE) return BD_CLASS_F64;
    return bd_dtype_is_signed(dt) ? BD_CLASS_SIGNED : BD_CLASS_UNSIGNED;
}

/* An integer constant held as a double: C's conversion of one outside long long's range is
 * undefined, so the values past it are spelled apart (2^63 and up unsigned, saturating at
 * 2^64 - 1; the least long long as an expression, since its digits alone overflow). */
static const char *int_literal(bd_printer *p, double k) {
    if (k != k) return "0";
    if (k >= 18446744073709551616.0) return "18446744073709551615u";
    if (k >= 9223372036854775808.0) return bd_print_str(p, "%lluu", (unsigned long long)k);
    if (k <= -9223372036854775808.0) return "(-9223372036854775807 - 1)";
    return bd_print_str(p, "%lld", (long long)k);
}

/* Substitutes a template: $0..$2 arguments, $k0/$k1 constants, $T the node's type. */
static const char *fill(bd_printer *p, const bd_expr_dialect *d, const char *t,
                        const bd_expr_node *e, const char *const *args) {
    bd_vec out = BD_VEC(char);
    for (const char *c = t; *c; c++) {
        const char *piece = NULL;
        char one[2] = {*c, 0};
        if (c[0] == '$' && c[1] >= '0' && c[1] <= '2') {
            piece = args[c[1] - '0'];
            c++;
        } else if (c[0] == '$' && c[1] == 'k' && (c[2] == '0' || c[2] == '1')) {
            piece = bd_print_float(p, e->k[c[2] - '0'], e->dtype);
            c += 2;
        } else if (c[0] == '$' && c[1] == 'T') {
            piece = d->type(e->dtype);
            c++;
        } else {
            piece = one;
        }
        for (const char *q = piece; *q; q++)
            *(char *)bd_vec_push(&out) = *q;
    }
    *(char *)bd_vec_push(&out) = 0;
    const char *s = bd_print_str(p, "%s", (const char *)out.data);
    bd_vec_free(&out);
    return s;
}

const char *bd_print_expr(bd_printer *p, const bd_expr_dialect *d, const bd_expr *x,
                          const char *const *loads) {
    BD_ASSERT(x->n > 0 && x->n <= BD_EXPR_MAX_NODES);
    const char *val[BD_EXPR_MAX_NODES];
    for (int i = 0; i < x->n; i++) {
        const bd_expr_node *e = &x->node[i];
        const char *args[3] = {"", "", ""};
        for (int a = 0; a < bd_expr_arity(e->op); a++)
            args[a] = primary(p, val[e->arg[a]]);
        if (e->op == BD_EXPR_LOAD) {
            val[i] = loads[e->operand];
        } else if (e->op == BD_EXPR_CONST) {
            val[i] = bd_dtype_is_float(e->dtype) ? bd_print_float(p, e->k[0], e->dtype)
                                                 : int_literal(p, e->k[0]);
        } else if (e->op == BD_EXPR_LOOKUP) { /* int8 a is at a + 128: the table runs -128..127 */
            bool is_signed = x->node[e->arg[0]].dtype == BD_DT_INT8;
            val[i] = bd_print_str(p, is_signed ? "%s[(int)%s + 128]" : "%s[%s]", loads[e->operand],
                                  args[0]);
        } else if (e->op == BD_EXPR_CAST) {
            val[i] = d->cast(p, args[0], x->node[e->arg[0]].dtype, e->dtype);
        } else {
            /* comparisons and And are classed by their arguments, the rest by their result */
            bool by_args = e->op == BD_EXPR_EQUAL || e->op == BD_EXPR_LESS ||
                           e->op == BD_EXPR_GREATER || e->op == BD_EXPR_AND;
            int cls = dtype_class(by_args ? x->node[e->arg[0]].dtype : e->dtype);
            const char *t = d->tmpl[e->op][cls];
            BD_ASSERT(t); /* lowering only builds what the dialects spell */
            val[i] = fill(p, d, t, e, args);
        }
    }
    return val[x->n - 1];
}

/* ---------------------------------------------------------------- shared printed code */

void bd_print_block_decode(bd_printer *p, const bd_nest *n) {
    int r = n->n_iter ? n->n_iter : 1;
    bd_print_line(p, "int64_t lo[%d], hi[%d];", r, r);
    if (!n->n_iter) bd_print_line(p, "lo[0] = 0; hi[0] = 1;");
    for (int k = n->n_iter - 1; k >= 0; k--) {
        bd_print_line(p, "lo[%d] = (block %% %lld) * %lld; hi[%d] = lo[%d] + %lld < %lld ? lo[%d] + %lld : %lld;", k,
                      (long long)n->grid[k], (long long)n->tile[k], k, k, (long long)n->tile[k],
                      (long long)n->extent[k], k, (long long)n->tile[k], (long long)n->extent[k]);
        if (k) bd_print_line(p, "block /= %lld;", (long long)n->grid[k]);
    }
    /* A read, not a (void) cast: nvcc warns of a set but unused hi when every dim is whole. */
    bd_print_line(p, "(void)(lo[0] + hi[0]);");
}

/* The scalar helpers. float16 / bfloat16, stored as uint16_t bit patterns. To float, exactly: bd_h2f, bd_bf2f. From
 * float, to nearest even, overflowing to infinity, subnormals kept, NaN kept NaN (quiet, top payload
 * bits): bd_f2h, bd_f2bf. These are F. Giesen's float/half conversions with every case computed
 * and picked by bit masks, no branch or ?: on the value, so that loops of them vectorize (GCC does
 * not if-convert a float operation under -ftrapping-math); the subnormal cases go through one exact
 * float addition / subtraction, which the default rounding mode rounds to nearest even. From a
 * double, rounded once (double -> float -> half would round twice): bd_d2small(x, mantissa bits,
 * exponent bits), named bd_d2h and bd_d2bf. */
static void print_half_helpers(bd_printer *p, const char *fn, bool ul) {
    static const char *const lines[] = {
        "%s uint32_t bd_mask(int c) { return (uint32_t)0 - (uint32_t)c; }",
        "%s float bd_h2f(uint16_t h) {",
        "    const uint32_t m = (uint32_t)(h & 0x7fffu) << 13, x = m & 0x0f800000u, z = bd_mask(x == 0);",
        "    const uint32_t sub = bd_f2u(bd_u2f(m + (113u << 23)) - 0x1p-14f); /* exact: 0, subnormals */",
        "    const uint32_t nrm = m + (112u << 23) + (bd_mask(x == 0x0f800000u) & (112u << 23));",
        "    return bd_u2f((uint32_t)(h & 0x8000u) << 16 | (sub & z) | (nrm & ~z));",
        "}",
        "%s uint16_t bd_f2h(float f) {",
        "    const uint32_t s = bd_f2u(f) & 0x80000000u, a = bd_f2u(f) ^ s;",
        "    const uint32_t sub = bd_f2u(bd_u2f(a) + 0.5f) - 0x3f000000u; /* below 2^-14 */",
        "    const uint32_t nrm = (a + 0xc8000fffu + ((a >> 13) & 1)) >> 13; /* rebias, round */",
        "    const uint32_t big = 0x7c00u | (bd_mask(a > 0x7f800000u) & (0x200u | ((a >> 13) & 0x3ffu)));",
        "    const uint32_t mb = bd_mask(a >= 0x47800000u), ms = bd_mask(a < 0x38800000u);",
        "    return (uint16_t)((s >> 16) | (big & mb) | (sub & ms) | (nrm & ~(mb | ms)));",
        "}",
        "%s float bd_bf2f(uint16_t h) { return bd_u2f((uint32_t)h << 16); }",
        "%s uint16_t bd_f2bf(float f) {",
        "    const uint32_t u = bd_f2u(f), nan = bd_mask((u & 0x7fffffffu) > 0x7f800000u);",
        "    const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;",
        "    return (uint16_t)((nan & ((u >> 16) | 0x40u)) | (~nan & r));",
        "}",
        "%s uint16_t bd_d2small(double v, int mbits, int ebits) {",
        "    const uint64_t u = bd_d2u(v);",
        "    const uint64_t a = u & 0x7fffffffffffffffull, inf = ((1ull << ebits) - 1) << mbits;",
        "    const uint16_t s = (uint16_t)((u >> 63) << (mbits + ebits));",
        "    if (a > 0x7ff0000000000000ull)",
        "        return (uint16_t)(s | inf | 1ull << (mbits - 1) | ((a >> (52 - mbits)) & ((1ull << mbits) - 1)));",
        "    const int bias = (1 << (ebits - 1)) - 1, x = (int)(a >> 52) - 1023, sub = x < 1 - bias;",
        "    const uint64_t m = (a & 0xfffffffffffffull) | (uint64_t)(a >> 52 != 0) << 52;",
        "    const int shift = (sub ? 1 - bias - mbits : x - mbits) - (x - 52);",
        "    uint64_t q = 0;",
        "    if (shift < 54) {",
        "        const uint64_t rem = m & ((1ull << shift) - 1), mid = 1ull << (shift - 1);",
        "        q = m >> shift;",
        "        q += rem > mid || (rem == mid && (q & 1));",
        "    }",
        "    const uint64_t bits = sub ? q : ((uint64_t)(x + bias) << mbits) + q - (1ull << mbits);",
        "    return (uint16_t)(s | (bits < inf ? bits : inf));",
        "}",
        "%s uint16_t bd_d2h(double v) { return bd_d2small(v, 10, 5); }",
        "%s uint16_t bd_d2bf(double v) { return bd_d2small(v, 7, 8); }",
    };
    for (size_t i = 0; i < BD_COUNT(lines); i++) {
        /* OpenCL C has no long long: its 64-bit literals are `ul` */
        const char *l = bd_print_str(p, lines[i], fn);
        if (!ul) {
            bd_print_line(p, "%s", l);
            continue;
        }
        char *c = (char *)bd_print_str(p, "%s", l), *q;
        while ((q = strstr(c, "ull")) != NULL) memmove(q + 1, q + 2, strlen(q + 2) + 1);
        bd_print_line(p, "%s", c);
    }
}

/* Float-to-integer conversion without C's undefined behaviour (NaN -> 0, saturating), and
 * NaN-propagating selection for Min/Max; then the float16/bfloat16 conversions. The conversion
 * clamps by selects of values, not branches of returns, so that loops around it vectorize (a
 * DynamicQuantizeLinear ran 8x faster); types narrower than 32 bits convert through int32_t.
 * The selects are written as x > lo ? x : lo and x < hi ? x : hi, which are exactly the vector
 * max and min instructions (the second operand when unordered), so that an unsigned type's lower
 * bound 0 also takes NaN to 0 and needs no test of its own: a QuantizeLinear loop 1.4x faster. */
void bd_print_scalar_helpers(bd_printer *p, const char *fn, bool opencl) {
    static const struct { const char *type, *lo, *hi, *via; } ints[] = {
        {"int8_t", "-128.0", "127.0", "(int32_t)"}, {"uint8_t", "0.0", "255.0", "(int32_t)"},
        {"int16_t", "-32768.0", "32767.0", "(int32_t)"}, {"uint16_t", "0.0", "65535.0", "(int32_t)"},
        {"int32_t", "-2147483648.0", "2147483647.0", ""}, {"uint32_t", "0.0", "4294967295.0", ""},
        {"int64_t", "-9223372036854775808.0", "9223372036854774784.0", ""},
        {"uint64_t", "0.0", "18446744073709549568.0", ""}};
    for (size_t i = 0; i < BD_COUNT(ints); i++) {
        const char *nan = *ints[i].lo == '-' ? "x = x != x ? 0.0 : x; " : "";
        bd_print_line(p, "%s %s bd_f2i_%s(double x) { %sx = x > %s ? x : %s; "
                         "x = x < %s ? x : %s; return (%s)%sx; }",
                      fn, ints[i].type, ints[i].type, nan, ints[i].lo, ints[i].lo, ints[i].hi,
                      ints[i].hi, ints[i].type, ints[i].via);
    }
    /* the same from float for the narrow types, whose bounds float holds exactly (twice the
     * lanes; c_dialect.c calls them for float sources) */
    for (size_t i = 0; i < BD_COUNT(ints); i++)
        if (*ints[i].via)
            bd_print_line(p, "%s %s bd_float_to_%s(float x) { %sx = x > %sf ? x : %sf; "
                             "x = x < %sf ? x : %sf; return (%s)%sx; }",
                          fn, ints[i].type, ints[i].type,
                          *ints[i].lo == '-' ? "x = x != x ? 0.0f : x; " : "", ints[i].lo,
                          ints[i].lo, ints[i].hi, ints[i].hi, ints[i].type, ints[i].via);
    /* SATURATE: the same clamps, then + 0 (-0 to +0), without the conversion */
    bd_print_line(p, "%s float bd_satf(float x, float lo, float hi) { x = x != x ? 0.0f : x; "
                     "x = x > lo ? x : lo; x = x < hi ? x : hi; return x + 0.0f; }", fn);
    bd_print_line(p, "%s double bd_sat(double x, double lo, double hi) { x = x != x ? 0.0 : x; "
                     "x = x > lo ? x : lo; x = x < hi ? x : hi; return x + 0.0; }", fn);
    bd_print_line(p, "%s float bd_pickf(float cur, float cand, int take) "
                     "{ return cur != cur ? cur : cand != cand ? cand : take ? cand : cur; }", fn);
    bd_print_line(p, "%s double bd_pick(double cur, double cand, int take) "
                     "{ return cur != cur ? cur : cand != cand ? cand : take ? cand : cur; }", fn);
    print_half_helpers(p, fn, opencl);
}

/* ---------------------------------------------------------------- recurrent activations */

static const char *rnn_act_expr(bd_printer *p, const bd_rnn_act *a, const char *v) {
    const char *al = bd_print_float(p, a->alpha, BD_DT_FLOAT);
    const char *be = bd_print_float(p, a->beta, BD_DT_FLOAT);
    switch (a->fn) {
    case BD_RNN_SIGMOID: return bd_print_str(p, "(1.0f / (1.0f + expf(-%s)))", v);
    case BD_RNN_TANH: return bd_print_str(p, "tanhf(%s)", v);
    case BD_RNN_RELU: return bd_print_str(p, "(%s > 0 ? %s : 0.0f)", v, v);
    case BD_RNN_AFFINE: return bd_print_str(p, "(%s * %s + %s)", al, v, be);
    case BD_RNN_LEAKY_RELU: return bd_print_str(p, "(%s >= 0 ? %s : %s * %s)", v, v, al, v);
    case BD_RNN_THRESHOLDED_RELU: return bd_print_str(p, "(%s > %s ? %s : 0.0f)", v, al, v);
    case BD_RNN_SCALED_TANH: return bd_print_str(p, "(%s * tanhf(%s * %s))", al, be, v);
    case BD_RNN_HARD_SIGMOID: return bd_print_str(p, "fmaxf(0.0f, fminf(1.0f, %s * %s + %s))", al, v, be);
    case BD_RNN_ELU: return bd_print_str(p, "(%s >= 0 ? %s : %s * (expf(%s) - 1.0f))", v, v, al, v);
    case BD_RNN_SOFTSIGN: return bd_print_str(p, "(%s / (1.0f + fabsf(%s)))", v, v);
    default: return bd_print_str(p, "log1pf(expf(%s))", v);
    }
}

/* `const float out = act(in);`. Sigmoid and Tanh (the defaults, where LSTM spends its time) use
 * a branch-free rational approximation of tanh (Eigen's, accurate to a few ulp on [-7.9, 7.9],
 * where tanh saturates in float) instead of libm's expf/tanhf; sigmoid(x) = 0.5 + 0.5 tanh(x/2). */
void bd_print_rnn_act(bd_printer *p, const bd_rnn_act *a, const char *in, const char *out) {
    if (a->fn != BD_RNN_SIGMOID && a->fn != BD_RNN_TANH) {
        bd_print_line(p, "const float %s = %s;", out, rnn_act_expr(p, a, in));
        return;
    }
    bool sig = a->fn == BD_RNN_SIGMOID;
    bd_print_line(p, "const float %s_i = %s%s;", out, sig ? "0.5f * " : "", in);
    bd_print_line(p, "const float %s_x = %s_i < -" BD_TANH_CLAMP " ? -" BD_TANH_CLAMP " : %s_i > " BD_TANH_CLAMP
                     " ? " BD_TANH_CLAMP " : %s_i;",
            out, out, out, out);
    bd_print_line(p, "const float %s_x2 = %s_x * %s_x;", out, out, out);
    bd_print_line(p, "const float %s_p = %s_x * " BD_TANH_P("%s_x2") ";", out, out, out, out, out, out,
                  out, out);
    bd_print_line(p, "const float %s_q = " BD_TANH_Q("%s_x2") ";", out, out, out, out);
    if (sig) bd_print_line(p, "const float %s = 0.5f + 0.5f * (%s_p / %s_q);", out, out, out);
    else bd_print_line(p, "const float %s = %s_p / %s_q;", out, out, out);
}

/* ---------------------------------------------------------------- scatter (push) */

void bd_print_scatter_index(bd_printer *p, const char *idx, int64_t extent) {
    bd_print_line(p, "c = (int64_t)%s;", idx);
    bd_print_line(p, "if (c < 0) c += %lld;", (long long)extent);
    bd_print_line(p, "if (c < 0 || c >= %lld) continue;", (long long)extent);
}

/* ---------------------------------------------------------------- RoiAlign */

/* The samples per bin along one dim: the sampling_ratio, or ceil(bin) capped (0 for an empty or
 * NaN bin, which onnxruntime samples no more than that). */
static void roi_grid(bd_printer *p, const bd_roi_align_params *ra, int dt, const char *name,
                     const char *bin) {
    if (ra->ratio > 0) {
        bd_print_line(p, "const int64_t %s = %lld;", name, (long long)ra->ratio);
        return;
    }
    bd_print_line(p, "const %s %s_c = %s(%s);", bd_c_type(dt), name,
                  dt == BD_DT_DOUBLE ? "ceil" : "ceilf", bin);
    bd_print_line(p, "const int64_t %s = %s_c >= %s ? (%s_c < %s ? (int64_t)%s_c : 1000000000) "
                     ": 0;",
                  name, name, bd_print_float(p, 1, dt), name, bd_print_float(p, 1e9, dt), name);
}

void bd_print_roi_align_box(bd_printer *p, bd_graph *g, const bd_nest *n, const char *rois,
                            const char *batch) {
    const bd_roi_align_params *ra = BD_NEST_PARAMS(n, roi_align);
    const bd_value *x = bd_graph_value(g, n->operands[0].value);
    const bd_value *y = bd_graph_value(g, n->operands[3].value);
    int dt = x->dtype;
    const char *T = bd_c_type(dt), *sc = bd_print_float(p, ra->scale, dt);
    const char *off = bd_print_float(p, ra->offset, dt), *one = bd_print_float(p, 1, dt);
    bd_print_line(p, "int64_t ra_n = (int64_t)(%s);", batch);
    bd_print_line(p, "ra_n = ra_n < 0 ? 0 : ra_n > %lld ? %lld : ra_n;", (long long)x->dims[0] - 1,
                  (long long)x->dims[0] - 1);
    /* columns x1, y1, x2, y2 */
    bd_print_line(p, "const %s ra_x0 = (%s)[0] * %s - %s, ra_y0 = (%s)[1] * %s - %s;", T, rois, sc,
                  off, rois, sc, off);
    bd_print_line(p, "%s ra_w = (%s)[2] * %s - %s - ra_x0, ra_h = (%s)[3] * %s - %s - ra_y0;", T,
                  rois, sc, off, rois, sc, off);
    if (ra->at_least_one) {
        bd_print_line(p, "ra_w = ra_w < %s ? %s : ra_w;", one, one);
        bd_print_line(p, "ra_h = ra_h < %s ? %s : ra_h;", one, one);
    }
    bd_print_line(p, "const %s ra_bh = ra_h / %s, ra_bw = ra_w / %s;", T,
                  bd_print_float(p, (double)y->dims[2], dt),
                  bd_print_float(p, (double)y->dims[3], dt));
    roi_grid(p, ra, dt, "ra_gh", "ra_bh");
    roi_grid(p, ra, dt, "ra_gw", "ra_bw");
}

/* One dim of a sample at coordinate c (extent D): its low and high rows and the weight of the
 * high one; c is inside [-1, D] (the caller checked), clamped into [0, D - 1]. */
static void roi_taps(bd_printer *p, const char *T, const char *c, int64_t D, int dt) {
    bd_print_line(p, "%s %s_c = %s <= %s ? %s : %s;", T, c, c, bd_print_float(p, 0, dt),
                  bd_print_float(p, 0, dt), c);
    bd_print_line(p, "int64_t %s_lo = (int64_t)%s_c, %s_hi = %s_lo + 1;", c, c, c, c);
    bd_print_line(p, "if (%s_lo >= %lld) { %s_lo = %s_hi = %lld; %s_c = (%s)%s_lo; }", c,
                  (long long)D - 1, c, c, (long long)D - 1, c, T, c);
    bd_print_line(p, "const %s %s_l = %s_c - (%s)%s_lo, %s_h = %s - %s_l;", T, c, c, T, c, c,
                  bd_print_float(p, 1, dt), c);
}

void bd_print_roi_align_value(bd_printer *p, bd_graph *g, const bd_nest *n, const char *x,
                              const char *plane, const char *ph, const char *pw, const char *out) {
    const bd_roi_align_params *ra = BD_NEST_PARAMS(n, roi_align);
    const bd_value *xv = bd_graph_value(g, n->operands[0].value);
    int dt = xv->dtype;
    int64_t H = xv->dims[2], W = xv->dims[3];
    const char *T = bd_c_type(dt), *zero = bd_print_float(p, 0, dt);
    const char *half = bd_print_float(p, 0.5, dt);
    bd_print_line(p, "%s %s = %s;", T, out, zero);
    bd_print_open(p, "for (int64_t ra_iy = 0; ra_iy < ra_gh; ra_iy++)");
    bd_print_line(p, "const %s sy = ra_y0 + (%s)%s * ra_bh + ((%s)ra_iy + %s) * ra_bh / (%s)ra_gh;",
                  T, T, ph, T, half, T);
    bd_print_open(p, "for (int64_t ra_ix = 0; ra_ix < ra_gw; ra_ix++)");
    bd_print_line(p, "const %s sx = ra_x0 + (%s)%s * ra_bw + ((%s)ra_ix + %s) * ra_bw / (%s)ra_gw;",
                  T, T, pw, T, half, T);
    /* a sample outside [-1, extent] (or NaN) weighs 0 */
    bd_print_line(p, "%s v = %s;", T, zero);
    bd_print_open(p, "if (sy >= %s && sy <= %s && sx >= %s && sx <= %s)", bd_print_float(p, -1, dt),
                  bd_print_float(p, (double)H, dt), bd_print_float(p, -1, dt),
                  bd_print_float(p, (double)W, dt));
    roi_taps(p, T, "sy", H, dt);
    roi_taps(p, T, "sx", W, dt);
    /* onnxruntime's corner order and weights: (lo, lo), (lo, hi), (hi, lo), (hi, hi) */
    const char *corner[4][2] = {{"lo", "lo"}, {"lo", "hi"}, {"hi", "lo"}, {"hi", "hi"}};
    const char *wy[2] = {"sy_h", "sy_l"}, *wx[2] = {"sx_h", "sx_l"};
    for (int k = 0; k < 4; k++)
        bd_print_line(p, "const %s t%d = %s * %s * %s[%s + sy_%s * %lld + sx_%s];", T, k,
                      wy[k / 2], wx[k % 2], x, plane, corner[k][0], (long long)W, corner[k][1]);
    if (ra->is_max) /* the largest weighted corner, std::max's way */
        bd_print_line(p, "v = t0 < t1 ? t1 : t0; v = v < t2 ? t2 : v; v = v < t3 ? t3 : v;");
    else
        bd_print_line(p, "v = t0 + t1 + t2 + t3;");
    bd_print_close(p, NULL);
    if (ra->is_max) /* the first sample, then the largest */
        bd_print_line(p, "%s = (ra_iy == 0 && ra_ix == 0) || %s < v ? v : %s;", out, out, out);
    else
        bd_print_line(p, "%s += v;", out);
    bd_print_close(p, NULL);
    bd_print_close(p, NULL);
    if (!ra->is_max)
        bd_print_line(p, "%s /= (%s)(ra_gh * ra_gw > 1 ? ra_gh * ra_gw : 1);", out, T);
}

/* ---------------------------------------------------------------- folded parameters */

unsigned char *bd_batchnorm_factors(const bd_tensor *scale, const bd_tensor *bias, const bd_tensor *mean,
                                    const bd_tensor *var, double epsilon, int64_t params, int dtype,
                                    size_t *bytes) {
    size_t es = dtype == BD_DT_FLOAT ? 4 : 8;
    unsigned char *buf = malloc((size_t)(2 * params) * es + 1);
    BD_ASSERT(buf);
    for (int64_t i = 0; i < params; i++) {
        double a = bd_tensor_get_f64(scale, i) / sqrt(bd_tensor_get_f64(var, i) + epsilon);
        double b = bd_tensor_get_f64(bias, i) - bd_tensor_get_f64(mean, i) * a;
        if (es == 4) {
            float fa = (float)a, fb = (float)b;
            memcpy(buf + (size_t)i * 4, &fa, 4);
            memcpy(buf + (size_t)(params + i) * 4, &fb, 4);
        } else {
            memcpy(buf + (size_t)i * 8, &a, 8);
            memcpy(buf + (size_t)(params + i) * 8, &b, 8);
        }
    }
    *bytes = (size_t)(2 * params) * es;
    return buf;
}

/* ---------------------------------------------------------------- --lib */

char *bd_print_lib_header(bd_graph *g, const char *name, const char *link, bool gpu) {
    bd_vec t = BD_VEC(char);
    char line[512];
#define H(...)                                                                                     \
    do {                                                                                           \
        int n_ = snprintf(line, sizeof line, __VA_ARGS__);                                          \
        for (int i_ = 0; i_ < n_ && i_ < (int)sizeof line - 1; i_++) *(char *)bd_vec_push(&t) = line[i_]; \
    } while (0)
    H("/* %s.h - generated by bdc %s. Inference for one ONNX model; link with lib%s.a, %s. */\n", name, BDC_VERSION, name, link);
    H("#ifndef %s_H\n#define %s_H\n\n#include <stdint.h>\n\n", name, name);
    H("#define %s_NUM_INPUTS %zu\n#define %s_NUM_OUTPUTS %zu\n\n", name, g->inputs.len, name, g->outputs.len);
    H("/* One tensor the model reads or writes; dtype is the ONNX TensorProto.DataType code. */\n");
    H("typedef struct %s_io {\n    const char *name;\n    int dtype;\n    int rank;\n    int64_t dims[12];\n} %s_io;\n\n", name, name);
    H("/* Input and output descriptors, in graph order. */\nextern const %s_io %s_inputs[];\nextern const %s_io %s_outputs[];\n\n", name, name, name, name);
    if (gpu)
        H("/* Creates an instance on the GPU device bdrt_device_index (0 unless the program sets it;\n   threads is ignored); NULL on failure, the reason printed on stderr. */\n");
    else
        H("/* Creates an instance using `threads` worker threads (<= 0: all CPUs); NULL if out of memory. */\n");
    if (gpu) H("extern int bdrt_device_index; /* the device NAME_create uses, 0 by default */\n");
    H("void *%s_create(int threads);\n", name);
    H("/* Runs one inference. inputs[i] / outputs[i] point to dense row-major buffers of the\n   descriptors' shapes and dtypes. Returns 0 on success. Not re-entrant per instance. */\n");
    H("int %s_run(void *instance, const void *const *inputs, void *const *outputs);\n", name);
    if (g->batch_max) {
        H("/* A batch range (bdc compile --dim SYMBOL=%lld..%lld): the descriptors hold the largest batch at\n"
          "   dim 0 of the inputs and of the outputs computed from them, and the buffers are sized for\n"
          "   it; %s_set_batch picks the batch of the runs that follow (the first `batch` items are\n"
          "   read and written). Returns 0, or 6 when batch is outside the range (nothing changes). */\n",
          (long long)g->batch_min, (long long)g->batch_max, name);
        H("#define %s_BATCH_MIN %lld\n#define %s_BATCH_MAX %lld\n", name, (long long)g->batch_min, name,
          (long long)g->batch_max);
        H("int %s_set_batch(void *instance, int64_t batch);\n", name);
    }
    H("void %s_destroy(void *instance);\n\n#endif\n", name);
#undef H
    *(char *)bd_vec_push(&t) = 0;
    return t.data;
}

void bd_print_io_table(bd_printer *p, const char *decl, const char *name, bd_graph *g,
                       const bd_vec *values, bool runtime) {
    if (!values->len) {
        bd_print_line(p, "%s %s[1];", decl, name);
        return;
    }
    bd_print_open(p, "%s %s[%zu] =", decl, name, values->len);
    for (size_t i = 0; i < values->len; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(values, int, i));
        char dims[BD_MAX_RANK * 24 + 4] = "";
        size_t o = 0;
        for (int k = 0; k < v->rank; k++)
            o += (size_t)snprintf(dims + o, sizeof dims - o, "%s%lld", k ? ", " : "", (long long)v->dims[k]);
        const char *batch = !runtime ? "" : v->flags & BD_VALUE_BATCHED ? bd_print_str(p, ", %lld", (long long)g->batch_min) : ", 0";
        bd_print_line(p, "{%s, %d, %d, {%s}%s},", bd_print_string_literal(p, v->name), v->dtype, v->rank,
                      v->rank ? dims : "0", batch);
    }
    bd_print_close(p, ";");
}
