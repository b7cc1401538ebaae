/* analyze.c — `bdc analyze`: what the block-dependency analysis found, and what fusion and the two
 * schedules made of it. The model goes through the compiler's own passes (pipeline.c) up to the
 * memory plan, once per schedule; nothing is built.
 *
 * Reported: every edge with its class and counts; the totals at element, block and operator
 * granularity; the fusion decisions (each candidate, fused or not, and why); the independent
 * branches (nests at the same depth of the nest DAG, which no path orders); the critical path in
 * blocks against the total, i.e. the parallelism there is; and the arena each schedule needs.
 * As text (stdout), JSON (cJSON) and DOT (nests as boxes, edges labelled by class). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "build/toolchain.h"
#include "driver/analyze.h"
#include "driver/compile.h"

static const char *nest_label(const bd_program *p, int i, char *buf, size_t len) {
    const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
    if (n->node < 0) {
        snprintf(buf, len, "nest %d", i);
    } else {
        const bd_node *node = bd_graph_node(p->graph, n->node);
        snprintf(buf, len, "nest %d %s '%s'", i, node->op_type, bd_quote(node->name));
    }
    return buf;
}

static const char *node_name(const bd_graph *g, int node) {
    return node >= 0 ? bd_graph_node((bd_graph *)g, node)->name : "-";
}

/* Depth of each nest in the nest DAG (0: reads only inputs and constants); nests of one depth
 * are independent of each other. */
static int *nest_depths(const bd_program *p, const bd_deps *deps, int *max_depth) {
    size_t nn = p->nests.len;
    int *depth = calloc(nn + 1, sizeof *depth);
    BD_ASSERT(depth);
    *max_depth = 0;
    for (size_t c = 0; c < nn; c++) {
        for (int ei = deps->edge_start[c]; ei < deps->edge_start[c + 1]; ei++) {
            int pr = BD_VEC_AT(&deps->edges, bd_dep_edge, ei).producer;
            if (depth[pr] + 1 > depth[c]) depth[c] = depth[pr] + 1;
        }
        if (depth[c] > *max_depth) *max_depth = depth[c];
    }
    return depth;
}

static cJSON *report_json(const bd_planned *pl, const int64_t *arena, const char *model) {
    const bd_program *p = &pl->prog;
    const bd_deps *deps = &pl->deps;
    bd_graph *g = p->graph;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model);
    cJSON *nests = cJSON_AddArrayToObject(o, "nests");
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "index", (double)i);
        cJSON_AddStringToObject(x, "node", node_name(g, n->node));
        cJSON_AddStringToObject(x, "op", n->node >= 0 ? bd_graph_node(g, n->node)->op_type : "");
        cJSON_AddNumberToObject(x, "blocks", (double)n->n_blocks);
        cJSON_AddItemToArray(nests, x);
    }
    cJSON *edges = cJSON_AddArrayToObject(o, "edges");
    for (size_t i = 0; i < deps->edges.len; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, i);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "producer", e->producer);
        cJSON_AddNumberToObject(x, "consumer", e->consumer);
        cJSON_AddStringToObject(x, "value", bd_graph_value(g, e->value)->name);
        cJSON_AddStringToObject(x, "class", bd_dep_class_name(e->cls));
        if (e->cls == BD_DEP_LOCAL) cJSON_AddNumberToObject(x, "halo_blocks", (double)e->halo);
        cJSON_AddNumberToObject(x, "block_edges", (double)e->block_edges);
        cJSON_AddNumberToObject(x, "element_pairs", (double)e->element_pairs);
        cJSON_AddItemToArray(edges, x);
    }
    cJSON *t = cJSON_AddObjectToObject(o, "totals");
    cJSON_AddNumberToObject(t, "operator_edges", (double)deps->op_edges);
    cJSON_AddNumberToObject(t, "block_edges", (double)deps->block_edges);
    cJSON_AddNumberToObject(t, "element_pairs", (double)deps->element_pairs);
    for (int c = 0; c < BD_DEP_CLASS_COUNT; c++)
        cJSON_AddNumberToObject(t, bd_dep_class_name((bd_dep_class)c),
                                (double)deps->class_edges[c]);
    cJSON_AddNumberToObject(t, "blocks", (double)deps->total_blocks);
    cJSON_AddNumberToObject(t, "critical_path_blocks", (double)deps->critical_blocks);
    cJSON_AddNumberToObject(t, "parallelism", deps->critical_blocks ? (double)deps->total_blocks /
                                                                          (double)deps->critical_blocks
                                                                    : 0.0);
    cJSON *f = cJSON_AddArrayToObject(o, "fusion");
    for (size_t i = 0; i < p->fusion_notes.len; i++) {
        const bd_fusion_note *n = &BD_VEC_AT(&p->fusion_notes, bd_fusion_note, i);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "node", node_name(g, n->absorbed_node));
        cJSON_AddStringToObject(x, "into", node_name(g, n->into_node));
        cJSON_AddBoolToObject(x, "fused", n->fused);
        cJSON_AddStringToObject(x, "why", n->why);
        cJSON_AddItemToArray(f, x);
    }
    int max_depth, *depth = nest_depths(p, deps, &max_depth);
    cJSON *levels = cJSON_AddArrayToObject(o, "independent_nests_by_depth");
    for (int lv = 0; lv <= max_depth && p->nests.len; lv++) {
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < p->nests.len; i++)
            if (depth[i] == lv) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)i));
        cJSON_AddItemToArray(levels, a);
    }
    free(depth);
    cJSON *a = cJSON_AddObjectToObject(o, "arena_bytes");
    cJSON_AddNumberToObject(a, "op", (double)arena[BD_SCHEDULE_OP]);
    cJSON_AddNumberToObject(a, "block", (double)arena[BD_SCHEDULE_BLOCK]);
    cJSON *s = cJSON_AddObjectToObject(o, "block_schedule");
    cJSON_AddNumberToObject(s, "tasks", pl->sched.n_tasks);
    cJSON_AddNumberToObject(s, "edges", pl->sched.n_edges);
    return o;
}

static void report_text(const bd_planned *pl, const int64_t *arena, FILE *f) {
    const bd_program *p = &pl->prog;
    const bd_deps *deps = &pl->deps;
    bd_graph *g = p->graph;
    char a[256], b[256];
    fprintf(f, "edges (producer -> consumer: class, block edges, element pairs)\n");
    for (size_t i = 0; i < deps->edges.len; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, i);
        fprintf(f, "  %s -> %s via '%s': %s", nest_label(p, e->producer, a, sizeof a),
                nest_label(p, e->consumer, b, sizeof b),
                bd_quote(bd_graph_value(g, e->value)->name), bd_dep_class_name(e->cls));
        if (e->cls == BD_DEP_LOCAL) fprintf(f, " (halo %lld blocks)", (long long)e->halo);
        fprintf(f, ", %lld of %lld x %lld, %lld\n", (long long)e->block_edges,
                (long long)e->consumer_blocks,
                (long long)BD_VEC_AT(&p->nests, bd_nest, e->producer).n_blocks,
                (long long)e->element_pairs);
    }
    fprintf(f, "totals\n");
    fprintf(f, "  operator edges  %lld\n  block edges     %lld\n  element pairs   %lld\n",
            (long long)deps->op_edges, (long long)deps->block_edges,
            (long long)deps->element_pairs);
    fprintf(f, "  classes         %lld IDENTITY, %lld LOCAL, %lld PANEL, %lld ALL\n",
            (long long)deps->class_edges[BD_DEP_IDENTITY], (long long)deps->class_edges[BD_DEP_LOCAL],
            (long long)deps->class_edges[BD_DEP_PANEL], (long long)deps->class_edges[BD_DEP_ALL]);
    fprintf(f, "  blocks          %lld in %zu nests; critical path %lld blocks; parallelism %.2f\n",
            (long long)deps->total_blocks, p->nests.len, (long long)deps->critical_blocks,
            deps->critical_blocks ? (double)deps->total_blocks / (double)deps->critical_blocks : 0.0);
    fprintf(f, "fusion (%s)\n", p->fusion == BD_FUSION_NONE  ? "none"
                                : p->fusion == BD_FUSION_OP ? "op"
                                                            : "block");
    if (!p->fusion_notes.len) fprintf(f, "  no candidates\n");
    for (size_t i = 0; i < p->fusion_notes.len; i++) {
        const bd_fusion_note *n = &BD_VEC_AT(&p->fusion_notes, bd_fusion_note, i);
        fprintf(f, "  %-9s '%s' into '%s': %s\n", n->fused ? "fused" : "not fused",
                bd_quote(node_name(g, n->absorbed_node)), bd_quote(node_name(g, n->into_node)),
                n->why);
    }
    int max_depth, *depth = nest_depths(p, deps, &max_depth);
    int widest = 0, branchy = 0;
    for (int lv = 0; lv <= max_depth && p->nests.len; lv++) {
        int w = 0;
        for (size_t i = 0; i < p->nests.len; i++) w += depth[i] == lv;
        if (w > widest) widest = w;
        branchy += w > 1;
    }
    fprintf(f, "independent branches: %d of %d depths of the nest DAG hold several nests (at most %d)\n",
            branchy, max_depth + 1, widest);
    for (int lv = 0, shown = 0; lv <= max_depth && shown < 8; lv++) {
        int w = 0;
        for (size_t i = 0; i < p->nests.len; i++) w += depth[i] == lv;
        if (w < 2) continue;
        shown++;
        fprintf(f, "  depth %d:", lv);
        for (size_t i = 0, k = 0; i < p->nests.len && k < 6; i++)
            if (depth[i] == lv) fprintf(f, "%s %s", k++ ? "," : "", nest_label(p, (int)i, a, sizeof a));
        fprintf(f, "%s\n", w > 6 ? ", ..." : "");
    }
    free(depth);
    fprintf(f, "schedules\n  op     arena %lld bytes, a barrier after each of %zu nests\n",
            (long long)arena[BD_SCHEDULE_OP], p->nests.len);
    fprintf(f, "  block  arena %lld bytes, %d tasks, %d edges\n", (long long)arena[BD_SCHEDULE_BLOCK],
            pl->sched.n_tasks, pl->sched.n_edges);
}

static char *report_dot(const bd_planned *pl) {
    const bd_program *p = &pl->prog;
    const bd_deps *deps = &pl->deps;
    bd_vec t = BD_VEC(char);
    char line[640], a[256];
#define OUT(...)                                                                                   \
    do {                                                                                           \
        int n_ = snprintf(line, sizeof line, __VA_ARGS__);                                         \
        for (int i_ = 0; i_ < n_ && i_ < (int)sizeof line - 1; i_++)                               \
            *(char *)bd_vec_push(&t) = line[i_];                                                   \
    } while (0)
    static const char *const colour[BD_DEP_CLASS_COUNT] = {"darkgreen", "blue", "orange", "red"};
    OUT("digraph bdc {\n  node [shape=box, fontname=\"monospace\"];\n");
    for (size_t i = 0; i < p->nests.len; i++) {
        nest_label(p, (int)i, a, sizeof a);
        for (char *c = a; *c; c++) /* keep the label a valid DOT string */
            if (*c == '"' || *c == '\\') *c = '_';
        OUT("  n%zu [label=\"%s\\n%lld blocks\"];\n", i, a,
            (long long)BD_VEC_AT(&p->nests, bd_nest, i).n_blocks);
    }
    for (size_t i = 0; i < deps->edges.len; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, i);
        OUT("  n%d -> n%d [label=\"%s %lld\", color=%s];\n", e->producer, e->consumer,
            bd_dep_class_name(e->cls), (long long)e->block_edges, colour[e->cls]);
    }
    OUT("}\n");
#undef OUT
    *(char *)bd_vec_push(&t) = 0;
    return t.data;
}

static bd_status write_out(const char *path, const char *text, bd_diag *d) {
    if (!strcmp(path, "-")) {
        fputs(text, stdout);
        return BD_OK;
    }
    return bd_write_file(path, text, strlen(text), d);
}

bd_status bd_analyze(const bd_analyze_opts *o, bd_diag *d) {
    bd_model *m = NULL;
    const bd_target *t = o->target ? o->target : bd_targets[0];
    const bd_fusion fusion = bd_fusion_for(t, o->fusion_given, o->fusion);
    bd_status s = bd_compile_front(o->model, NULL, o->binds, bd_qdq_int8(BD_QDQ_AUTO, t, NULL), &m, d);
    if (!s && bd_support_check(m->graph, bd_print_unsupported, NULL))
        s = bd_fail(d, BD_ERR_UNSUPPORTED, "the model uses ops, opsets, dtypes or attribute "
                    "values bdc cannot compile yet (listed above)");
    int64_t arena[2] = {0, 0};
    bd_planned pl = {0};
    bd_dumps none = {0};
    /* the operator schedule first, for its arena; then the block schedule, which is reported */
    if (!s) {
        bd_plan_opts po = {fusion, BD_SCHEDULE_OP, 0, true, bd_tile_threads_default(NULL),
                           bd_i8_direct_default(t, NULL), false, bd_fma_half_default(t, NULL)};
        s = bd_plan_program(m->graph, t, &po, &none, &pl, d);
        arena[BD_SCHEDULE_OP] = pl.mem.arena_bytes;
        bd_planned_free(&pl);
    }
    if (!s) {
        bd_plan_opts po = {fusion, BD_SCHEDULE_BLOCK, 0, true, bd_tile_threads_default(NULL),
                           bd_i8_direct_default(t, NULL), false, bd_fma_half_default(t, NULL)};
        s = bd_plan_program(m->graph, t, &po, &none, &pl, d);
        arena[BD_SCHEDULE_BLOCK] = pl.mem.arena_bytes;
    }
    if (!s && (!o->json || strcmp(o->json, "-"))) report_text(&pl, arena, stdout);
    if (!s && o->json) {
        cJSON *j = report_json(&pl, arena, o->model);
        char *text = j ? cJSON_Print(j) : NULL;
        cJSON_Delete(j);
        if (!text) s = bd_fail(d, BD_ERR_IO, "out of memory writing JSON");
        size_t len = text ? strlen(text) : 0;
        char *with_nl = text ? malloc(len + 2) : NULL;
        if (with_nl) {
            memcpy(with_nl, text, len);
            memcpy(with_nl + len, "\n", 2);
        }
        if (!s && !with_nl) s = bd_fail(d, BD_ERR_IO, "out of memory writing JSON");
        if (!s) s = write_out(o->json, with_nl, d);
        free(with_nl);
        free(text);
    }
    if (!s && o->dot) {
        char *text = report_dot(&pl);
        s = write_out(o->dot, text, d);
        free(text);
    }
    bd_planned_free(&pl);
    if (m) bd_model_free(m);
    return s;
}
