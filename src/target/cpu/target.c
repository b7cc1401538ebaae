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

const bd_target bd_target_cpu = {
    .name = "cpu",
    .dialect = &bd_c_dialect,
    .tile = bd_cpu_tile,
    .emit = bd_emit_c,
    .cflags = cpu_cflags,
};

const bd_target *const bd_targets[] = {&bd_target_cpu, NULL};

const bd_target *bd_target_named(const char *name) {
    for (int i = 0; bd_targets[i]; i++)
        if (strcmp(bd_targets[i]->name, name) == 0) return bd_targets[i];
    return NULL;
}
