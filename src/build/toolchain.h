/* toolchain.h — the one place where bdc runs native tools, keeps its temp folder and publishes
 * outputs.
 *
 * A build works inside a private folder (bd_workdir, mkdtemp under $TMPDIR, mode 0700), runs the C
 * compiler and `ar` there by argv (bd_tool_run, or bd_tool_run_all for several at once:
 * posix_spawnp, never a shell), and moves the result to the user's path with one rename
 * (bd_publish), so a half-written output never appears. While a workdir exists,
 * SIGINT/SIGTERM/SIGHUP kill the running tools' process groups, remove the folder
 * and any publish temp file, and then end bdc with that signal. One workdir at a time; call from
 * the main thread (bdc's compiler is single-threaded). */
#ifndef BD_TOOLCHAIN_H
#define BD_TOOLCHAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/blob.h"
#include "base/util.h"

#define BD_PATH_MAX 4096

typedef struct bd_workdir {
    char path[BD_PATH_MAX]; /* absolute, no trailing slash; "" when not created */
    bool keep;              /* --keep-temps: leave the folder and say where it is */
    bool active;            /* created and not yet cleaned up */
} bd_workdir;

/* Creates the folder from mkdtemp("$TMPDIR/bdc-XXXXXX") (TMPDIR unset or empty: /tmp) and installs
 * the signal handlers. BD_ERR_IO naming the folder when it cannot be made. */
bd_status bd_workdir_create(bd_workdir *w, bool keep, bd_diag *d);

/* Removes the folder recursively (or, with keep, prints "bdc: kept temporary files in DIR" to
 * stderr) and restores the previous signal handlers. Safe on a workdir that was never created. */
void bd_workdir_cleanup(bd_workdir *w);

/* Writes w->path + "/" + name into out and records the name, so an interruption before the next
 * tool run still removes the file. Every file bdc itself puts into the workdir gets its name from
 * here (or from bd_write_file). name is one plain component: no '/', not "." or "..". */
bd_status bd_workdir_path(bd_workdir *w, const char *name, char *out, size_t size, bd_diag *d);

/* Creates or overwrites path with exactly len bytes (mode 0644 before umask). A path inside the
 * active workdir is recorded for cleanup first. BD_ERR_IO naming the path; no partial file. */
bd_status bd_write_file(const char *path, const void *data, size_t len, bd_diag *d);
/* The same with a blob's bytes (its gaps as zeros). */
bd_status bd_write_blob_file(const char *path, const bd_blob *blob, bd_diag *d);

typedef struct bd_tool_cmd {
    char *const *argv; /* NULL-terminated; argv[0] is looked up in PATH unless it holds a '/' */
    const char *cwd;   /* folder to run in; NULL: bdc's own */
    bool verbose; /* -v: print the command line (shell-quoted, one line) and the tool's output */
    const char *what; /* for messages: "C compiler", "archiver"; NULL: "tool" */
    const char *hint; /* appended when argv[0] is not found: "set CC or install gcc"; may be NULL */
    char *out;        /* optional: receives the tool's stdout, NUL-terminated, cut to out_size-1 */
    size_t out_size;
} bd_tool_cmd;

/* Runs the tool with stdin from /dev/null, stdout and stderr captured, LC_ALL=C, TMPDIR pointing
 * at the active workdir (so the tool's own temp files are removed with it), in its own process
 * group. A non-zero exit or a signal gives BD_ERR_TOOLCHAIN with the tool, its exit status and the
 * first and last lines of its stderr; the captured stderr (at most 64 KiB: head and tail) goes to
 * bdc's stderr. A missing program is BD_ERR_TOOLCHAIN too; a missing cwd is BD_ERR_IO. */
bd_status bd_tool_run(const bd_tool_cmd *cmd, bd_diag *d);

/* Runs n (1..BD_TOOL_MAX_JOBS) tools at once, each as bd_tool_run would, and waits for all of
 * them; an interruption kills them all. The status is that of the first one (in order) that could
 * not start or failed, its stderr shown as bd_tool_run shows it. */
enum { BD_TOOL_MAX_JOBS = 8 };
bd_status bd_tool_run_all(const bd_tool_cmd *cmds, int n, bd_diag *d);

/* Fails early, before a long build, when final_path cannot be an output: its folder is missing or
 * not writable, or it names a folder. BD_ERR_IO naming the path. */
bd_status bd_output_check(const char *final_path, bd_diag *d);

/* Moves tmp_path to final_path atomically. Across file systems (EXDEV) it copies to
 * final_path + ".bdc-tmp-XXXXXX", fsyncs, and renames that; the file's permission bits (0755 for
 * an executable) are kept. On failure final_path is untouched, no temp file is left beside it, and
 * the status is BD_ERR_IO naming the path. On success tmp_path is gone. */
bd_status bd_publish(const char *tmp_path, const char *final_path, bd_diag *d);

/* bd_publish of the executable exe_path with `weights` appended, in the layout the runtime maps
 * (runtime/bdrt.h, "the model's constants"): the program's bytes, zeros up to a multiple of
 * BD_WEIGHTS_ALIGN, the weights, and a 32-byte trailer ("bdcwts01", then the weights' offset,
 * their byte count and the two's sum as little-endian uint64). Always a copy beside final_path
 * renamed into place, the weights written once, straight from the model's tensors; no fsync (as
 * with bd_publish's rename, and it would cost half a second per 650 MB). */
enum { BD_WEIGHTS_ALIGN = 65536 };
bd_status bd_publish_executable(const char *exe_path, const char *final_path, const bd_blob *weights,
                                bd_diag *d);

/* The C compiler: $CC if set and non-empty, else "cc". $CC names one program (a name looked up in
 * PATH or a path) and is not split on spaces, so CC="ccache gcc" is reported as not found rather
 * than handed to a shell; wrap such a command in a script instead. */
const char *bd_cc(void);

/* Testing only: make bd_publish behave as if rename reported EXDEV. */
extern bool bd_publish_force_exdev;

#endif
