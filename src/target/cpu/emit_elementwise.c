/* emit_elementwise.c — C bodies for ELEMENTWISE nests (the nest's expression, element by element)
 * and CONSTANT nests (graph outputs that folded).
 *
 * A block walks its tile with one loop per iteration dim; each operand's element offset is the sum
 * of index x stride, with stride 0 along broadcast dims, so broadcasting needs no copies. The
 * operands the expression loads become locals `a`, `b`, `c`, ... and the expression is printed
 * through the C dialect (dialect.c), which also spells the float16/bfloat16 conversions. */

#include <string.h>

#include "target/cpu/emit.h"

static const char *const operand_names[] = {"a", "b", "c", "e", "f", "g", "h", "k",
                                            "m", "p", "q", "r", "s", "t", "u", "v"};

bd_status bd_emit_body_ELEMENTWISE(bd_emitter *e, const bd_nest *nest, bd_emit_phase phase,
                                   bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    bd_graph *g = e->graph;
    const bd_expr *x = BD_NEST_PARAMS(nest, expr);
    const bd_operand *out = &nest->operands[nest->n_operands - 1];
    const bd_value *vout = bd_graph_value(g, out->value);
    /* operands loaded at the element, and tables (LOOKUP) read through their pointers */
    bool loaded[BD_NEST_MAX_OPERANDS], table[BD_NEST_MAX_OPERANDS];
    const char *names[BD_NEST_MAX_OPERANDS];
    bd_expr_operands_read(x, nest->n_operands, loaded, table);
    for (int k = 0; k < nest->n_operands; k++) {
        BD_ASSERT(!(loaded[k] && table[k]));
        names[k] = table[k] ? bd_emit_str(e, "P%d", k) : operand_names[k];
    }
    const char *store = bd_emit_str(e, "(%s)(%s)", bd_c_type(vout->dtype),
                                    bd_print_expr(&e->pr, &bd_c_dialect, x, names));

    int r = nest->n_iter;
    /* Pointers, then one loop per dim with running offsets per operand. The output shares memory
     * with an input only when the plan put it in place over that input, which is then read at the
     * element written, through the output's own pointer; so every pointer is restrict, and with
     * that and a constant trip count for the innermost loop (whenever the tile divides the
     * extent), GCC vectorizes the loop without runtime alias checks or a guessed trip count (at
     * -O2 too, where its "very cheap" cost model refuses both). */
    int w = nest->n_operands - 1;
    bool via_output[BD_NEST_MAX_OPERANDS] = {false};
    for (int k = 0; k < w; k++)
        via_output[k] = !memcmp(&e->storage[nest->operands[k].value], &e->storage[out->value],
                                sizeof(bd_storage));
    for (int k = 0; k < nest->n_operands; k++) {
        const bd_operand *o = &nest->operands[k];
        if (!o->write && !loaded[k] && !table[k]) continue; /* an input the expression ignores */
        if (!o->write && via_output[k]) continue;
        const char *t = bd_c_type(bd_graph_value(g, o->value)->dtype);
        bd_emit(e, "%s%s *restrict P%d = %s;", o->write ? "" : "const ", t, k,
                bd_emit_ptr(e, o->value));
    }
    /* stride of operand k along iteration dim i */
    int64_t stride[BD_NEST_MAX_OPERANDS][BD_MAX_RANK] = {{0}};
    for (int k = 0; k < nest->n_operands; k++) {
        const bd_operand *o = &nest->operands[k];
        const bd_value *v = bd_graph_value(g, o->value);
        int64_t vs[BD_MAX_RANK];
        bd_value_strides(v, vs);
        for (int j = 0; j < o->rank; j++)
            if (o->dims[j].kind == BD_ACCESS_AFFINE && o->dims[j].iter >= 0)
                stride[k][o->dims[j].iter] += vs[j] * o->dims[j].scale;
    }
    /* The innermost loop takes in the dims before it while they are whole in the tile and every
     * operand reads them as one run (stride of dim i = stride of dim i+1 x its extent): a 14x14
     * plane is then one loop of 196, not 14 of 14, which GCC would not vectorize (a constant trip
     * count below the vector width; QuantizeLinear ran scalar and branchy at 9 ns an element). */
    int inner = r - 1;
    int64_t span = 1; /* elements of the dims after `inner` */
    while (inner > 0 && nest->tile[inner] == nest->extent[inner]) {
        bool run = true;
        for (int k = 0; k < nest->n_operands && run; k++)
            run = stride[k][inner - 1] == stride[k][inner] * nest->extent[inner];
        if (!run) break;
        span *= nest->extent[inner];
        inner--;
    }
    for (int i = 0; i <= inner; i++) {
        const char *scale = i == inner && span > 1 ? bd_emit_str(e, " * %lld", (long long)span) : "";
        if (i == inner && nest->tile[i] > 0 && nest->extent[i] % nest->tile[i] == 0)
            bd_emit_open(e, "for (int64_t i%d = lo[%d]%s; i%d < lo[%d]%s + %lld; i%d++)", i, i, scale,
                         i, i, scale, (long long)(nest->tile[i] * span), i);
        else
            bd_emit_open(e, "for (int64_t i%d = lo[%d]%s; i%d < hi[%d]%s; i%d++)", i, i, scale, i, i,
                         scale, i);
    }
    for (int k = 0; k < nest->n_operands; k++) {
        if (!nest->operands[k].write && !loaded[k]) continue;
        const char *sum = "0";
        for (int i = 0; i <= inner; i++) {
            int64_t st = i == inner ? stride[k][r - 1] : stride[k][i];
            if (st) sum = bd_emit_str(e, "%s + i%d * %lld", sum, i, (long long)st);
        }
        int dt = bd_graph_value(g, nest->operands[k].value)->dtype;
        if (nest->operands[k].write)
            bd_emit(e, "const int64_t o%d = %s;", k, sum);
        else
            bd_emit(e, "const %s %s = P%d[%s];", bd_c_type(dt), operand_names[k],
                    via_output[k] ? w : k, sum);
    }
    bd_emit(e, "P%d[o%d] = %s;", nest->n_operands - 1, nest->n_operands - 1, store);
    for (int i = 0; i <= inner; i++)
        bd_emit_close(e, NULL);
    return BD_OK;
}

bd_status bd_emit_body_CONSTANT(bd_emitter *e, const bd_nest *nest, bd_emit_phase phase,
                                bd_diag *d) {
    (void)d;
    if (phase != BD_EMIT_BLOCK) return BD_OK;
    const bd_operand *out = &nest->operands[0];
    const bd_value *v = bd_graph_value(e->graph, out->value);
    int64_t off = bd_blob_add_ref(&e->blob, v->constant->data, (size_t)v->constant->nbytes);
    bd_emit(e, "memcpy(%s, bd_weights + %lld, %lld);", bd_emit_ptr(e, out->value), (long long)off,
            (long long)v->constant->nbytes);
    return BD_OK;
}
