/*
 * aclnnDeepNorm for the CPU emulator: phase one (checks, executor), the launch and the kernel.
 * DeepNorm is LayerNorm of the DeepNet residual x * alpha + gx over gamma's (trailing) dims.
 *
 * Facts, hicann/ops-nn norm/deep_norm. Its aclnn interface has no op_api source: the build's
 * opbuild tool generates it from op_host/deep_norm_def.cpp (ACLNNTYPE aclnn in
 * op_host/CMakeLists.txt), so phase one follows the documented contract, the def's dtypes and
 * the tiling's rules, in the docs' code table's order (as aclnnAddLayerNorm's):
 * - docs/aclnnDeepNorm.md: the prototype; 161001 (a required argument NULL), 161002 (a dtype
 *   outside the part's table); meanOut/rstdOut x's batch dims then ones, FLOAT;
 * - op_host/deep_norm_def.cpp: x, gx, beta, gamma and y of one dtype (FLOAT16, FLOAT, BF16 on
 *   ascend910b, ascend910_93 and ascend950; FLOAT16, FLOAT on ascend310p), mean and rstd
 *   FLOAT; no configuration for the Atlas training parts (ascend910): the framework finds no
 *   kernel there (hicann/opbase indv_executor.cpp NnopbaseGetSupportInfo,
 *   ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
 * - op_host/arch22/deep_norm_tiling.cpp CheckInputOutputShapeDim / CheckInputOutputShapeValue
 *   (op_host/deep_norm_shape_check.h for Ascend 950, the same rules, plus its
 *   CheckReduceOutputTail: mean's and rstd's reduced dims 1): the shape rules (561002);
 * - indv_executor.cpp NnopbaseExecutorMatchCache: every output empty, the tiling and the
 *   kernel are skipped (NnopbaseSkipKernelLaunch).
 *
 * The device's numbers (op_kernel/deep_norm.cpp: every variant of Atlas A2/A3 and Atlas
 * inference parts, Short, LELimit, GTLimit and Common; op_kernel/arch35/deep_norm.h for
 * Ascend 950), per row of N elements, alpha and eps as floats:
 *   h = float(x) * alpha + float(gx), the product rounded to float before the add (the
 *     GTLimit/Common variants' Muls then Add; the others' Axpy, taken the same way);
 *   mean = sum(h) * avg; d = h - mean; var = sum(d * d) * avg; rstd = 1 / sqrt(var + eps);
 *   y = (d * rstd) * float(gamma) + float(beta), rounded once to y's dtype (FLOAT16
 *   CAST_NONE, BF16 CAST_RINT: ties to even); FLOAT rows of 4097..8192 on Atlas A2/A3 and
 *   inference parts (ExtraProcessFp32) add 0 to y before the store: -0 becomes +0;
 * avg is the tiling's float(1.0 / N) (op_host/arch22) or 1.0f / (float)N (arch35): the same
 * float for every N below 2^24. The sums are plain (not scaled per term, unlike
 * AddLayerNorm's): norm_rows.h's lane sums with a scale of 1, which is exact.
 * What the Atlas inference parts (__CCE_AICORE__ 200) do not write: mean and rstd (CopyOut's
 * and CommonCopyOutParam's non-220 branches copy y only), and y itself when a row is shorter
 * than one 32-byte block (CopyOut's non-220 branch stops at blockNum == 0).
 *
 * Kernel: rows are independent; each row's sums have a fixed order (norm_rows.h's lanes and
 * fold), so the split of rows over threads never changes a bit.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "convert.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_deep_norm.h"

#define P1 "aclnnDeepNormGetWorkspaceSize"
#define P2 "aclnnDeepNorm"

enum { T_X, T_GX, T_BETA, T_GAMMA, T_MEAN, T_RSTD, T_Y, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x",       "gx",      "beta", "gamma",
                                           "meanOut", "rstdOut", "yOut"};

typedef struct {
    nr_head h; /* per chunk 2 * N floats: x (then h, then y), gx (then d) */
    tdesc t[T_COUNT];
    int64_t M, N;
    float alpha, eps; /* as the kernel receives them */
    float avg;        /* the tiling's 1 / N */
    bool launch;      /* false: every output empty, nothing runs */
    bool write_stats; /* meanOut/rstdOut written (not on Atlas inference parts) */
    bool write_y;     /* yOut written (not on Atlas inference parts for rows under 32 bytes) */
    bool plus_zero;   /* y + 0.0f before the store: a -0 becomes +0 (ExtraProcessFp32) */
} dn_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const dn_payload *P = payload;
    const tdesc *x = &P->t[T_X], *gx = &P->t[T_GX];
    const tdesc *y = &P->t[T_Y], *mo = &P->t[T_MEAN], *ro = &P->t[T_RSTD];
    const int64_t N = P->N;
    float *abuf = nr_chunk_buf(R, chunk), *bbuf = abuf + N;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x, m), x->dtype, &x->inner, 0, N, abuf);
        const float *b = get_tile(row_base(gx, m), gx->dtype, &gx->inner, 0, N, bbuf);
        float *h = abuf; /* a is abuf unless FLOAT in place: h goes to abuf either way */
        for (int64_t i = 0; i < N; i++) {
            const float t = a[i] * P->alpha; /* rounded before the add (-std=c11: no FMA) */
            h[i] = t + b[i];
        }
        const float mean = nr_scaled_sum(h, N, 1.0f) * P->avg;
        float *d = bbuf;
        nr_center(d, h, N, mean);
        const float var = nr_scaled_sum_squares(d, N, 1.0f) * P->avg;
        const float rstd = 1.0f / sqrtf(var + P->eps);
        if (P->write_y) {
            float *yb = abuf;
            nr_scale_shift(yb, d, N, rstd, R->gamma, R->beta);
            if (P->plus_zero)
                for (int64_t i = 0; i < N; i++)
                    yb[i] += 0.0f;
            put_tile(row_base(y, m), y->dtype, ACLEMU_TIES_EVEN, &y->inner, 0, N, yb);
        }
        if (P->write_stats) {
            put_tile(view_base(mo), ACL_FLOAT, ACLEMU_TIES_EVEN, &mo->inner, m, 1, &mean);
            put_tile(view_base(ro), ACL_FLOAT, ACLEMU_TIES_EVEN, &ro->inner, m, 1, &rstd);
        }
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const dn_payload *P = payload;
    if (!P->launch || !(P->write_y || P->write_stats))
        return false;
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    nr_load_beta(R, &P->t[T_BETA], P->N);
    return true;
}

static const nr_kernel DN_KERNEL = NR_KERNEL(dn_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops DN_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

#define TILING(...) FAIL(ACLNN_ERR_INNER_TILING_ERROR, __VA_ARGS__)

/* The def's dtypes: each tensor in the part's list, then gx, beta, gamma and yOut x's. */
static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const bool bf16 = soc->bf16;
    for (int i = 0; i < T_COUNT; i++) {
        const aclDataType dt = ts[i]->dtype;
        const bool stat = i == T_MEAN || i == T_RSTD; /* FLOAT only */
        const bool ok = stat ? dt == ACL_FLOAT
                             : dt == ACL_FLOAT || dt == ACL_FLOAT16 || (bf16 && dt == ACL_BF16);
        if (!ok)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
                 TNAME[i], dname(dt), soc->name, soc->series,
                 stat ? "FLOAT" : bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    }
    static const int SAME[] = {T_GX, T_BETA, T_GAMMA, T_Y};
    const aclDataType xdt = ts[T_X]->dtype;
    for (size_t k = 0; k < sizeof SAME / sizeof SAME[0]; k++)
        if (ts[SAME[k]]->dtype != xdt)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be x's dtype %s", P1,
                 TNAME[SAME[k]], dname(ts[SAME[k]]->dtype), dname(xdt));
    return ACLNN_SUCCESS;
}

static aclnnStatus rank_error(const char *name, uint64_t rank, const char *rule)
{
    TILING("%s: %s rank %llu %s", P1, name, (unsigned long long)rank, rule);
}

/* The tiling's shape rules, in its order (CheckInputOutputShapeDim, then
 * CheckInputOutputShapeValue but for its zero-dim rule, the caller's: rstd's and mean's batch
 * dims, then gamma's and beta's dims), then mean's and rstd's reduced dims. */
static aclnnStatus check_shapes(const aclTensor *const *ts)
{
    const aclTensor *x = ts[T_X], *gamma = ts[T_GAMMA];
    const uint64_t xr = x->ndim, gr = gamma->ndim;
    if (xr < 2 || xr > 8)
        return rank_error("x", xr, "is not in [2, 8]");
    if (gr < 1 || gr > 7)
        return rank_error("gamma", gr, "is not in [1, 7]");
    if (ts[T_GX]->ndim != xr)
        return rank_error("gx", ts[T_GX]->ndim, "must equal x's rank");
    static const int OUTS[] = {T_Y, T_MEAN, T_RSTD};
    for (size_t k = 0; k < sizeof OUTS / sizeof OUTS[0]; k++)
        if (ts[OUTS[k]]->ndim != xr)
            return rank_error(TNAME[OUTS[k]], ts[OUTS[k]]->ndim, "must equal x's rank");
    if (ts[T_BETA]->ndim != gr)
        return rank_error("beta", ts[T_BETA]->ndim, "must equal gamma's rank");
    if (xr <= gr)
        TILING("%s: x rank %llu must be greater than gamma rank %llu", P1,
               (unsigned long long)xr, (unsigned long long)gr);
    char s1[256], s2[256];
    fmt_dims(s2, sizeof s2, x->dims, xr);
    static const int LIKE_X[] = {T_GX, T_Y};
    for (size_t k = 0; k < sizeof LIKE_X / sizeof LIKE_X[0]; k++) {
        const aclTensor *t = ts[LIKE_X[k]];
        if (!same_dims(t->dims, t->ndim, x->dims, xr)) {
            fmt_dims(s1, sizeof s1, t->dims, t->ndim);
            TILING("%s: %s shape %s must equal x's shape %s", P1, TNAME[LIKE_X[k]], s1, s2);
        }
    }
    const uint64_t split = xr - gr;
    static const int STATS[] = {T_RSTD, T_MEAN};
    for (size_t k = 0; k < 2; k++)
        for (uint64_t i = 0; i < split; i++)
            if (ts[STATS[k]]->dims[i] != x->dims[i]) {
                fmt_dims(s1, sizeof s1, ts[STATS[k]]->dims, xr);
                TILING("%s: %s shape %s must begin with x's batch dims (x %s, gamma of rank "
                       "%llu)", P1, TNAME[STATS[k]], s1, s2, (unsigned long long)gr);
            }
    static const int PARAMS[] = {T_GAMMA, T_BETA};
    for (size_t k = 0; k < 2; k++)
        for (uint64_t i = 0; i < gr; i++)
            if (ts[PARAMS[k]]->dims[i] != x->dims[split + i]) {
                fmt_dims(s1, sizeof s1, ts[PARAMS[k]]->dims, gr);
                TILING("%s: %s shape %s must equal the last %llu dims of x %s", P1,
                       TNAME[PARAMS[k]], s1, (unsigned long long)gr, s2);
            }
    /* Ascend 950's CheckReduceOutputTail; stricter on the other parts, whose tiling does not
     * look (the docs' shape: the reduced dims are 1) */
    for (size_t k = 0; k < 2; k++)
        for (uint64_t i = split; i < xr; i++)
            if (ts[STATS[k]]->dims[i] != 1) {
                fmt_dims(s1, sizeof s1, ts[STATS[k]]->dims, xr);
                TILING("%s: %s shape %s must be x's batch dims then ones (x %s, gamma of rank "
                       "%llu)", P1, TNAME[STATS[k]], s1, s2, (unsigned long long)gr);
            }
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnDeepNormGetWorkspaceSize(
    const aclTensor *x, const aclTensor *gx, const aclTensor *beta, const aclTensor *gamma,
    double alpha, double epsilon, const aclTensor *meanOut, const aclTensor *rstdOut,
    const aclTensor *yOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {x, gx, beta, gamma, meanOut, rstdOut, yOut};

    /* 0. the out-pointers, 1. every tensor required (161001) and live, 2. no kernel on the
     * Atlas training parts (561003; docs/emulator.md) */
    const aclemu_soc *soc;
    aclnnStatus st = p1_generated_opening(P1, ts, TNAME, T_COUNT, -1, workspaceSize, executor,
                                          &soc);
    if (st)
        return st;
    /* 3. dtypes (161002) */
    if ((st = check_dtypes(ts, soc)))
        return st;
    /* 4. the tiling's shape rules (561002); every output empty: the framework skips the
     * tiling and the kernel (stricter, docs/emulator.md: the shape rules hold there too) */
    if ((st = check_shapes(ts)))
        return st;
    const uint64_t split = x->ndim - gamma->ndim;
    int64_t M = 0, N = 0, X = 0;
    if (!numel(x->dims, split, &M) || !numel(gamma->dims, gamma->ndim, &N) ||
        !numel(x->dims, x->ndim, &X))
        TILING("%s: an element count overflows int64", P1);
    /* meanOut and rstdOut hold M elements (check_shapes): some output is not empty unless
     * M is 0; then the tiling's zero-dim rule (an empty x beside rows: gamma empty too) */
    const bool launch = M != 0;
    if (launch && X == 0) {
        char s1[256];
        fmt_dims(s1, sizeof s1, x->dims, x->ndim);
        TILING("%s: x %s has a zero dim while meanOut and rstdOut are not empty (x may be "
               "empty only in its batch dims)", P1, s1);
    }

    dn_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* every output empty: no rows, no row buffers */
    P->h = (nr_head){.kernel = &DN_KERNEL, .call = P2, .names = TNAME, .rows = launch ? M : 0,
                     .width = N, .row_floats = 2 * N, .no_kernel = !launch};
    P->M = M;
    P->N = N;
    P->launch = launch;
    P->alpha = (float)alpha;
    P->eps = (float)epsilon;
    /* the tiling's 1 / N: float(1.0 / N) on arch22, 1.0f / float(N) on arch35 */
    P->avg = N == 0 ? 1.0f
             : soc->npu_arch == 3510 ? 1.0f / (float)N
                                     : (float)(1.0 / (double)N);
    const bool inference = soc->npu_arch == 2002;
    P->write_stats = !inference;
    P->write_y = !inference || N * (int64_t)aclemu_dtype_size(x->dtype) >= 32;
    /* Tiling4DeepNorm's key 6 (FLOAT, 4096 < N <= 8192) runs ExtraProcessFp32, which moves y
     * to the output queue with Adds(y, 0) */
    P->plus_zero = soc->npu_arch != 3510 && x->dtype == ACL_FLOAT && N > 4096 && N <= 8192;
    const int s = (int)split;
    snapshot(&P->t[T_X], x, s);
    snapshot(&P->t[T_GX], gx, s);
    snapshot(&P->t[T_BETA], beta, -1);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_MEAN], meanOut, -1);
    snapshot(&P->t[T_RSTD], rstdOut, -1);
    snapshot(&P->t[T_Y], yOut, s);
    /* Phase one's workspace on a device: the generated interface reports its tiling's one
     * workspace as it is, none when no kernel runs (docs/emulator.md "Phase one's workspace
     * size"): 1 byte from the arch22 tiling (arch22/deep_norm_tiling.cpp Tiling4DeepNorm), none
     * from Ascend 950's (arch35/deep_norm_tiling_arch35.cpp WS_SYS_SIZE) */
    const uint64_t ws = launch && soc->npu_arch != 3510 ? 1 : 0;
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &DN_OPS, P, ws, ts, TNAME, T_COUNT, T_MEAN, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnDeepNorm(void *workspace, uint64_t workspaceSize,
                                        aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
