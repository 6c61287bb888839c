/*
 * aclnnLayerNormBackward on Ascend 950: the arch35 LayerNormGradV3 Recompute template, in
 * its own order of float32 operations (hicann/ops-nn norm/layer_norm_grad_v3:
 * op_host/layer_norm_grad_v3_recompute_tiling.cpp, op_kernel/arch35/
 * layer_norm_grad_v3_recompute_{backward,gamma_beta}_impl.h and _base.h; the gradWeight/
 * gradBias row reduction is AscendC's ReduceSum<float, Pattern::Reduce::RA, true>, public in
 * asc-devkit impl/adv_api/detail/reduce/reduce_common_ra_reuse_align_3510_impl.h).
 * docs/emulator.md, aclnnLayerNormBackward "Ascend 950 bit for bit", says it in words.
 *
 * Design, and why:
 * - gradInput: rows are independent on the device (each core takes whole rows), so the rows
 *   are split over the thread pool; each row's two sums are the kernel's own (its column
 *   blocks of nfactor, the fold of block b + Q into block b, LastReduceSum per block, the
 *   blocks' results merged by the binary counter of UpdateCache), so the split changes no bit.
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
#define COL_TILE 128            /* columns per tile of the gradWeight pass (any width: columns
                                   are independent; a multiple of 64 keeps tiles vector-sized) */
#define ROW_ELEMS (64 * 1024)   /* elements per thread chunk of the gradInput pass, at least */
#define MAX_CHUNKS 16           /* thread chunks per pass (each has its own buffers) */
#define MAX_LEVELS 64           /* binary counter levels (log2 of the blocks, + 1) */
#define DX_TILE 512             /* gradInput columns stored at a time */

/* ---- the tiling's integer helpers (arch35/layer_norm_grad_v3_base.h) ---------------------- */

/* FindNearestPower2: the largest power of two strictly below v (0 for v <= 1). */
static int64_t power2_below(int64_t v)
{
    if (v <= 1)
        return 0;
    int64_t p = 1;
    while (p * 2 < v)
        p *= 2;
    return p;
}

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
 * (the last maybe partial), F whole ones and P = power2_below(K): register j < F - P plus
 * register j + P, Reduced; the register F - P with the partial register's lanes added
 * (merging); registers K - P .. P - 1 alone; the P results, in register order, by
 * reduce_small. */
static float last_reduce_sum(const float *v, int64_t r)
{
    if (r <= 2 * VL)
        return reduce_small(v, r);
    const int64_t K = (r + VL - 1) / VL, F = r / VL, P = power2_below(K);
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

/* The row's column blocks (recompute_tiling.cpp BackwardKernelTiling, recompute_backward_
 * impl.h Process): blocks of nf = min(6144, N rounded up to 64) columns; with B blocks
 * (the last maybe partial) and Q = power2_below(B), block b < Q gets block b + Q added
 * elementwise (over that block's columns), then its LastReduceSum; the Q results merged by
 * the binary counter. One block (B = 1): the LastReduceSum of the whole row. Overwrites v. */
static float row_sum(float *v, int64_t N)
{
    const int64_t nf = N < BACKWARD_N_FACTOR ? (N + VL - 1) / VL * VL : BACKWARD_N_FACTOR;
    const int64_t whole = N / nf, blocks = (N + nf - 1) / nf, tail = N - whole * nf;
    const int64_t Q = power2_below(blocks);
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

/* ---- gradInput ------------------------------------------------------------------------------ */

typedef struct {
    const lnb35_call *c;
    const float *mean, *rstd; /* M floats each */
    float *bufs;              /* per chunk: the pass's buffers */
    int64_t chunk_floats;
    int64_t nfactor;          /* gradWeight: the tiling's gammaBetaNfactor */
} lnb35_run;

static void dx_rows(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const lnb35_run *R = ctx;
    const lnb35_call *c = R->c;
    const int64_t N = c->N;
    float *g = R->bufs + chunk * R->chunk_floats, *gx = g + N, *bdy = gx + N, *bx = bdy + N;
    float *bdx = bx + N;
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
        const float s1 = row_sum(g, N), s2 = row_sum(gx, N);
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

/* The gradWeight tiling's row blocks (recompute_tiling.cpp GammaBetaKernelTiling). */
typedef struct {
    int64_t mf;        /* rows per block: min(128, M) */
    int64_t whole;     /* whole blocks (mLoop) */
    int64_t tail;      /* rows of the partial last block (mTail) */
    int64_t Q;         /* basicBlockLoop: power2_below(blocks) */
    int64_t levels;    /* cacheBufferCount */
    int64_t nfactor;   /* gammaBetaNfactor: the RA reduction's column count */
} gb_tiling;

static gb_tiling gb_tiling_of(int64_t M, int64_t N)
{
    (void)N;
    gb_tiling t;
    t.mf = M < GAMMA_BETA_M_FACTOR ? M : GAMMA_BETA_M_FACTOR;
    t.whole = M / t.mf;
    const int64_t blocks = (M + t.mf - 1) / t.mf;
    t.tail = M - t.whole * t.mf;
    t.Q = power2_below(blocks);
    t.levels = 1;
    if (t.Q > 0)
        for (t.levels = 0; (t.Q >> t.levels) != 0; t.levels++)
            ;
    const int64_t nmax = (UB_FLOATS(aclemu_soc_ub_bytes()) - 2 * t.mf) /
                         (6 * t.mf + 3 + 2 * t.levels);
    t.nfactor = nmax / GAMMA_BETA_N_BASE * GAMMA_BETA_N_BASE;
    return t;
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

static void gb_tiles(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const lnb35_run *R = ctx;
    const lnb35_call *c = R->c;
    const gb_tiling t = gb_tiling_of(c->M, c->N);
    const int64_t blk = t.mf * COL_TILE, lv = t.levels * COL_TILE;
    float *pw = R->bufs + chunk * R->chunk_floats, *pb = pw + blk;
    float *cw = pb + blk, *cb = cw + lv, *bdy = cb + lv, *bx = bdy + COL_TILE;
    const bool grouped = t.nfactor == VL; /* ReduceRAImpl: dimA <= 64, LessThanVL */
    const int64_t mmain = t.Q ? t.mf : c->M; /* one block when Q == 0: all M rows */
    const int64_t loops = t.Q ? t.Q : 1;
    for (int64_t tile = begin; tile < end; tile++) {
        const int64_t c0 = tile * COL_TILE;
        const int64_t n = c->N - c0 < COL_TILE ? c->N - c0 : COL_TILE;
        for (int64_t b = 0; b < loops; b++) {
            gb_rows(R, b * t.mf, mmain, c0, n, pw, pb, bdy, bx, false);
            const int64_t fold = !t.Q ? 0 : b + t.Q < t.whole ? t.mf
                                 : b + t.Q == t.whole ? t.tail : 0;
            if (fold > 0)
                gb_rows(R, (b + t.Q) * t.mf, fold, c0, n, pw, pb, bdy, bx, true);
            const int lvl = cache_level(b);
            if (c->db) {
                ra_reduce(pb, COL_TILE, n, mmain, grouped);
                cache_push(cb, COL_TILE, lvl, pb, n);
            }
            if (c->dw) {
                ra_reduce(pw, COL_TILE, n, mmain, grouped);
                cache_push(cw, COL_TILE, lvl, pw, n);
            }
        }
        const int64_t res = t.Q ? cache_level(t.Q - 1) : 0;
        if (c->dw)
            put_tile(view_base(c->dw), c->dw->dtype, ACLEMU_TIES_EVEN, &c->dw->inner, c0, n,
                     cw + res * COL_TILE);
        if (c->db)
            put_tile(view_base(c->db), c->db->dtype, ACLEMU_TIES_EVEN, &c->db->inner, c0, n,
                     cb + res * COL_TILE);
    }
}

/* ---- the call ------------------------------------------------------------------------------- */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

bool lnb35_recompute(const lnb35_call *c)
{
    const int64_t M = c->M, N = c->N;
    const int64_t row_chunks = c->dx ? min64(min64(M, MAX_CHUNKS),
                                             M * N / ROW_ELEMS > 1 ? M * N / ROW_ELEMS : 1)
                                     : 0;
    const int64_t row_floats = 4 * N + DX_TILE;
    const gb_tiling t = gb_tiling_of(M, N);
    const int64_t tiles = (N + COL_TILE - 1) / COL_TILE;
    const bool gb = c->dw || c->db;
    const int64_t gb_chunks = gb ? min64(min64(tiles, MAX_CHUNKS),
                                         M * N / ROW_ELEMS > 1 ? M * N / ROW_ELEMS : 1)
                                 : 0;
    const int64_t gb_floats = (2 * t.mf + 2 * t.levels + 2) * COL_TILE;
    const int64_t stats = 2 * M;
    float *buf = malloc((size_t)(stats + row_chunks * row_floats + gb_chunks * gb_floats) *
                        sizeof(float));
    if (!buf)
        return false;
    lnb35_run R = {.c = c, .nfactor = t.nfactor};
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
 * (LNB35_*), gradWeight rows per block (mFactor), its basicBlockLoop, its nFactor (the RA
 * reduction's columns), gradInput's column block (nfactor), its basicBlockLoop}. */
ACLEMU_EXPORT void aclemu_layer_norm_backward_tiling_arch35(int64_t M, int64_t N, int64_t out[6])
{
    const gb_tiling t = gb_tiling_of(M, N);
    const int64_t nf = N < BACKWARD_N_FACTOR ? (N + VL - 1) / VL * VL : BACKWARD_N_FACTOR;
    out[0] = lnb35_template(M, N);
    out[1] = t.mf;
    out[2] = t.Q;
    out[3] = t.nfactor;
    out[4] = nf;
    out[5] = power2_below((N + nf - 1) / nf);
}
