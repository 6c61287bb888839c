/*
 * The row kernel of aclnnLayerNorm, included by layer_norm.c once per x86-64 level it carries
 * (x86-64-v4, x86-64-v3, and the build's own baseline), each time under that level's
 * `#pragma GCC target` and with RK_SFX naming the copy: rows_body_<RK_SFX>.
 *
 * Native-width vectors (row_vectors.h: 16 floats on x86-64-v4, 8 on v3, 4 on the baseline);
 * contiguous FLOAT16/BF16 input rows are converted in registers by every pass that reads them,
 * and a contiguous out of input's dtype is converted as it is stored: no conversion buffers.
 * Each pass over a group of rows: the lane sums (pass 1, from memory, prefetched ahead), the
 * lane sums of squared deviations (pass 2, from cache), out (pass 3, from cache).
 *
 * The arithmetic is layer_norm.c's description, lane for lane: a tile's LANES accumulators
 * start from zero, take the tile's elements in order (vector j holds lanes [j*W, j*W + W));
 * a row's last tile's tail (its last n % LANES elements) continues lanes 0, 1, ... as a
 * zero-padded vector; the tile's sums are then added to the row's lane totals, tiles in row
 * order. So every copy, and every layout (the gathered path reads float rows from a buffer),
 * gives the same bits (tests/test_kernel_clones.py).
 *
 * Included by row_levels.h (ROWS_HEADER). Expects from the includer: LANES, TILE, GROUP,
 * CHAINS, STAT_ROWS, PF_BYTES, ln_task, lane_total, store_stats and row_vectors.h's first part
 * (the LD_* kinds, ld1, st1). No include guard: every inclusion is one more copy.
 */

#include "row_vectors.h" /* RK(), RK_W, VF, VU, RK(ld), RK(st): this copy's */
#define RK_NV (LANES / RK_W) /* vectors per LANES accumulators */

/* KC (<= CHAINS) tiles of the same length n side by side (each tile's lane sum is one
 * dependency chain per lane: one tile at a time would leave the vector unit waiting on the
 * adds' latency): tot[row[k]] += the lane sums of p[k][i] (sq: of (p[k][i] - mk[k])^2) over
 * i < n, folded in k order. p: elements of the kind's dtype. */
INLINE void RK(chains)(const void *const *p, const int *row, int64_t n, const float *mk,
                       VF (*tot)[RK_NV], const int kind, const int KC, const bool sq)
{
    VF acc[CHAINS][RK_NV];
    for (int k = 0; k < KC; k++)
        for (int j = 0; j < RK_NV; j++)
            acc[k][j] = (VF){0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int k = 0; k < KC; k++) {
            for (int j = 0; j < RK_NV; j++) {
                VF v = RK(ld)(p[k], i + j * RK_W, kind);
                if (sq) {
                    v -= mk[k];
                    v *= v;
                }
                acc[k][j] += v;
            }
        }
    }
    for (int k = 0; k < KC; k++) {
        float t[LANES] = {0}; /* the tail, zero-padded: acc + 0 is acc (acc is never -0) */
        for (int l = 0; i + l < n; l++) {
            float v = ld1(p[k], i + l, kind);
            if (sq) {
                v -= mk[k];
                v *= v;
            }
            t[l] = v;
        }
        for (int j = 0; j < RK_NV; j++)
            tot[row[k]][j] = tot[row[k]][j] + (acc[k][j] + RK(ld)(t, j * RK_W, LD_F32));
    }
}

INLINE void RK(run_chains)(const void *const *p, const int *row, int K, int64_t n,
                           const float *mk, VF (*tot)[RK_NV], const int kind, const bool sq)
{
    switch (K) { /* CHAINS == 4 */
    case 4: RK(chains)(p, row, n, mk, tot, kind, 4, sq); break;
    case 3: RK(chains)(p, row, n, mk, tot, kind, 3, sq); break;
    case 2: RK(chains)(p, row, n, mk, tot, kind, 2, sq); break;
    case 1: RK(chains)(p, row, n, mk, tot, kind, 1, sq); break;
    default: break;
    }
}

/* One pass of lane sums over the R rows xr (elements of the kind's dtype), into tot[r] (from
 * zero): their full tiles, then their last, shorter ones, CHAINS at a time, tile-major (when
 * the pass ends, every row's last tiles are in L1 for the next one); each row's tiles fold in
 * row order. Pass 1 (!sq) reads from memory: it prefetches PF_BYTES ahead (into the next rows
 * when N is small), and converts rows not read in place (gather) into xbuf tile by tile just
 * before summing them, while they are in L1. */
INLINE void RK(sums_pass)(const ln_task *T, int64_t m, int R, const void *const *xr,
                          float *xbuf, const float *mean, VF (*tot)[RK_NV], const int kind,
                          const bool sq)
{
    const tdesc *x = &T->p.t[T_X];
    const int64_t N = T->p.N, full = N / TILE * TILE;
    const int64_t es = kind == LD_F32 ? 4 : 2;
    const bool gather = !sq && T->x_gather;
    const void *p[CHAINS];
    float mk[CHAINS];
    int row[CHAINS], K = 0;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < RK_NV; j++)
            tot[r][j] = (VF){0};
    for (int part = 0; part < 2; part++) {
        const int64_t n = part == 0 ? TILE : N - full;
        const int64_t c0 = part == 0 ? 0 : full, c1 = part == 0 ? full : N;
        for (int64_t c = c0; n > 0 && c < c1; c += n) {
            for (int r = 0; r < R; r++) {
                const char *t = (const char *)xr[r] + c * es;
                if (gather)
                    get_tile(row_base(x, m + r), x->dtype, &x->inner, c, n, xbuf + r * N + c);
                else if (!sq)
                    for (int64_t b = 0; b < n * es; b += 64)
                        __builtin_prefetch(t + PF_BYTES + b);
                p[K] = t;
                row[K] = r;
                mk[K] = sq ? mean[r] : 0.0f;
                if (++K == CHAINS) {
                    RK(run_chains)(p, row, K, n, mk, tot, kind, sq);
                    K = 0;
                }
            }
        }
        RK(run_chains)(p, row, K, n, mk, tot, kind, sq);
        K = 0;
    }
}

/* sums_pass for a run-time kind and pass, out of line: one copy of each (kind, pass), not one
 * per caller's specialization (that multiplied the compile time by ten). */
static __attribute__((noinline)) void RK(sums)(const ln_task *T, int64_t m, int R,
                                               const void *const *xr, float *xbuf,
                                               const float *mean, VF (*tot)[RK_NV],
                                               const int kind, const bool sq)
{
    if (kind == LD_F16 && sq)
        RK(sums_pass)(T, m, R, xr, xbuf, mean, tot, LD_F16, true);
    else if (kind == LD_F16)
        RK(sums_pass)(T, m, R, xr, xbuf, mean, tot, LD_F16, false);
    else if (kind == LD_BF16 && sq)
        RK(sums_pass)(T, m, R, xr, xbuf, mean, tot, LD_BF16, true);
    else if (kind == LD_BF16)
        RK(sums_pass)(T, m, R, xr, xbuf, mean, tot, LD_BF16, false);
    else if (sq)
        RK(sums_pass)(T, m, R, xr, xbuf, mean, tot, LD_F32, true);
    else
        RK(sums_pass)(T, m, R, xr, xbuf, mean, tot, LD_F32, false);
}

/* y[i] = (x[i] - mean) * rstd * w[i] + b[i] for i < n: x of the kind's dtype, y of okind's
 * (ties: away for BF16; nt: non-temporal, y aligned to the vector's bytes). */
INLINE void RK(normalize)(const void *restrict x, const int kind, int64_t n, float mean,
                          float rstd, const float *restrict w, const float *restrict b,
                          void *restrict y, const int okind, uint32_t away, const bool nt,
                          const bool hw, const bool hb)
{
    int64_t i = 0;
    for (; i + RK_W <= n; i += RK_W) {
        VF v = (RK(ld)(x, i, kind) - mean) * rstd;
        if (hw)
            v *= RK(ld)(w, i, LD_F32);
        if (hb)
            v += RK(ld)(b, i, LD_F32);
        RK(st)(y, i, v, okind, away, nt);
    }
    for (; i < n; i++) {
        float v = (ld1(x, i, kind) - mean) * rstd;
        if (hw)
            v *= w[i];
        if (hb)
            v += b[i];
        st1(y, i, v, okind, away);
    }
}

/* Rows [m, m + R): statistics into mean[r]/rstd[r], out rows written. kind: how input rows
 * are read (LD_F16/LD_BF16 in place; LD_F32 in place or, gathered, from xbuf); okind: the
 * dtype out is stored in by the kernel itself (fused: out contiguous, of input's dtype, or
 * FLOAT from FLOAT), else LD_F32 tiles through put_tile. */
INLINE void RK(group_rows)(const ln_task *T, int64_t m, int R, float *xbuf, float *mean,
                           float *rstd, const int kind, const int okind, const bool hw,
                           const bool hb)
{
    const ln_payload *P = &T->p;
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y];
    const int64_t N = P->N;
    const int64_t es = kind == LD_F32 ? 4 : 2, oes = okind == LD_F32 ? 4 : 2;
    const void *xr[GROUP];
    for (int r = 0; r < R; r++)
        xr[r] = T->x_gather ? (const void *)(xbuf + r * N) : (const void *)row_base(x, m + r);
    VF tot[GROUP][RK_NV];
    float lanes[LANES];
    RK(sums)(T, m, R, xr, xbuf, NULL, tot, kind, false);
    for (int r = 0; r < R; r++) {
        memcpy(lanes, tot[r], sizeof lanes);
        mean[r] = lane_total(lanes) / (float)N;
    }
    RK(sums)(T, m, R, xr, xbuf, mean, tot, kind, true);
    for (int r = 0; r < R; r++) {
        memcpy(lanes, tot[r], sizeof lanes);
        rstd[r] = 1.0f / sqrtf(lane_total(lanes) / (float)N + P->eps);
    }
    /* out a tile at a time, last tile first (those the sums left in L1), the group's rows
     * under one weight/bias tile (read from L2 once per group, not per row) */
    const uint32_t away = P->y_ties == ACLEMU_TIES_AWAY;
    float yblk[TILE];
    char *ry[GROUP];
    for (int r = 0; r < R; r++)
        ry[r] = row_base(y, m + r);
    for (int64_t c = (N - 1) / TILE * TILE; c >= 0; c -= TILE) {
        const int64_t n = N - c < TILE ? N - c : TILE;
        const float *wt = hw ? T->w + c : NULL, *bt = hb ? T->b + c : NULL;
        for (int r = 0; r < R; r++) {
            const char *xt = (const char *)xr[r] + c * es;
            if (!T->y_fused) {
                RK(normalize)(xt, kind, n, mean[r], rstd[r], wt, bt, yblk, LD_F32,
                              0, false, hw, hb);
                if (P->y_round) /* computed in input's dtype, then cast */
                    aclemu_round_floats(x->dtype, P->ties, yblk, n);
                put_tile(ry[r], y->dtype, P->y_ties, &y->inner, c, n, yblk);
                continue;
            }
            char *yt = ry[r] + c * oes;
            if (T->y_stream && ((uintptr_t)yt & (RK_W * oes - 1)) == 0)
                RK(normalize)(xt, kind, n, mean[r], rstd[r], wt, bt, yt, okind,
                              away, true, hw, hb);
            else
                RK(normalize)(xt, kind, n, mean[r], rstd[r], wt, bt, yt, okind,
                              away, false, hw, hb);
        }
    }
}

INLINE void RK(rows_impl)(const ln_task *T, int64_t chunk, int64_t begin, int64_t end,
                          const int kind, const int okind)
{
    const ln_payload *P = &T->p;
    const bool hw = T->w != NULL, hb = T->b != NULL;
    float *xbuf = T->row_buf ? T->row_buf + chunk * T->per_chunk : NULL;
    float smean[STAT_ROWS], srstd[STAT_ROWS];
    for (int64_t s0 = begin; s0 < end; s0 += STAT_ROWS) {
        const int64_t cnt = end - s0 < STAT_ROWS ? end - s0 : STAT_ROWS;
        for (int64_t j = 0; j < cnt; j += GROUP) {
            const int R = (int)(cnt - j < GROUP ? cnt - j : GROUP);
            RK(group_rows)(T, s0 + j, R, xbuf, smean + j, srstd + j, kind, okind, hw, hb);
        }
        store_stats(P, s0, cnt, smean, srstd);
    }
}

/* ---- LayerNormV4's single_read template (Atlas A2/A3; layer_norm.c pick_template) --------- */

#define RK_SR_REPS 16 /* repeats a row sum folds at once (fold_repeats' count) */

/* A row sum's term: sq false, v * coef (the kernel's Muls); sq true, ((v + neg_mean)^2) *
 * coef (Adds, Mul, Muls). Every operation with two operands that may both be NaN is
 * row_vectors.h's ordered one (coef is a finite constant, a square's operands the same). */
INLINE VF RK(sr_term)(VF v, VF coef, VF neg_mean, const bool sq)
{
    if (sq) {
        v = RK(add)(v, neg_mean);
        v = v * v;
    }
    return v * coef;
}

/* The first level of a repeat's tree over the 2W elements at x + i: lane l is the term of
 * x[i + 2l] plus the term of x[i + 2l + 1]. BF16 rows in place: one load, the even elements
 * the low halves of its 32-bit lanes and the odd ones the high halves, so the level needs no
 * shuffle; float rows: two vectors and pair_level. */
INLINE VF RK(sr_level1)(const void *restrict x, int64_t i, const int kind, VF coef,
                        VF neg_mean, const bool sq)
{
    if (kind == LD_BF16) {
        VU u;
        memcpy(&u, (const uint16_t *)x + i, sizeof u);
        return RK(add)(RK(sr_term)((VF)(u << 16), coef, neg_mean, sq),
                       RK(sr_term)((VF)(u & 0xffff0000u), coef, neg_mean, sq));
    }
    return RK(pair_level)(RK(sr_term)(RK(ld)(x, i, kind), coef, neg_mean, sq),
                          RK(sr_term)(RK(ld)(x, i + RK_W, kind), coef, neg_mean, sq));
}

/* The count-form ReduceSum (norm_rows.h nr_reduce_sum_count) of a row's terms (sr_term), the
 * repeats' trees a level at a time (row_vectors.h), their results added in order from +0.
 * x: N elements of the kind's dtype, N a whole number of repeats. */
INLINE float RK(sr_sum)(const void *restrict x, const int kind, int64_t N, float coef,
                        float neg_mean, const bool sq)
{
    const VF vcoef = RK(splat)(coef), vneg = RK(splat)(neg_mean);
    const int64_t es = kind == LD_F32 ? 4 : 2;
    float acc = 0.0f;
    for (int64_t c = 0; c < N; c += RK_SR_REPS * NR_VECTOR_LANES) {
        VF rep[RK_SR_REPS];
        int nrep = 0;
        for (; nrep < RK_SR_REPS && c + nrep * NR_VECTOR_LANES < N; nrep++) {
            const int64_t at = c + nrep * NR_VECTOR_LANES;
            if (!sq) /* the first pass reads from memory: PF_BYTES ahead (into the next row) */
                for (int64_t o = 0; o < NR_VECTOR_LANES * es; o += 64)
                    __builtin_prefetch((const char *)x + at * es + o + PF_BYTES);
            VF t[RK_REP_NV / 2];
            for (int j = 0; j < RK_REP_NV / 2; j++)
                t[j] = RK(sr_level1)(x, at + j * 2 * RK_W, kind, vcoef, vneg, sq);
            for (int n = RK_REP_NV / 2; n > 1; n /= 2)
                for (int j = 0; j < n / 2; j++)
                    t[j] = RK(pair_level)(t[2 * j], t[2 * j + 1]);
            rep[nrep] = t[0];
        }
        for (int k = nrep; k < RK_SR_REPS; k++)
            rep[k] = (VF){0};
        float tot[RK_SR_REPS];
        RK(fold_repeats)(rep, RK_SR_REPS, tot);
        for (int k = 0; k < nrep; k++)
            acc = RK(add1)(acc, tot[k]);
    }
    return acc;
}

/* y[i] = (x[i] + neg_mean) * rstd, times w[i], plus b[i], for i < n (a multiple of RK_W),
 * as floats: the kernel's Adds (an add of the negated mean, whose NaN has the other sign than
 * a subtraction's), Muls, Mul, Add. */
INLINE void RK(sr_out)(const void *restrict x, const int kind, int64_t n, float neg_mean,
                       float rstd, const float *restrict w, const float *restrict b,
                       float *restrict y)
{
    const VF vneg = RK(splat)(neg_mean), vrstd = RK(splat)(rstd);
    for (int64_t i = 0; i < n; i += RK_W) {
        VF v = RK(mul)(RK(add)(RK(ld)(x, i, kind), vneg), vrstd);
        if (w)
            v = RK(mul)(v, RK(ld)(w, i, LD_F32));
        if (b)
            v = RK(add)(v, RK(ld)(b, i, LD_F32));
        RK(st)(y, i, v, LD_F32, 0, false);
    }
}

/* Each lane of v rounded to BF16 (half.h's aclemu_f32_to_bf16_ties; a NaN keeps its sign and
 * upper payload, quiet bit set), in the upper half of its 32-bit lane: up is 1 in every lane
 * for ties away from zero, else 0; even is 0 then, else 1 (ties to even). */
INLINE VU RK(bf16_upper)(VF v, VU up, VU even)
{
    const VU u = (VU)v;
    const VU r = u + 0x7fffu + (up | ((u >> 16) & even));
    const VU nan = (VU)(v != v);
    return (nan & (u | 0x00400000u)) | (~nan & r);
}

/* sr_out for BF16 x and y, both contiguous, 2W elements at a time: the even elements from the
 * low halves of a load's 32-bit lanes and the odd ones from the high halves, the results
 * put back the same way, so the row needs no conversion shuffle; w2/b2 (or NULL): the
 * weight/bias in the same order (sr_split). n: a multiple of 2W. */
INLINE void RK(sr_out_bf16)(const uint16_t *restrict x, int64_t n, float neg_mean, float rstd,
                            const float *restrict w2, const float *restrict b2,
                            uint16_t *restrict y, uint32_t away, const bool nt)
{
    const VF vneg = RK(splat)(neg_mean), vrstd = RK(splat)(rstd);
    const VU up = (VU){0} + (away ? 1u : 0u), even = (VU){0} + (away ? 0u : 1u);
    for (int64_t i = 0; i < n; i += 2 * RK_W) {
        VU u;
        memcpy(&u, x + i, sizeof u);
        VF e = RK(mul)(RK(add)((VF)(u << 16), vneg), vrstd);
        VF o = RK(mul)(RK(add)((VF)(u & 0xffff0000u), vneg), vrstd);
        if (w2) {
            e = RK(mul)(e, RK(ld)(w2, i, LD_F32));
            o = RK(mul)(o, RK(ld)(w2, i + RK_W, LD_F32));
        }
        if (b2) {
            e = RK(add)(e, RK(ld)(b2, i, LD_F32));
            o = RK(add)(o, RK(ld)(b2, i + RK_W, LD_F32));
        }
        const VU r = (RK(bf16_upper)(o, up, even) & 0xffff0000u) |
                     (RK(bf16_upper)(e, up, even) >> 16);
#if RK_W == 16
        if (nt) {
            _mm512_stream_si512((void *)(y + i), (__m512i)r);
            continue;
        }
#elif RK_W == 8
        if (nt) {
            _mm256_stream_si256((__m256i *)(y + i), (__m256i)r);
            continue;
        }
#endif
        memcpy(y + i, &r, sizeof r);
    }
}

/* v[0..n) (n a multiple of 2W) into sr_out_bf16's order: each 2W elements' even ones, then
 * their odd ones. */
INLINE void RK(sr_split)(const float *restrict v, int64_t n, float *restrict out)
{
    for (int64_t i = 0; i < n; i += 2 * RK_W)
        for (int l = 0; l < RK_W; l++) {
            out[i + l] = v[i + 2 * l];
            out[i + RK_W + l] = v[i + 2 * l + 1];
        }
}

/* Rows [begin, end) by op_kernel/layer_norm_v4_single_read.h, every step one float rounding
 * (docs/emulator.md): mean = ReduceSum(x * coef), var = ReduceSum(((x - mean)^2) * coef),
 * rstd = 1 / sqrt(var + eps), out = (x - mean) * rstd * w + b, the subtraction an add of
 * the negated mean (Adds). kind: how input rows are read (BF16 in place, or float rows
 * gathered into xbuf); okind LD_BF16: out contiguous BF16, stored by sr_out_bf16 (the only
 * fused case: a gathered input's out is never fused), else float tiles rounded to input's
 * dtype as the kernel does (y_round) and stored by put_tile. */
INLINE void RK(single_read_impl)(const ln_task *T, int64_t chunk, int64_t begin, int64_t end,
                                 const int kind, const int okind)
{
    const ln_payload *P = &T->p;
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y];
    const int64_t N = P->N;
    const int64_t es = kind == LD_F32 ? 4 : 2;
    const float coef = P->coefficient;
    const uint32_t away = P->y_ties == ACLEMU_TIES_AWAY;
    float *xbuf = T->row_buf ? T->row_buf + chunk * T->per_chunk : NULL;
    float smean[STAT_ROWS], srstd[STAT_ROWS], yblk[TILE];
    /* BF16 in and out in place: weight and bias in sr_out_bf16's order (N <= SR_MAX_N) */
    const bool split = kind == LD_BF16 && okind == LD_BF16;
    float w2[split ? SR_MAX_N : 1], b2[split ? SR_MAX_N : 1];
    if (split && T->w)
        RK(sr_split)(T->w, N, w2);
    if (split && T->b)
        RK(sr_split)(T->b, N, b2);
    for (int64_t s0 = begin; s0 < end; s0 += STAT_ROWS) {
        const int64_t cnt = end - s0 < STAT_ROWS ? end - s0 : STAT_ROWS;
        for (int64_t j = 0; j < cnt; j++) {
            const int64_t m = s0 + j;
            const void *xr = T->x_gather
                                 ? (const void *)get_tile(row_base(x, m), x->dtype, &x->inner, 0,
                                                          N, xbuf)
                                 : (const void *)row_base(x, m);
            const float mean = RK(sr_sum)(xr, kind, N, coef, 0.0f, false);
            const float neg_mean = -mean;
            const float var = RK(sr_sum)(xr, kind, N, coef, neg_mean, true);
            const float rstd = 1.0f / sqrtf(var + P->eps);
            char *ry = row_base(y, m);
            if (split) { /* weight/bias presence and the stores as constants in each loop */
                const bool nt = T->y_stream && ((uintptr_t)ry & (2 * RK_W * 2 - 1)) == 0;
                const float *w = T->w ? w2 : NULL, *b = T->b ? b2 : NULL;
                uint16_t *yo = (uint16_t *)ry;
                if (w && b && nt)
                    RK(sr_out_bf16)(xr, N, neg_mean, rstd, w2, b2, yo, away, true);
                else if (w && b)
                    RK(sr_out_bf16)(xr, N, neg_mean, rstd, w2, b2, yo, away, false);
                else if (b && nt)
                    RK(sr_out_bf16)(xr, N, neg_mean, rstd, NULL, b2, yo, away, true);
                else if (b)
                    RK(sr_out_bf16)(xr, N, neg_mean, rstd, NULL, b2, yo, away, false);
                else /* no bias: the emulator's zero_bias always gives one here */
                    RK(sr_out_bf16)(xr, N, neg_mean, rstd, w, NULL, yo, away, nt);
            }
            for (int64_t c = 0; !split && c < N; c += TILE) { /* out through float tiles */
                const int64_t n = N - c < TILE ? N - c : TILE;
                RK(sr_out)((const char *)xr + c * es, kind, n, neg_mean, rstd,
                           T->w ? T->w + c : NULL, T->b ? T->b + c : NULL, yblk);
                if (P->y_round) /* made in input's dtype, then cast */
                    aclemu_round_floats(x->dtype, P->ties, yblk, n);
                put_tile(ry, y->dtype, P->y_ties, &y->inner, c, n, yblk);
            }
            smean[j] = mean;
            srstd[j] = rstd;
        }
        store_stats(P, s0, cnt, smean, srstd);
    }
}

/* The template's rows: BF16 input in place with out stored in BF16 or through float tiles,
 * or gathered float rows (strided input). */
INLINE void RK(single_read_rows)(const ln_task *T, int64_t chunk, int64_t begin, int64_t end)
{
    if (T->kind == LD_BF16 && T->y_fused)
        RK(single_read_impl)(T, chunk, begin, end, LD_BF16, LD_BF16);
    else if (T->kind == LD_BF16)
        RK(single_read_impl)(T, chunk, begin, end, LD_BF16, LD_F32);
    else
        RK(single_read_impl)(T, chunk, begin, end, LD_F32, LD_F32);
}

/* The specializations: input read as FLOAT16/BF16 in place with out stored by the kernel in
 * the same dtype or through float tiles, or float rows with FLOAT out (the gathered inputs of
 * every dtype go this way too, out through float tiles unless it is FLOAT and contiguous).
 * weight/bias presence is a run-time test in the out loop (gcc unswitches it). */
static void RK(rows_body)(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const ln_task *T = ctx;
    if (T->p.single_read)
        RK(single_read_rows)(T, chunk, begin, end);
    else if (T->kind == LD_F16 && T->y_fused)
        RK(rows_impl)(T, chunk, begin, end, LD_F16, LD_F16);
    else if (T->kind == LD_F16)
        RK(rows_impl)(T, chunk, begin, end, LD_F16, LD_F32);
    else if (T->kind == LD_BF16 && T->y_fused)
        RK(rows_impl)(T, chunk, begin, end, LD_BF16, LD_BF16);
    else if (T->kind == LD_BF16)
        RK(rows_impl)(T, chunk, begin, end, LD_BF16, LD_F32);
    else
        RK(rows_impl)(T, chunk, begin, end, LD_F32, LD_F32);
    if (T->y_stream) /* the non-temporal stores reach memory before the chunk counts done */
        RK(st_fence)();
}

#undef RK_NV
#undef RK_SR_REPS
