/*
 * aclTensor, aclIntArray, aclBoolArray: host-side descriptions that copy what they are given.
 * Handles are registered in the runtime's registry, so destroying a garbage or destroyed
 * handle is an error code and never a dereference.
 */
#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"

#define ERRV(fmt, ...) aclemu_set_error("%s: " fmt, __func__, ##__VA_ARGS__)

uint64_t aclemu_dtype_size(aclDataType dtype) {
    switch (dtype) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: case ACL_HIFLOAT8: case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN: case ACL_FLOAT8_E8M0: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0; /* STRING, INT4, UINT1, FLOAT6/FLOAT4, UNDEFINED, unknown */
    }
}

const char *aclemu_dtype_name(aclDataType dtype) {
    switch (dtype) {
    case ACL_DT_UNDEFINED: return "ACL_DT_UNDEFINED";
    case ACL_FLOAT: return "ACL_FLOAT";
    case ACL_FLOAT16: return "ACL_FLOAT16";
    case ACL_INT8: return "ACL_INT8";
    case ACL_INT32: return "ACL_INT32";
    case ACL_UINT8: return "ACL_UINT8";
    case ACL_INT16: return "ACL_INT16";
    case ACL_UINT16: return "ACL_UINT16";
    case ACL_UINT32: return "ACL_UINT32";
    case ACL_INT64: return "ACL_INT64";
    case ACL_UINT64: return "ACL_UINT64";
    case ACL_DOUBLE: return "ACL_DOUBLE";
    case ACL_BOOL: return "ACL_BOOL";
    case ACL_STRING: return "ACL_STRING";
    case ACL_COMPLEX64: return "ACL_COMPLEX64";
    case ACL_COMPLEX128: return "ACL_COMPLEX128";
    case ACL_BF16: return "ACL_BF16";
    case ACL_INT4: return "ACL_INT4";
    case ACL_UINT1: return "ACL_UINT1";
    case ACL_COMPLEX32: return "ACL_COMPLEX32";
    case ACL_HIFLOAT8: return "ACL_HIFLOAT8";
    case ACL_FLOAT8_E5M2: return "ACL_FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN: return "ACL_FLOAT8_E4M3FN";
    case ACL_FLOAT8_E8M0: return "ACL_FLOAT8_E8M0";
    case ACL_FLOAT6_E3M2: return "ACL_FLOAT6_E3M2";
    case ACL_FLOAT6_E2M3: return "ACL_FLOAT6_E2M3";
    case ACL_FLOAT4_E2M1: return "ACL_FLOAT4_E2M1";
    case ACL_FLOAT4_E1M2: return "ACL_FLOAT4_E1M2";
    default: return "unknown";
    }
}

/* Every value aclDataType and aclFormat name is accepted at creation, the UNDEFINED ones
 * included: CANN checks neither (hicann/opbase src/nnopbase/common/utils/common_types.cpp), the
 * operator decides what it supports. A value the enum does not name is refused. */
static bool dtype_known(aclDataType dt) { return strcmp(aclemu_dtype_name(dt), "unknown") != 0; }

static bool format_known(aclFormat f) {
    switch (f) {
    case ACL_FORMAT_UNDEFINED: case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_ND:
    case ACL_FORMAT_NC1HWC0: case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NC1HWC0_C04:
    case ACL_FORMAT_HWCN: case ACL_FORMAT_NDHWC: case ACL_FORMAT_FRACTAL_NZ:
    case ACL_FORMAT_NCDHW: case ACL_FORMAT_NDC1HWC0: case ACL_FRACTAL_Z_3D: case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL: case ACL_FORMAT_FRACTAL_NZ_C0_16: case ACL_FORMAT_FRACTAL_NZ_C0_32:
    case ACL_FORMAT_FRACTAL_NZ_C0_2: case ACL_FORMAT_FRACTAL_NZ_C0_4:
    case ACL_FORMAT_FRACTAL_NZ_C0_8:
        return true;
    default:
        return false;
    }
}

/* Checks a tensor description as aclCreateTensor and aclInitTensor take it and fills *t with
 * it (dtype, format, dims, strides, offset, storage dims, data; t->list untouched). False, the
 * message set naming fn, when the description is refused. */
static bool describe(const char *fn, aclTensor *t, const int64_t *viewDims, uint64_t viewDimsNum,
                     aclDataType dataType, const int64_t *stride, int64_t offset,
                     aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                     void *tensorData) {
#define REFUSE(...) do { aclemu_set_error(__VA_ARGS__); return false; } while (0)
    if (viewDimsNum > ACLEMU_MAX_DIMS)
        REFUSE("%s: viewDimsNum (%llu) exceeds the maximum rank %d", fn,
               (unsigned long long)viewDimsNum, ACLEMU_MAX_DIMS);
    if (storageDimsNum > ACLEMU_MAX_DIMS)
        REFUSE("%s: storageDimsNum (%llu) exceeds the maximum rank %d", fn,
               (unsigned long long)storageDimsNum, ACLEMU_MAX_DIMS);
    if (viewDimsNum > 0 && viewDims == NULL)
        REFUSE("%s: viewDims is NULL but viewDimsNum is %llu", fn,
               (unsigned long long)viewDimsNum);
    if (storageDimsNum > 0 && storageDims == NULL)
        REFUSE("%s: storageDims is NULL but storageDimsNum is %llu", fn,
               (unsigned long long)storageDimsNum);
    if (!dtype_known(dataType))
        REFUSE("%s: dataType %d is not a known aclDataType", fn, (int)dataType);
    if (!format_known(format))
        REFUSE("%s: format %d is not a known aclFormat", fn, (int)format);
    if ((uintptr_t)tensorData % ACLEMU_TENSOR_ALIGN != 0)
        REFUSE("%s: tensorData %p is not %d-byte aligned (the device address of a tensor "
               "must be)", fn, tensorData, ACLEMU_TENSOR_ALIGN);
    /* A NULL stride means contiguous, as CANN computes it (aclTensor's constructor,
     * src/nnopbase/common/utils/shape_utils.cpp ToContiguousStrides): each stride the product
     * of the dims after it, so the dims before a 0 get stride 0 (aclGetViewStrides shows
     * them). Saturated instead of overflowing: such a view does not fit any storage. */
    int64_t contiguous[ACLEMU_MAX_DIMS];
    if (stride == NULL && viewDimsNum > 0) {
        int64_t step = 1;
        for (uint64_t i = viewDimsNum; i-- > 0;) {
            contiguous[i] = step;
            if (viewDims[i] <= 0)
                step = 0; /* a negative dim is refused below */
            else if (step > 0)
                step = viewDims[i] > INT64_MAX / step ? INT64_MAX : step * viewDims[i];
        }
        stride = contiguous;
    }
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] < 0)
            REFUSE("%s: viewDims[%llu] is %lld (dims must be >= 0)", fn, (unsigned long long)i,
                   (long long)viewDims[i]);
        if (stride[i] < 0)
            REFUSE("%s: stride[%llu] is %lld (strides must be >= 0)", fn,
                   (unsigned long long)i, (long long)stride[i]);
    }
    if (offset < 0)
        REFUSE("%s: offset is %lld (must be >= 0)", fn, (long long)offset);
    /* Storage size in elements, and the view's largest element index, without overflow. */
    __int128 storage = 1;
    for (uint64_t i = 0; i < storageDimsNum; i++) {
        if (storageDims[i] < 0)
            REFUSE("%s: storageDims[%llu] is %lld (dims must be >= 0)", fn,
                   (unsigned long long)i, (long long)storageDims[i]);
        storage *= storageDims[i];
        if (storage > INT64_MAX)
            REFUSE("%s: storageDims describe more than 2^63 elements", fn);
    }
    bool empty = false;
    __int128 last = offset;
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] == 0)
            empty = true;
        else
            last += (__int128)(viewDims[i] - 1) * stride[i];
    }
    if (empty ? offset > storage : last >= storage)
        REFUSE("%s: the view (offset %lld, largest element index %lld) does not fit in the "
               "storage of %lld elements", fn, (long long)offset,
               (long long)(empty ? offset : last), (long long)storage);
#undef REFUSE
    t->dtype = dataType;
    t->format = format;
    t->ndim = viewDimsNum;
    if (viewDimsNum > 0) {
        memcpy(t->dims, viewDims, viewDimsNum * sizeof(int64_t));
        memcpy(t->strides, stride, viewDimsNum * sizeof(int64_t));
    }
    t->offset = offset;
    t->storage_ndim = storageDimsNum;
    if (storageDimsNum > 0)
        memcpy(t->storage_dims, storageDims, storageDimsNum * sizeof(int64_t));
    t->data = tensorData;
    return true;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
    if (aclemu_fault(__func__))
        return NULL;
    /* NULL tensorData is accepted (CANN's own example creates tensors without an address, to
     * be set later): phase two refuses a tensor whose view is not in device memory. */
    aclTensor desc = {0};
    if (!describe(__func__, &desc, viewDims, viewDimsNum, dataType, stride, offset, format,
                  storageDims, storageDimsNum, tensorData))
        return NULL;
    aclTensor *t = malloc(sizeof *t);
    if (t == NULL) {
        ERRV("out of host memory");
        return NULL;
    }
    *t = desc;
    aclemu_handle_register(t, ACLEMU_KIND_TENSOR);
    return t;
}

/* As CANN's aclTensor::InitTensor (hicann/opbase src/nnopbase/common/utils/common_types.cpp),
 * which keeps part of the old description when an argument is left out: the view shape when
 * viewDims is NULL or viewDimsNum 0 (stride NULL then makes the KEPT shape's contiguous
 * strides, a given stride replaces the strides), the storage shape when storageDims is NULL or
 * storageDimsNum 0, the address when tensorDataAddr is NULL; dtype, format and offset are
 * always replaced. The result is then checked as aclCreateTensor checks its arguments, and a
 * refused one leaves the tensor as it was. */
aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum,
                          aclDataType dataType, const int64_t *stride, int64_t offset,
                          aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                          void *tensorDataAddr) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (tensor == NULL) {
        ERRV("tensor is NULL");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (!aclemu_handle_check(tensor, ACLEMU_KIND_TENSOR)) {
        ERRV("tensor %p is not a live aclTensor (never created or already destroyed)",
             (void *)tensor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclTensor desc = *tensor;
    if (viewDims == NULL || viewDimsNum == 0) {
        /* the shape is kept; given strides are the kept shape's, as many as it has */
        if (stride != NULL && viewDimsNum != tensor->ndim) {
            ERRV("viewDims is %s, so the tensor keeps its rank-%llu shape, but stride has "
                 "viewDimsNum (%llu) values: CANN would leave the tensor with strides of "
                 "another rank than its shape", viewDims == NULL ? "NULL" : "empty",
                 (unsigned long long)tensor->ndim, (unsigned long long)viewDimsNum);
            return ACLNN_ERR_PARAM_INVALID;
        }
        viewDims = tensor->dims;
        viewDimsNum = tensor->ndim;
    }
    if (storageDims == NULL || storageDimsNum == 0) {
        storageDims = tensor->storage_dims;
        storageDimsNum = tensor->storage_ndim;
    }
    if (tensorDataAddr == NULL)
        tensorDataAddr = tensor->data;
    if (!describe(__func__, &desc, viewDims, viewDimsNum, dataType, stride, offset, format,
                  storageDims, storageDimsNum, tensorDataAddr))
        return ACLNN_ERR_PARAM_INVALID;
    /* Field by field: `list` is the list membership, guarded by arguments.c's mutex. */
    tensor->dtype = desc.dtype;
    tensor->format = desc.format;
    tensor->ndim = desc.ndim;
    memcpy(tensor->dims, desc.dims, sizeof desc.dims);
    memcpy(tensor->strides, desc.strides, sizeof desc.strides);
    tensor->offset = desc.offset;
    tensor->storage_ndim = desc.storage_ndim;
    memcpy(tensor->storage_dims, desc.storage_dims, sizeof desc.storage_dims);
    tensor->data = desc.data;
    return ACLNN_SUCCESS;
}

static aclnnStatus destroy(const char *fn, const void *h, aclemu_kind kind, const char *what) {
    if (h == NULL) /* CANN: nothing to do, OK (hicann/opbase src/nnopbase/common/api/acl_op_api.cpp) */
        return ACLNN_SUCCESS;
    if (!aclemu_handle_unregister(h, kind)) {
        aclemu_set_error("%s: %s %p is not a live %s (never created or already destroyed)", fn,
                         what, h, what);
        return ACLNN_ERR_PARAM_INVALID;
    }
    void *p = (void *)(uintptr_t)h;
    if (kind == ACLEMU_KIND_INT_ARRAY) {
        free(((aclIntArray *)p)->values);
        ((aclIntArray *)p)->values = NULL;
    } else if (kind == ACLEMU_KIND_BOOL_ARRAY) {
        free(((aclBoolArray *)p)->values);
        ((aclBoolArray *)p)->values = NULL;
    }
    meta_quarantine(p, Q_OTHER, NULL);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (tensor != NULL && meta_tensor_listed(__func__, tensor))
        return ACLNN_ERR_PARAM_INVALID;
    return destroy(__func__, tensor, ACLEMU_KIND_TENSOR, "tensor");
}

/* Common body of the array constructors: copies size elements of elem bytes. */
static void *copy_values(const char *fn, const void *value, uint64_t size, size_t elem,
                         bool *ok) {
    *ok = false;
    if (size > SIZE_MAX / elem) {
        aclemu_set_error("%s: size %llu is too large", fn, (unsigned long long)size);
        return NULL;
    }
    void *v = NULL;
    if (size > 0) {
        v = malloc((size_t)size * elem);
        if (v == NULL) {
            aclemu_set_error("%s: out of host memory for %llu values", fn,
                             (unsigned long long)size);
            return NULL;
        }
        memcpy(v, value, (size_t)size * elem);
    }
    *ok = true;
    return v;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    if (aclemu_fault(__func__))
        return NULL;
    bool ok;
    if (value == NULL)
        size = 0; /* CANN makes an empty array (common_types.cpp aclArray<T>::aclArray) */
    int64_t *v = copy_values(__func__, value, size, sizeof(int64_t), &ok);
    if (!ok)
        return NULL;
    aclIntArray *a = malloc(sizeof *a);
    if (a == NULL) {
        free(v);
        ERRV("out of host memory");
        return NULL;
    }
    a->size = size;
    a->values = v;
    aclemu_handle_register(a, ACLEMU_KIND_INT_ARRAY);
    return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    return destroy(__func__, array, ACLEMU_KIND_INT_ARRAY, "array");
}

aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
    if (aclemu_fault(__func__))
        return NULL;
    bool ok;
    if (value == NULL)
        size = 0; /* as aclCreateIntArray */
    bool *v = copy_values(__func__, value, size, sizeof(bool), &ok);
    if (!ok)
        return NULL;
    for (uint64_t i = 0; i < size; i++) /* any non-zero byte is true; store canonical 0/1 */
        ((unsigned char *)v)[i] = ((unsigned char *)v)[i] != 0;
    aclBoolArray *a = malloc(sizeof *a);
    if (a == NULL) {
        free(v);
        ERRV("out of host memory");
        return NULL;
    }
    a->size = size;
    a->values = v;
    aclemu_handle_register(a, ACLEMU_KIND_BOOL_ARRAY);
    return a;
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray *array) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    return destroy(__func__, array, ACLEMU_KIND_BOOL_ARRAY, "array");
}
