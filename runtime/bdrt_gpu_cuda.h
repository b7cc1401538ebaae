/* bdrt_gpu_cuda.h — bdrt_gpu.h's device functions over the CUDA runtime, and over HIP's through
 * a table of spellings (one source: HIP mirrors the CUDA runtime API name for name, so the
 * differences are the few macros below). Static functions for the one generated file that
 * includes it; nvcc links the CUDA runtime statically, so the executable needs only the driver. */
#ifndef BDRT_GPU_CUDA_H
#define BDRT_GPU_CUDA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdrt.h"
#include "bdrt_gpu.h"

#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#define BDG(name) hip##name
#define BDG_PROP hipDeviceProp_t
#define BDG_ATTR_SMS hipDeviceAttributeMultiprocessorCount
#define BDG_ATTR_COOP hipDeviceAttributeCooperativeLaunch
#define BDG_API "HIP"
#else
#include <cuda_runtime.h>
#define BDG(name) cuda##name
#define BDG_PROP struct cudaDeviceProp
#define BDG_ATTR_SMS cudaDevAttrMultiProcessorCount
#define BDG_ATTR_COOP cudaDevAttrCooperativeLaunch
#define BDG_API "CUDA"
#endif

typedef void *bdrt_gpu_buf;

typedef struct bdrt_gpu {
    int device, sms, coop;
    const void *const *fns;
    int n_kernels;
    BDG(Stream_t) stream; /* stream 0: copies, timing, the persistent kernel */
    int n_streams;        /* streams[1 .. n_streams) beside it (--schedule op branches) */
    BDG(Stream_t) streams[BDRT_GPU_MAX_STREAMS];
    int n_events;
    BDG(Event_t) *events;
    BDG(Event_t) t0, t1;
    BDG(GraphExec_t) graph; /* the captured launch sequence (--schedule op), NULL: none */
    char name[256];
} bdrt_gpu;

static inline void bdrt_gpu_close(bdrt_gpu *g) {
    if (!g) return;
    if (g->t0) (void)BDG(EventDestroy)(g->t0);
    if (g->t1) (void)BDG(EventDestroy)(g->t1);
    if (g->graph) (void)BDG(GraphExecDestroy)(g->graph);
    for (int i = 1; i < g->n_streams; i++) (void)BDG(StreamDestroy)(g->streams[i]);
    for (int i = 0; i < g->n_events; i++) (void)BDG(EventDestroy)(g->events[i]);
    free(g->events);
    if (g->stream) (void)BDG(StreamDestroy)(g->stream);
    free(g);
}

/* arch: "sm_90" (CUDA) or "gfx90a" (HIP), what the device code was compiled for. */
static bdrt_gpu *bdrt_gpu_open(int device, const char *source, const char *arch,
                               const char *const *kernel_names, const void *const *kernel_fns,
                               int n_kernels) {
    (void)source;
    (void)kernel_names;
    int count = 0;
    BDG(Error_t) e = BDG(GetDeviceCount)(&count);
    if (e != BDG(Success) || count == 0) {
        bdrt_errorf("no " BDG_API " device (%s)", e != BDG(Success) ? BDG(GetErrorString)(e) : "none found");
        return NULL;
    }
    if (device < 0 || device >= count) {
        bdrt_errorf("no " BDG_API " device %d: there %s %d", device, count == 1 ? "is" : "are", count);
        return NULL;
    }
    bdrt_gpu *g = (bdrt_gpu *)calloc(1, sizeof *g);
    if (!g) return NULL;
    g->device = device;
    g->n_streams = 1;
    g->fns = kernel_fns;
    g->n_kernels = n_kernels;
    BDG_PROP prop;
    if (BDG(SetDevice)(device) != BDG(Success) || BDG(GetDeviceProperties)(&prop, device) != BDG(Success)) {
        bdrt_errorf(BDG_API " device %d cannot be used", device);
        free(g);
        return NULL;
    }
    snprintf(g->name, sizeof g->name, "%s", prop.name);
#ifdef __HIPCC__
    if (strncmp(prop.gcnArchName, arch, strlen(arch)) != 0) {
        bdrt_errorf("the model was compiled for %s, but device %d ('%s') is %s: compile with --arch %.20s",
                    arch, device, g->name, prop.gcnArchName, prop.gcnArchName);
        free(g);
        return NULL;
    }
#else
    int want = atoi(arch + 3); /* sm_90 -> 90 */
    if (prop.major * 10 + prop.minor < want) {
        bdrt_errorf("the model was compiled for %s, but device %d ('%s') is sm_%d%d: compile with --arch sm_%d%d",
                    arch, device, g->name, prop.major, prop.minor, prop.major, prop.minor);
        free(g);
        return NULL;
    }
#endif
    (void)BDG(DeviceGetAttribute)(&g->sms, BDG_ATTR_SMS, device);
    (void)BDG(DeviceGetAttribute)(&g->coop, BDG_ATTR_COOP, device);
    if (BDG(StreamCreate)(&g->stream) != BDG(Success) || (g->streams[0] = g->stream, 0) || BDG(EventCreate)(&g->t0) != BDG(Success) ||
        BDG(EventCreate)(&g->t1) != BDG(Success)) {
        bdrt_errorf(BDG_API " device %d: cannot create a stream", device);
        bdrt_gpu_close(g);
        return NULL;
    }
    return g;
}

static inline bdrt_gpu_buf bdrt_gpu_alloc(bdrt_gpu *g, size_t bytes) {
    void *p = NULL;
    BDG(Error_t) e = BDG(Malloc)(&p, bytes ? bytes : 64);
    if (e != BDG(Success)) {
        bdrt_errorf("out of device memory for %zu bytes on '%s' (%s)", bytes, g->name, BDG(GetErrorString)(e));
        return NULL;
    }
    return p;
}

static inline void bdrt_gpu_free(bdrt_gpu *g, bdrt_gpu_buf b) {
    (void)g;
    if (b) (void)BDG(Free)(b);
}

static inline int bdrt_gpu_write(bdrt_gpu *g, bdrt_gpu_buf dst, size_t off, const void *src, size_t bytes) {
    if (!bytes) return 0;
    return BDG(MemcpyAsync)((char *)dst + off, src, bytes, BDG(MemcpyHostToDevice), g->stream) == BDG(Success) &&
                   BDG(StreamSynchronize)(g->stream) == BDG(Success) ? 0 : -1;
}

static inline int bdrt_gpu_read(bdrt_gpu *g, void *dst, bdrt_gpu_buf src, size_t off, size_t bytes) {
    if (!bytes) return 0;
    return BDG(MemcpyAsync)(dst, (const char *)src + off, bytes, BDG(MemcpyDeviceToHost), g->stream) == BDG(Success) &&
                   BDG(StreamSynchronize)(g->stream) == BDG(Success) ? 0 : -1;
}

static inline int bdrt_gpu_zero(bdrt_gpu *g, bdrt_gpu_buf dst, size_t bytes) {
    return BDG(MemsetAsync)(dst, 0, bytes, g->stream) == BDG(Success) ? 0 : -1;
}

static inline int bdrt_gpu_resident(bdrt_gpu *g, int k, int threads) {
    int per_sm = 0;
    if (BDG(OccupancyMaxActiveBlocksPerMultiprocessor)(&per_sm, g->fns[k], threads, 0) != BDG(Success)) return 0;
    return per_sm * g->sms;
}

/* n streams in all (stream 0 included) and n events for bdrt_gpu_record / bdrt_gpu_wait. */
static inline int bdrt_gpu_streams(bdrt_gpu *g, int n, int n_events) {
    if (n > BDRT_GPU_MAX_STREAMS) n = BDRT_GPU_MAX_STREAMS;
    for (; g->n_streams < n; g->n_streams++)
        if (BDG(StreamCreateWithFlags)(&g->streams[g->n_streams], BDG(StreamNonBlocking)) != BDG(Success)) return -1;
    g->events = (BDG(Event_t) *)calloc((size_t)n_events + 1, sizeof *g->events);
    if (!g->events) return -1;
    for (; g->n_events < n_events; g->n_events++)
        if (BDG(EventCreateWithFlags)(&g->events[g->n_events], BDG(EventDisableTiming)) != BDG(Success)) return -1;
    return 0;
}

/* Event ev marks what stream q has been given so far; stream q waits for event ev. */
static inline int bdrt_gpu_record(bdrt_gpu *g, int q, int ev) {
    return BDG(EventRecord)(g->events[ev], g->streams[q % g->n_streams]) == BDG(Success) ? 0 : -1;
}

static inline int bdrt_gpu_wait(bdrt_gpu *g, int q, int ev) {
    return BDG(StreamWaitEvent)(g->streams[q % g->n_streams], g->events[ev], 0) == BDG(Success) ? 0 : -1;
}

static inline int bdrt_gpu_launch(bdrt_gpu *g, int q, int k, int64_t blocks, int threads, int cooperative,
                           int n_bufs, const bdrt_gpu_buf *bufs, uint32_t epoch) {
    void *args[8];
    bdrt_gpu_buf copy[8];
    for (int i = 0; i < n_bufs && i < 7; i++) {
        copy[i] = bufs[i];
        args[i] = &copy[i];
    }
    args[n_bufs] = &epoch;
    dim3 grid((unsigned)blocks), block((unsigned)threads);
    BDG(Error_t) e;
    if (cooperative) {
        if (!g->coop || blocks > bdrt_gpu_resident(g, k, threads)) {
            bdrt_errorf("persistent kernel: %lld blocks cannot all be resident on '%s'", (long long)blocks, g->name);
            return -1;
        }
        e = BDG(LaunchCooperativeKernel)(g->fns[k], grid, block, args, 0, g->streams[q % g->n_streams]);
    } else {
        e = BDG(LaunchKernel)(g->fns[k], grid, block, args, 0, g->streams[q % g->n_streams]);
    }
    if (e != BDG(Success)) {
        bdrt_errorf(BDG_API ": launching kernel %d failed: %s", k, BDG(GetErrorString)(e));
        return -1;
    }
    return 0;
}

static inline int bdrt_gpu_time_begin(bdrt_gpu *g) {
    return BDG(EventRecord)(g->t0, g->stream) == BDG(Success) ? 0 : -1;
}

static inline int bdrt_gpu_time_end(bdrt_gpu *g, double *ms) {
    float f = 0;
    if (BDG(EventRecord)(g->t1, g->stream) != BDG(Success) || BDG(EventSynchronize)(g->t1) != BDG(Success))
        return -1;
    BDG(Error_t) e = BDG(StreamSynchronize)(g->stream);
    if (e != BDG(Success)) {
        bdrt_errorf(BDG_API ": the model's kernels failed: %s", BDG(GetErrorString)(e));
        return -1;
    }
    *ms = BDG(EventElapsedTime)(&f, g->t0, g->t1) == BDG(Success) ? (double)f : -1;
    return 0;
}

static inline int bdrt_gpu_finish(bdrt_gpu *g) {
    return BDG(StreamSynchronize)(g->stream) == BDG(Success) ? 0 : -1;
}

static inline const char *bdrt_gpu_name(const bdrt_gpu *g) { return g->name; }

/* Captures the launches fn makes on the stream as a graph (CUDA graph, hipGraph), replayed by
 * bdrt_gpu_graph_launch; -1 when capture fails (the caller launches directly instead). */
static inline int bdrt_gpu_graph_capture(bdrt_gpu *g, int (*fn)(void *), void *ctx) {
    BDG(Graph_t) graph = NULL;
    if (BDG(StreamBeginCapture)(g->stream, BDG(StreamCaptureModeThreadLocal)) != BDG(Success)) return -1;
    int rc = fn(ctx);
    if (BDG(StreamEndCapture)(g->stream, &graph) != BDG(Success) || rc) {
        if (graph) (void)BDG(GraphDestroy)(graph);
        (void)BDG(GetLastError)();
        return -1;
    }
#ifdef __HIPCC__
    BDG(Error_t) e = BDG(GraphInstantiate)(&g->graph, graph, NULL, NULL, 0);
#else
    BDG(Error_t) e = BDG(GraphInstantiate)(&g->graph, graph, 0);
#endif
    (void)BDG(GraphDestroy)(graph);
    if (e != BDG(Success)) {
        g->graph = NULL;
        return -1;
    }
    return 0;
}

static inline int bdrt_gpu_graph_launch(bdrt_gpu *g) {
    return BDG(GraphLaunch)(g->graph, g->stream) == BDG(Success) ? 0 : -1;
}

#endif
