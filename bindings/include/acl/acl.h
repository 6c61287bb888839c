/*
 * acl-py declarations: process-level calls of the CANN runtime (libascendcl.so), and the
 * umbrella include, as in the vendor's include/acl/acl.h.
 * The text between the cdef markers is read verbatim by cffi.
 */
#ifndef ACL_PY_ACL_ACL_H_
#define ACL_PY_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
aclError aclInit(const char *configPath);
aclError aclFinalize(void);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACL_ACL_H_ */
