/* expr.c — building, composing, checking and dumping the scalar expressions of expr.h. */
#include <math.h>
#include <string.h>

#include "base/util.h"

#include "nest/expr.h"

static const struct {
    const char *name;
    int args, consts;
} ops[BD_EXPR_OP_COUNT] = {
#define X(name, args, consts) {#name, args, consts},
    BD_EXPR_OPS(X)
#undef X
};

int bd_expr_arity(bd_expr_op op) {
    return ops[op].args;
}
static int push(bd_expr *x, bd_expr_node node) {
    if (x->overflow || x->n >= BD_EXPR_MAX_NODES) {
        x->overflow = true;
        return -1;
    }
    for (int i = 0; i < ops[node.op].args; i++)
        if (node.arg[i] < 0) return -1; /* an argument already overflowed */
    x->node[x->n] = node;
    return x->n++;
}

int bd_expr_load(bd_expr *x, int operand, int dtype) {
    return push(x, (bd_expr_node){.op = BD_EXPR_LOAD, .dtype = dtype, .operand = operand});
}

int bd_expr_const(bd_expr *x, double k, int dtype) {
    return push(x, (bd_expr_node){.op = BD_EXPR_CONST, .dtype = dtype, .k = {k, 0}});
}

int bd_expr_unary_k(bd_expr *x, bd_expr_op op, int dtype, int a, double k0, double k1) {
    return push(x, (bd_expr_node){.op = op, .dtype = dtype, .arg = {a, 0, 0}, .k = {k0, k1}});
}

int bd_expr_unary(bd_expr *x, bd_expr_op op, int dtype, int a) {
    return bd_expr_unary_k(x, op, dtype, a, 0, 0);
}

int bd_expr_binary(bd_expr *x, bd_expr_op op, int dtype, int a, int b) {
    return push(x, (bd_expr_node){.op = op, .dtype = dtype, .arg = {a, b, 0}});
}

int bd_expr_select(bd_expr *x, int dtype, int c, int a, int b) {
    return push(x, (bd_expr_node){.op = BD_EXPR_SELECT, .dtype = dtype, .arg = {c, a, b}});
}

int bd_expr_cast(bd_expr *x, int dtype, int a) {
    if (a < 0) return -1;
    if (x->node[a].dtype == dtype) return a;
    return bd_expr_unary(x, BD_EXPR_CAST, dtype, a);
}

int bd_expr_lookup(bd_expr *x, int operand, int dtype, int a) {
    return push(x, (bd_expr_node){.op = BD_EXPR_LOOKUP, .dtype = dtype, .arg = {a, 0, 0},
                                  .operand = operand});
}

bool bd_expr_reads_operand(const bd_expr_node *e) {
    return e->op == BD_EXPR_LOAD || e->op == BD_EXPR_LOOKUP;
}

void bd_expr_operands_read(const bd_expr *x, int n_operands, bool *loaded, bool *looked_up) {
    memset(loaded, 0, (size_t)n_operands * sizeof *loaded);
    memset(looked_up, 0, (size_t)n_operands * sizeof *looked_up);
    for (int i = 0; i < x->n; i++)
        if (bd_expr_reads_operand(&x->node[i]))
            (x->node[i].op == BD_EXPR_LOAD ? loaded : looked_up)[x->node[i].operand] = true;
}

bool bd_expr_has(const bd_expr *x, bd_expr_op op) {
    for (int i = 0; i < x->n; i++)
        if (x->node[i].op == op) return true;
    return false;
}

const bd_expr_node *bd_expr_root(const bd_expr *x) {
    return x->n ? &x->node[x->n - 1] : NULL;
}

static bool is_load0(const bd_expr *x, int i) {
    return x->node[i].op == BD_EXPR_LOAD && x->node[i].operand == 0;
}

bool bd_expr_clamp_bounds(const bd_expr *x, double *lo, double *hi) {
    *lo = -INFINITY, *hi = INFINITY;
    const bd_expr_node *r = bd_expr_root(x);
    if (!r) return true;
    if (r->op == BD_EXPR_RELU && is_load0(x, r->arg[0])) {
        *lo = 0;
        return true;
    }
    const bd_expr_node *c = r;
    if (c->op == BD_EXPR_CLAMP_MAX && x->node[c->arg[1]].op == BD_EXPR_CONST) {
        *hi = x->node[c->arg[1]].k[0];
        c = &x->node[c->arg[0]];
    }
    if (c->op == BD_EXPR_CLAMP_MIN && x->node[c->arg[1]].op == BD_EXPR_CONST) {
        *lo = x->node[c->arg[1]].k[0];
        c = &x->node[c->arg[0]];
    }
    return c != r && c == &x->node[0] && is_load0(x, 0);
}

int bd_expr_splice(bd_expr *dst, const bd_expr *src, const int *leaf) {
    int map[BD_EXPR_MAX_NODES];
    int last = -1;
    for (int i = 0; i < src->n; i++) {
        bd_expr_node e = src->node[i];
        if (e.op == BD_EXPR_LOAD && leaf && leaf[e.operand] >= 0) {
            map[i] = last = leaf[e.operand];
            continue;
        }
        for (int a = 0; a < ops[e.op].args; a++)
            e.arg[a] = map[e.arg[a]];
        map[i] = last = push(dst, e);
        if (last < 0) return -1;
    }
    return last;
}

void bd_expr_compact(bd_expr *x, int root) {
    if (!x->n) return;
    BD_ASSERT(root >= 0 && root < x->n);
    bool live[BD_EXPR_MAX_NODES] = {false};
    live[root] = true;
    for (int i = x->n - 1; i >= 0; i--)
        if (live[i])
            for (int a = 0; a < ops[x->node[i].op].args; a++)
                live[x->node[i].arg[a]] = true;
    int map[BD_EXPR_MAX_NODES], n = 0;
    for (int i = 0; i <= root; i++) {
        if (!live[i]) continue;
        bd_expr_node e = x->node[i];
        for (int a = 0; a < ops[e.op].args; a++)
            e.arg[a] = map[e.arg[a]];
        map[i] = n;
        x->node[n++] = e;
    }
    x->n = n;
}

/* Whether node i is an integer (or infinite, or NaN) in its float dtype: rounded, converted from
 * an integer, an integral constant, or a sum, difference, product or bound of such (a float sum
 * of two integers is one: exact below 2^24, and every float32 from 2^23 up is an integer). */
static bool integral(const bd_expr *x, int i) {
    const bd_expr_node *e = &x->node[i];
    switch (e->op) {
    case BD_EXPR_ROUND:
    case BD_EXPR_FLOOR:
    case BD_EXPR_CEIL: return true;
    case BD_EXPR_CAST: {
        int from = x->node[e->arg[0]].dtype;
        return bd_dtype_is_int(from) || from == BD_DT_BOOL;
    }
    case BD_EXPR_CONST: return e->k[0] == floor(e->k[0]);
    case BD_EXPR_NEG:
    case BD_EXPR_ABS:
    case BD_EXPR_RELU: return integral(x, e->arg[0]);
    case BD_EXPR_ADD:
    case BD_EXPR_SUB:
    case BD_EXPR_MUL:
    case BD_EXPR_CLAMP_MIN:
    case BD_EXPR_CLAMP_MAX: return integral(x, e->arg[0]) && integral(x, e->arg[1]);
    default: return false;
    }
}

void bd_expr_simplify(bd_expr *x) {
    bd_expr out = {0};
    int map[BD_EXPR_MAX_NODES];
    bool changed = false;
    for (int i = 0; i < x->n; i++) {
        bd_expr_node e = x->node[i];
        const bd_expr_node *in = e.op == BD_EXPR_CAST ? &x->node[e.arg[0]] : NULL;
        int bits = in ? bd_dtype_bits(in->dtype) : 0;
        if (in && in->op == BD_EXPR_CAST && bd_dtype_is_int(in->dtype) && bits <= 16 &&
            (e.dtype == BD_DT_FLOAT || e.dtype == BD_DT_DOUBLE) &&
            x->node[in->arg[0]].dtype == e.dtype && integral(x, in->arg[0])) {
            bool is_signed = bd_dtype_is_signed(in->dtype);
            double lo = is_signed ? -ldexp(1, bits - 1) : 0;
            double hi = is_signed ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
            map[i] = bd_expr_unary_k(&out, BD_EXPR_SATURATE, e.dtype, map[in->arg[0]], lo, hi);
            changed = true;
        } else {
            for (int a = 0; a < ops[e.op].args; a++)
                e.arg[a] = map[e.arg[a]];
            map[i] = push(&out, e);
        }
        if (map[i] < 0) return; /* full: keep x */
    }
    if (!changed) return;
    bd_expr_compact(&out, map[x->n - 1]);
    *x = out;
}

void bd_expr_dump(const bd_expr *x, FILE *f, const char *indent) {
    for (int i = 0; i < x->n; i++) {
        const bd_expr_node *e = &x->node[i];
        fprintf(f, "%se%d = %s %s", indent, i, ops[e->op].name, bd_dtype_name(e->dtype));
        if (bd_expr_reads_operand(e)) fprintf(f, " operand %d", e->operand);
        for (int a = 0; a < ops[e->op].args; a++)
            fprintf(f, "%s e%d", a ? "," : "", e->arg[a]);
        for (int k = 0; k < ops[e->op].consts; k++)
            fprintf(f, "%s %.17g", k ? "," : " k", e->k[k]);
        fprintf(f, "\n");
    }
}

bool bd_expr_valid(const bd_expr *x, int n_operands) {
    if (x->overflow || x->n < 0 || x->n > BD_EXPR_MAX_NODES) return false;
    for (int i = 0; i < x->n; i++) {
        const bd_expr_node *e = &x->node[i];
        if ((unsigned)e->op >= BD_EXPR_OP_COUNT || !bd_dtype_known(e->dtype)) return false;
        if (bd_expr_reads_operand(e) && (e->operand < 0 || e->operand >= n_operands)) return false;
        for (int a = 0; a < ops[e->op].args; a++)
            if (e->arg[a] < 0 || e->arg[a] >= i) return false;
        if (e->op == BD_EXPR_LOOKUP && !bd_dtype_is_byte(x->node[e->arg[0]].dtype)) return false;
    }
    return true;
}
