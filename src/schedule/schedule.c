/* schedule.c — the operator-level schedule (schedule.h): the nests in program order, which
 * lowering and fusion keep topological, with a barrier after each. */
#include <stdlib.h>

#include "schedule/schedule.h"

bd_status bd_schedule_program(const bd_program *p, bd_schedule *s, bd_diag *d) {
    (void)d;
    s->n_steps = (int)p->nests.len;
    s->order = malloc((p->nests.len + 1) * sizeof *s->order);
    BD_ASSERT(s->order);
    for (int i = 0; i < s->n_steps; i++)
        s->order[i] = i;
    return BD_OK;
}

void bd_schedule_free(bd_schedule *s) {
    free(s->order);
    s->order = NULL;
    s->n_steps = 0;
}

void bd_schedule_dump(const bd_program *p, const bd_schedule *s, FILE *f) {
    for (int i = 0; i < s->n_steps; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->order[i]);
        fprintf(f, "step %d: nest %d, %lld blocks, then a barrier\n", i, s->order[i],
                (long long)n->n_blocks);
    }
}

bd_status bd_schedule_verify(const bd_program *p, const bd_schedule *s, bd_diag *d) {
    (void)d;
    bd_graph *g = p->graph;
    size_t nv = g->values.len;
    bool *seen = calloc(p->nests.len + 1, 1), *written = calloc(nv + 1, 1);
    BD_ASSERT(seen && written && s->n_steps == (int)p->nests.len);
    for (int i = 0; i < s->n_steps; i++) {
        int k = s->order[i];
        BD_ASSERT(k >= 0 && k < (int)p->nests.len && !seen[k]);
        seen[k] = true;
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, k);
        for (int j = 0; j < n->n_operands; j++) {
            const bd_operand *o = &n->operands[j];
            const bd_value *v = bd_graph_value(g, o->value);
            if (!o->write && !v->constant && !(v->flags & BD_VALUE_INPUT))
                BD_ASSERT(written[o->value]);
        }
        for (int j = 0; j < n->n_operands; j++)
            if (n->operands[j].write) written[n->operands[j].value] = true;
    }
    free(seen);
    free(written);
    return BD_OK;
}
