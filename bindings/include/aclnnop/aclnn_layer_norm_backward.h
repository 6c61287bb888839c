/*
 * acl-py declarations: the two-phase LayerNormBackward operator, exported by libopapi.so
 * (older releases) or libopapi_nn.so (newer). Layout follows the vendor's
 * include/aclnnop/aclnn_layer_norm_backward.h. The text between the cdef markers is read
 * verbatim by cffi.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_
#define ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclIntArray *normalizedShape,
    const aclTensor *mean, const aclTensor *rstd, const aclTensor *weightOptional,
    const aclTensor *biasOptional, const aclBoolArray *outputMask,
    aclTensor *gradInputOut, aclTensor *gradWeightOut, aclTensor *gradBiasOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnLayerNormBackward(void *workspace, uint64_t workspaceSize,
                                   aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_ */
