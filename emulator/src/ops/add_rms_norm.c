/*
 * aclnnAddRmsNorm for the CPU emulator: phase one (checks, executor), the launch and the kernel.
 *
 * Facts, hicann/ops-nn norm/add_rms_norm:
 * - op_host/op_api/aclnn_add_rms_norm.cpp (the hand-written phase one, followed here in its
 *   order and codes): the out-pointers (L2_DFX_PHASE_1, 161001); the mode the optional
 *   outputs choose (rstdOut and xOut given: the full AddRmsNorm; xOut only: "pre" RmsNorm;
 *   neither: "post" RmsNorm; rstdOut without xOut: xOut is required, 161001); NULL tensors
 *   (161001); dtypes (161002: the part's list, then equal dtypes: x2 and gamma x1's, yOut
 *   x1's, xOut yOut's, rstdOut FLOAT; pre/post take FLOAT16/BF16 only, FLOAT16 on Ascend310P);
 *   ranks 1..8 and equal shapes (161002; pre/post: gamma rank <= 2); an empty x1 or gamma:
 *   success, nothing computed; then the L0 op (op_api/add_rms_norm.cpp), whose tiling runs in
 *   phase one (hicann/opbase composite_op/aclnn_engine/op_executor.cpp
 *   CreatAiCoreKernelLauncher -> kernel_workspace.cpp GetWorkspace) and whose failure the op_api
 *   returns as ACLNN_ERR_INNER_NULLPTR (561103), as it does a failed ViewCopy of an output
 *   (hicann/ops-math conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams:
 *   rstdOut's shape must be the L0 op's, x1's batch dims then ones);
 * - op_host/add_rms_norm_tiling.cpp (Tiling4AddRmsNorm, on the L0 op's own outputs): gamma no
 *   wider than x1 and equal to its trailing dims (full); gamma [1, x1's last dim] (pre/post);
 *   epsilon >= 0 (arch35's tiling likewise); the kernel variant (normal, split-D, single-N,
 *   merge-N, multi-N) from the row length, the row count and the vector core count;
 * - op_host/add_rms_norm_def.cpp: no kernel for the Atlas training parts (ascend910): the L0
 *   op's kernel lookup fails in phase one, 561103 as above.
 *
 * The device's numbers (op_kernel/add_rms_norm*.h; arch35/add_rms_norm_regbase.h for Ascend
 * 950), per row of N elements, avg = 1.0f / N and eps as floats:
 * - FLOAT: x = x1 + x2; rstd = 1 / sqrt(sum(x * x * avg) + eps); y = (x * rstd) * gamma;
 * - FLOAT16 (Atlas A2/A3, Atlas inference): x = x1 + x2 added in FLOAT16 (one rounding), the
 *   norm over that x; y = half(half(x * rstd) * gamma): rounded to FLOAT16, multiplied by gamma
 *   in FLOAT16;
 * - BF16 (Atlas A2/A3): x1 + x2 in float, xOut = that rounded to BF16 (ties to even); the
 *   normal kernel takes its norm over the float sum, every other variant over the rounded sum
 *   (see norm_on_rounded_sum); y = bf16(float(bf16(x * rstd)) * gamma), both ties to even;
 * - Ascend 950: everything in float, x = x1 + x2 kept in float for the norm, xOut and y rounded
 *   once to their dtype.
 * Atlas inference parts do not write rstd (the kernels' CopyOutRstd is compiled for
 * __CCE_AICORE__ 220 only; the docs: rstdOut is "invalid" there).
 *
 * Kernel: rows are independent; each row's sum has a fixed order (norm_rows.h's lanes and
 * fold), so the split of rows over threads never changes a bit.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "exec_workspace.h"
#include "convert.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_add_rms_norm.h"
#include "aclnnop/aclnn_inplace_add_rms_norm.h"

#define P1 "aclnnAddRmsNormGetWorkspaceSize"

/* The kernel's tensors, as the vendor's kernels take them (x1, x2, gamma, y, rstd, x). */
enum { T_X1, T_X2, T_GAMMA, T_Y, T_RSTD, T_X, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x1", "x2", "gamma", "yOut", "rstdOut", "xOut"};

/* Which operator an executor runs: its phase two's name, its tensors' names in the kernel's
 * order and its executor ops. */
typedef struct {
    const char *p2;
    const char *const *names;
    const aclemu_executor_ops *ops;
} arn_variant;

/* The vendor's modes (aclnn_add_rms_norm.cpp): which of rstdOut and xOut are given. */
typedef enum { MODE_FULL, MODE_PRE, MODE_POST } arn_mode;
static const char *const MODE_NAME[] = {"rstdOut and xOut given",
                                        "xOut given without rstdOut (pre-RmsNorm)",
                                        "neither rstdOut nor xOut given (post-RmsNorm)"};

typedef struct {
    nr_head h; /* per chunk 3 * N floats: x1 (then x), x2 (then y), the x normed */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps, avg;            /* as the kernel receives them */
    aclDataType dtype;         /* x1's: every tensor but rstd has it */
    bool regbase;              /* Ascend 950's kernel: float throughout, one rounding */
    bool norm_on_rounded_sum;  /* BF16: the norm over bf16(x1 + x2), not the float sum */
    bool write_rstd;
} arn_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const arn_payload *P = payload;
    const tdesc *x1 = &P->t[T_X1], *x2 = &P->t[T_X2], *y = &P->t[T_Y];
    const tdesc *r = &P->t[T_RSTD], *xo = &P->t[T_X];
    const int64_t N = P->N;
    const aclDataType dt = P->dtype;
    /* the device's intermediate roundings (DAV_2201 / DAV_2002 kernels); none on Ascend 950 */
    const bool half_steps = !P->regbase && dt != ACL_FLOAT;
    float *abuf = nr_chunk_buf(R, chunk), *bbuf = abuf + N, *nbuf = bbuf + N;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x1, m), dt, &x1->inner, 0, N, abuf);
        const float *b = get_tile(row_base(x2, m), dt, &x2->inner, 0, N, bbuf);
        float *x = abuf; /* a is abuf unless FLOAT in place: the sum goes to abuf either way */
        for (int64_t i = 0; i < N; i++)
            x[i] = a[i] + b[i];
        const float *xn = x; /* the x the norm is taken over */
        if (half_steps && dt == ACL_FLOAT16) {
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, x, N); /* the FLOAT16 Add */
        } else if (half_steps && P->norm_on_rounded_sum) {
            memcpy(nbuf, x, (size_t)N * sizeof(float));
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, nbuf, N);
            xn = nbuf;
        }
        if (xo->present)
            put_tile(row_base(xo, m), dt, ACLEMU_TIES_EVEN, &xo->inner, 0, N, x);
        float rstd = 1.0f / sqrtf(nr_scaled_sum_squares(xn, N, P->avg) + P->eps);
        float *yb = bbuf;
        for (int64_t i = 0; i < N; i++)
            yb[i] = xn[i] * rstd;
        if (half_steps) /* rounded to x's dtype before gamma (CAST_NONE / CAST_RINT) */
            aclemu_round_floats(dt, ACLEMU_TIES_EVEN, yb, N);
        for (int64_t i = 0; i < N; i++)
            yb[i] *= R->gamma[i];
        put_tile(row_base(y, m), dt, ACLEMU_TIES_EVEN, &y->inner, 0, N, yb);
        if (P->write_rstd && r->present)
            put_tile(view_base(r), ACL_FLOAT, ACLEMU_TIES_EVEN, &r->inner, m, 1, &rstd);
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const arn_payload *P = payload;
    if (P->M == 0 || P->N == 0) /* an empty x1 or gamma: phase one's "nothing to compute" */
        return false;
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    return true;
}

static const nr_kernel ARN_KERNEL = NR_KERNEL(arn_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops ARN_OPS = NR_EXECUTOR_OPS("aclnnAddRmsNorm");
static const aclemu_executor_ops IARN_OPS = NR_EXECUTOR_OPS("aclnnInplaceAddRmsNorm");
static const arn_variant ARN = {"aclnnAddRmsNorm", TNAME, &ARN_OPS};
/* In place: y is written into x1Ref and x into x2Ref, each the same aclTensor as the input
 * (the definition's outputs "x1" and "x2" share their inputs' names: opbuild makes them Ref
 * parameters, one tensor each). The kernel is AddRmsNorm's (op_kernel/inplace_add_rms_norm.cpp
 * includes add_rms_norm's kernels): every variant reads a row's x1 and x2 (split-D: a chunk of
 * them; its second pass reads x back from x's memory) before writing that row's x and y, so an
 * output over its input gives the separate-output bits. */
static const char *const INAME[T_COUNT] = {"x1Ref", "x2Ref", "gamma", "x1Ref", "rstdOut",
                                           "x2Ref"};
static const arn_variant IARN = {"aclnnInplaceAddRmsNorm", INAME, &IARN_OPS};

/* ---- phase one -------------------------------------------------------------------------------- */


/* The tiling's kernel variant decides, for BF16 on Atlas A2/A3, which sum the norm is taken
 * over (add_rms_norm_tiling.cpp DetermineModeParameters): the normal kernel
 * (op_kernel/add_rms_norm.h) keeps the float sum; split-D (a row longer than 12288), single-N
 * (no more rows than vector cores) and merge-N (a row of at most 2000 elements, 16-aligned)
 * norm the BF16-rounded sum. */
static bool norm_on_rounded_sum(int64_t M, int64_t N)
{
    const int64_t aligned = (N + 15) / 16 * 16;
    const bool normal = N <= 12288 && M > aclemu_soc_vector_cores() && aligned > 2000;
    return !normal;
}

static aclnnStatus check_dtype(const aclTensor *t, const char *name, const aclDataType *list,
                               int n, const char *list_text, const aclemu_soc *soc,
                               arn_mode mode)
{
    for (int i = 0; i < n; i++)
        if (t->dtype == list[i])
            return ACLNN_SUCCESS;
    FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s) with %s: %s", P1,
         name, dname(t->dtype), soc->name, soc->series, MODE_NAME[mode], list_text);
}

static aclnnStatus check_same_dtype(const aclTensor *t, const char *name, const aclTensor *ref,
                                    const char *ref_name)
{
    if (t->dtype != ref->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be %s's dtype %s", P1, name,
             dname(t->dtype), ref_name, dname(ref->dtype));
    return ACLNN_SUCCESS;
}

static aclnnStatus check_rank(const aclTensor *t, const char *name, uint64_t lo, uint64_t hi)
{
    if (t->ndim < lo || t->ndim > hi)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is not in [%llu, %llu]", P1, name,
             (unsigned long long)t->ndim, (unsigned long long)lo, (unsigned long long)hi);
    return ACLNN_SUCCESS;
}

static aclnnStatus check_same_shape(const aclTensor *t, const char *name, const aclTensor *x1)
{
    if (!same_dims(t->dims, t->ndim, x1->dims, x1->ndim))
        return shape_error(P1, name, t->dims, t->ndim, "must equal x1's shape", x1->dims,
                           x1->ndim);
    return ACLNN_SUCCESS;
}

/* Steps 1-3 of the vendor's CheckParams: NULLs (161001), dtypes and ranks/shapes (161002). */
static aclnnStatus check_params(const aclTensor *const *ts, arn_mode mode,
                                const aclemu_soc *soc)
{
    const aclTensor *x1 = ts[T_X1], *x2 = ts[T_X2], *gamma = ts[T_GAMMA], *y = ts[T_Y];
    const aclTensor *rstd = ts[T_RSTD], *xo = ts[T_X];
    aclnnStatus st;
    if ((st = p1_required(P1, ts, TNAME, T_X1, T_Y + 1)))
        return st;
    if (mode == MODE_FULL && !xo)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: xOut is NULL while rstdOut is given (rstdOut "
             "requires xOut)", P1);
    if ((st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;

    /* dtypes, in the vendor's order */
    const bool p310 = soc->npu_arch == 2002;
    static const aclDataType ALL[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    static const aclDataType HALVES[] = {ACL_FLOAT16, ACL_BF16};
    const aclDataType *list = mode == MODE_FULL ? ALL : HALVES;
    int n = mode == MODE_FULL ? (p310 ? 2 : 3) : (p310 ? 1 : 2);
    const char *text = mode == MODE_FULL ? (p310 ? "FLOAT, FLOAT16" : "FLOAT, FLOAT16, BF16")
                                         : (p310 ? "FLOAT16" : "FLOAT16, BF16");
    if ((st = check_dtype(x1, "x1", list, n, text, soc, mode)) ||
        (st = check_dtype(x2, "x2", list, n, text, soc, mode)) ||
        (st = check_dtype(gamma, "gamma", list, n, text, soc, mode)) ||
        (st = check_same_dtype(x2, "x2", x1, "x1")) ||
        (st = check_same_dtype(gamma, "gamma", x1, "x1")) ||
        (st = check_dtype(y, "yOut", list, n, text, soc, mode)) ||
        (st = check_same_dtype(y, "yOut", x1, "x1")))
        return st;
    if (xo && ((st = check_dtype(xo, "xOut", list, n, text, soc, mode)) ||
               (st = check_same_dtype(xo, "xOut", y, "yOut"))))
        return st;
    if (mode == MODE_FULL && rstd->dtype != ACL_FLOAT)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: rstdOut dtype %s must be FLOAT", P1,
             dname(rstd->dtype));

    /* ranks and shapes, in the vendor's order */
    if ((st = check_rank(x1, "x1", 1, TV_MAX_RANK)) ||
        (st = check_rank(x2, "x2", 1, TV_MAX_RANK)) ||
        (st = check_rank(gamma, "gamma", 1, TV_MAX_RANK)) ||
        (st = check_same_shape(x2, "x2", x1)) ||
        (st = check_rank(y, "yOut", 0, TV_MAX_RANK)) ||
        (st = check_same_shape(y, "yOut", x1)))
        return st;
    if (mode == MODE_FULL && (st = check_rank(rstd, "rstdOut", 0, TV_MAX_RANK)))
        return st;
    if (mode != MODE_FULL && (st = check_rank(gamma, "gamma", 1, 2)))
        return st;
    if (xo && ((st = check_rank(xo, "xOut", 0, TV_MAX_RANK)) ||
               (st = check_same_shape(xo, "xOut", x1))))
        return st;
    return ACLNN_SUCCESS;
}

/* The L0 op's tiling rules (add_rms_norm_tiling.cpp CheckInputOutputShape, then the epsilon
 * check): refused there, the op_api returns 561103. */
static aclnnStatus check_tiling(const aclTensor *x1, const aclTensor *gamma, double epsilon,
                                arn_mode mode)
{
    char s1[256], s2[256];
    fmt_dims(s1, sizeof s1, gamma->dims, gamma->ndim);
    fmt_dims(s2, sizeof s2, x1->dims, x1->ndim);
    if (mode == MODE_FULL) {
        if (gamma->ndim > x1->ndim)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: gamma rank %llu > x1 rank %llu (the tiling's "
                 "rule)", P1, (unsigned long long)gamma->ndim, (unsigned long long)x1->ndim);
        const uint64_t split = x1->ndim - gamma->ndim;
        for (uint64_t i = 0; i < gamma->ndim; i++)
            if (gamma->dims[i] != x1->dims[split + i])
                FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: gamma shape %s must equal the last %llu dims "
                     "of x1 %s (the tiling's rule)", P1, s1, (unsigned long long)gamma->ndim,
                     s2);
    } else if (gamma->ndim != 2 || gamma->dims[0] != 1 ||
               gamma->dims[1] != x1->dims[x1->ndim - 1]) {
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: gamma shape %s must be [1, %lld] (x1 %s, %s; the "
             "tiling's rule)", P1, s1, (long long)x1->dims[x1->ndim - 1], s2, MODE_NAME[mode]);
    }
    if (epsilon < 0) /* NaN is not less than 0 */
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: epsilon %g is negative (must be >= 0; the tiling's "
             "rule)", P1, epsilon);
    return ACLNN_SUCCESS;
}

/* The AddRmsNorm kernel's tiling workspace on every part that has one: 256 bytes and its
 * 16 MiB system workspace (add_rms_norm_tiling.cpp SetWorkspaceSize; Ascend 950,
 * add_rms_norm_tiling_arch35.cpp/.h TilingAddRmsNormRegbase, the same). */
#define ARN_KERNEL_WORKSPACE (256 + EW_SYS_WORKSPACE)

/* aclnnAddRmsNorm's phase-one workspace (op_api/aclnn_add_rms_norm.cpp, add_rms_norm.cpp): 0
 * for an empty x1 or gamma (returned before any kernel); else Contiguous copies of strided
 * x1, x2, gamma, the kernel with its tiling workspace and its three executor-allocated
 * results (y; rstd, FLOAT, shaped {0} outside the full mode; x, shaped {0} in the post mode),
 * each result the mode copies out handed to its user tensor by ViewCopy. */
static uint64_t arn_workspace(int arch, const aclTensor *const *ts, arn_mode mode, int64_t M,
                              int64_t N)
{
    ew_graph g = ew_graph_on(arch);
    const uint64_t mn = (uint64_t)M * (uint64_t)N;
    const size_t es = aclemu_dtype_size(ts[T_X1]->dtype);
    const int reads[3] = {ew_contiguous_copy(&g, ts[T_X1]), ew_contiguous_copy(&g, ts[T_X2]),
                          ew_contiguous_copy(&g, ts[T_GAMMA])};
    const int k = ew_kernel_reading(&g, reads, 3);
    ew_kernel_workspace(&g, k, ARN_KERNEL_WORKSPACE);
    const int y = ew_output(&g, k, mn * es);
    const int rstd = ew_output(&g, k, mode == MODE_FULL ? (uint64_t)M * 4 : 0);
    const int x = ew_output(&g, k, mode == MODE_POST ? 0 : mn * es);
    ew_copy_out(&g, y, ts[T_X1]->dtype, ts[T_Y], mn);
    if (mode == MODE_FULL)
        ew_copy_out(&g, rstd, ACL_FLOAT, ts[T_RSTD], (uint64_t)M);
    if (mode != MODE_POST)
        ew_copy_out(&g, x, ts[T_X1]->dtype, ts[T_X], mn);
    return ew_size(&g);
}

/* The end of both phase ones: the payload over ts (the kernel's order) for M rows of N (N 0:
 * nothing to compute), the executor made, reporting ws_size. */
static aclnnStatus make_executor(const char *call, const arn_variant *V,
                                 const aclTensor *const *ts, arn_mode mode,
                                 const aclemu_soc *soc, double epsilon, int64_t M, int64_t N,
                                 uint64_t gdims, uint64_t ws_size, uint64_t *workspaceSize,
                                 aclOpExecutor **executor)
{
    const aclTensor *x1 = ts[T_X1];
    arn_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", call);
    P->h = (nr_head){.kernel = &ARN_KERNEL, .call = V->p2, .names = V->names,
                     .rows = N == 0 ? 0 : M, .width = N, .row_floats = 3 * N,
                     .no_kernel = N == 0};
    P->M = N == 0 ? 0 : M;
    P->N = N;
    P->eps = (float)epsilon;
    P->avg = N == 0 ? 0.0f : 1.0f / (float)N;
    P->dtype = x1->dtype;
    P->regbase = soc->npu_arch == 3510;
    P->norm_on_rounded_sum = x1->dtype == ACL_BF16 && norm_on_rounded_sum(M, N);
    P->write_rstd = mode == MODE_FULL && soc->npu_arch != 2002;
    if (N != 0) {
        const int split = (int)(x1->ndim - gdims);
        for (int i = 0; i < T_COUNT; i++)
            snapshot(&P->t[i], ts[i], i == T_GAMMA || i == T_RSTD ? -1 : split);
    }
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(call, V->ops, P, ws_size, ts, V->names, T_COUNT, T_Y, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1,
                                                          const aclTensor *x2,
                                                          const aclTensor *gamma,
                                                          double epsilon, aclTensor *yOut,
                                                          aclTensor *rstdOut, aclTensor *xOut,
                                                          uint64_t *workspaceSize,
                                                          aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    const aclTensor *ts[T_COUNT] = {x1, x2, gamma, yOut, rstdOut, xOut};

    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;
    const arn_mode mode = rstdOut ? MODE_FULL : xOut ? MODE_PRE : MODE_POST;

    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    if ((st = check_params(ts, mode, soc)))
        return st;
    /* The Atlas training parts have no kernel (the def registers none for ascend910; the
     * docs: not supported): there the L0 op finds none for its tiling, which the op_api
     * returns as 561103 (docs/emulator.md). An empty input returns before the L0 op. */
    const bool no_kernel = soc->npu_arch == 1001;

    /* an empty x1 or gamma: success, nothing to compute (the vendor returns before the L0 op,
     * so neither the tiling's rules nor rstdOut's shape are checked) */
    const uint64_t gdims = mode == MODE_FULL ? gamma->ndim : 1;
    int64_t M = 0, N = 0, X = 0;
    if (!numel(x1->dims, x1->ndim, &X) || !numel(gamma->dims, gamma->ndim, &N))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", P1);
    const bool empty = X == 0 || N == 0;
    if (!empty) {
        if (no_kernel)
            FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: not supported on %s (%s): the operator has no "
                 "kernel for that series", P1, soc->name, soc->series);
        if ((st = check_tiling(x1, gamma, epsilon, mode)))
            return st;
        if (!numel(x1->dims, x1->ndim - gdims, &M))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", P1);
        /* the ViewCopy of the L0 op's rstd (x1's batch dims then ones) into rstdOut */
        if (mode == MODE_FULL) {
            int64_t want[TV_MAX_RANK], R = 0;
            for (uint64_t i = 0; i < x1->ndim; i++)
                want[i] = i < x1->ndim - gdims ? x1->dims[i] : 1;
            const bool ones = numel(rstdOut->dims, rstdOut->ndim, &R) && R == 1 && M == 1;
            if (!ones && !same_dims(rstdOut->dims, rstdOut->ndim, want, x1->ndim)) {
                shape_error(P1, "rstdOut", rstdOut->dims, rstdOut->ndim,
                            "must be x1's batch dims then ones (the ViewCopy's rule):", want,
                            x1->ndim);
                return ACLNN_ERR_INNER_NULLPTR;
            }
        }
    }

    return make_executor(P1, &ARN, ts, mode, soc, epsilon, M, empty ? 0 : N, gdims,
                         empty ? 0 : arn_workspace(soc->npu_arch, ts, mode, M, N), workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddRmsNorm(void *workspace, uint64_t workspaceSize,
                                          aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(ARN.p2, executor, workspace, workspaceSize, stream);
}

/* ---- aclnnInplaceAddRmsNorm ---------------------------------------------------------------- */

/*
 * Facts, hicann/ops-nn norm/inplace_add_rms_norm (its aclnn interface has no op_api source: the
 * build's opbuild tool generates it from op_host/inplace_add_rms_norm_def.cpp, ACLNNTYPE aclnn
 * in op_host/CMakeLists.txt), so phase one is the framework's steps over the definition and
 * the tiling it shares with AddRmsNorm:
 * - docs/aclnnInplaceAddRmsNorm.md: the prototype; x1Ref receives y, x2Ref x1 + x2; 161001 for
 *   a NULL, 161002 for a dtype outside the part's list; no empty tensors; rstdOut FLOAT, of
 *   x1Ref's rank, x1Ref's batch dims then ones;
 * - op_host/inplace_add_rms_norm_def.cpp: x1, x2, gamma of one dtype (FLOAT16, FLOAT, BF16;
 *   Atlas inference parts without BF16), rstd FLOAT; kernels for Atlas A2/A3, Atlas
 *   inference and Ascend 950, none for the Atlas training parts: there the framework's kernel
 *   lookup fails before any dtype is compared (hicann/opbase
 *   src/nnopbase/individual_op/executor/indv_executor.cpp CheckSocVersionAndParam: 561003);
 * - norm/add_rms_norm/op_host/add_rms_norm_tiling.cpp (IMPL_OP_OPTILING(InplaceAddRmsNorm) is
 *   Tiling4AddRmsNorm over y = x1Ref, x = x2Ref): CheckInputOutputDim, CheckInputOutputShape,
 *   then the epsilon check; a tiling failure is 561002 (indv_executor.cpp);
 * - hicann/opbase indv_executor.cpp NnopbaseExecutorMatchCache: a call whose outputs are all
 *   empty launches nothing and skips the tiling.
 */
#define IP1 "aclnnInplaceAddRmsNormGetWorkspaceSize"

enum { R_X1, R_X2, R_GAMMA, R_RSTD, R_COUNT };
static const char *const RNAME[R_COUNT] = {"x1Ref", "x2Ref", "gamma", "rstdOut"};

/* The definition's dtypes (161002): x1Ref, x2Ref, gamma in the part's list, one dtype;
 * rstdOut FLOAT. */
static aclnnStatus check_inplace_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const bool p310 = soc->npu_arch == 2002;
    for (int i = R_X1; i <= R_GAMMA; i++) {
        const aclDataType dt = ts[i]->dtype;
        if (!(dt == ACL_FLOAT || dt == ACL_FLOAT16 || (dt == ACL_BF16 && !p310)))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s",
                 IP1, RNAME[i], dname(dt), soc->name, soc->series,
                 p310 ? "FLOAT, FLOAT16" : "FLOAT, FLOAT16, BF16");
        if (i != R_X1 && dt != ts[R_X1]->dtype)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be x1Ref's dtype %s", IP1,
                 RNAME[i], dname(dt), dname(ts[R_X1]->dtype));
    }
    if (ts[R_RSTD]->dtype != ACL_FLOAT)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: rstdOut dtype %s must be FLOAT", IP1,
             dname(ts[R_RSTD]->dtype));
    return ACLNN_SUCCESS;
}

static aclnnStatus inplace_rank(const aclTensor *t, const char *name)
{
    if (t->ndim < 1 || t->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: %s rank %llu is not in [1, 8]", IP1, name,
             (unsigned long long)t->ndim);
    return ACLNN_SUCCESS;
}

/* The tiling's shape rules (561002) in its order, for rstdOut not empty (checked before). */
static aclnnStatus check_inplace_shapes(const aclTensor *x1, const aclTensor *x2,
                                        const aclTensor *gamma, const aclTensor *rstd)
{
    aclnnStatus st;
    char sx[256], so[256];
    fmt_dims(sx, sizeof sx, x1->dims, x1->ndim);
    if ((st = inplace_rank(x1, "x1Ref")) || (st = inplace_rank(gamma, "gamma")))
        return st;
    if (x1->ndim < gamma->ndim)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma rank %llu > x1Ref rank %llu", IP1,
             (unsigned long long)gamma->ndim, (unsigned long long)x1->ndim);
    if (x2->ndim != x1->ndim)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: x2Ref rank %llu != x1Ref rank %llu", IP1,
             (unsigned long long)x2->ndim, (unsigned long long)x1->ndim);
    if (rstd->ndim != x1->ndim)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut rank %llu != x1Ref rank %llu (rstdOut "
             "is x1Ref's batch dims then ones)", IP1, (unsigned long long)rstd->ndim,
             (unsigned long long)x1->ndim);
    for (uint64_t i = 0; i < x1->ndim; i++) {
        if (x1->dims[i] == 0)
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: x1Ref shape %s is empty (x1Ref cannot be an "
                 "empty tensor)", IP1, sx);
        if (x2->dims[i] != x1->dims[i]) {
            shape_error(IP1, "x2Ref", x2->dims, x2->ndim, "must equal x1Ref's shape", x1->dims,
                        x1->ndim);
            return ACLNN_ERR_INNER_TILING_ERROR;
        }
    }
    const uint64_t split = x1->ndim - gamma->ndim;
    int64_t want[TV_MAX_RANK];
    for (uint64_t i = 0; i < x1->ndim; i++)
        want[i] = i < split ? x1->dims[i] : 1;
    fmt_dims(so, sizeof so, gamma->dims, gamma->ndim);
    for (uint64_t i = 0; i < gamma->ndim; i++)
        if (gamma->dims[i] != x1->dims[split + i])
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma shape %s must equal the last %llu "
                 "dims of x1Ref %s", IP1, so, (unsigned long long)gamma->ndim, sx);
    if (!same_dims(rstd->dims, rstd->ndim, want, x1->ndim)) {
        shape_error(IP1, "rstdOut", rstd->dims, rstd->ndim,
                    "must be x1Ref's batch dims then ones:", want, x1->ndim);
        return ACLNN_ERR_INNER_TILING_ERROR;
    }
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnInplaceAddRmsNormGetWorkspaceSize(aclTensor *x1Ref,
                                                                 aclTensor *x2Ref,
                                                                 const aclTensor *gamma,
                                                                 double epsilon,
                                                                 const aclTensor *rstdOut,
                                                                 uint64_t *workspaceSize,
                                                                 aclOpExecutor **executor)
{
    const aclTensor *rs[R_COUNT] = {x1Ref, x2Ref, gamma, rstdOut};

    /* 0. the out-pointers first, 1. every tensor required and live (161001); the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(IP1, rs, RNAME, R_COUNT, P1_BITS(0, R_COUNT), workspaceSize,
                                executor, &soc);
    if (st)
        return st;
    /* 2. a part without a kernel (the Atlas training series), before any dtype */
    if (soc->npu_arch == 1001)
        FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): the operator's "
             "definition registers no kernel for that series", IP1, soc->name, soc->series);
    /* 3. dtypes (161002) */
    if ((st = check_inplace_dtypes(rs, soc)))
        return st;

    /* 4. every output (x1Ref, rstdOut, x2Ref) empty: nothing launched, no tiling */
    int64_t X1 = 0, X2 = 0, R = 0, N = 0, M = 0;
    if (!numel(x1Ref->dims, x1Ref->ndim, &X1) || !numel(x2Ref->dims, x2Ref->ndim, &X2) ||
        !numel(rstdOut->dims, rstdOut->ndim, &R) || !numel(gamma->dims, gamma->ndim, &N))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", IP1);
    const bool all_empty = X1 == 0 && X2 == 0 && R == 0;
    if (!all_empty) {
        /* Stricter (docs/emulator.md): an empty rstdOut beside a non-empty x2Ref puts the
         * vendor's tiling in AddRmsNorm's "pre" mode, whose kernels the in-place operator does
         * not have (nothing would be written); the docs allow no empty tensor. */
        if (R == 0)
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut is empty while x2Ref is not "
                 "(rstdOut cannot be an empty tensor)", IP1);
        /* 5. the tiling's rules (561002), then epsilon */
        if ((st = check_inplace_shapes(x1Ref, x2Ref, gamma, rstdOut)))
            return st;
        if (epsilon < 0) /* NaN is not less than 0 */
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: epsilon %g is negative (must be >= 0)",
                 IP1, epsilon);
        if (!numel(x1Ref->dims, x1Ref->ndim - gamma->ndim, &M))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: an element count overflows int64", IP1);
    }
    /* AddRmsNorm's full mode with y over x1Ref and x over x2Ref. The workspace: the generated
     * (opbuild) aclnn runs the kernel on the individual-op executor, whose size is the tiling's
     * (hicann/opbase individual_op/executor/indv_executor.cpp
     * NnopbaseExecutorGetWorkspaceSizes; 0 when every output is empty, NnopbaseSkipKernelLaunch).
     * Its Contiguous executors for strided tensors are not modelled (docs/emulator.md). */
    const aclTensor *ts[T_COUNT] = {x1Ref, x2Ref, gamma, x1Ref, rstdOut, x2Ref};
    return make_executor(IP1, &IARN, ts, MODE_FULL, soc, epsilon, M, all_empty ? 0 : N,
                         gamma->ndim, all_empty ? 0 : ARN_KERNEL_WORKSPACE, workspaceSize,
                         executor);
}

ACLEMU_EXPORT aclnnStatus aclnnInplaceAddRmsNorm(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(IARN.p2, executor, workspace, workspaceSize, stream);
}
