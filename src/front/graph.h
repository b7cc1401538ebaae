/* graph.h — the graph IR: a model owns one arena holding graphs, values, nodes, attributes and
 * constant tensors.
 *
 * Values are referred to by index into their graph's value array; a node lists the indices of its
 * inputs (-1 for an omitted optional input) and outputs. A subgraph (If/Loop/Scan bodies) is a
 * bd_graph whose `parent` is the enclosing graph; names it does not define resolve there, and are
 * recorded as values flagged BD_VALUE_OUTER. Shapes are static int64 dims where known; -1 marks a
 * dim not known at compile time (its symbolic name, when the model gave one, is in dim_param). */
#ifndef BD_GRAPH_H
#define BD_GRAPH_H

#include <stdio.h>

#include "base/dtype.h"
#include "base/util.h"

#define BD_MAX_RANK 12
#define BD_OPSET_MIN 7
/* Opsets 23..27 changed, among bdc's ops, only dtype lists (float4, float8e8m0, int2: refused as
 * dtypes), QuantizeLinear's `precision` and DequantizeLinear's `output_dtype`, Cast's
 * `round_mode` (float8e8m0 only) and Range's float16/bfloat16 inputs (refused); each is handled
 * where the op is. */
#define BD_OPSET_MAX 27

typedef enum bd_op {
    BD_OP_UNKNOWN = 0,
#define X(e, name, since, imin, imax, omin, omax, infer, fold, lower) BD_OP_##e,
#include "front/ops.def"
    BD_OPS(X)
#undef X
    BD_OP_COUNT
} bd_op;

/* A dense tensor in native layout (little-endian, row-major). Strings are stored as an array of
 * bd_bytes in `strings`; 4-bit types are packed two per byte as in ONNX. */
typedef struct bd_bytes {
    const uint8_t *data;
    size_t len;
} bd_bytes;

typedef struct bd_tensor {
    const char *name;
    int dtype;
    int rank;
    int64_t dims[BD_MAX_RANK];
    int64_t numel;
    int64_t nbytes;
    void *data;        /* numel elements (NULL when numel == 0 or dtype is string) */
    bd_bytes *strings; /* dtype string only */
} bd_tensor;

enum {
    BD_VALUE_INPUT = 1u << 0,       /* graph input (not an initializer) */
    BD_VALUE_OUTPUT = 1u << 1,      /* graph output */
    BD_VALUE_INITIALIZER = 1u << 2, /* weight from the file */
    BD_VALUE_OUTER = 1u << 3,       /* defined by an enclosing graph */
    BD_VALUE_FOLDED = 1u << 4,      /* constant computed at compile time */
    BD_VALUE_BATCHED = 1u << 5,     /* dim 0 is the ranged batch (--dim SYMBOL=LO..HI) */
};

typedef struct bd_value {
    const char *name;
    int dtype;  /* BD_DT_*, 0 while unknown */
    int rank;   /* -1 while unknown */
    int64_t dims[BD_MAX_RANK];           /* -1 = unknown extent */
    const char *dim_param[BD_MAX_RANK];  /* symbolic name of an unknown dim, or NULL */
    /* What the file declares (value_info, graph outputs): never copied into dtype/rank/dims, only
     * checked against what inference computes, so inference is tested on its own. */
    int decl_dtype;
    int decl_rank;
    const char *type_kind; /* NULL for tensors; "sequence", "map", "optional", ... otherwise */
    int64_t decl_dims[BD_MAX_RANK];
    bd_tensor *constant; /* initializer or folded value, else NULL */
    int producer;        /* node index, -1 if none in this graph */
    unsigned flags;
    int n_uses;          /* node inputs + graph outputs referring to it (set by bd_graph_count_uses) */
} bd_value;

typedef enum bd_attr_type {
    BD_ATTR_UNDEFINED = 0,
    BD_ATTR_FLOAT = 1,
    BD_ATTR_INT = 2,
    BD_ATTR_STRING = 3,
    BD_ATTR_TENSOR = 4,
    BD_ATTR_GRAPH = 5,
    BD_ATTR_FLOATS = 6,
    BD_ATTR_INTS = 7,
    BD_ATTR_STRINGS = 8,
    BD_ATTR_TENSORS = 9,
    BD_ATTR_GRAPHS = 10,
    BD_ATTR_SPARSE_TENSOR = 11,
    BD_ATTR_SPARSE_TENSORS = 12,
    BD_ATTR_TYPE_PROTO = 13,
    BD_ATTR_TYPE_PROTOS = 14,
} bd_attr_type;

struct bd_graph;

typedef struct bd_attr {
    const char *name;
    bd_attr_type type;
    float f;
    int64_t i;
    bd_bytes s;
    bd_tensor *t;
    struct bd_graph *g;
    int n;              /* element count of the list forms */
    float *floats;
    int64_t *ints;
    bd_bytes *strings;
    bd_tensor **tensors;
    struct bd_graph **graphs;
} bd_attr;

typedef struct bd_node {
    const char *name;    /* may be "" in the file; never NULL */
    const char *op_type;
    const char *domain;  /* "" for the default domain */
    bd_op op;            /* BD_OP_UNKNOWN when not in the op table */
    int opset;           /* opset version in force for this node's domain (0 if not imported) */
    int n_inputs, n_outputs, n_attrs;
    int *inputs;         /* value indices, -1 for an omitted optional input */
    int *outputs;        /* value indices, -1 for an omitted optional output */
    bd_attr *attrs;
    bool dead;           /* removed by a pass; skipped everywhere */
} bd_node;

typedef struct bd_graph {
    struct bd_model *model;
    struct bd_graph *parent;
    const char *name;
    int depth;           /* 0 for the main graph */
    int owner_node;      /* index in parent of the node holding this subgraph (-1 for the main) */
    bd_vec values;       /* bd_value */
    bd_vec nodes;        /* bd_node */
    bd_vec inputs;       /* int: value indices of graph inputs, file order (initializers excluded) */
    bd_vec outputs;      /* int: value indices of graph outputs */
    bd_map names;        /* value name -> index */
    /* --dim SYMBOL=LO..HI: the batch range (0, 0 without one) and the extent the model was bound
     * to (HI, or the other point the batch check evaluates); BD_VALUE_BATCHED marks the inputs
     * and outputs whose dim 0 it is (bind.c, plan/batch.c) */
    const char *batch_symbol;
    int64_t batch_min, batch_max, batch_at;
} bd_graph;

typedef struct bd_opset {
    const char *domain;
    int64_t version;
} bd_opset;

typedef struct bd_model {
    bd_arena arena;
    const char *path;
    const char *dir;     /* folder of the model file: external data must stay inside it */
    const char *producer_name, *producer_version, *domain, *doc;
    int64_t ir_version, model_version;
    int n_opsets;
    bd_opset *opsets;
    bd_graph *graph;
    bd_vec subgraphs;    /* bd_graph *: every nested graph, for teardown */
} bd_model;

/* ---- op table queries ---- */
typedef bd_status (*bd_infer_fn)(bd_graph *g, bd_node *n, bd_diag *d);
typedef struct bd_op_info {
    const char *name;
    int since, in_min, in_max, out_min, out_max;
    bd_infer_fn infer;
    bd_infer_fn fold;
} bd_op_info;
const bd_op_info *bd_op_info_of(bd_op op);
bd_op bd_op_lookup(const char *domain, const char *op_type);

/* ---- graph building and access ---- */
bd_graph *bd_graph_new(bd_model *m, bd_graph *parent, const char *name);
int bd_graph_add_value(bd_graph *g, const char *name); /* new value; caller checks duplicates */
int bd_graph_find_value(const bd_graph *g, const char *name);
void bd_graph_count_uses(bd_graph *g);
/* Whether value v is a graph output: listed among the outputs or flagged BD_VALUE_OUTPUT. */
bool bd_graph_is_output(const bd_graph *g, int v);
/* Node n holds a subgraph (If/Loop/Scan bodies). */
bool bd_node_has_subgraph(const bd_node *n);
/* A live node of g holds a subgraph (an If/Loop/Scan left in place), whose nodes read values of
 * g by name: passes that rename or remove values leave such a graph alone. */
bool bd_graph_has_subgraphs(const bd_graph *g);
void bd_model_free(bd_model *m);

static inline bd_value *bd_graph_value(bd_graph *g, int v) {
    return v < 0 ? NULL : &BD_VEC_AT(&g->values, bd_value, v);
}
static inline bd_node *bd_graph_node(bd_graph *g, int i) { return &BD_VEC_AT(&g->nodes, bd_node, i); }

/* Input/output i of a node, or NULL when absent (omitted or beyond the count). */
bd_value *bd_node_in(bd_graph *g, const bd_node *n, int i);
bd_value *bd_node_out(bd_graph *g, const bd_node *n, int i);

const bd_attr *bd_node_attr(const bd_node *n, const char *name);
int64_t bd_attr_int(const bd_node *n, const char *name, int64_t dflt);
float bd_attr_float(const bd_node *n, const char *name, float dflt);
/* The string attribute as a NUL-terminated arena copy, or dflt. */
const char *bd_attr_string(bd_graph *g, const bd_node *n, const char *name, const char *dflt);

/* "node 'conv1' (Conv): " prefix + message, recorded in d. */
bd_status bd_node_fail(bd_diag *d, bd_status s, const bd_node *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The graph input that value v is computed from (backwards through the nodes that compute it,
 * not through constants), or -1. integer_only: only int32/int64 inputs count, so that a node's
 * data input is not taken for the shape tensor beside it. */
int bd_graph_input_behind(bd_graph *g, int v, bool integer_only);
/* Refuses node n because its input k (`what`: "input 1 (axes)") is not a compile-time constant;
 * when it is computed from a graph input, names that input and the --const option. */
bd_status bd_fail_not_const(bd_diag *d, bd_graph *g, const bd_node *n, int k, const char *what);
/* The same reason into buf (returned), for a refusal made later, by the support check. */
const char *bd_not_const_reason(bd_graph *g, const bd_node *n, int k, const char *what,
                                char *buf, size_t len);

/* ---- tensors ---- */
/* Product of dims, overflow-checked; false on overflow or negative dim. */
bool bd_dims_numel(int rank, const int64_t *dims, int64_t *numel);
/* Row-major element strides of dims[0..rank) (strides[rank-1] == 1; an empty dim counts as 1). */
void bd_dims_strides(int rank, const int64_t *dims, int64_t *strides);
/* Bytes for numel elements of dt (4-bit types rounded up); false on overflow. */
bool bd_dtype_nbytes(int dt, int64_t numel, int64_t *nbytes);
bd_tensor *bd_tensor_new(bd_arena *a, int dtype, int rank, const int64_t *dims); /* zeroed data */
/* Element i as int64 / double (integer, bool and float types; 0 for others). */
int64_t bd_tensor_get_i64(const bd_tensor *t, int64_t i);
double bd_tensor_get_f64(const bd_tensor *t, int64_t i);
void bd_tensor_set_i64(bd_tensor *t, int64_t i, int64_t v);
void bd_tensor_set_f64(bd_tensor *t, int64_t i, double v);

/* ---- value shape helpers used by inference ---- */
bool bd_value_shape_known(const bd_value *v); /* rank known and every dim >= 0 */
/* Sets dtype, rank and dims of v (dims may hold -1 for unknown extents); fails (BD_ERR_INVALID,
 * naming the node) when they contradict what the file declares for v. */
bd_status bd_value_set(bd_diag *d, const bd_node *n, bd_value *v, int dtype, int rank,
                       const int64_t *dims);
/* ASCII case-insensitive comparison of a length-delimited string attribute with s (LSTM
 * activation names are matched this way by inference and lowering). */
bool bd_bytes_equal_nocase(const bd_bytes *b, const char *s);

/* Attaches a folded constant to v and sets its type from it. */
bd_status bd_value_set_constant(bd_diag *d, const bd_node *n, bd_value *v, bd_tensor *t);
/* A new unnamed value holding the constant t, made by a pass for node n; its index (adding a
 * value may move the graph's values). */
int bd_graph_add_constant(bd_graph *g, const bd_node *n, bd_tensor *t);

/* Text form of the graph after inference (--dump=graph): one node a line with its values. */
void bd_graph_dump(bd_graph *g, FILE *f);

/* "[1,3,224,224]" / "[N,3,?,?]" into buf. */
const char *bd_shape_str(const bd_value *v, char *buf, size_t len);

#endif
