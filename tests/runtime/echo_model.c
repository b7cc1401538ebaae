/* echo_model.c — a model with one input "in" and one output "out" of a dtype and shape chosen at
 * start-up, whose run copies in to out: test_runtime.sh uses it to round-trip every dtype through
 * the readers (.npy little/big-endian, TensorProto raw_data and typed fields) and the .npy writer.
 * BDRT_ECHO_DTYPE is the ONNX dtype code, BDRT_ECHO_SHAPE the dims ("2,3"; empty: a scalar). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdrt.h"

static bdrt_io echo_in = {"in", BDRT_FLOAT32, 0, {0}, 0}, echo_out = {"out", BDRT_FLOAT32, 0, {0}, 0};
static size_t echo_bytes;

static void *echo_create(int threads) {
    (void)threads;
    return malloc(1);
}

static void echo_destroy(void *inst) {
    free(inst);
}

static int echo_run(void *inst, const void *const *in, void *const *out) {
    (void)inst;
    if (echo_bytes) memcpy(out[0], in[0], echo_bytes);
    return 0;
}

int main(int argc, char **argv) {
    const char *dt = getenv("BDRT_ECHO_DTYPE"), *shape = getenv("BDRT_ECHO_SHAPE");
    if (!dt || !shape) {
        fprintf(stderr, "echo_model: set BDRT_ECHO_DTYPE and BDRT_ECHO_SHAPE\n");
        return 1;
    }
    echo_in.dtype = atoi(dt);
    for (const char *s = shape; *s && echo_in.rank < BDRT_MAX_RANK; echo_in.rank++) {
        char *end;
        echo_in.dims[echo_in.rank] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
    }
    if (bdrt_io_size(&echo_in, NULL, &echo_bytes)) {
        fprintf(stderr, "echo_model: bad dtype or shape\n");
        return 1;
    }
    memcpy(echo_out.dims, echo_in.dims, sizeof echo_in.dims);
    echo_out.dtype = echo_in.dtype;
    echo_out.rank = echo_in.rank;
    const bdrt_model m = {"echo", 1, 1, &echo_in, &echo_out, echo_create, echo_run, echo_destroy,
                          0, NULL, NULL, NULL, NULL, NULL, NULL, -1, NULL};
    return bdrt_main(argc, argv, &m);
}
