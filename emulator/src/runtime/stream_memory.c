/*
 * Stream memory operations: aclrtValueWrite and aclrtValueWait, a 64-bit value written to or
 * waited for in device memory as a task of a stream (hicann/runtime docs/zh/api_ref/
 * 11-09_stream_memory_operation.md).
 *
 * CANN's checks and codes, in its order (src/acl/aclrt_impl/memory.cpp: a NULL devAddr,
 * 100000; src/runtime/api/api_c_memory.cc rtsValueWrite/rtsValueWait: the SoC has the feature
 * (Atlas A2/A3 and Ascend 950: src/runtime/config/{910_B_93,950}/dev_info_reg.cc
 * RT_FEATURE_TASK_VALUE_WAIT), else 207000, then the stream handle; api_error.cc
 * MemWriteValue/MemWaitValue: flag (write: 0; wait: below 4), devAddr in device memory, else
 * 107000; api_impl.cc: the context, the stream's). Stricter than the runtime, which does not
 * check it: devAddr must be 8-byte aligned, as the API reference asks of aclrtValueWrite
 * (107000). A wait ends when the value meets the comparison, or when its stream is aborted,
 * stopped or destroyed (it polls: the memory has no hardware doorbell here).
 */
#include <stdlib.h>
#include <time.h>

#include "rt_internal.h"

typedef struct {
    void *token; /* the allocation pinned while the task is queued */
    volatile uint64_t *addr;
    uint64_t value;
    uint32_t flag;
} value_task;

static void write_run(void *arg) {
    value_task *t = arg;
    __atomic_store_n(t->addr, t->value, __ATOMIC_SEQ_CST);
}

static bool met(uint64_t now, uint64_t value, uint32_t flag) {
    switch (flag) {
    case ACL_STREAM_WAIT_VALUE_GEQ:
        return (int64_t)(now - value) >= 0;
    case ACL_STREAM_WAIT_VALUE_EQ:
        return now == value;
    case ACL_STREAM_WAIT_VALUE_AND:
        return (now & value) != 0;
    default: /* ACL_STREAM_WAIT_VALUE_NOR */
        return ~(now | value) != 0;
    }
}

static void wait_run(void *arg) {
    value_task *t = arg;
    for (unsigned i = 1; !met(__atomic_load_n(t->addr, __ATOMIC_SEQ_CST), t->value, t->flag); i++) {
        if (aclemu_task_cancelled())
            return;
        if (i < 64) {
            rt_cpu_relax();
            continue;
        }
        struct timespec nap = {0, 200000}; /* 0.2 ms */
        nanosleep(&nap, NULL);
    }
}

static void value_release(void *arg) {
    value_task *t = arg;
    aclemu_device_unpin(t->token);
    free(t);
}

static aclError enqueue(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream,
                        bool wait, const char *fn) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    void *token = NULL;
    if (devAddr == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "devAddr is NULL");
        goto out;
    }
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (soc == NULL) {
        rc = ACL_ERROR_RT_INTERNAL_ERROR; /* the message names ACL_EMU_SOC */
        goto out;
    }
    if (soc->npu_arch != 2201 && soc->npu_arch != 3510) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                    "%s (%s) has no stream value tasks (Atlas A2/A3 and Ascend 950 only)",
                    soc->name, soc->series);
        goto out;
    }
    if ((rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS)
        goto out;
    if (!wait && flag != 0) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "flag %u: it is reserved and must be 0", flag);
        goto out;
    }
    if (wait && flag > ACL_STREAM_WAIT_VALUE_NOR) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "flag %u is no comparison (ACL_STREAM_WAIT_VALUE_GEQ, _EQ, _AND or _NOR: 0-3)",
                    flag);
        goto out;
    }
    if ((token = aclemu_device_pin(devAddr, sizeof(uint64_t))) == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "devAddr %p: its 8 bytes are not inside one live device allocation "
                    "(aclrtMalloc)", devAddr);
        goto out;
    }
    if (((uintptr_t)devAddr & 7u) != 0) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "devAddr %p is not 8-byte aligned", devAddr);
        goto out;
    }
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    value_task *t = malloc(sizeof *t);
    if (t == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    *t = (value_task){token, devAddr, value, flag};
    token = NULL; /* the task's now */
    if ((rc = rt_stream_push(s, wait ? wait_run : write_run, value_release, t, fn)) !=
        ACL_SUCCESS) {
        token = t->token;
        free(t);
    }
out:
    if (token != NULL)
        aclemu_device_unpin(token);
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
    return enqueue(devAddr, value, flag, stream, false, __func__);
}

aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
    return enqueue(devAddr, value, flag, stream, true, __func__);
}
