/* target.h (cpu) — the CPU target's parts, tied together in its table (target.c). */
#ifndef BD_TARGET_CPU_H
#define BD_TARGET_CPU_H

#include "target/cpu/emit.h"

extern const bd_target bd_target_cpu;

/* tile.c: the tile pass, and the tiles of an ATTENTION nest and a pooled convolution formed
 * after it. */
bd_status bd_cpu_tile(bd_program *p, bd_diag *d);
bool bd_cpu_tile_attention(const bd_graph *g, bd_nest *n, int threads);
bool bd_cpu_tile_conv_pool(const bd_graph *g, bd_nest *n, int threads);

/* emit_data.c: the per-thread scratch, in elements, of a plain linear Resize of the last two
 * dims: two input rows sampled to the output's width (0 when it takes another path). */
int64_t bd_cpu_resize_row_elems(const bd_nest *n);

/* emit_nn.c: the elements of the padded copy a unit-stride 2-D MaxPool block takes (its scratch
 * holds it and the maxima), or 0 when the pool takes another path. */
int64_t bd_cpu_maxpool_copy_elems(const bd_graph *g, const bd_nest *n);

#endif
