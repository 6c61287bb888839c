/*
 * aclnnGroupNorm for the CPU emulator: phase one (checks, executor), the launch and the kernel,
 * which aclnnGroupNormSilu and aclnnGroupNormSiluV2 (their phase one at the end of this file)
 * share: the same vendor kernels, with the activation on.
 *
 * Facts, hicann/ops-nn norm/group_norm and norm/group_norm_silu:
 * - group_norm/op_host/op_api/aclnn_group_norm.cpp (the hand-written phase one, followed here
 *   in its order and codes): the out-pointers (L2_DFX_PHASE_1, 161001); self, out, meanOut,
 *   rstdOut NULL (CheckNotNull4Tensor, 161001); dtypes (161002: self in the part's list, FLOAT
 *   and FLOAT16 plus BF16 on DAV_2201 and the regbase parts; gamma, beta, out, meanOut, rstdOut
 *   self's); the attributes (161002: group > 0, C % group == 0, eps > 0); shapes (161002:
 *   self rank 2..8, out self's shape, meanOut and rstdOut [N, group], self's dim 0 N and dim 1
 *   C, the product of its other dims HxW, its element count N * C * HxW, gamma and beta rank 1
 *   of C elements); formats (161002: out's format self's, self's neither private nor NHWC,
 *   HWCN, NDHWC); an empty self: meanOut filled with 0 and rstdOut with NaN, nothing else;
 *   then the kernel by part: GroupNormSilu without the activation on Atlas A2/A3 (DAV_2201),
 *   Atlas inference (DAV_2002) and Ascend 950 (regbase), the L0 GroupNorm elsewhere (the Atlas
 *   training series, DAV_1001) with FLOAT16 cast to FLOAT around it and rstd computed by the
 *   op_api from the kernel's variance: Rsqrt(Add(variance, eps)) in the variance's dtype;
 *   an absent gamma/beta: ones/zeros;
 * - group_norm_silu/op_host/group_norm_silu_tiling.cpp (Atlas A2/A3, inference): the tiling
 *   key (which kernel runs) from HxW, the channel count and the per-core group count
 *   (totalCoreNum: the vector cores; on DAV_2002 AIV plus vector cores); its own checks repeat
 *   the op_api's;
 * - group_norm_silu/op_kernel/group_norm_silu_*.h (Atlas A2/A3, inference): per group of E =
 *   C / group * HxW elements, x cast to float; s1 = sum(x), s2 = sum(x * x);
 *   mean = s1 * numRec, rstd = 1 / sqrt(s2 * numRec - mean * mean + eps) (numRec = 1.0f / E);
 *   per channel scale = rstd * gamma, bias = -scale * mean + beta; y = x * scale + bias (Muls,
 *   Adds); the hw1 kernels (HxW 1) instead y = ((x - mean) * rstd) * gamma + beta, and with one
 *   channel per group (group == C) y = beta, mean = x, rstd = 1 / sqrt(eps) without reading x
 *   into any arithmetic; y, mean and rstd written in x's dtype, rounded by GetRoundMode: CAST_ROUND (ties
 *   away from zero, FLOAT16 and BF16) where __CCE_AICORE__ is 220, CAST_NONE (to even)
 *   elsewhere. On DAV_2002 only the kernels that copy out without DataCopyPad write mean and
 *   rstd (g16/g32 and hw1: CopyOutMeanAndRstd's #else); the small, b16, b32 and SD kernels
 *   write them only under __CCE_AICORE__ 220;
 * - group_norm_silu/op_kernel/arch35/group_norm_silu_regbase_base.h (Ascend 950, the R axis
 *   full-load two-pass kernels): with p = the power of two above E, n = 1.0f / p and
 *   corr = (float)p / E: mean = sum(x * n) * corr; var = sum((x - mean)^2 * n) * corr;
 *   rstd = 1 / sqrt(var + eps) refined to about a correctly rounded float
 *   (CalRstdByHighPrecision); y = ((x - mean) * rstd) * gamma + beta; y, mean, rstd rounded
 *   to x's dtype with CAST_RINT.
 *
 * Kernel: rows are the (n, group) pairs; each row's sums have a fixed order (norm_rows.h's
 * lanes and fold), so the split of rows over threads never changes a bit.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "convert.h"
#include "exec_workspace.h"
#include "half.h"
#include "norm_rows.h"
#include "round_away.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_group_norm.h"
#include "aclnnop/aclnn_group_norm_silu.h"

#define P1 "aclnnGroupNormGetWorkspaceSize"
#define P2 "aclnnGroupNorm"

enum { T_SELF, T_GAMMA, T_BETA, T_OUT, T_MEAN, T_RSTD, T_COUNT };
static const char *const TNAME[T_COUNT] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};

/* The arithmetic each kind of part runs (the module doc). */
typedef enum {
    CHAIN_ONE_PASS, /* GroupNormSilu on Atlas A2/A3 and inference parts: E[x^2] - mean^2 */
    CHAIN_TWO_PASS, /* GroupNormSilu's regbase kernel on Ascend 950 */
    CHAIN_TRAINING, /* the L0 GroupNorm, then the op_api's Rsqrt(Add(variance, eps)) */
} gn_chain;

typedef struct {
    nr_head h; /* gamma and beta as float (C values each); per chunk E floats: the row, then y */
    tdesc t[T_COUNT];
    int64_t N, C, HW, G, D, E; /* E = D * HW elements per (n, group) row */
    float eps;                 /* as the kernel receives it */
    aclDataType dtype;         /* self's and out's */
    aclDataType stats_dtype;   /* meanOut's, rstdOut's: self's; Ascend 950 gamma's/beta's */
    gn_chain chain;
    aclemu_ties ties;          /* the kernel's rounding to a 16-bit dtype */
    bool silu;                 /* GroupNormSilu's activation on y, in float, before rounding */
    bool add_beta;             /* false: Ascend 950 without beta, whose kernel adds nothing */
    bool affine_as_x_dtype;    /* the SD kernel's reading of FLOAT gamma/beta as FLOAT16 */
    bool write_stats;          /* whether the kernel writes mean and rstd */
    bool empty;                /* self empty: meanOut empty_mean, rstdOut NaN, nothing else */
    float empty_mean;          /* 0 (the op_api's FillScalar) or NaN (Ascend 950's kernel) */
} gn_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* Rounds buf to dt as the payload's kernel does, in place (FLOAT: nothing). */
static void round_to_dtype(const gn_payload *P, aclDataType dt, float *buf, int64_t n)
{
    if (dt == ACL_FLOAT16 && P->ties == ACLEMU_TIES_AWAY)
        round_half_ties_away(buf, n);
    else
        aclemu_round_floats(dt, P->ties, buf, n);
}

/* Silu as every GroupNormSilu kernel applies it to y, in float: y / (1 + exp(-y)) (Muls by
 * -1, Exp, Adds 1, Div). The device's Exp is taken as the correctly rounded float (its error
 * is not in the sources; docs/emulator.md). */
static void silu_row(float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float t = (float)exp(-(double)y[i]);
        t = t + 1.0f;
        y[i] = y[i] / t;
    }
}

/* sum(x[i] * scale) (scale 1: the plain sum) in norm_rows' fixed lane order. */
static float lane_sum(const float *x, int64_t n, float scale)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++)
            acc[l] += x[i + l] * scale;
    for (int l = 0; i + l < n; l++)
        acc[l] += x[i + l] * scale;
    return nr_fold(acc);
}

/* sum((x[i] - c)^2 * scale) (c 0: the sum of squares) in the same order. */
static float lane_sum_squares(const float *x, int64_t n, float c, float scale)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++) {
            float d = x[i + l] - c;
            float q = d * d;
            acc[l] += q * scale;
        }
    for (int l = 0; i + l < n; l++) {
        float d = x[i + l] - c;
        float q = d * d;
        acc[l] += q * scale;
    }
    return nr_fold(acc);
}

/* The group's statistics and y (in place over x), as the part's kernel makes them; mean and
 * rstd are the values written (before their rounding to the dtype). */
static void normalize_row(const gn_payload *P, const norm_rows *R, float *x, int64_t g,
                          float *mean_out, float *rstd_out)
{
    const int64_t E = P->E, HW = P->HW, c0 = g * P->D;
    const float *gamma = R->gamma, *beta = R->beta;
    if (P->chain == CHAIN_ONE_PASS && HW == 1 && P->D == 1) {
        /* the hw1 kernels with one channel per group (ProcessYWithEqualC and friends): y is
         * beta, mean is x, rstd is 1 / sqrt(eps), nothing computed from x */
        *mean_out = x[0];
        *rstd_out = 1.0f / sqrtf(P->eps);
        x[0] = beta[c0];
        return;
    }
    if (P->chain == CHAIN_ONE_PASS) {
        const float num_rec = 1.0f / (float)E;
        const float mean = lane_sum(x, E, 1.0f) * num_rec;
        const float sq = lane_sum_squares(x, E, 0.0f, 1.0f);
        const float rstd = 1.0f / sqrtf(sq * num_rec - mean * mean + P->eps);
        if (HW == 1) { /* the hw1 kernels: y = ((x - mean) * rstd) * gamma + beta */
            for (int64_t d = 0; d < P->D; d++) {
                float t = (x[d] - mean) * rstd;
                t = t * gamma[c0 + d];
                x[d] = t + beta[c0 + d];
            }
            *mean_out = mean;
            *rstd_out = rstd;
            return;
        }
        for (int64_t d = 0; d < P->D; d++) {
            const float scale = rstd * gamma[c0 + d];
            const float bias = -scale * mean + beta[c0 + d];
            float *xs = x + d * HW;
            for (int64_t i = 0; i < HW; i++) {
                float t = xs[i] * scale; /* Muls, then Adds: two roundings */
                xs[i] = t + bias;
            }
        }
        *mean_out = mean;
        *rstd_out = rstd;
        return;
    }
    float mean, var;
    if (P->chain == CHAIN_TWO_PASS) {
        const int64_t p = (int64_t)1 << (64 - __builtin_clzll((unsigned long long)E));
        const float n = 1.0f / (float)p, corr = (float)p / (float)E;
        mean = lane_sum(x, E, n) * corr;
        var = lane_sum_squares(x, E, mean, n) * corr;
    } else {
        const float inv = 1.0f / (float)E;
        mean = lane_sum(x, E, inv);
        var = lane_sum_squares(x, E, mean, inv);
    }
    const float var_eps = var + P->eps;
    /* Ascend 950 refines its reciprocal square root to about the correctly rounded float */
    const float rstd = P->chain == CHAIN_TWO_PASS ? (float)(1.0 / sqrt((double)var_eps))
                                                  : 1.0f / sqrtf(var_eps);
    for (int64_t d = 0; d < P->D; d++) {
        const float gm = gamma[c0 + d], bt = beta[c0 + d];
        float *xs = x + d * HW;
        for (int64_t i = 0; i < HW; i++) {
            float t = (xs[i] - mean) * rstd;
            t = t * gm;
            xs[i] = P->add_beta ? t + bt : t;
        }
    }
    *mean_out = mean;
    if (P->chain == CHAIN_TWO_PASS) {
        *rstd_out = rstd;
        return;
    }
    /* The Atlas training parts: the kernel writes the variance (FLOAT16 input: cast back to
     * FLOAT16 by the op_api), which the op_api turns into rstd with Add and Rsqrt in that
     * dtype, eps converted to it. */
    float v = var, e = P->eps;
    aclemu_round_floats(P->dtype, ACLEMU_TIES_EVEN, &v, 1);
    aclemu_round_floats(P->dtype, ACLEMU_TIES_EVEN, &e, 1);
    float sum = v + e;
    aclemu_round_floats(P->dtype, ACLEMU_TIES_EVEN, &sum, 1);
    *rstd_out = 1.0f / sqrtf(sum);
}

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const gn_payload *P = payload;
    const tdesc *x = &P->t[T_SELF], *y = &P->t[T_OUT];
    const tdesc *mo = &P->t[T_MEAN], *ro = &P->t[T_RSTD];
    float *buf = nr_chunk_buf(R, chunk);
    for (int64_t m = begin; m < end; m++) {
        const int64_t n = m / P->G, g = m % P->G;
        const float *src = get_tile(row_base(x, n), P->dtype, &x->inner, g * P->E, P->E, buf);
        if (src != buf)
            memcpy(buf, src, (size_t)P->E * sizeof(float));
        float mean, rstd;
        normalize_row(P, R, buf, g, &mean, &rstd);
        if (P->silu)
            silu_row(buf, P->E);
        round_to_dtype(P, P->dtype, buf, P->E);
        put_tile(row_base(y, n), P->dtype, ACLEMU_TIES_EVEN, &y->inner, g * P->E, P->E, buf);
        if (P->write_stats) {
            round_to_dtype(P, P->stats_dtype, &mean, 1);
            round_to_dtype(P, P->stats_dtype, &rstd, 1);
            put_tile(view_base(mo), P->stats_dtype, ACLEMU_TIES_EVEN, &mo->inner, m, 1, &mean);
            put_tile(view_base(ro), P->stats_dtype, ACLEMU_TIES_EVEN, &ro->inner, m, 1, &rstd);
        }
    }
}

/* An empty self: meanOut empty_mean and rstdOut NaN (the op_api's FillScalar: 0 and NaN;
 * Ascend 950's empty-tensor kernel for GroupNormSilu: NaN for both), in their dtype. */
static void fill_stats(const gn_payload *P)
{
    const tdesc *mo = &P->t[T_MEAN], *ro = &P->t[T_RSTD];
    const float nan = NAN;
    for (int64_t i = 0; i < P->N * P->G; i++) {
        put_tile(view_base(mo), P->stats_dtype, ACLEMU_TIES_EVEN, &mo->inner, i, 1,
                 &P->empty_mean);
        put_tile(view_base(ro), P->stats_dtype, ACLEMU_TIES_EVEN, &ro->inner, i, 1, &nan);
    }
}

/* The Atlas inference parts' SD kernel instantiated for FLOAT16 gamma and beta
 * (group_norm_silu.cpp: GroupNormSiluSD<DTYPE_X, DTYPE_X> under tiling key 109, which
 * SetTilingSD picks whatever gamma's dtype): given FLOAT gamma/beta it reads their first C
 * FLOAT16 values out of the float bytes. v holds the C floats; replaced in place by those
 * values. Float c is written after FLOAT16 values c..2c+1, the ones its bytes hold, were
 * read (c from the last down). */
static void reread_as_half(float *v, int64_t C)
{
    unsigned char *bytes = (unsigned char *)v;
    for (int64_t c = C - 1; c >= 0; c--) {
        uint16_t h;
        memcpy(&h, bytes + 2 * c, sizeof h);
        v[c] = aclemu_f16_to_f32(h);
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const gn_payload *P = payload;
    if (P->empty) {
        fill_stats(P);
        return false;
    }
    if (P->t[T_GAMMA].present) {
        nr_load_gamma(R, &P->t[T_GAMMA], P->C);
    } else {
        for (int64_t c = 0; c < P->C; c++)
            R->gamma_buf[c] = 1.0f;
        R->gamma = R->gamma_buf;
    }
    /* beta into the buffer's second half (written: the SD kernel's reading rewrites it) */
    float *beta = R->gamma_buf + P->C;
    const tdesc *b = &P->t[T_BETA];
    if (b->present) {
        const float *src = get_tile(view_base(b), b->dtype, &b->inner, 0, P->C, beta);
        if (src != beta)
            memcpy(beta, src, (size_t)P->C * sizeof(float));
    } else {
        memset(beta, 0, (size_t)P->C * sizeof(float));
    }
    R->beta = beta;
    if (P->affine_as_x_dtype) { /* gamma and beta both given, FLOAT */
        if (R->gamma != R->gamma_buf)
            memcpy(R->gamma_buf, R->gamma, (size_t)P->C * sizeof(float));
        R->gamma = R->gamma_buf;
        reread_as_half(R->gamma_buf, P->C);
        reread_as_half(beta, P->C);
    }
    return true;
}

static const nr_kernel GN_KERNEL = NR_KERNEL(gn_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops GN_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

static aclnnStatus check_dtype_match(const aclTensor *t, const char *name, const aclTensor *self)
{
    if (t->dtype != self->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be self's dtype %s", P1, name,
             dname(t->dtype), dname(self->dtype));
    return ACLNN_SUCCESS;
}

/* Step 2 of the vendor's CheckParams (CheckDtypeValid). */
static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const aclTensor *self = ts[T_SELF];
    const bool bf16 = soc->npu_arch == 2201 || soc->npu_arch == 3510;
    if (!(self->dtype == ACL_FLOAT || self->dtype == ACL_FLOAT16 ||
          (bf16 && self->dtype == ACL_BF16)))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self dtype %s is not supported on %s (%s): %s", P1,
             dname(self->dtype), soc->name, soc->series,
             bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    aclnnStatus st;
    for (int i = T_GAMMA; i < T_COUNT; i++)
        if (ts[i] && (st = check_dtype_match(ts[i], TNAME[i], self)))
            return st;
    return ACLNN_SUCCESS;
}

/* Step 3 (CheckAttr). */
static aclnnStatus check_attrs(const aclTensor *self, int64_t C, int64_t group, double eps)
{
    char s[256];
    if (group <= 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: group %lld must be greater than 0", P1,
             (long long)group);
    if (C % group != 0) {
        fmt_dims(s, sizeof s, self->dims, self->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: C %lld must be divisible by group %lld (self %s)",
             P1, (long long)C, (long long)group, s);
    }
    if (!(eps > 0.0)) /* NaN too: the vendor's eps > 0 is false for it */
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: eps %g must be greater than 0", P1, eps);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_channel_vector(const char *fn, const aclTensor *t, const char *name,
                                        int64_t C, const aclTensor *self)
{
    if (t && (t->ndim != 1 || t->dims[0] != C)) {
        char s1[256], s2[256];
        fmt_dims(s1, sizeof s1, t->dims, t->ndim);
        fmt_dims(s2, sizeof s2, self->dims, self->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s must be a vector of C = %lld elements "
             "(self %s)", fn, name, s1, (long long)C, s2);
    }
    return ACLNN_SUCCESS;
}

/* Step 4 (CheckShape). */
static aclnnStatus check_shapes(const aclTensor *const *ts, int64_t N, int64_t C, int64_t HxW,
                                int64_t group)
{
    const aclTensor *self = ts[T_SELF];
    if (self->ndim < 2 || self->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self rank %llu is not in [2, 8]", P1,
             (unsigned long long)self->ndim);
    if (!same_dims(ts[T_OUT]->dims, ts[T_OUT]->ndim, self->dims, self->ndim))
        return shape_error(P1, "out", ts[T_OUT]->dims, ts[T_OUT]->ndim, "must equal self's shape",
                           self->dims, self->ndim);
    const int64_t stats[2] = {N, group};
    for (int i = T_MEAN; i <= T_RSTD; i++)
        if (!same_dims(ts[i]->dims, ts[i]->ndim, stats, 2))
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim, "must be [N, group] =",
                               stats, 2);
    if (self->dims[0] != N)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self's dim 0 (%lld) must equal N (%lld)", P1,
             (long long)self->dims[0], (long long)N);
    if (self->dims[1] != C)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self's dim 1 (%lld) must equal C (%lld)", P1,
             (long long)self->dims[1], (long long)C);
    int64_t hw = 0, total = 0, want = 0;
    if (!numel(self->dims + 2, self->ndim - 2, &hw) || hw != HxW)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the product of self's dims after N and C (%lld) must "
             "equal HxW (%lld)", P1, (long long)hw, (long long)HxW);
    if (!numel(self->dims, self->ndim, &total) || __builtin_mul_overflow(N, C, &want) ||
        __builtin_mul_overflow(want, HxW, &want) || total != want)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self's element count must equal N * C * HxW", P1);
    aclnnStatus st;
    if ((st = check_channel_vector(P1, ts[T_GAMMA], "gamma", C, self)) ||
        (st = check_channel_vector(P1, ts[T_BETA], "beta", C, self)))
        return st;
    return ACLNN_SUCCESS;
}

/* Step 5 (CheckFormat). */
static aclnnStatus check_formats(const aclTensor *self, const aclTensor *out)
{
    if (self->format != out->format)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out's format (aclFormat %d) must be self's format "
             "(aclFormat %d)", P1, (int)out->format, (int)self->format);
    const aclFormat f = self->format;
    if (p1_private_format(f) || f == ACL_FORMAT_NHWC || f == ACL_FORMAT_HWCN ||
        f == ACL_FORMAT_NDHWC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self's format (aclFormat %d) is not supported: "
             "private formats, NHWC, HWCN and NDHWC are refused (ND, NCL, NCHW, NCDHW are "
             "taken)", P1, (int)f);
    return ACLNN_SUCCESS;
}

/* Whether the Atlas inference parts' kernel for this shape writes mean and rstd: the tiling key
 * of group_norm_silu_tiling.cpp (SetTiling, then SetTilingSD), and whether that kernel's
 * CopyOutMeanAndRstd has a path without DataCopyPad (the g16/g32 and hw1 kernels do; small,
 * b16, b32 and SD do not). */
static bool inference_sd_kernel(int64_t N, int64_t HW, int64_t G, aclDataType dt)
{
    return dt != ACL_FLOAT && N == 1 && G == 32 && HW > 1;
}

static bool inference_writes_stats(int64_t N, int64_t C, int64_t HW, int64_t G, aclDataType dt)
{
    const int64_t size = dt == ACL_FLOAT ? 4 : 2, per_block = 32 / size;
    if (inference_sd_kernel(N, HW, G, dt))
        return false; /* SetTilingSD's special kernel, whatever SetTiling chose */
    const int64_t cores = aclemu_soc_ai_cores() + aclemu_soc_vector_cores();
    const int64_t groups = N * G, per_core = (groups + cores - 1) / cores;
    if (HW < per_block)
        return true; /* hw1 (HxW 1) or the basic template */
    const int64_t limit = size == 4 ? 4000 : 2700;
    if (C + per_core > limit)
        return true; /* the basic template (g16/g32) */
    /* the small or high-performance kernels: no mean/rstd */
    return false;
}

/* GroupNormSilu's system workspace, hard-coded by its tilings: 16 MiB on Atlas A2/A3
 * (group_norm_silu_tiling.cpp RESERVED_WORKSPACE_SIZE_910B) and Ascend 950
 * (group_norm_silu_tiling_arch35.cpp RESERVED_WORKSPACE_SIZE), 2 MiB on the Atlas inference
 * parts (RESERVED_WORKSPACE_SIZE_310P). */
static uint64_t silu_kernel_workspace(const aclemu_soc *soc)
{
    return soc->npu_arch == 2002 ? (uint64_t)2 * 1024 * 1024 : EW_SYS_WORKSPACE;
}

/* Phase one's workspace on a device: the executor's graph of aclnn_group_norm.cpp and
 * aclnn_group_norm_silu.cpp (exec_workspace.h; docs/emulator.md "Phase one's workspace
 * size"), for a call that reaches the L0 op. Contiguous copies of strided self, gamma, beta;
 * an absent gamma (beta) made by OnesLike (ZerosLike) of C values in self's dtype, except on
 * Ascend 950 for GroupNormSilu (`fill_absent` false: passed absent); then the GroupNormSilu
 * kernel (its tiling's one workspace, silu_kernel_workspace) with y, mean and rstd (N x group
 * values in stats_dt) copied out. The Atlas training parts (aclnnGroupNorm only) run the TBE
 * GroupNorm instead (its workspace from compile info, not public: none) between FLOAT16 ->
 * FLOAT casts of its inputs and FLOAT -> FLOAT16 casts of its results, then ViewCopy of y,
 * Add(variance, eps) and Rsqrt (their outputs allocated), ViewCopy of mean and of rstd. */
static uint64_t gn_device_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                                    int64_t N, int64_t C, int64_t HW, int64_t group,
                                    bool fill_absent, aclDataType stats_dt)
{
    ew_graph g = ew_graph_on(soc->npu_arch);
    const aclDataType dt = ts[T_SELF]->dtype;
    const uint64_t n = (uint64_t)(N * C * HW), c = (uint64_t)C, ng = (uint64_t)(N * group);
    int in[3] = {ew_contiguous_copy(&g, ts[T_SELF]), -1, -1};
    /* an absent gamma: OnesLike (ew_fill); an absent beta: ZerosLike, whose tiling asks none */
    for (int i = 1; i < 3; i++)
        in[i] = ts[T_SELF + i] ? ew_contiguous_copy(&g, ts[T_SELF + i])
                : !fill_absent          ? -1
                : T_SELF + i == T_GAMMA ? ew_fill(&g, c * aclemu_dtype_size(dt))
                                        : ew_zeros_like(&g, c * aclemu_dtype_size(dt));
    if (soc->npu_arch != 1001) {
        const int k = ew_kernel_reading(&g, in, 3);
        ew_kernel_workspace(&g, k, silu_kernel_workspace(soc));
        const int y = ew_output(&g, k, n * aclemu_dtype_size(dt));
        const int mean = ew_output(&g, k, ng * aclemu_dtype_size(stats_dt));
        const int rstd = ew_output(&g, k, ng * aclemu_dtype_size(stats_dt));
        ew_copy_out(&g, y, dt, ts[T_OUT], n);
        ew_copy_out(&g, mean, stats_dt, ts[T_MEAN], ng);
        ew_copy_out(&g, rstd, stats_dt, ts[T_RSTD], ng);
        return ew_size(&g);
    }
    const aclDataType kd = dt == ACL_FLOAT16 ? ACL_FLOAT : dt;
    const uint64_t count[3] = {n, c, c};
    for (int i = 0; i < 3; i++)
        in[i] = ew_cast(&g, in[i], dt, kd, count[i]);
    const int k = ew_kernel_reading(&g, in, 3);
    int res[3];
    for (int i = 0; i < 3; i++)
        res[i] = ew_output(&g, k, (i ? ng : n) * aclemu_dtype_size(kd));
    for (int i = 0; i < 3; i++)
        res[i] = ew_cast(&g, res[i], kd, dt, i ? ng : n);
    ew_copy_out(&g, res[0], dt, ts[T_OUT], n);
    const int add = ew_kernel(&g);
    ew_read(&g, res[2], add);
    const int sum = ew_output(&g, add, ng * aclemu_dtype_size(dt));
    const int rsqrt = ew_kernel(&g);
    ew_read(&g, sum, rsqrt);
    const int rstd = ew_output(&g, rsqrt, ng * aclemu_dtype_size(dt));
    ew_copy_out(&g, res[1], dt, ts[T_MEAN], ng);
    ew_copy_out(&g, rstd, dt, ts[T_RSTD], ng);
    return ew_size(&g);
}

/* GroupNorm's payload for self (ts[T_SELF]) of N x C x HW in `group` groups, run by the part's
 * kernel chain with its rounding, writing the statistics where that kernel does, the tensors
 * snapshotted; GroupNormSilu sets what its kernels do beyond that. NULL: out of host memory. */
static gn_payload *gn_payload_new(const char *p2, const aclemu_soc *soc,
                                  const aclTensor *const *ts, int64_t N, int64_t C, int64_t HW,
                                  int64_t group, double eps)
{
    gn_payload *P = calloc(1, sizeof *P);
    if (!P)
        return NULL;
    P->N = N;
    P->C = C;
    P->HW = HW;
    P->G = group;
    P->D = C / group;
    P->E = P->D * HW;
    P->eps = (float)eps;
    P->dtype = P->stats_dtype = ts[T_SELF]->dtype;
    P->add_beta = true;
    P->empty = N * C * HW == 0;
    /* rows: the (n, group) pairs, a row buffer holding one group (E floats); empty: none */
    /* N 0: meanOut and rstdOut [0, group] are empty too, so the op_api's FillScalar launches
     * nothing (l0op::Fill returns an empty output unlaunched, its ViewCopy copies no byte) and
     * GroupNormSilu's regbase return comes before its L0 op: no kernel (docs/emulator.md) */
    P->h = (nr_head){.kernel = &GN_KERNEL, .call = p2, .names = TNAME,
                     .rows = P->empty ? 0 : N * group, .width = P->empty ? 0 : C,
                     .row_floats = P->E, .no_kernel = N == 0};
    switch (soc->npu_arch) {
    case 3510:
        P->chain = CHAIN_TWO_PASS;
        P->ties = ACLEMU_TIES_EVEN;
        P->write_stats = true;
        break;
    case 1001: /* GroupNormSilu has no kernel here: only its empty self (no chain) comes */
        P->chain = CHAIN_TRAINING;
        P->ties = ACLEMU_TIES_EVEN;
        P->write_stats = true;
        break;
    case 2002:
        P->chain = CHAIN_ONE_PASS;
        P->ties = ACLEMU_TIES_EVEN; /* CAST_NONE */
        P->write_stats = !P->empty && inference_writes_stats(N, C, HW, group, P->dtype);
        break;
    default:
        P->chain = CHAIN_ONE_PASS;
        P->ties = ACLEMU_TIES_AWAY; /* CAST_ROUND */
        P->write_stats = true;
        break;
    }
    for (int k = 0; k < T_COUNT; k++)
        snapshot(&P->t[k], ts[k], k == T_SELF || k == T_OUT ? 1 : -1);
    return P;
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor *self,
                                                         const aclTensor *gamma,
                                                         const aclTensor *beta, int64_t N,
                                                         int64_t C, int64_t HxW, int64_t group,
                                                         double eps, aclTensor *out,
                                                         aclTensor *meanOut, aclTensor *rstdOut,
                                                         uint64_t *workspaceSize,
                                                         aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {self, gamma, beta, out, meanOut, rstdOut};

    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */

    /* 1. self, out, meanOut, rstdOut NULL (161001); then every handle live */
    if ((st = p1_required(P1, ts, TNAME, T_SELF, T_SELF + 1)) ||
        (st = p1_required(P1, ts, TNAME, T_OUT, T_COUNT)) ||
        (st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    /* 2. dtypes, 3. attributes, 4. shapes, 5. formats (161002), in the vendor's order */
    if ((st = check_dtypes(ts, soc)) || (st = check_attrs(self, C, group, eps)) ||
        (st = check_shapes(ts, N, C, HxW, group)) || (st = check_formats(self, out)))
        return st;

    gn_payload *P = gn_payload_new(P2, soc, ts, N, C, HxW, group, eps);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* an empty self fills meanOut and rstdOut and returns size 0 */
    const uint64_t ws_size = P->empty ? 0
        : gn_device_workspace(soc, ts, N, C, HxW, group, true, self->dtype);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &GN_OPS, P, ws_size, ts, TNAME, T_COUNT, T_OUT, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNorm(void *workspace, uint64_t workspaceSize,
                                         aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}

/* ---- aclnnGroupNormSilu and aclnnGroupNormSiluV2 ------------------------------------------- */

/*
 * Facts, hicann/ops-nn norm/group_norm_silu:
 * - op_host/op_api/aclnn_group_norm_silu.cpp (the hand-written phase one of both; V1 is V2
 *   with activateSilu true), followed here in its order and codes: the out-pointers
 *   (L2_DFX_PHASE_1, 161001); self, out, meanOut, rstdOut NULL (161001); CheckDtypeValid
 *   (161002): self, gamma, beta in the part's list (FLOAT16, FLOAT; BF16 too on DAV_2201 and the
 *   regbase parts), gamma and beta of one dtype when both are given, that dtype self's or
 *   FLOAT, out self's; then off regbase meanOut and rstdOut self's, gamma and beta FLOAT for a
 *   FLOAT self; on regbase a gamma (beta) not of self's dtype FLOAT with meanOut and rstdOut
 *   FLOAT, and nothing else; CheckShape (161002): self rank 2..8, out self's shape, meanOut
 *   and rstdOut [N, group], gamma and beta rank 1 of C elements; CheckAttr (161002): group > 0,
 *   N > 0 and C > 0 off regbase, eps > 0, C % group == 0; no format rule (FRACTAL_NZ only
 *   warned about); an empty self: off regbase meanOut 0 and rstdOut NaN (FillScalar), nothing
 *   else; on regbase N 0: nothing at all, else on to the kernel; absent gamma/beta: ones/zeros
 *   of self's dtype off regbase, passed absent on regbase; then the L0 op
 *   (op_api/group_norm_silu.cpp: mean and rstd of self's dtype, on regbase gamma's, else
 *   beta's) and the ViewCopy of each output (hicann/ops-math conversion/contiguous
 *   contiguous.cpp CheckViewCopyParams: equal dtypes; equal formats unless the L0 output's is
 *   ND), whose failures the op_api returns as ACLNN_ERR_INNER_NULLPTR (561103);
 * - op_host/group_norm_silu_def.cpp and config/<part>/group_norm_silu_binary.json: kernels
 *   for ascend310p, ascend910b, ascend910_93 and ascend950, none for the Atlas training
 *   series (ascend910); (x, gamma, beta) of one dtype or FLOAT16/BF16 x with FLOAT gamma and
 *   beta; the L0 op's kernel lookup fails in phase one for anything else (561103);
 * - op_host/group_norm_silu_tiling.cpp (Atlas A2/A3, inference): gamma and beta of one dtype
 *   size (an absent one is made of self's dtype), FLOAT for a FLOAT x; op_host/
 *   group_norm_silu_tiling_arch35.cpp (Ascend 950): an empty x takes the empty-tensor kernel;
 * - op_kernel: GroupNorm's arithmetic (above), then, with the activation, y / (1 + exp(-y))
 *   in float (Muls -1, Exp, Adds 1, Div) before the one rounding to x's dtype; a FLOAT gamma
 *   or beta is read as float (the MIXTYPE keys), a 16-bit one widened exactly; the hw1 kernel
 *   with one channel per group takes silu(beta); the SD kernel (Atlas inference parts,
 *   FLOAT16 x, N 1, group 32, HxW > 1) is instantiated for gamma of x's dtype only
 *   (group_norm_silu.cpp, key 109), so it reads FLOAT gamma/beta as FLOAT16 values;
 *   arch35/group_norm_silu_regbase_base.h (Ascend 950): no multiply without gamma, no add
 *   without beta, mean and rstd rounded to their dtype (FLOAT for FLOAT gamma/beta);
 *   arch35/group_norm_silu_regbase_empty_tensor.h: mean and rstd filled with NaN.
 */

#define SILU_P1 "aclnnGroupNormSiluGetWorkspaceSize"
#define SILU_P2 "aclnnGroupNormSilu"
#define SILU_V2_P1 "aclnnGroupNormSiluV2GetWorkspaceSize"
#define SILU_V2_P2 "aclnnGroupNormSiluV2"

static const aclemu_executor_ops GNS_OPS = NR_EXECUTOR_OPS(SILU_P2);
static const aclemu_executor_ops GNS_V2_OPS = NR_EXECUTOR_OPS(SILU_V2_P2);

static bool silu_dtype_listed(aclDataType d, bool bf16)
{
    return d == ACL_FLOAT || d == ACL_FLOAT16 || (bf16 && d == ACL_BF16);
}

static aclnnStatus silu_need_dtype(const char *fn, const aclTensor *t, const char *name,
                                   aclDataType want, const char *whose)
{
    if (t->dtype != want)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be %s (%s)", fn, name,
             dname(t->dtype), dname(want), whose);
    return ACLNN_SUCCESS;
}

/* Step 2 (CheckDtypeValid). */
static aclnnStatus silu_check_dtypes(const char *fn, const aclTensor *const *ts,
                                     const aclemu_soc *soc)
{
    const aclTensor *self = ts[T_SELF], *g = ts[T_GAMMA], *b = ts[T_BETA];
    const bool regbase = soc->npu_arch == 3510;
    const bool bf16 = soc->npu_arch == 2201 || regbase;
    for (int i = T_SELF; i <= T_BETA; i++)
        if (ts[i] && !silu_dtype_listed(ts[i]->dtype, bf16))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", fn,
                 TNAME[i], dname(ts[i]->dtype), soc->name, soc->series,
                 bf16 ? "FLOAT16, BF16, FLOAT" : "FLOAT16, FLOAT");
    aclnnStatus st;
    if (g && b) {
        if ((st = silu_need_dtype(fn, g, "gamma", b->dtype, "beta's dtype")))
            return st;
        if (g->dtype != self->dtype && g->dtype != ACL_FLOAT)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s must be self's dtype %s or FLOAT",
                 fn, dname(g->dtype), dname(self->dtype));
    }
    if ((st = silu_need_dtype(fn, ts[T_OUT], "out", self->dtype, "self's dtype")))
        return st;
    if (!regbase) {
        if ((st = silu_need_dtype(fn, ts[T_MEAN], "meanOut", self->dtype, "self's dtype")) ||
            (st = silu_need_dtype(fn, ts[T_RSTD], "rstdOut", self->dtype, "self's dtype")))
            return st;
        if (self->dtype == ACL_FLOAT &&
            ((g && (st = silu_need_dtype(fn, g, "gamma", ACL_FLOAT, "self is FLOAT"))) ||
             (b && (st = silu_need_dtype(fn, b, "beta", ACL_FLOAT, "self is FLOAT")))))
            return st;
        return ACLNN_SUCCESS;
    }
    /* regbase: mixed precision, statistics in FLOAT */
    for (int i = T_GAMMA; i <= T_BETA; i++) {
        const aclTensor *t = ts[i];
        if (t && t->dtype != self->dtype &&
            ((st = silu_need_dtype(fn, t, TNAME[i], ACL_FLOAT, "not self's dtype")) ||
             (st = silu_need_dtype(fn, ts[T_MEAN], "meanOut", ACL_FLOAT, "FLOAT gamma/beta")) ||
             (st = silu_need_dtype(fn, ts[T_RSTD], "rstdOut", ACL_FLOAT, "FLOAT gamma/beta"))))
            return st;
    }
    return ACLNN_SUCCESS;
}

/* Step 3 (CheckShape). */
static aclnnStatus silu_check_shapes(const char *fn, const aclTensor *const *ts, int64_t group)
{
    const aclTensor *self = ts[T_SELF];
    if (self->ndim < 2 || self->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self rank %llu is not in [2, 8]", fn,
             (unsigned long long)self->ndim);
    if (!same_dims(ts[T_OUT]->dims, ts[T_OUT]->ndim, self->dims, self->ndim))
        return shape_error(fn, "out", ts[T_OUT]->dims, ts[T_OUT]->ndim, "must equal self's shape",
                           self->dims, self->ndim);
    const int64_t stats[2] = {self->dims[0], group};
    for (int i = T_MEAN; i <= T_RSTD; i++)
        if (!same_dims(ts[i]->dims, ts[i]->ndim, stats, 2))
            return shape_error(fn, TNAME[i], ts[i]->dims, ts[i]->ndim, "must be [N, group] =",
                               stats, 2);
    aclnnStatus st;
    if ((st = check_channel_vector(fn, ts[T_GAMMA], "gamma", self->dims[1], self)) ||
        (st = check_channel_vector(fn, ts[T_BETA], "beta", self->dims[1], self)))
        return st;
    return ACLNN_SUCCESS;
}

/* Step 4 (CheckAttr). */
static aclnnStatus silu_check_attrs(const char *fn, const aclTensor *self, int64_t group,
                                    double eps, bool regbase)
{
    const int64_t N = self->dims[0], C = self->dims[1];
    if (group <= 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: group %lld must be greater than 0", fn,
             (long long)group);
    if (!regbase && N <= 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: N (self's dim 0) %lld must be greater than 0 on "
             "this part", fn, (long long)N);
    if (!regbase && C <= 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: C (self's dim 1) %lld must be greater than 0 on "
             "this part", fn, (long long)C);
    if (!(eps > 0.0)) /* NaN too */
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: eps %g must be greater than 0", fn, eps);
    if (C % group != 0) {
        char s[256];
        fmt_dims(s, sizeof s, self->dims, self->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: C %lld must be divisible by group %lld (self %s)",
             fn, (long long)C, (long long)group, s);
    }
    return ACLNN_SUCCESS;
}

/* The L0 op and the outputs' ViewCopy (561103): no kernel on the Atlas training parts; off
 * regbase the (x, gamma, beta) dtypes the op_api hands the kernel (absent: self's) must be a
 * tiling-accepted, registered combination; each output's ViewCopy needs its L0 result's dtype
 * and, unless that result is ND, its format. */
static aclnnStatus silu_check_l0(const char *fn, const aclTensor *const *ts,
                                 const aclemu_soc *soc, aclDataType stats_dtype)
{
    const aclTensor *self = ts[T_SELF], *g = ts[T_GAMMA], *b = ts[T_BETA];
    if (soc->npu_arch == 1001)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: no GroupNormSilu kernel on %s (%s): the operator's "
             "definition registers none for the Atlas training series", fn, soc->name,
             soc->series);
    if (soc->npu_arch != 3510) {
        const aclDataType x = self->dtype, gd = g ? g->dtype : x, bd = b ? b->dtype : x;
        if ((gd == ACL_FLOAT) != (bd == ACL_FLOAT)) /* sizes: FLOAT 4, FLOAT16/BF16 2 */
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: the kernel's gamma (%s) and beta (%s) must have "
                 "one dtype size (the tiling's rule; an absent one is made of self's dtype)",
                 fn, dname(gd), dname(bd));
        if (!((gd == x && bd == x) || (gd == ACL_FLOAT && bd == ACL_FLOAT)))
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: no kernel for self %s with gamma %s and beta %s "
                 "on %s (%s): the kernels take one dtype or FLOAT gamma and beta", fn, dname(x),
                 dname(gd), dname(bd), soc->name, soc->series);
    }
    if (self->format != ACL_FORMAT_ND && ts[T_OUT]->format != self->format)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: out's format (aclFormat %d) must be self's format "
             "(aclFormat %d) for the copy of the result", fn, (int)ts[T_OUT]->format,
             (int)self->format);
    for (int i = T_MEAN; i <= T_RSTD; i++)
        if (ts[i]->dtype != stats_dtype)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s dtype %s must be %s, the kernel's %s dtype "
                 "(gamma's, else beta's, else self's) for the copy of the result", fn,
                 TNAME[i], dname(ts[i]->dtype), dname(stats_dtype), i == T_MEAN ? "mean" : "rstd");
    return ACLNN_SUCCESS;
}

static aclnnStatus silu_phase_one(const char *fn, const char *p2, const aclemu_executor_ops *ops,
                                  const aclTensor *self, const aclTensor *gamma,
                                  const aclTensor *beta, int64_t group, double eps, bool silu,
                                  aclTensor *out, aclTensor *meanOut, aclTensor *rstdOut,
                                  uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (aclemu_fault(fn))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {self, gamma, beta, out, meanOut, rstdOut};

    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(fn, workspaceSize, executor)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    const bool regbase = soc->npu_arch == 3510;

    /* 1. self, out, meanOut, rstdOut NULL (161001); then every handle live */
    if ((st = p1_required(fn, ts, TNAME, T_SELF, T_SELF + 1)) ||
        (st = p1_required(fn, ts, TNAME, T_OUT, T_COUNT)) ||
        (st = p1_live(fn, ts, TNAME, T_COUNT)))
        return st;
    /* 2. dtypes, 3. shapes, 4. attributes (161002), in the vendor's order */
    if ((st = silu_check_dtypes(fn, ts, soc)) || (st = silu_check_shapes(fn, ts, group)) ||
        (st = silu_check_attrs(fn, self, group, eps, regbase)))
        return st;

    const int64_t N = self->dims[0], C = self->dims[1];
    int64_t HW = 0;
    if (!numel(self->dims + 2, self->ndim - 2, &HW))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: self's element count overflows int64", fn);
    const bool empty = N == 0 || C == 0 || HW == 0;
    const aclDataType stats_dtype = !regbase ? self->dtype : gamma ? gamma->dtype
                                    : beta ? beta->dtype : self->dtype;
    /* an empty self returns before the L0 op, except on regbase with N > 0 */
    if (!(empty && (!regbase || N == 0)) && (st = silu_check_l0(fn, ts, soc, stats_dtype)))
        return st;

    gn_payload *P = gn_payload_new(p2, soc, ts, N, C, HW, group, eps);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", fn);
    P->stats_dtype = stats_dtype;
    P->silu = silu;
    P->add_beta = !regbase || beta;
    P->empty_mean = regbase ? NAN : 0.0f;
    if (soc->npu_arch == 2002)
        P->affine_as_x_dtype = !empty && gamma && gamma->dtype == ACL_FLOAT &&
                               self->dtype != ACL_FLOAT &&
                               inference_sd_kernel(N, HW, group, self->dtype);
    /* an empty self returns size 0 before the L0 op, except on regbase with N > 0 */
    const uint64_t ws_size = empty && (!regbase || N == 0) ? 0
        : gn_device_workspace(soc, ts, N, C, HW, group, !regbase, stats_dtype);
    return p1_finish(fn, ops, P, ws_size, ts, TNAME, T_COUNT, T_OUT, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormSiluGetWorkspaceSize(const aclTensor *self,
                                                             const aclTensor *gamma,
                                                             const aclTensor *beta, int64_t group,
                                                             double eps, aclTensor *out,
                                                             aclTensor *meanOut,
                                                             aclTensor *rstdOut,
                                                             uint64_t *workspaceSize,
                                                             aclOpExecutor **executor)
{
    return silu_phase_one(SILU_P1, SILU_P2, &GNS_OPS, self, gamma, beta, group, eps, true, out,
                          meanOut, rstdOut, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormSilu(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(SILU_P2, executor, workspace, workspaceSize, stream);
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormSiluV2GetWorkspaceSize(
    const aclTensor *self, const aclTensor *gamma, const aclTensor *beta, int64_t group,
    double eps, bool activateSilu, aclTensor *out, aclTensor *meanOut, aclTensor *rstdOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    return silu_phase_one(SILU_V2_P1, SILU_V2_P2, &GNS_V2_OPS, self, gamma, beta, group, eps,
                          activateSilu, out, meanOut, rstdOut, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormSiluV2(void *workspace, uint64_t workspaceSize,
                                               aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(SILU_V2_P2, executor, workspace, workspaceSize, stream);
}
