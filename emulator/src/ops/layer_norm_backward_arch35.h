/*
 * aclnnLayerNormBackward on Ascend 950 (NpuArch 3510): the arch35 LayerNormGradV3 kernels
 * (hicann/ops-nn norm/layer_norm_grad_v3/op_kernel/arch35), which layer_norm_backward.c
 * runs instead of the Atlas A2/A3 row kernel on that part. docs/emulator.md,
 * aclnnLayerNormBackward "Ascend 950 bit for bit", gives the order and the assumptions.
 */
#ifndef ACLEMU_OPS_LAYER_NORM_BACKWARD_ARCH35_H_
#define ACLEMU_OPS_LAYER_NORM_BACKWARD_ARCH35_H_

#include <stdbool.h>
#include <stdint.h>

#include "tensor_view.h"

/* The arch35 templates by their tiling keys' hundreds digit (op_host/
 * layer_norm_grad_v3_tiling.h): what layer_norm_backward.c's tiling records for the part. */
enum { LNB35_RECOMPUTE = 5, LNB35_BIG_M = 6, LNB35_BIG_N = 7 };

/* The template the arch35 tiling takes for M rows of N columns (the first capable in
 * priority order: GroupedReduceBigM, GroupedReduceBigN, Recompute). */
int lnb35_template(int64_t M, int64_t N);

/* One call's tensors as the arch35 kernel reads them. */
typedef struct {
    const tdesc *dy, *x, *mean, *rstd; /* inputs ([M, N] views; mean, rstd flat) */
    const tdesc *dx, *dw, *db;         /* outputs; NULL when not requested */
    const float *w;                    /* gamma as N floats (ones when absent); read when dx */
    int64_t M, N;                      /* M, N > 0 */
    bool dx_round;                     /* round gradInput to input's dtype before its store */
} lnb35_call;

/* Whether the call runs an arch35 template (tmpl from lnb35_template on Ascend 950; 0 on the
 * other parts, which run the A2/A3 row kernel). */
static inline bool lnb35_runs(int tmpl)
{
    return tmpl == LNB35_RECOMPUTE || tmpl == LNB35_BIG_M || tmpl == LNB35_BIG_N;
}

/* Template tmpl (lnb35_runs): gradInput row by row, gradWeight/gradBias column tile by column
 * tile. Returns false when out of host memory (before anything is written: its buffers are
 * taken first). */
bool lnb35_run_kernel(const lnb35_call *c, int tmpl);

#endif
