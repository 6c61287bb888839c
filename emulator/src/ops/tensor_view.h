/*
 * Tensor views for the operator kernels: a phase-one snapshot of an aclTensor (the caller may
 * destroy the tensor before phase two), its layout split into batch ("outer") and normalized
 * ("inner") dims, tile loads/stores as floats through any strides, argument-check helpers,
 * and the launch over these descriptors (the memory checks and pins are view_memory.h's).
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
#include "view_memory.h"

#define TV_MAX_RANK 8
#define TV_MAX_VIEWS VM_MAX_RANGES /* tensors of one operator call */
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

/* A dtype's name without the enum's ACL_ prefix, as the vendor's lists name them (INT8,
 * HIFLOAT8; FLOAT, FLOAT16, BF16 as dname gives them). */
static inline const char *qname(aclDataType d)
{
    const char *n = dname(d);
    return strncmp(n, "ACL_", 4) == 0 ? n + 4 : n;
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
        if (L_->nd == 1) { /* one run (the usual case): no division */                      \
            int64_t off = (c0) * L_->strides[0], stride = L_->strides[0], run = (cnt), k = 0; \
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

/* Writes n int8 values q to row m of y (any layout of its last dim). */
static inline void store_int8_row(const tdesc *y, int64_t m, const int8_t *q, int64_t n)
{
    char *base = row_base(y, m);
    LAY_WALK(&y->inner, 0, n, {
        for (int64_t j = 0; j < run; j++)
            base[off + j * stride] = (char)q[k + j];
    });
}

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

static inline vm_view view_memory(const tdesc *d)
{
    return (vm_view){d->data, d->offset, d->es, d->ndim, d->dims, d->strides};
}

/* An operator's launch after its own checks (vm_launch over the n descriptors; NULL or
 * absent ones are not touched by this run; run NULL: no kernel, nothing queued). */
static inline aclnnStatus views_launch(const char *call, aclrtStream stream,
                                       const tdesc *const *views, const char *const *names,
                                       int n, const void *workspace, uint64_t ws_size,
                                       void **pins, int *npins, aclemu_task_fn run,
                                       aclemu_task_fn release, void *task)
{
    vm_view mem[TV_MAX_VIEWS];
    bool present[TV_MAX_VIEWS];
    for (int i = 0; i < n; i++) {
        present[i] = views[i] && views[i]->present;
        mem[i] = present[i] ? view_memory(views[i]) : (vm_view){0};
    }
    return vm_launch(call, stream, mem, present, names, n, workspace, ws_size, pins, npins,
                     run, release, task);
}

#endif /* ACLEMU_OPS_TENSOR_VIEW_H_ */
