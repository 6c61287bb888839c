/*
 * acl-py declarations: the two-phase RmsNormQuant operator (ops-nn norm/rms_norm_quant: RmsNorm
 * with a bias, then a per-tensor quantization to INT8, or INT4 packed eight to an INT32),
 * exported by libopapi.so (older releases) or libopapi_nn.so (newer), where a CANN install has
 * it: include/aclnnop/aclnn_rms_norm_quant.h (and, deprecated, include/aclnnop/level2/). The
 * prototype is the one of hicann/ops-nn
 * norm/rms_norm_quant/op_host/op_api/aclnn_rms_norm_quant.h.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_RMS_NORM_QUANT_H_
#define ACL_PY_ACLNNOP_ACLNN_RMS_NORM_QUANT_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnRmsNormQuantGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma,
                                                        const aclTensor *beta,
                                                        const aclTensor *scale,
                                                        const aclTensor *offset, double epsilon,
                                                        aclTensor *y, uint64_t *workspaceSize,
                                                        aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnRmsNormQuant(void *workspace, uint64_t workspaceSize,
                                        aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_RMS_NORM_QUANT_H_ */
