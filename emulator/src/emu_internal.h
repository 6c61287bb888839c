/*
 * Internal contract between the emulator's libraries. libascendcl.so (runtime/) owns errors,
 * fault injection, the handle registry, device memory and streams; libnnopbase.so (meta/)
 * owns tensors, arrays and the executor object model; libopapi*.so (ops/) owns operators.
 * These aclemu_* symbols are exported but are not part of any public header: CANN programs
 * and acl-py never call them.
 */
#ifndef ACLEMU_EMU_INTERNAL_H_
#define ACLEMU_EMU_INTERNAL_H_

#include <stdint.h>
#include <stdbool.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "aclemu/aclemu.h"

#define ACLEMU_EXPORT __attribute__((visibility("default")))

/* ---- errors (runtime/) --------------------------------------------------------------- */

/* Sets the calling thread's recent error message (what aclGetRecentErrMsg returns next).
 * Convention: "<call>: <argument> <rule broken>", e.g.
 * "aclrtMemcpy: count (64) exceeds destMax (32)". */
ACLEMU_EXPORT void aclemu_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- fault injection and call counting (runtime/) -------------------------------------- */

/* Every public entry point calls this first with its own name. Counts the call; returns
 * true when the fault spec says this call must fail, having already set the error message
 * ("<name>: injected fault (call n)"). The caller then returns its documented failure. */
ACLEMU_EXPORT bool aclemu_fault(const char *func);

/* The name the calling thread last passed to aclemu_fault, i.e. the public call in progress
 * (NULL before any). Lets shared helpers (aclemu_executor_run) name the call in messages. */
ACLEMU_EXPORT const char *aclemu_current_call(void);

/* ---- handle registry (runtime/) --------------------------------------------------------- */

typedef enum {
    ACLEMU_KIND_STREAM = 0,
    ACLEMU_KIND_EVENT,
    ACLEMU_KIND_CONTEXT,
    ACLEMU_KIND_TENSOR,
    ACLEMU_KIND_INT_ARRAY,
    ACLEMU_KIND_BOOL_ARRAY,
    ACLEMU_KIND_EXECUTOR,
    ACLEMU_KIND_SCALAR,
    ACLEMU_KIND_FLOAT_ARRAY,
    ACLEMU_KIND_TENSOR_LIST,
    ACLEMU_KIND_SCALAR_LIST,
    ACLEMU_KIND_DATA_BUFFER,
    ACLEMU_KIND_NOTIFY,
    ACLEMU_KIND_COUNT
} aclemu_kind;

/* A registry of live handles, so that a garbage or destroyed handle is detected without ever
 * being dereferenced. register: the handle becomes live. check: true when p is a live handle
 * of that kind. unregister: atomically test-and-remove; true when it was live (so a double
 * destroy is detected by the second caller). Live counts per kind feed aclemuGetLiveObjects. */
ACLEMU_EXPORT void aclemu_handle_register(const void *p, aclemu_kind kind);
ACLEMU_EXPORT bool aclemu_handle_check(const void *p, aclemu_kind kind);
ACLEMU_EXPORT bool aclemu_handle_unregister(const void *p, aclemu_kind kind);
/* The generation of p's registration when p is a live handle of that kind, else 0. Every
 * registration gets a new one, so a handle destroyed and an object created later at the same
 * address have different generations: an object that keeps a handle keeps its generation too. */
ACLEMU_EXPORT uint64_t aclemu_handle_generation(const void *p, aclemu_kind kind);

/* ---- device memory (runtime/) ------------------------------------------------------------ */

/* True when [p, p + nbytes) lies inside one live device allocation (nbytes may be 0: then p
 * must point inside, or one past the end of, a live allocation). */
ACLEMU_EXPORT bool aclemu_device_range(const void *p, uint64_t nbytes);

/* Pins the allocation holding [p, p + nbytes) against aclrtFree until unpinned: a task that
 * will touch device memory pins it at enqueue time and unpins when it has run, so freeing
 * memory a pending task uses is refused with an error instead of a use-after-free.
 * Returns an opaque token (NULL when the range is not inside one live allocation). */
ACLEMU_EXPORT void *aclemu_device_pin(const void *p, uint64_t nbytes);
ACLEMU_EXPORT void aclemu_device_unpin(void *token);

/* ---- streams (runtime/) ------------------------------------------------------------------ */

typedef void (*aclemu_task_fn)(void *arg);

/* Enqueues run(arg) on `stream` (NULL: the current device's default stream). `release(arg)`
 * is called exactly once after run, or instead of it when the task is dropped (stream
 * destroyed with the task pending is not possible: destroy drains first). Validates that a
 * device is set on the calling thread (ACL_ERROR_RT_CONTEXT_NULL) and that the stream is a
 * live stream of the current device (ACL_ERROR_RT_INVALID_HANDLE / ACL_ERROR_RT_STREAM_CONTEXT),
 * setting the message with `caller` as the call name. On error nothing is enqueued and
 * release is NOT called (the caller still owns arg). */
ACLEMU_EXPORT aclError aclemu_stream_submit(aclrtStream stream, aclemu_task_fn run,
                                            aclemu_task_fn release, void *arg,
                                            const char *caller);

/* For a task's run function, on the stream's worker thread. aclemu_task_cancelled: whether
 * aclrtStreamStop or aclrtStreamAbort came since the task started; a long task (a kernel
 * stand-in) polls it and returns early when true, and the stream reports the task stopped
 * midway at the next synchronize. aclemu_task_fail: the task failed with status (what: a
 * message); the stream records it as its failure mode says (aclrtSetStreamFailureMode).
 * Outside a task both do nothing (cancelled is false). */
ACLEMU_EXPORT bool aclemu_task_cancelled(void);
ACLEMU_EXPORT void aclemu_task_fail(aclError status, const char *what);

/* ---- the emulated part (runtime/soc.c) ------------------------------------------------------ */

/* One SoC the emulator can be (ACL_EMU_SOC): the vendor's part name, its product series
 * (for messages), its NPU architecture number, and whether it computes BFLOAT16. */
typedef struct {
    const char *name;
    const char *series;
    int npu_arch;
    bool bf16;
} aclemu_soc;

/* The part this process emulates (ACL_EMU_SOC, read once; default Ascend910B2). NULL when
 * ACL_EMU_SOC names no known part; then the message is set, naming `caller`. */
ACLEMU_EXPORT const aclemu_soc *aclemu_soc_info(const char *caller);

/* Whether the vendor's tilings see the part as SocVersion ASCEND910B (the Atlas A2 parts;
 * the Atlas A3 parts, of the same NPU architecture, are ASCEND910_93): some tilings pick
 * their kernel by it. */
ACLEMU_EXPORT bool aclemu_soc_is_910b(const aclemu_soc *soc);

/* The part's vector (AIV) core count from its platform configuration (AI cores where the file
 * lists no vector cores): what the vendor's tilings read as GetCoreNumAiv. */
ACLEMU_EXPORT int aclemu_soc_vector_cores(void);

/* The part's Unified Buffer bytes per core (ub_size of its platform configuration): what the
 * vendor's tilings read as GetCoreMemSize(UB). */
ACLEMU_EXPORT int64_t aclemu_soc_ub_bytes(void);

/* The part's AI core count (its platform configuration's ai_core_cnt). */
ACLEMU_EXPORT int aclemu_soc_ai_cores(void);

/* ---- kernel thread pool (runtime/) --------------------------------------------------------- */

/* Runs body(ctx, begin, end) over [0, n) split into `chunks` contiguous chunks (chunk c is
 * [c*n/chunks, (c+1)*n/chunks)), on up to aclemuGetNumThreads() threads, and returns when all
 * are done. Chunk boundaries depend only on n and chunks, never on the thread count, so a
 * kernel whose per-chunk results are combined in chunk order is deterministic. */
typedef void (*aclemu_range_fn)(void *ctx, int64_t chunk, int64_t begin, int64_t end);
ACLEMU_EXPORT void aclemu_parallel_for(int64_t n, int64_t chunks, aclemu_range_fn body, void *ctx);

/* ---- operator argument objects (meta/) ----------------------------------------------------- */

/* aclCreateTensor accepts up to this rank, CANN's op::MAX_DIM_NUM (hicann/opbase
 * include/nnopbase/opdev/common_types.h); operators check their own limits. */
#define ACLEMU_MAX_DIMS 25
/* aclCreateTensor's tensorData must be aligned to this (hicann/opbase docs, aclCreateTensor). */
#define ACLEMU_TENSOR_ALIGN 32

struct aclTensor {
    aclDataType dtype;
    aclFormat format;
    uint64_t ndim;
    int64_t dims[ACLEMU_MAX_DIMS];
    int64_t strides[ACLEMU_MAX_DIMS]; /* in elements */
    int64_t offset;                   /* in elements */
    uint64_t storage_ndim;
    int64_t storage_dims[ACLEMU_MAX_DIMS];
    void *data;                       /* device address of the storage */
    const aclTensorList *list;        /* the live list that owns it, or NULL (meta/) */
    /* Executors made by a phase one given this tensor whose phase two has not been called yet
     * (meta/executor.c, under its mutex): the docs forbid aclSetRawTensorAddr and
     * aclGetRawTensorAddr on the tensor meanwhile. */
    uint32_t awaiting_phase_two;
};

struct aclIntArray {
    uint64_t size;
    int64_t *values;
};

struct aclBoolArray {
    uint64_t size;
    bool *values;
};

struct aclFloatArray {
    uint64_t size;
    float *values;
};

/* The value as the caller gave it: the first `size` bytes of `bytes`, in the dtype's own
 * representation (a 16-bit float keeps its bits). */
struct aclScalar {
    aclDataType dtype;
    uint32_t size;
    union {
        unsigned char bytes[16];
        double align_;
    };
    const aclScalarList *list;        /* the live list that owns it, or NULL */
};

struct aclTensorList {
    uint64_t size;
    aclTensor **items;                /* owned: destroyed with the list (NULL items allowed) */
};

struct aclScalarList {
    uint64_t size;
    aclScalar **items;
};

/* Reads a scalar's value converted to double / int64 (truncating toward zero) / bool, as
 * the vendor's aclScalar::ToDouble etc. do (the real part of a complex). */
ACLEMU_EXPORT double aclemu_scalar_to_double(const aclScalar *s);
ACLEMU_EXPORT int64_t aclemu_scalar_to_int64(const aclScalar *s);

/* Element size in bytes of a dtype, 0 for dtypes without a whole-byte size (INT4, UINT1,
 * STRING, FLOAT6/FLOAT4, UNDEFINED, unknown values). */
ACLEMU_EXPORT uint64_t aclemu_dtype_size(aclDataType dtype);
ACLEMU_EXPORT const char *aclemu_dtype_name(aclDataType dtype);

/* ---- executor object model (meta/) ----------------------------------------------------------- */

/* The most tensor parameters an executor records (aclemu_executor_new refuses more). */
#define ACLEMU_EXECUTOR_MAX_TENSORS 16

typedef struct {
    const char *op_name; /* e.g. "aclnnLayerNormBackward": used in messages */
    /* Validates the launch-time arguments (tensor memory), then enqueues the work on stream
     * via aclemu_stream_submit. Returns ACLNN_SUCCESS or a status, having set the message.
     * addrs[i]: the storage address tensor i of aclemu_executor_new's list records NOW (NULL
     * for one not given): CANN's executor reads the caller's aclTensors at every run, so an
     * address changed since phase one (aclSetTensorAddr and its kin, aclSetRawTensorAddr) is
     * the one this run uses; everything else about the tensor is phase one's. */
    aclnnStatus (*launch)(void *payload, void *const *addrs, void *workspace,
                          uint64_t workspace_size, aclrtStream stream);
    void (*destroy)(void *payload); /* frees the payload; the executor calls it exactly once */
} aclemu_executor_ops;

/* Creates a live executor owning payload; its phase-one workspace size is recorded so that
 * phase two can check the workspace it is given. tensors[0..ntensors) are the operator's
 * tensor parameters in its prototype's order, the ninputs inputs first, then the outputs (a
 * NULL entry: an optional tensor not given, which keeps its place in the order the
 * aclSet*TensorAddr calls index; a parameter that is not a tensor, such as aclnnAdds'
 * scalar `other`, is not listed), names[i] the parameter's name in the
 * operator's header (e.g. "gradOut", a string that lives as long as the library): CANN's executor
 * keeps pointers to the caller's tensors and reads them at every phase two (hicann/opbase
 * src/nnopbase/common/utils/op_cache.cpp AddParamToBuf keeps each one's aclStorage;
 * composite_op/aclnn_engine/op_executor.cpp reads them when it runs), so the executor records
 * each with its registry generation and phase two refuses to run once one has been destroyed.
 * Scalars and int/bool/float arrays are read at phase one (their values copied), not kept.
 * Returns NULL (payload destroyed) on failure. */
ACLEMU_EXPORT aclOpExecutor *aclemu_executor_new(const aclemu_executor_ops *ops, void *payload,
                                                 uint64_t workspace_size,
                                                 const aclTensor *const *tensors,
                                                 const char *const *names, uint64_t ntensors,
                                                 uint64_t ninputs);

/* Phase two, shared by every operator: the whole body of aclnnFoo(workspace, workspaceSize,
 * executor, stream), called with fn = "aclnnFoo" (it counts the call and injects its fault:
 * the operator's phase two does nothing else). Checks the executor is live, the workspace
 * (non-NULL when the size is non-zero; size at least the recorded one; a live device range),
 * that every tensor phase one was given is still the live aclTensor it was then (else
 * ACLNN_ERR_PARAM_INVALID, naming the tensor), calls ops->launch. Ownership as CANN's
 * CommonOpExecutorRun (hicann/opbase src/nnopbase/composite_op/aclnn_engine/
 * op_executor.cpp): a NULL workspace with a non-zero size releases the executor, repeatable
 * or not; after that, a single-use executor is released whatever the result (an injected
 * fault included), a repeatable one kept. Returns the status. */
ACLEMU_EXPORT aclnnStatus aclemu_executor_run(const char *fn, aclOpExecutor *executor,
                                              void *workspace, uint64_t workspace_size,
                                              aclrtStream stream);

#endif /* ACLEMU_EMU_INTERNAL_H_ */
