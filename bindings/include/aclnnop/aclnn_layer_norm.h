/*
 * acl-py declarations: the two-phase LayerNorm forward operator (ops-nn norm/layer_norm_v4),
 * exported by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN install
 * has it: include/aclnnop/aclnn_layer_norm.h (and, deprecated, include/aclnnop/level2/). The
 * text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 *
 * aclnnLayerNormWithImplMode is aclnnLayerNorm with an implementation mode (0 high
 * precision, the mode aclnnLayerNorm uses; 1 high performance; 2 keep FLOAT16).
 * aclnnFastLayerNorm takes aclnnLayerNorm's arguments, checks them by its own op_api
 * (aclnn_fast_layer_norm.cpp) and always runs the LayerNormV4 kernel.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
    aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnLayerNorm(void *workspace, uint64_t workspaceSize,
                                     aclOpExecutor *executor, aclrtStream stream);
ACLNN_API aclnnStatus aclnnLayerNormWithImplModeGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
    aclTensor *rstdOutOptional, int32_t implMode, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnLayerNormWithImplMode(void *workspace, uint64_t workspaceSize,
                                                 aclOpExecutor *executor, aclrtStream stream);
ACLNN_API aclnnStatus aclnnFastLayerNormGetWorkspaceSize(
    const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
    const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
    aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnFastLayerNorm(void *workspace, uint64_t workspaceSize,
                                         aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_LAYER_NORM_H_ */
