/*
 * Private to libascendcl.so: how the runtime's modules (device, memory, stream, handles,
 * fault, pool) share state. Nothing here is exported.
 *
 * Locking model, outermost first:
 *   g_life (rwlock)  every public runtime call holds it for reading; aclInit, aclFinalize,
 *                    aclrtResetDevice and aclrtDestroyContext hold it for writing, so device
 *                    teardown never overlaps another call (no use-after-free of streams,
 *                    memory records or default streams by a concurrent caller).
 *   g_dev_mu         device reference counts and the per-device stream/event lists.
 *   stream->mu       one stream's queue.      memory rwlock: the allocation registries.
 *   registry mutex   the handle hash set (leaf: nothing is called while holding it).
 */
#ifndef ACLEMU_RT_INTERNAL_H_
#define ACLEMU_RT_INTERNAL_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "emu_internal.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_MAX_DEVICES 64
/* Streams per device, default ones and one the runtime keeps for itself included: the lowest
 * maximum CANN documents (Atlas 200I/500 A2 inference products, aclrtCreateStream). */
#define RT_DEFAULT_MAX_STREAMS 512

/* Sets "<fn>: <message>" and evaluates to code: a failure of the runtime layer, whose status
 * becomes the thread's last error when it is a runtime status (rt_fail, errors.c). */
#define RT_ERR(code, fn, fmt, ...) \
    (aclemu_set_error("%s: " fmt, (fn), ##__VA_ARGS__), rt_fail((aclError)(code)))
/* The same for a check CANN's ACL layer makes before calling its runtime: the message only,
 * the thread's last error untouched, whatever the code (the ACL layer returns a few runtime
 * codes itself, e.g. 107000 for a timeout below -1). */
#define ACL_LAYER_ERR(code, fn, fmt, ...) \
    (aclemu_set_error("%s: " fmt, (fn), ##__VA_ARGS__), (aclError)(code))

/* ---- process life (device.c) ---- */
/* Read lock, the runtime brought up first if it is not (its environment read: 100000 when
 * malformed). No call needs aclInit, as in CANN. */
RT_HIDDEN aclError rt_enter(const char *fn);
RT_HIDDEN void rt_leave(void);
/* A public call's first step: fault_rc when ACL_EMU_FAIL injects a failure into fn (nothing
 * taken), else rt_enter(fn). */
RT_HIDDEN aclError rt_begin(const char *fn, aclError fault_rc);
RT_HIDDEN int rt_current_device(void);             /* -1 when the thread has none */
RT_HIDDEN aclError rt_need_device(const char *fn, int *dev); /* 107002 when none */
RT_HIDDEN int rt_device_count(void);
RT_HIDDEN int rt_physical_device(int dev);         /* its machine id (ASCEND_RT_VISIBLE_DEVICES) */
RT_HIDDEN int rt_machine_device_count(void);       /* ACL_EMU_DEVICE_COUNT */
/* The process's device id of machine device phys, -1 when ASCEND_RT_VISIBLE_DEVICES leaves it
 * out (or phys is no machine device). */
RT_HIDDEN int rt_device_of_machine(int phys);
/* 107001 naming fn and arg unless id is a device of the process (the message says why:
 * ACL_EMU_DEVICE_COUNT, ASCEND_RT_VISIBLE_DEVICES). */
RT_HIDDEN aclError rt_check_device_arg(const char *fn, const char *arg, int32_t id);
/* Whether this process holds dev (an aclrtSetDevice not yet reset, or a context of its own):
 * CANN's runtime has a device object for it. */
RT_HIDDEN bool rt_device_open(int dev);
/* ---- device information and resource limits (devinfo.c) ---- */
RT_HIDDEN void rt_devinfo_device_gone(int dev);    /* teardown: its limits back to the totals */
RT_HIDDEN uint64_t rt_device_memory_cap(void);
RT_HIDDEN int rt_max_streams(void);                /* streams per device (ACL_EMU_MAX_STREAMS) */
RT_HIDDEN extern pthread_mutex_t g_dev_mu;
/* Whether device dev has enabled its access to device peer (process ids): see device.c. */
RT_HIDDEN bool rt_peer_enabled(int dev, int peer);

/* ---- reference-counted runtime objects (streams, events, contexts) ---- */
typedef struct rt_obj {
    _Atomic int refs;
    void (*free_fn)(struct rt_obj *self);
} rt_obj;
/* True when p is a live handle of that kind; then a reference has been taken (under the
 * registry lock, so a concurrent destroy cannot free it first). Drop it with rt_obj_put. */
RT_HIDDEN bool rt_handle_acquire(const void *p, aclemu_kind kind);
RT_HIDDEN void rt_obj_put(rt_obj *o);
RT_HIDDEN int64_t rt_handle_count(aclemu_kind kind);

/* ---- streams and events (stream.c) ---- */
typedef struct rt_stream rt_stream;
/* stream NULL: the device's default stream (created on first use). Takes a reference. */
RT_HIDDEN aclError rt_stream_get(aclrtStream stream, int dev, const char *fn, rt_stream **out);
RT_HIDDEN void rt_stream_put(rt_stream *s);
/* The runtime API's handle check (hicann/runtime src/runtime/api/api_c.cc), before it needs a
 * device: ACL_SUCCESS for NULL (the default stream) or a live stream, else 107017. */
RT_HIDDEN aclError rt_stream_valid(aclrtStream stream, const char *fn);
/* For the calls whose runtime takes their stream through Runtime::GetCurStream (hicann/runtime
 * src/runtime/core/src/runtime.cc; the callers in api/impl/api_error.cc refuse what it leaves
 * NULL): aclrtMemcpy2dAsync, aclrtSetStreamFailureMode, aclrtStreamAbort. A NULL stream is the
 * current device's default stream only on the parts whose devices control their streams'
 * queues (RT_FEATURE_DEVICE_CTRL_SQ: config/910_B_93, 950 dev_info_reg.cc, that is Atlas A2/A3
 * and Ascend 950) and only with a current device; otherwise 107000, the message naming fn.
 * ACL_SUCCESS for any non-NULL stream (its handle is checked by the caller). Every other call
 * taking a stream takes NULL as the default stream on every part (api_impl.cc). */
RT_HIDDEN aclError rt_check_null_stream(aclrtStream stream, const char *fn);
RT_HIDDEN aclError rt_stream_push(rt_stream *s, aclemu_task_fn run, aclemu_task_fn release,
                                  void *arg, const char *fn);
/* Waits until everything queued on `stream` so far has run, as aclrtSynchronizeStream waits
 * (a stream of any device; NULL is dev's default stream): 107017 for a stream that is not
 * live, 107000 from inside a host function (rt_refuse_in_host_function). */
RT_HIDDEN aclError rt_stream_drain(aclrtStream stream, int dev, const char *fn);
/* Drains and destroys every stream and event of dev, default stream included (write lock). */
RT_HIDDEN void rt_streams_teardown(int dev);
/* Starts dev's default stream if it is not running (aclrtSetDevice, aclrtCreateContext: CANN
 * creates it when the device opens), which runs the stream state callbacks' CREATE_POST.
 * Runtime read lock held. */
RT_HIDDEN void rt_default_stream_start(int dev);
/* Runs the stream state callbacks' DESTROY_PRE for dev's default stream, then for each stream
 * still alive, before a teardown destroys them; no runtime lock held (a callback may call the
 * runtime). */
RT_HIDDEN void rt_streams_notify_destroy(int dev);
/* Waits for every stream of dev, all within timeout_ms (-1: no limit): ACL_SUCCESS, the first
 * stream's task failure, or 507046 when the time ran out (the message set, naming fn). */
RT_HIDDEN aclError rt_streams_sync_device(int dev, int32_t timeout_ms, const char *fn);
/* The argument checks every *WithTimeout synchronize shares (hicann/runtime src/acl/
 * aclrt_impl: -1 or more; src/runtime/api/impl/api_error.cc: not 0): 107000 or ACL_SUCCESS.
 * acl_layer: only the ACL layer's check (timeout < -1), made before the handles. */
RT_HIDDEN aclError rt_check_timeout(const char *fn, int32_t timeout, bool acl_layer);
RT_HIDDEN int rt_stream_device(const rt_stream *s);
/* Default streams alive: live stream handles that are no created stream. */
RT_HIDDEN int64_t rt_live_default_streams(void);
/* Stream priorities: 0 is the highest; CANN's runtime has one range for every SoC
 * (hicann/runtime src/runtime/core/inc/spec/base_info.hpp). */
#define RT_STREAM_LEAST_PRIORITY 7
/* Runs the stream state callbacks (aclrtRegStreamStateCallback, stream_state.c) for stream;
 * called with no runtime lock held. */
RT_HIDDEN void rt_stream_state_notify(void *stream, aclrtStreamState state);
/* Destroys the notifies of dev (notify.c; from rt_streams_teardown, streams drained). */
RT_HIDDEN void rt_notifies_teardown(int dev);

/* ---- host functions and callbacks (callback.c) ---- */
/* True while the calling thread runs a host function (aclrtLaunchHostFunc) or a callback
 * (aclrtProcessReport). */
RT_HIDDEN bool rt_in_host_function(void);
/* ACL_SUCCESS, or 107000 naming fn when called from inside a host function: the calls the
 * vendor forbids there (allocate, free, synchronize, launch) begin with it. */
RT_HIDDEN aclError rt_refuse_in_host_function(const char *fn);
RT_HIDDEN void rt_callback_stream_gone(const void *stream); /* drained, being destroyed */
RT_HIDDEN void rt_callback_device_gone(int dev);  /* after its streams (write lock) */

/* ---- aclInit's configuration file (config.c) ---- */
/* ACL_SUCCESS, or 100003 / 100006 with the message set, as CANN checks the file. */
RT_HIDDEN aclError rt_check_config(const char *fn, const char *path);

/* ---- memory (memory.c) ---- */
RT_HIDDEN void rt_memory_release_all(void);       /* aclFinalize (write lock, streams drained) */
RT_HIDDEN void rt_memory_stats(int64_t *dev_allocs, int64_t *host_allocs, int64_t *dev_bytes);
/* Where the host range [p, p + n) lies, for aclrtHostRegister*: RT_PLACE_DEVICE when it
 * touches device memory, RT_PLACE_PINNED inside one aclrtMallocHost block, else
 * RT_PLACE_PAGEABLE. */
enum { RT_PLACE_PAGEABLE, RT_PLACE_PINNED, RT_PLACE_DEVICE };
RT_HIDDEN int rt_memory_place(const void *p, uint64_t n);
/* Pins (as aclemu_device_pin) the allocation holding [p, p + nbytes), which must be memory of
 * device dev: the token, or NULL with *rc 107000 and the message naming fn and arg (the
 * stricter check of the calls whose runtime hands device addresses to the hardware unchecked:
 * aclrtReduceAsync, aclrtRandomNumAsync). */
RT_HIDDEN void *rt_device_pin_on(const char *fn, const char *arg, const void *p, uint64_t nbytes,
                                 int dev, aclError *rc);
/* ---- host memory registration (host_register.c) ---- */
RT_HIDDEN int64_t rt_host_registrations(void);      /* live ones */
RT_HIDDEN bool rt_host_registered(const void *p);   /* inside a live registration */
RT_HIDDEN void rt_host_registrations_release(void); /* aclFinalize */
/* The bytes of a copy task, overlapping or not (copy.c). */
RT_HIDDEN void rt_copy_bytes(void *dst, const void *src, size_t n);

/* ---- faults ---- */
/* For the synchronize calls, whose injected failure comes after the wait: counts the call
 * like aclemu_fault and, if it must fail, keeps the message in buf (cap >= 256) for
 * rt_fault_report to set once the wait is over. */
RT_HIDDEN bool rt_fault_deferred(const char *fn, char *buf, size_t cap);
RT_HIDDEN aclError rt_fault_report(const char *buf);
/* Task faults (aclemuSetFaults "name:n:fail[=code]" / "name:n:hang[=ms]"): the n-th call of
 * name succeeds, and the task it queues fails when it runs, or hangs. */
#define RT_TASK_FAULT_NONE 0
#define RT_TASK_FAULT_FAIL 1
#define RT_TASK_FAULT_HANG 2
/* A kernel's exception as the vendor's stream example reports it on an Atlas A2 part
 * (hicann/runtime example/1_basic_features/stream/1_stream_with_failure_mode/README.md). */
#define RT_TASK_FAULT_DEFAULT_CODE ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
/* A kernel that outlasts the op execute timeout (aclrtSetOpExecuteTimeOut): the timeout of the
 * same cores as the exception above (the device's report names the core that ran it). */
#define RT_TASK_TIMEOUT_CODE ACL_ERROR_RT_VECTOR_CORE_TIMEOUT
/* The task fault the public call in progress on this thread carries (RT_TASK_FAULT_*, *arg
 * its code or milliseconds), cleared: taken by the call's enqueue. */
RT_HIDDEN int rt_take_task_fault(int64_t *arg);
/* Changes at every aclemuSetFaults, which releases the hung tasks. */
RT_HIDDEN uint64_t rt_fault_generation(void);

/* ---- error reports (errors.c, exception.c) ---- */
/* Evaluates to code, recording it as the calling thread's last error (aclrtGetLastError) when
 * it is a runtime status (ACL_ERROR_RT_*: families 107, 207 and 507). Inline, so the compiler
 * sees a failure stay a failure. */
RT_HIDDEN extern _Thread_local aclError rt_tl_last_error;
static inline aclError rt_fail(aclError code) {
    int family = code / 1000;
    if (family == 107 || family == 207 || family == 507)
        rt_tl_last_error = code;
    return code;
}

/* A task failed (status code) on stream stream_id of device, queued as task task_id of that
 * stream by OS thread tid: calls the exception callbacks (aclrtSetExceptionInfoCallback,
 * aclrtExceptionInfoCallbackRegister) on the calling thread, as host functions (see
 * rt_refuse_in_host_function). */
RT_HIDDEN void rt_task_failed(uint32_t task_id, uint32_t stream_id, uint32_t tid, int device,
                              aclError code);
RT_HIDDEN uint32_t rt_os_thread_id(void);
/* Marks the calling thread as running a host function for `runner` (the calls CANN forbids
 * there refused, naming it) until rt_host_function_end(the returned value). */
RT_HIDDEN const char *rt_host_function_begin(const char *runner);
RT_HIDDEN void rt_host_function_end(const char *outer);

/* ---- the part and operator timeouts (soc.c, op_timeout.c) ---- */
/* The NPU architecture of a part the emulator emulates, by name; -1 for other names. */
RT_HIDDEN int rt_soc_arch(const char *name);
/* aclrtSetOpWaitTimeout's seconds (0: no limit): the limit of the wait tasks queued by
 * aclrtStreamWaitEvent from then on. */
RT_HIDDEN uint32_t rt_op_wait_timeout_s(void);
/* How long a kernel task may run: aclrtSetOpExecuteTimeOut's time, or the part's default. */
RT_HIDDEN uint64_t rt_op_execute_timeout_ms(void);

/* ---- misc ---- */
RT_HIDDEN uint64_t rt_now_ns(void);                 /* CLOCK_MONOTONIC */
/* One spin-wait step (x86 pause / arm yield). Waits spin briefly before sleeping on a condition
 * variable, which keeps the submit -> worker -> synchronize round trip in microseconds. */
RT_HIDDEN void rt_cpu_relax(void);
RT_HIDDEN void rt_spin_step(unsigned iteration); /* pause, then sched_yield when it drags on */
#define RT_SPIN_NS 30000 /* bounded: 30 us, then sleep */
/* Condition variables that timed waits use run on CLOCK_MONOTONIC (a wall-clock step must not
 * stretch or cut a timeout); rt_timespec converts an rt_now_ns() deadline for them. */
RT_HIDDEN void rt_cond_init_monotonic(pthread_cond_t *cv);
RT_HIDDEN struct timespec rt_timespec(uint64_t ns);

#endif /* ACLEMU_RT_INTERNAL_H_ */
