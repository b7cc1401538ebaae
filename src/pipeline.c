/* pipeline.c — the compiler's front half as a plain list of calls: load, verify, infer and fold,
 * simplify. Everything after it (lowering, analysis, emission) starts from the graph it returns. */
#include "passes.h"

bd_status bd_front_passes(bd_model *m, bd_diag *d) {
    bd_status s = bd_verify(m, d);
    if (!s) s = bd_infer_graph(m->graph, d);
    if (s) return s;
    bd_remove_identities(m->graph);
    bd_dead_code(m->graph);
    return BD_OK;
}

bd_status bd_compile_front(const char *path, const bd_limits *lim, bd_model **out, bd_diag *d) {
    bd_model *m;
    bd_status s = bd_onnx_load(path, lim, &m, d);
    if (!s) s = bd_front_passes(m, d);
    if (s) {
        if (m) bd_model_free(m);
        return s;
    }
    *out = m;
    return BD_OK;
}
