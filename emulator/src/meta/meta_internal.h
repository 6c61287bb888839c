/* Private to libnnopbase.so. */
#ifndef ACLEMU_META_INTERNAL_H_
#define ACLEMU_META_INTERNAL_H_

#include "emu_internal.h"

#define META_HIDDEN __attribute__((visibility("hidden")))

/* Released objects are not freed at once but parked in a FIFO quarantine (freed when pushed
 * out), so a stale handle cannot alias a newly created object at the same address: it keeps
 * reading as "not live". Executors remember what they were, for the message. */
typedef enum {
    Q_EXECUTOR_RAN,          /* single-use, phase two succeeded */
    Q_EXECUTOR_FAILED,       /* single-use, phase two failed */
    Q_EXECUTOR_NULL_WORKSPACE, /* phase two given a NULL workspace with a non-zero size */
    Q_EXECUTOR_DESTROYED,    /* aclDestroyAclOpExecutor */
    Q_OTHER
} meta_q_reason;
META_HIDDEN void meta_quarantine(void *p, meta_q_reason why, const char *op_name);
/* True when p is an executor in quarantine; fills its op name and reason. */
META_HIDDEN bool meta_quarantined_executor(const void *p, char *op, size_t cap,
                                           meta_q_reason *why);

/* True (message set, naming fn) when tensor is live and owned by a live aclTensorList:
 * aclDestroyTensor refuses it, the list destroys it. */
META_HIDDEN bool meta_tensor_listed(const char *fn, const aclTensor *tensor);

/* How many executors given `t` at phase one have not had their phase two called yet (0 for
 * a tensor no pending executor holds). Takes the executors' mutex. */
META_HIDDEN uint32_t meta_tensor_awaiting_phase_two(const aclTensor *t);

#endif
