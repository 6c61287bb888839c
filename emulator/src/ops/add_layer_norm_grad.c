/*
 * aclnnAddLayerNormGrad for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel.
 *
 * Facts, hicann/ops-nn norm/add_layer_norm_grad. Its aclnn interface has no op_api source: the
 * build's opbuild tool generates it from op_host/add_layer_norm_grad_def.cpp, so phase one
 * follows the documented contract, the def's dtype combinations and the tiling's rules, in the
 * docs' code table's order:
 * - docs/aclnnAddLayerNormGrad.md: the prototype; 161001 (a required argument NULL), 161002 (a
 *   dtype outside the part's table); dsumOptional, x1, x2 and dxOut shaped and typed like dy;
 *   rstd/mean FLOAT, dy's batch dims then ones; dgammaOut/dbetaOut FLOAT, gamma's shape;
 * - op_host/add_layer_norm_grad_def.cpp: dy, x1, x2, gamma, dsum and dx of one dtype (FLOAT,
 *   FLOAT16, BF16; no BF16 on ascend310p), rstd, mean, dgamma, dbeta FLOAT; no configuration
 *   for the Atlas training parts (ascend910): the framework finds no kernel there (hicann/
 *   opbase src/nnopbase/individual_op/executor/indv_executor.cpp NnopbaseGetSupportInfo,
 *   ACLNN_ERR_INNER_FIND_KERNEL_ERROR);
 * - op_host/add_layer_norm_grad_tiling.cpp (and _arch35.cpp, the same rules) BasicCheck and
 *   CheckInputOutputShape: the shape rules, in their order (561002);
 * - indv_executor.cpp NnopbaseExecutorMatchCache: every output empty, the tiling and the
 *   kernel are skipped.
 *
 * The device's numbers (op_kernel/add_layer_norm_grad_cut_n.h MainCompute; arch35/'s
 * add_layer_norm_grad_cut_n.h for Ascend 950 takes the same steps), per row of N elements in
 * float (FLOAT16/BF16 inputs cast to float first), ras = 1.0f / (float)N, r = rstd of the row:
 *   x = x1 + x2; g = dy * gamma; xc = x + (-mean);
 *   pdVar = sum(g * (xc * (r * r * r))) * -ras;
 *   pdMean = sum(-(g * r)) * ras;
 *   dx = ((xc * pdVar + g * r) + pdMean) (+ dsum), rounded once to dx's dtype (FLOAT16
 *   CAST_NONE, BF16 CAST_RINT: ties to even);
 *   dgamma += dy * (xc * r), dbeta += dy, staged as the kernel stages them (below).
 * Rows too long for the UB take the cut-D kernel (add_layer_norm_grad_cut_d.h, arch35/'s): a
 * row in pieces of the tiling's dInnerLength, pdVar's and pdMean's sums each the pieces'
 * float sums added in order onto 0.0f; its dx is ((xc * pdVar + pdMean) + g * r) (+ dsum)
 * off Ascend 950 (MainComputeSecondPart), arch35/'s keeps the order above.
 * The staging of dgamma/dbeta (op_host/add_layer_norm_grad_tiling.cpp and _arch35.cpp: the
 * same split; op_kernel/add_layer_norm_grad_cut_n.h CutNProcess, PrecisionCompute, CopyOut;
 * add_layer_norm_grad_cut_d.h; add_layer_norm_determinstic_compute.h; arch35/ the same):
 * - the rows in core blocks of ceil(M / cores) (the part's vector cores), numCore of them;
 * - a core takes its rows in passes of nAvailInUb (what fits the UB, AddLayerNormGradTilingImpl;
 *   one row per pass on the cut-D path, whose rows are too long for one buffer); each pass's
 *   sums start at zero and take its rows in order, then go into the core's workspace row
 *   (zeroed first) with an atomic add, passes in order;
 * - deterministic mode (isDeterministicKey, the level from GetDeterministic()): after SyncAll
 *   FinalProcessDeterministic adds the numCore workspace rows in core order onto zeros;
 * - otherwise each pass's sums go atomically into the outputs (zeroed first, InitGmData) in
 *   arrival order, which the device leaves open: the emulator adds them core after core.
 * The emulator runs dx over the rows, then dgamma/dbeta over slices of columns, each column
 * summed in that order whole, so the split over threads never changes a bit.
 *
 * The arithmetic is not aclnnLayerNormBackward's (that kernel scales two row means and takes
 * rstd * ((g - mg) - x_hat * mgx)), so its row kernel is not shared: this one runs on
 * norm_rows.h, as AddLayerNorm's forward does.
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

#include "aclnnop/aclnn_add_layer_norm_grad.h"

#define P1 "aclnnAddLayerNormGradGetWorkspaceSize"
#define P2 "aclnnAddLayerNormGrad"

enum { T_DY, T_X1, T_X2, T_RSTD, T_MEAN, T_GAMMA, T_DSUM, T_DX, T_DGAMMA, T_DBETA, T_COUNT };
static const char *const TNAME[T_COUNT] = {"dy",    "x1",           "x2",    "rstd",
                                           "mean",  "gamma",        "dsumOptional",
                                           "dxOut", "dgammaOut",    "dbetaOut"};

typedef struct {
    nr_head h; /* per chunk ROW_BUFS * N floats */
    tdesc t[T_COUNT];
    int64_t M, N;
    int64_t block_rows; /* rows per core: nInOneCoreLength, ceil(M / cores) */
    int64_t blocks;     /* cores used: numCore, ceil(M / block_rows) */
    int64_t pass_rows;  /* rows per pass of a core: nAvailInUb (1 on the cut-D path) */
    int64_t d_inner;    /* a row's piece on the cut-D path (dInnerLength); N on the cut-N */
    bool cut_d;         /* the cut-D kernel (tiling keys 40..61): no whole row fits the UB */
    bool dx_mean_first; /* its dx adds pdMean before g * r (not on Ascend 950's) */
    bool staged;        /* deterministic mode (the level phase one read >= 1) */
    float ras;   /* the kernel's reduceAxisSize, 1.0f / (float)N */
    bool launch; /* false: every output empty, nothing runs */
} alng_payload;

/* Row buffer floats per chunk: x, g, xc, dy, dx, dsum (N each) for dx; the column pass's
 * slices of w <= N columns take 7 w (x1, x2, dy, a pass's dgamma and dbeta sums, a core's). */
#define ROW_BUFS 7

/* ---- the kernel -------------------------------------------------------------------------- */

/* A row's sum of its N terms t. The cut-N kernel reduces the whole row at once; the cut-D
 * kernel (add_layer_norm_grad_cut_d.h and arch35/'s MainComputeFirstPart, ReduceSumCustom)
 * reduces each piece of d_inner terms (the last one shorter) and adds the pieces' float sums in
 * order onto a float accumulator duplicated from 0.0f (Adds on tmpVarPdLocal/tmpMeanPdLocal).
 * Each piece, like the whole row, in norm_rows.h's order. */
static float row_sum(const alng_payload *P, const float *t)
{
    if (!P->cut_d)
        return nr_scaled_sum(t, P->N, 1.0f);
    float acc = 0.0f;
    for (int64_t c = 0; c < P->N; c += P->d_inner)
        acc = acc + nr_scaled_sum(t + c, P->N - c < P->d_inner ? P->N - c : P->d_inner, 1.0f);
    return acc;
}

/* Rows [begin, end): dx. dgamma/dbeta come after every row (after_rows). */
static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const alng_payload *P = payload;
    const tdesc *dyd = &P->t[T_DY], *x1 = &P->t[T_X1], *x2 = &P->t[T_X2];
    const tdesc *rs = &P->t[T_RSTD], *mn = &P->t[T_MEAN], *ds = &P->t[T_DSUM];
    const tdesc *dxd = &P->t[T_DX];
    const int64_t N = P->N;
    const float *gamma = R->gamma;
    float *x = nr_chunk_buf(R, chunk), *g = x + N, *xc = g + N, *dyb = xc + N;
    float *dx = dyb + N, *dsb = dx + N;
    for (int64_t m = begin; m < end; m++) {
        const float *a = get_tile(row_base(x1, m), x1->dtype, &x1->inner, 0, N, x);
        const float *b = get_tile(row_base(x2, m), x2->dtype, &x2->inner, 0, N, g);
        for (int64_t i = 0; i < N; i++)
            x[i] = a[i] + b[i]; /* a may be x itself: element-wise, in order */
        const float *dy = get_tile(row_base(dyd, m), dyd->dtype, &dyd->inner, 0, N, dyb);
        /* get_tile may return the tensor's own memory rather than fill the buffer */
        float mbuf, rbuf;
        const float mean = *get_tile(view_base(mn), ACL_FLOAT, &mn->inner, m, 1, &mbuf);
        const float r = *get_tile(view_base(rs), ACL_FLOAT, &rs->inner, m, 1, &rbuf);
        const float r3 = r * r * r, neg_mean = mean * -1.0f;
        for (int64_t i = 0; i < N; i++) {
            g[i] = dy[i] * gamma[i];
            xc[i] = x[i] + neg_mean;
        }
        /* pdVar's terms, then pdMean's (x and dx are free now) */
        for (int64_t i = 0; i < N; i++) {
            x[i] = g[i] * (xc[i] * r3);
            dx[i] = (g[i] * r) * -1.0f;
        }
        const float pd_var = row_sum(P, x) * -P->ras, pd_mean = row_sum(P, dx) * P->ras;
        if (P->dx_mean_first)
            for (int64_t i = 0; i < N; i++)
                dx[i] = (xc[i] * pd_var + pd_mean) + g[i] * r;
        else
            for (int64_t i = 0; i < N; i++)
                dx[i] = (xc[i] * pd_var + g[i] * r) + pd_mean;
        if (ds->present) {
            const float *d = get_tile(row_base(ds, m), ds->dtype, &ds->inner, 0, N, dsb);
            for (int64_t i = 0; i < N; i++)
                dx[i] += d[i];
        }
        put_tile(row_base(dxd, m), dxd->dtype, ACLEMU_TIES_EVEN, &dxd->inner, 0, N, dx);
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const alng_payload *P = payload;
    if (!P->launch)
        return false;
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    return true;
}

/* Rows [m0, m1) of one pass onto its zeroed sums over columns [c0, c0 + w), in row order
 * (PrecisionCompute's Add(outputDgamma, outputDgamma, dy * (xc * r)), Add(outputDbeta, ...)). */
static void pass_sums(const alng_payload *P, float *buf, int64_t c0, int64_t w, int64_t m0,
                      int64_t m1, float *pg, float *pb)
{
    const tdesc *dyd = &P->t[T_DY], *x1 = &P->t[T_X1], *x2 = &P->t[T_X2];
    const tdesc *rs = &P->t[T_RSTD], *mn = &P->t[T_MEAN];
    memset(pg, 0, (size_t)w * sizeof(float));
    memset(pb, 0, (size_t)w * sizeof(float));
    for (int64_t m = m0; m < m1; m++) {
        const float *a = get_tile(row_base(x1, m), x1->dtype, &x1->inner, c0, w, buf);
        const float *b = get_tile(row_base(x2, m), x2->dtype, &x2->inner, c0, w, buf + w);
        const float *dy = get_tile(row_base(dyd, m), dyd->dtype, &dyd->inner, c0, w, buf + 2 * w);
        float mbuf, rbuf;
        const float mean = *get_tile(view_base(mn), ACL_FLOAT, &mn->inner, m, 1, &mbuf);
        const float r = *get_tile(view_base(rs), ACL_FLOAT, &rs->inner, m, 1, &rbuf);
        const float neg_mean = mean * -1.0f;
        for (int64_t i = 0; i < w; i++) {
            const float xc = (a[i] + b[i]) + neg_mean;
            pg[i] = pg[i] + dy[i] * (xc * r);
            pb[i] = pb[i] + dy[i];
        }
    }
}

typedef struct {
    const alng_payload *P;
    const norm_rows *R;
    float *sum; /* dgamma's N floats, then dbeta's */
} column_pass;

/* dgamma/dbeta over columns [c0, c1), as the kernel stages them: the cores (blocks of
 * block_rows rows) in order, each core's passes of pass_rows rows in order. Deterministic
 * (staged): a pass's sums added onto the core's zeroed workspace row (CopyOut's atomic add;
 * one core's adds keep program order), then FinalProcessDeterministic's Add(acc, row, acc):
 * the cores' rows in core order onto zeros. Otherwise each pass's sums added straight onto
 * the zeroed outputs (InitGmData, then CopyOut's atomic add), the cores one after another:
 * one order the device's atomic adds can take. */
static void column_sums(void *ctx, int64_t chunk, int64_t c0, int64_t c1)
{
    const column_pass *C = ctx;
    const alng_payload *P = C->P;
    const int64_t w = c1 - c0;
    float *buf = nr_chunk_buf(C->R, chunk), *pg = buf + 3 * w, *pb = pg + w;
    float *wg = pb + w, *wb = wg + w;
    float *dg = C->sum + c0, *db = C->sum + P->N + c0;
    memset(dg, 0, (size_t)w * sizeof(float));
    memset(db, 0, (size_t)w * sizeof(float));
    for (int64_t k = 0; k < P->blocks; k++) {
        const int64_t m1 = (k + 1) * P->block_rows < P->M ? (k + 1) * P->block_rows : P->M;
        float *cg = P->staged ? wg : dg, *cb = P->staged ? wb : db;
        if (P->staged) {
            memset(wg, 0, (size_t)w * sizeof(float));
            memset(wb, 0, (size_t)w * sizeof(float));
        }
        for (int64_t p0 = k * P->block_rows; p0 < m1; p0 += P->pass_rows) {
            pass_sums(P, buf, c0, w, p0, p0 + P->pass_rows < m1 ? p0 + P->pass_rows : m1, pg, pb);
            for (int64_t i = 0; i < w; i++) {
                cg[i] = cg[i] + pg[i];
                cb[i] = cb[i] + pb[i];
            }
        }
        if (P->staged)
            for (int64_t i = 0; i < w; i++) {
                dg[i] = wg[i] + dg[i];
                db[i] = wb[i] + db[i];
            }
    }
}

/* The columns in slices of at least COLUMN_MIN (fewer rows' pieces to read), one thread a
 * slice: every column's sums keep the kernel's order whatever the split. */
#define COLUMN_MIN 64

static void after_rows(const void *payload, norm_rows *R)
{
    const alng_payload *P = payload;
    const int64_t N = P->N;
    /* gamma is read: its buffer's 2 N floats are free */
    column_pass C = {.P = P, .R = R, .sum = R->gamma_buf};
    const int64_t slices = N / COLUMN_MIN < R->nchunks ? N / COLUMN_MIN : R->nchunks;
    aclemu_parallel_for(N, slices > 1 ? slices : 1, column_sums, &C);
    put_tile(view_base(&P->t[T_DGAMMA]), ACL_FLOAT, ACLEMU_TIES_EVEN, &P->t[T_DGAMMA].inner, 0,
             N, C.sum);
    put_tile(view_base(&P->t[T_DBETA]), ACL_FLOAT, ACLEMU_TIES_EVEN, &P->t[T_DBETA].inner, 0,
             N, C.sum + N);
}

static const nr_kernel ALNG_KERNEL = NR_KERNEL(alng_payload, before_rows, rows_body,
                                               after_rows);
static const aclemu_executor_ops ALNG_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one -------------------------------------------------------------------------------- */

#define TILING(...) FAIL(ACLNN_ERR_INNER_TILING_ERROR, __VA_ARGS__)

/* The def's dtypes: every tensor of its list, then the combination (dy's dtype for the data
 * tensors; rstd, mean, dgammaOut and dbetaOut FLOAT). */
static aclnnStatus check_dtypes(const aclTensor *const *ts, const aclemu_soc *soc)
{
    const bool bf16 = soc->bf16;
    for (int i = 0; i < T_COUNT; i++) {
        if (!ts[i])
            continue;
        const aclDataType dt = ts[i]->dtype;
        const bool f32_only = i == T_RSTD || i == T_MEAN || i == T_DGAMMA || i == T_DBETA;
        const bool ok = f32_only ? dt == ACL_FLOAT
                                 : dt == ACL_FLOAT || dt == ACL_FLOAT16 || (bf16 && dt == ACL_BF16);
        if (!ok)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
                 TNAME[i], dname(dt), soc->name, soc->series,
                 f32_only ? "FLOAT" : bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    }
    static const int SAME_AS_DY[] = {T_X1, T_X2, T_GAMMA, T_DSUM, T_DX};
    const aclDataType dy = ts[T_DY]->dtype;
    for (size_t k = 0; k < sizeof SAME_AS_DY / sizeof SAME_AS_DY[0]; k++) {
        const aclTensor *t = ts[SAME_AS_DY[k]];
        if (t && t->dtype != dy)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be dy's dtype %s", P1,
                 TNAME[SAME_AS_DY[k]], dname(t->dtype), dname(dy));
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus rank_equal(const aclTensor *const *ts, int a, int b)
{
    if (ts[a]->ndim != ts[b]->ndim)
        TILING("%s: %s rank %llu != %s rank %llu", P1, TNAME[a], (unsigned long long)ts[a]->ndim,
               TNAME[b], (unsigned long long)ts[b]->ndim);
    return ACLNN_SUCCESS;
}

static aclnnStatus shape_equal(const aclTensor *const *ts, int a, int b)
{
    const aclTensor *t = ts[a], *ref = ts[b];
    if (!same_dims(t->dims, t->ndim, ref->dims, ref->ndim)) {
        char s1[256], s2[256];
        fmt_dims(s1, sizeof s1, t->dims, t->ndim);
        fmt_dims(s2, sizeof s2, ref->dims, ref->ndim);
        TILING("%s: %s shape %s != %s shape %s", P1, TNAME[a], s1, TNAME[b], s2);
    }
    return ACLNN_SUCCESS;
}

static bool has_zero_dim(const aclTensor *t)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] == 0)
            return true;
    return false;
}

/* AddLayerNormGradTilingImpl (add_layer_norm_grad_tiling.cpp; _arch35.cpp the same) on the UB
 * less 1280 bytes (WORKSPACE_SIZE, SYNC_SAPCE, REDUCE_BUF): rows per pass of a core
 * (nAvailInUb) are what is left after the rows held once (FLOAT: four of ceil8(N) floats;
 * FLOAT16/BF16: three float rows and one 16-bit row) over what a row takes (FLOAT: five rows,
 * six with dsum, and 16 floats of mean/rstd; FLOAT16/BF16: four float and four 16-bit rows,
 * five each with dsum, and 64 bytes). No whole row fits: the cut-D path, one row a pass, in
 * pieces of dInnerLength: FLOAT the UB's floats less 16 over 9 (10 with dsum) buffers,
 * FLOAT16/BF16 its bytes over 38 (44) bytes an element, each through the tiling's ROUND_DOWN,
 * (x - f + 1) / f * f, which takes a whole f off an exact multiple. N: the tiling's
 * numLastDim (a uint32). */
static void tiling_split(alng_payload *P, aclDataType dt, bool dsum, uint32_t N)
{
    const uint32_t avail = (uint32_t)aclemu_soc_ub_bytes() - 512 - 512 - 64 * 4;
    const int64_t r8 = ((int64_t)N + 7) / 8 * 8, r16 = ((int64_t)N + 15) / 16 * 16;
    int64_t nd, per_row;
    if (dt == ACL_FLOAT) { /* counted in floats */
        nd = avail / 4 - r8 * 4;
        per_row = r8 * (dsum ? 6 : 5) + 8 * 2;
    } else { /* in bytes */
        nd = avail - (r8 * 3 * 4 + r16 * 2);
        per_row = 8 * 2 * 4 + r8 * (dsum ? 5 : 4) * 4 + r16 * (dsum ? 5 : 4) * 2;
    }
    P->cut_d = nd < 0 || nd / per_row < 1;
    P->pass_rows = P->cut_d ? 1 : nd / per_row;
    P->d_inner = N;
    if (P->cut_d) {
        const uint32_t f = dt == ACL_FLOAT ? 8 : 16;
        const uint32_t d = dt == ACL_FLOAT ? (avail / 4 - 16) / (dsum ? 10 : 9)
                                           : avail / (dsum ? (5 + 1) * 2 + (5 + 3) * 4
                                                           : (4 + 1) * 2 + (4 + 3) * 4);
        P->d_inner = (d - f + 1) / f * f;
    }
}

/* The tiling's uint32 product of dims [0, n) of t (BasicCheck's numLastDim of gamma, the
 * tilings' numFirstDim of dy's batch dims). Atlas A2/A3 and inference
 * (add_layer_norm_grad_tiling.cpp): a uint32 product, so modulo 2^32. Ascend 950
 * (_tiling_arch35.cpp): a product past 2^32 - 1 is refused, checked dim by dim while the
 * product is not zero; `what` names it. */
static aclnnStatus uint32_product(const aclTensor *t, uint64_t n, bool regbase, const char *what,
                                  uint32_t *out)
{
    uint64_t v = 1;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t d = (uint64_t)t->dims[i];
        if (regbase && v != 0 && d > UINT32_MAX / v)
            TILING("%s: %s exceeds the tiling's uint32 range (Ascend 950 refuses more than "
                   "%llu)", P1, what, (unsigned long long)UINT32_MAX);
        v = regbase ? v * d : (uint32_t)(v * d);
    }
    *out = (uint32_t)v;
    return ACLNN_SUCCESS;
}

static aclnnStatus num_last_dim(const aclTensor *gamma, bool regbase, uint32_t *n32)
{
    return uint32_product(gamma, gamma->ndim, regbase, "gamma's element count", n32);
}

/* The tilings' CEIL_DIV, in uint32: x + y - 1 wraps for x near 2^32; 0 for y == 0. */
static uint32_t ceil_div_u32(uint32_t x, uint32_t y)
{
    return y > 0 ? (uint32_t)(x + y - 1) / y : 0;
}

/* BasicCheck's and CheckInputOutputShape's rules in their order; the empty-tensor ones only
 * when something runs (launch: the framework skips the tiling when every output is empty;
 * stricter there, docs/emulator.md: the other rules hold too). */
static aclnnStatus check_shapes(const aclTensor *const *ts, bool launch, bool regbase)
{
    const aclTensor *dy = ts[T_DY], *x1 = ts[T_X1], *gamma = ts[T_GAMMA], *mean = ts[T_MEAN];
    aclnnStatus st;
    if (launch) {
        uint32_t n32;
        if ((st = num_last_dim(gamma, regbase, &n32)))
            return st;
        if (n32 == 0)
            TILING("%s: gamma has no elements%s", P1,
                   has_zero_dim(gamma) ? "" : " in the tiling's uint32 numLastDim (its element "
                                              "count is a multiple of 2^32)");
    }
    if (x1->ndim < 1 || x1->ndim > TV_MAX_RANK)
        TILING("%s: x1 rank %llu is not in [1, %d]", P1, (unsigned long long)x1->ndim,
               TV_MAX_RANK);
    if (gamma->ndim < 1 || gamma->ndim > TV_MAX_RANK)
        TILING("%s: gamma rank %llu is not in [1, %d]", P1, (unsigned long long)gamma->ndim,
               TV_MAX_RANK);
    if ((st = rank_equal(ts, T_RSTD, T_DY)) || (st = rank_equal(ts, T_MEAN, T_DY)) ||
        (st = rank_equal(ts, T_DGAMMA, T_GAMMA)) || (st = rank_equal(ts, T_DBETA, T_GAMMA)))
        return st;
    if (dy->ndim < gamma->ndim)
        TILING("%s: dy rank %llu < gamma rank %llu", P1, (unsigned long long)dy->ndim,
               (unsigned long long)gamma->ndim);
    if (launch && (has_zero_dim(x1) || has_zero_dim(mean))) {
        char s1[256], s2[256];
        fmt_dims(s1, sizeof s1, x1->dims, x1->ndim);
        fmt_dims(s2, sizeof s2, mean->dims, mean->ndim);
        TILING("%s: x1 %s or mean %s has a zero dim", P1, s1, s2);
    }
    if ((st = shape_equal(ts, T_X1, T_DY)) || (st = shape_equal(ts, T_X2, T_DY)) ||
        (st = shape_equal(ts, T_DX, T_DY)) || (st = shape_equal(ts, T_RSTD, T_MEAN)))
        return st;
    char s1[256], s2[256];
    fmt_dims(s2, sizeof s2, dy->dims, dy->ndim);
    const uint64_t split = dy->ndim - gamma->ndim;
    fmt_dims(s1, sizeof s1, gamma->dims, gamma->ndim);
    for (uint64_t i = 0; i < gamma->ndim; i++)
        if (gamma->dims[i] != dy->dims[split + i])
            TILING("%s: gamma shape %s must equal the last %llu dims of dy %s", P1, s1,
                   (unsigned long long)gamma->ndim, s2);
    fmt_dims(s1, sizeof s1, mean->dims, mean->ndim);
    for (uint64_t i = 0; i < dy->ndim; i++)
        if (mean->dims[i] != (i < split ? dy->dims[i] : 1))
            TILING("%s: mean shape %s must be dy's batch dims then ones (dy %s, gamma of rank "
                   "%llu)", P1, s1, s2, (unsigned long long)gamma->ndim);
    if ((st = shape_equal(ts, T_DGAMMA, T_GAMMA)) || (st = shape_equal(ts, T_DBETA, T_GAMMA)))
        return st;
    /* Stricter (docs/emulator.md): the docs' shape for dsumOptional, dy's; the tiling does
     * not look at it and the kernel reads it with dy's layout */
    if (ts[T_DSUM] && (st = shape_equal(ts, T_DSUM, T_DY)))
        return st;
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnAddLayerNormGradGetWorkspaceSize(
    const aclTensor *dy, const aclTensor *x1, const aclTensor *x2, const aclTensor *rstd,
    const aclTensor *mean, const aclTensor *gamma, const aclTensor *dsumOptional,
    const aclTensor *dxOut, const aclTensor *dgammaOut, const aclTensor *dbetaOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {dy,           x1,    x2,        rstd,    mean,
                                    gamma,        dsumOptional, dxOut, dgammaOut, dbetaOut};

    /* 0. the out-pointers, 1. every tensor but dsumOptional required (161001), all live,
     * 2. no kernel on the Atlas training parts (561003; docs/emulator.md) */
    const aclemu_soc *soc;
    aclnnStatus st = p1_generated_opening(P1, ts, TNAME, T_COUNT, T_DSUM, workspaceSize,
                                          executor, &soc);
    if (st)
        return st;
    /* 3. dtypes (161002) */
    if ((st = check_dtypes(ts, soc)))
        return st;
    /* 4. the tiling's shape rules (561002) */
    int64_t X = 0, G = 0;
    if (!numel(dxOut->dims, dxOut->ndim, &X) || !numel(gamma->dims, gamma->ndim, &G))
        TILING("%s: an element count overflows int64", P1);
    int64_t DG = 0, DB = 0;
    if (!numel(dgammaOut->dims, dgammaOut->ndim, &DG) ||
        !numel(dbetaOut->dims, dbetaOut->ndim, &DB))
        TILING("%s: an element count overflows int64", P1);
    const bool launch = X != 0 || DG != 0 || DB != 0;
    const bool regbase = soc->npu_arch == 3510; /* Ascend 950: _tiling_arch35.cpp */
    if ((st = check_shapes(ts, launch, regbase)))
        return st;
    const uint64_t split = dy->ndim - gamma->ndim;
    int64_t M = 0;
    if (!numel(dy->dims, split, &M))
        TILING("%s: an element count overflows int64", P1);
    /* The tiling's own sizes, in its uint32 (docs/emulator.md): numLastDim and numFirstDim
     * (modulo 2^32, or refused on Ascend 950), numCore = CEIL_DIV(numFirstDim,
     * CEIL_DIV(numFirstDim, cores)); Ascend 950 also refuses a core's nInOneCoreLength x
     * numLastDim elements past 2^32 - 1. Only the deterministic workspace shows them: inputs
     * where they differ from the true sizes are far too large to run here. */
    uint32_t n32 = 0, num_core = 0;
    if (launch) {
        uint32_t m32;
        if ((st = num_last_dim(gamma, regbase, &n32)) ||
            (st = uint32_product(dy, split, regbase, "dy's row count (numFirstDim)", &m32)))
            return st;
        num_core = ceil_div_u32(m32, ceil_div_u32(m32, (uint32_t)aclemu_soc_vector_cores()));
        const uint32_t per_core = num_core ? (uint32_t)(m32 + num_core - 1) / num_core : 0;
        if (regbase && (uint64_t)per_core * n32 > UINT32_MAX)
            TILING("%s: a core's %llu rows of %llu elements exceed the tiling's uint32 range "
                   "(Ascend 950 refuses more than %llu)", P1, (unsigned long long)per_core,
                   (unsigned long long)n32, (unsigned long long)UINT32_MAX);
    }

    alng_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    /* the tiling's split: numCore blocks of nInOneCoreLength rows (M >= 1 when launched) */
    const int64_t cores = aclemu_soc_vector_cores();
    P->block_rows = launch ? (M + cores - 1) / cores : 0;
    P->blocks = launch ? (M + P->block_rows - 1) / P->block_rows : 0;
    if (launch)
        tiling_split(P, dy->dtype, dsumOptional != NULL, n32);
    P->dx_mean_first = P->cut_d && !regbase; /* arch35/'s cut-D dx keeps the cut-N order */
    P->h = (nr_head){.kernel = &ALNG_KERNEL, .call = P2, .names = TNAME, .rows = launch ? M : 0,
                     .width = G, .row_floats = ROW_BUFS * G, .no_kernel = !launch};
    P->M = M;
    P->N = G;
    P->launch = launch;
    P->ras = G != 0 ? 1.0f / (float)G : 0.0f;
    const int s = (int)split;
    snapshot(&P->t[T_DY], dy, s);
    snapshot(&P->t[T_X1], x1, s);
    snapshot(&P->t[T_X2], x2, s);
    snapshot(&P->t[T_RSTD], rstd, -1);
    snapshot(&P->t[T_MEAN], mean, -1);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_DSUM], dsumOptional, s);
    snapshot(&P->t[T_DX], dxOut, s);
    snapshot(&P->t[T_DGAMMA], dgammaOut, -1);
    snapshot(&P->t[T_DBETA], dbetaOut, -1);
    /* Phase one's workspace on a device: the generated interface reports its tiling's one
     * workspace as it is, none when no kernel runs (docs/emulator.md "Phase one's workspace
     * size"): 16 MiB of system workspace and 20 MiB of its own on every part
     * (add_layer_norm_grad_tiling.cpp and _tiling_arch35.cpp), plus the deterministic rows:
     * the tiling multiplies numCore x roundUpNumLastDimFloat (numLastDim rounded up to 8
     * floats, in uint64 bytes) x 2 by GetDeterministic() itself, the level (0..3:
     * p1_deterministic) */
    uint64_t ws = launch ? EW_SYS_WORKSPACE + (uint64_t)20 * 1024 * 1024 : 0;
    const int64_t level = launch ? p1_deterministic() : 0;
    P->staged = level > 0; /* the kernel tests isDeterministicKey, the level, for non-zero */
    if (level > 0)
        ws += (uint64_t)level * num_core * (((uint64_t)n32 + 7) / 8 * 8 * 4) * 2;
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &ALNG_OPS, P, ws, ts, TNAME, T_COUNT, T_DX, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddLayerNormGrad(void *workspace, uint64_t workspaceSize,
                                                aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
