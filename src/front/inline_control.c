/* inline_control.c — If, Loop and Scan are replaced by copies of their bodies when inference
 * reaches them (they are these ops' `infer` entries in the op table), so that what follows is
 * ordinary nodes, inferred, folded, fused and lowered like any other:
 *   - an If whose condition has folded to a constant becomes the branch it selects;
 *   - a Loop with a constant trip count, whose condition stays true (the body passes its cond
 *     input through, or returns a constant true), is unrolled: one body copy per iteration;
 *   - a Scan is unrolled along its scan axis, whose extent is static once its inputs are.
 * The copies are inserted right after the control node, which is marked dead, so node indices
 * after it shift. Control flow that depends on run-time values stays in place, with its outputs
 * unknown, and the support check refuses it with the reason bd_control_refusal() gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/passes.h"

/* Past this many copied nodes, an unrolled loop is refused rather than compiled slowly; and no
 * series of loops may grow a graph past BD_UNROLL_MAX_GRAPH_NODES (the loader's default node
 * cap), so that a small file cannot ask for unbounded memory. */
#define BD_UNROLL_MAX_NODES 65536
#define BD_UNROLL_MAX_GRAPH_NODES 1000000

static int live_nodes(bd_graph *body, bool *nested) {
    int count = 0;
    *nested = false;
    for (size_t i = 0; i < body->nodes.len; i++) {
        const bd_node *n = bd_graph_node(body, (int)i);
        if (n->dead) continue;
        count++;
        *nested |= bd_node_has_subgraph(n);
    }
    return count;
}

static bd_graph *graph_attr(const bd_node *n, const char *name) {
    const bd_attr *a = bd_node_attr(n, name);
    return a && a->type == BD_ATTR_GRAPH ? a->g : NULL;
}

static int body_input(bd_graph *body, int k) { return BD_VEC_AT(&body->inputs, int, k); }
static int body_output(bd_graph *body, int k) { return BD_VEC_AT(&body->outputs, int, k); }

/* ---- the counts each op's unrolling takes, and why it cannot be unrolled ---- */

typedef struct loop_plan {
    bd_graph *body;
    int n_carried, n_scans; /* N loop-carried values, K scan outputs */
    int64_t trips;
} loop_plan;

static loop_plan loop_plan_of(const bd_node *n) {
    loop_plan p = {.body = graph_attr(n, "body"), .n_carried = n->n_inputs - 2};
    p.n_scans = n->n_outputs - p.n_carried;
    return p;
}

/* The body's cond output stays true: it is the cond input passed through (Identity), or a
 * constant true, of the body's or of the enclosing graph g. */
static bool cond_stays_true(bd_graph *g, bd_graph *body) {
    int v = body_output(body, 0);
    for (;;) {
        const bd_value *val = bd_graph_value(body, v);
        if (v == body_input(body, 1)) return true;
        if (val->flags & BD_VALUE_OUTER) {
            int outer = bd_graph_find_value(g, val->name);
            if (outer < 0) return false;
            val = bd_graph_value(g, outer);
        }
        if (val->constant) return val->constant->numel == 1 && bd_tensor_get_i64(val->constant, 0);
        if (val->producer < 0) return false;
        const bd_node *p = bd_graph_node(body, val->producer);
        if (p->op == BD_OP_IDENTITY && p->inputs[0] >= 0) {
            v = p->inputs[0];
            continue;
        }
        if (p->op != BD_OP_CONSTANT) return false;
        const bd_attr *a = bd_node_attr(p, "value");
        if (!a || a->type != BD_ATTR_TENSOR || a->t->numel != 1) return false;
        return bd_tensor_get_i64(a->t, 0) != 0;
    }
}

static const char *unroll_cost(const bd_graph *g, int64_t trips, int body_nodes, bool nested,
                               char *buf, size_t len) {
    if (nested) {
        snprintf(buf, len, "its body holds an If, Loop or Scan, which bdc does not unroll inside "
                 "another loop yet");
        return buf;
    }
    if (trips > BD_UNROLL_MAX_NODES / (body_nodes ? body_nodes : 1)) {
        snprintf(buf, len, "unrolling its %lld iterations of %d nodes would exceed bdc's limit of "
                 "%d nodes", (long long)trips, body_nodes, BD_UNROLL_MAX_NODES);
        return buf;
    }
    if ((int64_t)g->nodes.len + trips * body_nodes > BD_UNROLL_MAX_GRAPH_NODES) {
        snprintf(buf, len, "unrolling it would grow the graph past bdc's limit of %d nodes",
                 BD_UNROLL_MAX_GRAPH_NODES);
        return buf;
    }
    return NULL;
}

static const char *loop_refusal(bd_graph *g, const bd_node *n, loop_plan *p, char *buf,
                                size_t len) {
    const bd_value *m = bd_node_in(g, n, 0), *cond = bd_node_in(g, n, 1);
    if (!m) {
        snprintf(buf, len, "has no trip count (input 0, M): bdc unrolls only loops whose trip "
                 "count is known at compile time");
        return buf;
    }
    if (!m->constant) return bd_not_const_reason(g, n, 0, "input 0 (M, the trip count)", buf, len);
    if (cond && !cond->constant) return bd_not_const_reason(g, n, 1, "input 1 (cond)", buf, len);
    if (!cond_stays_true(g, p->body)) {
        snprintf(buf, len, "its body computes the loop condition (body output 0 '%s'): bdc unrolls "
                 "only loops whose condition stays true",
                 bd_quote(bd_graph_value(p->body, body_output(p->body, 0))->name));
        return buf;
    }
    int64_t trips = bd_tensor_get_i64(m->constant, 0);
    if (trips < 0 || (cond && !bd_tensor_get_i64(cond->constant, 0))) trips = 0;
    if (trips == 0 && p->n_scans > 0) {
        snprintf(buf, len, "runs zero times, so its scan outputs have no element shape");
        return buf;
    }
    p->trips = trips;
    bool nested;
    int body_nodes = live_nodes(p->body, &nested);
    return unroll_cost(g, trips, body_nodes, nested, buf, len);
}

typedef struct scan_plan {
    bd_graph *body;
    bool batched; /* opset 8: dim 0 of every input and output is a batch, the scan axis is 1 */
    int first_state; /* index of the first state input (1 at opset 8, after sequence_lens) */
    int n_states, n_scan_in, n_scan_out;
    int64_t trips, batch;
} scan_plan;

static scan_plan scan_plan_of(const bd_node *n) {
    scan_plan p = {.body = graph_attr(n, "body"), .batched = n->opset < 9};
    p.first_state = p.batched ? 1 : 0;
    p.n_scan_in = (int)bd_attr_int(n, "num_scan_inputs", 0);
    p.n_states = n->n_inputs - p.first_state - p.n_scan_in;
    p.n_scan_out = n->n_outputs - p.n_states;
    return p;
}

static int64_t list_attr(const bd_node *n, const char *name, int k, int64_t dflt) {
    const bd_attr *a = bd_node_attr(n, name);
    return a && a->type == BD_ATTR_INTS && k < a->n ? a->ints[k] : dflt;
}

static const char *scan_refusal(bd_graph *g, const bd_node *n, scan_plan *p, char *buf,
                                size_t len) {
    if (p->batched && bd_node_in(g, n, 0)) {
        snprintf(buf, len, "input 0 (sequence_lens) is given: bdc unrolls only Scans whose "
                 "sequences all have the full length");
        return buf;
    }
    p->trips = -1;
    for (int i = 0; i < p->n_scan_in; i++) {
        int k = p->first_state + p->n_states + i;
        const bd_value *x = bd_node_in(g, n, k);
        if (!bd_value_shape_known(x)) {
            snprintf(buf, len, "scan input %d '%s' has no static shape", i, bd_quote(x->name));
            return buf;
        }
        int axis;
        if (p->batched) axis = 1;
        else if (!bd_norm_axis(list_attr(n, "scan_input_axes", i, 0), x->rank, &axis)) axis = -1;
        if (axis < 0 || axis >= x->rank || (p->batched && x->rank < 2)) {
            snprintf(buf, len, "scan input %d '%s' has no scan axis %lld", i, bd_quote(x->name),
                     (long long)list_attr(n, "scan_input_axes", i, p->batched ? 1 : 0));
            return buf;
        }
        if (p->trips >= 0 && x->dims[axis] != p->trips) {
            snprintf(buf, len, "scan inputs have different lengths (%lld and %lld)",
                     (long long)p->trips, (long long)x->dims[axis]);
            return buf;
        }
        p->trips = x->dims[axis];
        if (p->batched) p->batch = x->dims[0];
    }
    for (int j = 0; p->batched && j < p->n_states; j++) {
        const bd_value *s = bd_node_in(g, n, p->first_state + j);
        if (!bd_value_shape_known(s) || s->rank < 1 || s->dims[0] != p->batch) {
            snprintf(buf, len, "state input %d '%s' has no static batch dim of %lld", j,
                     bd_quote(s->name), (long long)p->batch);
            return buf;
        }
    }
    if (p->trips == 0 && p->n_scan_out > 0) {
        snprintf(buf, len, "scans zero elements, so its scan outputs have no element shape");
        return buf;
    }
    bool nested;
    int body_nodes = live_nodes(p->body, &nested);
    int64_t copies;
    if (!bd_mul_i64(p->trips, p->batched ? p->batch : 1, &copies)) copies = INT64_MAX;
    return unroll_cost(g, copies, body_nodes, nested, buf, len);
}

/* The branch an If takes (and whether it holds control flow itself, into *nested), or NULL with
 * the reason in buf. */
static bd_graph *if_branch(bd_graph *g, const bd_node *n, bool *nested, char *buf, size_t len) {
    const bd_value *cond = bd_node_in(g, n, 0);
    if (!cond->constant) {
        bd_not_const_reason(g, n, 0, "input 0 (cond)", buf, len);
        return NULL;
    }
    bd_graph *body = graph_attr(n, bd_tensor_get_i64(cond->constant, 0) ? "then_branch" : "else_branch");
    live_nodes(body, nested);
    /* A nested body finds the values it reads by their names, which the copies must keep. */
    for (size_t v = 0; *nested && v < body->values.len; v++) {
        const bd_value *val = bd_graph_value(body, (int)v);
        if (!(val->flags & (BD_VALUE_OUTER | BD_VALUE_INPUT)) && val->name[0] &&
            bd_graph_find_value(g, val->name) >= 0) {
            snprintf(buf, len, "its branch defines '%s' again and holds an If, Loop or Scan that "
                     "reads values by name", bd_quote(val->name));
            return NULL;
        }
    }
    return body;
}

/* ---- splicing copies in after the control node ---- */

typedef struct splice {
    bd_graph *g;
    bd_model *m;
    int at;              /* the control node's index */
    const bd_node *ctrl; /* stays valid: the node array only changes in splice_commit */
    bd_vec nodes;        /* bd_node: the copies, in order */
} splice;

/* base, or base.tag (tag >= 0), made unique among the graph's names. */
static const char *fresh_name(splice *s, const char *base, int64_t tag) {
    const char *stem = tag < 0 ? base : bd_arena_printf(&s->m->arena, "%s.%lld", base, (long long)tag);
    const char *name = stem;
    for (int k = 1; name && name[0] && bd_graph_find_value(s->g, name) >= 0; k++)
        name = bd_arena_printf(&s->m->arena, "%s_%d", stem, k);
    BD_ASSERT(name);
    return name;
}

static int new_value(splice *s, const char *name) {
    int v = bd_graph_add_value(s->g, name);
    bd_graph_value(s->g, v)->decl_rank = -1;
    return v;
}

/* A copy of what the file declares about body value `like` (checked by inference). */
static int new_value_like(splice *s, const bd_value *like, int64_t tag) {
    int v = new_value(s, fresh_name(s, like->name, tag));
    bd_value *val = bd_graph_value(s->g, v);
    val->decl_dtype = like->decl_dtype;
    val->decl_rank = like->decl_rank;
    val->type_kind = like->type_kind;
    memcpy(val->decl_dims, like->decl_dims, sizeof val->decl_dims);
    memcpy(val->dim_param, like->dim_param, sizeof val->dim_param);
    return v;
}

static bd_node *add_node(splice *s, const char *name, const char *op_type, bd_op op, int n_in,
                         int n_out) {
    bd_node *n = bd_vec_push(&s->nodes);
    n->name = name;
    n->op_type = op_type;
    n->domain = "";
    n->op = op;
    n->opset = 13; /* the signatures below: Unsqueeze's axes as an input, Gather, Concat */
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    n->inputs = bd_arena_array(&s->m->arena, (size_t)n_in, sizeof(int));
    n->outputs = bd_arena_array(&s->m->arena, (size_t)n_out, sizeof(int));
    BD_ASSERT((n->inputs || !n_in) && (n->outputs || !n_out));
    return n;
}

static void int_attr(splice *s, bd_node *n, const char *name, int64_t value) {
    n->attrs = bd_arena_alloc(&s->m->arena, sizeof(bd_attr));
    BD_ASSERT(n->attrs);
    n->n_attrs = 1;
    n->attrs[0] = (bd_attr){.name = name, .type = BD_ATTR_INT, .i = value};
}

static int const_int(splice *s, int dtype, int rank, int64_t value) {
    int64_t one = 1;
    bd_tensor *t = bd_tensor_new(&s->m->arena, dtype, rank, &one);
    BD_ASSERT(t);
    bd_tensor_set_i64(t, 0, value);
    return bd_graph_add_constant(s->g, s->ctrl, t);
}

static void identity(splice *s, int in, int out) {
    bd_node *n = add_node(s, s->ctrl->name, "Identity", BD_OP_IDENTITY, 1, 1);
    n->inputs[0] = in;
    n->outputs[0] = out;
}

/* x's element `index` along axis, the axis removed (Gather by a scalar). */
static int take(splice *s, int x, int64_t index, int64_t axis) {
    bd_node *n = add_node(s, s->ctrl->name, "Gather", BD_OP_GATHER, 2, 1);
    int_attr(s, n, "axis", axis);
    n->inputs[0] = x;
    n->inputs[1] = const_int(s, BD_DT_INT64, 0, index);
    n->outputs[0] = new_value(s, fresh_name(s, bd_graph_value(s->g, x)->name, index));
    return n->outputs[0];
}

/* out (or a new value when out < 0) = vals stacked along a new axis: each Unsqueezed, then one
 * Concat. */
static int stack(splice *s, const int *vals, int64_t count, int64_t axis, int out, const char *name) {
    if (out < 0) out = new_value(s, fresh_name(s, name, -1));
    int axes = const_int(s, BD_DT_INT64, 1, axis);
    int *parts = malloc((size_t)count * sizeof *parts);
    BD_ASSERT(parts);
    for (int64_t t = 0; t < count; t++) {
        bd_node *u = add_node(s, s->ctrl->name, "Unsqueeze", BD_OP_UNSQUEEZE, 2, 1);
        u->inputs[0] = vals[t];
        u->inputs[1] = axes;
        u->outputs[0] = parts[t] = count > 1 ? new_value(s, fresh_name(s, name, t)) : out;
    }
    if (count > 1) {
        bd_node *cat = add_node(s, s->ctrl->name, "Concat", BD_OP_CONCAT, (int)count, 1);
        int_attr(s, cat, "axis", axis);
        memcpy(cat->inputs, parts, (size_t)count * sizeof *parts);
        cat->outputs[0] = out;
    }
    free(parts);
    return out;
}

/* Copies the body's live nodes. map (body value -> graph value) holds the body's inputs and the
 * values chosen for some of its outputs; the rest is filled in here: enclosing values by name,
 * initializers once per body (consts, shared by every copy), node outputs as new values named
 * after the body's, with .tag appended when tag >= 0. */
static void copy_body(splice *s, bd_graph *body, int *map, int *consts, int64_t tag) {
    for (size_t v = 0; v < body->values.len; v++) {
        const bd_value *val = bd_graph_value(body, (int)v);
        if (map[v] >= 0) continue;
        if (val->flags & BD_VALUE_OUTER) {
            map[v] = bd_graph_find_value(s->g, val->name);
            BD_ASSERT(map[v] >= 0); /* the loader resolved it in an enclosing graph */
        } else if (val->flags & BD_VALUE_INITIALIZER) {
            if (consts[v] < 0) {
                consts[v] = new_value(s, fresh_name(s, val->name, -1));
                bd_value *c = bd_graph_value(s->g, consts[v]);
                c->flags |= BD_VALUE_INITIALIZER;
                c->constant = val->constant;
                c->dtype = val->dtype;
                c->rank = val->rank;
                memcpy(c->dims, val->dims, sizeof c->dims);
            }
            map[v] = consts[v];
        }
    }
    for (size_t i = 0; i < body->nodes.len; i++) {
        const bd_node *b = bd_graph_node(body, (int)i);
        if (b->dead) continue;
        const char *name = tag < 0 ? b->name : bd_arena_printf(&s->m->arena, "%s.%lld", b->name, (long long)tag);
        bd_node *n = add_node(s, name ? name : "", b->op_type, b->op, b->n_inputs, b->n_outputs);
        n->domain = b->domain;
        n->opset = b->opset;
        n->n_attrs = b->n_attrs;
        n->attrs = b->attrs; /* read-only after loading: shared by every copy */
        for (int k = 0; k < b->n_inputs; k++) {
            n->inputs[k] = b->inputs[k] < 0 ? -1 : map[b->inputs[k]];
            BD_ASSERT(b->inputs[k] < 0 || n->inputs[k] >= 0); /* defined earlier: loader checked */
        }
        for (int k = 0; k < b->n_outputs; k++) {
            int o = b->outputs[k];
            if (o >= 0 && map[o] < 0) map[o] = new_value_like(s, bd_graph_value(body, o), tag);
            n->outputs[k] = o < 0 ? -1 : map[o];
        }
    }
}

/* Body output k goes straight into the control node's output `out` when a body node makes it
 * (and it is not also an earlier output), so that no Identity is needed; true if so. */
static bool claim_output(bd_graph *body, int *map, int k, int out) {
    int v = body_output(body, k);
    if (out < 0 || map[v] >= 0 || bd_graph_value(body, v)->producer < 0) return false;
    for (int j = 0; j < k; j++)
        if (body_output(body, j) == v) return false;
    map[v] = out;
    return true;
}

static void splice_commit(splice *s) {
    bd_graph *g = s->g;
    size_t count = s->nodes.len, at = (size_t)s->at, tail = g->nodes.len - at - 1;
    for (size_t v = 0; v < g->values.len; v++) {
        bd_value *val = bd_graph_value(g, (int)v);
        if (val->producer > s->at) val->producer += (int)count;
    }
    for (size_t i = 0; i < s->m->subgraphs.len; i++) {
        bd_graph *sub = BD_VEC_AT(&s->m->subgraphs, bd_graph *, i);
        if (sub->parent == g && sub->owner_node > s->at) sub->owner_node += (int)count;
    }
    for (size_t j = 0; j < count; j++) bd_vec_push(&g->nodes);
    bd_node *base = g->nodes.data;
    memmove(base + at + 1 + count, base + at + 1, tail * sizeof *base);
    memcpy(base + at + 1, s->nodes.data, count * sizeof *base);
    base[at].dead = true;
    for (size_t j = at + 1; j <= at + count; j++)
        for (int k = 0; k < base[j].n_outputs; k++)
            if (base[j].outputs[k] >= 0) bd_graph_value(g, base[j].outputs[k])->producer = (int)j;
    bd_vec_free(&s->nodes);
}

static splice splice_begin(bd_graph *g, bd_node *n) {
    return (splice){.g = g, .m = g->model, .at = (int)(n - (bd_node *)g->nodes.data), .ctrl = n,
                    .nodes = BD_VEC(bd_node)};
}

/* A body value -> graph value map, every entry -1 (none yet); reset_map clears it for the next
 * copy. */
static void reset_map(bd_graph *body, int *map) {
    for (size_t v = 0; v <= body->values.len; v++) map[v] = -1;
}

static int *value_map(bd_graph *body) {
    int *map = malloc((body->values.len + 1) * sizeof *map);
    BD_ASSERT(map);
    reset_map(body, map);
    return map;
}

/* ---- the three ops ---- */

bd_status bd_infer_if(bd_graph *g, bd_node *n, bd_diag *d) {
    bd_graph *branches[2] = {graph_attr(n, "then_branch"), graph_attr(n, "else_branch")};
    for (int b = 0; b < 2; b++) {
        if (!branches[b])
            return bd_node_fail(d, BD_ERR_INVALID, n, "needs graph attribute '%s'",
                                b ? "else_branch" : "then_branch");
        if (branches[b]->inputs.len || (int)branches[b]->outputs.len != n->n_outputs)
            return bd_node_fail(d, BD_ERR_INVALID, n, "%s takes %zu inputs and gives %zu outputs; "
                                "expected none and %d", b ? "else_branch" : "then_branch",
                                branches[b]->inputs.len, branches[b]->outputs.len, n->n_outputs);
    }
    const bd_value *cond = bd_node_in(g, n, 0);
    if (cond->constant && cond->constant->numel != 1)
        return bd_node_fail(d, BD_ERR_INVALID, n, "input 0 (cond) has %lld elements, expected 1",
                            (long long)cond->constant->numel);
    char why[512];
    bool nested;
    bd_graph *body = if_branch(g, n, &nested, why, sizeof why);
    if (!body) return BD_OK;
    splice s = splice_begin(g, n);
    int *map = value_map(body), *consts = value_map(body);
    /* A nested body finds the values it reads by their names: keep them, and do not hand an
     * output's value to the If's. */
    for (int k = 0; k < n->n_outputs && !nested; k++) claim_output(body, map, k, n->outputs[k]);
    copy_body(&s, body, map, consts, -1);
    for (int k = 0; k < n->n_outputs; k++) {
        int v = body_output(body, k);
        if (n->outputs[k] >= 0 && map[v] != n->outputs[k]) identity(&s, map[v], n->outputs[k]);
    }
    free(map);
    free(consts);
    splice_commit(&s);
    return BD_OK;
}

bd_status bd_infer_loop(bd_graph *g, bd_node *n, bd_diag *d) {
    loop_plan p = loop_plan_of(n);
    if (!p.body) return bd_node_fail(d, BD_ERR_INVALID, n, "needs graph attribute 'body'");
    if (p.n_carried < 0 || p.n_scans < 0 || (int)p.body->inputs.len != 2 + p.n_carried ||
        (int)p.body->outputs.len != 1 + p.n_carried + p.n_scans)
        return bd_node_fail(d, BD_ERR_INVALID, n, "with %d inputs and %d outputs, its body should "
                            "take %d inputs and give %d outputs; it takes %zu and gives %zu",
                            n->n_inputs, n->n_outputs, 2 + p.n_carried, 1 + n->n_outputs,
                            p.body->inputs.len, p.body->outputs.len);
    for (int k = 0; k < 2; k++) {
        const bd_value *v = bd_node_in(g, n, k);
        if (v && v->constant && v->constant->numel != 1)
            return bd_node_fail(d, BD_ERR_INVALID, n, "input %d (%s) has %lld elements, expected 1",
                                k, k ? "cond" : "M", (long long)v->constant->numel);
    }
    for (int j = 0; j < p.n_carried; j++)
        if (n->inputs[2 + j] < 0)
            return bd_node_fail(d, BD_ERR_INVALID, n, "loop-carried input %d is empty", 2 + j);
    char why[512];
    if (loop_refusal(g, n, &p, why, sizeof why)) return BD_OK;
    splice s = splice_begin(g, n);
    int *map = value_map(p.body), *consts = value_map(p.body);
    int *carried = malloc((size_t)(p.n_carried + 1) * sizeof *carried);
    int *scans = malloc((size_t)(p.n_scans * p.trips + 1) * sizeof *scans);
    BD_ASSERT(carried && scans);
    for (int j = 0; j < p.n_carried; j++) carried[j] = n->inputs[2 + j];
    int truth = p.trips ? const_int(&s, BD_DT_BOOL, 0, 1) : -1;
    for (int64_t t = 0; t < p.trips; t++) {
        reset_map(p.body, map);
        map[body_input(p.body, 0)] = const_int(&s, BD_DT_INT64, 0, t);
        map[body_input(p.body, 1)] = truth;
        for (int j = 0; j < p.n_carried; j++) map[body_input(p.body, 2 + j)] = carried[j];
        for (int j = 0; j < p.n_carried && t == p.trips - 1; j++)
            claim_output(p.body, map, 1 + j, n->outputs[j]);
        copy_body(&s, p.body, map, consts, t);
        for (int j = 0; j < p.n_carried; j++) carried[j] = map[body_output(p.body, 1 + j)];
        for (int k = 0; k < p.n_scans; k++)
            scans[k * p.trips + t] = map[body_output(p.body, 1 + p.n_carried + k)];
    }
    for (int j = 0; j < p.n_carried; j++)
        if (n->outputs[j] >= 0 && carried[j] != n->outputs[j]) identity(&s, carried[j], n->outputs[j]);
    for (int k = 0; k < p.n_scans; k++) {
        int out = n->outputs[p.n_carried + k];
        if (out >= 0) stack(&s, scans + k * p.trips, p.trips, 0, out, bd_graph_value(g, out)->name);
    }
    free(map);
    free(consts);
    free(carried);
    free(scans);
    splice_commit(&s);
    return BD_OK;
}

bd_status bd_infer_scan(bd_graph *g, bd_node *n, bd_diag *d) {
    scan_plan p = scan_plan_of(n);
    if (!p.body) return bd_node_fail(d, BD_ERR_INVALID, n, "needs graph attribute 'body'");
    if (p.n_scan_in < 1 || p.n_states < 0 || p.n_scan_out < 0 ||
        (int)p.body->inputs.len != p.n_states + p.n_scan_in ||
        (int)p.body->outputs.len != p.n_states + p.n_scan_out)
        return bd_node_fail(d, BD_ERR_INVALID, n, "num_scan_inputs %d, %d inputs, %d outputs and "
                            "a body of %zu inputs and %zu outputs do not agree", p.n_scan_in,
                            n->n_inputs, n->n_outputs, p.body->inputs.len, p.body->outputs.len);
    for (int k = p.first_state; k < n->n_inputs; k++)
        if (n->inputs[k] < 0) return bd_node_fail(d, BD_ERR_INVALID, n, "input %d is empty", k);
    char why[512];
    if (scan_refusal(g, n, &p, why, sizeof why)) return BD_OK;
    splice s = splice_begin(g, n);
    int64_t batches = p.batched ? p.batch : 1, trips = p.trips;
    int *map = value_map(p.body), *consts = value_map(p.body);
    int *carried = malloc((size_t)(p.n_states + 1) * sizeof *carried);
    int *sliced = malloc((size_t)(p.n_scan_in + 1) * sizeof *sliced);
    int *ys = malloc((size_t)(p.n_scan_out * trips + 1) * sizeof *ys);
    /* opset 8: per batch element, its final states and stacked scan outputs */
    int *finals = malloc((size_t)((p.n_states + p.n_scan_out) * batches + 1) * sizeof *finals);
    BD_ASSERT(carried && sliced && ys && finals);
    const char *in_dirs = p.batched ? "directions" : "scan_input_directions";
    for (int64_t b = 0; b < batches; b++) {
        for (int j = 0; j < p.n_states; j++) {
            int init = n->inputs[p.first_state + j];
            carried[j] = p.batched ? take(&s, init, b, 0) : init;
        }
        for (int i = 0; i < p.n_scan_in; i++) {
            int x = n->inputs[p.first_state + p.n_states + i];
            sliced[i] = p.batched ? take(&s, x, b, 0) : x;
        }
        for (int64_t t = 0; t < trips; t++) {
            reset_map(p.body, map);
            for (int j = 0; j < p.n_states; j++) map[body_input(p.body, j)] = carried[j];
            for (int i = 0; i < p.n_scan_in; i++) {
                int64_t at = list_attr(n, in_dirs, i, 0) ? trips - 1 - t : t;
                int64_t axis = p.batched ? 0 : list_attr(n, "scan_input_axes", i, 0);
                map[body_input(p.body, p.n_states + i)] = take(&s, sliced[i], at, axis);
            }
            for (int j = 0; j < p.n_states && !p.batched && t == trips - 1; j++)
                claim_output(p.body, map, j, n->outputs[j]);
            copy_body(&s, p.body, map, consts, b * trips + t);
            for (int j = 0; j < p.n_states; j++) carried[j] = map[body_output(p.body, j)];
            for (int k = 0; k < p.n_scan_out; k++) {
                /* a reversed scan output is prepended: iteration t lands at trips - 1 - t */
                int64_t at = !p.batched && list_attr(n, "scan_output_directions", k, 0) ? trips - 1 - t : t;
                ys[k * trips + at] = map[body_output(p.body, p.n_states + k)];
            }
        }
        for (int j = 0; j < p.n_states; j++) {
            int out = n->outputs[j];
            if (p.batched) finals[j * batches + b] = carried[j];
            else if (out >= 0 && carried[j] != out) identity(&s, carried[j], out);
        }
        for (int k = 0; k < p.n_scan_out; k++) {
            int out = n->outputs[p.n_states + k];
            if (out < 0) continue;
            const char *name = bd_graph_value(g, out)->name;
            if (p.batched)
                finals[(p.n_states + k) * batches + b] = stack(&s, ys + k * trips, trips, 0, -1, name);
            else
                stack(&s, ys + k * trips, trips, list_attr(n, "scan_output_axes", k, 0), out, name);
        }
    }
    for (int k = 0; p.batched && k < p.n_states + p.n_scan_out; k++) {
        int out = n->outputs[k];
        if (out >= 0) stack(&s, finals + k * batches, batches, 0, out, bd_graph_value(g, out)->name);
    }
    free(map);
    free(consts);
    free(carried);
    free(sliced);
    free(ys);
    free(finals);
    splice_commit(&s);
    return BD_OK;
}

const char *bd_control_refusal(bd_graph *g, const bd_node *n, char *buf, size_t len) {
    bool nested;
    if (n->op == BD_OP_IF) return if_branch(g, n, &nested, buf, len) ? NULL : buf;
    if (n->op == BD_OP_LOOP) {
        loop_plan p = loop_plan_of(n);
        return loop_refusal(g, n, &p, buf, len);
    }
    scan_plan p = scan_plan_of(n);
    return scan_refusal(g, n, &p, buf, len);
}
