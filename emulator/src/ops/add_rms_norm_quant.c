/*
 * aclnnAddRmsNormQuant for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel.
 *
 * Facts, hicann/ops-nn norm/add_rms_norm_quant:
 * - op_host/op_api/aclnn_add_rms_norm_quant.cpp (the hand-written phase one, followed here in
 *   its order and codes): the out-pointers (L2_DFX_PHASE_1, 161001); CheckParams: NULLs of x1,
 *   x2, gamma, scales1, y1Out, y2Out, xOut (161001); dtypes (161002), one list on every part:
 *   x1, x2, gamma, scales1 (and scales2 when given) FLOAT/FLOAT16/BF16, the zero points INT32/
 *   FLOAT/FLOAT16/BF16, y1Out and y2Out FLOAT8_E4M3FN/FLOAT8_E5M2/HIFLOAT8/INT8 and equal,
 *   xOut FLOAT/FLOAT16/BF16; ranks 1..8 and every dim <= INT32_MAX (CheckDims), x1, x2, gamma,
 *   scales1, then the given optionals, then the outputs (161002); an empty x1, gamma or y2Out:
 *   success, nothing launched (stricter: an empty y2Out beside a non-empty x1 is refused, the
 *   docs' y2Out of x1's shape; see check_docs_relations); then the L0 op (op_api/add_rms_norm_quant.cpp), whose results
 *   are ViewCopy'd into y1Out, y2Out (only with scales2: "dual") and xOut (hicann/ops-math
 *   conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams: equal dtypes,
 *   equal shapes unless both hold one element; a failure is 561103);
 * - the L0 op discards ADD_TO_LAUNCHER_LIST_AICORE's status (hicann/opbase
 *   include/nnopbase/opdev/make_op_executor.h: the macro's value is unused there), so a part or
 *   a dtype combination without a kernel still passes phase one on the device and the copies
 *   then read results no kernel wrote. Stricter (docs/emulator.md): refused in phase one with
 *   561003 (ACLNN_ERR_INNER_FIND_KERNEL_ERROR), as aclnnLayerNorm's V4 case;
 * - op_host/add_rms_norm_quant_def.cpp: Atlas A2/A3 (ascend910b, ascend910_93): x FLOAT16 with
 *   scales FLOAT and zero points INT32, x BF16 with scales BF16 and zero points BF16, x BF16
 *   with scales FLOAT and zero points INT32, y INT8; Atlas inference (ascend310p): x FLOAT16,
 *   scales FLOAT, zero points INT32, y INT8; Ascend 950 (add_rms_norm_quant_apt, arch35): x
 *   FLOAT16/BF16 with scales FLOAT and zero points INT32 or FLOAT, x FLOAT with FLOAT scales
 *   and zero points, x FLOAT16/BF16 with scales and zero points of x's dtype, y INT8,
 *   FLOAT8_E4M3FN, FLOAT8_E5M2 or HIFLOAT8 (the same relations its tiling,
 *   add_rms_norm_quant_tiling_arch35.cpp CheckInputDtype, checks); the Atlas training series:
 *   no kernel;
 * - op_host/add_rms_norm_quant_tiling.cpp (not arch35): numCol = gamma's element count, numRow
 *   the product of x1's leading (rank x1 - rank gamma) dims; rows over the vector cores
 *   (blockFactor = ceil(numRow / cores)); the single-N kernel when blockFactor is 1 (not on
 *   Atlas inference) and numCol <= its UB factor, else split-D when numCol exceeds the normal
 *   UB factor, else normal; no refusal anywhere (epsilon is not checked).
 *
 * The device's numbers (op_kernel/add_rms_norm_quant.h, _single_n.h, _split_d.h,
 * _base.h), per row of N elements, avg = 1.0f / N, eps as a float:
 * - FLOAT16: x = x1 + x2 added in FLOAT16 (one rounding), written to xOut; xf = float(x);
 *   rstd = 1 / sqrt(sum(xf * xf * avg) + eps); h = half(xf * rstd); h = half(h * gamma) (a
 *   FLOAT16 multiply); v = float(h);
 * - BF16: s = float(x1) + float(x2) in float, xOut = bf16(s) ties to even (CAST_RINT); the
 *   normal and split-D kernels norm s, the single-N kernel bf16(s) (_single_n.h's BF16 path
 *   casts the rounded sum back); v = (xn * rstd) * float(gamma) in float;
 * - per output k (y2 first, then y1): t = v / scales_k (divMode) or v * scales_k, in float;
 *   t += zero_points_k (as float) when given (y2's only with scales2); then RoundFloat2Int8:
 *   to INT32 ties to even (CAST_RINT), to FLOAT16, to INT8 truncating: for finite t the
 *   integer nearest t (ties to even) clamped to [-128, 127], the conversions taken to saturate
 *   (the AscendC conversions are not public: docs/emulator.md); NaN written as 0 (assumed, as
 *   aclnnRmsNormQuant's docs give it);
 * - the sum of the squares times avg in the kernel's order (row_sum): ReduceSumFP32's 64 lane
 *   accumulators (normal kernel, BF16 single-N, each split-D slice of ubFactor elements, the
 *   slices' sums added in order), ReduceSumHalfInterval (FLOAT16 single-N).
 *
 * Ascend 950 (op_kernel/arch35: add_rms_norm_quant_regbase.h, _regbase_perf.h,
 * _regbase_split_reduce.h, _regbase_common.h ComputeY; norm_common reduce_common_regbase.h),
 * every dtype widened to float, every step a float operation:
 * - s = float(x1) + float(x2); xOut = s rounded to x's dtype (CAST_RINT: ties to even); the
 *   norm and the quantizations take s itself (unrounded) in every kernel;
 * - var = sum(s * s) * avgFactor (1.0f / (float)N); the full-load ("perf") kernel, chosen by
 *   the tiling for N <= 16384 when one row fits its UB (CalFullLoadBaseM), takes rstd by
 *   ComputeRstdNewtonRaphson with NEED_MAX (var + eps clamped at -99.99; norm_rows.h
 *   nr_rstd_newton_raphson); the normal and split kernels rstd = 1 / sqrt(var + eps);
 * - v = (s * rstd) * gamma; per output k (y1, then y2 with scales2): t = v / scales_k
 *   (divMode) or v * scales_k, t += zero_points_k (INT32 to float CAST_RINT, 16-bit widened);
 * - INT8: float to INT32 (CAST_RINT), to float, to FLOAT16 (CAST_RINT), to INT8
 *   (CAST_TRUNC), all NO_SAT: the nearest integer, ties to even, clamped to [-128, 127] (the
 *   saturation taken, as above); FLOAT8_E4M3FN/E5M2: t directly with castTraitFp322Fp8
 *   (CAST_RINT, saturating; the overflow mode bit set to 0 around it); HIFLOAT8: t directly
 *   with castTraitFp322Hifp8 (CAST_ROUND: ties away from zero, saturating at 2^15; half.h
 *   aclemu_f32_to_hif8_sat);
 * - the L0 op allocates y2 (x1's shape) with scales2 or zeroPoints2 there, and the kernel
 *   writes it (v + zeroPoints2 without scales2), but the op_api copies it into y2Out only
 *   with scales2: without scales2 y2Out is left unwritten, as on the other parts.
 *
 * Ascend 950's sums of the squares s * s, by the kernel the tiling picks (SetTilingParams:
 * regbase_full_load, regbase_split): the full-load kernel by norm_common's
 * CalculateSquareReduceSum (the fold point the power of two below N aligned to a block of x:
 * nr_binary_add_sum); the normal kernel (a row that fits the UB, CalUBTotalSize) by
 * norm_common's ReduceSumRstd over the row padded with zeros to 512 bytes, split at the
 * largest power of two up to that (nr_regbase_row_sum); the split kernel
 * (_regbase_split_reduce.h ComputeFormer) over chunks of powerSplit, each a ReduceSumRstd,
 * gathered in norm_common's 256-entry levels (nr_regbase_split_sum, RmsNorm's split-D order).
 *
 * Kernel: rows are independent and each row's sum has a fixed order, so the split of rows
 * over threads never changes a bit.
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
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_add_rms_norm_quant.h"

#define P1 "aclnnAddRmsNormQuantGetWorkspaceSize"
#define P2 "aclnnAddRmsNormQuant"

/* The kernel's tensors, in the op_api's argument order. */
enum { T_X1, T_X2, T_GAMMA, T_S1, T_S2, T_Z1, T_Z2, T_Y1, T_Y2, T_X, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x1", "x2", "gamma", "scales1", "scales2Optional",
                                           "zeroPoints1Optional", "zeroPoints2Optional",
                                           "y1Out", "y2Out", "xOut"};

/* The tiling's constants (add_rms_norm_quant_tiling.cpp). */
#define UB_SIZE 196608 /* SIZE_OF_UB, the Atlas A2/A3 UB */
#define UB_FREE 1024   /* CUT_UB_FOR_FREE */
/* Ascend 950 (add_rms_norm_quant_tiling_arch35.cpp): the UB (hicann/runtime platform_config
 * cann-dev Ascend950*.ini ub_size), its 32-byte blocks, 64 floats to a vector register, and
 * the full-load kernel's longest row (vecLengthFp32 * vecLengthFp32 * 2 * 2) */
#define UB_950 253952
#define UB_BLOCK_950 32
#define VL_FP32_950 64
#define FULL_LOAD_MAX_950 (VL_FP32_950 * VL_FP32_950 * 4)

typedef struct {
    nr_head h; /* per chunk 4 * N floats (x1, x2, the norm's x, t) and 2 * N bytes */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps, avg;     /* as the kernel receives them */
    aclDataType dtype;  /* x1's */
    bool div_mode;
    bool dual;          /* scales2 given: y2 written */
    bool zp2;           /* y2's zero points (zeroPoints2 and scales2 given) */
    bool norm_rounded;  /* BF16 single-N: the norm over bf16(x1 + x2) */
    bool half_interval; /* FLOAT16 single-N: its sum by ReduceSumHalfInterval */
    int64_t slice;      /* split-D: the row's sum taken over slices of this many (0: whole) */
    bool regbase;       /* Ascend 950: the arch35 kernels' numbers */
    bool full_load;     /* Ascend 950: the full-load kernel (its Newton-Raphson rstd) */
    int64_t power_split; /* Ascend 950's split kernel: its chunk (0: the normal kernel) */
    int64_t power_loop;  /* ... and the power-of-two count of chunks in the row's main part */
    aclDataType ydt;    /* y1Out's (and y2Out's) dtype */
} arq_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* The row's sum of its squares times avg (each Mul, then Muls, rounded) in the order of the
 * kernel's reduction: ReduceSumCustom (base.h ReduceSumFP32: 64 lane accumulators, then one
 * WholeReduceSum) in the normal kernel and the BF16 single-N one; ReduceSumHalfInterval in
 * the FLOAT16 single-N one; split-D's slices each by ReduceSumFP32ToBlock (the same lane
 * accumulators, then BlockReduceSum into 8 block sums) and BlockReduceSumFP32 (those 8 into
 * one), taken as one repeat's tree (8 lanes in a block, then the 8 blocks), the slices' sums
 * added in order from 0 (ComputeFormer's Add onto rstdLocal). sq: N floats of scratch. */
static float row_sum(const arq_payload *P, const float *x, float *sq)
{
    const int64_t N = P->N, slice = P->slice ? P->slice : N;
    float s = 0.0f;
    for (int64_t c = 0; c < N; c += slice) {
        const int64_t n = N - c < slice ? N - c : slice;
        for (int64_t i = 0; i < n; i++) {
            sq[i] = x[c + i] * x[c + i];
            sq[i] *= P->avg;
        }
        const float part = P->half_interval ? nr_sum_half_interval(sq, n)
                                            : nr_sum_lane_blocks(sq, n);
        if (!P->slice)
            return part;
        s += part;
    }
    return s;
}

/* One quantized output of v: (v / scales or v * scales) [+ zero points], to y's dtype (INT8
 * everywhere; Ascend 950 also the FLOAT8 and HIFLOAT8 codes). */
static void quantize_row(int8_t *q, const float *v, int64_t n, const float *scales,
                         const float *zp, bool div_mode, aclDataType ydt)
{
    for (int64_t i = 0; i < n; i++) {
        float t = div_mode ? v[i] / scales[i] : v[i] * scales[i];
        if (zp)
            t += zp[i];
        q[i] = ydt == ACL_FLOAT8_E4M3FN ? (int8_t)aclemu_f32_to_e4m3fn_sat(t)
             : ydt == ACL_FLOAT8_E5M2   ? (int8_t)aclemu_f32_to_e5m2_sat(t)
             : ydt == ACL_HIFLOAT8      ? (int8_t)aclemu_f32_to_hif8_sat(t)
                                        : aclemu_f32_to_int8_sat(t);
    }
}

/* One row's v on Ascend 950 from the float sum s: rstd of the kernel the tiling chose, then
 * (s * rstd) * gamma. */
static void regbase_row(const arq_payload *P, const norm_rows *R, const float *s, float *v)
{
    const int64_t N = P->N;
    float var;
    const int64_t xb = aclemu_dtype_size(P->dtype);
    for (int64_t i = 0; i < N; i++)
        v[i] = s[i] * s[i];
    if (P->full_load) /* CalculateSquareReduceSum, fold point below N aligned to a block */
        var = nr_binary_add_sum(v, N, v + N) * P->avg;
    else if (P->power_split) /* ComputeFormer: chunks of powerSplit, its levels */
        var = nr_regbase_split_sum(v, N, P->power_split, P->power_loop, xb) * P->avg;
    else /* ReduceSumRstd over the row padded to 512 bytes */
        var = nr_regbase_row_sum(v, N, xb) * P->avg;
    const float rstd = P->full_load ? nr_rstd_newton_raphson(var, P->eps, true)
                                    : 1.0f / sqrtf(var + P->eps);
    for (int64_t i = 0; i < N; i++)
        v[i] = (s[i] * rstd) * R->gamma[i];
}

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const arq_payload *P = payload;
    const tdesc *x1 = &P->t[T_X1], *x2 = &P->t[T_X2], *xo = &P->t[T_X];
    const int64_t N = P->N;
    const aclDataType dt = P->dtype;
    float *abuf = nr_chunk_buf(R, chunk), *bbuf = abuf + N, *nbuf = bbuf + N, *v = nbuf + N;
    int8_t *q = (int8_t *)(void *)(v + N);
    const float *s1 = R->run_buf, *s2 = s1 + N, *z1 = s2 + N, *z2 = z1 + N;
    const bool has_z1 = P->t[T_Z1].present;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x1, m), dt, &x1->inner, 0, N, abuf);
        const float *b = get_tile(row_base(x2, m), dt, &x2->inner, 0, N, bbuf);
        float *x = abuf;
        for (int64_t i = 0; i < N; i++)
            x[i] = a[i] + b[i];
        const float *xn = x;
        if (P->regbase) {
            put_tile(row_base(xo, m), dt, ACLEMU_TIES_EVEN, &xo->inner, 0, N, x);
            regbase_row(P, R, x, v);
            quantize_row(q, v, N, s1, has_z1 ? z1 : NULL, P->div_mode, P->ydt);
            store_int8_row(&P->t[T_Y1], m, q, N);
            if (P->dual) {
                quantize_row(q, v, N, s2, P->zp2 ? z2 : NULL, P->div_mode, P->ydt);
                store_int8_row(&P->t[T_Y2], m, q, N);
            }
            continue;
        }
        if (dt == ACL_FLOAT16) {
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, x, N); /* the FLOAT16 Add */
        } else if (P->norm_rounded) {
            memcpy(nbuf, x, (size_t)N * sizeof(float));
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, nbuf, N);
            xn = nbuf;
        }
        put_tile(row_base(xo, m), dt, ACLEMU_TIES_EVEN, &xo->inner, 0, N, x);
        const float rstd = 1.0f / sqrtf(row_sum(P, xn, bbuf) + P->eps);
        for (int64_t i = 0; i < N; i++)
            v[i] = xn[i] * rstd;
        if (dt == ACL_FLOAT16) { /* half(half(x * rstd) * gamma) */
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, v, N);
            for (int64_t i = 0; i < N; i++)
                v[i] *= R->gamma[i];
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, v, N);
        } else {
            for (int64_t i = 0; i < N; i++)
                v[i] *= R->gamma[i];
        }
        if (P->dual) {
            quantize_row(q, v, N, s2, P->zp2 ? z2 : NULL, P->div_mode, P->ydt);
            store_int8_row(&P->t[T_Y2], m, q, N);
        }
        quantize_row(q, v, N, s1, has_z1 ? z1 : NULL, P->div_mode, P->ydt);
        store_int8_row(&P->t[T_Y1], m, q, N);
    }
}

/* N values of a per-channel vector (FLOAT, FLOAT16, BF16 or INT32) as floats into dst. */
static void load_channels(const tdesc *t, int64_t N, float *dst)
{
    if (t->dtype == ACL_INT32) {
        const char *base = view_base(t);
        LAY_WALK(&t->inner, 0, N, {
            for (int64_t j = 0; j < run; j++) {
                int32_t z;
                memcpy(&z, base + (off + j * stride) * 4, 4);
                dst[k + j] = (float)z; /* CAST_NONE: to nearest */
            }
        });
        return;
    }
    const float *f = get_tile(view_base(t), t->dtype, &t->inner, 0, N, dst);
    if (f != dst)
        memcpy(dst, f, (size_t)N * sizeof(float));
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const arq_payload *P = payload;
    const int64_t N = P->N;
    nr_load_gamma(R, &P->t[T_GAMMA], N);
    load_channels(&P->t[T_S1], N, R->run_buf);
    if (P->dual)
        load_channels(&P->t[T_S2], N, R->run_buf + N);
    if (P->t[T_Z1].present)
        load_channels(&P->t[T_Z1], N, R->run_buf + 2 * N);
    if (P->zp2)
        load_channels(&P->t[T_Z2], N, R->run_buf + 3 * N);
    return true;
}

static const nr_kernel ARQ_KERNEL = NR_KERNEL(arq_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops ARQ_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

static const aclDataType X_SCALE[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
static const aclDataType ZERO_POINT[] = {ACL_INT32, ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
static const aclDataType Y_LIST[] = {ACL_FLOAT8_E4M3FN, ACL_FLOAT8_E5M2, ACL_HIFLOAT8,
                                     ACL_INT8};

/* CheckDtypeValid, in the op_api's order (161002). */
static aclnnStatus check_dtypes(const aclTensor *const *ts)
{
    aclnnStatus st;
    for (int i = T_X1; i <= T_S1; i++)
        if ((st = p1_dtype_in(P1, ts[i], TNAME[i], X_SCALE, 3)))
            return st;
    if (ts[T_S2] && (st = p1_dtype_in(P1, ts[T_S2], TNAME[T_S2], X_SCALE, 3)))
        return st;
    for (int i = T_Z1; i <= T_Z2; i++)
        if (ts[i] && (st = p1_dtype_in(P1, ts[i], TNAME[i], ZERO_POINT, 4)))
            return st;
    if ((st = p1_dtype_in(P1, ts[T_Y1], TNAME[T_Y1], Y_LIST, 4)) ||
        (st = p1_dtype_in(P1, ts[T_Y2], TNAME[T_Y2], Y_LIST, 4)))
        return st;
    if (ts[T_Y2]->dtype != ts[T_Y1]->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: y2Out dtype %s must be y1Out's dtype %s", P1,
             qname(ts[T_Y2]->dtype), qname(ts[T_Y1]->dtype));
    return p1_dtype_in(P1, ts[T_X], TNAME[T_X], X_SCALE, 3);
}

static aclnnStatus check_max_rank(const aclTensor *t, const char *name)
{
    if (t->ndim > 8)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is greater than 8", P1, name,
             (unsigned long long)t->ndim);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_min_rank(const aclTensor *t, const char *name)
{
    if (t->ndim < 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is less than 1", P1, name,
             (unsigned long long)t->ndim);
    return ACLNN_SUCCESS;
}

/* CheckDims: no dim above INT32_MAX. */
static aclnnStatus check_dims(const aclTensor *t, const char *name)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] > INT32_MAX)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dim %llu (%lld) is greater than %d", P1, name,
                 (unsigned long long)i, (long long)t->dims[i], INT32_MAX);
    return ACLNN_SUCCESS;
}

/* CheckShapeDim, in the op_api's order (161002). */
static aclnnStatus check_ranks(const aclTensor *const *ts)
{
    aclnnStatus st;
    for (int i = T_X1; i <= T_S1; i++)
        if ((st = check_max_rank(ts[i], TNAME[i])))
            return st;
    for (int i = T_X1; i <= T_S1; i++)
        if ((st = check_min_rank(ts[i], TNAME[i])))
            return st;
    for (int i = T_X1; i <= T_S1; i++)
        if ((st = check_dims(ts[i], TNAME[i])))
            return st;
    for (int i = T_S2; i <= T_Z2; i++)
        if (ts[i] && ((st = check_max_rank(ts[i], TNAME[i])) ||
                      (st = check_min_rank(ts[i], TNAME[i])) ||
                      (st = check_dims(ts[i], TNAME[i]))))
            return st;
    for (int i = T_Y1; i <= T_X; i++)
        if ((st = check_max_rank(ts[i], TNAME[i])))
            return st;
    for (int i = T_Y1; i <= T_X; i++)
        if ((st = check_min_rank(ts[i], TNAME[i])))
            return st;
    for (int i = T_Y1; i <= T_X; i++)
        if ((st = check_dims(ts[i], TNAME[i])))
            return st;
    return ACLNN_SUCCESS;
}

/* Stricter than the code (161002; docs/emulator.md): the docs' relations, which nothing in
 * the code checks (the kernel reads numCol values of every per-channel tensor and x1's
 * layout for x2; an empty y2Out makes the op_api compute nothing). */
static aclnnStatus check_docs_relations(const aclTensor *const *ts, bool div_mode,
                                        const aclemu_soc *soc)
{
    const aclTensor *x1 = ts[T_X1], *g = ts[T_GAMMA], *s1 = ts[T_S1];
    if (ts[T_X2]->dtype != x1->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x2 dtype %s must be x1's dtype %s", P1,
             qname(ts[T_X2]->dtype), qname(x1->dtype));
    if (!same_dims(ts[T_X2]->dims, ts[T_X2]->ndim, x1->dims, x1->ndim))
        return shape_error(P1, "x2", ts[T_X2]->dims, ts[T_X2]->ndim, "must equal x1's shape",
                           x1->dims, x1->ndim);
    if (g->dtype != x1->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s must be x1's dtype %s", P1,
             qname(g->dtype), qname(x1->dtype));
    if (g->ndim > x1->ndim ||
        !same_dims(g->dims, g->ndim, x1->dims + (x1->ndim - g->ndim), g->ndim))
        return shape_error(P1, "gamma", g->dims, g->ndim, "must equal the trailing dims of "
                           "x1's shape", x1->dims, x1->ndim);
    if (!same_dims(s1->dims, s1->ndim, g->dims, g->ndim))
        return shape_error(P1, "scales1", s1->dims, s1->ndim, "must equal gamma's shape",
                           g->dims, g->ndim);
    const aclTensor *s2 = ts[T_S2], *z1 = ts[T_Z1], *z2 = ts[T_Z2];
    if (s2 && s2->dtype != s1->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: scales2Optional dtype %s must be scales1's dtype %s",
             P1, qname(s2->dtype), qname(s1->dtype));
    for (int i = T_S2; i <= T_Z2; i++)
        if (ts[i] && !same_dims(ts[i]->dims, ts[i]->ndim, s1->dims, s1->ndim))
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim, "must equal scales1's "
                               "shape", s1->dims, s1->ndim);
    if (z1 && z2 && z2->dtype != z1->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: zeroPoints2Optional dtype %s must be "
             "zeroPoints1Optional's dtype %s", P1, qname(z2->dtype), qname(z1->dtype));
    /* y2Out's shape where the code compares it with nothing: without scales2, or when the
     * op_api returns before the copies (an empty x1, gamma or y2Out) */
    const aclTensor *y2 = ts[T_Y2];
    int64_t X = 0, N = 0, Y2 = 0;
    const bool counted = numel(x1->dims, x1->ndim, &X) && numel(g->dims, g->ndim, &N) &&
                         numel(y2->dims, y2->ndim, &Y2);
    const bool compared = s2 && counted && X != 0 && N != 0 && Y2 != 0;
    if (!compared && !(counted && Y2 == 1 && X == 1) &&
        !same_dims(y2->dims, y2->ndim, x1->dims, x1->ndim))
        return shape_error(P1, "y2Out", y2->dims, y2->ndim, "must equal x1's shape", x1->dims,
                           x1->ndim);
    if (!div_mode && (soc->npu_arch == 2201 || soc->npu_arch == 2002))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: divMode false is not supported on %s (%s): divMode "
             "must be true there", P1, soc->name, soc->series);
    return ACLNN_SUCCESS;
}

/* Whether the part's definition has a kernel for these dtypes (add_rms_norm_quant_def.cpp):
 * x, scales, zero points (either one given decides its column), y. */
static bool has_kernel(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const aclDataType x = ts[T_X1]->dtype, s = ts[T_S1]->dtype, y = ts[T_Y1]->dtype;
    const aclTensor *z = ts[T_Z1] ? ts[T_Z1] : ts[T_Z2];
    if (ts[T_Z1] && ts[T_Z2] && ts[T_Z1]->dtype != ts[T_Z2]->dtype)
        return false;
    if (soc->npu_arch == 3510) { /* every y of the list; x FLOAT: all FLOAT */
        if (x == ACL_FLOAT)
            return s == ACL_FLOAT && (!z || z->dtype == ACL_FLOAT);
        if (s == ACL_FLOAT)
            return !z || z->dtype == ACL_INT32 || z->dtype == ACL_FLOAT;
        return s == x && (!z || z->dtype == x);
    }
    if (y != ACL_INT8)
        return false;
    if (soc->npu_arch == 2201) {
        if (x == ACL_FLOAT16 || (x == ACL_BF16 && s == ACL_FLOAT))
            return s == ACL_FLOAT && (!z || z->dtype == ACL_INT32);
        return x == ACL_BF16 && s == ACL_BF16 && (!z || z->dtype == ACL_BF16);
    }
    if (soc->npu_arch == 2002)
        return x == ACL_FLOAT16 && s == ACL_FLOAT && (!z || z->dtype == ACL_INT32);
    return false;
}

/* The ViewCopy of an L0 result (x1's shape, dtype dt) into out (561103). */
static aclnnStatus check_view_copy(const aclTensor *out, const char *name, aclDataType dt,
                                   const aclTensor *x1)
{
    if (out->dtype != dt)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s dtype %s must be the result's dtype %s (the "
             "ViewCopy's rule)", P1, name, qname(out->dtype), qname(dt));
    int64_t A = 0, B = 0;
    const bool ones = numel(out->dims, out->ndim, &A) && A == 1 &&
                      numel(x1->dims, x1->ndim, &B) && B == 1;
    if (!ones && !same_dims(out->dims, out->ndim, x1->dims, x1->ndim)) {
        shape_error(P1, name, out->dims, out->ndim, "must be x1's shape (the ViewCopy's rule):",
                    x1->dims, x1->ndim);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    return ACLNN_SUCCESS;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* Ascend 950's tiling (SetTilingParams, CalFullLoadBaseM): whether the full-load kernel runs,
 * i.e. N <= 16384 and at least one row fits the UB beside gamma, the scales and zero points. */
static bool regbase_full_load(const aclTensor *const *ts, int64_t n)
{
    if (n > FULL_LOAD_MAX_950)
        return false;
    const uint64_t N = (uint64_t)n;
    const uint64_t xs = aclemu_dtype_size(ts[T_X1]->dtype);
    const uint64_t qs = aclemu_dtype_size(ts[T_S1]->dtype);
    const aclTensor *z = ts[T_Z1] ? ts[T_Z1] : ts[T_Z2];
    const uint64_t zs = z ? aclemu_dtype_size(z->dtype) : 0;
    const uint64_t aligned = align_up(N, UB_BLOCK_950 / xs), b8 = align_up(N, UB_BLOCK_950);
    uint64_t power = 1; /* the largest power of two <= aligned - 1 */
    while (power * 2 <= aligned - 1)
        power *= 2;
    const uint64_t first_vcadd = align_up((power + VL_FP32_950 - 1) / VL_FP32_950, UB_BLOCK_950);
    const uint64_t scales = ts[T_S2] ? 2 : 1;
    const uint64_t zero_points = (ts[T_Z1] ? 1 : 0) + (ts[T_Z2] ? 1 : 0);
    const uint64_t ys = ts[T_S2] || ts[T_Z2] ? 2 : 1;
    const int64_t last = (int64_t)UB_950 - (int64_t)(aligned * xs + scales * aligned * qs +
                                                       zero_points * aligned * zs +
                                                       8 * UB_BLOCK_950);
    const int64_t per_row = (int64_t)(2 * 3 * aligned * xs + aligned * 4 + 2 * ys * b8 + 4 +
                                      first_vcadd * 4);
    return last / per_row >= 1;
}

/* Ascend 950's CalUBTotalSize for one row of n (beta and resOut never given by this op_api):
 * x1, x2 and xOut padded to 512 bytes, the reduce buffer, gamma, the scales and zero points
 * (all counted at scales1's size), y1 (and y2), then the normal kernel's rstd or the split
 * kernel's rstd, three 256-float level buffers and a 64-float temp. */
static uint64_t regbase_ub_total(const aclTensor *const *ts, uint64_t n, bool split)
{
    const uint64_t xs = aclemu_dtype_size(ts[T_X1]->dtype);
    const uint64_t qs = aclemu_dtype_size(ts[T_S1]->dtype);
    const uint64_t quant_bufs = (ts[T_S2] ? 1 : 0) + (ts[T_Z1] ? 1 : 0) + (ts[T_Z2] ? 1 : 0);
    const uint64_t ra = align_up(n, 512 / xs), b8 = align_up(n, UB_BLOCK_950);
    const uint64_t reduce = align_up(ra / (2 * VL_FP32_950), UB_BLOCK_950 / 4);
    uint64_t total = 3 * ra * xs + reduce * 4 + align_up(n, UB_BLOCK_950 / xs) * xs +
                     (1 + quant_bufs) * align_up(n, UB_BLOCK_950 / qs) * qs + b8 +
                     (ts[T_S2] || ts[T_Z2] ? b8 : 0) + UB_BLOCK_950;
    if (split)
        total += 3 * 4 * VL_FP32_950 * 4 + VL_FP32_950 * 4;
    return total;
}

/* Ascend 950's normal or split kernel (SetTilingParams past the full-load one): normal while
 * one row fits (CalUBTotalSize), else split, whose powerSplit doubles from 512 bytes of x
 * while twice it is at most N and fits, powerLoop the largest power of two with powerLoop *
 * powerSplit <= N. */
static void regbase_split(arq_payload *P, const aclTensor *const *ts)
{
    const uint64_t N = (uint64_t)P->N;
    P->power_split = P->power_loop = 0;
    if (regbase_ub_total(ts, N, false) <= UB_950)
        return;
    uint64_t power = 512 / aclemu_dtype_size(ts[T_X1]->dtype), loop = 1;
    while (power * 2 <= N && regbase_ub_total(ts, power * 2, true) <= UB_950)
        power *= 2;
    while (loop * 2 * power <= N)
        loop *= 2;
    P->power_split = (int64_t)power;
    P->power_loop = (int64_t)loop;
}

/* The tiling's kernel variant (CalcModeAndUbFactor): whether the single-N kernel runs, and
 * split-D's slice (0: not split). */
static void choose_variant(arq_payload *P, const aclemu_soc *soc, bool has_z1)
{
    const uint64_t avail = UB_SIZE - UB_FREE;
    uint64_t opt0 = 0, opt1 = 0;
    if (P->dual) { /* the optional inputs' UB shares (beta is never given by this op_api) */
        opt0 = (has_z1 ? 4 : 0) + 4 + 4 + 2 + (P->zp2 ? 4 : 0);
        opt1 = 4 + 4 + (P->zp2 ? 4 : 0);
    }
    const uint64_t N = (uint64_t)P->N, cores = (uint64_t)aclemu_soc_vector_cores();
    const uint64_t block_factor = ((uint64_t)P->M + cores - 1) / cores;
    uint64_t normal = 8192, single = 12224;
    uint64_t col_tiles = (N + 7679) / 7680;
    uint64_t split = (N + col_tiles * 16 - 1) / (col_tiles * 16) * 16;
    if (opt0) {
        normal = (avail - 256) / (20 + opt0) / 32 * 32;
        split = (avail - 2560) / (22 + opt0) / 32 * 32;
    }
    if (opt1)
        single = avail / (16 + opt1) / 32 * 32;
    P->norm_rounded = P->half_interval = false;
    P->slice = 0;
    if (block_factor == 1 && soc->npu_arch != 2002 && N <= single) {
        P->norm_rounded = P->dtype == ACL_BF16;
        P->half_interval = P->dtype == ACL_FLOAT16; /* ProcessFp16; BF16 runs ProcessBf16 */
    } else if (N > normal)
        P->slice = (int64_t)split;
}

/* The device's phase-one workspace (op_api/aclnn_add_rms_norm_quant.cpp, add_rms_norm_quant.cpp):
 * Contiguous copies of strided x1, x2, gamma, scales1, scales2, zeroPoints1, zeroPoints2; the
 * kernel with its tiling workspace (add_rms_norm_quant_tiling.cpp: 256 bytes + 16 MiB
 * hard-coded; Ascend 950, add_rms_norm_quant_tiling_arch35.cpp: none of its own plus
 * GetLibApiWorkSpaceSize) and its results y1, y2 (one-byte dtypes, x1's shape when dual, else
 * shaped {1}; dual: scales2 given, on Ascend 950 also zeroPoints2), x (x1's dtype); ViewCopy
 * of y1, of y2 only when scales2 is given, of x. */
static uint64_t arq_workspace(const aclTensor *const *ts, const aclemu_soc *soc)
{
    ew_graph g = ew_graph_on(soc->npu_arch);
    int reads[T_Y1];
    for (int i = 0; i < T_Y1; i++)
        reads[i] = ew_contiguous_copy(&g, ts[i]);
    const int k = ew_kernel_reading(&g, reads, T_Y1);
    const bool regbase = soc->npu_arch == 3510;
    ew_kernel_workspace(&g, k, regbase ? ew_lib_api_workspace(soc) : 256 + EW_SYS_WORKSPACE);
    const uint64_t count = ew_bytes(ts[T_X1], ACL_INT8);
    const bool dual = ts[T_S2] || (regbase && ts[T_Z2]);
    const int y1 = ew_output(&g, k, count);
    const int y2 = ew_output(&g, k, dual ? count : 1);
    const int x = ew_output(&g, k, ew_bytes(ts[T_X1], ts[T_X1]->dtype));
    ew_copy_out(&g, y1, ts[T_Y1]->dtype, ts[T_Y1], count);
    if (ts[T_S2])
        ew_copy_out(&g, y2, ts[T_Y2]->dtype, ts[T_Y2], count);
    ew_copy_out(&g, x, ts[T_X1]->dtype, ts[T_X], count);
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormQuantGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma, const aclTensor *scales1,
    const aclTensor *scales2Optional, const aclTensor *zeroPoints1Optional,
    const aclTensor *zeroPoints2Optional, int64_t axis, double epsilon, bool divMode,
    aclTensor *y1Out, aclTensor *y2Out, aclTensor *xOut, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    (void)axis; /* the docs: only -1 is supported, any other value has no effect */
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x1, x2, gamma, scales1, scales2Optional,
                                    zeroPoints1Optional, zeroPoints2Optional, y1Out, y2Out,
                                    xOut};
    /* 0. the out-pointers first (161001); handles are checked before anything reads them */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)) ||
        (st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    /* 1. CheckParams: NULLs (161001), dtypes, ranks (161002) */
    if ((st = p1_required(P1, ts, TNAME, T_X1, T_S2)) ||
        (st = p1_required(P1, ts, TNAME, T_Y1, T_COUNT)) || (st = check_dtypes(ts)) ||
        (st = check_ranks(ts)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    /* 2. stricter: the docs' relations (161002) */
    if ((st = check_docs_relations(ts, divMode, soc)))
        return st;
    /* 3. an empty x1, gamma or y2Out: success, nothing launched (row 2 leaves an empty x1
     * the only way) */
    int64_t X = 0, N = 0, Y2 = 0;
    if (!numel(x1->dims, x1->ndim, &X) || !numel(gamma->dims, gamma->ndim, &N) ||
        !numel(y2Out->dims, y2Out->ndim, &Y2))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", P1);
    const bool empty = X == 0 || N == 0 || Y2 == 0;
    const bool dual = scales2Optional != NULL;
    if (!empty) {
        /* 4. the L0 op's kernel (stricter: 561003 where the device has none; on Ascend 950
         * also its tiling's dtype relations, which coincide with the def's combinations) */
        if (!has_kernel(ts, soc))
            FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): no kernel "
                 "for x1 %s, scales1 %s, zero points %s, y %s there", P1, soc->name,
                 soc->series, qname(x1->dtype), qname(scales1->dtype),
                 zeroPoints1Optional   ? qname(zeroPoints1Optional->dtype)
                 : zeroPoints2Optional ? qname(zeroPoints2Optional->dtype)
                                       : "none",
                 qname(y1Out->dtype));
        /* stricter (the docs' constraint on Atlas inference parts): rows of 32 bytes at
         * least, the int8 results' limiting */
        if (soc->npu_arch == 2002 && N < 32)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x1's norm length %lld is under 32 bytes of the "
                 "INT8 results on %s (%s): at least 32 elements", P1, (long long)N, soc->name,
                 soc->series);
        /* 5. the ViewCopies of the results: y1, y2 (dual only), x */
        if ((st = check_view_copy(y1Out, "y1Out", y1Out->dtype, x1)) ||
            (dual && (st = check_view_copy(y2Out, "y2Out", y1Out->dtype, x1))) ||
            (st = check_view_copy(xOut, "xOut", x1->dtype, x1)))
            return st;
    }

    arq_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    const int64_t M = empty ? 0 : X / N;
    if (empty)
        N = 0;
    /* 4 * N floats and 2 * N bytes per chunk: 5 * N floats cover them */
    P->h = (nr_head){.kernel = &ARQ_KERNEL, .call = P2, .names = TNAME, .rows = M, .width = N,
                     .row_floats = 5 * N, .run_floats = 4 * N, .no_kernel = empty};
    P->M = M;
    P->N = N;
    P->eps = (float)epsilon;
    P->avg = N == 0 ? 0.0f : 1.0f / (float)N;
    P->dtype = x1->dtype;
    P->div_mode = divMode;
    P->dual = dual;
    P->zp2 = dual && zeroPoints2Optional != NULL;
    P->regbase = soc->npu_arch == 3510;
    P->ydt = y1Out->dtype;
    if (!empty && P->regbase) {
        P->full_load = regbase_full_load(ts, N);
        if (!P->full_load)
            regbase_split(P, ts);
    } else if (!empty) {
        choose_variant(P, soc, zeroPoints1Optional != NULL);
    }
    if (!empty) {
        const int split = (int)(x1->ndim - gamma->ndim);
        for (int i = 0; i < T_COUNT; i++) {
            const bool channel = i >= T_GAMMA && i <= T_Z2;
            snapshot(&P->t[i], ts[i], channel ? -1 : split);
        }
        if (!dual) /* y2 is neither written nor copied */
            P->t[T_Y2].present = false;
    }
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &ARQ_OPS, P, empty ? 0 : arq_workspace(ts, soc), ts, TNAME, T_COUNT,
                     T_Y1, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormQuant(void *workspace, uint64_t workspaceSize,
                                               aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
