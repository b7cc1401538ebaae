/* data.c — lowering of the ops that move data without computing on it: Identity, Dropout
 * (inference), Reshape, Flatten, Squeeze, Unsqueeze, Transpose, DepthToSpace, SpaceToDepth, Slice,
 * Expand, Tile, OneHot, Concat, Split, Pad, Gather, GatherElements, GatherND, Compress,
 * ReverseSequence, CenterCropPad, Resize, AffineGrid, GridSample and RoiAlign.
 *
 * Most of them become one COPY nest, a strided remap whose strides live in bd_copy_params
 * (nest/params.h). The access maps say exactly what each block reads: a transpose reads its input
 * along permuted iteration dims, a slice at scale `step` and offset `start`, an expand at index 0
 * along broadcast dims. A reshape is split into groups of dims whose extents multiply to the same
 * count on both sides: a dim that keeps its extent maps 1:1; an input dim split into several output
 * dims maps affinely from the outermost of them while the tile keeps the inner ones whole; merged
 * or reshuffled dims are FULL when the block covers the group whole, else OPAQUE (these maps follow
 * the tile: bd_nest_set_tile recomputes them).
 *
 * Concat and Split do not gather into or scatter from a separate buffer: Concat becomes one nest
 * per input writing its slice of the output (an AFFINE write with the concat offset), Split one
 * nest per output reading its slice, so each piece depends only on the producer blocks it touches
 * and the concat itself disappears. Pad, Gather, Resize and RoiAlign have their own bodies;
 * Resize's sampling tables (resize_table for nearest and linear, resize_filter for cubic and
 * antialiased linear, whose windows of taps follow the spec's reference implementation) are
 * computed here, once: to find the dims it leaves alone, and into the program's arena for the
 * printer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

/* ---------------------------------------------------------------- shared helpers */

static int64_t numel_of(const bd_value *v) {
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++) n *= v->dims[i];
    return n;
}

/* One spelling of a string attribute and the enum value it stands for. */
typedef struct attr_choice {
    const char *name;
    int value;
} attr_choice;

/* The value of string attribute `attr` (default `dflt`) among `count` choices; an unknown
 * spelling is unsupported (inference has already refused the ones the spec does not list). */
static bd_status attr_enum(bd_graph *g, const bd_node *n, bd_diag *d, const char *attr,
                           const char *dflt, const attr_choice *choices, size_t count, int *out) {
    const char *s = bd_attr_string(g, n, attr, dflt);
    for (size_t i = 0; i < count; i++)
        if (strcmp(s, choices[i].name) == 0) {
            *out = choices[i].value;
            return BD_OK;
        }
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute '%s' '%s' is not supported", attr,
                        bd_quote(s));
}

static bd_copy_params *copy_params(bd_nest *nest) {
    bd_copy_params *cp = BD_NEST_PARAMS(nest, copy);
    memset(cp, 0, sizeof *cp);
    return cp;
}

/* A COPY nest over the output y reading x through per-iteration-dim strides. */
static bd_nest *copy_nest(bd_program *p, int node, int xv, int yv) {
    bd_graph *g = p->graph;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, bd_graph_value(g, yv));
    bd_value *x = bd_graph_value(g, xv);
    bd_nest_operand(nest, xv, false, x->rank);
    return nest;
}

static void copy_finish(bd_nest *nest, int yv, int rank) {
    bd_access_identity(bd_nest_operand(nest, yv, true, rank), 0);
}

/* ---------------------------------------------------------------- Reshape family */

/* Reshape x -> y (same element count, row-major order kept): one COPY nest over y with access
 * maps through dim groups (see the file comment). */
static bd_status lower_reshape_copy(bd_program *p, int node, int xv, int yv) {
    bd_graph *g = p->graph;
    bd_value *x = bd_graph_value(g, xv), *y = bd_graph_value(g, yv);
    if (numel_of(y) == 0) return BD_OK;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, y);
    bd_nest_operand(nest, xv, false, x->rank);

    copy_finish(nest, yv, y->rank);

    bd_copy_params *cp = copy_params(nest);
    bd_dims_strides(y->rank, y->dims, cp->in_stride);
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
    cp->reshape = true;
    bd_nest_set_tile(g, nest, nest->tile); /* x's map, which follows the tile (nest.c) */
    return BD_OK;
}

void bd_lower_fill(bd_program *p, int node, int yv, double value) {
    bd_value *y = bd_graph_value(p->graph, yv);
    if (numel_of(y) == 0) return;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, y);
    copy_finish(nest, yv, y->rank);
    bd_copy_params *cp = copy_params(nest);
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
    cp->fill = true;
    cp->fill_value = value;
}

/* Dropout runs as the identity unless training_mode may be true; a training-mode dropout with ratio
 * 0 is the identity too. */
static bd_status dropout_check(bd_graph *g, const bd_node *n, bd_diag *d) {
    if (n->opset < 12) return BD_OK;
    const bd_value *training = bd_node_in(g, n, 2), *ratio = bd_node_in(g, n, 1);
    if (!training) return BD_OK;
    if (!training->constant)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 2 (training_mode) is not a "
                            "compile-time constant; only inference-mode Dropout is supported");
    if (!bd_tensor_get_i64(training->constant, 0)) return BD_OK;
    double r = 0.5;
    if (ratio) {
        if (!ratio->constant)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 2 (training_mode) is true and "
                                "input 1 (ratio) is not a constant: random dropout is not supported");
        r = bd_tensor_get_f64(ratio->constant, 0);
    }
    if (r != 0)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 2 (training_mode) is true with ratio "
                            "%g: random (training-mode) dropout is not supported", r);
    return BD_OK;
}

bd_status bd_lower_reshape(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_status s;
    if (n->op == BD_OP_DROPOUT && (s = dropout_check(g, n, d))) return s;
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    if (y && !y->constant) {
        if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, x, "input 0")))
            return s;
        if (numel_of(x) != numel_of(y))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input and output element counts differ");
        if ((s = lower_reshape_copy(p, node, n->inputs[0], n->outputs[0]))) return s;
    }
    bd_value *mask = n->op == BD_OP_DROPOUT ? bd_node_out(g, n, 1) : NULL;
    if (mask && !mask->constant) {
        if ((s = bd_need_static(d, n, mask, "output 1 (mask)"))) return s;
        /* From opset 12 the mask says which elements were kept: all of them. Before, onnxruntime
         * (whose numbers bdc matches) fills it with zeros ("nothing dropped"). */
        bd_lower_fill(p, node, n->outputs[1], n->opset >= 12 ? 1.0 : 0.0);
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- Transpose */

/* y = x transposed by perm (output dim i is input dim perm[i]): one COPY nest. */
static void transpose_copy(bd_program *p, int node, int xv, int yv, const int *perm) {
    bd_nest *nest = copy_nest(p, node, xv, yv);
    const bd_value *x = bd_graph_value(p->graph, xv), *y = bd_graph_value(p->graph, yv);
    int r = x->rank;
    bd_operand *xo = &nest->operands[0];
    for (int i = 0; i < r; i++) xo->dims[perm[i]] = (bd_access_dim){BD_ACCESS_AFFINE, i, 1, 0, 0};
    copy_finish(nest, yv, r);
    bd_copy_params *cp = copy_params(nest);
    int64_t xs[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    for (int i = 0; i < r; i++) cp->in_stride[i] = y->dims[i] > 1 ? xs[perm[i]] : 0;
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
}

bd_status bd_lower_transpose(bd_program *p, int node, bd_diag *d) {
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    int r = x->rank, perm[BD_MAX_RANK];
    const bd_attr *a = bd_node_attr(n, "perm");
    for (int i = 0; i < r; i++) perm[i] = a ? (int)a->ints[i] : r - 1 - i;
    if (numel_of(y) == 0) return BD_OK;
    transpose_copy(p, node, n->inputs[0], n->outputs[0], perm);
    return BD_OK;
}

/* ---------------------------------------------------------------- DepthToSpace, SpaceToDepth */

/* Both are a reshape to 6 dims, a transpose and a reshape back, as the spec defines them: three
 * COPY nests through two unnamed values. With b the block size,
 *   DepthToSpace DCR: [N, b, b, C/b^2, H, W] -> perm 0 3 4 1 5 2 -> [N, C/b^2, H, b, W, b]
 *   DepthToSpace CRD: [N, C/b^2, b, b, H, W] -> perm 0 1 4 2 5 3 -> [N, C/b^2, H, b, W, b]
 *   SpaceToDepth:     [N, C, H/b, b, W/b, b] -> perm 0 3 5 1 2 4 -> [N, b, b, C, H/b, W/b] */
bd_status bd_lower_depth_space(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input", "output", &n, &x, &y, &s)) return s;
    if (numel_of(y) == 0) return BD_OK;
    int64_t b = bd_attr_int(n, "blocksize", 0);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t view[6], moved[6];
    int perm[6];
    if (n->op == BD_OP_DEPTH_TO_SPACE) {
        bool crd = n->opset >= 11 && strcmp(bd_attr_string(g, n, "mode", "DCR"), "CRD") == 0;
        int64_t c = C / (b * b);
        int64_t dcr[6] = {N, b, b, c, H, W}, crd_view[6] = {N, c, b, b, H, W};
        int pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
        memcpy(view, crd ? crd_view : dcr, sizeof view);
        memcpy(perm, crd ? pc : pd, sizeof perm);
    } else {
        int64_t v[6] = {N, C, H / b, b, W / b, b};
        int ps[6] = {0, 3, 5, 1, 2, 4};
        memcpy(view, v, sizeof view);
        memcpy(perm, ps, sizeof perm);
    }
    for (int i = 0; i < 6; i++) moved[i] = view[perm[i]];
    int dt = x->dtype, in = n->inputs[0], out = n->outputs[0];
    int t1 = bd_graph_add_value(g, ""), t2 = bd_graph_add_value(g, ""); /* unnamed: never I/O */
    int64_t *shapes[2] = {view, moved};
    for (int k = 0; k < 2; k++) {
        bd_value *t = bd_graph_value(g, k ? t2 : t1);
        t->dtype = dt;
        t->rank = 6;
        memcpy(t->dims, shapes[k], 6 * sizeof(int64_t));
    }
    if ((s = lower_reshape_copy(p, node, in, t1))) return s;
    transpose_copy(p, node, t1, t2, perm);
    return lower_reshape_copy(p, node, t2, out);
}

/* ---------------------------------------------------------------- Slice */

bd_status bd_lower_slice(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    bd_slice_plan plan;
    if ((s = bd_slice_plan_of(g, n, d, &plan))) return s;
    int r = x->rank;
    const int64_t *start = plan.start, *step = plan.step;
    for (int k = 0; k < r; k++)
        if (plan.dims[k] != y->dims[k])
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: slice has %lld elements, the "
                                "output %lld", k, (long long)plan.dims[k], (long long)y->dims[k]);
    if (numel_of(y) == 0) return BD_OK;
    bd_nest *nest = copy_nest(p, node, n->inputs[0], n->outputs[0]);
    bd_operand *xo = &nest->operands[0];
    bd_copy_params *cp = copy_params(nest);
    int64_t xs[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    for (int k = 0; k < r; k++) {
        cp->in_base += start[k] * xs[k];
        if (y->dims[k] > 1) {
            cp->in_stride[k] = xs[k] * step[k];
            xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k, step[k], start[k], 0};
        } else {
            xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, start[k], 0};
        }
    }
    copy_finish(nest, n->outputs[0], r);
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
    return BD_OK;
}

/* ---------------------------------------------------------------- Expand */

bd_status bd_lower_expand(bd_program *p, int node, bd_diag *d) {
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    if (numel_of(y) == 0) return BD_OK;
    bd_nest *nest = copy_nest(p, node, n->inputs[0], n->outputs[0]);
    bd_access_broadcast(&nest->operands[0], x, y);
    copy_finish(nest, n->outputs[0], y->rank);
    bd_copy_params *cp = copy_params(nest);
    int64_t xs[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    int shift = y->rank - x->rank;
    for (int i = 0; i < y->rank; i++) {
        int xi = i - shift;
        cp->in_stride[i] = xi >= 0 && x->dims[xi] != 1 ? xs[xi] : 0;
    }
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
    return BD_OK;
}

/* ---------------------------------------------------------------- Tile and OneHot */

/* Tile: y viewed as [r0, d0, r1, d1, ...] (r repeats of each input extent d) is x broadcast along
 * the r dims, one COPY nest into an unnamed value of that shape; a reshape copy makes it y. */
bd_status bd_lower_tile(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    if (numel_of(y) == 0) return BD_OK;
    int r = x->rank;
    if (2 * r > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input rank %d is above %d, the most Tile "
                            "supports", r, BD_MAX_RANK / 2);
    int64_t view[BD_MAX_RANK], xs[BD_MAX_RANK];
    for (int k = 0; k < r; k++) view[2 * k] = y->dims[k] / x->dims[k], view[2 * k + 1] = x->dims[k];
    bd_dims_strides(r, x->dims, xs);
    int dt = x->dtype, in = n->inputs[0], out = n->outputs[0];
    int t = bd_graph_add_value(g, ""); /* unnamed: never looked up, never an I/O */
    bd_value *tv = bd_graph_value(g, t);
    tv->dtype = dt;
    tv->rank = 2 * r;
    memcpy(tv->dims, view, (size_t)(2 * r) * sizeof *view);
    bd_nest *nest = copy_nest(p, node, in, t);
    bd_operand *xo = &nest->operands[0];
    for (int k = 0; k < r; k++) xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, 2 * k + 1, 1, 0, 0};
    copy_finish(nest, t, 2 * r);
    bd_copy_params *cp = copy_params(nest);
    for (int k = 0; k < r; k++) cp->in_stride[2 * k + 1] = view[2 * k + 1] > 1 ? xs[k] : 0;
    bd_dims_strides(2 * r, view, cp->out_stride);
    return lower_reshape_copy(p, node, t, out);
}

/* A one-element unnamed value holding element `index` of the 1-D value v (a COPY nest). */
static int element_of(bd_program *p, int node, int v, int64_t index) {
    bd_graph *g = p->graph;
    int t = bd_graph_add_value(g, "");
    bd_value *tv = bd_graph_value(g, t);
    tv->dtype = bd_graph_value(g, v)->dtype;
    tv->rank = 1;
    tv->dims[0] = 1;
    bd_nest *nest = copy_nest(p, node, v, t);
    nest->operands[0].dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, index, 0};
    copy_finish(nest, t, 1);
    bd_copy_params *cp = copy_params(nest);
    cp->in_base = index;
    cp->out_stride[0] = 1;
    return t;
}

/* OneHot, as the reference computes it: element (.., i, ..) along axis is `on` where
 * mod(index, depth) == i, else `off`. One elementwise nest over y reads the index (its dims are
 * y's without axis), the constant range 0..depth-1 along axis, and off and on, each a one-element
 * copy of the values input so that they may be run-time data. */
bd_status bd_lower_one_hot(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *ind = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0), *vals = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, ind, "input 0")) ||
        (s = bd_need_static(d, n, vals, "input 2 (values)")))
        return s;
    if (numel_of(vals) != 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (values) must hold 2 elements (off, "
                            "on)");
    if (numel_of(y) == 0) return BD_OK;
    int it = ind->dtype;
    if (!(bd_dtype_is_int(it) || it == BD_DT_FLOAT || it == BD_DT_DOUBLE))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "indices of dtype %s are not supported",
                            bd_dtype_name(it));
    int64_t a = bd_attr_int(n, "axis", -1); /* inference checked it */
    int axis = (int)(a < 0 ? a + y->rank : a);
    int64_t depth = y->dims[axis];
    if ((s = bd_need_table(d, n, depth, "the index range"))) return s;
    bd_tensor *range = bd_tensor_new(&g->model->arena, it, 1, &depth);
    if (!range) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index range");
    for (int64_t i = 0; i < depth; i++) bd_tensor_set_f64(range, i, (double)i);
    int values = n->inputs[2], iv = n->inputs[0], yv = n->outputs[0];
    int rv = bd_graph_add_value(g, ""); /* unnamed: never looked up, never an I/O */
    bd_value *r = bd_graph_value(g, rv);
    r->dtype = it;
    r->rank = 1;
    r->dims[0] = depth;
    r->constant = range;
    int off = element_of(p, node, values, 0), on = element_of(p, node, values, 1);
    y = bd_graph_value(g, yv);
    ind = bd_graph_value(g, iv);
    int vdt = y->dtype, irank = ind->rank, yrank = y->rank;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, y);
    bd_operand *io = bd_nest_operand(nest, iv, false, irank);
    for (int k = 0; k < irank; k++)
        io->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k < axis ? k : k + 1, 1, 0, 0};
    bd_nest_operand(nest, rv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    bd_nest_operand(nest, off, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    bd_nest_operand(nest, on, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    bd_access_identity(bd_nest_operand(nest, yv, true, yrank), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int idx = bd_expr_binary(e, BD_EXPR_MOD, it, bd_expr_load(e, 0, it),
                             bd_expr_const(e, (double)depth, it));
    int hit = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, idx, bd_expr_load(e, 1, it));
    int v = bd_expr_select(e, vdt, hit, bd_expr_load(e, 3, vdt), bd_expr_load(e, 2, vdt));
    if (e->overflow) return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "the expression is too large");
    bd_expr_compact(e, v);
    return BD_OK;
}

/* ---------------------------------------------------------------- ConstantOfShape */

/* Small results fold (infer/data.c); one too big to fold (or past the folding budget) is a
 * COPY nest broadcasting the one-element `value` (a constant value added to the graph) to y. */
bd_status bd_lower_constant_of_shape(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    if (bd_node_out(g, n, 0)->constant) return BD_OK;
    bd_status s = bd_need_static(d, n, bd_node_out(g, n, 0), "output");
    if (s || numel_of(bd_node_out(g, n, 0)) == 0) return s;
    const bd_attr *a = bd_node_attr(n, "value");
    bd_tensor *t = a && a->t ? a->t : bd_tensor_new(&g->model->arena, BD_DT_FLOAT, 0, NULL);
    int fill = bd_graph_add_value(g, ""); /* unnamed: never looked up, never an I/O */
    bd_value *fv = bd_graph_value(g, fill), *y = bd_node_out(g, n, 0);
    fv->dtype = t->dtype;
    fv->rank = t->rank;
    for (int i = 0; i < t->rank; i++) fv->dims[i] = t->dims[i];
    fv->constant = t;
    bd_nest *nest = copy_nest(p, node, fill, n->outputs[0]);
    bd_access_broadcast(&nest->operands[0], fv, y);
    copy_finish(nest, n->outputs[0], y->rank);
    bd_copy_params *cp = copy_params(nest); /* in_stride all 0: every element reads the value */
    bd_dims_strides(y->rank, y->dims, cp->out_stride);
    return BD_OK;
}

/* ---------------------------------------------------------------- Concat and Split */

bd_status bd_lower_concat(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output"))) return s;
    int axis;
    if (!bd_norm_axis(bd_attr_int(n, "axis", 0), y->rank, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    int64_t ys[BD_MAX_RANK], offset = 0;
    bd_dims_strides(y->rank, y->dims, ys);
    for (int k = 0; k < n->n_inputs; k++) {
        bd_value *x = bd_node_in(g, n, k);
        if ((s = bd_need_static(d, n, x, "input"))) return s;
        int64_t here = offset;
        offset += x->dims[axis];
        if (numel_of(x) == 0) continue;
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, x);
        nest->part = k;
        bd_access_identity(bd_nest_operand(nest, n->inputs[k], false, x->rank), 0);
        bd_operand *yo = bd_nest_operand(nest, n->outputs[0], true, y->rank);
        bd_access_identity(yo, 0);
        yo->dims[axis].offset = here;
            bd_copy_params *cp = copy_params(nest);
        bd_dims_strides(x->rank, x->dims, cp->in_stride);
        memcpy(cp->out_stride, ys, sizeof ys);
        cp->out_base = here * ys[axis];
    }
    if (offset != y->dims[axis])
        return bd_node_fail(d, BD_ERR_INVALID, n, "inputs do not add up to the output extent");
    return BD_OK;
}

/* The extent of every output of Split along the axis (present or omitted). */
static bd_status split_sizes(bd_graph *g, const bd_node *n, bd_diag *d, int axis, int64_t *sz) {
    const bd_value *x = bd_node_in(g, n, 0);
    int outs = n->n_outputs;
    int64_t dim = x->dims[axis];
    const bd_value *split_in = n->opset >= 13 ? bd_node_in(g, n, 1) : NULL;
    const bd_attr *split_attr = n->opset < 13 ? bd_node_attr(n, "split") : NULL;
    if (split_in) {
        if (!split_in->constant) return bd_fail_not_const(d, g, n, 1, "input 1 (split)");
        if (split_in->constant->numel != outs)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (split) has %lld values for %d "
                                "outputs", (long long)split_in->constant->numel, outs);
        for (int k = 0; k < outs; k++) sz[k] = bd_tensor_get_i64(split_in->constant, k);
        return BD_OK;
    }
    if (split_attr) {
        if (split_attr->type != BD_ATTR_INTS || split_attr->n != outs)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'split' needs one value per output");
        for (int k = 0; k < outs; k++) sz[k] = split_attr->ints[k];
        return BD_OK;
    }
    if (n->opset >= 18 && bd_node_attr(n, "num_outputs")) {
        int64_t chunk = dim / outs + (dim % outs != 0);
        for (int k = 0; k < outs; k++) sz[k] = k == outs - 1 ? dim - chunk * (outs - 1) : chunk;
        return BD_OK;
    }
    for (int k = 0; k < outs; k++) sz[k] = dim / outs;
    return BD_OK;
}

bd_status bd_lower_split(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0"))) return s;
    int axis;
    if (!bd_norm_axis(bd_attr_int(n, "axis", 0), x->rank, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    int64_t *sz = bd_arena_array(&g->model->arena, (size_t)n->n_outputs, sizeof *sz);
    if (!sz) return bd_node_fail(d, BD_ERR_IO, n, "out of memory");
    if ((s = split_sizes(g, n, d, axis, sz))) return s;
    int64_t xs[BD_MAX_RANK], offset = 0;
    bd_dims_strides(x->rank, x->dims, xs);
    for (int k = 0; k < n->n_outputs; k++) {
        int64_t here = offset;
        offset += sz[k];
        bd_value *y = bd_node_out(g, n, k);
        if (!y || y->constant) continue;
        if ((s = bd_need_static(d, n, y, "output"))) return s;
        if (y->dims[axis] != sz[k] || here + sz[k] > x->dims[axis])
            return bd_node_fail(d, BD_ERR_INVALID, n, "output %d does not match the split", k);
        if (numel_of(y) == 0) continue;
        bd_nest *nest = bd_nest_begin(p, node, BD_BODY_COPY, y);
        nest->part = k;
        bd_operand *xo = bd_nest_operand(nest, n->inputs[0], false, x->rank);
        bd_access_identity(xo, 0);
        xo->dims[axis].offset = here;
        copy_finish(nest, n->outputs[k], y->rank);
            bd_copy_params *cp = copy_params(nest);
        memcpy(cp->in_stride, xs, sizeof xs);
        cp->in_base = here * xs[axis];
        bd_dims_strides(y->rank, y->dims, cp->out_stride);
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- Pad */

bd_status bd_lower_pad(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    int r = x->rank;
    static const attr_choice pad_modes[] = {{"constant", BD_PAD_CONSTANT}, /* in enum order */
                                            {"reflect", BD_PAD_REFLECT},
                                            {"edge", BD_PAD_EDGE},
                                            {"wrap", BD_PAD_WRAP}};
    int mode = BD_PAD_CONSTANT;
    if ((s = attr_enum(g, n, d, "mode", "constant", pad_modes, BD_COUNT(pad_modes), &mode)))
        return s;
    bd_pad_mode m = (bd_pad_mode)mode;
    int64_t pads[2 * BD_MAX_RANK], axes[BD_MAX_RANK];
    int npads = 0, naxes = r;
    bool axes_given = false;
    const bd_value *cv = NULL;
    double value = 0;
    if (n->opset < 11) {
        const bd_attr *a = bd_node_attr(n, "pads");
        if (!a || a->type != BD_ATTR_INTS || a->n != 2 * r)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'pads' must hold 2 * rank ints");
        npads = a->n;
        memcpy(pads, a->ints, (size_t)npads * sizeof *pads);
        value = bd_attr_float(n, "value", 0.0f);
    } else {
        if (!bd_value_const_ints(bd_node_in(g, n, 1), pads, 2 * BD_MAX_RANK, &npads))
            return bd_fail_not_const(d, g, n, 1, "input 1 (pads)");
        cv = bd_node_in(g, n, 2);
        const bd_value *av = bd_node_in(g, n, 3);
        axes_given = av != NULL;
        if (av && !bd_value_const_ints(av, axes, BD_MAX_RANK, &naxes))
            return bd_fail_not_const(d, g, n, 3, "input 3 (axes)");
    }
    if (!axes_given)
        for (int i = 0; i < r; i++) axes[i] = i;
    if (npads != 2 * naxes)
        return bd_node_fail(d, BD_ERR_INVALID, n, "pads has %d values for %d axes", npads, naxes);

    bd_pad_params pp;
    memset(&pp, 0, sizeof pp);
    pp.mode = m;
    pp.value = value;
    pp.value_operand = -1;
    for (int k = 0; k < r; k++) pp.kept[k] = x->dims[k];
    int64_t head[BD_MAX_RANK] = {0}, tail[BD_MAX_RANK] = {0};
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!bd_norm_axis(axes[i], r, &a))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 3 (axes) value %lld is out of range",
                                (long long)axes[i]);
        head[a] = pads[i];
        tail[a] = pads[naxes + i];
    }
    for (int k = 0; k < r; k++) {
        pp.pad_lo[k] = head[k] > 0 ? head[k] : 0;
        pp.crop_lo[k] = head[k] < 0 ? -head[k] : 0;
        pp.kept[k] = x->dims[k] - pp.crop_lo[k] - (tail[k] < 0 ? -tail[k] : 0);
        if (pp.kept[k] < 0)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "axis %d: negative pads (%lld, %lld) "
                                "crop more than the extent %lld", k, (long long)head[k],
                                (long long)tail[k], (long long)x->dims[k]);
        if (pp.pad_lo[k] + pp.kept[k] + (tail[k] > 0 ? tail[k] : 0) != y->dims[k])
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: pads do not give the output extent", k);
        if (pp.kept[k] == 0 && m != BD_PAD_CONSTANT && y->dims[k] > 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: mode '%s' has no input element "
                                "to pad with", k, pad_modes[m].name);
    }
    if (numel_of(y) == 0) return BD_OK;

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_PAD, y);
    bd_operand *xo = bd_nest_operand(nest, n->inputs[0], false, r);
    for (int k = 0; k < r; k++) {
        bool padded = pp.pad_lo[k] > 0 || pp.pad_lo[k] + pp.kept[k] < y->dims[k];
        if (!padded || m == BD_PAD_CONSTANT)
            xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k, 1, pp.crop_lo[k] - pp.pad_lo[k], 0};
        else
            xo->dims[k] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
        if (x->dims[k] == 0 || pp.kept[k] == 0)
            xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0}; /* reads nothing */
    }
    if (cv && m == BD_PAD_CONSTANT) {
        pp.value_operand = nest->n_operands;
        bd_access_full(bd_nest_operand(nest, n->inputs[2], false, cv->rank));
    }
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, r), 0);
    *BD_NEST_PARAMS(nest, pad) = pp;
    return BD_OK;
}

/* ---------------------------------------------------------------- Gather */

bd_status bd_lower_gather(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, x, "input 0")) ||
        (s = bd_need_static(d, n, idx, "input 1 (indices)")))
        return s;
    int axis;
    if (!bd_norm_axis(bd_attr_int(n, "axis", 0), x->rank, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    if (numel_of(y) == 0) return BD_OK;
    if (x->dims[axis] == 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "gathers from an empty axis %d", axis);
    int q = idx->rank;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_GATHER, y);
    bd_operand *xo = bd_nest_operand(nest, n->inputs[0], false, x->rank);
    for (int k = 0; k < x->rank; k++) {
        if (k < axis) xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k, 1, 0, 0};
        else if (k == axis) xo->dims[k] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
        else xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k - 1 + q, 1, 0, 0};
    }
    /* Block b reads exactly the indices of its own output positions. */
    bd_access_identity(bd_nest_operand(nest, n->inputs[1], false, q), axis);
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, y->rank), 0);
    bd_gather_params *gp = BD_NEST_PARAMS(nest, gather);
    gp->axis = axis;
    gp->idx_rank = q;
    return BD_OK;
}

/* The GATHER that GatherElements and GatherND end with: output yv (rank r) reads the 1-D flat_x
 * at the flat indices flat_i (same shape as yv), computed by the nests before it. */
static void flat_gather(bd_program *p, int node, int flat_x, int flat_i, int yv, int r) {
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_GATHER, bd_graph_value(p->graph, yv));
    bd_nest_operand(nest, flat_x, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
    bd_access_identity(bd_nest_operand(nest, flat_i, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_gather_params *gp = BD_NEST_PARAMS(nest, gather);
    gp->axis = 0;
    gp->idx_rank = r;
}

/* GatherElements: y[p] = x[p with its axis coordinate replaced by idx[p]]. With x flattened,
 * that is element base(p) + idx[p] * stride(axis), where base(p) is p's offset in x without the
 * axis coordinate (a constant computed here): a reshape copy of x to 1-D, an elementwise nest of
 * the flat indices (negative indices count from the back), and a GATHER nest along axis 0 of the
 * flat data, which clamps them as it does for Gather. */
bd_status bd_lower_gather_elements(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, x, "input 0")) ||
        (s = bd_need_static(d, n, idx, "input 1 (indices)")))
        return s;
    int axis, r = x->rank, it = idx->dtype;
    if (it != BD_DT_INT32 && it != BD_DT_INT64) /* inference lets an undeclared dtype through */
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (indices) has dtype %s, expected int32 "
                            "or int64", bd_dtype_name(it));
    if (!bd_norm_axis(bd_attr_int(n, "axis", 0), r, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    if (numel_of(y) == 0) return BD_OK;
    if (x->dims[axis] == 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "gathers from an empty axis %d", axis);
    int64_t xs[BD_MAX_RANK], is[BD_MAX_RANK], idims[BD_MAX_RANK], total = numel_of(x);
    int64_t extent = x->dims[axis];
    bd_dims_strides(r, x->dims, xs);
    bd_dims_strides(r, idx->dims, is);
    for (int k = 0; k < r; k++) idims[k] = idx->dims[k];
    if ((s = bd_need_table(d, n, numel_of(idx), "the index offsets"))) return s;
    bd_tensor *base = bd_tensor_new(&g->model->arena, BD_DT_INT64, r, idims);
    if (!base) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the index offsets");
    for (int64_t i = 0; i < base->numel; i++) {
        int64_t off = 0;
        for (int k = 0; k < r; k++)
            if (k != axis) off += (i / is[k] % idims[k]) * xs[k];
        ((int64_t *)base->data)[i] = off;
    }
    int xv = n->inputs[0], iv = n->inputs[1], yv = n->outputs[0];
    int flat_x = bd_graph_add_value(g, ""), bv = bd_graph_add_value(g, ""); /* unnamed */
    int flat_i = bd_graph_add_value(g, "");
    bd_value *fx = bd_graph_value(g, flat_x), *b = bd_graph_value(g, bv);
    bd_value *fi = bd_graph_value(g, flat_i);
    fx->dtype = bd_graph_value(g, xv)->dtype, fx->rank = 1, fx->dims[0] = total;
    b->dtype = BD_DT_INT64, b->rank = r, b->constant = base;
    fi->dtype = BD_DT_INT64, fi->rank = r;
    memcpy(b->dims, idims, (size_t)r * sizeof *idims);
    memcpy(fi->dims, idims, (size_t)r * sizeof *idims);
    if ((s = lower_reshape_copy(p, node, xv, flat_x))) return s;

    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, flat_i));
    bd_access_identity(bd_nest_operand(nest, iv, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, bv, false, r), 0);
    bd_access_identity(bd_nest_operand(nest, flat_i, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int i = bd_expr_cast(e, BD_DT_INT64, bd_expr_load(e, 0, it));
    int neg = bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, i, bd_expr_const(e, 0, BD_DT_INT64));
    i = bd_expr_select(e, BD_DT_INT64, neg,
                       bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, i,
                                      bd_expr_const(e, (double)extent, BD_DT_INT64)), i);
    i = bd_expr_binary(e, BD_EXPR_MUL, BD_DT_INT64, i,
                       bd_expr_const(e, (double)xs[axis], BD_DT_INT64));
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, bd_expr_load(e, 1, BD_DT_INT64),
                                      i));

    flat_gather(p, node, flat_x, flat_i, yv, r);
    return BD_OK;
}

/* Compress with a constant condition: a GATHER of the selected indices (a compile-time table)
 * along the axis, of the input flattened (a reshape copy) when there is no axis. A condition
 * known only at run time would make the output's extent data: refused. */
bd_status bd_lower_compress(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *c = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if (!c->constant)
        return bd_fail_not_const(d, g, n, 1, "input 1 (condition), which decides the output's "
                                 "extent,");
    if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, x, "input 0")))
        return s;
    if (numel_of(y) == 0) return BD_OK;
    const bd_attr *a = bd_node_attr(n, "axis");
    int axis = 0;
    if (a && !bd_norm_axis(a->i, x->rank, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    int64_t len = 0, total = numel_of(x);
    for (int64_t i = 0; i < c->constant->numel; i++) len += bd_tensor_get_i64(c->constant, i) != 0;
    if ((s = bd_need_table(d, n, len, "the selected indices"))) return s;
    bd_tensor *sel = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &len);
    if (!sel) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the selected indices");
    for (int64_t i = 0, k = 0; i < c->constant->numel; i++)
        if (bd_tensor_get_i64(c->constant, i)) ((int64_t *)sel->data)[k++] = i;
    int xv = n->inputs[0], yv = n->outputs[0], r = a ? x->rank : 1;
    /* (adding values moves x, c and y: only indices from here) */
    int iv = bd_lower_temp(g, BD_DT_INT64, 1, &len);
    bd_graph_value(g, iv)->constant = sel;
    if (!a) {
        int fx = bd_lower_temp(g, bd_graph_value(g, xv)->dtype, 1, &total);
        if ((s = lower_reshape_copy(p, node, xv, fx))) return s;
        xv = fx;
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_GATHER, bd_graph_value(g, yv));
    bd_operand *xo = bd_nest_operand(nest, xv, false, r);
    bd_access_identity(xo, 0);
    xo->dims[axis] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
    bd_nest_operand(nest, iv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, axis, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, yv, true, r), 0);
    bd_gather_params *gp = BD_NEST_PARAMS(nest, gather);
    gp->axis = axis;
    gp->idx_rank = 1;
    return BD_OK;
}

/* CenterCropPad: one PAD nest, each dim cropped or padded (with zeros) around its centre as the
 * reference does (the odd element goes to the end). */
bd_status bd_lower_center_crop_pad(bd_program *p, int node, bd_diag *d) {
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    int r = x->rank;
    if (numel_of(y) == 0) return BD_OK;
    bd_pad_params pp;
    memset(&pp, 0, sizeof pp);
    pp.mode = BD_PAD_CONSTANT;
    pp.value_operand = -1;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_PAD, y);
    bd_operand *xo = bd_nest_operand(nest, n->inputs[0], false, r);
    for (int k = 0; k < r; k++) {
        int64_t dim = x->dims[k], want = y->dims[k];
        pp.kept[k] = dim < want ? dim : want;
        pp.crop_lo[k] = dim > want ? (dim - want) / 2 : 0;
        pp.pad_lo[k] = want > dim ? (want - dim) / 2 : 0;
        xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k, 1, pp.crop_lo[k] - pp.pad_lo[k], 0};
        if (dim == 0) xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, r), 0);
    *BD_NEST_PARAMS(nest, pad) = pp;
    return BD_OK;
}

/* ReverseSequence: y[.., t, .., b, ..] = x[.., t < len[b] ? len[b] - 1 - t : t, .., b, ..], as
 * GatherElements does it: a compile-time table of each element's flat offset without its time
 * coordinate, an elementwise nest adding the source time times its stride (len read along the
 * batch iteration dim, t from a table of time indices), and a GATHER from the flattened input. */
bd_status bd_lower_reverse_sequence(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    if ((s = bd_need_static(d, n, bd_node_in(g, n, 1), "input 1 (sequence_lens)"))) return s;
    int ba = (int)bd_attr_int(n, "batch_axis", 1), ta = (int)bd_attr_int(n, "time_axis", 0);
    int r = x->rank, dt = x->dtype;
    int64_t xd[BD_MAX_RANK], xs[BD_MAX_RANK], total = numel_of(x), T = x->dims[ta];
    if (total == 0) return BD_OK;
    for (int k = 0; k < r; k++) xd[k] = x->dims[k];
    bd_dims_strides(r, xd, xs);
    if ((s = bd_need_table(d, n, total, "the element offsets"))) return s;
    bd_tensor *base = bd_tensor_new(&g->model->arena, BD_DT_INT64, r, xd);
    bd_tensor *times = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &T);
    if (!base || !times) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the offsets");
    for (int64_t i = 0; i < total; i++)
        ((int64_t *)base->data)[i] = i - (i / xs[ta] % T) * xs[ta];
    for (int64_t t = 0; t < T; t++) ((int64_t *)times->data)[t] = t;
    int xv = n->inputs[0], lv = n->inputs[1], yv = n->outputs[0];
    /* (adding values moves x and y: only indices from here) */
    int bv = bd_lower_temp(g, BD_DT_INT64, r, xd), tv = bd_lower_temp(g, BD_DT_INT64, 1, &T);
    bd_graph_value(g, bv)->constant = base;
    bd_graph_value(g, tv)->constant = times;
    int fx = bd_lower_temp(g, dt, 1, &total), fi = bd_lower_temp(g, BD_DT_INT64, r, xd);
    if ((s = lower_reshape_copy(p, node, xv, fx))) return s;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, fi));
    bd_access_identity(bd_nest_operand(nest, bv, false, r), 0);
    bd_nest_operand(nest, lv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, ba, 1, 0, 0};
    bd_nest_operand(nest, tv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, ta, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, fi, true, r), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int len = bd_expr_load(e, 1, BD_DT_INT64), t = bd_expr_load(e, 2, BD_DT_INT64);
    int src = bd_expr_select(e, BD_DT_INT64, bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, t, len),
                             bd_expr_binary(e, BD_EXPR_SUB, BD_DT_INT64,
                                            bd_expr_binary(e, BD_EXPR_SUB, BD_DT_INT64, len,
                                                           bd_expr_const(e, 1, BD_DT_INT64)), t),
                             t);
    bd_expr_compact(e, bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, bd_expr_load(e, 0, BD_DT_INT64),
                                      bd_expr_binary(e, BD_EXPR_MUL, BD_DT_INT64, src,
                                                     bd_expr_const(e, (double)xs[ta],
                                                                   BD_DT_INT64))));
    flat_gather(p, node, fx, fi, yv, r);
    return BD_OK;
}

/* GatherND: with the data's first b + k dims (batch_dims b, k index components) flattened into
 * one, each index tuple is one flat index: an elementwise nest over the tuples adds its
 * components (negative ones counting from the back), each a COPY slice of the indices' last dim,
 * times their strides to a compile-time table of the batch offsets; a GATHER along the flat dim
 * then reads the rest, clamping as it does for Gather. */
bd_status bd_lower_gather_nd(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, x, "input 0")) ||
        (s = bd_need_static(d, n, idx, "input 1 (indices)")))
        return s;
    int r = x->rank, q = idx->rank, b = n->opset >= 12 ? (int)bd_attr_int(n, "batch_dims", 0) : 0;
    int k = (int)idx->dims[q - 1], lead = b + k, nt = q - 1, dt = x->dtype;
    if (numel_of(y) == 0) return BD_OK;
    if (k > 12 || 1 + r - lead > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "index tuples of %d components are not "
                            "supported", k);
    int64_t xd[BD_MAX_RANK], xs[BD_MAX_RANK], td[BD_MAX_RANK], part[BD_MAX_RANK], ts[BD_MAX_RANK];
    int64_t flat[BD_MAX_RANK], fl = 1, ntup = 1;
    for (int i = 0; i < r; i++) xd[i] = x->dims[i];
    for (int i = 0; i < lead; i++) fl *= xd[i];
    bd_dims_strides(lead, xd, xs); /* strides within the flattened dims */
    for (int i = 0; i < nt; i++) td[i] = idx->dims[i], ntup *= td[i];
    for (int i = 0; i < q; i++) part[i] = i < nt ? idx->dims[i] : 1;
    flat[0] = fl;
    for (int i = lead; i < r; i++) flat[1 + i - lead] = xd[i];
    if ((s = bd_need_table(d, n, ntup, "the batch offsets"))) return s;
    bd_dims_strides(nt, td, ts);
    bd_tensor *base = bd_tensor_new(&g->model->arena, BD_DT_INT64, nt, td);
    if (!base) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the batch offsets");
    for (int64_t t = 0; t < ntup; t++) {
        int64_t off = 0;
        for (int i = 0; i < b; i++) off += (t / ts[i] % td[i]) * xs[i];
        ((int64_t *)base->data)[t] = off;
    }
    int xv = n->inputs[0], iv = n->inputs[1], yv = n->outputs[0];
    /* (adding values moves x, idx and y: only indices from here) */
    int fx = bd_graph_add_value(g, ""), bv = bd_graph_add_value(g, ""), fi = bd_graph_add_value(g, "");
    int comp[16];
    for (int m = 0; m < k; m++) comp[m] = bd_graph_add_value(g, "");
    bd_value *v = bd_graph_value(g, fx);
    v->dtype = dt, v->rank = 1 + r - lead;
    memcpy(v->dims, flat, (size_t)v->rank * sizeof *flat);
    v = bd_graph_value(g, bv);
    v->dtype = BD_DT_INT64, v->rank = nt, v->constant = base;
    memcpy(v->dims, td, (size_t)nt * sizeof *td);
    v = bd_graph_value(g, fi);
    v->dtype = BD_DT_INT64, v->rank = nt;
    memcpy(v->dims, td, (size_t)nt * sizeof *td);
    for (int m = 0; m < k; m++) {
        v = bd_graph_value(g, comp[m]);
        v->dtype = BD_DT_INT64, v->rank = q;
        memcpy(v->dims, part, (size_t)q * sizeof *part);
    }
    if ((s = lower_reshape_copy(p, node, xv, fx))) return s;
    int64_t is[BD_MAX_RANK];
    bd_dims_strides(q, bd_graph_value(g, iv)->dims, is);
    for (int m = 0; m < k; m++) { /* component m: indices[..., m] */
        bd_nest *nest = copy_nest(p, node, iv, comp[m]);
        bd_access_identity(&nest->operands[0], 0);
        nest->operands[0].dims[q - 1].offset = m;
        copy_finish(nest, comp[m], q);
        bd_copy_params *cp = copy_params(nest);
        memcpy(cp->in_stride, is, sizeof is);
        cp->in_base = m;
        bd_dims_strides(q, part, cp->out_stride);
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, fi));
    bd_access_identity(bd_nest_operand(nest, bv, false, nt), 0);
    for (int m = 0; m < k; m++) {
        bd_operand *o = bd_nest_operand(nest, comp[m], false, q);
        bd_access_identity(o, 0);
        o->dims[q - 1] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, fi, true, nt), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int sum = bd_expr_load(e, 0, BD_DT_INT64);
    for (int m = 0; m < k; m++) {
        int c = bd_expr_load(e, 1 + m, BD_DT_INT64);
        int neg = bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, c, bd_expr_const(e, 0, BD_DT_INT64));
        c = bd_expr_select(e, BD_DT_INT64, neg,
                           bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, c,
                                          bd_expr_const(e, (double)xd[b + m], BD_DT_INT64)), c);
        c = bd_expr_binary(e, BD_EXPR_MUL, BD_DT_INT64, c,
                           bd_expr_const(e, (double)xs[b + m], BD_DT_INT64));
        sum = bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, sum, c);
    }
    if (e->overflow)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "index tuples of %d components are not "
                            "supported", k);
    bd_expr_compact(e, sum);

    nest = bd_nest_begin(p, node, BD_BODY_GATHER, bd_graph_value(g, yv));
    bd_operand *xo = bd_nest_operand(nest, fx, false, 1 + r - lead);
    xo->dims[0] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
    for (int i = 1; i < 1 + r - lead; i++)
        xo->dims[i] = (bd_access_dim){BD_ACCESS_AFFINE, nt + i - 1, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, fi, false, nt), 0);
    bd_access_identity(bd_nest_operand(nest, yv, true, nt + r - lead), 0);
    bd_gather_params *gp = BD_NEST_PARAMS(nest, gather);
    gp->axis = 0;
    gp->idx_rank = nt;
    return BD_OK;
}

/* ---------------------------------------------------------------- AffineGrid */

/* AffineGrid: grid[n, .., c] = sum_j theta[n, c, j] base_j + theta[n, c, k], base_j the normalised
 * coordinate along spatial dim k - 1 - j (x is the innermost), from compile-time tables; one
 * elementwise nest in double over COPY slices of theta's last dim. */
bd_status bd_lower_affine_grid(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *t, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0 (theta)", "output", &n, &t, &y, &s)) return s;
    int dt = t->dtype, k = y->rank - 2, D = BD_DT_DOUBLE;
    if (dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "dtype %s is not supported",
                            bd_dtype_name(dt));
    if (numel_of(y) == 0) return BD_OK;
    bool align = bd_attr_int(n, "align_corners", 0) != 0;
    int64_t td[3] = {t->dims[0], t->dims[1], 1}, ts[3], sp[BD_MAX_RANK];
    bd_dims_strides(3, t->dims, ts);
    for (int i = 0; i < k; i++) sp[i] = y->dims[1 + i];
    int tv = n->inputs[0], yv = n->outputs[0], col[4], base[3];
    /* (adding values moves t and y: only indices from here) */
    for (int j = 0; j <= k; j++) { /* theta[:, :, j] */
        col[j] = bd_lower_temp(g, dt, 3, td);
        bd_nest *nest = copy_nest(p, node, tv, col[j]);
        bd_access_identity(&nest->operands[0], 0);
        nest->operands[0].dims[2].offset = j;
        copy_finish(nest, col[j], 3);
        bd_copy_params *cp = copy_params(nest);
        memcpy(cp->in_stride, ts, sizeof ts);
        cp->in_base = j;
        bd_dims_strides(3, td, cp->out_stride);
    }
    for (int j = 0; j < k; j++) { /* the coordinates along spatial dim k - 1 - j */
        int64_t len = sp[k - 1 - j];
        bd_tensor *b = bd_tensor_new(&g->model->arena, D, 1, &len);
        if (!b) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the base grid");
        for (int64_t i = 0; i < len; i++)
            ((double *)b->data)[i] = align ? (len > 1 ? -1 + 2.0 * (double)i / (double)(len - 1) : -1)
                                           : -1 + (2.0 * (double)i + 1) / (double)len;
        base[j] = bd_lower_temp(g, D, 1, &len);
        bd_graph_value(g, base[j])->constant = b;
    }
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, yv));
    for (int j = 0; j <= k; j++) {
        bd_operand *o = bd_nest_operand(nest, col[j], false, 3);
        o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
        o->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, k + 1, 1, 0, 0};
        o->dims[2] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    }
    for (int j = 0; j < k; j++)
        bd_nest_operand(nest, base[j], false, 1)->dims[0] =
            (bd_access_dim){BD_ACCESS_AFFINE, 1 + (k - 1 - j), 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, yv, true, k + 2), 0);
    bd_expr *e = BD_NEST_PARAMS(nest, expr);
    int v = bd_expr_cast(e, D, bd_expr_load(e, k, dt));
    for (int j = 0; j < k; j++)
        v = bd_expr_binary(e, BD_EXPR_ADD, D, v,
                           bd_expr_binary(e, BD_EXPR_MUL, D, bd_expr_cast(e, D, bd_expr_load(e, j, dt)),
                                          bd_expr_load(e, k + 1 + j, D)));
    bd_expr_compact(e, bd_expr_cast(e, dt, v));
    return BD_OK;
}

/* ---------------------------------------------------------------- GridSample */

/* X [N, C, spatial...] as rows [N x spatial, C] (a transposing COPY, then a reshape): what a
 * GATHER of whole pixels by a flat spatial index reads. Returns the rows' value. */
static int channel_rows(bd_program *p, int node, int xv) {
    bd_graph *g = p->graph;
    const bd_value *x = bd_graph_value(g, xv);
    int r = x->rank, nd = r - 2, dt = x->dtype;
    int64_t td[BD_MAX_RANK], xs[BD_MAX_RANK], rc[2] = {x->dims[0], x->dims[1]};
    bd_dims_strides(r, x->dims, xs);
    td[0] = x->dims[0];
    for (int i = 0; i < nd; i++) td[1 + i] = x->dims[2 + i], rc[0] *= x->dims[2 + i];
    td[nd + 1] = x->dims[1];
    /* (adding values moves x: only indices from here) */
    int xt = bd_lower_temp(g, dt, r, td), xf = bd_lower_temp(g, dt, 2, rc);
    bd_nest *nest = copy_nest(p, node, xv, xt);
    bd_operand *xo = &nest->operands[0];
    xo->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
    xo->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, nd + 1, 1, 0, 0};
    for (int i = 0; i < nd; i++)
        xo->dims[2 + i] = (bd_access_dim){BD_ACCESS_AFFINE, 1 + i, 1, 0, 0};
    copy_finish(nest, xt, r);
    bd_copy_params *cp = copy_params(nest);
    cp->in_stride[0] = xs[0];
    for (int i = 0; i < nd; i++) cp->in_stride[1 + i] = xs[2 + i];
    cp->in_stride[nd + 1] = xs[1];
    bd_dims_strides(r, td, cp->out_stride);
    lower_reshape_copy(p, node, xt, xf);
    return xf;
}

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

/* v reflected into [lo, hi] by the near border until inside, as the reference does. */
static int gs_reflect(bd_expr *e, int dt, int v, double lo, double hi) {
    int clo = bd_expr_const(e, lo, dt), chi = bd_expr_const(e, hi, dt);
    int below = bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, v, clo);
    int above = bd_expr_binary(e, BD_EXPR_GREATER, BD_DT_BOOL, v, chi);
    int dx = bd_expr_select(e, dt, below, bd_expr_binary(e, BD_EXPR_SUB, dt, clo, v),
                            bd_expr_binary(e, BD_EXPR_SUB, dt, v, chi));
    int crng = bd_expr_const(e, hi - lo, dt);
    int nf = bd_expr_unary(e, BD_EXPR_FLOOR, dt, bd_expr_binary(e, BD_EXPR_DIV, dt, dx, crng));
    int r = bd_expr_binary(e, BD_EXPR_SUB, dt, dx, bd_expr_binary(e, BD_EXPR_MUL, dt, nf, crng));
    int even = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL,
                              bd_expr_binary(e, BD_EXPR_FMOD, dt, nf, bd_expr_const(e, 2, dt)),
                              bd_expr_const(e, 0, dt));
    int from_lo = bd_expr_binary(e, BD_EXPR_EQUAL, BD_DT_BOOL, below, even);
    int refl = bd_expr_select(e, dt, from_lo, bd_expr_binary(e, BD_EXPR_ADD, dt, clo, r),
                              bd_expr_binary(e, BD_EXPR_SUB, dt, chi, r));
    return bd_expr_select(e, dt, bd_expr_binary(e, BD_EXPR_OR, BD_DT_BOOL, below, above), refl, v);
}

/* The tap coordinate floor(x) + k - 1 (cubic), floor(x) + k (linear) or x (nearest). */
static int gs_tap(bd_expr *e, int dt, int mode, int x, int k) {
    if (mode == GS_NEAREST) return x;
    return bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_unary(e, BD_EXPR_FLOOR, dt, x),
                          bd_expr_const(e, k - (mode == GS_CUBIC), dt));
}

/* An elementwise nest over value out (the grid's positions [N, O...]) reading the values in[]
 * there; returns its expression. */
static bd_expr *gs_nest(bd_program *p, int node, int out, const int *in, int n_in) {
    const bd_value *o = bd_graph_value(p->graph, out);
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, o);
    for (int i = 0; i < n_in; i++) {
        bd_operand *op = bd_nest_operand(nest, in[i], false, bd_graph_value(p->graph, in[i])->rank);
        bd_access_identity(op, 0);
        for (int k = o->rank; k < op->rank; k++) op->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    }
    bd_access_identity(bd_nest_operand(nest, out, true, o->rank), 0);
    return BD_NEST_PARAMS(nest, expr);
}

/* GridSample as the reference computes it, separably per spatial dim: the grid's components
 * (COPY slices) become source coordinates (denormalised, rounded for nearest, clamped or
 * reflected back inside as padding_mode says); per dim and tap an index nest (clamped, or
 * reflected for reflection) and a weight nest (linear or cubic coefficients, 0 outside for
 * zeros); per tap combination one flat index into X transposed to [N x spatial, C] and one
 * GATHER of its C values; then elementwise nests summing weight products times the gathered
 * values over the taps, at most a few taps each (the operand limit), the last one writing Y.
 * 1 tap per dim for nearest, 2 for linear, 4 for cubic; up to 3 spatial dims (cubic: 2). */
bd_status bd_lower_grid_sample(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *gr = bd_node_in(g, n, 1), *y = bd_node_out(g, n, 0);
    if (y->constant) return BD_OK;
    bd_status s;
    if ((s = bd_need_static(d, n, y, "output")) || (s = bd_need_static(d, n, x, "input 0 (X)")) ||
        (s = bd_need_static(d, n, gr, "input 1 (grid)")))
        return s;
    int dt = x->dtype, gt = gr->dtype, r = x->rank, nd = r - 2;
    if ((dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE) || (gt != BD_DT_FLOAT && gt != BD_DT_DOUBLE))
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "dtypes %s and %s are not supported",
                            bd_dtype_name(dt), bd_dtype_name(gt));
    const char *ms = bd_attr_string(g, n, "mode", n->opset >= 20 ? "linear" : "bilinear");
    const char *ps = bd_attr_string(g, n, "padding_mode", "zeros");
    int mode = !strcmp(ms, "nearest") ? GS_NEAREST
               : !strcmp(ms, "linear") || !strcmp(ms, "bilinear") ? GS_LINEAR : GS_CUBIC;
    int pad = !strcmp(ps, "zeros") ? GS_ZEROS : !strcmp(ps, "border") ? GS_BORDER : GS_REFLECTION;
    bool align = bd_attr_int(n, "align_corners", 0) != 0;
    int per = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2 : 4, taps = 1;
    for (int i = 0; i < nd; i++) taps *= per;
    if (nd > 3 || taps > 16)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%d spatial dims in mode '%s' are not "
                            "supported", nd, bd_quote(ms));
    if (numel_of(y) == 0) return BD_OK;
    int64_t xd[BD_MAX_RANK], pos[BD_MAX_RANK], part[BD_MAX_RANK];
    int64_t S = 1, sst[BD_MAX_RANK], gs[BD_MAX_RANK];
    for (int i = 0; i < r; i++) xd[i] = x->dims[i];
    for (int i = 2; i < r; i++) S *= xd[i];
    bd_dims_strides(nd, xd + 2, sst);
    bd_dims_strides(r, gr->dims, gs);
    int64_t N = xd[0], C = xd[1];
    for (int i = 0; i <= nd; i++) pos[i] = gr->dims[i]; /* [N, O...] */
    for (int i = 0; i <= nd; i++) part[i] = pos[i];
    part[nd + 1] = 1;
    int xv = n->inputs[0], gv = n->inputs[1], yv = n->outputs[0];
    /* (adding values moves x, gr and y: only indices from here) */
    int xf = channel_rows(p, node, xv);
    bd_nest *nest;
    bd_copy_params *cp;

    /* per spatial dim: the source coordinate, then each tap's index and weight */
    int idx[BD_MAX_RANK][4], wt[BD_MAX_RANK][4];
    for (int dd = 0; dd < nd; dd++) {
        int comp = nd - 1 - dd; /* the grid lists the innermost dim first */
        int gc = bd_lower_temp(g, gt, nd + 2, part);
        nest = copy_nest(p, node, gv, gc);
        bd_access_identity(&nest->operands[0], 0);
        nest->operands[0].dims[nd + 1].offset = comp;
        copy_finish(nest, gc, nd + 2);
        cp = copy_params(nest);
        memcpy(cp->in_stride, gs, sizeof gs);
        cp->in_base = comp;
        bd_dims_strides(nd + 2, part, cp->out_stride);
        double D = (double)xd[2 + dd], lo = align ? 0 : -0.5, hi = align ? D - 1 : D - 0.5;
        int coord = bd_lower_temp(g, dt, nd + 1, pos);
        bd_expr *e = gs_nest(p, node, coord, &gc, 1);
        int v = bd_expr_cast(e, dt, bd_expr_load(e, 0, gt));
        v = bd_expr_binary(e, BD_EXPR_ADD, dt, v, bd_expr_const(e, 1, dt));
        v = align ? bd_expr_binary(e, BD_EXPR_MUL, dt, v, bd_expr_const(e, (D - 1) / 2, dt))
                  : bd_expr_binary(e, BD_EXPR_DIV, dt,
                                   bd_expr_binary(e, BD_EXPR_SUB, dt,
                                                  bd_expr_binary(e, BD_EXPR_MUL, dt, v,
                                                                 bd_expr_const(e, D, dt)),
                                                  bd_expr_const(e, 1, dt)),
                                   bd_expr_const(e, 2, dt));
        if (mode == GS_NEAREST) v = bd_expr_unary(e, BD_EXPR_ROUND, dt, v);
        if (pad == GS_BORDER) {
            int out = bd_expr_binary(e, BD_EXPR_OR, BD_DT_BOOL,
                                     bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, v,
                                                    bd_expr_const(e, lo, dt)),
                                     bd_expr_binary(e, BD_EXPR_GREATER, BD_DT_BOOL, v,
                                                    bd_expr_const(e, hi, dt)));
            int cl = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, dt,
                                    bd_expr_binary(e, BD_EXPR_CLAMP_MIN, dt, v,
                                                   bd_expr_const(e, 0, dt)),
                                    bd_expr_const(e, D - 1, dt));
            v = bd_expr_select(e, dt, out, cl, v);
        } else if (pad == GS_REFLECTION) {
            v = gs_reflect(e, dt, v, lo, hi);
        }
        bd_expr_compact(e, v);
        for (int k = 0; k < per; k++) {
            idx[dd][k] = bd_lower_temp(g, BD_DT_INT64, nd + 1, pos);
            e = gs_nest(p, node, idx[dd][k], &coord, 1);
            int t = gs_tap(e, dt, mode, bd_expr_load(e, 0, dt), k);
            if (pad == GS_REFLECTION) t = gs_reflect(e, dt, t, lo, hi);
            t = bd_expr_binary(e, BD_EXPR_CLAMP_MAX, dt,
                               bd_expr_binary(e, BD_EXPR_CLAMP_MIN, dt, t, bd_expr_const(e, 0, dt)),
                               bd_expr_const(e, D - 1, dt));
            bd_expr_compact(e, bd_expr_cast(e, BD_DT_INT64, t)); /* truncates, as int() does */
            wt[dd][k] = bd_lower_temp(g, dt, nd + 1, pos);
            e = gs_nest(p, node, wt[dd][k], &coord, 1);
            int xe = bd_expr_load(e, 0, dt), w;
            int f = bd_expr_binary(e, BD_EXPR_SUB, dt, xe, bd_expr_unary(e, BD_EXPR_FLOOR, dt, xe));
            if (mode == GS_NEAREST) {
                w = bd_expr_const(e, 1, dt);
            } else if (mode == GS_LINEAR) {
                w = k ? f : bd_expr_binary(e, BD_EXPR_SUB, dt, bd_expr_const(e, 1, dt), f);
            } else { /* Keys' cubic convolution, A = -0.75, at distance u from the tap */
                double A = -0.75;
                int u = k == 0   ? bd_expr_binary(e, BD_EXPR_ADD, dt, f, bd_expr_const(e, 1, dt))
                        : k == 1 ? f
                                 : bd_expr_binary(e, BD_EXPR_SUB, dt,
                                                  bd_expr_const(e, k == 2 ? 1 : 2, dt), f);
                if (k == 0 || k == 3) {
                    w = bd_expr_binary(e, BD_EXPR_SUB, dt, bd_expr_binary(e, BD_EXPR_MUL, dt,
                                                                   bd_expr_const(e, A, dt), u),
                                       bd_expr_const(e, 5 * A, dt));
                    w = bd_expr_binary(e, BD_EXPR_ADD, dt, bd_expr_binary(e, BD_EXPR_MUL, dt, w, u),
                                       bd_expr_const(e, 8 * A, dt));
                    w = bd_expr_binary(e, BD_EXPR_SUB, dt, bd_expr_binary(e, BD_EXPR_MUL, dt, w, u),
                                       bd_expr_const(e, 4 * A, dt));
                } else {
                    w = bd_expr_binary(e, BD_EXPR_SUB, dt, bd_expr_binary(e, BD_EXPR_MUL, dt,
                                                                   bd_expr_const(e, A + 2, dt), u),
                                       bd_expr_const(e, A + 3, dt));
                    w = bd_expr_binary(e, BD_EXPR_MUL, dt, bd_expr_binary(e, BD_EXPR_MUL, dt, w, u), u);
                    w = bd_expr_binary(e, BD_EXPR_ADD, dt, w, bd_expr_const(e, 1, dt));
                }
            }
            if (pad == GS_ZEROS) { /* a tap outside the input weighs nothing */
                int at = gs_tap(e, dt, mode, xe, k);
                int in = bd_expr_binary(e, BD_EXPR_AND, BD_DT_BOOL,
                                        bd_expr_binary(e, BD_EXPR_GREATER_EQUAL, BD_DT_BOOL, at,
                                                       bd_expr_const(e, 0, dt)),
                                        bd_expr_binary(e, BD_EXPR_LESS, BD_DT_BOOL, at,
                                                       bd_expr_const(e, D, dt)));
                w = bd_expr_select(e, dt, in, w, bd_expr_const(e, 0, dt));
            }
            bd_expr_compact(e, w);
        }
    }

    /* the batch offsets n x spatial, then per tap combination its rows and their weighted sum */
    bd_tensor *bo = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &N);
    if (!bo) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the batch offsets");
    for (int64_t i = 0; i < N; i++) ((int64_t *)bo->data)[i] = i * S;
    int bv = bd_lower_temp(g, BD_DT_INT64, 1, &N);
    bd_graph_value(g, bv)->constant = bo;
    int64_t ydims[BD_MAX_RANK], gd[BD_MAX_RANK];
    ydims[0] = N, ydims[1] = C;
    for (int i = 0; i < nd; i++) ydims[2 + i] = pos[1 + i];
    for (int i = 0; i <= nd; i++) gd[i] = pos[i];
    gd[nd + 1] = C;
    int group = 14 / (1 + nd), acc = -1;
    for (int t0 = 0; t0 < taps; t0 += group) {
        int t1 = t0 + group < taps ? t0 + group : taps, gath[16];
        for (int t = t0; t < t1; t++) {
            int fi = bd_lower_temp(g, BD_DT_INT64, nd + 1, pos);
            nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, fi));
            bd_nest_operand(nest, bv, false, 1)->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
            for (int dd = 0, q = t; dd < nd; dd++, q /= per)
                bd_access_identity(bd_nest_operand(nest, idx[dd][q % per], false, nd + 1), 0);
            bd_access_identity(bd_nest_operand(nest, fi, true, nd + 1), 0);
            bd_expr *e = BD_NEST_PARAMS(nest, expr);
            int sum = bd_expr_load(e, 0, BD_DT_INT64);
            for (int dd = 0; dd < nd; dd++)
                sum = bd_expr_binary(e, BD_EXPR_ADD, BD_DT_INT64, sum,
                                     bd_expr_binary(e, BD_EXPR_MUL, BD_DT_INT64,
                                                    bd_expr_load(e, 1 + dd, BD_DT_INT64),
                                                    bd_expr_const(e, (double)sst[dd], BD_DT_INT64)));
            bd_expr_compact(e, sum);
            gath[t - t0] = bd_lower_temp(g, dt, nd + 2, gd);
            nest = bd_nest_begin(p, node, BD_BODY_GATHER, bd_graph_value(g, gath[t - t0]));
            bd_operand *fo = bd_nest_operand(nest, xf, false, 2);
            fo->dims[0] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
            fo->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, nd + 1, 1, 0, 0};
            bd_access_identity(bd_nest_operand(nest, fi, false, nd + 1), 0);
            bd_access_identity(bd_nest_operand(nest, gath[t - t0], true, nd + 2), 0);
            bd_gather_params *gp = BD_NEST_PARAMS(nest, gather);
            gp->axis = 0;
            gp->idx_rank = nd + 1;
        }
        int out = t1 == taps ? yv : bd_lower_temp(g, dt, r, ydims);
        nest = bd_nest_begin(p, node, BD_BODY_ELEMENTWISE, bd_graph_value(g, out));
        if (acc >= 0) bd_access_identity(bd_nest_operand(nest, acc, false, r), 0);
        for (int t = t0; t < t1; t++) { /* [N, O..., C] and [N, O...] over Y's [N, C, O...] */
            bd_operand *o = bd_nest_operand(nest, gath[t - t0], false, nd + 2);
            o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
            for (int i = 0; i < nd; i++) o->dims[1 + i] = (bd_access_dim){BD_ACCESS_AFFINE, 2 + i, 1, 0, 0};
            o->dims[nd + 1] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
            for (int dd = 0, q = t; dd < nd; dd++, q /= per) {
                o = bd_nest_operand(nest, wt[dd][q % per], false, nd + 1);
                o->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
                for (int i = 0; i < nd; i++)
                    o->dims[1 + i] = (bd_access_dim){BD_ACCESS_AFFINE, 2 + i, 1, 0, 0};
            }
        }
        bd_access_identity(bd_nest_operand(nest, out, true, r), 0);
        bd_expr *e = BD_NEST_PARAMS(nest, expr);
        int sum = acc >= 0 ? bd_expr_load(e, 0, dt) : -1, op = acc >= 0;
        for (int t = t0; t < t1; t++) {
            int term = bd_expr_load(e, op++, dt);
            for (int dd = 0; dd < nd; dd++)
                term = bd_expr_binary(e, BD_EXPR_MUL, dt, term, bd_expr_load(e, op++, dt));
            sum = sum < 0 ? term : bd_expr_binary(e, BD_EXPR_ADD, dt, sum, term);
        }
        if (e->overflow)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "the weighted sum of the taps is too "
                                "large an expression");
        bd_expr_compact(e, sum);
        acc = out;
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- RoiAlign */

/* RoiAlign as one ROI_ALIGN nest over Y [R, C, oh, ow]: each element reads its rois row and batch
 * index and samples X where they say, at run time, so rois and batch indices may be graph inputs
 * whatever the sampling_ratio (with 0, each roi's samples per bin follow from its size). X is
 * read at data-dependent images and positions (OPAQUE) but only along the element's channel. */
bd_status bd_lower_roi_align(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n = bd_graph_node(g, node);
    bd_value *x = bd_node_in(g, n, 0), *rois = bd_node_in(g, n, 1), *bi = bd_node_in(g, n, 2);
    bd_value *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_static(d, n, x, "input 0 (X)")) ||
        (s = bd_need_static(d, n, rois, "input 1 (rois)")) ||
        (s = bd_need_static(d, n, bi, "input 2 (batch_indices)")) ||
        (s = bd_need_static(d, n, y, "output")))
        return s;
    if (x->dtype != BD_DT_FLOAT && x->dtype != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "dtype %s is not supported",
                            bd_dtype_name(x->dtype));
    if (numel_of(y) == 0) return BD_OK;
    if (numel_of(x) == 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (X) is empty but there are rois");
    bool half_pixel = n->opset >= 16 &&
                      !strcmp(bd_attr_string(g, n, "coordinate_transformation_mode", "half_pixel"),
                              "half_pixel");
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_ROI_ALIGN, y);
    bd_roi_align_params *ra = BD_NEST_PARAMS(nest, roi_align);
    *ra = (bd_roi_align_params){
        .is_max = !strcmp(bd_attr_string(g, n, "mode", "avg"), "max"),
        .scale = bd_attr_float(n, "spatial_scale", 1.0f),
        .offset = half_pixel ? 0.5 : 0,
        .at_least_one = !half_pixel,
        .ratio = bd_attr_int(n, "sampling_ratio", 0),
    };
    bd_operand *xo = bd_nest_operand(nest, n->inputs[0], false, 4);
    bd_access_opaque(xo);
    xo->dims[1] = (bd_access_dim){BD_ACCESS_AFFINE, 1, 1, 0, 0};
    bd_operand *ro = bd_nest_operand(nest, n->inputs[1], false, 2); /* its row, whole */
    ro->dims[0] = (bd_access_dim){BD_ACCESS_AFFINE, 0, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, n->inputs[2], false, 1), 0);
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, 4), 0);
    return BD_OK;
}

/* ---------------------------------------------------------------- Resize */

static bool resize_uses_filter(const bd_resize_params *p) {
    return p->interp == BD_INTERP_CUBIC || (p->interp == BD_INTERP_LINEAR && p->antialias);
}

/* The input coordinate that output index o of dim k samples (coordinate_transformation_mode);
 * false when the output element takes the extrapolation value instead. */
static bool resize_source(const bd_resize_params *p, int k, int64_t o, double *xp) {
    int64_t in = p->in_extent[k], out = p->out_extent[k];
    double scale = p->scale[k], out_w = scale * (double)in, len = (double)in;
    double rs = p->roi_start[k], re = p->roi_end[k], xr = (double)o, x;
    switch (p->coord) {
    case BD_RESIZE_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / out_w, center = len / 2;
        x = center * (1 - adjustment) + (xr + 0.5) / scale - 0.5;
        break;
    }
    case BD_RESIZE_PYTORCH_HALF_PIXEL: x = out_w == 1 ? -0.5 : (xr + 0.5) / scale - 0.5; break;
    case BD_RESIZE_ALIGN_CORNERS: x = out_w == 1 ? 0 : xr * (len - 1) / (out_w - 1); break;
    case BD_RESIZE_ASYMMETRIC: x = xr / scale; break;
    case BD_RESIZE_TF_HALF_PIXEL_FOR_NN:
        /* onnxruntime leaves a dim of scale 1 alone here (the formula would shift it by half an
         * element); TF, whose mode this is, never resamples such a dim either. */
        x = scale == 1 ? xr : (xr + 0.5) / scale;
        break;
    case BD_RESIZE_TF_CROP_AND_RESIZE:
        x = out_w == 1 ? (re - rs) * (len - 1) / 2 : xr * (re - rs) * (len - 1) / (out_w - 1);
        x += rs * (len - 1);
        break;
    default: x = (xr + 0.5) / scale - 0.5; break;
    }
    /* A coordinate that is mathematically a multiple of 1/2 (where nearest rounding and the
     * input's edges decide) but came out an ulp away is snapped to it. */
    double twice = nearbyint(2 * x);
    if (fabs(2 * x - twice) <= 1e-9 * (fabs(x) > 1 ? fabs(x) : 1)) x = twice / 2;
    *xp = x;
    if (!(x == x)) return false;
    return p->coord != BD_RESIZE_TF_CROP_AND_RESIZE || (x >= 0 && x <= len - 1);
}

static void resize_table(const bd_resize_params *p, int k, int64_t *idx0, int64_t *idx1, float *w1) {
    int64_t in = p->in_extent[k], out = p->out_extent[k];
    double len = (double)in;
    for (int64_t o = 0; o < out; o++) {
        double x;
        if (!resize_source(p, k, o, &x)) {
            idx0[o] = -1;
            idx1[o] = 0;
            w1[o] = 0;
            continue;
        }
        /* Clamp far-away coordinates before converting (clamping is what edge padding does). */
        if (x < -2) x = -2;
        if (x > len + 1) x = len + 1;
        double fl = floor(x), ratio = x - fl;
        int64_t i0 = (int64_t)fl, i1 = i0 + 1;
        float w = (float)ratio;
        if (p->interp == BD_INTERP_NEAREST) {
            bool up;
            switch (p->nearest) {
            case BD_NEAREST_ROUND_PREFER_CEIL: up = ratio >= 0.5; break;
            case BD_NEAREST_FLOOR: up = false; break;
            case BD_NEAREST_CEIL: up = ratio > 0; break;
            case BD_NEAREST_SIMPLE: up = p->scale[k] < 1 ? ratio > 0 : x < 0 && ratio > 0; break;
            default: up = ratio > 0.5; break;
            }
            i0 = up ? i1 : i0;
            i1 = i0;
            w = 0;
        } else if (ratio == 0) {
            i1 = i0;
            w = 0;
        }
        idx0[o] = i0 < 0 ? 0 : i0 >= in ? in - 1 : i0;
        idx1[o] = i1 < 0 ? 0 : i1 >= in ? in - 1 : i1;
        w1[o] = idx0[o] == idx1[o] ? 0 : w;
    }
}

/* The filter of the spec's reference (onnx/reference/ops/op_resize.py): a kernel of half-width
 * `support` (1: the linear tent, 2: the cubic of coefficient A) whose taps sit at integer offsets
 * from the sample point; antialias stretches it by 1/scale when downsampling, so that every input
 * element within the footprint of an output element contributes. The window's first tap lies
 * `first_tap` indices from the sample's floor. */
static double filter_scale(const bd_resize_params *p, int k) {
    return p->antialias && p->scale[k] < 1 ? p->scale[k] : 1.0;
}

static int64_t filter_first_tap(const bd_resize_params *p, int k) {
    double support = p->interp == BD_INTERP_CUBIC ? 2 : 1;
    return (int64_t)floor(-support / filter_scale(p, k)) + 1;
}

static double filter_kernel(const bd_resize_params *p, double t) {
    t = fabs(t);
    if (p->interp == BD_INTERP_LINEAR) return t < 1 ? 1 - t : 0;
    double a = p->cubic_coeff_a;
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

static int resize_taps(const bd_resize_params *p, int k) {
    return (int)(2 - 2 * filter_first_tap(p, k));
}

static void resize_filter(const bd_resize_params *p, int k, int64_t *idx, double *w, bool *outside) {
    int64_t in = p->in_extent[k], out = p->out_extent[k], first = filter_first_tap(p, k);
    int taps = resize_taps(p, k);
    double fs = filter_scale(p, k);
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = idx + o * taps;
        double *wt = w + o * taps, x;
        outside[o] = !resize_source(p, k, o, &x);
        if (outside[o]) {
            for (int t = 0; t < taps; t++) ix[t] = 0, wt[t] = 0;
            continue;
        }
        /* Beyond this every tap lies outside the input on the same side, so all read the edge
         * element with weights summing to 1 (or, with exclude_outside, nothing): no change. */
        double margin = (double)taps + 1;
        if (x < -margin) x = -margin;
        if (x > (double)in + margin) x = (double)in + margin;
        /* The sample's left neighbour and its distance from it, in (0, 1] as the reference has
         * it (an integer x counts as 1 past its left neighbour). */
        double base = floor(x), ratio = x - base;
        if (ratio == 0) base -= 1, ratio = 1;
        double sum = 0;
        for (int t = 0; t < taps; t++) {
            int64_t i = (int64_t)base + first + t;
            wt[t] = filter_kernel(p, ((double)(first + t) - ratio) * fs);
            if (p->exclude_outside && (i < 0 || i >= in)) wt[t] = 0;
            sum += wt[t];
            ix[t] = i < 0 ? 0 : i >= in ? in - 1 : i;
        }
        /* The antialiased kernels are normalised to sum 1; so are the weights left by
         * exclude_outside (when any are). A plain cubic sums to 1 already. */
        if ((p->antialias || p->exclude_outside) && sum != 0)
            for (int t = 0; t < taps; t++) wt[t] /= sum;
    }
}

static bd_status resize_coord_of(bd_graph *g, const bd_node *n, bd_diag *d, bd_resize_coord *c) {
    static const attr_choice modes[] = {
        {"half_pixel", BD_RESIZE_HALF_PIXEL},
        {"half_pixel_symmetric", BD_RESIZE_HALF_PIXEL_SYMMETRIC},
        {"pytorch_half_pixel", BD_RESIZE_PYTORCH_HALF_PIXEL},
        {"align_corners", BD_RESIZE_ALIGN_CORNERS},
        {"asymmetric", BD_RESIZE_ASYMMETRIC},
        {"tf_half_pixel_for_nn", BD_RESIZE_TF_HALF_PIXEL_FOR_NN},
        {"tf_crop_and_resize", BD_RESIZE_TF_CROP_AND_RESIZE},
    };
    int v = BD_RESIZE_ASYMMETRIC; /* opsets before 11 have no attribute */
    bd_status s = n->opset < 11 ? BD_OK
                                : attr_enum(g, n, d, "coordinate_transformation_mode", "half_pixel",
                                            modes, BD_COUNT(modes), &v);
    *c = (bd_resize_coord)v;
    return s;
}

static bd_status resize_nearest_of(bd_graph *g, const bd_node *n, bd_diag *d, bd_resize_nearest *m) {
    static const attr_choice modes[] = {
        {"round_prefer_floor", BD_NEAREST_ROUND_PREFER_FLOOR},
        {"round_prefer_ceil", BD_NEAREST_ROUND_PREFER_CEIL},
        {"floor", BD_NEAREST_FLOOR},
        {"ceil", BD_NEAREST_CEIL},
    };
    int v = BD_NEAREST_SIMPLE; /* opsets before 11 have no attribute */
    bd_status s = n->opset < 11 ? BD_OK
                                : attr_enum(g, n, d, "nearest_mode", "round_prefer_floor", modes,
                                            BD_COUNT(modes), &v);
    *m = (bd_resize_nearest)v;
    return s;
}

/* Whether dim k's sampling is the identity (every output index reads its own input index with
 * weight 1): 1 yes, 0 no, -1 out of memory. */
static int resize_dim_identity(const bd_resize_params *p, int k) {
    int64_t out = p->out_extent[k];
    if (out != p->in_extent[k]) return 0;
    size_t taps = resize_uses_filter(p) ? (size_t)resize_taps(p, k) : 2, cnt = (size_t)out;
    int64_t *idx = malloc(cnt * taps * sizeof *idx);
    double *w = malloc(cnt * taps * sizeof *w);
    float *w1 = malloc(cnt * sizeof *w1);
    bool *outside = malloc(cnt * sizeof *outside);
    int identity = idx && w && w1 && outside ? 1 : -1;
    if (identity > 0 && resize_uses_filter(p)) {
        resize_filter(p, k, idx, w, outside);
        for (size_t o = 0; o < cnt && identity > 0; o++) {
            double own = 0, other = 0;
            for (size_t t = 0; t < taps; t++) {
                if (idx[o * taps + t] == (int64_t)o) own += w[o * taps + t];
                else other += fabs(w[o * taps + t]);
            }
            identity = !outside[o] && fabs(own - 1) < 1e-12 && other < 1e-12;
        }
    } else if (identity > 0) {
        resize_table(p, k, idx, idx + cnt, w1);
        for (size_t o = 0; o < cnt && identity > 0; o++)
            identity = idx[o] == (int64_t)o && w1[o] == 0;
    }
    free(idx), free(w), free(w1), free(outside);
    return identity;
}

/* The sampling tables of every active dim, computed once into the program's arena (params.h). */
static bd_status resize_tables(bd_program *p, const bd_node *n, bd_resize_params *rp, bd_diag *d) {
    rp->filter = resize_uses_filter(rp);
    for (int k = 0; k < BD_MAX_RANK; k++) {
        if (!rp->active[k]) continue;
        size_t cnt = (size_t)rp->out_extent[k];
        if (rp->filter) {
            rp->taps[k] = resize_taps(rp, k);
            int64_t *idx = bd_arena_array(&p->arena, cnt * (size_t)rp->taps[k], sizeof *idx);
            double *w = bd_arena_array(&p->arena, cnt * (size_t)rp->taps[k], sizeof *w);
            bool *outside = bd_arena_array(&p->arena, cnt, sizeof *outside);
            if (!idx || !w || !outside) return bd_node_fail(d, BD_ERR_IO, n, "out of memory");
            resize_filter(rp, k, idx, w, outside);
            rp->tap_idx[k] = idx, rp->tap_w[k] = w, rp->outside[k] = outside;
        } else {
            int64_t *i0 = bd_arena_array(&p->arena, cnt, sizeof *i0);
            int64_t *i1 = bd_arena_array(&p->arena, cnt, sizeof *i1);
            float *w1 = bd_arena_array(&p->arena, cnt, sizeof *w1);
            if (!i0 || !i1 || !w1) return bd_node_fail(d, BD_ERR_IO, n, "out of memory");
            resize_table(rp, k, i0, i1, w1);
            rp->idx0[k] = i0, rp->idx1[k] = i1, rp->w1[k] = w1;
        }
    }
    return BD_OK;
}

/* Linear interpolation visits 2^k corners for k resized dims. A filter's row buffer is at most
 * 4 MiB of float per thread. */
enum { RESIZE_MAX_LINEAR_DIMS = 5, RESIZE_MAX_ROW_ELEMS = 1 << 20 };

bd_status bd_lower_resize(bd_program *p, int node, bd_diag *d) {
    bd_graph *g = p->graph;
    bd_node *n;
    bd_value *x, *y;
    bd_status s;
    if (!bd_lower_begin(p, node, d, "input 0", "output", &n, &x, &y, &s)) return s;
    int r = x->rank;
    bd_resize_params rp;
    memset(&rp, 0, sizeof rp);

    static const attr_choice interps[] = {/* in enum order; cubic came with opset 11 */
                                          {"nearest", BD_INTERP_NEAREST},
                                          {"linear", BD_INTERP_LINEAR},
                                          {"cubic", BD_INTERP_CUBIC}};
    int interp = BD_INTERP_NEAREST;
    if ((s = attr_enum(g, n, d, "mode", "nearest", interps, n->opset >= 11 ? 3 : 2, &interp)))
        return s;
    rp.interp = (bd_resize_interp)interp;
    /* antialias only changes linear and cubic (the spec: "linear and cubic interpolation modes
     * will use an antialiasing filter when downscaling"). */
    rp.antialias = n->opset >= 18 && bd_attr_int(n, "antialias", 0) != 0 &&
                   rp.interp != BD_INTERP_NEAREST;
    /* exclude_outside matters only where taps can fall outside the input, i.e. for the filters
     * (a plain linear sample is clamped into the input, its weights summing to 1 anyway). */
    rp.exclude_outside = n->opset >= 11 && bd_attr_int(n, "exclude_outside", 0) != 0;
    rp.cubic_coeff_a = bd_attr_float(n, "cubic_coeff_a", -0.75f);
    if (rp.interp != BD_INTERP_NEAREST && y->dtype != BD_DT_FLOAT && y->dtype != BD_DT_DOUBLE)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'mode' '%s' on %s data is not "
                            "supported (float32 and float64 are)", interps[rp.interp].name,
                            bd_dtype_name(y->dtype));
    if ((s = resize_coord_of(g, n, d, &rp.coord)) || (s = resize_nearest_of(g, n, d, &rp.nearest)))
        return s;
    rp.extrapolation_value = bd_attr_float(n, "extrapolation_value", 0.0f);

    int64_t axes[BD_MAX_RANK];
    int naxes = r;
    const bd_attr *axes_attr = n->opset >= 18 ? bd_node_attr(n, "axes") : NULL;
    if (axes_attr) {
        naxes = axes_attr->n;
        for (int i = 0; i < naxes; i++) {
            int a;
            if (!bd_norm_axis(axes_attr->ints[i], r, &a))
                return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' is out of range");
            axes[i] = a;
        }
    } else {
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    for (int k = 0; k < r; k++) {
        rp.scale[k] = 1;
        rp.roi_start[k] = 0;
        rp.roi_end[k] = 1;
        rp.in_extent[k] = x->dims[k];
        rp.out_extent[k] = y->dims[k];
    }

    int scales_idx = n->opset < 11 ? 1 : 2;
    const bd_value *scales = bd_node_in(g, n, scales_idx);
    const bd_value *sizes = n->opset >= 11 ? bd_node_in(g, n, 3) : NULL;
    bool have_scales = scales && !(scales->rank == 1 && scales->dims[0] == 0);
    bool have_sizes = sizes && !(sizes->rank == 1 && sizes->dims[0] == 0);
    if (have_scales) {
        char what[32];
        snprintf(what, sizeof what, "input %d (scales)", scales_idx);
        if (!scales->constant) return bd_fail_not_const(d, g, n, scales_idx, what);
        if (scales->constant->numel != naxes)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input %d (scales) does not have one "
                                "value per axis", scales_idx);
        for (int i = 0; i < naxes; i++)
            rp.scale[axes[i]] = (double)(float)bd_tensor_get_f64(scales->constant, i);
    } else if (have_sizes) {
        if (!sizes->constant) return bd_fail_not_const(d, g, n, 3, "input 3 (sizes)");
        if (sizes->constant->numel != naxes)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 3 (sizes) does not have one value "
                                "per axis");
        const char *policy = n->opset >= 18 ? bd_attr_string(g, n, "keep_aspect_ratio_policy", "stretch")
                                            : "stretch";
        bool stretch = strcmp(policy, "stretch") == 0, not_larger = strcmp(policy, "not_larger") == 0;
        double common = not_larger ? INFINITY : 0;
        for (int i = 0; i < naxes; i++) {
            int a = (int)axes[i];
            if (x->dims[a] == 0) {
                rp.scale[a] = 1;
                continue;
            }
            double sc = (double)bd_tensor_get_i64(sizes->constant, i) / (double)x->dims[a];
            rp.scale[a] = sc;
            common = not_larger ? fmin(common, sc) : fmax(common, sc);
        }
        if (!stretch)
            for (int i = 0; i < naxes; i++) rp.scale[axes[i]] = common;
    } else {
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "neither scales nor sizes is given");
    }
    if (rp.coord == BD_RESIZE_TF_CROP_AND_RESIZE) {
        const bd_value *roi = bd_node_in(g, n, 1);
        if (!roi || !roi->constant || roi->constant->numel != 2 * naxes)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input 1 (roi) must be a compile-time "
                                "constant with 2 values per axis for tf_crop_and_resize");
        for (int i = 0; i < naxes; i++) {
            rp.roi_start[axes[i]] = bd_tensor_get_f64(roi->constant, i);
            rp.roi_end[axes[i]] = bd_tensor_get_f64(roi->constant, naxes + i);
        }
    }
    if (numel_of(y) == 0) return BD_OK;
    for (int k = 0; k < r; k++) {
        if (x->dims[k] == 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: cannot resize an empty extent to "
                                "%lld", k, (long long)y->dims[k]);
        if (!(rp.scale[k] > 0) || isinf(rp.scale[k]))
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: scale %g is not positive", k,
                                rp.scale[k]);
    }

    /* Dims whose table is the identity need no sampling. */
    int n_linear = 0;
    for (int k = 0; k < r; k++) {
        int identity = resize_dim_identity(&rp, k);
        if (identity < 0) return bd_node_fail(d, BD_ERR_IO, n, "out of memory");
        rp.active[k] = !identity;
        n_linear += rp.active[k] && rp.interp == BD_INTERP_LINEAR && !resize_uses_filter(&rp);
    }
    if (n_linear > RESIZE_MAX_LINEAR_DIMS)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "linear resize of %d axes at once (at most "
                            "%d are supported)", n_linear, RESIZE_MAX_LINEAR_DIMS);

    /* The filter modes combine the active dims but the last into a per-thread row buffer first
     * (target/cpu/emit_data.c): the last one's input extent times the dims inside it, unless that is huge
     * (then each output sums over the product of the windows directly). */
    int last = -1, n_active = 0;
    for (int k = 0; k < r; k++)
        if (rp.active[k]) last = k, n_active++;
    if (resize_uses_filter(&rp) && n_active >= 2) {
        int64_t row = 1;
        for (int k = last; k < r; k++) row *= x->dims[k];
        if (row <= RESIZE_MAX_ROW_ELEMS) rp.row_elems = row;
    }

    if ((s = resize_tables(p, n, &rp, d))) return s;
    bd_nest *nest = bd_nest_begin(p, node, BD_BODY_RESIZE, y);
    bd_operand *xo = bd_nest_operand(nest, n->inputs[0], false, r);
    for (int k = 0; k < r; k++)
        xo->dims[k] = rp.active[k] ? (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0}
                                   : (bd_access_dim){BD_ACCESS_AFFINE, k, 1, 0, 0};
    bd_access_identity(bd_nest_operand(nest, n->outputs[0], true, r), 0);
    *BD_NEST_PARAMS(nest, resize) = rp;
    return BD_OK;
}
