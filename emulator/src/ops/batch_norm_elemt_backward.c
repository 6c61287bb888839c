/*
 * aclnnBatchNormElemtBackward for the CPU emulator: phase one (checks, executor), the launch and
 * the kernel. SyncBatchNorm's backward, second half: gradInput from gradOut, input, the batch's
 * mean and invstd, weight, and sumDy / sumDyXmu (aclnnBatchNormReduceBackward's sums, all-reduced
 * over the ranks) divided by the total count, the sum of every element of counter (each rank's
 * batch size).
 *
 * Facts, hicann/ops-nn norm/sync_batch_norm_backward_elemt: op_api/
 * aclnn_batch_norm_elemt_backward.cpp (phase one, its order and codes; the casts and L0 ops),
 * batch_norm_elemt_backward.cpp (the L0 SyncBatchNormBackwardElemt), op_kernel/arch35 (its DAG),
 * docs/aclnnBatchNormElemtBackward.md, norm/norm_common/op_host/op_api/norm_tensor_util.cpp
 * (FillScalar: a FLOAT weight of ones where none is given):
 * - phase one: workspaceSize/executor NULL (161001); gradOut, input, mean, invstd, sumDy,
 *   sumDyXmu, counter, gradInput NULL (161001); the dtypes in the part's list, in that order
 *   with weight (when given) after invstd, counter FLOAT, FLOAT16 or INT32 (161002); gradOut's,
 *   input's, gradInput's format not private (161002); input of rank 2..8, gradOut, gradInput,
 *   counter of rank <= 8, C (input's dim 1) not 0, gradOut's and gradInput's shape input's,
 *   mean, invstd, weight, sumDy, sumDyXmu [C] (161002). Then an empty input or gradOut:
 *   success, nothing written (no kernel).
 * - the numbers: the compute dtype is FLOAT16 when gradOut, input, mean, invstd, weight, sumDy
 *   and sumDyXmu are all FLOAT16 (an absent weight is a FLOAT fill), FLOAT otherwise; every
 *   input is cast to it. The count is the float32 ReduceSum of counter cast to FLOAT; meanDy =
 *   sumDy / count and meanDyXmu = sumDyXmu / count in float32 (RealDiv's promotion), then cast
 *   to the compute dtype. The kernel, in float32 from the compute dtype's values:
 *   gradInput = ((dy - meanDy) - (x - mean) * (meanDyXmu * (invstd * invstd))) * (invstd * w),
 *   rounded to the compute dtype (to even), then the op_api's Cast to gradInput's dtype (even).
 *
 * Kernel: every element is independent; the count is summed once in norm_rows.h's fixed order.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "convert.h"
#include "bn_channels.h"
#include "exec_workspace.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_batch_norm_elemt_backward.h"

#define P1 "aclnnBatchNormElemtBackwardGetWorkspaceSize"
#define P2 "aclnnBatchNormElemtBackward"

enum { T_DY, T_X, T_MEAN, T_INVSTD, T_W, T_SUM_DY, T_SUM_DY_XMU, T_COUNTER, T_DX, T_COUNT };
static const char *const TNAME[T_COUNT] = {"gradOut", "input", "mean",     "invstd",  "weight",
                                           "sumDy",   "sumDyXmu", "counter", "gradInput"};
#define N_INPUTS 8 /* the vendor's DFX_IN tensors: gradOut .. counter */
#define N_VECS 5   /* mean, invstd, weight, sumDy, sumDyXmu */
#define DAV_2002 2002 /* the Atlas inference series */
#define DAV_3510 3510 /* Ascend 950 (regbase) */

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;    /* what phase one reports: the device's (exec_workspace.h) */
    bool launch;         /* a non-empty input: the kernel runs */
    aclDataType compute; /* the op_api's promoted dtype: FLOAT16 or FLOAT */
    int64_t C, R, counter_n;
} bneb_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static float round_to(aclDataType dt, float v)
{
    aclemu_round_floats(dt, ACLEMU_TIES_EVEN, &v, 1);
    return v;
}

/* A run of INT32 counts as floats (the op_api's Cast to FLOAT: to nearest even). */
static void load_int32_run(const char *src, int64_t stride, int64_t n, float *dst)
{
    for (int64_t i = 0; i < n; i++) {
        int32_t v;
        memcpy(&v, src + i * stride * (int64_t)sizeof v, sizeof v);
        dst[i] = (float)v;
    }
}

/* counter's n elements as floats, in its logical order. */
static void load_counter(const tdesc *d, int64_t n, float *dst)
{
    if (d->dtype != ACL_INT32) {
        load_param(d, n, 0.0f, dst);
        return;
    }
    const char *base = view_base(d);
    LAY_WALK(&d->inner, 0, n, load_int32_run(base + off * 4, stride, run, dst + k));
}

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const bneb_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    const float *mean = T->params, *invstd = mean + C, *w = invstd + C, *mdy = w + C,
                *mdyx = mdy + C;
    float *dy = T->buf + chunk * 2 * R, *x = dy + R;
    chan_lay ldy, lx, ldx;
    chan_lay_build(&ldy, &P->t[T_DY], 1);
    chan_lay_build(&lx, &P->t[T_X], 1);
    chan_lay_build(&ldx, &P->t[T_DX], 1);
    const int64_t outer = R / (ldy.inner ? ldy.inner : 1);
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_DY], &ldy, c, outer, dy);
        load_channel(&P->t[T_X], &lx, c, outer, x);
        const float sq = invstd[c] * invstd[c];
        const float k = mdyx[c] * sq;
        const float scale = invstd[c] * w[c];
        for (int64_t i = 0; i < R; i++) {
            const float a = dy[i] - mdy[c];
            const float b = x[i] - mean[c];
            const float bk = b * k;
            const float d = a - bk;
            dy[i] = d * scale;
        }
        /* the kernel's rounding to the compute dtype, then the op_api's Cast to gradInput's */
        if (P->compute != ACL_FLOAT)
            aclemu_round_floats(P->compute, ACLEMU_TIES_EVEN, dy, (size_t)R);
        store_channel(&P->t[T_DX], &ldx, c, outer, ACLEMU_TIES_EVEN, dy);
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const bneb_payload *P = bn_task_payload(T);
    const int64_t C = P->C;
    float *v = T->params, *counter = v + N_VECS * C;
    /* read before gradInput is written: it may be the very memory of an input */
    for (int k = 0; k < N_VECS; k++)
        load_param(&P->t[T_MEAN + k], C, 1.0f, v + k * C); /* weight absent: ones */
    load_counter(&P->t[T_COUNTER], P->counter_n, counter);
    const float count = nr_scaled_sum(counter, P->counter_n, 1.0f);
    for (int k = 3; k < 5; k++) /* meanDy, meanDyXmu: RealDiv in float32, then the cast */
        for (int64_t c = 0; c < C; c++)
            v[k * C + c] = round_to(P->compute, v[k * C + c] / count);
    aclemu_parallel_for(C, T->nchunks, channels_body, T);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BNEB_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bneb_payload),
    .tensors_at = offsetof(bneb_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = 2, /* a channel's gradOut (then gradInput), input */
    .nparams = N_VECS, /* and, per launch, as many [C] rows as counter's values fill */
    .run = task_run,
};

static aclnnStatus bneb_launch(void *payload, void *const *addrs, void *workspace,
                               uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const bneb_payload *P = payload;
    bn_kernel kernel = BNEB_KERNEL;
    if (P->launch) /* params: the vectors, then counter's values */
        kernel.nparams += (int)((P->counter_n + P->C - 1) / P->C);
    else /* an empty input returns before any L0 operator: no kernel, nothing queued */
        kernel.run = NULL;
    return bn_task_launch(&kernel, payload, addrs, workspace, P->ws_size, stream,
                          P->launch ? P->C : 0, P->R);
}

static const aclemu_executor_ops BNEB_OPS = {
    .op_name = P2,
    .launch = bneb_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one ------------------------------------------------------------------------------- */

static aclnnStatus check_dtype(const aclTensor *t, int i, const aclemu_soc *soc)
{
    const aclDataType dt = t->dtype;
    if (i == T_COUNTER) {
        if (!(dt == ACL_FLOAT || dt == ACL_FLOAT16 || dt == ACL_INT32))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: counter dtype %s is not supported: FLOAT, "
                 "FLOAT16, INT32", P1, dname(dt));
        return ACLNN_SUCCESS;
    }
    return bn_check_float_dtype(P1, TNAME[i], t, soc);
}

static aclnnStatus check_max_rank(const aclTensor *t, int i, uint64_t min)
{
    if (t->ndim < min || t->ndim > 8)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is not in [%llu, 8]", P1, TNAME[i],
             (unsigned long long)t->ndim, (unsigned long long)min);
    return ACLNN_SUCCESS;
}

/* CheckParams after the NULL checks: dtypes, formats, shapes, in the op_api's order. */
static aclnnStatus check_params(const aclTensor *const *ts, const aclemu_soc *soc)
{
    aclnnStatus st;
    for (int i = 0; i < T_COUNT; i++)
        if (ts[i] && (st = check_dtype(ts[i], i, soc)))
            return st;
    static const int FORMATTED[3] = {T_DY, T_X, T_DX};
    for (int k = 0; k < 3; k++) {
        const aclTensor *t = ts[FORMATTED[k]];
        if (p1_private_format(t->format))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s's format (aclFormat %d) is private: ND, NCHW, "
                 "NCL, NCDHW are taken", P1, TNAME[FORMATTED[k]], (int)t->format);
    }
    const aclTensor *x = ts[T_X];
    if ((st = check_max_rank(x, T_X, 2)) || (st = check_max_rank(ts[T_DY], T_DY, 0)) ||
        (st = check_max_rank(ts[T_DX], T_DX, 0)) ||
        (st = check_max_rank(ts[T_COUNTER], T_COUNTER, 0)))
        return st;
    const int64_t C = x->dims[1];
    if (C == 0)
        return shape_error(P1, "input", x->dims, x->ndim, "has no channel: dim 1 must not be 0,",
                           x->dims, x->ndim);
    for (int i = T_DY; i <= T_DX; i += T_DX - T_DY)
        if (!same_dims(ts[i]->dims, ts[i]->ndim, x->dims, x->ndim))
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim, "must equal input's",
                               x->dims, x->ndim);
    for (int i = T_MEAN; i <= T_SUM_DY_XMU; i++) {
        const aclTensor *t = ts[i];
        if (t && !(t->ndim == 1 && t->dims[0] == C))
            return shape_error(P1, TNAME[i], t->dims, t->ndim,
                               "must be [C], C the channel count of input", x->dims, x->ndim);
    }
    return ACLNN_SUCCESS;
}

static bool is_empty(const aclTensor *t)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] == 0)
            return true;
    return false;
}

/* GetPromoteType: FLOAT16 only when every floating input is (an absent weight is FLOAT). */
static aclDataType compute_dtype(const aclTensor *const *ts)
{
    for (int i = T_DY; i <= T_SUM_DY_XMU; i++)
        if (!ts[i] || ts[i]->dtype != ACL_FLOAT16)
            return ACL_FLOAT;
    return ACL_FLOAT16;
}

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/*
 * aclnn_batch_norm_elemt_backward.cpp's graph in launch order: an absent weight's FillScalar
 * (C FLOAT); Contiguous copies of the strided inputs; the casts of gradOut .. sumDyXmu to the
 * promoted dtype; MeanByCounter: counter cast to FLOAT, its ReduceSum (one FLOAT), sumDy and
 * sumDyXmu back to FLOAT, two RealDivs (C FLOAT each); per vector (mean, invstd, weight,
 * meanDy, meanDyXmu) an UnsqueezeNd view and a BroadcastTo into an executor-allocated tensor of
 * input's shape; the two FLOAT broadcasts cast to the promoted dtype; SyncBatchNormBackwardElemt
 * (reads all seven; its result in the promoted dtype), cast to gradInput's and copied out.
 * Kernel workspaces on Ascend 950 only: ReduceSum 16 MiB (opbase src/op_common/atvoss/reduce/
 * reduce_tiling.cpp CalcUserWorkSpace; per-core partials when groupR > 1 not modelled),
 * RealDiv 16 MiB (opbase broadcast_tiling.h DEFAULT_TILING_WORKSPACE_SIZE), BroadcastTo 16 MiB
 * (ops-math broadcast_to_tiling_base.h kSyncWorkSpaceSize), SyncBatchNormBackwardElemt's
 * GetLibApiWorkSpaceSize (op_host/arch35); elsewhere TBE kernels (not public: none).
 */
static uint64_t bneb_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                               aclDataType p, uint64_t C, uint64_t X, uint64_t counter_n)
{
    const uint64_t ws = soc->npu_arch == DAV_3510 ? EW_SYS_WORKSPACE : 0;
    const uint64_t ps = aclemu_dtype_size(p);
    ew_graph g = ew_graph_on(soc->npu_arch);
    const int fill = ts[T_W] ? -1 : ew_fill(&g, C * 4);
    int h[T_COUNT];
    for (int i = T_DY; i <= T_COUNTER; i++)
        h[i] = i == T_W && fill >= 0 ? fill : ew_contiguous_copy(&g, ts[i]);
    aclDataType dt[T_COUNT];
    for (int i = T_DY; i <= T_COUNTER; i++)
        dt[i] = i == T_W && fill >= 0 ? ACL_FLOAT : ts[i]->dtype;
    for (int i = T_DY; i <= T_SUM_DY_XMU; i++)
        h[i] = ew_cast(&g, h[i], dt[i], p, i <= T_X ? X : C);
    const int count = ew_cast(&g, h[T_COUNTER], dt[T_COUNTER], ACL_FLOAT, counter_n);
    const int total = ew_op(&g, count, -1, ws, 4); /* ReduceSum over every dim */
    int mean_dy[2];
    for (int i = 0; i < 2; i++)
        mean_dy[i] = ew_cast(&g, h[T_SUM_DY + i], p, ACL_FLOAT, C);
    for (int i = 0; i < 2; i++)
        mean_dy[i] = ew_op(&g, mean_dy[i], total, ws, C * 4); /* RealDiv */
    const int vec[5] = {h[T_MEAN], h[T_INVSTD], h[T_W], mean_dy[0], mean_dy[1]};
    int brc[5];
    for (int i = 0; i < 5; i++)
        brc[i] = ew_op(&g, vec[i], -1, ws, X * (i < 3 ? ps : 4)); /* BroadcastTo */
    for (int i = 3; i < 5; i++)
        brc[i] = ew_cast(&g, brc[i], ACL_FLOAT, p, X);
    const int k = ew_kernel(&g); /* SyncBatchNormBackwardElemt */
    ew_read(&g, h[T_DY], k);
    ew_read(&g, h[T_X], k);
    ew_read_all(&g, brc, 5, k);
    if (ws)
        ew_kernel_workspace(&g, k, ew_lib_api_workspace(soc));
    ew_copy_out(&g, ew_output(&g, k, X * ps), p, ts[T_DX], X);
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const aclTensor *sumDy,
    const aclTensor *sumDyXmu, aclTensor *counter, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {gradOut, input,    mean,    invstd,   weight,
                                    sumDy,   sumDyXmu, counter, gradInput};

    /* 0. the out-pointers first (161001), 1. CheckNotNull: every tensor but weight (161001);
     * all live; the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(0, T_COUNT) & ~P1_BIT(T_W),
                                workspaceSize, executor, &soc);
    if (st)
        return st;
    /* 2-4. dtypes, formats, shapes (161002) */
    if ((st = check_params(ts, soc)))
        return st;

    bneb_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* 5. an empty input or gradOut: success, nothing written, no kernel */
    if (!is_empty(input) && !is_empty(gradOut)) {
        /* 6. Stricter (docs/emulator.md): the Atlas inference series, which the docs list as
         * unsupported, where no kernel of the operator is known */
        if (soc->npu_arch == DAV_2002) {
            free(P);
            FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s) "
                 "(docs/aclnnBatchNormElemtBackward.md)", P1, soc->name, soc->series);
        }
        int64_t X = 0, n = 0;
        if (!numel(input->dims, input->ndim, &X) || !numel(counter->dims, counter->ndim, &n)) {
            free(P);
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's or counter's element count overflows "
                 "int64", P1);
        }
        P->launch = true;
        P->compute = compute_dtype(ts);
        P->C = input->dims[1];
        P->R = X / P->C;
        P->counter_n = n;
        for (int i = 0; i < T_COUNT; i++)
            snapshot(&P->t[i], ts[i], -1);
        P->ws_size = bneb_workspace(soc, ts, P->compute, (uint64_t)P->C, (uint64_t)X,
                                    (uint64_t)n);
    }
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BNEB_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormElemtBackward(void *workspace, uint64_t workspaceSize,
                                                      aclOpExecutor *executor,
                                                      const aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
