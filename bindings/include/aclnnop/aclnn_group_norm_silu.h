/*
 * acl-py declarations: the two-phase GroupNormSilu operators (ops-nn norm/group_norm_silu:
 * GroupNorm followed by the Silu activation; V2 takes whether to apply the activation),
 * exported by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN install has
 * them: include/aclnnop/aclnn_group_norm_silu.h (and, deprecated, include/aclnnop/level2/).
 * The prototypes are the ones of hicann/ops-nn
 * norm/group_norm_silu/op_host/op_api/aclnn_group_norm_silu.h. The text between the cdef
 * markers is read by cffi (bindings/build_ffi.py), which removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_SILU_H_
#define ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_SILU_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnGroupNormSiluGetWorkspaceSize(const aclTensor *self,
                                                         const aclTensor *gamma,
                                                         const aclTensor *beta, int64_t group,
                                                         double eps, aclTensor *out,
                                                         aclTensor *meanOut, aclTensor *rstdOut,
                                                         uint64_t *workspaceSize,
                                                         aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnGroupNormSilu(void *workspace, uint64_t workspaceSize,
                                         aclOpExecutor *executor, aclrtStream stream);
ACLNN_API aclnnStatus aclnnGroupNormSiluV2GetWorkspaceSize(const aclTensor *self,
                                                           const aclTensor *gamma,
                                                           const aclTensor *beta, int64_t group,
                                                           double eps, bool activateSilu,
                                                           aclTensor *out, aclTensor *meanOut,
                                                           aclTensor *rstdOut,
                                                           uint64_t *workspaceSize,
                                                           aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnGroupNormSiluV2(void *workspace, uint64_t workspaceSize,
                                           aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_GROUP_NORM_SILU_H_ */
