/* fuzz_tensor.c — libFuzzer target over the runtime's untrusted-input code: bdrt_tensor_parse
 * (.npy headers and data, ONNX TensorProto wire format) and the output file-name map.
 *
 * The first byte picks what the parser expects (dtype and shape from a small table, including a
 * scalar, an empty tensor and rank 12); the rest is the file. The destination is a heap buffer
 * of exactly the expected size, so any write past it is caught by ASan. Every rejection must
 * come with a message. Bit 7 of the first byte switches to the file-name map instead: the input
 * is split at NUL bytes into output names, and the resulting names must be unique ignoring
 * case, made of [A-Za-z0-9_.-], not start with '.' or '-', and end in ".npy".
 * Build: cmake -DBDC_FUZZ=ON -DBDC_SANITIZE=ON with clang (target bdcrt_fuzz_tensor). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bdrt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const bdrt_io expected[] = {
    {"x", BDRT_FLOAT32, 2, {2, 3}, 0},
    {"s", BDRT_INT64, 0, {0}, 0},
    {"b", BDRT_BOOL, 1, {5}, 0},
    {"e", BDRT_UINT8, 2, {0, 4}, 0},
    {"h", BDRT_FLOAT16, 1, {3}, 0},
    {"d", BDRT_FLOAT64, 3, {1, 2, 2}, 0},
    {"i8", BDRT_INT8, 1, {7}, 0},
    {"u32", BDRT_UINT32, 1, {2}, 0},
    {"u64", BDRT_UINT64, 1, {2}, 0},
    {"i16", BDRT_INT16, 2, {1, 1}, 0},
    {"u16", BDRT_UINT16, 1, {4}, 0},
    {"i32", BDRT_INT32, 1, {3}, 0},
    {"r12", BDRT_FLOAT32, 12, {1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0},
    {"batched", BDRT_FLOAT32, 2, {4, 3}, 2}, /* a ranged batch: dim 0 in 2..4 */
};

static void fuzz_names(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return;
    memcpy(buf, data, size);
    buf[size] = 0;
    bdrt_io outs[64];
    int n = 0;
    for (size_t i = 0; i <= size && n < 64;) {
        outs[n] = (bdrt_io){buf + i, BDRT_FLOAT32, 0, {0}};
        n++;
        i += strlen(buf + i) + 1;
    }
    char(*names)[BDRT_FILE_NAME_MAX] = malloc((size_t)n * sizeof *names);
    if (names && bdrt_output_file_names(n, outs, names) == 0) {
        for (int i = 0; i < n; i++) {
            size_t len = strlen(names[i]);
            if (len < 5 || strcmp(names[i] + len - 4, ".npy") || names[i][0] == '.' ||
                names[i][0] == '-' ||
                strspn(names[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                 "QRSTUVWXYZ0123456789_.-") != len)
                abort();
            for (int j = 0; j < i; j++)
                if (!strcasecmp(names[i], names[j])) abort();
        }
    }
    free(names);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 0x80) {
        fuzz_names(data + 1, size - 1);
        return 0;
    }
    const bdrt_io *io = &expected[data[0] % (sizeof expected / sizeof expected[0])];
    size_t nbytes;
    if (bdrt_io_size(io, NULL, &nbytes)) abort();
    /* Copy to an exact-size heap buffer so that reads past the end are caught too. */
    uint8_t *in = malloc(size - 1 ? size - 1 : 1);
    void *dst = malloc(nbytes ? nbytes : 1);
    char err[512];
    err[0] = 0;
    if (in && dst) {
        memcpy(in, data + 1, size - 1);
        int rc = bdrt_tensor_parse(in, size - 1, io, dst, err, sizeof err);
        if (rc != 0 && (rc != BDRT_EXIT_INPUT || !err[0])) abort();
    }
    free(in);
    free(dst);
    return 0;
}
