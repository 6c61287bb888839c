/*
 * What a program asks about its devices: the run mode (aclrtGetRunMode).
 *
 * The emulator is a host program driving its devices, the way a server with Ascend cards
 * runs: the run mode is ACL_HOST.
 */
#include "rt_internal.h"

/* hicann/runtime src/acl/aclrt_impl/device.cpp aclrtGetRunModeImpl: the output pointer is
 * checked by the ACL layer (100000); src/runtime/api/impl/api_impl.cc GetRunMode asks the
 * driver and needs no context. Neither needs aclInit. */
aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_RT_INTERNAL_ERROR;
    if (runMode == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "runMode (output pointer) is NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}
