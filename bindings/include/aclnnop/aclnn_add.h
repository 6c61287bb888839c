/*
 * acl-py declarations: Add, Adds and their in-place forms (out = self + alpha * other),
 * exported by libopapi.so (older releases) or libopapi_math.so (newer, where the math
 * operators live), where a CANN install has them: include/aclnnop/aclnn_add.h (and,
 * deprecated, include/aclnnop/level2/). The text between the cdef markers is read by cffi
 * (bindings/build_ffi.py), which removes the export macro first.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_ADD_H_
#define ACL_PY_ACLNNOP_ACLNN_ADD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACLNN_API aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other,
                                               const aclScalar *alpha, aclTensor *out,
                                               uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnAdd(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                               aclrtStream stream);
ACLNN_API aclnnStatus aclnnAddsGetWorkspaceSize(const aclTensor *self, const aclScalar *other,
                                                const aclScalar *alpha, aclTensor *out,
                                                uint64_t *workspaceSize, aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnAdds(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                aclrtStream stream);
ACLNN_API aclnnStatus aclnnInplaceAddGetWorkspaceSize(const aclTensor *selfRef,
                                                      const aclTensor *other,
                                                      const aclScalar *alpha,
                                                      uint64_t *workspaceSize,
                                                      aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnInplaceAdd(void *workspace, uint64_t workspaceSize,
                                      aclOpExecutor *executor, aclrtStream stream);
ACLNN_API aclnnStatus aclnnInplaceAddsGetWorkspaceSize(const aclTensor *selfRef,
                                                       const aclScalar *other,
                                                       const aclScalar *alpha,
                                                       uint64_t *workspaceSize,
                                                       aclOpExecutor **executor);
ACLNN_API aclnnStatus aclnnInplaceAdds(void *workspace, uint64_t workspaceSize,
                                       aclOpExecutor *executor, aclrtStream stream);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNNOP_ACLNN_ADD_H_ */
