/* data.c — inference and constant folding for the ops that move data without computing on it:
 * Concat, Constant, ConstantOfShape, Expand, Flatten, Gather, Range, Reshape, Shape, Slice, Split,
 * Squeeze, Transpose, Unsqueeze; and inference for Pad and Resize, whose pads and scales/sizes
 * moved from attributes to inputs (Pad at opset 11, Resize from Upsample at 10).
 *
 * These are the ops of the shape arithmetic that exporters wrap around every dynamic reshape
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ConstantOfShape, Range, Slice, Expand). Shape
 * attaches its result as a constant as soon as the dims it reports are known, and the folds below
 * evaluate the rest of the chain, so by the time lowering runs those chains are plain constants.
 * Folding is byte copying, so it handles every dtype of whole bytes (strings and 4-bit types are
 * left to run time). Operands that are integer lists (axes, starts, a target shape) come from an
 * attribute in early opsets and from an input later; both forms are read into one int_list. */
#include <math.h>
#include <string.h>

#include "infer/checks.h"

/* ---- integer list operands ---- */

/* An integer list operand (axes, starts, a target shape) from an attribute or an input. */
typedef struct int_list {
    bool given;   /* attribute present / input not omitted */
    bool known;   /* values known at compile time */
    int64_t len;  /* element count, -1 when unknown */
    int64_t v[BD_MAX_RANK];
} int_list;

enum {
    LIST_INT32 = 1 << 0,  /* int32 accepted besides int64 */
    LIST_SCALAR = 1 << 1, /* a 0-D input counts as a one-element list */
};

static void list_init(int_list *l) {
    memset(l, 0, sizeof *l);
    l->len = -1;
}

/* Reads the INTS attribute `name`; more than `max` values fails with `too_long`. */
static bd_status list_from_attr(bd_diag *d, const bd_node *n, const char *name, int max,
                                bd_status too_long, int_list *l) {
    list_init(l);
    const bd_attr *a = bd_node_attr(n, name);
    if (!a) return BD_OK;
    if (a->type != BD_ATTR_INTS)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' must be a list of ints", name);
    if (a->n > max)
        return bd_node_fail(d, too_long, n, "attribute '%s' has %d values, at most %d allowed",
                            name, a->n, max);
    l->given = l->known = true;
    l->len = a->n;
    if (a->n) memcpy(l->v, a->ints, (size_t)a->n * sizeof *l->v);
    return BD_OK;
}

/* Reads input idx as an integer list: checks its dtype and rank, and takes its values when it is
 * constant; more than `max` values fails with `too_long`. */
static bd_status list_from_input(bd_graph *g, const bd_node *n, bd_diag *d, int idx,
                                 const char *what, unsigned flags, int max, bd_status too_long,
                                 int_list *l) {
    list_init(l);
    const bd_value *v = bd_node_in(g, n, idx);
    if (!v) return BD_OK;
    l->given = true;
    bool i32 = flags & LIST_INT32;
    if (v->dtype && v->dtype != BD_DT_INT64 && !(i32 && v->dtype == BD_DT_INT32))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has dtype %s, expected %s", idx,
                            what, bd_dtype_name(v->dtype), i32 ? "int32 or int64" : "int64");
    bool scalar_ok = flags & LIST_SCALAR;
    if (v->rank > 1 || (v->rank == 0 && !scalar_ok))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has rank %d, expected %s", idx,
                            what, v->rank, scalar_ok ? "0 or 1" : "1");
    if (v->rank == 1) l->len = v->dims[0];
    if (v->rank == 0) l->len = 1;
    const bd_tensor *t = v->constant;
    if (!t) return BD_OK;
    if (t->numel > max)
        return bd_node_fail(d, too_long, n, "input %d (%s) has %lld values, at most %d allowed",
                            idx, what, (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++) l->v[i] = bd_tensor_get_i64(t, i);
    l->len = t->numel;
    l->known = true;
    return BD_OK;
}

/* Normalises an axis attribute/input value against rank; negative values count from the back
 * from opset `neg_since` on. */
static bd_status norm_axis(bd_diag *d, const bd_node *n, const char *what, int64_t axis, int rank,
                           int neg_since, int *out) {
    if (axis < 0 && n->opset < neg_since)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "%s is %lld; negative axes need opset %d, the node has opset %d", what,
                            (long long)axis, neg_since, n->opset);
    if (!bd_norm_axis(axis, rank, out))
        return bd_node_fail(d, BD_ERR_INVALID, n, "%s is %lld, expected in [%d, %d]", what,
                            (long long)axis, n->opset >= neg_since ? -rank : 0, rank - 1);
    return BD_OK;
}

/* Normalises every axis of l against rank into out; repeated axes are invalid. */
static bd_status norm_axes(bd_diag *d, const bd_node *n, const char *what, const int_list *l,
                           int rank, int neg_since, int *out) {
    bool seen[BD_MAX_RANK] = {false};
    for (int64_t i = 0; i < l->len; i++) {
        bd_status s = norm_axis(d, n, what, l->v[i], rank, neg_since, &out[i]);
        if (s) return s;
        if (seen[out[i]])
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s repeats axis %d", what, out[i]);
        seen[out[i]] = true;
    }
    return BD_OK;
}

/* Product of dims[from, to): 0 when an extent is 0, else -1 when one is unknown. False on
 * overflow. */
static bool dims_product(const int64_t *dims, int from, int to, int64_t *out) {
    for (int i = from; i < to; i++)
        if (dims[i] == 0) {
            *out = 0;
            return true;
        }
    int64_t p = 1;
    bool unknown = false;
    for (int i = from; i < to; i++) {
        if (dims[i] < 0)
            unknown = true;
        else if (!bd_mul_i64(p, dims[i], &p))
            return false;
    }
    *out = unknown ? -1 : p;
    return true;
}

static bd_status set_unknown_rank(bd_diag *d, const bd_node *n, bd_value *out, int dtype) {
    return bd_value_set(d, n, out, dtype, -1, NULL);
}

static bd_status fail_rank_limit(bd_diag *d, const bd_node *n, int64_t rank) {
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output has rank %lld, above bdc's limit of %d",
                        (long long)rank, BD_MAX_RANK);
}

/* Sets out to the given rank with every extent unknown. */
static bd_status set_unknown_dims(bd_diag *d, const bd_node *n, bd_value *out, int dtype,
                                  int64_t rank) {
    if (rank > BD_MAX_RANK)
        return fail_rank_limit(d, n, rank);
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < rank; i++) dims[i] = -1;
    return bd_value_set(d, n, out, dtype, (int)rank, dims);
}

/* ---- folding helpers ---- */

/* Bytes per element for folding by copy; 0 for strings and sub-byte types, which are not folded. */
static size_t fold_elem_size(int dtype) {
    int bits = bd_dtype_bits(dtype);
    return dtype != BD_DT_STRING && bits >= 8 ? (size_t)bits / 8 : 0;
}

/* A fresh tensor for output k shaped as inferred, or *t = NULL when folding declines (omitted
 * output, unknown shape, dtype not copyable, too many elements). */
static bd_status fold_output(bd_graph *g, const bd_node *n, bd_diag *d, int k, int dtype,
                             bd_tensor **t) {
    *t = NULL;
    const bd_value *v = bd_node_out(g, n, k);
    int64_t numel;
    if (!v || !bd_value_shape_known(v) || !fold_elem_size(dtype) ||
        !bd_dims_numel(v->rank, v->dims, &numel) || numel > BD_FOLD_MAX_ELEMS)
        return BD_OK;
    *t = bd_tensor_new(&g->model->arena, dtype, v->rank, v->dims);
    if (!*t) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for a folded output");
    return BD_OK;
}

/* Product of dims[from, to) of a tensor that exists (so its element count fits). */
static int64_t tensor_span(const bd_tensor *t, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= t->dims[i];
    return p;
}

/* Fills dst (dense, shaped dims) from src, where output index (i0..ir) reads source element
 * base + sum(ik * strides[k]); strides may be 0 (broadcast) or negative (reversed slices). */
static void copy_strided(uint8_t *dst, const uint8_t *src, size_t esize, int rank,
                         const int64_t *dims, const int64_t *strides, int64_t base) {
    int64_t numel;
    if (!bd_dims_numel(rank, dims, &numel)) return;
    int64_t idx[BD_MAX_RANK] = {0};
    int64_t off = base;
    for (int64_t i = 0; i < numel; i++) {
        memcpy(dst + (size_t)i * esize, src + (size_t)off * esize, esize);
        for (int k = rank - 1; k >= 0; k--) {
            off += strides[k];
            if (++idx[k] < dims[k]) break;
            off -= strides[k] * dims[k];
            idx[k] = 0;
        }
    }
}

/* ---- Concat ---- */

bd_status bd_infer_concat(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *out = bd_node_out(g, n, 0);
    const bd_attr *a = bd_node_attr(n, "axis");
    if (!a || a->type != BD_ATTR_INT)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' (int) is required");
    int dtype = 0, rank = -1;
    for (int i = 0; i < n->n_inputs; i++) {
        const bd_value *v = bd_node_in(g, n, i);
        if (!v) return bd_node_fail(d, BD_ERR_INVALID, n, "input %d is missing", i);
        if (v->dtype && dtype && v->dtype != dtype)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d has dtype %s, expected %s", i,
                                bd_dtype_name(v->dtype), bd_dtype_name(dtype));
        if (v->dtype) dtype = v->dtype;
        if (v->rank >= 0 && rank >= 0 && v->rank != rank)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d has rank %d, expected %d", i,
                                v->rank, rank);
        if (v->rank >= 0) rank = v->rank;
    }
    if (rank < 0) return set_unknown_rank(d, n, out, dtype);
    int axis;
    bd_status s = norm_axis(d, n, "attribute 'axis'", a->i, rank, 11, &axis);
    if (s) return s;
    int64_t dims[BD_MAX_RANK];
    for (int j = 0; j < rank; j++) dims[j] = -1;
    dims[axis] = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const bd_value *v = bd_node_in(g, n, i);
        if (v->rank < 0) {
            dims[axis] = -1;
            continue;
        }
        for (int j = 0; j < rank; j++) {
            if (j == axis || v->dims[j] < 0) continue;
            if (dims[j] >= 0 && dims[j] != v->dims[j])
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "input %d has extent %lld on axis %d, expected %lld", i,
                                    (long long)v->dims[j], j, (long long)dims[j]);
            dims[j] = v->dims[j];
        }
    }
    for (int i = 0; i < n->n_inputs && dims[axis] >= 0; i++) {
        const bd_value *v = bd_node_in(g, n, i);
        if (v->dims[axis] < 0)
            dims[axis] = -1;
        else if (!bd_add_i64(dims[axis], v->dims[axis], &dims[axis]))
            return bd_node_fail(d, BD_ERR_INVALID, n, "concatenated extent on axis %d overflows",
                                axis);
    }
    return bd_value_set(d, n, out, dtype, rank, dims);
}

bd_status bd_fold_concat(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_tensor *t;
    bd_status s = fold_output(g, n, d, 0, bd_node_in(g, n, 0)->constant->dtype, &t);
    if (s || !t) return s;
    int axis;
    bd_norm_axis(bd_attr_int(n, "axis", 0), t->rank, &axis);
    int64_t outer = tensor_span(t, 0, axis), inner = tensor_span(t, axis + 1, t->rank);
    size_t esize = fold_elem_size(t->dtype);
    uint8_t *dst = t->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < n->n_inputs; i++) {
            const bd_tensor *in = bd_node_in(g, n, i)->constant;
            size_t chunk = (size_t)(in->dims[axis] * inner) * esize;
            if (!chunk) continue;
            memcpy(dst, (const uint8_t *)in->data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    }
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), t);
}

/* ---- Constant ---- */

/* A Constant attribute: its name, required type, and the opset that introduced it. */
typedef struct constant_form {
    const char *name;
    bd_attr_type type;
    int since;
} constant_form;

static const constant_form constant_forms[] = {
    {"value", BD_ATTR_TENSOR, 1},         {"sparse_value", BD_ATTR_SPARSE_TENSOR, 11},
    {"value_float", BD_ATTR_FLOAT, 12},   {"value_floats", BD_ATTR_FLOATS, 12},
    {"value_int", BD_ATTR_INT, 12},       {"value_ints", BD_ATTR_INTS, 12},
    {"value_string", BD_ATTR_STRING, 12}, {"value_strings", BD_ATTR_STRINGS, 12},
};

/* The tensor a Constant's value_* attribute describes, allocated in the model's arena. */
static bd_tensor *constant_from_list(bd_graph *g, const bd_attr *a) {
    bool list = a->type == BD_ATTR_FLOATS || a->type == BD_ATTR_INTS || a->type == BD_ATTR_STRINGS;
    int64_t len = list ? a->n : 1;
    int dtype = a->type == BD_ATTR_FLOAT || a->type == BD_ATTR_FLOATS ? BD_DT_FLOAT
                : a->type == BD_ATTR_INT || a->type == BD_ATTR_INTS   ? BD_DT_INT64
                                                                      : BD_DT_STRING;
    bd_tensor *t = bd_tensor_new(&g->model->arena, dtype, list ? 1 : 0, &len);
    if (!t) return NULL;
    for (int64_t i = 0; i < len; i++) {
        switch (a->type) {
        case BD_ATTR_FLOAT: ((float *)t->data)[i] = a->f; break;
        case BD_ATTR_FLOATS: ((float *)t->data)[i] = a->floats[i]; break;
        case BD_ATTR_INT: ((int64_t *)t->data)[i] = a->i; break;
        case BD_ATTR_INTS: ((int64_t *)t->data)[i] = a->ints[i]; break;
        case BD_ATTR_STRING: t->strings[i] = a->s; break;
        default: t->strings[i] = a->strings[i]; break;
        }
    }
    return t;
}

bd_status bd_infer_constant(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_attr *found = NULL;
    const constant_form *form = NULL;
    for (size_t k = 0; k < BD_COUNT(constant_forms); k++) {
        const bd_attr *a = bd_node_attr(n, constant_forms[k].name);
        if (!a) continue;
        if (found)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "attributes '%s' and '%s' both given, expected exactly one",
                                found->name, a->name);
        found = a;
        form = &constant_forms[k];
    }
    if (!found)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "one of the attributes value, value_float(s), value_int(s), "
                            "value_string(s), sparse_value is required");
    if (n->opset < form->since)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute '%s' needs opset %d, the node has opset %d", form->name,
                            form->since, n->opset);
    if (found->type != form->type)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' has the wrong type",
                            form->name);
    if (form->type == BD_ATTR_SPARSE_TENSOR)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "sparse constants are not supported");
    bd_tensor *t = form->type == BD_ATTR_TENSOR ? found->t : constant_from_list(g, found);
    if (!t) {
        if (form->type == BD_ATTR_TENSOR)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'value' holds no tensor");
        return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the constant");
    }
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), t);
}

/* ---- ConstantOfShape ---- */

/* The one-element tensor of attribute 'value', or NULL when absent (float32 zero). */
static bd_status constant_of_shape_value(bd_diag *d, const bd_node *n, const bd_tensor **out) {
    *out = NULL;
    const bd_attr *a = bd_node_attr(n, "value");
    if (!a) return BD_OK;
    if (a->type != BD_ATTR_TENSOR || !a->t)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'value' must be a tensor");
    if (a->t->numel != 1)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute 'value' has %lld elements, expected 1",
                            (long long)a->t->numel);
    if (a->t->dtype == BD_DT_STRING || !bd_dtype_known(a->t->dtype))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'value' has dtype %s",
                            bd_dtype_name(a->t->dtype));
    *out = a->t;
    return BD_OK;
}

bd_status bd_infer_constant_of_shape(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *out = bd_node_out(g, n, 0);
    const bd_tensor *value;
    bd_status s = constant_of_shape_value(d, n, &value);
    if (s) return s;
    int dtype = value ? value->dtype : BD_DT_FLOAT;
    int_list shape;
    s = list_from_input(g, n, d, 0, "shape", 0, BD_MAX_RANK, BD_ERR_UNSUPPORTED, &shape);
    if (s) return s;
    if (!shape.known) {
        if (shape.len < 0) return set_unknown_rank(d, n, out, dtype);
        return set_unknown_dims(d, n, out, dtype, shape.len);
    }
    for (int i = 0; i < shape.len; i++)
        if (shape.v[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (shape) has negative extent %lld",
                                (long long)shape.v[i]);
    return bd_value_set(d, n, out, dtype, (int)shape.len, shape.v);
}

bd_status bd_fold_constant_of_shape(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *value;
    bd_status s = constant_of_shape_value(d, n, &value);
    if (s) return s;
    bd_tensor *t;
    s = fold_output(g, n, d, 0, value ? value->dtype : BD_DT_FLOAT, &t);
    if (s || !t) return s;
    if (value) {
        size_t esize = fold_elem_size(t->dtype);
        for (int64_t i = 0; i < t->numel; i++)
            memcpy((uint8_t *)t->data + (size_t)i * esize, value->data, esize);
    }
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), t);
}

/* ---- Expand ---- */

bd_status bd_infer_expand(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int_list shape;
    bd_status s = list_from_input(g, n, d, 1, "shape", 0, BD_MAX_RANK, BD_ERR_UNSUPPORTED, &shape);
    if (s) return s;
    if (!shape.given) return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) is required");
    for (int i = 0; shape.known && i < shape.len; i++)
        if (shape.v[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) has negative extent %lld",
                                (long long)shape.v[i]);
    if (x->rank < 0 || shape.len < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (shape.len > BD_MAX_RANK) return fail_rank_limit(d, n, shape.len);
    int rank;
    int64_t dims[BD_MAX_RANK];
    if (shape.known) {
        if (!bd_broadcast_shapes(x->rank, x->dims, (int)shape.len, shape.v, &rank, dims)) {
            bd_value target = {.rank = (int)shape.len};
            memcpy(target.dims, shape.v, sizeof shape.v);
            char a[256], b[256];
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input 0 of shape %s cannot be broadcast to input 1 (shape) %s",
                                bd_shape_str(x, a, sizeof a), bd_shape_str(&target, b, sizeof b));
        }
        return bd_value_set(d, n, out, x->dtype, rank, dims);
    }
    /* Unknown target: an input extent other than 1 survives broadcasting unchanged. */
    rank = x->rank > shape.len ? x->rank : (int)shape.len;
    for (int i = 0; i < rank; i++) {
        int xi = i - (rank - x->rank);
        dims[i] = xi >= 0 && x->dims[xi] != 1 ? x->dims[xi] : -1;
    }
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

bd_status bd_fold_expand(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant;
    bd_value *out = bd_node_out(g, n, 0);
    bd_tensor *t;
    bd_status s = fold_output(g, n, d, 0, x->dtype, &t);
    if (s || !t) return s;
    int64_t xstrides[BD_MAX_RANK], strides[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xstrides);
    for (int i = 0; i < t->rank; i++) {
        int xi = i - (t->rank - x->rank);
        strides[i] = xi >= 0 && x->dims[xi] != 1 ? xstrides[xi] : 0;
    }
    copy_strided(t->data, x->data, fold_elem_size(t->dtype), t->rank, t->dims, strides, 0);
    return bd_value_set_constant(d, n, out, t);
}

/* ---- Flatten ---- */

bd_status bd_infer_flatten(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int64_t axis = bd_attr_int(n, "axis", 1);
    int64_t dims[2] = {-1, -1};
    if (x->rank < 0) {
        if (axis == 0) dims[0] = 1;
        return bd_value_set(d, n, out, x->dtype, 2, dims);
    }
    /* axis == rank is allowed: everything goes into the first output dim. */
    int r = x->rank;
    if (axis < 0 && n->opset < 11)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute 'axis' is %lld; negative axes need opset 11, the node has "
                            "opset %d", (long long)axis, n->opset);
    if (axis < -r || axis > r)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is %lld, expected in [%d, %d]",
                            (long long)axis, n->opset >= 11 ? -r : 0, r);
    int ax = (int)(axis < 0 ? axis + r : axis);
    if (!dims_product(x->dims, 0, ax, &dims[0]) || !dims_product(x->dims, ax, r, &dims[1]))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0's element count overflows");
    return bd_value_set(d, n, out, x->dtype, 2, dims);
}

/* ---- Gather ---- */

bd_status bd_infer_gather(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1);
    bd_value *out = bd_node_out(g, n, 0);
    if (idx->dtype && idx->dtype != BD_DT_INT32 && idx->dtype != BD_DT_INT64)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "input 1 (indices) has dtype %s, expected int32 or int64",
                            bd_dtype_name(idx->dtype));
    if (x->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (x->rank == 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 is a scalar, expected rank >= 1");
    int axis;
    bd_status s = norm_axis(d, n, "attribute 'axis'", bd_attr_int(n, "axis", 0), x->rank, 1, &axis);
    if (s) return s;
    int64_t size = x->dims[axis];
    if (idx->constant && size >= 0) {
        for (int64_t i = 0; i < idx->constant->numel; i++) {
            int64_t k = bd_tensor_get_i64(idx->constant, i);
            if (k < -size || k >= size)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "input 1 (indices) holds %lld, out of range for extent %lld",
                                    (long long)k, (long long)size);
        }
    }
    if (idx->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    int rank = x->rank - 1 + idx->rank;
    if (rank > BD_MAX_RANK)
        return fail_rank_limit(d, n, rank);
    int64_t dims[BD_MAX_RANK];
    int o = 0;
    for (int i = 0; i < axis; i++) dims[o++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++) dims[o++] = idx->dims[i];
    for (int i = axis + 1; i < x->rank; i++) dims[o++] = x->dims[i];
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

bd_status bd_fold_gather(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant, *idx = bd_node_in(g, n, 1)->constant;
    bd_value *out = bd_node_out(g, n, 0);
    bd_tensor *t;
    bd_status s = fold_output(g, n, d, 0, x->dtype, &t);
    if (s || !t) return s;
    int axis;
    bd_norm_axis(bd_attr_int(n, "axis", 0), x->rank, &axis);
    int64_t outer = tensor_span(x, 0, axis), inner = tensor_span(x, axis + 1, x->rank);
    int64_t size = x->dims[axis];
    size_t block = (size_t)inner * fold_elem_size(x->dtype);
    uint8_t *dst = t->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < idx->numel; i++) {
            int64_t k = bd_tensor_get_i64(idx, i);
            if (k < -size || k >= size)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "input 1 (indices) holds %lld, out of range for extent %lld",
                                    (long long)k, (long long)size);
            if (k < 0) k += size;
            if (!block) continue;
            memcpy(dst, (const uint8_t *)x->data + (size_t)(o * size + k) * block, block);
            dst += block;
        }
    }
    return bd_value_set_constant(d, n, out, t);
}

/* ---- Range ---- */

/* Checks Range's three scalar inputs: same dtype, one of the types the spec allows. */
static bd_status range_check(bd_graph *g, const bd_node *n, bd_diag *d, int *dtype) {
    static const char *const names[3] = {"start", "limit", "delta"};
    *dtype = 0;
    for (int i = 0; i < 3; i++) {
        const bd_value *v = bd_node_in(g, n, i);
        if (!v) return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is required", i, names[i]);
        int dt = v->dtype;
        if (n->opset >= 27 && (dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16))
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input %d (%s) has dtype %s, not "
                                "supported yet", i, names[i], bd_dtype_name(dt));
        if (dt && dt != BD_DT_FLOAT && dt != BD_DT_DOUBLE && dt != BD_DT_INT16 &&
            dt != BD_DT_INT32 && dt != BD_DT_INT64)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input %d (%s) has dtype %s, expected float32, float64, int16, "
                                "int32 or int64", i, names[i], bd_dtype_name(dt));
        if (dt && *dtype && dt != *dtype)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has dtype %s, expected %s", i,
                                names[i], bd_dtype_name(dt), bd_dtype_name(*dtype));
        if (dt) *dtype = dt;
        /* The spec asks for scalars; a one-element vector is accepted as runtimes do. */
        if (v->rank > 1 || (v->rank == 1 && v->dims[0] >= 0 && v->dims[0] != 1))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) must be a scalar", i,
                                names[i]);
    }
    return BD_OK;
}

/* Element count of Range(start, limit, delta) per the spec: max(ceil((limit - start) / delta), 0),
 * exact for integers and evaluated in the inputs' own float type otherwise. */
static bd_status range_count(const bd_node *n, bd_diag *d, const bd_tensor *const in[3],
                             int64_t *count) {
    if (bd_dtype_is_int(in[0]->dtype)) {
        int64_t start = bd_tensor_get_i64(in[0], 0), limit = bd_tensor_get_i64(in[1], 0);
        int64_t delta = bd_tensor_get_i64(in[2], 0);
        if (delta == 0) return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (delta) is 0");
        uint64_t span = 0, step;
        if (delta > 0) {
            if (limit > start) span = (uint64_t)limit - (uint64_t)start;
            step = (uint64_t)delta;
        } else {
            if (start > limit) span = (uint64_t)start - (uint64_t)limit;
            step = (uint64_t)(-(delta + 1)) + 1;
        }
        uint64_t c = span ? (span - 1) / step + 1 : 0;
        if (c > (uint64_t)INT64_MAX)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output would have %llu elements",
                                (unsigned long long)c);
        *count = (int64_t)c;
        return BD_OK;
    }
    double q;
    if (in[0]->dtype == BD_DT_FLOAT) {
        float start = ((const float *)in[0]->data)[0], limit = ((const float *)in[1]->data)[0];
        float delta = ((const float *)in[2]->data)[0];
        if (delta == 0) return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (delta) is 0");
        float fq = (limit - start) / delta;
        q = fq;
    } else {
        double start = bd_tensor_get_f64(in[0], 0), limit = bd_tensor_get_f64(in[1], 0);
        double delta = bd_tensor_get_f64(in[2], 0);
        if (delta == 0) return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (delta) is 0");
        q = (limit - start) / delta;
    }
    if (isnan(q))
        return bd_node_fail(d, BD_ERR_INVALID, n, "(limit - start) / delta is not a number");
    q = ceil(q);
    if (q >= 9.2e18)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output would have %g elements", q);
    *count = q > 0 ? (int64_t)q : 0;
    return BD_OK;
}

bd_status bd_infer_range(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *out = bd_node_out(g, n, 0);
    int dtype;
    bd_status s = range_check(g, n, d, &dtype);
    if (s) return s;
    int64_t count = -1;
    const bd_tensor *in[3];
    bool known = true;
    for (int i = 0; i < 3; i++) {
        in[i] = bd_node_in(g, n, i)->constant;
        known = known && in[i] && in[i]->numel == 1;
    }
    if (known) {
        s = range_count(n, d, in, &count);
        if (s) return s;
    }
    return bd_value_set(d, n, out, dtype, 1, &count);
}

bd_status bd_fold_range(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *in[3];
    for (int i = 0; i < 3; i++) in[i] = bd_node_in(g, n, i)->constant;
    bd_tensor *t;
    bd_status s = fold_output(g, n, d, 0, in[0]->dtype, &t);
    if (s || !t) return s;
    /* Floats accumulate in their own type, as the spec's loop body does. */
    if (t->dtype == BD_DT_FLOAT) {
        float v = ((const float *)in[0]->data)[0], delta = ((const float *)in[2]->data)[0];
        for (int64_t i = 0; i < t->numel; i++, v += delta) ((float *)t->data)[i] = v;
    } else if (t->dtype == BD_DT_DOUBLE) {
        double v = bd_tensor_get_f64(in[0], 0), delta = bd_tensor_get_f64(in[2], 0);
        for (int64_t i = 0; i < t->numel; i++, v += delta) ((double *)t->data)[i] = v;
    } else {
        /* Every element lies between start and limit, so stepping to the next one cannot
         * overflow; stepping past the last one could, so that step is not taken. */
        int64_t v = bd_tensor_get_i64(in[0], 0), delta = bd_tensor_get_i64(in[2], 0);
        for (int64_t i = 0; i < t->numel; i++) {
            bd_tensor_set_i64(t, i, v);
            if (i + 1 < t->numel) v += delta;
        }
    }
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), t);
}

/* ---- Reshape ---- */

bd_status bd_infer_reshape(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int_list shape;
    bd_status s = list_from_input(g, n, d, 1, "shape", 0, BD_MAX_RANK, BD_ERR_UNSUPPORTED, &shape);
    if (s) return s;
    if (!shape.given) return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) is required");
    if (!shape.known) {
        if (shape.len < 0) return set_unknown_rank(d, n, out, x->dtype);
        return set_unknown_dims(d, n, out, x->dtype, shape.len);
    }
    bool allowzero = n->opset >= 14 && bd_attr_int(n, "allowzero", 0) != 0;
    int rank = (int)shape.len, infer_at = -1;
    bool has_zero = false;
    bool copied[BD_MAX_RANK] = {false};
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int64_t v = shape.v[i];
        dims[i] = v;
        if (v == -1) {
            if (infer_at >= 0)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) has more than one -1");
            infer_at = i;
        } else if (v < -1) {
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) has invalid extent %lld",
                                (long long)v);
        } else if (v == 0) {
            has_zero = true;
            if (allowzero) continue;
            /* 0 copies the input's extent at the same index. */
            if (x->rank >= 0 && i >= x->rank)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "input 1 (shape) copies dim %d (value 0), but input 0 has "
                                    "rank %d", i, x->rank);
            dims[i] = x->rank >= 0 ? x->dims[i] : -1;
            copied[i] = true;
        }
    }
    if (allowzero && has_zero && infer_at >= 0)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "input 1 (shape) has both 0 and -1, which allowzero=1 forbids");
    if (x->rank < 0) return bd_value_set(d, n, out, x->dtype, rank, dims);
    /* Compare element counts; an unknown input extent that a 0 copies cancels out. */
    int64_t in_count = 1, out_count = 1;
    bool in_known = true;
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] < 0) {
            if (!(i < rank && copied[i])) in_known = false;
        } else if (!bd_mul_i64(in_count, x->dims[i], &in_count)) {
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 0's element count overflows");
        }
    }
    for (int i = 0; i < rank; i++) {
        if (i == infer_at || dims[i] < 0) continue;
        if (!bd_mul_i64(out_count, dims[i], &out_count))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape)'s element count overflows");
    }
    if (in_known && infer_at >= 0) {
        if (out_count == 0 || in_count % out_count != 0)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "cannot infer the -1 extent: %lld elements into groups of %lld",
                                (long long)in_count, (long long)out_count);
        dims[infer_at] = in_count / out_count;
    } else if (in_known && in_count != out_count) {
        char buf[256];
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "input 0 of shape %s has %lld elements, input 1 (shape) asks for %lld",
                            bd_shape_str(x, buf, sizeof buf), (long long)in_count,
                            (long long)out_count);
    }
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

/* Reshape, Flatten, Squeeze and Unsqueeze: same data, the inferred shape. */
bd_status bd_fold_reshape(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant;
    bd_value *out = bd_node_out(g, n, 0);
    bd_tensor *t;
    bd_status s = fold_output(g, n, d, 0, x->dtype, &t);
    if (s || !t) return s;
    BD_ASSERT(t->nbytes == x->nbytes);
    if (t->nbytes) memcpy(t->data, x->data, (size_t)t->nbytes);
    return bd_value_set_constant(d, n, out, t);
}

/* ---- Shape ---- */

bd_status bd_infer_shape(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int64_t len = -1;
    if (x->rank < 0) return bd_value_set(d, n, out, BD_DT_INT64, 1, &len);
    int64_t r = x->rank, start = 0, end = r;
    if (n->opset >= 15) {
        /* start/end select a range of dims, clamped like Python slicing. */
        start = bd_attr_int(n, "start", 0);
        end = bd_attr_int(n, "end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < 0 ? 0 : end > r ? r : end;
    }
    len = end > start ? end - start : 0;
    bool known = true;
    for (int64_t i = start; i < start + len; i++) known = known && x->dims[i] >= 0;
    if (!known) return bd_value_set(d, n, out, BD_DT_INT64, 1, &len);
    bd_tensor *t = bd_tensor_new(&g->model->arena, BD_DT_INT64, 1, &len);
    if (!t) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the folded shape");
    for (int64_t i = 0; i < len; i++) ((int64_t *)t->data)[i] = x->dims[start + i];
    return bd_value_set_constant(d, n, out, t);
}

/* Size: the element count, a constant as soon as the input's shape is static. */
bd_status bd_infer_size(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int64_t numel, none[1] = {0};
    if (!bd_value_shape_known(x) || !bd_dims_numel(x->rank, x->dims, &numel))
        return bd_value_set(d, n, out, BD_DT_INT64, 0, none);
    bd_tensor *t = bd_tensor_new(&g->model->arena, BD_DT_INT64, 0, none);
    if (!t) return bd_node_fail(d, BD_ERR_IO, n, "out of memory for the folded size");
    ((int64_t *)t->data)[0] = numel;
    return bd_value_set_constant(d, n, out, t);
}

/* DepthToSpace and SpaceToDepth: a 4-D input whose channels (or rows and columns) divide by the
 * block size (squared); DepthToSpace's mode is DCR or CRD from opset 11. */
bd_status bd_infer_depth_space(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) || (s = bd_need_rank(d, n, x, 0, "input", 4)))
        return s;
    const bd_attr *bs = bd_node_attr(n, "blocksize");
    if (!bs || bs->type != BD_ATTR_INT || bs->i < 1 || bs->i > (1 << 20))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'blocksize' (a positive int) is "
                            "required");
    int64_t b = bs->i, dims[4];
    const char *mode = bd_attr_string(g, n, "mode", "DCR");
    if (n->op == BD_OP_DEPTH_TO_SPACE && n->opset >= 11 && strcmp(mode, "DCR") != 0 &&
        strcmp(mode, "CRD") != 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute mode = '%s', expected 'DCR' or 'CRD'",
                            bd_quote(mode));
    if (x->rank < 0) return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, 4, x->dims);
    memcpy(dims, x->dims, sizeof dims);
    bool to_space = n->op == BD_OP_DEPTH_TO_SPACE;
    for (int i = 1; i < 4; i++) {
        int64_t div = to_space ? (i == 1 ? b * b : 1) : (i == 1 ? 1 : b);
        if (dims[i] >= 0 && dims[i] % div)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input dim %d (%lld) is not a multiple of "
                                "%lld", i, (long long)dims[i], (long long)div);
        if (dims[i] < 0) continue;
        int64_t grow = to_space ? (i == 1 ? 1 : b) : (i == 1 ? b * b : 1);
        if (!bd_mul_i64(dims[i] / div, grow, &dims[i]))
            return bd_fail_overflow(d, n, "the output shape");
    }
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, 4, dims);
}

/* Tile: each dim times its repeat count (input 1, one per dim). */
bd_status bd_infer_tile(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int_list reps;
    bd_status s = list_from_input(g, n, d, 1, "repeats", 0, BD_MAX_RANK, BD_ERR_INVALID, &reps);
    if (s) return s;
    if (!reps.given) return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (repeats) is required");
    if (x->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (reps.len >= 0 && reps.len != x->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (repeats) has %lld values for input 0 "
                            "of rank %d", (long long)reps.len, x->rank);
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (reps.known && reps.v[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (repeats) has negative count %lld",
                                (long long)reps.v[i]);
        dims[i] = -1;
        if (reps.known && x->dims[i] >= 0 && !bd_mul_i64(x->dims[i], reps.v[i], &dims[i]))
            return bd_fail_overflow(d, n, "the output shape");
    }
    return bd_value_set(d, n, out, x->dtype, x->rank, dims);
}

/* OneHot: indices with a dim of extent depth (input 1, a scalar) inserted at axis; the values'
 * dtype (input 2: off and on). */
bd_status bd_infer_one_hot(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *ind = bd_node_in(g, n, 0), *depth = bd_node_in(g, n, 1);
    const bd_value *values = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, ind, 0, "indices")) ||
        (s = bd_need_present(d, n, depth, 1, "depth")) ||
        (s = bd_need_present(d, n, values, 2, "values")))
        return s;
    if (values->rank >= 0 && bd_value_shape_known(values) &&
        (values->rank != 1 || values->dims[0] != 2))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (values) must hold 2 elements (off, "
                            "on)");
    if (depth->rank > 1 || (depth->rank == 1 && depth->dims[0] != 1))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (depth) must be a scalar");
    bd_value *out = bd_node_out(g, n, 0);
    if (ind->rank < 0) return set_unknown_rank(d, n, out, values->dtype);
    if (ind->rank + 1 > BD_MAX_RANK) return fail_rank_limit(d, n, ind->rank + 1);
    int axis;
    if ((s = norm_axis(d, n, "attribute axis", bd_attr_int(n, "axis", -1), ind->rank + 1, 1,
                         &axis)))
        return s;
    int64_t dims[BD_MAX_RANK], k = -1;
    if (depth->constant && depth->constant->numel == 1) {
        double v = bd_tensor_get_f64(depth->constant, 0);
        if (!(v >= 1 && v < 9e18))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (depth) is %g, expected at least 1",
                                v);
        k = (int64_t)v;
    }
    for (int i = 0, j = 0; i <= ind->rank; i++) dims[i] = i == axis ? k : ind->dims[j++];
    return bd_value_set(d, n, out, values->dtype, ind->rank + 1, dims);
}

/* GatherElements: indices of the data's rank; the output has the indices' shape. */
bd_status bd_infer_gather_elements(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "data")) ||
        (s = bd_need_present(d, n, idx, 1, "indices")) ||
        (s = bd_need_int_indices(d, n, idx, 1, "indices")))
        return s;
    if (x->rank >= 0 && idx->rank >= 0 && x->rank != idx->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (indices) has rank %d, input 0 rank %d",
                            idx->rank, x->rank);
    int axis;
    if (x->rank >= 0 && (x->rank < 1 || !bd_norm_axis(bd_attr_int(n, "axis", 0), x->rank, &axis)))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, idx->rank, idx->dims);
}

/* Compress: the elements (slices along `axis`, or of the flattened input without one) whose
 * condition is true; the extent is known only when the condition is a constant. */
bd_status bd_infer_compress(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *c = bd_node_in(g, n, 1);
    bd_value *out = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) ||
        (s = bd_need_present(d, n, c, 1, "condition")) ||
        (s = bd_need_dtype(d, n, c, 1, "condition", BD_DT_BOOL)) ||
        (s = bd_need_rank(d, n, c, 1, "condition", 1)))
        return s;
    if (x->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    const bd_attr *a = bd_node_attr(n, "axis");
    int axis = -1;
    if (a && (s = norm_axis(d, n, "attribute 'axis'", a->i, x->rank, 1, &axis))) return s;
    int64_t dims[BD_MAX_RANK], len = -1;
    int rank = a ? x->rank : 1;
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
    if (!a && !dims_product(x->dims, 0, x->rank, &dims[0])) dims[0] = -1;
    int64_t avail = dims[a ? axis : 0];
    if (c->constant) {
        if (avail >= 0 && c->constant->numel > avail)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (condition) has %lld values for "
                                "%lld slices", (long long)c->constant->numel, (long long)avail);
        len = 0;
        for (int64_t i = 0; i < c->constant->numel; i++) len += bd_tensor_get_i64(c->constant, i) != 0;
    }
    dims[a ? axis : 0] = len;
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

/* CenterCropPad: the input with the extents of input 1 (shape) along `axes` (default all). */
bd_status bd_infer_center_crop_pad(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *sh = bd_node_in(g, n, 1);
    bd_value *out = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input_data")) ||
        (s = bd_need_present(d, n, sh, 1, "shape")) ||
        (s = bd_need_int_indices(d, n, sh, 1, "shape")))
        return s;
    if (x->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    int64_t axes[BD_MAX_RANK], want[BD_MAX_RANK], dims[BD_MAX_RANK];
    int naxes = x->rank, nw = 0;
    const bd_attr *a = bd_node_attr(n, "axes");
    if (a) {
        if (a->type != BD_ATTR_INTS || a->n > x->rank)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' must list at most %d axes",
                                x->rank);
        naxes = a->n;
        memcpy(axes, a->ints, (size_t)naxes * sizeof *axes);
        if ((s = bd_norm_axes(d, n, "attribute 'axes'", axes, naxes, x->rank))) return s;
    } else {
        for (int i = 0; i < naxes; i++) axes[i] = i;
    }
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
    bool known = bd_value_const_ints(sh, want, BD_MAX_RANK, &nw);
    if (known && nw != naxes)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) has %d values for %d axes", nw,
                            naxes);
    for (int i = 0; i < naxes; i++) {
        if (known && want[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (shape) holds %lld",
                                (long long)want[i]);
        dims[axes[i]] = known ? want[i] : -1;
    }
    return bd_value_set(d, n, out, x->dtype, x->rank, dims);
}

/* ReverseSequence: the input's shape; sequence_lens is int64 [batch]. */
bd_status bd_infer_reverse_sequence(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *l = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) ||
        (s = bd_need_present(d, n, l, 1, "sequence_lens")) ||
        (s = bd_need_dtype(d, n, l, 1, "sequence_lens", BD_DT_INT64)) ||
        (s = bd_need_rank(d, n, l, 1, "sequence_lens", 1)))
        return s;
    int64_t ba = bd_attr_int(n, "batch_axis", 1), ta = bd_attr_int(n, "time_axis", 0);
    if (x->rank >= 0 && (x->rank < 2 || ba < 0 || ta < 0 || ba > 1 || ta > 1 || ba == ta))
        return bd_node_fail(d, BD_ERR_INVALID, n, "batch_axis %lld and time_axis %lld must be 0 "
                            "and 1 in some order, the input of rank >= 2", (long long)ba,
                            (long long)ta);
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* HannWindow, HammingWindow, BlackmanWindow: a 1-D window of `size` (a scalar input) values in
 * output_datatype (default float); its extent is known once size is, and then it folds. */
bd_status bd_infer_window(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *size = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, size, 0, "size")) ||
        (s = bd_need_int_indices(d, n, size, 0, "size")))
        return s;
    int64_t dt = bd_attr_int(n, "output_datatype", BD_DT_FLOAT), len = -1;
    if (dt < INT32_MIN || dt > INT32_MAX || !bd_dtype_known((int)dt))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute output_datatype = %lld is not a "
                            "known dtype", (long long)dt);
    int nv = 0;
    if (size->constant && (!bd_value_const_ints(size, &len, 1, &nv) || nv != 1 || len < 0))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (size) must be one value >= 0");
    return bd_value_set(d, n, bd_node_out(g, n, 0), (int)dt, 1, &len);
}

/* The window's values as the reference computes them, in double: with N = size (periodic) or
 * size - 1, Hann sin^2(pi n / N), Hamming 25/46 - 21/46 cos(2 pi n / N), Blackman 0.42 -
 * 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N). */
bd_status bd_fold_window(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *y = bd_node_out(g, n, 0);
    bd_tensor *t;
    bd_status s = fold_output(g, n, d, 0, y->dtype, &t);
    if (s || !t) return s;
    const double pi = 3.14159265358979323846;
    double N = (double)t->numel - (bd_attr_int(n, "periodic", 1) ? 0 : 1);
    for (int64_t i = 0; i < t->numel; i++) {
        double v, a = (double)i * pi * 2 / N;
        if (n->op == BD_OP_HANN_WINDOW) {
            v = sin((double)i * pi / N);
            v *= v;
        } else if (n->op == BD_OP_HAMMING_WINDOW) {
            v = 25.0 / 46.0 - cos(a) * (1 - 25.0 / 46.0);
        } else {
            v = cos(a) * -0.5 + cos((double)i * pi * 4 / N) * 0.08 + 0.42;
        }
        bd_tensor_set_f64(t, i, v);
    }
    return bd_value_set_constant(d, n, y, t);
}

/* AffineGrid: theta [N, k, k + 1] (k = 2 or 3) and size [N, C, D1..Dk] (a constant: it decides
 * the shape) give the sampling grid [N, D1..Dk, k]. */
bd_status bd_infer_affine_grid(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *t = bd_node_in(g, n, 0), *sz = bd_node_in(g, n, 1);
    bd_value *out = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, t, 0, "theta")) || (s = bd_need_present(d, n, sz, 1, "size")) ||
        (s = bd_need_float(d, n, t, 0, "theta")) ||
        (s = bd_need_dtype(d, n, sz, 1, "size", BD_DT_INT64)) ||
        (s = bd_need_rank(d, n, t, 0, "theta", 3)))
        return s;
    int64_t v[BD_MAX_RANK], dims[BD_MAX_RANK];
    int nv = 0;
    if (!bd_value_const_ints(sz, v, BD_MAX_RANK, &nv)) { /* rank k + 2, extents unknown */
        int64_t k = bd_dim_of(sz, 0);
        if (k != -1 && k != 4 && k != 5)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (size) has %lld values, expected 4 "
                                "or 5", (long long)k);
        for (int i = 0; i < BD_MAX_RANK; i++) dims[i] = -1;
        if (k > 0) dims[k - 1] = k - 2;
        return bd_value_set(d, n, out, t->dtype, k < 0 ? -1 : (int)k, k < 0 ? NULL : dims);
    }
    if (nv != 4 && nv != 5)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (size) has %d values, expected 4 or 5",
                            nv);
    int k = nv - 2;
    for (int i = 0; i < nv; i++)
        if (v[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (size) holds %lld",
                                (long long)v[i]);
    if (t->rank == 3 && ((t->dims[1] >= 0 && t->dims[1] != k) || (t->dims[2] >= 0 && t->dims[2] != k + 1)))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (theta) must be [N, %d, %d]", k, k + 1);
    dims[0] = v[0];
    for (int i = 0; i < k; i++) dims[1 + i] = v[2 + i];
    dims[k + 1] = k;
    return bd_value_set(d, n, out, t->dtype, k + 2, dims);
}

/* GridSample: X [N, C, D1..Dk], grid [N, O1..Ok, k] of the same float type; the output is
 * [N, C, O1..Ok]. Opset 16 names the modes bilinear/bicubic and is 2-D only. */
bd_status bd_infer_grid_sample(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *grid = bd_node_in(g, n, 1);
    bd_value *out = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_present(d, n, grid, 1, "grid")) ||
        (s = bd_need_float(d, n, grid, 1, "grid")))
        return s;
    const char *mode = bd_attr_string(g, n, "mode", n->opset >= 20 ? "linear" : "bilinear");
    const char *pad = bd_attr_string(g, n, "padding_mode", "zeros");
    bool v20 = n->opset >= 20;
    if (strcmp(mode, "nearest") && strcmp(mode, v20 ? "linear" : "bilinear") &&
        strcmp(mode, v20 ? "cubic" : "bicubic"))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'mode' '%s' is not defined at opset "
                            "%d", bd_quote(mode), n->opset);
    if (strcmp(pad, "zeros") && strcmp(pad, "border") && strcmp(pad, "reflection"))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'padding_mode' '%s' is not one of "
                            "zeros, border, reflection", bd_quote(pad));
    if (x->rank < 0 || grid->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (x->rank < 3 || grid->rank != x->rank || (!v20 && x->rank != 4))
        return bd_node_fail(d, BD_ERR_INVALID, n, "X has rank %d and grid rank %d, expected equal "
                            "ranks of at least 3 (4 before opset 20)", x->rank, grid->rank);
    int64_t k = grid->dims[grid->rank - 1];
    if (k >= 0 && k != x->rank - 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "grid's last dim is %lld, expected %d",
                            (long long)k, x->rank - 2);
    if (x->dims[0] >= 0 && grid->dims[0] >= 0 && x->dims[0] != grid->dims[0])
        return bd_node_fail(d, BD_ERR_INVALID, n, "X has batch %lld, grid %lld",
                            (long long)x->dims[0], (long long)grid->dims[0]);
    int64_t dims[BD_MAX_RANK];
    dims[0] = x->dims[0] >= 0 ? x->dims[0] : grid->dims[0];
    dims[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++) dims[i] = grid->dims[i - 1];
    return bd_value_set(d, n, out, x->dtype, x->rank, dims);
}

/* RoiAlign: X [N, C, H, W], rois [R, 4] of X's type and batch_indices [R] give [R, C,
 * output_height, output_width]. coordinate_transformation_mode exists from opset 16. */
bd_status bd_infer_roi_align(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *rois = bd_node_in(g, n, 1), *bi = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_present(d, n, rois, 1, "rois")) ||
        (s = bd_need_present(d, n, bi, 2, "batch_indices")) ||
        (s = bd_need_float(d, n, x, 0, "X")) ||
        (s = bd_need_same_dtype(d, n, rois, 1, "rois", x)) ||
        (s = bd_need_dtype(d, n, bi, 2, "batch_indices", BD_DT_INT64)) ||
        (s = bd_need_rank(d, n, x, 0, "X", 4)) || (s = bd_need_rank(d, n, rois, 1, "rois", 2)) ||
        (s = bd_need_rank(d, n, bi, 2, "batch_indices", 1)))
        return s;
    const char *mode = bd_attr_string(g, n, "mode", "avg");
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'mode' '%s' is not avg or max",
                            bd_quote(mode));
    const char *ctm = bd_attr_string(g, n, "coordinate_transformation_mode", "half_pixel");
    if (n->opset < 16 && bd_node_attr(n, "coordinate_transformation_mode"))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'coordinate_transformation_mode' "
                            "exists from opset 16, the model uses opset %d", n->opset);
    if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'coordinate_transformation_mode' "
                            "'%s' is not half_pixel or output_half_pixel", bd_quote(ctm));
    int64_t oh = bd_attr_int(n, "output_height", 1), ow = bd_attr_int(n, "output_width", 1);
    if (oh < 1 || ow < 1 || bd_attr_int(n, "sampling_ratio", 0) < 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attributes 'output_height' and 'output_width' "
                            "must be >= 1 and 'sampling_ratio' >= 0");
    int64_t r = bd_dim_of(rois, 0), k = bd_dim_of(bi, 0);
    if (bd_dim_of(rois, 1) >= 0 && bd_dim_of(rois, 1) != 4)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (rois) must be [num_rois, 4]");
    if (r >= 0 && k >= 0 && r != k)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (rois) has %lld rows, input 2 "
                            "(batch_indices) %lld values", (long long)r, (long long)k);
    int64_t dims[4] = {r >= 0 ? r : k, bd_dim_of(x, 1), oh, ow};
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, 4, dims);
}

/* GatherND: indices [q..., k] with batch_dims b leading dims shared with the data; the output is
 * [q..., data dims b + k...]. */
bd_status bd_infer_gather_nd(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1);
    bd_value *out = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "data")) ||
        (s = bd_need_present(d, n, idx, 1, "indices")) ||
        (s = bd_need_dtype(d, n, idx, 1, "indices", BD_DT_INT64)))
        return s;
    int64_t b = n->opset >= 12 ? bd_attr_int(n, "batch_dims", 0) : 0;
    if (x->rank < 0 || idx->rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (b < 0 || idx->rank < 1 || b >= idx->rank || b >= x->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "batch_dims %lld does not fit indices of rank %d "
                            "and data of rank %d", (long long)b, idx->rank, x->rank);
    int64_t k = idx->dims[idx->rank - 1];
    if (k < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (k < 1 || b + k > x->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "index tuples of %lld components into data of "
                            "rank %d with batch_dims %lld", (long long)k, x->rank, (long long)b);
    for (int i = 0; i < b; i++)
        if (x->dims[i] >= 0 && idx->dims[i] >= 0 && x->dims[i] != idx->dims[i])
            return bd_node_fail(d, BD_ERR_INVALID, n, "batch dim %d is %lld in the data and %lld "
                                "in the indices", i, (long long)x->dims[i],
                                (long long)idx->dims[i]);
    int rank = idx->rank - 1 + x->rank - (int)(b + k);
    if (rank > BD_MAX_RANK) return fail_rank_limit(d, n, rank);
    int64_t dims[BD_MAX_RANK];
    int o = 0;
    for (int i = 0; i < idx->rank - 1; i++) dims[o++] = idx->dims[i];
    for (int i = (int)(b + k); i < x->rank; i++) dims[o++] = x->dims[i];
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

/* Scatter (opsets 9-10), ScatterElements and ScatterND: the output is the data. ScatterElements'
 * indices have the data's rank and the updates their shape; ScatterND's indices are [q..., k]
 * with k <= rank, and its updates [q..., data dims k...]. */
bd_status bd_infer_scatter(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1), *u = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "data")) ||
        (s = bd_need_present(d, n, idx, 1, "indices")) ||
        (s = bd_need_present(d, n, u, 2, "updates")) ||
        (s = bd_need_int_indices(d, n, idx, 1, "indices")) ||
        (s = bd_need_same_dtype(d, n, u, 2, "updates", x)))
        return s;
    const char *red = bd_attr_string(g, n, "reduction", "none");
    bool known = !strcmp(red, "none") || ((!strcmp(red, "add") || !strcmp(red, "mul")) &&
                                          n->opset >= 16) ||
                 ((!strcmp(red, "max") || !strcmp(red, "min")) && n->opset >= 18);
    if (!known || (n->op == BD_OP_SCATTER && bd_node_attr(n, "reduction")))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'reduction' '%s' is not defined at "
                            "opset %d", bd_quote(red), n->opset);
    if (x->rank >= 0 && idx->rank >= 0 && u->rank >= 0) {
        if (n->op != BD_OP_SCATTER_ND) {
            int axis;
            if (idx->rank != x->rank || u->rank != idx->rank)
                return bd_node_fail(d, BD_ERR_INVALID, n, "indices and updates must have the "
                                    "data's rank %d", x->rank);
            if (x->rank < 1 || !bd_norm_axis(bd_attr_int(n, "axis", 0), x->rank, &axis))
                return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axis' is out of range");
            for (int k = 0; k < idx->rank; k++)
                if (idx->dims[k] >= 0 && u->dims[k] >= 0 && idx->dims[k] != u->dims[k])
                    return bd_node_fail(d, BD_ERR_INVALID, n, "updates dim %d is %lld, indices "
                                        "dim %d is %lld", k, (long long)u->dims[k], k,
                                        (long long)idx->dims[k]);
        } else {
            int64_t k = idx->rank >= 1 ? idx->dims[idx->rank - 1] : -1;
            if (idx->rank < 1 || (k >= 0 && k > x->rank))
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (indices) must be [..., k] "
                                    "with k at most the data's rank %d", x->rank);
            if (k >= 0 && u->rank != idx->rank - 1 + x->rank - (int)k)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (updates) has rank %d, "
                                    "expected %lld", u->rank,
                                    (long long)(idx->rank - 1 + x->rank - k));
        }
    }
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* EyeLike: ones on the k-th diagonal of a 2-D shape; a constant as soon as that shape is static. */
bd_status bd_infer_eye_like(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) || (s = bd_need_rank(d, n, x, 0, "input", 2)))
        return s;
    const bd_attr *dt_attr = bd_node_attr(n, "dtype");
    int dt = x->dtype;
    if (dt_attr && dt_attr->type == BD_ATTR_INT) {
        if (dt_attr->i < INT32_MIN || dt_attr->i > INT32_MAX || !bd_dtype_known((int)dt_attr->i))
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute dtype = %lld is not a known dtype",
                                (long long)dt_attr->i);
        dt = (int)dt_attr->i;
    }
    if (x->rank < 0 || !bd_value_shape_known(x)) return bd_value_set(d, n, out, dt, 2, x->dims);
    bd_tensor *t = bd_tensor_new(&g->model->arena, dt, 2, x->dims);
    if (!t || dt == BD_DT_STRING)
        return bd_value_set(d, n, out, dt, 2, x->dims); /* too big to fold: refused at lowering */
    int64_t k = bd_attr_int(n, "k", 0);
    for (int64_t i = 0; i < x->dims[0]; i++) {
        int64_t j = i + k;
        if (j < 0 || j >= x->dims[1]) continue;
        if (dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16) /* 1.0 as a bit pattern */
            ((uint16_t *)t->data)[i * x->dims[1] + j] = dt == BD_DT_FLOAT16 ? 0x3c00 : 0x3f80;
        else
            bd_tensor_set_f64(t, i * x->dims[1] + j, 1.0);
    }
    return bd_value_set_constant(d, n, out, t);
}

/* Trilu: the input's shape; k (input 1) must be a scalar. */
bd_status bd_infer_trilu(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0), *k = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) ||
        (s = bd_need_dtype(d, n, k, 1, "k", BD_DT_INT64)))
        return s;
    if (x->rank >= 0 && x->rank < 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 has rank %d, expected at least 2",
                            x->rank);
    if (k && k->rank > 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (k) has rank %d, expected a scalar",
                            k->rank);
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* ---- Slice ---- */

/* Clamps start/end on one axis of extent dim per the spec and returns the output extent. */
static int64_t slice_axis(int64_t dim, int64_t *start, int64_t end, int64_t step) {
    if (dim == 0) {
        *start = 0;
        return 0;
    }
    int64_t s = *start, e = end;
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    /* A backward slice starts at most at the last element and may end before the first. */
    int64_t hi = step < 0 ? dim - 1 : dim, end_lo = step < 0 ? -1 : 0;
    s = s < 0 ? 0 : s > hi ? hi : s;
    e = e < end_lo ? end_lo : e > hi ? hi : e;
    *start = s;
    if (step > 0) return e > s ? (int64_t)(((uint64_t)(e - s) - 1) / (uint64_t)step + 1) : 0;
    uint64_t mag = (uint64_t)(-(step + 1)) + 1;
    return s > e ? (int64_t)(((uint64_t)(s - e) - 1) / mag + 1) : 0;
}

/* Reads Slice's starts/ends/axes/steps (attributes before opset 10, inputs after), validates
 * them and works out the plan. */
bd_status bd_slice_plan_of(bd_graph *g, const bd_node *n, bd_diag *d, bd_slice_plan *p) {
    const bd_value *x = bd_node_in(g, n, 0);
    int r = x->rank;
    bd_status too_long = r >= 0 ? BD_ERR_INVALID : BD_ERR_UNSUPPORTED;
    static const char *const names[5] = {"data", "starts", "ends", "axes", "steps"};
    int_list l[5]; /* indexed like the inputs: 1 starts, 2 ends, 3 axes, 4 steps */
    bd_status s;
    if (n->opset < 10) {
        for (int i = 1; i <= 3; i++)
            if ((s = list_from_attr(d, n, names[i], BD_MAX_RANK, too_long, &l[i]))) return s;
        list_init(&l[4]);
        for (int i = 1; i <= 2; i++)
            if (!l[i].given)
                return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' is required", names[i]);
    } else {
        int index_dtype = 0;
        for (int i = 1; i <= 4; i++) {
            if ((s = list_from_input(g, n, d, i, names[i], LIST_INT32, BD_MAX_RANK, too_long,
                                     &l[i])))
                return s;
            const bd_value *v = bd_node_in(g, n, i);
            if (v && v->dtype && index_dtype && v->dtype != index_dtype)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has dtype %s, expected %s",
                                    i, names[i], bd_dtype_name(v->dtype),
                                    bd_dtype_name(index_dtype));
            if (v && v->dtype) index_dtype = v->dtype;
        }
        for (int i = 1; i <= 2; i++)
            if (!l[i].given)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is required", i,
                                    names[i]);
    }
    int64_t count = -1;
    int first = 0;
    for (int i = 1; i <= 4; i++) {
        if (l[i].len < 0) continue;
        if (count >= 0 && l[i].len != count)
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s has %lld values, %s has %lld", names[i],
                                (long long)l[i].len, names[first], (long long)count);
        count = l[i].len;
        first = i;
    }
    for (int i = 0; l[4].known && i < l[4].len; i++)
        if (l[4].v[i] == 0) return bd_node_fail(d, BD_ERR_INVALID, n, "steps[%d] is 0", i);
    p->rank = r;
    if (r < 0) return BD_OK;
    for (int i = 0; i < r; i++) {
        p->start[i] = 0;
        p->step[i] = 1;
        p->dims[i] = x->dims[i];
    }
    int axes[BD_MAX_RANK];
    if (l[3].given) {
        if (!l[3].known) {
            for (int i = 0; i < r; i++) p->dims[i] = -1;
            return BD_OK;
        }
        if ((s = norm_axes(d, n, "axes", &l[3], r, 10, axes))) return s;
    } else {
        if (count < 0) {
            for (int i = 0; i < r; i++) p->dims[i] = -1;
            return BD_OK;
        }
        if (count > r)
            return bd_node_fail(d, BD_ERR_INVALID, n, "starts has %lld values for rank %d",
                                (long long)count, r);
        for (int i = 0; i < count; i++) axes[i] = i;
    }
    bool known = l[1].known && l[2].known && (!l[4].given || l[4].known);
    for (int i = 0; i < count; i++) {
        int a = axes[i];
        if (!known || x->dims[a] < 0) {
            p->dims[a] = -1;
            continue;
        }
        p->start[a] = l[1].v[i];
        p->step[a] = l[4].given ? l[4].v[i] : 1;
        p->dims[a] = slice_axis(x->dims[a], &p->start[a], l[2].v[i], p->step[a]);
    }
    return BD_OK;
}

bd_status bd_infer_slice(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_slice_plan p;
    bd_status s = bd_slice_plan_of(g, n, d, &p);
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, p.rank, p.dims);
}

bd_status bd_fold_slice(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant;
    bd_value *out = bd_node_out(g, n, 0);
    bd_slice_plan p;
    bd_status s = bd_slice_plan_of(g, n, d, &p);
    if (s) return s;
    bd_tensor *t;
    if ((s = fold_output(g, n, d, 0, x->dtype, &t)) || !t) return s;
    int64_t xstrides[BD_MAX_RANK], strides[BD_MAX_RANK], base = 0;
    bd_dims_strides(x->rank, x->dims, xstrides);
    for (int i = 0; i < x->rank; i++) {
        /* A step larger than the extent yields at most one element; its stride is never taken
         * (and could overflow). */
        strides[i] = p.dims[i] > 1 ? xstrides[i] * p.step[i] : 0;
        base += xstrides[i] * p.start[i];
    }
    if (t->numel)
        copy_strided(t->data, x->data, fold_elem_size(t->dtype), t->rank, t->dims, strides, base);
    return bd_value_set_constant(d, n, out, t);
}

/* ---- Split ---- */

/* The extent of each output along the split axis (arena array of n_outputs; entries -1 when
 * unknown), or *sizes = NULL when the input's rank is unknown. */
static bd_status split_plan(bd_graph *g, const bd_node *n, bd_diag *d, int *axis,
                            int64_t **sizes) {
    const bd_value *x = bd_node_in(g, n, 0);
    int outs = n->n_outputs;
    *sizes = NULL;
    const bd_attr *num_attr = n->opset >= 18 ? bd_node_attr(n, "num_outputs") : NULL;
    const bd_value *split_in = n->opset >= 13 ? bd_node_in(g, n, 1) : NULL;
    const bd_attr *split_attr = n->opset < 13 ? bd_node_attr(n, "split") : NULL;
    if (num_attr && split_in)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "input 1 (split) and attribute 'num_outputs' are both given");
    if (split_in && split_in->dtype && split_in->dtype != BD_DT_INT64)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (split) has dtype %s, expected int64",
                            bd_dtype_name(split_in->dtype));
    if (split_in && split_in->rank >= 0 && split_in->rank != 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (split) has rank %d, expected 1",
                            split_in->rank);
    if (split_attr && split_attr->type != BD_ATTR_INTS)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'split' must be a list of ints");
    if (num_attr && (num_attr->type != BD_ATTR_INT || num_attr->i != outs))
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute 'num_outputs' is %lld, but the node has %d outputs",
                            (long long)num_attr->i, outs);
    if (n->opset >= 18 && !num_attr && !split_in)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "neither input 1 (split) nor attribute 'num_outputs' is given");
    if (x->rank < 0) return BD_OK;
    bd_status s = norm_axis(d, n, "attribute 'axis'", bd_attr_int(n, "axis", 0), x->rank, 11, axis);
    if (s) return s;
    int64_t dim = x->dims[*axis];
    int64_t *sz = bd_arena_array(&g->model->arena, (size_t)outs, sizeof *sz);
    if (!sz) return bd_node_fail(d, BD_ERR_IO, n, "out of memory");
    *sizes = sz;
    const bd_tensor *t = split_in ? split_in->constant : NULL;
    if (t || split_attr) {
        int64_t given = t ? t->numel : split_attr->n;
        if (given != outs)
            return bd_node_fail(d, BD_ERR_INVALID, n, "split has %lld values for %d outputs",
                                (long long)given, outs);
        int64_t sum = 0;
        for (int k = 0; k < outs; k++) {
            sz[k] = t ? bd_tensor_get_i64(t, k) : split_attr->ints[k];
            if (sz[k] < 0)
                return bd_node_fail(d, BD_ERR_INVALID, n, "split[%d] is negative (%lld)", k,
                                    (long long)sz[k]);
            if (!bd_add_i64(sum, sz[k], &sum))
                return bd_node_fail(d, BD_ERR_INVALID, n, "sum of split overflows");
        }
        if (dim >= 0 && sum != dim)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "split sums to %lld, but input 0 has extent %lld on axis %d",
                                (long long)sum, (long long)dim, *axis);
        return BD_OK;
    }
    for (int k = 0; k < outs; k++) sz[k] = -1;
    if (split_in || dim < 0) return BD_OK;
    if (num_attr) {
        /* Chunks of ceil(dim / outs); the last one takes what is left. */
        int64_t chunk = dim / outs + (dim % outs != 0);
        int64_t last = dim - chunk * (outs - 1);
        if (last < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "cannot split extent %lld into %d outputs", (long long)dim, outs);
        for (int k = 0; k < outs; k++) sz[k] = k == outs - 1 ? last : chunk;
        return BD_OK;
    }
    if (dim % outs != 0)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "extent %lld on axis %d does not split evenly into %d outputs",
                            (long long)dim, *axis, outs);
    for (int k = 0; k < outs; k++) sz[k] = dim / outs;
    return BD_OK;
}

bd_status bd_infer_split(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    int axis;
    int64_t *sizes;
    bd_status s = split_plan(g, n, d, &axis, &sizes);
    if (s) return s;
    for (int k = 0; k < n->n_outputs; k++) {
        bd_value *out = bd_node_out(g, n, k);
        if (!sizes) {
            if ((s = set_unknown_rank(d, n, out, x->dtype))) return s;
            continue;
        }
        int64_t dims[BD_MAX_RANK];
        memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
        dims[axis] = sizes[k];
        if ((s = bd_value_set(d, n, out, x->dtype, x->rank, dims))) return s;
    }
    return BD_OK;
}

bd_status bd_fold_split(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant;
    int axis;
    int64_t *sizes;
    bd_status s = split_plan(g, n, d, &axis, &sizes);
    if (s) return s;
    int64_t strides[BD_MAX_RANK], offset = 0;
    bd_dims_strides(x->rank, x->dims, strides);
    for (int k = 0; k < n->n_outputs; k++) {
        bd_tensor *t;
        if ((s = fold_output(g, n, d, k, x->dtype, &t))) return s;
        if (t && t->numel)
            copy_strided(t->data, x->data, fold_elem_size(t->dtype), t->rank, t->dims, strides,
                         offset * strides[axis]);
        if (t && (s = bd_value_set_constant(d, n, bd_node_out(g, n, k), t))) return s;
        offset += sizes[k];
    }
    return BD_OK;
}

/* ---- Squeeze / Unsqueeze ---- */

/* The axes operand: attribute before opset 13, input 1 from 13 on. */
static bd_status squeeze_axes(bd_graph *g, const bd_node *n, bd_diag *d, bd_status too_long,
                              int_list *axes) {
    if (n->opset < 13) return list_from_attr(d, n, "axes", BD_MAX_RANK, too_long, axes);
    return list_from_input(g, n, d, 1, "axes", LIST_SCALAR, BD_MAX_RANK, too_long, axes);
}

bd_status bd_infer_squeeze(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int r = x->rank;
    int_list axes;
    bd_status s = squeeze_axes(g, n, d, r >= 0 ? BD_ERR_INVALID : BD_ERR_UNSUPPORTED, &axes);
    if (s) return s;
    if (r < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (axes.given && !axes.known) {
        if (axes.len < 0) return set_unknown_rank(d, n, out, x->dtype);
        if (axes.len > r)
            return bd_node_fail(d, BD_ERR_INVALID, n, "axes has %lld values for rank %d",
                                (long long)axes.len, r);
        return set_unknown_dims(d, n, out, x->dtype, r - axes.len);
    }
    bool drop[BD_MAX_RANK] = {false};
    if (axes.given) {
        int ax[BD_MAX_RANK];
        if ((s = norm_axes(d, n, "axes", &axes, r, 11, ax))) return s;
        for (int i = 0; i < axes.len; i++) {
            if (x->dims[ax[i]] >= 0 && x->dims[ax[i]] != 1)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "cannot squeeze axis %d: input 0 has extent %lld there",
                                    ax[i], (long long)x->dims[ax[i]]);
            drop[ax[i]] = true;
        }
    } else {
        /* No axes: every extent-1 dim goes, which needs the whole shape. */
        if (!bd_value_shape_known(x)) return set_unknown_rank(d, n, out, x->dtype);
        for (int i = 0; i < r; i++) drop[i] = x->dims[i] == 1;
    }
    int64_t dims[BD_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < r; i++)
        if (!drop[i]) dims[rank++] = x->dims[i];
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

bd_status bd_infer_unsqueeze(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int_list axes;
    bd_status s = squeeze_axes(g, n, d, BD_ERR_UNSUPPORTED, &axes);
    if (s) return s;
    if (!axes.given)
        return bd_node_fail(d, BD_ERR_INVALID, n, n->opset < 13 ? "attribute 'axes' is required"
                                                                : "input 1 (axes) is required");
    if (x->rank < 0 || axes.len < 0) return set_unknown_rank(d, n, out, x->dtype);
    int64_t rank = x->rank + axes.len;
    if (rank > BD_MAX_RANK)
        return fail_rank_limit(d, n, rank);
    if (!axes.known) return set_unknown_dims(d, n, out, x->dtype, rank);
    /* Axes index the output, so they are normalised against its rank. */
    int ax[BD_MAX_RANK];
    if ((s = norm_axes(d, n, "axes", &axes, (int)rank, 11, ax))) return s;
    bool inserted[BD_MAX_RANK] = {false};
    for (int i = 0; i < axes.len; i++) inserted[ax[i]] = true;
    int64_t dims[BD_MAX_RANK];
    for (int i = 0, j = 0; i < rank; i++) dims[i] = inserted[i] ? 1 : x->dims[j++];
    return bd_value_set(d, n, out, x->dtype, (int)rank, dims);
}

/* ---- Transpose ---- */

/* The permutation: attribute 'perm' (validated) or the reversal of the axes. *rank is the output
 * rank, -1 when neither the input's rank nor 'perm' tells it. */
static bd_status transpose_perm(bd_graph *g, const bd_node *n, bd_diag *d, int *rank, int *perm) {
    const bd_value *x = bd_node_in(g, n, 0);
    int_list l;
    bd_status s = list_from_attr(d, n, "perm", BD_MAX_RANK,
                                 x->rank >= 0 ? BD_ERR_INVALID : BD_ERR_UNSUPPORTED, &l);
    if (s) return s;
    *rank = x->rank;
    if (!l.given) {
        for (int i = 0; i < x->rank; i++) perm[i] = x->rank - 1 - i;
        return BD_OK;
    }
    if (x->rank >= 0 && l.len != x->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'perm' has %lld values for rank %d",
                            (long long)l.len, x->rank);
    *rank = (int)l.len;
    bool seen[BD_MAX_RANK] = {false};
    for (int i = 0; i < l.len; i++) {
        if (l.v[i] < 0 || l.v[i] >= l.len || seen[l.v[i]])
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "attribute 'perm' is not a permutation of 0..%lld",
                                (long long)l.len - 1);
        seen[l.v[i]] = true;
        perm[i] = (int)l.v[i];
    }
    return BD_OK;
}

bd_status bd_infer_transpose(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    bd_value *out = bd_node_out(g, n, 0);
    int rank, perm[BD_MAX_RANK];
    bd_status s = transpose_perm(g, n, d, &rank, perm);
    if (s) return s;
    if (rank < 0) return set_unknown_rank(d, n, out, x->dtype);
    if (x->rank < 0) return set_unknown_dims(d, n, out, x->dtype, rank);
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < rank; i++) dims[i] = x->dims[perm[i]];
    return bd_value_set(d, n, out, x->dtype, rank, dims);
}

bd_status bd_fold_transpose(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant;
    bd_value *out = bd_node_out(g, n, 0);
    int rank, perm[BD_MAX_RANK];
    bd_status s = transpose_perm(g, n, d, &rank, perm);
    if (s) return s;
    bd_tensor *t;
    if ((s = fold_output(g, n, d, 0, x->dtype, &t)) || !t) return s;
    int64_t xstrides[BD_MAX_RANK], strides[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xstrides);
    for (int i = 0; i < rank; i++) strides[i] = xstrides[perm[i]];
    if (t->numel)
        copy_strided(t->data, x->data, fold_elem_size(t->dtype), rank, t->dims, strides, 0);
    return bd_value_set_constant(d, n, out, t);
}

/* ---- Pad ---- */

bd_status bd_infer_pad(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "data"))) return s;
    const char *mode = bd_attr_string(g, n, "mode", "constant");
    bool wrap = strcmp(mode, "wrap") == 0;
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") && !wrap)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'mode' is '%s', expected constant, "
                            "reflect, edge or wrap", bd_quote(mode));
    if (wrap && n->opset < 19)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'mode' 'wrap' exists from opset 19, "
                            "the model uses opset %d", n->opset);

    int rank = x->rank;
    int64_t pads[2 * BD_MAX_RANK], axes[BD_MAX_RANK];
    int npads = 0, naxes = rank;
    bool pads_known = true, axes_known = true, axes_given = false;
    if (n->opset < 11) {
        /* pads (and value) were attributes before opset 11. */
        for (int k = 1; k < n->n_inputs; k++)
            if (bd_node_in(g, n, k))
                return bd_node_fail(d, BD_ERR_INVALID, n, "input %d exists from opset 11, the "
                                    "model uses opset %d", k, n->opset);
        const bd_attr *a = bd_node_attr(n, "pads");
        if (!a || a->type != BD_ATTR_INTS)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'pads' (a list of ints) is "
                                "required before opset 11");
        if (a->n > 2 * BD_MAX_RANK || a->n % 2 || (rank >= 0 && a->n != 2 * rank))
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'pads' has %d values, expected "
                                "twice the rank of input 0", a->n);
        npads = a->n;
        memcpy(pads, a->ints, (size_t)npads * sizeof *pads);
    } else {
        bd_value *pv = bd_node_in(g, n, 1), *cv = bd_node_in(g, n, 2), *av = bd_node_in(g, n, 3);
        if ((s = bd_need_present(d, n, pv, 1, "pads")) ||
            (s = bd_need_dtype(d, n, pv, 1, "pads", BD_DT_INT64)) ||
            (s = bd_need_rank(d, n, pv, 1, "pads", 1)) ||
            (s = bd_need_same_dtype(d, n, cv, 2, "constant_value", x)))
            return s;
        if (cv && (cv->rank > 1 || bd_dim_of(cv, 0) > 1))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (constant_value) must be a scalar");
        if (av && n->opset < 18)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 3 (axes) exists from opset 18, the "
                                "model uses opset %d", n->opset);
        if ((s = bd_need_int_indices(d, n, av, 3, "axes")) || (s = bd_need_rank(d, n, av, 3, "axes", 1)))
            return s;
        if (av) {
            axes_given = true;
            if (!bd_value_const_ints(av, axes, BD_MAX_RANK, &naxes)) {
                if (av->constant)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "input 3 (axes) lists %lld axes, "
                                        "more than any supported rank",
                                        (long long)av->constant->numel);
                axes_known = false;
            } else if (rank >= 0 && (s = bd_norm_axes(d, n, "input 3 (axes)", axes, naxes, rank))) {
                return s;
            }
        }
        if (!bd_value_const_ints(pv, pads, 2 * BD_MAX_RANK, &npads)) {
            if (pv->constant)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (pads) has %lld values, more "
                                    "than any supported rank allows",
                                    (long long)pv->constant->numel);
            pads_known = false;
            npads = (int)(bd_dim_of(pv, 0) < 0 || bd_dim_of(pv, 0) > 2 * BD_MAX_RANK ? -1
                                                                              : bd_dim_of(pv, 0));
        }
        if (npads >= 0 && npads % 2)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (pads) has %d values, expected an "
                                "even count", npads);
    }
    /* Without axes, pads covers every axis, so its length fixes the rank. */
    if (!axes_given) {
        if (rank >= 0 && npads >= 0 && npads != 2 * rank)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (pads) has %d values, expected %d "
                                "(twice the rank of input 0)", npads, 2 * rank);
        if (rank < 0 && npads >= 0) rank = npads / 2;
        naxes = rank;
        for (int i = 0; i < naxes; i++) axes[i] = i;
    } else if (axes_known && npads >= 0 && npads != 2 * naxes) {
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (pads) has %d values, expected %d "
                            "(twice the number of axes)", npads, 2 * naxes);
    }
    if (rank < 0) return bd_value_set(d, n, y, x->dtype, -1, NULL);

    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = x->rank >= 0 && axes_known ? x->dims[i] : -1;
    if (!axes_known) return bd_value_set(d, n, y, x->dtype, rank, dims);
    for (int i = 0; i < naxes; i++) {
        int a = (int)axes[i];
        if (!pads_known || dims[a] < 0) {
            dims[a] = -1;
            continue;
        }
        /* Negative pads crop; the extent may not go below zero. */
        int64_t e;
        if (!bd_add_i64(dims[a], pads[i], &e) || !bd_add_i64(e, pads[naxes + i], &e))
            return bd_fail_overflow(d, n, "the padded extent");
        if (e < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: pads (%lld, %lld) crop the extent "
                                "%lld below zero", a, (long long)pads[i],
                                (long long)pads[naxes + i], (long long)dims[a]);
        /* edge, reflect and wrap copy input elements into the padding: some must remain. */
        int64_t head = pads[i], tail = pads[naxes + i], kept;
        bool grows = head > 0 || tail > 0;
        if (grows && strcmp(mode, "constant") != 0 &&
            (!bd_add_i64(dims[a], head < 0 ? head : 0, &kept) ||
             !bd_add_i64(kept, tail < 0 ? tail : 0, &kept) || kept <= 0))
            return bd_node_fail(d, BD_ERR_INVALID, n, "axis %d: mode '%s' pads with input elements "
                                "but none remain (extent %lld, pads %lld and %lld)", a, mode,
                                (long long)dims[a], (long long)head, (long long)tail);
        dims[a] = e;
    }
    return bd_value_set(d, n, y, x->dtype, rank, dims);
}

/* ---- Resize ---- */

/* Fails unless string attribute `name` (default dflt) is one of the NULL-terminated names. */
static bd_status check_choice(bd_graph *g, const bd_node *n, bd_diag *d, const char *name,
                              const char *dflt, const char *const *names, const char **out) {
    const char *v = bd_attr_string(g, n, name, dflt);
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            if (out) *out = v;
            return BD_OK;
        }
    return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' is '%s', not a value opset %d "
                        "defines", name, bd_quote(v), n->opset);
}

static bd_status check_resize_attrs(bd_graph *g, const bd_node *n, bd_diag *d,
                                    const char **policy) {
    static const char *const modes10[] = {"nearest", "linear", NULL};
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const coords11[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                           "asymmetric", "tf_half_pixel_for_nn",
                                           "tf_crop_and_resize", NULL};
    static const char *const coords13[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                           "asymmetric", "tf_crop_and_resize", NULL};
    static const char *const coords19[] = {"half_pixel", "half_pixel_symmetric",
                                           "pytorch_half_pixel", "align_corners", "asymmetric",
                                           "tf_crop_and_resize", NULL};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil", NULL};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
    bd_status s;
    bool flag;
    *policy = "stretch";
    if ((s = check_choice(g, n, d, "mode", "nearest", n->opset >= 11 ? modes : modes10, NULL)))
        return s;
    if (n->opset < 11) return BD_OK;
    const char *const *coords = n->opset >= 19 ? coords19 : n->opset >= 13 ? coords13 : coords11;
    if ((s = check_choice(g, n, d, "coordinate_transformation_mode", "half_pixel", coords, NULL)) ||
        (s = check_choice(g, n, d, "nearest_mode", "round_prefer_floor", nearest, NULL)) ||
        (s = bd_read_flag(d, n, "exclude_outside", 0, &flag)))
        return s;
    if (n->opset < 18) return BD_OK;
    if ((s = check_choice(g, n, d, "keep_aspect_ratio_policy", "stretch", policies, policy)))
        return s;
    return bd_read_flag(d, n, "antialias", 0, &flag);
}

/* A scales/sizes input that is absent or known to be empty (the "not given" spelling of opsets
 * 11 and 12). */
static bool resize_input_absent(const bd_value *v) {
    return !v || (v->constant && v->constant->numel == 0) || (v->rank == 1 && v->dims[0] == 0);
}

/* Output extents from constant sizes (with the keep_aspect_ratio_policy of opset 18). */
static bd_status resize_from_sizes(bd_diag *d, const bd_node *n, const bd_value *x,
                                   const bd_tensor *t, const int64_t *axes, int naxes,
                                   const char *policy, int64_t *dims) {
    int64_t sizes[BD_MAX_RANK];
    for (int i = 0; i < naxes; i++) {
        sizes[i] = bd_tensor_get_i64(t, i);
        if (sizes[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 3 (sizes) value %d is %lld, expected "
                                "a non-negative extent", i, (long long)sizes[i]);
    }
    if (strcmp(policy, "stretch") == 0) {
        for (int i = 0; i < naxes; i++) dims[axes[i]] = sizes[i];
        return BD_OK;
    }
    /* One scale for all axes, the smallest (not_larger) or largest (not_smaller) size / extent,
     * computed in float32 and rounded half away from zero like the ONNX reference. */
    bool not_larger = strcmp(policy, "not_larger") == 0;
    float scale = not_larger ? INFINITY : 0.0f;
    for (int i = 0; i < naxes; i++) {
        int64_t in = bd_dim_of(x, (int)axes[i]);
        if (in < 0) {
            for (int k = 0; k < naxes; k++) dims[axes[k]] = -1;
            return BD_OK;
        }
        if (in == 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "keep_aspect_ratio_policy '%s' cannot scale "
                                "the empty axis %lld", policy, (long long)axes[i]);
        float r = (float)sizes[i] / (float)in;
        scale = not_larger ? fminf(scale, r) : fmaxf(scale, r);
    }
    for (int i = 0; i < naxes; i++) {
        float e = roundf(scale * (float)bd_dim_of(x, (int)axes[i]));
        if (!(e < 9.2e18f)) return bd_fail_overflow(d, n, "the resized extent");
        dims[axes[i]] = (int64_t)e;
    }
    return BD_OK;
}

/* Output extents from constant scales: floor(extent * scale) in float32, as ONNX and
 * onnxruntime compute it. */
static bd_status resize_from_scales(bd_diag *d, const bd_node *n, const bd_value *x,
                                    const bd_tensor *t, int idx, const int64_t *axes, int naxes,
                                    int64_t *dims) {
    for (int i = 0; i < naxes; i++) {
        float scale = (float)bd_tensor_get_f64(t, i);
        if (!(scale > 0.0f) || isinf(scale))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (scales) value %d is %g, expected "
                                "a positive finite scale", idx, i, (double)scale);
        int64_t in = bd_dim_of(x, (int)axes[i]);
        if (in < 0) {
            dims[axes[i]] = -1;
            continue;
        }
        float e = floorf((float)in * scale);
        if (!(e < 9.2e18f)) return bd_fail_overflow(d, n, "the resized extent");
        dims[axes[i]] = (int64_t)e;
    }
    return BD_OK;
}

/* ---- Upsample ---- */

/* Upsample (opsets 7 to 9) is Resize as opset 10 defines it: asymmetric coordinates, nearest or
 * linear, output extents floor(extent * scale); Resize's inference and lowering take it with its
 * opset (below 11). At opset 7 and 8 the scales are an attribute, which the verifier (verify.c)
 * turned into a constant input 1. From opset 10 the op is deprecated in favour of Resize. */
bd_status bd_infer_upsample(bd_graph *g, bd_node *n, bd_diag *d) {
    if (n->opset >= 10)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "Upsample is deprecated from opset 10 (%d "
                            "here), where Resize replaces it; bdc compiles it at opsets 7 to 9",
                            n->opset);
    if (n->n_inputs != 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "takes 2 inputs (X, scales) at opset %d, got %d",
                            n->opset, n->n_inputs);
    return bd_infer_resize(g, n, d);
}

bd_status bd_infer_resize(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    const char *policy;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = check_resize_attrs(g, n, d, &policy)))
        return s;

    /* Opset 10: (X, scales). 11-12: (X, roi, scales[, sizes]) with roi and scales required but
     * possibly empty; 13 on: roi and scales optional. An omitted roi or scales at 11-12 is
     * accepted like an empty one: neither decides the shape unless it holds values. */
    int scales_idx = n->opset < 11 ? 1 : 2;
    bd_value *roi = n->opset < 11 ? NULL : bd_node_in(g, n, 1);
    bd_value *scales = bd_node_in(g, n, scales_idx);
    bd_value *sizes = n->opset < 11 ? NULL : bd_node_in(g, n, 3);
    if (n->opset < 11 && n->n_inputs > 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "takes 2 inputs (X, scales) at opset %d, got %d",
                            n->opset, n->n_inputs);
    if (n->opset < 11 && (s = bd_need_present(d, n, scales, 1, "scales"))) return s;
    if ((s = bd_need_float(d, n, roi, 1, "roi")) ||
        (s = bd_need_dtype(d, n, scales, scales_idx, "scales", BD_DT_FLOAT)) ||
        (s = bd_need_dtype(d, n, sizes, 3, "sizes", BD_DT_INT64)) ||
        (s = bd_need_rank(d, n, scales, scales_idx, "scales", 1)) ||
        (s = bd_need_rank(d, n, sizes, 3, "sizes", 1)))
        return s;

    bool no_scales = resize_input_absent(scales), no_sizes = resize_input_absent(sizes);
    bool scales_known_len = scales && scales->rank == 1 && scales->dims[0] > 0;
    bool sizes_known_len = sizes && sizes->rank == 1 && sizes->dims[0] > 0;
    if (no_scales && no_sizes)
        return bd_node_fail(d, BD_ERR_INVALID, n, "needs one of input %d (scales) and input 3 "
                            "(sizes), got neither", scales_idx);
    if (scales_known_len && sizes_known_len)
        return bd_node_fail(d, BD_ERR_INVALID, n, "takes input 2 (scales) or input 3 (sizes), "
                            "not both");
    if (!no_scales && strcmp(policy, "stretch") != 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "keep_aspect_ratio_policy '%s' needs input 3 "
                            "(sizes), not scales", policy);

    /* The resized axes: all of them, or the axes attribute (opset 18 on). */
    int rank = x->rank, naxes = rank;
    int64_t axes[BD_MAX_RANK];
    const bd_attr *axes_attr = n->opset >= 18 ? bd_node_attr(n, "axes") : NULL;
    if (axes_attr) {
        if (axes_attr->type != BD_ATTR_INTS || axes_attr->n > BD_MAX_RANK)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' must list at most %d ints",
                                BD_MAX_RANK);
        naxes = axes_attr->n;
        memcpy(axes, axes_attr->ints, (size_t)naxes * sizeof *axes);
        if (rank >= 0 && (s = bd_norm_axes(d, n, "attribute 'axes'", axes, naxes, rank))) return s;
    }
    /* The input actually used, when it is known which one. */
    bd_value *used = no_sizes ? scales : no_scales ? sizes : NULL;
    const bd_tensor *t = used ? used->constant : NULL;
    if (t && !axes_attr && rank < 0) rank = naxes = (int)(t->numel <= BD_MAX_RANK ? t->numel : -1);
    if (rank < 0) return bd_value_set(d, n, y, x->dtype, -1, NULL);
    if (!axes_attr)
        for (int i = 0; i < rank; i++) axes[i] = i;
    if (t && t->numel != naxes)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has %lld values, expected %d (%s)",
                            used == sizes ? 3 : scales_idx, used == sizes ? "sizes" : "scales",
                            (long long)t->numel, naxes,
                            axes_attr ? "one per listed axis" : "the rank of input 0");

    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < rank; i++) dims[i] = x->rank >= 0 ? x->dims[i] : -1;
    if (!t) {
        for (int i = 0; i < naxes; i++) dims[axes[i]] = -1;
    } else if (used == sizes) {
        if ((s = resize_from_sizes(d, n, x, t, axes, naxes, policy, dims))) return s;
    } else if ((s = resize_from_scales(d, n, x, t, scales_idx, axes, naxes, dims))) {
        return s;
    }
    return bd_value_set(d, n, y, x->dtype, rank, dims);
}
