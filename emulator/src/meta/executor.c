/*
 * The executor object model shared by every operator: phase one creates an executor owning
 * an operator payload; phase two (aclemu_executor_run) checks it and the workspace, launches,
 * and releases a single-use executor after a successful run. State changes happen under one
 * mutex; the launch itself runs outside it, with `running` keeping a concurrent destroy (or
 * a second run of a single-use executor) out.
 */
#include <pthread.h>
#include <stdlib.h>

#include "meta_internal.h"

struct aclOpExecutor {
    const aclemu_executor_ops *ops;
    void *payload;
    uint64_t workspace_size; /* what phase one asked for */
    bool repeatable;
    int running;             /* phase twos in progress (g_exec_mu) */
};

static pthread_mutex_t g_exec_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *op_of(const aclOpExecutor *e) {
    return e->ops->op_name ? e->ops->op_name : "aclnn";
}

/* Message for a handle that is not a live executor; g_exec_mu not held. */
static aclnnStatus not_live(const char *fn, const aclOpExecutor *executor) {
    char op[64];
    meta_q_reason why;
    if (meta_quarantined_executor(executor, op, sizeof op, &why))
        aclemu_set_error("%s: executor %p is not a live executor: this %s executor was %s", fn,
                         (const void *)executor, op,
                         why == Q_EXECUTOR_RAN
                             ? "single-use and already ran (the library released it; call "
                               "aclSetAclOpExecutorRepeatable after phase one to run one again)"
                             : "destroyed with aclDestroyAclOpExecutor");
    else
        aclemu_set_error("%s: executor %p is not a live executor (never created, already run, "
                         "or destroyed)", fn, (const void *)executor);
    return ACLNN_ERR_PARAM_INVALID;
}

static void release(aclOpExecutor *e, meta_q_reason why) {
    e->ops->destroy(e->payload);
    e->payload = NULL;
    meta_quarantine(e, why, op_of(e));
}

aclOpExecutor *aclemu_executor_new(const aclemu_executor_ops *ops, void *payload,
                                   uint64_t workspace_size) {
    if (ops == NULL || ops->launch == NULL || ops->destroy == NULL) {
        aclemu_set_error("%s: internal error: executor ops incomplete",
                         ops && ops->op_name ? ops->op_name : "aclemu_executor_new");
        if (ops != NULL && ops->destroy != NULL)
            ops->destroy(payload);
        return NULL;
    }
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (e == NULL) {
        aclemu_set_error("%s: out of host memory for the executor", ops->op_name);
        ops->destroy(payload);
        return NULL;
    }
    e->ops = ops;
    e->payload = payload;
    e->workspace_size = workspace_size;
    aclemu_handle_register(e, ACLEMU_KIND_EXECUTOR);
    return e;
}

aclnnStatus aclemu_executor_run(aclOpExecutor *executor, void *workspace,
                                uint64_t workspace_size, aclrtStream stream) {
    const char *fn = aclemu_current_call();
    if (fn == NULL)
        fn = "aclemu_executor_run";
    if (executor == NULL) {
        aclemu_set_error("%s: executor is NULL", fn);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    if (!aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR)) {
        pthread_mutex_unlock(&g_exec_mu);
        return not_live(fn, executor);
    }
    aclOpExecutor *e = executor;
    aclnnStatus rc = ACLNN_SUCCESS;
    if (!e->repeatable && e->running > 0) {
        aclemu_set_error("%s: executor %p is single-use and is already being run by another "
                         "thread", fn, (void *)e);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else if (workspace_size < e->workspace_size) {
        aclemu_set_error("%s: workspaceSize (%llu) is less than the %llu bytes phase one asked "
                         "for", fn, (unsigned long long)workspace_size,
                         (unsigned long long)e->workspace_size);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else if (workspace_size > 0 && workspace == NULL) {
        aclemu_set_error("%s: workspace is NULL but workspaceSize is %llu", fn,
                         (unsigned long long)workspace_size);
        rc = ACLNN_ERR_PARAM_NULLPTR;
    } else if (workspace_size > 0 && !aclemu_device_range(workspace, workspace_size)) {
        aclemu_set_error("%s: workspace [%p, +%llu) is not inside one live device allocation "
                         "(aclrtMalloc)", fn, workspace, (unsigned long long)workspace_size);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else {
        e->running++;
    }
    pthread_mutex_unlock(&g_exec_mu);
    if (rc != ACLNN_SUCCESS)
        return rc;

    rc = e->ops->launch(e->payload, workspace, workspace_size, stream);

    bool release_now = false;
    pthread_mutex_lock(&g_exec_mu);
    e->running--;
    if (rc == ACLNN_SUCCESS && !e->repeatable)
        release_now = aclemu_handle_unregister(e, ACLEMU_KIND_EXECUTOR);
    pthread_mutex_unlock(&g_exec_mu);
    if (release_now)
        release(e, Q_EXECUTOR_RAN);
    return rc;
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (executor == NULL) {
        aclemu_set_error("%s: executor is NULL", __func__);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    bool live = aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR);
    if (live)
        executor->repeatable = true;
    pthread_mutex_unlock(&g_exec_mu);
    return live ? ACLNN_SUCCESS : not_live(__func__, executor);
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (executor == NULL) {
        aclemu_set_error("%s: executor is NULL", __func__);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    if (!aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR)) {
        pthread_mutex_unlock(&g_exec_mu);
        return not_live(__func__, executor);
    }
    if (executor->running > 0) {
        pthread_mutex_unlock(&g_exec_mu);
        aclemu_set_error("%s: executor %p is being run by another thread", __func__,
                         (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclemu_handle_unregister(executor, ACLEMU_KIND_EXECUTOR);
    pthread_mutex_unlock(&g_exec_mu);
    release(executor, Q_EXECUTOR_DESTROYED);
    return ACLNN_SUCCESS;
}
