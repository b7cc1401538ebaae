/* share.c — bodies printed alike but for their offsets, grouped (share.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "target/share.h"

static char *finish(bd_vec *v) {
    *(char *)bd_vec_push(v) = 0;
    return v->data;
}

static int is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* The length of the site at text[i] (inside [a, b)) followed by a digit, or 0. */
static size_t site_at(const char *text, size_t a, size_t i, size_t b, const char *const *sites,
                      size_t n_sites) {
    if (i > a && is_ident(text[i - 1])) return 0;
    for (size_t s = 0; s < n_sites; s++) {
        size_t n = strlen(sites[s]);
        if (i + n < b && !strncmp(text + i, sites[s], n) && is_digit(text[i + n])) return n;
    }
    return 0;
}

bd_share *bd_share_find(const char *text, const bd_fn_text *fn, size_t n, const char *const *sites,
                        size_t n_sites, const char *ref) {
    bd_share *r = calloc(n + 1, sizeof *r);
    uint64_t *hash = calloc(n + 1, sizeof *hash);
    BD_ASSERT(r && hash);
    for (size_t k = 0; k < n; k++) {
        const size_t a = fn[k].body, b = fn[k].body_end;
        bd_vec t = BD_VEC(char), o = BD_VEC(char);
        for (size_t i = a; i < b;) {
            size_t site = site_at(text, a, i, b, sites, n_sites);
            if (!site) {
                *(char *)bd_vec_push(&t) = text[i++];
                continue;
            }
            bd_vec_append(&t, text + i, site);
            i += site;
            size_t d = i;
            while (d < b && is_digit(text[d])) d++;
            if (r[k].n_numbers) *(char *)bd_vec_push(&o) = ',';
            bd_vec_append(&o, text + i, d - i);
            char name[32];
            bd_vec_append(&t, name, (size_t)snprintf(name, sizeof name, ref, r[k].n_numbers++));
            i = d;
        }
        r[k].text = finish(&t);
        r[k].numbers = finish(&o);
        hash[k] = bd_hash_str(r[k].text);
        r[k].group = (int)k;
        for (size_t j = 0; j < k; j++)
            if (r[j].group == (int)j && hash[j] == hash[k] && !strcmp(r[j].text, r[k].text)) {
                r[k].group = (int)j;
                break;
            }
        r[r[k].group].members++;
    }
    free(hash);
    return r;
}

void bd_share_free(bd_share *s, size_t n) {
    for (size_t k = 0; s && k < n; k++) {
        free(s[k].text);
        free(s[k].numbers);
    }
    free(s);
}
