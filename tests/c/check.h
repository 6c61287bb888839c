/* The test programs' one failure path: a CANN call that does not return ACL_SUCCESS prints
 * the call, its status and the runtime's message, then ends the program with status 1. */
#ifndef ACL_PY_TESTS_CHECK_H
#define ACL_PY_TESTS_CHECK_H

#include <cstdio>
#include <cstdlib>

#include "acl/acl.h"

#define CHECK(call)                                                                      \
    do {                                                                                 \
        aclError rc_ = (call);                                                           \
        if (rc_ != ACL_SUCCESS) {                                                        \
            const char *m_ = aclGetRecentErrMsg();                                       \
            std::printf("FAILED %s -> %d: %s\n", #call, rc_, m_ ? m_ : "(no message)");  \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

#endif
