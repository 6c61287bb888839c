/*
 * LayerNormV4's transpose templates (Atlas A2/A3: op_kernel/layer_norm_v4_transpose.h;
 * Atlas inference: layer_norm_v4_transpose_310p.h), included once by layer_norm.c, whose
 * ln_task, store_stats and STAT_ROWS it uses. The tiling (op_host/
 * layer_norm_v4_transpose_tiling.cpp, priority 100, ahead of every other template) takes rows
 * of N <= 64 elements that are not a whole number of 32-byte blocks of input.
 *
 * The kernels copy a UB loop's rows in as 16 lines and TransDataTo5HD + DoReshape put element
 * r of every row into vector row r, one row of input per lane (the layout aclnnLayerNorm-
 * Backward's transpose template shares: layer_norm_backward_transpose.h). Every operation
 * after that is lane-wise (the Sub/Mul broadcast a lane's mean/rstd down its column, Muls/Adds
 * a column's weight/bias across it), so a row's bits depend on its own elements only, not on
 * the tiling's cores, UB loops or borrow factor: the emulator runs row by row. Per row, every
 * step one float rounding (c: the tiling's 1.0f / N, layer_norm_v4_tiling_base.cpp):
 *   310P only: x + 0 (its DoReshape is an Adds of 0 in FLOAT16: -0 becomes +0);
 *   mean = DoReduce(x * c)                     (Muls, then the dichotomy: nr_dichotomy_sum)
 *   d = x - mean                               (DoSub)
 *   var = DoReduce((d * d) * c)                (Mul, Muls)
 *   rstd = 1 / sqrt(var + eps)                 (Adds, vector Sqrt, Div of a block of ones)
 *   y = ((d * rstd) * weight) + bias           (DoMul, DoMulGamma's Muls, DoAddBeta's Adds)
 * then y cast to input's dtype (BF16 CAST_ROUND on A2/A3, FLOAT16 CAST_NONE: to even), mean
 * and rstd written as FLOAT. The weight/bias are the op_api's ones/zeros when absent (a
 * multiply by ones is skipped: the same bits). An operation on two operands that may both be
 * NaN keeps the first one's (norm_rows.h nr_nan_first_*), in the kernel's operand order.
 * N <= 64: scalar code on stack rows, compiled once (not per x86-64 level).
 */

#define LNT_MAX_N 64 /* TRANSPOSE_ROW_LIMIT */

/* Whether a LayerNormV4 call (FLOAT statistics) on Atlas A2/A3 or, inference310p, an Atlas
 * inference part takes the transpose template (layer_norm_v4_transpose_tiling.cpp IsCapable):
 * N <= 64 and not a multiple of 32 / sizeof(input) (rowAlign), and a tiling key for (input,
 * paramDtype): FLOAT16 with FLOAT16 or FLOAT; off 310P also FLOAT with FLOAT, BF16 with FLOAT
 * or BF16. Every V4 call phase one lets through there has a key, so aclnnLayerNorm's V4 calls
 * of N < 64 all take it (merge_n, common and single_read never see them). */
static bool takes_transpose(bool inference310p, aclDataType in_dt, aclDataType param_dt,
                            int64_t N)
{
    const int64_t align = in_dt == ACL_FLOAT ? 8 : 16;
    if (N > LNT_MAX_N || N % align == 0)
        return false;
    if (in_dt == ACL_FLOAT16)
        return param_dt == ACL_FLOAT16 || param_dt == ACL_FLOAT;
    if (inference310p)
        return false;
    if (in_dt == ACL_FLOAT)
        return param_dt == ACL_FLOAT;
    return in_dt == ACL_BF16 && (param_dt == ACL_FLOAT || param_dt == ACL_BF16);
}

/* Rows [begin, end) (a chunk of aclemu_parallel_for): the chain above, row by row. */
static void transpose_body(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    (void)chunk;
    const ln_task *T = ctx;
    const ln_payload *P = &T->p;
    const tdesc *x = &P->t[T_X], *y = &P->t[T_Y];
    const int64_t N = P->N;
    const float c = P->coefficient, eps = P->eps;
    float bx[LNT_MAX_N], xf[LNT_MAX_N], d[LNT_MAX_N], t[LNT_MAX_N];
    float smean[STAT_ROWS], srstd[STAT_ROWS];
    for (int64_t s0 = begin; s0 < end; s0 += STAT_ROWS) {
        const int64_t cnt = end - s0 < STAT_ROWS ? end - s0 : STAT_ROWS;
        for (int64_t j = 0; j < cnt; j++) {
            const int64_t m = s0 + j;
            const float *rx = get_tile(row_base(x, m), x->dtype, &x->inner, 0, N, bx);
            for (int64_t r = 0; r < N; r++) {
                xf[r] = P->reshape_adds ? rx[r] + 0.0f : rx[r];
                t[r] = xf[r] * c;
            }
            const float mean = nr_dichotomy_sum(t, N);
            for (int64_t r = 0; r < N; r++) {
                d[r] = nr_nan_first_sub(xf[r], mean);
                t[r] = (d[r] * d[r]) * c;
            }
            const float var = nr_dichotomy_sum(t, N);
            const float rstd = 1.0f / sqrtf(nr_nan_first_add(var, eps));
            for (int64_t r = 0; r < N; r++) {
                float v = nr_nan_first_mul(d[r], rstd);
                if (T->w)
                    v = nr_nan_first_mul(v, T->w[r]);
                if (T->b)
                    v = nr_nan_first_add(v, T->b[r]);
                t[r] = v;
            }
            if (P->y_round) /* made in input's dtype, then cast */
                aclemu_round_floats(x->dtype, P->ties, t, N);
            put_tile(row_base(y, m), y->dtype, P->y_ties, &y->inner, 0, N, t);
            smean[j] = mean;
            srstd[j] = rstd;
        }
        store_stats(P, s0, cnt, smean, srstd);
    }
}

#undef LNT_MAX_N
