/*
 * acl-py declarations: the two-phase GroupNormBackward operator (ops-nn norm/group_norm_grad,
 * the backward of GroupNorm), exported by libopapi.so (older releases) or libopapi_nn.so
 * (newer), where a CANN install has it: include/aclnnop/aclnn_group_norm_backward.h (hicann/
 * ops-nn norm/group_norm_grad/op_host/op_api/aclnn_group_norm_backward.h). The text between
 * the cdef markers is read by cffi (bindings/build_ffi.py), which removes the export macro
 * first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_BACKWARD_H_
#define ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_BACKWARD_H_

/* The vendor's header includes <array> (C++ only here, so C can include this one too); the
 * vendor's example uses std::array through it. */
#ifdef __cplusplus
#include <array>
#endif
#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(const aclTensor *gradOut,
                                                             const aclTensor *input,
                                                             const aclTensor *mean,
                                                             const aclTensor *rstd,
                                                             const aclTensor *gamma, int64_t N,
                                                             int64_t C, int64_t HxW,
                                                             int64_t group,
                                                             const aclBoolArray *outputMask,
                                                             aclTensor *gradInput,
                                                             aclTensor *gradGammaOut,
                                                             aclTensor *gradBetaOut,
                                                             uint64_t *workspaceSize,
                                                             aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnGroupNormBackward(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_BACKWARD_H_ */
