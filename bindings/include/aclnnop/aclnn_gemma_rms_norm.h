/*
 * acl-py declarations: the two-phase GemmaRmsNorm operator (ops-nn norm/gemma_rms_norm: RmsNorm
 * with 1 added to gamma), exported by libopapi.so (older releases) or libopapi_nn.so (newer),
 * where a CANN install has it: include/aclnnop/aclnn_gemma_rms_norm.h. The vendor's build
 * generates that header from the operator's definition (hicann/ops-nn
 * norm/gemma_rms_norm/op_host, ACLNNTYPE aclnn), so it is in no checkout: the prototype is the
 * one of norm/gemma_rms_norm/docs/aclnnGemmaRmsNorm.md (tests/test_vendor_headers.py compares
 * them). The text between the cdef markers is read by cffi (bindings/build_ffi.py), which
 * removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_GEMMA_RMS_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_GEMMA_RMS_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnGemmaRmsNormGetWorkspaceSize(const aclTensor *x,
                                                        const aclTensor *gamma, double epsilon,
                                                        const aclTensor *yOut,
                                                        const aclTensor *rstdOut,
                                                        uint64_t *workspaceSize,
                                                        aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnGemmaRmsNorm(void *workspace, uint64_t workspaceSize,
                                        aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_GEMMA_RMS_NORM_H_ */
