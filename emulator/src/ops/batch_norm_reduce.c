/*
 * aclnnBatchNormReduce for the CPU emulator: phase one (checks, executor), the launch and the
 * kernel. Per channel of a 4-D input x (dim 1 of NCHW, dim 3 of NHWC) the sum and the sum of
 * squares of its values over the other three dims, both FLOAT [C]: the first half of a
 * training BatchNorm (BNTrainingReduce), whose statistics the caller completes.
 *
 * Facts, hicann/ops-nn norm/bn_training_reduce: op_api/aclnn_batch_norm_reduce.cpp (phase one,
 * its order and codes, the graph), norm/batch_norm_v3/op_host/op_api/batch_norm.cpp (the L0
 * BNTrainingReduce), op_host/arch35 (Ascend 950's tiling: templates, workspaces), op_kernel/
 * arch35 (its kernel), docs/aclnnBatchNormReduce.md, norm/norm_common/op_host/op_api/
 * norm_tensor_util.cpp (ProcessEmptyTensorWithValue):
 * - phase one: workspaceSize/executor NULL (161001); x, sum, squareSum NULL (161001); then an
 *   empty x, sum or squareSum: success, sum and squareSum filled with 0 (a Fill and its copy
 *   each), nothing else checked (stricter: both must be FLOAT, the docs' dtype, which the
 *   emulator's fill writes); then CheckParams: x's dtype FLOAT/FLOAT16/BF16 (BF16 where the
 *   part has it), sum's and squareSum's FLOAT; x's format NCHW or NHWC, sum's and squareSum's
 *   ND; x of rank 4, sum and squareSum of rank 1 with C elements (all 161002).
 * - the kernel: BNTrainingReduce, on Ascend 950 the AscendC kernel of op_kernel/arch35,
 *   elsewhere a TBE kernel not in the sources (the op_api has no platform check; the docs list
 *   the Atlas training and inference series as unsupported, but aclnnBatchNorm runs the same
 *   BNTrainingReduce there, so the emulator runs it on every part).
 * - the numbers: x widened to float32 exactly, sum = sum(x), squareSum = sum(x * x) (the square
 *   rounded to float before it is added: arch35's CastSquareVfImpl). On Ascend 950 in the
 *   order of the template the tiling picks (bnr_order_of; docs/emulator.md): the small-R
 *   template's plain running sums; the normal and group templates' R chunks, paired by the
 *   bisection schedule, each reduced by AscendC's ReduceSum (RA: tail-A patterns, AR: tail-R)
 *   and the chunk sums added by the cache tree; the group templates' per-group roots added by
 *   the deterministic Phase 2's RA ReduceSum (level 1) or by atomic adds (level 0, taken in
 *   group order: the device's order is the cores' timing). The sum's inputs scaled by
 *   2^-ceil(log2 R) first and the result by 2^ceil(log2 R) after (sumInputScale_), except the
 *   tail-R group templates'. Elsewhere (TBE kernels, not public) norm_rows.h's fixed lane
 *   order.
 * - Ascend 950's tiling runs in phase one (hicann/opbase composite_op/aclnn_engine
 *   op_executor.cpp CreatAiCoreKernelLauncher -> kernel_workspace.cpp GetWorkspace); where no
 *   UB split fits (bnr_order_of) the L0 op returns NULL, which the op_api's ResizeTo1D
 *   dereferences: stricter, the emulator refuses with the op_api's code for a NULL L0 result
 *   (561103).
 *
 * Kernel: channels are independent; each channel's sums have a fixed order, so the split of
 * channels over threads never changes a bit.
 */
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

#include "aclnnop/aclnn_batch_norm_reduce.h"

#define P1 "aclnnBatchNormReduceGetWorkspaceSize"
#define P2 "aclnnBatchNormReduce"

/* the prototype's order */
enum { T_X, T_SUM, T_SQSUM, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x", "sum", "squareSum"};
#define N_INPUTS 1 /* x */
#define DAV_3510 3510 /* Ascend 950 (regbase) */

/* Which Ascend 950 template sums the channels, and the shape of its order (bnr_order_of). */
enum { BNR_PLAIN, BNR_SMALL_R, BNR_NORMAL, BNR_GROUP };

typedef struct {
    int kind;
    bool tail_r;            /* the fused pattern ends in R: ReduceSum's AR form, else RA */
    bool deterministic;     /* the group templates' Phase 2 (level 1), else atomic adds */
    int64_t lanes;          /* a chunk's padded A lanes (aUbFactorAlign * innerAProdAlign) */
    int64_t bundle;         /* a chunk's padded R values (rUbFactorAlign * innerRProdAlign) */
    int64_t r_factor;       /* values of the split R axis a chunk takes (rUbFactor) */
    int64_t split_size;     /* the split R axis's size */
    int64_t inner, inner_align; /* the whole R axis inside the split one (1: none), padded */
    int64_t r_loops, groups; /* the chunks (rLoopCntTotal), the row groups (rGroupCnt) */
    int64_t p2_factor;      /* Phase 2's channels per loop (aUbFactorP2) */
    float in_scale, out_scale; /* the sum's sumInputScale_ and its restore */
} bnr_order;

typedef struct {
    tdesc t[T_COUNT];
    bnr_order order;  /* phase one's tiling: the kernel's order */
    int chunk_values; /* a chunk's floats per value of a channel: its values and scratch */
    uint64_t ws_size; /* what phase one reports: the device's (exec_workspace.h) */
    bool empty;       /* the op_api's empty branch: sum and squareSum filled with 0 */
    int caxis;        /* x's channel dim: 1 (NCHW) or 3 (NHWC) */
    int64_t C, R;     /* channels, values per channel */
    int64_t n_out[2]; /* the empty branch: sum's and squareSum's element counts */
} bnr_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* An adjacent-pair tree over n floats (n a power of two), in place: the cache tree's levels
 * (DoCachingVfImpl: a level's sum is the newer partial plus the one cached before it) and a
 * data block's ReduceSumWithDataBlock (taken as the 64-lane Reduce's tree, norm_rows.h). */
static float bnr_pairs(float *v, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2)
        for (int64_t j = 0; j + w < n; j += 2 * w)
            v[j] = v[j] + v[j + w];
    return v[0];
}

/* n rows of w floats (n a power of two) reduced into row 0, in place: with grouped, rounds of
 * 16 rows to one while 16 remain (row j from rows 16 j .. 16 j + 15, halving within the 16:
 * the LessThanVL RA form, the OverVL AR form's registers), then halving (row r plus row
 * r + h; the strided 16-row rounds of the other forms are the same adds). */
static void bnr_fold(float *v, int64_t n, int64_t w, bool grouped)
{
    for (; grouped && n >= 16; n /= 16)
        for (int64_t j = 0; j < n / 16; j++) {
            float *g = v + 16 * j * w;
            for (int64_t h = 8; h >= 1; h /= 2)
                for (int64_t k = 0; k < h * w; k++)
                    g[k] = g[k] + g[k + h * w];
            if (j > 0) /* row j's own group was reduced before */
                memcpy(v + j * w, g, (size_t)w * sizeof(float));
        }
    for (int64_t h = n / 2; h >= 1; h /= 2)
        for (int64_t k = 0; k < h * w; k++)
            v[k] = v[k] + v[k + h * w];
}

/* The largest power of two <= n (CalculateMainR), after which the rest of v is added onto its
 * front (ReduceSum's tail fold). */
static int64_t bnr_main_fold(float *v, int64_t n)
{
    int64_t m = 1;
    while (m * 2 <= n)
        m *= 2;
    for (int64_t r = 0; r < n - m; r++)
        v[r] = v[r] + v[m + r];
    return m;
}

/* One lane's column of n rows under ReduceSum<float, RA, true> with dimA = lanes (asc-devkit
 * reduce_common_ra_reuse_align_3510_impl.h ReduceRAImpl): the Concat form (lanes <= 32) and
 * the OverVL form (> 64) halve, the LessThanVL form (33 .. 64) folds by 16-row groups. */
static float bnr_ra(float *v, int64_t n, int64_t lanes)
{
    if (n == 1)
        return v[0];
    bnr_fold(v, bnr_main_fold(v, n), 1, lanes > 32 && lanes <= 64);
    return v[0];
}

/* One row of n floats (n 1 or a multiple of 8) under ReduceSum<float, AR, true>
 * (reduce_common_ar_reuse_align_3510_impl.h ReduceARImpl, the SUM group reduce of
 * reduce_common_ar_reuse_align_less_than_vl_3510_impl.h): 8 one data block's reduce; 16 or
 * 24 the blocks added in order onto the first, then its reduce; 32 .. 64 one masked 64-lane
 * Reduce; above, the tail fold, 64-lane registers in 16-register rounds then halving, and the
 * last register's Reduce. */
static float bnr_ar(float *v, int64_t n)
{
    if (n == 1)
        return v[0];
    if (n < 32) {
        for (int64_t b = 8; b < n; b += 8)
            for (int i = 0; i < 8; i++)
                v[i] = v[b + i] + v[i];
        return bnr_pairs(v, 8);
    }
    if (n <= NR_VECTOR_LANES) {
        float lanes[NR_VECTOR_LANES] = {0};
        memcpy(lanes, v, (size_t)n * sizeof(float));
        return nr_fold_vector_lanes(lanes);
    }
    bnr_fold(v, bnr_main_fold(v, n) / NR_VECTOR_LANES, NR_VECTOR_LANES, true);
    return nr_fold_vector_lanes(v);
}

/* Chunk k of a channel's R values x as the UB tile's lane holds it (CopyInRChunk, UnravelR),
 * through PreElewise: squares (CastSquareVfImpl) or the values times scale; the padding and a
 * short chunk's rows past its end +0 (DataCopyPad's pad, ClearChunkExtensionVf). */
static void bnr_chunk(const bnr_order *o, const float *x, int64_t k, bool square, float scale,
                      float *v)
{
    const int64_t per = (o->split_size + o->r_factor - 1) / o->r_factor;
    const int64_t first = k % per * o->r_factor, outer = k / per;
    const int64_t rows = o->split_size - first < o->r_factor ? o->split_size - first
                                                              : o->r_factor;
    memset(v, 0, (size_t)o->bundle * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        const float *src = x + (outer * o->split_size + first + r) * o->inner;
        float *dst = v + r * o->inner_align;
        for (int64_t i = 0; i < o->inner; i++)
            dst[i] = square ? src[i] * src[i] : src[i] * scale;
    }
}

/* ComputeRRange over chunks [k0, k0 + count): P the largest power of two below count (1 for
 * 1 and 2), unit u chunk u plus chunk u + P where there is one (MergeTmpBufVf), each unit's
 * ReduceSum, the units' cache tree. s: scratch (2 bundle + count floats). */
static float bnr_range(const bnr_order *o, const float *x, int64_t k0, int64_t count,
                       bool square, float scale, float *s)
{
    float *v = s, *w = s + o->bundle, *units = w + o->bundle;
    const int64_t P = count <= 2 ? 1 : nr_pow2_below(count);
    for (int64_t u = 0; u < P; u++) {
        bnr_chunk(o, x, k0 + u, square, scale, v);
        if (u < count - P) {
            bnr_chunk(o, x, k0 + u + P, square, scale, w);
            for (int64_t i = 0; i < o->bundle; i++)
                v[i] = v[i] + w[i];
        }
        units[u] = o->tail_r ? bnr_ar(v, o->bundle) : bnr_ra(v, o->bundle, o->lanes);
    }
    return bnr_pairs(units, P);
}

/* Channel c's sum (square: squareSum) of its R values x on Ascend 950's template. */
static float bnr_channel(const bnr_order *o, const float *x, int64_t R, int64_t c, int64_t C,
                         bool square, float *s)
{
    const float in = square ? 1.0f : o->in_scale, out = square ? 1.0f : o->out_scale;
    if (o->kind == BNR_SMALL_R) { /* SmallRFusedStatsVfImpl: one running sum from +0 */
        float acc = 0.0f;
        for (int64_t i = 0; i < R; i++)
            acc = acc + (square ? x[i] * x[i] : x[i]);
        return acc;
    }
    if (o->kind == BNR_NORMAL)
        return bnr_range(o, x, 0, o->r_loops, square, in, s) * out;
    /* Phase1Process: group g's chunks, its root; a group past the chunks writes nothing (its
     * workspace row taken as +0) */
    const int64_t per = (o->r_loops + o->groups - 1) / o->groups;
    float *part = s + 2 * o->bundle + o->r_loops;
    float acc = 0.0f;
    for (int64_t g = 0; g < o->groups; g++) {
        const int64_t n = o->r_loops - g * per < per ? o->r_loops - g * per : per;
        part[g] = n > 0 ? bnr_range(o, x, g * per, n, square, in, s) : 0.0f;
        if (!o->deterministic && n > 0) /* PostGroupPartial's restore, an atomic add */
            acc = acc + part[g] * out;
    }
    if (!o->deterministic)
        return acc;
    /* Phase2Process: c's loop of p2_factor channels, its RA ReduceSum over the groups (dimA
     * the loop's channels rounded up to 8), the restore */
    const int64_t a0 = c / o->p2_factor * o->p2_factor;
    const int64_t len = C - a0 < o->p2_factor ? C - a0 : o->p2_factor;
    return bnr_ra(part, o->groups, (len + 7) / 8 * 8) * out;
}

static void channels_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const bn_task *T = ctx;
    const bnr_payload *P = bn_task_payload(T);
    const int64_t R = P->R, C = P->C;
    float *sum = T->params, *sqsum = sum + C;
    float *x = T->buf + chunk * P->chunk_values * R, *scratch = x + R;
    chan_lay in;
    chan_lay_build(&in, &P->t[T_X], P->caxis);
    const int64_t outer = R / (in.inner ? in.inner : 1);
    for (int64_t c = begin; c < end; c++) {
        load_channel(&P->t[T_X], &in, c, outer, x);
        if (P->order.kind == BNR_PLAIN) {
            sum[c] = nr_scaled_sum(x, R, 1.0f);
            sqsum[c] = nr_scaled_sum_squares(x, R, 1.0f);
            continue;
        }
        sum[c] = bnr_channel(&P->order, x, R, c, C, false, scratch);
        sqsum[c] = bnr_channel(&P->order, x, R, c, C, true, scratch);
    }
}

static void task_run(void *arg)
{
    bn_task *T = arg;
    const bnr_payload *P = bn_task_payload(T);
    if (P->empty) {
        for (int i = T_SUM; i <= T_SQSUM; i++)
            for (int64_t k = 0; k < P->n_out[i - T_SUM]; k++)
                put_one(&P->t[i], k, 0.0f);
        return;
    }
    aclemu_parallel_for(P->C, T->nchunks, channels_body, T);
    put_two(&P->t[T_SUM], &P->t[T_SQSUM], T->params, P->C);
}

/* ---- launch ------------------------------------------------------------------------------- */

static const bn_kernel BNR_KERNEL = {
    .call = P2,
    .names = TNAME,
    .payload_size = sizeof(bnr_payload),
    .tensors_at = offsetof(bnr_payload, t),
    .ntensors = T_COUNT,
    .chunk_values = 1, /* a channel's values, then the order's scratch (bnr_launch) */
    .nparams = 2,      /* the results: sum, squareSum */
    .run = task_run,
};

static aclnnStatus bnr_launch(void *payload, void *const *addrs, void *workspace,
                              uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const bnr_payload *P = payload;
    /* the empty branch's fills are kernels but need no buffers (C 0 for the launch); with
     * both outputs empty nothing launches */
    bn_kernel kernel = BNR_KERNEL;
    kernel.chunk_values = P->chunk_values;
    if (P->empty && P->n_out[0] == 0 && P->n_out[1] == 0)
        kernel.run = NULL;
    return bn_task_launch(&kernel, payload, addrs, workspace, P->ws_size, stream,
                          P->empty ? 0 : P->C, P->empty ? 0 : P->R);
}

static const aclemu_executor_ops BNR_OPS = {
    .op_name = P2,
    .launch = bnr_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- Ascend 950's tiling: the template, its order, its workspace ------------------------- */

/*
 * op_host/arch35/bn_training_reduce_tiling_public.cpp, reduced to what decides the kernel's
 * order and the workspace: the UB split, whether the group templates run (the A loops fill at
 * most half the cores and R takes two loops or more) and their row groups, Phase 2's channels
 * per loop. Every template asks GetLibApiWorkSpaceSize; the
 * DETERMINISTIC_GROUP_TAIL_A/R keys (GetDeterministic() == 1 only) add one FLOAT per channel
 * and row group for the per-group partials (TryComputeGroupWorkspaceSize).
 */
#define BNR_CACHE_BYTES 16384 /* kCacheBytes */
#define BNR_MAX_AXES 9        /* MAX_PATTERN_RANK */

typedef struct {
    int64_t axis[BNR_MAX_AXES]; /* the fused pattern A, R, A, ...: A at even indices */
    int n;
    bool tail_r; /* the pattern ends in R (an even count of axes) */
    int64_t ds, block, ub, cores;
    int a_split, r_split;
    int64_t a_factor, a_align, a_inner, a_inner_align;
    int64_t r_factor, r_align, r_inner_align;
    int64_t a_loops, r_loops;
} bnr_tiling;

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t calign(int64_t a, int64_t b)
{
    return cdiv(a, b) * b;
}

/* NormalizePattern: dims of 1 dropped, neighbours of one kind fused, an A axis first, an R
 * axis always present. */
static void bnr_pattern(bnr_tiling *t, const int64_t *shape, int caxis)
{
    int64_t ax[6];
    bool red[6];
    int n = 0;
    for (int i = 0; i < 4; i++) {
        if (shape[i] == 1)
            continue;
        if (n && red[n - 1] == (i != caxis)) {
            ax[n - 1] *= shape[i];
            continue;
        }
        ax[n] = shape[i];
        red[n++] = i != caxis;
    }
    int m = 0;
    if (n == 0 || red[0]) /* an A axis of 1 first */
        t->axis[m++] = 1;
    bool has_r = false;
    for (int i = 0; i < n; i++)
        has_r |= red[i];
    if (!has_r && n > 0) { /* [1 (A), 1 (R)] before the lone A axis */
        t->axis[m++] = 1;
        t->axis[m++] = 1;
    }
    for (int i = 0; i < n; i++)
        t->axis[m++] = ax[i];
    if (n == 0) /* all dims 1: [1 (A), 1 (R)] */
        t->axis[m++] = 1;
    t->n = m;
    t->tail_r = m % 2 == 0;
}

static int64_t bnr_prod(const bnr_tiling *t, int from, int below)
{
    int64_t p = 1;
    for (int i = from; i < below; i += 2)
        p *= t->axis[i];
    return p;
}

/* The A split for a target of A elements: ComputeAUbFactor's walk (expand: false) or
 * ExpandAIfRFullyLoaded's (true); false where the latter finds no block-aligned factor. */
static bool bnr_a_split(bnr_tiling *t, int64_t target, bool expand)
{
    const int last_a = t->tail_r ? t->n - 2 : t->n - 1;
    const int64_t block_elems = t->block / t->ds;
    t->a_inner = t->a_inner_align = 1;
    t->a_split = last_a;
    while (t->axis[t->a_split] * t->a_inner_align < target && t->a_split >= 2) {
        const int64_t size = t->axis[t->a_split];
        const bool align = t->a_split == last_a && !t->tail_r;
        t->a_inner *= size;
        t->a_inner_align *= align ? calign(size, block_elems) : size;
        t->a_split -= 2;
    }
    const int64_t split = t->axis[t->a_split];
    const bool at_last = t->a_split == last_a && !t->tail_r;
    if (!expand) {
        t->a_factor = cdiv(target, t->a_inner_align);
        t->a_factor = t->a_factor < split ? t->a_factor : split;
        t->a_factor = t->a_factor > 1 ? t->a_factor : 1;
        t->a_align = at_last ? calign(t->a_factor, block_elems) : t->a_factor;
        return true;
    }
    int64_t total = target / t->a_inner_align;
    total = total < split ? total : split;
    if (at_last) {
        total -= total % block_elems;
        if (total == 0)
            return false;
    }
    t->a_factor = t->a_align = total;
    return true;
}

/* ComputeRiMax, ComputeRUbFactor: the R split under the UB left by the A split. */
static bool bnr_r_split(bnr_tiling *t)
{
    const int64_t avail = t->ub - BNR_CACHE_BYTES, a_unit = t->a_align * t->a_inner_align;
    if (t->ub <= BNR_CACHE_BYTES || a_unit <= 0 || a_unit * 4 >= avail)
        return false;
    const int64_t r_max = (avail - a_unit * 4) / (a_unit * (2 * t->ds + 8));
    if (r_max < 1)
        return false;
    const int last_r = t->tail_r ? t->n - 1 : t->n - 2;
    const int64_t block_elems = t->block / t->ds;
    t->r_inner_align = 1;
    t->r_split = last_r;
    while (t->axis[t->r_split] * t->r_inner_align <= r_max && t->r_split >= 3) {
        const int64_t size = t->axis[t->r_split];
        t->r_inner_align *= t->r_split == last_r && t->tail_r ? calign(size, block_elems) : size;
        t->r_split -= 2;
    }
    const int64_t split = t->axis[t->r_split];
    const int64_t f = r_max / t->r_inner_align;
    t->r_factor = f < split ? f : split;
    if (t->r_factor < 1)
        return false;
    const bool at_last = t->tail_r && t->r_split == last_r;
    if (at_last && t->r_factor < split) {
        t->r_factor -= t->r_factor % block_elems;
        if (t->r_factor == 0)
            return false;
    }
    t->r_align = at_last ? calign(t->r_factor, block_elems) : t->r_factor;
    return true;
}

/* ExpandAIfRFullyLoaded: with the whole R in the UB, A grows to what the rest holds. */
static bool bnr_expand_a(bnr_tiling *t)
{
    if (!(t->r_factor == t->axis[t->r_split] && t->r_split == 1))
        return true;
    const int64_t per_a = t->r_align * t->r_inner_align * (2 * t->ds + 8) + 4;
    int64_t target = (t->ub - BNR_CACHE_BYTES) / per_a;
    const int64_t total_a = bnr_prod(t, 0, t->n);
    target = target < total_a ? target : total_a;
    target = target < BNR_CACHE_BYTES / 4 ? target : BNR_CACHE_BYTES / 4;
    if (target <= t->a_align * t->a_inner_align)
        return true;
    return bnr_a_split(t, target, true);
}

/* FitsUb and FitsCache for the split found. */
static bool bnr_fits(const bnr_tiling *t)
{
    const int64_t a_unit = t->a_align * t->a_inner_align;
    const int64_t unit = a_unit * t->r_align * t->r_inner_align;
    const int64_t ub = BNR_CACHE_BYTES + 2 * calign(unit * t->ds, t->block) +
                       2 * calign(unit * 4, t->block) + calign(a_unit * 4, t->block);
    int64_t caches = 0;
    for (int64_t l = t->r_loops; l > 0; l >>= 1)
        caches++;
    return ub <= t->ub && caches > 0 && caches * a_unit * 4 <= BNR_CACHE_BYTES;
}

/* ComputeUbSplit, halving the A target from a cache line's elements until a split fits. */
static bool bnr_ub_split(bnr_tiling *t, int64_t cache_line)
{
    for (int64_t a_target = cache_line / t->ds;; a_target = a_target / 2 > 1 ? a_target / 2
                                                                               : 1) {
        int64_t target = a_target;
        if (t->tail_r) {
            const int64_t per_core = cdiv(bnr_prod(t, 0, t->n), t->cores);
            target = target < per_core ? target : per_core;
        }
        bnr_a_split(t, target > 1 ? target : 1, false);
        if (bnr_r_split(t) && bnr_expand_a(t)) {
            t->r_loops = bnr_prod(t, 1, t->r_split) * cdiv(t->axis[t->r_split], t->r_factor);
            if (bnr_fits(t))
                return true;
        }
        if (a_target == 1)
            return false;
    }
}

/*
 * The template that runs for x and its order's shape: TryBuildSmallRConfig first (N 1, NCHW,
 * H * W of 1, 3, 10 or 17), then ComputeBNTrainingReducePublicTiling: the UB split, the A
 * loops; the group templates where those fill at most half the cores and R takes two loops
 * or more (ComputeFusedALoopSplit, ComputeGroupSplit), else the normal ones. BNR_PLAIN where
 * no split fits (phase one refuses: bnr_no_split). The kernel's Init: sumInputScale_ halved
 * and its restore doubled once per bit of R - 1; Phase2Process's aUbFactorP2.
 */
static void bnr_order_of(bnr_order *o, const aclTensor *x, int caxis, int64_t cores, int64_t ub,
                         bool deterministic)
{
    const int64_t *s = x->dims;
    const int64_t hw = s[2] * s[3];
    *o = (bnr_order){.kind = BNR_PLAIN, .in_scale = 1.0f, .out_scale = 1.0f};
    if (caxis == 1 && s[0] == 1 && (hw == 1 || hw == 3 || hw == 10 || hw == 17)) {
        o->kind = BNR_SMALL_R;
        return;
    }
    bnr_tiling t = {.ds = (int64_t)aclemu_dtype_size(x->dtype), .block = 32, .ub = ub,
                    .cores = cores};
    bnr_pattern(&t, s, caxis);
    if (!bnr_ub_split(&t, 256)) /* GetCacheLineSize: 256 */
        return;
    const int64_t R = bnr_prod(&t, 1, t.n); /* the R axes sit at odd indices */
    for (uint64_t steps = (uint64_t)(R - 1); steps; steps >>= 1) {
        o->in_scale *= 0.5f;
        o->out_scale *= 2.0f;
    }
    o->kind = BNR_NORMAL;
    o->tail_r = t.tail_r;
    o->lanes = t.a_align * t.a_inner_align;
    o->bundle = t.r_align * t.r_inner_align;
    o->r_factor = t.r_factor;
    o->split_size = t.axis[t.r_split];
    o->inner = bnr_prod(&t, t.r_split + 2, t.n);
    o->inner_align = t.r_inner_align;
    o->r_loops = t.r_loops;
    t.a_loops = bnr_prod(&t, 0, t.a_split) * cdiv(t.axis[t.a_split], t.a_factor);
    if (!(t.a_loops <= cores / 2 && t.r_loops >= 2))
        return;
    const int64_t outer = t.a_loops * t.r_loops, per_core = cdiv(outer, cores);
    int64_t blocks = cdiv(outer, per_core);
    const int64_t up = calign(blocks, t.a_loops);
    blocks = up <= cores ? up : blocks - blocks % t.a_loops;
    o->kind = BNR_GROUP;
    o->deterministic = deterministic;
    o->groups = blocks / t.a_loops;
    if (t.tail_r) /* Phase 1 casts without the scale (groupPhase && isTailR), nothing restores */
        o->in_scale = o->out_scale = 1.0f;
    /* ComputeUbSizes' preReduceUbSize, postReduceUbSize and tmpBufUbSize, in floats */
    const int64_t a_unit = o->lanes, unit = a_unit * o->bundle;
    int64_t f = calign(unit * t.ds, 32) / 4 / o->groups;
    f = f >= 8 ? f / 8 * 8 : f;
    f = f < calign(a_unit * 4, 32) / 4 ? f : calign(a_unit * 4, 32) / 4;
    f = f < calign(unit * 4, 32) / 4 ? f : calign(unit * 4, 32) / 4;
    const int64_t C = bnr_prod(&t, 0, t.n);
    /* at least 1: a group template's chunks fill most of the UB, far more floats than the
     * cores' groups, so Phase 2's guard against none never fires */
    o->p2_factor = f < C ? (f > 1 ? f : 1) : C;
}

/*
 * The refusal where bnr_order_of finds no UB split (ComputeUbSplit fails, TilingFunc returns
 * GRAPH_FAILED). Its arithmetic (docs/emulator.md) leaves only tail-R patterns (x NCHW with
 * H * W > 1, or C 1) whose A target ceil(C / cores) stays 1 (C at most the vector cores),
 * each tile one channel: the last reduced axis (L values) fits the values a channel's tile
 * holds (rMax, ComputeRiMax) but not once padded to 32-byte blocks (ComputeRUbFactor finds
 * no factor, or FitsUb fails). The message names those figures.
 */
static aclnnStatus bnr_no_split(const aclTensor *x, int caxis, const aclemu_soc *soc)
{
    bnr_tiling t = {.ds = (int64_t)aclemu_dtype_size(x->dtype)};
    bnr_pattern(&t, x->dims, caxis);
    const int64_t L = t.axis[t.n - 1], blk = 32 / t.ds;
    const int64_t r_max = (aclemu_soc_ub_bytes() - BNR_CACHE_BYTES - 4) / (2 * t.ds + 8);
    char s[256];
    fmt_dims(s, sizeof s, x->dims, x->ndim);
    FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: x shape %s (%s, %s) has no UB split on %s: its last "
         "reduced axis of %lld values fits a channel's %lld but not padded to %lld (32-byte "
         "blocks), C %lld <= %d vector cores keeping one channel per tile (op_host/arch35 "
         "bn_training_reduce_tiling_public.cpp ComputeUbSplit)", P1, s,
         caxis == 3 ? "NHWC" : "NCHW", dname(x->dtype), soc->name, (long long)L,
         (long long)r_max, (long long)calign(L, blk), (long long)x->dims[caxis],
         aclemu_soc_vector_cores());
}

/* ---- phase one's workspace: the device's (exec_workspace.h) ------------------------------ */

/*
 * aclnn_batch_norm_reduce.cpp's graph: x's Contiguous copy; BNTrainingReduce, its two
 * [1, C, 1, 1] (or [1, 1, 1, C]) FLOAT results, executor-allocated; each squeezed to [C] (a
 * view) and ViewCopy'd into sum and squareSum (a contiguous one takes its result over). Its
 * tiling workspace: on Ascend 950 GetLibApiWorkSpaceSize, plus the deterministic group
 * templates' partials at deterministic level 1; elsewhere a TBE kernel (its compile-info
 * workspace is not public: none).
 */
static uint64_t bnr_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                              const bnr_order *o, uint64_t C)
{
    ew_graph g = ew_graph_on(soc->npu_arch);
    const int x = ew_contiguous_copy(&g, ts[T_X]);
    const int k = ew_kernel_reading(&g, &x, 1);
    if (soc->npu_arch == DAV_3510) {
        uint64_t ws = ew_lib_api_workspace(soc);
        if (o->kind == BNR_GROUP && o->deterministic)
            ws += (uint64_t)o->groups * C * 4;
        ew_kernel_workspace(&g, k, ws);
    }
    const int sum = ew_output(&g, k, C * 4), sqsum = ew_output(&g, k, C * 4);
    ew_copy_out(&g, sum, ACL_FLOAT, ts[T_SUM], C);
    ew_copy_out(&g, sqsum, ACL_FLOAT, ts[T_SQSUM], C);
    return ew_size(&g);
}

/* ---- phase one ------------------------------------------------------------------------------- */

static bool is_empty(const aclTensor *t)
{
    for (uint64_t i = 0; i < t->ndim; i++)
        if (t->dims[i] == 0)
            return true;
    return false;
}

static aclnnStatus check_float_out(const aclTensor *t, int i, const char *why)
{
    if (t->dtype != ACL_FLOAT)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported: FLOAT%s", P1, TNAME[i],
             dname(t->dtype), why);
    return ACLNN_SUCCESS;
}

/* The empty branch's rule for sum and squareSum (stricter than the op_api, which checks
 * nothing there: the docs' FLOAT, and a rank the emulator's fill can view). */
static aclnnStatus check_empty_out(const aclTensor *t, int i)
{
    aclnnStatus st;
    if ((st = check_float_out(t, i, " (docs/aclnnBatchNormReduce.md)")))
        return st;
    if (t->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is more than %d", P1, TNAME[i],
             (unsigned long long)t->ndim, TV_MAX_RANK);
    return ACLNN_SUCCESS;
}

/* CheckParams: CheckDtypeValid, CheckFormat, CheckShape, in their order. */
static aclnnStatus check_params(const aclTensor *const *ts, const aclemu_soc *soc)
{
    aclnnStatus st;
    const aclTensor *x = ts[T_X];
    if ((st = bn_check_float_dtype(P1, TNAME[T_X], x, soc)))
        return st;
    for (int i = T_SUM; i <= T_SQSUM; i++)
        if ((st = check_float_out(ts[i], i, "")))
            return st;
    if (x->format != ACL_FORMAT_NCHW && x->format != ACL_FORMAT_NHWC)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x's format (aclFormat %d) is not supported: NCHW, "
             "NHWC", P1, (int)x->format);
    for (int i = T_SUM; i <= T_SQSUM; i++)
        if (ts[i]->format != ACL_FORMAT_ND)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s's format (aclFormat %d) is not supported: ND",
                 P1, TNAME[i], (int)ts[i]->format);
    if (x->ndim != 4)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x rank %llu must be 4", P1,
             (unsigned long long)x->ndim);
    for (int i = T_SUM; i <= T_SQSUM; i++)
        if (ts[i]->ndim != 1)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must have rank 1 ([C], C the channel count of x)", x->dims,
                               x->ndim);
    const int64_t C = x->dims[x->format == ACL_FORMAT_NHWC ? 3 : 1];
    for (int i = T_SUM; i <= T_SQSUM; i++)
        if (ts[i]->dims[0] != C)
            return shape_error(P1, TNAME[i], ts[i]->dims, ts[i]->ndim,
                               "must be [C], C the channel count of x (dim 1 of NCHW, dim 3 "
                               "of NHWC)", x->dims, x->ndim);
    return ACLNN_SUCCESS;
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x,
                                                               aclTensor *sum,
                                                               aclTensor *squareSum,
                                                               uint64_t *workspaceSize,
                                                               aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {x, sum, squareSum};

    /* 0. the out-pointers first (L2_DFX_PHASE_1: 161001), 1. CheckNotNull (161001), in its
     * order; all live; the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(0, T_COUNT), workspaceSize,
                                executor, &soc);
    if (st)
        return st;

    bnr_payload *P = NULL;
    /* 2. an empty x, sum or squareSum: both outputs filled with 0 before CheckParams; stricter
     * (docs/emulator.md): FLOAT outputs, the docs' only dtype, of rank 8 at most */
    if (is_empty(x) || is_empty(sum) || is_empty(squareSum)) {
        for (int i = T_SUM; i <= T_SQSUM; i++)
            if ((st = check_empty_out(ts[i], i)))
                return st;
        if (!(P = calloc(1, sizeof *P)))
            FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
        P->empty = true;
        for (int i = T_SUM; i <= T_SQSUM; i++) { /* x is not read: no view of it */
            snapshot(&P->t[i], ts[i], -1);
            P->n_out[i - T_SUM] = (int64_t)ew_elems(ts[i]);
        }
        P->ws_size = ew_empty_call(soc->npu_arch, ts, T_SUM, T_SQSUM);
        return p1_finish(P1, &BNR_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS,
                         workspaceSize, executor);
    }
    /* 3. CheckParams (161002) */
    if ((st = check_params(ts, soc)))
        return st;
    int64_t X = 0;
    if (!numel(x->dims, x->ndim, &X))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: x's element count overflows int64", P1);
    if (!(P = calloc(1, sizeof *P)))
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    P->caxis = x->format == ACL_FORMAT_NHWC ? 3 : 1;
    P->C = x->dims[P->caxis];
    P->R = X / P->C;
    for (int i = 0; i < T_COUNT; i++)
        snapshot(&P->t[i], ts[i], -1);
    P->chunk_values = 1;
    if (soc->npu_arch == DAV_3510) {
        bnr_order_of(&P->order, x, P->caxis, aclemu_soc_vector_cores(), aclemu_soc_ub_bytes(),
                     p1_deterministic() == 1);
        /* 4. the L0 op's tiling, run here (561103, stricter: the device dereferences NULL) */
        if (P->order.kind == BNR_PLAIN) {
            st = bnr_no_split(x, P->caxis, soc);
            free(P);
            return st;
        }
        /* bnr_channel's scratch past the values: two chunks, the units, the groups' roots */
        const int64_t need = 2 * P->order.bundle + P->order.r_loops + P->order.groups;
        P->chunk_values += (int)((need + P->R - 1) / P->R);
    }
    P->ws_size = bnr_workspace(soc, ts, &P->order, (uint64_t)P->C);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, &BNR_OPS, P, P->ws_size, ts, TNAME, T_COUNT, N_INPUTS, workspaceSize,
                     executor);
}

ACLEMU_EXPORT aclnnStatus aclnnBatchNormReduce(void *workspace, uint64_t workspaceSize,
                                               aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
