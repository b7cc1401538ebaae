/* targets.c — the targets bdc has, by name: the CPU's C, and the GPU printer's three dialects. */
#include <string.h>

#include "target/cpu/target.h"
#include "target/gpu/gpu.h"

const bd_target *const bd_targets[] = {&bd_target_cpu, &bd_target_cuda, &bd_target_hip,
                                       &bd_target_opencl, NULL};

const bd_target *bd_target_named(const char *name) {
    for (int i = 0; bd_targets[i]; i++)
        if (strcmp(bd_targets[i]->name, name) == 0) return bd_targets[i];
    return NULL;
}
