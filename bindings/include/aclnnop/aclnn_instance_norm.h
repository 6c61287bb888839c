/*
 * acl-py declarations: the two-phase InstanceNorm operator (ops-nn norm/instance_norm_v3: each
 * sample's channels normalized over their H x W values, scaled by gamma and shifted by beta,
 * with the mean and variance written per (sample, channel)), exported by libopapi.so (older
 * releases) or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_instance_norm.h (and, deprecated, include/aclnnop/level2/). The
 * prototype is the one of hicann/ops-nn norm/instance_norm_v3/op_host/op_api/
 * aclnn_instance_norm.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_INSTANCE_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_INSTANCE_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnInstanceNormGetWorkspaceSize(
    const aclTensor *x, const aclTensor *gamma, const aclTensor *beta, const char *dataFormat,
    double eps, aclTensor *y, aclTensor *mean, aclTensor *variance, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnInstanceNorm(void *workspace, uint64_t workspaceSize,
                                        aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_INSTANCE_NORM_H_ */
