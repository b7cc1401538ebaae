/* lower_data.h — the resolved parameters of the data-movement bodies (COPY, PAD, GATHER,
 * RESIZE), laid out in bd_nest.params by lower_data.c and read by emit_c_data.c; and the Resize
 * sampling tables both of them compute.
 *
 * COPY is one strided remap serving Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze,
 * Transpose, Slice, Expand and the pieces of Concat and Split: iteration index (i0..ir) reads input
 * element in_base + sum(ik * in_stride[k]) and writes output element out_base + sum(ik *
 * out_stride[k]). Strides may be 0 (broadcast) or negative (reversed slices). */
#ifndef BD_LOWER_DATA_H
#define BD_LOWER_DATA_H

#include "loopnest.h"

typedef struct bd_copy_params {
    int64_t in_base, out_base;
    int64_t in_stride[BD_MAX_RANK], out_stride[BD_MAX_RANK]; /* elements, per iteration dim */
    bool fill;         /* no input operand: every element becomes fill_value (Dropout's mask) */
    double fill_value;
} bd_copy_params;

typedef enum bd_pad_mode { BD_PAD_CONSTANT, BD_PAD_REFLECT, BD_PAD_EDGE, BD_PAD_WRAP } bd_pad_mode;

/* Pad: negative pads crop first, then positive pads grow around the cropped input (what
 * onnxruntime does); reflect/edge/wrap read the cropped input. Output index i along dim k maps to
 * cropped index j = i - pad_lo[k] (resolved by the mode when outside [0, kept[k])), i.e. input
 * index j + crop_lo[k]. */
typedef struct bd_pad_params {
    bd_pad_mode mode;
    int64_t pad_lo[BD_MAX_RANK];  /* head padding, >= 0 */
    int64_t crop_lo[BD_MAX_RANK]; /* head elements cropped away, >= 0 */
    int64_t kept[BD_MAX_RANK];    /* extent of the cropped input */
    int value_operand;            /* operand index of the constant_value input, -1: value below */
    double value;                 /* constant (opset < 11 attribute 'value', else 0) */
} bd_pad_params;

typedef struct bd_gather_params {
    int axis;      /* in the data operand */
    int idx_rank;  /* rank of indices: output dims [axis, axis + idx_rank) walk them */
} bd_gather_params;

typedef enum bd_resize_coord {
    BD_RESIZE_HALF_PIXEL,
    BD_RESIZE_HALF_PIXEL_SYMMETRIC,
    BD_RESIZE_PYTORCH_HALF_PIXEL,
    BD_RESIZE_ALIGN_CORNERS,
    BD_RESIZE_ASYMMETRIC,
    BD_RESIZE_TF_HALF_PIXEL_FOR_NN,
    BD_RESIZE_TF_CROP_AND_RESIZE,
} bd_resize_coord;

typedef enum bd_resize_nearest {
    BD_NEAREST_ROUND_PREFER_FLOOR,
    BD_NEAREST_ROUND_PREFER_CEIL,
    BD_NEAREST_FLOOR,
    BD_NEAREST_CEIL,
    BD_NEAREST_SIMPLE, /* opset 10: truncate when upsampling, ceil when downsampling */
} bd_resize_nearest;

typedef enum bd_resize_interp {
    BD_INTERP_NEAREST,
    BD_INTERP_LINEAR,
    BD_INTERP_CUBIC,
} bd_resize_interp;

typedef struct bd_resize_params {
    bd_resize_interp interp;
    bool antialias;                /* linear, cubic: the filter widened by 1/scale to downsample */
    bool exclude_outside;          /* taps outside the input get weight 0, the rest renormalised */
    double cubic_coeff_a;
    bd_resize_coord coord;
    bd_resize_nearest nearest;
    double extrapolation_value;    /* tf_crop_and_resize outside the input */
    double scale[BD_MAX_RANK];     /* per dim, as the coordinate transform uses it */
    double roi_start[BD_MAX_RANK], roi_end[BD_MAX_RANK];
    int64_t in_extent[BD_MAX_RANK], out_extent[BD_MAX_RANK];
    bool active[BD_MAX_RANK];      /* dims whose sampling is not the identity */
    int64_t row_elems;             /* filter modes, 2+ active dims: elements of the per-thread row
                                      buffer the active dims but the last are combined into */
} bd_resize_params;

/* Nearest and plain linear sample each dim at one or two input indices, through bd_resize_table;
 * cubic and antialiased linear weigh a window of taps per output index (bd_resize_filter). */
bool bd_resize_uses_filter(const bd_resize_params *p);

/* Sampling table of dim k: for each output index o, the input indices idx0[o], idx1[o] (clamped
 * to the extent) and the weight w1[o] of idx1 (weight of idx0 = 1 - w1; nearest: idx1 == idx0,
 * w1 == 0); idx0[o] == -1 when the output element takes the extrapolation value. */
void bd_resize_table(const bd_resize_params *p, int k, int64_t *idx0, int64_t *idx1, float *w1);

/* Filter table of dim k: bd_resize_taps(p, k) taps per output index o; tap t reads input index
 * idx[o * taps + t] (clamped to the extent, which is what the spec's edge padding amounts to) with
 * weight w[o * taps + t]; outside[o] when the output element takes the extrapolation value (its
 * taps then read index 0 with weight 0). */
int bd_resize_taps(const bd_resize_params *p, int k);
void bd_resize_filter(const bd_resize_params *p, int k, int64_t *idx, double *w, bool *outside);

#endif
