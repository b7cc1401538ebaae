/* main.c — the `bdc` command line: parses arguments, runs one command, turns its status into the
 * documented exit code and a one-line message on stderr. */
#include <stdio.h>
#include <string.h>

#include "inspect.h"

static const char usage_text[] =
    "usage: bdc COMMAND [ARGS]\n"
    "\n"
    "bdc is an ahead-of-time compiler for ONNX models.\n"
    "\n"
    "commands:\n"
    "  inspect MODEL.onnx [--json]   load, verify and shape-infer MODEL; print its inputs, outputs,\n"
    "                                op histogram, parameters, FLOPs and unsupported nodes\n"
    "  --version                     print the version\n"
    "  --help                        print this help\n"
    "\n"
    "exit codes: 0 ok, 1 usage, 2 invalid model, 3 unsupported op/opset/dtype,\n"
    "            4 I/O or resource limit, 5 native toolchain failed\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "bdc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'bdc --help'.\n");
    return BD_ERR_USAGE;
}

static int cmd_inspect(int argc, char **argv) {
    const char *model = NULL;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) return usage_error("inspect: unknown option '%s'", argv[i]);
        else if (model) return usage_error("inspect: more than one model given ('%s')", argv[i]);
        else model = argv[i];
    }
    if (!model) return usage_error("inspect: %s", "no model given");
    bd_diag d = {0};
    bd_status s = bd_inspect(model, json, &d);
    fflush(stdout);
    if (s) fprintf(stderr, "bdc: error: %s\n", d.msg);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage_text, stderr);
        return BD_ERR_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("bdc %s\n", BDC_VERSION);
        return 0;
    }
    if (strcmp(cmd, "inspect") == 0) return cmd_inspect(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}
