/*
 * acl-py declarations: the two-phase BatchNormReduceBackward operator (ops-nn
 * norm/sync_batch_norm_backward_reduce: the per-channel sums of SyncBatchNorm's backward,
 * sum(gradOut) and sum(gradOut * (input - mean)), and from them gradWeight and gradBias, each
 * written only where its flag asks), exported by libopapi.so (older releases) or
 * libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_batch_norm_backward_reduce.h. The prototype is the one of hicann/ops-nn
 * norm/sync_batch_norm_backward_reduce/op_api/aclnn_batch_norm_backward_reduce.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_REDUCE_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_REDUCE_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormReduceBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const bool inputG, const bool weightG,
    const bool biasG, aclTensor *sumDy, aclTensor *sumDyXmu, aclTensor *gradWeight,
    aclTensor *gradBias, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormReduceBackward(void *workspace, uint64_t workspaceSize,
                                                   aclOpExecutor *executor,
                                                   const aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_BACKWARD_REDUCE_H_ */
