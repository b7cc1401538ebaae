/* checks.h — what the inference files share: dtype, rank and presence checks of inputs,
 * attribute readers and axis normalisation, each failing with a precise invalid-model error. */
#ifndef BD_INFER_CHECKS_H
#define BD_INFER_CHECKS_H

#include "front/passes.h"

bool bd_is_real_float(int dt);
bd_status bd_need_float(bd_diag *d, const bd_node *n, const bd_value *v, int idx, const char *name);
bd_status bd_need_same_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                             const char *name, const bd_value *ref);
bd_status bd_need_dtype(bd_diag *d, const bd_node *n, const bd_value *v, int idx, const char *name,
                        int dtype);
bd_status bd_need_int_indices(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                              const char *name);
bd_status bd_need_rank(bd_diag *d, const bd_node *n, const bd_value *v, int idx, const char *name,
                       int rank);
bd_status bd_need_present(bd_diag *d, const bd_node *n, const bd_value *v, int idx,
                          const char *name);
int64_t bd_dim_of(const bd_value *v, int i);
bd_status bd_read_flag(bd_diag *d, const bd_node *n, const char *name, int64_t dflt, bool *out);
bd_status bd_read_ints(bd_diag *d, const bd_node *n, const char *name, int want, int64_t dflt,
                       int64_t *out, bool *present);
bd_status bd_need_at_least(bd_diag *d, const bd_node *n, const char *name, const int64_t *vals,
                           int count, int64_t min);
bd_status bd_norm_axes(bd_diag *d, const bd_node *n, const char *what, int64_t *axes, int count,
                       int rank);
bd_status bd_fail_overflow(bd_diag *d, const bd_node *n, const char *what);

#endif
