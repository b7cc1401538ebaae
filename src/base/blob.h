/* blob.h — the bytes an executable embeds (the model's constants and the printers' tables), kept
 * as a list of parts instead of one buffer.
 *
 * A model's constants are already in memory (the loaded tensors), and a transformer has 440-650 MB
 * of them: copying them into one buffer, then into a file, costs seconds (first touch of fresh
 * pages is the slow part on the machines measured). A part either borrows its bytes (they must
 * stay alive and unchanged until the blob is written) or owns a copy (small tables built on the
 * stack). Every part starts at a multiple of BD_BLOB_ALIGN from the blob's start; the gaps are
 * zeros. */
#ifndef BD_BLOB_H
#define BD_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

enum { BD_BLOB_ALIGN = 64 };

typedef struct bd_blob {
    bd_vec parts; /* bd_blob_part */
    size_t len;   /* bytes from the blob's start to the end of its last part */
} bd_blob;

#define BD_BLOB_INIT ((bd_blob){.parts = {NULL, 0, 0, 0}, .len = 0})

/* Appends a copy of data[0..len); returns its offset from the blob's start. */
int64_t bd_blob_add(bd_blob *b, const void *data, size_t len);
/* Appends data[0..len) without copying: it must outlive every bd_blob_write of b. */
int64_t bd_blob_add_ref(bd_blob *b, const void *data, size_t len);
/* Writes the blob's bytes (gaps as zeros) to fd at its current position; false with errno set
 * when a write fails. */
bool bd_blob_write_fd(const bd_blob *b, int fd);
void bd_blob_free(bd_blob *b);

/* Writes all of data to fd (retrying short writes and EINTR); false with errno set. */
bool bd_write_all(int fd, const void *data, size_t len);

#endif
