/*
 * acl-py declarations: include/aclnnop/aclnn_util.h of a CANN install: the export macro the
 * operator headers put before each function. Plain C.
 */
#ifndef ACL_PY_ACLNNOP_ACLNN_UTIL_H_
#define ACL_PY_ACLNNOP_ACLNN_UTIL_H_

#define ACLNN_API __attribute__((visibility("default")))

#endif /* ACL_PY_ACLNNOP_ACLNN_UTIL_H_ */
