/* toolchain.c — running native tools, the private temp folder, atomic publishing.
 *
 * Tools run by argv through posix_spawnp (never a shell) in their own process group, with stdin
 * from /dev/null and both output pipes drained through poll, so a chatty compiler cannot deadlock
 * against a full pipe. Outputs are built in the workdir and renamed into place.
 *
 * Interruption. While a workdir exists, SIGINT/SIGTERM/SIGHUP (unless the caller inherited them
 * ignored, e.g. under nohup) go to one handler that does one of two things:
 *  - A tool is running (a g_child entry > 0): the main thread is then inside bd_tool_run_all,
 *    blocked in poll or waitpid. The handler only SIGKILLs the tools' process groups and records
 *    the signal. The waiting loop wakes (EINTR, or EOF once the tools are dead), reaps them, and
 *    then, in normal context, removes the whole folder recursively and the publish temp file and
 *    re-raises the signal with its default action. SIGKILL rather than the same signal: a tool's
 *    own temp files land in the workdir (TMPDIR points there), so it has nothing to clean up.
 *  - No tool is running: bdc may be anywhere (emitting code, in malloc), so the handler cleans up
 *    by itself using only unlink/rmdir/write/sigaction/raise on lists built beforehand: the names
 *    recorded by bd_workdir_path/bd_write_file (recorded before the file is created) and a
 *    post-order listing of the folder taken after each tool run (what the tool left behind). It
 *    then re-raises the signal with its default action, so bdc's exit status is the signal's.
 * Every change to those lists and to g_child happens with the three signals blocked, so the
 * handler always sees a consistent state. A file put into the workdir some other way (not through
 * bd_workdir_path, bd_write_file or a tool) is missed by the second case until the next tool run.
 * With --keep-temps nothing is removed; the handler only writes the precomputed "kept temporary
 * files" line. */
#define _GNU_SOURCE
#include "build/toolchain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* posix_spawn can change the child's folder only through the _np extension (glibc 2.29+);
 * elsewhere fall back to fork/chdir/exec. BD_TOOLCHAIN_FORCE_FORK tests the fallback. */
#if defined(__GLIBC__) && !defined(BD_TOOLCHAIN_FORCE_FORK) &&                                     \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
#define BD_SPAWN_CHDIR 1
#else
#define BD_SPAWN_CHDIR 0
#endif

enum {
    BD_STDERR_HEAD = 32 * 1024, /* captured stderr: first and last 32 KiB */
    BD_STDERR_TAIL = 32 * 1024,
    BD_SCAN_DEPTH = 16, /* the handler's listing stops here (tools do not nest that deep) */
    BD_LINE_MAX = 240,  /* one stderr line quoted in a message */
};

static const int bd_sigs[] = {SIGINT, SIGTERM, SIGHUP};
#define BD_NSIGS ((int)BD_COUNT(bd_sigs))

bool bd_publish_force_exdev;

/* What the signal handler needs, built in normal context. */
static struct {
    bool installed;
    bool keep;
    char dir[BD_PATH_MAX];            /* the active workdir, "" when none */
    char tmpdir_env[BD_PATH_MAX + 8]; /* "TMPDIR=<dir>" for tools */
    char kept_msg[BD_PATH_MAX + 48];
    size_t kept_len;
    char **declared; /* full paths recorded before creation; append only */
    size_t ndeclared, capdeclared;
    char **scanned; /* post-order listing (contents before their folder) */
    size_t nscanned;
    char publish_tmp[BD_PATH_MAX + 32]; /* bd_publish's temp file beside the output, "" when none */
    bool caught[BD_COUNT(bd_sigs)];
    struct sigaction old[BD_COUNT(bd_sigs)];
    struct sigaction dfl;
} g;
/* pids (== process groups) of the running tools, 0: none (bd_tool_run_all runs several at once) */
static volatile sig_atomic_t g_child[BD_TOOL_MAX_JOBS];
static volatile sig_atomic_t g_pending; /* signal that arrived while a tool ran, 0: none */

static void sigs_block(sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    for (int i = 0; i < BD_NSIGS; i++)
        sigaddset(&s, bd_sigs[i]);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void sigs_restore(const sigset_t *old) {
    sigprocmask(SIG_SETMASK, old, NULL);
}

/* Async-signal-safe: default action, then deliver. Does not return. */
static void reraise(int sig) {
    sigaction(sig, &g.dfl, NULL);
    raise(sig);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    _exit(128 + sig); /* not reached: the signal ends the process */
}

/* Async-signal-safe cleanup from the prepared lists (no tool running). */
static void cleanup_in_handler(void) {
    if (g.publish_tmp[0]) unlink(g.publish_tmp);
    if (!g.dir[0]) return;
    if (g.keep) {
        ssize_t r = write(STDERR_FILENO, g.kept_msg, g.kept_len);
        (void)r;
        return;
    }
    for (size_t i = 0; i < g.ndeclared; i++)
        unlink(g.declared[i]);
    for (size_t i = 0; i < g.nscanned; i++)
        if (unlink(g.scanned[i]) != 0) rmdir(g.scanned[i]);
    rmdir(g.dir);
}

static void on_signal(int sig) {
    int saved = errno;
    bool running = false;
    for (int i = 0; i < BD_TOOL_MAX_JOBS; i++) {
        pid_t child = (pid_t)g_child[i];
        if (child > 0) kill(-child, SIGKILL), running = true;
    }
    if (running) {
        /* The main thread waits for these children; it finishes the cleanup (see the file head). */
        g_pending = sig;
        errno = saved;
        return;
    }
    cleanup_in_handler();
    reraise(sig);
}

/* ---- recursive removal (normal context only) ---- */

static int remove_at(int dirfd, const char *name, int depth) {
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
    if ((errno != EISDIR && errno != EPERM) || depth > 64) return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    (void)fchmod(fd, 0700); /* a tool may have left a read-only folder */
    DIR *dp = fdopendir(fd);
    if (!dp) {
        close(fd);
        return -1;
    }
    /* Removing while reading may hide entries on some file systems: repeat until a pass finds
     * nothing left to remove. */
    int rc = 0;
    for (bool again = true; again;) {
        again = false;
        struct dirent *e;
        while ((e = readdir(dp))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            if (remove_at(fd, e->d_name, depth + 1) == 0)
                again = true;
            else
                rc = -1;
        }
        if (rc) break;
        rewinddir(dp);
    }
    closedir(dp);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) rc = -1;
    return rc;
}

static int remove_tree(const char *path) {
    return remove_at(AT_FDCWD, path, 0);
}

/* ---- the handler's lists ---- */

/* Records a full path inside the workdir; best effort (out of memory leaves it to the rescan). */
static void record_path(const char *path) {
    if (!g.dir[0]) return;
    for (size_t i = 0; i < g.ndeclared; i++)
        if (!strcmp(g.declared[i], path)) return;
    char *copy = strdup(path);
    if (!copy) return;
    sigset_t old;
    sigs_block(&old);
    if (g.ndeclared == g.capdeclared) {
        size_t cap = g.capdeclared ? 2 * g.capdeclared : 16;
        char **p = realloc(g.declared, cap * sizeof *p);
        if (!p) {
            sigs_restore(&old);
            free(copy);
            return;
        }
        g.declared = p;
        g.capdeclared = cap;
    }
    g.declared[g.ndeclared++] = copy;
    sigs_restore(&old);
}

static bool inside_workdir(const char *path) {
    size_t n = strlen(g.dir);
    return n && strncmp(path, g.dir, n) == 0 && path[n] == '/';
}

typedef struct {
    char **items;
    size_t len, cap;
    bool failed;
} path_list;

static void list_push(path_list *l, const char *path) {
    if (l->failed) return;
    if (l->len == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **p = realloc(l->items, cap * sizeof *p);
        if (!p) {
            l->failed = true;
            return;
        }
        l->items = p;
        l->cap = cap;
    }
    if (!(l->items[l->len] = strdup(path)))
        l->failed = true;
    else
        l->len++;
}

static void list_free(char **items, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

static void scan_dir(const char *dir, int depth, path_list *l) {
    DIR *dp = opendir(dir);
    if (!dp) return;
    struct dirent *e;
    char path[BD_PATH_MAX];
    while ((e = readdir(dp))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof path) continue;
        bool is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;
            is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        }
        if (is_dir && depth < BD_SCAN_DEPTH) scan_dir(path, depth + 1, l);
        list_push(l, path);
    }
    closedir(dp);
}

/* Refreshes the listing of what the workdir holds (called with the signals blocked or not). */
static void rescan_workdir(void) {
    if (!g.dir[0] || g.keep) return;
    path_list l = {0};
    scan_dir(g.dir, 0, &l);
    if (l.failed) { /* keep the old listing rather than a partial one */
        list_free(l.items, l.len);
        return;
    }
    sigset_t old;
    sigs_block(&old);
    char **prev = g.scanned;
    size_t nprev = g.nscanned;
    g.scanned = l.items;
    g.nscanned = l.len;
    sigs_restore(&old);
    list_free(prev, nprev);
}

/* Called by bd_tool_run, signals blocked, after a signal arrived while the tool ran. */
static _Noreturn void die_by_pending(int sig) {
    if (g.publish_tmp[0]) unlink(g.publish_tmp);
    if (g.dir[0]) {
        if (g.keep)
            fputs(g.kept_msg, stderr);
        else
            remove_tree(g.dir);
    }
    reraise(sig);
    _exit(128 + sig);
}

/* ---- workdir ---- */

bd_status bd_workdir_create(bd_workdir *w, bool keep, bd_diag *d) {
    memset(w, 0, sizeof *w);
    BD_ASSERT(!g.installed); /* one workdir at a time */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    /* Absolute and resolved: tools run with the workdir as their folder. */
    char base[PATH_MAX];
    if (!realpath(tmp, base))
        return bd_fail(d, BD_ERR_IO, "cannot use temporary folder '%s' (TMPDIR): %s", bd_quote(tmp),
                       strerror(errno));
    char tmpl[BD_PATH_MAX];
    int n = snprintf(tmpl, sizeof tmpl, "%s/bdc-XXXXXX", strcmp(base, "/") ? base : "");
    if (n < 0 || (size_t)n >= sizeof tmpl)
        return bd_fail(d, BD_ERR_IO, "temporary folder path '%s' (TMPDIR) is too long",
                       bd_quote(base));

    /* Folder and handlers appear together: no moment where an interrupt would leave it behind. */
    sigset_t old;
    sigs_block(&old);
    if (!mkdtemp(tmpl)) {
        int e = errno;
        sigs_restore(&old);
        return bd_fail(d, BD_ERR_IO, "cannot create a temporary folder in '%s' (TMPDIR): %s",
                       bd_quote(base), strerror(e));
    }
    memcpy(w->path, tmpl, (size_t)n + 1);
    w->keep = keep;
    w->active = true;

    memcpy(g.dir, tmpl, (size_t)n + 1);
    g.keep = keep;
    snprintf(g.tmpdir_env, sizeof g.tmpdir_env, "TMPDIR=%s", g.dir);
    n = snprintf(g.kept_msg, sizeof g.kept_msg, "bdc: kept temporary files in %s\n", g.dir);
    g.kept_len = (size_t)n < sizeof g.kept_msg ? (size_t)n : sizeof g.kept_msg - 1;
    g.publish_tmp[0] = 0;
    g.dfl.sa_handler = SIG_DFL;
    sigemptyset(&g.dfl.sa_mask);
    g.dfl.sa_flags = 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < BD_NSIGS; i++)
        sigaddset(&sa.sa_mask, bd_sigs[i]);
    sa.sa_flags = 0; /* no SA_RESTART: poll and waitpid return EINTR */
    for (int i = 0; i < BD_NSIGS; i++) {
        g.caught[i] = false;
        if (sigaction(bd_sigs[i], NULL, &g.old[i]) != 0) continue;
        if (g.old[i].sa_handler == SIG_IGN) continue; /* nohup and friends: stay ignored */
        g.caught[i] = sigaction(bd_sigs[i], &sa, NULL) == 0;
    }
    g.installed = true;
    sigs_restore(&old);
    return BD_OK;
}

void bd_workdir_cleanup(bd_workdir *w) {
    if (!w || !w->active) return;
    sigset_t old;
    sigs_block(&old);
    if (w->keep) {
        fprintf(stderr, "bdc: kept temporary files in %s\n", w->path);
    } else if (remove_tree(w->path) != 0) {
        fprintf(stderr, "bdc: warning: could not remove temporary folder %s: %s\n", w->path,
                strerror(errno));
    }
    for (int i = 0; i < BD_NSIGS; i++)
        if (g.caught[i]) sigaction(bd_sigs[i], &g.old[i], NULL);
    list_free(g.declared, g.ndeclared);
    list_free(g.scanned, g.nscanned);
    memset(&g, 0, sizeof g);
    w->active = false;
    /* A signal that arrived during the removal is delivered now, with the caller's action. */
    sigs_restore(&old);
}

bd_status bd_workdir_path(bd_workdir *w, const char *name, char *out, size_t size, bd_diag *d) {
    BD_ASSERT(w->active);
    if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return bd_fail(d, BD_ERR_IO, "invalid temporary file name '%s'", bd_quote(name));
    int n = snprintf(out, size, "%s/%s", w->path, name);
    if (n < 0 || (size_t)n >= size)
        return bd_fail(d, BD_ERR_IO, "temporary file path for '%s' is too long", bd_quote(name));
    record_path(out);
    return BD_OK;
}

/* data[0..len), or the blob when given. */
static bd_status write_file(const char *path, const void *data, size_t len, const bd_blob *blob,
                            bd_diag *d) {
    if (inside_workdir(path)) record_path(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return bd_fail(d, BD_ERR_IO, "cannot write '%s': %s", bd_quote(path), strerror(errno));
    if (blob ? !bd_blob_write_fd(blob, fd) : !bd_write_all(fd, data, len)) goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    return BD_OK;
fail:;
    int e = errno;
    if (fd >= 0) close(fd);
    unlink(path);
    return bd_fail(d, BD_ERR_IO, "cannot write '%s': %s", bd_quote(path), strerror(e));
}

bd_status bd_write_file(const char *path, const void *data, size_t len, bd_diag *d) {
    return write_file(path, data, len, NULL, d);
}

bd_status bd_write_blob_file(const char *path, const bd_blob *blob, bd_diag *d) {
    return write_file(path, NULL, 0, blob, d);
}

const char *bd_cc(void) {
    const char *cc = getenv("CC");
    return cc && *cc ? cc : "cc";
}

/* ---- running a tool ---- */

/* Growable text for the verbose command line. */
typedef struct {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return; /* verbose output only: drop the rest */
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_str(strbuf *b, const char *s) {
    sb_add(b, s, strlen(s));
}

/* One word quoted for a POSIX shell; control bytes through bash's $'...' so the line stays one. */
static void sb_quote(strbuf *b, const char *w) {
    bool plain = *w != 0, ctrl = false;
    for (const char *p = w; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) ctrl = true;
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
            !strchr("_@%+=:,./-", c))
            plain = false;
    }
    if (plain) {
        sb_str(b, w);
    } else if (!ctrl) {
        sb_str(b, "'");
        for (const char *p = w; *p; p++) {
            if (*p == '\'')
                sb_str(b, "'\\''");
            else
                sb_add(b, p, 1);
        }
        sb_str(b, "'");
    } else {
        sb_str(b, "$'");
        for (const char *p = w; *p; p++) {
            unsigned char c = (unsigned char)*p;
            char esc[8];
            if (c == '\\' || c == '\'')
                snprintf(esc, sizeof esc, "\\%c", c);
            else if (c == '\n')
                snprintf(esc, sizeof esc, "\\n");
            else if (c == '\t')
                snprintf(esc, sizeof esc, "\\t");
            else if (c < 0x20 || c == 0x7f)
                snprintf(esc, sizeof esc, "\\x%02x", c);
            else
                snprintf(esc, sizeof esc, "%c", c);
            sb_str(b, esc);
        }
        sb_str(b, "'");
    }
}

static void print_command(const bd_tool_cmd *cmd) {
    strbuf b = {0};
    if (cmd->cwd) {
        sb_str(&b, "cd ");
        sb_quote(&b, cmd->cwd);
        sb_str(&b, " && ");
    }
    for (char *const *a = cmd->argv; *a; a++) {
        if (a != cmd->argv) sb_str(&b, " ");
        sb_quote(&b, *a);
    }
    sb_str(&b, "\n");
    if (b.s) fputs(b.s, stderr);
    free(b.s);
}

/* The tool's environment: ours, with LC_ALL=C and TMPDIR=<workdir>. Strings are borrowed. */
static char **tool_env(void) {
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = malloc((n + 3) * sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++) {
        if (!strncmp(*e, "LC_ALL=", 7)) continue;
        if (g.dir[0] && !strncmp(*e, "TMPDIR=", 7)) continue;
        env[k++] = *e;
    }
    env[k++] = "LC_ALL=C";
    if (g.dir[0]) env[k++] = g.tmpdir_env;
    env[k] = NULL;
    return env;
}

/* A pipe whose ends are close-on-exec and above 2, so dup2 onto 1 and 2 never aliases them. */
static int make_pipe(int fds[2]) {
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        if (fds[i] > 2) continue;
        int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        int e = errno;
        close(fds[i]);
        fds[i] = hi;
        if (hi < 0) {
            close(fds[1 - i]);
            errno = e;
            return -1;
        }
    }
    return 0;
}

/* Starts the tool; returns 0 or an errno (ENOENT: not found). Signals are blocked by the caller;
 * the tool gets the caller's original mask back (*mask). */
static int spawn_tool(const bd_tool_cmd *cmd, char **envp, int outw, int errw, const sigset_t *mask,
                      pid_t *pid) {
#if BD_SPAWN_CHDIR
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc) return rc;
    rc = posix_spawnattr_init(&at);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, outw, 1);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, errw, 2);
    if (!rc && cmd->cwd) rc = posix_spawn_file_actions_addchdir_np(&fa, cmd->cwd);
    if (!rc) rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    if (!rc) rc = posix_spawnattr_setpgroup(&at, 0);
    if (!rc) rc = posix_spawnattr_setsigmask(&at, mask);
    if (!rc) rc = posix_spawnp(pid, cmd->argv[0], &fa, &at, cmd->argv, envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
#else
    int ep[2];
    if (make_pipe(ep) != 0) return errno;
    pid_t p = fork();
    if (p < 0) {
        int e = errno;
        close(ep[0]);
        close(ep[1]);
        return e;
    }
    if (p == 0) {
        /* Our handlers must not run in the child: default actions first, then the old mask. */
        for (int i = 0; i < BD_NSIGS; i++)
            if (g.caught[i]) sigaction(bd_sigs[i], &g.dfl, NULL);
        sigprocmask(SIG_SETMASK, mask, NULL);
        setpgid(0, 0);
        int nul = open("/dev/null", O_RDONLY);
        int e = 0;
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw, 2) < 0) e = errno;
        if (!e && cmd->cwd && chdir(cmd->cwd) != 0) e = errno;
        if (!e) {
            environ = envp;
            execvp(cmd->argv[0], cmd->argv);
            e = errno;
        }
        ssize_t r = write(ep[1], &e, sizeof e);
        (void)r;
        _exit(127);
    }
    setpgid(p, p); /* also here, so the group exists before we could signal it */
    close(ep[1]);
    int e = 0;
    ssize_t r;
    while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    if (r == (ssize_t)sizeof e) { /* exec failed */
        while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
        }
        return e ? e : ENOEXEC;
    }
    *pid = p;
    return 0;
#endif
}

/* Captured stderr: the first BD_STDERR_HEAD bytes and a ring of the last BD_STDERR_TAIL. */
typedef struct {
    char head[BD_STDERR_HEAD];
    char tail[BD_STDERR_TAIL];
    size_t total;
} capture;

static void capture_add(capture *c, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++, c->total++) {
        if (c->total < BD_STDERR_HEAD)
            c->head[c->total] = p[i];
        else
            c->tail[(c->total - BD_STDERR_HEAD) % BD_STDERR_TAIL] = p[i];
    }
}

/* The kept text in order, with a marker where bytes were dropped; malloc'd, NUL-terminated. */
static char *capture_text(const capture *c) {
    size_t nhead = c->total < BD_STDERR_HEAD ? c->total : BD_STDERR_HEAD;
    size_t rest = c->total - nhead;
    size_t ntail = rest < BD_STDERR_TAIL ? rest : BD_STDERR_TAIL;
    char *t = malloc(nhead + ntail + 80);
    if (!t) return NULL;
    size_t o = 0;
    memcpy(t, c->head, nhead);
    o = nhead;
    if (rest > ntail)
        o += (size_t)snprintf(t + o, 80, "\n[... %zu bytes omitted ...]\n", rest - ntail);
    size_t start = rest > BD_STDERR_TAIL ? (rest - BD_STDERR_TAIL) % BD_STDERR_TAIL : 0;
    for (size_t i = 0; i < ntail; i++)
        t[o++] = c->tail[(start + i) % BD_STDERR_TAIL];
    t[o] = 0;
    return t;
}

/* One printable line, cut, for a message. */
static void line_copy(char *dst, size_t size, const char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        dst[o++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    if (n && o + 4 >= size) memcpy(dst + o, "...", 3), o += 3;
    dst[o] = 0;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

/* ": first ... last" from the tool's stderr, or "" when it said nothing. */
static void summarize(const char *text, size_t len, char *out, size_t size) {
    const char *first = NULL, *last = NULL;
    size_t nfirst = 0, nlast = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        if (!blank(text + i, j - i)) {
            if (!first) first = text + i, nfirst = j - i;
            last = text + i, nlast = j - i;
        }
        i = j + 1;
    }
    out[0] = 0;
    if (!first) return;
    char a[BD_LINE_MAX], b[BD_LINE_MAX];
    line_copy(a, sizeof a, first, nfirst);
    if (last == first) {
        snprintf(out, size, ": %s", a);
    } else {
        line_copy(b, sizeof b, last, nlast);
        snprintf(out, size, ": %s ... %s", a, b);
    }
}

/* Whether some folder of $PATH holds an entry named prog (the search execvp does). */
static bool in_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    char buf[BD_PATH_MAX];
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int k = n ? snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog)
                  : snprintf(buf, sizeof buf, "%s", prog); /* empty entry: the current folder */
        struct stat st;
        if (k > 0 && (size_t)k < sizeof buf && stat(buf, &st) == 0) return true;
        if (!end) return false;
        p = end;
    }
}

/* One tool of bd_tool_run_all: its pipes, captured stderr and exit. */
typedef struct tool_job {
    const bd_tool_cmd *cmd;
    int outr, errr; /* read ends, -1 once at EOF */
    pid_t pid;
    capture *cap;
    size_t nout;
    int status, werr;
} tool_job;

/* The failure of one finished tool, as bd_tool_run reports it. */
static bd_status tool_failure(tool_job *j, bd_diag *d) {
    const bd_tool_cmd *cmd = j->cmd;
    const char *what = cmd->what ? cmd->what : "tool";
    char how[96];
    if (j->werr)
        snprintf(how, sizeof how, "could not be waited for (%s)", strerror(j->werr));
    else if (WIFEXITED(j->status))
        snprintf(how, sizeof how, "failed (exit status %d)", WEXITSTATUS(j->status));
    else if (WIFSIGNALED(j->status))
        snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(j->status),
                 strsignal(WTERMSIG(j->status)));
    else
        snprintf(how, sizeof how, "ended with wait status %d", j->status);
    char *text = capture_text(j->cap);
    char sum[2 * BD_LINE_MAX + 16] = "";
    if (text) {
        size_t len = strlen(text);
        if (!cmd->verbose && len) { /* verbose mode already showed it as it came */
            (void)bd_write_all(STDERR_FILENO, text, len);
            if (text[len - 1] != '\n') (void)bd_write_all(STDERR_FILENO, "\n", 1);
        }
        summarize(text, len, sum, sizeof sum);
    }
    free(text);
    return bd_fail(d, BD_ERR_TOOLCHAIN, "%s '%s' %s%s", what, bd_quote(cmd->argv[0]), how, sum);
}

/* Why a tool could not start: err from pipe (pipe_failed) or from spawn_tool. */
static bd_status start_failure(const bd_tool_cmd *cmd, int err, bool pipe_failed, bd_diag *d) {
    const char *what = cmd->what ? cmd->what : "tool";
    const char *prog = cmd->argv[0];
    if (pipe_failed)
        return bd_fail(d, BD_ERR_IO, "cannot run %s '%s': pipe: %s", what, bd_quote(prog),
                       strerror(err));
    /* execvp reports EACCES when a PATH folder cannot be searched, even if the program is
     * simply absent: call that "not found" unless some PATH entry really holds it. */
    if (err == EACCES && !strchr(prog, '/') && !in_path(prog)) err = ENOENT;
    if (err == ENOENT)
        return bd_fail(d, BD_ERR_TOOLCHAIN, "%s '%s' not found%s%s%s%s", what, bd_quote(prog),
                       cmd->hint ? " (" : "", cmd->hint ? cmd->hint : "", cmd->hint ? ")" : "",
                       strchr(prog, ' ') ? "; a program name is not split on spaces" : "");
    return bd_fail(d, BD_ERR_TOOLCHAIN, "cannot run %s '%s': %s", what, bd_quote(prog),
                   strerror(err));
}

bd_status bd_tool_run(const bd_tool_cmd *cmd, bd_diag *d) {
    return bd_tool_run_all(cmd, 1, d);
}

bd_status bd_tool_run_all(const bd_tool_cmd *cmds, int n, bd_diag *d) {
    BD_ASSERT(n >= 1 && n <= BD_TOOL_MAX_JOBS);
    for (int i = 0; i < n; i++) {
        const bd_tool_cmd *cmd = &cmds[i];
        BD_ASSERT(cmd->argv && cmd->argv[0]);
        if (cmd->cwd) {
            struct stat st;
            const char *why = stat(cmd->cwd, &st) != 0 ? strerror(errno)
                              : !S_ISDIR(st.st_mode)   ? "not a folder"
                                                       : NULL;
            if (why)
                return bd_fail(d, BD_ERR_IO, "cannot run %s '%s' in folder '%s': %s",
                               cmd->what ? cmd->what : "tool", bd_quote(cmd->argv[0]),
                               bd_quote(cmd->cwd), why);
        }
    }
    tool_job jobs[BD_TOOL_MAX_JOBS];
    memset(jobs, 0, sizeof jobs);
    int started = 0, err = 0;
    bool pipe_failed = false;
    char **envp = tool_env();
    if (!envp) err = ENOMEM;
    for (int i = 0; i < n && !err; i++) {
        const bd_tool_cmd *cmd = &cmds[i];
        tool_job *j = &jobs[i];
        j->cmd = cmd;
        j->outr = j->errr = -1;
        if (cmd->verbose) print_command(cmd);
        if (cmd->out && cmd->out_size) cmd->out[0] = 0;
        int outp[2], errp[2];
        if (make_pipe(outp) != 0) {
            err = errno, pipe_failed = true;
            break;
        }
        if (make_pipe(errp) != 0) {
            err = errno, pipe_failed = true;
            close(outp[0]);
            close(outp[1]);
            break;
        }
        j->cap = calloc(1, sizeof *j->cap);
        if (!j->cap) err = ENOMEM;
        if (!err) {
            sigset_t old;
            sigs_block(&old);
            err = spawn_tool(cmd, envp, outp[1], errp[1], &old, &j->pid);
            if (!err) g_child[i] = j->pid;
            sigs_restore(&old); /* a signal that came meanwhile now kills the tool */
        }
        close(outp[1]);
        close(errp[1]);
        if (err) {
            close(outp[0]);
            close(errp[0]);
            free(j->cap);
            j->cap = NULL;
            break;
        }
        j->outr = outp[0];
        j->errr = errp[0];
        started++;
    }
    free(envp);
    if (err) /* the ones already running are not wanted: end them, then reap them below */
        for (int i = 0; i < started; i++) kill(-jobs[i].pid, SIGKILL);

    /* Drain every pipe until EOF (or an interrupt), so none can fill and stall its tool. */
    struct pollfd pf[2 * BD_TOOL_MAX_JOBS];
    char buf[16384];
    for (;;) {
        int np = 0;
        for (int i = 0; i < started; i++) {
            pf[np++] = (struct pollfd){.fd = jobs[i].outr, .events = POLLIN};
            pf[np++] = (struct pollfd){.fd = jobs[i].errr, .events = POLLIN};
        }
        bool open_fd = false;
        for (int k = 0; k < np; k++) open_fd |= pf[k].fd >= 0;
        if (!open_fd || g_pending) break;
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < np; k++) {
            tool_job *j = &jobs[k / 2];
            int *fd = k % 2 ? &j->errr : &j->outr;
            if (*fd < 0 || !pf[k].revents) continue;
            ssize_t got = read(*fd, buf, sizeof buf);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) {
                close(*fd);
                *fd = -1;
                continue;
            }
            if (j->cmd->verbose) (void)bd_write_all(STDERR_FILENO, buf, (size_t)got);
            if (k % 2) {
                capture_add(j->cap, buf, (size_t)got);
            } else if (j->cmd->out && j->cmd->out_size > j->nout + 1) {
                size_t room = j->cmd->out_size - 1 - j->nout, m = (size_t)got < room ? (size_t)got : room;
                memcpy(j->cmd->out + j->nout, buf, m);
                j->nout += m;
                j->cmd->out[j->nout] = 0;
            }
        }
    }
    for (int i = 0; i < started; i++) {
        tool_job *j = &jobs[i];
        if (j->outr >= 0) close(j->outr);
        if (j->errr >= 0) close(j->errr);
        while (waitpid(j->pid, &j->status, 0) < 0) {
            if (errno != EINTR) {
                j->werr = errno;
                break;
            }
        }
    }

    sigset_t old;
    sigs_block(&old);
    for (int i = 0; i < BD_TOOL_MAX_JOBS; i++) g_child[i] = 0;
    rescan_workdir(); /* what the tools left behind, for the handler's list */
    if (g_pending) die_by_pending(g_pending);
    sigs_restore(&old);

    bd_status s = err ? start_failure(&cmds[started], err, pipe_failed, d) : BD_OK;
    for (int i = 0; i < started; i++) {
        tool_job *j = &jobs[i];
        bool failed = j->werr || !WIFEXITED(j->status) || WEXITSTATUS(j->status) != 0;
        if (!s && failed) s = tool_failure(j, d); /* the first that failed, in order */
        free(j->cap);
    }
    return s;
}

/* ---- publishing ---- */

bd_status bd_output_check(const char *final_path, bd_diag *d) {
    if (!*final_path) return bd_fail(d, BD_ERR_IO, "empty output path");
    struct stat st;
    if (stat(final_path, &st) == 0 && S_ISDIR(st.st_mode))
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': it is a folder",
                       bd_quote(final_path));
    char dir[BD_PATH_MAX];
    const char *slash = strrchr(final_path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else {
        size_t n = slash == final_path ? 1 : (size_t)(slash - final_path);
        if (n >= sizeof dir)
            return bd_fail(d, BD_ERR_IO, "output path '%s' is too long", bd_quote(final_path));
        memcpy(dir, final_path, n);
        dir[n] = 0;
    }
    if (stat(dir, &st) != 0)
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': folder '%s': %s",
                       bd_quote(final_path), bd_quote(dir), strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': '%s' is not a folder",
                       bd_quote(final_path), bd_quote(dir));
    if (access(dir, W_OK | X_OK) != 0)
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': folder '%s': %s",
                       bd_quote(final_path), bd_quote(dir), strerror(errno));
    return BD_OK;
}

static void clear_publish_tmp(void) {
    sigset_t old;
    sigs_block(&old);
    g.publish_tmp[0] = 0;
    sigs_restore(&old);
}

/* The runtime's layout after the program (bd_publish_executable): zeros to BD_WEIGHTS_ALIGN, the
 * weights, the trailer. `at` is the program's size. */
static bool append_weights(int fd, uint64_t at, const bd_blob *w) {
    static const unsigned char zeros[4096];
    uint64_t start = (at + BD_WEIGHTS_ALIGN - 1) / BD_WEIGHTS_ALIGN * BD_WEIGHTS_ALIGN;
    for (uint64_t pad = start - at; pad;) {
        size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        if (!bd_write_all(fd, zeros, k)) return false;
        pad -= k;
    }
    if (!bd_blob_write_fd(w, fd)) return false;
    unsigned char t[32];
    memcpy(t, "bdcwts01", 8);
    uint64_t v[3] = {start, w->len, start + w->len};
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 8; b++) t[8 + 8 * k + b] = (unsigned char)(v[k] >> (8 * b));
    return bd_write_all(fd, t, sizeof t);
}

/* Copies tmp_path (then the weights, when given) beside final_path under a unique name, then
 * renames that into place: for EXDEV, and for every executable with weights appended. */
static bd_status publish_copy(const char *tmp_path, const struct stat *sst, const char *final_path,
                              const bd_blob *weights, bd_diag *d) {
    char tmp[BD_PATH_MAX + 32];
    int n = snprintf(tmp, sizeof tmp, "%s.bdc-tmp-XXXXXX", final_path);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return bd_fail(d, BD_ERR_IO, "output path '%s' is too long", bd_quote(final_path));
    int src = open(tmp_path, O_RDONLY | O_CLOEXEC);
    if (src < 0)
        return bd_fail(d, BD_ERR_IO, "cannot read '%s': %s", bd_quote(tmp_path), strerror(errno));

    sigset_t old;
    sigs_block(&old);
    int fd = mkstemp(tmp); /* so the handler can remove it from the moment it exists */
    if (fd >= 0) memcpy(g.publish_tmp, tmp, (size_t)n + 1);
    sigs_restore(&old);
    if (fd < 0) {
        int e = errno;
        close(src);
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': %s", bd_quote(final_path),
                       strerror(e));
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);

    const char *failed = NULL;
    int e = 0;
    char buf[65536];
    uint64_t copied = 0;
    for (;;) {
        ssize_t k = read(src, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            failed = "read", e = errno;
            break;
        }
        if (k == 0) break;
        if (!bd_write_all(fd, buf, (size_t)k)) {
            failed = "write", e = errno;
            break;
        }
        copied += (uint64_t)k;
    }
    close(src);
    if (!failed && weights && !append_weights(fd, copied, weights)) failed = "write", e = errno;
    if (!failed && fchmod(fd, sst->st_mode & 0777) != 0) failed = "chmod", e = errno;
    if (!failed && !weights && fsync(fd) != 0) failed = "fsync", e = errno;
    if (close(fd) != 0 && !failed) failed = "close", e = errno;
    if (!failed && rename(tmp, final_path) != 0) failed = "rename", e = errno;
    if (failed) {
        unlink(tmp);
        clear_publish_tmp();
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': %s: %s", bd_quote(final_path),
                       failed, strerror(e));
    }
    clear_publish_tmp();
    unlink(tmp_path);
    return BD_OK;
}

/* tmp_path's status into *st when it is a regular file to publish; BD_ERR_IO naming it otherwise. */
static bd_status publishable(const char *tmp_path, struct stat *st, bd_diag *d) {
    const char *why = lstat(tmp_path, st) != 0 ? strerror(errno)
                      : !S_ISREG(st->st_mode)  ? "not a regular file"
                                               : NULL;
    return why ? bd_fail(d, BD_ERR_IO, "cannot publish '%s': %s", bd_quote(tmp_path), why) : BD_OK;
}

bd_status bd_publish(const char *tmp_path, const char *final_path, bd_diag *d) {
    struct stat st;
    bd_status s = publishable(tmp_path, &st, d);
    if (s) return s;
    if (!bd_publish_force_exdev && rename(tmp_path, final_path) == 0) return BD_OK;
    int e = bd_publish_force_exdev ? EXDEV : errno;
    if (e != EXDEV)
        return bd_fail(d, BD_ERR_IO, "cannot write output '%s': %s", bd_quote(final_path),
                       strerror(e));
    return publish_copy(tmp_path, &st, final_path, NULL, d);
}

bd_status bd_publish_executable(const char *exe_path, const char *final_path, const bd_blob *weights,
                                bd_diag *d) {
    struct stat st;
    bd_status s = publishable(exe_path, &st, d);
    return s ? s : publish_copy(exe_path, &st, final_path, weights, d);
}
