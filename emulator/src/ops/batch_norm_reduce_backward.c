/*
 * aclnnBatchNormReduceBackward for the CPU emulator: phase one (checks, executor), the launch and
 * the kernel. SyncBatchNorm's backward, first half: per channel sumDy = sum(gradOut) and
 * sumDyXmu = sum(gradOut * (input - mean)), the sums each rank contributes to the all-reduce
 * before aclnnBatchNormElemtBackward, and from them gradWeight = sumDyXmu * invstd and
 * gradBias = sumDy; each written only where its flag (inputG: sumDy and sumDyXmu, weightG,
 * biasG) asks.
 *
 * Facts, hicann/ops-nn norm/sync_batch_norm_backward_reduce: op_api/
 * aclnn_batch_norm_backward_reduce.cpp (phase one, its order and codes; the L0 ops),
 * batch_norm_backward_reduce.cpp (the L0 SyncBatchNormBackwardReduce), op_kernel/arch35 (its
 * DAG), docs/aclnnBatchNormReduceBackward.md, norm/norm_common/op_host/op_api/
 * norm_tensor_util.cpp (FillScalar):
 * - phase one: workspaceSize/executor NULL (161001); gradOut, input, mean, invstd NULL, then
 *   the flagged outputs NULL (161001); the dtypes of gradOut, input, mean, invstd in the part's
 *   list, gradOut's input's, the flagged outputs' in the list (161002); formats: gradOut's
 *   input's, none of the inputs or flagged outputs private (161002); gradOut and input of rank
 *   2..8, C (dim 1) not 0, the flagged outputs [C] (161002). Stricter (the docs' rules, which
 *   the code does not check): weight's dtype in the list, gradOut's shape input's, mean,
 *   invstd and weight [C] (161002). Then an empty gradOut, input, mean or invstd: success; on
 *   Ascend 950 the flagged outputs are filled with zeros (a kernel runs), elsewhere nothing is
 *   written (no kernel).
 * - the numbers, in float32 (the op_api casts every input to FLOAT; weight is cast and never
 *   used): sdx = ReduceSum(gradOut * input) and sdy = ReduceSum(gradOut) over every dim but the
 *   channel's; the kernel then sumDyXmu = sdx - mean * sdy (not the sum of gradOut * (x -
 *   mean) the docs write) and gradWeight = sumDyXmu * invstd; gradBias is sdy. Each result goes
 *   through the op_api's Cast to its output's dtype (to even).
 *
 * Kernel: channels are independent; each channel's sums have norm_rows.h's fixed order, so the
 * split of channels over threads never changes a bit. Nothing is written but the flagged
 * outputs.
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

#include "aclnnop/aclnn_batch_norm_backward_reduce.h"

#define P1 "aclnnBatchNormReduceBackwardGetWorkspaceSize"
#define P2 "aclnnBatchNormReduceBackward"

enum { T_DY, T_X, T_MEAN, T_INVSTD, T_W, T_SUM_DY, T_SUM_DY_XMU, T_DW, T_DB, T_COUNT };
static const char *const TNAME[T_COUNT] = {"gradOut", "input",    "mean",       "invstd",
                                           "weight",  "sumDy",    "sumDyXmu",   "gradWeight",
                                           "gradBias"};
#define N_INPUTS 5 /* the vendor's DFX_IN tensors: gradOut .. weight */
#define DAV_2002 2002 /* the Atlas inference series */
#define DAV_3510 3510 /* Ascend 950 (regbase) */

/* The flag that asks for output T_SUM_DY + k (the op_api's GetMaskIdx). */
static int flag_of(int k)
{
    return k < 2 ? 0 : k - 1;
}

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;    /* what phase one reports: the device's (exec_workspace.h) */
    bool flags[3];       /* inputG, weightG, biasG */
    bool sums;           /* a non-empty input: the sums run (whatever the flags) */
    bool zero_fill;      /* Ascend 950's empty case: the flagged outputs filled with zeros */
    int64_t C, R;        /* channels, values per channel */
} bnrb_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static void write_flagged(const bnrb_payload *P, int64_t c, const float *vals)
{
    for (int k = 0; k < 4; k++)
        if (P->flags[flag_of(k)])
            put_one(&P->t[T_SUM_DY + k], c, vals[k]);
}

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const bnrb_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    const float *mean = T->params, *invstd = mean + C;
    float *dy = T->buf + chunk * 2 * R, *t = dy + R;
    chan_lay ldy, lx;
    chan_lay_build(&ldy, &P->t[T_DY], 1);
    chan_lay_build(&lx, &P->t[T_X], 1);
    const int64_t outer = R / (ldy.inner ? ldy.inner : 1);
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_DY], &ldy, c, outer, dy);
        load_channel(&P->t[T_X], &lx, c, outer, t);
        for (int64_t i = 0; i < R; i++)
            t[i] = dy[i] * t[i]; /* the op_api's Mul */
        const float sum_dy_x = nr_scaled_sum(t, R, 1.0f);
        const float sum_dy = nr_scaled_sum(dy, R, 1.0f);
        /* SyncBatchNormBackwardReduce: Mul, Sub, Mul */
        const float shift = mean[c] * sum_dy;
        const float sum_dy_xmu = sum_dy_x - shift;
        const float grad_weight = sum_dy_xmu * invstd[c];
        const float vals[4] = {sum_dy, sum_dy_xmu, grad_weight, sum_dy};
        write_flagged(P, c, vals);
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const bnrb_payload *P = bn_task_payload(T);
    if (P->zero_fill) {
        static const float ZEROS[4] = {0};
        for (int64_t c = 0; c < P->C; c++)
            write_flagged(P, c, ZEROS);
        return;
    }
    /* read before any is written: an output may be the very memory of a vector */
    load_param(&P->t[T_MEAN], P->C, 0.0f, T->params);
    load_param(&P->t[T_INVSTD], P->C, 0.0f, T->params + P->C);
    aclemu_parallel_for(P->C, T->nchunks, channels_body, T);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BNRB_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bnrb_payload),
    .tensors_at = offsetof(bnrb_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = 2, /* a channel's gradOut, then its products */
    .nparams = 2,      /* mean, invstd */
    .run = task_run,
};

static aclnnStatus bnrb_launch(void *payload, void *const *addrs, void *workspace,
                               uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const bnrb_payload *P = payload;
    bn_kernel kernel = BNRB_KERNEL;
    /* the empty case off Ascend 950 returns before any L0 operator: no kernel, nothing queued */
    if (!P->sums && !P->zero_fill)
        kernel.run = NULL;
    return bn_task_launch(&kernel, payload, addrs, workspace, P->ws_size, stream,
                          P->sums ? P->C : 0, P->R);
}

static const aclemu_executor_ops BNRB_OPS = {
    .op_name = P2,
    .launch = bnrb_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one ------------------------------------------------------------------------------- */

static aclnnStatus check_vector(const aclTensor *t, int i, int64_t C, const aclTensor *x,
                                const char *rule)
{
    if (t && !(t->ndim == 1 && t->dims[0] == C))
        return shape_error(P1, TNAME[i], t->dims, t->ndim, rule, x->dims, x->ndim);
    return ACLNN_SUCCESS;
}

static bool is_empty(const aclTensor *t)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] == 0)
            return true;
    return false;
}

/* CheckParams after the NULL checks: dtypes, formats, shapes, in the op_api's order, with the
 * docs' rules the code leaves out last in each group (stricter: docs/emulator.md). */
static aclnnStatus check_params(const aclTensor *const *ts, const bool *flags,
                                const aclemu_soc *soc)
{
    aclnnStatus st;
    const aclTensor *dy = ts[T_DY], *x = ts[T_X];
    for (int i = T_DY; i <= T_INVSTD; i++)
        if ((st = bn_check_float_dtype(P1, TNAME[i], ts[i], soc)))
            return st;
    if (dy->dtype != x->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOut dtype %s must be input's dtype %s", P1,
             dname(dy->dtype), dname(x->dtype));
    for (int k = 0; k < 4; k++)
        if (flags[flag_of(k)] &&
            (st = bn_check_float_dtype(P1, TNAME[T_SUM_DY + k], ts[T_SUM_DY + k], soc)))
            return st;
    if (ts[T_W] && (st = bn_check_float_dtype(P1, TNAME[T_W], ts[T_W], soc)))
        return st;
    if (dy->format != x->format)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOut's format (aclFormat %d) must be input's "
             "format (aclFormat %d)", P1, (int)dy->format, (int)x->format);
    for (int i = 0; i < T_COUNT; i++) {
        const aclTensor *t = ts[i];
        const bool checked = i <= T_INVSTD || (i >= T_SUM_DY && flags[flag_of(i - T_SUM_DY)]);
        if (checked && p1_private_format(t->format))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s's format (aclFormat %d) is private: ND, NCHW, "
                 "NHWC, HWCN, NDHWC, NCDHW are taken", P1, TNAME[i], (int)t->format);
    }
    if ((st = bn_check_rank(P1, TNAME[T_DY], dy)) || (st = bn_check_rank(P1, TNAME[T_X], x)))
        return st;
    const int64_t C = x->dims[1];
    if (C == 0)
        return shape_error(P1, "input", x->dims, x->ndim, "has no channel: dim 1 must not be 0,",
                           x->dims, x->ndim);
    for (int k = 0; k < 4; k++)
        if (flags[flag_of(k)] &&
            (st = check_vector(ts[T_SUM_DY + k], T_SUM_DY + k, C, x,
                               "must be [C], C the channel count of input")))
            return st;
    if (!same_dims(dy->dims, dy->ndim, x->dims, x->ndim))
        return shape_error(P1, "gradOut", dy->dims, dy->ndim,
                           "must equal input's (docs/aclnnBatchNormReduceBackward.md)", x->dims,
                           x->ndim);
    for (int i = T_MEAN; i <= T_W; i++)
        if ((st = check_vector(ts[i], i, C, x, "must be [C], C the channel count of input "
                               "(docs/aclnnBatchNormReduceBackward.md)")))
            return st;
    return ACLNN_SUCCESS;
}

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/* OutputParamCastAndViewCopy: per flag, its results cast to their outputs' dtypes and copied
 * out (sumDy's result also feeds gradBias: once handed to a caller's tensor it is no longer
 * the workspace's). */
static void bnrb_copy_outs(ew_graph *g, int sum_dy, int sum_dy_xmu, int grad_w,
                           const aclTensor *const *ts, const bool *flags, uint64_t C)
{
    const int res[4] = {sum_dy, sum_dy_xmu, grad_w, sum_dy};
    for (int k = 0; k < 4; k++)
        if (flags[flag_of(k)])
            ew_copy_out(g, res[k], ACL_FLOAT, ts[T_SUM_DY + k], C);
}

/*
 * aclnn_batch_norm_backward_reduce.cpp's graph in launch order: an absent weight's FillScalar
 * (C FLOAT); Contiguous copies of strided gradOut, input, mean, invstd, weight, then each cast
 * to FLOAT (weight's cast is read by nobody); Mul(gradOut, input), ReduceSum of it and of
 * gradOut; SyncBatchNormBackwardReduce's sumDyXmu and gradWeight (C FLOAT each); the flagged
 * outputs' casts and copies; an unflagged result stays in the workspace. Kernel workspaces
 * on Ascend 950 only: Mul's BroadcastBaseTiling 16 MiB (opbase atvoss broadcast_tiling.h
 * DEFAULT_TILING_WORKSPACE_SIZE), ReduceSum's 16 MiB (opbase src/op_common/atvoss/reduce/
 * reduce_tiling.cpp CalcUserWorkSpace; its per-core partials when the reduced axis splits over
 * cores, groupR > 1, not modelled), SyncBatchNormBackwardReduce's GetLibApiWorkSpaceSize
 * (op_host/arch35); elsewhere these are TBE kernels (compile-info workspaces not public: none).
 * An empty input on Ascend 950: FillScalar's zeros copied out per flag; elsewhere nothing.
 */
static uint64_t bnrb_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                               const bool *flags, bool empty, uint64_t C, uint64_t X)
{
    const bool a950 = soc->npu_arch == DAV_3510;
    ew_graph g = ew_graph_on(soc->npu_arch);
    if (empty) {
        if (a950) {
            const int zeros = ew_fill(&g, C * 4);
            bnrb_copy_outs(&g, zeros, zeros, zeros, ts, flags, C);
        }
        return ew_size(&g);
    }
    const int fill = ts[T_W] ? -1 : ew_fill(&g, C * 4);
    int h[5];
    for (int i = T_DY; i <= T_W; i++)
        h[i] = i == T_W && fill >= 0 ? fill : ew_contiguous_copy(&g, ts[i]);
    for (int i = T_DY; i <= T_W; i++)
        h[i] = ew_cast(&g, h[i], i == T_W && fill >= 0 ? ACL_FLOAT : ts[i]->dtype, ACL_FLOAT,
                       i <= T_X ? X : C);
    const uint64_t ws = a950 ? EW_SYS_WORKSPACE : 0;
    const int prod = ew_op(&g, h[T_DY], h[T_X], ws, X * 4); /* Mul */
    const int sdx = ew_op(&g, prod, -1, ws, C * 4);         /* ReduceSum(gradOut * input) */
    const int sdy = ew_op(&g, h[T_DY], -1, ws, C * 4);      /* ReduceSum(gradOut) */
    const int ks = ew_kernel(&g); /* SyncBatchNormBackwardReduce */
    const int reads[4] = {sdy, sdx, h[T_MEAN], h[T_INVSTD]};
    ew_read_all(&g, reads, 4, ks);
    if (a950)
        ew_kernel_workspace(&g, ks, ew_lib_api_workspace(soc));
    const int xmu = ew_output(&g, ks, C * 4), gw = ew_output(&g, ks, C * 4);
    bnrb_copy_outs(&g, sdy, xmu, gw, ts, flags, C);
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const bool inputG, const bool weightG,
    const bool biasG, aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight,
    aclTensor *gradBias, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {gradOut, input,    mean,       invstd,  weight,
                                    sumDy,   sumDyXmu, gradWeight, gradBias};
    const bool flags[3] = {inputG, weightG, biasG};

    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;
    /* 1. CheckInputNotNull, CheckOutputNotNull (the flagged outputs) (161001) */
    if ((st = p1_required(P1, ts, TNAME, T_DY, T_W)))
        return st;
    for (int k = 0; k < 4; k++)
        if (flags[flag_of(k)] && !ts[T_SUM_DY + k])
            FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL but %s is true", P1,
                 TNAME[T_SUM_DY + k], (const char *[]){"inputG", "weightG", "biasG"}[flag_of(k)]);
    if ((st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */

    /* 2-4. dtypes, formats, shapes (161002) */
    if ((st = check_params(ts, flags, soc)))
        return st;

    bnrb_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    memcpy(P->flags, flags, sizeof flags);
    P->C = input->dims[1];
    /* 5. an empty gradOut, input, mean or invstd: Ascend 950 fills the flagged outputs with
     * zeros (FillScalar, then the outputs' Cast and ViewCopy); elsewhere nothing runs */
    const bool empty = is_empty(gradOut) || is_empty(input) || is_empty(mean) || is_empty(invstd);
    if (empty)
        P->zero_fill = soc->npu_arch == DAV_3510;
    else {
        /* 6. Stricter (docs/emulator.md): the Atlas inference series, which the docs list as
         * unsupported, where no kernel of the operator is known */
        if (soc->npu_arch == DAV_2002) {
            free(P);
            FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s) "
                 "(docs/aclnnBatchNormReduceBackward.md)", P1, soc->name, soc->series);
        }
        int64_t X = 0;
        if (!numel(input->dims, input->ndim, &X)) {
            free(P);
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's element count overflows int64", P1);
        }
        P->sums = true;
        P->R = X / P->C;
        snapshot(&P->t[T_DY], gradOut, -1);
        snapshot(&P->t[T_X], input, -1);
        snapshot(&P->t[T_MEAN], mean, -1);
        snapshot(&P->t[T_INVSTD], invstd, -1);
    }
    P->ws_size = bnrb_workspace(soc, ts, flags, empty, (uint64_t)P->C,
                                (uint64_t)(P->C * P->R));
    if (P->sums || P->zero_fill)
        for (int k = 0; k < 4; k++)
            if (flags[flag_of(k)])
                snapshot(&P->t[T_SUM_DY + k], ts[T_SUM_DY + k], -1);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BNRB_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormReduceBackward(void *workspace, uint64_t workspaceSize,
                                                       aclOpExecutor *executor,
                                                       const aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
