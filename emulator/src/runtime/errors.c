/*
 * The runtime's error reports besides the message: the thread's last error
 * (aclrtPeekAtLastError, aclrtGetLastError) and a device's fault summary
 * (aclrtGetErrorVerbose).
 *
 * The last error, as CANN keeps it (hicann/runtime src/runtime/api/api_global_err.cc,
 * src/runtime/core/src/common/inner_thread_local.cpp): every failure of the runtime layer
 * (a runtime status, ACL_ERROR_RT_*: 107xxx, 207xxx, 507xxx) records its status on the
 * calling thread, replacing the one before; success clears nothing; aclrtGetLastError returns
 * it and clears it, aclrtPeekAtLastError returns it and leaves it. The checks CANN's ACL layer
 * makes before it reaches the runtime (its NULL and range checks, 100000 and the like, and the
 * few runtime codes it returns itself) record nothing (src/acl/aclrt_impl: they return before
 * calling the runtime). The emulator records in RT_ERR, which every runtime-layer failure
 * goes through (rt_fail, rt_internal.h), and not in ACL_LAYER_ERR.
 */
#include <stddef.h>

#include "rt_internal.h"

/* aclrtErrorInfo as CANN lays it out on LP64 (include/external/acl/acl_rt.h). */
_Static_assert(sizeof(aclrtMemUceInfo) == 128, "aclrtMemUceInfo");
_Static_assert(sizeof(aclrtMemUceInfoArray) == 8 + 20 * 128, "aclrtMemUceInfoArray");
_Static_assert(offsetof(aclrtErrorInfo, errorType) == 4, "aclrtErrorInfo.errorType");
_Static_assert(offsetof(aclrtErrorInfo, detail) == 8, "aclrtErrorInfo.detail");
_Static_assert(sizeof(aclrtErrorInfo) == 8 + 8 + 20 * 128, "aclrtErrorInfo");

_Thread_local aclError rt_tl_last_error; /* see rt_fail (rt_internal.h) */

/* Neither call is counted or faulted: like aclGetRecentErrMsg they report errors, and the
 * status they return is the error itself. */
static aclError check_level(const char *fn, aclrtLastErrLevel level) {
    if (level != ACL_RT_THREAD_LEVEL)
        return ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "level %d is invalid: "
                             "ACL_RT_THREAD_LEVEL (0) is the only level", (int)level);
    return ACL_SUCCESS;
}

aclError aclrtPeekAtLastError(aclrtLastErrLevel level) {
    aclError rc = check_level(__func__, level);
    return rc != ACL_SUCCESS ? rc : rt_tl_last_error;
}

aclError aclrtGetLastError(aclrtLastErrLevel level) {
    aclError rc = check_level(__func__, level);
    if (rc != ACL_SUCCESS)
        return rc;
    aclError last = rt_tl_last_error;
    rt_tl_last_error = ACL_SUCCESS;
    return last;
}

/* A device's fault summary. CANN answers on the parts whose runtime reports device faults
 * (src/runtime/config: 910_B_93, 950 and others list RT_FEATURE_DFX_ERR_GET_AND_REPAIR; the
 * first-generation training parts and Atlas inference parts do not: 207000), and reports the
 * memory (HBM UCE) and link faults its driver flags (src/runtime/api/impl/api_impl.cc
 * GetErrorVerbose). A failed task is no device fault: its status reaches the program through
 * the synchronize and the exception callbacks. The emulated device has no memory or link
 * faults, so the summary is always "no error". */
aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo *errorInfo) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = errorInfo != NULL ? aclemu_soc_info(__func__) : NULL;
    if (errorInfo == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "errorInfo (output pointer) is NULL");
    else if (soc == NULL)
        rc = rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
    else if (soc->npu_arch != 2201 && soc->npu_arch != 3510)
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "%s (%s) does not report device faults: CANN answers on Atlas A2/A3 and "
                    "Ascend 950 parts only", soc->name, soc->series);
    else if (deviceId < 0 || deviceId >= rt_device_count())
        rc = RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, __func__,
                    "deviceId %d is not a device of the process (%d device%s)", (int)deviceId,
                    rt_device_count(), rt_device_count() == 1 ? "" : "s");
    else {
        /* The fields CANN's ACL layer writes (src/acl/aclrt_impl/event.cpp); the rest of the
         * caller's struct is left as it was. */
        errorInfo->tryRepair = 0;
        errorInfo->hasDetail = 0;
        errorInfo->errorType = ACL_RT_NO_ERROR;
        errorInfo->detail.aicoreErrType = ACL_RT_AICORE_ERROR_UNKNOWN;
    }
    rt_leave();
    return rc;
}
