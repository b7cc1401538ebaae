/* util.h — the small shared toolkit: arenas, growable arrays, diagnostics, checked arithmetic.
 *
 * Every IR object lives in an arena owned by its model; nothing is freed one at a time. Bad input
 * is reported through a bd_diag (a status plus a one-line message naming the node/tensor); a
 * broken internal invariant goes through BD_ASSERT, which stays on in release builds. */
#ifndef BD_UTIL_H
#define BD_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bdc/bdc.h"

#define BD_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) bd_die_assert(__FILE__, __LINE__, #cond);                                     \
    } while (0)
_Noreturn void bd_die_assert(const char *file, int line, const char *cond);

#define BD_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- diagnostics ---- */
typedef struct bd_diag {
    bd_status status;
    char msg[1024];
} bd_diag;

/* Records the first failure only (later ones are usually consequences) and returns its status. */
bd_status bd_fail(bd_diag *d, bd_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bd_status bd_vfail(bd_diag *d, bd_status status, const char *fmt, va_list ap);

/* ---- arena ---- */
typedef struct bd_arena_chunk bd_arena_chunk;
typedef struct bd_arena_adopted bd_arena_adopted;
typedef struct bd_arena {
    bd_arena_chunk *head;
    size_t total;     /* bytes handed out, for resource reporting */
    size_t limit;     /* 0 = unlimited; past it allocations fail (return NULL) */
    bd_arena_adopted *adopted; /* heap blocks freed with the arena (bd_arena_adopt) */
} bd_arena;

void *bd_arena_alloc(bd_arena *a, size_t size);        /* zeroed, 16-byte aligned; NULL on failure */
void *bd_arena_array(bd_arena *a, size_t n, size_t elem); /* overflow-checked */
char *bd_arena_strdup(bd_arena *a, const char *s);
char *bd_arena_strndup(bd_arena *a, const char *s, size_t n);
char *bd_arena_printf(bd_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bd_arena_free(bd_arena *a);
/* Makes the malloc'd block p (of size bytes) the arena's: freed by bd_arena_free. A large
 * buffer some library allocated is kept instead of copied. false (p still the caller's) when
 * out of memory or over the limit. */
bool bd_arena_adopt(bd_arena *a, void *p, size_t size);

/* ---- growable array of fixed-size elements (heap backed; owner frees) ---- */
typedef struct bd_vec {
    void *data;
    size_t len, cap, elem;
} bd_vec;
#define BD_VEC(type) ((bd_vec){NULL, 0, 0, sizeof(type)})
void *bd_vec_push(bd_vec *v); /* returns a zeroed slot; aborts on out-of-memory */
/* Appends n elements copied from items; aborts on out-of-memory. */
void bd_vec_append(bd_vec *v, const void *items, size_t n);
void bd_vec_free(bd_vec *v);
#define BD_VEC_AT(v, type, i) (((type *)(v)->data)[i])

/* ---- string -> int map (open addressing, heap backed) ---- */
typedef struct bd_map {
    const char **keys;
    int *vals;
    size_t cap, len;
} bd_map;
int bd_map_get(const bd_map *m, const char *key); /* -1 when absent */
void bd_map_put(bd_map *m, const char *key, int val); /* key must outlive the map */
void bd_map_free(bd_map *m);

/* ---- checked arithmetic: false on overflow ---- */
static inline bool bd_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool bd_add_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* Printable, bounded rendering of an untrusted string for messages (escapes control bytes,
 * cuts long names). Returns a pointer into one of a few rotating static buffers. */
const char *bd_quote(const char *s);

uint64_t bd_hash_str(const char *s);

#endif
