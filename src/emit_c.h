/* emit_c.h — the C printer over the loop-nest program, and the interface its per-body emitters
 * (emit_c_*.c) use.
 *
 * The generated file holds one block function per nest, `static void kN(void *ctx, int64_t block,
 * int thread)`, and create/run/destroy functions; run() hands each nest's blocks to the runtime's
 * thread pool in program order. Inside a block function a body emitter can use:
 *   S        bd_state *: S->arena (intermediates), S->in[k]/S->out[k] (graph I/O),
 *            S->packed[slot] (data prepared at create time, e.g. packed weights)
 *   lo, hi   int64_t[n_iter]: the block's index range along every iteration dim (hi exclusive)
 *   scratch  unsigned char *: this thread's scratch, n->scratch_bytes long (64-byte aligned)
 *   thread   int: the worker index
 * Model strings never reach generated code except escaped inside comments or as octal-escaped
 * string literals (bd_emit_c_string); every identifier comes from an index. */
#ifndef BD_EMIT_C_H
#define BD_EMIT_C_H

#include "loopnest.h"

typedef enum bd_store_kind {
    BD_STORE_NONE = 0,
    BD_STORE_INPUT,  /* S->in[index] */
    BD_STORE_OUTPUT, /* S->out[index] */
    BD_STORE_CONST,  /* bd_weights + offset (embedded blob) */
    BD_STORE_ARENA,  /* S->arena + offset */
} bd_store_kind;

typedef struct bd_storage {
    bd_store_kind kind;
    int64_t where; /* input/output index or byte offset */
} bd_storage;

typedef struct bd_emitter {
    bd_vec text;     /* char: the C file being printed */
    int indent;
    const bd_program *prog;
    bd_graph *graph;
    bd_storage *storage; /* per value index */
    int *nest_slot;      /* per nest: its S->packed slot, -1 if none */
    int n_slots;
    bd_arena scratch;    /* strings returned by the helpers below live until the emitter ends */
    bd_vec blob;         /* unsigned char: constants embedded as bd_weights */
} bd_emitter;

typedef enum bd_emit_phase {
    BD_EMIT_SETUP, /* code inside create(): S exists, may fill S->packed[slot] */
    BD_EMIT_BLOCK, /* code inside the block function */
} bd_emit_phase;

typedef bd_status (*bd_emit_body_fn)(bd_emitter *e, const bd_nest *n, bd_emit_phase phase,
                                     bd_diag *d);
#define X(k) bd_status bd_emit_body_##k(bd_emitter *e, const bd_nest *n, bd_emit_phase phase, bd_diag *d);
BD_BODIES(X)
#undef X

/* Printing: one line at the current indent; open adds " {" and indents; close dedents and
 * prints "}" followed by suffix (may be NULL). */
void bd_emit(bd_emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bd_emit_blank(bd_emitter *e);
void bd_emit_open(bd_emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bd_emit_close(bd_emitter *e, const char *suffix);
/* A comment line holding an untrusted string, made harmless. */
void bd_emit_comment(bd_emitter *e, const char *prefix, const char *untrusted);
/* printf into the emitter's scratch arena (for building expressions). */
const char *bd_emit_str(bd_emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* C element type of a dtype ("float", "int64_t", "uint8_t" for bool, "double", ...). */
const char *bd_c_type(int dtype);
/* Expression `((T *)ADDR)` for value v's first element (T const-qualified when read-only). */
const char *bd_emit_ptr(bd_emitter *e, int value);
/* Appends bytes to the embedded blob (64-byte aligned); returns their offset from bd_weights. */
int64_t bd_emit_blob(bd_emitter *e, const void *data, size_t len);
/* The nest's S->packed slot, allocated on first call (same number in both phases). */
int bd_emit_nest_slot(bd_emitter *e, const bd_nest *n);
const bd_node *bd_emit_node(const bd_emitter *e, const bd_nest *n);
/* Declares int64_t lo[], hi[] and sets them to block `block`'s index range along every iteration
 * dim (hi exclusive): the same decoding as bd_nest_block_range, printed (tests check they agree). */
void bd_emit_block_decode(bd_emitter *e, const bd_nest *n);
/* Row-major element strides of a value (strides[rank-1] == 1). */
void bd_value_strides(const bd_value *v, int64_t *strides);

/* Output of the printer. */
typedef struct bd_c_program {
    char *source;         /* model.c, NUL-terminated (heap) */
    size_t source_len;
    unsigned char *weights; /* the blob embedded with .incbin (heap, may be NULL) */
    size_t weights_len;
    char *header;         /* <name>.h for --lib (heap; NULL unless requested) */
} bd_c_program;

typedef struct bd_emit_opts {
    bool library;          /* emit <name>_create/_run/_destroy + header instead of main() */
    const char *lib_name;  /* C identifier prefix for --lib (already sanitised) */
    const char *weights_symbol; /* assembler symbol of the embedded constants */
    int64_t max_activation_bytes; /* arena + scratch above this fails with BD_ERR_IO (0: no cap) */
} bd_emit_opts;

bd_status bd_emit_c(const bd_program *p, const bd_emit_opts *opts, bd_c_program *out, bd_diag *d);
void bd_c_program_free(bd_c_program *c);

#endif
