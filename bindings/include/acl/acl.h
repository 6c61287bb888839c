/*
 * acl-py declarations: the umbrella header of the CANN runtime, include/acl/acl.h in a CANN
 * install. The vendor's also pulls in the model and single-operator APIs (acl_mdl.h,
 * acl_op.h), which acl-py does not declare; everything declared here is in acl_rt.h.
 */
#ifndef ACL_PY_ACL_ACL_H_
#define ACL_PY_ACL_ACL_H_

#include "acl_rt.h"

#endif /* ACL_PY_ACL_ACL_H_ */
