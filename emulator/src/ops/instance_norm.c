/*
 * aclnnInstanceNorm for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel. Each (sample, channel) pair of a 4-D x is normalized over its H x W values, scaled
 * by gamma and shifted by beta of its channel; the pair's mean and variance are written too.
 *
 * Facts, hicann/ops-nn norm/instance_norm_v3:
 * - op_host/op_api/aclnn_instance_norm.cpp (phase one, followed here in its order and codes):
 *   the out-pointers (L2_DFX_PHASE_1, 161001); x, gamma, beta, y, mean, variance, then
 *   dataFormat NULL (CheckNotNull, 161001); dataFormat beginning with "NHWC" or "NCHW" (a
 *   prefix compare: strncmp over four characters, so "NCHW_anything" passes; 161002); x's
 *   dtype FLOAT or FLOAT16 (the list the code names for Ascend 310P, applied on every part),
 *   gamma, beta, y, mean, variance x's dtype (161002); x's rank at most 8 (161002); then the
 *   part: anything but an Atlas inference part (SocVersion ASCEND310P, NPU arch 2002) is
 *   refused, "only supports Ascend310p" (CheckPlatform, 161002); x rank 4 and gamma, beta
 *   rank 1 (161002); gamma's length x's C (dim 1 for NCHW, dim 3 for NHWC; 161002); then any
 *   of the six tensors empty: success, workspace 0, no kernel, nothing written; else x is
 *   made contiguous, transposed NHWC -> NCHW for NHWC, run through l0op::InstanceNormV3
 *   (instance_norm_v3.cpp: y of x's shape, mean and variance [N, C, 1, 1], all of x's dtype,
 *   eps passed as static_cast<float>), y transposed back for NHWC and the statistics reshaped
 *   to [N, 1, 1, C]; each result is then copied into the caller's tensor by l0op::ViewCopy
 *   (hicann/ops-math conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams:
 *   the same dtype, the same shape or one element each), y first, then mean, then variance:
 *   a failed copy is ACLNN_ERR_INNER_NULLPTR (561103).
 * - op_host/op_api/instance_norm_v3.cpp discards ADD_TO_LAUNCHER_LIST_AICORE's status and the
 *   InstanceNormV3 kernel (scripts/kernel/binary_config/ascendc_config.json: built for
 *   ascend310p only) is not among the public sources.
 * - docs/aclnnInstanceNorm.md: supported on the Atlas inference series only; beta's shape is
 *   x's C axis; C and H x W must each hold at least 32 bytes (C * element size, H * W *
 *   element size), else ACLNN_ERR_INNER_NULLPTR (561103).
 *
 * Stricter than the code (both rules the docs'; docs/emulator.md): beta's length must be C
 * (the code compares gamma's only, and the kernel would read C values of beta); C and H x W
 * under 32 bytes are refused with the docs' 561103 in phase one (the code's phase one
 * succeeds, the tiling's failure being discarded, and the run copies results no kernel
 * wrote).
 *
 * The numbers (the kernel is not public; the chain of the family's two-pass kernels, as the
 * L0 GroupNorm's in group_norm.c): per (n, c) row of E = H * W values, x read as float;
 * mean = sum(x * (1.0f / E)), var = sum((x - mean)^2 * (1.0f / E)) (the biased variance);
 * rstd = 1 / sqrtf(var + eps); y = ((x - mean) * rstd) * gamma[c] + beta[c], every step a
 * float rounding; y, mean and var rounded to x's dtype to even (CAST_NONE on the Atlas
 * inference parts). The variance (not rstd) is what the variance output holds.
 *
 * Kernel: rows are the (n, c) pairs; each row's sums have a fixed order (norm_rows.h's lanes
 * and fold), so the split of rows over threads never changes a bit. NHWC is x's view with its
 * dims taken in N, C, H, W order (the op_api's transposes move values without arithmetic).
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
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_instance_norm.h"

#define P1 "aclnnInstanceNormGetWorkspaceSize"
#define P2 "aclnnInstanceNorm"

enum { T_X, T_GAMMA, T_BETA, T_Y, T_MEAN, T_VAR, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x", "gamma", "beta", "y", "mean", "variance"};
#define N_INPUTS 3 /* the vendor's DFX_IN tensors: x, gamma, beta */

typedef struct {
    nr_head h; /* gamma and beta as float (C values each); per chunk one row of E floats */
    tdesc t[T_COUNT];
    int64_t C, E;      /* channels; values per (n, c) row */
    float eps;         /* as the kernel receives it */
    aclDataType dtype; /* x's, and every other tensor's */
} in_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const in_payload *P = payload;
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y], *mo = &P->t[T_MEAN], *vo = &P->t[T_VAR];
    const int64_t E = P->E;
    const float inv = 1.0f / (float)E;
    float *buf = nr_chunk_buf(R, chunk);
    for (int64_t m = begin; m < end; m++) {
        const int64_t c = m % P->C;
        const float *src = get_tile(row_base(x, m), P->dtype, &x->inner, 0, E, buf);
        if (src != buf)
            memcpy(buf, src, (size_t)E * sizeof(float));
        float mean = nr_scaled_sum(buf, E, inv);
        nr_center(buf, buf, E, mean);
        float var = nr_scaled_sum_squares(buf, E, inv);
        const float rstd = 1.0f / sqrtf(var + P->eps);
        const float gm = R->gamma[c], bt = R->beta[c];
        for (int64_t i = 0; i < E; i++) {
            float t = buf[i] * rstd;
            t *= gm;
            buf[i] = t + bt;
        }
        put_tile(row_base(y, m), P->dtype, ACLEMU_TIES_EVEN, &y->inner, 0, E, buf);
        put_tile(view_base(mo), P->dtype, ACLEMU_TIES_EVEN, &mo->inner, m, 1, &mean);
        put_tile(view_base(vo), P->dtype, ACLEMU_TIES_EVEN, &vo->inner, m, 1, &var);
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const in_payload *P = payload;
    /* read before any row is written: an output may be gamma's or beta's very memory */
    nr_load_gamma(R, &P->t[T_GAMMA], P->C);
    nr_load_beta(R, &P->t[T_BETA], P->C);
    return true;
}

static const nr_kernel IN_KERNEL = NR_KERNEL(in_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops IN_OPS = NR_EXECUTOR_OPS(P2);

/* x's (or y's) snapshot as rows: dims in N, C, H, W order (NHWC's permuted), the (n, c)
 * pairs its batch dims and H, W its row. */
static void rows_snapshot(tdesc *d, const aclTensor *t, bool nhwc)
{
    snapshot(d, t, 2);
    if (!nhwc)
        return;
    static const int PERM[4] = {0, 3, 1, 2};
    int64_t dims[4], strides[4];
    for (int i = 0; i < 4; i++) {
        dims[i] = t->dims[PERM[i]];
        strides[i] = t->strides[PERM[i]];
    }
    memcpy(d->dims, dims, sizeof dims);
    memcpy(d->strides, strides, sizeof strides);
    lay_build(&d->outer, d->dims, d->strides, 2);
    lay_build(&d->inner, d->dims + 2, d->strides + 2, 2);
}

/* A tensor read as one flat vector. One of more dims than a view holds (aclCreateTensor takes
 * up to 25) passes phase one only empty or with one element, which sits at its offset. */
static void flat_snapshot(tdesc *d, const aclTensor *t)
{
    if (t->ndim <= TV_MAX_RANK) {
        snapshot(d, t, -1);
        return;
    }
    int64_t n = 0;
    numel(t->dims, t->ndim, &n);
    memset(d, 0, sizeof *d);
    d->present = true;
    d->dtype = t->dtype;
    d->es = (uint32_t)aclemu_dtype_size(t->dtype);
    d->data = (char *)t->data;
    d->offset = t->offset;
    d->ndim = 1;
    d->dims[0] = n;
    d->strides[0] = 1;
    lay_build(&d->outer, d->dims, d->strides, 0);
    lay_build(&d->inner, d->dims, d->strides, 1);
}

/* ---- phase one -------------------------------------------------------------------------------- */

static aclnnStatus check_dtypes(const aclTensor *const *ts)
{
    const aclDataType dt = ts[T_X]->dtype;
    if (dt != ACL_FLOAT && dt != ACL_FLOAT16)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x dtype %s is not supported: FLOAT, FLOAT16", P1,
             dname(dt));
    for (int i = T_GAMMA; i < T_COUNT; i++)
        if (ts[i]->dtype != dt)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be x's dtype %s", P1, TNAME[i],
                 dname(ts[i]->dtype), dname(dt));
    return ACLNN_SUCCESS;
}

/* The rank and shape rules after the part's check (CheckInputAndWeightShape, then beta's
 * length: the docs' rule, stricter than the code). */
static aclnnStatus check_shapes(const aclTensor *x, const aclTensor *gamma,
                                const aclTensor *beta, bool nhwc)
{
    if (x->ndim != 4 || gamma->ndim != 1 || beta->ndim != 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x rank %llu, gamma rank %llu, beta rank %llu: x must "
             "have rank 4, gamma and beta rank 1", P1, (unsigned long long)x->ndim,
             (unsigned long long)gamma->ndim, (unsigned long long)beta->ndim);
    const int64_t C = x->dims[nhwc ? 3 : 1];
    if (gamma->dims[0] != C)
        return shape_error(P1, "gamma", gamma->dims, gamma->ndim,
                           nhwc ? "must be [C], C x's dim 3 (NHWC)"
                                : "must be [C], C x's dim 1 (NCHW)", x->dims, x->ndim);
    if (beta->dims[0] != C)
        return shape_error(P1, "beta", beta->dims, beta->ndim,
                           nhwc ? "must be [C], C x's dim 3 (NHWC; docs/aclnnInstanceNorm.md)"
                                : "must be [C], C x's dim 1 (NCHW; docs/aclnnInstanceNorm.md)",
                           x->dims, x->ndim);
    return ACLNN_SUCCESS;
}

/* The docs' 32-byte minimum of C and of H x W (561103; the code's tiling, not public). */
static aclnnStatus check_kernel_sizes(const aclTensor *x, int64_t C, int64_t E)
{
    const int64_t es = (int64_t)aclemu_dtype_size(x->dtype);
    if (C * es < 32)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x's C axis of %lld %s values is %lld bytes: the "
             "kernel takes at least 32 bytes (docs/aclnnInstanceNorm.md)", P1, (long long)C,
             dname(x->dtype), (long long)(C * es));
    if (E * es < 32)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x's H x W of %lld %s values is %lld bytes: the "
             "kernel takes at least 32 bytes (docs/aclnnInstanceNorm.md)", P1, (long long)E,
             dname(x->dtype), (long long)(E * es));
    return ACLNN_SUCCESS;
}

/* The ViewCopy of a result of shape want[0..4) into t: t's shape, or one element each. */
static aclnnStatus check_copy(const aclTensor *t, int i, const int64_t *want, const char *rule)
{
    int64_t n = 0, w = want[0] * want[1] * want[2] * want[3];
    if (same_dims(t->dims, t->ndim, want, 4) || (w == 1 && numel(t->dims, t->ndim, &n) && n == 1))
        return ACLNN_SUCCESS;
    shape_error(P1, TNAME[i], t->dims, t->ndim, rule, want, 4);
    return ACLNN_ERR_INNER_NULLPTR; /* the op_api's CHECK_RET on the failed copy */
}

static bool is_empty(const aclTensor *t)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] == 0)
            return true;
    return false;
}

/* Phase one's workspace on a device (exec_workspace.h; docs/emulator.md "Phase one's
 * workspace size") for a call with values, on the Atlas inference parts (the only ones the
 * op_api takes): contiguous copies of strided x, gamma, beta; for NHWC an l0op::Transpose of x
 * to NCHW (its output allocated); the TBE InstanceNormV3 (workspace from compile info, not
 * public: none) with y, mean and variance allocated (x's dtype); for NHWC a Transpose of y
 * back (allocated, then copied out) and the statistics reshaped (views); the ViewCopy of each
 * result. */
static uint64_t in_device_workspace(int arch, const aclTensor *const *ts, bool nhwc, int64_t N,
                                    int64_t C)
{
    ew_graph g = ew_graph_on(arch);
    const aclTensor *x = ts[T_X];
    const uint64_t size = aclemu_dtype_size(x->dtype);
    const uint64_t n = ew_bytes(x, x->dtype) / size, nc = (uint64_t)(N * C);
    int in[3];
    for (int i = 0; i < 3; i++)
        in[i] = ew_contiguous_copy(&g, ts[T_X + i]);
    if (nhwc) {
        const int to_nchw = ew_kernel(&g);
        ew_read(&g, in[0], to_nchw);
        in[0] = ew_output(&g, to_nchw, n * size);
    }
    const int k = ew_kernel_reading(&g, in, 3);
    int res[3] = {ew_output(&g, k, n * size), ew_output(&g, k, nc * size),
                  ew_output(&g, k, nc * size)};
    if (nhwc) {
        const int to_nhwc = ew_kernel(&g);
        ew_read(&g, res[0], to_nhwc);
        res[0] = ew_output(&g, to_nhwc, n * size);
    }
    for (int i = 0; i < 3; i++)
        ew_copy_out(&g, res[i], x->dtype, ts[T_Y + i], i ? nc : n);
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnInstanceNormGetWorkspaceSize(
    const aclTensor *x, const aclTensor *gamma, const aclTensor *beta, const char *dataFormat,
    double eps, aclTensor *y, aclTensor *mean, aclTensor *variance, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x, gamma, beta, y, mean, variance};

    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;
    /* 1. CheckNotNull: the six tensors, then dataFormat (161001); every tensor live */
    if ((st = p1_required(P1, ts, TNAME, T_X, T_COUNT)))
        return st;
    if (!dataFormat)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: dataFormat is NULL", P1);
    if ((st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    /* 2. dataFormat: its first four characters NHWC or NCHW (161002) */
    const bool nhwc = strncmp(dataFormat, "NHWC", 4) == 0;
    if (!nhwc && strncmp(dataFormat, "NCHW", 4) != 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: dataFormat \"%.32s\" must begin with NCHW or NHWC",
             P1, dataFormat);
    /* 3. dtypes, 4. x's rank (161002) */
    if ((st = check_dtypes(ts)))
        return st;
    if (x->ndim > 8)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x rank %llu is above 8", P1,
             (unsigned long long)x->ndim);
    /* 5. the part (161002) */
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    if (soc->npu_arch != 2002)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: not supported on %s (%s): the operator runs on the "
             "Atlas inference series (Ascend310P) only", P1, soc->name, soc->series);
    /* 6. ranks and gamma's (and beta's) length (161002) */
    if ((st = check_shapes(x, gamma, beta, nhwc)))
        return st;

    in_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* 7. an empty tensor among the six: success, no kernel, nothing written */
    bool empty = false;
    for (int i = 0; i < T_COUNT; i++)
        empty = empty || is_empty(ts[i]);
    if (empty) {
        P->h = (nr_head){.kernel = &IN_KERNEL, .call = P2, .names = TNAME, .no_kernel = true};
        for (int i = 0; i < T_COUNT; i++)
            flat_snapshot(&P->t[i], ts[i]);
        return p1_finish(P1, &IN_OPS, P, 0, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                         executor);
    }
    const int64_t N = x->dims[0], C = x->dims[nhwc ? 3 : 1];
    const int64_t E = nhwc ? x->dims[1] * x->dims[2] : x->dims[2] * x->dims[3];
    /* 8. the kernel's sizes (the docs' rule, 561103), then the copies of the results into y,
     * mean and variance (561103), in the op_api's order */
    const int64_t stats[4] = {N, nhwc ? 1 : C, 1, nhwc ? C : 1};
    if ((st = check_kernel_sizes(x, C, E)) ||
        (st = check_copy(y, T_Y, x->dims, "must equal x's for the copy of the result (the "
                         "op_api's ViewCopy)")) ||
        (st = check_copy(mean, T_MEAN, stats, nhwc ? "must be [N, 1, 1, C] (NHWC) for the copy "
                         "of the result (the op_api's ViewCopy)" : "must be [N, C, 1, 1] (NCHW) "
                         "for the copy of the result (the op_api's ViewCopy)")) ||
        (st = check_copy(variance, T_VAR, stats, nhwc ? "must be [N, 1, 1, C] (NHWC) for the "
                         "copy of the result (the op_api's ViewCopy)" : "must be [N, C, 1, 1] "
                         "(NCHW) for the copy of the result (the op_api's ViewCopy)")))
        goto fail;

    P->C = C;
    P->E = E;
    P->eps = (float)eps;
    P->dtype = x->dtype;
    P->h = (nr_head){.kernel = &IN_KERNEL, .call = P2, .names = TNAME, .rows = N * C,
                     .width = C, .row_floats = E};
    rows_snapshot(&P->t[T_X], x, nhwc);
    rows_snapshot(&P->t[T_Y], y, nhwc);
    for (int i = T_GAMMA; i < T_COUNT; i++)
        if (i != T_Y)
            flat_snapshot(&P->t[i], ts[i]);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &IN_OPS, P, in_device_workspace(soc->npu_arch, ts, nhwc, N, C), ts,
                     TNAME, T_COUNT, N_INPUTS, workspaceSize, executor);
fail:
    free(P);
    return st;
}

ACLEMU_EXPORT aclnnStatus aclnnInstanceNorm(void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
