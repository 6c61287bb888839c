/*
 * Emulator-only introspection and fault injection. Real CANN has none of these symbols:
 * acl-py binds them only when the emulator backend is active, and CANN programs never need
 * them. Exported by the emulator's libascendcl.so. The text between the cdef markers is read
 * verbatim by cffi (as an emulator-only section).
 */
#ifndef ACLEMU_ACLEMU_H_
#define ACLEMU_ACLEMU_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
typedef struct {
    int64_t device_allocations; /* live aclrtMalloc blocks */
    int64_t host_allocations;   /* live aclrtMallocHost blocks */
    int64_t tensors;
    int64_t int_arrays;
    int64_t bool_arrays;
    int64_t executors;
    int64_t streams;            /* streams created by aclrtCreateStream (not default streams) */
    int64_t events;
    int64_t contexts;           /* contexts created by aclrtCreateContext */
    int64_t device_bytes;       /* bytes held by live device allocations */
    int64_t scalars;            /* aclCreateScalar, including those a scalar list owns */
    int64_t float_arrays;
    int64_t tensor_lists;
    int64_t scalar_lists;
    int64_t data_buffers;       /* aclCreateDataBuffer */
    int64_t notifies;           /* aclrtCreateNotify */
    int64_t host_registrations; /* aclrtHostRegister / aclrtHostRegisterV2, not unregistered */
} aclemuLiveObjects;

/* Version string of the emulator build. */
const char *aclemuVersion(void);

/* Fills *out with the live object counts; returns 0, or ACL_ERROR_INVALID_PARAM on NULL. */
int aclemuGetLiveObjects(aclemuLiveObjects *out);

/* Fault injection. spec: "name:n[,name:n...]": the n-th call (1-based, counted from this
 * call) of function `name` fails with that function's documented status (NULL for the create
 * functions) and a message. NULL or "" clears. Resets every call counter. Returns 0, or
 * ACL_ERROR_INVALID_PARAM for a malformed spec (nothing changed). The environment variable
 * ACL_EMU_FAIL holds the same syntax and is read once when the library loads. */
int aclemuSetFaults(const char *spec);

/* Writes "name:count,..." (calls of each public function since the last aclemuSetFaults or
 * aclemuResetCallCounts, in first-call order) into buf, NUL-terminated; returns the length
 * the full text needs (excluding the NUL), like snprintf. */
size_t aclemuGetCallCounts(char *buf, size_t cap);
void aclemuResetCallCounts(void);

/* Worker threads the operator kernels use (default: ACL_EMU_NUM_THREADS, else the number of
 * online CPUs). n < 1 restores the default. Results never depend on it. */
void aclemuSetNumThreads(int n);
int aclemuGetNumThreads(void);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACLEMU_ACLEMU_H_ */
