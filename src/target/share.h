/* share.h — functions a printer printed alike but for their offsets, found so that one body can
 * serve them all (target/share.c).
 *
 * A transformer's layers and a ResNet stage's repeated blocks lower to nests whose printed bodies
 * differ only in where their values live: other offsets into the arena, the weights or the I/O
 * buffers, other packed slots. A printer passes the spans of its bodies and the texts after which
 * a number is such an offset or index (never a size or a stride: those stay in the text, and so
 * decide what is alike); each body comes back with those numbers set aside, spelled by `ref` with
 * their index ("O[%d]" or "O%d"), and grouped with the bodies equal to it after that. The printer
 * then prints each group's body once, as a function taking the numbers, and each of its
 * functions as a call of it with its own. Replacing a literal by a parameter of the same value
 * keeps the meaning wherever C takes an expression there, which the sites guarantee.
 */
#ifndef BD_SHARE_H
#define BD_SHARE_H

#include <stddef.h>

/* A printed function in a printer's text: its comment from `start`, its opening line at `open`,
 * its body [body, body_end), `end` past its closing brace; `nest`, the nest it runs. */
typedef struct bd_fn_text {
    size_t start, open, body, body_end, end, nest;
} bd_fn_text;

typedef struct bd_share {
    int group;     /* the index of the first body equal to this one once its numbers are aside */
    int members;   /* on a group's first body: the bodies it stands for (1: none like it) */
    int n_numbers; /* the numbers set aside */
    char *text;    /* the body with them spelled by `ref` (heap) */
    char *numbers; /* "n0,n1,..." ("" when none; heap) */
} bd_share;

/* Body i is text[fn[i].body, fn[i].body_end); sites, n_sites: the texts (each after a character
 * that cannot end an identifier) whose following decimal number is set aside. Returns n entries
 * (heap; bd_share_free). */
bd_share *bd_share_find(const char *text, const bd_fn_text *fn, size_t n, const char *const *sites,
                        size_t n_sites, const char *ref);
void bd_share_free(bd_share *s, size_t n);

#endif
