/*
 * acl-py declarations: the two-phase DeepNorm operator (ops-nn norm/deep_norm, LayerNorm of
 * the DeepNet residual x * alpha + gx), exported by libopapi.so (older releases) or
 * libopapi_nn.so (newer), where a CANN install has it: include/aclnnop/aclnn_deep_norm.h.
 * The vendor's build generates that header from the operator's definition (hicann/ops-nn
 * norm/deep_norm/op_host, ACLNNTYPE aclnn), so it is in no checkout: the prototype is the one
 * of norm/deep_norm/docs/aclnnDeepNorm.md (tests/test_vendor_headers.py compares them). The
 * text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_DEEP_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_DEEP_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnDeepNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gx,
                                                    const aclTensor *beta,
                                                    const aclTensor *gamma, double alpha,
                                                    double epsilon, const aclTensor *meanOut,
                                                    const aclTensor *rstdOut,
                                                    const aclTensor *yOut,
                                                    uint64_t *workspaceSize,
                                                    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnDeepNorm(void *workspace, uint64_t workspaceSize,
                                    aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_DEEP_NORM_H_ */
