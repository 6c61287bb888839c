/*
 * Ascend 950's two_pass_perf rows of aclnnLayerNorm (layer_norm.c describes the chain),
 * included by row_levels.h once per x86-64 level it carries, each time under that level's
 * `#pragma GCC target` and with RK_SFX naming the copy: perf_body_<RK_SFX>.
 *
 * Native-width vectors (row_vectors.h: 16 floats on x86-64-v4, 8 on v3, 4 on the baseline)
 * make each device register's 64 terms and the out row; the registers' Reduce and the
 * partials' folds are norm_rows.h's. Every term and out element is the chain's float
 * operations in its order, one IEEE operation each (-std=c11: no contraction; MulDstAdd a
 * fused multiply-add in every copy: VFMADD on x86-64-v3 and v4, libm's fmaf on the baseline),
 * so every copy gives the same finite bits.
 *
 * NaN: x86 gives an operation's first NaN operand, and the compiler orders a commutative
 * operation's operands as it likes, differently per level (last round's target_clones copies
 * disagreed on NaN signs). So no NaN result is left to operand order: a sum holding NaN terms
 * is its first NaN term (index order), quieted (a sum without NaN terms can only make the
 * default NaN, Inf + -Inf, whatever the order); an out element that is NaN is recomputed
 * lane by lane with each operation's NaN taken from its first NaN operand in the chain's order
 * ((x - mean) * rstd, then * gamma + beta), else the operation's own (default) NaN. The rstd
 * of a NaN var is its NaN (norm_rows.h nr_rstd_newton_raphson). tests/test_kernel_clones.py
 * compares every copy's bits, NaN and Inf rows included.
 *
 * Included by row_levels.h (ROWS_HEADER). Expects from the includer: STAT_ROWS, ln_task,
 * store_stats, norm_rows.h, convert.h. No include guard: every inclusion is one more copy.
 */
#include "row_vectors.h" /* RK(), RK_W, VF, RK(ld), RK(st): this copy's */
#define RK_PV (NR_VECTOR_LANES / RK_W) /* vectors per device register */

/* Term i of a sum: x[i] * inv (the mean's), or ((x[i] - mean)^2) * inv (the variance's). */
INLINE float RK(term)(const float *x, int64_t i, float mean, float inv, const bool sq)
{
    if (!sq)
        return x[i] * inv;
    const float d = nr_nan_first_sub(x[i], mean);
    return (d * d) * inv;
}

/* Out element i: ((x[i] - mean) * rstd) * w[i] + b[i] (one fused multiply-add with both),
 * each NaN its first NaN operand's. */
INLINE float RK(out)(const float *x, int64_t i, float mean, float rstd, const float *w,
                      const float *b)
{
    const float v = nr_nan_first_mul(nr_nan_first_sub(x[i], mean), rstd);
    if (w && b)
        return nr_nan_first_fma(v, w[i], b[i]);
    if (w)
        return nr_nan_first_mul(v, w[i]);
    return b ? nr_nan_first_add(v, b[i]) : v;
}

/* The first NaN term of a sum whose result s is NaN, quieted; s itself when no term is NaN
 * (Inf + -Inf: the default NaN in any order). */
INLINE float RK(nan_sum)(float s, const float *x, int64_t n, float mean, float inv,
                          const bool sq)
{
    for (int64_t i = 0; i < n; i++) {
        const float t = RK(term)(x, i, mean, inv, sq);
        if (isnan(t))
            return nr_quiet(t);
    }
    return s;
}


/* W elements from x + i before the scaling: x, or (x - mean)^2 */
INLINE VF RK(pbase)(const float *x, int64_t i, float mean, const bool sq)
{
    VF v = RK(ld)(x, i, LD_F32);
    if (sq) {
        v = v - mean;
        v = v * v;
    }
    return v;
}

/* RK(term) on W elements from x + i */
INLINE VF RK(pterm)(const float *x, int64_t i, float mean, float inv, const bool sq)
{
    return RK(pbase)(x, i, mean, sq) * inv;
}

/* a * b + c lane by lane, one rounding */
INLINE VF RK(fma)(VF a, VF b, VF c)
{
#if RK_W == 16
    return (VF)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif RK_W == 8
    return (VF)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    VF r;
    for (int l = 0; l < RK_W; l++)
        r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

/* whether a lane of v is NaN */
INLINE bool RK(any_nan)(VF v)
{
#if RK_W == 16
    return _mm512_cmp_ps_mask((__m512)v, (__m512)v, _CMP_UNORD_Q) != 0;
#elif RK_W == 8
    return _mm256_movemask_ps(_mm256_cmp_ps((__m256)v, (__m256)v, _CMP_UNORD_Q)) != 0;
#elif defined(__SSE__)
    return _mm_movemask_ps(_mm_cmpunord_ps((__m128)v, (__m128)v)) != 0;
#else
    bool nan = false;
    for (int l = 0; l < RK_W; l++)
        nan |= isnan(v[l]);
    return nan;
#endif
}

/* The template's sum of the terms of x[0..n) (layer_norm.c describes it; nr_binary_add_sum for
 * rows past two registers): the terms made W at a time, each register's lanes reduced by
 * nr_fold_vector_lanes; a NaN result is RK(nan_sum)'s. partial: n / 64 + 1 floats. */
INLINE float RK(psum)(const float *x, int64_t n, float mean, float inv, float *partial,
                      const bool sq)
{
    float lanes[NR_VECTOR_LANES] __attribute__((aligned(64)));
    float s;
    if (n <= 2 * NR_VECTOR_LANES) { /* one register; the second's terms onto the first's */
        for (int64_t l = 0; l < NR_VECTOR_LANES; l++) {
            float a = l < n ? RK(term)(x, l, mean, inv, sq) : 0.0f;
            if (n > NR_VECTOR_LANES)
                a = a + (l + NR_VECTOR_LANES < n
                             ? RK(term)(x, l + NR_VECTOR_LANES, mean, inv, sq) : 0.0f);
            lanes[l] = a;
        }
        s = nr_fold_vector_lanes(lanes);
    } else {
        const int64_t p = nr_pow2_below(n);
        const int64_t rem_loops = (n - p + NR_VECTOR_LANES - 1) / NR_VECTOR_LANES;
        const int64_t quot_loops = p / NR_VECTOR_LANES;
        for (int64_t i = 0; i < quot_loops; i++) {
            const int64_t q = i * NR_VECTOR_LANES;
            if (i >= rem_loops) {
                for (int j = 0; j < RK_PV; j++) {
                    VF a = RK(pterm)(x, q + j * RK_W, mean, inv, sq);
                    memcpy(lanes + j * RK_W, &a, sizeof a);
                }
            } else if (p + q + NR_VECTOR_LANES <= n) { /* term p + q + l onto term q + l */
                for (int j = 0; j < RK_PV; j++) {
                    VF a = RK(pterm)(x, q + j * RK_W, mean, inv, sq);
                    a = a + RK(pterm)(x, p + q + j * RK_W, mean, inv, sq);
                    memcpy(lanes + j * RK_W, &a, sizeof a);
                }
            } else { /* the register where the row ends: its lanes past n add +0 */
                for (int64_t l = 0; l < NR_VECTOR_LANES; l++)
                    lanes[l] = RK(term)(x, q + l, mean, inv, sq) +
                               (p + q + l < n ? RK(term)(x, p + q + l, mean, inv, sq) : 0.0f);
            }
            partial[i] = nr_fold_vector_lanes(lanes);
        }
        s = nr_binary_add_partials(partial, quot_loops);
    }
    return isnan(s) ? RK(nan_sum)(s, x, n, mean, inv, sq) : s;
}

/* Lane h of a register of the AscendC LayerNorm's sum (RK(lib_sum)): its term, or with axpy
 * Axpy's fused base(h) * inv + term(head + h), the tail's term +0 past the row. */
INLINE float RK(lib_lane)(const float *x, int64_t h, int64_t head, int64_t n, float mean,
                          float inv, const bool axpy, const bool sq)
{
    if (!axpy)
        return RK(term)(x, h, mean, inv, sq);
    const float base = sq ? (x[h] - mean) * (x[h] - mean) : x[h];
    return fmaf(base, inv, head + h < n ? RK(term)(x, head + h, mean, inv, sq) : 0.0f);
}

/* The sum of the regbase_two_pass template, made by the AscendC LayerNorm library (asc-devkit
 * impl/adv_api/detail/normalization/layernorm/layernorm_3510_impl.h ComputeMeanVariance,
 * layernorm_3510_utils.h; layer_norm.c describes it): rows of up to 128 as RK(psum)'s; longer
 * ones, head the largest power of two <= n, one partial per 128 terms of the head: registers
 * g = 0, 1 (terms 128 i + 64 g + l) each lane fma(base, inv, the tail's term head + ... ) while
 * g's tail starts inside the row (Loop1, Loop2's first), else the term alone (Loop2's second,
 * Loop3), the two registers added lane by lane and reduced (nr_fold_vector_lanes); the head /
 * 128 partials reduced by nr_binary_add_partials (ReduceWorkBufferAndStore's halvings). A NaN
 * result is RK(nan_sum)'s. partial: n / 64 + 1 floats. */
INLINE float RK(lib_sum)(const float *x, int64_t n, float mean, float inv, float *partial,
                         const bool sq)
{
    if (n <= 2 * NR_VECTOR_LANES)
        return RK(psum)(x, n, mean, inv, partial, sq);
    float lanes[2][NR_VECTOR_LANES] __attribute__((aligned(64)));
    const int64_t head = nr_pow2_below(n + 1), tail = n - head;
    const int64_t axpy_regs = (tail + NR_VECTOR_LANES - 1) / NR_VECTOR_LANES;
    const int64_t count = head / (2 * NR_VECTOR_LANES);
    for (int64_t i = 0; i < count; i++) {
        for (int64_t g = 0; g < 2; g++) {
            const int64_t reg = 2 * i + g, q = reg * NR_VECTOR_LANES;
            if (reg >= axpy_regs) {
                for (int j = 0; j < RK_PV; j++) {
                    VF a = RK(pterm)(x, q + j * RK_W, mean, inv, sq);
                    memcpy(lanes[g] + j * RK_W, &a, sizeof a);
                }
            } else if (q + NR_VECTOR_LANES <= tail) {
                for (int j = 0; j < RK_PV; j++) {
                    VF a = RK(fma)(RK(pbase)(x, q + j * RK_W, mean, sq), inv + (VF){0},
                                   RK(pterm)(x, head + q + j * RK_W, mean, inv, sq));
                    memcpy(lanes[g] + j * RK_W, &a, sizeof a);
                }
            } else { /* the register where the tail ends */
                for (int64_t l = 0; l < NR_VECTOR_LANES; l++)
                    lanes[g][l] = RK(lib_lane)(x, q + l, head, n, mean, inv, true, sq);
            }
        }
        for (int j = 0; j < RK_PV; j++) {
            VF a, b;
            memcpy(&a, lanes[0] + j * RK_W, sizeof a);
            memcpy(&b, lanes[1] + j * RK_W, sizeof b);
            a = a + b;
            memcpy(lanes[0] + j * RK_W, &a, sizeof a);
        }
        partial[i] = nr_fold_vector_lanes(lanes[0]);
    }
    const float s = nr_binary_add_partials(partial, count);
    return isnan(s) ? RK(nan_sum)(s, x, n, mean, inv, sq) : s;
}

/* The Welford template's sum of t[0..n) scaled by k (WelfordFinalize's BinaryReduceSum, asc-devkit
 * welfordfinalize_3510_impl.h ComputeMeanVF; t overwritten by its terms t * k): head the
 * largest power of two <= n, its tail's terms added onto its first registers' lanes (+0 past
 * n), one partial per register of the head, the partials folded (nr_binary_add_partials).
 * For n not a power of two that is nr_binary_add_sum; a power of two has no tail. partial:
 * n / 64 + 1 floats. */
INLINE float RK(wf_sum)(float *t, int64_t n, float k, float *partial)
{
    for (int64_t p = 0; p < n; p++)
        t[p] = t[p] * k;
    if (n & (n - 1))
        return nr_binary_add_sum(t, n, partial);
    for (int64_t i = 0; i < n / NR_VECTOR_LANES; i++)
        partial[i] = nr_fold_vector_lanes(t + i * NR_VECTOR_LANES);
    return nr_binary_add_partials(partial, n / NR_VECTOR_LANES);
}

/* The first NaN of x[0..n), quieted; s when x holds none. */
INLINE float RK(first_nan)(float s, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (isnan(x[i]))
            return nr_quiet(x[i]);
    return s;
}

/* A row's mean and variance by the Welford template (op_kernel/arch35/layer_norm_v4_welford.h,
 * layer_norm.c describes it). buf: 3 * tile floats; partial: tile / 64 + 1. */
INLINE void RK(welford_stats)(const ln_payload *P, const float *x, float *buf, float *partial,
                              float *mean_out, float *var_out)
{
    const int64_t n = P->N, tile = P->wf_tile, full = n / tile, tail = n % tile;
    const int64_t updates = full + (tail > 0);
    float *restrict m = buf, *restrict v = buf + tile, *restrict t = buf + 2 * tile;
    memset(m, 0, (size_t)(2 * tile) * sizeof(float));
    for (int64_t c = 1; c <= updates; c++) { /* WelfordUpdate: one update of each position */
        const float nrec = 1.0f / (float)c;
        const float *restrict xc = x + (c - 1) * tile;
        const int64_t cols = c <= full ? tile : tail;
        for (int64_t p = 0; p < cols; p++) {
            const float d = xc[p] - m[p];
            const float nm = d * nrec + m[p];
            v[p] = d * (xc[p] - nm) + v[p];
            m[p] = nm;
        }
    }
    /* WelfordFinalize: positions before the tail's end had one update more (headCount);
     * weights tailCount, times headCount / tailCount on those */
    const float tail_count = (float)full, head_scale = (float)updates / (float)full;
    int64_t k = 1;
    while (k * 2 <= tile)
        k *= 2;
    const int64_t k_over = k < tile ? 2 * k : k;
    const float k2rec = 1.0f / (float)k_over, k2rrec = (1.0f / (float)n) * (float)k_over;
    for (int64_t p = 0; p < tile; p++)
        t[p] = m[p] * tail_count;
    for (int64_t p = 0; p < tail; p++)
        t[p] = t[p] * head_scale;
    float mean = RK(wf_sum)(t, tile, k2rec, partial) * k2rrec;
    for (int64_t p = 0; p < tile; p++) {
        float d = m[p] - mean;
        d = d * d;
        t[p] = d * tail_count;
    }
    for (int64_t p = 0; p < tail; p++)
        t[p] = t[p] * head_scale;
    for (int64_t p = 0; p < tile; p++)
        t[p] = v[p] + t[p];
    float var = RK(wf_sum)(t, tile, k2rec, partial) * k2rrec;
    /* NaN: the row's first NaN, else the operations' default NaN (layer_norm.c) */
    *mean_out = isnan(mean) ? RK(first_nan)(mean, x, n) : mean;
    *var_out = isnan(var) ? RK(first_nan)(var, x, n) : var;
}

/* Out row y[0..n) from the float row x: RK(out) W at a time, a vector holding a NaN redone
 * lane by lane; y of okind's dtype (BF16 ties: away or to even; nt: non-temporal stores, y
 * aligned to the vector's bytes). */
INLINE void RK(pout)(const float *restrict x, int64_t n, float mean, float rstd,
                     const float *restrict w, const float *restrict b, void *restrict y,
                     const int okind, uint32_t away, const bool nt)
{
    int64_t i = 0;
    for (; i + RK_W <= n; i += RK_W) {
        VF v = (RK(ld)(x, i, LD_F32) - mean) * rstd;
        if (w && b)
            v = RK(fma)(v, RK(ld)(w, i, LD_F32), RK(ld)(b, i, LD_F32));
        else if (w)
            v = v * RK(ld)(w, i, LD_F32);
        else if (b)
            v = v + RK(ld)(b, i, LD_F32);
        if (RK(any_nan)(v))
            for (int l = 0; l < RK_W; l++)
                v[l] = RK(out)(x, i + l, mean, rstd, w, b);
        RK(st)(y, i, v, okind, away, nt);
    }
    for (; i < n; i++)
        st1(y, i, RK(out)(x, i, mean, rstd, w, b), okind, away);
}

/* Rows [begin, end) of the two_pass_perf template, out of kind okind stored by the kernel
 * (fused: contiguous, of input's dtype) or through the float row t. The chunk's buffer:
 * input's row as float, t, the partials. */
INLINE void RK(perf_impl)(const ln_task *T, int64_t chunk, int64_t begin, int64_t end,
                          const int okind)
{
    const ln_payload *P = &T->p;
    const tdesc *xd = &P->t[T_X], *yd = &P->t[T_Y];
    const int64_t N = P->N, oes = okind == LD_F32 ? 4 : 2;
    const float *w = T->w, *b = T->b, inv = P->pow2_inv, corr = P->pow2_corr;
    float *xbuf = T->row_buf + chunk * T->per_chunk, *t = xbuf + N, *partial = t + N;
    const uint32_t away = P->y_ties == ACLEMU_TIES_AWAY;
    float smean[STAT_ROWS], srstd[STAT_ROWS];
    for (int64_t s0 = begin; s0 < end; s0 += STAT_ROWS) {
        const int64_t cnt = end - s0 < STAT_ROWS ? end - s0 : STAT_ROWS;
        for (int64_t j = 0; j < cnt; j++) {
            const int64_t m = s0 + j;
            const float *x = get_tile(row_base(xd, m), xd->dtype, &xd->inner, 0, N, xbuf);
            float mean, var;
            if (P->wf_tile > 0) {
                RK(welford_stats)(P, x, partial + N / NR_VECTOR_LANES + 1, partial, &mean, &var);
            } else {
                mean = (P->lib_sums ? RK(lib_sum) : RK(psum))(x, N, 0.0f, inv, partial, false) *
                       corr;
                var = (P->lib_sums ? RK(lib_sum) : RK(psum))(x, N, mean, inv, partial, true) *
                      corr;
            }
            const float rstd = nr_rstd_newton_raphson(var, P->eps, false);
            char *y = row_base(yd, m);
            if (!T->y_fused) {
                RK(pout)(x, N, mean, rstd, w, b, t, LD_F32, 0, false);
                if (P->y_round) /* made in input's dtype, then cast */
                    aclemu_round_floats(xd->dtype, P->ties, t, N);
                put_tile(y, yd->dtype, P->y_ties, &yd->inner, 0, N, t);
            } else if (T->y_stream && ((uintptr_t)y & (RK_W * oes - 1)) == 0) {
                RK(pout)(x, N, mean, rstd, w, b, y, okind, away, true);
            } else {
                RK(pout)(x, N, mean, rstd, w, b, y, okind, away, false);
            }
            smean[j] = mean;
            srstd[j] = rstd;
        }
        store_stats(P, s0, cnt, smean, srstd);
    }
}

static void RK(perf_body)(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const ln_task *T = ctx;
    const aclDataType dt = T->p.t[T_Y].dtype;
    if (T->y_fused && dt == ACL_FLOAT16)
        RK(perf_impl)(T, chunk, begin, end, LD_F16);
    else if (T->y_fused && dt == ACL_BF16)
        RK(perf_impl)(T, chunk, begin, end, LD_BF16);
    else
        RK(perf_impl)(T, chunk, begin, end, LD_F32);
    if (T->y_stream) /* the non-temporal stores reach memory before the chunk counts done */
        RK(st_fence)();
}

#undef RK_PV
