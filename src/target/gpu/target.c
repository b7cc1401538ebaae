/* target.c (gpu) — the three GPU dialects and their target tables. A dialect is its prelude: the
 * macros every line of printed device code is written against. So the printer (emit.c, bodies.c)
 * prints one text for all three, and a fourth dialect would be one more table.
 *
 *   BD_KERNEL / BD_DEV   a kernel entry point / a device function (BD_NOINLINE: kept a call)
 *   BD_G                 the global address space qualifier (OpenCL's __global; empty in CUDA)
 *   BD_SHARED, BD_LOCAL  block-shared (local) memory: a variable's, a pointer's qualifier
 *   BD_BLOCK_ID, BD_THREAD_ID, BD_THREADS   indices and the block size (1-D launches)
 *   BD_BARRIER()         the block-wide barrier, ordering global memory too
 *   BD_LOAD_ACQUIRE(p), BD_STORE_RELEASE(p, v), BD_ADD_RELEASE(p, v)
 *                        32-bit atomics at device (agent) scope, for the persistent kernel
 *   BD_SLEEP()           back-off while spinning (nanosleep on sm_70+, s_sleep on AMD)
 *   BD_LOAD4(p)          four floats from 16-byte aligned shared memory, as a float4 */
#include "target/gpu/gpu.h"

static const char *const cuda_prelude[] = {
    "#define BD_KERNEL extern \"C\" __global__ __launch_bounds__(BD_BLOCK_THREADS)",
    "#define BD_DEV static __device__",
    "#define BD_NOINLINE __noinline__",
    "#define BD_G",
    "#define BD_SHARED __shared__",
    "#define BD_LOCAL",
    "#define BD_BLOCK_ID ((int64_t)blockIdx.x)",
    "#define BD_THREAD_ID ((int64_t)threadIdx.x)",
    "#define BD_THREADS ((int64_t)blockDim.x)",
    "#define BD_BARRIER() __syncthreads()",
    "static __device__ __forceinline__ __attribute__((unused)) uint32_t bd_load_acquire(const uint32_t *p) {",
    "    uint32_t v; asm volatile(\"ld.acquire.gpu.u32 %0, [%1];\" : \"=r\"(v) : \"l\"(p) : \"memory\"); return v; }",
    "static __device__ __forceinline__ __attribute__((unused)) void bd_store_release(uint32_t *p, uint32_t v) {",
    "    asm volatile(\"st.release.gpu.u32 [%0], %1;\" :: \"l\"(p), \"r\"(v) : \"memory\"); }",
    "static __device__ __forceinline__ __attribute__((unused)) void bd_add_release(uint32_t *p, uint32_t v) {",
    "    asm volatile(\"red.release.gpu.add.u32 [%0], %1;\" :: \"l\"(p), \"r\"(v) : \"memory\"); }",
    "#define BD_LOAD_ACQUIRE(p) bd_load_acquire(p)",
    "#define BD_STORE_RELEASE(p, v) bd_store_release(p, v)",
    "#define BD_ADD_RELEASE(p, v) bd_add_release(p, v)",
    "#define BD_SLEEP() __nanosleep(64)",
    "#define BD_LOAD4(p) (*(const float4 *)(p))",
    "static __device__ __forceinline__ __attribute__((unused)) float bd_u2f(uint32_t u) { return __uint_as_float(u); }",
    "static __device__ __forceinline__ __attribute__((unused)) uint32_t bd_f2u(float f) { return __float_as_uint(f); }",
    "static __device__ __forceinline__ __attribute__((unused)) uint64_t bd_d2u(double d) { return (uint64_t)__double_as_longlong(d); }",
    NULL};

static const char *const hip_prelude[] = {
    "#define BD_KERNEL extern \"C\" __global__ __launch_bounds__(BD_BLOCK_THREADS)",
    "#define BD_DEV static __device__",
    "#define BD_NOINLINE __noinline__",
    "#define BD_G",
    "#define BD_SHARED __shared__",
    "#define BD_LOCAL",
    "#define BD_BLOCK_ID ((int64_t)blockIdx.x)",
    "#define BD_THREAD_ID ((int64_t)threadIdx.x)",
    "#define BD_THREADS ((int64_t)blockDim.x)",
    "#define BD_BARRIER() __syncthreads()",
    "#define BD_LOAD_ACQUIRE(p) __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT)",
    "#define BD_STORE_RELEASE(p, v) __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT)",
    "#define BD_ADD_RELEASE(p, v) __hip_atomic_fetch_add(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT)",
    "#define BD_SLEEP() __builtin_amdgcn_s_sleep(1)",
    "#define BD_LOAD4(p) (*(const float4 *)(p))",
    "static __device__ __forceinline__ __attribute__((unused)) float bd_u2f(uint32_t u) { return __uint_as_float(u); }",
    "static __device__ __forceinline__ __attribute__((unused)) uint32_t bd_f2u(float f) { return __float_as_uint(f); }",
    "static __device__ __forceinline__ __attribute__((unused)) uint64_t bd_d2u(double d) { return (uint64_t)__double_as_longlong(d); }",
    NULL};

/* OpenCL C 1.2: C99 without <stdint.h>, with overloaded math under the unsuffixed names, and
 * atomics that are full barriers (a read is an atomic_or of 0). */
static const char *const opencl_prelude[] = {
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
    "typedef char int8_t; typedef uchar uint8_t; typedef short int16_t; typedef ushort uint16_t;",
    "typedef int int32_t; typedef uint uint32_t; typedef long int64_t; typedef ulong uint64_t;",
    "#define INT8_MIN (-128)",
    "#define INT16_MIN (-32768)",
    "#define INT32_MIN (-2147483647 - 1)",
    "#define INT64_MIN (-9223372036854775807L - 1)",
    "#define BD_KERNEL __kernel __attribute__((reqd_work_group_size(BD_BLOCK_THREADS, 1, 1)))",
    "#define BD_DEV static",
    "#define BD_NOINLINE /* PoCL inlines every function into the kernel (its barriers must be) */",
    "#define BD_G __global",
    "#define BD_SHARED __local",
    "#define BD_LOCAL __local",
    "#define BD_BLOCK_ID ((int64_t)get_group_id(0))",
    "#define BD_THREAD_ID ((int64_t)get_local_id(0))",
    "#define BD_THREADS ((int64_t)get_local_size(0))",
    "#define BD_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
    "#define BD_LOAD_ACQUIRE(p) (atomic_or((volatile __global uint *)(p), 0u))",
    "#define BD_STORE_RELEASE(p, v) (mem_fence(CLK_GLOBAL_MEM_FENCE), atomic_xchg((volatile __global uint *)(p), (v)))",
    "#define BD_ADD_RELEASE(p, v) (mem_fence(CLK_GLOBAL_MEM_FENCE), atomic_add((volatile __global uint *)(p), (v)))",
    "#define BD_SLEEP() ((void)0)",
    "#define BD_LOAD4(p) vload4(0, p)",
    "static inline float bd_u2f(uint32_t u) { return as_float(u); }",
    "static inline uint32_t bd_f2u(float f) { return as_uint(f); }",
    "static inline uint64_t bd_d2u(double d) { return as_ulong(d); }",
    "#define expf exp",
    "#define logf log",
    "#define sqrtf sqrt",
    "#define fabsf fabs",
    "#define sinf sin",
    "#define cosf cos",
    "#define tanf tan",
    "#define asinf asin",
    "#define acosf acos",
    "#define atanf atan",
    "#define sinhf sinh",
    "#define coshf cosh",
    "#define tanhf tanh",
    "#define asinhf asinh",
    "#define acoshf acosh",
    "#define atanhf atanh",
    "#define ceilf ceil",
    "#define floorf floor",
    "#define nearbyintf rint",
    "#define nearbyint rint",
    "#define powf pow",
    "#define fmodf fmod",
    "#define log1pf log1p",
    "#define expm1f expm1",
    "#define fmaxf fmax",
    "#define fminf fmin",
    "#define erff erf",
    NULL};

const bd_gpu_dialect bd_gpu_cuda = {
    .name = "cuda", .prelude = cuda_prelude, .fn = "static __device__ inline __attribute__((unused))", .warp = 32,
    .threads = 128, .host_header = "bdrt_gpu_cuda.h", .cplusplus = true,
    .link_note = "the CUDA runtime (-lcudart_static -ldl -lrt, or link with nvcc), -lstdc++ -lpthread -lm",
    .keeps_calls = true};
const bd_gpu_dialect bd_gpu_hip = {
    .name = "hip", .prelude = hip_prelude, .fn = "static __device__ inline __attribute__((unused))", .warp = 64,
    .threads = 128, .host_header = "bdrt_gpu_cuda.h", .cplusplus = true,
    .link_note = "-lamdhip64 (or link with hipcc), -lstdc++ -lpthread -lm"};
const bd_gpu_dialect bd_gpu_opencl = {
    .name = "opencl", .prelude = opencl_prelude, .fn = "static inline", .warp = 32, .threads = 64,
    .embedded_source = true, .host_header = "bdrt_gpu_opencl.h", .link_note = "-lOpenCL -lpthread -lm"};

/* nvcc: -Xcompiler passes the host compiler's own flags; the CUDA runtime is linked statically
 * (nvcc's default), so the executable needs the driver only. */
static const char *const cuda_flags[] = {"-O3", "-std=c++17", "-Xcompiler=-fwrapv", NULL};
static const char *const hip_flags[] = {"-O3", "-std=c++17", "-fwrapv", NULL};
static const char *const opencl_flags[] = {"-std=c11", "-O2", NULL};
static const char *const cuda_libs[] = {"-lpthread", "-lm", NULL};
static const char *const opencl_libs[] = {"-lOpenCL", "-lpthread", "-lm", NULL};

const bd_target bd_target_cuda = {
    .name = "cuda",
    .summary = "CUDA C++ for NVIDIA GPUs, built with nvcc (--arch sm_XX, default sm_90)",
    .dialect = &bd_c_dialect,
    .tile = bd_gpu_tile,
    .tile_attention = bd_gpu_tile_attention,
    .emit = bd_emit_gpu,
    .cflags = cuda_flags,
    .build = {.source_name = "model.cu", .compiler = "nvcc", .hint = "install the CUDA toolkit (nvcc on PATH)",
              .arch_flag = "-arch=%s", .default_arch = "sm_90", .werror = "-Werror=all-warnings",
              .link_with_compiler = true, .libs = cuda_libs},
    .gpu = &bd_gpu_cuda,
};

const bd_target bd_target_hip = {
    .name = "hip",
    .summary = "HIP for AMD GPUs, built with hipcc (--arch gfxNNN, default gfx90a)",
    .dialect = &bd_c_dialect,
    .tile = bd_gpu_tile,
    .tile_attention = bd_gpu_tile_attention,
    .emit = bd_emit_gpu,
    .cflags = hip_flags,
    .build = {.source_name = "model.hip", .compiler = "hipcc", .hint = "install hipcc",
              .arch_flag = "--offload-arch=%s", .default_arch = "gfx90a", .werror = "-Werror",
              .link_with_compiler = true, .libs = cuda_libs},
    .gpu = &bd_gpu_hip,
};

const bd_target bd_target_opencl = {
    .name = "opencl",
    .summary = "OpenCL C 1.2 embedded as source and built on the device at start-up (any OpenCL driver)",
    .dialect = &bd_c_dialect,
    .tile = bd_gpu_tile,
    .tile_attention = bd_gpu_tile_attention,
    .emit = bd_emit_gpu,
    .cflags = opencl_flags,
    .build = {.source_name = "model.c", .hint = "set CC or install gcc", .werror = "-Werror",
              .libs = opencl_libs},
    .gpu = &bd_gpu_opencl,
};
