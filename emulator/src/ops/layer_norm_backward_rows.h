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
 * The arithmetic is the device's (layer_norm_backward.c, lnb_tiling), lane for lane: a row
 * sum is either the counter-mode ReduceSum's (the tree over each repeat of REPEAT columns,
 * the repeats' sums added in order) or 64 lane accumulators folded once by the same tree;
 * the tree is evaluated level by level with vector shuffles (row_vectors.h: pair_level,
 * reduce_repeat, fold_repeats), whatever the vector width, so every copy gives the same bits,
 * and the same as the gathered path (strided views, dtype mixes), which loads and stores
 * through convert.h into float tiles.
 *
 * Included by row_levels.h (ROWS_HEADER). Expects from the includer: REPEAT (NR_VECTOR_LANES),
 * TILE, STAT_ROWS,
 * PF_BYTES, lnb_task, stats_at, round_grad_input and row_vectors.h's first part (the LD_*
 * kinds, ld1, st1). No include guard: every inclusion is one more copy.
 */

#include "row_vectors.h" /* RK(), RK_W, VF, VU, RK(ld), RK(st): this copy's */
#define RK_NV (REPEAT / RK_W) /* vectors per repeat */

#define RK_TILE_REPS (TILE / REPEAT) /* repeats per tile */

/* Common's row padded to colAlignV, applied to its 64 lane accumulators: a row shorter than a
 * repeat never wrote the lanes past it, which hold +0 (keep clears them); otherwise each lane
 * a padding column (N up to colAlignV) falls on adds a +0, which changes a -0 only (addend +0
 * there, elsewhere -0, the identity of +). */
INLINE void RK(lane_padding)(int64_t N, int64_t col_align, VU *restrict keep,
                             VF *restrict addend)
{
    const VU ones = (VU){0} - 1u, sign = (VU){0} + 0x80000000u;
    const int64_t len = col_align - N; /* padding columns, when N >= REPEAT */
    VU lane;
    for (int l = 0; l < RK_W; l++)
        lane[l] = (uint32_t)l;
    for (int j = 0; j < RK_NV; j++, lane += (uint32_t)RK_W) {
        if (N < REPEAT) {
            keep[j] = (VU)(lane < (VU){0} + (uint32_t)N);
            addend[j] = (VF)sign;
        } else {
            const VU from = (lane - (uint32_t)(N % REPEAT)) & (uint32_t)(REPEAT - 1);
            const VU hit = len >= REPEAT ? ones : (VU)(from < (VU){0} + (uint32_t)len);
            keep[j] = ones;
            addend[j] = (VF)(~hit & sign);
        }
    }
}

/* Pass 1 over one tile of n <= TILE columns starting on a repeat boundary: the row sums of
 * g = dy*w and g*x_hat, and the partials pw += dy*x_hat, pb += dy. lanes64: into the row's
 * 64 lane accumulators lg/lgx (Common's LastReduceSum); else each repeat's tree added in
 * order to the chunk's sums cg, cgx (nr_reduce_sum_count's order, the counter-mode
 * ReduceSum: a short last repeat padded with +0). */
INLINE void RK(pass1)(const void *restrict dy, const void *restrict x, const int kind,
                      const float *restrict w, float mean, float rstd, int64_t n,
                      const bool lanes64, VF *restrict lg, VF *restrict lgx,
                      float *restrict cg, float *restrict cgx, float *restrict pw,
                      float *restrict pb, const bool first, const bool sums,
                      const bool parts)
{
    VF rg[RK_TILE_REPS], rgx[RK_TILE_REPS]; /* the tile's repeats, reduce_repeat'ed */
    int nrep = 0;
    int64_t i = 0;
    for (; i + REPEAT <= n; i += REPEAT) {
        VF g[RK_NV], gx[RK_NV];
        for (int j = 0; j < RK_NV; j++) {
            const int64_t o = i + j * RK_W;
            VF d = RK(ld)(dy, o, kind);
            VF xh = (RK(ld)(x, o, kind) - mean) * rstd;
            if (sums) {
                g[j] = d * RK(ld)(w, o, LD_F32);
                gx[j] = g[j] * xh;
                if (lanes64) {
                    lg[j] += g[j];
                    lgx[j] += gx[j];
                }
            }
            if (parts) { /* a block's first row: +0 plus it (no zeroed buffer to read) */
                const VF pwo = first ? (VF){0} : RK(ld)(pw, o, LD_F32);
                const VF pbo = first ? (VF){0} : RK(ld)(pb, o, LD_F32);
                RK(st)(pw, o, pwo + d * xh, LD_F32, 0, false);
                RK(st)(pb, o, pbo + d, LD_F32, 0, false);
            }
        }
        if (sums && !lanes64) {
            rg[nrep] = RK(reduce_repeat)(g);
            rgx[nrep] = RK(reduce_repeat)(gx);
            nrep++;
        }
    }
    if (i < n) {
        VF g[RK_NV] = {0}, gx[RK_NV] = {0}; /* the short last repeat, +0 past the row */
        for (int l = 0; i + l < n; l++) {
            float d = ld1(dy, i + l, kind);
            float xh = (ld1(x, i + l, kind) - mean) * rstd;
            if (sums) {
                g[l / RK_W][l % RK_W] = d * w[i + l];
                gx[l / RK_W][l % RK_W] = g[l / RK_W][l % RK_W] * xh;
                if (lanes64) {
                    lg[l / RK_W][l % RK_W] += g[l / RK_W][l % RK_W];
                    lgx[l / RK_W][l % RK_W] += gx[l / RK_W][l % RK_W];
                }
            }
            if (parts) {
                pw[i + l] = (first ? 0.0f : pw[i + l]) + d * xh;
                pb[i + l] = (first ? 0.0f : pb[i + l]) + d;
            }
        }
        if (sums && !lanes64) {
            rg[nrep] = RK(reduce_repeat)(g);
            rgx[nrep] = RK(reduce_repeat)(gx);
            nrep++;
        }
    }
    if (sums && !lanes64 && nrep > 0) {
        for (int k = nrep; k < RK_TILE_REPS; k++)
            rg[k] = rgx[k] = (VF){0};
        float tg[RK_TILE_REPS], tgx[RK_TILE_REPS];
        RK(fold_repeats)(rg, RK_TILE_REPS, tg);
        RK(fold_repeats)(rgx, RK_TILE_REPS, tgx);
        for (int k = 0; k < nrep; k++) {
            *cg += tg[k];
            *cgx += tgx[k];
        }
    }
}

/* gradInput for one tile, stored as okind (ties: away for BF16): the kernels' Mul, Sub, Sub
 * (Workspace: Adds of the negated mean, the same bits) and Muls, mg and mgx being the means
 * of g and g*x_hat. down: the tile from its end (row_store_order), the same bits. */
INLINE void RK(pass2)(const void *restrict dy, const void *restrict x, const int kind,
                      const float *restrict w, float mean, float rstd, float mg, float mgx,
                      int64_t n, void *restrict dx, const int okind, uint32_t away,
                      const bool nt, const bool down)
{
    const int64_t nv = n / RK_W * RK_W; /* columns in whole vectors */
    for (int64_t k = 0; k < nv; k += RK_W) {
        const int64_t i = down ? nv - RK_W - k : k;
        VF xh = (RK(ld)(x, i, kind) - mean) * rstd;
        VF g = RK(ld)(dy, i, kind) * RK(ld)(w, i, LD_F32);
        RK(st)(dx, i, ((g - xh * mgx) - mg) * rstd, okind, away, nt);
    }
    for (int64_t i = nv; i < n; i++) {
        float xh = (ld1(x, i, kind) - mean) * rstd;
        float g = ld1(dy, i, kind) * w[i];
        st1(dx, i, ((g - xh * mgx) - mg) * rstd, okind, away);
    }
}

/* The row loop, specialized (compile-time constants) on: kind, how gradOut/input are read
 * (LD_F16/LD_BF16: contiguous 16-bit rows converted in registers; LD_F32: contiguous FLOAT in
 * place, anything else converted tile by tile into float buffers by get_tile); dx_fused:
 * gradInput is contiguous, of input's dtype, stored by pass 2 itself (else pass 2 writes a
 * float tile, rounded to input's dtype if gradInput's dtype differs, then stored by put_tile);
 * sums: gradInput requested; parts: gradWeight/gradBias partials. */
INLINE void RK(rows_impl)(const lnb_task *T, int64_t block, int64_t begin, int64_t end,
                          const int kind, const bool dx_fused, const bool sums,
                          const bool parts)
{
    const lnb_payload *P = &T->p;
    const tdesc *dy = &P->t[T_DY], *x = &P->t[T_X], *dx = &P->t[T_DX];
    const int64_t N = P->N;
    const int64_t es = kind == LD_F32 ? 4 : 2; /* bytes per element of an in-place row */
    const uint32_t away = P->dx_ties == ACLEMU_TIES_AWAY;
    const float *w = T->w;
    const lnb_tiling *tl = &P->tiling;
    const bool lanes64 = tl->lanes64;
    const int64_t chunk_cols = lanes64 ? N : tl->chunk_cols;
    const float coff = 1.0f / (float)N;
    float *pw = NULL, *pb = NULL;
    if (parts) {
        pw = lnb_block_parts((lnb_task *)T, block);
        pb = pw + N;
    }
    float bdy[TILE], bx[TILE], bdx[TILE];
    float bmean[STAT_ROWS], brstd[STAT_ROWS];
    VU pad_keep[RK_NV];
    VF pad_add[RK_NV];
    RK(lane_padding)(N, tl->col_align, pad_keep, pad_add); /* used by lanes64 only */
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
        /* lanes64: the lane accumulators start at -0, the identity of +, so each lane's
         * first value is its first column's, as the kernel's copy of the first block */
        VF lg[RK_NV], lgx[RK_NV];
        for (int j = 0; j < RK_NV; j++)
            lg[j] = lgx[j] = (VF){0} * -1.0f;
        float sg = 0.0f, sgx = 0.0f; /* the chunks' sums, added in order */
        for (int64_t c0 = 0; c0 < N; c0 += chunk_cols) {
            const int64_t c1 = N - c0 < chunk_cols ? N : c0 + chunk_cols;
            float cg = 0.0f, cgx = 0.0f; /* the chunk's ReduceSum: its repeats from +0 */
            for (int64_t c = c0; c < c1; c += TILE) {
                int64_t n = c1 - c < TILE ? c1 - c : TILE;
                const void *tdy, *tx;
                row_tiles(dy, x, rdy, rx, kind, c, n, bdy, bx, &tdy, &tx);
                /* the streams from memory, PF_BYTES ahead (into the next rows when rows
                 * follow each other, as they do unless the batch dims are strided; a
                 * prefetch never faults); pass 2 then reads the row from cache */
                for (int64_t b = 0; b < n * es; b += 64) {
                    __builtin_prefetch((const char *)tdy + PF_BYTES + b);
                    __builtin_prefetch((const char *)tx + PF_BYTES + b);
                }
                RK(pass1)(tdy, tx, kind, sums ? w + c : NULL, mean, rstd, n, lanes64, lg, lgx,
                          &cg, &cgx, parts ? pw + c : NULL, parts ? pb + c : NULL, m == begin,
                          sums, parts);
            }
            sg += cg;
            sgx += cgx;
        }
        if (!sums)
            continue;
        if (lanes64) {
            VF two[2];
            float s2[2];
            for (int j = 0; j < RK_NV; j++) {
                lg[j] = (VF)((VU)(lg[j] + pad_add[j]) & pad_keep[j]);
                lgx[j] = (VF)((VU)(lgx[j] + pad_add[j]) & pad_keep[j]);
            }
            two[0] = RK(reduce_repeat)(lg);
            two[1] = RK(reduce_repeat)(lgx);
            RK(fold_repeats)(two, 2, s2);
            sg = s2[0];
            sgx = s2[1];
        }
        /* the means: Workspace divides by N; the others multiply by the float 1 / N */
        const float mg = tl->divide ? sg / (float)N : sg * coff;
        const float mgx = tl->divide ? sgx / (float)N : sgx * coff;
        char *rdx = (char *)row_base(dx, m);
        /* a gradInput stored in place runs the row the way its stores do not alias gradOut's
         * or input's loads (nor the weight's, as wide as FLOAT gradInput), or else with
         * ordinary stores (row_store_order: up to 2.4x the CPU time otherwise) */
        int order = ROW_UPWARDS;
        if (dx_fused) {
            const void *const src[3] = {rdy, rx, w};
            order = row_store_order(rdx, src, es == 4 ? 3 : 2, RK_W * es);
        }
        const bool down = order == ROW_DOWNWARDS, nt = T->dx_stream && order != ROW_ALIASED;
        const int64_t tiles = (N + TILE - 1) / TILE;
        for (int64_t t = 0; t < tiles; t++) {
            const int64_t c = (down ? tiles - 1 - t : t) * TILE;
            int64_t n = N - c < TILE ? N - c : TILE;
            const void *tdy, *tx;
            row_tiles(dy, x, rdy, rx, kind, c, n, bdy, bx, &tdy, &tx);
            char *o = rdx + c * es;
            if (dx_fused && nt && ((uintptr_t)o & (RK_W * es - 1)) == 0) {
                RK(pass2)(tdy, tx, kind, w + c, mean, rstd, mg, mgx, n, o, kind, away, true,
                          down);
            } else if (dx_fused) {
                RK(pass2)(tdy, tx, kind, w + c, mean, rstd, mg, mgx, n, o, kind, away, false,
                          down);
            } else {
                RK(pass2)(tdy, tx, kind, w + c, mean, rstd, mg, mgx, n, bdx, LD_F32, 0, false,
                          false);
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
            RK(rows_impl)(T, b, begin, end, kind, true, true, true);                       \
        else if (sums && parts)                                                            \
            RK(rows_impl)(T, b, begin, end, kind, false, true, true);                      \
        else if (sums && fused)                                                            \
            RK(rows_impl)(T, b, begin, end, kind, true, true, false);                      \
        else if (sums)                                                                     \
            RK(rows_impl)(T, b, begin, end, kind, false, true, false);                     \
        else                                                                               \
            RK(rows_impl)(T, b, begin, end, kind, false, false, true);                     \
    } while (0)

/* Core blocks [first, last) of rows, in order (a chunk of aclemu_parallel_for: a run of whole
 * blocks, layer_norm_backward.c row_chunks). */
static void RK(rows_body)(void *ctx, int64_t chunk, int64_t first, int64_t last)
{
    (void)chunk;
    const lnb_task *T = ctx;
    const int64_t rows = T->p.tiling.block_rows;
    const bool sums = T->p.mask[0], parts = T->p.parts;
    const int kind = T->kind;
    const bool fused = sums && T->dx_fused;
    for (int64_t b = first; b < last; b++) {
        const int64_t begin = b * rows;
        const int64_t end = T->p.M - begin < rows ? T->p.M : begin + rows;
        if (kind == LD_F16)
            RK_OUTS(LD_F16);
        else if (kind == LD_BF16)
            RK_OUTS(LD_BF16);
        else
            RK_OUTS(LD_F32);
        if (T->dx_stream) /* the non-temporal stores reach memory before the block counts done */
            RK(st_fence)();
        if (T->p.parts)
            lnb_block_done((lnb_task *)ctx, b);
    }
}

#undef RK_OUTS
#undef RK_NV
#undef RK_TILE_REPS
