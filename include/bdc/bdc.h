/* bdc.h — public definitions shared by the compiler and the code it generates. */
#ifndef BDC_BDC_H
#define BDC_BDC_H

#define BDC_VERSION "0.1.0"

/* Exit codes of the `bdc` command; every stage reports one of these. */
typedef enum bd_status {
    BD_OK = 0,
    BD_ERR_USAGE = 1,       /* bad command line */
    BD_ERR_INVALID = 2,     /* the model is malformed */
    BD_ERR_UNSUPPORTED = 3, /* valid, but uses an op, opset or dtype bdc cannot handle */
    BD_ERR_IO = 4,          /* file system or resource limit */
    BD_ERR_TOOLCHAIN = 5,   /* the native compiler failed */
} bd_status;

#endif
