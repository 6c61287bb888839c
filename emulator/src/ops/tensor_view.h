/*
 * Tensor views for the operator kernels: a phase-one snapshot of an aclTensor (the caller may
 * destroy the tensor before phase two), its layout split into batch ("outer") and normalized
 * ("inner") dims, tile loads/stores as floats through any strides, argument-check helpers,
 * and the launch-time memory check and pinning every operator does.
 *
 * Element conversions are convert.h's (the CPU's conversion instructions where it has them).
 */
#ifndef ACLEMU_OPS_TENSOR_VIEW_H_
#define ACLEMU_OPS_TENSOR_VIEW_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convert.h"
#include "emu_internal.h"

#define TV_MAX_RANK 8
#define TV_MAX_VIEWS 16 /* tensors of one operator call (views_pin) */
/* specialized copies (dtype, flags as constants) must really be inlined to vectorize */
#define TV_INLINE static inline __attribute__((always_inline))

/* ---- descriptors ------------------------------------------------------------------------ */

/* A row-major (dims, strides) list with size-1 dims dropped and mergeable dims merged. */
typedef struct {
    int nd;
    int64_t dims[TV_MAX_RANK];
    int64_t strides[TV_MAX_RANK];
} lay_t;

/* Snapshot of one aclTensor taken in phase one. */
typedef struct {
    bool present;
    aclDataType dtype;
    uint32_t es;          /* element size */
    char *data;           /* device address of the storage */
    int64_t offset;       /* elements */
    int ndim;
    int64_t dims[TV_MAX_RANK];
    int64_t strides[TV_MAX_RANK];
    lay_t outer;          /* [M, N] tensors: batch dims; others: unused */
    lay_t inner;          /* [M, N] tensors: normalized dims; others: all dims, flattened */
} tdesc;

static inline bool dtype_ok(aclDataType d)
{
    return d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16;
}

static inline const char *dname(aclDataType d)
{
    switch (d) {
    case ACL_FLOAT: return "FLOAT";
    case ACL_FLOAT16: return "FLOAT16";
    case ACL_BF16: return "BF16";
    default: return aclemu_dtype_name(d);
    }
}

static inline void fmt_dims(char *buf, size_t cap, const int64_t *d, uint64_t n)
{
    size_t len = 0;
    int w = snprintf(buf, cap, "[");
    len = w > 0 ? (size_t)w : 0;
    for (uint64_t i = 0; i < n && len < cap; i++) {
        w = snprintf(buf + len, cap - len, i ? ",%lld" : "%lld", (long long)d[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    if (len < cap)
        snprintf(buf + len, cap - len, "]");
}

static inline bool same_dims(const int64_t *a, uint64_t na, const int64_t *b, uint64_t nb)
{
    if (na != nb)
        return false;
    for (uint64_t i = 0; i < na; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* Sets "<call>: <name> shape [a] <relation> [b]" as the error; returns 161002. */
static inline aclnnStatus shape_error(const char *call, const char *name, const int64_t *a,
                                      uint64_t na, const char *relation, const int64_t *b,
                                      uint64_t nb)
{
    char s1[256], s2[256];
    fmt_dims(s1, sizeof s1, a, na);
    fmt_dims(s2, sizeof s2, b, nb);
    aclemu_set_error("%s: %s shape %s %s %s", call, name, s1, relation, s2);
    return ACLNN_ERR_PARAM_INVALID;
}

/* Product of dims; false on overflow. */
static inline bool numel(const int64_t *d, uint64_t n, int64_t *out)
{
    int64_t p = 1;
    for (uint64_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(p, d[i], &p))
            return false;
    *out = p;
    return true;
}

static inline void lay_build(lay_t *L, const int64_t *dims, const int64_t *strides, int n)
{
    L->nd = 0;
    for (int i = 0; i < n; i++) {
        if (dims[i] == 1)
            continue; /* a size-1 dim never moves the offset */
        if (L->nd > 0 && L->strides[L->nd - 1] == strides[i] * dims[i]) {
            /* outer dim steps exactly over this one: merge */
            L->dims[L->nd - 1] *= dims[i];
            L->strides[L->nd - 1] = strides[i];
            continue;
        }
        L->dims[L->nd] = dims[i];
        L->strides[L->nd] = strides[i];
        L->nd++;
    }
}

static inline int64_t lay_offset(const lay_t *L, int64_t i)
{
    if (L->nd <= 1) /* the usual case (contiguous batch dims): no division */
        return L->nd == 0 ? 0 : i * L->strides[0];
    int64_t off = 0;
    for (int k = L->nd - 1; k >= 0; k--) {
        int64_t d = L->dims[k];
        off += (i % d) * L->strides[k];
        i /= d;
    }
    return off;
}

/* Contiguous in its (inner) layout: one stride-1 run, or a single element. */
static inline bool lay_unit(const lay_t *L)
{
    return L->nd == 0 || (L->nd == 1 && L->strides[0] == 1);
}

/* Takes the snapshot of t (NULL: not present). split: the number of batch dims of an [M, N]
 * tensor; < 0 for a tensor read as one flat vector (all dims in `inner`). The tensor's rank
 * must have been checked <= TV_MAX_RANK. */
static inline void snapshot(tdesc *d, const aclTensor *t, int split)
{
    memset(d, 0, sizeof *d);
    if (!t)
        return;
    d->present = true;
    d->dtype = t->dtype;
    d->es = (uint32_t)aclemu_dtype_size(t->dtype);
    d->data = (char *)t->data;
    d->offset = t->offset;
    d->ndim = (int)t->ndim;
    for (int i = 0; i < d->ndim; i++) {
        d->dims[i] = t->dims[i];
        d->strides[i] = t->strides[i];
    }
    int s = split < 0 ? 0 : split;
    lay_build(&d->outer, d->dims, d->strides, s);
    lay_build(&d->inner, d->dims + s, d->strides + s, d->ndim - s);
}

/* Address of the element with flat index 0 of the view, and of row m's first element. */
static inline char *view_base(const tdesc *d)
{
    return d->data + d->offset * (int64_t)d->es;
}

static inline char *row_base(const tdesc *d, int64_t m)
{
    return d->data + (d->offset + lay_offset(&d->outer, m)) * (int64_t)d->es;
}

/* ---- tiles ---------------------------------------------------------------------------------- */

/* Walks flat indices [c0, c0 + cnt) of layout L as runs along its innermost dim, running
 * BODY with off, stride, run and k (the position of the run's first element in the range). */
#define LAY_WALK(L, c0, cnt, BODY)                                                          \
    do {                                                                                    \
        const lay_t *L_ = (L);                                                              \
        if (L_->nd == 0) {                                                                  \
            int64_t off = 0, stride = 1, run = (cnt), k = 0;                                \
            BODY;                                                                           \
            break;                                                                          \
        }                                                                                   \
        int last_ = L_->nd - 1;                                                             \
        int64_t idx_[TV_MAX_RANK];                                                          \
        int64_t rest_ = (c0);                                                               \
        for (int q_ = last_; q_ >= 0; q_--) {                                               \
            idx_[q_] = rest_ % L_->dims[q_];                                                \
            rest_ /= L_->dims[q_];                                                          \
        }                                                                                   \
        int64_t k = 0;                                                                      \
        while (k < (cnt)) {                                                                 \
            int64_t off = 0;                                                                \
            for (int q_ = 0; q_ <= last_; q_++)                                             \
                off += idx_[q_] * L_->strides[q_];                                          \
            int64_t stride = L_->strides[last_];                                            \
            int64_t run = L_->dims[last_] - idx_[last_];                                    \
            if (run > (cnt) - k)                                                            \
                run = (cnt) - k;                                                            \
            BODY;                                                                           \
            k += run;                                                                       \
            idx_[last_] += run;                                                             \
            for (int q_ = last_; q_ > 0 && idx_[q_] == L_->dims[q_]; q_--) {                \
                idx_[q_] = 0;                                                               \
                idx_[q_ - 1]++;                                                             \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* Elements [c0, c0 + cnt) of a layout as floats: in place when FLOAT and unit-stride,
 * else converted into buf (convert.h). base points at the element with flat index 0. */
static inline const float *get_tile(const char *base, aclDataType dt, const lay_t *L,
                                    int64_t c0, int64_t cnt, float *buf)
{
    if (dt == ACL_FLOAT && lay_unit(L))
        return (const float *)(const void *)base + c0;
    const int64_t es = (int64_t)aclemu_dtype_size(dt);
    LAY_WALK(L, c0, cnt, aclemu_load_floats(dt, base + off * es, stride, run, buf + k));
    return buf;
}

/* ties: how a narrowing to BF16 breaks ties (convert.h); FLOAT16 always to even. */
static inline void put_tile(char *base, aclDataType dt, aclemu_ties ties, const lay_t *L,
                            int64_t c0, int64_t cnt, const float *buf)
{
    const int64_t es = aclemu_dtype_size(dt);
    LAY_WALK(L, c0, cnt, aclemu_store_floats(dt, ties, base + off * es, stride, run, buf + k));
}

/* ---- launch: every view inside live device memory, pinned until the task has run --------- */

/* Byte range [*start, *start + *nbytes) the view touches; false on overflow. nbytes 0 for an
 * empty view. */
static inline bool view_range(const tdesc *d, char **start, uint64_t *nbytes)
{
    int64_t hi = d->offset;
    *start = NULL;
    *nbytes = 0;
    for (int i = 0; i < d->ndim; i++) {
        if (d->dims[i] == 0)
            return true;
        int64_t span;
        if (__builtin_mul_overflow(d->dims[i] - 1, d->strides[i], &span) ||
            __builtin_add_overflow(hi, span, &hi))
            return false;
    }
    int64_t n, off_b;
    if (__builtin_add_overflow(hi - d->offset, (int64_t)1, &n) ||
        __builtin_mul_overflow(n, (int64_t)d->es, &n) ||
        __builtin_mul_overflow(d->offset, (int64_t)d->es, &off_b))
        return false;
    *start = d->data + off_b;
    *nbytes = (uint64_t)n;
    return true;
}

/* Phase two's memory check and pinning for n views (NULL entries: not touched by this run)
 * and the workspace: every touched view must lie inside one live device allocation
 * (161002 otherwise, message naming names[i]); then each non-empty range is pinned, its
 * token stored in pins[*npins++] (room for n + 1; n <= TV_MAX_VIEWS). On failure the pins taken so far are
 * released and *npins is 0. */
static inline aclnnStatus views_pin(const char *call, const tdesc *const *views,
                                    const char *const *names, int n, const void *workspace,
                                    uint64_t ws_size, void **pins, int *npins)
{
    char *start[TV_MAX_VIEWS];
    uint64_t nbytes[TV_MAX_VIEWS];
    *npins = 0;
    for (int i = 0; i < n; i++) {
        start[i] = NULL;
        nbytes[i] = 0;
        const tdesc *d = views[i];
        if (!d || !d->present)
            continue;
        if (!view_range(d, &start[i], &nbytes[i]) ||
            (nbytes[i] > 0 && !aclemu_device_range(start[i], nbytes[i]))) {
            aclemu_set_error("%s: %s view (data %p, offset %lld, %llu bytes) is not inside one "
                             "live device allocation", call, names[i], (void *)d->data,
                             (long long)d->offset, (unsigned long long)nbytes[i]);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    for (int i = 0; i <= n; i++) {
        const void *p = i < n ? start[i] : workspace;
        uint64_t len = i < n ? nbytes[i] : ws_size;
        if (len == 0)
            continue;
        void *tok = aclemu_device_pin(p, len);
        if (!tok) { /* freed between the check and the pin by another thread */
            aclemu_set_error("%s: %s memory (%p, %llu bytes) is not a live device allocation",
                             call, i < n ? names[i] : "workspace", p, (unsigned long long)len);
            while (*npins > 0)
                aclemu_device_unpin(pins[--*npins]);
            return ACLNN_ERR_PARAM_INVALID;
        }
        pins[(*npins)++] = tok;
    }
    return ACLNN_SUCCESS;
}

/* An operator's launch after its own checks: views_pin, then run(task) enqueued on stream.
 * pins/npins are the task's (its release unpins them). On failure the task is released
 * (release(task)) and the status returned, the message set. */
static inline aclnnStatus views_launch(const char *call, aclrtStream stream,
                                       const tdesc *const *views, const char *const *names,
                                       int n, const void *workspace, uint64_t ws_size,
                                       void **pins, int *npins, aclemu_task_fn run,
                                       aclemu_task_fn release, void *task)
{
    aclnnStatus st = views_pin(call, views, names, n, workspace, ws_size, pins, npins);
    if (st != ACLNN_SUCCESS) {
        release(task);
        return st;
    }
    if (aclemu_stream_submit(stream, run, release, task, call) != ACL_SUCCESS) {
        release(task); /* not enqueued: still ours; the message is set */
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    return ACLNN_SUCCESS;
}

#endif /* ACLEMU_OPS_TENSOR_VIEW_H_ */
