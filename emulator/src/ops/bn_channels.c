/*
 * The launch and release of the BatchNorm operators' tasks (bn_channels.h), phase two after
 * aclemu_executor_run's executor and workspace checks.
 */
#include <stdlib.h>
#include <string.h>

#include "bn_channels.h"
#include "emu_internal.h"
#include "norm_rows.h"
#include "phase_one.h"
#include "tensor_view.h"

static void task_release(void *arg)
{
    bn_task *T = arg;
    for (int i = 0; i < T->npins; i++)
        aclemu_device_unpin(T->pins[i]);
    free(T->buf);
    free(T->params);
    free(T);
}

aclnnStatus bn_task_launch(const bn_kernel *K, const void *payload, void *const *addrs,
                           void *workspace, uint64_t ws_size, aclrtStream stream, int64_t C,
                           int64_t R)
{
    bn_task *T = p2_task_new(K->call, sizeof *T + K->payload_size);
    if (!T)
        return ACLNN_ERR_INNER;
    memcpy(T->payload, payload, K->payload_size);
    tdesc *t = (tdesc *)(void *)((char *)T->payload + K->tensors_at);
    const tdesc *views[TV_MAX_VIEWS];
    for (int i = 0; i < K->ntensors; i++) {
        t[i].data = addrs[i];
        views[i] = &t[i];
    }
    if (C > 0) {
        T->nchunks = C < NR_MAX_CHUNKS ? C : NR_MAX_CHUNKS;
        T->buf = malloc((size_t)(T->nchunks * K->chunk_values * R) * sizeof(float));
        T->params = malloc((size_t)(K->nparams * C) * sizeof(float));
        if (!T->buf || !T->params) {
            aclemu_set_error("%s: out of host memory for the channel buffers (%lld floats)",
                             K->call, (long long)(T->nchunks * K->chunk_values * R +
                                                  K->nparams * C));
            task_release(T);
            return ACLNN_ERR_INNER;
        }
    }
    return views_launch(K->call, stream, views, K->names, K->ntensors, workspace, ws_size, T->pins,
                        &T->npins, K->run, task_release, T);
}

aclnnStatus bn_check_float_dtype(const char *call, const char *name, const aclTensor *t,
                                 const aclemu_soc *soc)
{
    const aclDataType dt = t->dtype;
    if (!(dt == ACL_FLOAT || dt == ACL_FLOAT16 || (soc->bf16 && dt == ACL_BF16)))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s): %s", call,
             name, dname(dt), soc->name, soc->series,
             soc->bf16 ? "FLOAT, FLOAT16, BF16" : "FLOAT, FLOAT16");
    return ACLNN_SUCCESS;
}

aclnnStatus bn_check_rank(const char *call, const char *name, const aclTensor *t)
{
    if (t->ndim < 2 || t->ndim > 8)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu is not in [2, 8]", call, name,
             (unsigned long long)t->ndim);
    return ACLNN_SUCCESS;
}
