/*
 * INT4 results of the quantizing kernels (RmsNormQuant, AddRmsNormDynamicQuantV2): the value
 * a float becomes, two values to a byte (the lower nibble first), and the two ways an op_api
 * hands them to the caller: an INT32 y holding eight to a little-endian word (the L0 result
 * viewed as INT32, the last dim / 8), or an INT4 y whose packed bytes the kernel writes.
 */
#ifndef ACLEMU_OPS_INT4_PACK_H_
#define ACLEMU_OPS_INT4_PACK_H_

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "emu_internal.h"
#include "half.h"
#include "phase_one.h"
#include "tensor_view.h"

#define INT4_PER_INT32 8

/* A float as the device's INT4 (CAST_RINT): ties to even, out-of-range values taken to
 * saturate to [-8, 7] and NaN to give 0 (the sources state neither; docs/emulator.md). */
static inline int8_t int4_from_float_sat(float v)
{
    if (isnan(v))
        return 0;
    v = v < -8.0f ? -8.0f : v > 7.0f ? 7.0f : v;
    return (int8_t)aclemu_round_half_even(v);
}

/* Two INT4 values in one byte, the first in the lower nibble. */
static inline uint8_t int4_pair(const int8_t *src)
{
    return (uint8_t)((src[0] & 0xF) | ((src[1] & 0xF) << 4));
}

/* n / 8 INT32 words of row m of an INT32 y from q's INT4 values, the lower nibble first,
 * little-endian. */
static inline void store_int4_words_row(const tdesc *y, int64_t m, const int8_t *q, int64_t n)
{
    char *base = row_base(y, m);
    LAY_WALK(&y->inner, 0, n / INT4_PER_INT32, {
        for (int64_t j = 0; j < run; j++) {
            const int8_t *src = q + (k + j) * INT4_PER_INT32;
            uint8_t bytes[4];
            for (int b = 0; b < 4; b++)
                bytes[b] = int4_pair(src + 2 * b);
            memcpy(base + (off + j * stride) * 4, bytes, 4);
        }
    });
}

/* n / 2 bytes of row m of an INT4 y from q's values, the lower nibble first; y's snapshot
 * describes its packed bytes (int4_bytes_view). */
static inline void store_int4_bytes_row(const tdesc *y, int64_t m, const int8_t *q, int64_t n)
{
    char *base = row_base(y, m);
    LAY_WALK(&y->inner, 0, n / 2, {
        for (int64_t j = 0; j < run; j++)
            base[off + j * stride] = (char)int4_pair(q + 2 * (k + j));
    });
}

/* Whether the kernel writes an INT4 y's packed bytes: y row-major contiguous (size-1 dims
 * aside), from any element offset. The op_api's ViewCopy of the kernel's workspace result
 * into a contiguous y re-points the result at y's storage (hicann/ops-math conversion/
 * contiguous/op_host/op_api/contiguous.cpp ViewCopy: SupportMoveAlign on every part running
 * these kernels), and opbase's address of an element offset is CalcShapeBytes(offset, INT4,
 * true), which rounds down (src/nnopbase/common/utils/common_types.cpp aclTensor::GetData,
 * data_type_utils.cpp): the bytes start at byte offset / 2 (int4_bytes_view), so from an odd
 * offset each value lands one nibble early (the element before the view takes the first
 * value, the view's last element keeps its own). */
static inline bool int4_packed(const aclTensor *y)
{
    int64_t expect = 1;
    for (int i = (int)y->ndim - 1; i >= 0; i--) {
        if (y->dims[i] != 1 && y->strides[i] != expect)
            return false;
        expect *= y->dims[i];
    }
    return true;
}

/* Whether a non-contiguous y's dims are a permutation of a contiguous layout (no stride 0,
 * no gap): contiguous.cpp's CanOptimizeView, whose ViewCopy then transposes the result into
 * y (l0op::Transpose: INT4 is in no AI Core list there, and the AI CPU kernel's INT4 support
 * is not in the sources). */
static inline bool int4_dense_permutation(const aclTensor *y)
{
    int64_t strides[ACLEMU_MAX_DIMS], dims[ACLEMU_MAX_DIMS];
    int n = 0;
    for (uint64_t i = 0; i < y->ndim; i++) {
        if (y->strides[i] == 0)
            return false;
        if (y->dims[i] != 1) {
            strides[n] = y->strides[i];
            dims[n++] = y->dims[i];
        }
    }
    int64_t expect = 1;
    for (int found = 0; found < n; found++) { /* the dim of stride `expect`, each in turn */
        int j = 0;
        while (j < n && strides[j] != expect)
            j++;
        if (j == n)
            return false;
        expect *= dims[j];
        strides[j] = -1;
    }
    return true;
}

/* The op_api's copy of an INT4 result into a y int4_packed refuses, named `name` in call
 * `call` on `soc` (561103 both ways, the code of the NULL the copy returns): a y whose dims
 * are no permutation of a contiguous layout falls to l0op::ViewCopy, whose AI Core and AI CPU
 * dtype lists lack INT4 (hicann/ops-math conversion/view_copy/op_api/view_copy.cpp): the
 * device's refusal; a transposed y is refused "not modelled" (int4_dense_permutation). */
static inline aclnnStatus int4_view_copy_rule(const aclTensor *y, const char *call,
                                              const char *name, const aclemu_soc *soc)
{
    if (int4_dense_permutation(y))
        FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: an INT4 %s that is a transposed view (not "
             "contiguous) is not modelled on %s (%s): the device's ViewCopy transposes the "
             "result into it on the AI CPU, whose INT4 support is not in the sources "
             "(docs/emulator.md)", call, name, soc->name, soc->series);
    FAIL(ACLNN_ERR_INNER_NULLPTR, "%s: an INT4 %s that is not contiguous (strided, with gaps "
         "or a stride of 0) cannot receive the result: the ViewCopy has no INT4 kernel (its AI "
         "Core and AI CPU dtype lists)", call, name);
}

/* The snapshot of an INT4 y (int4_packed, its last dim even): its bytes, [..., N / 2] of INT8
 * from byte offset / 2 (rounded down: int4_packed), which the kernel writes two values at a
 * time and the launch checks and pins (the element size of INT4 is no whole byte). */
static inline void int4_bytes_view(tdesc *d, const aclTensor *y)
{
    aclTensor bytes = *y;
    bytes.dtype = ACL_INT8;
    bytes.dims[y->ndim - 1] = y->dims[y->ndim - 1] / 2;
    int64_t stride = 1;
    for (int i = (int)y->ndim - 1; i >= 0; i--) {
        bytes.strides[i] = stride;
        stride *= bytes.dims[i];
    }
    bytes.offset = y->offset / 2;
    snapshot(d, &bytes, (int)y->ndim - 1);
}

#endif /* ACLEMU_OPS_INT4_PACK_H_ */
