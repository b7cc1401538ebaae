/* util.c — arenas, growable arrays, the name map, diagnostics. */
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void bd_die_assert(const char *file, int line, const char *cond) {
    fprintf(stderr, "bdc: internal error at %s:%d: assertion '%s' failed\n", file, line, cond);
    abort();
}

bd_status bd_vfail(bd_diag *d, bd_status status, const char *fmt, va_list ap) {
    if (d && d->status == BD_OK) {
        d->status = status;
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    }
    return d ? d->status : status;
}

bd_status bd_fail(bd_diag *d, bd_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bd_status s = bd_vfail(d, status, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- arena ---- */
struct bd_arena_chunk {
    bd_arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
};

enum { BD_ARENA_CHUNK = 1 << 16 };

void *bd_arena_alloc(bd_arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    if (a->limit && (size > a->limit || a->total > a->limit - size)) return NULL;
    bd_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > BD_ARENA_CHUNK ? size : BD_ARENA_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->used = 0;
        c->cap = cap;
        /* A big one-off block goes behind the current chunk so the chunk keeps serving. */
        if (a->head && cap > BD_ARENA_CHUNK) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->mem + c->used;
    c->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

void *bd_arena_array(bd_arena *a, size_t n, size_t elem) {
    if (elem && n > SIZE_MAX / elem) return NULL;
    return bd_arena_alloc(a, n * elem);
}

char *bd_arena_strndup(bd_arena *a, const char *s, size_t n) {
    char *p = bd_arena_alloc(a, n + 1);
    if (p && n) memcpy(p, s, n);
    return p;
}

char *bd_arena_strdup(bd_arena *a, const char *s) { return bd_arena_strndup(a, s, strlen(s)); }

char *bd_arena_printf(bd_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = bd_arena_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

struct bd_arena_adopted {
    bd_arena_adopted *next;
    void *p;
};

bool bd_arena_adopt(bd_arena *a, void *p, size_t size) {
    if (a->limit && (size > a->limit || a->total > a->limit - size)) return false;
    bd_arena_adopted *n = bd_arena_alloc(a, sizeof *n);
    if (!n) return false;
    n->p = p;
    n->next = a->adopted;
    a->adopted = n;
    a->total += size;
    return true;
}

void bd_arena_free(bd_arena *a) {
    for (bd_arena_adopted *n = a->adopted; n; n = n->next) free(n->p);
    a->adopted = NULL;
    for (bd_arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- vec ---- */
/* Room for `need` elements: the capacity doubled (from 8) until it holds them. */
static void vec_reserve(bd_vec *v, size_t need) {
    if (need <= v->cap) return;
    size_t cap = v->cap ? v->cap : 8;
    while (cap < need) cap *= 2;
    void *p = realloc(v->data, cap * v->elem);
    if (!p) {
        fprintf(stderr, "bdc: out of memory\n");
        exit(BD_ERR_IO);
    }
    v->data = p;
    v->cap = cap;
}

void *bd_vec_push(bd_vec *v) {
    vec_reserve(v, v->len + 1);
    void *slot = (char *)v->data + v->len++ * v->elem;
    memset(slot, 0, v->elem);
    return slot;
}

void bd_vec_append(bd_vec *v, const void *items, size_t n) {
    vec_reserve(v, v->len + n);
    if (n) memcpy((char *)v->data + v->len * v->elem, items, n * v->elem);
    v->len += n;
}

void bd_vec_free(bd_vec *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

/* ---- map ---- */
uint64_t bd_hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int bd_map_get(const bd_map *m, const char *key) {
    if (!m->cap) return -1;
    for (size_t i = bd_hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return -1;
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    }
}

static void map_insert(bd_map *m, const char *key, int val) {
    for (size_t i = bd_hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->len++;
            return;
        }
        if (strcmp(m->keys[i], key) == 0) {
            m->vals[i] = val;
            return;
        }
    }
}

void bd_map_put(bd_map *m, const char *key, int val) {
    if ((m->len + 1) * 2 > m->cap) {
        bd_map old = *m;
        m->cap = old.cap ? old.cap * 2 : 64;
        m->len = 0;
        m->keys = calloc(m->cap, sizeof *m->keys);
        m->vals = calloc(m->cap, sizeof *m->vals);
        if (!m->keys || !m->vals) {
            fprintf(stderr, "bdc: out of memory\n");
            exit(BD_ERR_IO);
        }
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i]) map_insert(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    map_insert(m, key, val);
}

void bd_map_free(bd_map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

const char *bd_quote(const char *s) {
    static _Thread_local char bufs[4][160];
    static _Thread_local int turn;
    char *b = bufs[turn++ & 3];
    size_t o = 0;
    if (!s) s = "";
    for (; *s && o < 120; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            b[o++] = (char)c;
        } else {
            o += (size_t)snprintf(b + o, 160 - o, "\\x%02x", c);
        }
    }
    if (*s) {
        memcpy(b + o, "...", 3);
        o += 3;
    }
    b[o] = 0;
    return b;
}
