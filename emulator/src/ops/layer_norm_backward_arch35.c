/*
 * aclnnLayerNormBackward on Ascend 950: the arch35 LayerNormGradV3 templates Recompute,
 * GroupedReduceBigM and GroupedReduceBigN, in their own order of float32 operations
 * (hicann/ops-nn norm/layer_norm_grad_v3: op_host/layer_norm_grad_v3_recompute_tiling.cpp,
 * _grouped_reduce_big_{m,n}_tiling.cpp, op_kernel/arch35/
 * layer_norm_grad_v3_recompute_{backward,gamma_beta}_impl.h, _grouped_reduce_big_{m,n}_impl.h
 * and _base.h; the gradWeight/
 * gradBias row reduction is AscendC's ReduceSum<float, Pattern::Reduce::RA, true>, public in
 * asc-devkit impl/adv_api/detail/reduce/reduce_common_ra_reuse_align_3510_impl.h).
 * docs/emulator.md, aclnnLayerNormBackward "Ascend 950 bit for bit", says it in words.
 *
 * Design, and why:
 * - gradInput: rows are independent on the device (each core takes whole rows), so the rows
 *   are split over the thread pool; each row's two sums are the kernel's own (its column
 *   blocks of nfactor, the fold of block b + Q into block b, LastReduceSum per block, the
 *   blocks' results merged by the binary counter of UpdateCache), so the split changes no bit.
 *   BigN splits a row's columns over cores and reduces the cores' sums of each row: that too
 *   is done a row at a time, in the cores' order (template_row_sum).
 * - gradWeight/gradBias: columns are independent (the kernel splits them over cores and
 *   reduces down the rows per column), so column tiles are split over the thread pool and
 *   each tile runs the kernel's row blocks of mFactor rows, the fold, the RA reduction and the
 *   binary counter. A second read of gradOut/input, as the device's (a "recompute" template).
 * - The only hardware order the sources leave open, the one-register Reduce (vcadd) over 64
 *   float lanes, is norm_rows.h's nr_fold_vector_lanes (assumed, as in the other kernels).
 * - Buffers are taken once per call, before anything is written.
 */
#include <stdlib.h>
#include <string.h>

#include "layer_norm_backward_arch35.h"

#include "convert.h"
#include "emu_internal.h"
#include "norm_rows.h"

#define VL NR_VECTOR_LANES      /* floats per 256-byte vector register */
#define UB_FLOATS(ub) ((ub) / 4) /* the tiling's ubSizePlatForm / sizeof(float) */
#define BACKWARD_N_FACTOR 6144  /* recompute_tiling.cpp DEFAULT_BACKWARD_N_FACTOR */
#define GAMMA_BETA_M_FACTOR 128 /* recompute_tiling.cpp DEFAULT_GAMMA_BETA_M_FACTOR */
#define GAMMA_BETA_N_BASE 64    /* recompute_tiling.cpp DEFAULT_GAMMA_BETA_N_FACTOR */
#define BIG_M_BACKWARD_N_FACTOR 64 /* arch35/layer_norm_grad_v3_grouped_reduce.h */
#define BIG_N_SMALL_M 16        /* big_n_tiling.cpp BACKWARD_BIG_R_FACTOR_THRES: rows up to it
                                   take 128-column blocks, more rows 64 */
#define BIG_N_GAMMA_BETA_M_FACTOR 64 /* big_n_tiling.cpp GAMMA_BETA_DEFAULT_BIN_ADD_R_FACTOR */
#define UB_BLOCK_FLOATS 8       /* the UB's 32-byte block in floats (GetUbBlockSize / 4) */
#define RA_CONCAT_MAX_COLUMNS (VL / 2) /* asc-devkit ReduceRAImpl: up to VL / REGULAR_FOLD_NUM
                                          columns the Concat form, up to VL LessThanVL */
#define COL_TILE 128            /* columns per tile of the gradWeight pass (any width: columns
                                   are independent; a multiple of 64 keeps tiles vector-sized) */
#define ROW_ELEMS (64 * 1024)   /* elements per thread chunk of the gradInput pass, at least */
#define MAX_CHUNKS 16           /* thread chunks per pass (each has its own buffers) */
#define MAX_LEVELS 64           /* binary counter levels (log2 of the blocks, + 1) */
#define DX_TILE 512             /* gradInput columns stored at a time */

/* ---- the tiling's integer helpers (arch35/layer_norm_grad_v3_base.h) ---------------------- */

/* GetCacheID: the binary counter level block idx's result lands on (its trailing ones). */
static int cache_level(int64_t idx)
{
    int t = 0;
    while (idx & 1) {
        t++;
        idx >>= 1;
    }
    return t;
}

/* UpdateCache for one vector of n floats: the new result r plus levels 0 .. t - 1 in that
 * order, stored at level t (t = cache_level of the block). */
static void cache_push(float *cache, int64_t stride, int t, const float *r, int64_t n)
{
    float *dst = cache + t * stride;
    for (int64_t i = 0; i < n; i++) {
        float v = r[i];
        for (int j = 0; j < t; j++)
            v += cache[j * stride + i];
        dst[i] = v;
    }
}

int lnb35_template(int64_t M, int64_t N)
{
    /* grouped_reduce_big_m_tiling.cpp and _big_n_tiling.cpp IsCapable; Recompute always is */
    if (M > 4096 && N < 512)
        return LNB35_BIG_M;
    if (M < 512 && N > 8192)
        return LNB35_BIG_N;
    return LNB35_RECOMPUTE;
}

/* ---- the row sums: LastReduceSum and the column blocks ------------------------------------ */

/* One Reduce<SUM> over the first n <= 64 floats of v, the lanes past n taken as +0. */
static float reduce_register(const float *v, int64_t n)
{
    float lanes[VL] = {0};
    memcpy(lanes, v, (size_t)n * sizeof(float));
    return nr_fold_vector_lanes(lanes);
}

/* LastReduceSumSmallR over r <= 128 floats: at most 64, one Reduce; else the second register's
 * first r - 64 lanes added onto the first's (the rest keep the first's: merging move), one
 * Reduce of all 64. */
static float reduce_small(const float *v, int64_t r)
{
    if (r <= VL)
        return reduce_register(v, r);
    float a[VL];
    for (int l = 0; l < VL; l++)
        a[l] = l < r - VL ? v[l] + v[VL + l] : v[l];
    return nr_fold_vector_lanes(a);
}

/* LastReduceSum over r floats (layer_norm_grad_v3_base.h): above 128, with K registers
 * (the last maybe partial), F whole ones and P = nr_pow2_below(K): register j < F - P plus
 * register j + P, Reduced; the register F - P with the partial register's lanes added
 * (merging); registers K - P .. P - 1 alone; the P results, in register order, by
 * reduce_small. */
static float last_reduce_sum(const float *v, int64_t r)
{
    if (r <= 2 * VL)
        return reduce_small(v, r);
    const int64_t K = (r + VL - 1) / VL, F = r / VL, P = nr_pow2_below(K);
    float part[2 * VL], a[VL];
    int64_t n = 0;
    for (int64_t j = 0; j < F - P; j++) {
        for (int l = 0; l < VL; l++)
            a[l] = v[j * VL + l] + v[(j + P) * VL + l];
        part[n++] = nr_fold_vector_lanes(a);
    }
    if (K > F) {
        const int64_t tail = r - F * VL, j = F - P;
        for (int l = 0; l < VL; l++)
            a[l] = l < tail ? v[j * VL + l] + v[F * VL + l] : v[j * VL + l];
        part[n++] = nr_fold_vector_lanes(a);
    }
    for (int64_t j = K - P; j < P; j++)
        part[n++] = reduce_register(v + j * VL, VL);
    return reduce_small(part, n);
}

/* The row's column blocks of nf columns (Recompute: min(6144, N rounded up to 64),
 * recompute_tiling.cpp BackwardKernelTiling; BigM: 64, grouped_reduce.h backwardNfactor);
 * with B blocks (the last maybe partial) and Q = nr_pow2_below(B), block b < Q gets block
 * b + Q added elementwise (over that block's columns), then its LastReduceSum; the Q results
 * merged by the binary counter. One block (B = 1): the LastReduceSum of the whole row
 * (recompute_backward_impl.h, grouped_reduce_big_m_impl.h Process). Overwrites v. */
static float row_sum(float *v, int64_t N, int64_t nf)
{
    const int64_t whole = N / nf, blocks = (N + nf - 1) / nf, tail = N - whole * nf;
    const int64_t Q = nr_pow2_below(blocks);
    if (Q == 0)
        return last_reduce_sum(v, N);
    float cache[MAX_LEVELS];
    for (int64_t b = 0; b < Q; b++) {
        float *blk = v + b * nf;
        const int64_t fold = b + Q < whole ? nf : b + Q == whole ? tail : 0;
        const float *src = v + (b + Q) * nf;
        for (int64_t j = 0; j < fold; j++)
            blk[j] += src[j];
        const float r = last_reduce_sum(blk, nf);
        cache_push(cache, 1, cache_level(b), &r, 1);
    }
    return cache[cache_level(Q - 1)];
}

/* gradInput's column block: Recompute min(6144, N rounded up to 64); BigM 64; BigN 128 for
 * at most 16 rows, else 64 (big_n_tiling.cpp BackwardKernelTiling). */
static int64_t row_block_of(int tmpl, int64_t M, int64_t N)
{
    if (tmpl == LNB35_BIG_M)
        return BIG_M_BACKWARD_N_FACTOR;
    if (tmpl == LNB35_BIG_N)
        return M > BIG_N_SMALL_M ? VL : 2 * VL;
    return N < BACKWARD_N_FACTOR ? (N + VL - 1) / VL * VL : BACKWARD_N_FACTOR;
}

/* Whether AscendC's RA ReduceSum over this many columns takes its LessThanVL form (16
 * consecutive rows a round), which is the only one whose order differs: the OverVL and
 * Concat forms both add by halving the rows (asc-devkit reduce_common_ra_reuse_align_3510_
 * impl.h ReduceRAImpl). */
static bool ra_grouped(int64_t columns)
{
    return columns > RA_CONCAT_MAX_COLUMNS && columns <= VL;
}

/* The binary counter's levels for Q block pairs (the tilings' cacheBufferCount). */
static int64_t counter_levels(int64_t Q)
{
    int64_t levels = 1;
    if (Q > 0)
        for (levels = 0; (Q >> levels) != 0; levels++)
            ;
    return levels;
}

/* GroupedReduceBigN's gradInput cores (big_n_tiling.cpp BackwardKernelTiling, _impl.h Init):
 * the columns split over at most nf cores (nf the column block), the first N % cores taking
 * one column more; each core's row sums are its own columns' (column blocks of nf, folded,
 * counted as Recompute's row), then core 0 reduces the cores' partial sums, taken as rows, by
 * one RA ReduceSum over the row chunk's dimA columns (grouped: ra_grouped(dimA)). */
typedef struct {
    int64_t cores, per, rem; /* numBlocks, nPerBlock, nRem */
    int64_t dim_a;           /* backwardMfactorBlockAligned: the RA reduction's columns */
} big_n_split;

static big_n_split big_n_split_of(int64_t M, int64_t N)
{
    const int64_t nf = row_block_of(LNB35_BIG_N, M, N);
    const int64_t vc = aclemu_soc_vector_cores();
    const int64_t cores = vc < nf ? vc : nf;
    int64_t block = (N + cores - 1) / cores;
    block = block > nf ? block : nf;
    big_n_split s = {.cores = (N + block - 1) / block};
    s.per = N / s.cores;
    s.rem = N - s.per * s.cores;
    /* the row chunk: the UB left for the buffers with the main cores' counter levels */
    const int64_t levels = counter_levels(nr_pow2_below((s.per + 1 + nf - 1) / nf));
    int64_t m_max = (UB_FLOATS(aclemu_soc_ub_bytes()) - 2 * nf) / (9 * nf + 9 + 2 * levels);
    m_max = m_max / UB_BLOCK_FLOATS * UB_BLOCK_FLOATS;
    const int64_t mf = M < m_max ? M : m_max;
    s.dim_a = (mf + UB_BLOCK_FLOATS - 1) / UB_BLOCK_FLOATS * UB_BLOCK_FLOATS;
    return s;
}

/* ---- gradInput ------------------------------------------------------------------------------ */

typedef struct {
    const lnb35_call *c;
    const float *mean, *rstd; /* M floats each */
    float *bufs;              /* per chunk: the pass's buffers */
    int64_t chunk_floats;
    int tmpl;                 /* LNB35_RECOMPUTE, LNB35_BIG_M or LNB35_BIG_N */
    int64_t row_block;        /* gradInput's column block (row_sum's nf) */
    big_n_split split;        /* BigN: gradInput's cores */
} lnb35_run;

static void ra_reduce(float *t, int64_t ld, int64_t n, int64_t dimR, bool grouped);

/* A row's sum as the template takes it: row_sum over the whole row, or for BigN each core's
 * columns, then the cores' results by the RA reduction (partial: split.cores floats).
 * Overwrites v. */
static float template_row_sum(const lnb35_run *R, float *v, float *partial)
{
    if (R->tmpl != LNB35_BIG_N)
        return row_sum(v, R->c->N, R->row_block);
    const big_n_split *s = &R->split;
    for (int64_t k = 0, start = 0; k < s->cores; k++) {
        const int64_t n = s->per + (k < s->rem);
        partial[k] = row_sum(v + start, n, R->row_block);
        start += n;
    }
    ra_reduce(partial, 1, 1, s->cores, ra_grouped(s->dim_a));
    return partial[0];
}

static void dx_rows(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const lnb35_run *R = ctx;
    const lnb35_call *c = R->c;
    const int64_t N = c->N;
    float *g = R->bufs + chunk * R->chunk_floats, *gx = g + N, *bdy = gx + N, *bx = bdy + N;
    float *bdx = bx + N, *partial = bdx + DX_TILE;
    const float fN = (float)N, rN = 1.0f / fN; /* ComputeDxCommon's floatN, reciprocalN */
    const float *w = c->w;
    for (int64_t m = begin; m < end; m++) {
        const float mean = R->mean[m], rstd = R->rstd[m];
        const float *dy = get_tile(row_base(c->dy, m), c->dy->dtype, &c->dy->inner, 0, N, bdy);
        const float *x = get_tile(row_base(c->x, m), c->x->dtype, &c->x->inner, 0, N, bx);
        for (int64_t i = 0; i < N; i++) { /* NlastBroadcastMul, Normalize, VectorMul */
            const float xh = (x[i] - mean) * rstd;
            g[i] = dy[i] * w[i];
            gx[i] = xh * g[i];
        }
        const float s1 = template_row_sum(R, g, partial), s2 = template_row_sum(R, gx, partial);
        char *out = row_base(c->dx, m);
        for (int64_t c0 = 0; c0 < N; c0 += DX_TILE) {
            const int64_t n = N - c0 < DX_TILE ? N - c0 : DX_TILE;
            for (int64_t i = 0; i < n; i++) { /* ComputeDxCommon: Mul, Muls, Sub, Mul, Sub,
                                                 Muls, Mul */
                const float xh = (x[c0 + i] - mean) * rstd;
                const float gi = dy[c0 + i] * w[c0 + i];
                bdx[i] = (((gi * fN - s1) - xh * s2) * rN) * rstd;
            }
            if (c->dx_round) /* the kernel's own output is input's dtype (CAST_RINT) */
                aclemu_round_floats(c->x->dtype, ACLEMU_TIES_EVEN, bdx, n);
            put_tile(out, c->dx->dtype, ACLEMU_TIES_EVEN, &c->dx->inner, c0, n, bdx);
        }
    }
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
static void ra_reduce(float *t, int64_t ld, int64_t n, int64_t dimR, bool grouped)
{
    if (dimR <= 1)
        return;
    int64_t mainR = 1;
    while (mainR * 2 <= dimR)
        mainR *= 2;
    for (int64_t r = 0; r < dimR - mainR; r++)
        for (int64_t i = 0; i < n; i++)
            t[r * ld + i] += t[(mainR + r) * ld + i];
    int64_t rows = mainR;
    while (rows >= 16) {
        const int64_t L = rows / 16;
        if (grouped) {
            for (int64_t j = 0; j < L; j++) {
                float *v = t + 16 * j * ld;
                for (int64_t h = 8; h >= 1; h /= 2)
                    for (int64_t k = 0; k < h; k++)
                        for (int64_t i = 0; i < n; i++)
                            v[k * ld + i] += v[(k + h) * ld + i];
                if (j > 0)
                    memcpy(t + j * ld, v, (size_t)n * sizeof(float));
            }
        } else {
            for (int64_t h = 8 * L; h >= L; h /= 2)
                for (int64_t r = 0; r < h; r++)
                    for (int64_t i = 0; i < n; i++)
                        t[r * ld + i] += t[(r + h) * ld + i];
        }
        rows = L;
    }
    for (int64_t h = rows / 2; h >= 1; h /= 2)
        for (int64_t r = 0; r < h; r++)
            for (int64_t i = 0; i < n; i++)
                t[r * ld + i] += t[(r + h) * ld + i];
}

/* A run of rows reduced by one core's row blocks (recompute_tiling.cpp
 * GammaBetaKernelTiling; grouped_reduce_big_m_tiling.cpp, stage 1, per core). */
typedef struct {
    int64_t start, rows; /* the rows */
    int64_t mf;          /* rows per block (Recompute min(128, M), BigM 64) */
    int64_t whole;       /* whole blocks (mLoop) */
    int64_t tail;        /* rows of the partial last block (mTail) */
    int64_t Q;           /* basicBlockLoop: nr_pow2_below(blocks) */
    int64_t levels;      /* cacheBufferCount */
} gb_slice;

static gb_slice gb_slice_of(int64_t start, int64_t rows, int64_t mf)
{
    gb_slice s = {.start = start, .rows = rows, .mf = mf};
    s.whole = rows / mf;
    s.tail = rows - s.whole * mf;
    s.Q = nr_pow2_below((rows + mf - 1) / mf);
    s.levels = counter_levels(s.Q);
    return s;
}

/* The gammaBetaNfactor of Recompute and BigN, the RA reduction's column count: the UB left
 * for the buffers, floored to 64 (recompute_tiling.cpp) or to BigN's 16 (the UB block in
 * halves, big_n_tiling.cpp nFactorBase). */
static int64_t gamma_beta_nfactor(int tmpl, const gb_slice *s)
{
    const int64_t base = tmpl == LNB35_BIG_N ? 2 * UB_BLOCK_FLOATS : GAMMA_BETA_N_BASE;
    const int64_t nmax = (UB_FLOATS(aclemu_soc_ub_bytes()) - 2 * s->mf) /
                         (6 * s->mf + 3 + 2 * s->levels);
    return nmax / base * base;
}

/* The gradWeight row block of Recompute (min(128, M)) and BigN (min(64, M)). */
static int64_t gamma_beta_m_factor(int tmpl, int64_t M)
{
    const int64_t mf = tmpl == LNB35_BIG_N ? BIG_N_GAMMA_BETA_M_FACTOR : GAMMA_BETA_M_FACTOR;
    return M < mf ? M : mf;
}

/* BigM's gradWeight cores: min(ceil(M / 64), min(64, vector cores)) of them, the first
 * M % cores taking one row more (grouped_reduce_big_m_tiling.cpp, _impl.h Init). */
static int64_t big_m_cores(int64_t M)
{
    const int64_t cores = aclemu_soc_vector_cores() < 64 ? aclemu_soc_vector_cores() : 64;
    const int64_t need = (M + 63) / 64;
    return need < cores ? need : cores;
}

static gb_slice big_m_slice(int64_t M, int64_t core)
{
    const int64_t cores = big_m_cores(M), per = M / cores, rem = M - per * cores;
    return gb_slice_of(core * per + (core < rem ? core : rem), per + (core < rem), 64);
}

/* Rows [r0, r0 + rows) of the block's products for columns [c0, c0 + n): pw (dy * x_hat, by
 * ComputeGammaCommon: ((x - mean) * rstd) * dy) and pb (dy), at row stride COL_TILE; add:
 * added onto what is there (the fold block). */
static void gb_rows(const lnb35_run *R, int64_t r0, int64_t rows, int64_t c0, int64_t n,
                    float *pw, float *pb, float *bdy, float *bx, bool add)
{
    const lnb35_call *c = R->c;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t m = r0 + r;
        const float *dy = get_tile(row_base(c->dy, m), c->dy->dtype, &c->dy->inner, c0, n, bdy);
        float *ow = pw + r * COL_TILE, *ob = pb + r * COL_TILE;
        if (c->dw) {
            const float *x = get_tile(row_base(c->x, m), c->x->dtype, &c->x->inner, c0, n, bx);
            const float mean = R->mean[m], rstd = R->rstd[m];
            for (int64_t i = 0; i < n; i++) {
                const float p = ((x[i] - mean) * rstd) * dy[i];
                ow[i] = add ? ow[i] + p : p;
            }
        }
        if (c->db)
            for (int64_t i = 0; i < n; i++)
                ob[i] = add ? ob[i] + dy[i] : dy[i];
    }
}

/* Per-chunk buffers of the gradWeight pass (floats, offsets from the chunk's start). */
typedef struct {
    float *pw, *pb;   /* a block: mf x COL_TILE each */
    float *cw, *cb;   /* the binary counters: levels x COL_TILE each */
    float *bdy, *bx;  /* a row tile each */
} gb_bufs;

/* The slice's sums for columns [c0, c0 + n) (gradWeight into ow, gradBias into ob, those
 * requested): its row blocks, block b + Q folded into block b, each block's RA reduction
 * (grouped: the LessThanVL form), the blocks merged by the binary counter. */
static void gb_slice_sum(const lnb35_run *R, const gb_slice *s, bool grouped, int64_t c0,
                         int64_t n, const gb_bufs *B, float *ow, float *ob)
{
    const lnb35_call *c = R->c;
    const int64_t mmain = s->Q ? s->mf : s->rows; /* one block when Q == 0: all the rows */
    const int64_t loops = s->Q ? s->Q : 1;
    for (int64_t b = 0; b < loops; b++) {
        gb_rows(R, s->start + b * s->mf, mmain, c0, n, B->pw, B->pb, B->bdy, B->bx, false);
        const int64_t fold = !s->Q ? 0 : b + s->Q < s->whole ? s->mf
                             : b + s->Q == s->whole ? s->tail : 0;
        if (fold > 0)
            gb_rows(R, s->start + (b + s->Q) * s->mf, fold, c0, n, B->pw, B->pb, B->bdy, B->bx,
                    true);
        const int lvl = cache_level(b);
        if (c->db) {
            ra_reduce(B->pb, COL_TILE, n, mmain, grouped);
            cache_push(B->cb, COL_TILE, lvl, B->pb, n);
        }
        if (c->dw) {
            ra_reduce(B->pw, COL_TILE, n, mmain, grouped);
            cache_push(B->cw, COL_TILE, lvl, B->pw, n);
        }
    }
    const int64_t res = s->Q ? cache_level(s->Q - 1) : 0;
    if (c->dw)
        memcpy(ow, B->cw + res * COL_TILE, (size_t)n * sizeof(float));
    if (c->db)
        memcpy(ob, B->cb + res * COL_TILE, (size_t)n * sizeof(float));
}

/* The gradWeight pass's floats per chunk: a slice's buffers, and for BigM the cores'
 * results (stage 1's workspace rows for the tile). */
static int64_t gb_chunk_floats(int tmpl, int64_t M, int64_t *levels_out)
{
    gb_slice s = tmpl == LNB35_BIG_M ? big_m_slice(M, 0)
                                     : gb_slice_of(0, M, gamma_beta_m_factor(tmpl, M));
    const int64_t cores = tmpl == LNB35_BIG_M ? big_m_cores(M) : 0;
    *levels_out = s.levels; /* core 0 has the most rows */
    return (2 * s.mf + 2 * s.levels + 2 + 2 * cores + 2) * COL_TILE;
}

static void gb_tiles(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const lnb35_run *R = ctx;
    const lnb35_call *c = R->c;
    const int64_t M = c->M;
    int64_t levels;
    (void)gb_chunk_floats(R->tmpl, M, &levels);
    const int64_t mf = R->tmpl == LNB35_BIG_M ? 64 : gamma_beta_m_factor(R->tmpl, M);
    float *base = R->bufs + chunk * R->chunk_floats;
    gb_bufs B;
    B.pw = base;
    B.pb = B.pw + mf * COL_TILE;
    B.cw = B.pb + mf * COL_TILE;
    B.cb = B.cw + levels * COL_TILE;
    B.bdy = B.cb + levels * COL_TILE;
    B.bx = B.bdy + COL_TILE;
    float *ow = B.bx + COL_TILE, *ob = ow + COL_TILE; /* the outputs' tile */
    float *sw = ob + COL_TILE, *sb = sw + big_m_cores(M) * COL_TILE; /* BigM: per core */
    for (int64_t tile = begin; tile < end; tile++) {
        const int64_t c0 = tile * COL_TILE;
        const int64_t n = c->N - c0 < COL_TILE ? c->N - c0 : COL_TILE;
        if (R->tmpl == LNB35_BIG_M) {
            /* stage 1: each core's rows (64-column tiles: the LessThanVL form); stage 2 on
             * core 0: the cores' results, as rows, by one more RA reduction */
            const int64_t cores = big_m_cores(M);
            for (int64_t k = 0; k < cores; k++) {
                const gb_slice s = big_m_slice(M, k);
                gb_slice_sum(R, &s, true, c0, n, &B, sw + k * COL_TILE, sb + k * COL_TILE);
            }
            if (c->dw) {
                ra_reduce(sw, COL_TILE, n, cores, true);
                memcpy(ow, sw, (size_t)n * sizeof(float));
            }
            if (c->db) {
                ra_reduce(sb, COL_TILE, n, cores, true);
                memcpy(ob, sb, (size_t)n * sizeof(float));
            }
        } else {
            const gb_slice s = gb_slice_of(0, M, mf);
            gb_slice_sum(R, &s, ra_grouped(gamma_beta_nfactor(R->tmpl, &s)), c0, n, &B, ow, ob);
        }
        if (c->dw)
            put_tile(view_base(c->dw), c->dw->dtype, ACLEMU_TIES_EVEN, &c->dw->inner, c0, n, ow);
        if (c->db)
            put_tile(view_base(c->db), c->db->dtype, ACLEMU_TIES_EVEN, &c->db->inner, c0, n, ob);
    }
}

/* ---- the call ------------------------------------------------------------------------------- */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

bool lnb35_run_kernel(const lnb35_call *c, int tmpl)
{
    const int64_t M = c->M, N = c->N;
    const int64_t by_work = M * N / ROW_ELEMS > 1 ? M * N / ROW_ELEMS : 1;
    const int64_t row_chunks = c->dx ? min64(min64(M, MAX_CHUNKS), by_work) : 0;
    const big_n_split split = tmpl == LNB35_BIG_N ? big_n_split_of(M, N) : (big_n_split){0};
    const int64_t row_floats = 4 * N + DX_TILE + split.cores;
    const int64_t tiles = (N + COL_TILE - 1) / COL_TILE;
    const bool gb = c->dw || c->db;
    const int64_t gb_chunks = gb ? min64(min64(tiles, MAX_CHUNKS), by_work) : 0;
    int64_t levels;
    const int64_t gb_floats = gb_chunk_floats(tmpl, M, &levels);
    const int64_t stats = 2 * M;
    float *buf = malloc((size_t)(stats + row_chunks * row_floats + gb_chunks * gb_floats) *
                        sizeof(float));
    if (!buf)
        return false;
    lnb35_run R = {.c = c, .tmpl = tmpl, .row_block = row_block_of(tmpl, M, N), .split = split};
    R.mean = get_tile(view_base(c->mean), c->mean->dtype, &c->mean->inner, 0, M, buf);
    R.rstd = get_tile(view_base(c->rstd), c->rstd->dtype, &c->rstd->inner, 0, M, buf + M);
    if (c->dx) {
        R.bufs = buf + stats;
        R.chunk_floats = row_floats;
        aclemu_parallel_for(M, row_chunks, dx_rows, &R);
    }
    if (gb) {
        R.bufs = buf + stats + row_chunks * row_floats;
        R.chunk_floats = gb_floats;
        aclemu_parallel_for(tiles, gb_chunks, gb_tiles, &R);
    }
    free(buf);
    return true;
}

/* For the tests (not a CANN symbol): the arch35 tiling of an M x N call; out = {template
 * (LNB35_*), gradWeight's rows per block (mFactor; BigM: core 0's), its basicBlockLoop, the
 * RA reduction's columns (gammaBetaNfactor; BigM 64), gradInput's column block, its
 * basicBlockLoop (BigN: core 0's), the cores (BigM: gradWeight's; BigN: gradInput's; else
 * 0), BigN's cross-core RA columns (backwardMfactorBlockAligned; else 0)}. */
ACLEMU_EXPORT void aclemu_layer_norm_backward_tiling_arch35(int64_t M, int64_t N, int64_t out[8])
{
    const int tmpl = lnb35_template(M, N);
    const bool big_m = tmpl == LNB35_BIG_M, big_n = tmpl == LNB35_BIG_N;
    const gb_slice s = big_m ? big_m_slice(M, 0) : gb_slice_of(0, M, gamma_beta_m_factor(tmpl, M));
    const int64_t nf = row_block_of(tmpl, M, N);
    const big_n_split split = big_n ? big_n_split_of(M, N) : (big_n_split){0};
    const int64_t row = big_n ? split.per + (split.rem > 0) : N; /* core 0's columns */
    out[0] = tmpl;
    out[1] = s.mf;
    out[2] = s.Q;
    out[3] = big_m ? 64 : gamma_beta_nfactor(tmpl, &s);
    out[4] = nf;
    out[5] = nr_pow2_below((row + nf - 1) / nf);
    out[6] = big_m ? big_m_cores(M) : split.cores;
    out[7] = split.dim_a;
}
