/* emit.c — the CPU target's printer: a planned loop-nest program as one C file plus the weight
 * blob it embeds (with .incbin, so compile time stays flat in weight size).
 *
 * It decides nothing about memory or order: values live where the memory plan (plan/plan.c) put
 * them, the constants enter the blob at the plan's offsets, and run() hands the steps of the
 * schedule (schedule/schedule.c) to the runtime's thread pool: nest after nest under the operator
 * schedule, or the task DAG as static tables to the runtime's dataflow executor under the block
 * schedule. Each nest becomes a block function
 * whose body comes from the printer of its body kind (emit_*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/cpu/emit.h"
#include "target/share.h"

static const bd_emit_body_fn body_fns[BD_BODY_COUNT] = {
#define X(k, params) bd_emit_body_##k,
    BD_BODIES(X)
#undef X
};

/* ---------------------------------------------------------------- helpers for bodies */

const char *bd_emit_ptr(bd_emitter *e, int value) {
    const bd_value *v = bd_graph_value(e->graph, value);
    const bd_storage *s = &e->storage[value];
    const char *t = bd_c_type(v->dtype);
    BD_ASSERT(t);
    switch (s->kind) {
    case BD_STORE_INPUT: return bd_emit_str(e, "((const %s *)S->in[%lld])", t, (long long)s->where);
    case BD_STORE_OUTPUT: return bd_emit_str(e, "((%s *)S->out[%lld])", t, (long long)s->where);
    case BD_STORE_CONST: return bd_emit_str(e, "((const %s *)(bd_weights + %lld))", t, (long long)s->where);
    case BD_STORE_ARENA: return bd_emit_str(e, "((%s *)(S->arena + %lld))", t, (long long)s->where);
    default: BD_ASSERT(!"value without storage");
    }
    return NULL;
}

int bd_emit_nest_slot(bd_emitter *e, const bd_nest *n) {
    size_t i = (size_t)(n - (const bd_nest *)e->prog->nests.data);
    BD_ASSERT(i < e->prog->nests.len);
    if (e->nest_slot[i] < 0) e->nest_slot[i] = e->n_slots++;
    return e->nest_slot[i];
}

const bd_node *bd_emit_node(const bd_emitter *e, const bd_nest *n) {
    return n->node >= 0 ? bd_graph_node(e->graph, n->node) : NULL;
}

int64_t bd_emit_blob(bd_emitter *e, const void *data, size_t len) { return bd_blob_add(&e->blob, data, len); }

/* ---------------------------------------------------------------- the file */

void bd_emit_block_decode(bd_emitter *e, const bd_nest *n) { bd_print_block_decode(&e->pr, n); }

/* The blocks of nest n a run at batch S->batch needs: those over its first batch items (the
 * batch is iteration dim 0, the outermost in the block order). */
static const char *active_blocks(bd_emitter *e, const bd_nest *n) {
    return bd_emit_str(e, "((S->batch + %lld) / %lld * %lld)", (long long)n->tile[0] - 1,
                       (long long)n->tile[0], (long long)(n->n_blocks / n->grid[0]));
}

/* The numbers of a block function's body that say where its values live (target/share.h). */
static const char *const offset_sites[] = {"bd_weights + ", "S->arena + ", "S->packed[", "S->in[",
                                           "S->out["};

/* Block functions whose bodies print alike once those numbers are set aside (BERT-base: 163
 * block functions, 16 distinct) share one body, BD_BODY(the first nest's index), which each of
 * them calls with its own table O. For kernel i: replace[i], the text for its [start, end)
 * (NULL: as printed), and declare[i], what a compile of the file in parts without kernel i's part
 * declares besides its block function (NULL: nothing). */
static void share_bodies(bd_emitter *e, const bd_fn_text *k, size_t n, const char **replace,
                         const char **declare) {
    const char *text = e->pr.text.data;
    bd_share *sh = bd_share_find(text, k, n, offset_sites, BD_COUNT(offset_sites), "O[%d]");
    for (size_t i = 0; i < n; i++) {
        replace[i] = declare[i] = NULL;
        const int g = sh[i].group;
        if (sh[g].members < 2) continue;
        const size_t first = k[g].nest;
        const char *def = "";
        if (g == (int)i) {
            def = bd_emit_str(e, "/* the block function of nest %zu and %d more nests like it, their offsets in O */\n"
                                 "BD_BODY(%zu) {\n%s}\n", first, sh[g].members - 1, first, sh[i].text);
            declare[i] = bd_emit_str(e, "BD_BODY(%zu);\n", first);
        }
        replace[i] = bd_emit_str(e, "%s%.*sBD_KERNEL(%zu) {\n    static const int64_t O[] = {%s};\n"
                                    "    BD_B(%zu)(ctx, block, thread, O);\n}\n",
                                 def, (int)(k[i].open - k[i].start), text + k[i].start, k[i].nest,
                                 sh[i].n_numbers ? sh[i].numbers : "0", first);
    }
    bd_share_free(sh, n);
}

static void emit_block_function(bd_emitter *e, size_t i, const bd_nest *n, bool sliced,
                                bd_fn_text *kt, bd_status *s, bd_diag *d) {
    const bd_node *node = bd_emit_node(e, n);
    kt->start = e->pr.text.len;
    kt->nest = i;
    bd_emit_comment(e, "", node ? bd_emit_str(e, "nest %zu: %s node %s", i, node->op_type, node->name)
                                : bd_emit_str(e, "nest %zu", i));
    kt->open = e->pr.text.len;
    bd_emit_open(e, "BD_KERNEL(%zu)", i);
    kt->body = e->pr.text.len;
    bd_emit(e, "bd_state *S = ctx;");
    bd_emit(e, "unsigned char *scratch = S->scratch + (size_t)thread * S->scratch_stride;");
    bd_emit(e, "(void)S; (void)scratch; (void)block;");
    if (sliced) bd_emit(e, "if (block >= %s) return; /* past the batch of this run */", active_blocks(e, n));
    bd_emit_block_decode(e, n);
    if (!*s) *s = body_fns[n->body](e, n, BD_EMIT_BLOCK, d);
    kt->body_end = e->pr.text.len;
    bd_emit_close(e, NULL);
    kt->end = e->pr.text.len;
}


/* Float32 exp, tanh and erf written as straight-line code so that loops calling them vectorize
 * (libm's are scalar calls): exp by range reduction to [-ln2/2, ln2/2] and Cephes' polynomial
 * (relative error ~2e-7); tanh by the rational form the recurrent gates print (print.h's
 * BD_TANH_P / BD_TANH_Q: an exp, a division and both branches of a select had GPT-2's 64x1024
 * Tanh at 4.5 cycles an element);
 * erf by its Taylor series below 0.5 and Abramowitz-Stegun 7.1.26 above (absolute error 1.5e-7). */
static void emit_math_prelude(bd_emitter *e) {
    static const char *const lines[] = {
        "static inline __attribute__((unused)) float bd_exp_v(float x) {",
        "    float c = x < -87.33654f ? -87.33654f : x > 88.72283f ? 88.72283f : x;",
        "    float n = floorf(c * 1.44269504f + 0.5f);",
        "    n = n > 127.0f ? 127.0f : n;",
        "    float r = c - n * 0.693359375f;",
        "    r = r + n * 2.12194440e-4f;",
        "    float p = 1.9875691500e-4f;",
        "    p = p * r + 1.3981999507e-3f;",
        "    p = p * r + 8.3334519073e-3f;",
        "    p = p * r + 4.1665795894e-2f;",
        "    p = p * r + 1.6666665459e-1f;",
        "    p = p * r + 5.0000001201e-1f;",
        "    p = p * r * r + r + 1.0f;",
        "    int32_t bits = ((int32_t)n + 127) << 23;",
        "    float scale;",
        "    memcpy(&scale, &bits, sizeof scale);",
        "    float y = p * scale;",
        "    return x != x ? x : x > 88.72283f ? INFINITY : x < -87.33654f ? 0.0f : y;",
        "}",
        "static inline __attribute__((unused)) float bd_tanh_v(float x) {",
        "    float c = x < -" BD_TANH_CLAMP " ? -" BD_TANH_CLAMP " : x > " BD_TANH_CLAMP " ? " BD_TANH_CLAMP
        " : x, z = c * c;",
        "    return c * " BD_TANH_P("z") " / " BD_TANH_Q("z") ";",
        "}",
        "static inline __attribute__((unused)) float bd_erf_v(float x) {",
        "    float ax = fabsf(x), z = x * x;",
        "    float small = x * (1.1283791671f + z * (-0.3761263890f + z * (0.1128379167f"
        " + z * (-0.0268661706f + z * 0.0052239776f))));",
        "    float t = 1.0f / (1.0f + 0.3275911f * ax);",
        "    float big = 1.0f - ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t"
        " - 0.284496736f) * t + 0.254829592f) * t * bd_exp_v(-z);",
        "    return ax < 0.5f ? small : x < 0 ? -big : big;",
        "}",
    };
    for (size_t i = 0; i < BD_COUNT(lines); i++) bd_emit(e, "%s", lines[i]);
}

/* A product with a pre-packed B split by columns for bdrt_help (an LSTM's steps, emit_nn.c): part
 * i of `parts` computes columns [N i / parts, N (i + 1) / parts), cut at multiples of 32 (every
 * kernel's NR divides it); a helper thread's GEMM scratch is the start of its own scratch. */
static void emit_help_prelude(bd_emitter *e) {
    static const char *const lines[] = {
        "typedef struct bd_cols_job {",
        "    int64_t M, N, K, lda, ldc, parts;",
        "    const float *A, *B, *bias;",
        "    float *C;",
        "    void *caller_scratch;",
        "    int caller;",
        "    unsigned char *scratch;",
        "    size_t stride;",
        "} bd_cols_job;",
        "static __attribute__((unused)) void bd_cols_part(void *ctx, int64_t i, int thread) {",
        "    const bd_cols_job *j = ctx;",
        "    const int64_t n0 = j->N * i / j->parts / 32 * 32;",
        "    const int64_t n1 = i + 1 == j->parts ? j->N : j->N * (i + 1) / j->parts / 32 * 32;",
        "    void *gs = thread == j->caller ? j->caller_scratch",
        "                                   : (void *)(((uintptr_t)(j->scratch + (size_t)thread * j->stride) + 63) & ~(uintptr_t)63);",
        "    bd_f32_gemm_packed_b(j->M, n0, n1, j->K, j->A, j->lda, 0, j->B, j->C, j->ldc, j->bias, NULL, 0, 0, 0.0f, 0.0f, gs);",
        "}",
    };
    for (size_t i = 0; i < BD_COUNT(lines); i++) bd_emit(e, "%s", lines[i]);
}

/* The scalar helpers every C-family printer shares (target/print.c), with C's bit casts, then the
 * vectorisable float math. */
static void emit_prelude(bd_emitter *e) {
    bd_emit(e, "static inline __attribute__((unused)) float bd_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }");
    bd_emit(e, "static inline __attribute__((unused)) uint32_t bd_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }");
    bd_emit(e, "static inline __attribute__((unused)) uint64_t bd_d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }");
    bd_print_scalar_helpers(&e->pr, "static inline __attribute__((unused))", false);
    emit_math_prelude(e);
    emit_help_prelude(e);
}

/* A static integer table, 16 numbers a line. */
static void emit_table(bd_emitter *e, const char *type, const char *name, const int64_t *v,
                       size_t n) {
    bd_emit_open(e, "static const %s %s[%zu] =", type, name, n ? n : 1);
    if (!n) bd_emit(e, "0");
    for (size_t i = 0; i < n; i += 16) {
        char line[16 * 24], *o = line;
        for (size_t j = i; j < n && j < i + 16; j++)
            o += snprintf(o, sizeof line - (size_t)(o - line), "%lld,", (long long)v[j]);
        bd_emit(e, "%s", line);
    }
    bd_emit_close(e, ";");
}

static void emit_table_i32(bd_emitter *e, const char *name, const int *v, size_t n) {
    int64_t *w = malloc((n + 1) * sizeof *w);
    BD_ASSERT(w);
    for (size_t i = 0; i < n; i++) w[i] = v[i];
    emit_table(e, "int32_t", name, w, n);
    free(w);
}

/* The block schedule's task DAG as the runtime's bdrt_dag (bdrt.h): the tasks, their
 * successors, and for its test mode the arena values each task touches. */
static void emit_dag(bd_emitter *e, const bd_schedule *sch, const bd_memory_plan *mem) {
    const bd_program *p = e->prog;
    bd_graph *g = e->graph;
    size_t nn = p->nests.len, nv = g->values.len;
    int *fn_of = malloc((nn + 1) * sizeof *fn_of), n_fns = 0;
    int *value_id = malloc((nv + 1) * sizeof *value_id), n_values = 0;
    BD_ASSERT(fn_of && value_id);
    bd_emit_open(e, "static const bdrt_task_fn bd_dag_fns[] =");
    for (size_t i = 0; i < nn; i++) {
        fn_of[i] = -1;
        if (BD_VEC_AT(&p->nests, bd_nest, i).n_blocks > 0) {
            fn_of[i] = n_fns++;
            bd_emit(e, "BD_K(%zu),", i);
        }
    }
    if (!n_fns) bd_emit(e, "NULL");
    bd_emit_close(e, ";");
    /* Tasks are emitted in the run order (bd_schedule_rank): emitted task r is the schedule's
     * task at[r], so the runtime's one-thread order and its lowest-first queues follow it. */
    int nt = sch->n_tasks;
    int *at = malloc(((size_t)nt + 1) * sizeof *at),
        *task_fn = malloc(((size_t)nt + 1) * sizeof *task_fn),
        *task_block = malloc(((size_t)nt + 1) * sizeof *task_block),
        *task_blocks = malloc(((size_t)nt + 1) * sizeof *task_blocks),
        *n_preds = malloc(((size_t)nt + 1) * sizeof *n_preds),
        *succ_start = malloc(((size_t)nt + 2) * sizeof *succ_start),
        *succ = malloc(((size_t)sch->n_edges + 1) * sizeof *succ);
    bd_vec touch_start = BD_VEC(int), touch = BD_VEC(int);
    BD_ASSERT(at && task_fn && task_block && task_blocks && n_preds && succ_start && succ);
    for (int t = 0; t < nt; t++)
        at[sch->rank ? sch->rank[t] : t] = t;
    int64_t *offsets = malloc((nv + 1) * sizeof *offsets), *bytes = malloc((nv + 1) * sizeof *bytes);
    BD_ASSERT(offsets && bytes);
    for (size_t v = 0; v < nv; v++) {
        value_id[v] = -1;
        if (mem->storage[v].kind != BD_STORE_ARENA || bd_program_storage_root(p, (int)v) != (int)v) continue;
        const bd_value *val = bd_graph_value(g, (int)v);
        int64_t numel = 1, nb = 0;
        bd_dims_numel(val->rank, val->dims, &numel);
        bd_dtype_nbytes(val->dtype, numel, &nb);
        offsets[n_values] = mem->storage[v].where;
        bytes[n_values] = nb;
        value_id[v] = n_values++;
    }
    succ_start[0] = 0;
    for (int r = 0; r < nt; r++) {
        int t = at[r], k = sch->task_nest[t];
        n_preds[r] = sch->n_preds[t];
        succ_start[r + 1] = succ_start[r];
        for (int j = sch->succ_start[t]; j < sch->succ_start[t + 1]; j++)
            succ[succ_start[r + 1]++] = sch->rank ? sch->rank[sch->succ[j]] : sch->succ[j];
        *(int *)bd_vec_push(&touch_start) = (int)touch.len;
        task_fn[r] = k >= 0 ? fn_of[k] : -1;
        task_block[r] = (int)sch->task_block[t];
        task_blocks[r] = 0;
        if (k < 0) continue;
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, k);
        task_blocks[r] = (int)n->n_blocks;
        for (int j = 0; j < n->n_operands; j++) {
            /* a view or an in-place concat part is its storage root */
            int id = value_id[bd_program_storage_root(p, n->operands[j].value)];
            bool again = false;
            for (int i = 0; i < j && !again; i++)
                again = bd_program_storage_root(p, n->operands[i].value) ==
                        bd_program_storage_root(p, n->operands[j].value);
            if (id >= 0 && !again) *(int *)bd_vec_push(&touch) = id;
        }
    }
    *(int *)bd_vec_push(&touch_start) = (int)touch.len;
    emit_table_i32(e, "bd_dag_task_fn", task_fn, (size_t)nt);
    emit_table_i32(e, "bd_dag_task_block", task_block, (size_t)nt);
    emit_table_i32(e, "bd_dag_task_blocks", task_blocks, (size_t)nt);
    emit_table_i32(e, "bd_dag_n_preds", n_preds, (size_t)nt);
    emit_table_i32(e, "bd_dag_succ_start", succ_start, (size_t)nt + 1);
    emit_table_i32(e, "bd_dag_succ", succ, (size_t)sch->n_edges);
    emit_table(e, "int64_t", "bd_dag_value_offset", offsets, (size_t)n_values);
    emit_table(e, "int64_t", "bd_dag_value_bytes", bytes, (size_t)n_values);
    emit_table_i32(e, "bd_dag_use_start", touch_start.data, touch_start.len);
    emit_table_i32(e, "bd_dag_use", touch.data, touch.len);
    bd_emit_open(e, "static const bdrt_dag bd_dag =");
    bd_emit(e, "%d, bd_dag_fns, bd_dag_task_fn, bd_dag_task_block, bd_dag_n_preds, bd_dag_succ_start, "
               "bd_dag_succ,", nt);
    bd_emit(e, "%d, bd_dag_value_offset, bd_dag_value_bytes, bd_dag_use_start, bd_dag_use, %lld, %d,",
            n_values, (long long)mem->arena_bytes, sch->chain ? 1 : 0);
    bd_emit(e, "bd_dag_task_blocks");
    bd_emit_close(e, ";");
    bd_emit_blank(e);
    free(fn_of);
    free(value_id);
    free(at);
    free(task_fn);
    free(task_block);
    free(task_blocks);
    free(n_preds);
    free(succ_start);
    free(succ);
    free(offsets);
    free(bytes);
    bd_vec_free(&touch_start);
    bd_vec_free(&touch);
}

/* Text put into the printed file at byte `at` of it, once it is complete, in place of the
 * `skip` bytes from there. */
typedef struct bd_insertion {
    size_t at, skip;
    const char *text;
} bd_insertion;

static void insert_at(bd_vec *ins, size_t at, size_t skip, const char *text) {
    bd_insertion *x = bd_vec_push(ins);
    x->at = at;
    x->skip = skip;
    x->text = text;
}

/* The file compiles whole, or in parts at once (the native build's parallel compiles, see
 * driver/compile.c): each compile with -DBD_PART_LO=a -DBD_PART_HI=b (0 <= a < b <= BD_PARTS)
 * defines the block functions of parts [a, b), declares the others, and the one holding part 0
 * the rest. The parts split the block functions' text in BD_PARTS equal shares, in nest order,
 * whatever the number of compiles, so the file is the same on every machine. Across parts the
 * functions need external names: prefixed with the weights' symbol (unique per --lib) and
 * hidden. A body shared by several block functions (share_bodies) is kept out of the compiler's
 * interprocedural passes (BD_OPAQUE), as if compiled apart: never inlined into its callers, since
 * the point of sharing it is to compile it once, and never specialised or judged from them (gcc
 * 12 at -O1 and above deleted the calls of one such body, a GridSample's, from both block
 * functions calling it; the body itself compiled right). */
static void emit_parts_prelude(bd_emitter *e, const bd_emit_opts *opts) {
    bd_emit(e, "#if defined(__GNUC__) && !defined(__clang__)");
    bd_emit(e, "#define BD_OPAQUE __attribute__((noinline, noipa))");
    bd_emit(e, "#else");
    bd_emit(e, "#define BD_OPAQUE __attribute__((noinline))");
    bd_emit(e, "#endif");
    bd_emit(e, "#ifdef BD_PART_LO /* compiled in parts */");
    bd_emit(e, "#define BD_HERE(part) ((part) >= BD_PART_LO && (part) < BD_PART_HI)");
    bd_emit(e, "#define BD_K(i) %s_k##i", opts->weights_symbol);
    bd_emit(e, "#define BD_KERNEL(i) __attribute__((visibility(\"hidden\"))) void BD_K(i)(void *ctx, int64_t block, int thread)");
    bd_emit(e, "#define BD_B(i) %s_b##i", opts->weights_symbol);
    bd_emit(e, "#define BD_BODY(i) __attribute__((visibility(\"hidden\"))) BD_OPAQUE void BD_B(i)(void *ctx, int64_t block, int thread, const int64_t *O)");
    bd_emit(e, "#else");
    bd_emit(e, "#define BD_HERE(part) 1");
    bd_emit(e, "#define BD_K(i) k##i");
    bd_emit(e, "#define BD_KERNEL(i) static void BD_K(i)(void *ctx, int64_t block, int thread)");
    bd_emit(e, "#define BD_B(i) b##i");
    bd_emit(e, "#define BD_BODY(i) static BD_OPAQUE void BD_B(i)(void *ctx, int64_t block, int thread, const int64_t *O)");
    bd_emit(e, "#endif");
    bd_emit_blank(e);
}

bd_status bd_emit_c(const bd_program *p, const bd_schedule *sched, const bd_memory_plan *mem,
                    const bd_emit_opts *opts, bd_c_program *out, bd_diag *d) {
    memset(out, 0, sizeof *out);
    bd_emitter e = {0};
    e.pr.text = BD_VEC(char);
    e.prog = p;
    e.graph = p->graph;
    e.storage = mem->storage;
    e.bf16 = opts->precision == BD_PRECISION_BF16;
    e.nest_slot = malloc((p->nests.len + 1) * sizeof *e.nest_slot);
    BD_ASSERT(e.nest_slot);
    for (size_t i = 0; i < p->nests.len; i++) e.nest_slot[i] = -1;
    /* The constants first, at the offsets the plan gave them. */
    for (size_t i = 0; i < mem->constants.len; i++) {
        const bd_tensor *t = bd_graph_value(e.graph, BD_VEC_AT(&mem->constants, int, i))->constant;
        int64_t at = bd_blob_add_ref(&e.blob, t->data, (size_t)t->nbytes);
        BD_ASSERT(at == mem->storage[BD_VEC_AT(&mem->constants, int, i)].where);
    }
    bd_status s = BD_OK;

    /* The file name only: the same model compiled from another folder gives the same source. */
    const char *base = strrchr(e.graph->model->path, '/');
    bd_emit_comment(&e, "Generated by bdc " BDC_VERSION " from ", base ? base + 1 : e.graph->model->path);
    bd_emit(&e, "/* Do not edit: regenerate with bdc compile. */");
    bd_emit(&e, "#include <math.h>");
    bd_emit(&e, "#include <stdint.h>");
    bd_emit(&e, "#include <stdlib.h>");
    bd_emit(&e, "#include <string.h>");
    bd_emit(&e, "#include \"bdrt.h\"");
    bd_emit(&e, "#include \"bd_kernels.h\"");
    bd_emit_blank(&e);
    if (opts->library) {
        bd_emit(&e, "extern const unsigned char %s[]; /* weights.S: .incbin of the constants */",
                opts->weights_symbol);
        bd_emit(&e, "#define bd_weights %s", opts->weights_symbol);
    } else {
        bd_emit(&e, "#define bd_weights bdrt_weights /* appended to the executable (bdrt.h) */");
    }
    emit_prelude(&e);
    bd_emit(&e, "#define BD_ARENA_BYTES %lldu", (long long)mem->arena_bytes);
    bd_emit(&e, "#define BD_SCRATCH_BYTES %lldu", (long long)mem->scratch_bytes);
    /* The packed slots are counted while printing; the state struct uses a generous bound
     * patched below. */
    size_t state_at = e.pr.text.len;
    bd_emit(&e, "typedef struct bd_state {");
    bd_emit(&e, "    bdrt_pool *pool;");
    bd_emit(&e, "    bdrt_dag_exec *dag;");
    bd_emit(&e, "    unsigned char *arena, *scratch;");
    bd_emit(&e, "    size_t scratch_stride;");
    bd_emit(&e, "    const void *const *in;");
    bd_emit(&e, "    void *const *out;");
    bd_emit(&e, "    void *packed[BD_PACKED_SLOTS];");
    bd_emit(&e, "    int64_t batch; /* a ranged batch: this run's (bd_set_batch) */");
    bd_emit(&e, "} bd_state;");
    bd_emit_blank(&e);

    emit_parts_prelude(&e, opts);
    /* Nests over an empty domain have nothing to run and get no code. */
    bd_fn_text *kt = malloc((p->nests.len + 1) * sizeof *kt);
    size_t nk = 0;
    BD_ASSERT(kt);
    for (size_t i = 0; i < p->nests.len && !s; i++) {
        if (BD_VEC_AT(&p->nests, bd_nest, i).n_blocks == 0) continue;
        emit_block_function(&e, i, &BD_VEC_AT(&p->nests, bd_nest, i),
                            opts->batch_sliced && opts->batch_sliced[i], &kt[nk++], &s, d);
        bd_emit_blank(&e);
    }
    size_t tail_at = e.pr.text.len;

    bool dataflow = sched->mode == BD_SCHEDULE_BLOCK;
    if (dataflow && !s) emit_dag(&e, sched, mem);

    /* destroy / create / run */
    bd_emit_open(&e, "static void bd_destroy(void *inst)");
    bd_emit(&e, "bd_state *S = inst;");
    bd_emit(&e, "if (!S) return;");
    bd_emit(&e, "for (int i = 0; i < (int)(sizeof S->packed / sizeof S->packed[0]); i++) bdrt_free(S->packed[i]);");
    bd_emit(&e, "if (S->pool) bdrt_pool_destroy(S->pool);");
    if (dataflow) bd_emit(&e, "bdrt_dag_exec_destroy(S->dag);");
    bd_emit(&e, "bdrt_free(S->arena);");
    bd_emit(&e, "bdrt_free(S->scratch);");
    bd_emit(&e, "free(S);");
    bd_emit_close(&e, NULL);
    bd_emit_blank(&e);
    bd_emit_open(&e, "static void *bd_create(int threads)");
    bd_emit(&e, "bd_state *S = calloc(1, sizeof *S);");
    bd_emit(&e, "if (!S) return NULL;");
    bd_emit(&e, "S->pool = bdrt_pool_create(threads);");
    bd_emit(&e, "if (!S->pool) { bd_destroy(S); return NULL; }");
    bd_emit(&e, "S->batch = %lld;", (long long)e.graph->batch_max);
    if (dataflow) {
        bd_emit(&e, "S->dag = bdrt_dag_exec_create(&bd_dag);");
        bd_emit(&e, "if (!S->dag) { bd_destroy(S); return NULL; }");
    }
    bd_emit(&e, "S->arena = bdrt_alloc(BD_ARENA_BYTES ? BD_ARENA_BYTES : 64);");
    bd_emit(&e, "S->scratch_stride = BD_SCRATCH_BYTES;");
    bd_emit(&e, "S->scratch = bdrt_alloc((size_t)bdrt_pool_threads(S->pool) * BD_SCRATCH_BYTES + 64);");
    bd_emit(&e, "if (!S->arena || !S->scratch) { bd_destroy(S); return NULL; }");
    for (size_t i = 0; i < p->nests.len && !s; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (n->n_blocks > 0) s = body_fns[n->body](&e, n, BD_EMIT_SETUP, d);
    }
    bd_emit(&e, "return S;");
    bd_emit_close(&e, NULL);
    bd_emit_blank(&e);
    bd_emit_open(&e, "static int bd_run(void *inst, const void *const *in, void *const *out)");
    bd_emit(&e, "bd_state *S = inst;");
    bd_emit(&e, "S->in = in;");
    bd_emit(&e, "S->out = out;");
    /* denormal operands cost up to 100x on x86 (the runtime's bdrt_fp_flush_denormals) */
    if (!opts->keep_denormals) bd_emit(&e, "const unsigned fp_saved = bdrt_fp_flush_denormals();");
    for (int i = 0; i < sched->n_steps && !dataflow; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, sched->order[i]);
        bool sliced = opts->batch_sliced && opts->batch_sliced[sched->order[i]];
        if (n->n_blocks > 0)
            bd_emit(&e, "bdrt_pool_run(S->pool, %s, BD_K(%d), S);",
                    sliced ? active_blocks(&e, n) : bd_emit_str(&e, "%lld", (long long)n->n_blocks), sched->order[i]);
    }
    if (dataflow) bd_emit(&e, "bdrt_dag_run(S->dag, S->pool, S, S->arena);");
    if (!opts->keep_denormals) bd_emit(&e, "bdrt_fp_restore(fp_saved);");
    bd_emit(&e, "return 0;");
    bd_emit_close(&e, NULL);
    bd_emit_blank(&e);

    /* For --profile: each nest's block function and a name for it. */
    int n_named = 0;
    bd_emit_open(&e, "static const char *const bd_nest_names[] =");
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (!n->n_blocks) continue;
        const bd_node *node = bd_emit_node(&e, n);
        char label[64];
        snprintf(label, sizeof label, "k%zu %s ", i, node ? node->op_type : "");
        bd_emit(&e, "%s \"\" %s,", bd_print_string_literal(&e.pr, label),
                bd_print_string_literal(&e.pr, node ? node->name : ""));
        n_named++;
    }
    if (!n_named) bd_emit(&e, "NULL");
    bd_emit_close(&e, ";");
    bd_emit_open(&e, "static const bdrt_task_fn bd_nest_fns[] =");
    for (size_t i = 0; i < p->nests.len; i++)
        if (BD_VEC_AT(&p->nests, bd_nest, i).n_blocks) bd_emit(&e, "BD_K(%zu),", i);
    if (!n_named) bd_emit(&e, "NULL");
    bd_emit_close(&e, ";");
    bd_print_io_table(&e.pr, "static const bdrt_io", "bd_inputs", e.graph, &e.graph->inputs, true);
    bd_print_io_table(&e.pr, "static const bdrt_io", "bd_outputs", e.graph, &e.graph->outputs, true);
    if (e.graph->batch_max)
        bd_emit(&e, "static void bd_set_batch(void *inst, int64_t batch) { ((bd_state *)inst)->batch = batch; }");
    bd_emit_open(&e, "static const bdrt_model bd_model =");
    const size_t weights_bytes = e.blob.len; /* every constant and table is in by now */
    bd_emit(&e, "%s, %zu, %zu, bd_inputs, bd_outputs, bd_create, bd_run, bd_destroy, %d, bd_nest_names, bd_nest_fns, NULL, NULL, NULL, %s, %lld, NULL",
            bd_print_string_literal(&e.pr, e.graph->name[0] ? e.graph->name : "model"), e.graph->inputs.len, e.graph->outputs.len, n_named,
            e.graph->batch_max ? "bd_set_batch" : "NULL", opts->library ? -1LL : (long long)weights_bytes);
    bd_emit_close(&e, ";");
    bd_emit_blank(&e);
    if (opts->library) {
        const char *nm = opts->lib_name;
        /* The header's descriptor type, declared identically here (same tag, same members). */
        bd_emit(&e, "typedef struct %s_io { const char *name; int dtype; int rank; int64_t dims[12]; } %s_io;", nm, nm);
        const char *decl = bd_emit_str(&e, "const %s_io", nm);
        bd_print_io_table(&e.pr, decl, bd_emit_str(&e, "%s_inputs", nm), e.graph, &e.graph->inputs, false);
        bd_print_io_table(&e.pr, decl, bd_emit_str(&e, "%s_outputs", nm), e.graph, &e.graph->outputs, false);
        bd_emit(&e, "void *%s_create(int threads) { return bd_create(threads); }", nm);
        bd_emit(&e, "int %s_run(void *instance, const void *const *inputs, void *const *outputs) "
                    "{ return bd_run(instance, inputs, outputs); }", nm);
        bd_emit(&e, "void %s_destroy(void *instance) { bd_destroy(instance); }", nm);
        if (e.graph->batch_max)
            bd_emit(&e, "int %s_set_batch(void *instance, int64_t batch) { if (batch < %lld || batch > %lld) return 6; "
                        "bd_set_batch(instance, batch); return 0; }",
                    nm, (long long)e.graph->batch_min, (long long)e.graph->batch_max);
        bd_emit(&e, "const bdrt_model *%s_descriptor(void) { return &bd_model; }", nm);
    } else {
        bd_emit(&e, "int main(int argc, char **argv) { return bdrt_main(argc, argv, &bd_model); }");
    }

    /* Now that the slot count is known, define it ahead of the state struct; print once the
     * bodies several block functions share (share_bodies); guard each block function with its part,
     * and the rest with part 0 (emit_parts_prelude). */
    bd_vec ins = BD_VEC(bd_insertion);
    insert_at(&ins, state_at, 0, bd_emit_str(&e, "#define BD_PACKED_SLOTS %d\n", e.n_slots ? e.n_slots : 1));
    const char **replace = malloc((nk + 1) * sizeof *replace), **declare = malloc((nk + 1) * sizeof *declare);
    BD_ASSERT(replace && declare);
    *(char *)bd_vec_push(&e.pr.text) = 0; /* read as a string, then dropped */
    share_bodies(&e, kt, s ? 0 : nk, replace, declare);
    e.pr.text.len--;
    size_t kbytes = 0, done = 0;
    for (size_t k = 0; k < nk && !s; k++) kbytes += replace[k] ? strlen(replace[k]) : kt[k].end - kt[k].start;
    for (size_t k = 0; k < nk && !s; k++) {
        int part = (int)(done * BD_PARTS / (kbytes ? kbytes : 1));
        done += replace[k] ? strlen(replace[k]) : kt[k].end - kt[k].start;
        insert_at(&ins, kt[k].start, 0, bd_emit_str(&e, "#if BD_HERE(%d)\n", part));
        if (replace[k]) insert_at(&ins, kt[k].start, kt[k].end - kt[k].start, replace[k]);
        insert_at(&ins, kt[k].end, 0, bd_emit_str(&e, "#else\nBD_KERNEL(%zu);\n%s#endif\n", kt[k].nest,
                                                 declare[k] ? declare[k] : ""));
    }
    insert_at(&ins, tail_at, 0, "#if BD_HERE(0)\n");
    insert_at(&ins, e.pr.text.len, 0, "#endif\n");
    free(kt);
    free(replace);
    free(declare);
    bd_vec final = BD_VEC(char);
    size_t next = 0;
    for (size_t i = 0; i <= e.pr.text.len;) {
        size_t skip = 0;
        for (; next < ins.len && BD_VEC_AT(&ins, bd_insertion, next).at == i; next++) {
            const bd_insertion *x = &BD_VEC_AT(&ins, bd_insertion, next);
            bd_vec_append(&final, x->text, strlen(x->text));
            if (x->skip > skip) skip = x->skip;
        }
        if (skip) {
            i += skip;
            continue;
        }
        if (i < e.pr.text.len) *(char *)bd_vec_push(&final) = BD_VEC_AT(&e.pr.text, char, i);
        i++;
    }
    bd_vec_free(&ins);
    *(char *)bd_vec_push(&final) = 0;

    BD_ASSERT(e.blob.len == weights_bytes);
    if (!s) {
        out->source = final.data;
        out->source_len = final.len - 1;
        out->weights = e.blob;
        if (opts->library) out->header = bd_print_lib_header(e.graph, opts->lib_name, "-lpthread -lm", false);
    } else {
        bd_vec_free(&final);
        bd_blob_free(&e.blob);
    }
    free(e.nest_slot);
    bd_printer_free(&e.pr);
    return s;
}

void bd_c_program_free(bd_c_program *c) {
    free(c->source);
    bd_blob_free(&c->weights);
    free(c->header);
    memset(c, 0, sizeof *c);
}
