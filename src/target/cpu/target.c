/* target.c — the CPU target's table: its tiler (tile.c), the C printer (emit*.c) with the C
 * expression dialect (dialect.c), and the flags its C compiler gets. */
#include <string.h>

#include "target/cpu/target.h"

/* -fwrapv: ONNX integer arithmetic wraps. -ffp-contract=fast: -std=c11 would otherwise forbid
 * fusing a*b+c into one FMA. -fno-trapping-math: lets the selects in the generated exp/tanh/erf
 * vectorize. */
static const char *const cpu_cflags[] = {
    "-std=c11",           "-O3", "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
    "-ffp-contract=fast", NULL};

static const char *const cpu_libs[] = {"-lpthread", "-lm", NULL};

const bd_target bd_target_cpu = {
    .name = "cpu",
    .summary = "C for this machine's CPU (AVX-512/AVX2 kernels chosen at run time), the default",
    .dialect = &bd_c_dialect,
    .tile = bd_cpu_tile,
    .tile_attention = bd_cpu_tile_attention,
    .tile_conv_pool = bd_cpu_tile_conv_pool,
    .emit = bd_emit_c,
    .cflags = cpu_cflags,
    .build = {.source_name = "model.c", .hint = "set CC or install gcc", .arch_flag = "-march=%s",
              .default_arch = "native", .werror = "-Werror", .link_kernels = true, .libs = cpu_libs},
};

