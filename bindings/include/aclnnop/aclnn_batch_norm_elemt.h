/*
 * acl-py declarations: the two-phase BatchNormElemt operator (ops-nn norm/batch_norm_elemt:
 * SyncBatchNorm's element-wise step, which normalizes each channel of input with a given mean
 * and invstd, then scales and shifts it by weight and bias), exported by libopapi.so (older
 * releases) or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_batch_norm_elemt.h. The prototype is the one of hicann/ops-nn
 * norm/batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.h (mean and invstd are declared
 * non-const there, though the operator only reads them).
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormElemtGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *bias, aclTensor *mean,
    aclTensor *invstd, double eps, aclTensor *output, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormElemt(void *workspace, uint64_t workspaceSize,
                                          aclOpExecutor *executor, const aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_ELEMT_H_ */
