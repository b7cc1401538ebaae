/* test_nest.c — the block-range and region primitives of the loop-nest IR (src/loopnest.h) on
 * hand-built nests, and the printed block decoding of the C emitter against them:
 *
 *   - bd_nest_block_range over many extents and tiles (dividing or not, rank 0 to 6, an empty
 *     domain, extents past 2^32): grid and block counts, each block's range, and that the blocks
 *     partition the domain exactly (every index in exactly one block);
 *   - bd_operand_region for identity, broadcast (no iter), transposed, strided and dilated windows
 *     with negative offsets (padding) clamped at both ends, negative scale (reversed slices),
 *     concat offsets, FULL and OPAQUE dims;
 *   - the worked example of the design brief: Conv1x1 then Conv3x3 (stride 1, pad 1), both
 *     1x64x56x56 tiled (1, 32, 8, 56): a consumer block reads a 1-row halo and needs 6 of the
 *     producer's 14 blocks (the region-to-producer-blocks intersection is written here, since the
 *     block-dependency analysis does not exist yet);
 *   - two Inception-like branches on the same input: no block of one touches what the other writes,
 *     while a join reading both depends on exactly the matching blocks of each;
 *   - the block-dependency analysis (deps/deps.h) on hand-checked cases with exact expected block
 *     sets: conv 3x3 after conv (a halo), a transpose, concat offsets, a concat chain placed in
 *     its container (fuse/views.c: DenseNet's), a broadcast, a reduction
 *     (ALL), and a Reshape that splits a dim (exact) and one that merges dims across a tile
 *     (conservative); on every edge of every case, each consumer block's box is also compared with
 *     a brute-force scan of the producer's grid (equal where the maps are exact, a superset else);
 *   - bd_expr_simplify on a QuantizeLinear's result dequantized (SATURATE where the value is an
 *     integer, the conversions kept where it is not);
 *   - bd_emit_block_decode printed into a C program, built with the system C compiler ($CC or cc)
 *     and run for every block, line by line equal to bd_nest_block_range.
 *
 * Prints one line per check and "N passed, M failed"; exits 1 on any failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deps/deps.h"
#include "fuse/fuse.h"
#include "target/cpu/emit.h"
#include "nest/loopnest.h"
#include "schedule/schedule.h"

extern char **environ;

static int npass, nfail;

static void check(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *name, const char *fmt, ...) {
    if (ok) {
        printf("ok    %s\n", name);
        npass++;
    } else {
        va_list ap;
        va_start(ap, fmt);
        printf("FAIL  %s: ", name);
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
        nfail++;
    }
    fflush(stdout);
}

/* "[a,b,c]" of n int64s, in a static ring of buffers (for messages). */
static const char *fmt_dims(int n, const int64_t *v) {
    static char ring[8][256];
    static int next;
    char *b = ring[next++ % 8];
    size_t o = 0;
    b[o++] = '[';
    for (int i = 0; i < n && o < 200; i++)
        o += (size_t)snprintf(b + o, 256 - o, "%s%lld", i ? "," : "", (long long)v[i]);
    snprintf(b + o, 256 - o, "]");
    return b;
}

static bool same(int n, const int64_t *a, const int64_t *b) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* ---------------------------------------------------------------- hand-built graphs and nests */

typedef struct fixture {
    bd_model *m;
    bd_graph *g;
    bd_program p;
} fixture;

static void fx_init(fixture *f) {
    bd_arena arena = {0};
    f->m = bd_arena_alloc(&arena, sizeof *f->m);
    BD_ASSERT(f->m);
    f->m->arena = arena;
    f->m->subgraphs = BD_VEC(bd_graph *);
    f->g = bd_graph_new(f->m, NULL, "test");
    BD_ASSERT(f->g);
    f->m->graph = f->g;
    memset(&f->p, 0, sizeof f->p);
    f->p.graph = f->g;
    f->p.nests = BD_VEC(bd_nest);
}

static void fx_free(fixture *f) {
    bd_program_free(&f->p);
    bd_model_free(f->m);
}

/* A float value of the given shape (names are only for the dump). */
static int fx_value(fixture *f, const char *name, int rank, const int64_t *dims) {
    int v = bd_graph_add_value(f->g, name);
    bd_value *val = bd_graph_value(f->g, v);
    val->dtype = BD_DT_FLOAT;
    val->rank = rank;
    for (int i = 0; i < rank; i++) val->dims[i] = dims[i];
    return v;
}

static bd_value *fx_val(fixture *f, int v) { return bd_graph_value(f->g, v); }

/* A nest over value `out`, tiled by `tile`, writing `out` through the identity map. The pointer
 * stays valid until the next nest is added. */
static bd_nest *fx_nest(fixture *f, int out, const int64_t *tile) {
    bd_nest *n = bd_nest_begin(&f->p, -1, BD_BODY_COPY, fx_val(f, out));
    if (tile) bd_nest_set_tile(f->g, n, tile);
    bd_access_identity(bd_nest_operand(n, out, true, fx_val(f, out)->rank), 0);
    return n;
}

static bd_nest *fx_nest_at(fixture *f, size_t i) { return &BD_VEC_AT(&f->p.nests, bd_nest, i); }

/* A bare nest over a domain (no graph needed for the block-range checks). */
static void bare_nest(bd_nest *n, int rank, const int64_t *extent, const int64_t *tile) {
    memset(n, 0, sizeof *n);
    n->node = -1;
    n->n_iter = rank;
    for (int i = 0; i < rank; i++) n->extent[i] = extent[i];
    bd_nest_set_tile(NULL, n, tile) /* body ELEMENTWISE: no graph needed */;
}

/* ---------------------------------------------------------------- bd_nest_block_range */

typedef struct domain_case {
    int rank;
    int64_t extent[8];
    int64_t tile[8];      /* as requested; bd_nest_set_tile clamps */
    int64_t want_tile[8]; /* after clamping */
} domain_case;

static const domain_case domains[] = {
    {0, {0}, {0}, {0}},
    {1, {10}, {3}, {3}},
    {1, {10}, {5}, {5}},
    {1, {7}, {7}, {7}},
    {1, {7}, {10}, {7}},  /* tile above the extent: one block */
    {1, {7}, {0}, {1}},   /* tile below 1: one per index */
    {1, {1}, {1}, {1}},
    {1, {13}, {4}, {4}},
    {1, {0}, {4}, {1}},   /* empty domain: no block */
    {2, {5, 3}, {2, 2}, {2, 2}},
    {2, {9, 10}, {4, 3}, {4, 3}},
    {2, {1, 17}, {1, 16}, {1, 16}},
    {3, {4, 6, 5}, {3, 4, 2}, {3, 4, 2}},
    {3, {3, 1, 8}, {3, 1, 3}, {3, 1, 3}},
    {4, {2, 3, 5, 7}, {1, 2, 3, 4}, {1, 2, 3, 4}},
    {4, {1, 64, 56, 56}, {1, 32, 8, 56}, {1, 32, 8, 56}},
    {4, {3, 5, 2, 9}, {2, 5, 2, 4}, {2, 5, 2, 4}},
    {6, {2, 3, 2, 3, 2, 3}, {1, 2, 2, 2, 1, 2}, {1, 2, 2, 2, 1, 2}},
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Row-major linear index of idx in extent. */
static int64_t linear(int rank, const int64_t *extent, const int64_t *idx) {
    int64_t l = 0;
    for (int i = 0; i < rank; i++) l = l * extent[i] + idx[i];
    return l;
}

static void test_block_range_case(const domain_case *c) {
    char name[160];
    snprintf(name, sizeof name, "block_range rank %d extent %s tile %s", c->rank,
             fmt_dims(c->rank, c->extent), fmt_dims(c->rank, c->tile));
    bd_nest n;
    bare_nest(&n, c->rank, c->extent, c->tile);

    int64_t want_blocks = 1, elems = 1;
    int64_t want_grid[8];
    for (int i = 0; i < c->rank; i++) {
        want_grid[i] = c->extent[i] ? ceil_div(c->extent[i], c->want_tile[i]) : 0;
        want_blocks *= want_grid[i];
        elems *= c->extent[i];
    }
    bool ok = same(c->rank, n.tile, c->want_tile) && same(c->rank, n.grid, want_grid) &&
              n.n_blocks == want_blocks;
    char what[200];
    snprintf(what, sizeof what, "%s: tile/grid/blocks", name);
    check(ok, what, "tile %s grid %s blocks %lld, want %s %s %lld", fmt_dims(c->rank, n.tile),
          fmt_dims(c->rank, n.grid), (long long)n.n_blocks, fmt_dims(c->rank, c->want_tile),
          fmt_dims(c->rank, want_grid), (long long)want_blocks);

    if (c->rank == 0) {
        int64_t lo[1] = {-7}, hi[1] = {-7};
        bd_nest_block_range(&n, 0, lo, hi);
        snprintf(what, sizeof what, "%s: one block, nothing decoded", name);
        check(n.n_blocks == 1 && lo[0] == -7 && hi[0] == -7, what, "blocks %lld lo %lld hi %lld",
              (long long)n.n_blocks, (long long)lo[0], (long long)hi[0]);
        return;
    }

    /* Every block's range is a tile (cut at the upper end), at its grid coordinate (last dim
     * fastest), and the blocks cover every index exactly once. */
    int *cover = calloc((size_t)(elems ? elems : 1), sizeof *cover);
    BD_ASSERT(cover);
    bool shape_ok = true, order_ok = true;
    char first_bad[200] = "";
    for (int64_t b = 0; b < n.n_blocks; b++) {
        int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK], coord[8];
        bd_nest_block_range(&n, b, lo, hi);
        int64_t r = b;
        for (int i = c->rank - 1; i >= 0; i--) {
            coord[i] = r % want_grid[i];
            r /= want_grid[i];
        }
        for (int i = 0; i < c->rank; i++) {
            int64_t want_hi = (coord[i] + 1) * c->want_tile[i];
            if (want_hi > c->extent[i]) want_hi = c->extent[i];
            if (lo[i] != coord[i] * c->want_tile[i] || hi[i] != want_hi) order_ok = false;
            if (!(0 <= lo[i] && lo[i] < hi[i] && hi[i] <= c->extent[i] &&
                  hi[i] - lo[i] <= c->want_tile[i]))
                shape_ok = false;
        }
        if ((!order_ok || !shape_ok) && !first_bad[0])
            snprintf(first_bad, sizeof first_bad, "block %lld: lo %s hi %s", (long long)b,
                     fmt_dims(c->rank, lo), fmt_dims(c->rank, hi));
        if (!shape_ok) continue;
        /* Mark every index of the block. */
        int64_t idx[8];
        for (int i = 0; i < c->rank; i++) idx[i] = lo[i];
        for (;;) {
            cover[linear(c->rank, c->extent, idx)]++;
            int k = c->rank - 1;
            while (k >= 0 && ++idx[k] == hi[k]) idx[k] = lo[k], k--;
            if (k < 0) break;
        }
    }
    snprintf(what, sizeof what, "%s: each block a clamped tile", name);
    check(shape_ok, what, "%s", first_bad);
    snprintf(what, sizeof what, "%s: blocks in row-major grid order", name);
    check(order_ok, what, "%s", first_bad);
    int64_t zero = 0, multi = 0;
    for (int64_t e = 0; e < elems; e++) zero += cover[e] == 0, multi += cover[e] > 1;
    snprintf(what, sizeof what, "%s: blocks partition the %lld indices", name, (long long)elems);
    check(zero == 0 && multi == 0, what, "%lld indices in no block, %lld in several",
          (long long)zero, (long long)multi);
    free(cover);
}

static void test_block_range(void) {
    for (size_t i = 0; i < sizeof domains / sizeof domains[0]; i++) test_block_range_case(&domains[i]);

    /* Extents past 2^32 stay exact (no 32-bit arithmetic anywhere). */
    bd_nest n;
    int64_t ext[2] = {3, 5000000000LL}, tile[2] = {1, 1LL << 30};
    bare_nest(&n, 2, ext, tile);
    int64_t lo[2], hi[2];
    bd_nest_block_range(&n, n.n_blocks - 1, lo, hi);
    check(n.n_blocks == 15 && lo[0] == 2 && hi[0] == 3 && lo[1] == 4 * (1LL << 30) &&
              hi[1] == 5000000000LL,
          "block_range extent 5e9: last block", "blocks %lld lo %s hi %s", (long long)n.n_blocks,
          fmt_dims(2, lo), fmt_dims(2, hi));
}

/* ---------------------------------------------------------------- bd_operand_region */

typedef struct region_case {
    const char *name;
    int in_rank;
    int64_t in_dims[4];
    bd_access_dim map[4];
    int64_t lo[4], hi[4];   /* the block's range over the nest's iteration dims (hi exclusive) */
    int64_t want_lo[4], want_hi[4]; /* inclusive */
} region_case;

#define AFF(i, s, o, w) {BD_ACCESS_AFFINE, i, s, o, w}
#define FULLD {BD_ACCESS_FULL, -1, 0, 0, 0}
#define OPAQ {BD_ACCESS_OPAQUE, -1, 0, 0, 0}

/* The nest's domain is [8, 16, 8, 8] throughout; the operand's extent and map vary. */
static const region_case regions[] = {
    {"identity", 2, {8, 16}, {AFF(0, 1, 0, 0), AFF(1, 1, 0, 0)}, {2, 4}, {5, 12}, {2, 4}, {4, 11}},
    {"identity, last partial block", 2, {8, 16}, {AFF(0, 1, 0, 0), AFF(1, 1, 0, 0)}, {6, 12},
     {8, 16}, {6, 12}, {7, 15}},
    {"broadcast dim (no iter): index 0", 2, {1, 16}, {AFF(-1, 0, 0, 0), AFF(1, 1, 0, 0)}, {4, 8},
     {8, 16}, {0, 8}, {0, 15}},
    {"constant index (no iter, offset 3)", 1, {9}, {AFF(-1, 0, 3, 0)}, {4}, {8}, {3}, {3}},
    {"transpose (dims swapped)", 2, {16, 8}, {AFF(1, 1, 0, 0), AFF(0, 1, 0, 0)}, {2, 4}, {5, 12},
     {4, 2}, {11, 4}},
    /* Conv k3 s2 p1 over 16 rows (8 out): [2*lo-1, 2*(hi-1)-1+2] */
    {"stride 2 pad 1 k3: clamped at 0", 1, {16}, {AFF(0, 2, -1, 2)}, {0}, {4}, {0}, {7}},
    {"stride 2 pad 1 k3: inner", 1, {16}, {AFF(0, 2, -1, 2)}, {2}, {5}, {3}, {9}},
    {"stride 2 pad 1 k3: upper end", 1, {16}, {AFF(0, 2, -1, 2)}, {4}, {8}, {7}, {15}},
    {"stride 2 pad 1 k3 over 15 rows: clamped at the end", 1, {15}, {AFF(0, 2, -1, 2)}, {4}, {8},
     {7}, {14}},
    {"stride 2 pad 1 k3, one block: clamped at both ends", 1, {15}, {AFF(0, 2, -1, 2)}, {0}, {8},
     {0}, {14}},
    /* Dilation 2, k3, pad 2: [lo-2, hi-1-2+4] */
    {"dilation 2 pad 2 k3: both ends clamped", 1, {8}, {AFF(0, 1, -2, 4)}, {0}, {8}, {0}, {7}},
    {"dilation 2 pad 2 k3: inner", 1, {8}, {AFF(0, 1, -2, 4)}, {3}, {5}, {1}, {6}},
    /* Reversed slice x[::-1] over 10: index 9 - i */
    {"negative scale (x[::-1])", 1, {10}, {AFF(0, -1, 9, 0)}, {2}, {5}, {5}, {7}},
    {"negative scale, first block", 1, {10}, {AFF(0, -1, 9, 0)}, {0}, {3}, {7}, {9}},
    /* x[9::-2] over 10 (5 out): index 9 - 2i */
    {"negative scale -2", 1, {10}, {AFF(0, -2, 9, 0)}, {1}, {3}, {5}, {7}},
    {"negative scale -2, last block", 1, {10}, {AFF(0, -2, 9, 0)}, {3}, {5}, {1}, {3}},
    /* Concat piece 2 of an output [20]: the piece's domain is its input, written at offset 12 */
    {"concat offset +12", 1, {20}, {AFF(0, 1, 12, 0)}, {2}, {6}, {14}, {17}},
    {"FULL dim", 2, {8, 33}, {AFF(0, 1, 0, 0), FULLD}, {2, 4}, {3, 8}, {2, 0}, {2, 32}},
    {"OPAQUE dim", 2, {21, 8}, {OPAQ, AFF(1, 1, 0, 0)}, {2, 4}, {3, 8}, {0, 4}, {20, 7}},
    {"mixed: identity, FULL, window, OPAQUE", 4, {8, 5, 8, 7},
     {AFF(0, 1, 0, 0), FULLD, AFF(2, 1, -1, 2), OPAQ}, {1, 0, 4, 0}, {3, 16, 8, 8},
     {1, 0, 3, 0}, {2, 4, 7, 6}},
};

static void test_regions(void) {
    fixture f;
    fx_init(&f);
    int64_t dom[4] = {8, 16, 8, 8};
    int out = fx_value(&f, "out", 4, dom);
    fx_nest(&f, out, NULL);
    for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++) {
        const region_case *c = &regions[i];
        int in = fx_value(&f, "in", c->in_rank, c->in_dims);
        bd_nest *n = fx_nest_at(&f, 0);
        bd_operand o = {.value = in, .write = false, .rank = c->in_rank};
        for (int k = 0; k < c->in_rank; k++) o.dims[k] = c->map[k];
        int64_t lo[4] = {0}, hi[4] = {8, 16, 8, 8};
        for (int k = 0; k < 4 && (c->lo[k] || c->hi[k]); k++) lo[k] = c->lo[k], hi[k] = c->hi[k];
        int64_t rlo[4] = {-99, -99, -99, -99}, rhi[4] = {-99, -99, -99, -99};
        bd_operand_region(n, &o, fx_val(&f, in), lo, hi, rlo, rhi);
        char name[200];
        snprintf(name, sizeof name, "region %s", c->name);
        check(same(c->in_rank, rlo, c->want_lo) && same(c->in_rank, rhi, c->want_hi), name,
              "got %s..%s, want %s..%s", fmt_dims(c->in_rank, rlo), fmt_dims(c->in_rank, rhi),
              fmt_dims(c->in_rank, c->want_lo), fmt_dims(c->in_rank, c->want_hi));
    }

    /* The numpy broadcast helper builds the maps the broadcast cases above assume. */
    int64_t d116[2] = {1, 16}, d16[1] = {16}, d81[2] = {8, 1};
    int a = fx_value(&f, "a", 2, d116), b = fx_value(&f, "b", 1, d16), c = fx_value(&f, "c", 2, d81);
    int o2 = fx_value(&f, "o2", 2, (int64_t[]){8, 16});
    bd_operand oa = {.value = a, .rank = 2}, ob = {.value = b, .rank = 1}, oc = {.value = c, .rank = 2};
    bd_access_broadcast(&oa, fx_val(&f, a), fx_val(&f, o2));
    bd_access_broadcast(&ob, fx_val(&f, b), fx_val(&f, o2));
    bd_access_broadcast(&oc, fx_val(&f, c), fx_val(&f, o2));
    check(oa.dims[0].kind == BD_ACCESS_AFFINE && oa.dims[0].iter == -1 && oa.dims[1].iter == 1 &&
              oa.dims[1].scale == 1,
          "broadcast map [1,16] -> [8,16]: (none, i1)", "iters %d %d", oa.dims[0].iter,
          oa.dims[1].iter);
    check(ob.dims[0].iter == 1 && ob.dims[0].scale == 1, "broadcast map [16] -> [8,16]: (i1)",
          "iter %d scale %lld", ob.dims[0].iter, (long long)ob.dims[0].scale);
    check(oc.dims[0].iter == 0 && oc.dims[1].iter == -1, "broadcast map [8,1] -> [8,16]: (i0, none)",
          "iters %d %d", oc.dims[0].iter, oc.dims[1].iter);
    int64_t lo[2] = {3, 4}, hi[2] = {6, 12}, rlo[2], rhi[2];
    bd_operand_region(fx_nest_at(&f, 0), &oc, fx_val(&f, c), lo, hi, rlo, rhi);
    check(rlo[0] == 3 && rhi[0] == 5 && rlo[1] == 0 && rhi[1] == 0,
          "region through broadcast map [8,1]", "got %s..%s", fmt_dims(2, rlo), fmt_dims(2, rhi));
    fx_free(&f);
}

/* ---------------------------------------------------------------- region -> producer blocks */

/* The producer's write operand for value v, or NULL. */
static const bd_operand *writer_of(const bd_nest *p, int v) {
    for (int k = 0; k < p->n_operands; k++)
        if (p->operands[k].write && p->operands[k].value == v) return &p->operands[k];
    return NULL;
}

static bool overlaps(int rank, const int64_t *alo, const int64_t *ahi, const int64_t *blo,
                     const int64_t *bhi) {
    for (int k = 0; k < rank; k++)
        if (ahi[k] < blo[k] || bhi[k] < alo[k]) return false;
    return true;
}

/* The producer blocks whose written region of value v meets [rlo, rhi] (inclusive): into out (up
 * to cap), returning how many. Brute force over the producer's grid, through its write map. */
static int64_t producer_blocks(const bd_graph *g, const bd_nest *p, int v, const int64_t *rlo,
                               const int64_t *rhi, int64_t *out, int64_t cap) {
    const bd_operand *w = writer_of(p, v);
    if (!w) return 0;
    const bd_value *val = &BD_VEC_AT(&g->values, bd_value, v);
    int64_t count = 0;
    for (int64_t b = 0; b < p->n_blocks; b++) {
        int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK], wlo[BD_MAX_RANK], whi[BD_MAX_RANK];
        bd_nest_block_range(p, b, lo, hi);
        bd_operand_region(p, w, val, lo, hi, wlo, whi);
        if (!overlaps(w->rank, wlo, whi, rlo, rhi)) continue;
        if (count < cap) out[count] = b;
        count++;
    }
    return count;
}

/* Edges from every block of consumer c to the blocks of producer p it reads (any operand). */
static int64_t count_edges(const bd_graph *g, const bd_nest *c, const bd_nest *p) {
    int64_t edges = 0;
    for (int64_t b = 0; b < c->n_blocks; b++) {
        int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK];
        bd_nest_block_range(c, b, lo, hi);
        for (int k = 0; k < c->n_operands; k++) {
            const bd_operand *o = &c->operands[k];
            if (o->write || !writer_of(p, o->value)) continue;
            int64_t rlo[BD_MAX_RANK], rhi[BD_MAX_RANK], dummy[1];
            bd_operand_region(c, o, &BD_VEC_AT(&g->values, bd_value, o->value), lo, hi, rlo, rhi);
            edges += producer_blocks(g, p, o->value, rlo, rhi, dummy, 0);
        }
    }
    return edges;
}

/* A 1x1 or kxk convolution nest, stride 1, pad (k-1)/2: reads x (N identity, C FULL, spatial
 * windows) and w (dim 0 by the output channel, the rest FULL), writes y. */
static void conv_nest(fixture *f, int x, int w, int y, int64_t k, const int64_t *tile) {
    bd_nest *n = bd_nest_begin(&f->p, -1, BD_BODY_CONV, fx_val(f, y));
    bd_nest_set_tile(f->g, n, tile);
    bd_operand *ox = bd_nest_operand(n, x, false, 4);
    ox->dims[0] = (bd_access_dim)AFF(0, 1, 0, 0);
    ox->dims[1] = (bd_access_dim)FULLD;
    ox->dims[2] = (bd_access_dim)AFF(2, 1, -(k - 1) / 2, k - 1);
    ox->dims[3] = (bd_access_dim)AFF(3, 1, -(k - 1) / 2, k - 1);
    bd_operand *ow = bd_nest_operand(n, w, false, 4);
    bd_access_full(ow);
    ow->dims[0] = (bd_access_dim)AFF(1, 1, 0, 0);
    bd_access_identity(bd_nest_operand(n, y, true, 4), 0);
}

static void test_worked_example(void) {
    fixture f;
    fx_init(&f);
    int64_t act[4] = {1, 64, 56, 56}, w1[4] = {64, 64, 1, 1}, w3[4] = {64, 64, 3, 3};
    int64_t tile[4] = {1, 32, 8, 56};
    int x = fx_value(&f, "x", 4, act), a = fx_value(&f, "A", 4, act), b = fx_value(&f, "B", 4, act);
    int wa = fx_value(&f, "wA", 4, w1), wb = fx_value(&f, "wB", 4, w3);
    conv_nest(&f, x, wa, a, 1, tile);
    conv_nest(&f, a, wb, b, 3, tile);
    const bd_nest *na = fx_nest_at(&f, 0), *nb = fx_nest_at(&f, 1);

    int64_t want_grid[4] = {1, 2, 7, 1};
    check(na->n_blocks == 14 && nb->n_blocks == 14 && same(4, na->grid, want_grid) &&
              same(4, nb->grid, want_grid),
          "worked example: 2 x 7 = 14 blocks per op", "A %lld %s, B %lld %s",
          (long long)na->n_blocks, fmt_dims(4, na->grid), (long long)nb->n_blocks,
          fmt_dims(4, nb->grid));

    /* B's block (c-block 0, h-block 1) is block 1: c 0..31, h 8..15. */
    int64_t lo[4], hi[4];
    bd_nest_block_range(nb, 1, lo, hi);
    int64_t blo[4] = {0, 0, 8, 0}, bhi[4] = {1, 32, 16, 56};
    check(same(4, lo, blo) && same(4, hi, bhi), "worked example: B block 1 is c 0..31, h 8..15",
          "lo %s hi %s", fmt_dims(4, lo), fmt_dims(4, hi));

    const bd_operand *ra = &nb->operands[0];
    int64_t rlo[4], rhi[4];
    bd_operand_region(nb, ra, fx_val(&f, a), lo, hi, rlo, rhi);
    int64_t want_lo[4] = {0, 0, 7, 0}, want_hi[4] = {0, 63, 16, 55};
    check(same(4, rlo, want_lo) && same(4, rhi, want_hi),
          "worked example: B block reads A n 0, c 0..63, h 7..16, w 0..55", "got %s..%s",
          fmt_dims(4, rlo), fmt_dims(4, rhi));
    check(lo[2] - rlo[2] == 1 && rhi[2] - (hi[2] - 1) == 1,
          "worked example: halo 1 row above and below", "above %lld below %lld",
          (long long)(lo[2] - rlo[2]), (long long)(rhi[2] - (hi[2] - 1)));
    check(lo[3] - rlo[3] == 0 && rhi[3] - (hi[3] - 1) == 0,
          "worked example: no halo along W (whole rows, clamped)", "left %lld right %lld",
          (long long)(lo[3] - rlo[3]), (long long)(rhi[3] - (hi[3] - 1)));

    int64_t got[16];
    int64_t n = producer_blocks(f.g, na, a, rlo, rhi, got, 16);
    /* c-block {0,1} x h-block {0,1,2}: block = c*7 + h */
    int64_t want[6] = {0, 1, 2, 7, 8, 9};
    check(n == 6 && same(6, got, want), "worked example: needs 6 producer blocks, not 14",
          "%lld blocks %s", (long long)n, fmt_dims((int)(n < 16 ? n : 16), got));

    /* The same set from the grid arithmetic (A writes by identity): tiles meeting [rlo, rhi]. */
    int64_t span = 1;
    for (int k = 0; k < 4; k++) span *= rhi[k] / na->tile[k] - rlo[k] / na->tile[k] + 1;
    check(span == n, "worked example: brute force equals the grid-interval count",
          "grid says %lld, brute force %lld", (long long)span, (long long)n);

    /* Edge blocks: the first and last h-blocks clamp their halo and need 4 producer blocks. */
    bd_nest_block_range(nb, 0, lo, hi);
    bd_operand_region(nb, ra, fx_val(&f, a), lo, hi, rlo, rhi);
    n = producer_blocks(f.g, na, a, rlo, rhi, got, 16);
    int64_t want0[4] = {0, 1, 7, 8};
    check(rlo[2] == 0 && rhi[2] == 8 && n == 4 && same(4, got, want0),
          "worked example: first h-block reads h 0..8 from 4 producer blocks", "h %lld..%lld, %lld blocks %s",
          (long long)rlo[2], (long long)rhi[2], (long long)n, fmt_dims((int)(n < 16 ? n : 16), got));
    bd_nest_block_range(nb, 13, lo, hi);
    bd_operand_region(nb, ra, fx_val(&f, a), lo, hi, rlo, rhi);
    n = producer_blocks(f.g, na, a, rlo, rhi, got, 16);
    int64_t want13[4] = {5, 6, 12, 13};
    check(lo[1] == 32 && lo[2] == 48 && rlo[2] == 47 && rhi[2] == 55 && n == 4 && same(4, got, want13),
          "worked example: last block reads h 47..55 from 4 producer blocks", "h %lld..%lld, %lld blocks %s",
          (long long)rlo[2], (long long)rhi[2], (long long)n, fmt_dims((int)(n < 16 ? n : 16), got));

    /* All of B against A: 5 inner h-blocks x 2 c-blocks x 6 + 2 edge h-blocks x 2 x 4 = 76, and
     * A's input x has no producer nest. */
    int64_t e = count_edges(f.g, nb, na);
    check(e == 76, "worked example: 76 block edges B -> A (of 14 x 14 = 196)", "got %lld", (long long)e);
    check(count_edges(f.g, na, nb) == 0, "worked example: no edges A -> B", "A reads what B writes");
    fx_free(&f);
}

static void test_branches(void) {
    fixture f;
    fx_init(&f);
    int64_t act[4] = {1, 64, 56, 56}, w1[4] = {64, 64, 1, 1}, tile[4] = {1, 32, 8, 56};
    int x = fx_value(&f, "x", 4, act), p = fx_value(&f, "p", 4, act), q = fx_value(&f, "q", 4, act);
    int wp = fx_value(&f, "wp", 4, w1), wq = fx_value(&f, "wq", 4, w1);
    int s = fx_value(&f, "s", 4, act);
    conv_nest(&f, x, wp, p, 1, tile);
    conv_nest(&f, x, wq, q, 1, (int64_t[]){1, 16, 14, 56}); /* a different tiling */
    /* The join: s = p + q, elementwise, tiled like p. */
    bd_nest *ns = fx_nest(&f, s, tile);
    bd_access_identity(bd_nest_operand(ns, p, false, 4), 0);
    bd_access_identity(bd_nest_operand(ns, q, false, 4), 0);
    const bd_nest *np = fx_nest_at(&f, 0), *nq = fx_nest_at(&f, 1);
    ns = fx_nest_at(&f, 2);

    check(count_edges(f.g, nq, np) == 0 && count_edges(f.g, np, nq) == 0,
          "branches: no block of one branch touches the other's output", "edges found");
    /* Every block of either branch, every read operand: nothing the other writes. */
    bool clean = true;
    const bd_nest *br[2] = {np, nq};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < br[i]->n_operands; k++)
            if (!br[i]->operands[k].write && writer_of(br[1 - i], br[i]->operands[k].value))
                clean = false;
    check(clean, "branches: neither reads a value the other writes", "shared value");
    /* Both read x: a shared input is not an edge (x has no producer nest). */
    check(np->operands[0].value == x && nq->operands[0].value == x,
          "branches: both read the same input", "inputs %d %d", np->operands[0].value,
          nq->operands[0].value);
    /* The join does depend on both, on exactly the matching blocks: p's tiling is its own (one
     * block each), q's is (16, 14) so a (32, 8) block meets 2 c-tiles x 1 or 2 h-tiles. */
    int64_t ep = count_edges(f.g, ns, np), eq = count_edges(f.g, ns, nq);
    /* h-blocks of 8 against q's h-tiles of 14: blocks 0..6 meet 1,2,1,2,1,2,1 q-tiles = 10 */
    check(ep == 14, "branches: join -> p is one block per block (14)", "got %lld", (long long)ep);
    check(eq == 2 * 2 * 10, "branches: join -> q meets 40 blocks across tilings", "got %lld",
          (long long)eq);
    /* The block schedule may run q beside p, not the join, whose every block waits for a block
     * of each: the memory plan keeps p's values live through q's step. */
    bd_deps deps;
    bd_schedule sched;
    bd_deps_analyze(&f.p, &deps, NULL);
    bd_schedule_program(&f.p, &deps, BD_SCHEDULE_BLOCK, &sched, NULL);
    check(sched.overlap_end && sched.overlap_end[0] == 1 && sched.overlap_end[1] == 1 &&
              sched.overlap_end[2] == 2,
          "branches: p may run beside q (overlap through step 1), q and the join beside nothing",
          "%d %d %d", sched.overlap_end ? sched.overlap_end[0] : -1,
          sched.overlap_end ? sched.overlap_end[1] : -1,
          sched.overlap_end ? sched.overlap_end[2] : -1);
    bd_schedule_free(&sched);
    bd_deps_free(&deps);
    fx_free(&f);
}

/* The run order: two branches from one input, the later one (a 3x3 convolution, 9x the work of
 * the 1x1 before it) first, since more work lies behind its blocks; a topological order. */
static void test_rank(void) {
    fixture f;
    fx_init(&f);
    int64_t act[4] = {1, 64, 28, 28}, w1[4] = {64, 64, 1, 1}, w3[4] = {64, 64, 3, 3};
    int64_t tile[4] = {1, 64, 14, 28};
    int x = fx_value(&f, "x", 4, act), a = fx_value(&f, "a", 4, act), b = fx_value(&f, "b", 4, act);
    int s = fx_value(&f, "s", 4, act);
    conv_nest(&f, x, fx_value(&f, "w1", 4, w1), a, 1, tile);
    conv_nest(&f, x, fx_value(&f, "w3", 4, w3), b, 3, tile);
    bd_nest *ns = fx_nest(&f, s, tile);
    bd_access_identity(bd_nest_operand(ns, a, false, 4), 0);
    bd_access_identity(bd_nest_operand(ns, b, false, 4), 0);
    bd_deps deps;
    bd_schedule sched;
    bd_deps_analyze(&f.p, &deps, NULL);
    bd_schedule_program(&f.p, &deps, BD_SCHEDULE_BLOCK, &sched, NULL);
    bd_schedule_rank(&f.p, &sched);
    bool forward = sched.rank != NULL;
    for (int t = 0; forward && t < sched.n_tasks; t++)
        for (int j = sched.succ_start[t]; j < sched.succ_start[t + 1]; j++)
            forward = forward && sched.rank[t] < sched.rank[sched.succ[j]];
    check(forward, "rank: every edge goes forward in the run order", "an edge goes back");
    int a0 = sched.first_task[0], b0 = sched.first_task[1];
    check(forward && sched.rank[b0] == 0 && sched.rank[b0 + 1] == 1 && sched.rank[a0] == 2,
          "rank: the 3x3 branch's blocks run first, then the 1x1's", "ranks %d %d %d",
          forward ? sched.rank[b0] : -1, forward ? sched.rank[b0 + 1] : -1,
          forward ? sched.rank[a0] : -1);
    bd_schedule_free(&sched);
    bd_deps_free(&deps);
    fx_free(&f);
}

/* ---------------------------------------------------------------- block-dependency analysis */

/* Every edge, every consumer block: the box equals (exact) or contains (not exact) the producer
 * blocks a brute-force scan of the grid finds for the block's region. */
static void check_boxes(fixture *f, const bd_deps *deps, const char *name, bool exact) {
    bool ok = true;
    char why[256] = "";
    for (size_t i = 0; i < deps->edges.len && ok; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, i);
        const bd_nest *c = fx_nest_at(f, (size_t)e->consumer), *pn = fx_nest_at(f, (size_t)e->producer);
        for (int64_t b = 0; b < c->n_blocks && ok; b++) {
            int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK], rlo[BD_MAX_RANK], rhi[BD_MAX_RANK];
            int64_t blo[BD_MAX_RANK], bhi[BD_MAX_RANK], got[256];
            bd_nest_block_range(c, b, lo, hi);
            bd_operand_region(c, &c->operands[e->operand], fx_val(f, e->value), lo, hi, rlo, rhi);
            int64_t n = producer_blocks(f->g, pn, e->value, rlo, rhi, got, 256);
            bool any = bd_dep_box(e, b, blo, bhi);
            int64_t in_box = 0, size = any ? 1 : 0;
            for (int j = 0; j < e->rank && any; j++) size *= bhi[j] - blo[j] + 1;
            for (int64_t k = 0; k < n && k < 256; k++) {
                int64_t plo[BD_MAX_RANK], phi[BD_MAX_RANK], pt[BD_MAX_RANK];
                bd_nest_block_range(pn, got[k], plo, phi);
                bool inside = any;
                for (int j = 0; j < e->rank && inside; j++) {
                    pt[j] = plo[j] / pn->tile[j];
                    inside = pt[j] >= blo[j] && pt[j] <= bhi[j];
                }
                in_box += inside;
            }
            if (in_box != n || (exact && size != n)) {
                ok = false;
                snprintf(why, sizeof why, "edge %zu block %lld: box of %lld holds %lld of the %lld "
                         "brute-force blocks", i, (long long)b, (long long)size, (long long)in_box,
                         (long long)n);
            }
        }
    }
    check(ok, name, "%s", why);
}

static const bd_dep_edge *edge_of(const bd_deps *deps, int producer, int consumer) {
    for (size_t i = 0; i < deps->edges.len; i++) {
        const bd_dep_edge *e = &BD_VEC_AT(&deps->edges, bd_dep_edge, i);
        if (e->producer == producer && e->consumer == consumer) return e;
    }
    return NULL;
}

/* The box of consumer block b as "lo..hi,lo..hi" (or "empty"). */
static const char *box_str(const bd_dep_edge *e, int64_t b) {
    static char ring[4][128];
    static int next;
    char *s = ring[next++ % 4];
    int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK];
    if (!bd_dep_box(e, b, lo, hi)) return strcpy(s, "empty");
    size_t o = 0;
    for (int j = 0; j < e->rank; j++)
        o += (size_t)snprintf(s + o, 128 - o, "%s%lld..%lld", j ? "," : "", (long long)lo[j],
                              (long long)hi[j]);
    return s;
}

static void test_deps_conv_halo(void) {
    fixture f;
    fx_init(&f);
    int64_t act[4] = {1, 64, 56, 56}, w1[4] = {64, 64, 1, 1}, w3[4] = {64, 64, 3, 3};
    int64_t tile[4] = {1, 32, 8, 56};
    int x = fx_value(&f, "x", 4, act), a = fx_value(&f, "A", 4, act), b = fx_value(&f, "B", 4, act);
    conv_nest(&f, x, fx_value(&f, "wA", 4, w1), a, 1, tile);
    conv_nest(&f, a, fx_value(&f, "wB", 4, w3), b, 3, tile);
    bd_deps deps;
    bd_deps_analyze(&f.p, &deps, NULL);
    const bd_dep_edge *e = edge_of(&deps, 0, 1);
    check(e && deps.edges.len == 1, "deps conv3x3: one edge A -> B", "%zu edges", deps.edges.len);
    if (e) {
        /* c-blocks 0..1 (the conv reads every channel), h-blocks one above and below */
        check(e->cls == BD_DEP_PANEL, "deps conv3x3: PANEL (every box spans A's channel blocks)",
              "class %s", bd_dep_class_name(e->cls));
        check(!strcmp(box_str(e, 1), "0..0,0..1,0..2,0..0") && !strcmp(box_str(e, 0), "0..0,0..1,0..1,0..0") &&
                  !strcmp(box_str(e, 13), "0..0,0..1,5..6,0..0"),
              "deps conv3x3: boxes of blocks 0, 1 and 13", "%s / %s / %s", box_str(e, 0),
              box_str(e, 1), box_str(e, 13));
        check(e->block_edges == 76, "deps conv3x3: 76 block edges (the brute-force count)", "got %lld",
              (long long)e->block_edges);
        /* 64 * 56 * 56 outputs, each reading 64 channels x 3 x 3 (the map's window) */
        check(e->element_pairs == 64LL * 56 * 56 * 64 * 9, "deps conv3x3: element pairs",
              "got %lld", (long long)e->element_pairs);
    }
    check(deps.op_edges == 1 && deps.total_blocks == 28 && deps.critical_blocks == 2,
          "deps conv3x3: 1 operator edge, 28 blocks, critical path 2", "%lld, %lld, %lld",
          (long long)deps.op_edges, (long long)deps.total_blocks, (long long)deps.critical_blocks);
    check_boxes(&f, &deps, "deps conv3x3: boxes equal the brute-force block sets", true);
    bd_deps_free(&deps);

    /* The same with one channel block: the halo is LOCAL along h only. */
    fx_free(&f);
    fx_init(&f);
    int64_t whole_c[4] = {1, 64, 8, 56};
    x = fx_value(&f, "x", 4, act), a = fx_value(&f, "A", 4, act), b = fx_value(&f, "B", 4, act);
    conv_nest(&f, x, fx_value(&f, "wA", 4, w1), a, 1, whole_c);
    conv_nest(&f, a, fx_value(&f, "wB", 4, w3), b, 3, whole_c);
    bd_deps_analyze(&f.p, &deps, NULL);
    e = edge_of(&deps, 0, 1);
    check(e && e->cls == BD_DEP_LOCAL && e->halo == 2 && e->block_edges == 3 * 7 - 2,
          "deps conv3x3, whole channels: LOCAL, 3 h-blocks wide (halo 2), 19 block edges",
          "class %s halo %lld edges %lld", e ? bd_dep_class_name(e->cls) : "-",
          e ? (long long)e->halo : -1, e ? (long long)e->block_edges : -1);
    check_boxes(&f, &deps, "deps conv3x3, whole channels: boxes exact", true);
    bd_deps_free(&deps);
    fx_free(&f);
}

static void test_deps_transpose_concat_broadcast(void) {
    fixture f;
    fx_init(&f);
    /* transpose: P writes [8, 12] in (4, 6) tiles; T reads it as [12, 8] in (6, 2) tiles */
    int64_t pd[2] = {8, 12}, td[2] = {12, 8};
    int pv = fx_value(&f, "P", 2, pd), tv = fx_value(&f, "T", 2, td);
    fx_nest(&f, pv, (int64_t[]){4, 6});
    bd_nest *t = fx_nest(&f, tv, (int64_t[]){6, 2});
    bd_operand *o = bd_nest_operand(t, pv, false, 2);
    o->dims[0] = (bd_access_dim)AFF(1, 1, 0, 0);
    o->dims[1] = (bd_access_dim)AFF(0, 1, 0, 0);
    /* concat: C1 [1, 4, 8] and C2 [1, 6, 8] write Y [1, 10, 8] at channel 0 and 4; R reads Y in
     * (1, 5, 8) tiles */
    int64_t c1d[3] = {1, 4, 8}, c2d[3] = {1, 6, 8}, yd[3] = {1, 10, 8};
    int c1 = fx_value(&f, "C1", 3, c1d), c2 = fx_value(&f, "C2", 3, c2d);
    int y = fx_value(&f, "Y", 3, yd), r = fx_value(&f, "R", 3, yd);
    int parts[2] = {c1, c2};
    int64_t offsets[2] = {0, 4}, part_tile[3] = {1, 2, 8};
    for (int k = 0; k < 2; k++) {
        bd_nest *pn = bd_nest_begin(&f.p, -1, BD_BODY_COPY, fx_val(&f, parts[k]));
        bd_nest_set_tile(f.g, pn, part_tile);
        bd_access_identity(bd_nest_operand(pn, parts[k], false, 3), 0);
        bd_operand *w = bd_nest_operand(pn, y, true, 3);
        bd_access_identity(w, 0);
        w->dims[1].offset = offsets[k];
    }
    bd_nest *rn = fx_nest(&f, r, (int64_t[]){1, 5, 8});
    bd_access_identity(bd_nest_operand(rn, y, false, 3), 0);
    /* broadcast: B [1, 8] in (1, 4) tiles, S [4, 8] reads it in (2, 4) tiles */
    int64_t bd_[2] = {1, 8}, sd[2] = {4, 8};
    int bv = fx_value(&f, "B", 2, bd_), sv = fx_value(&f, "S", 2, sd);
    fx_nest(&f, bv, (int64_t[]){1, 4});
    bd_nest *sn = fx_nest(&f, sv, (int64_t[]){2, 4});
    bd_access_broadcast(bd_nest_operand(sn, bv, false, 2), fx_val(&f, bv), fx_val(&f, sv));

    bd_deps deps;
    bd_deps_analyze(&f.p, &deps, NULL);
    /* nests: 0 P, 1 T, 2 C1-part, 3 C2-part, 4 R, 5 B, 6 S */
    const bd_dep_edge *e = edge_of(&deps, 0, 1);
    /* T block (i0 6-block a, i1 2-block b) reads P rows 2b..2b+1 (P row-block b/2), cols 6a.. */
    check(e && e->cls == BD_DEP_LOCAL && !strcmp(box_str(e, 0), "0..0,0..0") &&
              !strcmp(box_str(e, 3), "1..1,0..0") && !strcmp(box_str(e, 4), "0..0,1..1"),
          "deps transpose: T block b needs the P block at the transposed tile", "%s %s %s",
          e ? box_str(e, 0) : "-", e ? box_str(e, 3) : "-", e ? box_str(e, 4) : "-");
    const bd_dep_edge *e1 = edge_of(&deps, 2, 4), *e2 = edge_of(&deps, 3, 4);
    /* R block 0 = channels 0..4: part 1 (channels 0..3, its blocks 0..1) and part 2's channel 0
     * (its block 0); R block 1 = channels 5..9: part 2 channels 1..5 (blocks 0..2), not part 1 */
    check(e1 && e2 && !strcmp(box_str(e1, 0), "0..0,0..1,0..0") && !strcmp(box_str(e1, 1), "empty") &&
              !strcmp(box_str(e2, 0), "0..0,0..0,0..0") && !strcmp(box_str(e2, 1), "0..0,0..2,0..0"),
          "deps concat: each part at its channel offset, none beyond", "%s %s %s %s",
          e1 ? box_str(e1, 0) : "-", e1 ? box_str(e1, 1) : "-", e2 ? box_str(e2, 0) : "-",
          e2 ? box_str(e2, 1) : "-");
    check(e1 && e2 && e1->block_edges == 2 && e2->block_edges == 4, "deps concat: 2 + 4 block edges",
          "%lld + %lld", e1 ? (long long)e1->block_edges : -1, e2 ? (long long)e2->block_edges : -1);
    e = edge_of(&deps, 5, 6);
    check(e && e->cls == BD_DEP_LOCAL && e->halo == 0 && !strcmp(box_str(e, 0), "0..0,0..0") &&
              !strcmp(box_str(e, 3), "0..0,1..1") && e->block_edges == 4,
          "deps broadcast: each S block needs the one B block of its columns", "%s %s",
          e ? box_str(e, 0) : "-", e ? box_str(e, 3) : "-");
    check_boxes(&f, &deps, "deps transpose/concat/broadcast: boxes exact", true);
    bd_deps_free(&deps);
    fx_free(&f);

    /* Concat in place (fuse/views.c): C1's and C2's producers write straight into Y's slices;
     * R's blocks then need the producers' blocks at the same channels as through the copies. */
    fx_init(&f);
    c1 = fx_value(&f, "C1", 3, c1d), c2 = fx_value(&f, "C2", 3, c2d);
    y = fx_value(&f, "Y", 3, yd), r = fx_value(&f, "R", 3, yd);
    fx_nest(&f, c1, part_tile);
    fx_nest(&f, c2, part_tile);
    rn = fx_nest(&f, r, (int64_t[]){1, 5, 8});
    bd_access_identity(bd_nest_operand(rn, y, false, 3), 0);
    size_t nv = f.g->values.len;
    f.p.inside_of = malloc(nv * sizeof *f.p.inside_of);
    f.p.inside_axis = malloc(nv * sizeof *f.p.inside_axis);
    f.p.inside_at = malloc(nv * sizeof *f.p.inside_at);
    for (size_t v = 0; v < nv; v++) f.p.inside_of[v] = -1;
    f.p.inside_of[c1] = f.p.inside_of[c2] = y;
    f.p.inside_axis[c1] = f.p.inside_axis[c2] = 1;
    f.p.inside_at[c1] = 0, f.p.inside_at[c2] = 4;
    bd_deps_analyze(&f.p, &deps, NULL);
    e1 = edge_of(&deps, 0, 2), e2 = edge_of(&deps, 1, 2);
    check(e1 && e2 && !strcmp(box_str(e1, 0), "0..0,0..1,0..0") && !strcmp(box_str(e1, 1), "empty") &&
              !strcmp(box_str(e2, 0), "0..0,0..0,0..0") && !strcmp(box_str(e2, 1), "0..0,0..2,0..0"),
          "deps concat in place: the producers' blocks at each part's offset", "%s %s %s %s",
          e1 ? box_str(e1, 0) : "-", e1 ? box_str(e1, 1) : "-", e2 ? box_str(e2, 0) : "-",
          e2 ? box_str(e2, 1) : "-");
    bd_deps_free(&deps);
    fx_free(&f);
}

/* A Concat part nest: x copied into y at `at` along dim 1 (as lower_concat writes it). */
static void part_nest(fixture *f, int x, int y, int64_t at, const int64_t *tile) {
    bd_nest *pn = bd_nest_begin(&f->p, -1, BD_BODY_COPY, fx_val(f, x));
    bd_nest_set_tile(f->g, pn, tile);
    bd_access_identity(bd_nest_operand(pn, x, false, 3), 0);
    bd_operand *w = bd_nest_operand(pn, y, true, 3);
    bd_access_identity(w, 0);
    w->dims[1].offset = at;
}

/* DenseNet's concat chain through bd_concat_in_place: Y1 = [F0, f1] and Y2 = [F0, f1, f2] (a
 * one-input concat Y0 = [F0] too). Every feature goes inside Y2 at its offset, Y0 and Y1 are its
 * prefixes, every copy goes, and Y1's reader needs exactly the producer blocks of its channels. */
static void test_deps_concat_chain(void) {
    fixture f;
    fx_init(&f);
    f.p.fusion = BD_FUSION_OP;
    int64_t d0[3] = {1, 4, 8}, df[3] = {1, 2, 8}, dy0[3] = {1, 4, 8}, dy1[3] = {1, 6, 8}, dy2[3] = {1, 8, 8};
    int64_t tile[3] = {1, 2, 8};
    int F0 = fx_value(&f, "F0", 3, d0), f1 = fx_value(&f, "f1", 3, df), f2 = fx_value(&f, "f2", 3, df);
    int y0 = fx_value(&f, "Y0", 3, dy0), y1 = fx_value(&f, "Y1", 3, dy1), y2 = fx_value(&f, "Y2", 3, dy2);
    int r0 = fx_value(&f, "R0", 3, dy0), r1 = fx_value(&f, "R1", 3, dy1), r2 = fx_value(&f, "R2", 3, dy2);
    fx_nest(&f, F0, tile);
    part_nest(&f, F0, y0, 0, tile);
    bd_nest *rn = fx_nest(&f, r0, tile);
    bd_access_identity(bd_nest_operand(rn, y0, false, 3), 0);
    fx_nest(&f, f1, tile);
    part_nest(&f, F0, y1, 0, tile);
    part_nest(&f, f1, y1, 4, tile);
    rn = fx_nest(&f, r1, (int64_t[]){1, 3, 8});
    bd_access_identity(bd_nest_operand(rn, y1, false, 3), 0);
    fx_nest(&f, f2, tile);
    part_nest(&f, F0, y2, 0, tile);
    part_nest(&f, f1, y2, 4, tile);
    part_nest(&f, f2, y2, 6, tile);
    rn = fx_nest(&f, r2, tile);
    bd_access_identity(bd_nest_operand(rn, y2, false, 3), 0);
    int y3 = fx_value(&f, "Y3", 3, (int64_t[]){1, 4, 8}), r3 = fx_value(&f, "R3", 3, (int64_t[]){1, 4, 8});
    part_nest(&f, f1, y3, 0, tile); /* Y3 = [f1, f2]: inside Y2 from channel 4 */
    part_nest(&f, f2, y3, 2, tile);
    rn = fx_nest(&f, r3, tile);
    bd_access_identity(bd_nest_operand(rn, y3, false, 3), 0);
    bd_concat_in_place(&f.p);
    const int *in = f.p.inside_of;
    const int64_t *at = f.p.inside_at;
    check(f.p.nests.len == 7 && in[F0] == y2 && in[f1] == y2 && in[f2] == y2 && in[y0] == y2 &&
              in[y1] == y2 && in[y3] == y2 && in[y2] < 0 && at[F0] == 0 && at[f1] == 4 && at[f2] == 6 &&
              at[y0] == 0 && at[y1] == 0 && at[y3] == 4,
          "concat chain: the features inside the last concat, the others its slices, no copy",
          "%zu nests; inside F0 %d f1 %d f2 %d Y0 %d Y1 %d Y3 %d (Y2 is t%d)", f.p.nests.len, in[F0],
          in[f1], in[f2], in[y0], in[y1], in[y3], y2);
    bd_deps deps;
    bd_deps_analyze(&f.p, &deps, NULL);
    /* nests: 0 F0, 1 R0, 2 f1, 3 R1, 4 f2, 5 R2; R1 block 0 = channels 0..2 (F0 blocks 0..1),
     * block 1 = channels 3..5 (F0 block 1, f1 block 0); f2 is not in Y1 */
    const bd_dep_edge *e0 = edge_of(&deps, 0, 3), *e1 = edge_of(&deps, 2, 3), *e2 = edge_of(&deps, 4, 3);
    check(e0 && e1 && !strcmp(box_str(e0, 0), "0..0,0..1,0..0") && !strcmp(box_str(e0, 1), "0..0,1..1,0..0") &&
              !strcmp(box_str(e1, 0), "empty") && !strcmp(box_str(e1, 1), "0..0,0..0,0..0") &&
              (!e2 || (!strcmp(box_str(e2, 0), "empty") && !strcmp(box_str(e2, 1), "empty"))),
          "concat chain: a prefix's reader needs the blocks of its channels, none of a later feature",
          "%s %s / %s %s / %s", e0 ? box_str(e0, 0) : "-", e0 ? box_str(e0, 1) : "-",
          e1 ? box_str(e1, 0) : "-", e1 ? box_str(e1, 1) : "-", e2 ? box_str(e2, 1) : "no edge");
    e2 = edge_of(&deps, 4, 5);
    check(e2 && edge_of(&deps, 0, 5) && edge_of(&deps, 2, 5) && !strcmp(box_str(e2, 3), "0..0,0..0,0..0") &&
              !strcmp(box_str(e2, 2), "empty"),
          "concat chain: the container's reader needs each feature's blocks at its offset", "%s %s",
          e2 ? box_str(e2, 2) : "-", e2 ? box_str(e2, 3) : "-");
    /* R3 (nest 6) block 0 = Y3 channels 0..1 = f1, block 1 = f2: through the shift of 4 */
    e0 = edge_of(&deps, 0, 6), e1 = edge_of(&deps, 2, 6), e2 = edge_of(&deps, 4, 6);
    check(e1 && e2 && (!e0 || (!strcmp(box_str(e0, 0), "empty") && !strcmp(box_str(e0, 1), "empty"))) &&
              !strcmp(box_str(e1, 0), "0..0,0..0,0..0") &&
              !strcmp(box_str(e1, 1), "empty") && !strcmp(box_str(e2, 0), "empty") &&
              !strcmp(box_str(e2, 1), "0..0,0..0,0..0"),
          "concat chain: a slice at a shift needs the features at its channels", "%s %s / %s %s",
          e1 ? box_str(e1, 0) : "-", e1 ? box_str(e1, 1) : "-", e2 ? box_str(e2, 0) : "-",
          e2 ? box_str(e2, 1) : "-");
    bd_deps_free(&deps);
    fx_free(&f);
}

/* A reshape nest x -> y (the Reshape-family copy: its read map follows the tile). */
static void reshape_nest(fixture *f, int x, int y, const int64_t *tile) {
    bd_nest *n = bd_nest_begin(&f->p, -1, BD_BODY_COPY, fx_val(f, y));
    n->params.copy.reshape = true;
    bd_nest_operand(n, x, false, fx_val(f, x)->rank);
    bd_access_identity(bd_nest_operand(n, y, true, fx_val(f, y)->rank), 0);
    bd_nest_set_tile(f->g, n, tile);
}

static void test_deps_reduce_reshape(void) {
    fixture f;
    fx_init(&f);
    /* reduction: P [4, 16] in (2, 4) tiles; M [4, 1] reduces dim 1 (read FULL) */
    int64_t pd[2] = {4, 16}, md[2] = {4, 1};
    int pv = fx_value(&f, "P", 2, pd), mv = fx_value(&f, "M", 2, md);
    fx_nest(&f, pv, (int64_t[]){2, 4});
    bd_nest *m = fx_nest(&f, mv, (int64_t[]){4, 1});
    bd_access_full(bd_nest_operand(m, pv, false, 2));
    /* split: Q [6, 4] in (2, 4) tiles -> reshape to [2, 3, 4] in (1, 3, 4) tiles: exact */
    int64_t qd[2] = {6, 4}, sd[3] = {2, 3, 4}, vd[2] = {6, 4};
    int qv = fx_value(&f, "Q", 2, qd), sv = fx_value(&f, "S", 3, sd);
    fx_nest(&f, qv, (int64_t[]){2, 4});
    reshape_nest(&f, qv, sv, (int64_t[]){1, 3, 4});
    /* merge: S [2, 3, 4] -> V [6, 4] in (3, 4) tiles: the merged dim is cut, so conservative */
    int vv = fx_value(&f, "V", 2, vd);
    reshape_nest(&f, sv, vv, (int64_t[]){3, 4});
    bd_deps deps;
    bd_deps_analyze(&f.p, &deps, NULL);
    /* nests: 0 P, 1 M, 2 Q, 3 reshape Q->S, 4 reshape S->V */
    const bd_dep_edge *e = edge_of(&deps, 0, 1);
    check(e && e->cls == BD_DEP_ALL && e->block_edges == 8, "deps reduction: ALL, 8 block edges",
          "class %s, %lld", e ? bd_dep_class_name(e->cls) : "-", e ? (long long)e->block_edges : -1);
    e = edge_of(&deps, 2, 3);
    /* S block k (rows 3k..3k+2 of Q) needs Q row-blocks 3k/2 .. (3k+2)/2 */
    check(e && !strcmp(box_str(e, 0), "0..1,0..0") && !strcmp(box_str(e, 1), "1..2,0..0"),
          "deps reshape split: exact row-blocks", "%s %s", e ? box_str(e, 0) : "-",
          e ? box_str(e, 1) : "-");
    e = edge_of(&deps, 3, 4);
    check(e && e->cls == BD_DEP_ALL, "deps reshape merge across a tile: conservative (ALL)",
          "class %s", e ? bd_dep_class_name(e->cls) : "-");
    check_boxes(&f, &deps, "deps reduction/reshape: boxes hold the brute-force sets", false);
    bd_deps_free(&deps);
    fx_free(&f);

    /* The same merge as a zero-copy view (fuse/views.c): V [6, 4] is the bytes of S [2, 3, 4];
     * a V block of rows 3k..3k+2 is S's row k, one block: exact where the copy was ALL. A view
     * that cuts the merged group mid-row gets the bounding box of its linear span. */
    fx_init(&f);
    sv = fx_value(&f, "S", 3, sd);
    vv = fx_value(&f, "V", 2, vd);
    int wv = fx_value(&f, "W", 2, vd), w2 = fx_value(&f, "W2", 2, vd);
    fx_nest(&f, sv, (int64_t[]){1, 3, 4});
    bd_nest *c = fx_nest(&f, wv, (int64_t[]){3, 4});
    bd_access_identity(bd_nest_operand(c, vv, false, 2), 0);
    c = fx_nest(&f, w2, (int64_t[]){2, 4});
    bd_access_identity(bd_nest_operand(c, vv, false, 2), 0);
    f.p.view_of = malloc(f.g->values.len * sizeof *f.p.view_of);
    for (size_t v = 0; v < f.g->values.len; v++) f.p.view_of[v] = -1;
    f.p.view_of[vv] = sv;
    bd_deps_analyze(&f.p, &deps, NULL);
    e = edge_of(&deps, 0, 1);
    check(e && e->cls == BD_DEP_IDENTITY && !strcmp(box_str(e, 0), "0..0,0..0,0..0") &&
              !strcmp(box_str(e, 1), "1..1,0..0,0..0"),
          "deps reshape merge as a view: exact, IDENTITY", "class %s, %s %s",
          e ? bd_dep_class_name(e->cls) : "-", e ? box_str(e, 0) : "-", e ? box_str(e, 1) : "-");
    e = edge_of(&deps, 0, 2);
    /* rows 2..3 of V are S (0, 2) and (1, 0): both S blocks */
    check(e && !strcmp(box_str(e, 0), "0..0,0..0,0..0") && !strcmp(box_str(e, 1), "0..1,0..0,0..0") &&
              !strcmp(box_str(e, 2), "1..1,0..0,0..0"),
          "deps view cut mid-group: the bounding box of its span", "%s %s %s",
          e ? box_str(e, 0) : "-", e ? box_str(e, 1) : "-", e ? box_str(e, 2) : "-");
    bd_deps_free(&deps);
    fx_free(&f);
}

/* ---------------------------------------------------------------- printed decoding vs C */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)f;
    if (flag == FTW_DP) rmdir(p);
    else unlink(p);
    return 0;
}

/* Runs argv with stdout to out_path (NULL: inherit) and stderr to err_path; exit status or -1. */
static int run(char *const argv[], const char *out_path, const char *err_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out_path) posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void print_file_head(const char *path, int lines) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[512];
    while (lines-- > 0 && fgets(buf, sizeof buf, f)) printf("      %s", buf);
    fclose(f);
}

typedef struct decode_case {
    int rank;
    int64_t extent[8], tile[8];
} decode_case;

static const decode_case decodes[] = {
    {0, {0}, {0}},
    {1, {10}, {3}},
    {1, {7}, {7}},
    {1, {1}, {1}},
    {1, {13}, {5}},
    {1, {1000003}, {4096}},
    {1, {5000000000LL}, {1LL << 30}},
    {2, {5, 3}, {2, 2}},
    {2, {9, 10}, {4, 3}},
    {3, {4, 6, 5}, {3, 4, 2}},
    {3, {1, 17, 1}, {1, 16, 1}},
    {4, {2, 3, 5, 7}, {1, 2, 3, 4}},
    {4, {1, 64, 56, 56}, {1, 32, 8, 56}},
    {4, {3, 5, 2, 9}, {2, 5, 2, 4}},
    {6, {2, 3, 2, 3, 2, 3}, {1, 2, 2, 2, 1, 2}},
};

static void test_emitted_decode(void) {
    enum { N = sizeof decodes / sizeof decodes[0] };
    bd_nest *nests = calloc(N, sizeof *nests);
    BD_ASSERT(nests);
    bd_emitter e;
    memset(&e, 0, sizeof e);
    e.pr.text = BD_VEC(char);
    bd_emit(&e, "#include <stdint.h>");
    bd_emit(&e, "#include <stdio.h>");
    for (int i = 0; i < N; i++) {
        bare_nest(&nests[i], decodes[i].rank, decodes[i].extent, decodes[i].tile);
        const bd_nest *n = &nests[i];
        bd_emit_open(&e, "static void d%d(int64_t block)", i);
        bd_emit(&e, "const int64_t b0 = block;");
        bd_emit_block_decode(&e, n);
        bd_emit(&e, "printf(\"%d %%lld\", (long long)b0);", i);
        for (int k = 0; k < n->n_iter; k++)
            bd_emit(&e, "printf(\" %%lld:%%lld\", (long long)lo[%d], (long long)hi[%d]);", k, k);
        bd_emit(&e, "printf(\"\\n\");");
        bd_emit_close(&e, NULL);
    }
    bd_emit_open(&e, "int main(void)");
    for (int i = 0; i < N; i++)
        bd_emit(&e, "for (int64_t b = 0; b < %lld; b++) d%d(b);", (long long)nests[i].n_blocks, i);
    bd_emit(&e, "return 0;");
    bd_emit_close(&e, NULL);

    const char *base = getenv("TMPDIR");
    char dir[1024], src[1100], exe[1100], out[1100], err[1100];
    snprintf(dir, sizeof dir, "%s/bdc-nest-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        check(false, "decode: temporary folder", "mkdtemp %s: %s", dir, strerror(errno));
        goto done;
    }
    snprintf(src, sizeof src, "%s/decode.c", dir);
    snprintf(exe, sizeof exe, "%s/decode", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    FILE *f = fopen(src, "w");
    bool wrote = f && fwrite(e.pr.text.data, 1, e.pr.text.len, f) == e.pr.text.len;
    if (f && fclose(f)) wrote = false;
    check(wrote, "decode: generated program written", "%s: %s", src, strerror(errno));

    const char *cc = getenv("CC");
    if (!cc || !*cc) cc = "cc";
    char *cc_argv[] = {(char *)cc, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-o", exe,
                       src, NULL};
    int rc = run(cc_argv, NULL, err);
    check(rc == 0, "decode: printed decoding builds with -Wall -Wextra -Werror", "%s exited %d",
          cc, rc);
    if (rc) {
        print_file_head(err, 20);
        goto cleanup;
    }
    char *exe_argv[] = {exe, NULL};
    rc = run(exe_argv, out, err);
    check(rc == 0, "decode: generated program runs", "exit %d", rc);
    if (rc) goto cleanup;

    /* Line by line against bd_nest_block_range. */
    FILE *in = fopen(out, "r");
    BD_ASSERT(in);
    char line[1024];
    for (int i = 0; i < N; i++) {
        const bd_nest *n = &nests[i];
        int64_t bad = -1, lines = 0;
        char got_line[1024] = "", want_line[1024] = "";
        for (int64_t b = 0; b < n->n_blocks; b++) {
            int64_t lo[BD_MAX_RANK], hi[BD_MAX_RANK];
            bd_nest_block_range(n, b, lo, hi);
            size_t o = (size_t)snprintf(want_line, sizeof want_line, "%d %lld", i, (long long)b);
            for (int k = 0; k < n->n_iter; k++)
                o += (size_t)snprintf(want_line + o, sizeof want_line - o, " %lld:%lld",
                                      (long long)lo[k], (long long)hi[k]);
            snprintf(want_line + o, sizeof want_line - o, "\n");
            if (!fgets(line, sizeof line, in)) line[0] = 0;
            lines++;
            if (strcmp(line, want_line) != 0) {
                bad = b;
                snprintf(got_line, sizeof got_line, "%s", line);
                break;
            }
        }
        char name[200];
        snprintf(name, sizeof name, "decode rank %d extent %s tile %s: %lld blocks agree", n->n_iter,
                 fmt_dims(n->n_iter, decodes[i].extent), fmt_dims(n->n_iter, n->tile),
                 (long long)n->n_blocks);
        check(bad < 0, name, "block %lld: printed '%.*s', bd_nest_block_range '%.*s'",
              (long long)bad, (int)strcspn(got_line, "\n"), got_line,
              (int)strcspn(want_line, "\n"), want_line);
        if (bad >= 0) { /* resynchronise on the next case's first line */
            for (int64_t b = lines; b < n->n_blocks; b++)
                if (!fgets(line, sizeof line, in)) break;
        }
    }
    check(!fgets(line, sizeof line, in), "decode: no extra output", "extra line '%s'", line);
    fclose(in);
cleanup:
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    struct stat st;
    check(stat(dir, &st) != 0, "decode: temporary folder removed", "%s still exists", dir);
done:
    bd_printer_free(&e.pr);
    free(nests);
}

/* bd_expr_simplify: a float32 converted to an 8-bit type and back becomes SATURATE only where
 * the value is an integer (rounded, or a sum of a rounded value and a converted integer); a
 * value that is not keeps its conversions, which truncate. */
static void test_simplify_round_trip(void) {
    struct {
        const char *name;
        int inner;      /* the 8-bit type */
        bool rounded;   /* ROUND(x / 2) + zero point, else x / 2 */
        bool saturates; /* what the simplifier must do */
        double lo, hi;
    } cases[] = {
        {"uint8 of a rounded sum", BD_DT_UINT8, true, true, 0, 255},
        {"int8 of a rounded sum", BD_DT_INT8, true, true, -128, 127},
        {"int8 of a quotient", BD_DT_INT8, false, false, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        bd_expr x = {0};
        int v = bd_expr_binary(&x, BD_EXPR_DIV, BD_DT_FLOAT, bd_expr_load(&x, 0, BD_DT_FLOAT),
                               bd_expr_const(&x, 2, BD_DT_FLOAT));
        if (cases[c].rounded)
            v = bd_expr_binary(&x, BD_EXPR_ADD, BD_DT_FLOAT, bd_expr_unary(&x, BD_EXPR_ROUND, BD_DT_FLOAT, v),
                               bd_expr_cast(&x, BD_DT_FLOAT, bd_expr_load(&x, 1, cases[c].inner)));
        int q = bd_expr_cast(&x, cases[c].inner, v);
        bd_expr_cast(&x, BD_DT_FLOAT, q);
        bd_expr before = x;
        bd_expr_simplify(&x);
        const bd_expr_node *r = bd_expr_root(&x);
        bool ok = cases[c].saturates
                      ? r->op == BD_EXPR_SATURATE && r->k[0] == cases[c].lo && r->k[1] == cases[c].hi &&
                            x.node[r->arg[0]].op == BD_EXPR_ADD && bd_expr_valid(&x, 2)
                      : !memcmp(&x, &before, sizeof x);
        check(ok, cases[c].name, "root %d, %d nodes", (int)r->op, x.n);
    }
}

int main(void) {
    test_simplify_round_trip();
    test_block_range();
    test_regions();
    test_worked_example();
    test_branches();
    test_rank();
    test_deps_conv_halo();
    test_deps_transpose_concat_broadcast();
    test_deps_concat_chain();
    test_deps_reduce_reshape();
    test_emitted_decode();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
