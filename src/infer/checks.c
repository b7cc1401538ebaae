/* checks.c — the checks and attribute readers the inference files share (checks.h): every one
 * fails with a message naming the node and the input or attribute, exit 2. */
#include <string.h>

#include "infer/checks.h"

bool bd_is_real_float(int dt) {
    return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE || dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16;
}

/* Fails unless v's dtype (when known) is float16/float32/float64/bfloat16. */
bd_status bd_need_float(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                        const char *name) {
    if (!v || !v->dtype || bd_is_real_float(v->dtype)) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n,
                        "input %d (%s) is %s, expected a floating-point type (float16, float32, "
                        "float64 or bfloat16)",
                        idx, name, bd_dtype_name(v->dtype));
}

/* Fails when v and ref both have known dtypes that differ (the spec's shared type T). */
bd_status bd_need_same_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                             const char *name, const bd_value *ref) {
    if (!v || !ref || !v->dtype || !ref->dtype || v->dtype == ref->dtype) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected %s like input 0", idx,
                        name, bd_dtype_name(v->dtype), bd_dtype_name(ref->dtype));
}

bd_status bd_need_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx, const char *name,
                        int dtype) {
    if (!v || !v->dtype || v->dtype == dtype) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected %s", idx, name,
                        bd_dtype_name(v->dtype), bd_dtype_name(dtype));
}

bd_status bd_need_int_indices(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                              const char *name) {
    if (!v || !v->dtype || v->dtype == BD_DT_INT64 || v->dtype == BD_DT_INT32) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected int32 or int64", idx,
                        name, bd_dtype_name(v->dtype));
}

/* Fails when v's rank is known and differs from rank. */
bd_status bd_need_rank(bd_diag *d, const bd_node *n, const bd_value *v, int idx, const char *name,
                       int rank) {
    if (!v || v->rank < 0 || v->rank == rank) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has rank %d, expected %d", idx, name,
                        v->rank, rank);
}

bd_status bd_need_present(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                          const char *name) {
    if (v) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "required input %d (%s) is missing", idx, name);
}

/* Extent i of v, or -1 when v is absent, its rank unknown or too small, or the extent unknown. */
int64_t bd_dim_of(const bd_value *v, int i) {
    return v && v->rank > i ? v->dims[i] : -1;
}

/* Reads a 0/1 flag attribute. */
bd_status bd_read_flag(bd_diag *d, const bd_node *n, const char *name, int64_t dflt, bool *out) {
    int64_t v = bd_attr_int(n, name, dflt);
    if (v != 0 && v != 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' is %lld, expected 0 or 1", name,
                            (long long)v);
    *out = v != 0;
    return BD_OK;
}

/* Reads INTS attribute `name` into out[0..want); an absent attribute fills out with dflt and
 * reports *present = false. */
bd_status bd_read_ints(bd_diag *d, const bd_node *n, const char *name, int want, int64_t dflt,
                       int64_t *out, bool *present) {
    const bd_attr *a = bd_node_attr(n, name);
    if (present) *present = a != NULL;
    if (!a) {
        for (int i = 0; i < want; i++)
            out[i] = dflt;
        return BD_OK;
    }
    if (a->type != BD_ATTR_INTS)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' must be a list of ints", name);
    if (a->n != want)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' has %d values, expected %d", name,
                            a->n, want);
    if (want) memcpy(out, a->ints, (size_t)want * sizeof *out);
    return BD_OK;
}

/* Fails when any of vals[0..count) is below min. */
bd_status bd_need_at_least(bd_diag *d, const bd_node *n, const char *name, const int64_t *vals,
                           int count, int64_t min) {
    for (int i = 0; i < count; i++)
        if (vals[i] < min)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "attribute '%s' value %d is %lld, expected "
                                "at least %lld",
                                name, i, (long long)vals[i], (long long)min);
    return BD_OK;
}

/* Normalises axes[0..count) against rank in place; fails on out-of-range or repeated axes. */
bd_status bd_norm_axes(bd_diag *d, const bd_node *n, const char *what, int64_t *axes, int count,
                       int rank) {
    bool seen[BD_MAX_RANK] = {false};
    for (int i = 0; i < count; i++) {
        int a;
        if (!bd_norm_axis(axes[i], rank, &a))
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s: axis %lld is out of range for rank %d",
                                what, (long long)axes[i], rank);
        if (seen[a])
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s: axis %lld appears more than once", what,
                                (long long)axes[i]);
        seen[a] = true;
        axes[i] = a;
    }
    return BD_OK;
}

bd_status bd_fail_overflow(bd_diag *d, const bd_node *n, const char *what) {
    return bd_node_fail(d, BD_ERR_INVALID, n, "%s overflows a 64-bit extent", what);
}
