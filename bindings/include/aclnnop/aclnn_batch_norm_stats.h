/*
 * acl-py declarations: the two-phase BatchNormStats operator (ops-math
 * math/reduce_std_with_mean: SyncBatchNorm's first step, one rank's per-channel mean and
 * 1 / sqrt(biased variance + eps) of its input), exported by libopapi.so (older releases) or
 * libopapi_math.so (newer), where a CANN install has it: include/aclnnop/aclnn_batch_norm_stats.h.
 * The prototype is the one of hicann/ops-math
 * math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_STATS_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_STATS_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormStatsGetWorkspaceSize(const aclTensor *input, double eps,
                                                          aclTensor *mean, aclTensor *invstd,
                                                          uint64_t *workspaceSize,
                                                          aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormStats(void *workspace, uint64_t workspaceSize,
                                          aclOpExecutor *executor, const aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_STATS_H_ */
