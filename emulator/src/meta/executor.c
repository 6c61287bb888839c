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
 * works on descriptors copied at phase one, so nothing here would notice otherwise), and
 * hands the launch each tensor's storage address as the tensor records it at that run.
 *
 * The aclSet*TensorAddr calls (and their reserved Acl-prefixed twins) re-point a repeatable
 * executor's tensor: for the executors of CANN's built-in operators they only set the
 * caller's aclTensor's address, which the executor reads at its next run (hicann/opbase
 * src/nnopbase/common/api/acl_op_api.cpp; tests/nnopbase/ut/composite_op/test_acl_op_api.cpp
 * aclUpdateTensorAddr); the index rules and codes are those of the docs
 * (docs/en/api/nnopbase/aclnn/aclSet*TensorAddr.md) and of the executors that use them
 * (src/nnopbase/individual_op/api/individual_op_api.cpp NnopbaseSetInputTensorAddr...).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "meta_internal.h"

struct aclOpExecutor {
    const aclemu_executor_ops *ops;
    void *payload;
    uint64_t workspace_size; /* what phase one asked for */
    bool repeatable;
    bool phase_two_called;   /* once: its tensors' awaiting_phase_two counts are released */
    int running;             /* phase twos in progress (g_exec_mu) */
    bool retired;            /* out of the registry, released when `running` drops to 0 */
    meta_q_reason retired_why;
    uint64_t ntensors;       /* tensor parameters, in the prototype's order */
    uint64_t ninputs;        /* the first ninputs are inputs, the rest outputs */
    struct {
        aclTensor *tensor;   /* NULL: an optional tensor phase one was not given */
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

/* The docs of aclSetRawTensorAddr and aclGetRawTensorAddr (hicann/opbase docs/en/api/
 * nnopbase/aclnn/) allow them on a tensor before phase one or after phase two, never between:
 * each tensor counts the executors holding it whose phase two has not been called. Called
 * once per executor, when its phase two is first called or it is destroyed unrun; a tensor
 * destroyed meanwhile (another generation, or another object at its address) is not
 * touched. g_exec_mu held. */
static void phase_two_called_locked(aclOpExecutor *e) {
    if (e->phase_two_called)
        return;
    e->phase_two_called = true;
    for (uint64_t i = 0; i < e->ntensors; i++) {
        aclTensor *t = e->tensors[i].tensor;
        if (t != NULL && e->tensors[i].gen != 0 &&
            aclemu_handle_generation(t, ACLEMU_KIND_TENSOR) == e->tensors[i].gen &&
            t->awaiting_phase_two > 0)
            t->awaiting_phase_two--;
    }
}

uint32_t meta_tensor_awaiting_phase_two(const aclTensor *t) {
    pthread_mutex_lock(&g_exec_mu);
    uint32_t n = t->awaiting_phase_two;
    pthread_mutex_unlock(&g_exec_mu);
    return n;
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
                                   const char *const *names, uint64_t ntensors,
                                   uint64_t ninputs) {
    if (ops == NULL || ops->launch == NULL || ops->destroy == NULL) {
        aclemu_set_error("%s: internal error: executor ops incomplete",
                         ops && ops->op_name ? ops->op_name : "aclemu_executor_new");
        if (ops != NULL && ops->destroy != NULL)
            ops->destroy(payload);
        return NULL;
    }
    if (ntensors > ACLEMU_EXECUTOR_MAX_TENSORS || ninputs > ntensors) {
        aclemu_set_error("%s: internal error: %llu tensor parameters (%llu inputs), at most %d",
                         ops->op_name, (unsigned long long)ntensors,
                         (unsigned long long)ninputs, ACLEMU_EXECUTOR_MAX_TENSORS);
        ops->destroy(payload);
        return NULL;
    }
    aclOpExecutor *e = calloc(1, sizeof *e + (size_t)ntensors * sizeof e->tensors[0]);
    if (e == NULL) {
        aclemu_set_error("%s: out of host memory for the executor", ops->op_name);
        ops->destroy(payload);
        return NULL;
    }
    e->ops = ops;
    e->payload = payload;
    e->workspace_size = workspace_size;
    e->ntensors = ntensors;
    e->ninputs = ninputs;
    pthread_mutex_lock(&g_exec_mu);
    for (uint64_t i = 0; i < ntensors; i++) {
        /* CANN's executor keeps the caller's pointer and writes through it: the address
         * calls update the caller's tensor (the const is the phase-one prototype's) */
        e->tensors[i].tensor = (aclTensor *)(uintptr_t)tensors[i];
        e->tensors[i].name = names != NULL ? names[i] : NULL;
        /* 0 (never a live generation) if the caller destroyed it already: phase two refuses */
        e->tensors[i].gen = tensors[i] != NULL
                                ? aclemu_handle_generation(tensors[i], ACLEMU_KIND_TENSOR) : 0;
        if (e->tensors[i].gen != 0)
            e->tensors[i].tensor->awaiting_phase_two++;
    }
    aclemu_handle_register(e, ACLEMU_KIND_EXECUTOR);
    pthread_mutex_unlock(&g_exec_mu);
    return e;
}

/* ACLNN_SUCCESS when every tensor phase one was given is the same live aclTensor as then,
 * with addrs[i] the storage address tensor i records now (what this run uses: CANN reads the
 * caller's tensors at every run); else the message, naming the first one that is not, and
 * ACLNN_ERR_PARAM_INVALID (what the emulator answers for any handle that is not live). One
 * registry look-up per tensor. g_exec_mu held (the address calls write under it). */
static aclnnStatus check_tensors(const char *fn, const aclOpExecutor *e, void **addrs) {
    for (uint64_t i = 0; i < e->ntensors; i++) {
        const aclTensor *t = e->tensors[i].tensor;
        addrs[i] = NULL;
        if (t == NULL)
            continue;
        if (aclemu_handle_generation(t, ACLEMU_KIND_TENSOR) == e->tensors[i].gen) {
            addrs[i] = t->data;
            continue;
        }
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
    phase_two_called_locked(e);
    aclnnStatus rc = ACLNN_SUCCESS;
    bool release_now = false;
    void *addrs[ACLEMU_EXECUTOR_MAX_TENSORS];
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
            rc = check_tensors(fn, e, addrs);
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

    rc = e->ops->launch(e->payload, addrs, workspace, workspace_size, stream);

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
    phase_two_called_locked(executor);
    aclemu_handle_unregister(executor, ACLEMU_KIND_EXECUTOR);
    pthread_mutex_unlock(&g_exec_mu);
    release(executor, Q_EXECUTOR_DESTROYED);
    return ACLNN_SUCCESS;
}

/* ---- aclSet*TensorAddr ----------------------------------------------------------------------- */

/* Which of the executor's tensor parameters an index counts: its inputs, its outputs, or all
 * of them (inputs first), each in the operator's prototype order. */
typedef enum { ADDR_INPUT, ADDR_OUTPUT, ADDR_ANY } addr_kind;

static const char *kind_word(addr_kind kind) {
    return kind == ADDR_INPUT ? "input" : kind == ADDR_OUTPUT ? "output" : "tensor";
}

/* The calls' common rules once the tensor to update is known (its list element for the
 * Dynamic ones): `slot` the executor's parameter it names (an index over `kind`), `what` how
 * the message names the index ("index", "irIndex"). CANN's order: the tensor's address is set
 * before the executor is looked at, so a NULL executor leaves it updated (561103). The
 * emulator's stricter refusals (not live, single-use, index, not the executor's tensor) change
 * nothing. */
static aclnnStatus set_addr(const char *fn, aclOpExecutor *executor, addr_kind kind,
                            const char *what, size_t slot, size_t relative, aclTensor *tensor,
                            const char *tensor_name, void *addr) {
    if ((uintptr_t)addr % ACLEMU_TENSOR_ALIGN != 0) {
        aclemu_set_error("%s: addr %p is not %d-byte aligned (the docs: an address that is not "
                         "gives an undefined error)", fn, addr, ACLEMU_TENSOR_ALIGN);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (executor == NULL) {
        tensor->data = addr;
        aclemu_set_error("%s: executor is NULL (%s's address was updated all the same, as "
                         "CANN updates it before looking at the executor)", fn, tensor_name);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    pthread_mutex_lock(&g_exec_mu);
    if (!aclemu_handle_check(executor, ACLEMU_KIND_EXECUTOR)) {
        pthread_mutex_unlock(&g_exec_mu);
        return not_live(fn, executor, ACLNN_ERR_PARAM_INVALID);
    }
    aclOpExecutor *e = executor;
    aclnnStatus rc = ACLNN_ERR_PARAM_INVALID;
    uint64_t first = kind == ADDR_OUTPUT ? e->ninputs : 0;
    uint64_t count = kind == ADDR_INPUT ? e->ninputs
                     : kind == ADDR_OUTPUT ? e->ntensors - e->ninputs : e->ntensors;
    if (!e->repeatable) {
        aclemu_set_error("%s: executor %p (%s) is single-use: re-point the tensors of a "
                         "repeatable executor (aclSetAclOpExecutorRepeatable right after phase "
                         "one); whether a single-use one sees the new address depends on "
                         "CANN's operator cache (a cached executor runs on phase one's "
                         "addresses)", fn, (void *)e, op_of(e));
    } else if (slot >= count) {
        aclemu_set_error("%s: %s (%zu) is out of range: %s has %llu %s%s (index them from 0)",
                         fn, what, slot, op_of(e), (unsigned long long)count, kind_word(kind),
                         count == 1 ? "" : "s");
    } else {
        uint64_t i = first + slot;
        const aclTensor *mine = e->tensors[i].tensor;
        const char *name = e->tensors[i].name ? e->tensors[i].name : "?";
        if (mine == NULL) {
            aclemu_set_error("%s: %s %zu is %s's %s %s, which phase one was given as NULL: it "
                             "has no address to update", fn, what, slot, op_of(e),
                             kind_word(kind), name);
        } else if (relative > 0) {
            aclemu_set_error("%s: relativeIndex (%zu) is out of range: %s's %s %zu (%s) is one "
                             "aclTensor, not a list", fn, relative, op_of(e), kind_word(kind),
                             slot, name);
        } else if (mine != tensor ||
                   aclemu_handle_generation(mine, ACLEMU_KIND_TENSOR) != e->tensors[i].gen) {
            bool gone = mine == tensor; /* destroyed, and maybe another made at its address */
            aclemu_set_error("%s: %s (aclTensor %p) is not the tensor %s %zu names: %s's %s "
                             "%s is aclTensor %p%s; the executor reads the tensors phase one "
                             "was given, so only theirs can be re-pointed", fn, tensor_name,
                             (void *)tensor, what, slot, op_of(e), kind_word(kind), name,
                             (const void *)mine,
                             gone ? ", destroyed after phase one" : "");
        } else {
            tensor->data = addr;
            rc = ACLNN_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_exec_mu);
    return rc;
}

static aclnnStatus set_tensor_addr(const char *fn, aclOpExecutor *executor, addr_kind kind,
                                   size_t index, aclTensor *tensor, void *addr) {
    if (aclemu_fault(fn))
        return ACLNN_ERR_INNER;
    if (tensor == NULL) {
        aclemu_set_error("%s: tensor is NULL", fn);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    if (!aclemu_handle_check(tensor, ACLEMU_KIND_TENSOR)) {
        aclemu_set_error("%s: tensor %p is not a live aclTensor", fn, (void *)tensor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return set_addr(fn, executor, kind, "index", index, 0, tensor, "tensor", addr);
}

static aclnnStatus set_dynamic_addr(const char *fn, aclOpExecutor *executor, addr_kind kind,
                                    size_t irIndex, size_t relativeIndex,
                                    aclTensorList *tensors, void *addr) {
    if (aclemu_fault(fn))
        return ACLNN_ERR_INNER;
    if (tensors == NULL) {
        aclemu_set_error("%s: tensors is NULL", fn);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    if (!aclemu_handle_check(tensors, ACLEMU_KIND_TENSOR_LIST)) {
        aclemu_set_error("%s: tensors %p is not a live aclTensorList", fn, (void *)tensors);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (relativeIndex >= tensors->size) {
        aclemu_set_error("%s: relativeIndex (%zu) is out of range: tensors holds %llu "
                         "aclTensor%s", fn, relativeIndex, (unsigned long long)tensors->size,
                         tensors->size == 1 ? "" : "s");
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclTensor *tensor = tensors->items[relativeIndex];
    if (tensor == NULL) {
        aclemu_set_error("%s: tensors[%zu] is NULL", fn, relativeIndex);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    char name[48];
    snprintf(name, sizeof name, "tensors[%zu]", relativeIndex);
    return set_addr(fn, executor, kind, "irIndex", irIndex, relativeIndex, tensor, name, addr);
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
                                  aclTensor *tensor, void *addr) {
    return set_tensor_addr(__func__, executor, ADDR_INPUT, index, tensor, addr);
}

aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
                                   aclTensor *tensor, void *addr) {
    return set_tensor_addr(__func__, executor, ADDR_OUTPUT, index, tensor, addr);
}

aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                             void *addr) {
    return set_tensor_addr(__func__, executor, ADDR_ANY, index, tensor, addr);
}

aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                         const size_t relativeIndex, aclTensorList *tensors,
                                         void *addr) {
    return set_dynamic_addr(__func__, executor, ADDR_INPUT, irIndex, relativeIndex, tensors,
                            addr);
}

aclnnStatus aclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                          const size_t relativeIndex, aclTensorList *tensors,
                                          void *addr) {
    return set_dynamic_addr(__func__, executor, ADDR_OUTPUT, irIndex, relativeIndex, tensors,
                            addr);
}

aclnnStatus aclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                    const size_t relativeIndex, aclTensorList *tensors,
                                    void *addr) {
    return set_dynamic_addr(__func__, executor, ADDR_ANY, irIndex, relativeIndex, tensors,
                            addr);
}

/* The reserved spellings (docs/en/api/nnopbase/aclnn/reserved_apis.md: the same function as
 * the lower-case one; CANN's call it): each counted and named as itself. */
aclnnStatus AclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
                                  aclTensor *tensor, void *addr) {
    return set_tensor_addr(__func__, executor, ADDR_INPUT, index, tensor, addr);
}

aclnnStatus AclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index,
                                   aclTensor *tensor, void *addr) {
    return set_tensor_addr(__func__, executor, ADDR_OUTPUT, index, tensor, addr);
}

aclnnStatus AclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                             void *addr) {
    return set_tensor_addr(__func__, executor, ADDR_ANY, index, tensor, addr);
}

aclnnStatus AclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                         const size_t relativeIndex, aclTensorList *tensors,
                                         void *addr) {
    return set_dynamic_addr(__func__, executor, ADDR_INPUT, irIndex, relativeIndex, tensors,
                            addr);
}

aclnnStatus AclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                          const size_t relativeIndex, aclTensorList *tensors,
                                          void *addr) {
    return set_dynamic_addr(__func__, executor, ADDR_OUTPUT, irIndex, relativeIndex, tensors,
                            addr);
}

aclnnStatus AclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                    const size_t relativeIndex, aclTensorList *tensors,
                                    void *addr) {
    return set_dynamic_addr(__func__, executor, ADDR_ANY, irIndex, relativeIndex, tensors,
                            addr);
}
