/*
 * aclrtReduceAsync: a stream task that reduces src into dst element by element,
 * dst[i] = op(dst[i], src[i]) for count / sizeof(element) elements (the SDMA engine's
 * "inline reduce" of a device-to-device copy; hicann/runtime
 * example/2_advanced_features/built_in_task/0_reduce_task: dst 1..4 plus src 1..4 gives 2..8).
 *
 * CANN's checks and codes, in its order:
 * - the ACL layer (src/acl/aclrt_impl/memory.cpp aclrtReduceAsyncImpl): dst, src NULL, reserve
 *   not NULL, a type outside its table (FLOAT, FLOAT16, INT16, INT4, INT8, INT32, BF16, UINT8,
 *   UINT16, UINT32): 100000;
 * - the runtime (src/runtime/api/api_c_standard_soc.cc rtsLaunchReduceAsyncTask) takes one of
 *   two paths by the part's reduceOverflow property (src/runtime/config, each part's
 *   dev_info_reg.cc):
 *   . the first-generation Atlas training parts (config/cloud) and the Atlas inference parts
 *     (config/dc): the context's overflow address first (no current device: 107002), the
 *     stream's handle (107017), then api_error.cc ReduceAsyncV2: count 0, a kind other than
 *     SUM, count above 4 GiB: 107000; api_impl.cc: the stream's device (107003); then
 *     core/src/launch/memory_common.cc ReduceAsyncV2: the type the device's SDMA reduces
 *     (207000), src's then dst's alignment to the element (2 or 4 bytes: 107008);
 *   . Atlas A2/A3 (config/910_B_93) and Ascend 950: the stream's handle (107017), then
 *     api_error.cc ReduceAsync: count 0, a kind outside SUM..EQUAL, SUM over more than 4 GiB:
 *     107000; api_impl.cc (api_impl_david.cc on 950): the current device (107002), the
 *     stream's device (107003); memory_stars.cc (memory_starsv2.cc) CheckReduceCapability:
 *     the kind and the type the device's SDMA reduces (207000), then the alignments (107008).
 * Which types a part's SDMA reduces is the driver's answer (sdma_reduce_support), not in the
 * sources: the emulator takes each series' list from the API reference (hicann/runtime
 * docs/zh/api_ref/12_execution_control.md aclrtReduceAsync).
 *
 * Stricter than CANN, whose runtime hands the addresses to the engine unchecked (107000, each
 * named): dst and src must each hold count bytes inside one live allocation of the stream's
 * device (the API reference's constraint), count must be a whole number of elements, and
 * ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL, whose arithmetic no public source describes, is refused
 * where the part would take it, with 207000 (the code of a kind the part does not reduce).
 *
 * The arithmetic: floating types are reduced exactly and rounded once to the element type, to
 * nearest, ties to even (each float16/bfloat16 sum is one rounding of the exact sum); MAX/MIN
 * give NaN when either side is NaN; integers wrap. These rounding and NaN rules are the IEEE
 * defaults the emulator assumes: no public source says how the SDMA engine rounds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "../ops/half.h"

#define FOUR_GIB (4ULL * 1024ULL * 1024ULL * 1024ULL)

typedef struct {
    void *dst_token, *src_token; /* the allocations, pinned while the task is queued */
    uint8_t *dst;
    const uint8_t *src;
    uint64_t elements;
    aclrtReduceKind kind;
    aclDataType type;
} reduce_task;

/* The element size of the types the ACL layer passes on (0: INT4, two to a byte, which no
 * part reduces). */
static size_t element_size(aclDataType type) {
    switch (type) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32:
        return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16:
        return 2;
    case ACL_INT8: case ACL_UINT8:
        return 1;
    default:
        return 0;
    }
}

/* Whether the part's SDMA engine reduces `type`: the API reference's list per series. */
static bool part_reduces(const aclemu_soc *soc, aclDataType type) {
    switch (soc->npu_arch) {
    case 1001: /* Atlas training series: float32 only */
        return type == ACL_FLOAT;
    case 2002: /* Atlas inference series */
        return type == ACL_FLOAT || type == ACL_FLOAT16 || type == ACL_INT16;
    case 3510: /* Ascend 950: uint32 too */
        if (type == ACL_UINT32)
            return true;
        /* fall through */
    default: /* Atlas A2/A3 */
        return type == ACL_INT8 || type == ACL_INT16 || type == ACL_INT32 ||
               type == ACL_FLOAT16 || type == ACL_FLOAT || type == ACL_BF16;
    }
}

static const char *kind_name(aclrtReduceKind kind) {
    switch (kind) {
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM: return "ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM";
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX: return "ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX";
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN: return "ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN";
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL: return "ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL";
    default: return "no aclrtReduceKind";
    }
}

/* op(a, b), a sum rounded to double: for float32 operands (53 >= 2 * 24 + 2 bits) the
 * rounding to float32 that follows gives the correctly rounded sum; MAX/MIN are exact. */
static double reduce_real(aclrtReduceKind kind, double a, double b) {
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM)
        return a + b;
    if (isnan(a) || isnan(b))
        return NAN;
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX)
        return a > b ? a : b;
    return a < b ? a : b;
}

static int64_t reduce_signed(aclrtReduceKind kind, int64_t a, int64_t b) {
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM)
        return (int64_t)((uint64_t)a + (uint64_t)b); /* wraps when narrowed */
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX)
        return a > b ? a : b;
    return a < b ? a : b;
}

static uint64_t reduce_unsigned(aclrtReduceKind kind, uint64_t a, uint64_t b) {
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM)
        return a + b;
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX)
        return a > b ? a : b;
    return a < b ? a : b;
}

/* Element i of dst becomes op(dst[i], src[i]). Elements are read and written through memcpy:
 * the rule allows an address aligned to the element only, nothing more. dst and src may
 * overlap exactly (dst == src); each element is read before it is written. */
static void reduce_run(void *arg) {
    reduce_task *t = arg;
    for (uint64_t i = 0; i < t->elements; i++) {
        switch (t->type) {
        case ACL_FLOAT: {
            float a, b;
            memcpy(&a, t->dst + 4 * i, 4);
            memcpy(&b, t->src + 4 * i, 4);
            float r = (float)reduce_real(t->kind, a, b);
            memcpy(t->dst + 4 * i, &r, 4);
            break;
        }
        case ACL_FLOAT16: case ACL_BF16: {
            uint16_t a, b;
            memcpy(&a, t->dst + 2 * i, 2);
            memcpy(&b, t->src + 2 * i, 2);
            bool half = t->type == ACL_FLOAT16;
            float x = half ? aclemu_f16_to_f32(a) : aclemu_bf16_to_f32(a);
            float y = half ? aclemu_f16_to_f32(b) : aclemu_bf16_to_f32(b);
            /* Rounded to float32, then to the element type: with 24 >= 2 * 11 + 2 significant
             * bits the first rounding never changes the second's result (Figueroa's bound for
             * double rounding), so this is one rounding of the exact value. */
            float f = (float)reduce_real(t->kind, x, y);
            uint16_t r = half ? aclemu_f32_to_f16(f) : aclemu_f32_to_bf16(f);
            memcpy(t->dst + 2 * i, &r, 2);
            break;
        }
        case ACL_INT8: {
            int8_t a = (int8_t)t->dst[i], b = (int8_t)t->src[i];
            t->dst[i] = (uint8_t)reduce_signed(t->kind, a, b);
            break;
        }
        case ACL_INT16: {
            int16_t a, b;
            memcpy(&a, t->dst + 2 * i, 2);
            memcpy(&b, t->src + 2 * i, 2);
            uint16_t r = (uint16_t)reduce_signed(t->kind, a, b);
            memcpy(t->dst + 2 * i, &r, 2);
            break;
        }
        case ACL_INT32: {
            int32_t a, b;
            memcpy(&a, t->dst + 4 * i, 4);
            memcpy(&b, t->src + 4 * i, 4);
            uint32_t r = (uint32_t)reduce_signed(t->kind, a, b);
            memcpy(t->dst + 4 * i, &r, 4);
            break;
        }
        default: { /* ACL_UINT32 (Ascend 950) */
            uint32_t a, b;
            memcpy(&a, t->dst + 4 * i, 4);
            memcpy(&b, t->src + 4 * i, 4);
            uint32_t r = (uint32_t)reduce_unsigned(t->kind, a, b);
            memcpy(t->dst + 4 * i, &r, 4);
            break;
        }
        }
    }
}

static void reduce_release(void *arg) {
    reduce_task *t = arg;
    aclemu_device_unpin(t->dst_token);
    aclemu_device_unpin(t->src_token);
    free(t);
}

/* The runtime's checks of the arguments (api_error.cc ReduceAsync / ReduceAsyncV2). */
static aclError check_request(const char *fn, uint64_t count, aclrtReduceKind kind, bool v2) {
    if (count == 0)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "count is 0");
    if (v2 && kind != ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "kind %d (%s): this part's runtime reduces with "
                      "ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM (10) only", (int)kind, kind_name(kind));
    if (!v2 && (kind < ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM || kind > ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL))
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "kind %d is no aclrtReduceKind (ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM..EQUAL, "
                      "10..13)", (int)kind);
    if ((v2 || kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM) && count > FOUR_GIB)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "count %llu: a sum reduces at most 4 GiB (4294967296 bytes)",
                      (unsigned long long)count);
    return ACL_SUCCESS;
}

/* What the part's SDMA engine reduces (207000), then the addresses' alignment (107008). */
static aclError check_capability(const char *fn, const aclemu_soc *soc, const void *dst,
                                 const void *src, aclrtReduceKind kind, aclDataType type) {
    if (kind == ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "kind ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL (13): no public source describes "
                      "its arithmetic, so the emulator does not reduce with it (stricter than "
                      "CANN: docs/emulator.md)");
    if (!part_reduces(soc, type))
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "type %d: %s (%s) does not reduce this data type (its API reference "
                      "lists: %s)", (int)type, soc->name, soc->series,
                      soc->npu_arch == 1001   ? "float32"
                      : soc->npu_arch == 2002 ? "float32, float16, int16"
                      : soc->npu_arch == 3510 ? "int8, int16, int32, uint32, float16, float32, bfloat16"
                                              : "int8, int16, int32, float16, float32, bfloat16");
    /* CheckMemAlign: 2-byte and 4-byte types to their size; int8 (and what no part reduces)
     * has none. */
    size_t align = element_size(type) > 1 ? element_size(type) : 1;
    if ((uintptr_t)src % align != 0)
        return RT_ERR(ACL_ERROR_RT_ADDR_UNALIGNED, fn, "src %p is not %zu-byte aligned", src,
                      align);
    if ((uintptr_t)dst % align != 0)
        return RT_ERR(ACL_ERROR_RT_ADDR_UNALIGNED, fn, "dst %p is not %zu-byte aligned", dst,
                      align);
    return ACL_SUCCESS;
}

static bool acl_layer_type(aclDataType type) {
    switch (type) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_INT16: case ACL_INT4: case ACL_INT8:
    case ACL_INT32: case ACL_BF16: case ACL_UINT8: case ACL_UINT16: case ACL_UINT32:
        return true;
    default:
        return false;
    }
}

aclError aclrtReduceAsync(void *dst, const void *src, uint64_t count, aclrtReduceKind kind,
                          aclDataType type, aclrtStream stream, void *reserve) {
    const char *fn = __func__;
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev = -1;
    rt_stream *s = NULL;
    void *dst_token = NULL, *src_token = NULL;
    if (dst == NULL) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "dst is NULL");
        goto out;
    }
    if (src == NULL) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "src is NULL");
        goto out;
    }
    if (reserve != NULL) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "reserve is reserved and must be NULL");
        goto out;
    }
    if (!acl_layer_type(type)) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn,
                           "type %d: the data type is not one the call takes (ACL_FLOAT, "
                           "ACL_FLOAT16, ACL_INT16, ACL_INT4, ACL_INT8, ACL_INT32, ACL_BF16, "
                           "ACL_UINT8, ACL_UINT16, ACL_UINT32)", (int)type);
        goto out;
    }
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (soc == NULL) {
        rc = ACL_ERROR_RT_INTERNAL_ERROR; /* the message names ACL_EMU_SOC */
        goto out;
    }
    /* The first-generation training and the inference parts run the overflow-recording
     * path (reduceOverflow: config/cloud, config/dc), the others the plain one. */
    bool v2 = soc->npu_arch == 1001 || soc->npu_arch == 2002;
    if (v2) {
        if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
            (rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS ||
            (rc = check_request(fn, count, kind, true)) != ACL_SUCCESS ||
            (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
            goto out;
    } else if ((rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS ||
               (rc = check_request(fn, count, kind, false)) != ACL_SUCCESS ||
               (rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
               (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS) {
        goto out;
    }
    if ((rc = check_capability(fn, soc, dst, src, kind, type)) != ACL_SUCCESS)
        goto out;
    size_t size = element_size(type);
    if (count % size != 0) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "count %llu is not a whole number of %zu-byte elements",
                    (unsigned long long)count, size);
        goto out;
    }
    if ((dst_token = rt_device_pin_on(fn, "dst", dst, count, dev, &rc)) == NULL ||
        (src_token = rt_device_pin_on(fn, "src", src, count, dev, &rc)) == NULL)
        goto out;
    reduce_task *t = malloc(sizeof *t);
    if (t == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    *t = (reduce_task){dst_token, src_token, dst, src, count / size, kind, type};
    dst_token = src_token = NULL; /* the task's now */
    if ((rc = rt_stream_push(s, reduce_run, reduce_release, t, fn)) != ACL_SUCCESS) {
        dst_token = t->dst_token;
        src_token = t->src_token;
        free(t);
    }
out:
    if (dst_token != NULL)
        aclemu_device_unpin(dst_token);
    if (src_token != NULL)
        aclemu_device_unpin(src_token);
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}
