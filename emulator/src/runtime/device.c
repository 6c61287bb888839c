/*
 * Process life (aclInit/aclFinalize), devices and contexts.
 *
 * The current device is per thread: (device id, generation). A device's generation changes
 * each time it is torn down (its reference count reaches zero, or aclFinalize), which makes
 * every thread whose current device it was see "no device" without anyone having to find
 * those threads.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

static pthread_rwlock_t g_life = PTHREAD_RWLOCK_INITIALIZER;
/* Two states, as in CANN, where the ACL layer's aclInit reference count
 * (hicann/runtime src/acl/aclrt_impl/acl_rt_impl_base.cpp GetAclInitFlag) and the runtime are
 * separate: no aclrt* call checks the former (only the dump calls do,
 * src/acl/aclrt_impl/toolchain/dump.cpp), and the runtime comes up at its first use.
 * g_acl_initialized: aclInit succeeded and no aclFinalize followed (a second aclInit: 100002).
 * g_runtime_up: the runtime's state exists (environment read, devices numbered); brought up
 * by aclInit or lazily by the first runtime call, torn down by aclFinalize. */
static _Atomic bool g_acl_initialized;
static _Atomic bool g_runtime_up;
/* Set by a successful aclFinalize, cleared by aclInit: a second aclFinalize is 100037. */
static bool g_finalized;
pthread_mutex_t g_dev_mu = PTHREAD_MUTEX_INITIALIZER;

static int g_ndev = 1;
/* ASCEND_RT_VISIBLE_DEVICES as aclInit read it: "" when unset; g_visible_bad when the
 * runtime refuses it (then there is no device: g_ndev is 0). */
static char g_visible[64];
static bool g_visible_bad;
static char g_visible_why[96];
static uint64_t g_mem_cap = 16ull << 30;
static int g_max_streams = RT_DEFAULT_MAX_STREAMS;
/* The machine's device count (ACL_EMU_DEVICE_COUNT) and the machine (physical) id of each of
 * the process's devices: ASCEND_RT_VISIBLE_DEVICES' i-th listed id, else i. */
static int g_machine_ndev = 1;
static int g_phys[RT_MAX_DEVICES];
/* Peer access, kept as the vendor's runtime hands it to the driver (hicann/runtime
 * src/acl/aclrt_impl/memory.cpp aclrtDeviceEnablePeerAccessImpl: the current device and the
 * peer's physical id): g_peer[process device][physical peer]. Per process: set by
 * aclrtDeviceEnablePeerAccess, cleared by aclrtDeviceDisablePeerAccess and at aclInit. */
static _Atomic bool g_peer[RT_MAX_DEVICES][RT_MAX_DEVICES];
/* Pairs of machine devices that cannot reach each other (ACL_EMU_NO_PEER), both ways. */
static bool g_no_peer[RT_MAX_DEVICES][RT_MAX_DEVICES];

/* Options a context holds: CANN's Context keeps SYS_OPT_DETERMINISTIC ..
 * SYS_OPT_STRONG_CONSISTENCY (aclrtCtx*SysParamOpt take 0..2). */
#define RT_CTX_OPTS 3

typedef struct {
    int set_count;          /* aclrtSetDevice references not yet reset (g_dev_mu) */
    int ctx_count;          /* live contexts created on it (g_dev_mu) */
    _Atomic uint64_t gen;   /* bumped at each teardown */
    char default_ctx;       /* its address is the device's default context handle */
    /* the default context's system parameter options (SYS_OPT_*): set flags and values;
     * cleared at teardown, as CANN's primary context goes with the device */
    bool opt_set[RT_CTX_OPTS];
    int64_t opt_val[RT_CTX_OPTS];
} rt_device;
static rt_device g_dev[RT_MAX_DEVICES];

typedef struct rt_context {
    rt_obj hdr;
    int device;
    bool opt_set[RT_CTX_OPTS]; /* system parameter options, as rt_device's (g_dev_mu) */
    int64_t opt_val[RT_CTX_OPTS];
    struct rt_context *next; /* list of live contexts (g_dev_mu) */
} rt_context;
static rt_context *g_contexts;

static _Thread_local int tl_dev = -1;
static _Thread_local uint64_t tl_gen;
static _Thread_local rt_context *tl_ctx; /* NULL: the device's default context */

/* ---- life ---------------------------------------------------------------------------- */

static aclError bring_up(const char *fn);

aclError rt_enter(const char *fn) {
    for (;;) {
        if (rt_in_host_function()) {
            /* A teardown (write lock) may be draining the very stream whose host function
             * calls: waiting for the lock would deadlock, so the call is refused instead. */
            if (pthread_rwlock_tryrdlock(&g_life) != 0)
                return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                              "called from inside a host function while aclFinalize, "
                              "aclrtResetDevice or aclrtDestroyContext tears the runtime down");
        } else {
            pthread_rwlock_rdlock(&g_life);
        }
        if (atomic_load_explicit(&g_runtime_up, memory_order_acquire))
            return ACL_SUCCESS;
        /* The first runtime call (before any aclInit, or after aclFinalize) brings the
         * runtime up, as CANN's comes up at its first use; then enter as usual (an
         * aclFinalize may come in between: the loop brings it up again). */
        pthread_rwlock_unlock(&g_life);
        if (rt_in_host_function()) /* no host function runs while the runtime is down */
            return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                          "called from inside a host function after aclFinalize");
        pthread_rwlock_wrlock(&g_life);
        aclError rc = bring_up(fn);
        pthread_rwlock_unlock(&g_life);
        if (rc != ACL_SUCCESS)
            return rc;
    }
}

void rt_leave(void) { pthread_rwlock_unlock(&g_life); }

aclError rt_begin(const char *fn, aclError fault_rc) {
    if (aclemu_fault(fn))
        return rt_fail(fault_rc);
    return rt_enter(fn);
}

static aclError enter_write(const char *fn) {
    aclError rc = rt_refuse_in_host_function(fn); /* it would drain the caller's own stream */
    if (rc != ACL_SUCCESS)
        return rc;
    pthread_rwlock_wrlock(&g_life);
    rc = bring_up(fn);
    if (rc != ACL_SUCCESS)
        pthread_rwlock_unlock(&g_life);
    return rc;
}

/* enter_write after the fault hook (see rt_begin). */
static aclError begin_write(const char *fn, aclError fault_rc) {
    if (aclemu_fault(fn))
        return rt_fail(fault_rc);
    return enter_write(fn);
}

int rt_device_count(void) { return g_ndev; }
int rt_physical_device(int dev) { return g_phys[dev]; }
int rt_machine_device_count(void) { return g_machine_ndev; }

int rt_device_of_machine(int phys) {
    for (int d = 0; d < g_ndev; d++)
        if (g_phys[d] == phys)
            return d;
    return -1;
}

bool rt_device_open(int dev) {
    pthread_mutex_lock(&g_dev_mu);
    bool open = g_dev[dev].set_count > 0 || g_dev[dev].ctx_count > 0;
    pthread_mutex_unlock(&g_dev_mu);
    return open;
}
uint64_t rt_device_memory_cap(void) { return g_mem_cap; }
int rt_max_streams(void) { return g_max_streams; }

int rt_current_device(void) {
    int d = tl_dev;
    if (d < 0 || d >= g_ndev || atomic_load_explicit(&g_dev[d].gen, memory_order_relaxed) != tl_gen)
        return -1;
    return d;
}

aclError rt_need_device(const char *fn, int *dev) {
    int d = rt_current_device();
    if (d < 0)
        return RT_ERR(ACL_ERROR_RT_CONTEXT_NULL, fn,
                      "no device is set on the calling thread (call aclrtSetDevice first)");
    *dev = d;
    return ACL_SUCCESS;
}

static void set_current(int dev, rt_context *ctx) {
    tl_dev = dev;
    tl_gen = atomic_load(&g_dev[dev].gen);
    tl_ctx = ctx;
}

/* CANN calls the stream state callbacks' DESTROY_PRE for the default stream when the primary
 * context goes (hicann/runtime src/runtime/core/src/runtime.cc PrimaryContextCallBack), then
 * for each stream the context's teardown destroys (context/context.cc
 * TearDownStreamAndFinalize). Here before the runtime's write lock, which a callback's runtime
 * call would wait for: for a reset (force: of all its references) that will tear dev down. */
static void notify_streams_before_teardown(int dev, bool force) {
    if (dev < 0 || dev >= g_ndev || rt_in_host_function()) /* refused later */
        return;
    pthread_mutex_lock(&g_dev_mu);
    const rt_device *d = &g_dev[dev];
    bool last = d->set_count > 0 && (force || d->set_count == 1) && d->ctx_count == 0;
    pthread_mutex_unlock(&g_dev_mu);
    if (last)
        rt_streams_notify_destroy(dev);
}

/* Tears a device down once nothing references it: drains and destroys its streams and events
 * and invalidates every thread's "current device" on it. Write lock held. */
static void teardown(int dev) {
    memset(g_dev[dev].opt_set, 0, sizeof g_dev[dev].opt_set);
    rt_streams_teardown(dev);
    rt_devinfo_device_gone(dev);
    atomic_fetch_add(&g_dev[dev].gen, 1);
}

/* Parses a byte count with an optional K/M/G/T suffix (powers of 1024, optional "B"/"iB"). */
static bool parse_bytes(const char *s, uint64_t *out) {
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0' || v == 0 || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

/* The devices ASCEND_RT_VISIBLE_DEVICES leaves this process of the ndev the machine has,
 * read as CANN's runtime reads it (hicann/runtime src/runtime/core/src/runtime.cc,
 * GetVisibleDevices and SplitString): digit runs separated by single commas from the first
 * character on, up to anything else; ids from the first one past the machine's last device
 * dropped; an empty result, ids out of ascending order or repeated make the runtime refuse
 * the value (aclrtGetDeviceCount fails with 207004, api_impl.cc GetDeviceCount). The
 * process's device i is the machine's i-th listed device; emulated devices are all alike,
 * so only the count matters here. Returns the count, or -1 (refused, why in g_visible_why). */
static int visible_devices(const char *s, int ndev) {
    int count = 0;
    long prev = -1;
    const char *p = s;
    if (!isdigit((unsigned char)*p)) {
        snprintf(g_visible_why, sizeof g_visible_why, "no device id in range [0, %d)", ndev);
        return -1;
    }
    while (isdigit((unsigned char)*p)) {
        long v = 0;
        while (isdigit((unsigned char)*p)) {
            if (v < 100000)
                v = v * 10 + (*p - '0');
            p++;
        }
        if (v > ndev - 1)
            break;
        if (v == prev) {
            snprintf(g_visible_why, sizeof g_visible_why, "ids must not repeat");
            return -1;
        }
        if (v < prev) {
            snprintf(g_visible_why, sizeof g_visible_why, "ids must be in ascending order");
            return -1;
        }
        prev = v;
        g_phys[count] = (int)v;
        if (++count >= ndev || *p != ',')
            break;
        p++;
    }
    if (count == 0) {
        snprintf(g_visible_why, sizeof g_visible_why, "no device id in range [0, %d)", ndev);
        return -1;
    }
    return count;
}

/* ACL_EMU_NO_PEER: pairs "a:b" of machine device ids separated by commas, each id below
 * ndev and a != b. Fills g_no_peer; false if malformed. */
static bool parse_no_peer(const char *s, int ndev) {
    memset(g_no_peer, 0, sizeof g_no_peer);
    const char *p = s;
    if (*p == '\0')
        return true;
    for (;;) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return false;
        long a = strtol(p, &end, 10);
        if (*end != ':' || !isdigit((unsigned char)end[1]))
            return false;
        long b = strtol(end + 1, &end, 10);
        if (a >= ndev || b >= ndev || a == b)
            return false;
        g_no_peer[a][b] = g_no_peer[b][a] = true;
        if (*end == '\0')
            break;
        if (*end != ',')
            return false;
        p = end + 1;
    }
    return true;
}

/* Reads the emulator's environment for the runtime that fn brings up (aclInit, or the first
 * runtime call without it): a malformed value fails fn with 100000, naming the variable. */
static aclError read_environment(const char *fn) {
    const char *s = getenv("ACL_EMU_DEVICE_COUNT");
    int ndev = 1;
    if (s != NULL && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end != '\0' || v < 1 || v > RT_MAX_DEVICES)
            return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                          "ACL_EMU_DEVICE_COUNT (\"%.40s\") must be an integer in 1..%d", s,
                          RT_MAX_DEVICES);
        ndev = (int)v;
    }
    uint64_t cap = 16ull << 30;
    s = getenv("ACL_EMU_DEVICE_MEMORY");
    if (s != NULL && *s && !parse_bytes(s, &cap))
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                      "ACL_EMU_DEVICE_MEMORY (\"%.40s\") must be a positive byte count, "
                      "optionally with a K/M/G/T suffix", s);
    if (cap > (1ull << 46)) /* the arena reserves address space for it */
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                      "ACL_EMU_DEVICE_MEMORY (\"%.40s\") exceeds the emulator's 64 TiB limit", s);
    if (aclemu_soc_info(fn) == NULL) /* message set */
        return ACL_ERROR_INVALID_PARAM;
    int max_streams = RT_DEFAULT_MAX_STREAMS;
    s = getenv("ACL_EMU_MAX_STREAMS");
    if (s != NULL && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end != '\0' || v < 3 || v > 65536)
            return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                          "ACL_EMU_MAX_STREAMS (\"%.40s\") must be an integer in 3..65536", s);
        max_streams = (int)v;
    }
    s = getenv("ACL_EMU_NO_PEER");
    if (!parse_no_peer(s != NULL ? s : "", ndev))
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                      "ACL_EMU_NO_PEER (\"%.40s\") must be comma-separated pairs a:b of two "
                      "different machine device ids below ACL_EMU_DEVICE_COUNT (%d)", s, ndev);
    g_machine_ndev = ndev;
    for (int d = 0; d < RT_MAX_DEVICES; d++)
        g_phys[d] = d;
    g_visible_bad = false;
    g_visible[0] = '\0';
    s = getenv("ASCEND_RT_VISIBLE_DEVICES");
    if (s != NULL) {
        snprintf(g_visible, sizeof g_visible, "%s", s);
        int n = visible_devices(s, ndev);
        g_visible_bad = n < 0;
        ndev = n < 0 ? 0 : n;
    }
    g_ndev = ndev;
    g_mem_cap = cap;
    g_max_streams = max_streams;
    return ACL_SUCCESS;
}

/* Brings the runtime up unless it is (g_life write-locked): the environment read, no device
 * set, no peer access enabled. */
static aclError bring_up(const char *fn) {
    if (atomic_load(&g_runtime_up))
        return ACL_SUCCESS;
    aclError rc = read_environment(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    for (int d = 0; d < RT_MAX_DEVICES; d++) {
        g_dev[d].set_count = 0;
        g_dev[d].ctx_count = 0;
        atomic_fetch_add(&g_dev[d].gen, 1); /* no thread keeps a device across runtimes */
        for (int p = 0; p < RT_MAX_DEVICES; p++)
            atomic_store(&g_peer[d][p], false);
    }
    atomic_store_explicit(&g_runtime_up, true, memory_order_release);
    return ACL_SUCCESS;
}

aclError aclInit(const char *configPath) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INTERNAL_ERROR;
    pthread_rwlock_wrlock(&g_life);
    aclError rc = ACL_SUCCESS;
    if (atomic_load(&g_acl_initialized)) {
        rc = RT_ERR(ACL_ERROR_REPEAT_INITIALIZE, __func__,
                    "the runtime is already initialized (aclInit may be called once; "
                    "call aclFinalize first)");
        goto out;
    }
    if (configPath != NULL && *configPath != '\0' &&
        (rc = rt_check_config(__func__, configPath)) != ACL_SUCCESS)
        goto out;
    /* A runtime already brought up by earlier calls keeps its devices, streams and memory:
     * CANN's aclInit does not touch the runtime (src/acl/aclrt_impl/acl.cpp aclInitImpl). */
    rc = bring_up(__func__);
    if (rc != ACL_SUCCESS)
        goto out;
    g_finalized = false;
    atomic_store(&g_acl_initialized, true);
out:
    pthread_rwlock_unlock(&g_life);
    return rc;
}

/* As CANN's aclFinalizeImpl (hicann/runtime src/acl/aclrt_impl/acl.cpp): a second call after a
 * successful one is ACL_ERROR_REPEAT_FINALIZE; a call before any aclInit succeeds. CANN's
 * leaves the runtime as it is; the emulator's tears it down (docs/emulator.md). */

aclError aclFinalize(void) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INTERNAL_ERROR;
    aclError refused = rt_refuse_in_host_function(__func__);
    if (refused != ACL_SUCCESS)
        return refused;
    for (int d = 0; d < g_ndev; d++) /* as a reset of every open device */
        if (rt_device_open(d))
            rt_streams_notify_destroy(d);
    pthread_rwlock_wrlock(&g_life);
    if (g_finalized) {
        pthread_rwlock_unlock(&g_life);
        return RT_ERR(ACL_ERROR_REPEAT_FINALIZE, __func__,
                      "the runtime is already finalized (aclFinalize was called; call aclInit "
                      "first to use it again)");
    }
    g_finalized = true;
    atomic_store(&g_acl_initialized, false);
    if (!atomic_load(&g_runtime_up)) { /* nothing was brought up: nothing to release */
        pthread_rwlock_unlock(&g_life);
        return ACL_SUCCESS;
    }
    /* Streams first (their pending work may still read memory), then contexts, then memory. */
    for (int d = 0; d < g_ndev; d++) {
        teardown(d);
        g_dev[d].set_count = 0;
        g_dev[d].ctx_count = 0;
    }
    pthread_mutex_lock(&g_dev_mu);
    rt_context *c = g_contexts;
    g_contexts = NULL;
    pthread_mutex_unlock(&g_dev_mu);
    while (c != NULL) {
        rt_context *next = c->next;
        if (aclemu_handle_unregister(c, ACLEMU_KIND_CONTEXT))
            rt_obj_put(&c->hdr);
        c = next;
    }
    rt_memory_release_all();
    rt_host_registrations_release();
    atomic_store(&g_runtime_up, false);
    pthread_rwlock_unlock(&g_life);
    return ACL_SUCCESS;
}

/* ---- devices ------------------------------------------------------------------------- */

/* 107001 unless id, the argument named arg, is a device of the process. */
aclError rt_check_device_arg(const char *fn, const char *arg, int32_t id) {
    if (g_visible_bad)
        return RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                      "%s %d is not a device: ASCEND_RT_VISIBLE_DEVICES (\"%.40s\") is "
                      "refused (%s), so the process has none", arg, (int)id, g_visible,
                      g_visible_why);
    if (id < 0 || id >= g_ndev)
        return RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                      "%s %d is not a device (valid: 0..%d; ACL_EMU_DEVICE_COUNT%s%.40s%s)",
                      arg, (int)id, g_ndev - 1,
                      g_visible[0] ? " and ASCEND_RT_VISIBLE_DEVICES=\"" : "",
                      g_visible[0] ? g_visible : "", g_visible[0] ? "\"" : "");
    return ACL_SUCCESS;
}

static aclError check_id(const char *fn, int32_t id) {
    return rt_check_device_arg(fn, "deviceId", id);
}

aclError aclrtSetDevice(int32_t deviceId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = check_id(__func__, deviceId);
    if (rc == ACL_SUCCESS) {
        pthread_mutex_lock(&g_dev_mu);
        g_dev[deviceId].set_count++;
        set_current(deviceId, NULL);
        pthread_mutex_unlock(&g_dev_mu);
        rt_default_stream_start(deviceId); /* CANN's RawDevice::Start creates it */
    }
    rt_leave();
    return rc;
}

/* Drops one aclrtSetDevice reference of the device, or with `force` all of them (CANN's
 * aclrtResetDeviceForce drains the primary context's retain count: hicann/runtime
 * src/runtime/core/src/runtime.cc DecideForcePrimaryReleaseAction); the device is torn down
 * once no reference and no context of its own is left. */
static aclError reset_device(const char *fn, int32_t deviceId, bool force) {
    if (aclemu_fault(fn))
        return rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
    notify_streams_before_teardown(deviceId, force);
    aclError rc = enter_write(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = check_id(fn, deviceId);
    if (rc == ACL_SUCCESS) {
        rt_device *d = &g_dev[deviceId];
        if (d->set_count == 0) {
            /* CANN finds no primary context to release (hicann/runtime
             * src/runtime/core/src/runtime.cc PrimaryContextRelease): 507007. */
            rc = RT_ERR(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, fn,
                        "deviceId %d has not been set by this process (%s)", (int)deviceId,
                        force ? "aclrtSetDevice first"
                              : "aclrtSetDevice and aclrtResetDevice calls must pair");
        } else {
            d->set_count = force ? 0 : d->set_count - 1;
            if (d->set_count == 0 && d->ctx_count == 0)
                teardown(deviceId);
        }
    }
    pthread_rwlock_unlock(&g_life);
    return rc;
}

aclError aclrtResetDevice(int32_t deviceId) { return reset_device(__func__, deviceId, false); }

aclError aclrtResetDeviceForce(int32_t deviceId) {
    return reset_device(__func__, deviceId, true);
}

aclError aclrtGetDevice(int32_t *deviceId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (deviceId == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "deviceId (output pointer) is NULL");
    else if ((rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS)
        *deviceId = dev;
    rt_leave();
    return rc;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (count == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "count (output pointer) is NULL");
    else if (g_visible_bad)
        rc = RT_ERR(ACL_ERROR_RT_NO_DEVICE, __func__,
                    "ASCEND_RT_VISIBLE_DEVICES (\"%.40s\") is refused: %s (a comma-separated "
                    "list of the machine's device ids, e.g. 0,3,5)", g_visible, g_visible_why);
    else
        *count = (uint32_t)g_ndev;
    rt_leave();
    return rc;
}

aclError rt_check_timeout(const char *fn, int32_t timeout, bool acl_layer) {
    /* Below -1 is the ACL layer's check in all three calls (no last error); 0 the runtime's. */
    if (timeout < -1)
        return ACL_LAYER_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                             "timeout %d is invalid: -1 (wait without a limit) or a number of "
                             "milliseconds from 1 up", (int)timeout);
    if (!acl_layer && timeout == 0)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "timeout 0 is invalid: -1 (wait without a limit) or a number of "
                      "milliseconds from 1 up (0 is refused by CANN's runtime, whatever the "
                      "header's comment says)");
    return ACL_SUCCESS;
}

/* aclrtSynchronizeDevice (timeout_ms -1, no check) and aclrtSynchronizeDeviceWithTimeout. */
static aclError synchronize_device(int32_t timeout_ms, bool timed, const char *fn) {
    char fault_msg[256];
    bool fault = rt_fault_deferred(fn, fault_msg, sizeof fault_msg); /* after the wait */
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_enter(fn);
    if (rc == ACL_SUCCESS) {
        int dev;
        /* CANN's order (hicann/runtime src/acl/aclrt_impl/device.cpp, src/runtime/api/impl/
         * api_error.cc and api_impl.cc DeviceSynchronize): the timeout, then the context. */
        if ((!timed || (rc = rt_check_timeout(fn, timeout_ms, false)) == ACL_SUCCESS) &&
            (rc = rt_need_device(fn, &dev)) == ACL_SUCCESS)
            rc = rt_streams_sync_device(dev, timeout_ms, fn);
        rt_leave();
    }
    if (fault)
        rc = rt_fault_report(fault_msg);
    return rc;
}

aclError aclrtSynchronizeDevice(void) { return synchronize_device(-1, false, __func__); }

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
    return synchronize_device(timeout, true, __func__);
}

/* ---- peer access ----------------------------------------------------------------------- */
/* As the vendor's ACL layer and runtime check them (hicann/runtime src/acl/aclrt_impl/
 * memory.cpp aclrtDeviceCanAccessPeerImpl, aclrtDeviceEnablePeerAccessImpl,
 * aclrtDeviceDisablePeerAccessImpl, aclrtDevicePeerAccessStatusImpl; src/runtime/api/impl/
 * api_error.cc DeviceCanAccessPeer, EnableP2P, DisableP2P, GetP2PStatus; codes from
 * src/runtime/core/src/common/errcode_manage.cc). Emulated devices all reach each other but
 * the pairs ACL_EMU_NO_PEER names. */

/* A device id the runtime layer converts (ChgUserDevIdToDeviceId) and then bounds by
 * RT_MAX_DEV_NUM: without ASCEND_RT_VISIBLE_DEVICES the conversion keeps the id, so an id
 * from 64 up (a negative one too, as unsigned) fails the bound (107000); any other id that is
 * not a device is the driver's (or the conversion's) 107001. */
static aclError check_runtime_id(const char *fn, const char *arg, int32_t id) {
    if (!g_visible[0] && !g_visible_bad && (uint32_t)id >= RT_MAX_DEVICES)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "%s %d is out of range [0, %d)", arg,
                      (int)id, RT_MAX_DEVICES);
    return rt_check_device_arg(fn, arg, id);
}

static aclError check_not_same(const char *fn, int32_t dev, int32_t peer) {
    if (dev == peer)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                      "peerDeviceId %d is the device itself (deviceId %d): a device is not its "
                      "own peer", (int)peer, (int)dev);
    return ACL_SUCCESS;
}

static bool pair_can_reach(int dev, int peer) {
    return !g_no_peer[g_phys[dev]][g_phys[peer]];
}

bool rt_peer_enabled(int dev, int peer) {
    return atomic_load_explicit(&g_peer[dev][g_phys[peer]], memory_order_relaxed);
}

aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    /* the ACL layer's check first, then the peer's physical id, then the runtime's checks of
     * deviceId and the output pointer */
    if ((rc = check_not_same(__func__, deviceId, peerDeviceId)) == ACL_SUCCESS &&
        (rc = rt_check_device_arg(__func__, "peerDeviceId", peerDeviceId)) == ACL_SUCCESS &&
        (rc = check_runtime_id(__func__, "deviceId", deviceId)) == ACL_SUCCESS) {
        if (canAccessPeer == NULL)
            rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                        "canAccessPeer (output pointer) is NULL");
        else
            *canAccessPeer = pair_can_reach(deviceId, peerDeviceId) ? 1 : 0;
    }
    rt_leave();
    return rc;
}

/* aclrtDeviceEnablePeerAccess (enable) and aclrtDeviceDisablePeerAccess: the current device's
 * access to peerDeviceId. */
static aclError set_peer_access(const char *fn, int32_t peerDeviceId, uint32_t flags,
                                bool enable) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (enable && flags != 0)
        rc = RT_ERR(ACL_ERROR_FEATURE_UNSUPPORTED, fn,
                    "flags (%u) is reserved and must be 0", (unsigned)flags);
    else if ((rc = rt_need_device(fn, &dev)) == ACL_SUCCESS &&
             (rc = check_not_same(fn, dev, peerDeviceId)) == ACL_SUCCESS &&
             (rc = rt_check_device_arg(fn, "peerDeviceId", peerDeviceId)) == ACL_SUCCESS) {
        if (enable && !pair_can_reach(dev, peerDeviceId))
            rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                        "device %d cannot access peerDeviceId %d (no P2P link between them: "
                        "ACL_EMU_NO_PEER; aclrtDeviceCanAccessPeer reports 0)", dev,
                        (int)peerDeviceId);
        else
            atomic_store(&g_peer[dev][g_phys[peerDeviceId]], enable);
    }
    rt_leave();
    return rc;
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
    return set_peer_access(__func__, peerDeviceId, flags, true);
}

aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
    return set_peer_access(__func__, peerDeviceId, 0, false);
}

aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId, int32_t *status) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (status == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "status (output pointer) is NULL");
    else if ((rc = check_runtime_id(__func__, "deviceId", deviceId)) != ACL_SUCCESS)
        ;
    else if ((uint32_t)peerDeviceId >= (uint32_t)g_machine_ndev)
        /* peerDeviceId is a physical id: the runtime bounds it by RT_MAX_DEV_NUM, the API
         * reference allows 107000 for any id outside the machine's devices */
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "peerDeviceId %d is not a physical device id of this machine (valid: "
                    "0..%d)", (int)peerDeviceId, g_machine_ndev - 1);
    else
        *status = atomic_load(&g_peer[deviceId][peerDeviceId]) ? 1 : 0;
    rt_leave();
    return rc;
}

/* ---- contexts ------------------------------------------------------------------------ */

static void context_free(rt_obj *o) { free(o); }

static bool is_default_context(const void *p, int *dev) {
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)&g_dev[0].default_ctx;
    if (a < lo || a > (uintptr_t)&g_dev[RT_MAX_DEVICES - 1].default_ctx)
        return false;
    if ((a - lo) % sizeof(rt_device) != 0)
        return false;
    *dev = (int)((a - lo) / sizeof(rt_device));
    return true;
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_MEMORY_ALLOCATION);
    if (rc != ACL_SUCCESS)
        return rc;
    if (context == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "context (output pointer) is NULL");
    } else if ((rc = check_id(__func__, deviceId)) == ACL_SUCCESS) {
        rt_context *c = calloc(1, sizeof *c);
        if (c == NULL) {
            rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
        } else {
            atomic_init(&c->hdr.refs, 1);
            c->hdr.free_fn = context_free;
            c->device = deviceId;
            pthread_mutex_lock(&g_dev_mu);
            g_dev[deviceId].ctx_count++;
            c->next = g_contexts;
            g_contexts = c;
            set_current(deviceId, c);
            pthread_mutex_unlock(&g_dev_mu);
            rt_default_stream_start(deviceId);
            aclemu_handle_register(c, ACLEMU_KIND_CONTEXT);
            *context = c;
        }
    }
    rt_leave();
    return rc;
}

aclError aclrtDestroyContext(aclrtContext context) {
    aclError rc = begin_write(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    /* CANN's runtime (hicann/runtime src/runtime/api/impl/api_impl.cc ContextDestroy): a
     * handle that is no live context, or the primary (default) one, is RT_ERROR_CONTEXT_NULL
     * (107002). */
    if (context == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "context is NULL");
    } else if (is_default_context(context, &dev)) {
        rc = RT_ERR(ACL_ERROR_RT_CONTEXT_NULL, __func__,
                    "context %p is device %d's default context, which aclrtResetDevice "
                    "releases; only contexts from aclrtCreateContext can be destroyed",
                    context, dev);
    } else if (!aclemu_handle_unregister(context, ACLEMU_KIND_CONTEXT)) {
        rc = RT_ERR(ACL_ERROR_RT_CONTEXT_NULL, __func__,
                    "context %p is not a live context (never created or already destroyed)",
                    context);
    } else {
        rt_context *c = context;
        pthread_mutex_lock(&g_dev_mu);
        for (rt_context **pp = &g_contexts; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
        rt_device *d = &g_dev[c->device];
        bool last = --d->ctx_count == 0 && d->set_count == 0;
        pthread_mutex_unlock(&g_dev_mu);
        if (tl_ctx == c)
            tl_ctx = NULL;
        if (last)
            teardown(c->device);
        rt_obj_put(&c->hdr);
    }
    pthread_rwlock_unlock(&g_life);
    return rc;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    /* CANN's runtime (api_error.cc ContextSetCurrent: CHECK_CONTEXT_VALID_WITH_RETURN): a
     * handle that is no live context is RT_ERROR_INVALID_VALUE (107000). */
    if (context == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "context is NULL");
    } else if (is_default_context(context, &dev)) {
        pthread_mutex_lock(&g_dev_mu);
        if (dev < g_ndev && (g_dev[dev].set_count > 0 || g_dev[dev].ctx_count > 0))
            set_current(dev, NULL);
        else
            rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                        "context %p is the default context of device %d, which is not set",
                        context, dev);
        pthread_mutex_unlock(&g_dev_mu);
    } else if (rt_handle_acquire(context, ACLEMU_KIND_CONTEXT)) {
        rt_context *c = context;
        set_current(c->device, c);
        rt_obj_put(&c->hdr);
    } else {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "context %p is not a live context (never created or already destroyed)",
                    context);
    }
    rt_leave();
    return rc;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (context == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "context (output pointer) is NULL");
    } else if ((rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS) {
        if (tl_ctx != NULL && aclemu_handle_check(tl_ctx, ACLEMU_KIND_CONTEXT))
            *context = tl_ctx;
        else
            *context = &g_dev[dev].default_ctx;
    }
    rt_leave();
    return rc;
}

/* ---- system parameter options ----------------------------------------------------------
 * hicann/runtime src/acl/aclrt_impl/context.cpp (Get/SetSysParamOpt), src/runtime/api/api_c.cc
 * (rtCtxSetSysParamOpt, rtSetSysParamOpt, rtGetSysParamOpt), api/impl/api_error.cc (the value
 * ranges), api/impl/api_impl.cc and core/src/context/context.cc (the context's values):
 * - the ctx calls take options 0..2, the process calls 0..3, else ACL_ERROR_INVALID_PARAM
 *   (100000); a NULL value pointer 100000 first;
 * - a value outside [0, 4) for ACL_OPT_DETERMINISTIC, [0, 2) for the others: 107000;
 * - the ctx calls act on the calling thread's current context (no device: 107002); a context
 *   that never set opt answers 107021 (it does not fall back to the process's value);
 * - aclrtCtxSetSysParamOpt also stores the value as the process's (rtCtxSetSysParamOpt), which
 *   is what the operators read (opbase's GetGlobalDeterministic calls aclrtGetSysParamOpt);
 * - the process's values start at 0. */
#define SYS_OPTS 4
static _Atomic int64_t g_sys_opt[SYS_OPTS];

static const char *const SYS_OPT_NAME[SYS_OPTS] = {
    "ACL_OPT_DETERMINISTIC(0)", "ACL_OPT_ENABLE_DEBUG_KERNEL(1)",
    "ACL_OPT_STRONG_CONSISTENCY(2)", "ACL_OPT_ENABLE_KERNEL_EARLY_START(3)"};

/* 100000 unless opt < nopts (the options the call takes), then 107000 unless value fits. */
static aclError sys_opt_check(const char *fn, int opt, int nopts, const int64_t *value,
                              bool check_value) {
    if (opt < 0 || opt >= nopts)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "opt %d is not one of the options 0..%d "
                      "(ACL_OPT_DETERMINISTIC(0) .. %s)", opt, nopts - 1,
                      SYS_OPT_NAME[nopts - 1]);
    const int64_t max = opt == ACL_OPT_DETERMINISTIC ? 4 : 2;
    if (check_value && (*value < 0 || *value >= max))
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "value %lld of %s is not in [0, %lld)",
                      (long long)*value, SYS_OPT_NAME[opt], (long long)max);
    return ACL_SUCCESS;
}

/* The calling thread's current context's option arrays (g_dev_mu held by the caller). */
static void current_opts(int dev, bool **set, int64_t **val) {
    if (tl_ctx != NULL && aclemu_handle_check(tl_ctx, ACLEMU_KIND_CONTEXT)) {
        *set = tl_ctx->opt_set;
        *val = tl_ctx->opt_val;
    } else {
        *set = g_dev[dev].opt_set;
        *val = g_dev[dev].opt_val;
    }
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if ((rc = sys_opt_check(__func__, (int)opt, RT_CTX_OPTS, &value, true)) == ACL_SUCCESS &&
        (rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS) {
        bool *set;
        int64_t *val;
        pthread_mutex_lock(&g_dev_mu);
        current_opts(dev, &set, &val);
        set[opt] = true;
        val[opt] = value;
        pthread_mutex_unlock(&g_dev_mu);
        atomic_store(&g_sys_opt[opt], value);
    }
    rt_leave();
    return rc;
}

aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (value == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    } else if ((rc = sys_opt_check(__func__, (int)opt, RT_CTX_OPTS, value, false)) ==
                   ACL_SUCCESS &&
               (rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS) {
        bool *set;
        int64_t *val;
        pthread_mutex_lock(&g_dev_mu);
        current_opts(dev, &set, &val);
        if (set[opt])
            *value = val[opt];
        else
            rc = RT_ERR(ACL_ERROR_RT_SYSPARAMOPT_NOT_SET, __func__,
                        "%s was never set in the current context (aclrtCtxSetSysParamOpt)",
                        SYS_OPT_NAME[opt]);
        pthread_mutex_unlock(&g_dev_mu);
    }
    rt_leave();
    return rc;
}

aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = sys_opt_check(__func__, (int)opt, SYS_OPTS, &value, true)) == ACL_SUCCESS)
        atomic_store(&g_sys_opt[opt], value);
    rt_leave();
    return rc;
}

aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (value == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    else if ((rc = sys_opt_check(__func__, (int)opt, SYS_OPTS, value, false)) == ACL_SUCCESS)
        *value = atomic_load(&g_sys_opt[opt]);
    rt_leave();
    return rc;
}
