/*
 * The accessors of acl_meta.h: what a tensor describes (aclGetViewShape ... aclGetDataType),
 * the sizes of arrays and lists, and the device address a tensor records
 * (aclGetRawTensorAddr/aclSetRawTensorAddr). Status codes as hicann/opbase
 * src/nnopbase/common/api/acl_op_api.cpp: a NULL handle or output pointer is 161001
 * ACLNN_ERR_PARAM_NULLPTR; a handle that is not a live object of its kind is 161002 here
 * (stricter: CANN dereferences it).
 *
 * aclGetViewShape, aclGetStorageShape and aclGetViewStrides give the caller a new array, which
 * CANN allocates with C++'s `new (std::nothrow) int64_t[n]` and its docs release with
 * `delete[]` (docs/en/api/nnopbase/aclnn/aclGetViewShape.md). The emulator allocates it with
 * that same operator, libstdc++'s operator new[](size_t, const std::nothrow_t &), so the
 * documented `delete[]` is the matching release (malloc'd memory released with delete[] is an
 * alloc-dealloc mismatch: undefined, and an AddressSanitizer error). A rank-0 tensor gets a
 * zero-length array, non-NULL and to be released like any other, as new int64_t[0] gives.
 */
#include <string.h>

#include "meta_internal.h"

#define ERRV(fmt, ...) aclemu_set_error("%s: " fmt, __func__, ##__VA_ARGS__)

/* C++'s operator new[](std::size_t, const std::nothrow_t &) and std::nothrow, from libstdc++
 * (their Itanium C++ ABI names): NULL when out of memory, never an exception. */
extern void *cxx_new_array_nothrow(size_t size, const void *nothrow_tag)
    __asm__("_ZnamRKSt9nothrow_t");
extern const char cxx_nothrow __asm__("_ZSt7nothrow");

/* 161001 naming `arg` when p is NULL, else 0. */
static aclnnStatus need(const char *fn, const void *p, const char *arg) {
    if (p != NULL)
        return ACLNN_SUCCESS;
    aclemu_set_error("%s: %s is NULL", fn, arg);
    return ACLNN_ERR_PARAM_NULLPTR;
}

/* 161002 unless h is a live handle of that kind. */
static aclnnStatus live(const char *fn, const void *h, aclemu_kind kind, const char *arg,
                        const char *what) {
    if (aclemu_handle_check(h, kind))
        return ACLNN_SUCCESS;
    aclemu_set_error("%s: %s %p is not a live %s (never created or already destroyed)", fn, arg,
                     h, what);
    return ACLNN_ERR_PARAM_INVALID;
}

/* The checks every accessor starts with, in CANN's order: the handle and the outputs for NULL
 * (one status for any of them; an output whose name is NULL is not there), then the handle. */
static aclnnStatus check(const char *fn, const void *h, aclemu_kind kind, const char *what,
                         const char *harg, const void *out1, const char *arg1,
                         const void *out2, const char *arg2) {
    aclnnStatus s;
    if ((s = need(fn, h, harg)) || (arg1 != NULL && (s = need(fn, out1, arg1))) ||
        (arg2 != NULL && (s = need(fn, out2, arg2))))
        return s;
    return live(fn, h, kind, harg, what);
}

/* No (second) output. */
#define NO_OUTPUT NULL, NULL

/* Common body of the shape and stride getters: a new[] copy of n values and its length. */
static aclnnStatus copy_out(const char *fn, const int64_t *values, uint64_t n, int64_t **out,
                            uint64_t *out_n) {
    *out_n = n; /* as CANN: the count is set even when the allocation then fails */
    *out = cxx_new_array_nothrow((size_t)n * sizeof(int64_t), &cxx_nothrow);
    if (*out == NULL) {
        aclemu_set_error("%s: out of host memory for %llu values", fn, (unsigned long long)n);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    if (n > 0)
        memcpy(*out, values, (size_t)n * sizeof(int64_t));
    return ACLNN_SUCCESS;
}

/* An injected fault of a shape getter is what its one failure on a device is: the new[]
 * failed (561103). */
aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER_NULLPTR;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor",
                           viewDims, "viewDims", viewDimsNum, "viewDimsNum");
    return s ? s : copy_out(__func__, tensor->dims, tensor->ndim, viewDims, viewDimsNum);
}

aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims,
                               uint64_t *storageDimsNum) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER_NULLPTR;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor",
                           storageDims, "storageDims", storageDimsNum, "storageDimsNum");
    return s ? s : copy_out(__func__, tensor->storage_dims, tensor->storage_ndim, storageDims,
                            storageDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue,
                              uint64_t *stridesNum) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER_NULLPTR;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor",
                           stridesValue, "stridesValue", stridesNum, "stridesNum");
    return s ? s : copy_out(__func__, tensor->strides, tensor->ndim, stridesValue, stridesNum);
}

/* The getters CANN cannot fail (besides NULLs): an injected fault is 561000, as the destroys'. */
aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor", offset,
                           "offset", NO_OUTPUT);
    if (s == ACLNN_SUCCESS)
        *offset = tensor->offset;
    return s;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor", format,
                           "format", NO_OUTPUT);
    if (s == ACLNN_SUCCESS)
        *format = tensor->format;
    return s;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor",
                           dataType, "dataType", NO_OUTPUT);
    if (s == ACLNN_SUCCESS)
        *dataType = tensor->dtype;
    return s;
}

/* The five size getters: every array and list struct starts with its uint64_t size. */
#define SIZE_GETTER(fn, type, arg, kind, what)                                                \
    aclnnStatus fn(const type *arg, uint64_t *size) {                                         \
        if (aclemu_fault(__func__))                                                           \
            return ACLNN_ERR_INNER;                                                           \
        aclnnStatus s = check(__func__, arg, kind, what, #arg, size, "size", NO_OUTPUT);    \
        if (s == ACLNN_SUCCESS)                                                               \
            *size = arg->size;                                                                \
        return s;                                                                             \
    }

SIZE_GETTER(aclGetIntArraySize, aclIntArray, array, ACLEMU_KIND_INT_ARRAY, "aclIntArray")
SIZE_GETTER(aclGetFloatArraySize, aclFloatArray, array, ACLEMU_KIND_FLOAT_ARRAY, "aclFloatArray")
SIZE_GETTER(aclGetBoolArraySize, aclBoolArray, array, ACLEMU_KIND_BOOL_ARRAY, "aclBoolArray")
SIZE_GETTER(aclGetTensorListSize, aclTensorList, tensorList, ACLEMU_KIND_TENSOR_LIST,
            "aclTensorList")
SIZE_GETTER(aclGetScalarListSize, aclScalarList, scalarList, ACLEMU_KIND_SCALAR_LIST,
            "aclScalarList")

/* Stricter than CANN, which does not look: both address calls are documented as allowed
 * "before the first-phase API ... or after the second-phase API", never between
 * (hicann/opbase docs/en/api/nnopbase/aclnn/aclSetRawTensorAddr.md and aclGetRawTensorAddr.md,
 * Restrictions). Between them a device may run the executor on phase one's address (one
 * served from the operator cache) or on the new one, so a program that does it works by
 * chance. 161002 while an executor given the tensor at phase one awaits its phase two;
 * re-pointing a repeatable executor's tensor is aclSetTensorAddr's job. */
static aclnnStatus not_between_phases(const char *fn, const aclTensor *tensor) {
    uint32_t n = meta_tensor_awaiting_phase_two(tensor);
    if (n == 0)
        return ACLNN_SUCCESS;
    aclemu_set_error("%s: tensor %p was given to the phase one of %u executor%s whose phase two "
                     "has not been called yet: the docs allow this call only before phase one "
                     "or after phase two (to re-point a repeatable executor's tensor use "
                     "aclSetTensorAddr)", fn, (const void *)tensor, n, n == 1 ? "" : "s");
    return ACLNN_ERR_PARAM_INVALID;
}

/* The storage's base address, as aclCreateTensor (or aclInitTensor, aclSetRawTensorAddr) last
 * set it: CANN's aclTensor::GetStorageAddr/SetStorageAddr. NULL is a valid address to set (a
 * tensor may be created without one); one that is not 32-byte aligned is refused as
 * aclCreateTensor refuses it (the docs: "must be 32-byte aligned. Otherwise, an undefined
 * error may occur", docs/en/api/nnopbase/aclnn/aclSetRawTensorAddr.md). */
aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor",
                           NO_OUTPUT, NO_OUTPUT);
    if (s == ACLNN_SUCCESS)
        s = not_between_phases(__func__, tensor);
    if (s != ACLNN_SUCCESS)
        return s;
    if ((uintptr_t)addr % ACLEMU_TENSOR_ALIGN != 0) {
        ERRV("addr %p is not %d-byte aligned (the device address of a tensor must be)", addr,
             ACLEMU_TENSOR_ALIGN);
        return ACLNN_ERR_PARAM_INVALID;
    }
    tensor->data = addr;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    aclnnStatus s = check(__func__, tensor, ACLEMU_KIND_TENSOR, "aclTensor", "tensor", addr,
                           "addr", NO_OUTPUT);
    if (s == ACLNN_SUCCESS)
        s = not_between_phases(__func__, tensor);
    if (s == ACLNN_SUCCESS)
        *addr = tensor->data;
    return s;
}
