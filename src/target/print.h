/* print.h — what every printer of generated source shares: an indented text buffer with
 * printf-style lines, comments and string literals safe for untrusted strings, numeric literals,
 * and the translation of the nests' scalar expressions (nest/expr.h) through a dialect's table.
 *
 * A target's printer (target/cpu/ now; the GPU dialects next) keeps its own state beside a
 * bd_printer and calls these; the differences between dialects live in bd_expr_dialect tables,
 * not in copies of this code. */
#ifndef BD_PRINT_H
#define BD_PRINT_H

#include "base/util.h"
#include "nest/expr.h"

typedef struct bd_printer {
    bd_vec text; /* char: the file being printed */
    int indent;
    bd_arena scratch; /* strings returned by the helpers below live until the printer ends */
} bd_printer;

/* One line at the current indent; open adds " {" and indents; close dedents and prints "}"
 * followed by suffix (may be NULL). */
void bd_print_line(bd_printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bd_print_blank(bd_printer *p);
void bd_print_open(bd_printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bd_print_close(bd_printer *p, const char *suffix);
/* A comment line holding an untrusted string, made harmless. */
void bd_print_comment(bd_printer *p, const char *prefix, const char *untrusted);
/* printf into the scratch arena (for building expressions). */
const char *bd_print_str(bd_printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A string literal for untrusted bytes: every byte outside [A-Za-z0-9_ .-] octal-escaped, so no
 * quote, backslash, newline or trigraph can form. */
const char *bd_print_string_literal(bd_printer *p, const char *untrusted);
/* A floating literal of x in dtype (float32: an `f` suffix; always a '.' or an exponent, so "1"
 * is "1.0f"); NaN and infinities by name. */
const char *bd_print_float(bd_printer *p, double x, int dtype);
/* Frees the text and the scratch arena. */
void bd_printer_free(bd_printer *p);

/* How a dialect spells each expression op. Templates are C-like expression text in which $0, $1
 * and $2 stand for the arguments, $k0 and $k1 for the node's constants as literals of its dtype,
 * and $T for its C type; one template per class of the node's dtype (for comparisons, the
 * arguments' dtype): float32, float64, signed integer, unsigned integer or bool. NULL: that op
 * and class have no spelling (lowering never asks for it). Casts are the dialect's `cast`. */
enum { BD_CLASS_F32, BD_CLASS_F64, BD_CLASS_SIGNED, BD_CLASS_UNSIGNED, BD_CLASS_COUNT };
typedef struct bd_expr_dialect {
    const char *tmpl[BD_EXPR_OP_COUNT][BD_CLASS_COUNT];
    const char *(*type)(int dtype); /* the type a value of dtype is held in */
    /* a converted to dtype `to` from dtype `from` (a is already a primary expression) */
    const char *(*cast)(bd_printer *p, const char *a, int from, int to);
} bd_expr_dialect;

/* The expression's value as one expression in the dialect, fully parenthesised where it nests;
 * LOAD k prints as loads[k] (a name, or any expression), LOOKUP k as loads[k][index]: for a
 * table operand loads[k] names its pointer. */
const char *bd_print_expr(bd_printer *p, const bd_expr_dialect *d, const bd_expr *x,
                          const char *const *loads);

/* Block `block` of nest n decoded into int64_t lo[], hi[] along every iteration dim (hi
 * exclusive): the same decoding as bd_nest_block_range, printed (tests check they agree). */
struct bd_nest;
void bd_print_block_decode(bd_printer *p, const struct bd_nest *n);
/* The scalar helpers C-family code shares: bd_f2i_T (float to integer without undefined
 * behaviour), bd_pickf/bd_pick (NaN-propagating min/max), the float16/bfloat16 conversions.
 * Each is declared with the qualifiers fn ("static inline" or a dialect's device spelling); the
 * printer defines bd_u2f, bd_f2u and bd_d2u (bit casts) before. opencl: 64-bit literals as `ul`. */
void bd_print_scalar_helpers(bd_printer *p, const char *fn, bool opencl);

/* Float tanh as x P(x^2) / Q(x^2), x clamped to +-BD_TANH_CLAMP where float tanh is +-1 (Eigen's,
 * a few ulp), as C text: the recurrent gates (bd_print_rnn_act) and the C prelude's bd_tanh_v.
 * X2 is a string literal, the C expression of the clamped x squared (a printf format may pass
 * "%s_x2"). */
#define BD_TANH_CLAMP "7.90531111f"
#define BD_TANH_P(X2)                                                                              \
    "((((((-2.76076847742355e-16f * " X2 " + 2.00018790482477e-13f) * " X2                        \
    " - 8.60467152213735e-11f) * " X2 " + 5.12229709037114e-08f) * " X2                           \
    " + 1.48572235717979e-05f) * " X2 " + 6.37261928875436e-04f) * " X2 " + 4.89352455891786e-03f)"
#define BD_TANH_Q(X2)                                                                              \
    "(((1.19825839466702e-06f * " X2 " + 1.18534705686654e-04f) * " X2                            \
    " + 2.26843463243900e-03f) * " X2 " + 4.89352518554385e-03f)"

/* `const float out = act(in);` for an LSTM activation (f, g or h, with its alpha and beta). */
struct bd_rnn_act;
void bd_print_rnn_act(bd_printer *p, const struct bd_rnn_act *a, const char *in, const char *out);

/* A pushed scatter's update position in one dim (SCATTER nests, every target): the int64_t c,
 * which the caller declares, from index expression idx, counted from the back when negative;
 * outside [0, extent) the update names nothing and the caller's loop goes on (`continue`). */
void bd_print_scatter_index(bd_printer *p, const char *idx, int64_t extent);

/* One RoiAlign output element of ROI_ALIGN nest n, as onnxruntime computes it, in two parts so a
 * printer can hoist the first out of the loops over channels and bins. bd_print_roi_align_box
 * declares, from the roi's rois row (`rois`: the expression of its first element) and batch index
 * (`batch`), ra_n (the image, clamped into [0, N)), the box's start ra_y0, ra_x0, its bin lengths
 * ra_bh, ra_bw and its samples per bin ra_gh, ra_gw. bd_print_roi_align_value then declares `out`,
 * the value of bin (ph, pw) of the channel plane of X starting at element `plane` of X (named x).
 * Only C every dialect spells alike (the GPU preludes map ceilf and floorf). */
struct bd_graph;
void bd_print_roi_align_box(bd_printer *p, struct bd_graph *g, const struct bd_nest *n,
                            const char *rois, const char *batch);
void bd_print_roi_align_value(bd_printer *p, struct bd_graph *g, const struct bd_nest *n,
                              const char *x, const char *plane, const char *ph, const char *pw,
                              const char *out);

/* An inference BatchNormalization with constant parameters as y = x * a + b: a = scale /
 * sqrt(var + eps) then b = bias - mean * a, computed in double, params of each stored in dtype
 * (float or double), a's first; a heap buffer of *bytes bytes for the printer's blob. */
struct bd_tensor;
unsigned char *bd_batchnorm_factors(const struct bd_tensor *scale, const struct bd_tensor *bias,
                                    const struct bd_tensor *mean, const struct bd_tensor *var,
                                    double epsilon, int64_t params, int dtype, size_t *bytes);

/* `DECL NAME[] = {...}`: the inputs' or outputs' descriptors (values) of g. runtime: bdrt_io
 * entries, with batch_min (g's ranged batch, at the values whose dim 0 it is); else --lib's
 * exported NAME_io entries. */
struct bd_vec;
struct bd_graph;
void bd_print_io_table(bd_printer *p, const char *decl, const char *name, struct bd_graph *g,
                       const struct bd_vec *values, bool runtime);

/* The header --lib writes: NAME_create/_run/_destroy and the descriptors; `link` names what to
 * link with besides libNAME.a; gpu: create()'s comment speaks of the device. Heap text. */
char *bd_print_lib_header(struct bd_graph *g, const char *name, const char *link, bool gpu);

/* How C spells the expression ops (c_dialect.c), for every C-family printer, and the C element
 * type of a dtype ("float", "int64_t", "uint8_t" for bool, "double", ...). */
extern const bd_expr_dialect bd_c_dialect;
const char *bd_c_type(int dtype);

#endif
