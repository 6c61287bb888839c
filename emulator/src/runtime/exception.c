/*
 * Exception callbacks: what the runtime calls when a task fails on a device
 * (aclrtSetExceptionInfoCallback, aclrtExceptionInfoCallbackRegister / Unregister) and the
 * accessors of the aclrtExceptionInfo it passes.
 *
 * As in CANN (hicann/runtime src/acl/aclrt_impl/callback.cpp; src/runtime/core/src/common/
 * task_fail_callback_data_manager.cc): one process-wide table of callbacks, which needs no
 * aclInit. aclrtSetExceptionInfoCallback keeps one entry (each call replaces it, NULL removes
 * it); aclrtExceptionInfoCallbackRegister adds one per function (registering one twice adds
 * nothing), Unregister removes it (one not registered: nothing happens). When a task fails
 * (the emulator's task faults, "name:n:fail[=code]"), every callback in the table is called
 * once with the failure's description, in whatever mode the stream is (both failure modes
 * report a failed task), from the thread that ran the task, before the failure is reported to
 * a synchronize: by the time a synchronize returns the failure, the callbacks have run. The
 * table is copied before the calls, so a callback may (un)register, and unregistering does not
 * wait for a call under way (CANN says so in acl_rt.h). The description lives for the call
 * only.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt_internal.h"

/* CANN's rtExceptionInfo carries more (the kernel's arguments, its binary); the emulator's
 * tasks are host functions, described as CANN describes a task that is not a kernel. */
struct rtExceptionInfo {
    uint32_t taskid;
    uint32_t streamid;
    uint32_t tid;
    uint32_t deviceid;
    uint32_t retcode;
};

#define INVALID_INFO 0xFFFFFFFFu /* the accessors' answer for a NULL info (acl_rt.h) */
#define MAX_CALLBACKS 64

static pthread_mutex_t g_cb_mu = PTHREAD_MUTEX_INITIALIZER;
static aclrtExceptionInfoCallback g_set_cb;                 /* aclrtSetExceptionInfoCallback */
static aclrtExceptionInfoCallback g_registered[MAX_CALLBACKS]; /* Register, in order */
static int g_nregistered;

aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback) {
    if (aclemu_fault(__func__))
        return rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
    pthread_mutex_lock(&g_cb_mu);
    g_set_cb = callback;
    pthread_mutex_unlock(&g_cb_mu);
    return ACL_SUCCESS;
}

aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback) {
    if (aclemu_fault(__func__))
        return rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
    if (callback == NULL) /* the ACL layer's check, with a runtime code */
        return ACL_LAYER_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__, "callback is NULL");
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&g_cb_mu);
    bool known = false;
    for (int i = 0; i < g_nregistered; i++)
        known = known || g_registered[i] == callback;
    if (!known && g_nregistered == MAX_CALLBACKS)
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, __func__, "%d callbacks are registered, the "
                    "emulator's limit", MAX_CALLBACKS);
    else if (!known)
        g_registered[g_nregistered++] = callback;
    pthread_mutex_unlock(&g_cb_mu);
    return rc;
}

aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback) {
    if (aclemu_fault(__func__))
        return rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
    if (callback == NULL)
        return ACL_LAYER_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__, "callback is NULL");
    pthread_mutex_lock(&g_cb_mu);
    for (int i = 0; i < g_nregistered; i++)
        if (g_registered[i] == callback) {
            for (int j = i + 1; j < g_nregistered; j++)
                g_registered[j - 1] = g_registered[j];
            g_nregistered--;
            break;
        }
    pthread_mutex_unlock(&g_cb_mu);
    return ACL_SUCCESS;
}

void rt_task_failed(uint32_t task_id, uint32_t stream_id, uint32_t tid, int device,
                    aclError code) {
    aclrtExceptionInfoCallback calls[MAX_CALLBACKS + 1];
    int n = 0;
    pthread_mutex_lock(&g_cb_mu);
    if (g_set_cb != NULL)
        calls[n++] = g_set_cb;
    for (int i = 0; i < g_nregistered; i++)
        calls[n++] = g_registered[i];
    pthread_mutex_unlock(&g_cb_mu);
    if (n == 0)
        return;
    aclrtExceptionInfo info = {task_id, stream_id, tid, (uint32_t)device, (uint32_t)code};
    /* CANN warns that allocating, freeing, synchronizing or launching inside the callback may
     * fail or deadlock (docs/zh/api_ref/13_exception_handling.md): refused, as in a host
     * function. */
    const char *outer = rt_host_function_begin("the runtime as an exception callback");
    for (int i = 0; i < n; i++)
        calls[i](&info);
    rt_host_function_end(outer);
}

/* Cached: every task a thread queues records it, and the id never changes. */
uint32_t rt_os_thread_id(void) {
    static _Thread_local uint32_t tid;
    if (tid == 0)
        tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}

/* ---- the description's accessors -------------------------------------------------------- */

static bool check_info(const char *fn, const aclrtExceptionInfo *info) {
    if (info == NULL)
        (void)ACL_LAYER_ERR(INVALID_INFO, fn, "info is NULL");
    return info != NULL;
}

uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info) {
    return check_info(__func__, info) ? info->taskid : INVALID_INFO;
}

uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info) {
    return check_info(__func__, info) ? info->streamid : INVALID_INFO;
}

uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info) {
    return check_info(__func__, info) ? info->tid : INVALID_INFO;
}

uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info) {
    return check_info(__func__, info) ? info->deviceid : INVALID_INFO;
}

uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info) {
    return check_info(__func__, info) ? info->retcode : INVALID_INFO;
}

/* A kernel's arguments: CANN answers for AI Core and AI CPU kernels only, and 0xFFFFFFFF
 * (the aclError -1) for any other task, which every emulated task is. */
aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo *info, void **devArgsPtr,
                                       uint32_t *devArgsLen) {
    if (!check_info(__func__, info))
        return (aclError)INVALID_INFO;
    if (devArgsPtr == NULL || devArgsLen == NULL)
        return ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__, "%s (output pointer) is NULL",
                             devArgsPtr == NULL ? "devArgsPtr" : "devArgsLen");
    return ACL_LAYER_ERR((aclError)INVALID_INFO, __func__, "the failed task (task %u) is not "
                         "an AI Core or AI CPU kernel, so it has no kernel arguments",
                         info->taskid);
}

/* The failed kernel's function handle: CANN's runtime refuses (107000) a task that is not a
 * kernel of a loaded binary, as every emulated task is, and leaves *func as it was. */
aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo *info,
                                             aclrtFuncHandle *func) {
    if (!check_info(__func__, info))
        return (aclError)INVALID_INFO;
    if (func == NULL)
        return ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__, "func (output pointer) is NULL");
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__, "the failed task (task %u) is not a "
                  "kernel of a loaded binary, so it has no function handle", info->taskid);
}
