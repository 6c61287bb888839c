/*
 * acl-py declarations: include/aclnn/aclnn_base.h of a CANN install, the header every operator
 * header includes: acl_meta.h plus aclnnInit/aclnnFinalize, the lighter alternative to
 * aclInit/aclFinalize for programs that only call aclnn operators (exported by
 * libnnopbase.so). C++ only, as acl_meta.h.
 */
#ifndef ACL_PY_ACLNN_ACLNN_BASE_H_
#define ACL_PY_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNN_ACLNN_BASE_H_ */
