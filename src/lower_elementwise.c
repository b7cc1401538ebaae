/* lower_elementwise.c — lowering of elementwise ops (unary, broadcasting binary, variadic Min/Max,
 * Where, Cast, Clip, comparisons) and of the constant-producing ops.
 *
 * An elementwise nest iterates over the output; each input reads the same index, or index 0 along
 * a broadcast dim: exactly the IDENTITY / broadcast access maps. Tiles keep the trailing dims whole
 * (contiguous inner loops) up to a few thousand elements. */
#include "fuse.h"
#include "loopnest.h"

enum { ELEMENTWISE_TILE = 16384 };

bd_status bd_lower_elementwise(bd_program *p, int node, bd_diag *d) {
    if (bd_fuse_absorbed(p, node)) return BD_OK; /* computed in its producer's epilogue */
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *out = bd_node_out(g, n, 0);
    if (out->constant) return BD_OK; /* folded: stored with the weights */
    if (!bd_value_shape_known(out))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output shape is not static");
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, out);
    for (int k = 0; k < n->n_inputs; k++) {
        bd_value *in = bd_node_in(g, n, k);
        if (!in) continue;
        if (n->n_inputs + 1 > BD_NEST_MAX_OPERANDS)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "more than %d inputs",
                                BD_NEST_MAX_OPERANDS - 1);
        bd_access_broadcast(bd_nest_operand(nest, n->inputs[k], false, in->rank), in, out);
    }
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, out->rank), 0);
    bd_nest_tile_default(nest, ELEMENTWISE_TILE);
    return BD_OK;
}

/* Constant, Range and Shape fold whenever shapes are static (ConstantOfShape too, unless it is too
 * big: lower_data.c); a graph output that is such a constant gets a CONSTANT nest that copies it
 * into the caller's buffer. */
bd_status bd_lower_constant(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *out = bd_node_out(g, n, 0);
    if (!out->constant)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n,
                            "output is not a compile-time constant (its inputs depend on runtime data)");
    return BD_OK;
}
