/* reduce.c — shape and dtype inference for the Reduce* family, whose axes moved from an
 * attribute to an input (ReduceSum at opset 13, the others at 18), with keepdims and
 * noop_with_empty_axes, for ArgMax/ArgMin (one axis, an int64 result) and CumSum. */
#include <stdint.h>
#include <string.h>

#include "infer/checks.h"

bd_status bd_infer_reduce(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *axes_in = bd_node_in(g, n, 1);
    bd_value *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "data"))) return s;
    /* axes moved from an attribute to input 1 at ReduceSum-13 and the others' opset 18. */
    int axes_input_since = n->op == BD_OP_REDUCE_SUM ? 13 : 18;
    bool from_input = n->opset >= axes_input_since, keepdims = true, noop = false;
    if ((s = bd_read_flag(d, n, "keepdims", 1, &keepdims))) return s;
    if (from_input && (s = bd_read_flag(d, n, "noop_with_empty_axes", 0, &noop))) return s;

    int64_t axes[BD_MAX_RANK];
    int naxes = 0;
    bool axes_known = true;
    const bd_attr *attr = bd_node_attr(n, "axes");
    if (!from_input) {
        if (axes_in)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input 1 (axes) exists from opset %d, the "
                                "model uses opset %d",
                                axes_input_since, n->opset);
        if (attr) {
            if (attr->type != BD_ATTR_INTS)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "attribute 'axes' must be a list of "
                                    "ints");
            if (attr->n > BD_MAX_RANK)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "attribute 'axes' lists %d axes, more "
                                    "than any supported rank",
                                    attr->n);
            naxes = attr->n;
            memcpy(axes, attr->ints, (size_t)naxes * sizeof *axes);
        }
    } else {
        if (attr)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "attribute 'axes' is not allowed from "
                                "opset %d (axes is input 1), the model uses opset %d",
                                axes_input_since, n->opset);
        if ((s = bd_need_dtype(d, n, axes_in, 1, "axes", BD_DT_INT64))) return s;
        if (axes_in && axes_in->rank > 1)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axes) has rank %d, expected 1",
                                axes_in->rank);
        if (axes_in && axes_in->constant) {
            if (axes_in->constant->numel > BD_MAX_RANK)
                return bd_node_fail(d, BD_ERR_INVALID, n,
                                    "input 1 (axes) lists %lld axes, more "
                                    "than any supported rank",
                                    (long long)axes_in->constant->numel);
            for (int64_t i = 0; i < axes_in->constant->numel; i++)
                axes[naxes++] = bd_tensor_get_i64(axes_in->constant, i);
        } else if (axes_in) {
            axes_known = bd_dim_of(axes_in, 0) == 0; /* a known-empty tensor needs no data */
        }
    }

    int rank = x->rank;
    if (rank < 0) return bd_value_set(d, n, y, x->dtype, -1, NULL);
    int64_t dims[BD_MAX_RANK];
    if (!axes_known) {
        /* Which axes collapse is data; with keepdims only the extents are unknown. */
        int64_t count = bd_dim_of(axes_in, 0);
        if (keepdims) {
            for (int i = 0; i < rank; i++)
                dims[i] = x->dims[i] == 1 ? 1 : -1;
            return bd_value_set(d, n, y, x->dtype, rank, dims);
        }
        if (count > rank)
            return bd_node_fail(d, BD_ERR_INVALID, n,
                                "input 1 (axes) lists %lld axes but input "
                                "0 has rank %d",
                                (long long)count, rank);
        for (int i = 0; i < rank; i++)
            dims[i] = -1;
        return bd_value_set(d, n, y, x->dtype, count < 0 ? -1 : rank - (int)count, dims);
    }
    const char *axes_what = from_input ? "input 1 (axes)" : "attribute 'axes'";
    if ((s = bd_norm_axes(d, n, axes_what, axes, naxes, rank))) return s;
    if (naxes == 0 && noop) return bd_value_set(d, n, y, x->dtype, rank, x->dims);

    bool reduced[BD_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++)
        reduced[i] = naxes == 0; /* no axes: reduce them all */
    for (int i = 0; i < naxes; i++)
        reduced[axes[i]] = true;
    int out_rank = 0;
    for (int i = 0; i < rank; i++) {
        if (!reduced[i])
            dims[out_rank++] = x->dims[i];
        else if (keepdims)
            dims[out_rank++] = 1;
    }
    return bd_value_set(d, n, y, x->dtype, out_rank, dims);
}

bd_status bd_infer_arg_reduce(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    bool keepdims = true, last = false;
    if ((s = bd_need_present(d, n, x, 0, "data")) ||
        (s = bd_read_flag(d, n, "keepdims", 1, &keepdims)))
        return s;
    if (n->opset >= 12 && (s = bd_read_flag(d, n, "select_last_index", 0, &last))) return s;
    if (x->rank < 0) return bd_value_set(d, n, y, BD_DT_INT64, -1, NULL);
    int64_t axis = bd_attr_int(n, "axis", 0);
    if ((s = bd_norm_axes(d, n, "attribute 'axis'", &axis, 1, x->rank))) return s;
    int64_t dims[BD_MAX_RANK];
    int rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i != axis) dims[rank++] = x->dims[i];
        else if (keepdims) dims[rank++] = 1;
    }
    return bd_value_set(d, n, y, BD_DT_INT64, rank, dims);
}

/* CumSum: the input's shape; axis (input 1) is an int32 or int64 scalar. */
bd_status bd_infer_cumsum(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *axis = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "x")) ||
        (s = bd_need_present(d, n, axis, 1, "axis")) ||
        (s = bd_need_int_indices(d, n, axis, 1, "axis")))
        return s;
    if (axis->rank > 1 || (axis->rank == 1 && axis->dims[0] != 1))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axis) must be a scalar");
    if (x->rank == 0) return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (x) must have rank >= 1");
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: input [N, C, d1..dk] (float), target
 * [N, d1..dk] (int32/int64), optional weight [C]; the loss has the target's shape with reduction
 * 'none', else it is a scalar; SoftmaxCrossEntropyLoss's optional output 1 (log_prob) has the
 * input's shape. */
bd_status bd_infer_loss(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *t = bd_node_in(g, n, 1), *w = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) || (s = bd_need_present(d, n, t, 1, "target")) ||
        (s = bd_need_float(d, n, x, 0, "input")) ||
        (s = bd_need_int_indices(d, n, t, 1, "target")) ||
        (s = bd_need_same_dtype(d, n, w, 2, "weight", x)) ||
        (s = bd_need_rank(d, n, w, 2, "weight", 1)))
        return s;
    const char *red = bd_attr_string(g, n, "reduction", "mean");
    bool none = strcmp(red, "none") == 0;
    if (!none && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'reduction' '%s' is not one of none, "
                            "sum, mean", bd_quote(red));
    if (x->rank >= 0 && x->rank < 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 has rank %d, expected at least 2",
                            x->rank);
    if (x->rank >= 0 && t->rank >= 0 && t->rank != x->rank - 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (target) has rank %d, expected %d",
                            t->rank, x->rank - 1);
    if (x->rank >= 0 && t->rank >= 0)
        for (int i = 0; i < t->rank; i++) {
            int64_t a = x->dims[i == 0 ? 0 : i + 1], b = t->dims[i];
            if (a >= 0 && b >= 0 && a != b)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (target) dim %d is %lld, "
                                    "input 0's matching dim is %lld", i, (long long)b,
                                    (long long)a);
        }
    int64_t c = bd_dim_of(x, 1), wc = bd_dim_of(w, 0);
    if (c >= 0 && wc >= 0 && c != wc)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (weight) has %lld classes, input 0 has "
                            "%lld", (long long)wc, (long long)c);
    int64_t dims[BD_MAX_RANK];
    int rank = none ? t->rank : 0;
    for (int i = 0; i < rank; i++)
        dims[i] = t->dims[i] >= 0 ? t->dims[i] : bd_dim_of(x, i == 0 ? 0 : i + 1);
    if ((s = bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, rank, dims))) return s;
    bd_value *lp = bd_node_out(g, n, 1);
    if (lp && n->op != BD_OP_SOFTMAX_CROSS_ENTROPY_LOSS)
        return bd_node_fail(d, BD_ERR_INVALID, n, "has an output 1, which only "
                            "SoftmaxCrossEntropyLoss has");
    return lp ? bd_value_set(d, n, lp, x->dtype, x->rank, x->dims) : BD_OK;
}

/* TopK: values and int64 indices of the input's shape with the axis cut to K (attribute k before
 * opset 10, else constant input 1). */
bd_status bd_infer_topk(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *kv = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X"))) return s;
    int64_t k = -1;
    int nk = 0;
    if (n->opset < 10) {
        k = bd_attr_int(n, "k", -1);
        if (k < 0) return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'k' (>= 0) is required");
    } else {
        if ((s = bd_need_present(d, n, kv, 1, "K")) ||
            (s = bd_need_dtype(d, n, kv, 1, "K", BD_DT_INT64)))
            return s;
        if (kv->constant && (!bd_value_const_ints(kv, &k, 1, &nk) || nk != 1 || k < 0))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (K) must hold one value >= 0");
    }
    bd_value *vals = bd_node_out(g, n, 0), *idx = bd_node_out(g, n, 1);
    if (x->rank < 0) {
        if ((s = bd_value_set(d, n, vals, x->dtype, -1, NULL))) return s;
        return idx ? bd_value_set(d, n, idx, BD_DT_INT64, -1, NULL) : BD_OK;
    }
    int64_t axis = bd_attr_int(n, "axis", -1);
    if ((s = bd_norm_axes(d, n, "attribute 'axis'", &axis, 1, x->rank))) return s;
    if (k >= 0 && x->dims[axis] >= 0 && k > x->dims[axis])
        return bd_node_fail(d, BD_ERR_INVALID, n, "K = %lld is larger than the axis extent %lld",
                            (long long)k, (long long)x->dims[axis]);
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = i == axis ? k : x->dims[i];
    if ((s = bd_value_set(d, n, vals, x->dtype, x->rank, dims))) return s;
    return idx ? bd_value_set(d, n, idx, BD_DT_INT64, x->rank, dims) : BD_OK;
}

/* ---------------------------------------------------------------- Einsum */

/* One term of the equation: its letters (0..51) and where its ellipsis is (-1: none). */
typedef struct einsum_term {
    int n, ell, letter[BD_MAX_RANK];
} einsum_term;

static int einsum_letter(char c) {
    return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + c - 'A' : -1;
}

/* Parses the term starting at *s up to ',', '-' or the end, skipping spaces. */
static bool einsum_term_of(const char **s, einsum_term *t) {
    t->n = 0, t->ell = -1;
    for (; **s && **s != ',' && **s != '-'; (*s)++) {
        if (**s == ' ') continue;
        if (**s == '.') {
            if (t->ell >= 0 || strncmp(*s, "...", 3) != 0) return false;
            t->ell = t->n;
            *s += 2;
            continue;
        }
        int l = einsum_letter(**s);
        if (l < 0 || t->n >= BD_MAX_RANK) return false;
        t->letter[t->n++] = l;
    }
    return true;
}

bd_status bd_einsum_plan_of(bd_graph *g, const bd_node *n, bd_diag *d, bd_einsum_plan *p) {
    const char *eq = bd_attr_string(g, n, "equation", NULL), *s = eq;
    if (!eq) return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'equation' is required");
    memset(p, 0, sizeof *p);
    p->n_in = n->n_inputs;
    if (p->n_in < 1 || p->n_in > BD_EINSUM_MAX_INPUTS)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%d inputs are not supported (at most %d)",
                            p->n_in, BD_EINSUM_MAX_INPUTS);
    einsum_term in[BD_EINSUM_MAX_INPUTS], out;
    int nt = 0, n_ell = 0;
    for (;;) {
        if (nt == p->n_in || !einsum_term_of(&s, &in[nt]))
            return bd_node_fail(d, BD_ERR_INVALID, n, "equation '%s' does not match its %d "
                                "inputs", bd_quote(eq), p->n_in);
        nt++;
        if (*s != ',') break;
        s++;
    }
    bool explicit_out = *s == '-';
    if (explicit_out && (s[1] != '>' || (s += 2, !einsum_term_of(&s, &out)) || *s))
        return bd_node_fail(d, BD_ERR_INVALID, n, "equation '%s' is malformed", bd_quote(eq));
    if (nt != p->n_in)
        return bd_node_fail(d, BD_ERR_INVALID, n, "equation '%s' has %d terms for %d inputs",
                            bd_quote(eq), nt, p->n_in);
    int count[52] = {0};
    for (int k = 0; k < nt; k++) {
        const bd_value *v = bd_node_in(g, n, k);
        if (!v || v->rank < 0)
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input %d has no known rank", k);
        int e = v->rank - in[k].n;
        if (e < 0 || (e > 0 && in[k].ell < 0))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d has rank %d, its term has %d "
                                "labels", k, v->rank, in[k].n);
        if (e > n_ell) n_ell = e;
        for (int j = 0; j < in[k].n; j++) count[in[k].letter[j]]++;
    }
    if (!explicit_out) { /* the ellipsis, then the letters used once, in alphabetical order */
        out.n = 0, out.ell = n_ell > 0 ? 0 : -1;
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) out.letter[out.n++] = l;
    }
    /* labels: the ellipsis dims are 52.., letters their own ids; output ones first */
    int id_of[52 + BD_MAX_RANK];
    for (int i = 0; i < 52 + BD_MAX_RANK; i++) id_of[i] = -1;
    int nl = 0;
    for (int j = 0; j <= out.n; j++) {
        if (j == out.ell)
            for (int e = 0; e < n_ell; e++) {
                if (nl >= BD_MAX_RANK) goto too_many;
                id_of[52 + e] = nl++;
            }
        if (j == out.n) break;
        int l = out.letter[j];
        if (id_of[l] >= 0 || !count[l])
            return bd_node_fail(d, BD_ERR_INVALID, n, "output label '%c' of '%s' is repeated or "
                                "in no input", l < 26 ? 'a' + l : 'A' + l - 26, bd_quote(eq));
        if (nl >= BD_MAX_RANK) goto too_many;
        id_of[l] = nl++;
    }
    if (n_ell > 0 && out.ell < 0) /* ellipsis dims summed */
        for (int e = 0; e < n_ell; e++) {
            if (nl >= BD_MAX_RANK) goto too_many;
            id_of[52 + e] = nl++;
        }
    p->n_out = out.n + (out.ell >= 0 ? n_ell : 0);
    for (int l = 0; l < 52; l++)
        if (count[l] && id_of[l] < 0) {
            if (nl >= BD_MAX_RANK) goto too_many;
            id_of[l] = nl++;
        }
    p->n_labels = nl;
    for (int i = 0; i < nl; i++) p->extent[i] = 1;
    for (int k = 0; k < nt; k++) {
        const bd_value *v = bd_node_in(g, n, k);
        int e = v->rank - in[k].n;
        p->in_rank[k] = v->rank;
        for (int j = 0, o = 0; j <= in[k].n; j++) {
            if (j == in[k].ell) /* its e ellipsis dims are the last e of all n_ell */
                for (int i = 0; i < e; i++) p->label_of[k][o++] = id_of[52 + n_ell - e + i];
            if (j < in[k].n) p->label_of[k][o++] = id_of[in[k].letter[j]];
        }
        for (int j = 0; j < v->rank; j++) {
            int64_t *x = &p->extent[p->label_of[k][j]], dim = v->dims[j];
            if (dim < 0) { /* unknown: a known extent elsewhere decides */
                if (*x == 1) *x = -1;
                continue;
            }
            if (dim == 1 || *x == dim) continue; /* an extent of 1 broadcasts */
            if (*x == 1 || *x == -1) {
                *x = dim;
                continue;
            }
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d dim %d is %lld, another input's "
                                "dim of that label %lld", k, j, (long long)dim, (long long)*x);
        }
    }
    return BD_OK;
too_many:
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "equation '%s' has more than %d labels",
                        bd_quote(eq), BD_MAX_RANK);
}

/* Einsum: the output's labels' extents; the dtype of the inputs (all alike). */
bd_status bd_infer_einsum(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "Inputs"))) return s;
    for (int k = 1; k < n->n_inputs; k++)
        if ((s = bd_need_same_dtype(d, n, bd_node_in(g, n, k), k, "Inputs", x))) return s;
    for (int k = 0; k < n->n_inputs; k++)
        if (!bd_node_in(g, n, k) || bd_node_in(g, n, k)->rank < 0)
            return bd_value_set(d, n, y, x->dtype, -1, NULL);
    bd_einsum_plan p;
    if ((s = bd_einsum_plan_of(g, n, d, &p))) return s;
    return bd_value_set(d, n, y, x->dtype, p.n_out, p.extent);
}

/* TfIdfVectorizer: [C] -> [F] or [B, C] -> [B, F] floats, F = 1 + the largest ngram_indexes. */
bd_status bd_infer_tfidf(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X"))) return s;
    const bd_attr *ix = bd_node_attr(n, "ngram_indexes");
    if (!ix || ix->type != BD_ATTR_INTS || ix->n < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'ngram_indexes' is required");
    int64_t f = 0;
    for (int i = 0; i < ix->n; i++) {
        if (ix->ints[i] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'ngram_indexes' holds %lld",
                                (long long)ix->ints[i]);
        if (ix->ints[i] + 1 > f) f = ix->ints[i] + 1;
    }
    if (x->rank > 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 has rank %d, expected 1 or 2", x->rank);
    if (x->rank < 0) return bd_value_set(d, n, bd_node_out(g, n, 0), BD_DT_FLOAT, -1, NULL);
    int64_t dims[2] = {x->rank == 2 ? x->dims[0] : f, f};
    return bd_value_set(d, n, bd_node_out(g, n, 0), BD_DT_FLOAT, x->rank == 2 ? 2 : 1, dims);
}

/* DFT: the signal's axis (attribute before opset 20, else constant input 2, default -2) and
 * length (constant input 1, default the axis' extent; 2 (extent - 1) for a one-sided inverse).
 * The output has the input's shape with that axis the number of frequencies (dft_length, or
 * dft_length / 2 + 1 one-sided) or samples, and a last dim of 2, or 1 for a one-sided inverse. */
bd_status bd_dft_plan_of(bd_graph *g, const bd_node *n, bd_diag *d, int *axis, int64_t *len,
                         int64_t *out_len, bool *inverse, bool *onesided) {
    const bd_value *x = bd_node_in(g, n, 0), *lv = bd_node_in(g, n, 1);
    const bd_value *av = n->opset >= 20 ? bd_node_in(g, n, 2) : NULL;
    int64_t a = n->opset >= 20 ? -2 : bd_attr_int(n, "axis", 1), l = -1;
    int na = 0;
    *inverse = bd_attr_int(n, "inverse", 0) != 0;
    *onesided = bd_attr_int(n, "onesided", 0) != 0;
    if (av && (!bd_value_const_ints(av, &a, 1, &na) || na != 1))
        return bd_fail_not_const(d, g, n, 2, "input 2 (axis)");
    if (x->rank < 2 || x->dims[x->rank - 1] < 1 || x->dims[x->rank - 1] > 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 must end in a dim of 1 (real) or 2 "
                            "(complex)");
    a = ((a % x->rank) + x->rank) % x->rank; /* as the reference: modulo the rank */
    if (a == x->rank - 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "the axis is the complex dim");
    *axis = (int)a;
    if (lv && (!bd_value_const_ints(lv, &l, 1, &na) || na != 1))
        return bd_fail_not_const(d, g, n, 1, "input 1 (dft_length)");
    int64_t ext = x->dims[a];
    if (!lv) l = ext < 0 ? -1 : *inverse && *onesided ? 2 * (ext - 1) : ext;
    if (lv && l < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "dft_length is %lld", (long long)l);
    *len = l;
    *out_len = l < 0 ? -1 : *onesided && !*inverse ? l / 2 + 1 : l;
    return BD_OK;
}

bd_status bd_infer_dft(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "input")) || (s = bd_need_float(d, n, x, 0, "input")))
        return s;
    if (x->rank < 0) return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, -1, NULL);
    int axis;
    int64_t len, out_len, dims[BD_MAX_RANK];
    bool inv, one;
    const bd_value *lv = bd_node_in(g, n, 1), *av = n->opset >= 20 ? bd_node_in(g, n, 2) : NULL;
    if ((lv && !lv->constant) || (av && !av->constant)) { /* the extents wait for their values */
        for (int i = 0; i < x->rank; i++) dims[i] = -1;
        return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, dims);
    }
    if ((s = bd_dft_plan_of(g, n, d, &axis, &len, &out_len, &inv, &one))) return s;
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
    dims[axis] = out_len;
    dims[x->rank - 1] = inv && one ? 1 : 2;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, dims);
}

/* GroupNormalization: X's shape; scale and bias are 1-D (per channel from opset 21, per group
 * before). */
bd_status bd_infer_group_norm(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *sc = bd_node_in(g, n, 1), *bi = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_present(d, n, sc, 1, "scale")) ||
        (s = bd_need_present(d, n, bi, 2, "bias")) || (s = bd_need_float(d, n, x, 0, "X")) ||
        (s = bd_need_rank(d, n, sc, 1, "scale", 1)) || (s = bd_need_rank(d, n, bi, 2, "bias", 1)))
        return s;
    if (bd_attr_int(n, "num_groups", 0) < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'num_groups' (>= 1) is required");
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, x->dims);
}

/* ReduceSum/Prod/Min/Max of a constant int32/int64 vector, all of it or none (noop), the shape
 * arithmetic exporters write (ReduceProd(Shape(x)) for an element count): folded so that the
 * shape chains it feeds stay static. Other reductions are computed at run time. */
bd_status bd_fold_reduce(bd_graph *g, bd_node *n, bd_diag *d) {
    const bd_tensor *x = bd_node_in(g, n, 0)->constant;
    bd_value *y = bd_node_out(g, n, 0);
    int64_t ny;
    if (!x || x->rank > 1 || (x->dtype != BD_DT_INT64 && x->dtype != BD_DT_INT32) ||
        y->dtype != x->dtype || !bd_value_shape_known(y) || !bd_dims_numel(y->rank, y->dims, &ny))
        return BD_OK;
    bool sum = n->op == BD_OP_REDUCE_SUM, prod = n->op == BD_OP_REDUCE_PROD;
    if (!sum && !prod && n->op != BD_OP_REDUCE_MIN && n->op != BD_OP_REDUCE_MAX) return BD_OK;
    bd_tensor *t = bd_tensor_new(&g->model->arena, y->dtype, y->rank, y->dims);
    if (!t) return BD_OK;
    if (ny == x->numel) { /* nothing reduced: noop_with_empty_axes, or a length-1 vector */
        for (int64_t i = 0; i < ny; i++) bd_tensor_set_i64(t, i, bd_tensor_get_i64(x, i));
    } else if (ny == 1 && (x->numel > 0 || sum || prod)) {
        int64_t r = sum ? 0 : prod ? 1 : bd_tensor_get_i64(x, 0);
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t v = bd_tensor_get_i64(x, i);
            bool overflow = sum ? __builtin_add_overflow(r, v, &r)
                            : prod ? __builtin_mul_overflow(r, v, &r) : false;
            if (!sum && !prod) r = (n->op == BD_OP_REDUCE_MIN) == (v < r) ? v : r;
            if (overflow || (x->dtype == BD_DT_INT32 && (r < INT32_MIN || r > INT32_MAX)))
                return BD_OK; /* wraps at run time; not folded */
        }
        bd_tensor_set_i64(t, 0, r);
    } else {
        return BD_OK;
    }
    return bd_value_set_constant(d, n, y, t);
}
