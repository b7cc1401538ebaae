/* graph.c — construction of and queries over the graph IR (graph.h), and the op table lookup. */
#include "front/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/passes.h"

static const bd_op_info op_rows[BD_OP_COUNT] = {
    [BD_OP_UNKNOWN] = {"<unknown>", 0, 0, 0, 0, 0, NULL, NULL},
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower)                                     \
    [BD_OP_##e] = {name, since, imin, imax, omin, omax, infer, fold},
    BD_OPS(X)
#undef X
};

const bd_op_info *bd_op_info_of(bd_op op) { return &op_rows[op]; }

bd_op bd_op_lookup(const char *domain, const char *op_type) {
    if (domain[0] && strcmp(domain, "ai.onnx") != 0) return BD_OP_UNKNOWN;
    for (int i = 1; i < BD_OP_COUNT; i++) /* (internal rows, since 0, are not ONNX's) */
        if (op_rows[i].since > 0 && strcmp(op_rows[i].name, op_type) == 0) return (bd_op)i;
    return BD_OP_UNKNOWN;
}

bd_graph *bd_graph_new(bd_model *m, bd_graph *parent, const char *name) {
    bd_graph *g = bd_arena_alloc(&m->arena, sizeof *g);
    if (!g) return NULL;
    g->model = m;
    g->parent = parent;
    g->depth = parent ? parent->depth + 1 : 0;
    g->name = name ? name : "";
    g->values = BD_VEC(bd_value);
    g->nodes = BD_VEC(bd_node);
    g->inputs = BD_VEC(int);
    g->outputs = BD_VEC(int);
    if (parent) *(bd_graph **)bd_vec_push(&m->subgraphs) = g;
    return g;
}

int bd_graph_add_value(bd_graph *g, const char *name) {
    bd_value *v = bd_vec_push(&g->values);
    v->name = name;
    v->rank = -1;
    v->producer = -1;
    int idx = (int)g->values.len - 1;
    if (name[0]) bd_map_put(&g->names, name, idx);
    return idx;
}

int bd_graph_find_value(const bd_graph *g, const char *name) { return bd_map_get(&g->names, name); }

bool bd_node_has_subgraph(const bd_node *n) {
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].type == BD_ATTR_GRAPH || n->attrs[a].type == BD_ATTR_GRAPHS) return true;
    return false;
}

bool bd_graph_has_subgraphs(const bd_graph *g) {
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = &BD_VEC_AT(&g->nodes, bd_node, i);
        if (!n->dead && bd_node_has_subgraph(n)) return true;
    }
    return false;
}

bool bd_graph_is_output(const bd_graph *g, int v) {
    if (BD_VEC_AT(&g->values, bd_value, v).flags & BD_VALUE_OUTPUT) return true;
    for (size_t i = 0; i < g->outputs.len; i++)
        if (BD_VEC_AT(&g->outputs, int, i) == v) return true;
    return false;
}

void bd_graph_count_uses(bd_graph *g) {
    for (size_t i = 0; i < g->values.len; i++) BD_VEC_AT(&g->values, bd_value, i).n_uses = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) bd_graph_value(g, n->inputs[k])->n_uses++;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        bd_graph_value(g, BD_VEC_AT(&g->outputs, int, i))->n_uses++;
}

static void graph_release(bd_graph *g) {
    bd_vec_free(&g->values);
    bd_vec_free(&g->nodes);
    bd_vec_free(&g->inputs);
    bd_vec_free(&g->outputs);
    bd_map_free(&g->names);
}

void bd_model_free(bd_model *m) {
    if (!m) return;
    for (size_t i = 0; i < m->subgraphs.len; i++) graph_release(BD_VEC_AT(&m->subgraphs, bd_graph *, i));
    bd_vec_free(&m->subgraphs);
    if (m->graph) graph_release(m->graph);
    bd_arena arena = m->arena;
    bd_arena_free(&arena); /* m itself lives in its arena */
}

bd_value *bd_node_in(bd_graph *g, const bd_node *n, int i) {
    return i < n->n_inputs ? bd_graph_value(g, n->inputs[i]) : NULL;
}

bd_value *bd_node_out(bd_graph *g, const bd_node *n, int i) {
    return i < n->n_outputs ? bd_graph_value(g, n->outputs[i]) : NULL;
}

const bd_attr *bd_node_attr(const bd_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t bd_attr_int(const bd_node *n, const char *name, int64_t dflt) {
    const bd_attr *a = bd_node_attr(n, name);
    return a && a->type == BD_ATTR_INT ? a->i : dflt;
}

float bd_attr_float(const bd_node *n, const char *name, float dflt) {
    const bd_attr *a = bd_node_attr(n, name);
    return a && a->type == BD_ATTR_FLOAT ? a->f : dflt;
}

const char *bd_attr_string(bd_graph *g, const bd_node *n, const char *name, const char *dflt) {
    const bd_attr *a = bd_node_attr(n, name);
    if (!a || a->type != BD_ATTR_STRING) return dflt;
    char *s = bd_arena_strndup(&g->model->arena, (const char *)a->s.data, a->s.len);
    return s ? s : dflt;
}

bd_status bd_node_fail(bd_diag *d, bd_status s, const bd_node *n, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bd_fail(d, s, "node '%s' (%s): %s", bd_quote(n->name), bd_quote(n->op_type), msg);
}

static int input_behind(bd_graph *g, int v, bool integer_only, bool *seen) {
    const bd_value *val = bd_graph_value(g, v);
    if (v < 0 || seen[v] || val->constant) return -1;
    seen[v] = true;
    if (val->flags & BD_VALUE_INPUT)
        return !integer_only || val->dtype == BD_DT_INT64 || val->dtype == BD_DT_INT32 ? v : -1;
    if (val->producer < 0) return -1;
    const bd_node *p = bd_graph_node(g, val->producer);
    for (int k = 0; k < p->n_inputs; k++) {
        int found = input_behind(g, p->inputs[k], integer_only, seen);
        if (found >= 0) return found;
    }
    return -1;
}

int bd_graph_input_behind(bd_graph *g, int v, bool integer_only) {
    bool *seen = calloc(g->values.len + 1, sizeof *seen);
    BD_ASSERT(seen);
    int found = input_behind(g, v, integer_only, seen);
    free(seen);
    return found;
}

const char *bd_not_const_reason(bd_graph *g, const bd_node *n, int k, const char *what,
                                char *buf, size_t len) {
    int from = k < n->n_inputs ? bd_graph_input_behind(g, n->inputs[k], false) : -1;
    if (from < 0) {
        snprintf(buf, len, "%s is not a compile-time constant", what);
        return buf;
    }
    char name[160];
    snprintf(name, sizeof name, "%s", bd_quote(bd_graph_value(g, from)->name));
    snprintf(buf, len, "%s is not a compile-time constant: it comes from graph input '%s', known "
             "only at run time; freeze it with --const %s=FILE (.npy or .pb)", what, name, name);
    return buf;
}

bd_status bd_fail_not_const(bd_diag *d, bd_graph *g, const bd_node *n, int k, const char *what) {
    char why[512];
    return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "%s",
                        bd_not_const_reason(g, n, k, what, why, sizeof why));
}

/* ---- tensors ---- */
void bd_dims_strides(int rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i] > 0 ? dims[i] : 1;
    }
}

bool bd_dims_numel(int rank, const int64_t *dims, int64_t *numel) {
    int64_t p = 1;
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0 || !bd_mul_i64(p, dims[i], &p)) return false;
    *numel = p;
    return true;
}

bool bd_dtype_nbytes(int dt, int64_t numel, int64_t *nbytes) {
    int bits = bd_dtype_bits(dt);
    if (dt == BD_DT_STRING) bits = 0;
    if (bits > 0 && bits < 8) { /* packed sub-byte types, low bits first */
        int per_byte = 8 / bits;
        *nbytes = numel / per_byte + (numel % per_byte != 0);
        return true;
    }
    return bd_mul_i64(numel, bits / 8, nbytes);
}

bd_tensor *bd_tensor_new(bd_arena *a, int dtype, int rank, const int64_t *dims) {
    int64_t numel, nbytes;
    if (rank < 0 || rank > BD_MAX_RANK || !bd_dims_numel(rank, dims, &numel) ||
        !bd_dtype_nbytes(dtype, numel, &nbytes))
        return NULL;
    bd_tensor *t = bd_arena_alloc(a, sizeof *t);
    if (!t) return NULL;
    t->dtype = dtype;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->numel = numel;
    t->nbytes = nbytes;
    if (dtype == BD_DT_STRING) {
        t->strings = bd_arena_array(a, (size_t)numel, sizeof *t->strings);
        if (numel && !t->strings) return NULL;
    } else if (nbytes) {
        t->data = bd_arena_alloc(a, (size_t)nbytes);
        if (!t->data) return NULL;
    }
    return t;
}

int64_t bd_tensor_get_i64(const bd_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case BD_DT_INT64: return ((const int64_t *)p)[i];
    case BD_DT_INT32: return ((const int32_t *)p)[i];
    case BD_DT_INT16: return ((const int16_t *)p)[i];
    case BD_DT_INT8: return ((const int8_t *)p)[i];
    case BD_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
    case BD_DT_UINT32: return ((const uint32_t *)p)[i];
    case BD_DT_UINT16: return ((const uint16_t *)p)[i];
    case BD_DT_UINT8:
    case BD_DT_BOOL: return ((const uint8_t *)p)[i];
    case BD_DT_FLOAT:
    case BD_DT_DOUBLE: {
        double x = bd_tensor_get_f64(t, i);
        if (isnan(x)) return 0;
        if (x >= 9.2e18) return INT64_MAX;
        if (x <= -9.2e18) return INT64_MIN;
        return (int64_t)x;
    }
    default: return 0;
    }
}

double bd_tensor_get_f64(const bd_tensor *t, int64_t i) {
    switch (t->dtype) {
    case BD_DT_FLOAT: return ((const float *)t->data)[i];
    case BD_DT_DOUBLE: return ((const double *)t->data)[i];
    case BD_DT_UINT64: return (double)((const uint64_t *)t->data)[i];
    default: return (double)bd_tensor_get_i64(t, i);
    }
}

void bd_tensor_set_i64(bd_tensor *t, int64_t i, int64_t v) {
    void *p = t->data;
    switch (t->dtype) {
    case BD_DT_INT64: ((int64_t *)p)[i] = v; break;
    case BD_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case BD_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case BD_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case BD_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case BD_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case BD_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case BD_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case BD_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case BD_DT_FLOAT: ((float *)p)[i] = (float)v; break;
    case BD_DT_DOUBLE: ((double *)p)[i] = (double)v; break;
    default: break;
    }
}

void bd_tensor_set_f64(bd_tensor *t, int64_t i, double v) {
    switch (t->dtype) {
    case BD_DT_FLOAT: ((float *)t->data)[i] = (float)v; break;
    case BD_DT_DOUBLE: ((double *)t->data)[i] = v; break;
    case BD_DT_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    default: {
        /* Float to integer as C casts do, but without undefined behaviour out of range. */
        int64_t x = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
        bd_tensor_set_i64(t, i, x);
    }
    }
}

/* ---- value shapes ---- */
bool bd_value_shape_known(const bd_value *v) {
    if (v->rank < 0) return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] < 0) return false;
    return true;
}

const char *bd_shape_str(const bd_value *v, char *buf, size_t len) {
    if (v->rank < 0) {
        snprintf(buf, len, "?");
        return buf;
    }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < v->rank && o < len; i++) {
        const char *sep = i ? "," : "";
        if (v->dims[i] >= 0)
            o += (size_t)snprintf(buf + o, len - o, "%s%lld", sep, (long long)v->dims[i]);
        else if (v->dim_param[i])
            o += (size_t)snprintf(buf + o, len - o, "%s%s", sep, bd_quote(v->dim_param[i]));
        else
            o += (size_t)snprintf(buf + o, len - o, "%s?", sep);
    }
    if (o < len) snprintf(buf + o, len - o, "]");
    return buf;
}

bd_status bd_value_set(bd_diag *d, const bd_node *n, bd_value *v, int dtype, int rank,
                       const int64_t *dims) {
    if (!v) return BD_OK; /* omitted optional output */
    if (rank > BD_MAX_RANK)
        return bd_node_fail(d, BD_ERR_UNSUPPORTED, n, "output '%s' has rank %d, above bdc's limit of %d",
                            bd_quote(v->name), rank, BD_MAX_RANK);
    if (dtype && v->decl_dtype && v->decl_dtype != dtype)
        return bd_node_fail(d, BD_ERR_INVALID, n, "output '%s' is declared %s but computes %s",
                            bd_quote(v->name), bd_dtype_name(v->decl_dtype), bd_dtype_name(dtype));
    if (rank >= 0 && v->decl_rank >= 0) {
        bool same = v->decl_rank == rank;
        for (int i = 0; same && i < rank; i++)
            same = v->decl_dims[i] < 0 || dims[i] < 0 || v->decl_dims[i] == dims[i];
        if (!same) {
            bd_value declared = *v, computed = *v;
            char a[256], b[256];
            declared.rank = v->decl_rank;
            memcpy(declared.dims, v->decl_dims, sizeof declared.dims);
            computed.rank = rank;
            memcpy(computed.dims, dims, (size_t)rank * sizeof *dims);
            memset(computed.dim_param, 0, sizeof computed.dim_param);
            return bd_node_fail(d, BD_ERR_INVALID, n, "output '%s' is declared %s but computes %s",
                                bd_quote(v->name), bd_shape_str(&declared, a, sizeof a),
                                bd_shape_str(&computed, b, sizeof b));
        }
    }
    if (dtype) v->dtype = dtype;
    if (rank >= 0) {
        v->rank = rank;
        memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    }
    return BD_OK;
}

bd_status bd_value_set_constant(bd_diag *d, const bd_node *n, bd_value *v, bd_tensor *t) {
    if (!v) return BD_OK;
    bd_status s = bd_value_set(d, n, v, t->dtype, t->rank, t->dims);
    if (s) return s;
    v->constant = t;
    v->flags |= BD_VALUE_FOLDED;
    return BD_OK;
}

int bd_graph_add_constant(bd_graph *g, const bd_node *n, bd_tensor *t) {
    int v = bd_graph_add_value(g, "");
    bd_value *val = bd_graph_value(g, v);
    val->decl_rank = -1; /* declares nothing */
    bd_diag d = {0};
    bd_status s = bd_value_set_constant(&d, n, val, t);
    BD_ASSERT(!s); /* a fresh value declares nothing to contradict */
    return v;
}

bool bd_norm_axis(int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank) return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

bool bd_value_const_ints(const bd_value *v, int64_t *out, int max, int *n) {
    if (!v || !v->constant || v->constant->rank > 1) return false;
    const bd_tensor *t = v->constant;
    if (!bd_dtype_is_int(t->dtype) || t->numel > max) return false;
    for (int64_t i = 0; i < t->numel; i++) out[i] = bd_tensor_get_i64(t, i);
    *n = (int)t->numel;
    return true;
}

static void dump_value(bd_graph *g, int v, FILE *f) {
    if (v < 0) {
        fprintf(f, " -");
        return;
    }
    const bd_value *val = bd_graph_value(g, v);
    char shape[256];
    fprintf(f, " t%d:%s%s%s", v, val->dtype ? bd_dtype_name(val->dtype) : "?",
            bd_shape_str(val, shape, sizeof shape), val->constant ? "=const" : "");
}

void bd_graph_dump(bd_graph *g, FILE *f) {
    fprintf(f, "graph inputs:");
    for (size_t i = 0; i < g->inputs.len; i++) dump_value(g, BD_VEC_AT(&g->inputs, int, i), f);
    fprintf(f, "\n");
    for (size_t i = 0; i < g->nodes.len; i++) {
        const bd_node *n = bd_graph_node(g, (int)i);
        if (n->dead) continue;
        fprintf(f, "n%zu %s '%s' (", i, bd_quote(n->op_type), bd_quote(n->name));
        for (int k = 0; k < n->n_inputs; k++) dump_value(g, n->inputs[k], f);
        fprintf(f, " ) ->");
        for (int k = 0; k < n->n_outputs; k++) dump_value(g, n->outputs[k], f);
        fprintf(f, "\n");
    }
    fprintf(f, "graph outputs:");
    for (size_t i = 0; i < g->outputs.len; i++) dump_value(g, BD_VEC_AT(&g->outputs, int, i), f);
    fprintf(f, "\n");
}

bool bd_bytes_equal_nocase(const bd_bytes *b, const char *s) {
    if (b->len != strlen(s)) return false;
    for (size_t i = 0; i < b->len; i++) {
        unsigned char c = b->data[i], t = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        if (t >= 'A' && t <= 'Z') t = (unsigned char)(t - 'A' + 'a');
        if (c != t) return false;
    }
    return true;
}
