/* bdrt.h — the runtime linked into every executable bdc generates.
 *
 * The compiler emits one C file per model that defines a `bdrt_model` descriptor (input and
 * output names, dtypes, static shapes, and create/run/destroy functions) and whose main() is
 * `return bdrt_main(argc, argv, &model);`. Everything else an executable does lives here:
 * the command line, reading and validating input tensors (.npy, ONNX TensorProto .pb), writing
 * outputs (.npy, all-or-nothing), benchmarking, and the CPU thread pool the generated code runs
 * its blocks on. The runtime is plain C11 + POSIX with no dependency beyond libc, libm and
 * pthreads, so that a generated executable builds anywhere a C compiler does.
 *
 * Contract with generated code:
 * - `create(threads)` builds an instance (weights, arena, thread pool); threads <= 0 means "all
 *   CPUs this process may run on". It returns NULL only on resource failure (exit 4).
 * - `run(inst, inputs, outputs)`: inputs[i] points to the bytes of input i in the dtype and
 *   shape of `inputs[i]` of the descriptor (C order, native byte order, bool as 0/1 bytes,
 *   64-byte aligned); outputs[i] points to a 64-byte aligned buffer of exactly the output's byte
 *   size, owned by the runtime, which run fills. run returns 0 on success, BDRT_EXIT_INPUT (6)
 *   when the data itself is invalid (e.g. a Gather index out of range; print the reason with
 *   bdrt_errorf first), anything else on a resource or device failure (exit 4). run may be
 *   called many times on one instance (benchmarking) and must not keep pointers to the buffers.
 * - Names in the descriptor are arbitrary NUL-terminated byte strings; the runtime escapes them
 *   wherever it prints them and sanitises them for file names. */
#ifndef BDRT_H
#define BDRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BDRT_VERSION  "0.1.0"
#define BDRT_MAX_RANK 12

/* Exit codes of a generated executable. */
enum {
    BDRT_EXIT_OK = 0,
    BDRT_EXIT_USAGE = 1, /* bad command line */
    BDRT_EXIT_IO = 4,    /* output folder or file not writable, write failure, out of memory */
    BDRT_EXIT_INPUT = 6  /* bad runtime input: file, dtype, shape, byte count, or data */
};

/* ONNX TensorProto.DataType codes the runtime can read and write. */
enum {
    BDRT_FLOAT32 = 1,
    BDRT_UINT8 = 2,
    BDRT_INT8 = 3,
    BDRT_UINT16 = 4,
    BDRT_INT16 = 5,
    BDRT_INT32 = 6,
    BDRT_INT64 = 7,
    BDRT_BOOL = 9,
    BDRT_FLOAT16 = 10,
    BDRT_FLOAT64 = 11,
    BDRT_UINT32 = 12,
    BDRT_UINT64 = 13
};

typedef struct bdrt_io {
    const char *name; /* the ONNX tensor name: arbitrary bytes, may contain anything */
    int dtype;        /* ONNX TensorProto.DataType code (see the enum above) */
    int rank;         /* 0..BDRT_MAX_RANK; 0 is a scalar */
    int64_t dims[BDRT_MAX_RANK];
    /* > 0: dim 0 is the model's batch, any extent in [batch_min, dims[0]] (bdc compile
     * --dim SYMBOL=LO..HI); the buffers hold dims[0] items, the first `batch` of them used */
    int64_t batch_min;
} bdrt_io;

typedef struct bdrt_model {
    const char *name; /* model name for messages */
    int n_inputs, n_outputs;
    const bdrt_io *inputs, *outputs;
    void *(*create)(int threads); /* NULL on failure (out of memory) */
    int (*run)(void *inst, const void *const *inputs, void *const *outputs); /* 0 ok */
    void (*destroy)(void *inst);
    /* For --profile: the block functions of the nests and their names (may be 0 / NULL). */
    int n_nests;
    const char *const *nest_names;
    void (*const *nest_fns)(void *ctx, int64_t block, int thread);
    /* GPU models: the API ("cuda", "hip", "opencl"), the device time of the last run in ms
     * (device events; --benchmark reports it), and the device's name. NULL on the CPU. */
    const char *device_api;
    double (*device_ms)(void *inst);
    const char *(*device_name)(void *inst);
    /* Models with a ranged batch (an input with batch_min > 0): the batch of the next runs,
     * within the range; NULL otherwise. */
    void (*set_batch)(void *inst, int64_t batch);
    /* Executables: the bytes of constants bdc appended to the file (bdrt_weights_map); -1 when
     * they are linked into the program instead (--lib). */
    int64_t weights_bytes;
    /* GPU models, for --profile: n_nests and nest_names are then the kernels and what each runs;
     * this launches every kernel alone on the inputs of the last run, filling each one's device
     * time in ms (0, or an exit code). NULL on the CPU. */
    int (*device_profile)(void *inst, double *kernel_ms);
} bdrt_model;

/* ---- the model's constants (bdrt_weights.c) ----
 * bdc appends the weights to the executable it links rather than linking them in: a linker or an
 * assembler copying 650 MB of them took most of a transformer's compile time. The file is the
 * program, zeros up to a multiple of BDRT_WEIGHTS_ALIGN, the weights, then a 32-byte trailer:
 * the 8 bytes BDRT_WEIGHTS_MAGIC, the weights' offset and byte count (little-endian uint64), and
 * their sum. bdrt_weights_map(bytes) maps them read-only from /proc/self/exe into bdrt_weights
 * (shared page cache: no copy, read as the code touches them), checking the trailer against the
 * file's size and `bytes` (the count the code was printed for); 0, or -1 with the reason in err.
 * A tool that rewrites the file (strip) drops them: the executable then says so and exits 4.
 * bdrt_main calls it before create(); a program that is its own loader may call it too. */
#define BDRT_WEIGHTS_MAGIC "bdcwts01"
#define BDRT_WEIGHTS_ALIGN 65536
extern const unsigned char *bdrt_weights;
int bdrt_weights_map(int64_t bytes, char *err, size_t err_len);

/* The device chosen by --device N (GPU models; 0 by default). */
extern int bdrt_device_index;

/* The whole executable: parses argv, reads and validates the inputs, runs the model, writes or
 * prints the outputs, benchmarks. Returns the process exit code (BDRT_EXIT_*). */
int bdrt_main(int argc, char **argv, const bdrt_model *m);

/* Prints "PROG: error: MESSAGE\n" on stderr as one line (for generated code's run()). */
void bdrt_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- thread pool (bdrt_pool.c) ----
 * bdrt_pool_run runs fn(ctx, block, thread) for every block in [0, n_blocks) on the pool's
 * threads (the calling thread participates as thread 0; workers are 1..threads-1) and returns
 * when all are done, with every effect of fn visible to the caller. Blocks are handed out
 * dynamically from one atomic counter, in guided chunks (remaining / (2 * threads), at least
 * n_blocks / (32 * threads), at least 1), so uneven blocks balance and thousands of tiny blocks
 * cost few atomic operations. The call returns once every block has run; workers that had not
 * picked the job up by then are not waited for (they skip it).
 * n_blocks == 1 (or a 1-thread pool) runs inline without waking anyone. Idle workers spin for a
 * while (BDRT_SPIN_US microseconds, default 1000, from the environment) and then sleep on a
 * futex (a condition variable off Linux). A call made from inside a task of the same pool runs
 * its blocks inline on the calling thread with that thread's index; calls from several outside
 * threads are serialised. threads <= 0 means the number of CPUs in the process's affinity mask;
 * at most BDRT_POOL_MAX_THREADS. bdrt_pool_create returns NULL on failure. */
#define BDRT_POOL_MAX_THREADS 1024
typedef struct bdrt_pool bdrt_pool;
bdrt_pool *bdrt_pool_create(int threads);
void bdrt_pool_destroy(bdrt_pool *p);
int bdrt_pool_threads(const bdrt_pool *p);
typedef void (*bdrt_task_fn)(void *ctx, int64_t block, int thread);
void bdrt_pool_run(bdrt_pool *p, int64_t n_blocks, bdrt_task_fn fn, void *ctx);

/* ---- help inside a block (bdrt_pool.c) ----
 * A block whose work is a chain of steps too short to be blocks of their own (an LSTM's
 * recurrence: one small matrix product per step) can share each step with the pool's idle
 * threads. bdrt_help runs fn(ctx, i, thread) for every i in [0, n) and returns when all have run,
 * every effect visible to the caller: the caller takes i = 0, 1, ... and threads of its pool that
 * are idle at that moment (spinning between jobs, or waiting for ready tasks of the block
 * schedule) take the others; a thread asleep or busy with another block does not join, and
 * nothing waits for it. So the caller always starts with i = 0 and, on a quiet machine, the same
 * helper takes the same items step after step, with that part of the weights in its own cache.
 * Outside a pool, in a 1-thread pool, or while another block's help is under way, every i runs
 * on the caller. fn must not block, and runs with the pool's floating-point state. A helper
 * passes its own thread index: its per-thread scratch is free while it is idle.
 * bdrt_help_threads: the threads of the calling thread's pool (1 outside one). */
typedef void (*bdrt_help_fn)(void *ctx, int64_t i, int thread);
void bdrt_help(int64_t n, bdrt_help_fn fn, void *ctx);
int bdrt_help_threads(void);
/* For the block schedule's idle threads (bdrt_dag.c): joins a help under way, if any. */
void bdrt_help_poll(void);

/* ---- denormals (bdrt_pool.c) ----
 * Arithmetic on denormal floats (below 1.2e-38 in magnitude) takes a slow microcode path on x86
 * cores, up to 100 times slower: a Softmax whose tiny probabilities are denormal slowed the
 * matrix product after it 30-fold. The generated run() (unless compiled with --denormals keep)
 * calls bdrt_fp_flush_denormals first, which sets the calling thread's flush-to-zero and
 * denormals-are-zero modes (x86 MXCSR; nothing elsewhere) and returns the previous state, and
 * bdrt_fp_restore(saved) before it returns, so a library caller's own thread is left as it was.
 * The pool's workers take the calling thread's state with every job. */
unsigned bdrt_fp_flush_denormals(void);
void bdrt_fp_restore(unsigned saved);

/* ---- dataflow execution of a block DAG (bdrt_dag.c) ----
 * The block schedule: every task is one block of one nest (fns[task_fn[t]](ctx, task_block[t],
 * thread)) or, with task_fn -1, a completion event that does no work. Task t runs once all
 * n_preds[t] tasks that list it among their successors (succ[succ_start[u] .. succ_start[u+1]))
 * are done. bdrt_dag_run executes the DAG on the pool's threads: a finishing task decrements its
 * successors' counters; each task has a home thread (block b of a nest of B blocks: thread
 * b * T / B, so that nests split alike keep their data on one core; a nest of one block: the
 * thread that makes it ready); of the tasks that become
 * ready, the thread runs its own lowest-numbered one next and puts the others on their home's
 * ready queue, which hands out the lowest-numbered task first (the compiler numbers tasks in its
 * run order, a topological order that puts the blocks with the most work behind them first); a
 * thread whose queue is empty takes a later task from the fullest other queue. Returns when
 * every task is done. Task order being a topological order (every edge runs from a lower
 * number to a higher one), a one-thread pool, or a DAG marked serial, runs the tasks in it.
 *
 * A test mode checks the DAG instead of running it fast: with BDRT_SCHEDULE_SEED=N in the
 * environment, run executes single-threaded, each time in another random topological order (from
 * seed N), with the arena filled with NaN bytes (0xff) first, and each arena value's bytes
 * filled again the moment its last task is done (minus the bytes of values alive by then). A
 * missing dependency or an unsafe buffer reuse then shows up as a wrong output, not as a rare
 * race. */
typedef struct bdrt_dag {
    int32_t n_tasks;
    const bdrt_task_fn *fns;
    const int32_t *task_fn, *task_block, *n_preds, *succ_start, *succ;
    /* for the test mode: arena values (byte offset and size), and per task the values it
     * touches: touch[touch_start[t] .. touch_start[t+1]) */
    int32_t n_values;
    const int64_t *value_offset, *value_bytes;
    const int32_t *touch_start, *touch;
    int64_t arena_bytes;
    /* 1: the blocks form one chain, so they run in task order on the calling thread (no wake-up,
     * no queue); so does a one-thread pool */
    int32_t serial;
    /* per task: the number of blocks of its nest (0 for an event), which with task_block gives
     * each block its home thread; NULL: every task's home is thread 0 */
    const int32_t *task_blocks;
} bdrt_dag;
typedef struct bdrt_dag_exec bdrt_dag_exec;
/* Per-instance state (the counters and the queue); NULL when out of memory. */
bdrt_dag_exec *bdrt_dag_exec_create(const bdrt_dag *dag);
void bdrt_dag_exec_destroy(bdrt_dag_exec *x);
void bdrt_dag_run(bdrt_dag_exec *x, bdrt_pool *pool, void *ctx, unsigned char *arena);

/* Number of CPUs this process may run on (sched_getaffinity), at least 1. */
int bdrt_cpu_count(void);

/* Aligned allocation for generated code: 64-byte aligned, bytes == 0 gives a unique pointer,
 * NULL on failure; release with bdrt_free (NULL is fine). */
void *bdrt_alloc(size_t bytes);
void bdrt_free(void *p);

/* ---- dtypes and tensor files (bdrt_io.c) ---- */

/* Element size in bytes, 0 for a dtype the runtime does not handle. */
size_t bdrt_dtype_size(int dtype);
/* "float32", "int64", ... for every ONNX code (also those the runtime does not handle). */
const char *bdrt_dtype_name(int dtype);
/* Element count and byte size of a descriptor entry; -1 if its dtype, rank or dims are invalid
 * or the size overflows. */
int bdrt_io_size(const bdrt_io *io, int64_t *numel, size_t *nbytes);

/* Reads the tensor file at path into dst, which holds exactly the expected byte size of
 * `expect`: .npy when it starts with the .npy magic, else an ONNX TensorProto (but a name ending
 * in ".npy" without the magic is "not a .npy file"). Refuses anything that is not a regular file
 * without blocking on it (FIFOs included). Returns 0, or BDRT_EXIT_INPUT with a one-line reason
 * in err ("shape mismatch: expected [2,3], got [3,2]"); dst is then unspecified. */
int bdrt_tensor_read(const char *path, const bdrt_io *expect, void *dst, char *err, size_t errlen);
/* The same, for an `expect` with a ranged batch too: *actual receives expect with the file's
 * dim 0 (a batch outside the range is BDRT_EXIT_INPUT); dst holds the largest batch. */
int bdrt_tensor_read_as(const char *path, const bdrt_io *expect, bdrt_io *actual, void *dst,
                        char *err, size_t errlen);
/* The same over bytes already in memory (the fuzzing entry point). */
int bdrt_tensor_parse(const void *buf, size_t len, const bdrt_io *expect, void *dst, char *err,
                      size_t errlen);

/* The .npy v1.0 header for io (magic to '\n', padded with spaces to a multiple of 64 bytes);
 * returns its length, or 0 if cap is too small or io is invalid. 512 bytes always suffice. */
size_t bdrt_npy_header(const bdrt_io *io, char *buf, size_t cap);
/* Writes header + data to fd; 0, or BDRT_EXIT_IO with the reason (strerror) in err. */
int bdrt_npy_write_fd(int fd, const bdrt_io *io, const void *data, char *err, size_t errlen);

/* Output file names: names[i] (a buffer of BDRT_FILE_NAME_MAX bytes each) receives the file name
 * of output i: bytes outside [A-Za-z0-9_.-] become '_'; a leading '.' or '-' becomes '_' (no
 * hidden files, no option look-alikes, never "." or ".."); an empty name is "_"; a name over 100
 * bytes is cut to 100 + '-' + the 8 hex digits of the FNV-1a 32-bit hash of the full name; then,
 * in output order, a name equal (ignoring ASCII case, for case-insensitive file systems) to one
 * already given gets the first free suffix "_2", "_3", ...; finally ".npy" is appended. Returns
 * 0, or -1 when out of memory. */
#define BDRT_FILE_NAME_MAX 128
int bdrt_output_file_names(int n, const bdrt_io *outputs, char (*names)[BDRT_FILE_NAME_MAX]);
uint32_t bdrt_fnv1a32(const char *s);

/* Writes s into dst (cap bytes) for messages: printable ASCII as is except '\\' and '\'',
 * everything else as \xNN, cut after max_chars source bytes with "...". Returns dst. */
char *bdrt_escape(char *dst, size_t cap, const char *s, size_t max_chars);

#ifdef __cplusplus
}
#endif

#endif
