/*
 * aclnnAddRmsNormDynamicQuant for the CPU emulator: phase one (checks, executor), the launch
 * and the kernel.
 *
 * Facts, hicann/ops-nn norm/add_rms_norm_dynamic_quant:
 * - op_host/op_api/aclnn_add_rms_norm_dynamic_quant.cpp (the hand-written phase one, followed
 *   here in its order and codes): the out-pointers (L2_DFX_PHASE_1, 161001); CheckParams:
 *   NULLs of x1, x2, gamma, y1Out, y2Out, xOut, scale1Out, scale2Out (161001); dtypes
 *   (161002), one list on every part: x1, x2, gamma (then each given smooth scale) FLOAT16 or
 *   BF16, y1Out and y2Out FLOAT8_E4M3FN/FLOAT8_E5M2/HIFLOAT8/INT8 and equal, xOut FLOAT16 or
 *   BF16, scale1Out and scale2Out FLOAT; shapes (561002, ACLNN_ERR_INNER_TILING_ERROR): x2
 *   x1's shape, gamma of rank 1 and x1's last dim, each given smooth scale gamma's shape; an
 *   empty x1, gamma or y2Out: success, nothing launched; then the L0 op
 *   (op_api/add_rms_norm_dynamic_quant.cpp), whose results are ViewCopy'd into y1Out, xOut,
 *   y2Out, scale1Out, scale2Out in that order (hicann/ops-math conversion/contiguous/op_host/
 *   op_api/contiguous.cpp CheckViewCopyParams: equal dtypes, equal shapes unless both hold
 *   one element; 561103). The L0 op allocates y1 of x1's shape, xOut and scale1 of the given
 *   outputs' own shapes (so their copies compare nothing), and y2 of x1's shape and scale2 of
 *   scale2Out's shape only with both smooth scales given ("dual"), else [1] each, which the
 *   kernel never writes and the op_api still copies;
 * - the L0 op discards ADD_TO_LAUNCHER_LIST_AICORE's status (hicann/opbase
 *   include/nnopbase/opdev/make_op_executor.h), so neither a part without a kernel nor a
 *   failed tiling fails phase one on the device; the copies would then read results no
 *   kernel wrote. Stricter (docs/emulator.md): refused in phase one, 561003 for no kernel
 *   (as aclnnAddRmsNormQuant) and 561002 for the tiling's refusals;
 * - op_host/add_rms_norm_dynamic_quant_def.cpp: Atlas A2/A3 (ascend910b, ascend910_93): x,
 *   gamma, smooth scales all FLOAT16 or all BF16, y INT8 or INT4; Ascend 950 (its arch35
 *   regbase kernels): the same inputs, y INT8, FLOAT8_E4M3FN, FLOAT8_E5M2, HIFLOAT8, INT4
 *   (V1's op_api list takes no INT4; V2's op_api asks for it); Atlas inference and training:
 *   no kernel;
 * - op_host/arch35/add_rms_norm_dynamic_quant_tiling_base_arch35.cpp (Ascend 950's tiling,
 *   whose status the L0 op discards as well): smoothScale2 without smoothScale1 and an x1 of
 *   rank below 2 refused (the emulator: 561002, as the Atlas tiling's); no epsilon rule;
 *   _tiling_arch35.cpp: the kernel, the first that fits the UB (253952 bytes, as
 *   aclnnAddRmsNormQuant's): "perf" (N <= 16384 and CalFullLoadBaseM >= 1), "normal"
 *   (CalUBTotalSize of one row), "single row" (16 * N aligned to 32 + 1024 bytes), "split";
 * - op_host/arch22/add_rms_norm_dynamic_quant_tiling.cpp: numCol = gamma's element count,
 *   numRow the product of x1's leading dims; avgFactor = 1.0 / (float)numCol; refused:
 *   (float)epsilon <= 0, smoothScale2 without smoothScale1 (no outputMask: the V1 op_api
 *   passes none); the normal kernel when 22 * aligned N + 776 bytes fit the UB, else single-
 *   row when 16 * aligned N + 1024 do (both sum the whole row), else slice-D over slices of
 *   8864 columns (SLICE_COL_LEN): with the 192 KiB UB of Atlas A2/A3, N > 12224.
 *
 * The device's numbers (op_kernel/add_rms_norm_dynamic_quant_normal_kernel.h,
 * _single_row_kernel.h, _cut_d_kernel.h, _helper.h, reduce_common.h), per row of N elements,
 * all in float: s = float(x1) + float(x2); xOut = s rounded to x1's dtype, ties to even; sq =
 * s * s, summed by ReduceSumHalfInterval (slice-D: each slice's sum, added in slice order to
 * 0); rstd = 1 / sqrt(sum * avg + eps); v = (s * rstd) * float(gamma); per output k (y1 with
 * smoothScale1, y2 with smoothScale2, only when dual): t = v * float(smooth_k) (or v * 1), m =
 * max |t| over the row, q = 127.0f / m, scale_k = 1 / q, y_k = RoundFloat2IntQuant(t * q): to
 * INT32 ties to even (CAST_RINT), to FLOAT16, to INT8 truncating, i.e. the nearest integer,
 * ties to even, clamped to [-128, 127] (the conversions taken to saturate, NaN written as 0,
 * as aclnnAddRmsNormQuant; the public sources state neither).
 *
 * Ascend 950 (op_kernel/arch35: add_rms_norm_dynamic_quant_regbase_perf.h, _regbase.h,
 * _regbase_single_row.h, _regbase_split_reduce.h, _regbase_common.h; norm_common
 * reduce_common_regbase.h), per row, all in float: s and xOut as above, every kernel norms s;
 * rstd: perf ComputeRstdNewtonRaphson<NEED_MAX> of sum * avg (norm_rows.h
 * nr_rstd_newton_raphson), normal and split 1 / sqrt(sum * avg + eps) (vector Sqrt, Div),
 * single row the same as a scalar over its ReduceSumHalfInterval sum; v = (s * rstd) * gamma;
 * per output t = v * smooth (or v), m = max |t|; scale: perf, normal, split m * (1.0f / Q)
 * (ComputeYScale's Muls by DIV_FACTOR), single row m / (1.0f / (1.0f / Q)) (ScaleTensor);
 * y = t / scale (Div); Q = 127 (INT8), 448 (E4M3FN), 57344 (E5M2), 32768 (HIFLOAT8); y
 * converted as aclnnAddRmsNormQuant's Ascend 950 results (half.h): INT8 rint, half, trunc
 * (aclemu_f32_to_int8_sat), FLOAT8 castTraitFp322Fp8, HIFLOAT8 castTraitFp322Hifp8. The sums
 * of the squares s * s (norm_rows.h, as aclnnAddRmsNormQuant's Ascend 950 ones): perf
 * norm_common's CalculateSquareReduceSum (nr_binary_add_sum, the fold point the tiling's
 * powerSplit, the power of two below N); normal ReduceSumRstd over the row padded to 512
 * bytes (nr_regbase_row_sum); split (_regbase_split_reduce.h ComputeFormer) ReduceSumRstd
 * over chunks of powerSplit gathered in 256-entry levels (nr_regbase_split_sum).
 *
 * aclnnAddRmsNormDynamicQuantV2 (op_host/op_api/aclnn_add_rms_norm_dynamic_quant_v2.cpp,
 * followed in its order and codes; docs/emulator.md): CheckFlag (161002), CheckNotNull
 * (161001; stricter: every output, which the op_api reads whatever the mask), the empty
 * tensors (Ascend 950 with an empty gamma: no early return, its empty kernel), the y dtypes
 * (161002), y INT32 (dstType INT4, the L0 result viewed as INT32 with the last dim / 8: the
 * last dims, 161002), CheckShapeValid (561002), then V1's stricter checks with the mask. The
 * L0 op passes beta, outputMask and dstType to the same kernels: v = (s * rstd) * gamma +
 * beta (op_kernel betaFlag, arch35 HAS_BETA), y1 and scale1 written when outputMask[0], y2
 * and scale2 when outputMask[1] (y2 from v without smoothScale2); Ascend 950's tiling sizes
 * take beta and the output flags. INT4 results (an INT32 or INT4 y): Q = 7 (Atlas A2/A3's
 * DYNAMIC_QUANT_DIVIDEND_INT4, Ascend 950's DIV_FACTOR_INT4 = 1.0f / 7), the same chain,
 * values rounded ties to even (at most 7 in magnitude by construction), two to a byte, the
 * lower nibble first (int4_pack.h); Atlas A2/A3's slice-D kernel slices 8832 columns
 * (SLICE_COL_LEN_INT4). Ascend 950's empty-gamma kernel (op_host/arch35/
 * add_rms_norm_dynamic_quant_tiling_empty.cpp after the same checks as the others,
 * op_kernel/arch35/add_rms_norm_dynamic_quant_empty.h): each computed scale's rows -inf.
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
#include "convert.h"
#include "exec_workspace.h"
#include "half.h"
#include "int4_pack.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_add_rms_norm_dynamic_quant.h"
#include "aclnnop/aclnn_add_rms_norm_dynamic_quant_v2.h"

#define P1 "aclnnAddRmsNormDynamicQuantGetWorkspaceSize"
#define P2 "aclnnAddRmsNormDynamicQuant"
#define P1_V2 "aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize"
#define P2_V2 "aclnnAddRmsNormDynamicQuantV2"

/* The kernel's tensors, in the op_api's argument order. */
enum { T_X1, T_X2, T_GAMMA, T_S1, T_S2, T_BETA, T_Y1, T_Y2, T_X, T_SC1, T_SC2, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x1", "x2", "gamma", "smoothScale1Optional",
                                           "smoothScale2Optional", "betaOptional", "y1Out",
                                           "y2Out", "xOut", "scale1Out", "scale2Out"};

#define QUANT_MAX 127.0f    /* DYNAMIC_QUANT_DIVIDEND, an INT8 result's */
#define QUANT_MAX_INT4 7.0f /* DYNAMIC_QUANT_DIVIDEND_INT4 */
#define SLICE_COLS 8864     /* SLICE_COL_LEN: the slice-D kernel's slice (INT8 results) */
#define SLICE_COLS_INT4 8832 /* SLICE_COL_LEN_INT4: INT4 results' */
#define WHOLE_ROW_MAX 12224 /* the longest row the single-row kernel takes on a 192 KiB UB */

/* Ascend 950's tiling (add_rms_norm_dynamic_quant_tiling_arch35.cpp): the UB (as
 * aclnnAddRmsNormQuant's: the platform files' ub_size), 32-byte blocks, 64 floats to a vector
 * register, the perf kernel's longest row (2 * 64 * 64 * 2), the reduce alignment (512 bytes),
 * the single-row kernel's bytes per element. */
#define UB_950 253952
#define UB_BLOCK_950 32
#define VL_FP32_950 64
#define PERF_MAX_950 16384
#define REDUCE_ALIGN_950 512
#define SINGLE_ROW_BYTES_950 16

/* Ascend 950's kernels (the tiling's TILING_TYPE_*; ARDQ_A2: the Atlas A2/A3 kernels;
 * ARDQ_EMPTY: Ascend 950's kernel for an empty gamma, add_rms_norm_dynamic_quant_empty.h) */
typedef enum {
    ARDQ_A2,
    ARDQ_PERF,
    ARDQ_NORMAL,
    ARDQ_SINGLE_ROW,
    ARDQ_SPLIT,
    ARDQ_EMPTY
} ardq_kernel;

typedef struct {
    nr_head h; /* per chunk 4 * N floats (x1 then the sum, x2 then the squares, v, t) + N bytes */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps, avg;    /* as the kernel receives them */
    aclDataType dtype; /* x1's */
    bool out1, out2;   /* y1 and scale1, y2 and scale2 written (the tiling's outQuant flags) */
    int64_t slice;     /* slice-D: the row's sum taken over slices of this many (0: whole) */
    ardq_kernel kernel;
    int64_t power_split, power_loop; /* ARDQ_SPLIT: the tiling's chunk and its main count */
    aclDataType ydt;   /* the kernel's y dtype (dstType): y1Out's (and y2Out's), INT4 for an
                        * INT32 y (V2: eight INT4 packed to each) */
    bool int4_words;   /* y INT32: the INT4 results viewed as INT32 words */
} ardq_payload;

/* Row m of y from q: INT8 (and the 8-bit floats) one to a byte; INT4 as INT32 words or as an
 * INT4 y's packed bytes (int4_pack.h). */
static void store_y_row(const ardq_payload *P, const tdesc *y, int64_t m, const int8_t *q)
{
    if (P->ydt != ACL_INT4)
        store_int8_row(y, m, q, P->N);
    else if (P->int4_words)
        store_int4_words_row(y, m, q, P->N);
    else
        store_int4_bytes_row(y, m, q, P->N);
}

/* ---- the kernel -------------------------------------------------------------------------- */

static float row_sum_squares(const ardq_payload *P, const float *x, float *sq)
{
    const int64_t N = P->N;
    for (int64_t i = 0; i < N; i++)
        sq[i] = x[i] * x[i];
    if (P->slice == 0)
        return nr_sum_half_interval(sq, N);
    float s = 0.0f;
    for (int64_t c = 0; c < N; c += P->slice)
        s += nr_sum_half_interval(sq + c, N - c < P->slice ? N - c : P->slice);
    return s;
}

/* One dynamic quantization of v (times smooth, when given) into y's row m and scale's
 * element m. */
static void quantize_row(const ardq_payload *P, const float *v, const float *smooth, float *t,
                         int8_t *q, const tdesc *y, const tdesc *scale, int64_t m)
{
    const int64_t N = P->N;
    const float mx = nr_smoothed_abs_max(v, smooth, t, N);
    const float mul = (P->ydt == ACL_INT4 ? QUANT_MAX_INT4 : QUANT_MAX) / mx;
    const float s = 1.0f / mul;
    memcpy(row_base(scale, m), &s, sizeof s);
    /* RoundFloat2IntQuant: to INT32 ties to even, to FLOAT16, then truncated to y's dtype */
    for (int64_t i = 0; i < N; i++)
        q[i] = P->ydt == ACL_INT4 ? int4_from_float_sat(t[i] * mul)
                                  : aclemu_f32_to_int8_sat(t[i] * mul);
    store_y_row(P, y, m, q);
}

/* Ascend 950: the largest |y| (Q) of y's dtype, as the kernels' DIV_FACTOR_* = 1.0f / Q. */
static float regbase_div_factor(aclDataType ydt)
{
    const float q = ydt == ACL_FLOAT8_E4M3FN ? 448.0f
                  : ydt == ACL_FLOAT8_E5M2   ? 57344.0f
                  : ydt == ACL_HIFLOAT8      ? 32768.0f
                  : ydt == ACL_INT4          ? 7.0f
                                             : 127.0f;
    return 1.0f / q;
}

/* Ascend 950's dynamic quantization of v (times smooth, when given) into y's row m and
 * scale's element m: the scale from max |t| (the single-row kernel divides by its quantMax,
 * the others multiply by DIV_FACTOR), then t / scale converted to y's dtype. */
static void regbase_quantize_row(const ardq_payload *P, const float *v, const float *smooth,
                                 float *t, int8_t *q, const tdesc *y, const tdesc *scale,
                                 int64_t m)
{
    const int64_t N = P->N;
    const float mx = nr_smoothed_abs_max(v, smooth, t, N);
    const float div = regbase_div_factor(P->ydt);
    const float s = P->kernel == ARDQ_SINGLE_ROW ? mx / (1.0f / div) : mx * div;
    memcpy(row_base(scale, m), &s, sizeof s);
    for (int64_t i = 0; i < N; i++) {
        const float u = t[i] / s;
        q[i] = P->ydt == ACL_FLOAT8_E4M3FN ? (int8_t)aclemu_f32_to_e4m3fn_sat(u)
             : P->ydt == ACL_FLOAT8_E5M2   ? (int8_t)aclemu_f32_to_e5m2_sat(u)
             : P->ydt == ACL_HIFLOAT8      ? (int8_t)aclemu_f32_to_hif8_sat(u)
             /* INT4: to INT16 ties to even, to FLOAT16, to INT4 (castTraitFp322Int16, ...) */
             : P->ydt == ACL_INT4          ? int4_from_float_sat(u)
                                           : aclemu_f32_to_int8_sat(u);
    }
    store_y_row(P, y, m, q);
}

/* Ascend 950's rstd of the float sum x, by the tiling's kernel (sq: N floats of scratch, then
 * N / 64 + 1 more for the binary add's partials). */
static float regbase_rstd(const ardq_payload *P, const float *x, float *sq)
{
    if (P->kernel == ARDQ_SINGLE_ROW) {
        for (int64_t i = 0; i < P->N; i++)
            sq[i] = x[i] * x[i];
        return 1.0f / sqrtf(nr_sum_half_interval(sq, P->N) * P->avg + P->eps);
    }
    const int64_t N = P->N, xb = aclemu_dtype_size(P->dtype);
    for (int64_t i = 0; i < N; i++)
        sq[i] = x[i] * x[i];
    if (P->kernel == ARDQ_PERF) /* CalculateSquareReduceSum, foldPoint below N */
        return nr_rstd_newton_raphson(nr_binary_add_sum(sq, N, sq + N) * P->avg, P->eps, true);
    const float sum = P->kernel == ARDQ_SPLIT /* ComputeFormer: powerSplit chunks, levels */
                          ? nr_regbase_split_sum(sq, N, P->power_split, P->power_loop, xb)
                          : nr_regbase_row_sum(sq, N, xb); /* ReduceSumRstd */
    return 1.0f / sqrtf(sum * P->avg + P->eps);
}

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const ardq_payload *P = payload;
    const tdesc *x1 = &P->t[T_X1], *x2 = &P->t[T_X2], *xo = &P->t[T_X];
    const int64_t N = P->N;
    const aclDataType dt = P->dtype;
    float *abuf = nr_chunk_buf(R, chunk), *bbuf = abuf + N, *v = bbuf + N, *t = v + N;
    int8_t *q = (int8_t *)(void *)(t + N);
    const float *s1 = P->t[T_S1].present ? R->run_buf : NULL;
    const float *s2 = P->t[T_S2].present ? R->run_buf + N : NULL;
    const float *beta = P->t[T_BETA].present ? R->run_buf + 2 * N : NULL;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x1, m), dt, &x1->inner, 0, N, abuf);
        const float *b = get_tile(row_base(x2, m), dt, &x2->inner, 0, N, bbuf);
        float *x = abuf;
        for (int64_t i = 0; i < N; i++)
            x[i] = a[i] + b[i];
        put_tile(row_base(xo, m), dt, ACLEMU_TIES_EVEN, &xo->inner, 0, N, x);
        const bool regbase = P->kernel != ARDQ_A2;
        const float rstd = regbase ? regbase_rstd(P, x, bbuf)
                                   : 1.0f / sqrtf(row_sum_squares(P, x, bbuf) * P->avg + P->eps);
        for (int64_t i = 0; i < N; i++) {
            const float n = x[i] * rstd;
            v[i] = n * R->gamma[i];
        }
        if (beta) /* V2's beta: added to the normed row, before any smooth scale */
            for (int64_t i = 0; i < N; i++)
                v[i] += beta[i];
        if (regbase) {
            if (P->out1)
                regbase_quantize_row(P, v, s1, t, q, &P->t[T_Y1], &P->t[T_SC1], m);
            if (P->out2)
                regbase_quantize_row(P, v, s2, t, q, &P->t[T_Y2], &P->t[T_SC2], m);
            continue;
        }
        if (P->out1)
            quantize_row(P, v, s1, t, q, &P->t[T_Y1], &P->t[T_SC1], m);
        if (P->out2)
            quantize_row(P, v, s2, t, q, &P->t[T_Y2], &P->t[T_SC2], m);
    }
}

/* N values of a smooth scale (or beta) as floats into dst. */
static void load_channels(const tdesc *t, int64_t N, float *dst)
{
    const float *f = get_tile(view_base(t), t->dtype, &t->inner, 0, N, dst);
    if (f != dst)
        memcpy(dst, f, (size_t)N * sizeof(float));
}

/* Ascend 950's kernel for an empty gamma (arch35/add_rms_norm_dynamic_quant_empty.h): each
 * computed scale's M rows -inf (the Duplicate of -infinity), nothing else written. */
static void empty_gamma_scales(const ardq_payload *P)
{
    const float ninf = -INFINITY;
    for (int k = 0; k < 2; k++) {
        const tdesc *sc = &P->t[k ? T_SC2 : T_SC1];
        if (!(k ? P->out2 : P->out1))
            continue;
        for (int64_t m = 0; m < P->M; m++)
            memcpy(row_base(sc, m), &ninf, sizeof ninf);
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const ardq_payload *P = payload;
    if (P->kernel == ARDQ_EMPTY) {
        empty_gamma_scales(P);
        return false;
    }
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    if (P->t[T_S1].present)
        load_channels(&P->t[T_S1], P->N, R->run_buf);
    if (P->t[T_S2].present)
        load_channels(&P->t[T_S2], P->N, R->run_buf + P->N);
    if (P->t[T_BETA].present)
        load_channels(&P->t[T_BETA], P->N, R->run_buf + 2 * P->N);
    return true;
}

static const nr_kernel ARDQ_KERNEL = NR_KERNEL(ardq_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops ARDQ_OPS = NR_EXECUTOR_OPS(P2);
static const aclemu_executor_ops ARDQ_V2_OPS = NR_EXECUTOR_OPS(P2_V2);

/* ---- phase one -------------------------------------------------------------------------------- */

static const aclDataType X_LIST[] = {ACL_FLOAT16, ACL_BF16};
static const aclDataType Y_LIST[] = {ACL_FLOAT8_E4M3FN, ACL_FLOAT8_E5M2, ACL_HIFLOAT8,
                                     ACL_INT8};
/* V2: the tiling's lists over the op_api's dstType (arch22 INT8, INT4; arch35 those and the
 * 8-bit floats), INT32 being INT4 packed eight to an element */
static const aclDataType Y_LIST_V2[] = {ACL_FLOAT8_E4M3FN, ACL_FLOAT8_E5M2, ACL_HIFLOAT8,
                                        ACL_INT8, ACL_INT4, ACL_INT32};

/* The dtypes, in V1's CheckDtypeValid order: inputs (each given optional one), the y of each
 * computed output (and their equality), xOut, the scales. V1's op_api returns 161002; V2's
 * has no dtype check (the tiling's, whose status the L0 op discards: `code`). */
static aclnnStatus check_dtypes(const char *call, const aclTensor *const *ts, bool out1,
                                bool out2, aclnnStatus code, const aclDataType *ylist,
                                size_t ny)
{
    for (int i = T_X1; i <= T_BETA; i++)
        if (ts[i] && p1_dtype_in(call, ts[i], TNAME[i], X_LIST, 2))
            return code;
    if ((out1 && p1_dtype_in(call, ts[T_Y1], TNAME[T_Y1], ylist, ny)) ||
        (out2 && p1_dtype_in(call, ts[T_Y2], TNAME[T_Y2], ylist, ny)))
        return code;
    if (out1 && out2 && ts[T_Y2]->dtype != ts[T_Y1]->dtype)
        FAIL(code, "%s: y2Out dtype %s must be y1Out's dtype %s", call,
             qname(ts[T_Y2]->dtype), qname(ts[T_Y1]->dtype));
    if (p1_dtype_in(call, ts[T_X], TNAME[T_X], X_LIST, 2))
        return code;
    for (int i = T_SC1; i <= T_SC2; i++)
        if (ts[i]->dtype != ACL_FLOAT)
            FAIL(code, "%s: %s dtype %s must be FLOAT", call, TNAME[i], qname(ts[i]->dtype));
    return ACLNN_SUCCESS;
}

/* CheckShapeValid (561002; V2: the tiling's, beta as the smooth scales). Stricter: a rank-0
 * x1, whose last dim the op_api reads past the end of its shape. */
static aclnnStatus check_shapes(const char *call, const aclTensor *const *ts)
{
    const aclTensor *x1 = ts[T_X1], *x2 = ts[T_X2], *g = ts[T_GAMMA];
    if (!same_dims(x2->dims, x2->ndim, x1->dims, x1->ndim)) {
        shape_error(call, "x2", x2->dims, x2->ndim, "must equal x1's shape", x1->dims,
                    x1->ndim);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    if (g->ndim != 1)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma rank %llu must be 1", call,
             (unsigned long long)g->ndim);
    if (x1->ndim == 0)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: x1 rank 0 has no last dim for gamma", call);
    if (x1->dims[x1->ndim - 1] != g->dims[0]) {
        shape_error(call, "gamma", g->dims, g->ndim, "must equal x1's last dim: x1 shape",
                    x1->dims, x1->ndim);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    for (int i = T_S1; i <= T_BETA; i++)
        if (ts[i] && !same_dims(ts[i]->dims, ts[i]->ndim, g->dims, g->ndim)) {
            shape_error(call, TNAME[i], ts[i]->dims, ts[i]->ndim, "must equal gamma's shape",
                        g->dims, g->ndim);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    return ACLNN_SUCCESS;
}

/* A computed scale's shape: x1's without its last dim, or one dim of their product. */
static aclnnStatus check_scale_shape(const char *call, const aclTensor *sc, const char *name,
                                     const aclTensor *x1)
{
    int64_t M = 1;
    for (uint64_t i = 0; i + 1 < x1->ndim; i++)
        M *= x1->dims[i]; /* no overflow: x1's element count was taken by aclCreateTensor */
    const bool leading = sc->ndim + 1 == x1->ndim && sc->ndim > 0 &&
                         same_dims(sc->dims, sc->ndim, x1->dims, sc->ndim);
    if (!leading && !(sc->ndim == 1 && sc->dims[0] == M))
        return shape_error(call, name, sc->dims, sc->ndim, "must be x1's shape without its "
                           "last dim, or their product as one dim: x1 shape", x1->dims,
                           x1->ndim);
    return ACLNN_SUCCESS;
}

/* Stricter than the code (161002; docs/emulator.md): the docs' relations, which nothing in
 * the code checks (the kernel reads every input as x1's dtype and writes xOut as x1's dtype
 * and shape, and one scale per row of each computed output), the docs' ranks, and an empty
 * y2Out beside a non-empty x1 (the op_api would return before computing anything). */
static aclnnStatus check_docs_relations(const char *call, const aclTensor *const *ts,
                                        bool out1, bool out2)
{
    const aclTensor *x1 = ts[T_X1], *xo = ts[T_X], *sc1 = ts[T_SC1], *sc2 = ts[T_SC2];
    for (int i = 0; i < T_COUNT; i++)
        if (ts[i] && ts[i]->ndim > 8)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is greater than 8", call,
                 TNAME[i], (unsigned long long)ts[i]->ndim);
    for (int i = T_X2; i <= T_BETA; i++)
        if (ts[i] && ts[i]->dtype != x1->dtype)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be x1's dtype %s", call,
                 TNAME[i], qname(ts[i]->dtype), qname(x1->dtype));
    if (xo->dtype != x1->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: xOut dtype %s must be x1's dtype %s", call,
             qname(xo->dtype), qname(x1->dtype));
    if (!same_dims(xo->dims, xo->ndim, x1->dims, x1->ndim))
        return shape_error(call, "xOut", xo->dims, xo->ndim, "must equal x1's shape", x1->dims,
                           x1->ndim);
    aclnnStatus st;
    if (out1 && (st = check_scale_shape(call, sc1, "scale1Out", x1)))
        return st;
    if (out1 && out2 && !same_dims(sc2->dims, sc2->ndim, sc1->dims, sc1->ndim))
        return shape_error(call, "scale2Out", sc2->dims, sc2->ndim, "must equal scale1Out's "
                           "shape", sc1->dims, sc1->ndim);
    if (!out1 && out2 && (st = check_scale_shape(call, sc2, "scale2Out", x1)))
        return st;
    int64_t X = 0, Y2 = 0;
    if (numel(x1->dims, x1->ndim, &X) && numel(ts[T_Y2]->dims, ts[T_Y2]->ndim, &Y2) &&
        X != 0 && Y2 == 0)
        return shape_error(call, "y2Out", ts[T_Y2]->dims, ts[T_Y2]->ndim, "is empty beside a "
                           "non-empty x1, shape", x1->dims, x1->ndim);
    return ACLNN_SUCCESS;
}

/* The ViewCopy of an L0 result of shape want into out (561103): equal shapes, or one
 * element each. */
static aclnnStatus check_view_copy(const char *call, const aclTensor *out, const char *name,
                                   const int64_t *want, uint64_t nwant, const char *what)
{
    int64_t A = 0, B = 0;
    const bool ones = numel(out->dims, out->ndim, &A) && A == 1 && numel(want, nwant, &B) &&
                      B == 1;
    if (!ones && !same_dims(out->dims, out->ndim, want, nwant)) {
        shape_error(call, name, out->dims, out->ndim, what, want, nwant);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    return ACLNN_SUCCESS;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* Ascend 950's perf kernel (TryPerfTiling, CalFullLoadBaseM, CalUsedSize): whether at least
 * one row of N 16-bit elements fits the UB beside gamma, the smooth scales (`smooth` of
 * them) and beta; o1, o2: y1 and scale1, y2 and scale2 written. */
static bool regbase_perf_fits(uint64_t N, int smooth, bool beta, bool out1, bool out2)
{
    if (N > PERF_MAX_950)
        return false;
    const int64_t xs = 2, q = smooth, o1 = out1, o2 = out2, b = beta;
    const int64_t A = (int64_t)align_up(N, UB_BLOCK_950 / xs), b8 = (int64_t)align_up(N, 32),
                  b32 = (int64_t)align_up(N, 8);
    int64_t power = 1; /* the largest power of two <= A - 1 */
    while (power * 2 <= A - 1)
        power *= 2;
    const int64_t vcadd = (int64_t)align_up((uint64_t)((power + VL_FP32_950 - 1) / VL_FP32_950),
                                            UB_BLOCK_950);
    const int64_t last = UB_950 - A * xs - q * A * xs - 1024 - b * A * xs;
    const int64_t per_row = 3 * A * xs + A * 4 + 8 + vcadd * 4 + b32 * 4 + o1 * (2 * b8 + 8) +
                            o2 * (2 * b8 + 8);
    int64_t rows = last / per_row;
    for (; rows > 0; rows--) {
        const int64_t r = (int64_t)align_up((uint64_t)rows, 8);
        const int64_t used = A * xs + q * A * xs + 1024 + rows * (3 * A * xs + A * 4) +
                             rows * vcadd * 4 + o1 * rows * (b8 * 2 + b32 * 4) + 2 * r * 4 +
                             o1 * 2 * r * 4 + o2 * (rows * b8 * 2 + 2 * r * 4) + b * A * xs;
        if (used <= UB_950)
            break;
    }
    return rows >= 1;
}

/* Ascend 950's CalUBTotalSize for one row of N 16-bit elements: the normal kernel's, or the
 * split kernel's (three level buffers of 4 * 64 floats and a 64-float temp more). */
static uint64_t regbase_ub_total(uint64_t N, int smooth, bool beta, uint64_t outs, bool split)
{
    const uint64_t xs = 2;
    const uint64_t R = align_up(N, REDUCE_ALIGN_950 / xs), A = align_up(N, UB_BLOCK_950 / xs);
    const uint64_t reduce = align_up(R / (2 * VL_FP32_950), 8);
    return 3 * R * xs + R * 4 + reduce * 4 + A * xs + (uint64_t)smooth * A * xs +
           (beta ? A * xs : 0) + outs * (align_up(N, 32) + align_up(N, 8) * 4) +
           32 * (1 + outs) + (split ? 3 * 4 * VL_FP32_950 * 4 + VL_FP32_950 * 4 : 0);
}

/* Ascend 950's kernel for rows of N 16-bit elements (SetTilingParams: the first that fits);
 * the split kernel's powerSplit (TrySplitTiling: doubled from 512 bytes of x while twice it
 * fits, whatever N) and powerLoop (the largest power of two with it times powerSplit <= N)
 * into P. The sizes count no y3 or y4 buffers (the tiling's hasY3/hasY4) for either version:
 * ParseOutputFlags (tiling_base_arch35.cpp) sets them only for the graph op
 * AddRmsNormDynamicQuantV2, and both op_apis launch AddRmsNormDynamicQuant (op_api/
 * add_rms_norm_dynamic_quant.cpp), five outputs and no y3 or y4. */
static ardq_kernel regbase_kernel(ardq_payload *P, uint64_t N, int smooth, bool beta,
                                  bool out1, bool out2)
{
    const uint64_t outs = (uint64_t)out1 + (uint64_t)out2;
    if (regbase_perf_fits(N, smooth, beta, out1, out2))
        return ARDQ_PERF;
    if (regbase_ub_total(N, smooth, beta, outs, false) <= UB_950)
        return ARDQ_NORMAL;
    if (SINGLE_ROW_BYTES_950 * align_up(N, 32) + 1024 <= UB_950)
        return ARDQ_SINGLE_ROW;
    uint64_t power = REDUCE_ALIGN_950 / 2, loop = 1;
    while (regbase_ub_total(power * 2, smooth, beta, outs, true) <= UB_950)
        power *= 2;
    while (loop * 2 * power <= N)
        loop *= 2;
    P->power_split = (int64_t)power;
    P->power_loop = (int64_t)loop;
    return ARDQ_SPLIT;
}

/* One call of either version, past its op_api's own checks: which outputs are computed,
 * whether an outputMask was given (the tiling's rules differ), the order of the ViewCopies. */
typedef struct {
    const char *p1, *p2;
    const aclemu_executor_ops *ops;
    bool out1, out2, masked;
} ardq_call;

/* The L0 op (stricter where the device's phase one passes: its kernel lookup and tiling,
 * whose status it discards) and the ViewCopies of its results: y1, scale1, y2, scale2 (V1
 * copies x between y1 and y2: its own shape, nothing to compare); an uncomputed output is an
 * L0 tensor of shape [1] and the dtype of the computed one, copied all the same. */
static aclnnStatus l0_checks(const ardq_call *c, const aclTensor *const *ts,
                             const aclemu_soc *soc, double epsilon)
{
    const char *call = c->p1;
    const aclTensor *x1 = ts[T_X1], *y1 = ts[T_Y1], *y2 = ts[T_Y2];
    const aclDataType ydt = c->out1 ? y1->dtype : y2->dtype;
    const bool regbase = soc->npu_arch == 3510;
    if (!regbase && soc->npu_arch != 2201)
        FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): the operator "
             "has no kernel for that series", call, soc->name, soc->series);
    /* the Atlas A2/A3 kernels: INT8 and INT4 (an INT32 y: INT4 packed) */
    if (!regbase && ydt != ACL_INT8 && ydt != ACL_INT4 && ydt != ACL_INT32)
        FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): no kernel for "
             "%s %s there (INT8 or INT4 only)", call, soc->name, soc->series,
             c->out1 ? "y1Out" : "y2Out", qname(ydt));
    if (!regbase && !((float)epsilon > 0.0f))
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: epsilon %g must be greater than 0 as a float "
             "(the tiling's rule)", call, epsilon);
    if (!c->masked && ts[T_S2] && !ts[T_S1])
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: smoothScale2Optional is given without "
             "smoothScale1Optional (the tiling's rule)", call);
    if (regbase && x1->ndim < 2)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: x1 rank %llu must be at least 2 on %s (Ascend "
             "950's tiling's rule)", call, (unsigned long long)x1->ndim, soc->name);
    /* INT4 results need an even N: Ascend 950's tiling's rule; on Atlas A2/A3 the docs' only
     * (stricter: its kernels write N / 2 bytes a row). An INT32 y has N = 8 * its last dim. */
    const int64_t N = x1->dims[x1->ndim - 1];
    if (ydt == ACL_INT4 && N % 2 != 0)
        FAIL(regbase ? ACLNN_ERR_INNER_TILING_ERROR : ACLNN_ERR_PARAM_INVALID, "%s: x1's last "
             "dim %lld must be even for INT4 results (%s)", call, (long long)N,
             regbase ? "Ascend 950's tiling's rule" : "the docs' rule");
    /* the computed y's L0 result: x1's shape, viewed as INT32 with the last dim / 8 for an
     * INT32 y */
    int64_t want[TV_MAX_RANK];
    for (uint64_t i = 0; i < x1->ndim; i++)
        want[i] = x1->dims[i];
    if (ydt == ACL_INT32)
        want[x1->ndim - 1] /= INT4_PER_INT32;
    static const int64_t ONE[1] = {1};
    static const char *const SAME = "must be the result's shape, x1's (INT32: its last dim / 8; "
                                   "the ViewCopy's rule):";
    static const char *const UNUSED = "must hold one element, its output not computed (the "
                                      "ViewCopy's rule):";
    aclnnStatus st;
    for (int k = 0; k < 2; k++) {
        const int y = k ? T_Y2 : T_Y1, sc = k ? T_SC2 : T_SC1;
        const bool out = k ? c->out2 : c->out1;
        if (ts[y]->dtype != ydt)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s dtype %s must be the computed y's %s (the "
                 "ViewCopy's rule)", call, TNAME[y], qname(ts[y]->dtype), qname(ydt));
        if ((st = out ? check_view_copy(call, ts[y], TNAME[y], want, x1->ndim, SAME)
                      : check_view_copy(call, ts[y], TNAME[y], ONE, 1, UNUSED)) ||
            (!out && (st = check_view_copy(call, ts[sc], TNAME[sc], ONE, 1, UNUSED))))
            return st;
    }
    return ACLNN_SUCCESS;
}

/* Both tilings' core split (arch22 DoBlockTiling, arch35 DoOpTiling): the M rows in blocks
 * of ceil(M / cores) over the part's vector cores; the cores used. */
static uint64_t used_cores(int64_t M)
{
    const int64_t cores = aclemu_soc_vector_cores(), per_core = (M + cores - 1) / cores;
    return (uint64_t)((M + per_core - 1) / per_core);
}

/* The tiling's one workspace. Atlas A2/A3 (arch22 SetTilingDataAndTilingKeyAndWorkSpace):
 * GetLibApiWorkSpaceSize + 1 byte; slice-D (P->slice) instead a row of N floats per used
 * core and workspace row, two rows with an outputMask or a smooth scale
 * (GetworkspaceRowsNum), else one. Ascend 950: 16 MiB hard-coded (DEFAULT_SYS_WORKSPACE;
 * the empty tiling's MIN_WORKSPACE_SIZE), the split kernel three rows of N floats per used
 * core on top (GetWorkspaceSize). */
static uint64_t tiling_workspace(const ardq_call *c, const aclTensor *const *ts,
                                 const ardq_payload *P, const aclemu_soc *soc)
{
    const uint64_t row = (uint64_t)P->N * sizeof(float);
    if (soc->npu_arch == 3510)
        return EW_SYS_WORKSPACE + (P->kernel == ARDQ_SPLIT ? 3 * used_cores(P->M) * row : 0);
    if (P->slice == 0)
        return ew_lib_api_workspace(soc) + 1;
    const uint64_t rows = c->masked || ts[T_S1] || ts[T_S2] ? 2 : 1;
    return ew_lib_api_workspace(soc) + used_cores(P->M) * row * rows;
}

/* The device's phase-one workspace (op_api/aclnn_add_rms_norm_dynamic_quant{,_v2}.cpp,
 * add_rms_norm_dynamic_quant.cpp): Contiguous copies of strided x1, x2, gamma, smooth scales
 * (V2: beta); the kernel with its tiling workspace and the five results the L0 op allocates
 * (y1 and y2 of x1's shape, INT4 two to a byte, and the scales of their outputs' shapes, or
 * [1] each when not computed; x of xOut's shape), each ViewCopy'd into its output in the
 * op_api's order: taken over by a contiguous output (an uncomputed one holds one element, so
 * always), else alive until its copy. An INT32 y takes the INT4 result through its INT32
 * view, taken to be handed over the same (as aclnnRmsNormQuant's). */
static uint64_t ardq_workspace(const ardq_call *c, const aclTensor *const *ts,
                               const ardq_payload *P, const aclemu_soc *soc)
{
    ew_graph g = ew_graph_on(soc->npu_arch);
    int out[T_COUNT];
    for (int i = T_X1; i <= T_BETA; i++)
        out[i] = ew_contiguous_copy(&g, ts[i]);
    const int k = ew_kernel_reading(&g, out + T_X1, T_BETA - T_X1 + 1);
    ew_kernel_workspace(&g, k, tiling_workspace(c, ts, P, soc));
    const uint64_t n = ew_bytes(ts[T_X1], ACL_INT8), y = P->ydt == ACL_INT4 ? (n + 1) / 2 : n;
    for (int i = T_Y1; i <= T_SC2; i++) {
        const bool computed = i == T_X || (i == T_Y1 || i == T_SC1 ? c->out1 : c->out2);
        const uint64_t one = i == T_SC1 || i == T_SC2 ? 4 : 1;
        out[i] = ew_output(&g, k, !computed ? one
                                  : i == T_Y1 || i == T_Y2 ? y
                                                           : ew_bytes(ts[i], ts[i]->dtype));
    }
    static const int V1_COPIES[] = {T_Y1, T_X, T_Y2, T_SC1, T_SC2};
    static const int V2_COPIES[] = {T_Y1, T_SC1, T_Y2, T_SC2, T_X};
    const int *copies = c->ops == &ARDQ_V2_OPS ? V2_COPIES : V1_COPIES;
    /* no Cast: each result already has its output's dtype (an INT32 y's view too) */
    for (int i = 0; i < 5; i++)
        ew_copy_out(&g, out[copies[i]], ts[copies[i]]->dtype, ts[copies[i]], 0);
    return ew_size(&g);
}

/* The executor of either version: the kernel's payload, past every check. */
static aclnnStatus build_executor(const ardq_call *c, const aclTensor *const *ts,
                                  const aclemu_soc *soc, double epsilon, bool empty,
                                  uint64_t *workspaceSize, aclOpExecutor **executor)
{
    ardq_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", c->p1);
    const aclTensor *x1 = ts[T_X1];
    /* N gamma's length, M the product of x1's leading dims (an empty gamma on Ascend 950:
     * the empty kernel's numM rows of scales) */
    const int64_t N = empty ? 0 : ts[T_GAMMA]->dims[0];
    int64_t M = empty ? 0 : 1;
    for (uint64_t i = 0; !empty && i + 1 < x1->ndim; i++)
        M *= x1->dims[i]; /* no overflow: x1's element count was taken by aclCreateTensor */
    /* 4 * N floats and N bytes per chunk: 5 * N floats cover them; the run's buffer holds
     * the smooth scales and beta */
    P->h = (nr_head){.kernel = &ARDQ_KERNEL, .call = c->p2, .names = TNAME, .rows = M,
                     .width = N, .row_floats = 5 * N, .run_floats = 3 * N, .no_kernel = empty};
    P->M = M;
    P->N = N;
    P->eps = (float)epsilon;
    /* the Atlas tiling's (float)(1.0 / numCol), Ascend 950's 1.0f / (float)numN */
    P->avg = N == 0                   ? 0.0f
             : soc->npu_arch == 3510 ? 1.0f / (float)N
                                     : (float)(1.0 / (double)(float)N);
    P->dtype = x1->dtype;
    P->out1 = c->out1;
    P->out2 = c->out2;
    const aclDataType ydt = c->out1 ? ts[T_Y1]->dtype : ts[T_Y2]->dtype;
    P->int4_words = ydt == ACL_INT32;
    P->ydt = P->int4_words ? ACL_INT4 : ydt; /* the op_api's dstType */
    P->slice = N <= WHOLE_ROW_MAX ? 0 : P->ydt == ACL_INT4 ? SLICE_COLS_INT4 : SLICE_COLS;
    const int smooth = (ts[T_S1] != NULL) + (ts[T_S2] != NULL);
    P->kernel = empty || soc->npu_arch != 3510 ? ARDQ_A2
                : N == 0                       ? ARDQ_EMPTY
                : regbase_kernel(P, (uint64_t)N, smooth, ts[T_BETA] != NULL, c->out1, c->out2);
    if (!empty) {
        const int split = (int)x1->ndim - 1;
        for (int i = 0; i < T_COUNT; i++) {
            if (!ts[i])
                continue;
            const bool channel = i >= T_GAMMA && i <= T_BETA;
            const bool per_row = i == T_SC1 || i == T_SC2;
            const int s = channel ? -1
                          : per_row ? (int)ts[i]->ndim
                                    : (split < (int)ts[i]->ndim ? split : (int)ts[i]->ndim);
            if (ts[i]->dtype == ACL_INT4 && (i == T_Y1 || i == T_Y2))
                int4_bytes_view(&P->t[i], ts[i]); /* its packed bytes (int4_pack.h) */
            else
                snapshot(&P->t[i], ts[i], s);
        }
        /* an uncomputed y and scale: the kernel writes nothing the op_api could copy */
        if (!c->out1)
            P->t[T_Y1].present = P->t[T_SC1].present = false;
        if (!c->out2)
            P->t[T_Y2].present = P->t[T_SC2].present = false;
    }
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    const uint64_t ws = empty ? 0 : ardq_workspace(c, ts, P, soc);
    return p1_finish(c->p1, c->ops, P, ws, ts, TNAME, T_COUNT, T_Y1, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormDynamicQuantGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma,
    const aclTensor *smoothScale1Optional, const aclTensor *smoothScale2Optional, double epsilon,
    aclTensor *y1Out, aclTensor *y2Out, aclTensor *xOut, aclTensor *scale1Out,
    aclTensor *scale2Out, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x1,    x2,    gamma, smoothScale1Optional,
                                    smoothScale2Optional,  NULL,  y1Out, y2Out,
                                    xOut,  scale1Out,      scale2Out};
    /* 0. the out-pointers first (161001); handles are checked before anything reads them */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)) ||
        (st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    /* 1. CheckParams: NULLs (161001), dtypes (161002), shapes (561002) */
    if ((st = p1_required(P1, ts, TNAME, T_X1, T_S1)) ||
        (st = p1_required(P1, ts, TNAME, T_Y1, T_COUNT)) ||
        (st = check_dtypes(P1, ts, true, true, ACLNN_ERR_PARAM_INVALID, Y_LIST, 4)) ||
        (st = check_shapes(P1, ts)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    /* no outputMask: y1 always, y2 with both smooth scales */
    const ardq_call c = {P1, P2, &ARDQ_OPS, true, smoothScale1Optional && smoothScale2Optional,
                         false};
    /* 2. stricter: the docs' relations (161002) */
    if ((st = check_docs_relations(P1, ts, c.out1, c.out2)))
        return st;
    /* 3. an empty x1, gamma or y2Out: success, nothing launched */
    int64_t X = 0, Y2 = 0;
    if (!numel(x1->dims, x1->ndim, &X) || !numel(y2Out->dims, y2Out->ndim, &Y2))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", P1);
    const bool empty = X == 0 || gamma->dims[0] == 0 || Y2 == 0;
    /* 4. the L0 op's kernel and tiling, 5. the ViewCopies of its results */
    if (!empty && (st = l0_checks(&c, ts, soc, epsilon)))
        return st;
    return build_executor(&c, ts, soc, epsilon, empty, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormDynamicQuant(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor,
                                                      aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}

/* V2's CheckFlag (161002): outputMask NULL or of length 2; with it, a given smooth scale
 * needs its output and one output is computed; without it, smoothScale2 needs
 * smoothScale1. */
static aclnnStatus v2_check_flag(const aclTensor *s1, const aclTensor *s2,
                                 const aclBoolArray *mask)
{
    if (!mask) {
        if (s2 && !s1)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: smoothScale2Optional is given without "
                 "smoothScale1Optional while outputMask is NULL", P1_V2);
        return ACLNN_SUCCESS;
    }
    if (mask->size != 2)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputMask length %llu must be 2", P1_V2,
             (unsigned long long)mask->size);
    if (s1 && !mask->values[0])
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: smoothScale1Optional is given but outputMask[0] "
             "is false", P1_V2);
    if (s2 && !mask->values[1])
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: smoothScale2Optional is given but outputMask[1] "
             "is false", P1_V2);
    if (!mask->values[0] && !mask->values[1])
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputMask[0] and outputMask[1] are both false",
             P1_V2);
    return ACLNN_SUCCESS;
}

/* V2: a computed INT4 y the copy of the result refuses (int4_pack.h int4_view_copy_rule),
 * after every other rule the device applies. */
static aclnnStatus int4_y_copy(const ardq_call *c, const aclTensor *const *ts,
                               const aclemu_soc *soc)
{
    for (int k = 0; k < 2; k++) {
        const aclTensor *y = ts[k ? T_Y2 : T_Y1];
        if ((k ? c->out2 : c->out1) && y->dtype == ACL_INT4 && !int4_packed(y))
            return int4_view_copy_rule(y, c->p1, TNAME[k ? T_Y2 : T_Y1], soc);
    }
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma,
    const aclTensor *smoothScale1Optional, const aclTensor *smoothScale2Optional,
    const aclTensor *betaOptional, double epsilon, const aclBoolArray *outputMask,
    aclTensor *y1Out, aclTensor *y2Out, aclTensor *xOut, aclTensor *scale1Out,
    aclTensor *scale2Out, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (aclemu_fault(P1_V2))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x1,    x2,    gamma, smoothScale1Optional,
                                    smoothScale2Optional,  betaOptional, y1Out, y2Out,
                                    xOut,  scale1Out,      scale2Out};
    /* 0. the out-pointers first (161001); handles are checked before anything reads them */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1_V2, workspaceSize, executor)) ||
        (st = p1_live(P1_V2, ts, TNAME, T_COUNT)))
        return st;
    if (outputMask && !aclemu_handle_check(outputMask, ACLEMU_KIND_BOOL_ARRAY))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputMask (%p) is not a live aclBoolArray", P1_V2,
             (const void *)outputMask);
    /* 1. CheckFlag (161002), then the computed outputs */
    if ((st = v2_check_flag(smoothScale1Optional, smoothScale2Optional, outputMask)))
        return st;
    const bool out1 = outputMask ? outputMask->values[0] : true;
    const bool out2 = outputMask ? outputMask->values[1]
                                 : smoothScale1Optional && smoothScale2Optional;
    const ardq_call c = {P1_V2, P2_V2, &ARDQ_V2_OPS, out1, out2, outputMask != NULL};
    /* 2. CheckNotNull (161001): x1, x2, gamma, xOut, each computed output's y and scale.
     * Stricter: the others as well, which the op_api reads all the same (y2Out's emptiness,
     * both y shapes, the scales' shapes and dtypes in the L0 op): NULL crashes the host. */
    static const int REQUIRED[] = {T_X1, T_X2, T_GAMMA, T_X, T_Y1, T_SC1, T_Y2, T_SC2};
    for (size_t i = 0; i < sizeof REQUIRED / sizeof REQUIRED[0]; i++)
        if (!ts[REQUIRED[i]])
            FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL%s", P1_V2, TNAME[REQUIRED[i]],
                 i < 4 || (i < 6 ? out1 : out2) ? ""
                                                : " (its output is not computed, but the "
                                                  "op_api reads it all the same)");
    const aclemu_soc *soc = aclemu_soc_info(P1_V2);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    /* 3. empty tensors: on Atlas A2/A3 an empty x1, x2, gamma or y2Out, on Ascend 950 one of
     * x1, x2, y2Out with gamma non-empty: success, nothing launched. Ascend 950 runs its
     * empty kernel for an empty gamma (scales of -inf), not modelled */
    int64_t X = 0, X2 = 0, Y2 = 0;
    if (!numel(x1->dims, x1->ndim, &X) || !numel(x2->dims, x2->ndim, &X2) ||
        !numel(y2Out->dims, y2Out->ndim, &Y2))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", P1_V2);
    int64_t G = 0;
    numel(gamma->dims, gamma->ndim, &G);
    const bool empty_kernel = soc->npu_arch == 3510 && G == 0;
    if (!empty_kernel && (X == 0 || X2 == 0 || G == 0 || Y2 == 0))
        return build_executor(&c, ts, soc, epsilon, true, workspaceSize, executor);
    /* 4. ComputeAddRmsNormDynamicQuantV2: y1Out's and y2Out's dtypes when both are computed
     * (161002); INT32 (dstType INT4, packed eight to an element): the last dims (161002);
     * else the computed y's shapes (561002) */
    if (out1 && out2 && y1Out->dtype != y2Out->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: y1Out dtype %s and y2Out dtype %s must be the same "
             "when both are computed", P1_V2, qname(y1Out->dtype), qname(y2Out->dtype));
    const aclTensor *ya = out1 ? y1Out : y2Out;
    if (ya->dtype == ACL_INT32) {
        for (int k = 0; k < 2; k++) {
            const aclTensor *y = k ? y2Out : y1Out;
            if (!(k ? out2 : out1))
                continue;
            const int64_t xl = x1->ndim ? x1->dims[x1->ndim - 1] : 1;
            const int64_t yl = y->ndim ? y->dims[y->ndim - 1] : 1;
            if (xl != yl * 8)
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s last dim %lld must be 1/8 of x1's last "
                     "dim %lld (INT32: packed INT4)", P1_V2, k ? "y2Out" : "y1Out",
                     (long long)yl, (long long)xl);
        }
    }
    for (int k = 0; ya->dtype != ACL_INT32 && k < 2; k++) {
        const aclTensor *y = k ? y2Out : y1Out;
        if ((k ? out2 : out1) && !same_dims(y->dims, y->ndim, x1->dims, x1->ndim)) {
            shape_error(P1_V2, TNAME[k ? T_Y2 : T_Y1], y->dims, y->ndim,
                        "must equal x1's shape", x1->dims, x1->ndim);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    /* 5. stricter: the tiling's dtypes and shapes (561002), the docs' relations (161002),
     * the L0 op's kernel and tiling, the ViewCopies of its results */
    if ((st = check_dtypes(P1_V2, ts, out1, out2, ACLNN_ERR_INNER_TILING_ERROR, Y_LIST_V2,
                           sizeof Y_LIST_V2 / sizeof Y_LIST_V2[0])) ||
        (st = check_shapes(P1_V2, ts)) || (st = check_docs_relations(P1_V2, ts, out1, out2)) ||
        (st = l0_checks(&c, ts, soc, epsilon)) || (st = int4_y_copy(&c, ts, soc)))
        return st;
    return build_executor(&c, ts, soc, epsilon, false, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormDynamicQuantV2(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor,
                                                        aclrtStream stream)
{
    return aclemu_executor_run(P2_V2, executor, workspace, workspaceSize, stream);
}
