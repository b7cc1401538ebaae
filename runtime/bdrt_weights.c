/* bdrt_weights.c — maps the constants bdc appended to the executable (bdrt.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdrt.h"

static const unsigned char no_weights[64];
const unsigned char *bdrt_weights = no_weights;

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int bdrt_weights_map(int64_t bytes, char *err, size_t err_len) {
    static const char *self = "/proc/self/exe";
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_len, "cannot open %s to read the model's weights: %s", self, strerror(errno));
        return -1;
    }
    struct stat st;
    unsigned char t[32];
    const char *why = NULL;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof t ||
        pread(fd, t, sizeof t, st.st_size - (off_t)sizeof t) != (ssize_t)sizeof t ||
        memcmp(t, BDRT_WEIGHTS_MAGIC, 8) != 0) {
        why = "they are missing from this executable (was it stripped or cut short?)";
    } else {
        uint64_t at = le64(t + 8), n = le64(t + 16), sum = le64(t + 24);
        long page = sysconf(_SC_PAGESIZE);
        if (sum != at + n || at % BDRT_WEIGHTS_ALIGN || (page > 0 && at % (uint64_t)page) ||
            at + n + sizeof t != (uint64_t)st.st_size)
            why = "the executable's weight trailer does not match its size (was it modified?)";
        else if (bytes < 0 || n != (uint64_t)bytes)
            why = "the executable holds another model's weights (was it modified?)";
        else if (n) {
            void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, (off_t)at);
            if (p == MAP_FAILED) {
                snprintf(err, err_len, "cannot map the model's %llu bytes of weights: %s",
                         (unsigned long long)n, strerror(errno));
                close(fd);
                return -1;
            }
            bdrt_weights = p;
        }
    }
    close(fd);
    if (why) {
        snprintf(err, err_len, "the model's weights: %s", why);
        return -1;
    }
    return 0;
}
