/* simplify.c — graph clean-up after inference: Identity, inference-mode Dropout and Pads of zero
 * pads are bypassed, per-channel affine maps after a Conv are folded into it (fold_bn.c), then
 * nodes whose results nobody needs (unused, or replaced by folded constants) are marked dead.
 *
 * Values read by subgraphs (If/Loop bodies refer to enclosing values by name) count as used, so
 * nothing they need disappears. */
#include <stdlib.h>
#include <string.h>

#include "front/passes.h"

/* Dropout is the identity unless training_mode is given and not a constant false. */
static bool dropout_is_identity(bd_graph *g, const bd_node *n) {
    const bd_value *mask = bd_node_out(g, n, 1);
    if (mask) return false;
    const bd_value *training = bd_node_in(g, n, 2);
    if (!training) return true;
    return training->constant && training->constant->numel == 1 &&
           bd_tensor_get_i64(training->constant, 0) == 0;
}

/* A Pad of zero pads everywhere (torch.onnx puts one before DenseNet's average pools) copies its
 * input whatever its mode and value. */
static bool pad_is_identity(bd_graph *g, const bd_node *n) {
    const bd_value *pads = bd_node_in(g, n, 1);
    const bd_attr *attr = bd_node_attr(n, "pads");
    if (pads) {
        if (!pads->constant || !pads->constant->data) return false;
        for (int64_t i = 0; i < pads->constant->numel; i++)
            if (bd_tensor_get_i64(pads->constant, i) != 0) return false;
        return true;
    }
    if (!attr || attr->type != BD_ATTR_INTS) return false;
    for (int i = 0; i < attr->n; i++)
        if (attr->ints[i] != 0) return false;
    return true;
}

void bd_remove_identities(bd_graph *g) {
    if (bd_graph_has_subgraphs(g)) return; /* bodies refer to values by name: keep names stable */
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        if (n->op != BD_OP_IDENTITY && !(n->op == BD_OP_DROPOUT && dropout_is_identity(g, n)) &&
            !(n->op == BD_OP_PAD && pad_is_identity(g, n)))
            continue;
        int in = n->inputs[0], out = n->outputs[0];
        if (in < 0 || out < 0) continue;
        if (bd_graph_value(g, out)->flags & BD_VALUE_OUTPUT) continue; /* its name is the contract */
        for (size_t j = i + 1; j < g->nodes.len; j++) {
            bd_node *c = bd_graph_node(g, (int)j);
            for (int k = 0; k < c->n_inputs; k++)
                if (c->inputs[k] == out) c->inputs[k] = in;
        }
        n->dead = true;
    }
    bd_fold_into_conv(g); /* after the bypass, so that Conv -> Identity -> BatchNorm folds too */
}

static void mark_outer_uses(bd_graph *inner, bd_graph *g, char *needed) {
    for (size_t i = 0; i < inner->values.len; i++) {
        const bd_value *v = &BD_VEC_AT(&inner->values, bd_value, i);
        if (!(v->flags & BD_VALUE_OUTER)) continue;
        int idx = bd_graph_find_value(g, v->name);
        if (idx >= 0) needed[idx] = 1;
    }
    for (size_t i = 0; i < inner->nodes.len; i++) {
        const bd_node *n = &BD_VEC_AT(&inner->nodes, bd_node, i);
        for (int a = 0; a < n->n_attrs; a++) {
            if (n->attrs[a].type == BD_ATTR_GRAPH) mark_outer_uses(n->attrs[a].g, g, needed);
            for (int k = 0; n->attrs[a].type == BD_ATTR_GRAPHS && k < n->attrs[a].n; k++)
                mark_outer_uses(n->attrs[a].graphs[k], g, needed);
        }
    }
}

void bd_dead_code(bd_graph *g) {
    char *needed = calloc(g->values.len ? g->values.len : 1, 1);
    BD_ASSERT(needed);
    for (size_t i = 0; i < g->outputs.len; i++) needed[BD_VEC_AT(&g->outputs, int, i)] = 1;
    for (size_t i = g->nodes.len; i-- > 0;) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        bool live = false;
        for (int k = 0; k < n->n_outputs && !live; k++) {
            const bd_value *v = bd_node_out(g, n, k);
            live = v && needed[n->outputs[k]] && !v->constant;
        }
        if (!live) {
            n->dead = true;
            continue;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) needed[n->inputs[k]] = 1;
        for (int a = 0; a < n->n_attrs; a++) {
            if (n->attrs[a].type == BD_ATTR_GRAPH) mark_outer_uses(n->attrs[a].g, g, needed);
            for (int k = 0; n->attrs[a].type == BD_ATTR_GRAPHS && k < n->attrs[a].n; k++)
                mark_outer_uses(n->attrs[a].graphs[k], g, needed);
        }
    }
    free(needed);
    bd_graph_count_uses(g);
}
