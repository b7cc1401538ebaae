/* tables.c — an elementwise nest computing an expensive function of one 8-bit tensor becomes a
 * lookup (with fusion block, after the chains: fuse.c runs both until tabulating opens no more
 * chains).
 *
 * A QDQ network's float work between two quantized products reads bytes: a QDQ transformer's GELU
 * is DequantizeLinear, Div, Erf, Add, Mul, each output quantized and dequantized again, ending in
 * a QuantizeLinear; once its chain is one nest, each element is a function of one byte. So a new
 * nest computes that function at all 256 byte values into a table, and the nest becomes a load of
 * its byte and of the table entry: at sequence 128 and width 1024, 256 erf evaluations per run
 * instead of 131072. The table nest is the nest's own expression over a constant of the 256
 * values, printed as every elementwise nest is, so each entry is what the nest computed for that
 * byte. It runs every run, just before the nest: the other operands are one-element values (the
 * scales, zero points and constants), which a run may compute (a DequantizeLinear of a
 * constant), and a table is 256 evaluations. Entries of integer types narrower than 32 bits are
 * stored as int32, which a lookup loop gathers in vectors. */
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"

/* A table pays where the expression costs about a transcendental per element or more (a lookup
 * is a scalar load, where the expression's loop computes a vector of elements per instruction),
 * over elements enough for 256 evaluations a run to vanish beside them. */
enum { TABLE_MIN_COST = 20, TABLE_MIN_ELEMENTS = 8 * 256, TABLE_SIZE = 256 };

static int64_t numel_of(const bd_value *v) {
    int64_t n;
    return bd_value_shape_known(v) && bd_dims_numel(v->rank, v->dims, &n) ? n : -1;
}

static bool one_element(const bd_program *p, const bd_nest *n, int k) {
    return numel_of(bd_graph_value(p->graph, n->operands[k].value)) == 1;
}

int bd_table_index(const bd_program *p, const bd_nest *n) {
    if (n->body != BD_BODY_ELEMENTWISE) return -1;
    const bd_expr *x = &n->params.expr;
    int index = -1;
    for (int i = 0; i < x->n; i++) {
        const bd_expr_node *e = &x->node[i];
        if (e->op != BD_EXPR_LOAD || one_element(p, n, e->operand)) continue;
        const bd_value *v = bd_graph_value(p->graph, n->operands[e->operand].value);
        /* (a constant's function is a constant: the table nests' own bytes are one) */
        if (!bd_dtype_is_byte(v->dtype) || v->constant || (index >= 0 && index != e->operand)) return -1;
        index = e->operand;
    }
    return index;
}

/* Whether the expression is a lookup already (LOAD, LOOKUP and maybe a CAST). */
static bool pure_lookup(const bd_expr *x) {
    for (int i = 0; i < x->n; i++)
        if (x->node[i].op != BD_EXPR_LOAD && x->node[i].op != BD_EXPR_LOOKUP &&
            x->node[i].op != BD_EXPR_CAST)
            return false;
    return x->n <= 3;
}

/* Drops the operands n's expression does not read (the write stays last) and renumbers. */
static void keep_read_operands(bd_nest *n) {
    bd_expr *x = &n->params.expr;
    bool loaded[BD_NEST_MAX_OPERANDS], looked_up[BD_NEST_MAX_OPERANDS];
    int map[BD_NEST_MAX_OPERANDS], kept = 0;
    bd_expr_operands_read(x, n->n_operands, loaded, looked_up);
    for (int k = 0; k < n->n_operands; k++) {
        map[k] = n->operands[k].write || loaded[k] || looked_up[k] ? kept : -1;
        if (map[k] >= 0) n->operands[kept++] = n->operands[k];
    }
    n->n_operands = kept;
    for (int i = 0; i < x->n; i++)
        if (bd_expr_reads_operand(&x->node[i])) x->node[i].operand = map[x->node[i].operand];
}

static int new_value(bd_graph *g, int dtype, int rank, const int64_t *dims) {
    int v = bd_graph_add_value(g, ""); /* unnamed: never looked up, never an I/O */
    bd_value *val = bd_graph_value(g, v);
    val->dtype = dtype;
    val->rank = rank;
    memcpy(val->dims, dims, sizeof(int64_t) * (size_t)rank);
    val->decl_rank = -1;
    return v;
}

/* ---------------------------------------------------------------- a cut at a byte */

/* Whether node i of n's expression depends on an operand of more than one element other than
 * through node `cut` (-1: none). */
static bool reads_tensor(const bd_program *p, const bd_nest *n, int i, int cut, bool *seen) {
    if (i == cut || seen[i]) return false;
    seen[i] = true;
    const bd_expr_node *e = &n->params.expr.node[i];
    if (e->op == BD_EXPR_LOAD) return !one_element(p, n, e->operand);
    for (int a = 0; a < bd_expr_arity(e->op); a++)
        if (reads_tensor(p, n, e->arg[a], cut, seen)) return true;
    return false;
}

/* The earliest 8-bit node (a QuantizeLinear's) through which every tensor read of n's result
 * passes, or -1: what comes after it is a function of one 8-bit value. */
static int byte_cut(const bd_program *p, const bd_nest *n) {
    const bd_expr *x = &n->params.expr;
    for (int i = 0; i < x->n - 1; i++) {
        if (!bd_dtype_is_byte(x->node[i].dtype) || x->node[i].op == BD_EXPR_LOAD) continue;
        bool seen[BD_EXPR_MAX_NODES] = {false}, seen_below[BD_EXPR_MAX_NODES] = {false};
        if (!reads_tensor(p, n, x->n - 1, i, seen) && reads_tensor(p, n, i, -1, seen_below))
            return i;
    }
    return -1;
}

/* Nest n whose result is a function of an 8-bit node of its expression, computed from tensors
 * (a QuantizeLinear of a product, then a Sigmoid): when the part after the node is worth a table,
 * n splits in two, *below computing the bytes into a new value and n the rest from them, which
 * the table then takes. False: n unchanged. */
static bool split_at_byte(bd_program *p, bd_nest *n, bd_nest *below) {
    int cut = byte_cut(p, n), w = n->n_operands - 1, y = n->operands[w].value;
    if (cut < 0 || w + 2 > BD_NEST_MAX_OPERANDS ||
        !bd_access_is_identity(&n->operands[w], n->n_iter))
        return false;
    bd_nest above = *n;
    bd_expr *x = &above.params.expr;
    above.operands[w + 1] = above.operands[w];
    above.operands[w] = above.operands[w + 1];
    above.operands[w].write = false; /* y read: a placeholder for the bytes, read where the
                                        result is written */
    above.n_operands++;
    x->node[cut] = (bd_expr_node){.op = BD_EXPR_LOAD, .dtype = x->node[cut].dtype, .operand = w};
    bd_expr_compact(x, x->n - 1);
    keep_read_operands(&above);
    if (bd_fuse_expr_cost(x) < TABLE_MIN_COST ||
        numel_of(bd_graph_value(p->graph, y)) < TABLE_MIN_ELEMENTS)
        return false;
    int bytes = new_value(p->graph, n->params.expr.node[cut].dtype, n->n_iter, n->extent);
    *below = *n;
    bd_expr_compact(&below->params.expr, cut);
    keep_read_operands(below);
    below->operands[below->n_operands - 1].value = bytes;
    for (int k = 0; k < above.n_operands - 1; k++)
        if (above.operands[k].value == y) above.operands[k].value = bytes;
    *n = above;
    return true;
}

/* ---------------------------------------------------------------- the table */

/* The 256 values of an 8-bit dtype in table order: 0..255, or -128..127. */
static int byte_values(bd_graph *g, int node, int dtype) {
    int64_t dims[1] = {TABLE_SIZE};
    bd_tensor *t = bd_tensor_new(&g->model->arena, dtype, 1, dims);
    for (int i = 0; i < TABLE_SIZE; i++)
        bd_tensor_set_i64(t, i, dtype == BD_DT_INT8 ? i - 128 : i);
    return bd_graph_add_constant(g, bd_graph_node(g, node), t);
}

/* Nest n (index operand k, of dtype byte_dtype) as a table nest over the byte values `bytes`
 * writing table t, and n as the lookup of its byte in t. */
static bd_nest tabulate(bd_nest *n, int k, int byte_dtype, int bytes, int t, int table_dtype) {
    bd_nest tn = *n;
    keep_read_operands(&tn);
    int byte_k = -1;
    for (int j = 0; j < tn.n_operands; j++) {
        bd_operand *o = &tn.operands[j];
        if (o->write) { /* the table, entry i at byte value i */
            o->value = t;
            o->rank = 1;
            bd_access_identity(o, 0);
        } else if (o->value == n->operands[k].value && o->dims[0].kind != BD_ACCESS_OPAQUE) {
            o->value = bytes;
            o->rank = 1;
            bd_access_identity(o, 0);
            byte_k = j;
        } else if (o->dims[0].kind != BD_ACCESS_OPAQUE) { /* one element, at index 0 */
            for (int d = 0; d < o->rank; d++)
                o->dims[d] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
        } /* else a table, read whole */
    }
    BD_ASSERT(byte_k >= 0);
    tn.n_iter = 1;
    tn.extent[0] = tn.tile[0] = TABLE_SIZE;
    tn.grid[0] = tn.n_blocks = 1;
    tn.whole[0] = false;

    bd_expr lookup = {0};
    int r = bd_expr_load(&lookup, 0, byte_dtype);
    r = bd_expr_lookup(&lookup, 1, table_dtype, r);
    r = bd_expr_cast(&lookup, bd_expr_root(&n->params.expr)->dtype, r);
    BD_ASSERT(r >= 0);
    bd_operand index = n->operands[k], out = n->operands[n->n_operands - 1];
    n->operands[0] = index;
    n->operands[1] = (bd_operand){.value = t, .write = false, .rank = 1};
    bd_access_opaque(&n->operands[1]);
    n->operands[2] = out;
    n->n_operands = 3;
    n->params.expr = lookup;
    return tn;
}

static void note(bd_program *p, int node, const char *why) {
    bd_fusion_note *f = bd_vec_push(&p->fusion_notes);
    *f = (bd_fusion_note){node, node, true, why};
}

bool bd_fuse_tables(bd_program *p) {
    bd_graph *g = p->graph;
    size_t values_before = g->values.len;
    int bytes[2] = {-1, -1}; /* the 256 byte values, uint8 and int8, made once */
    bd_vec out = BD_VEC(bd_nest);
    bool changed = false;
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest n = BD_VEC_AT(&p->nests, bd_nest, i), below;
        if (n.body != BD_BODY_ELEMENTWISE || n.n_blocks == 0) {
            *(bd_nest *)bd_vec_push(&out) = n;
            continue;
        }
        int k = bd_table_index(p, &n);
        if (k < 0 && !bd_expr_has(&n.params.expr, BD_EXPR_LOOKUP) && split_at_byte(p, &n, &below)) {
            *(bd_nest *)bd_vec_push(&out) = below;
            note(p, n.node, "split at an 8-bit value: the bytes stored, the float work after them "
                            "a function of one 8-bit tensor");
            k = bd_table_index(p, &n);
            BD_ASSERT(k >= 0);
        }
        const bd_expr *x = &n.params.expr;
        const bd_value *y = bd_graph_value(g, n.operands[n.n_operands - 1].value);
        bool worth = bd_expr_has(x, BD_EXPR_LOOKUP) || (bd_fuse_expr_cost(x) >= TABLE_MIN_COST &&
                                         numel_of(y) >= TABLE_MIN_ELEMENTS);
        if (k < 0 || pure_lookup(x) || !worth) {
            *(bd_nest *)bd_vec_push(&out) = n;
            continue;
        }
        int byte_dtype = bd_graph_value(g, n.operands[k].value)->dtype;
        int *b = &bytes[byte_dtype == BD_DT_INT8];
        if (*b < 0) *b = byte_values(g, n.node, byte_dtype);
        int root = bd_expr_root(x)->dtype;
        int table_dtype = (bd_dtype_is_int(root) || root == BD_DT_BOOL) && bd_dtype_bits(root) < 32
                              ? BD_DT_INT32
                              : root;
        int64_t size = TABLE_SIZE;
        int t = new_value(g, table_dtype, 1, &size);
        *(bd_nest *)bd_vec_push(&out) = tabulate(&n, k, byte_dtype, *b, t, table_dtype);
        *(bd_nest *)bd_vec_push(&out) = n;
        note(p, n.node, "a function of one 8-bit tensor: computed at its 256 values into a table, "
                        "then looked up per element");
        changed = true;
    }
    bd_vec_free(&p->nests);
    p->nests = out;
    bd_program_values_added(p, values_before);
    return changed;
}
