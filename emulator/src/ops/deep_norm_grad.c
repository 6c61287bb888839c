/*
 * aclnnDeepNormGrad for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel. DeepNormGrad is the backward of DeepNorm (LayerNorm of h = x * alpha + gx over
 * gamma's trailing dims): dgx, dx = alpha * dgx, dgamma and dbeta.
 *
 * Facts, hicann/ops-nn norm/deep_norm_grad. Its aclnn interface has no op_api source: the
 * build's opbuild tool generates it from op_host/deep_norm_grad_def.cpp (ACLNNTYPE aclnn), so
 * phase one follows the documented contract, the def's dtypes and the tiling's rules, in the
 * docs' code table's order (as aclnnDeepNorm's):
 * - docs/aclnnDeepNormGrad.md: the prototype; 161001 (a required argument NULL), 161002 (a
 *   dtype outside the part's table); mean/rstd dy's batch dims, FLOAT; dbetaOut/dgammaOut
 *   FLOAT, gamma's shape;
 * - op_host/deep_norm_grad_def.cpp: dy, x, gx, gamma, dx and dgx of one dtype (FLOAT,
 *   FLOAT16, BF16 on ascend910b, ascend910_93 and ascend950; FLOAT, FLOAT16 on ascend310p),
 *   mean, rstd, dbeta, dgamma FLOAT; no configuration for the Atlas training parts
 *   (ascend910): the framework finds no kernel there (hicann/opbase indv_executor.cpp
 *   NnopbaseGetSupportInfo, ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
 * - op_host/arch22/deep_norm_grad_tiling.cpp CheckInputOutputShapeDim and
 *   CheckInputOutputShapeValue (op_host/arch35/deep_norm_grad_tiling_arch35.cpp CheckShapes
 *   for Ascend 950: the same rules, plus mean's and rstd's reduced dims 1): 561002;
 * - indv_executor.cpp NnopbaseExecutorMatchCache: every output empty, the tiling and the
 *   kernel are skipped.
 *
 * The device's numbers, per row of N elements in float (FLOAT16/BF16 widened exactly), alpha
 * a float, r the row's rstd, k = -1/N as a float (op_kernel/deep_norm_grad_merge_n.h and
 * _large_n_small_d.h MainCompute, Atlas A2/A3 and inference parts; arch35/deep_norm_grad.h,
 * Ascend 950):
 *   h = x * alpha + gx (the product rounded); xc = h - mean; g = dy * gamma;
 *   dvar = sum((xc * (r * r * r)) * g) * k; dmean = sum(g * r) * k;
 *   dgx = ((xc * dvar) + dmean) + g * r (Ascend 950: ((g * r) + xc * dvar) + dmean);
 *   dx = dgx * alpha (from dgx in float); each rounded once to its dtype (FLOAT16
 *   CAST_NONE, BF16 CAST_RINT: ties to even);
 *   dgamma = sum over rows of (xc * r) * dy, dbeta = sum over rows of dy, in float, in the
 *   order of the part's kernel (dng_payload's block_rows and kahan, below).
 * On Atlas inference parts (__CCE_AICORE__ 200) dx and dgx are not written when a row is
 * shorter than one 32-byte block (deep_norm_grad_common.h DataCopyCustom stops at
 * blockNum == 0).
 */
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

#include "aclnnop/aclnn_deep_norm_grad.h"

#define P1 "aclnnDeepNormGradGetWorkspaceSize"
#define P2 "aclnnDeepNormGrad"

enum { T_DY, T_X, T_GX, T_GAMMA, T_MEAN, T_RSTD, T_DX, T_DGX, T_DBETA, T_DGAMMA, T_COUNT };
static const char *const TNAME[T_COUNT] = {"dy",    "x",      "gx",       "gamma",
                                           "mean",  "rstd",   "dxOut",    "dgxOut",
                                           "dbetaOut", "dgammaOut"};

typedef struct {
    nr_head h; /* per chunk max(ROW_BUFS * N, COL_BUFS * the column chunk's width) floats */
    tdesc t[T_COUNT];
    int64_t M, N;
    float alpha;     /* the def's float attribute */
    float neg_inv_n; /* the kernels' -1/N */
    bool gr_first;   /* Ascend 950's dgx: (g * r + xc * dvar) + dmean */
    /* dgamma/dbeta: each block of block_rows rows (a core's rows) summed in row order from
     * zero, then the blocks' sums added in block order to zero. Atlas A2/A3 and inference
     * parts: a block per core of the tiling's split (nDealPerCore), the cores' atomic adds in
     * core order (fixedOutputFlag 1: CopyOutAfterInOrder); Ascend 950: one block, or, for
     * N < 500 and M >= 1024, its small-D split with both sums compensated (kahan). */
    int64_t block_rows;
    bool kahan;
    bool launch;     /* false: every output empty, nothing runs */
    bool write_rows; /* dxOut/dgxOut written (not on Atlas inference parts for short rows) */
} dng_payload;

/* Row buffer floats per chunk: the row pass takes 6 * N (x then terms, gx then dgx, dy, xc,
 * g, dx); the column pass 11 per column of its chunk (dy, x, gx; the block's two sums and
 * their compensations; the totals and theirs). */
#define ROW_BUFS 6
#define COL_BUFS 11

/* ---- the kernel -------------------------------------------------------------------------- */

static inline float row_scalar(const tdesc *d, int64_t m)
{
    float buf;
    return *get_tile(view_base(d), ACL_FLOAT, &d->inner, m, 1, &buf);
}

/* dx and dgx, row by row. */
static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const dng_payload *P = payload;
    if (!P->write_rows)
        return;
    const tdesc *dyd = &P->t[T_DY], *xd = &P->t[T_X], *gxd = &P->t[T_GX];
    const tdesc *dxd = &P->t[T_DX], *dgxd = &P->t[T_DGX];
    const int64_t N = P->N;
    const float alpha = P->alpha, k = P->neg_inv_n;
    const float *gamma = R->gamma;
    float *xb = nr_chunk_buf(R, chunk), *gxb = xb + N, *dyb = gxb + N;
    float *xc = dyb + N, *g = xc + N, *dx = g + N;
    for (int64_t m = begin; m < end; m++) {
        /* get_tile may return the tensor's own memory rather than fill the buffer */
        const float *x = get_tile(row_base(xd, m), xd->dtype, &xd->inner, 0, N, xb);
        const float *gx = get_tile(row_base(gxd, m), gxd->dtype, &gxd->inner, 0, N, gxb);
        const float *dy = get_tile(row_base(dyd, m), dyd->dtype, &dyd->inner, 0, N, dyb);
        const float mean = row_scalar(&P->t[T_MEAN], m), r = row_scalar(&P->t[T_RSTD], m);
        const float r3 = r * r * r;
        for (int64_t i = 0; i < N; i++) {
            const float ax = x[i] * alpha; /* rounded before the add (-std=c11: no FMA) */
            xc[i] = (ax + gx[i]) - mean;
            g[i] = dy[i] * gamma[i];
        }
        float *terms = xb, *dgx = gxb; /* x and gx are read */
        for (int64_t i = 0; i < N; i++)
            terms[i] = (xc[i] * r3) * g[i];
        const float dvar = nr_scaled_sum(terms, N, 1.0f) * k;
        for (int64_t i = 0; i < N; i++)
            terms[i] = g[i] * r;
        const float dmean = nr_scaled_sum(terms, N, 1.0f) * k;
        for (int64_t i = 0; i < N; i++) {
            const float t = xc[i] * dvar;
            dgx[i] = P->gr_first ? (terms[i] + t) + dmean : (t + dmean) + terms[i];
            dx[i] = dgx[i] * alpha;
        }
        put_tile(row_base(dgxd, m), dgxd->dtype, ACLEMU_TIES_EVEN, &dgxd->inner, 0, N, dgx);
        put_tile(row_base(dxd, m), dxd->dtype, ACLEMU_TIES_EVEN, &dxd->inner, 0, N, dx);
    }
}

/* s += v with the compensation c (Ascend 950's AccumulateKahan, step by step). */
static inline void kahan_add(float *s, float *c, float v)
{
    const float adjusted = v - *c;
    const float sum = *s + adjusted;
    *c = (sum - *s) - adjusted;
    *s = sum;
}

/* The column pass's context: the payload and the run's buffers. */
typedef struct {
    const dng_payload *P;
    const norm_rows *R;
} dng_cols;

/* dgamma and dbeta over columns [c0, c1): every row in order, per block, then the blocks. */
static void cols_body(void *ctx, int64_t chunk, int64_t c0, int64_t c1)
{
    const dng_cols *C = ctx;
    const dng_payload *P = C->P;
    const tdesc *dyd = &P->t[T_DY], *xd = &P->t[T_X], *gxd = &P->t[T_GX];
    const int64_t w = c1 - c0;
    if (w <= 0)
        return;
    float *dyb = nr_chunk_buf(C->R, chunk), *xb = dyb + w, *gxb = xb + w;
    float *bg = gxb + w, *bb = bg + w, *cg = bb + w, *cb = cg + w;
    float *tg = cb + w, *tb = tg + w, *tcg = tb + w, *tcb = tcg + w;
    memset(tg, 0, (size_t)(4 * w) * sizeof(float));
    for (int64_t b0 = 0; b0 < P->M; b0 += P->block_rows) {
        const int64_t b1 = b0 + P->block_rows < P->M ? b0 + P->block_rows : P->M;
        memset(bg, 0, (size_t)(4 * w) * sizeof(float));
        for (int64_t m = b0; m < b1; m++) {
            const float *x = get_tile(row_base(xd, m), xd->dtype, &xd->inner, c0, w, xb);
            const float *gx = get_tile(row_base(gxd, m), gxd->dtype, &gxd->inner, c0, w, gxb);
            const float *dy = get_tile(row_base(dyd, m), dyd->dtype, &dyd->inner, c0, w, dyb);
            const float mean = row_scalar(&P->t[T_MEAN], m);
            const float r = row_scalar(&P->t[T_RSTD], m);
            for (int64_t i = 0; i < w; i++) {
                const float ax = x[i] * P->alpha;
                const float xc = (ax + gx[i]) - mean;
                if (P->kahan) { /* ComputeSmallDSecondPass: (dy * xc) * r */
                    kahan_add(&bg[i], &cg[i], (dy[i] * xc) * r);
                    kahan_add(&bb[i], &cb[i], dy[i]);
                } else {
                    bg[i] += (xc * r) * dy[i];
                    bb[i] += dy[i];
                }
            }
        }
        for (int64_t i = 0; i < w; i++) {
            if (P->kahan) { /* ReduceSmallDPartials */
                kahan_add(&tg[i], &tcg[i], bg[i]);
                kahan_add(&tb[i], &tcb[i], bb[i]);
            } else {
                tg[i] += bg[i];
                tb[i] += bb[i];
            }
        }
    }
    const tdesc *dg = &P->t[T_DGAMMA], *db = &P->t[T_DBETA];
    put_tile(view_base(dg), ACL_FLOAT, ACLEMU_TIES_EVEN, &dg->inner, c0, w, tg);
    put_tile(view_base(db), ACL_FLOAT, ACLEMU_TIES_EVEN, &db->inner, c0, w, tb);
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const dng_payload *P = payload;
    if (!P->launch)
        return false;
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    return true;
}

/* After dx and dgx: dgamma and dbeta, the columns split over the chunks' row buffers. */
static void after_rows(const void *payload, norm_rows *R)
{
    dng_cols C = {payload, R};
    aclemu_parallel_for(C.P->N, R->nchunks, cols_body, &C);
}

static const nr_kernel DNG_KERNEL = NR_KERNEL(dng_payload, before_rows, rows_body, after_rows);
static const aclemu_executor_ops DNG_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

#define TILING(...) FAIL(ACLNN_ERR_INNER_TILING_ERROR, __VA_ARGS__)

/* The def's dtypes: each tensor in the part's list, then x, gx, gamma, dxOut and dgxOut dy's. */
static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const bool bf16 = soc->bf16;
    for (int i = 0; i < T_COUNT; i++) {
        const aclDataType dt = ts[i]->dtype;
        const bool f32_only = i == T_MEAN || i == T_RSTD || i == T_DBETA || i == T_DGAMMA;
        const bool ok = f32_only ? dt == ACL_FLOAT
                                 : dt == ACL_FLOAT || dt == ACL_FLOAT16 || (bf16 && dt == ACL_BF16);
        if (!ok)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
                 TNAME[i], dname(dt), soc->name, soc->series,
                 f32_only ? "FLOAT" : bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    }
    static const int SAME_AS_DY[] = {T_X, T_GX, T_GAMMA, T_DX, T_DGX};
    const aclDataType dy = ts[T_DY]->dtype;
    for (size_t k = 0; k < sizeof SAME_AS_DY / sizeof SAME_AS_DY[0]; k++)
        if (ts[SAME_AS_DY[k]]->dtype != dy)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be dy's dtype %s", P1,
                 TNAME[SAME_AS_DY[k]], dname(ts[SAME_AS_DY[k]]->dtype), dname(dy));
    return ACLNN_SUCCESS;
}

static aclnnStatus rank_error(const char *name, uint64_t rank, const char *rule)
{
    TILING("%s: %s rank %llu %s", P1, name, (unsigned long long)rank, rule);
}

/* The arch22 tiling's rules in its order (CheckInputOutputShapeDim, then
 * CheckInputOutputShapeValue: dy's zero dims, only when something runs (launch), and x, gx,
 * dxOut, dgxOut of dy's shape; mean's and rstd's batch dims; gamma, dgammaOut, dbetaOut dy's
 * trailing dims), then mean's and rstd's reduced dims 1 (Ascend 950's CheckShapes; stricter
 * on the other parts, docs/emulator.md). */
static aclnnStatus check_shapes(const aclTensor *const *ts, bool launch)
{
    const aclTensor *dy = ts[T_DY], *gamma = ts[T_GAMMA];
    const uint64_t dr = dy->ndim, gr = gamma->ndim;
    if (dr < 2 || dr > 8)
        return rank_error("dy", dr, "is not in [2, 8]");
    if (gr < 1 || gr > 7)
        return rank_error("gamma", gr, "is not in [1, 7]");
    static const int LIKE_DY[] = {T_X, T_GX, T_DX, T_DGX, T_RSTD, T_MEAN};
    for (size_t k = 0; k < sizeof LIKE_DY / sizeof LIKE_DY[0]; k++)
        if (ts[LIKE_DY[k]]->ndim != dr)
            return rank_error(TNAME[LIKE_DY[k]], ts[LIKE_DY[k]]->ndim, "must equal dy's rank");
    static const int LIKE_GAMMA[] = {T_DGAMMA, T_DBETA};
    for (size_t k = 0; k < 2; k++)
        if (ts[LIKE_GAMMA[k]]->ndim != gr)
            return rank_error(TNAME[LIKE_GAMMA[k]], ts[LIKE_GAMMA[k]]->ndim,
                              "must equal gamma's rank");
    if (dr <= gr)
        TILING("%s: dy rank %llu must be greater than gamma rank %llu", P1,
               (unsigned long long)dr, (unsigned long long)gr);
    char s1[256], s2[256];
    fmt_dims(s2, sizeof s2, dy->dims, dr);
    if (launch)
        for (uint64_t i = 0; i < dr; i++)
            if (dy->dims[i] == 0)
                TILING("%s: dy %s has a zero dim while dgammaOut and dbetaOut are not empty "
                       "(dy may be empty only in gamma's dims)", P1, s2);
    static const int SHAPED_AS_DY[] = {T_X, T_GX, T_DX, T_DGX};
    for (size_t k = 0; k < sizeof SHAPED_AS_DY / sizeof SHAPED_AS_DY[0]; k++) {
        const aclTensor *t = ts[SHAPED_AS_DY[k]];
        if (!same_dims(t->dims, t->ndim, dy->dims, dr)) {
            fmt_dims(s1, sizeof s1, t->dims, t->ndim);
            TILING("%s: %s shape %s must equal dy's shape %s", P1, TNAME[SHAPED_AS_DY[k]], s1,
                   s2);
        }
    }
    const uint64_t split = dr - gr;
    static const int STATS[] = {T_RSTD, T_MEAN};
    for (size_t k = 0; k < 2; k++)
        for (uint64_t i = 0; i < split; i++)
            if (ts[STATS[k]]->dims[i] != dy->dims[i]) {
                fmt_dims(s1, sizeof s1, ts[STATS[k]]->dims, dr);
                TILING("%s: %s shape %s must begin with dy's batch dims (dy %s, gamma of rank "
                       "%llu)", P1, TNAME[STATS[k]], s1, s2, (unsigned long long)gr);
            }
    static const int PARAMS[] = {T_GAMMA, T_DGAMMA, T_DBETA};
    for (size_t k = 0; k < sizeof PARAMS / sizeof PARAMS[0]; k++)
        for (uint64_t i = 0; i < gr; i++)
            if (ts[PARAMS[k]]->dims[i] != dy->dims[split + i]) {
                fmt_dims(s1, sizeof s1, ts[PARAMS[k]]->dims, gr);
                TILING("%s: %s shape %s must equal the last %llu dims of dy %s", P1,
                       TNAME[PARAMS[k]], s1, (unsigned long long)gr, s2);
            }
    for (size_t k = 0; k < 2; k++)
        for (uint64_t i = split; i < dr; i++)
            if (ts[STATS[k]]->dims[i] != 1) {
                fmt_dims(s1, sizeof s1, ts[STATS[k]]->dims, dr);
                TILING("%s: %s shape %s must be dy's batch dims then ones (dy %s, gamma of rank "
                       "%llu)", P1, TNAME[STATS[k]], s1, s2, (unsigned long long)gr);
            }
    return ACLNN_SUCCESS;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

ACLEMU_EXPORT aclnnStatus aclnnDeepNormGradGetWorkspaceSize(
    const aclTensor *dy, const aclTensor *x, const aclTensor *gx, const aclTensor *gamma,
    const aclTensor *mean, const aclTensor *rstd, double alpha, const aclTensor *dxOut,
    const aclTensor *dgxOut, const aclTensor *dbetaOut, const aclTensor *dgammaOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {dy,    x,      gx,       gamma,    mean,
                                    rstd,  dxOut,  dgxOut,   dbetaOut, dgammaOut};

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
     * tiling and the kernel (stricter, docs/emulator.md: the shape rules but dy's zero dims
     * hold there too) */
    int64_t DX = 0, DGX = 0, DG = 0, DB = 0;
    if (!numel(dxOut->dims, dxOut->ndim, &DX) || !numel(dgxOut->dims, dgxOut->ndim, &DGX) ||
        !numel(dgammaOut->dims, dgammaOut->ndim, &DG) ||
        !numel(dbetaOut->dims, dbetaOut->ndim, &DB))
        TILING("%s: an element count overflows int64", P1);
    const bool launch = DX != 0 || DGX != 0 || DG != 0 || DB != 0;
    if ((st = check_shapes(ts, launch)))
        return st;
    const uint64_t split = dy->ndim - gamma->ndim;
    int64_t M = 0, N = 0;
    if (!numel(dy->dims, split, &M) || !numel(gamma->dims, gamma->ndim, &N))
        TILING("%s: an element count overflows int64", P1);

    dng_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    P->M = M;
    P->N = N;
    P->launch = launch;
    P->alpha = (float)alpha;
    /* arch22: (float)-1.0 / N in float; arch35: -(float)(1.0 / N): the same float below 2^24 */
    P->neg_inv_n = N == 0 ? 0.0f
                   : soc->npu_arch == 3510 ? -(float)(1.0 / (double)N)
                                           : -1.0f / (float)N;
    const bool a950 = soc->npu_arch == 3510;
    P->gr_first = a950;
    const int64_t cores = aclemu_soc_vector_cores();
    const int64_t es = (int64_t)aclemu_dtype_size(dy->dtype);
    if (M == 0) {
        P->block_rows = 1;
    } else if (!a950) { /* the arch22 tiling's SetBaseConfig: nDealPerCore */
        const int64_t used = ceil_div(M, ceil_div(M, cores));
        P->block_rows = ceil_div(M, used);
    } else if (N < 500 && M >= 1024) { /* arch35 SetTilingData: gammaBetaRowSplit */
        const int64_t align = 32 / gcd64(N * es, 32);
        P->block_rows = ceil_div(ceil_div(M, cores), align) * align;
        P->kahan = true;
    } else { /* ProcessGammaBeta: every row in order per column */
        P->block_rows = M;
    }
    P->write_rows = soc->npu_arch != 2002 || N * es >= 32;
    /* the task's chunks (NR_MAX_CHUNKS at most); the column pass splits N into as many */
    const int64_t rows = launch ? M : 0;
    const int64_t chunks = rows < NR_MAX_CHUNKS ? rows : NR_MAX_CHUNKS;
    const int64_t width = chunks > 0 ? (N + chunks - 1) / chunks : 0;
    P->h = (nr_head){.kernel = &DNG_KERNEL, .call = P2, .names = TNAME, .rows = rows,
                     .width = N,
                     .row_floats = ROW_BUFS * N > COL_BUFS * width ? ROW_BUFS * N
                                                                  : COL_BUFS * width,
                     .no_kernel = !launch};
    const int s = (int)split;
    snapshot(&P->t[T_DY], dy, s);
    snapshot(&P->t[T_X], x, s);
    snapshot(&P->t[T_GX], gx, s);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_MEAN], mean, -1);
    snapshot(&P->t[T_RSTD], rstd, -1);
    snapshot(&P->t[T_DX], dxOut, s);
    snapshot(&P->t[T_DGX], dgxOut, s);
    snapshot(&P->t[T_DBETA], dbetaOut, -1);
    snapshot(&P->t[T_DGAMMA], dgammaOut, -1);
    /* Phase one's workspace on a device: the generated interface reports its tiling's one
     * workspace as it is, none when no kernel runs (docs/emulator.md "Phase one's workspace
     * size"): 16 MiB of system workspace and 20 MiB of its own from the arch22 tiling
     * (arch22/deep_norm_grad_tiling.cpp SetWorkspace); on Ascend 950 none, but with
     * gammaBetaRowSplit (P->kahan) the platform's system workspace plus two float rows of N
     * (aligned to 64) per block of rows (arch35/deep_norm_grad_tiling_arch35.cpp
     * SetTilingData) */
    uint64_t ws = 0;
    if (launch && !a950)
        ws = EW_SYS_WORKSPACE + (uint64_t)20 * 1024 * 1024;
    else if (launch && P->kahan)
        ws = ew_lib_api_workspace(soc) +
             (uint64_t)ceil_div(M, P->block_rows) * 2 * (uint64_t)((N + 63) / 64 * 64) * 4;
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &DNG_OPS, P, ws, ts, TNAME, T_COUNT, T_DX, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnDeepNormGrad(void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
