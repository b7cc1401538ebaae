/* main.c — the `bdc` command line: parses arguments, runs one command, turns its status into the
 * documented exit code and a one-line message on stderr. */
#define _POSIX_C_SOURCE 200809L /* isatty */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/analyze.h"
#include "driver/compile.h"
#include "driver/inspect.h"

static const char usage_text[] =
    "usage: bdc COMMAND [ARGS]\n"
    "\n"
    "bdc is an ahead-of-time compiler for ONNX models.\n"
    "\n"
    "commands:\n"
    "  compile MODEL.onnx -o OUT [options]\n"
    "                                compile MODEL into a self-contained executable OUT\n"
    "      --target cpu|cuda|hip|opencl  cpu (default): C; cuda: nvcc; hip: hipcc; opencl:\n"
    "                                source built by the device's driver at start-up\n"
    "      --arch ARCH               cpu: -march=ARCH (default native; x86-64 is portable);\n"
    "                                cuda: sm_XX (default sm_90); hip: gfxNNN (default gfx90a)\n"
    "      --precision fp32|tf32|fp16|bf16  GPU targets: the inputs of tiled matrix products and\n"
    "                                convolutions rounded to it (fp32 sums); default fp32.\n"
    "                                cpu: bf16 rounds both inputs of MatMul and Gemm by constant\n"
    "                                weights and of convolutions (fp32 sums; twice the products\n"
    "                                a cycle where the CPU has AVX512_BF16, and no Winograd);\n"
    "                                depthwise and the rest stay fp32\n"
    "      --winograd on|off         cpu: 3x3 stride-1 convolutions by Winograd F(2x2,3x3) or\n"
    "                                F(4x4,3x3) where the cost model expects them faster (on,\n"
    "                                the default; F(4x4,3x3) rounds about 10x more than direct\n"
    "                                sums); off: direct sums only\n"
    "      --denormals flush|keep    cpu: flush (the default) runs inference with denormal floats\n"
    "                                (below 1.2e-38) read and written as zero (x86 FTZ and DAZ),\n"
    "                                as arithmetic on them is up to 100x slower; keep: IEEE\n"
    "                                denormals\n"
    ;
static const char usage_text_qdq[] = /* (split: C99 guarantees string literals of 4095 bytes) */
    "      --tile-threads N          cpu: size the blocks of convolutions and matrix products for\n"
    "                                1, 2, 4, ... up to N threads (default: this machine's CPUs,\n"
    "                                at most 8, for --arch native; else 8)\n"
    "      --qdq auto|int8|float     a QDQ model's Conv, MatMul or Gemm of DequantizeLinear'd\n"
    "                                8-bit X and W (constant): int8 computes it on the 8-bit\n"
    "                                values, exactly in int32 (the CPU's int8 kernels, which also\n"
    "                                requantize a QuantizeLinear after a Conv), and a MaxPool\n"
    "                                between DequantizeLinear and QuantizeLinear on the bytes;\n"
    "                                float, on the dequantized floats;\n"
    "                                auto (default): int8 for --target cpu --arch native when\n"
    "                                this x86-64 CPU has AVX2, else float\n"
    "      --branches streams|fuse   GPU --schedule op: independent branches on parallel streams\n"
    "                                (default), or small siblings fused into one kernel\n"
    "      --lib                     write a static library OUT (.a) and header (.h) instead\n"
    "      --fusion none|op|block    op: Conv/Gemm/MatMul absorb a following bias, residual Add\n"
    "                                and activation; block: op, and chains of elementwise\n"
    "                                nests with 1:1 block dependencies become one nest, sibling\n"
    "                                convs of one input and window (each with the same\n"
    "                                activation) one stacked conv, attention's product,\n"
    "                                softmax and product one nest per block of rows, and (cpu)\n"
    "                                a MaxPool pooled inside the conv before it; none: one nest\n"
    "                                per node. Default: block for cpu, op for the GPU targets\n"
    "      --schedule op|block       block (default): a block runs as soon as the producer blocks\n"
    "                                it needs are done (dataflow); op: all blocks of one nest,\n"
    "                                then a barrier, nest after nest\n"
    "      --emit-dir DIR            also write the generated sources to DIR\n"
    "      --keep-temps              keep the temporary build folder (its path is printed)\n"
    "      --dump=LIST               print to stderr, for each of the comma-separated stages:\n"
    "                                graph (inferred graph), lower (nests as lowered), tiles\n"
    "                                (nests after fusion), fuse (fusion decisions), deps (block\n"
    "                                dependencies), sched\n"
    "                                (run order or task DAG), memory (plan)\n"
    "      --werror                  build the generated C with -Werror\n"
    "      --max-weights SIZE        refuse models with more initializer bytes (default 8G)\n"
    "      --max-activations SIZE    refuse models whose intermediate tensors need more memory\n"
    "                                at run time (default 32G); SIZE takes a K, M or G suffix\n"
    "      --max-nodes N             refuse models with more nodes (default 1000000)\n"
    "      --shape NAME=DxDx...      pin input NAME's shape, e.g. --shape x=1x3x224x224\n"
    "                                (repeatable; must agree with the dims the model fixes)\n"
    "      --dim SYMBOL=N            give the symbolic dimension SYMBOL (a dim_param) the\n"
    "                                extent N at every input where it occurs (repeatable)\n"
    "      --dim SYMBOL=LO..HI       (--target cpu) one executable for every extent LO..HI of\n"
    "                                a batch SYMBOL (dim 0 of the inputs it occurs in); the\n"
    "                                runtime reads it from the inputs (outside: exit 6)\n"
    "      --const NAME=FILE         freeze input NAME to the tensor in FILE (.npy or TensorProto\n"
    "                                .pb): for inputs that decide shapes (a Reshape target)\n"
    "      -v                        print every native command and stage times\n"
    "      -q                        no progress output\n"
    ;
static const char usage_text2[] =
    "  analyze MODEL.onnx [--json FILE|-] [--dot FILE|-] [--fusion none|op|block] [--target T]\n"
    "          [--shape ...] [--dim ...] [--const ...]   (as for compile)\n"
    "                                the block-dependency analysis (--fusion block by default):\n"
    "                                every producer -> consumer\n"
    "                                edge with its class (IDENTITY, LOCAL, PANEL, ALL) and counts,\n"
    "                                totals at element, block and operator granularity, each\n"
    "                                fusion decision and why, independent branches, the critical\n"
    "                                path in blocks, the arena under each schedule; as text, JSON\n"
    "                                (--json - prints only JSON) and a Graphviz graph (--dot)\n"
    "  inspect MODEL.onnx [--json]   load, verify and shape-infer MODEL; print its inputs, outputs,\n"
    "                                symbolic dimensions, op histogram, parameters, FLOPs and\n"
    "                                unsupported nodes; takes --shape, --dim and --const too\n"
    "  --version                     print the version\n"
    "  --help                        print this help\n"
    "\n"
    "exit codes: 0 ok, 1 usage (also a --shape/--dim/--const the model contradicts),\n"
    "            2 invalid model, 3 unsupported op/opset/dtype or an input dim left symbolic,\n"
    "            4 I/O or resource limit, 5 native toolchain failed\n";

static void print_usage(FILE *f) {
    fputs(usage_text, f), fputs(usage_text_qdq, f), fputs(usage_text2, f);
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "bdc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'bdc --help'.\n");
    return BD_ERR_USAGE;
}

/* Room for every --shape/--dim/--const an argument list can hold. */
static void binds_init(bd_input_binds *b, int argc) {
    size_t n = (size_t)argc + 1;
    b->shapes = calloc(n, sizeof *b->shapes);
    b->dims = calloc(n, sizeof *b->dims);
    b->consts = calloc(n, sizeof *b->consts);
    if (!b->shapes || !b->dims || !b->consts) {
        fprintf(stderr, "bdc: error: out of memory\n");
        exit(BD_ERR_IO);
    }
}

static void binds_free(bd_input_binds *b) {
    free(b->shapes);
    free(b->dims);
    free(b->consts);
}

/* Takes argv[*i] (and its value) into b when it is --shape, --dim or --const: 1 when taken, 0
 * when it is another argument, -1 when the value is missing. The values are parsed by the bind
 * pass, against the model. */
static int take_bind(int argc, char **argv, int *i, bd_input_binds *b) {
    const char *a = argv[*i];
    const char ***list = strcmp(a, "--shape") == 0 ? &b->shapes
                         : strcmp(a, "--dim") == 0 ? &b->dims
                         : strcmp(a, "--const") == 0 ? &b->consts : NULL;
    if (!list) return 0;
    if (*i + 1 >= argc) return -1;
    int *count = list == &b->shapes ? &b->n_shapes : list == &b->dims ? &b->n_dims : &b->n_consts;
    (*list)[(*count)++] = argv[++*i];
    return 1;
}

static int cmd_inspect(int argc, char **argv, bd_input_binds *binds) {
    const char *model = NULL;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        int taken = take_bind(argc, argv, &i, binds);
        if (taken < 0) return usage_error("inspect: %s needs a value", argv[i]);
        if (taken) continue;
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) return usage_error("inspect: unknown option '%s'", argv[i]);
        else if (model) return usage_error("inspect: more than one model given ('%s')", argv[i]);
        else model = argv[i];
    }
    if (!model) return usage_error("inspect: %s", "no model given");
    bd_diag d = {0};
    bd_status s = bd_inspect(model, json, binds, &d);
    fflush(stdout);
    if (s) fprintf(stderr, "bdc: error: %s\n", d.msg);
    return s;
}

static int cmd_analyze(int argc, char **argv, bd_input_binds *binds) {
    bd_analyze_opts o = {.binds = binds};
    for (int i = 0; i < argc; i++) {
        int taken = take_bind(argc, argv, &i, binds);
        if (taken < 0) return usage_error("analyze: %s needs a value", argv[i]);
        if (taken) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--json") || !strcmp(a, "--dot") || !strcmp(a, "--fusion") ||
            !strcmp(a, "--target")) {
            if (i + 1 >= argc) return usage_error("analyze: %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--json")) o.json = v;
            else if (!strcmp(a, "--dot")) o.dot = v;
            else if (!strcmp(a, "--fusion")) {
                o.fusion_given = true;
                if (!strcmp(v, "none")) o.fusion = BD_FUSION_NONE;
                else if (!strcmp(v, "op")) o.fusion = BD_FUSION_OP;
                else if (!strcmp(v, "block")) o.fusion = BD_FUSION_BLOCK;
                else return usage_error("analyze: --fusion '%s': expected none, op or block", v);
            } else if (!(o.target = bd_target_named(v))) {
                fprintf(stderr, "bdc: error: target '%s' is not available yet (cpu only)\n", v);
                return BD_ERR_UNSUPPORTED;
            }
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) return usage_error("analyze: unknown option '%s'", a);
        else if (o.model) return usage_error("analyze: more than one model given ('%s')", a);
        else o.model = a;
    }
    if (!o.model) return usage_error("analyze: %s", "no model given");
    if (o.json && o.dot && !strcmp(o.json, "-") && !strcmp(o.dot, "-"))
        return usage_error("analyze: %s", "--json - and --dot - cannot both go to stdout");
    bd_diag d = {0};
    bd_status s = bd_analyze(&o, &d);
    fflush(stdout);
    if (s) fprintf(stderr, "bdc: error: %s\n", d.msg);
    return s;
}

/* "123", "64K", "512M", "8G" (powers of 1024) to a positive count; false if malformed. */
static bool parse_size(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v <= 0) return false;
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    else if (*end == 'M' || *end == 'm') shift = 20;
    else if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) end++;
    if (*end || v > (INT64_MAX >> shift)) return false;
    *out = (int64_t)v << shift;
    return true;
}

static int cmd_compile(int argc, char **argv, bd_input_binds *binds) {
    bd_compile_opts o = {.progress = isatty(2), .limits = bd_default_limits,
                         .schedule = BD_SCHEDULE_BLOCK, .winograd = true};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int taken = take_bind(argc, argv, &i, binds);
        if (taken < 0) return usage_error("compile: %s needs a value", a);
        if (taken) continue;
        if (strcmp(a, "-o") == 0 || strcmp(a, "--emit-dir") == 0 || strcmp(a, "--target") == 0 ||
            strcmp(a, "--arch") == 0 || strcmp(a, "--fusion") == 0 ||
            strcmp(a, "--schedule") == 0 || strcmp(a, "--precision") == 0 || strcmp(a, "--branches") == 0 ||
            strcmp(a, "--winograd") == 0 || strcmp(a, "--denormals") == 0 || strcmp(a, "--qdq") == 0) {
            if (i + 1 >= argc) return usage_error("compile: %s needs a value", a);
            const char *v = argv[++i];
            if (strcmp(a, "-o") == 0) o.output = v;
            else if (strcmp(a, "--winograd") == 0) {
                o.winograd_given = true;
                if (strcmp(v, "on") == 0) o.winograd = true;
                else if (strcmp(v, "off") == 0) o.winograd = false;
                else return usage_error("compile: --winograd '%s': expected on or off", v);
            } else if (strcmp(a, "--qdq") == 0) {
                if (strcmp(v, "auto") == 0) o.qdq = BD_QDQ_AUTO;
                else if (strcmp(v, "int8") == 0) o.qdq = BD_QDQ_INT8;
                else if (strcmp(v, "float") == 0) o.qdq = BD_QDQ_FLOAT;
                else return usage_error("compile: --qdq '%s': expected auto, int8 or float", v);
            } else if (strcmp(a, "--denormals") == 0) {
                o.denormals_given = true;
                if (strcmp(v, "flush") == 0) o.keep_denormals = false;
                else if (strcmp(v, "keep") == 0) o.keep_denormals = true;
                else return usage_error("compile: --denormals '%s': expected flush or keep", v);
            }
            else if (strcmp(a, "--emit-dir") == 0) o.emit_dir = v;
            else if (strcmp(a, "--fusion") == 0) {
                o.fusion_given = true;
                if (strcmp(v, "none") == 0) o.fusion = BD_FUSION_NONE;
                else if (strcmp(v, "op") == 0) o.fusion = BD_FUSION_OP;
                else if (strcmp(v, "block") == 0) o.fusion = BD_FUSION_BLOCK;
                else return usage_error("compile: --fusion '%s': expected none, op or block", v);
            } else if (strcmp(a, "--branches") == 0) {
                if (strcmp(v, "streams") == 0) o.fuse_branches = false;
                else if (strcmp(v, "fuse") == 0) o.fuse_branches = true;
                else return usage_error("compile: --branches '%s': expected streams or fuse", v);
            } else if (strcmp(a, "--precision") == 0) {
                if (strcmp(v, "fp32") == 0) o.precision = BD_PRECISION_FP32;
                else if (strcmp(v, "tf32") == 0) o.precision = BD_PRECISION_TF32;
                else if (strcmp(v, "fp16") == 0) o.precision = BD_PRECISION_FP16;
                else if (strcmp(v, "bf16") == 0) o.precision = BD_PRECISION_BF16;
                else return usage_error("compile: --precision '%s': expected fp32, tf32, fp16 or bf16", v);
            } else if (strcmp(a, "--schedule") == 0) {
                if (strcmp(v, "op") == 0) o.schedule = BD_SCHEDULE_OP;
                else if (strcmp(v, "block") == 0) o.schedule = BD_SCHEDULE_BLOCK;
                else return usage_error("compile: --schedule '%s': expected op or block", v);
            } else if (strcmp(a, "--arch") == 0) {
                /* It becomes one -march= argument: keep it to what such names contain. */
                if (!v[0] || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != strlen(v))
                    return usage_error("compile: --arch '%s' is not an architecture name", v);
                o.arch = v;
            }
            else if (!(o.target = bd_target_named(v))) {
                fprintf(stderr, "bdc: error: unknown target '%s' (cpu, cuda, hip or opencl)\n", v);
                return BD_ERR_UNSUPPORTED;
            }
        } else if (strcmp(a, "--max-weights") == 0 || strcmp(a, "--max-activations") == 0 ||
                   strcmp(a, "--max-nodes") == 0) {
            int64_t v;
            if (i + 1 >= argc) return usage_error("compile: %s needs a value", a);
            if (!parse_size(argv[++i], &v))
                return usage_error("compile: expected a positive size such as 512M, got '%s'", argv[i]);
            if (strcmp(a, "--max-weights") == 0) o.limits.max_weight_bytes = v;
            else if (strcmp(a, "--max-activations") == 0) o.limits.max_activation_bytes = v;
            else o.limits.max_nodes = v;
        } else if (strcmp(a, "--tile-threads") == 0) {
            if (i + 1 >= argc) return usage_error("compile: %s needs a value", a);
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 1024)
                return usage_error("compile: --tile-threads '%s': expected a count from 1 to 1024",
                                   argv[i]);
            o.tile_threads = (int)v;
        } else if (strcmp(a, "--lib") == 0) o.library = true;
        else if (strcmp(a, "--keep-temps") == 0) o.keep_temps = true;
        else if (strcmp(a, "--werror") == 0) o.werror = true;
        else if (strcmp(a, "-v") == 0) o.verbose = o.progress = true;
        else if (strcmp(a, "-q") == 0) o.progress = false;
        else if (strncmp(a, "--dump=", 7) == 0) {
            for (const char *p = a + 7; *p;) {
                size_t n = strcspn(p, ",");
                if (n == 5 && strncmp(p, "graph", 5) == 0) o.dumps.graph = true;
                else if (n == 5 && strncmp(p, "lower", 5) == 0) o.dumps.lower = true;
                else if (n == 5 && strncmp(p, "tiles", 5) == 0) o.dumps.tiles = true;
                else if (n == 4 && strncmp(p, "deps", 4) == 0) o.dumps.deps = true;
                else if (n == 4 && strncmp(p, "fuse", 4) == 0) o.dumps.fuse = true;
                else if (n == 5 && strncmp(p, "sched", 5) == 0) o.dumps.sched = true;
                else if (n == 6 && strncmp(p, "memory", 6) == 0) o.dumps.memory = true;
                else
                    return usage_error("compile: unknown dump '%s' (graph, lower, tiles, fuse, "
                                       "deps, sched, memory)", p);
                p += n + (p[n] == ',');
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) return usage_error("compile: unknown option '%s'", a);
        else if (o.model) return usage_error("compile: more than one model given ('%s')", a);
        else o.model = a;
    }
    if (!o.model) return usage_error("compile: %s", "no model given");
    if (!o.output) return usage_error("compile: %s", "no output given (-o OUT)");
    o.binds = *binds;
    bd_diag d = {0};
    bd_status s = bd_compile(&o, &d);
    if (s) fprintf(stderr, "bdc: error: %s\n", d.msg);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return BD_ERR_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("bdc %s\n", BDC_VERSION);
        return 0;
    }
    if (strcmp(cmd, "inspect") != 0 && strcmp(cmd, "compile") != 0 && strcmp(cmd, "analyze") != 0)
        return usage_error("unknown command '%s'", cmd);
    bd_input_binds binds = {0};
    binds_init(&binds, argc);
    int rc = strcmp(cmd, "inspect") == 0   ? cmd_inspect(argc - 2, argv + 2, &binds)
             : strcmp(cmd, "analyze") == 0 ? cmd_analyze(argc - 2, argv + 2, &binds)
                                           : cmd_compile(argc - 2, argv + 2, &binds);
    binds_free(&binds);
    return rc;
}
