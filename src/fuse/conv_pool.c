/* conv_pool.c — LOCAL fusion of a convolution and the max pool after it (fuse.h): a packed 2-D
 * convolution whose output only a 2-D MaxPool reads becomes one nest over the pool's output.
 * A block (channels x pool rows) computes the convolution rows its pool rows read, a band at a
 * time, into its scratch and pools them from there (bd_conv_params.pooled), so the convolution's
 * output, the largest tensor of the stems that start SqueezeNet, ResNet, GoogLeNet,
 * ShuffleNetV2 and DenseNet, is never written to memory and read back. With --fusion block, where the target's
 * tile_conv_pool takes the nest, after bd_fuse (the convolution has absorbed its bias and
 * activation).
 *
 * The pattern: Y = MaxPool(A), A = Conv(X, W) (+ B) then none, Relu or a clamp (the activations
 * every kernel applies before it stores), packed, not Winograd, no prologue or residual, float;
 * the pool 2-D with no dilation, Indices or column-major order; A read by the pool alone and no
 * graph output. X's row and column maps compose the two windows: pool row i reads convolution
 * rows s_p i - p_p .. + k_p - 1, which read input rows s_c (s_p i - p_p) - p_c .. + (k_p - 1) s_c +
 * (k_c - 1) d_c. */
#include <string.h>

#include "fuse/fuse.h"

/* The convolution nest fuse_at takes, as its shape and epilogue stand. */
static bool poolable_conv(const bd_program *p, const bd_nest *c) {
    if (c->body != BD_BODY_CONV) return false;
    const bd_conv_params *cp = &c->params.conv;
    if (!cp->packed || cp->i8_packed || cp->winograd || cp->pre || cp->pooled || cp->nsp != 2 ||
        c->epi.residual >= 0 || c->epi.requant || cp->y != c->n_operands - 1)
        return false;
    if (bd_graph_value(p->graph, c->operands[cp->y].value)->dtype != BD_DT_FLOAT) return false;
    double lo, hi; /* none, Relu or a clamp */
    return bd_expr_clamp_bounds(&c->epi.act, &lo, &hi);
}

static bool poolable_pool(const bd_program *p, const bd_nest *n) {
    if (n->body != BD_BODY_POOL) return false;
    const bd_pool_params *pp = &n->params.pool;
    return pp->is_max && pp->nsp == 2 && pp->indices < 0 && !pp->column_major &&
           pp->dilations[0] == 1 && pp->dilations[1] == 1 && pp->x == 0 && pp->y == 1 &&
           n->n_operands == 2 && n->epi.act.n == 0 && n->epi.residual < 0 &&
           bd_graph_value(p->graph, n->operands[pp->y].value)->dtype == BD_DT_FLOAT;
}

/* Pool nest i with the convolution that writes its input: one nest over the pool's output. */
static bool fuse_at(bd_program *p, const bd_fuse_index *ix, int i, bool *dead,
                    bool (*tile)(const bd_graph *, bd_nest *, int)) {
    bd_nest *pn = &BD_VEC_AT(&p->nests, bd_nest, i);
    if (!poolable_pool(p, pn)) return false;
    const bd_pool_params *pp = &pn->params.pool;
    int a = pn->operands[pp->x].value, j = ix->last_writer[a];
    if (j < 0 || j >= i || dead[j] || bd_fuse_sole_reader(ix, a) != i) return false;
    const bd_nest *cn = &BD_VEC_AT(&p->nests, bd_nest, j);
    if (!poolable_conv(p, cn)) return false;
    const bd_conv_params *cp = &cn->params.conv;
    const bd_value *av = bd_graph_value(p->graph, a);
    /* the convolution writes A itself (a stacked one writes the output its branches are slices
     * of, siblings.c, and the index gives those slices no writer) */
    if (cn->operands[cp->y].value != a || av->rank != 4 || cn->n_iter != 4 || pn->n_iter != 4)
        return false;

    bd_nest f = *cn;
    memcpy(f.extent, pn->extent, sizeof f.extent);
    memcpy(f.tile, cn->tile, sizeof f.tile); /* the convolution's tile: the tiler's hint */
    bd_conv_params *fp = &f.params.conv;
    fp->pooled = true;
    fp->conv_oh = av->dims[2];
    fp->conv_ow = av->dims[3];
    for (int k = 0; k < 2; k++) {
        fp->pool_kernel[k] = pp->kernel[k];
        fp->pool_strides[k] = pp->strides[k];
        fp->pool_pads[k] = pp->pads[k];
        bd_access_dim *d = &f.operands[cp->x].dims[2 + k];
        BD_ASSERT(d->kind == BD_ACCESS_AFFINE && d->iter == 2 + k);
        const int64_t sc = d->scale, pc = -d->offset, reach = d->window;
        *d = (bd_access_dim){BD_ACCESS_AFFINE, 2 + k, sc * pp->strides[k],
                             -pp->pads[k] * sc - pc, (pp->kernel[k] - 1) * sc + reach};
    }
    f.operands[cp->y] = pn->operands[pp->y];
    if (!tile(p->graph, &f, p->tile_threads)) return false;
    dead[i] = true;
    bd_fusion_note *nt = bd_vec_push(&p->fusion_notes);
    *nt = (bd_fusion_note){pn->node, cn->node, true,
                           "MaxPool into the convolution's blocks: pooled from bands of its rows in "
                           "scratch, its output never stored"};
    BD_VEC_AT(&p->nests, bd_nest, j) = f;
    return true;
}

bd_status bd_fuse_conv_pool(bd_program *p, bool (*tile)(const bd_graph *, bd_nest *, int), bd_diag *d) {
    return bd_fuse_tiled_pass(p, fuse_at, tile, d);
}
