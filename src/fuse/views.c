/* views.c — Reshape-family copies become zero-copy views (fuse.h).
 *
 * A Reshape, Flatten, Squeeze or Unsqueeze nest copies its input's bytes unchanged: the output is
 * the same row-major data under other dims. When the output need not own its bytes (it is not a
 * graph output, and the input is not a constant the printer embeds), the nest is dropped and the
 * output becomes a view of the input's root value: the memory plan gives both the same bytes
 * and one lifetime, the printers address the view through its own dims, and the block-dependency
 * analysis maps a region of the view to a region of the root through the reshape's dim groups
 * (deps.c). A chain of views points at the first root.
 *
 * Concat in place: a Concat part (a copy of x into output y at an offset along one dim) whose
 * slice of y is contiguous (every dim of y before the axis is 1, as for a batch-1 channel
 * concat) is dropped, and x is stored inside y at that slice (bd_program.inside_of): x's producer
 * writes straight into the concat output. x must be an intermediate with a writer that only
 * this part reads (another reader would keep all of y alive as long as x: DenseNet reads each
 * feature again in every later layer's concat, and its arena would grow by 75%), not a view;
 * y must be an intermediate that is not itself written into another concat. */
#include <stdlib.h>

#include "fuse/fuse.h"

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
                !bd_graph_is_output(g, y)) {
                p->view_of[y] = root;
                continue; /* the nest goes */
            }
        }
        BD_VEC_AT(&p->nests, bd_nest, kept++) = *n;
    }
    p->nests.len = kept;
}

/* A Concat part nest: a plain copy of x (read by the identity) into y at an offset along one
 * dim (the write map's only offset); the dim and offset into *axis, *at. */
static bool concat_part(const bd_graph *g, const bd_nest *n, int *axis, int64_t *at) {
    if (n->body != BD_BODY_COPY || n->params.copy.reshape || n->params.copy.fill ||
        n->n_operands != 2 || n->operands[0].write || !n->operands[1].write)
        return false;
    const bd_operand *r = &n->operands[0], *w = &n->operands[1];
    const bd_value *x = bd_graph_value((bd_graph *)g, r->value), *y = bd_graph_value((bd_graph *)g, w->value);
    if (x->dtype != y->dtype || x->rank != y->rank || r->rank != n->n_iter) return false;
    *axis = -1;
    for (int k = 0; k < x->rank; k++) {
        const bd_access_dim *a = &r->dims[k], *b = &w->dims[k];
        if (a->kind != BD_ACCESS_AFFINE || a->iter != k || a->scale != 1 || a->offset || a->window ||
            b->kind != BD_ACCESS_AFFINE || b->iter != k || b->scale != 1 || b->window)
            return false;
        if (b->offset || x->dims[k] != y->dims[k]) {
            if (*axis >= 0) return false;
            *axis = k;
            *at = b->offset;
        }
    }
    return *axis >= 0;
}

void bd_concat_in_place(bd_program *p) {
    if (p->fusion == BD_FUSION_NONE) return;
    bd_graph *g = p->graph;
    size_t nv = g->values.len, kept = 0;
    bool *holds = calloc(nv + 1, sizeof *holds); /* a value something is written into */
    BD_ASSERT(holds);
    if (!p->inside_of) bd_program_inside_init(p); /* siblings.c may have placed slices */
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        int axis;
        int64_t at;
        if (concat_part(g, n, &axis, &at)) {
            int x = n->operands[0].value, y = n->operands[1].value;
            const bd_value *xv = bd_graph_value(g, x), *yv = bd_graph_value(g, y);
            /* contiguous slice: every dim before the axis is 1 in the output */
            bool contiguous = true;
            for (int k = 0; k < axis; k++) contiguous &= yv->dims[k] == 1;
            bool writable = bd_program_root(p, x) == x && p->inside_of[x] < 0 && !holds[x] &&
                            !xv->constant && !(xv->flags & BD_VALUE_INPUT) && !bd_graph_is_output(g, x);
            bool container = bd_program_root(p, y) == y && p->inside_of[y] < 0 && !yv->constant &&
                             !(yv->flags & BD_VALUE_INPUT) && !bd_graph_is_output(g, y);
            /* x written by a nest before this one (not a graph input, which has no writer) */
            bool written = false;
            for (size_t j = 0; j < i && !written; j++) {
                const bd_nest *w = &BD_VEC_AT(&p->nests, bd_nest, j);
                for (int k = 0; k < w->n_operands; k++)
                    written |= w->operands[k].write && w->operands[k].value == x;
            }
            /* no view of x (a view would need its own place inside y) */
            bool viewed = false;
            for (size_t v = 0; p->view_of && v < nv && !viewed; v++) viewed = p->view_of[v] == x;
            /* and no other reader: one would keep all of y alive for x (DenseNet reads each
             * feature again in every later layer's concat) */
            bool shared = false;
            for (size_t j = 0; j < p->nests.len && !shared; j++) {
                const bd_nest *o = &BD_VEC_AT(&p->nests, bd_nest, j);
                for (int k = 0; k < o->n_operands && j != i; k++)
                    shared |= !o->operands[k].write && o->operands[k].value == x;
            }
            if (contiguous && writable && container && written && !viewed && !shared) {
                p->inside_of[x] = y;
                p->inside_axis[x] = axis;
                p->inside_at[x] = at;
                holds[y] = true;
                continue; /* the copy goes: x's producer writes into y's bytes */
            }
        }
        BD_VEC_AT(&p->nests, bd_nest, kept++) = *n;
    }
    p->nests.len = kept;
    free(holds);
}
