/* dtype.h — element types, numbered as ONNX's TensorProto.DataType so no translation is needed.
 *
 * One X-macro table: enum name, ONNX code, printable name, bits per element, and whether the
 * compiler can compute with it yet (the loader reads every listed type; `supported` only decides
 * what `bdc inspect` reports as unsupported). float16 and bfloat16 are supported by the ops that
 * copy elements or compute elementwise in float (lower/support.c refuses them everywhere else). */
#ifndef BD_DTYPE_H
#define BD_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

/*            ENUM          code  name            bits supported */
#define BD_DTYPES(X)                                                                               \
    X(FLOAT,          1,  "float32",        32, true)                                          \
    X(UINT8,          2,  "uint8",          8,  true)                                          \
    X(INT8,           3,  "int8",           8,  true)                                          \
    X(UINT16,         4,  "uint16",         16, true)                                          \
    X(INT16,          5,  "int16",          16, true)                                          \
    X(INT32,          6,  "int32",          32, true)                                          \
    X(INT64,          7,  "int64",          64, true)                                          \
    X(STRING,         8,  "string",         0,  false)                                         \
    X(BOOL,           9,  "bool",           8,  true)                                          \
    X(FLOAT16,        10, "float16",        16, true)                                          \
    X(DOUBLE,         11, "float64",        64, true)                                          \
    X(UINT32,         12, "uint32",         32, true)                                          \
    X(UINT64,         13, "uint64",         64, true)                                          \
    X(COMPLEX64,      14, "complex64",      64, false)                                         \
    X(COMPLEX128,     15, "complex128",     128, false)                                        \
    X(BFLOAT16,       16, "bfloat16",       16, true)                                          \
    X(FLOAT8E4M3FN,   17, "float8e4m3fn",   8,  false)                                         \
    X(FLOAT8E4M3FNUZ, 18, "float8e4m3fnuz", 8,  false)                                         \
    X(FLOAT8E5M2,     19, "float8e5m2",     8,  false)                                         \
    X(FLOAT8E5M2FNUZ, 20, "float8e5m2fnuz", 8,  false)                                         \
    X(UINT4,          21, "uint4",          4,  false)                                         \
    X(INT4,           22, "int4",           4,  false)                                         \
    X(FLOAT4E2M1,     23, "float4e2m1",     4,  false)                                         \
    X(FLOAT8E8M0,     24, "float8e8m0",     8,  false)                                         \
    X(UINT2,          25, "uint2",          2,  false)                                         \
    X(INT2,           26, "int2",           2,  false)

typedef enum bd_dtype {
    BD_DT_UNDEFINED = 0,
#define X(e, code, name, bits, sup) BD_DT_##e = code,
    BD_DTYPES(X)
#undef X
} bd_dtype;

bool bd_dtype_known(int dt);             /* listed in the table */
const char *bd_dtype_name(int dt);       /* "float32"; "dtype(99)" style for unknown codes */
int bd_dtype_bits(int dt);               /* 0 for string / unknown */
bool bd_dtype_supported(int dt);
bool bd_dtype_is_float(int dt);          /* float16/32/64, bfloat16, float8 */
bool bd_dtype_is_int(int dt);            /* signed or unsigned integers (not bool) */
bool bd_dtype_is_byte(int dt);           /* int8 or uint8: the quantized types */
bool bd_dtype_is_signed(int dt);

#endif
