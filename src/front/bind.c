/* bind.c — the command line's word on the graph inputs, applied between loading and inference:
 * --shape NAME=DIMS pins an input's shape, --dim SYMBOL=N gives a symbolic dimension (an ONNX
 * dim_param) its extent at every input where it occurs, and --const NAME=FILE turns an input into
 * a constant (a Reshape target, Slice bounds: a tensor whose value decides shapes). Everything
 * after sees the shapes the model and these options give together, so inference, folding and
 * lowering work on static shapes and never need to know where a shape came from.
 *
 * A symbol means one extent throughout the model, so a --shape or --const that covers a symbolic
 * dim also binds that symbol at the other inputs, and two options giving one symbol different
 * extents contradict each other. A binding the model contradicts (wrong rank, a fixed dim that
 * differs, a dtype that differs) or that names no input or symbol is a usage error (exit 1) naming
 * the input and both figures: the model is fine, the command line is not. An input still not
 * static afterwards is described by bd_input_unbound, which suggests the options that would fix
 * it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/passes.h"

typedef struct symbol_binding {
    const char *name;
    int64_t value;
    const char *option, *arg; /* where the value came from, for contradiction messages */
} symbol_binding;

typedef struct binder {
    bd_graph *g;
    bd_diag *d;
    bd_vec symbols; /* symbol_binding */
} binder;

/* The value after the last '=' of "NAME=VALUE" (the name part may hold '=' itself), or NULL. */
static const char *split_value(bd_arena *a, const char *arg, const char **name) {
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg) return NULL;
    *name = bd_arena_strndup(a, arg, (size_t)(eq - arg));
    return eq + 1;
}

/* A positive decimal extent at *s, advancing it; false if there is none or it overflows. */
static bool parse_extent(const char **s, int64_t *out) {
    if (**s < '0' || **s > '9') return false;
    errno = 0;
    char *end;
    long long v = strtoll(*s, &end, 10);
    if (errno || v <= 0) return false;
    *s = end;
    *out = v;
    return true;
}

/* "1x3x224x224" into dims; false when malformed or above BD_MAX_RANK. */
static bool parse_dims(const char *s, int *rank, int64_t *dims) {
    *rank = 0;
    for (;;) {
        if (*rank == BD_MAX_RANK || !parse_extent(&s, &dims[*rank])) return false;
        ++*rank;
        if (!*s) return true;
        if (*s++ != 'x') return false;
    }
}

static bool declares_symbol(const bd_value *v, int i) {
    return v->decl_dims[i] < 0 && v->dim_param[i];
}

static symbol_binding *symbol_find(binder *b, const char *name) {
    for (size_t i = 0; i < b->symbols.len; i++) {
        symbol_binding *s = &BD_VEC_AT(&b->symbols, symbol_binding, i);
        if (strcmp(s->name, name) == 0) return s;
    }
    return NULL;
}

static bool symbol_occurs(bd_graph *g, const char *name) {
    for (size_t k = 0; k < g->inputs.len; k++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k));
        for (int i = 0; i < v->decl_rank; i++)
            if (declares_symbol(v, i) && strcmp(v->dim_param[i], name) == 0) return true;
    }
    return false;
}

/* Whether input k's dim i repeats a symbol an earlier input dim declares. */
static bool symbol_seen_before(bd_graph *g, size_t k, int i) {
    const char *name = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k))->dim_param[i];
    for (size_t k2 = 0; k2 <= k; k2++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k2));
        for (int i2 = 0; i2 < (k2 == k ? i : v->decl_rank); i2++)
            if (declares_symbol(v, i2) && strcmp(v->dim_param[i2], name) == 0) return true;
    }
    return false;
}

/* Comma-separated list of the inputs' names (or their symbols) into buf, for "no such" messages. */
static const char *list_names(bd_graph *g, bool symbols, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    for (size_t k = 0; k < g->inputs.len; k++) {
        const bd_value *v = bd_graph_value(g, BD_VEC_AT(&g->inputs, int, k));
        for (int i = 0; i < (symbols ? v->decl_rank : 1); i++) {
            if (symbols && (!declares_symbol(v, i) || symbol_seen_before(g, k, i))) continue;
            const char *name = bd_quote(symbols ? v->dim_param[i] : v->name);
            if (o + strlen(name) + 8 >= len) return buf;
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", name);
        }
    }
    return buf;
}

/* Records SYMBOL = value, failing when an earlier option gave it another extent. */
static bd_status symbol_bind(binder *b, const char *name, int64_t value, const char *option,
                             const char *arg) {
    symbol_binding *s = symbol_find(b, name);
    if (!s) {
        s = bd_vec_push(&b->symbols);
        *s = (symbol_binding){name, value, option, arg};
        return BD_OK;
    }
    if (s->value == value) return BD_OK;
    char first[200];
    snprintf(first, sizeof first, "%s", bd_quote(s->arg));
    return bd_fail(b->d, BD_ERR_USAGE,
                   "%s '%s' and %s '%s' give symbol '%s' different extents "
                   "(%lld, %lld)",
                   s->option, first, option, bd_quote(arg), bd_quote(name), (long long)s->value,
                   (long long)value);
}

/* A ranged symbol (SYMBOL=LO..HI, the batch) must be dim 0 wherever it occurs: each input's
 * first dim is then the batch, and the printers run a prefix of the blocks (plan/batch.c). */
static bd_status mark_batched(binder *b, const char *name, const char *arg) {
    for (size_t k = 0; k < b->g->inputs.len; k++) {
        bd_value *v = bd_graph_value(b->g, BD_VEC_AT(&b->g->inputs, int, k));
        for (int i = 0; i < v->decl_rank; i++) {
            if (!declares_symbol(v, i) || strcmp(v->dim_param[i], name) != 0) continue;
            if (i != 0)
                return bd_fail(b->d, BD_ERR_UNSUPPORTED,
                               "--dim '%s': symbol '%s' is dim %d of input '%s'; a range is "
                               "compiled only for a batch, dim 0 of every input it occurs in",
                               bd_quote(arg), bd_quote(name), i, bd_quote(v->name));
            v->flags |= BD_VALUE_BATCHED;
        }
    }
    return BD_OK;
}

static bd_status bind_dims(binder *b, const bd_input_binds *in) {
    for (int k = 0; k < in->n_dims; k++) {
        const char *arg = in->dims[k], *name, *text = split_value(&b->g->model->arena, arg, &name);
        int64_t value, lo = 0;
        /* SYMBOL=N, or SYMBOL=LO..HI: one executable for every extent in the range */
        bool ranged = text && strstr(text, "..") != NULL;
        if (ranged && (!parse_extent(&text, &lo) || strncmp(text, "..", 2) != 0))
            text = NULL;
        else if (ranged)
            text += 2;
        if (!text || !parse_extent(&text, &value) || *text)
            return bd_fail(b->d, BD_ERR_USAGE,
                           "--dim '%s': expected SYMBOL=N or SYMBOL=LO..HI, N, LO and HI positive "
                           "integers", bd_quote(arg));
        if (ranged && lo >= value)
            return bd_fail(b->d, BD_ERR_USAGE, "--dim '%s': the range's low end must be below its "
                           "high end (for one extent, --dim %s=N)", bd_quote(arg), bd_quote(name));
        if (ranged && b->g->batch_max)
            return bd_fail(b->d, BD_ERR_USAGE, "--dim '%s': only one symbol may take a range "
                           "(the batch; '%s' has one)", bd_quote(arg), bd_quote(b->g->batch_symbol));
        if (!symbol_occurs(b->g, name)) {
            char have[400];
            list_names(b->g, true, have, sizeof have);
            return bd_fail(b->d, BD_ERR_USAGE,
                           "--dim '%s': no input has a symbolic dimension '%s' "
                           "(%s%s)",
                           bd_quote(arg), bd_quote(name), have[0] ? "symbols: " : "",
                           have[0] ? have : "the model's inputs have none");
        }
        if (ranged) {
            if (in->batch_at && (in->batch_at < lo || in->batch_at > value))
                return bd_fail(b->d, BD_ERR_USAGE, "batch %lld is outside --dim '%s'",
                               (long long)in->batch_at, bd_quote(arg));
            b->g->batch_symbol = name;
            b->g->batch_min = lo;
            b->g->batch_max = value;
            b->g->batch_at = value = in->batch_at ? in->batch_at : value;
            bd_status s = mark_batched(b, name, arg);
            if (s) return s;
        }
        bd_status s = symbol_bind(b, name, value, "--dim", arg);
        if (s) return s;
    }
    return BD_OK;
}

/* The graph input named `name` (NULL with a usage error naming the option otherwise). */
static bd_value *find_input(binder *b, const char *name, const char *option, const char *arg) {
    for (size_t k = 0; k < b->g->inputs.len; k++) {
        bd_value *v = bd_graph_value(b->g, BD_VEC_AT(&b->g->inputs, int, k));
        if (strcmp(v->name, name) == 0) return v;
    }
    char have[400];
    list_names(b->g, false, have, sizeof have);
    bd_fail(b->d, BD_ERR_USAGE, "%s '%s': the model has no input '%s' (%s%s)", option,
            bd_quote(arg), bd_quote(name), have[0] ? "inputs: " : "it has no inputs", have);
    return NULL;
}

/* A shape given for input v must agree with what the model declares: its rank and every fixed
 * dim. The symbolic dims it covers are bound. */
static bd_status check_shape(binder *b, const bd_value *v, int rank, const int64_t *dims,
                             const char *option, const char *arg) {
    char declared[512];
    if (v->decl_rank >= 0 && v->decl_rank != rank)
        return bd_fail(b->d, BD_ERR_USAGE,
                       "%s '%s': input '%s' has rank %d in the model (%s), not %d", option,
                       bd_quote(arg), bd_quote(v->name), v->decl_rank,
                       bd_shape_str(v, declared, sizeof declared), rank);
    for (int i = 0; i < v->decl_rank; i++) {
        if (v->decl_dims[i] >= 0 && v->decl_dims[i] != dims[i])
            return bd_fail(b->d, BD_ERR_USAGE,
                           "%s '%s': input '%s' dim %d is %lld in the model (%s), "
                           "not %lld",
                           option, bd_quote(arg), bd_quote(v->name), i, (long long)v->decl_dims[i],
                           bd_shape_str(v, declared, sizeof declared), (long long)dims[i]);
        if (declares_symbol(v, i)) {
            bd_status s = symbol_bind(b, v->dim_param[i], dims[i], option, arg);
            if (s) return s;
        }
    }
    return BD_OK;
}

/* An input given twice, by --shape or --const, is ambiguous. */
static bd_status pin_once(binder *b, bool *pinned, const bd_value *v, const char *option,
                          const char *arg) {
    int idx = bd_graph_find_value(b->g, v->name);
    if (!pinned[idx]) {
        pinned[idx] = true;
        return BD_OK;
    }
    return bd_fail(b->d, BD_ERR_USAGE,
                   "%s '%s': input '%s' is already given by an earlier --shape "
                   "or --const",
                   option, bd_quote(arg), bd_quote(v->name));
}

static bd_status bind_consts(binder *b, const bd_input_binds *in, bool *pinned,
                             bd_tensor **values) {
    for (int k = 0; k < in->n_consts; k++) {
        const char *arg = in->consts[k], *eq = strchr(arg, '=');
        if (!eq || eq == arg || !eq[1])
            return bd_fail(b->d, BD_ERR_USAGE,
                           "--const '%s': expected NAME=FILE (.npy or TensorProto "
                           ".pb)",
                           bd_quote(arg));
        const char *name = bd_arena_strndup(&b->g->model->arena, arg, (size_t)(eq - arg));
        bd_value *v = find_input(b, name, "--const", arg);
        if (!v) return b->d->status;
        bd_status s = pin_once(b, pinned, v, "--const", arg);
        bd_tensor *t;
        if (!s) s = bd_tensor_read_file(b->g->model, eq + 1, &t, b->d);
        if (s) return s;
        if (v->decl_dtype && t->dtype != v->decl_dtype)
            return bd_fail(b->d, BD_ERR_USAGE,
                           "--const '%s': input '%s' is %s in the model, the file "
                           "holds %s",
                           bd_quote(arg), bd_quote(v->name), bd_dtype_name(v->decl_dtype),
                           bd_dtype_name(t->dtype));
        s = check_shape(b, v, t->rank, t->dims, "--const", arg);
        if (s) return s;
        t->name = v->name;
        values[bd_graph_find_value(b->g, v->name)] = t;
    }
    return BD_OK;
}

static bd_status bind_shapes(binder *b, const bd_input_binds *in, bool *pinned) {
    for (int k = 0; k < in->n_shapes; k++) {
        const char *arg = in->shapes[k], *name,
                   *text = split_value(&b->g->model->arena, arg, &name);
        int rank;
        int64_t dims[BD_MAX_RANK];
        if (!text || !parse_dims(text, &rank, dims))
            return bd_fail(b->d, BD_ERR_USAGE,
                           "--shape '%s': expected NAME=D1xD2x..., each D a "
                           "positive integer (at most %d)",
                           bd_quote(arg), BD_MAX_RANK);
        bd_value *v = find_input(b, name, "--shape", arg);
        if (!v) return b->d->status;
        bd_status s = pin_once(b, pinned, v, "--shape", arg);
        if (!s) s = check_shape(b, v, rank, dims, "--shape", arg);
        if (s) return s;
        v->rank = rank;
        memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    }
    return BD_OK;
}

bd_status bd_bind_inputs(bd_model *m, const bd_input_binds *in, bd_diag *d) {
    if (!in || in->n_shapes + in->n_dims + in->n_consts == 0) return BD_OK;
    binder b = {.g = m->graph, .d = d, .symbols = BD_VEC(symbol_binding)};
    bd_graph *g = m->graph;
    bool *pinned = calloc(g->values.len + 1, sizeof *pinned);
    bd_tensor **values = calloc(g->values.len + 1, sizeof *values);
    BD_ASSERT(pinned && values);
    bd_status s = bind_dims(&b, in);
    if (!s) s = bind_consts(&b, in, pinned, values);
    if (!s) s = bind_shapes(&b, in, pinned);
    /* The symbols' extents, wherever an input was not given whole. */
    for (size_t k = 0; k < g->inputs.len && !s; k++) {
        int idx = BD_VEC_AT(&g->inputs, int, k);
        bd_value *v = bd_graph_value(g, idx);
        for (int i = 0; i < v->decl_rank && !pinned[idx]; i++) {
            const symbol_binding *sym =
                declares_symbol(v, i) ? symbol_find(&b, v->dim_param[i]) : NULL;
            if (sym) v->dims[i] = sym->value;
        }
    }
    /* Frozen inputs become constants, exactly like an initializer holding the file's value. */
    for (size_t k = 0; k < g->inputs.len && !s;) {
        int idx = BD_VEC_AT(&g->inputs, int, k);
        bd_value *v = bd_graph_value(g, idx);
        bd_tensor *t = values[idx];
        if (!t) {
            k++;
            continue;
        }
        v->constant = t;
        v->dtype = t->dtype;
        v->rank = t->rank;
        memcpy(v->dims, t->dims, sizeof v->dims);
        v->flags = (v->flags & ~(unsigned)BD_VALUE_INPUT) | BD_VALUE_INITIALIZER;
        memmove(&BD_VEC_AT(&g->inputs, int, k), &BD_VEC_AT(&g->inputs, int, k + 1),
                (g->inputs.len - k - 1) * sizeof(int));
        g->inputs.len--;
    }
    free(values);
    free(pinned);
    bd_vec_free(&b.symbols);
    return s;
}

const char *bd_input_unbound(const bd_value *v, char *buf, size_t len) {
    if (v->type_kind || bd_value_shape_known(v)) return NULL;
    char name[160];
    snprintf(name, sizeof name, "%s", bd_quote(v->name));
    if (v->rank < 0) {
        snprintf(buf, len,
                 "input '%s' has no shape in the model: give it with --shape %s=D1xD2x...", name,
                 name);
        return buf;
    }
    /* The --shape to suggest: the known extents, N for each unknown one. */
    char shape[256];
    size_t o = 0;
    int first = -1;
    for (int i = 0; i < v->rank && o < sizeof shape; i++) {
        if (v->dims[i] < 0 && first < 0) first = i;
        if (v->dims[i] >= 0)
            o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", i ? "x" : "",
                                  (long long)v->dims[i]);
        else
            o += (size_t)snprintf(shape + o, sizeof shape - o, "%sN", i ? "x" : "");
    }
    if (v->dim_param[first]) {
        char sym[160];
        snprintf(sym, sizeof sym, "%s", bd_quote(v->dim_param[first]));
        snprintf(buf, len,
                 "input '%s' dim %d is symbolic ('%s'): pin it with --dim %s=N or --shape "
                 "%s=%s",
                 name, first, sym, sym, name, shape);
    } else {
        snprintf(buf, len,
                 "input '%s' dim %d has no extent in the model: pin it with --shape %s=%s", name,
                 first, name, shape);
    }
    return buf;
}
