/*
 * The Atlas A2/A3 LayerNormGradV3 Transpose template (N <= 64, N not a whole number of 32-byte
 * blocks of gradOut's dtype), included once by layer_norm_backward.c, whose lnb_task, block
 * partials (lnb_block_parts, lnb_block_done), stats_at and round_grad_input it uses. Its own
 * file because its order is unlike the row kernel's (layer_norm_backward_rows.h): the device
 * lays each UB loop's rows out across 16 "lines" and reduces across rows lane by lane.
 *
 * From hicann/ops-nn norm/layer_norm_grad_v3 (docs/emulator.md, aclnnLayerNormBackward
 * "Atlas A2/A3 bit for bit"):
 * - op_host/layer_norm_grad_v3_transpose_tiling.cpp DoOpTiling: rows per core block
 *   blockFormer = ceil(M / cores), rows per UB loop ubFormer from a search down from
 *   min(maxUbFormer, blockFormer) (lnb_transpose_ub_rows, run literally); 1.0f / N on the host.
 * - op_kernel/layer_norm_grad_v3_transpose.h: a loop of len rows is copied in as 16 lines
 *   (CopyInPad), line i < former = len - 16 * (bF - 1) holding bF = ceil(len / 16) rows, the
 *   others bF - 1 and zeros; TransDataTo5HD and DoReshape make of each column a vector of
 *   16 * bF slots, slot 16 * b + i holding row b of line i, so slot s is valid iff s < len.
 *   - per slot: x_hat = (x - mean') * rstd', mean' = mean + 0, rstd' = rstd + 0 (the Adds
 *     after the transposes, over the len valid slots only); the gradWeight term x_hat * dy;
 *     g = dy * gamma; the row sums of g * x_hat and g by DoReduce's dichotomy over the N
 *     columns (norm_rows.h nr_dichotomy_sum); gradInput ((g - x_hat * m3) - m2) * rstd',
 *     m = S * (1/N);
 *   - the invalid slots past len hold x = dy = +0 and, for mean and rstd, what CopyInPad
 *     left there (Adds covers len slots only): lines of align8(bF) floats, line s / align8(bF)
 *     at position s % align8(bF), its row's value or the line's zero padding (garbage_stat);
 *     so their gradWeight term is ((0 - mean) * rstd) * 0, +0 or -0 for finite stats;
 *   - gradWeight/gradBias: per loop and column, AscendC's counter-mode ReduceSum over the
 *     16 * bF slots in slot order (DoLastAxisReduce; norm_rows.h nr_fold_vector_lanes per
 *     repeat of 64 slots, repeats added in order from +0), added to the core's vector
 *     (zeroed) in loop order; the cores' vectors added in core order from +0
 *     (DeterministicComputeGammaBeta: layer_norm_backward.c lnb_block_done).
 * N <= 64 columns: the kernel is scalar, row by row in slot order, with fixed-size stack
 * buffers (one repeat of slots: 64 x N floats per sum), so no call allocates.
 */

#define LNBT_LINES 16 /* TRANSPOSE_C0_SIZE: the lines a loop's rows are laid out in */
#define LNBT_MAX_N 64 /* TRANSPOSE_COL_LIMIT */

/* The tiling's rows per UB loop (ubFormer), layer_norm_grad_v3_transpose_tiling.cpp
 * DoOpTiling: curUbSize = UB - 64 * 4 * 3 - colAlign * 32; from min(curUbSize / (N * 16 + 12),
 * blockFormer) down, the first count whose borrow factor bF = ceil(rows / 16) fits
 * align16(bF) * 16 * 4 * 3 + align16(bF * N) * 16 * 4 * 4 bytes in curUbSize. Run as the
 * tiling runs it: the loop's first fit is what the kernel sees. */
static int64_t lnb_transpose_ub_rows(int64_t block_rows, int64_t N, int64_t col_align,
                                     uint64_t ub_bytes)
{
    const uint64_t cur_ub = ub_bytes - LNBT_MAX_N * 4 * 3 - (uint64_t)col_align * 32;
    const uint64_t max_rows = cur_ub / ((uint64_t)N * 4 * 4 + 3 * 4);
    int64_t rows = 0;
    for (int64_t cur = (int64_t)(max_rows < (uint64_t)block_rows ? max_rows : (uint64_t)block_rows);
         cur > 0; cur--) {
        rows = cur;
        const uint64_t bf = ((uint64_t)cur + LNBT_LINES - 1) / LNBT_LINES;
        const uint64_t align_b_col = (bf * (uint64_t)N + 15) / 16 * 16;
        const uint64_t align_b = (bf + 15) / 16 * 16;
        if (align_b * LNBT_LINES * 4 * 3 + align_b_col * LNBT_LINES * 4 * 4 <= cur_ub)
            break;
    }
    return rows;
}

/* One UB loop's layout: len rows in 16 lines, lines < former holding bf rows, the rest bf - 1. */
typedef struct {
    int64_t len, bf, former, slots, stat_line; /* stat_line: align8(bf), mean/rstd's line */
} lnbt_loop;

static inline int64_t lnbt_line_start(const lnbt_loop *L, int64_t i)
{
    return i < L->former ? i * L->bf : L->former * L->bf + (i - L->former) * (L->bf - 1);
}

static inline int64_t lnbt_line_rows(const lnbt_loop *L, int64_t i)
{
    return i < L->former ? L->bf : L->bf - 1;
}

/* A mean or rstd value of the loop starting at row m0 as the kernel's UB holds it at an
 * invalid slot s >= len: CopyInPad's line layout (line s / align8(bf), its position
 * s % align8(bf): that row's value, or the line's zero padding). */
static inline float lnbt_garbage_stat(const tdesc *d, const lnbt_loop *L, int64_t m0,
                                      int64_t s)
{
    const int64_t line = s / L->stat_line, q = s % L->stat_line;
    float buf;
    return q < lnbt_line_rows(L, line) ? *stats_at(d, m0 + lnbt_line_start(L, line) + q, 1, &buf)
                                       : 0.0f;
}

/* One UB loop of rows [m0, m0 + len): gradInput of its rows, and its gradWeight/gradBias
 * ReduceSums added to the core block's pw, pb (NULL: not requested). */
static void lnbt_loop_run(const lnb_task *T, int64_t m0, int64_t len, float *restrict pw,
                          float *restrict pb)
{
    const lnb_payload *P = &T->p;
    const tdesc *dy = &P->t[T_DY], *x = &P->t[T_X], *dx = &P->t[T_DX];
    const tdesc *dmean = &P->t[T_MEAN], *drstd = &P->t[T_RSTD];
    const int64_t N = P->N;
    const bool sums = P->mask[0], parts = pw != NULL;
    const float coff = 1.0f / (float)N;
    lnbt_loop L;
    L.len = len;
    L.bf = (len + LNBT_LINES - 1) / LNBT_LINES;
    L.former = len - LNBT_LINES * (L.bf - 1);
    L.slots = LNBT_LINES * L.bf;
    L.stat_line = (L.bf + 7) / 8 * 8;
    /* the ReduceSums' accumulators (ACC_VAL, cleared per call) and one repeat of slots per
     * column: lanes[c][l] is slot 64 * k + l of column c */
    float accw[LNBT_MAX_N], accb[LNBT_MAX_N];
    float lanes_w[LNBT_MAX_N][NR_VECTOR_LANES], lanes_b[LNBT_MAX_N][NR_VECTOR_LANES];
    float bdy[LNBT_MAX_N], bx[LNBT_MAX_N], xh[LNBT_MAX_N], g[LNBT_MAX_N], t[LNBT_MAX_N];
    float bdx[LNBT_MAX_N];
    for (int64_t c = 0; c < N; c++)
        accw[c] = accb[c] = 0.0f;
    for (int64_t s0 = 0; s0 < L.slots; s0 += NR_VECTOR_LANES) {
        for (int64_t l = 0; l < NR_VECTOR_LANES; l++) {
            const int64_t s = s0 + l;
            if (s >= L.slots) { /* the count's last repeat: masked lanes, +0 */
                if (parts)
                    for (int64_t c = 0; c < N; c++)
                        lanes_w[c][l] = lanes_b[c][l] = 0.0f;
                continue;
            }
            if (s >= len) { /* an invalid slot: x = dy = +0, mean/rstd what UB holds */
                if (parts) {
                    const float mean = lnbt_garbage_stat(dmean, &L, m0, s);
                    const float rstd = lnbt_garbage_stat(drstd, &L, m0, s);
                    const float w = ((0.0f - mean) * rstd) * 0.0f;
                    for (int64_t c = 0; c < N; c++) {
                        lanes_w[c][l] = w;
                        lanes_b[c][l] = 0.0f;
                    }
                }
                continue;
            }
            const int64_t line = s % LNBT_LINES, b = s / LNBT_LINES;
            const int64_t m = m0 + lnbt_line_start(&L, line) + b;
            float sb;
            const float mean = *stats_at(dmean, m, 1, &sb) + 0.0f;
            const float rstd = *stats_at(drstd, m, 1, &sb) + 0.0f;
            const float *rdy = get_tile(row_base(dy, m), dy->dtype, &dy->inner, 0, N, bdy);
            const float *rx = get_tile(row_base(x, m), x->dtype, &x->inner, 0, N, bx);
            for (int64_t c = 0; c < N; c++)
                xh[c] = (rx[c] - mean) * rstd;
            if (parts)
                for (int64_t c = 0; c < N; c++) {
                    lanes_w[c][l] = xh[c] * rdy[c];
                    lanes_b[c][l] = rdy[c];
                }
            if (!sums)
                continue;
            for (int64_t c = 0; c < N; c++) {
                g[c] = rdy[c] * T->w[c];
                t[c] = g[c] * xh[c];
            }
            const float m3 = nr_dichotomy_sum(t, N) * coff;
            for (int64_t c = 0; c < N; c++)
                t[c] = g[c];
            const float m2 = nr_dichotomy_sum(t, N) * coff;
            for (int64_t c = 0; c < N; c++)
                bdx[c] = ((g[c] - xh[c] * m3) - m2) * rstd;
            if (P->dx_round)
                round_grad_input(bdx, N, x->dtype, P->bf16_away);
            put_tile(row_base(dx, m), dx->dtype, P->dx_ties, &dx->inner, 0, N, bdx);
        }
        if (parts)
            for (int64_t c = 0; c < N; c++) {
                accw[c] += nr_fold_vector_lanes(lanes_w[c]);
                accb[c] += nr_fold_vector_lanes(lanes_b[c]);
            }
    }
    if (parts)
        for (int64_t c = 0; c < N; c++) {
            pw[c] = pw[c] + accw[c];
            pb[c] = pb[c] + accb[c];
        }
}

/* Core blocks [first, last) (a chunk of aclemu_parallel_for, as rows_body's): each block's
 * loops of ubFormer rows (the last one shorter) in order, its partials from +0. */
static void lnbt_blocks_body(void *ctx, int64_t chunk, int64_t first, int64_t last)
{
    (void)chunk;
    lnb_task *T = ctx;
    const lnb_payload *P = &T->p;
    const int64_t rows = P->tiling.block_rows, ub_rows = P->tiling.ub_rows, N = P->N;
    for (int64_t b = first; b < last; b++) {
        const int64_t begin = b * rows;
        const int64_t end = P->M - begin < rows ? P->M : begin + rows;
        float *pw = NULL, *pb = NULL;
        if (P->parts) {
            pw = lnb_block_parts(T, b);
            pb = pw + N;
            for (int64_t c = 0; c < N; c++)
                pw[c] = pb[c] = 0.0f;
        }
        for (int64_t m0 = begin; m0 < end; m0 += ub_rows)
            lnbt_loop_run(T, m0, end - m0 < ub_rows ? end - m0 : ub_rows, pw, pb);
        if (P->parts)
            lnb_block_done(T, b);
    }
}

#undef LNBT_LINES
#undef LNBT_MAX_N
