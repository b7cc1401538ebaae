/* bdrt_gpu.h — what the host side of every GPU executable shares, whatever its API.
 *
 * bdc's GPU printer (src/target/gpu/) writes one host program for CUDA, HIP and OpenCL. It calls
 * the device only through the functions below, which one of two headers defines as static
 * functions: bdrt_gpu_cuda.h (CUDA, and HIP through a table of spellings) and bdrt_gpu_opencl.h
 * (OpenCL 1.2). The generated file includes exactly one of them, so an executable depends on the
 * driver alone (and libOpenCL for OpenCL), and libbdcrt itself needs no GPU headers.
 *
 *   bdrt_gpu_open     picks device `device` (--device N), checks the architecture the code was
 *                     built for, builds the embedded OpenCL source; NULL with the reason printed
 *   bdrt_gpu_alloc    device memory (bytes may be 0), NULL when out of memory
 *   bdrt_gpu_write / bdrt_gpu_read / bdrt_gpu_zero
 *                     copies between host and device buffers at a byte offset
 *   bdrt_gpu_streams  more streams (in-order queues) and events, for independent branches
 *   bdrt_gpu_record / bdrt_gpu_wait
 *                     an event marks what a stream has been given; a stream waits for an event
 *   bdrt_gpu_launch   on stream q, kernel k over `blocks` blocks of `threads` threads with the buffers (and,
 *                     with epoch > 0, the epoch as a last 32-bit argument); cooperative: all
 *                     blocks must be co-resident (the persistent kernel), refused otherwise
 *   bdrt_gpu_resident how many blocks of kernel k can be resident at once on the device
 *   bdrt_gpu_graph_capture / bdrt_gpu_graph_launch
 *                     the launches a function makes, captured once as a graph and replayed
 *                     (CUDA graphs, hipGraph; OpenCL has none: capture returns -1)
 *   bdrt_gpu_time_begin / bdrt_gpu_time_end
 *                     device events around a run; bdrt_gpu_time_end waits for the device and
 *                     gives the run's device time in milliseconds
 *
 * The block schedule's persistent kernel (see docs/architecture.md) needs one decision at run
 * time: which CTA runs which tasks, for the number of CTAs this device holds at once. That is
 * bdrt_gpu_assign, plain C, in libbdcrt (bdrt_gpu_plan.c). */
#ifndef BDRT_GPU_H
#define BDRT_GPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BDRT_GPU_MAX_STREAMS 4 /* streams a model's branches run on under --schedule op */

/* List scheduling of the persistent kernel's tasks onto n_ctas CTAs. Tasks are numbered in a
 * topological order and every CTA runs its own in increasing order, which guarantees progress
 * when all CTAs are resident: the lowest unfinished task waits only on finished ones.
 * A task waits on counters: waits[wait_start[t] .. wait_start[t + 1]) index counters, where
 * counter c < n_tasks is task c's own flag and c >= n_tasks is nest (c - n_tasks)'s completion
 * count (bumped by every task whose task_nest is that nest). Each task goes to the CTA that
 * is free first, starting at the latest finish of what it waits on plus its cost (cost[t], any
 * unit). With seed != 0 the assignment is random instead (an adversarial order for tests: any
 * assignment must give the same result). Fills cta_start[n_ctas + 1] and cta_tasks[n_tasks];
 * returns 0, or -1 when out of memory. */
int bdrt_gpu_assign(int32_t n_tasks, const float *cost, const int32_t *wait_start,
                    const int32_t *waits, const int32_t *task_nest, int32_t n_nests,
                    int32_t n_ctas, uint64_t seed, int32_t *cta_start, int32_t *cta_tasks);

#ifdef __cplusplus
}
#endif

#endif
