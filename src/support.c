/* support.c — decides which nodes bdc can compile: op in the table, opset in range, dtypes the
 * code generator handles, tensor-typed values. It reports every offender rather than stopping at
 * the first, so that `bdc inspect` can list them all and `compile` can refuse with exit 3. */
#include <stdio.h>
#include <string.h>

#include "passes.h"

static const char *value_problem(const bd_value *v, char *buf, size_t len) {
    if (v->type_kind) {
        snprintf(buf, len, "'%s' is a %s, bdc handles tensors only", bd_quote(v->name), v->type_kind);
        return buf;
    }
    int dt = v->dtype ? v->dtype : v->decl_dtype;
    if (dt && !bd_dtype_supported(dt)) {
        snprintf(buf, len, "'%s' has dtype %s, not supported yet", bd_quote(v->name), bd_dtype_name(dt));
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
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const bd_value *v = k < n->n_inputs ? bd_node_in(g, n, k) : bd_node_out(g, n, k - n->n_inputs);
        if (v && value_problem(v, buf, len)) return buf;
    }
    return NULL;
}

int bd_support_check(bd_graph *g, bd_unsupported_fn report, void *ctx) {
    char buf[512];
    int count = 0;
    for (size_t i = 0; i < g->inputs.len; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, i));
        if (value_problem(v, buf, sizeof buf)) report(ctx, NULL, v, buf), count++;
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        if (!n->dead && node_problem(g, n, buf, sizeof buf)) report(ctx, n, NULL, buf), count++;
    }
    return count;
}
