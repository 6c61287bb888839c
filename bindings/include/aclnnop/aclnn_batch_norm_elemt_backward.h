/*
 * acl-py declarations: the two-phase BatchNormElemtBackward operator (ops-nn
 * norm/sync_batch_norm_backward_elemt: SyncBatchNorm's gradInput from the per-channel sums of
 * aclnnBatchNormReduceBackward gathered over the ranks, divided by the total count of
 * counter), exported by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN
 * install has it: include/aclnnop/aclnn_batch_norm_elemt_backward.h. The prototype is the one
 * of hicann/ops-nn norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_BACKWARD_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_BACKWARD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormElemtBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclTensor *mean,
    const aclTensor *invstd, const aclTensor *weight, const aclTensor *sumDy,
    const aclTensor *sumDyXmu, aclTensor *counter, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormElemtBackward(void *workspace, uint64_t workspaceSize,
                                                  aclOpExecutor *executor,
                                                  const aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_BACKWARD_H_ */
