/*
 * What a program asks about its devices (aclrtGetRunMode, aclrtGetDeviceInfo,
 * aclrtDeviceGetStreamPriorityRange, aclrtQueryDeviceStatus, aclrtGetDeviceUtilizationRate),
 * the process's core limits (aclrtSetDeviceResLimit, aclrtGetDeviceResLimit,
 * aclrtResetDeviceResLimit, aclrtGetResInCurrentThread) and the current context's default
 * stream (aclrtCtxGetCurrentDefaultStream).
 *
 * The checks, their order and codes are CANN's: the ACL layer (hicann/runtime
 * src/acl/aclrt_impl/device.cpp and context.cpp, the *Impl functions: NULL outputs first,
 * 100000), then the runtime's (src/runtime/api/api_c_device.cc, api/impl/api_error.cc and
 * api_impl.cc; codes mapped in src/runtime/core/src/common/errcode_manage.cc). A device's
 * figures are its part's (ACL_EMU_SOC): the core counts and L2 size of the vendor's platform
 * configuration for that part (src/platform/platform_config/cann and cann-dev, one .ini file per part); see
 * docs/emulator.md, "Device information".
 */
#include <stdatomic.h>
#include <string.h>

#include "rt_internal.h"

/* The emulator is a host program driving its devices, as on a server with Ascend cards.
 * CANN's ACL layer checks the pointer (100000); the runtime asks the driver and needs no
 * context (api_impl.cc GetRunMode). Neither needs aclInit. */
aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_RT_INTERNAL_ERROR;
    if (runMode == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "runMode (output pointer) is NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

/* ---- a part's figures ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int ai_cores, cube_cores, vector_cores, ai_cpus;
    int64_t l2_bytes;
    bool has_cube_count;
    int64_t ub_bytes;
} part_figures;

/* ai_core_cnt, cube_core_cnt (ai_core_cnt where the file has none, has_cube_count false: the
 * Atlas training and inference parts' AI cores are their cube units), vector_core_cnt (0
 * where none), ai_cpu_cnt, l2_size, ub_size of each part's platform configuration file
 * (runtime/src/platform/platform_config/{cann,cann-dev}/<part>.ini). */
static const part_figures PARTS[] = {
    {"Ascend910A", 32, 32, 0, 4, 33554432, false, 262144},
    {"Ascend910B", 30, 30, 0, 6, 33554432, false, 262144},
    {"Ascend910ProA", 32, 32, 0, 4, 33554432, false, 262144},
    {"Ascend910ProB", 30, 30, 0, 4, 33554432, false, 262144},
    {"Ascend910PremiumA", 32, 32, 0, 4, 33554432, false, 262144},
    {"Ascend310P1", 10, 10, 8, 8, 16777216, false, 262144},
    {"Ascend310P3", 8, 8, 7, 7, 16777216, false, 262144},
    {"Ascend310P5", 8, 8, 7, 8, 16777216, false, 262144},
    {"Ascend310P7", 8, 8, 7, 8, 16777216, false, 262144},
    {"Ascend910B1", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend910B2", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend910B2C", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend910B3", 20, 20, 40, 6, 201326592, true, 196608},
    {"Ascend910B4", 20, 20, 40, 6, 100663296, true, 196608},
    {"Ascend910B4-1", 20, 20, 40, 6, 176160768, true, 196608},
    {"Ascend910_9362", 20, 20, 40, 6, 176160768, true, 196608},
    {"Ascend910_9363", 20, 20, 40, 6, 176160768, true, 196608},
    {"Ascend910_9372", 20, 20, 40, 6, 201326592, true, 196608},
    {"Ascend910_9381", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend910_9382", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend910_9391", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend910_9392", 24, 24, 48, 6, 201326592, true, 196608},
    {"Ascend950DT_950x", 8, 8, 16, 5, 33554432, true, 253952},
    {"Ascend950DT_950y", 8, 8, 16, 5, 33554432, true, 253952},
    {"Ascend950DT_9571", 28, 28, 56, 7, 134217728, true, 253952},
    {"Ascend950DT_9572", 28, 28, 56, 7, 134217728, true, 253952},
    {"Ascend950DT_9573", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950DT_9574", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950DT_9575", 28, 28, 56, 7, 134217728, true, 253952},
    {"Ascend950DT_9576", 28, 28, 56, 7, 134217728, true, 253952},
    {"Ascend950DT_9577", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950DT_9578", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950DT_9581", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950DT_9581x", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950DT_9582", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950DT_9582x", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950DT_9583", 32, 32, 64, 7, 117440512, true, 253952},
    {"Ascend950DT_9584", 32, 32, 64, 7, 117440512, true, 253952},
    {"Ascend950DT_9585", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950DT_9586", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950DT_9587", 32, 32, 64, 7, 117440512, true, 253952},
    {"Ascend950DT_9588", 32, 32, 64, 7, 117440512, true, 253952},
    {"Ascend950DT_9591", 36, 36, 72, 6, 134217728, true, 253952},
    {"Ascend950DT_9592", 36, 36, 72, 6, 134217728, true, 253952},
    {"Ascend950DT_9595", 36, 36, 72, 6, 134217728, true, 253952},
    {"Ascend950DT_9596", 36, 36, 72, 6, 134217728, true, 253952},
    {"Ascend950DT_95A1", 36, 36, 72, 6, 134217728, true, 253952},
    {"Ascend950DT_95A2", 36, 36, 72, 6, 134217728, true, 253952},
    {"Ascend950PR_950z", 4, 4, 8, 5, 16777216, true, 253952},
    {"Ascend950PR_9579", 28, 28, 56, 7, 134217728, true, 253952},
    {"Ascend950PR_957b", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950PR_957bx", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950PR_957c", 28, 28, 56, 5, 117440512, true, 253952},
    {"Ascend950PR_957d", 28, 28, 56, 5, 100663296, true, 253952},
    {"Ascend950PR_9589", 32, 32, 64, 6, 134217728, true, 253952},
    {"Ascend950PR_958b", 32, 32, 64, 7, 117440512, true, 253952},
    {"Ascend950PR_9599", 36, 36, 72, 6, 134217728, true, 253952},
};

static const part_figures *figures(void) {
    const aclemu_soc *soc = aclemu_soc_info("the runtime");
    if (soc != NULL)
        for (size_t i = 0; i < sizeof PARTS / sizeof PARTS[0]; i++)
            if (strcmp(PARTS[i].name, soc->name) == 0)
                return &PARTS[i];
    return &PARTS[0]; /* not reached: aclInit refuses a part the emulator does not know */
}

/* The part's vector core count (GetCoreNumAiv in the operators' tiling: how many rows a kernel
 * spreads over before a row block holds more than one row). */
ACLEMU_EXPORT int aclemu_soc_vector_cores(void) {
    const part_figures *p = figures();
    return p->vector_cores > 0 ? p->vector_cores : p->ai_cores;
}

/* The part's Unified Buffer bytes per core (ub_size: what the tilings read as
 * GetCoreMemSize(UB)). */
ACLEMU_EXPORT int64_t aclemu_soc_ub_bytes(void) {
    return figures()->ub_bytes;
}

/* The part's AI core count (ai_core_cnt of its platform configuration). */
ACLEMU_EXPORT int aclemu_soc_ai_cores(void) {
    return figures()->ai_cores;
}

static bool is_950(void) {
    const aclemu_soc *soc = aclemu_soc_info("the runtime");
    return soc != NULL && soc->npu_arch == 3510;
}

/* The process's core limits (below): 0 means "the total" (not limited), else limit + 1. */
static _Atomic uint32_t g_limit[RT_MAX_DEVICES][2];
static uint32_t core_limit(int dev, aclrtDevResLimitType type);

/* ---- aclrtGetDeviceInfo ------------------------------------------------------------------ */

/* The SIMT figures of the parts that have SIMT units (Ascend 950: src/runtime/config/950/
 * dev_info_reg.cc with core/inc/base_david.hpp and device/device_properties.h); other parts'
 * configurations give 0 (config/910_B_93, cloud, mini_v3, ...). */
static int64_t simt_figure(aclrtDevAttr attr) {
    if (!is_950())
        return 0;
    switch (attr) {
    case ACL_DEV_ATTR_WARP_SIZE: return 32;
    case ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE: return 32 * 64;
    case ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE: return (256 - 32 - 8) * 1024;
    case ACL_DEV_ATTR_MAX_GRID_DIM_X:
    case ACL_DEV_ATTR_MAX_GRID_DIM_Y:
    case ACL_DEV_ATTR_MAX_GRID_DIM_Z:
    case ACL_DEV_ATTR_MAX_BLOCK_PER_GRID: return 65535;
    default: return 2048; /* threads per block, block dimensions */
    }
}

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const part_figures *p = figures();
    if (value == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    } else if (deviceId >= (uint32_t)rt_device_count()) {
        /* the runtime converts the id, then bounds it by the driver's count: 107000 */
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "deviceId %u is not a device of this process (valid: 0..%d)",
                    (unsigned)deviceId, rt_device_count() - 1);
    } else {
        int dev = (int)deviceId;
        int64_t v = 0;
        switch ((int)attr) {
        case ACL_DEV_ATTR_AICPU_CORE_NUM: v = p->ai_cpus; break;
        case ACL_DEV_ATTR_AICORE_CORE_NUM: v = p->ai_cores; break;
        case ACL_DEV_ATTR_CUBE_CORE_NUM:
            /* read from the platform configuration, which a cube limit rewrites (api_impl.cc
             * GetDeviceInfoByAttrMisc, UpdatePlatformRes); a part whose file has no
             * cube_core_cnt has none to read until a limit writes one (107000) */
            if (atomic_load(&g_limit[dev][ACL_RT_DEV_RES_CUBE_CORE]) != 0)
                v = core_limit(dev, ACL_RT_DEV_RES_CUBE_CORE);
            else if (p->has_cube_count)
                v = p->cube_cores;
            else
                rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                            "attr ACL_DEV_ATTR_CUBE_CORE_NUM: %s's platform configuration has "
                            "no cube core count (its AI cores: ACL_DEV_ATTR_AICORE_CORE_NUM)",
                            p->name);
            break;
        case ACL_DEV_ATTR_VECTOR_CORE_NUM: v = p->vector_cores; break;
        case ACL_DEV_ATTR_WARP_SIZE: case ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE:
        case ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE: case ACL_DEV_ATTR_MAX_GRID_DIM_X:
        case ACL_DEV_ATTR_MAX_GRID_DIM_Y: case ACL_DEV_ATTR_MAX_GRID_DIM_Z:
        case ACL_DEV_ATTR_MAX_BLOCK_PER_GRID: case ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK:
        case ACL_DEV_ATTR_MAX_BLOCK_DIM_X: case ACL_DEV_ATTR_MAX_BLOCK_DIM_Y:
        case ACL_DEV_ATTR_MAX_BLOCK_DIM_Z: v = simt_figure(attr); break;
        case ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: v = (int64_t)rt_device_memory_cap(); break;
        case ACL_DEV_ATTR_L2_CACHE_SIZE: v = p->l2_bytes; break;
        /* one server, one operating system, no super pod: the physical id is the chip's */
        case ACL_DEV_ATTR_SMP_ID: v = 0; break;
        case ACL_DEV_ATTR_PHY_CHIP_ID: v = rt_physical_device(dev); break;
        case ACL_DEV_ATTR_SUPER_POD_DEVICE_ID: v = rt_physical_device(dev); break;
        case ACL_DEV_ATTR_SUPER_POD_SERVER_ID: v = 0; break;
        case ACL_DEV_ATTR_SUPER_POD_ID: v = 0; break;
        case ACL_DEV_ATTR_CUST_OP_PRIVILEGE: v = 0; break;
        case ACL_DEV_ATTR_MAINBOARD_ID: v = 0; break;
        case ACL_DEV_ATTR_HD_CONNECT_TYPE: v = ACL_HOST_DEVICE_CONNECT_TYPE_PCIE; break;
        case ACL_DEV_ATTR_DEVICE_FORM_FACTOR: v = ACL_DEVICE_FORM_FACTOR_PCIE_CARD; break;
        case ACL_DEV_ATTR_IS_VIRTUAL: v = 0; break;
        case ACL_DEV_ATTR_NPU_ARCH: v = aclemu_soc_info(__func__)->npu_arch; break;
        default:
            rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                        "attr %d is not an aclrtDevAttr (ACL_DEV_ATTR_*)", (int)attr);
        }
        if (rc == ACL_SUCCESS)
            *value = v;
    }
    rt_leave();
    return rc;
}

/* ---- stream priorities, status, utilization -------------------------------------------- */

/* CANN's runtime (src/runtime/core/inc/spec/base_info.hpp): 7 is the least priority, 0 the
 * greatest; either pointer may be NULL; no device needed. */
aclError aclrtDeviceGetStreamPriorityRange(int32_t *leastPriority, int32_t *greatestPriority) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (leastPriority != NULL)
        *leastPriority = 7;
    if (greatestPriority != NULL)
        *greatestPriority = 0;
    rt_leave();
    return ACL_SUCCESS;
}

/* Any id that is no device of the process: 107001 (the runtime's conversion and
 * CheckDeviceIdIsValid). An emulated device never fails: always normal. */
aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus *deviceStatus) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (deviceStatus == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "deviceStatus (output pointer) is NULL");
    else if (deviceId < 0 || deviceId >= rt_device_count())
        rc = RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, __func__,
                    "deviceId %d is not a device of this process (valid: 0..%d)", (int)deviceId,
                    rt_device_count() - 1);
    else
        *deviceStatus = ACL_RT_DEVICE_STATUS_NORMAL;
    rt_leave();
    return rc;
}

/* CANN's ACL layer asks the runtime for each figure and puts -1 where it fails, returning
 * success (device.cpp GetAllUtilizations): the runtime fails unless the calling thread's
 * context is on deviceId (api_impl.cc GetAllUtilizations, CheckCurCtxValid); memory is never
 * measured (-1). An emulated device is measured idle at the instant of the query: 0. */
aclError aclrtGetDeviceUtilizationRate(int32_t deviceId, aclrtUtilizationInfo *utilizationInfo) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (utilizationInfo == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "utilizationInfo (output pointer) is NULL");
    } else if (utilizationInfo->utilizationExtend != NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                    "utilizationInfo->utilizationExtend is reserved and must be NULL");
    } else {
        int32_t measured = rt_current_device() == deviceId && deviceId >= 0 ? 0 : -1;
        utilizationInfo->cubeUtilization = measured;
        utilizationInfo->vectorUtilization = measured;
        utilizationInfo->aicpuUtilization = measured;
        utilizationInfo->memoryUtilization = -1;
    }
    rt_leave();
    return rc;
}

/* ---- core limits ------------------------------------------------------------------------ */

/* g_limit: per device, as CANN keeps them on its device object (src/runtime/core/src/device/
 * raw_device_res.cc); gone with the device. */

static uint32_t core_total(aclrtDevResLimitType type) {
    const part_figures *p = figures();
    return (uint32_t)(type == ACL_RT_DEV_RES_CUBE_CORE ? p->ai_cores : p->vector_cores);
}

static uint32_t core_limit(int dev, aclrtDevResLimitType type) {
    uint32_t v = atomic_load(&g_limit[dev][type]);
    return v ? v - 1 : core_total(type);
}

void rt_devinfo_device_gone(int dev) {
    atomic_store(&g_limit[dev][0], 0);
    atomic_store(&g_limit[dev][1], 0);
}

static bool bad_type(aclrtDevResLimitType type) { return (uint32_t)type >= 2; }

static aclError bad_type_error(const char *fn, aclrtDevResLimitType type) {
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                  "type %d is not an aclrtDevResLimitType (ACL_RT_DEV_RES_CUBE_CORE 0 or "
                  "ACL_RT_DEV_RES_VECTOR_CORE 1)", (int)type);
}

/* The runtime's device checks of the three calls (api_c_device.cc: a negative id; then
 * api_error.cc: the conversion and CheckDeviceIdIsValid, both 107001; then api_impl.cc: no
 * device object unless the process holds the device, RT_ERROR_DEVICE_NULL = 507033). */
static aclError check_limit_device(const char *fn, int32_t deviceId, bool negative_only) {
    if (deviceId < 0 || (!negative_only && deviceId >= rt_device_count()))
        return RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                      "deviceId %d is not a device of this process (valid: 0..%d)",
                      (int)deviceId, rt_device_count() - 1);
    if (!negative_only && !rt_device_open(deviceId))
        return RT_ERR(ACL_ERROR_RT_DEV_SETUP_ERROR, fn,
                      "deviceId %d is not set by this process (call aclrtSetDevice first: the "
                      "limits belong to a device in use)", (int)deviceId);
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (value == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    else if ((rc = check_limit_device(__func__, deviceId, true)) != ACL_SUCCESS)
        ;
    else if (bad_type(type))
        rc = bad_type_error(__func__, type);
    else if ((rc = check_limit_device(__func__, deviceId, false)) == ACL_SUCCESS)
        *value = core_limit(deviceId, type);
    rt_leave();
    return rc;
}

aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = check_limit_device(__func__, deviceId, true)) != ACL_SUCCESS)
        ;
    else if (bad_type(type))
        rc = bad_type_error(__func__, type);
    else if ((rc = check_limit_device(__func__, deviceId, false)) != ACL_SUCCESS)
        ;
    else if (value > core_total(type))
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "value %u exceeds the device's %u %s cores (%s)", (unsigned)value,
                    (unsigned)core_total(type), type == ACL_RT_DEV_RES_CUBE_CORE ? "cube" : "vector",
                    aclemu_soc_info(__func__)->name);
    else
        atomic_store(&g_limit[deviceId][type], value + 1);
    rt_leave();
    return rc;
}

aclError aclrtResetDeviceResLimit(int32_t deviceId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = check_limit_device(__func__, deviceId, false)) == ACL_SUCCESS)
        rt_devinfo_device_gone(deviceId);
    rt_leave();
    return rc;
}

/* No stream limits are emulated (aclrtSetStreamResLimit is not declared), so a thread may use
 * its device's limit (api_impl.cc GetResInCurrentThread); no device: 107002. */
aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, uint32_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (value == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    else if (bad_type(type))
        rc = bad_type_error(__func__, type);
    else if ((rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS)
        *value = core_limit(dev, type);
    rt_leave();
    return rc;
}

/* ---- the default stream --------------------------------------------------------------- */

/* The calling thread's device's default stream as a handle (context.cpp, api_impl.cc
 * CtxGetCurrentDefaultStream: no context 107002). Emulated contexts of a device share its
 * default stream. */
aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s;
    if (stream == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "stream (output pointer) is NULL");
    else if ((rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS &&
             (rc = rt_stream_get(NULL, dev, __func__, &s)) == ACL_SUCCESS) {
        *stream = s; /* the device's until it is reset: the caller holds no reference */
        rt_stream_put(s);
    }
    rt_leave();
    return rc;
}

/* ---- device capabilities (aclrtGetDeviceCapability) ------------------------------------- */

/* hicann/runtime src/acl/aclrt_impl/device.cpp, src/runtime/api/api_c_device.cc
 * rtsDeviceGetCapability, api/impl/api_error.cc and api_impl.cc GetDeviceCapability: NULL
 * value 100000; a type outside the runtime's [0, RT_DEV_FEATURE_MAX) or none it answers
 * 107000; a device id outside 0..count-1 107001 (CheckDeviceIdIsValid). The answers:
 * ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV where the part has the kernel tiling-key sink
 * (src/runtime/config/910_B_93, 950, dc dev_info_reg.cc RT_FEATURE_KERNEL_TILING_KEY_SINK:
 * Atlas A2/A3, Ascend 950, the Atlas inference series; its task scheduler firmware taken to
 * have it too, api_impl.cc GetModelTaskUpdateIsSupport); ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV
 * 0: the driver's queue events (npu_driver_queue.cc MemQEventCrossDevSupported), which the
 * emulator has no driver nor queue calls for. The runtime's own types (10001 AICPU schedule
 * type, 20001 task id width: not in aclrtDevFeatureType) are refused, 107000. */
aclError aclrtGetDeviceCapability(int32_t deviceId, aclrtDevFeatureType devFeatureType,
                                  int32_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int type = (int)devFeatureType;
    if (value == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    } else if (type != ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV &&
               type != ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "devFeatureType %d is not ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV (1) "
                    "or ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV (21)", type);
    } else if (deviceId < 0 || deviceId >= rt_device_count()) {
        rc = RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, __func__,
                    "deviceId %d is not a device of this process (valid: 0..%d)", (int)deviceId,
                    rt_device_count() - 1);
    } else if (type == ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV) {
        *value = aclemu_soc_info(__func__)->npu_arch >= 2002 ? ACL_DEV_FEATURE_SUPPORT
                                                              : ACL_DEV_FEATURE_NOT_SUPPORT;
    } else {
        *value = ACL_DEV_FEATURE_NOT_SUPPORT;
    }
    rt_leave();
    return rc;
}

/* ---- the part's figures (aclGetDeviceCapability) ---------------------------------------- */

/* hicann/runtime src/acl/aclrt_impl/acl.cpp aclGetDeviceCapabilityImpl: NULL value 100000; the
 * device count (rtGetDeviceCount: 207004 when ASCEND_RT_VISIBLE_DEVICES is refused); a
 * deviceId above count - 1, 100000 (the id is only checked, the part is the process's); an
 * aclDeviceInfo other than the three, 100000; then the key of the part's platform
 * configuration (GetPlatformInfoWithKey: ai_core_cnt, vector_core_cnt, l2_size). */
aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t *value) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INTERNAL_ERROR;
    if (value == NULL)
        return ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value (output pointer) is NULL");
    uint32_t count;
    aclError rc = aclrtGetDeviceCount(&count); /* brings the runtime up; its message if not */
    if (rc != ACL_SUCCESS)
        return rc;
    if (deviceId > count - 1)
        return ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                             "deviceId %u is greater than the last device id (%u devices)",
                             (unsigned)deviceId, (unsigned)count);
    const part_figures *p = figures();
    switch ((int)deviceInfo) {
    case ACL_DEVICE_INFO_AI_CORE_NUM: *value = p->ai_cores; return ACL_SUCCESS;
    case ACL_DEVICE_INFO_VECTOR_CORE_NUM: *value = p->vector_cores; return ACL_SUCCESS;
    case ACL_DEVICE_INFO_L2_SIZE: *value = p->l2_bytes; return ACL_SUCCESS;
    default:
        return ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                             "deviceInfo %d is not ACL_DEVICE_INFO_AI_CORE_NUM (0), "
                             "ACL_DEVICE_INFO_VECTOR_CORE_NUM (1) or ACL_DEVICE_INFO_L2_SIZE (2)",
                             (int)deviceInfo);
    }
}
