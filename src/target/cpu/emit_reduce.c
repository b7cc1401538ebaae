/* emit_reduce.c — C bodies for REDUCE nests (ReduceSum/Mean/Max) and SOFTMAX nests (Softmax,
 * LogSoftmax).
 *
 * Shapes are static, so every stride and extent is a literal and loops over unit dims vanish.
 * A reduction takes one of two shapes, chosen by the innermost non-unit input dim:
 *  - it is reduced (a row reduction: LayerNorm-style means, sums over the last axis): each output
 *    element folds a contiguous run into independent accumulators while loops over the other
 *    reduced dims step by their strides;
 *  - it is kept (a column reduction: summing over a leading axis): a row of the block's tile is
 *    accumulated in per-thread scratch, one reduced index at a time, so the inner loop runs over
 *    contiguous memory of both operands.
 * Integer sums and means accumulate in 64 bits (the final conversion wraps, as ONNX's reference
 * does); Max keeps NaN (a NaN operand wins, as numpy's maximum does).
 *
 * Softmax is numerically stable: it subtracts the maximum before exponentiating. Along the
 * innermost axis a row goes max -> exp and sum -> scale (or x - max - log(sum) for LogSoftmax);
 * along an outer axis the block keeps a per-column max and sum in scratch and walks the axis
 * three times.
 *
 * Float inner loops use GCC/Clang vector extensions (`vf`, VL lanes) rather than hoping the
 * auto-vectoriser, which -O2 runs with its "very cheap" cost model, takes them; the width follows
 * the flags the model is compiled with (SSE2's 4 floats by default, 8 with AVX2, 16 with
 * AVX-512F), all through one source. exp is an inline Cephes-style expf (range reduction by ln 2,
 * degree-6 polynomial, about 1 ulp) since libm's expf is a scalar call. Tails run scalar. */
#include <string.h>

#include "target/cpu/emit.h"

static bool is_float_dt(int dt) { return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE; }

/* Declares, at block scope, the vector type `vf` of T (float or double), the same-width integer
 * type `vi` its comparisons yield, the lane count VL and a zero vector. */
void bd_emit_vec_types(bd_emitter *e, int dt) {
    const char *t = bd_c_type(dt), *it = dt == BD_DT_FLOAT ? "int32_t" : "int64_t";
    static const struct { const char *cond; int bytes; } widths[] = {
        {"#if defined(__AVX512F__)", 64}, {"#elif defined(__AVX2__)", 32}, {"#else", 16}};
    for (size_t i = 0; i < BD_COUNT(widths); i++) {
        bd_emit(e, "%s", widths[i].cond);
        bd_emit(e, "typedef %s vf __attribute__((vector_size(%d)));", t, widths[i].bytes);
        bd_emit(e, "typedef %s vi __attribute__((vector_size(%d)));", it, widths[i].bytes);
    }
    bd_emit(e, "#endif");
    bd_emit(e, "enum { VL = (int)(sizeof(vf) / sizeof(%s)) };", t);
    bd_emit(e, "const vf vzero = {0};");
    bd_emit(e, "(void)vzero; (void)sizeof(vi);");
}

/* `a = (mask) ? b : a` lane by lane, as a statement. */
static const char *vec_select(bd_emitter *e, const char *a, const char *mask, const char *b) {
    return bd_emit_str(e, "%s = (vf)(((vi)%s & %s) | ((vi)%s & ~%s));", a, b, mask, a, mask);
}

/* A bare `{ ... }` block, closed with bd_emit_close. */
static void scope_open(bd_emitter *e) {
    bd_emit(e, "{");
    e->pr.indent++;
}

/* `out = ` the VL lanes of vector `in` folded into one scalar, by halves kept in registers (64,
 * 32, then 16 bytes, then the 4 or 2 lanes left), max (a lane wins only when greater: NaN never
 * does) or sum, in the same tree as lanes l and l + VL/2, ... folded pairwise. Spilled to an
 * array and folded there, the stores and reloads chained: two such folds took about a third of
 * a 197-element softmax row. */
static void emit_vec_fold(bd_emitter *e, int dt, bool max, const char *out, const char *in) {
    const char *t = bd_c_type(dt), *it = dt == BD_DT_FLOAT ? "int32_t" : "int64_t";
    static const char *halves[] = {"h32", "h16"};
    scope_open(e);
    for (int w = 0; w < 3; w++) { /* AVX-512: 64 -> 32 -> 16 bytes; AVX2: 32 -> 16; else 16 */
        bd_emit(e, "%s", w == 0 ? "#if defined(__AVX512F__)" : w == 1 ? "#elif defined(__AVX2__)" : "#else");
        const char *from = in;
        for (int h = w; h < 2; h++) {
            const char *ty = halves[h];
            int bytes = h == 0 ? 32 : 16;
            bd_emit(e, "typedef %s %s __attribute__((vector_size(%d)));", t, ty, bytes);
            if (max) bd_emit(e, "typedef %s %si __attribute__((vector_size(%d)));", it, ty, bytes);
            bd_emit(e, "%s %sa_, %sb_;", ty, ty, ty);
            bd_emit(e, "memcpy(&%sa_, &%s, %d);", ty, from, bytes);
            bd_emit(e, "memcpy(&%sb_, (const char *)&%s + %d, %d);", ty, from, bytes, bytes);
            if (max)
                bd_emit(e, "{ const %si m_ = %sb_ > %sa_; %sa_ = (%s)(((%si)%sb_ & m_) | ((%si)%sa_ & ~m_)); }",
                        ty, ty, ty, ty, ty, ty, ty, ty, ty);
            else
                bd_emit(e, "%sa_ += %sb_;", ty, ty);
            from = bd_emit_str(e, "%sa_", ty);
        }
        if (w == 2) { /* SSE: the vector is already 16 bytes */
            bd_emit(e, "typedef %s h16 __attribute__((vector_size(16)));", t);
            bd_emit(e, "h16 h16a_;");
            bd_emit(e, "memcpy(&h16a_, &%s, 16);", in);
        }
    }
    bd_emit(e, "#endif");
    if (dt != BD_DT_FLOAT && max)
        bd_emit(e, "%s = h16a_[1] > h16a_[0] ? h16a_[1] : h16a_[0];", out);
    else if (dt != BD_DT_FLOAT)
        bd_emit(e, "%s = h16a_[0] + h16a_[1];", out);
    else if (max) {
        bd_emit(e, "const %s m0_ = h16a_[2] > h16a_[0] ? h16a_[2] : h16a_[0];", t);
        bd_emit(e, "const %s m1_ = h16a_[3] > h16a_[1] ? h16a_[3] : h16a_[1];", t);
        bd_emit(e, "%s = m1_ > m0_ ? m1_ : m0_;", out);
    } else
        bd_emit(e, "%s = (h16a_[0] + h16a_[2]) + (h16a_[1] + h16a_[3]);", out);
    bd_emit_close(e, NULL);
}

/* ---------------------------------------------------------------- reductions */

/* Accumulator type: the element type for floats and for Max, 64 bits for integer sums. */
static const char *acc_type(int dt, bd_reduce_kind kind) {
    if (is_float_dt(dt) || kind == BD_REDUCE_MAX) return bd_c_type(dt);
    return bd_dtype_is_signed(dt) ? "int64_t" : "uint64_t";
}

static const char *acc_init(int dt, bd_reduce_kind kind) {
    if (kind != BD_REDUCE_MAX) return "0";
    if (is_float_dt(dt)) return "-INFINITY";
    switch (dt) {
    case BD_DT_INT8: return "INT8_MIN";
    case BD_DT_INT16: return "INT16_MIN";
    case BD_DT_INT32: return "INT32_MIN";
    case BD_DT_INT64: return "INT64_MIN";
    default: return "0"; /* unsigned, bool */
    }
}

/* The statement folding scalar v into scalar accumulator a. */
static const char *acc_step(bd_emitter *e, int dt, bd_reduce_kind kind, const char *a, const char *v) {
    if (kind != BD_REDUCE_MAX) return bd_emit_str(e, "%s += %s;", a, v);
    if (is_float_dt(dt)) return bd_emit_str(e, "%s = (%s > %s || %s != %s) ? %s : %s;", a, v, a, v, v, v, a);
    return bd_emit_str(e, "%s = %s > %s ? %s : %s;", a, v, a, v, a);
}

/* The statement folding vector v into vector accumulator a (float types). */
static const char *vec_step(bd_emitter *e, bd_reduce_kind kind, const char *a, const char *v) {
    if (kind != BD_REDUCE_MAX) return bd_emit_str(e, "%s += %s;", a, v);
    return bd_emit_str(e, "{ const vi m_ = (%s > %s) | (%s != %s); %s }", v, a, v, v,
                       vec_select(e, a, "m_", v));
}

/* The output element computed from the final accumulator a. */
static const char *acc_final(bd_emitter *e, int dt, bd_reduce_kind kind, int64_t count, const char *a) {
    const char *t = bd_c_type(dt);
    if (kind == BD_REDUCE_MEAN) {
        if (is_float_dt(dt)) /* count 0 gives 0/0 = NaN, numpy's mean of nothing */
            return bd_emit_str(e, "%s / (%s)%lld", a, t, (long long)count);
        if (count == 0) return "0";
        return bd_emit_str(e, "(%s)(%s / %lld)", t, a, (long long)count);
    }
    return bd_emit_str(e, "(%s)%s", t, a);
}

typedef struct reduce_group {
    int64_t stride, len; /* consecutive reduced input dims merged into one loop */
} reduce_group;

/* Row reduction of one output element: outer reduced groups by stride, the last group (when the
 * innermost dim is reduced) contiguous, of length L. */
static void emit_reduce_row(bd_emitter *e, int dt, const bd_reduce_params *prm, const reduce_group *grp,
                            int ng, const char *yoff) {
    const char *t = bd_c_type(dt), *at = acc_type(dt, prm->kind), *init = acc_init(dt, prm->kind);
    bool contiguous = ng && grp[ng - 1].stride == 1;
    int64_t L = contiguous ? grp[ng - 1].len : 1;
    int outer = contiguous ? ng - 1 : ng;
    bool vec = is_float_dt(dt) && L >= 16;
    int nacc = !vec && L >= 16 ? 8 : 1; /* integers: independent scalar accumulators */
    for (int a = 0; a < nacc; a++) bd_emit(e, "%s a%d = %s;", at, a, init);
    if (vec) bd_emit(e, "vf va0 = vzero + %s, va1 = va0;", init);
    for (int gi = 0; gi < outer; gi++)
        bd_emit_open(e, "for (int64_t r%d = 0; r%d < %lld; r%d++)", gi, gi, (long long)grp[gi].len, gi);
    const char *roff = "0";
    for (int gi = 0; gi < outer; gi++) roff = bd_emit_str(e, "%s + r%d * %lld", roff, gi, (long long)grp[gi].stride);
    bd_emit(e, "const %s *restrict xr = xb + (%s);", t, roff);
    if (vec) {
        /* Literal bounds for the main and the tail loop (one running index shared by both trips
         * GCC's -Waggressive-loop-optimizations into a false positive). */
        bd_emit_open(e, "for (int64_t j = 0; j < %lld - %lld %% (2 * VL); j += 2 * VL)", (long long)L, (long long)L);
        bd_emit(e, "vf v0, v1;");
        bd_emit(e, "memcpy(&v0, xr + j, sizeof v0);");
        bd_emit(e, "memcpy(&v1, xr + j + VL, sizeof v1);");
        bd_emit(e, "%s", vec_step(e, prm->kind, "va0", "v0"));
        bd_emit(e, "%s", vec_step(e, prm->kind, "va1", "v1"));
        bd_emit_close(e, NULL);
        bd_emit(e, "for (int64_t j = %lld - %lld %% (2 * VL); j < %lld; j++) %s", (long long)L, (long long)L,
                (long long)L, acc_step(e, dt, prm->kind, "a0", "xr[j]"));
    } else if (nacc > 1) {
        int64_t Lv = L - L % nacc;
        bd_emit_open(e, "for (int64_t j = 0; j < %lld; j += %d)", (long long)Lv, nacc);
        for (int a = 0; a < nacc; a++)
            bd_emit(e, "%s", acc_step(e, dt, prm->kind, bd_emit_str(e, "a%d", a), bd_emit_str(e, "xr[j + %d]", a)));
        bd_emit_close(e, NULL);
        if (L > Lv)
            bd_emit(e, "for (int64_t j = %lld; j < %lld; j++) %s", (long long)Lv, (long long)L,
                    acc_step(e, dt, prm->kind, "a0", "xr[j]"));
    } else if (L > 1) {
        bd_emit(e, "for (int64_t j = 0; j < %lld; j++) %s", (long long)L, acc_step(e, dt, prm->kind, "a0", "xr[j]"));
    } else {
        bd_emit(e, "%s", acc_step(e, dt, prm->kind, "a0", "xr[0]"));
    }
    for (int gi = 0; gi < outer; gi++) bd_emit_close(e, NULL);
    if (vec) {
        bd_emit(e, "%s", vec_step(e, prm->kind, "va0", "va1"));
        bd_emit(e, "for (int l = 0; l < VL; l++) %s", acc_step(e, dt, prm->kind, "a0", "va0[l]"));
    }
    for (int w = nacc / 2; w >= 1; w /= 2)
        for (int a = 0; a < w; a++)
            bd_emit(e, "%s", acc_step(e, dt, prm->kind, bd_emit_str(e, "a%d", a), bd_emit_str(e, "a%d", a + w)));
    bd_emit(e, "Y[%s] = %s;", yoff, acc_final(e, dt, prm->kind, prm->count, "a0"));
}

/* Column reduction: the tile's range [j0, j0 + n) of the innermost kept dim (contiguous in both
 * operands) accumulated in scratch over every reduced index. */
static void emit_reduce_columns(bd_emitter *e, int dt, const bd_reduce_params *prm, const reduce_group *grp,
                                int ng, const char *yoff, int it) {
    const char *t = bd_c_type(dt), *at = acc_type(dt, prm->kind), *init = acc_init(dt, prm->kind);
    bool vec = is_float_dt(dt);
    bd_emit(e, "%s *restrict yb = Y + (%s);", t, yoff);
    bd_emit(e, "%s *restrict A = (%s *)(void *)scratch;", at, at);
    bd_emit(e, "const int64_t j0 = lo[%d], n = hi[%d] - lo[%d], nv = n - n %% %s;", it, it, it, vec ? "VL" : "8");
    bd_emit(e, "(void)nv; /* unused when nothing is reduced */");
    bd_emit(e, "for (int64_t j = 0; j < n; j++) A[j] = %s;", init);
    /* The innermost reduced loop steps four indices at a time (one load and store of the
     * accumulators per four rows), then one at a time for the rest. */
    int64_t last_len = ng ? grp[ng - 1].len : 1, unrolled = vec && ng ? last_len - last_len % 4 : 0;
    for (int pass = 0; pass < 2 && ng; pass++) {
        int rows = pass == 0 ? 4 : 1;
        if (pass == 0 && !unrolled) continue;
        if (pass == 1 && unrolled == last_len) continue;
        for (int gi = 0; gi < ng; gi++) {
            if (gi < ng - 1) bd_emit_open(e, "for (int64_t r%d = 0; r%d < %lld; r%d++)", gi, gi, (long long)grp[gi].len, gi);
            else if (pass == 0) bd_emit_open(e, "for (int64_t r%d = 0; r%d < %lld; r%d += 4)", gi, gi, (long long)unrolled, gi);
            else bd_emit_open(e, "for (int64_t r%d = %lld; r%d < %lld; r%d++)", gi, (long long)unrolled, gi, (long long)last_len, gi);
        }
        const char *roff = "j0";
        for (int gi = 0; gi < ng; gi++) roff = bd_emit_str(e, "%s + r%d * %lld", roff, gi, (long long)grp[gi].stride);
        bd_emit(e, "const %s *restrict xr = xb + (%s);", t, roff);
        if (vec) {
            bd_emit_open(e, "for (int64_t j = 0; j < nv; j += VL)");
            bd_emit(e, "vf a, v;");
            bd_emit(e, "memcpy(&a, A + j, sizeof a);");
            for (int q = 0; q < rows; q++) {
                if (q) bd_emit(e, "memcpy(&v, xr + j + %lld, sizeof v);", (long long)(q * grp[ng - 1].stride));
                else bd_emit(e, "memcpy(&v, xr + j, sizeof v);");
                bd_emit(e, "%s", vec_step(e, prm->kind, "a", "v"));
            }
            bd_emit(e, "memcpy(A + j, &a, sizeof a);");
            bd_emit_close(e, NULL);
        } else {
            bd_emit_open(e, "for (int64_t j = 0; j < nv; j += 8)");
            for (int a = 0; a < 8; a++)
                bd_emit(e, "%s", acc_step(e, dt, prm->kind, bd_emit_str(e, "A[j + %d]", a), bd_emit_str(e, "xr[j + %d]", a)));
            bd_emit_close(e, NULL);
        }
        for (int q = 0; q < rows; q++) {
            const char *xv = q ? bd_emit_str(e, "xr[j + %lld]", (long long)(q * grp[ng - 1].stride)) : "xr[j]";
            bd_emit(e, "for (int64_t j = nv; j < n; j++) %s", acc_step(e, dt, prm->kind, "A[j]", xv));
        }
        for (int gi = 0; gi < ng; gi++) bd_emit_close(e, NULL);
    }
    if (!ng) { /* nothing reduced (noop, or only unit dims): one pass over the row */
        bd_emit(e, "const %s *restrict xr = xb + j0;", t);
        bd_emit(e, "for (int64_t j = 0; j < n; j++) %s", acc_step(e, dt, prm->kind, "A[j]", "xr[j]"));
    }
    bd_emit(e, "for (int64_t j = 0; j < n; j++) yb[j0 + j] = %s;", acc_final(e, dt, prm->kind, prm->count, "A[j]"));
}

bd_status bd_emit_body_REDUCE(bd_emitter *e, const bd_nest *nest, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_reduce_params *prm = BD_NEST_PARAMS(nest, reduce);
    const bd_value *x = bd_graph_value(e->graph, nest->operands[0].value);
    const bd_value *y = bd_graph_value(e->graph, nest->operands[1].value);
    int dt = x->dtype;
    const char *t = bd_c_type(dt);
    BD_ASSERT(t); /* lowering refuses the dtypes without one */
    int64_t xs[BD_MAX_RANK], ys[BD_MAX_RANK];
    bd_value_strides(x, xs);
    bd_value_strides(y, ys);

    /* Kept dims that loop (extent > 1), reduced groups, and which kind of dim is innermost. Unit
     * dims are dropped: that lets reduced dims on either side of one merge. */
    int kept[BD_MAX_RANK], nk = 0, ng = 0, inner = -1;
    reduce_group grp[BD_MAX_RANK];
    bool prev_reduced = false;
    for (int k = 0; k < prm->in_rank; k++) {
        if (x->dims[k] == 1) continue;
        inner = k;
        if (prm->iter_of[k] >= 0) {
            kept[nk++] = k;
            prev_reduced = false;
        } else if (prev_reduced) {
            grp[ng - 1].len *= x->dims[k];
            grp[ng - 1].stride = xs[k];
        } else {
            grp[ng++] = (reduce_group){xs[k], x->dims[k]};
            prev_reduced = true;
        }
    }
    bool column = inner >= 0 && prm->iter_of[inner] >= 0;

    bd_emit(e, "{"); /* scopes the body's names */
    if (is_float_dt(dt)) bd_emit_vec_types(e, dt);
    bd_emit(e, "const %s *restrict X = %s;", t, bd_emit_ptr(e, nest->operands[0].value));
    bd_emit(e, "%s *restrict Y = %s;", t, bd_emit_ptr(e, nest->operands[1].value));
    int n_loops = column ? nk - 1 : nk;
    const char *xoff = "0", *yoff = "0";
    for (int i = 0; i < n_loops; i++) {
        int it = prm->iter_of[kept[i]];
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", it, it, it, it, it);
        xoff = bd_emit_str(e, "%s + i%d * %lld", xoff, it, (long long)xs[kept[i]]);
        yoff = bd_emit_str(e, "%s + i%d * %lld", yoff, it, (long long)ys[it]);
    }
    bd_emit(e, "const %s *xb = X + (%s);", t, xoff);
    bd_emit(e, "(void)xb; /* unused when a reduced extent is 0 */");
    if (column) {
        int it = prm->iter_of[inner];
        BD_ASSERT(xs[inner] == 1 && ys[it] == 1 && nest->scratch_bytes >= 8 * nest->tile[it]);
        emit_reduce_columns(e, dt, prm, grp, ng, yoff, it);
    } else {
        emit_reduce_row(e, dt, prm, grp, ng, yoff);
    }
    for (int i = 0; i < n_loops; i++) bd_emit_close(e, NULL);
    bd_emit(e, "}");
    return BD_OK;
}

/* ---------------------------------------------------------------- softmax */

/* `out = exp(in)` on float vectors for in <= 0, as softmax's x - max always is (below -87.3 it
 * gives 2^-126 instead of a denormal or 0; NaN stays NaN). */
static void emit_vec_exp(bd_emitter *e, const char *out, const char *in) {
    scope_open(e);
    bd_emit(e, "vf x_ = %s;", in);
    bd_emit(e, "const vf lo_ = vzero - 87.3365478515625f;");
    bd_emit(e, "const vi m_ = x_ < lo_;");
    bd_emit(e, "%s", vec_select(e, "x_", "m_", "lo_"));
    /* n = round(x / ln 2) through the 1.5 * 2^23 trick: the low mantissa bits of t_ are n. */
    bd_emit(e, "const vf t_ = x_ * 1.44269504088896341f + 12582912.0f;");
    bd_emit(e, "const vf r_ = t_ - 12582912.0f;");
    bd_emit(e, "const vi n_ = (vi)t_ - 0x4B400000;");
    bd_emit(e, "x_ = x_ - r_ * 0.693359375f;");
    bd_emit(e, "x_ = x_ - r_ * -2.12194440e-4f;");
    bd_emit(e, "vf p_ = x_ * 1.9875691500e-4f + 1.3981999507e-3f;");
    bd_emit(e, "p_ = p_ * x_ + 8.3334519073e-3f;");
    bd_emit(e, "p_ = p_ * x_ + 4.1665795894e-2f;");
    bd_emit(e, "p_ = p_ * x_ + 1.6666665459e-1f;");
    bd_emit(e, "p_ = p_ * x_ + 5.0000001201e-1f;");
    bd_emit(e, "p_ = p_ * x_ * x_ + x_ + 1.0f;");
    bd_emit(e, "%s = p_ * (vf)((n_ + 127) << 23);", out);
    bd_emit_close(e, NULL);
}

/* One contiguous row of n (a literal) elements: xr -> yr. */
void bd_emit_softmax_row(bd_emitter *e, int dt, bool log, int64_t n) {
    const char *t = bd_c_type(dt), *f = dt == BD_DT_FLOAT ? "f" : "";
    long long N = (long long)n;
    bd_emit(e, "%s mx = -INFINITY, sum = 0;", t);
    if (dt == BD_DT_FLOAT) {
        /* max: two vector accumulators, then the lanes and the tail */
        bd_emit(e, "vf vm0 = vzero - INFINITY, vm1 = vm0;");
        bd_emit_open(e, "for (int64_t j = 0; j < %lld - %lld %% (2 * VL); j += 2 * VL)", N, N);
        bd_emit(e, "vf v0, v1;");
        bd_emit(e, "memcpy(&v0, xr + j, sizeof v0);");
        bd_emit(e, "memcpy(&v1, xr + j + VL, sizeof v1);");
        bd_emit(e, "const vi m0 = v0 > vm0, m1 = v1 > vm1;");
        bd_emit(e, "%s", vec_select(e, "vm0", "m0", "v0"));
        bd_emit(e, "%s", vec_select(e, "vm1", "m1", "v1"));
        bd_emit_close(e, NULL);
        /* the two accumulators, then the lanes by halves (four steps deep, not a chain of 32
         * compares each waiting on the last: a row of 64 to 197 is only a few hundred cycles) */
        bd_emit(e, "{ const vi m_ = vm1 > vm0; %s }", vec_select(e, "vm0", "m_", "vm1"));
        emit_vec_fold(e, dt, true, "mx", "vm0");
        bd_emit(e, "for (int64_t j = %lld - %lld %% (2 * VL); j < %lld; j++) mx = xr[j] > mx ? xr[j] : mx;", N, N, N);
        /* exp and sum */
        bd_emit(e, "const vf vmx = vzero + mx;");
        bd_emit(e, "vf vs = vzero;");
        bd_emit_open(e, "for (int64_t j = 0; j < %lld - %lld %% VL; j += VL)", N, N);
        bd_emit(e, "vf v, ev;");
        bd_emit(e, "memcpy(&v, xr + j, sizeof v);");
        emit_vec_exp(e, "ev", "v - vmx");
        if (!log) bd_emit(e, "memcpy(yr + j, &ev, sizeof ev);");
        bd_emit(e, "vs += ev;");
        bd_emit_close(e, NULL);
        emit_vec_fold(e, dt, false, "sum", "vs");
        /* the last partial vector by the same polynomial (a libm call per element cost a third
         * of a 197-element row), its missing lanes padded with the max */
        bd_emit_open(e, "if (%lld %% VL)", N);
        bd_emit(e, "const int64_t j = %lld - %lld %% VL;", N, N);
        bd_emit(e, "vf v = vmx, ev;");
        bd_emit(e, "memcpy(&v, xr + j, (size_t)(%lld %% VL) * sizeof(float));", N);
        emit_vec_exp(e, "ev", "v - vmx");
        bd_emit(e, "for (int l = 0; l < %lld %% VL; l++) { %ssum += ev[l]; }", N, log ? "" : "yr[j + l] = ev[l]; ");
        bd_emit_close(e, NULL);
        /* normalise */
        if (log) bd_emit(e, "const %s s = mx + logf(sum);", t);
        else bd_emit(e, "const %s s = 1 / sum;", t);
        bd_emit(e, "const vf vsc = vzero + s;");
        bd_emit_open(e, "for (int64_t j = 0; j < %lld - %lld %% VL; j += VL)", N, N);
        bd_emit(e, "vf v;");
        bd_emit(e, "memcpy(&v, %s + j, sizeof v);", log ? "xr" : "yr");
        bd_emit(e, "v = v %s vsc;", log ? "-" : "*");
        bd_emit(e, "memcpy(yr + j, &v, sizeof v);");
        bd_emit_close(e, NULL);
        bd_emit(e, "for (int64_t j = %lld - %lld %% VL; j < %lld; j++) yr[j] = %s;", N, N, N,
                log ? "xr[j] - s" : "yr[j] * s");
        return;
    }
    bd_emit(e, "for (int64_t j = 0; j < %lld; j++) mx = xr[j] > mx ? xr[j] : mx;", N);
    if (log) {
        bd_emit(e, "for (int64_t j = 0; j < %lld; j++) sum += exp%s(xr[j] - mx);", N, f);
        bd_emit(e, "const %s lse = mx + log%s(sum);", t, f);
        bd_emit(e, "for (int64_t j = 0; j < %lld; j++) yr[j] = xr[j] - lse;", N);
    } else {
        bd_emit(e, "for (int64_t j = 0; j < %lld; j++) { yr[j] = exp%s(xr[j] - mx); sum += yr[j]; }", N, f);
        bd_emit(e, "const %s inv = 1 / sum;", t);
        bd_emit(e, "for (int64_t j = 0; j < %lld; j++) yr[j] *= inv;", N);
    }
}

/* The softmax axis is not innermost: a row of the tile's last dim at a time, per column max and
 * sum in scratch, the axis (n elements apart by stride) walked three times. */
static void emit_softmax_columns(bd_emitter *e, int dt, bool log, int64_t n, int64_t stride, int last) {
    const char *t = bd_c_type(dt), *f = dt == BD_DT_FLOAT ? "f" : "";
    bool vec = dt == BD_DT_FLOAT;
    bd_emit(e, "%s *restrict M = (%s *)(void *)scratch;", t, t);
    bd_emit(e, "%s *restrict Z = M + (hi[%d] - lo[%d]);", t, last, last);
    bd_emit(e, "const int64_t w = hi[%d] - lo[%d], wv = %s;", last, last, vec ? "w - w % VL" : "0");
    bd_emit(e, "for (int64_t j = 0; j < w; j++) { M[j] = -INFINITY; Z[j] = 0; }");
    bd_emit_open(e, "for (int64_t k = 0; k < %lld; k++)", (long long)n);
    bd_emit(e, "const %s *restrict xk = xr + k * %lld;", t, (long long)stride);
    bd_emit(e, "for (int64_t j = 0; j < w; j++) M[j] = xk[j] > M[j] ? xk[j] : M[j];");
    bd_emit_close(e, NULL);
    bd_emit_open(e, "for (int64_t k = 0; k < %lld; k++)", (long long)n);
    bd_emit(e, "const %s *restrict xk = xr + k * %lld;", t, (long long)stride);
    bd_emit(e, "%s *restrict yk = yr + k * %lld;", t, (long long)stride);
    bd_emit(e, "(void)yk;");
    if (vec) {
        bd_emit_open(e, "for (int64_t j = 0; j < wv; j += VL)");
        bd_emit(e, "vf v, m, ev, z;");
        bd_emit(e, "memcpy(&v, xk + j, sizeof v);");
        bd_emit(e, "memcpy(&m, M + j, sizeof m);");
        emit_vec_exp(e, "ev", "v - m");
        if (!log) bd_emit(e, "memcpy(yk + j, &ev, sizeof ev);");
        bd_emit(e, "memcpy(&z, Z + j, sizeof z);");
        bd_emit(e, "z += ev;");
        bd_emit(e, "memcpy(Z + j, &z, sizeof z);");
        bd_emit_close(e, NULL);
    }
    if (log) bd_emit(e, "for (int64_t j = wv; j < w; j++) Z[j] += exp%s(xk[j] - M[j]);", f);
    else bd_emit(e, "for (int64_t j = wv; j < w; j++) { yk[j] = exp%s(xk[j] - M[j]); Z[j] += yk[j]; }", f);
    bd_emit_close(e, NULL);
    if (log) bd_emit(e, "for (int64_t j = 0; j < w; j++) Z[j] = M[j] + log%s(Z[j]);", f);
    else bd_emit(e, "for (int64_t j = 0; j < w; j++) Z[j] = 1 / Z[j];");
    bd_emit_open(e, "for (int64_t k = 0; k < %lld; k++)", (long long)n);
    bd_emit(e, "const %s *restrict xk = xr + k * %lld;", t, (long long)stride);
    bd_emit(e, "%s *restrict yk = yr + k * %lld;", t, (long long)stride);
    if (log) bd_emit(e, "for (int64_t j = 0; j < w; j++) yk[j] = xk[j] - Z[j];");
    else bd_emit(e, "(void)xk; for (int64_t j = 0; j < w; j++) yk[j] *= Z[j];");
    bd_emit_close(e, NULL);
}

bd_status bd_emit_body_SOFTMAX(bd_emitter *e, const bd_nest *nest, bd_emit_phase phase, bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_softmax_params *prm = BD_NEST_PARAMS(nest, softmax);
    const bd_value *x = bd_graph_value(e->graph, nest->operands[0].value);
    int dt = x->dtype, r = x->rank;
    const char *t = bd_c_type(dt);
    BD_ASSERT(is_float_dt(dt)); /* lowering refuses the others */
    int64_t xs[BD_MAX_RANK], n = 1;
    bd_value_strides(x, xs);
    for (int k = prm->first; k <= prm->last; k++) n *= x->dims[k];
    bool columns = prm->last < r - 1;

    bd_emit(e, "{");
    if (dt == BD_DT_FLOAT) bd_emit_vec_types(e, dt);
    bd_emit(e, "const %s *restrict X = %s;", t, bd_emit_ptr(e, nest->operands[0].value));
    bd_emit(e, "%s *restrict Y = %s;", t, bd_emit_ptr(e, nest->operands[1].value));
    /* Loops over the tiled dims (the last one is the column range when the axis is not innermost). */
    const char *off = columns ? bd_emit_str(e, "lo[%d]", r - 1) : "0";
    int opened = 0;
    for (int k = 0; k < (columns ? r - 1 : r); k++) {
        if ((k >= prm->first && k <= prm->last) || x->dims[k] == 1) continue;
        bd_emit_open(e, "for (int64_t i%d = lo[%d]; i%d < hi[%d]; i%d++)", k, k, k, k, k);
        off = bd_emit_str(e, "%s + i%d * %lld", off, k, (long long)xs[k]);
        opened++;
    }
    bd_emit(e, "const %s *restrict xr = X + (%s);", t, off);
    bd_emit(e, "%s *restrict yr = Y + (%s);", t, off);
    if (columns) emit_softmax_columns(e, dt, prm->log, n, xs[prm->last], r - 1);
    else bd_emit_softmax_row(e, dt, prm->log, n);
    for (int i = 0; i < opened; i++) bd_emit_close(e, NULL);
    bd_emit(e, "}");
    return BD_OK;
}
