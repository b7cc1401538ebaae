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

#endif
