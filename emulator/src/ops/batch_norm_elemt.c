/*
 * aclnnBatchNormElemt for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel. SyncBatchNorm's element-wise step: each channel of input normalized with a given mean
 * and invstd (the gathered ones), then scaled by weight and shifted by bias.
 *
 * Facts, hicann/ops-nn norm/batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp (the
 * phase one, its order and codes, the L0 ops), norm/batch_norm_v3/op_host/op_api/
 * aclnn_batch_norm.cpp (`BatchNorm`, which it calls with training false: the kernels per part),
 * norm/norm_common/op_host/op_api/norm_tensor_util.cpp (FillScalar: FLOAT ones and zeros for
 * an absent weight and bias), docs/aclnnBatchNormElemt.md:
 * - phase one: workspaceSize/executor NULL (161001); input, mean, invstd or output NULL (161002:
 *   the op_api's CHECK_RET returns ACLNN_ERR_PARAM_INVALID for them); each tensor's dtype in
 *   the part's list (no dtype need match another's); output's format input's, input's not
 *   private; ranks 2..8, output's shape input's, C (dim 1) not 0, weight, bias, mean, invstd
 *   [C] (all 161002); an empty input: success, no kernel; the result's copy into output needs
 *   output's dtype to be input's (561103).
 * - the numbers: the op_api makes the variance from invstd with L0 Mul, OnesLike, Div and Sub
 *   in invstd's dtype, var = (1 / (invstd * invstd)) - eps, each step rounded to that dtype
 *   (eps too), then runs BatchNorm's inference on it (bn_channels.h bn_infer_channel: BNInfer,
 *   or Ascend 950's BatchNormV3 with its Newton-Raphson rstd), which adds eps back; y rounded
 *   to input's dtype (to even). The steps' float Div, Sqrt (and the TBE Mul, Div, Sub off
 *   Ascend 950, not public) are taken as correctly rounded.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "convert.h"
#include "bn_channels.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_batch_norm_elemt.h"

#define P1 "aclnnBatchNormElemtGetWorkspaceSize"
#define P2 "aclnnBatchNormElemt"

/* the prototype's order */
enum { T_INPUT, T_WEIGHT, T_BIAS, T_MEAN, T_INVSTD, T_OUTPUT, T_COUNT };
static const char *const TNAME[T_COUNT] = {"input", "weight", "bias", "mean", "invstd",
                                           "output"};
#define N_INPUTS 5 /* input .. invstd */

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;    /* what phase one reports: the device's (exec_workspace.h) */
    bool no_kernel;       /* an empty input: the op_api returns before any L0 op */
    bool regbase;         /* Ascend 950's BatchNormV3 (else BNInfer) */
    int64_t C, R;         /* channels, values per channel */
    float eps;
} be_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static float round_to(aclDataType dt, float v)
{
    aclemu_round_floats(dt, ACLEMU_TIES_EVEN, &v, 1);
    return v;
}

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const be_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    const float *w = T->params, *b = w + C, *mean = b + C, *var = mean + C;
    float *x = T->buf + chunk * R;
    chan_lay in, out;
    chan_lay_build(&in, &P->t[T_INPUT], 1);
    chan_lay_build(&out, &P->t[T_OUTPUT], 1);
    const int64_t outer = R / (in.inner ? in.inner : 1);
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_INPUT], &in, c, outer, x);
        bn_infer_channel(x, R, mean[c], var[c], w[c], b[c], P->eps, P->regbase);
        store_channel(&P->t[T_OUTPUT], &out, c, outer, ACLEMU_TIES_EVEN, x);
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const be_payload *P = bn_task_payload(T);
    const int64_t C = P->C;
    float *w = T->params, *b = w + C, *mean = b + C, *var = mean + C;
    /* read before any is written: output may be the very memory of input or a vector */
    load_param(&P->t[T_WEIGHT], C, 1.0f, w);
    load_param(&P->t[T_BIAS], C, 0.0f, b);
    load_param(&P->t[T_MEAN], C, 0.0f, mean);
    load_param(&P->t[T_INVSTD], C, 1.0f, var);
    /* the op_api's variance: Mul, OnesLike + Div, Sub of eps, in invstd's dtype */
    const aclDataType dt = P->t[T_INVSTD].dtype;
    const float eps = round_to(dt, P->eps);
    for (int64_t c = 0; c < C; c++) {
        const float sq = round_to(dt, var[c] * var[c]);
        const float rec = round_to(dt, 1.0f / sq);
        var[c] = round_to(dt, rec - eps);
    }
    aclemu_parallel_for(C, T->nchunks, channels_body, T);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BE_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(be_payload),
    .tensors_at = offsetof(be_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = 1, /* a channel's values, normalized in place */
    .nparams = 4,      /* weight, bias, mean, then the variance made from invstd */
    .run = task_run,
};

/* An empty input: the memory checked as for any run, nothing queued (run NULL). */
static const bn_kernel BE_NO_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(be_payload),
    .tensors_at = offsetof(be_payload, t),
    .ntensors = T_COUNT,
    .run = NULL,
};

static aclnnStatus be_launch(void *payload, void *const *addrs, void *workspace,
                             uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const be_payload *P = payload;
    return P->no_kernel ? bn_task_launch(&BE_NO_KERNEL, payload, addrs, workspace, P->ws_size,
                                         stream, 0, 0)
                        : bn_task_launch(&BE_KERNEL, payload, addrs, workspace, P->ws_size,
                                         stream, P->C, P->R);
}

static const aclemu_executor_ops BE_OPS = {
    .op_name = P2,
    .launch = be_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one -------------------------------------------------------------------------------- */

/* CheckShape, in its order. */
static aclnnStatus check_shapes(const aclTensor *const *ts)
{
    const aclTensor *input = ts[T_INPUT], *output = ts[T_OUTPUT];
    aclnnStatus st;
    if ((st = bn_check_rank(P1, TNAME[T_INPUT], input)) ||
        (st = bn_check_rank(P1, TNAME[T_OUTPUT], output)))
        return st;
    if (!same_dims(output->dims, output->ndim, input->dims, input->ndim))
        return shape_error(P1, "output", output->dims, output->ndim, "must equal input's",
                           input->dims, input->ndim);
    const int64_t C = input->dims[1];
    if (C == 0) {
        char s[256];
        fmt_dims(s, sizeof s, input->dims, input->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input shape %s has no channel: dim 1 (C) must not "
             "be 0", P1, s);
    }
    for (int i = T_WEIGHT; i <= T_INVSTD; i++)
        if (ts[i] && ts[i]->ndim != 1)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must have rank 1 ([C], C the channel count of input)",
                               input->dims, input->ndim);
    for (int i = T_WEIGHT; i <= T_INVSTD; i++)
        if (ts[i] && ts[i]->dims[0] != C)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must be [C], C the channel count (dim 1) of input",
                               input->dims, input->ndim);
    return ACLNN_SUCCESS;
}

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/*
 * aclnn_batch_norm_elemt.cpp's graph in launch order: a Contiguous copy of a strided input;
 * FillScalar's FLOAT ones and zeros for an absent weight and bias; invstd's copy; Mul(invstd,
 * invstd), OnesLike, Div, Sub(eps: a host scalar); copies of strided weight, bias, mean; then
 * BatchNorm with training false (bn_graph_workspace: BNInfer and its FLOAT casts, Ascend 950's
 * BatchNormV3 with its 16 MiB, rank-5 Transposes on DAV_1001) and the result's copy. Mul,
 * OnesLike, Div and Sub (C values of invstd's dtype each) take 16 MiB on Ascend 950 (ops-math
 * math/{mul,div,sub}/op_host/arch35 through opbase broadcast_tiling.h
 * DEFAULT_TILING_WORKSPACE_SIZE; ones_like_tiling_arch35.cpp ASCEND_WORKSPACE); elsewhere they
 * are TBE kernels (not public: none).
 */
static uint64_t be_workspace(const aclemu_soc *soc, const aclTensor *const *ts, uint64_t C,
                             uint64_t X)
{
    const bool a950 = soc->npu_arch == 3510;
    const uint64_t ws = a950 ? EW_SYS_WORKSPACE : 0;
    bn_graph_args a = {.x = ts[T_INPUT], .out = ts[T_OUTPUT], .v3 = a950, .regbase = a950,
                       .C = C, .X = X};
    ew_graph g = ew_graph_on(soc->npu_arch);
    const int xin = ew_contiguous_copy(&g, ts[T_INPUT]);
    const int w = ts[T_WEIGHT] ? -1 : ew_fill(&g, C * 4), b = ts[T_BIAS] ? -1 : ew_fill(&g, C * 4);
    const aclDataType vdt = ts[T_INVSTD]->dtype;
    const uint64_t vb = C * aclemu_dtype_size(vdt);
    const int inv = ew_contiguous_copy(&g, ts[T_INVSTD]);
    const int sq = ew_op(&g, inv, -1, ws, vb);   /* Mul */
    const int one = ew_op(&g, sq, -1, ws, vb);   /* OnesLike */
    const int quot = ew_op(&g, one, sq, ws, vb); /* Div */
    const int var = ew_op(&g, quot, -1, ws, vb); /* Sub */
    a.h[2] = w < 0 ? ew_contiguous_copy(&g, ts[T_WEIGHT]) : w;
    a.h[3] = b < 0 ? ew_contiguous_copy(&g, ts[T_BIAS]) : b;
    a.h[0] = ew_contiguous_copy(&g, ts[T_MEAN]);
    a.h[1] = var;
    const aclDataType dts[4] = {ts[T_MEAN]->dtype, vdt, ts[T_WEIGHT] ? ts[T_WEIGHT]->dtype
                                : ACL_FLOAT, ts[T_BIAS] ? ts[T_BIAS]->dtype : ACL_FLOAT};
    memcpy(a.dt, dts, sizeof dts);
    return bn_graph_workspace(&g, soc, xin, &a);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias, aclTensor *mean,
    aclTensor *invstd, double eps, aclTensor *output, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {input, weight, bias, mean, invstd, output};

    /* 0. the out-pointers first (L2_DFX_PHASE_1: 161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;
    /* 1. CheckNotNull: the op_api returns ACLNN_ERR_PARAM_INVALID for it (161002) */
    static const int REQUIRED[] = {T_INPUT, T_MEAN, T_INVSTD, T_OUTPUT};
    for (size_t k = 0; k < sizeof REQUIRED / sizeof REQUIRED[0]; k++)
        if (!ts[REQUIRED[k]])
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s is NULL", P1, TNAME[REQUIRED[k]]);
    if ((st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;

    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */

    /* 2. CheckDtypeValid (161002): each given tensor in the part's list, in its order */
    for (int i = 0; i < T_COUNT; i++)
        if (ts[i] && (st = bn_check_float_dtype(P1, TNAME[i], ts[i], soc)))
            return st;
    /* 3. CheckFormat (161002) */
    if (input->format != output->format)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: output's format (aclFormat %d) must be input's "
             "format (aclFormat %d)", P1, (int)output->format, (int)input->format);
    if (p1_private_format(input->format))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's format (aclFormat %d) is private: ND, NC, "
             "NCL, NCHW, NCDHW are taken", P1, (int)input->format);
    /* stricter (docs/aclnnBatchNormElemt.md: NC, NCL, NCHW, NCDHW, ND; the channel is dim 1):
     * a channels-last format would make Ascend 950's BatchNorm take the last dim as C */
    if (input->format == ACL_FORMAT_NHWC || input->format == ACL_FORMAT_NDHWC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's format NHWC/NDHWC (aclFormat %d) is not "
             "supported: the channel is dim 1 (docs/aclnnBatchNormElemt.md)", P1,
             (int)input->format);
    /* 4. CheckShape (161002) */
    if ((st = check_shapes(ts)))
        return st;
    int64_t X = 0;
    if (!numel(input->dims, input->ndim, &X))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's element count overflows int64", P1);

    be_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* 5. an empty input: success, workspace 0, no kernel */
    if (X == 0) {
        P->no_kernel = true;
        return p1_finish(P1, &BE_OPS, P, 0, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                         executor);
    }
    /* 6. the result's ViewCopy into output (the op_api's CHECK_RET: 561103) */
    if (output->dtype != input->dtype) {
        aclemu_set_error("%s: output dtype %s must be input's dtype %s for the copy of the "
                         "result (the op_api's ViewCopy)", P1, dname(output->dtype),
                         dname(input->dtype));
        free(P);
        return ACLNN_ERR_INNER_NULLPTR;
    }

    const int64_t C = input->dims[1];
    P->regbase = soc->npu_arch == 3510;
    P->C = C;
    P->R = X / C;
    P->eps = (float)eps;
    for (int i = 0; i < T_COUNT; i++)
        snapshot(&P->t[i], ts[i], -1);
    P->ws_size = be_workspace(soc, ts, (uint64_t)C, (uint64_t)X);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BE_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
                                              aclOpExecutor *executor, const aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
