/* fake_model.c — a hand-written stand-in for a bdc-generated model, for the runtime's tests.
 *
 * Inputs: x float32[2,3], idx int64[4]. Outputs (chosen to exercise the writer and the file-name
 * map, see test_runtime.sh for the expected values):
 *   y          float32[2,3]   2 * x                      (computed on the pool, one block each)
 *   pos        bool[4]        idx > 0
 *   idx_sum    int64[]        sum(idx)                   (a scalar)
 *   LONG1      float64[2,3]   x + 0.5                    (150-byte name with '/', spaces, '&')
 *   a/b        int32[4]       idx                        (-> a_b.npy)
 *   a b        uint8[4]       idx & 255                  (-> a_b_2.npy)
 *   big        float32[32,32] x[k % 6] + k               (4 KiB; rows on the pool)
 *   ../up      int8[2]        {1, -1}                    (-> _._up.npy)
 *   A/B        float16[2]     {1.0, -2.0}                (-> A_B_3.npy: case-insensitive clash)
 *   LONG2      uint16[2]      {7, 65535}                 (shares LONG1's first 100 bytes)
 * Environment: BDRT_FAKE_FAIL=N makes run return N; BDRT_FAKE_VERBOSE=1 makes create print
 * "fake: threads=N" (the pool's thread count) on stderr. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdrt.h"

#define LONG_PREFIX                                                                                \
    "encoder/layer.11/attention/self attention/output projection/with spaces and slashes/"
#define LONG1 LONG_PREFIX "dense (bias) & gelu: #1 dense (bias) & gelu: #1 dense (bias) & gel"
#define LONG2 LONG_PREFIX "dense (bias) & gelu: #2 dense (bias) & gelu: #2 dense (bias) & gel"

static const bdrt_io fake_inputs[] = {
    {"x", BDRT_FLOAT32, 2, {2, 3}, 0},
    {"idx", BDRT_INT64, 1, {4}, 0},
};

static const bdrt_io fake_outputs[] = {
    {"y", BDRT_FLOAT32, 2, {2, 3}, 0},     {"pos", BDRT_BOOL, 1, {4}, 0},
    {"idx_sum", BDRT_INT64, 0, {0}, 0},    {LONG1, BDRT_FLOAT64, 2, {2, 3}, 0},
    {"a/b", BDRT_INT32, 1, {4}, 0},        {"a b", BDRT_UINT8, 1, {4}, 0},
    {"big", BDRT_FLOAT32, 2, {32, 32}, 0}, {"../up", BDRT_INT8, 1, {2}, 0},
    {"A/B", BDRT_FLOAT16, 1, {2}, 0},      {LONG2, BDRT_UINT16, 1, {2}, 0},
};

typedef struct fake {
    bdrt_pool *pool;
    int fail;
} fake;

static void *fake_create(int threads) {
    fake *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->pool = bdrt_pool_create(threads);
    if (!f->pool) {
        free(f);
        return NULL;
    }
    const char *e = getenv("BDRT_FAKE_FAIL");
    f->fail = e ? atoi(e) : 0;
    e = getenv("BDRT_FAKE_VERBOSE");
    if (e && *e == '1') fprintf(stderr, "fake: threads=%d\n", bdrt_pool_threads(f->pool));
    return f;
}

static void fake_destroy(void *inst) {
    fake *f = inst;
    bdrt_pool_destroy(f->pool);
    free(f);
}

typedef struct job {
    const float *x;
    float *y, *big;
} job;

static void y_block(void *ctx, int64_t b, int thread) {
    job *j = ctx;
    (void)thread;
    j->y[b] = 2.0f * j->x[b];
}

static void big_block(void *ctx, int64_t row, int thread) {
    job *j = ctx;
    (void)thread;
    for (int64_t c = 0; c < 32; c++) {
        int64_t k = row * 32 + c;
        j->big[k] = j->x[k % 6] + (float)k;
    }
}

static int fake_run(void *inst, const void *const *in, void *const *out) {
    fake *f = inst;
    if (f->fail) {
        if (f->fail == BDRT_EXIT_INPUT) bdrt_errorf("fake: index out of range (test)");
        return f->fail;
    }
    const float *x = in[0];
    const int64_t *idx = in[1];
    job j = {x, out[0], out[6]};
    bdrt_pool_run(f->pool, 6, y_block, &j);
    bdrt_pool_run(f->pool, 32, big_block, &j);
    unsigned char *pos = out[1];
    int64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        pos[i] = idx[i] > 0;
        sum += idx[i];
        ((int32_t *)out[4])[i] = (int32_t)idx[i];
        ((uint8_t *)out[5])[i] = (uint8_t)(idx[i] & 255);
    }
    memcpy(out[2], &sum, sizeof sum);
    for (int i = 0; i < 6; i++)
        ((double *)out[3])[i] = (double)x[i] + 0.5;
    ((int8_t *)out[7])[0] = 1;
    ((int8_t *)out[7])[1] = -1;
    ((uint16_t *)out[8])[0] = 0x3c00; /* 1.0 */
    ((uint16_t *)out[8])[1] = 0xc000; /* -2.0 */
    ((uint16_t *)out[9])[0] = 7;
    ((uint16_t *)out[9])[1] = 65535;
    return 0;
}

static const bdrt_model fake_model = {
    .name = "fake",
    .n_inputs = 2,
    .n_outputs = (int)(sizeof fake_outputs / sizeof fake_outputs[0]),
    .inputs = fake_inputs,
    .outputs = fake_outputs,
    .create = fake_create,
    .run = fake_run,
    .destroy = fake_destroy,
    .weights_bytes = -1, /* none appended: nothing to map */
};

int main(int argc, char **argv) {
    return bdrt_main(argc, argv, &fake_model);
}
