/*
 * acl-py declarations: the two-phase BatchNormReduce operator (ops-nn norm/bn_training_reduce:
 * per channel the sum and the sum of squares of a 4-D input over every other dim), exported
 * by libopapi.so, where a CANN install has it: include/aclnnop/aclnn_batch_norm_reduce.h.
 * The prototype is the one of hicann/ops-nn
 * norm/bn_training_reduce/op_api/aclnn_batch_norm_reduce.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_REDUCE_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_REDUCE_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormReduceGetWorkspaceSize(const aclTensor *x, aclTensor *sum,
                                                           aclTensor *squareSum,
                                                           uint64_t *workspaceSize,
                                                           aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormReduce(void *workspace, uint64_t workspaceSize,
                                           aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_REDUCE_H_ */
