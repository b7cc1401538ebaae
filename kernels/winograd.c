/* winograd.c — 3x3 stride-1 convolutions by Winograd's minimal filtering, F(2x2,3x3) and
 * F(4x4,3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
 *
 * An output tile of m x m pixels (m = 2 or 4) comes from an a x a input patch, a = m + 2:
 *   Y = A^T [ (G g G^T) .* (B^T d B) ] A
 * The weights' transform U = G g G^T is done once, at packing, in double precision, and stored
 * as a*a matrices U[xi] (M x C), each packed as the A operand of a GEMM. Per tile of the
 * generated code (output channels x output rows), every input patch is transformed into
 * V[xi] (C x P, P the patches of the tile), the a*a products U[xi] * V[xi] run on the blocked
 * GEMM driver, and the output transform adds the bias, applies the activation and stores the
 * m x m pixels that exist. Multiplications per output pixel fall from 9*C to (a/m)^2 * C:
 * 2.25x fewer for F(2x2,3x3), 4x fewer for F(4x4,3x3). The price is rounding: F(2x2,3x3) rounds
 * no worse than the direct sums here, F(4x4,3x3) about ten times more (the kernels test measures
 * both). The transformed weights are (a/3)^2 times the direct ones, and each is used once per
 * patch of a tile, so tiles of few patches are bound by streaming them (the compiler's tiler
 * weighs that).
 *
 * The transforms work on LANES patches at once (vectors of LANES floats the compiler turns into
 * the instructions of the instruction set each copy is compiled for). Patch p of a tile is
 * patch row p / tw, patch column p % tw; the products compute P rounded up to LANES columns, and
 * the spare ones are never stored.
 */
#include <string.h>

#include "bd_kernels_internal.h"

#if BD_KERNELS_X86
#include <immintrin.h>
#endif

enum { LANES = 16 };

static int64_t imin(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t imax(int64_t a, int64_t b) {
    return a > b ? a : b;
}
static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

int bd_wino_shape_ok(const bd_conv2d_shape *s) {
    return s->KH == 3 && s->KW == 3 && s->stride_h == 1 && s->stride_w == 1 && s->dil_h == 1 &&
           s->dil_w == 1 && s->group == 1;
}

/* The patches of a tile of `rows` output rows and the row buffer's geometry. */
typedef struct wino_geom {
    int64_t m, a, T, th, tw, P, Pp, vld, rows_in, twr, wq;
} wino_geom;

/* Pp: the patches rounded up to LANES (the columns the products compute); vld: V's row length,
 * with the slack of a lane group. */
static wino_geom wino_geometry(const bd_conv2d_shape *s, int64_t rows) {
    wino_geom g;
    g.m = s->winograd;
    g.a = g.m + 2;
    g.T = g.a * g.a;
    g.th = (rows + g.m - 1) / g.m;
    g.tw = (s->OW + g.m - 1) / g.m;
    g.P = g.th * g.tw;
    g.Pp = round_up(g.P, LANES);
    g.vld = g.Pp + LANES;
    g.rows_in = g.th * g.m + 2;
    g.twr = round_up(g.tw, LANES); /* patches of a patch row, in whole lane groups */
    g.wq = g.twr + LANES;          /* a phase row: + the column past the last patch */
    return g;
}

/* ---- weight transform ---------------------------------------------------------------------- */

static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
static const double G4[6][3] = {{1.0 / 4, 0, 0},
                                {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                {0, 0, 1}};

size_t bd_wino_packed_floats(const bd_conv2d_shape *s, int mr) {
    int64_t a = s->winograd + 2;
    return (size_t)(a * a * round_up(s->M, mr) * s->C);
}

void bd_wino_pack(const bd_conv2d_shape *s, const float *w, float *dst, int mr) {
    const int64_t a = s->winograd + 2, T = a * a, C = s->C, M = s->M;
    const int64_t per_xi = round_up(M, mr) * C;
    const double(*Gm)[3] = s->winograd == 2 ? G2 : G4;
    memset(dst, 0, (size_t)(T * per_xi) * sizeof(float)); /* rows past M stay zero */
    for (int64_t oc = 0; oc < M; oc++)
        for (int64_t c = 0; c < C; c++) {
            const float *g = w + (oc * C + c) * 9;
            double t[6][3]; /* G g */
            for (int64_t i = 0; i < a; i++)
                for (int j = 0; j < 3; j++)
                    t[i][j] = Gm[i][0] * g[j] + Gm[i][1] * g[3 + j] + Gm[i][2] * g[6 + j];
            /* U[xi] packed as an A operand: panel oc / mr holds C x mr floats */
            float *at = dst + (oc / mr) * C * mr + c * mr + oc % mr;
            for (int64_t i = 0; i < a; i++)
                for (int64_t j = 0; j < a; j++)
                    at[(i * a + j) * per_xi] =
                        (float)(t[i][0] * Gm[j][0] + t[i][1] * Gm[j][1] + t[i][2] * Gm[j][2]);
        }
}

/* ---- input and output transforms, LANES patches at a time -------------------------------- */

/* LANES floats as one vector value (a GCC/clang vector type), which the compiler splits into
 * the instruction set's registers. As arrays of floats copied by memcpy, gcc moved them in
 * 16-byte pieces and read them back 32 bytes at a time on AVX2, each read stalled on stores it
 * could not forward from (a memcpy of the vector type was split the same way). */
typedef float lanes __attribute__((vector_size(LANES * sizeof(float))));

/* The same at any float's alignment, for whole loads and stores; by pointer, as a vector
 * argument or result in a copy compiled without AVX-512 would change the ABI. */
typedef float lanes_at __attribute__((vector_size(LANES * sizeof(float)), aligned(4), may_alias));

static inline __attribute__((always_inline)) void load_lanes(lanes *v, const float *p) {
    *v = *(const lanes_at *)p;
}
static inline __attribute__((always_inline)) void store_lanes(float *p, const lanes *v) {
    *(lanes_at *)p = *v;
}

/* B^T d (one column of a patch): F(2x2,3x3) and F(4x4,3x3). */
static inline __attribute__((always_inline)) void bt2(lanes *t, const lanes *d) {
    t[0] = d[0] - d[2];
    t[1] = d[1] + d[2];
    t[2] = d[2] - d[1];
    t[3] = d[1] - d[3];
}
static inline __attribute__((always_inline)) void bt4(lanes *t, const lanes *d) {
    lanes s12 = d[1] + d[2], d12 = d[1] - d[2];
    lanes d42 = d[4] - d[2], d31 = d[3] - d[1];
    t[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    t[1] = d[3] + d[4] - 4.0f * s12;
    t[2] = d[4] - d[3] + 4.0f * d12;
    t[3] = d42 + 2.0f * d31;
    t[4] = d42 - 2.0f * d31;
    t[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}
/* A^T m (one column of a transformed product). */
static inline __attribute__((always_inline)) void at2(lanes *y, const lanes *m) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
}
static inline __attribute__((always_inline)) void at4(lanes *y, const lanes *m) {
    lanes s12 = m[1] + m[2], d12 = m[1] - m[2];
    lanes s34 = m[3] + m[4], d34 = m[3] - m[4];
    y[0] = m[0] + s12 + s34;
    y[1] = d12 + 2.0f * d34;
    y[2] = s12 + 4.0f * s34;
    y[3] = d12 + 8.0f * d34 + m[5];
}

/* The input transform of one channel, B^T d B for every patch, in three vector passes with no
 * gathers: (1) each zero-padded input row is split into its m phases (phase q holds columns q,
 * q+m, q+2m, ...), so that column j of patch tj is element tj + j/m of phase j%m: a contiguous
 * run over consecutive patches; (2) along each row, d B for LANES patches of a patch row at a
 * time; (3) down the columns, B^T (d B), stored to V (C x vld per xi, row c of V[xi] at
 * v + xi * xi_stride + c * vld) as runs of the patch row (p = ti*tw + tj).
 * ph: the phases (rows_in x m rows of wq floats), hr: the row pass (rows_in x a rows of twr). */
typedef struct wino_in {
    const float *x; /* this channel's input plane */
    int64_t H, W, ih0, left;
    int64_t a, th, tw, rows_in, wq, twr;
    float *row, *ph, *hr; /* the padded row (m * wq floats), its phases, the row pass */
    float *v;          /* channel c of V[0] */
    int64_t xi_stride; /* V[xi + 1] - V[xi] */
    int64_t zero_from; /* the lane group from here is zeroed: columns below Pp that the lane
                        * groups of the last patch row do not reach (-1: none) */
} wino_in;

/* Phase q of a padded row (m*wq floats): dst + q*wq holds row[q], row[q+m], ... (wq of them). */
typedef void (*deinterleave_fn)(const float *row, int m, int64_t wq, float *dst);

static void deinterleave_portable(const float *row, int m, int64_t wq, float *dst) {
    for (int q = 0; q < m; q++)
        for (int64_t u = 0; u < wq; u++)
            dst[q * wq + u] = row[u * m + q];
}

#if BD_KERNELS_X86
/* Two (four) vectors of the row give 8 elements of each phase: shuffles within the 128-bit
 * halves, then one cross-half permute. gcc's vectorization of the portable loop blended and
 * permuted each element set apart. */
static __attribute__((target("avx2"))) void deinterleave_avx2(const float *row, int m, int64_t wq,
                                                              float *dst) {
    if (m == 2) {
        for (int64_t u = 0; u < wq; u += 8) {
            __m256 a = _mm256_loadu_ps(row + 2 * u), b = _mm256_loadu_ps(row + 2 * u + 8);
            /* [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6] */
            __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
            __m256 odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
            _mm256_storeu_ps(dst + u, _mm256_castpd_ps(_mm256_permute4x64_pd(
                                          _mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0))));
            _mm256_storeu_ps(dst + wq + u, _mm256_castpd_ps(_mm256_permute4x64_pd(
                                               _mm256_castps_pd(odd), _MM_SHUFFLE(3, 1, 2, 0))));
        }
        return;
    }
    /* m = 4: the 4 x 4 transpose of each 128-bit half leaves phase q as groups
     * [0 2 4 6 | 1 3 5 7] of the 8 groups of 4 read */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t u = 0; u < wq; u += 8) {
        const float *r = row + 4 * u;
        __m256 r0 = _mm256_loadu_ps(r), r1 = _mm256_loadu_ps(r + 8);
        __m256 r2 = _mm256_loadu_ps(r + 16), r3 = _mm256_loadu_ps(r + 24);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        __m256 p0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
        __m256 p1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
        __m256 p2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
        __m256 p3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
        _mm256_storeu_ps(dst + u, _mm256_permutevar8x32_ps(p0, order));
        _mm256_storeu_ps(dst + wq + u, _mm256_permutevar8x32_ps(p1, order));
        _mm256_storeu_ps(dst + 2 * wq + u, _mm256_permutevar8x32_ps(p2, order));
        _mm256_storeu_ps(dst + 3 * wq + u, _mm256_permutevar8x32_ps(p3, order));
    }
}

/* Two or four vectors of the row give 16 elements of each phase by two-source permutes. */
static __attribute__((target("avx512f"))) void deinterleave_avx512(const float *row, int m,
                                                                    int64_t wq, float *dst) {
    if (m == 2) {
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                               28, 30);
        const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
        for (int64_t u = 0; u < wq; u += 16) {
            __m512 z0 = _mm512_loadu_ps(row + 2 * u), z1 = _mm512_loadu_ps(row + 2 * u + 16);
            _mm512_storeu_ps(dst + u, _mm512_permutex2var_ps(z0, even, z1));
            _mm512_storeu_ps(dst + wq + u, _mm512_permutex2var_ps(z0, odd, z1));
        }
        return;
    }
    for (int q = 0; q < 4; q++) {
        const __m512i idx = _mm512_setr_epi32(q, q + 4, q + 8, q + 12, q + 16, q + 20, q + 24,
                                              q + 28, 0, 0, 0, 0, 0, 0, 0, 0);
        for (int64_t u = 0; u < wq; u += 16) {
            const float *r = row + 4 * u;
            __m512 lo = _mm512_permutex2var_ps(_mm512_loadu_ps(r), idx, _mm512_loadu_ps(r + 16));
            __m512 hi =
                _mm512_permutex2var_ps(_mm512_loadu_ps(r + 32), idx, _mm512_loadu_ps(r + 48));
            _mm512_storeu_ps(dst + q * wq + u, _mm512_shuffle_f32x4(lo, hi, 0x44));
        }
    }
}
#endif

static inline __attribute__((always_inline)) void input_channel(const int a, const wino_in *w,
                                                                deinterleave_fn deinterleave) {
    const int m = a - 2;
    const int64_t len = m * w->wq; /* the padded row, as far as the phases reach */
    const int64_t c_lo = imin(w->left, len), c_hi = imax(c_lo, imin(w->W + w->left, len));
    for (int64_t r = 0; r < w->rows_in; r++) {
        const int64_t ih = w->ih0 + r;
        float *ph = w->ph + r * m * w->wq;
        if (ih < 0 || ih >= w->H) {
            memset(ph, 0, (size_t)len * sizeof(float));
            continue;
        }
        memset(w->row, 0, (size_t)c_lo * sizeof(float));
        memcpy(w->row + c_lo, w->x + ih * w->W + (c_lo - w->left),
               (size_t)(c_hi - c_lo) * sizeof(float));
        memset(w->row + c_hi, 0, (size_t)(len - c_hi) * sizeof(float));
        deinterleave(w->row, m, w->wq, ph);
    }
    lanes d[6], t[6];
    for (int64_t r = 0; r < w->rows_in; r++)
        for (int64_t u0 = 0; u0 < w->tw; u0 += LANES) {
            for (int j = 0; j < a; j++)
                load_lanes(&d[j], w->ph + (r * m + j % m) * w->wq + u0 + j / m);
            if (a == 4)
                bt2(t, d);
            else
                bt4(t, d);
            for (int k = 0; k < a; k++)
                store_lanes(w->hr + (r * a + k) * w->twr + u0, &t[k]);
        }
    for (int64_t ti = 0; ti < w->th; ti++)
        for (int64_t u0 = 0; u0 < w->tw; u0 += LANES) {
            const int64_t p0 = ti * w->tw + u0;
            for (int k = 0; k < a; k++) {
                for (int i = 0; i < a; i++)
                    load_lanes(&d[i], w->hr + ((ti * m + i) * a + k) * w->twr + u0);
                if (a == 4)
                    bt2(t, d);
                else
                    bt4(t, d);
                /* whole lane groups, in increasing p: the lanes past the patch row are
                 * overwritten by the next one, or land past P (in V's slack) */
                for (int i = 0; i < a; i++)
                    store_lanes(w->v + (i * a + k) * w->xi_stride + p0, &t[i]);
            }
        }
    if (w->zero_from >= 0) {
        const lanes zeros = {0};
        for (int xi = 0; xi < a * a; xi++)
            store_lanes(w->v + xi * w->xi_stride + w->zero_from, &zeros);
    }
}

static inline __attribute__((always_inline)) void output_lanes(
    const int a, const float *o, int64_t xi_stride, float bias, int act, float lo, float hi,
    float *y, const int64_t *yoff, const int8_t *rows_ok, const int8_t *cols_ok, int64_t OW) {
    const int m = a - 2;
    lanes mm[6][6], col[6], t[6], r[4][4];
    for (int xi = 0; xi < a * a; xi++)
        load_lanes(&mm[xi / a][xi % a], o + xi * xi_stride);
    lanes u[4][6]; /* A^T M, then (A^T M) A by rows */
    for (int j = 0; j < a; j++) {
        for (int i = 0; i < a; i++)
            col[i] = mm[i][j];
        if (a == 4)
            at2(t, col);
        else
            at4(t, col);
        for (int i = 0; i < m; i++)
            u[i][j] = t[i];
    }
    for (int i = 0; i < m; i++) {
        if (a == 4)
            at2(t, u[i]);
        else
            at4(t, u[i]);
        for (int j = 0; j < m; j++)
            r[i][j] = t[j] + bias;
    }
    for (int i = 0; i < m; i++) /* r's rows are 4 apart whatever m is */
        bd_act_apply_row((float *)&r[i][0], m * LANES, act, lo, hi);
    for (int l = 0; l < LANES; l++) {
        float *yl = y + yoff[l];
        if (rows_ok[l] == m && cols_ok[l] == m) { /* a whole tile: m known, unrolled */
            for (int i = 0; i < m; i++)
                for (int j = 0; j < m; j++)
                    yl[i * OW + j] = r[i][j][l];
            continue;
        }
        for (int i = 0; i < rows_ok[l]; i++)
            for (int j = 0; j < cols_ok[l]; j++)
                yl[i * OW + j] = r[i][j][l];
    }
}

/* The transforms of one tile for a = 4 or 6, compiled once per instruction set. */
#define WINO_TRANSFORMS(SUFFIX, TARGET, DEINTERLEAVE)                                              \
    static TARGET void input_channel##SUFFIX(const wino_in *w) {                                  \
        if (w->a == 4)                                                                             \
            input_channel(4, w, DEINTERLEAVE);                                                     \
        else                                                                                       \
            input_channel(6, w, DEINTERLEAVE);                                                     \
    }                                                                                              \
    static TARGET void output_all##SUFFIX(int a, const float *o, int64_t Pp, int64_t xi_stride,    \
                                          float bias, int act, float lo, float hi, float *y,       \
                                          const int64_t *yoff, const int8_t *rows_ok,              \
                                          const int8_t *cols_ok, int64_t OW) {                     \
        for (int64_t p0 = 0; p0 < Pp; p0 += LANES) {                                               \
            if (a == 4)                                                                            \
                output_lanes(4, o + p0, xi_stride, bias, act, lo, hi, y, yoff + p0, rows_ok + p0,  \
                             cols_ok + p0, OW);                                                    \
            else                                                                                   \
                output_lanes(6, o + p0, xi_stride, bias, act, lo, hi, y, yoff + p0, rows_ok + p0,  \
                             cols_ok + p0, OW);                                                    \
        }                                                                                          \
    }

WINO_TRANSFORMS(_portable, , deinterleave_portable)
#if BD_KERNELS_X86
WINO_TRANSFORMS(_avx2, __attribute__((target("avx2,fma"))), deinterleave_avx2)
WINO_TRANSFORMS(_avx512, __attribute__((target("avx512f"))), deinterleave_avx512)
#endif
#undef WINO_TRANSFORMS

typedef void (*input_channel_fn)(const wino_in *);
typedef void (*output_all_fn)(int, const float *, int64_t, int64_t, float, int, float, float,
                              float *, const int64_t *, const int8_t *, const int8_t *, int64_t);

/* ---- tiles --------------------------------------------------------------------------------- */

/* Scratch floats: the output patch tables, the input pass buffers, V, the products and the GEMM
 * driver's blocks, each part 64-byte aligned. */
size_t bd_wino_scratch_floats(const bd_conv2d_shape *s, int64_t rows) {
    const wino_geom g = wino_geometry(s, rows);
    size_t tables = (size_t)(2 * g.Pp + g.Pp / 2 + 16);
    size_t buf = (size_t)(g.m * g.wq + g.rows_in * (g.m * g.wq + g.a * g.twr) + 48);
    size_t v = (size_t)(g.T * s->C * g.vld + 16), o = (size_t)(g.T * s->M * g.Pp + 16);
    /* the GEMM driver packs V's blocks: a bound over every instruction set */
    size_t gemm = bd_gemm_scratch_bytes_all(s->M, g.Pp, s->C, 1) / sizeof(float);
    return tables + buf + v + o + gemm + 16;
}

static float *align16(void *p) {
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Output channels [m_lo, m_hi), output rows [oh0, oh1) of one batch item: x is its first input
 * channel, y output channel m_lo at row oh0, bias (or NULL) the bias of channel m_lo. */
void bd_wino_tile(const bd_gemm_kernel *kd, const bd_conv2d_shape *s, const float *x,
                  const float *upacked, const float *bias, float *y, int64_t m_lo, int64_t m_hi,
                  int64_t oh0, int64_t oh1, int act, float act_min, float act_max, void *scratch) {
    const wino_geom g = wino_geometry(s, oh1 - oh0);
    const int64_t C = s->C, H = s->H, W = s->W, OW = s->OW, Mt = m_hi - m_lo;
    const int a = (int)g.a;
    int64_t *yoff = (int64_t *)align16(scratch);
    int8_t *rows_ok = (int8_t *)(yoff + g.Pp), *cols_ok = rows_ok + g.Pp;
    float *row = align16(cols_ok + g.Pp), *ph = align16(row + g.m * g.wq);
    float *hr = align16(ph + g.rows_in * g.m * g.wq);
    float *v = align16(hr + g.rows_in * g.a * g.twr);
    float *o = align16(v + g.T * C * g.vld);
    float *gemm_scratch = align16(o + g.T * Mt * g.Pp);
    for (int64_t p = 0; p < g.Pp; p++) {
        const int64_t q = imin(p, g.P - 1), ti = q / g.tw, tj = q % g.tw;
        yoff[p] = ti * g.m * OW + tj * g.m;
        rows_ok[p] = (int8_t)(p < g.P ? imin(g.m, (oh1 - oh0) - ti * g.m) : 0);
        cols_ok[p] = (int8_t)(p < g.P ? imin(g.m, OW - tj * g.m) : 0);
    }
    input_channel_fn input_channel_isa = input_channel_portable;
    output_all_fn output_all = output_all_portable;
#if BD_KERNELS_X86
    if (kd->isa == BD_KERNELS_ISA_AVX512) {
        input_channel_isa = input_channel_avx512;
        output_all = output_all_avx512;
    } else if (kd->isa == BD_KERNELS_ISA_AVX2) {
        input_channel_isa = input_channel_avx2;
        output_all = output_all_avx2;
    }
#endif
    /* the last patch row's lane groups reach up to last; past it V is not written */
    const int64_t last = (g.th - 1) * g.tw + (g.tw - 1) / LANES * LANES + LANES;
    wino_in win = {.H = H, .W = W, .ih0 = oh0 - s->pad_top, .left = s->pad_left, .a = g.a,
                   .th = g.th, .tw = g.tw, .rows_in = g.rows_in, .wq = g.wq, .twr = g.twr,
                   .row = row, .ph = ph, .hr = hr, .xi_stride = C * g.vld,
                   .zero_from = last < g.Pp ? last : -1};
    for (int64_t c = 0; c < C; c++) {
        win.x = x + c * H * W;
        win.v = v + c * g.vld;
        input_channel_isa(&win);
    }
    /* the a*a products, each Mt x Pp = U[xi][m_lo:m_hi] (Mt x C) * V[xi] (C x Pp); the columns
     * past P are finite (transforms of input or zeros) and are never stored */
    const int64_t u_stride = round_up(s->M, kd->mr) * C;
    const bd_gemm_epilogue none = {NULL, NULL, 0, BD_ACT_NONE, 0, 0};
    for (int64_t xi = 0; xi < g.T; xi++) {
        bd_raw_matrix vm = {v + xi * C * g.vld, g.vld, 0};
        bd_gemm_operand ua = {upacked + xi * u_stride, NULL, NULL, NULL};
        bd_gemm_operand vb = {NULL, NULL, bd_pack_b_raw, &vm};
        bd_gemm_run(kd, m_lo, m_hi, 0, g.Pp, C, &ua, &vb, o + xi * Mt * g.Pp, g.Pp, &none,
                    gemm_scratch);
    }
    /* output transform, channel by channel */
    for (int64_t oc = 0; oc < Mt; oc++)
        output_all(a, o + oc * g.Pp, g.Pp, Mt * g.Pp, bias ? bias[oc] : 0.0f, act, act_min,
                   act_max, y + oc * s->OH * OW, yoff, rows_ok, cols_ok, OW);
}
