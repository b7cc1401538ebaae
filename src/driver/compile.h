/* compile.h — the `bdc compile` command (compile.c). */
#ifndef BD_COMPILE_H
#define BD_COMPILE_H

#include <stdbool.h>

#include "driver/pipeline.h"

typedef struct bd_compile_opts {
    const char *model, *output;
    const bd_target *target; /* --target (NULL: the first of bd_targets, cpu) */
    bool library;      /* --lib: static library + header instead of an executable */
    bd_fusion fusion;  /* --fusion none|op|block */
    bd_schedule_mode schedule; /* --schedule op|block */
    const char *emit_dir; /* --emit-dir: keep a copy of the generated sources */
    const char *arch;     /* --arch: -march= for the generated code (NULL: native) */
    bd_precision precision; /* --precision fp32|tf32|fp16|bf16 (GPU targets) */
    bool fuse_branches;     /* --branches fuse (GPU targets, --schedule op) */
    bool winograd;          /* --winograd on|off (the CPU target; default on) */
    bool winograd_given;    /* --winograd was on the command line */
    bool keep_denormals;    /* --denormals keep (the CPU target; default flush) */
    bool denormals_given;   /* --denormals was on the command line */
    bool keep_temps;   /* --keep-temps */
    bool verbose;      /* -v: print native commands */
    bool progress;     /* stage names and times on stderr */
    bool werror;       /* --werror: build the generated C with -Werror */
    bd_dumps dumps;    /* --dump=... */
    bd_limits limits;  /* --max-weights, --max-activations, --max-nodes (else the defaults) */
    bd_input_binds binds; /* --shape, --dim, --const */
} bd_compile_opts;

bd_status bd_compile(const bd_compile_opts *o, bd_diag *d);

#endif
