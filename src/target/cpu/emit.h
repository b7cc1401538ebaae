/* emit.h — the CPU target's C printer (emit.c) and the interface its per-body printers
 * (emit_*.c) use.
 *
 * The generated file holds one block function per nest, `static void kN(void *ctx, int64_t block,
 * int thread)` (nests whose bodies print alike but for their offsets share one, target/share.h), and
 * create/run/destroy functions; run() hands each step's blocks to the runtime's thread pool in the
 * schedule's order. Inside a block function a body emitter can use:
 *   S        bd_state *: S->arena (intermediates), S->in[k]/S->out[k] (graph I/O),
 *            S->packed[slot] (data prepared at create time, e.g. packed weights)
 *   lo, hi   int64_t[n_iter]: the block's index range along every iteration dim (hi exclusive)
 *   scratch  unsigned char *: this thread's scratch, n->scratch_bytes long (64-byte aligned)
 *   thread   int: the worker index
 * Model strings never reach generated code except escaped inside comments or as octal-escaped
 * string literals (bd_print_string_literal); every identifier comes from an index. */
#ifndef BD_EMIT_C_H
#define BD_EMIT_C_H

#include "nest/loopnest.h"
#include "target/target.h"

typedef struct bd_emitter {
    bd_printer pr;       /* the C file being printed */
    const bd_program *prog;
    bd_graph *graph;
    const bd_storage *storage; /* per value index (plan/plan.c) */
    int *nest_slot;      /* per nest: its S->packed slot, -1 if none */
    int n_slots;
    bd_blob blob;        /* constants (borrowed) and tables embedded as bd_weights */
    bool bf16;           /* --precision bf16: MatMul and Gemm by constant weights, and the
                          * convolutions the kernels take (bd_conv2d_shape.bf16), in bfloat16 */
} bd_emitter;

typedef enum bd_emit_phase {
    BD_EMIT_SETUP, /* code inside create(): S exists, may fill S->packed[slot] */
    BD_EMIT_BLOCK, /* code inside the block function */
} bd_emit_phase;

typedef bd_status (*bd_emit_body_fn)(bd_emitter *e, const bd_nest *n, bd_emit_phase phase,
                                     bd_diag *d);
#define X(k, params) bd_status bd_emit_body_##k(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d);
BD_BODIES(X)
#undef X

/* Printing (target/print.h) into the emitter's file. */
#define bd_emit(e, ...) bd_print_line(&(e)->pr, __VA_ARGS__)
#define bd_emit_blank(e) bd_print_blank(&(e)->pr)
#define bd_emit_open(e, ...) bd_print_open(&(e)->pr, __VA_ARGS__)
#define bd_emit_close(e, suffix) bd_print_close(&(e)->pr, suffix)
#define bd_emit_comment(e, prefix, untrusted) bd_print_comment(&(e)->pr, prefix, untrusted)
#define bd_emit_str(e, ...) bd_print_str(&(e)->pr, __VA_ARGS__)
#define bd_emit_float(e, x, dtype) bd_print_float(&(e)->pr, x, dtype)

/* Expression `((T *)ADDR)` for value v's first element (T const-qualified when read-only). */
const char *bd_emit_ptr(bd_emitter *e, int value);
/* Appends a copy of bytes to the embedded blob (64-byte aligned); returns their offset from
 * bd_weights. */
int64_t bd_emit_blob(bd_emitter *e, const void *data, size_t len);
/* The nest's S->packed slot, allocated on first call (same number in both phases). */
int bd_emit_nest_slot(bd_emitter *e, const bd_nest *n);
const bd_node *bd_emit_node(const bd_emitter *e, const bd_nest *n);
/* emit_reduce.c, for the ATTENTION body: the block-scope vector types of dtype dt (float or
 * double: vf, vi, VL, vzero), and one softmax (log: LogSoftmax) of a contiguous row of n
 * elements from `xr` into `yr` (float: on those vectors), both pointers declared by the caller. */
void bd_emit_vec_types(bd_emitter *e, int dt);
void bd_emit_softmax_row(bd_emitter *e, int dt, bool log, int64_t n);
/* Declares int64_t lo[], hi[] and sets them to block `block`'s index range along every iteration
 * dim (hi exclusive): the same decoding as bd_nest_block_range, printed (tests check they agree). */
void bd_emit_block_decode(bd_emitter *e, const bd_nest *n);
/* Row-major element strides of a value (strides[rank-1] == 1). */
#define bd_value_strides(v, strides) bd_dims_strides((v)->rank, (v)->dims, strides)

bd_status bd_emit_c(const bd_program *p, const bd_schedule *sched, const bd_memory_plan *mem,
                    const bd_emit_opts *opts, bd_c_program *out, bd_diag *d);

#endif
