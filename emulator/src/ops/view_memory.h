/*
 * What every operator's phase two does with the memory its views touch, whatever its view
 * descriptor: the byte range of a strided view, the check that each range lies inside one
 * live device allocation, pinning the ranges (and the workspace) for the life of the task,
 * and enqueueing the task. Shared by tensor_view.h (the norm kernels' descriptors) and the
 * ops_math operators, which keep descriptors of their own (broadcast strides).
 */
#ifndef ACLEMU_OPS_VIEW_MEMORY_H_
#define ACLEMU_OPS_VIEW_MEMORY_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "emu_internal.h"

#define VM_MAX_RANGES 16 /* views of one operator call */

/* "[d0,d1,...]" into buf (truncated to cap). */
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

/* A strided view of storage `data` (element size es, offset and strides in elements). */
typedef struct {
    char *data;
    int64_t offset;
    uint32_t es;
    int ndim;
    const int64_t *dims;
    const int64_t *strides;
} vm_view;

/* Byte range [*start, *start + *nbytes) the view touches; false on overflow. nbytes 0 for an
 * empty view. */
static inline bool vm_range(vm_view v, char **start, uint64_t *nbytes)
{
    int64_t hi = v.offset;
    *start = NULL;
    *nbytes = 0;
    for (int i = 0; i < v.ndim; i++) {
        if (v.dims[i] == 0)
            return true;
        int64_t span;
        if (__builtin_mul_overflow(v.dims[i] - 1, v.strides[i], &span) ||
            __builtin_add_overflow(hi, span, &hi))
            return false;
    }
    int64_t n, off_b;
    if (__builtin_add_overflow(hi - v.offset, (int64_t)1, &n) ||
        __builtin_mul_overflow(n, (int64_t)v.es, &n) ||
        __builtin_mul_overflow(v.offset, (int64_t)v.es, &off_b))
        return false;
    *start = v.data + off_b;
    *nbytes = (uint64_t)n;
    return true;
}

/* Phase two's memory check and pinning for n views (present[i] false: not touched by this
 * run) and the workspace: every touched view must lie inside one live device allocation
 * (161002 otherwise, message naming names[i]); then each non-empty range is pinned, its token
 * stored in pins[*npins++] (room for n + 1; n <= VM_MAX_RANGES). On failure the pins taken so
 * far are released and *npins is 0. */
static inline aclnnStatus vm_pin(const char *call, const vm_view *views, const bool *present,
                                 const char *const *names, int n, const void *workspace,
                                 uint64_t ws_size, void **pins, int *npins)
{
    char *start[VM_MAX_RANGES];
    uint64_t nbytes[VM_MAX_RANGES];
    *npins = 0;
    for (int i = 0; i < n; i++) {
        start[i] = NULL;
        nbytes[i] = 0;
        if (!present[i])
            continue;
        if (!vm_range(views[i], &start[i], &nbytes[i]) ||
            (nbytes[i] > 0 && !aclemu_device_range(start[i], nbytes[i]))) {
            aclemu_set_error("%s: %s view (data %p, offset %lld, %llu bytes) is not inside one "
                             "live device allocation", call, names[i], (void *)views[i].data,
                             (long long)views[i].offset, (unsigned long long)nbytes[i]);
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

/* An operator's launch after its own checks: vm_pin, then run(task) enqueued on stream.
 * pins/npins are the task's (its release unpins them). On failure the task is released
 * (release(task)) and the status returned, the message set.
 * run NULL: a call the vendor launches no kernel for (phase one decided it: a generated
 * operator whose outputs are all empty, a hand-written op_api's early return with no kernel).
 * The memory is checked as for any run, then the task released and success returned with
 * nothing queued: no stream is looked up, so neither the stream nor a current context is
 * needed, as on the device (hicann/opbase src/nnopbase/individual_op/executor/
 * indv_executor.cpp NnopbaseExecutorRunWithWorkspace: every step touching the runtime is
 * skipped by NnopbaseSkipKernelLaunch or off by default; composite_op/aclnn_engine/
 * op_executor.cpp CommonOpExecutorRun, aclOpExecutor::Run over an empty launcher list). */
static inline aclnnStatus vm_launch(const char *call, aclrtStream stream, const vm_view *views,
                                    const bool *present, const char *const *names, int n,
                                    const void *workspace, uint64_t ws_size, void **pins,
                                    int *npins, aclemu_task_fn run, aclemu_task_fn release,
                                    void *task)
{
    aclnnStatus st = vm_pin(call, views, present, names, n, workspace, ws_size, pins, npins);
    if (st != ACLNN_SUCCESS || run == NULL) {
        release(task);
        return st;
    }
    if (aclemu_stream_submit(stream, run, release, task, call) != ACL_SUCCESS) {
        release(task); /* not enqueued: still ours; the message is set */
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    return ACLNN_SUCCESS;
}

#endif /* ACLEMU_OPS_VIEW_MEMORY_H_ */
