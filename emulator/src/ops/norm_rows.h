/*
 * The run of a row-wise norm kernel over gamma (RmsNorm, GemmaRmsNorm, AddRmsNorm,
 * InplaceAddRmsNorm, AddLayerNorm, DeepNorm): its launch (the operator's tensor descriptors
 * given the run's addresses, gamma and beta read as float once per run, one row buffer per
 * chunk of rows, the memory pinned until the task is released), the fixed-order lane sums of
 * a row (the kernels' Muls-then-ReduceSum steps) and their fold, so the split of rows over
 * threads never changes a bit; the centring and the scale-and-shift of a LayerNorm row.
 *
 * An operator's task is a calloc'ed struct holding its payload (with the descriptors) and a
 * norm_rows; its release function calls nr_release, then frees the struct.
 */
#ifndef ACLEMU_OPS_NORM_ROWS_H_
#define ACLEMU_OPS_NORM_ROWS_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "emu_internal.h"
#include "tensor_view.h"

#define NR_LANES 16      /* independent accumulators of a row's sum */
#define NR_MAX_CHUNKS 16 /* row chunks per run (each has its own row buffer) */

typedef struct {
    const float *gamma; /* gamma as float (in place or in gamma_buf) */
    const float *beta;  /* beta as float (in place or in gamma_buf + N), for norms with one */
    float *gamma_buf;   /* 2 * N floats: gamma's, then beta's */
    float *row_buf;     /* nchunks * row_floats */
    int64_t nchunks, row_floats;
    void *pins[TV_MAX_VIEWS + 1];
    int npins;
} norm_rows;

/* The lanes' sums folded by a fixed pairwise tree (lane l + s into lane l, s halving). */
static inline float nr_fold(float acc[NR_LANES])
{
    for (int s = NR_LANES / 2; s > 0; s /= 2)
        for (int l = 0; l < s; l++)
            acc[l] += acc[l + s];
    return acc[0];
}

/* sum(x[i] * avg) in a fixed order: each term rounded (the kernels' Muls before their
 * ReduceSum), lane l taking x[l], x[l + NR_LANES], ...; the lanes fold by nr_fold's tree. */
static inline float nr_scaled_sum(const float *x, int64_t n, float avg)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++)
            acc[l] += x[i + l] * avg;
    for (int l = 0; i + l < n; l++)
        acc[l] += x[i + l] * avg;
    return nr_fold(acc);
}

/* sum(x[i] * x[i] * avg) in nr_scaled_sum's order: each square rounded, scaled by avg and
 * rounded (the kernels' Mul then Muls). */
static inline float nr_scaled_sum_squares(const float *x, int64_t n, float avg)
{
    float acc[NR_LANES] = {0};
    int64_t i = 0;
    for (; i + NR_LANES <= n; i += NR_LANES)
        for (int l = 0; l < NR_LANES; l++) {
            float q = x[i + l] * x[i + l];
            acc[l] += q * avg;
        }
    for (int l = 0; i + l < n; l++) {
        float q = x[i + l] * x[i + l];
        acc[l] += q * avg;
    }
    return nr_fold(acc);
}

/* d[i] = x[i] - mean (d may be x): a row centred on its mean. */
static inline void nr_center(float *d, const float *x, int64_t n, float mean)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = x[i] - mean;
}

/* y[i] = (d[i] * rstd) * gamma[i] + beta[i], each step rounded to float (y may be d): the
 * LayerNorm-style kernels' Muls, Mul, Add after the statistics (AddLayerNorm, DeepNorm). */
static inline void nr_scale_shift(float *y, const float *d, int64_t n, float rstd,
                                  const float *gamma, const float *beta)
{
    for (int64_t i = 0; i < n; i++) {
        float t = d[i] * rstd;
        t *= gamma[i];
        y[i] = t + beta[i];
    }
}

/* The row buffer of chunk `chunk` (row_floats floats). */
static inline float *nr_chunk_buf(const norm_rows *R, int64_t chunk)
{
    return R->row_buf + chunk * R->row_floats;
}

/* Reads gamma (N elements of any dtype and layout) as floats, for the whole run. */
static inline void nr_load_gamma(norm_rows *R, const tdesc *g, int64_t N)
{
    R->gamma = get_tile(view_base(g), g->dtype, &g->inner, 0, N, R->gamma_buf);
}

/* Adds offset to each of gamma's N floats (in float, one rounding each), in gamma_buf (gamma
 * may be the tensor's own memory): GemmaRmsNorm's (1 + gamma). */
static inline void nr_offset_gamma(norm_rows *R, int64_t N, float offset)
{
    for (int64_t i = 0; i < N; i++)
        R->gamma_buf[i] = R->gamma[i] + offset;
    R->gamma = R->gamma_buf;
}

/* Reads beta (N elements of any dtype and layout) as floats, for the whole run. */
static inline void nr_load_beta(norm_rows *R, const tdesc *b, int64_t N)
{
    R->beta = get_tile(view_base(b), b->dtype, &b->inner, 0, N, R->gamma_buf + N);
}

/* Unpins the run's memory and frees the buffers (not the task). */
static inline void nr_release(norm_rows *R)
{
    for (int i = 0; i < R->npins; i++)
        aclemu_device_unpin(R->pins[i]);
    free(R->gamma_buf);
    free(R->row_buf);
}

/* Phase two of a norm over M rows of N: t[0..n) take the run's addresses; for M, N > 0 the
 * buffers (row_floats per chunk) are allocated; then the views are checked, pinned and the
 * task queued (views_launch). On failure the message is set and release(task) has run. */
static inline aclnnStatus nr_launch(const char *call, aclrtStream stream, tdesc *t,
                                    const char *const *names, int n, void *const *addrs,
                                    void *workspace, norm_rows *R, int64_t M, int64_t N,
                                    int64_t row_floats, aclemu_task_fn run,
                                    aclemu_task_fn release, void *task)
{
    const tdesc *views[TV_MAX_VIEWS];
    for (int i = 0; i < n; i++) {
        t[i].data = addrs[i];
        views[i] = &t[i];
    }
    if (M > 0 && N > 0) {
        R->nchunks = M < NR_MAX_CHUNKS ? M : NR_MAX_CHUNKS;
        R->row_floats = row_floats;
        R->row_buf = malloc((size_t)(R->nchunks * row_floats) * sizeof(float));
        R->gamma_buf = malloc((size_t)(2 * N) * sizeof(float));
        if (!R->row_buf || !R->gamma_buf) {
            aclemu_set_error("%s: out of host memory for the row buffers (%lld floats)", call,
                             (long long)(R->nchunks * row_floats + 2 * N));
            release(task);
            return ACLNN_ERR_INNER;
        }
    }
    return views_launch(call, stream, views, names, n, workspace, 0, R->pins, &R->npins, run,
                        release, task);
}

#endif /* ACLEMU_OPS_NORM_ROWS_H_ */
