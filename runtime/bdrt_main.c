/* bdrt_main.c — the command line of every executable bdc generates.
 *
 * bdrt_main is a list of steps, each of which either succeeds or ends the program with one
 * exit code: parse the arguments (1 on a usage error), read and validate every input before
 * anything runs (6, one line per bad input naming it and saying what was expected and what was
 * found), prepare the output folder (4), create the model instance (4), run it once or benchmark
 * it, then write the outputs all-or-nothing (each to a temporary name in the output folder,
 * renamed into place only after all were written; 4 on failure with nothing left behind) or
 * print a summary of them. Names from the model are arbitrary bytes: they are escaped in every
 * message and sanitised into file names by bdrt_output_file_names (see bdrt.h); --info shows
 * the resulting map. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bdrt.h"
#include "bdrt_profile.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define MAX_BENCH_RUNS 10000000LL /* 80 MB of latencies */
#define NAME_SHOWN     120        /* bytes of a name shown in messages */

static const char *prog = "bdrt";

static void verrorf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void verrorf(const char *fmt, va_list ap) {
    char buf[4096];
    vsnprintf(buf, sizeof buf, fmt, ap);
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' '; /* one line, always */
    fflush(stdout);
    fprintf(stderr, "%s: error: %s\n", prog, buf);
}

void bdrt_errorf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verrorf(fmt, ap);
    va_end(ap);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    bdrt_errorf("%s (see '%s --help')", buf, prog);
    return BDRT_EXIT_USAGE;
}

/* Escaped name for messages; four rotating buffers so that one message can hold several. */
static const char *q(const char *s) {
    static char bufs[4][NAME_SHOWN * 4 + 8];
    static int turn;
    char *b = bufs[turn++ & 3];
    return bdrt_escape(b, sizeof bufs[0], s, NAME_SHOWN);
}

static void shape_text(char *buf, size_t cap, const bdrt_io *io) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < io->rank && o < cap; i++)
        o += i == 0 && io->batch_min > 0
                 ? (size_t)snprintf(buf + o, cap - o, "%" PRId64 "..%" PRId64, io->batch_min, io->dims[0])
                 : (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? "," : "", io->dims[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* ---- the command line ---- */

typedef struct options {
    const char **paths; /* per input; NULL = not given */
    const char *out_dir;
    long long bench, warmup; /* -1 = not given */
    int threads;             /* 0 = all CPUs */
    int json, info;
    const char *profile; /* --profile FILE */
} options;

/* Strict decimal in [lo, hi]. */
static int parse_count(const char *s, long long lo, long long hi, long long *v) {
    if (!*s || strlen(s) > 19) return -1;
    long long x = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        x = x * 10 + (*c - '0');
        if (x > hi) return -1;
    }
    if (x < lo) return -1;
    *v = x;
    return 0;
}

/* Matches "--name VALUE" and "--name=VALUE": 1 matched (value in *val), 0 not this option,
 * -1 the value is missing. */
static int match_value(const char *arg, const char *name, int *i, int argc, char **argv,
                       const char **val) {
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '=') {
        *val = arg + n + 1;
        return 1;
    }
    if (arg[n]) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

/* --input NAME=PATH: the longest input name followed by '=' wins (names may contain '='). */
static int assign_named(const bdrt_model *m, options *o, const char *arg) {
    int best = -1;
    size_t best_len = 0;
    for (int i = 0; i < m->n_inputs; i++) {
        size_t len = strlen(m->inputs[i].name);
        if (strncmp(arg, m->inputs[i].name, len) == 0 && arg[len] == '=' &&
            (best < 0 || len > best_len)) {
            best = i;
            best_len = len;
        }
    }
    if (best < 0) {
        const char *eq = strchr(arg, '=');
        if (!eq) return usage_error("--input expects NAME=PATH, got '%s'", q(arg));
        char name[NAME_SHOWN * 4 + 8];
        size_t len = (size_t)(eq - arg) < sizeof name - 1 ? (size_t)(eq - arg) : sizeof name - 1;
        memcpy(name, arg, len);
        name[len] = 0;
        char list[512];
        size_t l = 0;
        list[0] = 0;
        for (int i = 0; i < m->n_inputs && l + 64 < sizeof list; i++)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s'%s'", i ? ", " : "",
                                  q(m->inputs[i].name));
        return usage_error("unknown input '%s' (the model's inputs: %s)", q(name),
                           m->n_inputs ? list : "none");
    }
    if (o->paths[best]) return usage_error("input '%s' given twice", q(m->inputs[best].name));
    o->paths[best] = arg + best_len + 1;
    return 0;
}

static void print_help(const bdrt_model *m) {
    printf("usage: %s [--input NAME=PATH]... [PATH]... [--output-dir DIR]\n"
           "          [--benchmark N [--warmup W]] [--json] [--threads N] [--device N]\n"
           "          [--profile FILE] [--info]\n\n",
           prog);
    printf("Runs the model '%s' (compiled by bdc) once on the given inputs.\n\n", q(m->name));
    printf("inputs:\n");
    for (int i = 0; i < m->n_inputs && i < 32; i++) {
        char s[400];
        shape_text(s, sizeof s, &m->inputs[i]);
        printf("  '%s' %s%s\n", q(m->inputs[i].name), bdrt_dtype_name(m->inputs[i].dtype), s);
    }
    if (m->n_inputs > 32) printf("  ... and %d more (see --info)\n", m->n_inputs - 32);
    printf(
        "\noptions:\n"
        "  --input NAME=PATH  read input NAME from PATH: a .npy file (format 1.0, 2.0 or 3.0,\n"
        "                     C order) or an ONNX TensorProto (.pb), with exactly the input's\n"
        "                     dtype and shape (a scalar () is not [1]). If input names contain\n"
        "                     '=', the longest name followed by '=' wins.\n"
        "  PATH               positional paths fill the inputs not given with --input, in the\n"
        "                     model's input order. Every input must be given exactly once.\n"
        "  --output-dir DIR   write each output to DIR/FILE.npy (.npy 1.0, C order); DIR is\n"
        "                     created if missing. FILE is the output name with bytes outside\n"
        "                     [A-Za-z0-9_.-] replaced by '_', a leading '.' or '-' replaced by\n"
        "                     '_', names over 100 bytes cut to 100 + '-' + the FNV-1a 32 hash\n"
        "                     of the full name in 8 hex digits, and '_2', '_3', ... added where\n"
        "                     two files would collide (ignoring case); --info shows the map.\n"
        "                     All outputs are written or none (temporary files renamed into\n"
        "                     place at the end). Without --output-dir and --benchmark, a short\n"
        "                     summary of every output is printed instead.\n"
        "  --benchmark N      run N timed inferences (after the warm-up) and print the latency\n"
        "                     min, median, p90, p99, mean and max in milliseconds\n"
        "                     (CLOCK_MONOTONIC; percentiles by nearest rank on the sorted\n"
        "                     times, the median of an even count is the mean of the middle two)\n"
        "  --warmup W         untimed runs before the timed ones (default: min(N, 10))\n"
        "  --json             print --benchmark or --info as one JSON object; benchmark keys:\n"
        "                     model, runs, warmup, threads, min_ms, median_ms, p90_ms, p99_ms,\n"
        "                     mean_ms, max_ms, peak_rss_kb (this process's peak resident memory)\n"
        "  --threads N        worker threads on CPU (default or 0: every CPU this process may\n"
        "                     run on); BDRT_SPIN_US sets how long idle workers spin (default\n"
        "                     1000 microseconds)\n"
        "                     BDRT_SCHEDULE_SEED=N (a test mode, block schedule only): run\n"
        "                     single-threaded in a random dependency order drawn from N, with\n"
        "                     intermediates filled with NaN and refilled as each one dies\n"
        "  --device N         GPU models: run on device N (default 0); --benchmark then times\n"
        "                     each run with device events around its kernels (the copies of\n"
        "                     inputs and outputs are left out) and --json adds timer, api,\n"
        "                     device and device_index; BDRT_GPU_CTAS=N caps the persistent\n"
        "                     kernel's CTAs and BDRT_GPU_ASSIGN_SEED=N gives every task a random\n"
        "                     CTA (test modes of --schedule block)\n");
    printf( /* two strings: C99 promises 4095 characters a literal */
        "  --profile FILE     run once untimed, then once recording every block: FILE gets a\n"
        "                     Chrome/Perfetto trace (JSON: one event per block, one row per\n"
        "                     thread; open it in ui.perfetto.dev or chrome://tracing), and a\n"
        "                     table of time per nest (each nest is one fusion group) is printed;\n"
        "                     with --benchmark N [--warmup W], W untimed runs (default 1) then N\n"
        "                     recorded ones: the table gives each nest's median over the N runs\n"
        "                     (one run's times vary by a third), the trace the last run\n"
        "                     GPU models: after W runs, each kernel is launched alone N times\n"
        "                     (default 1) and timed by device events; FILE gets JSON (per\n"
        "                     kernel: what it runs and its median ms) and the table is printed\n"
        "                     (under --schedule block, one persistent kernel: its run's time)\n"
        "  --info             print the inputs and outputs (dtypes, shapes, output file names)\n"
        "                     and exit without reading inputs\n"
        "  --help, --version\n"
        "  --                 every later argument is a PATH\n\n"
        "exit status: 0 ok; 1 usage error; 4 I/O or resource failure (output folder not\n"
        "writable, write failure, out of memory, device failure); 6 bad input (missing or\n"
        "unreadable file, not a regular file, malformed file, wrong dtype, shape or byte size,\n"
        "data the model rejects), one line on stderr per problem.\n");
}

/* -1: go on; otherwise the exit code (0 after --help / --version). */
static int parse_args(int argc, char **argv, const bdrt_model *m, options *o) {
    const char **positional = calloc((size_t)argc + 1, sizeof *positional);
    int npos = 0, dashdash = 0, help = 0, version = 0, rc = -1;
    if (!positional) {
        bdrt_errorf("out of memory");
        return BDRT_EXIT_IO;
    }
    o->bench = o->warmup = -1;
    for (int i = 1; i < argc && rc < 0; i++) {
        const char *a = argv[i], *val = NULL;
        int r;
        long long v;
        if (dashdash || a[0] != '-' || !a[1]) {
            positional[npos++] = a;
        } else if (!strcmp(a, "--")) {
            dashdash = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help = 1;
        } else if (!strcmp(a, "--version")) {
            version = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--info")) {
            o->info = 1;
        } else if ((r = match_value(a, "--input", &i, argc, argv, &val)) != 0) {
            if (r < 0)
                rc = usage_error("--input needs NAME=PATH");
            else if (assign_named(m, o, val))
                rc = BDRT_EXIT_USAGE;
        } else if ((r = match_value(a, "--output-dir", &i, argc, argv, &val)) != 0) {
            if (r < 0 || !*val)
                rc = usage_error("--output-dir needs a folder");
            else if (o->out_dir)
                rc = usage_error("--output-dir given twice");
            else
                o->out_dir = val;
        } else if ((r = match_value(a, "--profile", &i, argc, argv, &val)) != 0) {
            if (r < 0 || !*val)
                rc = usage_error("--profile needs a file name");
            else
                o->profile = val;
        } else if ((r = match_value(a, "--benchmark", &i, argc, argv, &val)) != 0) {
            if (r < 0 || parse_count(val, 1, MAX_BENCH_RUNS, &v))
                rc = usage_error("--benchmark needs a run count from 1 to %lld", MAX_BENCH_RUNS);
            else
                o->bench = v;
        } else if ((r = match_value(a, "--warmup", &i, argc, argv, &val)) != 0) {
            if (r < 0 || parse_count(val, 0, MAX_BENCH_RUNS, &v))
                rc = usage_error("--warmup needs a run count from 0 to %lld", MAX_BENCH_RUNS);
            else
                o->warmup = v;
        } else if ((r = match_value(a, "--device", &i, argc, argv, &val)) != 0) {
            if (r < 0 || parse_count(val, 0, 1024, &v))
                rc = usage_error("--device needs a device index from 0 to 1024");
            else if (!m->device_api)
                rc = usage_error("--device: this model was compiled for the CPU");
            else
                bdrt_device_index = (int)v;
        } else if ((r = match_value(a, "--threads", &i, argc, argv, &val)) != 0) {
            if (r < 0 || parse_count(val, 0, BDRT_POOL_MAX_THREADS, &v))
                rc = usage_error("--threads needs a count from 0 to %d", BDRT_POOL_MAX_THREADS);
            else
                o->threads = (int)v;
        } else {
            rc = usage_error("unknown option '%s'", q(a));
        }
    }
    if (rc < 0 && help) {
        print_help(m);
        rc = 0;
    } else if (rc < 0 && version) {
        printf("%s: model '%s', bdc runtime %s\n", prog, q(m->name), BDRT_VERSION);
        rc = 0;
    }
    if (rc < 0 && o->warmup >= 0 && o->bench < 0) rc = usage_error("--warmup needs --benchmark");
    if (rc < 0 && o->profile && m->device_api && !m->device_profile)
        rc = usage_error("--profile: this GPU model cannot time its kernels (use --benchmark)");
    if (rc < 0 && o->profile && o->bench > 1000)
        rc = usage_error("--profile records at most 1000 runs (--benchmark)");
    if (rc < 0 && o->json && o->bench < 0 && !o->info)
        rc = usage_error("--json needs --benchmark or --info");
    /* Positional paths fill the inputs not named, in order. */
    for (int i = 0, k = 0; rc < 0 && k < npos; i++) {
        if (i >= m->n_inputs) {
            rc = usage_error("too many input paths: the model has %d input%s", m->n_inputs,
                             m->n_inputs == 1 ? "" : "s");
        } else if (!o->paths[i]) {
            o->paths[i] = positional[k++];
        }
    }
    for (int i = 0; rc < 0 && !o->info && i < m->n_inputs; i++) {
        if (!o->paths[i]) {
            char s[400];
            shape_text(s, sizeof s, &m->inputs[i]);
            rc = usage_error("input '%s' (%s%s) not given", q(m->inputs[i].name),
                             bdrt_dtype_name(m->inputs[i].dtype), s);
        }
    }
    free(positional);
    return rc;
}

/* ---- JSON ---- */

/* A JSON string: valid UTF-8 passes through, control characters are escaped, and bytes that
 * are not valid UTF-8 become U+FFFD. */
static void json_string(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            p++;
        } else {
            int n = c >= 0xf0 && c <= 0xf4 ? 3
                    : c >= 0xe0            ? (c <= 0xef ? 2 : -1)
                    : c >= 0xc2            ? 1
                                           : -1;
            int ok = n > 0;
            uint32_t cp = n == 3 ? c & 7 : n == 2 ? c & 15 : c & 31;
            for (int k = 1; ok && k <= n; k++) {
                if ((p[k] & 0xc0) != 0x80)
                    ok = 0;
                else
                    cp = cp << 6 | (p[k] & 0x3f);
            }
            if (ok && ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
                       (n == 3 && (cp < 0x10000 || cp > 0x10ffff))))
                ok = 0;
            if (ok) {
                fwrite(p, 1, (size_t)n + 1, f);
                p += n + 1;
            } else {
                fputs("\\ufffd", f);
                p++;
            }
        }
    }
    fputc('"', f);
}

static void json_io(FILE *f, const bdrt_io *io, const char *file) {
    fputs("{\"name\": ", f);
    json_string(f, io->name);
    fprintf(f, ", \"dtype\": \"%s\", \"shape\": [", bdrt_dtype_name(io->dtype));
    for (int d = 0; d < io->rank; d++)
        fprintf(f, "%s%" PRId64, d ? ", " : "", io->dims[d]);
    fputc(']', f);
    if (io->batch_min > 0) /* the shape holds the largest batch */
        fprintf(f, ", \"batch\": [%" PRId64 ", %" PRId64 "]", io->batch_min, io->dims[0]);
    if (file) {
        fputs(", \"file\": ", f);
        json_string(f, file);
    }
    fputc('}', f);
}

static void print_info(const bdrt_model *m, char (*files)[BDRT_FILE_NAME_MAX], int json) {
    char s[400];
    if (json) {
        printf("{\"model\": ");
        json_string(stdout, m->name);
        printf(", \"runtime\": \"%s\", \"inputs\": [", BDRT_VERSION);
        for (int i = 0; i < m->n_inputs; i++) {
            if (i) fputs(", ", stdout);
            json_io(stdout, &m->inputs[i], NULL);
        }
        printf("], \"outputs\": [");
        for (int i = 0; i < m->n_outputs; i++) {
            if (i) fputs(", ", stdout);
            json_io(stdout, &m->outputs[i], files[i]);
        }
        printf("]}\n");
        return;
    }
    printf("model '%s' (bdc runtime %s)\n", q(m->name), BDRT_VERSION);
    printf("inputs (%d):\n", m->n_inputs);
    for (int i = 0; i < m->n_inputs; i++) {
        shape_text(s, sizeof s, &m->inputs[i]);
        printf("  %d  '%s'  %s%s\n", i, q(m->inputs[i].name), bdrt_dtype_name(m->inputs[i].dtype),
               s);
    }
    printf("outputs (%d):\n", m->n_outputs);
    for (int i = 0; i < m->n_outputs; i++) {
        shape_text(s, sizeof s, &m->outputs[i]);
        printf("  %d  '%s'  %s%s  -> %s\n", i, q(m->outputs[i].name),
               bdrt_dtype_name(m->outputs[i].dtype), s, files[i]);
    }
}

/* ---- output summary ---- */

static float half_to_float(uint16_t h) {
    int e = (h >> 10) & 31;
    uint32_t mant = h & 1023;
    float v;
    if (e == 0)
        v = ldexpf((float)mant, -24);
    else if (e == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

static void print_value(const bdrt_io *io, const void *data, int64_t i) {
    const unsigned char *p = data;
    switch (io->dtype) {
    case BDRT_FLOAT32: {
        float v;
        memcpy(&v, p + 4 * i, 4);
        printf("%.6g", (double)v);
        break;
    }
    case BDRT_FLOAT64: {
        double v;
        memcpy(&v, p + 8 * i, 8);
        printf("%.8g", v);
        break;
    }
    case BDRT_FLOAT16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        printf("%.4g", (double)half_to_float(v));
        break;
    }
    case BDRT_BOOL: printf("%s", p[i] ? "true" : "false"); break;
    case BDRT_UINT8: printf("%u", p[i]); break;
    case BDRT_INT8: printf("%d", (int)(signed char)p[i]); break;
    case BDRT_UINT16:
    case BDRT_INT16: {
        uint16_t v;
        memcpy(&v, p + 2 * i, 2);
        if (io->dtype == BDRT_INT16)
            printf("%d", (int)(int16_t)v);
        else
            printf("%u", (unsigned)v);
        break;
    }
    case BDRT_UINT32:
    case BDRT_INT32: {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        if (io->dtype == BDRT_INT32)
            printf("%" PRId32, (int32_t)v);
        else
            printf("%" PRIu32, v);
        break;
    }
    default: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        if (io->dtype == BDRT_INT64)
            printf("%" PRId64, (int64_t)v);
        else
            printf("%" PRIu64, v);
        break;
    }
    }
}

static void print_summary(const bdrt_model *m, void *const *outs) {
    for (int i = 0; i < m->n_outputs; i++) {
        const bdrt_io *io = &m->outputs[i];
        int64_t numel = 0;
        char s[400];
        bdrt_io_size(io, &numel, NULL);
        shape_text(s, sizeof s, io);
        printf("%s: %s%s = ", q(io->name), bdrt_dtype_name(io->dtype), s);
        if (io->rank == 0) {
            print_value(io, outs[i], 0);
            printf("\n");
            continue;
        }
        printf("[");
        for (int64_t k = 0; k < numel && k < 8; k++) {
            if (k) printf(", ");
            print_value(io, outs[i], k);
        }
        printf("%s]", numel > 8 ? ", ..." : "");
        if (numel > 8) printf(" (%" PRId64 " values)", numel);
        printf("\n");
    }
}

/* ---- output folder and files ---- */

typedef struct out_dir {
    const char *path;
    int fd;
    char *created[64]; /* folders this run created, deepest last, removed again on failure */
    int n_created;
} out_dir;

static int make_dirs(out_dir *d) {
    size_t len = strlen(d->path);
    char *buf = malloc(len + 1);
    if (!buf) return -1;
    memcpy(buf, d->path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        if (buf[i - 1] == '/') continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) == 0) {
            if (d->n_created < 64) d->created[d->n_created++] = strdup(buf);
        } else if (errno != EEXIST) {
            int e = errno;
            bdrt_errorf("cannot create output folder '%s': %s", q(buf), strerror(e));
            free(buf);
            return -1;
        }
        buf[i] = c;
    }
    free(buf);
    return 0;
}

static void out_dir_close(out_dir *d, int failed) {
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
    for (int i = d->n_created - 1; i >= 0; i--) {
        if (failed && d->created[i]) rmdir(d->created[i]); /* only succeeds when empty */
        free(d->created[i]);
    }
    d->n_created = 0;
}

/* Creates the folder if missing and checks that a file can be created in it. */
static int out_dir_open(out_dir *d, const char *path) {
    d->path = path;
    d->fd = -1;
    d->n_created = 0;
    if (make_dirs(d)) return BDRT_EXIT_IO;
    d->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd < 0) {
        bdrt_errorf("cannot open output folder '%s': %s", q(path), strerror(errno));
        return BDRT_EXIT_IO;
    }
    char probe[64];
    snprintf(probe, sizeof probe, ".bdrt-probe-%ld", (long)getpid());
    int fd = openat(d->fd, probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        unlinkat(d->fd, probe, 0);
        fd = openat(d->fd, probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        bdrt_errorf("cannot write in output folder '%s': %s", q(path), strerror(errno));
        return BDRT_EXIT_IO;
    }
    close(fd);
    unlinkat(d->fd, probe, 0);
    return 0;
}

typedef char tmp_name[BDRT_FILE_NAME_MAX + 40];

static void remove_temps(out_dir *d, tmp_name *tmp, int n) {
    for (int i = 0; i < n; i++)
        if (tmp[i][0]) unlinkat(d->fd, tmp[i], 0);
}

static int write_outputs(out_dir *d, const bdrt_model *m, void *const *outs,
                         char (*files)[BDRT_FILE_NAME_MAX]) {
    int n = m->n_outputs;
    tmp_name *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    char err[512];
    if (!tmp) {
        bdrt_errorf("out of memory");
        return BDRT_EXIT_IO;
    }
    long pid = (long)getpid();
    for (int i = 0; i < n; i++) {
        snprintf(tmp[i], sizeof tmp[i], ".%s.tmp-%ld", files[i], pid);
        int fd = openat(d->fd, tmp[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) { /* left by a killed run with the same pid */
            unlinkat(d->fd, tmp[i], 0);
            fd = openat(d->fd, tmp[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        }
        int rc = 0;
        if (fd < 0) {
            snprintf(err, sizeof err, "%s", strerror(errno));
            tmp[i][0] = 0;
            rc = BDRT_EXIT_IO;
        } else {
            rc = bdrt_npy_write_fd(fd, &m->outputs[i], outs[i], err, sizeof err);
            if (close(fd) && !rc) {
                snprintf(err, sizeof err, "%s", strerror(errno));
                rc = BDRT_EXIT_IO;
            }
        }
        if (rc) {
            bdrt_errorf("cannot write output '%s' to '%s/%s': %s", q(m->outputs[i].name),
                        q(d->path), files[i], err);
            remove_temps(d, tmp, i + 1);
            free(tmp);
            return BDRT_EXIT_IO;
        }
    }
    /* A folder in the way of a file would make its rename fail half-way: refuse it first. */
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (fstatat(d->fd, files[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            bdrt_errorf("cannot write output '%s': '%s/%s' is a folder", q(m->outputs[i].name),
                        q(d->path), files[i]);
            remove_temps(d, tmp, n);
            free(tmp);
            return BDRT_EXIT_IO;
        }
    }
    for (int i = 0; i < n; i++) {
        if (renameat(d->fd, tmp[i], d->fd, files[i])) {
            bdrt_errorf("cannot rename output '%s' into place as '%s/%s': %s",
                        q(m->outputs[i].name), q(d->path), files[i], strerror(errno));
            remove_temps(d, tmp + i, n - i);
            free(tmp);
            return BDRT_EXIT_IO;
        }
    }
    free(tmp);
    return 0;
}

int bdrt_device_index = 0;

/* ---- benchmark ---- */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, long long n, double pct) {
    long long r = (long long)ceil(pct / 100.0 * (double)n);
    if (r < 1) r = 1;
    if (r > n) r = n;
    return v[r - 1];
}

static int run_model(const bdrt_model *m, void *inst, const void *const *in, void *const *out) {
    int rc = m->run(inst, in, out);
    if (rc == 0) return 0;
    if (rc == BDRT_EXIT_INPUT) {
        bdrt_errorf("the model '%s' rejected its input data", q(m->name));
        return BDRT_EXIT_INPUT;
    }
    bdrt_errorf("running the model '%s' failed (code %d)", q(m->name), rc);
    return BDRT_EXIT_IO;
}

/* This process's peak resident memory in KiB: VmHWM from /proc (reset by exec, unlike
 * ru_maxrss, which on Linux keeps the peak of the process that forked us), else ru_maxrss. */
static long peak_rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    struct rusage ru;
    if (kb < 0 && getrusage(RUSAGE_SELF, &ru) == 0) kb = ru.ru_maxrss;
    return kb;
}

static int benchmark(const bdrt_model *m, void *inst, const void *const *in, void *const *out,
                     const options *o) {
    long long n = o->bench, warm = o->warmup >= 0 ? o->warmup : (o->bench < 10 ? o->bench : 10);
    double *lat = malloc((size_t)n * sizeof *lat);
    if (!lat) {
        bdrt_errorf("out of memory for %lld latencies", n);
        return BDRT_EXIT_IO;
    }
    int rc = 0;
    for (long long i = 0; i < warm && !rc; i++)
        rc = run_model(m, inst, in, out);
    /* GPU models: the device time of each run (events around its kernels), which leaves out the
     * host's copies of inputs and outputs */
    int device = m->device_ms != NULL;
    for (long long i = 0; i < n && !rc; i++) {
        double t0 = now_ms();
        rc = run_model(m, inst, in, out);
        lat[i] = now_ms() - t0;
        if (device && !rc) lat[i] = m->device_ms(inst);
    }
    if (rc) {
        free(lat);
        return rc;
    }
    double sum = 0;
    for (long long i = 0; i < n; i++)
        sum += lat[i];
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    double med = n % 2 ? lat[n / 2] : (lat[n / 2 - 1] + lat[n / 2]) / 2;
    double st[6] = {lat[0],          med,       percentile(lat, n, 90), percentile(lat, n, 99),
                    sum / (double)n, lat[n - 1]};
    int threads = o->threads > 0 ? o->threads : bdrt_cpu_count();
    if (o->json) {
        printf("{\"model\": ");
        json_string(stdout, m->name);
        long peak_kb = peak_rss_kb();
        printf(", \"runs\": %lld, \"warmup\": %lld, \"threads\": %d, \"min_ms\": %.6f, "
               "\"median_ms\": %.6f, \"p90_ms\": %.6f, \"p99_ms\": %.6f, \"mean_ms\": %.6f, "
               "\"max_ms\": %.6f, \"peak_rss_kb\": %ld",
               n, warm, threads, st[0], st[1], st[2], st[3], st[4], st[5], peak_kb);
        if (device) {
            printf(", \"timer\": \"device events\", \"api\": ");
            json_string(stdout, m->device_api);
            printf(", \"device\": ");
            json_string(stdout, m->device_name(inst));
            printf(", \"device_index\": %d", bdrt_device_index);
        }
        printf("}\n");
    } else {
        int prec = st[1] < 1.0 ? 6 : 4; /* sub-millisecond models get microsecond digits */
        if (device)
            printf("benchmark '%s': %lld runs after %lld warm-up runs on %s device %d '%s' (device events)\n",
                   q(m->name), n, warm, m->device_api, bdrt_device_index, q(m->device_name(inst)));
        else
            printf("benchmark '%s': %lld runs after %lld warm-up runs, %d thread%s\n", q(m->name), n,
                   warm, threads, threads == 1 ? "" : "s");
        printf("latency ms %12s %12s %12s %12s %12s %12s\n", "min", "median", "p90", "p99", "mean",
               "max");
        printf("          ");
        for (int k = 0; k < 6; k++)
            printf(" %12.*f", prec, st[k]);
        printf("\n");
    }
    free(lat);
    return 0;
}

/* ---- main ---- */

/* The descriptor comes from the compiler: a broken one is a bug, not bad input. */
/* ---- --profile ---- */

typedef struct nest_time {
    int nest;
    long long blocks;
    double busy_us, first_us, last_us;
} nest_time;

static int cmp_busy(const void *a, const void *b) {
    const nest_time *x = a, *y = b;
    return (x->busy_us < y->busy_us) - (x->busy_us > y->busy_us);
}

static int nest_of(const bdrt_model *m, bdrt_task_fn fn) {
    for (int i = 0; i < m->n_nests; i++)
        if (m->nest_fns[i] == fn) return i;
    return -1;
}

/* The median of v[0 .. n) (sorted in place). */
static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Records `runs` runs: per nest its busy and span time of each run into busy/span[nest * runs +
 * r], the wall time of each into wall[r]; the last run's events stay recorded (*ev, *n). */
static int profile_runs(const bdrt_model *m, void *inst, const void *const *in, void *const *out,
                        int runs, double *busy, double *span, double *wall,
                        const bdrt_profile_event **ev, size_t *n, size_t *dropped) {
    nest_time *nt = calloc((size_t)m->n_nests + 1, sizeof *nt);
    if (!nt) return -1;
    int rc = 0;
    for (int r = 0; r < runs && !rc; r++) {
        if (r) bdrt_profile_free();
        if (bdrt_profile_begin((size_t)1 << 20)) {
            free(nt);
            return -1;
        }
        double t0 = now_ms();
        rc = run_model(m, inst, in, out);
        wall[r] = now_ms() - t0;
        *n = bdrt_profile_end(ev, dropped);
        memset(nt, 0, (size_t)m->n_nests * sizeof *nt);
        for (size_t i = 0; i < *n; i++) {
            int k = nest_of(m, (*ev)[i].fn);
            if (k < 0) continue;
            nest_time *x = &nt[k];
            if (!x->blocks || (*ev)[i].t0_us < x->first_us) x->first_us = (*ev)[i].t0_us;
            if (!x->blocks || (*ev)[i].t1_us > x->last_us) x->last_us = (*ev)[i].t1_us;
            x->blocks++;
            x->busy_us += (*ev)[i].t1_us - (*ev)[i].t0_us;
        }
        for (int k = 0; k < m->n_nests; k++) {
            busy[(size_t)k * runs + r] = nt[k].busy_us;
            span[(size_t)k * runs + r] = nt[k].last_us - nt[k].first_us;
        }
    }
    free(nt);
    return rc;
}

/* The profile is written to a temporary name beside path (tmp: strlen(path) + 32 bytes), then
 * renamed into place: profile_open gives the file (NULL with the reason printed), profile_close
 * flushes, closes and renames it when rc is 0, removes it otherwise, and returns the exit code. */
static FILE *profile_open(const char *path, char *tmp, size_t tmp_len) {
    snprintf(tmp, tmp_len, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) bdrt_errorf("cannot write the profile '%s': %s", q(path), strerror(errno));
    return f;
}

static int profile_close(FILE *f, const char *tmp, const char *path, int rc) {
    if (!rc && (fflush(f) || ferror(f))) {
        bdrt_errorf("cannot write the profile '%s': %s", q(path), strerror(errno));
        rc = BDRT_EXIT_IO;
    }
    if (fclose(f) && !rc) {
        bdrt_errorf("cannot write the profile '%s': %s", q(path), strerror(errno));
        rc = BDRT_EXIT_IO;
    }
    if (!rc && rename(tmp, path)) {
        bdrt_errorf("cannot rename the profile into place as '%s': %s", q(path), strerror(errno));
        rc = BDRT_EXIT_IO;
    }
    if (rc) remove(tmp);
    return rc;
}

/* `warm` untimed runs, `runs` recorded ones; the last one's trace into path (temporary name,
 * then renamed), the per-nest table (medians over the runs) on stdout. */
static int profile(const bdrt_model *m, void *inst, const void *const *in, void *const *out,
                   const char *path, int threads, int runs, long long warm) {
    int rc = 0;
    for (long long i = 0; i < warm && !rc; i++) rc = run_model(m, inst, in, out);
    if (rc) return rc;
    size_t cells = (size_t)(m->n_nests + 1) * (size_t)runs;
    double *busy = malloc(cells * sizeof *busy), *span = malloc(cells * sizeof *span),
           *wall = malloc((size_t)runs * sizeof *wall);
    const bdrt_profile_event *ev = NULL;
    size_t dropped = 0, n = 0;
    if (!busy || !span || !wall ||
        (rc = profile_runs(m, inst, in, out, runs, busy, span, wall, &ev, &n, &dropped)) < 0) {
        free(busy);
        free(span);
        free(wall);
        bdrt_profile_free();
        bdrt_errorf("out of memory for the profile");
        return BDRT_EXIT_IO;
    }
    double wall_ms = median_of(wall, runs);
    nest_time *nt = calloc((size_t)m->n_nests + 1, sizeof *nt);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    FILE *f = NULL;
    if (!rc && (!nt || !tmp)) {
        bdrt_errorf("out of memory for the profile");
        rc = BDRT_EXIT_IO;
    }
    if (!rc && !(f = profile_open(path, tmp, plen + 32))) rc = BDRT_EXIT_IO;
    if (!rc) {
        for (int i = 0; i < m->n_nests; i++) nt[i].nest = i;
        fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
        for (int t = 0; t < threads; t++)
            fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %d, "
                       "\"args\": {\"name\": \"thread %d\"}},\n", t, t);
        for (size_t i = 0; i < n; i++) {
            int k = nest_of(m, ev[i].fn);
            fprintf(f, "{\"name\": ");
            json_string(f, k >= 0 ? m->nest_names[k] : "?");
            fprintf(f, ", \"cat\": \"block\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, "
                       "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"nest\": %d, \"block\": %lld}}%s\n",
                    ev[i].thread, ev[i].t0_us, ev[i].t1_us - ev[i].t0_us, k,
                    (long long)ev[i].block, i + 1 < n ? "," : "");
            if (k >= 0) nt[k].blocks++;
        }
        fprintf(f, "]}\n");
        for (int k = 0; k < m->n_nests; k++) { /* the medians over the runs */
            nt[k].busy_us = median_of(busy + (size_t)k * runs, runs);
            nt[k].first_us = 0;
            nt[k].last_us = median_of(span + (size_t)k * runs, runs);
        }
    }
    if (f) rc = profile_close(f, tmp, path, rc);
    if (!rc) {
        double in_blocks = 0;
        for (int i = 0; i < m->n_nests; i++) in_blocks += nt[i].busy_us;
        qsort(nt, (size_t)m->n_nests, sizeof *nt, cmp_busy);
        char what[64];
        if (runs == 1) snprintf(what, sizeof what, "one run");
        else snprintf(what, sizeof what, "median of %d runs", runs);
        printf("profile '%s': %s, %.3f ms wall, %d thread%s, %.3f ms in blocks (%.0f%% of "
               "%d x wall)%s; trace of the last run in %s\n", q(m->name), what, wall_ms, threads,
               threads == 1 ? "" : "s", in_blocks / 1e3,
               wall_ms > 0 ? 100.0 * in_blocks / 1e3 / (wall_ms * threads) : 0.0, threads,
               dropped ? " (some blocks not recorded)" : "", q(path));
        printf("%10s %7s %7s %11s  %s\n", "ms", "share", "blocks", "span ms", "nest");
        for (int i = 0; i < m->n_nests && nt[i].blocks; i++)
            printf("%10.3f %6.1f%% %7lld %11.3f  %s\n", nt[i].busy_us / 1e3,
                   in_blocks > 0 ? 100.0 * nt[i].busy_us / in_blocks : 0.0, nt[i].blocks,
                   (nt[i].last_us - nt[i].first_us) / 1e3, q(m->nest_names[nt[i].nest]));
    }
    free(nt);
    free(tmp);
    free(busy);
    free(span);
    free(wall);
    bdrt_profile_free();
    return rc;
}

/* GPU models: `warm` runs (at least one, which puts the inputs on the device), then `runs`
 * passes of every kernel launched alone; each kernel's median into path as JSON (temporary name,
 * then renamed), the table on stdout. */
static int gpu_profile(const bdrt_model *m, void *inst, const void *const *in, void *const *out,
                       const char *path, int runs, long long warm) {
    int rc = 0;
    for (long long i = 0; i < (warm > 0 ? warm : 1) && !rc; i++) rc = run_model(m, inst, in, out);
    if (rc) return rc;
    const double run_ms = m->device_ms ? m->device_ms(inst) : -1;
    int nk = m->n_nests > 0 ? m->n_nests : 0;
    double *all = malloc(((size_t)nk * runs + 1) * sizeof *all), *one = malloc(((size_t)nk + 1) * sizeof *one);
    nest_time *kt = calloc((size_t)nk + 1, sizeof *kt);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    FILE *f = NULL;
    if (!all || !one || !kt || !tmp) {
        bdrt_errorf("out of memory for the profile");
        rc = BDRT_EXIT_IO;
    }
    for (int r = 0; r < runs && !rc; r++) {
        if ((rc = m->device_profile(inst, one)) != 0) break;
        for (int k = 0; k < nk; k++) all[(size_t)k * runs + r] = one[k];
    }
    double sum = 0;
    for (int k = 0; k < nk && !rc; k++) {
        kt[k].nest = k;
        kt[k].busy_us = median_of(all + (size_t)k * runs, runs) * 1e3;
        sum += kt[k].busy_us / 1e3;
    }
    if (!rc && !(f = profile_open(path, tmp, plen + 32))) rc = BDRT_EXIT_IO;
    if (!rc) {
        const char *dev = m->device_name ? m->device_name(inst) : "";
        fprintf(f, "{\"model\": ");
        json_string(f, m->name);
        fprintf(f, ", \"api\": ");
        json_string(f, m->device_api);
        fprintf(f, ", \"device\": ");
        json_string(f, dev ? dev : "");
        fprintf(f, ", \"passes\": %d, \"run_ms\": %.6f, \"kernels_ms\": %.6f, \"kernels\": [\n", runs,
                run_ms, sum);
        for (int k = 0; k < nk; k++) {
            fprintf(f, "{\"kernel\": %d, \"runs\": ", k);
            json_string(f, m->nest_names ? m->nest_names[k] : "");
            fprintf(f, ", \"median_ms\": %.6f}%s\n", kt[k].busy_us / 1e3, k + 1 < nk ? "," : "");
        }
        fprintf(f, "]}\n");
    }
    if (f) rc = profile_close(f, tmp, path, rc);
    if (!rc) {
        qsort(kt, (size_t)nk, sizeof *kt, cmp_busy);
        printf("profile '%s': %d kernel%s, each launched alone (median of %d pass%s): %.3f ms in "
               "kernels; a whole run %.3f ms; JSON in %s\n", q(m->name), nk, nk == 1 ? "" : "s", runs,
               runs == 1 ? "" : "es", sum, run_ms, q(path));
        printf("%10s %7s  %s\n", "ms", "share", "kernel: what it runs");
        for (int i = 0; i < nk; i++)
            printf("%10.4f %6.1f%%  %d: %s\n", kt[i].busy_us / 1e3, sum > 0 ? 100.0 * kt[i].busy_us / 1e3 / sum : 0.0,
                   kt[i].nest, q(m->nest_names ? m->nest_names[kt[i].nest] : ""));
    }
    free(all);
    free(one);
    free(kt);
    free(tmp);
    return rc;
}

static void check_model(const bdrt_model *m) {
    const char *why = NULL;
    if (!m || !m->create || !m->run || !m->destroy || m->n_inputs < 0 || m->n_outputs < 0 ||
        (m->n_inputs && !m->inputs) || (m->n_outputs && !m->outputs))
        why = "missing function or negative count";
    for (int k = 0; !why && k < 2; k++) {
        const bdrt_io *ios = k ? m->outputs : m->inputs;
        for (int i = 0; !why && i < (k ? m->n_outputs : m->n_inputs); i++)
            if (!ios[i].name || bdrt_io_size(&ios[i], NULL, NULL)) why = "bad input or output";
    }
    if (why) {
        fprintf(stderr, "%s: internal error: invalid model descriptor (%s)\n", prog, why);
        abort();
    }
}

int bdrt_main(int argc, char **argv, const bdrt_model *m) {
    if (argc > 0 && argv[0] && argv[0][0]) {
        const char *slash = strrchr(argv[0], '/');
        prog = slash && slash[1] ? slash + 1 : argv[0];
    }
    check_model(m);

    int ni = m->n_inputs, no = m->n_outputs, rc;
    options o = {0};
    void **in = calloc((size_t)ni + 1, sizeof *in);
    void **out = calloc((size_t)no + 1, sizeof *out);
    char(*files)[BDRT_FILE_NAME_MAX] = calloc((size_t)no + 1, sizeof *files);
    o.paths = calloc((size_t)ni + 1, sizeof *o.paths);
    void *inst = NULL;
    out_dir dir = {.fd = -1};
    bdrt_model at_batch;
    bdrt_io *ios = NULL;
    const bdrt_model *full = m;
    int64_t batch = 0;
    const char *batch_from = NULL;
    if (!in || !out || !files || !o.paths || bdrt_output_file_names(no, m->outputs, files)) {
        bdrt_errorf("out of memory");
        rc = BDRT_EXIT_IO;
        goto done;
    }

    rc = parse_args(argc, argv, m, &o);
    if (rc >= 0) goto done;
    rc = 0;
    if (o.info) {
        print_info(m, files, o.json);
        goto done;
    }

    /* A ranged batch: the descriptor as the inputs give it (every batched input and output with
     * the inputs' dim 0), used from here on; the buffers keep the largest batch's size. */
    at_batch = *m;
    ios = calloc((size_t)ni + (size_t)no + 1, sizeof *ios);
    if (!ios) {
        bdrt_errorf("out of memory");
        rc = BDRT_EXIT_IO;
        goto done;
    }
    memcpy(ios, m->inputs, (size_t)ni * sizeof *ios);
    memcpy(ios + ni, m->outputs, (size_t)no * sizeof *ios);

    /* Every input is read and checked before anything is created or written. */
    for (int i = 0; i < ni; i++) {
        size_t nbytes;
        char err[1024];
        bdrt_io_size(&m->inputs[i], NULL, &nbytes);
        in[i] = bdrt_alloc(nbytes);
        if (!in[i]) {
            bdrt_errorf("out of memory for input '%s' (%zu bytes)", q(m->inputs[i].name), nbytes);
            rc = BDRT_EXIT_IO;
            goto done;
        }
        if (bdrt_tensor_read_as(o.paths[i], &m->inputs[i], &ios[i], in[i], err, sizeof err)) {
            bdrt_errorf("input '%s' from '%s': %s", q(m->inputs[i].name), q(o.paths[i]), err);
            rc = BDRT_EXIT_INPUT;
        } else if (m->inputs[i].batch_min > 0 && batch && ios[i].dims[0] != batch) {
            bdrt_errorf("input '%s' has batch %" PRId64 ", input '%s' %" PRId64 ": one batch "
                        "for all", q(m->inputs[i].name), ios[i].dims[0], q(batch_from), batch);
            rc = BDRT_EXIT_INPUT;
        } else if (m->inputs[i].batch_min > 0 && !batch) {
            batch = ios[i].dims[0];
            batch_from = m->inputs[i].name;
        }
    }
    if (rc) goto done;
    if (batch) {
        for (int i = 0; i < no; i++)
            if (ios[ni + i].batch_min > 0) ios[ni + i].dims[0] = batch;
        at_batch.inputs = ios;
        at_batch.outputs = ios + ni;
        m = &at_batch;
    }
    for (int i = 0; i < no; i++) {
        size_t nbytes;
        bdrt_io_size(&full->outputs[i], NULL, &nbytes);
        out[i] = bdrt_alloc(nbytes);
        if (!out[i]) {
            bdrt_errorf("out of memory for output '%s' (%zu bytes)", q(m->outputs[i].name), nbytes);
            rc = BDRT_EXIT_IO;
            goto done;
        }
        memset(out[i], 0, nbytes);
    }
    if (o.out_dir && (rc = out_dir_open(&dir, o.out_dir)) != 0) goto done;

    if (m->weights_bytes >= 0) {
        char err[512];
        if (bdrt_weights_map(m->weights_bytes, err, sizeof err)) {
            bdrt_errorf("%s", err);
            rc = BDRT_EXIT_IO;
            goto done;
        }
    }
    inst = m->create(o.threads);
    if (!inst) {
        bdrt_errorf("cannot create the model '%s' (out of memory or no device)", q(m->name));
        rc = BDRT_EXIT_IO;
        goto done;
    }
    if (batch && m->set_batch) m->set_batch(inst, batch);
    if (o.profile && m->device_api)
        rc = gpu_profile(m, inst, (const void *const *)in, out, o.profile, o.bench > 0 ? (int)o.bench : 1,
                         o.warmup);
    else if (o.profile)
        rc = profile(m, inst, (const void *const *)in, out, o.profile,
                     o.threads > 0 ? o.threads : bdrt_cpu_count(), o.bench > 0 ? (int)o.bench : 1,
                     o.warmup >= 0 ? o.warmup : 1);
    else if (o.bench > 0)
        rc = benchmark(m, inst, (const void *const *)in, out, &o);
    else
        rc = run_model(m, inst, (const void *const *)in, out);
    if (rc) goto done;

    if (o.out_dir)
        rc = write_outputs(&dir, m, out, files);
    else if (o.bench <= 0 && !o.profile)
        print_summary(m, out);

done:
    if (inst) m->destroy(inst);
    if (dir.fd >= 0 || dir.n_created) out_dir_close(&dir, rc != 0);
    for (int i = 0; in && i < ni; i++)
        bdrt_free(in[i]);
    for (int i = 0; out && i < no; i++)
        bdrt_free(out[i]);
    free(in);
    free(out);
    free(files);
    free(o.paths);
    free(ios);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "%s: error: cannot write standard output\n", prog);
        if (!rc) rc = BDRT_EXIT_IO;
    }
    return rc;
}
