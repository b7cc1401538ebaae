/* compile.h — the `bdc compile` command (compile.c). */
#ifndef BD_COMPILE_H
#define BD_COMPILE_H

#include <stdbool.h>

#include "driver/pipeline.h"

/* --qdq: how a QDQ model's Conv of DequantizeLinear'd 8-bit X and W is computed. */
typedef enum bd_qdq_mode { BD_QDQ_AUTO = 0, BD_QDQ_INT8, BD_QDQ_FLOAT } bd_qdq_mode;

typedef struct bd_compile_opts {
    const char *model, *output;
    const bd_target *target; /* --target (NULL: the first of bd_targets, cpu) */
    bool library;      /* --lib: static library + header instead of an executable */
    bd_fusion fusion;  /* --fusion none|op|block */
    bool fusion_given; /* --fusion was on the command line (else bd_fusion_for's default) */
    bd_schedule_mode schedule; /* --schedule op|block */
    const char *emit_dir; /* --emit-dir: keep a copy of the generated sources */
    const char *arch;     /* --arch: -march= for the generated code (NULL: native) */
    bd_precision precision; /* --precision fp32|tf32|fp16|bf16 (GPU targets) */
    bool fuse_branches;     /* --branches fuse (GPU targets, --schedule op) */
    bool winograd;          /* --winograd on|off (the CPU target; default on) */
    bool winograd_given;    /* --winograd was on the command line */
    bool keep_denormals;    /* --denormals keep (the CPU target; default flush) */
    bool denormals_given;   /* --denormals was on the command line */
    bd_qdq_mode qdq;        /* --qdq auto|int8|float */
    int tile_threads;       /* --tile-threads N (the CPU target); 0: bd_tile_threads_default */
    bool keep_temps;   /* --keep-temps */
    bool verbose;      /* -v: print native commands */
    bool progress;     /* stage names and times on stderr */
    bool werror;       /* --werror: build the generated C with -Werror */
    bd_dumps dumps;    /* --dump=... */
    bd_limits limits;  /* --max-weights, --max-activations, --max-nodes (else the defaults) */
    bd_input_binds binds; /* --shape, --dim, --const */
} bd_compile_opts;

bd_status bd_compile(const bd_compile_opts *o, bd_diag *d);

/* Whether --qdq `mode` computes QDQ convolutions on 8-bit values for target t built for arch
 * (NULL: its default). auto: on the CPU target built for this machine (--arch native) when its
 * CPU has AVX2 (the int8 kernels' vpmaddubsw, or VNNI's vpdpbusd where it has them); the GPU
 * targets have no tiled integer convolution yet. */
bool bd_qdq_int8(bd_qdq_mode mode, const struct bd_target *t, const char *arch);

/* Whether the CPU target's int8 convolutions may take the kernel's direct path (and requantize
 * in its epilogue): built for this machine (--arch native) and its CPU has AVX2 (or AVX-512
 * VNNI), whose micro-kernels the path needs to be fast. */
bool bd_i8_direct_default(const struct bd_target *t, const char *arch);

/* Whether the CPU target runs 512-bit multiply-adds at half the rate of its other AVX-512 work,
 * as two 256-bit halves (AMD Zen 4): built for this machine and its CPU is one (bd_program). */
bool bd_fma_half_default(const struct bd_target *t, const char *arch);

/* The --fusion mode of target t: `fusion` where --fusion was given, else block for the CPU and
 * op for the GPUs. */
bd_fusion bd_fusion_for(const struct bd_target *t, bool given, bd_fusion fusion);

/* The threads the CPU tiler sizes blocks for when --tile-threads is not given: this machine's
 * CPUs (at most 8) when the code is built for it (--arch native), else 8. */
int bd_tile_threads_default(const char *arch);

#endif
