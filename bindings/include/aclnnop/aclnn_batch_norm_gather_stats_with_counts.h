/*
 * acl-py declarations: the two-phase BatchNormGatherStatsWithCounts operator (ops-nn
 * norm/sync_batch_norm_gather_stats_with_counts: SyncBatchNorm's gathering step, which combines
 * every rank's per-channel mean and invstd, weighted by the ranks' element counts, into the
 * global mean and invstd and updates the running statistics), exported by libopapi.so (older
 * releases) or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_batch_norm_gather_stats_with_counts.h. The prototype is the one of
 * hicann/ops-nn norm/sync_batch_norm_gather_stats_with_counts/op_host/op_api/
 * aclnn_batch_norm_gather_stats_with_counts.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H_
#define ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize(
    const aclTensor *input, const aclTensor *mean, const aclTensor *invstd,
    aclTensor *runningMean, aclTensor *runningVar, double momentum, double eps,
    const aclTensor *counts, aclTensor *meanAll, aclTensor *invstdAll, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnBatchNormGatherStatsWithCounts(void *workspace,
                                                          uint64_t workspaceSize,
                                                          aclOpExecutor *executor,
                                                          const aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_BATCH_NORM_GATHER_STATS_WITH_COUNTS_H_ */
