/* bd_kernels.h — hand-written float32 (and 8-bit integer GEMM) micro-kernels for generated CPU
 * code.
 *
 * Generated code calls these as the body of one tile (one block of parallel work). The caller
 * owns parallelism: every function here is single-threaded, re-entrant, allocates nothing and
 * keeps no state besides the instruction-set choice, and uses only the scratch memory it is
 * given (size it with the matching *_scratch_bytes function; any alignment is accepted).
 *
 * Conventions shared by every function:
 *  - Matrices are row-major with explicit leading dimensions (elements, not bytes). A is M x K
 *    (stored K x M when transA), B is K x N (stored N x K when transB), C is M x N.
 *  - The epilogue: C = A*B, plus the old C when `accumulate`, plus bias_n[j] per column and
 *    bias_m[i] per row when those pointers are not NULL, then the activation (`act`).
 *  - Any size >= 0 works (0 rows or columns does nothing; K == 0 writes the epilogue only).
 *  - Pre-packed operands (weights) are packed once, at model creation, in the same process:
 *    the packed layout belongs to the instruction set chosen at packing time and is recorded in
 *    a small header inside the buffer; compute functions follow that header. Never store a
 *    packed buffer in a file.
 *
 * Instruction sets: AVX-512F, AVX2+FMA and portable C, chosen at run time from the CPU
 * (`__builtin_cpu_supports`). The environment variable BDC_KERNELS=portable|avx2|avx512, read
 * on first use, or bd_kernels_set_isa() force a choice (tests use this to cover every path).
 */
#ifndef BD_KERNELS_H
#define BD_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- instruction-set dispatch ------------------------------------------------------------- */

typedef enum bd_kernels_isa {
    BD_KERNELS_ISA_AUTO = 0,     /* the best one this CPU supports (or BDC_KERNELS) */
    BD_KERNELS_ISA_PORTABLE = 1, /* plain C */
    BD_KERNELS_ISA_AVX2 = 2,     /* AVX2 + FMA, 6x16 micro-kernel */
    BD_KERNELS_ISA_AVX512 = 3    /* AVX-512F, 12x32 micro-kernel */
} bd_kernels_isa;

/* The instruction set new packings and unpacked GEMMs use now (never AUTO). */
bd_kernels_isa bd_kernels_get_isa(void);
/* Force an instruction set (AUTO: back to the best supported). Returns 0, or -1 when this CPU
 * cannot run it (nothing changes then). Not meant to race with running kernels. */
int bd_kernels_set_isa(bd_kernels_isa isa);
/* 1 when this CPU (and OS) can run `isa`. */
int bd_kernels_isa_supported(bd_kernels_isa isa);
/* The AVX2 kernels' 8-bit matrix products use AVX-VNNI's vpdpbusd (ymm) where the CPU has it,
 * else vpmaddubsw (on a B packed with its saturating pairs split); off != 0 keeps them on the
 * latter for a B packed after the call (tests use this to cover both). Returns 1 when the CPU
 * has AVX-VNNI. Not meant to race with running kernels. */
int bd_kernels_avx_vnni_off(int off);
/* The AVX-512 kernels' 8-bit matrix products run on AMX tiles (tdpbusd) where the CPU and OS
 * allow it; off != 0 keeps them on AVX-512 VNNI (tests use this to cover both). Returns 1 when
 * AMX-INT8 is usable here. Not meant to race with running kernels. */
int bd_kernels_amx_off(int off);
/* "portable", "avx2", "avx512" or "auto". */
const char *bd_kernels_isa_name(bd_kernels_isa isa);
/* Name of the micro-kernel in use, e.g. "bd_f32_gemm_avx2_6x16". */
const char *bd_kernels_gemm_name(void);
/* Register tile of the micro-kernel in use: rows (MR) and columns (NR). Column tiles of a
 * pre-packed B that start at a multiple of NR, and row tiles of a pre-packed A that start at a
 * multiple of MR, avoid a (correct but slower) edge path. */
int bd_kernels_gemm_mr(void);
int bd_kernels_gemm_nr(void);

/* ---- activations applied in epilogues ----------------------------------------------------- */

enum {
    BD_ACT_NONE = 0, /* identity */
    BD_ACT_RELU = 1, /* max(x, 0) */
    BD_ACT_CLIP = 2, /* min(max(x, act_min), act_max) */
    BD_ACT_SILU = 3, /* x * sigmoid(x) (relative error below 1e-6; NaN stays NaN) */
    BD_ACT_HARD_SWISH = 4, /* x * min(1, max(0, x * (1/6) + 1/2)) (NaN stays NaN) */
    BD_ACT_GELU = 5        /* x/2 * (1 + erf(x / sqrt 2)) (absolute error of erf below 2e-7) */
};

/* ---- GEMM --------------------------------------------------------------------------------- */

/* Scratch for any bd_f32_gemm* call of this size (a bound for every instruction set; small:
 * at most a few MiB however large the problem). */
size_t bd_f32_gemm_scratch_bytes(int64_t M, int64_t N, int64_t K);

/* C = A*B (+ C) (+ bias_n[j]) (+ bias_m[i]), then `act`. */
void bd_f32_gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int transA,
                 const float *B, int64_t ldb, int transB, float *C, int64_t ldc,
                 const float *bias_n, const float *bias_m, int accumulate, int act, float act_min,
                 float act_max, void *scratch);

/* Pre-packed B (K x N, typically weights). */
size_t bd_f32_gemm_packed_b_bytes(int64_t K, int64_t N);
void bd_f32_gemm_pack_b(int64_t K, int64_t N, const float *B, int64_t ldb, int transB,
                        float *packed);
/* Columns [n0, n1) of C = A * Bpacked: C and bias_n are indexed by absolute column (pass the
 * same C for every column tile); A is M x K; bias_m (per row of this call) may be NULL.
 * 0 <= n0 <= n1 <= the packed N. */
void bd_f32_gemm_packed_b(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, int64_t lda,
                          int transA, const float *Bpacked, float *C, int64_t ldc,
                          const float *bias_n, const float *bias_m, int accumulate, int act,
                          float act_min, float act_max, void *scratch);

/* Pre-packed A (M x K, e.g. convolution weights). */
size_t bd_f32_gemm_packed_a_bytes(int64_t M, int64_t K);
void bd_f32_gemm_pack_a(int64_t M, int64_t K, const float *A, int64_t lda, int transA,
                        float *packed);
/* Rows [m0, m1) of C = Apacked * B: C and bias_m are indexed by absolute row (pass the same C
 * for every row tile); B is K x N; bias_n (per column of this call) may be NULL.
 * 0 <= m0 <= m1 <= the packed M. */
void bd_f32_gemm_packed_a(int64_t m0, int64_t m1, int64_t N, int64_t K, const float *Apacked,
                          const float *B, int64_t ldb, int transB, float *C, int64_t ldc,
                          const float *bias_n, const float *bias_m, int accumulate, int act,
                          float act_min, float act_max, void *scratch);

/* ---- bfloat16 GEMM (--precision bf16) ----------------------------------------------------- */

/* C = A * B with A and B rounded to bfloat16 (to nearest even) and fp32 sums, B pre-packed
 * (weights): VDPBF16PS where the CPU has AVX512_BF16 and the kernels run AVX-512 (twice the
 * products of an FMA a cycle), the same products in plain C elsewhere. The arguments are those
 * of bd_f32_gemm_packed_b, but n0 must be a multiple of 32 and the scratch is
 * bd_bf16_gemm_scratch_bytes(rows of the call, K). */
int bd_kernels_cpu_has_bf16(void);
size_t bd_bf16_gemm_packed_b_bytes(int64_t K, int64_t N);
void bd_bf16_gemm_pack_b(int64_t K, int64_t N, const float *B, int64_t ldb, int transB,
                         void *packed);
size_t bd_bf16_gemm_scratch_bytes(int64_t M, int64_t K);
void bd_bf16_gemm_packed_b(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A,
                           int64_t lda, int transA, const void *Bpacked, float *C, int64_t ldc,
                           const float *bias_n, const float *bias_m, int accumulate, int act,
                           float act_min, float act_max, void *scratch);

/* ---- 2-D convolution (NCHW) --------------------------------------------------------------- */

/* x: N x C x H x W, weights: M x C/group x KH x KW, y: N x M x OH x OW. pad_top/pad_left are
 * the leading pads; trailing pads are implied by OH/OW (which the caller computed).
 * winograd: 0 (direct or im2col GEMM), or 2 / 4 to compute a 3x3, stride-1, undilated,
 * ungrouped convolution by Winograd's F(2x2,3x3) / F(4x4,3x3): 2.25x / 4x fewer multiplies;
 * F(4x4,3x3) rounds about ten times more than the direct sum (bdckernels_test prints the
 * measured errors of both). */
typedef struct bd_conv2d_shape {
    int64_t N, C, H, W, M, OH, OW, KH, KW, group, stride_h, stride_w, dil_h, dil_w, pad_top,
        pad_left, winograd;
    /* pre: 0, or the per-input-channel prologue bd_f32_conv2d_tile_pre applies to x (1: x * a[c]
     * + b[c]; 2: then max(0, .)), for 1x1 stride-1 unpadded ungrouped convolutions (winograd 0):
     * an inference BatchNormalization and its Relu absorbed by the convolution that reads them */
    int64_t pre;
    /* bf16: 1 for --precision bf16: where the CPU has AVX512_BF16 and the layer runs on the
     * 16-lane direct kernel or is a pointwise convolution on the GEMM, its input and weights are
     * rounded to bfloat16 (fp32 sums); the other paths compute in fp32 */
    int64_t bf16;
} bd_conv2d_shape;

/* 1 when the shape is consistent (positive sizes, group divides C and M, ...). The other conv
 * functions assume it. */
int bd_conv2d_shape_valid(const bd_conv2d_shape *s);

/* Weights packed once per model (per group, as the A operand of a GEMM; depthwise convolutions
 * group == C == M get their own layout). */
size_t bd_f32_conv2d_packed_w_bytes(const bd_conv2d_shape *s);
void bd_f32_conv2d_pack_w(const bd_conv2d_shape *s, const float *w, float *packed);

/* Scratch for bd_f32_conv2d_tile calls covering at most `oh_tile` output rows. */
size_t bd_f32_conv2d_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile);

/* One tile: output channels [oc0, oc1) x output rows [oh0, oh1) x all output columns of batch
 * item n. x and y are the whole tensors; bias (M values) may be NULL; act as for the GEMM. */
void bd_f32_conv2d_tile(const bd_conv2d_shape *s, const float *x, const float *wpacked,
                        const float *bias, float *y, int64_t n, int64_t oc0, int64_t oc1,
                        int64_t oh0, int64_t oh1, int act, float act_min, float act_max,
                        void *scratch);

/* bd_f32_conv2d_tile of a shape with a prologue (pre 1 or 2): the convolution of
 * x' = x * pre_a[c] + pre_b[c] (pre 2: max(0, x')), which is computed as the input is packed for
 * the GEMM (or its rows prepared for the 16-lane direct kernel) and never stored. */
void bd_f32_conv2d_tile_pre(const bd_conv2d_shape *s, const float *x, const float *pre_a,
                            const float *pre_b, const float *wpacked, const float *bias, float *y,
                            int64_t n, int64_t oc0, int64_t oc1, int64_t oh0, int64_t oh1, int act,
                            float act_min, float act_max, void *scratch);

/* ---- transposed 2-D convolution, stride = kernel, no padding (deconv.c) -------------------- */

/* The upsampling of U-Nets and decoders: each output pixel takes exactly one tap, so output
 * pixel (oh, ow) of channel m is bias[m] + sum over c of x[c, oh / KH, ow / KW] *
 * w[c, m, oh % KH, ow % KW]. The shape is a bd_conv2d_shape with x N x C x H x W, weights
 * C x M x KH x KW (ONNX's ConvTranspose layout), stride_h == KH, stride_w == KW, dilations 1,
 * no padding, group 1, OH = H * KH, OW = W * KW (winograd 0). Per tap it is the GEMM of the tap's
 * M x C weights (packed once) by the input rows; the tile scatters the products to every KH-th
 * row and KW-th column. */
int bd_deconv_shape_valid(const bd_conv2d_shape *s);
size_t bd_f32_deconv_packed_w_bytes(const bd_conv2d_shape *s);
void bd_f32_deconv_pack_w(const bd_conv2d_shape *s, const float *w, float *packed);
size_t bd_f32_deconv_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile);
/* Output channels [oc0, oc1) x output rows [oh0, oh1) x all columns of batch item n; act as for
 * the GEMM (applied after the bias). */
void bd_f32_deconv_tile(const bd_conv2d_shape *s, const float *x, const float *wpacked,
                        const float *bias, float *y, int64_t n, int64_t oc0, int64_t oc1,
                        int64_t oh0, int64_t oh1, int act, float act_min, float act_max,
                        void *scratch);

/* ---- 8-bit integer GEMM (gemm_i8.c) ------------------------------------------------------- */

/* C (int32, M x N) = (A - a_zero) x (B - b_zero), exactly, for 8-bit A (uint8, or int8 when
 * a_signed) and a B packed once (uint8, or int8 when b_signed; K x N row-major) whose values
 * less b_zero lie in [-128, 127] (every int8 B with b_zero 0, every uint8 B with b_zero 128).
 * AVX-512 VNNI when the CPU has it and the AVX-512 kernels are chosen, AVX-VNNI or vpmaddubsw
 * when the AVX2 ones are, plain C otherwise; B is packed for the instruction set chosen when it
 * is packed (vpmaddubsw's splits its pairs that could saturate), and any of them computes any
 * packing exactly. K is at most BD_I8_GEMM_MAX_K, which keeps every sum within int32. */
#define BD_I8_GEMM_MAX_K 32768
size_t bd_i8_gemm_packed_b_bytes(int64_t K, int64_t N);
/* Returns 0, or -1 (the buffer is then unusable) when a B - b_zero is outside [-128, 127] or K
 * is over the bound. */
int bd_i8_gemm_pack_b(int64_t K, int64_t N, const void *B, int64_t ldb, int b_signed, int32_t b_zero,
                      void *packed);
/* Scratch for a bd_i8_gemm_packed_b call of this K (any M and columns). */
size_t bd_i8_gemm_scratch_bytes(int64_t K);
/* Columns [n0, n1) of C = (A - a_zero)(Bpacked): C is indexed by absolute column (the same C for
 * every column tile), A is M x K with leading dimension lda. */
void bd_i8_gemm_packed_b(int64_t M, int64_t n0, int64_t n1, int64_t K, const void *A, int64_t lda,
                         int a_signed, int32_t a_zero, const void *Bpacked, int32_t *C, int64_t ldc,
                         void *scratch);

/* ---- 8-bit integer 2-D convolution (conv2d_i8.c) ------------------------------------------ */

/* sum = conv(x - x_zero, w - w_zero), exactly, for 8-bit x (uint8, or int8 when x_signed) and
 * weights (likewise w_signed), on the int8 GEMM; y (N x M x OH x OW) is the sum in int32, or,
 * when the weights are packed with scales, float y = float(sum) * x_scale[0] * w_scale[m] (one
 * w_scale, or M). The shape is a bd_conv2d_shape with group 1 and winograd 0 whose C * KH * KW,
 * rounded up to 4, is at most BD_I8_GEMM_MAX_K: bd_i8_conv2d_shape_ok. */
int bd_i8_conv2d_shape_ok(const bd_conv2d_shape *s);
size_t bd_i8_conv2d_packed_w_bytes(const bd_conv2d_shape *s);
/* Whether the direct path computes this convolution: not 1x1 with unit strides, and every
 * w - w_zero fits int8. Only it requantizes (bd_i8_conv2d_tile_requant). */
int bd_i8_conv2d_direct_ok(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero);
/* x_scale NULL: an int32 result (w_scale and w_scales unused). requant: the tiles will be
 * bd_i8_conv2d_tile_requant's (bd_i8_conv2d_direct_ok must hold; a float result). */
void bd_i8_conv2d_pack_w(const bd_conv2d_shape *s, const void *w, int w_signed, int32_t w_zero,
                         const float *x_scale, const float *w_scale, int64_t w_scales, int requant,
                         void *packed);
/* Scratch for bd_i8_conv2d_tile calls covering at most `oh_tile` output rows. */
size_t bd_i8_conv2d_scratch_bytes(const bd_conv2d_shape *s, int64_t oh_tile);
/* Output channels [oc0, oc1) x output rows [oh0, oh1) x all columns of batch item n; bias (M
 * values, int32 for an int32 result (QLinearConv's), float for a float one) may be NULL. */
void bd_i8_conv2d_tile(const bd_conv2d_shape *s, const void *x, int x_signed, int32_t x_zero,
                       const void *wpacked, const void *bias, void *y, int64_t n, int64_t oc0,
                       int64_t oc1, int64_t oh0, int64_t oh1, void *scratch);
/* A QuantizeLinear absorbed into a float result: after the bias and scales, the value is
 * clamped to [lo, hi] (the activation before it: Relu is 0, inf) and stored as
 * saturate(nearbyint(v / scale) + zero), exactly as the unfused ops compute it. */
typedef struct bd_i8_requant {
    float lo, hi;
    float scale, zero; /* zero: QuantizeLinear's zero point, an integer of y's type */
    int out_signed;    /* y is int8, else uint8 */
} bd_i8_requant;
/* bd_i8_conv2d_tile of weights packed with requant, y (8-bit) requantized by rq. */
void bd_i8_conv2d_tile_requant(const bd_conv2d_shape *s, const void *x, int x_signed,
                               int32_t x_zero, const void *wpacked, const float *bias,
                               const bd_i8_requant *rq, void *y, int64_t n, int64_t oc0,
                               int64_t oc1, int64_t oh0, int64_t oh1, void *scratch);
/* A quantized residual Add after the requantization (a QDQ ResNet's DequantizeLinear of the
 * tile's 8-bit result y1 and of an 8-bit residual r, their Add, a clamp, QuantizeLinear):
 * y = requantized by `out` ((y1 - y_zero) * y_scale + (r - r_zero) * r_scale), each step rounded
 * in float as the unfused ops compute it (no fused multiply-add). */
typedef struct bd_i8_residual {
    float y_scale, y_zero; /* y1's DequantizeLinear (y1 is int8 when rq->out_signed); the zero */
    float r_scale, r_zero; /* points, y1's and r's, integers of their types */
    int r_signed;          /* r is int8, else uint8 */
    bd_i8_requant out;     /* the clamp and QuantizeLinear of the sum; out.out_signed: y's type */
} bd_i8_residual;
/* bd_i8_conv2d_tile_requant, then each element of the tile's part of y replaced by the residual
 * sum with r's element at the same place (r has y's shape, [N, M, OH, OW], and does not overlap
 * it). */
void bd_i8_conv2d_tile_requant_add(const bd_conv2d_shape *s, const void *x, int x_signed,
                                   int32_t x_zero, const void *wpacked, const float *bias,
                                   const bd_i8_requant *rq, const bd_i8_residual *ra,
                                   const void *r, void *y, int64_t n, int64_t oc0, int64_t oc1,
                                   int64_t oh0, int64_t oh1, void *scratch);

/* ---- 2-D max pooling (NCHW) -------------------------------------------------------------- */

typedef struct bd_pool2d_shape {
    int64_t H, W, OH, OW; /* input and output plane */
    int64_t KH, KW;       /* window */
    int64_t stride_h, stride_w, pad_top, pad_left;
} bd_pool2d_shape;

/* Max pooling of planes [c0, c1), output rows [oh0, oh1) and columns [ow0, ow1): x and y point
 * at plane 0 of the input and output (planes H*W and OH*OW apart). Taps outside the input are
 * skipped, and a NaN tap never wins (the result is the largest of the others; -inf for a window
 * with no tap inside). With windows up to 3 columns wide (and at most 15 columns of padding on
 * the left) at column stride 2, or at unit strides up to 3 rows high, every output runs on
 * vectors (AVX2, AVX-512); other shapes in plain C. No scratch. */
void bd_f32_maxpool2d_tile(const bd_pool2d_shape *s, const float *x, float *y, int64_t c0,
                           int64_t c1, int64_t oh0, int64_t oh1, int64_t ow0, int64_t ow1);

#ifdef __cplusplus
}
#endif

#endif /* BD_KERNELS_H */
