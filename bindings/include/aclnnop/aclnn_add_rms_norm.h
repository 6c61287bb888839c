/*
 * acl-py declarations: the two-phase AddRmsNorm operator (ops-nn norm/add_rms_norm: the
 * residual add fused with RmsNorm), exported by libopapi.so (older releases) or
 * libopapi_nn.so (newer), where a CANN install has it: include/aclnnop/aclnn_add_rms_norm.h
 * (and, deprecated, include/aclnnop/level2/). The prototype is the one of hicann/ops-nn
 * norm/add_rms_norm/op_host/op_api/aclnn_add_rms_norm.h. The text between the cdef markers is
 * read by cffi (bindings/build_ffi.py), which removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_ADD_RMS_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_ADD_RMS_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
                                                      const aclTensor *gamma, double epsilon,
                                                      aclTensor *yOut, aclTensor *rstdOut,
                                                      aclTensor *xOut, uint64_t *workspaceSize,
                                                      aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnAddRmsNorm(void *workspace, uint64_t workspaceSize,
                                      aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_ADD_RMS_NORM_H_ */
