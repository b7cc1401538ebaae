/* bdrt_gpu_opencl.h — bdrt_gpu.h's device functions over OpenCL 1.2, as static functions for the
 * one generated file that includes it (link with -lOpenCL). The device code is OpenCL C source
 * embedded in the executable and built when the model is created; the first GPU device is
 * preferred, then any device (PoCL's CPU device in the tests), in platform order. */
#ifndef BDRT_GPU_OPENCL_H
#define BDRT_GPU_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdrt.h"
#include "bdrt_gpu.h"

typedef cl_mem bdrt_gpu_buf;

typedef struct bdrt_gpu {
    cl_context ctx;
    cl_command_queue queue; /* queue 0: copies, timing, the persistent kernel */
    int n_streams;          /* in-order queues, queue 0 included (--schedule op branches) */
    cl_command_queue queues[BDRT_GPU_MAX_STREAMS];
    int n_events;
    cl_event *events;
    cl_program program;
    cl_device_id device;
    int n_kernels;
    cl_kernel *kernels;
    cl_uint compute_units;
    cl_event t0, t1;
    char name[256];
} bdrt_gpu;

static inline void bdrt_gpu_close(bdrt_gpu *g) {
    if (!g) return;
    for (int i = 0; g->kernels && i < g->n_kernels; i++)
        if (g->kernels[i]) clReleaseKernel(g->kernels[i]);
    for (int i = 0; g->events && i < g->n_events; i++)
        if (g->events[i]) clReleaseEvent(g->events[i]);
    free(g->events);
    for (int i = 1; i < g->n_streams; i++) clReleaseCommandQueue(g->queues[i]);
    free(g->kernels);
    if (g->program) clReleaseProgram(g->program);
    if (g->queue) clReleaseCommandQueue(g->queue);
    if (g->ctx) clReleaseContext(g->ctx);
    free(g);
}

/* Device `index` counting GPUs first, then the other devices, over all platforms. */
static inline int bdrt_cl_pick(int index, cl_device_id *out) {
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) return -1;
    int seen = 0;
    for (int pass = 0; pass < 2; pass++)
        for (cl_uint p = 0; p < np && p < 16; p++) {
            cl_device_id devs[64];
            cl_uint nd = 0;
            cl_device_type want = pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL & ~CL_DEVICE_TYPE_GPU;
            if (clGetDeviceIDs(plats[p], want, 64, devs, &nd) != CL_SUCCESS) continue;
            for (cl_uint d = 0; d < nd && d < 64; d++)
                if (seen++ == index) {
                    *out = devs[d];
                    return 0;
                }
        }
    return seen;
}

static bdrt_gpu *bdrt_gpu_open(int device, const char *source, const char *arch,
                               const char *const *kernel_names, const void *const *kernel_fns,
                               int n_kernels) {
    (void)arch;
    (void)kernel_fns;
    bdrt_gpu *g = (bdrt_gpu *)calloc(1, sizeof *g);
    if (!g) return NULL;
    int found = bdrt_cl_pick(device, &g->device);
    if (found != 0) {
        if (found < 0) bdrt_errorf("no OpenCL platform found (install an OpenCL driver, e.g. PoCL)");
        else bdrt_errorf("no OpenCL device %d: there %s %d", device, found == 1 ? "is" : "are", found);
        free(g);
        return NULL;
    }
    cl_int err;
    clGetDeviceInfo(g->device, CL_DEVICE_NAME, sizeof g->name - 1, g->name, NULL);
    clGetDeviceInfo(g->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof g->compute_units, &g->compute_units, NULL);
    g->ctx = clCreateContext(NULL, 1, &g->device, NULL, NULL, &err);
    if (g->ctx) g->queue = clCreateCommandQueue(g->ctx, g->device, CL_QUEUE_PROFILING_ENABLE, &err);
    g->queues[0] = g->queue;
    g->n_streams = 1;
    size_t len = strlen(source);
    if (g->queue) g->program = clCreateProgramWithSource(g->ctx, 1, &source, &len, &err);
    if (!g->program) {
        bdrt_errorf("OpenCL device '%s': cannot create a context (error %d)", g->name, (int)err);
        bdrt_gpu_close(g);
        return NULL;
    }
    err = clBuildProgram(g->program, 1, &g->device, "-cl-std=CL1.2", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(g->program, g->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        bdrt_errorf("OpenCL device '%s' cannot build the model's kernels (error %d): %.2000s", g->name,
                    (int)err, log);
        bdrt_gpu_close(g);
        return NULL;
    }
    g->n_kernels = n_kernels;
    g->kernels = (cl_kernel *)calloc((size_t)n_kernels + 1, sizeof *g->kernels);
    for (int i = 0; g->kernels && i < n_kernels; i++) {
        g->kernels[i] = clCreateKernel(g->program, kernel_names[i], &err);
        if (!g->kernels[i]) {
            bdrt_errorf("OpenCL: no kernel %s (error %d)", kernel_names[i], (int)err);
            bdrt_gpu_close(g);
            return NULL;
        }
    }
    if (!g->kernels) {
        bdrt_gpu_close(g);
        return NULL;
    }
    return g;
}

static inline bdrt_gpu_buf bdrt_gpu_alloc(bdrt_gpu *g, size_t bytes) {
    cl_int err;
    cl_mem m = clCreateBuffer(g->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 64, NULL, &err);
    if (!m) bdrt_errorf("out of device memory for %zu bytes on '%s' (error %d)", bytes, g->name, (int)err);
    return m;
}

static inline void bdrt_gpu_free(bdrt_gpu *g, bdrt_gpu_buf b) {
    (void)g;
    if (b) clReleaseMemObject(b);
}

static inline int bdrt_gpu_write(bdrt_gpu *g, bdrt_gpu_buf dst, size_t off, const void *src, size_t bytes) {
    if (!bytes) return 0;
    return clEnqueueWriteBuffer(g->queue, dst, CL_TRUE, off, bytes, src, 0, NULL, NULL) == CL_SUCCESS ? 0 : -1;
}

static inline int bdrt_gpu_read(bdrt_gpu *g, void *dst, bdrt_gpu_buf src, size_t off, size_t bytes) {
    if (!bytes) return 0;
    return clEnqueueReadBuffer(g->queue, src, CL_TRUE, off, bytes, dst, 0, NULL, NULL) == CL_SUCCESS ? 0 : -1;
}

static inline int bdrt_gpu_zero(bdrt_gpu *g, bdrt_gpu_buf dst, size_t bytes) {
    void *z = calloc(1, bytes ? bytes : 1);
    int rc = z ? bdrt_gpu_write(g, dst, 0, z, bytes) : -1;
    free(z);
    return rc;
}

/* Work-groups of kernel k that run at once: PoCL runs one per compute unit (a thread). */
static inline int bdrt_gpu_resident(bdrt_gpu *g, int k, int threads) {
    (void)k;
    (void)threads;
    return g->compute_units > 0 ? (int)g->compute_units : 1;
}

/* n in-order queues in all (queue 0 included) and n events for bdrt_gpu_record / bdrt_gpu_wait. */
static inline int bdrt_gpu_streams(bdrt_gpu *g, int n, int n_events) {
    cl_int err;
    if (n > BDRT_GPU_MAX_STREAMS) n = BDRT_GPU_MAX_STREAMS;
    for (; g->n_streams < n; g->n_streams++)
        if (!(g->queues[g->n_streams] = clCreateCommandQueue(g->ctx, g->device, 0, &err))) return -1;
    g->events = (cl_event *)calloc((size_t)n_events + 1, sizeof *g->events);
    g->n_events = n_events;
    return g->events ? 0 : -1;
}

/* Event ev marks what queue q has been given so far (a marker); queue q waits for event ev (a
 * barrier on it). */
static inline int bdrt_gpu_record(bdrt_gpu *g, int q, int ev) {
    if (g->events[ev]) clReleaseEvent(g->events[ev]);
    g->events[ev] = NULL;
    return clEnqueueMarkerWithWaitList(g->queues[q % g->n_streams], 0, NULL, &g->events[ev]) == CL_SUCCESS ? 0 : -1;
}

static inline int bdrt_gpu_wait(bdrt_gpu *g, int q, int ev) {
    return clEnqueueBarrierWithWaitList(g->queues[q % g->n_streams], 1, &g->events[ev], NULL) == CL_SUCCESS ? 0 : -1;
}

static inline int bdrt_gpu_launch(bdrt_gpu *g, int q, int k, int64_t blocks, int threads, int cooperative,
                           int n_bufs, const bdrt_gpu_buf *bufs, uint32_t epoch) {
    cl_kernel kern = g->kernels[k];
    if (cooperative && blocks > bdrt_gpu_resident(g, k, threads)) {
        bdrt_errorf("persistent kernel: %lld work-groups cannot all run at once on '%s'", (long long)blocks, g->name);
        return -1;
    }
    for (int i = 0; i < n_bufs; i++) clSetKernelArg(kern, (cl_uint)i, sizeof(cl_mem), &bufs[i]);
    if (epoch) clSetKernelArg(kern, (cl_uint)n_bufs, sizeof(cl_uint), &epoch);
    size_t local = (size_t)threads, global = (size_t)blocks * local;
    cl_int err = clEnqueueNDRangeKernel(g->queues[q % g->n_streams], kern, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        bdrt_errorf("OpenCL: launching kernel %d failed (error %d)", k, (int)err);
        return -1;
    }
    return 0;
}

static inline int bdrt_gpu_time_begin(bdrt_gpu *g) {
    if (g->t0) clReleaseEvent(g->t0);
    g->t0 = NULL;
    return clEnqueueMarkerWithWaitList(g->queue, 0, NULL, &g->t0) == CL_SUCCESS ? 0 : -1;
}

static inline int bdrt_gpu_time_end(bdrt_gpu *g, double *ms) {
    if (g->t1) clReleaseEvent(g->t1);
    g->t1 = NULL;
    /* the other queues' commands must be submitted for queue 0's waits on them to end */
    for (int i = 1; i < g->n_streams; i++) clFlush(g->queues[i]);
    if (clEnqueueMarkerWithWaitList(g->queue, 0, NULL, &g->t1) != CL_SUCCESS || clFinish(g->queue) != CL_SUCCESS) return -1;
    cl_ulong a = 0, b = 0;
    if (clGetEventProfilingInfo(g->t0, CL_PROFILING_COMMAND_END, sizeof a, &a, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(g->t1, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) != CL_SUCCESS)
        *ms = -1;
    else
        *ms = (double)(b - a) * 1e-6;
    return 0;
}

static inline int bdrt_gpu_finish(bdrt_gpu *g) { return clFinish(g->queue) == CL_SUCCESS ? 0 : -1; }

static inline const char *bdrt_gpu_name(const bdrt_gpu *g) { return g->name; }

/* OpenCL 1.2 has no graphs: the caller launches directly. */
static inline int bdrt_gpu_graph_capture(bdrt_gpu *g, int (*fn)(void *), void *ctx) {
    (void)g, (void)fn, (void)ctx;
    return -1;
}

static inline int bdrt_gpu_graph_launch(bdrt_gpu *g) {
    (void)g;
    return -1;
}

#endif
