/* inspect.c — `bdc inspect`: what a model is, as bdc sees it after inference and folding.
 *
 * Prints producer, IR version, opsets, inputs/outputs with dtypes and shapes, the inputs' symbolic
 * dimensions (bound by --dim/--shape or not), an op histogram, parameter count and bytes, an
 * estimate of FLOPs, and every node or input bdc cannot compile (exit 3 when there is any, after
 * listing them all). The same facts go out as JSON with --json, for tests and
 * tooling. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/inspect.h"
#include "front/passes.h"
#include "nest/loopnest.h"

typedef struct op_count {
    const char *op;
    int count;
} op_count;

typedef struct summary {
    int nodes_in_file, nodes_live;
    int64_t params, param_bytes;
    double flops;
    bool all_static;
    bd_vec ops;         /* op_count, first-seen order */
    bd_vec unsupported; /* unsupported_row */
} summary;

typedef struct unsupported_row {
    const char *node, *op, *domain, *value, *reason;
} unsupported_row;

static void collect_unsupported(void *ctx, const bd_node *n, const bd_value *v, const char *reason) {
    summary *s = ctx;
    unsupported_row *r = bd_vec_push(&s->unsupported);
    r->node = n ? n->name : NULL;
    r->op = n ? n->op_type : NULL;
    r->domain = n ? n->domain : NULL;
    r->value = v ? v->name : NULL;
    r->reason = strdup(reason);
}

static double numel_or_zero(const bd_value *v) {
    int64_t n;
    if (!v || !bd_value_shape_known(v) || !bd_dims_numel(v->rank, v->dims, &n)) return 0;
    return (double)n;
}

/* Multiply-adds count two FLOPs; elementwise work counts one per output element. */
static double node_flops(bd_graph *g, const bd_node *n) {
    const bd_value *out = bd_node_out(g, n, 0);
    const bd_value *in0 = bd_node_in(g, n, 0), *in1 = bd_node_in(g, n, 1);
    switch (n->op) {
    case BD_OP_CONV:
    case BD_OP_CONV_TRANSPOSE: {
        if (!in1 || !bd_value_shape_known(in1)) return 0;
        double per_out = 1; /* weight elements feeding one output element */
        for (int i = 1; i < in1->rank; i++) per_out *= (double)in1->dims[i];
        if (n->op == BD_OP_CONV) return 2 * numel_or_zero(out) * per_out;
        return 2 * numel_or_zero(in0) * per_out; /* each input element scatters a kernel */
    }
    case BD_OP_GEMM:
    case BD_OP_MATMUL: {
        if (!in0 || !bd_value_shape_known(in0) || in0->rank < 1) return 0;
        int64_t k = in0->dims[in0->rank - 1];
        if (n->op == BD_OP_GEMM && bd_attr_int(n, "transA", 0) && in0->rank == 2) k = in0->dims[0];
        return 2 * numel_or_zero(out) * (double)k;
    }
    case BD_OP_LSTM: {
        const bd_value *w = in1, *r = bd_node_in(g, n, 2);
        if (!in0 || !w || !r || !bd_value_shape_known(in0) || !bd_value_shape_known(w) || in0->rank != 3)
            return 0;
        double steps = (double)in0->dims[0] * (double)in0->dims[1];
        return 2 * steps * (numel_or_zero(w) + numel_or_zero(r));
    }
    case BD_OP_SHAPE:
    case BD_OP_CONSTANT:
    case BD_OP_RESHAPE:
    case BD_OP_FLATTEN:
    case BD_OP_SQUEEZE:
    case BD_OP_UNSQUEEZE:
    case BD_OP_IDENTITY: return 0;
    default: return numel_or_zero(out);
    }
}

static void summarise(bd_model *m, summary *s) {
    bd_graph *g = m->graph;
    memset(s, 0, sizeof *s);
    s->ops = BD_VEC(op_count);
    s->unsupported = BD_VEC(unsupported_row);
    s->nodes_in_file = (int)g->nodes.len;
    s->all_static = true;
    for (size_t i = 0; i < g->values.len; i++) {
        const bd_value *v = bd_graph_value(g, (int)i);
        if (v->flags & BD_VALUE_INITIALIZER) {
            s->params += v->constant->numel;
            s->param_bytes += v->constant->nbytes;
        }
        if (v->n_uses + ((v->flags & BD_VALUE_OUTPUT) != 0) > 0 && !bd_value_shape_known(v))
            s->all_static = false;
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        s->nodes_live++;
        s->flops += node_flops(g, n);
        for (int k = 0; k < n->n_outputs; k++) {
            const bd_value *v = bd_node_out(g, n, k);
            if (v && !bd_value_shape_known(v)) s->all_static = false;
        }
        op_count *c = NULL;
        for (size_t k = 0; k < s->ops.len && !c; k++)
            if (strcmp(BD_VEC_AT(&s->ops, op_count, k).op, n->op_type) == 0) c = &BD_VEC_AT(&s->ops, op_count, k);
        if (!c) {
            c = bd_vec_push(&s->ops);
            c->op = n->op_type;
        }
        c->count++;
    }
    bd_support_check(g, collect_unsupported, s);
}

static void summary_free(summary *s) {
    for (size_t i = 0; i < s->unsupported.len; i++) free((char *)BD_VEC_AT(&s->unsupported, unsupported_row, i).reason);
    bd_vec_free(&s->ops);
    bd_vec_free(&s->unsupported);
}

/* Calls fn for every symbolic dim of the graph inputs (as the file declares them) whose symbol
 * has not appeared at an earlier input dim; *bound is its extent after the command line's
 * bindings, -1 while unbound. */
typedef void (*symbol_fn)(void *ctx, bd_graph *g, const char *symbol, int64_t bound);

static void for_each_symbol(bd_graph *g, symbol_fn fn, void *ctx) {
    for (size_t k = 0; k < g->inputs.len; k++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k));
        for (int i = 0; i < v->decl_rank; i++) {
            if (v->decl_dims[i] >= 0 || !v->dim_param[i]) continue;
            bool seen = false;
            for (size_t k2 = 0; k2 <= k && !seen; k2++) {
                const bd_value *w = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k2));
                for (int i2 = 0; i2 < (k2 == k ? i : w->decl_rank) && !seen; i2++)
                    seen = w->decl_dims[i2] < 0 && w->dim_param[i2] &&
                           strcmp(w->dim_param[i2], v->dim_param[i]) == 0;
            }
            if (!seen) fn(ctx, g, v->dim_param[i], v->dims[i]);
        }
    }
}

/* Where a symbol occurs: "x dim 0, mask dim 1". */
static const char *symbol_uses(bd_graph *g, const char *symbol, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    for (size_t k = 0; k < g->inputs.len; k++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k));
        for (int i = 0; i < v->decl_rank && o + 1 < len; i++)
            if (v->decl_dims[i] < 0 && v->dim_param[i] && strcmp(v->dim_param[i], symbol) == 0)
                o += (size_t)snprintf(buf + o, len - o, "%s%s dim %d", o ? ", " : "",
                                      bd_quote(v->name), i);
    }
    return buf;
}

/* ---------------------------------------------------------------- JSON */

static void json_symbol(void *ctx, bd_graph *g, const char *symbol, int64_t bound) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", symbol);
    if (bound >= 0) cJSON_AddNumberToObject(o, "value", (double)bound);
    else cJSON_AddNullToObject(o, "value");
    if (g->batch_max && strcmp(g->batch_symbol, symbol) == 0) { /* --dim SYMBOL=LO..HI */
        cJSON *range = cJSON_AddArrayToObject(o, "range");
        cJSON_AddItemToArray(range, cJSON_CreateNumber((double)g->batch_min));
        cJSON_AddItemToArray(range, cJSON_CreateNumber((double)g->batch_max));
    }
    cJSON *uses = cJSON_AddArrayToObject(o, "inputs");
    for (size_t k = 0; k < g->inputs.len; k++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k));
        for (int i = 0; i < v->decl_rank; i++) {
            if (v->decl_dims[i] >= 0 || !v->dim_param[i] || strcmp(v->dim_param[i], symbol) != 0)
                continue;
            cJSON *u = cJSON_CreateObject();
            cJSON_AddStringToObject(u, "input", v->name);
            cJSON_AddNumberToObject(u, "dim", i);
            cJSON_AddItemToArray(uses, u);
        }
    }
    cJSON_AddItemToArray(ctx, o);
}

static cJSON *json_value(const bd_value *v) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v->name);
    if (v->dtype) cJSON_AddStringToObject(o, "dtype", bd_dtype_name(v->dtype));
    else cJSON_AddNullToObject(o, "dtype");
    if (v->rank < 0) {
        cJSON_AddNullToObject(o, "shape");
    } else {
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (int i = 0; i < v->rank; i++) {
            if (v->dims[i] >= 0) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)v->dims[i]));
            else if (v->dim_param[i]) cJSON_AddItemToArray(shape, cJSON_CreateString(v->dim_param[i]));
            else cJSON_AddItemToArray(shape, cJSON_CreateNull());
        }
    }
    cJSON_AddBoolToObject(o, "constant", v->constant != NULL);
    return o;
}

static cJSON *json_values(bd_graph *g, const bd_vec *idx) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < idx->len; i++) cJSON_AddItemToArray(a, json_value(bd_graph_value(g, BD_VEC_AT(idx, int, i))));
    return a;
}

static char *inspect_json(bd_model *m, const summary *s) {
    bd_graph *g = m->graph;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", m->path);
    cJSON *prod = cJSON_AddObjectToObject(root, "producer");
    cJSON_AddStringToObject(prod, "name", m->producer_name);
    cJSON_AddStringToObject(prod, "version", m->producer_version);
    cJSON_AddNumberToObject(root, "ir_version", (double)m->ir_version);
    cJSON *opsets = cJSON_AddArrayToObject(root, "opsets");
    for (int i = 0; i < m->n_opsets; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "domain", m->opsets[i].domain);
        cJSON_AddNumberToObject(o, "version", (double)m->opsets[i].version);
        cJSON_AddItemToArray(opsets, o);
    }
    cJSON_AddItemToObject(root, "inputs", json_values(g, &g->inputs));
    cJSON_AddItemToObject(root, "outputs", json_values(g, &g->outputs));
    for_each_symbol(g, json_symbol, cJSON_AddArrayToObject(root, "symbols"));
    cJSON *values = cJSON_AddArrayToObject(root, "values");
    for (size_t i = 0; i < g->values.len; i++) cJSON_AddItemToArray(values, json_value(bd_graph_value(g, (int)i)));
    cJSON *hist = cJSON_AddObjectToObject(root, "op_histogram");
    for (size_t i = 0; i < s->ops.len; i++) {
        const op_count *c = &BD_VEC_AT(&s->ops, op_count, i);
        cJSON_AddNumberToObject(hist, c->op, c->count);
    }
    cJSON_AddNumberToObject(root, "node_count", s->nodes_live);
    cJSON_AddNumberToObject(root, "original_node_count", s->nodes_in_file);
    cJSON_AddNumberToObject(root, "parameters", (double)s->params);
    cJSON_AddNumberToObject(root, "parameter_bytes", (double)s->param_bytes);
    cJSON_AddNumberToObject(root, "flops", s->flops);
    cJSON_AddBoolToObject(root, "all_shapes_static", s->all_static);
    cJSON *uns = cJSON_AddArrayToObject(root, "unsupported");
    for (size_t i = 0; i < s->unsupported.len; i++) {
        const unsupported_row *r = &BD_VEC_AT(&s->unsupported, unsupported_row, i);
        cJSON *o = cJSON_CreateObject();
        if (r->node) {
            cJSON_AddStringToObject(o, "node", r->node);
            cJSON_AddStringToObject(o, "op", r->op);
            cJSON_AddStringToObject(o, "domain", r->domain);
        } else {
            cJSON_AddStringToObject(o, "value", r->value);
        }
        cJSON_AddStringToObject(o, "reason", r->reason);
        cJSON_AddItemToArray(uns, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* ---------------------------------------------------------------- text */

static void print_values(bd_graph *g, const char *title, const bd_vec *idx) {
    printf("%s\n", title);
    for (size_t i = 0; i < idx->len; i++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(idx, int, i));
        char shape[512];
        printf("  %-24s %-8s %s\n", bd_quote(v->name), v->dtype ? bd_dtype_name(v->dtype) : "?",
               bd_shape_str(v, shape, sizeof shape));
    }
}

static void print_human(double x, const char *unit) {
    const char *prefix[] = {"", "K", "M", "G", "T", "P"};
    int p = 0;
    while (x >= 1000 && p < 5) x /= 1000, p++;
    printf(p ? "%.2f %s%s\n" : "%.0f %s%s\n", x, prefix[p], unit);
}

static void text_symbol(void *ctx, bd_graph *g, const char *symbol, int64_t bound) {
    char uses[512];
    int *count = ctx;
    if (!(*count)++) printf("symbols\n");
    symbol_uses(g, symbol, uses, sizeof uses);
    if (bound >= 0 && g->batch_max && strcmp(g->batch_symbol, symbol) == 0)
        printf("  %-24s = %lld..%lld, shapes shown at %lld (%s)\n", bd_quote(symbol),
               (long long)g->batch_min, (long long)g->batch_max, (long long)bound, uses);
    else if (bound >= 0) printf("  %-24s = %lld (%s)\n", bd_quote(symbol), (long long)bound, uses);
    else printf("  %-24s unbound (%s): pin it with --dim or --shape\n", bd_quote(symbol), uses);
}

static void inspect_text(bd_model *m, const summary *s) {
    bd_graph *g = m->graph;
    printf("model        %s\n", bd_quote(m->path));
    printf("producer     %s %s\n", m->producer_name[0] ? bd_quote(m->producer_name) : "(none)",
           bd_quote(m->producer_version));
    printf("ir_version   %lld\n", (long long)m->ir_version);
    printf("opsets      ");
    for (int i = 0; i < m->n_opsets; i++)
        printf(" %s %lld", m->opsets[i].domain[0] ? bd_quote(m->opsets[i].domain) : "ai.onnx",
               (long long)m->opsets[i].version);
    printf("\n");
    print_values(g, "inputs", &g->inputs);
    print_values(g, "outputs", &g->outputs);
    int symbols = 0;
    for_each_symbol(g, text_symbol, &symbols);
    printf("nodes        %d (%d in the file; the rest folded or removed)\n", s->nodes_live,
           s->nodes_in_file);
    printf("ops         ");
    for (size_t i = 0; i < s->ops.len; i++) {
        const op_count *c = &BD_VEC_AT(&s->ops, op_count, i);
        printf(" %s%s %d", i ? "," : "", bd_quote(c->op), c->count);
    }
    printf("\nparameters   %lld (", (long long)s->params);
    double b = (double)s->param_bytes;
    if (b >= 1 << 20) printf("%.1f MiB)\n", b / (1 << 20));
    else printf("%lld bytes)\n", (long long)s->param_bytes);
    printf("flops        ");
    print_human(s->flops, "FLOP");
    printf("static       %s\n", s->all_static ? "yes, every shape is known" : "no, some shapes depend on inputs");
    if (!s->unsupported.len) {
        printf("unsupported  none\n");
        return;
    }
    printf("unsupported  %zu\n", s->unsupported.len);
    for (size_t i = 0; i < s->unsupported.len; i++) {
        const unsupported_row *r = &BD_VEC_AT(&s->unsupported, unsupported_row, i);
        if (r->node) printf("  node '%s' (%s): %s\n", bd_quote(r->node), bd_quote(r->op), r->reason);
        else printf("  value '%s': %s\n", bd_quote(r->value), r->reason);
    }
}

bd_status bd_inspect(const char *path, bool json, const bd_input_binds *binds, bd_diag *d) {
    bd_model *m;
    bd_status st = bd_compile_front(path, NULL, binds, false, &m, d);
    if (st) return st;
    summary s;
    summarise(m, &s);
    if (json) {
        char *text = inspect_json(m, &s);
        if (!text) st = bd_fail(d, BD_ERR_IO, "out of memory writing JSON");
        else printf("%s\n", text);
        free(text);
    } else {
        inspect_text(m, &s);
    }
    if (!st && s.unsupported.len)
        st = bd_fail(d, BD_ERR_UNSUPPORTED, "%zu node(s) or value(s) are not supported (listed above)",
                     s.unsupported.len);
    summary_free(&s);
    bd_model_free(m);
    return st;
}
