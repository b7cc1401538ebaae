/* bdrt_gpu_plan.c — which CTA of the persistent kernel runs which task (bdrt_gpu.h).
 *
 * The compiler cannot know how many CTAs a device holds at once (it depends on the device and on
 * the kernel's registers), so the assignment is made when the model is created, from the task
 * DAG and per-task costs the compiler printed: list scheduling in task order, each task to the CTA
 * that is free first. */
#include <stdlib.h>

#include "bdrt_gpu.h"

static uint64_t next_random(uint64_t *s) {
    /* splitmix64: every seed gives a usable sequence */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int bdrt_gpu_assign(int32_t n_tasks, const float *cost, const int32_t *wait_start,
                    const int32_t *waits, const int32_t *task_nest, int32_t n_nests,
                    int32_t n_ctas, uint64_t seed, int32_t *cta_start, int32_t *cta_tasks) {
    double *finish = malloc(((size_t)n_tasks + 1) * sizeof *finish);
    double *nest_finish = calloc((size_t)n_nests + 1, sizeof *nest_finish);
    double *cta_free = calloc((size_t)n_ctas + 1, sizeof *cta_free);
    int32_t *cta_of = malloc(((size_t)n_tasks + 1) * sizeof *cta_of);
    int32_t *count = calloc((size_t)n_ctas + 1, sizeof *count);
    int rc = -1;
    if (!finish || !nest_finish || !cta_free || !cta_of || !count) goto done;
    uint64_t state = seed;
    for (int32_t t = 0; t < n_tasks; t++) {
        double ready = 0;
        for (int32_t w = wait_start[t]; w < wait_start[t + 1]; w++) {
            int32_t c = waits[w];
            double f = c < n_tasks ? finish[c] : nest_finish[c - n_tasks];
            if (f > ready) ready = f;
        }
        int32_t best = 0;
        if (seed) {
            best = (int32_t)(next_random(&state) % (uint64_t)n_ctas);
        } else {
            for (int32_t c = 1; c < n_ctas; c++)
                if (cta_free[c] < cta_free[best]) best = c;
        }
        double start = cta_free[best] > ready ? cta_free[best] : ready;
        finish[t] = start + (cost[t] > 0 ? cost[t] : 1);
        cta_free[best] = finish[t];
        if (finish[t] > nest_finish[task_nest[t]]) nest_finish[task_nest[t]] = finish[t];
        cta_of[t] = best;
        count[best]++;
    }
    cta_start[0] = 0;
    for (int32_t c = 0; c < n_ctas; c++) cta_start[c + 1] = cta_start[c] + count[c];
    for (int32_t c = 0; c < n_ctas; c++) count[c] = cta_start[c];
    for (int32_t t = 0; t < n_tasks; t++) cta_tasks[count[cta_of[t]]++] = t; /* task order kept */
    rc = 0;
done:
    free(finish);
    free(nest_finish);
    free(cta_free);
    free(cta_of);
    free(count);
    return rc;
}
