/*
 * acl-py declarations: the two-phase InplaceAddRmsNorm operator (ops-nn
 * norm/inplace_add_rms_norm: AddRmsNorm writing y into x1Ref and x1 + x2 into x2Ref), exported
 * by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_inplace_add_rms_norm.h. The vendor's build generates that header from
 * the operator's definition (hicann/ops-nn norm/inplace_add_rms_norm/op_host: an input and an
 * output of one name make a "Ref" parameter), so it is in no checkout: the prototype is the one
 * of norm/inplace_add_rms_norm/docs/aclnnInplaceAddRmsNorm.md (tests/test_vendor_headers.py
 * compares them). The text between the cdef markers is read by cffi (bindings/build_ffi.py),
 * which removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_INPLACE_ADD_RMS_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_INPLACE_ADD_RMS_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnInplaceAddRmsNormGetWorkspaceSize(aclTensor *x1Ref, aclTensor *x2Ref,
                                                             const aclTensor *gamma,
                                                             double epsilon,
                                                             const aclTensor *rstdOut,
                                                             uint64_t *workspaceSize,
                                                             aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnInplaceAddRmsNorm(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_INPLACE_ADD_RMS_NORM_H_ */
