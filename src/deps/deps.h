/* deps.h — block-dependency analysis over a nest program: for every producer -> consumer edge and
 * every consumer block, the producer blocks it needs.
 *
 * A consumer block's footprint in a value is its block range pushed through the consumer's read
 * map (bd_operand_region). Pulling that region back through the producer's write map gives the
 * producer iterations that write it, and dividing by the producer's tile gives a box of producer
 * blocks: per producer dim an inclusive block range. That box is what is stored, per consumer
 * block and edge, never a list of block pairs. The result is exact where both maps are AFFINE and
 * conservative (a superset) where the read is FULL or OPAQUE; a box can be empty (a Concat part
 * that a consumer block does not reach).
 *
 * Each edge gets a class, from its boxes:
 *   IDENTITY  the grids match 1:1: every consumer block needs one producer block, a different one;
 *   LOCAL     bounded boxes; halo = the most extra blocks along one dim (a conv's window rows);
 *   PANEL     every box spans some grid dim of more than one block whole (a row of blocks);
 *   ALL       every consumer block needs every producer block (a reduction, a FULL read).
 * Dependencies are counted at three granularities: element pairs (consumer output element, input
 * element it reads, as the maps state them), block edges (the sum of the box sizes) and operator
 * edges (one per edge).
 *
 * Fusion, the dataflow schedule and `bdc analyze` read this; it reads only the nests. */
#ifndef BD_DEPS_H
#define BD_DEPS_H

#include <stdio.h>

#include "nest/loopnest.h"

typedef enum bd_dep_class {
    BD_DEP_IDENTITY = 0,
    BD_DEP_LOCAL,
    BD_DEP_PANEL,
    BD_DEP_ALL,
    BD_DEP_CLASS_COUNT
} bd_dep_class;

typedef struct bd_dep_edge {
    int producer, consumer; /* nest indices, producer < consumer */
    int value;              /* the value carried */
    int operand;            /* the consumer's read operand */
    bd_dep_class cls;
    int64_t halo;           /* LOCAL: extra producer blocks along one dim, at most */
    int64_t element_pairs;
    int64_t block_edges;
    int64_t consumer_blocks;
    int rank;               /* the producer's iteration dims */
    int32_t *lo, *hi;       /* box of consumer block b: dims [b*rank, (b+1)*rank); lo > hi: empty */
} bd_dep_edge;

typedef struct bd_deps {
    bd_vec edges;            /* bd_dep_edge, by consumer then producer */
    int64_t element_pairs, block_edges, op_edges;
    int64_t class_edges[BD_DEP_CLASS_COUNT];
    int64_t total_blocks;    /* blocks of all nests */
    int64_t critical_blocks; /* the longest chain of blocks, each needing the one before */
    int *edge_start;         /* per nest: its incoming edges are edges[edge_start[c] .. [c+1]) */
} bd_deps;

/* More blocks than this fail with BD_ERR_IO (the per-block boxes would not fit in memory). */
#define BD_DEPS_MAX_BLOCKS ((int64_t)1 << 24)
bd_status bd_deps_analyze(const bd_program *p, bd_deps *out, bd_diag *d);
void bd_deps_free(bd_deps *deps);

/* Elements of operand o that one output element of its nest reads, as the map states it (a
 * convolution's input: C x KH x KW; a matrix product's: K). */
int64_t bd_operand_footprint(const bd_graph *g, const bd_operand *o);
/* The box of consumer block b on edge e, as block ranges; false when it is empty. */
bool bd_dep_box(const bd_dep_edge *e, int64_t b, int64_t *lo, int64_t *hi);
/* Advances point through the box [lo, hi] in row-major order; false after the last. */
bool bd_dep_box_next(int rank, const int64_t *lo, const int64_t *hi, int64_t *point);
/* Producer block index of the box point p (the row-major order bd_nest_block_range decodes). */
int64_t bd_dep_block_index(const bd_nest *producer, const int64_t *point);

const char *bd_dep_class_name(bd_dep_class c);
/* --dump=deps: one line per edge, then the totals. */
void bd_deps_dump(const bd_program *p, const bd_deps *deps, FILE *f);

#endif
