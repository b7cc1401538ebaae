/* test_toolchain.c — tests for src/toolchain.c: running tools (success, failure, signals, missing
 * programs, huge output, verbose lines), the workdir (creation, cleanup, keep), publishing (same
 * file system, EXDEV copy, bad output paths) and interruption (SIGINT while a tool runs, SIGTERM
 * between tools, ignored SIGHUP, --keep-temps), each interruption in a forked child.
 *
 * Everything happens under one private folder; TMPDIR points into it, so a leaked workdir shows up
 * as a failure at the end. Prints one line per check and "N passed, M failed"; exits 1 on failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build/toolchain.h"

static int npass, nfail;
static char root[1024];   /* the test's own folder */
static char tmpdir[1100]; /* $TMPDIR for workdirs: root/tmp */

static void check(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check(bool ok, const char *name, const char *fmt, ...) {
    if (ok) {
        printf("ok    %s\n", name);
        npass++;
    } else {
        va_list ap;
        va_start(ap, fmt);
        printf("FAIL  %s: ", name);
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
        nfail++;
    }
    fflush(stdout);
}

static void skip(const char *name, const char *why) {
    printf("skip  %s: %s\n", name, why);
    fflush(stdout);
}

/* ---- helpers ---- */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)f;
    if (flag == FTW_DP)
        chmod(p, 0700), rmdir(p);
    else
        unlink(p);
    return 0;
}

static void rm_rf(const char *p) {
    nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

static char *read_all(const char *p) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t k;
    while (s && (k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n - 1 == 0) {
            char *t = realloc(s, cap *= 2);
            if (!t) free(s);
            s = t;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

static int count_entries(const char *dir, const char *prefix) {
    DIR *dp = opendir(dir);
    if (!dp) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            !strncmp(e->d_name, prefix, strlen(prefix)))
            n++;
    closedir(dp);
    return n;
}

/* Redirects fd 2 to a file between begin and end; end returns what was written (malloc'd). */
static int saved_stderr = -1;
static char stderr_file[BD_PATH_MAX + 16];

static void stderr_begin(void) {
    fflush(stderr);
    snprintf(stderr_file, sizeof stderr_file, "%s/stderr.txt", root);
    int fd = open(stderr_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}

static char *stderr_end(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    char *s = read_all(stderr_file);
    return s ? s : strdup("");
}

static bd_status run(char *const *argv, const char *cwd, char *out, size_t out_size, bd_diag *d) {
    memset(d, 0, sizeof *d);
    bd_tool_cmd c = {
        .argv = argv, .cwd = cwd, .what = "test tool", .out = out, .out_size = out_size};
    return bd_tool_run(&c, d);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The pid of a child of `parent` whose command is `comm`, waiting up to 5 s; 0 if none. */
static pid_t find_child_proc(pid_t parent, const char *comm) {
    for (int tries = 0; tries < 500; tries++) {
        DIR *dp = opendir("/proc");
        if (!dp) return 0;
        struct dirent *e;
        pid_t found = 0;
        while (!found && (e = readdir(dp))) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            char p[300], buf[512];
            snprintf(p, sizeof p, "/proc/%s/stat", e->d_name);
            FILE *f = fopen(p, "r");
            if (!f) continue;
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
            if (!open_paren || !close_paren) continue;
            int ppid = 0;
            char state;
            if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) continue;
            size_t clen = (size_t)(close_paren - open_paren - 1);
            if (ppid == parent && clen == strlen(comm) && !strncmp(open_paren + 1, comm, clen))
                found = atoi(e->d_name);
        }
        closedir(dp);
        if (found) return found;
        sleep_ms(10);
    }
    return 0;
}

static bool proc_gone(pid_t pid) {
    for (int tries = 0; tries < 200; tries++) {
        char p[64], buf[512];
        snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(p, "r");
        if (!f) return true;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *cp = strrchr(buf, ')');
        if (cp && cp[1] == ' ' && cp[2] == 'Z') return true; /* dead, waiting for its reaper */
        sleep_ms(10);
    }
    return false;
}

/* ---- running tools ---- */

static void test_run_basic(void) {
    bd_diag d = {0};
    char out[256];
    char *t[] = {"true", NULL};
    check(run(t, NULL, NULL, 0, &d) == BD_OK, "run-true", "status %d: %s", d.status, d.msg);

    char *echo[] = {"echo", "hello", NULL};
    bd_status s = run(echo, NULL, out, sizeof out, &d);
    check(s == BD_OK && !strcmp(out, "hello\n"), "run-stdout", "status %d, out '%s'", s, out);

    char *echo10[] = {"echo", "abcdefghij", NULL};
    s = run(echo10, NULL, out, 5, &d);
    check(s == BD_OK && !strcmp(out, "abcd"), "run-stdout-cut", "status %d, out '%s'", s, out);

    char *pwd[] = {"pwd", NULL};
    s = run(pwd, "/", out, sizeof out, &d);
    check(s == BD_OK && !strcmp(out, "/\n"), "run-cwd", "status %d, out '%s'", s, out);

    /* stdin is /dev/null: cat ends at once instead of waiting for the terminal */
    char *cat[] = {"cat", NULL};
    s = run(cat, NULL, out, sizeof out, &d);
    check(s == BD_OK && !strcmp(out, ""), "run-stdin-null", "status %d, out '%s'", s, out);

    /* own process group: pgrp (field 5 of /proc/self/stat) equals the tool's pid */
    char *stat[] = {"cat", "/proc/self/stat", NULL};
    s = run(stat, NULL, out, sizeof out, &d);
    int pid = 0, pgrp = 0;
    char *cp = strrchr(out, ')');
    if (s == BD_OK && cp) sscanf(out, "%d", &pid), sscanf(cp + 1, " %*c %*d %d", &pgrp);
    check(s == BD_OK && pid > 0 && pid == pgrp && pgrp != (int)getpgrp(), "run-own-pgroup",
          "status %d, pid %d, pgrp %d", s, pid, pgrp);

    char *nocwd[] = {"true", NULL};
    s = run(nocwd, "/nonexistent-bdc-folder", NULL, 0, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "nonexistent-bdc-folder"), "run-missing-cwd",
          "status %d: %s", s, d.msg);
}

static void test_run_env(void) {
    bd_diag d;
    char out[BD_PATH_MAX + 64];
    setenv("LC_ALL", "fr_FR.UTF-8", 1);
    setenv("BDC_TEST_VAR", "inherited", 1);
    char *sh[] = {"sh", "-c", "printf '%s|%s' \"$LC_ALL\" \"$BDC_TEST_VAR\"", NULL};
    bd_status s = run(sh, NULL, out, sizeof out, &d);
    check(s == BD_OK && !strcmp(out, "C|inherited"), "run-env-locale", "status %d, out '%s'", s,
          out);
    unsetenv("LC_ALL");
    unsetenv("BDC_TEST_VAR");

    /* with a workdir, the tool's TMPDIR is the workdir */
    bd_workdir w;
    memset(&d, 0, sizeof d);
    if (bd_workdir_create(&w, false, &d) != BD_OK) {
        check(false, "run-env-tmpdir", "workdir: %s", d.msg);
        return;
    }
    char *tmp[] = {"sh", "-c", "printf '%s' \"$TMPDIR\"", NULL};
    s = run(tmp, NULL, out, sizeof out, &d);
    check(s == BD_OK && !strcmp(out, w.path), "run-env-tmpdir", "out '%s', want '%s'", out, w.path);
    bd_workdir_cleanup(&w);
}

static void test_run_failures(void) {
    bd_diag d;
    char *fail[] = {"sh", "-c",
                    "echo first-line >&2; echo middle-line >&2; echo; echo last-line >&2; exit 3",
                    NULL};
    stderr_begin();
    bd_status s = run(fail, NULL, NULL, 0, &d);
    char *err = stderr_end();
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "test tool 'sh'") &&
              strstr(d.msg, "exit status 3") && strstr(d.msg, "first-line") &&
              strstr(d.msg, "last-line") && !strstr(d.msg, "middle-line"),
          "run-fail-message", "status %d: %s", s, d.msg);
    check(strstr(err, "first-line\nmiddle-line\nlast-line\n") != NULL, "run-fail-stderr-shown",
          "stderr was '%s'", err);
    free(err);

    char *one[] = {"sh", "-c", "echo only-line >&2; exit 1", NULL};
    stderr_begin();
    s = run(one, NULL, NULL, 0, &d);
    free(stderr_end());
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "(exit status 1): only-line") &&
              !strstr(d.msg, "..."),
          "run-fail-one-line", "status %d: %s", s, d.msg);

    char *quiet[] = {"false", NULL};
    stderr_begin();
    s = run(quiet, NULL, NULL, 0, &d);
    free(stderr_end());
    check(s == BD_ERR_TOOLCHAIN && !strcmp(d.msg, "test tool 'false' failed (exit status 1)"),
          "run-fail-silent", "status %d: %s", s, d.msg);

    char *killed[] = {"sh", "-c", "kill -9 $$", NULL};
    stderr_begin();
    s = run(killed, NULL, NULL, 0, &d);
    free(stderr_end());
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "killed by signal 9"), "run-fail-signal",
          "status %d: %s", s, d.msg);

    /* 2 MB on each pipe: must not deadlock; stderr kept bounded; the last line still reported */
    char *big[] = {"sh", "-c",
                   "head -c 2000000 /dev/zero; head -c 2000000 /dev/zero | tr '\\0' y >&2;"
                   " echo >&2; echo the-end >&2; exit 2",
                   NULL};
    stderr_begin();
    s = run(big, NULL, NULL, 0, &d);
    err = stderr_end();
    size_t n = strlen(err);
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "exit status 2") && strstr(d.msg, "the-end"),
          "run-big-output", "status %d: %s", s, d.msg);
    check(n <= 64 * 1024 + 200 && strstr(err, "bytes omitted") && strstr(err, "the-end\n"),
          "run-big-stderr-bounded", "%zu bytes shown", n);
    free(err);
}

static void test_run_missing(void) {
    bd_diag d;
    memset(&d, 0, sizeof d);
    char *argv[] = {"bdc-no-such-tool", "-c", "x.c", NULL};
    bd_tool_cmd c = {.argv = argv, .what = "C compiler", .hint = "set CC or install gcc"};
    bd_status s = bd_tool_run(&c, &d);
    check(s == BD_ERR_TOOLCHAIN &&
              !strcmp(d.msg, "C compiler 'bdc-no-such-tool' not found (set CC or install gcc)"),
          "run-missing-tool", "status %d: %s", s, d.msg);

    memset(&d, 0, sizeof d);
    char *path[] = {"/nonexistent/bin/ar", NULL};
    bd_tool_cmd c2 = {.argv = path, .what = "archiver"};
    s = bd_tool_run(&c2, &d);
    check(s == BD_ERR_TOOLCHAIN && !strcmp(d.msg, "archiver '/nonexistent/bin/ar' not found"),
          "run-missing-path", "status %d: %s", s, d.msg);

    /* present but not executable */
    char noexec[BD_PATH_MAX + 32];
    snprintf(noexec, sizeof noexec, "%s/not-executable", root);
    FILE *f = fopen(noexec, "w");
    if (f) fputs("#!/bin/sh\n", f), fclose(f);
    chmod(noexec, 0644);
    memset(&d, 0, sizeof d);
    char *ne[] = {noexec, NULL};
    bd_tool_cmd c4 = {.argv = ne, .what = "archiver"};
    s = bd_tool_run(&c4, &d);
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "cannot run archiver") &&
              strstr(d.msg, "Permission denied"),
          "run-not-executable", "status %d: %s", s, d.msg);
    unlink(noexec);

    /* CC is one program name, never split */
    setenv("CC", "ccache gcc", 1);
    memset(&d, 0, sizeof d);
    char *cc[] = {(char *)bd_cc(), "--version", NULL};
    bd_tool_cmd c3 = {.argv = cc, .what = "C compiler", .hint = "set CC or install gcc"};
    s = bd_tool_run(&c3, &d);
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "'ccache gcc' not found") &&
              strstr(d.msg, "not split"),
          "run-cc-not-split", "status %d: %s", s, d.msg);
    setenv("CC", "", 1);
    check(!strcmp(bd_cc(), "cc"), "cc-empty", "got '%s'", bd_cc());
    setenv("CC", "clang-14", 1);
    check(!strcmp(bd_cc(), "clang-14"), "cc-env", "got '%s'", bd_cc());
    unsetenv("CC");
    check(!strcmp(bd_cc(), "cc"), "cc-default", "got '%s'", bd_cc());
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Several tools at once: they overlap in time, each keeps its own output, the first failure in
 * order is reported with its stderr, and a tool that cannot start ends the ones already running. */
static void test_run_all(void) {
    bd_diag d;
    memset(&d, 0, sizeof d);
    /* each waits for the other's file: only tools that run at the same time both finish */
    char a_sh[] = "touch a.ready; i=0; while [ ! -e b.ready ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done; "
                  "[ -e b.ready ] && printf A";
    char b_sh[] = "touch b.ready; i=0; while [ ! -e a.ready ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done; "
                  "[ -e a.ready ] && printf B";
    char *a[] = {"sh", "-c", a_sh, NULL}, *b[] = {"sh", "-c", b_sh, NULL};
    char out_a[16] = "", out_b[16] = "";
    bd_tool_cmd cmds[2] = {{.argv = a, .cwd = root, .out = out_a, .out_size = sizeof out_a},
                           {.argv = b, .cwd = root, .out = out_b, .out_size = sizeof out_b}};
    bd_status s = bd_tool_run_all(cmds, 2, &d);
    check(s == BD_OK && !strcmp(out_a, "A") && !strcmp(out_b, "B"), "run-all-concurrent",
          "status %d, outputs '%s' '%s': %s", s, out_a, out_b, d.msg);
    char ra[BD_PATH_MAX + 16], rb[BD_PATH_MAX + 16];
    snprintf(ra, sizeof ra, "%s/a.ready", root);
    snprintf(rb, sizeof rb, "%s/b.ready", root);
    unlink(ra);
    unlink(rb);

    /* the second and third fail: the second is the one reported, and its stderr shown */
    char *ok[] = {"true", NULL};
    char *f2[] = {"sh", "-c", "echo second-failed >&2; exit 3", NULL};
    char *f3[] = {"sh", "-c", "echo third-failed >&2; exit 4", NULL};
    bd_tool_cmd fails[3] = {{.argv = ok, .what = "first"}, {.argv = f2, .what = "second"},
                            {.argv = f3, .what = "third"}};
    memset(&d, 0, sizeof d);
    stderr_begin();
    s = bd_tool_run_all(fails, 3, &d);
    char *err = stderr_end();
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "second 'sh' failed (exit status 3)") &&
              strstr(d.msg, "second-failed") && strstr(err, "second-failed"),
          "run-all-first-failure", "status %d: %s (stderr '%s')", s, d.msg, err);
    free(err);

    /* a missing tool after one that started: reported as missing, the started one ended */
    char *slow[] = {"sleep", "30", NULL}, *none[] = {"bdc-no-such-tool", NULL};
    bd_tool_cmd mixed[2] = {{.argv = slow, .what = "sleeper"},
                            {.argv = none, .what = "C compiler", .hint = "set CC or install gcc"}};
    memset(&d, 0, sizeof d);
    double t0 = now_s();
    s = bd_tool_run_all(mixed, 2, &d);
    check(s == BD_ERR_TOOLCHAIN && strstr(d.msg, "'bdc-no-such-tool' not found") && now_s() - t0 < 10,
          "run-all-missing-ends-others", "status %d after %.1f s: %s", s, now_s() - t0, d.msg);
}

static void test_run_verbose(void) {
    bd_diag d;
    memset(&d, 0, sizeof d);
    char *argv[] = {"true", "a b", "it's", "x\ny", "", "plain-1.c", "-DX=1", NULL};
    bd_tool_cmd c = {.argv = argv, .cwd = "/", .verbose = true};
    stderr_begin();
    bd_status s = bd_tool_run(&c, &d);
    char *err = stderr_end();
    const char *want = "cd / && true 'a b' 'it'\\''s' $'x\\ny' '' plain-1.c -DX=1\n";
    check(s == BD_OK && !strcmp(err, want), "verbose-command-line", "got '%s'", err);
    free(err);

    /* the printed line, pasted into a shell, passes the same arguments */
    char *args[] = {"printf", "[%s]", "a b", "it's", "$HOME", "x\ty", NULL};
    bd_tool_cmd c2 = {.argv = args, .verbose = true};
    stderr_begin();
    s = bd_tool_run(&c2, &d);
    err = stderr_end();
    char *nl = strchr(err, '\n');
    if (nl) *nl = 0;
    char out[256] = "";
    char *bash[] = {"bash", "-c", err, NULL};
    bd_status s2 = run(bash, NULL, out, sizeof out, &d);
    check(s == BD_OK && s2 == BD_OK && !strcmp(out, "[a b][it's][$HOME][x\ty]"),
          "verbose-copy-paste", "line '%s' gave '%s'", err, out);
    /* verbose also shows the tool's own output */
    check(nl && strstr(nl + 1, "[a b]"), "verbose-tool-output", "stderr '%s'", nl ? nl + 1 : "");
    free(err);
}

/* ---- workdir ---- */

static void test_workdir(void) {
    bd_diag d = {0};
    bd_workdir w;
    bd_status s = bd_workdir_create(&w, false, &d);
    struct stat st;
    char parent[BD_PATH_MAX];
    snprintf(parent, sizeof parent, "%s/bdc-", tmpdir);
    check(s == BD_OK && stat(w.path, &st) == 0 && S_ISDIR(st.st_mode) &&
              (st.st_mode & 0777) == 0700 && !strncmp(w.path, parent, strlen(parent)),
          "workdir-create", "status %d, path '%s': %s", s, w.path, d.msg);
    struct sigaction sa;
    sigaction(SIGINT, NULL, &sa);
    check(sa.sa_handler != SIG_DFL, "workdir-handler-installed", "SIGINT handler not set");

    /* files from every source: bd_write_file, bd_workdir_path + stdio, a tool, nested folders */
    char p[BD_PATH_MAX + 64];
    s = bd_workdir_path(&w, "model.c", p, sizeof p, &d);
    bd_status s2 = bd_write_file(p, "int x;\n", 7, &d);
    char *content = read_all(p);
    check(s == BD_OK && s2 == BD_OK && content && !strcmp(content, "int x;\n"), "write-file", "%s",
          d.msg);
    free(content);
    s = bd_workdir_path(&w, "weights.s", p, sizeof p, &d);
    FILE *f = s == BD_OK ? fopen(p, "w") : NULL;
    if (f) fputs(".incbin\n", f), fclose(f);
    char *mk[] = {"sh", "-c", "mkdir -p sub/deeper && touch sub/deeper/x.o a.out && chmod 500 sub",
                  NULL};
    s = run(mk, w.path, NULL, 0, &d);
    check(s == BD_OK && f, "workdir-populate", "%s", d.msg);

    const char *bad[] = {"", ".", "..", "a/b", "../x"};
    bool all_bad = true;
    for (size_t i = 0; i < BD_COUNT(bad); i++) {
        memset(&d, 0, sizeof d);
        if (bd_workdir_path(&w, bad[i], p, sizeof p, &d) != BD_ERR_IO) all_bad = false;
    }
    check(all_bad, "workdir-path-invalid", "a bad name was accepted");
    memset(&d, 0, sizeof d);
    char small[8];
    check(bd_workdir_path(&w, "long-name.c", small, sizeof small, &d) == BD_ERR_IO,
          "workdir-path-too-long", "accepted");

    char path[BD_PATH_MAX];
    strcpy(path, w.path);
    bd_workdir_cleanup(&w);
    sigaction(SIGINT, NULL, &sa);
    check(!exists(path) && !w.active, "workdir-cleanup", "'%s' still exists", path);
    check(sa.sa_handler == SIG_DFL, "workdir-handler-restored", "SIGINT handler still set");
    bd_workdir_cleanup(&w); /* twice is harmless */

    /* keep */
    memset(&d, 0, sizeof d);
    s = bd_workdir_create(&w, true, &d);
    strcpy(path, w.path);
    stderr_begin();
    bd_workdir_cleanup(&w);
    char *err = stderr_end();
    char want[BD_PATH_MAX + 64];
    snprintf(want, sizeof want, "bdc: kept temporary files in %s\n", path);
    check(s == BD_OK && exists(path) && !strcmp(err, want), "workdir-keep", "stderr '%s'", err);
    free(err);
    rm_rf(path);

    /* TMPDIR that does not exist */
    char missing[BD_PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/no-such-dir", root);
    setenv("TMPDIR", missing, 1);
    memset(&d, 0, sizeof d);
    s = bd_workdir_create(&w, false, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "no-such-dir") && !w.active, "workdir-bad-tmpdir",
          "status %d: %s", s, d.msg);
    setenv("TMPDIR", tmpdir, 1);

    memset(&d, 0, sizeof d);
    snprintf(p, sizeof p, "%s/no-such-dir/f", root);
    s = bd_write_file(p, "x", 1, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "no-such-dir/f"), "write-file-missing-dir",
          "status %d: %s", s, d.msg);
}

/* ---- publish ---- */

/* A 0755 file "name" in a fresh workdir holding text; returns its path in p. */
static bool make_exe(bd_workdir *w, const char *name, const char *text, char *p, size_t n) {
    bd_diag d = {0};
    return bd_workdir_path(w, name, p, n, &d) == BD_OK &&
           bd_write_file(p, text, strlen(text), &d) == BD_OK && chmod(p, 0755) == 0;
}

static void test_publish(void) {
    bd_diag d = {0};
    bd_workdir w;
    if (bd_workdir_create(&w, false, &d) != BD_OK) {
        check(false, "publish-setup", "%s", d.msg);
        return;
    }
    char outdir[BD_PATH_MAX + 16], final[BD_PATH_MAX + 32], src[BD_PATH_MAX + 64];
    snprintf(outdir, sizeof outdir, "%s/out", root);
    mkdir(outdir, 0755);
    snprintf(final, sizeof final, "%s/prog", outdir);
    struct stat st;

    check(bd_output_check(final, &d) == BD_OK, "output-check-ok", "%s", d.msg);

    make_exe(&w, "a.out", "one", src, sizeof src);
    bd_status s = bd_publish(src, final, &d);
    char *c = read_all(final);
    check(s == BD_OK && c && !strcmp(c, "one") && stat(final, &st) == 0 &&
              (st.st_mode & 0777) == 0755 && !exists(src),
          "publish-same-fs", "status %d: %s", s, d.msg);
    free(c);

    make_exe(&w, "a.out", "two", src, sizeof src);
    s = bd_publish(src, final, &d);
    c = read_all(final);
    check(s == BD_OK && c && !strcmp(c, "two"), "publish-overwrite", "status %d: %s", s, d.msg);
    free(c);

    bd_publish_force_exdev = true;
    make_exe(&w, "a.out", "three", src, sizeof src);
    s = bd_publish(src, final, &d);
    c = read_all(final);
    check(s == BD_OK && c && !strcmp(c, "three") && stat(final, &st) == 0 &&
              (st.st_mode & 0777) == 0755 && !exists(src) && count_entries(outdir, "prog.") == 0,
          "publish-exdev-copy", "status %d: %s", s, d.msg);
    free(c);

    /* a plain (non-executable) file keeps 0644 through the copy */
    char lib[BD_PATH_MAX + 32];
    snprintf(lib, sizeof lib, "%s/libm.a", outdir);
    bd_workdir_path(&w, "libm.a", src, sizeof src, &d);
    bd_write_file(src, "!<arch>\n", 8, &d);
    chmod(src, 0644);
    s = bd_publish(src, lib, &d);
    check(s == BD_OK && stat(lib, &st) == 0 && (st.st_mode & 0777) == 0644, "publish-exdev-mode",
          "status %d, mode %o", s, (unsigned)st.st_mode & 0777);

    /* copy succeeds, final rename fails (target is a folder): nothing left beside it */
    char folder[BD_PATH_MAX + 32];
    snprintf(folder, sizeof folder, "%s/afolder", outdir);
    mkdir(folder, 0755);
    make_exe(&w, "a.out", "four", src, sizeof src);
    memset(&d, 0, sizeof d);
    s = bd_publish(src, folder, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "afolder") && count_entries(outdir, "afolder.") == 0 &&
              stat(folder, &st) == 0 && S_ISDIR(st.st_mode) && exists(src),
          "publish-exdev-fail-clean", "status %d: %s", s, d.msg);

    /* missing output folder, through the copy path */
    char nodir[BD_PATH_MAX + 32];
    snprintf(nodir, sizeof nodir, "%s/missing/prog", outdir);
    memset(&d, 0, sizeof d);
    s = bd_publish(src, nodir, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "missing/prog") && exists(src),
          "publish-exdev-missing-dir", "status %d: %s", s, d.msg);
    bd_publish_force_exdev = false;

    /* missing output folder, plain rename */
    memset(&d, 0, sizeof d);
    s = bd_publish(src, nodir, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "missing/prog") && strstr(d.msg, "No such file") &&
              exists(src) && count_entries(outdir, "missing") == 0,
          "publish-missing-dir", "status %d: %s", s, d.msg);
    memset(&d, 0, sizeof d);
    s = bd_output_check(nodir, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "missing"), "output-check-missing-dir", "status %d: %s",
          s, d.msg);

    /* onto an existing folder */
    memset(&d, 0, sizeof d);
    s = bd_publish(src, folder, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "afolder") && stat(folder, &st) == 0 &&
              S_ISDIR(st.st_mode),
          "publish-onto-folder", "status %d: %s", s, d.msg);
    memset(&d, 0, sizeof d);
    s = bd_output_check(folder, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "is a folder"), "output-check-folder", "status %d: %s", s,
          d.msg);

    /* a place nobody may write, even root: /proc (a real EXDEV, then mkstemp fails) */
    memset(&d, 0, sizeof d);
    s = bd_publish(src, "/proc/bdc-test-output", &d);
    check(s == BD_ERR_IO && strstr(d.msg, "/proc/bdc-test-output") && exists(src),
          "publish-unwritable", "status %d: %s", s, d.msg);

    if (geteuid() != 0) {
        char ro[BD_PATH_MAX + 32], rofinal[BD_PATH_MAX + 48];
        snprintf(ro, sizeof ro, "%s/readonly", root);
        mkdir(ro, 0555);
        snprintf(rofinal, sizeof rofinal, "%s/prog", ro);
        memset(&d, 0, sizeof d);
        s = bd_output_check(rofinal, &d);
        check(s == BD_ERR_IO && strstr(d.msg, "readonly"), "output-check-readonly", "status %d: %s",
              s, d.msg);
    } else {
        skip("output-check-readonly", "running as root, permissions do not apply");
    }

    /* a real cross-device rename, from /dev/shm */
    struct stat shm, rt;
    if (stat("/dev/shm", &shm) == 0 && stat(root, &rt) == 0 && shm.st_dev != rt.st_dev &&
        access("/dev/shm", W_OK) == 0) {
        char shmfile[64];
        snprintf(shmfile, sizeof shmfile, "/dev/shm/bdc-test-%d", (int)getpid());
        FILE *f = fopen(shmfile, "w");
        if (f) fputs("shm", f), fclose(f);
        chmod(shmfile, 0755);
        memset(&d, 0, sizeof d);
        s = bd_publish(shmfile, final, &d);
        c = read_all(final);
        check(s == BD_OK && c && !strcmp(c, "shm") && stat(final, &st) == 0 &&
                  (st.st_mode & 0777) == 0755 && !exists(shmfile) &&
                  count_entries(outdir, "prog.") == 0,
              "publish-cross-device", "status %d: %s", s, d.msg);
        free(c);
        unlink(shmfile);
    } else {
        skip("publish-cross-device", "/dev/shm missing, unwritable or on the same file system");
    }
    bd_workdir_cleanup(&w);
}

/* ---- interruption ---- */

/* Forks a child that runs body(w) with a fresh workdir, reports the workdir path through a pipe
 * and never returns. The parent gets the path and the child's pid. */
typedef void (*child_body)(bd_workdir *w, int report_fd);

static pid_t fork_child(child_body body, bool keep, void (*pre)(void), char *path, size_t n) {
    int p[2];
    if (pipe(p) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (pre) pre();
        bd_workdir w;
        bd_diag d = {0};
        if (bd_workdir_create(&w, keep, &d) != BD_OK) _exit(10);
        body(&w, p[1]);
        _exit(11);
    }
    close(p[1]);
    size_t got = 0;
    ssize_t k;
    while (got < n - 1 && (k = read(p[0], path + got, n - 1 - got)) > 0) {
        got += (size_t)k;
        if (memchr(path, '\n', got)) break;
    }
    path[got] = 0;
    char *nl = strchr(path, '\n');
    if (nl) *nl = 0;
    close(p[0]);
    return pid;
}

static void report(int fd, const char *path) {
    char buf[BD_PATH_MAX + 2];
    int n = snprintf(buf, sizeof buf, "%s\n", path);
    if (write(fd, buf, (size_t)n) != n) _exit(12);
}

static void body_sleep(bd_workdir *w, int fd) {
    bd_diag d = {0};
    char p[BD_PATH_MAX + 32];
    bd_workdir_path(w, "model.c", p, sizeof p, &d);
    bd_write_file(p, "int x;\n", 7, &d);
    report(fd, w->path);
    char *argv[] = {"sleep", "30", NULL};
    bd_tool_cmd c = {.argv = argv, .cwd = w->path, .what = "test tool"};
    bd_tool_run(&c, &d);
    _exit(13); /* not reached: the signal ends the process */
}

static void body_idle(bd_workdir *w, int fd) {
    bd_diag d = {0};
    char p[BD_PATH_MAX + 32];
    bd_workdir_path(w, "model.c", p, sizeof p, &d);
    bd_write_file(p, "int x;\n", 7, &d);
    bd_workdir_path(w, "weights.s", p, sizeof p, &d);
    FILE *f = fopen(p, "w");
    if (f) fputs(".incbin\n", f), fclose(f);
    char *argv[] = {"sh", "-c", "mkdir -p sub/deeper && touch sub/deeper/x.o model.o", NULL};
    bd_tool_cmd c = {.argv = argv, .cwd = w->path};
    if (bd_tool_run(&c, &d) != BD_OK) _exit(14);
    report(fd, w->path);
    for (;;)
        pause();
}

static int wait_child(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}

/* Writes files and runs short tools in a loop, so signals land in every phase. */
static void body_busy(bd_workdir *w, int fd) {
    bd_diag d = {0};
    report(fd, w->path);
    char p[BD_PATH_MAX + 32], name[32];
    for (unsigned i = 0;; i++) {
        snprintf(name, sizeof name, "f%u.c", i % 64);
        bd_workdir_path(w, name, p, sizeof p, &d);
        bd_write_file(p, "int x;\n", 7, &d);
        snprintf(name, sizeof name, "t%u.o", i % 64);
        char *argv[] = {"touch", name, NULL};
        bd_tool_cmd c = {.argv = argv, .cwd = w->path};
        bd_tool_run(&c, &d);
    }
}

/* bd_publish_executable: the program, zeros to 64 KiB, the blob's parts at their offsets with
 * zeros between, the trailer; the program's mode; a failure leaves nothing beside the output. */
static uint64_t le64_at(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void test_publish_executable(void) {
    bd_diag d = {0};
    bd_workdir w;
    if (bd_workdir_create(&w, false, &d) != BD_OK) {
        check(false, "publish-exe-setup", "%s", d.msg);
        return;
    }
    char outdir[BD_PATH_MAX + 16], final[BD_PATH_MAX + 32], src[BD_PATH_MAX + 64];
    snprintf(outdir, sizeof outdir, "%s/out-exe", root);
    mkdir(outdir, 0755);
    snprintf(final, sizeof final, "%s/prog", outdir);
    make_exe(&w, "a.out", "program bytes", src, sizeof src);
    static unsigned char big[200001]; /* not a multiple of 64: a gap follows */
    for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)(i * 7 + 1);
    bd_blob b = BD_BLOB_INIT;
    int64_t o1 = bd_blob_add(&b, "abc", 3), o2 = bd_blob_add_ref(&b, big, sizeof big),
            o3 = bd_blob_add(&b, "z", 1);
    check(o1 == 0 && o2 == 64 && o3 == (int64_t)((64 + sizeof big + 63) / 64 * 64) &&
              b.len == (size_t)o3 + 1,
          "blob-offsets", "%lld %lld %lld, len %zu", (long long)o1, (long long)o2, (long long)o3, b.len);
    bd_status s = bd_publish_executable(src, final, &b, &d);
    struct stat st;
    FILE *f = fopen(final, "rb");
    unsigned char *all = NULL;
    size_t n = 0;
    if (f && stat(final, &st) == 0) {
        n = (size_t)st.st_size;
        all = malloc(n);
        if (all && fread(all, 1, n, f) != n) n = 0;
    }
    if (f) fclose(f);
    bool ok = s == BD_OK && all && n == 65536 + b.len + 32 && (st.st_mode & 0777) == 0755 &&
              !memcmp(all, "program bytes", 13) && !exists(src) && count_entries(outdir, "prog.") == 0;
    for (size_t i = 13; ok && i < 65536; i++) ok = all[i] == 0;
    if (ok) {
        const unsigned char *wts = all + 65536, *t = all + n - 32;
        ok = !memcmp(wts, "abc", 3) && !memcmp(wts + 64, big, sizeof big) && wts[o3] == 'z' &&
             wts[3] == 0 && wts[63] == 0 && wts[64 + sizeof big] == 0 && !memcmp(t, "bdcwts01", 8) &&
             le64_at(t + 8) == 65536 && le64_at(t + 16) == b.len && le64_at(t + 24) == 65536 + b.len;
    }
    check(ok, "publish-executable-layout", "status %d (%s), %zu bytes", s, d.msg, n);
    free(all);

    /* onto a folder: refused, the program left where it was, no temp beside the output */
    char folder[BD_PATH_MAX + 32];
    snprintf(folder, sizeof folder, "%s/afolder", outdir);
    mkdir(folder, 0755);
    make_exe(&w, "a.out", "again", src, sizeof src);
    memset(&d, 0, sizeof d);
    s = bd_publish_executable(src, folder, &b, &d);
    check(s == BD_ERR_IO && strstr(d.msg, "afolder") && count_entries(outdir, "afolder.") == 0 &&
              exists(src),
          "publish-executable-fail-clean", "status %d: %s", s, d.msg);
    bd_blob_free(&b);
    bd_workdir_cleanup(&w);
}

static void test_interrupt_race(void) {
    int bad = 0;
    char why[BD_PATH_MAX + 64] = "";
    srand(12345);
    for (int i = 0; i < 30; i++) {
        char path[BD_PATH_MAX];
        pid_t pid = fork_child(body_busy, false, NULL, path, sizeof path);
        sleep_ms(rand() % 25);
        kill(pid, i % 2 ? SIGINT : SIGTERM);
        int st = wait_child(pid);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != (i % 2 ? SIGINT : SIGTERM) || !path[0] ||
            exists(path)) {
            if (!bad++)
                snprintf(why, sizeof why, "round %d: wait status %#x, '%s' exists %d", i,
                         (unsigned)st, path, path[0] && exists(path));
            if (path[0]) rm_rf(path);
        }
    }
    check(bad == 0, "interrupt-race", "%d of 30 rounds failed; first: %s", bad, why);
}

static void ignore_hup(void) {
    signal(SIGHUP, SIG_IGN);
}

static void test_interrupt_during_tool(void) {
    char path[BD_PATH_MAX];
    pid_t pid = fork_child(body_sleep, false, NULL, path, sizeof path);
    pid_t sleeper = find_child_proc(pid, "sleep");
    if (!sleeper) {
        kill(pid, SIGKILL);
        wait_child(pid);
        check(false, "interrupt-tool", "the tool never started (path '%s')", path);
        return;
    }
    check(exists(path), "interrupt-tool-setup", "workdir '%s' missing", path);
    kill(pid, SIGINT);
    int st = wait_child(pid);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "interrupt-tool-status",
          "wait status %#x (want killed by SIGINT)", (unsigned)st);
    check(path[0] && !exists(path), "interrupt-tool-workdir-gone", "'%s' still exists", path);
    check(proc_gone(sleeper), "interrupt-tool-killed", "sleep (pid %d) still runs", (int)sleeper);
    if (!proc_gone(sleeper)) kill(sleeper, SIGKILL);
}

static void test_interrupt_idle(int sig, const char *name) {
    char path[BD_PATH_MAX], nm[64];
    pid_t pid = fork_child(body_idle, false, NULL, path, sizeof path);
    snprintf(nm, sizeof nm, "%s-setup", name);
    char probe[BD_PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/sub/deeper/x.o", path);
    check(path[0] && exists(probe), nm, "child did not get ready (path '%s')", path);
    kill(pid, sig);
    int st = wait_child(pid);
    snprintf(nm, sizeof nm, "%s-status", name);
    check(WIFSIGNALED(st) && WTERMSIG(st) == sig, nm, "wait status %#x (want signal %d)",
          (unsigned)st, sig);
    snprintf(nm, sizeof nm, "%s-workdir-gone", name);
    check(path[0] && !exists(path), nm, "'%s' still exists", path);
}

static void test_interrupt_ignored_hup(void) {
    char path[BD_PATH_MAX];
    pid_t pid = fork_child(body_idle, false, ignore_hup, path, sizeof path);
    kill(pid, SIGHUP);
    sleep_ms(200);
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    check(r == 0 && exists(path), "interrupt-hup-ignored", "child ended (status %#x)",
          (unsigned)st);
    kill(pid, SIGTERM);
    st = wait_child(pid);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && !exists(path), "interrupt-hup-then-term",
          "wait status %#x, exists %d", (unsigned)st, exists(path));
}

static void test_interrupt_keep(void) {
    char path[BD_PATH_MAX];
    stderr_begin(); /* the child inherits it */
    pid_t pid = fork_child(body_sleep, true, NULL, path, sizeof path);
    pid_t sleeper = find_child_proc(pid, "sleep");
    kill(pid, SIGTERM);
    int st = wait_child(pid);
    char *err = stderr_end();
    char want[BD_PATH_MAX + 64];
    snprintf(want, sizeof want, "bdc: kept temporary files in %s\n", path);
    check(sleeper && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && exists(path) &&
              proc_gone(sleeper) && !strcmp(err, want),
          "interrupt-keep", "wait status %#x, exists %d, stderr '%s'", (unsigned)st, exists(path),
          err);
    free(err);
    if (path[0]) rm_rf(path);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/bdc-toolchain-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    char *real = realpath(root, NULL);
    snprintf(root, sizeof root, "%s", real);
    free(real);
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", root);
    mkdir(tmpdir, 0700);
    setenv("TMPDIR", tmpdir, 1);
    umask(022);
    signal(SIGINT, SIG_DFL); /* ctest may start us with these ignored */
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);

    test_run_basic();
    test_run_env();
    test_run_failures();
    test_run_missing();
    test_run_verbose();
    test_run_all();
    test_workdir();
    test_publish();
    test_publish_executable();
    test_interrupt_during_tool();
    test_interrupt_idle(SIGTERM, "interrupt-idle-term");
    test_interrupt_idle(SIGINT, "interrupt-idle-int");
    test_interrupt_ignored_hup();
    test_interrupt_keep();
    test_interrupt_race();

    int left = count_entries(tmpdir, "");
    check(left == 0, "no-leftover-workdirs", "%d entries left in %s", left, tmpdir);
    rm_rf(root);
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
