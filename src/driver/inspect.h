/* inspect.h — the `bdc inspect` command (inspect.c). */
#ifndef BD_INSPECT_H
#define BD_INSPECT_H

#include <stdbool.h>

#include "base/util.h"

/* Prints the model summary (text or JSON) to stdout; BD_ERR_UNSUPPORTED after printing when some
 * node cannot be compiled. */
bd_status bd_inspect(const char *path, bool json, bd_diag *d);

#endif
