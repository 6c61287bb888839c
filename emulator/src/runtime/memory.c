/*
 * Device and host memory.
 *
 * Each device's memory is an arena of its own: a range of address space reserved once
 * (PROT_NONE, twice the cap so fragmentation rarely matters) and committed as it is used.
 * A pointer inside an arena is device memory whatever it points at, so a freed or never
 * allocated device address is recognised as such and never taken for host memory. A device
 * block holds the bytes CANN's runtime asks its driver for (the request rounded up as
 * GetAlignedAndPaddingSize rounds it), so a view or copy that a device's allocation covers is
 * never refused; blocks are 64-byte aligned and separated by a 64-byte gap after those bytes,
 * so "one past the end" of a block is never the start of the next. Live blocks (device and aclrtMallocHost) are kept in address-sorted
 * arrays, searched by bisection under a rwlock: lookups (every copy, every phase two) share
 * it; allocation and free take it exclusively.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt_internal.h"

#define ALIGN 64u
#define GUARD 64u
#define COMMIT_STEP (2u << 20)           /* commit address space 2 MiB at a time */
#define RELEASE_GAP (32ull << 20)        /* give pages of a free gap this large back */
#define MIN_HOST_ADDR ((uintptr_t)65536) /* below mmap_min_addr: never a valid host address */

typedef struct rt_alloc {
    uintptr_t base;
    size_t size;     /* requested bytes: what aclrtGetMemInfo and the live counts add up */
    size_t usable;   /* the valid range is [base, base + usable): for a device block the bytes
                        CANN's runtime allocates for the request (device_bytes_for), for a
                        host block the request */
    size_t span;     /* bytes reserved in the arena (usable rounded up, plus the guard gap) */
    int device;      /* -1 for host blocks */
    uint32_t page;   /* the page size the driver would back it with (aclrtPointerGetAttributes) */
    _Atomic int pins; /* pending tasks using it: aclrtFree refuses while > 0 */
} rt_alloc;

typedef struct {
    rt_alloc **v;
    size_t n, cap;
} alloc_vec;

typedef struct {
    uintptr_t base, end, commit_end;
    uint64_t live_bytes;
    uint64_t peak_bytes; /* the most live_bytes has been since the runtime came up */
} arena;

static pthread_rwlock_t g_mem = PTHREAD_RWLOCK_INITIALIZER;
static alloc_vec g_devv, g_hostv;
static arena g_arena[RT_MAX_DEVICES];
static _Atomic int64_t g_n_dev, g_n_host, g_dev_bytes;

static const char *kind_name(int kind) {
    static const char *names[] = {"ACL_MEMCPY_HOST_TO_HOST", "ACL_MEMCPY_HOST_TO_DEVICE",
                                  "ACL_MEMCPY_DEVICE_TO_HOST", "ACL_MEMCPY_DEVICE_TO_DEVICE",
                                  "ACL_MEMCPY_DEFAULT", "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE",
                                  "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE",
                                  "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE"};
    return kind >= 0 && kind <= 7 ? names[kind] : "no aclrtMemcpyKind value";
}

/* ---- sorted arrays ------------------------------------------------------------------- */

/* Index of the first block with base > p. */
static size_t upper(const alloc_vec *v, uintptr_t p) {
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v->v[mid]->base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The block holding p (base <= p < base + usable; with end_ok, p == base + usable too). */
static rt_alloc *find(const alloc_vec *v, uintptr_t p, bool end_ok) {
    size_t i = upper(v, p);
    if (i == 0)
        return NULL;
    rt_alloc *a = v->v[i - 1];
    return (p - a->base < a->usable || (end_ok && p - a->base == a->usable)) ? a : NULL;
}

/* True when [p, p + n) lies inside block a, which holds p. */
static bool holds(const rt_alloc *a, uintptr_t p, uint64_t n) {
    return n <= a->usable - (p - a->base);
}

static bool vec_insert(alloc_vec *v, size_t at, rt_alloc *a) {
    if (v->n == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 64;
        rt_alloc **nv = realloc(v->v, ncap * sizeof *nv);
        if (nv == NULL)
            return false;
        v->v = nv;
        v->cap = ncap;
    }
    memmove(v->v + at + 1, v->v + at, (v->n - at) * sizeof *v->v);
    v->v[at] = a;
    v->n++;
    return true;
}

static void vec_remove(alloc_vec *v, size_t at) {
    memmove(v->v + at, v->v + at + 1, (v->n - at - 1) * sizeof *v->v);
    v->n--;
}

static int arena_of(uintptr_t p) {
    int n = rt_device_count();
    for (int d = 0; d < n; d++)
        if (g_arena[d].base != 0 && p >= g_arena[d].base && p < g_arena[d].end)
            return d;
    return -1;
}

/* True when [p, p + n) touches an arena (n > 0, no wrap-around). */
static bool overlaps_arena(uintptr_t p, size_t n) {
    int nd = rt_device_count();
    for (int d = 0; d < nd; d++)
        if (g_arena[d].base != 0 && p < g_arena[d].end && p + n > g_arena[d].base)
            return true;
    return false;
}

/* ---- arena --------------------------------------------------------------------------- */

static size_t page_size(void) {
    static size_t ps;
    if (ps == 0)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

static bool arena_reserve(int dev) { /* g_mem write-locked */
    arena *a = &g_arena[dev];
    if (a->base != 0)
        return true;
    uint64_t cap = rt_device_memory_cap();
    size_t tries[2] = {(size_t)(cap * 2 + (64u << 20)), (size_t)(cap + (16u << 20))};
    for (int i = 0; i < 2; i++) {
        size_t len = (tries[i] + COMMIT_STEP - 1) / COMMIT_STEP * COMMIT_STEP;
        void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            /* Like device HBM (and NumPy's large arrays), back big blocks with huge pages:
             * with 4 KiB pages, first touch of a fresh 256 MiB block costs 65k page faults
             * and the transfer runs at half the speed of a plain copy. Advisory only. */
            (void)madvise(p, len, MADV_HUGEPAGE);
            a->base = a->commit_end = (uintptr_t)p;
            a->end = a->base + len;
            return true;
        }
    }
    return false;
}

/* First fit among device dev's blocks: returns the insertion index and address. */
static bool arena_place(int dev, size_t span, size_t *at, uintptr_t *addr) {
    arena *a = &g_arena[dev];
    size_t i = upper(&g_devv, a->base - 1);
    uintptr_t start = a->base;
    for (; i < g_devv.n && g_devv.v[i]->base < a->end; i++) {
        rt_alloc *b = g_devv.v[i];
        if (b->base - start >= span)
            break;
        start = b->base + b->span;
    }
    if (i == g_devv.n || g_devv.v[i]->base >= a->end) {
        if (a->end - start < span)
            return false;
    }
    *at = i;
    *addr = start;
    return true;
}

static bool arena_commit(int dev, uintptr_t end) {
    arena *a = &g_arena[dev];
    if (end <= a->commit_end)
        return true;
    uintptr_t nend = (end - a->base + COMMIT_STEP - 1) / COMMIT_STEP * COMMIT_STEP + a->base;
    if (nend > a->end)
        nend = a->end;
    if (mprotect((void *)a->commit_end, nend - a->commit_end, PROT_READ | PROT_WRITE) != 0)
        return false;
    a->commit_end = nend;
    return true;
}

/* After a free: if the free gap around index `at` is large, give its pages back. */
static void arena_release_gap(int dev, size_t at) {
    arena *a = &g_arena[dev];
    uintptr_t lo = a->base, hi = a->commit_end;
    if (at > 0 && g_devv.v[at - 1]->base >= a->base)
        lo = g_devv.v[at - 1]->base + g_devv.v[at - 1]->span;
    if (at < g_devv.n && g_devv.v[at]->base < a->end && g_devv.v[at]->base < hi)
        hi = g_devv.v[at]->base;
    size_t ps = page_size();
    lo = (lo + ps - 1) / ps * ps;
    hi = hi / ps * ps;
    if (hi > lo && hi - lo >= RELEASE_GAP)
        madvise((void *)lo, hi - lo, MADV_DONTNEED); /* stays mapped; reads back as zeros */
}

/* ---- public: device memory ------------------------------------------------------------- */

/* The bytes CANN adds to a request before rounding it to 32 (hicann/runtime
 * src/acl/aclrt_impl/memory.cpp GetAlignedAndPaddingSize): 32, plus the part's padding
 * (padding_size of its platform file: 32, 0 on Ascend 950) unless the policy is exactly one of
 * the 1 GiB huge-page ones. A size this addition overflows is refused with 100000 before any
 * device is needed. */
#define PAGE_4K 4096u
#define PAGE_2M (2u << 20)
#define PAGE_1G (1u << 30)

/* The pages a device allocation gets: the policy's (the API reference, docs/zh/api_ref/
 * 11-01_device_memory_malloc_and_free.md aclrtMalloc: "huge first" takes huge pages from
 * 2 MiB, normal pages below; a policy value that is no single policy is the default). */
static uint32_t device_page(aclrtMemMallocPolicy policy, size_t size) {
    switch (policy) {
    case ACL_MEM_MALLOC_HUGE_ONLY:
    case ACL_MEM_MALLOC_HUGE_ONLY_P2P: return PAGE_2M;
    case ACL_MEM_MALLOC_NORMAL_ONLY:
    case ACL_MEM_MALLOC_NORMAL_ONLY_P2P: return PAGE_4K;
    case ACL_MEM_MALLOC_HUGE1G_ONLY:
    case ACL_MEM_MALLOC_HUGE1G_ONLY_P2P: return PAGE_1G;
    default: return size >= PAGE_2M ? PAGE_2M : PAGE_4K;
    }
}

static size_t malloc_append(aclrtMemMallocPolicy policy) {
    const aclemu_soc *soc = aclemu_soc_info("aclrtMalloc");
    size_t padding = soc != NULL && soc->npu_arch == 3510 ? 0 : 32;
    bool huge1g = policy == ACL_MEM_MALLOC_HUGE1G_ONLY || policy == ACL_MEM_MALLOC_HUGE1G_ONLY_P2P;
    return 32 + (huge1g ? 0 : padding);
}

/* The bytes CANN's runtime asks its driver for (rtMalloc's size): the request plus the
 * append, rounded down to 32 (GetAlignedAndPaddingSize; 1 byte gives 64, 32 gives 64, 33 gives
 * 96 with the padding; 1 and 32 give 32 without). Kernels and copies on a device may use all
 * of them: the vendor's own examples rely on it (hicann/ops-nn norm/add_rms_norm_dynamic_quant
 * examples allocate a float32 [2] output of 4 bytes). size + append does not overflow. */
static size_t device_bytes_for(size_t size, aclrtMemMallocPolicy policy) {
    return (size + malloc_append(policy) - 1) / 32 * 32;
}

/* Every policy value is taken: CANN maps one that is no single aclrtMemMallocPolicy to its
 * default (hicann/runtime src/acl/aclrt_impl/memory.cpp aclMallocMemInner), and the API
 * reference says such a policy allocates huge pages from 2 MiB, normal pages below
 * (docs/zh/api_ref/11-01_device_memory_malloc_and_free.md aclrtMalloc). All placements give
 * the same memory here. */
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    aclError rc = rt_refuse_in_host_function(__func__);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(__func__, ACL_ERROR_RT_MEMORY_ALLOCATION);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (devPtr == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "devPtr (output pointer) is NULL");
        goto out;
    }
    if (size == 0) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "size is 0");
        goto out;
    }
    if (size > SIZE_MAX - 64 && size > SIZE_MAX - malloc_append(policy)) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                    "size %zu is too large: with the %zu bytes the runtime adds (32-byte "
                    "rounding and the part's padding) it overflows size_t", size,
                    malloc_append(policy));
        goto out;
    }
    if ((rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    uint64_t cap = rt_device_memory_cap();
    pthread_rwlock_wrlock(&g_mem);
    arena *ar = &g_arena[dev];
    size_t at = 0;
    uintptr_t addr = 0;
    rt_alloc *a = NULL;
    size_t usable = device_bytes_for(size, policy);
    size_t span = (usable + ALIGN - 1) / ALIGN * ALIGN + GUARD;
    if (size > cap - ar->live_bytes) {
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__,
                    "size %zu bytes exceeds the free memory of device %d (%" PRIu64 " of %" PRIu64
                    " bytes in use; ACL_EMU_DEVICE_MEMORY caps it)",
                    size, dev, ar->live_bytes, cap);
    } else if (!arena_reserve(dev)) {
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__,
                    "cannot reserve address space for device %d's memory", dev);
    } else if (!arena_place(dev, span, &at, &addr)) {
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__,
                    "no contiguous free range of %zu bytes on device %d (fragmented)", size, dev);
    } else if (!arena_commit(dev, addr + usable)) {
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__,
                    "the host cannot commit %zu bytes for device %d", size, dev);
    } else if ((a = calloc(1, sizeof *a)) == NULL || !vec_insert(&g_devv, at, a)) {
        free(a);
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
    } else {
        a->base = addr;
        a->size = size;
        a->usable = usable;
        a->span = span;
        a->device = dev;
        a->page = device_page(policy, size);
        ar->live_bytes += size;
        if (ar->live_bytes > ar->peak_bytes)
            ar->peak_bytes = ar->live_bytes;
        atomic_fetch_add(&g_n_dev, 1);
        atomic_fetch_add(&g_dev_bytes, (int64_t)size);
        *devPtr = (void *)addr;
    }
    pthread_rwlock_unlock(&g_mem);
out:
    rt_leave();
    return rc;
}

/* Why p is not the base of a live block of v (other = the other registry). g_mem held. */
static aclError explain_not_base(const char *fn, const char *what, const void *p, bool device) {
    uintptr_t u = (uintptr_t)p;
    rt_alloc *in = find(device ? &g_devv : &g_hostv, u, false);
    if (in != NULL)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "%s %p points inside the %zu-byte block at %p, not at its start", what, p,
                      in->size, (void *)in->base);
    if (device && find(&g_hostv, u, false) != NULL)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "%s %p is host memory from aclrtMallocHost (free it with aclrtFreeHost)",
                      what, p);
    if (!device && find(&g_devv, u, false) != NULL)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "%s %p is device memory from aclrtMalloc (free it with aclrtFree)", what, p);
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                  "%s %p is not a live %s allocation (never allocated or already freed)", what, p,
                  device ? "device (aclrtMalloc)" : "host (aclrtMallocHost)");
}

/* aclrtFree and aclrtFreeHost: the allocation based at p, found in the device (device true)
 * or host registry, is removed and freed, unless it is pinned by pending work (a kernel, an
 * asynchronous copy). No current device needed: CANN frees through the driver when the
 * thread has no context (hicann/runtime src/runtime/api/impl/api_impl.cc, DevFreeStatic and
 * HostFree). */
static aclError free_allocation(const char *fn, const char *what, void *p, bool device) {
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (p == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL", what);
        goto out;
    }
    alloc_vec *vec = device ? &g_devv : &g_hostv;
    pthread_rwlock_wrlock(&g_mem);
    uintptr_t u = (uintptr_t)p;
    size_t i = upper(vec, u);
    rt_alloc *a = i > 0 && vec->v[i - 1]->base == u ? vec->v[i - 1] : NULL;
    if (a == NULL) {
        rc = explain_not_base(fn, what, p, device);
    } else if (atomic_load(&a->pins) > 0) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "%s %p is in use by %s; synchronize the stream first", what, p,
                    device ? "pending work on a stream" : "a pending asynchronous copy");
    } else {
        vec_remove(vec, i - 1);
        if (device) {
            g_arena[a->device].live_bytes -= a->size;
            atomic_fetch_sub(&g_n_dev, 1);
            atomic_fetch_sub(&g_dev_bytes, (int64_t)a->size);
            arena_release_gap(a->device, i - 1);
        } else {
            atomic_fetch_sub(&g_n_host, 1);
            free((void *)a->base);
        }
        free(a);
    }
    pthread_rwlock_unlock(&g_mem);
out:
    rt_leave();
    return rc;
}

aclError aclrtFree(void *devPtr) { return free_allocation(__func__, "devPtr", devPtr, true); }

/* ---- public: host memory --------------------------------------------------------------- */

aclError aclrtMallocHost(void **hostPtr, size_t size) {
    aclError rc = rt_refuse_in_host_function(__func__);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(__func__, ACL_ERROR_RT_MEMORY_ALLOCATION);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    /* the argument checks come first, in CANN's ACL layer (aclrtMallocHostImpl) */
    if (hostPtr == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "hostPtr (output pointer) is NULL");
        goto out;
    }
    if (size == 0) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "size is 0");
        goto out;
    }
    if ((rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    void *p = NULL;
    rt_alloc *a = calloc(1, sizeof *a);
    /* Page aligned: CANN's driver hands out host memory by pages (hicann/runtime
     * src/runtime/driver/npu_driver_mem.cc HostMemAlloc, halMemAlloc with an alignment flag),
     * and its zero-copy example registers aclrtMallocHost buffers, which aclrtHostRegister*
     * takes only 4 KB aligned (docs/zh/api_ref/11-02_host_memory_management.md; the API
     * reference promises 64 bytes for aclrtMallocHost itself). */
    if (a == NULL || posix_memalign(&p, 4096, size) != 0) {
        free(a);
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__,
                    "cannot allocate %zu bytes of host memory", size);
        goto out;
    }
    a->base = (uintptr_t)p;
    a->size = a->usable = a->span = size;
    a->device = -1;
    pthread_rwlock_wrlock(&g_mem);
    bool ok = vec_insert(&g_hostv, upper(&g_hostv, a->base), a);
    pthread_rwlock_unlock(&g_mem);
    if (!ok) {
        free(p);
        free(a);
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
        goto out;
    }
    atomic_fetch_add(&g_n_host, 1);
    *hostPtr = p;
out:
    rt_leave();
    return rc;
}

aclError aclrtFreeHost(void *hostPtr) {
    return free_allocation(__func__, "hostPtr", hostPtr, false);
}

/* ---- copies ---------------------------------------------------------------------------- */

static void pin(rt_alloc *a) {
    if (a != NULL)
        atomic_fetch_add(&a->pins, 1);
}

static void unpin(rt_alloc *a) {
    if (a != NULL)
        atomic_fetch_sub(&a->pins, 1);
}

/* Where a copy's pointer lies: the runtime's location types (hicann/runtime
 * src/runtime/driver/npu_driver_mem.cc PtrGetRealLocation): device memory, host memory it
 * knows (aclrtMallocHost), and host memory it does not know, "unregistered": pageable memory
 * from malloc, the stack, NumPy. */
typedef enum { LOC_DEVICE, LOC_PINNED, LOC_PAGEABLE } mem_loc;

static const char *loc_name(mem_loc l) {
    return l == LOC_DEVICE   ? "device memory"
           : l == LOC_PINNED ? "host memory from aclrtMallocHost"
                             : "pageable host memory (not from aclrtMallocHost)";
}

/* Where p lies (g_mem read-locked). Any address in a device's arena is device memory, freed
 * or not, so a freed device address is never taken for host memory. */
static mem_loc locate(uintptr_t p) {
    if (find(&g_devv, p, false) != NULL || arena_of(p) >= 0)
        return LOC_DEVICE;
    return find(&g_hostv, p, false) != NULL ? LOC_PINNED : LOC_PAGEABLE;
}

/* The direction of a copy from src's place to dst's. */
static int direction(mem_loc src, mem_loc dst) {
    bool s = src == LOC_DEVICE, d = dst == LOC_DEVICE;
    return d ? (s ? ACL_MEMCPY_DEVICE_TO_DEVICE : ACL_MEMCPY_HOST_TO_DEVICE)
             : (s ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_HOST);
}

/* An asynchronous copy's kind as the runtime settles it from where its pointers lie, or -1
 * if it refuses the pair (hicann/runtime src/runtime/api/impl/api_error.cc
 * MemcpyKindAutoCorrect and its MemcpyKindReviseMap): between places it knows (device
 * memory, aclrtMallocHost) the places decide, whatever the kind; with pageable memory on a
 * side the kind must be one of those the map allows for the pair, and ACL_MEMCPY_DEFAULT
 * takes the pair's default. */
static int async_kind(mem_loc src, mem_loc dst, int kind) {
    if (src != LOC_PAGEABLE && dst != LOC_PAGEABLE)
        return direction(src, dst);
    const unsigned h2h = 1u << ACL_MEMCPY_HOST_TO_HOST, h2d = 1u << ACL_MEMCPY_HOST_TO_DEVICE,
                   d2h = 1u << ACL_MEMCPY_DEVICE_TO_HOST, d2d = 1u << ACL_MEMCPY_DEVICE_TO_DEVICE;
    unsigned allowed;
    int dflt;
    if (dst == LOC_DEVICE) {
        allowed = h2d | d2d, dflt = ACL_MEMCPY_HOST_TO_DEVICE;
    } else if (src == LOC_DEVICE) {
        allowed = d2h | d2d, dflt = ACL_MEMCPY_DEVICE_TO_HOST;
    } else if (src == LOC_PINNED) {
        allowed = h2h | h2d, dflt = ACL_MEMCPY_HOST_TO_HOST;
    } else if (dst == LOC_PINNED) {
        allowed = h2h | d2h, dflt = ACL_MEMCPY_HOST_TO_HOST;
    } else {
        allowed = h2h | h2d | d2h | d2d, dflt = ACL_MEMCPY_HOST_TO_HOST;
    }
    if (kind == ACL_MEMCPY_DEFAULT)
        return dflt;
    return (allowed >> kind) & 1u ? kind : -1;
}

/* Checks one side of a copy or memset (g_mem read-locked). device: it lies in device memory.
 * Sets *blk to the block it lies in (device or aclrtMallocHost), if any. */
static aclError check_side(const char *fn, const char *arg, uintptr_t p, size_t count,
                           bool device, rt_alloc **blk) {
    *blk = NULL;
    if (device) {
        rt_alloc *d = find(&g_devv, p, false);
        if (d == NULL && arena_of(p) < 0)
            return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                          "%s %p is not device memory (no live aclrtMalloc block holds it)", arg,
                          (void *)p);
        if (d == NULL)
            return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                          "%s %p is device memory that is not allocated (freed or never "
                          "allocated)", arg, (void *)p);
        if (!holds(d, p, count))
            return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                          "%s range [%p, +%zu) runs past the end of its device block (%zu bytes "
                          "at %p: %zu requested, rounded up by the runtime)", arg, (void *)p,
                          count, d->usable, (void *)d->base, d->size);
        *blk = d;
        return ACL_SUCCESS;
    }
    if (p < MIN_HOST_ADDR || count > UINTPTR_MAX - p)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "%s %p (+%zu bytes) is not a valid host "
                      "address range", arg, (void *)p, count);
    if (overlaps_arena(p, count))
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "%s host range [%p, +%zu) runs into device memory", arg, (void *)p, count);
    rt_alloc *h = find(&g_hostv, p, false);
    if (h != NULL && !holds(h, p, count))
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "%s range [%p, +%zu) runs past the end of its aclrtMallocHost block "
                      "(%zu bytes at %p)", arg, (void *)p, count, h->size, (void *)h->base);
    *blk = h;
    return ACL_SUCCESS;
}

/* How a valid asynchronous copy is carried out. */
typedef enum {
    COPY_QUEUED,   /* a task on the stream */
    COPY_NOOP,     /* dst is src: nothing to do */
    COPY_PAGEABLE, /* pageable host memory: wait for the stream, then copy, then return */
    COPY_STAGED,   /* ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the source copied now, queued from that */
} copy_path;

/* A synchronous copy's side that the kind calls device memory and that is host memory the
 * emulator does not know (not from aclrtMallocHost): refused. The runtime copies by address,
 * but such an address cannot be told from garbage (a stale handle, a freed pointer), and a
 * host copy there would crash or corrupt the process; a side the kind calls host memory is
 * taken as it lies, and known memory (device, aclrtMallocHost) whatever the kind says. */
static aclError check_named_device(const char *fn, const char *arg, const void *p, int kind,
                                   bool named_device, mem_loc loc) {
    if (!named_device || loc != LOC_PAGEABLE)
        return ACL_SUCCESS;
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                  "%s %p is not device memory (no live aclrtMalloc block holds it) nor host "
                  "memory from aclrtMallocHost, but kind %s calls it device memory", arg, p,
                  kind_name(kind));
}

/* An asynchronous copy settled as device-to-device (k) with pageable memory on a side: the
 * runtime lets it through (for device buffers its driver reports as host memory,
 * JudgeIsInvolvePageableMemory) and queues a device-to-device task on a host address;
 * refused here. */
static aclError check_queued_d2d(const char *fn, int k, const void *dst, const void *src,
                                 mem_loc ld, mem_loc ls) {
    if (k != ACL_MEMCPY_DEVICE_TO_DEVICE || (ls != LOC_PAGEABLE && ld != LOC_PAGEABLE))
        return ACL_SUCCESS;
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                  "kind ACL_MEMCPY_DEVICE_TO_DEVICE with %s %p, %s: a device-to-device task "
                  "cannot read or write pageable host memory", ls == LOC_PAGEABLE ? "src"
                  : "dst", ls == LOC_PAGEABLE ? src : dst, loc_name(LOC_PAGEABLE));
}

/* Between two devices (blk: dst's and src's blocks): peer access enabled between them, one
 * way or the other. The vendor's runtime leaves the check to the driver, and its docs
 * disagree on the way: the data-copy guide enables it on the destination for the source
 * (hicann/runtime docs/zh/dev_guide/02-01_data_copy.md), the API reference calls (current 0,
 * peer 1) the "0 to 1" way (docs/zh/api_ref/04_device_management.md). Either is taken. */
static aclError check_peer(const char *fn, mem_loc ld, mem_loc ls, rt_alloc *blk[2]) {
    if (ld != LOC_DEVICE || ls != LOC_DEVICE || blk[0]->device == blk[1]->device ||
        rt_peer_enabled(blk[0]->device, blk[1]->device) ||
        rt_peer_enabled(blk[1]->device, blk[0]->device))
        return ACL_SUCCESS;
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                  "dst is on device %d and src on device %d: a copy between devices needs "
                  "peer access between them (aclrtSetDevice(%d); "
                  "aclrtDeviceEnablePeerAccess(%d, 0)), which is not enabled",
                  blk[0]->device, blk[1]->device, blk[0]->device, blk[1]->device);
}

/* Validates a copy and returns the blocks it touches (g_mem read-locked). count > 0.
 * Synchronous: the direction comes from the addresses, not from the kind (the API reference
 * calls aclrtMemcpy's kind a reserved parameter, the direction judged by the addresses:
 * hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md; the runtime passes the
 * addresses to the driver's copy without it: src/runtime/driver/npu_driver_mem.cc
 * MemCopySync), but for check_named_device. Asynchronous:
 * the runtime's order (src/runtime/api/impl/api_error.cc MemcpyAsync): where the pointers lie
 * and the kind that gives (async_kind; ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE needs a host src and
 * a device dst, MemcpyAsyncCheckExLocation), host-to-host 207000, dst == src done, pageable
 * memory copied synchronously. */
static aclError check_copy(const char *fn, void *dst, const void *src, size_t count, int kind,
                           bool async, rt_alloc *blk[2], copy_path *path) {
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    mem_loc ld = locate(d), ls = locate(s);
    int k;
    *path = COPY_QUEUED;
    if (!async) {
        bool to_dev = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
                      kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE;
        bool from_dev = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
        aclError rc = check_named_device(fn, "dst", dst, kind, to_dev, ld);
        if (rc == ACL_SUCCESS)
            rc = check_named_device(fn, "src", src, kind, from_dev, ls);
        if (rc != ACL_SUCCESS)
            return rc;
        k = direction(ls, ld);
    } else if (kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
        if (ls == LOC_DEVICE || ld != LOC_DEVICE)
            return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                          "kind ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE copies host memory to device "
                          "memory, but src %p is %s and dst %p is %s", src, loc_name(ls), dst,
                          loc_name(ld));
        k = ACL_MEMCPY_HOST_TO_DEVICE;
        *path = COPY_STAGED;
    } else if ((k = async_kind(ls, ld, kind)) < 0) {
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "kind %s does not copy from src %p, %s, to dst %p, %s", kind_name(kind),
                      src, loc_name(ls), dst, loc_name(ld));
    }
    if (async && k == ACL_MEMCPY_HOST_TO_HOST)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "a host-to-host copy (src %s, dst %s) is not supported asynchronously; "
                      "use aclrtMemcpy", loc_name(ls), loc_name(ld));
    if (async && d == s) {
        *path = COPY_NOOP;
        return ACL_SUCCESS;
    }
    aclError rc = async ? check_queued_d2d(fn, k, dst, src, ld, ls) : ACL_SUCCESS;
    if (rc != ACL_SUCCESS)
        return rc;
    if (async && *path == COPY_QUEUED && (ls == LOC_PAGEABLE || ld == LOC_PAGEABLE))
        *path = COPY_PAGEABLE;
    rc = check_side(fn, "dst", d, count, ld == LOC_DEVICE, &blk[0]);
    if (rc == ACL_SUCCESS)
        rc = check_side(fn, "src", s, count, ls == LOC_DEVICE, &blk[1]);
    return rc == ACL_SUCCESS ? check_peer(fn, ld, ls, blk) : rc;
}

/* What a memset may set (g_mem read-locked): device memory, or host memory from
 * aclrtMallocHost. The API reference takes both, judged by the address, and calls other
 * host memory undefined behaviour (hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md
 * aclrtMemset, aclrtMemsetAsync). */
static aclError check_memset_target(const char *fn, uintptr_t p, size_t count, rt_alloc **blk) {
    if (locate(p) == LOC_DEVICE)
        return check_side(fn, "devPtr", p, count, true, blk);
    rt_alloc *h = find(&g_hostv, p, false);
    *blk = NULL;
    if (h == NULL)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "devPtr %p is not device memory (no live aclrtMalloc block holds it) nor "
                      "host memory from aclrtMallocHost (other host memory is undefined for "
                      "this call)", (void *)p);
    if (!holds(h, p, count))
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "devPtr range [%p, +%zu) runs past the end of its aclrtMallocHost block "
                      "(%zu bytes at %p)", (void *)p, count, h->size, (void *)h->base);
    *blk = h;
    return ACL_SUCCESS;
}

/* The ACL layer's checks of a copy (hicann/runtime src/acl/aclrt_impl/memory.cpp: NULL
 * pointers, then MemcpyKindTranslate; 100000). */
static aclError check_args(const char *fn, void *dst, const void *src, int kind) {
    if (dst == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "dst is NULL");
    if (src == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "src is NULL");
    if (kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE || kind == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "kind %d (%s) is not accepted by this call "
                      "(ACL_MEMCPY_HOST_TO_HOST..ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, 0..5)", kind,
                      kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE
                          ? "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE"
                          : "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE");
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "kind %d is not an aclrtMemcpyKind value "
                      "this call accepts (0..5)", kind);
    return ACL_SUCCESS;
}

/* count against destMax (a copy) or maxCount (a memset): the runtime's 107000
 * (src/runtime/api/impl/api_error.cc MemCopySync, MemcpyAsync, MemsetAsync). */
static aclError check_count(const char *fn, bool set, size_t count, size_t max) {
    if (count > max)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "count (%zu) exceeds %s (%zu)", count,
                      set ? "maxCount" : "destMax", max);
    return ACL_SUCCESS;
}

typedef struct {
    void *dst;
    const void *src; /* NULL: memset */
    size_t count;    /* bytes (of each row of a 2D copy) */
    size_t rows;     /* a 2D copy's rows, dpitch and spitch bytes apart; 0 or 1: one */
    size_t dpitch, spitch;
    int kind;        /* a copy's aclrtMemcpyKind: as given, or as settled (2D copies) */
    int value;
    bool words;      /* a memset of 32-bit words (aclrtMemsetD32*): value's bits, count / 4 */
    rt_alloc *blk[2];
    void *staged;    /* the copy of the source a staged copy reads, freed with the task */
} copy_task;

static void fill_words(void *dst, uint32_t word, size_t n) {
    unsigned char *p = dst;
    for (size_t i = 0; i < n; i++)
        memcpy(p + 4 * i, &word, 4);
}

static void copy_run(void *arg) {
    copy_task *t = arg;
    if (t->src != NULL) {
        size_t rows = t->rows > 1 ? t->rows : 1;
        for (size_t r = 0; r < rows; r++)
            rt_copy_bytes((char *)t->dst + r * t->dpitch, (const char *)t->src + r * t->spitch,
                          t->count);
    } else if (t->words)
        fill_words(t->dst, (uint32_t)t->value, t->count / 4);
    else
        memset(t->dst, t->value, t->count);
}

static void copy_release(void *arg) {
    copy_task *t = arg;
    unpin(t->blk[0]);
    unpin(t->blk[1]);
    free(t->staged);
    free(t);
}

/* ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the runtime copies the source into a buffer of its own
 * when the call is made, so the caller may reuse or free it once the call returns
 * (hicann/runtime docs/zh/api_ref/25-02_Enumerations.md aclrtMemcpyKind;
 * src/runtime/core/src/task/task_info/memory/memory_memcpy_async_task.cc AllocCpyTmpMem). */
static aclError stage_source(const char *fn, copy_task *t) {
    if ((t->staged = malloc(t->count)) == NULL)
        return RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, fn,
                      "cannot allocate %zu bytes to stage the source", t->count);
    memcpy(t->staged, t->src, t->count);
    t->src = t->staged;
    unpin(t->blk[1]);
    t->blk[1] = NULL;
    return ACL_SUCCESS;
}

/* A call's check of the memory a task touches, made under g_mem (read-locked): sets t->blk to
 * the blocks it lies in and, for an asynchronous copy, *path to how it is carried out. */
typedef aclError (*task_check)(const char *fn, copy_task *t, bool async, copy_path *path);

/* The step every copy and memset ends with, its arguments checked: `op` is validated by
 * `check` and its blocks pinned under g_mem, so no free can slip in between; they stay pinned,
 * not locked, while the bytes move (a free meanwhile fails). Synchronous: runs now.
 * Asynchronous, as `check` sets the path: queued on `s` (NULL: `stream` is taken now, its
 * device checked against `dev`), unpinned when the stream releases the task; done already
 * (COPY_NOOP); with pageable host memory, the stream's queued work waited for, then run
 * (COPY_PAGEABLE); or the source staged first (COPY_STAGED). */
static aclError submit(const char *fn, copy_task op, bool async, aclrtStream stream, int dev,
                       rt_stream *s, task_check check, copy_path path) {
    copy_task *t = async ? malloc(sizeof *t) : &op;
    if (t == NULL)
        return RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
    if (t != &op)
        *t = op;
    t->blk[0] = t->blk[1] = NULL;
    t->staged = NULL;
    pthread_rwlock_rdlock(&g_mem);
    aclError rc = check(fn, t, async, &path);
    if (rc == ACL_SUCCESS) {
        pin(t->blk[0]);
        pin(t->blk[1]);
    }
    pthread_rwlock_unlock(&g_mem);
    rt_stream *taken = NULL;
    if (rc != ACL_SUCCESS) {
        if (async)
            free(t);
    } else if (!async) {
        copy_run(t);
        unpin(t->blk[0]);
        unpin(t->blk[1]);
    } else if (path == COPY_NOOP) {
        copy_release(t);
    } else if (path == COPY_PAGEABLE) {
        /* The stream of any device (the runtime's StreamSynchronize switches to its context);
         * the copy itself, like aclrtMemcpy, from any current device. */
        if ((rc = rt_stream_drain(stream, dev, fn)) == ACL_SUCCESS)
            copy_run(t);
        copy_release(t);
    } else if ((s == NULL && (rc = rt_stream_get(stream, dev, fn, &taken)) != ACL_SUCCESS) ||
               (path == COPY_STAGED && (rc = stage_source(fn, t)) != ACL_SUCCESS) ||
               (rc = rt_stream_push(s != NULL ? s : taken, copy_run, copy_release, t, fn)) !=
                   ACL_SUCCESS) {
        copy_release(t);
    }
    if (taken != NULL)
        rt_stream_put(taken);
    return rc;
}

static aclError check_memset_task(const char *fn, copy_task *t, bool async, copy_path *path) {
    (void)async;
    (void)path;
    return check_memset_target(fn, (uintptr_t)t->dst, t->count, &t->blk[0]);
}

static aclError check_copy_task(const char *fn, copy_task *t, bool async, copy_path *path) {
    return check_copy(fn, t->dst, t->src, t->count, t->kind, async, t->blk, path);
}

/* aclrtMemcpy, aclrtMemcpyAsync, aclrtMemset and aclrtMemsetAsync: `op` is the copy (`max`
 * its destMax) or, `set`, the memset of op.value (`max` its maxCount). In CANN's order
 * (hicann/runtime src/acl/aclrt_impl/memory.cpp, then src/runtime/api/api_c.cc,
 * api_error.cc, api_impl.cc): count 0 is success before any check, of the pointers, the kind
 * and the stream included; the NULL and kind checks; the stream's handle; count against destMax/maxCount (a synchronous memset's is the driver's, after the
 * device); a synchronous copy onto itself is done; the device; then a memset's stream device,
 * the pointers (check_copy, check_memset_target), and a queued copy's stream device; then
 * submit. With pageable host memory an asynchronous copy is made as the runtime makes it
 * (api_error.cc MemcpyAsync: StreamSynchronize, then MemCopySync): the stream's queued work
 * is waited for, then the copy is made and the call returns (the API reference:
 * hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md aclrtMemcpyAsync;
 * docs/zh/dev_guide/02-01_data_copy.md). */
static aclError transfer(const char *fn, copy_task op, size_t max, bool set, bool async,
                         aclrtStream stream) {
    if (aclemu_fault(fn))
        return ACL_ERROR_RT_INTERNAL_ERROR;
    if (op.count == 0)
        return ACL_SUCCESS;
    aclError rc = rt_enter(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    if (!set)
        rc = check_args(fn, op.dst, op.src, op.kind);
    else if (op.dst == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "devPtr is NULL");
    if (rc != ACL_SUCCESS || (async && (rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS) ||
        ((!set || async) && (rc = check_count(fn, set, op.count, max)) != ACL_SUCCESS))
        goto out;
    /* A synchronous copy onto itself is done: the runtime returns success before it looks for
     * a device or at the pointers (hicann/runtime src/runtime/api/impl/api_error.cc
     * MemCopySync; the asynchronous copy's shortcut comes after the pointers' places). */
    if (!set && !async && op.dst == op.src)
        goto out;
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (set && !async && (rc = check_count(fn, set, op.count, max)) != ACL_SUCCESS) ||
        (set && async && (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS))
        goto out;
    rc = submit(fn, op, async, stream, dev, s, set ? check_memset_task : check_copy_task,
                COPY_QUEUED);
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind) {
    return transfer(__func__, (copy_task){.dst = dst, .src = src, .count = count,
                                          .kind = (int)kind}, destMax, false, false, NULL);
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
    return transfer(__func__, (copy_task){.dst = dst, .src = src, .count = count,
                                          .kind = (int)kind}, destMax, false, true, stream);
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    return transfer(__func__, (copy_task){.dst = devPtr, .count = count, .value = value},
                    maxCount, true, false, NULL);
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                          aclrtStream stream) {
    return transfer(__func__, (copy_task){.dst = devPtr, .count = count, .value = value},
                    maxCount, true, true, stream);
}

/* aclrtMemsetD32 and aclrtMemsetD32Async: N 32-bit words of value at ptr. In CANN's order
 * (hicann/runtime src/acl/aclrt_impl/memory.cpp aclrtMemsetD32Impl / AsyncImpl: N 0 is
 * success before anything; NULL ptr, a ptr not 4-byte aligned, N * 4 above memSize: 100000;
 * then the memory must be the runtime's, device or host (aclrtPointerGetAttributes: its
 * refusal passed on; unregistered host memory 100000); then the runtime (api_c_standard_soc.cc:
 * the stream's handle; api_impl_standard_soc.cc MemsetD32*: a current device, 107002). Host
 * memory is set at once, by the calling thread, asynchronous or not
 * (core/src/memory/common_memset_d32.cpp MemsetD32OnHost); device memory synchronously, or
 * queued on the stream (the current device's default stream for NULL; another device's
 * stream 107003). The words must lie inside one live block (107000, as aclrtMemset's
 * target). */
static aclError locate_pointer(const char *fn, const void *ptr, aclrtPtrAttributes *out);

static aclError memset_words(const char *fn, void *ptr, size_t memSize, uint32_t value,
                             size_t N, bool async, aclrtStream stream) {
    if (aclemu_fault(fn))
        return ACL_ERROR_RT_INTERNAL_ERROR;
    if (N == 0)
        return ACL_SUCCESS;
    aclError rc = rt_enter(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    aclrtPtrAttributes where;
    if (ptr == NULL) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "ptr is NULL");
        goto out;
    }
    if (((uintptr_t)ptr & 3u) != 0) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "ptr %p is not 4-byte aligned", ptr);
        goto out;
    }
    if (N > memSize / 4) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn,
                           "N (%zu) words of 4 bytes exceed memSize (%zu bytes)", N, memSize);
        goto out;
    }
    if ((rc = locate_pointer(fn, ptr, &where)) != ACL_SUCCESS)
        goto out;
    if (where.location.type != ACL_MEM_LOCATION_TYPE_DEVICE &&
        where.location.type != ACL_MEM_LOCATION_TYPE_HOST) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn,
                           "ptr %p is not memory of the runtime: only aclrtMalloc and "
                           "aclrtMallocHost memory (or registered host memory) is set", ptr);
        goto out;
    }
    if ((async && (rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS) ||
        (rc = rt_need_device(fn, &dev)) != ACL_SUCCESS)
        goto out;
    if (where.location.type == ACL_MEM_LOCATION_TYPE_HOST) {
        fill_words(ptr, value, N);
        goto out;
    }
    if (async && (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    rc = submit(fn, (copy_task){.dst = ptr, .count = N * 4, .value = (int)value, .words = true},
                async, stream, dev, s, check_memset_task, COPY_QUEUED);
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtMemsetD32(void *ptr, size_t memSize, uint32_t value, size_t N) {
    return memset_words(__func__, ptr, memSize, value, N, false, NULL);
}

aclError aclrtMemsetD32Async(void *ptr, size_t memSize, uint32_t value, size_t N,
                             aclrtStream stream) {
    return memset_words(__func__, ptr, memSize, value, N, true, stream);
}

/* aclrtMemcpy2d and aclrtMemcpy2dAsync: op.rows rows of op.count (width) bytes, op.spitch
 * bytes apart at src, op.dpitch apart at dst. In CANN's order (hicann/runtime
 * src/acl/aclrt_impl/memory.cpp CheckMemcpy2dParam; src/runtime/api/api_c.cc rtMemcpy2d*;
 * api/impl/api_error.cc MemCopy2DCheckParam, MemCopy2DSync, MemCopy2DAsync; api_impl.cc):
 * width or height 0 is success before anything; NULL dst, NULL src, width above either pitch,
 * a kind other than HOST_TO_DEVICE, DEVICE_TO_HOST, DEVICE_TO_DEVICE, DEFAULT: 100000 (the
 * ACL layer). Then the runtime: the stream's handle (107017) and a NULL stream
 * (rt_check_null_stream); height above 5242880 rows, width above 5000000 bytes
 * (RT_MAX_MEMCPY2D_*: 107000); the
 * synchronous copy's DEVICE_TO_DEVICE kind 207000; a current device (107002: the locations are
 * asked in its context); the kind settled from where the pointers lie (settle_2d); a queued
 * copy's stream of another device (107003); then what the driver's copy touches
 * (check_2d_task: every row inside one live block, peer access between devices: 107000). */
#define MEMCPY2D_MAX_HEIGHT ((size_t)5242880)
#define MEMCPY2D_MAX_WIDTH ((size_t)5000000)

/* The 2D copy's direction, settled as the runtime settles it (MemcpyKindAutoCorrect, as for
 * aclrtMemcpyAsync: async_kind), into t->kind: 107000 for a kind the pair of places does not
 * take, and for a settled direction the call does not copy (synchronous: host-to-device and
 * device-to-host only, MemCopy2DSync; asynchronous: device-to-device too, MemCopy2DAsync).
 * Device-to-device with pageable memory: check_queued_d2d. On the Atlas training and
 * inference series an asynchronous device-to-device copy is 100000 (the API reference:
 * docs/zh/api_ref/11-03_memory_copy_and_set.md aclrtMemcpy2dAsync, Atlas A2/A3 and Ascend 950
 * only; the driver that would refuse it is not in the sources). A side the settled direction
 * calls device memory that is pageable host memory: 107000 (check_named_device; the driver is
 * handed that direction). Pageable memory on a side makes an asynchronous copy synchronous
 * (MemCopy2DAsync: StreamSynchronize, then MemCopy2DSync). */
static aclError settle_2d(const char *fn, copy_task *t, bool async, copy_path *path) {
    pthread_rwlock_rdlock(&g_mem);
    mem_loc ld = locate((uintptr_t)t->dst), ls = locate((uintptr_t)t->src);
    pthread_rwlock_unlock(&g_mem);
    int k = async_kind(ls, ld, t->kind);
    if (k < 0)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "kind %s does not copy from src %p, %s, to dst %p, %s",
                      kind_name(t->kind), t->src, loc_name(ls), t->dst, loc_name(ld));
    if (k == ACL_MEMCPY_HOST_TO_HOST || (!async && k == ACL_MEMCPY_DEVICE_TO_DEVICE))
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "src %p is %s and dst %p is %s: a %s copy (kind %s), but this call "
                      "copies only host-to-device%s or device-to-host", t->src, loc_name(ls),
                      t->dst, loc_name(ld), k == ACL_MEMCPY_HOST_TO_HOST ? "host-to-host"
                      : "device-to-device", kind_name(t->kind),
                      async ? ", device-to-device" : "");
    aclError rc = async ? check_queued_d2d(fn, k, t->dst, t->src, ld, ls) : ACL_SUCCESS;
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (k == ACL_MEMCPY_DEVICE_TO_DEVICE && soc != NULL && soc->npu_arch != 2201 &&
        soc->npu_arch != 3510)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                      "src %p and dst %p are device memory: a device-to-device 2D copy, which "
                      "the %s (%s) do not support (Atlas A2/A3 and Ascend 950 only)", t->src,
                      t->dst, soc->series, soc->name);
    bool to_dev = k != ACL_MEMCPY_DEVICE_TO_HOST, from_dev = k != ACL_MEMCPY_HOST_TO_DEVICE;
    if ((rc = check_named_device(fn, "dst", t->dst, k, to_dev, ld)) != ACL_SUCCESS ||
        (rc = check_named_device(fn, "src", t->src, k, from_dev, ls)) != ACL_SUCCESS)
        return rc;
    if (async && (ls == LOC_PAGEABLE || ld == LOC_PAGEABLE))
        *path = COPY_PAGEABLE;
    t->kind = k;
    return ACL_SUCCESS;
}

/* The bytes from a side's first row to the end of its last: (rows - 1) * pitch + width,
 * SIZE_MAX when that overflows (no block or host range holds it). rows >= 1. */
static size_t extent_2d(size_t pitch, size_t width, size_t rows) {
    if (rows > 1 && pitch > (SIZE_MAX - width) / (rows - 1))
        return SIZE_MAX;
    return (rows - 1) * pitch + width;
}

/* What the driver's 2D copy touches (g_mem read-locked; the direction settled): each side's
 * rows inside one live block (device memory, or an aclrtMallocHost block it starts in), and
 * peer access between two devices. */
static aclError check_2d_task(const char *fn, copy_task *t, bool async, copy_path *path) {
    (void)async;
    (void)path;
    uintptr_t d = (uintptr_t)t->dst, s = (uintptr_t)t->src;
    mem_loc ld = locate(d), ls = locate(s);
    aclError rc = check_side(fn, "dst", d, extent_2d(t->dpitch, t->count, t->rows),
                             ld == LOC_DEVICE, &t->blk[0]);
    if (rc == ACL_SUCCESS)
        rc = check_side(fn, "src", s, extent_2d(t->spitch, t->count, t->rows),
                        ls == LOC_DEVICE, &t->blk[1]);
    return rc == ACL_SUCCESS ? check_peer(fn, ld, ls, t->blk) : rc;
}

static aclError copy_2d(const char *fn, copy_task op, bool async, aclrtStream stream) {
    if (aclemu_fault(fn))
        return ACL_ERROR_RT_INTERNAL_ERROR;
    if (op.count == 0 || op.rows == 0)
        return ACL_SUCCESS;
    aclError rc = rt_enter(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    copy_path path = COPY_QUEUED;
    if (op.dst == NULL)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "dst is NULL");
    else if (op.src == NULL)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "src is NULL");
    else if (op.count > op.spitch || op.count > op.dpitch)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn,
                           "width (%zu bytes) exceeds %s (%zu): a row must fit in the pitch "
                           "of both sides (spitch %zu, dpitch %zu)", op.count,
                           op.count > op.spitch ? "spitch" : "dpitch",
                           op.count > op.spitch ? op.spitch : op.dpitch, op.spitch, op.dpitch);
    else if (op.kind != ACL_MEMCPY_HOST_TO_DEVICE && op.kind != ACL_MEMCPY_DEVICE_TO_HOST &&
             op.kind != ACL_MEMCPY_DEVICE_TO_DEVICE && op.kind != ACL_MEMCPY_DEFAULT)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn,
                           "kind %d (%s) is not one this call takes (ACL_MEMCPY_HOST_TO_DEVICE, "
                           "ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE or "
                           "ACL_MEMCPY_DEFAULT)", op.kind, kind_name(op.kind));
    else if (async && ((rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS ||
                       (rc = rt_check_null_stream(stream, fn)) != ACL_SUCCESS))
        ;
    else if (op.rows > MEMCPY2D_MAX_HEIGHT)
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "height (%zu rows) exceeds the runtime's maximum, %zu", op.rows,
                    MEMCPY2D_MAX_HEIGHT);
    else if (op.count > MEMCPY2D_MAX_WIDTH)
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "width (%zu bytes) exceeds the runtime's maximum, %zu", op.count,
                    MEMCPY2D_MAX_WIDTH);
    else if (!async && op.kind == ACL_MEMCPY_DEVICE_TO_DEVICE)
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                    "kind ACL_MEMCPY_DEVICE_TO_DEVICE is not supported: the synchronous 2D "
                    "copy is host-to-device or device-to-host (aclrtMemcpy2dAsync copies "
                    "device-to-device)");
    else if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
             (rc = settle_2d(fn, &op, async, &path)) != ACL_SUCCESS ||
             (async && path == COPY_QUEUED &&
              (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS))
        ;
    else
        rc = submit(fn, op, async, stream, dev, s, check_2d_task, path);
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                       size_t height, aclrtMemcpyKind kind) {
    return copy_2d(__func__, (copy_task){.dst = dst, .src = src, .count = width, .rows = height,
                                         .dpitch = dpitch, .spitch = spitch, .kind = (int)kind},
                   false, NULL);
}

aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t width, size_t height, aclrtMemcpyKind kind,
                            aclrtStream stream) {
    return copy_2d(__func__, (copy_task){.dst = dst, .src = src, .count = width, .rows = height,
                                         .dpitch = dpitch, .spitch = spitch, .kind = (int)kind},
                   true, stream);
}

/* ---- info ------------------------------------------------------------------------------ */

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free_, size_t *total) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (free_ == NULL || total == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "%s (output pointer) is NULL",
                    free_ == NULL ? "free" : "total");
        goto out;
    }
    /* CANN: ApiErrorDecorator::MemGetInfoEx, before it needs a context. */
    if ((int)attr < ACL_DDR_MEM || (int)attr > ACL_MEM_P2P_HUGE1G) {
        rc = RT_ERR(ACL_ERROR_RT_INVALID_MEMORY_TYPE, __func__,
                    "attr %d is not an aclrtMemAttr value (ACL_DDR_MEM..ACL_MEM_P2P_HUGE1G, "
                    "0..17)", (int)attr);
        goto out;
    }
    if ((rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    /* The emulated device's memory is HBM, and it has no DDR: the DDR attributes read 0, the
     * HBM ones and the memory-kind-neutral ones (ACL_MEM_*) the device's memory. */
    bool ddr = attr == ACL_DDR_MEM || attr == ACL_DDR_MEM_HUGE || attr == ACL_DDR_MEM_NORMAL ||
               attr == ACL_DDR_MEM_P2P_HUGE || attr == ACL_DDR_MEM_P2P_NORMAL;
    if (!ddr) {
        uint64_t cap = rt_device_memory_cap();
        pthread_rwlock_rdlock(&g_mem);
        *total = (size_t)cap;
        *free_ = (size_t)(cap - g_arena[dev].live_bytes);
        pthread_rwlock_unlock(&g_mem);
    } else {
        *total = *free_ = 0;
    }
out:
    rt_leave();
    return rc;
}

/* ---- what memory is and who uses it --------------------------------------------------- */

/* hicann/runtime src/acl/aclrt_impl/memory.cpp aclrtPointerGetAttributesImpl (ptr, then
 * attributes NULL: 100000), src/runtime/api/impl/api_impl.cc PtrGetAttributes and
 * driver/npu_driver_mem.cc PtrGetAttributes: device memory (a live aclrtMalloc block,
 * anywhere inside it) is ACL_MEM_LOCATION_TYPE_DEVICE with the process's device id and its
 * pages; aclrtMallocHost memory and registered host memory (aclrtHostRegister*) HOST, id 0;
 * any other host address UNREGISTERED, id 0. The driver is not in the sources: an address in
 * device address space that no live allocation holds (freed) is refused here, 107000. */
/* Where ptr lies, as the driver classifies it (see aclrtPointerGetAttributes below): 107000
 * naming fn for device address space no live block holds. Runtime entered. */
static aclError locate_pointer(const char *fn, const void *ptr, aclrtPtrAttributes *out) {
    uintptr_t u = (uintptr_t)ptr;
    aclrtPtrAttributes a;
    memset(&a, 0, sizeof a);
    pthread_rwlock_rdlock(&g_mem);
    rt_alloc *dev = find(&g_devv, u, false);
    bool in_arena = arena_of(u) >= 0;
    bool pinned = find(&g_hostv, u, false) != NULL;
    if (dev != NULL) {
        a.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
        a.location.id = (uint32_t)dev->device;
        a.pageSize = dev->page;
    }
    pthread_rwlock_unlock(&g_mem);
    if (dev == NULL && in_arena)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "ptr %p is device address space no live aclrtMalloc block holds (freed, "
                      "or never allocated)", ptr);
    if (dev == NULL) {
        a.location.type = pinned || rt_host_registered(ptr) ? ACL_MEM_LOCATION_TYPE_HOST
                                                            : ACL_MEM_LOCATION_TYPE_UNREGISTERED;
        a.location.id = 0;
        a.pageSize = (uint32_t)page_size();
    }
    *out = a;
    return ACL_SUCCESS;
}

aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (ptr == NULL)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__, "ptr is NULL");
    else if (attributes == NULL)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                           "attributes (output pointer) is NULL");
    else
        rc = locate_pointer(__func__, ptr, attributes);
    rt_leave();
    return rc;
}

/* hicann/runtime src/acl/aclrt_impl/memory.cpp aclrtGetMemUsageInfoImpl (memUsageInfo, then
 * outputNum NULL: 100000), src/runtime/api/impl/api_error.cc GetMemUsageInfo (*outputNum
 * cleared; inputNum 0: 107000; deviceId converted and checked: 107001), api_impl.cc (a
 * current context: 107002) and the driver's per-module counts (halGetMemUsageInfo, not in the
 * sources; "not supported" on Ascend 950 per the API reference: 207000). The emulator's only
 * module is APP (pkg_inc/driver/hal_pkg/common_pkg.h: the module id aclrtMalloc passes,
 * APP_MODE_ID): the bytes aclrtMalloc gave on deviceId (as aclrtGetMemInfo counts them) and
 * their peak since the runtime came up; listed while the current size is not 0. */
aclError aclrtGetMemUsageInfo(int32_t deviceId, aclrtMemUsageInfo *memUsageInfo,
                              size_t inputNum, size_t *outputNum) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int cur;
    const aclemu_soc *soc = aclemu_soc_info(__func__);
    if (memUsageInfo == NULL)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                           "memUsageInfo (output array) is NULL");
    else if (outputNum == NULL)
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__, "outputNum (output pointer) is NULL");
    else if ((*outputNum = 0, inputNum == 0))
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "inputNum is 0: memUsageInfo must hold at least one entry");
    else if ((rc = rt_check_device_arg(__func__, "deviceId", deviceId)) != ACL_SUCCESS)
        ;
    else if ((rc = rt_need_device(__func__, &cur)) != ACL_SUCCESS)
        ;
    else if (soc->npu_arch == 3510)
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "the %s (%s) do not report memory usage per module", soc->series,
                    soc->name);
    else {
        pthread_rwlock_rdlock(&g_mem);
        uint64_t live = g_arena[deviceId].live_bytes, peak = g_arena[deviceId].peak_bytes;
        pthread_rwlock_unlock(&g_mem);
        if (live > 0) {
            memset(&memUsageInfo[0], 0, sizeof memUsageInfo[0]);
            snprintf(memUsageInfo[0].name, sizeof memUsageInfo[0].name, "APP");
            memUsageInfo[0].curMemSize = live;
            memUsageInfo[0].memPeakSize = peak;
            *outputNum = 1;
        }
    }
    rt_leave();
    return rc;
}

/* ---- internal API --------------------------------------------------------------------- */

bool aclemu_device_range(const void *p, uint64_t nbytes) {
    uintptr_t u = (uintptr_t)p;
    pthread_rwlock_rdlock(&g_mem);
    rt_alloc *a = find(&g_devv, u, nbytes == 0);
    bool ok = a != NULL && holds(a, u, nbytes);
    pthread_rwlock_unlock(&g_mem);
    return ok;
}

void *aclemu_device_pin(const void *p, uint64_t nbytes) {
    uintptr_t u = (uintptr_t)p;
    pthread_rwlock_rdlock(&g_mem);
    rt_alloc *a = find(&g_devv, u, nbytes == 0);
    if (a != NULL && holds(a, u, nbytes))
        pin(a);
    else
        a = NULL;
    pthread_rwlock_unlock(&g_mem);
    return a;
}

void aclemu_device_unpin(void *token) { unpin(token); }

void *rt_device_pin_on(const char *fn, const char *arg, const void *p, uint64_t nbytes, int dev,
                       aclError *rc) {
    uintptr_t u = (uintptr_t)p;
    pthread_rwlock_rdlock(&g_mem);
    rt_alloc *a = find(&g_devv, u, nbytes == 0);
    bool inside = a != NULL && holds(a, u, nbytes);
    int owner = inside ? a->device : -1; /* read under the lock: a may go once it is released */
    if (inside && owner == dev)
        pin(a);
    pthread_rwlock_unlock(&g_mem);
    if (inside && owner == dev) {
        *rc = ACL_SUCCESS;
        return a;
    }
    if (inside)
        *rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                     "%s %p is memory of device %d, not of the stream's device %d", arg, p,
                     owner, dev);
    else
        *rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                     "%s [%p, +%llu bytes) is not inside one live device allocation "
                     "(aclrtMalloc)", arg, p, (unsigned long long)nbytes);
    return NULL;
}

int rt_memory_place(const void *p, uint64_t n) {
    uintptr_t u = (uintptr_t)p;
    pthread_rwlock_rdlock(&g_mem);
    int place = RT_PLACE_PAGEABLE;
    rt_alloc *h = find(&g_hostv, u, false);
    if (locate(u) == LOC_DEVICE || overlaps_arena(u, (size_t)n) ||
        (n > 0 && find(&g_devv, u + n - 1, false) != NULL))
        place = RT_PLACE_DEVICE;
    else if (h != NULL && holds(h, u, n))
        place = RT_PLACE_PINNED;
    pthread_rwlock_unlock(&g_mem);
    return place;
}

void rt_memory_stats(int64_t *dev_allocs, int64_t *host_allocs, int64_t *dev_bytes) {
    *dev_allocs = atomic_load(&g_n_dev);
    *host_allocs = atomic_load(&g_n_host);
    *dev_bytes = atomic_load(&g_dev_bytes);
}

void rt_memory_release_all(void) {
    pthread_rwlock_wrlock(&g_mem);
    /* Streams are drained, so nothing is pinned unless a phase two raced with aclFinalize on
     * another thread; such a block is detached but not freed (its unpin stays harmless). */
    for (size_t i = 0; i < g_devv.n; i++)
        if (atomic_load(&g_devv.v[i]->pins) == 0)
            free(g_devv.v[i]);
    for (size_t i = 0; i < g_hostv.n; i++) {
        if (atomic_load(&g_hostv.v[i]->pins) == 0) {
            free((void *)g_hostv.v[i]->base);
            free(g_hostv.v[i]);
        }
    }
    free(g_devv.v);
    free(g_hostv.v);
    memset(&g_devv, 0, sizeof g_devv);
    memset(&g_hostv, 0, sizeof g_hostv);
    for (int d = 0; d < RT_MAX_DEVICES; d++) {
        if (g_arena[d].base != 0)
            munmap((void *)g_arena[d].base, g_arena[d].end - g_arena[d].base);
        memset(&g_arena[d], 0, sizeof g_arena[d]);
    }
    atomic_store(&g_n_dev, 0);
    atomic_store(&g_n_host, 0);
    atomic_store(&g_dev_bytes, 0);
    pthread_rwlock_unlock(&g_mem);
}
