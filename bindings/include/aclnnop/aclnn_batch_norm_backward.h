/*
 * acl-py declarations: the two-phase BatchNormBackward operator (ops-nn norm/batch_norm_grad_v3:
 * the gradients of aclnnBatchNorm with respect to its input, weight and bias, for training or
 * inference), exported by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN
 * install has it: include/aclnnop/aclnn_batch_norm_backward.h (and, deprecated,
 * include/aclnnop/level2/). The prototype is the one of hicann/ops-nn
 * norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *weight,
    const aclTensor *runningMean, const aclTensor *runningVar, const aclTensor *saveMean,
    const aclTensor *saveInvstd, bool training, double eps, const aclBoolArray *outputMask,
    aclTensor *gradInput, aclTensor *gradWeight, aclTensor *gradBias, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormBackward(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, const aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_H_ */
