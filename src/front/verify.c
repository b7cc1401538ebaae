/* verify.c — binds every node to the op table and its opset, and checks what the loader cannot:
 * arity against the table, opset imports for each node's domain. Name resolution, ordering and
 * tensor sizes were checked while loading (onnx_load.c); shapes and dtypes are checked by
 * inference (infer.c). Whether bdc can *compile* a node is a separate question, answered by
 * bd_support_check (lower/support.c), so that `inspect` can list every unsupported node at once. */
#include <string.h>

#include "front/passes.h"

static int opset_of(const bd_model *m, const char *domain) {
    if (strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0)
            return m->opsets[i].version > INT32_MAX ? INT32_MAX : (int)m->opsets[i].version;
    return 0;
}

/* Upsample before opset 9 takes its scales as an attribute: they become a constant input 1, so
 * that it reads as opset 9's (X, scales) and as Resize at opset 10 from there on. */
static bd_status upsample_scales_input(bd_model *m, bd_graph *g, bd_node *n, bd_diag *d) {
    if (n->n_inputs != 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "takes 1 input (X) at opset %d, its scales an "
                            "attribute; got %d inputs", n->opset, n->n_inputs);
    const bd_attr *a = bd_node_attr(n, "scales");
    if (!a || a->type != BD_ATTR_FLOATS || a->n < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "needs attribute 'scales' (floats) at opset %d",
                            n->opset);
    int64_t count = a->n;
    bd_tensor *t = bd_tensor_new(&m->arena, BD_DT_FLOAT, 1, &count);
    int *in = bd_arena_array(&m->arena, 2, sizeof *in);
    if (!t || !in) return bd_fail(d, BD_ERR_IO, "out of memory");
    memcpy(t->data, a->floats, (size_t)a->n * sizeof(float));
    in[0] = n->inputs[0];
    in[1] = bd_graph_add_constant(g, n, t);
    n->inputs = in;
    n->n_inputs = 2;
    return BD_OK;
}

static bd_status verify_graph(bd_model *m, bd_graph *g, bd_diag *d) {
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        n->opset = opset_of(m, n->domain);
        if (n->opset == 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "no opset is imported for domain '%s'",
                                bd_quote(n->domain));
        n->op = bd_op_lookup(n->domain, n->op_type);
        if (n->op == BD_OP_UPSAMPLE && n->opset < 9) {
            bd_status s = upsample_scales_input(m, g, n, d);
            if (s) return s;
        }
        if (n->op != BD_OP_UNKNOWN) {
            const bd_op_info *info = bd_op_info_of(n->op);
            if (n->n_inputs < info->in_min || n->n_inputs > info->in_max) {
                if (info->in_max == BD_VARIADIC)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "has %d inputs, expected at least %d",
                                        n->n_inputs, info->in_min);
                return bd_node_fail(d, BD_ERR_INVALID, n, "has %d inputs, expected %d to %d",
                                    n->n_inputs, info->in_min, info->in_max);
            }
            if (n->n_outputs < info->out_min || n->n_outputs > info->out_max) {
                if (info->out_max == BD_VARIADIC)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "has %d outputs, expected at least %d",
                                        n->n_outputs, info->out_min);
                return bd_node_fail(d, BD_ERR_INVALID, n, "has %d outputs, expected %d to %d",
                                    n->n_outputs, info->out_min, info->out_max);
            }
            /* Required inputs and outputs (those below in_min, out_min) may not be omitted
             * with "". */
            for (int k = 0; k < info->in_min && k < n->n_inputs; k++)
                if (n->inputs[k] < 0)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "required input %d is empty", k);
            for (int k = 0; k < info->out_min && k < n->n_outputs; k++)
                if (n->outputs[k] < 0)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "required output %d is empty", k);
        }
        for (int a = 0; a < n->n_attrs; a++) {
            const bd_attr *at = &n->attrs[a];
            bd_status s = BD_OK;
            if (at->type == BD_ATTR_GRAPH) s = verify_graph(m, at->g, d);
            for (int k = 0; !s && at->type == BD_ATTR_GRAPHS && k < at->n; k++)
                s = verify_graph(m, at->graphs[k], d);
            if (s) return s;
        }
    }
    return BD_OK;
}

bd_status bd_verify(bd_model *m, bd_diag *d) { return verify_graph(m, m->graph, d); }
