/*
 * acl-py declarations: the two-phase BatchNorm operator (ops-nn norm/batch_norm_v3: the
 * normalization of each channel over the batch and the spatial dims, training or inference),
 * exported by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN install has
 * it: include/aclnnop/aclnn_batch_norm.h (and, deprecated, include/aclnnop/level2/). The
 * prototype is the one of hicann/ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormGetWorkspaceSize(const aclTensor *input, const aclTensor *weight,
                                                     const aclTensor *bias, aclTensor *runningMean,
                                                     aclTensor *runningVar, bool training,
                                                     double momentum, double eps, aclTensor *output,
                                                     aclTensor *saveMean, aclTensor *saveInvstd,
                                                     uint64_t *workspaceSize,
                                                     aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNorm(void *workspace, uint64_t workspaceSize,
                                     aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_H_ */
