/* attention.c — PANEL fusion of attention (fuse.h): Y = softmax(score(A B)) V, where the softmax
 * consumes whole rows of the first product and the second product consumes whole rows of the
 * softmax, becomes one ATTENTION nest whose block computes a band of rows through all three, so
 * the scores (heads x rows x columns) are never stored and each band starts as soon as its
 * inputs are ready. With --fusion block, where the target's tile_attention takes the nest, after
 * bd_fuse (which has made BERT's Div and mask Add, or GPT-2's Where, one
 * elementwise nest: the score expression).
 *
 * The pattern, each intermediate read by the next nest alone and no graph output:
 *   S = MatMul(A, B), plain (float32, no bias, alpha, epilogue or packing, M and N its last two
 *       dims); [X = an elementwise nest over S's domain that reads S where it writes];
 *   P = Softmax(S or X) along the last dim; Y = MatMul(P, V), plain, with S's batch dims.
 * The score's other inputs (a mask, constants) keep their maps, except that the dims S's columns
 * drove become FULL: a block reads their whole rows. */
#include <string.h>

#include "fuse/fuse.h"

_Static_assert(BD_NEST_MAX_OPERANDS == 16, "bd_attention_params.score_stride has 16 operands");

/* v is an intermediate the fused nest may drop: written by nest `by`, read by one nest only,
 * not a graph output. */
static bool private_value(const bd_fuse_index *ix, int v, int by) {
    return ix->last_writer[v] == by && bd_fuse_sole_reader(ix, v) >= 0;
}

static int dtype_of(const bd_program *p, const bd_nest *n, int k) {
    return bd_graph_value(p->graph, n->operands[k].value)->dtype;
}

/* A float32 MatMul the ATTENTION body computes as it stands: rows and columns its last two
 * iteration dims, the rest batch axes, nothing applied after the product. */
static bool plain_matmul(const bd_program *p, const bd_nest *n) {
    if (n->body != BD_BODY_MATMUL) return false;
    const bd_matmul_params *mp = &n->params.matmul;
    int r = n->n_iter;
    return !mp->gemm && mp->c < 0 && mp->a_zero < 0 && mp->b_zero < 0 && !mp->b_packed &&
           !mp->merged && !mp->i8_packed && mp->alpha == 1.0f && r >= 2 && r <= BD_MAX_RANK &&
           mp->n_batch == r - 2 && mp->m_iter == r - 2 && mp->n_iter == r - 1 &&
           n->epi.residual < 0 && n->epi.act.n == 0 && !n->epi.requant &&
           dtype_of(p, n, mp->a) == BD_DT_FLOAT && dtype_of(p, n, mp->b) == BD_DT_FLOAT &&
           dtype_of(p, n, mp->y) == BD_DT_FLOAT;
}

/* The operand map with the dims iteration dim `col` drove made FULL. */
static bd_operand rows_whole(const bd_operand *o, int col) {
    bd_operand c = *o;
    for (int j = 0; j < c.rank; j++)
        if (c.dims[j].kind == BD_ACCESS_AFFINE && c.dims[j].iter == col)
            c.dims[j] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
    return c;
}

/* The score nest x (an elementwise nest over S's domain, S read where it writes): whether the
 * fused nest can take it, its other operands plain maps (no offsets or windows) and the operand
 * count within bounds with `fixed` more. */
static bool score_ok(const bd_program *p, const bd_nest *x, int s_value, int fixed) {
    if (x->body != BD_BODY_ELEMENTWISE || dtype_of(p, x, x->n_operands - 1) != BD_DT_FLOAT) return false;
    int others = 0;
    for (int k = 0; k < x->n_operands - 1; k++) {
        const bd_operand *o = &x->operands[k];
        if (o->value == s_value) {
            if (!bd_access_is_identity(o, x->n_iter)) return false;
            continue;
        }
        if (o->write) return false;
        for (int j = 0; j < o->rank; j++)
            if (o->dims[j].kind != BD_ACCESS_AFFINE || o->dims[j].offset || o->dims[j].window)
                return false;
        others++;
    }
    return others + fixed <= BD_NEST_MAX_OPERANDS;
}

/* Tries the pattern ending at nest i (the second product); on success replaces it by the fused
 * nest and marks the others dead. */
static bool fuse_at(bd_program *p, const bd_fuse_index *ix, int i, bool *dead,
                    bool (*tile)(const bd_graph *, bd_nest *, int)) {
    bd_nest *pv_nest = &BD_VEC_AT(&p->nests, bd_nest, i);
    if (!plain_matmul(p, pv_nest)) return false;
    const bd_matmul_params *pv = &pv_nest->params.matmul;
    const int r = pv_nest->n_iter, P = pv_nest->operands[pv->a].value;
    if (P == pv_nest->operands[pv->b].value) return false;
    int js = ix->last_writer[P];
    if (js < 0 || dead[js] || !private_value(ix, P, js)) return false;
    const bd_nest *sm = &BD_VEC_AT(&p->nests, bd_nest, js);
    if (sm->body != BD_BODY_SOFTMAX || sm->params.softmax.log || sm->n_iter != r ||
        sm->params.softmax.first != r - 1 || sm->params.softmax.last != r - 1)
        return false;
    int X = sm->operands[0].value, jx = ix->last_writer[X];
    if (jx < 0 || dead[jx] || !private_value(ix, X, jx)) return false;
    const bd_nest *x = &BD_VEC_AT(&p->nests, bd_nest, jx), *score = NULL;
    int S = X, jq = jx;
    if (x->body == BD_BODY_ELEMENTWISE) { /* the score expression: find the product it reads */
        score = x;
        S = -1;
        for (int k = 0; k < x->n_operands - 1 && S < 0; k++) {
            int w = ix->last_writer[x->operands[k].value];
            if (w >= 0 && !dead[w] && BD_VEC_AT(&p->nests, bd_nest, w).body == BD_BODY_MATMUL)
                S = x->operands[k].value, jq = w;
        }
        if (S < 0 || !private_value(ix, S, jq)) return false;
    }
    const bd_nest *qk_nest = &BD_VEC_AT(&p->nests, bd_nest, jq);
    if (!plain_matmul(p, qk_nest) || qk_nest->n_iter != r) return false;
    for (int k = 0; k < r - 1; k++) /* S's batch dims and rows are Y's */
        if (qk_nest->extent[k] != pv_nest->extent[k]) return false;
    if (qk_nest->extent[r - 1] != pv->K) return false;
    if (score && (score->n_iter != r || memcmp(score->extent, qk_nest->extent, sizeof(int64_t) * (size_t)r) ||
                  !score_ok(p, score, S, 4)))
        return false;

    bd_nest f;
    memset(&f, 0, sizeof f);
    f.node = pv_nest->node;
    f.body = BD_BODY_ATTENTION;
    f.n_iter = r;
    memcpy(f.extent, pv_nest->extent, sizeof f.extent);
    f.whole[r - 1] = true;
    f.n_reduce = 2;
    f.reduce_extent[0] = qk_nest->params.matmul.K;
    f.reduce_extent[1] = pv->K;
    f.epi.residual = -1;
    bd_attention_params *ap = &f.params.attention;
    ap->qk = qk_nest->params.matmul;
    ap->pv = *pv;
    f.operands[0] = qk_nest->operands[ap->qk.a];
    f.operands[1] = rows_whole(&qk_nest->operands[ap->qk.b], r - 1);
    f.operands[2] = pv_nest->operands[pv->b];
    int nops = 3, remap[BD_NEST_MAX_OPERANDS];
    if (score) {
        for (int k = 0; k < score->n_operands - 1; k++) {
            const bd_operand *o = &score->operands[k];
            if (o->value == S) {
                remap[k] = -1;
                continue;
            }
            remap[k] = nops;
            f.operands[nops] = rows_whole(o, r - 1);
            const bd_value *v = bd_graph_value(p->graph, o->value);
            int64_t vs[BD_MAX_RANK];
            bd_dims_strides(v->rank, v->dims, vs);
            for (int j = 0; j < o->rank; j++)
                if (o->dims[j].iter >= 0) ap->score_stride[nops][o->dims[j].iter] += vs[j] * o->dims[j].scale;
            nops++;
        }
    }
    f.operands[nops] = pv_nest->operands[pv->y];
    f.n_operands = nops + 1;
    ap->qk.a = 0, ap->qk.b = 1, ap->qk.y = -1;
    ap->pv.a = -1, ap->pv.b = 2, ap->pv.y = nops;
    ap->s = nops;
    if (score) {
        ap->score = score->params.expr;
        for (int t = 0; t < ap->score.n; t++)
            if (ap->score.node[t].op == BD_EXPR_LOAD) {
                int k = ap->score.node[t].operand;
                ap->score.node[t].operand = remap[k] < 0 ? ap->s : remap[k];
            }
    }
    if (!tile(p->graph, &f, p->tile_threads)) return false;
    const char *why = "attention: softmax(scores) V per block of rows, the scores never stored";
    bd_fusion_note *nt;
    const int absorbed[3] = {jq, score ? jx : -1, js};
    for (int k = 0; k < 3; k++) {
        if (absorbed[k] < 0) continue;
        dead[absorbed[k]] = true;
        nt = bd_vec_push(&p->fusion_notes);
        *nt = (bd_fusion_note){BD_VEC_AT(&p->nests, bd_nest, absorbed[k]).node, f.node, true, why};
    }
    *pv_nest = f;
    return true;
}

bd_status bd_fuse_attention(bd_program *p, bool (*tile)(const bd_graph *, bd_nest *, int), bd_diag *d) {
    return bd_fuse_tiled_pass(p, fuse_at, tile, d);
}
