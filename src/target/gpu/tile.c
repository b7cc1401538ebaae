/* tile.c (gpu) — the GPU tile pass: every nest's block becomes one thread block, whose threads
 * take the block's elements in turn. A block should give every thread a few elements and about
 * the same work: elements are sized by the work one costs (the reduction it runs), from about
 * 16 per thread for copies and maps down to one for long reductions; dims a body reads whole
 * (softmax axes, normalised axes) are never cut. No CPU kernel choices are made: the GPU bodies
 * read operands as they are (no packed weights, no merged rows). */
#include "target/gpu/gpu.h"

/* Elements per block: about BLOCK_WORK multiply-adds, at least MIN_ELEMS elements (a few per
 * thread would leave most of a 128-thread block idle), at most MAX_ELEMS. */
enum { BLOCK_WORK = 1 << 17, MIN_ELEMS = 128, MAX_ELEMS = 2048 };

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Multiply-adds (or elements read) per output element of the nest. */
static int64_t work_per_element(const bd_graph *g, const bd_nest *n) {
    switch (n->body) {
    case BD_BODY_CONV:
    case BD_BODY_CONV_TRANSPOSE: {
        const bd_conv_params *cp = &n->params.conv;
        const bd_value *x = bd_graph_value((bd_graph *)g, n->operands[cp->x].value);
        int64_t w = x->dims[1] / (cp->group > 0 ? cp->group : 1);
        for (int i = 0; i < cp->nsp; i++) w *= cp->kernel[i];
        return w;
    }
    case BD_BODY_POOL: {
        int64_t w = 1;
        for (int i = 0; i < n->params.pool.nsp; i++) w *= n->params.pool.kernel[i];
        return w;
    }
    case BD_BODY_GLOBAL_POOL: return n->params.global_pool.spatial;
    case BD_BODY_MATMUL: return n->params.matmul.K;
    case BD_BODY_ATTENTION: { /* a row's scores (columns x K), shared by its outputs, then V */
        const bd_attention_params *ap = &n->params.attention;
        return ap->qk.N * ap->qk.K / (ap->pv.N > 0 ? ap->pv.N : 1) + ap->pv.K;
    }
    case BD_BODY_REDUCE: return n->params.reduce.count;
    case BD_BODY_ROI_ALIGN: { /* four taps a sample; adaptive grids (known at run time) as 4x4 */
        int64_t ratio = n->params.roi_align.ratio > 0 ? n->params.roi_align.ratio : 4;
        return 4 * ratio * ratio;
    }
    default: return 1;
    }
}

bool bd_gpu_matmul_tiled(const bd_graph *g, const bd_nest *n) {
    if (n->body != BD_BODY_MATMUL) return false;
    const bd_matmul_params *mp = &n->params.matmul;
    int dt = bd_graph_value((bd_graph *)g, n->operands[mp->y].value)->dtype;
    return (dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE) && mp->m_iter >= 0 && mp->n_iter >= 0 && mp->M > 1 &&
           mp->N > 1;
}

bool bd_gpu_conv_tiled(const bd_graph *g, const bd_nest *n) {
    if (n->body != BD_BODY_CONV) return false;
    const bd_conv_params *cp = &n->params.conv;
    int dt = bd_graph_value((bd_graph *)g, n->operands[cp->y].value)->dtype;
    int xdt = bd_graph_value((bd_graph *)g, n->operands[cp->x].value)->dtype; /* not 8-bit X */
    return (dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE) && xdt == dt && cp->group == 1 &&
           (cp->nsp == 1 || cp->nsp == 2) && n->extent[1] >= 8;
}

/* The tile of a tiled matrix product (batch axes one at a time, T x T of the output) or
 * convolution (one image, T channels, up to T positions: whole rows of up to T columns). */
static void mm_tile_dims(const bd_graph *g, const bd_nest *n, int T, int64_t *tile) {
    for (int k = 0; k < n->n_iter; k++) tile[k] = 1;
    if (bd_gpu_matmul_tiled(g, n)) {
        tile[n->params.matmul.m_iter] = T;
        tile[n->params.matmul.n_iter] = T;
        return;
    }
    int last = n->n_iter - 1;
    tile[1] = T;
    tile[last] = n->extent[last] < T ? n->extent[last] : T;
    if (last == 3) tile[2] = T / tile[3] > 0 ? T / tile[3] : 1;
}

int bd_gpu_mm_tile(const bd_graph *g, const bd_nest *n) {
    int64_t tile[BD_MAX_RANK], blocks = 1;
    mm_tile_dims(g, n, BD_GPU_MM_TILE, tile);
    for (int k = 0; k < n->n_iter; k++) {
        int64_t e = n->extent[k] > 0 ? n->extent[k] : 1, t = tile[k] < e ? tile[k] : e;
        blocks *= (e + t - 1) / t;
    }
    return blocks < BD_GPU_FILL_BLOCKS ? BD_GPU_MM_TILE / 2 : BD_GPU_MM_TILE;
}

bd_status bd_gpu_tile(bd_program *p, bd_diag *d) {
    const bd_graph *g = p->graph;
    for (size_t i = 0; i < p->nests.len; i++) {
        bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (n->body == BD_BODY_CONSTANT) continue; /* one block */
        if (n->body == BD_BODY_LSTM) { /* one block per direction: the recurrence runs inside */
            bd_nest_set_tile(g, n, (int64_t[]){1, n->params.lstm.batch});
            continue;
        }
        if (bd_gpu_matmul_tiled(g, n) || bd_gpu_conv_tiled(g, n)) {
            int64_t tile[BD_MAX_RANK];
            mm_tile_dims(g, n, bd_gpu_mm_tile(g, n), tile);
            bd_nest_set_tile(g, n, tile);
            continue;
        }
        int64_t w = work_per_element(g, n);
        int64_t target = clamp64(BLOCK_WORK / (w > 0 ? w : 1), MIN_ELEMS, MAX_ELEMS);
        bd_nest_tile_keeping_whole(g, n, target);
    }
    return bd_program_verify(p, d);
}

bool bd_gpu_tile_attention(const bd_graph *g, bd_nest *n, int threads) {
    (void)threads;
    int r = n->n_iter;
    if (n->params.attention.qk.N > BD_GPU_ATTENTION_COLS) return false;
    int64_t tile[BD_MAX_RANK];
    for (int k = 0; k < r; k++) tile[k] = 1;
    tile[r - 2] = n->extent[r - 2] < BD_GPU_ATTENTION_ROWS ? n->extent[r - 2] : BD_GPU_ATTENTION_ROWS;
    tile[r - 1] = n->extent[r - 1];
    bd_nest_set_tile(g, n, tile);
    return true;
}

double bd_gpu_block_cost(const bd_graph *g, const bd_nest *n) {
    int64_t elems = 1;
    for (int k = 0; k < n->n_iter; k++) elems *= n->tile[k];
    return (double)elems * (double)work_per_element(g, n);
}
