/*
 * aclnnRmsNorm and aclnnGemmaRmsNorm for the CPU emulator: phase one (checks, executor), the
 * launch and the kernel, one of each for both (GemmaRmsNorm is RmsNorm's kernel with 1 added
 * to gamma: see GEMMA below).
 *
 * Facts, hicann/ops-nn norm/rms_norm. Its aclnn interface has no op_api source: the build's
 * opbuild tool generates it from op_host/rms_norm_def.cpp (ACLNNTYPE aclnn in
 * op_host/CMakeLists.txt; cmake/opbuild.cmake), so phase one follows the documented contract,
 * the def's dtype combinations and the op_host rules that run in it:
 * - docs/aclnnRmsNorm.md: the prototype; codes 161001 (a required argument NULL), 161002 (a
 *   dtype outside the part's table), 561002 (the other parameter rules); x/yOut/rstdOut may be
 *   empty, gamma may not; rstdOut FLOAT, shaped x's batch dims then ones; per-part dtype
 *   tables (Atlas A2/A3, Ascend 950: (x, gamma) in {(F16, F32), (BF16, F32), (F16, F16),
 *   (BF16, BF16), (F32, F32)}, yOut = x; Atlas inference: F16/F16 or F32/F32, no BF16);
 * - op_host/rms_norm_def.cpp: the same dtype combinations per part (Atlas training parts:
 *   the table without BF16);
 * - op_host/rms_norm_tiling.cpp CheckInputShape4RmsNorm and the epsilon check: the shape
 *   rules (ranks 1..8, gamma no wider than x and equal to x's trailing dims, y = x, each rstd
 *   dim 1 or x's), epsilon >= 0; a tiling failure is 561002.
 *
 * The device's numbers (op_kernel/rms_norm.h Compute, ComputeMulGammaCast; op_host tiling):
 * x cast to float, squares summed in float, rstd = 1 / sqrt(sum * avg + eps) with
 * avg = 1.0f / N and eps as floats; y = (x * rstd) * gamma in float (gamma cast to float),
 * then cast to y's dtype rounding to nearest, ties to even (FLOAT16 CAST_NONE, BF16
 * CAST_RINT); rstd written as FLOAT.
 *
 * The order of a row's sum of squares is the kernel's, which the tiling picks
 * (op_host/rms_norm_tiling.cpp Tiling4RmsNorm, CalMixDtypeTiling; Tiling4GemmaRmsNorm's
 * getUbFactor) on the Atlas A2/A3 (DAV_2201) and inference (DAV_2002) parts; N is gamma's
 * element count, aligned N rounded up to a 32-byte block of x's dtype:
 * - merge-N (rms_norm_merge_n.h, Compute): ReduceSumMultiN (norm_rows.h nr_sum_lane_blocks),
 *   then rstd by vector Muls, Adds, Sqrt and Div; taken by RmsNorm on SocVersion ASCEND910B
 *   (the Atlas A2 parts, not the A3 ones) when aligned N <= 2000, and on the inference parts
 *   for FLOAT16 x with N = 128 and a row count divisible by 16;
 * - normal (rms_norm.h) and single-row (rms_norm_single_row.h): ReduceSumHalfInterval over
 *   the row (nr_sum_half_interval), rstd on the scalar unit;
 * - split-D (rms_norm_split_d.h, ComputeFormerPrecision): the row in slices of the tiling's
 *   ub_factor columns, each slice's ReduceSumHalfInterval added in order to a float from 0;
 *   taken when aligned N exceeds 12288 (16-bit x) or 10240 (FLOAT x) (GemmaRmsNorm: 10240,
 *   8192), the slice the tiling's split of N into ceil(N / that) tiles rounded up to 16 and
 *   stepped down by 16 while N leaves a tail of 1..15; with FLOAT16/BF16 x beside FLOAT gamma
 *   (CalMixDtypeTiling, the 196608-byte UB less 1024) merge-N as above, else normal while
 *   16 * alignedN + 512 < 195584, single-row while 14 * alignedN + 512 < 195584, else
 *   split-D with slices of 12064.
 * rstd is 1 / sqrt(sum * avg + eps) in float either way (the vector Sqrt and Div taken as
 * correctly rounded, as the scalar unit's). Ascend 950 (op_host/rms_norm_tiling_arch35.cpp
 * TilingArch354RmsNorm, for GemmaRmsNorm too; op_kernel/rms_norm_apt.cpp) runs one of two
 * templates (pick_regbase):
 * - perf (arch35/rms_norm_regbase_perf.h): norm_common's CalculateSquareReduceSum, the binary
 *   add (norm_rows.h nr_binary_add_sum), then rstd by ComputeRstdNewtonRaphson of sum * avg
 *   (nr_rstd_newton_raphson, no clamp);
 * - split-D (arch35/rms_norm_regbase_split_d.h): chunks of the tiling's ubFactor, each summed
 *   by ComputeFormerImplV2, gathered in 256-entry levels (norm_rows.h nr_regbase_split_sum),
 *   rstd 1 / sqrt(sum * avg + eps) by vector Muls, Adds, Sqrt, Div (ComputeRstd).
 * y is (x * rstd) * gamma in float on both, rounded once (CAST_RINT). The Atlas training
 * parts (DAV_1001, SocVersion ASCEND910: Tiling4RmsNorm's first branch; rms_norm.cpp's keys
 * for __CCE_AICORE__ 100) run one of two kernels (pick_training):
 * - whole-reduce-sum (rms_norm_whole_reduce_sum.h, keys 1010/1020, 1110/1120) while the
 *   tiling's rowFactor is at least 1 (aligned N up to 21736): the squares'
 *   ReduceSumHalfInterval over the row, rstd by vector Muls, Adds, Sqrt and Div; FLOAT16 y
 *   is x * rstd rounded to FLOAT16, then multiplied by gamma in FLOAT16 (its Compute for
 *   half: rounded twice);
 * - split-D (rms_norm_split_d.h's __CCE_AICORE__ 100 branch, key 1): slices of the tiling's
 *   ub_factor, each square multiplied by avg first (Muls), each slice's
 *   ReduceSumHalfIntervalToRepeat (halved down to 8 lanes) and a WholeReduceSum of those 8,
 *   added in order to a float 0; rstd 1 / sqrt(sum + eps) (no Muls after the sum).
 *
 * Kernel: rows are independent and each row's sum has a fixed order, so the split of rows over
 * threads never changes a bit. Rows are read as floats through get_tile (any dtype, any
 * strides) into a per-chunk buffer.
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
#include "half.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_gemma_rms_norm.h"
#include "aclnnop/aclnn_rms_norm.h"

/*
 * GemmaRmsNorm (hicann/ops-nn norm/gemma_rms_norm), generated like RmsNorm (op_host/CMakeLists.txt
 * ACLNNTYPE aclnn, DEPENDENCIES rms_norm):
 * - op_host/gemma_rms_norm_def.cpp: kernels for Atlas A2/A3 (x, gamma, y of one dtype: BF16,
 *   FLOAT16, FLOAT) and Ascend 950 (RmsNorm's table: FLOAT gamma beside FLOAT16/BF16 x too);
 *   none for the Atlas training and inference parts (the docs: not supported), where the
 *   framework's kernel lookup fails before any dtype is compared (hicann/opbase
 *   src/nnopbase/individual_op/executor/indv_executor.cpp CheckSocVersionAndParam: 561003);
 * - norm/rms_norm/op_host/rms_norm_tiling.cpp Tiling4GemmaRmsNorm: RmsNorm's shape rules
 *   (CheckInputShape4RmsNorm) and epsilon check, is_gemma = 1;
 * - the kernels (norm/rms_norm/op_kernel/rms_norm.h ComputeMulGammaCast, rms_norm_split_d.h,
 *   arch35/rms_norm_regbase_common.h): gamma cast to float, 1.0f added in float, then
 *   y = (x * rstd) * (gamma + 1) in float, rounded once: RmsNorm's chain on gamma + 1.
 */
typedef struct {
    const char *p1, *p2;
    const aclemu_executor_ops *ops;
    float gamma_offset; /* added to gamma (as float) before the kernel uses it */
} rms_variant;

enum { T_X, T_GAMMA, T_Y, T_RSTD, T_COUNT };
static const char *const TNAME[T_COUNT] = {"x", "gamma", "yOut", "rstdOut"};

/* How a row's sum of squares is ordered: by the kernel the tiling picks (the file's doc). */
typedef enum {
    SUM_HALF_INTERVAL, /* normal, single-row and the training parts' whole-reduce-sum */
    SUM_LANE_BLOCKS,   /* merge-N kernel */
    SUM_SLICES,        /* split-D kernel: slices of `slice` columns */
    SUM_REGBASE_PERF,  /* Ascend 950's full-load template: the binary add, rstd by Newton */
    SUM_REGBASE_SPLIT, /* Ascend 950's split-D template: chunks of `slice`, three levels */
    SUM_TRAINING_SLICES, /* the Atlas training parts' split-D: avg first, 8 lanes a slice */
} sum_order;

typedef struct {
    nr_head h; /* per chunk 2 * N floats and N / 64 + 1: a row as float, and its squares
                * (and the binary add's partials), then its y */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps, avg; /* as the kernel receives them */
    sum_order order;
    int64_t slice; /* SUM_SLICES, SUM_REGBASE_SPLIT, SUM_TRAINING_SLICES: the split-D
                    * kernel's columns per slice */
    int64_t ub_loop; /* SUM_REGBASE_SPLIT: the tiling's ubLoop (a power of two) */
    int64_t x_bytes; /* x's element size: the split-D chunks' zero padding to 512 bytes */
    bool y_twice; /* the training parts' whole-reduce FLOAT16: x * rstd rounded before gamma */
    const rms_variant *v;
} rms_payload;

/* ---- the kernel -------------------------------------------------------------------------- */

/* The Atlas training parts' split-D slice sum (rms_norm_split_d.h ComputeSum's
 * __CCE_AICORE__ 100 branch) of t[0..n), which it overwrites: reduce_common's
 * ReduceSumHalfIntervalToRepeat (the part past the largest power of two added onto the front,
 * halved down to 16, then the last halving into 8 lanes), then a WholeReduceSum over those 8
 * lanes (mask 8, the others off). Below 16 columns (slices of rows past about 2 * 10^7
 * columns) the kernel leaves some or all of its 8 lanes unwritten: taken as zero here. */
static float training_slice_sum(float *t, int64_t n)
{
    float lanes[NR_VECTOR_LANES] = {0};
    if (n > 8) {
        int64_t body = 1;
        while (body * 2 <= n)
            body *= 2;
        for (int64_t i = 0; i < n - body; i++)
            t[i] += t[body + i];
        while (body > 16) {
            body /= 2;
            for (int64_t i = 0; i < body; i++)
                t[i] += t[i + body];
        }
        for (int64_t i = 0; i < body / 2; i++)
            lanes[i] = t[i] + t[i + body / 2];
    }
    return nr_fold_vector_lanes(lanes);
}

/* The row's sum of squares in the order of P's kernel; sq: N floats of scratch, then
 * N / NR_VECTOR_LANES + 1 more (the binary add's partials). */
static float sum_squares(const rms_payload *P, const float *x, float *sq)
{
    const int64_t N = P->N;
    for (int64_t i = 0; i < N; i++)
        sq[i] = x[i] * x[i];
    if (P->order == SUM_REGBASE_PERF) /* NormCommonRegbase::CalculateSquareReduceSum */
        return nr_binary_add_sum(sq, N, sq + N);
    if (P->order == SUM_REGBASE_SPLIT) /* ComputeFormer: chunks of ubFactor, ubLoop */
        return nr_regbase_split_sum(sq, N, P->slice, P->ub_loop, P->x_bytes);
    if (P->order == SUM_LANE_BLOCKS)
        return nr_sum_lane_blocks(sq, N);
    if (P->order == SUM_HALF_INTERVAL)
        return nr_sum_half_interval(sq, N);
    float sum = 0.0f;
    for (int64_t c = 0; c < N; c += P->slice) {
        const int64_t n = N - c < P->slice ? N - c : P->slice;
        if (P->order == SUM_SLICES) {
            sum += nr_sum_half_interval(sq + c, n);
            continue;
        }
        for (int64_t i = 0; i < n; i++) /* SUM_TRAINING_SLICES: Muls by avg first */
            sq[c + i] *= P->avg;
        sum += training_slice_sum(sq + c, n);
    }
    return sum;
}

static void rows_body(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                      int64_t end)
{
    const rms_payload *P = payload;
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y], *r = &P->t[T_RSTD];
    const int64_t N = P->N;
    float *xbuf = nr_chunk_buf(R, chunk), *ybuf = xbuf + N;
    for (int64_t m = begin; m < end; m++) {
        const float *xr = get_tile(row_base(x, m), x->dtype, &x->inner, 0, N, xbuf);
        const float sum = sum_squares(P, xr, ybuf);
        const float var = P->order == SUM_TRAINING_SLICES ? sum : sum * P->avg;
        /* Ascend 950's full-load template: ComputeRstdNewtonRaphson<false, true> */
        float rstd = P->order == SUM_REGBASE_PERF ? nr_rstd_newton_raphson(var, P->eps, false)
                                                  : 1.0f / sqrtf(var + P->eps);
        for (int64_t i = 0; i < N; i++) /* y_twice: a FLOAT16 product, exact in float */
            ybuf[i] = (P->y_twice ? aclemu_f16_to_f32(aclemu_f32_to_f16(xr[i] * rstd))
                                  : xr[i] * rstd) * R->gamma[i];
        put_tile(row_base(y, m), y->dtype, ACLEMU_TIES_EVEN, &y->inner, 0, N, ybuf);
        put_tile(view_base(r), ACL_FLOAT, ACLEMU_TIES_EVEN, &r->inner, m, 1, &rstd);
    }
}

static bool before_rows(const void *payload, norm_rows *R)
{
    const rms_payload *P = payload;
    if (P->M == 0) /* an empty x: nothing to write (gamma is never empty) */
        return false;
    nr_load_gamma(R, &P->t[T_GAMMA], P->N);
    if (P->v->gamma_offset != 0.0f)
        nr_offset_gamma(R, P->N, P->v->gamma_offset);
    return true;
}

static const nr_kernel RMS_KERNEL = NR_KERNEL(rms_payload, before_rows, rows_body, NULL);
static const aclemu_executor_ops RMS_OPS = NR_EXECUTOR_OPS("aclnnRmsNorm");
static const aclemu_executor_ops GEMMA_OPS = NR_EXECUTOR_OPS("aclnnGemmaRmsNorm");
static const rms_variant RMS = {"aclnnRmsNormGetWorkspaceSize", "aclnnRmsNorm", &RMS_OPS, 0.0f};
static const rms_variant GEMMA = {"aclnnGemmaRmsNormGetWorkspaceSize", "aclnnGemmaRmsNorm",
                                  &GEMMA_OPS, 1.0f};

/* ---- phase one -------------------------------------------------------------------------------- */


/* The part's dtype table: yOut is x's dtype; gamma is x's, or FLOAT beside a FLOAT16/BF16 x
 * where the part's table has those pairs (RmsNorm: parts with BF16, Atlas A2/A3 and Ascend 950,
 * docs/aclnnRmsNorm.md, op_host/rms_norm_def.cpp; GemmaRmsNorm: Ascend 950 only,
 * gemma_rms_norm_def.cpp's regbase config). */
static bool gamma_dtype_ok(aclDataType x, aclDataType gamma, bool or_float32)
{
    return gamma == x || (or_float32 && gamma == ACL_FLOAT);
}

static aclnnStatus check_rank(const char *call, const char *name, const aclTensor *t)
{
    if (t->ndim < 1 || t->ndim > TV_MAX_RANK)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: %s rank %llu is not in [1, %d]", call, name,
             (unsigned long long)t->ndim, TV_MAX_RANK);
    return ACLNN_SUCCESS;
}

/* Whether the part has a kernel: GemmaRmsNorm's definition registers none for the Atlas
 * training (NPU architecture 1001) and inference (2002) parts; RmsNorm's registers every
 * part the emulator knows. */
static bool has_kernel(const rms_variant *V, const aclemu_soc *soc)
{
    return V != &GEMMA || (soc->npu_arch != 1001 && soc->npu_arch != 2002);
}

#define UB_USED 1024 /* the tiling's reserve, taken off the part's UB first */

/* The split-D tiling's columns per slice: N in ceil(N / ub) tiles, rounded up to 16, then
 * stepped down by 16 while N leaves a tail of 1..15 columns; 0 when no step works (the
 * tiling fails). */
static int64_t split_d_slice(int64_t N, int64_t ub)
{
    const int64_t tiles = (N + ub - 1) / ub;
    int64_t slice = (N + tiles * 16 - 1) / (tiles * 16) * 16;
    while (slice > 0 && N % slice != 0 && N % slice < 16)
        slice -= 16;
    return slice;
}

/* The device's phase-one workspace. The generated (opbuild) aclnn runs the one kernel on the
 * individual-op executor, whose size is the sum of the tiling's workspaces, no allocator
 * (hicann/opbase src/nnopbase/individual_op/executor/indv_executor.cpp
 * NnopbaseExecutorGetWorkspaceSizes), and 0 when every output is empty (no tiling runs:
 * NnopbaseSkipKernelLaunch; here that is M = 0). op_host/rms_norm_tiling.cpp: Tiling4RmsNorm
 * asks 256 bytes + its 16 MiB system workspace on every part, Ascend 950's arch35 branch
 * included (set before it); Tiling4GemmaRmsNorm's setWorkSize does the same except on Ascend
 * 950, whose arch35 branch returns before it, leaving none. The generated code's Contiguous
 * executors for strided inputs are not modelled (docs/emulator.md). */
static uint64_t rms_workspace(const rms_variant *V, const aclemu_soc *soc, int64_t M)
{
    if (M == 0 || (V == &GEMMA && soc->npu_arch == 3510))
        return 0;
    return 256 + EW_SYS_WORKSPACE;
}

/* Ascend 950's template (op_host/rms_norm_tiling_arch35.cpp TilingArch354RmsNorm, the UB
 * less the caller's UB_USED): the full-load (perf) template while x's row aligned to 32
 * bytes (Na) is at most 16384 elements and one row fits, (UB - 2048 - Na * gamma bytes) /
 * (4 * Na * x bytes + 12 + firstVcaddLength) >= 1, with firstVcaddLength the floats of the
 * first Reduce's results, P / 64 rounded up to 32 (P the largest power of two below Na);
 * else split-D, whose ubFactor doubles from 1 while ComputeTotalBufSize of twice it fits and
 * ubLoop is the largest power of two with ubLoop * ubFactor <= N. */
static void pick_regbase(rms_payload *P, aclDataType xdt, aclDataType gdt)
{
    const int64_t N = P->N, bx = aclemu_dtype_size(xdt), bg = aclemu_dtype_size(gdt);
    const int64_t ub = aclemu_soc_ub_bytes() - UB_USED, na = (N * bx + 31) / 32 * 32 / bx;
    const int64_t first = ((nr_pow2_below(na) + 63) / 64 + 31) / 32 * 32;
    P->x_bytes = bx;
    if (na <= 16384 && ub - 2048 - na * bg >= 4 * na * bx + 12 + first) {
        P->order = SUM_REGBASE_PERF;
        return;
    }
    /* ComputeTotalBufSize(split): two buffers of x twice, gamma, 64 floats; length floats of
     * tmp; 5120 retained */
    int64_t factor = 1;
    while (2 * (2 * factor) * (2 * bx + bg) + 512 + 2 * factor * 4 + 5120 < ub)
        factor *= 2;
    P->order = SUM_REGBASE_SPLIT;
    P->slice = factor;
    for (P->ub_loop = 1; P->ub_loop * 2 * factor <= N; P->ub_loop *= 2)
        ;
}

/* The Atlas training parts' kernel (Tiling4RmsNorm's SocVersion ASCEND910 branch, the UB
 * less UB_USED, in floats D): whole-reduce-sum while (D - aligned N) / (64 + 2 * aligned N)
 * rows fit, at least one; else split-D, whose slice is aligned N over ceil(aligned N / R)
 * tiles rounded up to a 32-byte block, R the once-reduce columns, (D - 576) * b / (3 + 2b)
 * down to a block (b = 2 for FLOAT16, 1 for FLOAT: 18480 and 12936 columns). */
static void pick_training(rms_payload *P, aclDataType xdt)
{
    const int64_t per_block = xdt == ACL_FLOAT ? 8 : 16, b = per_block / 8;
    const int64_t D = (aclemu_soc_ub_bytes() - UB_USED) / 4;
    const int64_t aligned = (P->N + per_block - 1) / per_block * per_block;
    if (D > aligned && (D - aligned) / (64 + 2 * aligned) > 0) {
        P->order = SUM_HALF_INTERVAL;
        P->y_twice = xdt == ACL_FLOAT16;
        return;
    }
    const int64_t once = b * (D - 576) / (3 + 2 * b) / per_block * per_block;
    const int64_t tiles = (aligned + once - 1) / once;
    P->order = SUM_TRAINING_SLICES;
    P->slice = ((aligned + tiles - 1) / tiles + per_block - 1) / per_block * per_block;
}

/* The kernel the tiling picks for an [M, N] call (the file's doc), as the order of its
 * row sums: sets P->order and P->slice. False: the tiling fails (no slice splits N). */
static bool pick_kernel(rms_payload *P, const aclemu_soc *soc, aclDataType xdt,
                        aclDataType gdt)
{
    const int64_t N = P->N;
    if (soc->npu_arch == 3510) {
        pick_regbase(P, xdt, gdt);
        return true;
    }
    if (soc->npu_arch == 1001) {
        pick_training(P, xdt);
        return true;
    }
    const bool b16 = xdt != ACL_FLOAT, a2 = aclemu_soc_is_910b(soc);
    const int64_t per_block = b16 ? 16 : 8, aligned = (N + per_block - 1) / per_block * per_block;
    int64_t factor = b16 ? 12288 : 10240; /* the tiling's ubFactor (elements) */
    if (P->v == &GEMMA) {
        factor = b16 ? 10240 : 8192;
    } else if (gdt == ACL_FLOAT && xdt != ACL_FLOAT) { /* CalMixDtypeTiling */
        const int64_t ub = aclemu_soc_ub_bytes() - UB_USED;
        if (aligned <= 2000 && a2)
            P->order = SUM_LANE_BLOCKS;
        else if (14 * aligned + 512 < ub)
            P->order = SUM_HALF_INTERVAL; /* normal (16 * aligned + 512 fits) or single-row */
        else
            P->order = SUM_SLICES, P->slice = (ub - 2560) / 16 / 16 * 16;
        return true;
    } else if ((aligned <= 2000 && a2) ||
               (xdt == ACL_FLOAT16 && N == 128 && soc->npu_arch == 2002 && P->M % 16 == 0)) {
        P->order = SUM_LANE_BLOCKS;
        return true;
    }
    if (aligned <= factor) {
        P->order = SUM_HALF_INTERVAL;
        return true;
    }
    P->order = SUM_SLICES;
    P->slice = split_d_slice(N, factor);
    return P->slice > 0;
}

static aclnnStatus phase_one(const rms_variant *V, const aclTensor *x, const aclTensor *gamma,
                             double epsilon, const aclTensor *yOut, const aclTensor *rstdOut,
                             uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const char *P1 = V->p1;
    const aclTensor *ts[T_COUNT] = {x, gamma, yOut, rstdOut};

    /* 0. the out-pointers first (161001), 1. every tensor is required (161001), then must be
     * a live aclTensor; the part */
    const aclemu_soc *soc;
    aclnnStatus st = p1_opening(P1, ts, TNAME, T_COUNT, P1_BITS(0, T_COUNT), workspaceSize,
                                executor, &soc);
    if (st)
        return st;
    const bool bf16 = soc->bf16;
    /* 1b. a part without a kernel: the framework's lookup fails before any dtype check */
    if (!has_kernel(V, soc))
        FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): the operator's "
             "definition registers no kernel for that series", P1, soc->name, soc->series);
    const bool or_float32 = V == &GEMMA ? soc->npu_arch == 3510 : bf16;

    /* 2. dtypes (161002): each in the part's list, then the table's combinations */
    for (int i = 0; i < T_COUNT; i++) {
        const aclDataType dt = ts[i]->dtype;
        if (i == T_RSTD ? dt != ACL_FLOAT : !(dtype_ok(dt) && (dt != ACL_BF16 || bf16)))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", P1,
                 TNAME[i], dname(dt), soc->name, soc->series,
                 i == T_RSTD ? "FLOAT" : bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    }
    if (yOut->dtype != x->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: yOut dtype %s must be x's dtype %s", P1,
             dname(yOut->dtype), dname(x->dtype));
    if (!gamma_dtype_ok(x->dtype, gamma->dtype, or_float32))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gamma dtype %s must be x's dtype %s%s on %s", P1,
             dname(gamma->dtype), dname(x->dtype),
             or_float32 && x->dtype != ACL_FLOAT ? " or FLOAT" : "", soc->name);

    /* 3. ranks and shapes (561002), in CheckInputShape4RmsNorm's order */
    if ((st = check_rank(P1, "x", x)) || (st = check_rank(P1, "gamma", gamma)))
        return st;
    char s1[256], s2[256];
    fmt_dims(s2, sizeof s2, x->dims, x->ndim);
    if (gamma->ndim > x->ndim)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma rank %llu > x rank %llu", P1,
             (unsigned long long)gamma->ndim, (unsigned long long)x->ndim);
    if (yOut->ndim != x->ndim)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: yOut rank %llu != x rank %llu", P1,
             (unsigned long long)yOut->ndim, (unsigned long long)x->ndim);
    const uint64_t split = x->ndim - gamma->ndim;
    fmt_dims(s1, sizeof s1, gamma->dims, gamma->ndim);
    /* GemmaRmsNorm's docs allow an empty gamma, and when every output is empty the framework
     * runs no tiling (hicann/opbase indv_executor.cpp NnopbaseExecutorMatchCache): accepted
     * there. RmsNorm's docs forbid an empty gamma: refused always (docs/emulator.md). */
    int64_t Y = 0, R0 = 0;
    const bool outputs_empty = numel(yOut->dims, yOut->ndim, &Y) && Y == 0 &&
                               numel(rstdOut->dims, rstdOut->ndim, &R0) && R0 == 0;
    const bool empty_gamma_ok = V == &GEMMA && outputs_empty;
    for (uint64_t i = 0; i < gamma->ndim; i++) {
        if (gamma->dims[i] == 0 && !empty_gamma_ok)
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma shape %s is empty (gamma cannot be "
                 "an empty tensor)", P1, s1);
        if (gamma->dims[i] != x->dims[split + i])
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: gamma shape %s must equal the last %llu "
                 "dims of x %s", P1, s1, (unsigned long long)gamma->ndim, s2);
    }
    if (!same_dims(yOut->dims, yOut->ndim, x->dims, x->ndim)) {
        fmt_dims(s1, sizeof s1, yOut->dims, yOut->ndim);
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: yOut shape %s != x shape %s", P1, s1, s2);
    }
    int64_t M = 0, N = 0, R = 0;
    if (!numel(x->dims, split, &M) || !numel(gamma->dims, gamma->ndim, &N) ||
        !numel(rstdOut->dims, rstdOut->ndim, &R))
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: an element count overflows int64", P1);
    /* rstdOut: the vendor compares each of its dims with x's (1 or equal). Stricter
     * (docs/emulator.md): no wider than x, and one value per row (the documented shape is
     * x's batch dims then ones), so no row's rstd is dropped and no write lands outside it. */
    fmt_dims(s1, sizeof s1, rstdOut->dims, rstdOut->ndim);
    if (rstdOut->ndim > x->ndim)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut rank %llu > x rank %llu (rstdOut %s, "
             "x %s: expected x's batch dims then ones)", P1, (unsigned long long)rstdOut->ndim,
             (unsigned long long)x->ndim, s1, s2);
    for (uint64_t i = 0; i < rstdOut->ndim; i++)
        if (rstdOut->dims[i] != 1 && rstdOut->dims[i] != x->dims[i])
            FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut shape %s: dim %llu is %lld, must "
                 "be 1 or x's %lld (x %s)", P1, s1, (unsigned long long)i,
                 (long long)rstdOut->dims[i], (long long)x->dims[i], s2);
    if (R != M)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: rstdOut shape %s has %lld elements != %lld "
             "rows of x %s (expected x's batch dims then ones)", P1, s1, (long long)R,
             (long long)M, s2);
    /* 4. epsilon (rms_norm_tiling.cpp: refused when negative); NaN is not less than 0 */
    if (epsilon < 0)
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: epsilon %g is negative (must be >= 0)", P1,
             epsilon);

    rms_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    P->h = (nr_head){.kernel = &RMS_KERNEL, .call = V->p2, .names = TNAME, .rows = M, .width = N,
                     .row_floats = 2 * N + N / NR_VECTOR_LANES + 1,
                     .no_kernel = M == 0 /* every output empty */};
    P->M = M;
    P->N = N;
    P->eps = (float)epsilon;
    P->avg = 1.0f / (float)N;
    P->v = V;
    if (!pick_kernel(P, soc, x->dtype, gamma->dtype)) {
        free(P);
        FAIL(ACLNN_ERR_INNER_TILING_ERROR, "%s: the tiling cannot split the last dim (N %lld) "
             "into slices (rms_norm_tiling.cpp: \"Tiling split last dim failed\")", P1,
             (long long)N);
    }
    snapshot(&P->t[T_X], x, (int)split);
    snapshot(&P->t[T_GAMMA], gamma, -1);
    snapshot(&P->t[T_Y], yOut, (int)split);
    snapshot(&P->t[T_RSTD], rstdOut, -1);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    return p1_finish(P1, V->ops, P, rms_workspace(V, soc, M), ts, TNAME, T_COUNT, T_Y,
                     workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
                                                       double epsilon, const aclTensor *yOut,
                                                       const aclTensor *rstdOut,
                                                       uint64_t *workspaceSize,
                                                       aclOpExecutor **executor)
{
    return phase_one(&RMS, x, gamma, epsilon, yOut, rstdOut, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnRmsNorm(void *workspace, uint64_t workspaceSize,
                                       aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(RMS.p2, executor, workspace, workspaceSize, stream);
}

ACLEMU_EXPORT aclnnStatus aclnnGemmaRmsNormGetWorkspaceSize(const aclTensor *x,
                                                            const aclTensor *gamma,
                                                            double epsilon, const aclTensor *yOut,
                                                            const aclTensor *rstdOut,
                                                            uint64_t *workspaceSize,
                                                            aclOpExecutor **executor)
{
    return phase_one(&GEMMA, x, gamma, epsilon, yOut, rstdOut, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnGemmaRmsNorm(void *workspace, uint64_t workspaceSize,
                                            aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(GEMMA.p2, executor, workspace, workspaceSize, stream);
}
