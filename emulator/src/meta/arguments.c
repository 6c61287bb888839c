/*
 * aclScalar, aclFloatArray, aclTensorList, aclScalarList (hicann/opbase
 * src/nnopbase/common/api/acl_op_api.cpp and common/utils/common_types.cpp):
 *
 * - aclCreateScalar copies the value (as many bytes as its dtype has); NULL value or a dtype
 *   the vendor's aclScalar does not take gives NULL.
 * - aclCreateFloatArray copies the floats.
 * - A NULL value makes an empty array or list whatever the size, as the vendor's
 *   constructors do.
 * - aclCreateTensorList / aclCreateScalarList copy the POINTER array and take ownership of
 *   the elements: the vendor's aclDestroyTensorList calls aclDestroyTensor on every element
 *   (aclDestroyScalarList likewise), and its add_n example says the list takes them over.
 *   On a device, destroying an element yourself and then the list is a double free; here an
 *   element is marked as owned, so aclDestroyTensor/aclDestroyScalar of it is refused, and a
 *   list refuses elements that are not live, already in a list, or given twice.
 * - Every destroy of NULL returns success, as the vendor's do.
 *
 * One mutex (g_list_mu) covers list membership, so "is this element owned" and "take it"
 * cannot interleave.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"
#include "ops/half.h"

#define ERRV(fmt, ...) aclemu_set_error("%s: " fmt, __func__, ##__VA_ARGS__)

static pthread_mutex_t g_list_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- aclScalar ------------------------------------------------------------------------ */

/* Bytes the vendor's aclScalar(const void *, DataType) reads for each dtype it takes; 0 for
 * the ones it refuses (STRING, COMPLEX32, INT4, UINT1, UNDEFINED, unknown). 34..41 are the
 * 8/6/4-bit float dtypes of the vendor's acl_base_rt.h, stored one byte each. */
static uint32_t scalar_size(aclDataType dt) {
    switch ((int)dt) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    case 34: case 35: case 36: case 37: case 38: case 39: case 40: case 41: return 1;
    default: return 0;
    }
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    if (aclemu_fault(__func__))
        return NULL;
    if (value == NULL) {
        ERRV("value is NULL");
        return NULL;
    }
    uint32_t n = scalar_size(dataType);
    if (n == 0) {
        ERRV("dataType %d (%s) cannot be a scalar's dtype", (int)dataType,
             aclemu_dtype_name(dataType));
        return NULL;
    }
    aclScalar *s = calloc(1, sizeof *s);
    if (s == NULL) {
        ERRV("out of host memory");
        return NULL;
    }
    s->dtype = dataType;
    s->size = n;
    memcpy(s->bytes, value, n);
    aclemu_handle_register(s, ACLEMU_KIND_SCALAR);
    return s;
}

double aclemu_scalar_to_double(const aclScalar *s) {
    const unsigned char *b = s->bytes;
    union { float f; double d; int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t u8;
            uint16_t u16; uint32_t u32; uint64_t u64; } v;
    memcpy(&v, b, s->size < sizeof v ? s->size : sizeof v);
    switch (s->dtype) {
    case ACL_FLOAT: case ACL_COMPLEX64: return v.f;          /* complex: its real part */
    case ACL_DOUBLE: case ACL_COMPLEX128: return v.d;
    case ACL_FLOAT16: return aclemu_f16_to_f32(v.u16);
    case ACL_BF16: return aclemu_bf16_to_f32(v.u16);
    case ACL_INT8: return v.i8;
    case ACL_INT16: return v.i16;
    case ACL_INT32: return v.i32;
    case ACL_INT64: return (double)v.i64;
    case ACL_UINT8: return v.u8;
    case ACL_UINT16: return v.u16;
    case ACL_UINT32: return v.u32;
    case ACL_UINT64: return (double)v.u64;
    case ACL_BOOL: return v.u8 != 0;
    default: return 0.0; /* the 8/6/4-bit floats: no operator here reads them */
    }
}

int64_t aclemu_scalar_to_int64(const aclScalar *s) {
    union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t u8; uint16_t u16;
            uint32_t u32; uint64_t u64; } v;
    memcpy(&v, s->bytes, s->size < sizeof v ? s->size : sizeof v);
    switch (s->dtype) {
    case ACL_INT8: return v.i8;
    case ACL_INT16: return v.i16;
    case ACL_INT32: return v.i32;
    case ACL_INT64: return v.i64;
    case ACL_UINT8: return v.u8;
    case ACL_UINT16: return v.u16;
    case ACL_UINT32: return v.u32;
    case ACL_UINT64: return (int64_t)v.u64;
    case ACL_BOOL: return v.u8 != 0;
    default: {
        double d = aclemu_scalar_to_double(s);
        if (!(d == d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
            return INT64_MIN; /* what a conversion out of range gives on x86 */
        return (int64_t)d;
    }
    }
}

/* Common body of the destroys of objects that may belong to a list. `owner_of` reads the
 * owning list of a live object (g_list_mu held). */
/* A destroyed scalar keeps its memory while quarantined, but not its value: every byte is
 * set to 0xFF (NaN as a float, -1 as an integer). The vendor frees it (aclDestroyScalar
 * deletes the object), so a read after the destroy is a read of freed memory on a device;
 * here such a read, e.g. an operator reading alpha in phase two instead of copying it in
 * phase one, gives visibly wrong numbers rather than the old value. */
static void scrub_scalar(aclScalar *s) { memset(s->bytes, 0xFF, sizeof s->bytes); }

static aclnnStatus destroy_owned(const char *fn, const void *h, aclemu_kind kind,
                                 const char *what, const void *(*owner_of)(const void *)) {
    pthread_mutex_lock(&g_list_mu);
    if (!aclemu_handle_check(h, kind)) {
        pthread_mutex_unlock(&g_list_mu);
        aclemu_set_error("%s: %s %p is not a live %s (never created or already destroyed)", fn,
                         what, h, what);
        return ACLNN_ERR_PARAM_INVALID;
    }
    const void *list = owner_of(h);
    if (list != NULL) {
        pthread_mutex_unlock(&g_list_mu);
        aclemu_set_error("%s: %s %p belongs to list %p, which destroys it (the list took "
                         "ownership when it was created; destroying it here too is a double "
                         "free on a device)", fn, what, h, list);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclemu_handle_unregister(h, kind);
    pthread_mutex_unlock(&g_list_mu);
    if (kind == ACLEMU_KIND_SCALAR)
        scrub_scalar((aclScalar *)(uintptr_t)h);
    meta_quarantine((void *)(uintptr_t)h, Q_OTHER, NULL);
    return ACLNN_SUCCESS;
}

static const void *scalar_owner(const void *h) { return ((const aclScalar *)h)->list; }

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (scalar == NULL)
        return ACLNN_SUCCESS;
    return destroy_owned(__func__, scalar, ACLEMU_KIND_SCALAR, "scalar", scalar_owner);
}

/* aclDestroyTensor's check for a tensor a list owns (tensor.c); true when refused. */
bool meta_tensor_listed(const char *fn, const aclTensor *tensor) {
    pthread_mutex_lock(&g_list_mu);
    const void *list = aclemu_handle_check(tensor, ACLEMU_KIND_TENSOR) ? tensor->list : NULL;
    pthread_mutex_unlock(&g_list_mu);
    if (list != NULL)
        aclemu_set_error("%s: tensor %p belongs to tensor list %p, which destroys it "
                         "(aclCreateTensorList took ownership; destroying it here too is a "
                         "double free on a device)", fn, (const void *)tensor, list);
    return list != NULL;
}

/* ---- aclFloatArray ---------------------------------------------------------------------- */

aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size) {
    if (aclemu_fault(__func__))
        return NULL;
    if (value == NULL)
        size = 0; /* CANN makes an empty array (common_types.cpp aclArray<T>::aclArray) */
    if (size > SIZE_MAX / sizeof(float)) {
        ERRV("size %llu is too large", (unsigned long long)size);
        return NULL;
    }
    aclFloatArray *a = calloc(1, sizeof *a);
    float *v = size > 0 ? malloc((size_t)size * sizeof(float)) : NULL;
    if (a == NULL || (size > 0 && v == NULL)) {
        free(a);
        free(v);
        ERRV("out of host memory for %llu values", (unsigned long long)size);
        return NULL;
    }
    if (size > 0)
        memcpy(v, value, (size_t)size * sizeof(float));
    a->size = size;
    a->values = v;
    aclemu_handle_register(a, ACLEMU_KIND_FLOAT_ARRAY);
    return a;
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray *array) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    if (array == NULL)
        return ACLNN_SUCCESS;
    if (!aclemu_handle_unregister(array, ACLEMU_KIND_FLOAT_ARRAY)) {
        ERRV("array %p is not a live float array (never created or already destroyed)",
             (const void *)array);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclFloatArray *a = (aclFloatArray *)(uintptr_t)array;
    free(a->values);
    a->values = NULL;
    meta_quarantine(a, Q_OTHER, NULL);
    return ACLNN_SUCCESS;
}

/* ---- lists ------------------------------------------------------------------------------ */

/* The element accessors a list needs, so one body serves tensor and scalar lists. */
typedef struct {
    aclemu_kind elem_kind, list_kind;
    const char *elem;                       /* "tensor" / "scalar", for messages */
    const void **(*owner_slot)(void *elem); /* where an element records its list */
} list_kind_t;

static const void **tensor_slot(void *e) { return (const void **)&((aclTensor *)e)->list; }
static const void **scalar_slot(void *e) { return (const void **)&((aclScalar *)e)->list; }

static const list_kind_t TENSOR_LIST = {ACLEMU_KIND_TENSOR, ACLEMU_KIND_TENSOR_LIST, "tensor",
                                        tensor_slot};
static const list_kind_t SCALAR_LIST = {ACLEMU_KIND_SCALAR, ACLEMU_KIND_SCALAR_LIST, "scalar",
                                        scalar_slot};

/* Both list structs are {uint64_t size; T **items;}: handled through this view. */
typedef struct {
    uint64_t size;
    void **items;
} list_t;

static list_t *list_create(const char *fn, const list_kind_t *k, const void *const *value,
                           uint64_t size) {
    if (value == NULL)
        size = 0; /* CANN makes an empty list (common_types.cpp aclTensorList::aclTensorList,
                   * aclScalarList::aclScalarList) */
    if (size > SIZE_MAX / sizeof(void *)) {
        aclemu_set_error("%s: size %llu is too large", fn, (unsigned long long)size);
        return NULL;
    }
    list_t *l = calloc(1, sizeof *l);
    void **items = size > 0 ? malloc((size_t)size * sizeof(void *)) : NULL;
    if (l == NULL || (size > 0 && items == NULL)) {
        free(l);
        free(items);
        aclemu_set_error("%s: out of host memory for %llu elements", fn,
                         (unsigned long long)size);
        return NULL;
    }
    if (size > 0)
        memcpy(items, value, (size_t)size * sizeof(void *));
    l->size = size;
    l->items = items;
    pthread_mutex_lock(&g_list_mu);
    uint64_t taken = 0;
    const char *bad = NULL;
    for (; taken < size; taken++) {
        void *e = items[taken];
        if (e == NULL)
            continue; /* the vendor's list holds NULL elements; its destroy skips them */
        if (!aclemu_handle_check(e, k->elem_kind)) {
            bad = "is not live (never created or already destroyed)";
            break;
        }
        const void **slot = k->owner_slot(e);
        if (*slot == l) {
            bad = "appears twice in the list (destroying the list would destroy it twice)";
            break;
        }
        if (*slot != NULL) {
            bad = "already belongs to another list, which will destroy it";
            break;
        }
        *slot = l;
    }
    if (bad != NULL) { /* give back what was taken: nothing changes on failure */
        for (uint64_t i = 0; i < taken; i++)
            if (items[i] != NULL)
                *k->owner_slot(items[i]) = NULL;
        pthread_mutex_unlock(&g_list_mu);
        aclemu_set_error("%s: value[%llu] (%s %p) %s", fn, (unsigned long long)taken, k->elem,
                         items[taken], bad);
        free(items);
        free(l);
        return NULL;
    }
    aclemu_handle_register(l, k->list_kind);
    pthread_mutex_unlock(&g_list_mu);
    return l;
}

static aclnnStatus list_destroy(const char *fn, const list_kind_t *k, const void *h) {
    if (h == NULL)
        return ACLNN_SUCCESS;
    pthread_mutex_lock(&g_list_mu);
    if (!aclemu_handle_unregister(h, k->list_kind)) {
        pthread_mutex_unlock(&g_list_mu);
        aclemu_set_error("%s: list %p is not a live %s list (never created or already "
                         "destroyed)", fn, h, k->elem);
        return ACLNN_ERR_PARAM_INVALID;
    }
    list_t *l = (list_t *)(uintptr_t)h;
    for (uint64_t i = 0; i < l->size; i++) {
        void *e = l->items[i];
        if (e == NULL)
            continue;
        /* Owned elements cannot have been destroyed behind the list's back (their destroy
         * refuses), so each is live and ours. */
        *k->owner_slot(e) = NULL;
        aclemu_handle_unregister(e, k->elem_kind);
        if (k->elem_kind == ACLEMU_KIND_SCALAR)
            scrub_scalar(e);
        meta_quarantine(e, Q_OTHER, NULL);
    }
    pthread_mutex_unlock(&g_list_mu);
    free(l->items);
    l->items = NULL;
    meta_quarantine(l, Q_OTHER, NULL);
    return ACLNN_SUCCESS;
}

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    if (aclemu_fault(__func__))
        return NULL;
    return (aclTensorList *)list_create(__func__, &TENSOR_LIST, (const void *const *)value,
                                        size);
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    return list_destroy(__func__, &TENSOR_LIST, array);
}

aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
    if (aclemu_fault(__func__))
        return NULL;
    return (aclScalarList *)list_create(__func__, &SCALAR_LIST, (const void *const *)value,
                                        size);
}

aclnnStatus aclDestroyScalarList(const aclScalarList *array) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    return list_destroy(__func__, &SCALAR_LIST, array);
}
