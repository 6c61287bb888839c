/*
 * The executor object model shared by every operator: phase one creates an executor owning
 * an operator payload; phase two (aclemu_executor_run) checks it and the workspace, launches,
 * and releases it as CANN's CommonOpExecutorRun does (hicann/opbase src/nnopbase/composite_op/
 * aclnn_engine/op_executor.cpp): a single-use executor after every phase two, whatever the
 * result; any executor given a NULL workspace with a non-zero size. State changes happen under
 * one mutex; the launch itself runs outside it, with `running` keeping a concurrent destroy
 * (or a second run of a single-use executor) out, and a release requested while other threads
 * run a repeatable executor waiting for the last of them.
 *
 * An executor also records the aclTensors phase one was given, with their registry
 * generations: CANN's executor keeps pointers to the caller's tensors and reads them when it
 * runs (their aclStorage: hicann/opbase src/nnopbase/common/utils/op_cache.cpp AddParamToBuf,
 * op_executor.cpp RepeatRunWithCache and UpdateStorageAddr; aclSetTensorAddr updates the
 * caller's tensor, docs/en/api/nnopbase/aclnn/aclSetTensorAddr.md), so running it after one
 * was destroyed is a use after free on a device. Phase two refuses it (the launch itself
 * works on copies made at phase one, so nothing here would notice otherwise).
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
    bool retired;            /* out of the registry, released when `running` drops to 0 */
    meta_q_reason retired_why;
    uint64_t ntensors;
    struct {
        const aclTensor *tensor;
        const char *name;
        uint64_t gen;        /* its registry generation at phase one */
    } tensors[];             /* every tensor phase one was given, read by every phase two */
};

static pthread_mutex_t g_exec_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *op_of(const aclOpExecutor *e) {
    return e->ops->op_name ? e->ops->op_name : "aclnn";
}

static const char *released_because(meta_q_reason why) {
    switch (why) {
    case Q_EXECUTOR_RAN:
        return "single-use and already ran (the library released it; call "
               "aclSetAclOpExecutorRepeatable after phase one to run one again)";
    case Q_EXECUTOR_FAILED:
        return "single-use and released by the library when its phase two failed (CANN "
               "releases a single-use executor after phase two whatever the result: the "
               "caller must not destroy it)";
    case Q_EXECUTOR_NULL_WORKSPACE:
        return "released by the library when its phase two was given a NULL workspace with a "
               "non-zero size (CANN releases any executor then: the caller must not destroy it)";
    default:
        return "destroyed with aclDestroyAclOpExecutor";
    }
}

/* Message for a handle that is not a live executor; returns `code`. g_exec_mu not held. */
static aclnnStatus not_live(const char *fn, const aclOpExecutor *executor, aclnnStatus code) {
    char op[64];
    meta_q_reason why;
    if (meta_quarantined_executor(executor, op, sizeof op, &why))
        aclemu_set_error("%s: executor %p is not a live executor: this %s executor was %s", fn,
                         (const void *)executor, op, released_because(why));
    else
        aclemu_set_error("%s: executor %p is not a live executor (never created, already run, "
                         "or destroyed)", fn, (const void *)executor);
    return code;
}

static void release(aclOpExecutor *e, meta_q_reason why) {
    e->ops->destroy(e->payload);
    e->payload = NULL;
    meta_quarantine(e, why, op_of(e));
}

/* Takes e out of the registry (every later call sees it as not live) and says whether the
 * caller must release it now, after unlocking: when no other thread is running it; otherwise
 * the last one to finish does. Idempotent. g_exec_mu held. */
static bool retire_locked(aclOpExecutor *e, meta_q_reason why) {
    if (!e->retired) {
        aclemu_handle_unregister(e, ACLEMU_KIND_EXECUTOR);
        e->retired = true;
        e->retired_why = why;
    }
    return e->running == 0;
}

aclOpExecutor *aclemu_executor_new(const aclemu_executor_ops *ops, void *payload,
                                   uint64_t workspace_size, const aclTensor *const *tensors,
                                   const char *const *names, uint64_t ntensors) {
    if (ops == NULL || ops->launch == NULL || ops->destroy == NULL) {
        aclemu_set_error("%s: internal error: executor ops incomplete",
                         ops && ops->op_name ? ops->op_name : "aclemu_executor_new");
        if (ops != NULL && ops->destroy != NULL)
            ops->destroy(payload);
        return NULL;
    }
    uint64_t kept = 0;
    for (uint64_t i = 0; i < ntensors; i++)
        kept += tensors[i] != NULL;
    aclOpExecutor *e = kept > (SIZE_MAX - sizeof *e) / sizeof e->tensors[0]
                           ? NULL : calloc(1, sizeof *e + (size_t)kept * sizeof e->tensors[0]);
    if (e == NULL) {
        aclemu_set_error("%s: out of host memory for the executor", ops->op_name);
        ops->destroy(payload);
        return NULL;
    }
    e->ops = ops;
    e->payload = payload;
    e->workspace_size = workspace_size;
    for (uint64_t i = 0; i < ntensors; i++) {
        if (tensors[i] == NULL)
            continue;
        /* 0 (never a live generation) if the caller destroyed it already: phase two refuses */
        e->tensors[e->ntensors].tensor = tensors[i];
        e->tensors[e->ntensors].name = names != NULL ? names[i] : NULL;
        e->tensors[e->ntensors].gen = aclemu_handle_generation(tensors[i], ACLEMU_KIND_TENSOR);
        e->ntensors++;
    }
    aclemu_handle_register(e, ACLEMU_KIND_EXECUTOR);
    return e;
}

/* ACLNN_SUCCESS when every tensor phase one was given is the same live aclTensor as then;
 * else the message, naming the first one that is not, and ACLNN_ERR_PARAM_INVALID (what the
 * emulator answers for any handle that is not live). One registry look-up per tensor. */
static aclnnStatus check_tensors(const char *fn, const aclOpExecutor *e) {
    for (uint64_t i = 0; i < e->ntensors; i++) {
        const aclTensor *t = e->tensors[i].tensor;
        if (aclemu_handle_generation(t, ACLEMU_KIND_TENSOR) == e->tensors[i].gen)
            continue;
        bool reused = aclemu_handle_check(t, ACLEMU_KIND_TENSOR);
        aclemu_set_error("%s: %s (aclTensor %p) was destroyed after this executor's phase one"
                         "%s: the executor reads the caller's aclTensor at every run (CANN keeps "
                         "a pointer to it, not a copy), so running it now is a use after free "
                         "on a device; keep every tensor given to phase one alive until the "
                         "executor is destroyed (repeatable) or has run (single-use)", fn,
                         e->tensors[i].name ? e->tensors[i].name : "a tensor", (const void *)t,
                         reused ? " (the aclTensor now at that address is another one)" : "");
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclemu_executor_run(const char *fn, aclOpExecutor *executor, void *workspace,
                                uint64_t workspace_size, aclrtStream stream) {
    bool injected = aclemu_fault(fn);
    if (executor == NULL) {
        aclemu_set_error("%s: executor is NULL", fn);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    if (!aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR)) {
        pthread_mutex_unlock(&g_exec_mu);
        return not_live(fn, executor, ACLNN_ERR_PARAM_INVALID);
    }
    aclOpExecutor *e = executor;
    aclnnStatus rc = ACLNN_SUCCESS;
    bool release_now = false;
    if (workspace_size > 0 && workspace == NULL) {
        /* CANN checks this before anything else and deletes the executor, repeatable or not. */
        aclemu_set_error("%s: workspace is NULL but workspaceSize is %llu (the executor is "
                         "released: do not destroy it)", fn, (unsigned long long)workspace_size);
        rc = ACLNN_ERR_PARAM_NULLPTR;
        release_now = retire_locked(e, Q_EXECUTOR_NULL_WORKSPACE);
    } else if (!e->repeatable && e->running > 0) {
        /* Not released: the thread running it will. */
        aclemu_set_error("%s: executor %p is single-use and is already being run by another "
                         "thread", fn, (void *)e);
        rc = ACLNN_ERR_PARAM_INVALID;
    } else {
        if (injected) {
            rc = ACLNN_ERR_RUNTIME_ERROR; /* the message is set */
        } else if (workspace_size < e->workspace_size) {
            aclemu_set_error("%s: workspaceSize (%llu) is less than the %llu bytes phase one "
                             "asked for", fn, (unsigned long long)workspace_size,
                             (unsigned long long)e->workspace_size);
            rc = ACLNN_ERR_PARAM_INVALID;
        } else if (workspace_size > 0 && !aclemu_device_range(workspace, workspace_size)) {
            aclemu_set_error("%s: workspace [%p, +%llu) is not inside one live device "
                             "allocation (aclrtMalloc)", fn, workspace,
                             (unsigned long long)workspace_size);
            rc = ACLNN_ERR_PARAM_INVALID;
        } else {
            rc = check_tensors(fn, e);
        }
        if (rc == ACLNN_SUCCESS)
            e->running++;
        else if (!e->repeatable)
            release_now = retire_locked(e, Q_EXECUTOR_FAILED);
    }
    pthread_mutex_unlock(&g_exec_mu);
    if (rc != ACLNN_SUCCESS) {
        if (release_now)
            release(e, e->retired_why);
        return rc;
    }

    rc = e->ops->launch(e->payload, workspace, workspace_size, stream);

    pthread_mutex_lock(&g_exec_mu);
    e->running--;
    if (!e->repeatable)
        release_now = retire_locked(e, rc == ACLNN_SUCCESS ? Q_EXECUTOR_RAN : Q_EXECUTOR_FAILED);
    else
        release_now = e->retired && e->running == 0; /* retired while this thread ran it */
    pthread_mutex_unlock(&g_exec_mu);
    if (release_now)
        release(e, e->retired_why);
    return rc;
}

/* CANN answers both calls below with ACLNN_ERR_INNER_NULLPTR for NULL, and with
 * ACLNN_ERR_INNER for a pointer that is not an executor it knows (hicann/opbase
 * src/nnopbase/common/api/acl_op_api.cpp). */
aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (executor == NULL) {
        aclemu_set_error("%s: executor is NULL", __func__);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    bool live = aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR);
    if (live)
        executor->repeatable = true;
    pthread_mutex_unlock(&g_exec_mu);
    return live ? ACLNN_SUCCESS : not_live(__func__, executor, ACLNN_ERR_INNER);
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (executor == NULL) {
        aclemu_set_error("%s: executor is NULL", __func__);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    if (!aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR)) {
        pthread_mutex_unlock(&g_exec_mu);
        return not_live(__func__, executor, ACLNN_ERR_INNER);
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
