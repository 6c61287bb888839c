/*
 * acl-py declarations: the two-phase AddRmsNormDynamicQuantV2 operator (ops-nn
 * norm/add_rms_norm_dynamic_quant: AddRmsNormDynamicQuant with an optional beta added to the
 * normed row and an outputMask choosing which of the two quantizations to compute), exported
 * by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN install has it:
 * include/aclnnop/aclnn_add_rms_norm_dynamic_quant_v2.h (and, deprecated,
 * include/aclnnop/level2/). The prototype is the one of hicann/ops-nn
 * norm/add_rms_norm_dynamic_quant/op_host/op_api/aclnn_add_rms_norm_dynamic_quant_v2.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_ADD_RMS_NORM_DYNAMIC_QUANT_V2_H_
#define ACL_PY_ACLNNOP_ACLNN_ADD_RMS_NORM_DYNAMIC_QUANT_V2_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize(
    const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma,
    const aclTensor *smoothScale1Optional, const aclTensor *smoothScale2Optional,
    const aclTensor *betaOptional, double epsilon, const aclBoolArray *outputMask,
    aclTensor *y1Out, aclTensor *y2Out, aclTensor *xOut, aclTensor *scale1Out,
    aclTensor *scale2Out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnAddRmsNormDynamicQuantV2(void *workspace, uint64_t workspaceSize,
                                                    aclOpExecutor *executor,
                                                    aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_ADD_RMS_NORM_DYNAMIC_QUANT_V2_H_ */
