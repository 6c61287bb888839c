/*
 * aclnnBatchNorm for the CPU emulator: phase one (checks, executor), the launch and the kernel.
 * BatchNorm normalizes each channel of input over every other dim (the batch and the spatial
 * dims): in training with the batch's statistics, updating runningMean and runningVar in
 * place; in inference with runningMean and runningVar.
 *
 * Facts, hicann/ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp (the phase one,
 * its order and codes, which L0 ops run per part and mode) and batch_norm.cpp (the L0 ops),
 * norm/norm_common/op_host/op_api/norm_tensor_util.cpp (the casts to FLOAT of weight, bias and
 * the running statistics, the empty input's fill), docs/aclnnBatchNorm.md:
 * - phase one: workspaceSize/executor NULL (161001); input or output NULL, and in training
 *   saveMean or saveInvstd NULL (161001); an empty input: success, saveMean filled with 0
 *   and saveInvstd with NaN where given (in either mode), nothing else (no kernel at all when
 *   neither is a non-empty tensor); then CheckParams:
 *   input's and output's dtype, in training saveMean's and saveInvstd's, in the part's list
 *   (FLOAT, FLOAT16, BF16 on DAV_2201 and DAV_3510; FLOAT, FLOAT16 on DAV_1001, DAV_2002);
 *   weight's, bias's, runningMean's, runningVar's likewise; formats (input's == output's; a
 *   rank-5 input or output NCDHW, on Ascend 950 NCDHW or NDHWC; input's not private); ranks
 *   2..8 and output's shape input's; weight, bias, runningMean, runningVar of rank 1 with C
 *   elements (C: dim 1, the last dim for NHWC/NDHWC on Ascend 950); in training saveMean and
 *   saveInvstd [C] (all 161002); then the result's ViewCopy into output, which needs
 *   output's dtype to be input's (561103).
 * - which kernel: Ascend 950 (regbase), both modes: BatchNormV3 (op_kernel/arch35). Atlas
 *   A2/A3 in training with C >= 64 and an NCHW/NCDHW input as the op_api hands it over (rank
 *   2, 3 reshaped to NCHW, 6..8 to NCDHW; rank 4 and 5 the caller's format): BatchNormV3
 *   (op_kernel/batch_norm_v3_full_reduce.h below 8192 values per channel). Otherwise
 *   BNTrainingReduce + BNTrainingUpdate (or their 3D twins) in training, BNInfer in
 *   inference: TBE kernels not in the public sources (see the chain below).
 *
 * The numbers, per channel of R values, momentum and eps as the op_api's floats, m' = 1 - m:
 * - BatchNormV3, Atlas A2/A3: p = the power of two >= R, c0 = float(1 / p),
 *   c1 = float(p / R): mean = sum(x * c0) * c1, d = x - mean, var = sum(d * d * c0) * c1
 *   (biased); R0 > 1 (spatial dims): y = d * (w / sqrtf(var + eps)) + b; R0 == 1 (the
 *   A-parallel kernel): y = ((d / sqrtf(var + eps)) * w) + b; y to FLOAT16 to even, to BF16
 *   ties away (CAST_ROUND). runningMean' = rm * m' + mean * m, runningVar' = rv * m' +
 *   var * float(s * m), s = float(R / (R - 1)) (NaN for R == 1: the kernel's 0 / 0).
 *   saveMean = mean, saveInvstd = var (the variance, as the docs say for these parts).
 * - Ascend 950 (training): n = 1.0f / p, corr = (float)p / R: mean = sum(x * n) * corr,
 *   var = sum((x - mean)^2 * n) * corr, rstd from var + eps by one Newton-Raphson step
 *   without the clamp (norm_rows.h nr_rstd_newton_raphson): every training template
 *   takes it so, inline in batch_norm_v3_regbase_common.h CalculateRunningMeanVarWithRstdVF
 *   (batch_norm_v3.h's full reduce, the RA full reduce and RA Welford) or through norm_common's
 *   ComputeRstdNewtonRaphson(Reg)<false> (batch_norm_v3_welford.h, the block split R and RAR
 *   block split R kernels), so not always the correctly rounded float; y = ((d * rstd) * w) + b;
 *   runningVar' = ((var * bessel) * m) + rv * m', bessel = (float)R / (float)(R - 1);
 *   runningMean' = mean * m + rm * m'; saveMean = mean, saveInvstd = rstd. Inference:
 *   y = (((x - rm) * w) * rstd) + b with rstd from rv by ComputeRstdNewtonRaphsonReg
 *   (bn_channels.h bn_infer_channel). Everything to even (CAST_RINT).
 * - TBE (BNTrainingReduce, BNTrainingUpdate, BNInfer: not in hicann's sources; their
 *   published TBE Python sources compute, in float32): sum and square sum per channel,
 *   mean = sum * num_rec, var = sumsq * num_rec - mean^2 (one pass: the L0 interface hands
 *   the update only the two sums), k = w / sqrtf(var + eps), y = x * k + (b - k * mean);
 *   runningMean' = mean * m + rm * m', runningVar' = (var * s) * m + rv * m' with the dynamic
 *   tiling's num_rec = 1.0 / (float)R and s = (float)R / (float)(R - 1) (inf for R == 1: a
 *   NaN runningVar); inference the same y with rm, rv. y to even.
 * Every result then goes through the op_api's Cast to its tensor's dtype (to even).
 * Welford kernels for long channels (R >= 8192 on Atlas A2/A3; Ascend 950's when a channel
 * does not fit its buffer) combine partial results in another order: not modeled.
 *
 * Kernel: channels are independent; each channel's sums have a fixed order (norm_rows.h's
 * lanes and fold), so the split of channels over threads never changes a bit.
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

#include "aclnnop/aclnn_batch_norm.h"

#define P1 "aclnnBatchNormGetWorkspaceSize"
#define P2 "aclnnBatchNorm"

enum { T_INPUT, T_WEIGHT, T_BIAS, T_RMEAN, T_RVAR, T_OUTPUT, T_SMEAN, T_SINV, T_COUNT };
static const char *const TNAME[T_COUNT] = {"input",  "weight",   "bias",     "runningMean",
                                           "runningVar", "output", "saveMean", "saveInvstd"};
#define N_INPUTS 5 /* the vendor's DFX_IN: input .. runningVar (the running ones written too) */

typedef enum {
    CHAIN_V3,      /* BatchNormV3, Atlas A2/A3, spatial dims */
    CHAIN_V3_APAR, /* BatchNormV3, Atlas A2/A3, no spatial dims (the A-parallel kernel) */
    CHAIN_TBE,     /* BNTrainingReduce + BNTrainingUpdate, or BNInfer */
    CHAIN_950,     /* BatchNormV3 on Ascend 950 (regbase) */
} bn_chain;

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;    /* what phase one reports: the device's (exec_workspace.h) */
    bool empty;          /* an empty input: saveMean 0 and saveInvstd NaN where given */
    bool no_kernel;      /* an empty input with no non-empty saveMean/saveInvstd to fill */
    bool training;
    bn_chain chain;
    int caxis;           /* the channel's dim of input and output */
    int64_t C, R;        /* channels, values per channel */
    float eps, momentum, momentum_rev;
    float c0, c1;        /* the sums' scale and correction (1 / R for the TBE chain: c1 1) */
    float var_factor;    /* the running variance's factor (see the chains) */
    aclemu_ties y_ties;  /* y's narrowing to BF16 */
} bn_payload;

#define CHUNK_VALUES 2 /* a chunk's floats per value of its channel: x, then d */

/* ---- the kernel -------------------------------------------------------------------------- */

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const bn_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    const float *w = T->params, *b = w + C, *rm = b + C, *rv = rm + C;
    float *x = T->buf + chunk * CHUNK_VALUES * R, *d = x + R;
    chan_lay in, out;
    chan_lay_build(&in, &P->t[T_INPUT], P->caxis);
    chan_lay_build(&out, &P->t[T_OUTPUT], P->caxis);
    const int64_t outer = R / (in.inner ? in.inner : 1);
    const float m = P->momentum, mr = P->momentum_rev, eps = P->eps;
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_INPUT], &in, c, outer, x);
        float mean, var, saved_inv;
        if (!P->training) {
            bn_infer_channel(x, R, rm[c], rv[c], w[c], b[c], eps, P->chain == CHAIN_950);
            store_channel(&P->t[T_OUTPUT], &out, c, outer, P->y_ties, x);
            continue;
        }
        if (P->chain == CHAIN_TBE) {
            const float sum = nr_scaled_sum(x, R, 1.0f);
            const float sumsq = nr_scaled_sum_squares(x, R, 1.0f);
            mean = sum * P->c0;
            const float msq = sumsq * P->c0;
            var = msq - mean * mean;
            const float k = w[c] / sqrtf(var + eps);
            const float shift = b[c] - k * mean;
            for (int64_t i = 0; i < R; i++) {
                const float t = x[i] * k;
                x[i] = t + shift;
            }
            saved_inv = var;
        } else {
            mean = nr_scaled_sum(x, R, P->c0) * P->c1;
            nr_center(d, x, R, mean);
            var = nr_scaled_sum_squares(d, R, P->c0) * P->c1;
            if (P->chain == CHAIN_950) {
                /* every arch35 training template's Newton-Raphson rstd, without the clamp */
                const float rstd = nr_rstd_newton_raphson(var, eps, false);
                for (int64_t i = 0; i < R; i++) {
                    float t = d[i] * rstd;
                    t *= w[c];
                    x[i] = t + b[c];
                }
                saved_inv = rstd;
            } else if (P->chain == CHAIN_V3) {
                const float k = w[c] / sqrtf(var + eps);
                for (int64_t i = 0; i < R; i++) {
                    const float t = d[i] * k;
                    x[i] = t + b[c];
                }
                saved_inv = var;
            } else { /* CHAIN_V3_APAR */
                const float sd = sqrtf(var + eps);
                for (int64_t i = 0; i < R; i++) {
                    float t = d[i] / sd;
                    t *= w[c];
                    x[i] = t + b[c];
                }
                saved_inv = var;
            }
        }
        store_channel(&P->t[T_OUTPUT], &out, c, outer, P->y_ties, x);
        put_one(&P->t[T_SMEAN], c, mean);
        put_one(&P->t[T_SINV], c, saved_inv);
        if (P->t[T_RMEAN].present) {
            const float a = rm[c] * mr, e = mean * m;
            put_one(&P->t[T_RMEAN], c, a + e);
        }
        if (P->t[T_RVAR].present) {
            const float a = rv[c] * mr;
            float e;
            e = var * P->var_factor;
            if (P->chain == CHAIN_TBE || P->chain == CHAIN_950)
                e *= m; /* unbiased first, then the momentum (V3: one factor, s * m) */
            put_one(&P->t[T_RVAR], c, a + e);
        }
    }
}

/* An empty input: saveMean 0 and saveInvstd NaN, every element, in their dtypes (the op_api's
 * ProcessEmptyTensorWithValue). */
static void fill_saved(const bn_payload *P)
{
    const float values[2] = {0.0f, NAN};
    for (int k = 0; k < 2; k++) {
        const tdesc *d = &P->t[T_SMEAN + k];
        if (!d->present)
            continue;
        int64_t n = 1;
        for (int i = 0; i < d->ndim; i++)
            n *= d->dims[i];
        for (int64_t i = 0; i < n; i++)
            put_tile(view_base(d), d->dtype, ACLEMU_TIES_EVEN, &d->inner, i, 1, &values[k]);
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const bn_payload *P = bn_task_payload(T);
    if (P->empty) {
        fill_saved(P);
        return;
    }
    const int64_t C = P->C;
    /* read before any is written: runningMean may be the very memory of another input */
    load_param(&P->t[T_WEIGHT], C, 1.0f, T->params);
    load_param(&P->t[T_BIAS], C, 0.0f, T->params + C);
    load_param(&P->t[T_RMEAN], C, 0.0f, T->params + 2 * C);
    load_param(&P->t[T_RVAR], C, 1.0f, T->params + 3 * C);
    aclemu_parallel_for(C, T->nchunks, channels_body, T);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BN_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bn_payload),
    .tensors_at = offsetof(bn_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = CHUNK_VALUES,
    .nparams = 4,      /* weight, bias, running mean, running var */
    .run = task_run,
};

/* An empty input with nothing to fill: the memory checked as for any run, nothing queued (run
 * NULL), so phase two needs no context. */
static const bn_kernel BN_NO_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bn_payload),
    .tensors_at = offsetof(bn_payload, t),
    .ntensors = T_COUNT,
    .run = NULL,
};

static aclnnStatus bn_launch(void *payload, void *const *addrs, void *workspace,
                             uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const bn_payload *P = payload;
    if (P->no_kernel)
        return bn_task_launch(&BN_NO_KERNEL, payload, addrs, workspace, P->ws_size, stream, 0, 0);
    return bn_task_launch(&BN_KERNEL, payload, addrs, workspace, P->ws_size, stream,
                          P->empty ? 0 : P->C, P->R);
}

static const aclemu_executor_ops BN_OPS = {
    .op_name = P2,
    .launch = bn_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one -------------------------------------------------------------------------------- */

/* CheckFormat, in its order. */
static aclnnStatus check_formats(const aclTensor *input, const aclTensor *output, bool regbase)
{
    if (input->format != output->format)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: output's format (aclFormat %d) must be input's "
             "format (aclFormat %d)", P1, (int)output->format, (int)input->format);
    const aclTensor *ts[2] = {input, output};
    for (int k = 0; k < 2; k++) {
        const aclFormat f = ts[k]->format;
        if (ts[k]->ndim == 5 && f != ACL_FORMAT_NCDHW && !(regbase && f == ACL_FORMAT_NDHWC))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s of rank 5 has format aclFormat %d: it must "
                 "be %s", P1, k ? "output" : "input", (int)f,
                 regbase ? "NCDHW or NDHWC" : "NCDHW");
    }
    if (p1_private_format(input->format))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's format (aclFormat %d) is private: ND, NC, "
             "NCL, NCHW, NCDHW are taken", P1, (int)input->format);
    /* stricter (docs/aclnnBatchNorm.md: no NHWC, NDHWC but on Ascend 950) */
    if (!regbase && (input->format == ACL_FORMAT_NHWC || input->format == ACL_FORMAT_NDHWC))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's format NHWC/NDHWC (aclFormat %d) is "
             "supported on Ascend 950 only (docs/aclnnBatchNorm.md)", P1, (int)input->format);
    return ACLNN_SUCCESS;
}

/* CheckShape, CheckOtherShape and the training's saveMean/saveInvstd shapes. */
static aclnnStatus check_shapes(const aclTensor *const *ts, int64_t C, bool training)
{
    const aclTensor *input = ts[T_INPUT], *output = ts[T_OUTPUT];
    const aclTensor *ranked[2] = {input, output};
    for (int k = 0; k < 2; k++)
        if (ranked[k]->ndim < 2 || ranked[k]->ndim > 8)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is not in [2, 8]", P1,
                 k ? "output" : "input", (unsigned long long)ranked[k]->ndim);
    if (!same_dims(output->dims, output->ndim, input->dims, input->ndim))
        return shape_error(P1, "output", output->dims, output->ndim, "must equal input's",
                           input->dims, input->ndim);
    for (int i = T_WEIGHT; i <= T_RVAR; i++) {
        const aclTensor *t = ts[i];
        if (t && (t->ndim != 1 || t->dims[0] != C))
            return shape_error(P1, TNAME[i], t->dims, t->ndim,
                               "must be [C], C the channel count of input", input->dims,
                               input->ndim);
    }
    if (training)
        for (int i = T_SMEAN; i <= T_SINV; i++) {
            const aclTensor *t = ts[i];
            if (t->ndim != 1 || t->dims[0] != C)
                return shape_error(P1, TNAME[i], t->dims, t->ndim,
                                   "must be [C], C the channel count of input", input->dims,
                                   input->ndim);
        }
    return ACLNN_SUCCESS;
}

/* The smallest power of two >= n. */
static int64_t pow2_at_least(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* Whether an empty input's fill of t launches a kernel: t given (the op_api fills only a
 * non-NULL one, aclnn_batch_norm.cpp:288-297) and not empty (ProcessEmptyTensorWithValue's
 * l0op::Fill returns an empty output unlaunched, ops-math conversion/fill/op_api/fill.cpp:
 * 98-100, and its ViewCopy into an empty tensor copies nothing). */
static bool fill_launches(const aclTensor *t)
{
    if (!t)
        return false;
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] == 0)
            return false;
    return true;
}

/* An empty input's saveMean/saveInvstd fill: stricter than the device (which fills whatever
 * it is given), the docs' dtypes and a rank the emulator's views hold. */
static aclnnStatus check_fill(const aclTensor *t, int i)
{
    if (!t)
        return ACLNN_SUCCESS;
    if (!dtype_ok(t->dtype))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not FLOAT, FLOAT16 or BF16 "
             "(docs/aclnnBatchNorm.md)", P1, TNAME[i], dname(t->dtype));
    if (t->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is above 8 (it is a [C] vector)", P1,
             TNAME[i], (unsigned long long)t->ndim);
    return ACLNN_SUCCESS;
}

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/*
 * aclnn_batch_norm.cpp's graph (aclnnBatchNormGetWorkspaceSize, BatchNorm, BatchNormV3Proc,
 * BatchNormProcRegbase, BatchNormProc, DoBatchNormProc; norm_common norm_tensor_util.cpp
 * ResizeFrom1D/ResizeTo1D/ResizeFrom5D/ResizeTo5D; batch_norm.cpp the L0 outputs), in launch
 * order. BatchNormV3's tilings hard-code their 16 MiB (batch_norm_v3_tiling_base.cpp, the
 * arch35 full-reduce, Welford and inference tilings); the TBE kernels' own workspaces are not
 * public: none. Not modelled: Ascend 950's BlockSplitR/RARBlockSplitR templates' partials
 * (their 16 MiB is counted; docs/emulator.md). bn_graph_workspace is BatchNorm's part (shared
 * with aclnnBatchNormElemt), bn_device_workspace aclnnBatchNorm's prelude before it.
 */
uint64_t bn_graph_workspace(ew_graph *g, const aclemu_soc *soc, int xin, const bn_graph_args *a)
{
    const aclTensor *x = a->x;
    const uint64_t C = a->C, X = a->X;
    const aclDataType xdt = x->dtype;
    const bool regbase = a->regbase, training = a->training;
    const bool ncdhw_ok = soc->npu_arch == 2201 || soc->npu_arch == 2002;
    /* the vectors in BatchNorm's order: runningMean, runningVar, weight, bias */
    int rm = a->h[0], rv = a->h[1], w = a->h[2], b = a->h[3];
    const aclDataType *vdt = a->dt;
    const uint64_t dim = x->ndim > 5 ? 5 : x->ndim;
    /* ResizeFrom5D (inference, rank 5, NCDHW kept off DAV_2201/DAV_2002; never on Ascend 950:
     * isEvalAndNotSupportNcdhw returns false for regbase): a Transpose */
    const bool transposed = !training && dim == 5 && !ncdhw_ok && !regbase;
    if (transposed)
        xin = ew_convert(g, xin, X * aclemu_dtype_size(xdt));
    int y;
    if (a->v3) {
        /* BatchNormV3Proc (Atlas A2/A3 training) and BatchNormProcRegbase (Ascend 950) */
        aclDataType wb = vdt[2] == vdt[3] ? vdt[2] : ACL_FLOAT; /* PromoteType of floats */
        if (wb != xdt)
            wb = ACL_FLOAT;
        w = ew_cast(g, w < 0 ? ew_contiguous_copy(g, a->vec[2]) : w, vdt[2], wb, C);
        b = ew_cast(g, b < 0 ? ew_contiguous_copy(g, a->vec[3]) : b, vdt[3], wb, C);
        aclDataType run = ACL_FLOAT;
        if (regbase) {
            run = vdt[0] == vdt[1] ? vdt[0] : ACL_FLOAT;
            if (run != wb || run != xdt)
                run = ACL_FLOAT;
        }
        rm = ew_cast(g, rm < 0 ? ew_contiguous_copy(g, a->vec[0]) : rm, vdt[0], run, C);
        rv = ew_cast(g, rv < 0 ? ew_contiguous_copy(g, a->vec[1]) : rv, vdt[1], run, C);
        const int k = ew_kernel(g);
        const int reads[5] = {xin, w, b, rm, rv};
        ew_read_all(g, reads, 5, k);
        ew_kernel_workspace(g, k, EW_SYS_WORKSPACE);
        y = ew_output(g, k, X * aclemu_dtype_size(xdt));
        const int mean = ew_output(g, k, C * 4), var = ew_output(g, k, C * 4);
        if (training) {
            /* the running statistics back to the caller's tensors (a fill stays put), then
             * the saved ones (given: training asks for them) */
            if (a->vec[0])
                ew_copy_out(g, rm, run, a->vec[0], C);
            if (a->vec[1])
                ew_copy_out(g, rv, run, a->vec[1], C);
            if (a->save[0])
                ew_copy_out(g, mean, ACL_FLOAT, a->save[0], C);
            if (a->save[1])
                ew_copy_out(g, var, ACL_FLOAT, a->save[1], C);
        }
    } else {
        /* BatchNormProc: ResizeFrom1D of each vector, a FLOAT cast (6HD off NCDHW parts) */
        const bool six_hd = dim == 5 && !transposed && !ncdhw_ok;
        int64_t d[5];
        bn_ncdhw(x, d);
        const uint64_t c_6hd = (C + 15) / 16 * 16 * 4;
        int *v[4] = {&w, &b, &rm, &rv};
        const int vi[4] = {2, 3, 0, 1};
        for (int i = 0; i < 4; i++) {
            int h = *v[i] < 0 ? ew_contiguous_copy(g, a->vec[vi[i]]) : *v[i];
            h = ew_cast(g, h, vdt[vi[i]], ACL_FLOAT, C);
            *v[i] = six_hd ? ew_convert(g, h, c_6hd) : h;
        }
        const uint64_t stat = six_hd ? c_6hd : C * 4;
        if (!training) {
            const int k = ew_kernel(g); /* BNInfer */
            const int reads[5] = {xin, w, b, rm, rv};
            ew_read_all(g, reads, 5, k);
            y = ew_output(g, k, X * aclemu_dtype_size(xdt));
        } else {
            if (six_hd)
                xin = ew_convert(g, xin, bn_6hd_bytes(d, aclemu_dtype_size(xdt)));
            const int kr = ew_kernel(g); /* BNTrainingReduce */
            ew_read(g, xin, kr);
            const int sum = ew_output(g, kr, stat), sq = ew_output(g, kr, stat);
            const int ku = ew_kernel(g); /* BNTrainingUpdate */
            const int reads[7] = {xin, sum, sq, w, b, rm, rv};
            ew_read_all(g, reads, 7, ku);
            y = ew_output(g, ku, six_hd ? bn_6hd_bytes(d, aclemu_dtype_size(xdt))
                                        : X * aclemu_dtype_size(xdt));
            int mean = ew_output(g, ku, stat), var = ew_output(g, ku, stat);
            if (six_hd) {
                y = ew_convert(g, y, X * aclemu_dtype_size(xdt));
                mean = ew_convert(g, mean, C * 4);
            }
            ew_copy_out(g, mean, ACL_FLOAT, a->save[0], C);
            if (six_hd)
                var = ew_convert(g, var, C * 4);
            ew_copy_out(g, var, ACL_FLOAT, a->save[1], C);
            const int hr[2] = {rm, rv};
            for (int i = 0; i < 2; i++) {
                if (!a->vec[i])
                    continue;
                const int h = six_hd ? ew_convert(g, hr[i], C * 4) : hr[i];
                ew_copy_out(g, h, ACL_FLOAT, a->vec[i], C);
            }
        }
    }
    if (transposed)
        y = ew_convert(g, y, X * aclemu_dtype_size(xdt)); /* ResizeTo5D */
    ew_copy_out(g, y, xdt, a->out, X);
    return ew_size(g);
}

static uint64_t bn_device_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                                    const bn_payload *P)
{
    const bool regbase = P->chain == CHAIN_950;
    bn_graph_args a = {
        .x = ts[T_INPUT], .out = ts[T_OUTPUT],
        .vec = {ts[T_RMEAN], ts[T_RVAR], ts[T_WEIGHT], ts[T_BIAS]},
        .save = {ts[T_SMEAN], ts[T_SINV]},
        .training = P->training, .v3 = P->chain != CHAIN_TBE, .regbase = regbase,
        .C = (uint64_t)P->C, .X = (uint64_t)(P->C * P->R),
    };
    ew_graph g = ew_graph_on(soc->npu_arch);
    const int xin = ew_contiguous_copy(&g, a.x);
    /* the absent vectors' fills, in the op_api's order: runningMean, runningVar, weight, bias */
    const aclDataType fill_dt = regbase ? a.x->dtype : ACL_FLOAT;
    for (int i = 0; i < 4; i++) {
        const aclTensor *t = a.vec[i];
        a.h[i] = t ? -1 : ew_fill(&g, a.C * aclemu_dtype_size(fill_dt));
        a.dt[i] = t ? t->dtype : fill_dt;
    }
    return bn_graph_workspace(&g, soc, xin, &a);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias,
    aclTensor *runningMean, aclTensor *runningVar, bool training, double momentum, double eps,
    aclTensor *output, aclTensor *saveMean, aclTensor *saveInvstd, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {input,  weight,   bias,      runningMean,
                                    runningVar, output, saveMean, saveInvstd};

    /* 0. the out-pointers first (161001), 1. CheckNotNull (161001): input, output, and in
     * training saveMean, saveInvstd; every tensor given must be a live aclTensor; the part */
    const uint32_t required = P1_BIT(T_INPUT) | P1_BIT(T_OUTPUT) |
                              (training ? P1_BITS(T_SMEAN, T_COUNT) : 0u);
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, required, workspaceSize, executor, &soc);
    if (st)
        return st;
    const bool regbase = soc->npu_arch == 3510;

    bn_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    int64_t X = 0;
    const bool counted = input->ndim <= TV_MAX_RANK && numel(input->dims, input->ndim, &X);
    /* 2. an empty input: saveMean 0, saveInvstd NaN where given, nothing checked */
    bool empty = false;
    for (uint64_t i = 0; i < input->ndim; i++)
        empty = empty || input->dims[i] == 0;
    if (empty) {
        if ((st = check_fill(saveMean, T_SMEAN)) || (st = check_fill(saveInvstd, T_SINV))) {
            free(P);
            return st;
        }
        P->empty = true;
        /* no kernel unless a fill has elements: phase two then needs no context, on every
         * part (the return precedes any choice of the part's kernels) */
        P->no_kernel = !fill_launches(saveMean) && !fill_launches(saveInvstd);
        snapshot(&P->t[T_SMEAN], saveMean, -1);
        snapshot(&P->t[T_SINV], saveInvstd, -1);
        /* ProcessEmptyTensorWithValue on saveMean, saveInvstd */
        P->ws_size = ew_empty_call(soc->npu_arch, ts, T_SMEAN, T_SINV);
        return p1_finish(P1, &BN_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                         executor);
    }
    /* 3. CheckParams: dtypes, formats, shapes (161002) */
    int order[T_COUNT] = {T_INPUT, T_OUTPUT, T_SMEAN, T_SINV, T_WEIGHT, T_BIAS, T_RMEAN, T_RVAR};
    for (int k = 0; k < T_COUNT; k++) {
        const int i = order[k];
        if ((i == T_SMEAN || i == T_SINV) && !training)
            continue;
        if (ts[i] && (st = bn_check_float_dtype(P1, TNAME[i], ts[i], soc)))
            goto fail;
    }
    if ((st = check_formats(input, output, regbase)))
        goto fail;
    const bool channel_last = regbase && (input->format == ACL_FORMAT_NHWC ||
                                          input->format == ACL_FORMAT_NDHWC);
    if (input->ndim < 2 || input->ndim > 8) {
        st = check_shapes(ts, 0, training);
        goto fail;
    }
    const int caxis = channel_last ? (int)input->ndim - 1 : 1;
    const int64_t C = input->dims[caxis];
    if ((st = check_shapes(ts, C, training)))
        goto fail;
    if (!counted) {
        aclemu_set_error("%s: input's element count overflows int64", P1);
        st = ACLNN_ERR_PARAM_INVALID;
        goto fail;
    }
    /* 4. the result's ViewCopy into output (the op_api's CHECK_RET: 561103) */
    if (output->dtype != input->dtype) {
        aclemu_set_error("%s: output dtype %s must be input's dtype %s for the copy of the "
                         "result (the op_api's ViewCopy)", P1, dname(output->dtype),
                         dname(input->dtype));
        st = ACLNN_ERR_INNER_NULLPTR;
        goto fail;
    }

    const int64_t R = X / C;
    int64_t spatial = 1; /* R0: the values per channel and sample */
    for (int i = caxis + 1; i < (int)input->ndim; i++)
        spatial *= input->dims[i];
    P->training = training;
    P->caxis = caxis;
    P->C = C;
    P->R = R;
    P->eps = (float)eps;
    P->momentum = (float)momentum;
    P->momentum_rev = 1.0f - P->momentum;
    P->y_ties = ACLEMU_TIES_EVEN;
    const int64_t p = pow2_at_least(R);
    const bool v3_format = input->ndim != 4 || input->format == ACL_FORMAT_NCHW;
    if (regbase) {
        P->chain = CHAIN_950;
        P->c0 = 1.0f / (float)p;
        P->c1 = (float)p / (float)R;
        P->var_factor = (float)R / (float)(R - 1);
    } else if (training && soc->npu_arch == 2201 && C >= 64 && v3_format) {
        P->chain = spatial == 1 ? CHAIN_V3_APAR : CHAIN_V3;
        P->c0 = (float)(1.0 / (double)p);
        P->c1 = (float)((double)p / (double)R);
        const float scale = R == 1 ? NAN : (float)((double)R / (double)(R - 1));
        P->var_factor = scale * P->momentum;
        P->y_ties = ACLEMU_TIES_AWAY; /* CAST_ROUND for BF16 (FLOAT16: CAST_NONE, to even) */
    } else {
        P->chain = CHAIN_TBE;
        /* the dynamic TBE tiling's num_rec and batch_var_scalar: 1.0 / (float)num, and
         * (float)num / (float)(num - 1), a float division (inf for R == 1: var * inf, NaN) */
        P->c0 = (float)(1.0 / (double)(float)R);
        P->c1 = 1.0f;
        P->var_factor = (float)R / (float)(R - 1);
    }
    snapshot(&P->t[T_INPUT], input, -1);
    snapshot(&P->t[T_OUTPUT], output, -1);
    snapshot(&P->t[T_WEIGHT], weight, -1);
    snapshot(&P->t[T_BIAS], bias, -1);
    snapshot(&P->t[T_RMEAN], runningMean, -1);
    snapshot(&P->t[T_RVAR], runningVar, -1);
    /* inference reads the running statistics and writes neither them nor the saved ones */
    if (training) {
        snapshot(&P->t[T_SMEAN], saveMean, -1);
        snapshot(&P->t[T_SINV], saveInvstd, -1);
    }
    P->ws_size = bn_device_workspace(soc, ts, P);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BN_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
fail:
    free(P);
    return st;
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
                                         aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
