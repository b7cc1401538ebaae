/* lower_reduce.h — the resolved parameters of REDUCE and SOFTMAX nests (nest->params), shared by
 * lower_reduce.c, which fills them, and emit_c_reduce.c, which prints the block bodies. */
#ifndef BD_LOWER_REDUCE_H
#define BD_LOWER_REDUCE_H

#include "loopnest.h"

typedef enum bd_reduce_kind {
    BD_REDUCE_SUM = 0,
    BD_REDUCE_MEAN,
    BD_REDUCE_MAX,
} bd_reduce_kind;

/* A REDUCE nest: operand 0 is the input, operand 1 the output. The iteration dims are the output
 * dims; input dim k is either kept (it is output dim iter_of[k]) or reduced (iter_of[k] == -1;
 * with keepdims its output dim has extent 1 and is not named here). */
typedef struct bd_reduce_params {
    bd_reduce_kind kind;
    int in_rank;
    int iter_of[BD_MAX_RANK];
    int64_t count; /* elements reduced into each output element (the divisor of ReduceMean) */
} bd_reduce_params;

/* A SOFTMAX nest: operand 0 is the input, operand 1 the output (same shape; the iteration dims are
 * its dims). Softmax runs along the dims first..last, which a block covers whole: one dim from
 * opset 13, all dims from `axis` on before (the input coerced to 2-D). */
typedef struct bd_softmax_params {
    bool log;  /* LogSoftmax */
    int first, last;
} bd_softmax_params;

#endif
