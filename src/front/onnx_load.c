/* onnx_load.c — reads an .onnx file into the graph IR, trusting nothing in it.
 *
 * Order of defence: the file must be a regular file under the size cap; a schema-driven scan of
 * the protobuf wire format bounds message nesting before protobuf-c (which recurses without a
 * limit) sees the bytes; then protobuf-c unpacks; then every graph is converted into arena-owned
 * IR. Tensors are read from whichever storage form the file uses (typed fields, raw_data, or
 * external data confined to the model's own folder: no absolute paths, no '..', no symlinks, no
 * hard links, regular files only) and their byte counts are checked exactly against dims x dtype.
 * Name resolution happens here too, so that every node input refers to a value: names a graph does
 * not define resolve in the enclosing graphs, and a name produced only by a later node is reported
 * as a cycle or an ordering error. */
#define _POSIX_C_SOURCE 200809L /* openat, fstatat, pread, O_NOFOLLOW */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "front/passes.h"

const bd_limits bd_default_limits = {
    .max_file_bytes = (int64_t)8 << 30,   /* 8 GiB of model file plus external data */
    .max_weight_bytes = (int64_t)8 << 30, /* 8 GiB of initializers */
    .max_nodes = 1000000,
    .max_graph_depth = 32,
    .max_activation_bytes = (int64_t)32 << 30, /* 32 GiB of intermediate tensors */
};

/* Protobuf nesting allowed before protobuf-c runs: comfortably above real models (a subgraph
 * level costs three messages: graph, node, attribute). */
enum { WIRE_MAX_DEPTH = 160 };

typedef struct loader {
    bd_model *m;
    const bd_limits *lim;
    bd_diag *d;
    int64_t weight_bytes;
    int64_t node_count;
} loader;

/* ---------------------------------------------------------------- file reading */

/* A file's bytes: mapped when the system allows (a 650 MB model is then read from the page
 * cache where it lies, not copied into fresh memory first), else read into the heap. */
typedef struct file_bytes {
    uint8_t *p;
    size_t len;
    bool mapped;
} file_bytes;

static void file_release(file_bytes *f) {
    if (f->mapped) munmap(f->p, f->len);
    else free(f->p);
    f->p = NULL;
}

static bd_status read_file(const char *path, int64_t max, file_bytes *f, bd_diag *d) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return bd_fail(d, BD_ERR_IO, "cannot open '%s': %s", bd_quote(path), strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bd_fail(d, BD_ERR_IO, "'%s' is not a regular file", bd_quote(path));
    }
    if (st.st_size > max) {
        close(fd);
        return bd_fail(d, BD_ERR_IO, "'%s' is %lld bytes, above the limit of %lld", bd_quote(path),
                       (long long)st.st_size, (long long)max);
    }
    size_t n = (size_t)st.st_size;
    void *map = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    if (map != MAP_FAILED) {
        close(fd);
        *f = (file_bytes){map, n, true};
        return BD_OK;
    }
    uint8_t *p = malloc(n ? n : 1);
    if (!p) {
        close(fd);
        return bd_fail(d, BD_ERR_IO, "out of memory reading '%s'", bd_quote(path));
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            free(p);
            close(fd);
            return bd_fail(d, BD_ERR_IO, "cannot read '%s'", bd_quote(path));
        }
        got += (size_t)r;
    }
    close(fd);
    *f = (file_bytes){p, n, false};
    return BD_OK;
}

/* ---------------------------------------------------------------- wire-format depth scan */

static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* 0 ok, 1 malformed, 2 too deep. Follows only fields the schema says are messages. */
static int wire_scan(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *desc,
                     int depth) {
    if (depth > WIRE_MAX_DEPTH) return 2;
    while (p < end) {
        uint64_t key, len;
        if (!wire_varint(&p, end, &key)) return 1;
        unsigned wt = key & 7;
        uint64_t field = key >> 3;
        switch (wt) {
        case 0:
            if (!wire_varint(&p, end, &len)) return 1;
            break;
        case 1:
            if (end - p < 8) return 1;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 1;
            p += 4;
            break;
        case 2: {
            if (!wire_varint(&p, end, &len) || len > (uint64_t)(end - p)) return 1;
            const ProtobufCFieldDescriptor *f =
                field <= UINT_MAX ? protobuf_c_message_descriptor_get_field(desc, (unsigned)field)
                                  : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                int r = wire_scan(p, p + len, f->descriptor, depth + 1);
                if (r) return r;
            }
            p += len;
            break;
        }
        default: return 1; /* groups are not used by onnx.proto */
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- tensors */

static const char *tensor_label(const Onnx__TensorProto *t) {
    return t->name && t->name[0] ? t->name : "<unnamed>";
}

static bd_status tensor_fail(loader *L, bd_status s, const Onnx__TensorProto *t, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));
static bd_status tensor_fail(loader *L, bd_status s, const Onnx__TensorProto *t, const char *fmt,
                             ...) {
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bd_fail(L->d, s, "tensor '%s': %s", bd_quote(tensor_label(t)), msg);
}

/* A relative path that stays inside the model folder: no absolute path, no '..' component, no
 * backslash (a Windows separator would mean something else there), no NUL games. */
static bool external_location_ok(const char *loc) {
    if (!loc[0] || loc[0] == '/' || strchr(loc, '\\')) return false;
    for (const char *c = loc; *c;) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if (n == 2 && c[0] == '.' && c[1] == '.') return false;
        c += n + (slash ? 1 : 0);
    }
    return true;
}

/* Opens model_dir/loc refusing symlinks on every component and any non-regular or multiply
 * linked file; returns an fd or -1 with the failure recorded. */
static int open_external(loader *L, const Onnx__TensorProto *t, const char *loc, struct stat *st) {
    int dirfd = open(L->m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        tensor_fail(L, BD_ERR_IO, t, "cannot open the model folder '%s'", bd_quote(L->m->dir));
        return -1;
    }
    char part[4096];
    const char *c = loc;
    int fd = -1;
    for (;;) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if (n >= sizeof part) break;
        memcpy(part, c, n);
        part[n] = 0;
        if (n == 0 || (n == 1 && part[0] == '.')) { /* "a//b", "./a" */
            if (!slash) break;
            c = slash + 1;
            continue;
        }
        struct stat lst;
        if (fstatat(dirfd, part, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
            close(dirfd);
            tensor_fail(L, BD_ERR_IO, t, "external data file '%s' not found in the model folder",
                        bd_quote(loc));
            return -1;
        }
        if (S_ISLNK(lst.st_mode)) {
            close(dirfd);
            tensor_fail(L, BD_ERR_INVALID, t,
                        "external data location '%s' goes through a symlink; refused",
                        bd_quote(loc));
            return -1;
        }
        int next = openat(dirfd, part, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : 0));
        close(dirfd);
        if (next < 0) {
            tensor_fail(L, BD_ERR_IO, t, "cannot open external data '%s': %s", bd_quote(loc),
                        strerror(errno));
            return -1;
        }
        if (!slash) {
            fd = next;
            break;
        }
        dirfd = next;
        c = slash + 1;
    }
    if (fd < 0) {
        close(dirfd);
        tensor_fail(L, BD_ERR_INVALID, t, "external data location '%s' names no file",
                    bd_quote(loc));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        tensor_fail(L, BD_ERR_INVALID, t, "external data '%s' is not a regular file", bd_quote(loc));
        return -1;
    }
    if (st->st_nlink > 1) {
        close(fd);
        tensor_fail(L, BD_ERR_INVALID, t,
                    "external data '%s' has %lu hard links and could alias a file outside the "
                    "model folder; refused",
                    bd_quote(loc), (unsigned long)st->st_nlink);
        return -1;
    }
    return fd;
}

static bool parse_u64(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || !bd_mul_i64(v, 10, &v) || !bd_add_i64(v, *s - '0', &v))
            return false;
    }
    *out = v;
    return true;
}

static bd_status load_external(loader *L, const Onnx__TensorProto *t, bd_tensor *out) {
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        const char *k = e->key ? e->key : "";
        if (strcmp(k, "location") == 0) {
            loc = e->value ? e->value : "";
        } else if (strcmp(k, "offset") == 0) {
            if (!parse_u64(e->value, &offset))
                return tensor_fail(L, BD_ERR_INVALID, t, "external data offset '%s' is not a number",
                                   bd_quote(e->value));
        } else if (strcmp(k, "length") == 0) {
            if (!parse_u64(e->value, &length))
                return tensor_fail(L, BD_ERR_INVALID, t, "external data length '%s' is not a number",
                                   bd_quote(e->value));
        }
    }
    if (!loc) return tensor_fail(L, BD_ERR_INVALID, t, "external data without a location");
    if (!external_location_ok(loc))
        return tensor_fail(L, BD_ERR_INVALID, t,
                           "external data location '%s' leaves the model folder (absolute path or "
                           "'..'); refused",
                           bd_quote(loc));
    if (length >= 0 && length != out->nbytes)
        return tensor_fail(L, BD_ERR_INVALID, t,
                           "external data length %lld does not match dims x dtype = %lld bytes",
                           (long long)length, (long long)out->nbytes);
    struct stat st;
    int fd = open_external(L, t, loc, &st);
    if (fd < 0) return L->d->status;
    int64_t end;
    if (!bd_add_i64(offset, out->nbytes, &end) || end > st.st_size) {
        close(fd);
        return tensor_fail(L, BD_ERR_INVALID, t,
                           "external data '%s' needs bytes %lld..%lld but the file has %lld",
                           bd_quote(loc), (long long)offset, (long long)end, (long long)st.st_size);
    }
    int64_t done = 0;
    while (done < out->nbytes) {
        ssize_t r = pread(fd, (char *)out->data + done, (size_t)(out->nbytes - done), offset + done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            close(fd);
            return tensor_fail(L, BD_ERR_IO, t, "cannot read external data '%s'", bd_quote(loc));
        }
        done += r;
    }
    close(fd);
    return BD_OK;
}

/* Narrows the int32_data form (one value per int32; sub-byte types one packed byte each). */
static void unpack_int32_field(const Onnx__TensorProto *t, bd_tensor *out) {
    int bits = bd_dtype_bits(out->dtype);
    uint8_t *b = out->data;
    for (size_t i = 0; i < t->n_int32_data; i++) {
        uint32_t v = (uint32_t)t->int32_data[i];
        if (bits == 8) b[i] = (uint8_t)v;
        else if (bits == 16) memcpy(b + 2 * i, &(uint16_t){(uint16_t)v}, 2);
        else if (bits == 32) memcpy(b + 4 * i, &v, 4);
        else b[i] = (uint8_t)v; /* sub-byte types arrive packed, one byte per int32 */
    }
    if (out->dtype == BD_DT_BOOL)
        for (int64_t i = 0; i < out->numel; i++) b[i] = b[i] != 0;
}

static bd_status load_tensor(loader *L, const Onnx__TensorProto *t, bd_tensor **result) {
    int dt = t->has_data_type ? t->data_type : 0;
    if (dt == 0) return tensor_fail(L, BD_ERR_INVALID, t, "no data_type");
    if (!bd_dtype_known(dt))
        return tensor_fail(L, BD_ERR_UNSUPPORTED, t, "unsupported dtype %d", dt);
    if (t->segment) return tensor_fail(L, BD_ERR_UNSUPPORTED, t, "segmented tensors are not supported");
    if (t->n_dims > BD_MAX_RANK)
        return tensor_fail(L, BD_ERR_UNSUPPORTED, t, "rank %zu is above bdc's limit of %d", t->n_dims,
                           BD_MAX_RANK);
    int64_t numel = 1, nbytes;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return tensor_fail(L, BD_ERR_INVALID, t, "dim %zu is negative (%lld)", i,
                               (long long)t->dims[i]);
        if (!bd_mul_i64(numel, t->dims[i], &numel))
            return tensor_fail(L, BD_ERR_INVALID, t, "the product of its dims overflows int64");
    }
    if (!bd_dtype_nbytes(dt, numel, &nbytes))
        return tensor_fail(L, BD_ERR_INVALID, t, "its byte size overflows int64");
    if (!bd_add_i64(L->weight_bytes, nbytes, &L->weight_bytes) ||
        L->weight_bytes > L->lim->max_weight_bytes)
        return tensor_fail(L, BD_ERR_IO, t, "weights exceed the limit of %lld bytes (see --max-weights)",
                           (long long)L->lim->max_weight_bytes);

    /* Check the stored size before allocating, so a lying header cannot make us allocate. */
    bool external = t->has_data_location &&
                    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    int bits = bd_dtype_bits(dt);
    int64_t two = dt == BD_DT_COMPLEX64 || dt == BD_DT_COMPLEX128 ? 2 : 1;
    int64_t expect = bits > 0 && bits < 8 ? nbytes : numel * two; /* sub-byte: packed bytes */
    size_t have = 0;
    const char *field = NULL;
    if (!external && t->has_raw_data) {
        if (dt == BD_DT_STRING)
            return tensor_fail(L, BD_ERR_INVALID, t, "string tensors cannot use raw_data");
        if ((int64_t)t->raw_data.len != nbytes)
            return tensor_fail(L, BD_ERR_INVALID, t,
                               "raw_data has %zu bytes, but dims x dtype (%s) need %lld",
                               t->raw_data.len, bd_dtype_name(dt), (long long)nbytes);
    } else if (!external) {
        switch (dt) {
        case BD_DT_FLOAT:
        case BD_DT_COMPLEX64: have = t->n_float_data, field = "float_data"; break;
        case BD_DT_DOUBLE:
        case BD_DT_COMPLEX128: have = t->n_double_data, field = "double_data"; break;
        case BD_DT_INT64: have = t->n_int64_data, field = "int64_data"; break;
        case BD_DT_UINT32:
        case BD_DT_UINT64: have = t->n_uint64_data, field = "uint64_data"; break;
        case BD_DT_STRING: have = t->n_string_data, field = "string_data"; break;
        default: have = t->n_int32_data, field = "int32_data"; break;
        }
        if ((int64_t)have != expect)
            return tensor_fail(L, BD_ERR_INVALID, t, "%s holds %zu values, but dims need %lld", field,
                               have, (long long)expect);
    }

    bd_tensor *out = bd_arena_alloc(&L->m->arena, sizeof *out);
    if (!out) return tensor_fail(L, BD_ERR_IO, t, "out of memory");
    out->name = bd_arena_strdup(&L->m->arena, t->name ? t->name : "");
    out->dtype = dt;
    out->rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) out->dims[i] = t->dims[i];
    out->numel = numel;
    out->nbytes = nbytes;
    if (dt == BD_DT_STRING) {
        out->strings = bd_arena_array(&L->m->arena, (size_t)numel, sizeof *out->strings);
        if (numel && !out->strings) return tensor_fail(L, BD_ERR_IO, t, "out of memory");
        for (int64_t i = 0; i < numel; i++) {
            ProtobufCBinaryData s = t->string_data[i];
            out->strings[i].data = (const uint8_t *)bd_arena_strndup(&L->m->arena, (const char *)s.data, s.len);
            out->strings[i].len = s.len;
            if (!out->strings[i].data) return tensor_fail(L, BD_ERR_IO, t, "out of memory");
        }
        *result = out;
        return BD_OK;
    }
    if (!external && t->has_raw_data && nbytes &&
        bd_arena_adopt(&L->m->arena, t->raw_data.data, (size_t)nbytes)) {
        /* protobuf-c's copy of the bytes becomes the tensor's (malloc'd, so aligned as the
         * arena's): a transformer's weights are not copied once more */
        out->data = t->raw_data.data;
        ((Onnx__TensorProto *)t)->raw_data = (ProtobufCBinaryData){0, NULL};
    } else if (nbytes) {
        out->data = bd_arena_alloc(&L->m->arena, (size_t)nbytes);
        if (!out->data) return tensor_fail(L, BD_ERR_IO, t, "out of memory (%lld bytes)", (long long)nbytes);
        if (!external && t->has_raw_data) memcpy(out->data, t->raw_data.data, (size_t)nbytes);
    }
    if (external) {
        bd_status s = load_external(L, t, out);
        if (s) return s;
    } else if (t->has_raw_data) {
        if (dt == BD_DT_BOOL)
            for (int64_t i = 0; i < numel; i++) ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
    } else if (nbytes) {
        switch (dt) {
        case BD_DT_FLOAT:
        case BD_DT_COMPLEX64: memcpy(out->data, t->float_data, (size_t)nbytes); break;
        case BD_DT_DOUBLE:
        case BD_DT_COMPLEX128: memcpy(out->data, t->double_data, (size_t)nbytes); break;
        case BD_DT_INT64: memcpy(out->data, t->int64_data, (size_t)nbytes); break;
        case BD_DT_UINT64: memcpy(out->data, t->uint64_data, (size_t)nbytes); break;
        case BD_DT_UINT32:
            for (int64_t i = 0; i < numel; i++) ((uint32_t *)out->data)[i] = (uint32_t)t->uint64_data[i];
            break;
        default: unpack_int32_field(t, out); break;
        }
    }
    *result = out;
    return BD_OK;
}

/* ---------------------------------------------------------------- value types */

static bd_status load_type(loader *L, bd_value *v, const Onnx__TypeProto *tp, const char *what) {
    if (!tp) return BD_OK;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: v->type_kind = "sequence"; return BD_OK;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: v->type_kind = "map"; return BD_OK;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: v->type_kind = "optional"; return BD_OK;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: v->type_kind = "sparse tensor"; return BD_OK;
    default: return BD_OK; /* no type given */
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type) {
        if (!bd_dtype_known(tt->elem_type))
            return bd_fail(L->d, BD_ERR_UNSUPPORTED, "%s '%s' has unsupported dtype %d", what,
                           bd_quote(v->name), tt->elem_type);
        v->decl_dtype = tt->elem_type;
    }
    if (!tt->shape) return BD_OK;
    if (tt->shape->n_dim > BD_MAX_RANK)
        return bd_fail(L->d, BD_ERR_UNSUPPORTED, "%s '%s' has rank %zu, above bdc's limit of %d", what,
                       bd_quote(v->name), tt->shape->n_dim, BD_MAX_RANK);
    v->decl_rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
        v->decl_dims[i] = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value < 0)
                return bd_fail(L->d, BD_ERR_INVALID, "%s '%s': dim %zu is negative (%lld)", what,
                               bd_quote(v->name), i, (long long)dim->dim_value);
            v->decl_dims[i] = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param[0]) {
            v->dim_param[i] = bd_arena_strdup(&L->m->arena, dim->dim_param);
        }
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- graphs */

static bd_status load_graph(loader *L, const Onnx__GraphProto *gp, bd_graph *parent, int owner,
                            bd_graph **out);

static const char *copy_str(loader *L, const char *s) {
    return bd_arena_strdup(&L->m->arena, s ? s : "");
}

static bd_attr_type attr_type_of(const Onnx__AttributeProto *a) {
    if (a->has_type && a->type) return (bd_attr_type)a->type;
    /* Files from before the type field: the populated member decides. */
    if (a->g) return BD_ATTR_GRAPH;
    if (a->t) return BD_ATTR_TENSOR;
    if (a->has_s) return BD_ATTR_STRING;
    if (a->has_f) return BD_ATTR_FLOAT;
    if (a->has_i) return BD_ATTR_INT;
    if (a->n_floats) return BD_ATTR_FLOATS;
    if (a->n_ints) return BD_ATTR_INTS;
    if (a->n_strings) return BD_ATTR_STRINGS;
    if (a->n_tensors) return BD_ATTR_TENSORS;
    if (a->n_graphs) return BD_ATTR_GRAPHS;
    return BD_ATTR_UNDEFINED;
}

static bd_status load_attr(loader *L, bd_graph *g, int node_idx, const bd_node *n,
                           const Onnx__AttributeProto *ap, bd_attr *a) {
    bd_arena *ar = &L->m->arena;
    a->name = copy_str(L, ap->name);
    a->type = attr_type_of(ap);
    bd_status s = BD_OK;
    switch (a->type) {
    case BD_ATTR_FLOAT: a->f = ap->f; break;
    case BD_ATTR_INT: a->i = ap->i; break;
    case BD_ATTR_STRING:
        a->s.data = (const uint8_t *)bd_arena_strndup(ar, (const char *)ap->s.data, ap->s.len);
        a->s.len = ap->s.len;
        break;
    case BD_ATTR_TENSOR:
        if (!ap->t) return bd_node_fail(L->d, BD_ERR_INVALID, n, "attribute '%s' has no tensor", bd_quote(a->name));
        s = load_tensor(L, ap->t, &a->t);
        break;
    case BD_ATTR_GRAPH:
        if (!ap->g) return bd_node_fail(L->d, BD_ERR_INVALID, n, "attribute '%s' has no graph", bd_quote(a->name));
        s = load_graph(L, ap->g, g, node_idx, &a->g);
        break;
    case BD_ATTR_FLOATS:
        a->n = (int)ap->n_floats;
        a->floats = bd_arena_array(ar, ap->n_floats, sizeof(float));
        if (ap->n_floats) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case BD_ATTR_INTS:
        a->n = (int)ap->n_ints;
        a->ints = bd_arena_array(ar, ap->n_ints, sizeof(int64_t));
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case BD_ATTR_STRINGS:
        a->n = (int)ap->n_strings;
        a->strings = bd_arena_array(ar, ap->n_strings, sizeof(bd_bytes));
        for (size_t i = 0; i < ap->n_strings; i++) {
            a->strings[i].data = (const uint8_t *)bd_arena_strndup(ar, (const char *)ap->strings[i].data,
                                                                   ap->strings[i].len);
            a->strings[i].len = ap->strings[i].len;
        }
        break;
    case BD_ATTR_TENSORS:
        a->n = (int)ap->n_tensors;
        a->tensors = bd_arena_array(ar, ap->n_tensors, sizeof(bd_tensor *));
        for (size_t i = 0; !s && i < ap->n_tensors; i++) s = load_tensor(L, ap->tensors[i], &a->tensors[i]);
        break;
    case BD_ATTR_GRAPHS:
        a->n = (int)ap->n_graphs;
        a->graphs = bd_arena_array(ar, ap->n_graphs, sizeof(bd_graph *));
        for (size_t i = 0; !s && i < ap->n_graphs; i++) s = load_graph(L, ap->graphs[i], g, node_idx, &a->graphs[i]);
        break;
    case BD_ATTR_SPARSE_TENSOR:
    case BD_ATTR_SPARSE_TENSORS:
    case BD_ATTR_TYPE_PROTO:
    case BD_ATTR_TYPE_PROTOS:
        break; /* kept by type only; ops using them are reported unsupported */
    default:
        return bd_node_fail(L->d, BD_ERR_INVALID, n, "attribute '%s' has unknown type %d",
                            bd_quote(a->name), (int)a->type);
    }
    return s;
}

/* Is `name` defined in an enclosing graph at the point where this graph's owner node runs? */
static bool outer_defines(const bd_graph *g, const char *name) {
    for (; g->parent; g = g->parent) {
        bd_graph *p = g->parent;
        int v = bd_graph_find_value(p, name);
        if (v >= 0) {
            const bd_value *val = &BD_VEC_AT(&p->values, bd_value, v);
            return val->producer < g->owner_node;
        }
    }
    return false;
}

/* Input `name` of node `idx` refers to a later node's output: find whether a cycle explains it. */
static bd_status order_error(loader *L, bd_graph *g, const Onnx__GraphProto *gp, int idx,
                             const char *name, int producer) {
    /* Walk back from the producer through inputs produced at or after idx; reaching idx means the
     * two nodes depend on each other. Bounded by the node count (visited marks). */
    size_t nn = g->nodes.len;
    char *seen = calloc(nn, 1);
    int *stack = malloc(nn * sizeof *stack);
    bool cycle = false;
    int top = 0;
    if (seen && stack) {
        stack[top++] = producer;
        seen[producer] = 1;
        while (top && !cycle) {
            /* Later nodes' inputs are not resolved yet: follow them by name. */
            const Onnx__NodeProto *np = gp->node[stack[--top]];
            for (size_t k = 0; k < np->n_input && !cycle; k++) {
                int v = np->input[k][0] ? bd_graph_find_value(g, np->input[k]) : -1;
                if (v < 0) continue;
                int p = bd_graph_value(g, v)->producer;
                if (p == idx) cycle = true;
                else if (p > idx && !seen[p]) seen[p] = 1, stack[top++] = p;
            }
        }
    }
    free(seen);
    free(stack);
    bd_node *n = bd_graph_node(g, idx), *p = bd_graph_node(g, producer);
    if (cycle)
        return bd_node_fail(L->d, BD_ERR_INVALID, n,
                            "graph has a cycle: input '%s' depends on this node's own output "
                            "(through node '%s')",
                            bd_quote(name), bd_quote(p->name));
    return bd_node_fail(L->d, BD_ERR_INVALID, n,
                        "input '%s' is produced later by node '%s': nodes are not in topological "
                        "order",
                        bd_quote(name), bd_quote(p->name));
}

static bd_status load_graph(loader *L, const Onnx__GraphProto *gp, bd_graph *parent, int owner,
                            bd_graph **out) {
    bd_model *m = L->m;
    bd_diag *d = L->d;
    int depth = parent ? parent->depth + 1 : 0;
    if (depth > L->lim->max_graph_depth)
        return bd_fail(d, BD_ERR_IO, "subgraphs are nested deeper than bdc's limit of %d",
                       L->lim->max_graph_depth);
    bd_graph *g = bd_graph_new(m, parent, copy_str(L, gp->name));
    if (!g) return bd_fail(d, BD_ERR_IO, "out of memory");
    g->owner_node = parent ? owner : -1;
    *out = g;
    const char *gname = gp->name && gp->name[0] ? gp->name : parent ? "<subgraph>" : "<main>";

    /* Initializers first: in files from IR < 4 graph inputs may repeat them (as defaults). */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !t->name[0])
            return bd_fail(d, BD_ERR_INVALID, "graph '%s': initializer %zu has no name", bd_quote(gname), i);
        if (bd_graph_find_value(g, t->name) >= 0)
            return bd_fail(d, BD_ERR_INVALID, "graph '%s': initializer '%s' is defined twice",
                           bd_quote(gname), bd_quote(t->name));
        bd_tensor *tensor;
        bd_status s = load_tensor(L, t, &tensor);
        if (s) return s;
        bd_value *v = bd_graph_value(g, bd_graph_add_value(g, tensor->name));
        v->flags |= BD_VALUE_INITIALIZER;
        v->constant = tensor;
        v->dtype = tensor->dtype;
        v->rank = tensor->rank;
        memcpy(v->dims, tensor->dims, sizeof v->dims);
        v->decl_rank = -1;
    }
    if (gp->n_sparse_initializer)
        return bd_fail(d, BD_ERR_UNSUPPORTED, "graph '%s': sparse initializers are not supported",
                       bd_quote(gname));

    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !vi->name[0])
            return bd_fail(d, BD_ERR_INVALID, "graph '%s': input %zu has no name", bd_quote(gname), i);
        int idx = bd_graph_find_value(g, vi->name);
        if (idx >= 0) {
            bd_value *v = bd_graph_value(g, idx);
            if (!(v->flags & BD_VALUE_INITIALIZER))
                return bd_fail(d, BD_ERR_INVALID, "graph '%s': input '%s' is listed twice",
                               bd_quote(gname), bd_quote(vi->name));
            continue; /* an initializer with a default: stays a constant */
        }
        idx = bd_graph_add_value(g, copy_str(L, vi->name));
        bd_value *v = bd_graph_value(g, idx);
        v->flags |= BD_VALUE_INPUT;
        v->decl_rank = -1;
        bd_status s = load_type(L, v, vi->type, "input");
        if (s) return s;
        /* Graph inputs are where shapes come from: the declaration is the value's shape. */
        v->dtype = v->decl_dtype;
        v->rank = v->decl_rank;
        memcpy(v->dims, v->decl_dims, sizeof v->dims);
        *(int *)bd_vec_push(&g->inputs) = idx;
    }

    /* Pass 1: every node output becomes a value, so that inputs can be resolved in pass 2 and an
     * out-of-order reference told apart from an undefined name. */
    L->node_count += (int64_t)gp->n_node;
    if (L->node_count > L->lim->max_nodes)
        return bd_fail(d, BD_ERR_IO, "the model has more than %lld nodes, the limit (see --max-nodes)",
                       (long long)L->lim->max_nodes);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        bd_node *n = bd_vec_push(&g->nodes);
        n->name = copy_str(L, np->name);
        n->op_type = copy_str(L, np->op_type);
        n->domain = copy_str(L, np->domain);
        if (!n->op_type[0]) return bd_fail(d, BD_ERR_INVALID, "node %zu ('%s') has no op_type", i, bd_quote(n->name));
        n->n_inputs = (int)np->n_input;
        n->n_outputs = (int)np->n_output;
        n->inputs = bd_arena_array(&m->arena, np->n_input, sizeof(int));
        n->outputs = bd_arena_array(&m->arena, np->n_output, sizeof(int));
        if ((np->n_input && !n->inputs) || (np->n_output && !n->outputs)) return bd_fail(d, BD_ERR_IO, "out of memory");
        for (size_t k = 0; k < np->n_output; k++) {
            const char *name = np->output[k];
            n->outputs[k] = -1;
            if (!name[0]) continue; /* omitted optional output */
            int prev = bd_graph_find_value(g, name);
            if (prev >= 0) {
                bd_value *pv = bd_graph_value(g, prev);
                const char *what = pv->producer >= 0 ? "another node's output"
                                   : pv->flags & BD_VALUE_INITIALIZER ? "an initializer"
                                                                      : "a graph input";
                return bd_node_fail(d, BD_ERR_INVALID, n, "output '%s' is already defined as %s%s%s%s",
                                    bd_quote(name), what, pv->producer >= 0 ? " (node '" : "",
                                    pv->producer >= 0 ? bd_quote(bd_graph_node(g, pv->producer)->name) : "",
                                    pv->producer >= 0 ? "')" : "");
            }
            int idx = bd_graph_add_value(g, copy_str(L, name));
            bd_value *v = bd_graph_value(g, idx);
            v->producer = (int)i;
            v->decl_rank = -1;
            n->outputs[k] = idx;
        }
    }

    /* Pass 2: resolve inputs, load attributes (and with them subgraphs). */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        bd_node *n = bd_graph_node(g, (int)i);
        for (size_t k = 0; k < np->n_input; k++) {
            const char *name = np->input[k];
            n->inputs[k] = -1;
            if (!name[0]) continue; /* omitted optional input */
            int idx = bd_graph_find_value(g, name);
            if (idx < 0) {
                if (!outer_defines(g, name))
                    return bd_node_fail(d, BD_ERR_INVALID, n, "input %zu '%s' is not defined by any "
                                        "node, initializer or graph input", k, bd_quote(name));
                idx = bd_graph_add_value(g, copy_str(L, name));
                bd_value *v = bd_graph_value(g, idx);
                v->flags |= BD_VALUE_OUTER;
                v->decl_rank = -1;
            }
            int producer = bd_graph_value(g, idx)->producer;
            if (producer >= (int)i) {
                if (producer == (int)i)
                    return bd_node_fail(d, BD_ERR_INVALID, n,
                                        "graph has a cycle: input '%s' is the node's own output",
                                        bd_quote(name));
                return order_error(L, g, gp, (int)i, name, producer);
            }
            n->inputs[k] = idx;
        }
        n->n_attrs = (int)np->n_attribute;
        n->attrs = bd_arena_array(&m->arena, np->n_attribute, sizeof(bd_attr));
        if (np->n_attribute && !n->attrs) return bd_fail(d, BD_ERR_IO, "out of memory");
        for (size_t k = 0; k < np->n_attribute; k++) {
            const char *an = np->attribute[k]->name ? np->attribute[k]->name : "";
            for (size_t j = 0; j < k; j++)
                if (strcmp(np->attribute[j]->name ? np->attribute[j]->name : "", an) == 0)
                    return bd_node_fail(d, BD_ERR_INVALID, n, "attribute '%s' is given twice", bd_quote(an));
            bd_status s = load_attr(L, g, (int)i, n, np->attribute[k], &n->attrs[k]);
            if (s) return s;
        }
    }

    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *name = vi->name ? vi->name : "";
        int idx = bd_graph_find_value(g, name);
        if (idx < 0 && name[0] && outer_defines(g, name)) {
            idx = bd_graph_add_value(g, copy_str(L, name));
            bd_graph_value(g, idx)->flags |= BD_VALUE_OUTER;
            bd_graph_value(g, idx)->decl_rank = -1;
        }
        if (idx < 0)
            return bd_fail(d, BD_ERR_INVALID, "graph '%s': output '%s' is not produced by any node, "
                           "initializer or input", bd_quote(gname), bd_quote(name));
        bd_value *v = bd_graph_value(g, idx);
        if (v->flags & BD_VALUE_OUTPUT)
            return bd_fail(d, BD_ERR_INVALID, "graph '%s': output '%s' is listed twice", bd_quote(gname),
                           bd_quote(name));
        v->flags |= BD_VALUE_OUTPUT;
        if (!(v->flags & (BD_VALUE_INPUT | BD_VALUE_INITIALIZER))) {
            bd_status s = load_type(L, v, vi->type, "output");
            if (s) return s;
        }
        *(int *)bd_vec_push(&g->outputs) = idx;
    }

    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        int idx = vi->name ? bd_graph_find_value(g, vi->name) : -1;
        if (idx < 0) continue; /* annotations of names this graph lacks carry no meaning */
        bd_value *v = bd_graph_value(g, idx);
        if (v->producer < 0 || (v->flags & BD_VALUE_OUTPUT)) continue;
        bd_status s = load_type(L, v, vi->type, "value");
        if (s) return s;
    }
    return BD_OK;
}

/* ---------------------------------------------------------------- model */

static char *dir_of(bd_arena *a, const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return bd_arena_strdup(a, ".");
    if (slash == path) return bd_arena_strdup(a, "/");
    return bd_arena_strndup(a, path, (size_t)(slash - path));
}

bd_status bd_onnx_load(const char *path, const bd_limits *lim, bd_model **out, bd_diag *d) {
    *out = NULL;
    if (!lim) lim = &bd_default_limits;
    file_bytes f;
    bd_status s = read_file(path, lim->max_file_bytes, &f, d);
    if (s) return s;
    bd_arena scratch = {0};
    const char *dir = dir_of(&scratch, path);
    s = dir ? bd_onnx_load_buffer(f.p, f.len, path, dir, lim, out, d)
            : bd_fail(d, BD_ERR_IO, "out of memory");
    bd_arena_free(&scratch);
    file_release(&f);
    return s;
}

bd_status bd_onnx_load_buffer(const uint8_t *buf, size_t len, const char *path, const char *dir,
                              const bd_limits *lim, bd_model **out, bd_diag *d) {
    *out = NULL;
    bd_status s = BD_OK;
    if (!lim) lim = &bd_default_limits;
    if (len == 0) return bd_fail(d, BD_ERR_INVALID, "'%s' is empty, not an ONNX model", bd_quote(path));
    int scan = wire_scan(buf, buf + len, &onnx__model_proto__descriptor, 0);
    if (scan == 2)
        return bd_fail(d, BD_ERR_IO, "'%s' nests subgraphs or types deeper than bdc's limit of %d "
                       "protobuf levels", bd_quote(path), WIRE_MAX_DEPTH);
    Onnx__ModelProto *mp = scan ? NULL : onnx__model_proto__unpack(NULL, len, buf);
    if (!mp)
        return bd_fail(d, BD_ERR_INVALID, "'%s' is not an ONNX model (protobuf parsing failed)",
                       bd_quote(path));
    if (!mp->graph || !mp->has_ir_version || mp->ir_version <= 0) {
        const char *missing = mp->graph ? "ir_version" : "graph";
        onnx__model_proto__free_unpacked(mp, NULL);
        return bd_fail(d, BD_ERR_INVALID, "'%s' is not an ONNX model (no %s)", bd_quote(path),
                       missing);
    }

    bd_arena arena = {0};
    bd_model *m = bd_arena_alloc(&arena, sizeof *m);
    if (!m) {
        onnx__model_proto__free_unpacked(mp, NULL);
        return bd_fail(d, BD_ERR_IO, "out of memory");
    }
    m->arena = arena;
    m->subgraphs = BD_VEC(bd_graph *);
    m->path = bd_arena_strdup(&m->arena, path);
    m->dir = bd_arena_strdup(&m->arena, dir);
    m->ir_version = mp->ir_version;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    m->producer_name = bd_arena_strdup(&m->arena, mp->producer_name ? mp->producer_name : "");
    m->producer_version = bd_arena_strdup(&m->arena, mp->producer_version ? mp->producer_version : "");
    m->domain = bd_arena_strdup(&m->arena, mp->domain ? mp->domain : "");
    m->doc = bd_arena_strdup(&m->arena, mp->doc_string ? mp->doc_string : "");
    m->n_opsets = (int)mp->n_opset_import;
    m->opsets = bd_arena_array(&m->arena, mp->n_opset_import, sizeof *m->opsets);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const char *dom = mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "";
        if (strcmp(dom, "ai.onnx") == 0) dom = "";
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->opsets[j].domain, dom) == 0 && !s)
                s = bd_fail(d, BD_ERR_INVALID, "opset of domain '%s' is imported twice", bd_quote(dom));
        m->opsets[i].domain = bd_arena_strdup(&m->arena, dom);
        m->opsets[i].version = mp->opset_import[i]->has_version ? mp->opset_import[i]->version : 0;
    }
    if (mp->n_opset_import == 0 && !s) {
        /* IR version 2 and earlier had no opset_import: opset 1 is implied. */
        m->n_opsets = 1;
        m->opsets = bd_arena_alloc(&m->arena, sizeof *m->opsets);
        m->opsets[0].domain = "";
        m->opsets[0].version = 1;
    }
    loader L = {.m = m, .lim = lim, .d = d};
    if (!s) s = load_graph(&L, mp->graph, NULL, -1, &m->graph);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (s) {
        bd_model_free(m);
        return s;
    }
    *out = m;
    return BD_OK;
}

/* ---------------------------------------------------------------- tensor files (--const) */

/* A .npy header's value for key ("'descr':" ...) as the text after the colon, or NULL. */
static const char *npy_field(const char *header, const char *key) {
    const char *p = strstr(header, key);
    if (!p) return NULL;
    p += strlen(key);
    while (*p == ' ') p++;
    return *p == ':' ? p + 1 + strspn(p + 1, " ") : NULL;
}

/* .npy versions 1-3, little-endian or byte-order-free dtypes, C order. */
static bd_status load_npy(bd_model *m, const uint8_t *buf, size_t len, const char *path,
                          bd_tensor **out, bd_diag *d) {
    const char *what = bd_quote(path);
    if (len < 10 || buf[6] < 1 || buf[6] > 3)
        return bd_fail(d, BD_ERR_USAGE, "'%s': not a .npy file of version 1 to 3", what);
    size_t hlen = buf[6] == 1 ? (size_t)(buf[8] | buf[9] << 8) : 0, start = 10;
    if (buf[6] > 1) {
        if (len < 12) return bd_fail(d, BD_ERR_USAGE, "'%s': truncated .npy header", what);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    }
    if (hlen > len - start) return bd_fail(d, BD_ERR_USAGE, "'%s': truncated .npy header", what);
    char *header = bd_arena_strndup(&m->arena, (const char *)buf + start, hlen);
    static const struct { const char *descr; int dtype; } types[] = {
        {"f4", BD_DT_FLOAT},  {"f8", BD_DT_DOUBLE}, {"f2", BD_DT_FLOAT16}, {"i1", BD_DT_INT8},
        {"i2", BD_DT_INT16},  {"i4", BD_DT_INT32},  {"i8", BD_DT_INT64},   {"u1", BD_DT_UINT8},
        {"u2", BD_DT_UINT16}, {"u4", BD_DT_UINT32}, {"u8", BD_DT_UINT64},  {"b1", BD_DT_BOOL},
    };
    const char *descr = npy_field(header, "'descr'"), *order = npy_field(header, "'fortran_order'");
    const char *shape = npy_field(header, "'shape'");
    int dt = 0;
    for (size_t i = 0; descr && i < BD_COUNT(types); i++) {
        size_t n = strlen(types[i].descr);
        if (descr[0] == '\'' && descr[1] && strchr("<|", descr[1]) &&
            strncmp(descr + 2, types[i].descr, n) == 0 && descr[2 + n] == '\'')
            dt = types[i].dtype;
    }
    if (!dt) return bd_fail(d, BD_ERR_USAGE, "'%s': .npy dtype is not one bdc reads (little-endian "
                            "numbers or bool)", what);
    if (!order || strncmp(order, "False", 5) != 0)
        return bd_fail(d, BD_ERR_USAGE, "'%s': .npy in Fortran order is not supported", what);
    if (!shape || *shape != '(')
        return bd_fail(d, BD_ERR_USAGE, "'%s': .npy header has no shape", what);
    int rank = 0;
    int64_t dims[BD_MAX_RANK], numel = 1, nbytes;
    for (const char *p = shape + 1;;) {
        p += strspn(p, " ");
        if (*p == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || rank == BD_MAX_RANK || !bd_mul_i64(numel, v, &numel))
            return bd_fail(d, BD_ERR_USAGE, "'%s': .npy shape is malformed or too large", what);
        dims[rank++] = v;
        p = end + strspn(end, " ");
        if (*p == ',') p++;
    }
    if (!bd_dtype_nbytes(dt, numel, &nbytes) || (uint64_t)nbytes != len - start - hlen)
        return bd_fail(d, BD_ERR_USAGE, "'%s': .npy holds %zu data bytes, its header says %lld",
                       what, len - start - hlen, (long long)nbytes);
    bd_tensor *t = bd_tensor_new(&m->arena, dt, rank, dims);
    if (!t) return bd_fail(d, BD_ERR_IO, "out of memory");
    if (nbytes) memcpy(t->data, buf + start + hlen, (size_t)nbytes);
    if (dt == BD_DT_BOOL)
        for (int64_t i = 0; i < numel; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    *out = t;
    return BD_OK;
}

bd_status bd_tensor_read_file(bd_model *m, const char *path, bd_tensor **out, bd_diag *d) {
    file_bytes f;
    bd_status s = read_file(path, bd_default_limits.max_weight_bytes, &f, d);
    if (s) return s;
    const uint8_t *buf = f.p;
    size_t len = f.len;
    if (len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0) {
        s = load_npy(m, buf, len, path, out, d);
        file_release(&f);
        return s;
    }
    Onnx__TensorProto *tp = wire_scan(buf, buf + len, &onnx__tensor_proto__descriptor, 0) ? NULL
                            : onnx__tensor_proto__unpack(NULL, len, buf);
    file_release(&f);
    if (!tp)
        return bd_fail(d, BD_ERR_USAGE, "'%s' is neither a .npy file nor an ONNX TensorProto",
                       bd_quote(path));
    loader L = {.m = m, .lim = &bd_default_limits, .d = d};
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        s = bd_fail(d, BD_ERR_USAGE, "'%s': a TensorProto with external data is not supported here",
                    bd_quote(path));
    else if ((s = load_tensor(&L, tp, out))) {
        char why[sizeof d->msg];
        snprintf(why, sizeof why, "%s", d->msg);
        snprintf(d->msg, sizeof d->msg, "'%s': %.800s", bd_quote(path), why);
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return s;
}
