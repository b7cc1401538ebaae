/* emit.c (gpu) — the GPU printer: a planned nest program as device code and a C host program,
 * in the dialect of the target's table (see gpu.h).
 *
 * Memory: three device buffers the plan's offsets address directly: the weights (the constant
 * blob, uploaded once at create, plus the tables this printer appends), the arena, and one io
 * buffer holding every graph input and output at 256-byte aligned offsets (run() copies the
 * caller's inputs in and the outputs back).
 *
 * Order: `--schedule op` launches one kernel per nest in the schedule's order on one stream (each
 * launch waits for the one before). `--schedule block` launches one persistent kernel with as
 * many CTAs as the device holds at once (a cooperative launch, refused otherwise). The block DAG
 * (schedule/schedule.c, with the memory plan's hazard edges) is printed as tables: per task its
 * nest and block, and the counters it waits on with their expected counts. A completed task
 * stores the run's epoch into its own flag (release) and bumps its nest's completion counter; a
 * task waiting on a producer block waits for flag == epoch, one waiting on a nest's completion
 * event for counter == blocks * epoch: counters grow with the epoch, so runs need no reset kernel
 * (the host resets them before they could wrap). One thread spins (acquire loads, sleeping in
 * between), the rest wait at a barrier. Which CTA runs which task is decided at create(), for
 * the number of CTAs this device holds, by the runtime's list scheduler over the task costs
 * printed here (bdrt_gpu_assign); every CTA runs its tasks in task order, a topological order,
 * which guarantees progress. Every spin is bounded: a stuck kernel stops and the host reports
 * the task and every CTA's position instead of hanging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/gpu/gpu.h"
#include "target/share.h"

enum { IO_ALIGN = 256 };

static long long ll(int64_t v) { return (long long)v; }

/* A C string literal per line of device source: only '\\', '"' and bytes outside printable
 * ASCII need escapes (the device source holds model strings only inside comments, already made
 * harmless). */
static void print_source_literal(bd_printer *p, const bd_vec *text) {
    const char *s = text->data;
    size_t n = text->len, i = 0;
    bd_print_line(p, "static const char bd_device_source[] =");
    while (i < n) {
        bd_vec line = BD_VEC(char);
        const char *q = "  \"";
        for (; *q; q++) *(char *)bd_vec_push(&line) = *q;
        for (; i < n && s[i] != '\n'; i++) {
            unsigned char c = (unsigned char)s[i];
            char esc[8];
            if (c == '\\' || c == '"') snprintf(esc, sizeof esc, "\\%c", c);
            else if (c < 32 || c > 126) snprintf(esc, sizeof esc, "\\%03o", c);
            else snprintf(esc, sizeof esc, "%c", c);
            for (q = esc; *q; q++) *(char *)bd_vec_push(&line) = *q;
        }
        i++;
        for (q = "\\n\""; *q; q++) *(char *)bd_vec_push(&line) = *q;
        *(char *)bd_vec_push(&line) = 0;
        bd_print_line(p, "%s", (char *)line.data);
        bd_vec_free(&line);
    }
    bd_print_line(p, "  \"\";");
}

/* Appends an int32 table to the blob; its offset. */
static int64_t blob_i32(bd_blob *blob, const int32_t *v, size_t n) {
    int32_t zero = 0;
    return bd_blob_add(blob, n ? (const void *)v : (const void *)&zero, n ? n * 4 : 4);
}

static void emit_table_i64(bd_printer *p, const char *name, const int64_t *v, size_t n) {
    bd_print_open(p, "static const int64_t %s[%zu] =", name, n ? n : 1);
    if (!n) bd_print_line(p, "0");
    for (size_t i = 0; i < n; i++) bd_print_line(p, "%lld,", ll(v[i]));
    bd_print_close(p, ";");
}

/* The block schedule as device tables. Block tasks come first in the schedule's numbering; an
 * event task stands for its nest's completion counter. */
typedef struct dag_tables {
    int n_tasks;
    int64_t off_nest, off_block, off_wait_start, off_waits, off_mult, off_cost;
    uint32_t max_mult;
    double *cost;
} dag_tables;

static void build_dag(const bd_program *p, const bd_schedule *s, bd_blob *blob, dag_tables *t) {
    int nt = 0;
    while (nt < s->n_tasks && s->task_nest[nt] >= 0) nt++;
    for (int u = nt; u < s->n_tasks; u++) BD_ASSERT(s->task_nest[u] < 0); /* block tasks come first */
    int n_nests = (int)p->nests.len;
    /* predecessors of every task, from the successor lists */
    int *pred_start = calloc((size_t)s->n_tasks + 2, sizeof *pred_start);
    int *preds = malloc(((size_t)s->n_edges + 1) * sizeof *preds);
    int32_t *nest = malloc(((size_t)nt + 1) * 4), *block = malloc(((size_t)nt + 1) * 4);
    int32_t *wstart = malloc(((size_t)nt + 2) * 4);
    bd_vec waits = BD_VEC(int32_t), mults = BD_VEC(int32_t);
    t->cost = malloc(((size_t)nt + 1) * sizeof *t->cost);
    BD_ASSERT(pred_start && preds && nest && block && wstart && t->cost);
    for (int u = 0; u < s->n_tasks; u++)
        for (int e = s->succ_start[u]; e < s->succ_start[u + 1]; e++) pred_start[s->succ[e] + 1]++;
    for (int u = 0; u < s->n_tasks; u++) pred_start[u + 1] += pred_start[u];
    int *fill = malloc(((size_t)s->n_tasks + 1) * sizeof *fill);
    BD_ASSERT(fill);
    memcpy(fill, pred_start, (size_t)s->n_tasks * sizeof *fill);
    for (int u = 0; u < s->n_tasks; u++)
        for (int e = s->succ_start[u]; e < s->succ_start[u + 1]; e++) preds[fill[s->succ[e]]++] = u;
    t->max_mult = 1;
    for (int task = 0; task < nt; task++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, s->task_nest[task]);
        nest[task] = s->task_nest[task];
        block[task] = (int32_t)s->task_block[task];
        t->cost[task] = bd_gpu_block_cost(p->graph, n);
        wstart[task] = (int32_t)waits.len;
        for (int e = pred_start[task]; e < pred_start[task + 1]; e++) {
            int u = preds[e];
            int32_t counter = u, mult = 1;
            if (u >= nt) { /* an event: its nest's completion counter, reached by all its blocks */
                int k = -1 - s->task_nest[u];
                const bd_nest *pn = &BD_VEC_AT(&p->nests, bd_nest, k);
                BD_ASSERT(pred_start[u + 1] - pred_start[u] == pn->n_blocks);
                counter = nt + k;
                mult = (int32_t)pn->n_blocks;
                if ((uint32_t)mult > t->max_mult) t->max_mult = (uint32_t)mult;
            }
            *(int32_t *)bd_vec_push(&waits) = counter;
            *(int32_t *)bd_vec_push(&mults) = mult;
        }
    }
    wstart[nt] = (int32_t)waits.len;
    (void)n_nests;
    t->n_tasks = nt;
    t->off_nest = blob_i32(blob, nest, (size_t)nt);
    t->off_block = blob_i32(blob, block, (size_t)nt);
    t->off_wait_start = blob_i32(blob, wstart, (size_t)nt + 1);
    t->off_waits = blob_i32(blob, waits.data, waits.len);
    t->off_mult = blob_i32(blob, mults.data, mults.len);
    float *cost = malloc(((size_t)nt + 1) * sizeof *cost);
    BD_ASSERT(cost);
    for (int i = 0; i < nt; i++) cost[i] = (float)t->cost[i];
    t->off_cost = bd_blob_add(blob, cost, ((size_t)nt + 1) * sizeof *cost);
    free(cost);
    free(pred_start);
    free(preds);
    free(fill);
    free(nest);
    free(block);
    free(wstart);
    bd_vec_free(&waits);
    bd_vec_free(&mults);
}

static void emit_persistent_kernel(bd_printer *dv, const bd_program *p, const dag_tables *t) {
    int nt = t->n_tasks, nn = (int)p->nests.len;
    int st = nt + nn; /* status words: stuck, its task, its CTA, then every CTA's position */
    bd_print_line(dv, "#define BD_SPIN_LIMIT 1000000000ll");
    bd_print_open(dv, "BD_KERNEL void bd_persistent(BD_G unsigned char *arena, BD_G const unsigned char *weights, "
                      "BD_G unsigned char *io, BD_G uint32_t *sync, BD_G const int32_t *plan, uint32_t epoch)");
    bd_print_line(dv, "BD_SHARED int bd_go;");
    bd_print_line(dv, "BD_SHARED float smem[BD_SMEM_FLOATS] __attribute__((aligned(16)));");
    bd_print_line(dv, "BD_G const int32_t *task_nest = (BD_G const int32_t *)(weights + %lld);", ll(t->off_nest));
    bd_print_line(dv, "BD_G const int32_t *task_block = (BD_G const int32_t *)(weights + %lld);", ll(t->off_block));
    bd_print_line(dv, "BD_G const int32_t *wait_start = (BD_G const int32_t *)(weights + %lld);", ll(t->off_wait_start));
    bd_print_line(dv, "BD_G const int32_t *waits = (BD_G const int32_t *)(weights + %lld);", ll(t->off_waits));
    bd_print_line(dv, "BD_G const uint32_t *wait_mult = (BD_G const uint32_t *)(weights + %lld);", ll(t->off_mult));
    bd_print_line(dv, "const int32_t cta = (int32_t)BD_BLOCK_ID, n_ctas = plan[0];");
    bd_print_line(dv, "BD_G const int32_t *mine = plan + 2 + n_ctas;");
    bd_print_open(dv, "for (int32_t q = plan[1 + cta]; q < plan[2 + cta]; q++)");
    bd_print_line(dv, "const int32_t t = mine[q];");
    bd_print_open(dv, "if (BD_THREAD_ID == 0)");
    bd_print_line(dv, "int ok = 1;");
    bd_print_open(dv, "for (int32_t w = wait_start[t]; ok && w < wait_start[t + 1]; w++)");
    bd_print_line(dv, "const uint32_t want = wait_mult[w] * epoch;");
    bd_print_line(dv, "BD_G uint32_t *c = sync + waits[w];");
    bd_print_line(dv, "int64_t spins = 0;");
    bd_print_open(dv, "while ((int32_t)(BD_LOAD_ACQUIRE(c) - want) < 0)");
    bd_print_line(dv, "if (++spins > BD_SPIN_LIMIT || ((spins & 1023) == 0 && BD_LOAD_ACQUIRE(sync + %d) != 0)) { ok = 0; break; }", st);
    bd_print_line(dv, "BD_SLEEP();");
    bd_print_close(dv, NULL);
    bd_print_close(dv, NULL);
    bd_print_line(dv, "sync[%d + cta] = (uint32_t)q;", st + 3);
    bd_print_open(dv, "if (!ok && BD_LOAD_ACQUIRE(sync + %d) == 0)", st);
    bd_print_line(dv, "sync[%d] = (uint32_t)t; sync[%d] = (uint32_t)cta;", st + 1, st + 2);
    bd_print_line(dv, "BD_STORE_RELEASE(sync + %d, 1u);", st);
    bd_print_close(dv, NULL);
    bd_print_line(dv, "bd_go = ok;");
    bd_print_close(dv, NULL);
    bd_print_line(dv, "BD_BARRIER();");
    bd_print_line(dv, "if (!bd_go) return;");
    bd_print_open(dv, "switch (task_nest[t])");
    for (size_t i = 0; i < p->nests.len; i++)
        if (BD_VEC_AT(&p->nests, bd_nest, i).n_blocks > 0)
            bd_print_line(dv, "case %zu: b%zu(arena, weights, io, task_block[t], smem); break;", i, i);
    bd_print_line(dv, "default: break;");
    bd_print_close(dv, NULL);
    bd_print_line(dv, "BD_BARRIER();");
    bd_print_open(dv, "if (BD_THREAD_ID == 0)");
    bd_print_line(dv, "BD_STORE_RELEASE(sync + t, epoch);");
    bd_print_line(dv, "BD_ADD_RELEASE(sync + %d + task_nest[t], 1u);", nt);
    bd_print_close(dv, NULL);
    bd_print_close(dv, NULL);
    bd_print_close(dv, NULL);
}


static int64_t value_bytes(bd_graph *g, int v) {
    const bd_value *val = bd_graph_value(g, v);
    int64_t numel = 1, nb = 0;
    bd_dims_numel(val->rank, val->dims, &numel);
    bd_dtype_nbytes(val->dtype, numel, &nb);
    return nb;
}

/* ---------------------------------------------------------------- streams (--schedule op) */

/* What a nest touches in device memory: byte ranges of the arena (buffer 0) and the io buffer
 * (1); constants are read-only and need no order. */
typedef struct span {
    int buf;
    int64_t lo, hi; /* [lo, hi) */
    bool write;
} span;

static int nest_spans(const bd_program *p, const bd_memory_plan *m, const int64_t *in_off,
                      const int64_t *out_off, const bd_nest *n, span *out) {
    int c = 0;
    for (int k = 0; k < n->n_operands; k++) {
        int v = n->operands[k].value;
        const bd_storage *st = &m->storage[v];
        int64_t at;
        int buf;
        switch (st->kind) {
        case BD_STORE_ARENA: buf = 0, at = st->where; break;
        case BD_STORE_INPUT: buf = 1, at = in_off[st->where]; break;
        case BD_STORE_OUTPUT: buf = 1, at = out_off[st->where]; break;
        default: continue;
        }
        out[c++] = (span){buf, at, at + value_bytes(p->graph, v), n->operands[k].write};
    }
    return c;
}

static bool spans_conflict(const span *a, int na, const span *b, int nb) {
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a[i].buf == b[j].buf && a[i].lo < b[j].hi && b[j].lo < a[i].hi && (a[i].write || b[j].write))
                return true;
    return false;
}

/* The op schedule's launches spread over streams: nest j must finish before nest k (later in
 * the schedule's order) when they touch common bytes and one of them writes (a dependency, or a
 * reuse of memory the plan made for one order). Each nest continues the stream of the
 * predecessor that is last on its stream, else takes the stream free first (list scheduling by
 * the nests' work); it waits for the last predecessor on every other stream, through an event
 * that predecessor records. So independent branches run side by side as far as the memory plan
 * lets them (reused bytes order them, as TensorRT notes of its streams). */
typedef struct stream_plan {
    int n_streams, n_events;
    int *stream;    /* per order position */
    int *event;     /* per order position: the event it records, -1 */
    int *wait_start, *waits; /* per position: the events it waits for */
} stream_plan;

static void plan_streams(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                         const int64_t *in_off, const int64_t *out_off, stream_plan *sp) {
    int n = s->n_steps;
    span *spans = malloc(((size_t)n * BD_NEST_MAX_OPERANDS + 1) * sizeof *spans);
    int *ns = calloc((size_t)n + 1, sizeof *ns);
    double *finish = calloc((size_t)n + 1, sizeof *finish), free_at[BD_GPU_MAX_STREAMS] = {0};
    int last[BD_GPU_MAX_STREAMS], *last_wait = malloc(((size_t)BD_GPU_MAX_STREAMS * BD_GPU_MAX_STREAMS) * sizeof *last_wait);
    sp->stream = malloc(((size_t)n + 1) * sizeof *sp->stream);
    sp->event = malloc(((size_t)n + 1) * sizeof *sp->event);
    sp->wait_start = malloc(((size_t)n + 2) * sizeof *sp->wait_start);
    bd_vec waits = BD_VEC(int);
    BD_ASSERT(spans && ns && finish && last_wait && sp->stream && sp->event && sp->wait_start);
    for (int q = 0; q < BD_GPU_MAX_STREAMS; q++) last[q] = -1;
    for (int q = 0; q < BD_GPU_MAX_STREAMS * BD_GPU_MAX_STREAMS; q++) last_wait[q] = -1;
    sp->n_streams = 1;
    int *pending = malloc(((size_t)n + 1) * sizeof *pending); /* per position: waits, as positions */
    int *pend_start = malloc(((size_t)n + 2) * sizeof *pend_start);
    bd_vec pend = BD_VEC(int);
    BD_ASSERT(pending && pend_start);
    for (int i = 0; i < n; i++) {
        const bd_nest *nk = &BD_VEC_AT(&p->nests, bd_nest, s->order[i]);
        ns[i] = nest_spans(p, m, in_off, out_off, nk, spans + (size_t)i * BD_NEST_MAX_OPERANDS);
        sp->event[i] = -1;
        pend_start[i] = (int)pend.len;
        sp->stream[i] = 0;
        if (!nk->n_blocks) continue; /* nothing launched */
        double ready = 0;
        int latest[BD_GPU_MAX_STREAMS];
        for (int q = 0; q < BD_GPU_MAX_STREAMS; q++) latest[q] = -1;
        for (int j = 0; j < i; j++) {
            if (!spans_conflict(spans + (size_t)j * BD_NEST_MAX_OPERANDS, ns[j], spans + (size_t)i * BD_NEST_MAX_OPERANDS, ns[i]))
                continue;
            if (finish[j] > ready) ready = finish[j];
            if (j > latest[sp->stream[j]]) latest[sp->stream[j]] = j;
        }
        int q = -1;
        for (int r = 0; r < BD_GPU_MAX_STREAMS; r++) /* continue the chain of the latest predecessor that ends a stream */
            if (latest[r] >= 0 && latest[r] == last[r] && (q < 0 || finish[latest[r]] > finish[latest[q]])) q = r;
        if (q < 0) {
            q = 0;
            for (int r = 1; r < BD_GPU_MAX_STREAMS; r++)
                if (free_at[r] < free_at[q]) q = r;
        }
        double cost = bd_gpu_block_cost(p->graph, nk) * (double)nk->n_blocks + 1;
        finish[i] = (free_at[q] > ready ? free_at[q] : ready) + cost;
        free_at[q] = finish[i];
        last[q] = i;
        sp->stream[i] = q;
        if (q + 1 > sp->n_streams) sp->n_streams = q + 1;
        for (int r = 0; r < BD_GPU_MAX_STREAMS; r++) {
            if (r == q || latest[r] < 0 || last_wait[q * BD_GPU_MAX_STREAMS + r] >= latest[r]) continue;
            last_wait[q * BD_GPU_MAX_STREAMS + r] = latest[r];
            *(int *)bd_vec_push(&pend) = latest[r];
        }
    }
    pend_start[n] = (int)pend.len;
    /* events: one per position some other stream waits for */
    sp->n_events = 0;
    for (size_t w = 0; w < pend.len; w++) {
        int j = BD_VEC_AT(&pend, int, w);
        if (sp->event[j] < 0) sp->event[j] = sp->n_events++;
    }
    for (int i = 0; i < n; i++) {
        sp->wait_start[i] = (int)waits.len;
        for (int w = pend_start[i]; w < pend_start[i + 1]; w++)
            *(int *)bd_vec_push(&waits) = sp->event[BD_VEC_AT(&pend, int, w)];
    }
    sp->wait_start[n] = (int)waits.len;
    sp->waits = waits.data;
    free(spans);
    free(ns);
    free(finish);
    free(last_wait);
    free(pending);
    free(pend_start);
    bd_vec_free(&pend);
}

/* Horizontal fusion (--branches fuse, Rammer's approach): consecutive nests of the op schedule
 * that touch no common bytes (none waits for another) and are each too small to fill the device
 * alone (fewer than BD_GPU_FILL_BLOCKS blocks) become one kernel, whose blocks dispatch on block-index
 * ranges to the members' bodies. Without it every nest is its own launch (and branches go on
 * streams instead). */
typedef struct launch_groups {
    int n;
    int *start;  /* group k's members: member[start[k] .. start[k + 1]), as order positions */
    int *member;
} launch_groups;

/* The blocks of launch group k's kernel: its members' blocks, one range after another. */
static int64_t group_blocks(const bd_program *p, const bd_schedule *s, const launch_groups *lg, int k) {
    int64_t blocks = 0;
    for (int j = lg->start[k]; j < lg->start[k + 1]; j++)
        blocks += BD_VEC_AT(&p->nests, bd_nest, s->order[lg->member[j]]).n_blocks;
    return blocks;
}

static void plan_groups(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                        const int64_t *in_off, const int64_t *out_off, bool fuse, launch_groups *lg) {
    int n = s->n_steps;
    lg->start = malloc(((size_t)n + 2) * sizeof *lg->start);
    lg->member = malloc(((size_t)n + 1) * sizeof *lg->member);
    span *spans = malloc(((size_t)n * BD_NEST_MAX_OPERANDS + 1) * sizeof *spans);
    int *ns = calloc((size_t)n + 1, sizeof *ns);
    BD_ASSERT(lg->start && lg->member && spans && ns);
    lg->n = 0;
    int members = 0, open = 0; /* members of the open group */
    for (int i = 0; i < n; i++) {
        const bd_nest *nk = &BD_VEC_AT(&p->nests, bd_nest, s->order[i]);
        if (!nk->n_blocks) continue;
        ns[i] = nest_spans(p, m, in_off, out_off, nk, spans + (size_t)i * BD_NEST_MAX_OPERANDS);
        bool joins = fuse && open > 0 && nk->n_blocks < BD_GPU_FILL_BLOCKS;
        for (int j = members - open; joins && j < members; j++) {
            int q = lg->member[j];
            joins = BD_VEC_AT(&p->nests, bd_nest, s->order[q]).n_blocks < BD_GPU_FILL_BLOCKS &&
                    !spans_conflict(spans + (size_t)q * BD_NEST_MAX_OPERANDS, ns[q], spans + (size_t)i * BD_NEST_MAX_OPERANDS, ns[i]);
        }
        if (!joins) {
            lg->start[lg->n++] = members;
            open = 0;
        }
        lg->member[members++] = i;
        open++;
    }
    lg->start[lg->n] = members;
    free(spans);
    free(ns);
}

static void stream_plan_free(stream_plan *sp) {
    free(sp->stream);
    free(sp->event);
    free(sp->wait_start);
    free(sp->waits);
}

static void emit_host(bd_printer *h, const bd_gpu_dialect *dl, const bd_program *p, const bd_schedule *s,
                      const bd_memory_plan *m_, const launch_groups *lg, bool fuse, int64_t arena_bytes,
                      const bd_emit_opts *o, const dag_tables *t,
                      int64_t io_bytes, const int64_t *in_off, const int64_t *out_off, size_t blob_len) {
    bd_graph *g = p->graph;
    bool block = s->mode == BD_SCHEDULE_BLOCK;
    const char *arch = o->arch ? o->arch : o->target->build.default_arch;
    if (o->library) {
        bd_print_line(h, "%s const unsigned char %s[]; /* weights.S: .incbin of the constants and tables */",
                      dl->cplusplus ? "extern \"C\"" : "extern", o->weights_symbol);
        bd_print_line(h, "#define bd_weights %s", o->weights_symbol);
    } else {
        bd_print_line(h, "#define bd_weights bdrt_weights /* appended to the executable (bdrt.h) */");
    }
    bd_print_line(h, "#define BD_WEIGHTS_BYTES %zuu", blob_len);
    bd_print_line(h, "#define BD_ARENA_BYTES %lldu /* the plan's arena, then the bodies' scratch */", ll(arena_bytes));
    bd_print_line(h, "#define BD_IO_BYTES %lldu", ll(io_bytes));
    bd_print_line(h, "#define BD_ARCH %s", bd_print_string_literal(h, arch ? arch : ""));
    if (dl->embedded_source) bd_print_line(h, "#define BD_BLOCK_THREADS %d", dl->threads);
    size_t ni = g->inputs.len, no = g->outputs.len;
    int64_t *in_bytes = malloc((ni + 1) * sizeof *in_bytes), *out_bytes = malloc((no + 1) * sizeof *out_bytes);
    BD_ASSERT(in_bytes && out_bytes);
    for (size_t i = 0; i < ni; i++) in_bytes[i] = value_bytes(g, BD_VEC_AT(&g->inputs, int, i));
    for (size_t i = 0; i < no; i++) out_bytes[i] = value_bytes(g, BD_VEC_AT(&g->outputs, int, i));
    emit_table_i64(h, "bd_in_off", in_off, ni);
    emit_table_i64(h, "bd_in_bytes", in_bytes, ni);
    emit_table_i64(h, "bd_out_off", out_off, no);
    emit_table_i64(h, "bd_out_bytes", out_bytes, no);
    free(in_bytes);
    free(out_bytes);

    /* kernels: one per nest (op), or the persistent one (block) */
    int n_kernels = 0;
    bd_print_open(h, "static const char *const bd_kernel_names[] =");
    if (block) {
        bd_print_line(h, "\"bd_persistent\",");
        n_kernels = 1;
    } else {
        for (int k = 0; k < lg->n; k++, n_kernels++) bd_print_line(h, "\"k%d\",", s->order[lg->member[lg->start[k]]]);
    }
    if (!n_kernels) bd_print_line(h, "\"\"");
    bd_print_close(h, ";");
    /* what each kernel runs, for --profile */
    bd_print_open(h, "static const char *const bd_kernel_labels[] =");
    if (block) bd_print_line(h, "\"the persistent kernel: the blocks of every nest (--schedule op times each nest)\",");
    for (int k = 0; !block && k < lg->n; k++) {
        const char *label = "";
        for (int j = lg->start[k]; j < lg->start[k + 1]; j++) {
            int nest = s->order[lg->member[j]];
            const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, nest);
            const bd_node *node = n->node >= 0 ? bd_graph_node(g, n->node) : NULL;
            label = bd_print_str(h, "%s%snest %d%s%s%s%s", label, j > lg->start[k] ? " + " : "", nest,
                                 node ? ": " : "", node ? node->op_type : "", node ? " " : "", node ? node->name : "");
        }
        bd_print_line(h, "%s,", bd_print_string_literal(h, label));
    }
    if (!n_kernels) bd_print_line(h, "\"\"");
    bd_print_close(h, ";");
    if (dl->embedded_source) {
        bd_print_line(h, "static const void *const *const bd_kernel_fns = NULL;");
    } else {
        bd_print_open(h, "static const void *const bd_kernel_fns[] =");
        if (block) bd_print_line(h, "(const void *)bd_persistent,");
        else
            for (int k = 0; k < lg->n; k++) bd_print_line(h, "(const void *)k%d,", s->order[lg->member[lg->start[k]]]);
        if (!n_kernels) bd_print_line(h, "NULL");
        bd_print_close(h, ";");
    }
    if (block) {
        bd_print_line(h, "#define BD_TASKS %d", t->n_tasks);
        bd_print_line(h, "#define BD_NESTS %zu", p->nests.len);
        bd_print_line(h, "#define BD_SYNC_WORDS(ctas) ((size_t)BD_TASKS + BD_NESTS + 3 + (size_t)(ctas))");
        bd_print_line(h, "#define bd_task_cost ((const float *)(bd_weights + %lld))", ll(t->off_cost));
    }
    bd_print_line(h, "typedef struct bd_state {");
    bd_print_line(h, "    bdrt_gpu *g;");
    bd_print_line(h, "    bdrt_gpu_buf weights, arena, io, sync, plan;");
    bd_print_line(h, "    uint32_t epoch;");
    bd_print_line(h, "    int32_t n_ctas;");
    bd_print_line(h, "    int graph; /* op: the launches were captured as a graph */");
    bd_print_line(h, "    double ms;");
    bd_print_line(h, "} bd_state;");
    bd_print_blank(h);

    bd_print_open(h, "static void bd_destroy(void *inst)");
    bd_print_line(h, "bd_state *S = (bd_state *)inst;");
    bd_print_line(h, "if (!S) return;");
    bd_print_line(h, "if (S->g) {");
    bd_print_line(h, "    bdrt_gpu_free(S->g, S->weights); bdrt_gpu_free(S->g, S->arena); bdrt_gpu_free(S->g, S->io);");
    bd_print_line(h, "    bdrt_gpu_free(S->g, S->sync); bdrt_gpu_free(S->g, S->plan);");
    bd_print_line(h, "    bdrt_gpu_close(S->g);");
    bd_print_line(h, "}");
    bd_print_line(h, "free(S);");
    bd_print_close(h, NULL);
    bd_print_blank(h);

    stream_plan sp = {0};
    if (!block) {
        /* one launch per group (a nest, or siblings fused horizontally), in the schedule's order,
         * spread over streams (plan_streams; one stream with fused siblings); the other streams
         * fork from stream 0 and join it again */
        if (!fuse) plan_streams(p, s, m_, in_off, out_off, &sp);
        else {
            sp.n_streams = 1;
            sp.stream = calloc((size_t)s->n_steps + 1, sizeof *sp.stream);
            sp.event = malloc(((size_t)s->n_steps + 1) * sizeof *sp.event);
            sp.wait_start = calloc((size_t)s->n_steps + 2, sizeof *sp.wait_start);
            BD_ASSERT(sp.stream && sp.event && sp.wait_start);
            for (int i = 0; i < s->n_steps; i++) sp.event[i] = -1;
        }
        int fork = sp.n_events, join = sp.n_events + 1;
        bd_print_line(h, "#define BD_STREAMS %d", sp.n_streams);
        bd_print_line(h, "#define BD_EVENTS %d", sp.n_events + sp.n_streams);
        bd_print_open(h, "static int bd_launch_all(void *inst)");
        bd_print_line(h, "bd_state *S = (bd_state *)inst;");
        bd_print_line(h, "bdrt_gpu_buf bufs[3] = {S->arena, S->weights, S->io};");
        bd_print_line(h, "(void)bufs;");
        if (sp.n_streams > 1) {
            bd_print_line(h, "if (bdrt_gpu_record(S->g, 0, %d)) return -1;", fork);
            for (int q = 1; q < sp.n_streams; q++) bd_print_line(h, "if (bdrt_gpu_wait(S->g, %d, %d)) return -1;", q, fork);
        }
        for (int k = 0; k < lg->n; k++) {
            int i = lg->member[lg->start[k]]; /* streams are planned per nest: one member unless fused */
            for (int w = sp.wait_start[i]; w < sp.wait_start[i + 1]; w++)
                bd_print_line(h, "if (bdrt_gpu_wait(S->g, %d, %d)) return -1;", sp.stream[i], sp.waits[w]);
            bd_print_line(h, "if (bdrt_gpu_launch(S->g, %d, %d, %lld, BD_BLOCK_THREADS, 0, 3, bufs, 0)) return -1;",
                          sp.stream[i], k, ll(group_blocks(p, s, lg, k)));
            if (sp.event[i] >= 0) bd_print_line(h, "if (bdrt_gpu_record(S->g, %d, %d)) return -1;", sp.stream[i], sp.event[i]);
        }
        for (int q = 1; q < sp.n_streams; q++)
            bd_print_line(h, "if (bdrt_gpu_record(S->g, %d, %d) || bdrt_gpu_wait(S->g, 0, %d)) return -1;", q,
                          join + q - 1, join + q - 1);
        bd_print_line(h, "return 0;");
        bd_print_close(h, NULL);
        bd_print_blank(h);
    }
    bd_print_open(h, "static void *bd_create(int threads)");
    bd_print_line(h, "(void)threads; /* the device runs the blocks */");
    bd_print_line(h, "bd_state *S = (bd_state *)calloc(1, sizeof *S);");
    bd_print_line(h, "if (!S) return NULL;");
    bd_print_line(h, "S->g = bdrt_gpu_open(bdrt_device_index, %s, BD_ARCH, bd_kernel_names, (const void *const *)bd_kernel_fns, %d);",
                  dl->embedded_source ? "bd_device_source" : "NULL", n_kernels);
    bd_print_line(h, "if (!S->g) { bd_destroy(S); return NULL; }");
    bd_print_line(h, "S->weights = bdrt_gpu_alloc(S->g, BD_WEIGHTS_BYTES);");
    bd_print_line(h, "S->arena = bdrt_gpu_alloc(S->g, BD_ARENA_BYTES);");
    bd_print_line(h, "S->io = bdrt_gpu_alloc(S->g, BD_IO_BYTES);");
    bd_print_line(h, "if (!S->weights || !S->arena || !S->io || bdrt_gpu_write(S->g, S->weights, 0, bd_weights, BD_WEIGHTS_BYTES)) { bd_destroy(S); return NULL; }");
    if (block) {
        bd_print_line(h, "int ctas = bdrt_gpu_resident(S->g, 0, BD_BLOCK_THREADS);");
        bd_print_line(h, "const char *env = getenv(\"BDRT_GPU_CTAS\"); /* tests: fewer CTAs */");
        bd_print_line(h, "if (env && atoi(env) > 0 && atoi(env) < ctas) ctas = atoi(env);");
        bd_print_line(h, "if (ctas > BD_TASKS) ctas = BD_TASKS > 0 ? BD_TASKS : 1;");
        bd_print_line(h, "if (ctas < 1) { bdrt_errorf(\"the persistent kernel cannot be resident on '%%s'\", bdrt_gpu_name(S->g)); bd_destroy(S); return NULL; }");
        bd_print_line(h, "S->n_ctas = ctas;");
        bd_print_line(h, "env = getenv(\"BDRT_GPU_ASSIGN_SEED\"); /* tests: a random CTA for every task */");
        bd_print_line(h, "const uint64_t seed = env ? strtoull(env, NULL, 10) : 0;");
        bd_print_line(h, "int32_t *plan = (int32_t *)malloc((2 + (size_t)ctas + BD_TASKS) * sizeof *plan);");
        bd_print_line(h, "if (!plan) { bd_destroy(S); return NULL; }");
        bd_print_line(h, "plan[0] = ctas;");
        bd_print_line(h, "int rc = bdrt_gpu_assign(BD_TASKS, bd_task_cost, (const int32_t *)(bd_weights + %lld), "
                         "(const int32_t *)(bd_weights + %lld), (const int32_t *)(bd_weights + %lld), BD_NESTS, ctas, seed, plan + 1, plan + 2 + ctas);",
                      ll(t->off_wait_start), ll(t->off_waits), ll(t->off_nest));
        bd_print_line(h, "S->plan = rc ? NULL : bdrt_gpu_alloc(S->g, (2 + (size_t)ctas + BD_TASKS) * sizeof *plan);");
        bd_print_line(h, "if (S->plan) rc = bdrt_gpu_write(S->g, S->plan, 0, plan, (2 + (size_t)ctas + BD_TASKS) * sizeof *plan);");
        bd_print_line(h, "free(plan);");
        bd_print_line(h, "S->sync = S->plan && !rc ? bdrt_gpu_alloc(S->g, BD_SYNC_WORDS(ctas) * 4) : NULL;");
        bd_print_line(h, "if (!S->sync || bdrt_gpu_zero(S->g, S->sync, BD_SYNC_WORDS(ctas) * 4)) { bd_destroy(S); return NULL; }");
    } else {
        /* The launch sequence captured once and replayed (CUDA graphs, hipGraph), unless
         * BDRT_GPU_GRAPH=0; without graphs (OpenCL) run() launches the kernels itself. */
        bd_print_line(h, "const char *env = getenv(\"BDRT_GPU_STREAMS\"); /* 1: every launch on stream 0 */");
        bd_print_line(h, "const int streams = env && atoi(env) > 0 && atoi(env) < BD_STREAMS ? atoi(env) : BD_STREAMS;");
        bd_print_line(h, "if (bdrt_gpu_streams(S->g, streams, BD_EVENTS)) { bdrt_errorf(\"cannot create %%d streams on '%%s'\", streams, bdrt_gpu_name(S->g)); bd_destroy(S); return NULL; }");
        bd_print_line(h, "env = getenv(\"BDRT_GPU_GRAPH\");");
        bd_print_line(h, "S->graph = !(env && !strcmp(env, \"0\")) && bdrt_gpu_graph_capture(S->g, bd_launch_all, S) == 0;");
    }
    bd_print_line(h, "return S;");
    bd_print_close(h, NULL);
    bd_print_blank(h);

    bd_print_open(h, "static int bd_run(void *inst, const void *const *in, void *const *out)");
    bd_print_line(h, "bd_state *S = (bd_state *)inst;");
    bd_print_line(h, "for (int i = 0; i < %zu; i++)", ni);
    bd_print_line(h, "    if (bdrt_gpu_write(S->g, S->io, (size_t)bd_in_off[i], in[i], (size_t)bd_in_bytes[i])) return BDRT_EXIT_IO;");
    bd_print_line(h, "if (bdrt_gpu_time_begin(S->g)) return BDRT_EXIT_IO;");
    if (block) {
        bd_print_line(h, "bdrt_gpu_buf bufs[5] = {S->arena, S->weights, S->io, S->sync, S->plan};");
        /* counters reach blocks x epoch: start over before that could pass 2^31 */
        bd_print_open(h, "if ((uint64_t)(S->epoch + 1) * %uu >= (1u << 31))", t->max_mult);
        bd_print_line(h, "if (bdrt_gpu_zero(S->g, S->sync, BD_SYNC_WORDS(S->n_ctas) * 4)) return BDRT_EXIT_IO;");
        bd_print_line(h, "S->epoch = 0;");
        bd_print_close(h, NULL);
        bd_print_line(h, "S->epoch++;");
        bd_print_line(h, "if (BD_TASKS && bdrt_gpu_launch(S->g, 0, 0, S->n_ctas, BD_BLOCK_THREADS, 1, 5, bufs, S->epoch)) return BDRT_EXIT_IO;");
    } else {
        bd_print_line(h, "if (S->graph ? bdrt_gpu_graph_launch(S->g) : bd_launch_all(S)) return BDRT_EXIT_IO;");
    }
    bd_print_line(h, "if (bdrt_gpu_time_end(S->g, &S->ms)) return BDRT_EXIT_IO;");
    if (block) {
        bd_print_line(h, "uint32_t status[3] = {0, 0, 0};");
        bd_print_line(h, "if (bdrt_gpu_read(S->g, status, S->sync, (size_t)(BD_TASKS + BD_NESTS) * 4, sizeof status)) return BDRT_EXIT_IO;");
        bd_print_open(h, "if (status[0])");
        bd_print_line(h, "uint32_t *pos = (uint32_t *)calloc((size_t)S->n_ctas + 1, 4);");
        bd_print_line(h, "if (pos) bdrt_gpu_read(S->g, pos, S->sync, (size_t)(BD_TASKS + BD_NESTS + 3) * 4, (size_t)S->n_ctas * 4);");
        bd_print_line(h, "const int32_t *tn = (const int32_t *)(bd_weights + %lld), *tb = (const int32_t *)(bd_weights + %lld);",
                      ll(t->off_nest), ll(t->off_block));
        bd_print_line(h, "bdrt_errorf(\"persistent kernel stopped: CTA %%u waited too long before task %%u (nest %%d, block %%d)\", "
                         "status[2], status[1], tn[status[1] %% (BD_TASKS ? BD_TASKS : 1)], tb[status[1] %% (BD_TASKS ? BD_TASKS : 1)]);");
        bd_print_line(h, "for (int c = 0; pos && c < S->n_ctas; c++) fprintf(stderr, \"  CTA %%d at its task %%u\\n\", c, pos[c]);");
        bd_print_line(h, "free(pos);");
        bd_print_line(h, "return BDRT_EXIT_IO;");
        bd_print_close(h, NULL);
    }
    bd_print_line(h, "for (int i = 0; i < %zu; i++)", no);
    bd_print_line(h, "    if (bdrt_gpu_read(S->g, out[i], S->io, (size_t)bd_out_off[i], (size_t)bd_out_bytes[i])) return BDRT_EXIT_IO;");
    bd_print_line(h, "return 0;");
    bd_print_close(h, NULL);
    bd_print_blank(h);
    /* --profile: every kernel launched alone on stream 0 (in launch order, so each finds what
     * it reads), timed by device events; the persistent kernel is timed by its last run */
    bd_print_open(h, "static int bd_profile(void *inst, double *ms)");
    bd_print_line(h, "bd_state *S = (bd_state *)inst;");
    if (block) {
        bd_print_line(h, "ms[0] = S->ms;");
    } else {
        bd_print_line(h, "bdrt_gpu_buf bufs[3] = {S->arena, S->weights, S->io};");
        bd_print_line(h, "(void)bufs; (void)ms;");
        for (int k = 0; k < lg->n; k++)
            bd_print_line(h, "if (bdrt_gpu_time_begin(S->g) || bdrt_gpu_launch(S->g, 0, %d, %lld, BD_BLOCK_THREADS, 0, 3, bufs, 0) || "
                             "bdrt_gpu_time_end(S->g, &ms[%d])) return BDRT_EXIT_IO;", k, ll(group_blocks(p, s, lg, k)), k);
    }
    bd_print_line(h, "return 0;");
    bd_print_close(h, NULL);
    bd_print_line(h, "static double bd_device_ms(void *inst) { return ((bd_state *)inst)->ms; }");
    bd_print_line(h, "static const char *bd_device_name(void *inst) { return bdrt_gpu_name(((bd_state *)inst)->g); }");
    bd_print_io_table(h, "static const bdrt_io", "bd_inputs", g, &g->inputs, true);
    bd_print_io_table(h, "static const bdrt_io", "bd_outputs", g, &g->outputs, true);
    bd_print_open(h, "static const bdrt_model bd_model =");
    bd_print_line(h, "%s, %zu, %zu, bd_inputs, bd_outputs, bd_create, bd_run, bd_destroy, %d, bd_kernel_labels, NULL, %s, "
                     "bd_device_ms, bd_device_name, NULL, %s, bd_profile",
                  bd_print_string_literal(h, g->name[0] ? g->name : "model"), ni, no, n_kernels,
                  bd_print_string_literal(h, dl->name), o->library ? "-1" : "BD_WEIGHTS_BYTES");
    bd_print_close(h, ";");
    stream_plan_free(&sp);
    if (!o->library) {
        bd_print_line(h, "int main(int argc, char **argv) { return bdrt_main(argc, argv, &bd_model); }");
        return;
    }
    /* --lib: the header's entry points (C linkage from the C++ of nvcc and hipcc) */
    const char *nm = o->lib_name, *ex = dl->cplusplus ? "extern \"C\" " : "";
    bd_print_line(h, "typedef struct %s_io { const char *name; int dtype; int rank; int64_t dims[12]; } %s_io;", nm, nm);
    const char *decl = bd_print_str(h, "%sconst %s_io", dl->cplusplus ? "extern \"C\" " : "", nm);
    bd_print_io_table(h, decl, bd_print_str(h, "%s_inputs", nm), g, &g->inputs, false);
    bd_print_io_table(h, decl, bd_print_str(h, "%s_outputs", nm), g, &g->outputs, false);
    bd_print_line(h, "%svoid *%s_create(int threads) { return bd_create(threads); }", ex, nm);
    bd_print_line(h, "%sint %s_run(void *instance, const void *const *inputs, void *const *outputs) "
                     "{ return bd_run(instance, inputs, outputs); }", ex, nm);
    bd_print_line(h, "%svoid %s_destroy(void *instance) { bd_destroy(instance); }", ex, nm);
    bd_print_line(h, "%sconst bdrt_model *%s_descriptor(void) { return &bd_model; }", ex, nm);
}

/* The numbers of a device function's body that say where its values live (target/share.h). */
static const char *const offset_sites[] = {"arena + ", "weights + ", "io + "};

/* Under --schedule block, where every nest's device function is kept a call of the persistent
 * kernel (CUDA: the dialect's keeps_calls), those whose bodies print alike once their offsets are
 * set aside share one body, bs<first nest>, that takes the offsets as arguments (O0, O1, ...),
 * and each of them calls it with its own: nvcc then compiles a repeated layer once (BERT: 5.5 ->
 * 2.6 s). Under --schedule op the functions are inlined into their kernels; hipcc (gfx90a) and
 * PoCL inline every function whatever it says (PoCL 3.1's LLVM 15 also crashed inlining the
 * shared bodies into the persistent kernel): those are left as they are. Rewrites the text. */
static void share_device_functions(bd_printer *dv, const bd_fn_text *f, size_t n) {
    *(char *)bd_vec_push(&dv->text) = 0; /* read as a string */
    const char *text = dv->text.data;
    bd_share *sh = bd_share_find(text, f, n, offset_sites, BD_COUNT(offset_sites), "O%d");
    bd_vec out = BD_VEC(char);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const int g = sh[i].group;
        if (sh[g].members < 2) continue;
        bd_vec_append(&out, text + at, f[i].start - at);
        const size_t first = f[g].nest;
        const char *params = "", *args = "";
        for (int j = 0; j < sh[i].n_numbers; j++) params = bd_print_str(dv, "%s, int64_t O%d", params, j);
        if (sh[i].n_numbers) args = bd_print_str(dv, ", %s", sh[i].numbers);
        const char *sig = "(BD_G unsigned char *arena, BD_G const unsigned char *weights, "
                          "BD_G unsigned char *io, int64_t block, BD_LOCAL float *smem";
        if (g == (int)i) {
            const char *def = bd_print_str(dv, "/* the device function of nest %zu and %d more nests like it, their offsets "
                                               "in O0, O1, ... */\nBD_DEV BD_NOINLINE void bs%zu%s%s) {\n%s}\n",
                                           first, sh[g].members - 1, first, sig, params, sh[i].text);
            bd_vec_append(&out, def, strlen(def));
        }
        bd_vec_append(&out, text + f[i].start, f[i].open - f[i].start); /* the nest's comment */
        const char *call = bd_print_str(dv, "BD_DEV void b%zu%s) {\n    bs%zu(arena, weights, io, block, smem%s);\n}\n",
                                        f[i].nest, sig, first, args);
        bd_vec_append(&out, call, strlen(call));
        at = f[i].end;
    }
    dv->text.len--;
    bd_vec_append(&out, text + at, dv->text.len - at);
    bd_share_free(sh, n);
    bd_vec_free(&dv->text);
    dv->text = out;
}

bd_status bd_emit_gpu(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                      const bd_emit_opts *o, bd_c_program *out, bd_diag *d) {
    memset(out, 0, sizeof *out);
    const bd_gpu_dialect *dl = o->target->gpu;
    BD_ASSERT(dl);
    bd_graph *g = p->graph;
    bd_blob blob = BD_BLOB_INIT;
    for (size_t i = 0; i < m->constants.len; i++) {
        const bd_tensor *c = bd_graph_value(g, BD_VEC_AT(&m->constants, int, i))->constant;
        int64_t at = bd_blob_add_ref(&blob, c->data, (size_t)c->nbytes);
        BD_ASSERT(at == m->storage[BD_VEC_AT(&m->constants, int, i)].where);
    }
    /* io buffer: inputs, then outputs */
    size_t ni = g->inputs.len, no = g->outputs.len;
    int64_t *in_off = malloc((ni + 1) * sizeof *in_off), *out_off = malloc((no + 1) * sizeof *out_off), io = 0;
    BD_ASSERT(in_off && out_off);
    for (size_t i = 0; i < ni; i++) {
        in_off[i] = io;
        io += (value_bytes(g, BD_VEC_AT(&g->inputs, int, i)) + IO_ALIGN - 1) / IO_ALIGN * IO_ALIGN;
    }
    for (size_t i = 0; i < no; i++) {
        out_off[i] = io;
        io += (value_bytes(g, BD_VEC_AT(&g->outputs, int, i)) + IO_ALIGN - 1) / IO_ALIGN * IO_ALIGN;
    }

    bd_gpu_printer gp = {.prog = p, .graph = g, .storage = m->storage, .in_off = in_off, .out_off = out_off,
                         .blob = &blob, .scratch_at = m->arena_bytes, .threads = dl->threads,
                         .precision = o->precision};
    gp.pr.text = BD_VEC(char);
    bd_printer *dv = &gp.pr;
    bool block = s->mode == BD_SCHEDULE_BLOCK;
    bd_status st = BD_OK;
    bd_print_line(dv, "#define BD_BLOCK_THREADS %d", dl->threads);
    size_t smem_at = dv->text.len; /* BD_SMEM_FLOATS, known once the bodies are printed, goes here */
    bd_print_line(dv, "#define BD_WARP %d", dl->warp);
    for (int i = 0; dl->prelude[i]; i++) bd_print_line(dv, "%s", dl->prelude[i]);
    /* the C dialect's vectorisable float math is the device's own */
    bd_print_line(dv, "#define bd_exp_v expf");
    bd_print_line(dv, "#define bd_tanh_v tanhf");
    bd_print_line(dv, "#define bd_erf_v erff");
    bd_print_scalar_helpers(dv, dl->fn, dl->embedded_source);
    /* --precision tf32: float rounded to nearest even at 10 mantissa bits (infinities and NaN kept) */
    bd_print_line(dv, "%s float bd_tf32(float x) { const uint32_t u = bd_f2u(x); return (u & 0x7f800000u) == 0x7f800000u ? x : "
                      "bd_u2f((u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u); }", dl->fn);
    bd_fn_text *fns = malloc((p->nests.len + 1) * sizeof *fns);
    size_t n_fns = 0;
    BD_ASSERT(fns);
    for (size_t i = 0; i < p->nests.len && !st; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (!n->n_blocks) continue;
        const bd_node *node = n->node >= 0 ? bd_graph_node(g, n->node) : NULL;
        bd_fn_text *f = &fns[n_fns++];
        f->start = dv->text.len;
        f->nest = i;
        bd_print_comment(dv, "", node ? bd_print_str(dv, "nest %zu: %s node %s", i, node->op_type, node->name)
                                      : bd_print_str(dv, "nest %zu", i));
        f->open = dv->text.len;
        bd_print_open(dv, "BD_DEV %svoid b%zu(BD_G unsigned char *arena, BD_G const unsigned char *weights, "
                          "BD_G unsigned char *io, int64_t block, BD_LOCAL float *smem)", block ? "BD_NOINLINE " : "", i);
        f->body = dv->text.len;
        bd_print_line(dv, "(void)arena; (void)weights; (void)io; (void)smem;");
        if (n->n_iter) bd_print_block_decode(dv, n);
        else bd_print_line(dv, "(void)block; /* one block, no dims */");
        st = bd_gpu_body(&gp, n, d);
        f->body_end = dv->text.len;
        bd_print_close(dv, NULL);
        f->end = dv->text.len;
    }
    if (!st && block && dl->keeps_calls) share_device_functions(dv, fns, n_fns);
    free(fns);
    /* --schedule op: a kernel per launch group, its blocks dispatched on index ranges */
    launch_groups lg = {0};
    if (!block) plan_groups(p, s, m, in_off, out_off, o->fuse_branches, &lg);
    for (int k = 0; k < lg.n && !st; k++) {
        bd_print_open(dv, "BD_KERNEL void k%d(BD_G unsigned char *arena, BD_G const unsigned char *weights, "
                          "BD_G unsigned char *io)", s->order[lg.member[lg.start[k]]]);
        bd_print_line(dv, "BD_SHARED float smem[BD_SMEM_FLOATS] __attribute__((aligned(16)));");
        bd_print_line(dv, "int64_t b = BD_BLOCK_ID;");
        for (int j = lg.start[k]; j < lg.start[k + 1]; j++) {
            int nest = s->order[lg.member[j]];
            int64_t nb = BD_VEC_AT(&p->nests, bd_nest, nest).n_blocks;
            if (lg.start[k + 1] - lg.start[k] == 1) bd_print_line(dv, "b%d(arena, weights, io, b, smem);", nest);
            else bd_print_line(dv, "if (b < %lld) { b%d(arena, weights, io, b, smem); return; } b -= %lld;", ll(nb), nest, ll(nb));
        }
        bd_print_close(dv, NULL);
    }
    if (!st) {
        char def[64];
        int dn = snprintf(def, sizeof def, "#define BD_SMEM_FLOATS %lld\n", ll(gp.smem_floats > 0 ? gp.smem_floats : 1));
        bd_vec fixed = BD_VEC(char);
        for (size_t i = 0; i < dv->text.len; i++) {
            if (i == smem_at)
                for (int k = 0; k < dn; k++) *(char *)bd_vec_push(&fixed) = def[k];
            *(char *)bd_vec_push(&fixed) = BD_VEC_AT(&dv->text, char, i);
        }
        bd_vec_free(&dv->text);
        dv->text = fixed;
    }
    dag_tables t = {0};
    if (!st && block) build_dag(p, s, &blob, &t);
    if (!st && block) emit_persistent_kernel(dv, p, &t);

    bd_printer hp = {.text = BD_VEC(char)};
    if (!st) {
        const char *base = strrchr(g->model->path, '/');
        bd_print_comment(&hp, "Generated by bdc " BDC_VERSION " from ", base ? base + 1 : g->model->path);
        bd_print_line(&hp, "/* Do not edit: regenerate with bdc compile --target %s. */", dl->name);
        bd_print_line(&hp, "#include <math.h>");
        bd_print_line(&hp, "#include <stdint.h>");
        bd_print_line(&hp, "#include <stdio.h>");
        bd_print_line(&hp, "#include <stdlib.h>");
        bd_print_line(&hp, "#include <string.h>");
        bd_print_line(&hp, "#include \"bdrt.h\"");
        bd_print_line(&hp, "#include \"%s\"", dl->host_header);
        bd_print_blank(&hp);
        if (dl->embedded_source) {
            print_source_literal(&hp, &dv->text);
        } else {
            for (size_t i = 0; i < dv->text.len; i++) *(char *)bd_vec_push(&hp.text) = BD_VEC_AT(&dv->text, char, i);
        }
        bd_print_blank(&hp);
        emit_host(&hp, dl, p, s, m, &lg, o->fuse_branches, gp.scratch_at, o, &t, io, in_off, out_off, blob.len);
        *(char *)bd_vec_push(&hp.text) = 0;
        out->source = hp.text.data;
        out->source_len = hp.text.len - 1;
        hp.text = BD_VEC(char);
        if (o->library)
            out->header = bd_print_lib_header(g, o->lib_name, dl->link_note, true);
        out->weights = blob;
        blob = BD_BLOB_INIT;
    }
    bd_printer_free(&hp);
    bd_printer_free(&gp.pr);
    free(lg.start);
    free(lg.member);
    bd_blob_free(&blob);
    free(t.cost);
    free(in_off);
    free(out_off);
    return st;
}
