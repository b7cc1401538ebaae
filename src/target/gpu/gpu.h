/* gpu.h — the GPU targets (CUDA, HIP, OpenCL C): one printer, three dialects as tables.
 *
 * The printer (emit.c) turns the planned nest program into device code and a C host program:
 *   - every nest with blocks becomes a device function b<i>(arena, weights, io, block, smem)
 *     whose thread block computes block `block` of the nest, each thread taking elements of the
 *     block in turn, or (float matrix products, convolutions) a register column of a tile staged
 *     in shared memory `smem` (the SIMT body of its kind: bodies.c);
 *   - `--schedule op`: kernel k<i> runs b<i> over a grid of the nest's blocks, launched in the
 *     schedule's order (one kernel per fused group), independent branches on parallel streams
 *     joined by events, the sequence captured once as a CUDA/HIP graph;
 *   - `--schedule block`: one persistent kernel runs the block DAG (schedule/schedule.c): every
 *     CTA walks its own list of tasks, waits on its producers' counters, runs the block, then
 *     signals (see docs/architecture.md, "The GPU targets");
 *   - the host program (create/run/destroy behind the runtime's bdrt_main) uploads the weights
 *     once, keeps the arena in device memory, copies inputs in and outputs out, and calls the
 *     device only through runtime/bdrt_gpu.h.
 * What differs between CUDA, HIP and OpenCL C is a bd_gpu_dialect: the macros of its prelude
 * (qualifiers, block and thread indices, barriers, atomics with their scopes, sleep, bit casts,
 * types and math names), its warp width, its block size, and whether the device code is compiled
 * with the host (CUDA, HIP: one .cu/.hip file) or embedded as source and built at create()
 * (OpenCL). Expressions are printed through the C dialect table (target/c_dialect.c). */
#ifndef BD_TARGET_GPU_H
#define BD_TARGET_GPU_H

#include "nest/loopnest.h"
#include "target/target.h"

typedef struct bd_gpu_dialect {
    const char *name;              /* "cuda", "hip", "opencl" */
    const char *const *prelude;    /* device-side macro lines, NULL-terminated */
    const char *fn;                /* qualifiers of a device helper function */
    int warp;                      /* warp / wavefront width */
    int threads;                   /* threads per block */
    bool embedded_source;          /* OpenCL: device code is a string built at create() */
    const char *host_header;       /* the runtime header implementing bdrt_gpu.h */
    bool cplusplus;                /* the file is compiled as C++ (nvcc, hipcc) */
    const char *link_note;         /* --lib: what a program links besides the archive */
    bool keeps_calls;              /* BD_NOINLINE keeps a call (nvcc; hipcc 5.2 for gfx90a and
                                      PoCL inline every function into the kernel), so repeated
                                      layers can share one device body */
} bd_gpu_dialect;

extern const bd_gpu_dialect bd_gpu_cuda, bd_gpu_hip, bd_gpu_opencl;
extern const bd_target bd_target_cuda, bd_target_hip, bd_target_opencl;

/* tile.c: the GPU tile pass (blocks sized for a thread block, whole dims kept). A float matrix
 * product's block is a T x T tile of its output (T from bd_gpu_mm_tile), which its threads
 * compute from K slices of BD_GPU_MM_KSLICE staged in shared memory (bodies.c). */
enum { BD_GPU_MM_TILE = 32, BD_GPU_MM_KSLICE = 32 };
/* Blocks that fill the device: two per SM of a 132-SM device. A nest with fewer is "small" (the
 * tiled bodies halve their tile; --branches fuse may share its kernel with siblings). */
enum { BD_GPU_FILL_BLOCKS = 264 };
/* Streams the op schedule spreads independent branches over (the runtime's BDRT_GPU_MAX_STREAMS). */
enum { BD_GPU_MAX_STREAMS = 4 };
bd_status bd_gpu_tile(bd_program *p, bd_diag *d);
bool bd_gpu_matmul_tiled(const bd_graph *g, const bd_nest *n);
/* A float, ungrouped 1-D or 2-D convolution runs as an implicit GEMM the same way: a block is
 * T output channels by up to T output positions, K the input channels times the taps. */
bool bd_gpu_conv_tiled(const bd_graph *g, const bd_nest *n);
/* T of a tiled nest: BD_GPU_MM_TILE, or half that where tiles of BD_GPU_MM_TILE would give fewer
 * than BD_GPU_FILL_BLOCKS blocks (a CNN's late layers at batch 1: ResNet-18's 7x7x512
 * convolutions are 32 blocks of 32 x 32), trading reuse in shared memory for SMs in use. */
int bd_gpu_mm_tile(const bd_graph *g, const bd_nest *n);
/* An ATTENTION nest (fuse/attention.c): bands of up to BD_GPU_ATTENTION_ROWS rows, a thread a
 * row, its scores in a private array of at most BD_GPU_ATTENTION_COLS (longer rows: false, the
 * nests stay). */
enum { BD_GPU_ATTENTION_ROWS = 64, BD_GPU_ATTENTION_COLS = 1024 };
bool bd_gpu_tile_attention(const bd_graph *g, bd_nest *n, int threads);

/* emit.c: the printer every GPU target's table names. */
bd_status bd_emit_gpu(const bd_program *p, const bd_schedule *s, const bd_memory_plan *m,
                      const bd_emit_opts *o, bd_c_program *out, bd_diag *d);

/* bodies.c: the SIMT body of nest n (the statements inside b<i>, after lo/hi are decoded), or
 * BD_ERR_UNSUPPORTED naming the node when its kind has no GPU body yet. */
typedef struct bd_gpu_printer {
    bd_printer pr;
    const bd_program *prog;
    bd_graph *graph;
    const bd_storage *storage;
    const int64_t *in_off, *out_off; /* per graph input / output: its byte offset in the io buffer */
    bd_blob *blob;            /* the weights blob, tables appended (64-aligned) */
    int64_t scratch_at;       /* device scratch (LSTM state) goes after the plan's arena: the next
                                 free arena offset, advanced by each body that takes some */
    int threads;              /* threads per block (the dialect's) */
    int64_t smem_floats;      /* shared memory the bodies stage tiles in (`smem`), the most any takes */
    bd_precision precision;   /* what float32 tile operands are rounded to as they are staged */
} bd_gpu_printer;
bd_status bd_gpu_body(bd_gpu_printer *g, const bd_nest *n, bd_diag *d);
/* Per-block work estimate of nest n (multiply-adds or elements moved), for the CTA assignment. */
double bd_gpu_block_cost(const bd_graph *g, const bd_nest *n);

#endif
