/* fuzz_load.c — libFuzzer target over the front half of the compiler: load (from memory), verify,
 * shape inference with constant folding, simplification. Any crash, sanitizer report or leak is a
 * bug: bad input must come back as a status. External data is looked up in a folder that does not
 * exist, so the fuzzer cannot make bdc read files. */
#include <stddef.h>
#include <stdint.h>

#include "passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bd_limits lim = bd_default_limits;
    lim.max_weight_bytes = (int64_t)256 << 20; /* keep within the fuzzer's memory cap */
    bd_diag d = {0};
    bd_model *m = NULL;
    if (bd_onnx_load_buffer(data, size, "fuzz.onnx", "/nonexistent-bdc-fuzz-dir", &lim, &m, &d) == BD_OK) {
        bd_front_passes(m, &d);
        bd_model_free(m);
    }
    return 0;
}
