/* fuzz_load.c — libFuzzer target over everything the compiler does before the native compiler:
 * load (from memory), verify, shape inference with constant folding, simplification, the support
 * check, and the nest program's passes (lower, tile, fuse, schedule, plan memory, each verified)
 * and emission (the CPU's C or the GPU printer, also picked by the input's length). Any
 * crash, sanitizer report or leak is a bug: bad input must come back as a status. External data
 * is looked up in a folder that does not exist, so the fuzzer cannot make bdc read files. The
 * input's length picks the fusion mode (odd: none), so both lowering paths are covered. */
#include <stddef.h>
#include <stdint.h>

#include "driver/pipeline.h"
#include "target/cpu/target.h"
#include "target/gpu/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ignore_unsupported(void *ctx, const bd_node *n, const bd_value *v, const char *why) {
    (void)ctx, (void)n, (void)v, (void)why;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bd_limits lim = bd_default_limits;
    lim.max_weight_bytes = (int64_t)256 << 20; /* keep within the fuzzer's memory cap */
    bd_diag d = {0};
    bd_model *m = NULL;
    if (bd_onnx_load_buffer(data, size, "fuzz.onnx", "/nonexistent-bdc-fuzz-dir", &lim, &m, &d) != BD_OK)
        return 0;
    if (bd_front_passes(m, true, &d) == BD_OK && bd_support_check(m->graph, ignore_unsupported, NULL) == 0) {
        bd_dumps none = {0};
        bd_planned pl;
        /* the input's size picks the fusion x schedule mode, the target, Winograd on or off, the
         * int8 convolutions' direct path and bf16's tiling, so the corpus covers them all */
        bd_plan_opts po = {(bd_fusion)(size % 3), (bd_schedule_mode)(size / 3 % 2), (int64_t)1 << 30,
                           size / 12 % 2 == 0, 0, size / 24 % 2 == 0, size / 48 % 2 == 0};
        const bd_target *t = size / 6 % 2 ? &bd_target_opencl : &bd_target_cpu;
        if (bd_plan_program(m->graph, t, &po, &none, &pl, &d) == BD_OK) {
            bd_emit_opts eo = {.target = t, .lib_name = "fuzz", .weights_symbol = "fuzz_weights"};
            bd_c_program c = {0};
            t->emit(&pl.prog, &pl.sched, &pl.mem, &eo, &c, &d);
            bd_c_program_free(&c);
        }
        bd_planned_free(&pl);
    }
    bd_model_free(m);
    return 0;
}
