/*
 * aclnnRmsNormGrad for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel.
 *
 * Facts, hicann/ops-nn norm/rms_norm_grad. Its aclnn interface has no op_api source: the
 * build's opbuild tool generates it from op_host/rms_norm_grad_def.cpp (ACLNNTYPE aclnn in
 * op_host/CMakeLists.txt), so phase one follows the documented contract, the def's dtype
 * combinations and the tiling's rules:
 * - docs/aclnnRmsNormGrad.md: the prototype; codes 161001 (a required argument NULL), 161002
 *   (a dtype outside the part's table), 561002 (the other parameter rules); per-part dtype
 *   tables (Atlas A2/A3, Ascend 950: (dy = x = dxOut, gamma) in {(F16, F32), (BF16, F32),
 *   (F16, F16), (F32, F32), (BF16, BF16)}; Atlas inference: (F16, F16), (F32, F32)); rstd and
 *   dgammaOut FLOAT;
 * - op_host/rms_norm_grad_def.cpp: the same combinations per part (ascend910 and ascend310p:
 *   the table without BF16);
 * - op_host/rms_norm_grad_tiling.cpp CheckInputShape4RmsNormGrad and Tiling4RmsNormGrad: the
 *   shape rules (below, in its order), rstd holding one value per row, no empty row set
 *   outside Ascend 950 (RmsNormGradEmptyTiling there: dgamma zeros), gamma's element count a
 *   multiple of 64 on ascend910; a tiling failure is 561002;
 * - hicann/opbase src/nnopbase/individual_op/executor/indv_executor.cpp: a generated
 *   operator whose outputs are all empty skips its tiling and kernel (NnopbaseSkipKernelLaunch).
 *
 * The device's numbers (op_kernel/rms_norm_grad_split_n_high_precision.h Compute and
 * ComputeSmallD, rms_norm_grad_split_d_high_precision.h for rows longer than 6080,
 * reduce_common.h, arch35/ for Ascend 950), all in float32 with dy, x and gamma cast to float:
 *   xr = x * rstd;  dgamma partial += dy * xr;  dyg = dy * gamma;
 *   s = sum(dyg * xr)  (split-D: sum((dy * xr) * gamma), in 4096-column chunks added in order);
 *   mean = s * avg (avg = 1.0f / N);  dx = (dyg - xr * mean) * rstd, rounded once to dx's
 *   dtype to nearest, ties to even (FLOAT16 CAST_NONE, BF16 CAST_RINT).
 * A row's sum: ReduceSumHalfInterval (fold the part past the largest power of two onto its
 * front, halve down to 64 lanes) or, on Atlas A2/A3 for rows of at most 640 aligned elements,
 * ReduceSumMultiN (64 lane accumulators over the row's 64-element blocks); the 64 lanes'
 * final WholeReduceSum has no order in the sources: here a halving tree.
 * dgamma: the rows are split over the part's vector cores in blocks of ceil(M / cores) rows;
 * each core sums dy * xr over its rows in order (split-D: in groups of 32 rows, each group's
 * sum added to the core's), and the cores' sums are added in core order, as the kernel's
 * deterministic mode does (FinalProcessDeterministic; its default atomic adds arrive in any
 * order). So dgamma's bits depend on the part's core count and on nothing else.
 *
 * Kernel: every core block runs on one emulator thread in a fixed order, so the split of the
 * blocks over threads never changes a bit.
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

#include "aclnnop/aclnn_rms_norm_grad.h"

#define P1 "aclnnRmsNormGradGetWorkspaceSize"
#define P2 "aclnnRmsNormGrad"

#define SPLIT_N_MAX 6080     /* longest row of the split-N kernels (the tiling's buffer size) */
#define SPLIT_D_CHUNK 4096   /* the split-D kernel's column chunk */
#define SPLIT_D_ROWS 32      /* the split-D kernel's row group (ROW_FACTOR_SPLIT_D) */
#define SMALL_D_MAX 640      /* rows of at most this many aligned elements: ReduceSumMultiN */

enum { T_DY, T_X, T_RSTD, T_GAMMA, T_DX, T_DGAMMA, T_COUNT };
static const char *const TNAME[T_COUNT] = {"dy", "x", "rstd", "gamma", "dxOut", "dgammaOut"};

typedef enum { SUM_HALF_INTERVAL, SUM_LANE_BLOCKS } sum_order;

/* Row buffer floats per chunk: x, dy (converted), xr, dyg, t, dx, then a split-D row group's
 * dgamma sum (N each). */
#define ROW_BUFS 7

typedef struct {
    nr_head h; /* rows: the core blocks; the run's buffer: each block's dgamma sum (N each) */
    tdesc t[T_COUNT];
    int64_t M, N;
    float avg;          /* 1.0f / N, as the tiling hands it over */
    int64_t block_rows; /* rows per core block: ceil(M / cores) */
    int64_t blocks;     /* core blocks: ceil(M / block_rows) */
    sum_order order;    /* how a row's sum is ordered */
    bool split_d;       /* rows longer than SPLIT_N_MAX on parts with the split-D kernel */
    bool launch;        /* false: every output empty, nothing runs (as the vendor's framework) */
} grad_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* One row: dx into dxr (as floats), dy * xr added to acc. */
static void grad_row(const grad_payload *P, const float *g, const float *x, const float *dy,
                     float rstd, float *xr, float *dyg, float *t, float *dxr, float *acc)
{
    const int64_t N = P->N;
    float s = 0.0f;
    for (int64_t i = 0; i < N; i++) {
        xr[i] = x[i] * rstd;
        const float p = dy[i] * xr[i];
        acc[i] = acc[i] + p;
        dyg[i] = dy[i] * g[i];
        t[i] = P->split_d ? p * g[i] : dyg[i] * xr[i];
    }
    if (P->split_d) {
        for (int64_t c = 0; c < N; c += SPLIT_D_CHUNK)
            s = s + nr_sum_half_interval(t + c, N - c < SPLIT_D_CHUNK ? N - c : SPLIT_D_CHUNK);
    } else {
        s = P->order == SUM_LANE_BLOCKS ? nr_sum_lane_blocks(t, N) : nr_sum_half_interval(t, N);
    }
    const float mean = s * P->avg;
    for (int64_t i = 0; i < N; i++)
        dxr[i] = (dyg[i] - xr[i] * mean) * rstd;
}

/* Core blocks [begin, end): each block's rows in order, its dgamma sum into the run's
 * buffer. */
static void blocks_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                        int64_t end)
{
    const grad_payload *P = payload;
    const tdesc *dy = &P->t[T_DY], *x = &P->t[T_X], *r = &P->t[T_RSTD], *dx = &P->t[T_DX];
    const int64_t N = P->N;
    float *buf = nr_chunk_buf(R, chunk);
    float *xbuf = buf, *dybuf = buf + N, *xr = buf + 2 * N, *dyg = buf + 3 * N,
          *t = buf + 4 * N, *dxr = buf + 5 * N, *group = buf + 6 * N;
    for (int64_t b = begin; b < end; b++) {
        float *acc = R->run_buf + b * N;
        const int64_t m0 = b * P->block_rows;
        const int64_t m1 = m0 + P->block_rows < P->M ? m0 + P->block_rows : P->M;
        for (int64_t i = 0; i < N; i++)
            acc[i] = 0.0f;
        for (int64_t g0 = m0; g0 < m1; g0 += P->split_d ? SPLIT_D_ROWS : m1 - m0) {
            const int64_t g1 = P->split_d && g0 + SPLIT_D_ROWS < m1 ? g0 + SPLIT_D_ROWS : m1;
            float *gacc = P->split_d ? group : acc;
            if (P->split_d)
                for (int64_t i = 0; i < N; i++)
                    gacc[i] = 0.0f;
            for (int64_t m = g0; m < g1; m++) {
                const float *xv = get_tile(row_base(x, m), x->dtype, &x->inner, 0, N, xbuf);
                const float *dyv = get_tile(row_base(dy, m), dy->dtype, &dy->inner, 0, N, dybuf);
                float rstd;
                const float *rv = get_tile(view_base(r), ACL_FLOAT, &r->inner, m, 1, &rstd);
                grad_row(P, R->gamma, xv, dyv, *rv, xr, dyg, t, dxr, gacc);
                put_tile(row_base(dx, m), dx->dtype, ACLEMU_TIES_EVEN, &dx->inner, 0, N, dxr);
            }
            if (P->split_d)
                for (int64_t i = 0; i < N; i++)
                    acc[i] = acc[i] + gacc[i];
        }
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const grad_payload *P = payload;
    if (!P->launch) /* every output empty: the vendor's framework launches nothing */
        return false;
    if (P->M == 0) { /* Ascend 950's empty-rows kernel: dgamma is zeros */
        const tdesc *dg = &P->t[T_DGAMMA];
        memset(R->run_buf, 0, (size_t)P->N * sizeof(float));
        put_tile(view_base(dg), ACL_FLOAT, ACLEMU_TIES_EVEN, &dg->inner, 0, P->N, R->run_buf);
        return false;
    }
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    return true;
}

/* The cores' sums in core order, each added onto the running total. */
static void after_rows(const void *payload, norm_rows *R)
{
    const grad_payload *P = payload;
    const tdesc *dg = &P->t[T_DGAMMA];
    const int64_t N = P->N;
    float *partials = R->run_buf;
    for (int64_t b = 1; b < P->blocks; b++)
        for (int64_t i = 0; i < N; i++)
            partials[i] = partials[i] + partials[b * N + i];
    put_tile(view_base(dg), ACL_FLOAT, ACLEMU_TIES_EVEN, &dg->inner, 0, N, partials);
}

static const nr_kernel GRAD_KERNEL = NR_KERNEL(grad_payload, before_rows, blocks_body,
                                               after_rows);
static const aclemu_executor_ops GRAD_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

#define TILING(...) FAIL(ACLNN_ERR_INNER_TILING_ERROR, __VA_ARGS__)

/* The part's dtype table (docs/aclnnRmsNormGrad.md, op_host/rms_norm_grad_def.cpp): dy, x
 * and dxOut share one dtype; gamma is that dtype, or FLOAT beside a FLOAT16/BF16 one on parts
 * with BF16 (the other parts list only matching pairs); rstd and dgammaOut are FLOAT. */
static bool gamma_dtype_ok(aclDataType x, aclDataType gamma, bool bf16_part)
{
    return gamma == x || (bf16_part && gamma == ACL_FLOAT);
}

static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const bool bf16 = soc->bf16;
    for (int i = 0; i < T_COUNT; i++) {
        const aclDataType dt = ts[i]->dtype;
        const bool fixed = i == T_RSTD || i == T_DGAMMA; /* FLOAT only */
        if (fixed ? dt != ACL_FLOAT : !(dtype_ok(dt) && (dt != ACL_BF16 || bf16)))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
                 TNAME[i], dname(dt), soc->name, soc->series,
                 fixed ? "FLOAT" : bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    }
    const aclDataType xdt = ts[T_X]->dtype;
    if (ts[T_DY]->dtype != xdt)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: dy dtype %s must be x's dtype %s", P1,
             dname(ts[T_DY]->dtype), dname(xdt));
    if (ts[T_DX]->dtype != xdt)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: dxOut dtype %s must be x's dtype %s", P1,
             dname(ts[T_DX]->dtype), dname(xdt));
    if (!gamma_dtype_ok(xdt, ts[T_GAMMA]->dtype, bf16))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s must be x's dtype %s%s on %s", P1,
             dname(ts[T_GAMMA]->dtype), dname(xdt),
             bf16 && xdt != ACL_FLOAT ? " or FLOAT" : "", soc->name);
    return ACLNN_SUCCESS;
}

/* CheckInputShape4RmsNormGrad's rules, in its order (CheckInputDim, CheckOutputDim,
 * CheckInputAndOutputShape, CheckRstdShape, CheckGammaAndDgammaShape); launch: false when
 * every output is empty, where the tiling (and its non-zero last dim rule) does not run. */
static aclnnStatus check_shapes(const aclTensor *dy, const aclTensor *x, const aclTensor *rstd,
                                const aclTensor *gamma, const aclTensor *dx,
                                const aclTensor *dgamma, bool launch)
{
    char s1[256], s2[256];
    fmt_dims(s2, sizeof s2, x->dims, x->ndim);
    if (x->ndim < 1 || x->ndim > TV_MAX_RANK)
        TILING("%s: x rank %llu is not in [1, %d]", P1, (unsigned long long)x->ndim,
               TV_MAX_RANK);
    if (gamma->ndim < 1 || gamma->ndim > TV_MAX_RANK)
        TILING("%s: gamma rank %llu is not in [1, %d]", P1, (unsigned long long)gamma->ndim,
               TV_MAX_RANK);
    if (gamma->ndim > x->ndim)
        TILING("%s: gamma rank %llu > x rank %llu", P1, (unsigned long long)gamma->ndim,
               (unsigned long long)x->ndim);
    if (dy->ndim != x->ndim)
        TILING("%s: dy rank %llu != x rank %llu", P1, (unsigned long long)dy->ndim,
               (unsigned long long)x->ndim);
    if (dx->ndim != dy->ndim)
        TILING("%s: dxOut rank %llu != dy rank %llu", P1, (unsigned long long)dx->ndim,
               (unsigned long long)dy->ndim);
    if (dgamma->ndim != gamma->ndim)
        TILING("%s: dgammaOut rank %llu != gamma rank %llu", P1,
               (unsigned long long)dgamma->ndim, (unsigned long long)gamma->ndim);
    if (!same_dims(dy->dims, dy->ndim, x->dims, x->ndim)) {
        fmt_dims(s1, sizeof s1, dy->dims, dy->ndim);
        TILING("%s: dy shape %s != x shape %s", P1, s1, s2);
    }
    if (!same_dims(dx->dims, dx->ndim, x->dims, x->ndim)) {
        fmt_dims(s1, sizeof s1, dx->dims, dx->ndim);
        TILING("%s: dxOut shape %s != dy shape %s", P1, s1, s2);
    }
    if (launch && x->dims[x->ndim - 1] == 0)
        TILING("%s: dy shape %s: its last dim cannot be 0", P1, s2);
    /* rstd: its leading dims are x's batch dims (a shorter rstd: x's remaining batch dims
     * are 1); its element count is checked against the rows by the caller */
    const uint64_t split = x->ndim - gamma->ndim;
    fmt_dims(s1, sizeof s1, rstd->dims, rstd->ndim);
    const uint64_t lead = rstd->ndim < split ? rstd->ndim : split;
    for (uint64_t i = 0; i < lead; i++)
        if (rstd->dims[i] != x->dims[i])
            TILING("%s: rstd shape %s must begin with x's first %llu dims (x %s)", P1, s1,
                   (unsigned long long)lead, s2);
    for (uint64_t i = lead; i < split; i++)
        if (x->dims[i] != 1)
            TILING("%s: x shape %s: dim %llu must be 1 for rstd shape %s (rstd holds x's "
                   "batch dims)", P1, s2, (unsigned long long)i, s1);
    fmt_dims(s1, sizeof s1, gamma->dims, gamma->ndim);
    for (uint64_t i = 0; i < gamma->ndim; i++)
        if (gamma->dims[i] != x->dims[split + i])
            TILING("%s: gamma shape %s must equal the last %llu dims of dy %s", P1, s1,
                   (unsigned long long)gamma->ndim, s2);
    if (!same_dims(dgamma->dims, dgamma->ndim, gamma->dims, gamma->ndim)) {
        char s3[256];
        fmt_dims(s3, sizeof s3, dgamma->dims, dgamma->ndim);
        TILING("%s: dgammaOut shape %s must equal the last %llu dims of dy %s", P1, s3,
               (unsigned long long)gamma->ndim, s2);
    }
    return ACLNN_SUCCESS;
}

/* The device's phase-one workspace. The generated (opbuild) aclnn runs the one kernel on the
 * individual-op executor: the sum of the tiling's workspaces, no allocator (hicann/opbase
 * individual_op/executor/indv_executor.cpp NnopbaseExecutorGetWorkspaceSizes), 0 when every
 * output is empty (NnopbaseSkipKernelLaunch: !launch). op_host/rms_norm_grad_tiling.cpp
 * SetTilingDataAndWorkspace: outside deterministic mode 8 floats (ALIGN_32) per used core
 * (block_dim: the rows in blocks of ceil(M / cores)) + 16 MiB; when the tiling reads
 * GetDeterministic() == 1 (level 1 only: p1_deterministic), each used core's dgamma row of
 * col_val_align floats (N rounded up to 8 floats for FLOAT, 16 for 16-bit dtypes) on top,
 * chunked (SetChunkWorkspace) on Ascend910B / Ascend910_93 for split-D rows when the inputs
 * (their uint32 sum) reach 500 MiB and the rows pass 5% of them. Ascend 950 (whose tilings
 * read no deterministic flag): the empty-rows template (rms_norm_grad_empty_tiling.cpp) and the
 * regbase one (rms_norm_grad_regbase_tiling.cpp) 16 MiB; BigM
 * (rms_norm_grad_regbase_big_m_tiling.cpp IsCapable: N <= 64 * cores / 2 with 64 floats to a
 * vector register, M >= 2 N, M >= 64 * cores / 2) one N-float row per dgamma core,
 * min(ceil(M / 64), cores), + 16 MiB. Strided tensors' Contiguous executors: not modelled. */
static uint64_t grad_workspace(const aclemu_soc *soc, bool launch, int64_t M, int64_t N,
                               aclDataType dtype, int64_t level)
{
    if (!launch)
        return 0;
    const int64_t cores = aclemu_soc_vector_cores();
    if (soc->npu_arch == 3510) {
        const int64_t half = 64 * cores / 2;
        if (M > 0 && N <= half && M >= 2 * N && M >= half) {
            const int64_t dgamma_cores = (M + 63) / 64 < cores ? (M + 63) / 64 : cores;
            return (uint64_t)(dgamma_cores * N * 4) + EW_SYS_WORKSPACE;
        }
        return EW_SYS_WORKSPACE;
    }
    const int64_t block_rows = (M + cores - 1) / cores;
    const int64_t block_dim = (M + block_rows - 1) / block_rows;
    if (level != 1)
        return (uint64_t)(8 * block_dim * 4) + EW_SYS_WORKSPACE;
    const int64_t align = dtype == ACL_FLOAT ? 8 : 16, col_align = (N + align - 1) / align * align;
    /* the inputs' bytes (dy, x, rstd, gamma) summed in uint32 as the tiling does: past 4 GiB
     * the sum wraps, and the 500 MiB and 5% rules see the wrapped value */
    const uint32_t m32 = (uint32_t)M, n32 = (uint32_t)N, dsize = dtype == ACL_FLOAT ? 4 : 2;
    const uint64_t inputs = (uint32_t)(m32 * n32 * dsize * 2u + m32 * 4u + n32 * dsize);
    const uint64_t enable = (uint64_t)((double)inputs * 0.05);
    const uint64_t rows = (uint64_t)block_dim * (uint64_t)col_align * 4;
    /* ASCEND910B or ASCEND910_93: the NPU architecture 2201 parts */
    if (N > SPLIT_N_MAX && soc->npu_arch == 2201 && rows > enable &&
        inputs >= 500ull * 1024 * 1024) {
        /* uint32 chunk size as the tiling computes it, in 4096-float steps, at least one */
        uint64_t chunk =
            (uint32_t)((enable - (uint64_t)block_rows * 4) / ((uint64_t)block_dim * 4));
        chunk = chunk / 4096 * 4096;
        if (chunk == 0)
            chunk = 4096;
        return (chunk + 8 + (uint64_t)block_rows) * (uint64_t)block_dim * 4 + EW_SYS_WORKSPACE;
    }
    return (uint64_t)((col_align + 8) * block_dim * 4) + EW_SYS_WORKSPACE;
}

ACLEMU_EXPORT aclnnStatus aclnnRmsNormGradGetWorkspaceSize(const aclTensor *dy,
                                                           const aclTensor *x,
                                                           const aclTensor *rstd,
                                                           const aclTensor *gamma,
                                                           const aclTensor *dxOut,
                                                           const aclTensor *dgammaOut,
                                                           uint64_t *workspaceSize,
                                                           aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {dy, x, rstd, gamma, dxOut, dgammaOut};

    /* 0. the out-pointers first (161001), 1. every tensor is required (161001), then must be
     * a live aclTensor; the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(0, T_COUNT), workspaceSize,
                                executor, &soc);
    if (st)
        return st;

    /* 2. dtypes (161002) */
    if ((st = check_dtypes(ts, soc)))
        return st;
    int64_t M = 0, N = 0, R = 0, DX = 0, DG = 0;
    const uint64_t split = gamma->ndim <= x->ndim ? x->ndim - gamma->ndim : 0;
    if (!numel(x->dims, split, &M) || !numel(gamma->dims, gamma->ndim, &N) ||
        !numel(rstd->dims, rstd->ndim, &R) || !numel(dxOut->dims, dxOut->ndim, &DX) ||
        !numel(dgammaOut->dims, dgammaOut->ndim, &DG))
        TILING("%s: an element count overflows int64", P1);
    /* 3. the tiling's shape rules (561002). Every output empty: the vendor's framework
     * skips the tiling and the kernel (NnopbaseSkipKernelLaunch); stricter
     * (docs/emulator.md), the shape rules hold there too, but for the non-zero last dim. */
    const bool launch = DX != 0 || DG != 0;
    if ((st = check_shapes(dy, x, rstd, gamma, dxOut, dgammaOut, launch)))
        return st;
    /* Stricter (docs/emulator.md): rstd of rank <= 8 (the tiling checks its leading dims
     * and element count only, so trailing ones could make it longer) */
    if (rstd->ndim > TV_MAX_RANK)
        TILING("%s: rstd rank %llu is not in [0, %d]", P1, (unsigned long long)rstd->ndim,
               TV_MAX_RANK);
    if (R != M) {
        char s1[256], s2[256];
        fmt_dims(s1, sizeof s1, rstd->dims, rstd->ndim);
        fmt_dims(s2, sizeof s2, x->dims, x->ndim);
        TILING("%s: rstd shape %s has %lld elements != %lld rows of x %s (one rstd per row)",
               P1, s1, (long long)R, (long long)M, s2);
    }
    if (launch && soc->npu_arch == 1001 && N % 64 != 0)
        TILING("%s: gamma has %lld elements: on %s (%s) the count must be a multiple of 64",
               P1, (long long)N, soc->name, soc->series);
    if (launch && M == 0 && soc->npu_arch != 3510) {
        char s2[256];
        fmt_dims(s2, sizeof s2, x->dims, x->ndim);
        TILING("%s: dy has no rows (x %s): %s (%s) takes no empty dy beside a non-empty "
               "dgammaOut (only Ascend 950 does)", P1, s2, soc->name, soc->series);
    }

    grad_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    P->M = M;
    P->N = N;
    P->launch = launch;
    P->avg = N > 0 ? 1.0f / (float)N : 0.0f;
    const int64_t cores = aclemu_soc_vector_cores();
    P->block_rows = M > 0 ? (M + cores - 1) / cores : 0;
    P->blocks = M > 0 ? (M + P->block_rows - 1) / P->block_rows : 0;
    /* rows: the core blocks (one for Ascend 950's empty rows, which writes dgamma's zeros
     * from the run's buffer); every output empty: none, no buffers */
    const int64_t blocks = M > 0 ? P->blocks : 1;
    P->h = (nr_head){.kernel = &GRAD_KERNEL, .call = P2, .names = TNAME,
                     .rows = launch ? blocks : 0, .width = N, .row_floats = ROW_BUFS * N,
                     .run_floats = blocks * N, .no_kernel = !launch};
    P->split_d = soc->npu_arch != 3510 && N > SPLIT_N_MAX;
    const int64_t align = x->dtype == ACL_FLOAT ? 8 : 16;
    P->order = soc->npu_arch == 2201 && (N + align - 1) / align * align <= SMALL_D_MAX
                   ? SUM_LANE_BLOCKS
                   : SUM_HALF_INTERVAL;
    snapshot(&P->t[T_DY], dy, (int)split);
    snapshot(&P->t[T_X], x, (int)split);
    snapshot(&P->t[T_RSTD], rstd, -1);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_DX], dxOut, (int)split);
    snapshot(&P->t[T_DGAMMA], dgammaOut, -1);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &GRAD_OPS, P, grad_workspace(soc, launch, M, N, x->dtype,
                                                    p1_deterministic()), ts, TNAME, T_COUNT,
                     T_DX, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnRmsNormGrad(void *workspace, uint64_t workspaceSize,
                                           aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
