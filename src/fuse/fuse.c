/* fuse.c — epilogue fusion over the nest program (see fuse.h): find, for each product nest, the
 * chain of elementwise nests it absorbs, then rewrite it and drop them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"

void bd_fuse_index_build(const bd_program *p, bd_fuse_index *ix) {
    bd_graph *g = p->graph;
    size_t nv = g->values.len, nn = p->nests.len;
    ix->last_writer = malloc((nv + 1) * sizeof *ix->last_writer);
    ix->reader_start = calloc(nv + 2, sizeof *ix->reader_start);
    ix->graph_output = calloc(nv + 1, sizeof *ix->graph_output);
    BD_ASSERT(ix->last_writer && ix->reader_start && ix->graph_output);
    for (size_t v = 0; v < nv; v++) {
        ix->last_writer[v] = -1;
        ix->graph_output[v] = (bd_graph_value(g, (int)v)->flags & BD_VALUE_OUTPUT) != 0;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        ix->graph_output[BD_VEC_AT(&g->outputs, int, i)] = true;
    /* Count each (value, reading nest) pair once, then place them. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < nn; i++) {
            const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
            for (int k = 0; k < n->n_operands; k++) {
                const bd_operand *o = &n->operands[k];
                if (o->write) {
                    ix->last_writer[o->value] = (int)i;
                    continue;
                }
                bool again = false;
                for (int j = 0; j < k && !again; j++)
                    again = !n->operands[j].write && n->operands[j].value == o->value;
                if (again) continue;
                if (pass == 0)
                    ix->reader_start[o->value + 1]++;
                else
                    ix->reader[ix->reader_start[o->value + 1]++] = (int)i;
            }
        }
        if (pass == 0) {
            for (size_t v = 0; v < nv; v++)
                ix->reader_start[v + 1] += ix->reader_start[v];
            ix->reader = malloc(((size_t)ix->reader_start[nv] + 1) * sizeof *ix->reader);
            BD_ASSERT(ix->reader);
            /* second pass fills from the front: shift the starts down by one slot */
            memmove(ix->reader_start + 1, ix->reader_start, nv * sizeof *ix->reader_start);
            ix->reader_start[0] = 0;
        }
    }
}

void bd_fuse_index_free(bd_fuse_index *ix) {
    free(ix->last_writer);
    free(ix->reader_start);
    free(ix->reader);
    free(ix->graph_output);
}

static int readers(const bd_fuse_index *ix, int v) {
    return ix->reader_start[v + 1] - ix->reader_start[v];
}

int bd_fuse_sole_reader(const bd_fuse_index *ix, int v) {
    if (ix->graph_output[v] || readers(ix, v) != 1) return -1;
    return ix->reader[ix->reader_start[v]];
}

static bd_nest *nest_at(bd_program *p, int i) {
    return &BD_VEC_AT(&p->nests, bd_nest, i);
}

/* Records a decision: nest `absorbed` into nest `into` (NULL: none), and why. */
static void note(bd_program *p, const bd_nest *absorbed, const bd_nest *into, bool fused,
                 const char *why) {
    bd_fusion_note *f = bd_vec_push(&p->fusion_notes);
    *f = (bd_fusion_note){absorbed->node, into ? into->node : -1, fused, why};
}

/* A float32, non-constant value of static shape equal to ref's. */
static bool same_float_shape(const bd_value *v, const bd_value *ref) {
    if (v->constant || v->dtype != BD_DT_FLOAT || !bd_value_shape_known(v) || v->rank != ref->rank)
        return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] != ref->dims[i]) return false;
    return true;
}

static int written_value(const bd_nest *n) {
    return n->operands[n->n_operands - 1].value;
}

/* An elementwise nest computing op(load a, load b) in float32 and nothing else: its operands are
 * the two inputs and the output, and *other is the input that is not `cur`. */
static bool binary_of(const bd_program *p, const bd_nest *c, bd_expr_op op, int cur, int *other,
                      const bd_value *ref) {
    const bd_expr *x = &c->params.expr;
    if (c->body != BD_BODY_ELEMENTWISE || x->n != 3 || c->n_operands != 3) return false;
    const bd_expr_node *r = bd_expr_root(x);
    if (r->op != op || r->dtype != BD_DT_FLOAT) return false;
    const bd_expr_node *a = &x->node[r->arg[0]], *b = &x->node[r->arg[1]];
    if (a->op != BD_EXPR_LOAD || b->op != BD_EXPR_LOAD || a->operand == b->operand) return false;
    int va = c->operands[a->operand].value, vb = c->operands[b->operand].value;
    if (va != cur && vb != cur) return false;
    *other = va == cur ? vb : va;
    if (*other == cur) return false;
    return same_float_shape(bd_graph_value(p->graph, written_value(c)), ref);
}

/* Element ops an absorbed single-input activation may use (Relu, LeakyRelu, HardSwish, Clip). */
static bool activation_op(bd_expr_op op) {
    return op == BD_EXPR_LOAD || op == BD_EXPR_CONST || op == BD_EXPR_RELU ||
           op == BD_EXPR_LEAKY_RELU || op == BD_EXPR_HARD_SWISH || op == BD_EXPR_CLAMP_MIN ||
           op == BD_EXPR_CLAMP_MAX;
}

/* Nest c as an activation of value cur: its expression with cur as LOAD 0 and its other inputs,
 * which must be float32 constant scalars (Clip's bounds), as constants, into act. */
static bool activation_of(const bd_program *p, const bd_nest *c, int cur, const bd_value *ref,
                          bd_expr *act) {
    bd_graph *g = p->graph;
    const bd_expr *x = &c->params.expr;
    if (c->body != BD_BODY_ELEMENTWISE ||
        !same_float_shape(bd_graph_value(g, written_value(c)), ref))
        return false;
    for (int i = 0; i < x->n; i++) {
        const bd_expr_node *e = &x->node[i];
        if (!activation_op(e->op) || e->dtype != BD_DT_FLOAT) return false;
        if (e->op == BD_EXPR_CONST && e->k[0] != e->k[0]) return false; /* NaN bound */
    }
    memset(act, 0, sizeof *act);
    int leaf[BD_NEST_MAX_OPERANDS];
    int x0 = bd_expr_load(act, 0, BD_DT_FLOAT);
    for (int k = 0; k < c->n_operands - 1; k++) {
        int v = c->operands[k].value;
        const bd_value *val = bd_graph_value(g, v);
        if (v == cur && k == 0) {
            leaf[k] = x0;
            continue;
        }
        if (v == cur || !val->constant || val->dtype != BD_DT_FLOAT || val->constant->numel != 1)
            return false;
        float k0 = (float)bd_tensor_get_f64(val->constant, 0);
        if (k0 != k0) return false;
        leaf[k] = bd_expr_const(act, k0, BD_DT_FLOAT);
    }
    if (c->n_operands < 2 || c->operands[0].value != cur) return false;
    int r = bd_expr_splice(act, x, leaf);
    if (r < 0) return false;
    if (bd_expr_root(act)->op == BD_EXPR_LOAD)
        act->n = 0; /* Clip without bounds: nothing to do */
    else if (r != act->n - 1)
        return false;
    return true;
}

/* A QuantizeLinear nest of value cur (of ref's shape) to 8 bits, with one constant scale and
 * zero point, after no residual and an activation that only clamps (what the 8-bit kernel's
 * requantizing epilogue computes): its scale and zero point into the epilogue. */
static bool quantize_of(const bd_program *p, const bd_nest *c, int cur, const bd_value *ref,
                        bd_epilogue *epi) {
    bd_graph *g = p->graph;
    const bd_value *y = bd_graph_value(g, written_value(c));
    double lo, hi, k[2] = {1, 0};
    if (c->body != BD_BODY_ELEMENTWISE || c->node < 0 ||
        bd_graph_node(g, c->node)->op != BD_OP_QUANTIZE_LINEAR || c->operands[0].value != cur ||
        (y->dtype != BD_DT_UINT8 && y->dtype != BD_DT_INT8) || y->rank != ref->rank ||
        epi->residual >= 0 || !bd_expr_clamp_bounds(&epi->act, &lo, &hi))
        return false;
    for (int i = 0; i < y->rank; i++)
        if (y->dims[i] != ref->dims[i]) return false;
    for (int i = 1; i < c->n_operands - 1; i++) { /* the scale, the zero point */
        const bd_value *v = bd_graph_value(g, c->operands[i].value);
        if (!v->constant || v->constant->numel != 1) return false;
        k[i - 1] = bd_tensor_get_f64(v->constant, 0);
    }
    if (!(k[0] > 0) || !isfinite(k[0])) return false;
    epi->requant = true;
    epi->q_scale = k[0];
    epi->q_zero = k[1];
    return true;
}

/* SiLU: value cur read by exactly a Sigmoid nest s and a Mul nest m = cur * s(cur) (either
 * order); the activation SILU(x) into act, the two nests into *s_out, *m_out. */
static bool silu_of(const bd_program *p, const bd_fuse_index *ix, int cur, const bd_value *ref,
                    bd_expr *act, int *s_out, int *m_out) {
    if (ix->graph_output[cur] || readers(ix, cur) != 2) return false;
    for (int t = 0; t < 2; t++) {
        int s = ix->reader[ix->reader_start[cur] + t],
            m = ix->reader[ix->reader_start[cur] + 1 - t];
        const bd_nest *sn = &BD_VEC_AT(&p->nests, bd_nest, s),
                      *mn = &BD_VEC_AT(&p->nests, bd_nest, m);
        const bd_expr *sx = &sn->params.expr;
        if (sn->body != BD_BODY_ELEMENTWISE || sx->n != 2 || sn->n_operands != 2 ||
            bd_expr_root(sx)->op != BD_EXPR_SIGMOID || bd_expr_root(sx)->dtype != BD_DT_FLOAT ||
            sn->operands[0].value != cur)
            continue;
        int sv = written_value(sn), other;
        if (!same_float_shape(bd_graph_value(p->graph, sv), ref) || bd_fuse_sole_reader(ix, sv) != m)
            continue;
        if (!binary_of(p, mn, BD_EXPR_MUL, cur, &other, ref) || other != sv) continue;
        memset(act, 0, sizeof *act);
        bd_expr_unary(act, BD_EXPR_SILU, BD_DT_FLOAT, bd_expr_load(act, 0, BD_DT_FLOAT));
        *s_out = s;
        *m_out = m;
        return true;
    }
    return false;
}

/* An elementwise nest computing op(load cur, k) in float32, k a scalar float constant (loaded or
 * inline; either side when op commutes), its output of ref's shape; k into *k. */
static bool scalar_op_of(const bd_program *p, const bd_nest *c, bd_expr_op op, int cur,
                         const bd_value *ref, double *k) {
    const bd_expr *x = &c->params.expr;
    if (c->body != BD_BODY_ELEMENTWISE || x->n != 3 || c->n_operands > 3 ||
        !same_float_shape(bd_graph_value(p->graph, written_value(c)), ref))
        return false;
    const bd_expr_node *r = bd_expr_root(x);
    if (r->op != op || r->dtype != BD_DT_FLOAT) return false;
    bool commutes = op == BD_EXPR_ADD || op == BD_EXPR_MUL;
    for (int t = 0; t < (commutes ? 2 : 1); t++) {
        const bd_expr_node *a = &x->node[r->arg[t]], *b = &x->node[r->arg[1 - t]];
        if (a->op != BD_EXPR_LOAD || c->operands[a->operand].value != cur) continue;
        if (b->op == BD_EXPR_CONST) {
            *k = b->k[0];
            return true;
        }
        const bd_value *v = b->op == BD_EXPR_LOAD ? bd_graph_value(p->graph, c->operands[b->operand].value) : NULL;
        if (v && v->constant && v->dtype == BD_DT_FLOAT && v->constant->numel == 1) {
            *k = bd_tensor_get_f64(v->constant, 0);
            return true;
        }
    }
    return false;
}

static bool near(double a, double b) {
    return a == a && a > b - 1e-6 * b && a < b + 1e-6 * b;
}

/* GELU (the erf form), as exporters spell it: cur read by exactly D = cur / sqrt(2) (or
 * cur * (1 / sqrt(2))) and P; D -> Erf -> + 1 = A; then either P = cur * A, H = P * 0.5
 * (torch.onnx) or P = cur * 0.5, M = P * A (Hugging Face's x * 0.5 * (1 + erf(x / sqrt(2)))).
 * Each intermediate read only by the next. The activation GELU(x) into act, the five nests into
 * chain[], the last one's output is the result. */
static bool gelu_of(const bd_program *p, const bd_fuse_index *ix, int cur, const bd_value *ref,
                    bd_expr *act, int chain[5]) {
    if (ix->graph_output[cur] || readers(ix, cur) != 2) return false;
    for (int t = 0; t < 2; t++) {
        int d = ix->reader[ix->reader_start[cur] + t], pn = ix->reader[ix->reader_start[cur] + 1 - t];
        const bd_nest *dn = &BD_VEC_AT(&p->nests, bd_nest, d);
        double k;
        if (!(scalar_op_of(p, dn, BD_EXPR_DIV, cur, ref, &k) && near(k, 1.4142135623730951)) &&
            !(scalar_op_of(p, dn, BD_EXPR_MUL, cur, ref, &k) && near(k, 0.7071067811865476)))
            continue;
        int e = bd_fuse_sole_reader(ix, written_value(dn));
        if (e < 0) continue;
        const bd_nest *en = &BD_VEC_AT(&p->nests, bd_nest, e);
        const bd_expr *ex = &en->params.expr;
        if (en->body != BD_BODY_ELEMENTWISE || ex->n != 2 || en->n_operands != 2 ||
            bd_expr_root(ex)->op != BD_EXPR_ERF || bd_expr_root(ex)->dtype != BD_DT_FLOAT ||
            en->operands[0].value != written_value(dn) ||
            !same_float_shape(bd_graph_value(p->graph, written_value(en)), ref))
            continue;
        int a = bd_fuse_sole_reader(ix, written_value(en));
        if (a < 0 || !scalar_op_of(p, &BD_VEC_AT(&p->nests, bd_nest, a), BD_EXPR_ADD, written_value(en), ref, &k) ||
            k != 1.0)
            continue;
        int av = written_value(&BD_VEC_AT(&p->nests, bd_nest, a)), m = bd_fuse_sole_reader(ix, av), other, h;
        const bd_nest *pnest = &BD_VEC_AT(&p->nests, bd_nest, pn);
        if (m == pn && binary_of(p, pnest, BD_EXPR_MUL, cur, &other, ref) && other == av &&
            (h = bd_fuse_sole_reader(ix, written_value(pnest))) >= 0 &&
            scalar_op_of(p, &BD_VEC_AT(&p->nests, bd_nest, h), BD_EXPR_MUL, written_value(pnest), ref, &k) &&
            k == 0.5) {
            chain[3] = pn, chain[4] = h;
        } else if (m >= 0 && m != pn && scalar_op_of(p, pnest, BD_EXPR_MUL, cur, ref, &k) && k == 0.5 &&
                   bd_fuse_sole_reader(ix, written_value(pnest)) == m &&
                   binary_of(p, &BD_VEC_AT(&p->nests, bd_nest, m), BD_EXPR_MUL, written_value(pnest), &other, ref) &&
                   other == av) {
            chain[3] = pn, chain[4] = m;
        } else {
            continue;
        }
        chain[0] = d, chain[1] = e, chain[2] = a;
        memset(act, 0, sizeof *act);
        bd_expr_unary(act, BD_EXPR_GELU, BD_DT_FLOAT, bd_expr_load(act, 0, BD_DT_FLOAT));
        return true;
    }
    return false;
}

/* Inserts a read of `value` through c's operand k's map just before nest n's output operand
 * (operand index `*y`, which moves up by one); returns the new operand's index. */
static int insert_before_output(bd_nest *n, int *y, const bd_nest *c, int value) {
    BD_ASSERT(n->n_operands < BD_NEST_MAX_OPERANDS && *y == n->n_operands - 1);
    const bd_operand *src = NULL;
    for (int k = 0; k < c->n_operands && !src; k++)
        if (!c->operands[k].write && c->operands[k].value == value) src = &c->operands[k];
    BD_ASSERT(src);
    n->operands[n->n_operands] = n->operands[*y];
    n->operands[*y] = *src;
    n->n_operands++;
    return (*y)++;
}

/* Whether value v is computed before nest `before` (or needs no nest: an input or constant). */
static bool ready_before(const bd_fuse_index *ix, int v, int before) {
    return ix->last_writer[v] < before;
}

/* Finds and applies the chain nest i absorbs; marks the absorbed nests in dead[]. */
static void absorb_chain(bd_program *p, const bd_fuse_index *ix, int i, bool *dead) {
    bd_graph *g = p->graph;
    bd_nest *n = nest_at(p, i);
    /* a BatchNormalization not folded into a Conv (DenseNet's, before its convolutions) takes
     * only the activation after it */
    const bool norm = n->body == BD_BODY_NORM && n->params.norm.kind == BD_NORM_BATCH &&
                      n->params.norm.mean_out < 0 && n->params.norm.inv_out < 0;
    if (n->body != BD_BODY_CONV && n->body != BD_BODY_CONV_TRANSPOSE && n->body != BD_BODY_MATMUL &&
        !norm)
        return;
    int *y = n->body == BD_BODY_MATMUL ? &n->params.matmul.y
             : norm                    ? &n->params.norm.y
                                       : &n->params.conv.y;
    const bd_value *ref = bd_graph_value(g, n->operands[*y].value);
    if (ref->constant || ref->dtype != BD_DT_FLOAT || !bd_value_shape_known(ref)) return;
    int cur = n->operands[*y].value, other, c;

    /* MATMUL with an N axis and no C: a bias Add along N first */
    bd_matmul_params *mp = n->body == BD_BODY_MATMUL ? &n->params.matmul : NULL;
    if (mp && !mp->gemm && mp->n_iter >= 0 && mp->c < 0 && (c = bd_fuse_sole_reader(ix, cur)) >= 0 &&
        binary_of(p, nest_at(p, c), BD_EXPR_ADD, cur, &other, ref) && ready_before(ix, other, i)) {
        const bd_value *b = bd_graph_value(g, other);
        bool along_n = b->dtype == BD_DT_FLOAT && bd_value_shape_known(b) && b->rank >= 1 &&
                       b->rank <= ref->rank && ref->rank >= 1 &&
                       b->dims[b->rank - 1] == ref->dims[ref->rank - 1];
        for (int k = 0; k < b->rank - 1 && along_n; k++)
            along_n = b->dims[k] == 1;
        if (along_n) {
            mp->c = insert_before_output(n, y, nest_at(p, c), other);
            note(p, nest_at(p, c), n, true, "bias Add into the GEMM's C (epilogue)");
            mp->beta = 1.0f;
            dead[c] = true;
            cur = written_value(nest_at(p, c));
        }
    }
    /* a residual Add */
    if (!norm && (c = bd_fuse_sole_reader(ix, cur)) >= 0 &&
        binary_of(p, nest_at(p, c), BD_EXPR_ADD, cur, &other, ref) && ready_before(ix, other, i) &&
        same_float_shape(bd_graph_value(g, other), ref)) {
        n->epi.residual = insert_before_output(n, y, nest_at(p, c), other);
        note(p, nest_at(p, c), n, true, "residual Add into the epilogue");
        dead[c] = true;
        cur = written_value(nest_at(p, c));
    }
    /* an activation */
    c = bd_fuse_sole_reader(ix, cur);
    int s, m, gelu[5];
    if (c >= 0 && activation_of(p, nest_at(p, c), cur, ref, &n->epi.act)) {
        note(p, nest_at(p, c), n, true, "activation into the epilogue");
        dead[c] = true;
        cur = written_value(nest_at(p, c));
    } else if (c < 0 && silu_of(p, ix, cur, ref, &n->epi.act, &s, &m)) {
        note(p, nest_at(p, m), n, true, "SiLU (Sigmoid and Mul) into the epilogue");
        dead[s] = dead[m] = true;
        cur = written_value(nest_at(p, m));
    } else if (c < 0 && gelu_of(p, ix, cur, ref, &n->epi.act, gelu)) {
        note(p, nest_at(p, gelu[1]), n, true, "GELU (Div, Erf, Add, Mul, Mul) into the epilogue");
        for (int k = 0; k < 5; k++) dead[gelu[k]] = true;
        cur = written_value(nest_at(p, gelu[4]));
    } else {
        memset(&n->epi.act, 0, sizeof n->epi.act);
    }
    /* a QuantizeLinear, into the 8-bit convolution kernel's epilogue, which stores its tile
     * requantized (targets whose tilers choose that kernel's direct path) */
    if (n->body == BD_BODY_CONV && n->params.conv.i8_direct && n->params.conv.x_scale >= 0 &&
        (c = bd_fuse_sole_reader(ix, cur)) >= 0 && quantize_of(p, nest_at(p, c), cur, ref, &n->epi)) {
        note(p, nest_at(p, c), n, true, "QuantizeLinear into the 8-bit kernel's epilogue");
        dead[c] = true;
        cur = written_value(nest_at(p, c));
    }
    n->operands[*y].value = cur;
}

/* ---------------------------------------------------------------- prologues */

/* Appends a read of the whole of `value` (a constant the nest reads at every point) before nest
 * n's output operand (index `*y`, which moves up by one); returns the new operand's index. */
static int insert_whole_before_output(bd_program *p, bd_nest *n, int *y, int value) {
    BD_ASSERT(n->n_operands < BD_NEST_MAX_OPERANDS && *y == n->n_operands - 1);
    bd_operand o;
    memset(&o, 0, sizeof o);
    o.value = value;
    o.rank = bd_graph_value(p->graph, value)->rank;
    for (int k = 0; k < o.rank; k++)
        o.dims[k] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
    n->operands[n->n_operands] = n->operands[*y];
    n->operands[*y] = o;
    n->n_operands++;
    return (*y)++;
}

/* An inference BatchNormalization (with the Relu it absorbed, or none) whose output only a packed
 * 1x1 convolution reads, as its input (DenseNet's, on its concats): the convolution reads the
 * normalization's input instead and the kernel applies it to that input as it packs it for the
 * GEMM, or prepares its rows for the 16-lane direct kernel (bd_f32_conv2d_tile_pre), so the
 * normalized tensor is never stored. Targets whose tilers pack no convolution weights (the GPU
 * printers) never meet the case. */
static void absorb_prologue(bd_program *p, const bd_fuse_index *ix, int i, bool *dead) {
    bd_graph *g = p->graph;
    bd_nest *b = nest_at(p, i);
    const bd_norm_params *np = &b->params.norm;
    if (b->body != BD_BODY_NORM || np->kind != BD_NORM_BATCH || np->mean_out >= 0 || np->inv_out >= 0 ||
        !np->folded || np->per_activation || b->epi.residual >= 0)
        return;
    const bd_value *x = bd_graph_value(g, b->operands[np->x].value);
    if (x->dtype != BD_DT_FLOAT || x->rank != 4 || np->channels != x->dims[1] || x->dims[1] < 2) return;
    const bd_expr_node *r = bd_expr_root(&b->epi.act);
    bool relu = r && r->op == BD_EXPR_RELU && b->epi.act.node[r->arg[0]].op == BD_EXPR_LOAD &&
                b->epi.act.node[r->arg[0]].operand == 0;
    if (r && !relu) return;
    int v = b->operands[np->y].value, c = bd_fuse_sole_reader(ix, v);
    if (c < 0) return;
    bd_nest *cn = nest_at(p, c);
    bd_conv_params *cp = &cn->params.conv;
    if (cn->body != BD_BODY_CONV) return;
    bool pointwise = cp->nsp == 2 && cp->group == 1;
    for (int k = 0; k < cp->nsp && pointwise; k++)
        pointwise = cp->kernel[k] == 1 && cp->strides[k] == 1 && cp->dilations[k] == 1 &&
                    cp->pads[k] == 0 && cp->pads[cp->nsp + k] == 0;
    bool only_x = cn->operands[cp->x].value == v;
    for (int k = 0; k < cn->n_operands; k++)
        only_x &= k == cp->x || cn->operands[k].value != v;
    if (!cp->packed || cp->winograd || cp->pre || cp->x_zero >= 0 || cp->x_scale >= 0 || !pointwise ||
        !only_x || cp->y != cn->n_operands - 1) {
        note(p, b, cn, false, "BatchNormalization into a convolution's prologue: only a packed 1x1 "
                              "convolution reading it alone, as its input, takes one");
        return;
    }
    cn->operands[cp->x].value = b->operands[np->x].value; /* same dims, same map */
    cp->pre_scale = insert_whole_before_output(p, cn, &cp->y, b->operands[np->scale].value);
    cp->pre_bias = insert_whole_before_output(p, cn, &cp->y, b->operands[np->bias].value);
    cp->pre_mean = insert_whole_before_output(p, cn, &cp->y, b->operands[np->mean].value);
    cp->pre_var = insert_whole_before_output(p, cn, &cp->y, b->operands[np->var].value);
    cp->pre_epsilon = np->epsilon;
    cp->pre_relu = relu;
    cp->pre = true;
    note(p, b, cn, true, relu ? "BatchNormalization and its Relu into the 1x1 convolution's prologue"
                              : "BatchNormalization into the 1x1 convolution's prologue");
    dead[i] = true;
}

/* ---------------------------------------------------------------- block fusion: IDENTITY chains */

static bool same_domain(const bd_nest *a, const bd_nest *b) {
    if (a->n_iter != b->n_iter) return false;
    for (int k = 0; k < a->n_iter; k++)
        if (a->extent[k] != b->extent[k]) return false;
    return true;
}

int bd_fuse_expr_cost(const bd_expr *x) {
    int c = 0;
    for (int i = 0; i < x->n; i++) {
        switch (x->node[i].op) {
        case BD_EXPR_LOAD:
        case BD_EXPR_CONST: break;
        case BD_EXPR_EXP:
        case BD_EXPR_LOG:
        case BD_EXPR_ERF:
        case BD_EXPR_TANH:
        case BD_EXPR_SIGMOID:
        case BD_EXPR_POW:
        case BD_EXPR_GELU:
        case BD_EXPR_GELU_TANH:
        case BD_EXPR_SILU: c += 20; break;
        case BD_EXPR_DIV:
        case BD_EXPR_SQRT:
        case BD_EXPR_RECIPROCAL: c += 4; break;
        default: c += 1;
        }
    }
    return c;
}

/* Consumer c with producer pn's expression inlined for its loads of value v: the operands are c's
 * reads except v, then pn's reads not already there, then c's write. False (c unchanged) when it
 * would exceed the operand or expression capacity. */
static bool inline_producer(bd_nest *c, const bd_nest *pn, int v) {
    bd_nest out = *c;
    out.n_operands = 0;
    int map_c[BD_NEST_MAX_OPERANDS], map_p[BD_NEST_MAX_OPERANDS];
    const bd_operand *ops[2 * BD_NEST_MAX_OPERANDS];
    int n = 0;
    for (int k = 0; k < c->n_operands; k++) {
        map_c[k] = -1;
        if (c->operands[k].write || c->operands[k].value == v) continue;
        map_c[k] = n;
        ops[n++] = &c->operands[k];
    }
    for (int k = 0; k < pn->n_operands; k++) {
        map_p[k] = -1;
        const bd_operand *o = &pn->operands[k];
        if (o->write) continue;
        for (int j = 0; j < n && map_p[k] < 0; j++)
            if (ops[j]->value == o->value && !memcmp(ops[j]->dims, o->dims, sizeof o->dims))
                map_p[k] = j;
        if (map_p[k] < 0) {
            map_p[k] = n;
            ops[n++] = o;
        }
    }
    int w = c->n_operands - 1;
    BD_ASSERT(c->operands[w].write);
    if (n + 1 > BD_NEST_MAX_OPERANDS) return false;
    for (int j = 0; j < n; j++)
        out.operands[j] = *ops[j];
    out.operands[n] = c->operands[w];
    out.n_operands = n + 1;
    /* Splice pn's expression, then c's over it; renumber each part's loads to the new operands. */
    bd_expr x = {0};
    int leaf_c[BD_NEST_MAX_OPERANDS];
    int rp = bd_expr_splice(&x, &pn->params.expr, NULL);
    int split = x.n;
    for (int i = 0; i < split; i++)
        if (bd_expr_reads_operand(&x.node[i])) x.node[i].operand = map_p[x.node[i].operand];
    for (int k = 0; k < c->n_operands; k++)
        leaf_c[k] = c->operands[k].value == v && !c->operands[k].write ? rp : -1;
    int rc = rp < 0 ? -1 : bd_expr_splice(&x, &c->params.expr, leaf_c);
    if (rc < 0 || x.overflow) return false;
    for (int i = split; i < x.n; i++)
        if (bd_expr_reads_operand(&x.node[i])) x.node[i].operand = map_c[x.node[i].operand];
    bd_expr_compact(&x, rc);
    out.params.expr = x;
    *c = out;
    return true;
}

/* Recomputing a shared producer in each consumer pays when the flops it repeats cost less than
 * the memory traffic it saves: a write and a read of each element, at about FLOPS_PER_BYTE flops
 * per byte of bandwidth on a CPU core (its FMA rate over its cache-to-core bandwidth). */
enum { FLOPS_PER_BYTE = 2 };

/* Why elementwise nest pn, writing v (not a graph output, read), cannot be inlined into every
 * reader when it costs `cost` per element; NULL when it can. */
static const char *chain_refusal(const bd_program *p, const bd_fuse_index *ix, const bd_nest *pn,
                                 int v, int cost) {
    int nr = readers(ix, v);
    for (int r = 0; r < nr; r++) {
        const bd_nest *c = &BD_VEC_AT(&p->nests, bd_nest, ix->reader[ix->reader_start[v] + r]);
        for (int i = 0; c->body == BD_BODY_ELEMENTWISE && i < c->params.expr.n; i++)
            if (c->params.expr.node[i].op == BD_EXPR_LOOKUP &&
                c->operands[c->params.expr.node[i].operand].value == v)
                return "a table (tables.c), which its readers look up";
        if (c->body != BD_BODY_ELEMENTWISE) return "a consumer is not elementwise";
        if (!same_domain(pn, c)) return "a consumer iterates another domain (a broadcast)";
        for (int k = 0; k < c->n_operands; k++)
            if (!c->operands[k].write && c->operands[k].value == v &&
                !bd_access_is_identity(&c->operands[k], c->n_iter))
                return "a consumer reads it through a non-IDENTITY map";
    }
    int bits = bd_dtype_bits(bd_graph_value(p->graph, v)->dtype);
    if (nr > 1 && (nr - 1) * cost > FLOPS_PER_BYTE * 2 * bits / 8)
        return "recomputing it in each consumer costs more than storing it";
    return NULL;
}

/* Each elementwise nest whose output only elementwise nests read, all through IDENTITY maps over
 * its own domain, is inlined into every one of them and disappears; in program order, so a chain
 * collapses into its last nest. Two exceptions keep 8-bit values stored:
 *   - an 8-bit value whose one reader is recomputed in each of its own readers (a
 *     DequantizeLinear read twice, as GELU's x is): inlined, the whole chain behind it would be
 *     recomputed, or stored in float; stored, it costs a byte per element and its readers compute
 *     a function of one 8-bit tensor, which tables.c turns into a lookup;
 *   - a table lookup (tables.c) is inlined, or takes in its producer, only where the result is
 *     again a function of one 8-bit tensor, which tables.c tabulates anew: inside other work a
 *     lookup would keep the loop from vectorizing. */
static void fuse_chains(bd_program *p, bool *dead) {
    bd_fuse_index ix = {0};
    bd_fuse_index_build(p, &ix);
    bd_graph *g = p->graph;
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *pn = nest_at(p, (int)i);
        if (dead[i] || pn->body != BD_BODY_ELEMENTWISE || pn->n_blocks == 0) continue;
        int v = written_value(pn);
        int nr = readers(&ix, v);
        const bd_nest *first = nr ? nest_at(p, ix.reader[ix.reader_start[v]]) : NULL;
        if (ix.graph_output[v] || !nr) {
            if (nr) note(p, pn, first, false, "a graph output: it must be stored");
            continue;
        }
        if (!bd_access_is_identity(&pn->operands[pn->n_operands - 1], pn->n_iter)) continue;
        const char *why = chain_refusal(p, &ix, pn, v, bd_fuse_expr_cost(&pn->params.expr));
        int vc = written_value(first);
        if (!why && nr == 1 && bd_dtype_is_byte(bd_graph_value(g, v)->dtype) &&
            bd_dtype_bits(bd_graph_value(g, vc)->dtype) > 8 && !ix.graph_output[vc] &&
            readers(&ix, vc) > 1 &&
            !chain_refusal(p, &ix, first, vc, bd_fuse_expr_cost(&first->params.expr)))
            why = "an 8-bit value: stored, its reader is recomputed in each of its own readers";
        /* all or nothing: inline into copies, commit only if every consumer takes it */
        bd_nest *copies = why ? NULL : malloc((size_t)nr * sizeof *copies);
        for (int r = 0; r < nr && !why; r++) {
            const bd_nest *c = nest_at(p, ix.reader[ix.reader_start[v] + r]);
            copies[r] = *c;
            if (!inline_producer(&copies[r], pn, v))
                why = "the fused nest would exceed its capacity";
            else if ((bd_expr_has(&pn->params.expr, BD_EXPR_LOOKUP) ||
                      bd_expr_has(&c->params.expr, BD_EXPR_LOOKUP)) &&
                     bd_table_index(p, &copies[r]) < 0)
                why = "a table lookup: the result would not be a function of one 8-bit tensor";
        }
        if (!why) {
            for (int r = 0; r < nr; r++)
                *nest_at(p, ix.reader[ix.reader_start[v] + r]) = copies[r];
            dead[i] = true;
            note(p, pn, first, true, nr > 1 ? "IDENTITY, recomputed in each consumer"
                                            : "IDENTITY chain");
        } else {
            note(p, pn, first, false, why);
        }
        free(copies);
    }
    bd_fuse_index_free(&ix);
}

/* ---------------------------------------------------------------- a quantized residual Add */

/* Node i of c's expression as a constant scalar: a CONST, or a LOAD (cast to float32 or not) of
 * a one-element constant. */
static bool scalar_at(const bd_program *p, const bd_nest *c, int i, double *k) {
    const bd_expr *x = &c->params.expr;
    const bd_expr_node *e = &x->node[i];
    if (e->op == BD_EXPR_CAST && e->dtype == BD_DT_FLOAT) e = &x->node[e->arg[0]];
    if (e->op == BD_EXPR_CONST) {
        *k = e->k[0];
        return true;
    }
    const bd_value *v =
        e->op == BD_EXPR_LOAD ? bd_graph_value(p->graph, c->operands[e->operand].value) : NULL;
    if (!v || !v->constant || v->constant->numel != 1) return false;
    *k = bd_tensor_get_f64(v->constant, 0);
    return true;
}

/* A float32 node of c's expression: node i with op `op`. */
static const bd_expr_node *float_node(const bd_nest *c, int i, bd_expr_op op) {
    const bd_expr_node *e = &c->params.expr.node[i];
    return e->op == op && e->dtype == BD_DT_FLOAT ? e : NULL;
}

/* Node i as DequantizeLinear's (x - zero) * scale (bd_lower_quantize) of an 8-bit operand read
 * where c writes; that operand's index into *operand. */
static bool dequantize_at(const bd_program *p, const bd_nest *c, int i, int *operand, double *scale,
                          double *zero) {
    const bd_expr_node *mul = float_node(c, i, BD_EXPR_MUL);
    const bd_expr_node *sub = mul ? float_node(c, mul->arg[0], BD_EXPR_SUB) : NULL;
    const bd_expr_node *cast = sub ? float_node(c, sub->arg[0], BD_EXPR_CAST) : NULL;
    const bd_expr_node *load = cast ? &c->params.expr.node[cast->arg[0]] : NULL;
    if (!load || load->op != BD_EXPR_LOAD || !bd_dtype_is_byte(load->dtype) ||
        !bd_access_is_identity(&c->operands[load->operand], c->n_iter) ||
        !scalar_at(p, c, mul->arg[1], scale) || !scalar_at(p, c, sub->arg[1], zero))
        return false;
    *operand = load->operand;
    return true;
}

/* An elementwise nest computing QuantizeLinear(clamp(DequantizeLinear(a) + DequantizeLinear(b)))
 * in float32, every scale and zero point a constant scalar, the clamp a Relu, Clip's bounds or
 * none; a, b 8-bit operands read where it writes (operand[0], operand[1]). Into epi: the sum's
 * clamp and QuantizeLinear (qr_lo .. qr_zero), and the dequantizations as a's (qr_y_*) and b's
 * (qr_r_*). */
static bool quantized_add_of(const bd_program *p, const bd_nest *c, int operand[2],
                             bd_epilogue *epi) {
    const bd_expr_node *root = bd_expr_root(&c->params.expr);
    if (c->body != BD_BODY_ELEMENTWISE || !root || root->op != BD_EXPR_CAST ||
        !bd_dtype_is_byte(root->dtype) || !bd_access_is_identity(&c->operands[c->n_operands - 1], c->n_iter))
        return false;
    const bd_expr_node *add = float_node(c, root->arg[0], BD_EXPR_ADD);
    const bd_expr_node *round = add ? float_node(c, add->arg[0], BD_EXPR_ROUND) : NULL;
    const bd_expr_node *div = round ? float_node(c, round->arg[0], BD_EXPR_DIV) : NULL;
    if (!div || !scalar_at(p, c, add->arg[1], &epi->qr_zero) ||
        !scalar_at(p, c, div->arg[1], &epi->qr_scale) || !(epi->qr_scale > 0) ||
        !isfinite(epi->qr_scale))
        return false;
    int i = div->arg[0];
    const bd_expr_node *e;
    epi->qr_lo = -INFINITY, epi->qr_hi = INFINITY;
    if ((e = float_node(c, i, BD_EXPR_RELU))) {
        epi->qr_lo = 0, i = e->arg[0];
    } else {
        if ((e = float_node(c, i, BD_EXPR_CLAMP_MAX))) {
            if (!scalar_at(p, c, e->arg[1], &epi->qr_hi)) return false;
            i = e->arg[0];
        }
        if ((e = float_node(c, i, BD_EXPR_CLAMP_MIN))) {
            if (!scalar_at(p, c, e->arg[1], &epi->qr_lo)) return false;
            i = e->arg[0];
        }
    }
    const bd_expr_node *sum = float_node(c, i, BD_EXPR_ADD);
    return sum && epi->qr_lo == epi->qr_lo && epi->qr_hi == epi->qr_hi &&
           dequantize_at(p, c, sum->arg[0], &operand[0], &epi->qr_y_scale, &epi->qr_y_zero) &&
           dequantize_at(p, c, sum->arg[1], &operand[1], &epi->qr_r_scale, &epi->qr_r_zero);
}

/* With fusion block, a QDQ ResNet block's end, QuantizeLinear(DequantizeLinear(y1) +
 * DequantizeLinear(r)) (with a Relu when its zero point keeps one), is one elementwise nest after
 * fuse_chains. Where y1 is the output of an 8-bit convolution that requantizes (absorb_chain) and
 * that nest its only reader, the convolution takes the nest in as a pass over each tile's bytes
 * just stored (bd_i8_conv2d_tile_requant_add); the tile's bytes are still in cache and the sum is
 * rounded as the nest rounds it (float steps, no fused multiply-add). r must be computed before
 * the convolution; the convolution is not elementwise, so the plan never puts its output over r. */
static void absorb_quantized_residuals(bd_program *p, bool *dead) {
    bd_fuse_index ix = {0};
    bd_fuse_index_build(p, &ix);
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = nest_at(p, (int)i);
        if (dead[i] || n->body != BD_BODY_CONV || !n->epi.requant || n->epi.residual >= 0) continue;
        int *y = &n->params.conv.y, cur = n->operands[*y].value, c = bd_fuse_sole_reader(&ix, cur);
        bd_epilogue epi = n->epi;
        int operand[2];
        if (c < 0 || !bd_access_is_identity(&n->operands[*y], n->n_iter) ||
            !quantized_add_of(p, nest_at(p, c), operand, &epi))
            continue;
        bd_nest *cn = nest_at(p, c);
        int a = cn->operands[operand[0]].value, b = cn->operands[operand[1]].value;
        if ((a == cur) == (b == cur)) continue;
        if (b == cur) { /* y1 as the second term: the sum is the same either way round */
            double k[2] = {epi.qr_y_scale, epi.qr_y_zero};
            epi.qr_y_scale = epi.qr_r_scale, epi.qr_y_zero = epi.qr_r_zero;
            epi.qr_r_scale = k[0], epi.qr_r_zero = k[1];
            b = a;
        }
        if (!ready_before(&ix, b, (int)i)) {
            note(p, cn, n, false, "quantized residual Add: the residual is computed after the "
                                  "convolution");
            continue;
        }
        epi.qresidual = true;
        epi.q_dtype = bd_graph_value(p->graph, cur)->dtype;
        n->epi = epi;
        n->epi.residual = insert_before_output(n, y, cn, b);
        n->operands[*y].value = written_value(cn);
        note(p, cn, n, true, "quantized residual Add (DequantizeLinear, Add, QuantizeLinear) into "
                             "the 8-bit kernel's epilogue");
        dead[c] = true;
    }
    bd_fuse_index_free(&ix);
}

/* Drops the refusals noted since note `mark`. */
static void keep_fused_notes(bd_program *p, size_t mark) {
    size_t kept = mark;
    for (size_t i = mark; i < p->fusion_notes.len; i++)
        if (BD_VEC_AT(&p->fusion_notes, bd_fusion_note, i).fused)
            BD_VEC_AT(&p->fusion_notes, bd_fusion_note, kept++) =
                BD_VEC_AT(&p->fusion_notes, bd_fusion_note, i);
    p->fusion_notes.len = kept;
}

static void drop_dead(bd_program *p, const bool *dead) {
    size_t kept = 0;
    for (size_t i = 0; i < p->nests.len; i++)
        if (!dead[i]) BD_VEC_AT(&p->nests, bd_nest, kept++) = BD_VEC_AT(&p->nests, bd_nest, i);
    p->nests.len = kept;
}

bd_status bd_fuse(bd_program *p, bd_diag *d) {
    if (p->fusion == BD_FUSION_NONE || !p->nests.len) return BD_OK;
    bd_fuse_index ix = {0};
    bd_fuse_index_build(p, &ix);
    bool *dead = calloc(p->nests.len, sizeof *dead);
    BD_ASSERT(dead);
    for (size_t i = 0; i < p->nests.len; i++)
        if (!dead[i]) absorb_chain(p, &ix, (int)i, dead);
    bd_fuse_index_free(&ix);
    drop_dead(p, dead);
    /* the normalizations that have taken their activations, into their readers' prologues */
    memset(dead, 0, p->nests.len * sizeof *dead);
    bd_fuse_index_build(p, &ix);
    for (size_t i = 0; i < p->nests.len; i++)
        absorb_prologue(p, &ix, (int)i, dead);
    bd_fuse_index_free(&ix);
    drop_dead(p, dead);
    if (p->fusion == BD_FUSION_BLOCK) {
        /* chains, then tables, until tabulating opens no more chains; a round that is followed
         * by another leaves only its fusions among the notes, the last round's refusals stand */
        for (bool again = true; again;) {
            size_t mark = p->fusion_notes.len;
            free(dead); /* sized anew: tables.c adds nests */
            dead = calloc(p->nests.len + 1, sizeof *dead);
            BD_ASSERT(dead);
            fuse_chains(p, dead);
            drop_dead(p, dead);
            again = bd_fuse_tables(p);
            if (again) keep_fused_notes(p, mark);
        }
        memset(dead, 0, p->nests.len * sizeof *dead);
        absorb_quantized_residuals(p, dead);
        drop_dead(p, dead);
        for (size_t i = 0; i < p->nests.len; i++) /* the chains' quantize-dequantize pairs */
            if (nest_at(p, (int)i)->body == BD_BODY_ELEMENTWISE)
                bd_expr_simplify(&nest_at(p, (int)i)->params.expr);
    }
    free(dead);
    return bd_program_verify(p, d);
}

void bd_fusion_dump(const bd_program *p, FILE *f) {
    bd_graph *g = p->graph;
    for (size_t i = 0; i < p->fusion_notes.len; i++) {
        const bd_fusion_note *n = &BD_VEC_AT(&p->fusion_notes, bd_fusion_note, i);
        fprintf(f, "fusion: %s '%s' into '%s': %s\n", n->fused ? "fused" : "not fused",
                n->absorbed_node >= 0 ? bd_quote(bd_graph_node(g, n->absorbed_node)->name) : "-",
                n->into_node >= 0 ? bd_quote(bd_graph_node(g, n->into_node)->name) : "-", n->why);
    }
    fprintf(f, "fusion: %zu decisions\n", p->fusion_notes.len);
}

bd_status bd_fuse_tiled_pass(bd_program *p, bd_fuse_tiled_at at,
                             bool (*tile)(const bd_graph *, bd_nest *, int), bd_diag *d) {
    if (p->fusion != BD_FUSION_BLOCK || !tile || !p->nests.len || p->graph->batch_max) return BD_OK;
    bool *dead = calloc(p->nests.len, sizeof *dead);
    BD_ASSERT(dead);
    bd_fuse_index ix = {0};
    bd_fuse_index_build(p, &ix);
    bool any = false;
    for (size_t i = 0; i < p->nests.len; i++)
        if (!dead[i]) any |= at(p, &ix, (int)i, dead, tile);
    bd_fuse_index_free(&ix);
    if (any) {
        size_t kept = 0;
        for (size_t i = 0; i < p->nests.len; i++)
            if (!dead[i]) BD_VEC_AT(&p->nests, bd_nest, kept++) = BD_VEC_AT(&p->nests, bd_nest, i);
        p->nests.len = kept;
    }
    free(dead);
    return bd_program_verify(p, d);
}
