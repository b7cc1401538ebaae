/* infer_nn.c — shape and dtype inference for the neural-network ops: Conv, ConvTranspose, the
 * pooling ops, Gemm, MatMul, LSTM, the Reduce* family, Pad and Resize.
 *
 * These ops carry most of a model's geometry, so their rules follow the ONNX spec (and
 * onnxruntime where the spec leaves a gap) for every opset from 7 to 22: attributes that moved to
 * inputs (Reduce axes, Pad pads, Resize scales/sizes), attributes that only exist from some
 * version on (ceil_mode, pooling dilations, LSTM layout, Resize axes) and optional inputs. Every
 * attribute list is checked against the spatial rank and every extent computed with overflow
 * checks, because the model file is untrusted. Where an extent depends on data the compiler does
 * not have it becomes -1 (unknown), never a guess. */
#include <math.h>
#include <string.h>

#include "front/passes.h"

/* ---- shared checks ---- */

static bool is_real_float(int dt) {
    return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE || dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16;
}

/* Fails unless v's dtype (when known) is float16/float32/float64/bfloat16. */
static bd_status need_float(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                            const char *name) {
    if (!v || !v->dtype || is_real_float(v->dtype)) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n,
                        "input %d (%s) is %s, expected a floating-point type (float16, float32, "
                        "float64 or bfloat16)",
                        idx, name, bd_dtype_name(v->dtype));
}

/* Fails when v and ref both have known dtypes that differ (the spec's shared type T). */
static bd_status need_same_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                                 const char *name, const bd_value *ref) {
    if (!v || !ref || !v->dtype || !ref->dtype || v->dtype == ref->dtype) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected %s like input 0",
                        idx, name, bd_dtype_name(v->dtype), bd_dtype_name(ref->dtype));
}

static bd_status need_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                            const char *name, int dtype) {
    if (!v || !v->dtype || v->dtype == dtype) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected %s", idx, name,
                        bd_dtype_name(v->dtype), bd_dtype_name(dtype));
}

static bd_status need_int_indices(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                                  const char *name) {
    if (!v || !v->dtype || v->dtype == BD_DT_INT64 || v->dtype == BD_DT_INT32) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected int32 or int64", idx,
                        name, bd_dtype_name(v->dtype));
}

/* Fails when v's rank is known and differs from rank. */
static bd_status need_rank(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                           const char *name, int rank) {
    if (!v || v->rank < 0 || v->rank == rank) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has rank %d, expected %d", idx, name,
                        v->rank, rank);
}

static bd_status need_present(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                              const char *name) {
    if (v) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "required input %d (%s) is missing", idx, name);
}

/* Extent i of v, or -1 when v is absent, its rank unknown or too small, or the extent unknown. */
static int64_t dim_of(const bd_value *v, int i) {
    return v && v->rank > i ? v->dims[i] : -1;
}

/* Reads a 0/1 flag attribute. */
static bd_status read_flag(bd_diag *d, const bd_node *n, const char *name, int64_t dflt,
                           bool *out) {
    int64_t v = bd_attr_int(n, name, dflt);
    if (v != 0 && v != 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' is %lld, expected 0 or 1", name,
                            (long long)v);
    *out = v != 0;
    return BD_OK;
}

/* Reads INTS attribute `name` into out[0..want); an absent attribute fills out with dflt and
 * reports *present = false. */
static bd_status read_ints(bd_diag *d, const bd_node *n, const char *name, int want, int64_t dflt,
                           int64_t *out, bool *present) {
    const bd_attr *a = bd_node_attr(n, name);
    if (present) *present = a != NULL;
    if (!a) {
        for (int i = 0; i < want; i++) out[i] = dflt;
        return BD_OK;
    }
    if (a->type != BD_ATTR_INTS)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' must be a list of ints", name);
    if (a->n != want)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' has %d values, expected %d",
                            name, a->n, want);
    if (want) memcpy(out, a->ints, (size_t)want * sizeof *out);
    return BD_OK;
}

/* Fails when any of vals[0..count) is below min. */
static bd_status need_at_least(bd_diag *d, const bd_node *n, const char *name,
                               const int64_t *vals, int count, int64_t min) {
    for (int i = 0; i < count; i++)
        if (vals[i] < min)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' value %d is %lld, expected "
                                "at least %lld", name, i, (long long)vals[i], (long long)min);
    return BD_OK;
}

/* Normalises axes[0..count) against rank in place; fails on out-of-range or repeated axes. */
static bd_status norm_axes(bd_diag *d, const bd_node *n, const char *what, int64_t *axes,
                           int count, int rank) {
    bool seen[BD_MAX_RANK] = {false};
    for (int i = 0; i < count; i++) {
        int a;
        if (!bd_norm_axis(axes[i], rank, &a))
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s: axis %lld is out of range for rank %d",
                                what, (long long)axes[i], rank);
        if (seen[a])
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s: axis %lld appears more than once",
                                what, (long long)axes[i]);
        seen[a] = true;
        axes[i] = a;
    }
    return BD_OK;
}

static bd_status fail_overflow(bd_diag *d, const bd_node *n, const char *what) {
    return bd_node_fail(d, BD_ERR_INVALID, n, "%s overflows a 64-bit extent", what);
}

/* ---- sliding windows (Conv, ConvTranspose, pooling) ---- */

enum { AUTO_PAD_NOTSET, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER, AUTO_PAD_VALID };

typedef struct window {
    int nsp;      /* spatial rank */
    int auto_pad; /* AUTO_PAD_* */
    int64_t kernel[BD_MAX_RANK]; /* -1 where unknown */
    int64_t strides[BD_MAX_RANK];
    int64_t dilations[BD_MAX_RANK];
    int64_t pads[2 * BD_MAX_RANK]; /* begins, then ends */
} window;

/* Reads auto_pad, strides, dilations (when the op version has them) and pads. */
static bd_status read_window(bd_graph *g, const bd_node *n, bd_diag *d, int nsp,
                             bool has_dilations, window *w) {
    bd_status s;
    w->nsp = nsp;
    const char *ap = bd_attr_string(g, n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0) w->auto_pad = AUTO_PAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0) w->auto_pad = AUTO_PAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0) w->auto_pad = AUTO_PAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0) w->auto_pad = AUTO_PAD_VALID;
    else
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'auto_pad' is '%s', expected NOTSET, "
                            "SAME_UPPER, SAME_LOWER or VALID", bd_quote(ap));
    if ((s = read_ints(d, n, "strides", nsp, 1, w->strides, NULL)) ||
        (s = need_at_least(d, n, "strides", w->strides, nsp, 1)))
        return s;
    if (has_dilations) {
        if ((s = read_ints(d, n, "dilations", nsp, 1, w->dilations, NULL)) ||
            (s = need_at_least(d, n, "dilations", w->dilations, nsp, 1)))
            return s;
    } else {
        for (int i = 0; i < nsp; i++) w->dilations[i] = 1;
    }
    if ((s = read_ints(d, n, "pads", 2 * nsp, 0, w->pads, NULL)) ||
        (s = need_at_least(d, n, "pads", w->pads, 2 * nsp, 0)))
        return s;
    return BD_OK;
}

/* (kernel - 1) * dilation + 1: the input span one window covers. */
static bd_status window_span(bd_diag *d, const bd_node *n, const window *w, int i, int64_t *span) {
    if (!bd_mul_i64(w->kernel[i] - 1, w->dilations[i], span) || !bd_add_i64(*span, 1, span))
        return fail_overflow(d, n, "the dilated kernel");
    return BD_OK;
}

/* Output extent along spatial axis i of a convolution or pooling window sliding over `in`
 * elements; -1 when the input extent or kernel is unknown. */
static bd_status window_extent(bd_diag *d, const bd_node *n, const window *w, int i, int64_t in,
                               bool ceil_mode, int64_t *out) {
    *out = -1;
    if (in < 0 || w->kernel[i] < 0) return BD_OK;
    int64_t stride = w->strides[i];
    if (w->auto_pad == AUTO_PAD_SAME_UPPER || w->auto_pad == AUTO_PAD_SAME_LOWER) {
        /* The padding is chosen so that out = ceil(in / stride). */
        *out = in / stride + (in % stride != 0);
        return BD_OK;
    }
    bool explicit_pads = w->auto_pad == AUTO_PAD_NOTSET;
    int64_t head = explicit_pads ? w->pads[i] : 0, tail = explicit_pads ? w->pads[w->nsp + i] : 0;
    int64_t span, padded_head, padded;
    bd_status s = window_span(d, n, w, i, &span);
    if (s) return s;
    if (!bd_add_i64(in, head, &padded_head) || !bd_add_i64(padded_head, tail, &padded))
        return fail_overflow(d, n, "the padded input");
    if (padded < span)
        return bd_node_fail(d, BD_ERR_INVALID, n, "spatial axis %d: the kernel spans %lld elements "
                            "(kernel %lld, dilation %lld) but the padded input has only %lld", i,
                            (long long)span, (long long)w->kernel[i], (long long)w->dilations[i],
                            (long long)padded);
    int64_t room = padded - span, steps = room / stride;
    if (ceil_mode && room % stride) {
        /* A partial last window counts only if it starts inside the input or the head padding
         * (the rule of the ONNX reference and onnxruntime). */
        int64_t start;
        if (bd_mul_i64(steps + 1, stride, &start) && start < padded_head) steps++;
    }
    *out = steps + 1;
    return BD_OK;
}

/* Fails when X (input 0) has a known rank below 3: these ops need [N, C, spatial...]. */
static bd_status need_spatial(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                              const char *name) {
    if (!v || v->rank < 0 || v->rank >= 3) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has rank %d, expected at least 3 "
                        "(batch, channels, spatial axes)", idx, name, v->rank);
}

/* The kernel's spatial extents: the kernel_shape attribute, checked against W's dims when both are
 * known, else W's dims from axis 2 on. */
static bd_status read_conv_kernel(bd_diag *d, const bd_node *n, const bd_value *w, window *win) {
    bool given;
    bd_status s = read_ints(d, n, "kernel_shape", win->nsp, -1, win->kernel, &given);
    if (s) return s;
    if (given && (s = need_at_least(d, n, "kernel_shape", win->kernel, win->nsp, 1))) return s;
    for (int i = 0; i < win->nsp; i++) {
        int64_t wd = dim_of(w, 2 + i);
        if (given && wd >= 0 && wd != win->kernel[i])
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' value %d is %lld "
                                "but input 1 (W) has extent %lld on axis %d", i,
                                (long long)win->kernel[i], (long long)wd, 2 + i);
        if (!given) {
            if (wd == 0)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (W) has an empty kernel "
                                    "(extent 0 on axis %d)", 2 + i);
            win->kernel[i] = wd;
        }
    }
    return BD_OK;
}

/* The spatial rank shared by X and W: from X, else W, else the kernel_shape attribute; -1 when
 * none tells. */
static bd_status conv_spatial_rank(bd_diag *d, const bd_node *n, const bd_value *x,
                                   const bd_value *w, int *nsp) {
    bd_status s;
    if ((s = need_spatial(d, n, x, 0, "X")) || (s = need_spatial(d, n, w, 1, "W"))) return s;
    if (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (W) has rank %d, expected %d (the rank "
                            "of input 0)", w->rank, x->rank);
    int rank = x->rank >= 0 ? x->rank : w->rank;
    const bd_attr *ks = bd_node_attr(n, "kernel_shape");
    if (rank < 0 && ks && ks->type == BD_ATTR_INTS && ks->n >= 1 && ks->n <= BD_MAX_RANK - 2)
        rank = ks->n + 2;
    *nsp = rank < 0 ? -1 : rank - 2;
    return BD_OK;
}

/* Checks the optional bias B against the output channel count; returns the count it implies. */
static bd_status check_bias(bd_diag *d, const bd_node *n, const bd_value *b, const bd_value *x,
                            int64_t *m) {
    bd_status s;
    if (!b) return BD_OK;
    if ((s = need_same_dtype(d, n, b, 2, "B", x)) || (s = need_rank(d, n, b, 2, "B", 1))) return s;
    int64_t bm = dim_of(b, 0);
    if (bm >= 0 && *m >= 0 && bm != *m)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (B) has %lld elements, expected %lld "
                            "(one per output channel)", (long long)bm, (long long)*m);
    if (*m < 0) *m = bm;
    return BD_OK;
}

/* The checks Conv and ConvTranspose share: X and W present, float, one dtype, spatial rank, and
 * a group count that divides X's channels. */
static bd_status conv_inputs(bd_diag *d, const bd_node *n, const bd_value *x, const bd_value *w,
                             int *dtype, int *nsp, int64_t *group) {
    bd_status s;
    if ((s = need_present(d, n, x, 0, "X")) || (s = need_present(d, n, w, 1, "W")) ||
        (s = need_float(d, n, x, 0, "X")) || (s = need_same_dtype(d, n, w, 1, "W", x)))
        return s;
    *dtype = x->dtype ? x->dtype : w->dtype;
    if ((s = conv_spatial_rank(d, n, x, w, nsp))) return s;
    *group = bd_attr_int(n, "group", 1);
    if (*group < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'group' is %lld, expected at least 1",
                            (long long)*group);
    int64_t c = dim_of(x, 1);
    if (c >= 0 && c % *group)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (X) has %lld channels, not divisible "
                            "by group %lld", (long long)c, (long long)*group);
    return BD_OK;
}

bd_status bd_infer_conv(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *b = bd_node_in(g, n, 2);
    int dtype, nsp;
    int64_t group;
    bd_status s = conv_inputs(d, n, x, w, &dtype, &nsp, &group);
    if (s) return s;
    int64_t c = dim_of(x, 1), wc = dim_of(w, 1), m = dim_of(w, 0);
    if (c >= 0 && wc >= 0 && wc != c / group)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (W) has extent %lld on axis 1, expected "
                            "%lld (channels / group)", (long long)wc, (long long)(c / group));
    if (m >= 0 && m % group)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (W) has %lld output channels, not "
                            "divisible by group %lld", (long long)m, (long long)group);
    if ((s = check_bias(d, n, b, x, &m))) return s;
    if (nsp < 0) return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, -1, NULL);

    window win;
    if ((s = read_window(g, n, d, nsp, true, &win)) || (s = read_conv_kernel(d, n, w, &win)))
        return s;
    int64_t dims[BD_MAX_RANK] = {dim_of(x, 0), m};
    for (int i = 0; i < nsp; i++)
        if ((s = window_extent(d, n, &win, i, dim_of(x, 2 + i), false, &dims[2 + i]))) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, nsp + 2, dims);
}

/* ConvTranspose's output extent along spatial axis i: `want` when output_shape gives it (else
 * -1), otherwise computed from the pads or auto_pad. */
static bd_status transpose_extent(bd_diag *d, const bd_node *n, const window *w, int i,
                                  int64_t in, int64_t out_pad, int64_t want, int64_t *out) {
    *out = want;
    if (in < 0 || w->kernel[i] < 0) return BD_OK;
    int64_t span, full;
    bd_status s = window_span(d, n, w, i, &span);
    if (s) return s;
    /* The unpadded extent: stride * (in - 1) + output_padding + span. */
    if (!bd_mul_i64(w->strides[i], in - 1, &full) || !bd_add_i64(full, out_pad, &full) ||
        !bd_add_i64(full, span, &full))
        return fail_overflow(d, n, "the output extent");
    if (want >= 0) {
        /* The pads come from the total padding full - want. Below zero they cannot be; like
         * onnxruntime, accept an output that still maps back onto exactly `in` inputs. */
        int64_t limit;
        if (!bd_add_i64(full - out_pad, w->strides[i] - 1, &limit)) limit = INT64_MAX;
        if (want > limit)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'output_shape' asks for %lld "
                                "elements on spatial axis %d, more than the %lld the input "
                                "produces", (long long)want, i, (long long)full);
        return BD_OK;
    }
    if (w->auto_pad == AUTO_PAD_SAME_UPPER || w->auto_pad == AUTO_PAD_SAME_LOWER) {
        /* in * stride, padded down from the unpadded extent; when that is already smaller
         * (kernel below stride) nothing is padded, as onnxruntime and ONNX's inference do. */
        int64_t same;
        if (!bd_mul_i64(in, w->strides[i], &same)) return fail_overflow(d, n, "the output extent");
        *out = same < full ? same : full;
        return BD_OK;
    }
    if (w->auto_pad == AUTO_PAD_NOTSET && /* pads are >= 0, so negating them is safe */
        (!bd_add_i64(full, -w->pads[i], &full) || !bd_add_i64(full, -w->pads[w->nsp + i], &full)))
        return fail_overflow(d, n, "the output extent");
    if (full < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "spatial axis %d: the output extent would be "
                            "%lld (input %lld, pads %lld and %lld)", i, (long long)full,
                            (long long)in, (long long)w->pads[i], (long long)w->pads[w->nsp + i]);
    *out = full;
    return BD_OK;
}

bd_status bd_infer_conv_transpose(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *b = bd_node_in(g, n, 2);
    int dtype, nsp;
    int64_t group;
    bd_status s = conv_inputs(d, n, x, w, &dtype, &nsp, &group);
    if (s) return s;
    /* W is [C, M / group, k...]. */
    int64_t c = dim_of(x, 1), wc = dim_of(w, 0), m = -1;
    if (c >= 0 && wc >= 0 && wc != c)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (W) has extent %lld on axis 0, expected "
                            "%lld (the channels of input 0)", (long long)wc, (long long)c);
    if (dim_of(w, 1) >= 0 && !bd_mul_i64(dim_of(w, 1), group, &m))
        return fail_overflow(d, n, "the output channel count");
    if ((s = check_bias(d, n, b, x, &m))) return s;
    if (nsp < 0) return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, -1, NULL);

    window win;
    int64_t out_pad[BD_MAX_RANK], out_shape[BD_MAX_RANK + 2];
    if ((s = read_window(g, n, d, nsp, true, &win)) || (s = read_conv_kernel(d, n, w, &win)) ||
        (s = read_ints(d, n, "output_padding", nsp, 0, out_pad, NULL)) ||
        (s = need_at_least(d, n, "output_padding", out_pad, nsp, 0)))
        return s;
    for (int i = 0; i < nsp; i++) {
        if (out_pad[i] >= win.strides[i] && out_pad[i] >= win.dilations[i])
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'output_padding' value %d is "
                                "%lld, expected less than the stride (%lld) or dilation (%lld)", i,
                                (long long)out_pad[i], (long long)win.strides[i],
                                (long long)win.dilations[i]);
        /* The spec allows it below the dilation, but no runtime (onnxruntime, the ONNX
         * reference) computes such outputs, so there is nothing to check bdc against. */
        if (out_pad[i] >= win.strides[i])
            return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "attribute 'output_padding' value %d "
                                "(%lld) is not below the stride (%lld)", i, (long long)out_pad[i],
                                (long long)win.strides[i]);
    }
    /* output_shape lists the spatial extents; onnxruntime also accepts the full [N, M, ...]. */
    const bd_attr *os = bd_node_attr(n, "output_shape");
    int os_skip = 0;
    if (os) {
        if (os->type != BD_ATTR_INTS || (os->n != nsp && os->n != nsp + 2))
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'output_shape' must list %d "
                                "ints (one per spatial axis)", nsp);
        os_skip = os->n - nsp;
        memcpy(out_shape, os->ints, (size_t)os->n * sizeof *out_shape);
        if ((s = need_at_least(d, n, "output_shape", out_shape + os_skip, nsp, 1))) return s;
    }
    int64_t dims[BD_MAX_RANK] = {dim_of(x, 0), m};
    for (int i = 0; i < nsp; i++)
        if ((s = transpose_extent(d, n, &win, i, dim_of(x, 2 + i), out_pad[i],
                                  os ? out_shape[os_skip + i] : -1, &dims[2 + i])))
            return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, nsp + 2, dims);
}

/* ---- pooling ---- */

bd_status bd_infer_pool(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0);
    bool is_max = n->op == BD_OP_MAX_POOL;
    bd_status s;
    if ((s = need_present(d, n, x, 0, "X"))) return s;
    bool int8_ok = is_max && n->opset >= 12;
    if (x->dtype && !is_real_float(x->dtype) &&
        !(int8_ok && (x->dtype == BD_DT_INT8 || x->dtype == BD_DT_UINT8)))
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (X) is %s, expected a floating-point "
                            "type%s", bd_dtype_name(x->dtype), int8_ok ? ", int8 or uint8" : "");
    if ((s = need_spatial(d, n, x, 0, "X"))) return s;

    const bd_attr *ks = bd_node_attr(n, "kernel_shape");
    if (!ks) return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' is required");
    if (ks->type != BD_ATTR_INTS || ks->n < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' must be a non-empty "
                            "list of ints");
    if (ks->n > BD_MAX_RANK - 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' has %d values, more "
                            "than any supported rank allows", ks->n);
    if (x->rank >= 0 && x->rank != ks->n + 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' has %d values but "
                            "input 0 (X) has %d spatial axes", ks->n, x->rank - 2);
    int nsp = ks->n;
    window win;
    /* dilations exist for MaxPool from opset 10 and AveragePool from 19; ceil_mode from 10. */
    bool has_dilations = is_max ? n->opset >= 10 : n->opset >= 19;
    bool ceil_mode = false, flag;
    if ((s = read_window(g, n, d, nsp, has_dilations, &win))) return s;
    memcpy(win.kernel, ks->ints, (size_t)nsp * sizeof *win.kernel);
    if ((s = need_at_least(d, n, "kernel_shape", win.kernel, nsp, 1))) return s;
    if (n->opset >= 10 && (s = read_flag(d, n, "ceil_mode", 0, &ceil_mode))) return s;
    if (is_max && (s = read_flag(d, n, "storage_order", 0, &flag))) return s;
    if (!is_max && (s = read_flag(d, n, "count_include_pad", 0, &flag))) return s;
    bd_value *indices = bd_node_out(g, n, 1);
    if (indices && n->opset < 8)
        return bd_node_fail(d, BD_ERR_INVALID, n, "output 1 (Indices) exists from opset 8, the "
                            "model uses opset %d", n->opset);

    int64_t dims[BD_MAX_RANK] = {dim_of(x, 0), dim_of(x, 1)};
    for (int i = 0; i < nsp; i++)
        if ((s = window_extent(d, n, &win, i, dim_of(x, 2 + i), ceil_mode, &dims[2 + i])))
            return s;
    if ((s = bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, nsp + 2, dims))) return s;
    return bd_value_set(d, n, indices, BD_DT_INT64, nsp + 2, dims);
}

bd_status bd_infer_global_pool(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = need_present(d, n, x, 0, "X")) || (s = need_float(d, n, x, 0, "X")) ||
        (s = need_spatial(d, n, x, 0, "X")))
        return s;
    int64_t dims[BD_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = i < 2 ? x->dims[i] : 1;
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, x->rank, dims);
}

/* ---- matrix products ---- */

/* Gemm and MatMul: float types always, 32/64-bit integers from opset 9. */
static bd_status need_matmul_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                                   const char *name) {
    if (!v || !v->dtype || is_real_float(v->dtype)) return BD_OK;
    bool wide_int = v->dtype == BD_DT_INT32 || v->dtype == BD_DT_INT64 ||
                    v->dtype == BD_DT_UINT32 || v->dtype == BD_DT_UINT64;
    if (wide_int && n->opset >= 9) return BD_OK;
    return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) is %s, expected a floating-point "
                        "type%s", idx, name, bd_dtype_name(v->dtype),
                        n->opset >= 9 ? " or a 32/64-bit integer type" : "");
}

bd_status bd_infer_gemm(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, 1), *c = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = need_present(d, n, a, 0, "A")) || (s = need_present(d, n, b, 1, "B")) ||
        (s = need_matmul_dtype(d, n, a, 0, "A")) || (s = need_same_dtype(d, n, b, 1, "B", a)) ||
        (s = need_same_dtype(d, n, c, 2, "C", a)) || (s = need_rank(d, n, a, 0, "A", 2)) ||
        (s = need_rank(d, n, b, 1, "B", 2)))
        return s;
    if (!c && n->opset < 11)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (C) is optional only from opset 11, "
                            "the model uses opset %d", n->opset);
    bool trans_a = false, trans_b = false;
    if ((s = read_flag(d, n, "transA", 0, &trans_a)) ||
        (s = read_flag(d, n, "transB", 0, &trans_b)))
        return s;
    int64_t m = dim_of(a, trans_a ? 1 : 0), ka = dim_of(a, trans_a ? 0 : 1);
    int64_t kb = dim_of(b, trans_b ? 1 : 0), nn = dim_of(b, trans_b ? 0 : 1);
    if (ka >= 0 && kb >= 0 && ka != kb)
        return bd_node_fail(d, BD_ERR_INVALID, n, "inner dimensions differ: input 0 (A) gives K = "
                            "%lld, input 1 (B) gives K = %lld", (long long)ka, (long long)kb);
    int64_t dims[2] = {m, nn};
    if (c && c->rank > 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (C) has rank %d, expected at most 2",
                            c->rank);
    /* C broadcasts one way onto [M, N]: each of its (right-aligned) extents is 1 or matches. */
    for (int i = 0; c && i < c->rank; i++) {
        int64_t ce = c->dims[i], want = dims[2 - c->rank + i];
        if (ce >= 0 && ce != 1 && want >= 0 && ce != want)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (C) has extent %lld on axis %d, "
                                "which does not broadcast to %lld", (long long)ce, i,
                                (long long)want);
    }
    return bd_value_set(d, n, bd_node_out(g, n, 0), a->dtype ? a->dtype : b->dtype, 2, dims);
}

bd_status bd_infer_matmul(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = need_present(d, n, a, 0, "A")) || (s = need_present(d, n, b, 1, "B")) ||
        (s = need_matmul_dtype(d, n, a, 0, "A")) || (s = need_same_dtype(d, n, b, 1, "B", a)))
        return s;
    int dtype = a->dtype ? a->dtype : b->dtype;
    if (a->rank == 0 || b->rank == 0)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input %d is a scalar, expected rank 1 or more",
                            a->rank == 0 ? 0 : 1);
    if (a->rank < 0 || b->rank < 0)
        return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, -1, NULL);

    /* A 1-D operand is a row (A) or column (B) vector whose added axis is dropped again. */
    int64_t k_a = a->dims[a->rank - 1], k_b = b->dims[b->rank > 1 ? b->rank - 2 : 0];
    if (k_a >= 0 && k_b >= 0 && k_a != k_b)
        return bd_node_fail(d, BD_ERR_INVALID, n, "inner dimensions differ: input 0 (A) has %lld "
                            "columns, input 1 (B) has %lld rows", (long long)k_a, (long long)k_b);
    int batch_a = a->rank > 2 ? a->rank - 2 : 0, batch_b = b->rank > 2 ? b->rank - 2 : 0, rank;
    int64_t dims[BD_MAX_RANK];
    if (!bd_broadcast_shapes(batch_a, a->dims, batch_b, b->dims, &rank, dims)) {
        char sa[256], sb[256];
        return bd_node_fail(d, BD_ERR_INVALID, n, "batch dimensions of %s and %s do not broadcast",
                            bd_shape_str(a, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb));
    }
    if (a->rank > 1) dims[rank++] = a->dims[a->rank - 2];
    if (b->rank > 1) dims[rank++] = b->dims[b->rank - 1];
    return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, rank, dims);
}

/* ---- LSTM ---- */

/* One expected extent of an LSTM input: `mul` times the quantity *var (-1 while unknown). */
typedef struct lstm_dim {
    int64_t *var;
    int64_t mul;
    const char *what;
} lstm_dim;

/* Checks input v's rank and extents against `want`, learning the quantities still unknown. */
static bd_status lstm_check(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                            const char *name, int rank, const lstm_dim *want) {
    bd_status s = need_rank(d, n, v, idx, name, rank);
    if (s || !v || v->rank < 0) return s;
    for (int i = 0; i < rank; i++) {
        int64_t e = v->dims[i], expect;
        if (e < 0) continue;
        if (*want[i].var >= 0) {
            if (!bd_mul_i64(*want[i].var, want[i].mul, &expect) || e != expect)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has extent %lld on axis "
                                    "%d, expected %s = %lld", idx, name, (long long)e, i,
                                    want[i].what, (long long)expect);
        } else if (e % want[i].mul) {
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has extent %lld on axis %d, "
                                "expected a multiple of %lld (%s)", idx, name, (long long)e, i,
                                (long long)want[i].mul, want[i].what);
        }
        *want[i].var = e / want[i].mul;
    }
    return BD_OK;
}

static bd_status lstm_check_activations(bd_diag *d, const bd_node *n, int64_t num_dir) {
    /* The functions the RNN ops define; onnxruntime matches them case-insensitively. */
    static const char *const known[] = {
        "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
        "HardSigmoid", "Elu", "Softsign", "Softplus",
    };
    const bd_attr *a = bd_node_attr(n, "activations");
    if (!a) return BD_OK;
    if (a->type != BD_ATTR_STRINGS || a->n != 3 * num_dir)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'activations' must list %lld names "
                            "(3 per direction)", (long long)(3 * num_dir));
    for (int i = 0; i < a->n; i++) {
        bool ok = false;
        for (size_t k = 0; k < BD_COUNT(known) && !ok; k++)
            ok = bd_bytes_equal_nocase(&a->strings[i], known[k]);
        if (!ok)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'activations' value %d is not "
                                "an activation function LSTM defines", i);
    }
    return BD_OK;
}

bd_status bd_infer_lstm(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *r = bd_node_in(g, n, 2);
    bd_value *b = bd_node_in(g, n, 3), *lens = bd_node_in(g, n, 4), *h0 = bd_node_in(g, n, 5);
    bd_value *c0 = bd_node_in(g, n, 6), *p = bd_node_in(g, n, 7);
    bd_status s;
    if ((s = need_present(d, n, x, 0, "X")) || (s = need_present(d, n, w, 1, "W")) ||
        (s = need_present(d, n, r, 2, "R")) || (s = need_float(d, n, x, 0, "X")) ||
        (s = need_same_dtype(d, n, w, 1, "W", x)) || (s = need_same_dtype(d, n, r, 2, "R", x)) ||
        (s = need_same_dtype(d, n, b, 3, "B", x)) ||
        (s = need_dtype(d, n, lens, 4, "sequence_lens", BD_DT_INT32)) ||
        (s = need_same_dtype(d, n, h0, 5, "initial_h", x)) ||
        (s = need_same_dtype(d, n, c0, 6, "initial_c", x)) ||
        (s = need_same_dtype(d, n, p, 7, "P", x)))
        return s;

    const char *dir = bd_attr_string(g, n, "direction", "forward");
    int64_t num_dir;
    if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0) num_dir = 1;
    else if (strcmp(dir, "bidirectional") == 0) num_dir = 2;
    else
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'direction' is '%s', expected "
                            "forward, reverse or bidirectional", bd_quote(dir));
    bool batch_major = false, input_forget;
    if (n->opset >= 14 && (s = read_flag(d, n, "layout", 0, &batch_major))) return s;
    if ((s = read_flag(d, n, "input_forget", 0, &input_forget)) ||
        (s = lstm_check_activations(d, n, num_dir)))
        return s;
    int64_t hidden = -1;
    if (bd_node_attr(n, "hidden_size")) {
        hidden = bd_attr_int(n, "hidden_size", 0);
        /* The bound keeps 8 * hidden_size (B's extent) representable. */
        if (hidden < 1 || hidden > INT64_MAX / 8)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'hidden_size' is %lld, expected "
                                "a positive extent", (long long)hidden);
    }

    int64_t seq = -1, batch = -1, in_size = -1;
    lstm_dim want_x[3] = {{&seq, 1, "seq_length"}, {&batch, 1, "batch_size"},
                          {&in_size, 1, "input_size"}};
    if (batch_major) {
        want_x[0] = (lstm_dim){&batch, 1, "batch_size"};
        want_x[1] = (lstm_dim){&seq, 1, "seq_length"};
    }
    const lstm_dim want_w[3] = {{&num_dir, 1, "num_directions"}, {&hidden, 4, "4 * hidden_size"},
                                {&in_size, 1, "input_size"}};
    const lstm_dim want_r[3] = {{&num_dir, 1, "num_directions"}, {&hidden, 4, "4 * hidden_size"},
                                {&hidden, 1, "hidden_size"}};
    const lstm_dim want_b[2] = {{&num_dir, 1, "num_directions"}, {&hidden, 8, "8 * hidden_size"}};
    const lstm_dim want_lens[1] = {{&batch, 1, "batch_size"}};
    lstm_dim want_state[3] = {{&num_dir, 1, "num_directions"}, {&batch, 1, "batch_size"},
                              {&hidden, 1, "hidden_size"}};
    if (batch_major) {
        want_state[0] = (lstm_dim){&batch, 1, "batch_size"};
        want_state[1] = (lstm_dim){&num_dir, 1, "num_directions"};
    }
    const lstm_dim want_p[2] = {{&num_dir, 1, "num_directions"}, {&hidden, 3, "3 * hidden_size"}};
    if ((s = lstm_check(d, n, x, 0, "X", 3, want_x)) ||
        (s = lstm_check(d, n, w, 1, "W", 3, want_w)) ||
        (s = lstm_check(d, n, r, 2, "R", 3, want_r)) ||
        (s = lstm_check(d, n, b, 3, "B", 2, want_b)) ||
        (s = lstm_check(d, n, lens, 4, "sequence_lens", 1, want_lens)) ||
        (s = lstm_check(d, n, h0, 5, "initial_h", 3, want_state)) ||
        (s = lstm_check(d, n, c0, 6, "initial_c", 3, want_state)) ||
        (s = lstm_check(d, n, p, 7, "P", 2, want_p)))
        return s;

    int dtype = x->dtype ? x->dtype : w->dtype;
    int64_t y[4] = {seq, num_dir, batch, hidden}, state[3] = {num_dir, batch, hidden};
    if (batch_major) {
        y[0] = batch;
        y[1] = seq;
        y[2] = num_dir;
        state[0] = batch;
        state[1] = num_dir;
    }
    if ((s = bd_value_set(d, n, bd_node_out(g, n, 0), dtype, 4, y)) ||
        (s = bd_value_set(d, n, bd_node_out(g, n, 1), dtype, 3, state)))
        return s;
    return bd_value_set(d, n, bd_node_out(g, n, 2), dtype, 3, state);
}

/* ---- reductions ---- */

bd_status bd_infer_reduce(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *axes_in = bd_node_in(g, n, 1);
    bd_value *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = need_present(d, n, x, 0, "data"))) return s;
    /* axes moved from an attribute to input 1 at ReduceSum-13 and the others' opset 18. */
    int axes_input_since = n->op == BD_OP_REDUCE_SUM ? 13 : 18;
    bool from_input = n->opset >= axes_input_since, keepdims = true, noop = false;
    if ((s = read_flag(d, n, "keepdims", 1, &keepdims))) return s;
    if (from_input && (s = read_flag(d, n, "noop_with_empty_axes", 0, &noop))) return s;

    int64_t axes[BD_MAX_RANK];
    int naxes = 0;
    bool axes_known = true;
    const bd_attr *attr = bd_node_attr(n, "axes");
    if (!from_input) {
        if (axes_in)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axes) exists from opset %d, the "
                                "model uses opset %d", axes_input_since, n->opset);
        if (attr) {
            if (attr->type != BD_ATTR_INTS)
                return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' must be a list of "
                                    "ints");
            if (attr->n > BD_MAX_RANK)
                return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' lists %d axes, more "
                                    "than any supported rank", attr->n);
            naxes = attr->n;
            memcpy(axes, attr->ints, (size_t)naxes * sizeof *axes);
        }
    } else {
        if (attr)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'axes' is not allowed from "
                                "opset %d (axes is input 1), the model uses opset %d",
                                axes_input_since, n->opset);
        if ((s = need_dtype(d, n, axes_in, 1, "axes", BD_DT_INT64))) return s;
        if (axes_in && axes_in->rank > 1)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axes) has rank %d, expected 1",
                                axes_in->rank);
        if (axes_in && axes_in->constant) {
            if (axes_in->constant->numel > BD_MAX_RANK)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axes) lists %lld axes, more "
                                    "than any supported rank", (long long)axes_in->constant->numel);
            for (int64_t i = 0; i < axes_in->constant->numel; i++)
                axes[naxes++] = bd_tensor_get_i64(axes_in->constant, i);
        } else if (axes_in) {
            axes_known = dim_of(axes_in, 0) == 0; /* a known-empty tensor needs no data */
        }
    }

    int rank = x->rank;
    if (rank < 0) return bd_value_set(d, n, y, x->dtype, -1, NULL);
    int64_t dims[BD_MAX_RANK];
    if (!axes_known) {
        /* Which axes collapse is data; with keepdims only the extents are unknown. */
        int64_t count = dim_of(axes_in, 0);
        if (keepdims) {
            for (int i = 0; i < rank; i++) dims[i] = x->dims[i] == 1 ? 1 : -1;
            return bd_value_set(d, n, y, x->dtype, rank, dims);
        }
        if (count > rank)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (axes) lists %lld axes but input "
                                "0 has rank %d", (long long)count, rank);
        for (int i = 0; i < rank; i++) dims[i] = -1;
        return bd_value_set(d, n, y, x->dtype, count < 0 ? -1 : rank - (int)count, dims);
    }
    const char *axes_what = from_input ? "input 1 (axes)" : "attribute 'axes'";
    if ((s = norm_axes(d, n, axes_what, axes, naxes, rank))) return s;
    if (naxes == 0 && noop) return bd_value_set(d, n, y, x->dtype, rank, x->dims);

    bool reduced[BD_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) reduced[i] = naxes == 0; /* no axes: reduce them all */
    for (int i = 0; i < naxes; i++) reduced[axes[i]] = true;
    int out_rank = 0;
    for (int i = 0; i < rank; i++) {
        if (!reduced[i]) dims[out_rank++] = x->dims[i];
        else if (keepdims) dims[out_rank++] = 1;
    }
    return bd_value_set(d, n, y, x->dtype, out_rank, dims);
}

/* ---- Pad ---- */

bd_status bd_infer_pad(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    if ((s = need_present(d, n, x, 0, "data"))) return s;
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
        if ((s = need_present(d, n, pv, 1, "pads")) ||
            (s = need_dtype(d, n, pv, 1, "pads", BD_DT_INT64)) ||
            (s = need_rank(d, n, pv, 1, "pads", 1)) ||
            (s = need_same_dtype(d, n, cv, 2, "constant_value", x)))
            return s;
        if (cv && (cv->rank > 1 || dim_of(cv, 0) > 1))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (constant_value) must be a scalar");
        if (av && n->opset < 18)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 3 (axes) exists from opset 18, the "
                                "model uses opset %d", n->opset);
        if ((s = need_int_indices(d, n, av, 3, "axes")) || (s = need_rank(d, n, av, 3, "axes", 1)))
            return s;
        if (av) {
            axes_given = true;
            if (!bd_value_const_ints(av, axes, BD_MAX_RANK, &naxes)) {
                if (av->constant)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "input 3 (axes) lists %lld axes, "
                                        "more than any supported rank",
                                        (long long)av->constant->numel);
                axes_known = false;
            } else if (rank >= 0 && (s = norm_axes(d, n, "input 3 (axes)", axes, naxes, rank))) {
                return s;
            }
        }
        if (!bd_value_const_ints(pv, pads, 2 * BD_MAX_RANK, &npads)) {
            if (pv->constant)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (pads) has %lld values, more "
                                    "than any supported rank allows",
                                    (long long)pv->constant->numel);
            pads_known = false;
            npads = (int)(dim_of(pv, 0) < 0 || dim_of(pv, 0) > 2 * BD_MAX_RANK ? -1
                                                                              : dim_of(pv, 0));
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
            return fail_overflow(d, n, "the padded extent");
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
        (s = read_flag(d, n, "exclude_outside", 0, &flag)))
        return s;
    if (n->opset < 18) return BD_OK;
    if ((s = check_choice(g, n, d, "keep_aspect_ratio_policy", "stretch", policies, policy)))
        return s;
    return read_flag(d, n, "antialias", 0, &flag);
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
        int64_t in = dim_of(x, (int)axes[i]);
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
        float e = roundf(scale * (float)dim_of(x, (int)axes[i]));
        if (!(e < 9.2e18f)) return fail_overflow(d, n, "the resized extent");
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
        int64_t in = dim_of(x, (int)axes[i]);
        if (in < 0) {
            dims[axes[i]] = -1;
            continue;
        }
        float e = floorf((float)in * scale);
        if (!(e < 9.2e18f)) return fail_overflow(d, n, "the resized extent");
        dims[axes[i]] = (int64_t)e;
    }
    return BD_OK;
}

bd_status bd_infer_resize(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *y = bd_node_out(g, n, 0);
    bd_status s;
    const char *policy;
    if ((s = need_present(d, n, x, 0, "X")) || (s = check_resize_attrs(g, n, d, &policy)))
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
    if (n->opset < 11 && (s = need_present(d, n, scales, 1, "scales"))) return s;
    if ((s = need_float(d, n, roi, 1, "roi")) ||
        (s = need_dtype(d, n, scales, scales_idx, "scales", BD_DT_FLOAT)) ||
        (s = need_dtype(d, n, sizes, 3, "sizes", BD_DT_INT64)) ||
        (s = need_rank(d, n, scales, scales_idx, "scales", 1)) ||
        (s = need_rank(d, n, sizes, 3, "sizes", 1)))
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
        if (rank >= 0 && (s = norm_axes(d, n, "attribute 'axes'", axes, naxes, rank))) return s;
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
