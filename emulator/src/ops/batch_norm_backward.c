/*
 * aclnnBatchNormBackward for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel. The gradients of aclnnBatchNorm: gradInput, gradWeight and gradBias, each computed and
 * written only where outputMask asks for it, from gradOut, input and, per mode, the saved
 * statistics (training) or the running ones (inference).
 *
 * Facts, hicann/ops-nn norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp
 * (phase one, its order and codes, which L0 ops run per part and mode) and batch_norm_backward.cpp
 * (the L0 ops), norm/norm_common/op_host/op_api/norm_tensor_util.cpp (the FLOAT casts of the
 * per-channel vectors, the fills of the missing ones, the result's cast and copy),
 * op_kernel/arch35 (Ascend 950's kernels), docs/aclnnBatchNormBackward.md:
 * - phase one: workspaceSize/executor NULL (161001); gradOut or input NULL (161001); gradOut or
 *   input empty: success, nothing checked, nothing written; then CheckParams: outputMask NULL
 *   or empty, on Ascend 950 of a length other than 3 (all 161001: the mask check's CHECK_RET
 *   returns ACLNN_ERR_PARAM_NULLPTR), a requested output NULL (161001); gradOut's and input's
 *   dtype in the part's list and equal, the requested outputs', weight's, the statistics' in
 *   the list; on Ascend 950 the dtype relations (RegbaseCheckDtypeSame); formats; ranks 2..8
 *   and shapes; weight and the running statistics [C]; on Ascend 950 the saved statistics [C]
 *   (inference: [0] too) and the requested gradWeight/gradBias [C] (all 161002). Off Ascend
 *   950 the results' copies into the outputs (ViewCopy: gradInput of gradOut's dtype, and
 *   gradWeight/gradBias [C] or one element beside C == 1) fail with 561103.
 * - which kernel: Ascend 950 (regbase): BatchNormGradV3 (op_kernel/arch35) for gradInput in
 *   both modes and for gradWeight/gradBias in training; in inference those two are composed
 *   (Add, Pow(-0.5), Sub, Mul, ReduceSum). Every other part: BNTrainingUpdateGrad (gradWeight,
 *   gradBias) with BNTrainingReduceGrad (training) or BNInferGrad (inference) for gradInput,
 *   TBE kernels (their published Python sources, not in hicann's: the chain below), or their
 *   3D twins on rank 5 (the same compute).
 *
 * The numbers, per channel of R values, eps as the op_api's float, in float32:
 * - TBE: rs = 1 / sqrtf(var + eps); ds = sum(dy * ((x - mean) * rs)), db = sum(dy); training
 *   (mean, var = saveMean, saveInvstd: the variance on these parts, as aclnnBatchNorm writes it
 *   there): q = sqrtf(var + eps), mult = (ds * -n) / q, add = (mean / q) * (ds * n) + db * -n,
 *   dx = ((dy + mult * x) + add) * (w / q) with n = 1.0 / (float)R; inference (mean, var =
 *   runningMean, runningVar): dx = (w * rs) * dy.
 * - Ascend 950, training (mean, rstd = saveMean, saveInvstd: the rstd there): d = x - mean,
 *   dg = sum((dy * d) * rstd), db = sum(dy), dx = rstd * (w * (dy - ((((d * rstd) * dg) + db) *
 *   h))) with h = 1.0f / (float)R; dg and db rounded to weight's dtype when the kernel keeps
 *   weight 16-bit (gradOut 16-bit, weight given and 16-bit). Inference: dx = (dy * w) * r with r
 *   from rv + eps by norm_common's ComputeRstdNewtonRaphsonReg with its clamp (both inference
 *   kernels, arch35 batch_norm_grad_v3_infer.h and _infer_channel_last.h; norm_rows.h
 *   nr_rstd_newton_raphson): one Newton-Raphson step, not always the correctly rounded float;
 *   gradWeight = sum(dy * ((x - rm) * (1 / sqrtf(rv + eps)))) (Pow's -0.5 is Sqrt then Div on
 *   Ascend 950), gradBias = sum(dy).
 * Missing vectors take the op_api's fills: weight 1, runningMean 0, runningVar 1, saveMean 0,
 * saveInvstd 1. gradInput is rounded to its dtype to even; gradWeight/gradBias go through the
 * op_api's Cast to theirs (to even).
 *
 * Kernel: channels are independent; each channel's sums have a fixed order (norm_rows.h's
 * lanes and fold), so the split of channels over threads never changes a bit. Nothing is
 * written but the requested outputs.
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
#include "exec_workspace.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_batch_norm_backward.h"

#define P1 "aclnnBatchNormBackwardGetWorkspaceSize"
#define P2 "aclnnBatchNormBackward"

enum { T_DY, T_X, T_W, T_RMEAN, T_RVAR, T_SMEAN, T_SINV, T_DX, T_DW, T_DB, T_COUNT };
static const char *const TNAME[T_COUNT] = {
    "gradOut", "input", "weight", "runningMean", "runningVar", "saveMean", "saveInvstd",
    "gradInput", "gradWeight", "gradBias"};
#define N_INPUTS 7 /* the vendor's DFX_IN tensors: gradOut .. saveInvstd */
#define N_PARAMS 5 /* weight, runningMean, runningVar, saveMean, saveInvstd */

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;    /* what phase one reports: the device's (exec_workspace.h) */
    bool work;           /* some output requested of a non-empty input */
    bool no_kernel;      /* the op_api returns before any L0 op: an empty input, or on Ascend
                          * 950 no output requested (phase two queues nothing) */
    bool mask[3];
    bool training;
    bool regbase;        /* Ascend 950's BatchNormGradV3 (else the TBE chain) */
    int caxis;           /* the channel's dim of gradOut, input and gradInput */
    int64_t C, R;        /* channels, values per channel */
    float eps;
    float n_rec;         /* TBE: the tiling's 1 / R; Ascend 950: the kernel's 1.0f / R */
    aclDataType stat_dt; /* Ascend 950 training: the kernel's dg/db dtype (weight's) */
} bnb_payload;

#define CHUNK_VALUES 3 /* a chunk's floats per value of its channel: dy, x, then the terms */

/* ---- the kernel -------------------------------------------------------------------------- */

static float round_to(aclDataType dt, float v)
{
    aclemu_round_floats(dt, ACLEMU_TIES_EVEN, &v, 1);
    return v;
}

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const bnb_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    const float *w = T->params, *rm = w + C, *rv = rm + C, *sm = rv + C, *si = sm + C;
    float *dy = T->buf + chunk * CHUNK_VALUES * R, *x = dy + R, *t = x + R;
    chan_lay ldy, lx, ldx = {0};
    chan_lay_build(&ldy, &P->t[T_DY], P->caxis);
    chan_lay_build(&lx, &P->t[T_X], P->caxis);
    if (P->mask[0])
        chan_lay_build(&ldx, &P->t[T_DX], P->caxis);
    const int64_t outer = R / (ldy.inner ? ldy.inner : 1);
    const float eps = P->eps;
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_DY], &ldy, c, outer, dy);
        load_channel(&P->t[T_X], &lx, c, outer, x);
        const float db = nr_scaled_sum(dy, R, 1.0f);
        float dg;
        if (P->regbase && P->training) {
            const float mean = sm[c], rstd = si[c];
            for (int64_t i = 0; i < R; i++) {
                x[i] -= mean; /* the kernel's xhat, in place */
                const float p = dy[i] * x[i];
                t[i] = p * rstd;
            }
            dg = nr_scaled_sum(t, R, 1.0f);
            if (P->mask[0])
                for (int64_t i = 0; i < R; i++) {
                    float u = x[i] * rstd;
                    u *= dg;
                    u += db;
                    u *= P->n_rec;
                    const float s = dy[i] - u;
                    const float g = w[c] * s;
                    dy[i] = rstd * g;
                }
            dg = round_to(P->stat_dt, dg);
        } else {
            /* BNTrainingUpdateGrad (and Ascend 950's inference composite): x_norm and its sum */
            const float mean = P->training ? sm[c] : rm[c];
            const float var = P->training ? si[c] : rv[c];
            const float q = sqrtf(var + eps);
            const float rs = 1.0f / q;
            if (P->mask[1])
                for (int64_t i = 0; i < R; i++) {
                    const float xn = (x[i] - mean) * rs;
                    t[i] = dy[i] * xn;
                }
            dg = P->mask[1] ? nr_scaled_sum(t, R, 1.0f) : 0.0f;
            if (P->mask[0] && P->training) {
                /* BNTrainingReduceGrad (needs ds whatever the mask) */
                if (!P->mask[1]) {
                    for (int64_t i = 0; i < R; i++) {
                        const float xn = (x[i] - mean) * rs;
                        t[i] = dy[i] * xn;
                    }
                    dg = nr_scaled_sum(t, R, 1.0f);
                }
                const float n = P->n_rec, nn = -P->n_rec;
                const float scale_inv = dg * n, scale_inv_rev = dg * nn;
                const float offset_inv_rev = db * nn;
                const float mult = scale_inv_rev / q;
                const float add = (mean / q) * scale_inv + offset_inv_rev;
                const float k = w[c] / q;
                for (int64_t i = 0; i < R; i++) {
                    const float m = mult * x[i];
                    float u = dy[i] + m;
                    u += add;
                    dy[i] = u * k;
                }
            } else if (P->mask[0] && P->regbase) {
                /* BatchNormGradV3's inference kernels: norm_common's Newton-Raphson rstd */
                const float r = nr_rstd_newton_raphson(var, eps, true);
                for (int64_t i = 0; i < R; i++) {
                    const float g = dy[i] * w[c];
                    dy[i] = g * r;
                }
            } else if (P->mask[0]) {
                /* BNInferGrad */
                const float k = w[c] * rs;
                for (int64_t i = 0; i < R; i++)
                    dy[i] = k * dy[i];
            }
        }
        if (P->mask[0])
            store_channel(&P->t[T_DX], &ldx, c, outer, ACLEMU_TIES_EVEN, dy);
        if (P->mask[1])
            put_one(&P->t[T_DW], c, dg);
        if (P->mask[2])
            put_one(&P->t[T_DB], c, round_to(P->stat_dt, db));
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const bnb_payload *P = bn_task_payload(T);
    if (!P->work)
        return;
    const int64_t C = P->C;
    /* read before any is written: an output may be the very memory of a vector */
    static const float FILL[N_PARAMS] = {1.0f, 0.0f, 1.0f, 0.0f, 1.0f};
    for (int k = 0; k < N_PARAMS; k++)
        load_param(&P->t[T_W + k], C, FILL[k], T->params + k * C);
    aclemu_parallel_for(C, T->nchunks, channels_body, T);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BNB_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bnb_payload),
    .tensors_at = offsetof(bnb_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = CHUNK_VALUES,
    .nparams = N_PARAMS,
    .run = task_run,
};

static aclnnStatus bnb_launch(void *payload, void *const *addrs, void *workspace,
                              uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const bnb_payload *P = payload;
    bn_kernel K = BNB_KERNEL;
    if (P->no_kernel)
        K.run = NULL; /* the memory checked, nothing queued (vm_launch) */
    return bn_task_launch(&K, payload, addrs, workspace, P->ws_size, stream, P->work ? P->C : 0,
                          P->R);
}

static const aclemu_executor_ops BNB_OPS = {
    .op_name = P2,
    .launch = bnb_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one -------------------------------------------------------------------------------- */

static aclnnStatus check_same_dtype(const aclTensor *a, int ia, const aclTensor *b, int ib)
{
    if (a && b && a->dtype != b->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be %s's dtype %s", P1, TNAME[ia],
             dname(a->dtype), TNAME[ib], dname(b->dtype));
    return ACLNN_SUCCESS;
}

/* CheckDtypeMatchReferenceOrFloat: FLOAT or the reference's dtype, where both are given. */
static aclnnStatus check_float_or(const aclTensor *t, int it, const aclTensor *ref, int iref)
{
    if (t && ref && t->dtype != ref->dtype && t->dtype != ACL_FLOAT)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be FLOAT or %s's dtype %s", P1,
             TNAME[it], dname(t->dtype), TNAME[iref], dname(ref->dtype));
    return ACLNN_SUCCESS;
}

/* Ascend 950's RegbaseCheckDtypeSame, in its order. */
static aclnnStatus check_regbase_dtypes(const aclTensor *const *ts, const bool *mask)
{
    aclnnStatus st;
    const aclTensor *dy = ts[T_DY], *w = ts[T_W];
    if ((st = check_float_or(w, T_W, dy, T_DY)) ||
        (st = check_float_or(ts[T_RMEAN], T_RMEAN, dy, T_DY)) ||
        (st = check_float_or(ts[T_RVAR], T_RVAR, dy, T_DY)) ||
        (st = check_same_dtype(ts[T_RVAR], T_RVAR, ts[T_RMEAN], T_RMEAN)) ||
        (st = check_float_or(ts[T_SMEAN], T_SMEAN, dy, T_DY)) ||
        (st = check_float_or(ts[T_SINV], T_SINV, dy, T_DY)) ||
        (st = check_same_dtype(ts[T_SINV], T_SINV, ts[T_SMEAN], T_SMEAN)))
        return st;
    if (mask[0] && (st = check_same_dtype(ts[T_DX], T_DX, dy, T_DY)))
        return st;
    if (mask[1] && (st = check_float_or(ts[T_DW], T_DW, w, T_W)))
        return st;
    if (mask[2] && (st = check_float_or(ts[T_DB], T_DB, w, T_W)))
        return st;
    return check_same_dtype(ts[T_DB], T_DB, ts[T_DW], T_DW);
}

/* CheckFormat, in its order. */
static aclnnStatus check_formats(const aclTensor *dy, const aclTensor *x, const aclTensor *dx,
                                 bool regbase)
{
    if (dy->format != x->format)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOut's format (aclFormat %d) must be input's "
             "format (aclFormat %d)", P1, (int)dy->format, (int)x->format);
    if (dx && dx->format != dy->format)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradInput's format (aclFormat %d) must be gradOut's "
             "format (aclFormat %d)", P1, (int)dx->format, (int)dy->format);
    if (regbase) {
        const aclTensor *ts[2] = {x, dx};
        for (int k = 0; k < 2; k++) {
            if (!ts[k] || ts[k]->ndim != 5)
                continue;
            if (ts[k]->format != ACL_FORMAT_NCDHW && ts[k]->format != ACL_FORMAT_NDHWC)
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s of rank 5 has format aclFormat %d: it "
                     "must be NCDHW or NDHWC", P1, k ? "gradInput" : "input",
                     (int)ts[k]->format);
        }
    }
    if (p1_private_format(dy->format) || p1_private_format(x->format))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s's format (aclFormat %d) is private: ND, NC, NCL, "
             "NCHW, NCDHW are taken", P1, p1_private_format(dy->format) ? "gradOut" : "input",
             (int)(p1_private_format(dy->format) ? dy->format : x->format));
    /* stricter (docs/aclnnBatchNormBackward.md: no NHWC, NDHWC but on Ascend 950) */
    if (!regbase && (x->format == ACL_FORMAT_NHWC || x->format == ACL_FORMAT_NDHWC))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's format NHWC/NDHWC (aclFormat %d) is "
             "supported on Ascend 950 only (docs/aclnnBatchNormBackward.md)", P1,
             (int)x->format);
    return ACLNN_SUCCESS;
}

/* A [C] vector (or [0] where `may_be_empty`). */
static aclnnStatus check_vector(const aclTensor *t, int i, int64_t C, bool may_be_empty,
                                const aclTensor *x)
{
    if (t && (t->ndim != 1 || (t->dims[0] != C && !(may_be_empty && t->dims[0] == 0))))
        return shape_error(P1, TNAME[i], t->dims, t->ndim,
                           may_be_empty ? "must be [C] or, in inference, [0], C the channel "
                                          "count of input"
                                        : "must be [C], C the channel count of input",
                           x->dims, x->ndim);
    return ACLNN_SUCCESS;
}

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/* BatchNormGradV3's workspace on Ascend 950 in training, by the template its tiling takes for
 * r1 x a x r0 (op_host/batch_norm_grad_v3_tiling*.cpp, tried by ascending priority):
 * RARSplitCoreR1 (r0 > 1, a <= cores / 4, r1 >= cores, r1 * r0 * 5 >= UB) 32 MiB plus
 * 2 x cores used x a (up to 8) floats; RASplitR (r0 == 1, r1 >= 64 and >= a, and more cores than
 * the A-split rival, or r1 > 16 x cores) 16 MiB plus 2 x cores used x a floats; every other
 * template 16 MiB. */
static uint64_t bnb_grad_v3_workspace(int64_t r1, int64_t a, int64_t r0, aclDataType dy_dt)
{
    const int64_t cores = aclemu_soc_vector_cores(), ub = aclemu_soc_ub_bytes();
    if (r0 != 1) {
        if (a <= cores / 4 && r1 >= cores && r1 * r0 * 5 >= ub) {
            const int64_t inner = (r1 + cores - 1) / cores, used = (r1 + inner - 1) / inner;
            return 2 * EW_SYS_WORKSPACE + (uint64_t)(used * ((a + 7) / 8 * 8) * 4 * 2);
        }
        return EW_SYS_WORKSPACE;
    }
    if (r1 < 64 || r1 < a)
        return EW_SYS_WORKSPACE;
    const int64_t es = dy_dt == ACL_FLOAT ? 4 : 2;
    int64_t a_factor = (a + cores - 1) / cores;
    if (a_factor < 32 / es)
        a_factor = 32 / es;
    const int64_t rival = (a + a_factor - 1) / a_factor;
    int64_t block = (r1 + cores - 1) / cores;
    if (block < 64)
        block = 64;
    const int64_t own = (r1 + block - 1) / block;
    if ((rival >= 2 && rival < cores && own > rival) || r1 > 16 * cores)
        return EW_SYS_WORKSPACE + (uint64_t)(own * a * 4 * 2);
    return EW_SYS_WORKSPACE;
}

/* A per-channel vector as the op_api takes it: the caller's (its Contiguous copy, if strided)
 * or the fill's handle h (>= 0). */
static int bnb_vector(ew_graph *g, const aclTensor *t, int h)
{
    return t ? ew_contiguous_copy(g, t) : h;
}

/*
 * aclnn_batch_norm_backward.cpp's graph (aclnnBatchNormBackwardGetWorkspaceSize,
 * BatchNormBackward(Regbase), BatchNormBackwardProc(Regbase), CalcGradWeightGradBias; norm_common
 * norm_tensor_util.cpp ResizeFrom1D/ResizeTo1D/ResizeFrom5D/ResizeTo5D; batch_norm_backward.cpp
 * the L0 outputs), in launch order, for a call with some work (an empty input and, on Ascend
 * 950, an empty mask report 0). Off Ascend 950 every kernel is TBE (BNTrainingUpdateGrad,
 * BNTrainingReduceGrad, BNInferGrad and the 3D twins): their own workspaces are not public,
 * none; on Ascend 950 the inference's Add, Pow, Sub, Mul and ReduceSum keep theirs unmodelled
 * (docs/emulator.md).
 */
static uint64_t bnb_device_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                                     const bnb_payload *P)
{
    const aclTensor *x = ts[T_X], *dy_t = ts[T_DY];
    const uint64_t C = (uint64_t)P->C, X = (uint64_t)(P->C * P->R);
    const aclDataType xdt = x->dtype, dydt = dy_t->dtype;
    const uint64_t xes = aclemu_dtype_size(xdt), dyes = aclemu_dtype_size(dydt);
    const bool training = P->training;
    ew_graph g = ew_graph_on(soc->npu_arch);
    int xin = ew_contiguous_copy(&g, x), dy = ew_contiguous_copy(&g, dy_t);
    /* the absent vectors' FLOAT fills, in the op_api's order */
    const int order[5] = {T_RMEAN, T_RVAR, T_W, T_SMEAN, T_SINV};
    int fill[T_COUNT];
    for (int i = 0; i < 5; i++)
        fill[order[i]] = ts[order[i]] ? -1 : ew_fill(&g, C * 4);
    int gi, gw, gb;
    aclDataType gw_dt = ACL_FLOAT;
    bool stats_6hd = false;
    if (P->regbase) {
        aclDataType wdt = ts[T_W] ? ts[T_W]->dtype : ACL_FLOAT;
        int w = bnb_vector(&g, ts[T_W], fill[T_W]);
        if (dydt == ACL_FLOAT) {
            w = ew_cast(&g, w, wdt, ACL_FLOAT, C);
            wdt = ACL_FLOAT;
        }
        int rm = bnb_vector(&g, ts[T_RMEAN], fill[T_RMEAN]);
        int rv = bnb_vector(&g, ts[T_RVAR], fill[T_RVAR]);
        aclDataType rmdt = ts[T_RMEAN] ? ts[T_RMEAN]->dtype : ACL_FLOAT;
        aclDataType rvdt = ts[T_RVAR] ? ts[T_RVAR]->dtype : ACL_FLOAT;
        if (dydt == ACL_FLOAT || wdt == ACL_FLOAT) {
            rm = ew_cast(&g, rm, rmdt, ACL_FLOAT, C);
            rv = ew_cast(&g, rv, rvdt, ACL_FLOAT, C);
            rmdt = rvdt = ACL_FLOAT;
        }
        int stats[2];
        uint64_t nsm = C; /* saveMean's elements: the gradWeight/gradBias results' */
        for (int i = 0; i < 2; i++) {
            const aclTensor *t = ts[T_SMEAN + i];
            int h = bnb_vector(&g, t, fill[T_SMEAN + i]);
            int64_t n = (int64_t)C;
            if (t && !numel(t->dims, t->ndim, &n))
                n = 0;
            /* an empty one is relabelled FLOAT: no cast */
            const aclDataType dt = t && n > 0 ? t->dtype : ACL_FLOAT;
            stats[i] = ew_cast(&g, h, dt, ACL_FLOAT, (uint64_t)n);
            if (i == 0)
                nsm = (uint64_t)n;
        }
        const int k = ew_kernel(&g); /* BatchNormGradV3 */
        const int reads[7] = {dy, xin, w, rm, rv, stats[0], stats[1]};
        ew_read_all(&g, reads, 7, k);
        int64_t r1 = 1, r0 = 1;
        for (int i = 0; i < (int)x->ndim; i++) {
            if (i < P->caxis)
                r1 *= x->dims[i];
            else if (i > P->caxis)
                r0 *= x->dims[i];
        }
        ew_kernel_workspace(&g, k, training ? bnb_grad_v3_workspace(r1, P->C, r0, dydt)
                                            : EW_SYS_WORKSPACE);
        gi = ew_output(&g, k, X * xes);
        gw = ew_output(&g, k, nsm * aclemu_dtype_size(wdt));
        gb = ew_output(&g, k, nsm * aclemu_dtype_size(wdt));
        gw_dt = wdt;
        if (!training && (P->mask[1] || P->mask[2])) {
            /* CalcGradWeightGradBias: FLOAT casts, then the composed sums */
            const int dyc = ew_cast(&g, dy, dydt, ACL_FLOAT, X);
            const int xc = ew_cast(&g, xin, xdt, ACL_FLOAT, X);
            const int mc = ew_cast(&g, rm, rmdt, ACL_FLOAT, C);
            const int vc = ew_cast(&g, rv, rvdt, ACL_FLOAT, C);
            gw_dt = ACL_FLOAT;
            if (P->mask[1]) {
                const int add = ew_convert(&g, vc, C * 4);  /* Add eps */
                const int pw = ew_convert(&g, add, C * 4);  /* Pow -0.5 */
                const int ks = ew_kernel(&g);               /* Sub mean */
                ew_read(&g, xc, ks);
                ew_read(&g, mc, ks);
                const int sub = ew_output(&g, ks, X * 4);
                const int km = ew_kernel(&g);               /* Mul invstd */
                ew_read(&g, sub, km);
                ew_read(&g, pw, km);
                const int mul = ew_output(&g, km, X * 4);
                const int km2 = ew_kernel(&g);              /* Mul gradOut */
                ew_read(&g, dyc, km2);
                ew_read(&g, mul, km2);
                const int mul2 = ew_output(&g, km2, X * 4);
                gw = ew_convert(&g, mul2, C * 4);           /* ReduceSum */
            }
            if (P->mask[2])
                gb = ew_convert(&g, dyc, C * 4);            /* ReduceSum */
        }
    } else {
        const bool ncdhw_ok = soc->npu_arch == 2201 || soc->npu_arch == 2002;
        const uint64_t dim = x->ndim > 5 ? 5 : x->ndim;
        const bool transposed = !training && dim == 5; /* ResizeFrom5D */
        if (transposed) {
            dy = ew_convert(&g, dy, X * dyes);
            xin = ew_convert(&g, xin, X * xes);
        }
        const bool six_hd = training && dim == 5 && !ncdhw_ok;
        const uint64_t stat = six_hd ? (C + 15) / 16 * 16 * 4 : C * 4;
        int vec[T_COUNT];
        const int used[3] = {T_W, training ? T_SMEAN : T_RMEAN, training ? T_SINV : T_RVAR};
        for (int i = 0; i < 3; i++) { /* ResizeFrom1D */
            const aclTensor *t = ts[used[i]];
            int h = bnb_vector(&g, t, fill[used[i]]);
            h = ew_cast(&g, h, t ? t->dtype : ACL_FLOAT, ACL_FLOAT, C);
            vec[used[i]] = six_hd ? ew_convert(&g, h, stat) : h;
        }
        const int w = vec[T_W], mean = vec[used[1]], var = vec[used[2]];
        int64_t d[5];
        if (six_hd) {
            bn_ncdhw(x, d);
            dy = ew_convert(&g, dy, bn_6hd_bytes(d, dyes));
            xin = ew_convert(&g, xin, bn_6hd_bytes(d, xes));
        }
        const int ku = ew_kernel(&g); /* BNTrainingUpdateGrad */
        const int ureads[4] = {dy, xin, mean, var};
        ew_read_all(&g, ureads, 4, ku);
        gw = ew_output(&g, ku, stat);
        gb = ew_output(&g, ku, stat);
        const int kr = ew_kernel(&g); /* BNTrainingReduceGrad, or BNInferGrad */
        if (training) {
            const int rreads[7] = {dy, xin, gw, gb, w, mean, var};
            ew_read_all(&g, rreads, 7, kr);
        } else {
            const int rreads[3] = {dy, w, var};
            ew_read_all(&g, rreads, 3, kr);
        }
        gi = ew_output(&g, kr, six_hd ? bn_6hd_bytes(d, xes) : X * xes);
        if (six_hd || transposed)
            gi = ew_convert(&g, gi, X * xes); /* TransDataSpecial back, or ResizeTo5D */
        stats_6hd = six_hd;
    }
    /* the results' copies (ResizeTo1D off Ascend 950: TransDataSpecial back from 6HD first) */
    if (P->mask[1])
        ew_copy_out(&g, stats_6hd ? ew_convert(&g, gw, C * 4) : gw, gw_dt, ts[T_DW], C);
    if (P->mask[2])
        ew_copy_out(&g, stats_6hd ? ew_convert(&g, gb, C * 4) : gb, gw_dt, ts[T_DB], C);
    if (P->mask[0])
        ew_copy_out(&g, gi, xdt, ts[T_DX], X);
    return ew_size(&g);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {gradOut,    input,     weight,    runningMean, runningVar,
                                    saveMean,   saveInvstd, gradInput, gradWeight,  gradBias};

    /* 0. the out-pointers first (161001), 1. CheckInputNotNull (161001); every tensor given
     * must be a live aclTensor; the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(T_DY, T_W), workspaceSize,
                                executor, &soc);
    if (st)
        return st;
    const bool regbase = soc->npu_arch == 3510;

    bnb_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* 2. an empty input or gradOut: success, nothing checked, nothing written */
    bool empty = false;
    for (uint64_t i = 0; i < input->ndim; i++)
        empty = empty || input->dims[i] == 0;
    for (uint64_t i = 0; i < gradOut->ndim; i++)
        empty = empty || gradOut->dims[i] == 0;
    if (empty) {
        P->no_kernel = true;
        return p1_finish(P1, &BNB_OPS, P, 0, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                         executor);
    }

    /* 3. CheckMaskNotNull (161001 for all of it) */
    bool mask[3];
    if (!outputMask) {
        aclemu_set_error("%s: outputMask is NULL", P1);
        st = ACLNN_ERR_PARAM_NULLPTR;
        goto fail;
    }
    if (!aclemu_handle_check(outputMask, ACLEMU_KIND_BOOL_ARRAY)) {
        aclemu_set_error("%s: outputMask (%p) is not a live aclBoolArray", P1,
                         (const void *)outputMask);
        st = ACLNN_ERR_PARAM_INVALID;
        goto fail;
    }
    /* length 3 on every part: the vendor's code checks it on Ascend 950 only (elsewhere it
     * reads elements 1 and 2 of whatever it is given); the docs ask 3 everywhere */
    if (outputMask->size != 3) {
        aclemu_set_error("%s: outputMask length %llu != 3 (gradInput, gradWeight, gradBias)", P1,
                         (unsigned long long)outputMask->size);
        st = ACLNN_ERR_PARAM_NULLPTR;
        goto fail;
    }
    for (int k = 0; k < 3; k++) {
        mask[k] = outputMask->values[k];
        if (mask[k] && !ts[T_DX + k]) {
            aclemu_set_error("%s: outputMask[%d] is true but %s is NULL", P1, k, TNAME[T_DX + k]);
            st = ACLNN_ERR_PARAM_NULLPTR;
            goto fail;
        }
    }
    /* 4. dtypes (161002): gradOut, input, their equality; the requested outputs; the vectors */
    if ((st = bn_check_float_dtype(P1, TNAME[T_DY], gradOut, soc)) ||
        (st = bn_check_float_dtype(P1, TNAME[T_X], input, soc)) ||
        (st = check_same_dtype(input, T_X, gradOut, T_DY)))
        goto fail;
    for (int k = 0; k < 3; k++)
        if (mask[k] && (st = bn_check_float_dtype(P1, TNAME[T_DX + k], ts[T_DX + k], soc)))
            goto fail;
    for (int i = T_W; i <= T_SINV; i++)
        if (ts[i] && (st = bn_check_float_dtype(P1, TNAME[i], ts[i], soc)))
            goto fail;
    if (regbase && (st = check_regbase_dtypes(ts, mask)))
        goto fail;
    /* 5. formats, ranks and shapes (161002) */
    if ((st = check_formats(gradOut, input, mask[0] ? gradInput : NULL, regbase)))
        goto fail;
    if ((st = bn_check_rank(P1, TNAME[T_X], input)) ||
        (st = bn_check_rank(P1, TNAME[T_DY], gradOut)))
        goto fail;
    if (!same_dims(gradOut->dims, gradOut->ndim, input->dims, input->ndim)) {
        st = shape_error(P1, "gradOut", gradOut->dims, gradOut->ndim, "must equal input's",
                         input->dims, input->ndim);
        goto fail;
    }
    if (mask[0]) {
        if ((st = bn_check_rank(P1, TNAME[T_DX], gradInput)))
            goto fail;
        if (!same_dims(gradInput->dims, gradInput->ndim, gradOut->dims, gradOut->ndim)) {
            st = shape_error(P1, "gradInput", gradInput->dims, gradInput->ndim,
                             "must equal gradOut's", gradOut->dims, gradOut->ndim);
            goto fail;
        }
    }
    const bool channel_last = regbase && (input->format == ACL_FORMAT_NHWC ||
                                          input->format == ACL_FORMAT_NDHWC);
    const int caxis = channel_last ? (int)input->ndim - 1 : 1;
    const int64_t C = input->dims[caxis];
    for (int i = T_W; i <= T_RVAR; i++)
        if ((st = check_vector(ts[i], i, C, false, input)))
            goto fail;
    /* the saved statistics: checked on Ascend 950 only by the vendor's code; the docs' rule
     * ([C], or [0] in inference) on every part (stricter elsewhere) */
    for (int i = T_SMEAN; i <= T_SINV; i++)
        if ((st = check_vector(ts[i], i, C, !training, input)))
            goto fail;
    if (regbase)
        for (int k = 1; k < 3; k++)
            if (mask[k] && (st = check_vector(ts[T_DX + k], T_DX + k, C, false, input)))
                goto fail;
    int64_t X = 0;
    if (!numel(input->dims, input->ndim, &X)) {
        aclemu_set_error("%s: input's element count overflows int64", P1);
        st = ACLNN_ERR_PARAM_INVALID;
        goto fail;
    }
    /* 6. off Ascend 950, the results' ViewCopy into the outputs (the op_api's CHECK_RET:
     * 561103), in its order: gradWeight, gradBias (cast to their dtype first), gradInput */
    if (!regbase) {
        for (int k = 1; k < 3; k++) {
            const aclTensor *t = ts[T_DX + k];
            int64_t n = 0;
            if (mask[k] && !(t->ndim == 1 && t->dims[0] == C) &&
                !(C == 1 && numel(t->dims, t->ndim, &n) && n == 1)) {
                shape_error(P1, TNAME[T_DX + k], t->dims, t->ndim,
                            "must be [C] (or one element for C == 1) for the copy of the result "
                            "(the op_api's ViewCopy), C the channel count of input",
                            input->dims, input->ndim);
                st = ACLNN_ERR_INNER_NULLPTR;
                goto fail;
            }
        }
        if (mask[0] && gradInput->dtype != gradOut->dtype) {
            aclemu_set_error("%s: gradInput dtype %s must be gradOut's dtype %s for the copy of "
                             "the result (the op_api's ViewCopy)", P1, dname(gradInput->dtype),
                             dname(gradOut->dtype));
            st = ACLNN_ERR_INNER_NULLPTR;
            goto fail;
        }
    }

    P->work = mask[0] || mask[1] || mask[2];
    /* Ascend 950 returns early when nothing is requested; elsewhere the L0 ops still run */
    P->no_kernel = regbase && !P->work;
    memcpy(P->mask, mask, sizeof mask);
    P->training = training;
    P->regbase = regbase;
    P->caxis = caxis;
    P->C = C;
    P->R = X / C;
    P->eps = (float)eps;
    P->stat_dt = ACL_FLOAT;
    if (regbase) {
        P->n_rec = 1.0f / (float)P->R;
        /* the kernel's dg/db are weight's dtype where the op_api keeps weight 16-bit */
        if (training && weight && gradOut->dtype != ACL_FLOAT)
            P->stat_dt = weight->dtype;
    } else {
        P->n_rec = (float)(1.0 / (double)(float)P->R); /* the dynamic tiling's num_rec */
    }
    if (P->work) {
        snapshot(&P->t[T_DY], gradOut, -1);
        snapshot(&P->t[T_X], input, -1);
        snapshot(&P->t[T_W], weight, -1);
        if (training) {
            snapshot(&P->t[T_SMEAN], saveMean, -1);
            snapshot(&P->t[T_SINV], saveInvstd, -1);
        } else {
            snapshot(&P->t[T_RMEAN], runningMean, -1);
            snapshot(&P->t[T_RVAR], runningVar, -1);
        }
        for (int k = 0; k < 3; k++)
            if (mask[k])
                snapshot(&P->t[T_DX + k], ts[T_DX + k], -1);
    }
    P->ws_size = P->no_kernel ? 0 : bnb_device_workspace(soc, ts, P);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BNB_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
fail:
    free(P);
    return st;
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, const aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
