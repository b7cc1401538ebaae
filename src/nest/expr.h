/* expr.h — the scalar expression IR stored in the nests: what one element of an elementwise body,
 * or of a fused epilogue, computes.
 *
 * An expression is a small DAG of nodes in one array, each node after its arguments, the last
 * node the result. A leaf loads operand k of the nest at the element the loop is at (through the
 * operand's access map: the printer turns the map into the offset) or is a constant; the other
 * nodes are unary, binary and ternary maps, select, and casts, including the float16/bfloat16
 * conversions, and a lookup in a table operand (fuse/tables.c: a function of one 8-bit tensor,
 * computed once per byte value) indexed by an 8-bit node. Every node has the ONNX dtype of its value: a load has its operand's dtype
 * (float16/bfloat16 as bit patterns), a cast converts its argument to its own dtype, and every
 * other node computes in its own dtype. Lowering builds them (lower/elementwise.c), fusion
 * composes them (fuse/fuse.c), and a printer translates each node through its dialect's table
 * (target/print.c); nothing after lowering reads the ONNX node an expression came from. */
#ifndef BD_EXPR_H
#define BD_EXPR_H

#include <stdio.h>

#include "base/dtype.h"

/* Column legend: enum name, arguments, constants (k[0], k[1]), meaning. */
#define BD_EXPR_OPS(X)                                                                             \
    X(LOAD, 0, 0)  /* operand `operand` at the current element */                                  \
    X(CONST, 0, 1) /* k0 */                                                                        \
    X(CAST, 1, 0)  /* a converted to the node's dtype, as ONNX Cast does */                        \
    X(NEG, 1, 0)                                                                                   \
    X(ABS, 1, 0)                                                                                   \
    X(NOT, 1, 0)                                                                                   \
    X(BIT_NOT, 1, 0)   /* integers: ~a */                                                          \
    X(RELU, 1, 0)                                                                                  \
    X(SQRT, 1, 0)                                                                                  \
    X(EXP, 1, 0)                                                                                   \
    X(LOG, 1, 0)                                                                                   \
    X(ERF, 1, 0)                                                                                   \
    X(TANH, 1, 0)                                                                                  \
    X(RECIPROCAL, 1, 0)                                                                            \
    X(SIGMOID, 1, 0)                                                                               \
    X(LEAKY_RELU, 1, 1)   /* a < 0 ? k0 * a : a */                                                 \
    X(HARD_SIGMOID, 1, 2) /* max(0, min(1, k0 * a + k1)) */                                        \
    X(HARD_SWISH, 1, 0)   /* a * max(0, min(1, a / 6 + 1/2)) */                                    \
    X(GELU, 1, 0)         /* a/2 (1 + erf(a / sqrt 2)) */                                          \
    X(GELU_TANH, 1, 0)    /* a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */                      \
    X(SILU, 1, 0)         /* a * sigmoid(a): fusion's name for Mul(x, Sigmoid(x)) */                \
    X(SIN, 1, 0)                                                                                   \
    X(COS, 1, 0)                                                                                   \
    X(TAN, 1, 0)                                                                                   \
    X(ASIN, 1, 0)                                                                                  \
    X(ACOS, 1, 0)                                                                                  \
    X(ATAN, 1, 0)                                                                                  \
    X(SINH, 1, 0)                                                                                  \
    X(COSH, 1, 0)                                                                                  \
    X(ASINH, 1, 0)                                                                                 \
    X(ACOSH, 1, 0)                                                                                 \
    X(ATANH, 1, 0)                                                                                 \
    X(CEIL, 1, 0)                                                                                  \
    X(FLOOR, 1, 0)                                                                                 \
    X(ROUND, 1, 0)     /* to nearest, halves to even */                                            \
    X(SIGN, 1, 0)      /* -1, 0 or 1; NaN stays NaN */                                             \
    X(ISNAN, 1, 0)     /* bool result */                                                           \
    X(SOFTPLUS, 1, 0)  /* log(1 + exp(a)), without overflow for large a */                         \
    X(SOFTSIGN, 1, 0)  /* a / (1 + |a|) */                                                         \
    X(MISH, 1, 0)      /* a * tanh(softplus(a)) */                                                 \
    X(ELU, 1, 1)       /* a < 0 ? k0 (exp(a) - 1) : a */                                           \
    X(SELU, 1, 2)      /* k1 (a <= 0 ? k0 (exp(a) - 1) : a) */                                     \
    X(CELU, 1, 1)      /* max(0, a) + min(0, k0 (exp(a / k0) - 1)) */                              \
    X(THRESHOLDED_RELU, 1, 1) /* a > k0 ? a : 0 */                                                 \
    X(SHRINK, 1, 2)    /* a < -k0 ? a + k1 : a > k0 ? a - k1 : 0 */                                \
    X(ADD, 2, 0)                                                                                   \
    X(SUB, 2, 0)                                                                                   \
    X(MUL, 2, 0)                                                                                   \
    X(DIV, 2, 0) /* integers: 0 when b is 0 (C leaves it undefined) */                             \
    X(POW, 2, 0)                                                                                   \
    X(EQUAL, 2, 0) /* bool result; a and b in their own dtype */                                   \
    X(LESS, 2, 0)                                                                                  \
    X(GREATER, 2, 0)                                                                               \
    X(AND, 2, 0)                                                                                   \
    X(OR, 2, 0)                                                                                    \
    X(BIT_AND, 2, 0)   /* integers */                                                              \
    X(BIT_OR, 2, 0)                                                                                \
    X(BIT_XOR, 2, 0)                                                                               \
    X(XOR, 2, 0)                                                                                   \
    X(GREATER_EQUAL, 2, 0) /* bool result */                                                       \
    X(LESS_EQUAL, 2, 0)                                                                            \
    X(PRELU, 2, 0)     /* a < 0 ? b * a : a */                                                     \
    X(FMOD, 2, 0)      /* remainder with a's sign (C's fmod and %); integers: 0 when b is 0 */     \
    X(MOD, 2, 0)       /* remainder with b's sign (Python's %); integers: 0 when b is 0 */         \
    X(SHIFT_LEFT, 2, 0)  /* unsigned: a << b, 0 once b reaches the width */                        \
    X(SHIFT_RIGHT, 2, 0) /* unsigned: a >> b, 0 once b reaches the width */                        \
    X(MIN, 2, 0) /* NaN wins, as numpy's minimum */                                                \
    X(MAX, 2, 0)                                                                                   \
    X(CLAMP_MIN, 2, 0) /* a < b ? b : a (Clip's lower bound; NaN a stays) */                       \
    X(CLAMP_MAX, 2, 0) /* a > b ? b : a */                                                         \
    X(SELECT, 3, 0)    /* a ? b : c */                                                         \
    X(SATURATE, 1, 2)  /* NaN to 0, clamped to [k0, k1], -0 to +0: a float's conversion to an  \
                          integer type of that range and back, where the float is an integer */ \
    X(LOOKUP, 1, 0)    /* operand `operand`, a table of 256, at 8-bit a (at a + 128 if signed) */

typedef enum bd_expr_op {
#define X(name, args, consts) BD_EXPR_##name,
    BD_EXPR_OPS(X)
#undef X
        BD_EXPR_OP_COUNT
} bd_expr_op;

enum { BD_EXPR_MAX_NODES = 48 };

typedef struct bd_expr_node {
    bd_expr_op op;
    int dtype;   /* BD_DT_* of the value */
    int arg[3];  /* node indices, each < this node's */
    int operand; /* LOAD: nest operand index */
    double k[2]; /* constants */
} bd_expr_node;

typedef struct bd_expr {
    int n;         /* nodes; 0 = no expression; node n-1 is the result */
    bool overflow; /* a builder ran out of nodes: lowering refuses the op */
    bd_expr_node node[BD_EXPR_MAX_NODES];
} bd_expr;

int bd_expr_arity(bd_expr_op op);

/* Builders: append a node, return its index (-1 once the expression is full, which also sets
 * overflow; every builder passes -1 through). */
int bd_expr_load(bd_expr *x, int operand, int dtype);
int bd_expr_const(bd_expr *x, double k, int dtype);
int bd_expr_unary(bd_expr *x, bd_expr_op op, int dtype, int a);
int bd_expr_binary(bd_expr *x, bd_expr_op op, int dtype, int a, int b);
int bd_expr_select(bd_expr *x, int dtype, int c, int a, int b);
int bd_expr_cast(bd_expr *x, int dtype, int a); /* no node when a already has that dtype */
/* operand's element at the index of 8-bit node a (LOOKUP); the node has the table's dtype. */
int bd_expr_lookup(bd_expr *x, int operand, int dtype, int a);
/* Whether the node reads a nest operand (LOAD and LOOKUP name one in `operand`). */
bool bd_expr_reads_operand(const bd_expr_node *e);
/* Which operands x reads, out of n_operands: loaded[k] where a LOAD reads operand k at the
 * element, looked_up[k] where a LOOKUP reads it as a table (both arrays cleared first). */
void bd_expr_operands_read(const bd_expr *x, int n_operands, bool *loaded, bool *looked_up);
/* Whether a node of x has op `op`. */
bool bd_expr_has(const bd_expr *x, bd_expr_op op);
/* A unary op with its constants (LEAKY_RELU, HARD_SIGMOID). */
int bd_expr_unary_k(bd_expr *x, bd_expr_op op, int dtype, int a, double k0, double k1);

/* The result node, or NULL for an empty expression. */
const bd_expr_node *bd_expr_root(const bd_expr *x);
/* Appends src's nodes to dst with src's LOAD k replaced by dst node leaf[k] (a leaf of -1 keeps
 * the load); returns the index of src's result in dst, -1 on overflow. How fusion composes a
 * consumer's expression into its producer's. */
int bd_expr_splice(bd_expr *dst, const bd_expr *src, const int *leaf);
/* Whether x, an expression of LOAD 0, only clamps it: empty (no bounds), Relu (0, inf), or Clip's
 * CLAMP_MAX(CLAMP_MIN(x, lo), hi) with either bound alone; the bounds (infinite where absent)
 * into *lo, *hi. The kernels' activations and requantizing epilogues take these. */
bool bd_expr_clamp_bounds(const bd_expr *x, double *lo, double *hi);

/* Makes node `root` the result and drops the nodes it does not use (a load whose value an op
 * ignores, as x^2 ignores its exponent), keeping the order of the rest. */
void bd_expr_compact(bd_expr *x, int root);

/* Rewrites, in place, what has a cheaper exact form: a float32 or float64 value converted to an
 * integer type of 8 or 16 bits and back (a QuantizeLinear's result dequantized in a fused chain),
 * when the value is an integer already (rounded, or sums and products of integers): the
 * conversion only saturates it, so it becomes SATURATE, which vectorizes without packing and
 * unpacking the integers. Unchanged when the rewrite would not fit. */
void bd_expr_simplify(bd_expr *x);

/* One line per node: `e3 = MUL f32 e1, e2`. */
void bd_expr_dump(const bd_expr *x, FILE *f, const char *indent);
/* Structure: arguments before their users, arities, loads of existing operands. */
bool bd_expr_valid(const bd_expr *x, int n_operands);

#endif
