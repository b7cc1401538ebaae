/* dtype.c — queries over the dtype table in dtype.h. */
#include "base/dtype.h"

#include <stdio.h>

static const struct {
    int code;
    const char *name;
    int bits;
    bool supported;
} dtype_rows[] = {
#define X(e, code, name, bits, sup) {code, name, bits, sup},
    BD_DTYPES(X)
#undef X
};

static int dtype_row(int dt) {
    for (unsigned i = 0; i < sizeof dtype_rows / sizeof dtype_rows[0]; i++)
        if (dtype_rows[i].code == dt) return (int)i;
    return -1;
}

bool bd_dtype_known(int dt) { return dtype_row(dt) >= 0; }

const char *bd_dtype_name(int dt) {
    static _Thread_local char buf[4][32];
    static _Thread_local int turn;
    int r = dtype_row(dt);
    if (r >= 0) return dtype_rows[r].name;
    if (dt == 0) return "undefined";
    char *b = buf[turn++ & 3];
    snprintf(b, sizeof buf[0], "dtype(%d)", dt);
    return b;
}

int bd_dtype_bits(int dt) {
    int r = dtype_row(dt);
    return r >= 0 ? dtype_rows[r].bits : 0;
}

bool bd_dtype_supported(int dt) {
    int r = dtype_row(dt);
    return r >= 0 && dtype_rows[r].supported;
}

bool bd_dtype_is_float(int dt) {
    return dt == BD_DT_FLOAT || dt == BD_DT_DOUBLE || dt == BD_DT_FLOAT16 || dt == BD_DT_BFLOAT16 ||
           (dt >= BD_DT_FLOAT8E4M3FN && dt <= BD_DT_FLOAT8E5M2FNUZ) || dt == BD_DT_FLOAT4E2M1 ||
           dt == BD_DT_FLOAT8E8M0;
}

bool bd_dtype_is_signed(int dt) {
    return dt == BD_DT_INT8 || dt == BD_DT_INT16 || dt == BD_DT_INT32 || dt == BD_DT_INT64 ||
           dt == BD_DT_INT4 || dt == BD_DT_INT2;
}

bool bd_dtype_is_byte(int dt) {
    return dt == BD_DT_INT8 || dt == BD_DT_UINT8;
}

bool bd_dtype_is_int(int dt) {
    return bd_dtype_is_signed(dt) || dt == BD_DT_UINT8 || dt == BD_DT_UINT16 || dt == BD_DT_UINT32 ||
           dt == BD_DT_UINT64 || dt == BD_DT_UINT4 || dt == BD_DT_UINT2;
}
