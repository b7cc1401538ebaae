/* print.c — the shared printing layer of print.h: text, safe comments and literals, and the
 * expression translator every dialect uses. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/print.h"

static void text_append(bd_printer *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        *(char *)bd_vec_push(&p->text) = s[i];
}

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
                                                 : bd_print_str(p, "%lld", (long long)e->k[0]);
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
