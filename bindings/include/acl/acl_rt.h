/*
 * acl-py declarations: the CANN runtime calls exported by libascendcl.so (process set-up,
 * devices, contexts, streams, events, host functions, memory), where a CANN install has them:
 * include/acl/acl_rt.h. aclInit, aclFinalize and aclGetRecentErrMsg are declared here, as in
 * the vendor's header.
 * The text between the cdef markers is read by cffi (bindings/build_ffi.py).
 */
#ifndef ACL_PY_ACL_ACL_RT_H_
#define ACL_PY_ACL_ACL_RT_H_

#include <stdint.h>
#include <stddef.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* acl-py:cdef-begin */
/* aclrtSetStreamFailureMode's modes: after a task fails, the stream runs its later tasks
 * (the default), or stops (its later tasks do not run; that cannot be undone). */
#define ACL_CONTINUE_ON_FAILURE 0x00000000U
#define ACL_STOP_ON_FAILURE 0x00000001U

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/* Placement (the first eight) plus flags that may be OR-ed into one. */
typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

typedef enum aclrtMemAttr {
    ACL_DDR_MEM = 0,
    ACL_HBM_MEM = 1,
    ACL_DDR_MEM_HUGE = 2,
    ACL_DDR_MEM_NORMAL = 3,
    ACL_HBM_MEM_HUGE = 4,
    ACL_HBM_MEM_NORMAL = 5,
    ACL_DDR_MEM_P2P_HUGE = 6,
    ACL_DDR_MEM_P2P_NORMAL = 7,
    ACL_HBM_MEM_P2P_HUGE = 8,
    ACL_HBM_MEM_P2P_NORMAL = 9,
    ACL_HBM_MEM_HUGE1G = 10,
    ACL_HBM_MEM_P2P_HUGE1G = 11,
    ACL_MEM_NORMAL = 12,
    ACL_MEM_HUGE = 13,
    ACL_MEM_HUGE1G = 14,
    ACL_MEM_P2P_NORMAL = 15,
    ACL_MEM_P2P_HUGE = 16,
    ACL_MEM_P2P_HUGE1G = 17
} aclrtMemAttr;

typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1,
} aclrtEventRecordedStatus;

typedef enum aclrtCallbackBlockType {
    ACL_CALLBACK_NO_BLOCK,
    ACL_CALLBACK_BLOCK,
} aclrtCallbackBlockType;

/* Host functions queued on a stream (aclrtLaunchCallback, aclrtLaunchHostFunc). */
typedef void (*aclrtCallback)(void *userData);
typedef void (*aclrtHostFunc)(void *args);

typedef enum aclrtStreamStatus {
    ACL_STREAM_STATUS_COMPLETE = 0,
    ACL_STREAM_STATUS_NOT_READY = 1,
    ACL_STREAM_STATUS_RESERVED = 0xFFFF,
} aclrtStreamStatus;

/* ---- devices: run mode, information, limits, status ---- */
/* Where the program runs: on the device's own CPU (ACL_DEVICE) or on a host driving it. */
typedef enum aclrtRunMode {
    ACL_DEVICE,
    ACL_HOST,
} aclrtRunMode;

ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);

/* aclrtGetDeviceInfo's attributes. (The vendor's header also names 204
 * ACL_DEV_ATTR_LOCAL_MEM_PER_VECTOR_CORE, deprecated, behind a deprecation attribute cffi
 * cannot read: ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE is its name now.) */
typedef enum {
    ACL_DEV_ATTR_AICPU_CORE_NUM = 1,
    ACL_DEV_ATTR_AICORE_CORE_NUM = 101,
    ACL_DEV_ATTR_CUBE_CORE_NUM = 102,
    ACL_DEV_ATTR_VECTOR_CORE_NUM = 201,
    ACL_DEV_ATTR_WARP_SIZE = 202,
    ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE = 203,
    ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE = 204,
    ACL_DEV_ATTR_MAX_GRID_DIM_X = 205,
    ACL_DEV_ATTR_MAX_GRID_DIM_Y = 206,
    ACL_DEV_ATTR_MAX_GRID_DIM_Z = 207,
    ACL_DEV_ATTR_MAX_BLOCK_PER_GRID = 208,
    ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK = 209,
    ACL_DEV_ATTR_MAX_BLOCK_DIM_X = 210,
    ACL_DEV_ATTR_MAX_BLOCK_DIM_Y = 211,
    ACL_DEV_ATTR_MAX_BLOCK_DIM_Z = 212,
    ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE = 301,
    ACL_DEV_ATTR_L2_CACHE_SIZE = 302,
    ACL_DEV_ATTR_SMP_ID = 401U,
    ACL_DEV_ATTR_PHY_CHIP_ID = 402U,
    ACL_DEV_ATTR_SUPER_POD_DEVIDE_ID = 403U,
    ACL_DEV_ATTR_SUPER_POD_DEVICE_ID = 403U,
    ACL_DEV_ATTR_SUPER_POD_SERVER_ID = 404U,
    ACL_DEV_ATTR_SUPER_POD_ID = 405U,
    ACL_DEV_ATTR_CUST_OP_PRIVILEGE = 406U,
    ACL_DEV_ATTR_MAINBOARD_ID = 407U,
    ACL_DEV_ATTR_HD_CONNECT_TYPE = 408U,
    ACL_DEV_ATTR_DEVICE_FORM_FACTOR = 409U,
    ACL_DEV_ATTR_IS_VIRTUAL = 501U,
    ACL_DEV_ATTR_NPU_ARCH = 601U,
} aclrtDevAttr;

/* ACL_DEV_ATTR_HD_CONNECT_TYPE's values (how the host reaches the device). */
#define ACL_HOST_DEVICE_CONNECT_TYPE_PCIE 0
#define ACL_HOST_DEVICE_CONNECT_TYPE_HCCS 1
#define ACL_HOST_DEVICE_CONNECT_TYPE_UB 2
/* ACL_DEV_ATTR_DEVICE_FORM_FACTOR's values. */
#define ACL_DEVICE_FORM_FACTOR_POD 0
#define ACL_DEVICE_FORM_FACTOR_A_K 1
#define ACL_DEVICE_FORM_FACTOR_A_X 2
#define ACL_DEVICE_FORM_FACTOR_PCIE_CARD 3

/* The cores a process (aclrtSetDeviceResLimit) or a thread may use. */
typedef enum {
    ACL_RT_DEV_RES_CUBE_CORE = 0,
    ACL_RT_DEV_RES_VECTOR_CORE,
} aclrtDevResLimitType;

typedef enum aclrtDeviceStatus {
    ACL_RT_DEVICE_STATUS_NORMAL = 0,
    ACL_RT_DEVICE_STATUS_ABNORMAL,
    ACL_RT_DEVICE_STATUS_END = 0xFFFF,
} aclrtDeviceStatus;

typedef struct aclrtUtilizationExtendInfo aclrtUtilizationExtendInfo;

/* Percentages; -1 where the device cannot tell. utilizationExtend is reserved: NULL. */
typedef struct aclrtUtilizationInfo {
    int32_t cubeUtilization;
    int32_t vectorUtilization;
    int32_t aicpuUtilization;
    int32_t memoryUtilization;
    aclrtUtilizationExtendInfo *utilizationExtend;
} aclrtUtilizationInfo;

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr,
                                                int64_t *value);
/* Numerically larger is lower priority: least 7, greatest 0 on CANN. Either may be NULL. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetStreamPriorityRange(int32_t *leastPriority,
                                                               int32_t *greatestPriority);
ACL_FUNC_VISIBILITY aclError aclrtQueryDeviceStatus(int32_t deviceId,
                                                    aclrtDeviceStatus *deviceStatus);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceUtilizationRate(int32_t deviceId,
                                                           aclrtUtilizationInfo *utilizationInfo);
/* The process's core limits on a device it has set; reset with the device. */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type,
                                                    uint32_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type,
                                                    uint32_t value);
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceResLimit(int32_t deviceId);
/* What the calling thread may use: its device's limit. */
ACL_FUNC_VISIBILITY aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type,
                                                        uint32_t *value);
/* The default stream of the calling thread's context: a stream handle that cannot be
 * destroyed. */
ACL_FUNC_VISIBILITY aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream);
/* ---- end of devices: run mode, information, limits, status ---- */
/* ---- device capabilities (include/acl/acl_rt.h of CANN) ---- */
/* aclrtGetDeviceCapability's answers. */
#define ACL_DEV_FEATURE_SUPPORT 0x00000001
#define ACL_DEV_FEATURE_NOT_SUPPORT 0x00000000

typedef enum {
    ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV = 1,
    ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV = 21,
} aclrtDevFeatureType;

/* Whether device deviceId has the feature: *value ACL_DEV_FEATURE_SUPPORT or _NOT_SUPPORT. */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCapability(int32_t deviceId,
                                                      aclrtDevFeatureType devFeatureType,
                                                      int32_t *value);
/* ---- end of device capabilities ---- */

/* ---- device identity, topology and id mappings ---- */
/* The interface version aclrtGetVersion reports (CANN's header's). */
#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 17
#define ACL_PATCH_VERSION 0

typedef struct aclrtUuid {
    char bytes[16];
} aclrtUuid;

/* aclrtGetDevicesTopo's answers: how two devices are linked (one bit). */
#define ACL_RT_DEVS_TOPOLOGY_HCCS 0x01ULL
#define ACL_RT_DEVS_TOPOLOGY_PIX 0x02ULL
#define ACL_RT_DEVS_TOPOLOGY_PIB 0x04ULL
#define ACL_RT_DEVS_TOPOLOGY_PHB 0x08ULL
#define ACL_RT_DEVS_TOPOLOGY_SYS 0x10ULL
#define ACL_RT_DEVS_TOPOLOGY_SIO 0x20ULL
#define ACL_RT_DEVS_TOPOLOGY_HCCS_SW 0x40ULL

/* The device's 16-byte unique id; 207000 on parts without one (Atlas training and inference
 * series). */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid *uuid);
/* "dddd:bb:dd.f" (lowercase hex) into pciBusId, len >= 13; 207000 where aclrtDeviceGetUuid
 * has none. */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetPCIBusId(int32_t deviceId, char *pciBusId,
                                                    int32_t len);
/* The device id of the device with that PCI bus id (exactly as aclrtDeviceGetPCIBusId
 * writes it). */
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetByPCIBusId(const char *pciBusId, int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevicesTopo(uint32_t deviceId, uint32_t otherDeviceId,
                                                 uint64_t *value);
/* Device ids: the user's (aclrtSetDevice's), the logical (the driver's: the machine's, before
 * ASCEND_RT_VISIBLE_DEVICES) and the physical. The *PhyDevId calls' "logic" id is a user id
 * (as CANN's runtime implements them). */
ACL_FUNC_VISIBILITY aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid,
                                                           int32_t *const logicDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId,
                                                           int32_t *const userDevid);
ACL_FUNC_VISIBILITY aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId,
                                                          int32_t *const logicDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId,
                                                          int32_t *const phyDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId,
                                                         int32_t *const userDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId,
                                                         int32_t *const phyDevId);
/* ---- end of device identity, topology and id mappings ---- */

ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
/* The last error text of this thread, or NULL. */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);
/* timeout: milliseconds, -1 without a limit (0 is refused by CANN's runtime). */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId,
                                                      int32_t peerDeviceId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);
ACL_FUNC_VISIBILITY aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId);
/* peerDeviceId is a physical device id (the vendor's header says so). */
ACL_FUNC_VISIBILITY aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId,
                                                         int32_t *status);

ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context);

/* ---- system parameter options (acl/acl_rt.h; aclSysParamOpt in acl_base.h) ---- */
/* The current context's value (107021 when this context never set opt; options 0..2). */
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value);
/* Sets it in the current context and as the process's value (options 0..2). */
ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);
/* The process's value (0 until set; options 0..3). */
ACL_FUNC_VISIBILITY aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value);
/* ---- end of system parameter options ---- */

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream,
                                                               int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);
/* ACL_CONTINUE_ON_FAILURE (default) or ACL_STOP_ON_FAILURE: whether a stream goes on after a
 * failed task. */
ACL_FUNC_VISIBILITY aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode);

/* A host function run in stream order by a thread the runtime creates; it blocks the stream's
 * later work until it returns. */
ACL_FUNC_VISIBILITY aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);
/* The callback model: a thread of the program, subscribed to the stream, runs the stream's
 * callbacks inside aclrtProcessReport (timeout in ms, -1 for ever). */
ACL_FUNC_VISIBILITY aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtLaunchCallback(aclrtCallback fn, void *userData,
                                                 aclrtCallbackBlockType blockType,
                                                 aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtProcessReport(int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src,
                                         size_t count, aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                                              size_t count, aclrtMemcpyKind kind,
                                              aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value,
                                         size_t count);
ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value,
                                              size_t count, aclrtStream stream);
/* A matrix of height rows of width bytes, the rows spitch bytes apart in src and dpitch
 * bytes apart in dst (width <= both pitches). The synchronous form copies host-to-device or
 * device-to-host; the asynchronous one device-to-device too (on the parts that support it). */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src,
                                           size_t spitch, size_t width, size_t height,
                                           aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src,
                                                size_t spitch, size_t width, size_t height,
                                                aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);

/* Where memory is: aclrtPointerGetAttributes. */
typedef enum aclrtMemLocationType {
    ACL_MEM_LOCATION_TYPE_HOST = 0,
    ACL_MEM_LOCATION_TYPE_DEVICE,
    ACL_MEM_LOCATION_TYPE_UNREGISTERED,
    ACL_MEM_LOCATION_TYPE_MANAGED,
    ACL_MEM_LOCATION_TYPE_HOST_NUMA = 4,
} aclrtMemLocationType;

typedef struct aclrtMemLocation {
    uint32_t id;
    aclrtMemLocationType type;
} aclrtMemLocation;

typedef struct aclrtPtrAttributes {
    aclrtMemLocation location;
    uint32_t pageSize;
    uint32_t rsv[4];
} aclrtPtrAttributes;

/* One module's device memory: aclrtGetMemUsageInfo. */
typedef struct aclrtMemUsageInfo {
    char name[32];
    uint64_t curMemSize;
    uint64_t memPeakSize;
    size_t reserved[8];
} aclrtMemUsageInfo;

/* Device memory (location.id: the device), host memory the runtime knows (aclrtMallocHost,
 * registered; id 0) or other host memory (UNREGISTERED), and its page size in bytes. */
ACL_FUNC_VISIBILITY aclError aclrtPointerGetAttributes(const void *ptr,
                                                       aclrtPtrAttributes *attributes);
/* N 32-bit words of value at ptr (4-byte aligned; N * 4 <= memSize): aclrtMalloc or
 * aclrtMallocHost memory. Host memory is set at once, even by the Async form. */
ACL_FUNC_VISIBILITY aclError aclrtMemsetD32(void *ptr, size_t memSize, uint32_t value, size_t N);
ACL_FUNC_VISIBILITY aclError aclrtMemsetD32Async(void *ptr, size_t memSize, uint32_t value,
                                                 size_t N, aclrtStream stream);
/* Device memory per module on deviceId, the largest first: up to inputNum entries into
 * memUsageInfo, *outputNum of them filled (modules using none are left out). Needs a current
 * device. */
ACL_FUNC_VISIBILITY aclError aclrtGetMemUsageInfo(int32_t deviceId,
                                                  aclrtMemUsageInfo *memUsageInfo,
                                                  size_t inputNum, size_t *outputNum);

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event);
ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event,
                                                  aclrtEventRecordedStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent,
                                                   aclrtEvent endEvent);

/* ---- event flags (include/acl/acl_rt.h of CANN) ---- */
/* aclrtCreateEventWithFlag's and aclrtCreateEventExWithFlag's flags (bits). */
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010U
#define ACL_EVENT_EXTERNAL 0x00000020U
#define ACL_EVENT_IPC 0x00000040U
/* aclrtRecordEventWithFlag's and aclrtStreamWaitEventWithFlag's flags: EXTERNAL is for a
 * stream being captured into a graph. */
#define ACL_EVENT_RECORD_DEFAULT 0x0U
#define ACL_EVENT_RECORD_EXTERNAL 0x01U
#define ACL_EVENT_WAIT_DEFAULT 0x0U
#define ACL_EVENT_WAIT_EXTERNAL 0x01U

/* An event with the features its flag bits name (aclrtCreateEvent's: timestamps and waits). */
ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
/* The same, an event that needs no reset to be recorded again (no aclrtResetEvent). */
ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream,
                                                      uint32_t flag);
/* timeout: seconds (0: no limit) for ACL_EVENT_WAIT_DEFAULT; 0 for ACL_EVENT_WAIT_EXTERNAL. */
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event,
                                                          uint32_t timeout, uint32_t flag);
/* ---- end of event flags ---- */

/* ---- event waits with a timeout, wait status and ids; operator timeouts (include/acl/
 * acl_rt.h of CANN) ---- */
typedef enum aclrtEventWaitStatus {
    ACL_EVENT_WAIT_STATUS_COMPLETE = 0,
    ACL_EVENT_WAIT_STATUS_NOT_READY = 1,
    ACL_EVENT_WAIT_STATUS_RESERVED = 0xFFFF,
} aclrtEventWaitStatus;

/* aclrtStreamWaitEvent with a limit: timeout >= 0, in seconds as the runtime hands it to the
 * device (0: no limit); a wait that runs out of time fails its task. */
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event,
                                                             int32_t timeout);
/* Whether every wait task queued for the event (aclrtStreamWaitEvent*) has run. */
ACL_FUNC_VISIBILITY aclError aclrtQueryEventWaitStatus(aclrtEvent event,
                                                      aclrtEventWaitStatus *status);
/* The device's id of the event (aclrtCreateEvent's events get one at their first record). */
ACL_FUNC_VISIBILITY aclError aclrtGetEventId(aclrtEvent event, uint32_t *eventId);
/* Process-wide, the last call wins: seconds the stream waits of later aclrtStreamWaitEvent
 * calls may last (0: no limit), and seconds a kernel may run (0: the part's maximum). */
ACL_FUNC_VISIBILITY aclError aclrtSetOpWaitTimeout(uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOut(uint32_t timeout);
/* The kernel time limit in milliseconds (1000000 and above: 1000000); in microseconds, with
 * the time the scheduler will count (*actualTimeout, whole ticks of its clock); the limit in
 * force in milliseconds; the scheduler's tick in microseconds. */
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOutWithMs(uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOutV2(uint64_t timeout,
                                                        uint64_t *actualTimeout);
ACL_FUNC_VISIBILITY aclError aclrtGetOpExecuteTimeout(uint32_t *const timeoutMs);
ACL_FUNC_VISIBILITY aclError aclrtGetOpTimeOutInterval(uint64_t *interval);
/* Whether kernels built for the part named socVersion run on this device's part (the same NPU
 * architecture): *canCompatible 1 or 0. */
ACL_FUNC_VISIBILITY aclError aclrtCheckArchCompatibility(const char *socVersion,
                                                         int32_t *canCompatible);
/* ---- end of event waits with a timeout and operator timeouts ---- */

/* ---- host memory registration (include/acl/acl_rt.h of CANN) ---- */
/* aclrtHostRegisterV2's flags (bits): MAPPED maps the range for the device
 * (aclrtHostGetDevicePointer), PINNED page-locks pageable memory; IOMEMORY and READONLY are
 * reserved. */
#define ACL_HOST_REG_MAPPED 0x2UL
#define ACL_HOST_REG_IOMEMORY 0x4UL
#define ACL_HOST_REG_READONLY 0x8UL
#define ACL_HOST_REG_PINNED 0x10000000UL

typedef enum {
    ACL_HOST_REGISTER_MAPPED = 0,
    ACL_HOST_REGISTER_IOMEMORY = 0x04,
    ACL_HOST_REGISTER_READONLY = 0x08
} aclrtHostRegisterType;

/* ptr: 4 KB aligned host memory; *devPtr receives the address the device uses for it. */
ACL_FUNC_VISIBILITY aclError aclrtHostRegister(void *ptr, uint64_t size,
                                               aclrtHostRegisterType type, void **devPtr);
ACL_FUNC_VISIBILITY aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag);
/* pHost: the base address of a mapped registration; flag: reserved, 0. */
ACL_FUNC_VISIBILITY aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice,
                                                       uint32_t flag);
/* ptr: the base address of a registration. */
ACL_FUNC_VISIBILITY aclError aclrtHostUnregister(void *ptr);
/* ---- end of host memory registration ---- */

/* ---- installed package versions ---- */
#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64
/* A package's version as its install records it ($ASCEND_HOME_PATH/share/info/<pkgName>/
 * version.info, "Version=" line; a name with '-' is also tried with '_' and the reverse):
 * versionStr receives up to ACL_PKG_VERSION_MAX_SIZE bytes; 100003 when there is none. */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionStr(char *pkgName, char *versionStr);
/* The same version as one number: major * 10000000 + minor * 100000 + patch * 1000, less 300,
 * 200 or 100 for an alpha, beta or rc release plus its number. */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum);
/* ---- error reports: the thread's last error and a device's fault summary ---- */
typedef enum aclrtLastErrLevel {
    ACL_RT_THREAD_LEVEL = 0,
} aclrtLastErrLevel;

typedef enum {
    ACL_RT_NO_ERROR = 0,
    ACL_RT_ERROR_MEMORY = 1,
    ACL_RT_ERROR_L2 = 2,
    ACL_RT_ERROR_AICORE = 3,
    ACL_RT_ERROR_LINK = 4,
    ACL_RT_ERROR_L3_PORT = 5,
    ACL_RT_ERROR_OTHERS = 0xFFFF,
} aclrtErrorType;

typedef enum aclrtAicoreErrorType {
    ACL_RT_AICORE_ERROR_UNKNOWN,
    ACL_RT_AICORE_ERROR_SW,
    ACL_RT_AICORE_ERROR_HW_LOCAL,
} aclrtAicoreErrorType;

/* A device's fault summary: defined after this section (cffi reads it as opaque). */
typedef struct aclrtErrorInfo aclrtErrorInfo;

/* The status of the calling thread's last failed runtime call (0 when none since it was last
 * read): aclrtGetLastError clears it, aclrtPeekAtLastError does not. A runtime failure
 * (ACL_ERROR_RT_*) sets it, replacing the one before; the ACL layer's own argument checks
 * (100000, ...) do not. level: ACL_RT_THREAD_LEVEL only (else 100000). */
ACL_FUNC_VISIBILITY aclError aclrtPeekAtLastError(aclrtLastErrLevel level);
ACL_FUNC_VISIBILITY aclError aclrtGetLastError(aclrtLastErrLevel level);
/* A device's fault summary (memory and link faults; a failed task is none): errorType
 * ACL_RT_NO_ERROR when it has none. 207000 on parts that do not report faults. */
ACL_FUNC_VISIBILITY aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo *errorInfo);
/* ---- a failed task's description, for exception callbacks ---- */
typedef struct rtExceptionInfo aclrtExceptionInfo;
typedef void (*aclrtExceptionInfoCallback)(aclrtExceptionInfo *exceptionInfo);
typedef void *aclrtFuncHandle;

/* Called by the runtime, once per callback, when a task fails on a device (from a runtime
 * thread, before a synchronize reports the failure; the description is valid during the call
 * only). Register adds a callback (twice: once), Unregister removes it (not waiting for a call
 * under way); NULL: 107000. Neither needs aclInit. */
ACL_FUNC_VISIBILITY aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback);
/* The failed task's id, its stream's id, the id of the thread that queued it, its device and
 * its status; 0xFFFFFFFF for a NULL info. */
ACL_FUNC_VISIBILITY uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info);
/* A failed kernel's arguments and function: for AI Core / AI CPU kernels only (other tasks:
 * 0xFFFFFFFF and 107000). */
ACL_FUNC_VISIBILITY aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo *info,
                                                           void **devArgsPtr,
                                                           uint32_t *devArgsLen);
ACL_FUNC_VISIBILITY aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo *info,
                                                                 aclrtFuncHandle *func);
/* The id of the last task the calling thread queued, on any stream. */
ACL_FUNC_VISIBILITY aclError aclrtGetThreadLastTaskId(uint32_t *taskId);
/* When the event's last record completed, in microseconds since the device started. */
ACL_FUNC_VISIBILITY aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp);
/* ---- Stream configuration, identity, stop/abort and state callbacks; notifies; stream
 * memory values (include/acl/acl_rt.h of CANN declares them all). ---- */
/* aclrtCreateStreamWithConfig's flags (bits; other bits make an ordinary stream). */
#define ACL_STREAM_FAST_LAUNCH 0x00000001U
#define ACL_STREAM_FAST_SYNC 0x00000002U
#define ACL_STREAM_PERSISTENT 0x00000004U
#define ACL_STREAM_HUGE 0x00000008U
#define ACL_STREAM_CPU_SCHEDULE 0x00000010U
#define ACL_STREAM_DEVICE_USE_ONLY 0x00000020U

/* aclrtValueWait's comparisons of the 64-bit value at devAddr with value. */
#define ACL_STREAM_WAIT_VALUE_GEQ 0x00000000U
#define ACL_STREAM_WAIT_VALUE_EQ 0x00000001U
#define ACL_STREAM_WAIT_VALUE_AND 0x00000002U
#define ACL_STREAM_WAIT_VALUE_NOR 0x00000003U

/* aclrtCreateNotify's flags. */
#define ACL_NOTIFY_DEFAULT 0x00000000U
#define ACL_NOTIFY_DEVICE_USE_ONLY 0x00000001U

/* The stream configuration object of CANN's compact runtime (aclrtCreateStreamV2); a full
 * runtime, which the emulator is, declares the types but exports none of its functions. */
typedef enum {
    ACL_RT_STREAM_WORK_ADDR_PTR = 0,
    ACL_RT_STREAM_WORK_SIZE,
    ACL_RT_STREAM_FLAG,
    ACL_RT_STREAM_PRIORITY,
} aclrtStreamConfigAttr;

typedef struct aclrtStreamConfigHandle {
    void *workptr;
    size_t workSize;
    size_t flag;
    uint32_t priority;
} aclrtStreamConfigHandle;

/* When a stream state callback runs: after a stream is created, before it is destroyed. */
typedef enum {
    ACL_RT_STREAM_STATE_CREATE_POST = 1,
    ACL_RT_STREAM_STATE_DESTROY_PRE,
} aclrtStreamState;

typedef void (*aclrtStreamStateCallback)(aclrtStream stm, aclrtStreamState state, void *args);

/* priority: 0 (highest) to 7, a value outside clamped; flag: ACL_STREAM_* bits. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority,
                                                         uint32_t flag);
/* NULL stream: the default stream of the current context. */
ACL_FUNC_VISIBILITY aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t *priority);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t *flags);
/* Stops the task running on the stream, discards the queued ones. */
ACL_FUNC_VISIBILITY aclError aclrtStreamAbort(aclrtStream stream);
/* Stops the task running on the stream only (not the default stream). */
ACL_FUNC_VISIBILITY aclError aclrtStreamStop(aclrtStream stream);
/* Registers (callback non-NULL) or removes (NULL) a process-wide stream state callback under
 * regName. */
ACL_FUNC_VISIBILITY aclError aclrtRegStreamStateCallback(const char *regName,
                                                         aclrtStreamStateCallback callback,
                                                         void *args);

/* Queued on stream: reset the event (its later waits wait for a new record). */
ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);

ACL_FUNC_VISIBILITY aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyNotify(aclrtNotify notify);
/* Queued on stream: set the notify. */
ACL_FUNC_VISIBILITY aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream);
/* Queued on stream: wait until the notify is set, then clear it; timeout in seconds, 0 for
 * ever. */
ACL_FUNC_VISIBILITY aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream,
                                                     uint32_t timeout);

/* Queued on stream: write the 64-bit value at devAddr (device memory; flag must be 0). */
ACL_FUNC_VISIBILITY aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag,
                                             aclrtStream stream);
/* Queued on stream: wait until the 64-bit value at devAddr meets flag's comparison. */
ACL_FUNC_VISIBILITY aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag,
                                            aclrtStream stream);
/* aclrtReduceAsync's operations: dst[i] = op(dst[i], src[i]) element by element. */
typedef enum {
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM = 10,
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX = 11,
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN = 12,
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL = 13,
} aclrtReduceKind;

/* Queued on stream: reduces count bytes of src into dst, elements of type (reserve: NULL). */
ACL_FUNC_VISIBILITY aclError aclrtReduceAsync(void *dst, const void *src, uint64_t count,
                                              aclrtReduceKind kind, aclDataType type,
                                              aclrtStream stream, void *reserve);

/* One parameter of a random number task: its value (isAddr 0: size bytes of valueOrAddr, in
 * the task's dataType; the seed and the count: a uint64_t) or the device address holding it
 * (isAddr 1: valueOrAddr holds the 8-byte address). */
typedef struct {
    uint8_t isAddr;
    uint8_t valueOrAddr[8];
    uint8_t size;
    uint8_t rsv[6];
} aclrtRandomParaInfo;

typedef struct {
    aclrtRandomParaInfo dropoutRation; /* the share of the bits that drop their element */
} aclrtDropoutBitmaskInfo;

typedef struct {
    aclrtRandomParaInfo min;
    aclrtRandomParaInfo max;
} aclrtUniformDisInfo;

typedef struct {
    aclrtRandomParaInfo mean;
    aclrtRandomParaInfo stddev;
} aclrtNormalDisInfo;

typedef enum {
    ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK = 0,
    ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS,
    ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS,
    ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS,
} aclrtRandomNumFuncType;

typedef struct {
    aclrtRandomNumFuncType funcType;
    union {
        aclrtDropoutBitmaskInfo dropoutBitmaskInfo;
        aclrtUniformDisInfo uniformDisInfo;
        aclrtNormalDisInfo normalDisInfo;
    } paramInfo;
} aclrtRandomNumFuncParaInfo;

/* A random number task. randomParaAddr: NULL, or 16 bytes of device memory the call writes
 * the distribution's two parameters into; randomCounterAddr: the generator's 16-byte counter
 * in device memory. The call overwrites dataType with the runtime's own code for it, as
 * CANN's does (the struct is const in the prototype only). */
typedef struct {
    aclDataType dataType;
    aclrtRandomNumFuncParaInfo randomNumFuncParaInfo;
    void *randomParaAddr;
    void *randomResultAddr;
    void *randomCounterAddr;
    aclrtRandomParaInfo randomSeed;
    aclrtRandomParaInfo randomNum;
    uint8_t rsv[8];
} aclrtRandomNumTaskInfo;

/* Queued on stream: fills randomResultAddr with taskInfo's random numbers (reserve: NULL). */
ACL_FUNC_VISIBILITY aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo *taskInfo,
                                                 const aclrtStream stream, void *reserve);
/* acl-py:cdef-end */

/* aclrtGetErrorVerbose's summary, laid out as CANN's (the abi check compares opaque structs
 * only, so the layout is outside the cdef section; errors.c asserts CANN's LP64 sizes). */
#define MAX_MEM_UCE_INFO_ARRAY_SIZE 128
#define UCE_INFO_RESERVED_SIZE 14
#define ACL_RT_MEM_UCE_INFO_MAX_NUM 20

typedef struct aclrtMemUceInfo {
    void *addr;
    size_t len;
    size_t reserved[UCE_INFO_RESERVED_SIZE];
} aclrtMemUceInfo;

typedef struct {
    size_t arraySize;
    aclrtMemUceInfo memUceInfoArray[ACL_RT_MEM_UCE_INFO_MAX_NUM];
} aclrtMemUceInfoArray;

typedef union aclrtErrorInfoDetail {
    aclrtMemUceInfoArray uceInfo;
    aclrtAicoreErrorType aicoreErrType;
} aclrtErrorInfoDetail;

struct aclrtErrorInfo {
    uint8_t tryRepair;
    uint8_t hasDetail;
    uint8_t reserved[2];
    aclrtErrorType errorType;
    aclrtErrorInfoDetail detail;
};

/* The exception callback of CANN's ACL module: one, replaced by each call (NULL removes it),
 * besides the registered ones. Deprecated by CANN for the Register / Unregister pair; outside
 * the cdef section because cffi cannot read the attribute. */
#if defined(__GNUC__) && (__GNUC__ >= 6)
__attribute__((deprecated("aclrtSetExceptionInfoCallback is deprecated, use "
                          "aclrtExceptionInfoCallbackRegister and "
                          "aclrtExceptionInfoCallbackUnregister instead")))
#endif
ACL_FUNC_VISIBILITY aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback);

/* Deprecated by CANN (outside the cdef section for the attribute, as above): the interface
 * version (ACL_MAJOR_VERSION.ACL_MINOR_VERSION.ACL_PATCH_VERSION of the runtime's build), and
 * a package's version split in parts (aclsysGetVersionStr / aclsysGetVersionNum replace it). */
typedef enum aclCANNPackageName {
    ACL_PKG_NAME_CANN,
    ACL_PKG_NAME_RUNTIME,
    ACL_PKG_NAME_COMPILER,
    ACL_PKG_NAME_HCCL,
    ACL_PKG_NAME_TOOLKIT,
    ACL_PKG_NAME_OPP,
    ACL_PKG_NAME_OPP_KERNEL,
    ACL_PKG_NAME_DRIVER
} aclCANNPackageName;

typedef struct aclCANNPackageVersion {
    char version[ACL_PKG_VERSION_MAX_SIZE];
    char majorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char minorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char releaseVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char patchVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char reserved[ACL_PKG_VERSION_MAX_SIZE];
} aclCANNPackageVersion;

#if defined(__GNUC__) && (__GNUC__ >= 6)
__attribute__((deprecated("aclsysGetCANNVersion is deprecated, use aclsysGetVersionStr and "
                          "aclsysGetVersionNum instead")))
#endif
ACL_FUNC_VISIBILITY aclError aclsysGetCANNVersion(aclCANNPackageName name,
                                                  aclCANNPackageVersion *version);
#if defined(__GNUC__) && (__GNUC__ >= 6)
__attribute__((deprecated("aclrtGetVersion is deprecated, use aclSysGetVersion instead")))
#endif
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
                                             int32_t *patchVersion);

#ifdef __cplusplus
}
#endif

#endif /* ACL_PY_ACL_ACL_RT_H_ */
