/*
 * The channel views of the BatchNorm operators (aclnnBatchNorm, aclnnBatchNormBackward): a
 * tensor split around its channel's dim, one channel's values loaded as floats or stored,
 * one element of a [C] vector written, and a [C] vector read whole (or a fill where it is not
 * given). Channels are independent, so these keep each kernel's split of channels over
 * threads free of any effect on the bits.
 */
#ifndef ACLEMU_OPS_BN_CHANNELS_H_
#define ACLEMU_OPS_BN_CHANNELS_H_

#include <stdint.h>
#include <string.h>

#include "tensor_view.h"

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

#endif /* ACLEMU_OPS_BN_CHANNELS_H_ */
