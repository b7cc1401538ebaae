/* lower.h — what the per-op lowering files share (lower.c). */
#ifndef BD_LOWER_H
#define BD_LOWER_H

#include "front/passes.h"
#include "nest/loopnest.h"

/* Fails (exit 3) naming `what` when v (may be NULL: an absent optional value) has no static shape.
 */
bd_status bd_need_static(bd_diag *d, const bd_node *n, const bd_value *v, const char *what);

/* The start most lowerings share: node `node`, its input 0 (*x) and output 0 (*y), both with
 * static shapes, else exit 3 naming them as x_what and y_what. Returns false when the caller has
 * nothing more to do, with *s: BD_OK when the output folded to a constant, else the failure. */
bool bd_lower_begin(bd_program *p, int node, bd_diag *d, const char *x_what, const char *y_what,
                    bd_node **n, bd_value **x, bd_value **y, bd_status *s);

/* A new unnamed value of that dtype and shape (dims may be NULL for rank 0): the intermediate
 * between the nests one op lowers to. Adding a value may move every bd_value: callers keep value
 * indices, not pointers, across it. */
int bd_lower_temp(bd_graph *g, int dtype, int rank, const int64_t *dims);

/* A COPY nest writing one value everywhere in value yv (Dropout's mask in inference, MaxUnpool's
 * zeros). */
void bd_lower_fill(bd_program *p, int node, int yv, double value);

/* Lowerings that compute a table at compile time (a mask, index offsets, a range) refuse one of
 * more than this many elements (exit 3), so that the compiler's memory stays proportional to the
 * model file, as constant folding's BD_FOLD_MAX_ELEMS keeps it. */
#define BD_LOWER_MAX_TABLE_ELEMS ((int64_t)1 << 24)
/* Fails (exit 3) naming `what` when a table of count elements is above that limit. */
bd_status bd_need_table(bd_diag *d, const bd_node *n, int64_t count, const char *what);

#endif
