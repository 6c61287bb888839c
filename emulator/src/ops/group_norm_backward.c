/*
 * aclnnGroupNormBackward for the CPU emulator: phase one (checks, executor), the launch and the
 * device's arithmetic on each kind of part.
 *
 * Facts, hicann/ops-nn norm/group_norm_grad:
 * - op_host/op_api/aclnn_group_norm_backward.cpp (the hand-written phase one, followed here in
 *   its order and codes): the out-pointers (OP_CHECK_COMM_INPUT, 161001); gradOut, input, mean,
 *   rstd NULL (CheckNotNull, 161001); outputMask NULL, not of 3 entries, or a requested output
 *   NULL (CheckMaskNotNull, all 161002); dtypes (CheckDtypeValid, 161002): gradOut FLOAT,
 *   FLOAT16, plus BF16 on DAV_2201 and the regbase parts; off regbase input, mean, rstd, gamma
 *   and each requested output gradOut's dtype; on regbase (CheckMixPrecisionDtype) mean in the
 *   list, input and a requested gradInput gradOut's dtype, mean gradOut's dtype for FLOAT, FLOAT16
 *   or FLOAT with FLOAT16, BF16 or FLOAT with BF16, rstd, gamma and the requested gradGammaOut
 *   and gradBetaOut mean's dtype; the attributes (CheckAttr, 161002): group > 0, C % group 0,
 *   on DAV_2201 C / group <= 8000 and C <= 240000; the shapes (CheckShape, 161002): gradOut rank
 *   <= 8, gradOut and input of N * C * HxW elements, mean and rstd of N * group, gamma of C,
 *   a requested gradInput of input's shape, gradGammaOut and gradBetaOut of gamma's shape
 *   ([C] without gamma); then an empty gradOut or input off regbase: nothing runs (no output
 *   written); on regbase an empty one with C > 0 runs the L0 op's empty kernel and copies its
 *   dgamma and dbeta into gradGammaOut and gradBetaOut whatever the mask says (a NULL or
 *   mistyped one fails its ViewCopy: 561103); C 0 on regbase: nothing runs;
 * - what the L0 ops refuse in phase one after CheckParams (561103; l0_refusals below): the
 *   composite's gradGammaOut UnsqueezeNd/Expand of mean and rstd (ops-math unsqueeze.cpp,
 *   expand.cpp); the tilings, run by phase one, of the L0 GroupNormGrad (group_norm_grad_
 *   tiling.cpp's stage two on Atlas A2/A3; group_norm_grad_tiling_arch35.cpp's C / group and
 *   dtype rules and group_norm_grad_empty_tiling_arch35.cpp's on Ascend 950);
 * - the kernel by part: the L0 GroupNormGrad (op_api/group_norm_grad.cpp) on DAV_2201 (Atlas
 *   A2/A3) and the regbase parts (Ascend 950): op_host/group_norm_grad_def.cpp configures
 *   ascend910b, ascend910_93 and ascend950; elsewhere (the Atlas training series DAV_1001,
 *   the Atlas inference series DAV_2002) a composite of L0 ops: gradInput through the
 *   BatchNorm backward kernels (BNTrainingUpdateGrad, BNTrainingReduceGrad) on rows (n, group)
 *   with dy * gamma (Mul), the variance 1 / (rstd * rstd) - eps (Mul, OnesLike, Div, Sub with
 *   eps 1e-5 as a tensor of rstd's dtype) and the BN kernels' epsilon 1e-5; gradGammaOut as
 *   ReduceSum(ReduceSum(dy * ((x - mean) * rstd), HxW), N) (Sub, Mul, Mul, two ReduceSums);
 *   gradBetaOut as ReduceSum(ReduceSum(dy, HxW), N); each L0 op's result in the data's dtype;
 * - op_host/group_norm_grad_tiling.cpp (Atlas A2/A3): the stage-one mode from the UB size
 *   (196608 bytes on every A2/A3 platform configuration) and HxW: HxW 1 mode 5; a whole group
 *   in UB mode 0; else one channel at a time (modes 1, 2, 3); the stage-two key: N > 2 takes
 *   the workspace path (the kernel's isDeterministic; "no deterministic problem when N <= 2");
 *   castEleNum and coreBatchParts from the vector core count and the UB size;
 * - op_kernel/group_norm_grad.h (Atlas A2/A3), per task (n, g) of E = C / group * HxW elements,
 *   x and dy widened to float (CAST_NONE, exact), m = mean, r = rstd as float:
 *   x_hat = x * r + ((-1 * m) * r) (Muls, Adds); per channel dbeta_c = sum(dy), dgamma_c =
 *   sum(x_hat * dy) (ReduceSum_template: above 64 elements halved into 64 by the kernel's
 *   block adds, then ReduceSum); c1 = sum(dbeta_c * gamma) / E, c2 = sum(dgamma_c * gamma) / E;
 *   mode 0: dx = dy * (r * gamma) - (x_hat * (r * c2) + r * c1) for a channel whose first
 *   element is block-aligned in x's dtype, else dy * (r * gamma) - (x * ((r * r) * c2) +
 *   (r * c1 - ((m * r) * r) * c2)); modes 1-3: dx = (dy * gamma - (x * (r * c2) + -1 * ((m *
 *   r) * c2 - c1))) * r; mode 5: dx = (dy * gamma) * r - (x_hat * (r * c2) + r * c1); dx
 *   rounded once with CAST_ROUND (ties away) for FLOAT16/BF16; the per-task dgamma_c and
 *   dbeta_c combined over n: N <= 2 atomically added into zeroed outputs (FLOAT) or a zeroed
 *   float workspace then cast with CAST_ROUND (N 1: cast directly); N > 2 into a workspace of
 *   ceil(N / 2) rows (rows 2w and 2w + 1 atomically added into row w), the rows reduced in
 *   batches of coreBatchParts (each batch by the kernel's halving adds, added to the running
 *   sum), for FLOAT in two halves (ceil(rows / 2), the rest) atomically added into the zeroed
 *   output, else in one range cast with CAST_ROUND.
 *
 * Cross-core order: every atomic add above adds at most two values into a zero, and float
 * addition is commutative, so the device's results do not depend on the cores' timing; the
 * emulator takes exactly that order.
 *
 * Modelling choices (docs/emulator.md): the kernel's ReduceSum (the count form) is Atlas A2/A3's
 * counter-mode vcadd (norm_rows.h nr_reduce_sum_count); mode 3's chunked, compensated
 * per-channel sums (one channel beyond the UB, HxW above about 16000 elements) are taken as
 * mode 1's plain sums; the composite path's ReduceSum L0 ops take norm_rows.h's fixed lane
 * order; Ascend 950's G and C full-load templates (op_kernel/arch35, the tiling's MODE_0 and
 * MODE_1) are modelled (kernel_rows_arch35: binary-fold sums, fused pairs, their stage two's
 * mode 1); its recompute and small N x G templates (MODE_2, MODE_3) are taken as the Atlas
 * A2/A3 arithmetic with ties to even (CAST_RINT), stage two's mode 2 (N above about 1750 to
 * 3500) as its mode 1; the BatchNorm
 * backward kernels of the composite path are not in the checkouts, so their arithmetic is the
 * float32 formula dx = (g - (sum(g) + x_hat * sum(g * x_hat)) * (1 / E)) * invstd with
 * invstd = 1 / sqrt(var + 1e-5), g = dy * gamma and x_hat = (x - mean) * invstd, rounded
 * once.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "exec_workspace.h"
#include "convert.h"
#include "norm_rows.h"
#include "round_away.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_group_norm_backward.h"

#define P1 "aclnnGroupNormBackwardGetWorkspaceSize"
#define P2 "aclnnGroupNormBackward"

enum { T_DY, T_X, T_MEAN, T_RSTD, T_GAMMA, T_DX, T_DGAMMA, T_DBETA, T_COUNT };
static const char *const TNAME[T_COUNT] = {"gradOut", "input",     "mean",       "rstd",
                                           "gamma",   "gradInput", "gradGammaOut",
                                           "gradBetaOut"};

typedef enum {
    PATH_NONE,      /* nothing runs */
    PATH_KERNEL,    /* the L0 GroupNormGrad kernel (Atlas A2/A3, Ascend 950) */
    PATH_COMPOSITE, /* BatchNorm backward, Sub/Mul/ReduceSum (Atlas training, inference) */
    PATH_ZEROS,     /* Ascend 950's empty-tensor kernel: dgamma and dbeta zeroed */
} gnb_path;

#define A2_UB_BYTES 196608 /* ub_size of every Atlas A2/A3 platform configuration */
/* Ascend 950's G and C full-load templates (the arch35 tiling's MODE_0 and MODE_1: one
 * arithmetic, kernel_rows_arch35) */
#define MODE_ARCH35 100

typedef struct {
    /* rows: the tasks (n, g), or one for Ascend 950's zeros (written from the run's buffer);
     * width: C; the run's buffer: per (n, channel) dgamma_c, then (N * C on) dbeta_c */
    nr_head h;
    tdesc t[T_COUNT];
    int64_t N, C, HW, G, D, E;
    bool mask[3];
    gnb_path path;
    int mode;             /* the kernel's stage-one mode: 0, 1 (modes 1-3) or 5; MODE_ARCH35 */
    int64_t batch_parts;  /* the kernel's coreBatchParts (stage two, N > 2) */
    aclemu_ties ties;     /* the kernel's narrowing: away (A2/A3) or even */
    float eps_data;       /* the composite's eps 1e-5 as a tensor of rstd's dtype */
} gnb_payload;

/* Row buffer floats per chunk: dy, x, x_hat, scratch (E each), the fold buffer (64 * 128),
 * then the row's per-channel sums and products (4 * D); stage two (after every row) takes
 * 2 * N + C floats of chunk 0's. */
#define FOLD_FLOATS (64 * 128)

static int64_t row_floats(const gnb_payload *P)
{
    const int64_t rows = 4 * P->E + FOLD_FLOATS + 4 * P->D, combine = 2 * P->N + P->C;
    return rows > combine ? rows : combine;
}

/* ---- the kernel's sums ------------------------------------------------------------------- */

/* The composite path's ReduceSum L0 ops (TBE kernels, whose order is not in the sources):
 * norm_rows.h's fixed lane order. */
static float reduce_sum(const float *x, int64_t n)
{
    return nr_scaled_sum(x, n, 1.0f);
}

/* ReduceSum_template with its fold on: above 64 elements the kernel adds the upper blocks onto
 * the lower ones, halving down to 64 (at most 2 * 8192 elements, as its modes give it), then
 * takes ReduceSum of 64. fold: FOLD_FLOATS floats of scratch. */
static float reduce_sum_folded(const float *src, int64_t n, float *fold)
{
    if (n <= 64)
        return nr_reduce_sum_count(src, n);
    bool first = true;
    for (int64_t start = 128; start >= 1; start >>= 1) {
        const int64_t off = start * 64;
        if (n > off && first) {
            memcpy(fold, src, (size_t)off * sizeof(float));
            const int64_t rest = n - off < off ? n - off : off;
            for (int64_t i = 0; i < rest; i++)
                fold[i] = src[off + i] + fold[i];
            n = off;
            first = false;
        } else if (n > off) {
            for (int64_t i = 0; i < off; i++)
                fold[i] = fold[off + i] + fold[i];
            n = off;
        }
    }
    return nr_reduce_sum_count(fold, 64);
}

static float scalar_at(const tdesc *d, int64_t i)
{
    float buf;
    return *get_tile(view_base(d), d->dtype, &d->inner, i, 1, &buf);
}

/* One task (n, g): its index, sample, first channel, dy and x as float, mean and rstd. */
typedef struct {
    int64_t task, n, c0;
    const float *dy, *x;
    float m, r;
} gnb_task;

/* ---- the kernel: stage one, per task (n, g) --------------------------------------------- */

static void kernel_task(const gnb_payload *P, const norm_rows *R, const gnb_task *T,
                        float *work)
{
    const int64_t task = T->task, n = T->n, c0 = T->c0;
    const float *dy = T->dy, *x = T->x;
    const float m = T->m, r = T->r;
    const tdesc *xd = &P->t[T_X], *dxd = &P->t[T_DX];
    const int64_t E = P->E, D = P->D, HW = P->HW, NC = P->N * P->C;
    const float *gamma = R->gamma;
    float *xhat = work, *tmp = xhat + E;
    float *fold = tmp + E, *db = fold + FOLD_FLOATS, *dg = db + D, *t1 = dg + D, *t2 = t1 + D;
    /* the block of x's dtype the mode-0 alignment is counted in */
    const int64_t per_block = 32 / (int64_t)aclemu_dtype_size(xd->dtype);
    const float shift = (-1.0f * m) * r;
    for (int64_t i = 0; i < E; i++) {
        const float s = x[i] * r;
        xhat[i] = s + shift;
    }
    for (int64_t j = 0; j < D; j++) {
        const float *dyc = dy + j * HW, *xc = xhat + j * HW;
        if (P->mode == 5) {
            db[j] = dyc[0];
            dg[j] = xc[0] * dyc[0];
            continue;
        }
        db[j] = reduce_sum_folded(dyc, HW, fold);
        for (int64_t i = 0; i < HW; i++)
            tmp[i] = xc[i] * dyc[i];
        dg[j] = reduce_sum_folded(tmp, HW, fold);
    }
    float *pg = R->run_buf + n * P->C + c0, *pb = R->run_buf + NC + n * P->C + c0;
    memcpy(pg, dg, (size_t)D * sizeof(float));
    memcpy(pb, db, (size_t)D * sizeof(float));
    if (!P->mask[0])
        return;
    for (int64_t j = 0; j < D; j++) {
        t1[j] = db[j] * gamma[c0 + j];
        t2[j] = dg[j] * gamma[c0 + j];
    }
    const float fe = (float)E;
    const float c1 = nr_reduce_sum_count(t1, D) / fe, c2 = nr_reduce_sum_count(t2, D) / fe;
    float *dx = tmp;
    for (int64_t j = 0; j < D; j++) {
        const float gm = gamma[c0 + j];
        const float *dyc = dy + j * HW, *xc = x + j * HW, *xh = xhat + j * HW;
        float *o = dx + j * HW;
        if (P->mode == 0) {
            const float dscale = r * gm;
            if ((j * HW) % per_block == 0) {
                const float a = r * c2, b = r * c1;
                for (int64_t i = 0; i < HW; i++) {
                    float xo = xh[i] * a;
                    xo = xo + b;
                    o[i] = dyc[i] * dscale - xo;
                }
            } else {
                const float a = (r * r) * c2, b = r * c1 - ((m * r) * r) * c2;
                for (int64_t i = 0; i < HW; i++) {
                    float xo = xc[i] * a;
                    xo = xo + b;
                    o[i] = dyc[i] * dscale - xo;
                }
            }
        } else if (P->mode == 1) {
            const float a = r * c2, b = -1.0f * ((m * r) * c2 - c1);
            for (int64_t i = 0; i < HW; i++) {
                const float d = dyc[i] * gm;
                float xo = xc[i] * a;
                xo = xo + b;
                o[i] = (d - xo) * r;
            }
        } else { /* mode 5: HxW 1 */
            const float a = r * c2, b = r * c1;
            float d = dyc[0] * gm;
            d = d * r;
            float xo = xh[0] * a;
            xo = xo + b;
            o[0] = d - xo;
        }
    }
    if (dxd->dtype != ACL_FLOAT && P->ties == ACLEMU_TIES_AWAY)
        round_ties_away(dxd->dtype, dx, E);
    put_tile(view_base(dxd), dxd->dtype, ACLEMU_TIES_EVEN, &dxd->inner, task * E, E, dx);
}

/* Ascend 950's G and C full-load templates, per task (n, g) (group_norm_grad_g_full_load.h
 * Compute, ComputeMode0Dx, VFComputeMode0Dx; group_norm_grad_c_full_load.h Compute,
 * ComputeMode1Dx; group_norm_grad_base.h VFDbetaDgammaBinaryFoldCommon, StoreDgamma,
 * ComputeSum1Sum2, VFComputeMode1DxCommon): per channel db = sum(dy) and ds = sum(x * dy) on the
 * raw x (norm_rows.h nr_binary_fold_dot); the task's dgamma_c = fma(db, -m, ds) * r (Axpy, Muls);
 * sum1 = sum(ds * gamma), sum2 = sum(db * gamma) over the group (a scalar product for one
 * channel); the scalar unit's C2 = ((sum2 * m + (0 - sum1)) * r * r * r) * (1 / E) and C3 =
 * (0 - C2) * m + (0 - sum2 * r * (1 / E)), each operation rounded; dx = fma(dy, gamma * r,
 * x * C2) + C3 (Muls, MulAddDst, Adds), cast with CAST_RINT. work: dx, the folds' partials and
 * the channel sums. */
static void kernel_task_arch35(const gnb_payload *P, const norm_rows *R, const gnb_task *T,
                               float *work)
{
    const int64_t E = P->E, D = P->D, HW = P->HW;
    const float *dy = T->dy, *x = T->x, *gm = R->gamma + T->c0;
    const float m = T->m, r = T->r;
    float *dx = work, *partial = dx + E, *db = partial + FOLD_FLOATS, *ds = db + D, *dg = ds + D;
    for (int64_t j = 0; j < D; j++) {
        db[j] = nr_binary_fold_dot(dy + j * HW, NULL, HW, partial);
        ds[j] = nr_binary_fold_dot(x + j * HW, dy + j * HW, HW, partial);
        dg[j] = fmaf(db[j], -m, ds[j]) * r;
    }
    memcpy(R->run_buf + T->n * P->C + T->c0, dg, (size_t)D * sizeof(float));
    memcpy(R->run_buf + (P->N + T->n) * P->C + T->c0, db, (size_t)D * sizeof(float));
    if (!P->mask[0])
        return;
    const float sum1 = D == 1 ? ds[0] * gm[0] : nr_binary_fold_dot(ds, gm, D, partial);
    const float sum2 = D == 1 ? db[0] * gm[0] : nr_binary_fold_dot(db, gm, D, partial);
    const float s = 1.0f / (float)E;
    const float c2 = (((sum2 * m + (0.0f - sum1)) * r) * r) * r * s;
    const float c3 = (0.0f - c2) * m + (0.0f - sum2 * r * s);
    for (int64_t j = 0; j < D; j++) {
        const float gr = gm[j] * r;
        for (int64_t i = j * HW; i < (j + 1) * HW; i++)
            dx[i] = fmaf(dy[i], gr, x[i] * c2) + c3;
    }
    const tdesc *dxd = &P->t[T_DX];
    put_tile(view_base(dxd), dxd->dtype, ACLEMU_TIES_EVEN, &dxd->inner, T->task * E, E, dx);
}

/* The halving adds of reduce_axis_n_WSP2UB over rows v[0..k) (stride C) of one channel. */
static float fold_rows(float *v, int64_t k)
{
    int64_t end = k, mid = k;
    while (mid >= 2) {
        mid >>= 1;
        end -= mid;
        for (int64_t i = 0; i < mid; i++)
            v[i] = v[end + i] + v[i];
        mid = end;
    }
    return v[0];
}

/* Workspace rows [from, to) of one channel reduced in batches of `parts` rows into a zeroed
 * sum (reduce_dgamma_dbeta_WSP2GM's loop). rows: scratch. */
static float reduce_rows(const float *ws, int64_t from, int64_t to, int64_t parts, float *rows)
{
    float acc = 0.0f;
    for (int64_t b = from; b < to; b += parts) {
        const int64_t k = to - b < parts ? to - b : parts;
        memcpy(rows, ws + b, (size_t)k * sizeof(float));
        acc = fold_rows(rows, k) + acc;
    }
    return acc;
}

/* Stage two: one output (dgamma or dbeta) from the per-(n, channel) partials p. */
static void kernel_combine(const gnb_payload *P, const float *p, const tdesc *out, float *ws,
                           float *rows, float *res)
{
    const int64_t N = P->N, C = P->C;
    const bool f32 = P->t[T_DY].dtype == ACL_FLOAT;
    for (int64_t c = 0; c < C; c++) {
        float v;
        if (P->mode == MODE_ARCH35) {
            /* the tasks of samples 2w and 2w + 1 added into zeroed workspace row w (N > 1), or
             * straight into the zeroed output (N 1: 16-bit cast first, the same bits) */
            const int64_t W = (N + 1) / 2;
            for (int64_t w = 0; w < W && N > 1; w++) {
                ws[w] = 0.0f + p[2 * w * C + c];
                if (2 * w + 1 < N)
                    ws[w] = ws[w] + p[(2 * w + 1) * C + c];
            }
            v = N == 1 ? 0.0f + p[c] : nr_rows_binary_sum(ws, W, 1, rows);
        } else if (N <= 2) {
            v = 0.0f + p[c];
            if (N == 2)
                v = v + p[C + c];
            if (N == 1 && !f32)
                v = p[c]; /* cast straight from the task's sums */
        } else {
            const int64_t W = (N + 1) / 2;
            for (int64_t w = 0; w < W; w++) {
                ws[w] = 0.0f + p[2 * w * C + c];
                if (2 * w + 1 < N)
                    ws[w] = ws[w] + p[(2 * w + 1) * C + c];
            }
            if (f32) {
                const int64_t h1 = (W + 1) / 2;
                const float a = reduce_rows(ws, 0, h1, P->batch_parts, rows);
                const float b = reduce_rows(ws, h1, W, P->batch_parts, rows);
                v = (0.0f + a) + b;
            } else {
                v = reduce_rows(ws, 0, W, P->batch_parts, rows);
            }
        }
        res[c] = v;
    }
    if (out->dtype != ACL_FLOAT && P->ties == ACLEMU_TIES_AWAY)
        round_ties_away(out->dtype, res, C);
    put_tile(view_base(out), out->dtype, ACLEMU_TIES_EVEN, &out->inner, 0, C, res);
}

/* ---- the composite path (Atlas training and inference parts) ------------------------------ */

static void round_data(const gnb_payload *P, float *buf, int64_t n)
{
    aclemu_round_floats(P->t[T_DY].dtype, ACLEMU_TIES_EVEN, buf, n);
}

static float round_one(const gnb_payload *P, float v)
{
    round_data(P, &v, 1);
    return v;
}

static void composite_task(const gnb_payload *P, const norm_rows *R, const gnb_task *T,
                           float *work)
{
    const int64_t task = T->task, n = T->n, c0 = T->c0;
    const float *dy = T->dy, *x = T->x;
    const float m = T->m, r = T->r;
    const tdesc *dxd = &P->t[T_DX];
    const int64_t E = P->E, D = P->D, HW = P->HW, NC = P->N * P->C;
    const float *gamma = R->gamma;
    float *g = work, *tmp = g + E;
    /* gradGammaOut's and gradBetaOut's per-(n, channel) sums: Sub, Mul, Mul, ReduceSum */
    for (int64_t j = 0; j < D; j++) {
        const float *dyc = dy + j * HW, *xc = x + j * HW;
        for (int64_t i = 0; i < HW; i++) {
            const float xh = round_one(P, round_one(P, xc[i] - m) * r);
            tmp[i] = dyc[i] * xh;
        }
        round_data(P, tmp, HW);
        R->run_buf[n * P->C + c0 + j] = round_one(P, reduce_sum(tmp, HW));
        R->run_buf[NC + n * P->C + c0 + j] = round_one(P, reduce_sum(dyc, HW));
    }
    if (!P->mask[0])
        return;
    for (int64_t j = 0; j < D; j++)
        for (int64_t i = 0; i < HW; i++)
            g[j * HW + i] = dy[j * HW + i] * gamma[c0 + j];
    round_data(P, g, E);
    float var = round_one(P, r * r);
    var = round_one(P, 1.0f / var);
    var = round_one(P, var - P->eps_data);
    const float invstd = 1.0f / sqrtf(var + 1e-5f);
    for (int64_t i = 0; i < E; i++)
        tmp[i] = g[i] * ((x[i] - m) * invstd);
    const float dscale = reduce_sum(tmp, E), doffset = reduce_sum(g, E);
    const float inv_e = 1.0f / (float)E;
    for (int64_t i = 0; i < E; i++) {
        const float xh = (x[i] - m) * invstd;
        tmp[i] = (g[i] - (doffset + xh * dscale) * inv_e) * invstd;
    }
    put_tile(view_base(dxd), dxd->dtype, ACLEMU_TIES_EVEN, &dxd->inner, task * E, E, tmp);
}

/* The second ReduceSum (over N) of the composite path, rounded to the data's dtype. */
static void composite_combine(const gnb_payload *P, const float *p, const tdesc *out,
                              float *col, float *res)
{
    const int64_t N = P->N, C = P->C;
    for (int64_t c = 0; c < C; c++) {
        for (int64_t n = 0; n < N; n++)
            col[n] = p[n * C + c];
        res[c] = reduce_sum(col, N);
    }
    round_data(P, res, C);
    put_tile(view_base(out), out->dtype, ACLEMU_TIES_EVEN, &out->inner, 0, C, res);
}

/* ---- the run on norm_rows' task ------------------------------------------------------------ */

/* Gamma as float (ones without it); Ascend 950's empty-tensor kernel writes its zeros and no
 * task runs; nothing runs for PATH_NONE (no buffers then). */
static bool before_rows(const void *payload, norm_rows *R)
{
    const gnb_payload *P = payload;
    const int64_t C = P->C;
    if (P->path == PATH_NONE)
        return false;
    if (P->path == PATH_ZEROS) {
        float *zeros = R->run_buf;
        memset(zeros, 0, (size_t)C * sizeof(float));
        for (int i = T_DGAMMA; i <= T_DBETA; i++)
            put_tile(view_base(&P->t[i]), P->t[i].dtype, ACLEMU_TIES_EVEN, &P->t[i].inner, 0, C,
                     zeros);
        return false;
    }
    if (P->t[T_GAMMA].present) {
        nr_load_gamma(R, &P->t[T_GAMMA], C);
    } else {
        for (int64_t c = 0; c < C; c++)
            R->gamma_buf[c] = 1.0f;
        R->gamma = R->gamma_buf;
    }
    return true;
}

/* Stage one, tasks [begin, end): each task's dy and x read as float (into the chunk's row
 * buffer, or in place), then the kernel's or the composite's per part. */
static void tasks_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                       int64_t end)
{
    const gnb_payload *P = payload;
    const tdesc *dyd = &P->t[T_DY], *xd = &P->t[T_X];
    const int64_t E = P->E;
    float *dyb = nr_chunk_buf(R, chunk), *xb = dyb + E, *work = xb + E;
    for (int64_t task = begin; task < end; task++) {
        const gnb_task T = {
            .task = task, .n = task / P->G, .c0 = (task % P->G) * P->D,
            .dy = get_tile(view_base(dyd), dyd->dtype, &dyd->inner, task * E, E, dyb),
            .x = get_tile(view_base(xd), xd->dtype, &xd->inner, task * E, E, xb),
            .m = scalar_at(&P->t[T_MEAN], task), .r = scalar_at(&P->t[T_RSTD], task)};
        if (P->path == PATH_KERNEL && P->mode == MODE_ARCH35)
            kernel_task_arch35(P, R, &T, work);
        else if (P->path == PATH_KERNEL)
            kernel_task(P, R, &T, work);
        else
            composite_task(P, R, &T, work);
    }
}

/* Stage two, over n, in chunk 0's row buffer (the rows are done with it). */
static void after_rows(const void *payload, norm_rows *R)
{
    const gnb_payload *P = payload;
    const int64_t N = P->N, C = P->C;
    float *ws = nr_chunk_buf(R, 0), *rows = ws + N, *res = rows + N;
    for (int k = 1; k <= 2; k++) {
        if (!P->mask[k])
            continue;
        const float *p = R->run_buf + (k == 1 ? 0 : N * C);
        const tdesc *out = &P->t[k == 1 ? T_DGAMMA : T_DBETA];
        if (P->path == PATH_KERNEL)
            kernel_combine(P, p, out, ws, rows, res);
        else
            composite_combine(P, p, out, ws, res);
    }
}

static const nr_kernel GNB_KERNEL = NR_KERNEL(gnb_payload, before_rows, tasks_body, after_rows);
static const aclemu_executor_ops GNB_OPS = NR_EXECUTOR_OPS(P2);

/* ---- phase one ------------------------------------------------------------------------------ */

#define INVALID(...) FAIL(ACLNN_ERR_PARAM_INVALID, __VA_ARGS__)

static aclnnStatus need_dtype(const aclTensor *t, int i, aclDataType want, const char *whose)
{
    if (t->dtype != want)
        INVALID("%s: %s dtype %s must be %s (%s)", P1, TNAME[i], dname(t->dtype), dname(want),
                whose);
    return ACLNN_SUCCESS;
}

static bool listed(aclDataType d, bool bf16)
{
    return d == ACL_FLOAT || d == ACL_FLOAT16 || (bf16 && d == ACL_BF16);
}

/* Step 3 (CheckDtypeValid, CheckMixPrecisionDtype). */
static aclnnStatus check_dtypes(const aclTensor *const *ts, const bool *mask,
                                const aclemu_soc *soc, bool regbase)
{
    const bool bf16 = soc->npu_arch == 2201 || regbase;
    const char *list = bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16";
    const aclDataType dy = ts[T_DY]->dtype;
    if (!listed(dy, bf16))
        INVALID("%s: gradOut dtype %s is not supported on %s (%s): %s", P1, dname(dy), soc->name,
                soc->series, list);
    aclnnStatus st;
    if (!regbase) {
        for (int i = T_X; i < T_COUNT; i++) {
            const bool needed = i < T_DX ? ts[i] != NULL : mask[i - T_DX];
            if (needed && (st = need_dtype(ts[i], i, dy, "gradOut's dtype")))
                return st;
        }
        return ACLNN_SUCCESS;
    }
    const aclDataType mean = ts[T_MEAN]->dtype;
    if (!listed(mean, bf16))
        INVALID("%s: mean dtype %s is not supported on %s (%s): %s", P1, dname(mean), soc->name,
                soc->series, list);
    if ((st = need_dtype(ts[T_X], T_X, dy, "gradOut's dtype")) ||
        (mask[0] && (st = need_dtype(ts[T_DX], T_DX, dy, "gradOut's dtype"))))
        return st;
    if (mean != dy && mean != ACL_FLOAT)
        INVALID("%s: mean dtype %s must be gradOut's dtype %s or FLOAT", P1, dname(mean),
                dname(dy));
    if ((st = need_dtype(ts[T_RSTD], T_RSTD, mean, "mean's dtype")) ||
        (ts[T_GAMMA] && (st = need_dtype(ts[T_GAMMA], T_GAMMA, mean, "mean's dtype"))) ||
        (mask[1] && (st = need_dtype(ts[T_DGAMMA], T_DGAMMA, mean, "mean's dtype"))) ||
        (mask[2] && (st = need_dtype(ts[T_DBETA], T_DBETA, mean, "mean's dtype"))))
        return st;
    return ACLNN_SUCCESS;
}

/* Step 4 (CheckAttr). */
static aclnnStatus check_attrs(int64_t C, int64_t group, const aclemu_soc *soc)
{
    if (group <= 0)
        INVALID("%s: group %lld must be greater than 0", P1, (long long)group);
    if (C % group != 0)
        INVALID("%s: C %lld must be divisible by group %lld", P1, (long long)C,
                (long long)group);
    if (soc->npu_arch == 2201) {
        if (C / group > 8000)
            INVALID("%s: C / group = %lld must be at most 8000 on %s (%s)", P1,
                    (long long)(C / group), soc->name, soc->series);
        if (C > 240000)
            INVALID("%s: C %lld must be at most 240000 on %s (%s)", P1, (long long)C, soc->name,
                    soc->series);
    }
    return ACLNN_SUCCESS;
}

static aclnnStatus need_count(const aclTensor *t, int i, int64_t want, const char *what)
{
    int64_t n = 0;
    if (!numel(t->dims, t->ndim, &n) || n != want) {
        char s[256];
        fmt_dims(s, sizeof s, t->dims, t->ndim);
        INVALID("%s: %s %s must hold %s = %lld elements", P1, TNAME[i], s, what, (long long)want);
    }
    return ACLNN_SUCCESS;
}

static int64_t wrapped_mul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* Step 5 (CheckShape). */
static aclnnStatus check_shapes(const aclTensor *const *ts, const bool *mask, int64_t N,
                                int64_t C, int64_t HxW, int64_t group)
{
    const aclTensor *dy = ts[T_DY], *x = ts[T_X], *gamma = ts[T_GAMMA];
    if (dy->ndim > TV_MAX_RANK)
        INVALID("%s: gradOut rank %llu is above 8", P1, (unsigned long long)dy->ndim);
    /* the vendor's int64 products, wrapping as its build's do (a wrapped product that matches
     * the counts passes here; l0_refusals takes it from there) */
    const int64_t nchw = wrapped_mul(wrapped_mul(N, C), HxW), ng = wrapped_mul(N, group);
    aclnnStatus st;
    if ((st = need_count(dy, T_DY, nchw, "N * C * HxW")) ||
        (st = need_count(x, T_X, nchw, "N * C * HxW")) ||
        (st = need_count(ts[T_MEAN], T_MEAN, ng, "N * group")) ||
        (st = need_count(ts[T_RSTD], T_RSTD, ng, "N * group")) ||
        (gamma && (st = need_count(gamma, T_GAMMA, C, "C"))))
        return st;
    if (mask[0] && !same_dims(ts[T_DX]->dims, ts[T_DX]->ndim, x->dims, x->ndim))
        return shape_error(P1, "gradInput", ts[T_DX]->dims, ts[T_DX]->ndim,
                           "must equal input's shape", x->dims, x->ndim);
    const int64_t cvec[1] = {C};
    const int64_t *gdims = gamma ? gamma->dims : cvec;
    const uint64_t gnd = gamma ? gamma->ndim : 1;
    for (int k = 1; k <= 2; k++) {
        const aclTensor *t = ts[T_DX + k];
        if (mask[k] && !same_dims(t->dims, t->ndim, gdims, gnd))
            return shape_error(P1, TNAME[T_DX + k], t->dims, t->ndim,
                               gamma ? "must equal gamma's shape" : "must be [C] =", gdims, gnd);
    }
    return ACLNN_SUCCESS;
}

/* The Atlas A2/A3 tiling's stage-two batch (CalStage2TilingInfo, ComputeAllocUBStage2; N > 2,
 * its "deterministic" key): coreBatchParts, 0 where the tiling fails ("coreBatchCounts is
 * zero"). The UB left for the batch is a size_t: FLOAT clamps it at 0, the 16-bit branch
 * subtracts unchecked and wraps (every batch then fits), as the vendor's arithmetic does. */
static int64_t a2_batch_parts(int64_t N, int64_t C, int64_t G, aclDataType dt)
{
#define CEIL_TO(a, b) ((((a) + (b) - 1) / (b)) * (b))
    const int64_t tasks = N * G, cores = aclemu_soc_vector_cores();
    const int64_t per_core = (tasks + cores - 1) / cores;
    const int64_t used = per_core > 0 ? (tasks - 1) / per_core + 1 : 1;
    const int64_t avail = (A2_UB_BYTES - 1024) / 2, W = (N + 1) / 2;
    int64_t cast_num, left, counts;
    if (dt == ACL_FLOAT) {
        const int64_t half = used / 2 > 0 ? used / 2 : 1;
        cast_num = CEIL_TO((C + half - 1) / half, 64);
        left = avail > cast_num * 4 ? avail - cast_num * 4 : 0;
        counts = (W + 1) / 2;
    } else {
        cast_num = CEIL_TO((C + used - 1) / used, 64);
        left = avail - cast_num * 6;
        counts = W;
        if (left < 0)
            return counts; /* the size_t wrapped: far more than any batch needs */
    }
#undef CEIL_TO
    const int64_t fit = left / (cast_num * 4);
    return fit < counts ? fit : counts;
}

/* The Atlas A2/A3 tiling's stage-one mode (CalStage1TilingInfo) and stage-two batch, for the
 * row order of the arithmetic (phase one has refused a batch of 0). */
static void a2_tiling(gnb_payload *P, aclDataType dt)
{
    const int64_t bytes = (int64_t)aclemu_dtype_size(dt), per_block = 32 / bytes;
#define CEIL_TO(a, b) ((((a) + (b) - 1) / (b)) * (b))
    const int64_t reserve = 1024 + CEIL_TO(P->D, per_block) * bytes * 3;
    const int64_t extra = (P->HW % 8 == 0 || P->D == 1) ? 0 : 2 * CEIL_TO(P->HW, per_block) * 4;
    const int64_t cap_groups = A2_UB_BYTES < reserve + extra ? 0
        : (A2_UB_BYTES - reserve - extra) / (CEIL_TO(P->D * P->HW, per_block) * bytes * 3);
#undef CEIL_TO
    P->mode = P->HW == 1 ? 5 : cap_groups > 0 ? 0 : 1;
    P->batch_parts = P->N > 2 ? a2_batch_parts(P->N, P->C, P->G, dt) : 1;
}

/* GroupNormGrad's one tiling workspace: the platform's system workspace plus its float
 * stage-two buffers, two copies. Atlas A2/A3 (group_norm_grad_tiling.cpp CalStage2TilingInfo):
 * ceil(N / 2) x C for N > 2 (the deterministic stage two), else C for a 16-bit gradOut (the
 * cast) and none for FLOAT. Ascend 950 (group_norm_grad_tiling_arch35.cpp GetWorkspaceSize):
 * N x C in mode 3, else ceil(N / 2) x C; mode 3 (UbTiling, from BlockTiling's reserve): a
 * group too large for UB, one channel's HxW fitting, N x group <= 16, at least two N x C tasks
 * per core, N x (C / group / channels per UB) >= 32 and N x C <= 240000. */
/* The arch35 tiling's stage-one template (group_norm_grad_tiling_arch35.cpp BlockTiling's UB
 * reserve, UbTiling): 0 (MODE_0, G full load) when a group fits the UB, else 1 (MODE_1, C full
 * load) when a channel's HxW does, or 3 (MODE_3, small N x G: N x group <= 16, at least two
 * N x C tasks per core, N x (C / group / channels per UB) >= 32 and N x C <= 240000); else 2
 * (MODE_2, recompute). The part's UB (253952 bytes), 32-byte blocks and vector cores. */
static int gng_arch35_mode(int64_t N, int64_t C, int64_t HW, int64_t G, aclDataType dy_dt,
                           aclDataType gamma_dt)
{
#define CEIL_TO(a, b) ((((a) + (b) - 1) / (b)) * (b))
    const int64_t block = 32, t_bytes = (int64_t)aclemu_dtype_size(dy_dt), D = C / G;
    const int64_t NG = N * G, NC = N * C, cores = aclemu_soc_vector_cores();
    const bool u16 = gamma_dt != ACL_FLOAT, small_ng = NG <= 16;
    const int64_t reserve = CEIL_TO(D, block / 4) * 4 * (small_ng ? 6 : 4) +
                            (u16 ? CEIL_TO(D, block / 2) * 2 * (small_ng ? 1 : 2) : 0) +
                            2 * block;
    const int64_t stage0_per_core = small_ng ? (NC + cores - 1) / cores : 0;
    const int64_t usable = (aclemu_soc_ub_bytes() - reserve) / 2, t_align = block / t_bytes;
    const int64_t mode0_groups = usable / (CEIL_TO(D * HW, t_align) * t_bytes * 3 + block * 2);
    const int64_t mode1_channels = usable / (CEIL_TO(HW, t_align) * t_bytes * 3);
#undef CEIL_TO
    if (mode0_groups > 0)
        return 0;
    if (mode1_channels <= 0)
        return 2;
    return small_ng && stage0_per_core >= 2 && N * (D / mode1_channels) >= 32 && NC <= 240000
        ? 3 : 1;
}

/* GroupNormGrad's one tiling workspace: the platform's system workspace plus its float
 * stage-two buffers, two copies. Atlas A2/A3 (group_norm_grad_tiling.cpp CalStage2TilingInfo):
 * ceil(N / 2) x C for N > 2 (the deterministic stage two), else C for a 16-bit gradOut (the
 * cast) and none for FLOAT. Ascend 950 (group_norm_grad_tiling_arch35.cpp GetWorkspaceSize):
 * N x C in mode 3 (gng_arch35_mode), else ceil(N / 2) x C. */
static uint64_t gng_kernel_workspace(const aclemu_soc *soc, int64_t N, int64_t C, int64_t HW,
                                     int64_t G, aclDataType dy_dt, aclDataType gamma_dt)
{
    const uint64_t sys = ew_lib_api_workspace(soc);
    const int64_t half_n = (N + 1) / 2;
    if (soc->npu_arch != 3510)
        return sys + (uint64_t)(N > 2 ? 2 * half_n * C * 4 : dy_dt == ACL_FLOAT ? 0 : 2 * C * 4);
    const bool mode3 = gng_arch35_mode(N, C, HW, G, dy_dt, gamma_dt) == 3;
    return sys + (uint64_t)(2 * (mode3 ? N : half_n) * C * 4);
}

/* The composite's gradInput (Atlas training and inference parts; aclnn_group_norm_backward.cpp
 * GradInputProcess, GetvarianceBatchNorm, BatchNormBackwardInner's training branch,
 * BatchNormBackwardProcInner; norm_common norm_tensor_util.cpp ResizeFrom1D, FillScalar): the
 * rows (n, group) as a BatchNorm of N x group channels. Reshapes and UnsqueezeNd are views and
 * launch nothing; the eps of Sub is a host tensor (ConvertToTensor). in: the handles of the
 * contiguous gradOut, input, mean, rstd, gamma; dt their dtype; X = N x C x HxW, NG = N x group.
 * Every kernel here is TBE on these parts (ops-math's Mul, Div, Sub, OnesLike, Fill, Cast have
 * AscendC tilings for ascend950 only; BNTrainingUpdateGrad/ReduceGrad are not in the sources):
 * their own workspaces are not public, none. */
static void composite_dx(ew_graph *g, const int *in, aclDataType dt, const aclTensor *dx_user,
                         uint64_t X, uint64_t NG)
{
    const uint64_t es = aclemu_dtype_size(dt);
    const int dyg = ew_binary(g, in[T_DY], in[T_GAMMA], X * es); /* Mul(gradOut, gamma) */
    const int sq = ew_binary(g, in[T_RSTD], in[T_RSTD], NG * es); /* Mul(rstd, rstd) */
    const int ones = ew_convert(g, sq, NG * es);                  /* OnesLike */
    const int var = ew_convert(g, ew_binary(g, ones, sq, NG * es), NG * es); /* Div, Sub eps */
    const int w = ew_fill(g, NG * es); /* FillValue: the BatchNorm's weight, ones */
    /* FillScalar's FLOAT running mean and variance: the training branch never reads them */
    ew_fill(g, NG * 4);
    ew_fill(g, NG * 4);
    /* ResizeFrom1D: weight, saveMean, saveInvstd cast to FLOAT (none for FLOAT) */
    const int wf = ew_cast(g, w, dt, ACL_FLOAT, NG);
    const int mf = ew_cast(g, in[T_MEAN], dt, ACL_FLOAT, NG);
    const int vf = ew_cast(g, var, dt, ACL_FLOAT, NG);
    const int ku = ew_kernel(g); /* BNTrainingUpdateGrad: FLOAT diff scale and offset */
    ew_read_all(g, (const int[]){dyg, in[T_X], mf, vf}, 4, ku);
    const int gw = ew_output(g, ku, NG * 4), gb = ew_output(g, ku, NG * 4);
    const int kr = ew_kernel(g); /* BNTrainingReduceGrad: dx in input's dtype */
    ew_read_all(g, (const int[]){dyg, in[T_X], gw, gb, wf, mf, vf}, 7, kr);
    ew_copy_out(g, ew_output(g, kr, X * es), dt, dx_user, X);
}

/* ReduceSumOp over HxW, then over N (GetDgamma's and GetDbeta's ends): [N, C], then [C],
 * copied into out. */
static void composite_sum_out(ew_graph *g, int src, aclDataType dt, const aclTensor *out,
                              uint64_t NC, uint64_t C)
{
    const uint64_t es = aclemu_dtype_size(dt);
    ew_copy_out(g, ew_convert(g, ew_convert(g, src, NC * es), C * es), dt, out, C);
}

/* The composite's gradGammaOut (GetDgamma, CalDgamma): mean and rstd expanded to [N, group,
 * C / group] (l0op::Expand: N x C values each), x_hat = (x - mean) * rstd, dy * x_hat, summed. */
static void composite_dgamma(ew_graph *g, const int *in, aclDataType dt, const aclTensor *out,
                             uint64_t X, uint64_t NC, uint64_t C)
{
    const uint64_t es = aclemu_dtype_size(dt);
    const int mb = ew_convert(g, in[T_MEAN], NC * es), rb = ew_convert(g, in[T_RSTD], NC * es);
    const int xhat = ew_binary(g, ew_binary(g, in[T_X], mb, X * es), rb, X * es);
    composite_sum_out(g, ew_binary(g, in[T_DY], xhat, X * es), dt, out, NC, C);
}

/* The L0 GroupNormGrad's tiling on the kernel's parts for a call that computes: true where it
 * fails (the rule in why). Atlas A2/A3 (group_norm_grad_tiling.cpp): FLOAT with N > 2 and no
 * UB for a stage-two batch. Ascend 950 (group_norm_grad_tiling_arch35.cpp ParamsCheck): C /
 * group above 8000; mean, rstd and gamma of more than one dtype (gamma absent: its fill of
 * ones is of gradOut's dtype). The op_api's other tensors meet the rest of its checks. */
static bool kernel_tiling_fails(const aclTensor *const *ts, int64_t N, int64_t C, int64_t group,
                                const aclemu_soc *soc, char *why, size_t cap)
{
    const aclDataType dy = ts[T_DY]->dtype;
    if (soc->npu_arch == 2201) {
        if (dy != ACL_FLOAT || N <= 2 || a2_batch_parts(N, C, group, dy) > 0)
            return false;
        snprintf(why, cap, "its stage two has no UB for a batch (FLOAT, N %lld > 2, C %lld over "
                 "the cores the N x group tasks use)", (long long)N, (long long)C);
    } else if (C / group > 8000) {
        snprintf(why, cap, "C / group = %lld must be at most 8000", (long long)(C / group));
    } else if (!ts[T_GAMMA] && ts[T_MEAN]->dtype != dy) {
        snprintf(why, cap, "mean dtype %s must be gradOut's dtype %s without gamma (gamma's fill "
                 "of ones is of gradOut's dtype; mean, rstd and gamma must share one)",
                 dname(ts[T_MEAN]->dtype), dname(dy));
    } else {
        return false;
    }
    return true;
}

/* Phase one's workspace on a device (exec_workspace.h; docs/emulator.md "Phase one's
 * workspace size"): contiguous copies of strided gradOut, input, mean, rstd, gamma; an absent
 * gamma filled with ones (C values of gradOut's dtype, l0op::Fill; its AllocTensor'd stand-in
 * takes part in no kernel); then by part. The L0 GroupNormGrad (Atlas A2/A3, Ascend 950): the
 * kernel's workspace and its dx, dgamma, dbeta (dgamma and dbeta of gamma's dtype), each copied
 * out when outputMask asks for it, else left in the workspace. Ascend 950's empty input
 * (`zeros`) builds a fresh executor (ComputeGroupNormBackwardEmptyInput): only the empty-tensor
 * kernel (16 MiB, group_norm_grad_empty_tiling_arch35.cpp MIN_WORKSPACE_SIZE), its empty dx left
 * behind, dgamma and dbeta copied out. The composite (Atlas training and inference): only the
 * L0 ops of the outputs outputMask asks for, in its order (gradInput, gradGammaOut,
 * gradBetaOut); with none asked, the copies and the fill alone. */
static uint64_t gnb_device_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                                     const bool *mask, int64_t N, int64_t C, int64_t HW,
                                     int64_t G, gnb_path path)
{
    ew_graph g = ew_graph_on(soc->npu_arch);
    const bool zeros = path == PATH_ZEROS;
    const aclDataType dy_dt = ts[T_DY]->dtype;
    const aclDataType gamma_dt = ts[T_GAMMA] ? ts[T_GAMMA]->dtype : dy_dt;
    int64_t dy_count = 0;
    numel(ts[T_DY]->dims, ts[T_DY]->ndim, &dy_count);
    const uint64_t n = (uint64_t)dy_count, c = (uint64_t)C;
    int in[5] = {-1, -1, -1, -1, -1};
    if (!zeros) {
        for (int i = T_DY; i < T_GAMMA; i++)
            in[i] = ew_contiguous_copy(&g, ts[i]);
        in[T_GAMMA] = ts[T_GAMMA] ? ew_contiguous_copy(&g, ts[T_GAMMA])
                                  : ew_fill(&g, c * aclemu_dtype_size(dy_dt));
    }
    if (path == PATH_COMPOSITE) {
        const uint64_t nc = (uint64_t)(N * C);
        if (mask[0])
            composite_dx(&g, in, dy_dt, ts[T_DX], n, (uint64_t)(N * G));
        if (mask[1])
            composite_dgamma(&g, in, dy_dt, ts[T_DGAMMA], n, nc, c);
        if (mask[2])
            composite_sum_out(&g, in[T_DY], dy_dt, ts[T_DBETA], nc, c);
        return ew_size(&g);
    }
    char why[256];
    if (!zeros && kernel_tiling_fails(ts, N, C, G, soc, why, sizeof why))
        return ew_size(&g); /* no output asked (else refused): the launcher was never added */
    const int k = ew_kernel_reading(&g, in, 5);
    ew_kernel_workspace(&g, k, zeros ? EW_SYS_WORKSPACE
                                     : gng_kernel_workspace(soc, N, C, HW, G, dy_dt, gamma_dt));
    const aclDataType dt[3] = {dy_dt, gamma_dt, gamma_dt};
    const uint64_t count[3] = {n, c, c};
    for (int i = 0; i < 3; i++) {
        const int res = ew_output(&g, k, count[i] * aclemu_dtype_size(dt[i]));
        if (zeros ? i > 0 : mask[i])
            ew_copy_out(&g, res, dt[i], ts[T_DX + i], count[i]);
    }
    return ew_size(&g);
}

/* ---- the L0 ops' own refusals (561103) -------------------------------------------------- */

#define INNER(...) FAIL(ACLNN_ERR_INNER_NULLPTR, __VA_ARGS__)

static bool any_mask(const bool *mask)
{
    return mask[0] || mask[1] || mask[2];
}

/* The composite's gradGammaOut (GetDgamma, CalDgamma): a 1-D mean has mean and rstd reshaped
 * to [N, group]; any other mean has each unsqueezed as it is at axis 2 (ops-math
 * conversion/unsqueeze unsqueeze.cpp UnsqueezeNdInferShape: no axis 2 below rank 2), then
 * expanded to [N, group, C / group] (math/expand expand.cpp ExpandInfershape: a rank above the
 * target's, or a dim neither 1 nor the target's, fails). With N * group values, only [N, group]
 * itself broadcasts. Both unsqueezes run before either result is checked. */
static aclnnStatus composite_stats_rule(const aclTensor *const *ts, int64_t N, int64_t C,
                                        int64_t group, const aclemu_soc *soc)
{
    if (ts[T_MEAN]->ndim == 1)
        return ACLNN_SUCCESS;
    char s[256];
    for (int i = T_MEAN; i <= T_RSTD; i++)
        if (ts[i]->ndim < 2) {
            fmt_dims(s, sizeof s, ts[i]->dims, ts[i]->ndim);
            INNER("%s: %s %s has no axis 2 for l0op::UnsqueezeNd: on %s (%s) gradGammaOut's "
                  "graph unsqueezes mean and rstd as they are unless mean is 1-D", P1, TNAME[i],
                  s, soc->name, soc->series);
        }
    const int64_t want[2] = {N, group};
    for (int i = T_MEAN; i <= T_RSTD; i++)
        if (!same_dims(ts[i]->dims, ts[i]->ndim, want, 2)) {
            fmt_dims(s, sizeof s, ts[i]->dims, ts[i]->ndim);
            INNER("%s: %s %s unsqueezed at axis 2 cannot be expanded to [N, group, C / group] = "
                  "[%lld,%lld,%lld] (l0op::Expand): on %s (%s) gradGammaOut needs a 1-D mean or "
                  "mean and rstd of [N, group]", P1, TNAME[i], s, (long long)N, (long long)group,
                  (long long)(C / group), soc->name, soc->series);
        }
    return ACLNN_SUCCESS;
}

/* Ascend 950's empty-tensor kernel's tiling (group_norm_grad_empty_tiling_arch35.cpp), on the
 * op_api's tensors as given (ComputeGroupNormBackwardEmptyInput reshapes only a non-empty mean
 * and rstd, and gamma to [C]): gradOut of rank 2 or more, input of its shape; gradOut's dim 1
 * (its C) divisible by group into 1 to 8000 channels, or 0; C of gamma equal to it; mean and
 * rstd of gamma's dtype (an absent gamma is filled in gradOut's); mean of gradOut's dim 0 x
 * group values. The op_api checks the L0 result whatever outputMask says. (Shapes here are the
 * tensors' view shapes, which the tiling reads as storage shapes.) */
static aclnnStatus empty_kernel_rule(const aclTensor *const *ts, int64_t C, int64_t group)
{
    const aclTensor *dy = ts[T_DY], *x = ts[T_X];
    const char *why = "Ascend 950's empty-tensor GroupNormGrad tiling";
    char s[256];
    fmt_dims(s, sizeof s, dy->dims, dy->ndim);
    if (!same_dims(x->dims, x->ndim, dy->dims, dy->ndim)) {
        char sx[256];
        fmt_dims(sx, sizeof sx, x->dims, x->ndim);
        INNER("%s: input %s must be of gradOut's shape %s (%s)", P1, sx, s, why);
    }
    if (dy->ndim < 2)
        INNER("%s: gradOut %s has rank below 2 (%s)", P1, s, why);
    const int64_t c_ = dy->dims[1], n_ = dy->dims[0];
    if (c_ != 0 && (c_ % group != 0 || c_ / group == 0 || c_ / group > 8000))
        INNER("%s: gradOut %s's dim 1 (%lld) must split into group %lld groups of 1 to 8000 "
              "channels (%s)", P1, s, (long long)c_, (long long)group, why);
    if (C != c_)
        INNER("%s: gamma's C %lld must equal gradOut %s's dim 1 (%s)", P1, (long long)C, s, why);
    const aclDataType gamma_dt = ts[T_GAMMA] ? ts[T_GAMMA]->dtype : dy->dtype;
    if (ts[T_MEAN]->dtype != gamma_dt)
        INNER("%s: mean dtype %s must be %s's dtype %s (%s)", P1, dname(ts[T_MEAN]->dtype),
              ts[T_GAMMA] ? "gamma" : "an absent gamma's fill, gradOut", dname(gamma_dt), why);
    int64_t want = 0, have = 0;
    numel(ts[T_MEAN]->dims, ts[T_MEAN]->ndim, &have);
    if (__builtin_mul_overflow(n_, group, &want) || have != want)
        INNER("%s: mean's %lld values must be gradOut %s's dim 0 x group %lld (%s)", P1,
              (long long)have, s, (long long)group, why);
    return ACLNN_SUCCESS;
}

/* The L0 ops' refusals in phase one that CheckParams lets through, each returned by the
 * op_api as ACLNN_ERR_INNER_NULLPTR: on the L0 kernel's parts its tiling, run by phase one
 * (opbase op_executor.cpp CreatAiCoreKernelLauncher; group_norm_grad.cpp returns NULLs), whose
 * results the op_api checks only for the outputs outputMask asks for; on the composite's parts
 * gradGammaOut's UnsqueezeNd and Expand. */
static aclnnStatus l0_refusals(const aclTensor *const *ts, const bool *mask, int64_t N,
                               int64_t C, int64_t HxW, int64_t group, gnb_path path,
                               const aclemu_soc *soc)
{
    if (path == PATH_ZEROS)
        return empty_kernel_rule(ts, C, group);
    int64_t nchw = 0;
    if ((path == PATH_KERNEL || path == PATH_COMPOSITE) &&
        (C < 0 || __builtin_mul_overflow(N, C, &nchw) ||
         __builtin_mul_overflow(nchw, HxW, &nchw) || __builtin_mul_overflow(N, group, &nchw)))
        INNER("%s: N %lld, C %lld, HxW %lld, group %lld pass CheckShape only through %s; the "
              "kernels' handling of such dims is not in the sources (Ascend 950's tiling "
              "refuses C <= 0), not modelled", P1, (long long)N, (long long)C, (long long)HxW,
              (long long)group, C < 0 ? "negative C and HxW" : "int64 products that wrap");
    if (path == PATH_COMPOSITE && mask[1])
        return composite_stats_rule(ts, N, C, group, soc);
    char why[256];
    if (path == PATH_KERNEL && any_mask(mask) && kernel_tiling_fails(ts, N, C, group, soc, why,
                                                                     sizeof why))
        INNER("%s: GroupNormGrad's tiling on %s (%s) fails: %s", P1, soc->name, soc->series,
              why);
    return ACLNN_SUCCESS;
}

/* The ViewCopy of the empty-tensor kernel's dgamma or dbeta ([C]) into out (561103 when it
 * fails: out NULL, not of the L0 result's dtype or not of C elements). */
static aclnnStatus empty_copy(const aclTensor *out, int i, aclDataType dt, int64_t C)
{
    if (!out)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s is NULL, but on this part an empty input's "
             "zeroed dgamma and dbeta are copied out whatever outputMask says", P1, TNAME[i]);
    if (out->dtype != dt)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s dtype %s must be %s for the copy of the empty "
             "kernel's result", P1, TNAME[i], dname(out->dtype), dname(dt));
    int64_t n = 0;
    if (!numel(out->dims, out->ndim, &n) || n != C)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s must hold C = %lld elements for the copy of the "
             "empty kernel's result", P1, TNAME[i], (long long)C);
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *rstd, const aclTensor *gamma, int64_t N, int64_t C, int64_t HxW,
    int64_t group, const aclBoolArray *outputMask, aclTensor *gradInput,
    aclTensor *gradGammaOut, aclTensor *gradBetaOut, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {gradOut, input, mean, rstd, gamma,
                                    gradInput, gradGammaOut, gradBetaOut};

    /* 0. the out-pointers first (161001), 1. gradOut, input, mean, rstd (161001); every handle
     * given must be live; the part only after the mask's checks */
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(T_DY, T_GAMMA), workspaceSize,
                                executor, NULL);
    if (st)
        return st;
    /* 2. the mask and the outputs it asks for (CheckMaskNotNull: 161002 for each) */
    if (!outputMask)
        INVALID("%s: outputMask is NULL", P1);
    if (!aclemu_handle_check(outputMask, ACLEMU_KIND_BOOL_ARRAY))
        INVALID("%s: outputMask (%p) is not a live aclBoolArray", P1, (const void *)outputMask);
    if (outputMask->size != 3)
        INVALID("%s: outputMask length %llu != 3", P1, (unsigned long long)outputMask->size);
    const bool mask[3] = {outputMask->values[0], outputMask->values[1], outputMask->values[2]};
    for (int k = 0; k < 3; k++)
        if (mask[k] && !ts[T_DX + k])
            INVALID("%s: outputMask[%d] is true but %s is NULL", P1, k, TNAME[T_DX + k]);

    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    const bool regbase = soc->npu_arch == 3510;
    /* 3. dtypes, 4. attributes, 5. shapes (161002), in the vendor's order */
    if ((st = check_dtypes(ts, mask, soc, regbase)) || (st = check_attrs(C, group, soc)) ||
        (st = check_shapes(ts, mask, N, C, HxW, group)))
        return st;

    gnb_path path;
    int64_t dy_count = 0;
    numel(gradOut->dims, gradOut->ndim, &dy_count);
    const bool empty = dy_count == 0; /* gradOut's or input's: CheckShape made them equal */
    if (empty && !regbase) {
        path = PATH_NONE;
    } else if (regbase && empty && C != 0) { /* gamma (or its fill) not empty */
        path = PATH_ZEROS;
    } else if (empty) {
        path = PATH_NONE; /* regbase, C 0: gamma empty */
    } else {
        path = soc->npu_arch == 2201 || regbase ? PATH_KERNEL : PATH_COMPOSITE;
    }

    /* 6. what the L0 ops refuse (561103) */
    if ((st = l0_refusals(ts, mask, N, C, HxW, group, path, soc)))
        return st;
    if (path == PATH_ZEROS) { /* then its ViewCopys (the empty kernel's dgamma, dbeta) */
        const aclDataType dt = gamma ? gamma->dtype : gradOut->dtype;
        if ((st = empty_copy(gradGammaOut, T_DGAMMA, dt, C)) ||
            (st = empty_copy(gradBetaOut, T_DBETA, dt, C)))
            return st;
    }

    gnb_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    P->N = N;
    P->C = C;
    P->HW = HxW;
    P->G = group;
    P->D = C / group;
    P->E = empty ? 0 : P->D * HxW;
    P->path = path;
    for (int k = 0; k < 3; k++)
        P->mask[k] = mask[k] && path != PATH_ZEROS;
    if (path == PATH_ZEROS)
        P->mask[1] = P->mask[2] = true;
    P->ties = soc->npu_arch == 2201 ? ACLEMU_TIES_AWAY : ACLEMU_TIES_EVEN;
    P->eps_data = 1e-5f;
    aclemu_round_floats(rstd->dtype, ACLEMU_TIES_EVEN, &P->eps_data, 1);
    if (path == PATH_KERNEL)
        a2_tiling(P, gradOut->dtype);
    if (path == PATH_KERNEL && regbase && gng_arch35_mode(N, C, HxW, group, gradOut->dtype,
                                                          gamma ? gamma->dtype
                                                                : gradOut->dtype) <= 1)
        P->mode = MODE_ARCH35;
    const bool runs = path == PATH_KERNEL || path == PATH_COMPOSITE;
    P->h = (nr_head){.kernel = &GNB_KERNEL, .call = P2, .names = TNAME,
                     .rows = runs ? N * group : path == PATH_ZEROS ? 1 : 0, .width = C,
                     .row_floats = runs ? row_floats(P) : 1,
                     .run_floats = runs ? 2 * N * C : C,
                     .no_kernel = path == PATH_NONE}; /* the op_api's returns before any L0 op */
    for (int i = 0; i < T_COUNT; i++) {
        const bool used = i < T_DX || (path == PATH_ZEROS ? i != T_DX : mask[i - T_DX]);
        snapshot(&P->t[i], used ? ts[i] : NULL, -1);
    }
    if (path == PATH_NONE)
        for (int i = 0; i < T_COUNT; i++)
            P->t[i].present = false;
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    const uint64_t ws_size = path == PATH_NONE
        ? 0 : gnb_device_workspace(soc, ts, mask, N, C, HxW, group, path);
    return p1_finish(P1, &GNB_OPS, P, ws_size, ts, TNAME, T_COUNT, T_DX, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnGroupNormBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
