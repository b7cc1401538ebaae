/* infer.c — shape/dtype inference and constant folding, in one topological sweep.
 *
 * Each node's op-table `infer` function sets its outputs' dtypes and shapes; when every input is
 * a compile-time constant and the op has a `fold` function, the outputs' data is computed too, so
 * the Shape -> Gather -> Concat -> Reshape chains that exporters emit collapse into constants
 * before the next node is inferred. An If, Loop or Scan whose control is known by then is
 * replaced by copies of its body, inserted after it, which the sweep then reaches (see
 * inline_control.c). Nodes bdc does not know (or at an unsupported opset) leave
 * their outputs unknown; they are reported by the support check, not here. */
#include "front/passes.h"

static bool node_supported_opset(const bd_node *n) {
    const bd_op_info *info = bd_op_info_of(n->op);
    return n->op != BD_OP_UNKNOWN && n->opset >= BD_OPSET_MIN && n->opset <= BD_OPSET_MAX &&
           n->opset >= info->since;
}

static bool inputs_constant(bd_graph *g, const bd_node *n) {
    for (int k = 0; k < n->n_inputs; k++) {
        const bd_value *v = bd_node_in(g, n, k);
        if (v && !v->constant) return false;
    }
    return true;
}

static bool outputs_known(bd_graph *g, const bd_node *n) {
    for (int k = 0; k < n->n_outputs; k++) {
        const bd_value *v = bd_node_out(g, n, k);
        if (v && (!v->dtype || !bd_value_shape_known(v))) return false;
    }
    return true;
}

bd_status bd_infer_graph(bd_graph *g, bd_diag *d) {
    int64_t folded_bytes = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead || !node_supported_opset(n)) continue;
        const bd_op_info *info = bd_op_info_of(n->op);
        bd_status s = info->infer(g, n, d);
        if (s) return s;
        n = bd_graph_node(g, (int)i); /* an If/Loop/Scan inserts its body after it: the array moved */
        if (info->fold != bd_fold_none && folded_bytes < BD_FOLD_MAX_TOTAL_BYTES &&
            inputs_constant(g, n) && outputs_known(g, n)) {
            s = info->fold(g, n, d);
            if (s) return s;
            for (int k = 0; k < n->n_outputs; k++) {
                const bd_value *v = bd_node_out(g, n, k);
                if (v && v->constant) folded_bytes += v->constant->nbytes;
            }
        }
    }
    return BD_OK;
}
