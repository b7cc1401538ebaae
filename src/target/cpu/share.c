/* share.c — block functions that print alike, compiled once.
 *
 * A transformer's layers and a ResNet stage's repeated blocks lower to nests that differ only in
 * where their values live: the same loops over other offsets into the arena and the weights, and
 * other packed slots. Printed as they are, each one is compiled again, and the native build was
 * most of the compile time (BERT-base: 163 block functions, 16 distinct once their offsets are
 * set aside). Here each block function's body is read back with every such number (the one after
 * `bd_weights + `, `S->arena + `, `S->packed[`, `S->in[` or `S->out[`) replaced by `O[j]`, its
 * j-th; bodies equal after that are printed once, as BD_BODY(the first nest's index), and the
 * block function of each of those nests calls it with its own table O. A body no other nest
 * shares stays as printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/cpu/emit.h"

/* The numbers set aside: each follows one of these and is an offset or an index, never a size
 * or a stride (those are part of what makes two bodies the same). */
static const char *const offset_sites[] = {"bd_weights + ", "S->arena + ", "S->packed[", "S->in[",
                                           "S->out["};

typedef struct body {
    char *text;      /* the body with its numbers as O[j] */
    char *offsets;   /* "n0,n1,..." (or "0" when it has none) */
    uint64_t hash;
    int group;       /* index of the first kernel with this text */
} body;

static void append(bd_vec *v, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        *(char *)bd_vec_push(v) = s[i];
}

static char *finish(bd_vec *v) {
    *(char *)bd_vec_push(v) = 0;
    return v->data;
}

/* Body text [a, b) with its offsets set aside. */
static body read_body(const char *text, size_t a, size_t b) {
    bd_vec t = BD_VEC(char), o = BD_VEC(char);
    int j = 0;
    for (size_t i = a; i < b;) {
        size_t site = 0;
        for (size_t s = 0; s < BD_COUNT(offset_sites) && !site; s++) {
            size_t n = strlen(offset_sites[s]);
            if (i + n < b && !strncmp(text + i, offset_sites[s], n) && text[i + n] >= '0' &&
                text[i + n] <= '9')
                site = n;
        }
        if (!site) {
            *(char *)bd_vec_push(&t) = text[i++];
            continue;
        }
        append(&t, text + i, site);
        i += site;
        size_t d = i;
        while (d < b && text[d] >= '0' && text[d] <= '9') d++;
        if (j) *(char *)bd_vec_push(&o) = ',';
        append(&o, text + i, d - i);
        char ref[24];
        append(&t, ref, (size_t)snprintf(ref, sizeof ref, "O[%d]", j++));
        i = d;
    }
    if (!j) *(char *)bd_vec_push(&o) = '0';
    body r = {finish(&t), finish(&o), 14695981039346656037ull, -1};
    for (const char *c = r.text; *c; c++) r.hash = (r.hash ^ (unsigned char)*c) * 1099511628211ull;
    return r;
}

static const char *copy_text(bd_emitter *e, const bd_vec *v) {
    return bd_emit_str(e, "%.*s", (int)v->len, (const char *)v->data);
}

void bd_share_bodies(bd_emitter *e, const char *text, const bd_kernel_text *k, size_t n,
                     const char **replace, const char **declare) {
    body *b = calloc(n + 1, sizeof *b);
    int *members = calloc(n + 1, sizeof *members);
    BD_ASSERT(b && members);
    for (size_t i = 0; i < n; i++) {
        b[i] = read_body(text, k[i].body, k[i].body_end);
        for (size_t j = 0; j < i && b[i].group < 0; j++)
            if (b[j].group == (int)j && b[j].hash == b[i].hash && !strcmp(b[j].text, b[i].text))
                b[i].group = (int)j;
        if (b[i].group < 0) b[i].group = (int)i;
        members[b[i].group]++;
    }
    for (size_t i = 0; i < n; i++) {
        replace[i] = declare[i] = NULL;
        int g = b[i].group;
        if (members[g] < 2) continue;
        size_t first = k[g].nest;
        bd_vec t = BD_VEC(char);
        if (g == (int)i) {
            const char *head = bd_emit_str(
                e, "/* the block function of nest %zu and %d more nests like it, their offsets in O */\n"
                   "BD_BODY(%zu) {\n", first, members[g] - 1, first);
            append(&t, head, strlen(head));
            append(&t, b[i].text, strlen(b[i].text));
            append(&t, "}\n", 2);
            declare[i] = bd_emit_str(e, "BD_BODY(%zu);\n", first);
        }
        append(&t, text + k[i].start, k[i].open - k[i].start); /* the nest's comment */
        const char *call = bd_emit_str(e,
                                       "BD_KERNEL(%zu) {\n"
                                       "    static const int64_t O[] = {%s};\n"
                                       "    BD_B(%zu)(ctx, block, thread, O);\n"
                                       "}\n",
                                       k[i].nest, b[i].offsets, first);
        append(&t, call, strlen(call));
        replace[i] = copy_text(e, &t);
        bd_vec_free(&t);
    }
    for (size_t i = 0; i < n; i++) {
        free(b[i].text);
        free(b[i].offsets);
    }
    free(b);
    free(members);
}
