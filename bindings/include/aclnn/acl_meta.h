/*
 * acl-py declarations: operator argument objects (tensors, arrays, executors) exported by
 * libnnopbase.so, and the operator status codes. Layout follows the vendor's
 * include/aclnn/acl_meta.h. The text between the cdef markers is read verbatim by cffi.
 */
#ifndef ACL_PY_ACLNN_ACL_META_H_
#define ACL_PY_ACLNN_ACL_META_H_

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_CREATE_EXECUTOR 561101
#define ACLNN_ERR_INNER_NULLPTR 561103

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclScalarList aclScalarList;

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
aclnnStatus aclDestroyIntArray(const aclIntArray *array);
aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size);
aclnnStatus aclDestroyBoolArray(const aclBoolArray *array);
/* Scalars copy the value (its dtype's size) at creation. Lists copy the pointer array and
 * TAKE OWNERSHIP of the elements: aclDestroyTensorList/aclDestroyScalarList destroy every
 * element too, so the caller must not destroy them itself. */
aclScalar *aclCreateScalar(void *value, aclDataType dataType);
aclnnStatus aclDestroyScalar(const aclScalar *scalar);
aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size);
aclnnStatus aclDestroyFloatArray(const aclFloatArray *array);
aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);
aclnnStatus aclDestroyTensorList(const aclTensorList *array);
aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size);
aclnnStatus aclDestroyScalarList(const aclScalarList *array);
aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor);
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor);
/* acl-py:cdef-end */

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACLNN_ACL_META_H_ */
