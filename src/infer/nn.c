/* nn.c — shape and dtype inference for the neural-network ops: Conv, ConvTranspose, the pooling
 * ops and MaxUnpool, Gemm, MatMul and LSTM.
 *
 * These ops carry most of a model's geometry, so their rules follow the ONNX spec (and
 * onnxruntime where the spec leaves a gap) for every opset from 7 to 22: attributes that only
 * exist from some version on (ceil_mode, pooling dilations, LSTM layout) and optional inputs. Every
 * attribute list is checked against the spatial rank and every extent computed with overflow
 * checks, because the model file is untrusted. Where an extent depends on data the compiler does
 * not have it becomes -1 (unknown), never a guess. */
#include <math.h>
#include <string.h>

#include "infer/checks.h"

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
    if ((s = bd_read_ints(d, n, "strides", nsp, 1, w->strides, NULL)) ||
        (s = bd_need_at_least(d, n, "strides", w->strides, nsp, 1)))
        return s;
    if (has_dilations) {
        if ((s = bd_read_ints(d, n, "dilations", nsp, 1, w->dilations, NULL)) ||
            (s = bd_need_at_least(d, n, "dilations", w->dilations, nsp, 1)))
            return s;
    } else {
        for (int i = 0; i < nsp; i++) w->dilations[i] = 1;
    }
    if ((s = bd_read_ints(d, n, "pads", 2 * nsp, 0, w->pads, NULL)) ||
        (s = bd_need_at_least(d, n, "pads", w->pads, 2 * nsp, 0)))
        return s;
    return BD_OK;
}

/* (kernel - 1) * dilation + 1: the input span one window covers. */
static bd_status window_span(bd_diag *d, const bd_node *n, const window *w, int i, int64_t *span) {
    if (!bd_mul_i64(w->kernel[i] - 1, w->dilations[i], span) || !bd_add_i64(*span, 1, span))
        return bd_fail_overflow(d, n, "the dilated kernel");
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
        return bd_fail_overflow(d, n, "the padded input");
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
    bd_status s = bd_read_ints(d, n, "kernel_shape", win->nsp, -1, win->kernel, &given);
    if (s) return s;
    if (given && (s = bd_need_at_least(d, n, "kernel_shape", win->kernel, win->nsp, 1))) return s;
    for (int i = 0; i < win->nsp; i++) {
        int64_t wd = bd_dim_of(w, 2 + i);
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
    if ((s = bd_need_same_dtype(d, n, b, 2, "B", x)) || (s = bd_need_rank(d, n, b, 2, "B", 1))) return s;
    int64_t bm = bd_dim_of(b, 0);
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
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_present(d, n, w, 1, "W")) ||
        (s = bd_need_float(d, n, x, 0, "X")) || (s = bd_need_same_dtype(d, n, w, 1, "W", x)))
        return s;
    *dtype = x->dtype ? x->dtype : w->dtype;
    if ((s = conv_spatial_rank(d, n, x, w, nsp))) return s;
    *group = bd_attr_int(n, "group", 1);
    if (*group < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'group' is %lld, expected at least 1",
                            (long long)*group);
    int64_t c = bd_dim_of(x, 1);
    if (c >= 0 && c % *group)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (X) has %lld channels, not divisible "
                            "by group %lld", (long long)c, (long long)*group);
    return BD_OK;
}

/* Conv's output (in dtype) from X and W (and the bias B, if any) and the window attributes. */
static bd_status conv_shape(bd_graph *g, bd_node *n, bd_diag *d, const bd_value *x,
                            const bd_value *w, const bd_value *b, int dtype) {
    int nsp;
    bd_status s = conv_spatial_rank(d, n, x, w, &nsp);
    if (s) return s;
    int64_t group = bd_attr_int(n, "group", 1);
    if (group < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'group' is %lld, expected at least 1",
                            (long long)group);
    int64_t c = bd_dim_of(x, 1), wc = bd_dim_of(w, 1), m = bd_dim_of(w, 0);
    if (c >= 0 && c % group)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (X) has %lld channels, not divisible "
                            "by group %lld", (long long)c, (long long)group);
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
    int64_t dims[BD_MAX_RANK] = {bd_dim_of(x, 0), m};
    for (int i = 0; i < nsp; i++)
        if ((s = window_extent(d, n, &win, i, bd_dim_of(x, 2 + i), false, &dims[2 + i]))) return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, nsp + 2, dims);
}

bd_status bd_infer_conv(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *b = bd_node_in(g, n, 2);
    int dtype, nsp;
    int64_t group;
    bd_status s = conv_inputs(d, n, x, w, &dtype, &nsp, &group);
    if (s) return s;
    return conv_shape(g, n, d, x, w, b, dtype);
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
        return bd_fail_overflow(d, n, "the output extent");
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
        if (!bd_mul_i64(in, w->strides[i], &same)) return bd_fail_overflow(d, n, "the output extent");
        *out = same < full ? same : full;
        return BD_OK;
    }
    if (w->auto_pad == AUTO_PAD_NOTSET && /* pads are >= 0, so negating them is safe */
        (!bd_add_i64(full, -w->pads[i], &full) || !bd_add_i64(full, -w->pads[w->nsp + i], &full)))
        return bd_fail_overflow(d, n, "the output extent");
    if (full < 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "spatial axis %d: the output extent would be "
                            "%lld (input %lld, pads %lld and %lld)", i, (long long)full,
                            (long long)in, (long long)w->pads[i], (long long)w->pads[w->nsp + i]);
    *out = full;
    return BD_OK;
}

/* ConvInteger (x, w, zero points: an int32 result), QLinearConv (x, scale, zero point, w,
 * scale, zero point, y's scale and zero point, int32 bias) and the internal DequantizedConv (x, w,
 * float bias, x's scale and zero point, w's: a float result, front/qdq_conv.c): Conv's shapes over
 * 8-bit integers. */
bd_status bd_infer_conv_integer(bd_graph *g, bd_node *n, bd_diag *d) {
    bool q = n->op == BD_OP_QLINEAR_CONV, dq = n->op == BD_OP_DEQUANTIZED_CONV;
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, q ? 3 : 1);
    bd_value *yz = q || dq ? bd_node_in(g, n, 7) : NULL;
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "x")) || (s = bd_need_present(d, n, w, q ? 3 : 1, "w")))
        return s;
    for (int i = 0; i < 2; i++) {
        const bd_value *v = i ? w : x;
        if (v->dtype && v->dtype != BD_DT_UINT8 && v->dtype != BD_DT_INT8)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d is %s, expected uint8 or int8",
                                i ? (q ? 3 : 1) : 0, bd_dtype_name(v->dtype));
    }
    int out_dt = dq ? BD_DT_FLOAT : q ? (yz && yz->dtype ? yz->dtype : x->dtype) : BD_DT_INT32;
    return conv_shape(g, n, d, x, w, dq ? bd_node_in(g, n, 2) : NULL, out_dt);
}

bd_status bd_infer_conv_transpose(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *b = bd_node_in(g, n, 2);
    int dtype, nsp;
    int64_t group;
    bd_status s = conv_inputs(d, n, x, w, &dtype, &nsp, &group);
    if (s) return s;
    /* W is [C, M / group, k...]. */
    int64_t c = bd_dim_of(x, 1), wc = bd_dim_of(w, 0), m = -1;
    if (c >= 0 && wc >= 0 && wc != c)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (W) has extent %lld on axis 0, expected "
                            "%lld (the channels of input 0)", (long long)wc, (long long)c);
    if (bd_dim_of(w, 1) >= 0 && !bd_mul_i64(bd_dim_of(w, 1), group, &m))
        return bd_fail_overflow(d, n, "the output channel count");
    if ((s = check_bias(d, n, b, x, &m))) return s;
    if (nsp < 0) return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, -1, NULL);

    window win;
    int64_t out_pad[BD_MAX_RANK], out_shape[BD_MAX_RANK + 2];
    if ((s = read_window(g, n, d, nsp, true, &win)) || (s = read_conv_kernel(d, n, w, &win)) ||
        (s = bd_read_ints(d, n, "output_padding", nsp, 0, out_pad, NULL)) ||
        (s = bd_need_at_least(d, n, "output_padding", out_pad, nsp, 0)))
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
        if ((s = bd_need_at_least(d, n, "output_shape", out_shape + os_skip, nsp, 1))) return s;
    }
    int64_t dims[BD_MAX_RANK] = {bd_dim_of(x, 0), m};
    for (int i = 0; i < nsp; i++)
        if ((s = transpose_extent(d, n, &win, i, bd_dim_of(x, 2 + i), out_pad[i],
                                  os ? out_shape[os_skip + i] : -1, &dims[2 + i])))
            return s;
    return bd_value_set(d, n, bd_node_out(g, n, 0), dtype, nsp + 2, dims);
}

/* ---- pooling ---- */

bd_status bd_infer_pool(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0);
    bool is_max = n->op == BD_OP_MAX_POOL;
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X"))) return s;
    bool int8_ok = is_max && n->opset >= 12;
    if (x->dtype && !bd_is_real_float(x->dtype) &&
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
    /* dilations exist for MaxPool from opset 10, LpPool from 18 and AveragePool from 19;
     * ceil_mode from 10 (LpPool: 18). */
    bool lp = n->op == BD_OP_LP_POOL;
    bool has_dilations = is_max ? n->opset >= 10 : n->opset >= (lp ? 18 : 19);
    bool ceil_mode = false, flag;
    if ((s = read_window(g, n, d, nsp, has_dilations, &win))) return s;
    memcpy(win.kernel, ks->ints, (size_t)nsp * sizeof *win.kernel);
    if ((s = bd_need_at_least(d, n, "kernel_shape", win.kernel, nsp, 1))) return s;
    if (n->opset >= (lp ? 18 : 10) && (s = bd_read_flag(d, n, "ceil_mode", 0, &ceil_mode)))
        return s;
    if (is_max && (s = bd_read_flag(d, n, "storage_order", 0, &flag))) return s;
    if (!is_max && !lp && (s = bd_read_flag(d, n, "count_include_pad", 0, &flag))) return s;
    bd_value *indices = bd_node_out(g, n, 1);
    if (indices && n->opset < 8)
        return bd_node_fail(d, BD_ERR_INVALID, n, "output 1 (Indices) exists from opset 8, the "
                            "model uses opset %d", n->opset);

    int64_t dims[BD_MAX_RANK] = {bd_dim_of(x, 0), bd_dim_of(x, 1)};
    for (int i = 0; i < nsp; i++)
        if ((s = window_extent(d, n, &win, i, bd_dim_of(x, 2 + i), ceil_mode, &dims[2 + i])))
            return s;
    if ((s = bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, nsp + 2, dims))) return s;
    return bd_value_set(d, n, indices, BD_DT_INT64, nsp + 2, dims);
}

/* MaxUnpool: X and its MaxPool indices I; the output's spatial extents are those of a
 * ConvTranspose with that window, (in - 1) * stride + kernel - pads, unless input 2 (output_shape)
 * gives the whole shape, which must then be a constant to be known and at least that large (the
 * unpooled tensor sits at its origin). */
bd_status bd_infer_max_unpool(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0), *idx = bd_node_in(g, n, 1), *os = bd_node_in(g, n, 2);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_present(d, n, idx, 1, "I")) ||
        (s = bd_need_float(d, n, x, 0, "X")) ||
        (s = bd_need_dtype(d, n, idx, 1, "I", BD_DT_INT64)) ||
        (s = bd_need_dtype(d, n, os, 2, "output_shape", BD_DT_INT64)) ||
        (s = need_spatial(d, n, x, 0, "X")))
        return s;
    if (x->rank >= 0 && idx->rank >= 0 && x->rank != idx->rank)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (I) has rank %d, X has %d", idx->rank,
                            x->rank);
    for (int i = 0; x->rank >= 0 && i < x->rank && i < idx->rank; i++)
        if (x->dims[i] >= 0 && idx->dims[i] >= 0 && x->dims[i] != idx->dims[i])
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 1 (I) dim %d is %lld, X's is %lld", i,
                                (long long)idx->dims[i], (long long)x->dims[i]);
    const bd_attr *ks = bd_node_attr(n, "kernel_shape");
    if (!ks || ks->type != BD_ATTR_INTS || ks->n < 1 || ks->n > BD_MAX_RANK - 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' is required: one int "
                            "per spatial axis");
    if (x->rank >= 0 && x->rank != ks->n + 2)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'kernel_shape' has %d values but "
                            "input 0 (X) has %d spatial axes", ks->n, x->rank - 2);
    int nsp = ks->n;
    window win;
    if ((s = read_window(g, n, d, nsp, false, &win))) return s;
    memcpy(win.kernel, ks->ints, (size_t)nsp * sizeof *win.kernel);
    if ((s = bd_need_at_least(d, n, "kernel_shape", win.kernel, nsp, 1))) return s;
    int64_t dims[BD_MAX_RANK] = {bd_dim_of(x, 0), bd_dim_of(x, 1)};
    for (int i = 0; i < nsp; i++)
        if ((s = transpose_extent(d, n, &win, i, bd_dim_of(x, 2 + i), 0, -1, &dims[2 + i])))
            return s;
    if (os) {
        int64_t want[BD_MAX_RANK];
        int nv = 0;
        if (os->rank >= 0 && (os->rank != 1 || (os->dims[0] >= 0 && os->dims[0] != nsp + 2)))
            return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (output_shape) must hold %d values",
                                nsp + 2);
        if (!bd_value_const_ints(os, want, BD_MAX_RANK, &nv)) {
            for (int i = 2; i < nsp + 2; i++) dims[i] = -1;
        } else {
            if (nv != nsp + 2)
                return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (output_shape) holds %d values, "
                                    "expected %d", nv, nsp + 2);
            for (int i = 0; i < nv; i++)
                if (want[i] < 0 ||
                    (dims[i] >= 0 && (i < 2 ? want[i] != dims[i] : want[i] < dims[i])))
                    return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (output_shape) value %d is "
                                        "%lld, the unpooled tensor's extent is %lld", i,
                                        (long long)want[i], (long long)dims[i]);
            memcpy(dims, want, (size_t)nv * sizeof *want);
        }
    }
    return bd_value_set(d, n, bd_node_out(g, n, 0), x->dtype, nsp + 2, dims);
}

bd_status bd_infer_global_pool(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *x = bd_node_in(g, n, 0);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_float(d, n, x, 0, "X")) ||
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
    if (!v || !v->dtype || bd_is_real_float(v->dtype)) return BD_OK;
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
    if ((s = bd_need_present(d, n, a, 0, "A")) || (s = bd_need_present(d, n, b, 1, "B")) ||
        (s = need_matmul_dtype(d, n, a, 0, "A")) || (s = bd_need_same_dtype(d, n, b, 1, "B", a)) ||
        (s = bd_need_same_dtype(d, n, c, 2, "C", a)) || (s = bd_need_rank(d, n, a, 0, "A", 2)) ||
        (s = bd_need_rank(d, n, b, 1, "B", 2)))
        return s;
    if (!c && n->opset < 11)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 2 (C) is optional only from opset 11, "
                            "the model uses opset %d", n->opset);
    bool trans_a = false, trans_b = false;
    if ((s = bd_read_flag(d, n, "transA", 0, &trans_a)) ||
        (s = bd_read_flag(d, n, "transB", 0, &trans_b)))
        return s;
    int64_t m = bd_dim_of(a, trans_a ? 1 : 0), ka = bd_dim_of(a, trans_a ? 0 : 1);
    int64_t kb = bd_dim_of(b, trans_b ? 1 : 0), nn = bd_dim_of(b, trans_b ? 0 : 1);
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

/* MatMul's output shape from A and B (numpy's matmul), in dtype. */
static bd_status matmul_shape(bd_graph *g, bd_node *n, bd_diag *d, const bd_value *a,
                              const bd_value *b, int dtype) {
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

bd_status bd_infer_matmul(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, 1);
    bd_status s;
    if ((s = bd_need_present(d, n, a, 0, "A")) || (s = bd_need_present(d, n, b, 1, "B")) ||
        (s = need_matmul_dtype(d, n, a, 0, "A")) || (s = bd_need_same_dtype(d, n, b, 1, "B", a)))
        return s;
    return matmul_shape(g, n, d, a, b, a->dtype ? a->dtype : b->dtype);
}

/* MatMulInteger (A, B, zero points: an int32 product), QLinearMatMul (a, scale, zero point,
 * b, scale, zero point, then y's: quantized like y's zero point) and the internal
 * DequantizedMatMul (a, b, a's scale and zero point, b's: a float product, front/qdq_conv.c;
 * with y's scale and zero point too, quantized like that zero point): MatMul's shapes of 8-bit
 * integers. */
bd_status bd_infer_matmul_integer(bd_graph *g, bd_node *n, bd_diag *d) {
    bool q = n->op == BD_OP_QLINEAR_MATMUL, dq = n->op == BD_OP_DEQUANTIZED_MATMUL;
    bd_value *a = bd_node_in(g, n, 0), *b = bd_node_in(g, n, q ? 3 : 1);
    bd_value *yz = q ? bd_node_in(g, n, 7) : NULL;
    bd_status s;
    if ((s = bd_need_present(d, n, a, 0, "A")) || (s = bd_need_present(d, n, b, q ? 3 : 1, "B")))
        return s;
    for (int i = 0; i < 2; i++) {
        const bd_value *v = i ? b : a;
        if (v->dtype && v->dtype != BD_DT_UINT8 && v->dtype != BD_DT_INT8)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d is %s, expected uint8 or int8",
                                i ? (q ? 3 : 1) : 0, bd_dtype_name(v->dtype));
    }
    int ydt = dq ? (yz && yz->dtype ? yz->dtype : BD_DT_FLOAT)
                 : q ? (yz && yz->dtype ? yz->dtype : a->dtype) : BD_DT_INT32;
    return matmul_shape(g, n, d, a, b, ydt);
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
    bd_status s = bd_need_rank(d, n, v, idx, name, rank);
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

static bd_status lstm_check_activations(bd_diag *d, const bd_node *n, int64_t num_dir,
                                        int per_dir) {
    /* The functions the RNN ops define; onnxruntime matches them case-insensitively. */
    static const char *const known[] = {
        "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
        "HardSigmoid", "Elu", "Softsign", "Softplus",
    };
    const bd_attr *a = bd_node_attr(n, "activations");
    if (!a) return BD_OK;
    if (a->type != BD_ATTR_STRINGS || a->n != per_dir * num_dir)
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'activations' must list %lld names "
                            "(%d per direction)", (long long)(per_dir * num_dir), per_dir);
    for (int i = 0; i < a->n; i++) {
        bool ok = false;
        for (size_t k = 0; k < BD_COUNT(known) && !ok; k++)
            ok = bd_bytes_equal_nocase(&a->strings[i], known[k]);
        if (!ok)
            return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'activations' value %d is not "
                                "an activation function the RNN ops define", i);
    }
    return BD_OK;
}

/* LSTM, GRU and RNN: 4, 3 and 1 gates (W, R and B hold them stacked), 3, 2 and 1 activations per
 * direction; only LSTM has a cell state (initial_c, P, Y_c). */
bd_status bd_infer_rnn(bd_graph *g, bd_node *n, bd_diag *d) {
    bool lstm = n->op == BD_OP_LSTM;
    int gates = lstm ? 4 : n->op == BD_OP_GRU ? 3 : 1, acts = lstm ? 3 : n->op == BD_OP_GRU ? 2 : 1;
    bd_value *x = bd_node_in(g, n, 0), *w = bd_node_in(g, n, 1), *r = bd_node_in(g, n, 2);
    bd_value *b = bd_node_in(g, n, 3), *lens = bd_node_in(g, n, 4), *h0 = bd_node_in(g, n, 5);
    bd_value *c0 = bd_node_in(g, n, 6), *p = bd_node_in(g, n, 7);
    bd_status s;
    if ((s = bd_need_present(d, n, x, 0, "X")) || (s = bd_need_present(d, n, w, 1, "W")) ||
        (s = bd_need_present(d, n, r, 2, "R")) || (s = bd_need_float(d, n, x, 0, "X")) ||
        (s = bd_need_same_dtype(d, n, w, 1, "W", x)) || (s = bd_need_same_dtype(d, n, r, 2, "R", x)) ||
        (s = bd_need_same_dtype(d, n, b, 3, "B", x)) ||
        (s = bd_need_dtype(d, n, lens, 4, "sequence_lens", BD_DT_INT32)) ||
        (s = bd_need_same_dtype(d, n, h0, 5, "initial_h", x)) ||
        (s = bd_need_same_dtype(d, n, c0, 6, "initial_c", x)) ||
        (s = bd_need_same_dtype(d, n, p, 7, "P", x)))
        return s;

    const char *dir = bd_attr_string(g, n, "direction", "forward");
    int64_t num_dir;
    if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0) num_dir = 1;
    else if (strcmp(dir, "bidirectional") == 0) num_dir = 2;
    else
        return bd_node_fail(d, BD_ERR_INVALID, n, "attribute 'direction' is '%s', expected "
                            "forward, reverse or bidirectional", bd_quote(dir));
    bool batch_major = false, input_forget;
    if (n->opset >= 14 && (s = bd_read_flag(d, n, "layout", 0, &batch_major))) return s;
    if ((s = bd_read_flag(d, n, "input_forget", 0, &input_forget)) ||
        (s = lstm_check_activations(d, n, num_dir, acts)))
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
    const lstm_dim want_w[3] = {{&num_dir, 1, "num_directions"},
                                {&hidden, gates, "gates x hidden_size"},
                                {&in_size, 1, "input_size"}};
    const lstm_dim want_r[3] = {{&num_dir, 1, "num_directions"},
                                {&hidden, gates, "gates x hidden_size"},
                                {&hidden, 1, "hidden_size"}};
    const lstm_dim want_b[2] = {{&num_dir, 1, "num_directions"},
                                {&hidden, 2 * gates, "2 x gates x hidden_size"}};
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
    if (!lstm && bd_node_out(g, n, 2))
        return bd_node_fail(d, BD_ERR_INVALID, n, "has an output 2, which only LSTM has");
    return bd_value_set(d, n, bd_node_out(g, n, 2), dtype, 3, state);
}
