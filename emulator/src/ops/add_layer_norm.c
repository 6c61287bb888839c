/*
 * aclnnAddLayerNorm for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel.
 *
 * Facts, hicann/ops-nn norm/add_layer_norm. Its aclnn interface has no op_api source: the
 * build's opbuild tool generates it from op_host/add_layer_norm_def.cpp (ACLNNTYPE aclnn in
 * op_host/CMakeLists.txt), so phase one follows the documented contract, the def's dtype
 * combinations and the tiling's rules, in the docs' code table's order:
 * - docs/aclnnAddLayerNorm.md: the prototype; 161001 (a required argument NULL), 161002 (a
 *   dtype outside the part's table), 561002 (the tiling's shape rules); biasOptional shaped
 *   like gamma/beta or like x1; meanOut/rstdOut x1's batch dims then ones, FLOAT;
 * - op_host/add_layer_norm_def.cpp: the dtype combinations per part (below); no configuration
 *   for the Atlas training parts (ascend910): the framework finds no kernel there
 *   (hicann/opbase src/nnopbase/individual_op/executor/indv_executor.cpp
 *   NnopbaseGetSupportInfo -> "Cannot find kernel file", ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
 * - op_host/add_layer_norm_tiling.cpp CheckInputShape4AddLayerNorm: the shape rules (in its
 *   order, 561002), then the bias kind (its element count: x1's, else broadcast over rows);
 * - indv_executor.cpp NnopbaseExecutorMatchCache: every output empty, the tiling and the
 *   kernel are skipped (NnopbaseSkipKernelLaunch).
 *
 * The device's numbers (op_kernel/add_layer_norm_kernel.h, _special_kernel.h,
 * _normal_special_reduce.h, _single_row_less_tensor.h: every variant of Atlas A2/A3 and Atlas
 * inference parts; arch35/ for Ascend 950), per row of N elements, eps as a float:
 *   x = float(x1) + float(x2) (+ float(bias)), in float; xOut = x rounded to its dtype;
 *   mean = sum(x * scale) * corr; d = x - mean; var = sum(d * d * scale) * corr;
 *   rstd = 1 / sqrt(var + eps);
 *   y = (d * rstd) * float(gamma) + float(beta), rounded once to y's dtype (FLOAT16
 *   CAST_NONE, BF16 CAST_RINT: ties to even);
 * scale and corr: stats_factors. mean and rstd are written as FLOAT, but not on Atlas
 * inference parts (the kernels' OUTPUT_MEAN_RSTD is __CCE_AICORE__ 220's; the docs call
 * meanOut/rstdOut invalid there).
 * xOut is written only when additionalOutput is true (the tiling key's additional-output
 * digit).
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
#include "exec_workspace.h"
#include "phase_one.h"
#include "convert.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_add_layer_norm.h"

#define P1 "aclnnAddLayerNormGetWorkspaceSize"
#define P2 "aclnnAddLayerNorm"

enum { T_X1, T_X2, T_GAMMA, T_BETA, T_BIAS, T_Y, T_MEAN, T_RSTD, T_X, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x1",   "x2",      "gamma",   "beta", "biasOptional",
                                           "yOut", "meanOut", "rstdOut", "xOut"};

typedef struct {
    nr_head h; /* per chunk 2 * N floats: x1 (then x, then y), x2 (then bias, then d) */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps;         /* as the kernel receives it */
    float scale, corr; /* a row's mean is sum(x * scale) * corr (see stats_factors) */
    bool launch;       /* false: every output empty, nothing runs */
    bool nan_stats;    /* Ascend 950, N == 0 < M: meanOut and rstdOut filled with NaN */
    bool bias_rows;    /* bias shaped like x1 (one row per row); else one row for all */
    bool write_stats;  /* meanOut/rstdOut written (Atlas A2/A3, Ascend 950) */
    bool write_x;      /* additionalOutput */
} aln_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const aln_payload *P = payload;
    const tdesc *x1 = &P->t[T_X1], *x2 = &P->t[T_X2], *bias = &P->t[T_BIAS];
    const tdesc *y = &P->t[T_Y], *mo = &P->t[T_MEAN], *ro = &P->t[T_RSTD], *xo = &P->t[T_X];
    const int64_t N = P->N;
    const float *gamma = R->gamma, *beta = R->beta;
    float *abuf = nr_chunk_buf(R, chunk), *bbuf = abuf + N;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x1, m), x1->dtype, &x1->inner, 0, N, abuf);
        const float *b = get_tile(row_base(x2, m), x2->dtype, &x2->inner, 0, N, bbuf);
        float *x = abuf; /* a is abuf unless FLOAT in place: the sum goes to abuf either way */
        for (int64_t i = 0; i < N; i++)
            x[i] = a[i] + b[i];
        if (bias->present) {
            const float *c = get_tile(P->bias_rows ? row_base(bias, m) : view_base(bias),
                                      bias->dtype, &bias->inner, 0, N, bbuf);
            for (int64_t i = 0; i < N; i++)
                x[i] += c[i];
        }
        if (P->write_x)
            put_tile(row_base(xo, m), xo->dtype, ACLEMU_TIES_EVEN, &xo->inner, 0, N, x);
        const float mean = nr_scaled_sum(x, N, P->scale) * P->corr;
        float *d = bbuf;
        nr_center(d, x, N, mean);
        const float var = nr_scaled_sum_squares(d, N, P->scale) * P->corr;
        const float rstd = 1.0f / sqrtf(var + P->eps);
        float *yb = abuf;
        nr_scale_shift(yb, d, N, rstd, gamma, beta);
        put_tile(row_base(y, m), y->dtype, ACLEMU_TIES_EVEN, &y->inner, 0, N, yb);
        if (P->write_stats) {
            put_tile(view_base(mo), ACL_FLOAT, ACLEMU_TIES_EVEN, &mo->inner, m, 1, &mean);
            put_tile(view_base(ro), ACL_FLOAT, ACLEMU_TIES_EVEN, &ro->inner, m, 1, &rstd);
        }
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const aln_payload *P = payload;
    if (!P->launch)
        return false;
    if (P->nan_stats) { /* the reduce-empty kernel (arch35/add_layer_norm_regbase_reduce_empty.h) */
        const float nan = NAN;
        for (int64_t m = 0; m < P->M; m++) {
            put_tile(view_base(&P->t[T_MEAN]), ACL_FLOAT, ACLEMU_TIES_EVEN, &P->t[T_MEAN].inner,
                     m, 1, &nan);
            put_tile(view_base(&P->t[T_RSTD]), ACL_FLOAT, ACLEMU_TIES_EVEN, &P->t[T_RSTD].inner,
                     m, 1, &nan);
        }
        return false;
    }
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    nr_load_beta(R, &P->t[T_BETA], P->N);
    return true;
}

static const nr_kernel ALN_KERNEL = NR_KERNEL(aln_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops ALN_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

#define TILING(...) FAIL(ACLNN_ERR_INNER_TILING_ERROR, __VA_ARGS__)

/* How a row's sums become its mean and variance: sum(t * scale) * corr. Atlas A2/A3 and
 * inference parts scale each term by the tiling's aveFactor, float(1.0 / N), and stop there
 * (corr 1: exact). Ascend 950's regbase kernels (arch35/add_layer_norm_regbase_full_load.h
 * CalculateMeanVar*) scale each term by 1 / P, P the smallest power of two >= N (exact), and
 * the sum by float(P) / float(N). */
static void stats_factors(const aclemu_soc *soc, int64_t N, float *scale, float *corr)
{
    if (N == 0) {
        *scale = *corr = 0.0f;
    } else if (soc->npu_arch == 3510) {
        int64_t p = 1;
        while (p < N)
            p *= 2;
        *scale = 1.0f / (float)p;
        *corr = (float)p / (float)N;
    } else {
        *scale = (float)(1.0 / (double)N);
        *corr = 1.0f;
    }
}

#define F32 ACL_FLOAT
#define F16 ACL_FLOAT16
#define B16 ACL_BF16

/* One dtype combination of op_host/add_layer_norm_def.cpp: x1, x2, gamma (= beta), bias,
 * y (= x); mean and rstd are FLOAT in every one. */
typedef struct {
    aclDataType x1, x2, gamma, bias, y;
} dtype_row;

/* ascend910b, ascend910_93 and ascend950 (the docs' Atlas A2/A3 table) */
static const dtype_row ROWS_A2[] = {
    {F32, F16, F32, F32, F32}, {F32, B16, F32, F32, F32}, {F16, F32, F32, F32, F32},
    {B16, F32, F32, F32, F32}, {F16, F16, F32, F16, F16}, {B16, B16, F32, B16, B16},
    {F16, F16, F16, F16, F16}, {B16, B16, B16, B16, B16}, {F32, F32, F32, F32, F32},
};
/* ascend310p (the docs' Atlas inference table) */
static const dtype_row ROWS_310P[] = {{F32, F32, F32, F32, F32}, {F16, F16, F16, F16, F16}};

static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const bool bf16 = soc->bf16;
    for (int i = 0; i < T_COUNT; i++) {
        if (!ts[i])
            continue;
        const aclDataType dt = ts[i]->dtype;
        const bool stat = i == T_MEAN || i == T_RSTD; /* FLOAT only */
        const bool ok = stat ? dt == F32 : dt == F32 || dt == F16 || (bf16 && dt == B16);
        if (!ok)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
                 TNAME[i], dname(dt), soc->name, soc->series,
                 stat ? "FLOAT" : bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    }
    const bool p310 = soc->npu_arch == 2002;
    const dtype_row *rows = p310 ? ROWS_310P : ROWS_A2;
    const int nrows = p310 ? 2 : (int)(sizeof ROWS_A2 / sizeof ROWS_A2[0]);
    const aclDataType x1 = ts[T_X1]->dtype, x2 = ts[T_X2]->dtype, g = ts[T_GAMMA]->dtype;
    /* the row of x1 and x2 (and gamma, where two rows share x1 and x2) */
    const dtype_row *row = NULL;
    for (int r = 0; r < nrows; r++)
        if (rows[r].x1 == x1 && rows[r].x2 == x2 && (!row || rows[r].gamma == g))
            row = &rows[r];
    if (!row)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x2 dtype %s cannot go with x1 dtype %s on %s (%s): "
             "%s", P1, dname(x2), dname(x1), soc->name, soc->series,
             p310 ? "x1 and x2 of one dtype" : "x1 and x2 of one dtype, or FLOAT beside a "
             "FLOAT16 or BF16 one");
    if (g != row->gamma) {
        const bool two = !p310 && x1 == x2 && x1 != F32; /* x's dtype or FLOAT */
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s must be %s%s (x1 %s, x2 %s) on %s",
             P1, dname(g), dname(x1 == x2 ? x1 : F32), two ? " or FLOAT" : "", dname(x1),
             dname(x2), soc->name);
    }
    const struct {
        int i;
        aclDataType want;
        const char *rule;
    } rest[] = {{T_BETA, row->gamma, "gamma's dtype"}, {T_BIAS, row->bias, "the bias dtype"},
                {T_Y, row->y, "the output dtype"}, {T_X, row->y, "the output dtype"}};
    for (size_t k = 0; k < sizeof rest / sizeof rest[0]; k++) {
        const aclTensor *t = ts[rest[k].i];
        if (t && t->dtype != rest[k].want)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be %s %s (x1 %s, x2 %s, gamma "
                 "%s) on %s", P1, TNAME[rest[k].i], dname(t->dtype), rest[k].rule,
                 dname(rest[k].want), dname(x1), dname(x2), dname(g), soc->name);
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus rank_equal(const aclTensor *t, const char *name, const aclTensor *x1)
{
    if (t->ndim != x1->ndim)
        TILING("%s: %s rank %llu != x1 rank %llu", P1, name, (unsigned long long)t->ndim,
               (unsigned long long)x1->ndim);
    return ACLNN_SUCCESS;
}

static aclnnStatus shape_equal(const aclTensor *t, const char *name, const aclTensor *ref,
                               const char *ref_name)
{
    if (!same_dims(t->dims, t->ndim, ref->dims, ref->ndim)) {
        char s1[256], s2[256];
        fmt_dims(s1, sizeof s1, t->dims, t->ndim);
        fmt_dims(s2, sizeof s2, ref->dims, ref->ndim);
        TILING("%s: %s shape %s != %s shape %s", P1, name, s1, ref_name, s2);
    }
    return ACLNN_SUCCESS;
}

/* CheckInputShape4AddLayerNorm's shape rules, in its order, but for the empty-tensor ones
 * (the caller's) */
static aclnnStatus check_shapes(const aclTensor *const *ts)
{
    const aclTensor *x1 = ts[T_X1], *gamma = ts[T_GAMMA], *mean = ts[T_MEAN];
    aclnnStatus st;
    if (x1->ndim < 1 || x1->ndim > TV_MAX_RANK)
        TILING("%s: x1 rank %llu is not in [1, %d]", P1, (unsigned long long)x1->ndim,
               TV_MAX_RANK);
    if (gamma->ndim < 1 || gamma->ndim > TV_MAX_RANK)
        TILING("%s: gamma rank %llu is not in [1, %d]", P1, (unsigned long long)gamma->ndim,
               TV_MAX_RANK);
    static const int SAME_RANK[] = {T_X2, T_Y, T_X, T_MEAN, T_RSTD};
    for (size_t k = 0; k < sizeof SAME_RANK / sizeof SAME_RANK[0]; k++)
        if ((st = rank_equal(ts[SAME_RANK[k]], TNAME[SAME_RANK[k]], x1)))
            return st;
    if (ts[T_BETA]->ndim < 1)
        TILING("%s: beta rank 0 (must be at least 1)", P1);
    if (x1->ndim < gamma->ndim)
        TILING("%s: x1 rank %llu < gamma rank %llu", P1, (unsigned long long)x1->ndim,
               (unsigned long long)gamma->ndim);
    if ((st = shape_equal(ts[T_X2], "x2", x1, "x1")) ||
        (st = shape_equal(ts[T_Y], "yOut", x1, "x1")) ||
        (st = shape_equal(ts[T_X], "xOut", x1, "x1")) ||
        (st = shape_equal(ts[T_BETA], "beta", gamma, "gamma")) ||
        (st = shape_equal(ts[T_RSTD], "rstdOut", mean, "meanOut")))
        return st;
    char s1[256], s2[256];
    fmt_dims(s2, sizeof s2, x1->dims, x1->ndim);
    const uint64_t split = x1->ndim - gamma->ndim;
    fmt_dims(s1, sizeof s1, gamma->dims, gamma->ndim);
    for (uint64_t i = 0; i < gamma->ndim; i++)
        if (gamma->dims[i] != x1->dims[split + i])
            TILING("%s: gamma shape %s must equal the last %llu dims of x1 %s", P1, s1,
                   (unsigned long long)gamma->ndim, s2);
    fmt_dims(s1, sizeof s1, mean->dims, mean->ndim);
    for (uint64_t i = 0; i < x1->ndim; i++)
        if (mean->dims[i] != (i < split ? x1->dims[i] : 1))
            TILING("%s: meanOut shape %s must be x1's batch dims then ones (x1 %s, gamma of "
                   "rank %llu)", P1, s1, s2, (unsigned long long)gamma->ndim);
    /* Stricter (docs/emulator.md): the docs' shapes for biasOptional, gamma's or x1's; the
     * tiling reads a bias of x1's element count row by row and any other as one row */
    const aclTensor *bias = ts[T_BIAS];
    if (bias && !same_dims(bias->dims, bias->ndim, gamma->dims, gamma->ndim) &&
        !same_dims(bias->dims, bias->ndim, x1->dims, x1->ndim)) {
        fmt_dims(s1, sizeof s1, bias->dims, bias->ndim);
        char s3[256];
        fmt_dims(s3, sizeof s3, gamma->dims, gamma->ndim);
        TILING("%s: biasOptional shape %s must be gamma's shape %s or x1's shape %s", P1, s1,
               s3, s2);
    }
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnAddLayerNormGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma, const aclTensor *beta,
    const aclTensor *biasOptional, double epsilon, bool additionalOutput, const aclTensor *yOut,
    const aclTensor *meanOut, const aclTensor *rstdOut, const aclTensor *xOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {x1, x2, gamma, beta, biasOptional,
                                    yOut, meanOut, rstdOut, xOut};

    /* 0. the out-pointers, 1. every tensor but biasOptional required (161001), all live,
     * 2. no kernel on the Atlas training parts (561003; docs/emulator.md) */
    const aclemu_soc *soc;
    aclnnStatus st = p1_generated_opening(P1, ts, TNAME, T_COUNT, T_BIAS, workspaceSize,
                                          executor, &soc);
    if (st)
        return st;
    /* 3. dtypes (161002) */
    if ((st = check_dtypes(ts, soc)))
        return st;
    /* 4. the tiling's shape rules (561002); every output empty: the framework skips the
     * tiling and the kernel (stricter, docs/emulator.md: the shape rules hold there too) */
    if ((st = check_shapes(ts)))
        return st;
    const uint64_t split = x1->ndim - gamma->ndim;
    int64_t M = 0, N = 0, X = 0, S = 0;
    if (!numel(x1->dims, split, &M) || !numel(gamma->dims, gamma->ndim, &N) ||
        !numel(x1->dims, x1->ndim, &X) || !numel(meanOut->dims, meanOut->ndim, &S))
        TILING("%s: an element count overflows int64", P1);
    const bool launch = X != 0 || S != 0;
    /* The tiling's empty-tensor rules: an empty x1 beside a non-empty meanOut (x1 empty in
     * gamma's dims only: gamma empty too) is refused; its later ones (x1, gamma, meanOut
     * empty) cannot fail once the shapes above hold and some output is not empty. Ascend
     * 950's tiling (add_layer_norm_tiling_arch35.cpp CheckInputsShape) accepts that case
     * instead (no columns, some rows: "reduce empty") and fills mean and rstd with NaN. */
    const bool nan_stats = launch && X == 0 && soc->npu_arch == 3510;
    if (launch && X == 0 && !nan_stats) {
        char s1[256], s2[256];
        fmt_dims(s1, sizeof s1, x1->dims, x1->ndim);
        fmt_dims(s2, sizeof s2, meanOut->dims, meanOut->ndim);
        TILING("%s: x1 %s is empty while meanOut %s is not (an empty x1 needs an empty "
               "meanOut)", P1, s1, s2);
    }

    aln_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* M or N zero (every output empty, or Ascend 950's NaN statistics): no row buffers */
    P->h = (nr_head){.kernel = &ALN_KERNEL, .call = P2, .names = TNAME, .rows = launch ? M : 0,
                     .width = N, .row_floats = 2 * N, .no_kernel = !launch};
    P->M = M;
    P->N = N;
    P->launch = launch;
    P->nan_stats = nan_stats;
    P->eps = (float)epsilon;
    stats_factors(soc, N, &P->scale, &P->corr);
    P->bias_rows = biasOptional && M > 1 &&
                   same_dims(biasOptional->dims, biasOptional->ndim, x1->dims, x1->ndim);
    P->write_stats = soc->npu_arch != 2002;
    P->write_x = additionalOutput;
    const int s = (int)split;
    snapshot(&P->t[T_X1], x1, s);
    snapshot(&P->t[T_X2], x2, s);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_BETA], beta, -1);
    snapshot(&P->t[T_BIAS], biasOptional, P->bias_rows ? s : -1);
    snapshot(&P->t[T_Y], yOut, s);
    snapshot(&P->t[T_MEAN], meanOut, -1);
    snapshot(&P->t[T_RSTD], rstdOut, -1);
    snapshot(&P->t[T_X], xOut, s);
    /* Phase one's workspace on a device: the generated interface reports its tiling's one
     * workspace as it is, none when no kernel runs (docs/emulator.md "Phase one's workspace
     * size"): 16 MiB on Ascend 950 (add_layer_norm_tiling_arch35.cpp MIN_WORKSPACE_SIZE), else
     * 1 byte plus the reserved system workspace, 2 MiB on Atlas inference parts, 16 MiB on
     * Atlas A2/A3 (add_layer_norm_tiling.cpp RESERVED_WORKSPACE_SIZE_310P/_910B) */
    const uint64_t ws = !launch                    ? 0
                        : soc->npu_arch == 3510    ? EW_SYS_WORKSPACE
                        : soc->npu_arch == 2002    ? 1 + (uint64_t)2 * 1024 * 1024
                                                   : 1 + EW_SYS_WORKSPACE;
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &ALN_OPS, P, ws, ts, TNAME, T_COUNT, T_Y, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddLayerNorm(void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
