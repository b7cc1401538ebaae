/* emit_data.c — C bodies for the data-movement nests: COPY (every strided remap), PAD, GATHER,
 * RESIZE and ROI_ALIGN (nest/params.h holds their parameters).
 *
 * A copy walks the block with one loop per iteration dim, but first folds a dim into the loop
 * inside it whenever the inner loop covers its dims whole in every block and the strides continue
 * (so a concat piece or a reshape becomes a few long rows), and drops unit dims. The innermost loop
 * is a memcpy when both sides are contiguous, a fill when the input is broadcast, and a 32 x 32
 * blocked 2-D walk when the input's contiguous dim is the next loop out (transposes), so that both
 * sides stay in cache; 4-byte elements go through 4 x 4 register transposes (GCC/Clang vector
 * extensions). Elements are copied by their C type, so every dtype works. Pad splits the innermost
 * row into head padding, a memcpy of the kept input and tail padding. Resize reads its per-dim
 * sampling tables (input offsets and weights, computed once by lowering and embedded with the
 * weights) and interpolates linearly with nested lerps over the 2^k corners; nearest copies an
 * output row whose source row repeats, and writes each input element f times for an integer
 * upsampling factor f of the innermost dim. Cubic and antialiased linear weigh a window of taps
 * per output index and dim, applied one dim after the other through a per-thread row buffer.
 * RoiAlign computes each roi's box once per block row and samples bins as print.c prints them. */
#include <stdlib.h>
#include <string.h>

#include "target/cpu/target.h"

enum { TRANSPOSE_BLOCK = 32 };

static int elem_size(int dtype) { return bd_dtype_bits(dtype) / 8; }

static const char *type_of(bd_emitter *e, int value) {
    return bd_c_type(bd_graph_value(e->graph, value)->dtype);
}

/* "lo[k] * mult" / "hi[k] * mult" */
static const char *bound(bd_emitter *e, const char *which, int k, int64_t mult) {
    if (mult == 1) return bd_emit_str(e, "%s[%d]", which, k);
    return bd_emit_str(e, "%s[%d] * %lld", which, k, (long long)mult);
}

/* "base + j * s", simplified. */
static const char *offset(bd_emitter *e, const char *base, const char *j, int64_t s) {
    if (s == 0) return base;
    if (s == 1) return bd_emit_str(e, "%s + %s", base, j);
    return bd_emit_str(e, "%s + %s * %lld", base, j, (long long)s);
}

/* ---------------------------------------------------------------- strided copy loops */

typedef struct copy_loop {
    int iter;     /* iteration dim whose block range drives the loop */
    int64_t mult; /* the loop runs over [lo * mult, hi * mult): whole inner dims merged in */
    int64_t xs, ys;
} copy_loop;

/* Loops over iteration dims iters[0..n) (outer to inner) with per-dim strides xs/ys (indexed by
 * iteration dim): unit dims dropped, a dim merged into the loop inside it when that loop's dims are
 * whole in every block and the strides continue. */
static int plan_loops(const bd_nest *nest, const int *iters, int n, const int64_t *xs,
                      const int64_t *ys, copy_loop *out) {
    copy_loop tmp[BD_MAX_RANK];
    int m = 0;
    for (int idx = n - 1; idx >= 0; idx--) {
        int k = iters[idx];
        if (nest->extent[k] == 1) continue;
        if (m > 0) {
            copy_loop *l = &tmp[m - 1];
            int64_t span = l->mult * nest->extent[l->iter];
            bool whole = nest->tile[l->iter] == nest->extent[l->iter];
            if (whole && xs[k] == l->xs * span && ys[k] == l->ys * span) {
                l->iter = k;
                l->mult = span;
                continue;
            }
        }
        tmp[m++] = (copy_loop){k, 1, xs[k], ys[k]};
    }
    for (int i = 0; i < m; i++) out[i] = tmp[m - 1 - i];
    return m;
}

/* A 4 x 4 transpose of 4-byte elements in vector registers (GCC and Clang vector extensions):
 * the typedefs and the shuffle macro, declared inside the block function. */
static void emit_shuffle_prelude(bd_emitter *e) {
    bd_emit(e, "typedef uint32_t bd_v4 __attribute__((vector_size(16)));");
    bd_emit(e, "#if defined(__clang__)");
    bd_emit(e, "#define BD_SHUF(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)");
    bd_emit(e, "#else");
    bd_emit(e, "typedef int32_t bd_v4i __attribute__((vector_size(16)));");
    bd_emit(e, "#define BD_SHUF(a, b, i, j, k, l) __builtin_shuffle(a, b, (bd_v4i){i, j, k, l})");
    bd_emit(e, "#endif");
}

/* Rows [ba, ja4) of the current 2-D tile (contiguous in X), four rows and four columns at a time:
 * four loads of four, two rounds of shuffles, four stores of four; the leftover columns element
 * by element. */
static void emit_transpose4(bd_emitter *e, const char *tag, const char *xa, const char *ya,
                            int64_t ays, int64_t bxs) {
    bd_emit_open(e, "for (int64_t ja%s = ba%s; ja%s < ja4%s; ja%s += 4)", tag, tag, tag, tag, tag);
    bd_emit(e, "const int64_t xa%s = %s, ya%s = %s;", tag, xa, tag, ya);
    bd_emit(e, "const int64_t jb4%s = bb%s + ((eb%s - bb%s) & ~(int64_t)3);", tag, tag, tag, tag);
    bd_emit_open(e, "for (int64_t jb%s = bb%s; jb%s < jb4%s; jb%s += 4)", tag, tag, tag, tag, tag);
    bd_emit(e, "bd_v4 r0, r1, r2, r3;");
    for (int i = 0; i < 4; i++)
        bd_emit(e, "memcpy(&r%d, &X[xa%s + (jb%s + %d) * %lld], 16);", i, tag, tag, i, (long long)bxs);
    bd_emit(e, "const bd_v4 t0 = BD_SHUF(r0, r1, 0, 4, 1, 5), t1 = BD_SHUF(r0, r1, 2, 6, 3, 7);");
    bd_emit(e, "const bd_v4 t2 = BD_SHUF(r2, r3, 0, 4, 1, 5), t3 = BD_SHUF(r2, r3, 2, 6, 3, 7);");
    bd_emit(e, "const bd_v4 o0 = BD_SHUF(t0, t2, 0, 1, 4, 5), o1 = BD_SHUF(t0, t2, 2, 3, 6, 7);");
    bd_emit(e, "const bd_v4 o2 = BD_SHUF(t1, t3, 0, 1, 4, 5), o3 = BD_SHUF(t1, t3, 2, 3, 6, 7);");
    for (int k = 0; k < 4; k++)
        bd_emit(e, "memcpy(&Y[ya%s + %lld + jb%s], &o%d, 16);", tag, (long long)(k * ays), tag, k);
    bd_emit_close(e, NULL);
    bd_emit_open(e, "for (int64_t jb%s = jb4%s; jb%s < eb%s; jb%s++)", tag, tag, tag, tag, tag);
    for (int k = 0; k < 4; k++)
        bd_emit(e, "Y[ya%s + %lld + jb%s] = X[xa%s + %d + jb%s * %lld];", tag, (long long)(k * ays),
                tag, tag, k, tag, (long long)bxs);
    bd_emit_close(e, NULL);
    bd_emit_close(e, NULL);
}

/* Copies X[xo + ...] to Y[yo + ...] over the planned loops; `tag` keeps names unique. */
static void emit_copy_loops(bd_emitter *e, const copy_loop *l, int m, const char *xo,
                            const char *yo, const char *type, int esize, const char *tag) {
    if (m == 0) {
        bd_emit(e, "Y[%s] = X[%s];", yo, xo);
        return;
    }
    const copy_loop *in = &l[m - 1];
    bool block2d = m >= 2 && in->xs != 1 && in->ys == 1 && l[m - 2].xs == 1 && in->xs != 0;
    int outer = block2d ? m - 2 : m - 1;
    int opened = 0;
    for (int i = 0; i < outer; i++) {
        const copy_loop *c = &l[i];
        const char *j = bd_emit_str(e, "j%s%d", tag, i);
        bd_emit_open(e, "for (int64_t %s = %s; %s < %s; %s++)", j, bound(e, "lo", c->iter, c->mult),
                     j, bound(e, "hi", c->iter, c->mult), j);
        opened++;
        const char *xn = bd_emit_str(e, "x%s%d", tag, i), *yn = bd_emit_str(e, "y%s%d", tag, i);
        bd_emit(e, "const int64_t %s = %s, %s = %s;", xn, offset(e, xo, j, c->xs), yn,
                offset(e, yo, j, c->ys));
        xo = xn;
        yo = yn;
    }
    if (block2d) {
        const copy_loop *a = &l[m - 2];
        const char *sa = bound(e, "lo", a->iter, a->mult), *ea = bound(e, "hi", a->iter, a->mult);
        const char *sb = bound(e, "lo", in->iter, in->mult), *eb = bound(e, "hi", in->iter, in->mult);
        bool vec = esize == 4;
        if (vec) emit_shuffle_prelude(e);
        bd_emit_open(e, "for (int64_t ba%s = %s; ba%s < %s; ba%s += %d)", tag, sa, tag, ea, tag,
                     TRANSPOSE_BLOCK);
        bd_emit(e, "const int64_t ea%s = ba%s + %d < %s ? ba%s + %d : %s;", tag, tag,
                TRANSPOSE_BLOCK, ea, tag, TRANSPOSE_BLOCK, ea);
        bd_emit_open(e, "for (int64_t bb%s = %s; bb%s < %s; bb%s += %d)", tag, sb, tag, eb, tag,
                     TRANSPOSE_BLOCK);
        bd_emit(e, "const int64_t eb%s = bb%s + %d < %s ? bb%s + %d : %s;", tag, tag,
                TRANSPOSE_BLOCK, eb, tag, TRANSPOSE_BLOCK, eb);
        /* Rows [ba, ja4) four at a time in vector registers, the rest one by one. */
        if (vec) bd_emit(e, "const int64_t ja4%s = ba%s + ((ea%s - ba%s) & ~(int64_t)3);", tag, tag, tag, tag);
        else bd_emit(e, "const int64_t ja4%s = ba%s;", tag, tag);
        const char *ja = bd_emit_str(e, "ja%s", tag);
        const char *xa = offset(e, xo, ja, a->xs), *ya = offset(e, yo, ja, a->ys);
        if (vec) emit_transpose4(e, tag, xa, ya, a->ys, in->xs);
        bd_emit_open(e, "for (int64_t ja%s = ja4%s; ja%s < ea%s; ja%s++)", tag, tag, tag, tag, tag);
        bd_emit(e, "const int64_t xa%s = %s, ya%s = %s;", tag, xa, tag, ya);
        bd_emit(e, "for (int64_t jb%s = bb%s; jb%s < eb%s; jb%s++) Y[ya%s + jb%s] = X[xa%s + jb%s * %lld];",
                tag, tag, tag, tag, tag, tag, tag, tag, tag, (long long)in->xs);
        bd_emit_close(e, NULL);
        bd_emit_close(e, NULL);
        bd_emit_close(e, NULL);
        if (vec) bd_emit(e, "#undef BD_SHUF");
    } else {
        const char *s = bound(e, "lo", in->iter, in->mult), *t = bound(e, "hi", in->iter, in->mult);
        const char *j = bd_emit_str(e, "j%s%d", tag, m - 1);
        if (in->xs == 1 && in->ys == 1) {
            bd_emit(e, "memcpy(&Y[%s + %s], &X[%s + %s], (size_t)(%s - %s) * sizeof(%s));", yo, s,
                    xo, s, t, s, type);
        } else if (in->xs == 0) {
            bd_emit(e, "const %s v%s = X[%s];", type, tag, xo);
            bd_emit(e, "for (int64_t %s = %s; %s < %s; %s++) Y[%s] = v%s;", j, s, j, t, j,
                    offset(e, yo, j, in->ys), tag);
        } else {
            bd_emit(e, "for (int64_t %s = %s; %s < %s; %s++) Y[%s] = X[%s];", j, s, j, t, j,
                    offset(e, yo, j, in->ys), offset(e, xo, j, in->xs));
        }
    }
    for (int i = 0; i < opened; i++) bd_emit_close(e, NULL);
}

/* ---------------------------------------------------------------- COPY */

bd_status bd_emit_body_COPY(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_copy_params *cp = BD_NEST_PARAMS(n, copy);
    const bd_operand *yo = &n->operands[n->n_operands - 1];
    BD_ASSERT(yo->write && n->n_operands == (cp->fill ? 1 : 2));
    const char *type = type_of(e, yo->value);
    const int ydt = bd_graph_value(e->graph, yo->value)->dtype;
    bd_emit(e, "%s *Y = %s;", type, bd_emit_ptr(e, yo->value));
    int64_t xs[BD_MAX_RANK];
    if (cp->fill) {
        bd_emit(e, "const %s fill = (%s)%s;", type, type, bd_emit_float(e, cp->fill_value, ydt));
        bd_emit(e, "const %s *X = &fill;", type);
        for (int k = 0; k < n->n_iter; k++) xs[k] = 0;
    } else {
        bd_emit(e, "const %s *X = %s;", type, bd_emit_ptr(e, n->operands[0].value));
        memcpy(xs, cp->in_stride, sizeof xs);
    }
    int iters[BD_MAX_RANK];
    for (int k = 0; k < n->n_iter; k++) iters[k] = k;
    copy_loop l[BD_MAX_RANK];
    int m = plan_loops(n, iters, n->n_iter, xs, cp->out_stride, l);
    emit_copy_loops(e, l, m, cp->fill ? "0" : bd_emit_str(e, "%lldLL", (long long)cp->in_base),
                    bd_emit_str(e, "%lldLL", (long long)cp->out_base), type, elem_size(ydt), "");
    return BD_OK;
}

/* ---------------------------------------------------------------- PAD */

/* Statements remapping index variable j into [0, kept) for the non-constant modes. */
static void emit_pad_remap(bd_emitter *e, bd_pad_mode mode, const char *j, int64_t kept) {
    switch (mode) {
    case BD_PAD_EDGE:
        bd_emit(e, "%s = %s < 0 ? 0 : %s >= %lld ? %lld : %s;", j, j, j, (long long)kept,
                (long long)kept - 1, j);
        break;
    case BD_PAD_WRAP:
        bd_emit(e, "%s %%= %lld;", j, (long long)kept);
        bd_emit(e, "if (%s < 0) %s += %lld;", j, j, (long long)kept);
        break;
    case BD_PAD_REFLECT:
        if (kept == 1) {
            bd_emit(e, "%s = 0;", j);
        } else {
            long long period = 2 * ((long long)kept - 1);
            bd_emit(e, "%s %%= %lld;", j, period);
            bd_emit(e, "if (%s < 0) %s += %lld;", j, j, period);
            bd_emit(e, "if (%s >= %lld) %s = %lld - %s;", j, (long long)kept, j, period, j);
        }
        break;
    default: break;
    }
}

bd_status bd_emit_body_PAD(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_pad_params *pp = BD_NEST_PARAMS(n, pad);
    const bd_operand *xop = &n->operands[0], *yop = &n->operands[n->n_operands - 1];
    const bd_value *x = bd_graph_value(e->graph, xop->value), *y = bd_graph_value(e->graph, yop->value);
    const char *type = type_of(e, yop->value);
    int r = n->n_iter;
    bool constant = pp->mode == BD_PAD_CONSTANT;
    bd_emit(e, "const %s *X = %s;", type, bd_emit_ptr(e, xop->value));
    bd_emit(e, "%s *Y = %s;", type, bd_emit_ptr(e, yop->value));
    bd_emit(e, "(void)X;");
    if (constant) {
        if (pp->value_operand >= 0)
            bd_emit(e, "const %s cv = %s[0];", type, bd_emit_ptr(e, n->operands[pp->value_operand].value));
        else
            bd_emit(e, "const %s cv = (%s)%s;", type, type, bd_emit_float(e, pp->value, y->dtype));
    }
    if (r == 0) {
        bd_emit(e, "Y[0] = X[0];");
        return BD_OK;
    }
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_value_strides(x, xs);
    bd_value_strides(y, ys);
    const char *xo = "0", *yo = "0", *ok = NULL;
    for (int k = 0; k < r - 1; k++) {
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", k, k, k, k, k);
        bool plain = pp->pad_lo[k] == 0 && pp->kept[k] == y->dims[k];
        if (plain) {
            bd_emit(e, "const int64_t x%d = %s + (i%d + %lld) * %lld;", k, xo, k,
                    (long long)pp->crop_lo[k], (long long)xs[k]);
        } else {
            bd_emit(e, "int64_t j%d = i%d - %lld;", k, k, (long long)pp->pad_lo[k]);
            if (constant) {
                bd_emit(e, "const int ok%d = %s%sj%d >= 0 && j%d < %lld;", k, ok ? ok : "",
                        ok ? " && " : "", k, k, (long long)pp->kept[k]);
                ok = bd_emit_str(e, "ok%d", k);
            } else {
                emit_pad_remap(e, pp->mode, bd_emit_str(e, "j%d", k), pp->kept[k]);
            }
            bd_emit(e, "const int64_t x%d = %s + (j%d + %lld) * %lld;", k, xo, k,
                    (long long)pp->crop_lo[k], (long long)xs[k]);
        }
        bd_emit(e, "const int64_t y%d = %s + i%d * %lld;", k, yo, k, (long long)ys[k]);
        xo = bd_emit_str(e, "x%d", k);
        yo = bd_emit_str(e, "y%d", k);
    }
    int k = r - 1;
    long long plo = pp->pad_lo[k], kept = pp->kept[k], crop = pp->crop_lo[k];
    if (ok) {
        bd_emit_open(e, "if (!%s)", ok);
        bd_emit(e, "for (int64_t i = lo[%d]; i < hi[%d]; i++) Y[%s + i] = cv;", k, k, yo);
        bd_emit(e, "continue;");
        bd_emit_close(e, NULL);
    }
    bd_emit(e, "const int64_t a = lo[%d] > %lld ? lo[%d] : %lld;", k, plo, k, plo);
    bd_emit(e, "const int64_t b = hi[%d] < %lld ? hi[%d] : %lld;", k, plo + kept, k, plo + kept);
    /* head and tail: padding */
    for (int part = 0; part < 2; part++) {
        if (part == 0) bd_emit_open(e, "for (int64_t i = lo[%d]; i < hi[%d] && i < %lld; i++)", k, k, plo);
        else bd_emit_open(e, "for (int64_t i = lo[%d] > %lld ? lo[%d] : %lld; i < hi[%d]; i++)", k,
                          plo + kept, k, plo + kept, k);
        if (constant) {
            bd_emit(e, "Y[%s + i] = cv;", yo);
        } else {
            bd_emit(e, "int64_t j = i - %lld;", plo);
            emit_pad_remap(e, pp->mode, "j", kept);
            bd_emit(e, "Y[%s + i] = X[%s + j + %lld];", yo, xo, crop);
        }
        bd_emit_close(e, NULL);
    }
    bd_emit(e, "if (a < b) memcpy(&Y[%s + a], &X[%s + a - %lld], (size_t)(b - a) * sizeof(%s));",
            yo, xo, plo - crop, type);
    for (int i = 0; i < r - 1; i++) bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- GATHER */

bd_status bd_emit_body_GATHER(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_gather_params *gp = BD_NEST_PARAMS(n, gather);
    const bd_operand *xop = &n->operands[0], *iop = &n->operands[1], *yop = &n->operands[2];
    const bd_value *x = bd_graph_value(e->graph, xop->value), *iv = bd_graph_value(e->graph, iop->value);
    const bd_value *y = bd_graph_value(e->graph, yop->value);
    const char *type = type_of(e, yop->value);
    int axis = gp->axis, q = gp->idx_rank, r = n->n_iter;
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK], is[BD_MAX_RANK];
    bd_value_strides(x, xs);
    bd_value_strides(y, ys);
    bd_value_strides(iv, is);
    bd_emit(e, "const %s *X = %s;", type, bd_emit_ptr(e, xop->value));
    bd_emit(e, "const %s *IX = %s;", type_of(e, iop->value), bd_emit_ptr(e, iop->value));
    bd_emit(e, "%s *Y = %s;", type, bd_emit_ptr(e, yop->value));
    const char *xo = "0", *yo = "0", *io = "0";
    int opened = 0;
    for (int k = 0; k < axis + q; k++) {
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", k, k, k, k, k);
        opened++;
        const char *ik = bd_emit_str(e, "i%d", k);
        if (k < axis) {
            bd_emit(e, "const int64_t x%d = %s;", k, offset(e, xo, ik, xs[k]));
            xo = bd_emit_str(e, "x%d", k);
        } else {
            bd_emit(e, "const int64_t n%d = %s;", k, offset(e, io, ik, is[k - axis]));
            io = bd_emit_str(e, "n%d", k);
        }
        bd_emit(e, "const int64_t y%d = %s;", k, offset(e, yo, ik, ys[k]));
        yo = bd_emit_str(e, "y%d", k);
    }
    /* Negative indices count from the back; out-of-range ones are clamped (never read outside). */
    long long size = x->dims[axis];
    bd_emit(e, "int64_t ix = (int64_t)IX[%s];", io);
    bd_emit(e, "if (ix < 0) ix += %lld;", size);
    bd_emit(e, "ix = ix < 0 ? 0 : ix > %lld ? %lld : ix;", size - 1, size - 1);
    bd_emit(e, "const int64_t xg = %s + ix * %lld;", xo, (long long)xs[axis]);
    int iters[BD_MAX_RANK], m = 0;
    int64_t xsi[BD_MAX_RANK] = {0};
    for (int k = axis + q; k < r; k++) {
        iters[m++] = k;
        xsi[k] = xs[k - q + 1];
    }
    copy_loop l[BD_MAX_RANK];
    int nl = plan_loops(n, iters, m, xsi, ys, l);
    emit_copy_loops(e, l, nl, "xg", yo, type, elem_size(y->dtype), "g");
    for (int i = 0; i < opened; i++) bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- SCATTER (push) */

/* One block: the data copied, then each update written where its index names; an index outside
 * the data (after a negative one counts from the back) writes nothing. */
bd_status bd_emit_body_SCATTER(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_scatter_params *sp = BD_NEST_PARAMS(n, scatter);
    const bd_value *iv = bd_graph_value(e->graph, n->operands[1].value);
    const bd_value *y = bd_graph_value(e->graph, n->operands[3].value);
    const char *type = type_of(e, n->operands[3].value);
    int r = y->rank, q = iv->rank, k = sp->components;
    int64_t ys[BD_MAX_RANK], is[BD_MAX_RANK], numel = 1;
    bd_value_strides(y, ys);
    bd_value_strides(iv, is);
    for (int j = 0; j < r; j++) numel *= y->dims[j];
    bd_emit(e, "const %s *X = %s;", type, bd_emit_ptr(e, n->operands[0].value));
    bd_emit(e, "const %s *IX = %s;", type_of(e, n->operands[1].value),
            bd_emit_ptr(e, n->operands[1].value));
    bd_emit(e, "const %s *U = %s;", type, bd_emit_ptr(e, n->operands[2].value));
    bd_emit(e, "%s *Y = %s;", type, bd_emit_ptr(e, n->operands[3].value));
    bd_emit(e, "(void)lo; (void)hi;");
    bd_emit(e, "if ((const void *)Y != (const void *)X) memcpy(Y, X, %lld);",
            (long long)(numel * elem_size(y->dtype)));
    if (k > 0) { /* ScatterND: tuple t names a slice of the data's dims k.. */
        int64_t tuples = 1, slice = 1;
        for (int j = 0; j < q - 1; j++) tuples *= iv->dims[j];
        for (int j = k; j < r; j++) slice *= y->dims[j];
        bd_emit_open(e, "for (int64_t t = 0; t < %lld; t++)", (long long)tuples);
        bd_emit(e, "int64_t at = 0, c;");
        for (int m = 0; m < k; m++) {
            bd_print_scatter_index(&e->pr, bd_emit_str(e, "IX[t * %d + %d]", k, m), y->dims[m]);
            bd_emit(e, "at += c * %lld;", (long long)ys[m]);
        }
        if (slice == 1) bd_emit(e, "Y[at] = U[t];");
        else bd_emit(e, "memcpy(&Y[at], &U[t * %lld], %lld);", (long long)slice,
                     (long long)(slice * elem_size(y->dtype)));
        bd_emit_close(e, NULL);
        return BD_OK;
    }
    /* ScatterElements: the updates have the indices' shape; position i lands at i with its
     * axis coordinate replaced by the index */
    const char *io = "0", *yo = "0";
    for (int j = 0; j < q; j++) {
        bd_emit_open(e, "for (int64_t i%d = 0; i%d < %lld; i%d++)", j, j, (long long)iv->dims[j], j);
        const char *ij = bd_emit_str(e, "i%d", j);
        io = offset(e, io, ij, is[j]);
        if (j != sp->axis) yo = offset(e, yo, ij, ys[j]);
    }
    bd_emit(e, "int64_t c;");
    bd_print_scatter_index(&e->pr, bd_emit_str(e, "IX[%s]", io), y->dims[sp->axis]);
    bd_emit(e, "Y[%s + c * %lld] = U[%s];", yo, (long long)ys[sp->axis], io);
    for (int j = 0; j < q; j++) bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- RESIZE, nearest and linear */

/* Nested lerps over the linear dims lin[level..nl): weights v (1 - w) / w, offset deltas dd. */
static const char *lerp_expr(bd_emitter *e, const int *lin, int nl, int level, const char *off,
                             const char *wt) {
    if (level == nl) return bd_emit_str(e, "(%s)X[%s]", wt, off);
    int k = lin[level];
    const char *a = lerp_expr(e, lin, nl, level + 1, off, wt);
    const char *b = lerp_expr(e, lin, nl, level + 1, bd_emit_str(e, "%s + dd%d", off, k), wt);
    return bd_emit_str(e, "(vv%d * %s + ww%d * %s)", k, a, k, b);
}

/* A plain linear Resize whose only active dims are the last two, with no extrapolated outputs:
 * each output row is then the lerp of two input rows sampled along the row. The block samples
 * each input row it reads once into scratch (two kept, the last ones read: consecutive output
 * rows share their input rows), then lerps the two of each output row, a contiguous pass that
 * vectorises. Lerping the four corners per output element read them through index tables, 7%
 * of a U-Net's time; lerping the two input rows first, then sampling, sampled once per output
 * row, twice as often as now for a 2x upsampling. Returns the scratch it needs, in elements. */
int64_t bd_cpu_resize_row_elems(const bd_nest *n) {
    const bd_resize_params *rp = &n->params.resize;
    int r = n->n_iter;
    if (rp->filter || rp->interp != BD_INTERP_LINEAR || r < 2 || !rp->active[r - 2] ||
        !rp->active[r - 1])
        return 0;
    for (int k = 0; k < r - 2; k++)
        if (rp->active[k]) return 0;
    for (int k = r - 2; k < r; k++)
        for (int64_t o = 0; o < rp->out_extent[k]; o++)
            if (rp->idx0[k][o] < 0) return 0; /* extrapolated (tf_crop_and_resize) */
    return 2 * n->extent[r - 1];
}

static bd_status emit_resize_sample(bd_emitter *e, const bd_nest *n, bd_diag *d) {
    const bd_resize_params *rp = BD_NEST_PARAMS(n, resize);
    const bd_operand *xop = &n->operands[0], *yop = &n->operands[1];
    const bd_value *x = bd_graph_value(e->graph, xop->value), *y = bd_graph_value(e->graph, yop->value);
    const char *type = type_of(e, yop->value);
    bool dbl = y->dtype == BD_DT_DOUBLE, linear = rp->interp == BD_INTERP_LINEAR;
    const char *wt = dbl ? "double" : "float";
    int r = n->n_iter;
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_value_strides(x, xs);
    bd_value_strides(y, ys);
    bd_emit(e, "const %s *X = %s;", type, bd_emit_ptr(e, xop->value));
    bd_emit(e, "%s *Y = %s;", type, bd_emit_ptr(e, yop->value));

    /* Tables of the active dims, embedded with the weights. */
    bool ext[BD_MAX_RANK] = {false}, any_ext = false;
    int lin[BD_MAX_RANK], nl = 0;
    int64_t repeat = 0; /* innermost dim: nearest upsampling by this integer factor */
    for (int k = 0; k < r; k++) {
        if (!rp->active[k]) continue;
        int64_t out = y->dims[k];
        size_t cnt = (size_t)out;
        int64_t *i0 = malloc(cnt * sizeof *i0), *i1 = malloc(cnt * sizeof *i1);
        float *w = malloc(cnt * sizeof *w);
        unsigned char *ex = malloc(cnt);
        double *wd = malloc(cnt * sizeof *wd);
        if (!i0 || !i1 || !w || !ex || !wd) {
            free(i0), free(i1), free(w), free(ex), free(wd);
            return bd_fail(d, BD_ERR_IO, "out of memory for resize tables");
        }
        memcpy(i0, rp->idx0[k], cnt * sizeof *i0);
        memcpy(i1, rp->idx1[k], cnt * sizeof *i1);
        memcpy(w, rp->w1[k], cnt * sizeof *w);
        if (k == r - 1 && !linear && n->tile[k] == n->extent[k] && out % x->dims[k] == 0 &&
            out / x->dims[k] >= 2 && out / x->dims[k] <= 8) {
            repeat = out / x->dims[k];
            for (size_t o = 0; o < cnt && repeat; o++)
                if (i0[o] != (int64_t)o / repeat) repeat = 0;
        }
        for (size_t o = 0; o < cnt; o++) {
            ex[o] = i0[o] < 0;
            ext[k] |= ex[o];
            int64_t a = ex[o] ? 0 : i0[o], b = ex[o] ? 0 : i1[o];
            i0[o] = a * xs[k];
            i1[o] = (b - a) * xs[k];
            wd[o] = w[o];
        }
        any_ext |= ext[k];
        int64_t off0 = bd_emit_blob(e, i0, cnt * sizeof *i0);
        bd_emit(e, "const int64_t *T%d = (const int64_t *)(bd_weights + %lld);", k, (long long)off0);
        if (repeat && k == r - 1) bd_emit(e, "(void)T%d;", k);
        if (linear) {
            int64_t off1 = bd_emit_blob(e, i1, cnt * sizeof *i1);
            int64_t offw = dbl ? bd_emit_blob(e, wd, cnt * sizeof *wd) : bd_emit_blob(e, w, cnt * sizeof *w);
            bd_emit(e, "const int64_t *D%d = (const int64_t *)(bd_weights + %lld);", k, (long long)off1);
            bd_emit(e, "const %s *W%d = (const %s *)(bd_weights + %lld);", wt, k, wt, (long long)offw);
            lin[nl++] = k;
        }
        if (ext[k]) {
            int64_t offe = bd_emit_blob(e, ex, cnt);
            bd_emit(e, "const unsigned char *E%d = (const unsigned char *)(bd_weights + %lld);", k,
                    (long long)offe);
        }
        free(i0), free(i1), free(w), free(ex), free(wd);
    }
    const char *xo = "0", *yo = "0", *ex = NULL;
    const bool rows = bd_cpu_resize_row_elems(n) > 0;
    if (rows) { /* the sampled input rows kept in scratch, by their offset in X */
        bd_emit(e, "%s *const H_ = (%s *)(void *)scratch;", wt, wt);
        bd_emit(e, "int64_t key_[2] = {-1, -1};");
    }
    for (int k = 0; k < r; k++) {
        if (k == r - 1 && rows) {
            /* Output row i<r-2>: its input rows x<r-2> and x<r-2> + dd<r-2>, each sampled along
             * the row into a slot of H_ unless one holds it (a slot the other row needs is not
             * reused), then lerped. Slot s holds the row's [lo, hi) at H_ + s * tile. */
            int a = r - 2;
            const bool whole = n->tile[k] == n->extent[k]; /* literal bounds: vectorised */
            const char *j0 = whole ? "0" : bd_emit_str(e, "lo[%d]", k), *less = whole ? "" : " - ";
            const char *base = whole ? "" : j0; /* a slot's first element is column j0 */
            const char *j1 = whole ? bd_emit_str(e, "%lld", (long long)n->extent[k]) : bd_emit_str(e, "hi[%d]", k);
            bd_emit(e, "const int64_t need_[2] = {%s, %s + dd%d};", xo, xo, a);
            bd_emit(e, "int slot_[2];");
            bd_emit_open(e, "for (int s_ = 0; s_ < 2; s_++)");
            bd_emit(e, "const int64_t src_ = need_[s_];");
            bd_emit(e, "if (key_[0] == src_) { slot_[s_] = 0; continue; }");
            bd_emit(e, "if (key_[1] == src_) { slot_[s_] = 1; continue; }");
            bd_emit(e, "const int v_ = s_ ? 1 - slot_[0] : key_[0] == need_[1];");
            bd_emit(e, "%s *h_ = H_ + v_ * %lld%s%s;", wt, (long long)n->tile[k], less, base);
            bd_emit_open(e, "for (int64_t i%d = %s; i%d < %s; i%d++)", k, j0, k, j1, k);
            bd_emit(e, "const int64_t t%d = src_ + T%d[i%d];", k, k, k);
            bd_emit(e, "const %s ww%d = W%d[i%d];", wt, k, k, k);
            bd_emit(e, "h_[i%d] = (1 - ww%d) * (%s)X[t%d] + ww%d * (%s)X[t%d + D%d[i%d]];", k, k, wt, k, k,
                    wt, k, k, k);
            bd_emit_close(e, NULL);
            bd_emit(e, "key_[v_] = src_;");
            bd_emit(e, "slot_[s_] = v_;");
            bd_emit_close(e, NULL);
            bd_emit(e, "const %s *restrict h0_ = H_ + slot_[0] * %lld%s%s, *restrict h1_ = H_ + slot_[1] * %lld%s%s;",
                    wt, (long long)n->tile[k], less, base, (long long)n->tile[k], less, base);
            bd_emit(e, "for (int64_t i%d = %s; i%d < %s; i%d++) Y[%s + i%d] = (%s)(vv%d * h0_[i%d] + ww%d * h1_[i%d]);",
                    k, j0, k, j1, k, yo, k, type, a, k, a, k);
            for (int j = 0; j < r - 1; j++) bd_emit_close(e, NULL);
            return BD_OK;
        }
        if (k == r - 1 && repeat) {
            /* Each input element of the row written `repeat` times. */
            bd_emit_open(e, "for (int64_t s = 0; s < %lld; s++)", (long long)x->dims[k]);
            bd_emit(e, "const %s v = X[%s + s];", type, xo);
            for (int64_t f = 0; f < repeat; f++)
                bd_emit(e, "Y[%s + s * %lld + %lld] = v;", yo, (long long)repeat, (long long)f);
            bd_emit_close(e, NULL);
            for (int j = 0; j < r - 1; j++) bd_emit_close(e, NULL);
            return BD_OK;
        }
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", k, k, k, k, k);
        const char *ik = bd_emit_str(e, "i%d", k);
        if (!rp->active[k]) {
            bd_emit(e, "const int64_t x%d = %s;", k, offset(e, xo, ik, xs[k]));
        } else {
            bd_emit(e, "const int64_t x%d = %s + T%d[i%d];", k, xo, k, k);
            if (linear) {
                bd_emit(e, "const int64_t dd%d = D%d[i%d];", k, k, k);
                bd_emit(e, "const %s ww%d = W%d[i%d], vv%d = 1 - ww%d;", wt, k, k, k, k, k);
            }
            if (ext[k]) {
                bd_emit(e, "const int e%d = %s%sE%d[i%d];", k, ex ? ex : "", ex ? " | " : "", k, k);
                ex = bd_emit_str(e, "e%d", k);
            }
        }
        bd_emit(e, "const int64_t y%d = %s;", k, offset(e, yo, ik, ys[k]));
        /* Nearest: an output slab whose source equals the previous one's is a copy of it (each
         * input row written twice by a 2x upsample is computed once). The slab is contiguous when
         * the block covers the inner dims whole. */
        bool inner_whole = k < r - 1;
        for (int j = k + 1; j < r; j++) inner_whole &= n->tile[j] == n->extent[j];
        if (!linear && rp->active[k] && inner_whole)
            bd_emit(e, "if (i%d > lo[%d] && T%d[i%d] == T%d[i%d - 1]%s) { memcpy(&Y[y%d], &Y[y%d - %lld], "
                       "%lld * sizeof(%s)); continue; }", k, k, k, k, k, k,
                    ext[k] ? bd_emit_str(e, " && E%d[i%d] == E%d[i%d - 1]", k, k, k, k) : "", k, k,
                    (long long)ys[k], (long long)ys[k], type);
        xo = bd_emit_str(e, "x%d", k);
        yo = bd_emit_str(e, "y%d", k);
    }
    const char *val = linear ? bd_emit_str(e, "(%s)%s", type, lerp_expr(e, lin, nl, 0, xo, wt))
                             : bd_emit_str(e, "X[%s]", xo);
    if (any_ext)
        bd_emit(e, "Y[%s] = %s ? (%s)%s : %s;", yo, ex, type,
                bd_emit_float(e, rp->extrapolation_value, y->dtype), val);
    else
        bd_emit(e, "Y[%s] = %s;", yo, val);
    for (int k = 0; k < r; k++) bd_emit_close(e, NULL);
    return BD_OK;
}

/* ---------------------------------------------------------------- RESIZE, filter modes */

/* Tables of dim k for the filter modes (cubic, antialiased linear), embedded with the weights:
 * TO<k> the input offsets and TW<k> the weights of each output index's taps, E<k> the
 * extrapolation flags (when any is set). Returns whether E<k> exists, -1 when out of memory. */
static int emit_filter_tables(bd_emitter *e, const bd_resize_params *rp, int k, int64_t stride,
                              bool dbl) {
    int taps = rp->taps[k];
    size_t cnt = (size_t)rp->out_extent[k], nt = cnt * (size_t)taps;
    int64_t *idx = malloc(nt * sizeof *idx);
    double *w = malloc(nt * sizeof *w);
    float *wf = malloc(nt * sizeof *wf);
    bool *outside = malloc(cnt * sizeof *outside);
    unsigned char *ex = malloc(cnt);
    int any = idx && w && wf && outside && ex ? 0 : -1;
    if (any == 0) {
        memcpy(idx, rp->tap_idx[k], nt * sizeof *idx);
        memcpy(w, rp->tap_w[k], nt * sizeof *w);
        memcpy(outside, rp->outside[k], cnt * sizeof *outside);
        for (size_t i = 0; i < nt; i++) idx[i] *= stride, wf[i] = (float)w[i];
        for (size_t o = 0; o < cnt; o++) any |= ex[o] = outside[o];
        const char *wt = dbl ? "double" : "float";
        int64_t offo = bd_emit_blob(e, idx, nt * sizeof *idx);
        int64_t offw = dbl ? bd_emit_blob(e, w, nt * sizeof *w)
                           : bd_emit_blob(e, wf, nt * sizeof *wf);
        bd_emit(e, "const int64_t *TO%d = (const int64_t *)(bd_weights + %lld);", k,
                (long long)offo);
        bd_emit(e, "const %s *TW%d = (const %s *)(bd_weights + %lld);", wt, k, wt, (long long)offw);
        if (any) {
            int64_t offe = bd_emit_blob(e, ex, cnt);
            bd_emit(e, "const unsigned char *E%d = (const unsigned char *)(bd_weights + %lld);", k,
                    (long long)offe);
        }
    }
    free(idx), free(w), free(wf), free(outside), free(ex);
    return any;
}

/* The weighted sum over the tap windows of dims act[level..na) read from `src` at `off`: one loop
 * per dim, s<level> += weight * (the sum one level in), i.e. the separable product of the per-dim
 * weights without forming it. Leaves the sum in s<level>. */
static void emit_filter_sum(bd_emitter *e, const int *act, int na, int level, const char *src,
                            const char *off, const char *wt, const int *taps) {
    int k = act[level];
    bd_emit(e, "%s s%d = 0;", wt, level);
    bd_emit_open(e, "for (int t%d = 0; t%d < %d; t%d++)", k, k, taps[k], k);
    const char *at = bd_emit_str(e, "%s + to%d[t%d]", off, k, k);
    if (level + 1 == na) {
        bd_emit(e, "s%d += tw%d[t%d] * (%s)%s[%s];", level, k, k, wt, src, at);
    } else {
        emit_filter_sum(e, act, na, level + 1, src, at, wt, taps);
        bd_emit(e, "s%d += tw%d[t%d] * s%d;", level, k, k, level + 1);
    }
    bd_emit_close(e, NULL);
}

/* The row pass: R[0, qn) += the input span [qlo, qlo + qn) of the last active dim (with the dims
 * inside it) over the tap windows of dims act[level..na-1), weighted by the product of their
 * weights (`wprod` so far). */
static void emit_filter_rows(bd_emitter *e, const int *act, int na, int level, const char *off,
                             const char *wprod, const char *wt, const char *type, const int *taps) {
    if (level == na - 1) {
        bd_emit(e, "const %s *src = &X[%s + qlo];", type, off);
        bd_emit(e, "for (int64_t q = 0; q < qn; q++) R[q] += %s * (%s)src[q];", wprod, wt);
        return;
    }
    int k = act[level];
    bd_emit_open(e, "for (int t%d = 0; t%d < %d; t%d++)", k, k, taps[k], k);
    const char *w = bd_emit_str(e, "p%d", level);
    if (level == 0) bd_emit(e, "const %s %s = tw%d[t%d];", wt, w, k, k);
    else bd_emit(e, "const %s %s = %s * tw%d[t%d];", wt, w, wprod, k, k);
    emit_filter_rows(e, act, na, level + 1, bd_emit_str(e, "%s + to%d[t%d]", off, k, k), w, wt,
                     type, taps);
    bd_emit_close(e, NULL);
}

/* Cubic and antialiased linear: every output element is the weighted sum over the product of its
 * dims' tap windows. With one active dim that sum is read straight from X. With more, each output
 * row of the last active dim L first combines the other active dims' windows into the row buffer
 * R (rp->row_elems elements of scratch), over the span of input that the block's taps along L
 * read, and the taps along L then read R: the filter applied one dim after the other, so a row
 * costs (taps of the other dims) x (input span) + (taps along L) x (outputs) instead of their
 * product. */
static bd_status emit_resize_filter(bd_emitter *e, const bd_nest *n, bd_diag *d) {
    const bd_resize_params *rp = BD_NEST_PARAMS(n, resize);
    const bd_operand *xop = &n->operands[0], *yop = &n->operands[1];
    const bd_value *x = bd_graph_value(e->graph, xop->value), *y = bd_graph_value(e->graph, yop->value);
    const char *type = type_of(e, yop->value);
    bool dbl = y->dtype == BD_DT_DOUBLE;
    const char *wt = dbl ? "double" : "float";
    int r = n->n_iter;
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_value_strides(x, xs);
    bd_value_strides(y, ys);
    bd_emit(e, "const %s *X = %s;", type, bd_emit_ptr(e, xop->value));
    bd_emit(e, "%s *Y = %s;", type, bd_emit_ptr(e, yop->value));

    bool ext[BD_MAX_RANK] = {false}, any_ext = false;
    int act[BD_MAX_RANK], na = 0, taps[BD_MAX_RANK] = {0};
    for (int k = 0; k < r; k++) {
        if (!rp->active[k]) continue;
        int has_ext = emit_filter_tables(e, rp, k, xs[k], dbl);
        if (has_ext < 0) return bd_fail(d, BD_ERR_IO, "out of memory for resize tables");
        ext[k] = has_ext;
        any_ext |= ext[k];
        taps[k] = rp->taps[k];
        act[na++] = k;
    }
    BD_ASSERT(na > 0);
    int last = act[na - 1];
    bool rows = rp->row_elems > 0 && na >= 2;
    if (rows) {
        /* The input span that the block's taps along `last` read (inner dims whole). */
        bd_emit(e, "%s *R = (%s *)scratch;", wt, wt);
        bd_emit(e, "int64_t qlo = TO%d[lo[%d] * %d], qhi = qlo;", last, last, taps[last]);
        bd_emit_open(e, "for (int64_t j = lo[%d] * %d; j < hi[%d] * %d; j++)", last, taps[last],
                     last, taps[last]);
        bd_emit(e, "qlo = TO%d[j] < qlo ? TO%d[j] : qlo;", last, last);
        bd_emit(e, "qhi = TO%d[j] > qhi ? TO%d[j] : qhi;", last, last);
        bd_emit_close(e, NULL);
        bd_emit(e, "const int64_t qn = qhi - qlo + %lld;", (long long)xs[last]);
    }
    const char *xo = "0", *yo = "0", *ex = NULL;
    for (int k = 0; k < r; k++) {
        if (rows && k == last) {
            bd_emit(e, "for (int64_t q = 0; q < qn; q++) R[q] = 0;");
            emit_filter_rows(e, act, na, 0, xo, "", wt, type, taps);
            xo = "-qlo"; /* R holds the input from qlo on */
        }
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", k, k, k, k, k);
        const char *ik = bd_emit_str(e, "i%d", k);
        if (!rp->active[k]) {
            bd_emit(e, "const int64_t x%d = %s;", k, offset(e, xo, ik, xs[k]));
            xo = bd_emit_str(e, "x%d", k);
        } else {
            /* The taps add this dim's offsets (in the row pass or the final sum). */
            bd_emit(e, "const int64_t *to%d = TO%d + i%d * %d;", k, k, k, taps[k]);
            bd_emit(e, "const %s *tw%d = TW%d + i%d * %d;", wt, k, k, k, taps[k]);
            if (ext[k]) {
                bd_emit(e, "const int e%d = %s%sE%d[i%d];", k, ex ? ex : "", ex ? " | " : "", k, k);
                ex = bd_emit_str(e, "e%d", k);
            }
        }
        bd_emit(e, "const int64_t y%d = %s;", k, offset(e, yo, ik, ys[k]));
        yo = bd_emit_str(e, "y%d", k);
    }
    if (rows) emit_filter_sum(e, &act[na - 1], 1, 0, "R", xo, wt, taps);
    else emit_filter_sum(e, act, na, 0, "X", xo, wt, taps);
    if (any_ext)
        bd_emit(e, "Y[%s] = %s ? (%s)%s : (%s)s0;", yo, ex, type,
                bd_emit_float(e, rp->extrapolation_value, y->dtype), type);
    else
        bd_emit(e, "Y[%s] = (%s)s0;", yo, type);
    for (int k = 0; k < r; k++) bd_emit_close(e, NULL);
    return BD_OK;
}

bd_status bd_emit_body_RESIZE(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_resize_params *rp = BD_NEST_PARAMS(n, resize);
    bool any_active = false;
    for (int k = 0; k < n->n_iter; k++) any_active |= rp->active[k];
    /* (With no active dim, the sampling body is the copy it amounts to.) */
    if (rp->filter && any_active) return emit_resize_filter(e, n, d);
    return emit_resize_sample(e, n, d);
}

/* ---------------------------------------------------------------- ROI_ALIGN */

bd_status bd_emit_body_ROI_ALIGN(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_value *x = bd_graph_value(e->graph, n->operands[0].value);
    int64_t C = x->dims[1], plane = x->dims[2] * x->dims[3], oh = n->extent[2], ow = n->extent[3];
    const char *T = type_of(e, n->operands[0].value);
    bd_emit(e, "const %s *X = %s;", T, bd_emit_ptr(e, n->operands[0].value));
    bd_emit(e, "const %s *ROIS = %s;", T, bd_emit_ptr(e, n->operands[1].value));
    bd_emit(e, "const %s *BI = %s;", type_of(e, n->operands[2].value),
            bd_emit_ptr(e, n->operands[2].value));
    bd_emit(e, "%s *Y = %s;", T, bd_emit_ptr(e, n->operands[3].value));
    bd_emit_open(e, "for (int64_t r = lo[0]; r < hi[0]; r++)");
    bd_print_roi_align_box(&e->pr, e->graph, n, "ROIS + r * 4", "BI[r]");
    bd_emit_open(e, "for (int64_t c = lo[1]; c < hi[1]; c++)");
    bd_emit(e, "const int64_t xc = (ra_n * %lld + c) * %lld;", (long long)C, (long long)plane);
    bd_emit_open(e, "for (int64_t ph = lo[2]; ph < hi[2]; ph++)");
    bd_emit_open(e, "for (int64_t pw = lo[3]; pw < hi[3]; pw++)");
    bd_print_roi_align_value(&e->pr, e->graph, n, "X", "xc", "ph", "pw", "y");
    bd_emit(e, "Y[((r * %lld + c) * %lld + ph) * %lld + pw] = y;", (long long)C, (long long)oh,
            (long long)ow);
    for (int k = 0; k < 4; k++) bd_emit_close(e, NULL);
    return BD_OK;
}
