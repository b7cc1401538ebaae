/* support.c — decides which nodes bdc can compile: op in the table, opset in range, dtypes the
 * code generator handles, tensor-typed values, and then whatever the node's own lowering refuses
 * (an attribute value, a dtype one of its bodies does not compute, a shape that is not static):
 * every node that passes the first checks is lowered into a scratch program and its refusal, if
 * any, is listed with the others. A graph input whose shape is still not static after the command
 * line's bindings is listed too, with the --dim or --shape that would pin it. It reports every
 * offender rather than stopping at the first, so that `bdc inspect` lists them all and `compile` refuses with exit 3 before any work.
 *
 * float16 and bfloat16 are stored as their 16-bit patterns. Only two kinds of lowering can take
 * them: the elementwise ops (converted to float on load, computed in float, rounded to nearest
 * even on store) and the ops that only move elements (COPY, PAD, GATHER bodies, and the folded
 * constants). Every other op (convolution, matrix products, pooling, reductions, softmax,
 * normalisations, LSTM, Resize) is refused for them here, in one place, rather than in each
 * lowering; the op table's `lower` column decides which kind an op is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/passes.h"
#include "nest/loopnest.h"

typedef bd_status (*lower_fn)(bd_program *p, int node, bd_diag *d);

static const lower_fn lower_of[BD_OP_COUNT] = {
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower) [BD_OP_##e] = lower,
    BD_OPS(X)
#undef X
};

static bool is_half(int dt) { return dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16; }

/* Lowerings whose bodies never interpret a float16/bfloat16 value except through the
 * elementwise emitter's conversions. */
static bool lowering_takes_half(bd_op op) {
    static const lower_fn ok[] = {bd_lower_elementwise, bd_lower_constant, bd_lower_reshape,
                                  bd_lower_transpose,   bd_lower_slice,    bd_lower_expand,
                                  bd_lower_concat,      bd_lower_split,    bd_lower_gather,
                                  bd_lower_pad,         bd_lower_quantize,
                                  bd_lower_matmul_integer, bd_lower_conv_integer
                                  /* these two: halves only in their scales, elementwise */};
    for (size_t i = 0; i < BD_COUNT(ok); i++)
        if (lower_of[op] == ok[i]) return true;
    return false;
}

static const char *value_problem(const bd_value *v, char *buf, size_t len) {
    if (v->type_kind) {
        snprintf(buf, len, "'%s' is a %s, bdc handles tensors only", bd_quote(v->name), v->type_kind);
        return buf;
    }
    int dt = v->dtype ? v->dtype : v->decl_dtype;
    if (!dt && (v->flags & BD_VALUE_INPUT)) { /* the file gave a graph input no element type */
        snprintf(buf, len, "graph input '%s' has no element type", bd_quote(v->name));
        return buf;
    }
    if (dt && !bd_dtype_supported(dt)) {
        snprintf(buf, len, "'%s' has dtype %s, not supported yet", bd_quote(v->name), bd_dtype_name(dt));
        return buf;
    }
    return NULL;
}

/* A float16/bfloat16 value at a node that cannot take it. */
static const char *half_problem(bd_graph *g, const bd_node *n, const bd_value *v, char *buf, size_t len) {
    int dt = v->dtype ? v->dtype : v->decl_dtype;
    if (!is_half(dt)) return NULL;
    if (!lowering_takes_half(n->op)) {
        snprintf(buf, len, "'%s' has dtype %s, which %s does not support yet", bd_quote(v->name),
                 bd_dtype_name(dt), bd_op_info_of(n->op)->name);
        return buf;
    }
    /* Pad's opset < 11 'value' attribute is printed as a C constant of the element type, which
     * for a 16-bit float pattern is only right for +0. */
    float pad_value = n->op == BD_OP_PAD && n->opset < 11 ? bd_attr_float(n, "value", 0.0f) : 0.0f;
    if ((pad_value != 0.0f || signbit(pad_value)) &&
        strcmp(bd_attr_string(g, n, "mode", "constant"), "constant") == 0) {
        snprintf(buf, len, "attribute 'value' = %g on a %s input is not supported yet (only +0 is)",
                 (double)pad_value, bd_dtype_name(dt));
        return buf;
    }
    return NULL;
}

static const char *node_problem(bd_graph *g, const bd_node *n, char *buf, size_t len) {
    if (n->op == BD_OP_UNKNOWN) {
        if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
            snprintf(buf, len, "domain '%s' is not supported", bd_quote(n->domain));
        else
            snprintf(buf, len, "op %s is not supported", bd_quote(n->op_type));
        return buf;
    }
    const bd_op_info *info = bd_op_info_of(n->op);
    if (n->opset < BD_OPSET_MIN || n->opset > BD_OPSET_MAX) {
        snprintf(buf, len, "opset %d is outside the supported range %d..%d", n->opset, BD_OPSET_MIN,
                 BD_OPSET_MAX);
        return buf;
    }
    if (n->opset < info->since) {
        snprintf(buf, len, "%s does not exist before opset %d (model imports opset %d)", info->name,
                 info->since, n->opset);
        return buf;
    }
    /* still here after inference: its control is known only at run time */
    if (n->op == BD_OP_IF || n->op == BD_OP_LOOP || n->op == BD_OP_SCAN) {
        if (!bd_control_refusal(g, n, buf, len))
            snprintf(buf, len, "was not inlined"); /* cannot happen: inference inlines it */
        return buf;
    }
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const bd_value *v = k < n->n_inputs ? bd_node_in(g, n, k) : bd_node_out(g, n, k - n->n_inputs);
        if (v && (value_problem(v, buf, len) || half_problem(g, n, v, buf, len))) return buf;
    }
    return NULL;
}

/* The runtime (runtime/bdrt.h) has no bfloat16 in its dtype list, so an executable whose inputs or
 * outputs are bfloat16 would refuse its own descriptor at start: refused here until it has one.
 * bfloat16 values inside the graph are fine. */
static const char *io_problem(const bd_value *v, const char *what, char *buf, size_t len) {
    int dt = v->dtype ? v->dtype : v->decl_dtype;
    if (dt != BD_DT_BFLOAT16) return NULL;
    snprintf(buf, len, "graph %s '%s' is bfloat16, which the runtime cannot read or write yet", what,
             bd_quote(v->name));
    return buf;
}

/* Lowers node i into a scratch program; its refusal's reason (without the "node 'x' (Op): "
 * that report() prints itself) into buf, or NULL. Values lowering adds to the graph (a
 * ConstantOfShape's fill) are dropped again, so the graph comes back as it was. */
static const char *lowering_problem(bd_graph *g, int i, char *buf, size_t len) {
    const bd_node *n = bd_graph_node(g, i);
    size_t values = g->values.len;
    bd_program scratch = {.graph = g, .nests = BD_VEC(bd_nest)};
    bd_diag d = {0};
    bd_status s = bd_lower_node(&scratch, i, &d);
    bd_program_free(&scratch);
    g->values.len = values;
    if (!s) return NULL;
    char prefix[600];
    snprintf(prefix, sizeof prefix, "node '%s' (%s): ", bd_quote(n->name), bd_quote(n->op_type));
    size_t pl = strlen(prefix);
    const char *reason = strncmp(d.msg, prefix, pl) == 0 ? d.msg + pl : d.msg;
    size_t m = strlen(reason) < len ? strlen(reason) : len - 1;
    memcpy(buf, reason, m);
    buf[m] = 0;
    return buf;
}

/* A node whose inputs have static shapes but whose output does not: its shape is decided by a
 * value known only at run time. When that value comes from a graph input (a Reshape target fed
 * by the caller), --const can freeze it. */
static const char *runtime_shape_problem(bd_graph *g, const bd_node *n, char *buf, size_t len) {
    /* Input 0 is the data input of most ops with a shape-deciding one (Reshape, Resize, Slice,
     * Compress), so it is searched last; among the others, an integer input of rank 0 or 1 (a
     * shape tensor, not MaxUnpool's indices) first, then any (Resize's float scales, Compress's
     * bool condition). */
    int from = -1;
    for (int pass = 0; pass < 2 && from < 0; pass++)
        for (int k = 1; k < n->n_inputs && from < 0; k++) {
            const bd_value *v = bd_node_in(g, n, k);
            if (v && (pass || v->rank <= 1))
                from = bd_graph_input_behind(g, n->inputs[k], pass == 0);
        }
    if (from < 0 && n->n_inputs > 0) from = bd_graph_input_behind(g, n->inputs[0], false);
    if (from < 0) {
        snprintf(buf, len, "output shape depends on values computed at run time (bdc compiles "
                 "static shapes only)");
    } else {
        char name[160];
        snprintf(name, sizeof name, "%s", bd_quote(bd_graph_value(g, from)->name));
        snprintf(buf, len, "output shape depends on the value of graph input '%s', known only at "
                 "run time: freeze it with --const %s=FILE (.npy or .pb)", name, name);
    }
    return buf;
}

int bd_support_check(bd_graph *g, bd_unsupported_fn report, void *ctx) {
    char buf[512];
    int count = 0;
    for (size_t i = 0; i < g->inputs.len; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, i));
        if (value_problem(v, buf, sizeof buf) || io_problem(v, "input", buf, sizeof buf) ||
            bd_input_unbound(v, buf, sizeof buf))
            report(ctx, NULL, v, buf), count++;
    }
    for (size_t i = 0; i < g->outputs.len; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->outputs, int, i));
        if (io_problem(v, "output", buf, sizeof buf)) report(ctx, NULL, v, buf), count++;
    }
    /* A node downstream of a refused one, or with a shape that is not static, is not lowered
     * here: its refusal would only echo the first. The first node whose output shape is not
     * static although its inputs' are is the cause, and is reported as such. */
    bool *skip = calloc(g->nodes.len + 1, sizeof *skip);
    BD_ASSERT(skip);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        bool inputs_static = true, outputs_static = true;
        for (int k = 0; k < n->n_inputs; k++) {
            const bd_value *v = bd_node_in(g, n, k);
            if (v && (!bd_value_shape_known(v) || (v->producer >= 0 && skip[v->producer])))
                inputs_static = false;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            const bd_value *v = bd_node_out(g, n, k);
            if (v && !bd_value_shape_known(v)) outputs_static = false;
        }
        skip[i] = !inputs_static || !outputs_static;
        if (node_problem(g, n, buf, sizeof buf) ||
            (inputs_static && !outputs_static && runtime_shape_problem(g, n, buf, sizeof buf)) ||
            (!skip[i] && lowering_problem(g, (int)i, buf, sizeof buf))) {
            report(ctx, n, NULL, buf), count++;
            skip[i] = true;
        }
    }
    free(skip);
    return count;
}
