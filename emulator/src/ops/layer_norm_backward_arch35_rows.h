/*
 * The arch35 LayerNormGradV3 kernels' hot loops (layer_norm_backward_arch35.c), included by
 * row_levels.h once per x86-64 level (x86-64-v4, x86-64-v3, the build's baseline), each time
 * under that level's `#pragma GCC target` with RK_SFX naming the copy: rows_body_<RK_SFX>,
 * which runs the gradInput rows or the gradWeight/gradBias column tiles (R->pass).
 *
 * Written with native-width vectors (row_vectors.h: 16, 8 or 4 floats), contiguous FLOAT16/
 * BF16 rows converted in registers as loaded. Every operation is elementwise, lane for lane,
 * with its operands in the source's order (the device's: its first operand first), and the
 * only cross-lane step, the 64-lane Reduce, is norm_rows.h's nr_fold_vector_lanes in every
 * copy; a vector loop's scalar tail computes the same expression. So every copy gives the same
 * bits, NaN signs included (tests/test_kernel_clones.py).
 *
 * Expects from the includer: lnb35_run, gb_slice, gb_bufs, VL, COL_TILE,
 * DX_TILE, MAX_LEVELS, PF_ROWS, the row_vectors.h kinds. No include guard: every inclusion is
 * one more copy.
 */

#include "row_vectors.h" /* RK(), RK_W, VF, RK(ld), RK(st): this copy's */

/* The steps that do not depend on how a row is read (the row sums, the RA reduction, the
 * cache): one out-of-line copy per level. Inlined into each of the three readers' passes
 * they made one ~290 KB function per level, and this file alone took gcc ~100 s of CPU, most
 * of the emulator's build; out of line, ~16 s, and the kernels run no more instructions
 * (each call works on a whole row or column tile). */
#ifndef OUTLINE
#define OUTLINE static __attribute__((noinline))
#endif

/* out[i] = a[i] + b[i], i < n (out may be a), a's NaN first (row_vectors.h RK(add)). */
INLINE void RK(add_floats)(float *out, const float *a, const float *restrict b, int64_t n)
{
    int64_t i = 0;
    for (; i + RK_W <= n; i += RK_W)
        RK(st)(out, i, RK(add)(RK(ld)(a, i, LD_F32), RK(ld)(b, i, LD_F32)), LD_F32, 0, false);
    for (; i < n; i++)
        out[i] = RK(add1)(a[i], b[i]);
}

/* UpdateCache for one vector of n floats: the new result r plus levels 0 .. t - 1 in that
 * order, stored at level t (t = nr_cache_level of the block). */
OUTLINE void RK(cache_push)(float *cache, int64_t stride, int t, const float *r, int64_t n)
{
    float *dst = cache + t * stride;
    int64_t i = 0;
    for (; i + RK_W <= n; i += RK_W) {
        VF v = RK(ld)(r, i, LD_F32);
        for (int j = 0; j < t; j++)
            v = v + RK(ld)(cache + j * stride, i, LD_F32);
        RK(st)(dst, i, v, LD_F32, 0, false);
    }
    for (; i < n; i++) {
        float v = r[i];
        for (int j = 0; j < t; j++)
            v = v + cache[j * stride + i];
        dst[i] = v;
    }
}

/* ---- the row sums: LastReduceSum and the column blocks ------------------------------------ */

/* LastReduceSumSmallR over r <= 128 floats: at most 64, one Reduce of them (the lanes past r
 * +0); else the second register's first r - 64 lanes added onto the first's (the rest keep
 * the first's: merging move), one Reduce of all 64. */
OUTLINE float RK(reduce_small)(const float *v, int64_t r)
{
    float a[VL] = {0};
    if (r <= VL) {
        memcpy(a, v, (size_t)r * sizeof(float));
    } else {
        memcpy(a, v, sizeof a);
        RK(add_floats)(a, a, v + VL, r - VL);
    }
    return nr_fold_vector_lanes(a);
}

/* LastReduceSum over r floats (layer_norm_grad_v3_base.h): above 128, with K registers
 * (the last maybe partial), F whole ones and P = nr_pow2_below(K): register j < F - P plus
 * register j + P, Reduced; the register F - P with the partial register's lanes added
 * (merging); registers K - P .. P - 1 alone; the P results, in register order, by
 * reduce_small. */
OUTLINE float RK(last_reduce_sum)(const float *v, int64_t r)
{
    if (r <= 2 * VL)
        return RK(reduce_small)(v, r);
    const int64_t K = (r + VL - 1) / VL, F = r / VL, P = nr_pow2_below(K);
    float part[2 * VL], a[VL];
    int64_t n = 0;
    for (int64_t j = 0; j < F - P; j++) {
        RK(add_floats)(a, v + j * VL, v + (j + P) * VL, VL);
        part[n++] = nr_fold_vector_lanes(a);
    }
    if (K > F) {
        const int64_t j = F - P;
        memcpy(a, v + j * VL, sizeof a);
        RK(add_floats)(a, a, v + F * VL, r - F * VL);
        part[n++] = nr_fold_vector_lanes(a);
    }
    for (int64_t j = K - P; j < P; j++)
        part[n++] = nr_fold_vector_lanes(v + j * VL);
    return RK(reduce_small)(part, n);
}

/* The row's column blocks of nf columns (Recompute: min(6144, N rounded up to 64),
 * recompute_tiling.cpp BackwardKernelTiling; BigM: 64, grouped_reduce.h backwardNfactor);
 * with B blocks (the last maybe partial) and Q = nr_pow2_below(B), block b < Q gets block
 * b + Q added elementwise (over that block's columns), then its LastReduceSum; the Q results
 * merged by the binary counter. One block (B = 1): the LastReduceSum of the whole row
 * (recompute_backward_impl.h, grouped_reduce_big_m_impl.h Process). Overwrites v. */
OUTLINE float RK(row_sum)(float *v, int64_t N, int64_t nf)
{
    const int64_t whole = N / nf, blocks = (N + nf - 1) / nf, tail = N - whole * nf;
    const int64_t Q = nr_pow2_below(blocks);
    if (Q == 0)
        return RK(last_reduce_sum)(v, N);
    float cache[MAX_LEVELS];
    for (int64_t b = 0; b < Q; b++) {
        float *blk = v + b * nf;
        const int64_t fold = b + Q < whole ? nf : b + Q == whole ? tail : 0;
        RK(add_floats)(blk, blk, v + (b + Q) * nf, fold);
        const float r = RK(last_reduce_sum)(blk, nf);
        RK(cache_push)(cache, 1, nr_cache_level(b), &r, 1);
    }
    return cache[nr_cache_level(Q - 1)];
}

/* Columns [c0, c0 + n) of row m of gradOut or input: in place (a contiguous 16-bit row, read
 * as R->kind; FLOAT contiguous) or converted into buf by get_tile (LD_F32). */
INLINE const void *RK(row_in)(const lnb35_run *R, const tdesc *t, int64_t m, int64_t c0,
                              int64_t n, float *buf)
{
    if (R->kind != LD_F32)
        return row_base(t, m) + c0 * 2;
    return get_tile(row_base(t, m), t->dtype, &t->inner, c0, n, buf);
}

OUTLINE void RK(ra_reduce)(float *t, int64_t ld, int64_t n, int64_t dimR, bool grouped);

/* A row's sum as the template takes it: row_sum over the whole row, or for BigN each core's
 * columns, then the cores' results by the RA reduction (partial: split.cores floats).
 * Overwrites v. */
OUTLINE float RK(template_row_sum)(const lnb35_run *R, float *v, float *partial)
{
    if (R->tmpl != LNB35_BIG_N)
        return RK(row_sum)(v, R->c->N, R->row_block);
    const big_n_split *s = &R->split;
    for (int64_t k = 0, start = 0; k < s->cores; k++) {
        const int64_t n = s->per + (k < s->rem);
        partial[k] = RK(row_sum)(v + start, n, R->row_block);
        start += n;
    }
    RK(ra_reduce)(partial, 1, 1, s->cores, ra_grouped(s->dim_a));
    return partial[0];
}

/* ---- gradInput ------------------------------------------------------------------------------ */

INLINE void RK(dx_rows_impl)(const lnb35_run *R, int64_t chunk, int64_t begin, int64_t end,
                             const int kind)
{
    const lnb35_call *c = R->c;
    const int64_t N = c->N;
    float *g = R->bufs + chunk * R->chunk_floats, *gx = g + N, *bdy = gx + N, *bx = bdy + N;
    float *bdx = bx + N, *partial = bdx + DX_TILE;
    const float fN = (float)N, rN = 1.0f / fN; /* ComputeDxCommon's floatN, reciprocalN */
    const float *w = c->w;
    for (int64_t m = begin; m < end; m++) {
        const float mean = R->mean[m], rstd = R->rstd[m];
        const void *dy = RK(row_in)(R, c->dy, m, 0, N, bdy);
        const void *x = RK(row_in)(R, c->x, m, 0, N, bx);
        int64_t i = 0;
        for (; i + RK_W <= N; i += RK_W) { /* NlastBroadcastMul, Normalize, VectorMul */
            const VF xh = (RK(ld)(x, i, kind) - mean) * rstd;
            const VF gi = RK(ld)(dy, i, kind) * RK(ld)(w, i, LD_F32);
            RK(st)(g, i, gi, LD_F32, 0, false);
            RK(st)(gx, i, xh * gi, LD_F32, 0, false);
        }
        for (; i < N; i++) {
            const float xh = (ld1(x, i, kind) - mean) * rstd;
            g[i] = ld1(dy, i, kind) * w[i];
            gx[i] = xh * g[i];
        }
        const float s1 = RK(template_row_sum)(R, g, partial);
        const float s2 = RK(template_row_sum)(R, gx, partial);
        char *out = row_base(c->dx, m);
        /* gradInput stored by the loop itself (R->dx_kind: contiguous, no separate rounding),
         * non-temporally when large and the row is aligned to the vector */
        const int okind = R->dx_kind;
        const bool nt = R->dx_stream && ((uintptr_t)out & (RK_W * 4 - 1)) == 0;
        for (int64_t c0 = 0; c0 < N; c0 += DX_TILE) {
            const int64_t n = N - c0 < DX_TILE ? N - c0 : DX_TILE;
            void *dst = okind >= 0 ? (void *)out : (void *)bdx;
            const int64_t o = okind >= 0 ? c0 : 0, dkind = okind >= 0 ? okind : LD_F32;
            /* ComputeDxCommon: Mul, Muls, Sub, Mul, Sub, Muls, Mul */
            for (i = 0; i + RK_W <= n; i += RK_W) {
                const VF xh = (RK(ld)(x, c0 + i, kind) - mean) * rstd;
                const VF gi = RK(ld)(dy, c0 + i, kind) * RK(ld)(w, c0 + i, LD_F32);
                RK(st)(dst, o + i, (((gi * fN - s1) - xh * s2) * rN) * rstd, (int)dkind, 0,
                       nt && dkind == LD_F32);
            }
            for (; i < n; i++) {
                const float xh = (ld1(x, c0 + i, kind) - mean) * rstd;
                const float gi = ld1(dy, c0 + i, kind) * w[c0 + i];
                st1(dst, o + i, (((gi * fN - s1) - xh * s2) * rN) * rstd, (int)dkind, 0);
            }
            if (okind >= 0)
                continue;
            if (c->dx_round) /* the kernel's own output is input's dtype (CAST_RINT) */
                aclemu_round_floats(c->x->dtype, ACLEMU_TIES_EVEN, bdx, n);
            put_tile(out, c->dx->dtype, ACLEMU_TIES_EVEN, &c->dx->inner, c0, n, bdx);
        }
    }
    if (R->dx_stream) /* the non-temporal stores reach memory before the pass counts done */
        RK(st_fence)();
}

/* ---- gradWeight / gradBias ---------------------------------------------------------------- */

/* AscendC ReduceSum<float, Pattern::Reduce::RA, true> down dimR rows of t (row stride ld,
 * n columns), in place, the result in row 0 (asc-devkit reduce_common_ra_reuse_align_3510_
 * impl.h ReduceRAImpl, reuse-source): with mainR the largest power of two <= dimR, rows
 * r < dimR - mainR get row mainR + r added; then rounds of 16 rows to 1 while at least 16
 * remain, then the last 2, 4 or 8 rows by halving (row i plus row i + h, h = half, ...).
 * A round takes, for row j of the result, rows j + k * L (k = 0..15, L = rows / 16: the
 * OverVL form, columns > 64) or rows 16 j + k (the LessThanVL form, exactly 64 columns),
 * and adds them by halving (k plus k + 8, then + 4, + 2, + 1). */
OUTLINE void RK(ra_reduce)(float *t, int64_t ld, int64_t n, int64_t dimR, bool grouped)
{
    if (dimR <= 1)
        return;
    int64_t mainR = 1;
    while (mainR * 2 <= dimR)
        mainR *= 2;
    for (int64_t r = 0; r < dimR - mainR; r++)
        RK(add_floats)(t + r * ld, t + r * ld, t + (mainR + r) * ld, n);
    int64_t rows = mainR;
    while (rows >= 16) {
        const int64_t L = rows / 16;
        if (grouped) {
            for (int64_t j = 0; j < L; j++) {
                float *v = t + 16 * j * ld;
                for (int64_t h = 8; h >= 1; h /= 2)
                    for (int64_t k = 0; k < h; k++)
                        RK(add_floats)(v + k * ld, v + k * ld, v + (k + h) * ld, n);
                if (j > 0)
                    memcpy(t + j * ld, v, (size_t)n * sizeof(float));
            }
        } else {
            for (int64_t h = 8 * L; h >= L; h /= 2)
                for (int64_t r = 0; r < h; r++)
                    RK(add_floats)(t + r * ld, t + r * ld, t + (r + h) * ld, n);
        }
        rows = L;
    }
    for (int64_t h = rows / 2; h >= 1; h /= 2)
        for (int64_t r = 0; r < h; r++)
            RK(add_floats)(t + r * ld, t + r * ld, t + (r + h) * ld, n);
}

/* Rows [r0, r0 + rows) of the block's products for columns [c0, c0 + n): pw (dy * x_hat, by
 * ComputeGammaCommon: ((x - mean) * rstd) * dy) and pb (dy), at row stride COL_TILE; add:
 * added onto what is there (the fold block). */
INLINE void RK(gb_rows)(const lnb35_run *R, int64_t r0, int64_t rows, int64_t c0, int64_t n,
                        float *pw, float *pb, float *bdy, float *bx, bool add, const int kind)
{
    const lnb35_call *c = R->c;
    const int64_t es = kind == LD_F32 ? 4 : 2;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t m = r0 + r;
        if (m + PF_ROWS < c->M) { /* the rows ahead: a tile's run of each row is short */
            const char *pdy = row_base(c->dy, m + PF_ROWS) + c0 * es;
            const char *px = c->dw ? row_base(c->x, m + PF_ROWS) + c0 * es : NULL;
            for (int64_t b = 0; b < n * es; b += 64) {
                __builtin_prefetch(pdy + b);
                if (px)
                    __builtin_prefetch(px + b);
            }
        }
        const void *dy = RK(row_in)(R, c->dy, m, c0, n, bdy);
        float *ow = pw + r * COL_TILE, *ob = pb + r * COL_TILE;
        if (c->dw) {
            const void *x = RK(row_in)(R, c->x, m, c0, n, bx);
            const float mean = R->mean[m], rstd = R->rstd[m];
            int64_t i = 0;
            for (; i + RK_W <= n; i += RK_W) {
                const VF p = ((RK(ld)(x, i, kind) - mean) * rstd) * RK(ld)(dy, i, kind);
                RK(st)(ow, i, add ? RK(ld)(ow, i, LD_F32) + p : p, LD_F32, 0, false);
            }
            for (; i < n; i++) {
                const float p = ((ld1(x, i, kind) - mean) * rstd) * ld1(dy, i, kind);
                ow[i] = add ? ow[i] + p : p;
            }
        }
        if (c->db) {
            int64_t i = 0;
            for (; i + RK_W <= n; i += RK_W) {
                const VF d = RK(ld)(dy, i, kind);
                RK(st)(ob, i, add ? RK(ld)(ob, i, LD_F32) + d : d, LD_F32, 0, false);
            }
            for (; i < n; i++)
                ob[i] = add ? ob[i] + ld1(dy, i, kind) : ld1(dy, i, kind);
        }
    }
}

/* The slice's sums for columns [c0, c0 + n) (gradWeight into ow, gradBias into ob, those
 * requested): its row blocks, block b + Q folded into block b, each block's RA reduction
 * (grouped: the LessThanVL form), the blocks merged by the binary counter. */
INLINE void RK(gb_slice_sum)(const lnb35_run *R, const gb_slice *s, bool grouped, int64_t c0,
                             int64_t n, const gb_bufs *B, float *ow, float *ob, const int kind)
{
    const lnb35_call *c = R->c;
    const int64_t mmain = s->Q ? s->mf : s->rows; /* one block when Q == 0: all the rows */
    const int64_t loops = s->Q ? s->Q : 1;
    for (int64_t b = 0; b < loops; b++) {
        RK(gb_rows)(R, s->start + b * s->mf, mmain, c0, n, B->pw, B->pb, B->bdy, B->bx, false,
                    kind);
        const int64_t fold = !s->Q ? 0 : b + s->Q < s->whole ? s->mf
                             : b + s->Q == s->whole ? s->tail : 0;
        if (fold > 0)
            RK(gb_rows)(R, s->start + (b + s->Q) * s->mf, fold, c0, n, B->pw, B->pb, B->bdy,
                        B->bx, true, kind);
        const int lvl = nr_cache_level(b);
        if (c->db) {
            RK(ra_reduce)(B->pb, COL_TILE, n, mmain, grouped);
            RK(cache_push)(B->cb, COL_TILE, lvl, B->pb, n);
        }
        if (c->dw) {
            RK(ra_reduce)(B->pw, COL_TILE, n, mmain, grouped);
            RK(cache_push)(B->cw, COL_TILE, lvl, B->pw, n);
        }
    }
    const int64_t res = s->Q ? nr_cache_level(s->Q - 1) : 0;
    if (c->dw)
        memcpy(ow, B->cw + res * COL_TILE, (size_t)n * sizeof(float));
    if (c->db)
        memcpy(ob, B->cb + res * COL_TILE, (size_t)n * sizeof(float));
}

INLINE void RK(gb_tiles_impl)(const lnb35_run *R, int64_t chunk, int64_t begin, int64_t end,
                              const int kind)
{
    const lnb35_call *c = R->c;
    const int64_t M = c->M;
    gb_bufs B;
    float *ow, *ob, *sw, *sb;
    gb_chunk_layout(R, chunk, &B, &ow, &ob, &sw, &sb);
    for (int64_t tile = begin; tile < end; tile++) {
        const int64_t c0 = tile * R->col_tile;
        const int64_t n = c->N - c0 < R->col_tile ? c->N - c0 : R->col_tile;
        if (R->tmpl == LNB35_BIG_M) {
            /* stage 1: each core's rows (64-column tiles: the LessThanVL form); stage 2 on
             * core 0: the cores' results, as rows, by one more RA reduction */
            const int64_t cores = big_m_cores(M);
            for (int64_t k = 0; k < cores; k++) {
                const gb_slice s = big_m_slice(M, k);
                RK(gb_slice_sum)(R, &s, true, c0, n, &B, sw + k * COL_TILE, sb + k * COL_TILE,
                                 kind);
            }
            if (c->dw) {
                RK(ra_reduce)(sw, COL_TILE, n, cores, true);
                memcpy(ow, sw, (size_t)n * sizeof(float));
            }
            if (c->db) {
                RK(ra_reduce)(sb, COL_TILE, n, cores, true);
                memcpy(ob, sb, (size_t)n * sizeof(float));
            }
        } else {
            const gb_slice s = whole_slice(R->tmpl, M);
            RK(gb_slice_sum)(R, &s, ra_grouped(gamma_beta_nfactor(R->tmpl, &s)), c0, n, &B, ow,
                             ob, kind);
        }
        if (c->dw)
            put_tile(view_base(c->dw), c->dw->dtype, ACLEMU_TIES_EVEN, &c->dw->inner, c0, n, ow);
        if (c->db)
            put_tile(view_base(c->db), c->db->dtype, ACLEMU_TIES_EVEN, &c->db->inner, c0, n, ob);
    }
}

/* The pass R->pass over [begin, end): gradInput rows or gradWeight/gradBias column tiles,
 * specialized on how gradOut/input are read. */
static void RK(rows_body)(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const lnb35_run *R = ctx;
    if (R->pass == LNB35_PASS_DX) {
        if (R->kind == LD_F16)
            RK(dx_rows_impl)(R, chunk, begin, end, LD_F16);
        else if (R->kind == LD_BF16)
            RK(dx_rows_impl)(R, chunk, begin, end, LD_BF16);
        else
            RK(dx_rows_impl)(R, chunk, begin, end, LD_F32);
    } else {
        if (R->kind == LD_F16)
            RK(gb_tiles_impl)(R, chunk, begin, end, LD_F16);
        else if (R->kind == LD_BF16)
            RK(gb_tiles_impl)(R, chunk, begin, end, LD_BF16);
        else
            RK(gb_tiles_impl)(R, chunk, begin, end, LD_F32);
    }
}
