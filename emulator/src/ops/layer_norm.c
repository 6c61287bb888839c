/*
 * aclnnLayerNorm and aclnnLayerNormWithImplMode for the CPU emulator: phase-one validation in
 * the vendor's order with its codes (hicann/ops-nn norm/layer_norm_v4/op_host/op_api/
 * aclnn_layer_norm.cpp), the launch (memory checks, pins, stream submit) and the kernel.
 *
 * aclnnFastLayerNorm (same folder, aclnn_fast_layer_norm.cpp) is a route to the same L0
 * kernel: its own phase one (its own order, a fixed dtype list, no part check), then always
 * LayerNormV4 (FLOAT statistics), with an absent weight/bias filled with ones/zeros by the
 * op_api (a zero bias is added: -0 becomes +0) and out copied without a cast (out must be of
 * input's dtype, mean/rstd of the kernel's shape: the ViewCopy rule). It shares the payload,
 * launch and row kernel below.
 *
 * The device's numbers (same source and its L0 ops layer_norm_v3.cpp / layer_norm_v4.cpp):
 * - eps reaches the kernel as a float (static_cast<float>(eps) in both L0 ops);
 * - statistics are accumulated in float; out is computed in input's dtype, then cast to
 *   out's dtype (so an fp16 input carries fp16 rounding into a FLOAT out);
 * - mean and rstd are produced in the "statistics dtype" of the kernel the call takes, then
 *   cast to meanOut/rstdOut's dtype. LayerNormV4 (every call on a regbase part, Ascend950;
 *   a few shapes on Atlas A2/A3 and Atlas inference parts, see takes_v4) writes FLOAT.
 *   LayerNormV3 (the rest) writes mean in weight's dtype and rstd in bias's dtype, where an
 *   absent weight/bias is made in the other one's dtype, else input's: one "parameter
 *   dtype" for both.
 * - an absent weight/bias: off regbase parts the op_api fills them with ones/zeros, and the
 *   kernel adds the zeros (a -0 result becomes +0); a regbase part's kernel runs without
 *   them (-0 stays);
 * - empty: M == 0 does nothing; N == 0 fills meanOut with 0 and rstdOut with NaN.
 *
 * Kernel, Ascend 950 when the tiling takes LayerNormV4's two_pass_perf template (most calls:
 * takes_regbase_perf): the template's own chain, row by row (layer_norm_perf_rows.h;
 * docs/emulator.md); when it takes regbase_two_pass (takes_regbase_two_pass), the same rows
 * with the AscendC LayerNorm library's sums; Welford (the rest), the same rows with the
 * library's WelfordUpdate and WelfordFinalize statistics (wf_tile). Atlas A2/A3 when it takes
 * LayerNormV4's single_read template (BF16 input and weight, N = 1024 or 4096): its chain, row
 * by row, in the row loops' vector code (layer_norm_rows.h: single_read_rows). Atlas A2/A3
 * and inference parts when it takes a transpose template (N <= 64, not a whole number of
 * 32-byte blocks): its chain, row by row (layer_norm_transpose.h). Elsewhere (LayerNormV3,
 * whose kernel is not public, and the V4 templates not modelled, ...): rows are
 * independent, so any split of rows over threads gives the same bits. Rows
 * go GROUP at a time, in three passes over the group: blocked sum -> mean, blocked sum of
 * squared deviations -> variance (two passes: no cancellation of E[x^2] - E[x]^2), rstd =
 * 1 / sqrt(var + eps), and y = (x - mean) * rstd * w + b, made in input's dtype. A blocked
 * sum keeps LANES independent float accumulators per TILE (vectors: the order is fixed by the
 * source, not the SIMD width) folded into per-row lane totals after each tile: error ~
 * (TILE / LANES + N / TILE) ulps rather than N. Each tile's adds form one dependency chain per
 * lane, so CHAINS tiles (of one row or of the group's rows) are summed side by side: one tile
 * at a time left the vector unit waiting on the adds' latency.
 * - The row loops (layer_norm_rows.h) are compiled once per x86-64 level and picked at run
 *   time. Contiguous FLOAT16/BF16 input rows are converted in registers by each pass
 *   (row_vectors.h), and a contiguous out of input's dtype is converted as it is stored: no
 *   conversion buffers (converting each row into a float buffer first, then storing out
 *   through a float block, cost a quarter of a FLOAT16 call's CPU time). Other layouts and
 *   dtype mixes convert input rows into a per-chunk float row buffer during the first pass,
 *   and store out through a float block (convert.h); the order of every sum is the same, so a
 *   strided view gives the same bits as a contiguous copy (tests/test_kernel_clones.py).
 * - Pass 1 prefetches the rows ahead (PF_BYTES); passes 2 and 3 read the group back from
 *   cache. An out far larger than the caches is written with non-temporal stores
 *   (LN_STREAM_BYTES).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "exec_workspace.h"
#include "phase_one.h"
#include "convert.h"
#include "norm_rows.h"
#include "tensor_view.h"

#include "aclnnop/aclnn_layer_norm.h"

#define P1 "aclnnLayerNormGetWorkspaceSize"
#define P2 "aclnnLayerNorm"
#define P1_MODE "aclnnLayerNormWithImplModeGetWorkspaceSize"
#define P2_MODE "aclnnLayerNormWithImplMode"
#define P1_FAST "aclnnFastLayerNormGetWorkspaceSize"
#define P2_FAST "aclnnFastLayerNorm"

#define INLINE TV_INLINE
#define LANES 16          /* independent accumulators per row sum */
#define TILE 512          /* elements per block of the sum; multiple of LANES */
#define MAX_CHUNKS 16     /* row chunks per run (each has its own row buffer when gathering) */
#define STAT_ROWS 64      /* mean/rstd stored this many rows at a time */
#define CHAINS 4          /* tiles summed side by side (layer_norm_rows.h: chains) */
#define GROUP 4           /* rows processed together (layer_norm_rows.h: group_rows) */
#define PF_BYTES 2048     /* pass 1 prefetches its rows this far ahead */
#define SR_MAX_N 4096     /* the longest row of the single_read template (pick_template) */
/* An out at least this large (bytes), stored by the kernel itself, is written with
 * non-temporal stores: far larger than the cores' own caches, it would only evict the rows
 * the passes read back, and its read-for-ownership adds to the memory traffic. */
#define LN_STREAM_BYTES (8.0 * 1024 * 1024)

/* implMode values (the vendor's op_api) */
enum { HIGH_PRECISION = 0, HIGH_PERFORMANCE = 1, KEEP_FP16 = 2 };

enum { T_X, T_W, T_B, T_Y, T_MEAN, T_RSTD, T_COUNT };
static const char *const TNAME[T_COUNT] = {
    "input", "weightOptional", "biasOptional", "out", "meanOutOptional", "rstdOutOptional",
};

typedef struct {
    const char *call;     /* phase two's name, for messages */
    tdesc t[T_COUNT];
    int64_t M, N;
    float eps;            /* as the kernel receives it */
    aclDataType stat_dt;  /* dtype the kernel writes mean/rstd in, before their cast */
    aclemu_ties ties;     /* how the kernel rounds BF16 ties (away on Atlas A2/A3) */
    bool y_round;         /* out is rounded to input's dtype before its store */
    aclemu_ties y_ties;   /* how out's store breaks BF16 ties */
    bool zero_bias;       /* an absent bias is a row of zeros the kernel adds */
    bool regbase_perf;    /* Ascend 950's two_pass_perf template (perf_body) */
    bool lib_sums;        /* ... or its regbase_two_pass: perf_body with the AscendC
                           * LayerNorm library's sums (layer_norm_perf_rows.h lib_sum) */
    float pow2_inv;       /* ... its 1 / powerOfTwoForR (the least power of two >= N; the
                           * library's k2Rec: at least 64) */
    float pow2_corr;      /* ... and powerOfTwoForR / N, in float (k2RRec) */
    int64_t wf_tile;      /* ... or its Welford template (> 0): the tiling's tileLength */
    bool welford;         /* Ascend 950's tiling takes Welford (its 16 MiB workspace) */
    bool single_read;     /* Atlas A2/A3's single_read template (layer_norm_rows.h) */
    bool transpose;       /* Atlas A2/A3's or 310P's transpose template (transpose_body) */
    bool reshape_adds;    /* ... 310P's: its reshape adds 0 to input (-0 becomes +0) */
    float coefficient;    /* single_read's and transpose's: the tiling's 1.0f / N */
    bool no_kernel;       /* the op_api's early return with no kernel: nothing is queued */
} ln_payload;

/* One launch: owns a copy of the payload (a repeatable executor may be destroyed while the
 * task is queued), the pins, and the float rows it reads. */
typedef struct {
    ln_payload p;
    const float *w, *b;   /* weight/bias rows as float; NULL when absent */
    float *wb_buf;        /* weight/bias converted to float, when not usable in place */
    float *row_buf;       /* nchunks * per_chunk floats: gathered input rows as float */
    int64_t per_chunk;    /* floats of row buffer per chunk (GROUP rows) */
    int64_t nchunks;
    int kind;             /* how the kernel reads input rows (row_vectors.h's LD_*) */
    bool x_gather;        /* input rows converted to float into row_buf (kind LD_F32) */
    bool y_fused;         /* out rows stored by the kernel in their dtype (contiguous;
                           * the two_pass_perf rows: of input's dtype) */
    bool y_stream;        /* ... with non-temporal stores (out much larger than cache) */
    void *pins[T_COUNT + 1];
    int npins;
} ln_task;

/* ---- the row kernel ------------------------------------------------------------------------- */

/* The element kinds the row kernel reads and stores (LD_*, ld1, st1). */
#include "row_vectors.h"

/* Fixed pairwise tree over the lanes. */
INLINE float lane_total(float *a)
{
    for (int s = LANES / 2; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            a[l] += a[l + s];
    return a[0];
}

/* Rows [s0, s0 + cnt)'s statistics, made in the kernel's dtype, then cast to the outputs'. */
static void store_stats(const ln_payload *P, int64_t s0, int64_t cnt, float *mean, float *rstd)
{
    const tdesc *mo = &P->t[T_MEAN], *ro = &P->t[T_RSTD];
    if (mo->present) {
        aclemu_round_floats(P->stat_dt, P->ties, mean, cnt);
        put_tile(view_base(mo), mo->dtype, ACLEMU_TIES_EVEN, &mo->inner, s0, cnt, mean);
    }
    if (ro->present) {
        aclemu_round_floats(P->stat_dt, P->ties, rstd, cnt);
        put_tile(view_base(ro), ro->dtype, ACLEMU_TIES_EVEN, &ro->inner, s0, cnt, rstd);
    }
}

/* The row kernel (layer_norm_rows.h), once per x86-64 level, the best the CPU runs picked at
 * first use (row_levels.h: ROW_KERNEL). */
#define ROWS_HEADER "layer_norm_rows.h"
#include "row_levels.h"

/* Fills every element of a flat view with v. */
static void fill_view(const tdesc *d, float v)
{
    int64_t n = 0;
    if (!d->present || !numel(d->dims, (uint64_t)d->ndim, &n))
        return;
    float buf[STAT_ROWS];
    for (int i = 0; i < STAT_ROWS; i++)
        buf[i] = v;
    for (int64_t c = 0; c < n; c += STAT_ROWS)
        put_tile(view_base(d), d->dtype, ACLEMU_TIES_EVEN, &d->inner, c,
                 n - c < STAT_ROWS ? n - c : STAT_ROWS, buf);
}

/* A weight/bias row as float: in place when FLOAT and contiguous, else converted into buf. */
static const float *param_row(const tdesc *d, int64_t N, float *buf)
{
    if (!d->present)
        return NULL;
    return get_tile(view_base(d), d->dtype, &d->inner, 0, N, buf);
}

/* ---- Ascend 950's two_pass_perf template ------------------------------------------------------ */

/* Rows by op_kernel/arch35/layer_norm_v4_two_pass_perf.h, every step a float operation:
 * mean = sum(x * inv) * corr and var = sum(((x - mean)^2) * inv) * corr (inv =
 * 1 / powerOfTwoForR, exact; corr = powerOfTwoForR / N), rstd by ComputeRstdNewtonRaphson
 * without the clamp, y = (x - mean) * rstd, then MulDstAdd(y, gamma, beta) (y * gamma + beta,
 * taken as one fused multiply-add) with both, else Mul and Add; y cast to input's dtype
 * (CAST_RINT). Each sum is the template's (CalculateMeanVarRLessThanVL, ...TwoVL,
 * ...RCommon<1>, <2>): rows of up to 64 one register's Reduce, rows of 65 to 128 one register
 * (the second's terms added onto the first's lanes, the rest zero), the others the binary add
 * (nr_binary_add_sum). The kernel (layer_norm_perf_rows.h: perf_body) once per x86-64 level,
 * like the rows above. The regbase_two_pass template's library (asc-devkit LayerNormImpl,
 * NormalizeImpl) makes the same chain with other sums (lib_sums: perf_body's lib_sum) and its
 * own k2Rec (pick_template). */
#undef ROWS_HEADER
#define ROWS_HEADER "layer_norm_perf_rows.h"
#include "row_levels.h"

/* LayerNormV4's transpose templates (Atlas A2/A3 and inference: N <= 64, not a whole number
 * of 32-byte blocks): their chain, row by row (layer_norm_transpose.h). */
#include "layer_norm_transpose.h"

static void task_run(void *arg)
{
    ln_task *T = arg;
    const ln_payload *P = &T->p;
    if (P->M == 0)
        return;
    if (P->N == 0) { /* the vendor fills the statistics of empty rows */
        fill_view(&P->t[T_MEAN], 0.0f);
        fill_view(&P->t[T_RSTD], NAN);
        return;
    }
    T->w = param_row(&P->t[T_W], P->N, T->wb_buf);
    T->b = param_row(&P->t[T_B], P->N, T->wb_buf ? T->wb_buf + P->N : NULL);
    if (!T->b && P->zero_bias)
        T->b = T->wb_buf + P->N; /* zeroed by the launch */
    aclemu_parallel_for(P->M, T->nchunks,
                        P->transpose      ? transpose_body
                        : P->regbase_perf ? ROW_KERNEL(perf_body)
                                          : ROW_KERNEL(rows_body), T);
}

static void task_release(void *arg)
{
    ln_task *T = arg;
    for (int i = 0; i < T->npins; i++)
        aclemu_device_unpin(T->pins[i]);
    free(T->wb_buf);
    free(T->row_buf);
    free(T);
}

/* ---- launch (phase two, after aclemu_executor_run's executor and workspace checks) --------- */

static bool needs_buffer(const tdesc *d)
{
    return d->present && !(d->dtype == ACL_FLOAT && lay_unit(&d->inner));
}

static aclnnStatus ln_launch(void *payload, void *const *addrs, void *workspace,
                             uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    ln_task *T = p2_task_new(((ln_payload *)payload)->call, sizeof *T);
    if (!T)
        return ACLNN_ERR_INNER;
    T->p = *(const ln_payload *)payload;
    const ln_payload *P = &T->p; /* the tensors at the addresses they record now */
    const tdesc *views[T_COUNT];
    for (int i = 0; i < T_COUNT; i++) {
        T->p.t[i].data = addrs[i];
        views[i] = &P->t[i];
    }
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y];
    const int64_t M = P->M, N = P->N;
    if (M > 0 && N > 0) {
        const bool x_unit = lay_unit(&x->inner), y_unit = lay_unit(&y->inner);
        T->kind = x_unit && x->dtype == ACL_FLOAT16 ? LD_F16
                  : x_unit && x->dtype == ACL_BF16  ? LD_BF16
                                                    : LD_F32;
        T->x_gather = T->kind == LD_F32 && !(x->dtype == ACL_FLOAT && x_unit);
        /* out of the dtype the kernel reads input as (gathered rows: FLOAT only) */
        const aclDataType kind_dt = T->kind == LD_F16    ? ACL_FLOAT16
                                    : T->kind == LD_BF16 ? ACL_BF16
                                    : x->dtype == ACL_FLOAT ? ACL_FLOAT : ACL_DT_UNDEFINED;
        T->y_fused = y_unit && y->dtype == kind_dt;
        T->y_stream = T->y_fused &&
                      (double)M * (double)N * (double)y->es >= LN_STREAM_BYTES;
        T->nchunks = M < MAX_CHUNKS ? M : MAX_CHUNKS;
        /* per chunk: a group of gathered input rows as float (no more rows than the chunk
         * has) */
        const int64_t chunk_rows = (M + T->nchunks - 1) / T->nchunks;
        T->per_chunk = T->x_gather ? (chunk_rows < GROUP ? chunk_rows : GROUP) * N : 0;
        if (P->regbase_perf) { /* perf_body: input's and out's rows as floats, the partials,
                                * Welford's per-position rows; out stored by the kernel when
                                * contiguous, of input's dtype */
            T->per_chunk = 2 * N + N / NR_VECTOR_LANES + 1 + 3 * P->wf_tile;
            T->y_fused = y_unit && y->dtype == x->dtype;
            T->y_stream = T->y_fused &&
                          (double)M * (double)N * (double)y->es >= LN_STREAM_BYTES;
        }
        const bool zeros = P->zero_bias && !P->t[T_B].present;
        bool wb = needs_buffer(&P->t[T_W]) || needs_buffer(&P->t[T_B]) || zeros;
        if (T->per_chunk > 0)
            T->row_buf = malloc((size_t)(T->nchunks * T->per_chunk) * sizeof(float));
        if (wb)
            T->wb_buf = zeros ? calloc((size_t)(2 * N), sizeof(float))
                              : malloc((size_t)(2 * N) * sizeof(float));
        if ((T->per_chunk > 0 && !T->row_buf) || (wb && !T->wb_buf)) {
            aclemu_set_error("%s: out of host memory for the row buffers (%lld floats)",
                             P->call, (long long)(T->nchunks * T->per_chunk + 2 * N));
            task_release(T);
            return ACLNN_ERR_INNER;
        }
    }
    return views_launch(P->call, stream, views, TNAME, T_COUNT, workspace, 0, T->pins,
                        &T->npins, P->no_kernel ? NULL : task_run, task_release, T);
}

static const aclemu_executor_ops LN_OPS = {
    .op_name = P2,
    .launch = ln_launch,
    .destroy = free, /* the payload is one flat allocation */
};

static const aclemu_executor_ops LN_MODE_OPS = {
    .op_name = P2_MODE,
    .launch = ln_launch,
    .destroy = free, /* the payload is one flat allocation */
};

static const aclemu_executor_ops FAST_OPS = {
    .op_name = P2_FAST,
    .launch = ln_launch,
    .destroy = free, /* the payload is one flat allocation */
};

/* ---- the part's rules ----------------------------------------------------------------------- */

/* NPU architectures the rules name (the vendor's NpuArch; aclemu_soc_info gives the part's) */
enum { DAV_2002 = 2002 /* Atlas inference */, DAV_2201 = 2201 /* Atlas A2/A3 */,
       DAV_3510 = 3510 /* Ascend 950, "regbase" */ };

/* Whether the call runs LayerNormV4 (FLOAT statistics) rather than LayerNormV3: always on a
 * regbase part; otherwise only the shapes V4 has templates for (the vendor's IsV4SocCheck).
 * param_dt: the weight's dtype as the kernel sees it (made from bias/input when absent). */
static bool takes_v4(int arch, aclDataType in_dt, aclDataType param_dt, int64_t N)
{
    if (arch == DAV_3510)
        return true;
    bool single_read = in_dt == ACL_BF16 && param_dt == ACL_BF16 && (N == 1024 || N == 4096) &&
                       arch == DAV_2201;
    bool transpose_310p = in_dt == ACL_FLOAT16 && (N == 20 || N == 40) &&
                          arch == DAV_2002;
    int64_t align = in_dt == ACL_FLOAT ? 8 : 16; /* elements per 32-byte block */
    bool transpose_910b = N % align != 0 && N < 64 && arch == DAV_2201;
    return single_read || transpose_310p || transpose_910b;
}

/* Whether an Ascend 950 call takes the two_pass_perf template: the tiling tries it first
 * (op_host/layer_norm_v4_regbase_two_pass_perf_tiling.cpp IsCapable, priority 150; then
 * regbase_two_pass 200, welford 4000): rAlign (N rounded up to 32-byte blocks of input) at
 * most 2 * 64 * 64 * 2, not both M >= 4096 and rAlign >= 8192, and one row in the UB less the
 * binary add's 1 KiB (CanFitInBuffer(1)). param_dt: the tiling's paramDtype (gamma's, else
 * beta's, else FLOAT). */
static bool takes_regbase_perf(int64_t M, int64_t N, aclDataType in_dt, aclDataType param_dt)
{
    const int64_t vl = NR_VECTOR_LANES, block = 32, buffers = 2;
    const int64_t xs = in_dt == ACL_FLOAT ? 4 : 2;
    const int64_t ps = param_dt == ACL_FLOAT16 || param_dt == ACL_BF16 ? 2 : 4;
    const int64_t r_align = (N + block / xs - 1) / (block / xs) * (block / xs);
    if (r_align > 2 * vl * vl * 2 || (M >= 4096 && r_align >= 8192))
        return false;
    const int64_t usable = aclemu_soc_ub_bytes() - vl * 4 * 2 * 2;
    const int64_t row_weight = 2 * ps + 2 * buffers * xs + 4;
    return r_align * row_weight <= usable - 2 * buffers * (block / 4);
}

/* Ascend 950's LayerNormV4 templates, in the tiling's order of priority (op_host/
 * layer_norm_v4_*_tiling.cpp REGISTER_OPS_TILING_TEMPLATE: 150, 200, 4000) */
enum { LN35_TWO_PASS_PERF = 0, LN35_REGBASE_TWO_PASS = 1, LN35_WELFORD = 2 };

/* Whether regbase_two_pass takes the call (op_host/layer_norm_v4_regbase_two_pass_tiling.cpp
 * IsCapable): its binary search over the rows per UB pass finds one when a single row fits
 * (CanFitInBuffer(1): the search's least, and the use grows with the rows): input and out
 * double-buffered, mean and rstd (a 32-byte block each, double-buffered), gamma and beta when
 * the kernel gets them (paramDtype's size), and the AscendC LayerNorm's temporary buffer,
 * asc-devkit impl/adv_api/tiling/normalization/layernorm_tiling_impl.cpp
 * GetLayerNormMaxMinTmpSize on DAV_3510: (N's 64-float registers rounded up to 128, plus one
 * per row) floats. */
static bool takes_regbase_two_pass(int64_t N, aclDataType in_dt, aclDataType param_dt,
                                   bool gamma, bool beta)
{
    const int64_t vl = NR_VECTOR_LANES, block = 32, buffers = 2;
    const int64_t xs = in_dt == ACL_FLOAT ? 4 : 2;
    const int64_t ps = param_dt == ACL_FLOAT16 || param_dt == ACL_BF16 ? 2 : 4;
    const int64_t r_align = (N + block / xs - 1) / (block / xs) * (block / xs);
    const int64_t rows = r_align * xs * 2 * buffers;
    const int64_t stats = block * 2 * buffers;
    const int64_t params = ((gamma ? r_align : 0) + (beta ? r_align : 0)) * ps;
    const int64_t regs = (N + vl - 1) / vl;
    const int64_t tmp = ((regs + 2 * vl - 1) / (2 * vl) * (2 * vl) + 1) * 4;
    return rows + stats + params + tmp <= aclemu_soc_ub_bytes();
}

/* Whether tile positions fit the Welford template's UB (op_host/layer_norm_v4_welford_tiling.cpp
 * IsValidTileLength): input and out tiles, mean and rstd caches of 256 rows, the Welford mean
 * and M2 (and the variances' 256), gamma and beta tiles when the kernel gets them, all
 * double-buffered, and the AscendC APIs' temporary buffers on DAV_3510 (asc-devkit
 * layernorm_tiling_impl.cpp, normalize_tiling_impl.cpp: WelfordUpdate's and Normalize's none;
 * welfordfinalize_tiling_impl.cpp: (tile + the registers of its largest power of two rounded up
 * to 128) floats). */
static bool welford_fits(int64_t tile, aclDataType in_dt, aclDataType param_dt, bool gamma,
                         bool beta)
{
    const int64_t vl = NR_VECTOR_LANES, buffers = 2, cache = 256;
    const int64_t xs = in_dt == ACL_FLOAT ? 4 : 2;
    const int64_t ps = param_dt == ACL_FLOAT16 || param_dt == ACL_BF16 ? 2 : 4;
    int64_t head = 1;
    while (head * 2 <= tile)
        head *= 2;
    const int64_t api = (tile + (head / vl + 2 * vl - 1) / (2 * vl) * (2 * vl)) * 4;
    const int64_t use = 2 * buffers * tile * xs + 2 * buffers * cache * 4 + buffers * tile * 4 +
                        cache * 4 + (gamma + beta) * buffers * tile * ps;
    return use + api <= aclemu_soc_ub_bytes();
}

/* The Welford tiling's tileLength (DoLibApiTiling): grown by 64 while 128 more fit. */
static int64_t welford_tile(aclDataType in_dt, aclDataType param_dt, bool gamma, bool beta)
{
    int64_t tile = 0;
    while (welford_fits(tile + 2 * NR_VECTOR_LANES, in_dt, param_dt, gamma, beta))
        tile += NR_VECTOR_LANES;
    return tile;
}

/* The Ascend 950 template for M rows of N (LN35_*); gamma/beta: whether the kernel gets them. */
static int arch35_template(int64_t M, int64_t N, aclDataType in_dt, aclDataType param_dt,
                           bool gamma, bool beta)
{
    if (takes_regbase_perf(M, N, in_dt, param_dt))
        return LN35_TWO_PASS_PERF;
    if (takes_regbase_two_pass(N, in_dt, param_dt, gamma, beta))
        return LN35_REGBASE_TWO_PASS;
    return LN35_WELFORD;
}

/* For the tests (not a CANN symbol): the Ascend 950 template (LN35_*) aclnnLayerNorm's tiling
 * picks for M rows of N, input of x_dt, weight/bias of w_dt/b_dt (-1: absent), with the
 * emulated part's UB (an Ascend 950's for the device's choice). */
ACLEMU_EXPORT int aclemu_layer_norm_template_arch35(int64_t M, int64_t N, int x_dt, int w_dt,
                                                   int b_dt)
{
    const aclDataType param_dt = w_dt >= 0 ? (aclDataType)w_dt
                                 : b_dt >= 0 ? (aclDataType)b_dt : ACL_FLOAT;
    return arch35_template(M, N, (aclDataType)x_dt, param_dt, w_dt >= 0, b_dt >= 0);
}

/* The payload's kernel template for a call of M rows of N (param_dt: the tiling's
 * paramDtype). Atlas A2/A3, LayerNormV4 (FLOAT statistics): the single_read template for BF16
 * input and paramDtype with N = 1024 or 4096 (op_host/layer_norm_v4_single_read_tiling.cpp,
 * priority 1000, ahead of merge_n and common; the transpose template, 100, takes rows of at
 * most 64 only; such a row always fits its UB), with the tiling's coefficient (op_host/
 * layer_norm_v4_tiling_base.cpp). Atlas A2/A3 and inference parts: the transpose template
 * (takes_transpose), the same coefficient. Ascend 950: the two_pass_perf template's constants
 * when it takes the call. */
static void pick_template(ln_payload *P, int arch, aclDataType in_dt, aclDataType param_dt)
{
    if (P->M == 0 || P->N == 0)
        return;
    if (arch == DAV_2201 && P->stat_dt == ACL_FLOAT && in_dt == ACL_BF16 &&
        param_dt == ACL_BF16 && (P->N == 1024 || P->N == 4096)) {
        P->single_read = true;
        P->coefficient = 1.0f / (float)P->N;
        return;
    }
    if ((arch == DAV_2201 || arch == DAV_2002) && P->stat_dt == ACL_FLOAT &&
        takes_transpose(arch == DAV_2002, in_dt, param_dt, P->N)) {
        P->transpose = true;
        P->reshape_adds = arch == DAV_2002;
        P->coefficient = 1.0f / (float)P->N;
        return;
    }
    if (arch != DAV_3510)
        return;
    /* the kernel gets gamma/beta when given, or the op_api's filled ones (zero_bias) */
    const int tmpl = arch35_template(P->M, P->N, in_dt, param_dt,
                                     P->t[T_W].present || P->zero_bias,
                                     P->t[T_B].present || P->zero_bias);
    if (tmpl == LN35_WELFORD) {
        P->welford = true;
        /* a row longer than one tile (every row this template gets: regbase_two_pass holds
         * more per row), whose finalize weighs its positions by tailCount */
        const int64_t tile = welford_tile(in_dt, param_dt, P->t[T_W].present || P->zero_bias,
                                          P->t[T_B].present || P->zero_bias);
        if (tile > 0 && P->N > tile) {
            P->regbase_perf = true;
            P->wf_tile = tile;
        }
        return;
    }
    /* regbase_two_pass: the library's k2Rec, 1 / rLengthOverflow, takes at least one register
     * (layernorm_tiling_impl.cpp GetLayerNormNDTilingInfo) */
    int64_t pow2 = tmpl == LN35_REGBASE_TWO_PASS ? NR_VECTOR_LANES : 1;
    while (pow2 < P->N)
        pow2 *= 2;
    P->regbase_perf = true;
    P->lib_sums = tmpl == LN35_REGBASE_TWO_PASS;
    P->pow2_inv = 1.0f / (float)pow2;
    P->pow2_corr = (float)pow2 / (float)P->N;
}

/* ---- phase one -------------------------------------------------------------------------------- */


/* meanOut/rstdOut on a regbase part: input's rank, input's batch dims, then ones (the
 * vendor checks this on DAV_3510 only; an empty tensor is not checked). */
static aclnnStatus check_stat_shape_3510(const char *call, const aclTensor *input, uint64_t len,
                                         const aclTensor *t, const char *name)
{
    int64_t n = 0;
    if (!t || !numel(t->dims, t->ndim, &n) || n == 0)
        return ACLNN_SUCCESS;
    char s1[256], s2[256];
    fmt_dims(s1, sizeof s1, t->dims, t->ndim);
    fmt_dims(s2, sizeof s2, input->dims, input->ndim);
    if (t->ndim != input->ndim)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu != input rank %llu (%s vs %s)", call,
             name, (unsigned long long)t->ndim, (unsigned long long)input->ndim, s1, s2);
    const uint64_t split = input->ndim - len;
    for (uint64_t i = 0; i < input->ndim; i++) {
        int64_t want = i < split ? input->dims[i] : 1;
        if (t->dims[i] != want)
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s shape %s must be input's batch dims then ones (input %s): dim %llu "
                 "is %lld, expected %lld", call, name, s1, s2, (unsigned long long)i,
                 (long long)t->dims[i], (long long)want);
    }
    return ACLNN_SUCCESS;
}

/* meanOut/rstdOut (when given) hold M elements, one per row (the emulator's stricter rule,
 * docs/emulator.md: the docs' shape [A1..Ai, 1..1], where the vendor's code copies or fills
 * whatever it is given). */
static aclnnStatus check_stat_rows(const char *call, const aclTensor *const *ts, int64_t M)
{
    const aclTensor *input = ts[T_X];
    for (int i = T_MEAN; i <= T_RSTD; i++) {
        int64_t n = -1;
        if (ts[i] && (!numel(ts[i]->dims, ts[i]->ndim, &n) || n != M)) {
            char s1[256], s2[256];
            fmt_dims(s1, sizeof s1, ts[i]->dims, ts[i]->ndim);
            fmt_dims(s2, sizeof s2, input->dims, input->ndim);
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: %s shape %s has %lld elements != M = %lld (one per row of input %s "
                 "over normalizedShape; expected shape [A1..Ai, 1..1])", call, TNAME[i], s1,
                 (long long)n, (long long)M, s2);
        }
    }
    return ACLNN_SUCCESS;
}

/* The opening both op_apis share, in the same order and codes: the out-pointers (161001),
 * the required arguments (CheckNotNull / CheckFastNotNull: input, normalizedShape, out:
 * 161001), the handles checked in the registry before anything is dereferenced, then the
 * part (*soc). */
/* CheckShape's dims, shared by LayerNorm and FastLayerNorm once the ranks have passed:
 * input ends with normalizedShape, weight and bias are normalizedShape, out is input's shape;
 * the first mismatch found, dim by dim, names its tensor. */
static aclnnStatus check_normalized_dims(const char *call, const aclTensor *const ts[T_COUNT],
                                         const int64_t *ns, uint64_t len)
{
    const aclTensor *input = ts[T_X], *out = ts[T_Y];
    const uint64_t split = input->ndim - len;
    for (uint64_t k = 0; k < len; k++) {
        if (input->dims[split + k] != ns[k]) {
            char s1[256], s2[256];
            fmt_dims(s1, sizeof s1, input->dims, input->ndim);
            fmt_dims(s2, sizeof s2, ns, len);
            FAIL(ACLNN_ERR_PARAM_INVALID,
                 "%s: input shape %s does not end with normalizedShape %s (dim %llu)", call, s1,
                 s2, (unsigned long long)(split + k));
        }
        for (int i = T_W; i <= T_B; i++)
            if (ts[i] && ts[i]->dims[k] != ns[k])
                return shape_error(call, TNAME[i], ts[i]->dims, ts[i]->ndim,
                                   "!= normalizedShape", ns, len);
    }
    if (!same_dims(out->dims, out->ndim, input->dims, input->ndim))
        return shape_error(call, "out", out->dims, out->ndim, "!= input shape", input->dims,
                           input->ndim);
    return ACLNN_SUCCESS;
}

/* Phase one's workspace on a device: the executor's graph of aclnn_layer_norm.cpp
 * (exec_workspace.h; docs/emulator.md "Phase one's workspace size"). None for M == 0; for N == 0
 * the Fills of the given statistics (ew_fill_into). Contiguous copies of strided tensors; off
 * Ascend 950, a Fill for an absent weight (ones, in bias's dtype, else input's) and bias (zeros,
 * in weight's, else input's); one kernel: LayerNormV4 (its templates ask for 32 bytes:
 * layer_norm_v4_tiling_base.cpp, _regbase_two_pass{,_perf}_tiling.cpp; FLOAT statistics) or the
 * TBE LayerNormV3 (workspace from compile info, not public: none; statistics in weight's and
 * bias's dtypes); y, mean and rstd allocated by the executor, each given out cast and copied into
 * it, the others left in the workspace. Ascend 950's Welford template (rows too long for
 * regbase_two_pass's UB: `welford`) asks for 16 MiB instead (layer_norm_v4_welford_tiling.cpp
 * WELFORD_DEFAULT_WORKSPACE). */
static uint64_t ln_device_workspace(int arch, bool v4, bool welford, const aclTensor *const *ts,
                                    int64_t M, int64_t N)
{
    if (M > 0 && N == 0) /* aclnn_layer_norm.cpp: the given statistics filled, no kernel */
        return ew_empty_call(arch, ts, T_MEAN, T_RSTD);
    if (M <= 0 || N <= 0)
        return 0;
    ew_graph g = ew_graph_on(arch);
    const aclTensor *w = ts[T_W], *b = ts[T_B];
    const aclDataType in_dt = ts[T_X]->dtype;
    const aclDataType w_dt = w ? w->dtype : b ? b->dtype : in_dt;
    const aclDataType b_dt = b ? b->dtype : w ? w->dtype : in_dt;
    const uint64_t m = (uint64_t)M, n = (uint64_t)N;
    const int reads[3] = {ew_contiguous_copy(&g, ts[T_X]),
                          w || arch == DAV_3510 ? ew_contiguous_copy(&g, w)
                                                : ew_fill(&g, n * aclemu_dtype_size(w_dt)),
                          b || arch == DAV_3510 ? ew_contiguous_copy(&g, b)
                                                : ew_fill(&g, n * aclemu_dtype_size(b_dt))};
    const int k = ew_kernel_reading(&g, reads, 3);
    if (v4)
        ew_kernel_workspace(&g, k, welford ? EW_SYS_WORKSPACE : 32);
    const aclDataType dt[3] = {in_dt, v4 ? ACL_FLOAT : w_dt, v4 ? ACL_FLOAT : b_dt};
    const uint64_t count[3] = {m * n, m, m};
    for (int i = 0; i < 3; i++) {
        const int res = ew_output(&g, k, count[i] * aclemu_dtype_size(dt[i]));
        if (ts[T_Y + i])
            ew_copy_out(&g, res, dt[i], ts[T_Y + i], count[i]);
    }
    return ew_size(&g);
}

static aclnnStatus opening(const char *call, const aclTensor *const ts[T_COUNT],
                           const aclIntArray *normalizedShape, uint64_t *workspaceSize,
                           aclOpExecutor **executor, const aclemu_soc **soc)
{
    aclnnStatus st;
    if ((st = p1_out_pointers(call, workspaceSize, executor)))
        return st;
    if (!ts[T_X])
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: input is NULL", call);
    if (!normalizedShape)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: normalizedShape is NULL", call);
    if (!ts[T_Y])
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: out is NULL", call);
    if ((st = p1_live(call, ts, TNAME, T_COUNT)))
        return st;
    if (!aclemu_handle_check(normalizedShape, ACLEMU_KIND_INT_ARRAY))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape (%p) is not a live aclIntArray",
             call, (const void *)normalizedShape);
    if (!(*soc = aclemu_soc_info(call)))
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    return ACLNN_SUCCESS;
}

static aclnnStatus phase_one(const char *call, const aclemu_executor_ops *ops,
                             const aclTensor *input, const aclIntArray *normalizedShape,
                             const aclTensor *weightOptional, const aclTensor *biasOptional,
                             double eps, aclTensor *out, aclTensor *meanOutOptional,
                             aclTensor *rstdOutOptional, const int32_t *implMode,
                             uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const aclTensor *ts[T_COUNT] = {input, weightOptional, biasOptional, out, meanOutOptional,
                                    rstdOutOptional};

    const aclemu_soc *soc;
    aclnnStatus st = opening(call, ts, normalizedShape, workspaceSize, executor, &soc);
    if (st)
        return st;
    const int arch = soc->npu_arch;
    const bool bf16 = soc->bf16; /* the vendor's list: BF16 on DAV_2201 and regbase parts */
#define DTYPE_SUPPORTED(t) (dtype_ok((t)->dtype) && ((t)->dtype != ACL_BF16 || bf16))
#define DTYPE_FAIL(what, t)                                                                    \
    FAIL(ACLNN_ERR_PARAM_INVALID,                                                              \
         "%s: %s dtype %s is not supported on %s (%s): FLOAT, FLOAT16%s", call, what,          \
         dname((t)->dtype), soc->name, soc->series, bf16 ? ", BF16" : "")

    /* 2. input dtypes: each supported; weight/bias FLOAT or input's; weight = bias */
    const aclDataType in_dt = input->dtype;
    if (!DTYPE_SUPPORTED(input))
        DTYPE_FAIL("input", input);
    for (int i = T_W; i <= T_B; i++) {
        const aclTensor *t = ts[i];
        if (!t)
            continue;
        if (!DTYPE_SUPPORTED(t))
            DTYPE_FAIL(TNAME[i], t);
        if (t->dtype != ACL_FLOAT && t->dtype != in_dt)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be FLOAT or input's dtype %s",
                 call, TNAME[i], dname(t->dtype), dname(in_dt));
    }
    if (weightOptional && biasOptional && weightOptional->dtype != biasOptional->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional dtype %s != biasOptional dtype %s",
             call, dname(weightOptional->dtype), dname(biasOptional->dtype));

    /* 3. output dtypes: each supported (any of them: results are cast) */
    for (int i = T_Y; i <= T_RSTD; i++)
        if (ts[i] && !DTYPE_SUPPORTED(ts[i]))
            DTYPE_FAIL(TNAME[i], ts[i]);
#undef DTYPE_FAIL
#undef DTYPE_SUPPORTED

    /* 4. ranks and shapes, in the vendor's CheckShape order */
    static const int rank_order[T_COUNT] = {T_X, T_Y, T_W, T_B, T_MEAN, T_RSTD};
    for (int j = 0; j < T_COUNT; j++) {
        const aclTensor *t = ts[rank_order[j]];
        if (t && t->ndim > TV_MAX_RANK)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu > %d", call, TNAME[rank_order[j]],
                 (unsigned long long)t->ndim, TV_MAX_RANK);
    }
    const uint64_t len = normalizedShape->size;
    if (len > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape length %llu > %d", call,
             (unsigned long long)len, TV_MAX_RANK);
    if (len < 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape is empty (length must be >= 1)",
             call);
    if (input->ndim < len)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input rank %llu < normalizedShape length %llu", call,
             (unsigned long long)input->ndim, (unsigned long long)len);
    for (int i = T_W; i <= T_B; i++)
        if (ts[i] && ts[i]->ndim != len)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu != normalizedShape length %llu",
                 call, TNAME[i], (unsigned long long)ts[i]->ndim, (unsigned long long)len);
    const int64_t *ns = normalizedShape->values;
    const uint64_t split = input->ndim - len;
    st = check_normalized_dims(call, ts, ns, len);
    if (st)
        return st;

    /* 5. regbase parts: meanOut/rstdOut shapes, and equal to each other */
    if (arch == DAV_3510) {
        if ((st = check_stat_shape_3510(call, input, len, meanOutOptional, TNAME[T_MEAN])) ||
            (st = check_stat_shape_3510(call, input, len, rstdOutOptional, TNAME[T_RSTD])))
            return st;
        if (meanOutOptional && rstdOutOptional &&
            !same_dims(meanOutOptional->dims, meanOutOptional->ndim, rstdOutOptional->dims,
                       rstdOutOptional->ndim))
            return shape_error(call, TNAME[T_MEAN], meanOutOptional->dims,
                               meanOutOptional->ndim, "!= rstdOutOptional shape",
                               rstdOutOptional->dims, rstdOutOptional->ndim);
    }

    /* 6. implMode (aclnnLayerNormWithImplMode) */
    if (implMode) {
        if (*implMode != HIGH_PRECISION && *implMode != HIGH_PERFORMANCE &&
            *implMode != KEEP_FP16)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: implMode %d is not 0, 1 or 2", call, *implMode);
        if (*implMode == KEEP_FP16 &&
            (in_dt != ACL_FLOAT16 || (weightOptional && weightOptional->dtype != ACL_FLOAT16) ||
             (biasOptional && biasOptional->dtype != ACL_FLOAT16)))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: implMode 2 (keep FLOAT16) needs input, "
                 "weightOptional and biasOptional all FLOAT16", call);
    }

    int64_t M = 0, N = 0;
    if (!numel(input->dims, split, &M) || !numel(ns, len, &N))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input element count overflows int64", call);

    /* 7. Stricter than the vendor (docs/emulator.md): meanOut/rstdOut must hold one element
     * per row. The docs give their shape as [A1..Ai, 1..1]; the vendor's code checks it on
     * regbase parts only and otherwise copies M values into whatever it is given. */
    if ((st = check_stat_rows(call, ts, M)))
        return st;

    const aclDataType param_dt = weightOptional ? weightOptional->dtype
                                 : biasOptional ? biasOptional->dtype : in_dt;
    ln_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", call);
    P->call = ops->op_name;
    for (int i = 0; i < T_COUNT; i++)
        snapshot(&P->t[i], ts[i], (i == T_X || i == T_Y) ? (int)split : -1);
    P->M = M;
    P->N = N;
    /* M == 0: the op_api returns an executor with no kernel (aclnn_layer_norm.cpp's empty
     * tensor branch, before N's), so phase two queues nothing (vm_launch) */
    P->no_kernel = M == 0;
    P->eps = (float)eps;
    P->stat_dt = M > 0 && N > 0 && takes_v4(arch, in_dt, param_dt, N) ? ACL_FLOAT : param_dt;
    /* BF16 results: CAST_ROUND (ties away) in the Atlas A2/A3 kernels (op_kernel/
     * layer_norm_v4_align.h, _single_read.h, _transpose.h), CAST_RINT on Ascend 950
     * (arch35/layer_norm_v4_regbase_common.h) */
    P->ties = arch == DAV_2201 ? ACLEMU_TIES_AWAY : ACLEMU_TIES_EVEN;
    /* out = input's dtype: one rounding, the kernel's; else the kernel's, then the cast */
    P->y_round = out->dtype != in_dt && in_dt != ACL_FLOAT;
    P->y_ties = out->dtype == in_dt ? P->ties : ACLEMU_TIES_EVEN;
    /* off regbase parts the op_api fills an absent bias with zeros, which the kernel adds (a
     * -0 result becomes +0); a regbase part's kernel is told there is none and adds nothing */
    P->zero_bias = arch != DAV_3510;
    /* the tiling's paramDtype: on Ascend 950 the kernel gets no weight/bias when they are
     * absent, elsewhere the op_api's filled ones (param_dt) */
    pick_template(P, arch, in_dt, arch != DAV_3510 ? param_dt
                                  : weightOptional ? weightOptional->dtype
                                  : biasOptional ? biasOptional->dtype : ACL_FLOAT);
    /* the executor owns P from here and keeps every tensor, as CANN's does */
    const uint64_t ws =
        ln_device_workspace(arch, takes_v4(arch, in_dt, param_dt, N), P->welford, ts, M, N);
    return p1_finish(call, ops, P, ws, ts, TNAME, T_COUNT, T_Y, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
    aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    return phase_one(P1, &LN_OPS, input, normalizedShape, weightOptional, biasOptional, eps,
                     out, meanOutOptional, rstdOutOptional, NULL, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
    aclTensor *rstdOutOptional, int32_t implMode, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    if (aclemu_fault(P1_MODE))
        return ACLNN_ERR_INNER;
    return phase_one(P1_MODE, &LN_MODE_OPS, input, normalizedShape, weightOptional,
                     biasOptional, eps, out, meanOutOptional, rstdOutOptional, &implMode,
                     workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnLayerNorm(void *workspace, uint64_t workspaceSize,
                                         aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2, executor, workspace, workspaceSize, stream);
}

ACLEMU_EXPORT aclnnStatus aclnnLayerNormWithImplMode(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor,
                                                     aclrtStream stream)
{
    return aclemu_executor_run(P2_MODE, executor, workspace, workspaceSize, stream);
}

/* ---- aclnnFastLayerNorm ------------------------------------------------------------------ */

/* The docs' limit on N (the product of normalizedShape), with the code they give for it. */
#define FAST_MAX_N 583705600LL

/* The ViewCopy of a kernel result into a caller's output (hicann/ops-math conversion/
 * contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams): the same dtype, and the
 * same shape or one element each; the op_api returns its failure as 561103. */
static aclnnStatus fast_view_copy(const char *call, const char *name, const aclTensor *t,
                                  aclDataType dt, const int64_t *dims, uint64_t ndim,
                                  const char *what)
{
    if (t->dtype != dt)
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: %s dtype %s != %s %s (the op_api copies the "
             "kernel's result without a cast)", call, name, dname(t->dtype), what, dname(dt));
    int64_t a = 0, b = 0;
    if (!same_dims(t->dims, t->ndim, dims, ndim) &&
        !(numel(t->dims, t->ndim, &a) && numel(dims, ndim, &b) && a == 1 && b == 1))
    {
        shape_error(call, name, t->dims, t->ndim, "!= the kernel's result (input's batch dims "
                    "then ones; the copy takes one shape or one element each):", dims, ndim);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    return ACLNN_SUCCESS;
}

/* aclnnFastLayerNorm's workspace on a device: the executor's graph of
 * aclnn_fast_layer_norm.cpp (exec_workspace.h; docs/emulator.md "Phase one's workspace size").
 * N == 0: each given statistic gets a Fill of its own shape and dtype, ViewCopy'd into it
 * (norm_common's ProcessEmptyTensorWithValue); M == 0: none. Otherwise Contiguous copies of
 * strided tensors, on every part a Fill for an absent weight (ones, in bias's dtype, else
 * input's) and bias (zeros, in weight's, else input's), N values each alive until the kernel;
 * one LayerNormV4 (32 bytes of tiling workspace, 16 MiB for Ascend 950's Welford template, as
 * ln_device_workspace); y handed to out, rstd and mean each cast to its output's dtype and
 * copied into it, or left in the workspace when not asked for. */
static uint64_t fast_device_workspace(int arch, const aclTensor *const *ts, int64_t M, int64_t N,
                                      bool welford)
{
    if (N == 0)
        return ew_empty_call(arch, ts, T_MEAN, T_RSTD);
    if (M == 0)
        return 0;
    ew_graph g = ew_graph_on(arch);
    const aclTensor *w = ts[T_W], *b = ts[T_B];
    const aclDataType in_dt = ts[T_X]->dtype;
    const aclDataType w_dt = b ? b->dtype : in_dt, b_dt = w ? w->dtype : in_dt;
    const uint64_t m = (uint64_t)M, n = (uint64_t)N;
    const int reads[3] = {
        ew_contiguous_copy(&g, ts[T_X]),
        w ? ew_contiguous_copy(&g, w) : ew_fill(&g, n * aclemu_dtype_size(w_dt)),
        b ? ew_contiguous_copy(&g, b) : ew_fill(&g, n * aclemu_dtype_size(b_dt))};
    const int k = ew_kernel_reading(&g, reads, 3);
    ew_kernel_workspace(&g, k, welford ? EW_SYS_WORKSPACE : 32);
    const int y = ew_output(&g, k, m * n * aclemu_dtype_size(in_dt));
    const int mean = ew_output(&g, k, m * 4), rstd = ew_output(&g, k, m * 4);
    ew_copy_out(&g, y, in_dt, ts[T_Y], m * n);
    if (ts[T_RSTD])
        ew_copy_out(&g, rstd, ACL_FLOAT, ts[T_RSTD], m);
    if (ts[T_MEAN])
        ew_copy_out(&g, mean, ACL_FLOAT, ts[T_MEAN], m);
    return ew_size(&g);
}

static aclnnStatus fast_phase_one(const aclTensor *input, const aclIntArray *normalizedShape,
                                  const aclTensor *weightOptional,
                                  const aclTensor *biasOptional, double eps, aclTensor *out,
                                  aclTensor *meanOutOptional, aclTensor *rstdOutOptional,
                                  uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const char *call = P1_FAST;
    const aclTensor *ts[T_COUNT] = {input, weightOptional, biasOptional, out, meanOutOptional,
                                    rstdOutOptional};
    const aclemu_soc *soc;
    aclnnStatus st = opening(call, ts, normalizedShape, workspaceSize, executor, &soc);
    if (st)
        return st;

    /* 2. input dtypes (CheckInputDtype): one list on every part (BF16 too); weight, then
     * weight = bias, then bias */
#define FAST_DTYPE(what, t)                                                                    \
    do {                                                                                       \
        if (!dtype_ok((t)->dtype))                                                             \
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported: FLOAT16, FLOAT, " \
                 "BF16", call, what, dname((t)->dtype));                                       \
    } while (0)
    const aclDataType in_dt = input->dtype;
    FAST_DTYPE("input", input);
    if (weightOptional) {
        FAST_DTYPE("weightOptional", weightOptional);
        if (weightOptional->dtype != ACL_FLOAT && weightOptional->dtype != in_dt)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional dtype %s must be FLOAT or "
                 "input's dtype %s", call, dname(weightOptional->dtype), dname(in_dt));
    }
    if (weightOptional && biasOptional && weightOptional->dtype != biasOptional->dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional dtype %s != biasOptional dtype %s",
             call, dname(weightOptional->dtype), dname(biasOptional->dtype));
    if (biasOptional) {
        FAST_DTYPE("biasOptional", biasOptional);
        if (biasOptional->dtype != ACL_FLOAT && biasOptional->dtype != in_dt)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: biasOptional dtype %s must be FLOAT or "
                 "input's dtype %s", call, dname(biasOptional->dtype), dname(in_dt));
    }
    /* 3. output dtypes (CheckFastOutputDtype): out, rstd, mean */
    FAST_DTYPE("out", out);
    if (rstdOutOptional)
        FAST_DTYPE("rstdOutOptional", rstdOutOptional);
    if (meanOutOptional)
        FAST_DTYPE("meanOutOptional", meanOutOptional);
#undef FAST_DTYPE

    /* 4. shapes (CheckShape): normalizedShape not empty; ranks <= 8 (out, input, weight, rstd,
     * mean, bias) and its length <= 8; weight's rank; input's rank; bias's rank; the dims */
    const uint64_t len = normalizedShape->size;
    if (len < 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape is empty (length must be >= 1)",
             call);
    static const int rank_order[T_COUNT] = {T_Y, T_X, T_W, T_RSTD, T_MEAN, T_B};
    for (int j = 0; j < T_COUNT; j++) {
        const aclTensor *t = ts[rank_order[j]];
        if (t && t->ndim > TV_MAX_RANK)
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu > %d", call, TNAME[rank_order[j]],
                 (unsigned long long)t->ndim, TV_MAX_RANK);
    }
    if (len > TV_MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: normalizedShape length %llu > %d", call,
             (unsigned long long)len, TV_MAX_RANK);
    if (weightOptional && weightOptional->ndim != len)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: weightOptional rank %llu != normalizedShape length "
             "%llu", call, (unsigned long long)weightOptional->ndim, (unsigned long long)len);
    if (input->ndim < len)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input rank %llu < normalizedShape length %llu", call,
             (unsigned long long)input->ndim, (unsigned long long)len);
    if (biasOptional && biasOptional->ndim != len)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: biasOptional rank %llu != normalizedShape length "
             "%llu", call, (unsigned long long)biasOptional->ndim, (unsigned long long)len);
    const int64_t *ns = normalizedShape->values;
    const uint64_t split = input->ndim - len;
    st = check_normalized_dims(call, ts, ns, len);
    if (st)
        return st;

    int64_t M = 0, N = 0;
    if (!numel(input->dims, split, &M) || !numel(ns, len, &N))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: input element count overflows int64", call);

    ln_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", call);
    P->call = FAST_OPS.op_name;
    for (int i = 0; i < T_COUNT; i++)
        snapshot(&P->t[i], ts[i], (i == T_X || i == T_Y) ? (int)split : -1);
    P->M = M;
    P->N = N;
    /* M == 0 with N > 0: an executor with no kernel (aclnn_fast_layer_norm.cpp: its N == 0
     * branch, which fills the statistics, comes first), so phase two queues nothing */
    P->no_kernel = M == 0 && N > 0;
    P->eps = (float)eps;
    P->stat_dt = ACL_FLOAT; /* LayerNormV4 */
    const int arch = soc->npu_arch;
    P->ties = arch == DAV_2201 ? ACLEMU_TIES_AWAY : ACLEMU_TIES_EVEN; /* as aclnnLayerNorm's */
    P->y_round = false;  /* out is input's dtype (the copy below) */
    P->y_ties = P->ties;
    P->zero_bias = true; /* the op_api's Fill of an absent bias */
    /* the op_api fills an absent weight/bias in the other one's dtype, else input's */
    pick_template(P, arch, in_dt, weightOptional ? weightOptional->dtype
                                  : biasOptional ? biasOptional->dtype : in_dt);
#define REFUSE(code, ...)              \
    do {                               \
        free(P);                       \
        FAIL(code, __VA_ARGS__);       \
    } while (0)

    /* 5. empty: N == 0 fills meanOut with 0 and rstdOut with NaN (the launch does), M == 0
     * writes nothing; neither reaches the kernel. Stricter (docs/emulator.md): mean/rstd of
     * M elements, as aclnnLayerNorm's, where nothing below compares their shape. */
    if (M == 0 || N == 0) {
        if ((st = check_stat_rows(call, ts, M))) {
            free(P);
            return st;
        }
        return p1_finish(call, &FAST_OPS, P,
                         fast_device_workspace(soc->npu_arch, ts, M, N, false), ts, TNAME,
                         T_COUNT, T_Y, workspaceSize, executor);
    }

    /* 6. Stricter (docs/emulator.md): the parts the docs call unsupported where the L0 op
     * finds no kernel (its status is discarded by l0op::LayerNormV4: the device's phase one
     * succeeds and its launch fails). op_host/layer_norm_v4_def.cpp configures none for the
     * Atlas training series; on Atlas inference parts FLOAT16 x only, whose one tiling
     * template there (layer_norm_v4_transpose_tiling.cpp) takes rows of at most 64 elements
     * that are not a whole number of 32-byte blocks. */
    if (arch != DAV_2201 && arch != DAV_3510 && arch != DAV_2002)
        REFUSE(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): no "
               "LayerNormV4 kernel there", call, soc->name, soc->series);
    if (arch == DAV_2002 && in_dt != ACL_FLOAT16)
        REFUSE(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: input dtype %s is not supported on %s "
               "(%s): its LayerNormV4 kernel takes FLOAT16 only", call, dname(in_dt),
               soc->name, soc->series);
    if (arch == DAV_2002 && (N > 64 || N % 16 == 0))
        REFUSE(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: normalized size N = %lld is not "
               "supported on %s (%s): its LayerNormV4 tiling takes N <= 64, not a multiple of "
               "16", call, (long long)N, soc->name, soc->series);
    /* 7. the docs' limit on N (their code for it) */
    if (N > FAST_MAX_N)
        REFUSE(ACLNN_ERR_INNER_NULLPTR, "%s: normalized size N = %lld > %lld (the documented "
               "limit)", call, (long long)N, FAST_MAX_N);

    /* 8. the copies of the kernel's results: out (no cast), then rstd, then mean (each cast
     * to its dtype first) */
    if ((st = fast_view_copy(call, "out", out, in_dt, input->dims, input->ndim,
                             "input's dtype"))) {
        free(P);
        return st;
    }
    int64_t stat_dims[TV_MAX_RANK];
    for (uint64_t i = 0; i < input->ndim; i++)
        stat_dims[i] = i < split ? input->dims[i] : 1;
    if (rstdOutOptional &&
        (st = fast_view_copy(call, TNAME[T_RSTD], rstdOutOptional, rstdOutOptional->dtype,
                             stat_dims, input->ndim, ""))) {
        free(P);
        return st;
    }
    if (meanOutOptional &&
        (st = fast_view_copy(call, TNAME[T_MEAN], meanOutOptional, meanOutOptional->dtype,
                             stat_dims, input->ndim, ""))) {
        free(P);
        return st;
    }
#undef REFUSE
    return p1_finish(call, &FAST_OPS, P, fast_device_workspace(soc->npu_arch, ts, M, N, P->welford),
                     ts, TNAME, T_COUNT, T_Y, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnFastLayerNormGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
    aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    if (aclemu_fault(P1_FAST))
        return ACLNN_ERR_INNER;
    return fast_phase_one(input, normalizedShape, weightOptional, biasOptional, eps, out,
                          meanOutOptional, rstdOutOptional, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnFastLayerNorm(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, aclrtStream stream)
{
    return aclemu_executor_run(P2_FAST, executor, workspace, workspaceSize, stream);
}
