/* batch.c — the checks behind a ranged batch (batch.h). */
#include <stdlib.h>
#include <string.h>

#include "plan/batch.h"

/* Inputs that decide an output's shape rather than its values: a constant read there may hold
 * the batch extent (a Reshape target [B, -1]); what it does to shapes is checked on the outputs. */
static bool shape_slot(bd_op op, int k) {
    switch (op) {
    case BD_OP_RESHAPE:
    case BD_OP_EXPAND:
    case BD_OP_TILE:
    case BD_OP_SQUEEZE:
    case BD_OP_UNSQUEEZE:
    case BD_OP_SPLIT: return k == 1;
    case BD_OP_SLICE: return k >= 1;
    case BD_OP_PAD: return k == 1 || k == 3;
    case BD_OP_RESIZE: return k >= 1;
    case BD_OP_CONSTANT_OF_SHAPE: return k == 0;
    default: return false;
    }
}

static bool same_shape(const bd_value *a, const bd_value *b, int from) {
    if (a->rank != b->rank) return false;
    for (int i = from; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

static bool same_constant(const bd_tensor *a, const bd_tensor *b) {
    if (!a || !b) return a == b;
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return false;
    if (memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims)) return false;
    return !a->nbytes || !a->data || !b->data || memcmp(a->data, b->data, (size_t)a->nbytes) == 0;
}

/* Per value of g: whether it is a graph input whose dim 0 is the ranged batch (bind.c). */
static bool *batched_inputs(bd_graph *g) {
    bool *batched = calloc(g->values.len + 1, sizeof *batched);
    BD_ASSERT(batched);
    for (size_t k = 0; k < g->inputs.len; k++) {
        int v = BD_VEC_AT(&g->inputs, int, k);
        batched[v] = (bd_graph_value(g, v)->flags & BD_VALUE_BATCHED) != 0;
    }
    return batched;
}

static bd_status refuse_value(bd_diag *d, const bd_graph *g, const bd_value *v, const char *why) {
    return bd_fail(d, BD_ERR_UNSUPPORTED, "--dim %s=%lld..%lld: value '%s' %s", bd_quote(g->batch_symbol),
                   (long long)g->batch_min, (long long)g->batch_max, bd_quote(v->name), why);
}

bd_status bd_batch_check_front(bd_graph *hi, bd_graph *lo, bd_diag *d) {
    if (hi->values.len != lo->values.len || hi->nodes.len != lo->nodes.len)
        return bd_fail(d, BD_ERR_UNSUPPORTED, "--dim %s=%lld..%lld: the model simplifies to "
                       "different graphs at batch %lld and %lld", bd_quote(hi->batch_symbol),
                       (long long)hi->batch_min, (long long)hi->batch_max,
                       (long long)lo->batch_at, (long long)hi->batch_at);
    bool *tainted = batched_inputs(hi);
    bd_status s = BD_OK;
    for (size_t i = 0; i < hi->nodes.len && !s; i++) {
        const bd_node *n = bd_graph_node(hi, (int)i), *m = bd_graph_node(lo, (int)i);
        if (n->dead != m->dead) {
            s = bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "folds at one end of the batch range "
                             "(--dim %s=%lld..%lld) and not at the other", bd_quote(hi->batch_symbol),
                             (long long)hi->batch_min, (long long)hi->batch_max);
            break;
        }
        if (n->dead) continue;
        bool reads_batch = false;
        for (int k = 0; k < n->n_inputs && !s; k++) {
            int v = n->inputs[k];
            if (v < 0) continue;
            reads_batch |= tainted[v];
            const bd_value *a = bd_graph_value(hi, v), *b = bd_graph_value(lo, v);
            if (a->constant && !shape_slot(n->op, k) && !same_constant(a->constant, b->constant))
                s = bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "input %d ('%s') is computed from the "
                                 "batch extent (--dim %s ranges): it differs between batch %lld "
                                 "and %lld", k, bd_quote(a->name), bd_quote(hi->batch_symbol),
                                 (long long)lo->batch_at, (long long)hi->batch_at);
        }
        for (int k = 0; k < n->n_outputs && !s; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            const bd_value *a = bd_graph_value(hi, v), *b = bd_graph_value(lo, v);
            tainted[v] = reads_batch && !a->constant;
            if (tainted[v] && !(a->rank > 0 && a->dims[0] == hi->batch_at && b->dims[0] == lo->batch_at &&
                                same_shape(a, b, 1)))
                s = refuse_value(d, hi, a, "is computed from the batched inputs but its dim 0 is "
                                 "not the batch (a range needs the batch to stay dim 0 of every "
                                 "value; a Transpose or Reshape moved or merged it)");
            else if (!tainted[v] && !same_shape(a, b, 0))
                s = refuse_value(d, hi, a, "has a shape that depends on the batch but is not "
                                 "computed from the batched inputs");
        }
    }
    free(tainted);
    return s;
}

/* Operand o's dim 0 is iteration dim 0, one to one: batch item i of it is read or written
 * where the nest is at item i (its other dims only index within that item). */
static bool batch_identity(const bd_operand *o) {
    if (o->rank < 1) return false;
    const bd_access_dim *a = &o->dims[0];
    return a->kind == BD_ACCESS_AFFINE && a->iter == 0 && a->scale == 1 && a->offset == 0 &&
           !a->window;
}

/* Whether o is indexed by iteration dim 0 (a constant that varies along the batch). */
static bool uses_iter0(const bd_operand *o) {
    for (int k = 0; k < o->rank; k++)
        if (o->dims[k].kind == BD_ACCESS_AFFINE && o->dims[k].iter == 0) return true;
    return false;
}

bd_status bd_batch_plan(const bd_program *p, bool **batch_sliced, bd_diag *d) {
    bd_graph *g = p->graph;
    *batch_sliced = calloc(p->nests.len + 1, sizeof **batch_sliced);
    BD_ASSERT(*batch_sliced);
    if (!g->batch_max) return BD_OK;
    bool *batched = batched_inputs(g); /* per storage root */
    bd_status s = BD_OK;
    for (size_t i = 0; i < p->nests.len && !s; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        bool reads = false;
        for (int k = 0; k < n->n_operands; k++)
            reads |= !n->operands[k].write && batched[bd_program_storage_root(p, n->operands[k].value)];
        if (!reads) continue;
        const bd_node *node = n->node >= 0 ? bd_graph_node(g, n->node) : NULL;
        const char *why = NULL;
        if (n->n_iter < 1 || n->extent[0] != g->batch_max || n->whole[0])
            why = n->n_iter >= 1 && n->whole[0] ? "reads the whole batch in each block (a softmax "
                                                  "or normalisation over it)"
                                                : "does not iterate over the batch as its first dim";
        for (int k = 0; k < n->n_operands && !why; k++) {
            const bd_operand *o = &n->operands[k];
            const bd_value *v = bd_graph_value(g, o->value);
            bool is_batched = o->write || batched[bd_program_storage_root(p, o->value)];
            if (is_batched && (!batch_identity(o) || v->dims[0] != g->batch_max))
                why = "does not map batch item i of its inputs to batch item i of its output";
            else if (!is_batched && uses_iter0(o))
                why = "reads a constant along the batch";
        }
        if (why) {
            s = node ? bd_node_fail(d, BD_ERR_UNSUPPORTED, node, "%s, so --dim %s=%lld..%lld cannot "
                                    "run a smaller batch on a prefix of its blocks", why,
                                    bd_quote(g->batch_symbol), (long long)g->batch_min,
                                    (long long)g->batch_max)
                     : bd_fail(d, BD_ERR_UNSUPPORTED, "nest %zu %s (--dim %s ranges)", i, why,
                               bd_quote(g->batch_symbol));
            break;
        }
        (*batch_sliced)[i] = true;
        for (int k = 0; k < n->n_operands; k++)
            if (n->operands[k].write) batched[bd_program_storage_root(p, n->operands[k].value)] = true;
    }
    for (size_t k = 0; k < g->outputs.len && !s; k++) {
        int v = BD_VEC_AT(&g->outputs, int, k);
        bd_value *val = bd_graph_value(g, v);
        if (batched[bd_program_storage_root(p, v)]) val->flags |= BD_VALUE_BATCHED;
        else if (!val->constant && !(val->flags & BD_VALUE_INPUT))
            s = bd_fail(d, BD_ERR_UNSUPPORTED, "--dim %s ranges: graph output '%s' is computed "
                        "without batch items", bd_quote(g->batch_symbol), bd_quote(val->name));
    }
    free(batched);
    return s;
}
