/*
 * aclnnAddLayerNormQuant for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel.
 *
 * Facts, hicann/ops-nn norm/add_layer_norm_quant:
 * - op_host/op_api/aclnn_add_layer_norm_quant.cpp (the hand-written phase one, followed here in
 *   its order and codes): the out-pointers (L2_DFX_PHASE_1, 161001); CheckParams:
 *   CheckPlatform first: only IsRegbase parts (Ascend 950) run the op_api, every other part
 *   gets 161002 before any argument is looked at (the docs: Atlas A2/A3 and the rest "not
 *   supported"; the A2/A3 kernels of op_kernel/ are reached through the graph, not aclnn);
 *   NULLs of x1, x2, gamma, beta, y1Out, y2Out, xOut, outScales1Out, outScales2Out, quantMode
 *   (161001); quantMode starting with "dynamic" or "static" (strncmp: a prefix; 161002);
 *   CheckDtypeValid, CheckShapeRel, CheckShapeEqs, CheckOptCombValid (161002, in that order);
 *   an empty outScales1Out: success, nothing launched; another empty x1, gamma, y2Out or
 *   outScales2Out: the L0 op with the empty-input kernel, whose results are copied only in
 *   dynamic mode (the static mode writes nothing visible; op_kernel/arch35/
 *   add_layer_norm_quant_empty_input_kernel.h: each row's out scales -inf, and its tiling,
 *   add_layer_norm_quant_empty_tiling.cpp, checks no epsilon); else the L0 op
 *   (op_api/add_layer_norm_quant.cpp), y1 and xOut copied, y2 with scales2 ("dual");
 * - the L0 op discards ADD_TO_LAUNCHER_LIST_AICORE's status (hicann/opbase make_op_executor.h),
 *   so what the tiling refuses (op_host/add_layer_norm_quant_tiling_arch35.cpp GetAttrs:
 *   (float)epsilon <= 0, quantMode not exactly "static" or "dynamic"; CheckTensorAndAttr: a
 *   rank-0 x1 or gamma) and what the definition has no kernel for
 *   (op_host/add_layer_norm_quant_def.cpp config_950: x FLOAT16 with scales FLOAT16 or FLOAT,
 *   BF16 with BF16 or FLOAT, FLOAT with FLOAT) passes phase one on the device and leaves the
 *   outputs unwritten. Stricter (docs/emulator.md): refused in phase one, 561002 and 561003;
 * - the tiling's kernel choice (DoUbTiling, CheckStcQuantFullLoadTiling,
 *   CheckDynQuantFullLoadTiling): the full-load kernel when one row fits the UB beside gamma,
 *   beta, the scales and zero points, else Welford.
 *
 * The device's numbers, static mode, the full-load kernel (op_kernel/arch35/
 * add_layer_norm_static_quant_regbase_full_load_kernel.h, add_layer_norm_quant_regbase_helper.h
 * VFCalcMeanVarFast / VFCalcMeanVar, add_layer_norm/op_kernel/arch35/
 * add_layer_norm_regbase_common.h LoadInputsToReg), every step a float operation:
 * - x = float(x1) + float(x2), with a bias (float(x2) + float(bias)) + float(x1); xOut = x
 *   rounded to x1's dtype (CAST_RINT: ties to even), written only with additionalOutput;
 * - mean = the sum of x[i] / N (a true division each), var = the sum of ((x[i] - mean)^2) / N,
 *   both summed as the kernel's binary add does (norm_rows.h nr_binary_add_sum);
 * - rstd by ComputeRstdNewtonRaphson without the clamp (norm_rows.h nr_rstd_newton_raphson);
 * - v = ((x - mean) * rstd) * gamma + beta; per output k (y1, then y2 with scales2): t = v /
 *   scales_k (divMode) or v * scales_k, t += zeroPoints_k when given; Round2Int8: to INT32
 *   (CAST_RINT), FLOAT16, INT8 (half.h aclemu_f32_to_int8_sat: ties to even, saturating).
 *
 * Dynamic mode, the full-load kernel (op_kernel/arch35/
 * add_layer_norm_dynamic_quant_regbase_full_load_kernel.h VFCalcYNormlization, VFCalcYQuant;
 * add_layer_norm_quant_regbase_helper.h ComputeDynamicQuantWith(Out)Smooth, Round2Int8): x,
 * xOut, mean, rstd and v as above; per output k (y1 with scales1 or none, y2 with scales2):
 * t = v * scales_k (v without scales1), scale_k = max |t| over the row (from a zeroed
 * register) * (float)(1.0 / 127.0), written to outScales_k's row; y_k = Round2Int8(t /
 * scale_k) (Div; a zero row: 0 / 0, written as 0 as a NaN is). The dual kernel keeps v and
 * multiplies again by the scales, the same float product.
 * The Welford kernels (rows too long for the full-load ones: op_kernel/arch35/
 * add_layer_norm_{static,dynamic}_quant_regbase_welford_kernel.h, add_layer_norm's arch35
 * add_layer_norm_regbase_common.h VFWelfordParallelUpdateCommon and
 * VFWelfordParallelFinalizeNonAlign, the helper's VFWelfordParallelFinalizeAlign,
 * norm_common's DichotomyAdd): the row's mean and rstd by Welford updates over the tiling's
 * column slices and their finalize (welford_stats below), then a second pass over the row with
 * the full-load kernels' per-element chain (static: x + (-mean), the same float; dynamic: the
 * smoothed rows kept in a float workspace while the row's max runs over the slices, the same
 * values).
 *
 * Kernel: rows are independent; each row's sums have a fixed order, so the split of rows over
 * threads never changes a bit.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "exec_workspace.h"
#include "phase_one.h"
#include "convert.h"
#include "half.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_add_layer_norm_quant.h"

#define P1 "aclnnAddLayerNormQuantGetWorkspaceSize"
#define P2 "aclnnAddLayerNormQuant"

/* The op_api's tensors, in its argument order. */
enum { T_X1, T_X2, T_GAMMA, T_BETA, T_BIAS, T_S1, T_S2, T_Z1, T_Z2, T_Y1, T_Y2, T_X, T_OS1,
       T_OS2, T_COUNT };
static const char *const TNAME[T_COUNT] = {
    "x1", "x2", "gamma", "beta", "biasOptional", "scales1Optional", "scales2Optional",
    "zeroPoints1Optional", "zeroPoints2Optional", "y1Out", "y2Out", "xOut", "outScales1Out",
    "outScales2Out"};

/* Ascend 950's tiling constants (add_layer_norm_quant_tiling_arch35.cpp): the UB (hicann/
 * runtime platform_config Ascend950*.ini ub_size), its 32-byte blocks, 64 floats to a vector
 * register, UB_RESERVED_BYTE. */
#define UB_950 253952
#define UB_BLOCK 32
#define VL_FP32 NR_VECTOR_LANES
#define UB_RESERVED 256

typedef struct {
    nr_head h; /* per chunk 4 * N floats (x1 then x, x2 then the Welford means then d, bias
                * then the Welford M2s then v, the sums' terms), the binary add's partial
                * sums, N bytes */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps;        /* as the kernel receives it */
    bool div_mode;
    bool dyn;         /* quantMode "dynamic": per-row scales, outScales written */
    bool empty_rows;  /* dynamic mode, rows of 0 elements: the empty-input kernel */
    bool dual;        /* scales2 given: y2 written */
    bool bias_rows;   /* a bias of x1's rank above gamma's: one row per row */
    bool write_x;     /* additionalOutput */
    int64_t per_loop; /* the Welford kernel's colsPerLoop (0: the full-load kernel) */
    int64_t loops;    /* its colsLoopCount */
    int64_t tail;     /* its colsTail */
} alq_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* The full-load kernels' mean and rstd of a row x[0..N) (VFCalcMeanVar(Fast)): mean the sum
 * of x[i] / N, var the sum of ((x[i] - mean)^2) / N (each a true division: Div), both by the
 * binary add; t: N floats of scratch. */
static void full_load_stats(const float *x, int64_t N, float eps, float *t, float *partial,
                            float *mean, float *rstd)
{
    const float n = (float)N;
    for (int64_t i = 0; i < N; i++)
        t[i] = x[i] / n;
    const float m = nr_binary_add_sum(t, N, partial);
    for (int64_t i = 0; i < N; i++) {
        const float d = x[i] - m;
        t[i] = (d * d) / n;
    }
    *mean = m;
    *rstd = nr_rstd_newton_raphson(nr_binary_add_sum(t, N, partial), eps, false);
}

/* The Welford kernels' mean and rstd of a row x[0..N) cut into `loops` slices of `per`
 * columns, the last of `tail` (the tiling's colsPerLoop, colsLoopCount, colsTail):
 * - per slice j (count = j + 1, scale = 1.0f / count), add_layer_norm's arch35
 *   VFWelfordParallelUpdateCommon on each of its columns c: d1 = x - mean_c, mean_c += d1 *
 *   scale, m2_c += d1 * (x - mean_c) (the first slice from zeros);
 * - then the finalize over the `per` columns (reduceScale = 1.0f / N): equal slices
 *   (VFWelfordParallelFinalizeAlign) mean = the binary add of mean_c * (1.0f / per), var =
 *   that of (m2_c + (mean_c - mean)^2 * count) * reduceScale; a shorter last slice
 *   (VFWelfordParallelFinalizeNonAlign, situations 1 to 3: they differ in which registers
 *   they visit, not in a lane's arithmetic), cnt = count - 1 and tailCnt = cnt + 1: columns
 *   below the tail weigh mean_c * (tailCnt * reduceScale) and count tailCnt, the others
 *   mean_c * (cnt * reduceScale) and cnt, except in the 64-column register holding the tail's
 *   end, whose columns below it take cnt's product times coeff = tailCnt / cnt (the kernel's
 *   masked Muls by coeff);
 * - rstd by ComputeRstdNewtonRaphsonReg<false>.
 * wmean, wm2, t: `per` floats each of scratch. */
static void welford_stats(const alq_payload *P, const float *x, float *wmean, float *wm2,
                          float *t, float *partial, float *mean, float *rstd)
{
    const int64_t per = P->per_loop, loops = P->loops, tail = P->tail;
    for (int64_t j = 0; j < loops; j++) {
        const int64_t len = j == loops - 1 ? tail : per;
        const float scale = 1.0f / (float)(j + 1);
        const float *xs = x + j * per;
        for (int64_t c = 0; c < len; c++) {
            const float m0 = j ? wmean[c] : 0.0f, v0 = j ? wm2[c] : 0.0f;
            const float d1 = xs[c] - m0;
            const float step = d1 * scale;
            const float m = m0 + step;
            const float d3 = xs[c] - m;
            const float prod = d1 * d3;
            wmean[c] = m;
            wm2[c] = v0 + prod;
        }
    }
    const bool align = tail == per;
    const float reduce_scale = 1.0f / (float)P->N;
    const float cnt = (float)(align ? loops : loops - 1), tail_cnt = cnt + 1.0f;
    const float coeff = tail_cnt / cnt, align_scale = 1.0f / (float)per;
    const float count_scale = cnt * reduce_scale, tail_count_scale = tail_cnt * reduce_scale;
    /* the register holding the tail's end (none when the tail ends on a register) */
    const int64_t edge = align || tail % VL_FP32 == 0 ? -1 : tail / VL_FP32;
    for (int64_t c = 0; c < per; c++) {
        if (align)
            t[c] = wmean[c] * align_scale;
        else if (c >= tail)
            t[c] = wmean[c] * count_scale;
        else if (c / VL_FP32 == edge) {
            const float w = wmean[c] * count_scale;
            t[c] = w * coeff;
        } else
            t[c] = wmean[c] * tail_count_scale;
    }
    const float m = nr_binary_add_sum(t, per, partial);
    for (int64_t c = 0; c < per; c++) {
        const float d = wmean[c] - m;
        float sq = d * d;
        if (align || c >= tail)
            sq = sq * cnt;
        else if (c / VL_FP32 == edge) {
            sq = sq * cnt;
            sq = sq * coeff;
        } else
            sq = sq * tail_cnt;
        const float corrected = wm2[c] + sq;
        t[c] = corrected * reduce_scale;
    }
    *mean = m;
    *rstd = nr_rstd_newton_raphson(nr_binary_add_sum(t, per, partial), P->eps, false);
}

/* One quantized output of v: (v / scales or v * scales) [+ zero points], to INT8. */
static void quantize_row(int8_t *q, const float *v, int64_t n, const float *scales,
                         const float *zp, bool div_mode)
{
    for (int64_t i = 0; i < n; i++) {
        float t = div_mode ? v[i] / scales[i] : v[i] * scales[i];
        if (zp)
            t += zp[i];
        q[i] = aclemu_f32_to_int8_sat(t);
    }
}

/* The dynamic kernels' scale from a row's max |t|: times the float nearest 1/127
 * (VFCalcYNormlization's Muls by quantConst). */
#define DYN_QUANT_FACTOR ((float)(1.0 / 127.0))

/* One dynamic output: t = v * scales (v without scales), the row's scale max |t| * 1/127 into
 * outScales' element m, y = Round2Int8(t / scale) into y's row m (t: N floats of scratch). */
static void dynamic_quantize_row(const alq_payload *P, const float *v, const float *scales,
                                 float *t, int8_t *q, int y, int out_scale, int64_t m)
{
    const int64_t N = P->N;
    const float s = nr_smoothed_abs_max(v, scales, t, N) * DYN_QUANT_FACTOR;
    memcpy(row_base(&P->t[out_scale], m), &s, sizeof s);
    for (int64_t i = 0; i < N; i++)
        q[i] = aclemu_f32_to_int8_sat(t[i] / s);
    store_int8_row(&P->t[y], m, q, N);
}

/* The empty-input kernel (dynamic mode, rows of 0 elements): each row's out scales -inf
 * (add_layer_norm_quant_empty_input_kernel.h: NegativeInfinity). */
static void write_empty_rows(const alq_payload *P, int64_t begin, int64_t end)
{
    const float s = -INFINITY;
    for (int64_t m = begin; m < end; m++) {
        memcpy(row_base(&P->t[T_OS1], m), &s, sizeof s);
        if (P->dual)
            memcpy(row_base(&P->t[T_OS2], m), &s, sizeof s);
    }
}

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const alq_payload *P = payload;
    const tdesc *x1 = &P->t[T_X1], *x2 = &P->t[T_X2], *bias = &P->t[T_BIAS], *xo = &P->t[T_X];
    const int64_t N = P->N;
    const aclDataType dt = x1->dtype;
    float *abuf = nr_chunk_buf(R, chunk), *bbuf = abuf + N, *cbuf = bbuf + N;
    float *tbuf = cbuf + N, *partial = tbuf + N;
    int8_t *q = (int8_t *)(void *)(partial + N / VL_FP32 + 1);
    const float *s1 = R->run_buf, *s2 = s1 + N, *z1 = s2 + N, *z2 = z1 + N;
    const bool has_z1 = P->t[T_Z1].present, has_z2 = P->t[T_Z2].present;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x1, m), dt, &x1->inner, 0, N, abuf);
        const float *b = get_tile(row_base(x2, m), dt, &x2->inner, 0, N, bbuf);
        float *x = abuf; /* a is abuf unless FLOAT in place: the sum goes to abuf either way */
        if (bias->present) {
            const float *c = get_tile(P->bias_rows ? row_base(bias, m) : view_base(bias), dt,
                                      &bias->inner, 0, N, cbuf);
            for (int64_t i = 0; i < N; i++)
                x[i] = (b[i] + c[i]) + a[i];
        } else {
            for (int64_t i = 0; i < N; i++)
                x[i] = a[i] + b[i];
        }
        if (P->write_x)
            put_tile(row_base(xo, m), dt, ACLEMU_TIES_EVEN, &xo->inner, 0, N, x);
        float mean, rstd;
        if (P->per_loop) /* the Welford means and M2s in bbuf and cbuf, free from here */
            welford_stats(P, x, bbuf, cbuf, tbuf, partial, &mean, &rstd);
        else
            full_load_stats(x, N, P->eps, tbuf, partial, &mean, &rstd);
        float *d = bbuf, *v = cbuf;
        nr_center(d, x, N, mean);
        nr_scale_shift(v, d, N, rstd, R->gamma, R->beta);
        if (P->dyn) { /* d is free from here: the scratch of t */
            dynamic_quantize_row(P, v, P->t[T_S1].present ? s1 : NULL, d, q, T_Y1, T_OS1, m);
            if (P->dual)
                dynamic_quantize_row(P, v, s2, d, q, T_Y2, T_OS2, m);
            continue;
        }
        quantize_row(q, v, N, s1, has_z1 ? z1 : NULL, P->div_mode);
        store_int8_row(&P->t[T_Y1], m, q, N);
        if (P->dual) {
            quantize_row(q, v, N, s2, has_z2 ? z2 : NULL, P->div_mode);
            store_int8_row(&P->t[T_Y2], m, q, N);
        }
    }
}

/* N values of a per-channel vector (FLOAT, FLOAT16 or BF16) as floats into dst. */
static void load_channels(const tdesc *t, int64_t N, float *dst)
{
    const float *f = get_tile(view_base(t), t->dtype, &t->inner, 0, N, dst);
    if (f != dst)
        memcpy(dst, f, (size_t)N * sizeof(float));
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const alq_payload *P = payload;
    const int64_t N = P->N;
    if (P->empty_rows) { /* no row buffers (width 0): the rows run here */
        write_empty_rows(P, 0, P->M);
        return false;
    }
    nr_load_gamma(R, &P->t[T_GAMMA], N);
    nr_load_beta(R, &P->t[T_BETA], N);
    if (P->t[T_S1].present)
        load_channels(&P->t[T_S1], N, R->run_buf);
    if (P->dual)
        load_channels(&P->t[T_S2], N, R->run_buf + N);
    if (P->t[T_Z1].present)
        load_channels(&P->t[T_Z1], N, R->run_buf + 2 * N);
    if (P->t[T_Z2].present)
        load_channels(&P->t[T_Z2], N, R->run_buf + 3 * N);
    return true;
}

static const nr_kernel ALQ_KERNEL = NR_KERNEL(alq_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops ALQ_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

static const aclDataType STATIC_LIST[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
static const aclDataType DYNAMIC_LIST[] = {ACL_FLOAT16, ACL_BF16};

/* OP_CHECK_DTYPE_NOT_MATCH: t (when given) of dtype want (161002). */
static aclnnStatus dtype_is(const aclTensor *t, int i, aclDataType want, const char *whose)
{
    if (t && t->dtype != want)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be %s %s", P1, TNAME[i],
             qname(t->dtype), whose, qname(want));
    return ACLNN_SUCCESS;
}

/* CheckDtypeValid, in the op_api's order (161002). */
static aclnnStatus check_dtypes(const aclTensor *const *ts, bool dyn)
{
    const aclDataType *list = dyn ? DYNAMIC_LIST : STATIC_LIST;
    const int n = dyn ? 2 : 3;
    const aclDataType x = ts[T_X1]->dtype;
    aclnnStatus st;
    if ((st = p1_dtype_in(P1, ts[T_X1], TNAME[T_X1], list, n)))
        return st;
    static const int LIKE_X1[] = {T_X2, T_GAMMA, T_BETA, T_BIAS};
    for (int k = 0; k < 4; k++)
        if ((st = dtype_is(ts[LIKE_X1[k]], LIKE_X1[k], x, "x1's dtype")))
            return st;
    if ((st = dtype_is(ts[T_Y1], T_Y1, ACL_INT8, "")) ||
        (st = dtype_is(ts[T_Y2], T_Y2, ACL_INT8, "")) ||
        (st = dtype_is(ts[T_X], T_X, x, "x1's dtype")) ||
        (st = dtype_is(ts[T_OS1], T_OS1, ACL_FLOAT, "")) ||
        (st = dtype_is(ts[T_OS2], T_OS2, ACL_FLOAT, "")))
        return st;
    const aclTensor *s1 = ts[T_S1];
    if (!s1)
        return ACLNN_SUCCESS;
    if ((st = p1_dtype_in(P1, s1, TNAME[T_S1], list, n)) ||
        (dyn && (st = dtype_is(s1, T_S1, x, "x1's dtype"))))
        return st;
    for (int i = T_S2; i <= T_Z2; i++)
        if ((st = dtype_is(ts[i], i, s1->dtype, "scales1Optional's dtype")))
            return st;
    return ACLNN_SUCCESS;
}

/* CheckShapeRel (161002). */
static aclnnStatus check_shape_rel(const aclTensor *const *ts, bool dyn)
{
    const aclTensor *x1 = ts[T_X1], *g = ts[T_GAMMA], *os1 = ts[T_OS1];
    if (x1->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x1 rank %llu is above %d", P1,
             (unsigned long long)x1->ndim, TV_MAX_RANK);
    if (g->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma rank %llu is above %d", P1,
             (unsigned long long)g->ndim, TV_MAX_RANK);
    if (g->ndim > x1->ndim ||
        !same_dims(g->dims, g->ndim, x1->dims + (x1->ndim - g->ndim), g->ndim))
        return shape_error(P1, "gamma", g->dims, g->ndim, "must equal the trailing dims of "
                           "x1's shape", x1->dims, x1->ndim);
    if (!dyn)
        return ACLNN_SUCCESS;
    if (x1->ndim < 2 || g->ndim != 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: in dynamic mode x1's rank (%llu) must be at least 2 "
             "and gamma's (%llu) 1", P1, (unsigned long long)x1->ndim,
             (unsigned long long)g->ndim);
    if (!same_dims(os1->dims, os1->ndim, x1->dims, x1->ndim - 1))
        return shape_error(P1, "outScales1Out", os1->dims, os1->ndim, "must be x1's shape "
                           "without its last dim:", x1->dims, x1->ndim);
    return ACLNN_SUCCESS;
}

/* CheckShapeEqs (161002). */
static aclnnStatus check_shape_eqs(const aclTensor *const *ts, bool dyn)
{
    const aclTensor *x1 = ts[T_X1], *g = ts[T_GAMMA];
    const bool dual = ts[T_S2] != NULL;
    for (int i = T_X2; i <= T_OS2; i++) {
        const bool like_x1 = i == T_X2 || i == T_Y1 || i == T_X || (dual && i == T_Y2);
        if (like_x1 && !same_dims(ts[i]->dims, ts[i]->ndim, x1->dims, x1->ndim))
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim, "must equal x1's shape",
                               x1->dims, x1->ndim);
    }
    for (int i = T_BETA; i <= T_Z2; i++)
        if (i != T_BIAS && ts[i] && !same_dims(ts[i]->dims, ts[i]->ndim, g->dims, g->ndim))
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must equal gamma's shape", g->dims, g->ndim);
    const aclTensor *b = ts[T_BIAS];
    if (b && !same_dims(b->dims, b->ndim, g->dims, g->ndim) &&
        !same_dims(b->dims, b->ndim, x1->dims, x1->ndim))
        return shape_error(P1, "biasOptional", b->dims, b->ndim, "must equal gamma's shape or "
                           "x1's shape", x1->dims, x1->ndim);
    const aclTensor *o1 = ts[T_OS1], *o2 = ts[T_OS2];
    if (dual && dyn && !same_dims(o2->dims, o2->ndim, o1->dims, o1->ndim))
        return shape_error(P1, "outScales2Out", o2->dims, o2->ndim,
                           "must equal outScales1Out's shape", o1->dims, o1->ndim);
    return ACLNN_SUCCESS;
}

/* CheckOptCombValid (161002): static: scales1 with both zero points or neither beside
 * scales2, zeroPoints1 or nothing beside it alone; dynamic: no zero points, scales2 only with
 * scales1. */
static aclnnStatus check_combination(const aclTensor *const *ts, bool dyn)
{
    const bool s1 = ts[T_S1], s2 = ts[T_S2], z1 = ts[T_Z1], z2 = ts[T_Z2];
    const bool ok = dyn ? !z1 && !z2 && (s1 || !s2)
                        : s1 && (s2 ? z1 == z2 : !z2);
    if (!ok)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the optional inputs given (scales1 %d, scales2 %d, "
             "zeroPoints1 %d, zeroPoints2 %d) are not a valid combination in %s mode: %s", P1,
             s1, s2, z1, z2, dyn ? "dynamic" : "static",
             dyn ? "no zero points; scales2Optional only beside scales1Optional"
                 : "scales1Optional always; with scales2Optional both zero points or neither, "
                   "without it at most zeroPoints1Optional");
    return ACLNN_SUCCESS;
}

/* config_950's (x, scales) combinations (add_layer_norm_quant_def.cpp). */
static bool has_kernel(aclDataType x, aclDataType s)
{
    return s == x || (s == ACL_FLOAT && (x == ACL_FLOAT16 || x == ACL_BF16));
}

static int64_t align_up(int64_t v, int64_t a)
{
    return (v + a - 1) / a * a;
}

/* The Welford kernel's column slices of a row (per_loop 0: the full-load kernel). */
typedef struct {
    int64_t per_loop, loops, tail;
} alq_slices;

/* DoUbTiling's kernel choice: CheckStcQuantFullLoadTiling / CheckDynQuantFullLoadTiling,
 * whether one row fits the UB beside the per-channel tensors; else
 * CheckStcQuantWelfordTiling / CheckDynQuantWelfordTiling's slices: colsPerLoop the UB (less
 * the dynamic kernel's per-row blocks) over the bytes one column of every double-buffered
 * slice takes, rounded down to 64; colsLoopCount = ceil(N / colsPerLoop); colsPerLoop = N /
 * colsLoopCount when that divides evenly ("aligned" finalize); colsTail = N mod colsPerLoop,
 * or a whole slice. */
static alq_slices ub_tiling(const aclTensor *const *ts, int64_t N, bool dyn)
{
    const int64_t xs = (int64_t)aclemu_dtype_size(ts[T_X1]->dtype);
    const aclTensor *bias = ts[T_BIAS], *g = ts[T_GAMMA], *s1 = ts[T_S1];
    const int64_t ss = s1 ? (int64_t)aclemu_dtype_size(s1->dtype) : 4; /* FLOAT without */
    const bool elewise = bias && bias->ndim != g->ndim;
    const int64_t weights = 2 + (bias && bias->ndim == 1 ? 1 : 0);
    const int64_t outs = ts[T_S2] ? 2 : 1;
    const int64_t quants = dyn ? (s1 ? 1 : 0) + (ts[T_S2] ? 1 : 0)
                               : 1 + (ts[T_S2] ? 1 : 0) + (ts[T_Z1] ? 1 : 0) + (ts[T_Z2] ? 1 : 0);
    const int64_t cols = align_up(N, UB_BLOCK);
    int64_t binary = VL_FP32;
    if (N > VL_FP32) {
        binary = 1;
        while (binary * 2 < N)
            binary *= 2;
    }
    const int64_t binary_ub = align_up(binary / VL_FP32, UB_BLOCK / 4) * 4;
    const int64_t avail = UB_950 - (binary_ub + cols * quants * ss + cols * weights * xs +
                                    UB_RESERVED);
    const int64_t elewise_in = elewise ? xs : 0;
    int64_t per_row;
    if (dyn) /* x1, x2, the y's, x, bias double-buffered; the out scales; x32 per output */
        per_row = (2 * xs + outs + xs + elewise_in) * 2 * cols + 2 * 4 * outs +
                  4 * cols * outs + 8;
    else /* two y's counted whatever scales2 */
        per_row = (xs * 3 + 2 + elewise_in) * 2 * cols + 4 * cols + 8;
    if (avail / per_row >= 1)
        return (alq_slices){0, 1, N};
    /* per column, double-buffered: the scales and zero points, gamma, beta (a rank-1 bias),
     * x1, x2, xOut, the int8 outputs (static: two whatever scales2), a bias of x1's shape;
     * float: the Welford means and M2s and the binary add's buffer (dynamic: the smoothed
     * rows, twice per output) */
    const int64_t per_col = 2 * ss * quants + 2 * xs * weights +
                            2 * (3 * xs + (dyn ? outs : 2) + elewise_in) +
                            4 * (dyn ? 2 * outs + 1 : 3);
    const int64_t ub = UB_950 - UB_RESERVED - (dyn ? 2 * outs * UB_BLOCK + 4 * UB_BLOCK : 0);
    alq_slices s;
    s.per_loop = ub / per_col / VL_FP32 * VL_FP32;
    s.loops = (N + s.per_loop - 1) / s.per_loop;
    if (N % s.loops == 0)
        s.per_loop = N / s.loops;
    s.tail = N % s.per_loop ? N % s.per_loop : s.per_loop;
    return s;
}

/* Phase one's workspace on a device: the executor's graph of aclnn_add_layer_norm_quant.cpp
 * (exec_workspace.h; docs/emulator.md "Phase one's workspace size"). None for an empty
 * outScales1Out (the op_api's own return). Contiguous copies of strided inputs; one
 * AddLayerNormQuant kernel whose five results the executor allocates (y1, y2 or its
 * one-element stand-in, x, the out scales: a row's each in dynamic mode, one element in static
 * mode or without scales2), y1, y2 (dual), x and the dynamic mode's out scales copied out, the
 * rest left in the workspace (an empty x1: only the dynamic out scales copied). Its tiling:
 * the empty-input one 16 MiB (add_layer_norm_quant_empty_tiling.cpp MIN_WORKSPACE_SIZE); the
 * regbase one 32 bytes, in dynamic mode with Welford the platform's system workspace plus a
 * float row per used core, buffer (2) and quantized output, and with one row a core 256 bytes
 * per used core, plus the system workspace off Welford (add_layer_norm_quant_tiling_arch35.cpp
 * DoBlockTiling, SetTilingDataAndTilingKeyAndWorkSpace). */
static uint64_t alq_device_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                                     int64_t X, int64_t N, int64_t O1, bool dyn)
{
    if (O1 == 0)
        return 0;
    ew_graph g = ew_graph_on(soc->npu_arch);
    const aclTensor *x1 = ts[T_X1];
    int reads[T_Z2 + 1];
    for (int i = T_X1; i <= T_Z2; i++)
        reads[i] = ew_contiguous_copy(&g, ts[i]);
    const int k = ew_kernel_reading(&g, reads + T_X1, T_Z2 - T_X1 + 1);
    const bool dual = ts[T_S2] != NULL;
    const int64_t rows = N > 0 ? X / N : 0;
    uint64_t rows_of_x1 = 1; /* the reduce shape: x1's dims before gamma's */
    for (uint64_t i = 0; i + ts[T_GAMMA]->ndim < x1->ndim; i++)
        rows_of_x1 *= (uint64_t)x1->dims[i];
    if (X == 0) {
        ew_kernel_workspace(&g, k, EW_SYS_WORKSPACE);
    } else {
        const uint64_t sys = ew_lib_api_workspace(soc);
        const int64_t cores = aclemu_soc_vector_cores();
        int64_t per_core = (rows + cores - 1) / cores;
        const int64_t used = (rows + per_core - 1) / per_core;
        per_core = (rows + used - 1) / used;
        const bool welford = ub_tiling(ts, N, dyn).per_loop != 0;
        uint64_t ws = 32;
        if (dyn && welford)
            ws = sys + (uint64_t)used * 2 * (dual ? 2 : 1) * (uint64_t)N * 4;
        if (dyn && per_core == 1)
            ws += (uint64_t)used * 256 + (welford ? 0 : sys);
        ew_kernel_workspace(&g, k, ws);
    }
    const uint64_t n = (uint64_t)X, scales = dyn ? rows_of_x1 : 1;
    const int y1 = ew_output(&g, k, n), y2 = ew_output(&g, k, dual ? n : 1);
    const int x = ew_output(&g, k, n * aclemu_dtype_size(x1->dtype));
    const int os1 = ew_output(&g, k, scales * 4), os2 = ew_output(&g, k, (dual ? scales : 1) * 4);
    if (X != 0) {
        ew_copy_out(&g, y1, ACL_INT8, ts[T_Y1], n);
        if (dual)
            ew_copy_out(&g, y2, ACL_INT8, ts[T_Y2], n);
        ew_copy_out(&g, x, x1->dtype, ts[T_X], n);
    }
    if (dyn) {
        ew_copy_out(&g, os1, ACL_FLOAT, ts[T_OS1], scales);
        if (dual)
            ew_copy_out(&g, os2, ACL_FLOAT, ts[T_OS2], scales);
    }
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnAddLayerNormQuantGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma, const aclTensor *beta,
    const aclTensor *biasOptional, const aclTensor *scales1Optional,
    const aclTensor *scales2Optional, const aclTensor *zeroPoints1Optional,
    const aclTensor *zeroPoints2Optional, const char *quantMode, double epsilon,
    bool additionalOutput, bool divMode, aclTensor *y1Out, aclTensor *y2Out, aclTensor *xOut,
    aclTensor *outScales1Out, aclTensor *outScales2Out, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x1, x2, gamma, beta, biasOptional, scales1Optional,
                                    scales2Optional, zeroPoints1Optional, zeroPoints2Optional,
                                    y1Out, y2Out, xOut, outScales1Out, outScales2Out};
    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    /* 1. CheckPlatform: the op_api runs on Ascend 950 only (161002) */
    if (soc->npu_arch != 3510)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: not supported on %s (%s): the op_api runs on Ascend "
             "950 only (CheckPlatform: support for npuArch %d is not implemented)", P1,
             soc->name, soc->series, soc->npu_arch);
    /* 2. NULLs (161001), handles checked before anything reads them */
    if ((st = p1_live(P1, ts, TNAME, T_COUNT)) ||
        (st = p1_required(P1, ts, TNAME, T_X1, T_BIAS)) ||
        (st = p1_required(P1, ts, TNAME, T_Y1, T_COUNT)))
        return st;
    if (!quantMode)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: quantMode is NULL", P1);
    /* 3. quantMode, by prefix as the op_api compares it (161002) */
    const bool dyn = strncmp(quantMode, "dynamic", 7) == 0;
    if (!dyn && strncmp(quantMode, "static", 6) != 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: quantMode \"%s\" is neither \"dynamic\" nor "
             "\"static\"", P1, quantMode);
    /* 4..6. dtypes, shapes, the optional inputs' combination (161002) */
    if ((st = check_dtypes(ts, dyn)) || (st = check_shape_rel(ts, dyn)) ||
        (st = check_shape_eqs(ts, dyn)) || (st = check_combination(ts, dyn)))
        return st;
    int64_t X = 0, N = 0, Y2 = 0, O1 = 0, O2 = 0;
    if (!numel(x1->dims, x1->ndim, &X) || !numel(gamma->dims, gamma->ndim, &N) ||
        !numel(y2Out->dims, y2Out->ndim, &Y2) ||
        !numel(outScales1Out->dims, outScales1Out->ndim, &O1) ||
        !numel(outScales2Out->dims, outScales2Out->ndim, &O2))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", P1);
    /* 7. an empty outScales1Out: success, nothing launched (the op_api's own return); an empty
     * x1: the empty-input kernel, which writes the dynamic mode's out scales only (-inf) */
    bool launch = O1 != 0 && !(X == 0 && !dyn);
    const bool empty_rows = launch && X == 0;
    /* stricter (161002; docs/emulator.md): an empty y2Out or outScales beside a non-empty x1
     * makes the op_api compute nothing visible, where the docs give them x1's shape (y2Out)
     * and x1's shape without its last dim (the outScales) */
    if (X != 0) {
        static const int EMPTIED[] = {T_Y2, T_OS1, T_OS2};
        const int64_t counts[] = {Y2, O1, O2};
        for (int k = 0; k < 3; k++)
            if (counts[k] == 0)
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s is empty while x1 is not: the op_api "
                     "would then write no result (the docs: %s)", P1, TNAME[EMPTIED[k]],
                     k == 0 ? "x1's shape" : "x1's shape without its last dim");
    }
    if (launch) {
        /* 8. the tiling's refusals (stricter: 561002); the empty-input tiling
         * (add_layer_norm_quant_empty_tiling.cpp) checks no epsilon */
        if (strcmp(quantMode, "static") != 0 && strcmp(quantMode, "dynamic") != 0)
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: quantMode \"%s\" must be exactly "
                 "\"static\" or \"dynamic\" (the tiling's rule; the op_api compares a prefix)",
                 P1, quantMode);
        if (!empty_rows && !((float)epsilon > 0.0f))
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: epsilon %g must be greater than 0 as a "
                 "float (the tiling's rule)", P1, epsilon);
        if (x1->ndim == 0 || gamma->ndim == 0)
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: %s rank 0 (the tiling takes ranks of 1 and "
                 "more)", P1, x1->ndim == 0 ? "x1" : "gamma");
        /* 9. the definition's kernels (stricter: 561003) */
        if (scales1Optional && !has_kernel(x1->dtype, scales1Optional->dtype))
            FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): no kernel "
                 "for x1 %s with scales %s there (FLOAT16 or BF16 x1 with scales of its dtype "
                 "or FLOAT; FLOAT x1 with FLOAT scales)", P1, soc->name, soc->series,
                 qname(x1->dtype), qname(scales1Optional->dtype));
    }

    alq_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    const int64_t M = !launch ? 0 : empty_rows ? O1 : X / N;
    if (!launch || empty_rows)
        N = 0;
    /* 4 * N floats, the partial sums (N / 64 + 1) and N bytes per chunk */
    P->h = (nr_head){.kernel = &ALQ_KERNEL, .call = P2, .names = TNAME, .rows = M, .width = N,
                     .row_floats = 5 * N + N / VL_FP32 + 2, .run_floats = 4 * N,
                     .no_kernel = !launch};
    P->M = M;
    P->N = N;
    P->eps = (float)epsilon;
    P->div_mode = divMode;
    P->dyn = dyn;
    P->empty_rows = empty_rows;
    P->dual = scales2Optional != NULL;
    P->bias_rows = biasOptional && biasOptional->ndim != gamma->ndim;
    P->write_x = additionalOutput;
    if (launch && !empty_rows) {
        const alq_slices s = ub_tiling(ts, N, dyn);
        P->per_loop = s.per_loop;
        P->loops = s.loops;
        P->tail = s.tail;
    }
    if (launch) {
        const int split = (int)(x1->ndim - gamma->ndim);
        for (int i = 0; i < T_COUNT; i++) {
            const bool channel = (i >= T_GAMMA && i <= T_Z2 && i != T_BIAS) ||
                                 (i == T_BIAS && !P->bias_rows);
            const bool per_row = i == T_OS1 || i == T_OS2; /* one element a row */
            snapshot(&P->t[i], ts[i], channel ? -1 : per_row ? (int)ts[i]->ndim : split);
        }
        if (!P->dual) /* y2 (and the dynamic mode's outScales2) neither written nor copied */
            P->t[T_Y2].present = P->t[T_OS2].present = false;
        /* static mode: the outScales are the L0 op's own tensors, never copied out */
        if (!dyn)
            P->t[T_OS1].present = P->t[T_OS2].present = false;
        if (!additionalOutput || empty_rows)
            P->t[T_X].present = false;
        if (empty_rows) /* the empty-input kernel writes the out scales only */
            P->t[T_Y1].present = P->t[T_Y2].present = false;
    }
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &ALQ_OPS, P, alq_device_workspace(soc, ts, X, N, O1, dyn), ts, TNAME,
                     T_COUNT, T_Y1, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddLayerNormQuant(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
