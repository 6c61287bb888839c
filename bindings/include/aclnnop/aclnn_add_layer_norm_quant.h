/*
 * acl-py declarations: the two-phase AddLayerNormQuant operator (ops-nn norm/add_layer_norm_quant:
 * x1 + x2 (+ bias), LayerNorm of the sum, then one or two static (per-channel scales and zero
 * points) or dynamic (per-row) int8 quantizations), exported by libopapi.so (older releases)
 * or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_add_layer_norm_quant.h. The prototype is the one of hicann/ops-nn
 * norm/add_layer_norm_quant/op_host/op_api/aclnn_add_layer_norm_quant.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_ADD_LAYER_NORM_QUANT_H_
#define ACL_PY_ACLNNOP_ACLNN_ADD_LAYER_NORM_QUANT_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnAddLayerNormQuantGetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma, const aclTensor *beta,
    const aclTensor *biasOptional, const aclTensor *scales1Optional,
    const aclTensor *scales2Optional, const aclTensor *zeroPoints1Optional,
    const aclTensor *zeroPoints2Optional, const char *quantMode, double epsilon,
    bool additionalOutput, bool divMode, aclTensor *y1Out, aclTensor *y2Out, aclTensor *xOut,
    aclTensor *outScales1Out, aclTensor *outScales2Out, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnAddLayerNormQuant(void *workspace, uint64_t workspaceSize,
                                             aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_ADD_LAYER_NORM_QUANT_H_ */
