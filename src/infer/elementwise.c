/* elementwise.c — shape/dtype inference and constant folding for the elementwise ops:
 * unary math and activations, broadcasting arithmetic, comparisons and logic, Where, Cast,
 * Identity, Dropout and the normalisations (BatchNormalization, LayerNormalization), whose main
 * output has their input's shape.
 *
 * Inference follows the ONNX operator spec of the opset in force: input dtypes are checked
 * against the spec's type classes, shapes broadcast numpy-style with -1 for unknown extents, and
 * attribute/input signatures that moved between opsets (Clip's bounds, Dropout's ratio, the
 * BatchNormalization outputs) are read from where that opset puts them.
 *
 * Folding evaluates these ops on constants, mostly for the integer shape arithmetic exporters
 * emit around Shape/Gather/Concat. It must give exactly what the runtime would, so it computes
 * integers in 64 bits and declines (leaves the node to run time) whenever the result is not
 * exact: signed overflow, division by zero, negative integer powers, dtypes it cannot read. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "front/passes.h"
#include "infer/checks.h"

/* ---- shared checks ---- */

typedef bool (*dtype_pred)(int dt);

static bool dt_float(int dt) {
    return bd_dtype_is_float(dt);
}
static bool dt_numeric(int dt) {
    return bd_dtype_is_int(dt) || bd_dtype_is_float(dt);
}
static bool dt_signed_or_float(int dt) {
    return bd_dtype_is_signed(dt) || bd_dtype_is_float(dt);
}
static bool dt_int(int dt) {
    return bd_dtype_is_int(dt);
}
static bool dt_unsigned(int dt) {
    return bd_dtype_is_int(dt) && !bd_dtype_is_signed(dt);
}
static bool dt_bool(int dt) {
    return dt == BD_DT_BOOL;
}
static bool dt_numeric_or_bool(int dt) {
    return dt_numeric(dt) || dt == BD_DT_BOOL;
}
static bool dt_numeric_bool_or_string(int dt) {
    return dt_numeric_or_bool(dt) || dt == BD_DT_STRING;
}

static const char *dims_str(int rank, const int64_t *dims, char *buf, size_t len) {
    bd_value tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.rank = rank;
    if (rank > 0) memcpy(tmp.dims, dims, (size_t)rank * sizeof *dims);
    return bd_shape_str(&tmp, buf, len);
}

/* Input i, failing when the node omits it although the op requires it. */
static bd_status need_input(bd_graph *g, const bd_node *n, bd_diag *d, int i, bd_value **out) {
    *out = bd_node_in(g, n, i);
    if (!*out) return bd_node_fail(d, BD_ERR_INVALID, n, "input %d is required but missing", i);
    return BD_OK;
}

/* Fails unless input i's dtype is in the class `ok` (an unknown dtype passes). */
static bd_status check_dtype(bd_diag *d, const bd_node *n, int i, const bd_value *v, dtype_pred ok,
                             const char *expected) {
    if (!v->dtype || ok(v->dtype)) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d has dtype %s, expected %s", i,
                        bd_dtype_name(v->dtype), expected);
}

/* Fails unless input i has the same dtype as input j (dtype dt); unknown dtypes pass. */
static bd_status check_same_dtype(bd_diag *d, const bd_node *n, int i, const bd_value *v, int j,
                                  int dt) {
    if (!v->dtype || !dt || v->dtype == dt) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d has dtype %s, expected %s like input %d", i,
                        bd_dtype_name(v->dtype), bd_dtype_name(dt), j);
}

/* Fails unless input i holds exactly one element (rank 0, or every dim 1), where known. */
static bd_status check_scalar(bd_diag *d, const bd_node *n, int i, const bd_value *v,
                              const char *what) {
    for (int k = 0; k < v->rank; k++) {
        if (v->dims[k] < 0 || v->dims[k] == 1) continue;
        char buf[256];
        return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has shape %s, expected a scalar",
                            i, what, bd_shape_str(v, buf, sizeof buf));
    }
    return BD_OK;
}

/* Fails when any of inputs first.. of a node whose signature starts at opset `since` is given. */
static bd_status check_no_inputs_from(bd_diag *d, const bd_node *n, int first, int since) {
    for (int i = first; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input %d is only accepted from opset %d (the model uses opset %d)",
                                i, since, n->opset);
    return BD_OK;
}

bool bd_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                         int64_t *out) {
    if (ra < 0 || rb < 0) {
        *rout = -1; /* an unknown rank leaves the result's rank unknown, not incompatible */
        return true;
    }
    if (ra > BD_MAX_RANK || rb > BD_MAX_RANK) return false;
    int r = ra > rb ? ra : rb;
    int64_t res[BD_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
        if (x < 0) x = -1;
        if (y < 0) y = -1;
        if (x == y || y == 1)
            res[i] = x;
        else if (x == 1)
            res[i] = y;
        else if (x < 0) /* unknown must be 1 or match the known extent: the result is the latter */
            res[i] = y;
        else if (y < 0)
            res[i] = x;
        else
            return false;
    }
    if (r) memcpy(out, res, (size_t)r * sizeof *res);
    *rout = r;
    return true;
}

/* Multidirectional broadcast of inputs first..first+count-1 (all present). The rank is -1 when
 * any input's rank is unknown; the known ones are still checked against each other. */
static bd_status broadcast_inputs(bd_graph *g, const bd_node *n, bd_diag *d, int first, int count,
                                  int *rank, int64_t *dims) {
    int r = 0, known = 0, only = first;
    int64_t acc[BD_MAX_RANK];
    bool unknown = false;
    for (int i = first; i < first + count; i++) {
        const bd_value *v = bd_node_in(g, n, i);
        if (v->rank < 0) {
            unknown = true;
            continue;
        }
        if (!bd_broadcast_shapes(r, acc, v->rank, v->dims, &r, acc)) {
            char a[256], b[256];
            bd_shape_str(v, a, sizeof a);
            dims_str(r, acc, b, sizeof b);
            if (known == 1)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "input %d with shape %s does not broadcast against shape %s of "
                                    "input %d",
                                    i, a, b, only);
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input %d with shape %s does not broadcast against shape %s of "
                                "inputs %d..%d",
                                i, a, b, first, i - 1);
        }
        if (!known++) only = i;
    }
    *rank = unknown ? -1 : r;
    if (!unknown && r) memcpy(dims, acc, (size_t)r * sizeof *acc);
    return BD_OK;
}

/* ---- unary ---- */

static bd_status check_softmax_axis(const bd_node *n, bd_diag *d, const bd_value *x) {
    /* Before opset 13 the input is coerced to 2-D at `axis`, which defaults to 1. */
    int64_t axis = bd_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
    int norm;
    if (x->rank >= 0 && !bd_norm_axis(axis, x->rank, &norm))
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute axis = %lld is out of range for input 0 of rank %d",
                            (long long)axis, x->rank);
    return BD_OK;
}

static bd_status check_clip_bounds(bd_graph *g, const bd_node *n, bd_diag *d, const bd_value *x) {
    if (n->opset < 11) return check_no_inputs_from(d, n, 1, 11); /* min/max are attributes */
    static const char *names[] = {"", "min", "max"};
    for (int i = 1; i <= 2; i++) {
        const bd_value *b = bd_node_in(g, n, i);
        if (!b) continue;
        bd_status s = check_same_dtype(d, n, i, b, 0, x->dtype);
        if (!s) s = check_scalar(d, n, i, b, names[i]);
        if (s) return s;
    }
    return BD_OK;
}

bd_status bd_infer_unary(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (s) return s;
    switch (n->op) {
    case BD_OP_ABS:
    case BD_OP_ERF:
    case BD_OP_SIGN:
    case BD_OP_SHRINK: s = check_dtype(d, n, 0, x, dt_numeric, "a numeric type"); break;
    case BD_OP_CLIP:
        s = check_dtype(d, n, 0, x, dt_numeric, "a numeric type");
        if (!s) s = check_clip_bounds(g, n, d, x);
        break;
    case BD_OP_BITWISE_NOT: s = check_dtype(d, n, 0, x, dt_int, "an integer type"); break;
    case BD_OP_NEG:
    case BD_OP_RELU:
        s = check_dtype(d, n, 0, x, dt_signed_or_float, "a signed integer or float type");
        break;
    case BD_OP_SOFTMAX:
    case BD_OP_LOG_SOFTMAX:
        s = check_dtype(d, n, 0, x, dt_float, "a float type");
        if (!s) s = check_softmax_axis(n, d, x);
        break;
    case BD_OP_GELU: {
        s = check_dtype(d, n, 0, x, dt_float, "a float type");
        const char *approx = bd_attr_string(g, n, "approximate", "none");
        if (!s && strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0)
            s = bd_node_fail(d, BD_ERR_INVALID, n,
                             "attribute approximate = '%s', expected 'none' or 'tanh'",
                             bd_quote(approx));
        break;
    }
    default: s = check_dtype(d, n, 0, x, dt_float, "a float type"); break;
    }
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* IsNaN, IsInf: a bool per element of a float input. */
bd_status bd_infer_float_test(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = check_dtype(d, n, 0, x, dt_float, "a float type");
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), BD_DT_BOOL, x->rank, x->dims);
}

/* CastLike: input 0 converted to input 1's dtype (input 1's values and shape do not matter). */
bd_status bd_infer_cast_like(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x, *like;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = need_input(g, n, d, 1, &like);
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), like->dtype, x->rank, x->dims);
}

bd_status bd_infer_not(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = check_dtype(d, n, 0, x, dt_bool, "bool");
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), BD_DT_BOOL, x->rank, x->dims);
}

bd_status bd_infer_identity(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

bd_status bd_infer_cast(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (s) return s;
    const bd_attr *to = bd_node_attr(n, "to");
    if (!to || to->type != BD_ATTR_INT)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'to' (an int dtype code) is required");
    if (to->i < INT32_MIN || to->i > INT32_MAX || !bd_dtype_known((int)to->i))
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute to = %lld is not a known dtype",
                            (long long)to->i);
    /* `saturate` (opset 19) only changes float8 values, never shapes. */
    return bd_value_set(d, n, bd_node_out(g, n, 0), (int)to->i, x->rank, x->dims);
}

/* ---- broadcasting binary and variadic ---- */

/* Inputs 0..count-1 are present and share input 0's dtype; broadcast them into output 0. */
static bd_status infer_same_dtype_broadcast(bd_graph *g, bd_node *n, bd_diag *d, int count,
                                            dtype_pred ok, const char *expected, int out_dtype) {
    int dt = 0;
    for (int i = 0; i < count; i++) {
        bd_value *v;
        bd_status s = need_input(g, n, d, i, &v);
        if (!s) s = check_dtype(d, n, i, v, ok, expected);
        if (!s) s = check_same_dtype(d, n, i, v, 0, dt);
        if (s) return s;
        if (!dt) dt = v->dtype;
    }
    int rank = -1;
    int64_t dims[BD_MAX_RANK];
    bd_status s = broadcast_inputs(g, n, d, 0, count, &rank, dims);
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), out_dtype ? out_dtype : dt, rank, dims);
}

bd_status bd_infer_broadcast(bd_graph *g, bd_node *n, bd_diag *d) {
    return infer_same_dtype_broadcast(g, n, d, 2, dt_numeric, "a numeric type", 0);
}

bd_status bd_infer_logical(bd_graph *g, bd_node *n, bd_diag *d) {
    return infer_same_dtype_broadcast(g, n, d, 2, dt_bool, "bool", BD_DT_BOOL);
}

bd_status bd_infer_compare(bd_graph *g, bd_node *n, bd_diag *d) {
    if (n->op == BD_OP_EQUAL) {
        if (n->opset >= 19)
            return infer_same_dtype_broadcast(g, n, d, 2, dt_numeric_bool_or_string,
                                              "a numeric, bool or string type", BD_DT_BOOL);
        return infer_same_dtype_broadcast(g, n, d, 2, dt_numeric_or_bool, "a numeric or bool type",
                                          BD_DT_BOOL);
    }
    return infer_same_dtype_broadcast(g, n, d, 2, dt_numeric, "a numeric type", BD_DT_BOOL);
}

/* PRelu: slope broadcasts to X's shape (unidirectionally: the output is X's shape). */
bd_status bd_infer_prelu(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_status s = infer_same_dtype_broadcast(g, n, d, 2, dt_numeric, "a numeric type", 0);
    if (s) return s;
    const bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    if (!bd_value_shape_known(x) || !bd_value_shape_known(y)) return BD_OK;
    bool same = x->rank == y->rank;
    for (int i = 0; same && i < x->rank; i++) same = x->dims[i] == y->dims[i];
    if (same) return BD_OK;
    char a[256], b[256];
    return bd_node_fail(d, BD_ERR_INVALID, n, "slope %s does not broadcast to X %s",
                        bd_shape_str(bd_node_in(g, n, 1), a, sizeof a),
                        bd_shape_str(x, b, sizeof b));
}

bd_status bd_infer_bitwise(bd_graph *g, bd_node *n, bd_diag *d) {
    return infer_same_dtype_broadcast(g, n, d, 2, dt_int, "an integer type", 0);
}

/* BitShift: unsigned integers of one dtype, direction LEFT or RIGHT. */
bd_status bd_infer_bit_shift(bd_graph *g, bd_node *n, bd_diag *d) {
    const char *dir = bd_attr_string(g, n, "direction", "");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute direction = '%s', expected 'LEFT' or "
                            "'RIGHT'", bd_quote(dir));
    return infer_same_dtype_broadcast(g, n, d, 2, dt_unsigned, "an unsigned integer type", 0);
}

bd_status bd_infer_pow(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x, *y;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = need_input(g, n, d, 1, &y);
    if (!s) s = check_dtype(d, n, 0, x, dt_numeric, "a numeric type");
    if (!s) s = check_dtype(d, n, 1, y, dt_numeric, "a numeric type");
    /* Before opset 12 base and exponent share one type. */
    if (!s && n->opset < 12) s = check_same_dtype(d, n, 1, y, 0, x->dtype);
    if (s) return s;
    int rank;
    int64_t dims[BD_MAX_RANK];
    s = broadcast_inputs(g, n, d, 0, 2, &rank, dims);
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, rank, dims);
}

/* Min/Max before opset 8 do not broadcast: every input has one shape. */
static bd_status infer_same_shapes(bd_graph *g, bd_node *n, bd_diag *d, int dtype) {
    int rank = -1, first = -1;
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < n->n_inputs; i++) {
        const bd_value *v = bd_node_in(g, n, i);
        if (v->rank < 0) continue;
        if (rank < 0) {
            rank = v->rank;
            first = i;
            memcpy(dims, v->dims, (size_t)rank * sizeof *dims);
            continue;
        }
        bool same = v->rank == rank;
        for (int k = 0; same && k < rank; k++) {
            if (dims[k] < 0) dims[k] = v->dims[k];
            same = v->dims[k] < 0 || v->dims[k] == dims[k];
        }
        if (!same) {
            char a[256], b[256];
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input %d has shape %s, expected %s like input %d (no broadcasting "
                                "before opset 8)",
                                i, bd_shape_str(v, a, sizeof a), dims_str(rank, dims, b, sizeof b),
                                first);
        }
    }
    for (int i = 0; i < n->n_inputs; i++)
        if (bd_node_in(g, n, i)->rank < 0) rank = -1;
    return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, rank, dims);
}

bd_status bd_infer_variadic(bd_graph *g, bd_node *n, bd_diag *d) {
    if (n->n_inputs < 1) return bd_node_fail(d, BD_ERR_INVALID, n, "needs at least one input");
    if (n->opset >= 8)
        return infer_same_dtype_broadcast(g, n, d, n->n_inputs, dt_numeric, "a numeric type", 0);
    int dt = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        bd_value *v;
        bd_status s = need_input(g, n, d, i, &v);
        if (!s) s = check_dtype(d, n, i, v, dt_numeric, "a numeric type");
        if (!s) s = check_same_dtype(d, n, i, v, 0, dt);
        if (s) return s;
        if (!dt) dt = v->dtype;
    }
    return infer_same_shapes(g, n, d, dt);
}

bd_status bd_infer_where(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *c, *x, *y;
    bd_status s = need_input(g, n, d, 0, &c);
    if (!s) s = need_input(g, n, d, 1, &x);
    if (!s) s = need_input(g, n, d, 2, &y);
    if (!s) s = check_dtype(d, n, 0, c, dt_bool, "bool");
    if (!s) s = check_same_dtype(d, n, 2, y, 1, x->dtype);
    if (s) return s;
    int rank = -1;
    int64_t dims[BD_MAX_RANK];
    s = broadcast_inputs(g, n, d, 0, 3, &rank, dims);
    if (s) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype ? x->dtype : y->dtype, rank, dims);
}

/* ---- Dropout and the normalisations ---- */

bd_status bd_infer_dropout(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = check_dtype(d, n, 0, x, dt_float, "a float type");
    if (s) return s;
    if (n->opset < 12) {
        s = check_no_inputs_from(d, n, 1, 12); /* ratio was an attribute */
    } else {
        const bd_value *ratio = bd_node_in(g, n, 1), *training = bd_node_in(g, n, 2);
        if (ratio) {
            s = check_dtype(d, n, 1, ratio, dt_float, "a float type");
            if (!s && ratio->rank > 0)
                s = bd_node_fail(d, BD_ERR_INVALID, n,
                                 "input 1 (ratio) has rank %d, expected a scalar", ratio->rank);
        }
        if (!s && training) {
            s = check_dtype(d, n, 2, training, dt_bool, "bool");
            if (!s && training->rank > 0)
                s = bd_node_fail(d, BD_ERR_INVALID, n,
                                 "input 2 (training_mode) has rank %d, expected a scalar",
                                 training->rank);
        }
    }
    if (s) return s;
    s = bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
    if (s) return s;
    /* The mask is bool from opset 10; before, it has the data's type. */
    int mask_dtype = n->opset >= 10 ? BD_DT_BOOL : x->dtype;
    return bd_value_set(d, n, bd_node_out(g, n, 1), mask_dtype, x->rank, x->dims);
}

bd_status bd_infer_batchnorm(bd_graph *g, bd_node *n, bd_diag *d) {
    static const char *names[] = {"X", "scale", "B", "mean", "var"};
    bd_value *in[5];
    for (int i = 0; i < 5; i++) {
        bd_status s = need_input(g, n, d, i, &in[i]);
        if (!s) s = check_dtype(d, n, i, in[i], dt_float, "a float type");
        if (s) return s;
    }
    const bd_value *x = in[0];
    if (x->rank >= 0 && x->rank < 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (X) has rank %d, expected at least 2",
                            x->rank);
    /* Dtypes: all one T before opset 14; from 14 mean/var share their own type; from 15 so do
     * scale/B. `ref` is the input each must match. */
    for (int i = 1; i < 5; i++) {
        int ref = i >= 3 && n->opset >= 14 ? 3 : i < 3 && n->opset >= 15 ? 1 : 0;
        if (i == ref) continue;
        bd_status s = check_same_dtype(d, n, i, in[i], ref, in[ref]->dtype);
        if (s) return s;
    }
    /* Per-channel parameters are [C]; opset 7-8 with spatial=0 normalises per activation, with
     * parameters of shape [C, D1, ..., Dn]. */
    bool spatial = n->opset >= 9 || bd_attr_int(n, "spatial", 1) != 0;
    int prank = x->rank < 0 ? (spatial ? 1 : -1) : spatial ? 1 : x->rank - 1;
    int64_t pdims[BD_MAX_RANK];
    for (int k = 0; k < prank; k++)
        pdims[k] = x->rank < 0 ? -1 : x->dims[k + 1];
    for (int i = 1; i < 5 && prank >= 0; i++) {
        const bd_value *p = in[i];
        if (p->rank < 0) continue;
        bool ok = p->rank == prank;
        for (int k = 0; ok && k < prank; k++) {
            ok = p->dims[k] < 0 || pdims[k] < 0 || p->dims[k] == pdims[k];
            if (pdims[k] < 0) pdims[k] = p->dims[k];
        }
        if (!ok) {
            char a[256], b[256];
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has shape %s, expected %s", i,
                                names[i], bd_shape_str(p, a, sizeof a),
                                dims_str(prank, pdims, b, sizeof b));
        }
    }
    bd_status s = bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
    if (s) return s;
    if (n->opset >= 14) {
        /* Outputs running_mean/running_var exist only in training mode. */
        bool training = bd_attr_int(n, "training_mode", 0) != 0;
        for (int k = 1; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) continue;
            if (k > 2)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "output %d given, but the op has 3 outputs from opset 14", k);
            if (!training)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "output %d is only produced when training_mode = 1", k);
        }
        for (int k = 1; k <= 2 && !s; k++)
            s = bd_value_set(d, n, bd_node_out(g, n, k), in[k + 2]->dtype, prank, pdims);
        return s;
    }
    /* Before opset 14: optional mean, var, saved_mean, saved_var, all per channel, all T. */
    for (int k = 1; k <= 4 && !s; k++)
        s = bd_value_set(d, n, bd_node_out(g, n, k), x->dtype, prank, pdims);
    return s;
}

bd_status bd_infer_layernorm(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x, *scale;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = need_input(g, n, d, 1, &scale);
    if (!s) s = check_dtype(d, n, 0, x, dt_float, "a float type");
    if (!s) s = check_same_dtype(d, n, 1, scale, 0, x->dtype);
    const bd_value *bias = bd_node_in(g, n, 2);
    if (!s && bias) s = check_same_dtype(d, n, 2, bias, 0, x->dtype);
    if (s) return s;
    int64_t stash = bd_attr_int(n, "stash_type", BD_DT_FLOAT);
    if (stash != BD_DT_FLOAT && stash != BD_DT_BFLOAT16)
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute stash_type = %lld, expected 1 (float) or 16 (bfloat16)",
                            (long long)stash);
    int64_t axis_attr = bd_attr_int(n, "axis", -1);
    int axis = 0;
    if (x->rank >= 0 && !bd_norm_axis(axis_attr, x->rank, &axis))
        return bd_node_fail(d, BD_ERR_INVALID, n,
                            "attribute axis = %lld is out of range for input 0 of rank %d",
                            (long long)axis_attr, x->rank);
    /* Scale and B broadcast (one way) to the normalised shape X[axis:]. */
    for (int i = 1; i <= 2 && x->rank >= 0; i++) {
        const bd_value *p = bd_node_in(g, n, i);
        if (!p || p->rank < 0) continue;
        int nrank = x->rank - axis;
        bool ok = p->rank <= nrank;
        for (int k = 1; ok && k <= p->rank; k++) {
            int64_t pe = p->dims[p->rank - k], xe = x->dims[x->rank - k];
            ok = pe < 0 || xe < 0 || pe == 1 || pe == xe;
        }
        if (!ok) {
            char a[256], b[256];
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input %d (%s) has shape %s, which does not broadcast to the "
                                "normalised shape %s",
                                i, i == 1 ? "Scale" : "B", bd_shape_str(p, a, sizeof a),
                                dims_str(nrank, x->dims + axis, b, sizeof b));
        }
    }
    s = bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
    if (s) return s;
    /* Mean and InvStdDev keep X's rank with the normalised dims reduced to 1. */
    int64_t stat_dims[BD_MAX_RANK];
    for (int k = 0; k < x->rank; k++)
        stat_dims[k] = k < axis ? x->dims[k] : 1;
    for (int k = 1; k <= 2 && !s; k++)
        s = bd_value_set(d, n, bd_node_out(g, n, k), (int)stash, x->rank, stat_dims);
    return s;
}

/* InstanceNormalization: X of rank >= 3, scale and B one value per channel (dim 1). */
bd_status bd_infer_instancenorm(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x;
    bd_status s = need_input(g, n, d, 0, &x);
    if (!s) s = check_dtype(d, n, 0, x, dt_float, "a float type");
    for (int i = 1; i <= 2 && !s; i++) {
        bd_value *p;
        s = need_input(g, n, d, i, &p);
        if (!s) s = check_same_dtype(d, n, i, p, 0, x->dtype);
        if (s) return s;
        int64_t c = x->rank >= 2 ? x->dims[1] : -1;
        if (p->rank >= 0 && (p->rank != 1 || (c >= 0 && p->dims[0] >= 0 && p->dims[0] != c))) {
            char a[256];
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has shape %s, expected [C] "
                                "(%lld channels)", i, i == 1 ? "scale" : "B",
                                bd_shape_str(p, a, sizeof a), (long long)c);
        }
    }
    if (s) return s;
    if (x->rank >= 0 && x->rank < 3)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 has rank %d, expected at least 3",
                            x->rank);
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* ---- folding ---- */

bd_status bd_fold_none(bd_graph *g, bd_node *n, bd_diag *d) {
    (void)g;
    (void)n;
    (void)d;
    return BD_OK;
}

bd_status bd_fold_identity(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *x = bd_node_in(g, n, 0);
    if (!x || !x->constant) return BD_OK;
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), x->constant);
}

/* How folding computes with a dtype: the ones bd_tensor_get/set read and write exactly. */
typedef enum num_kind { NK_NONE, NK_FLOAT, NK_SIGNED, NK_UNSIGNED, NK_BOOL } num_kind;

static num_kind kind_of(int dt) {
    switch (dt) {
    case BD_DT_FLOAT:
    case BD_DT_DOUBLE: return NK_FLOAT;
    case BD_DT_INT8:
    case BD_DT_INT16:
    case BD_DT_INT32:
    case BD_DT_INT64: return NK_SIGNED;
    case BD_DT_UINT8:
    case BD_DT_UINT16:
    case BD_DT_UINT32:
    case BD_DT_UINT64: return NK_UNSIGNED;
    case BD_DT_BOOL: return NK_BOOL;
    default: return NK_NONE;
    }
}

/* Whether a signed result fits dtype dt (false means the runtime would wrap: decline). */
static bool signed_fits(int dt, int64_t v) {
    switch (dt) {
    case BD_DT_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case BD_DT_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case BD_DT_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;
    }
}

/* A constant input usable for folding: present, with readable data. */
static const bd_tensor *fold_input(bd_graph *g, const bd_node *n, int i) {
    const bd_value *v = bd_node_in(g, n, i);
    if (!v || !v->constant) return NULL;
    const bd_tensor *t = v->constant;
    if (kind_of(t->dtype) == NK_NONE || (t->numel && !t->data)) return NULL;
    return t;
}

/* Output tensor for a folded result, or NULL when the shape is too big to materialise. */
static bd_tensor *fold_output(bd_graph *g, int dtype, int rank, const int64_t *dims) {
    int64_t numel;
    if (rank < 0 || !bd_dims_numel(rank, dims, &numel) || numel > BD_FOLD_MAX_ELEMS) return NULL;
    return bd_tensor_new(&g->model->arena, dtype, rank, dims);
}

/* Element offset in t of output element i (output shape rank/dims), under broadcasting. */
static int64_t bcast_offset(const bd_tensor *t, int rank, const int64_t *dims, int64_t i) {
    int64_t off = 0, stride = 1;
    for (int k = rank - 1; k >= 0 && i; k--) {
        int64_t c = i % dims[k];
        i /= dims[k];
        int kt = k - (rank - t->rank);
        if (kt < 0) break;
        if (t->dims[kt] != 1) off += c * stride;
        stride *= t->dims[kt];
    }
    return off;
}

static bool is_compare(bd_op op) {
    return op == BD_OP_EQUAL || op == BD_OP_LESS || op == BD_OP_GREATER ||
           op == BD_OP_LESS_OR_EQUAL || op == BD_OP_GREATER_OR_EQUAL;
}

/* out[io] = a[ia] op b[ib] for a and b of one dtype; false when the result is not exact.
 * c_fmod: Mod's fmod attribute (the remainder takes the dividend's sign, else the divisor's). */
static bool eval_same_dtype(bd_op op, bool c_fmod, const bd_tensor *a, int64_t ia, const bd_tensor *b,
                            int64_t ib, bd_tensor *out, int64_t io) {
    num_kind k = kind_of(a->dtype);
    if (k == NK_FLOAT) {
        double x = bd_tensor_get_f64(a, ia), y = bd_tensor_get_f64(b, ib), r;
        switch (op) {
        case BD_OP_ADD: r = x + y; break;
        case BD_OP_SUB: r = x - y; break;
        case BD_OP_MUL: r = x * y; break;
        case BD_OP_DIV: r = x / y; break;
        case BD_OP_MIN: r = isnan(x) || isnan(y) ? NAN : x < y ? x : y; break;
        case BD_OP_MAX: r = isnan(x) || isnan(y) ? NAN : x > y ? x : y; break;
        case BD_OP_MOD:
            if (!c_fmod) return false; /* the spec requires fmod = 1 for floats */
            r = fmod(x, y);
            break;
        case BD_OP_EQUAL: bd_tensor_set_i64(out, io, x == y); return true;
        case BD_OP_LESS: bd_tensor_set_i64(out, io, x < y); return true;
        case BD_OP_GREATER: bd_tensor_set_i64(out, io, x > y); return true;
        case BD_OP_LESS_OR_EQUAL: bd_tensor_set_i64(out, io, x <= y); return true;
        case BD_OP_GREATER_OR_EQUAL: bd_tensor_set_i64(out, io, x >= y); return true;
        default: return false;
        }
        /* float32 results computed in double and rounded once equal the float32 operation's. */
        bd_tensor_set_f64(out, io, r);
        return true;
    }
    int64_t x = bd_tensor_get_i64(a, ia), y = bd_tensor_get_i64(b, ib), r;
    if (k == NK_BOOL) {
        if (op == BD_OP_AND)
            r = x && y;
        else if (op == BD_OP_OR)
            r = x || y;
        else if (op == BD_OP_XOR)
            r = !x != !y;
        else if (op == BD_OP_EQUAL)
            r = x == y;
        else
            return false;
        bd_tensor_set_i64(out, io, r);
        return true;
    }
    if (k == NK_UNSIGNED) {
        /* Unsigned arithmetic wraps, in C and at run time alike; storing truncates to width. */
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y, ur;
        switch (op) {
        case BD_OP_ADD: ur = ux + uy; break;
        case BD_OP_SUB: ur = ux - uy; break;
        case BD_OP_MUL: ur = ux * uy; break;
        case BD_OP_DIV:
        case BD_OP_MOD:
            if (!uy) return false;
            ur = op == BD_OP_DIV ? ux / uy : ux % uy;
            break;
        case BD_OP_MIN: ur = ux < uy ? ux : uy; break;
        case BD_OP_MAX: ur = ux > uy ? ux : uy; break;
        case BD_OP_EQUAL: ur = ux == uy; break;
        case BD_OP_LESS: ur = ux < uy; break;
        case BD_OP_GREATER: ur = ux > uy; break;
        case BD_OP_LESS_OR_EQUAL: ur = ux <= uy; break;
        case BD_OP_GREATER_OR_EQUAL: ur = ux >= uy; break;
        default: return false;
        }
        bd_tensor_set_i64(out, io, (int64_t)ur);
        return true;
    }
    switch (op) {
    case BD_OP_ADD:
        if (__builtin_add_overflow(x, y, &r)) return false;
        break;
    case BD_OP_SUB:
        if (__builtin_sub_overflow(x, y, &r)) return false;
        break;
    case BD_OP_MUL:
        if (__builtin_mul_overflow(x, y, &r)) return false;
        break;
    case BD_OP_DIV:
        if (y == 0 || (x == INT64_MIN && y == -1)) return false;
        r = x / y; /* truncates toward zero, as the runtime's C division does */
        break;
    case BD_OP_MOD:
        if (y == 0 || (x == INT64_MIN && y == -1)) return false;
        r = x % y;
        if (!c_fmod && r != 0 && (r < 0) != (y < 0)) r += y; /* the divisor's sign, as numpy */
        break;
    case BD_OP_MIN: r = x < y ? x : y; break;
    case BD_OP_MAX: r = x > y ? x : y; break;
    case BD_OP_EQUAL: r = x == y; break;
    case BD_OP_LESS: r = x < y; break;
    case BD_OP_GREATER: r = x > y; break;
    case BD_OP_LESS_OR_EQUAL: r = x <= y; break;
    case BD_OP_GREATER_OR_EQUAL: r = x >= y; break;
    default: return false;
    }
    if (!is_compare(op) && !signed_fits(a->dtype, r)) return false;
    bd_tensor_set_i64(out, io, r);
    return true;
}

/* base ** e for a non-negative e; false on overflow. */
static bool int_pow(int64_t base, int64_t e, int64_t *out) {
    int64_t r = 1;
    while (e) {
        if ((e & 1) && __builtin_mul_overflow(r, base, &r)) return false;
        e >>= 1;
        if (e && __builtin_mul_overflow(base, base, &base)) return false;
    }
    *out = r;
    return true;
}

/* Pow: the base's dtype decides; an integer base needs a non-negative integer exponent. */
static bool eval_pow(const bd_tensor *a, int64_t ia, const bd_tensor *b, int64_t ib, bd_tensor *out,
                     int64_t io) {
    num_kind ka = kind_of(a->dtype), kb = kind_of(b->dtype);
    if (ka == NK_FLOAT) {
        bd_tensor_set_f64(out, io, pow(bd_tensor_get_f64(a, ia), bd_tensor_get_f64(b, ib)));
        return true;
    }
    if (ka != NK_SIGNED) return false;
    int64_t r;
    if (kb == NK_FLOAT) {
        /* Computed in floating point and converted back: fold only integral results small
         * enough (2^24) to be exact in float32 too, so the precision used cannot matter. */
        double f = pow((double)bd_tensor_get_i64(a, ia), bd_tensor_get_f64(b, ib));
        if (!(fabs(f) <= 16777216.0) || f != trunc(f)) return false;
        r = (int64_t)f;
        if (!signed_fits(a->dtype, r)) return false;
        bd_tensor_set_i64(out, io, r);
        return true;
    }
    if (kb != NK_SIGNED && kb != NK_UNSIGNED) return false;
    int64_t e = bd_tensor_get_i64(b, ib);
    if (e < 0 || !int_pow(bd_tensor_get_i64(a, ia), e, &r) || !signed_fits(a->dtype, r))
        return false;
    bd_tensor_set_i64(out, io, r);
    return true;
}

/* out = a op b elementwise under broadcasting (a may be out itself). */
static bool fold_pair(bd_op op, bool c_fmod, const bd_tensor *a, const bd_tensor *b, bd_tensor *out) {
    for (int64_t i = 0; i < out->numel; i++) {
        int64_t ia = bcast_offset(a, out->rank, out->dims, i);
        int64_t ib = bcast_offset(b, out->rank, out->dims, i);
        bool ok = op == BD_OP_POW ? eval_pow(a, ia, b, ib, out, i)
                                  : eval_same_dtype(op, c_fmod, a, ia, b, ib, out, i);
        if (!ok) return false;
    }
    return true;
}

bd_status bd_fold_binary(bd_graph *g, bd_node *n, bd_diag *d) {
    int count = n->n_inputs;
    bool variadic = n->op == BD_OP_MIN || n->op == BD_OP_MAX;
    if (count < 1 || (!variadic && count != 2)) return BD_OK;
    const bd_tensor *first = fold_input(g, n, 0);
    if (!first) return BD_OK;
    int rank = first->rank;
    int64_t dims[BD_MAX_RANK];
    memcpy(dims, first->dims, sizeof dims);
    for (int i = 1; i < count; i++) {
        const bd_tensor *t = fold_input(g, n, i);
        if (!t || (n->op != BD_OP_POW && t->dtype != first->dtype)) return BD_OK;
        if (!bd_broadcast_shapes(rank, dims, t->rank, t->dims, &rank, dims)) return BD_OK;
    }
    int out_dtype = is_compare(n->op) || n->op == BD_OP_AND || n->op == BD_OP_OR ||
                    n->op == BD_OP_XOR ? BD_DT_BOOL : first->dtype;
    bool c_fmod = n->op == BD_OP_MOD && bd_attr_int(n, "fmod", 0) != 0;
    bd_tensor *out = fold_output(g, out_dtype, rank, dims);
    if (!out) return BD_OK;
    if (variadic) {
        /* Start from input 0 broadcast to the result, then fold the others in. */
        size_t esize = (size_t)bd_dtype_bits(out_dtype) / 8;
        for (int64_t i = 0; i < out->numel; i++)
            memcpy((char *)out->data + (size_t)i * esize,
                   (const char *)first->data + (size_t)bcast_offset(first, rank, dims, i) * esize,
                   esize);
        for (int i = 1; i < count; i++)
            if (!fold_pair(n->op, c_fmod, out, fold_input(g, n, i), out)) return BD_OK;
    } else if (!fold_pair(n->op, c_fmod, first, fold_input(g, n, 1), out)) {
        return BD_OK;
    }
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), out);
}

static double sigmoid(double x) {
    /* Written so that exp() never overflows for large |x|. */
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* out[i] = op(x[i]); false when the op or the dtype is not folded, or the result not exact. */
static bool eval_unary(bd_op op, const bd_tensor *x, int64_t i, bd_tensor *out) {
    num_kind k = kind_of(x->dtype);
    if (k == NK_FLOAT) {
        double v = bd_tensor_get_f64(x, i), r;
        switch (op) {
        case BD_OP_ABS: r = fabs(v); break;
        case BD_OP_NEG: r = -v; break;
        case BD_OP_SQRT: r = sqrt(v); break;
        case BD_OP_EXP: r = exp(v); break;
        case BD_OP_LOG: r = log(v); break;
        case BD_OP_RECIPROCAL: r = 1.0 / v; break;
        case BD_OP_RELU: r = v < 0 ? 0.0 : v; break;
        case BD_OP_SIGMOID: r = sigmoid(v); break;
        case BD_OP_TANH: r = tanh(v); break;
        case BD_OP_ERF: r = erf(v); break;
        case BD_OP_SIN: r = sin(v); break;
        case BD_OP_COS: r = cos(v); break;
        case BD_OP_TAN: r = tan(v); break;
        case BD_OP_ASIN: r = asin(v); break;
        case BD_OP_ACOS: r = acos(v); break;
        case BD_OP_ATAN: r = atan(v); break;
        case BD_OP_SINH: r = sinh(v); break;
        case BD_OP_COSH: r = cosh(v); break;
        case BD_OP_ASINH: r = asinh(v); break;
        case BD_OP_ACOSH: r = acosh(v); break;
        case BD_OP_ATANH: r = atanh(v); break;
        case BD_OP_CEIL: r = ceil(v); break;
        case BD_OP_FLOOR: r = floor(v); break;
        case BD_OP_ROUND: r = nearbyint(v); break;
        case BD_OP_SOFTPLUS: r = v > 0 ? v + log1p(exp(-v)) : log1p(exp(v)); break;
        case BD_OP_SOFTSIGN: r = v / (1 + fabs(v)); break;
        default: return false;
        }
        bd_tensor_set_f64(out, i, r);
        return true;
    }
    int64_t v = bd_tensor_get_i64(x, i), r;
    switch (k) {
    case NK_BOOL:
        if (op != BD_OP_NOT) return false;
        r = !v;
        break;
    case NK_UNSIGNED:
        /* |x| and max(x, 0) are x itself; Neg is not defined on unsigned types. */
        if (op != BD_OP_ABS && op != BD_OP_RELU) return false;
        r = v;
        break;
    case NK_SIGNED:
        if (op == BD_OP_RELU) {
            r = v < 0 ? 0 : v;
        } else if (op == BD_OP_ABS || op == BD_OP_NEG) {
            if (v == INT64_MIN) return false;
            r = op == BD_OP_NEG || v < 0 ? -v : v;
            if (!signed_fits(x->dtype, r)) return false;
        } else {
            return false;
        }
        break;
    default: return false;
    }
    bd_tensor_set_i64(out, i, r);
    return true;
}

bd_status bd_fold_unary(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = fold_input(g, n, 0);
    if (!x) return BD_OK;
    bd_tensor *out = fold_output(g, x->dtype, x->rank, x->dims);
    if (!out) return BD_OK;
    for (int64_t i = 0; i < x->numel; i++)
        if (!eval_unary(n->op, x, i, out)) return BD_OK;
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), out);
}

bd_status bd_fold_where(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_value *vc = bd_node_in(g, n, 0), *vx = bd_node_in(g, n, 1), *vy = bd_node_in(g, n, 2);
    if (!vc || !vx || !vy || !vc->constant || !vx->constant || !vy->constant) return BD_OK;
    const bd_tensor *c = vc->constant, *x = vx->constant, *y = vy->constant;
    /* Where only copies elements, so any fixed-width whole-byte dtype works. */
    int bits = bd_dtype_bits(x->dtype);
    if (c->dtype != BD_DT_BOOL || x->dtype != y->dtype || x->dtype == BD_DT_STRING || bits <= 0 ||
        bits % 8)
        return BD_OK;
    const bd_tensor *ins[3] = {c, x, y};
    int rank = 0;
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < 3; i++) {
        if (ins[i]->numel && !ins[i]->data) return BD_OK;
        if (!bd_broadcast_shapes(rank, dims, ins[i]->rank, ins[i]->dims, &rank, dims)) return BD_OK;
    }
    bd_tensor *out = fold_output(g, x->dtype, rank, dims);
    if (!out) return BD_OK;
    size_t esize = (size_t)bits / 8;
    for (int64_t i = 0; i < out->numel; i++) {
        bool take_x = ((const uint8_t *)c->data)[bcast_offset(c, rank, dims, i)] != 0;
        const bd_tensor *src = take_x ? x : y;
        memcpy((char *)out->data + (size_t)i * esize,
               (const char *)src->data + (size_t)bcast_offset(src, rank, dims, i) * esize, esize);
    }
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), out);
}

/* One element of Cast: integer to integer stays in 64-bit integers (wrapping to the target
 * width as C conversions do); anything involving floats goes through the get/set helpers,
 * except 64-bit integers to float32, converted directly to avoid rounding twice. */
static void cast_elem(const bd_tensor *x, int64_t i, bd_tensor *out) {
    num_kind from = kind_of(x->dtype), to = kind_of(out->dtype);
    if (from != NK_FLOAT && to != NK_FLOAT) {
        bd_tensor_set_i64(out, i, bd_tensor_get_i64(x, i));
    } else if (out->dtype == BD_DT_FLOAT && x->dtype == BD_DT_INT64) {
        ((float *)out->data)[i] = (float)bd_tensor_get_i64(x, i);
    } else if (out->dtype == BD_DT_FLOAT && x->dtype == BD_DT_UINT64) {
        ((float *)out->data)[i] = (float)(uint64_t)bd_tensor_get_i64(x, i);
    } else {
        bd_tensor_set_f64(out, i, bd_tensor_get_f64(x, i));
    }
}

bd_status bd_fold_cast(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = fold_input(g, n, 0);
    int64_t to = bd_attr_int(n, "to", 0);
    if (!x || to < 0 || to > INT32_MAX || kind_of((int)to) == NK_NONE) return BD_OK;
    bd_tensor *out = fold_output(g, (int)to, x->rank, x->dims);
    if (!out) return BD_OK;
    for (int64_t i = 0; i < x->numel; i++)
        cast_elem(x, i, out);
    return bd_value_set_constant(d, n, bd_node_out(g, n, 0), out);
}

/* ---- quantization ---- */

/* DequantizeLinear of constants, i.e. a QDQ model's weights: folded so that the Conv, Gemm or
 * MatMul reading them sees constant weights and gets its packed kernels (a runtime weight
 * tensor takes the generic nest, 30x slower on ResNet-18). y = ((float)x - (float)zp) * scale
 * in float32, the lowering's expression, so folding changes no bit. float32 scales only, scalar
 * or per-axis; up to 16 x BD_FOLD_MAX_ELEMS elements, since weights are this big and the file
 * already holds them at a quarter (int8) of the folded size. */
bd_status bd_fold_dequantize(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = fold_input(g, n, 0), *sc = fold_input(g, n, 1);
    const bd_tensor *zp = bd_node_in(g, n, 2) ? fold_input(g, n, 2) : NULL;
    bd_value *y = bd_node_out(g, n, 0);
    if (!x || !sc || (bd_node_in(g, n, 2) && !zp) || sc->dtype != BD_DT_FLOAT ||
        y->dtype != BD_DT_FLOAT || kind_of(x->dtype) == NK_FLOAT ||
        kind_of(x->dtype) == NK_BOOL || bd_dtype_bits(x->dtype) < 8 ||
        bd_attr_int(n, "block_size", 0) != 0 || sc->rank > 1 ||
        (zp && (zp->dtype != x->dtype || zp->numel != sc->numel)) ||
        x->numel > 16 * (int64_t)BD_FOLD_MAX_ELEMS)
        return BD_OK;
    int axis = 0;
    int64_t inner = 1; /* elements per step of the scale's axis */
    if (sc->numel > 1) {
        if (sc->rank != 1 || !bd_norm_axis(bd_attr_int(n, "axis", 1), x->rank, &axis) ||
            x->dims[axis] != sc->numel)
            return BD_OK;
        for (int k = axis + 1; k < x->rank; k++) inner *= x->dims[k];
    }
    bd_tensor *out = bd_tensor_new(&g->model->arena, BD_DT_FLOAT, x->rank, x->dims);
    if (!out) return BD_OK;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = sc->numel > 1 ? i / inner % sc->numel : 0;
        float xv = (float)bd_tensor_get_i64(x, i), zv = zp ? (float)bd_tensor_get_i64(zp, c) : 0.0f;
        ((float *)out->data)[i] = (xv - zv) * ((const float *)sc->data)[c];
    }
    return bd_value_set_constant(d, n, y, out);
}

/* QuantizeLinear: x's shape in the zero point's dtype (output_dtype from opset 21, else uint8);
 * DequantizeLinear: x's shape in the scale's dtype (output_dtype from opset 23); the scale and
 * zero point are scalars or 1-D along `axis` (blocked ones have x's rank).
 * DynamicQuantizeLinear: y uint8 of x's shape, a float scale and a uint8 zero point (scalars). */
bd_status bd_infer_quantize(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *sc = bd_node_in(g, n, 1), *zp = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "x"))) return s;
    if (n->op == BD_OP_DYNAMIC_QUANTIZE_LINEAR) {
        int64_t none[1] = {0}; /* scalars */
        if ((s = bd_need_float(d, n, x, 0, "x")) ||
            (s = bd_value_set(d, n, bd_node_out(g, n, 0), BD_DT_UINT8, x->rank, x->dims)) ||
            (s = bd_value_set(d, n, bd_node_out(g, n, 1), BD_DT_FLOAT, 0, none)))
            return s;
        return bd_value_set(d, n, bd_node_out(g, n, 2), BD_DT_UINT8, 0, none);
    }
    if ((s = bd_need_present(d, n, sc, 1, "scale"))) return s;
    if (sc->rank > 1 && x->rank >= 0 && sc->rank != x->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (scale) has rank %d, expected 0, 1 or "
                            "the input's rank %d", sc->rank, x->rank);
    int64_t od = bd_attr_int(n, "output_dtype", 0);
    int dt;
    if (n->op == BD_OP_QUANTIZE_LINEAR) {
        dt = zp && zp->dtype ? zp->dtype : od ? (int)od : BD_DT_UINT8;
        if (zp && zp->dtype && od && od != zp->dtype)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'output_dtype' %lld differs from "
                                "the zero point's dtype %s", (long long)od,
                                bd_dtype_name(zp->dtype));
    } else {
        if ((s = bd_need_same_dtype(d, n, zp, 2, "zero_point", x))) return s;
        dt = od ? (int)od : sc->dtype;
    }
    if (!bd_dtype_known(dt))
        return bd_node_fail(d, BD_ERR_INVALID, n, "output dtype %d is not a known dtype", dt);
    return bd_value_set(d, n, bd_node_out(g, n, 0), dt, x->rank, x->dims);
}
