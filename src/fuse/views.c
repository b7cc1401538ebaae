/* views.c — Reshape-family copies become zero-copy views (fuse.h).
 *
 * A Reshape, Flatten, Squeeze or Unsqueeze nest copies its input's bytes unchanged: the output is
 * the same row-major data under other dims. When the output need not own its bytes (it is not a
 * graph output, and the input is not a constant the printer embeds), the nest is dropped and the
 * output becomes a view of the input's root value: the memory plan gives both the same bytes
 * and one lifetime, the printers address the view through its own dims, and the block-dependency
 * analysis maps a region of the view to a region of the root through the reshape's dim groups
 * (deps.c). A chain of views points at the first root. */
#include <stdlib.h>

#include "fuse/fuse.h"

static bool is_graph_output(const bd_graph *g, int v) {
    for (size_t i = 0; i < g->outputs.len; i++)
        if (BD_VEC_AT(&g->outputs, int, i) == v) return true;
    return false;
}

void bd_make_views(bd_program *p) {
    if (p->fusion == BD_FUSION_NONE) return; /* the one-nest-per-node baseline */
    bd_graph *g = p->graph;
    size_t nv = g->values.len, kept = 0;
    p->view_of = malloc((nv + 1) * sizeof *p->view_of);
    BD_ASSERT(p->view_of);
    for (size_t v = 0; v < nv; v++)
        p->view_of[v] = -1;
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (n->body == BD_BODY_COPY && n->params.copy.reshape && n->n_operands == 2 &&
            !n->operands[0].write && n->operands[1].write) {
            int x = n->operands[0].value, y = n->operands[1].value;
            const bd_value *xv = bd_graph_value(g, x), *yv = bd_graph_value(g, y);
            int root = bd_program_root(p, x);
            if (xv->dtype == yv->dtype && !bd_graph_value(g, root)->constant &&
                !is_graph_output(g, y) && !(yv->flags & BD_VALUE_OUTPUT)) {
                p->view_of[y] = root;
                continue; /* the nest goes */
            }
        }
        BD_VEC_AT(&p->nests, bd_nest, kept++) = *n;
    }
    p->nests.len = kept;
}
