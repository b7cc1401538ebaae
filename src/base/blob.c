/* blob.c — the embedded bytes as parts (blob.h). */
#include "base/blob.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bd_blob_part {
    const unsigned char *data;
    size_t at, len;
    bool owned;
} bd_blob_part;

static int64_t add(bd_blob *b, const void *data, size_t len, bool owned) {
    if (!b->parts.elem) b->parts = BD_VEC(bd_blob_part);
    size_t at = (b->len + BD_BLOB_ALIGN - 1) / BD_BLOB_ALIGN * BD_BLOB_ALIGN;
    bd_blob_part *p = bd_vec_push(&b->parts);
    p->at = at;
    p->len = len;
    p->owned = owned;
    p->data = data;
    b->len = at + len;
    return (int64_t)at;
}

int64_t bd_blob_add(bd_blob *b, const void *data, size_t len) {
    unsigned char *copy = NULL;
    if (len) {
        copy = malloc(len);
        BD_ASSERT(copy);
        memcpy(copy, data, len);
    }
    return add(b, copy, len, true);
}

int64_t bd_blob_add_ref(bd_blob *b, const void *data, size_t len) { return add(b, data, len, false); }

bool bd_write_all(int fd, const void *data, size_t len) {
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len > (1u << 30) ? 1u << 30 : len); /* some kernels cap a write below 2 GiB */
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        p += w, len -= (size_t)w;
    }
    return true;
}

bool bd_blob_write_fd(const bd_blob *b, int fd) {
    static const unsigned char zeros[BD_BLOB_ALIGN];
    size_t pos = 0;
    for (size_t i = 0; i < b->parts.len; i++) {
        const bd_blob_part *p = &BD_VEC_AT(&b->parts, bd_blob_part, i);
        if (!bd_write_all(fd, zeros, p->at - pos) || !bd_write_all(fd, p->data, p->len)) return false;
        pos = p->at + p->len;
    }
    return true;
}

void bd_blob_free(bd_blob *b) {
    for (size_t i = 0; i < b->parts.len; i++) {
        bd_blob_part *p = &BD_VEC_AT(&b->parts, bd_blob_part, i);
        if (p->owned) free((void *)p->data);
    }
    bd_vec_free(&b->parts);
    b->len = 0;
}
