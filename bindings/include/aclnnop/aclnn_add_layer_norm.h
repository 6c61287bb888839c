/*
 * acl-py declarations: the two-phase AddLayerNorm operator (ops-nn norm/add_layer_norm, the
 * residual add fused with LayerNorm), exported by libopapi.so (older releases) or
 * libopapi_nn.so (newer), where a CANN install has it: include/aclnnop/aclnn_add_layer_norm.h.
 * The vendor's build generates that header from the operator's definition (hicann/ops-nn
 * norm/add_layer_norm/op_host, ACLNNTYPE aclnn), so it is in no checkout: the prototype is the
 * one of norm/add_layer_norm/docs/aclnnAddLayerNorm.md (tests/test_vendor_headers.py compares
 * them). The text between the cdef markers is read by cffi (bindings/build_ffi.py), which
 * removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_ADD_LAYER_NORM_H_
#define ACL_PY_ACLNNOP_ACLNN_ADD_LAYER_NORM_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnAddLayerNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2,
                                                        const aclTensor *gamma,
                                                        const aclTensor *beta,
                                                        const aclTensor *biasOptional,
                                                        double epsilon, bool additionalOutput,
                                                        const aclTensor *yOut,
                                                        const aclTensor *meanOut,
                                                        const aclTensor *rstdOut,
                                                        const aclTensor *xOut,
                                                        uint64_t *workspaceSize,
                                                        aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnAddLayerNorm(void *workspace, uint64_t workspaceSize,
                                        aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_ADD_LAYER_NORM_H_ */
