/* target.h — a code generation target as a table (after QBE's Target and tinygrad's
 * CStyleLanguage): the driver calls a target only through it, so a new target is a new table and
 * its printer, not a fork of the pipeline. A target decides three things: how the nests are tiled
 * (and which of its kernels run them), how its printer spells the program (bodies, expression
 * dialect), and how the native toolchain builds what it printed. */
#ifndef BD_TARGET_H
#define BD_TARGET_H

#include "base/blob.h"
#include "plan/plan.h"
#include "target/print.h"

/* --precision: what a GPU target's tiled matrix products and convolutions multiply in (fp32
 * accumulation always); the CPU takes fp32 or bf16 (its MatMul and Gemm by constant weights). */
typedef enum bd_precision { BD_PRECISION_FP32 = 0, BD_PRECISION_TF32, BD_PRECISION_FP16, BD_PRECISION_BF16 } bd_precision;

/* What the printer is asked for. */
typedef struct bd_emit_opts {
    const struct bd_target *target; /* the target printing (its dialect tables) */
    const char *arch;               /* --arch, NULL: the target's default */
    bd_precision precision;         /* --precision */
    bool fuse_branches;             /* --branches fuse: GPU op schedule, small siblings in one kernel */
    bool library;               /* <name>_create/_run/_destroy + a header instead of main() */
    const char *lib_name;       /* C identifier prefix for --lib (already sanitised) */
    const char *weights_symbol; /* assembler symbol of the embedded constants */
    bool keep_denormals;        /* --denormals keep: run() leaves the FTZ/DAZ modes alone (CPU) */
    const bool *batch_sliced;   /* per nest, with a ranged batch: runs a prefix of its blocks
                                   at a smaller batch (plan/batch.h); NULL: none */
} bd_emit_opts;

/* The CPU printer's model.c compiles whole or in parts (target/cpu/emit.c): BD_PARTS shares of
 * its block functions, which the native build spreads over parallel compiles. */
enum { BD_PARTS = 8 };

/* What the printer produces. */
typedef struct bd_c_program {
    char *source; /* the target's source file (model.c, model.cu, ...), NUL-terminated (heap) */
    size_t source_len;
    bd_blob weights; /* the bytes bd_weights points at: borrows the model's constants */
    char *header; /* <name>.h for --lib (heap; NULL unless requested) */
} bd_c_program;
void bd_c_program_free(bd_c_program *c);

/* How the native toolchain builds what a target printed (src/driver/compile.c reads it). */
typedef struct bd_build_recipe {
    const char *source_name;  /* the printed file: "model.c", "model.cu", "model.hip" */
    const char *compiler;     /* NULL: the C compiler ($CC, bd_cc), else this program */
    const char *hint;         /* what to install when the compiler is missing */
    const char *arch_flag;    /* printf format of --arch ARCH: "-march=%s", "-arch=%s" */
    const char *default_arch; /* --arch when none is given; NULL: the target takes none */
    const char *werror;       /* the compiler's spelling of --werror */
    bool link_kernels;        /* link the CPU micro-kernels (libbdckernels.a) */
    bool link_with_compiler;  /* link with `compiler` (nvcc, hipcc: their device runtimes) */
    const char *const *libs;  /* link arguments after the runtime, NULL-terminated */
} bd_build_recipe;

struct bd_gpu_dialect; /* target/gpu/: how a GPU dialect spells the device code */

typedef struct bd_target {
    const char *name;               /* --target NAME */
    const char *summary;            /* one line for --help */
    const bd_expr_dialect *dialect; /* how its printer spells the nests' expressions */
    /* The tile pass: every nest's tile, with the kernel choices and scratch that go with it. */
    bd_status (*tile)(bd_program *p, bd_diag *d);
    /* Targets whose printer has the ATTENTION body: the tile and scratch of a nest that
     * fuse/attention.c forms after the tile pass, false where the printer cannot take it (the
     * attention then stays as its nests, as it does for a target with none). */
    bool (*tile_attention)(const bd_graph *g, bd_nest *n, int threads);
    /* Targets whose printer pools a convolution's rows inside its blocks (bd_conv_params.pooled):
     * the tile and scratch of the nest fuse/conv_pool.c forms, false where it cannot take it
     * (the pool then stays a nest of its own, as it does for a target with none). */
    bool (*tile_conv_pool)(const bd_graph *g, bd_nest *n, int threads);
    /* The printer over the planned program. */
    bd_status (*emit)(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                      const bd_emit_opts *o, bd_c_program *out, bd_diag *d);
    /* The native compiler's flags for the printed source (before -march and the includes). */
    const char *const *cflags;
    bd_build_recipe build;
    const struct bd_gpu_dialect *gpu; /* GPU targets: the dialect their printer uses; NULL: CPU */
} bd_target;

/* The targets bdc has, NULL-terminated, and one by name (NULL when there is none). */
extern const bd_target *const bd_targets[];
const bd_target *bd_target_named(const char *name);

#endif
