/*
 * aclnnRmsNormQuant for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel.
 *
 * Facts, hicann/ops-nn norm/rms_norm_quant:
 * - op_host/op_api/aclnn_rms_norm_quant.cpp (the hand-written phase one, followed here in its
 *   order and codes): the out-pointers (L2_DFX_PHASE_1, 161001); PreDealData: a rank-2 gamma,
 *   then a rank-2 beta, made contiguous and reshaped to [dim 1] (l0op::Reshape, hicann/ops-math
 *   conversion/reshape/op_api/reshape.cpp: a reshape to an empty shape or to another element
 *   count fails, which the op_api returns as 561103); CheckParams: NULLs (161001), dtypes
 *   (161002), ranks and shapes (161002, on the reshaped gamma/beta); then the L0 op
 *   (op_api/rms_norm_quant.cpp) with dstType INT8, or INT4 for an INT32 y, whose result is
 *   viewed as INT32 (eight INT4 to a word) when y is INT32, then ViewCopy'd into y (hicann/
 *   ops-math conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams: equal
 *   dtypes, equal shapes unless both hold one element);
 * - the part: IsRegbase() (Ascend 950) takes other lists and the RmsNormQuantV2 kernel; the
 *   Atlas A2/A3 lists (x FLOAT16/BF16; y INT8, INT4, INT32), the Atlas inference ones (x
 *   FLOAT16; y INT8); any other part (the Atlas training series) gets empty lists, so x's
 *   dtype check fails (161002, "support ... is not implemented");
 * - op_host/rms_norm_quant_common_tiling.cpp (NormCommonTiling, run by phase one through the
 *   L0 op's ADD_TO_LAUNCHER_LIST_AICORE): every dim of x > 0, y INT4 needs N % 8 == 0, the
 *   float epsilon > 0; avgFactor = (float)(1.0 / N); quantMin -128 (-127 when the
 *   environment's ASDOPS_QUANT_MIN_NEG_127 is "1"); rows longer than 8192 take the slice
 *   kernel. A failed tiling makes l0op::RmsNormQuant return NULL, which this op_api does not
 *   check: it dereferences it (ViewCopy's checks, or the INT32 view). Stricter (docs/
 *   emulator.md): refused with 561103, the status the Ascend 950 branch returns for it.
 *
 * The device's numbers (op_kernel/rms_norm_quant.cpp, rms_norm_quant.h; DAV 2201 and 2002),
 * per row of N elements, everything in float after x, gamma, beta are widened:
 * - N <= 8192 ("fast"): s = sum(x * x * avg) (each square rounded, then scaled, then summed),
 *   factor = 1 / sqrt(s + eps) (no zero guard);
 * - N > 8192 ("slice"): ss = the slices' sums of x * x (8192 elements each) added in slice
 *   order, rms = sqrt(ss * avg + eps), factor = rms != 0 ? 1 / rms : 1;
 * - v = ((x * factor) * gamma + beta) * (1 / scale[0]) + offset[0]: the scale's reciprocal
 *   taken once in float (a multiply, not a divide), offset[0] an INT8 widened; only the first
 *   element of scale and offset is read;
 * - v rounded to FLOAT16 (CAST_NONE: to nearest even), clamped in FLOAT16 to [quantMin, 127],
 *   then to INT8 to nearest even (CAST_RINT on DAV 2201; CAST_NONE on DAV 2002, which the
 *   AscendC docs define as CAST_RINT when the conversion is inexact); INT4 (y INT32): the
 *   FLOAT16 v to INT4 with CAST_RINT, no clamp (taken to saturate to [-8, 7], docs/emulator.md),
 *   packed two to a byte, the lower nibble first, four bytes to a little-endian INT32 word.
 *
 * Ascend 950 (hicann/ops-nn norm/rms_norm_quant_v2; the op_api calls l0op::RmsNormQuantV2
 * with divMode true, scale as scales1, offset as zero_points1, beta, no scales2):
 * - op_host/rms_norm_quant_v2_tiling_regbase_base.cpp: scale of rank <= 8, all ones (per
 *   tensor) or x's trailing dims (per column); no zero dim in x; no epsilon rule; avgFactor
 *   1.0f / (float)N. A failed tiling is 561103 (the op_api checks the NULL result). The
 *   full-load kernel takes rows up to 16384 (rms_norm_quant_v2_tiling_regbase_full_load.cpp),
 *   the recompute kernel longer ones;
 * - op_kernel/arch35 (..._full_load.h, ..._recompute.h ComputeQuant, ..._common.h): var =
 *   sum(x * x) * avg, rstd by norm_common's ComputeRstdNewtonRaphsonReg (var + eps, clamped at
 *   -99.99 by the recompute kernel only, 1 / var, sqrt, one Newton-Raphson step; +inf ->
 *   0, 0 -> +inf); v = ((x * rstd) * gamma + beta) / scale + offset, scale and offset per
 *   column (element j < N) unless all their dims are 1; v to FLOAT16 with CAST_ODD, then to
 *   INT8 (or INT4) with CAST_RINT, NO_SAT (taken to saturate; NaN 0), no quantMin clamp;
 *   FLOAT8 y: v itself with castTraitFp322Fp8 (CAST_RINT, SAT, overflow mode 0: saturating);
 *   HIFLOAT8 y: v itself with castTraitFp322Hifp8 (norm/rms_norm/op_kernel/arch35/
 *   rms_norm_regbase_common.h: CAST_ROUND, SAT, overflow mode 0: ties away, saturating at
 *   2^15; half.h aclemu_f32_to_hif8_sat). INT4 y: the INT32 y's INT4 values and bytes (the
 *   op_api asks RmsNormQuantV2 for INT4 either way and views the result as INT32 for an INT32
 *   y), over y's x-shaped dims, two to a byte, from byte offset / 2 of a contiguous y (an odd
 *   offset: one nibble early, as the device's address rounds); a strided INT4 y is the
 *   ViewCopy's to refuse, a transposed one "not modelled" (int4_pack.h, docs/emulator.md).
 *
 * The order of a row's sum of squares is the kernel's (rows are independent, so the split of
 * rows over threads never changes a bit):
 * - fast (N <= 8192, DAV 2201 and 2002): the squares times avg summed by norm/rms_norm/
 *   op_kernel/rms_norm_base.h ReduceSumFP32 (ReduceSumCustom): the row's 64-element repeats
 *   added in order onto 64 lane accumulators from +0 (one Add, its dst and src1 repeat
 *   strides 0), then one WholeReduceSum: norm_rows.h nr_sum_lane_blocks, RmsNorm's merge-N;
 * - slice (N > 8192): each slice's squares by AscendC's count-form ReduceSum, the slices'
 *   sums added in order from 0: on DAV 2201 one counter-mode vcadd (nr_reduce_sum_count); on
 *   DAV 2002 (asc-devkit dav_m200) the repeats reduced, their results reduced again, a
 *   partial last repeat reduced alone and added as a pair (nr_reduce_sum_count_m200);
 * - Ascend 950's full-load kernel: norm_common's CalculateSquareReduceSum with the fold
 *   point below N aligned to 32 bytes (the tiling's binaryAdd): nr_binary_add_sum, as
 *   RmsNorm's perf template; its recompute kernel (rms_norm_quant_v2_regbase_recompute.h
 *   ComputeOneLineXSquareSum): the row in blocks of the tiling's baseN, block r + powerSplit
 *   squared and added onto block r (FoldBlockVF: a^2 + b^2), each block's binary add
 *   (CalculateReduceSum, fold point baseN / 2), the block results merged by UpdateCache's
 *   binary counter (v2_recompute_sum). Which kernel: v2_full_load_fits, v2_base_n.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "exec_workspace.h"
#include "convert.h"
#include "half.h"
#include "int4_pack.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_rms_norm_quant.h"

#define P1 "aclnnRmsNormQuantGetWorkspaceSize"
#define P2 "aclnnRmsNormQuant"

enum { T_X, T_GAMMA, T_BETA, T_SCALE, T_OFFSET, T_Y, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x", "gamma", "beta", "scale", "offset", "y"};

#define SLICE 8192          /* the tiling's slice size (SLICE_SIZE) */
/* Ascend 950: rows longer than this take RmsNormQuantV2's recompute kernel (the full-load
 * tiling's limit VL_FP32 * VL_FP32 * 4, VL_FP32 = 64) or do not fit its UB */
#define V2_FULL_LOAD_MAX 16384
#define V2_MAX_SPLIT_LEVELS 24 /* the recompute kernel's cache levels: log2(powerSplit) + 1 */

typedef struct {
    nr_head h; /* per chunk 2 * N floats (x as float, v) and N bytes of quantized values */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps, avg;  /* as the kernel receives them */
    float quant_min; /* -128, or -127 (ASDOPS_QUANT_MIN_NEG_127=1) */
    bool int4;       /* y INT32: INT4 packed eight to a word */
    bool regbase;    /* Ascend 950: RmsNormQuantV2's numbers */
    bool per_channel; /* Ascend 950: scale and offset read per column (not all-ones shapes) */
    bool recompute;  /* Ascend 950: the recompute kernel (its rstd clamps var at -99.99) */
    int64_t base_n;  /* the recompute kernel's block (the tiling's baseN) */
    bool m200;       /* DAV 2002: the Atlas inference parts' count-form ReduceSum */
    aclDataType ydt; /* y's dtype (Ascend 950: INT8 and INT32 through FLOAT16, FLOAT8 and
                      * HIFLOAT8 direct) */
} rnq_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* The row's factor (1 / rms), per the kernel's two paths; sq: N floats of scratch. */
static float row_factor(const rnq_payload *P, const float *x, float *sq)
{
    const int64_t N = P->N;
    if (N <= SLICE) {
        for (int64_t i = 0; i < N; i++) { /* Mul, then Muls: each rounded */
            sq[i] = x[i] * x[i];
            sq[i] *= P->avg;
        }
        return 1.0f / sqrtf(nr_sum_lane_blocks(sq, N) + P->eps);
    }
    float ss = 0.0f;
    for (int64_t c = 0; c < N; c += SLICE) {
        const int64_t n = N - c < SLICE ? N - c : SLICE;
        for (int64_t i = 0; i < n; i++)
            sq[i] = x[c + i] * x[c + i];
        ss += P->m200 ? nr_reduce_sum_count_m200(sq, n) : nr_reduce_sum_count(sq, n);
    }
    float rms = sqrtf(ss * P->avg + P->eps);
    return rms != 0.0f ? 1.0f / rms : 1.0f;
}

/* The recompute tiling's powerSplit: the largest power of two below ceil(r / n) (1 for one
 * or two blocks). */
static int64_t v2_power_split(int64_t r, int64_t n)
{
    const int64_t loops = (r + n - 1) / n;
    return loops <= 1 ? 1 : nr_pow2_below(loops);
}

/* The recompute kernel's row sum of squares (ComputeOneLineXSquareSum): blocks r of base_n
 * columns, r < powerSplit, each with block r + powerSplit's squares added per column where
 * the row has it (FoldBlockVF), reduced by the binary add; block r's result plus cache levels
 * 0 .. t - 1 in order goes to level t, t the trailing ones of r (UpdateCache); the row's sum
 * is the last level. t: base_n + base_n / 64 + 1 floats of scratch. */
static float v2_recompute_sum(const rnq_payload *P, const float *x, float *t)
{
    const int64_t N = P->N, B = P->base_n, split = v2_power_split(N, B);
    const int64_t folds = split * B > N ? 0 : (N - split * B) / B, fold_tail = N % B;
    float cache[V2_MAX_SPLIT_LEVELS] = {0};
    int level = 0;
    for (int64_t r = 0; r < split; r++) {
        const float *a = x + r * B, *b = a + split * B;
        const int64_t n = r < folds ? B : r == folds ? fold_tail : 0;
        for (int64_t i = 0; i < B; i++) {
            t[i] = a[i] * a[i];
            if (i < n)
                t[i] = t[i] + b[i] * b[i];
        }
        float v = nr_binary_add_sum(t, B, t + B);
        level = nr_cache_level(r);
        for (int j = 0; j < level; j++)
            v = v + cache[j];
        cache[level] = v;
    }
    return cache[level];
}

/* v (already rounded to FLOAT16) as the device's integer: INT8 clamped to [quant_min, 127]
 * first; INT4 saturated to [-8, 7] (int4_pack.h). NaN is written as 0, as the docs'
 * constraints say. */
static int8_t quantize(float h, float quant_min, bool int4)
{
    if (int4)
        return int4_from_float_sat(h);
    if (isnan(h))
        return 0;
    h = h < quant_min ? quant_min : h;
    h = h > 127.0f ? 127.0f : h;
    return (int8_t)aclemu_round_half_even(h);
}

/* One row on Ascend 950 (RmsNormQuantV2, divMode true): q[i] from x's row xr. */
static void v2_row(const rnq_payload *P, const norm_rows *R, const float *xr, float *sq,
                   int8_t *q)
{
    const int64_t N = P->N;
    const float *scale = R->run_buf, *offset = R->run_buf + N;
    float sum;
    if (P->recompute) {
        sum = v2_recompute_sum(P, xr, sq);
    } else { /* CalculateSquareReduceSum */
        for (int64_t i = 0; i < N; i++)
            sq[i] = xr[i] * xr[i];
        sum = nr_binary_add_sum(sq, N, sq + N);
    }
    const float rstd = nr_rstd_newton_raphson(sum * P->avg, P->eps, P->recompute);
    for (int64_t i = 0; i < N; i++) {
        float v = xr[i] * rstd;
        v = R->gamma[i] * v;
        v += R->beta[i];
        v /= scale[i];
        v += offset[i];
        if (P->ydt == ACL_FLOAT8_E4M3FN || P->ydt == ACL_FLOAT8_E5M2) {
            /* castTraitFp322Fp8: from float, CAST_RINT, saturating (the kernel sets the
             * overflow mode bit CTRL[60] to 0 around it, the saturation the docs require) */
            q[i] = (int8_t)(P->ydt == ACL_FLOAT8_E4M3FN ? aclemu_f32_to_e4m3fn_sat(v)
                                                        : aclemu_f32_to_e5m2_sat(v));
            continue;
        }
        if (P->ydt == ACL_HIFLOAT8) {
            /* castTraitFp322Hifp8: from float, CAST_ROUND (ties away), saturating (CTRL[60] 0
             * around it, as for FLOAT8) */
            q[i] = (int8_t)aclemu_f32_to_hif8_sat(v);
            continue;
        }
        const float h = aclemu_f16_to_f32(aclemu_f32_to_f16_odd(v));
        q[i] = quantize(h, -128.0f, P->int4);
    }
}

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const rnq_payload *P = payload;
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y];
    const int64_t N = P->N;
    float *xbuf = nr_chunk_buf(R, chunk), *vbuf = xbuf + N; /* vbuf: the squares, then v */
    int8_t *q = (int8_t *)(void *)(vbuf + N + N / NR_VECTOR_LANES + 1);
    const float scale_r = R->run_buf[0], offset = R->run_buf[1];
    for (int64_t m = begin; m < end; m++) {
        const float *xr = get_tile(row_base(x, m), x->dtype, &x->inner, 0, N, xbuf);
        if (P->regbase) {
            v2_row(P, R, xr, vbuf, q);
            if (P->ydt == ACL_INT4)
                store_int4_bytes_row(y, m, q, N);
            else if (P->int4)
                store_int4_words_row(y, m, q, N);
            else
                store_int8_row(y, m, q, N);
            continue;
        }
        const float factor = row_factor(P, xr, vbuf);
        for (int64_t i = 0; i < N; i++) {
            float v = xr[i] * factor;
            v *= R->gamma[i];
            v += R->beta[i];
            v *= scale_r;
            vbuf[i] = v + offset;
        }
        aclemu_round_floats(ACL_FLOAT16, ACLEMU_TIES_EVEN, vbuf, N);
        for (int64_t i = 0; i < N; i++)
            q[i] = quantize(vbuf[i], P->quant_min, P->int4);
        if (P->int4)
            store_int4_words_row(y, m, q, N);
        else
            store_int8_row(y, m, q, N);
    }
}

/* The first n elements of t (FLOAT, FLOAT16, BF16, INT8 or INT32) as floats in dst: INT8
 * exactly (the kernel widens it through FLOAT16), INT32 to nearest even (CAST_RINT). */
static void load_params(const tdesc *t, int64_t n, float *dst)
{
    const char *base = view_base(t);
    const int64_t es = (int64_t)aclemu_dtype_size(t->dtype);
    if (t->dtype == ACL_INT8 || t->dtype == ACL_INT32) {
        LAY_WALK(&t->inner, 0, n, {
            for (int64_t j = 0; j < run; j++) {
                const char *e = base + (off + j * stride) * es;
                int32_t v32;
                if (t->dtype == ACL_INT8)
                    v32 = *(const int8_t *)e;
                else
                    memcpy(&v32, e, sizeof v32);
                dst[k + j] = (float)v32;
            }
        });
        return;
    }
    LAY_WALK(&t->inner, 0, n, aclemu_load_floats(t->dtype, base + off * es, stride, run,
                                                  dst + k));
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const rnq_payload *P = payload;
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    nr_load_beta(R, &P->t[T_BETA], P->N);
    if (P->regbase) {
        /* scale and offset per column: their first N elements (the kernel's scales1Gm[j],
         * zeroPoints1Gm[j]), or element 0 for every column when their dims are all 1 */
        float *scale = R->run_buf, *offset = R->run_buf + P->N;
        const int64_t n = P->per_channel ? P->N : 1;
        load_params(&P->t[T_SCALE], n, scale);
        load_params(&P->t[T_OFFSET], n, offset);
        for (int64_t i = n; i < P->N; i++) {
            scale[i] = scale[0];
            offset[i] = offset[0];
        }
        return true;
    }
    /* scale[0] widened to float and its reciprocal taken in float; offset[0] an INT8 */
    const tdesc *s = &P->t[T_SCALE], *o = &P->t[T_OFFSET];
    float sbuf[1];
    const float *sv = get_tile(view_base(s), s->dtype, &s->inner, 0, 1, sbuf);
    R->run_buf[0] = 1.0f / sv[0];
    R->run_buf[1] = (float)*(const int8_t *)view_base(o);
    return true;
}

static const nr_kernel RNQ_KERNEL = NR_KERNEL(rnq_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops RNQ_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

static bool in_list(aclDataType dt, const aclDataType *list, int n)
{
    for (int i = 0; i < n; i++)
        if (dt == list[i])
            return true;
    return false;
}

static aclnnStatus check_dtype(const aclTensor *t, const char *name, const aclDataType *list,
                               int n, const char *text, const aclemu_soc *soc)
{
    if (n == 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): the "
             "operator supports no dtype there (its support for the part is not implemented)",
             P1, name, qname(t->dtype), soc->name, soc->series);
    if (!in_list(t->dtype, list, n))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
             name, qname(t->dtype), soc->name, soc->series, text);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_same_dtype(const aclTensor *t, const char *name, const aclTensor *ref,
                                    const char *ref_name)
{
    if (t->dtype != ref->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be %s's dtype %s", P1, name,
             qname(t->dtype), ref_name, qname(ref->dtype));
    return ACLNN_SUCCESS;
}

/* Ascend 950's scale/offset dtype relations (the op_api's IsRegbase branch). */
static aclnnStatus check_regbase_quant_dtypes(const aclTensor *x, const aclTensor *scale,
                                              const aclTensor *offset, const aclemu_soc *soc)
{
    static const aclDataType ZP[] = {ACL_INT32, ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8};
    aclnnStatus st;
    if ((st = check_dtype(offset, "offset", ZP, 5, "INT32, FLOAT, FLOAT16, BF16, INT8",
                          soc)))
        return st;
    const aclDataType xd = x->dtype, sd = scale->dtype, od = offset->dtype;
    if (xd == ACL_FLOAT && !(sd == ACL_FLOAT && od == ACL_FLOAT))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: scale dtype %s and offset dtype %s must both be "
             "FLOAT beside a FLOAT x", P1, qname(sd), qname(od));
    if (xd == ACL_FLOAT16 || xd == ACL_BF16) {
        if (sd == ACL_FLOAT) {
            if (od != ACL_FLOAT && od != ACL_INT32)
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: offset dtype %s must be FLOAT or INT32 "
                     "beside a FLOAT scale and a %s x", P1, qname(od), qname(xd));
        } else {
            if (sd != xd)
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: scale dtype %s must be FLOAT or x's dtype "
                     "%s", P1, qname(sd), qname(xd));
            if (od != sd && od != ACL_INT8)
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: offset dtype %s must be scale's dtype %s "
                     "or INT8", P1, qname(od), qname(sd));
        }
    }
    return ACLNN_SUCCESS;
}

/* Step 2 of CheckParams: dtypes (161002), in the op_api's order. */
static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc,
                                bool regbase)
{
    static const aclDataType IN_A2[] = {ACL_FLOAT16, ACL_BF16};
    static const aclDataType IN_310P[] = {ACL_FLOAT16};
    static const aclDataType IN_950[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    static const aclDataType OUT_A2[] = {ACL_INT8, ACL_INT4, ACL_INT32};
    static const aclDataType OUT_310P[] = {ACL_INT8};
    static const aclDataType OUT_950[] = {ACL_FLOAT8_E4M3FN, ACL_FLOAT8_E5M2, ACL_HIFLOAT8,
                                          ACL_INT8, ACL_INT4, ACL_INT32};
    const aclDataType *in = NULL, *out = NULL;
    int nin = 0, nout = 0;
    const char *tin = "", *tout = "";
    if (regbase) {
        in = IN_950, nin = 3, tin = "FLOAT, FLOAT16, BF16";
        out = OUT_950, nout = 6;
        tout = "FLOAT8_E4M3FN, FLOAT8_E5M2, HIFLOAT8, INT8, INT4, INT32";
    } else if (soc->npu_arch == 2201) {
        in = IN_A2, nin = 2, tin = "FLOAT16, BF16";
        out = OUT_A2, nout = 3, tout = "INT8, INT4, INT32";
    } else if (soc->npu_arch == 2002) {
        in = IN_310P, nin = 1, tin = "FLOAT16";
        out = OUT_310P, nout = 1, tout = "INT8";
    }
    aclnnStatus st;
    if ((st = check_dtype(ts[T_X], "x", in, nin, tin, soc)) ||
        (st = check_same_dtype(ts[T_GAMMA], "gamma", ts[T_X], "x")) ||
        (st = check_same_dtype(ts[T_BETA], "beta", ts[T_X], "x")) ||
        (st = check_dtype(ts[T_Y], "y", out, nout, tout, soc)))
        return st;
    if (regbase)
        return check_regbase_quant_dtypes(ts[T_X], ts[T_SCALE], ts[T_OFFSET], soc);
    if ((st = check_same_dtype(ts[T_SCALE], "scale", ts[T_X], "x")))
        return st;
    if (ts[T_OFFSET]->dtype != ACL_INT8)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: offset dtype %s must be INT8", P1,
             qname(ts[T_OFFSET]->dtype));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_rank(const char *name, uint64_t lo, uint64_t hi, uint64_t rank)
{
    if (rank < lo || rank > hi)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is not in [%llu, %llu]", P1, name,
             (unsigned long long)rank, (unsigned long long)lo, (unsigned long long)hi);
    return ACLNN_SUCCESS;
}

/* Whether the first n dims of a and b agree and their ranks are equal (the op_api's
 * CheckShapeDimWithFrontN). */
static bool front_dims_equal(const aclTensor *a, const aclTensor *b, uint64_t n)
{
    if (a->ndim != b->ndim)
        return false;
    for (uint64_t i = 0; i < a->ndim && i < n; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Step 3 of CheckParams: ranks and shapes (161002), gamma and beta as PreDealData left them
 * (rank gr, br; their last dim glast). */
static aclnnStatus check_shapes(const aclTensor *const *ts, uint64_t gr, uint64_t br,
                                int64_t glast, const int64_t *gdims, const int64_t *bdims,
                                bool regbase)
{
    const aclTensor *x = ts[T_X], *y = ts[T_Y], *s = ts[T_SCALE], *o = ts[T_OFFSET];
    aclnnStatus st;
    /* every rank's maximum (x, gamma, beta, y), then every minimum */
    if ((st = check_rank("x", 0, TV_MAX_RANK, x->ndim)) ||
        (st = check_rank("gamma", 0, 2, gr)) || (st = check_rank("beta", 0, 2, br)) ||
        (st = check_rank("y", 0, TV_MAX_RANK, y->ndim)) ||
        (st = check_rank("x", 1, TV_MAX_RANK, x->ndim)) ||
        (st = check_rank("gamma", 1, 2, gr)) || (st = check_rank("beta", 1, 2, br)) ||
        (st = check_rank("y", 1, TV_MAX_RANK, y->ndim)))
        return st;
    /* scale's rank 1 is only logged by the vendor (no refusal) */
    const int64_t xlast = x->dims[x->ndim - 1], ylast = y->dims[y->ndim - 1];
    if (glast != xlast)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma's last dim %lld must be x's last dim %lld", P1,
             (long long)glast, (long long)xlast);
    if (y->dtype == ACL_INT32) {
        if (regbase && !front_dims_equal(x, y, x->ndim - 1))
            return shape_error(P1, "y", y->dims, y->ndim, "must have x's rank and batch dims "
                               "(y INT32), x", x->dims, x->ndim);
        if (xlast != ylast * INT4_PER_INT32)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: y's last dim %lld must be 1/8 of x's last dim "
                 "%lld (y INT32 holds eight INT4)", P1, (long long)ylast, (long long)xlast);
    } else if (regbase && y->dtype == ACL_INT4) {
        if (!front_dims_equal(x, y, x->ndim))
            return shape_error(P1, "y", y->dims, y->ndim, "must equal x's shape", x->dims,
                               x->ndim);
        if (xlast % 2 != 0)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x's last dim %lld must be even (y INT4)", P1,
                 (long long)xlast);
    } else if (regbase) {
        if (!front_dims_equal(x, y, x->ndim))
            return shape_error(P1, "y", y->dims, y->ndim, "must equal x's shape", x->dims,
                               x->ndim);
    } else if (xlast != ylast) {
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: y's last dim %lld must be x's last dim %lld", P1,
             (long long)ylast, (long long)xlast);
    }
    if (!same_dims(gdims, gr, bdims, br))
        return shape_error(P1, "beta", bdims, br, "must equal gamma's shape", gdims, gr);
    if (!same_dims(s->dims, s->ndim, o->dims, o->ndim))
        return shape_error(P1, "offset", o->dims, o->ndim, "must equal scale's shape", s->dims,
                           s->ndim);
    return ACLNN_SUCCESS;
}

typedef struct {
    int64_t N;        /* the normalized (last) dim */
    bool int4;        /* y INT32 or INT4 */
    bool per_channel; /* set by v2_tiling */
} rnq_shape;

/* RmsNormQuant's tiling (op_host/rms_norm_quant_common_tiling.cpp), run by phase one off
 * Ascend 950: 561103, stricter (the vendor dereferences the NULL result). */
static aclnnStatus v1_tiling(const aclTensor *x, double epsilon, const rnq_shape *sh)
{
    char sx[256];
    fmt_dims(sx, sizeof sx, x->dims, x->ndim);
    for (uint64_t i = 0; i < x->ndim; i++)
        if (x->dims[i] <= 0)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x shape %s is empty (the tiling refuses a zero "
                 "dim)", P1, sx);
    int64_t X = 0;
    if (!numel(x->dims, x->ndim, &X) || X > (int64_t)UINT32_MAX)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x shape %s has more than %u elements (the tiling's "
             "row count)", P1, sx, UINT32_MAX);
    if (sh->int4 && sh->N % INT4_PER_INT32 != 0)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x's last dim %lld must be a multiple of 8 for an "
             "INT4 result (the tiling's rule)", P1, (long long)sh->N);
    const float eps = (float)epsilon;
    if (eps <= 0.0f) /* NaN is not refused */
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: epsilon %g is not positive as a float (the tiling "
             "refuses epsilon <= 0)", P1, epsilon);
    return ACLNN_SUCCESS;
}

/* RmsNormQuantV2's tiling on Ascend 950 (rms_norm_quant_v2 op_host/
 * rms_norm_quant_v2_tiling_regbase_base.cpp), as the op_api calls it (gamma [N], beta,
 * offset as zero_points1, no scales2): scale of rank at most 8; scale all ones (a per-tensor
 * scale) or x's trailing dims (per column: the kernel reads its first N elements); no zero
 * dim in x. No epsilon rule, no element limit. A failure makes l0op::RmsNormQuantV2 return
 * NULL, which the op_api returns as 561103. */
static aclnnStatus v2_tiling(const aclTensor *x, const aclTensor *scale, rnq_shape *sh)
{
    char sx[256], ss[256];
    fmt_dims(sx, sizeof sx, x->dims, x->ndim);
    fmt_dims(ss, sizeof ss, scale->dims, scale->ndim);
    if (scale->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: scale rank %llu exceeds 8 (RmsNormQuantV2's "
             "tiling)", P1, (unsigned long long)scale->ndim);
    bool ones = true;
    for (uint64_t i = 0; i < scale->ndim; i++)
        ones = ones && scale->dims[i] == 1;
    if (!ones) {
        bool trailing = scale->ndim <= x->ndim;
        for (uint64_t i = 0; trailing && i < scale->ndim; i++)
            trailing = scale->dims[i] == x->dims[x->ndim - scale->ndim + i];
        if (!trailing)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: scale shape %s must be all ones or x's trailing "
                 "dims (x %s; RmsNormQuantV2's tiling)", P1, ss, sx);
    }
    for (uint64_t i = 0; i < x->ndim; i++)
        if (x->dims[i] <= 0)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x shape %s is empty (RmsNormQuantV2's tiling "
                 "refuses a zero dim)", P1, sx);
    sh->per_channel = !ones;
    return ACLNN_SUCCESS;
}

/* The ViewCopy of the L0 op's result (of x's shape: INT8, or INT4 viewed as INT32 with the
 * last dim / 8 for an INT32 y; on Ascend 950 also INT4 itself) into y (hicann/ops-math
 * contiguous.cpp CheckViewCopyParams): equal dtypes, equal shapes unless both hold one
 * element, y's format x's unless x's is ND. */
static aclnnStatus check_view_copy(const aclTensor *x, const aclTensor *y, bool regbase)
{
    if (y->dtype == ACL_INT4 && !regbase)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: y dtype INT4 cannot receive the result, viewed as "
             "INT32 off Ascend 950 (the ViewCopy's rule: equal dtypes)", P1);
    if (y->format != x->format && x->format != ACL_FORMAT_ND)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: y's format (aclFormat %d) must be x's (aclFormat %d) "
             "when x's is not ND (the ViewCopy's rule)", P1, (int)y->format, (int)x->format);
    int64_t want[TV_MAX_RANK], W = 0, Y = 0;
    for (uint64_t i = 0; i < x->ndim; i++)
        want[i] = x->dims[i];
    if (y->dtype == ACL_INT32)
        want[x->ndim - 1] /= INT4_PER_INT32;
    const bool ones = numel(want, x->ndim, &W) && W == 1 && numel(y->dims, y->ndim, &Y) &&
                      Y == 1;
    if (!ones && !same_dims(y->dims, y->ndim, want, x->ndim)) {
        shape_error(P1, "y", y->dims, y->ndim, "must be the result's shape (the ViewCopy's "
                    "rule):", want, x->ndim);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    return ACLNN_SUCCESS;
}

/* Ascend 950: an INT4 y the copy of the result refuses (int4_pack.h int4_view_copy_rule),
 * after every other rule the device applies. */
static aclnnStatus int4_y_copy(const aclTensor *y, const aclemu_soc *soc)
{
    if (y->dtype == ACL_INT4 && !int4_packed(y))
        return int4_view_copy_rule(y, P1, "y", soc);
    return ACLNN_SUCCESS;
}

/* PreDealData for one of gamma/beta: a rank-2 tensor is reshaped to [dim 1], which
 * l0op::Reshape refuses for an empty target or another element count (561103). Writes the
 * rank and dims the checks then see. */
static aclnnStatus reshape_rank2(const aclTensor *t, const char *name, uint64_t *rank,
                                 int64_t *dims)
{
    if (!t) {
        *rank = 0;
        return ACLNN_SUCCESS;
    }
    if (t->ndim != 2) {
        *rank = t->ndim;
        for (uint64_t i = 0; i < t->ndim && i < TV_MAX_RANK; i++)
            dims[i] = t->dims[i];
        return ACLNN_SUCCESS;
    }
    char s[128];
    fmt_dims(s, sizeof s, t->dims, t->ndim);
    if (t->dims[1] == 0 || t->dims[0] != 1)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s shape %s cannot be reshaped to [%lld] (a rank-2 "
             "%s is reshaped to its last dim: [1, N] only)", P1, name, s,
             (long long)t->dims[1], name);
    *rank = 1;
    dims[0] = t->dims[1];
    return ACLNN_SUCCESS;
}

/* RmsNormQuantV2's kernel choice (op_host/rms_norm_quant_v2_tiling_regbase_full_load.cpp,
 * _recompute.cpp; the op_api hands it beta and offset, no scales2, zero_points2 or rstd):
 * the UB is the part's (GetCoreMemSize: the platform files' ub_size), 32-byte blocks, 64
 * floats to a register, 1-byte y (INT4 counted as 1), bytes of x, scale and offset. */
#define V2_BLOCK 32
#define V2_RETAINED (8 * V2_BLOCK) /* RETAINED_BLOCK_NUM blocks */

/* The full-load template's IsCapable: at most 16384 columns and ubFactor >= 1, with r the
 * row aligned to 32 elements and binaryAdd the power of two below the row aligned to a block
 * of x (the reduce buffer: binaryAdd / 64 floats, in blocks). */
static bool v2_full_load_fits(int64_t N, int64_t xs, int64_t ss, int64_t zs)
{
    const int64_t per_block = V2_BLOCK / xs, rx = (N + per_block - 1) / per_block * per_block;
    const int64_t folds = (nr_pow2_below(rx) + NR_VECTOR_LANES - 1) / NR_VECTOR_LANES;
    const int64_t tmp = (folds + V2_BLOCK - 1) / V2_BLOCK * V2_BLOCK;
    const int64_t r = (N + V2_BLOCK - 1) / V2_BLOCK * V2_BLOCK;
    const int64_t room = aclemu_soc_ub_bytes() - V2_RETAINED - r * (2 * xs + ss + zs);
    return N <= V2_FULL_LOAD_MAX && room >= 2 * r * xs + 2 * r + (int64_t)sizeof(float) + tmp;
}

/* The recompute template's baseN (GetMaxBaseN): from 64, doubled while the row splits into
 * more than two blocks, twice it is at most 16384 and twice it fits the UB beside the rstd
 * buffer (128 floats), the cache (a block per level) and the binary-add buffer (two
 * registers): x, its fold, gamma and beta double-buffered, scale and offset, y, a float. */
static int64_t v2_base_n(int64_t N, int64_t xs, int64_t ss, int64_t zs)
{
    const int64_t per_col = (4 * xs + ss + zs + 1) * 2 + (int64_t)sizeof(float);
    const int64_t fixed = V2_RETAINED + 128 * (int64_t)sizeof(float) +
                          2 * NR_VECTOR_LANES * (int64_t)sizeof(float);
    int64_t n = NR_VECTOR_LANES, split = v2_power_split(N, n);
    while (split > 1 && 2 * n <= V2_FULL_LOAD_MAX &&
           2 * n * per_col <= aclemu_soc_ub_bytes() - fixed -
                                  (nr_cache_level(split - 1) + 1) * V2_BLOCK) {
        n *= 2;
        split = v2_power_split(N, n);
    }
    return n;
}

/* The device's phase-one workspace (op_api/aclnn_rms_norm_quant.cpp): Contiguous copies of
 * strided tensors in the op_api's order (PreDealData's rank-2 gamma and beta, then x, offset,
 * scale, then a rank-1 gamma and beta); the kernel with its tiling workspace (RmsNormQuant:
 * rms_norm_quant_common_tiling.cpp WORKAPCE_RESERVE, 16 MiB hard-coded; RmsNormQuantV2 on
 * Ascend 950: rms_norm_quant_v2_tiling_regbase_{full_load,recompute}.cpp, none of its own
 * plus GetLibApiWorkSpaceSize); its INT8 (or INT4) result, ViewCopy'd into y (taken over
 * when y is contiguous; for an INT32 y through its INT32 view, taken as the same). */
static uint64_t rnq_workspace(const aclTensor *const *ts, const aclemu_soc *soc, bool int4)
{
    ew_graph g = ew_graph_on(soc->npu_arch);
    const aclTensor *gamma = ts[T_GAMMA], *beta = ts[T_BETA];
    int reads[T_COUNT], n = 0;
    if (gamma->ndim == 2)
        reads[n++] = ew_contiguous_copy(&g, gamma);
    if (beta && beta->ndim == 2)
        reads[n++] = ew_contiguous_copy(&g, beta);
    reads[n++] = ew_contiguous_copy(&g, ts[T_X]);
    reads[n++] = ew_contiguous_copy(&g, ts[T_OFFSET]);
    reads[n++] = ew_contiguous_copy(&g, ts[T_SCALE]);
    if (gamma->ndim != 2)
        reads[n++] = ew_contiguous_copy(&g, gamma);
    if (beta && beta->ndim != 2)
        reads[n++] = ew_contiguous_copy(&g, beta);
    const int k = ew_kernel_reading(&g, reads, n);
    ew_kernel_workspace(&g, k, soc->npu_arch == 3510 ? ew_lib_api_workspace(soc)
                                                     : EW_SYS_WORKSPACE);
    const uint64_t count = ew_bytes(ts[T_X], ACL_INT8);
    const int y = ew_output(&g, k, int4 ? (count + 1) / 2 : count);
    ew_copy_out(&g, y, ts[T_Y]->dtype, ts[T_Y], 0);
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnRmsNormQuantGetWorkspaceSize(const aclTensor *x,
                                                            const aclTensor *gamma,
                                                            const aclTensor *beta,
                                                            const aclTensor *scale,
                                                            const aclTensor *offset,
                                                            double epsilon, aclTensor *y,
                                                            uint64_t *workspaceSize,
                                                            aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x, gamma, beta, scale, offset, y};
    /* 0. the out-pointers first (161001); handles are checked before anything reads them */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)) ||
        (st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    /* 1. PreDealData: a rank-2 gamma, then beta, reshaped to [N] (561103 when it cannot be) */
    uint64_t gr = 0, br = 0;
    int64_t gdims[TV_MAX_RANK] = {0}, bdims[TV_MAX_RANK] = {0};
    if ((st = reshape_rank2(gamma, "gamma", &gr, gdims)) ||
        (st = reshape_rank2(beta, "beta", &br, bdims)))
        return st;
    /* 2. CheckParams: NULLs (161001), dtypes, ranks and shapes (161002) */
    if ((st = p1_required(P1, ts, TNAME, 0, T_COUNT)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    const bool regbase = soc->npu_arch == 3510;
    if ((st = check_dtypes(ts, soc, regbase)) ||
        (st = check_shapes(ts, gr, br, gr ? gdims[gr - 1] : 0, gdims, bdims, regbase)))
        return st;

    /* 3. the L0 op's tiling; 4. the ViewCopy of its result into y */
    const int64_t N = gdims[0];
    const rnq_shape sh = {.N = N, .int4 = y->dtype == ACL_INT32 || y->dtype == ACL_INT4};
    rnq_shape got = sh;
    if ((st = regbase ? v2_tiling(x, scale, &got) : v1_tiling(x, epsilon, &got)) ||
        (st = check_view_copy(x, y, regbase)))
        return st;
    if (regbase && (st = int4_y_copy(y, soc)))
        return st;
    /* Stricter off Ascend 950 (docs/emulator.md): the kernel reads scale's and offset's first
     * element (on Ascend 950 the tiling refuses an empty scale) */
    int64_t S = 0;
    if (!regbase && (!numel(scale->dims, scale->ndim, &S) || S == 0))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: scale is empty (the kernel reads its first element "
             "and offset's)", P1);

    rnq_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    int64_t X = 0;
    numel(x->dims, x->ndim, &X);
    const int64_t M = X / N;
    /* per chunk N floats (x), N + N / 64 + 1 (the squares and the binary add's partials, then
     * v) and N bytes: 3 * N + N / 64 + 1 floats cover them; the run's scale and offset:
     * their first elements, or (Ascend 950) one of each per column */
    P->h = (nr_head){.kernel = &RNQ_KERNEL, .call = P2, .names = TNAME, .rows = M, .width = N,
                     .row_floats = 3 * N + N / NR_VECTOR_LANES + 1,
                     .run_floats = regbase ? 2 * N : 2};
    P->M = M;
    P->N = N;
    P->eps = (float)epsilon;
    /* the avgFactor each tiling hands over: RmsNormQuant's in double, RmsNormQuantV2's in
     * float */
    P->avg = regbase ? 1.0f / (float)N : (float)(1.0 / (double)N);
    const char *neg127 = getenv("ASDOPS_QUANT_MIN_NEG_127");
    P->quant_min = neg127 && strcmp(neg127, "1") == 0 ? -127.0f : -128.0f;
    P->int4 = sh.int4;
    P->regbase = regbase;
    P->per_channel = got.per_channel;
    if (regbase) {
        const int64_t xs = (int64_t)aclemu_dtype_size(x->dtype);
        const int64_t ss = (int64_t)aclemu_dtype_size(scale->dtype);
        const int64_t zs = (int64_t)aclemu_dtype_size(offset->dtype);
        P->recompute = !v2_full_load_fits(N, xs, ss, zs);
        P->base_n = P->recompute ? v2_base_n(N, xs, ss, zs) : 0;
    }
    P->m200 = soc->npu_arch == 2002;
    P->ydt = y->dtype;
    snapshot(&P->t[T_X], x, (int)x->ndim - 1);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_BETA], beta, -1);
    snapshot(&P->t[T_SCALE], scale, -1);
    snapshot(&P->t[T_OFFSET], offset, -1);
    if (y->dtype == ACL_INT4)
        int4_bytes_view(&P->t[T_Y], y);
    else
        snapshot(&P->t[T_Y], y, (int)y->ndim - 1);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &RNQ_OPS, P, rnq_workspace(ts, soc, sh.int4), ts, TNAME, T_COUNT, T_Y,
                     workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnRmsNormQuant(void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
