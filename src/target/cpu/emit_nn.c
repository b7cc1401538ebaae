/* emit_nn.c — C bodies of the neural-network nests: CONV, CONV_TRANSPOSE, POOL, GLOBAL_POOL,
 * MATMUL, NORM and LSTM (parameters resolved by lower/nn.c and the CPU tiler, see nest/params.h).
 *
 * float32 convolutions of rank 1 and 2 with constant weights, float32 2-D transposed
 * convolutions whose stride is their kernel (no padding), and every float32 matrix product call
 * the micro-kernels of kernels/bd_kernels.h: weights (and constant B matrices) are packed once in
 * create() into the nest's S->packed slot, and create() also checks that the per-thread scratch
 * the compiler reserved covers what the kernels ask for. Everything else (3-D and float64
 * convolutions, other transposed convolutions, pooling, integer matrix products, the
 * normalisations) is a generated loop nest whose sizes are compile-time constants. Loops walk
 * each block's [lo, hi) ranges; window loops start and stop at the first and last tap that falls
 * inside the input, so the inner loops carry no bounds tests.
 *
 * Fused epilogues (fuse/fuse.h): Relu, Clip, SiLU and HardSwish run inside the micro-kernels; a
 * residual Add and the activation the kernels lack (LeakyRelu) run in generated loops over the block
 * the kernel has just written, while it is still in cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bd_kernels.h"
#include "target/cpu/target.h"

/* ---------------------------------------------------------------- helpers */

static const bd_value *operand_value(bd_emitter *e, const bd_nest *n, int k) {
    return bd_graph_value(e->graph, n->operands[k].value);
}

static const char *operand_ptr(bd_emitter *e, const bd_nest *n, int k) {
    return bd_emit_ptr(e, n->operands[k].value);
}

static int nest_index(const bd_emitter *e, const bd_nest *n) {
    return (int)(n - (const bd_nest *)e->prog->nests.data);
}

static long long ll(int64_t v) { return (long long)v; }

/* The part of an epilogue activation the micro-kernels apply themselves on their registers: a
 * BD_ACT_* of kernels/bd_kernels.h with its bounds. The others (code BD_ACT_NONE with an
 * activation present) run in generated code after them: act_after_kernel. */
typedef struct kernel_act {
    int code;
    double lo, hi;
} kernel_act;

static bool is_load0(const bd_expr *x, int i) {
    return x->node[i].op == BD_EXPR_LOAD && x->node[i].operand == 0;
}

static kernel_act kernel_act_of(const bd_nest *n) {
    const bd_expr *x = &n->epi.act;
    const bd_expr_node *r = bd_expr_root(x);
    kernel_act none = {BD_ACT_NONE, 0, 0};
    if (!r) return none;
    if (r->op == BD_EXPR_RELU && is_load0(x, r->arg[0])) return (kernel_act){BD_ACT_RELU, 0, 0};
    if (r->op == BD_EXPR_SILU && is_load0(x, r->arg[0])) return (kernel_act){BD_ACT_SILU, 0, 0};
    if (r->op == BD_EXPR_GELU && is_load0(x, r->arg[0])) return (kernel_act){BD_ACT_GELU, 0, 0};
    if (r->op == BD_EXPR_HARD_SWISH && is_load0(x, r->arg[0]))
        return (kernel_act){BD_ACT_HARD_SWISH, 0, 0};
    double lo, hi; /* Clip, or either bound alone */
    if (bd_expr_clamp_bounds(x, &lo, &hi)) return (kernel_act){BD_ACT_CLIP, lo, hi};
    return none;
}

static bool act_after_kernel(const bd_nest *n) {
    return n->epi.act.n && kernel_act_of(n).code == BD_ACT_NONE;
}

/* The nest's epilogue activation (fuse/fuse.c) applied to expression v, which is a name or a
 * parenthesised expression; v itself when there is none. */
static const char *act_expr(bd_emitter *e, const bd_nest *n, const char *v) {
    if (!n->epi.act.n) return v;
    const char *loads[1] = {v};
    return bd_emit_str(e, "(%s)", bd_print_expr(&e->pr, &bd_c_dialect, &n->epi.act, loads));
}

/* In create(): fail (NULL) when the scratch reserved per thread is below `need_expr` bytes. */
static void emit_scratch_check(bd_emitter *e, const bd_nest *n, const char *need_expr) {
    bd_emit_open(e, "if ((size_t)(%s) > (size_t)BD_SCRATCH_BYTES)", need_expr);
    bd_emit(e, "bdrt_errorf(\"nest %d: the kernels need more scratch than was reserved\");",
            nest_index(e, n));
    bd_emit(e, "bd_destroy(S);");
    bd_emit(e, "return NULL;");
    bd_emit_close(e, NULL);
}

/* In create(): allocate `bytes_expr` into S->packed[slot] as `var` (of type float *). */
static void emit_packed_alloc(bd_emitter *e, int slot, const char *var, const char *bytes_expr) {
    bd_emit(e, "float *%s = bdrt_alloc(%s);", var, bytes_expr);
    bd_emit(e, "if (!%s) { bd_destroy(S); return NULL; }", var);
    bd_emit(e, "S->packed[%d] = %s;", slot, var);
}

/* ---------------------------------------------------------------- CONV */

/* The one-element zero point of an 8-bit operand as a T expression ("0" without one). */
static const char *zero_point(bd_emitter *e, const bd_nest *n, int operand, const char *T) {
    return operand < 0 ? "0" : bd_emit_str(e, "(%s)%s[0]", T, operand_ptr(e, n, operand));
}

/* The shape's bf16: --precision bf16 (kernels/bd_kernels.h's bd_conv2d_shape.bf16: the 16-lane
 * direct kernel and the pointwise GEMM in bfloat16 where the CPU has AVX512_BF16). */
static void emit_conv2d_shape(bd_emitter *e, const bd_conv_params *cp, const bd_value *x,
                              const bd_value *y) {
    bool one_d = cp->nsp == 1;
    int64_t H = one_d ? 1 : x->dims[2], W = x->dims[x->rank - 1];
    int64_t OH = one_d ? 1 : y->dims[2], OW = y->dims[y->rank - 1];
    if (cp->pooled) OH = cp->conv_oh, OW = cp->conv_ow; /* y is the pool's */
    int64_t KH = one_d ? 1 : cp->kernel[0], KW = cp->kernel[cp->nsp - 1];
    int64_t sh = one_d ? 1 : cp->strides[0], sw = cp->strides[cp->nsp - 1];
    int64_t dh = one_d ? 1 : cp->dilations[0], dw = cp->dilations[cp->nsp - 1];
    int64_t pt = one_d ? 0 : cp->pads[0], pl = cp->pads[cp->nsp - 1];
    bd_emit(e, "static const bd_conv2d_shape sh = {%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
               "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %d%s};",
            ll(x->dims[0]), ll(x->dims[1]), ll(H), ll(W), ll(y->dims[1]), ll(OH), ll(OW), ll(KH),
            ll(KW), ll(cp->group), ll(sh), ll(sw), ll(dh), ll(dw), ll(pt), ll(pl), ll(cp->winograd),
            cp->pre ? 1 + cp->pre_relu : 0, e->bf16 ? ", 1" : ", 0");
}

/* Residual and activation over the block's float output just written by a kernel tile of batch
 * item n, still in cache (inside the tile's n loop). */
static void emit_conv_post_pass(bd_emitter *e, const bd_nest *n, const bd_conv_params *cp) {
    const bd_value *y = operand_value(e, n, cp->y);
    int r = y->rank;
    int64_t ys[BD_MAX_RANK];
    bd_dims_strides(r, y->dims, ys);
    bd_emit(e, "float *Yb = %s + n * %lld;", operand_ptr(e, n, cp->y), ll(ys[0]));
    if (n->epi.residual >= 0) bd_emit(e, "const float *Rb = %s + n * %lld;", operand_ptr(e, n, n->epi.residual), ll(ys[0]));
    const char *off = "0";
    for (int i = 1; i < r; i++) {
        bd_emit_open(e, "for (int64_t e%d = lo[%d]; e%d < hi[%d]; e%d++)", i, i, i, i, i);
        off = bd_emit_str(e, "%s + e%d * %lld", off, i, ll(ys[i]));
    }
    if (n->epi.residual >= 0) bd_emit(e, "const float v = Yb[%s] + Rb[%s];", off, off);
    else bd_emit(e, "const float v = Yb[%s];", off);
    bd_emit(e, "Yb[%s] = %s;", off, act_expr(e, n, "v"));
    for (int i = 1; i < r; i++) bd_emit_close(e, NULL);
}

/* The kernels' bd_pool2d_shape `ps` of a 2-D max pool: input and output planes, window, strides
 * and leading pads (height, width). */
static void emit_pool2d_shape(bd_emitter *e, int64_t H, int64_t W, int64_t OH, int64_t OW,
                              const int64_t *kernel, const int64_t *strides, const int64_t *pads) {
    bd_emit(e,
            "static const bd_pool2d_shape ps = {%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
            "%lld, %lld};",
            ll(H), ll(W), ll(OH), ll(OW), ll(kernel[0]), ll(kernel[1]), ll(strides[0]),
            ll(strides[1]), ll(pads[0]), ll(pads[1]));
}

/* The activation arguments of a conv tile call (code, lower, upper bound) for code `code`. */
static const char *kernel_act_args(bd_emitter *e, int code, kernel_act ka) {
    return bd_emit_str(e, "%d, %s, %s", code, bd_emit_float(e, code == BD_ACT_CLIP ? ka.lo : 0, BD_DT_FLOAT),
                       bd_emit_float(e, code == BD_ACT_CLIP ? ka.hi : 0, BD_DT_FLOAT));
}

/* A pooled convolution's rows per band: the rows pool_band pool rows read. */
static int64_t pool_band_rows(const bd_conv_params *cp) {
    const int64_t rows = (cp->pool_band - 1) * cp->pool_strides[0] + cp->pool_kernel[0];
    return rows < cp->conv_oh ? rows : cp->conv_oh;
}

/* A convolution with the max pool after it (fuse/conv_pool.c), per block of channels x pool
 * rows: a band of pool rows at a time, the convolution rows [a, b) its windows read are computed
 * into the band in scratch and pooled into y. The rows a band shares with the one before (a 3x3
 * stride-2 window's last row is the next window's first) are moved to the band's front rather
 * than computed again. The kernels address row r of channel c at (c * OH + r) * OW from the
 * pointer they are given: the band pointer less the block's first channel and row a. */
static void emit_conv_pooled(bd_emitter *e, const bd_nest *n, const bd_conv_params *cp, int slot) {
    const bd_value *y = operand_value(e, n, cp->y);
    const int64_t OH = cp->conv_oh, OW = cp->conv_ow, M = y->dims[1], PH = y->dims[2], PW = y->dims[3];
    const int64_t kh = cp->pool_kernel[0], sh = cp->pool_strides[0], pt = cp->pool_pads[0];
    kernel_act ka = kernel_act_of(n);
    BD_ASSERT(!act_after_kernel(n) && n->epi.residual < 0);
    emit_pool2d_shape(e, OH, OW, PH, PW, cp->pool_kernel, cp->pool_strides, cp->pool_pads);
    bd_emit(e, "float *band = (float *)(void *)(scratch + %lld);", ll(cp->pool_band_at));
    bd_emit(e, "const int64_t nc = hi[1] - lo[1];");
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit(e, "int64_t ka = 0, kb = 0; /* the convolution rows the band holds */");
    bd_emit_open(e, "for (int64_t p0 = lo[2]; p0 < hi[2]; p0 += %lld)", ll(cp->pool_band));
    bd_emit(e, "const int64_t p1 = p0 + %lld < hi[2] ? p0 + %lld : hi[2];", ll(cp->pool_band), ll(cp->pool_band));
    bd_emit(e, "int64_t a = p0 * %lld - %lld, b = (p1 - 1) * %lld - %lld + %lld;", ll(sh), ll(pt), ll(sh),
            ll(pt), ll(kh));
    bd_emit(e, "a = a < 0 ? 0 : a;");
    bd_emit(e, "b = b > %lld ? %lld : b;", ll(OH), ll(OH));
    bd_emit(e, "const int64_t keep = ka <= a && a < kb ? kb - a : 0;");
    bd_emit_open(e, "if (keep && a > ka)");
    bd_emit(e, "for (int64_t c = 0; c < nc; c++) memmove(band + c * %lld, band + c * %lld + (a - ka) * %lld, "
               "(size_t)(keep * %lld) * sizeof(float));",
            ll(OH * OW), ll(OH * OW), ll(OW), ll(OW));
    bd_emit_close(e, NULL);
    bd_emit(e, "float *yb = band - (n * %lld + lo[1]) * %lld - a * %lld;", ll(M), ll(OH * OW), ll(OW));
    const char *bias = cp->b >= 0 ? operand_ptr(e, n, cp->b) : "NULL";
    bd_emit(e, "if (a + keep < b) bd_f32_conv2d_tile(&sh, %s, (const float *)S->packed[%d], %s, yb, n, lo[1], hi[1], "
               "a + keep, b, %s, scratch);",
            operand_ptr(e, n, cp->x), slot, bias, kernel_act_args(e, ka.code, ka));
    bd_emit(e, "bd_f32_maxpool2d_tile(&ps, yb + n * %lld, %s + n * %lld, lo[1], hi[1], p0, p1, lo[3], hi[3]);",
            ll(M * OH * OW), operand_ptr(e, n, cp->y), ll(M * PH * PW));
    bd_emit(e, "ka = a, kb = b;");
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

/* A packed-weight convolution (kernel functions `fn`_packed_w_bytes, _pack_w, _scratch_bytes,
 * _tile: bd_f32_conv2d, or bd_f32_deconv for the transposed ones). */
static void emit_conv_packed(bd_emitter *e, const bd_nest *n, const bd_conv_params *cp,
                             bd_emit_phase phase, const char *fn) {
    const bd_value *x = operand_value(e, n, cp->x), *y = operand_value(e, n, cp->y);
    int slot = bd_emit_nest_slot(e, n);
    int64_t rows = cp->nsp == 2 ? n->tile[2] : 1;
    if (cp->pooled) rows = pool_band_rows(cp);
    if (phase == BD_EMIT_SETUP) {
        bd_emit_open(e, "%s", "");
        emit_conv2d_shape(e, cp, x, y);
        emit_packed_alloc(e, slot, "pk", bd_emit_str(e, "%s_packed_w_bytes(&sh)", fn));
        bd_emit(e, "%s_pack_w(&sh, %s, pk);", fn, operand_ptr(e, n, cp->w));
        const char *need = bd_emit_str(e, "%s_scratch_bytes(&sh, %lld)", fn, ll(rows));
        if (cp->pooled) /* the kernel's scratch must end where the band starts */
            need = bd_emit_str(e, "%s <= %lldu ? %lldu : (size_t)-1", need, ll(cp->pool_band_at),
                               ll(n->scratch_bytes));
        emit_scratch_check(e, n, need);
        bd_emit_close(e, NULL);
        return;
    }
    emit_conv2d_shape(e, cp, x, y);
    if (cp->pooled) {
        emit_conv_pooled(e, n, cp, slot);
        return;
    }
    const char *bias = cp->b >= 0 ? operand_ptr(e, n, cp->b) : "NULL";
    kernel_act ka = kernel_act_of(n);
    int kact = n->epi.residual >= 0 ? BD_ACT_NONE : ka.code; /* act follows the residual */
    const char *pre = "";
    if (cp->pre) { /* an absorbed BatchNormalization: its factors a, b per input channel */
        const bd_value *xv = operand_value(e, n, cp->x);
        size_t nbytes;
        unsigned char *buf = bd_batchnorm_factors(
            operand_value(e, n, cp->pre_scale)->constant, operand_value(e, n, cp->pre_bias)->constant,
            operand_value(e, n, cp->pre_mean)->constant, operand_value(e, n, cp->pre_var)->constant,
            cp->pre_epsilon, xv->dims[1], BD_DT_FLOAT, &nbytes);
        int64_t off = bd_emit_blob(e, buf, nbytes);
        free(buf);
        bd_emit(e, "const float *Pa = (const float *)(bd_weights + %lld), *Pb = Pa + %lld;", ll(off),
                ll(xv->dims[1]));
        pre = "_pre";
    }
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit(e, "%s_tile%s(&sh, %s%s, (const float *)S->packed[%d], %s, %s, n, lo[1], hi[1], "
               "%s, %s, %s, scratch);",
            fn, pre, operand_ptr(e, n, cp->x), cp->pre ? ", Pa, Pb" : "", slot, bias, operand_ptr(e, n, cp->y),
            cp->nsp == 2 ? "lo[2]" : "0", cp->nsp == 2 ? "hi[2]" : "1", kernel_act_args(e, kact, ka));
    if (n->epi.residual >= 0 || act_after_kernel(n)) emit_conv_post_pass(e, n, cp);
    bd_emit_close(e, NULL);
}

/* An 8-bit convolution on the int8 kernel (kernels/conv2d_i8.c): W packed at create with its
 * constant zero point (and, for a float result, the scales x_scale * w_scale[m]), X's zero point
 * read at run time; the bias (QLinearConv's int32, a QDQ Conv's float) added by the tile, the
 * residual and activation a float result absorbed after it. With a QuantizeLinear absorbed
 * (fuse.c, on the kernel's direct path) the tile clamps by the activation and requantizes, and
 * with a quantized residual Add absorbed after that, adds the residual to the tile's bytes
 * (bd_i8_conv2d_tile_requant_add). */
static void emit_conv_i8(bd_emitter *e, const bd_nest *n, const bd_conv_params *cp,
                         bd_emit_phase phase) {
    const bd_value *x = operand_value(e, n, cp->x), *y = operand_value(e, n, cp->y);
    const bd_value *w = operand_value(e, n, cp->w);
    int slot = bd_emit_nest_slot(e, n);
    bool requant = n->epi.requant;
    emit_conv2d_shape(e, cp, x, y);
    if (phase == BD_EMIT_SETUP) {
        emit_packed_alloc(e, slot, "pk", "bd_i8_conv2d_packed_w_bytes(&sh)");
        const char *scales = "NULL, NULL, 0";
        if (cp->x_scale >= 0)
            scales = bd_emit_str(e, "%s, %s, %lld", operand_ptr(e, n, cp->x_scale),
                                 operand_ptr(e, n, cp->w_scale),
                                 ll(operand_value(e, n, cp->w_scale)->constant->numel));
        bd_emit(e, "bd_i8_conv2d_pack_w(&sh, %s, %d, %s, %s, %d, pk);", operand_ptr(e, n, cp->w),
                w->dtype == BD_DT_INT8, zero_point(e, n, cp->w_zero, "int32_t"), scales, requant);
        emit_scratch_check(e, n, bd_emit_str(e, "bd_i8_conv2d_scratch_bytes(&sh, %lld)",
                                             ll(cp->nsp == 2 ? n->tile[2] : 1)));
        return;
    }
    bd_emit(e, "const int32_t zx = %s;", zero_point(e, n, cp->x_zero, "int32_t"));
    const char *args =
        bd_emit_str(e, "&sh, %s, %d, zx, S->packed[%d], %s", operand_ptr(e, n, cp->x),
                    x->dtype == BD_DT_INT8, slot, cp->b >= 0 ? operand_ptr(e, n, cp->b) : "NULL");
    const char *rows = cp->nsp == 2 ? "lo[2], hi[2]" : "0, 1";
    const bd_epilogue *ep = &n->epi;
    if (requant) {
        double lo, hi;
        BD_ASSERT(bd_expr_clamp_bounds(&ep->act, &lo, &hi) && (ep->residual < 0 || ep->qresidual));
        bd_emit(e, "static const bd_i8_requant rq = {%s, %s, %s, %s, %d};",
                bd_emit_float(e, lo, BD_DT_FLOAT), bd_emit_float(e, hi, BD_DT_FLOAT),
                bd_emit_float(e, ep->q_scale, BD_DT_FLOAT),
                bd_emit_float(e, ep->q_zero, BD_DT_FLOAT),
                (ep->qresidual ? ep->q_dtype : y->dtype) == BD_DT_INT8);
    }
    if (ep->qresidual)
        bd_emit(e, "static const bd_i8_residual ra = {%s, %s, %s, %s, %d, {%s, %s, %s, %s, %d}};",
                bd_emit_float(e, ep->qr_y_scale, BD_DT_FLOAT),
                bd_emit_float(e, ep->qr_y_zero, BD_DT_FLOAT),
                bd_emit_float(e, ep->qr_r_scale, BD_DT_FLOAT),
                bd_emit_float(e, ep->qr_r_zero, BD_DT_FLOAT),
                operand_value(e, n, ep->residual)->dtype == BD_DT_INT8,
                bd_emit_float(e, ep->qr_lo, BD_DT_FLOAT), bd_emit_float(e, ep->qr_hi, BD_DT_FLOAT),
                bd_emit_float(e, ep->qr_scale, BD_DT_FLOAT),
                bd_emit_float(e, ep->qr_zero, BD_DT_FLOAT), y->dtype == BD_DT_INT8);
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    if (ep->qresidual) {
        bd_emit(e,
                "bd_i8_conv2d_tile_requant_add(%s, &rq, &ra, %s, %s, n, lo[1], hi[1], %s, "
                "scratch);",
                args, operand_ptr(e, n, ep->residual), operand_ptr(e, n, cp->y), rows);
    } else if (requant) {
        bd_emit(e, "bd_i8_conv2d_tile_requant(%s, &rq, %s, n, lo[1], hi[1], %s, scratch);", args,
                operand_ptr(e, n, cp->y), rows);
    } else {
        bd_emit(e, "bd_i8_conv2d_tile(%s, %s, n, lo[1], hi[1], %s, scratch);", args,
                operand_ptr(e, n, cp->y), rows);
        if (n->epi.residual >= 0 || n->epi.act.n) emit_conv_post_pass(e, n, cp);
    }
    bd_emit_close(e, NULL);
}

/* Opens the loop over output index o<i> of spatial axis i of a window op (Conv, pooling) and
 * computes the window's first input index b<i> and its valid taps [l<i>, h<i>): those whose
 * input index b + t * dilation lies in [0, extent). */
static void emit_window_axis(bd_emitter *e, int i, int64_t stride, int64_t dil, int64_t kernel,
                             int64_t pad, int64_t extent) {
    bd_emit_open(e, "for (int64_t o%d = lo[%d]; o%d < hi[%d]; o%d++)", i, 2 + i, i, 2 + i, i);
    bd_emit(e, "const int64_t b%d = o%d * %lld - %lld;", i, i, ll(stride), ll(pad));
    bd_emit(e, "const int64_t l%d = b%d < 0 ? (-b%d + %lld) / %lld : 0;", i, i, i, ll(dil - 1),
            ll(dil));
    bd_emit(e, "int64_t h%d = b%d >= %lld ? 0 : (%lld - b%d + %lld) / %lld;", i, i, ll(extent),
            ll(extent), i, ll(dil - 1), ll(dil));
    bd_emit(e, "if (h%d > %lld) h%d = %lld;", i, ll(kernel), i, ll(kernel));
}

/* What the generic Conv and ConvTranspose bodies share: element type, channel counts, the size
 * of one channel's spatial block of the input, kernel and output (with their strides), and the
 * operand pointers and the batch and channel loops it opens. */
typedef struct conv_geom {
    const bd_value *x, *y;
    const char *T, *TA; /* the output's type, the sum's (int32 over 8-bit operands) */
    int64_t C, M, Cg, Mg, XS, KS, YS;
    int64_t xs[BD_MAX_RANK], ks[BD_MAX_RANK], ys[BD_MAX_RANK];
} conv_geom;

static conv_geom emit_conv_prologue(bd_emitter *e, const bd_nest *n, const bd_conv_params *cp) {
    conv_geom g;
    g.x = operand_value(e, n, cp->x);
    g.y = operand_value(e, n, cp->y);
    g.T = bd_c_type(g.y->dtype);
    g.TA = bd_dtype_bits(g.x->dtype) == 8 ? "int32_t" : g.T;
    g.C = g.x->dims[1];
    g.M = g.y->dims[1];
    g.Cg = g.C / cp->group;
    g.Mg = g.M / cp->group;
    bd_dims_strides(cp->nsp, g.x->dims + 2, g.xs);
    bd_dims_strides(cp->nsp, cp->kernel, g.ks);
    bd_dims_strides(cp->nsp, g.y->dims + 2, g.ys);
    g.XS = g.xs[0] * g.x->dims[2];
    g.KS = g.ks[0] * cp->kernel[0];
    g.YS = g.ys[0] * g.y->dims[2];
    const char *T = g.T, *TA = g.TA;
    /* X and W in their own types (8-bit for the integer convolutions), less their zero points;
     * a float result of 8-bit operands scales the sum by x_scale * w_scale[m] */
    bd_emit(e, "const %s *X = %s;", bd_c_type(g.x->dtype), operand_ptr(e, n, cp->x));
    bd_emit(e, "const %s *Wt = %s;", bd_c_type(operand_value(e, n, cp->w)->dtype), operand_ptr(e, n, cp->w));
    if (cp->x_zero >= 0 || cp->w_zero >= 0)
        bd_emit(e, "const %s zx = %s, zw = %s;", TA, zero_point(e, n, cp->x_zero, TA),
                zero_point(e, n, cp->w_zero, TA));
    if (cp->x_scale >= 0) {
        bd_emit(e, "const float xs = %s[0];", operand_ptr(e, n, cp->x_scale));
        bd_emit(e, "const float *Ws = %s;", operand_ptr(e, n, cp->w_scale));
    }
    if (cp->b >= 0) bd_emit(e, "const %s *Bv = %s;", T, operand_ptr(e, n, cp->b));
    if (n->epi.residual >= 0) bd_emit(e, "const %s *R = %s;", T, operand_ptr(e, n, n->epi.residual));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, cp->y));
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t m = lo[1]; m < hi[1]; m++)");
    return g;
}

/* Direct convolution of any rank: per output element, the window's valid taps [l_i, h_i) per
 * spatial axis, summed over the group's input channels. */
static void emit_conv_direct(bd_emitter *e, const bd_nest *n, const bd_conv_params *cp) {
    const conv_geom G = emit_conv_prologue(e, n, cp);
    const bd_value *x = G.x;
    const char *T = G.T;
    int nsp = cp->nsp;
    int64_t C = G.C, M = G.M, Cg = G.Cg, Mg = G.Mg, XS = G.XS, KS = G.KS, YS = G.YS;
    const int64_t *xs = G.xs, *ks = G.ks, *ys = G.ys;
    const char *TX = bd_c_type(x->dtype), *TW = bd_c_type(operand_value(e, n, cp->w)->dtype);
    bd_emit(e, "const %s *xg = X + (n * %lld + (m / %lld) * %lld) * %lld;", TX, ll(C), ll(Mg), ll(Cg),
            ll(XS));
    bd_emit(e, "const %s *wm = Wt + m * %lld;", TW, ll(Cg * KS));
    bd_emit(e, "%s *ym = Y + (n * %lld + m) * %lld;", T, ll(M), ll(YS));
    if (n->epi.residual >= 0) bd_emit(e, "const %s *rm = R + (n * %lld + m) * %lld;", T, ll(M), ll(YS));
    bd_emit(e, "const %s bias = %s;", T, cp->b >= 0 ? "Bv[m]" : "0");
    if (cp->x_scale >= 0) {
        const bd_value *ws = operand_value(e, n, cp->w_scale);
        bd_emit(e, "const float mult = xs * Ws[%s];", ws->rank == 1 && ws->dims[0] > 1 ? "m" : "0");
    }
    for (int i = 0; i < nsp; i++) {
        emit_window_axis(e, i, cp->strides[i], cp->dilations[i], cp->kernel[i], cp->pads[i],
                         x->dims[2 + i]);
    }
    bd_emit(e, "%s acc = 0;", G.TA);
    bd_emit_open(e, "for (int64_t c = 0; c < %lld; c++)", ll(Cg));
    bd_emit(e, "const %s *xc = xg + c * %lld;", TX, ll(XS));
    bd_emit(e, "const %s *wc = wm + c * %lld;", TW, ll(KS));
    const char *xo = "0", *wo = "0";
    for (int i = 0; i < nsp; i++) {
        bd_emit_open(e, "for (int64_t k%d = l%d; k%d < h%d; k%d++)", i, i, i, i, i);
        xo = bd_emit_str(e, "%s + (b%d + k%d * %lld) * %lld", xo, i, i, ll(cp->dilations[i]), ll(xs[i]));
        wo = bd_emit_str(e, "%s + k%d * %lld", wo, i, ll(ks[i]));
    }
    if (cp->x_zero >= 0 || cp->w_zero >= 0)
        bd_emit(e, "acc += ((%s)xc[%s] - zx) * ((%s)wc[%s] - zw);", G.TA, xo, G.TA, wo);
    else
        bd_emit(e, "acc += xc[%s] * wc[%s];", xo, wo);
    for (int i = 0; i < nsp; i++) bd_emit_close(e, NULL);
    bd_emit_close(e, NULL); /* c */
    const char *yo = "0";
    for (int i = 0; i < nsp; i++) yo = bd_emit_str(e, "%s + o%d * %lld", yo, i, ll(ys[i]));
    const char *v = cp->x_scale >= 0 ? "(float)acc * mult" : "acc";
    const char *sum = n->epi.residual >= 0 ? bd_emit_str(e, "(%s + bias + rm[%s])", v, yo)
                                           : bd_emit_str(e, "(%s + bias)", v);
    bd_emit(e, "ym[%s] = %s;", yo, act_expr(e, n, sum));
    for (int i = 0; i < nsp; i++) bd_emit_close(e, NULL);
    bd_emit_close(e, NULL); /* m */
    bd_emit_close(e, NULL); /* n */
}

bd_status bd_emit_body_CONV(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    const bd_conv_params *cp = BD_NEST_PARAMS(n, conv);
    if (cp->i8_packed) {
        bd_emit_open(e, "%s", "");
        emit_conv_i8(e, n, cp, phase);
        bd_emit_close(e, NULL);
        return BD_OK;
    }
    if (cp->packed) {
        emit_conv_packed(e, n, cp, phase, "bd_f32_conv2d");
        return BD_OK;
    }
    if (phase == BD_EMIT_BLOCK) emit_conv_direct(e, n, cp);
    return BD_OK;
}

/* ---------------------------------------------------------------- CONV_TRANSPOSE */

/* Output-stationary: output o along an axis gathers input i = (o + pad - k*dil) / stride for
 * every tap k where the division is exact and i is inside the input. */
bd_status bd_emit_body_CONV_TRANSPOSE(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    const bd_conv_params *cp = BD_NEST_PARAMS(n, conv);
    if (cp->packed) { /* stride = kernel, no padding: kernels/deconv.c */
        emit_conv_packed(e, n, cp, phase, "bd_f32_deconv");
        return BD_OK;
    }
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const conv_geom G = emit_conv_prologue(e, n, cp);
    const bd_value *x = G.x;
    const char *T = G.T;
    int nsp = cp->nsp;
    int64_t C = G.C, M = G.M, Cg = G.Cg, Mg = G.Mg, XS = G.XS, KS = G.KS, YS = G.YS;
    const int64_t *xs = G.xs, *ks = G.ks, *ys = G.ys;
    bd_emit(e, "const int64_t grp = m / %lld, ml = m - grp * %lld;", ll(Mg), ll(Mg));
    bd_emit(e, "const %s *xg = X + (n * %lld + grp * %lld) * %lld;", T, ll(C), ll(Cg), ll(XS));
    bd_emit(e, "const %s *wg = Wt + (grp * %lld + ml) * %lld;", T, ll(Cg * Mg), ll(KS));
    bd_emit(e, "%s *ym = Y + (n * %lld + m) * %lld;", T, ll(M), ll(YS));
    if (n->epi.residual >= 0) bd_emit(e, "const %s *rm = R + (n * %lld + m) * %lld;", T, ll(M), ll(YS));
    bd_emit(e, "const %s bias = %s;", T, cp->b >= 0 ? "Bv[m]" : "0");
    for (int i = 0; i < nsp; i++) {
        bd_emit_open(e, "for (int64_t o%d = lo[%d]; o%d < hi[%d]; o%d++)", i, 2 + i, i, 2 + i, i);
        bd_emit(e, "const int64_t t%d = o%d + %lld;", i, i, ll(cp->pads[i]));
    }
    bd_emit(e, "%s acc = 0;", T);
    const char *xo = "0", *wo = "0";
    for (int i = 0; i < nsp; i++) {
        int64_t s = cp->strides[i];
        bd_emit_open(e, "for (int64_t k%d = 0; k%d < %lld; k%d++)", i, i, ll(cp->kernel[i]), i);
        bd_emit(e, "const int64_t q%d = t%d - k%d * %lld;", i, i, i, ll(cp->dilations[i]));
        bd_emit(e, "if (q%d < 0) break;", i);
        if (s > 1) bd_emit(e, "if (q%d %% %lld) continue;", i, ll(s));
        bd_emit(e, "const int64_t i%d = q%d / %lld;", i, i, ll(s));
        bd_emit(e, "if (i%d >= %lld) continue;", i, ll(x->dims[2 + i]));
        xo = bd_emit_str(e, "%s + i%d * %lld", xo, i, ll(xs[i]));
        wo = bd_emit_str(e, "%s + k%d * %lld", wo, i, ll(ks[i]));
    }
    bd_emit(e, "const int64_t xo = %s, wo = %s;", xo, wo);
    bd_emit_open(e, "for (int64_t c = 0; c < %lld; c++)", ll(Cg));
    bd_emit(e, "acc += xg[c * %lld + xo] * wg[c * %lld + wo];", ll(XS), ll(Mg * KS));
    bd_emit_close(e, NULL);
    for (int i = 0; i < nsp; i++) bd_emit_close(e, NULL);
    const char *yo = "0";
    for (int i = 0; i < nsp; i++) yo = bd_emit_str(e, "%s + o%d * %lld", yo, i, ll(ys[i]));
    const char *sum = n->epi.residual >= 0 ? bd_emit_str(e, "(acc + bias + rm[%s])", yo) : "(acc + bias)";
    bd_emit(e, "ym[%s] = %s;", yo, act_expr(e, n, sum));
    for (int i = 0; i < nsp; i++) bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- POOL */

/* The lowest value of T: where a max starts. */
static const char *pool_lowest(int dtype) {
    switch (dtype) {
    case BD_DT_FLOAT: return "-INFINITY";
    case BD_DT_DOUBLE: return "(double)-INFINITY";
    case BD_DT_INT8: return "-128";
    default: return "0";
    }
}

/* Emits `int64_t NAME = taps of a window starting at b (an expression) that fall inside [0, end)`,
 * given kernel K and dilation dl: from the first tap at or after 0 to the last before end. */
static void emit_taps(bd_emitter *e, const char *lo_name, const char *hi_name, const char *b,
                      int64_t end, int64_t K, int64_t dl) {
    if (lo_name)
        bd_emit(e, "const int64_t %s = %s < 0 ? (-(%s) + %lld) / %lld : 0;", lo_name, b, b, ll(dl - 1), ll(dl));
    bd_emit(e, "int64_t %s = %s >= %lld ? 0 : (%lld - (%s) + %lld) / %lld;", hi_name, b, ll(end), ll(end), b,
            ll(dl - 1), ll(dl));
    bd_emit(e, "if (%s > %lld) %s = %lld;", hi_name, ll(K), hi_name, ll(K));
}

/* Pooling without Indices, a row at a time: for every output position of the outer spatial axes,
 * the block's run of the last axis accumulates in scratch, one input row per tap of the window,
 * over the output columns that tap reaches inside the input (precomputed per tap), so the inner
 * loop is a plain strided max or sum with no bounds tests. */
static void emit_pool_rows(bd_emitter *e, const bd_nest *n, const bd_pool_params *pp) {
    const bd_value *x = operand_value(e, n, pp->x), *y = operand_value(e, n, pp->y);
    const char *T = bd_c_type(x->dtype);
    int nsp = pp->nsp, last = nsp - 1, li = 2 + last; /* last spatial axis, its iteration dim */
    int64_t C = x->dims[1], xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(nsp, x->dims + 2, xs);
    bd_dims_strides(nsp, y->dims + 2, ys);
    int64_t XS = xs[0] * x->dims[2], YS = ys[0] * y->dims[2];
    int64_t W = x->dims[li], OW = y->dims[li], KW = pp->kernel[last];
    int64_t s = pp->strides[last], dl = pp->dilations[last], p = pp->pads[last];
    /* output columns [owlo, owhi) that tap kw reads inside the input */
    char lo_list[4096] = "", hi_list[4096] = "";
    size_t lo_len = 0, hi_len = 0;
    for (int64_t kw = 0; kw < KW && kw < 256; kw++) {
        int64_t off = kw * dl - p;
        int64_t owlo = off >= 0 ? 0 : (-off + s - 1) / s;
        int64_t owhi = W - off <= 0 ? 0 : (W - off + s - 1) / s;
        if (owlo > OW) owlo = OW;
        if (owhi > OW) owhi = OW;
        lo_len += (size_t)snprintf(lo_list + lo_len, sizeof lo_list - lo_len, "%s%lld", kw ? ", " : "", ll(owlo));
        hi_len += (size_t)snprintf(hi_list + hi_len, sizeof hi_list - hi_len, "%s%lld", kw ? ", " : "", ll(owhi));
    }
    bd_emit(e, "static const int64_t owlo[%lld] = {%s}, owhi[%lld] = {%s};", ll(KW), lo_list, ll(KW), hi_list);
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, pp->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, pp->y));
    bd_emit(e, "%s *acc = (%s *)(void *)scratch;", T, T);
    bd_emit(e, "const int64_t c0 = lo[%d], c1 = hi[%d];", li, li);
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const int64_t plane = n * %lld + c;", ll(C));
    bd_emit(e, "const %s *xc = X + plane * %lld;", T, ll(XS));
    const char *yo = "0", *xo = "0", *cnt = "1";
    for (int i = 0; i < last; i++) {
        bd_emit_open(e, "for (int64_t o%d = lo[%d]; o%d < hi[%d]; o%d++)", i, 2 + i, i, 2 + i, i);
        bd_emit(e, "const int64_t b%d = o%d * %lld - %lld;", i, i, ll(pp->strides[i]), ll(pp->pads[i]));
        const char *b = bd_emit_str(e, "b%d", i);
        emit_taps(e, bd_emit_str(e, "l%d", i), bd_emit_str(e, "h%d", i), b, x->dims[2 + i], pp->kernel[i],
                  pp->dilations[i]);
        if (pp->count_include_pad)
            emit_taps(e, NULL, bd_emit_str(e, "e%d", i), b, x->dims[2 + i] + pp->pads[nsp + i],
                      pp->kernel[i], pp->dilations[i]);
        yo = bd_emit_str(e, "%s + o%d * %lld", yo, i, ll(ys[i]));
        xo = bd_emit_str(e, "%s + (b%d + k%d * %lld) * %lld", xo, i, i, ll(pp->dilations[i]), ll(xs[i]));
        cnt = pp->count_include_pad ? bd_emit_str(e, "%s * e%d", cnt, i)
                                    : bd_emit_str(e, "%s * (h%d - l%d)", cnt, i, i);
    }
    bd_emit(e, "for (int64_t j = 0; j < c1 - c0; j++) acc[j] = %s;", pp->is_max ? pool_lowest(x->dtype) : "0");
    for (int i = 0; i < last; i++)
        bd_emit_open(e, "for (int64_t k%d = l%d; k%d < h%d; k%d++)", i, i, i, i, i);
    bd_emit(e, "const %s *xr = xc + %s;", T, xo);
    bd_emit_open(e, "for (int64_t kw = 0; kw < %lld; kw++)", ll(KW));
    bd_emit(e, "const int64_t a = owlo[kw] > c0 ? owlo[kw] : c0, z = owhi[kw] < c1 ? owhi[kw] : c1;");
    bd_emit(e, "const %s *xp = xr + kw * %lld - %lld;", T, ll(dl), ll(p));
    if (pp->is_max)
        bd_emit(e, "for (int64_t ow = a; ow < z; ow++) { const %s v = xp[ow * %lld]; acc[ow - c0] = v > acc[ow - c0] ? v : acc[ow - c0]; }",
                T, ll(s));
    else
        bd_emit(e, "for (int64_t ow = a; ow < z; ow++) acc[ow - c0] += xp[ow * %lld];", ll(s));
    bd_emit_close(e, NULL);
    for (int i = 0; i < last; i++) bd_emit_close(e, NULL);
    bd_emit(e, "%s *yr = Y + plane * %lld + %s;", T, ll(YS), yo);
    if (pp->is_max) {
        bd_emit(e, "for (int64_t ow = c0; ow < c1; ow++) yr[ow] = acc[ow - c0];");
    } else {
        bd_emit(e, "const %s outer = (%s)(%s);", T, T, cnt);
        bd_emit_open(e, "for (int64_t ow = c0; ow < c1; ow++)");
        bd_emit(e, "const int64_t bw = ow * %lld - %lld;", ll(s), ll(p));
        if (pp->count_include_pad) {
            emit_taps(e, NULL, "ew", "bw", W + pp->pads[nsp + last], KW, dl);
            bd_emit(e, "yr[ow] = acc[ow - c0] / (outer * (%s)ew);", T);
        } else {
            emit_taps(e, "lw", "hw", "bw", W, KW, dl);
            bd_emit(e, "yr[ow] = acc[ow - c0] / (outer * (%s)(hw - lw));", T);
        }
        bd_emit_close(e, NULL);
    }
    for (int i = 0; i < last; i++) bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

/* The loops of a 2-D pool's block over its planes and output rows (three to close): each plane's
 * input xc, each row's first window row bh. */
static void open_plane_rows(bd_emitter *e, const char *T, int64_t C, int64_t HW, int64_t sh,
                            int64_t ph) {
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const int64_t plane = n * %lld + c;", ll(C));
    bd_emit(e, "const %s *xc = X + plane * %lld;", T, ll(HW));
    bd_emit_open(e, "for (int64_t oh = lo[2]; oh < hi[2]; oh++)");
    bd_emit(e, "const int64_t bh = oh * %lld - %lld;", ll(sh), ll(ph));
}

/* 2-D pooling without Indices: output pixels whose whole window lies inside the input (the
 * interior, most of them) take a straight-line max/sum over the window's taps at constant
 * offsets; the others (borders) walk only the taps inside the input. */
static void emit_pool_2d(bd_emitter *e, const bd_nest *n, const bd_pool_params *pp) {
    const bd_value *x = operand_value(e, n, pp->x), *y = operand_value(e, n, pp->y);
    const char *T = bd_c_type(x->dtype);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    int64_t KH = pp->kernel[0], KW = pp->kernel[1], sh = pp->strides[0], sw = pp->strides[1];
    int64_t dh = pp->dilations[0], dw = pp->dilations[1], ph = pp->pads[0], pw = pp->pads[1];
    /* interior columns [owl, owh): every tap inside [0, W) */
    int64_t owl = (pw + sw - 1) / sw, last = W - 1 + pw - (KW - 1) * dw;
    int64_t owh = last < 0 ? 0 : last / sw + 1;
    if (owh > OW) owh = OW;
    if (owl > owh) owl = owh;
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, pp->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, pp->y));
    bd_emit(e, "const int64_t c0 = lo[3], c1 = hi[3];");
    bd_emit(e, "const int64_t fa = c0 > %lld ? c0 : %lld, fz = c1 < %lld ? c1 : %lld;", ll(owl), ll(owl), ll(owh),
            ll(owh));
    open_plane_rows(e, T, C, H * W, sh, ph);
    emit_taps(e, "lh", "hh", "bh", H, KH, dh);
    if (pp->count_include_pad) emit_taps(e, NULL, "eh", "bh", H + pp->pads[2], KH, dh);
    bd_emit(e, "const int full = lh == 0 && hh == %lld;", ll(KH));
    bd_emit(e, "%s *yr = Y + plane * %lld + oh * %lld;", T, ll(OH * OW), ll(OW));
    bd_emit(e, "int64_t ow = c0;");
    bd_emit_open(e, "while (ow < c1)");
    /* interior */
    bd_emit_open(e, "if (full && ow >= fa && ow < fz)");
    bd_emit_open(e, "for (; ow < fz; ow++)");
    bd_emit(e, "const %s *xp = xc + bh * %lld + ow * %lld - %lld;", T, ll(W), ll(sw), ll(pw));
    const char *acc = NULL;
    for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++) {
            const char *tap = bd_emit_str(e, "xp[%lld]", ll(kh * dh * W + kw * dw));
            if (!acc) {
                bd_emit(e, "%s v = %s;", T, tap);
                acc = "v";
            } else if (pp->is_max) {
                bd_emit(e, "v = %s > v ? %s : v;", tap, tap);
            } else {
                bd_emit(e, "v += %s;", tap);
            }
        }
    if (pp->is_max) bd_emit(e, "yr[ow] = v;");
    else bd_emit(e, "yr[ow] = v / (%s)%lld;", T, ll(KH * KW));
    bd_emit_close(e, NULL);
    bd_emit(e, "continue;");
    bd_emit_close(e, NULL);
    /* border */
    bd_emit(e, "const int64_t bw = ow * %lld - %lld;", ll(sw), ll(pw));
    emit_taps(e, "lw", "hw", "bw", W, KW, dw);
    bd_emit(e, "%s v = %s;", T, pp->is_max ? pool_lowest(x->dtype) : "0");
    bd_emit_open(e, "for (int64_t kh = lh; kh < hh; kh++)");
    bd_emit(e, "const %s *xr = xc + (bh + kh * %lld) * %lld + bw;", T, ll(dh), ll(W));
    if (pp->is_max)
        bd_emit(e, "for (int64_t kw = lw; kw < hw; kw++) { const %s t = xr[kw * %lld]; v = t > v ? t : v; }", T, ll(dw));
    else
        bd_emit(e, "for (int64_t kw = lw; kw < hw; kw++) v += xr[kw * %lld];", ll(dw));
    bd_emit_close(e, NULL);
    if (pp->is_max) {
        bd_emit(e, "yr[ow] = v;");
    } else if (pp->count_include_pad) {
        emit_taps(e, NULL, "ew", "bw", W + pp->pads[3], KW, dw);
        bd_emit(e, "yr[ow] = v / (%s)(eh * ew);", T);
    } else {
        bd_emit(e, "yr[ow] = v / (%s)((hh - lh) * (hw - lw));", T);
    }
    bd_emit(e, "ow++;");
    bd_emit_close(e, NULL); /* while */
    bd_emit_close(e, NULL); /* oh */
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

/* 2-D float max pooling with 3-column windows at column stride 2, or at unit strides up to 3
 * rows high, without Indices or dilation: kernels/pool.c's bd_f32_maxpool2d_tile on vector rows
 * (alone, on a Zen 5 core: SqueezeNet's, GoogLeNet's and ResNet's stride-2 pools 1.3-1.7x faster
 * than emit_pool_2d's loops, GoogLeNet's stride-1 branch pools 1.4-2.6x faster than the copy
 * below). 2x2 windows stay on the loops, which gcc vectorizes well there (the kernel took
 * 1.2-2.3x their time on UNet's and GoogLeNet's). */
static bool maxpool_kernel_ok(const bd_value *x, const bd_pool_params *pp) {
    bool unit = pp->strides[0] == 1 && pp->strides[1] == 1 && pp->kernel[0] <= 3;
    return pp->indices < 0 && pp->nsp == 2 && pp->is_max && x->dtype == BD_DT_FLOAT &&
           pp->dilations[0] == 1 && pp->dilations[1] == 1 && (pp->strides[1] == 2 || unit) &&
           pp->kernel[1] == 3 && pp->pads[1] < 16;
}

/* 2-D max pooling with unit strides, without Indices, where maxpool_kernel_ok does not take it
 * (once GoogLeNet's and Inception's 3x3 branch pools): the block's window of each plane is
 * copied into scratch with its padding as the lowest value, and the max over the taps is taken
 * for every position of that copy at once (a run of rows x padded width, constant tap offsets, no
 * bounds tests), then the output rows are taken out of it. On planes of 7 to 28 columns, rows at
 * a time left the vector loops mostly in their scalar tails and every border pixel to a
 * bounds-testing loop. Scratch (tile_pool): the copy and the maxima. */
int64_t bd_cpu_maxpool_copy_elems(const bd_graph *g, const bd_nest *n) {
    const bd_pool_params *pp = &n->params.pool;
    if (pp->indices >= 0 || pp->nsp != 2 || !pp->is_max || pp->strides[0] != 1 || pp->strides[1] != 1)
        return 0;
    if (maxpool_kernel_ok(bd_graph_value((bd_graph *)g, n->operands[pp->x].value), pp)) return 0;
    return (n->tile[2] + (pp->kernel[0] - 1) * pp->dilations[0]) *
           (n->tile[3] + (pp->kernel[1] - 1) * pp->dilations[1]);
}

static void emit_maxpool_s1(bd_emitter *e, const bd_nest *n, const bd_pool_params *pp) {
    const bd_value *x = operand_value(e, n, pp->x), *y = operand_value(e, n, pp->y);
    const char *T = bd_c_type(x->dtype), *lowest = pool_lowest(x->dtype);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    int64_t KH = pp->kernel[0], KW = pp->kernel[1], dh = pp->dilations[0], dw = pp->dilations[1];
    int64_t ph = pp->pads[0], pw = pp->pads[1], eh = (KH - 1) * dh, ew = (KW - 1) * dw;
    int64_t copy_max = bd_cpu_maxpool_copy_elems(e->graph, n);
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, pp->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, pp->y));
    bd_emit(e, "%s *cp = (%s *)(void *)scratch, *mx = cp + %lld;", T, T, ll(copy_max));
    /* the copy: input rows [r0, r0 + hb), columns [b0, b0 + wb); inside it [ra, rz) x [ja, jz) */
    bd_emit(e, "const int64_t nh = hi[2] - lo[2], nw = hi[3] - lo[3];");
    bd_emit(e, "const int64_t hb = nh + %lld, wb = nw + %lld, r0 = lo[2] - %lld, b0 = lo[3] - %lld;", ll(eh), ll(ew),
            ll(ph), ll(pw));
    bd_emit(e, "const int64_t ra = -r0 < 0 ? 0 : -r0 > hb ? hb : -r0;");
    bd_emit(e, "const int64_t rz = %lld - r0 < ra ? ra : %lld - r0 > hb ? hb : %lld - r0;", ll(H), ll(H), ll(H));
    bd_emit(e, "const int64_t ja = -b0 < 0 ? 0 : -b0 > wb ? wb : -b0;");
    bd_emit(e, "const int64_t jz = %lld - b0 < ja ? ja : %lld - b0 > wb ? wb : %lld - b0;", ll(W), ll(W), ll(W));
    bd_emit(e, "const int64_t run = (nh - 1) * wb + nw; /* positions of the copy that start a window */");
    bd_emit(e, "for (int64_t i = 0; i < hb * wb; i++) cp[i] = %s;", lowest);
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const int64_t plane = n * %lld + c;", ll(C));
    bd_emit(e, "const %s *xc = X + plane * %lld + (r0 * %lld + b0);", T, ll(H * W), ll(W));
    bd_emit_open(e, "for (int64_t r = ra; r < rz; r++)");
    bd_emit(e, "for (int64_t j = ja; j < jz; j++) cp[r * wb + j] = xc[r * %lld + j];", ll(W));
    bd_emit_close(e, NULL);
    bd_emit_open(e, "for (int64_t i = 0; i < run; i++)");
    bd_emit(e, "const %s *p = cp + i;", T);
    bd_emit(e, "%s v = p[0];", T);
    for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = kh == 0 ? 1 : 0; kw < KW; kw++) {
            const char *off = bd_emit_str(e, "%lld * wb + %lld", ll(kh * dh), ll(kw * dw));
            bd_emit(e, "v = p[%s] > v ? p[%s] : v;", off, off);
        }
    bd_emit(e, "mx[i] = v;");
    bd_emit_close(e, NULL);
    bd_emit(e, "%s *yc = Y + plane * %lld + lo[2] * %lld + lo[3];", T, ll(OH * OW), ll(OW));
    bd_emit_open(e, "for (int64_t r = 0; r < nh; r++)");
    bd_emit(e, "for (int64_t j = 0; j < nw; j++) yc[r * %lld + j] = mx[r * wb + j];", ll(OW));
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

static void emit_maxpool_kernel(bd_emitter *e, const bd_nest *n, const bd_pool_params *pp) {
    const bd_value *x = operand_value(e, n, pp->x), *y = operand_value(e, n, pp->y);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    emit_pool2d_shape(e, H, W, OH, OW, pp->kernel, pp->strides, pp->pads);
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit(e,
            "bd_f32_maxpool2d_tile(&ps, %s + n * %lld, %s + n * %lld, lo[1], hi[1], lo[2], hi[2], "
            "lo[3], hi[3]);",
            operand_ptr(e, n, pp->x), ll(C * H * W), operand_ptr(e, n, pp->y), ll(C * OH * OW));
    bd_emit_close(e, NULL);
}

/* 2-D max pooling of 8-bit values with column strides above 1 (a QDQ ResNet's stem pool, on the
 * bytes since qdq_moves.c), without Indices or dilation, on rows of at most 4096 windows' columns:
 * per output row the max over its window's input rows first, into a row padded with the lowest
 * value (contiguous: gcc vectorizes it 64 bytes at a time), then over each window's columns in
 * that row. emit_pool_2d's per-pixel taps at stride 2 took 0.104 ms on int8 ResNet-18's
 * 64 x 112 x 112 pool, onnxruntime 0.058. */
static bool maxpool_bytes_ok(const bd_value *x, const bd_value *y, const bd_pool_params *pp) {
    return pp->indices < 0 && pp->nsp == 2 && pp->is_max &&
           (x->dtype == BD_DT_UINT8 || x->dtype == BD_DT_INT8) && pp->dilations[0] == 1 &&
           pp->dilations[1] == 1 && pp->strides[1] > 1 && pp->kernel[1] <= 16 &&
           pp->pads[1] < pp->kernel[1] &&
           (y->dims[3] - 1) * pp->strides[1] + pp->kernel[1] <= 4096;
}

static void emit_maxpool_bytes(bd_emitter *e, const bd_nest *n, const bd_pool_params *pp) {
    const bd_value *x = operand_value(e, n, pp->x), *y = operand_value(e, n, pp->y);
    const char *T = bd_c_type(x->dtype), *lowest = pool_lowest(x->dtype);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    int64_t KH = pp->kernel[0], KW = pp->kernel[1], sh = pp->strides[0], sw = pp->strides[1];
    int64_t ph = pp->pads[0], pw = pp->pads[1];
    /* the row: input column j at t[j + pw], wide enough for every window of the output row */
    int64_t wide = (OW - 1) * sw + KW, inside = W < wide - pw ? W : wide - pw;
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, pp->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, pp->y));
    bd_emit(e, "%s t[%lld];", T, ll(wide));
    bd_emit(e, "for (int64_t q = 0; q < %lld; q++) t[q] = %s;", ll(wide), lowest);
    open_plane_rows(e, T, C, H * W, sh, ph);
    bd_emit(e, "const int64_t r0 = bh < 0 ? 0 : bh, r1 = bh + %lld < %lld ? bh + %lld : %lld;", ll(KH),
            ll(H), ll(KH), ll(H));
    bd_emit(e, "%s *row = t + %lld;", T, ll(pw));
    bd_emit_open(e, "if (r0 < r1)");
    bd_emit(e, "memcpy(row, xc + r0 * %lld, %lld);", ll(W), ll(inside));
    bd_emit_open(e, "for (int64_t r = r0 + 1; r < r1; r++)");
    bd_emit(e, "const %s *xr = xc + r * %lld;", T, ll(W));
    bd_emit(e, "for (int64_t j = 0; j < %lld; j++) row[j] = xr[j] > row[j] ? xr[j] : row[j];", ll(inside));
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit(e, "else for (int64_t j = 0; j < %lld; j++) row[j] = %s; /* a window of padding only */",
            ll(inside), lowest);
    bd_emit(e, "%s *yr = Y + plane * %lld + oh * %lld;", T, ll(OH * OW), ll(OW));
    bd_emit_open(e, "for (int64_t ow = lo[3]; ow < hi[3]; ow++)");
    bd_emit(e, "const %s *p = t + ow * %lld;", T, ll(sw));
    bd_emit(e, "%s v = p[0];", T);
    for (int64_t kw = 1; kw < KW; kw++) bd_emit(e, "v = p[%lld] > v ? p[%lld] : v;", ll(kw), ll(kw));
    bd_emit(e, "yr[ow] = v;");
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

bd_status bd_emit_body_POOL(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_pool_params *pp = BD_NEST_PARAMS(n, pool);
    if (maxpool_kernel_ok(operand_value(e, n, pp->x), pp)) {
        emit_maxpool_kernel(e, n, pp);
        return BD_OK;
    }
    if (bd_cpu_maxpool_copy_elems(e->graph, n) > 0) {
        emit_maxpool_s1(e, n, pp);
        return BD_OK;
    }
    if (maxpool_bytes_ok(operand_value(e, n, pp->x), operand_value(e, n, pp->y), pp)) {
        emit_maxpool_bytes(e, n, pp);
        return BD_OK;
    }
    if (pp->indices < 0 && pp->nsp == 2 && pp->kernel[0] * pp->kernel[1] <= 64) {
        emit_pool_2d(e, n, pp);
        return BD_OK;
    }
    if (pp->indices < 0 && pp->kernel[pp->nsp - 1] <= 256) {
        emit_pool_rows(e, n, pp);
        return BD_OK;
    }
    const bd_value *x = operand_value(e, n, pp->x), *y = operand_value(e, n, pp->y);
    const char *T = bd_c_type(x->dtype);
    bool fl = x->dtype == BD_DT_FLOAT || x->dtype == BD_DT_DOUBLE;
    int nsp = pp->nsp;
    int64_t C = x->dims[1], xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(nsp, x->dims + 2, xs);
    bd_dims_strides(nsp, y->dims + 2, ys);
    int64_t XS = xs[0] * x->dims[2], YS = ys[0] * y->dims[2];
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, pp->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, pp->y));
    if (pp->indices >= 0) bd_emit(e, "int64_t *Ind = %s;", operand_ptr(e, n, pp->indices));
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const int64_t plane = n * %lld + c;", ll(C));
    bd_emit(e, "const %s *xc = X + plane * %lld;", T, ll(XS));
    for (int i = 0; i < nsp; i++) {
        emit_window_axis(e, i, pp->strides[i], pp->dilations[i], pp->kernel[i], pp->pads[i],
                         x->dims[2 + i]);
        if (pp->count_include_pad) {
            /* taps inside the padded input [-pad_begin, I + pad_end) */
            int64_t end = x->dims[2 + i] + pp->pads[nsp + i], dl = pp->dilations[i], K = pp->kernel[i];
            bd_emit(e, "int64_t e%d = b%d >= %lld ? 0 : (%lld - b%d + %lld) / %lld;", i, i, ll(end),
                    ll(end), i, ll(dl - 1), ll(dl));
            bd_emit(e, "if (e%d > %lld) e%d = %lld;", i, ll(K), i, ll(K));
        }
    }
    const char *xo = "0", *yo = "0", *io = "0", *first = "0";
    int64_t cm = 1; /* column-major stride */
    for (int i = 0; i < nsp; i++) {
        const char *pos = bd_emit_str(e, "(b%d + k%d * %lld)", i, i, ll(pp->dilations[i]));
        const char *pos0 = bd_emit_str(e, "(b%d + l%d * %lld)", i, i, ll(pp->dilations[i]));
        xo = bd_emit_str(e, "%s + %s * %lld", xo, pos, ll(xs[i]));
        io = bd_emit_str(e, "%s + %s * %lld", io, pos, ll(pp->column_major ? cm : xs[i]));
        first = bd_emit_str(e, "%s + %s * %lld", first, pos0, ll(pp->column_major ? cm : xs[i]));
        yo = bd_emit_str(e, "%s + o%d * %lld", yo, i, ll(ys[i]));
        cm *= x->dims[2 + i];
    }
    if (pp->is_max) {
        const char *lowest = fl ? (x->dtype == BD_DT_FLOAT ? "-INFINITY" : "(double)-INFINITY")
                                : x->dtype == BD_DT_INT8 ? "-128" : "0";
        bd_emit(e, "%s best = %s;", T, lowest);
        if (pp->indices >= 0) bd_emit(e, "int64_t at = %s;", first);
    } else {
        bd_emit(e, "%s acc = 0;", T);
    }
    for (int i = 0; i < nsp; i++)
        bd_emit_open(e, "for (int64_t k%d = l%d; k%d < h%d; k%d++)", i, i, i, i, i);
    bd_emit(e, "const %s v = xc[%s];", T, xo);
    if (pp->is_max && pp->indices >= 0) bd_emit(e, "if (v > best) { best = v; at = %s; }", io);
    else if (pp->is_max) bd_emit(e, "best = v > best ? v : best;");
    else bd_emit(e, "acc += v;");
    for (int i = 0; i < nsp; i++) bd_emit_close(e, NULL);
    bd_emit(e, "const int64_t yo = plane * %lld + %s;", ll(YS), yo);
    if (pp->is_max) {
        bd_emit(e, "Y[yo] = best;");
        if (pp->indices >= 0) bd_emit(e, "Ind[yo] = plane * %lld + at;", ll(XS));
    } else {
        const char *cnt = "1";
        for (int i = 0; i < nsp; i++)
            cnt = pp->count_include_pad ? bd_emit_str(e, "%s * e%d", cnt, i)
                                        : bd_emit_str(e, "%s * (h%d - l%d)", cnt, i, i);
        bd_emit(e, "Y[yo] = acc / (%s)(%s);", T, cnt);
    }
    for (int i = 0; i < nsp; i++) bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- GLOBAL_POOL */

bd_status bd_emit_body_GLOBAL_POOL(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_global_pool_params *gp = BD_NEST_PARAMS(n, global_pool);
    const bd_value *x = operand_value(e, n, gp->x);
    const char *T = bd_c_type(x->dtype);
    int64_t C = x->dims[1], S = gp->spatial;
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, gp->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, gp->y));
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const %s *xc = X + (n * %lld + c) * %lld;", T, ll(C), ll(S));
    /* P partial sums, added pairwise at the end: more accurate than one running sum, and for
     * large planes four vectors of independent additions (four scalar sums left EfficientNet's
     * squeeze-excitation pools at twice onnxruntime's time) */
    int64_t P = S >= 256 ? 64 : S >= 64 ? 16 : 4;
    bd_emit(e, "%s s[%lld] = {0};", T, ll(P));
    bd_emit(e, "for (int64_t i = 0; i < %lld; i += %lld)", ll(S / P * P), ll(P));
    bd_emit(e, "    for (int64_t l = 0; l < %lld; l++) s[l] += xc[i + l];", ll(P));
    if (S % P) bd_emit(e, "for (int64_t i = %lld; i < %lld; i++) s[i - %lld] += xc[i];", ll(S / P * P), ll(S), ll(S / P * P));
    bd_emit(e, "for (int64_t w = %lld; w > 0; w /= 2)", ll(P / 2));
    bd_emit(e, "    for (int64_t l = 0; l < w; l++) s[l] += s[l + w];");
    bd_emit(e, "Y[n * %lld + c] = s[0] / (%s)%lld;", ll(C), T, ll(S));
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- MATMUL */

typedef struct mm_layout {
    int64_t lda, ldb, ldy;
} mm_layout;

static mm_layout mm_layout_of(const bd_matmul_params *mp) {
    mm_layout l;
    l.lda = mp->trans_a ? mp->M : mp->K;
    l.ldb = mp->trans_b ? mp->K : mp->N;
    l.ldy = mp->N;
    return l;
}

/* C's element strides along the output's M and N (0 where C broadcasts), for the epilogue. */
static void mm_c_strides(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp, int64_t *cs_m,
                         int64_t *cs_n) {
    *cs_m = *cs_n = 0;
    if (mp->c < 0) return;
    const bd_value *c = operand_value(e, n, mp->c);
    int64_t st[BD_MAX_RANK];
    bd_dims_strides(c->rank, c->dims, st);
    /* Gemm: C is right-aligned on [M, N] */
    if (c->rank >= 1 && c->dims[c->rank - 1] != 1) *cs_n = st[c->rank - 1];
    if (c->rank >= 2 && c->dims[c->rank - 2] != 1) *cs_m = st[c->rank - 2];
}

/* How C enters the result: not at all (no C, or beta 0), as the kernels' per-column bias (one
 * value per column, beta 1 or C constant so that beta folds into it, float32, no alpha left to
 * apply after the kernel), or in a general epilogue loop y = alpha * AB + beta * C. */
enum { MM_C_NONE, MM_C_BIAS_N, MM_C_GENERAL };
static int mm_c_mode(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp) {
    if (mp->c < 0) return MM_C_NONE;
    const bd_value *c = operand_value(e, n, mp->c), *a = operand_value(e, n, mp->a);
    int64_t numel = 1;
    for (int i = 0; i < c->rank; i++) numel *= c->dims[i];
    bool row_vector = numel == mp->N && (c->rank == 0 ? mp->N == 1 : c->dims[c->rank - 1] == mp->N);
    bool beta_ok = mp->beta == 1.0f || c->constant;
    bool post_alpha = mp->alpha != 1.0f && !mp->alpha_in_b;
    if (row_vector && beta_ok && !post_alpha && a->dtype == BD_DT_FLOAT) return MM_C_BIAS_N;
    return mp->beta == 0.0f ? MM_C_NONE : MM_C_GENERAL;
}

/* The float32 bias_n pointer for MM_C_BIAS_N: C itself, or beta * C folded into the blob. */
static const char *mm_bias_ptr(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp) {
    if (mm_c_mode(e, n, mp) != MM_C_BIAS_N) return "NULL";
    const bd_value *c = operand_value(e, n, mp->c);
    if (mp->beta == 1.0f) return operand_ptr(e, n, mp->c);
    float *tmp = malloc((size_t)mp->N * sizeof *tmp);
    BD_ASSERT(tmp);
    const float *src = c->constant->data;
    for (int64_t j = 0; j < mp->N; j++) tmp[j] = mp->beta * src[j];
    int64_t off = bd_emit_blob(e, tmp, (size_t)mp->N * sizeof *tmp);
    free(tmp);
    return bd_emit_str(e, "((const float *)(bd_weights + %lld))", ll(off));
}

/* Opens the batch loops and defines ao/bo/yo, m0/m1, n0/n1. Returns the loops opened. */
static int mm_open_batches(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp) {
    if (mp->merged) {
        /* one run of rows: (batch..., M) flattened */
        const char *r0 = "0";
        int64_t stride = 1;
        for (int j = mp->m_iter; j >= 0; j--) {
            if (j <= mp->cut) r0 = bd_emit_str(e, "%s + lo[%d] * %lld", r0, j, ll(stride));
            stride *= n->extent[j];
        }
        bd_emit(e, "const int64_t ao = 0, bo = 0, yo = 0;");
        bd_emit(e, "(void)ao; (void)bo;");
        bd_emit(e, "const int64_t m0 = %s, m1 = m0 + (hi[%d] - lo[%d]) * %lld;", r0, mp->cut, mp->cut,
                ll(mp->cut_rows));
        if (mp->n_iter >= 0)
            bd_emit(e, "const int64_t n0 = lo[%d], n1 = hi[%d];", mp->n_iter, mp->n_iter);
        else
            bd_emit(e, "const int64_t n0 = 0, n1 = 1;");
        return 0;
    }
    const char *ao = "0", *bo = "0", *yo = "0";
    for (int j = 0; j < mp->n_batch; j++) {
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", j, j, j, j, j);
        if (mp->a_bstride[j]) ao = bd_emit_str(e, "%s + i%d * %lld", ao, j, ll(mp->a_bstride[j]));
        if (mp->b_bstride[j]) bo = bd_emit_str(e, "%s + i%d * %lld", bo, j, ll(mp->b_bstride[j]));
        yo = bd_emit_str(e, "%s + i%d * %lld", yo, j, ll(mp->y_bstride[j]));
    }
    bd_emit(e, "const int64_t ao = %s, bo = %s, yo = %s;", ao, bo, yo);
    bd_emit(e, "(void)ao; (void)bo;");
    if (mp->m_iter >= 0)
        bd_emit(e, "const int64_t m0 = lo[%d], m1 = hi[%d];", mp->m_iter, mp->m_iter);
    else
        bd_emit(e, "const int64_t m0 = 0, m1 = 1;");
    if (mp->n_iter >= 0)
        bd_emit(e, "const int64_t n0 = lo[%d], n1 = hi[%d];", mp->n_iter, mp->n_iter);
    else
        bd_emit(e, "const int64_t n0 = 0, n1 = 1;");
    (void)n;
    return mp->n_batch;
}

/* y = alpha * y + beta * C (broadcast), then the activation, over the block's rows/columns. */
static void mm_epilogue(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp, int dtype,
                        bool scale_alpha, bool add_c) {
    const char *T = bd_c_type(dtype);
    bool fl = dtype == BD_DT_FLOAT || dtype == BD_DT_DOUBLE;
    int64_t cs_m, cs_n;
    mm_c_strides(e, n, mp, &cs_m, &cs_n);
    bd_emit_open(e, "for (int64_t i = m0; i < m1; i++)");
    bd_emit(e, "%s *yr = Y + yo + i * %lld;", T, ll(mm_layout_of(mp).ldy));
    bd_emit_open(e, "for (int64_t j = n0; j < n1; j++)");
    const char *v = "yr[j]";
    const char *cv = add_c ? bd_emit_str(e, "Cv[i * %lld + j * %lld]", ll(cs_m), ll(cs_n)) : NULL;
    if (fl) {
        if (scale_alpha) v = bd_emit_str(e, "%s * %s", bd_emit_float(e, mp->alpha, dtype), v);
        if (add_c)
            v = mp->beta == 1.0f
                    ? bd_emit_str(e, "%s + %s", v, cv)
                    : bd_emit_str(e, "%s + %s * %s", v, bd_emit_float(e, mp->beta, dtype), cv);
        if (n->epi.residual >= 0) v = bd_emit_str(e, "%s + Rv[yo + i * %lld + j]", v, ll(mm_layout_of(mp).ldy));
    } else if (!scale_alpha && (!add_c || mp->beta == 1.0f)) {
        if (add_c) v = bd_emit_str(e, "%s + %s", v, cv);
    } else {
        const char *alpha = bd_emit_float(e, mp->alpha, BD_DT_DOUBLE);
        const char *dv = bd_emit_str(e, "%s * (double)%s", alpha, v);
        if (add_c)
            dv = bd_emit_str(e, "%s + %s * (double)%s", dv,
                             bd_emit_float(e, mp->beta, BD_DT_DOUBLE), cv);
        v = bd_emit_str(e, "bd_f2i_%s(%s)", T, dv);
    }
    bd_emit(e, "const %s v = %s;", T, v);
    bd_emit(e, "yr[j] = %s;", act_expr(e, n, "v"));
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

static void emit_matmul_f32(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp, bd_emit_phase phase) {
    mm_layout l = mm_layout_of(mp);
    int64_t mt = mp->m_iter >= 0 ? n->tile[mp->m_iter] : 1, nt = mp->n_iter >= 0 ? n->tile[mp->n_iter] : 1;
    /* --precision bf16: weights packed as bfloat16 panels of 32 columns, which the blocks' column
     * tiles start on (the tiler cuts N in multiples of 32) */
    const bool bf16 = e->bf16 && mp->b_packed && (nt % 32 == 0 || nt >= mp->N);
    const char *pfx = bf16 ? "bf16" : "f32";
    if (phase == BD_EMIT_SETUP) {
        bd_emit_open(e, "%s", "");
        if (mp->b_packed) {
            int slot = bd_emit_nest_slot(e, n);
            const char *src = operand_ptr(e, n, mp->b);
            if (mp->alpha_in_b) {
                const bd_value *b = operand_value(e, n, mp->b);
                int64_t cnt = b->constant->numel;
                float *tmp = malloc((size_t)(cnt ? cnt : 1) * sizeof *tmp);
                BD_ASSERT(tmp);
                const float *bs = b->constant->data;
                for (int64_t i = 0; i < cnt; i++) tmp[i] = mp->alpha * bs[i];
                int64_t off = bd_emit_blob(e, tmp, (size_t)cnt * sizeof *tmp);
                free(tmp);
                src = bd_emit_str(e, "((const float *)(bd_weights + %lld))", ll(off));
            }
            emit_packed_alloc(e, slot, "pk", bd_emit_str(e, "bd_%s_gemm_packed_b_bytes(%lld, %lld)",
                                                       pfx, ll(mp->K), ll(mp->N)));
            bd_emit(e, "bd_%s_gemm_pack_b(%lld, %lld, %s, %lld, %d, pk);", pfx, ll(mp->K), ll(mp->N), src,
                    ll(l.ldb), mp->trans_b);
        }
        emit_scratch_check(e, n, bf16 ? bd_emit_str(e, "bd_bf16_gemm_scratch_bytes(%lld, %lld)", ll(mt), ll(mp->K))
                                      : bd_emit_str(e, "bd_f32_gemm_scratch_bytes(%lld, %lld, %lld)", ll(mt),
                                                    ll(nt), ll(mp->K)));
        bd_emit_close(e, NULL);
        return;
    }
    bool post_alpha = mp->alpha != 1.0f && !mp->alpha_in_b;
    bool add_c = mm_c_mode(e, n, mp) == MM_C_GENERAL;
    bool epilogue = post_alpha || add_c || n->epi.residual >= 0;
    kernel_act ka = kernel_act_of(n);
    int act = epilogue ? BD_ACT_NONE : ka.code;
    epilogue |= act_after_kernel(n); /* generated, on the block */
    const char *bias = mm_bias_ptr(e, n, mp);
    bd_emit(e, "const float *A = %s;", operand_ptr(e, n, mp->a));
    if (!mp->b_packed) bd_emit(e, "const float *B = %s;", operand_ptr(e, n, mp->b));
    if (add_c) bd_emit(e, "const float *Cv = %s;", operand_ptr(e, n, mp->c));
    if (n->epi.residual >= 0) bd_emit(e, "const float *Rv = %s;", operand_ptr(e, n, n->epi.residual));
    bd_emit(e, "float *Y = %s;", operand_ptr(e, n, mp->y));
    int loops = mm_open_batches(e, n, mp);
    const char *arow = mp->trans_a ? "m0" : bd_emit_str(e, "m0 * %lld", ll(l.lda));
    const char *amin = bd_emit_float(e, act == BD_ACT_CLIP ? ka.lo : 0, BD_DT_FLOAT);
    const char *amax = bd_emit_float(e, act == BD_ACT_CLIP ? ka.hi : 0, BD_DT_FLOAT);
    if (mp->b_packed) {
        bd_emit(e, "bd_%s_gemm_packed_b(m1 - m0, n0, n1, %lld, A + ao + %s, %lld, %d, (const float *)S->packed[%d], "
                   "Y + yo + m0 * %lld, %lld, %s, NULL, 0, %d, %s, %s, scratch);",
                pfx, ll(mp->K), arow, ll(l.lda), mp->trans_a, bd_emit_nest_slot(e, n), ll(l.ldy), ll(l.ldy),
                bias, act, amin, amax);
    } else {
        const char *bcol = mp->trans_b ? bd_emit_str(e, "n0 * %lld", ll(l.ldb)) : "n0";
        const char *bn = strcmp(bias, "NULL") ? bd_emit_str(e, "%s + n0", bias) : "NULL";
        bd_emit(e, "bd_f32_gemm(m1 - m0, n1 - n0, %lld, A + ao + %s, %lld, %d, B + bo + %s, %lld, %d, "
                   "Y + yo + m0 * %lld + n0, %lld, %s, NULL, 0, %d, %s, %s, scratch);",
                ll(mp->K), arow, ll(l.lda), mp->trans_a, bcol, ll(l.ldb), mp->trans_b, ll(l.ldy), ll(l.ldy),
                bn, act, amin, amax);
    }
    if (epilogue) mm_epilogue(e, n, mp, BD_DT_FLOAT, post_alpha, add_c);
    for (int i = 0; i < loops; i++) bd_emit_close(e, NULL);
}

static void emit_matmul_generic(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp) {
    const bd_value *y = operand_value(e, n, mp->y);
    const char *T = bd_c_type(y->dtype);
    mm_layout l = mm_layout_of(mp);
    bool add_c = mm_c_mode(e, n, mp) != MM_C_NONE;
    bool post_alpha = mp->alpha != 1.0f;
    /* A and B in their own types (8-bit for MatMulInteger), less their zero points */
    bd_emit(e, "const %s *A = %s;", bd_c_type(operand_value(e, n, mp->a)->dtype), operand_ptr(e, n, mp->a));
    bd_emit(e, "const %s *B = %s;", bd_c_type(operand_value(e, n, mp->b)->dtype), operand_ptr(e, n, mp->b));
    bd_emit(e, "const %s za = %s, zb = %s;", T, zero_point(e, n, mp->a_zero, T), zero_point(e, n, mp->b_zero, T));
    bd_emit(e, "(void)za; (void)zb;");
    if (add_c) bd_emit(e, "const %s *Cv = %s;", T, operand_ptr(e, n, mp->c));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, mp->y));
    int loops = mm_open_batches(e, n, mp);
    bd_emit_open(e, "for (int64_t i = m0; i < m1; i++)");
    bd_emit(e, "%s *yr = Y + yo + i * %lld;", T, ll(l.ldy));
    bd_emit(e, "for (int64_t j = n0; j < n1; j++) yr[j] = 0;");
    bd_emit_open(e, "for (int64_t k = 0; k < %lld; k++)", ll(mp->K));
    bd_emit(e, "const %s av = (%s)A[ao + %s] - za;", T, T,
            mp->trans_a ? bd_emit_str(e, "k * %lld + i", ll(l.lda)) : bd_emit_str(e, "i * %lld + k", ll(l.lda)));
    if (mp->trans_b)
        bd_emit(e, "for (int64_t j = n0; j < n1; j++) yr[j] += av * ((%s)B[bo + j * %lld + k] - zb);", T, ll(l.ldb));
    else
        bd_emit(e, "for (int64_t j = n0; j < n1; j++) yr[j] += av * ((%s)B[bo + k * %lld + j] - zb);", T, ll(l.ldb));
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    if (add_c || post_alpha || n->epi.act.n)
        mm_epilogue(e, n, mp, y->dtype, post_alpha, add_c);
    for (int i = 0; i < loops; i++) bd_emit_close(e, NULL);
}

/* MatMulInteger on the int8 kernel: B - b_zero packed at create (the tiler checked that it fits
 * int8), a_zero read at run time. */
static void emit_matmul_i8(bd_emitter *e, const bd_nest *n, const bd_matmul_params *mp, bd_emit_phase phase) {
    mm_layout l = mm_layout_of(mp);
    const bd_value *a = operand_value(e, n, mp->a), *b = operand_value(e, n, mp->b);
    int slot = bd_emit_nest_slot(e, n);
    if (phase == BD_EMIT_SETUP) {
        bd_emit_open(e, "%s", "");
        emit_packed_alloc(e, slot, "pk", bd_emit_str(e, "bd_i8_gemm_packed_b_bytes(%lld, %lld)", ll(mp->K), ll(mp->N)));
        bd_emit_open(e, "if (bd_i8_gemm_pack_b(%lld, %lld, %s, %lld, %d, %s, pk))", ll(mp->K), ll(mp->N),
                     operand_ptr(e, n, mp->b), ll(l.ldb), b->dtype == BD_DT_INT8,
                     zero_point(e, n, mp->b_zero, "int32_t"));
        bd_emit(e, "bdrt_errorf(\"nest %d: B less its zero point does not fit int8\");", nest_index(e, n));
        bd_emit(e, "bd_destroy(S);");
        bd_emit(e, "return NULL;");
        bd_emit_close(e, NULL);
        emit_scratch_check(e, n, bd_emit_str(e, "bd_i8_gemm_scratch_bytes(%lld)", ll(mp->K)));
        bd_emit_close(e, NULL);
        return;
    }
    bd_emit(e, "const uint8_t *A = (const uint8_t *)%s;", operand_ptr(e, n, mp->a));
    bd_emit(e, "const int32_t za = %s;", zero_point(e, n, mp->a_zero, "int32_t"));
    bd_emit(e, "int32_t *Y = %s;", operand_ptr(e, n, mp->y));
    int loops = mm_open_batches(e, n, mp);
    bd_emit(e, "bd_i8_gemm_packed_b(m1 - m0, n0, n1, %lld, A + ao + m0 * %lld, %lld, %d, za, S->packed[%d], "
               "Y + yo + m0 * %lld, %lld, scratch);",
            ll(mp->K), ll(l.lda), ll(l.lda), a->dtype == BD_DT_INT8, slot, ll(l.ldy), ll(l.ldy));
    for (int i = 0; i < loops; i++) bd_emit_close(e, NULL);
}

bd_status bd_emit_body_MATMUL(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    const bd_matmul_params *mp = BD_NEST_PARAMS(n, matmul);
    const bd_value *y = operand_value(e, n, mp->y);
    if (mp->i8_packed) {
        emit_matmul_i8(e, n, mp, phase);
        return BD_OK;
    }
    if (y->dtype == BD_DT_FLOAT) {
        emit_matmul_f32(e, n, mp, phase);
        return BD_OK;
    }
    if (phase == BD_EMIT_BLOCK) emit_matmul_generic(e, n, mp);
    return BD_OK;
}

/* ---------------------------------------------------------------- ATTENTION */

/* softmax(score(A B)) V for the block's rows (fuse/attention.c), batch index by batch index:
 * the first product's rows into scratch (rows x N, a GEMM), then per row the score expression
 * and the softmax in place, then the second product from those rows (a GEMM into Y). */
bd_status bd_emit_body_ATTENTION(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    const bd_attention_params *ap = BD_NEST_PARAMS(n, attention);
    const bd_matmul_params *qk = &ap->qk, *pv = &ap->pv;
    const int r = n->n_iter, row = r - 2, col = r - 1;
    const int64_t rows = n->tile[row], N = qk->N, sbytes = (rows * N * 4 + 63) / 64 * 64;
    const char *g1 = bd_emit_str(e, "bd_f32_gemm_scratch_bytes(%lld, %lld, %lld)", ll(rows), ll(N), ll(qk->K));
    const char *g2 = bd_emit_str(e, "bd_f32_gemm_scratch_bytes(%lld, %lld, %lld)", ll(rows), ll(pv->N), ll(pv->K));
    if (phase == BD_EMIT_SETUP) {
        bd_emit_open(e, "%s", "");
        emit_scratch_check(e, n, bd_emit_str(e, "%lld + (%s > %s ? %s : %s)", ll(sbytes), g1, g2, g1, g2));
        bd_emit_close(e, NULL);
        return BD_OK;
    }
    const mm_layout lq = mm_layout_of(qk), lv = mm_layout_of(pv);
    bd_emit(e, "const float *A = %s;", operand_ptr(e, n, qk->a));
    bd_emit(e, "const float *B = %s;", operand_ptr(e, n, qk->b));
    bd_emit(e, "const float *V = %s;", operand_ptr(e, n, pv->b));
    bd_emit(e, "float *Y = %s;", operand_ptr(e, n, pv->y));
    /* the score's inputs, loaded as x<k>_, the scores' element as s_ */
    const char *names[BD_NEST_MAX_OPERANDS];
    bool loaded[BD_NEST_MAX_OPERANDS] = {false};
    for (int t = 0; t < ap->score.n; t++)
        if (ap->score.node[t].op == BD_EXPR_LOAD) loaded[ap->score.node[t].operand] = true;
    for (int k = 0; k < n->n_operands; k++) {
        names[k] = k == ap->s ? "s_" : bd_emit_str(e, "x%d_", k);
        if (loaded[k] && k != ap->s)
            bd_emit(e, "const %s *restrict P%d = %s;", bd_c_type(operand_value(e, n, k)->dtype), k,
                    operand_ptr(e, n, k));
    }
    bd_emit(e, "float *const Sc = (float *)(void *)scratch;");
    bd_emit(e, "void *const gs = scratch + %lld;", ll(sbytes));
    bd_emit_vec_types(e, BD_DT_FLOAT);
    const char *ao = "0", *bo = "0", *vo = "0", *yo = "0";
    for (int j = 0; j < row; j++) {
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", j, j, j, j, j);
        if (qk->a_bstride[j]) ao = bd_emit_str(e, "%s + i%d * %lld", ao, j, ll(qk->a_bstride[j]));
        if (qk->b_bstride[j]) bo = bd_emit_str(e, "%s + i%d * %lld", bo, j, ll(qk->b_bstride[j]));
        if (pv->b_bstride[j]) vo = bd_emit_str(e, "%s + i%d * %lld", vo, j, ll(pv->b_bstride[j]));
        yo = bd_emit_str(e, "%s + i%d * %lld", yo, j, ll(pv->y_bstride[j]));
    }
    bd_emit(e, "const int64_t m0 = lo[%d], m1 = hi[%d];", row, row);
    bd_emit(e, "bd_f32_gemm(m1 - m0, %lld, %lld, A + %s + %s, %lld, %d, B + %s, %lld, %d, Sc, %lld, "
               "NULL, NULL, 0, 0, 0.0f, 0.0f, gs);",
            ll(N), ll(qk->K), ao, qk->trans_a ? "m0" : bd_emit_str(e, "m0 * %lld", ll(lq.lda)),
            ll(lq.lda), qk->trans_a, bo, ll(lq.ldb), qk->trans_b, ll(N));
    bd_emit_open(e, "for (int64_t i%d = m0; i%d < m1; i%d++)", row, row, row);
    bd_emit(e, "float *const sr = Sc + (i%d - m0) * %lld;", row, ll(N));
    if (ap->score.n) {
        bd_emit_open(e, "for (int64_t i%d = 0; i%d < %lld; i%d++)", col, col, ll(N), col);
        bd_emit(e, "const float s_ = sr[i%d];", col);
        for (int k = 0; k < n->n_operands; k++) {
            if (!loaded[k] || k == ap->s) continue;
            const char *off = "0";
            for (int i = 0; i < r; i++)
                if (ap->score_stride[k][i]) off = bd_emit_str(e, "%s + i%d * %lld", off, i, ll(ap->score_stride[k][i]));
            bd_emit(e, "const %s %s = P%d[%s];", bd_c_type(operand_value(e, n, k)->dtype), names[k], k, off);
        }
        bd_emit(e, "sr[i%d] = (float)(%s);", col, bd_print_expr(&e->pr, &bd_c_dialect, &ap->score, names));
        bd_emit_close(e, NULL);
    }
    bd_emit(e, "const float *xr = sr;");
    bd_emit(e, "float *yr = sr;");
    bd_emit_softmax_row(e, BD_DT_FLOAT, false, N);
    bd_emit_close(e, NULL);
    bd_emit(e, "bd_f32_gemm(m1 - m0, %lld, %lld, Sc, %lld, 0, V + %s, %lld, %d, Y + %s + m0 * %lld, %lld, "
               "NULL, NULL, 0, 0, 0.0f, 0.0f, gs);",
            ll(pv->N), ll(pv->K), ll(N), vo, ll(lv.ldb), pv->trans_b, yo, ll(lv.ldy), ll(lv.ldy));
    for (int j = 0; j < row; j++) bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- NORM */

static void emit_batchnorm(bd_emitter *e, const bd_nest *n, const bd_norm_params *np) {
    bd_graph *g = e->graph;
    const bd_value *x = operand_value(e, n, np->x);
    const char *T = bd_c_type(x->dtype);
    int r = x->rank;
    int64_t C = np->channels, inner = np->inner;
    int64_t params = np->per_activation ? C * inner : C;
    int64_t xs[BD_MAX_RANK];
    bd_dims_strides(r, x->dims, xs);
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, np->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, np->y));
    if (np->folded) {
        size_t nbytes;
        unsigned char *buf = bd_batchnorm_factors(
            operand_value(e, n, np->scale)->constant, operand_value(e, n, np->bias)->constant,
            operand_value(e, n, np->mean)->constant, operand_value(e, n, np->var)->constant, np->epsilon,
            params, x->dtype, &nbytes);
        int64_t off = bd_emit_blob(e, buf, nbytes);
        free(buf);
        bd_emit(e, "const %s *Pa = (const %s *)(bd_weights + %lld);", T, T, ll(off));
        bd_emit(e, "const %s *Pb = Pa + %lld;", T, ll(params));
    } else {
        const char *names[4] = {"Ps", "Pbias", "Pm", "Pv"};
        int ops[4] = {np->scale, np->bias, np->mean, np->var};
        for (int k = 0; k < 4; k++)
            bd_emit(e, "const %s *%s = %s;", bd_c_type(bd_graph_value(g, n->operands[ops[k]].value)->dtype),
                    names[k], operand_ptr(e, n, ops[k]));
    }
    const char *eps = bd_emit_float(e, np->epsilon, BD_DT_DOUBLE);
    bd_emit_open(e, "for (int64_t n = lo[0]; n < hi[0]; n++)");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const int64_t base = n * %lld + c * %lld;", ll(r > 1 ? xs[0] : 1), ll(r > 1 ? xs[1] : 1));
    if (!np->per_activation) {
        if (np->folded) {
            bd_emit(e, "const %s a = Pa[c], b = Pb[c];", T);
        } else {
            bd_emit(e, "const double ad = (double)Ps[c] / sqrt((double)Pv[c] + %s);", eps);
            bd_emit(e, "const %s a = (%s)ad, b = (%s)((double)Pbias[c] - (double)Pm[c] * ad);", T, T, T);
        }
    }
    const char *so = "0";
    for (int i = 2; i < r; i++) {
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", i, i, i, i, i);
        so = bd_emit_str(e, "%s + i%d * %lld", so, i, ll(xs[i]));
    }
    bd_emit(e, "const int64_t s = %s;", so);
    if (np->per_activation) {
        bd_emit(e, "const int64_t p = c * %lld + s;", ll(inner));
        if (np->folded) {
            bd_emit(e, "const %s a = Pa[p], b = Pb[p];", T);
        } else {
            bd_emit(e, "const double ad = (double)Ps[p] / sqrt((double)Pv[p] + %s);", eps);
            bd_emit(e, "const %s a = (%s)ad, b = (%s)((double)Pbias[p] - (double)Pm[p] * ad);", T, T, T);
        }
    }
    bd_emit(e, "const %s v = X[base + s] * a + b;", T);
    bd_emit(e, "Y[base + s] = %s;", act_expr(e, n, "v")); /* an absorbed activation (fuse.c) */
    for (int i = 2; i < r; i++) bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

/* Element strides of operand k along the output dims [from, r) (0 where it broadcasts). */
static void operand_iter_strides(bd_emitter *e, const bd_nest *n, int k, int r, int64_t *out) {
    const bd_operand *o = &n->operands[k];
    const bd_value *v = operand_value(e, n, k);
    int64_t st[BD_MAX_RANK];
    bd_dims_strides(v->rank, v->dims, st);
    for (int i = 0; i < r; i++) out[i] = 0;
    for (int j = 0; j < o->rank; j++)
        if (o->dims[j].kind == BD_ACCESS_AFFINE && o->dims[j].iter >= 0 && v->dims[j] != 1)
            out[o->dims[j].iter] += st[j];
}

/* acc[0] = the sum over the row's columns of TERM (of j + l in the 32-column steps, TAIL of j
 * past them), accumulated in 32 lanes and summed as a tree. */
static void emit_lane_sums(bd_emitter *e, int64_t cols, int64_t c32, const char *term,
                           const char *tail) {
    bd_emit(e, "for (int l = 0; l < 32; l++) acc[l] = 0;");
    if (c32)
        bd_emit(e, "for (int64_t j = 0; j < %lld; j += 32) for (int l = 0; l < 32; l++) acc[l] += %s;",
                ll(c32), term);
    if (cols > c32)
        bd_emit(e, "for (int64_t j = %lld; j < %lld; j++) acc[j - %lld] += %s;", ll(c32), ll(cols),
                ll(c32), tail);
    bd_emit(e, "for (int w = 16; w > 0; w /= 2) for (int l = 0; l < w; l++) acc[l] += acc[l + w];");
}

static void emit_layernorm(bd_emitter *e, const bd_nest *n, const bd_norm_params *np) {
    const bd_value *x = operand_value(e, n, np->x);
    const char *T = bd_c_type(x->dtype);
    int r = x->rank, axis = np->axis;
    int64_t xs[BD_MAX_RANK], ss[BD_MAX_RANK], bs[BD_MAX_RANK];
    bd_dims_strides(r, x->dims, xs);
    operand_iter_strides(e, n, np->scale, r, ss);
    if (np->bias >= 0) operand_iter_strides(e, n, np->bias, r, bs);
    /* Scale and B laid out like the normalised axes: one flat loop. */
    bool flat = true;
    for (int i = axis; i < r; i++) flat &= ss[i] == xs[i] && (np->bias < 0 || bs[i] == xs[i]);
    bd_emit(e, "const %s *X = %s;", T, operand_ptr(e, n, np->x));
    bd_emit(e, "%s *Y = %s;", T, operand_ptr(e, n, np->y));
    bd_emit(e, "const %s *Sc = %s;", T, operand_ptr(e, n, np->scale));
    if (np->bias >= 0) bd_emit(e, "const %s *Bv = %s;", T, operand_ptr(e, n, np->bias));
    if (np->mean_out >= 0)
        bd_emit(e, "%s *Mo = %s;", bd_c_type(operand_value(e, n, np->mean_out)->dtype), operand_ptr(e, n, np->mean_out));
    if (np->inv_out >= 0)
        bd_emit(e, "%s *Io = %s;", bd_c_type(operand_value(e, n, np->inv_out)->dtype), operand_ptr(e, n, np->inv_out));
    const char *row = "0";
    for (int i = 0; i < axis; i++) {
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", i, i, i, i, i);
        row = bd_emit_str(e, "%s + i%d * %lld", row, i, ll(xs[i] / np->cols));
    }
    int64_t cols = np->cols;
    bd_emit(e, "const int64_t row = %s;", row);
    bd_emit(e, "const %s *xr = X + row * %lld;", T, ll(cols));
    bd_emit(e, "%s *yr = Y + row * %lld;", T, ll(cols));
    /* Sums over 32 lanes (c32 columns, then the rest into the first lanes), summed as a tree:
     * independent chains the compiler vectorizes, where one chain of float adds waits on each. */
    const int64_t c32 = cols / 32 * 32;
    bd_emit(e, "%s acc[32];", T);
    if (np->kind == BD_NORM_RMS) {
        bd_emit(e, "const %s mean = 0;", T);
    } else {
        emit_lane_sums(e, cols, c32, "xr[j + l]", "xr[j]");
        bd_emit(e, "const %s mean = acc[0] / (%s)%lld;", T, T, ll(cols));
    }
    emit_lane_sums(e, cols, c32, "(xr[j + l] - mean) * (xr[j + l] - mean)",
                   "(xr[j] - mean) * (xr[j] - mean)");
    bd_emit(e, "const %s var = acc[0] / (%s)%lld;", T, T, ll(cols));
    bd_emit(e, "const %s inv = (%s)1 / %s(var + %s);", T, T, x->dtype == BD_DT_FLOAT ? "sqrtf" : "sqrt",
            bd_emit_float(e, np->epsilon, x->dtype));
    if (flat) {
        bd_emit_open(e, "for (int64_t j = 0; j < %lld; j++)", ll(cols));
        bd_emit(e, "yr[j] = (xr[j] - mean) * inv * Sc[j]%s;", np->bias >= 0 ? " + Bv[j]" : "");
        bd_emit_close(e, NULL);
    } else {
        const char *xo = "0", *so = "0", *bo = "0";
        for (int i = axis; i < r; i++) {
            bd_emit_open(e, "for (int64_t k%d = 0; k%d < %lld; k%d++)", i, i, ll(x->dims[i]), i);
            xo = bd_emit_str(e, "%s + k%d * %lld", xo, i, ll(xs[i]));
            if (ss[i]) so = bd_emit_str(e, "%s + k%d * %lld", so, i, ll(ss[i]));
            if (np->bias >= 0 && bs[i]) bo = bd_emit_str(e, "%s + k%d * %lld", bo, i, ll(bs[i]));
        }
        bd_emit(e, "const int64_t o = %s;", xo);
        bd_emit(e, "yr[o] = (xr[o] - mean) * inv * Sc[%s]%s;", so,
                np->bias >= 0 ? bd_emit_str(e, " + Bv[%s]", bo) : "");
        for (int i = axis; i < r; i++) bd_emit_close(e, NULL);
    }
    if (np->mean_out >= 0) bd_emit(e, "Mo[row] = mean;");
    if (np->inv_out >= 0) bd_emit(e, "Io[row] = inv;");
    for (int i = 0; i < axis; i++) bd_emit_close(e, NULL);
}

bd_status bd_emit_body_NORM(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_norm_params *np = BD_NEST_PARAMS(n, norm);
    if (np->kind == BD_NORM_BATCH) emit_batchnorm(e, n, np);
    else emit_layernorm(e, n, np);
    return BD_OK;
}

/* ---------------------------------------------------------------- LSTM */

/* The cell update of one batch row for one step, with direction dir's activations. */
static void emit_lstm_cell(bd_emitter *e, const bd_lstm_params *lp, int dir) {
    int64_t H = lp->hidden;
    const bd_rnn_act *f = &lp->act[dir][0], *gg = &lp->act[dir][1], *h = &lp->act[dir][2];
    const char *clip = lp->has_clip ? bd_emit_float(e, lp->clip, BD_DT_FLOAT) : NULL;
    bd_emit_open(e, "for (int64_t j = 0; j < %lld; j++)", ll(H));
    bd_emit(e, "float vi = gr[j] + xr[j], vo = gr[%lld + j] + xr[%lld + j];", ll(H), ll(H));
    bd_emit(e, "float vf = gr[%lld + j] + xr[%lld + j], vc = gr[%lld + j] + xr[%lld + j];", ll(2 * H),
            ll(2 * H), ll(3 * H), ll(3 * H));
    bd_emit(e, "const float cp = cr[j];");
    if (lp->p >= 0) {
        bd_emit(e, "vi += Pd[j] * cp;");
        bd_emit(e, "vf += Pd[%lld + j] * cp;", ll(2 * H));
    }
    if (clip) {
        const char *vs[3] = {"vi", "vf", "vc"};
        for (int k = 0; k < 3; k++)
            bd_emit(e, "%s = %s < -%s ? -%s : %s > %s ? %s : %s;", vs[k], vs[k], clip, clip, vs[k], clip,
                    clip, vs[k]);
    }
    bd_print_rnn_act(&e->pr, f, "vi", "ig");
    if (lp->input_forget) bd_emit(e, "const float fg = 1.0f - ig; (void)vf;");
    else bd_print_rnn_act(&e->pr, f, "vf", "fg");
    bd_print_rnn_act(&e->pr, gg, "vc", "cg");
    bd_emit(e, "const float cn = fg * cp + ig * cg;");
    if (lp->p >= 0) bd_emit(e, "vo += Pd[%lld + j] * cn;", ll(H));
    if (clip) bd_emit(e, "vo = vo < -%s ? -%s : vo > %s ? %s : vo;", clip, clip, clip, clip);
    bd_print_rnn_act(&e->pr, f, "vo", "og");
    bd_print_rnn_act(&e->pr, h, "cn", "hc");
    bd_emit(e, "const float hn = og * hc;");
    bd_emit(e, "cr[j] = cn;");
    bd_emit(e, "hr[j] = hn;");
    bd_emit(e, "yr[j] = hn;");
    bd_emit_close(e, NULL);
}

static bool same_acts(const bd_lstm_params *lp) {
    for (int k = 0; k < 3; k++) {
        const bd_rnn_act *a = &lp->act[0][k], *b = &lp->act[1][k];
        if (a->fn != b->fn || a->alpha != b->alpha || a->beta != b->beta) return false;
    }
    return true;
}

bd_status bd_emit_body_LSTM(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    const bd_lstm_params *lp = BD_NEST_PARAMS(n, lstm);
    int64_t SEQ = lp->seq, BATCH = lp->batch, I = lp->input, H = lp->hidden, H4 = 4 * H;
    int D = lp->num_dir;
    int64_t BT = n->tile[1]; /* batch rows of a block, at most */
    int64_t floats = SEQ * BT * H4 + 2 * BT * H + BT * H4 + H4 + H + 64;
    const char *wbytes = bd_emit_str(e, "((bd_f32_gemm_packed_b_bytes(%lld, %lld) + 63) & ~(size_t)63)", ll(I), ll(H4));
    const char *rbytes = bd_emit_str(e, "((bd_f32_gemm_packed_b_bytes(%lld, %lld) + 63) & ~(size_t)63)", ll(H), ll(H4));
    if (phase == BD_EMIT_SETUP) {
        bd_emit_open(e, "%s", "");
        if (lp->packed) {
            int slot = bd_emit_nest_slot(e, n);
            bd_emit(e, "const size_t wb = %s, rb = %s;", wbytes, rbytes);
            emit_packed_alloc(e, slot, "pk", bd_emit_str(e, "%d * (wb + rb)", D));
            bd_emit_open(e, "for (int dir = 0; dir < %d; dir++)", D);
            bd_emit(e, "unsigned char *at = (unsigned char *)pk + (size_t)dir * (wb + rb);");
            bd_emit(e, "bd_f32_gemm_pack_b(%lld, %lld, %s + (size_t)dir * %lld, %lld, 1, (float *)(void *)at);",
                    ll(I), ll(H4), operand_ptr(e, n, lp->w), ll(H4 * I), ll(I));
            bd_emit(e, "bd_f32_gemm_pack_b(%lld, %lld, %s + (size_t)dir * %lld, %lld, 1, (float *)(void *)(at + wb));",
                    ll(H), ll(H4), operand_ptr(e, n, lp->r), ll(H4 * H), ll(H));
            bd_emit_close(e, NULL);
        }
        int64_t bt = n->tile[1];
        emit_scratch_check(e, n, bd_emit_str(e, "bd_f32_gemm_scratch_bytes(%lld, %lld, %lld) + %lldu",
                                             ll(SEQ * bt > bt ? SEQ * bt : bt), ll(H4), ll(I > H ? I : H),
                                             ll(floats * 4 + 256)));
        bd_emit_close(e, NULL);
        return BD_OK;
    }

    bd_emit(e, "const int64_t dir = lo[0], b0 = lo[1], nb = hi[1] - lo[1];");
    bd_emit(e, "const float *X = %s;", operand_ptr(e, n, lp->x));
    if (lp->lens >= 0) bd_emit(e, "const int32_t *L = %s;", operand_ptr(e, n, lp->lens));
    if (lp->h0 >= 0) bd_emit(e, "const float *H0 = %s;", operand_ptr(e, n, lp->h0));
    if (lp->c0 >= 0) bd_emit(e, "const float *C0 = %s;", operand_ptr(e, n, lp->c0));
    if (lp->p >= 0) bd_emit(e, "const float *Pd = %s + dir * %lld;", operand_ptr(e, n, lp->p), ll(3 * H));
    bd_emit(e, "float *Y = %s;", lp->y >= 0 ? operand_ptr(e, n, lp->y) : "NULL");
    if (lp->yh >= 0) bd_emit(e, "float *YH = %s;", operand_ptr(e, n, lp->yh));
    if (lp->yc >= 0) bd_emit(e, "float *YC = %s;", operand_ptr(e, n, lp->yc));
    bd_emit(e, "float *xp = (float *)(void *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);");
    bd_emit(e, "float *hs = xp + %lld * nb;", ll(SEQ * H4));
    bd_emit(e, "float *cs = hs + %lld * nb;", ll(H));
    bd_emit(e, "float *gt = cs + %lld * nb;", ll(H));
    bd_emit(e, "float *bsum = gt + %lld * nb;", ll(H4));
    bd_emit(e, "float *ydummy = bsum + %lld;", ll(H4));
    bd_emit(e, "void *gs = (void *)(((uintptr_t)(ydummy + %lld) + 63) & ~(uintptr_t)63);", ll(H));
    bd_emit(e, "(void)bsum; (void)ydummy;");

    /* Biases Wb + Rb per direction: folded at compile time when B is constant. */
    const char *bias = "NULL";
    if (lp->b >= 0) {
        const bd_value *bv = operand_value(e, n, lp->b);
        if (bv->constant) {
            float *tmp = malloc((size_t)(D * H4) * sizeof *tmp);
            BD_ASSERT(tmp);
            const float *src = bv->constant->data;
            for (int dd = 0; dd < D; dd++)
                for (int64_t j = 0; j < H4; j++) tmp[dd * H4 + j] = src[dd * 2 * H4 + j] + src[dd * 2 * H4 + H4 + j];
            int64_t off = bd_emit_blob(e, tmp, (size_t)(D * H4) * sizeof *tmp);
            free(tmp);
            bias = bd_emit_str(e, "((const float *)(bd_weights + %lld) + dir * %lld)", ll(off), ll(H4));
        } else {
            bd_emit(e, "const float *Bd = %s + dir * %lld;", operand_ptr(e, n, lp->b), ll(2 * H4));
            bd_emit(e, "for (int64_t j = 0; j < %lld; j++) bsum[j] = Bd[j] + Bd[%lld + j];", ll(H4), ll(H4));
            bias = "bsum";
        }
    }
    /* The input projection of every step at once: xp = X * W^T + (Wb + Rb). */
    const char *wp, *rp;
    if (lp->packed) {
        bd_emit(e, "const size_t wb = %s, rb = %s;", wbytes, rbytes);
        bd_emit(e, "const unsigned char *pk = (const unsigned char *)S->packed[%d] + (size_t)dir * (wb + rb);",
                bd_emit_nest_slot(e, n));
        wp = "(const float *)(const void *)pk";
        rp = "(const float *)(const void *)(pk + wb)";
    } else {
        bd_emit(e, "const float *Wd = %s + dir * %lld;", operand_ptr(e, n, lp->w), ll(H4 * I));
        bd_emit(e, "const float *Rd = %s + dir * %lld;", operand_ptr(e, n, lp->r), ll(H4 * H));
        wp = "Wd";
        rp = "Rd";
    }
    /* With the weights packed, each product is shared with the pool's idle threads by columns
     * (bdrt_help): at batch 1 a step reads all of R, 1 MB at hidden 256, which one core streams
     * from L3 while two keep a half each in their own L2. At least 64 columns a part, and no
     * sharing below 64K multiply-adds a step: a step of hidden 64 (16K) takes less time than
     * handing it over, and the tiny LSTM ran 2x slower at 2 threads than at 1. */
    int64_t max_parts = H4 / 64 > 1 && H4 * H >= 65536 ? H4 / 64 : 1;
    if (lp->packed)
        bd_emit(e, "const int64_t parts = bdrt_help_threads() < %lld ? bdrt_help_threads() : %lld;",
                ll(max_parts), ll(max_parts));
#define PROJ(M, XPTR, OUT)                                                                         \
    (lp->packed ? bd_emit_str(e, "{ bd_cols_job cj = {%s, %lld, %lld, %lld, %lld, parts, %s, %s, %s, %s, gs, thread, S->scratch, S->scratch_stride}; " \
                                 "bdrt_help(parts, bd_cols_part, &cj); }",                          \
                              M, ll(H4), ll(I), ll(I), ll(H4), XPTR, wp, bias, OUT)                 \
                : bd_emit_str(e, "bd_f32_gemm(%s, %lld, %lld, %s, %lld, 0, %s, %lld, 1, %s, %lld, %s, NULL, 0, 0, 0.0f, 0.0f, gs);", \
                              M, ll(H4), ll(I), XPTR, ll(I), wp, ll(I), OUT, ll(H4), bias))
    const char *row; /* xp row of (t, bb) */
    if (lp->batch_major) {
        bd_emit(e, "%s", PROJ(bd_emit_str(e, "nb * %lld", ll(SEQ)), bd_emit_str(e, "X + b0 * %lld", ll(SEQ * I)), "xp"));
        row = bd_emit_str(e, "(bb * %lld + t)", ll(SEQ));
    } else {
        bd_emit_open(e, "if (nb == %lld)", ll(BATCH));
        bd_emit(e, "%s", PROJ(bd_emit_str(e, "(int64_t)%lld", ll(SEQ * BATCH)), "X", "xp"));
        bd_emit_close(e, NULL);
        bd_emit_open(e, "else");
        bd_emit_open(e, "for (int64_t t = 0; t < %lld; t++)", ll(SEQ));
        bd_emit(e, "%s", PROJ("nb", bd_emit_str(e, "X + (t * %lld + b0) * %lld", ll(BATCH), ll(I)),
                              bd_emit_str(e, "xp + t * nb * %lld", ll(H4))));
        bd_emit_close(e, NULL);
        bd_emit_close(e, NULL);
        row = "(t * nb + bb)";
    }
#undef PROJ
    /* state (dir, b) offset in initial_h / Y_h; Y (t, dir, b) offset */
    const char *st = lp->batch_major ? bd_emit_str(e, "((b0 + bb) * %d + dir) * %lld", D, ll(H))
                                     : bd_emit_str(e, "(dir * %lld + b0 + bb) * %lld", ll(BATCH), ll(H));
    const char *yo = lp->batch_major ? bd_emit_str(e, "(((b0 + bb) * %lld + t) * %d + dir) * %lld", ll(SEQ), D, ll(H))
                                     : bd_emit_str(e, "((t * %d + dir) * %lld + b0 + bb) * %lld", D, ll(BATCH), ll(H));
    bd_emit_open(e, "for (int64_t bb = 0; bb < nb; bb++)");
    bd_emit_open(e, "for (int64_t j = 0; j < %lld; j++)", ll(H));
    bd_emit(e, "hs[bb * %lld + j] = %s;", ll(H), lp->h0 >= 0 ? bd_emit_str(e, "H0[%s + j]", st) : "0.0f");
    bd_emit(e, "cs[bb * %lld + j] = %s;", ll(H), lp->c0 >= 0 ? bd_emit_str(e, "C0[%s + j]", st) : "0.0f");
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
    const char *rev = D == 2 ? "dir == 1" : lp->reverse ? "1" : "0";
    bd_emit(e, "const int rev = %s;", rev);
    bd_emit(e, "(void)rev;");
    bd_emit_open(e, "for (int64_t step = 0; step < %lld; step++)", ll(SEQ));
    if (lp->packed)
        bd_emit(e, "{ bd_cols_job cj = {nb, %lld, %lld, %lld, %lld, parts, hs, %s, NULL, gt, gs, thread, S->scratch, "
                   "S->scratch_stride}; bdrt_help(parts, bd_cols_part, &cj); }",
                ll(H4), ll(H), ll(H), ll(H4), rp);
    else
        bd_emit(e, "bd_f32_gemm(nb, %lld, %lld, hs, %lld, 0, %s, %lld, 1, gt, %lld, NULL, NULL, 0, 0, 0.0f, 0.0f, gs);",
                ll(H4), ll(H), ll(H), rp, ll(H), ll(H4));
    bd_emit_open(e, "for (int64_t bb = 0; bb < nb; bb++)");
    if (lp->lens >= 0) {
        bd_emit(e, "int64_t len = L[b0 + bb];");
        bd_emit(e, "if (len > %lld) len = %lld;", ll(SEQ), ll(SEQ));
    } else {
        bd_emit(e, "const int64_t len = %lld;", ll(SEQ));
    }
    bd_emit(e, "if (step >= len) continue;");
    bd_emit(e, "const int64_t t = rev ? len - 1 - step : step;");
    bd_emit(e, "const float *restrict xr = xp + %s * %lld;", row, ll(H4));
    bd_emit(e, "const float *restrict gr = gt + bb * %lld;", ll(H4));
    bd_emit(e, "float *restrict hr = hs + bb * %lld, *restrict cr = cs + bb * %lld;", ll(H), ll(H));
    bd_emit(e, "float *restrict yr = Y ? Y + %s : ydummy; /* rows of Y, or a scratch row */", yo);
    if (D == 2 && !same_acts(lp)) {
        bd_emit_open(e, "if (dir == 0)");
        emit_lstm_cell(e, lp, 0);
        bd_emit_close(e, NULL);
        bd_emit_open(e, "else");
        emit_lstm_cell(e, lp, 1);
        bd_emit_close(e, NULL);
    } else {
        emit_lstm_cell(e, lp, 0);
    }
    bd_emit_close(e, NULL); /* bb */
    bd_emit_close(e, NULL); /* step */
    /* Steps past a sequence's length leave zeros in Y; the final states are the last valid. */
    /* (onnxruntime zeroes the final states of empty sequences as well.) */
    bd_emit_open(e, "for (int64_t bb = 0; bb < nb; bb++)");
    if (lp->lens >= 0) {
        bd_emit(e, "int64_t len = L[b0 + bb];");
        bd_emit(e, "if (len < 0) len = 0;");
        if (lp->y >= 0)
            bd_emit(e, "for (int64_t t = len; t < %lld; t++) memset(Y + %s, 0, %lld * sizeof(float));", ll(SEQ),
                    yo, ll(H));
        bd_emit(e, "if (len == 0) { memset(hs + bb * %lld, 0, %lld * sizeof(float)); memset(cs + bb * %lld, 0, "
                   "%lld * sizeof(float)); }", ll(H), ll(H), ll(H), ll(H));
    }
    if (lp->yh >= 0) bd_emit(e, "memcpy(YH + %s, hs + bb * %lld, %lld * sizeof(float));", st, ll(H), ll(H));
    if (lp->yc >= 0) bd_emit(e, "memcpy(YC + %s, cs + bb * %lld, %lld * sizeof(float));", st, ll(H), ll(H));
    bd_emit_close(e, NULL);
    return BD_OK;
}
