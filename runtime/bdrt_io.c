/* bdrt_io.c — tensor files: .npy and ONNX TensorProto (.pb) readers, the .npy writer, output
 * file names.
 *
 * Input files are untrusted (this code is fuzzed through bdrt_tensor_parse): every length is
 * checked against the bytes that are really there before it is used, the .npy header dict is
 * parsed by a small bounded tokenizer (no recursion, no allocation), and the protobuf wire
 * format is walked twice by hand (no protobuf library: the runtime stays dependency-free), once
 * to collect dims, data_type and per-field element counts, and once to convert the one typed
 * field that holds the data. A tensor is accepted only if its dtype, its shape (exactly: a scalar
 * is not [1]) and its byte or element count equal what the model expects; every refusal is one
 * line saying what was expected and what was found. Files are opened with O_NONBLOCK and must be
 * regular (a FIFO cannot hang the program); .npy data is read straight into the input buffer. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdrt.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

/* ---- dtypes ---- */

typedef struct dtype_info {
    int code;
    unsigned size;
    char kind; /* numpy kind: f, i, u, b; 0 = no .npy form */
    const char *name;
} dtype_info;

static const dtype_info dtype_table[] = {
    {BDRT_FLOAT32, 4, 'f', "float32"}, {BDRT_UINT8, 1, 'u', "uint8"},
    {BDRT_INT8, 1, 'i', "int8"},       {BDRT_UINT16, 2, 'u', "uint16"},
    {BDRT_INT16, 2, 'i', "int16"},     {BDRT_INT32, 4, 'i', "int32"},
    {BDRT_INT64, 8, 'i', "int64"},     {BDRT_BOOL, 1, 'b', "bool"},
    {BDRT_FLOAT16, 2, 'f', "float16"}, {BDRT_FLOAT64, 8, 'f', "float64"},
    {BDRT_UINT32, 4, 'u', "uint32"},   {BDRT_UINT64, 8, 'u', "uint64"},
};

static const dtype_info *dtype_find(int code) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].code == code) return &dtype_table[i];
    return NULL;
}

static const dtype_info *dtype_from_npy(char kind, unsigned size) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].kind == kind && dtype_table[i].size == size) return &dtype_table[i];
    return NULL;
}

size_t bdrt_dtype_size(int dtype) {
    const dtype_info *d = dtype_find(dtype);
    return d ? d->size : 0;
}

const char *bdrt_dtype_name(int dtype) {
    static const char *const other[] = {
        [0] = "undefined",       [8] = "string",      [14] = "complex64",
        [15] = "complex128",     [16] = "bfloat16",   [17] = "float8e4m3fn",
        [18] = "float8e4m3fnuz", [19] = "float8e5m2", [20] = "float8e5m2fnuz",
        [21] = "uint4",          [22] = "int4",       [23] = "float4e2m1",
    };
    const dtype_info *d = dtype_find(dtype);
    if (d) return d->name;
    if (dtype >= 0 && dtype < (int)(sizeof other / sizeof other[0]) && other[dtype])
        return other[dtype];
    return "unknown dtype";
}

int bdrt_io_size(const bdrt_io *io, int64_t *numel, size_t *nbytes) {
    size_t es = bdrt_dtype_size(io->dtype);
    if (!es || io->rank < 0 || io->rank > BDRT_MAX_RANK) return -1;
    int64_t n = 1;
    for (int i = 0; i < io->rank; i++) {
        if (io->dims[i] < 0) return -1;
        if (io->dims[i] && n > INT64_MAX / io->dims[i]) return -1;
        n *= io->dims[i];
    }
    if ((uint64_t)n > SIZE_MAX / es || (uint64_t)n > (uint64_t)INT64_MAX / es) return -1;
    if (numel) *numel = n;
    if (nbytes) *nbytes = (size_t)n * es;
    return 0;
}

static int host_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void byte_swap(void *data, size_t n, size_t size) {
    unsigned char *p = data;
    if (size < 2) return;
    for (size_t i = 0; i < n; i++, p += size)
        for (size_t a = 0, z = size - 1; a < z; a++, z--) {
            unsigned char t = p[a];
            p[a] = p[z];
            p[z] = t;
        }
}

/* bool inputs become exactly 0 or 1 (generated code may read them as C _Bool). */
static void normalise_bool(const bdrt_io *io, void *data, size_t nbytes) {
    unsigned char *p = data;
    if (io->dtype != BDRT_BOOL) return;
    for (size_t i = 0; i < nbytes; i++)
        p[i] = p[i] != 0;
}

/* ---- messages ---- */

char *bdrt_escape(char *dst, size_t cap, const char *s, size_t max_chars) {
    size_t o = 0, i = 0;
    if (!cap) return dst;
    if (!s) s = "";
    for (; s[i] && i < max_chars; i++) {
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        size_t k;
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            tmp[0] = (char)c;
            k = 1;
        } else {
            k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
        }
        if (o + k + 4 > cap) break; /* room for "..." and NUL */
        memcpy(dst + o, tmp, k);
        o += k;
    }
    if (s[i] && o + 4 <= cap) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = 0;
    return dst;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return BDRT_EXIT_INPUT;
}

/* "[2,3]" into buf. Only the first `known` dims are available; a longer shape (or one that
 * does not fit) ends in ",...] (rank N)". */
static void shape_str(char *buf, size_t cap, int rank, int known, const int64_t *dims) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    int i = 0;
    for (; i < rank && i < known && o + 48 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? "," : "", dims[i]);
    if (i == rank)
        snprintf(buf + o, cap - o, "]");
    else
        snprintf(buf + o, cap - o, ",...] (rank %d)", rank);
}

#define SHAPE_STR_MAX 400
#define MAX_FILE_DIMS 32 /* dims remembered from a file for the mismatch message */

/* 0 when the file's shape equals the expected one, else the mismatch message. file_rank may
 * exceed MAX_FILE_DIMS (only the first ones are kept). A ranged batch (io->batch_min > 0) takes
 * any dim 0 in [batch_min, dims[0]]; *actual is io with the file's dim 0. */
static int check_shape(const bdrt_io *io, int file_rank, const int64_t *file_dims, bdrt_io *actual,
                       char *err, size_t errlen) {
    int ranged = io->batch_min > 0 && io->rank > 0;
    int same = file_rank == io->rank;
    for (int i = 0; same && i < io->rank; i++)
        same = file_dims[i] == io->dims[i] || (i == 0 && ranged);
    *actual = *io;
    if (same && ranged) {
        if (file_dims[0] < io->batch_min || file_dims[0] > io->dims[0])
            return fail(err, errlen, "batch %" PRId64 " is outside the compiled range %" PRId64
                        "..%" PRId64, file_dims[0], io->batch_min, io->dims[0]);
        actual->dims[0] = file_dims[0];
    }
    if (same) return 0;
    char want[SHAPE_STR_MAX], got[SHAPE_STR_MAX];
    shape_str(want, sizeof want, io->rank, io->rank, io->dims);
    if (ranged) { /* [1..8,3,224,224] */
        char dims[SHAPE_STR_MAX];
        memcpy(dims, want, sizeof dims);
        const char *tail = strchr(dims, ',');
        snprintf(want, sizeof want, "[%" PRId64 "..%" PRId64 "%s", io->batch_min, io->dims[0],
                 tail ? tail : "]");
    }
    shape_str(got, sizeof got, file_rank, MAX_FILE_DIMS, file_dims);
    const char *note = "";
    if (file_rank == 0 && io->rank > 0)
        note = " (a scalar)";
    else if (io->rank == 0)
        note = " (expected a scalar)";
    return fail(err, errlen, "shape mismatch: expected %s, got %s%s", want, got, note);
}

/* ---- .npy ---- */

typedef struct npy_header {
    int major, minor;
    size_t data_offset;
    char descr[24]; /* escaped, for messages */
    int descr_list; /* a structured dtype (list) */
    char order;     /* '<', '>', '|', '=' or 0 */
    char kind;
    unsigned size;
    int fortran;
    int rank;
    int64_t dims[MAX_FILE_DIMS];
} npy_header;

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
#define NPY_HEADER_MAX 65536 /* bytes of header dict; numpy itself refuses over 10000 */

typedef struct cursor {
    const unsigned char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r' ||
                             *c->p == '\f' || *c->p == '\v'))
        c->p++;
}

static int eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == (unsigned char)ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A Python string literal ('...' or "...", backslash escapes copied verbatim); keeps at most
 * cap-1 bytes in out and sets *truncated. 0 ok, -1 malformed. */
static int parse_string(cursor *c, char *out, size_t cap, int *truncated) {
    size_t n = 0;
    skip_ws(c);
    *truncated = 0;
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    unsigned char q = *c->p++;
    for (;;) {
        if (c->p >= c->end) return -1;
        unsigned char ch = *c->p++;
        if (ch == q) break;
        if (ch == '\n') return -1;
        if (ch == '\\') {
            if (c->p >= c->end) return -1;
            ch = *c->p++;
        }
        if (n + 1 < cap)
            out[n++] = (char)ch;
        else
            *truncated = 1;
    }
    out[n] = 0;
    return 0;
}

/* A Python identifier-like word (True, False) into out. */
static int parse_word(cursor *c, char *out, size_t cap) {
    size_t n = 0;
    skip_ws(c);
    while (c->p < c->end &&
           ((*c->p >= 'a' && *c->p <= 'z') || (*c->p >= 'A' && *c->p <= 'Z') || *c->p == '_')) {
        if (n + 1 >= cap) return -1;
        out[n++] = (char)*c->p++;
    }
    out[n] = 0;
    return n ? 0 : -1;
}

/* A non-negative decimal integer (Python 2's 'L' suffix allowed). 0, -1 malformed, -2 too big,
 * -3 negative. */
static int parse_dim(cursor *c, int64_t *v) {
    skip_ws(c);
    int neg = 0;
    if (c->p < c->end && *c->p == '-') {
        neg = 1;
        c->p++;
    }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
    int64_t x = 0;
    int big = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p++ - '0';
        if (x > (INT64_MAX - d) / 10)
            big = 1;
        else
            x = x * 10 + d;
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++;
    if (neg && (x || big)) return -3;
    if (big) return -2;
    *v = x;
    return 0;
}

static int parse_shape(cursor *c, npy_header *h, char *err, size_t errlen) {
    if (!eat(c, '(')) return fail(err, errlen, "malformed .npy header: 'shape' is not a tuple");
    int n = 0, commas = 0;
    if (eat(c, ')')) {
        h->rank = 0;
        return 0;
    }
    for (;;) {
        int64_t v = 0;
        int r = parse_dim(c, &v);
        if (r == -2) return fail(err, errlen, "malformed .npy header: dimension too large");
        if (r == -3) return fail(err, errlen, "malformed .npy header: negative dimension");
        if (r) return fail(err, errlen, "malformed .npy header: bad 'shape' tuple");
        if (n < MAX_FILE_DIMS) h->dims[n] = v;
        if (n < INT_MAX) n++;
        if (eat(c, ',')) {
            commas++;
            if (eat(c, ')')) break;
            continue;
        }
        if (eat(c, ')')) break;
        return fail(err, errlen, "malformed .npy header: bad 'shape' tuple");
    }
    if (n == 1 && !commas)
        return fail(err, errlen, "malformed .npy header: 'shape' is not a tuple");
    h->rank = n;
    return 0;
}

static int parse_descr(cursor *c, npy_header *h, char *err, size_t errlen) {
    char s[64];
    int truncated;
    skip_ws(c);
    if (c->p < c->end && *c->p == '[') {
        /* A structured dtype: never one of ours. Skip the list, honouring string literals. */
        int depth = 0;
        while (c->p < c->end) {
            unsigned char ch = *c->p;
            if (ch == '\'' || ch == '"') {
                if (parse_string(c, s, sizeof s, &truncated))
                    return fail(err, errlen, "malformed .npy header: bad 'descr'");
                continue;
            }
            c->p++;
            if (ch == '[' || ch == '(')
                depth++;
            else if ((ch == ']' || ch == ')') && --depth == 0)
                break;
        }
        if (depth) return fail(err, errlen, "malformed .npy header: bad 'descr'");
        h->descr_list = 1;
        snprintf(h->descr, sizeof h->descr, "[...]");
        return 0;
    }
    if (parse_string(c, s, sizeof s, &truncated))
        return fail(err, errlen, "malformed .npy header: 'descr' is not a string");
    bdrt_escape(h->descr, sizeof h->descr, s, 12);
    const char *q = s;
    if (*q == '<' || *q == '>' || *q == '|' || *q == '=') h->order = *q++;
    h->kind = *q ? *q++ : 0;
    unsigned size = 0;
    int digits = 0;
    while (*q >= '0' && *q <= '9' && digits < 4)
        size = size * 10 + (unsigned)(*q++ - '0'), digits++;
    h->size = (*q || !digits || truncated) ? 0 : size; /* 0: not a simple dtype */
    return 0;
}

/* Parses the header at buf (len bytes available, at least the whole header if it is complete).
 * 0 ok; else the reason in err. */
static int npy_parse_header(const unsigned char *buf, size_t len, npy_header *h, char *err,
                            size_t errlen) {
    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(buf, npy_magic, 6) != 0)
        return fail(err, errlen, "not a .npy file (bad magic)");
    h->major = buf[6];
    h->minor = buf[7];
    size_t hlen, pre;
    if (h->major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        pre = 10;
    } else if (h->major == 2 || h->major == 3) {
        if (len < 12) return fail(err, errlen, "truncated .npy header");
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        pre = 12;
    } else {
        return fail(err, errlen, "unsupported .npy format version %d.%d (1.0, 2.0, 3.0 are read)",
                    h->major, h->minor);
    }
    if (h->minor != 0)
        return fail(err, errlen, "unsupported .npy format version %d.%d (1.0, 2.0, 3.0 are read)",
                    h->major, h->minor);
    if (hlen > NPY_HEADER_MAX)
        return fail(err, errlen, "malformed .npy header: header length %zu over the limit of %d",
                    hlen, NPY_HEADER_MAX);
    if (len - pre < hlen)
        return fail(err, errlen, "truncated .npy header: %zu bytes announced, %zu present", hlen,
                    len - pre);
    h->data_offset = pre + hlen;

    cursor c = {buf + pre, buf + pre + hlen};
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
    if (!eat(&c, '{')) return fail(err, errlen, "malformed .npy header: not a dict");
    for (;;) {
        if (eat(&c, '}')) break;
        char key[32];
        int truncated;
        if (parse_string(&c, key, sizeof key, &truncated) || truncated)
            return fail(err, errlen, "malformed .npy header: bad dict key");
        if (!eat(&c, ':')) return fail(err, errlen, "malformed .npy header: missing ':'");
        if (!strcmp(key, "descr")) {
            if (seen_descr++) return fail(err, errlen, "malformed .npy header: 'descr' twice");
            if (parse_descr(&c, h, err, errlen)) return BDRT_EXIT_INPUT;
        } else if (!strcmp(key, "fortran_order")) {
            char w[8];
            if (seen_fortran++)
                return fail(err, errlen, "malformed .npy header: 'fortran_order' twice");
            if (parse_word(&c, w, sizeof w) || (strcmp(w, "True") && strcmp(w, "False")))
                return fail(err, errlen, "malformed .npy header: 'fortran_order' is not a bool");
            h->fortran = !strcmp(w, "True");
        } else if (!strcmp(key, "shape")) {
            if (seen_shape++) return fail(err, errlen, "malformed .npy header: 'shape' twice");
            if (parse_shape(&c, h, err, errlen)) return BDRT_EXIT_INPUT;
        } else {
            char k[64];
            return fail(err, errlen, "malformed .npy header: unexpected key '%s'",
                        bdrt_escape(k, sizeof k, key, 24));
        }
        if (eat(&c, ',')) continue;
        if (eat(&c, '}')) break;
        return fail(err, errlen, "malformed .npy header: expected ',' or '}'");
    }
    skip_ws(&c);
    if (c.p != c.end) return fail(err, errlen, "malformed .npy header: bytes after the dict");
    if (!seen_descr || !seen_fortran || !seen_shape)
        return fail(err, errlen, "malformed .npy header: missing key '%s'",
                    !seen_descr     ? "descr"
                    : !seen_fortran ? "fortran_order"
                                    : "shape");
    return 0;
}

/* Checks the parsed header against the expected input; sets *swap when the data's byte order
 * differs from the host's. */
static int npy_check(const npy_header *h, const bdrt_io *io, bdrt_io *actual, int *swap, char *err,
                     size_t errlen) {
    const dtype_info *want = dtype_find(io->dtype);
    const dtype_info *got = h->descr_list || !h->size ? NULL : dtype_from_npy(h->kind, h->size);
    if (!got || got != want) {
        char wd[16];
        snprintf(wd, sizeof wd, "%c%c%u", want->size > 1 ? '<' : '|', want->kind, want->size);
        if (!got)
            return fail(err, errlen, "dtype mismatch: expected %s ('%s'), got unsupported '%s'",
                        want->name, wd, h->descr);
        return fail(err, errlen, "dtype mismatch: expected %s ('%s'), got %s ('%s')", want->name,
                    wd, got->name, h->descr);
    }
    if (h->fortran)
        return fail(err, errlen, "fortran_order True is not supported (save a C-ordered array)");
    if (check_shape(io, h->rank, h->dims, actual, err, errlen)) return BDRT_EXIT_INPUT;
    int file_le = h->order == '<' || (h->order != '>' && host_little_endian());
    *swap = got->size > 1 && file_le != host_little_endian();
    return 0;
}

/* ---- ONNX TensorProto ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static int read_varint(const unsigned char **pp, const unsigned char *end, uint64_t *v) {
    uint64_t r = 0;
    const unsigned char *p = *pp;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return -1;
        unsigned b = *p++;
        if (i == 9 && b > 1) return -1;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* One field of the wire format: its number, wire type, and value or payload. */
typedef struct pb_field {
    uint32_t num;
    int wt;
    uint64_t v;                /* WT_VARINT, WT_I64, WT_I32 */
    const unsigned char *data; /* WT_LEN payload; WT_I64/WT_I32 raw bytes */
    size_t len;
} pb_field;

static int next_field(const unsigned char **pp, const unsigned char *end, pb_field *f) {
    uint64_t key;
    if (read_varint(pp, end, &key)) return -1;
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) return -1;
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    f->data = *pp;
    switch (f->wt) {
    case WT_VARINT: return read_varint(pp, end, &f->v);
    case WT_I64:
        if (end - *pp < 8) return -1;
        f->len = 8;
        *pp += 8;
        return 0;
    case WT_I32:
        if (end - *pp < 4) return -1;
        f->len = 4;
        *pp += 4;
        return 0;
    case WT_LEN: {
        uint64_t n;
        if (read_varint(pp, end, &n) || n > (uint64_t)(end - *pp)) return -1;
        f->data = *pp;
        f->len = (size_t)n;
        *pp += n;
        return 0;
    }
    default: return -1; /* groups (3, 4) and invalid types */
    }
}

static uint64_t load_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Typed data fields of TensorProto. */
enum { F_FLOAT = 0, F_INT32, F_INT64, F_DOUBLE, F_UINT64, F_STRING, F_COUNT };
static const char *const field_names[F_COUNT] = {"float_data",  "int32_data",  "int64_data",
                                                 "double_data", "uint64_data", "string_data"};
static const uint32_t field_nums[F_COUNT] = {4, 5, 7, 10, 11, 6};

static int field_index(uint32_t num) {
    for (int i = 0; i < F_COUNT; i++)
        if (field_nums[i] == num) return i;
    return -1;
}

/* The typed field ONNX uses for each dtype. */
static int field_for_dtype(int dtype) {
    switch (dtype) {
    case BDRT_FLOAT32: return F_FLOAT;
    case BDRT_INT64: return F_INT64;
    case BDRT_FLOAT64: return F_DOUBLE;
    case BDRT_UINT32:
    case BDRT_UINT64: return F_UINT64;
    default: return F_INT32; /* int32, int16, int8, uint16, uint8, bool, float16 */
    }
}

/* Element width of a fixed-width field (float 4, double 8), 0 for varint fields. */
static size_t fixed_width(int field) {
    return field == F_FLOAT ? 4 : field == F_DOUBLE ? 8 : 0;
}

static int count_varints(const unsigned char *p, size_t len, uint64_t *count) {
    const unsigned char *end = p + len;
    while (p < end) {
        uint64_t v;
        if (read_varint(&p, end, &v)) return -1;
        ++*count;
    }
    return 0;
}

static void store(void *dst, int64_t i, int dtype, uint64_t v) {
    unsigned char *d = dst;
    switch (dtype) {
    case BDRT_FLOAT32: {
        uint32_t u = (uint32_t)v;
        memcpy(d + 4 * i, &u, 4);
        break;
    }
    case BDRT_INT32:
    case BDRT_UINT32: {
        uint32_t u = (uint32_t)v;
        memcpy(d + 4 * i, &u, 4);
        break;
    }
    case BDRT_INT16:
    case BDRT_UINT16:
    case BDRT_FLOAT16: {
        uint16_t u = (uint16_t)v;
        memcpy(d + 2 * i, &u, 2);
        break;
    }
    case BDRT_INT8:
    case BDRT_UINT8: d[i] = (unsigned char)v; break;
    case BDRT_BOOL: d[i] = (uint32_t)v != 0; break;
    default: memcpy(d + 8 * i, &v, 8); break; /* int64, uint64, float64 (bits) */
    }
}

static int pb_parse(const unsigned char *buf, size_t len, const bdrt_io *io, bdrt_io *actual,
                    void *dst, char *err, size_t errlen) {
    int64_t numel;
    size_t nbytes;
    if (bdrt_io_size(io, &numel, &nbytes)) return fail(err, errlen, "invalid input descriptor");

    const unsigned char *p = buf, *end = buf + len;
    int64_t dims[MAX_FILE_DIMS];
    int rank = 0, has_dtype = 0, has_raw = 0, external = 0;
    int64_t dtype = 0;
    const unsigned char *raw = NULL;
    size_t raw_len = 0;
    uint64_t counts[F_COUNT] = {0};
    pb_field f;

    while (p < end) {
        if (next_field(&p, end, &f))
            return fail(err, errlen, "malformed TensorProto (bad wire format)");
        int fi = field_index(f.num);
        if (f.num == 1) { /* dims: repeated int64, packed or not */
            if (f.wt == WT_VARINT) {
                if (rank < MAX_FILE_DIMS) dims[rank] = (int64_t)f.v;
                if (rank < INT_MAX) rank++;
            } else if (f.wt == WT_LEN) {
                const unsigned char *q = f.data, *qe = f.data + f.len;
                while (q < qe) {
                    uint64_t v;
                    if (read_varint(&q, qe, &v))
                        return fail(err, errlen, "malformed TensorProto (bad packed dims)");
                    if (rank < MAX_FILE_DIMS) dims[rank] = (int64_t)v;
                    if (rank < INT_MAX) rank++;
                }
            } else {
                return fail(err, errlen, "malformed TensorProto (dims has wire type %d)", f.wt);
            }
        } else if (f.num == 2) {
            if (f.wt != WT_VARINT)
                return fail(err, errlen, "malformed TensorProto (data_type has wire type %d)",
                            f.wt);
            dtype = (int64_t)(int32_t)(uint32_t)f.v;
            has_dtype = 1;
        } else if (f.num == 9) {
            if (f.wt != WT_LEN)
                return fail(err, errlen, "malformed TensorProto (raw_data has wire type %d)", f.wt);
            raw = f.data;
            raw_len = f.len;
            has_raw = 1;
        } else if (f.num == 13) {
            external = 1;
        } else if (f.num == 14) {
            if (f.wt == WT_VARINT && f.v == 1) external = 1;
        } else if (fi >= 0) {
            size_t w = fixed_width(fi);
            int ok = 1;
            if (f.wt == WT_LEN && fi == F_STRING) {
                counts[fi]++;
            } else if (f.wt == WT_LEN && w) {
                if (f.len % w)
                    return fail(err, errlen,
                                "malformed TensorProto (%s length %zu not a multiple "
                                "of %zu)",
                                field_names[fi], f.len, w);
                counts[fi] += f.len / w;
            } else if (f.wt == WT_LEN) {
                ok = !count_varints(f.data, f.len, &counts[fi]);
            } else if (fi != F_STRING &&
                       ((w == 4 && f.wt == WT_I32) || (w == 8 && f.wt == WT_I64) ||
                        (!w && f.wt == WT_VARINT))) {
                counts[fi]++;
            } else {
                ok = 0;
            }
            if (!ok)
                return fail(err, errlen, "malformed TensorProto (bad %s, wire type %d)",
                            field_names[fi], f.wt);
        }
        /* every other field (name, doc_string, segment, metadata) is skipped */
    }

    if (external)
        return fail(err, errlen,
                    "TensorProto with external data is not supported (store the "
                    "data in the file)");
    if (!has_dtype || dtype != io->dtype) {
        char got[48];
        if (!has_dtype)
            snprintf(got, sizeof got, "no data_type");
        else if (dtype < 0 || dtype > 1000)
            snprintf(got, sizeof got, "data_type %" PRId64, dtype);
        else
            snprintf(got, sizeof got, "%s", bdrt_dtype_name((int)dtype));
        return fail(err, errlen, "dtype mismatch: expected %s, got %s", bdrt_dtype_name(io->dtype),
                    got);
    }
    if (check_shape(io, rank, dims, actual, err, errlen)) return BDRT_EXIT_INPUT;
    if (bdrt_io_size(actual, &numel, &nbytes)) return fail(err, errlen, "invalid input descriptor");

    int want = field_for_dtype(io->dtype);
    for (int i = 0; i < F_COUNT; i++) {
        if (!counts[i] || (i == want && !has_raw)) continue;
        if (has_raw)
            return fail(err, errlen, "malformed TensorProto (both raw_data and %s are set)",
                        field_names[i]);
        return fail(err, errlen,
                    "malformed TensorProto (data_type %s stores its values in %s, "
                    "found %s)",
                    bdrt_dtype_name(io->dtype), field_names[want], field_names[i]);
    }
    if (has_raw) {
        if (raw_len != nbytes)
            return fail(err, errlen,
                        "byte size mismatch: expected %zu bytes of raw_data for "
                        "%" PRId64 " elements, got %zu",
                        nbytes, numel, raw_len);
        if (nbytes) memcpy(dst, raw, nbytes);
        if (!host_little_endian()) byte_swap(dst, (size_t)numel, bdrt_dtype_size(io->dtype));
        normalise_bool(io, dst, nbytes);
        return 0;
    }
    if (counts[want] != (uint64_t)numel)
        return fail(err, errlen,
                    "element count mismatch: expected %" PRId64 " values in %s, "
                    "got %" PRIu64,
                    numel, field_names[want], counts[want]);

    /* Second pass: convert the typed field into native layout. */
    size_t w = fixed_width(want);
    int64_t i = 0;
    for (p = buf; p < end;) {
        if (next_field(&p, end, &f)) return fail(err, errlen, "malformed TensorProto");
        if (f.num != field_nums[want]) continue;
        if (f.wt == WT_LEN) {
            const unsigned char *q = f.data, *qe = f.data + f.len;
            while (q < qe && i < numel) {
                uint64_t v;
                if (w) {
                    v = load_le(q, (int)w);
                    q += w;
                } else if (read_varint(&q, qe, &v)) {
                    return fail(err, errlen, "malformed TensorProto");
                }
                store(dst, i++, io->dtype, v);
            }
        } else if (i < numel) {
            store(dst, i++, io->dtype, w ? load_le(f.data, (int)w) : f.v);
        }
    }
    return 0;
}

/* ---- readers ---- */

int bdrt_tensor_parse(const void *buf_, size_t len, const bdrt_io *io, void *dst, char *err,
                      size_t errlen) {
    const unsigned char *buf = buf_;
    int64_t numel;
    size_t nbytes;
    if (bdrt_io_size(io, &numel, &nbytes)) return fail(err, errlen, "invalid input descriptor");
    bdrt_io actual;
    if (len < 6 || memcmp(buf, npy_magic, 6) != 0)
        return pb_parse(buf, len, io, &actual, dst, err, errlen);

    npy_header h;
    int swap;
    if (npy_parse_header(buf, len, &h, err, errlen) ||
        npy_check(&h, io, &actual, &swap, err, errlen) || bdrt_io_size(&actual, &numel, &nbytes))
        return BDRT_EXIT_INPUT;
    size_t have = len - h.data_offset;
    if (have < nbytes)
        return fail(err, errlen, "truncated .npy data: expected %zu bytes, got %zu", nbytes, have);
    if (have > nbytes)
        return fail(err, errlen,
                    "byte size mismatch: expected %zu data bytes, got %zu (%zu "
                    "trailing)",
                    nbytes, have, have - nbytes);
    if (nbytes) memcpy(dst, buf + h.data_offset, nbytes);
    if (swap) byte_swap(dst, (size_t)numel, bdrt_dtype_size(io->dtype));
    normalise_bool(io, dst, nbytes);
    return 0;
}

/* Reads exactly n bytes at the current offset; 0, or -1 with errno (0 errno: end of file). */
static int read_full(int fd, void *buf, size_t n) {
    unsigned char *p = buf;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        ssize_t r = read(fd, p, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = 0;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "special file";
}

static int read_error(char *err, size_t errlen, int e) {
    if (e == 0) return fail(err, errlen, "file changed while reading (shorter than its size)");
    return fail(err, errlen, "read error: %s", strerror(e));
}

/* npy_name: the path ends in ".npy", so a file without the magic is reported as such rather
 * than parsed as a TensorProto. */
static int read_fd(int fd, const bdrt_io *io, bdrt_io *actual, int npy_name, void *dst, char *err,
                   size_t errlen) {
    int64_t numel;
    size_t nbytes;
    struct stat st;
    if (bdrt_io_size(io, &numel, &nbytes)) return fail(err, errlen, "invalid input descriptor");
    if (fstat(fd, &st)) return fail(err, errlen, "cannot stat: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(err, errlen, "not a regular file (%s)", file_kind(st.st_mode));
    /* Regular files never block; restore blocking mode anyway for plain reads. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (st.st_size < 0) return fail(err, errlen, "bad file size");
    uint64_t size = (uint64_t)st.st_size;

    unsigned char pre[12];
    size_t npre = size < sizeof pre ? (size_t)size : sizeof pre;
    if (read_full(fd, pre, npre)) return read_error(err, errlen, errno);
    if (npre >= 6 && memcmp(pre, npy_magic, 6) == 0) {
        /* .npy: read the header, check it, then read the data straight into dst. */
        if (npre < 10) return fail(err, errlen, "truncated .npy header");
        size_t hlen = pre[6] == 1  ? ((size_t)pre[8] | (size_t)pre[9] << 8)
                      : npre == 12 ? ((size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                                      (size_t)pre[11] << 24)
                                   : 0;
        size_t pre_len = pre[6] == 1 ? 10 : 12;
        size_t total = pre_len + (hlen > NPY_HEADER_MAX ? 0 : hlen);
        if (total > size) total = (size_t)size;
        if (total < npre) total = npre;
        unsigned char *hb = malloc(total);
        if (!hb) return fail(err, errlen, "out of memory");
        memcpy(hb, pre, npre);
        npy_header h;
        int swap = 0, rc;
        if (read_full(fd, hb + npre, total - npre))
            rc = read_error(err, errlen, errno);
        else if (npy_parse_header(hb, total, &h, err, errlen))
            rc = BDRT_EXIT_INPUT;
        else
            rc = npy_check(&h, io, actual, &swap, err, errlen);
        free(hb);
        if (rc) return rc;
        bdrt_io_size(actual, &numel, &nbytes);
        uint64_t have = size - h.data_offset;
        if (have < nbytes)
            return fail(err, errlen, "truncated .npy data: expected %zu bytes, got %" PRIu64,
                        nbytes, have);
        if (have > nbytes)
            return fail(err, errlen,
                        "byte size mismatch: expected %zu data bytes, got %" PRIu64 " (%" PRIu64
                        " trailing)",
                        nbytes, have, have - nbytes);
        if (read_full(fd, dst, nbytes)) return read_error(err, errlen, errno);
        if (swap) byte_swap(dst, (size_t)numel, bdrt_dtype_size(io->dtype));
        normalise_bool(io, dst, nbytes);
        return 0;
    }

    if (npy_name)
        return fail(err, errlen, "not a .npy file (%s)", size ? "bad magic" : "empty file");

    /* TensorProto: typed fields may take up to 11 bytes per element (a negative int8 as a
     * varint plus its tag); allow that plus 64 MiB of names, doc strings and metadata. */
    uint64_t cap = (uint64_t)64 << 20;
    cap += (uint64_t)numel > (UINT64_MAX - cap) / 11 ? UINT64_MAX - cap : (uint64_t)numel * 11;
    if (size > cap || size > SIZE_MAX)
        return fail(err, errlen, "file too large: %" PRIu64 " bytes for %" PRId64 " elements", size,
                    numel);
    unsigned char *buf = malloc(size ? (size_t)size : 1);
    if (!buf) return fail(err, errlen, "out of memory reading %" PRIu64 " bytes", size);
    memcpy(buf, pre, npre);
    int rc;
    if (read_full(fd, buf + npre, (size_t)size - npre))
        rc = read_error(err, errlen, errno);
    else
        rc = pb_parse(buf, (size_t)size, io, actual, dst, err, errlen);
    free(buf);
    return rc;
}

int bdrt_tensor_read(const char *path, const bdrt_io *io, void *dst, char *err, size_t errlen) {
    bdrt_io actual;
    return bdrt_tensor_read_as(path, io, &actual, dst, err, errlen);
}

int bdrt_tensor_read_as(const char *path, const bdrt_io *io, bdrt_io *actual, void *dst, char *err,
                        size_t errlen) {
    int fd;
    do
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(err, errlen, "cannot open: %s", strerror(errno));
    size_t n = strlen(path);
    int npy_name = n >= 4 && path[n - 4] == '.' && (path[n - 3] | 0x20) == 'n' &&
                   (path[n - 2] | 0x20) == 'p' && (path[n - 1] | 0x20) == 'y';
    int rc = read_fd(fd, io, actual, npy_name, dst, err, errlen);
    close(fd);
    return rc;
}

/* ---- .npy writer ---- */

size_t bdrt_npy_header(const bdrt_io *io, char *buf, size_t cap) {
    const dtype_info *d = dtype_find(io->dtype);
    if (!d || bdrt_io_size(io, NULL, NULL)) return 0;
    char dict[400];
    char order = d->size == 1 ? '|' : host_little_endian() ? '<' : '>';
    size_t o = (size_t)snprintf(dict, sizeof dict,
                                "{'descr': '%c%c%u', 'fortran_order': False, 'shape': (", order,
                                d->kind, d->size);
    for (int i = 0; i < io->rank; i++)
        o += (size_t)snprintf(dict + o, sizeof dict - o, "%s%" PRId64, i ? ", " : "", io->dims[i]);
    o += (size_t)snprintf(dict + o, sizeof dict - o, "%s), }", io->rank == 1 ? "," : "");
    size_t total = 10 + o + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap || total - 10 > 65535) return 0;
    memcpy(buf, npy_magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((total - 10) & 0xff);
    buf[9] = (char)((total - 10) >> 8);
    memcpy(buf + 10, dict, o);
    memset(buf + 10 + o, ' ', total - 10 - o - 1);
    buf[total - 1] = '\n';
    return total;
}

static int write_full(int fd, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int bdrt_npy_write_fd(int fd, const bdrt_io *io, const void *data, char *err, size_t errlen) {
    char hdr[512];
    size_t nbytes, h = bdrt_npy_header(io, hdr, sizeof hdr);
    if (!h || bdrt_io_size(io, NULL, &nbytes)) {
        snprintf(err, errlen, "invalid output descriptor");
        return BDRT_EXIT_IO;
    }
    if (write_full(fd, hdr, h) || write_full(fd, data, nbytes)) {
        snprintf(err, errlen, "%s", strerror(errno));
        return BDRT_EXIT_IO;
    }
    return 0;
}

/* ---- output file names ---- */

uint32_t bdrt_fnv1a32(const char *s) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h;
}

static uint32_t hash_lower(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        h = (h ^ c) * 16777619u;
    }
    return h;
}

static int same_lower(const char *a, const char *b) {
    for (;; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y - 'A' + 'a');
        if (x != y) return 0;
        if (!x) return 1;
    }
}

int bdrt_output_file_names(int n, const bdrt_io *outs, char (*names)[BDRT_FILE_NAME_MAX]) {
    if (n <= 0) return 0;
    /* Open-addressing set of the names given so far (indices into names), ASCII-case-folded. */
    size_t cap = 16;
    while (cap < (size_t)n * 2)
        cap *= 2;
    int *set = malloc(cap * sizeof *set);
    if (!set) return -1;
    for (size_t i = 0; i < cap; i++)
        set[i] = -1;

    for (int i = 0; i < n; i++) {
        const char *name = outs[i].name ? outs[i].name : "";
        size_t len = strlen(name), keep = len > 100 ? 100 : len;
        char stem[BDRT_FILE_NAME_MAX];
        for (size_t k = 0; k < keep; k++) {
            char c = name[k];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '_' || c == '.' || c == '-';
            stem[k] = ok ? c : '_';
        }
        if (!keep) stem[keep++] = '_';
        if (stem[0] == '.' || stem[0] == '-') stem[0] = '_';
        stem[keep] = 0;
        if (len > 100) snprintf(stem + keep, sizeof stem - keep, "-%08x", bdrt_fnv1a32(name));

        for (unsigned suffix = 1;; suffix++) {
            char cand[BDRT_FILE_NAME_MAX + 16]; /* at most 109 + 11 bytes are used */
            if (suffix == 1)
                snprintf(cand, sizeof cand, "%s", stem);
            else
                snprintf(cand, sizeof cand, "%s_%u", stem, suffix);
            size_t slot = hash_lower(cand) & (cap - 1);
            int taken = 0;
            for (; set[slot] >= 0; slot = (slot + 1) & (cap - 1))
                if (same_lower(names[set[slot]], cand)) {
                    taken = 1;
                    break;
                }
            if (taken) continue;
            memcpy(names[i], cand, strlen(cand) + 1);
            set[slot] = i;
            break;
        }
    }
    for (int i = 0; i < n; i++)
        strcat(names[i], ".npy");
    free(set);
    return 0;
}
