/*
 * acl-py declarations: the two-phase DeepNormGrad operator (ops-nn norm/deep_norm_grad, the
 * backward of DeepNorm: LayerNorm of x * alpha + gx), exported by libopapi.so (older releases)
 * or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_deep_norm_grad.h. The vendor's build generates that header from the
 * operator's definition (hicann/ops-nn norm/deep_norm_grad/op_host, ACLNNTYPE aclnn), so it
 * is in no checkout: the prototype is the one of norm/deep_norm_grad/docs/aclnnDeepNormGrad.md
 * (tests/test_vendor_headers.py compares them). The text between the cdef markers is read by
 * cffi (bindings/build_ffi.py), which removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_DEEP_NORM_GRAD_H_
#define ACL_PY_ACLNNOP_ACLNN_DEEP_NORM_GRAD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnDeepNormGradGetWorkspaceSize(const aclTensor *dy, const aclTensor *x,
                                                        const aclTensor *gx,
                                                        const aclTensor *gamma,
                                                        const aclTensor *mean,
                                                        const aclTensor *rstd, double alpha,
                                                        const aclTensor *dxOut,
                                                        const aclTensor *dgxOut,
                                                        const aclTensor *dbetaOut,
                                                        const aclTensor *dgammaOut,
                                                        uint64_t *workspaceSize,
                                                        aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnDeepNormGrad(void *workspace, uint64_t workspaceSize,
                                        aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_DEEP_NORM_GRAD_H_ */
