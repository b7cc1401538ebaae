/* analyze.h — the `bdc analyze` command (analyze.c). */
#ifndef BD_ANALYZE_H
#define BD_ANALYZE_H

#include "driver/pipeline.h"

typedef struct bd_analyze_opts {
    const char *model;
    const char *json;        /* --json FILE, "-" for stdout (then no text report); NULL: none */
    const char *dot;         /* --dot FILE or "-"; NULL: none */
    const bd_target *target; /* NULL: cpu */
    bd_fusion fusion;
    bool fusion_given;       /* --fusion was given (else bd_fusion_for's default) */
    const bd_input_binds *binds; /* --shape, --dim, --const (may be NULL) */
} bd_analyze_opts;

/* Prints the analysis report; BD_ERR_UNSUPPORTED for a model bdc cannot compile. */
bd_status bd_analyze(const bd_analyze_opts *o, bd_diag *d);

#endif
