/* siblings.c — horizontal fusion of sibling convolutions (fuse.h), with `--fusion block`.
 *
 * Convolutions that read the same input with the same window (an Inception block's 1x1 branches)
 * become one convolution with their weights and biases stacked along the output channels, and
 * their activations one nest after it: the input is read once instead of once per branch, and
 * the one nest has as many blocks as the branches together, which the threads share out more
 * evenly than several small nests. Each branch's activated output is then a slice of the stacked
 * one (bd_program.inside_of), contiguous because the batch is 1, and its readers read it there:
 * no split copy. Runs after lowering, before tiling, so the stacked nest is tiled as one; the
 * epilogue fusion then absorbs the stacked activation as it would a single conv's.
 *
 * A sibling qualifies when it is a float32 2-D ungrouped Conv with constant weights (and bias),
 * its output is read only by an elementwise activation of that output alone (Relu, Clip with
 * inline bounds, ...: the same expression in every sibling), and the batch is 1. The cost model
 * is one rule: a sibling whose activated output would otherwise be written straight into a
 * Concat (views.c, Concat in place) stays apart when merging it saves less than that copy. */
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"

typedef struct sibling {
    int conv, act; /* nest indices */
} sibling;

static bd_nest *nest_at(bd_program *p, int i) {
    return &BD_VEC_AT(&p->nests, bd_nest, i);
}

/* The nests reading value v (each once), into out (at most max); how many there are. */
static int readers_of(bd_program *p, int v, int *out, int max) {
    int n = 0;
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *c = nest_at(p, (int)i);
        for (int k = 0; k < c->n_operands; k++)
            if (!c->operands[k].write && c->operands[k].value == v) {
                if (n < max) out[n] = (int)i;
                n++;
                break;
            }
    }
    return n;
}

static bool float_constant(const bd_graph *g, int v) {
    const bd_value *x = bd_graph_value((bd_graph *)g, v);
    return x->constant && x->dtype == BD_DT_FLOAT;
}

/* Nest c as a convolution that may be stacked with others: float32, 2-D, ungrouped, batch 1,
 * constant weights and bias, nothing quantized. */
static bool stackable_conv(const bd_program *p, const bd_nest *c) {
    if (c->body != BD_BODY_CONV) return false;
    const bd_conv_params *cp = &c->params.conv;
    const bd_graph *g = p->graph;
    if (cp->nsp != 2 || cp->group != 1 || cp->x_zero >= 0 || cp->w_zero >= 0 || cp->x_scale >= 0 ||
        cp->w_scale >= 0)
        return false;
    const bd_value *x = bd_graph_value((bd_graph *)g, c->operands[cp->x].value);
    const bd_value *y = bd_graph_value((bd_graph *)g, c->operands[cp->y].value);
    return x->dtype == BD_DT_FLOAT && y->dtype == BD_DT_FLOAT && y->rank == 4 && y->dims[0] == 1 &&
           float_constant(g, c->operands[cp->w].value) &&
           (cp->b < 0 || float_constant(g, c->operands[cp->b].value)) &&
           !bd_graph_is_output(g, c->operands[cp->y].value);
}

/* The activation nest reading conv c's output alone: an elementwise nest of one input read
 * where it writes, of the output's shape and dtype; -1 when c's output has another reader. */
static int activation_after(bd_program *p, const bd_nest *c) {
    int y = c->operands[c->params.conv.y].value, r[2];
    if (readers_of(p, y, r, 2) != 1) return -1;
    const bd_nest *a = nest_at(p, r[0]);
    if (a->body != BD_BODY_ELEMENTWISE || a->n_operands != 2 || a->operands[0].value != y ||
        !a->operands[1].write || !bd_access_is_identity(&a->operands[0], a->n_iter) ||
        !bd_access_is_identity(&a->operands[1], a->n_iter))
        return -1;
    const bd_value *yv = bd_graph_value(p->graph, y), *rv = bd_graph_value(p->graph, a->operands[1].value);
    if (rv->dtype != BD_DT_FLOAT || rv->rank != yv->rank || bd_graph_is_output(p->graph, a->operands[1].value))
        return -1;
    for (int k = 0; k < yv->rank; k++)
        if (rv->dims[k] != yv->dims[k]) return -1;
    return r[0];
}

static bool same_expr(const bd_expr *a, const bd_expr *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) {
        const bd_expr_node *x = &a->node[i], *y = &b->node[i];
        if (x->op != y->op || x->dtype != y->dtype || x->operand != y->operand ||
            x->k[0] != y->k[0] || x->k[1] != y->k[1])
            return false;
        for (int j = 0; j < bd_expr_arity(x->op); j++)
            if (x->arg[j] != y->arg[j]) return false;
    }
    return true;
}

/* Whether b convolves the same input with the same window as a. */
static bool same_window(const bd_program *p, const bd_nest *a, const bd_nest *b) {
    const bd_conv_params *x = &a->params.conv, *y = &b->params.conv;
    const bd_value *ya = bd_graph_value(p->graph, a->operands[x->y].value),
                   *yb = bd_graph_value(p->graph, b->operands[y->y].value);
    return a->operands[x->x].value == b->operands[y->x].value && (x->b < 0) == (y->b < 0) &&
           memcmp(x->kernel, y->kernel, sizeof x->kernel) == 0 &&
           memcmp(x->strides, y->strides, sizeof x->strides) == 0 &&
           memcmp(x->dilations, y->dilations, sizeof x->dilations) == 0 &&
           memcmp(x->pads, y->pads, sizeof x->pads) == 0 && ya->dims[2] == yb->dims[2] &&
           ya->dims[3] == yb->dims[3];
}

/* Whether value v is a part a Concat would take in place (views.c): its one reader is a Concat
 * part copy. Merging the sibling that writes it costs that copy. */
static bool concat_part_in_place(bd_program *p, int v) {
    int r[2];
    if (readers_of(p, v, r, 2) != 1) return false;
    const bd_nest *c = nest_at(p, r[0]);
    return c->body == BD_BODY_COPY && !c->params.copy.reshape && !c->params.copy.fill &&
           c->node >= 0 && bd_graph_node(p->graph, c->node)->op == BD_OP_CONCAT;
}

/* A new float32 constant: the given constants (rows[i] along dim 0 each) stacked along dim 0. */
static int stack_constants(bd_graph *g, const bd_node *node, const int *values, const int64_t *rows,
                           int n) {
    const bd_value *first = bd_graph_value(g, values[0]);
    int64_t dims[BD_MAX_RANK], row_bytes = 4, total = 0;
    for (int k = 0; k < first->rank; k++) dims[k] = first->dims[k];
    for (int k = 1; k < first->rank; k++) row_bytes *= first->dims[k];
    for (int i = 0; i < n; i++) total += rows[i];
    dims[0] = total;
    bd_tensor *t = bd_tensor_new(&g->model->arena, BD_DT_FLOAT, first->rank, dims);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        const bd_tensor *c = bd_graph_value(g, values[i])->constant;
        memcpy((char *)t->data + at, c->data, (size_t)(rows[i] * row_bytes));
        at += rows[i] * row_bytes;
    }
    return bd_graph_add_constant(g, node, t);
}

/* A new float32 intermediate of dims [1, channels, H, W] like value like. */
static int stacked_value(bd_graph *g, int like, int64_t channels) {
    int v = bd_graph_add_value(g, ""); /* unnamed: never looked up, never an I/O */
    bd_value *val = bd_graph_value(g, v), *ref = bd_graph_value(g, like);
    val->dtype = BD_DT_FLOAT;
    val->rank = ref->rank;
    memcpy(val->dims, ref->dims, sizeof val->dims);
    val->dims[1] = channels;
    val->decl_rank = -1;
    return v;
}

/* A branch's output placed as a slice of the stacked output. */
typedef struct slice {
    int value, container;
    int64_t at;
} slice;

/* Places the slices, once every value is made (the arrays are sized by the value count). */
static void place_slices(bd_program *p, const bd_vec *slices) {
    BD_ASSERT(!p->inside_of);
    bd_program_inside_init(p);
    for (size_t i = 0; i < slices->len; i++) {
        const slice *s = &BD_VEC_AT(slices, slice, i);
        p->inside_of[s->value] = s->container;
        p->inside_axis[s->value] = 1; /* channels */
        p->inside_at[s->value] = s->at;
    }
}

static void note(bd_program *p, int absorbed, int into, bool fused, const char *why) {
    bd_fusion_note *f = bd_vec_push(&p->fusion_notes);
    *f = (bd_fusion_note){absorbed, into, fused, why};
}

/* Stacks the n siblings s[] (in nest order) into nests placed at s[0].conv: the conv into one
 * writing F, their activation into one writing G, each branch's activated output a slice of G. */
static void stack(bd_program *p, const sibling *s, int n, bool *dead, bd_nest *stacked,
                  bd_vec *slices) {
    bd_graph *g = p->graph;
    bd_nest *c0 = nest_at(p, s[0].conv), *a0 = nest_at(p, s[0].act);
    const bd_conv_params *cp0 = &c0->params.conv;
    int w[64], b[64];
    int64_t rows[64], channels = 0;
    for (int i = 0; i < n; i++) {
        const bd_nest *c = nest_at(p, s[i].conv);
        const bd_conv_params *cp = &c->params.conv;
        w[i] = c->operands[cp->w].value;
        b[i] = cp->b >= 0 ? c->operands[cp->b].value : -1;
        rows[i] = bd_graph_value(g, c->operands[cp->y].value)->dims[1];
        channels += rows[i];
    }
    const bd_node *node = bd_graph_node(g, c0->node);
    int y0 = c0->operands[cp0->y].value;
    int wv = stack_constants(g, node, w, rows, n);
    int bv = cp0->b >= 0 ? stack_constants(g, node, b, rows, n) : -1;
    int f = stacked_value(g, y0, channels), gv = stacked_value(g, y0, channels);
    /* the conv: stacked weights and bias, writing F */
    stacked[0] = *c0;
    bd_nest *c = &stacked[0];
    c->operands[cp0->w].value = wv;
    if (bv >= 0) c->operands[cp0->b].value = bv;
    c->operands[cp0->y].value = f;
    c->extent[1] = channels;
    bd_nest_set_tile(g, c, c->extent);
    /* the activation: F to G; each branch's output is G's channels [at, at + rows) */
    stacked[1] = *a0;
    bd_nest *a = &stacked[1];
    a->operands[0].value = f;
    a->operands[1].value = gv;
    a->extent[1] = channels;
    bd_nest_set_tile(g, a, a->extent);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int r = nest_at(p, s[i].act)->operands[1].value;
        *(slice *)bd_vec_push(slices) = (slice){r, gv, at};
        at += rows[i];
        dead[s[i].conv] = dead[s[i].act] = true;
        if (i) note(p, nest_at(p, s[i].conv)->node, c0->node, true,
                    "horizontal: a sibling conv of the same input and window, stacked along the "
                    "output channels");
    }
}

void bd_fuse_siblings(bd_program *p) {
    if (p->fusion != BD_FUSION_BLOCK) return;
    size_t nn = p->nests.len;
    bool *dead = calloc(nn + 1, sizeof *dead), *taken = calloc(nn + 1, sizeof *taken);
    int *at = malloc((nn + 1) * sizeof *at); /* per nest: its stacked pair, -1 */
    bd_nest *stacked = malloc((nn + 1) * 2 * sizeof *stacked);
    sibling *s = malloc((nn + 1) * sizeof *s);
    BD_ASSERT(dead && taken && at && stacked && s);
    int n_stacked = 0;
    bd_vec slices = BD_VEC(slice);
    for (size_t i = 0; i < nn; i++)
        at[i] = -1;
    for (size_t i = 0; i < nn; i++) {
        bd_nest *c0 = nest_at(p, (int)i);
        if (taken[i] || !stackable_conv(p, c0)) continue;
        int a0 = activation_after(p, c0);
        if (a0 < 0) continue;
        int n = 0;
        s[n++] = (sibling){(int)i, a0};
        for (size_t j = i + 1; j < nn && n < 64; j++) {
            bd_nest *c = nest_at(p, (int)j);
            if (taken[j] || !stackable_conv(p, c) || !same_window(p, c0, c)) continue;
            int a = activation_after(p, c);
            if (a < 0) {
                note(p, c->node, c0->node, false,
                     "horizontal: its output has a reader other than one activation");
                continue;
            }
            if (!same_expr(&nest_at(p, a)->params.expr, &nest_at(p, a0)->params.expr)) {
                note(p, c->node, c0->node, false, "horizontal: another activation");
                continue;
            }
            s[n++] = (sibling){(int)j, a};
        }
        /* Cost: a sibling whose output a Concat would take in place stays apart unless the input
         * it rereads (C x H x W of X per extra pass) outweighs the copy of its output. */
        int kept = 0;
        for (int k = 0; k < n; k++) {
            const bd_nest *c = nest_at(p, s[k].conv);
            const bd_conv_params *cp = &c->params.conv;
            const bd_value *x = bd_graph_value(p->graph, c->operands[cp->x].value),
                           *y = bd_graph_value(p->graph, c->operands[cp->y].value);
            int64_t reread = x->dims[1] * x->dims[2] * x->dims[3],
                    copy = 2 * y->dims[1] * y->dims[2] * y->dims[3];
            if (n > 1 && concat_part_in_place(p, nest_at(p, s[k].act)->operands[1].value) &&
                copy >= reread) {
                note(p, c->node, nest_at(p, s[k ? 0 : 1].conv)->node, false,
                     "horizontal: its output goes into a Concat in place, and stacking would copy "
                     "it there");
                continue;
            }
            s[kept++] = s[k];
        }
        if (kept < 2) continue;
        for (int k = 0; k < kept; k++)
            taken[s[k].conv] = true;
        at[s[0].conv] = n_stacked;
        stack(p, s, kept, dead, &stacked[2 * n_stacked], &slices);
        n_stacked++;
    }
    if (n_stacked) { /* the stacked pairs take their first conv's place */
        bd_vec out = BD_VEC(bd_nest);
        for (size_t i = 0; i < nn; i++) {
            if (at[i] >= 0) {
                *(bd_nest *)bd_vec_push(&out) = stacked[2 * at[i]];
                *(bd_nest *)bd_vec_push(&out) = stacked[2 * at[i] + 1];
            } else if (!dead[i])
                *(bd_nest *)bd_vec_push(&out) = *nest_at(p, (int)i);
        }
        bd_vec_free(&p->nests);
        p->nests = out;
        place_slices(p, &slices);
    }
    bd_vec_free(&slices);
    free(dead);
    free(taken);
    free(at);
    free(stacked);
    free(s);
}
