/*
 * The row kernel of aclnnLayerNormBackward, included by layer_norm_backward.c once per x86-64
 * level it carries (x86-64-v4, x86-64-v3, and the build's own baseline), each time under that
 * level's `#pragma GCC target` and with RK_SFX naming the copy: rows_body_<RK_SFX>.
 *
 * Written with native-width vectors (GCC vector extensions: 16 floats on x86-64-v4, 8 on v3,
 * 4 on the baseline), so FLOAT16 and BF16 gradOut/input/gradInput are converted in registers
 * as they are loaded and stored (row_vectors.h): one pass over the data per phase, no
 * conversion buffers.
 *
 * The arithmetic is the scalar kernel's, lane for lane: LANES accumulators per row sum, folded
 * after every TILE columns; a vector of W lanes holds accumulators [j*W, j*W + W). A row's
 * tail (its last n % LANES columns) is done per element on the lanes it continues, so every
 * copy gives the same bits, and the same as the gathered path (strided views, dtype mixes),
 * which loads and stores through convert.h into float tiles.
 *
 * Included by row_levels.h (ROWS_HEADER). Expects from the includer: LANES, TILE, STAT_ROWS,
 * PF_BYTES, lnb_task, lane_sum, stats_at, round_grad_input and row_vectors.h's first part
 * (the LD_* kinds, ld1, st1). No include guard: every inclusion is one more copy.
 */

#include "row_vectors.h" /* RK(), RK_W, VF, VU, RK(ld), RK(st): this copy's */
#define RK_NV (LANES / RK_W) /* vectors per LANES accumulators */

/* Pass 1 over one tile (see pass 1 of the scalar description in layer_norm_backward.c): lane
 * sums of g = dy*w and g*x_hat into sg/sgx, partials pw += dy*x_hat, pb += dy. */
INLINE void RK(pass1)(const void *restrict dy, const void *restrict x, const int kind,
                      const float *restrict w, float mean, float rstd, int64_t n,
                      VF *restrict sg, VF *restrict sgx, float *restrict pw,
                      float *restrict pb, const bool sums, const bool parts)
{
    VF ag[RK_NV], agx[RK_NV];
    for (int j = 0; j < RK_NV; j++)
        ag[j] = agx[j] = (VF){0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < RK_NV; j++) {
            const int64_t o = i + j * RK_W;
            VF d = RK(ld)(dy, o, kind);
            VF xh = (RK(ld)(x, o, kind) - mean) * rstd;
            if (sums) {
                VF g = d * RK(ld)(w, o, LD_F32);
                ag[j] += g;
                agx[j] += g * xh;
            }
            if (parts) {
                RK(st)(pw, o, RK(ld)(pw, o, LD_F32) + d * xh, LD_F32, 0, false);
                RK(st)(pb, o, RK(ld)(pb, o, LD_F32) + d, LD_F32, 0, false);
            }
        }
    }
    if (sums) {
        for (int j = 0; j < RK_NV; j++) {
            sg[j] += ag[j];
            sgx[j] += agx[j];
        }
    }
    for (int l = 0; i + l < n; l++) { /* the row's tail continues lanes 0, 1, ... */
        float d = ld1(dy, i + l, kind);
        float xh = (ld1(x, i + l, kind) - mean) * rstd;
        if (sums) {
            float g = d * w[i + l];
            sg[l / RK_W][l % RK_W] += g;
            sgx[l / RK_W][l % RK_W] += g * xh;
        }
        if (parts) {
            pw[i + l] += d * xh;
            pb[i + l] += d;
        }
    }
}

/* gradInput for one tile, stored as okind (ties: away for BF16). */
INLINE void RK(pass2)(const void *restrict dy, const void *restrict x, const int kind,
                      const float *restrict w, float mean, float rstd, float mg, float mgx,
                      int64_t n, void *restrict dx, const int okind, uint32_t away,
                      const bool nt)
{
    int64_t i = 0;
    for (; i + RK_W <= n; i += RK_W) {
        VF xh = (RK(ld)(x, i, kind) - mean) * rstd;
        VF g = RK(ld)(dy, i, kind) * RK(ld)(w, i, LD_F32);
        RK(st)(dx, i, rstd * ((g - mg) - xh * mgx), okind, away, nt);
    }
    for (; i < n; i++) {
        float xh = (ld1(x, i, kind) - mean) * rstd;
        float g = ld1(dy, i, kind) * w[i];
        st1(dx, i, rstd * ((g - mg) - xh * mgx), okind, away);
    }
}

/* The row loop, specialized (compile-time constants) on: kind, how gradOut/input are read
 * (LD_F16/LD_BF16: contiguous 16-bit rows converted in registers; LD_F32: contiguous FLOAT in
 * place, anything else converted tile by tile into float buffers by get_tile); dx_fused:
 * gradInput is contiguous, of input's dtype, stored by pass 2 itself (else pass 2 writes a
 * float tile, rounded to input's dtype if gradInput's dtype differs, then stored by put_tile);
 * sums: gradInput requested; parts: gradWeight/gradBias partials. */
INLINE void RK(rows_impl)(const lnb_task *T, int64_t chunk, int64_t begin, int64_t end,
                          const int kind, const bool dx_fused, const bool sums,
                          const bool parts)
{
    const lnb_payload *P = &T->p;
    const tdesc *dy = &P->t[T_DY], *x = &P->t[T_X], *dx = &P->t[T_DX];
    const int64_t N = P->N;
    const int64_t es = kind == LD_F32 ? 4 : 2; /* bytes per element of an in-place row */
    const uint32_t away = P->dx_ties == ACLEMU_TIES_AWAY;
    const float *w = T->w;
    float *pw = NULL, *pb = NULL;
    if (parts) {
        pw = T->ws + chunk * 2 * N;
        pb = pw + N;
        memset(pw, 0, (size_t)N * 2 * sizeof(float));
    }
    float bdy[TILE], bx[TILE], bdx[TILE];
    float bmean[STAT_ROWS], brstd[STAT_ROWS];
    const float *smean = bmean, *srstd = brstd;
    for (int64_t m = begin; m < end; m++) {
        const int64_t k = (m - begin) % STAT_ROWS;
        if (k == 0) {
            int64_t cnt = end - m < STAT_ROWS ? end - m : STAT_ROWS;
            smean = stats_at(&P->t[T_MEAN], m, cnt, bmean);
            srstd = stats_at(&P->t[T_RSTD], m, cnt, brstd);
        }
        const float mean = smean[k], rstd = srstd[k];
        const char *rdy = row_base(dy, m), *rx = row_base(x, m);
        VF sg[RK_NV], sgx[RK_NV];
        for (int j = 0; j < RK_NV; j++)
            sg[j] = sgx[j] = (VF){0};
        for (int64_t c = 0; c < N; c += TILE) {
            int64_t n = N - c < TILE ? N - c : TILE;
            const void *tdy, *tx;
            if (kind == LD_F32) {
                tdy = get_tile(rdy, dy->dtype, &dy->inner, c, n, bdy);
                tx = get_tile(rx, x->dtype, &x->inner, c, n, bx);
            } else {
                tdy = rdy + c * es;
                tx = rx + c * es;
            }
            /* the streams from memory, PF_BYTES ahead (into the next rows when rows follow
             * each other, as they do unless the batch dims are strided; a prefetch never
             * faults); pass 2 then reads the row from cache */
            for (int64_t b = 0; b < n * es; b += 64) {
                __builtin_prefetch((const char *)tdy + PF_BYTES + b);
                __builtin_prefetch((const char *)tx + PF_BYTES + b);
            }
            RK(pass1)(tdy, tx, kind, sums ? w + c : NULL, mean, rstd, n, sg, sgx,
                      parts ? pw + c : NULL, parts ? pb + c : NULL, sums, parts);
        }
        if (!sums)
            continue;
        float lanes[LANES];
        memcpy(lanes, sg, sizeof lanes);
        const float mg = lane_sum(lanes) / (float)N;
        memcpy(lanes, sgx, sizeof lanes);
        const float mgx = lane_sum(lanes) / (float)N;
        char *rdx = (char *)row_base(dx, m);
        for (int64_t c = 0; c < N; c += TILE) {
            int64_t n = N - c < TILE ? N - c : TILE;
            const void *tdy, *tx;
            if (kind == LD_F32) {
                tdy = get_tile(rdy, dy->dtype, &dy->inner, c, n, bdy);
                tx = get_tile(rx, x->dtype, &x->inner, c, n, bx);
            } else {
                tdy = rdy + c * es;
                tx = rx + c * es;
            }
            char *o = rdx + c * es;
            if (dx_fused && T->dx_stream && ((uintptr_t)o & (RK_W * es - 1)) == 0) {
                RK(pass2)(tdy, tx, kind, w + c, mean, rstd, mg, mgx, n, o, kind, away, true);
            } else if (dx_fused) {
                RK(pass2)(tdy, tx, kind, w + c, mean, rstd, mg, mgx, n, o, kind, away, false);
            } else {
                RK(pass2)(tdy, tx, kind, w + c, mean, rstd, mg, mgx, n, bdx, LD_F32, 0, false);
                if (P->dx_round)
                    round_grad_input(bdx, n, x->dtype, P->bf16_away);
                put_tile(rdx, dx->dtype, P->dx_ties, &dx->inner, c, n, bdx);
            }
        }
    }
}

#define RK_OUTS(kind)                                                                      \
    do {                                                                                   \
        if (sums && parts && fused)                                                        \
            RK(rows_impl)(T, chunk, begin, end, kind, true, true, true);                   \
        else if (sums && parts)                                                            \
            RK(rows_impl)(T, chunk, begin, end, kind, false, true, true);                  \
        else if (sums && fused)                                                            \
            RK(rows_impl)(T, chunk, begin, end, kind, true, true, false);                  \
        else if (sums)                                                                     \
            RK(rows_impl)(T, chunk, begin, end, kind, false, true, false);                 \
        else                                                                               \
            RK(rows_impl)(T, chunk, begin, end, kind, false, false, true);                 \
    } while (0)

static void RK(rows_body)(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const lnb_task *T = ctx;
    const bool sums = T->p.mask[0], parts = T->p.parts;
    const int kind = T->kind;
    const bool fused = sums && T->dx_fused;
    if (kind == LD_F16)
        RK_OUTS(LD_F16);
    else if (kind == LD_BF16)
        RK_OUTS(LD_BF16);
    else
        RK_OUTS(LD_F32);
    if (T->dx_stream) /* the non-temporal stores reach memory before the chunk counts done */
        RK(st_fence)();
}

#undef RK_OUTS
#undef RK_NV
