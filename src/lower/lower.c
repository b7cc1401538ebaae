/* lower.c — turns the inferred graph into tiled loop nests (nest/loopnest.h), one or more per
 * live node, by calling each op's lowering function from the op table, then verifies the result.
 * Lowering is target-neutral and unfused: every live node gets its own nests, and fusion
 * (fuse/fuse.c) merges them afterwards. */
#include <stdio.h>
#include <string.h>

#include "lower/lower.h"

typedef bd_status (*bd_lower_fn)(bd_program *p, int node, bd_diag *d);

static const bd_lower_fn lower_fns[BD_OP_COUNT] = {
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower) [BD_OP_##e] = lower,
    BD_OPS(X)
#undef X
};

bd_status bd_lower_node(bd_program *p, int node, bd_diag *d) {
    const bd_node *n = bd_graph_node(p->graph, node);
    BD_ASSERT(!n->dead && n->op != BD_OP_UNKNOWN); /* the support check ran before */
    return lower_fns[n->op](p, node, d);
}

bd_status bd_lower(bd_graph *g, bd_program *p, bd_diag *d) {
    p->graph = g;
    p->nests = BD_VEC(bd_nest);
    p->fusion_notes = BD_VEC(bd_fusion_note);
    /* Graph outputs known at compile time are copied into the caller's buffer first, since other
     * nests may read them from there. */
    for (size_t i = 0; i < g->outputs.len; i++) {
        int v = BD_VEC_AT(&g->outputs, int, i);
        const bd_value *val = bd_graph_value(g, v);
        if (val->flags & BD_VALUE_INPUT)
            return bd_fail(d, BD_ERR_UNSUPPORTED, "graph output '%s' is also a graph input",
                           bd_quote(val->name));
        if (!val->constant) continue;
        bd_nest *n = bd_nest_begin(p, -1, BD_BODY_CONSTANT, val);
        bd_access_identity(bd_nest_operand(n, v, true, val->rank), 0);
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        if (bd_graph_node(g, (int)i)->dead) continue;
        bd_status s = bd_lower_node(p, (int)i, d);
        if (s) return s;
    }
    return bd_program_verify(p, d);
}

/* If, Loop and Scan are inlined during inference; one still here was refused by the support
 * check, which tells why. */
bd_status bd_lower_control(bd_program *p, int node, bd_diag *d) {
    char why[512];
    const bd_node *n = bd_graph_node(p->graph, node);
    if (!bd_control_refusal(p->graph, n, why, sizeof why)) snprintf(why, sizeof why, "was not inlined");
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%s", why);
}

bd_status bd_need_static(bd_diag *d, const bd_node *n, const bd_value *v, const char *what) {
    if (!v || bd_value_shape_known(v)) return BD_OK;
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%s has no static shape", what);
}

bd_status bd_need_table(bd_diag *d, const bd_node *n, int64_t count, const char *what) {
    if (count <= BD_LOWER_MAX_TABLE_ELEMS) return BD_OK;
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%s would be a table of %lld elements, above "
                        "bdc's limit of %lld", what, (long long)count,
                        (long long)BD_LOWER_MAX_TABLE_ELEMS);
}

bool bd_lower_begin(bd_program *p, int node, bd_diag *d, const char *x_what, const char *y_what,
                    bd_node **n, bd_value **x, bd_value **y, bd_status *s) {
    bd_graph *g = p->graph;
    *n = bd_graph_node(g, node);
    *x = bd_node_in(g, *n, 0);
    *y = bd_node_out(g, *n, 0);
    *s = BD_OK;
    if ((*y)->constant) return false;
    if ((*s = bd_need_static(d, *n, *y, y_what)) || (*s = bd_need_static(d, *n, *x, x_what)))
        return false;
    return true;
}

int bd_lower_temp(bd_graph *g, int dtype, int rank, const int64_t *dims) {
    int t = bd_graph_add_value(g, "");
    bd_value *tv = bd_graph_value(g, t);
    tv->dtype = dtype;
    tv->rank = rank;
    for (int k = 0; k < rank; k++) tv->dims[k] = dims[k];
    return t;
}
