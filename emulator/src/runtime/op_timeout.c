/*
 * Operator timeouts: aclrtSetOpWaitTimeout (how long a stream's wait for an event may last);
 * how long a kernel may run, set in seconds (aclrtSetOpExecuteTimeOut), milliseconds
 * (aclrtSetOpExecuteTimeOutWithMs) or microseconds (aclrtSetOpExecuteTimeOutV2, which answers
 * the time the scheduler will count), read back (aclrtGetOpExecuteTimeout) with the
 * scheduler's tick (aclrtGetOpTimeOutInterval); and aclrtCheckArchCompatibility.
 *
 * Judged against hicann/runtime src/acl/aclrt_impl/event.cpp (the ACL layer passes both
 * values on unchecked), src/runtime/api/api_c.cc rtSetOpWaitTimeOut, api_c_standard_soc.cc
 * rtSetOpExecuteTimeOut, src/runtime/api/impl/api_impl.cc SetOpWaitTimeOut /
 * SetOpExecuteTimeOut, src/runtime/core/src/runtime.cc SetTimeoutConfig and
 * docs/zh/api_ref/07_event_management.md, 12_execution_control.md. Both settings belong to
 * the process's runtime object, which CANN keeps up across aclFinalize: so does the emulator.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "rt_internal.h"

static _Atomic uint32_t g_op_wait_s;     /* 0: no limit (the default: never set) */
/* The kernel time limit as the runtime keeps it, in microseconds whatever call set it
 * (runtime.cc SetTimeoutConfig, ConvertTimeoutToUs: UINT64_MAX, "never", is taken as one less);
 * 0: the part's maximum. Meaningful once g_op_execute_set. */
static _Atomic uint64_t g_op_execute_us;
static _Atomic bool g_op_execute_set;

static void set_op_execute_us(uint64_t us) {
    atomic_store(&g_op_execute_us, us == UINT64_MAX ? UINT64_MAX - 1 : us);
    atomic_store(&g_op_execute_set, true);
}

uint32_t rt_op_wait_timeout_s(void) { return atomic_load(&g_op_wait_s); }

/* The part's default and maximum for AI Core kernels, in seconds (12_execution_control.md,
 * aclrtSetOpExecuteTimeOut's constraints: Atlas training series 68 and 2176; Atlas inference
 * series 547 and 547; Atlas A2/A3 and Ascend 950 1091, which is also their maximum: 254
 * intervals of 2^32 cycles of the 1 GHz task scheduler clock, src/runtime/core/inc/
 * runtime.hpp RT_STARS_TASK_KERNEL_CREDIT_SCALE_US). */
static void part_limits(uint64_t *def, uint64_t *max) {
    const aclemu_soc *soc = aclemu_soc_info("aclrtSetOpExecuteTimeOut");
    int arch = soc != NULL ? soc->npu_arch : 2201;
    if (arch == 1001) {
        *def = 68;
        *max = 2176;
    } else if (arch == 2002) {
        *def = *max = 547;
    } else {
        *def = *max = 1091;
    }
}

/* The STARS task scheduler (Atlas A2/A3, Ascend 950) times a kernel in whole intervals of
 * 2^32 cycles of its 1 GHz clock, at most 254 of them: the runtime rounds the time asked up
 * to whole intervals (src/runtime/core/src/task/task_execute_time.cc
 * TransExeTimeoutCfgToKernelCredit: ceil(timeout / interval), RT_STARS_MAX_KERNEL_CREDIT), so
 * 1 s there is one interval, 4294.967296 ms. */
#define STARS_INTERVAL_NS 4294967296ull
#define STARS_MAX_INTERVALS 254ull

uint64_t rt_op_execute_timeout_ms(void) {
    uint64_t def, max;
    part_limits(&def, &max);
    const aclemu_soc *soc = aclemu_soc_info("aclrtSetOpExecuteTimeOut");
    bool stars = soc == NULL || soc->npu_arch >= 2201;
    uint64_t us = atomic_load(&g_op_execute_us);
    if (!atomic_load(&g_op_execute_set))
        us = def * 1000000u;
    else if (us == 0 || us > max * 1000000u)
        us = max * 1000000u; /* 0: the maximum */
    if (!stars)
        return (us + 999u) / 1000u;
    /* us is at most the maximum here (1091 s): us * 1000 does not overflow */
    uint64_t intervals = (us * 1000u + STARS_INTERVAL_NS - 1) / STARS_INTERVAL_NS;
    if (intervals > STARS_MAX_INTERVALS)
        intervals = STARS_MAX_INTERVALS;
    return intervals * STARS_INTERVAL_NS / 1000000u;
}

aclError aclrtSetOpWaitTimeout(uint32_t timeout) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = aclemu_soc_info(__func__);
    if (soc == NULL) {
        rc = rt_fail(ACL_ERROR_RT_PARAM_INVALID);
    } else if (soc->npu_arch == 2002) {
        /* The inference series' parts take it only from a task scheduler version the
         * emulator cannot claim (api_impl.cc SetOpWaitTimeOut: SET_OP_WAIT_TIMEOUT_NEED_TS_
         * VERSION, src/runtime/config/dc/dev_info_reg.cc); the API reference lists them as
         * not supported. */
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "%s (%s) does not support an operator wait timeout", soc->name,
                    soc->series);
    } else {
        atomic_store(&g_op_wait_s, timeout);
    }
    rt_leave();
    return rc;
}

aclError aclrtSetOpExecuteTimeOut(uint32_t timeout) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    /* Every value is taken on every part the emulator knows (rtSetOpExecuteTimeOut refuses
     * only parts with RT_FEATURE_TASK_OP_EXE_TIMEOUT_CONFIG or an AI CPU-less
     * RT_FEATURE_TASK_TIMEOUT_CONFIG, which none of them has); one above the part's maximum
     * is the maximum. */
    if (aclemu_soc_info(__func__) == NULL) {
        rc = rt_fail(ACL_ERROR_RT_PARAM_INVALID);
    } else {
        set_op_execute_us((uint64_t)timeout * 1000000u);
    }
    rt_leave();
    return rc;
}

/* Milliseconds, with no part refused (api_c.cc rtSetOpExecuteTimeOutWithMs checks no chip
 * feature); 1000000 ms (1000 s) and above are 1000000 ms (api_impl.cc SetOpExecuteTimeOut,
 * RT_MAX_OP_TIMEOUT_FOR_MS); 0 is the part's maximum, as for seconds. No device needed. */
aclError aclrtSetOpExecuteTimeOutWithMs(uint32_t timeout) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (aclemu_soc_info(__func__) == NULL)
        rc = rt_fail(ACL_ERROR_RT_PARAM_INVALID);
    else
        set_op_execute_us((uint64_t)(timeout < 1000000u ? timeout : 1000000u) * 1000u);
    rt_leave();
    return rc;
}

/* The runtime's view of a kernel time limit (hicann/runtime src/runtime/config/<chip>/
 * dev_info_reg.cc): the scheduler counts it in ticks of scale_us microseconds, def_ticks of
 * them when nothing was set, at most max_ticks. Atlas A2/A3 and Ascend 950 (910_B_93, 950):
 * 2^32 ns, 254 and 254 (the tick the driver reports instead, where the task scheduler times
 * kernels in milliseconds, TS_FEATURE_OP_EXEC_TIMEOUT_MS, is not the emulator's); Atlas
 * inference (dc): 2^31 ns, 255 and 255; Atlas training (cloud): 2^36 ns, 1 and 32. */
static void part_ticks(const char *fn, double *scale_us, uint64_t *def_ticks,
                       uint64_t *max_ticks) {
    const aclemu_soc *soc = aclemu_soc_info(fn);
    int arch = soc != NULL ? soc->npu_arch : 2201;
    if (arch == 1001) {
        *scale_us = 68719476.736;
        *def_ticks = 1;
        *max_ticks = 32;
    } else if (arch == 2002) {
        *scale_us = 2147483.648;
        *def_ticks = *max_ticks = 255;
    } else {
        *scale_us = STARS_INTERVAL_NS / 1000.0;
        *def_ticks = *max_ticks = STARS_MAX_INTERVALS;
    }
}

/* The limit in milliseconds as the runtime computes it (src/runtime/core/src/kernel/
 * kernel_utils.cc GetOpExecuteMsTimeout): set, 0 or above the part's maximum is the maximum,
 * else whole ticks ((t + tick - 1) / tick, truncated); not set, the part's default ticks;
 * then rounded up to whole milliseconds. NULL timeoutMs: 100000 (the ACL layer, device.cpp
 * aclrtGetOpExecuteTimeoutImpl). No device needed. */
aclError aclrtGetOpExecuteTimeout(uint32_t *const timeoutMs) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if (timeoutMs == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "timeoutMs (output pointer) is NULL");
    } else if (aclemu_soc_info(__func__) == NULL) {
        rc = rt_fail(ACL_ERROR_RT_PARAM_INVALID);
    } else {
        double tick, us;
        uint64_t def, max;
        part_ticks(__func__, &tick, &def, &max);
        if (!atomic_load(&g_op_execute_set)) {
            us = tick * (double)def;
        } else {
            double t = (double)atomic_load(&g_op_execute_us);
            if (t == 0 || t > tick * (double)max)
                us = tick * (double)max;
            else
                us = tick * (double)(uint64_t)((t + tick - 1) / tick);
        }
        *timeoutMs = (uint32_t)ceil(us / 1000.0);
    }
    rt_leave();
    return rc;
}

/* The scheduler's tick in microseconds, truncated (api_impl.cc GetOpTimeOutInterval:
 * timeoutCfg.interval, part_ticks). NULL interval: 100000 (the ACL layer, event.cpp); no
 * current device: 107002 (the runtime's CurrentContext). */
aclError aclrtGetOpTimeOutInterval(uint64_t *interval) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (interval == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "interval (output pointer) is NULL");
    } else if ((rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS) {
        double tick;
        uint64_t def, max;
        part_ticks(__func__, &tick, &def, &max);
        *interval = (uint64_t)tick;
    }
    rt_leave();
    return rc;
}

/* Microseconds (0: the part's maximum), and the time the scheduler will count: the ticks
 * the runtime turns it into (task_execute_time.cc TransExeTimeoutCfgToKernelCredit: whole
 * ticks rounded up, at most 254, 0 the 254) times the tick, truncated (api_impl.cc
 * SetOpExecuteTimeOutV2). NULL actualTimeout: 100000 (the ACL layer, event.cpp); no current
 * device: 107002 (the runtime's CurrentContext), nothing set. */
aclError aclrtSetOpExecuteTimeOutV2(uint64_t timeout, uint64_t *actualTimeout) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (actualTimeout == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "actualTimeout (output pointer) is NULL");
    } else if ((rc = rt_need_device(__func__, &dev)) == ACL_SUCCESS) {
        double tick;
        uint64_t def, max;
        part_ticks(__func__, &tick, &def, &max);
        double ticks = STARS_MAX_INTERVALS;
        if (timeout != 0 && ceil((double)timeout / tick) <= (double)STARS_MAX_INTERVALS)
            ticks = ceil((double)timeout / tick);
        set_op_execute_us(timeout);
        *actualTimeout = (uint64_t)(ticks * tick);
    }
    rt_leave();
    return rc;
}

/* ---- aclrtCheckArchCompatibility ---------------------------------------------------------- */

/* Parts the vendor's platform configuration knows that the emulator does not emulate, with
 * their NPU architecture (hicann/runtime src/platform/platform_config/cann and cann-dev, the
 * NpuArch line of each part's file): CheckArchCompatibility answers for them too. */
static const struct { const char *name; int npu_arch; } OTHER_PARTS[] = {
    {"Ascend031", 3004},    {"Ascend035", 3505},    {"Ascend035A", 3505},
    {"Ascend035B", 3505},   {"Ascend310B1", 3002},  {"Ascend310B2", 3002},
    {"Ascend310B3", 3002},  {"Ascend310B4", 3002},  {"Ascend350_354f", 3510},
    {"Ascend350_355e", 3510},
};

static int npu_arch_of(const char *name) {
    int arch = rt_soc_arch(name);
    if (arch >= 0)
        return arch;
    for (size_t i = 0; i < sizeof OTHER_PARTS / sizeof OTHER_PARTS[0]; i++)
        if (strcmp(name, OTHER_PARTS[i].name) == 0)
            return OTHER_PARTS[i].npu_arch;
    return -1;
}

/* CANN (src/acl/aclrt_impl/device.cpp; src/runtime/api/api_c.cc rtCheckArchCompatibility,
 * api_error.cc and api_impl.cc CheckArchCompatibility, src/runtime/core/src/common/
 * soc_info.cc GetNpuArchByName): NULL socVersion or canCompatible, an empty name, or a name
 * no platform configuration has: 107000 (RT_ERROR_INVALID_VALUE); then 1 when the named
 * part's NPU architecture is the device's, else 0. No device needed. */
aclError aclrtCheckArchCompatibility(const char *socVersion, int32_t *canCompatible) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = NULL;
    int arch;
    if (socVersion == NULL || canCompatible == NULL)
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__, "%s is NULL",
                    socVersion == NULL ? "socVersion" : "canCompatible (output pointer)");
    else if (socVersion[0] == '\0')
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__, "socVersion is an empty string");
    else if ((arch = npu_arch_of(socVersion)) < 0)
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "socVersion \"%.64s\" is not a part name of CANN's platform configuration "
                    "(e.g. Ascend910B2, Ascend310P3)", socVersion);
    else if ((soc = aclemu_soc_info(__func__)) == NULL)
        rc = rt_fail(ACL_ERROR_RT_PARAM_INVALID);
    else
        *canCompatible = arch == soc->npu_arch ? 1 : 0;
    rt_leave();
    return rc;
}
