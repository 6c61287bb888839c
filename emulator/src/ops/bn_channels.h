/*
 * The channel views of the BatchNorm operators (aclnnBatchNorm, aclnnBatchNormBackward,
 * aclnnBatchNormElemt): a tensor split around its channel's dim, one channel's values loaded
 * as floats or stored, one element of a [C] vector written, and a [C] vector read whole (or a
 * fill where it is not given); the inference normalization of one channel, which
 * aclnnBatchNorm (training=false) and aclnnBatchNormElemt (through the op_api's BatchNorm)
 * share. Channels are independent, so these keep each kernel's split of channels over
 * threads free of any effect on the bits. And the task their launches queue (bn_channels.c).
 */
#ifndef ACLEMU_OPS_BN_CHANNELS_H_
#define ACLEMU_OPS_BN_CHANNELS_H_

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "emu_internal.h"
#include "tensor_view.h"
#include "exec_workspace.h"
#include "norm_rows.h"

/* The layouts of a tensor's dims before and after the channel's. */
typedef struct {
    lay_t pre, post;
    int64_t cstride, inner;
} chan_lay;

static inline void chan_lay_build(chan_lay *L, const tdesc *d, int caxis)
{
    lay_build(&L->pre, d->dims, d->strides, caxis);
    lay_build(&L->post, d->dims + caxis + 1, d->strides + caxis + 1, d->ndim - caxis - 1);
    L->cstride = d->strides[caxis];
    L->inner = 1;
    for (int i = caxis + 1; i < d->ndim; i++)
        L->inner *= d->dims[i];
}

/* Channel c's outer * inner values as floats into dst, in the tensor's logical order. */
static inline void load_channel(const tdesc *d, const chan_lay *L, int64_t c, int64_t outer,
                                float *dst)
{
    for (int64_t o = 0; o < outer; o++) {
        const char *base = view_base(d) + (lay_offset(&L->pre, o) + c * L->cstride) * d->es;
        float *run = dst + o * L->inner;
        const float *src = get_tile(base, d->dtype, &L->post, 0, L->inner, run);
        if (src != run)
            memcpy(run, src, (size_t)L->inner * sizeof(float));
    }
}

static inline void store_channel(const tdesc *d, const chan_lay *L, int64_t c, int64_t outer,
                                 aclemu_ties ties, const float *src)
{
    for (int64_t o = 0; o < outer; o++) {
        char *base = view_base(d) + (lay_offset(&L->pre, o) + c * L->cstride) * d->es;
        put_tile(base, d->dtype, ties, &L->post, 0, L->inner, src + o * L->inner);
    }
}

/* Element c of a vector, rounded to its dtype (ties to even). */
static inline void put_one(const tdesc *d, int64_t c, float v)
{
    put_tile(view_base(d), d->dtype, ACLEMU_TIES_EVEN, &d->inner, c, 1, &v);
}

/* A kernel's two per-channel results, C floats each one after the other in vals, into their
 * [C] outputs a and b: called once every channel is read, since an output may overlap an
 * input (aclnnBatchNormStats' mean and invstd, aclnnBatchNormReduce's sums). */
static inline void put_two(const tdesc *a, const tdesc *b, const float *vals, int64_t C)
{
    for (int64_t c = 0; c < C; c++) {
        put_one(a, c, vals[c]);
        put_one(b, c, vals[C + c]);
    }
}

/* A per-channel vector as floats into dst (C values), or `fill` where not given. */
static inline void load_param(const tdesc *d, int64_t C, float fill, float *dst)
{
    if (!d->present) {
        for (int64_t c = 0; c < C; c++)
            dst[c] = fill;
        return;
    }
    const float *src = get_tile(view_base(d), d->dtype, &d->inner, 0, C, dst);
    if (src != dst)
        memcpy(dst, src, (size_t)C * sizeof(float));
}

/*
 * The task of a BatchNorm operator's launch (bn_channels.c): its own copy of the payload (a
 * repeatable executor may be destroyed while the task is queued), the payload's tensors at
 * the run's addresses, the run's channel buffers and its pins. The launch allocates the
 * buffers (for channels > 0 only), checks, pins and queues the task; the operator's run
 * follows; the release unpins, frees the buffers and the task, exactly once: by the stream
 * or, on a launch failure, at once. The executor's payload is untouched either way.
 */
typedef struct {
    float *buf;            /* nchunks * chunk_values * R floats: a chunk's channel values */
    float *params;         /* nparams * C floats: the per-channel vectors */
    int64_t nchunks;
    void *pins[TV_MAX_VIEWS + 1];
    int npins;
    max_align_t payload[]; /* the operator's payload */
} bn_task;

/* What an operator's launch supplies. */
typedef struct {
    const char *call;         /* phase two's name, for messages */
    const char *const *names; /* the tensors' names, in the payload's order */
    size_t payload_size;      /* sizeof the payload */
    size_t tensors_at;        /* offsetof the payload's tdesc array */
    int ntensors;
    int chunk_values;         /* floats a chunk's buffer holds per value of a channel */
    int nparams;              /* the per-channel vectors params holds */
    aclemu_task_fn run;       /* on the stream's thread, its argument the bn_task */
} bn_kernel;

/* The payload of a task. */
static inline const void *bn_task_payload(const bn_task *T)
{
    return T->payload;
}

/* Queues a task over payload for C channels of R values (C == 0: no buffers); ws_size: the
 * workspace phase one reported (checked live and pinned with the views; the kernels keep their
 * own buffers and touch none of it). */
__attribute__((visibility("hidden"))) aclnnStatus
bn_task_launch(const bn_kernel *K, const void *payload, void *const *addrs, void *workspace,
               uint64_t ws_size, aclrtStream stream, int64_t C, int64_t R);

/* One channel's R values x normalized in place with a given mean and variance (inference),
 * in float32, as the op_api's BatchNorm runs it with training false (hicann/ops-nn
 * norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp): on Ascend 950 (regbase) BatchNormV3's
 * inference kernels, y = (((x - mean) * w) * rstd) + b, rstd from norm_common's
 * ComputeRstdNewtonRaphsonReg with its clamp (each of op_kernel/arch35's batch_norm_v3_infer*.h,
 * directly or through batch_norm_v3_regbase_common.h PrepareParamCache): one Newton-Raphson
 * step, whose float32 result is one bit off the correctly rounded 1 / sqrt(var + eps) for
 * two mantissas per pair of binades in the normal range (0x1.13e07p+1 one) and far more often
 * above 2^100 or where 1 / var is subnormal; elsewhere BNInfer (TBE),
 * k = w / sqrtf(var + eps), y = x * k + (b - k * mean). */
static inline void bn_infer_channel(float *x, int64_t R, float mean, float var, float w, float b,
                                    float eps, bool regbase)
{
    if (regbase) {
        const float rstd = nr_rstd_newton_raphson(var, eps, true);
        for (int64_t i = 0; i < R; i++) {
            float t = x[i] - mean;
            t *= w;
            t *= rstd;
            x[i] = t + b;
        }
        return;
    }
    const float k = w / sqrtf(var + eps);
    const float shift = b - k * mean;
    for (int64_t i = 0; i < R; i++) {
        const float t = x[i] * k;
        x[i] = t + shift;
    }
}

/*
 * Phase one's rules the BatchNorm op_apis share, each a 161002 naming the call and the
 * tensor: a floating dtype the part computes (FLOAT, FLOAT16, and BF16 where the part has it:
 * their CheckDtype lists), and a rank in [2, 8].
 */
__attribute__((visibility("hidden"))) aclnnStatus
bn_check_float_dtype(const char *call, const char *name, const aclTensor *t,
                     const aclemu_soc *soc);
__attribute__((visibility("hidden"))) aclnnStatus bn_check_rank(const char *call,
                                                                const char *name,
                                                                const aclTensor *t);

/* aclnn_batch_norm.cpp BatchNorm's part of a phase one's kernel graph (the op_api's function,
 * which aclnnBatchNormElemt calls too): its input, its output, the four vectors in its order
 * (runningMean, runningVar, weight, bias) as the caller handed them, each a caller's tensor
 * (vec given, h -1: copied when strided) or an intermediate (h its handle, vec NULL). */
typedef struct {
    const aclTensor *x, *out;
    const aclTensor *vec[4];  /* the caller's tensors, NULL for an intermediate */
    const aclTensor *save[2]; /* saveMean, saveInvstd (training) */
    int h[4];                 /* the vectors' handles (-1: the caller's tensor) */
    aclDataType dt[4];        /* the vectors' dtypes */
    bool training;
    bool v3;                  /* BatchNormV3Proc or BatchNormProcRegbase (else the TBE kernels) */
    bool regbase;             /* Ascend 950 */
    uint64_t C, X;            /* channels, input's elements */
} bn_graph_args;

/* The graph's size once BatchNorm's part (from the input's handle `xin` on, through the copy of
 * its result into a->out) is added to g (batch_norm.c). */
__attribute__((visibility("hidden"))) uint64_t
bn_graph_workspace(ew_graph *g, const aclemu_soc *soc, int xin, const bn_graph_args *a);

/* The bytes of TransDataSpecial's NDC1HWC0 form of an NCDHW [N, C, D, H, W] tensor of
 * element size es: C padded to C0 = 16 for FLOAT and FLOAT16 alike (ops-math conversion/
 * trans_data/op_api/transdata.cpp CalcC0FormatSpecial: a 32-byte block halved for 4-byte
 * types). The op_api's form on parts without NCDHW kernels (DAV_1001). */
static inline uint64_t bn_6hd_bytes(const int64_t *d, uint64_t es)
{
    return (uint64_t)(d[0] * d[2] * d[3] * d[4]) * (uint64_t)((d[1] + 15) / 16 * 16) * es;
}

/* A rank >= 5 tensor's NCDHW view as the op_apis hand it to their kernels (rank > 5:
 * [d0, d1, d2, d3, the rest's product]). */
static inline void bn_ncdhw(const aclTensor *x, int64_t *d)
{
    for (int i = 0; i < 4; i++)
        d[i] = x->dims[i];
    d[4] = 1;
    for (uint64_t i = 4; i < x->ndim; i++)
        d[4] *= x->dims[i];
}

#endif /* ACLEMU_OPS_BN_CHANNELS_H_ */
