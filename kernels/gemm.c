/* gemm.c — float32 GEMM: instruction-set dispatch, packing, cache blocking, the portable
 * micro-kernel and the public GEMM entry points.
 *
 * The structure is the one of GotoBLAS/BLIS. C = A*B is cut into column blocks of NC, depth
 * blocks of KC and row blocks of MC. For each depth block, a KC x NC block of B is packed into
 * NR-column panels (it stays in L2/L3) and for each row block an MC x KC block of A is packed
 * into MR-row panels (it stays in L2). The macro-kernel then walks the B panels (one KC x NR
 * panel stays in L1) and, for each, the A panels, calling the MR x NR register-blocked
 * micro-kernel, which streams both panels and keeps the whole C tile in registers for the whole
 * depth block. The first depth block writes C (bias included, or adds to it when accumulating),
 * the following ones add to it, the last one applies the activation.
 *
 * Pre-packed operands (weights) skip their packing step: their panels hold the whole depth, so a
 * depth block is an offset into them. A kernel with a_in_place reads a row-major A (activations)
 * where it lies, with its row stride, and it is not packed at all. Tiles whose rows or columns do not fill a register tile
 * (the edges of C, or a sub-range of a pre-packed operand that starts inside a panel) are
 * computed into a small buffer and copied out by a scalar epilogue; tiles that only lack rows
 * use the micro-kernel's own row count.
 *
 * The micro-kernel and the blocking sizes come from a descriptor per instruction set (portable C
 * here, AVX2 in gemm_avx2.c, AVX-512 in gemm_avx512.c), chosen at run time.
 */
#define _GNU_SOURCE /* syscall(), for the AMX permission request */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bd_kernels_internal.h"

#if BD_KERNELS_X86
#include <cpuid.h>
#include <xmmintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

_Noreturn void bd_kernels_fail(const char *file, int line, const char *what) {
    fprintf(stderr, "bdc kernels: internal check failed at %s:%d: %s\n", file, line, what);
    abort();
}

static int64_t imin(int64_t a, int64_t b) {
    return a < b ? a : b;
}
static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

/* ---- instruction-set dispatch -------------------------------------------------------------- */

static _Atomic int g_isa;      /* 0: not chosen yet */
static _Atomic int g_cpu_mask; /* bit i: ISA i supported; 0: not probed yet */
/* AVX-512 VNNI, AVX-VNNI (vpdpbusd), AMX-INT8 (tdpbusd) and AVX512_BF16 (vdpbf16ps), beside the
 * ISA bits */
enum { CPU_VNNI_BIT = 8, CPU_AVX_VNNI_BIT = 9, CPU_AMX_BIT = 10, CPU_BF16_BIT = 11 };
static _Atomic int g_avx_vnni_off, g_amx_off;

#if BD_KERNELS_X86
/* AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25), the tile state enabled by the OS
 * (XCR0 bits 17 and 18), and, on Linux, this process's permission to use it: the kernel grants
 * the tile data state only on request (arch_prctl ARCH_REQ_XCOMP_PERM), once per process. */
static int cpu_has_amx_int8(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1)) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1)) return 0; /* OSXSAVE: xgetbv works */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo >> 17 & 3) != 3) return 0;
#if defined(__linux__)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return 0;
#endif
}
#endif

static int cpu_mask(void) {
    int m = atomic_load_explicit(&g_cpu_mask, memory_order_relaxed);
    if (m == 0) {
        m = 1 << BD_KERNELS_ISA_PORTABLE;
#if BD_KERNELS_X86
        __builtin_cpu_init();
        int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        if (avx2) m |= 1 << BD_KERNELS_ISA_AVX2;
        if (avx2 && __builtin_cpu_supports("avx512f")) m |= 1 << BD_KERNELS_ISA_AVX512;
        if ((m >> BD_KERNELS_ISA_AVX512 & 1) && __builtin_cpu_supports("avx512vnni"))
            m |= 1 << CPU_VNNI_BIT;
        /* AVX-VNNI: CPUID leaf 7 subleaf 1, EAX bit 4 (not every compiler's builtin knows it) */
        unsigned a, b, c, d;
        if (avx2 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1))
            m |= 1 << CPU_AVX_VNNI_BIT;
        if ((m >> CPU_VNNI_BIT & 1) && cpu_has_amx_int8()) m |= 1 << CPU_AMX_BIT;
        /* AVX512_BF16: CPUID leaf 7 subleaf 1, EAX bit 5 */
        if ((m >> BD_KERNELS_ISA_AVX512 & 1) && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 5 & 1))
            m |= 1 << CPU_BF16_BIT;
#endif
        atomic_store_explicit(&g_cpu_mask, m, memory_order_relaxed);
    }
    return m;
}

int bd_kernels_isa_supported(bd_kernels_isa isa) {
    if (isa < BD_KERNELS_ISA_PORTABLE || isa > BD_KERNELS_ISA_AVX512) return 0;
    return (cpu_mask() >> isa) & 1;
}

int bd_kernels_cpu_has_vnni(void) {
    return (cpu_mask() >> CPU_VNNI_BIT) & 1;
}

int bd_kernels_cpu_has_avx_vnni(void) {
    return ((cpu_mask() >> CPU_AVX_VNNI_BIT) & 1) &&
           !atomic_load_explicit(&g_avx_vnni_off, memory_order_relaxed);
}

int bd_kernels_avx_vnni_off(int off) {
    atomic_store_explicit(&g_avx_vnni_off, off != 0, memory_order_relaxed);
    return (cpu_mask() >> CPU_AVX_VNNI_BIT) & 1;
}

/* AVX512_BF16, and the kernels' chosen instruction set AVX-512 (a test that forces the portable
 * or AVX2 one gets gemm_bf16.c's plain C and fp32 convolutions). */
int bd_kernels_cpu_has_bf16(void) {
    return ((cpu_mask() >> CPU_BF16_BIT) & 1) && bd_kernels_get_isa() == BD_KERNELS_ISA_AVX512;
}

int bd_kernels_cpu_has_amx(void) {
    return ((cpu_mask() >> CPU_AMX_BIT) & 1) && !atomic_load_explicit(&g_amx_off, memory_order_relaxed);
}

int bd_kernels_amx_off(int off) {
    atomic_store_explicit(&g_amx_off, off != 0, memory_order_relaxed);
    return (cpu_mask() >> CPU_AMX_BIT) & 1;
}

const char *bd_kernels_isa_name(bd_kernels_isa isa) {
    switch (isa) {
    case BD_KERNELS_ISA_PORTABLE: return "portable";
    case BD_KERNELS_ISA_AVX2: return "avx2";
    case BD_KERNELS_ISA_AVX512: return "avx512";
    default: return "auto";
    }
}

static bd_kernels_isa isa_best(void) {
    if (bd_kernels_isa_supported(BD_KERNELS_ISA_AVX512)) return BD_KERNELS_ISA_AVX512;
    if (bd_kernels_isa_supported(BD_KERNELS_ISA_AVX2)) return BD_KERNELS_ISA_AVX2;
    return BD_KERNELS_ISA_PORTABLE;
}

/* BDC_KERNELS=portable|avx2|avx512 when this CPU supports it, else the best one. */
static bd_kernels_isa isa_initial(void) {
    const char *env = getenv("BDC_KERNELS");
    if (env) {
        for (int i = BD_KERNELS_ISA_PORTABLE; i <= BD_KERNELS_ISA_AVX512; i++)
            if (strcmp(env, bd_kernels_isa_name((bd_kernels_isa)i)) == 0 &&
                bd_kernels_isa_supported((bd_kernels_isa)i))
                return (bd_kernels_isa)i;
    }
    return isa_best();
}

bd_kernels_isa bd_kernels_get_isa(void) {
    int v = atomic_load_explicit(&g_isa, memory_order_relaxed);
    if (v == 0) {
        v = (int)isa_initial();
        atomic_store_explicit(&g_isa, v, memory_order_relaxed);
    }
    return (bd_kernels_isa)v;
}

int bd_kernels_set_isa(bd_kernels_isa isa) {
    if (isa == BD_KERNELS_ISA_AUTO) isa = isa_best();
    if (!bd_kernels_isa_supported(isa)) return -1;
    atomic_store_explicit(&g_isa, (int)isa, memory_order_relaxed);
    return 0;
}

const bd_gemm_kernel *bd_gemm_kernel_for(bd_kernels_isa isa) {
    if (!bd_kernels_isa_supported(isa)) return NULL;
    switch (isa) {
    case BD_KERNELS_ISA_PORTABLE: return &bd_f32_gemm_kernel_portable;
#if BD_KERNELS_X86
    case BD_KERNELS_ISA_AVX2: return &bd_f32_gemm_kernel_avx2;
    case BD_KERNELS_ISA_AVX512: return &bd_f32_gemm_kernel_avx512;
#endif
    default: return NULL;
    }
}

const bd_gemm_kernel *bd_gemm_kernel_current(void) {
    return bd_gemm_kernel_for(bd_kernels_get_isa());
}

const char *bd_kernels_gemm_name(void) {
    return bd_gemm_kernel_current()->name;
}
int bd_kernels_gemm_mr(void) {
    return bd_gemm_kernel_current()->mr;
}
int bd_kernels_gemm_nr(void) {
    return bd_gemm_kernel_current()->nr;
}

/* ---- the portable micro-kernel ------------------------------------------------------------- */

enum { PORTABLE_MR = 4, PORTABLE_NR = 16 };

static void bd_f32_gemm_portable_4x16(int64_t kc, const float *a, const float *b, float *c,
                                      int64_t ldc, int m, const bd_ukr_epi *ep) {
    float acc[PORTABLE_MR][PORTABLE_NR];
    memset(acc, 0, sizeof acc);
    for (int64_t k = 0; k < kc; k++, a += PORTABLE_MR, b += PORTABLE_NR)
        for (int r = 0; r < PORTABLE_MR; r++)
            for (int j = 0; j < PORTABLE_NR; j++)
                acc[r][j] += a[r] * b[j];
    for (int r = 0; r < m; r++) {
        float *cr = c + r * ldc;
        float bm = ep->bias_m ? ep->bias_m[r] : 0.0f;
        for (int j = 0; j < PORTABLE_NR; j++) {
            float v = acc[r][j];
            if (ep->load_c) v += cr[j];
            if (ep->bias_n) v += ep->bias_n[j];
            v = bd_act_apply(v + bm, ep->act, ep->act_min, ep->act_max);
            cr[j] = v;
        }
    }
}

const bd_gemm_kernel bd_f32_gemm_kernel_portable = {"bd_f32_gemm_portable_4x16",
                                                    BD_KERNELS_ISA_PORTABLE,
                                                    PORTABLE_MR,
                                                    PORTABLE_NR,
                                                    256,
                                                    128,
                                                    2048,
                                                    512,
                                                    bd_f32_gemm_portable_4x16,
                                                    NULL,
                                                    bd_f32_dwconv_portable,
                                                    0,
                                                    NULL,
                                                    NULL,
                                                    NULL,
                                                    0,
                                                    0,
                                                    0,
                                                    NULL,
                                                    NULL,
                                                    NULL,
                                                    0,
                                                    NULL};

/* ---- packed-buffer header ------------------------------------------------------------------ */

#define BD_PACK_MAGIC 0x4b504442u /* "BDPK" */

void bd_pack_hdr_write(float *packed, const bd_pack_hdr *h) {
    bd_pack_hdr t = *h;
    t.magic = BD_PACK_MAGIC;
    memset(packed, 0, BD_PACK_HDR_FLOATS * sizeof(float));
    memcpy(packed, &t, sizeof t);
}

const bd_gemm_kernel *bd_pack_hdr_read(const float *packed, int kind, bd_pack_hdr *h) {
    BD_KCHECK(packed != NULL);
    memcpy(h, packed, sizeof *h);
    BD_KCHECK(h->magic == BD_PACK_MAGIC && "not a buffer packed by bd_kernels");
    BD_KCHECK(h->kind == kind && "packed buffer of another kind");
    const bd_gemm_kernel *kd = bd_gemm_kernel_for((bd_kernels_isa)h->isa);
    BD_KCHECK(kd != NULL);
    return kd;
}

/* ---- packing of raw row-major operands ----------------------------------------------------- */

/* Rows [0, rows) of a row-major panel (src, row stride ld) into dst[k * mr + r]. Element by
 * element this is a strided store per float, and an activation's A is packed again for every
 * column block of C (a fifth of a transformer's MatMul time); on x86, four rows at a time go
 * through a 4x4 transpose in SSE registers, four k a step, so every store writes 4 floats. */
static void pack_a_rows(const float *src, int64_t ld, int rows, int64_t kc, int mr, float *dst) {
    int64_t k = 0;
    int grouped = 0;
#if BD_KERNELS_X86
    grouped = rows / 4 * 4;
    if (grouped)
        for (; k + 4 <= kc; k += 4)
            for (int r = 0; r < grouped; r += 4) {
                const float *s = src + r * ld + k;
                __m128 a = _mm_loadu_ps(s), b = _mm_loadu_ps(s + ld);
                __m128 c = _mm_loadu_ps(s + 2 * ld), d = _mm_loadu_ps(s + 3 * ld);
                _MM_TRANSPOSE4_PS(a, b, c, d);
                float *o = dst + k * mr + r;
                _mm_storeu_ps(o, a);
                _mm_storeu_ps(o + mr, b);
                _mm_storeu_ps(o + 2 * mr, c);
                _mm_storeu_ps(o + 3 * mr, d);
            }
#endif
    for (int r = 0; r < rows; r++) /* the k past the last step of 4, and the rows past the groups */
        for (int64_t kk = r < grouped ? k : 0; kk < kc; kk++)
            dst[kk * mr + r] = src[r * ld + kk];
}

void bd_pack_a_raw(const void *ctx, int64_t i0, int64_t mc, int64_t k0, int64_t kc, int mr,
                   float *dst) {
    const bd_raw_matrix *m = ctx;
    if (kc <= 0) return; /* nothing to pack (and A may be NULL when K == 0) */
    for (int64_t p = 0; p < mc; p += mr, dst += kc * mr) {
        int rows = (int)imin(mr, mc - p);
        if (!m->trans) {
            pack_a_rows(m->p + (i0 + p) * m->ld + k0, m->ld, rows, kc, mr, dst);
        } else {
            for (int64_t k = 0; k < kc; k++) {
                const float *src = m->p + (k0 + k) * m->ld + i0 + p;
                for (int r = 0; r < rows; r++)
                    dst[k * mr + r] = src[r];
            }
        }
        if (rows < mr)
            for (int64_t k = 0; k < kc; k++)
                for (int r = rows; r < mr; r++)
                    dst[k * mr + r] = 0.0f;
    }
}

void bd_pack_b_raw(const void *ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr,
                   float *dst) {
    const bd_raw_matrix *m = ctx;
    if (kc <= 0) return; /* nothing to pack (and B may be NULL when K == 0) */
    if (!m->trans) {
        /* eight rows of the source at a time, each read along nc: panel by panel, the kc rows
         * are read 32 floats at a time from kc places at once, more streams than the
         * prefetchers follow, and one row at a time writes the panels kc * nr floats apart,
         * into one cache set when that is a multiple of 4 KiB */
        const int64_t full = nc / nr * nr;
        for (int64_t k1 = 0; k1 < kc; k1 += 8) {
            const int64_t k2 = imin(kc, k1 + 8);
            for (int64_t p = 0; p < full; p += nr) {
                float *d = dst + p * kc;
                if (nr == 32) /* a constant size: inlined moves, not a call per row */
                    for (int64_t k = k1; k < k2; k++)
                        memcpy(d + k * 32, m->p + (k0 + k) * m->ld + j0 + p, 32 * sizeof(float));
                else
                    for (int64_t k = k1; k < k2; k++)
                        memcpy(d + k * nr, m->p + (k0 + k) * m->ld + j0 + p,
                               (size_t)nr * sizeof(float));
            }
        }
        if (full < nc)
            for (int64_t k = 0; k < kc; k++) {
                const float *src = m->p + (k0 + k) * m->ld + j0 + full;
                float *t = dst + full * kc + k * nr;
                for (int64_t j = 0; j < nc - full; j++)
                    t[j] = src[j];
                for (int64_t j = nc - full; j < nr; j++)
                    t[j] = 0.0f;
            }
        return;
    }
    /* transposed: column j of a panel is row j0 + p + j of the source */
    for (int64_t p = 0; p < nc; p += nr, dst += kc * nr) {
        int cols = (int)imin(nr, nc - p);
        for (int j = 0; j < cols; j++) {
            const float *src = m->p + (j0 + p + j) * m->ld + k0;
            for (int64_t k = 0; k < kc; k++)
                dst[k * nr + j] = src[k];
        }
        if (cols < nr)
            for (int64_t k = 0; k < kc; k++)
                for (int j = cols; j < nr; j++)
                    dst[k * nr + j] = 0.0f;
    }
}

/* ---- the blocked driver -------------------------------------------------------------------- */

size_t bd_gemm_scratch_floats(const bd_gemm_kernel *kd, int64_t M, int64_t N, int64_t K,
                              int a_packed) {
    if (M < 0) M = 0;
    if (N < 0) N = 0;
    if (K < 0) K = 0;
    int64_t kc = imin(K, kd->kc);
    int64_t nc = round_up(imin(N, a_packed ? kd->nc_packed_a : kd->nc), kd->nr);
    int64_t mc = round_up(imin(M, kd->mc), kd->mr);
    /* B block, NR floats of slack for packers that write whole windows, A block, edge tile,
     * 64-byte alignment */
    return (size_t)(kc * nc + kd->nr + mc * kc + (int64_t)kd->mr * kd->nr + 16);
}

size_t bd_gemm_scratch_bytes_all(int64_t M, int64_t N, int64_t K, int a_packed) {
    size_t best = bd_gemm_scratch_floats(&bd_f32_gemm_kernel_portable, M, N, K, a_packed);
#if BD_KERNELS_X86
    size_t s = bd_gemm_scratch_floats(&bd_f32_gemm_kernel_avx2, M, N, K, a_packed);
    if (s > best) best = s;
    s = bd_gemm_scratch_floats(&bd_f32_gemm_kernel_avx512, M, N, K, a_packed);
    if (s > best) best = s;
#endif
    return best * sizeof(float);
}

/* Rows/columns of an edge tile: tmp holds the whole register tile (ldt apart). */
static void edge_epilogue(const float *tmp, int64_t ldt, float *c, int64_t ldc, int rows, int cols,
                          const float *bias_n, const float *bias_m, int load_c, int act, float lo,
                          float hi) {
    for (int i = 0; i < rows; i++) {
        float bm = bias_m ? bias_m[i] : 0.0f;
        for (int j = 0; j < cols; j++) {
            float v = tmp[i * ldt + j];
            if (load_c) v += c[i * ldc + j];
            if (bias_n) v += bias_n[j];
            c[i * ldc + j] = bd_act_apply(v + bm, act, lo, hi);
        }
    }
}

/* One (row block, column block, depth block): ap/bp point at the first panel of each block
 * (roff/coff: where the block starts inside that first panel), C at the block's first element. */
typedef struct macro_args {
    const bd_gemm_kernel *kd;
    int64_t kc;
    const float *ap, *bp;
    int64_t astride, bstride;
    int roff, coff;
    int64_t mrows, ncols;
    float *C;
    int64_t ldc;
    const float *bias_n, *bias_m;
    int load_c, act;
    float lo, hi;
    int stream_a; /* ap is a pre-packed operand */
    int stream_b; /* bp is a pre-packed operand */
    int64_t lda;  /* ap is A read in place (astride = MR rows of it), or 0 */
    float *tmp;
} macro_args;

static void macro_kernel(const macro_args *g) {
    const int mr = g->kd->mr, nr = g->kd->nr;
    bd_ukr_epi e = {NULL, NULL, g->load_c, g->act, g->lo, g->hi, nr, g->stream_a, g->lda, 0};
    bd_ukr_epi plain = {NULL, NULL, 0, BD_ACT_NONE, 0.0f, 0.0f, nr, g->stream_a, g->lda, 0};
    for (int64_t jp = 0; jp * nr < g->coff + g->ncols; jp++) {
        int j_lo = jp == 0 ? g->coff : 0;
        int j_hi = (int)imin(nr, g->coff + g->ncols - jp * nr);
        int64_t cj = jp * nr + j_lo - g->coff;
        const float *b = g->bp + jp * g->bstride;
        /* a column edge that fits in half a tile computes only that half */
        bd_ukr_fn ukr = j_hi <= nr / 2 && g->kd->ukr_half ? g->kd->ukr_half : g->kd->ukr;
        for (int64_t ip = 0; ip * mr < g->roff + g->mrows; ip++) {
            e.stream_b = plain.stream_b = g->stream_b && ip == 0;
            int i_lo = ip == 0 ? g->roff : 0;
            int i_hi = (int)imin(mr, g->roff + g->mrows - ip * mr);
            int64_t ci = ip * mr + i_lo - g->roff;
            const float *a = g->ap + ip * g->astride;
            float *c = g->C + ci * g->ldc + cj;
            const float *bn = g->bias_n ? g->bias_n + cj : NULL;
            const float *bm = g->bias_m ? g->bias_m + ci : NULL;
            if (i_lo == 0 && j_lo == 0 && (j_hi == nr || g->kd->partial_cols)) {
                e.bias_n = bn;
                e.bias_m = bm;
                e.cols = j_hi;
                ukr(g->kc, a, b, c, g->ldc, i_hi, &e);
            } else {
                /* the tile starts inside a pre-packed panel, or the kernel cannot cut columns */
                ukr(g->kc, a, b, g->tmp, nr, i_hi, &plain);
                edge_epilogue(g->tmp + i_lo * nr + j_lo, nr, c, g->ldc, i_hi - i_lo, j_hi - j_lo,
                              bn, bm, g->load_c, g->act, g->lo, g->hi);
            }
        }
    }
}

/* A row-major (not transposed) raw A that a kernel with a_in_place reads without packing. */
static const bd_raw_matrix *a_read_in_place(const bd_gemm_kernel *kd, const bd_gemm_operand *a) {
    if (!kd->a_in_place || a->packed || a->pack_a != bd_pack_a_raw) return NULL;
    const bd_raw_matrix *m = a->ctx;
    return m->trans ? NULL : m;
}

void bd_gemm_run(const bd_gemm_kernel *kd, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                 int64_t K, const bd_gemm_operand *a, const bd_gemm_operand *b, float *C, int64_t ldc,
                 const bd_gemm_epilogue *ep, void *scratch) {
    if (m1 <= m0 || n1 <= n0) return;
    BD_KCHECK(K >= 0 && m0 >= 0 && n0 >= 0);
    const int mr = kd->mr, nr = kd->nr;
    const int64_t MC = kd->mc, NC = a->packed ? kd->nc_packed_a : kd->nc;
    BD_KCHECK(scratch != NULL);
    const bd_raw_matrix *a_raw = a_read_in_place(kd, a);
    /* the layout bd_gemm_scratch_floats sized: B block, A block, edge tile (a pre-packed
     * operand needs no block, so a call with both pre-packed needs only the edge tile) */
    float *bbuf = bd_align64(scratch);
    int64_t kcmax = imin(K, kd->kc);
    float *abuf = bbuf + (b->packed ? 0 : kcmax * round_up(imin(NC, n1 - n0), nr) + nr);
    float *tmp = abuf + (a->packed ? 0 : kcmax * round_up(imin(MC, m1 - m0), mr));
    /* One row tile and nothing packed per call: B's blocks are read once whatever the depth
     * blocking, and the whole depth at once reads a pre-packed B's panels as one stream. */
    const int64_t KC = b->packed && (a->packed || a_raw) && m1 - m0 <= mr && K > 0 ? K : kd->kc;

    macro_args g;
    g.kd = kd;
    g.ldc = ldc;
    g.tmp = tmp;
    g.stream_a = a->packed != NULL;
    g.stream_b = b->packed != NULL;
    g.lda = a_raw ? a_raw->ld : 0;
    for (int64_t jc = n0; jc < n1;) {
        /* a pre-packed B is blocked on its own panel grid */
        int64_t jend = b->packed ? imin(n1, (jc / NC + 1) * NC) : imin(n1, jc + NC);
        int64_t pc = 0;
        do {
            int64_t kc = imin(KC, K - pc);
            if (b->packed) {
                g.bp = b->packed + (jc / nr) * K * nr + pc * nr;
                g.bstride = K * nr;
                g.coff = (int)(jc % nr);
            } else {
                b->pack_b(b->ctx, pc, kc, jc, jend - jc, nr, bbuf);
                g.bp = bbuf;
                g.bstride = kc * nr;
                g.coff = 0;
            }
            int first = pc == 0, last = pc + kc >= K;
            for (int64_t ic = m0; ic < m1;) {
                int64_t iend = a->packed ? imin(m1, (ic / MC + 1) * MC) : imin(m1, ic + MC);
                if (a->packed) {
                    g.ap = a->packed + (ic / mr) * K * mr + pc * mr;
                    g.astride = K * mr;
                    g.roff = (int)(ic % mr);
                } else if (a_raw) {
                    g.ap = a_raw->p + ic * a_raw->ld + pc;
                    g.astride = mr * a_raw->ld;
                    g.roff = 0;
                } else {
                    a->pack_a(a->ctx, ic, iend - ic, pc, kc, mr, abuf);
                    g.ap = abuf;
                    g.astride = kc * mr;
                    g.roff = 0;
                }
                g.kc = kc;
                g.mrows = iend - ic;
                g.ncols = jend - jc;
                g.C = C + (ic - m0) * ldc + (jc - n0);
                g.bias_n = first && ep->bias_n ? ep->bias_n + (jc - n0) : NULL;
                g.bias_m = first && ep->bias_m ? ep->bias_m + (ic - m0) : NULL;
                g.load_c = !first || ep->accumulate;
                g.act = last ? ep->act : BD_ACT_NONE;
                g.lo = ep->act_min;
                g.hi = ep->act_max;
                macro_kernel(&g);
                ic = iend;
            }
            pc += kc;
        } while (pc < K);
        jc = jend;
    }
}

/* ---- public GEMM entry points -------------------------------------------------------------- */

size_t bd_f32_gemm_scratch_bytes(int64_t M, int64_t N, int64_t K) {
    return bd_gemm_scratch_bytes_all(M, N, K, 0);
}

void bd_f32_gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int transA,
                 const float *B, int64_t ldb, int transB, float *C, int64_t ldc,
                 const float *bias_n, const float *bias_m, int accumulate, int act, float act_min,
                 float act_max, void *scratch) {
    if (M <= 0 || N <= 0) return;
    bd_raw_matrix am = {A, lda, transA}, bm = {B, ldb, transB};
    bd_gemm_operand a = {NULL, bd_pack_a_raw, NULL, &am};
    bd_gemm_operand b = {NULL, NULL, bd_pack_b_raw, &bm};
    bd_gemm_epilogue ep = {bias_n, bias_m, accumulate, act, act_min, act_max};
    bd_gemm_run(bd_gemm_kernel_current(), 0, M, 0, N, K, &a, &b, C, ldc, &ep, scratch);
}

size_t bd_f32_gemm_packed_b_bytes(int64_t K, int64_t N) {
    int64_t nr = bd_gemm_kernel_current()->nr;
    if (K < 0) K = 0;
    if (N < 0) N = 0;
    return (size_t)(BD_PACK_HDR_FLOATS + round_up(N, nr) * K) * sizeof(float);
}

void bd_f32_gemm_pack_b(int64_t K, int64_t N, const float *B, int64_t ldb, int transB,
                        float *packed) {
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    bd_pack_hdr h = {0, BD_PACK_B, (int32_t)kd->isa, kd->nr, N < 0 ? 0 : N, K < 0 ? 0 : K, 0};
    bd_pack_hdr_write(packed, &h);
    if (N <= 0 || K <= 0) return;
    bd_raw_matrix bm = {B, ldb, transB};
    bd_pack_b_raw(&bm, 0, K, 0, N, kd->nr, packed + BD_PACK_HDR_FLOATS);
}

void bd_f32_gemm_packed_b(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, int64_t lda,
                          int transA, const float *Bpacked, float *C, int64_t ldc,
                          const float *bias_n, const float *bias_m, int accumulate, int act,
                          float act_min, float act_max, void *scratch) {
    bd_pack_hdr h;
    const bd_gemm_kernel *kd = bd_pack_hdr_read(Bpacked, BD_PACK_B, &h);
    BD_KCHECK(h.K == K && 0 <= n0 && n0 <= n1 && n1 <= h.rows);
    if (M <= 0 || n1 <= n0) return;
    bd_raw_matrix am = {A, lda, transA};
    bd_gemm_operand a = {NULL, bd_pack_a_raw, NULL, &am};
    bd_gemm_operand b = {Bpacked + BD_PACK_HDR_FLOATS, NULL, NULL, NULL};
    bd_gemm_epilogue ep = {bias_n ? bias_n + n0 : NULL, bias_m, accumulate, act, act_min, act_max};
    bd_gemm_run(kd, 0, M, n0, n1, K, &a, &b, C + n0, ldc, &ep, scratch);
}

size_t bd_f32_gemm_packed_a_bytes(int64_t M, int64_t K) {
    int64_t mr = bd_gemm_kernel_current()->mr;
    if (K < 0) K = 0;
    if (M < 0) M = 0;
    return (size_t)(BD_PACK_HDR_FLOATS + round_up(M, mr) * K) * sizeof(float);
}

void bd_f32_gemm_pack_a(int64_t M, int64_t K, const float *A, int64_t lda, int transA,
                        float *packed) {
    const bd_gemm_kernel *kd = bd_gemm_kernel_current();
    bd_pack_hdr h = {0, BD_PACK_A, (int32_t)kd->isa, kd->mr, M < 0 ? 0 : M, K < 0 ? 0 : K, 0};
    bd_pack_hdr_write(packed, &h);
    if (M <= 0 || K <= 0) return;
    bd_raw_matrix am = {A, lda, transA};
    bd_pack_a_raw(&am, 0, M, 0, K, kd->mr, packed + BD_PACK_HDR_FLOATS);
}

void bd_f32_gemm_packed_a(int64_t m0, int64_t m1, int64_t N, int64_t K, const float *Apacked,
                          const float *B, int64_t ldb, int transB, float *C, int64_t ldc,
                          const float *bias_n, const float *bias_m, int accumulate, int act,
                          float act_min, float act_max, void *scratch) {
    bd_pack_hdr h;
    const bd_gemm_kernel *kd = bd_pack_hdr_read(Apacked, BD_PACK_A, &h);
    BD_KCHECK(h.K == K && 0 <= m0 && m0 <= m1 && m1 <= h.rows);
    if (N <= 0 || m1 <= m0) return;
    bd_raw_matrix bm = {B, ldb, transB};
    bd_gemm_operand a = {Apacked + BD_PACK_HDR_FLOATS, NULL, NULL, NULL};
    bd_gemm_operand b = {NULL, NULL, bd_pack_b_raw, &bm};
    bd_gemm_epilogue ep = {bias_n, bias_m ? bias_m + m0 : NULL, accumulate, act, act_min, act_max};
    bd_gemm_run(kd, m0, m1, 0, N, K, &a, &b, C + m0 * ldc, ldc, &ep, scratch);
}
