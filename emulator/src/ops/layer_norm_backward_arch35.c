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
#include "tensor_view.h"

#define INLINE TV_INLINE

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
#define COL_TILE 512            /* columns per tile of the gradWeight pass, at most (any width:
                                   columns are independent; a multiple of 64 keeps tiles
                                   vector-sized). 512: a row's run of a tile is 2 KiB, which the
                                   prefetchers follow, where 128 left them idle */
#define NARROW_TILE 128         /* the tile when N < 2 COL_TILE: enough tiles for the threads */
#define PF_ROWS 4               /* the gradWeight pass prefetches its tile this many rows on */
#define ROW_ELEMS (64 * 1024)   /* elements per thread chunk of the gradInput pass, at least */
#define MAX_CHUNKS 16           /* thread chunks per pass (each has its own buffers) */
#define MAX_LEVELS 64           /* binary counter levels (log2 of the blocks, + 1) */
#define DX_TILE 512             /* gradInput columns stored at a time */
/* A FLOAT gradInput at least this large (bytes) is written with non-temporal stores: far
 * larger than the cores' caches, it would only evict the rows the pass reads back, and its
 * read-for-ownership adds to the memory traffic (as layer_norm_backward.c's row kernel) */
#define DX_STREAM_BYTES (8.0 * 1024 * 1024)

/* ---- the tiling's integer helpers (arch35/layer_norm_grad_v3_base.h) ---------------------- */

int lnb35_template(int64_t M, int64_t N)
{
    /* grouped_reduce_big_m_tiling.cpp and _big_n_tiling.cpp IsCapable; Recompute always is */
    if (M > 4096 && N < 512)
        return LNB35_BIG_M;
    if (M < 512 && N > 8192)
        return LNB35_BIG_N;
    return LNB35_RECOMPUTE;
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

/* ---- a call's run ---------------------------------------------------------------------- */

enum { LNB35_PASS_DX, LNB35_PASS_GB };

typedef struct {
    const lnb35_call *c;
    const float *mean, *rstd; /* M floats each */
    float *bufs;              /* per chunk: the pass's buffers */
    int64_t chunk_floats;
    int tmpl;                 /* LNB35_RECOMPUTE, LNB35_BIG_M or LNB35_BIG_N */
    int pass;                 /* LNB35_PASS_*: which the thread pool runs */
    int kind;                 /* how gradOut/input are read (row_vectors.h): LD_F16/LD_BF16,
                                 contiguous 16-bit rows in place; LD_F32, float tiles (FLOAT
                                 contiguous in place, else converted by get_tile) */
    int dx_kind;              /* gradInput's kind when the loop stores it (contiguous, no
                                 separate rounding), else -1 (a float tile, put_tile) */
    bool dx_stream;           /* gradInput large and FLOAT: stored non-temporally */
    int64_t row_block;        /* gradInput's column block (row_sum's nf) */
    int64_t col_tile;         /* gradWeight/gradBias columns per tile, at most COL_TILE */
    big_n_split split;        /* BigN: gradInput's cores */
} lnb35_run;

/* ---- gradWeight / gradBias ---------------------------------------------------------------- */

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

/* Per-chunk buffers of the gradWeight pass (floats, offsets from the chunk's start). */
typedef struct {
    float *pw, *pb;   /* a block: mf x COL_TILE each */
    float *cw, *cb;   /* the binary counters: levels x COL_TILE each */
    float *bdy, *bx;  /* a row tile each */
} gb_bufs;

/* The gradWeight rows of Recompute and BigN: one slice of all M rows, min(128, M) per block
 * (BigN: min(64, M)). */
static gb_slice whole_slice(int tmpl, int64_t M)
{
    const int64_t mf = tmpl == LNB35_BIG_N ? BIG_N_GAMMA_BETA_M_FACTOR : GAMMA_BETA_M_FACTOR;
    return gb_slice_of(0, M, M < mf ? M : mf);
}

/* The gradWeight pass's floats per chunk: a slice's buffers, and for BigM the cores'
 * results (stage 1's workspace rows for the tile). */
static int64_t gb_chunk_floats(int tmpl, int64_t M)
{
    const gb_slice s = tmpl == LNB35_BIG_M ? big_m_slice(M, 0) : whole_slice(tmpl, M);
    const int64_t cores = tmpl == LNB35_BIG_M ? big_m_cores(M) : 0;
    return (2 * s.mf + 2 * s.levels + 2 + 2 * cores + 2) * COL_TILE; /* core 0 has the most rows */
}

/* Chunk chunk's buffers of the gradWeight pass: a block's products, the binary counters, a
 * row tile of each input, the outputs' tile, and BigM's per-core results. */
static void gb_chunk_layout(const lnb35_run *R, int64_t chunk, gb_bufs *B, float **ow,
                            float **ob, float **sw, float **sb)
{
    const int64_t M = R->c->M;
    const gb_slice s = R->tmpl == LNB35_BIG_M ? big_m_slice(M, 0) : whole_slice(R->tmpl, M);
    B->pw = R->bufs + chunk * R->chunk_floats;
    B->pb = B->pw + s.mf * COL_TILE;
    B->cw = B->pb + s.mf * COL_TILE;
    B->cb = B->cw + s.levels * COL_TILE;
    B->bdy = B->cb + s.levels * COL_TILE;
    B->bx = B->bdy + COL_TILE;
    *ow = B->bx + COL_TILE;
    *ob = *ow + COL_TILE;
    *sw = *ob + COL_TILE;
    *sb = *sw + (R->tmpl == LNB35_BIG_M ? big_m_cores(M) : 0) * COL_TILE;
}

/* The hot loops (layer_norm_backward_arch35_rows.h), once per x86-64 level, the best the CPU
 * runs picked at first use (row_levels.h: ROW_KERNEL). */
#define ROWS_HEADER "layer_norm_backward_arch35_rows.h"
#include "row_levels.h"

/* ---- the call ------------------------------------------------------------------------------- */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

bool lnb35_run_kernel(const lnb35_call *c, int tmpl)
{
    const int64_t M = c->M, N = c->N;
    const int64_t by_work = M * N / ROW_ELEMS > 1 ? M * N / ROW_ELEMS : 1;
    const int64_t row_chunks = c->dx ? min64(min64(M, MAX_CHUNKS), by_work) : 0;
    const big_n_split split = tmpl == LNB35_BIG_N ? big_n_split_of(M, N) : (big_n_split){0};
    const int64_t row_floats = 4 * N + DX_TILE + split.cores;
    const int64_t col_tile = N >= 2 * COL_TILE ? COL_TILE : NARROW_TILE;
    const int64_t tiles = (N + col_tile - 1) / col_tile;
    const bool gb = c->dw || c->db;
    const int64_t gb_chunks = gb ? min64(min64(tiles, MAX_CHUNKS), by_work) : 0;
    const int64_t gb_floats = gb_chunk_floats(tmpl, M);
    const int64_t stats = 2 * M;
    float *buf = malloc((size_t)(stats + row_chunks * row_floats + gb_chunks * gb_floats) *
                        sizeof(float));
    if (!buf)
        return false;
    /* 16-bit gradOut and input in contiguous rows are converted in registers */
    const bool rows16 = c->dy->dtype == c->x->dtype && lay_unit(&c->dy->inner) &&
                        lay_unit(&c->x->inner);
    lnb35_run R = {.c = c, .tmpl = tmpl, .row_block = row_block_of(tmpl, M, N),
                   .col_tile = col_tile, .split = split,
                   .kind = rows16 && c->x->dtype == ACL_FLOAT16 ? LD_F16
                           : rows16 && c->x->dtype == ACL_BF16  ? LD_BF16
                                                                : LD_F32};
    const aclDataType ddt = c->dx ? c->dx->dtype : ACL_FLOAT;
    R.dx_kind = !c->dx || c->dx_round || !lay_unit(&c->dx->inner) ? -1
                : ddt == ACL_FLOAT16 ? LD_F16 : ddt == ACL_BF16 ? LD_BF16
                : ddt == ACL_FLOAT ? LD_F32 : -1;
    R.dx_stream = R.dx_kind == LD_F32 && (double)M * (double)N * 4 >= DX_STREAM_BYTES;
    R.mean = get_tile(view_base(c->mean), c->mean->dtype, &c->mean->inner, 0, M, buf);
    R.rstd = get_tile(view_base(c->rstd), c->rstd->dtype, &c->rstd->inner, 0, M, buf + M);
    if (c->dx) {
        R.bufs = buf + stats;
        R.chunk_floats = row_floats;
        R.pass = LNB35_PASS_DX;
        aclemu_parallel_for(M, row_chunks, ROW_KERNEL(rows_body), &R);
    }
    if (gb) {
        R.bufs = buf + stats + row_chunks * row_floats;
        R.chunk_floats = gb_floats;
        R.pass = LNB35_PASS_GB;
        aclemu_parallel_for(tiles, gb_chunks, ROW_KERNEL(rows_body), &R);
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
    const gb_slice s = big_m ? big_m_slice(M, 0) : whole_slice(tmpl, M);
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
