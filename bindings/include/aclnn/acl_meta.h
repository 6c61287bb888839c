/*
 * acl-py declarations: operator argument objects (tensors, scalars, arrays, executors)
 * exported by libnnopbase.so, where a CANN install has them: include/aclnn/acl_meta.h.
 *
 * C++ only, like the vendor's header (it includes <cstdint> and declares a constexpr), so a C
 * program that compiles here compiles against CANN too. The emulator, written in C and built
 * against these very declarations, defines ACLEMU_IMPLEMENTATION to read them as C.
 * The operator status codes (ACLNN_*) are not here but in aclnn/opdev/op_errno.h, as in CANN.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py), which removes the
 * visibility macro first.
 */
#ifndef ACL_PY_ACLNN_ACL_META_H_
#define ACL_PY_ACLNN_ACL_META_H_

#if defined(__cplusplus)
#include <cstdint>
#include <cstdlib>
#elif defined(ACLEMU_IMPLEMENTATION)
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#else
#error "aclnn/acl_meta.h is C++ only, as in CANN (it needs <cstdint>): compile this file as C++"
#endif

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclScalarList aclScalarList;

typedef int32_t aclnnStatus;

ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t *storageDims,
                                               uint64_t storageDimsNum, void *tensorData);
/* Scalars copy the value (its dtype's size) at creation. Lists copy the pointer array and
 * TAKE OWNERSHIP of the elements: aclDestroyTensorList/aclDestroyScalarList destroy every
 * element too, so the caller must not destroy them itself. */
ACL_FUNC_VISIBILITY aclScalar *aclCreateScalar(void *value, aclDataType dataType);
ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
ACL_FUNC_VISIBILITY aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size);
ACL_FUNC_VISIBILITY aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size);
ACL_FUNC_VISIBILITY aclTensorList *aclCreateTensorList(const aclTensor *const *value,
                                                       uint64_t size);
ACL_FUNC_VISIBILITY aclScalarList *aclCreateScalarList(const aclScalar *const *value,
                                                       uint64_t size);

ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalar(const aclScalar *scalar);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyFloatArray(const aclFloatArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensorList(const aclTensorList *array);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyScalarList(const aclScalarList *array);

/* Accessors (hicann/opbase docs/en/api/nnopbase/aclnn/aclGet*.md). aclGetViewShape,
 * aclGetStorageShape and aclGetViewStrides hand the caller a new array, allocated with C++'s
 * new[]: the caller releases it with delete[] (acl_py.raw.delete_array from Python). */
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims,
                                                uint64_t *viewDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                                                   uint64_t *storageDimsNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                                                  uint64_t *stridesNum);
ACL_FUNC_VISIBILITY aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format);
ACL_FUNC_VISIBILITY aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType);
ACL_FUNC_VISIBILITY aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetFloatArraySize(const aclFloatArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetBoolArraySize(const aclBoolArray *array, uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetTensorListSize(const aclTensorList *tensorList,
                                                     uint64_t *size);
ACL_FUNC_VISIBILITY aclnnStatus aclGetScalarListSize(const aclScalarList *scalarList,
                                                     uint64_t *size);

/* Re-describes an existing tensor in place (the handle stays the same). */
ACL_FUNC_VISIBILITY aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims,
                                              uint64_t viewDimsNum, aclDataType dataType,
                                              const int64_t *stride, int64_t offset,
                                              aclFormat format, const int64_t *storageDims,
                                              uint64_t storageDimsNum, void *tensorDataAddr);

ACL_FUNC_VISIBILITY aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);

/* Re-pointing a repeatable executor's tensor at new device memory (hicann/opbase docs/en/api/
 * nnopbase/aclnn/aclSet*TensorAddr.md): `tensor` (or tensors[relativeIndex]) is the aclTensor
 * phase one was given at `index`, counted over the operator's inputs, its outputs, or both
 * (inputs first), in its prototype's order; `irIndex` counts parameters (a tensor list is
 * one). The new address is recorded in that aclTensor, which the executor reads at its next
 * run; `addr` must be 32-byte aligned. The Acl-prefixed spellings are the vendor's reserved
 * twins of the lower-case ones (docs/en/api/nnopbase/aclnn/reserved_apis.md: same function,
 * not for new code). */
ACL_FUNC_VISIBILITY aclnnStatus AclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
                                                      aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus AclSetOutputTensorAddr(aclOpExecutor *executor,
                                                       const size_t index, aclTensor *tensor,
                                                       void *addr);
ACL_FUNC_VISIBILITY aclnnStatus AclSetDynamicInputTensorAddr(aclOpExecutor *executor,
                                                             size_t irIndex,
                                                             const size_t relativeIndex,
                                                             aclTensorList *tensors, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus AclSetDynamicOutputTensorAddr(aclOpExecutor *executor,
                                                              size_t irIndex,
                                                              const size_t relativeIndex,
                                                              aclTensorList *tensors,
                                                              void *addr);
ACL_FUNC_VISIBILITY aclnnStatus AclSetTensorAddr(aclOpExecutor *executor, const size_t index,
                                                 aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus AclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                        const size_t relativeIndex,
                                                        aclTensorList *tensors, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index,
                                                      aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor,
                                                       const size_t index, aclTensor *tensor,
                                                       void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor *executor,
                                                             size_t irIndex,
                                                             const size_t relativeIndex,
                                                             aclTensorList *tensors, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicOutputTensorAddr(aclOpExecutor *executor,
                                                              size_t irIndex,
                                                              const size_t relativeIndex,
                                                              aclTensorList *tensors,
                                                              void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index,
                                                 aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                        const size_t relativeIndex,
                                                        aclTensorList *tensors, void *addr);

/* The device address a tensor records (its storage's base, as given to aclCreateTensor). */
ACL_FUNC_VISIBILITY aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr);
ACL_FUNC_VISIBILITY aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr);
/* acl-py:cdef-end */

#ifdef __cplusplus
/* The vendor's header defines this success value for C++ callers; so does acl-py's. */
constexpr aclnnStatus OK = 0;
}
#endif

#endif /* ACL_PY_ACLNN_ACL_META_H_ */
