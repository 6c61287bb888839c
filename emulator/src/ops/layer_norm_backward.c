/*
 * aclnnLayerNormBackward for the CPU emulator: phase-one validation (the vendor's order and
 * codes: docs/emulator.md, "Phase-one checks"), the executor's launch (memory checks, pins,
 * stream submit) and the kernel.
 *
 * Kernel design, and why:
 * - The numbers are the Atlas A2/A3 LayerNormGradV3 kernel's (hicann/ops-nn norm/
 *   layer_norm_grad_v3: op_host's tilings choose a template, op_kernel's headers compute;
 *   docs/emulator.md, aclnnLayerNormBackward "Numbers"): lnb_tiling() ports the template
 *   choice and the parameters that change a bit: the rows per core block (ceil(M / vector
 *   cores)) and the Workspace template's column chunk (from the part's UB size). Each block
 *   accumulates its gradWeight/gradBias partial sums, in row order from +0, into a slice of
 *   the workspace, which is added to the blocks' sum in block order as soon as the blocks
 *   before it are (lnb_block_done). So the result is bit-identical whatever the thread count
 *   or the chunk -> thread schedule.
 * - Row sums, per template: SingleRead and Workspace reduce like AscendC's counter-mode
 *   ReduceSum (one 64-lane tree per repeat of 64 floats, the repeats added in order from +0;
 *   Workspace per column chunk, the chunks' sums added as scalars from +0); Common keeps 64
 *   lane accumulators over the row's 64-column blocks and folds them with the same tree. The
 *   tree is nr_fold_vector_lanes' (norm_rows.h); the row kernel evaluates it with vector
 *   shuffles, level for level, so it is the same bits.
 * - The Transpose template (N <= 64 unaligned) lays a core's rows out across 16 lines and
 *   reduces across rows: its own scalar kernel, layer_norm_backward_transpose.h.
 * - Each row is processed in tiles of TILE columns (a multiple of 64, so a tile never splits
 *   a repeat), at most two passes over the row (pass 1: row sums and partials; pass 2:
 *   gradInput). -std=c11 implies -ffp-contract=off, so the x86 clones (AVX-512/AVX2/baseline)
 *   give the same bits.
 * - gradOut/input rows that are contiguous in the normalized dims are read in place, FLOAT16
 *   and BF16 ones converted in registers as they are loaded (layer_norm_backward_rows.h: one
 *   copy of the row loops per x86-64 level, AVX-512 / AVX2+F16C / baseline, picked at run
 *   time), and a contiguous gradInput of input's dtype is converted as it is stored: each
 *   pass reads the data once, with no conversion buffers (a buffered version spent half its
 *   time on them). Any other layout or dtype mix is converted tile by tile into stack buffers
 *   (convert.h), with the same summation order, so a strided view gives the same bits as a
 *   contiguous copy (tests/test_kernel_clones.py checks both and every level).
 * - Pass 1 prefetches the rows ahead (PF_BYTES); pass 2 reads the row back from cache. A
 *   gradInput far larger than the caches is written with non-temporal stores
 *   (LNB_STREAM_BYTES). Pass 2 runs a row upwards or downwards, whichever keeps its stores
 *   from aliasing gradOut's and input's loads modulo 4 KiB (row_vectors.h row_store_order:
 *   gradInput placed 128 bytes past input took 2.4x the CPU time); it changes no bit.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "phase_one.h"
#include "convert.h"
#include "exec_workspace.h"
#include "half.h"
#include "layer_norm_backward_arch35.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_layer_norm_backward.h"

#define P1 "aclnnLayerNormBackwardGetWorkspaceSize"
#define P2 "aclnnLayerNormBackward"

#define MAX_RANK TV_MAX_RANK
#define INLINE TV_INLINE
#define REPEAT NR_VECTOR_LANES /* floats per vector repeat: one lane tree of a row sum */
#define TILE 512            /* columns per tile; a multiple of REPEAT */
#define REDUCE_COLS 256     /* columns per chunk of the final reduction */
/* Elements per thread chunk of the row kernel, at least: a chunk is a run of whole core
 * blocks, so a small call runs on the calling thread (waking a kernel thread costs more
 * than its rows: measured +5 us on a 2 x 8 call when each of its two blocks was a chunk). */
#define CHUNK_ELEMS (64 * 1024)
#define MAX_REDUCE_CHUNKS 64

/* x86-64 builds carry AVX-512 and AVX2 clones of the reduction, picked at load time. They
 * are bit-identical to the baseline (see above; tests/test_kernel_clones.py checks it). The
 * AVX-512 clone is x86-64-v4, not plain avx512f: without AVX512VL the 256-bit loops gcc
 * emits get only 16 vector registers and spill (measured: 1.25x slower on bf16). Off under
 * the sanitizers (ifunc resolvers run before their runtime is up) or with -DACLEMU_NO_CLONES.
 * The row loops have their own copies per level (below). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(ACLEMU_NO_CLONES)
#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define HOT
#endif

/* ---- descriptors (tensor views: tensor_view.h) ------------------------------------------- */

enum { T_DY, T_X, T_MEAN, T_RSTD, T_W, T_B, T_DX, T_DW, T_DB, T_COUNT };
static const char *const TNAME[T_COUNT] = {
    "gradOut", "input", "mean", "rstd", "weightOptional", "biasOptional",
    "gradInputOut", "gradWeightOut", "gradBiasOut",
};

/* The Atlas A2/A3 LayerNormGradV3 templates, by their tiling keys' hundreds digit
 * (op_host/layer_norm_grad_v3_tiling.h LNGTemplateKey). */
enum { LNB_SINGLE_READ = 1, LNB_WORKSPACE = 2, LNB_TRANSPOSE = 3, LNB_COMMON = 4 };

/* What the tiling decides that changes a bit (lnb_tiling). */
typedef struct {
    int tmpl;             /* LNB_*: the template the device runs */
    bool lanes64;         /* row sums: 64 lane accumulators, one tree (Common); else a
                             counter-mode ReduceSum per column chunk */
    bool divide;          /* the row means: sum / N (Workspace); else sum * (1.0f / N) */
    int64_t chunk_cols;   /* columns per counter-mode ReduceSum (Workspace: ubFormer) */
    int64_t col_align;    /* colAlignV: N rounded up to 8 (Common's padded lanes) */
    int64_t block_rows;   /* rows per core block: blockFormer = ceil(M / cores) */
    int64_t nblocks;      /* core blocks: blockNum = ceil(M / blockFormer) */
    int64_t ub_rows;      /* Transpose: rows per UB loop (ubFormer) */
    int tmpl35;           /* Ascend 950: its arch35 template (LNB35_*); 0 on other parts */
} lnb_tiling;

typedef struct {
    tdesc t[T_COUNT];
    bool mask[3];
    bool parts;           /* gradWeight or gradBias requested: per-block partials needed */
    uint32_t bf16_away;   /* 1: gradInput rounds to BF16 with ties away from zero */
    bool dx_round;        /* gradInput needs round_grad_input before its store */
    aclemu_ties dx_ties;  /* how gradInput's store breaks BF16 ties */
    int64_t M, N;
    lnb_tiling tiling;
    uint64_t ws_size;     /* what phase one reports: the device's (lnb_device_workspace) */
    uint64_t scratch;     /* bytes of it the emulator's kernel uses (its blocks' partials) */
} lnb_payload;

/* One launch: owns a copy of the payload (a repeatable executor may be destroyed while the
 * task is still queued), the pins, and the weight row. */
typedef struct {
    lnb_payload p;
    float *ws;            /* workspace: 2 * N floats (gradWeight, gradBias) per block's
                             partials, then per ring slot (LNB_RING), then acc */
    float *acc;           /* the blocks' partials added in block order (lnb_block_done) */
    unsigned char *done;  /* per block: its partials are complete (atomic) */
    unsigned char *ringed;/* per block: its partials are in ring slot b % LNB_RING */
    int64_t folded;       /* blocks added to acc so far (written under fold_lock; atomic) */
    int fold_lock;        /* held by the thread adding blocks to acc (atomic) */
    float *wbuf;          /* weight converted to float (or ones), when not usable in place */
    float *own_ws;        /* the partials' own buffer when the device's workspace is smaller */
    const float *w;       /* the weight row gradInput reads (NULL when not requested) */
    int kind;             /* how the row kernel reads gradOut/input (LD_*) */
    bool dx_fused;        /* the row kernel's pass 2 stores gradInput itself */
    bool dx_stream;       /* ... with non-temporal stores (gradInput much larger than cache) */
    void *pins[T_COUNT + 1];
    int npins;
} lnb_task;

/* ---- the row kernel ------------------------------------------------------------------------- */

/* The device computes gradInput in float32, rounds it to input's dtype (its kernel's output)
 * and casts that to gradInputOut's dtype. This is the first rounding, in place on a tile of
 * float results; the cast is the tile's store. FLOAT16 rounds to nearest even; BF16 to
 * nearest with ties away from zero (away = 1: the Atlas A2/A3 kernel's CAST_ROUND) or to even
 * (away = 0); NaN stays NaN (quieted); the same bits on every clone and conversion path
 * (convert.h). Identity for FLOAT. */
static inline void round_grad_input(float *restrict v, int64_t n, aclDataType dt, uint32_t away)
{
    aclemu_round_floats(dt, away ? ACLEMU_TIES_AWAY : ACLEMU_TIES_EVEN, v, n);
}

/* Elements [m0, m0 + cnt) of a flat vector (mean, rstd) as floats, like get_tile. Loaded a
 * group of rows at a time: a per-row load was an out-of-line call costing ~14% of a bf16 run
 * with N = 1024. */
#define STAT_ROWS 64
static inline const float *stats_at(const tdesc *d, int64_t m0, int64_t cnt, float *buf)
{
    return get_tile(d->data + d->offset * (int64_t)d->es, d->dtype, &d->inner, m0, cnt, buf);
}

/* How the row kernel reads gradOut/input (row_vectors.h's element kinds): LD_F16/LD_BF16,
 * contiguous 16-bit rows converted in registers; LD_F32, float tiles (FLOAT read in place when
 * contiguous, anything else converted by get_tile). */
#include "row_vectors.h"

/* Pass 1 prefetches gradOut/input this many bytes ahead of the tile it reads: the next rows
 * when N is small. Without it a FLOAT16 call spent ~30% more CPU time waiting for memory
 * (measured 2048 vs 0, 1024 and 4096: 2048 and 4096 alike, 1024 and 0 slower). */
#define PF_BYTES 2048
/* A gradInput at least this large (bytes) is written with non-temporal stores: far larger than
 * the cores' own caches, it would only evict the rows pass 2 reads back, and its
 * read-for-ownership adds a quarter to a FLOAT call's memory traffic (measured: CPU time of
 * a FLOAT [512,16384] call -35%, FLOAT16 -5%). */
#define LNB_STREAM_BYTES (8.0 * 1024 * 1024)

/* Ring slots for the blocks' partials: block b writes slot b % LNB_RING when block
 * b - LNB_RING is already added to acc (lnb_block_parts), so the partials mostly stay in
 * cache and memory sees a few slots, not one per block (measured: 48 blocks of 128 KiB each
 * written back and read again cost ~6% of a FLOAT [512,16384] call). */
#define LNB_RING 4

/* Where block b writes its partials: a ring slot when free, else its own. */
static float *lnb_block_parts(lnb_task *T, int64_t b)
{
    const int64_t nb = T->p.tiling.nblocks, n2 = 2 * T->p.N;
    if (__atomic_load_n(&T->folded, __ATOMIC_SEQ_CST) > b - LNB_RING) {
        T->ringed[b] = 1;
        return T->ws + (nb + b % LNB_RING) * n2;
    }
    return T->ws + b * n2;
}

/* acc (+)= one block's partials: the first block's onto +0 (the device's zeroed output). */
HOT static void fold_block(float *restrict acc, const float *restrict part, int64_t n,
                           bool first)
{
    if (first)
        for (int64_t i = 0; i < n; i++)
            acc[i] = 0.0f + part[i];
    else
        for (int64_t i = 0; i < n; i++)
            acc[i] += part[i];
}

/* The row kernel's last step for block b: marks its partials complete and adds every
 * complete block not yet added to acc, in block order. So the sum is the device's (block
 * order) whatever thread finishes what when, and a block is mostly added by the thread that
 * just wrote it, from its cache. One thread adds at a time; one that finds the lock taken
 * leaves its block to the holder, which looks again after letting go. */
static void lnb_block_done(lnb_task *T, int64_t b)
{
    const int64_t nb = T->p.tiling.nblocks, n2 = 2 * T->p.N;
    __atomic_store_n(&T->done[b], 1, __ATOMIC_SEQ_CST);
    for (;;) {
        if (__atomic_exchange_n(&T->fold_lock, 1, __ATOMIC_SEQ_CST))
            return;
        int64_t f = T->folded;
        for (; f < nb && __atomic_load_n(&T->done[f], __ATOMIC_SEQ_CST); f++) {
            const int64_t slot = T->ringed[f] ? nb + f % LNB_RING : f;
            fold_block(T->acc, T->ws + slot * n2, n2, f == 0);
            __atomic_store_n(&T->folded, f + 1, __ATOMIC_SEQ_CST); /* frees f's ring slot */
        }
        __atomic_store_n(&T->fold_lock, 0, __ATOMIC_SEQ_CST);
        if (!(f < nb && __atomic_load_n(&T->done[f], __ATOMIC_SEQ_CST)))
            return;
    }
}

/* Columns [c, c + n) of one row of gradOut (rdy) and input (rx), as the row kernel reads them:
 * contiguous 16-bit rows (kind LD_F16, LD_BF16) in place, converted in registers as loaded;
 * anything else (kind LD_F32) through get_tile, as floats in place or in bdy, bx. */
static inline void row_tiles(const tdesc *dy, const tdesc *x, const char *rdy, const char *rx,
                             int kind, int64_t c, int64_t n, float *bdy, float *bx,
                             const void **tdy, const void **tx)
{
    if (kind == LD_F32) {
        *tdy = get_tile(rdy, dy->dtype, &dy->inner, c, n, bdy);
        *tx = get_tile(rx, x->dtype, &x->inner, c, n, bx);
    } else {
        *tdy = rdy + c * 2;
        *tx = rx + c * 2;
    }
}

/* The row kernel (layer_norm_backward_rows.h), once per x86-64 level, the best the CPU runs
 * picked at first use (row_levels.h: ROW_KERNEL). */
#define ROWS_HEADER "layer_norm_backward_rows.h"
#include "row_levels.h"

/* The Transpose template's kernel (N <= 64 unaligned): lnbt_blocks_body, and its tiling's
 * lnb_transpose_ub_rows. */
#include "layer_norm_backward_transpose.h"

/* gradWeight/gradBias columns [begin, end): the blocks' sums (acc) to the outputs. */
static void reduce_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    (void)chunk;
    const lnb_task *T = ctx;
    const lnb_payload *P = &T->p;
    const int64_t N = P->N;
    for (int which = 0; which < 2; which++) {
        const tdesc *o = &P->t[which == 0 ? T_DW : T_DB];
        if (!P->mask[1 + which])
            continue;
        for (int64_t c = begin; c < end; c += TILE) {
            int64_t n = end - c < TILE ? end - c : TILE;
            put_tile(o->data + o->offset * (int64_t)o->es, o->dtype, ACLEMU_TIES_EVEN,
                     &o->inner, c, n, T->acc + (int64_t)which * N + c);
        }
    }
}

static int64_t reduce_chunks(int64_t N)
{
    int64_t c = (N + REDUCE_COLS - 1) / REDUCE_COLS;
    return c < MAX_REDUCE_CHUNKS ? c : MAX_REDUCE_CHUNKS;
}

/* The row kernel's thread chunks: runs of whole core blocks, about CHUNK_ELEMS elements or
 * more each (which thread adds which block changes no bit: lnb_block_done). */
static int64_t row_chunks(const lnb_payload *P)
{
    const int64_t by_work = P->M * P->N / CHUNK_ELEMS;
    return by_work < 1 ? 1 : by_work < P->tiling.nblocks ? by_work : P->tiling.nblocks;
}

/* Ascend 950's arch35 template (layer_norm_backward_arch35.c) over the call's views. */
static void run_arch35(const lnb_task *T)
{
    const lnb_payload *P = &T->p;
    const lnb35_call c = {
        .dy = &P->t[T_DY], .x = &P->t[T_X], .mean = &P->t[T_MEAN], .rstd = &P->t[T_RSTD],
        .dx = P->mask[0] ? &P->t[T_DX] : NULL, .dw = P->mask[1] ? &P->t[T_DW] : NULL,
        .db = P->mask[2] ? &P->t[T_DB] : NULL, .w = T->w, .M = P->M, .N = P->N,
        .dx_round = P->dx_round,
    };
    if (!lnb35_run_kernel(&c, P->tiling.tmpl35))
        aclemu_task_fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                         P2 ": out of host memory for the kernel's row buffers");
}

static void task_run(void *arg)
{
    lnb_task *T = arg;
    const lnb_payload *P = &T->p;
    const int64_t M = P->M, N = P->N;
    if (N == 0 || !(P->mask[0] || P->mask[1] || P->mask[2]))
        return;
    if (M == 0) { /* rule 7: requested gradWeight/gradBias are zeros */
        float zeros[TILE] = {0};
        for (int which = T_DW; which <= T_DB; which++) {
            const tdesc *o = &P->t[which];
            if (!P->mask[which - T_DX])
                continue;
            for (int64_t c = 0; c < N; c += TILE)
                put_tile(o->data + o->offset * (int64_t)o->es, o->dtype, ACLEMU_TIES_EVEN,
                         &o->inner, c,
                         N - c < TILE ? N - c : TILE, zeros);
        }
        return;
    }
    if (T->wbuf) { /* weight row as float (ones when absent), read by every row */
        const tdesc *w = &P->t[T_W];
        if (w->present) {
            for (int64_t c = 0; c < N; c += TILE) {
                int64_t n = N - c < TILE ? N - c : TILE;
                const float *src = get_tile(w->data + w->offset * (int64_t)w->es, w->dtype,
                                            &w->inner, c, n, T->wbuf + c);
                if (src != T->wbuf + c)
                    memcpy(T->wbuf + c, src, (size_t)n * sizeof(float));
            }
        } else {
            for (int64_t c = 0; c < N; c++)
                T->wbuf[c] = 1.0f;
        }
    }
    if (lnb35_runs(P->tiling.tmpl35)) { /* Ascend 950's own kernel */
        run_arch35(T);
        return;
    }
    aclemu_parallel_for(P->tiling.nblocks, row_chunks(P),
                        P->tiling.tmpl == LNB_TRANSPOSE ? lnbt_blocks_body : ROW_KERNEL(rows_body), T);
    if (P->parts)
        aclemu_parallel_for(N, reduce_chunks(N), reduce_body, T);
}

static void task_release(void *arg)
{
    lnb_task *T = arg;
    for (int i = 0; i < T->npins; i++)
        aclemu_device_unpin(T->pins[i]);
    free(T->wbuf);
    free(T->own_ws);
    free(T->done);
    free(T);
}

/* ---- launch (phase two, after aclemu_executor_run's executor and workspace checks) --------- */

static bool touched(const lnb_payload *P, int i)
{
    if (!P->t[i].present)
        return false;
    if (i >= T_DX)
        return P->mask[i - T_DX]; /* unrequested outputs are never written */
    return true;                  /* inputs (bias included: strict, see docs) */
}

static aclnnStatus lnb_launch(void *payload, void *const *addrs, void *workspace,
                              uint64_t workspace_size, aclrtStream stream)
{
    const lnb_payload *P = payload;
    if (P->ws_size > 0 && (workspace == NULL || workspace_size < P->ws_size)) {
        /* aclemu_executor_run checks this first; kept so the kernel can rely on it */
        aclemu_set_error("%s: workspace (%p, %llu bytes) smaller than the %llu bytes phase one "
                         "asked for", P2, workspace, (unsigned long long)workspace_size,
                         (unsigned long long)P->ws_size);
        return workspace ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_PARAM_NULLPTR;
    }
    lnb_task *T = p2_task_new(P2, sizeof *T);
    if (!T)
        return ACLNN_ERR_INNER;
    T->p = *P;
    for (int i = 0; i < T_COUNT; i++) /* the tensors at the addresses they record now */
        T->p.t[i].data = addrs[i];
    P = &T->p;
    /* the partials sit at the front of the caller's workspace, as the device's kernel keeps
     * its own there; only the bytes written are touched. A device workspace smaller than the
     * emulator's partials (a Workspace-template call of few blocks and very long rows) leaves
     * them to a buffer of their own. */
    if (P->scratch > 0 && P->scratch <= workspace_size) {
        T->ws = workspace;
    } else if (P->scratch > 0) {
        T->ws = T->own_ws = malloc((size_t)P->scratch);
        if (!T->ws) {
            aclemu_set_error("%s: out of host memory for %llu bytes of partial sums", P2,
                             (unsigned long long)P->scratch);
            free(T);
            return ACLNN_ERR_INNER;
        }
    }
    if (T->ws) {
        T->acc = T->ws + (P->tiling.nblocks + LNB_RING) * 2 * P->N;
        T->done = calloc((size_t)P->tiling.nblocks, 2); /* done, then ringed */
        T->ringed = T->done + P->tiling.nblocks;
        if (!T->done) {
            aclemu_set_error("%s: out of host memory for %lld block flags", P2,
                             (long long)P->tiling.nblocks);
            free(T->own_ws);
            free(T);
            return ACLNN_ERR_INNER;
        }
    }
    const tdesc *w = &P->t[T_W];
    bool need_row = P->M > 0 && P->N > 0 && P->mask[0];
    if (need_row && w->present && w->dtype == ACL_FLOAT && lay_unit(&w->inner)) {
        T->w = (const float *)(const void *)(w->data + w->offset * 4);
    } else if (need_row) { /* only gradInput reads the weight */
        T->wbuf = malloc((size_t)P->N * sizeof(float));
        if (!T->wbuf) {
            aclemu_set_error("%s: out of host memory for the weight row (%lld floats)", P2,
                             (long long)P->N);
            free(T->own_ws);
            free(T->done);
            free(T);
            return ACLNN_ERR_INNER;
        }
        T->w = T->wbuf;
    }
    const tdesc *dy = &P->t[T_DY], *x = &P->t[T_X], *dx = &P->t[T_DX];
    const bool rows_unit = lay_unit(&dy->inner) && lay_unit(&x->inner);
    T->kind = rows_unit && x->dtype == ACL_FLOAT16 ? LD_F16
              : rows_unit && x->dtype == ACL_BF16  ? LD_BF16
                                                   : LD_F32;
    /* pass 2 stores gradInput when it is contiguous and of the dtype pass 2 computes in
     * registers (input's, or FLOAT for float tiles), with no separate rounding step */
    const aclDataType kind_dt = T->kind == LD_F16 ? ACL_FLOAT16
                                : T->kind == LD_BF16 ? ACL_BF16 : ACL_FLOAT;
    T->dx_fused = P->mask[0] && lay_unit(&dx->inner) && dx->dtype == kind_dt && !P->dx_round;
    T->dx_stream = T->dx_fused && (double)P->M * (double)P->N * dx->es >= LNB_STREAM_BYTES;
    const tdesc *views[T_COUNT];
    for (int i = 0; i < T_COUNT; i++)
        views[i] = touched(P, i) ? &P->t[i] : NULL;
    /* The op_api's returns with no kernel (aclnn_layer_norm_backward.cpp): an all-false
     * mask; an empty M or N that fills no requested gradWeight/gradBias (its M == 0 fill is
     * a kernel). Nothing is queued then (vm_launch). */
    const bool any = P->mask[0] || P->mask[1] || P->mask[2];
    const bool no_kernel = !any || (P->N == 0 && P->M > 0) ||
                           (P->M == 0 && !P->mask[1] && !P->mask[2]);
    return views_launch(P2, stream, views, TNAME, T_COUNT, workspace, P->ws_size, T->pins,
                        &T->npins, no_kernel ? NULL : task_run, task_release, T);
}

static const aclemu_executor_ops LNB_OPS = {
    .op_name = P2,
    .launch = lnb_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* The Atlas A2/A3 LayerNormGradV3 tiling's choices for M rows of N columns, dy of dtype
 * dy_dt, on this part (its vector cores and UB size). The templates are tried in priority
 * order, the first capable one taken (op_host/layer_norm_grad_v3_tiling.cpp through
 * common/inc/op_host/tiling_templates_registry.h): SingleRead for 768 <= N <= 12176
 * (layer_norm_grad_v3_single_read_tiling.cpp IsCapable), Transpose for N <= 64 not a
 * multiple of colAlign's 8 (FLOAT dy) or 16 (layer_norm_grad_v3_transpose_tiling.cpp,
 * colAlign from layer_norm_grad_v3_tiling_base.cpp), Common for N <= 768
 * (layer_norm_grad_v3_common_tiling.cpp), Workspace otherwise
 * (layer_norm_grad_v3_workspace_tiling.cpp). Every template splits the rows into blocks of
 * ceil(M / cores); Workspace reduces in column chunks of ubFormer = (UB - 64 * 3) / 6 / 4
 * floored to 16, at most N rounded up to 16 (8176 on a 192 KiB UB); Transpose in loops of
 * ubFormer rows (lnb_transpose_ub_rows). Other parts run the same
 * choice with their own figures (docs/emulator.md: not their device's numbers). */
static lnb_tiling lnb_tiling_of(int64_t M, int64_t N, aclDataType dy_dt)
{
    lnb_tiling t = {0};
    const int64_t align = dy_dt == ACL_FLOAT ? 8 : 16;
    if (N >= 768 && N <= 12176)
        t.tmpl = LNB_SINGLE_READ;
    else if (N <= 64 && N % align != 0)
        t.tmpl = LNB_TRANSPOSE;
    else if (N <= 768)
        t.tmpl = LNB_COMMON;
    else
        t.tmpl = LNB_WORKSPACE;
    t.lanes64 = t.tmpl == LNB_COMMON;
    t.divide = t.tmpl == LNB_WORKSPACE;
    t.col_align = (N + 7) / 8 * 8;
    t.chunk_cols = N;
    if (t.tmpl == LNB_WORKSPACE) {
        const int64_t buffer = (aclemu_soc_ub_bytes() - 64 * 3) / 6 / 4 / 16 * 16;
        const int64_t n16 = (N + 15) / 16 * 16;
        t.chunk_cols = buffer < n16 ? buffer : n16;
    }
    const aclemu_soc *soc = aclemu_soc_info(P1);
    t.tmpl35 = soc && soc->npu_arch == 3510 ? lnb35_template(M, N) : 0;
    const int64_t cores = aclemu_soc_vector_cores();
    t.block_rows = M > 0 ? (M + cores - 1) / cores : 0;
    t.nblocks = M > 0 ? (M + t.block_rows - 1) / t.block_rows : 0;
    if (t.tmpl == LNB_TRANSPOSE)
        t.ub_rows = lnb_transpose_ub_rows(t.block_rows, N, (N + align - 1) / align * align,
                                          (uint64_t)aclemu_soc_ub_bytes());
    return t;
}

/* For the tests (not a CANN symbol): the tiling a call of M x N with dy of dtype dy_dt gets
 * on this part; out = {template (LNB_*), rows per core block, core blocks, the UB loop's
 * chunk: Workspace's columns, Transpose's rows (ubFormer), N otherwise}. */
ACLEMU_EXPORT void aclemu_layer_norm_backward_tiling(int64_t M, int64_t N, int32_t dy_dt,
                                                     int64_t out[4])
{
    const lnb_tiling t = lnb_tiling_of(M, N, (aclDataType)dy_dt);
    out[0] = t.tmpl;
    out[1] = t.block_rows;
    out[2] = t.nblocks;
    out[3] = t.tmpl == LNB_TRANSPOSE ? t.ub_rows : t.chunk_cols;
}

/* The LayerNormGradV3 kernel's tiling workspace (GetWorkspaceSize of the template the tiling
 * takes; hicann/ops-nn norm/layer_norm_grad_v3/op_host/): Atlas A2/A3 SingleRead and Common
 * blockNum * colAlignV * 4 * 2 (colAlignV: N rounded up to 8), Workspace blockNum * colAlignV
 * * 4 * 4 (N rounded up to 16), Transpose 2 * blockNum * (N rounded up to 8, in floats,
 * rounded up to 512 bytes); Ascend 950 Recompute none, GroupedReduceBigM coreNum * N * 2 * 4,
 * GroupedReduceBigN coreNum * M * 3 * 4; each plus 16 MiB. */
static uint64_t lnb_kernel_workspace(const aclemu_soc *soc, int64_t M, int64_t N,
                                     const lnb_tiling *t)
{
    const uint64_t nb = (uint64_t)t->nblocks, cores = (uint64_t)aclemu_soc_vector_cores();
    if (soc->npu_arch == 3510)
        return EW_SYS_WORKSPACE + (t->tmpl35 == LNB35_BIG_M   ? cores * (uint64_t)N * 8
                                   : t->tmpl35 == LNB35_BIG_N ? cores * (uint64_t)M * 12
                                                              : 0);
    const uint64_t align8 = (uint64_t)(N + 7) / 8 * 8, align16 = (uint64_t)(N + 15) / 16 * 16;
    switch (t->tmpl) {
    case LNB_WORKSPACE:
        return EW_SYS_WORKSPACE + nb * align16 * 16;
    case LNB_TRANSPOSE:
        return EW_SYS_WORKSPACE + (align8 * 4 + 511) / 512 * 512 * nb * 2;
    default: /* SingleRead, Common */
        return EW_SYS_WORKSPACE + nb * align8 * 8;
    }
}

/* Phase one's workspace on a device: the executor's graph of aclnn_layer_norm_backward.cpp
 * (exec_workspace.h). Nothing for an all-false mask; for an empty M or N only the Fills of the
 * requested gradWeight/gradBias when M is (ew_fill_into).
 * Contiguous copies of non-contiguous inputs; a Fill of ones for a NULL weight; then on
 * Atlas A2/A3 and Ascend 950 rstd and mean cast to FLOAT and one LayerNormGradV3 kernel whose
 * three outputs (gradInput in input's dtype; gradWeight and gradBias in FLOAT, on 950 in the
 * weight's dtype when the requested ones have it) the executor allocates, each requested one
 * cast to its user tensor's dtype and copied out; on the Atlas training and inference series
 * the split TBE kernels LayerNormXBackpropV3 (gradInput and an M x N FLOAT tensor for the
 * second) and LayerNormBetaGammaBackpropV2 (gradWeight, gradBias in FLOAT), whose workspaces
 * come from compile info that is not public: counted as none. */
static uint64_t lnb_device_workspace(const aclemu_soc *soc, const aclTensor *const *ts,
                                     const bool *mask, int64_t M, int64_t N,
                                     const lnb_tiling *tiling)
{
    if (!(mask[0] || mask[1] || mask[2]))
        return 0;
    ew_graph g = ew_graph_on(soc->npu_arch);
    if (M <= 0 || N <= 0) { /* the op_api's empty case: requested gradWeight/gradBias zeroed */
        for (int i = 1; i < 3; i++)
            if (mask[i] && M <= 0)
                ew_fill_into(&g, ts[T_DX + i]);
        return ew_size(&g);
    }
    const aclDataType in_dt = ts[T_X]->dtype;
    const uint64_t MN = (uint64_t)M * (uint64_t)N, n = (uint64_t)N, m = (uint64_t)M;
    const int dy = ew_contiguous_copy(&g, ts[T_DY]), x = ew_contiguous_copy(&g, ts[T_X]);
    int mean = ew_contiguous_copy(&g, ts[T_MEAN]), rstd = ew_contiguous_copy(&g, ts[T_RSTD]);
    aclDataType mean_dt = ts[T_MEAN]->dtype, rstd_dt = ts[T_RSTD]->dtype;
    int w;
    aclDataType w_dt;
    if (ts[T_W]) {
        w = ew_contiguous_copy(&g, ts[T_W]);
        w_dt = ts[T_W]->dtype;
    } else {
        w = ew_fill(&g, n * aclemu_dtype_size(in_dt));
        w_dt = in_dt;
    }
    int res[3];
    aclDataType res_dt[3];
    if (soc->npu_arch == 2201 || soc->npu_arch == 3510) {
        rstd = ew_cast(&g, rstd, rstd_dt, ACL_FLOAT, m);
        mean = ew_cast(&g, mean, mean_dt, ACL_FLOAT, m);
        aclDataType gw_dt = ACL_FLOAT;
        if (soc->npu_arch == 3510 && (!mask[2] || ts[T_DB]->dtype == w_dt) &&
            (!mask[1] || ts[T_DW]->dtype == w_dt))
            gw_dt = w_dt;
        const int k = ew_kernel(&g);
        const int reads[] = {dy, x, rstd, mean, w};
        ew_read_all(&g, reads, 5, k);
        ew_kernel_workspace(&g, k, lnb_kernel_workspace(soc, M, N, tiling));
        res[0] = ew_output(&g, k, MN * aclemu_dtype_size(in_dt));
        res[1] = ew_output(&g, k, n * aclemu_dtype_size(gw_dt));
        res[2] = ew_output(&g, k, n * aclemu_dtype_size(gw_dt));
        res_dt[0] = in_dt, res_dt[1] = res_dt[2] = gw_dt;
    } else {
        if (mean_dt != rstd_dt) {
            mean = ew_cast(&g, mean, mean_dt, ACL_FLOAT, m);
            rstd = ew_cast(&g, rstd, rstd_dt, ACL_FLOAT, m);
            mean_dt = rstd_dt = ACL_FLOAT;
        }
        if (w_dt == ACL_FLOAT && (mean_dt == ACL_FLOAT16 || mean_dt == ACL_BF16)) {
            mean = ew_cast(&g, mean, mean_dt, ACL_FLOAT, m);
            rstd = ew_cast(&g, rstd, rstd_dt, ACL_FLOAT, m);
        }
        const int kx = ew_kernel(&g);
        const int reads[] = {dy, x, rstd, mean, w};
        ew_read_all(&g, reads, 5, kx);
        res[0] = ew_output(&g, kx, MN * aclemu_dtype_size(in_dt));
        const int gamma_tmp = ew_output(&g, kx, MN * 4);
        const int kbg = ew_kernel(&g);
        ew_read(&g, dy, kbg);
        ew_read(&g, gamma_tmp, kbg);
        res[1] = ew_output(&g, kbg, n * 4);
        res[2] = ew_output(&g, kbg, n * 4);
        res_dt[0] = in_dt, res_dt[1] = res_dt[2] = ACL_FLOAT;
    }
    for (int i = 0; i < 3; i++)
        if (mask[i])
            ew_copy_out(&g, res[i], res_dt[i], ts[T_DX + i], i == 0 ? MN : n);
    return ew_size(&g);
}

/* ---- phase one -------------------------------------------------------------------------------- */


ACLEMU_EXPORT aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclIntArray *normalizedShape,
    const aclTensor *mean, const aclTensor *rstd, const aclTensor *weightOptional,
    const aclTensor *biasOptional, const aclBoolArray *outputMask, aclTensor *gradInputOut,
    aclTensor *gradWeightOut, aclTensor *gradBiasOut, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;

    const aclTensor *ts[T_COUNT] = {gradOut, input, mean, rstd, weightOptional, biasOptional,
                                    gradInputOut, gradWeightOut, gradBiasOut};

    /* The checks follow the vendor's order (hicann/ops-nn norm/layer_norm_grad_v3/op_host/
     * op_api/aclnn_layer_norm_backward.cpp: CheckNotNull, the mask length, the requested
     * outputs, CheckDtype, CheckShape), so the first problem reported is the device's. */

    /* 0. the out-pointers first (161001) */
    aclnnStatus st;
    if ((st = p1_out_pointers(P1, workspaceSize, executor)))
        return st;

    /* 1. required arguments, in the vendor's order */
    static const struct { int t; const char *name; } REQUIRED[] = {
        {T_DY, "gradOut"}, {T_X, "input"}, {-1, "normalizedShape"}, {T_MEAN, "mean"},
        {T_RSTD, "rstd"}, {-2, "outputMask"},
    };
    for (size_t i = 0; i < sizeof REQUIRED / sizeof REQUIRED[0]; i++) {
        const void *p = REQUIRED[i].t >= 0 ? (const void *)ts[REQUIRED[i].t]
                        : REQUIRED[i].t == -1 ? (const void *)normalizedShape
                                              : (const void *)outputMask;
        if (!p)
            FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", P1, REQUIRED[i].name);
    }
    /* handles are checked in the registry before anything is dereferenced */
    if ((st = p1_live(P1, ts, TNAME, T_COUNT)))
        return st;
    if (!aclemu_handle_check(normalizedShape, ACLEMU_KIND_INT_ARRAY))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape (%p) is not a live aclIntArray", P1,
             (const void *)normalizedShape);
    if (!aclemu_handle_check(outputMask, ACLEMU_KIND_BOOL_ARRAY))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputMask (%p) is not a live aclBoolArray", P1,
             (const void *)outputMask);

    /* 2. mask length */
    if (outputMask->size != 3)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: outputMask length %llu != 3", P1,
             (unsigned long long)outputMask->size);
    bool mask[3] = {outputMask->values[0], outputMask->values[1], outputMask->values[2]};

    /* 3. requested outputs present */
    for (int k = 0; k < 3; k++)
        if (mask[k] && !ts[T_DX + k])
            FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: outputMask[%d] is true but %s is NULL", P1, k,
                 TNAME[T_DX + k]);

    /* 4. dtypes (CheckDtype). The supported list depends on the part, as in the vendor's
     * other norm operators: BFLOAT16 only where the NPU computes it (Atlas A2/A3, 950); the
     * docs say this operator has none on the Atlas training and inference series. Every
     * non-NULL tensor is checked, outputs whose mask entry is false included. */
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    static const int DTYPE_ORDER[] = {T_DY, T_X, T_MEAN, T_RSTD, T_W, T_B, T_DX, T_DW, T_DB};
    for (size_t j = 0; j < sizeof DTYPE_ORDER / sizeof DTYPE_ORDER[0]; j++) {
        const int i = DTYPE_ORDER[j];
        if (!ts[i])
            continue;
        if (!dtype_ok(ts[i]->dtype))
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s dtype %s is not supported (FLOAT, FLOAT16 or BF16)", P1, TNAME[i],
                 dname(ts[i]->dtype));
        if (ts[i]->dtype == ACL_BF16 && !soc->bf16)
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s dtype BF16 is not supported on %s (%s: FLOAT or FLOAT16)", P1,
                 TNAME[i], soc->name, soc->series);
        /* the relations, where the vendor checks them: gradOut = input after rstd's list,
         * weight's (input's dtype or FLOAT) right after weight's list */
        if (i == T_RSTD && gradOut->dtype != input->dtype)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOut dtype %s != input dtype %s", P1,
                 dname(gradOut->dtype), dname(input->dtype));
        if (i == T_W && ts[i]->dtype != ACL_FLOAT && ts[i]->dtype != input->dtype)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be FLOAT or input's dtype %s",
                 P1, TNAME[i], dname(ts[i]->dtype), dname(input->dtype));
    }
    const aclDataType in_dt = input->dtype;
    /* bias: input's dtype or FLOAT too (the docs' rule: stricter than the vendor's code, which
     * only checks the supported list) */
    if (biasOptional && biasOptional->dtype != ACL_FLOAT && biasOptional->dtype != in_dt)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be FLOAT or input's dtype %s", P1,
             TNAME[T_B], dname(biasOptional->dtype), dname(in_dt));
    /* mean/rstd: "not narrower than input" (the docs' rule; the vendor's code casts them to
     * FLOAT whatever they are): any of the three for 16-bit input, FLOAT for FLOAT input */
    for (int i = T_MEAN; i <= T_RSTD; i++)
        if (in_dt == ACL_FLOAT && ts[i]->dtype != ACL_FLOAT)
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s dtype %s is narrower than input dtype FLOAT (it must be at least as "
                 "wide)", P1, TNAME[i], dname(ts[i]->dtype));

    /* 5. ranks and shapes (CheckShape), in the vendor's order. An output whose mask entry is
     * false is never written, and its shape is not checked (as the vendor's). */
    char s1[256], s2[256];
    for (int i = T_DY; i <= T_RSTD; i++)
        if (ts[i]->ndim > MAX_RANK)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu > %d", P1, TNAME[i],
                 (unsigned long long)ts[i]->ndim, MAX_RANK);
    const uint64_t len = normalizedShape->size;
    if (len > MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape length %llu > %d", P1,
             (unsigned long long)len, MAX_RANK);
    for (int k = 0; k < 3; k++)
        if (mask[k] && ts[T_DX + k]->ndim > MAX_RANK)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu > %d", P1, TNAME[T_DX + k],
                 (unsigned long long)ts[T_DX + k]->ndim, MAX_RANK);
    if (len < 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape length 0 < 1", P1);
    const int64_t *ns = normalizedShape->values;
    if (input->ndim < len)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input rank %llu < normalizedShape length %llu", P1,
             (unsigned long long)input->ndim, (unsigned long long)len);
    const uint64_t split = input->ndim - len;
    /* all trailing dims (the docs' rule; the vendor's loop compares only some of them) */
    if (!same_dims(input->dims + split, len, ns, len)) {
        fmt_dims(s1, sizeof s1, input->dims, input->ndim);
        fmt_dims(s2, sizeof s2, ns, len);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input shape %s does not end with normalizedShape %s",
             P1, s1, s2);
    }
    for (int i = T_W; i <= T_B; i++) {
        if (ts[i] && !same_dims(ts[i]->dims, ts[i]->ndim, ns, len)) {
            fmt_dims(s1, sizeof s1, ts[i]->dims, ts[i]->ndim);
            fmt_dims(s2, sizeof s2, ns, len);
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s != normalizedShape %s", P1,
                 TNAME[i], s1, s2);
        }
    }
    if (!same_dims(gradOut->dims, gradOut->ndim, input->dims, input->ndim)) {
        fmt_dims(s1, sizeof s1, gradOut->dims, gradOut->ndim);
        fmt_dims(s2, sizeof s2, input->dims, input->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradOut shape %s != input shape %s", P1, s1, s2);
    }
    if (!same_dims(mean->dims, mean->ndim, rstd->dims, rstd->ndim)) {
        fmt_dims(s1, sizeof s1, mean->dims, mean->ndim);
        fmt_dims(s2, sizeof s2, rstd->dims, rstd->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: mean shape %s != rstd shape %s", P1, s1, s2);
    }
    int64_t M = 0, N = 0, mean_n = -1;
    if (!numel(input->dims, split, &M) || !numel(ns, len, &N))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input element count overflows int64", P1);
    if (!numel(mean->dims, mean->ndim, &mean_n) || mean_n != M) {
        fmt_dims(s1, sizeof s1, mean->dims, mean->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID,
             "%s: mean shape %s has %lld elements != M = %lld (product of input's batch dims)",
             P1, s1, (long long)mean_n, (long long)M);
    }
    if (mask[0] && !same_dims(gradInputOut->dims, gradInputOut->ndim, input->dims,
                              input->ndim)) {
        fmt_dims(s1, sizeof s1, gradInputOut->dims, gradInputOut->ndim);
        fmt_dims(s2, sizeof s2, input->dims, input->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: gradInputOut shape %s != input shape %s", P1, s1,
             s2);
    }
    for (int i = T_DW; i <= T_DB; i++) {
        int64_t n = -1;
        if (mask[i - T_DX] && (!numel(ts[i]->dims, ts[i]->ndim, &n) || n != N)) {
            fmt_dims(s1, sizeof s1, ts[i]->dims, ts[i]->ndim);
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s shape %s has %lld elements != N = %lld (product of normalizedShape)",
                 P1, TNAME[i], s1, (long long)n, (long long)N);
        }
    }
    /* 6./7. all-false mask and empty tensors are valid: the executor's run does what is
     * documented (nothing, or zero-filled gradWeight/gradBias when M == 0, by a fill of the
     * output's own shape). */
    /* 8. stricter: the results' ViewCopy (hicann/ops-math conversion/contiguous/op_host/
     * op_api/contiguous.cpp CheckViewCopyParams) takes gradWeightOut/gradBiasOut only of
     * normalizedShape (the L0 op's result has weight's shape), or one element each. The
     * op_api's GenOutWithMask returns its failure, but its caller drops the status: phase one
     * succeeds and the output is never written. Refused here with that status, 561103. */
    if (M > 0 && N > 0 && N != 1) {
        for (int i = T_DW; i <= T_DB; i++) {
            if (mask[i - T_DX] && !same_dims(ts[i]->dims, ts[i]->ndim, ns, len)) {
                fmt_dims(s1, sizeof s1, ts[i]->dims, ts[i]->ndim);
                fmt_dims(s2, sizeof s2, ns, len);
                FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s shape %s must be normalizedShape %s "
                     "(the result's copy into it takes no other shape)", P1, TNAME[i], s1, s2);
            }
        }
    }
    lnb_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    for (int i = 0; i < T_COUNT; i++) {
        bool mn = i == T_DY || i == T_X || i == T_DX;
        bool unused = i >= T_DX && !mask[i - T_DX]; /* never read: its shape is unchecked */
        snapshot(&P->t[i], unused ? NULL : ts[i], mn ? (int)split : -1);
    }
    memcpy(P->mask, mask, sizeof mask);
    P->M = M;
    P->N = N;
    P->parts = (mask[1] || mask[2]) && M > 0 && N > 0;
    /* gradInput's rounding to input's dtype (round_grad_input): the Atlas A2/A3 kernel rounds
     * BF16 with CAST_ROUND, ties away from zero (hicann/ops-nn norm/layer_norm_grad_v3/
     * op_kernel/layer_norm_grad_v3_common.h CastToB16, likewise _single_read.h, _workspace.h,
     * _transpose.h); the Ascend 950 kernel with CAST_RINT (op_kernel/arch35/
     * layer_norm_grad_v3_base.h); no other part has BF16. A separate step only when
     * gradInputOut's dtype is not input's; otherwise the store is the rounding. */
    P->bf16_away = soc->npu_arch == 2201;
    P->dx_round = mask[0] && in_dt != ACL_FLOAT && gradInputOut->dtype != in_dt;
    /* BF16 in and out: one rounding, the store's, with the kernel's tie rule (a separate
     * rounding pass cost ~20% of the CPU time of a BF16 4096x1024 call) */
    P->dx_ties = mask[0] && in_dt == ACL_BF16 && gradInputOut->dtype == ACL_BF16 &&
                 P->bf16_away ? ACLEMU_TIES_AWAY : ACLEMU_TIES_EVEN;
    P->tiling = lnb_tiling_of(M, N, gradOut->dtype);
    /* Ascend 950's own kernels sum without the blocks' partials */
    P->scratch = P->parts && !lnb35_runs(P->tiling.tmpl35)
                     ? ((uint64_t)P->tiling.nblocks + LNB_RING + 1u) * 2u * (uint64_t)N *
                           sizeof(float)
                     : 0;
    P->ws_size = lnb_device_workspace(soc, ts, mask, M, N, &P->tiling);
    const uint64_t ws = P->ws_size;
    /* the executor owns P from here and keeps every tensor, used or not, as CANN's does */
    return p1_finish(P1, &LNB_OPS, P, ws, ts, TNAME, T_COUNT, T_DX, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnLayerNormBackward(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}
