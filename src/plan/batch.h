/* batch.h — one executable for a range of batches (bdc compile --dim SYMBOL=LO..HI).
 *
 * The model is compiled at the largest batch HI. A run at batch b <= HI runs, of every nest that
 * computes batch items, only the blocks that cover items 0..b-1: a prefix of its blocks, since
 * the batch is its outermost iteration dim. That is right when every value computed from the
 * inputs keeps the batch as dim 0 and every nest maps batch item i of what it reads to item i
 * of what it writes, and nothing else depends on the batch. Two checks establish it:
 *   bd_batch_check_front compares the front end's graph at HI with the same model bound at LO:
 *     every value computed from the inputs has dim 0 = the batch and the same other dims at both,
 *     every other value the same shape, and every constant read as data (not as a shape, such as
 *     a Reshape target) the same bytes, so the batch extent never enters the arithmetic;
 *   bd_batch_plan checks the nests: the batch is iteration dim 0 of each nest that reads batch
 *     items, mapped one to one (index i to index i) into every batched operand's dim 0, used by
 *     no other operand dim and never read whole (a softmax or normalisation over the batch).
 * A model that fails either is refused (exit 3) naming the value or node. */
#ifndef BD_PLAN_BATCH_H
#define BD_PLAN_BATCH_H

#include "nest/loopnest.h"

bd_status bd_batch_check_front(bd_graph *at_max, bd_graph *at_min, bd_diag *d);

/* Sets batch_sliced (per nest: runs a prefix of its blocks at a smaller batch) and marks the
 * graph outputs whose dim 0 is the batch (BD_VALUE_BATCHED). Without a range, all false. */
bd_status bd_batch_plan(const bd_program *p, bool **batch_sliced, bd_diag *d);

#endif
