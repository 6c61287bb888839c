/*
 * acl-py declarations: the two-phase GroupNorm operator (ops-nn norm/group_norm: the
 * normalization over groups of channels), exported by libopapi.so (older releases) or
 * libopapi_nn.so (newer), where a CANN install has it: include/aclnnop/aclnn_group_norm.h
 * (and, deprecated, include/aclnnop/level2/). The prototype is the one of hicann/ops-nn
 * norm/group_norm/op_host/op_api/aclnn_group_norm.h. The text between the cdef markers is read
 * by cffi (bindings/build_ffi.py), which removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor *self, const aclTensor *gamma,
                                                     const aclTensor *beta, int64_t N, int64_t C,
                                                     int64_t HxW, int64_t group, double eps,
                                                     aclTensor *out, aclTensor *meanOut,
                                                     aclTensor *rstdOut, uint64_t *workspaceSize,
                                                     aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnGroupNorm(void *workspace, uint64_t workspaceSize,
                                     aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_H_ */
