/* inspect.h — the `bdc inspect` command (inspect.c). */
#ifndef BD_INSPECT_H
#define BD_INSPECT_H

#include <stdbool.h>

#include "front/passes.h"

/* Prints the model summary (text or JSON) to stdout, with the inputs bound as binds says (may be
 * NULL); BD_ERR_UNSUPPORTED after printing when some node or input cannot be compiled. */
bd_status bd_inspect(const char *path, bool json, const bd_input_binds *binds, bd_diag *d);

#endif
