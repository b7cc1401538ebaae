/* target.h (cpu) — the CPU target's parts, tied together in its table (target.c). */
#ifndef BD_TARGET_CPU_H
#define BD_TARGET_CPU_H

#include "target/cpu/emit.h"

extern const bd_target bd_target_cpu;

/* tile.c: the tile pass. */
bd_status bd_cpu_tile(bd_program *p, bd_diag *d);

#endif
