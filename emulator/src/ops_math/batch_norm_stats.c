/*
 * aclnnBatchNormStats for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel. SyncBatchNorm's first step: one rank's per-channel mean and invstd
 * (1 / sqrt(biased variance + eps)) of input, both FLOAT [C], C input's dim 1; the ranks' rows
 * then go to aclnnBatchNormGatherStatsWithCounts.
 *
 * Facts, hicann/ops-math math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp (the
 * phase one, its order and codes, the L0 ops per part), reduce_std_with_mean.cpp (its L0 op:
 * TBE), math/reduce_mean/op_api/reduce_mean.cpp (TBE off Ascend 950), math/reduce_var
 * (Ascend 950's ReduceVar: op_kernel/arch35/reduce_var_twopass.h, its tiling's factors in
 * op_host/arch35/reduce_var_tiling.cpp), math/pow/op_kernel/arch35/pow_tensor_scalar_float.h
 * (Ascend 950's Pow with exponent -0.5), docs/aclnnBatchNormStats.md:
 * - phase one: workspaceSize/executor NULL (161001); input, mean or invstd NULL (161001);
 *   input's dtype FLOAT or FLOAT16 (plus BF16 on Ascend 950 only), mean's and invstd's FLOAT
 *   (161002); a private format of input, mean or invstd (161002); input's rank in [2, 8], mean
 *   and invstd rank 1, input's dim 1 (C) not 0, mean and invstd [C] (161002); an empty input:
 *   mean filled with 0 and invstd with NaN (two Fill kernels and their copies).
 * - the numbers (input widened to float32 exactly by the op_api's Cast), per channel of R
 *   values (every dim but dim 1), eps the op_api's float:
 *   off Ascend 950 (TBE ReduceMean, then ReduceStdWithMean with the broadcast mean, invert,
 *   correction 0; not in hicann's sources: their published Python sources), cof = 1 / R:
 *     mean = sum(x) * cof, invstd = sqrtf(1 / (sum((x - mean)^2 * cof) + eps));
 *   Ascend 950 (ReduceVar with the mean out, Add of eps, Pow -0.5 as 1 / sqrt), p the power of
 *   two >= R, s = (float)(1.0 / R):
 *     mean = sum(x * (1 / p)) * (p / R), invstd = 1 / sqrtf(sum(((x - mean) * s) * (x - mean))
 *     + eps).
 * The sums run in norm_rows.h's fixed lane order (the devices' folds are their own).
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "ops/phase_one.h"
#include "ops/convert.h"
#include "ops/bn_channels.h"
#include "ops/exec_workspace.h"
#include "ops/norm_rows.h"
#include "ops/tensor_view.h"

#include "aclnnop/aclnn_batch_norm_stats.h"

#define P1 "aclnnBatchNormStatsGetWorkspaceSize"
#define P2 "aclnnBatchNormStats"

/* the prototype's order */
enum { T_INPUT, T_MEAN, T_INVSTD, T_COUNT };
static const char *const TNAME[T_COUNT] = {"input", "mean", "invstd"};
#define N_INPUTS 1 /* input */

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;    /* what phase one reports: the device's (exec_workspace.h) */
    bool empty;   /* an empty input: mean 0 and invstd NaN (the op_api's fills) */
    bool regbase; /* Ascend 950's ReduceVar + Add + Pow (else TBE ReduceMean + ReduceStdWithMean) */
    int64_t C, R; /* channels, values per channel */
    float eps;
} bs_payload;

#define CHUNK_VALUES 2 /* a chunk's floats per value of its channel: x, then x - mean */

/* ---- the kernel -------------------------------------------------------------------------- */

/* sum((d[i] * s) * d[i]) in nr_scaled_sum's lane order: Ascend 950's ReduceVar scales each
 * difference before squaring it (its Muls, then Mul, then the ReduceSum). */
static float scaled_first_sum_squares(const float *d, int64_t n, float s)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++) {
            const float t = d[i + l] * s;
            acc[l] += t * d[i + l];
        }
    for (int l = 0; i + l < n; l++) {
        const float t = d[i + l] * s;
        acc[l] += t * d[i + l];
    }
    return nr_fold(acc);
}

/* The smallest power of two >= n (the ReduceVar kernel's FindNextPower2). */
static int64_t next_power_of_two(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const bs_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    float *mean_out = T->params, *invstd_out = mean_out + C;
    float *x = T->buf + chunk * CHUNK_VALUES * R, *d = x + R;
    chan_lay in;
    chan_lay_build(&in, &P->t[T_INPUT], 1);
    const int64_t outer = R / (in.inner ? in.inner : 1);
    const float eps = P->eps;
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_INPUT], &in, c, outer, x);
        float mean, var;
        if (P->regbase) {
            const int64_t p = next_power_of_two(R);
            const float mean_scale = 1.0f / (float)p, correction = (float)p / (float)R;
            const float var_scale = (float)(1.0 / (double)R);
            mean = nr_scaled_sum(x, R, mean_scale) * correction;
            nr_center(d, x, R, mean);
            var = scaled_first_sum_squares(d, R, var_scale);
            invstd_out[c] = 1.0f / sqrtf(var + eps);
        } else {
            const float cof = 1.0f / (float)R;
            mean = nr_scaled_sum(x, R, 1.0f) * cof;
            nr_center(d, x, R, mean);
            var = nr_scaled_sum_squares(d, R, cof);
            const float rec = 1.0f / (var + eps);
            invstd_out[c] = sqrtf(rec);
        }
        mean_out[c] = mean;
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const bs_payload *P = bn_task_payload(T);
    if (P->empty) {
        for (int64_t c = 0; c < P->C; c++) {
            put_one(&P->t[T_MEAN], c, 0.0f);
            put_one(&P->t[T_INVSTD], c, NAN);
        }
        return;
    }
    aclemu_parallel_for(P->C, T->nchunks, channels_body, T);
    put_two(&P->t[T_MEAN], &P->t[T_INVSTD], T->params, P->C);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BS_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bs_payload),
    .tensors_at = offsetof(bs_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = CHUNK_VALUES,
    .nparams = 2, /* the results: mean, invstd */
    .run = task_run,
};

static aclnnStatus bs_launch(void *payload, void *const *addrs, void *workspace,
                             uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const bs_payload *P = payload;
    /* the empty case's fills need no buffers (C 0 for the launch), but they are kernels */
    return P->empty
               ? bn_task_launch(&BS_KERNEL, payload, addrs, workspace, P->ws_size, stream, 0, 0)
               : bn_task_launch(&BS_KERNEL, payload, addrs, workspace, P->ws_size, stream, P->C,
                                P->R);
}

static const aclemu_executor_ops BS_OPS = {
    .op_name = P2,
    .launch = bs_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/*
 * aclnn_batch_norm_stats.cpp's graph in launch order: input's Contiguous copy and FLOAT Cast,
 * then on Ascend 950 (aclnnBatchNormStatsImplUnify) ReduceVar (var and mean), Add of eps and
 * Pow -0.5, each asking 16 MiB (reduce_var_tiling.cpp CalcUserWorkSpace's
 * Ops::Base::WORKSPACE_SIZE, opbase's broadcast tiling for Add, pow_tiling_arch35.cpp); the
 * ReduceVar's per-core partials of a split reduction (groupR > 1) are not modelled
 * (docs/emulator.md). Elsewhere ReduceMean, BroadcastTo of the mean to input's shape (FLOAT,
 * alive until ReduceStdWithMean) and ReduceStdWithMean: TBE kernels, their workspaces not
 * public: none. Each result is handed to mean or invstd (a contiguous one takes it over).
 */
static uint64_t bs_device_workspace(const aclTensor *const *ts, int arch, uint64_t C,
                                    uint64_t X)
{
    const aclTensor *input = ts[T_INPUT];
    ew_graph g = ew_graph_on(arch);
    const int x = ew_cast(&g, ew_contiguous_copy(&g, input), input->dtype, ACL_FLOAT, X);
    if (arch == 3510) {
        const int kv = ew_kernel(&g); /* ReduceVar */
        ew_read(&g, x, kv);
        ew_kernel_workspace(&g, kv, EW_SYS_WORKSPACE);
        const int var = ew_output(&g, kv, C * 4), mean = ew_output(&g, kv, C * 4);
        const int sum = ew_op(&g, var, -1, EW_SYS_WORKSPACE, C * 4);
        const int invstd = ew_op(&g, sum, -1, EW_SYS_WORKSPACE, C * 4);
        ew_copy_out(&g, invstd, ACL_FLOAT, ts[T_INVSTD], C);
        ew_copy_out(&g, mean, ACL_FLOAT, ts[T_MEAN], C);
    } else {
        const int mean = ew_op(&g, x, -1, 0, C * 4); /* ReduceMean */
        ew_copy_out(&g, mean, ACL_FLOAT, ts[T_MEAN], C);
        const int wide = ew_op(&g, mean, -1, 0, X * 4); /* BroadcastTo */
        const int k = ew_kernel(&g);                         /* ReduceStdWithMean */
        ew_read(&g, x, k);
        ew_read(&g, wide, k);
        ew_copy_out(&g, ew_output(&g, k, C * 4), ACL_FLOAT, ts[T_INVSTD], C);
    }
    return ew_size(&g);
}

/* ---- phase one -------------------------------------------------------------------------------- */

/* CheckDtypeValid's rule for one tensor: dtype in allowed (a list for the message). */
static aclnnStatus check_dtype(const aclTensor *t, int i, bool ok, const aclemu_soc *soc,
                               const char *allowed)
{
    if (!ok)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
             TNAME[i], dname(t->dtype), soc->name, soc->series, allowed);
    return ACLNN_SUCCESS;
}

/* CheckShape, in its order. */
static aclnnStatus check_shapes(const aclTensor *const *ts)
{
    const aclTensor *input = ts[T_INPUT];
    aclnnStatus st;
    if ((st = bn_check_rank(P1, TNAME[T_INPUT], input)))
        return st;
    for (int i = T_MEAN; i <= T_INVSTD; i++)
        if (ts[i]->ndim != 1)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must have rank 1 ([C], C the channel count of input)",
                               input->dims, input->ndim);
    const int64_t C = input->dims[1];
    if (C == 0) {
        char s[256];
        fmt_dims(s, sizeof s, input->dims, input->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input shape %s has no channel: dim 1 (C) must not "
             "be 0", P1, s);
    }
    for (int i = T_MEAN; i <= T_INVSTD; i++)
        if (ts[i]->dims[0] != C)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must be [C], C the channel count (dim 1) of input",
                               input->dims, input->ndim);
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input, double eps,
                                                              aclTensor *mean, aclTensor *invstd,
                                                              uint64_t *workspaceSize,
                                                              aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {input, mean, invstd};

    /* 0. the out-pointers first (OP_CHECK_COMM_INPUT: 161001), 1. CheckNotNull (161001), in
     * its order; all live; the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(0, T_COUNT), workspaceSize,
                                executor, &soc);
    if (st)
        return st;
    const bool regbase = soc->npu_arch == 3510;

    /* 2. CheckDtypeValid (161002): BF16 input on Ascend 950 only (IsRegBase's list; the Atlas
     * A2/A3 parts, which have BF16 elsewhere, are not offered it here) */
    const aclDataType idt = input->dtype;
    if ((st = check_dtype(input, T_INPUT,
                          idt == ACL_FLOAT || idt == ACL_FLOAT16 || (regbase && idt == ACL_BF16),
                          soc, regbase ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16")))
        return st;
    for (int i = T_MEAN; i <= T_INVSTD; i++)
        if ((st = check_dtype(ts[i], i, ts[i]->dtype == ACL_FLOAT, soc, "FLOAT")))
            return st;
    /* 3. CheckFormat (161002) */
    for (int i = 0; i < T_COUNT; i++)
        if (p1_private_format(ts[i]->format))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s's format (aclFormat %d) is private: ND, NCL, "
                 "NCHW, NCDHW are taken", P1, TNAME[i], (int)ts[i]->format);
    /* 4. CheckShape (161002) */
    if ((st = check_shapes(ts)))
        return st;
    int64_t X = 0;
    if (!numel(input->dims, input->ndim, &X))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input's element count overflows int64", P1);

    bs_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    const int64_t C = input->dims[1];
    /* 5. an empty input (C > 0): mean 0 and invstd NaN (ProcessEmptyTensorWithValue: Fill
     * kernels, so phase two needs a context), input not read */
    P->empty = X == 0;
    P->regbase = regbase;
    P->C = C;
    P->R = X / C;
    P->eps = (float)eps;
    for (int i = 0; i < T_COUNT; i++)
        snapshot(&P->t[i], ts[i], -1);
    P->ws_size = P->empty ? ew_empty_call(soc->npu_arch, ts, T_MEAN, T_INVSTD)
                          : bs_device_workspace(ts, soc->npu_arch, (uint64_t)C, (uint64_t)X);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BS_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
                                              aclOpExecutor *executor, const aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
