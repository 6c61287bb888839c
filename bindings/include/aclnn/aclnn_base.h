/*
 * acl-py declarations: include/aclnn/aclnn_base.h of a CANN install, the header every operator
 * header includes. The vendor's adds aclnnInit/aclnnFinalize, which acl-py does not use (nor the
 * emulator export); what remains is acl_meta.h. C++ only, as acl_meta.h.
 */
#ifndef ACL_PY_ACLNN_ACLNN_BASE_H_
#define ACL_PY_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#endif /* ACL_PY_ACLNN_ACLNN_BASE_H_ */
