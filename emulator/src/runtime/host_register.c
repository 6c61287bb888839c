/*
 * Host memory registration: aclrtHostRegister, aclrtHostRegisterV2, aclrtHostGetDevicePointer,
 * aclrtHostUnregister.
 *
 * CANN's runtime keeps the registrations in two process-wide maps, ranges "mapped" for the
 * device and ranges "pinned", keyed by their base address (hicann/runtime
 * src/runtime/core/src/common/register_memory.cc; api/impl/api_impl.cc HostRegister,
 * HostRegisterV2, HostUnregister, HostGetDevicePointer): a new V2 range may overlap none of
 * them (507910), an unregister or a device-pointer lookup takes a base address only (507911,
 * 107000). One list here, each entry mapped, pinned or both. On the emulator the device reads
 * host memory directly, so a mapped range's device address is its host address; kernels (the
 * tests' stand-ins) may use it, copies should not (the API reference says the mapped address
 * serves no memory operation).
 */
#include <stdlib.h>

#include "rt_internal.h"

typedef struct {
    uintptr_t base, end; /* [base, end] */
    bool mapped, pinned;
} registration;

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static registration *g_regs; /* g_reg_mu */
static size_t g_n_regs, g_cap_regs;

#define HOST_PAGE 4096u

/* The index of the registration based at p, or g_n_regs (g_reg_mu held). */
static size_t find_base(uintptr_t p) {
    size_t i = 0;
    while (i < g_n_regs && g_regs[i].base != p)
        i++;
    return i;
}

static bool overlaps(uintptr_t base, uintptr_t end) { /* g_reg_mu held */
    for (size_t i = 0; i < g_n_regs; i++)
        if (g_regs[i].base <= end && base <= g_regs[i].end)
            return true;
    return false;
}

/* Checks the range a registration would cover and adds it (mapped and/or pinned). CANN's
 * driver and API reference decide which host memory may be registered
 * (docs/zh/api_ref/11-02_host_memory_management.md): a 4 KB aligned address (107000); host
 * memory, not device memory (107000); ACL_HOST_REG_PINNED only for memory that is not page
 * locked already, so not for aclrtMallocHost's (107000). */
static aclError add(const char *fn, void *ptr, uint64_t size, bool mapped, bool pinned) {
    uintptr_t base = (uintptr_t)ptr;
    if (base % HOST_PAGE != 0)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "ptr %p is not 4 KB page aligned (the API reference requires it)", ptr);
    if (size - 1 > UINTPTR_MAX - base)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "ptr %p + size %llu runs past the end of the address space", ptr,
                      (unsigned long long)size);
    int place = rt_memory_place(ptr, size);
    if (place == RT_PLACE_DEVICE)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "ptr %p (size %llu) lies in device memory: only host memory is registered",
                      ptr, (unsigned long long)size);
    if (pinned && place == RT_PLACE_PINNED)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "ACL_HOST_REG_PINNED: ptr %p is page-locked memory from aclrtMallocHost "
                      "already (the flag takes pageable memory only)", ptr);
    uintptr_t end = base + (uintptr_t)(size - 1);
    pthread_mutex_lock(&g_reg_mu);
    aclError rc = ACL_SUCCESS;
    if (overlaps(base, end)) {
        rc = RT_ERR(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, fn,
                    "[%p, %p] overlaps a range registered already (aclrtHostUnregister it "
                    "first)", ptr, (void *)end);
    } else if (g_n_regs == g_cap_regs) {
        size_t cap = g_cap_regs ? 2 * g_cap_regs : 8;
        registration *v = realloc(g_regs, cap * sizeof *v);
        if (v == NULL)
            rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, fn, "out of host memory");
        else
            g_regs = v, g_cap_regs = cap;
    }
    if (rc == ACL_SUCCESS)
        g_regs[g_n_regs++] = (registration){base, end, mapped, pinned};
    pthread_mutex_unlock(&g_reg_mu);
    return rc;
}

/* The ACL layer's checks (hicann/runtime src/acl/aclrt_impl/memory.cpp): NULL pointers and a
 * zero size, 100000. */
static aclError check_null(const char *fn, const char *name, const void *p) {
    return p == NULL ? RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL", name) : ACL_SUCCESS;
}

static aclError check_size(const char *fn, uint64_t size) {
    return size == 0 ? RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "size must be greater than 0")
                     : ACL_SUCCESS;
}

/* ACL_HOST_REGISTER_IOMEMORY / READONLY (ACL_HOST_REG_IOMEMORY / READONLY): the runtime's
 * code takes them, but the API reference calls both reserved and not supported
 * (25-02_Enumerations.md aclrtHostRegisterType, 11-02 aclrtHostRegisterV2): 207000. */
static aclError check_reserved(const char *fn, uint32_t bits) {
    if ((bits & (ACL_HOST_REGISTER_IOMEMORY | ACL_HOST_REGISTER_READONLY)) != 0)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "%#x: the IOMEMORY and READONLY registrations are reserved, not supported "
                      "(the API reference)", (unsigned)bits);
    return ACL_SUCCESS;
}

aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type, void **devPtr) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    uint32_t t = (uint32_t)type;
    if ((rc = check_null(__func__, "ptr", ptr)) != ACL_SUCCESS ||
        (rc = check_null(__func__, "devPtr", devPtr)) != ACL_SUCCESS ||
        (rc = check_size(__func__, size)) != ACL_SUCCESS)
        goto out;
    /* hicann/runtime src/runtime/api/impl/api_error.cc HostRegister: bits other than
     * IOMEMORY and READONLY, 207000 */
    if ((t & ~(uint32_t)(ACL_HOST_REGISTER_IOMEMORY | ACL_HOST_REGISTER_READONLY)) != 0) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "type %u is not ACL_HOST_REGISTER_MAPPED (0), ACL_HOST_REGISTER_IOMEMORY "
                    "(0x4), ACL_HOST_REGISTER_READONLY (0x8) or an OR of the last two", t);
        goto out;
    }
    if ((rc = check_reserved(__func__, t)) != ACL_SUCCESS ||
        (rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS ||
        (rc = add(__func__, ptr, size, true, false)) != ACL_SUCCESS)
        goto out;
    *devPtr = ptr;
out:
    rt_leave();
    return rc;
}

aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    const uint32_t valid = (uint32_t)(ACL_HOST_REG_MAPPED | ACL_HOST_REG_IOMEMORY |
                                      ACL_HOST_REG_READONLY | ACL_HOST_REG_PINNED);
    if ((rc = check_null(__func__, "ptr", ptr)) != ACL_SUCCESS ||
        (rc = check_size(__func__, size)) != ACL_SUCCESS)
        goto out;
    /* api_error.cc HostRegisterV2: a non-empty OR of the four flags, else 107000 */
    if ((flag & valid) == 0 || (flag & ~valid) != 0) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "flag %#x is not an OR of ACL_HOST_REG_MAPPED (0x2), ACL_HOST_REG_IOMEMORY "
                    "(0x4), ACL_HOST_REG_READONLY (0x8) and ACL_HOST_REG_PINNED (0x10000000)",
                    (unsigned)flag);
        goto out;
    }
    if ((rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS ||
        (rc = check_reserved(__func__, flag)) != ACL_SUCCESS ||
        (rc = add(__func__, ptr, size, (flag & ACL_HOST_REG_MAPPED) != 0,
                  (flag & ACL_HOST_REG_PINNED) != 0)) != ACL_SUCCESS)
        goto out;
out:
    rt_leave();
    return rc;
}

aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice, uint32_t flag) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if ((rc = check_null(__func__, "pHost", pHost)) != ACL_SUCCESS ||
        (rc = check_null(__func__, "pDevice", pDevice)) != ACL_SUCCESS)
        goto out;
    if (flag != 0) { /* a reserved parameter (the ACL layer: 100000) */
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "flag %u is reserved and must be 0",
                    (unsigned)flag);
        goto out;
    }
    if ((rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    pthread_mutex_lock(&g_reg_mu);
    size_t i = find_base((uintptr_t)pHost);
    bool mapped = i < g_n_regs && g_regs[i].mapped;
    pthread_mutex_unlock(&g_reg_mu);
    if (!mapped) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "pHost %p is not the base address of a range registered for device access "
                    "(aclrtHostRegister, or aclrtHostRegisterV2 with ACL_HOST_REG_MAPPED)", pHost);
        goto out;
    }
    *pDevice = pHost;
out:
    rt_leave();
    return rc;
}

aclError aclrtHostUnregister(void *ptr) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if ((rc = check_null(__func__, "ptr", ptr)) != ACL_SUCCESS ||
        (rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    pthread_mutex_lock(&g_reg_mu);
    size_t i = find_base((uintptr_t)ptr);
    bool found = i < g_n_regs;
    if (found)
        g_regs[i] = g_regs[--g_n_regs];
    pthread_mutex_unlock(&g_reg_mu);
    if (!found)
        rc = RT_ERR(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, __func__,
                    "ptr %p is not the base address of a registered host range", ptr);
out:
    rt_leave();
    return rc;
}

bool rt_host_registered(const void *p) {
    uintptr_t u = (uintptr_t)p;
    pthread_mutex_lock(&g_reg_mu);
    bool in = overlaps(u, u);
    pthread_mutex_unlock(&g_reg_mu);
    return in;
}

int64_t rt_host_registrations(void) {
    pthread_mutex_lock(&g_reg_mu);
    int64_t n = (int64_t)g_n_regs;
    pthread_mutex_unlock(&g_reg_mu);
    return n;
}

void rt_host_registrations_release(void) {
    pthread_mutex_lock(&g_reg_mu);
    free(g_regs);
    g_regs = NULL;
    g_n_regs = g_cap_regs = 0;
    pthread_mutex_unlock(&g_reg_mu);
}
