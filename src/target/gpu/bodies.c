/* bodies.c (gpu) — the SIMT body of every nest kind: what the threads of one thread block do to
 * compute their block.
 *
 * The block's elements (its index ranges lo/hi, decoded as on the CPU) are numbered row-major and
 * dealt out to the threads: thread t computes elements t, t + BD_THREADS, ... Each element is
 * computed whole by its thread: a map or a copy element by element, a convolution or a matrix
 * product as its reduction over input channels and taps or over K, a reduction over its reduced
 * dims. Bodies that read some dims whole (softmax axes, layer-normalised axes) deal out their rows
 * instead, and each thread walks its row. Epilogues (bias, residual, activation) are applied by
 * the same thread before the store. This is the plain SIMT fallback every dialect runs; the
 * same printer gives CUDA, HIP and OpenCL C (the dialects differ in their preludes only).
 * Every index and stride is a literal: shapes are static. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "target/gpu/gpu.h"

#define L(...) bd_print_line(&g->pr, __VA_ARGS__)
#define OPEN(...) bd_print_open(&g->pr, __VA_ARGS__)
#define CLOSE() bd_print_close(&g->pr, NULL)
#define S(...) bd_print_str(&g->pr, __VA_ARGS__)

static long long ll(int64_t v) { return (long long)v; }

static const bd_value *value_of(bd_gpu_printer *g, const bd_nest *n, int k) {
    return bd_graph_value(g->graph, n->operands[k].value);
}

static const char *type_of(bd_gpu_printer *g, const bd_nest *n, int k) {
    return bd_c_type(value_of(g, n, k)->dtype);
}

/* `((BD_G [const] T *)(base + offset))` for value v: the io buffer for graph inputs and outputs,
 * the weights for constants, the arena for the rest (views and in-place parts share their root's
 * storage, as the plan says). */
static const char *value_ptr(bd_gpu_printer *g, int v) {
    const bd_storage *s = &g->storage[v];
    const char *t = bd_c_type(bd_graph_value(g->graph, v)->dtype);
    BD_ASSERT(t);
    switch (s->kind) {
    case BD_STORE_INPUT: return S("((BD_G const %s *)(io + %lld))", t, ll(g->in_off[s->where]));
    case BD_STORE_OUTPUT: return S("((BD_G %s *)(io + %lld))", t, ll(g->out_off[s->where]));
    case BD_STORE_CONST: return S("((BD_G const %s *)(weights + %lld))", t, ll(s->where));
    case BD_STORE_ARENA: return S("((BD_G %s *)(arena + %lld))", t, ll(s->where));
    default: BD_ASSERT(!"value without storage");
    }
    return NULL;
}

/* `BD_G const T *NAME = ...;` for operand k (const unless it is written). */
static void declare(bd_gpu_printer *g, const bd_nest *n, int k, const char *name) {
    const bd_operand *o = &n->operands[k];
    const char *t = bd_c_type(bd_graph_value(g->graph, o->value)->dtype);
    const char *p = value_ptr(g, o->value);
    if (o->write || g->storage[o->value].kind == BD_STORE_CONST || g->storage[o->value].kind == BD_STORE_INPUT)
        L("BD_G %s%s *%s = %s;", o->write ? "" : "const ", t, name, p);
    else
        L("BD_G const %s *%s = (BD_G const %s *)%s;", t, name, t, p);
}

/* Opens the loop dealing the block's elements to the threads, over the iteration dims not in
 * `skip`: defines i<k> for each. The elements are numbered over the full tile, whose sizes are
 * constants (divisions by them are a multiply and a shift; by the block's own extents they were
 * a 64-bit division per dim and element), and those past a partial block's end are skipped.
 * Close with close_elements. */
static void open_elements(bd_gpu_printer *g, const bd_nest *n, const bool *skip) {
    int64_t count = 1;
    for (int k = 0; k < n->n_iter; k++)
        if (!skip || !skip[k]) count *= n->tile[k];
    const char *IT = count < INT32_MAX ? "int" : "int64_t";
    OPEN("for (%s bd_e = (%s)BD_THREAD_ID; bd_e < %lld; bd_e += BD_THREADS)", IT, IT, ll(count));
    int outer = -1; /* the outermost dim dealt out takes what is left of the index */
    for (int k = 0; k < n->n_iter && outer < 0; k++)
        if ((!skip || !skip[k]) && n->tile[k] > 1) outer = k;
    if (outer >= 0) L("%s bd_r = bd_e;", IT);
    const char *unused = "(void)bd_e;", *past = NULL;
    for (int k = n->n_iter - 1; k >= 0; k--) {
        if (skip && skip[k]) continue;
        if (n->tile[k] == 1) {
            L("const int64_t i%d = lo[%d];", k, k);
        } else if (k == outer) {
            L("const int64_t i%d = lo[%d] + bd_r;", k, k);
        } else {
            L("const int64_t i%d = lo[%d] + bd_r %% %lld;", k, k, ll(n->tile[k]));
            L("bd_r /= %lld;", ll(n->tile[k]));
        }
        if (n->extent[k] % n->tile[k] != 0) past = S("%s%si%d >= hi[%d]", past ? past : "", past ? " || " : "", k, k);
        unused = S("%s (void)i%d;", unused, k);
    }
    if (past) L("if (%s) continue;", past);
    L("%s", unused);
}

static void close_elements(bd_gpu_printer *g) { CLOSE(); }

/* sum of i<k> * stride[k] over the iteration dims, "0" when empty */
static const char *offset_expr(bd_gpu_printer *g, int r, const int64_t *stride) {
    const char *s = "0";
    for (int k = 0; k < r; k++)
        if (stride[k]) s = S("%s + i%d * %lld", s, k, ll(stride[k]));
    return s;
}

/* Element strides of operand k along each iteration dim (its AFFINE maps), 0 where it
 * broadcasts. */
static void operand_strides(bd_gpu_printer *g, const bd_nest *n, int k, int64_t *out) {
    const bd_operand *o = &n->operands[k];
    const bd_value *v = value_of(g, n, k);
    int64_t vs[BD_MAX_RANK];
    bd_dims_strides(v->rank, v->dims, vs);
    for (int i = 0; i < BD_MAX_RANK; i++) out[i] = 0;
    for (int j = 0; j < o->rank; j++)
        if (o->dims[j].kind == BD_ACCESS_AFFINE && o->dims[j].iter >= 0 && v->dims[j] != 1)
            out[o->dims[j].iter] += vs[j] * o->dims[j].scale;
}

/* The epilogue's activation applied to v (a name or parenthesised expression). */
static const char *act(bd_gpu_printer *g, const bd_nest *n, const char *v) {
    if (!n->epi.act.n) return v;
    const char *loads[1] = {v};
    return S("(%s)", bd_print_expr(&g->pr, &bd_c_dialect, &n->epi.act, loads));
}

static bool is_float_dt(int dt) { return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE; }

/* A tile operand as --precision has it multiplied: float32 rounded to tf32, fp16 or bf16 (the
 * products and sums stay float32); other dtypes as they are. */
static const char *staged(bd_gpu_printer *g, int dtype, const char *v) {
    if (dtype != BD_DT_FLOAT) return v;
    switch (g->precision) {
    case BD_PRECISION_TF32: return S("bd_tf32(%s)", v);
    case BD_PRECISION_FP16: return S("bd_h2f(bd_f2h(%s))", v);
    case BD_PRECISION_BF16: return S("bd_bf2f(bd_f2bf(%s))", v);
    default: return v;
    }
}


/* ---------------------------------------------------------------- maps and copies */

static const char *const operand_names[] = {"a", "b", "c", "e", "f", "g", "h", "k",
                                            "m", "p", "q", "r", "s", "t", "u", "v"};

static void body_elementwise(bd_gpu_printer *g, const bd_nest *n) {
    const bd_expr *x = &n->params.expr;
    int w = n->n_operands - 1;
    /* operands loaded at the element, and tables (LOOKUP) read through their pointers */
    bool loaded[BD_NEST_MAX_OPERANDS], table[BD_NEST_MAX_OPERANDS];
    const char *names[BD_NEST_MAX_OPERANDS];
    bd_expr_operands_read(x, n->n_operands, loaded, table);
    for (int k = 0; k <= w; k++) {
        BD_ASSERT(!(loaded[k] && table[k]));
        names[k] = table[k] ? S("P%d", k) : operand_names[k];
        if (k == w || loaded[k] || table[k]) declare(g, n, k, S("P%d", k));
    }
    const char *value = S("(%s)(%s)", type_of(g, n, w), bd_print_expr(&g->pr, &bd_c_dialect, x, names));
    open_elements(g, n, NULL);
    for (int k = 0; k <= w; k++) {
        if (k != w && !loaded[k]) continue;
        int64_t st[BD_MAX_RANK];
        operand_strides(g, n, k, st);
        if (k == w) L("const int64_t o%d = %s;", k, offset_expr(g, n->n_iter, st));
        else L("const %s %s = P%d[%s];", type_of(g, n, k), operand_names[k], k, offset_expr(g, n->n_iter, st));
    }
    L("P%d[o%d] = %s;", w, w, value);
    close_elements(g);
}

static void body_copy(bd_gpu_printer *g, const bd_nest *n) {
    const bd_copy_params *cp = &n->params.copy;
    int w = n->n_operands - 1;
    const char *t = type_of(g, n, w);
    declare(g, n, w, "Y");
    if (!cp->fill) declare(g, n, 0, "X");
    open_elements(g, n, NULL);
    const char *src = cp->fill ? S("(%s)%s", t, bd_print_float(&g->pr, cp->fill_value, value_of(g, n, w)->dtype))
                               : S("X[%lld + %s]", ll(cp->in_base), offset_expr(g, n->n_iter, cp->in_stride));
    L("Y[%lld + %s] = %s;", ll(cp->out_base), offset_expr(g, n->n_iter, cp->out_stride), src);
    close_elements(g);
}

static void body_constant(bd_gpu_printer *g, const bd_nest *n) {
    const bd_value *v = value_of(g, n, 0);
    int64_t off = bd_blob_add_ref(g->blob, v->constant->data, (size_t)v->constant->nbytes);
    L("BD_G unsigned char *Y = (BD_G unsigned char *)%s;", value_ptr(g, n->operands[0].value));
    L("for (int64_t j = BD_THREAD_ID; j < %lld; j += BD_THREADS) Y[j] = weights[%lld + j];",
      ll(v->constant->nbytes), ll(off));
}

static void body_pad(bd_gpu_printer *g, const bd_nest *n) {
    const bd_pad_params *pp = &n->params.pad;
    int w = n->n_operands - 1, r = n->n_iter;
    const bd_value *x = value_of(g, n, 0), *y = value_of(g, n, w);
    const char *t = type_of(g, n, w);
    declare(g, n, 0, "X");
    declare(g, n, w, "Y");
    if (pp->mode == BD_PAD_CONSTANT) {
        if (pp->value_operand >= 0) L("const %s cv = %s[0];", t, value_ptr(g, n->operands[pp->value_operand].value));
        else L("const %s cv = (%s)%s;", t, t, bd_print_float(&g->pr, pp->value, y->dtype));
    }
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    bd_dims_strides(y->rank, y->dims, ys);
    open_elements(g, n, NULL);
    const char *xo = "0", *inside = "1";
    for (int k = 0; k < r; k++) {
        long long kept = pp->kept[k];
        L("int64_t j%d = i%d - %lld;", k, k, ll(pp->pad_lo[k]));
        switch (pp->mode) {
        case BD_PAD_CONSTANT: inside = S("%s && j%d >= 0 && j%d < %lld", inside, k, k, kept); break;
        case BD_PAD_EDGE: L("j%d = j%d < 0 ? 0 : j%d >= %lld ? %lld : j%d;", k, k, k, kept, kept - 1, k); break;
        case BD_PAD_WRAP: L("j%d %%= %lld; if (j%d < 0) j%d += %lld;", k, kept, k, k, kept); break;
        case BD_PAD_REFLECT:
            if (kept == 1) {
                L("j%d = 0;", k);
            } else {
                long long period = 2 * (kept - 1);
                L("j%d %%= %lld; if (j%d < 0) j%d += %lld; if (j%d >= %lld) j%d = %lld - j%d;", k, period, k, k,
                  period, k, kept, k, period, k);
            }
            break;
        }
        xo = S("%s + (j%d + %lld) * %lld", xo, k, ll(pp->crop_lo[k]), ll(xs[k]));
    }
    const char *yo = offset_expr(g, r, ys);
    if (pp->mode == BD_PAD_CONSTANT) L("Y[%s] = (%s) ? X[%s] : cv;", yo, inside, xo);
    else L("Y[%s] = X[%s];", yo, xo);
    close_elements(g);
}

static void body_gather(bd_gpu_printer *g, const bd_nest *n) {
    const bd_gather_params *gp = &n->params.gather;
    const bd_value *x = value_of(g, n, 0), *iv = value_of(g, n, 1), *y = value_of(g, n, 2);
    int axis = gp->axis, q = gp->idx_rank, r = n->n_iter;
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK], is[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    bd_dims_strides(y->rank, y->dims, ys);
    bd_dims_strides(iv->rank, iv->dims, is);
    declare(g, n, 0, "X");
    declare(g, n, 1, "IX");
    declare(g, n, 2, "Y");
    open_elements(g, n, NULL);
    const char *xo = "0", *io = "0";
    for (int k = 0; k < r; k++) {
        if (k < axis) xo = S("%s + i%d * %lld", xo, k, ll(xs[k]));
        else if (k < axis + q) io = S("%s + i%d * %lld", io, k, ll(is[k - axis]));
        else xo = S("%s + i%d * %lld", xo, k, ll(xs[k - q + 1]));
    }
    /* negative indices count from the back; out-of-range ones are clamped (never read outside) */
    long long size = x->dims[axis];
    L("int64_t ix = (int64_t)IX[%s];", io);
    L("if (ix < 0) ix += %lld;", size);
    L("ix = ix < 0 ? 0 : ix > %lld ? %lld : ix;", size - 1, size - 1);
    L("Y[%s] = X[%s + ix * %lld];", offset_expr(g, r, ys), xo, ll(xs[axis]));
    close_elements(g);
}

/* ---------------------------------------------------------------- RoiAlign */

/* Each thread one output element (roi, channel, bin): its roi's box, then the bin's samples. */
static void body_roi_align(bd_gpu_printer *g, const bd_nest *n) {
    const bd_value *x = value_of(g, n, 0), *y = value_of(g, n, 3);
    int64_t ys[BD_MAX_RANK];
    bd_dims_strides(y->rank, y->dims, ys);
    declare(g, n, 0, "X");
    declare(g, n, 1, "ROIS");
    declare(g, n, 2, "BI");
    declare(g, n, 3, "Y");
    open_elements(g, n, NULL);
    bd_print_roi_align_box(&g->pr, g->graph, n, "ROIS + i0 * 4", "BI[i0]");
    L("const int64_t xc = (ra_n * %lld + i1) * %lld;", ll(x->dims[1]), ll(x->dims[2] * x->dims[3]));
    bd_print_roi_align_value(&g->pr, g->graph, n, "X", "xc", "i2", "i3", "y");
    L("Y[%s] = y;", offset_expr(g, 4, ys));
    close_elements(g);
}

/* ---------------------------------------------------------------- windows: conv, pooling */

/* For spatial axis i of a window op at output index o<i> = i<2+i>: the window's first input
 * index b<i> and its taps [l<i>, h<i>) that fall inside [0, extent). */
static void window_axis(bd_gpu_printer *g, int i, int64_t stride, int64_t dil, int64_t kernel,
                        int64_t pad, int64_t extent) {
    L("const int64_t b%d = i%d * %lld - %lld;", i, 2 + i, ll(stride), ll(pad));
    L("const int64_t l%d = b%d < 0 ? (-b%d + %lld) / %lld : 0;", i, i, i, ll(dil - 1), ll(dil));
    L("int64_t h%d = b%d >= %lld ? 0 : (%lld - b%d + %lld) / %lld;", i, i, ll(extent), ll(extent), i, ll(dil - 1), ll(dil));
    L("if (h%d > %lld) h%d = %lld;", i, ll(kernel), i, ll(kernel));
}

typedef struct conv_geom {
    int64_t C, M, Cg, Mg, XS, KS, YS;
    int64_t xs[BD_MAX_RANK], ks[BD_MAX_RANK], ys[BD_MAX_RANK];
} conv_geom;

static conv_geom conv_start(bd_gpu_printer *g, const bd_nest *n, const bd_conv_params *cp) {
    conv_geom G;
    const bd_value *x = value_of(g, n, cp->x), *y = value_of(g, n, cp->y);
    G.C = x->dims[1];
    G.M = y->dims[1];
    G.Cg = G.C / cp->group;
    G.Mg = G.M / cp->group;
    bd_dims_strides(cp->nsp, x->dims + 2, G.xs);
    bd_dims_strides(cp->nsp, cp->kernel, G.ks);
    bd_dims_strides(cp->nsp, y->dims + 2, G.ys);
    G.XS = G.xs[0] * x->dims[2];
    G.KS = G.ks[0] * cp->kernel[0];
    G.YS = G.ys[0] * y->dims[2];
    declare(g, n, cp->x, "X");
    declare(g, n, cp->w, "Wt");
    if (cp->b >= 0) declare(g, n, cp->b, "Bv");
    if (cp->x_zero >= 0) declare(g, n, cp->x_zero, "ZX");
    if (cp->w_zero >= 0) declare(g, n, cp->w_zero, "ZW");
    if (cp->x_scale >= 0) declare(g, n, cp->x_scale, "XSC");
    if (cp->w_scale >= 0) declare(g, n, cp->w_scale, "WSC");
    if (n->epi.residual >= 0) declare(g, n, n->epi.residual, "R");
    declare(g, n, cp->y, "Y");
    open_elements(g, n, NULL);
    L("const int64_t n = i0, m = i1;");
    return G;
}

/* y = act(acc + bias (+ residual)) at the output element; a float result of 8-bit operands is
 * float(acc) * x_scale * w_scale[m] + bias. */
static void conv_store(bd_gpu_printer *g, const bd_nest *n, const bd_conv_params *cp, const conv_geom *G) {
    const char *yo = "0";
    for (int i = 0; i < cp->nsp; i++) yo = S("%s + i%d * %lld", yo, 2 + i, ll(G->ys[i]));
    L("const int64_t yo = (n * %lld + m) * %lld + %s;", ll(G->M), ll(G->YS), yo);
    const char *sum = "acc";
    if (cp->x_scale >= 0) {
        const bd_value *ws = value_of(g, n, cp->w_scale);
        sum = S("(float)acc * (XSC[0] * WSC[%s])", ws->rank == 1 && ws->dims[0] > 1 ? "m" : "0");
    }
    const char *v = S("(%s%s%s)", sum, cp->b >= 0 ? " + Bv[m]" : "", n->epi.residual >= 0 ? " + R[yo]" : "");
    L("Y[yo] = %s;", act(g, n, v));
    close_elements(g);
}

static void body_conv(bd_gpu_printer *g, const bd_nest *n) {
    const bd_conv_params *cp = &n->params.conv;
    const bd_value *x = value_of(g, n, cp->x);
    const char *TX = type_of(g, n, cp->x), *TW = type_of(g, n, cp->w);
    /* the sum's type: int32 over 8-bit operands */
    const char *T = bd_dtype_bits(x->dtype) == 8 ? "int32_t" : type_of(g, n, cp->y);
    bool zeros = cp->x_zero >= 0 || cp->w_zero >= 0;
    conv_geom G = conv_start(g, n, cp);
    L("BD_G const %s *xg = X + (n * %lld + (m / %lld) * %lld) * %lld;", TX, ll(G.C), ll(G.Mg), ll(G.Cg), ll(G.XS));
    L("BD_G const %s *wm = Wt + m * %lld;", TW, ll(G.Cg * G.KS));
    /* 8-bit X and W (the integer convolutions) less their zero points */
    if (zeros)
        L("const %s zx = %s, zw = %s;", T, cp->x_zero >= 0 ? S("(%s)ZX[0]", T) : "0",
          cp->w_zero >= 0 ? S("(%s)ZW[0]", T) : "0");
    for (int i = 0; i < cp->nsp; i++)
        window_axis(g, i, cp->strides[i], cp->dilations[i], cp->kernel[i], cp->pads[i], x->dims[2 + i]);
    L("%s acc = 0;", T);
    OPEN("for (int64_t c = 0; c < %lld; c++)", ll(G.Cg));
    L("BD_G const %s *xc = xg + c * %lld;", TX, ll(G.XS));
    L("BD_G const %s *wc = wm + c * %lld;", TW, ll(G.KS));
    const char *xo = "0", *wo = "0";
    for (int i = 0; i < cp->nsp; i++) {
        OPEN("for (int64_t k%d = l%d; k%d < h%d; k%d++)", i, i, i, i, i);
        xo = S("%s + (b%d + k%d * %lld) * %lld", xo, i, i, ll(cp->dilations[i]), ll(G.xs[i]));
        wo = S("%s + k%d * %lld", wo, i, ll(G.ks[i]));
    }
    if (zeros) L("acc += ((%s)xc[%s] - zx) * ((%s)wc[%s] - zw);", T, xo, T, wo);
    else L("acc += xc[%s] * wc[%s];", xo, wo);
    for (int i = 0; i < cp->nsp; i++) CLOSE();
    CLOSE();
    conv_store(g, n, cp, &G);
}

/* The tiles' shared layout: As[m][k] (A's rows as they lie in memory, KT + 4 floats apart; KT + 1
 * for double) and Bs[k][n] (rows padded by one), so that the stores a warp makes while staging
 * fall in distinct banks (a transposed A's fall four to a bank), and a thread reads four k of an
 * A row as one 16-byte load. Every staging loop deals
 * elements to threads so that the slot a thread takes along the fast axis stays the same across
 * its turns: its positions and their bounds are worked out once per block, and the per-element
 * index arithmetic is 32-bit (sizes allowing) with constant divisors. */
typedef struct mm_tile {
    int TM, TN, KT, rpt; /* output tile, K slice, outputs per thread (a column) */
    int SA, SB;          /* row strides of As and Bs */
    bool vec;            /* float: A read four k at a time */
    const char *IT;      /* index type of the per-element arithmetic */
} mm_tile;

static mm_tile mm_tile_begin(bd_gpu_printer *g, const bd_nest *n, int dtype, bool fits32) {
    mm_tile t;
    t.TM = t.TN = bd_gpu_mm_tile(g->graph, n);
    t.KT = BD_GPU_MM_KSLICE;
    t.rpt = t.TM * t.TN / g->threads;
    t.vec = dtype == BD_DT_FLOAT;
    t.SA = t.KT + (t.vec ? 4 : 1);
    t.SB = t.TN + 1;
    t.IT = fits32 ? "int" : "int64_t";
    BD_ASSERT(t.rpt >= 1 && t.rpt * g->threads == t.TM * t.TN && g->threads % t.KT == 0 &&
              g->threads % t.TM == 0 && g->threads % t.TN == 0 && t.TM % t.rpt == 0 && t.KT % 4 == 0);
    int64_t need = (int64_t)(t.TM * t.SA + t.KT * t.SB) * (dtype == BD_DT_DOUBLE ? 2 : 1);
    if (need > g->smem_floats) g->smem_floats = need;
    const char *T = bd_c_type(dtype);
    L("BD_LOCAL %s *As = (BD_LOCAL %s *)smem, *Bs = As + %d; /* As[m][k], Bs[k][n] */", T, T, t.TM * t.SA);
    L("const int tc = (int)BD_THREAD_ID %% %d, tr = (int)BD_THREAD_ID / %d * %d;", t.TN, t.TN, t.rpt);
    L("%s acc[%d];", T, t.rpt);
    L("for (int r = 0; r < %d; r++) acc[r] = 0;", t.rpt);
    return t;
}

/* Opens the staging loop of `elems` elements whose fast axis has `fast` slots: the thread's slot
 * `slot` (fixed) and, per turn, its index `slow` along the other axis. */
static void stage_open(bd_gpu_printer *g, int elems, int fast, const char *slot, const char *slow) {
    OPEN("for (int j = 0; j < %d; j++)", elems / g->threads);
    L("const int %s = (int)BD_THREAD_ID %% %d, %s = (int)BD_THREAD_ID / %d + j * %d;", slot, fast, slow, fast,
      g->threads / fast);
}

/* The multiply-adds of one staged K slice, between the barriers (k in order for every output). */
static void mm_tile_step(bd_gpu_printer *g, const mm_tile *t, const char *T) {
    L("BD_BARRIER();");
    if (t->vec) {
        OPEN("for (int kk = 0; kk < %d; kk += 4)", t->KT);
        L("const float b0 = Bs[kk * %d + tc], b1 = Bs[(kk + 1) * %d + tc], b2 = Bs[(kk + 2) * %d + tc], "
          "b3 = Bs[(kk + 3) * %d + tc];", t->SB, t->SB, t->SB, t->SB);
        OPEN("for (int r = 0; r < %d; r++)", t->rpt);
        L("const float4 a = BD_LOAD4(As + (tr + r) * %d + kk);", t->SA);
        L("acc[r] += a.x * b0; acc[r] += a.y * b1; acc[r] += a.z * b2; acc[r] += a.w * b3;");
        CLOSE();
        CLOSE();
    } else {
        OPEN("for (int kk = 0; kk < %d; kk++)", t->KT);
        L("const %s b = Bs[kk * %d + tc];", T, t->SB);
        L("for (int r = 0; r < %d; r++) acc[r] += As[(tr + r) * %d + kk] * b;", t->rpt, t->SA);
        CLOSE();
    }
    L("BD_BARRIER();");
}

/* The implicit GEMM of an ungrouped convolution (bd_gpu_conv_tiled): A is the weights [M, C*taps]
 * (rows contiguous), B the block's im2col slice [C*taps, positions] gathered from the input with
 * zeros outside it, both staged in `smem` a K slice at a time; each thread keeps a column of
 * outputs (one position, TM * TN / threads channels) in registers. A block's positions are up to
 * TN: TH rows of TW columns. */
static void body_conv_tiled(bd_gpu_printer *g, const bd_nest *n) {
    const bd_conv_params *cp = &n->params.conv;
    const bd_value *x = value_of(g, n, cp->x), *y = value_of(g, n, cp->y);
    const char *T = bd_c_type(y->dtype);
    bool two = cp->nsp == 2;
    int64_t C = x->dims[1], M = y->dims[1], IH = two ? x->dims[2] : 1, IW = x->dims[1 + cp->nsp];
    int64_t OH = two ? y->dims[2] : 1, OW = y->dims[1 + cp->nsp];
    int64_t KH = two ? cp->kernel[0] : 1, KW = cp->kernel[cp->nsp - 1], KS = KH * KW, K = C * KS;
    int64_t sh = two ? cp->strides[0] : 1, sw = cp->strides[cp->nsp - 1];
    int64_t dh = two ? cp->dilations[0] : 1, dw = cp->dilations[cp->nsp - 1];
    int64_t ph = two ? cp->pads[0] : 0, pw = cp->pads[cp->nsp - 1];
    int wd = two ? 3 : 2; /* the iteration dim of the output's last axis */
    int64_t TW = n->tile[wd], TH = two ? n->tile[2] : 1;
    bool fits32 = M * K < INT32_MAX && C * IH * IW < INT32_MAX;
    declare(g, n, cp->x, "X");
    declare(g, n, cp->w, "Wt");
    if (cp->b >= 0) declare(g, n, cp->b, "Bv");
    if (n->epi.residual >= 0) declare(g, n, n->epi.residual, "R");
    declare(g, n, cp->y, "Y");
    L("const int64_t img = lo[0], m0 = lo[1], m1 = hi[1];");
    L("BD_G const %s *xi = X + img * %lld;", T, ll(C * IH * IW));
    mm_tile t = mm_tile_begin(g, n, y->dtype, fits32);
    BD_ASSERT(TH * TW <= t.TN);
    const char *IT = t.IT;
    /* the thread's position tc (row pr, column pc of the block's), which it stages and stores */
    L("const int pr = tc / %lld, pc = tc %% %lld;", ll(TW), ll(TW));
    L("const int64_t oh0 = %s, ow0 = lo[%d];", two ? "lo[2]" : "0", wd);
    L("const int pin = tc < %lld && %sow0 + pc < hi[%d];", ll(TH * TW), two ? "oh0 + pr < hi[2] && " : "", wd);
    L("const %s ihb = (%s)(oh0 + pr) * %lld - %lld, iwb = (%s)(ow0 + pc) * %lld - %lld;", IT, IT, ll(sh), ll(ph), IT,
      ll(sw), ll(pw));
    OPEN("for (%s k0 = 0; k0 < %lld; k0 += %d)", IT, ll(K), t.KT);
    stage_open(g, t.KT * t.TM, t.KT, "ka", "mm");
    L("const %s m = (%s)m0 + mm, k = k0 + ka;", IT, IT);
    L("As[mm * %d + ka] = m < m1 && k < %lld ? %s : (%s)0;", t.SA, ll(K),
      staged(g, y->dtype, S("Wt[(int64_t)m * %lld + k]", ll(K))), T);
    CLOSE();
    OPEN("for (int j = 0; j < %d; j++)", t.KT * t.TN / g->threads);
    L("const int kk = (int)BD_THREAD_ID / %d + j * %d;", t.TN, g->threads / t.TN);
    L("const %s k = k0 + kk;", IT);
    L("%s v = 0;", T);
    OPEN("if (pin && k < %lld)", ll(K));
    L("const %s c = k / %lld, tap = k %% %lld;", IT, ll(KS), ll(KS));
    L("const %s ih = ihb + tap / %lld * %lld, iw = iwb + tap %% %lld * %lld;", IT, ll(KW), ll(dh), ll(KW), ll(dw));
    L("if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld) v = %s;", ll(IH), ll(IW),
      staged(g, y->dtype, S("xi[(c * %lld + ih) * %lld + iw]", ll(IH), ll(IW))));
    CLOSE();
    L("Bs[kk * %d + tc] = v;", t.SB);
    CLOSE();
    mm_tile_step(g, &t, T);
    CLOSE();
    L("if (!pin) return;");
    L("const int64_t oh = oh0 + pr, ow = ow0 + pc;");
    OPEN("for (int r = 0; r < %d; r++)", t.rpt);
    L("const int64_t m = m0 + tr + r;");
    L("if (m >= m1) continue;");
    L("const int64_t yo = (img * %lld + m) * %lld + oh * %lld + ow;", ll(M), ll(OH * OW), ll(OW));
    L("(void)oh;");
    const char *v = S("(acc[r]%s%s)", cp->b >= 0 ? " + Bv[m]" : "", n->epi.residual >= 0 ? " + R[yo]" : "");
    L("Y[yo] = %s;", act(g, n, v));
    CLOSE();
}

/* Output-stationary: output o gathers input i = (o + pad - k * dil) / stride for every tap k
 * where the division is exact and i lies inside the input. */
static void body_conv_transpose(bd_gpu_printer *g, const bd_nest *n) {
    const bd_conv_params *cp = &n->params.conv;
    const bd_value *x = value_of(g, n, cp->x);
    const char *T = type_of(g, n, cp->y);
    conv_geom G = conv_start(g, n, cp);
    L("const int64_t grp = m / %lld, ml = m - grp * %lld;", ll(G.Mg), ll(G.Mg));
    L("BD_G const %s *xg = X + (n * %lld + grp * %lld) * %lld;", T, ll(G.C), ll(G.Cg), ll(G.XS));
    L("BD_G const %s *wg = Wt + (grp * %lld + ml) * %lld;", T, ll(G.Cg * G.Mg), ll(G.KS));
    L("%s acc = 0;", T);
    const char *xo = "0", *wo = "0";
    for (int i = 0; i < cp->nsp; i++) {
        int64_t s = cp->strides[i];
        OPEN("for (int64_t k%d = 0; k%d < %lld; k%d++)", i, i, ll(cp->kernel[i]), i);
        L("const int64_t q%d = i%d + %lld - k%d * %lld;", i, 2 + i, ll(cp->pads[i]), i, ll(cp->dilations[i]));
        L("if (q%d < 0) break;", i);
        if (s > 1) L("if (q%d %% %lld) continue;", i, ll(s));
        L("const int64_t x%d = q%d / %lld;", i, i, ll(s));
        L("if (x%d >= %lld) continue;", i, ll(x->dims[2 + i]));
        xo = S("%s + x%d * %lld", xo, i, ll(G.xs[i]));
        wo = S("%s + k%d * %lld", wo, i, ll(G.ks[i]));
    }
    L("const int64_t xo = %s, wo = %s;", xo, wo);
    L("for (int64_t c = 0; c < %lld; c++) acc += xg[c * %lld + xo] * wg[c * %lld + wo];", ll(G.Cg), ll(G.XS),
      ll(G.Mg * G.KS));
    for (int i = 0; i < cp->nsp; i++) CLOSE();
    conv_store(g, n, cp, &G);
}

static const char *lowest(int dtype) {
    switch (dtype) {
    case BD_DT_FLOAT: return "-INFINITY";
    case BD_DT_DOUBLE: return "(double)-INFINITY";
    case BD_DT_INT8: return "-128";
    default: return "0";
    }
}

static void body_pool(bd_gpu_printer *g, const bd_nest *n) {
    const bd_pool_params *pp = &n->params.pool;
    const bd_value *x = value_of(g, n, pp->x), *y = value_of(g, n, pp->y);
    const char *T = bd_c_type(x->dtype);
    int nsp = pp->nsp;
    int64_t C = x->dims[1], xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(nsp, x->dims + 2, xs);
    bd_dims_strides(nsp, y->dims + 2, ys);
    int64_t XS = xs[0] * x->dims[2], YS = ys[0] * y->dims[2];
    declare(g, n, pp->x, "X");
    declare(g, n, pp->y, "Y");
    if (pp->indices >= 0) declare(g, n, pp->indices, "Ind");
    open_elements(g, n, NULL);
    L("const int64_t plane = i0 * %lld + i1;", ll(C));
    L("BD_G const %s *xc = X + plane * %lld;", T, ll(XS));
    const char *xo = "0", *yo = "0", *io = "0", *first = "0", *cnt = "1";
    int64_t cm = 1; /* column-major stride */
    for (int i = 0; i < nsp; i++) {
        int64_t dl = pp->dilations[i], K = pp->kernel[i];
        window_axis(g, i, pp->strides[i], dl, K, pp->pads[i], x->dims[2 + i]);
        if (pp->count_include_pad) {
            /* taps inside the padded input [-pad_begin, I + pad_end) */
            int64_t end = x->dims[2 + i] + pp->pads[nsp + i];
            L("int64_t e%d = b%d >= %lld ? 0 : (%lld - b%d + %lld) / %lld;", i, i, ll(end), ll(end), i, ll(dl - 1), ll(dl));
            L("if (e%d > %lld) e%d = %lld;", i, ll(K), i, ll(K));
        }
        const char *pos = S("(b%d + k%d * %lld)", i, i, ll(dl)), *pos0 = S("(b%d + l%d * %lld)", i, i, ll(dl));
        int64_t is = pp->column_major ? cm : xs[i];
        xo = S("%s + %s * %lld", xo, pos, ll(xs[i]));
        io = S("%s + %s * %lld", io, pos, ll(is));
        first = S("%s + %s * %lld", first, pos0, ll(is));
        yo = S("%s + i%d * %lld", yo, 2 + i, ll(ys[i]));
        cnt = pp->count_include_pad ? S("%s * e%d", cnt, i) : S("%s * (h%d - l%d)", cnt, i, i);
        cm *= x->dims[2 + i];
    }
    if (pp->is_max) {
        L("%s best = %s;", T, lowest(x->dtype));
        if (pp->indices >= 0) L("int64_t at = %s;", first);
    } else {
        L("%s acc = 0;", T);
    }
    for (int i = 0; i < nsp; i++) OPEN("for (int64_t k%d = l%d; k%d < h%d; k%d++)", i, i, i, i, i);
    L("const %s v = xc[%s];", T, xo);
    if (pp->is_max && pp->indices >= 0) L("if (v > best) { best = v; at = %s; }", io);
    else if (pp->is_max) L("best = v > best ? v : best;");
    else L("acc += v;");
    for (int i = 0; i < nsp; i++) CLOSE();
    L("const int64_t yo = plane * %lld + %s;", ll(YS), yo);
    if (pp->is_max) {
        L("Y[yo] = best;");
        if (pp->indices >= 0) L("Ind[yo] = plane * %lld + at;", ll(XS));
    } else {
        L("Y[yo] = acc / (%s)(%s);", T, cnt);
    }
    close_elements(g);
}

static void body_global_pool(bd_gpu_printer *g, const bd_nest *n) {
    const bd_global_pool_params *gp = &n->params.global_pool;
    const bd_value *x = value_of(g, n, gp->x);
    const char *T = bd_c_type(x->dtype);
    int64_t C = x->dims[1], Sz = gp->spatial;
    declare(g, n, gp->x, "X");
    declare(g, n, gp->y, "Y");
    open_elements(g, n, NULL);
    L("BD_G const %s *xc = X + (i0 * %lld + i1) * %lld;", T, ll(C), ll(Sz));
    L("%s s0 = 0, s1 = 0;", T);
    L("for (int64_t j = 0; j + 1 < %lld; j += 2) { s0 += xc[j]; s1 += xc[j + 1]; }", ll(Sz));
    if (Sz % 2) L("s0 += xc[%lld];", ll(Sz - 1));
    L("Y[i0 * %lld + i1] = (s0 + s1) / (%s)%lld;", ll(C), T, ll(Sz));
    close_elements(g);
}

/* ---------------------------------------------------------------- matrix products */

/* C's element strides along M and N (C right-aligned on [M, N], 0 where it broadcasts), and the
 * operand pointers both matrix-product bodies declare. Whether C enters the result. */
static bool matmul_start(bd_gpu_printer *g, const bd_nest *n, int64_t *cs_m, int64_t *cs_n) {
    const bd_matmul_params *mp = &n->params.matmul;
    bool add_c = mp->c >= 0 && mp->beta != 0.0f;
    *cs_m = *cs_n = 0;
    if (add_c) {
        const bd_value *c = value_of(g, n, mp->c);
        int64_t st[BD_MAX_RANK];
        bd_dims_strides(c->rank, c->dims, st);
        if (c->rank >= 1 && c->dims[c->rank - 1] != 1) *cs_n = st[c->rank - 1];
        if (c->rank >= 2 && c->dims[c->rank - 2] != 1) *cs_m = st[c->rank - 2];
    }
    declare(g, n, mp->a, "A");
    declare(g, n, mp->b, "B");
    if (add_c) declare(g, n, mp->c, "Cv");
    if (mp->a_zero >= 0) declare(g, n, mp->a_zero, "ZA");
    if (mp->b_zero >= 0) declare(g, n, mp->b_zero, "ZB");
    if (n->epi.residual >= 0) declare(g, n, n->epi.residual, "R");
    declare(g, n, mp->y, "Y");
    return add_c;
}

static void body_matmul(bd_gpu_printer *g, const bd_nest *n) {
    const bd_matmul_params *mp = &n->params.matmul;
    const bd_value *y = value_of(g, n, mp->y);
    const char *T = bd_c_type(y->dtype);
    bool fl = is_float_dt(y->dtype);
    int64_t lda = mp->trans_a ? mp->M : mp->K, ldb = mp->trans_b ? mp->K : mp->N, ldy = mp->N;
    int64_t cs_m, cs_n;
    bool add_c = matmul_start(g, n, &cs_m, &cs_n);
    open_elements(g, n, NULL);
    const char *ao = "0", *bo = "0", *yo = "0";
    for (int j = 0; j < mp->n_batch; j++) {
        if (mp->a_bstride[j]) ao = S("%s + i%d * %lld", ao, j, ll(mp->a_bstride[j]));
        if (mp->b_bstride[j]) bo = S("%s + i%d * %lld", bo, j, ll(mp->b_bstride[j]));
        yo = S("%s + i%d * %lld", yo, j, ll(mp->y_bstride[j]));
    }
    L("const int64_t row = %s, col = %s;", mp->m_iter >= 0 ? S("i%d", mp->m_iter) : "0",
      mp->n_iter >= 0 ? S("i%d", mp->n_iter) : "0");
    /* A and B in their own types (8-bit for MatMulInteger), less their zero points */
    L("BD_G const %s *ar = A + %s + %s;", bd_c_type(value_of(g, n, mp->a)->dtype), ao,
      mp->trans_a ? "row" : S("row * %lld", ll(lda)));
    L("BD_G const %s *bc = B + %s + %s;", bd_c_type(value_of(g, n, mp->b)->dtype), bo,
      mp->trans_b ? S("col * %lld", ll(ldb)) : "col");
    L("const %s za = %s, zb = %s;", T, mp->a_zero >= 0 ? S("(%s)ZA[0]", T) : "0",
      mp->b_zero >= 0 ? S("(%s)ZB[0]", T) : "0");
    L("%s acc = 0;", T);
    L("for (int64_t k = 0; k < %lld; k++) acc += ((%s)ar[k * %lld] - za) * ((%s)bc[k * %lld] - zb);", ll(mp->K), T,
      ll(mp->trans_a ? lda : 1), T, ll(mp->trans_b ? 1 : ldb));
    L("const int64_t yo = %s + row * %lld + col;", yo, ll(ldy));
    const char *cv = add_c ? S("Cv[row * %lld + col * %lld]", ll(cs_m), ll(cs_n)) : NULL;
    const char *v = "acc";
    if (fl) {
        if (mp->alpha != 1.0f) v = S("%s * %s", bd_print_float(&g->pr, mp->alpha, y->dtype), v);
        if (add_c) v = mp->beta == 1.0f ? S("%s + %s", v, cv) : S("%s + %s * %s", v, bd_print_float(&g->pr, mp->beta, y->dtype), cv);
    } else if (mp->alpha != 1.0f || (add_c && mp->beta != 1.0f)) {
        const char *dv = S("%s * (double)acc", bd_print_float(&g->pr, mp->alpha, BD_DT_DOUBLE));
        if (add_c) dv = S("%s + %s * (double)%s", dv, bd_print_float(&g->pr, mp->beta, BD_DT_DOUBLE), cv);
        v = S("bd_f2i_%s(%s)", T, dv);
    } else if (add_c) {
        v = S("%s + %s", v, cv);
    }
    if (n->epi.residual >= 0) v = S("%s + R[yo]", v);
    L("const %s v = (%s)(%s);", T, T, v);
    L("Y[yo] = %s;", act(g, n, "v"));
    close_elements(g);
}


/* ATTENTION (fuse/attention.c): the block's rows dealt to the threads. A thread computes its
 * row's scores, each a dot product over K, into a private array, applies the score expression
 * and the softmax there, then each output column as the scores' dot product with V's column:
 * the products' work once, the scores in no buffer. */
static void body_attention(bd_gpu_printer *g, const bd_nest *n) {
    const bd_attention_params *ap = &n->params.attention;
    const bd_matmul_params *qk = &ap->qk, *pv = &ap->pv;
    const int r = n->n_iter, row = r - 2, col = r - 1;
    const int64_t N = qk->N, K = qk->K, Dv = pv->N;
    const int64_t lda = qk->trans_a ? qk->M : K, ldb = qk->trans_b ? K : N, ldv = pv->trans_b ? pv->K : Dv;
    declare(g, n, qk->a, "A");
    declare(g, n, qk->b, "B");
    declare(g, n, pv->b, "V");
    declare(g, n, pv->y, "Y");
    const char *names[BD_NEST_MAX_OPERANDS];
    bool loaded[BD_NEST_MAX_OPERANDS] = {false};
    for (int t = 0; t < ap->score.n; t++)
        if (ap->score.node[t].op == BD_EXPR_LOAD) loaded[ap->score.node[t].operand] = true;
    for (int k = 0; k < n->n_operands; k++) {
        names[k] = k == ap->s ? "s_" : S("x%d_", k);
        if (loaded[k] && k != ap->s) declare(g, n, k, S("P%d", k));
    }
    bool skip[BD_MAX_RANK] = {false};
    skip[col] = true;
    open_elements(g, n, skip);
    const char *ao = "0", *bo = "0", *vo = "0", *yo = "0";
    for (int j = 0; j < row; j++) {
        if (qk->a_bstride[j]) ao = S("%s + i%d * %lld", ao, j, ll(qk->a_bstride[j]));
        if (qk->b_bstride[j]) bo = S("%s + i%d * %lld", bo, j, ll(qk->b_bstride[j]));
        if (pv->b_bstride[j]) vo = S("%s + i%d * %lld", vo, j, ll(pv->b_bstride[j]));
        yo = S("%s + i%d * %lld", yo, j, ll(pv->y_bstride[j]));
    }
    L("BD_G const float *ar = A + %s + %s;", ao, qk->trans_a ? S("i%d", row) : S("i%d * %lld", row, ll(lda)));
    L("float sr[%lld];", ll(N));
    L("float mx = -INFINITY, sum = 0;");
    OPEN("for (int64_t i%d = 0; i%d < %lld; i%d++)", col, col, ll(N), col);
    L("BD_G const float *bc = B + %s + %s;", bo, qk->trans_b ? S("i%d * %lld", col, ll(ldb)) : S("i%d", col));
    L("float s_ = 0;");
    L("for (int64_t k = 0; k < %lld; k++) s_ += ar[k * %lld] * bc[k * %lld];", ll(K), ll(qk->trans_a ? lda : 1),
      ll(qk->trans_b ? 1 : ldb));
    if (ap->score.n) {
        for (int k = 0; k < n->n_operands; k++) {
            if (!loaded[k] || k == ap->s) continue;
            L("const %s %s = P%d[%s];", type_of(g, n, k), names[k], k, offset_expr(g, r, ap->score_stride[k]));
        }
        L("s_ = (float)(%s);", bd_print_expr(&g->pr, &bd_c_dialect, &ap->score, names));
    }
    L("sr[i%d] = s_;", col);
    L("mx = (s_ > mx || s_ != s_) ? s_ : mx;");
    CLOSE();
    L("for (int64_t j = 0; j < %lld; j++) { sr[j] = expf(sr[j] - mx); sum += sr[j]; }", ll(N));
    L("const float inv = 1.0f / sum;");
    OPEN("for (int64_t c = 0; c < %lld; c++)", ll(Dv));
    L("BD_G const float *vc = V + %s + %s;", vo, pv->trans_b ? S("c * %lld", ll(ldv)) : "c");
    L("float acc = 0;");
    L("for (int64_t j = 0; j < %lld; j++) acc += sr[j] * vc[j * %lld];", ll(N), ll(pv->trans_b ? 1 : ldv));
    L("Y[%s + i%d * %lld + c] = acc * inv;", yo, row, ll(Dv));
    CLOSE();
    close_elements(g);
}

/* A float matrix product over shared memory: the block's output tile (at most T x T, one batch
 * index) is computed from K slices of A and B staged in `smem`, each thread keeping a column of
 * T * T / threads outputs in registers. Loads follow each operand's layout (its contiguous axis
 * fastest across the threads); outside the matrices they stage zeros. */
static void body_matmul_tiled(bd_gpu_printer *g, const bd_nest *n) {
    const bd_matmul_params *mp = &n->params.matmul;
    const bd_value *y = value_of(g, n, mp->y);
    const char *T = bd_c_type(y->dtype);
    int64_t lda = mp->trans_a ? mp->M : mp->K, ldb = mp->trans_b ? mp->K : mp->N, ldy = mp->N;
    int64_t cs_m, cs_n;
    bool add_c = matmul_start(g, n, &cs_m, &cs_n);
    const char *ao = "0", *bo = "0", *yo = "0";
    for (int j = 0; j < mp->n_batch; j++) {
        if (mp->a_bstride[j]) ao = S("%s + lo[%d] * %lld", ao, j, ll(mp->a_bstride[j]));
        if (mp->b_bstride[j]) bo = S("%s + lo[%d] * %lld", bo, j, ll(mp->b_bstride[j]));
        yo = S("%s + lo[%d] * %lld", yo, j, ll(mp->y_bstride[j]));
    }
    L("const int64_t m0 = lo[%d], m1 = hi[%d], n0 = lo[%d], n1 = hi[%d];", mp->m_iter, mp->m_iter, mp->n_iter, mp->n_iter);
    L("BD_G const %s *Ab = A + %s;", T, ao);
    L("BD_G const %s *Bb = B + %s;", T, bo);
    L("const int64_t yb = %s;", yo);
    /* the offsets inside one batch's A and B, and K, in 32 bits where they fit */
    mm_tile t = mm_tile_begin(g, n, y->dtype, mp->M * mp->K < INT32_MAX && mp->K * mp->N < INT32_MAX);
    const char *IT = t.IT;
    OPEN("for (%s k0 = 0; k0 < %lld; k0 += %d)", IT, ll(mp->K), t.KT);
    /* A: m fastest when A is stored transposed (K x M), else k fastest */
    if (mp->trans_a) stage_open(g, t.KT * t.TM, t.TM, "mm", "kk");
    else stage_open(g, t.KT * t.TM, t.KT, "kk", "mm");
    L("const %s m = (%s)m0 + mm, k = k0 + kk;", IT, IT);
    L("As[mm * %d + kk] = m < m1 && k < %lld ? %s : (%s)0;", t.SA, ll(mp->K),
      staged(g, y->dtype, S("Ab[%s]", mp->trans_a ? S("k * %lld + m", ll(lda)) : S("m * %lld + k", ll(lda)))), T);
    CLOSE();
    if (mp->trans_b) stage_open(g, t.KT * t.TN, t.KT, "kk", "nn");
    else stage_open(g, t.KT * t.TN, t.TN, "nn", "kk");
    L("const %s c = (%s)n0 + nn, k = k0 + kk;", IT, IT);
    L("Bs[kk * %d + nn] = c < n1 && k < %lld ? %s : (%s)0;", t.SB, ll(mp->K),
      staged(g, y->dtype, S("Bb[%s]", mp->trans_b ? S("c * %lld + k", ll(ldb)) : S("k * %lld + c", ll(ldb)))), T);
    CLOSE();
    mm_tile_step(g, &t, T);
    CLOSE();
    OPEN("for (int r = 0; r < %d; r++)", t.rpt);
    L("const int64_t row = m0 + tr + r, col = n0 + tc;");
    L("if (row >= m1 || col >= n1) continue;");
    L("const int64_t yo = yb + row * %lld + col;", ll(ldy));
    const char *v = "acc[r]";
    if (mp->alpha != 1.0f) v = S("%s * %s", bd_print_float(&g->pr, mp->alpha, y->dtype), v);
    if (add_c) {
        const char *cv = S("Cv[row * %lld + col * %lld]", ll(cs_m), ll(cs_n));
        v = mp->beta == 1.0f ? S("%s + %s", v, cv) : S("%s + %s * %s", v, bd_print_float(&g->pr, mp->beta, y->dtype), cv);
    }
    if (n->epi.residual >= 0) v = S("%s + R[yo]", v);
    L("const %s v = %s;", T, v);
    L("Y[yo] = %s;", act(g, n, "v"));
    CLOSE();
}

/* ---------------------------------------------------------------- reductions */

static void body_reduce(bd_gpu_printer *g, const bd_nest *n) {
    const bd_reduce_params *prm = &n->params.reduce;
    const bd_value *x = value_of(g, n, 0), *y = value_of(g, n, 1);
    int dt = x->dtype;
    const char *t = bd_c_type(dt);
    bool fl = is_float_dt(dt);
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    bd_dims_strides(y->rank, y->dims, ys);
    const char *acc_t = fl || prm->kind == BD_REDUCE_MAX ? t : bd_dtype_is_signed(dt) ? "int64_t" : "uint64_t";
    const char *init = "0";
    if (prm->kind == BD_REDUCE_MAX) {
        if (fl) init = "-INFINITY";
        else if (dt == BD_DT_INT8) init = "INT8_MIN";
        else if (dt == BD_DT_INT16) init = "INT16_MIN";
        else if (dt == BD_DT_INT32) init = "INT32_MIN";
        else if (dt == BD_DT_INT64) init = "INT64_MIN";
    }
    declare(g, n, 0, "X");
    declare(g, n, 1, "Y");
    open_elements(g, n, NULL);
    const char *xo = "0";
    for (int k = 0; k < prm->in_rank; k++)
        if (prm->iter_of[k] >= 0 && x->dims[k] != 1) xo = S("%s + i%d * %lld", xo, prm->iter_of[k], ll(xs[k]));
    L("BD_G const %s *xb = X + %s;", t, xo);
    L("%s acc = %s;", acc_t, init);
    const char *ro = "0";
    int opened = 0;
    for (int k = 0; k < prm->in_rank; k++) {
        if (prm->iter_of[k] >= 0) continue;
        OPEN("for (int64_t r%d = 0; r%d < %lld; r%d++)", k, k, ll(x->dims[k]), k);
        ro = S("%s + r%d * %lld", ro, k, ll(xs[k]));
        opened++;
    }
    L("const %s v = xb[%s];", t, ro);
    if (prm->kind != BD_REDUCE_MAX) L("acc += v;");
    else if (fl) L("acc = (v > acc || v != v) ? v : acc;");
    else L("acc = v > acc ? v : acc;");
    for (int i = 0; i < opened; i++) CLOSE();
    const char *fin = S("(%s)acc", t);
    if (prm->kind == BD_REDUCE_MEAN) {
        if (fl) fin = S("acc / (%s)%lld", t, ll(prm->count)); /* count 0: NaN, numpy's mean of nothing */
        else fin = prm->count ? S("(%s)(acc / %lld)", t, ll(prm->count)) : "0";
    }
    L("Y[%s] = %s;", offset_expr(g, n->n_iter, ys), fin);
    close_elements(g);
}

static void body_softmax(bd_gpu_printer *g, const bd_nest *n) {
    const bd_softmax_params *prm = &n->params.softmax;
    const bd_value *x = value_of(g, n, 0);
    int dt = x->dtype;
    const char *t = bd_c_type(dt), *ex = dt == BD_DT_FLOAT ? "expf" : "exp", *lg = dt == BD_DT_FLOAT ? "logf" : "log";
    int64_t xs[BD_MAX_RANK], cnt = 1;
    bd_dims_strides(x->rank, x->dims, xs);
    bool skip[BD_MAX_RANK] = {false};
    for (int k = prm->first; k <= prm->last; k++) {
        skip[k] = true;
        cnt *= x->dims[k];
    }
    int64_t st[BD_MAX_RANK] = {0};
    for (int k = 0; k < x->rank; k++)
        if (!skip[k]) st[k] = xs[k];
    declare(g, n, 0, "X");
    declare(g, n, 1, "Y");
    open_elements(g, n, skip);
    int64_t step = xs[prm->last];
    L("const int64_t base = %s;", offset_expr(g, x->rank, st));
    L("%s mx = -INFINITY, sum = 0;", t);
    L("for (int64_t j = 0; j < %lld; j++) { const %s v = X[base + j * %lld]; mx = (v > mx || v != v) ? v : mx; }",
      ll(cnt), t, ll(step));
    L("for (int64_t j = 0; j < %lld; j++) sum += %s(X[base + j * %lld] - mx);", ll(cnt), ex, ll(step));
    if (prm->log) {
        L("const %s ls = %s(sum);", t, lg);
        L("for (int64_t j = 0; j < %lld; j++) Y[base + j * %lld] = X[base + j * %lld] - mx - ls;", ll(cnt), ll(step), ll(step));
    } else {
        L("const %s inv = (%s)1 / sum;", t, t);
        L("for (int64_t j = 0; j < %lld; j++) Y[base + j * %lld] = %s(X[base + j * %lld] - mx) * inv;", ll(cnt),
          ll(step), ex, ll(step));
    }
    close_elements(g);
}

/* ---------------------------------------------------------------- normalisations */

static void body_batchnorm(bd_gpu_printer *g, const bd_nest *n, const bd_norm_params *np) {
    const bd_value *x = value_of(g, n, np->x);
    const char *T = bd_c_type(x->dtype);
    int r = x->rank;
    int64_t C = np->channels, params = np->per_activation ? C * np->inner : C;
    int64_t xs[BD_MAX_RANK];
    bd_dims_strides(r, x->dims, xs);
    declare(g, n, np->x, "X");
    declare(g, n, np->y, "Y");
    if (np->folded) {
        size_t nbytes;
        unsigned char *buf = bd_batchnorm_factors(
            value_of(g, n, np->scale)->constant, value_of(g, n, np->bias)->constant,
            value_of(g, n, np->mean)->constant, value_of(g, n, np->var)->constant, np->epsilon, params,
            x->dtype, &nbytes);
        int64_t off = bd_blob_add(g->blob, buf, nbytes);
        free(buf);
        L("BD_G const %s *Pa = (BD_G const %s *)(weights + %lld);", T, T, ll(off));
        L("BD_G const %s *Pb = Pa + %lld;", T, ll(params));
    } else {
        declare(g, n, np->scale, "Ps");
        declare(g, n, np->bias, "Pbias");
        declare(g, n, np->mean, "Pm");
        declare(g, n, np->var, "Pv");
    }
    open_elements(g, n, NULL);
    L("const int64_t xo = %s;", offset_expr(g, r, xs));
    const char *inner = "0";
    for (int k = 2; k < r; k++) inner = S("%s + i%d * %lld", inner, k, ll(xs[k]));
    L("const int64_t p = %s;", np->per_activation ? S("i1 * %lld + %s", ll(np->inner), inner) : (r > 1 ? "i1" : "0"));
    if (np->folded) {
        L("const %s v = X[xo] * Pa[p] + Pb[p];", T);
    } else {
        L("const double ad = (double)Ps[p] / sqrt((double)Pv[p] + %s);", bd_print_float(&g->pr, np->epsilon, BD_DT_DOUBLE));
        L("const %s v = X[xo] * (%s)ad + (%s)((double)Pbias[p] - (double)Pm[p] * ad);", T, T, T);
    }
    L("Y[xo] = %s;", act(g, n, "v")); /* an absorbed activation (fuse.c) */
    close_elements(g);
}

static void body_layernorm(bd_gpu_printer *g, const bd_nest *n, const bd_norm_params *np) {
    const bd_value *x = value_of(g, n, np->x);
    const char *T = bd_c_type(x->dtype);
    int r = x->rank, axis = np->axis;
    int64_t xs[BD_MAX_RANK], ss[BD_MAX_RANK], bs[BD_MAX_RANK] = {0}, cols = np->cols;
    bd_dims_strides(r, x->dims, xs);
    operand_strides(g, n, np->scale, ss);
    if (np->bias >= 0) operand_strides(g, n, np->bias, bs);
    declare(g, n, np->x, "X");
    declare(g, n, np->y, "Y");
    declare(g, n, np->scale, "Sc");
    if (np->bias >= 0) declare(g, n, np->bias, "Bv");
    if (np->mean_out >= 0) declare(g, n, np->mean_out, "Mo");
    if (np->inv_out >= 0) declare(g, n, np->inv_out, "Io");
    bool skip[BD_MAX_RANK] = {false};
    for (int k = axis; k < r; k++) skip[k] = true;
    open_elements(g, n, skip);
    const char *row = "0";
    for (int k = 0; k < axis; k++) row = S("%s + i%d * %lld", row, k, ll(xs[k] / cols));
    L("const int64_t row = %s;", row);
    L("BD_G const %s *xr = X + row * %lld;", T, ll(cols));
    L("BD_G %s *yr = Y + row * %lld;", T, ll(cols));
    L("%s mean = 0, var = 0;", T);
    if (np->kind != BD_NORM_RMS) {
        L("for (int64_t j = 0; j < %lld; j++) mean += xr[j];", ll(cols));
        L("mean /= (%s)%lld;", T, ll(cols));
    }
    L("for (int64_t j = 0; j < %lld; j++) { const %s d = xr[j] - mean; var += d * d; }", ll(cols), T);
    L("var /= (%s)%lld;", T, ll(cols));
    L("const %s inv = (%s)1 / %s(var + %s);", T, T, x->dtype == BD_DT_FLOAT ? "sqrtf" : "sqrt",
      bd_print_float(&g->pr, np->epsilon, x->dtype));
    OPEN("for (int64_t j = 0; j < %lld; j++)", ll(cols));
    /* the normalised axes' indices of column j, for scale and bias through their own strides */
    L("int64_t q = j;");
    const char *so = "0", *bo = "0";
    for (int k = r - 1; k >= axis; k--) {
        L("const int64_t k%d = q %% %lld; q /= %lld;", k, ll(x->dims[k]), ll(x->dims[k]));
        if (ss[k]) so = S("%s + k%d * %lld", so, k, ll(ss[k]));
        if (bs[k]) bo = S("%s + k%d * %lld", bo, k, ll(bs[k]));
    }
    L("(void)q;");
    L("yr[j] = (xr[j] - mean) * inv * Sc[%s]%s;", so, np->bias >= 0 ? S(" + Bv[%s]", bo) : "");
    CLOSE();
    if (np->mean_out >= 0) L("Mo[row] = mean;");
    if (np->inv_out >= 0) L("Io[row] = inv;");
    close_elements(g);
}


/* Resize, nearest and linear: per active dim, tables indexed by the output index (embedded with
 * the weights): T the first input offset, D the offset to the second (linear), W its weight,
 * E where the output takes the extrapolation value. Linear output is the nested lerp over the
 * linear dims. */
static const char *lerp(bd_gpu_printer *g, const int *lin, int nl, int level, const char *off, const char *wt) {
    if (level == nl) return S("(%s)X[%s]", wt, off);
    int k = lin[level];
    const char *a = lerp(g, lin, nl, level + 1, off, wt);
    const char *b = lerp(g, lin, nl, level + 1, S("%s + dd%d", off, k), wt);
    return S("(vv%d * %s + ww%d * %s)", k, a, k, b);
}

/* The filter modes (cubic, antialiased linear): per active dim k, taps[k] taps per output index,
 * TO the tap's input offset, TW its weight, E the outside flags; the output is the separable sum
 * of X over the taps of every active dim, one nested loop per dim. */
static void filter_sum(bd_gpu_printer *g, const int *act, int na, int level, const char *off, const char *wt,
                       const int *taps) {
    int k = act[level];
    L("%s s%d = 0;", wt, level);
    OPEN("for (int t%d = 0; t%d < %d; t%d++)", k, k, taps[k], k);
    const char *at = S("%s + TO%d[i%d * %d + t%d]", off, k, k, taps[k], k);
    if (level + 1 == na) {
        L("s%d += TW%d[i%d * %d + t%d] * (%s)X[%s];", level, k, k, taps[k], k, wt, at);
    } else {
        filter_sum(g, act, na, level + 1, at, wt, taps);
        L("s%d += TW%d[i%d * %d + t%d] * s%d;", level, k, k, taps[k], k, level + 1);
    }
    CLOSE();
}

static void body_resize_filter(bd_gpu_printer *g, const bd_nest *n) {
    const bd_resize_params *rp = &n->params.resize;
    const bd_value *x = value_of(g, n, 0), *y = value_of(g, n, 1);
    const char *t = bd_c_type(y->dtype);
    bool dbl = y->dtype == BD_DT_DOUBLE;
    const char *wt = dbl ? "double" : "float";
    int r = n->n_iter, act[BD_MAX_RANK], na = 0, taps[BD_MAX_RANK] = {0};
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    bd_dims_strides(y->rank, y->dims, ys);
    declare(g, n, 0, "X");
    declare(g, n, 1, "Y");
    const char *out = NULL;
    for (int k = 0; k < r; k++) {
        if (!rp->active[k]) continue;
        size_t cnt = (size_t)rp->out_extent[k], nt = cnt * (size_t)rp->taps[k];
        int64_t *idx = malloc((nt + 1) * sizeof *idx);
        float *wf = malloc((nt + 1) * sizeof *wf);
        unsigned char *ex = malloc(cnt + 1);
        BD_ASSERT(idx && wf && ex);
        bool any = false;
        for (size_t i = 0; i < nt; i++) idx[i] = rp->tap_idx[k][i] * xs[k], wf[i] = (float)rp->tap_w[k][i];
        for (size_t o = 0; o < cnt; o++) any |= (ex[o] = rp->outside[k][o]) != 0;
        L("BD_G const int64_t *TO%d = (BD_G const int64_t *)(weights + %lld);", k, ll(bd_blob_add(g->blob, idx, nt * 8)));
        int64_t ow = dbl ? bd_blob_add(g->blob, rp->tap_w[k], nt * 8) : bd_blob_add(g->blob, wf, nt * 4);
        L("BD_G const %s *TW%d = (BD_G const %s *)(weights + %lld);", wt, k, wt, ll(ow));
        if (any) {
            L("BD_G const unsigned char *E%d = weights + %lld;", k, ll(bd_blob_add(g->blob, ex, cnt)));
            out = S("%s%sE%d[i%d]", out ? out : "", out ? " || " : "", k, k);
        }
        taps[k] = rp->taps[k];
        act[na++] = k;
        free(idx), free(wf), free(ex);
    }
    open_elements(g, n, NULL);
    const char *xo = "0";
    for (int k = 0; k < r; k++)
        if (!rp->active[k]) xo = S("%s + i%d * %lld", xo, k, ll(xs[k]));
    L("const int64_t xo = %s;", xo);
    filter_sum(g, act, na, 0, "xo", wt, taps);
    const char *val = S("(%s)s0", t);
    if (out) val = S("(%s) ? (%s)%s : %s", out, t, bd_print_float(&g->pr, rp->extrapolation_value, y->dtype), val);
    L("Y[%s] = %s;", offset_expr(g, r, ys), val);
    close_elements(g);
}

static bd_status body_resize(bd_gpu_printer *g, const bd_nest *n, bd_diag *d) {
    (void)d;
    const bd_resize_params *rp = &n->params.resize;
    const bd_value *x = value_of(g, n, 0), *y = value_of(g, n, 1);
    bool any_active = false;
    for (int k = 0; k < n->n_iter; k++) any_active |= rp->active[k];
    if (rp->filter && any_active) {
        body_resize_filter(g, n);
        return BD_OK;
    }
    const char *t = bd_c_type(y->dtype);
    bool dbl = y->dtype == BD_DT_DOUBLE, linear = rp->interp == BD_INTERP_LINEAR;
    const char *wt = dbl ? "double" : "float";
    int r = n->n_iter, lin[BD_MAX_RANK], nl = 0;
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_dims_strides(x->rank, x->dims, xs);
    bd_dims_strides(y->rank, y->dims, ys);
    declare(g, n, 0, "X");
    declare(g, n, 1, "Y");
    bool ext[BD_MAX_RANK] = {false};
    for (int k = 0; k < r; k++) {
        if (!rp->active[k]) continue;
        size_t cnt = (size_t)y->dims[k];
        int64_t *i0 = malloc((cnt + 1) * sizeof *i0), *dd = malloc((cnt + 1) * sizeof *dd);
        double *wd = malloc((cnt + 1) * sizeof *wd);
        float *wf = malloc((cnt + 1) * sizeof *wf);
        unsigned char *ex = malloc(cnt + 1);
        BD_ASSERT(i0 && dd && wd && wf && ex);
        for (size_t o = 0; o < cnt; o++) {
            ex[o] = rp->idx0[k][o] < 0;
            ext[k] |= ex[o];
            int64_t a = ex[o] ? 0 : rp->idx0[k][o], b = ex[o] ? 0 : rp->idx1[k][o];
            i0[o] = a * xs[k];
            dd[o] = (b - a) * xs[k];
            wf[o] = rp->w1[k][o];
            wd[o] = rp->w1[k][o];
        }
        L("BD_G const int64_t *T%d = (BD_G const int64_t *)(weights + %lld);", k, ll(bd_blob_add(g->blob, i0, cnt * 8)));
        if (linear) {
            L("BD_G const int64_t *D%d = (BD_G const int64_t *)(weights + %lld);", k, ll(bd_blob_add(g->blob, dd, cnt * 8)));
            int64_t ow = dbl ? bd_blob_add(g->blob, wd, cnt * 8) : bd_blob_add(g->blob, wf, cnt * 4);
            L("BD_G const %s *W%d = (BD_G const %s *)(weights + %lld);", wt, k, wt, ll(ow));
            lin[nl++] = k;
        }
        if (ext[k]) L("BD_G const unsigned char *E%d = weights + %lld;", k, ll(bd_blob_add(g->blob, ex, cnt)));
        free(i0), free(dd), free(wd), free(wf), free(ex);
    }
    open_elements(g, n, NULL);
    const char *xo = "0", *out = NULL;
    for (int k = 0; k < r; k++) {
        if (!rp->active[k]) {
            xo = S("%s + i%d * %lld", xo, k, ll(xs[k]));
            continue;
        }
        xo = S("%s + T%d[i%d]", xo, k, k);
        if (linear) {
            L("const int64_t dd%d = D%d[i%d];", k, k, k);
            L("const %s ww%d = W%d[i%d], vv%d = 1 - ww%d;", wt, k, k, k, k, k);
        }
        if (ext[k]) out = S("%s%sE%d[i%d]", out ? out : "", out ? " || " : "", k, k);
    }
    L("const int64_t xo = %s;", xo);
    const char *val = linear ? S("(%s)%s", t, lerp(g, lin, nl, 0, "xo", wt)) : "X[xo]";
    if (out) val = S("(%s) ? (%s)%s : %s", out, t, bd_print_float(&g->pr, rp->extrapolation_value, y->dtype), val);
    L("Y[%s] = %s;", offset_expr(g, r, ys), val);
    close_elements(g);
    return BD_OK;
}


/* ---------------------------------------------------------------- LSTM */

/* One block per direction, all batch rows: the time recurrence runs inside the block, with its
 * state h, c and the step's gate pre-activations in device scratch after the arena (one slice
 * per block). Each step: the threads compute the 4H gate rows of every batch row (W x_t + R h +
 * biases), meet at a barrier, update the cells (peepholes, clip, activations as on the CPU),
 * and meet again. Sequences shorter than seq_lens leave zeros in Y; the final states are the last
 * valid ones (zero for an empty sequence). */
static void body_lstm(bd_gpu_printer *g, const bd_nest *n) {
    const bd_lstm_params *lp = &n->params.lstm;
    int64_t SEQ = lp->seq, BATCH = lp->batch, I = lp->input, H = lp->hidden, H4 = 4 * H;
    int D = lp->num_dir;
    int64_t BT = n->tile[1], per_block = BT * 6 * H * 4;
    int64_t base = (g->scratch_at + 255) / 256 * 256;
    g->scratch_at = base + per_block * n->n_blocks;
    declare(g, n, lp->x, "X");
    declare(g, n, lp->w, "Wt");
    declare(g, n, lp->r, "Rt");
    if (lp->b >= 0) declare(g, n, lp->b, "Bv");
    if (lp->lens >= 0) declare(g, n, lp->lens, "L");
    if (lp->h0 >= 0) declare(g, n, lp->h0, "H0");
    if (lp->c0 >= 0) declare(g, n, lp->c0, "C0");
    if (lp->p >= 0) declare(g, n, lp->p, "Pp");
    if (lp->y >= 0) declare(g, n, lp->y, "Y");
    if (lp->yh >= 0) declare(g, n, lp->yh, "YH");
    if (lp->yc >= 0) declare(g, n, lp->yc, "YC");
    L("const int64_t dir = lo[0], b0 = lo[1], nb = hi[1] - lo[1];");
    L("BD_G float *hs = (BD_G float *)(arena + %lld + block * %lld);", ll(base), ll(per_block));
    L("BD_G float *cs = hs + %lld, *gt = cs + %lld;", ll(BT * H), ll(BT * H));
    L("BD_G const float *Wd = Wt + dir * %lld, *Rd = Rt + dir * %lld;", ll(H4 * I), ll(H4 * H));
    if (lp->p >= 0) L("BD_G const float *Pd = Pp + dir * %lld;", ll(3 * H));
    L("const int rev = %s;", D == 2 ? "dir == 1" : lp->reverse ? "1" : "0");
    L("(void)rev;");
    const char *st = lp->batch_major ? S("((b0 + bb) * %d + dir) * %lld", D, ll(H)) : S("(dir * %lld + b0 + bb) * %lld", ll(BATCH), ll(H));
    const char *yo = lp->batch_major ? S("(((b0 + bb) * %lld + t) * %d + dir) * %lld", ll(SEQ), D, ll(H))
                                     : S("((t * %d + dir) * %lld + b0 + bb) * %lld", D, ll(BATCH), ll(H));
    const char *xo = lp->batch_major ? S("((b0 + bb) * %lld + t) * %lld", ll(SEQ), ll(I)) : S("(t * %lld + b0 + bb) * %lld", ll(BATCH), ll(I));
    const char *len = lp->lens >= 0 ? S("(L[b0 + bb] < 0 ? 0 : L[b0 + bb] > %lld ? %lld : (int64_t)L[b0 + bb])", ll(SEQ), ll(SEQ))
                                    : S("(int64_t)%lld", ll(SEQ));
    OPEN("for (int64_t e = BD_THREAD_ID; e < nb * %lld; e += BD_THREADS)", ll(H));
    L("const int64_t bb = e / %lld, j = e %% %lld;", ll(H), ll(H));
    L("hs[e] = %s;", lp->h0 >= 0 ? S("H0[%s + j]", st) : "0.0f");
    L("cs[e] = %s;", lp->c0 >= 0 ? S("C0[%s + j]", st) : "0.0f");
    CLOSE();
    L("BD_BARRIER();");
    OPEN("for (int64_t step = 0; step < %lld; step++)", ll(SEQ));
    /* gate pre-activations */
    OPEN("for (int64_t e = BD_THREAD_ID; e < nb * %lld; e += BD_THREADS)", ll(H4));
    L("const int64_t bb = e / %lld, q = e %% %lld, len = %s;", ll(H4), ll(H4), len);
    L("if (step >= len) continue;");
    L("const int64_t t = rev ? len - 1 - step : step;");
    L("float v = %s;", lp->b >= 0 ? S("Bv[dir * %lld + q] + Bv[dir * %lld + %lld + q]", ll(2 * H4), ll(2 * H4), ll(H4)) : "0.0f");
    L("BD_G const float *xr = X + %s, *wr = Wd + q * %lld, *rr = Rd + q * %lld;", xo, ll(I), ll(H));
    L("for (int64_t i = 0; i < %lld; i++) v += xr[i] * wr[i];", ll(I));
    L("for (int64_t i = 0; i < %lld; i++) v += hs[bb * %lld + i] * rr[i];", ll(H), ll(H));
    L("gt[e] = v;");
    CLOSE();
    L("BD_BARRIER();");
    /* cells */
    OPEN("for (int64_t e = BD_THREAD_ID; e < nb * %lld; e += BD_THREADS)", ll(H));
    L("const int64_t bb = e / %lld, j = e %% %lld, len = %s;", ll(H), ll(H), len);
    L("if (step >= len) continue;");
    L("const int64_t t = rev ? len - 1 - step : step;");
    L("(void)t;");
    L("BD_G const float *gr = gt + bb * %lld;", ll(H4));
    L("float vi = gr[j], vo = gr[%lld + j], vf = gr[%lld + j], vc = gr[%lld + j];", ll(H), ll(2 * H), ll(3 * H));
    L("const float cp = cs[e];");
    if (lp->p >= 0) L("vi += Pd[j] * cp; vf += Pd[%lld + j] * cp;", ll(2 * H));
    const char *clip = lp->has_clip ? bd_print_float(&g->pr, lp->clip, BD_DT_FLOAT) : NULL;
    if (clip)
        for (int k = 0; k < 3; k++) {
            const char *v = k == 0 ? "vi" : k == 1 ? "vf" : "vc";
            L("%s = %s < -%s ? -%s : %s > %s ? %s : %s;", v, v, clip, clip, v, clip, clip, v);
        }
    for (int dd = 0; dd < (D == 2 ? 2 : 1); dd++) {
        if (D == 2) OPEN("if (dir == %d)", dd);
        const bd_rnn_act *f = &lp->act[dd][0], *gg = &lp->act[dd][1], *h = &lp->act[dd][2];
        bd_print_rnn_act(&g->pr, f, "vi", "ig");
        if (lp->input_forget) L("const float fg = 1.0f - ig; (void)vf;");
        else bd_print_rnn_act(&g->pr, f, "vf", "fg");
        bd_print_rnn_act(&g->pr, gg, "vc", "cg");
        L("const float cn = fg * cp + ig * cg;");
        if (lp->p >= 0) L("vo += Pd[%lld + j] * cn;", ll(H));
        if (clip) L("vo = vo < -%s ? -%s : vo > %s ? %s : vo;", clip, clip, clip, clip);
        bd_print_rnn_act(&g->pr, f, "vo", "og");
        bd_print_rnn_act(&g->pr, h, "cn", "hc");
        L("cs[e] = cn;");
        L("hs[e] = og * hc;");
        if (lp->y >= 0) L("Y[%s + j] = og * hc;", yo);
        if (D == 2) CLOSE();
    }
    CLOSE();
    L("BD_BARRIER();");
    CLOSE(); /* step */
    OPEN("for (int64_t e = BD_THREAD_ID; e < nb * %lld; e += BD_THREADS)", ll(H));
    L("const int64_t bb = e / %lld, j = e %% %lld, len = %s;", ll(H), ll(H), len);
    L("(void)j; (void)len;");
    if (lp->lens >= 0) {
        if (lp->y >= 0) L("for (int64_t t = len; t < %lld; t++) Y[%s + j] = 0.0f;", ll(SEQ), yo);
        L("if (len == 0) { hs[e] = 0.0f; cs[e] = 0.0f; }");
    }
    if (lp->yh >= 0) L("YH[%s + j] = hs[e];", st);
    if (lp->yc >= 0) L("YC[%s + j] = cs[e];", st);
    CLOSE();
}

/* ---------------------------------------------------------------- scatter (push) */

/* One work-group: the data copied by every thread, then the updates dealt to the threads, each
 * written where its index names (nothing for an index outside the data). */
static void body_scatter(bd_gpu_printer *g, const bd_nest *n) {
    const bd_scatter_params *sp = &n->params.scatter;
    const bd_value *iv = value_of(g, n, 1), *y = value_of(g, n, 3);
    int r = y->rank, q = iv->rank, k = sp->components;
    int64_t ys[BD_MAX_RANK], numel = 1, updates = 1;
    bd_dims_strides(r, y->dims, ys);
    for (int j = 0; j < r; j++) numel *= y->dims[j];
    for (int j = 0; j < q - (k > 0); j++) updates *= iv->dims[j];
    int64_t slice = 1;
    for (int j = k; k > 0 && j < r; j++) slice *= y->dims[j];
    declare(g, n, 0, "X");
    declare(g, n, 1, "IX");
    declare(g, n, 2, "U");
    declare(g, n, 3, "Y");
    L("(void)lo; (void)hi;");
    L("for (int64_t e = BD_THREAD_ID; e < %lld; e += BD_THREADS) Y[e] = X[e];", ll(numel));
    L("BD_BARRIER();");
    OPEN("for (int64_t e = BD_THREAD_ID; e < %lld; e += BD_THREADS)", ll(updates * slice));
    L("int64_t at = 0, c;");
    if (k > 0) { /* ScatterND: element s of tuple t's slice */
        L("const int64_t t = e / %lld, s = e %% %lld;", ll(slice), ll(slice));
        for (int m = 0; m < k; m++) {
            bd_print_scatter_index(&g->pr, S("IX[t * %d + %d]", k, m), y->dims[m]);
            L("at += c * %lld;", ll(ys[m]));
        }
        L("Y[at + s] = U[e];");
    } else { /* ScatterElements: e's coordinates in the indices, the axis one replaced */
        L("int64_t rest = e;");
        for (int j = q - 1; j >= 0; j--) {
            L("const int64_t i%d = rest %% %lld;", j, ll(iv->dims[j]));
            L("rest /= %lld;", ll(iv->dims[j]));
            if (j == sp->axis) continue;
            L("at += i%d * %lld;", j, ll(ys[j]));
        }
        L("(void)i%d;", sp->axis);
        bd_print_scatter_index(&g->pr, "IX[e]", y->dims[sp->axis]);
        L("Y[at + c * %lld] = U[e];", ll(ys[sp->axis]));
    }
    CLOSE();
}

/* ---------------------------------------------------------------- dispatch */

bd_status bd_gpu_body(bd_gpu_printer *g, const bd_nest *n, bd_diag *d) {
    switch (n->body) {
    case BD_BODY_ELEMENTWISE: body_elementwise(g, n); break;
    case BD_BODY_COPY: body_copy(g, n); break;
    case BD_BODY_CONSTANT: body_constant(g, n); break;
    case BD_BODY_PAD: body_pad(g, n); break;
    case BD_BODY_GATHER: body_gather(g, n); break;
    case BD_BODY_CONV:
        if (bd_gpu_conv_tiled(g->graph, n)) body_conv_tiled(g, n);
        else body_conv(g, n);
        break;
    case BD_BODY_CONV_TRANSPOSE: body_conv_transpose(g, n); break;
    case BD_BODY_POOL: body_pool(g, n); break;
    case BD_BODY_GLOBAL_POOL: body_global_pool(g, n); break;
    case BD_BODY_MATMUL:
        if (bd_gpu_matmul_tiled(g->graph, n)) body_matmul_tiled(g, n);
        else body_matmul(g, n);
        break;
    case BD_BODY_REDUCE: body_reduce(g, n); break;
    case BD_BODY_SOFTMAX: body_softmax(g, n); break;
    case BD_BODY_NORM:
        if (n->params.norm.kind == BD_NORM_BATCH) body_batchnorm(g, n, &n->params.norm);
        else body_layernorm(g, n, &n->params.norm);
        break;
    case BD_BODY_RESIZE: return body_resize(g, n, d);
    case BD_BODY_ROI_ALIGN: body_roi_align(g, n); break;
    case BD_BODY_LSTM: body_lstm(g, n); break;
    case BD_BODY_SCATTER: body_scatter(g, n); break;
    case BD_BODY_ATTENTION: body_attention(g, n); break;
    case BD_BODY_COUNT: BD_ASSERT(!"no body");
    }
    return BD_OK;
}
