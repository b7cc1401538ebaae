/* consumer.c — a user's program linking the library bdc made from models/sample.onnx: reads the
 * raw float32 input from argv[1], runs the model twice on two instances, prints the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"

int main(int argc, char **argv) {
    if (argc != 2 || sample_NUM_INPUTS != 1 || sample_NUM_OUTPUTS != 1) return 2;
    const sample_io *in = &sample_inputs[0], *out = &sample_outputs[0];
    size_t n_in = 1, n_out = 1;
    for (int i = 0; i < in->rank; i++) n_in *= (size_t)in->dims[i];
    for (int i = 0; i < out->rank; i++) n_out *= (size_t)out->dims[i];
    float *x = malloc(n_in * sizeof *x), *y = malloc(n_out * sizeof *y), *y2 = malloc(n_out * sizeof *y2);
    FILE *f = fopen(argv[1], "rb");
    if (!x || !y || !y2 || !f || fread(x, sizeof *x, n_in, f) != n_in) return 3;
    fclose(f);
    void *a = sample_create(2), *b = sample_create(1);
    if (!a || !b) return 4;
    const void *inputs[] = {x};
    void *outputs[] = {y}, *outputs2[] = {y2};
    if (sample_run(a, inputs, outputs) || sample_run(b, inputs, outputs2)) return 5;
    if (memcmp(y, y2, n_out * sizeof *y) != 0) return 6; /* thread count must not change results */
    printf("%s", out->name);
    for (size_t i = 0; i < n_out; i++) printf(" %.9g", y[i]);
    printf("\n");
    sample_destroy(a);
    sample_destroy(b);
    free(x);
    free(y);
    free(y2);
    return 0;
}
