/* nest.c — the loop-nest IR's own operations: building nests and operands, tiling, the block ->
 * index-range arithmetic the dependency analysis and the printers rest on, the checked access to
 * a body's parameters, the text dump (--dump=tiles) and the verifier run between passes. */
#include <stdlib.h>
#include <string.h>

#include "nest/loopnest.h"

static void set_grid(bd_nest *n, const int64_t *tile);

static const char *const body_names[BD_BODY_COUNT] = {
#define X(k, params) #k,
    BD_BODIES(X)
#undef X
};

static const bd_param_kind body_params[BD_BODY_COUNT] = {
#define X(k, params) BD_PARAMS_##params,
    BD_BODIES(X)
#undef X
};

void bd_nest_params_check(bd_body body, bd_param_kind kind) {
    BD_ASSERT((unsigned)body < BD_BODY_COUNT && body_params[body] == kind);
}

bd_nest *bd_nest_begin(bd_program *p, int node, bd_body body, const bd_value *out) {
    bd_nest *n = bd_vec_push(&p->nests);
    n->node = node;
    n->body = body;
    n->n_iter = out ? out->rank : 0;
    n->epi.residual = -1;
    for (int i = 0; i < n->n_iter; i++)
        n->extent[i] = out->dims[i];
    int64_t ones[BD_MAX_RANK];
    for (int i = 0; i < BD_MAX_RANK; i++)
        ones[i] = 1;
    set_grid(n, n->n_iter ? n->extent : ones); /* one block until a tiler says otherwise */
    return n;
}

bd_operand *bd_nest_operand(bd_nest *n, int value, bool write, int rank) {
    BD_ASSERT(n->n_operands < BD_NEST_MAX_OPERANDS && rank <= BD_MAX_RANK);
    bd_operand *o = &n->operands[n->n_operands++];
    memset(o, 0, sizeof *o);
    o->value = value;
    o->write = write;
    o->rank = rank;
    for (int k = 0; k < rank; k++)
        o->dims[k] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
    return o;
}

void bd_access_identity(bd_operand *o, int first_iter) {
    for (int k = 0; k < o->rank; k++)
        o->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, first_iter + k, 1, 0, 0};
}

void bd_access_broadcast(bd_operand *o, const bd_value *in, const bd_value *out) {
    int shift = out->rank - in->rank;
    for (int k = 0; k < in->rank; k++) {
        if (in->dims[k] == 1 && out->dims[k + shift] != 1)
            o->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0}; /* always index 0 */
        else
            o->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, k + shift, 1, 0, 0};
    }
}

bool bd_access_is_identity(const bd_operand *o, int n_iter) {
    if (o->rank != n_iter) return false;
    for (int k = 0; k < o->rank; k++) {
        const bd_access_dim *a = &o->dims[k];
        if (a->kind != BD_ACCESS_AFFINE || a->iter != k || a->scale != 1 || a->offset || a->window)
            return false;
    }
    return true;
}

void bd_access_full(bd_operand *o) {
    for (int k = 0; k < o->rank; k++)
        o->dims[k] = (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
}

void bd_access_opaque(bd_operand *o) {
    for (int k = 0; k < o->rank; k++)
        o->dims[k] = (bd_access_dim){BD_ACCESS_OPAQUE, -1, 0, 0, 0};
}

static void set_grid(bd_nest *n, const int64_t *tile) {
    n->n_blocks = 1;
    for (int i = 0; i < n->n_iter; i++) {
        int64_t e = n->extent[i], t = tile[i];
        if (t < 1) t = 1;
        if (t > e) t = e > 0 ? e : 1;
        n->tile[i] = t;
        n->grid[i] = e > 0 ? (e + t - 1) / t : 0;
        n->n_blocks *= n->grid[i];
    }
}

/* The input channels read by an output-channel tile of a grouped op (Cg input and Mg output
 * channels per group): all of them without groups; with groups, the channels of the groups the
 * tile meets, which is affine when tiles hold whole groups and Cg is a multiple of Mg. */
static bd_access_dim group_channels(int64_t group, int64_t Cg, int64_t Mg, int64_t tile_m) {
    if (group > 1 && Cg % Mg == 0 && tile_m % Mg == 0)
        return (bd_access_dim){BD_ACCESS_AFFINE, 1, Cg / Mg, 0, Cg / Mg - 1};
    return (bd_access_dim){BD_ACCESS_FULL, -1, 0, 0, 0};
}

void bd_reshape_groups_of(const bd_value *x, const bd_value *y, bd_reshape_groups *r) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] != 1) r->xd[r->nx++] = i;
    for (int i = 0; i < y->rank; i++)
        if (y->dims[i] != 1) r->yd[r->ny++] = i;
    for (int i = 0, j = 0; i < r->nx && j < r->ny;) {
        int si = i, sj = j;
        int64_t px = x->dims[r->xd[i]], py = y->dims[r->yd[j]];
        while (px != py) {
            if (px < py)
                px *= x->dims[r->xd[++i]];
            else
                py *= y->dims[r->yd[++j]];
        }
        r->gx0[r->n] = si, r->gx1[r->n] = i + 1, r->gy0[r->n] = sj, r->gy1[r->n] = j + 1;
        r->n++;
        i++, j++;
    }
}

/* A reshape reads, per dim group: a dim that keeps its extent 1:1; an input dim split into
 * several output dims affinely from the outermost of them while the tile keeps the inner ones
 * whole; merged or reshuffled dims FULL when the block covers the group whole, else OPAQUE; unit
 * dims index 0. */
static void reshape_maps(const bd_graph *g, bd_nest *n) {
    bd_operand *xo = &n->operands[0];
    const bd_value *x = bd_graph_value((bd_graph *)g, xo->value);
    const bd_value *y = bd_graph_value((bd_graph *)g, n->operands[n->n_operands - 1].value);
    bd_reshape_groups r;
    bd_reshape_groups_of(x, y, &r);
    for (int k = 0; k < x->rank; k++)
        xo->dims[k] = (bd_access_dim){BD_ACCESS_AFFINE, -1, 0, 0, 0};
    for (int gi = 0; gi < r.n; gi++) {
        bool all_whole = true;
        for (int j = r.gy0[gi]; j < r.gy1[gi]; j++)
            all_whole &= n->tile[r.yd[j]] == n->extent[r.yd[j]];
        if (r.gx1[gi] - r.gx0[gi] == 1) {
            int first = r.yd[r.gy0[gi]];
            int64_t inner = 1;
            bool inner_whole = true;
            for (int j = r.gy0[gi] + 1; j < r.gy1[gi]; j++) {
                inner *= y->dims[r.yd[j]];
                inner_whole &= n->tile[r.yd[j]] == n->extent[r.yd[j]];
            }
            if (inner_whole) {
                xo->dims[r.xd[r.gx0[gi]]] =
                    (bd_access_dim){BD_ACCESS_AFFINE, first, inner, 0, inner - 1};
                continue;
            }
        }
        for (int i = r.gx0[gi]; i < r.gx1[gi]; i++)
            xo->dims[r.xd[i]] =
                (bd_access_dim){all_whole ? BD_ACCESS_FULL : BD_ACCESS_OPAQUE, -1, 0, 0, 0};
    }
}

void bd_nest_set_tile(const bd_graph *g, bd_nest *n, const int64_t *tile) {
    set_grid(n, tile);
    if ((n->body == BD_BODY_CONV || n->body == BD_BODY_CONV_TRANSPOSE) && n->n_operands >= 2) {
        const bd_conv_params *cp = &n->params.conv;
        const bd_value *x = bd_graph_value((bd_graph *)g, n->operands[cp->x].value);
        const bd_value *y = bd_graph_value((bd_graph *)g, n->operands[cp->y].value);
        int64_t Cg = x->dims[1] / cp->group, Mg = y->dims[1] / cp->group;
        n->operands[cp->x].dims[1] = group_channels(cp->group, Cg, Mg, n->tile[1]);
        if (n->body == BD_BODY_CONV_TRANSPOSE)
            n->operands[cp->w].dims[0] = n->operands[cp->x].dims[1];
    }
    if (n->body == BD_BODY_COPY && n->params.copy.reshape && n->n_operands == 2) reshape_maps(g, n);
}

void bd_nest_tile_default(const bd_graph *g, bd_nest *n, int64_t target_elems) {
    int64_t tile[BD_MAX_RANK];
    int64_t elems = 1;
    /* Keep trailing dims whole while they fit the target, then cut the next one. */
    for (int i = n->n_iter - 1; i >= 0; i--) {
        int64_t e = n->extent[i] > 0 ? n->extent[i] : 1;
        if (elems * e <= target_elems) {
            tile[i] = e;
            elems *= e;
        } else {
            int64_t t = target_elems / elems;
            tile[i] = t > 0 ? t : 1;
            elems *= tile[i];
            for (int j = i - 1; j >= 0; j--)
                tile[j] = 1;
            break;
        }
    }
    bd_nest_set_tile(g, n, tile);
}

/* Tiles the nest with its whole dims uncut and the others cut from the innermost out so that a
 * block holds about target elements (at least the whole dims). */
void bd_nest_tile_keeping_whole(const bd_graph *g, bd_nest *n, int64_t target) {
    int64_t tile[BD_MAX_RANK], elems = 1;
    for (int i = 0; i < n->n_iter; i++) {
        int64_t e = n->extent[i] > 0 ? n->extent[i] : 1;
        tile[i] = e;
        if (n->whole[i]) elems = e > INT64_MAX / elems ? INT64_MAX : elems * e;
    }
    bool cut = false;
    for (int i = n->n_iter - 1; i >= 0; i--) {
        if (n->whole[i]) continue;
        int64_t e = tile[i];
        if (cut) {
            tile[i] = 1;
        } else if (elems <= target && e <= target / elems) {
            elems *= e;
        } else {
            int64_t t = elems < target ? target / elems : 1;
            tile[i] = t < e ? t : e;
            cut = true;
        }
    }
    bd_nest_set_tile(g, n, tile);
}

void bd_nest_block_range(const bd_nest *n, int64_t block, int64_t *lo, int64_t *hi) {
    for (int i = n->n_iter - 1; i >= 0; i--) {
        int64_t g = n->grid[i] ? n->grid[i] : 1;
        int64_t b = block % g;
        block /= g;
        lo[i] = b * n->tile[i];
        hi[i] = lo[i] + n->tile[i];
        if (hi[i] > n->extent[i]) hi[i] = n->extent[i];
    }
}

void bd_operand_region(const bd_nest *n, const bd_operand *o, const bd_value *v, const int64_t *lo,
                       const int64_t *hi, int64_t *rlo, int64_t *rhi) {
    (void)n;
    for (int k = 0; k < o->rank; k++) {
        const bd_access_dim *a = &o->dims[k];
        int64_t ext = v->dims[k];
        if (a->kind != BD_ACCESS_AFFINE) {
            rlo[k] = 0;
            rhi[k] = ext - 1;
            continue;
        }
        int64_t l = a->iter >= 0 ? lo[a->iter] : 0, h = a->iter >= 0 ? hi[a->iter] - 1 : 0;
        int64_t x = a->scale * l + a->offset, y = a->scale * h + a->offset;
        if (x > y) { /* negative scale (reversed slices) */
            int64_t t = x;
            x = y;
            y = t;
        }
        y += a->window;
        rlo[k] = x < 0 ? 0 : x;
        rhi[k] = y > ext - 1 ? ext - 1 : y;
    }
}

void bd_program_free(bd_program *p) {
    bd_vec_free(&p->nests);
    bd_vec_free(&p->fusion_notes);
    free(p->view_of);
    free(p->inside_of);
    free(p->inside_axis);
    free(p->inside_at);
    p->view_of = p->inside_of = p->inside_axis = NULL;
    p->inside_at = NULL;
    bd_arena_free(&p->arena);
}

/* ---------------------------------------------------------------- dump and verify */

static const char *access_str(const bd_access_dim *a, char *buf, size_t len) {
    switch (a->kind) {
    case BD_ACCESS_FULL: return "FULL";
    case BD_ACCESS_OPAQUE: return "OPAQUE";
    default: break;
    }
    size_t o = 0;
    if (a->iter < 0)
        o += (size_t)snprintf(buf + o, len - o, "%lld", (long long)a->offset);
    else {
        if (a->scale == 1)
            o += (size_t)snprintf(buf + o, len - o, "i%d", a->iter);
        else
            o += (size_t)snprintf(buf + o, len - o, "%lld*i%d", (long long)a->scale, a->iter);
        if (a->offset) o += (size_t)snprintf(buf + o, len - o, "%+lld", (long long)a->offset);
    }
    if (a->window) snprintf(buf + o, len - o, "..+%lld", (long long)a->window);
    return buf;
}

void bd_program_dump(const bd_program *p, FILE *f) {
    bd_graph *g = p->graph;
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        if (n->node >= 0) {
            const bd_node *node = bd_graph_node(g, n->node);
            fprintf(f, "nest %zu: node %d '%s' (%s) body %s", i, n->node, bd_quote(node->name),
                    bd_quote(node->op_type), body_names[n->body]);
        } else {
            fprintf(f, "nest %zu: body %s", i, body_names[n->body]);
        }
        if (n->part) fprintf(f, " part %d", n->part);
        if (n->body == BD_BODY_CONV && n->params.conv.winograd)
            fprintf(f, " winograd F(%lldx%lld,3x3)", (long long)n->params.conv.winograd,
                    (long long)n->params.conv.winograd);
        if ((n->body == BD_BODY_CONV && n->params.conv.i8_packed) ||
            (n->body == BD_BODY_MATMUL && n->params.matmul.i8_packed))
            fprintf(f, " int8 kernel");
        fprintf(f, "\n  domain [");
        for (int k = 0; k < n->n_iter; k++)
            fprintf(f, "%s%lld", k ? "," : "", (long long)n->extent[k]);
        fprintf(f, "] tile [");
        for (int k = 0; k < n->n_iter; k++)
            fprintf(f, "%s%lld", k ? "," : "", (long long)n->tile[k]);
        fprintf(f, "] blocks %lld", (long long)n->n_blocks);
        if (n->n_reduce) {
            fprintf(f, " reduce [");
            for (int k = 0; k < n->n_reduce; k++)
                fprintf(f, "%s%lld", k ? "," : "", (long long)n->reduce_extent[k]);
            fprintf(f, "]");
        }
        fprintf(f, "\n");
        for (int k = 0; k < n->n_operands; k++) {
            const bd_operand *o = &n->operands[k];
            fprintf(f, "  %s t%d '%s' (", o->write ? "write" : "read ", o->value,
                    bd_quote(bd_graph_value(g, o->value)->name));
            for (int j = 0; j < o->rank; j++) {
                char buf[96];
                fprintf(f, "%s%s", j ? ", " : "", access_str(&o->dims[j], buf, sizeof buf));
            }
            fprintf(f, ")\n");
        }
        if (n->body == BD_BODY_ELEMENTWISE) bd_expr_dump(&n->params.expr, f, "  ");
        if (n->body == BD_BODY_CONV && n->params.conv.pre)
            fprintf(f, "  prologue: BatchNormalization of the input (operands %d..%d)%s\n",
                    n->params.conv.pre_scale, n->params.conv.pre_var,
                    n->params.conv.pre_relu ? ", then Relu" : "");
        if (n->body == BD_BODY_CONV && n->params.conv.pooled) {
            const bd_conv_params *cp = &n->params.conv;
            fprintf(f, "  then MaxPool %lldx%lld/%lld of its %lldx%lld output, %lld pool rows a band\n",
                    (long long)cp->pool_kernel[0], (long long)cp->pool_kernel[1],
                    (long long)cp->pool_strides[0], (long long)cp->conv_oh, (long long)cp->conv_ow,
                    (long long)cp->pool_band);
        }
        if (n->epi.residual >= 0 && !n->epi.qresidual)
            fprintf(f, "  epilogue: add operand %d\n", n->epi.residual);
        if (n->epi.act.n) {
            fprintf(f, "  epilogue: activation\n");
            bd_expr_dump(&n->epi.act, f, "    ");
        }
        if (n->epi.requant)
            fprintf(f, "  epilogue: QuantizeLinear (scale %g, zero point %g)\n", n->epi.q_scale,
                    n->epi.q_zero);
        if (n->epi.qresidual)
            fprintf(f, "  epilogue: then dequantized (scale %g, zero point %g) and added to "
                    "operand %d dequantized (scale %g, zero point %g), clamped to [%g, %g], "
                    "QuantizeLinear (scale %g, zero point %g)\n",
                    n->epi.qr_y_scale, n->epi.qr_y_zero, n->epi.residual, n->epi.qr_r_scale,
                    n->epi.qr_r_zero, n->epi.qr_lo, n->epi.qr_hi, n->epi.qr_scale, n->epi.qr_zero);
    }
    for (size_t v = 0; p->view_of && v < g->values.len; v++)
        if (p->view_of[v] >= 0)
            fprintf(f, "view t%zu '%s' = the bytes of t%d '%s'\n", v,
                    bd_quote(bd_graph_value(g, (int)v)->name), p->view_of[v],
                    bd_quote(bd_graph_value(g, p->view_of[v])->name));
    for (size_t v = 0; p->inside_of && v < g->values.len; v++)
        if (p->inside_of[v] >= 0)
            fprintf(f, "in place: t%zu '%s' is stored in t%d '%s' at %lld along dim %d\n", v,
                    bd_quote(bd_graph_value(g, (int)v)->name), p->inside_of[v],
                    bd_quote(bd_graph_value(g, p->inside_of[v])->name),
                    (long long)p->inside_at[v], p->inside_axis[v]);
}

void bd_program_inside_init(bd_program *p) {
    size_t nv = p->graph->values.len;
    p->inside_of = malloc((nv + 1) * sizeof *p->inside_of);
    p->inside_axis = malloc((nv + 1) * sizeof *p->inside_axis);
    p->inside_at = malloc((nv + 1) * sizeof *p->inside_at);
    BD_ASSERT(p->inside_of && p->inside_axis && p->inside_at);
    for (size_t v = 0; v < nv; v++)
        p->inside_of[v] = -1;
}

void bd_program_values_added(bd_program *p, size_t before) {
    size_t nv = p->graph->values.len;
    if (p->view_of) {
        p->view_of = realloc(p->view_of, (nv + 1) * sizeof *p->view_of);
        BD_ASSERT(p->view_of);
        for (size_t v = before; v < nv; v++) p->view_of[v] = -1;
    }
    if (p->inside_of) {
        p->inside_of = realloc(p->inside_of, (nv + 1) * sizeof *p->inside_of);
        p->inside_axis = realloc(p->inside_axis, (nv + 1) * sizeof *p->inside_axis);
        p->inside_at = realloc(p->inside_at, (nv + 1) * sizeof *p->inside_at);
        BD_ASSERT(p->inside_of && p->inside_axis && p->inside_at);
        for (size_t v = before; v < nv; v++) p->inside_of[v] = -1;
    }
}

bd_status bd_program_verify(const bd_program *p, bd_diag *d) {
    for (size_t v = 0; p->view_of && v < p->graph->values.len; v++)
        BD_ASSERT(p->view_of[v] < 0 || p->view_of[p->view_of[v]] < 0); /* roots are not views */
    bd_graph *g = p->graph;
    for (size_t i = 0; i < p->nests.len; i++) {
        const bd_nest *n = &BD_VEC_AT(&p->nests, bd_nest, i);
        bool writes = false;
        int64_t blocks = 1;
        for (int k = 0; k < n->n_iter; k++) {
            BD_ASSERT(n->tile[k] >= 1);
            BD_ASSERT(n->grid[k] == (n->extent[k] + n->tile[k] - 1) / n->tile[k]);
            blocks *= n->grid[k];
        }
        BD_ASSERT(blocks == n->n_blocks);
        for (int k = 0; k < n->n_iter; k++)
            BD_ASSERT(!n->whole[k] || n->grid[k] <= 1);
        for (int k = 0; k < n->n_operands; k++) {
            const bd_operand *o = &n->operands[k];
            const bd_value *v = bd_graph_value(g, o->value);
            BD_ASSERT(v && o->rank == v->rank);
            writes |= o->write;
            for (int j = 0; j < o->rank; j++) {
                const bd_access_dim *a = &o->dims[j];
                BD_ASSERT(a->kind != BD_ACCESS_AFFINE || a->iter < n->n_iter);
                /* A write must be exact: every output element belongs to one block. */
                BD_ASSERT(!o->write || a->kind == BD_ACCESS_AFFINE);
            }
        }
        BD_ASSERT(writes);
        if (n->body == BD_BODY_ELEMENTWISE)
            BD_ASSERT(n->params.expr.n > 0 && bd_expr_valid(&n->params.expr, n->n_operands));
        BD_ASSERT(n->epi.residual < n->n_operands);
        BD_ASSERT(!n->epi.qresidual || (n->epi.requant && n->epi.residual >= 0));
        BD_ASSERT(bd_expr_valid(&n->epi.act, 1));
    }
    (void)d;
    return BD_OK;
}
