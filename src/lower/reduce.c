/* reduce.c — lowering of the reductions (ReduceSum, ReduceMean, ReduceMax) and of Softmax /
 * LogSoftmax.
 *
 * Both iterate over their output. A reduction's block is a tile of output elements; the input dims
 * it reduces are FULL in the input's access map (a block reads them whole) and the kept dims map
 * one to one onto output dims. Softmax writes the same shape it reads; the dims it normalises over
 * (one axis from opset 13, every dim from `axis` on before, where the input is coerced to 2-D) are
 * whole inside a block (marked `whole` for the tilers) and FULL in the input's map; the other dims
 * are the target's to tile. */
#include "lower/lower.h"

static bool is_empty(const bd_value *v) {
    for (int k = 0; k < v->rank; k++)
        if (v->dims[k] == 0) return true;
    return false;
}

/* ---------------------------------------------------------------- reductions */

/* The reduced input dims of a ReduceSum/Mean/Max node, as inference resolved them: axes from the
 * attribute (before ReduceSum-13 and the others' opset 18) or from constant input 1; no axes means
 * every dim, or none with noop_with_empty_axes. */
static bd_status reduced_dims(bd_graph *g, const bd_node *n, const bd_value *x, bool *reduced,
                              bd_diag *d) {
    int axes_input_since = n->op == BD_OP_REDUCE_SUM ? 13 : 18;
    bool from_input = n->opset >= axes_input_since;
    int64_t axes[BD_MAX_RANK];
    int naxes = 0;
    if (!from_input) {
        const bd_attr *a = bd_node_attr(n, "axes");
        if (a && a->type == BD_ATTR_INTS && a->n <= BD_MAX_RANK) {
            naxes = a->n;
            for (int i = 0; i < naxes; i++) axes[i] = a->ints[i];
        } else if (a) {
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' must be a list of at most "
                                "%d ints", BD_MAX_RANK);
        }
    } else {
        const bd_value *ax = bd_node_in(g, n, 1);
        if (ax && !bd_value_const_ints(ax, axes, BD_MAX_RANK, &naxes))
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 1 (axes) is not a compile-time "
                                "constant");
    }
    bool noop = from_input && bd_attr_int(n, "noop_with_empty_axes", 0) != 0;
    for (int k = 0; k < x->rank; k++) reduced[k] = naxes == 0 && !noop;
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!bd_norm_axis(axes[i], x->rank, &a))
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %lld is out of range for rank %d",
                                (long long)axes[i], x->rank);
        reduced[a] = true;
    }
    return BD_OK;
}

bd_status bd_lower_reduce(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK; /* folded: stored with the weights */
    if (!bd_value_shape_known(x) || !bd_value_shape_known(y))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "shapes are not static");
    if (is_empty(y)) return BD_OK; /* nothing to compute */
    bd_reduce_kind kind = n->op == BD_OP_REDUCE_SUM    ? BD_REDUCE_SUM
                          : n->op == BD_OP_REDUCE_MEAN ? BD_REDUCE_MEAN
                                                       : BD_REDUCE_MAX;
    int dt = x->dtype;
    bool numeric = dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE || bd_dtype_is_int(dt);
    if (!(numeric || (dt == BD_DT_BOOL && kind == BD_REDUCE_MAX)))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));

    bool reduced[BD_MAX_RANK];
    bd_status s = reduced_dims(g, n, x, reduced, d);
    if (s) return s;
    bool keepdims = bd_attr_int(n, "keepdims", 1) != 0;

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_REDUCE, y);
    bd_reduce_params *prm = BD_NEST_PARAMS(nest, reduce);
    prm->kind = kind;
    prm->in_rank = x->rank;
    prm->count = 1;
    int out_dim = 0;
    for (int k = 0; k < x->rank; k++) {
        if (reduced[k]) {
            prm->iter_of[k] = -1;
            prm->count *= x->dims[k];
            if (nest->n_reduce < 4) nest->reduce_extent[nest->n_reduce++] = x->dims[k];
            else nest->reduce_extent[3] *= x->dims[k]; /* more than 4: the last holds the rest */
            if (keepdims) {
                BD_ASSERT(out_dim < y->rank && y->dims[out_dim] == 1);
                out_dim++;
            }
        } else {
            BD_ASSERT(out_dim < y->rank && y->dims[out_dim] == x->dims[k]);
            prm->iter_of[k] = out_dim++;
        }
    }
    BD_ASSERT(out_dim == y->rank);

    bd_operand *in = bd_nest_operand(nest, n->inputs[0], false, x->rank);
    for (int k = 0; k < x->rank; k++)
        in->dims[k] = reduced[k] ? (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0}
                                 : (bd_access_dim){BD_ACCESS_AFFINE, prm->iter_of[k], 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);

    return BD_OK;
}

/* ---------------------------------------------------------------- softmax */

bd_status bd_lower_softmax(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    if (!bd_value_shape_known(x) || !bd_value_shape_known(y))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "shapes are not static");
    if (is_empty(y)) return BD_OK; /* nothing to compute */
    if (x->dtype != BD_DT_FLOAT && x->dtype != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(x->dtype));
    int64_t axis = bd_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
    int a;
    if (x->rank < 1 || !bd_norm_axis(axis, x->rank, &a))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute axis = %lld is out of range for "
                            "input 0 of rank %d", (long long)axis, x->rank);
    BD_ASSERT(y->rank == x->rank);

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_SOFTMAX, y);
    bd_softmax_params *prm = BD_NEST_PARAMS(nest, softmax);
    prm->log = n->op == BD_OP_LOG_SOFTMAX;
    prm->first = a;
    prm->last = n->opset < 13 ? x->rank - 1 : a;

    bd_operand *in = bd_nest_operand(nest, n->inputs[0], false, x->rank);
    bd_access_identity(in, 0);
    for (int k = prm->first; k <= prm->last; k++) {
        nest->whole[k] = true; /* softmax runs along these */
        in->dims[k] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
        if (nest->n_reduce < 4) nest->reduce_extent[nest->n_reduce++] = x->dims[k];
        else nest->reduce_extent[3] *= x->dims[k];
    }
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    return BD_OK;
}
