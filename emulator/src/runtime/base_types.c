/*
 * acl_base.h's helpers: data buffers (aclCreateDataBuffer and friends), element sizes
 * (aclDataTypeSize) and the float16 conversions (aclFloatToFloat16, aclFloat16ToFloat).
 *
 * None needs aclInit or a device, as in CANN (hicann/runtime src/acl/aclrt_impl/data_buffer.cpp,
 * types/fp16.cpp). A data buffer only describes memory the caller owns: destroying it frees
 * nothing else. CANN's calls take any pointer and dereference it; the emulator keeps its
 * buffers in the handle registry, so one destroyed, or never created, is refused (100000, the
 * status CANN gives a NULL one) instead of being read or freed (docs/emulator.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

struct aclDataBuffer {
    void *data;
    size_t size;
};

/* ---- data buffers ----------------------------------------------------------------------- */

aclDataBuffer *aclCreateDataBuffer(void *data, size_t size) {
    if (aclemu_fault(__func__))
        return NULL;
    aclDataBuffer *b = malloc(sizeof *b);
    if (b == NULL) {
        aclemu_set_error("%s: out of host memory", __func__);
        return NULL;
    }
    b->data = data;
    b->size = size;
    aclemu_handle_register(b, ACLEMU_KIND_DATA_BUFFER);
    return b;
}

/* ACL_SUCCESS when b is a live data buffer, else 100000 naming fn (NULL as CANN checks it). */
static aclError check_buffer(const char *fn, const aclDataBuffer *b) {
    if (b == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "dataBuffer is NULL");
    if (!aclemu_handle_check(b, ACLEMU_KIND_DATA_BUFFER))
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                      "dataBuffer %p is not a live aclDataBuffer (destroyed, or never made by "
                      "aclCreateDataBuffer)", (const void *)b);
    return ACL_SUCCESS;
}

aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INVALID_PARAM;
    if (dataBuffer == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "dataBuffer is NULL");
    /* Test-and-remove: of two threads destroying one buffer, one frees it. */
    if (!aclemu_handle_unregister(dataBuffer, ACLEMU_KIND_DATA_BUFFER))
        return check_buffer(__func__, dataBuffer);
    free((void *)(uintptr_t)dataBuffer);
    return ACL_SUCCESS;
}

aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INVALID_PARAM;
    aclError rc = check_buffer(__func__, dataBuffer);
    if (rc != ACL_SUCCESS)
        return rc;
    dataBuffer->data = data;
    dataBuffer->size = size;
    return ACL_SUCCESS;
}

/* The getters return NULL / 0 for NULL, as CANN's do, and for a buffer that is not live (with
 * the message set): they have no status to return. */
void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer) {
    if (dataBuffer == NULL || check_buffer(__func__, dataBuffer) != ACL_SUCCESS)
        return NULL;
    return dataBuffer->data;
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer) {
    if (dataBuffer == NULL || check_buffer(__func__, dataBuffer) != ACL_SUCCESS)
        return 0;
    return dataBuffer->size;
}

/* Deprecated by CANN: the size truncated to 32 bits. */
uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer) {
    if (dataBuffer == NULL || check_buffer(__func__, dataBuffer) != ACL_SUCCESS)
        return 0;
    return (uint32_t)dataBuffer->size;
}

/* ---- element sizes ---------------------------------------------------------------------- */

/* CANN's table (data_buffer.cpp): the sub-byte types count one byte, and every type it does
 * not list, the 6- and 4-bit floats included, counts eight. */
size_t aclDataTypeSize(aclDataType dataType) {
    switch (dataType) {
    case ACL_STRING:
    case ACL_DT_UNDEFINED:
        return 0;
    case ACL_UINT1:
    case ACL_INT4:
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
        return 1;
    case ACL_FLOAT16:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_BF16:
        return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
        return 4;
    case ACL_COMPLEX128:
        return 16;
    default:
        return 8;
    }
}

/* ---- float16 ---------------------------------------------------------------------------- */

/* Exponent field 31 is read as an ordinary exponent (CANN's saturating reading: Inf is 65536,
 * NaN 0x7E00 is 98304); subnormals and signed zeros are exact. */
float aclFloat16ToFloat(aclFloat16 value) {
    int exp = (value >> 10) & 0x1F;
    int man = value & 0x3FF;
    float mag = exp == 0 ? ldexpf((float)man, -24) : ldexpf((float)(man | 0x400), exp - 25);
    return (value & 0x8000) ? -mag : mag;
}

/* Round to nearest, ties to even; a magnitude that would round to infinity, infinity itself
 * and NaN give the largest finite value, 65504, with the input's sign (saturation mode). */
aclFloat16 aclFloatToFloat16(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    uint32_t exp = (bits >> 23) & 0xFF;
    uint32_t man = bits & 0x7FFFFF;
    if (exp == 0xFF || exp > 127 + 15)
        return sign | 0x7BFF;
    if (exp < 127 - 25) /* below half the smallest subnormal (float subnormals too): zero */
        return sign;
    uint32_t sig = man | 0x800000; /* value = sig * 2^e */
    int e = (int)exp - 150;
    /* The result's unit: 2^-24 for a float16 subnormal, else 2^(E-10), E the exponent. The
     * bits of sig below it (13 to 24 of them) decide the rounding. */
    int unit = (int)exp - 127 < -14 ? -24 : (int)exp - 127 - 10;
    int drop = unit - e;
    uint32_t q = sig >> drop;
    uint32_t rest = sig & ((1u << drop) - 1);
    uint32_t half = 1u << (drop - 1);
    if (rest > half || (rest == half && (q & 1)))
        q++;
    /* q counts units; re-encode: subnormal units are the mantissa, and a carry into the next
     * binade just bumps the exponent field. */
    uint32_t h;
    if (unit == -24)
        h = q; /* 0x400 after a carry is the smallest normal, as encoded */
    else
        h = ((uint32_t)((int)exp - 127 + 15) << 10) + (q - 0x400);
    if (h >= 0x7C00)
        return sign | 0x7BFF;
    return sign | (uint16_t)h;
}
