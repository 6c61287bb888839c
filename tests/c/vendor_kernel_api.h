/* Test only: the kernel binary calls of CANN's include/acl/acl_rt.h that the vendor's
 * host_register/0_simple_zero_copy example launches its Ascend C kernel with
 * (aclrtBinaryLoadFromFile ... aclrtLaunchKernelWithConfig). The emulator runs no device
 * binaries and its prefix declares none of them; tests/test_vendor_examples.py force-includes
 * this header into the example's unchanged sources and links tests/c/vendor_binary_kernels.cpp,
 * which stands in for the calls and the kernel file. The handle types as the vendor's header
 * spells them; the option and configuration structs stay opaque (the example passes NULL). */
#ifndef ACL_PY_TESTS_VENDOR_KERNEL_API_H
#define ACL_PY_TESTS_VENDOR_KERNEL_API_H

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void *aclrtBinHandle;
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;
typedef struct aclrtBinaryLoadOptions aclrtBinaryLoadOptions;
typedef struct aclrtLaunchKernelCfg aclrtLaunchKernelCfg;

aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions *options,
                                 aclrtBinHandle *binHandle);
aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle);
aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                aclrtFuncHandle *funcHandle);
aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle);
aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize,
                               aclrtParamHandle *paramHandle);
aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle);
aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                     aclrtStream stream, aclrtLaunchKernelCfg *cfg,
                                     aclrtArgsHandle argsHandle, void *reserve);

#ifdef __cplusplus
}
#endif

#endif
