/* reduce.c — lowering of the reductions (the Reduce* family, GlobalMaxPool, ArgMax/ArgMin,
 * Hardmax, CumSum, MeanVarianceNormalization, LRN) and of Softmax / LogSoftmax.
 *
 * Both iterate over their output. A reduction's block is a tile of output elements; the input dims
 * it reduces are FULL in the input's access map (a block reads them whole) and the kept dims map
 * one to one onto output dims. Softmax writes the same shape it reads; the dims it normalises over
 * (one axis from opset 13, every dim from `axis` on before, where the input is coerced to 2-D) are
 * whole inside a block (marked `whole` for the tilers) and FULL in the input's map; the other dims
 * are the target's to tile.
 *
 * The REDUCE body sums, averages or takes the maximum. The other reductions are one of those
 * between elementwise maps, each map a nest of its own through an unnamed value:
 * ReduceL1 = sum |x|, ReduceSumSquare = sum x*x, ReduceL2 = sqrt(sum x*x), ReduceLogSum =
 * log(sum x), ReduceLogSumExp = log(sum exp x) (as the reference computes it, without a shift),
 * and ReduceMin = -max(-x), or ~max(~x) for integers, whose minimum has no negation. An empty
 * reduction then gives what the reference gives: 0, -inf for the logarithms, +inf for Min.
 * ReduceProd, which no body has, is a tree of elementwise products (prod_nests).
 *
 * The ops built from reductions live here too, each a chain of nests through unnamed values:
 * the losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), the scatters (and MaxUnpool)
 * as a push without reduction or as pulls over output x update positions, TopK by counting, Einsum, DFT as products with
 * constant tables, LpNormalization, GroupNormalization, DynamicQuantizeLinear, and
 * TfIdfVectorizer's n-gram counts. */
#include <math.h>
#include <string.h>

#include "lower/lower.h"

static bool is_empty(const bd_value *v) {
    for (int k = 0; k < v->rank; k++)
        if (v->dims[k] == 0) return true;
    return false;
}

/* ---------------------------------------------------------------- reductions */

static void reshape_nest(bd_program *p, int node, int in, int out);

/* The reduced input dims of a ReduceSum/Mean/Max node, as inference resolved them: axes from the
 * attribute (before ReduceSum-13 and the others' opset 18) or from constant input 1; no axes means
 * every dim, or none with noop_with_empty_axes. */
static bd_status reduced_dims(bd_graph *g, const bd_node *n, const bd_value *x, bool *reduced,
                              bd_diag *d) {
    int axes_input_since = n->op == BD_OP_REDUCE_SUM ? 13 : 18;
    bool from_input = n->opset >= axes_input_since;
    int64_t axes[BD_MAX_RANK];
    int naxes = 0;
    if (n->op == BD_OP_GLOBAL_MAX_POOL) { /* every spatial dim */
        for (int k = 0; k < x->rank; k++) reduced[k] = k >= 2;
        return BD_OK;
    }
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
            return bd_fail_not_const(d, g, n, 1, "input 1 (axes)");
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

/* A REDUCE nest of `kind` from value `in` (node n's input, or a map of it) into value `out`, over
 * the input dims marked in reduced[]. */
static void reduce_nest(bd_program *p, int node, int in, int out, bd_reduce_kind kind,
                        const bool *reduced) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, in), *y = bd_graph_value(g, out);
    bool keepdims = y->rank == x->rank;
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

    bd_operand *op_in = bd_nest_operand(nest, in, false, x->rank);
    for (int k = 0; k < x->rank; k++)
        op_in->dims[k] = reduced[k] ? (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0}
                                    : (bd_access_dim){BD_ACCESS_AFFINE, prm->iter_of[k], 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, out, true, y->rank), 0);
}

/* An elementwise nest out = op(in) (MUL: in * in) over values of one shape and dtype. */
static void map_nest(bd_program *p, int node, int in, int out, bd_expr_op op) {
    const bd_value *y = bd_graph_value(p->graph, out);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
    bd_access_identity(bd_nest_operand(nest, in, false, y->rank), 0);
    bd_access_identity(bd_nest_operand(nest, out, true, y->rank), 0);
    bd_expr *x = BD_NEST_PARAMS(nest, expr);
    int a = bd_expr_load(x, 0, y->dtype);
    bd_expr_compact(x, op == BD_EXPR_MUL ? bd_expr_binary(x, op, y->dtype, a, a)
                                         : bd_expr_unary(x, op, y->dtype, a));
}

/* ArgMax/ArgMin along one axis of extent L into value out (keeping the axis or not), from the
 * reductions the body has: m = max x (or min, as above), then for every element the candidate
 * index -i (i for select_last_index) where x is m, else -L (-1), whose maximum along the axis is
 * minus the first index (the last index) of m. A NaN counts as the extreme, as numpy's argmax and
 * argmin (the reference) have it: where m is NaN, the NaN elements are its positions. */
static bool arg_nests(bd_program *p, int node, int xv, int axis, bool is_min, bool last, int out) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, xv);
    int dt = x->dtype, r = x->rank;
    bool is_float = dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE;
    int64_t dims[BD_MAX_RANK], kept[BD_MAX_RANK], L = x->dims[axis];
    bool reduced[BD_MAX_RANK] = {false};
    reduced[axis] = true;
    for (int i = 0; i < r; i++) dims[i] = x->dims[i], kept[i] = i == axis ? 1 : x->dims[i];

    /* m: the extreme along the axis, keeping it as a dim of 1 to broadcast back */
    int src = xv;
    if (is_min) {
        src = bd_lower_temp(g, dt, r, dims);
        map_nest(p, node, xv, src, is_float ? BD_EXPR_NEG : BD_EXPR_BIT_NOT);
    }
    int m = bd_lower_temp(g, dt, r, kept);
    reduce_nest(p, node, src, m, BD_REDUCE_MAX, reduced);

    bd_tensor *iota = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &L);
    if (!iota) return false;
    for (int64_t i = 0; i < L; i++) ((int64_t *)iota->data)[i] = last ? i : -i;
    int iv = bd_lower_temp(g, BD_DT_INT64, 1, &L);
    bd_graph_value(g, iv)->constant = iota;
    int cand = bd_lower_temp(g, BD_DT_INT64, r, dims);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, cand));
    bd_access_identity(bd_nest_operand(nest, src, false, r), 0);
    bd_access_broadcast(bd_nest_operand(nest, m, false, r), bd_graph_value(g, m),
                        bd_graph_value(g, cand));
    bd_nest_operand(nest, iv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, cand, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int a = bd_expr_load(e, 0, dt);
    int hit = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, a, bd_expr_load(e, 1, dt));
    if (is_float)
        hit = bd_expr_binary(e, BD_EXPR_OR, BD_DT_BOOL, hit,
                             bd_expr_unary(e, BD_EXPR_ISNAN, BD_DT_BOOL, a));
    int none = bd_expr_const(e, last ? -1.0 : (double)-L, BD_DT_INT64);
    bd_expr_compact(e, bd_expr_select(e, BD_DT_INT64, hit, bd_expr_load(e, 2, BD_DT_INT64), none));

    /* the index: the candidates' maximum, negated back for the first index */
    const bd_value *o = bd_graph_value(g, out);
    int64_t out_dims[BD_MAX_RANK];
    int out_rank = o->rank;
    for (int i = 0; i < out_rank; i++) out_dims[i] = o->dims[i];
    int best = last ? out : bd_lower_temp(g, BD_DT_INT64, out_rank, out_dims);
    reduce_nest(p, node, cand, best, BD_REDUCE_MAX, reduced);
    if (!last) map_nest(p, node, best, out, BD_EXPR_NEG);
    return true;
}

/* CumSum along an axis of extent L: y[.., i, ..] is the sum over j of x[.., j, ..] where j is
 * before i (or up to i, after i, from i, by exclusive and reverse). That is an elementwise nest
 * selecting x or 0 by a constant [L, L] mask into a value with a second axis dim j after the
 * axis, then a REDUCE SUM over j: L times the work of a running sum, which the REDUCE body does
 * not have, but exact for integers (they wrap as the reference's do) and one pass for floats. */
static bd_status lower_cumsum(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0), *av = bd_node_in(g, n, 1);
    int r = x->rank, dt = x->dtype, xv = n->inputs[0], yv = n->outputs[0], axis = 0;
    int64_t a = 0;
    int na = 0;
    if (r + 1 > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input rank %d is above %d, the most CumSum "
                            "supports", r, BD_MAX_RANK - 1);
    if (r > 1 && (!bd_value_const_ints(av, &a, 1, &na) || na != 1))
        return bd_fail_not_const(d, g, n, 1, "input 1 (axis)");
    if (r > 1 && !bd_norm_axis(a, r, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axis) = %lld is out of range for "
                            "rank %d", (long long)a, r);
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE && !bd_dtype_is_int(dt))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    bool exclusive = bd_attr_int(n, "exclusive", 0) != 0;
    bool reverse = bd_attr_int(n, "reverse", 0) != 0;
    int64_t L = x->dims[axis], mdims[2] = {L, L}, wide[BD_MAX_RANK];
    bd_status s = L > BD_LOWER_MAX_TABLE_ELEMS ? bd_need_table(d, n, L, "the mask of the axis")
                                               : bd_need_table(d, n, L * L, "the mask of the axis");
    if (s) return s;
    bd_tensor *mask = bd_tensor_new(&g->model->arena, BD_DT_BOOL, 2, mdims);
    if (!mask) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the mask");
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++)
            ((uint8_t *)mask->data)[i * L + j] = reverse ? (exclusive ? j > i : j >= i)
                                                         : (exclusive ? j < i : j <= i);
    for (int k = 0, o = 0; k < r; k++) {
        wide[o++] = x->dims[k];
        if (k == axis) wide[o++] = L; /* j, right after i */
    }
    int mv = bd_lower_temp(g, BD_DT_BOOL, 2, mdims);
    bd_graph_value(g, mv)->constant = mask;
    int terms = bd_lower_temp(g, dt, r + 1, wide);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, terms));
    bd_operand *xo = bd_nest_operand(nest, xv, false, r);
    for (int k = 0; k < r; k++) /* x[.., j, ..]: iteration dim k, or j for the axis */
        xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k < axis ? k : k + 1, 1, 0, 0};
    bd_operand *mo = bd_nest_operand(nest, mv, false, 2);
    mo->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    mo->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, axis + 1, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, terms, true, r + 1), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    bd_expr_compact(e, bd_expr_select(e, dt, bd_expr_load(e, 1, BD_DT_BOOL),
                                      bd_expr_load(e, 0, dt), bd_expr_const(e, 0, dt)));
    bool reduced[BD_MAX_RANK] = {false};
    reduced[axis + 1] = true;
    reduce_nest(p, node, terms, yv, BD_REDUCE_SUM, reduced);
    return BD_OK;
}

/* MeanVarianceNormalization, as its ONNX function defines it: with means over `axes` (default
 * 0, 2, 3) kept as dims of 1, y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9): two REDUCE MEAN
 * nests (of x, of x*x through a map) and one elementwise nest broadcasting them back. */
static bd_status lower_mvn(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0);
    int r = x->rank, dt = x->dtype, xv = n->inputs[0], yv = n->outputs[0];
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    bool reduced[BD_MAX_RANK] = {false};
    const bd_attr *a = bd_node_attr(n, "axes");
    int64_t dflt[3] = {0, 2, 3};
    const int64_t *axes = a ? a->ints : dflt;
    int naxes = a ? a->n : 3;
    if (a && (a->type != BD_ATTR_INTS || a->n > BD_MAX_RANK))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' must be a list of at most %d "
                            "ints", BD_MAX_RANK);
    for (int i = 0; i < naxes; i++) {
        int k;
        if (!bd_norm_axis(axes[i], r, &k))
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %lld is out of range for rank %d",
                                (long long)axes[i], r);
        reduced[k] = true;
    }
    int64_t dims[BD_MAX_RANK], kept[BD_MAX_RANK];
    for (int i = 0; i < r; i++) dims[i] = x->dims[i], kept[i] = reduced[i] ? 1 : x->dims[i];
    int mean = bd_lower_temp(g, dt, r, kept), sq = bd_lower_temp(g, dt, r, dims);
    int mean_sq = bd_lower_temp(g, dt, r, kept);
    reduce_nest(p, node, xv, mean, BD_REDUCE_MEAN, reduced);
    map_nest(p, node, xv, sq, BD_EXPR_MUL);
    reduce_nest(p, node, sq, mean_sq, BD_REDUCE_MEAN, reduced);
    const bd_value *y = bd_graph_value(g, yv);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
    bd_access_identity(bd_nest_operand(nest, xv, false, r), 0);
    bd_access_broadcast(bd_nest_operand(nest, mean, false, r), bd_graph_value(g, mean), y);
    bd_access_broadcast(bd_nest_operand(nest, mean_sq, false, r), bd_graph_value(g, mean_sq), y);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int xe = bd_expr_load(e, 0, dt), m = bd_expr_load(e, 1, dt), m2 = bd_expr_load(e, 2, dt);
    int var = bd_expr_binary(e, BD_EXPR_SUB, dt, m2, bd_expr_binary(e, BD_EXPR_MUL, dt, m, m));
    int den = bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_unary(e, BD_EXPR_SQRT, dt, var),
                             bd_expr_const(e, 1e-9, dt));
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_DIV, dt,
                                      bd_expr_binary(e, BD_EXPR_SUB, dt, xe, m), den));
    return BD_OK;
}

/* LRN: y = x / (bias + alpha / size * s)^beta, where s sums x^2 over the channels within the
 * window [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]. The window sum is CumSum's
 * construction: a band mask over (c, c') selecting x*x into a value with a second channel dim,
 * summed over it. */
static bd_status lower_lrn(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0);
    int r = x->rank, dt = x->dtype, xv = n->inputs[0], yv = n->outputs[0];
    int64_t size = bd_attr_int(n, "size", 0);
    if (size < 1) return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'size' (>= 1) is required");
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    if (r < 2 || r + 1 > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input rank %d is not supported", r);
    int64_t C = x->dims[1], mdims[2] = {C, C}, dims[BD_MAX_RANK], wide[BD_MAX_RANK];
    bd_status s = bd_need_table(d, n, C > BD_LOWER_MAX_TABLE_ELEMS ? C : C * C, "the window mask");
    if (s) return s;
    bd_tensor *mask = bd_tensor_new(&g->model->arena, BD_DT_BOOL, 2, mdims);
    if (!mask) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the mask");
    int64_t before = (size - 1) / 2, after = size / 2; /* floor and ceil of (size - 1) / 2 */
    for (int64_t c = 0; c < C; c++)
        for (int64_t j = 0; j < C; j++)
            ((uint8_t *)mask->data)[c * C + j] = j >= c - before && j <= c + after;
    for (int k = 0, o = 0; k < r; k++) {
        dims[k] = x->dims[k];
        wide[o++] = x->dims[k];
        if (k == 1) wide[o++] = C; /* c', right after c */
    }
    int mv = bd_lower_temp(g, BD_DT_BOOL, 2, mdims), terms = bd_lower_temp(g, dt, r + 1, wide);
    int sum = bd_lower_temp(g, dt, r, dims);
    bd_graph_value(g, mv)->constant = mask;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, terms));
    bd_operand *xo = bd_nest_operand(nest, xv, false, r);
    for (int k = 0; k < r; k++) /* x[n, c', ...] */
        xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k < 1 ? k : k + 1, 1, 0, 0};
    bd_operand *mo = bd_nest_operand(nest, mv, false, 2);
    mo->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
    mo->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, 2, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, terms, true, r + 1), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int xe = bd_expr_load(e, 0, dt);
    bd_expr_compact(e, bd_expr_select(e, dt, bd_expr_load(e, 1, BD_DT_BOOL),
                                      bd_expr_binary(e, BD_EXPR_MUL, dt, xe, xe),
                                      bd_expr_const(e, 0, dt)));
    bool reduced[BD_MAX_RANK] = {false};
    reduced[2] = true;
    reduce_nest(p, node, terms, sum, BD_REDUCE_SUM, reduced);

    const bd_value *y = bd_graph_value(g, yv);
    nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
    bd_access_identity(bd_nest_operand(nest, xv, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, sum, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    e = BD_NEST_PARAMS(nest, expr);
    double alpha = bd_attr_float(n, "alpha", 1e-4f), beta = bd_attr_float(n, "beta", 0.75f);
    double bias = bd_attr_float(n, "bias", 1.0f);
    int scaled = bd_expr_binary(e, BD_EXPR_MUL, dt, bd_expr_load(e, 1, dt),
                                bd_expr_const(e, alpha / (double)size, dt));
    int base = bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_const(e, bias, dt), scaled);
    int den = bd_expr_binary(e, BD_EXPR_POW, dt, base, bd_expr_const(e, beta, dt));
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_DIV, dt, bd_expr_load(e, 0, dt), den));
    return BD_OK;
}

/* Hardmax: 1 where the element is the first maximum along the axis, else 0 (a comparison of the
 * index with ArgMax's, kept as a dim of 1). Before opset 13 the input is coerced to 2-D at the
 * axis; that is the same computation only when the axis is the last dim. */
static bd_status lower_hardmax(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0);
    int r = x->rank, axis, dt = x->dtype, xv = n->inputs[0], yv = n->outputs[0];
    if (r < 1 || !bd_norm_axis(bd_attr_int(n, "axis", n->opset < 13 ? 1 : -1), r, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    if (n->opset < 13 && axis != r - 1)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "before opset 13, only axis = %d (the last "
                            "dim) is supported", r - 1);
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    int64_t kept[BD_MAX_RANK], L = x->dims[axis];
    for (int i = 0; i < r; i++) kept[i] = i == axis ? 1 : x->dims[i];
    bd_status s = bd_need_table(d, n, L, "the index range");
    if (s) return s;
    int idx = bd_lower_temp(g, BD_DT_INT64, r, kept);
    bd_tensor *iota = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &L);
    if (!iota || !arg_nests(p, node, xv, axis, false, false, idx))
        return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index range");
    for (int64_t i = 0; i < L; i++) ((int64_t *)iota->data)[i] = i;
    int iv = bd_lower_temp(g, BD_DT_INT64, 1, &L);
    bd_graph_value(g, iv)->constant = iota;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_broadcast(bd_nest_operand(nest, idx, false, r), bd_graph_value(g, idx),
                        bd_graph_value(g, yv));
    bd_nest_operand(nest, iv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int hit = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, bd_expr_load(e, 0, BD_DT_INT64),
                             bd_expr_load(e, 1, BD_DT_INT64));
    bd_expr_compact(e, bd_expr_select(e, dt, hit, bd_expr_const(e, 1, dt),
                                      bd_expr_const(e, 0, dt)));
    return BD_OK;
}

static bd_status lower_arg_reduce(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_node_in(g, n, 0);
    int dt = x->dtype, axis;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE && !bd_dtype_is_int(dt))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    BD_ASSERT(bd_norm_axis(bd_attr_int(n, "axis", 0), x->rank, &axis)); /* inference checked it */
    bool last = n->opset >= 12 && bd_attr_int(n, "select_last_index", 0) != 0;
    bd_status s = bd_need_table(d, n, x->dims[axis], "the index range");
    if (s) return s;
    if (!arg_nests(p, node, n->inputs[0], axis, n->op == BD_OP_ARG_MIN, last, n->outputs[0]))
        return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index range");
    return BD_OK;
}

/* A COPY nest of value out (x's shape but for dim axis) from value in at `offset` along axis. */
static void slice_nest(bd_program *p, int node, int in, int out, int axis, int64_t offset) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, in), *y = bd_graph_value(g, out);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, y);
    bd_operand *xo = bd_nest_operand(nest, in, false, x->rank);
    bd_access_identity(xo, 0);
    xo->dims[axis].offset = offset;
    bd_access_identity(bd_nest_operand(nest, out, true, y->rank), 0);
    bd_copy_params *cp = BD_NEST_PARAMS(nest, copy);
    memset(cp, 0, sizeof *cp);
    bd_dims_strides(x->rank, x->dims, cp->in_stride);
    cp->in_base = offset * cp->in_stride[axis];
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
}

/* A product over the reduced dims of value xv into value yv (ReduceProd, a scatter's 'mul'), which
 * the REDUCE body does not have: the reduced dims padded with ones to powers of two (a PAD nest), then per halving of a dim two COPY nests of its halves and an elementwise
 * product, the last one writing the output; log2(extent) levels per dim, exact for integers,
 * which wrap as the reference's do. An empty reduction is 1. */
static bd_status prod_nests(bd_program *p, int node, int xv, int yv, const bool *reduced,
                            bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    const bd_value *x = bd_graph_value(g, xv), *y = bd_graph_value(g, yv);
    int r = x->rank, dt = x->dtype, yr = y->rank;
    int64_t cur[BD_MAX_RANK], padded[BD_MAX_RANK], grown = 1;
    int iter_of[BD_MAX_RANK], levels = 0;
    bool pad = false, empty = false;
    for (int k = 0, o = 0; k < r; k++) {
        cur[k] = padded[k] = x->dims[k];
        iter_of[k] = reduced[k] ? -1 : o;
        if (!reduced[k] || yr == r) o++;
        if (!reduced[k]) continue;
        empty = empty || x->dims[k] == 0;
        while (padded[k] < x->dims[k] || (padded[k] & (padded[k] - 1)) != 0) padded[k]++;
        for (int64_t e = padded[k]; e > 1; e /= 2) levels++;
        grown *= padded[k] / (x->dims[k] ? x->dims[k] : 1);
        pad = pad || padded[k] != x->dims[k];
    }
    if (empty) { /* 1 everywhere */
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
        bd_access_identity(bd_nest_operand(nest, yv, true, yr), 0);
        bd_expr *e = BD_NEST_PARAMS(nest, expr);
        bd_expr_compact(e, bd_expr_const(e, 1, dt));
        return BD_OK;
    }
    if (levels == 0) { /* only dims of extent 1 reduced: a reshape of x */
        reshape_nest(p, node, xv, yv);
        return BD_OK;
    }
    if (grown > 64)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "padding the reduced dims to powers of two "
                            "would grow the input %lld times", (long long)grown);
    int v = xv;
    if (pad) {
        v = bd_lower_temp(g, dt, r, padded);
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_PAD, bd_graph_value(g, v));
        bd_operand *xo = bd_nest_operand(nest, xv, false, r);
        bd_access_identity(xo, 0);
        bd_access_identity(bd_nest_operand(nest, v, true, r), 0);
        bd_pad_params *pp = BD_NEST_PARAMS(nest, pad);
        memset(pp, 0, sizeof *pp);
        pp->mode = BD_PAD_CONSTANT;
        pp->value = 1;
        pp->value_operand = -1;
        for (int k = 0; k < r; k++) pp->kept[k] = cur[k];
        for (int k = 0; k < r; k++) cur[k] = padded[k];
    }
    for (int k = 0; k < r; k++) {
        while (reduced[k] && cur[k] > 1) {
            cur[k] /= 2;
            int lo = bd_lower_temp(g, dt, r, cur), hi = bd_lower_temp(g, dt, r, cur);
            slice_nest(p, node, v, lo, k, 0);
            slice_nest(p, node, v, hi, k, cur[k]);
            bool last = --levels == 0;
            v = last ? yv : bd_lower_temp(g, dt, r, cur);
            bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, v));
            for (int i = 0; i < 2; i++) {
                bd_operand *o = bd_nest_operand(nest, i ? hi : lo, false, r);
                bd_access_identity(o, 0);
                if (last) /* the output drops or keeps the reduced dims, now of extent 1 */
                    for (int j = 0; j < r; j++)
                        o->dims[j] = (bd_access_dim){BD_ACCESS_AFFINE, iter_of[j],
                                                     iter_of[j] >= 0, 0, 0};
            }
            bd_access_identity(bd_nest_operand(nest, v, true, last ? yr : r), 0);
            bd_expr *e = BD_NEST_PARAMS(nest, expr);
            bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_MUL, dt, bd_expr_load(e, 0, dt),
                                              bd_expr_load(e, 1, dt)));
        }
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
    if (n->op == BD_OP_ARG_MAX || n->op == BD_OP_ARG_MIN) return lower_arg_reduce(p, node, d);
    if (n->op == BD_OP_HARDMAX) return lower_hardmax(p, node, d);
    if (n->op == BD_OP_CUM_SUM) return lower_cumsum(p, node, d);
    if (n->op == BD_OP_MEAN_VARIANCE_NORMALIZATION) return lower_mvn(p, node, d);
    if (n->op == BD_OP_LRN) return lower_lrn(p, node, d);
    int dt = x->dtype;
    bool is_float = dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE, is_int = bd_dtype_is_int(dt);
    /* The reduction and the maps around it (BD_EXPR_OP_COUNT: none). */
    bd_reduce_kind kind = BD_REDUCE_SUM;
    bd_expr_op pre = BD_EXPR_OP_COUNT, post = BD_EXPR_OP_COUNT;
    bool ok = is_float || is_int;
    switch (n->op) {
    case BD_OP_REDUCE_SUM: break;
    case BD_OP_REDUCE_MEAN: kind = BD_REDUCE_MEAN; break;
    case BD_OP_GLOBAL_MAX_POOL:
    case BD_OP_REDUCE_MAX:
        kind = BD_REDUCE_MAX;
        ok = ok || dt == BD_DT_BOOL;
        break;
    case BD_OP_REDUCE_MIN:
        kind = BD_REDUCE_MAX;
        pre = post = is_float ? BD_EXPR_NEG : is_int ? BD_EXPR_BIT_NOT : BD_EXPR_NOT;
        ok = ok || dt == BD_DT_BOOL;
        break;
    case BD_OP_REDUCE_PROD: break;
    case BD_OP_REDUCE_L1: pre = BD_EXPR_ABS; break;
    case BD_OP_REDUCE_SUM_SQUARE: pre = BD_EXPR_MUL; break;
    case BD_OP_REDUCE_L2:
        pre = BD_EXPR_MUL, post = BD_EXPR_SQRT;
        ok = is_float;
        break;
    case BD_OP_REDUCE_LOG_SUM:
        post = BD_EXPR_LOG;
        ok = is_float;
        break;
    case BD_OP_REDUCE_LOG_SUM_EXP:
        pre = BD_EXPR_EXP, post = BD_EXPR_LOG;
        ok = is_float;
        break;
    default: BD_ASSERT(!"a reduction the op table does not lower here");
    }
    if (!ok)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));

    bool reduced[BD_MAX_RANK];
    bd_status s = reduced_dims(g, n, x, reduced, d);
    if (s) return s;
    int in = n->inputs[0], out = n->outputs[0];
    if (n->op == BD_OP_REDUCE_PROD) return prod_nests(p, node, in, out, reduced, d);
    int64_t x_dims[BD_MAX_RANK], y_dims[BD_MAX_RANK];
    int x_rank = x->rank, y_rank = y->rank;
    for (int k = 0; k < x_rank; k++) x_dims[k] = x->dims[k];
    for (int k = 0; k < y_rank; k++) y_dims[k] = y->dims[k];
    if (pre != BD_EXPR_OP_COUNT) { /* (adding values moves x and y: only indices from here) */
        int mapped = bd_lower_temp(g, dt, x_rank, x_dims);
        map_nest(p, node, in, mapped, pre);
        in = mapped;
    }
    int reduced_out = post != BD_EXPR_OP_COUNT ? bd_lower_temp(g, dt, y_rank, y_dims) : out;
    reduce_nest(p, node, in, reduced_out, kind, reduced);
    if (post != BD_EXPR_OP_COUNT) map_nest(p, node, reduced_out, out, post);
    return BD_OK;
}

/* ---------------------------------------------------------------- softmax */

/* A SOFTMAX nest from value in to value out (one shape) along dims first..last. */
static void softmax_nest(bd_program *p, int node, int in, int out, bool log, int first, int last) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, in);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_SOFTMAX, bd_graph_value(g, out));
    bd_softmax_params *prm = BD_NEST_PARAMS(nest, softmax);
    prm->log = log;
    prm->first = first;
    prm->last = last;

    bd_operand *op_in = bd_nest_operand(nest, in, false, x->rank);
    bd_access_identity(op_in, 0);
    for (int k = first; k <= last; k++) {
        nest->whole[k] = true; /* softmax runs along these */
        op_in->dims[k] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
        if (nest->n_reduce < 4) nest->reduce_extent[nest->n_reduce++] = x->dims[k];
        else nest->reduce_extent[3] *= x->dims[k];
    }
    bd_access_identity(bd_nest_operand(nest, out, true, x->rank), 0);
}

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

    softmax_nest(p, node, n->inputs[0], n->outputs[0], n->op == BD_OP_LOG_SOFTMAX, a,
                 n->opset < 13 ? x->rank - 1 : a);
    return BD_OK;
}

/* ---------------------------------------------------------------- losses */

/* A reshape of value in into value out (same element count, row-major order): a COPY nest. */
static void reshape_nest(bd_program *p, int node, int in, int out) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, in), *y = bd_graph_value(g, out);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, y);
    bd_nest_operand(nest, in, false, x->rank);
    bd_access_identity(bd_nest_operand(nest, out, true, y->rank), 0);
    bd_copy_params *cp = BD_NEST_PARAMS(nest, copy);
    memset(cp, 0, sizeof *cp);
    bd_dims_strides(y->rank, y->dims, cp->in_stride);
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
    cp->reshape = true;
    bd_nest_set_tile(g, nest, nest->tile); /* x's map follows the tile (nest.c) */
}

/* A GATHER nest out[i...] = data[idx[i...]] along axis 0 of the 1-D value data. */
static void gather_flat_nest(bd_program *p, int node, int data, int idx, int out) {
    bd_graph *g = p->graph;
    const bd_value *iv = bd_graph_value(g, idx);
    int q = iv->rank;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_GATHER, bd_graph_value(g, out));
    bd_nest_operand(nest, data, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
    bd_access_identity(bd_nest_operand(nest, idx, false, q), 0);
    bd_access_identity(bd_nest_operand(nest, out, true, q), 0);
    bd_gather_params *gp = BD_NEST_PARAMS(nest, gather);
    gp->axis = 0;
    gp->idx_rank = q;
}

/* NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss as a LogSoftmax along the class axis
 * (into its output 1, or an unnamed value) followed by it. With the input x [N, C, D...]
 * flattened, the element target t picks at (n, d) is flat index base(n, d) + t * prod(D), base a
 * compile-time table, gathered as GatherElements does; the weight w[t] is a GATHER of w by t; an
 * elementwise nest makes the loss -x[t] w[t], 0 where t is ignore_index. 'sum' reduces it; 'mean'
 * divides its sum by the sum of the weights that count (without weights: the targets that are not
 * ignored, which is the spec's definition; onnx's reference divides by all targets when
 * ignore_index is -1 and there are no weights). GATHER clamps its indices, so an ignored target
 * outside [0, C) reads an element that the mask then drops. */
bd_status bd_lower_loss(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *t = bd_node_in(g, n, 1), *w = bd_node_in(g, n, 2);
    bd_value *y = bd_node_out(g, n, 0), *lp = bd_node_out(g, n, 1);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0")) || (s = bd_need_static(d, n, t, "input 1")) ||
        (s = bd_need_static(d, n, w, "input 2")) || (s = bd_need_static(d, n, y, "output 0")) ||
        (s = bd_need_static(d, n, lp, "output 1")))
        return s;
    int dt = x->dtype, it = t->dtype, r = x->rank;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    if (it != BD_DT_INT32 && it != BD_DT_INT64)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (target) has dtype %s, expected int32 "
                            "or int64", bd_dtype_name(it));
    const char *red = bd_attr_string(g, n, "reduction", "mean");
    bool none = strcmp(red, "none") == 0, mean = strcmp(red, "mean") == 0;
    bool has_ii = bd_node_attr(n, "ignore_index") != NULL;
    double ii = (double)bd_attr_int(n, "ignore_index", 0);
    int64_t xdims[BD_MAX_RANK], tdims[BD_MAX_RANK], total = 1, inner = 1;
    for (int k = 0; k < r; k++) xdims[k] = x->dims[k], total *= x->dims[k];
    for (int k = 2; k < r; k++) inner *= x->dims[k];
    for (int k = 0; k < r - 1; k++) tdims[k] = t->dims[k];
    if (total == 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "an empty input is not supported");
    if ((s = bd_need_table(d, n, total / xdims[1], "the flat index offsets"))) return s;
    int xv = n->inputs[0], tv = n->inputs[1], yv = n->outputs[0];
    int wv = w ? n->inputs[2] : -1, q = r - 1;
    int lpv = lp ? n->outputs[1] : -1;
    /* (adding values moves x, t, w, y and lp: only indices from here) */

    int src = xv;
    if (n->op == BD_OP_SOFTMAX_CROSS_ENTROPY_LOSS) {
        src = lpv >= 0 ? lpv : bd_lower_temp(g, dt, r, xdims);
        softmax_nest(p, node, xv, src, true, 1, 1);
    }
    bd_tensor *base = bd_tensor_new(&g->model->arena, BD_DT_INT64, q, tdims);
    if (!base) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index offsets");
    for (int64_t i = 0; i < base->numel; i++) /* i = n * inner + d */
        ((int64_t *)base->data)[i] = i / inner * xdims[1] * inner + i % inner;
    int bv = bd_lower_temp(g, BD_DT_INT64, q, tdims);
    bd_graph_value(g, bv)->constant = base;
    int flat_x = bd_lower_temp(g, dt, 1, &total), flat_i = bd_lower_temp(g, BD_DT_INT64, q, tdims);
    reshape_nest(p, node, src, flat_x);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, flat_i));
    bd_access_identity(bd_nest_operand(nest, tv, false, q), 0);
    bd_access_identity(bd_nest_operand(nest, bv, false, q), 0);
    bd_access_identity(bd_nest_operand(nest, flat_i, true, q), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int ti = bd_expr_cast(e, BD_DT_INT64, bd_expr_load(e, 0, it));
    ti = bd_expr_binary(e, BD_EXPR_MUL, BD_DT_INT64, ti,
                        bd_expr_const(e, (double)inner, BD_DT_INT64));
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64,
                                      bd_expr_load(e, 1, BD_DT_INT64), ti));
    int picked = bd_lower_temp(g, dt, q, tdims);
    gather_flat_nest(p, node, flat_x, flat_i, picked);
    int wsel = -1;
    if (wv >= 0) {
        wsel = bd_lower_temp(g, dt, q, tdims);
        gather_flat_nest(p, node, wv, tv, wsel);
    }

    /* the loss per target, and for 'mean' with weights or ignore_index the weights that count */
    int loss = none ? yv : bd_lower_temp(g, dt, q, tdims);
    for (int pass = 0; pass < 2; pass++) {
        bool weights = pass == 1;
        if (weights && !(mean && (wv >= 0 || has_ii))) break;
        int out = weights ? bd_lower_temp(g, dt, q, tdims) : loss;
        nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
        bd_access_identity(bd_nest_operand(nest, tv, false, q), 0);
        bd_access_identity(bd_nest_operand(nest, picked, false, q), 0);
        if (wsel >= 0) bd_access_identity(bd_nest_operand(nest, wsel, false, q), 0);
        bd_access_identity(bd_nest_operand(nest, out, true, q), 0);
        e = BD_NEST_PARAMS(nest, expr);
        int v = weights ? bd_expr_const(e, 1, dt)
                        : bd_expr_unary(e, BD_EXPR_NEG, dt, bd_expr_load(e, 1, dt));
        if (wsel >= 0)
            v = weights ? bd_expr_load(e, 2, dt)
                        : bd_expr_binary(e, BD_EXPR_MUL, dt, v, bd_expr_load(e, 2, dt));
        if (has_ii) {
            int ign = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL,
                                     bd_expr_cast(e, BD_DT_INT64, bd_expr_load(e, 0, it)),
                                     bd_expr_const(e, ii, BD_DT_INT64));
            v = bd_expr_select(e, dt, ign, bd_expr_const(e, 0, dt), v);
        }
        bd_expr_compact(e, v);
        if (!weights) continue;
        /* mean = sum(loss) / sum(weights) */
        bool all[BD_MAX_RANK];
        for (int k = 0; k < q; k++) all[k] = true;
        int num = bd_lower_temp(g, dt, 0, NULL), den = bd_lower_temp(g, dt, 0, NULL);
        reduce_nest(p, node, loss, num, BD_REDUCE_SUM, all);
        reduce_nest(p, node, out, den, BD_REDUCE_SUM, all);
        nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
        bd_nest_operand(nest, num, false, 0);
        bd_nest_operand(nest, den, false, 0);
        bd_nest_operand(nest, yv, true, 0);
        e = BD_NEST_PARAMS(nest, expr);
        bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_DIV, dt, bd_expr_load(e, 0, dt),
                                          bd_expr_load(e, 1, dt)));
        return BD_OK;
    }
    if (!none) {
        bool all[BD_MAX_RANK];
        for (int k = 0; k < q; k++) all[k] = true;
        reduce_nest(p, node, loss, yv, mean ? BD_REDUCE_MEAN : BD_REDUCE_SUM, all);
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- scatters */

/* A constant PAD nest growing value in to value v (at the tail of each dim) with `value`. */
static void pad_nest(bd_program *p, int node, int in, int v, double value) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, in);
    int r = x->rank;
    int64_t kept[BD_MAX_RANK];
    for (int k = 0; k < r; k++) kept[k] = x->dims[k];
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_PAD, bd_graph_value(g, v));
    bd_access_identity(bd_nest_operand(nest, in, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, v, true, r), 0);
    bd_pad_params *pp = BD_NEST_PARAMS(nest, pad);
    memset(pp, 0, sizeof *pp);
    pp->mode = BD_PAD_CONSTANT;
    pp->value = value;
    pp->value_operand = -1;
    for (int k = 0; k < r; k++) pp->kept[k] = kept[k];
}

/* The same into a new value of dims `to`; returns it. */
static int pad_value(bd_program *p, int node, int in, const int64_t *to, double value) {
    const bd_value *x = bd_graph_value(p->graph, in);
    int v = bd_lower_temp(p->graph, x->dtype, x->rank, to);
    pad_nest(p, node, in, v, value);
    return v;
}

enum { SCATTER_NONE, SCATTER_ADD, SCATTER_MUL, SCATTER_MAX, SCATTER_MIN };

/* A scatter seen from its output ("pull"): output element p takes the updates whose indices name
 * it. The nests run over a wide domain, the data's dims then the dims an update position varies
 * along, where index operand i (with the wide map idx_map) must equal data dim target[i]; the
 * updates are read through upd_map. */
typedef struct scatter_plan {
    int r, nw, dt, it;
    bool dup_max; /* reduction none: updates landing on one element give their largest, not sum */
    int64_t wide[BD_MAX_RANK];
    int data, upd, n_idx, idx[BD_MAX_RANK], target[BD_MAX_RANK], iota[BD_MAX_RANK];
    int upd_rank, idx_rank;
    bd_access_dim upd_map[BD_MAX_RANK], idx_map[BD_MAX_RANK];
} scatter_plan;

/* The wide nest into value out: whether the element's update lands on its output element (hit),
 * or the term a reduction over the update dims folds: the update where it lands, else the
 * reduction's identity (for max and min the data element itself, negated for min). */
static bool scatter_wide_nest(bd_program *p, int node, const scatter_plan *sp, int out, bool hit,
                              int red) {
    bd_graph *g = p->graph;
    int dt = sp->dt, it = sp->it;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
    bd_access_identity(bd_nest_operand(nest, sp->data, false, sp->r), 0);
    bd_operand *uo = bd_nest_operand(nest, sp->upd, false, sp->upd_rank);
    for (int k = 0; k < sp->upd_rank; k++) uo->dims[k] = sp->upd_map[k];
    for (int i = 0; i < sp->n_idx; i++) {
        bd_operand *io = bd_nest_operand(nest, sp->idx[i], false, sp->idx_rank);
        for (int k = 0; k < sp->idx_rank; k++) io->dims[k] = sp->idx_map[k];
        bd_nest_operand(nest, sp->iota[i], false, 1)->dims[0] =
            (bd_access_dim){BD_ACCESS_AFFINE, sp->target[i], 1, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, out, true, sp->nw), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int match = -1;
    for (int i = 0; i < sp->n_idx; i++) { /* negative indices count from the back */
        int v = bd_expr_cast(e, BD_DT_INT64, bd_expr_load(e, 2 + 2 * i, it));
        int neg = bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, v, bd_expr_const(e, 0, BD_DT_INT64));
        v = bd_expr_select(e, BD_DT_INT64, neg,
                           bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, v,
                                          bd_expr_const(e, (double)sp->wide[sp->target[i]],
                                                        BD_DT_INT64)), v);
        int eq = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, v,
                                bd_expr_load(e, 3 + 2 * i, BD_DT_INT64));
        match = match < 0 ? eq : bd_expr_binary(e, BD_EXPR_AND, BD_DT_BOOL, match, eq);
    }
    if (!hit) {
        bool is_float = dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE;
        int other = sp->dup_max         ? bd_expr_const(e, -INFINITY, dt)
                    : red == SCATTER_MUL ? bd_expr_const(e, 1, dt)
                    : red == SCATTER_MAX || red == SCATTER_MIN ? bd_expr_load(e, 0, dt)
                                                                : bd_expr_const(e, 0, dt);
        match = bd_expr_select(e, dt, match, bd_expr_load(e, 1, dt), other);
        if (red == SCATTER_MIN)
            match = bd_expr_unary(e, is_float ? BD_EXPR_NEG : BD_EXPR_BIT_NOT, dt, match);
    }
    bd_expr_compact(e, match);
    return !e->overflow;
}

/* The nests of a planned scatter into value yv: the wide terms reduced over the update dims, then
 * combined with the data (none: the update where one lands, else the data; add, mul: the data
 * plus or times the sum or product; max, min: the larger or smaller of the data and the maximum,
 * negated back for min). */
static bd_status scatter_nests(bd_program *p, int node, scatter_plan *sp, int red, int yv,
                               bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    int dt = sp->dt, r = sp->r;
    int64_t numel;
    if (!bd_dims_numel(sp->nw, sp->wide, &numel)) numel = INT64_MAX;
    bd_status s = bd_need_table(d, n, numel, "the pairs of output and update positions");
    if (s) return s;
    for (int i = 0; i < sp->n_idx; i++) { /* the data dim's indices, to compare with */
        int64_t len = sp->wide[sp->target[i]];
        bd_tensor *iota = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &len);
        if (!iota) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index range");
        for (int64_t j = 0; j < len; j++) ((int64_t *)iota->data)[j] = j;
        sp->iota[i] = bd_lower_temp(g, BD_DT_INT64, 1, &len);
        bd_graph_value(g, sp->iota[i])->constant = iota;
    }
    bool reduced[BD_MAX_RANK];
    for (int k = 0; k < sp->nw; k++) reduced[k] = k >= r;
    int64_t dims[BD_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = sp->wide[k];
    int terms = bd_lower_temp(g, dt, sp->nw, sp->wide);
    if (!scatter_wide_nest(p, node, sp, terms, false, red))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "too many index components to compare");
    int folded = bd_lower_temp(g, dt, r, dims), hits = -1;
    if (red == SCATTER_MAX || red == SCATTER_MIN || sp->dup_max) {
        reduce_nest(p, node, terms, folded, BD_REDUCE_MAX, reduced);
    } else if (red == SCATTER_MUL) {
        if ((s = prod_nests(p, node, terms, folded, reduced, d))) return s;
    } else {
        reduce_nest(p, node, terms, folded, BD_REDUCE_SUM, reduced);
    }
    if (red == SCATTER_NONE) {
        int wide_hits = bd_lower_temp(g, BD_DT_BOOL, sp->nw, sp->wide);
        scatter_wide_nest(p, node, sp, wide_hits, true, red);
        hits = bd_lower_temp(g, BD_DT_BOOL, r, dims);
        reduce_nest(p, node, wide_hits, hits, BD_REDUCE_MAX, reduced);
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_identity(bd_nest_operand(nest, sp->data, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, folded, false, r), 0);
    if (hits >= 0) bd_access_identity(bd_nest_operand(nest, hits, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int a = bd_expr_load(e, 0, dt), b = bd_expr_load(e, 1, dt);
    if (red == SCATTER_MIN)
        b = bd_expr_unary(e, dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE ? BD_EXPR_NEG
                                                                   : BD_EXPR_BIT_NOT, dt, b);
    if (red == SCATTER_MAX || red == SCATTER_MIN) { /* the data counts even where all land */
        bd_expr_compact(e, bd_expr_binary(e, red == SCATTER_MAX ? BD_EXPR_MAX : BD_EXPR_MIN, dt,
                                          a, b));
        return BD_OK;
    }
    bd_expr_compact(e, red == SCATTER_NONE
                           ? bd_expr_select(e, dt, bd_expr_load(e, 2, BD_DT_BOOL), b, a)
                           : bd_expr_binary(e, red == SCATTER_MUL ? BD_EXPR_MUL : BD_EXPR_ADD,
                                            dt, a, b));
    return BD_OK;
}

/* A scatter without reduction seen from its updates ("push"): one block copies the data into
 * the output, then writes each update where its index names, in O(data + updates) where the
 * pull compares every output element with every update (and is refused past the table limit).
 * An index outside the data, after a negative one counts from the back, writes nothing; of two
 * updates naming one element the later wins (the spec leaves the order undefined). A batch range
 * (--dim B=LO..HI) keeps the pull, whose blocks follow the batch. */
static bool scatter_push(bd_program *p, int node, int data, int idx, int upd, int out,
                         int components, int axis) {
    bd_graph *g = p->graph;
    if (g->batch_max) return false;
    int r = bd_graph_value(g, out)->rank;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_SCATTER, bd_graph_value(g, out));
    *BD_NEST_PARAMS(nest, scatter) = (bd_scatter_params){.components = components, .axis = axis};
    bd_access_identity(bd_nest_operand(nest, data, false, r), 0);
    for (int k = 0; k < 2; k++) { /* indices and updates: read whole, at data-dependent places */
        int v = k ? upd : idx, rank = bd_graph_value(g, v)->rank;
        bd_operand *o = bd_nest_operand(nest, v, false, rank);
        for (int j = 0; j < rank; j++) o->dims[j] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, out, true, r), 0);
    for (int k = 0; k < r; k++) nest->whole[k] = true; /* one block */
    return true;
}

/* Scatter (opsets 9-10), ScatterElements and ScatterND. Without reduction, a push
 * (scatter_push). With one, or under a batch range, a pull (scatter_plan): the output element
 * takes the updates whose indices name it, found by comparing every index with the element's
 * position over a wide domain (output x update positions) and reduced over the update positions:
 * the work is numel(data) x the updates per position, fine for the small scatters exporters emit
 * (capped by the table limit). With reduction 'none' (a batch range) an output element that
 * several updates name gets their sum (the spec leaves duplicates undefined there). Indices
 * smaller than the data along the other dims (ScatterElements) are padded with an index that
 * names nothing. ScatterND's index tuples are split into one COPY slice per component. */
bd_status bd_lower_scatter(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *iv = bd_node_in(g, n, 1), *uv = bd_node_in(g, n, 2);
    bd_value *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0")) || (s = bd_need_static(d, n, iv, "input 1")) ||
        (s = bd_need_static(d, n, uv, "input 2")) || (s = bd_need_static(d, n, y, "output")))
        return s;
    scatter_plan sp;
    memset(&sp, 0, sizeof sp);
    sp.r = x->rank, sp.dt = x->dtype, sp.it = iv->dtype;
    int r = sp.r, q = iv->rank, dt = sp.dt;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE && !bd_dtype_is_int(dt))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    if (sp.it != BD_DT_INT32 && sp.it != BD_DT_INT64)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (indices) has dtype %s, expected int32 "
                            "or int64", bd_dtype_name(sp.it));
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *rs = bd_attr_string(g, n, "reduction", "none");
    int red = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(rs, names[i]) == 0) red = i;
    if (red < 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'reduction' '%s' is not "
                            "supported", bd_quote(rs));
    int64_t xd[BD_MAX_RANK], id[BD_MAX_RANK], numel = 1;
    for (int k = 0; k < r; k++) xd[k] = x->dims[k], sp.wide[k] = x->dims[k], numel *= xd[k];
    for (int k = 0; k < q; k++) id[k] = iv->dims[k], numel *= iv->dims[k] == 0 ? 0 : 1;
    int xv = n->inputs[0], idxv = n->inputs[1], updv = n->inputs[2], yv = n->outputs[0];
    if (numel == 0) return BD_OK; /* an empty output or no updates: y is the data */
    sp.data = xv;
    /* (adding values moves x, iv, uv and y: only indices from here) */

    if (n->op == BD_OP_SCATTER_ND) {
        int k = (int)id[q - 1], nq = q - 1;
        if (nq < 1 || r + nq > BD_MAX_RANK || k < 1 || k > r || k > 6)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "indices of shape rank %d into data of "
                                "rank %d are not supported", q, r);
        if (red == SCATTER_NONE && scatter_push(p, node, xv, idxv, updv, yv, k, 0)) return BD_OK;
        sp.nw = r + nq;
        for (int j = 0; j < nq; j++) sp.wide[r + j] = id[j];
        sp.n_idx = k, sp.idx_rank = q, sp.upd = updv, sp.upd_rank = nq + r - k;
        for (int j = 0; j < q; j++)
            sp.idx_map[j] = (bd_access_dim){BD_ACCESS_AFFINE, j < nq ? r + j : -1, j < nq, 0, 0};
        for (int j = 0; j < sp.upd_rank; j++)
            sp.upd_map[j] = (bd_access_dim){BD_ACCESS_AFFINE, j < nq ? r + j : k + j - nq, 1, 0, 0};
        int64_t part[BD_MAX_RANK];
        for (int j = 0; j < q; j++) part[j] = j < nq ? id[j] : 1;
        for (int m = 0; m < k; m++) { /* component m of every index tuple */
            sp.idx[m] = bd_lower_temp(g, sp.it, q, part);
            sp.target[m] = m;
            slice_nest(p, node, idxv, sp.idx[m], q - 1, m);
        }
    } else {
        int axis;
        if (q != r || !bd_norm_axis(bd_attr_int(n, "axis", 0), r, &axis))
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' or the indices' rank is "
                                "out of range");
        if (r + 1 > BD_MAX_RANK)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input rank %d is above %d", r,
                                BD_MAX_RANK - 1);
        sp.nw = r + 1;
        sp.wide[r] = id[axis];
        sp.n_idx = 1, sp.target[0] = axis, sp.idx_rank = r, sp.upd_rank = r;
        for (int j = 0; j < r; j++)
            sp.idx_map[j] = sp.upd_map[j] =
                (bd_access_dim){BD_ACCESS_AFFINE, j == axis ? r : j, 1, 0, 0};
        bool short_dims = false;
        int64_t to[BD_MAX_RANK];
        for (int j = 0; j < r; j++) {
            to[j] = j == axis ? id[j] : xd[j];
            if (id[j] > to[j])
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (indices) dim %d is larger "
                                    "than the data's", j);
            short_dims = short_dims || id[j] != to[j];
        }
        if (red == SCATTER_NONE && scatter_push(p, node, xv, idxv, updv, yv, 0, axis)) return BD_OK;
        sp.idx[0] = idxv, sp.upd = updv;
        if (short_dims) { /* an index that names no element even from the back: -2 D - 1 */
            sp.idx[0] = pad_value(p, node, idxv, to, (double)(-2 * xd[axis] - 1));
            sp.upd = pad_value(p, node, updv, to, 0);
        }
    }
    return scatter_nests(p, node, &sp, red, yv, d);
}

/* MaxUnpool as a scatter of X's values (flattened) into a zero-filled flat tensor of the
 * unpooled shape at the flat indices I, then reshaped: a push (scatter_push), or under a batch
 * range the scatters' pull, refused above the table limit like theirs. Where pooling windows
 * overlap, MaxPool gives one index twice with the same value: the push writes it twice, the pull
 * takes the largest rather than the sum. An index outside the unpooled tensor names nothing (a
 * negative one counts from the back, as in ScatterND). A larger output_shape pads the unpooled
 * tensor at the tail of each dim, as the reference and the node suite have it (onnxruntime
 * instead reads the indices as flat positions in output_shape). */
bd_status bd_lower_max_unpool(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *iv = bd_node_in(g, n, 1), *os = bd_node_in(g, n, 2);
    bd_value *y = bd_node_out(g, n, 0);
    bd_status s;
    if (os && !os->constant) return bd_fail_not_const(d, g, n, 2, "input 2 (output_shape)");
    if ((s = bd_need_static(d, n, x, "input 0 (X)")) ||
        (s = bd_need_static(d, n, iv, "input 1 (I)")) || (s = bd_need_static(d, n, y, "output")))
        return s;
    if (x->dtype != BD_DT_FLOAT && x->dtype != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "dtype %s is not supported",
                            bd_dtype_name(x->dtype));
    if (is_empty(y)) return BD_OK;
    int64_t M = 1, K = 1, unpooled[BD_MAX_RANK];
    int r = x->rank, nsp = r - 2;
    const bd_attr *ks = bd_node_attr(n, "kernel_shape"), *st = bd_node_attr(n, "strides");
    const bd_attr *pd = bd_node_attr(n, "pads");
    bool padded = false;
    for (int k = 0; k < r; k++) {
        unpooled[k] = k < 2 ? x->dims[k]
                            : (x->dims[k] - 1) * (st ? st->ints[k - 2] : 1) + ks->ints[k - 2] -
                                  (pd ? pd->ints[k - 2] + pd->ints[nsp + k - 2] : 0);
        M *= unpooled[k], K *= x->dims[k];
        padded = padded || unpooled[k] != y->dims[k];
    }
    int dt = x->dtype, xv = n->inputs[0], idxv = n->inputs[1], yv = n->outputs[0];
    /* (adding values moves x, iv and y: only indices from here) */
    int zeros = bd_lower_temp(g, dt, 1, &M), flat = bd_lower_temp(g, dt, 1, &M);
    int out = padded ? bd_lower_temp(g, dt, r, unpooled) : yv;
    bd_lower_fill(p, node, zeros, 0);
    int unpooled_flat = zeros; /* no X elements: the zeros themselves */
    if (K > 0) {
        int flat_idx = bd_lower_temp(g, BD_DT_INT64, 1, &K), flat_x = bd_lower_temp(g, dt, 1, &K);
        reshape_nest(p, node, idxv, flat_idx);
        reshape_nest(p, node, xv, flat_x);
        unpooled_flat = flat;
        if (!scatter_push(p, node, zeros, flat_idx, flat_x, flat, 0, 0)) {
            scatter_plan sp;
            memset(&sp, 0, sizeof sp);
            sp.r = 1, sp.nw = 2, sp.dt = dt, sp.it = BD_DT_INT64, sp.dup_max = true;
            sp.wide[0] = M, sp.wide[1] = K;
            sp.data = zeros, sp.n_idx = 1, sp.target[0] = 0, sp.idx_rank = 1, sp.upd_rank = 1;
            sp.idx[0] = flat_idx, sp.upd = flat_x;
            sp.idx_map[0] = sp.upd_map[0] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
            if ((s = scatter_nests(p, node, &sp, SCATTER_NONE, flat, d))) return s;
        }
    }
    reshape_nest(p, node, unpooled_flat, out);
    if (padded) pad_nest(p, node, out, yv, 0);
    return BD_OK;
}

/* ---------------------------------------------------------------- TopK */

/* TopK along an axis of extent L as counting, without a sort: element i's rank is how many
 * elements j come before it (larger, or equal with j < i; smaller for largest = 0: the
 * reference's order), an elementwise nest over (i, j) summed over j; output position k's index is
 * the i whose rank is k (a nest over (k, i) selecting i there, summed over i: one term is not 0);
 * the values are gathered at those indices as GatherElements does. L^2 work per row, capped by
 * the table limit; the output is sorted whatever 'sorted' says. NaNs are not ordered. */
bd_status bd_lower_topk(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0), *yi = bd_node_out(g, n, 1);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0")) || (s = bd_need_static(d, n, y, "output 0")) ||
        (s = bd_need_static(d, n, yi, "output 1")))
        return s;
    int r = x->rank, dt = x->dtype, axis;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE && !bd_dtype_is_int(dt))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    BD_ASSERT(bd_norm_axis(bd_attr_int(n, "axis", -1), r, &axis)); /* inference checked it */
    bool largest = n->opset < 11 || bd_attr_int(n, "largest", 1) != 0;
    if (r + 1 > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input rank %d is above %d", r,
                            BD_MAX_RANK - 1);
    int64_t L = x->dims[axis], xd[BD_MAX_RANK], yd[BD_MAX_RANK];
    int64_t w1[BD_MAX_RANK], w2[BD_MAX_RANK], rows = 1, yn = 1;
    for (int k = 0; k < r; k++) {
        xd[k] = x->dims[k], yd[k] = y->dims[k], yn *= yd[k];
        if (k != axis) rows *= xd[k];
    }
    if (yn == 0) return BD_OK;
    if ((s = bd_need_table(d, n, rows * L > BD_LOWER_MAX_TABLE_ELEMS ? rows * L : rows * L * L,
                           "the pairs of elements compared")))
        return s;
    for (int k = 0, o = 0; k < r; k++) {
        w1[o] = xd[k], w2[o++] = yd[k];
        if (k == axis) w1[o] = L, w2[o++] = L; /* j (i) right after i (k) */
    }
    int xv = n->inputs[0], yv = n->outputs[0], iv = yi ? n->outputs[1] : -1;
    /* (adding values moves x, y and yi: only indices from here) */
    bd_tensor *iota = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &L);
    if (!iota) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index range");
    for (int64_t i = 0; i < L; i++) ((int64_t *)iota->data)[i] = i;
    int io = bd_lower_temp(g, BD_DT_INT64, 1, &L);
    bd_graph_value(g, io)->constant = iota;

    /* before[i, j]: element j comes before element i */
    int before = bd_lower_temp(g, BD_DT_INT64, r + 1, w1);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, before));
    for (int t = 0; t < 2; t++) { /* x[.., i, ..] and x[.., j, ..] */
        bd_operand *o = bd_nest_operand(nest, xv, false, r);
        for (int k = 0; k < r; k++)
            o->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k < axis ? k : k + 1 - (k == axis && !t),
                                         1, 0, 0};
    }
    bd_nest_operand(nest, io, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    bd_nest_operand(nest, io, false, 1)->dims[0] =
        (bd_access_dim){BD_ACCESS_AFFINE, axis + 1, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, before, true, r + 1), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int xi = bd_expr_load(e, 0, dt), xj = bd_expr_load(e, 1, dt);
    int first = bd_expr_binary(e, largest ? BD_EXPR_GREATER : BD_EXPR_LESS, BD_DT_BOOL, xj, xi);
    int tie = bd_expr_binary(e, BD_EXPR_AND, BD_DT_BOOL,
                             bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, xj, xi),
                             bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL,
                                            bd_expr_load(e, 3, BD_DT_INT64),
                                            bd_expr_load(e, 2, BD_DT_INT64)));
    bd_expr_compact(e, bd_expr_select(e, BD_DT_INT64,
                                      bd_expr_binary(e, BD_EXPR_OR, BD_DT_BOOL, first, tie),
                                      bd_expr_const(e, 1, BD_DT_INT64),
                                      bd_expr_const(e, 0, BD_DT_INT64)));
    bool reduced[BD_MAX_RANK] = {false};
    reduced[axis + 1] = true;
    int rank = bd_lower_temp(g, BD_DT_INT64, r, xd);
    reduce_nest(p, node, before, rank, BD_REDUCE_SUM, reduced);

    /* at[k, i]: i where i's rank is k, else 0; summed over i */
    int at = bd_lower_temp(g, BD_DT_INT64, r + 1, w2);
    nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, at));
    bd_operand *o = bd_nest_operand(nest, rank, false, r);
    for (int k = 0; k < r; k++)
        o->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k < axis ? k : k + 1, 1, 0, 0};
    bd_nest_operand(nest, io, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    bd_nest_operand(nest, io, false, 1)->dims[0] =
        (bd_access_dim){BD_ACCESS_AFFINE, axis + 1, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, at, true, r + 1), 0);
    e = BD_NEST_PARAMS(nest, expr);
    int hit = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, bd_expr_load(e, 0, BD_DT_INT64),
                             bd_expr_load(e, 1, BD_DT_INT64));
    bd_expr_compact(e, bd_expr_select(e, BD_DT_INT64, hit, bd_expr_load(e, 2, BD_DT_INT64),
                                      bd_expr_const(e, 0, BD_DT_INT64)));
    int idx = iv >= 0 ? iv : bd_lower_temp(g, BD_DT_INT64, r, yd);
    reduce_nest(p, node, at, idx, BD_REDUCE_SUM, reduced);

    /* the values: x at (.., idx, ..), through x flattened */
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK], total = 1;
    bd_dims_strides(r, xd, xs);
    bd_dims_strides(r, yd, ys);
    for (int k = 0; k < r; k++) total *= xd[k];
    bd_tensor *base = bd_tensor_new(&g->model->arena, BD_DT_INT64, r, yd);
    if (!base) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index offsets");
    for (int64_t i = 0; i < yn; i++) {
        int64_t off = 0;
        for (int k = 0; k < r; k++)
            if (k != axis) off += (i / ys[k] % yd[k]) * xs[k];
        ((int64_t *)base->data)[i] = off;
    }
    int bv = bd_lower_temp(g, BD_DT_INT64, r, yd), fx = bd_lower_temp(g, dt, 1, &total);
    int fi = bd_lower_temp(g, BD_DT_INT64, r, yd);
    bd_graph_value(g, bv)->constant = base;
    reshape_nest(p, node, xv, fx);
    nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, fi));
    bd_access_identity(bd_nest_operand(nest, idx, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, bv, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, fi, true, r), 0);
    e = BD_NEST_PARAMS(nest, expr);
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, bd_expr_load(e, 1, BD_DT_INT64),
                                      bd_expr_binary(e, BD_EXPR_MUL, BD_DT_INT64,
                                                     bd_expr_load(e, 0, BD_DT_INT64),
                                                     bd_expr_const(e, (double)xs[axis],
                                                                   BD_DT_INT64))));
    gather_flat_nest(p, node, fx, fi, yv);
    return BD_OK;
}

/* ---------------------------------------------------------------- Einsum */

/* Einsum over its plan's domain (bd_einsum_plan: the output's labels, then the summed ones): one
 * elementwise nest multiplying the inputs, each read with its dims mapped to their labels' dims
 * (a label repeated in one input maps two dims to one: its diagonal; a dim of 1 broadcasts), then
 * a REDUCE SUM over the summed labels, or the product is the output when none is summed. Any
 * equation compiles; a contraction costs its whole domain in memory (capped by the table limit). */
bd_status bd_lower_einsum(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output"))) return s;
    for (int k = 0; k < n->n_inputs; k++)
        if ((s = bd_need_static(d, n, bd_node_in(g, n, k), "an input"))) return s;
    int dt = y->dtype, yv = n->outputs[0];
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE && !bd_dtype_is_int(dt))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    bd_einsum_plan ep;
    if ((s = bd_einsum_plan_of(g, n, d, &ep))) return s;
    int64_t numel;
    if (!bd_dims_numel(ep.n_labels, ep.extent, &numel)) numel = INT64_MAX;
    for (int i = 0; i < ep.n_out; i++)
        if (ep.extent[i] == 0) return BD_OK; /* an empty output */
    bool summed = ep.n_labels > ep.n_out;
    if (summed && (s = bd_need_table(d, n, numel, "the products summed"))) return s;
    int in[BD_EINSUM_MAX_INPUTS];
    for (int k = 0; k < ep.n_in; k++) in[k] = n->inputs[k];
    /* (adding values moves y: only indices from here) */
    int prod = summed ? bd_lower_temp(g, dt, ep.n_labels, ep.extent) : yv;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, prod));
    for (int k = 0; k < ep.n_in; k++) {
        const bd_value *v = bd_graph_value(g, in[k]);
        bd_operand *o = bd_nest_operand(nest, in[k], false, v->rank);
        for (int j = 0; j < v->rank; j++) {
            int l = ep.label_of[k][j];
            bool bcast = v->dims[j] == 1 && ep.extent[l] != 1;
            o->dims[j] = (bd_access_dim){BD_ACCESS_AFFINE, bcast ? -1 : l, !bcast, 0, 0};
        }
    }
    bd_access_identity(bd_nest_operand(nest, prod, true, ep.n_labels), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int v = bd_expr_load(e, 0, dt);
    for (int k = 1; k < ep.n_in; k++)
        v = bd_expr_binary(e, BD_EXPR_MUL, dt, v, bd_expr_load(e, k, dt));
    bd_expr_compact(e, v);
    if (summed) {
        bool reduced[BD_MAX_RANK];
        for (int i = 0; i < ep.n_labels; i++) reduced[i] = i >= ep.n_out;
        reduce_nest(p, node, prod, yv, BD_REDUCE_SUM, reduced);
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- DynamicQuantizeLinear */

/* DynamicQuantizeLinear as the reference computes it: the maximum of x and of -x (REDUCE MAX
 * nests), the scale (max(0, max x) - min(0, min x)) / 255 (1/255 when that is 0) and the zero
 * point round(clamp(-min / scale, 0, 255)) in elementwise nests of rank 0, then y =
 * clamp(round(x / scale) + zero point, 0, 255). */
bd_status bd_lower_dynamic_quantize(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    for (int k = 0; k < 3; k++)
        if ((s = bd_need_static(d, n, bd_node_out(g, n, k), "an output"))) return s;
    if ((s = bd_need_static(d, n, x, "input 0 (x)"))) return s;
    if (x->dtype != BD_DT_FLOAT)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(x->dtype));
    int r = x->rank, xv = n->inputs[0], yv = n->outputs[0], sv = n->outputs[1];
    int zv = n->outputs[2], F = BD_DT_FLOAT;
    int64_t dims[BD_MAX_RANK], numel = 1;
    for (int k = 0; k < r; k++) dims[k] = x->dims[k], numel *= dims[k];
    if (numel == 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "an empty input is not supported");
    bool all[BD_MAX_RANK];
    for (int k = 0; k < r; k++) all[k] = true;
    int mx = bd_lower_temp(g, F, 0, NULL), neg = bd_lower_temp(g, F, r, dims);
    int mn = bd_lower_temp(g, F, 0, NULL);
    reduce_nest(p, node, xv, mx, BD_REDUCE_MAX, all);
    map_nest(p, node, xv, neg, BD_EXPR_NEG);
    reduce_nest(p, node, neg, mn, BD_REDUCE_MAX, all);
    for (int out = 0; out < 2; out++) { /* the scale, then the zero point */
        int v = out ? zv : sv;
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, v));
        bd_nest_operand(nest, mx, false, 0);
        bd_nest_operand(nest, mn, false, 0);
        bd_nest_operand(nest, v, true, 0);
        bd_expr *e = BD_NEST_PARAMS(nest, expr);
        int zero = bd_expr_const(e, 0, F);
        int hi = bd_expr_binary(e, BD_EXPR_MAX, F, zero, bd_expr_load(e, 0, F));
        int lo = bd_expr_binary(e, BD_EXPR_MIN, F, zero,
                                bd_expr_unary(e, BD_EXPR_NEG, F, bd_expr_load(e, 1, F)));
        int range = bd_expr_select(e, F, bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, hi, lo),
                                   bd_expr_const(e, 1, F), bd_expr_binary(e, BD_EXPR_SUB, F, hi, lo));
        int scale = bd_expr_binary(e, BD_EXPR_DIV, F, range, bd_expr_const(e, 255, F));
        if (!out) {
            bd_expr_compact(e, scale);
            continue;
        }
        int z = bd_expr_binary(e, BD_EXPR_SUB, F, zero, bd_expr_binary(e, BD_EXPR_DIV, F, lo, scale));
        z = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, F, bd_expr_binary(e, BD_EXPR_CLAMP_MIN, F, z, zero),
                           bd_expr_const(e, 255, F));
        bd_expr_compact(e, bd_expr_cast(e, BD_DT_UINT8, bd_expr_unary(e, BD_EXPR_ROUND, F, z)));
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    bd_access_identity(bd_nest_operand(nest, xv, false, r), 0);
    bd_nest_operand(nest, sv, false, 0);
    bd_nest_operand(nest, zv, false, 0);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int v = bd_expr_unary(e, BD_EXPR_ROUND, F, bd_expr_binary(e, BD_EXPR_DIV, F, bd_expr_load(e, 0, F),
                                                              bd_expr_load(e, 1, F)));
    v = bd_expr_binary(e, BD_EXPR_ADD, F, v, bd_expr_cast(e, F, bd_expr_load(e, 2, BD_DT_UINT8)));
    v = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, F,
                       bd_expr_binary(e, BD_EXPR_CLAMP_MIN, F, v, bd_expr_const(e, 0, F)),
                       bd_expr_const(e, 255, F));
    bd_expr_compact(e, bd_expr_cast(e, BD_DT_UINT8, v));
    return BD_OK;
}

/* ---------------------------------------------------------------- TfIdfVectorizer */

/* TfIdfVectorizer over integers, counting as the reference does: pool n-gram g of length n
 * (min_gram_length <= n <= max_gram_length) is counted at every start i and skip distance
 * s = 1..max_skip_count + 1 where x[i], x[i + s], .., x[i + (n - 1) s] are g, unigrams once
 * (s = 1). Per (n, s): COPY slices of x shifted by t s, an elementwise nest over (batch, n-gram,
 * start) comparing them with the pool's columns (constants), summed over the starts; per n the
 * counts of its skips added, then spread to the output features by a constant one-hot table
 * (a select summed over the n-grams); a last nest applies TF, IDF or TFIDF with the weights. */
bd_status bd_lower_tfidf(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0")) || (s = bd_need_static(d, n, y, "output")))
        return s;
    if (x->dtype != BD_DT_INT32 && x->dtype != BD_DT_INT64)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported (strings "
                            "are not compiled)", bd_dtype_name(x->dtype));
    const bd_attr *pool = bd_node_attr(n, "pool_int64s"), *counts = bd_node_attr(n, "ngram_counts");
    const bd_attr *ix = bd_node_attr(n, "ngram_indexes"), *wa = bd_node_attr(n, "weights");
    if (!pool || pool->type != BD_ATTR_INTS || !counts || counts->type != BD_ATTR_INTS)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "only pool_int64s pools are supported");
    int64_t lo_n = bd_attr_int(n, "min_gram_length", 1), hi_n = bd_attr_int(n, "max_gram_length", 1);
    int64_t skips = bd_attr_int(n, "max_skip_count", 0);
    const char *ms = bd_attr_string(g, n, "mode", "TF");
    int mode = !strcmp(ms, "TF") ? 0 : !strcmp(ms, "IDF") ? 1 : !strcmp(ms, "TFIDF") ? 2 : -1;
    if (mode < 0 || lo_n < 1 || hi_n < lo_n || skips < 0 || skips > 64)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attributes mode '%s', gram lengths %lld..%lld "
                            "or max_skip_count %lld are not valid", bd_quote(ms),
                            (long long)lo_n, (long long)hi_n, (long long)skips);
    int r = x->rank, xdt = x->dtype;
    if ((r != 1 && r != 2) || y->rank != r)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 has rank %d and the output %d: expected "
                            "both 1 or both 2", r, y->rank);
    int64_t B = r == 2 ? x->dims[0] : 1, C = x->dims[r - 1], F = y->dims[r - 1], bc[2] = {B, C};
    int64_t bf[2] = {B, F};
    int xv = n->inputs[0], yv = n->outputs[0];
    /* (adding values moves x and y: only indices from here) */
    if (r == 1) { /* as one row */
        int x2 = bd_lower_temp(g, xdt, 2, bc);
        reshape_nest(p, node, xv, x2);
        xv = x2;
    }
    int parts[16], n_parts = 0;
    int64_t id = 0;
    for (int gi = 0; gi < counts->n; gi++) {
        int64_t len = gi + 1, start = counts->ints[gi];
        int64_t end = gi + 1 < counts->n ? counts->ints[gi + 1] : pool->n;
        if (start < 0 || end < start || end > pool->n)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'ngram_counts' does not split "
                                "the pool of %d values", pool->n);
        int64_t P = (end - start) / len, first = id;
        id += P;
        if (P == 0 || len < lo_n || len > hi_n) continue;
        if (len > 7 || n_parts == 14 || first + P > ix->n || end > pool->n)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%lld-grams (or that many lengths) are "
                                "not supported", (long long)len);
        int cols[7], sums[66], n_sums = 0;
        for (int t = 0; t < len; t++) { /* column t of the pool's n-grams */
            bd_tensor *c = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &P);
            if (!c) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the pool");
            for (int64_t k = 0; k < P; k++) ((int64_t *)c->data)[k] = pool->ints[start + k * len + t];
            cols[t] = bd_lower_temp(g, BD_DT_INT64, 1, &P);
            bd_graph_value(g, cols[t])->constant = c;
        }
        for (int64_t sd = 1; sd <= skips + 1; sd++) {
            int64_t least = sd == 1 ? lo_n : (lo_n > 2 ? lo_n : 2), L = C - (len - 1) * sd;
            if (len < least || L <= 0) continue;
            int64_t bl[2] = {B, L}, bpl[3] = {B, P, L};
            if ((s = bd_need_table(d, n, B * P * L, "the n-gram comparisons"))) return s;
            int sl[7];
            for (int t = 0; t < len; t++) {
                sl[t] = bd_lower_temp(g, xdt, 2, bl);
                slice_nest(p, node, xv, sl[t], 1, t * sd);
            }
            int hits = bd_lower_temp(g, BD_DT_INT64, 3, bpl);
            bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, hits));
            for (int t = 0; t < len; t++) {
                bd_operand *o = bd_nest_operand(nest, sl[t], false, 2);
                o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
                o->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, 2, 1, 0, 0};
                bd_nest_operand(nest, cols[t], false, 1)->dims[0] =
                    (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
            }
            bd_access_identity(bd_nest_operand(nest, hits, true, 3), 0);
            bd_expr *e = BD_NEST_PARAMS(nest, expr);
            int all = -1;
            for (int t = 0; t < len; t++) {
                int eq = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL,
                                        bd_expr_cast(e, BD_DT_INT64, bd_expr_load(e, 2 * t, xdt)),
                                        bd_expr_load(e, 2 * t + 1, BD_DT_INT64));
                all = all < 0 ? eq : bd_expr_binary(e, BD_EXPR_AND, BD_DT_BOOL, all, eq);
            }
            bd_expr_compact(e, bd_expr_select(e, BD_DT_INT64, all, bd_expr_const(e, 1, BD_DT_INT64),
                                              bd_expr_const(e, 0, BD_DT_INT64)));
            bool over_l[3] = {false, false, true};
            int64_t bp[2] = {B, P};
            sums[n_sums] = bd_lower_temp(g, BD_DT_INT64, 2, bp);
            reduce_nest(p, node, hits, sums[n_sums++], BD_REDUCE_SUM, over_l);
        }
        if (n_sums == 0) continue;
        int64_t bp[2] = {B, P};
        while (n_sums > 1) { /* the skips' counts added, up to 15 at a time */
            int take = n_sums < 15 ? n_sums : 15, sum = bd_lower_temp(g, BD_DT_INT64, 2, bp);
            bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, sum));
            for (int k = 0; k < take; k++)
                bd_access_identity(bd_nest_operand(nest, sums[n_sums - take + k], false, 2), 0);
            bd_access_identity(bd_nest_operand(nest, sum, true, 2), 0);
            bd_expr *e = BD_NEST_PARAMS(nest, expr);
            int v = bd_expr_load(e, 0, BD_DT_INT64);
            for (int k = 1; k < take; k++)
                v = bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, v, bd_expr_load(e, k, BD_DT_INT64));
            bd_expr_compact(e, v);
            n_sums -= take;
            sums[n_sums++] = sum;
        }
        /* spread to the features: [B, F, P] selects summed over P */
        int64_t fp[2] = {F, P}, bfp[3] = {B, F, P};
        if ((s = bd_need_table(d, n, B * F * P, "the n-grams' features"))) return s;
        bd_tensor *hot = bd_tensor_new(&g->model->arena, BD_DT_BOOL, 2, fp);
        if (!hot) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the feature table");
        for (int64_t k = 0; k < P; k++) {
            int64_t f = ix->ints[first + k];
            if (f < F) ((uint8_t *)hot->data)[f * P + k] = 1;
        }
        int hv = bd_lower_temp(g, BD_DT_BOOL, 2, fp), spread = bd_lower_temp(g, BD_DT_INT64, 3, bfp);
        bd_graph_value(g, hv)->constant = hot;
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, spread));
        bd_operand *o = bd_nest_operand(nest, sums[0], false, 2);
        o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
        o->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, 2, 1, 0, 0};
        o = bd_nest_operand(nest, hv, false, 2);
        o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
        o->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, 2, 1, 0, 0};
        bd_access_identity(bd_nest_operand(nest, spread, true, 3), 0);
        bd_expr *e = BD_NEST_PARAMS(nest, expr);
        bd_expr_compact(e, bd_expr_select(e, BD_DT_INT64, bd_expr_load(e, 1, BD_DT_BOOL),
                                          bd_expr_load(e, 0, BD_DT_INT64),
                                          bd_expr_const(e, 0, BD_DT_INT64)));
        bool over_p[3] = {false, false, true};
        parts[n_parts] = bd_lower_temp(g, BD_DT_INT64, 2, bf);
        reduce_nest(p, node, spread, parts[n_parts++], BD_REDUCE_SUM, over_p);
    }
    /* the weighting, over [B, F] (written through a [B, F] value for 1-D input) */
    int out = r == 1 ? bd_lower_temp(g, BD_DT_FLOAT, 2, bf) : yv, wv = -1;
    if (wa && wa->type == BD_ATTR_FLOATS && wa->n > 0 && mode != 0) {
        if (wa->n < F)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'weights' has %d values for %lld "
                                "features", wa->n, (long long)F);
        bd_tensor *w = bd_tensor_new(&g->model->arena, BD_DT_FLOAT, 1, &F);
        if (!w) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the weights");
        for (int64_t k = 0; k < F; k++) ((float *)w->data)[k] = wa->floats[k];
        wv = bd_lower_temp(g, BD_DT_FLOAT, 1, &F);
        bd_graph_value(g, wv)->constant = w;
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
    for (int k = 0; k < n_parts; k++) bd_access_identity(bd_nest_operand(nest, parts[k], false, 2), 0);
    if (wv >= 0)
        bd_nest_operand(nest, wv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, out, true, 2), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int fr = n_parts ? bd_expr_load(e, 0, BD_DT_INT64) : bd_expr_const(e, 0, BD_DT_INT64);
    for (int k = 1; k < n_parts; k++)
        fr = bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, fr, bd_expr_load(e, k, BD_DT_INT64));
    int ff = bd_expr_cast(e, BD_DT_FLOAT, fr), wt = wv >= 0 ? bd_expr_load(e, n_parts, BD_DT_FLOAT)
                                                           : bd_expr_const(e, 1, BD_DT_FLOAT);
    int v = ff;
    if (mode == 1)
        v = bd_expr_select(e, BD_DT_FLOAT,
                           bd_expr_binary(e, BD_EXPR_GREATER, BD_DT_BOOL, fr,
                                          bd_expr_const(e, 0, BD_DT_INT64)),
                           wt, bd_expr_const(e, 0, BD_DT_FLOAT));
    else if (mode == 2)
        v = bd_expr_binary(e, BD_EXPR_MUL, BD_DT_FLOAT, wt, ff);
    bd_expr_compact(e, v);
    if (r == 1) reshape_nest(p, node, out, yv);
    return BD_OK;
}

/* ---------------------------------------------------------------- LpNormalization */

/* LpNormalization: x / ||x||_p along the axis (p = 1: the sum of |x|; 2: the root of the sum of
 * squares), 0 where the norm is 0: a map, a REDUCE SUM keeping the axis, and an elementwise
 * nest. */
bd_status bd_lower_lp_normalization(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    int dt = x->dtype, r = x->rank, axis;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    int64_t pw = bd_attr_int(n, "p", 2);
    if (r < 1 || !bd_norm_axis(bd_attr_int(n, "axis", -1), r, &axis) || (pw != 1 && pw != 2))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' or 'p' (1 or 2) is out of "
                            "range");
    int64_t xd[BD_MAX_RANK], kept[BD_MAX_RANK];
    for (int k = 0; k < r; k++) xd[k] = x->dims[k], kept[k] = k == axis ? 1 : x->dims[k];
    if (xd[axis] == 0) return BD_OK;
    int xv = n->inputs[0], yv = n->outputs[0];
    /* (adding values moves x and y: only indices from here) */
    int mapped = bd_lower_temp(g, dt, r, xd), sum = bd_lower_temp(g, dt, r, kept);
    map_nest(p, node, xv, mapped, pw == 1 ? BD_EXPR_ABS : BD_EXPR_MUL);
    bool reduced[BD_MAX_RANK] = {false};
    reduced[axis] = true;
    reduce_nest(p, node, mapped, sum, BD_REDUCE_SUM, reduced);
    const bd_value *yy = bd_graph_value(g, yv);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, yy);
    bd_access_identity(bd_nest_operand(nest, xv, false, r), 0);
    bd_access_broadcast(bd_nest_operand(nest, sum, false, r), bd_graph_value(g, sum), yy);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int nv = bd_expr_load(e, 1, dt);
    if (pw == 2) nv = bd_expr_unary(e, BD_EXPR_SQRT, dt, nv);
    int zero = bd_expr_const(e, 0, dt);
    bd_expr_compact(e, bd_expr_select(e, dt, bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, nv, zero),
                                      zero, bd_expr_binary(e, BD_EXPR_DIV, dt,
                                                           bd_expr_load(e, 0, dt), nv)));
    return BD_OK;
}

/* ---------------------------------------------------------------- DFT */

/* DFT as a product with constant tables, summed (n^2 work, which the sizes DFT sees in models
 * allow): over (.., k, n, .., c) the real and imaginary parts of the input at n (COPY slices of
 * its last dim) times tables A[c, k, n] and B[c, k, n] holding the cosines and sines of
 * 2 pi k n / N for output part c (forward, inverse / N, one-sided inverse with its Hermitian
 * weights 1, 2, .., 2, 1, as numpy's irfft), computed in double, then a REDUCE SUM over n and a
 * cast. The input is cut or padded (by leaving terms out) to dft_length. */
bd_status bd_lower_dft(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    int dt = x->dtype, r = x->rank, axis, D = BD_DT_DOUBLE;
    int64_t N, K;
    bool inv, one;
    if ((s = bd_dft_plan_of(g, n, d, &axis, &N, &K, &inv, &one))) return s;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    if (r + 1 > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input rank %d is above %d", r,
                            BD_MAX_RANK - 1);
    int64_t L = x->dims[axis], parts = x->dims[r - 1], C = y->dims[r - 1];
    int64_t M = inv && one ? N / 2 + 1 : N, terms = L < M ? L : M; /* input samples that count */
    int64_t xd[BD_MAX_RANK], wide[BD_MAX_RANK], yd[BD_MAX_RANK], tab[3] = {C, K, terms};
    int64_t numel;
    for (int k = 0; k < r; k++) xd[k] = x->dims[k], yd[k] = y->dims[k];
    for (int k = 0, o = 0; k < r; k++) {
        wide[o++] = yd[k];
        if (k == axis) wide[o++] = terms;
    }
    if (!bd_dims_numel(r + 1, wide, &numel)) numel = INT64_MAX;
    if (numel == 0 || terms == 0) return BD_OK;
    if ((s = bd_need_table(d, n, numel, "the products summed"))) return s;
    bd_tensor *ta = bd_tensor_new(&g->model->arena, D, 3, tab);
    bd_tensor *tb = bd_tensor_new(&g->model->arena, D, 3, tab);
    if (!ta || !tb) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the tables");
    const double pi = 3.14159265358979323846;
    for (int64_t c = 0; c < C; c++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < terms; j++) {
                /* forward: frequency k of sample j; inverse: sample k of frequency j */
                double th = 2 * pi * (double)((k * j) % N) / (double)N, cs = cos(th), sn = sin(th);
                double a, b, w = 1;
                if (!inv) {
                    a = c ? -sn : cs, b = c ? cs : sn;
                } else {
                    if (one) w = j == 0 || 2 * j == N ? 1.0 : 2.0;
                    a = (c ? sn : cs) * w / (double)N, b = (c ? cs : -sn) * w / (double)N;
                }
                int64_t i = (c * K + k) * terms + j;
                ((double *)ta->data)[i] = a;
                ((double *)tb->data)[i] = b;
            }
    int xv = n->inputs[0], yv = n->outputs[0];
    /* (adding values moves x and y: only indices from here) */
    int av = bd_lower_temp(g, D, 3, tab), bv = bd_lower_temp(g, D, 3, tab);
    bd_graph_value(g, av)->constant = ta;
    bd_graph_value(g, bv)->constant = tb;
    int part[2] = {xv, -1};
    if (parts == 2) { /* the real and imaginary parts, [.., 1] each */
        int64_t pd[BD_MAX_RANK];
        for (int k = 0; k < r; k++) pd[k] = k == r - 1 ? 1 : xd[k];
        for (int c = 0; c < 2; c++) {
            part[c] = bd_lower_temp(g, dt, r, pd);
            slice_nest(p, node, xv, part[c], r - 1, c);
        }
    }
    int prod = bd_lower_temp(g, D, r + 1, wide);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, prod));
    for (int c = 0; c < (parts == 2 ? 2 : 1); c++) {
        bd_operand *o = bd_nest_operand(nest, part[c], false, r);
        for (int k = 0; k < r; k++)
            o->dims[k] = k == r - 1 ? (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0}
                                    : (bd_access_dim){BD_ACCESS_AFFINE, k < axis ? k : k + 1, 1, 0, 0};
    }
    for (int t = 0; t < 2; t++) {
        bd_operand *o = bd_nest_operand(nest, t ? bv : av, false, 3);
        o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, r, 1, 0, 0};
        o->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
        o->dims[2] = (bd_access_dim){BD_ACCESS_AFFINE, axis + 1, 1, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, prod, true, r + 1), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int np_ = parts == 2 ? 2 : 1;
    int v = bd_expr_binary(e, BD_EXPR_MUL, D, bd_expr_cast(e, D, bd_expr_load(e, 0, dt)),
                           bd_expr_load(e, np_, D));
    if (parts == 2)
        v = bd_expr_binary(e, BD_EXPR_ADD, D, v,
                           bd_expr_binary(e, BD_EXPR_MUL, D,
                                          bd_expr_cast(e, D, bd_expr_load(e, 1, dt)),
                                          bd_expr_load(e, np_ + 1, D)));
    bd_expr_compact(e, v);
    bool reduced[BD_MAX_RANK] = {false};
    reduced[axis + 1] = true;
    int sum = dt == D ? yv : bd_lower_temp(g, D, r, yd);
    reduce_nest(p, node, prod, sum, BD_REDUCE_SUM, reduced);
    if (sum != yv) {
        nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
        bd_access_identity(bd_nest_operand(nest, sum, false, r), 0);
        bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
        e = BD_NEST_PARAMS(nest, expr);
        bd_expr_compact(e, bd_expr_cast(e, dt, bd_expr_load(e, 0, D)));
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- GroupNormalization */

/* GroupNormalization over x viewed as [N, G, C / G, spatial] (reshape copies): the group's mean,
 * then the mean of the squared deviations (REDUCE MEAN nests keeping the dims), and y = (x - mean)
 * / sqrt(var + epsilon) * scale + bias with scale and bias per channel (opset 21; viewed as
 * [G, C / G]) or per group (opset 18), reshaped back. */
bd_status bd_lower_group_norm(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0 (X)", "output", &n, &x, &y, &s)) return s;
    bd_value *sc = bd_node_in(g, n, 1), *bi = bd_node_in(g, n, 2);
    if ((s = bd_need_static(d, n, sc, "input 1 (scale)")) ||
        (s = bd_need_static(d, n, bi, "input 2 (bias)")))
        return s;
    int dt = x->dtype, r = x->rank;
    int64_t G = bd_attr_int(n, "num_groups", 0), C = r >= 2 ? x->dims[1] : 0, S = 1;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input dtype %s is not supported",
                            bd_dtype_name(dt));
    if (r < 2 || G < 1 || C % G != 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "num_groups %lld does not divide the %lld "
                            "channels", (long long)G, (long long)C);
    bool per_channel = n->opset >= 21;
    if (sc->rank != 1 || bi->rank != 1 || sc->dims[0] != (per_channel ? C : G) ||
        bi->dims[0] != sc->dims[0])
        return bd_node_fail(d, BD_ERR_INVALID, n, "scale and bias must hold %lld values",
                            (long long)(per_channel ? C : G));
    for (int k = 2; k < r; k++) S *= x->dims[k];
    if (x->dims[0] * C * S == 0) return BD_OK;
    double eps = bd_attr_float(n, "epsilon", 1e-5f);
    int64_t v4[4] = {x->dims[0], G, C / G, S}, m4[4] = {x->dims[0], G, 1, 1}, gc[2] = {G, C / G};
    int xv = n->inputs[0], sv = n->inputs[1], bv = n->inputs[2], yv = n->outputs[0];
    /* (adding values moves x, y, sc and bi: only indices from here) */
    int x4 = bd_lower_temp(g, dt, 4, v4), mean = bd_lower_temp(g, dt, 4, m4);
    int dev = bd_lower_temp(g, dt, 4, v4), sq = bd_lower_temp(g, dt, 4, v4);
    int var = bd_lower_temp(g, dt, 4, m4), y4 = bd_lower_temp(g, dt, 4, v4);
    reshape_nest(p, node, xv, x4);
    bool reduced[4] = {false, false, true, true};
    reduce_nest(p, node, x4, mean, BD_REDUCE_MEAN, reduced);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, dev));
    bd_access_identity(bd_nest_operand(nest, x4, false, 4), 0);
    bd_access_broadcast(bd_nest_operand(nest, mean, false, 4), bd_graph_value(g, mean),
                        bd_graph_value(g, dev));
    bd_access_identity(bd_nest_operand(nest, dev, true, 4), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_SUB, dt, bd_expr_load(e, 0, dt),
                                      bd_expr_load(e, 1, dt)));
    map_nest(p, node, dev, sq, BD_EXPR_MUL);
    reduce_nest(p, node, sq, var, BD_REDUCE_MEAN, reduced);
    int scv = sv, biv = bv;
    if (per_channel) { /* [C] as [G, C / G] */
        scv = bd_lower_temp(g, bd_graph_value(g, sv)->dtype, 2, gc);
        biv = bd_lower_temp(g, bd_graph_value(g, bv)->dtype, 2, gc);
        reshape_nest(p, node, sv, scv);
        reshape_nest(p, node, bv, biv);
    }
    nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, y4));
    bd_access_identity(bd_nest_operand(nest, dev, false, 4), 0);
    bd_access_broadcast(bd_nest_operand(nest, var, false, 4), bd_graph_value(g, var),
                        bd_graph_value(g, y4));
    for (int t = 0; t < 2; t++) {
        bd_operand *o = bd_nest_operand(nest, t ? biv : scv, false, per_channel ? 2 : 1);
        o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
        if (per_channel) o->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, 2, 1, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, y4, true, 4), 0);
    e = BD_NEST_PARAMS(nest, expr);
    int den = bd_expr_unary(e, BD_EXPR_SQRT, dt, bd_expr_binary(e, BD_EXPR_ADD, dt,
                                                                 bd_expr_load(e, 1, dt),
                                                                 bd_expr_const(e, eps, dt)));
    int v = bd_expr_binary(e, BD_EXPR_DIV, dt, bd_expr_load(e, 0, dt), den);
    v = bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_binary(e, BD_EXPR_MUL, dt, v,
                                                          bd_expr_load(e, 2, dt)),
                       bd_expr_load(e, 3, dt));
    bd_expr_compact(e, v);
    reshape_nest(p, node, y4, yv);
    return BD_OK;
}
