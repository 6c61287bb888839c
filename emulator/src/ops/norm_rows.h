/*
 * The run of a row-wise norm kernel over gamma (RmsNorm, GemmaRmsNorm, AddRmsNorm,
 * InplaceAddRmsNorm, AddLayerNorm, AddLayerNormGrad, DeepNorm, GroupNorm, GroupNormSilu/V2,
 * GroupNormBackward, RmsNormGrad): the task every such operator's launch queues (below;
 * norm_rows.c), which gives the operator's tensor descriptors the run's addresses, reads gamma
 * and beta as float once per run, holds one row buffer per chunk of rows and pins the memory
 * until it is released; the fixed-order lane sums of a row (the kernels' Muls-then-ReduceSum
 * steps) and their fold, Ascend 950's Newton-Raphson rstd, so the split of rows over threads
 * never changes a bit; the AscendC vector reductions' half-interval sum (RmsNormGrad,
 * AddRmsNormDynamicQuant); Ascend 950's chunked and multi-level sums of squares (RmsNorm,
 * AddRmsNormQuant, AddRmsNormDynamicQuant); the centring and the scale-and-shift of a
 * LayerNorm row.
 */
#ifndef ACLEMU_OPS_NORM_ROWS_H_
#define ACLEMU_OPS_NORM_ROWS_H_

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "tensor_view.h"

#define NR_LANES 16      /* independent accumulators of a row's sum */
#define NR_MAX_CHUNKS 16 /* row chunks per run (each has its own row buffer) */

typedef struct {
    const float *gamma; /* gamma as float (in place or in gamma_buf) */
    const float *beta;  /* beta as float (in place or in gamma_buf + N), for norms with one */
    float *gamma_buf;   /* 2 * N floats: gamma's, then beta's */
    float *row_buf;     /* nchunks * row_floats */
    float *run_buf;     /* run_floats floats for the whole run (e.g. sums per core block) */
    int64_t nchunks, row_floats;
    void *pins[TV_MAX_VIEWS + 1];
    int npins;
} norm_rows;

/* The lanes' sums folded by a fixed pairwise tree (lane l + s into lane l, s halving). */
static inline float nr_fold(float acc[NR_LANES])
{
    for (int s = NR_LANES / 2; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            acc[l] += acc[l + s];
    return acc[0];
}

/* sum(x[i] * avg) in a fixed order: each term rounded (the kernels' Muls before their
 * ReduceSum), lane l taking x[l], x[l + NR_LANES], ...; the lanes fold by nr_fold's tree. */
static inline float nr_scaled_sum(const float *x, int64_t n, float avg)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++)
            acc[l] += x[i + l] * avg;
    for (int l = 0; i + l < n; l++)
        acc[l] += x[i + l] * avg;
    return nr_fold(acc);
}

/* sum(x[i] * x[i] * avg) in nr_scaled_sum's order: each square rounded, scaled by avg and
 * rounded (the kernels' Mul then Muls). */
static inline float nr_scaled_sum_squares(const float *x, int64_t n, float avg)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++) {
            float q = x[i + l] * x[i + l];
            acc[l] += q * avg;
        }
    for (int l = 0; i + l < n; l++) {
        float q = x[i + l] * x[i + l];
        acc[l] += q * avg;
    }
    return nr_fold(acc);
}

/* The vector unit's lane count for floats (one repeat of 256 bytes): the AscendC reductions'
 * (reduce_common.h ReduceSumHalfInterval, ReduceSumMultiN) last step is a WholeReduceSum over
 * this many lanes. */
#define NR_VECTOR_LANES 64

/* Four floats: nr_fold_vector_lanes' tree a level at a time, two shuffles and an add per
 * pair of vectors (one SHUFPS each on x86-64's baseline), where the lane-by-lane loop took
 * about 8 instructions a lane: rows of up to a few hundred elements spend more on their folds
 * than on their data. */
typedef float nr_v4f __attribute__((vector_size(16)));

/* Lane i of the result is lane 2i plus lane 2i + 1 of a then b. */
static inline nr_v4f nr_pair_sums(nr_v4f a, nr_v4f b)
{
#if defined(__clang__)
    return __builtin_shufflevector(a, b, 0, 2, 4, 6) + __builtin_shufflevector(a, b, 1, 3, 5, 7);
#else
    typedef int32_t nr_v4i __attribute__((vector_size(16)));
    return __builtin_shuffle(a, b, (nr_v4i){0, 2, 4, 6}) +
           __builtin_shuffle(a, b, (nr_v4i){1, 3, 5, 7});
#endif
}

/* One repeat's reduction (vcadd: WholeReduceSum, ReduceSum within a repeat, Ascend 950's
 * Reduce) over NR_VECTOR_LANES floats: the binary tree the Ascend C ReduceSum reference
 * describes, adjacent lanes first (v0 + v1, v2 + v3, ..., then those sums pairwise), each add
 * one float rounding. Masked-off lanes are passed as +0. */
static inline float nr_fold_vector_lanes(const float *v)
{
    nr_v4f t[NR_VECTOR_LANES / 4];
    memcpy(t, v, sizeof t);
    for (int n = NR_VECTOR_LANES / 4; n > 1; n /= 2)
        for (int j = 0; j < n / 2; j++)
            t[j] = nr_pair_sums(t[2 * j], t[2 * j + 1]);
    return (t[0][0] + t[0][1]) + (t[0][2] + t[0][3]);
}

/* Atlas A2/A3's ReduceSum over the first n floats of x (the count form: one vcadd in counter
 * mode): each repeat of NR_VECTOR_LANES floats reduced by nr_fold_vector_lanes (the last one's
 * missing lanes +0), the repeats' results added in order into an accumulator cleared to +0. */
static inline float nr_reduce_sum_count(const float *x, int64_t n)
{
    float acc = 0.0f;
    for (int64_t i = 0; i < n; i += NR_VECTOR_LANES) {
        float lanes[NR_VECTOR_LANES] = {0};
        const int64_t w = n - i < NR_VECTOR_LANES ? n - i : NR_VECTOR_LANES;
        for (int64_t l = 0; l < w; l++)
            lanes[l] = x[i + l];
        acc += nr_fold_vector_lanes(lanes);
    }
    return acc;
}

/* One repeat's reduction of x[0..w), w <= NR_VECTOR_LANES (the other lanes masked off: +0). */
static inline float nr_fold_first(const float *x, int64_t w)
{
    float lanes[NR_VECTOR_LANES] = {0};
    for (int64_t l = 0; l < w; l++)
        lanes[l] = x[l];
    return nr_fold_vector_lanes(lanes);
}

/* The Atlas inference parts' ReduceSum over the first n floats of x (asc-devkit
 * kernel_operator_vec_reduce_intf_impl.h's "other version" branch and dav_m200's ReduceImpl,
 * ReduceSumImpl): below NR_VECTOR_LANES one masked repeat's reduction; else the body of
 * n / NR_VECTOR_LANES whole repeats (one repeat: its reduction; more: each repeat reduced,
 * those results reduced NR_VECTOR_LANES at a time in counter mode, then those reduced once
 * more when there are several), and a partial last repeat reduced alone, the two results
 * reduced as a pair. n < NR_VECTOR_LANES^3. */
static inline float nr_reduce_sum_count_m200(const float *x, int64_t n)
{
    if (n < NR_VECTOR_LANES)
        return nr_fold_first(x, n);
    const int64_t reps = n / NR_VECTOR_LANES, tail = n % NR_VECTOR_LANES;
    float body = nr_fold_first(x, NR_VECTOR_LANES);
    if (reps > 1) {
        float second[NR_VECTOR_LANES] = {0}, first[NR_VECTOR_LANES];
        const int64_t groups = (reps + NR_VECTOR_LANES - 1) / NR_VECTOR_LANES;
        for (int64_t k = 0; k < groups; k++) {
            int64_t w = 0;
            for (; w < NR_VECTOR_LANES && k * NR_VECTOR_LANES + w < reps; w++)
                first[w] = nr_fold_first(x + (k * NR_VECTOR_LANES + w) * NR_VECTOR_LANES,
                                         NR_VECTOR_LANES);
            second[k] = nr_fold_first(first, w);
        }
        body = groups == 1 ? second[0] : nr_fold_vector_lanes(second);
    }
    if (tail == 0)
        return body;
    const float pair[2] = {body, nr_fold_first(x + reps * NR_VECTOR_LANES, tail)};
    return nr_fold_first(pair, 2);
}

/* The largest power of two strictly below v, 0 for v <= 1 (the kernels' FindNearestPower2,
 * binaryAddQuotient: a sum's first, power-of-two part). */
static inline int64_t nr_pow2_below(int64_t v)
{
    if (v <= 1)
        return 0;
    int64_t p = 1;
    while (p * 2 < v)
        p *= 2;
    return p;
}

/* The binary counter's level a block's result lands on: the trailing one bits of its index
 * (the arch35 kernels' GetCacheID / GetCacheId, UpdateCache). */
static inline int nr_cache_level(int64_t idx)
{
    int t = 0;
    for (; idx & 1; idx >>= 1)
        t++;
    return t;
}

/* The binary-add sum's last steps (nr_binary_add_sum), from its quot_loops partials, one per
 * register of the row's first power-of-two terms (partial is overwritten): norm_common's
 * DichotomyAdd, the partials folded by halves of whole registers down to one, reduced over
 * its first lanes. */
static inline float nr_binary_add_partials(float *partial, int64_t quot_loops)
{
    float lanes[NR_VECTOR_LANES];
    int64_t last = quot_loops;
    if (quot_loops > NR_VECTOR_LANES) { /* binaryAddK halvings of whole registers */
        for (int64_t cur = quot_loops / NR_VECTOR_LANES / 2; cur >= 1; cur /= 2)
            for (int64_t j = 0; j < cur * NR_VECTOR_LANES; j++)
                partial[j] += partial[j + cur * NR_VECTOR_LANES];
        last = NR_VECTOR_LANES;
    }
    for (int64_t l = 0; l < NR_VECTOR_LANES; l++)
        lanes[l] = l < last ? partial[l] : 0.0f;
    return nr_fold_vector_lanes(lanes);
}

/* Ascend 950's binary-add sum of a row's terms t[0..n) (add_layer_norm_quant's VFCalcMeanVar
 * and Welford finalize, layer_norm_v4's two_pass_perf template): up to NR_VECTOR_LANES terms,
 * one register's Reduce; else, P the largest power of two below n (the tilings'
 * binaryAddQuotient), term P + j added onto term j per lane (the part past P; the masked-off
 * lanes zero), each register of the first P terms reduced to one partial, then norm_common's
 * DichotomyAdd: the partials folded by halves of whole registers down to one, which is reduced
 * over its first lanes. Each Reduce is nr_fold_vector_lanes. partial: n / NR_VECTOR_LANES + 1
 * floats of scratch. */
static inline float nr_binary_add_sum(const float *t, int64_t n, float *partial)
{
    float lanes[NR_VECTOR_LANES];
    if (n <= NR_VECTOR_LANES) {
        for (int64_t l = 0; l < NR_VECTOR_LANES; l++)
            lanes[l] = l < n ? t[l] : 0.0f;
        return nr_fold_vector_lanes(lanes);
    }
    const int64_t p = nr_pow2_below(n);
    const int64_t rem_loops = (n - p + NR_VECTOR_LANES - 1) / NR_VECTOR_LANES;
    const int64_t quot_loops = p / NR_VECTOR_LANES;
    for (int64_t i = 0; i < quot_loops; i++) {
        for (int64_t l = 0; l < NR_VECTOR_LANES; l++) {
            const int64_t q = i * NR_VECTOR_LANES + l, r = p + q;
            lanes[l] = t[q];
            if (i < rem_loops)
                lanes[l] = lanes[l] + (r < n ? t[r] : 0.0f);
        }
        partial[i] = nr_fold_vector_lanes(lanes);
    }
    return nr_binary_add_partials(partial, quot_loops);
}

/* Ascend 950's binary-fold sum of the products a[i] * b[i] over [0, n) (b NULL: of a[i]), as
 * group_norm_grad's arch35 kernels take their channel and group sums (group_norm_grad_base.h
 * VFDbetaDgammaBinaryFoldCommon, VFComputeBinaryFoldSum1Sum2; group_norm_grad_common.h
 * VFComputeDbetaDs and VFComputeSum1Sum2 up to one register): up to NR_VECTOR_LANES terms, each
 * lane its product (or term) plus the +0 of the cleared accumulator (a fused multiply-add onto
 * zero), one Reduce; else, P the largest power of two below n (the tiling's binaryAddQuotient),
 * the lanes of the first P whose partner P + j exists fold it in: a[j] * b[j] rounded, then
 * a[P + j] * b[P + j] added to it fused (MulAddDst / MulDstAdd), or a[j] + a[P + j]; the other
 * lanes keep their own product or term (no +0: a merging Move); each register of the first P
 * reduced to one partial, then nr_binary_add_partials' halvings and last Reduce (binaryAddK,
 * binaryAddLastNum). nr_binary_add_sum cannot take it: its terms are formed before the fold, and
 * it adds +0 to the unpaired lanes of the last paired register. partial: n / 64 + 1 floats. */
static inline float nr_binary_fold_dot(const float *a, const float *b, int64_t n, float *partial)
{
#define NR_TERM(i) (b ? a[i] * b[i] : a[i])
    float lanes[NR_VECTOR_LANES];
    if (n <= NR_VECTOR_LANES) {
        for (int64_t l = 0; l < NR_VECTOR_LANES; l++)
            lanes[l] = l < n ? NR_TERM(l) + 0.0f : 0.0f;
        return nr_fold_vector_lanes(lanes);
    }
    const int64_t p = nr_pow2_below(n), quot_loops = p / NR_VECTOR_LANES;
    for (int64_t i = 0; i < quot_loops; i++) {
        for (int64_t l = 0; l < NR_VECTOR_LANES; l++) {
            const int64_t q = i * NR_VECTOR_LANES + l, r = p + q;
            lanes[l] = NR_TERM(q);
            if (r < n)
                lanes[l] = b ? fmaf(a[r], b[r], lanes[l]) : lanes[l] + a[r];
        }
        partial[i] = nr_fold_vector_lanes(lanes);
    }
    return nr_binary_add_partials(partial, quot_loops);
#undef NR_TERM
}

/* Ascend 950's stage-two sum over R rows v[0], v[stride], ... of one column (group_norm_grad's
 * arch35 reduceNMode1LessThan2/4/8 and reduceNMode1MoreThan8, the tiling's stage2BinaryAdd-
 * Quotient and stage2BinaryAddK): R <= 2 added in order onto +0; else rows past P (2 for R up
 * to 4, 4 up to 8, else the largest power of two below R, at least 8) added onto row j - P
 * (a missing row is a row of zeros) in blocks of 8 rows (4 or 2 below 8): ((t0 + t1) + (t2 +
 * t3)) + ((t4 + t5) + (t6 + t7)), t the row or the row plus its partner; blocks wholly past the
 * paired ones take the rows alone; the P / 8 block sums then halved down to one. tmp: P / 8
 * floats of scratch (R > 8). */
static inline float nr_rows_binary_sum(const float *v, int64_t R, int64_t stride, float *tmp)
{
#define NR_ROW(j) ((j) < R ? v[(j) * stride] : 0.0f)
    if (R <= 2) {
        float s = 0.0f;
        for (int64_t j = 0; j < R; j++)
            s = s + v[j * stride];
        return s;
    }
    if (R <= 4)
        return (v[0] + v[2 * stride]) + (v[stride] + NR_ROW(3));
    if (R <= 8)
        return ((v[0] + v[4 * stride]) + (v[stride] + NR_ROW(5))) +
               ((v[2 * stride] + NR_ROW(6)) + (v[3 * stride] + NR_ROW(7)));
    int64_t p = 8;
    while (p < R)
        p *= 2;
    p /= 2;
    const int64_t blocks = p / 8, paired = (R - p + 7) / 8;
    for (int64_t g = 0; g < blocks; g++) {
        float t[8];
        for (int64_t k = 0; k < 8; k++) {
            const int64_t j = 8 * g + k;
            t[k] = g < paired ? v[j * stride] + NR_ROW(p + j) : v[j * stride];
        }
        tmp[g] = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
    }
    for (int64_t cur = blocks / 2; cur >= 1; cur /= 2)
        for (int64_t j = 0; j < cur; j++)
            tmp[j] = tmp[j] + tmp[j + cur];
    return tmp[0];
#undef NR_ROW
}

/* ---- Ascend 950's chunked sums of squares (norm_common reduce_common_regbase.h
 * ReduceSumRstd, rms_norm_regbase_common.h ComputeFormerImplV2: one arithmetic) ---------- */

#define NR_LEVEL 256 /* the split kernels' level buffers (ONCE_VECTOR_SIZE floats each) */

/* One chunk's sum of the squares q[0..count), zero past count up to cal (the kernels pad a
 * chunk with zeros to 512 bytes of x), with the power-of-two split `power` (count <= cal <=
 * 2 * power): each pair of registers past `power` added onto the pair as far in front (main +
 * tail per register, then the two registers), the rest of the front a pair at a time, each
 * pair one Reduce into a work entry; the entries, 128 at a time, folded a register onto the
 * other and reduced; then one Reduce over what is left. norm_common's ReduceSumRstd (AddRms-
 * NormQuant's and AddRmsNormDynamicQuant's normal and split kernels, the square of x1 + x2)
 * and RmsNorm's ComputeFormerImplV2 take the same adds in the same order. Each Reduce is
 * nr_fold_vector_lanes (masked-off lanes zero). */
static inline float nr_regbase_chunk_sum(const float *q, int64_t count, int64_t cal,
                                         int64_t power)
{
#define NR_SQ(i) ((i) < count ? q[i] : 0.0f)
    enum { VL = NR_VECTOR_LANES };
    float work[NR_LEVEL], lanes[VL];
    const int64_t remain = cal - power, remain_loops = remain / (2 * VL);
    const int64_t master_loops = (power - remain) / (2 * VL), merge = power / (2 * VL);
    const int64_t merge_loops = merge / (2 * VL);
    for (int64_t i = 0; i < remain_loops; i++) {
        for (int64_t l = 0, a = 2 * VL * i; l < VL; l++, a++)
            lanes[l] = (NR_SQ(a) + NR_SQ(power + a)) + (NR_SQ(a + VL) + NR_SQ(power + a + VL));
        work[i] = nr_fold_vector_lanes(lanes);
    }
    for (int64_t i = 0; i < master_loops; i++) {
        for (int64_t l = 0, a = remain + 2 * VL * i; l < VL; l++, a++)
            lanes[l] = NR_SQ(a) + NR_SQ(a + VL);
        work[remain_loops + i] = nr_fold_vector_lanes(lanes);
    }
    for (int64_t i = 0; i < merge_loops; i++) {
        for (int64_t l = 0; l < VL; l++)
            lanes[l] = work[2 * VL * i + l] + work[2 * VL * i + VL + l];
        work[i] = nr_fold_vector_lanes(lanes);
    }
    const int64_t mean = merge_loops ? merge_loops : merge;
    for (int64_t l = 0; l < VL; l++)
        lanes[l] = l < mean ? work[l] : 0.0f;
    return nr_fold_vector_lanes(lanes);
#undef NR_SQ
}

/* The chunk of `count` squares at q as the kernels read it: padded with zeros to 512 bytes of
 * x's dtype (x_bytes per element), split at `power`. */
static inline float nr_regbase_chunk(const float *q, int64_t count, int64_t x_bytes,
                                     int64_t power)
{
    const int64_t per512 = 512 / x_bytes, cal = (count + per512 - 1) / per512 * per512;
    return nr_regbase_chunk_sum(q, count, cal, power);
}

/* A whole row of n squares as one chunk (the quant operators' normal kernels): padded to 512
 * bytes (baseNReduceAlign), split at the largest power of two up to that (the tilings'
 * powerSplit, 2^floor(log2(baseNReduceAlign))). */
static inline float nr_regbase_row_sum(const float *q, int64_t n, int64_t x_bytes)
{
    const int64_t per512 = 512 / x_bytes, cal = (n + per512 - 1) / per512 * per512;
    return nr_regbase_chunk_sum(q, n, cal, nr_pow2_below(cal + 1));
}

/* norm_common's LevelMergeRstd over a level buffer of NR_LEVEL floats (the sum only: the
 * rstd steps follow it): the four quarters added per lane, (first + second) + (third +
 * fourth), then one Reduce. */
static inline float nr_regbase_level_merge(const float *level)
{
    float lanes[NR_VECTOR_LANES];
    for (int64_t l = 0; l < NR_VECTOR_LANES; l++)
        lanes[l] = (level[l] + level[NR_VECTOR_LANES + l]) +
                   (level[2 * NR_VECTOR_LANES + l] + level[3 * NR_VECTOR_LANES + l]);
    return nr_fold_vector_lanes(lanes);
}

/* A chunk pair's two sums into one level-1 entry (ComputeSum: one Reduce over two lanes). */
static inline float nr_regbase_pair(float a, float b)
{
    float lanes[NR_VECTOR_LANES] = {a, b};
    return nr_fold_vector_lanes(lanes);
}

/* Ascend 950's split row sum of the squares sq[0..n) (the split kernels' ComputeFormer:
 * RmsNorm's rms_norm_regbase_split_d.h, AddRmsNormQuant's and AddRmsNormDynamicQuant's
 * _regbase_split_reduce.h; the levels norm_common's): with U the chunk (RmsNorm's ubFactor,
 * the quant tilings' powerSplit) and loop * U the largest power-of-two multiple of U up to n
 * (ubLoop, powerLoop), the part past it in whole U-chunks (tailLoop of them) and a tail: the
 * row read from its start as tailLoop pairs of U-chunks, then the tail's pair (a chunk of
 * U/2 + tail with U/2 and one of U/2 for a tail up to U/2, else a chunk of U with U and the
 * tail with U/2), each pair's two sums one level-1 entry, then the remaining U-chunks one
 * entry each. A full level (NR_LEVEL entries) is merged into the next level's entry and its
 * count restarts (its stale entries stay); the row's sum is the merge of the lowest level
 * with entries (ComputeMultiLevelReduce, ComputeMultiLevelRstd). Chunks as nr_regbase_chunk
 * reads them (x_bytes: x's element size). */
static inline float nr_regbase_split_sum(const float *sq, int64_t n, int64_t U, int64_t loop,
                                         int64_t x_bytes)
{
    const int64_t H = U / 2, split = loop * U;
    const int64_t tail = (n - split) % U, tail_loops = (n - split) / U;
    const int64_t master_loops = loop - tail_loops - (tail != 0);
    float lv[3][NR_LEVEL] = {{0}};
    int64_t cnt[3] = {0}, off = 0;
    for (int64_t k = 0; k < tail_loops + (tail != 0) + master_loops; k++) {
        float entry;
        if (k < tail_loops) {
            entry = nr_regbase_pair(nr_regbase_chunk(sq + off, U, x_bytes, U),
                                    nr_regbase_chunk(sq + off + U, U, x_bytes, U));
            off += 2 * U;
        } else if (k == tail_loops && tail != 0) {
            const int64_t first = tail <= H ? H + tail : U, second = tail <= H ? H : tail;
            const int64_t power = tail <= H ? H : U;
            entry = nr_regbase_pair(nr_regbase_chunk(sq + off, first, x_bytes, power),
                                    nr_regbase_chunk(sq + off + first, second, x_bytes, H));
            off += first + second;
        } else {
            entry = nr_regbase_chunk(sq + off, U, x_bytes, U);
            off += U;
        }
        lv[0][cnt[0]++] = entry;
        for (int d = 0; d < 2 && cnt[d] == NR_LEVEL; d++) { /* ComputeMultiLevelReduce */
            lv[d + 1][cnt[d + 1]++] = nr_regbase_level_merge(lv[d]);
            cnt[d] = 0;
        }
    }
    const int d = cnt[0] > 0 ? 0 : cnt[1] > 0 ? 1 : 2;
    return nr_regbase_level_merge(lv[d]);
}

/* ReduceSumHalfInterval (ops-nn norm kernels' reduce_common.h) over t[0..n), which it
 * overwrites: the part past the largest power of two added onto the front, then halved down
 * to NR_VECTOR_LANES lanes, each step one float add per element, then the lanes' fold. */
static inline float nr_sum_half_interval(float *t, int64_t n)
{
    float lanes[NR_VECTOR_LANES] = {0};
    if (n > NR_VECTOR_LANES) {
        int64_t body = 1;
        while (body * 2 <= n)
            body *= 2;
        for (int64_t i = 0; i < n - body; i++)
            t[i] += t[body + i];
        while (body > NR_VECTOR_LANES) {
            body /= 2;
            for (int64_t i = 0; i < body; i++)
                t[i] += t[i + body];
        }
        n = NR_VECTOR_LANES;
    }
    for (int64_t i = 0; i < n; i++)
        lanes[i] = t[i];
    return nr_fold_vector_lanes(lanes);
}

/* ReduceSumMultiN (ops-nn norm kernels' reduce_common.h) over t[0..n): lane l accumulates
 * t[l], t[l + 64], ... in order from +0, then the lanes' fold. */
static inline float nr_sum_lane_blocks(const float *t, int64_t n)
{
    float lanes[NR_VECTOR_LANES] = {0};
    for (int64_t b = 0; b < n; b += NR_VECTOR_LANES)
        for (int64_t l = 0; l < NR_VECTOR_LANES && b + l < n; l++)
            lanes[l] = t[b + l] + lanes[l];
    return nr_fold_vector_lanes(lanes);
}

/* sum(x[i] * x[i]) in nr_scaled_sum's order, unscaled (the kernels that scale the row's sum
 * once, after the reduction). */
static inline float nr_sum_squares(const float *x, int64_t n)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++)
            acc[l] += x[i + l] * x[i + l];
    for (int l = 0; i + l < n; l++)
        acc[l] += x[i + l] * x[i + l];
    return nr_fold(acc);
}

/* Ascend 950's rstd of a row's var (hicann/ops-nn norm/norm_common/op_kernel/
 * reduce_common_regbase.h ComputeRstdNewtonRaphsonReg): eps added, var clamped below at
 * -99.99 when `clamp` (its NEED_MAX), then 1 / sqrt(1 / var) refined by one Newton-Raphson
 * step, each Mula taken as a fused multiply-add; var equal to +inf gives 0, var equal to 0
 * gives +inf: the selects that replace the step's NaNs at those two values (the kernel's
 * POS_INF, 3.40282366920938E+38, is 2^128 cut to 15 digits, above FLT_MAX's halfway point to
 * 2^128: as a float it rounds to +inf). */
static inline float nr_rstd_newton_raphson(float var, float eps, bool clamp)
{
    var = isnan(var) ? var : var + eps; /* a NaN var's own NaN, whatever eps is */
    if (clamp && var < -99.99f)
        var = -99.99f;
    float r = 1.0f / var;
    const float y = sqrtf(r);
    float t = var * -0.5f;
    t = t * y;
    const float t1 = fmaf(t, y, 1.5f);
    float rstd = y * t1;
    const float t3 = var * -1.0f;
    float s = fmaf(t3, r, 1.0f);
    const float t4 = rstd * -1.0f;
    r = fmaf(t4, rstd, r);
    s = fmaf(var, r, s);
    s = s * rstd;
    rstd = fmaf(s, 0.5f, rstd);
    /* a NaN var (or one below zero) gives y's NaN: each of the kernel's multiplies keeps its
     * NaN operand, where gcc turns the Muls by -1 into negations (the NaN's sign flipped), and
     * the fused multiply-adds would then pick between NaNs by the machine's operand order */
    if (isnan(y))
        rstd = y;
    if (var == INFINITY)
        rstd = 0.0f;
    if (var == 0.0f)
        rstd = INFINITY;
    return rstd;
}

/* a with its quiet bit set: what an x86 operation gives for a NaN operand. */
static inline float nr_quiet(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    u |= 0x00400000u;
    memcpy(&a, &u, sizeof u);
    return a;
}

/* a - b, a * b, a + b, fma(a, b, c) whose NaN is the first NaN operand's (in the argument
 * order), quieted, else the operation's own (the default NaN): x86 gives the first NaN of the
 * instruction's operands, and the compiler orders a commutative operation's operands as it
 * likes (per level, per build), so the plain operators give a NaN's sign and payload by
 * chance where two NaNs meet. */
static inline float nr_nan_first_sub(float a, float b)
{
    return isnan(a) ? nr_quiet(a) : isnan(b) ? nr_quiet(b) : a - b;
}

static inline float nr_nan_first_mul(float a, float b)
{
    return isnan(a) ? nr_quiet(a) : isnan(b) ? nr_quiet(b) : a * b;
}

static inline float nr_nan_first_add(float a, float b)
{
    return isnan(a) ? nr_quiet(a) : isnan(b) ? nr_quiet(b) : a + b;
}

static inline float nr_nan_first_fma(float a, float b, float c)
{
    return isnan(a)   ? nr_quiet(a)
           : isnan(b) ? nr_quiet(b)
           : isnan(c) ? nr_quiet(c)
                      : fmaf(a, b, c);
}

/* The transpose templates' DoReduce (layer_norm_v4_transpose.h, _310p.h, layer_norm_grad_v3_
 * transpose.h): the sum of v[0..n) (overwritten) as the kernel folds a lane's n rows: n == 1
 * plus +0; else, P the largest power of two up to n, v[j] += v[P + j] for j < n - P, then
 * halves: v[j] += v[j + h], h = P / 2, ..., 1. Each add keeps its first NaN operand (the
 * kernels' Add(dst, src0, src1): src0 first). */
static inline float nr_dichotomy_sum(float *v, int64_t n)
{
    if (n == 1)
        return v[0] + 0.0f;
    const int64_t p = nr_pow2_below(n + 1);
    for (int64_t j = 0; j < n - p; j++)
        v[j] = nr_nan_first_add(v[j], v[p + j]);
    for (int64_t h = p / 2; h >= 1; h /= 2)
        for (int64_t j = 0; j < h; j++)
            v[j] = nr_nan_first_add(v[j], v[j + h]);
    return v[0];
}

/* d[i] = x[i] - mean (d may be x): a row centred on its mean. */
static inline void nr_center(float *d, const float *x, int64_t n, float mean)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = x[i] - mean;
}

/* y[i] = (d[i] * rstd) * gamma[i] + beta[i], each step rounded to float (y may be d): the
 * LayerNorm-style kernels' Muls, Mul, Add after the statistics (AddLayerNorm, DeepNorm). */
static inline void nr_scale_shift(float *y, const float *d, int64_t n, float rstd,
                                  const float *gamma, const float *beta)
{
    for (int64_t i = 0; i < n; i++) {
        float t = d[i] * rstd;
        t *= gamma[i];
        y[i] = t + beta[i];
    }
}

/* t[i] = v[i] * smooth[i] (v[i] without smooth) over a row of n; returns max |t[i]|, from 0,
 * a NaN skipped: the dynamic-quant kernels' per-row abs max (their Mul, Abs, Max from a
 * zeroed register; a max is exact, so the lane order does not matter). */
static inline float nr_smoothed_abs_max(const float *v, const float *smooth, float *t, int64_t n)
{
    float mx = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        t[i] = smooth ? v[i] * smooth[i] : v[i];
        const float a = fabsf(t[i]);
        mx = a > mx ? a : mx;
    }
    return mx;
}

/* The row buffer of chunk `chunk` (row_floats floats). */
static inline float *nr_chunk_buf(const norm_rows *R, int64_t chunk)
{
    return R->row_buf + chunk * R->row_floats;
}

/* Reads gamma (N elements of any dtype and layout) as floats, for the whole run. */
static inline void nr_load_gamma(norm_rows *R, const tdesc *g, int64_t N)
{
    R->gamma = get_tile(view_base(g), g->dtype, &g->inner, 0, N, R->gamma_buf);
}

/* Adds offset to each of gamma's N floats (in float, one rounding each), in gamma_buf (gamma
 * may be the tensor's own memory): GemmaRmsNorm's (1 + gamma). */
static inline void nr_offset_gamma(norm_rows *R, int64_t N, float offset)
{
    for (int64_t i = 0; i < N; i++)
        R->gamma_buf[i] = R->gamma[i] + offset;
    R->gamma = R->gamma_buf;
}

/* Reads beta (N elements of any dtype and layout) as floats, for the whole run. */
static inline void nr_load_beta(norm_rows *R, const tdesc *b, int64_t N)
{
    R->beta = get_tile(view_base(b), b->dtype, &b->inner, 0, N, R->gamma_buf + N);
}

/* ---- the task: one launch, run and release for every operator on norm_rows ---------------- */

/*
 * An operator supplies what is its own: a payload type whose first member is an nr_head (set
 * by its phase one), an nr_kernel (its row kernel and the steps around it) and its executor
 * ops, NR_EXECUTOR_OPS(its phase two's name). The launch (norm_rows.c) copies the payload into
 * a task (a repeatable executor may be destroyed while the task is queued), gives its tensors
 * the run's addresses, allocates the run's buffers (rows and width > 0 only), checks, pins and
 * queues it; the task's run calls before_rows, then rows over the chunks (buffers allocated
 * only), then after_rows; its release unpins, frees the buffers and the task. The executor's
 * ownership is aclemu_executor_run's: the launch consumes nothing of the executor's payload,
 * and the task is released exactly once, by the stream or, on a launch failure, at once.
 */
typedef struct nr_kernel nr_kernel;

/* The first member of an operator's payload: how a launch of it runs. */
typedef struct {
    const nr_kernel *kernel;
    const char *call;         /* phase two's name, for messages */
    const char *const *names; /* the tensors' names, in the order of the kernel's tensors */
    int64_t rows;             /* rows the kernel runs over (0: none) */
    int64_t width;            /* gamma's length: 2 * width floats for gamma, then beta */
    int64_t row_floats;       /* row buffer floats per chunk */
    int64_t run_floats;       /* floats of the run's own buffer (R->run_buf; 0: none) */
    bool no_kernel;           /* the vendor launches nothing for this call (every output of a
                               * generated operator empty, an op_api's early return): phase
                               * two checks the memory and queues nothing (vm_launch) */
} nr_head;

struct nr_kernel {
    size_t payload_size; /* sizeof the payload, nr_head first */
    size_t tensors_at;   /* offsetof the payload's tdesc array */
    int ntensors;
    /* On the stream's thread, before any row: reads what every row needs (nr_load_gamma,
     * nr_load_beta) and writes what needs no row; returns whether the rows run. R's buffers
     * exist only when the head's rows and width are both > 0. */
    bool (*before_rows)(const void *payload, norm_rows *R);
    /* Rows [begin, end) of chunk `chunk` (its row buffer: nr_chunk_buf(R, chunk)). */
    void (*rows)(const void *payload, const norm_rows *R, int64_t chunk, int64_t begin,
                 int64_t end);
    /* After every row (NULL: nothing), e.g. the chunks' partial sums added in chunk order. */
    void (*after_rows)(const void *payload, norm_rows *R);
};

/* An operator's nr_kernel: its payload type (nr_head first, its tensors in an array t) and
 * its steps (after_rows may be NULL). */
#define NR_KERNEL(payload_type, before_rows, rows, after_rows)                                 \
    {sizeof(payload_type), offsetof(payload_type, t),                                       \
     (int)(sizeof(((payload_type *)0)->t) / sizeof(tdesc)), (before_rows), (rows), (after_rows)}

#define NR_API __attribute__((visibility("hidden")))

/* The launch of every operator on norm_rows (aclemu_executor_ops.launch). */
NR_API aclnnStatus nr_task_launch(void *payload, void *const *addrs, void *workspace,
                                  uint64_t workspace_size, aclrtStream stream);

/* The executor ops of an operator on norm_rows: its payload is one flat allocation. */
#define NR_EXECUTOR_OPS(name) {.op_name = (name), .launch = nr_task_launch, .destroy = free}

#endif /* ACLEMU_OPS_NORM_ROWS_H_ */
