/*
 * acl-py declarations: the two-phase LayerNormBackward operator, exported by libopapi.so
 * (older releases) or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_layer_norm_backward.h (and, deprecated, include/aclnnop/level2/).
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes
 * the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_
#define ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor *gradOut, const aclTensor *input, const aclIntArray *normalizedShape,
    const aclTensor *mean, const aclTensor *rstd, const aclTensor *weightOptional,
    const aclTensor *biasOptional, const aclBoolArray *outputMask,
    aclTensor *gradInputOut, aclTensor *gradWeightOut, aclTensor *gradBiasOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnLayerNormBackward(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_BACKWARD_H_ */
