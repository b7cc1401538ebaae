/* pipeline.c — the compiler as plain lists of calls. The front half: load, bind the inputs the
 * command line pins, verify, infer and fold, simplify. The back half, over the nest program:
 * lower, tile (the target's choice), fuse, schedule, plan memory, each followed by its verifier
 * and, when asked, its dump. What follows (the target's printer and the native build) reads only
 * the planned program (driver/compile.c). */
#include <stdio.h>
#include <string.h>

#include "driver/pipeline.h"
#include "fuse/fuse.h"
#include "plan/hazards.h"

bd_status bd_front_passes(bd_model *m, bool qdq_int8, bd_diag *d) {
    bd_status s = bd_verify(m, d);
    if (!s) s = bd_infer_graph(m->graph, d);
    if (s) return s;
    bd_remove_identities(m->graph);
    if (qdq_int8) {
        bd_dequantize_into_conv(m->graph);
        bd_quantized_moves(m->graph);
    }
    bd_dead_code(m->graph);
    return BD_OK;
}

bd_status bd_compile_front(const char *path, const bd_limits *lim, const bd_input_binds *binds,
                           bool qdq_int8, bd_model **out, bd_diag *d) {
    bd_model *m;
    bd_status s = bd_onnx_load(path, lim, &m, d);
    if (!s) s = bd_bind_inputs(m, binds, d);
    if (!s) s = bd_front_passes(m, qdq_int8, d);
    if (s) {
        if (m) bd_model_free(m);
        return s;
    }
    *out = m;
    return BD_OK;
}

bd_status bd_plan_program(bd_graph *g, const bd_target *t, const bd_plan_opts *opts,
                          const bd_dumps *dumps, bd_planned *out, bd_diag *d) {
    memset(out, 0, sizeof *out);
    bd_program *p = &out->prog;
    p->fusion = opts->fusion;
    p->winograd = opts->winograd;
    p->tile_threads = opts->tile_threads > 0 ? opts->tile_threads : 8;
    p->i8_direct = opts->i8_direct;
    p->bf16 = opts->bf16;
    p->fma_half = opts->fma_half;
    bd_status s = bd_lower(g, p, d); /* verifies */
    if (!s && dumps->lower) bd_program_dump(p, stderr);
    if (!s) bd_fuse_siblings(p);
    if (!s) s = t->tile(p, d); /* verifies */
    if (!s) s = bd_fuse(p, d); /* verifies */
    if (!s) s = bd_fuse_attention(p, t->tile_attention, d); /* verifies */
    if (!s) s = bd_fuse_conv_pool(p, t->tile_conv_pool, d); /* verifies */
    if (!s) bd_make_views(p);
    if (!s) bd_concat_in_place(p);
    if (!s) s = bd_program_verify(p, d);
    if (!s && dumps->tiles) bd_program_dump(p, stderr);
    if (!s && dumps->fuse) bd_fusion_dump(p, stderr);
    if (!s) s = bd_plan_precheck(p, opts->max_activation_bytes, d);
    if (!s) s = bd_deps_analyze(p, &out->deps, d);
    if (!s && dumps->deps) bd_deps_dump(p, &out->deps, stderr);
    if (!s) s = bd_schedule_program(p, &out->deps, opts->schedule, &out->sched, d);
    if (!s) s = bd_schedule_verify(p, &out->sched, d);
    if (!s) s = bd_plan_memory(p, &out->sched, opts->max_activation_bytes, &out->mem, d);
    if (!s) s = bd_memory_plan_verify(p, &out->sched, &out->mem, d);
    if (!s) bd_plan_hazards(p, &out->mem, &out->sched);
    if (!s) bd_schedule_rank(p, &out->sched);
    if (!s) bd_plan_hazards_verify(p, &out->mem, &out->sched);
    if (!s) s = bd_schedule_verify(p, &out->sched, d);
    if (!s && dumps->sched) bd_schedule_dump(p, &out->sched, stderr);
    if (!s && dumps->memory) bd_memory_plan_dump(p, &out->mem, stderr);
    return s;
}

void bd_planned_free(bd_planned *pl) {
    bd_memory_plan_free(&pl->mem);
    bd_schedule_free(&pl->sched);
    bd_deps_free(&pl->deps);
    bd_program_free(&pl->prog);
}

void bd_print_unsupported(void *ctx, const bd_node *n, const bd_value *v, const char *why) {
    (void)ctx;
    if (n) fprintf(stderr, "bdc: node '%s' (%s): %s\n", bd_quote(n->name), bd_quote(n->op_type), why);
    else fprintf(stderr, "bdc: value '%s': %s\n", bd_quote(v->name), why);
}
