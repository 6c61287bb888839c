/*
 * aclnnBatchNormGatherStatsWithCounts for the CPU emulator: phase one (checks, executor), the
 * launch and the kernel. SyncBatchNorm's gathering step: N ranks' per-channel mean and invstd
 * ([N, C] each, one row a rank) and their element counts ([N]) combine into the global mean
 * meanAll and invstdAll ([C]); runningMean and runningVar, when runningMean is given, are
 * updated in place with momentum (the variance unbiased over the total count).
 *
 * Facts, hicann/ops-nn norm/sync_batch_norm_gather_stats_with_counts/op_host/op_api/
 * aclnn_batch_norm_gather_stats_with_counts.cpp (the phase one, its order and codes, the L0
 * ops per part), norm/sync_batch_norm_gather_stats_fused (Ascend 950's fused kernel: op_kernel
 * sync_batch_norm_gather_stats_fused_common.h, its tiling's checks in op_host
 * sync_batch_norm_gather_stats_fused_tiling_base.cpp), norm/sync_bn_training_update (the
 * running mean's update), hicann/ops-math math/reduce_mean_with_count (meanAll),
 * norm/norm_common/op_host/op_api/norm_tensor_util.cpp (the empty case's fills),
 * docs/aclnnBatchNormGatherStatsWithCounts.md:
 * - phase one: workspaceSize/executor NULL (161001); input, mean, invstd, counts, meanAll or
 *   invstdAll NULL (161001); dtypes in the part's list (161002); a private format of input,
 *   mean, invstd or counts (161002); ranks and shapes (161002); an empty mean: meanAll filled
 *   with 0 and invstdAll with NaN, nothing else; on Ascend 950 the copies of the fused
 *   kernel's running results (no cast: runningMean's, runningVar's dtype mean's, else 561103).
 * - the kernels: every part but Ascend 950 casts mean, invstd and counts to FLOAT and runs
 *   ReduceSumOp (the counts' sum), ReduceMeanWithCount (meanAll),
 *   SyncBatchNormGatherStatsWithCounts (invstdAll, runningVar; TBE) and SyncBNTrainingUpdate
 *   (runningMean; TBE); Ascend 950 runs SyncBatchNormGatherStatsFused in mean's dtype.
 *
 * The numbers, per channel, over the N ranks in row order, in float32 (16-bit inputs widened
 * exactly), momentum m and eps as the op_api's floats, m' = 1.0f - m:
 *   S = sum(counts), meanAll = sum((mean * count) / S),
 *   V = sum(((1 / invstd)^2 - eps + (mean - meanAll)^2) * count),
 *   invstdAll = 1 / sqrtf(V / S + eps), runningVar' = (V / (S - 1)) * m + runningVar * m',
 *   runningMean' = meanAll * m + (runningMean - runningMean * m) (SyncBNTrainingUpdate), on
 *   Ascend 950 runningMean * m' + meanAll * m (the fused kernel).
 * The TBE sums start from the first rank, the fused kernel's from +0.0. Results go through
 * the op_api's Cast to each tensor's dtype (to even); on Ascend 950 the kernel first rounds
 * them to mean's dtype (CAST_RINT).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "convert.h"
#include "bn_channels.h"
#include "exec_workspace.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h"

#define P1 "aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize"
#define P2 "aclnnBatchNormGatherStatsWithCounts"

/* the prototype's order */
enum { T_INPUT, T_MEAN, T_INVSTD, T_RMEAN, T_RVAR, T_COUNTS, T_MEAN_ALL, T_INVSTD_ALL,
       T_COUNT };
static const char *const TNAME[T_COUNT] = {"input",  "mean",    "invstd",  "runningMean",
                                           "runningVar", "counts", "meanAll", "invstdAll"};
#define N_INPUTS 6 /* input .. counts (the running statistics written too) */

typedef struct {
    tdesc t[T_COUNT];
    uint64_t ws_size;     /* what phase one reports: the device's (exec_workspace.h) */
    bool empty;           /* an empty mean: meanAll 0 and invstdAll NaN */
    bool fused;           /* Ascend 950's SyncBatchNormGatherStatsFused (else the TBE chain) */
    int64_t N, C;         /* ranks, channels */
    float momentum, momentum_rev, eps;
    aclDataType kernel_dt; /* Ascend 950: the fused kernel's dtype (mean's) */
} gs_payload;

typedef struct {
    gs_payload p;
    float *buf;           /* 2 * N * C + N + 2 * C floats: mean, invstd, counts, rm, rv */
    void *pins[TV_MAX_VIEWS + 1];
    int npins;
} gs_task;

/* ---- the kernel -------------------------------------------------------------------------- */

/* The N x C values of a rank-2 tensor as floats, row-major. */
static void load_rows(const tdesc *d, int64_t N, int64_t C, float *dst)
{
    lay_t row;
    lay_build(&row, d->dims + 1, d->strides + 1, 1);
    for (int64_t n = 0; n < N; n++) {
        const char *base = view_base(d) + n * d->strides[0] * (int64_t)d->es;
        const float *src = get_tile(base, d->dtype, &row, 0, C, dst + n * C);
        if (src != dst + n * C)
            memcpy(dst + n * C, src, (size_t)C * sizeof(float));
    }
}

/* v rounded to dt (ties to even): the fused kernel's CAST_RINT to mean's dtype. */
static float round_to(aclDataType dt, float v)
{
    aclemu_round_floats(dt, ACLEMU_TIES_EVEN, &v, 1);
    return v;
}

/* A [C] vector's every element set to v (the empty case's fills). */
static void fill_vector(const tdesc *d, float v)
{
    for (int64_t c = 0; c < d->dims[0]; c++)
        put_one(d, c, v);
}

static void task_run(void *arg)
{
    gs_task *T = arg;
    const gs_payload *P = &T->p;
    if (P->empty) {
        fill_vector(&P->t[T_MEAN_ALL], 0.0f);
        fill_vector(&P->t[T_INVSTD_ALL], NAN);
        return;
    }
    const int64_t N = P->N, C = P->C;
    float *mean = T->buf, *inv = mean + N * C, *cnt = inv + N * C, *rm = cnt + N, *rv = rm + C;
    /* everything read before anything is written: an output may be an input's memory */
    load_rows(&P->t[T_MEAN], N, C, mean);
    load_rows(&P->t[T_INVSTD], N, C, inv);
    load_param(&P->t[T_COUNTS], N, 0.0f, cnt);
    load_param(&P->t[T_RMEAN], C, 0.0f, rm);
    load_param(&P->t[T_RVAR], C, 0.0f, rv);
    const float m = P->momentum, mr = P->momentum_rev, eps = P->eps;
    const bool running = P->t[T_RMEAN].present;
    float total = P->fused ? 0.0f : cnt[0];
    for (int64_t n = P->fused ? 0 : 1; n < N; n++)
        total += cnt[n];
    for (int64_t c = 0; c < C; c++) {
        float mean_all = P->fused ? 0.0f : (mean[c] * cnt[0]) / total;
        for (int64_t n = P->fused ? 0 : 1; n < N; n++) {
            const float t = mean[n * C + c] * cnt[n];
            mean_all += t / total;
        }
        float var_sum = 0.0f;
        for (int64_t n = 0; n < N; n++) {
            const float r = 1.0f / inv[n * C + c];
            float v = r * r;
            v += -eps;
            const float d = mean[n * C + c] - mean_all;
            const float dd = d * d;
            const float t = (v + dd) * cnt[n];
            var_sum = (n == 0 && !P->fused) ? t : var_sum + t;
        }
        const float inv_all = 1.0f / sqrtf(var_sum / total + eps);
        float rv_new = 0.0f, rm_new = 0.0f;
        if (running) {
            const float unbiased = var_sum / (total - 1.0f);
            rv_new = unbiased * m + rv[c] * mr;
            if (P->fused) {
                rm_new = rm[c] * mr + mean_all * m;
            } else {
                const float kept = rm[c] - rm[c] * m;
                rm_new = mean_all * m + kept;
            }
        }
        float outs[4] = {mean_all, inv_all, rm_new, rv_new};
        if (P->fused)
            for (int k = 0; k < 4; k++)
                outs[k] = round_to(P->kernel_dt, outs[k]);
        /* the op_api's order of the copies, which decides an output that is another's
         * memory: off Ascend 950 runningVar, runningMean, then meanAll, invstdAll; on Ascend
         * 950 meanAll, invstdAll, then runningMean, runningVar */
        if (running && !P->fused) {
            put_one(&P->t[T_RVAR], c, outs[3]);
            put_one(&P->t[T_RMEAN], c, outs[2]);
        }
        put_one(&P->t[T_MEAN_ALL], c, outs[0]);
        put_one(&P->t[T_INVSTD_ALL], c, outs[1]);
        if (running && P->fused) {
            put_one(&P->t[T_RMEAN], c, outs[2]);
            put_one(&P->t[T_RVAR], c, outs[3]);
        }
    }
}

static void task_release(void *arg)
{
    gs_task *T = arg;
    for (int i = 0; i < T->npins; i++)
        aclemu_device_unpin(T->pins[i]);
    free(T->buf);
    free(T);
}

/* ---- launch (phase two, after aclemu_executor_run's executor and workspace checks) --------- */

static aclnnStatus gs_launch(void *payload, void *const *addrs, void *workspace,
                             uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    gs_task *T = p2_task_new(P2, sizeof *T);
    if (!T)
        return ACLNN_ERR_INNER;
    T->p = *(const gs_payload *)payload;
    gs_payload *P = &T->p;
    const tdesc *views[T_COUNT];
    for (int i = 0; i < T_COUNT; i++) {
        P->t[i].data = addrs[i];
        views[i] = &P->t[i];
    }
    if (!P->empty) {
        const int64_t n = 2 * P->N * P->C + P->N + 2 * P->C;
        T->buf = malloc((size_t)n * sizeof(float));
        if (!T->buf) {
            aclemu_set_error("%s: out of host memory for the statistics (%lld floats)", P2,
                             (long long)n);
            task_release(T);
            return ACLNN_ERR_INNER;
        }
    }
    return views_launch(P2, stream, views, TNAME, T_COUNT, workspace, P->ws_size, T->pins,
                        &T->npins, task_run, task_release, T);
}

static const aclemu_executor_ops GS_OPS = {
    .op_name = P2,
    .launch = gs_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/* SyncBatchNormGatherStatsFused's one workspace (Ascend 950), by the first template whose
 * IsCapable holds, in priority order: Common (C <= 240000) and Workspace, unless C < N and
 * N > 255: 4 bytes a core + 16 MiB; else FirstAxisCommon (C <= 5000) and FirstAxisWorkspace:
 * (blocks + 2) rows of C FLOATs (C up to 8 for a FLOAT mean, else 16; up to 16 in
 * FirstAxisWorkspace) + 16 MiB, FirstAxisCommon 4 bytes a core more; blocks: the N ranks over
 * the cores (ops-nn norm/sync_batch_norm_gather_stats_fused/op_host: the common, workspace,
 * first_axis_common and first_axis_workspace tilings' GetWorkspaceSize). */
static uint64_t fused_workspace(int64_t N, int64_t C, aclDataType dt)
{
    const uint64_t cores = (uint64_t)aclemu_soc_vector_cores();
    if (!(C < N && N > 255))
        return cores * 4 + EW_SYS_WORKSPACE;
    const int64_t per_block = (N + (int64_t)cores - 1) / (int64_t)cores;
    const uint64_t blocks = (uint64_t)((N + per_block - 1) / per_block);
    const bool common = C <= 5000;
    const int64_t align = common && dt == ACL_FLOAT ? 8 : 16;
    const uint64_t row = (uint64_t)((C + align - 1) / align * align) * 4;
    return (blocks + 2) * row + (common ? cores * 4 : 0) + EW_SYS_WORKSPACE;
}

/*
 * aclnn_batch_norm_gather_stats_with_counts.cpp's graph in launch order. The running
 * statistics as the kernel takes them ([1, C]): a Fill for an absent one (FLOAT; input's
 * dtype on Ascend 950), else a copy of a strided one and, off Ascend 950, its FLOAT Cast;
 * mean's, invstd's and counts' copies (FLOAT Casts off Ascend 950, counts' on every part).
 * Ascend 950: SyncBatchNormGatherStatsFused (fused_workspace) writing four [1, C] results in
 * mean's dtype; the running ones stay in the workspace without runningMean. Elsewhere the TBE
 * chain (workspaces not public: none): BroadcastTo of the counts to [N, C], ReduceSum over the
 * ranks, BroadcastTo of the sum, ReduceMeanWithCount (meanAll), BroadcastTo of meanAll,
 * SyncBatchNormGatherStatsWithCounts (invstdAll, runningVar); with runningMean
 * SyncBNTrainingUpdate, the Casts to the running statistics' dtypes and their copies. Last
 * meanAll's and invstdAll's Casts and copies (and on Ascend 950 the running results' copies).
 */
static uint64_t gs_device_workspace(const aclTensor *const *ts, int arch, bool fused,
                                    int64_t N, int64_t C)
{
    const aclTensor *mean = ts[T_MEAN], *rm = ts[T_RMEAN], *rv = ts[T_RVAR];
    const uint64_t n = (uint64_t)N, c = (uint64_t)C, nc = n * c;
    const aclDataType kdt = fused ? mean->dtype : ACL_FLOAT; /* the statistics' in the kernel */
    ew_graph g = ew_graph_on(arch);
    int run[2];
    for (int i = 0; i < 2; i++) {
        const aclTensor *t = ts[T_RMEAN + i];
        run[i] = !t ? ew_fill(&g, c * aclemu_dtype_size(fused ? ts[T_INPUT]->dtype : ACL_FLOAT))
                    : ew_cast(&g, ew_contiguous_copy(&g, t), t->dtype,
                              fused ? t->dtype : ACL_FLOAT, c);
    }
    static const int STATS[3] = {T_MEAN, T_INVSTD, T_COUNTS};
    int stat[3];
    for (int i = 0; i < 3; i++) {
        const aclTensor *t = ts[STATS[i]];
        stat[i] = ew_cast(&g, ew_contiguous_copy(&g, t), t->dtype, i == 2 ? ACL_FLOAT : kdt,
                          i == 2 ? n : nc);
    }
    int mean_all, invstd_all, rm_out = -1, rv_out;
    if (fused) {
        const int reads[5] = {stat[0], stat[1], stat[2], run[0], run[1]};
        const int k = ew_kernel_reading(&g, reads, 5);
        ew_kernel_workspace(&g, k, fused_workspace(N, C, kdt));
        const uint64_t bytes = c * aclemu_dtype_size(kdt);
        mean_all = ew_output(&g, k, bytes);
        invstd_all = ew_output(&g, k, bytes);
        rm_out = ew_output(&g, k, bytes);
        rv_out = ew_output(&g, k, bytes);
    } else {
        const int counts = ew_convert(&g, stat[2], nc * 4); /* BroadcastTo [N, C] */
        const int total = ew_convert(&g, counts, c * 4);    /* ReduceSum */
        const int totals = ew_convert(&g, total, nc * 4);   /* BroadcastTo */
        const int rmwc[3] = {stat[0], counts, totals};       /* ReduceMeanWithCount */
        mean_all = ew_output(&g, ew_kernel_reading(&g, rmwc, 3), c * 4);
        const int means = ew_convert(&g, mean_all, nc * 4); /* BroadcastTo */
        const int reads[6] = {stat[0], stat[1], counts, means, total, run[1]};
        const int k = ew_kernel_reading(&g, reads, 6); /* SyncBatchNormGatherStatsWithCounts */
        invstd_all = ew_output(&g, k, c * 4);
        rv_out = ew_output(&g, k, c * 4);
        if (rm) {
            const int update[2] = {mean_all, run[0]}; /* SyncBNTrainingUpdate */
            rm_out = ew_cast(&g, ew_output(&g, ew_kernel_reading(&g, update, 2), c * 4), ACL_FLOAT,
                             rm->dtype, c);
            rv_out = ew_cast(&g, rv_out, ACL_FLOAT, rv->dtype, c);
            ew_copy_out(&g, rv_out, rv->dtype, rv, c);
            ew_copy_out(&g, rm_out, rm->dtype, rm, c);
        }
    }
    const aclTensor *ma = ts[T_MEAN_ALL], *ia = ts[T_INVSTD_ALL];
    mean_all = ew_cast(&g, mean_all, kdt, ma->dtype, c);
    invstd_all = ew_cast(&g, invstd_all, kdt, ia->dtype, c);
    ew_copy_out(&g, mean_all, ma->dtype, ma, c);
    ew_copy_out(&g, invstd_all, ia->dtype, ia, c);
    if (fused && rm) { /* no cast: their dtype is mean's (check_fused) */
        ew_copy_out(&g, rm_out, kdt, rm, c);
        ew_copy_out(&g, rv_out, kdt, rv, c);
    }
    return ew_size(&g);
}

/* ---- phase one -------------------------------------------------------------------------------- */

/* A [C] vector (OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE: rank 1 and C elements). */
static aclnnStatus check_vector(const aclTensor *t, int i, int64_t C, const aclTensor *input)
{
    if (t && (t->ndim != 1 || t->dims[0] != C))
        return shape_error(P1, TNAME[i], t->dims, t->ndim,
                           "must be [C], C the channel count (dim 1) of input", input->dims,
                           input->ndim);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_rank(const aclTensor *t, int i, uint64_t rank, const char *what)
{
    if (t->ndim != rank) {
        char s[256];
        fmt_dims(s, sizeof s, t->dims, t->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s must have rank %llu (%s)", P1, TNAME[i],
             s, (unsigned long long)rank, what);
    }
    return ACLNN_SUCCESS;
}

/* CheckShape, in its order. */
static aclnnStatus check_shapes(const aclTensor *const *ts)
{
    const aclTensor *input = ts[T_INPUT], *mean = ts[T_MEAN], *invstd = ts[T_INVSTD],
                    *counts = ts[T_COUNTS];
    if (input->ndim > 8 || input->ndim < 2)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input rank %llu is not in [2, 8]", P1,
             (unsigned long long)input->ndim);
    aclnnStatus st;
    for (int i = T_MEAN; i <= T_INVSTD; i++)
        if ((st = check_rank(ts[i], i, 2, "[N, C]: one row per rank")))
            return st;
    /* stricter: a rank-0 counts has no first dim to compare (the vendor reads one anyway) */
    if (counts->ndim == 0)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: counts has rank 0: it must have rank 1 ([N])", P1);
    if (mean->dims[0] != invstd->dims[0] || counts->dims[0] != mean->dims[0]) {
        char a[64], b[64], c[64];
        fmt_dims(a, sizeof a, mean->dims, mean->ndim);
        fmt_dims(b, sizeof b, invstd->dims, invstd->ndim);
        fmt_dims(c, sizeof c, counts->dims, counts->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the first dims of mean %s, invstd %s and counts %s "
             "must be equal (N, the ranks)", P1, a, b, c);
    }
    const int64_t C = input->dims[1];
    for (int i = T_MEAN; i <= T_INVSTD; i++)
        if (ts[i]->dims[1] != C)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must have dim 1 equal to input's channel count (dim 1): input",
                               input->dims, input->ndim);
    if ((st = check_vector(ts[T_RMEAN], T_RMEAN, C, input)) ||
        (st = check_vector(ts[T_RVAR], T_RVAR, C, input)))
        return st;
    if ((st = check_rank(counts, T_COUNTS, 1, "[N]: one count per rank")))
        return st;
    if ((st = check_vector(ts[T_MEAN_ALL], T_MEAN_ALL, C, input)) ||
        (st = check_vector(ts[T_INVSTD_ALL], T_INVSTD_ALL, C, input)))
        return st;
    return ACLNN_SUCCESS;
}

/* Ascend 950, after the checks: the fused kernel's tiling rules, whose failure the vendor's
 * L0 op only logs (its phase one goes on without the kernel), the copies of its running
 * results into runningMean and runningVar (ViewCopy, no cast: 561103), and runningVar NULL
 * beside runningMean (a NULL dereference there). In the vendor's order: the tiling (its
 * status kept for last), the copies. */
static aclnnStatus check_fused(const aclTensor *const *ts, double momentum, double eps)
{
    const aclTensor *input = ts[T_INPUT], *mean = ts[T_MEAN], *rm = ts[T_RMEAN],
                    *rv = ts[T_RVAR];
    char why[256] = "";
    /* an absent running statistic is filled in input's dtype (CalculateRunningTensorNoCast) */
    const aclDataType rm_dt = rm ? rm->dtype : input->dtype, rv_dt = rv ? rv->dtype : input->dtype;
    const float m = (float)momentum, e = (float)eps;
    if (ts[T_INVSTD]->dtype != mean->dtype)
        snprintf(why, sizeof why, "invstd dtype %s is not mean's %s", dname(ts[T_INVSTD]->dtype),
                 dname(mean->dtype));
    else if (rm_dt != mean->dtype)
        snprintf(why, sizeof why, "runningMean%s dtype %s is not mean's %s",
                 rm ? "" : " (absent: input's)", dname(rm_dt), dname(mean->dtype));
    else if (rv_dt != mean->dtype)
        snprintf(why, sizeof why, "runningVar%s dtype %s is not mean's %s",
                 rv ? "" : " (absent: input's)", dname(rv_dt), dname(mean->dtype));
    else if (m < 0.0f || m > 1.0f)
        snprintf(why, sizeof why, "momentum %g is not in [0, 1]", (double)m);
    else if (e <= 0.0f)
        snprintf(why, sizeof why, "eps %g is not positive", (double)e);
    if (rm) {
        if (rm->dtype != mean->dtype)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: runningMean dtype %s must be mean's dtype %s on "
                 "Ascend 950 for the copy of the kernel's result (the op_api's ViewCopy, no "
                 "cast)", P1, dname(rm->dtype), dname(mean->dtype));
        if (!rv)
            FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: runningVar is NULL while runningMean is given: "
                 "both are updated (the op_api copies into runningVar unchecked)", P1);
        if (rv->dtype != mean->dtype)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: runningVar dtype %s must be mean's dtype %s on "
                 "Ascend 950 for the copy of the kernel's result (the op_api's ViewCopy, no "
                 "cast)", P1, dname(rv->dtype), dname(mean->dtype));
    }
    if (why[0])
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: the Ascend 950 kernel (SyncBatchNormGatherStats"
             "Fused) refuses it: %s (its tiling's rule; the device's phase one would go on "
             "without the kernel)", P1, why);
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
    const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
    aclTensor *runningMean, aclTensor *runningVar, double momentum, double eps,
    const aclTensor *counts, aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {input,      mean,   invstd,  runningMean,
                                    runningVar, counts, meanAll, invstdAll};

    /* 0. the out-pointers first (OP_CHECK_COMM_INPUT: 161001), 1. CheckNotNull (161001), in
     * its order; every tensor given must be a live aclTensor; the part */
    const uint32_t required = P1_BIT(T_INPUT) | P1_BIT(T_MEAN) | P1_BIT(T_INVSTD) |
                              P1_BIT(T_COUNTS) | P1_BIT(T_MEAN_ALL) | P1_BIT(T_INVSTD_ALL);
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, required, workspaceSize, executor, &soc);
    if (st)
        return st;
    const bool fused = soc->npu_arch == 3510;

    /* 2. CheckDtypeValid (161002): each in the part's list, in its order */
    static const int DTYPED[] = {T_INPUT, T_MEAN,   T_INVSTD,   T_RMEAN,
                                 T_RVAR,  T_COUNTS, T_MEAN_ALL, T_INVSTD_ALL};
    for (size_t k = 0; k < sizeof DTYPED / sizeof DTYPED[0]; k++)
        if (ts[DTYPED[k]] && (st = bn_check_float_dtype(P1, TNAME[DTYPED[k]], ts[DTYPED[k]], soc)))
            return st;
    /* 3. CheckFormat (161002) */
    static const int FORMATTED[] = {T_INPUT, T_MEAN, T_INVSTD, T_COUNTS};
    for (size_t k = 0; k < sizeof FORMATTED / sizeof FORMATTED[0]; k++)
        if (p1_private_format(ts[FORMATTED[k]]->format))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s's format (aclFormat %d) is private: ND, "
                 "NCHW, NCL, NCDHW are taken", P1, TNAME[FORMATTED[k]],
                 (int)ts[FORMATTED[k]]->format);
    /* 4. CheckShape (161002) */
    if ((st = check_shapes(ts)))
        return st;

    gs_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    const int64_t N = mean->dims[0], C = mean->dims[1];
    /* 5. an empty mean: meanAll 0, invstdAll NaN (ProcessEmptyTensorWithValue), nothing else */
    if (N == 0 || C == 0) {
        P->empty = true;
        snapshot(&P->t[T_MEAN_ALL], meanAll, -1);
        snapshot(&P->t[T_INVSTD_ALL], invstdAll, -1);
        /* ProcessEmptyTensorWithValue on each non-empty meanAll/invstdAll */
        P->ws_size = ew_empty_call(soc->npu_arch, ts, T_MEAN_ALL, T_INVSTD_ALL);
        return p1_finish(P1, &GS_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS,
                         workspaceSize, executor);
    }
    /* 6. the L0 ops' own rules */
    if (fused) {
        if ((st = check_fused(ts, momentum, eps)))
            goto fail;
    } else if (runningMean && !runningVar) {
        /* stricter: the op_api reads runningVar's dtype for the cast of its result */
        aclemu_set_error("%s: runningVar is NULL while runningMean is given: both are updated "
                         "(the op_api casts into runningVar unchecked)", P1);
        st = ACLNN_ERR_PARAM_NULLPTR;
        goto fail;
    }

    P->fused = fused;
    P->N = N;
    P->C = C;
    P->momentum = (float)momentum;
    P->momentum_rev = 1.0f - P->momentum;
    P->eps = (float)eps;
    P->kernel_dt = mean->dtype;
    snapshot(&P->t[T_MEAN], mean, -1);
    snapshot(&P->t[T_INVSTD], invstd, -1);
    snapshot(&P->t[T_COUNTS], counts, -1);
    snapshot(&P->t[T_MEAN_ALL], meanAll, -1);
    snapshot(&P->t[T_INVSTD_ALL], invstdAll, -1);
    /* the kernels read the running statistics given; they are written only with runningMean
     * given (the op_api returns before its copies without it: runningVar alone is left as it
     * was) */
    snapshot(&P->t[T_RMEAN], runningMean, -1);
    snapshot(&P->t[T_RVAR], runningVar, -1);
    P->ws_size = gs_device_workspace(ts, soc->npu_arch, fused, N, C);
    /* input only gives C and the rank: no kernel reads it */
    return p1_finish(P1, &GS_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
fail:
    free(P);
    return st;
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace,
                                                              uint64_t workspaceSize,
                                                              aclOpExecutor *executor,
                                                              const aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
