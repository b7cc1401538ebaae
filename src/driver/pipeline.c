/* pipeline.c — the compiler as plain lists of calls. The front half: load, bind the inputs the
 * command line pins, verify, infer and fold, simplify. The back half, over the nest program:
 * lower, tile (the target's choice), fuse, schedule, plan memory, each followed by its verifier
 * and, when asked, its dump. What follows (the target's printer and the native build) reads only
 * the planned program (driver/compile.c). */
#include <string.h>

#include "driver/pipeline.h"
#include "fuse/fuse.h"

bd_status bd_front_passes(bd_model *m, bd_diag *d) {
    bd_status s = bd_verify(m, d);
    if (!s) s = bd_infer_graph(m->graph, d);
    if (s) return s;
    bd_remove_identities(m->graph);
    bd_dead_code(m->graph);
    return BD_OK;
}

bd_status bd_compile_front(const char *path, const bd_limits *lim, const bd_input_binds *binds,
                           bd_model **out, bd_diag *d) {
    bd_model *m;
    bd_status s = bd_onnx_load(path, lim, &m, d);
    if (!s) s = bd_bind_inputs(m, binds, d);
    if (!s) s = bd_front_passes(m, d);
    if (s) {
        if (m) bd_model_free(m);
        return s;
    }
    *out = m;
    return BD_OK;
}

bd_status bd_plan_program(bd_graph *g, const bd_target *t, bd_fusion fusion,
                          int64_t max_activation_bytes, const bd_dumps *dumps, bd_planned *out,
                          bd_diag *d) {
    memset(out, 0, sizeof *out);
    bd_program *p = &out->prog;
    p->fusion = fusion;
    bd_status s = bd_lower(g, p, d); /* verifies */
    if (!s && dumps->lower) bd_program_dump(p, stderr);
    if (!s) s = t->tile(p, d); /* verifies */
    if (!s) s = bd_fuse(p, d); /* verifies */
    if (!s && dumps->tiles) bd_program_dump(p, stderr);
    if (!s) s = bd_schedule_program(p, &out->sched, d);
    if (!s) s = bd_schedule_verify(p, &out->sched, d);
    if (!s && dumps->sched) bd_schedule_dump(p, &out->sched, stderr);
    if (!s) s = bd_plan_memory(p, &out->sched, max_activation_bytes, &out->mem, d);
    if (!s) s = bd_memory_plan_verify(p, &out->sched, &out->mem, d);
    if (!s && dumps->memory) bd_memory_plan_dump(p, &out->mem, stderr);
    return s;
}

void bd_planned_free(bd_planned *pl) {
    bd_memory_plan_free(&pl->mem);
    bd_schedule_free(&pl->sched);
    bd_program_free(&pl->prog);
}
