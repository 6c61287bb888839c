/*
 * Streams and events.
 *
 * A stream is a FIFO of tasks run in order by a worker thread of its own. `submitted` and
 * `completed` count tasks; synchronizing waits until `completed` reaches the `submitted`
 * seen on entry. Both the worker (waiting for work) and a synchronizer (waiting for
 * completion) spin for a bounded few microseconds before sleeping on a condition variable,
 * so a submit -> run -> synchronize round trip usually costs no futex call at all.
 *
 * Lifetime: streams and events are reference counted (rt_obj). The registry holds one
 * reference; each call that uses a handle takes one under the registry lock (so a concurrent
 * destroy cannot free it underneath); an event's pending records hold one each. Destroying a
 * stream unregisters it, marks it dead (no more submits), drains it and joins the worker;
 * the memory goes when the last reference does.
 *
 * Failed tasks (only injected ones: aclemuSetFaults "name:n:fail") follow the stream's failure
 * mode (aclrtSetStreamFailureMode, hicann/runtime docs/zh/api_ref/06_stream_management.md and
 * src/runtime/core/src/stream/stream.cc): ACL_CONTINUE_ON_FAILURE runs the later tasks and the
 * next synchronize reports the failure once (Stream::GetError clears it); ACL_STOP_ON_FAILURE
 * puts the stream in its abort state: later tasks do not run, event records still complete
 * (the runtime triggers them when the stream enters abort), and every synchronize reports
 * the failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

typedef struct {
    aclemu_task_fn run, release;
    void *arg;
    int fault;          /* RT_TASK_FAULT_*: injected through the call that queued it */
    int64_t fault_arg;  /* the failure's status, or the hang's milliseconds (-1: no limit) */
    const char *call;   /* the public call that queued it (a static name) */
    uint64_t fault_gen; /* rt_fault_generation() when it was queued: a hang lasts until it
                         * changes, even if that happens before the task starts */
    uint32_t tid;       /* the OS thread that queued it (the exception callbacks') */
    bool kernel;        /* an operator's kernel (aclemu_stream_submit): the op execute
                         * timeout (aclrtSetOpExecuteTimeOut) bounds it */
} rt_task;

struct rt_stream {
    rt_obj hdr;
    int device;
    bool is_default;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* the worker waits here for tasks */
    pthread_cond_t done_cv;  /* synchronizers wait here for completion */
    rt_task *ring;           /* circular queue, capacity a power of two (mu) */
    size_t cap, head, len;
    _Atomic uint64_t submitted, completed;
    _Atomic int waiters;     /* synchronizers asleep or about to be */
    bool worker_asleep;      /* mu */
    bool stop, dead;         /* mu */
    bool stop_on_failure;    /* ACL_STOP_ON_FAILURE set (mu) */
    bool aborted;            /* a task failed in that mode: later tasks do not run (mu) */
    aclError task_error;     /* a failed task's status, not yet reported (mu) */
    char task_error_msg[200];/* its message (mu) */
    bool has_thread;
    pthread_t thread;
    rt_stream *prev, *next;  /* the device's stream list (g_dev_mu) */
    /* Configuration (aclrtCreateStreamWithConfig) and control (aclrtStreamStop/Abort). */
    uint32_t flags;          /* the ACL_STREAM_* bits it was created with */
    int32_t priority;        /* 0 (highest) .. RT_STREAM_LEAST_PRIORITY */
    int32_t id;              /* aclrtStreamGetId: 0 for a default stream, else the lowest free */
    _Atomic uint64_t cancels;/* bumped by stop and abort: the running task is to end */
    uint64_t discard_upto;   /* abort: the tasks numbered up to this are dropped (mu) */
};

typedef struct rt_event {
    rt_obj hdr;
    int device;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t issued;     /* records queued (mu) */
    uint64_t done;       /* highest record sequence that ran (mu) */
    uint64_t stamp_ns;   /* CLOCK_MONOTONIC time of that record (mu) */
    /* Records queued and not yet run, by sequence (mu): a wait is for one record, the last
     * issued when it was made, and records on different streams finish in any order. */
    uint64_t *inflight;
    size_t n_inflight, cap_inflight;
    uint64_t waits;      /* aclrtStreamWaitEvent tasks queued and not yet run (mu) */
    aclError done_error; /* record `done` completed on a stream aborted by this status (mu) */
    /* The device's event flag (mu): a record task sets it when it runs, an aclrtResetEvent
     * task clears it; an aclrtStreamWaitEvent task passes only while it is set. */
    bool signaled;
    struct rt_event *prev, *next; /* the device's event list (g_dev_mu) */
    /* Its creation (event flags, below): the runtime's flag bits, whether it is an event of
     * aclrtCreateEventExWithFlag (the runtime's "new mode"), whether its records carry a
     * timestamp. */
    uint32_t flag;
    bool ex;
    bool stamps;
    /* The flag of its first record and first wait, UINT32_MAX before (mu): later ones must
     * match (hicann/runtime src/runtime/api/impl/api_error.cc EventRecord, StreamWaitEvent). */
    uint32_t record_flag, wait_flag;
    const rt_stream *last_record_stream; /* the stream of the last record (mu; identity only) */
    int32_t id;          /* aclrtGetEventId's: the device's lowest free id, -1 before one is
                          * given (g_dev_mu) */
} rt_event;

/* The runtime's event flag bits (hicann/runtime pkg_inc/runtime/runtime/event.h): the ACL
 * names ACL_EVENT_SYNC (DDSYNC_NS), ACL_EVENT_CAPTURE_STREAM_PROGRESS (STREAM_MARK),
 * ACL_EVENT_TIME_LINE, ACL_EVENT_DEVICE_USE_ONLY (MC2), ACL_EVENT_EXTERNAL, ACL_EVENT_IPC;
 * DDSYNC has no ACL name. aclrtCreateEvent's events have RT_EVENT_DEFAULT. */
#define EV_DDSYNC_NS 0x01u
#define EV_STREAM_MARK 0x02u
#define EV_DDSYNC 0x04u
#define EV_TIME_LINE 0x08u
#define EV_MC2 0x10u
#define EV_EXTERNAL 0x20u
#define EV_IPC 0x40u
#define EV_DEFAULT (EV_DDSYNC | EV_TIME_LINE | EV_STREAM_MARK)

static struct {
    rt_stream *default_stream;
    rt_stream *streams; /* created with aclrtCreateStream, live */
    int n_created;      /* streams in that list, and ones being created */
    rt_event *events;
} g_sd[RT_MAX_DEVICES]; /* g_dev_mu */

/* Each task queued on a stream is numbered by the stream, from 0 in the order queued (its
 * place in `submitted`), and the thread that queued it remembers the number
 * (aclrtGetThreadLastTaskId; CANN's runtime numbers each stream's tasks and keeps the last per
 * thread, src/runtime/core/src/common/inner_thread_local.cpp; a device's runtime also queues
 * tasks of its own, so its numbers start elsewhere). */
static _Thread_local uint32_t tl_last_task_id;
/* Default streams alive, whose handles aclemuGetLiveObjects does not count as streams. */
static _Atomic int64_t g_live_default_streams;

int64_t rt_live_default_streams(void) { return atomic_load(&g_live_default_streams); }

/* ---- the worker ------------------------------------------------------------------------- */

static void record_run(void *arg);
static void record_note_abort(void *arg, aclError code);

/* An injected hang: until ms milliseconds have passed (ms < 0: no limit), the stream is being
 * destroyed (destroy, reset, finalize: nothing else would end it), stopped or aborted, or
 * aclemuSetFaults has been called since the task was queued (generation gen then). Polls:
 * hangs only happen in tests. */
static bool task_out_of_time(void);

static void hang(rt_stream *s, int64_t ms, uint64_t gen) {
    uint64_t cancels = atomic_load(&s->cancels);
    uint64_t end = ms < 0 ? UINT64_MAX : rt_now_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool dead = s->dead;
        pthread_mutex_unlock(&s->mu);
        /* A stop or an abort first: one that came before the hang's release (aclemuSetFaults
         * or its time) ends the task as stopped, whichever this poll sees first. */
        if (!dead && atomic_load(&s->cancels) != cancels) { /* aclrtStreamStop/Abort ends it */
            aclemu_task_cancelled();
            return;
        }
        if (dead || rt_fault_generation() != gen || rt_now_ns() >= end || task_out_of_time())
            return;
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
}

/* The task the calling thread runs, for aclemu_task_cancelled and aclemu_task_fail (the
 * stream's worker sets it around each task). */
static _Thread_local rt_stream *tl_task_stream;
static _Thread_local uint64_t tl_task_cancels; /* s->cancels when the task started */
static _Thread_local bool tl_task_stopped;      /* the task saw a stop or abort and ended */
/* A kernel task's deadline (rt_now_ns(); UINT64_MAX for other tasks) and whether it passed
 * while the task ran: the device ends a kernel that outlasts the op execute timeout. */
static _Thread_local uint64_t tl_task_deadline = UINT64_MAX;
static _Thread_local bool tl_task_timed_out;
static _Thread_local aclError tl_task_status;   /* aclemu_task_fail's status */
static _Thread_local char tl_task_msg[160];

/* Whether the running kernel task has outlasted the op execute timeout (then it is to end,
 * and fails with RT_TASK_TIMEOUT_CODE). */
static bool task_out_of_time(void) {
    if (tl_task_deadline == UINT64_MAX || rt_now_ns() < tl_task_deadline)
        return false;
    tl_task_timed_out = true;
    return true;
}

bool aclemu_task_cancelled(void) {
    rt_stream *s = tl_task_stream;
    if (s == NULL)
        return false;
    if (task_out_of_time())
        return true;
    pthread_mutex_lock(&s->mu);
    bool dead = s->dead; /* being destroyed (destroy, reset, finalize): nothing else ends it */
    pthread_mutex_unlock(&s->mu);
    if (!dead && atomic_load(&s->cancels) == tl_task_cancels)
        return false;
    tl_task_stopped = true;
    return true;
}

void aclemu_task_fail(aclError status, const char *what) {
    if (tl_task_stream == NULL || status == ACL_SUCCESS)
        return;
    tl_task_status = status;
    snprintf(tl_task_msg, sizeof tl_task_msg, "%s", what != NULL ? what : "a task failed");
}

/* Records a failed task's status and message (the first one is reported), and the stop the
 * failure mode asks for (mu held). */
static void note_failure(rt_stream *s, aclError status, const char *msg) {
    if (s->task_error == ACL_SUCCESS) {
        s->task_error = status;
        snprintf(s->task_error_msg, sizeof s->task_error_msg, "%s", msg);
    }
    if (s->stop_on_failure)
        s->aborted = true;
}

/* Runs task number seq as the stream's failure mode and an abort say (see the top of the
 * file). */
static void run_task(rt_stream *s, const rt_task *t, uint64_t seq) {
    tl_task_stream = s;
    tl_task_cancels = atomic_load(&s->cancels);
    tl_task_stopped = false;
    tl_task_status = ACL_SUCCESS;
    tl_task_timed_out = false;
    tl_task_deadline = t->kernel ? rt_now_ns() + rt_op_execute_timeout_ms() * 1000000ull
                                 : UINT64_MAX;
    if (t->fault == RT_TASK_FAULT_HANG)
        hang(s, t->fault_arg, t->fault_gen);
    pthread_mutex_lock(&s->mu);
    /* A stream stopped by a failure (ACL_STOP_ON_FAILURE) or an aclrtStreamAbort drops the
     * task: it does not run, so it cannot fail (an injected failure is not reported). */
    bool dropped = s->aborted || seq <= s->discard_upto;
    bool injected_failure = t->fault == RT_TASK_FAULT_FAIL && !dropped;
    if (injected_failure) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "a task queued by %s failed on the stream (injected fault, status %d)", t->call,
                 (int)t->fault_arg);
        note_failure(s, (aclError)t->fault_arg, msg);
    }
    bool skip = t->fault == RT_TASK_FAULT_FAIL || tl_task_stopped || tl_task_timed_out ||
                (dropped && t->run != record_run);
    aclError abort_code = s->aborted ? s->task_error : ACL_SUCCESS;
    pthread_mutex_unlock(&s->mu);
    /* The exception callbacks run before the task counts as done (exception.c), outside the
     * stream's lock (a callback may query the stream). */
    if (injected_failure)
        rt_task_failed((uint32_t)(seq - 1), (uint32_t)s->id, t->tid, s->device,
                       (aclError)t->fault_arg);
    if (!skip) {
        if (t->run == record_run)
            record_note_abort(t->arg, abort_code);
        t->run(t->arg);
    }
    if (tl_task_timed_out && !tl_task_stopped && !dropped) {
        tl_task_status = RT_TASK_TIMEOUT_CODE;
        snprintf(tl_task_msg, sizeof tl_task_msg,
                 "the kernel ran longer than the operator execute timeout (%llu ms: "
                 "aclrtSetOpExecuteTimeOut, or the part's default) and was ended",
                 (unsigned long long)rt_op_execute_timeout_ms());
    }
    tl_task_deadline = UINT64_MAX;
    if (tl_task_stopped || tl_task_status != ACL_SUCCESS) {
        char msg[200];
        if (tl_task_stopped) /* the vendor's stream example reports such a kernel so */
            snprintf(msg, sizeof msg, "the task queued by %s was stopped midway by "
                     "aclrtStreamStop or aclrtStreamAbort (status %d)", t->call,
                     (int)RT_TASK_FAULT_DEFAULT_CODE);
        else
            snprintf(msg, sizeof msg, "the task queued by %s failed: %s (status %d)", t->call,
                     tl_task_msg, (int)tl_task_status);
        pthread_mutex_lock(&s->mu);
        note_failure(s, tl_task_stopped ? RT_TASK_FAULT_DEFAULT_CODE : tl_task_status, msg);
        pthread_mutex_unlock(&s->mu);
        /* A task a stop or an abort ended did not fail: no exception callback. CANN's abort
         * reclaims the stream's tasks without reading their completions
         * (src/runtime/core/src/stream/stream.cc Stream::ResClear); its code shows nothing
         * for a stop, which the emulator treats alike (docs/emulator.md). */
        if (!tl_task_stopped)
            rt_task_failed((uint32_t)(seq - 1), (uint32_t)s->id, t->tid, s->device,
                           tl_task_status);
    }
    tl_task_stream = NULL;
}

static void *worker_main(void *arg) {
    rt_stream *s = arg;
    uint64_t ran = 0;
    for (;;) {
        /* Spin a little on the lock-free counter before taking the lock and sleeping. */
        if (atomic_load_explicit(&s->submitted, memory_order_acquire) == ran) {
            uint64_t t0 = rt_now_ns();
            for (unsigned i = 1; atomic_load_explicit(&s->submitted, memory_order_acquire) == ran;
                 i++) {
                rt_spin_step(i);
                if ((i & 63) == 0 && rt_now_ns() - t0 > RT_SPIN_NS)
                    break;
            }
        }
        pthread_mutex_lock(&s->mu);
        while (s->len == 0 && !s->stop) {
            s->worker_asleep = true;
            pthread_cond_wait(&s->work_cv, &s->mu);
            s->worker_asleep = false;
        }
        if (s->len == 0) { /* stop, and drained */
            pthread_mutex_unlock(&s->mu);
            break;
        }
        rt_task t = s->ring[s->head];
        s->head = (s->head + 1) & (s->cap - 1);
        s->len--;
        pthread_mutex_unlock(&s->mu);

        run_task(s, &t, ran + 1);
        if (t.release != NULL)
            t.release(t.arg);
        ran++;
        atomic_store(&s->completed, ran); /* seq_cst: pairs with the waiter's increment */
        if (atomic_load(&s->waiters) > 0) {
            pthread_mutex_lock(&s->mu);
            pthread_cond_broadcast(&s->done_cv);
            pthread_mutex_unlock(&s->mu);
        }
    }
    return NULL;
}

static void stream_free(rt_obj *o) {
    rt_stream *s = (rt_stream *)o;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    free(s->ring);
    free(s);
}

static rt_stream *stream_new(int dev, bool is_default) {
    rt_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->cap = 64;
    s->ring = malloc(s->cap * sizeof *s->ring);
    if (s->ring == NULL) {
        free(s);
        return NULL;
    }
    atomic_init(&s->hdr.refs, 1);
    s->hdr.free_fn = stream_free;
    s->device = dev;
    s->is_default = is_default;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    rt_cond_init_monotonic(&s->done_cv); /* timed synchronizes wait on it */
    if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
        stream_free(&s->hdr);
        return NULL;
    }
    s->has_thread = true;
    return s;
}

/* Waits until task `target` has completed, or past deadline_ns (CLOCK_MONOTONIC; UINT64_MAX:
 * no limit). Returns whether it completed. */
static bool stream_wait(rt_stream *s, uint64_t target, uint64_t deadline_ns) {
    if (atomic_load(&s->completed) >= target)
        return true;
    uint64_t t0 = rt_now_ns();
    for (unsigned i = 1; atomic_load_explicit(&s->completed, memory_order_acquire) < target; i++) {
        rt_spin_step(i);
        if ((i & 63) == 0 && rt_now_ns() - t0 > RT_SPIN_NS)
            break;
    }
    if (atomic_load(&s->completed) >= target)
        return true;
    atomic_fetch_add(&s->waiters, 1);
    pthread_mutex_lock(&s->mu);
    bool done;
    while (!(done = atomic_load(&s->completed) >= target)) {
        if (deadline_ns == UINT64_MAX) {
            pthread_cond_wait(&s->done_cv, &s->mu);
            continue;
        }
        if (rt_now_ns() >= deadline_ns)
            break;
        struct timespec until = rt_timespec(deadline_ns);
        pthread_cond_timedwait(&s->done_cv, &s->mu, &until);
    }
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_sub(&s->waiters, 1);
    return done;
}

static void stream_sync(rt_stream *s) {
    stream_wait(s, atomic_load(&s->submitted), UINT64_MAX);
}

/* The status a synchronize of s reports once its tasks are done: a failed task's, with its
 * message set naming fn; in ACL_CONTINUE_ON_FAILURE mode reported once, in the abort state
 * of ACL_STOP_ON_FAILURE every time (hicann/runtime src/runtime/core/src/stream/stream.cc
 * Stream::GetError keeps the code only in abort). */
static aclError stream_take_error(rt_stream *s, const char *fn) {
    pthread_mutex_lock(&s->mu);
    aclError rc = s->task_error;
    if (rc != ACL_SUCCESS)
        RT_ERR(rc, fn, "stream %p: %s%s", s->is_default ? NULL : (void *)s, s->task_error_msg,
               s->aborted ? "; the stream stopped there (ACL_STOP_ON_FAILURE): later tasks did "
                            "not run"
                          : "");
    if (!s->aborted)
        s->task_error = ACL_SUCCESS;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The deadline of a wait of timeout_ms from now (-1: none). */
static uint64_t deadline_after(int32_t timeout_ms) {
    return timeout_ms < 0 ? UINT64_MAX : rt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* Refuses new work, drains, stops and joins the worker, drops the caller's reference. */
static void stream_shutdown(rt_stream *s) {
    pthread_mutex_lock(&s->mu);
    s->dead = true;
    pthread_mutex_unlock(&s->mu);
    stream_sync(s);
    rt_callback_stream_gone(s);
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    if (s->has_thread && !pthread_equal(s->thread, pthread_self()))
        pthread_join(s->thread, NULL);
    else if (s->has_thread)
        pthread_detach(s->thread); /* a task destroying its own stream: let it finish */
    s->has_thread = false;
    rt_obj_put(&s->hdr);
}

static aclError stream_push(rt_stream *s, aclemu_task_fn run, aclemu_task_fn release,
                            void *arg, const char *fn, bool kernel) {
    aclError refused = rt_refuse_in_host_function(fn); /* no launch from a host function */
    if (refused != ACL_SUCCESS)
        return refused;
    if ((s->flags & ACL_STREAM_DEVICE_USE_ONLY) != 0)
        /* CANN sends no task to such a stream from the host (RT_ERROR_STREAM_INVALID, 507000:
         * hicann/runtime src/runtime/core/src/engine/engine.cc Engine::SendTask) */
        return RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn,
                      "stream %p was created with ACL_STREAM_DEVICE_USE_ONLY: no task is queued "
                      "on it from the host", (void *)s);
    pthread_mutex_lock(&s->mu);
    if (s->dead) {
        pthread_mutex_unlock(&s->mu);
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn, "stream %p is being destroyed", (void *)s);
    }
    if (s->len == s->cap) {
        rt_task *nr = malloc(2 * s->cap * sizeof *nr);
        if (nr == NULL) {
            pthread_mutex_unlock(&s->mu);
            return RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory for the stream queue");
        }
        for (size_t i = 0; i < s->len; i++)
            nr[i] = s->ring[(s->head + i) & (s->cap - 1)];
        free(s->ring);
        s->ring = nr;
        s->head = 0;
        s->cap *= 2;
    }
    int64_t fault_arg;
    int fault = rt_take_task_fault(&fault_arg);
    uint32_t task_id = (uint32_t)atomic_load_explicit(&s->submitted, memory_order_relaxed);
    s->ring[(s->head + s->len) & (s->cap - 1)] = (rt_task){run, release, arg, fault, fault_arg, fn,
                                                               rt_fault_generation(),
                                                               rt_os_thread_id(), kernel};
    tl_last_task_id = task_id;
    s->len++;
    atomic_fetch_add(&s->submitted, 1);
    if (s->worker_asleep)
        pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    return ACL_SUCCESS;
}

aclError rt_stream_push(rt_stream *s, aclemu_task_fn run, aclemu_task_fn release, void *arg,
                        const char *fn) {
    return stream_push(s, run, release, arg, fn, false);
}

aclError rt_stream_get(aclrtStream stream, int dev, const char *fn, rt_stream **out) {
    if (stream == NULL) {
        /* Default streams are destroyed only under the write lock, so while the caller
         * holds the read lock the pointer stays valid; the reference keeps it uniform. */
        pthread_mutex_lock(&g_dev_mu);
        rt_stream *s = g_sd[dev].default_stream;
        bool created = s == NULL;
        if (s == NULL && (s = g_sd[dev].default_stream = stream_new(dev, true)) != NULL) {
            /* A live handle, as CANN's default stream is a stream like the others
             * (aclrtCtxGetCurrentDefaultStream hands it out); not counted as created. */
            aclemu_handle_register(s, ACLEMU_KIND_STREAM);
            atomic_fetch_add(&g_live_default_streams, 1);
        }
        if (s != NULL)
            atomic_fetch_add(&s->hdr.refs, 1);
        pthread_mutex_unlock(&g_dev_mu);
        if (s == NULL)
            return RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn,
                          "cannot start device %d's default stream (out of threads or memory)", dev);
        if (created)
            rt_stream_state_notify(s, ACL_RT_STREAM_STATE_CREATE_POST);
        *out = s;
        return ACL_SUCCESS;
    }
    if (!rt_handle_acquire(stream, ACLEMU_KIND_STREAM))
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                      "stream %p is not a live stream (never created or already destroyed)",
                      stream);
    rt_stream *s = stream;
    if (s->device != dev) {
        rt_obj_put(&s->hdr);
        return RT_ERR(ACL_ERROR_RT_STREAM_CONTEXT, fn,
                      "stream %p belongs to device %d but the calling thread's device is %d",
                      stream, s->device, dev);
    }
    *out = s;
    return ACL_SUCCESS;
}

void rt_stream_put(rt_stream *s) { rt_obj_put(&s->hdr); }

aclError rt_stream_valid(aclrtStream stream, const char *fn) {
    if (stream == NULL) /* the default stream */
        return ACL_SUCCESS;
    if (!aclemu_handle_check(stream, ACLEMU_KIND_STREAM))
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                      "stream %p is not a live stream (never created or already destroyed)",
                      stream);
    return ACL_SUCCESS;
}

aclError rt_check_null_stream(aclrtStream stream, const char *fn) {
    if (stream != NULL)
        return ACL_SUCCESS;
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (soc == NULL)
        return ACL_ERROR_RT_INTERNAL_ERROR; /* the message names ACL_EMU_SOC */
    if (soc->npu_arch != 2201 && soc->npu_arch != 3510)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "stream is NULL: on the %s (%s) the runtime takes no default stream for "
                      "this call (only Atlas A2/A3 and Ascend 950 do); pass a created stream or "
                      "the one aclrtCtxGetCurrentDefaultStream gives", soc->series, soc->name);
    if (rt_current_device() < 0)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "stream is NULL and the thread has no current device whose default "
                      "stream it would be (aclrtSetDevice first, or pass a stream)");
    return ACL_SUCCESS;
}

/* ---- public: streams ------------------------------------------------------------------- */

/* The lowest stream id no live created stream of dev has, from 1 (0 is the default
 * stream's); g_dev_mu held. */
static int32_t free_stream_id(int dev) {
    for (int32_t id = 1;; id++) {
        bool used = false;
        for (rt_stream *o = g_sd[dev].streams; o != NULL && !used; o = o->next)
            used = o->id == id;
        if (!used)
            return id;
    }
}

/* aclrtCreateStream (priority 0, no flags) and aclrtCreateStreamWithConfig. */
static aclError create_stream(aclrtStream *stream, int32_t priority, uint32_t flags,
                              const char *fn) {
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(fn, ACL_ERROR_RT_MEMORY_ALLOCATION);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (stream == NULL) { /* CANN's ACL layer checks it before the runtime needs a device */
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "stream (output pointer) is NULL");
        goto out;
    }
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS)
        goto out;
    /* A device runs a limited number of streams, the default stream and one the runtime keeps
     * for itself included (aclrtCreateStream's documentation); past it CANN fails with
     * "Too many streams are created", 207005 (hicann/runtime docs/zh/FAQ, EE1023). */
    pthread_mutex_lock(&g_dev_mu);
    int limit = rt_max_streams() - 2;
    bool full = g_sd[dev].n_created >= limit;
    if (!full)
        g_sd[dev].n_created++;
    pthread_mutex_unlock(&g_dev_mu);
    if (full) {
        rc = RT_ERR(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn,
                    "too many streams on device %d: %d created, the most a device allows besides "
                    "its default stream and the runtime's own (%d streams in all; "
                    "ACL_EMU_MAX_STREAMS sets it, default %d, the lowest documented maximum)",
                    dev, limit, rt_max_streams(), RT_DEFAULT_MAX_STREAMS);
        goto out;
    }
    rt_stream *s = stream_new(dev, false);
    if (s == NULL) {
        pthread_mutex_lock(&g_dev_mu);
        g_sd[dev].n_created--;
        pthread_mutex_unlock(&g_dev_mu);
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, fn,
                    "cannot create a stream (out of threads or memory)");
        goto out;
    }
    s->priority = priority;
    s->flags = flags;
    pthread_mutex_lock(&g_dev_mu);
    s->id = free_stream_id(dev);
    s->next = g_sd[dev].streams;
    if (s->next)
        s->next->prev = s;
    g_sd[dev].streams = s;
    pthread_mutex_unlock(&g_dev_mu);
    aclemu_handle_register(s, ACLEMU_KIND_STREAM);
    *stream = s;
    rt_stream_state_notify(s, ACL_RT_STREAM_STATE_CREATE_POST);
out:
    rt_leave();
    return rc;
}

aclError aclrtCreateStream(aclrtStream *stream) { return create_stream(stream, 0, 0, __func__); }

/* Streams whose synchronize and query CANN answers at once, without waiting. */
#define STREAM_FLAGS_NO_HOST_WAIT \
    (ACL_STREAM_PERSISTENT | ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY)

/* The flags CANN's ACL layer passes on (hicann/runtime src/acl/aclrt_impl/stream.cpp
 * aclrtCreateStreamWithConfigImpl maps each to the runtime's flag; other bits are dropped). */
#define STREAM_FLAGS_KNOWN                                                                     \
    (ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE | \
     ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY)

aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
    /* CANN's runtime takes the priority as an int32_t and clamps it into [0, 7] (src/runtime/
     * api/impl/api_error.cc StreamCreate; base_info.hpp RT_STREAM_GREATEST/LEAST_PRIORITY):
     * nothing is refused. */
    int32_t p = (int32_t)priority;
    p = p < 0 ? 0 : p > RT_STREAM_LEAST_PRIORITY ? RT_STREAM_LEAST_PRIORITY : p;
    return create_stream(stream, p, flag & STREAM_FLAGS_KNOWN, __func__);
}

static void unlink_stream(rt_stream *s) { /* g_dev_mu held */
    g_sd[s->device].n_created--;
    if (s->prev)
        s->prev->next = s->next;
    else if (g_sd[s->device].streams == s)
        g_sd[s->device].streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* aclrtDestroyStream and aclrtDestroyStreamForce. The forced one does not wait on a device
 * for the stream's unfinished tasks (hicann/runtime docs/zh/api_ref/06_stream_management.md);
 * a CPU cannot abort a task midway nor prove a queued one unneeded (an event it records may
 * be waited for), so here both drain: a run where the tasks finished first, which a device
 * may also give. */
static aclError destroy_stream(aclrtStream stream, const char *fn) {
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    if (stream == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                    "stream is NULL (the default stream cannot be destroyed)");
        goto out;
    }
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS)
        goto out;
    if ((rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    if (s->is_default) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                    "stream %p is device %d's default stream (aclrtCtxGetCurrentDefaultStream), "
                    "which cannot be destroyed: aclrtResetDevice releases it", stream, dev);
        goto out;
    }
    rt_stream_state_notify(s, ACL_RT_STREAM_STATE_DESTROY_PRE);
    if (!aclemu_handle_unregister(s, ACLEMU_KIND_STREAM)) { /* another thread won the race */
        rc = RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                    "stream %p is not a live stream (already destroyed)", stream);
        goto out;
    }
    pthread_mutex_lock(&g_dev_mu);
    unlink_stream(s);
    pthread_mutex_unlock(&g_dev_mu);
    stream_shutdown(s); /* drops the registry's reference */
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtDestroyStream(aclrtStream stream) { return destroy_stream(stream, __func__); }

aclError aclrtDestroyStreamForce(aclrtStream stream) {
    return destroy_stream(stream, __func__);
}

/* The stream a synchronize or query names, with a reference, whatever its device: NULL is
 * `dev`'s default stream, *out NULL if it does not exist yet (nothing was queued on it). */
static aclError stream_of_any_device(aclrtStream stream, int dev, const char *fn,
                                     rt_stream **out) {
    if (stream == NULL) {
        pthread_mutex_lock(&g_dev_mu);
        rt_stream *s = g_sd[dev].default_stream;
        if (s != NULL)
            atomic_fetch_add(&s->hdr.refs, 1);
        pthread_mutex_unlock(&g_dev_mu);
        *out = s;
        return ACL_SUCCESS;
    }
    if (!rt_handle_acquire(stream, ACLEMU_KIND_STREAM))
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                      "stream %p is not a live stream (never created or already destroyed)",
                      stream);
    *out = stream;
    return ACL_SUCCESS;
}

aclError rt_stream_drain(aclrtStream stream, int dev, const char *fn) {
    rt_stream *s = NULL;
    aclError rc = rt_refuse_in_host_function(fn); /* it may be this very stream's */
    if (rc == ACL_SUCCESS)
        rc = stream_of_any_device(stream, dev, fn, &s);
    if (s != NULL) {
        stream_sync(s);
        rt_stream_put(s);
    }
    return rc;
}

/* aclrtSynchronizeStream (timeout_ms -1, no check) and aclrtSynchronizeStreamWithTimeout. */
static aclError synchronize_stream(aclrtStream stream, int32_t timeout_ms, bool timed,
                                   const char *fn) {
    char fault_msg[256];
    bool fault = rt_fault_deferred(fn, fault_msg, sizeof fault_msg); /* after the wait */
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_enter(fn);
    if (rc == ACL_SUCCESS) {
        int dev;
        rt_stream *s = NULL;
        /* In CANN's order (hicann/runtime src/acl/aclrt_impl/stream.cpp, src/runtime/api/
         * api_c_stream.cc, api_error.cc and api_impl.cc StreamSynchronize): the ACL layer's
         * timeout check, the handle, the runtime's timeout check, the context. A stream of
         * another device is waited for too: CANN switches to the stream's context for the
         * wait and back (api_impl.cc StreamSynchronize). */
        if ((!timed || (rc = rt_check_timeout(fn, timeout_ms, true)) == ACL_SUCCESS) &&
            (rc = rt_stream_valid(stream, fn)) == ACL_SUCCESS &&
            (!timed || (rc = rt_check_timeout(fn, timeout_ms, false)) == ACL_SUCCESS) &&
            (rc = rt_need_device(fn, &dev)) == ACL_SUCCESS)
            rc = stream_of_any_device(stream, dev, fn, &s);
        if (s != NULL && (s->flags & STREAM_FLAGS_NO_HOST_WAIT) != 0) {
            /* CANN returns at once for these streams (hicann/runtime src/runtime/api/impl/
             * api_error.cc StreamSynchronize; 06_stream_management.md says so too) */
            rc = ACL_SUCCESS;
            rt_stream_put(s);
        } else if (s != NULL) {
            if (stream_wait(s, atomic_load(&s->submitted), deadline_after(timeout_ms)))
                rc = stream_take_error(s, fn);
            else
                rc = RT_ERR(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, fn,
                            "stream %p: its tasks did not complete within %d ms (they stay "
                            "queued and still run)", stream, (int)timeout_ms);
            rt_stream_put(s);
        }
        rt_leave();
    }
    if (fault)
        rc = rt_fault_report(fault_msg);
    return rc;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    return synchronize_stream(stream, -1, false, __func__);
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    return synchronize_stream(stream, timeout, true, __func__);
}

aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    /* CANN (hicann/runtime src/acl/aclrt_impl/stream.cpp, src/runtime/api/api_c_stream.cc
     * rtStreamSetMode, api_error.cc and api_impl.cc StreamSetMode): no ACL-layer check; the
     * handle; NULL as GetCurStream takes it (rt_check_null_stream); the context; only bit 0
     * of mode counts (any other value is taken); the same mode again succeeds; stop ->
     * continue is refused (RT_ERROR_FEATURE_NOT_SUPPORT, 207000); then a stream of another
     * device (107003). */
    if ((rc = rt_stream_valid(stream, __func__)) != ACL_SUCCESS ||
        (rc = rt_check_null_stream(stream, __func__)) != ACL_SUCCESS ||
        (rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    if (stream == NULL)
        rc = rt_stream_get(NULL, dev, __func__, &s);
    else
        rc = stream_of_any_device(stream, dev, __func__, &s);
    if (rc != ACL_SUCCESS)
        goto out;
    if ((s->flags & ACL_STREAM_DEVICE_USE_ONLY) != 0) {
        /* api_error.cc StreamSetMode: not for a coprocessor (device-use-only) stream */
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "stream %p was created with ACL_STREAM_DEVICE_USE_ONLY, whose failure mode "
                    "cannot be set", stream);
        goto out;
    }
    bool stop = (mode & ACL_STOP_ON_FAILURE) != 0;
    pthread_mutex_lock(&s->mu);
    bool was_stop = s->stop_on_failure;
    pthread_mutex_unlock(&s->mu);
    if (stop == was_stop)
        goto out;
    if (was_stop) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "mode %llu: stream %p is in ACL_STOP_ON_FAILURE mode, which cannot be changed "
                    "back to ACL_CONTINUE_ON_FAILURE", (unsigned long long)mode, stream);
        goto out;
    }
    if (s->device != dev) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_CONTEXT, __func__,
                    "stream %p belongs to device %d but the calling thread's device is %d",
                    stream, s->device, dev);
        goto out;
    }
    pthread_mutex_lock(&s->mu);
    s->stop_on_failure = true;
    pthread_mutex_unlock(&s->mu);
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    /* CANN's order (hicann/runtime src/acl/aclrt_impl/stream.cpp aclrtStreamQuery, then
     * api_c_stream.cc and api_impl.cc StreamQuery): the NULL status, the stream handle, the
     * current context. Like aclrtSynchronizeStream, a stream of another device is queried
     * (StreamQuery does not compare the stream's context with the current one). */
    if (status == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "status (output pointer) is NULL");
        goto out;
    }
    if ((rc = rt_stream_valid(stream, __func__)) != ACL_SUCCESS ||
        (rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    if ((rc = stream_of_any_device(stream, dev, __func__, &s)) != ACL_SUCCESS)
        goto out;
    *status = s == NULL || (s->flags & STREAM_FLAGS_NO_HOST_WAIT) != 0 || /* api_error.cc */
                      atomic_load(&s->completed) >= atomic_load(&s->submitted)
                  ? ACL_STREAM_STATUS_COMPLETE
                  : ACL_STREAM_STATUS_NOT_READY;
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

/* ---- device-wide ------------------------------------------------------------------------- */

/* Collects the device's streams with a reference each (g_dev_mu held while collecting). */
static size_t collect(int dev, rt_stream ***out) {
    size_t n = g_sd[dev].default_stream != NULL;
    for (rt_stream *s = g_sd[dev].streams; s; s = s->next)
        n++;
    rt_stream **v = malloc((n ? n : 1) * sizeof *v);
    if (v == NULL)
        return 0;
    size_t k = 0;
    if (g_sd[dev].default_stream != NULL)
        v[k++] = g_sd[dev].default_stream;
    for (rt_stream *s = g_sd[dev].streams; s; s = s->next)
        v[k++] = s;
    for (size_t i = 0; i < k; i++)
        atomic_fetch_add(&v[i]->hdr.refs, 1);
    *out = v;
    return k;
}

aclError rt_streams_sync_device(int dev, int32_t timeout_ms, const char *fn) {
    rt_stream **v = NULL;
    pthread_mutex_lock(&g_dev_mu);
    size_t n = collect(dev, &v);
    pthread_mutex_unlock(&g_dev_mu);
    /* One time limit for all the streams, and the first failure reported after every stream
     * was waited for (hicann/runtime src/runtime/core/src/context/context.cc
     * SyncStreamsWithTimeout, continue-on-failure). */
    uint64_t deadline = deadline_after(timeout_ms);
    aclError rc = ACL_SUCCESS;
    size_t i = 0;
    for (; i < n; i++) {
        if (!stream_wait(v[i], atomic_load(&v[i]->submitted), deadline)) {
            rc = RT_ERR(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, fn,
                        "device %d: the tasks of stream %p did not complete within %d ms (they "
                        "stay queued and still run)", dev, v[i]->is_default ? NULL : (void *)v[i],
                        (int)timeout_ms);
            break;
        }
        char keep[1024];
        const char *prev = NULL;
        if (rc != ACL_SUCCESS) { /* keep the first failure's message */
            prev = aclGetRecentErrMsg();
            snprintf(keep, sizeof keep, "%s", prev != NULL ? prev : "");
        }
        aclError e = stream_take_error(v[i], fn);
        if (rc == ACL_SUCCESS)
            rc = e;
        else
            aclemu_set_error("%s", keep);
    }
    for (size_t k = 0; k < n; k++)
        rt_stream_put(v[k]);
    free(v);
    return rc;
}

void rt_default_stream_start(int dev) {
    rt_stream *s;
    /* A failure (out of threads) leaves it to the first use, which reports it. */
    if (rt_stream_get(NULL, dev, "aclrtSetDevice", &s) == ACL_SUCCESS)
        rt_stream_put(s);
}

void rt_streams_notify_destroy(int dev) {
    rt_stream **v = NULL;
    pthread_mutex_lock(&g_dev_mu);
    size_t n = collect(dev, &v); /* the default stream first, as CANN's primary context */
    pthread_mutex_unlock(&g_dev_mu);
    for (size_t i = 0; i < n; i++)
        rt_stream_state_notify(v[i], ACL_RT_STREAM_STATE_DESTROY_PRE);
    for (size_t i = 0; i < n; i++)
        rt_stream_put(v[i]);
    free(v);
}

void rt_streams_teardown(int dev) { /* life write lock held: no other call runs */
    pthread_mutex_lock(&g_dev_mu);
    rt_stream *def = g_sd[dev].default_stream, *list = g_sd[dev].streams;
    rt_event *events = g_sd[dev].events;
    g_sd[dev].default_stream = NULL;
    g_sd[dev].streams = NULL;
    g_sd[dev].n_created = 0;
    g_sd[dev].events = NULL;
    pthread_mutex_unlock(&g_dev_mu);
    if (def != NULL) {
        aclemu_handle_unregister(def, ACLEMU_KIND_STREAM);
        atomic_fetch_sub(&g_live_default_streams, 1);
        stream_shutdown(def);
    }
    while (list != NULL) {
        rt_stream *next = list->next;
        list->prev = list->next = NULL;
        if (aclemu_handle_unregister(list, ACLEMU_KIND_STREAM))
            stream_shutdown(list);
        list = next;
    }
    while (events != NULL) { /* streams are drained: no record is pending */
        rt_event *next = events->next;
        events->prev = events->next = NULL;
        if (aclemu_handle_unregister(events, ACLEMU_KIND_EVENT))
            rt_obj_put(&events->hdr);
        events = next;
    }
    rt_notifies_teardown(dev);
    rt_callback_device_gone(dev);
}

int rt_stream_device(const rt_stream *s) { return s->device; }

/* ---- public: events ------------------------------------------------------------------- */

static void event_free(rt_obj *o) {
    rt_event *e = (rt_event *)o;
    free(e->inflight);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}

/* Whether the emulated part has the STARS task scheduler (Atlas A2/A3, Ascend 950): there an
 * event record's timestamp comes from the task's completion report, which the runtime asks
 * for only for ACL_EVENT_TIME_LINE events (hicann/runtime src/runtime/core/src/task/
 * task_info/event/event_task.cc EventRecordTaskInit: isCqeNeedConcern; the timestamp stays
 * 0 otherwise); the older parts report every record's time (event_task_v100.cc). Ascend
 * 950's IPC events and the device-only events of the A2/A3 come with the same parts
 * (src/runtime/config/910_B_93 and 950 dev_info_reg.cc: RT_FEATURE_IPC_EVENT). */
static bool part_has_stars(void) { return aclemu_soc_info("the runtime")->npu_arch >= 2201; }

/* Event ids (aclrtGetEventId). CANN's runtime takes one from the driver when it creates an
 * event with a flag of aclrtCreateEventWithFlag, and at the first record for the events of
 * aclrtCreateEvent and aclrtCreateEventExWithFlag (src/runtime/api/impl/api_impl.cc
 * EventCreate -> Event::GenEventId; src/runtime/core/src/event/event.cc Event::Record ->
 * AllocEventIdResource); an event no stream can wait for (ACL_EVENT_TIME_LINE or
 * ACL_EVENT_CAPTURE_STREAM_PROGRESS alone) gets none on the parts with the STARS scheduler
 * (InitEventAllocFlag). The emulator numbers them per device, the lowest id no live event of
 * the device has (the driver's numbers are its own). */
static bool event_gets_id(const rt_event *e) {
    bool waitable = (e->flag & (EV_DDSYNC | EV_DDSYNC_NS | EV_EXTERNAL | EV_IPC)) != 0;
    return waitable || !part_has_stars();
}

static void event_give_id(rt_event *e) { /* g_dev_mu held */
    if (e->id >= 0 || !event_gets_id(e))
        return;
    for (int32_t id = 0;; id++) {
        bool used = false;
        for (const rt_event *o = g_sd[e->device].events; o != NULL && !used; o = o->next)
            used = o->id == id;
        if (!used) {
            e->id = id;
            return;
        }
    }
}

/* The argument rules of aclrtCreateEventWithFlag (ex false) and aclrtCreateEventExWithFlag
 * (hicann/runtime src/runtime/api/impl/api_error.cc EventCreate, EventCreateEx), checked
 * before the runtime needs a device. */
static aclError check_event_flag(const char *fn, uint32_t flag, bool ex) {
    static const struct { uint32_t bit; const char *name; } solely[] = {
        {EV_MC2, "ACL_EVENT_DEVICE_USE_ONLY (0x10)"},
        {EV_EXTERNAL, "ACL_EVENT_EXTERNAL (0x20)"},
        {EV_IPC, "ACL_EVENT_IPC (0x40)"},
    };
    for (size_t i = 0; i < (ex ? 3u : 2u); i++)
        if ((flag & solely[i].bit) != 0 && (flag & ~solely[i].bit) != 0)
            return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                          "flag %#x: %s is not combined with other flags", (unsigned)flag,
                          solely[i].name);
    if (ex && flag == EV_IPC && !part_has_stars())
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "flag ACL_EVENT_IPC: %s does not support IPC events",
                      aclemu_soc_info(fn)->name);
    uint32_t all = ex ? (EV_DDSYNC_NS | EV_STREAM_MARK | EV_DDSYNC | EV_TIME_LINE | EV_IPC)
                      : (EV_DDSYNC_NS | EV_STREAM_MARK | EV_DDSYNC | EV_TIME_LINE | EV_MC2 |
                         EV_EXTERNAL);
    if ((flag & all) == 0 || flag > all)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "flag %#x is not an OR of ACL_EVENT_SYNC (0x1), "
                      "ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2), 0x4 and ACL_EVENT_TIME_LINE "
                      "(0x8), nor %s alone", (unsigned)flag,
                      ex ? "ACL_EVENT_IPC (0x40)"
                         : "ACL_EVENT_DEVICE_USE_ONLY (0x10) or ACL_EVENT_EXTERNAL (0x20)");
    return ACL_SUCCESS;
}

/* aclrtCreateEvent (flag EV_DEFAULT, not checked), aclrtCreateEventWithFlag and
 * aclrtCreateEventExWithFlag (ex). CANN's order: the NULL event (ACL layer, hicann/runtime
 * src/acl/aclrt_impl/event.cpp), the flag (api_error.cc), the context, then whether the part
 * has device-only events (api_impl.cc EventCreate: CheckSupportMC2Feature). */
static aclError create_event(const char *fn, aclrtEvent *event, uint32_t flag, bool ex,
                             bool check) {
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(fn, ACL_ERROR_RT_MEMORY_ALLOCATION);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (event == NULL) { /* CANN's ACL layer checks it before the runtime needs a device */
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "event (output pointer) is NULL");
        goto out;
    }
    if (check && (rc = check_event_flag(fn, flag, ex)) != ACL_SUCCESS)
        goto out;
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS)
        goto out;
    if (flag == EV_MC2 && aclemu_soc_info(fn)->npu_arch < 2002) {
        /* the API reference: Atlas training series parts have no device-only events
         * (07_event_management.md, aclrtCreateEventWithFlag) */
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                    "flag ACL_EVENT_DEVICE_USE_ONLY: %s does not support device-only events",
                    aclemu_soc_info(fn)->name);
        goto out;
    }
    rt_event *e = calloc(1, sizeof *e);
    if (e == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, fn, "out of host memory");
        goto out;
    }
    atomic_init(&e->hdr.refs, 1);
    e->hdr.free_fn = event_free;
    e->device = dev;
    e->flag = flag;
    e->ex = ex;
    e->stamps = (flag & EV_TIME_LINE) != 0 || !part_has_stars();
    e->record_flag = e->wait_flag = UINT32_MAX;
    e->id = -1;
    pthread_mutex_init(&e->mu, NULL);
    rt_cond_init_monotonic(&e->cv); /* timed synchronizes wait on it */
    pthread_mutex_lock(&g_dev_mu);
    if (!ex && flag != EV_DEFAULT)
        event_give_id(e);
    e->next = g_sd[dev].events;
    if (e->next)
        e->next->prev = e;
    g_sd[dev].events = e;
    pthread_mutex_unlock(&g_dev_mu);
    aclemu_handle_register(e, ACLEMU_KIND_EVENT);
    *event = e;
out:
    rt_leave();
    return rc;
}

aclError aclrtCreateEvent(aclrtEvent *event) {
    return create_event(__func__, event, EV_DEFAULT, false, false);
}

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
    return create_event(__func__, event, flag, false, true);
}

aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag) {
    return create_event(__func__, event, flag, true, true);
}

/* The refusals of the runtime's API layer that depend on how the event was made (hicann/
 * runtime src/runtime/api/impl/api_error.cc EventRecord, StreamWaitEvent, EventReset):
 * what = "record", "wait" or "reset"; op_flag the record's or wait's flag (reset: 0). */
static aclError check_event_use(const char *fn, rt_event *e, const char *what,
                                uint32_t op_flag) {
    bool record = strcmp(what, "record") == 0, reset = strcmp(what, "reset") == 0;
    if ((e->flag & EV_MC2) != 0)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "event %p was created with ACL_EVENT_DEVICE_USE_ONLY: only the device "
                      "records, waits for or resets it", (void *)e);
    if (reset && e->flag == EV_IPC)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "event %p is an IPC event (ACL_EVENT_IPC), which cannot be reset",
                      (void *)e);
    if (!record && (e->flag & (EV_DDSYNC | EV_DDSYNC_NS | EV_EXTERNAL | EV_IPC)) == 0)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "event %p (flag %#x) was created without ACL_EVENT_SYNC: a stream cannot "
                      "%s it", (void *)e, (unsigned)e->flag, reset ? "reset" : "wait for");
    if (reset)
        return ACL_SUCCESS;
    if (op_flag == 1u && !(e->ex && e->flag == EV_DDSYNC_NS))
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "ACL_EVENT_%s_EXTERNAL takes only an event of aclrtCreateEventExWithFlag "
                      "with ACL_EVENT_SYNC alone (event %p: flag %#x%s)",
                      record ? "RECORD" : "WAIT", (void *)e, (unsigned)e->flag,
                      e->ex ? "" : ", not of aclrtCreateEventExWithFlag");
    /* The first record (wait) fixes the flag, whatever the call then returns (the API
     * reference, aclrtRecordEventWithFlag and aclrtStreamWaitEventWithFlag). */
    pthread_mutex_lock(&e->mu);
    uint32_t *first = record ? &e->record_flag : &e->wait_flag;
    uint32_t was = *first;
    if (was == UINT32_MAX)
        *first = op_flag;
    pthread_mutex_unlock(&e->mu);
    if (was != UINT32_MAX && was != op_flag)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "event %p: its %ss use ACL_EVENT_%s_%s and cannot switch to ACL_EVENT_%s_%s",
                      (void *)e, what, record ? "RECORD" : "WAIT",
                      was ? "EXTERNAL" : "DEFAULT", record ? "RECORD" : "WAIT",
                      op_flag ? "EXTERNAL" : "DEFAULT");
    return ACL_SUCCESS;
}

static aclError get_event(const char *fn, const char *arg, aclrtEvent event, rt_event **out) {
    if (event == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "%s is NULL", arg);
    if (!rt_handle_acquire(event, ACLEMU_KIND_EVENT))
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                      "%s %p is not a live event (never created or already destroyed)", arg,
                      event);
    *out = event;
    return ACL_SUCCESS;
}

/* The opening checks of an event query that needs no device, in CANN's ACL layer's order
 * (src/acl/aclrt_impl/event.cpp): a NULL event, then a NULL output pointer, 100000; then
 * the handle (get_event). */
static aclError get_event_to_query(const char *fn, aclrtEvent event, const void *out,
                                   const char *out_name, rt_event **e) {
    if (event == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "event is NULL");
    if (out == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "%s (output pointer) is NULL", out_name);
    return get_event(fn, "event", event, e);
}

/* The end of an event call: the references it took on its stream and event (either NULL if
 * none) dropped, then rt_leave; returns rc. */
static aclError event_call_end(rt_stream *s, rt_event *e, aclError rc) {
    if (s != NULL)
        rt_stream_put(s);
    if (e != NULL)
        rt_obj_put(&e->hdr);
    rt_leave();
    return rc;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
    aclError rc = rt_refuse_in_host_function(__func__);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_event *e = NULL;
    /* No current device needed: CANN destroys the event it is given (hicann/runtime
     * src/runtime/api/impl/api_impl.cc EventDestroy looks up no context). */
    if ((rc = get_event(__func__, "event", event, &e)) != ACL_SUCCESS)
        goto out;
    /* Stricter than the device: CANN's header asks that the tasks of aclrtStreamWaitEvent on
     * the event have run before it is destroyed (hicann/runtime include/external/acl/
     * acl_rt.h, aclrtDestroyEvent); a device would let the wait read a freed event. */
    pthread_mutex_lock(&e->mu);
    uint64_t waits = e->waits;
    pthread_mutex_unlock(&e->mu);
    if (waits > 0) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "event %p is still waited for by %llu aclrtStreamWaitEvent task(s) queued on "
                    "a stream: synchronize that stream before destroying the event", event,
                    (unsigned long long)waits);
        goto out;
    }
    if (!aclemu_handle_unregister(e, ACLEMU_KIND_EVENT)) {
        rc = RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, __func__,
                    "event %p is not a live event (already destroyed)", event);
        goto out;
    }
    pthread_mutex_lock(&g_dev_mu);
    if (e->prev)
        e->prev->next = e->next;
    else if (g_sd[e->device].events == e)
        g_sd[e->device].events = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
    pthread_mutex_unlock(&g_dev_mu);
    rt_obj_put(&e->hdr); /* the registry's; pending records keep it alive until they run */
out:
    return event_call_end(NULL, e, rc);
}

typedef struct {
    rt_event *e;
    uint64_t seq;
    aclError abort_code; /* set by the worker: the stream was aborted by this status */
} record_task;

static void record_note_abort(void *arg, aclError code) { ((record_task *)arg)->abort_code = code; }

/* Whether record `seq` of the event is queued and has not run (e->mu held). */
static bool record_pending(const rt_event *e, uint64_t seq) {
    for (size_t i = 0; i < e->n_inflight; i++)
        if (e->inflight[i] == seq)
            return true;
    return false;
}

static void record_run(void *arg) {
    record_task *t = arg;
    uint64_t now = rt_now_ns();
    pthread_mutex_lock(&t->e->mu);
    if (t->seq > t->e->done) { /* records on different streams may finish out of order */
        t->e->done = t->seq;
        t->e->stamp_ns = t->e->stamps ? now : 0;
        t->e->done_error = t->abort_code;
    }
    t->e->signaled = true;
    for (size_t i = 0; i < t->e->n_inflight; i++) {
        if (t->e->inflight[i] == t->seq) {
            t->e->inflight[i] = t->e->inflight[--t->e->n_inflight];
            break;
        }
    }
    pthread_cond_broadcast(&t->e->cv);
    pthread_mutex_unlock(&t->e->mu);
}

static void record_release(void *arg) {
    record_task *t = arg;
    rt_obj_put(&t->e->hdr);
    free(t);
}

/* aclrtRecordEvent (flag ACL_EVENT_RECORD_DEFAULT) and aclrtRecordEventWithFlag. */
static aclError record_event(const char *fn, aclrtEvent event, aclrtStream stream,
                             uint32_t flag) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_event *e = NULL;
    rt_stream *s = NULL;
    /* CANN: the NULL check (ACL layer), the handles' validation (runtime API), the event's
     * flags (api_error.cc EventRecord), then the context (api_impl.cc EventRecord) */
    if (event == NULL) { /* the ACL layer's checks: the NULL event, then the flag */
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "event is NULL");
        goto out;
    }
    if (flag != ACL_EVENT_RECORD_DEFAULT && flag != ACL_EVENT_RECORD_EXTERNAL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                    "flag %u is neither ACL_EVENT_RECORD_DEFAULT (0) nor "
                    "ACL_EVENT_RECORD_EXTERNAL (1)", (unsigned)flag);
        goto out;
    }
    if ((rc = get_event(fn, "event", event, &e)) != ACL_SUCCESS ||
        (rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS ||
        (rc = check_event_use(fn, e, "record", flag)) != ACL_SUCCESS ||
        (rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    if (e->device != dev) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_CONTEXT, fn,
                    "event %p belongs to device %d but the calling thread's device is %d", event,
                    e->device, dev);
        goto out;
    }
    if (flag == ACL_EVENT_RECORD_EXTERNAL) {
        /* api_impl.cc EventRecord: only on a stream being captured into a graph */
        rc = RT_ERR(ACL_ERROR_RT_STREAM_NOT_CAPTURED, fn,
                    "ACL_EVENT_RECORD_EXTERNAL: stream %p is not being captured (the emulator "
                    "provides no graph capture)", stream);
        goto out;
    }
    record_task *t = malloc(sizeof *t);
    if (t == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    pthread_mutex_lock(&g_dev_mu);
    event_give_id(e);
    pthread_mutex_unlock(&g_dev_mu);
    /* Issue and enqueue under the event lock, so the sequence numbers of concurrent records
     * on one stream follow the queue order. */
    pthread_mutex_lock(&e->mu);
    if (e->n_inflight == e->cap_inflight) {
        size_t cap = e->cap_inflight ? 2 * e->cap_inflight : 4;
        uint64_t *v = realloc(e->inflight, cap * sizeof *v);
        if (v == NULL) {
            pthread_mutex_unlock(&e->mu);
            free(t);
            rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
            goto out;
        }
        e->inflight = v;
        e->cap_inflight = cap;
    }
    t->e = e;
    t->seq = e->issued + 1;
    t->abort_code = ACL_SUCCESS;
    atomic_fetch_add(&e->hdr.refs, 1);
    rc = rt_stream_push(s, record_run, record_release, t, fn);
    if (rc == ACL_SUCCESS) {
        e->issued = t->seq;
        e->inflight[e->n_inflight++] = t->seq;
        e->last_record_stream = s;
    }
    pthread_mutex_unlock(&e->mu);
    if (rc != ACL_SUCCESS)
        record_release(t);
out:
    return event_call_end(s, e, rc);
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    return record_event(__func__, event, stream, ACL_EVENT_RECORD_DEFAULT);
}

/* ACL_EVENT_RECORD_DEFAULT is aclrtRecordEvent (hicann/runtime src/acl/aclrt_impl/event.cpp). */
aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, uint32_t flag) {
    return record_event(__func__, event, stream, flag);
}

static void reset_run(void *arg) {
    rt_event *e = arg;
    pthread_mutex_lock(&e->mu);
    e->signaled = false; /* back to its initial state: not recorded (query: not ready) */
    pthread_mutex_unlock(&e->mu);
}

static void reset_release(void *arg) { rt_obj_put(&((rt_event *)arg)->hdr); }

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_event *e = NULL;
    rt_stream *s = NULL;
    /* CANN's order (hicann/runtime src/acl/aclrt_impl/event.cpp aclrtResetEventImpl, src/
     * runtime/api/api_c.cc rtEventReset, api_error.cc and api_impl.cc EventReset): the NULL
     * event, the two handles, the event's flags, the context, an event of
     * aclrtCreateEventExWithFlag, the stream's context. The events of aclrtCreateEvent are
     * reset as the runtime's code resets them (their flag has RT_EVENT_DDSYNC), though the API
     * reference names only aclrtCreateEventWithFlag's with ACL_EVENT_SYNC. */
    if ((rc = get_event(__func__, "event", event, &e)) != ACL_SUCCESS ||
        (rc = rt_stream_valid(stream, __func__)) != ACL_SUCCESS ||
        (rc = check_event_use(__func__, e, "reset", 0)) != ACL_SUCCESS ||
        (rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    if (e->ex) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "event %p was created by aclrtCreateEventExWithFlag, whose events need no "
                    "reset (a record replaces the last)", event);
        goto out;
    }
    if ((rc = rt_stream_get(stream, dev, __func__, &s)) != ACL_SUCCESS)
        goto out;
    if (e->device != dev) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_CONTEXT, __func__,
                    "event %p belongs to device %d but the calling thread's device is %d", event,
                    e->device, dev);
        goto out;
    }
    atomic_fetch_add(&e->hdr.refs, 1);
    if ((rc = rt_stream_push(s, reset_run, reset_release, e, __func__)) != ACL_SUCCESS)
        rt_obj_put(&e->hdr);
out:
    return event_call_end(s, e, rc);
}

typedef struct {
    rt_event *e;
    uint64_t seq; /* the record waited for */
    uint32_t timeout_s; /* aclrtStreamWaitEventWithFlag's: 0 for ever */
} wait_task;

/* Whether a wait for record seq may pass (mu held): that record has run and no reset has run
 * since the last record did. On the device a wait task waits for the event's flag, which a
 * reset clears (hicann/runtime src/runtime/core/src/event/event.cc Event::WaitSendCheck sends
 * the wait when the last record completed but a reset followed it); so a wait that runs after
 * a reset waits for the next record, even for one made before the reset (the stream3 case of
 * aclrtResetEvent's note in docs/zh/api_ref/07_event_management.md). */
static bool wait_met(const rt_event *e, uint64_t seq) {
    return !record_pending(e, seq) && e->signaled;
}

static void wait_run(void *arg) {
    wait_task *t = arg;
    rt_event *e = t->e;
    uint64_t deadline = t->timeout_s == 0 ? UINT64_MAX
                                          : rt_now_ns() + (uint64_t)t->timeout_s * 1000000000ull;
    pthread_mutex_lock(&e->mu);
    while (!wait_met(e, t->seq)) {
        pthread_mutex_unlock(&e->mu);
        /* a wait nothing may end (a reset, then no record) ends with a stop, an abort or the
         * stream's destruction, as the device's running task does */
        if (aclemu_task_cancelled())
            return;
        if (rt_now_ns() >= deadline) {
            aclemu_task_fail(ACL_ERROR_RT_TASK_TIMEOUT,
                             "the event was not recorded within the wait's timeout");
            return;
        }
        pthread_mutex_lock(&e->mu);
        struct timespec ts = rt_timespec(rt_now_ns() + 2000000ull); /* short slices */
        if (!wait_met(e, t->seq))
            pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    pthread_mutex_unlock(&e->mu);
}

static void wait_release(void *arg) {
    wait_task *t = arg;
    pthread_mutex_lock(&t->e->mu);
    t->e->waits--;
    pthread_mutex_unlock(&t->e->mu);
    rt_obj_put(&t->e->hdr);
    free(t);
}

/* How long a wait task may wait, in seconds (0: no limit). CANN's runtime hands the wait's
 * own timeout to the device only on the parts whose waits take one (src/runtime/api/
 * api_c_stream.cc rtStreamWaitEventWithTimeout: StreamWaitEventTimeout::CUSTOM, Atlas A2/A3
 * and Ascend 950, src/runtime/config/910_B_93 and 950 dev_info_reg.cc); UINT32_MAX there, and
 * every wait elsewhere and every aclrtStreamWaitEvent (rtStreamWaitEvent), wait as long as
 * aclrtSetOpWaitTimeout says (Runtime::GetWaitTimeout, or the task scheduler's own
 * configuration of it: api_impl.cc SetOpWaitTimeOut). The unit is the second of
 * aclrtSetOpWaitTimeout, whose value goes into the same field of the wait task
 * (src/runtime/core/src/task/task_info/event/event_task.cc EventWaitTaskInit). */
static uint32_t wait_timeout_s(bool given, uint32_t timeout) {
    if (!given || timeout == UINT32_MAX || !part_has_stars())
        return rt_op_wait_timeout_s();
    return timeout;
}

/* aclrtStreamWaitEvent (given false, flag ACL_EVENT_WAIT_DEFAULT), aclrtStreamWaitEventWithFlag
 * and aclrtStreamWaitEventWithTimeout (given true; rt_null_event: a NULL event is the
 * runtime's 107000, after the stream's handle, not the ACL layer's 100000). */
static aclError wait_event(const char *fn, aclrtStream stream, aclrtEvent event,
                           uint32_t timeout, uint32_t flag, bool given, bool rt_null_event) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_event *e = NULL;
    rt_stream *s = NULL;
    /* CANN's order: the NULL event, then the flag and the timeout (ACL layer, hicann/runtime
     * src/acl/aclrt_impl/stream.cpp), the handles (src/runtime/api/api_c_stream.cc
     * rtStreamWaitEvent), the event's flags (api_error.cc StreamWaitEvent), the context and
     * the stream's (api_impl.cc StreamWaitEvent), then the event's record (src/runtime/core/
     * src/event/event.cc Event::WaitSendCheck, Event::Wait). */
    if (event == NULL && !rt_null_event) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "event is NULL");
        goto out;
    }
    if (flag != ACL_EVENT_WAIT_DEFAULT && flag != ACL_EVENT_WAIT_EXTERNAL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                    "flag %u is neither ACL_EVENT_WAIT_DEFAULT (0) nor ACL_EVENT_WAIT_EXTERNAL "
                    "(1)", (unsigned)flag);
        goto out;
    }
    if (flag == ACL_EVENT_WAIT_EXTERNAL && timeout != 0) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn,
                    "timeout %u: ACL_EVENT_WAIT_EXTERNAL takes only 0", (unsigned)timeout);
        goto out;
    }
    if ((rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS)
        goto out;
    if (event == NULL) { /* rt_null_event: the runtime's API layer (api_error.cc) */
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "event is NULL");
        goto out;
    }
    if ((rc = get_event(fn, "event", event, &e)) != ACL_SUCCESS ||
        (rc = check_event_use(fn, e, "wait", flag)) != ACL_SUCCESS ||
        (rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    if (flag == ACL_EVENT_WAIT_EXTERNAL) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_NOT_CAPTURED, fn,
                    "ACL_EVENT_WAIT_EXTERNAL: stream %p is not being captured (the emulator "
                    "provides no graph capture)", stream);
        goto out;
    }
    if (e->device != dev) {
        /* The vendor's multi-device guide: waiting for an event of another device fails
         * (hicann/runtime docs/zh/dev_guide/05_multi_device_programming.md); the status is
         * the emulator's choice, as for aclrtRecordEvent. */
        rc = RT_ERR(ACL_ERROR_RT_STREAM_CONTEXT, fn,
                    "event %p belongs to device %d, the stream to device %d: a stream waits "
                    "only for events of its own device", event, e->device, dev);
        goto out;
    }
    wait_task *t = malloc(sizeof *t);
    if (t == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    pthread_mutex_lock(&e->mu);
    if (e->ex && (e->issued == 0 || e->last_record_stream == s ||
                  !record_pending(e, e->issued))) {
        /* Event::WaitSendCheck, new mode: nothing to wait for when the event was never
         * recorded, its last record is on this stream (stream order) or has completed */
        pthread_mutex_unlock(&e->mu);
        free(t);
        goto out;
    }
    if (e->issued == 0 && (e->flag & (EV_DDSYNC_NS | EV_EXTERNAL | EV_IPC)) == 0) {
        /* RT_ERROR_INVALID_VALUE -> 107000 (errcode_manage.cc): "The event has not been
         * recorded". An ACL_EVENT_SYNC event's wait waits for its flag, so for the first
         * record (Event::Wait). */
        pthread_mutex_unlock(&e->mu);
        free(t);
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                    "event %p has never been recorded (aclrtRecordEvent it on a stream first)",
                    event);
        goto out;
    }
    t->e = e;
    t->timeout_s = wait_timeout_s(given, timeout);
    t->seq = e->issued; /* the last record now: later records do not change what is waited for */
    atomic_fetch_add(&e->hdr.refs, 1);
    e->waits++;
    rc = rt_stream_push(s, wait_run, wait_release, t, fn);
    if (rc != ACL_SUCCESS) {
        e->waits--;
        pthread_mutex_unlock(&e->mu);
        rt_obj_put(&e->hdr);
        free(t);
        goto out;
    }
    pthread_mutex_unlock(&e->mu);
out:
    return event_call_end(s, e, rc);
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    return wait_event(__func__, stream, event, 0, ACL_EVENT_WAIT_DEFAULT, false, false);
}

/* timeout in seconds (0: no limit; UINT32_MAX: aclrtSetOpWaitTimeout's): a wait that runs out
 * of time fails its task with 107020, reported at the stream's next synchronize, as a
 * notify's wait. */
aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, uint32_t timeout,
                                      uint32_t flag) {
    return wait_event(__func__, stream, event, timeout, flag, true, false);
}

/* CANN (src/acl/aclrt_impl/event.cpp aclrtStreamWaitEventWithTimeoutImpl): the ACL layer
 * refuses a negative timeout (107000) and checks no NULL; then rtsEventWait ->
 * rtStreamWaitEventWithTimeout, aclrtStreamWaitEventWithFlag's path with flag DEFAULT. */
aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event, int32_t timeout) {
    if (timeout < 0) {
        if (aclemu_fault(__func__))
            return rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
        return ACL_LAYER_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                             "timeout %d: must be 0 (no limit) or more seconds", (int)timeout);
    }
    return wait_event(__func__, stream, event, (uint32_t)timeout, ACL_EVENT_WAIT_DEFAULT, true,
                      true);
}

/* CANN (src/acl/aclrt_impl/event.cpp aclrtQueryEventWaitStatusImpl; src/runtime/api/impl/
 * api_error.cc and api_impl_event_common.cc EventQueryWaitStatus; src/runtime/core/src/event/
 * event.cc Event::QueryEventWaitStatus): NULL event, then NULL status, 100000; the handle,
 * 107017; an event of aclrtCreateEventExWithFlag, ACL_EVENT_EXTERNAL or ACL_EVENT_IPC, 207000.
 * Complete when no wait task queued for the event is left (the runtime keeps each until it
 * has run and is reclaimed) or when no stream can wait for the event; no device needed. */
aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_event *e = NULL;
    if ((rc = get_event_to_query(__func__, event, status, "status", &e)) != ACL_SUCCESS)
        goto out;
    if (e->ex || e->flag == EV_EXTERNAL || e->flag == EV_IPC) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "event %p %s: its waits have no status to query", event,
                    e->ex ? "was created by aclrtCreateEventExWithFlag"
                          : e->flag == EV_EXTERNAL ? "is an ACL_EVENT_EXTERNAL event"
                                                   : "is an ACL_EVENT_IPC event");
        goto out;
    }
    pthread_mutex_lock(&e->mu);
    bool done = e->waits == 0;
    pthread_mutex_unlock(&e->mu);
    *status = done ? ACL_EVENT_WAIT_STATUS_COMPLETE : ACL_EVENT_WAIT_STATUS_NOT_READY;
out:
    return event_call_end(NULL, e, rc);
}

/* CANN (src/acl/aclrt_impl/event.cpp aclrtGetEventIdImpl; src/runtime/api/impl/
 * api_error.cc GetEventID; src/runtime/core/src/event/event.cc Event::GetEventID): NULL
 * event, then NULL eventId, 100000; the handle, 107017; an ACL_EVENT_IPC event, 207000; an
 * event that has no id (see event_gets_id: aclrtCreateEvent's and aclrtCreateEventExWithFlag's
 * before their first record), 507000 (RT_ERROR_EVENT_RECORDER_NULL). No device needed. */
aclError aclrtGetEventId(aclrtEvent event, uint32_t *eventId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_event *e = NULL;
    if ((rc = get_event_to_query(__func__, event, eventId, "eventId", &e)) != ACL_SUCCESS)
        goto out;
    if (e->flag == EV_IPC) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, __func__,
                    "event %p is an ACL_EVENT_IPC event, which has no id to give", event);
        goto out;
    }
    pthread_mutex_lock(&g_dev_mu);
    int32_t id = e->id;
    pthread_mutex_unlock(&g_dev_mu);
    if (id < 0)
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, __func__,
                    "event %p has no id: %s", event,
                    event_gets_id(e) ? "an event of aclrtCreateEvent or "
                                       "aclrtCreateEventExWithFlag gets one at its first record"
                                     : "an event no stream can wait for (no ACL_EVENT_SYNC) gets "
                                       "none on this part");
    else
        *eventId = (uint32_t)id;
out:
    return event_call_end(NULL, e, rc);
}

/* ACL_EVENT_EXTERNAL events are for graphs: the host does not synchronize, query or time them;
 * nor does it time IPC events (hicann/runtime src/runtime/api/impl/api_error.cc
 * EventSynchronize, EventQueryStatus, EventElapsedTime, EventGetTimeStamp). */
static aclError check_event_external(const char *fn, const rt_event *e, const char *what) {
    if (e->flag == EV_EXTERNAL)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "event %p was created with ACL_EVENT_EXTERNAL, which cannot be %s",
                      (const void *)e, what);
    return ACL_SUCCESS;
}

static aclError check_event_timed(const char *fn, const rt_event *e, const char *what) {
    aclError rc = check_event_external(fn, e, what);
    if (rc == ACL_SUCCESS && e->flag == EV_IPC)
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                    "event %p was created with ACL_EVENT_IPC, which cannot be %s",
                    (const void *)e, what);
    return rc;
}

/* aclrtSynchronizeEvent (timeout_ms -1, no check) and aclrtSynchronizeEventWithTimeout. */
static aclError synchronize_event(aclrtEvent event, int32_t timeout_ms, bool timed,
                                  const char *fn) {
    char fault_msg[256];
    bool fault = rt_fault_deferred(fn, fault_msg, sizeof fault_msg); /* after the wait */
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_enter(fn);
    if (rc == ACL_SUCCESS) {
        /* No current device needed (api_impl.cc EventSynchronize uses the event's own
         * context). CANN's order (hicann/runtime src/acl/aclrt_impl/event.cpp, src/runtime/
         * api/api_c.cc, api_error.cc EventSynchronize): the ACL layer's timeout check, the
         * NULL event, the handle, the runtime's timeout check. */
        rt_event *e = NULL;
        if ((!timed || (rc = rt_check_timeout(fn, timeout_ms, true)) == ACL_SUCCESS) &&
            (rc = get_event(fn, "event", event, &e)) == ACL_SUCCESS &&
            (!timed || (rc = rt_check_timeout(fn, timeout_ms, false)) == ACL_SUCCESS) &&
            (rc = check_event_external(fn, e, "synchronized")) == ACL_SUCCESS) {
            uint64_t deadline = deadline_after(timeout_ms);
            pthread_mutex_lock(&e->mu);
            /* The last record when called (never recorded: 0, done at once); a record made
             * later, even one that finishes first, is not waited for nor taken for it. */
            uint64_t target = e->issued;
            while (target != 0 && record_pending(e, target)) {
                if (deadline == UINT64_MAX) {
                    pthread_cond_wait(&e->cv, &e->mu);
                    continue;
                }
                if (rt_now_ns() >= deadline)
                    break;
                struct timespec until = rt_timespec(deadline);
                pthread_cond_timedwait(&e->cv, &e->mu, &until);
            }
            if (target != 0 && record_pending(e, target))
                rc = RT_ERR(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, fn,
                            "event %p: its last record did not complete within %d ms (it stays "
                            "queued and still runs)", event, (int)timeout_ms);
            else if (target != 0 && e->done == target && e->done_error != ACL_SUCCESS)
                /* recorded on a stream a failed task stopped (ACL_STOP_ON_FAILURE): CANN
                 * returns that stream's error (src/runtime/core/src/event/event.cc
                 * GetFailureStatus) */
                rc = RT_ERR(e->done_error, fn,
                            "event %p was recorded on a stream that a failed task stopped "
                            "(ACL_STOP_ON_FAILURE): the work before the record did not all run",
                            event);
            pthread_mutex_unlock(&e->mu);
        }
        if (e != NULL)
            rt_obj_put(&e->hdr);
        rt_leave();
    }
    if (fault)
        rc = rt_fault_report(fault_msg);
    return rc;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
    return synchronize_event(event, -1, false, __func__);
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
    return synchronize_event(event, timeout, true, __func__);
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_event *e = NULL;
    /* CANN (hicann/runtime src/acl/aclrt_impl/event.cpp aclrtQueryEventStatus): NULL event,
     * then NULL status, 100000; the handle; no current device needed (api_impl.cc
     * EventQueryStatus uses the event's context). An event never recorded is not ready
     * (event.cc Event::QueryEventStatus: RT_EVENT_INIT for events of aclrtCreateEvent). */
    if ((rc = get_event_to_query(__func__, event, status, "status", &e)) != ACL_SUCCESS ||
        (rc = check_event_external(__func__, e, "queried")) != ACL_SUCCESS)
        goto out;
    pthread_mutex_lock(&e->mu);
    /* never recorded: ready for an event of aclrtCreateEventExWithFlag (event.cc
     * QueryEventStatus, new mode), not ready for the others */
    bool ready = e->issued == 0 ? e->ex : !record_pending(e, e->issued) && e->signaled;
    pthread_mutex_unlock(&e->mu);
    *status = ready ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
out:
    return event_call_end(NULL, e, rc);
}

/* An event's record state: issued (recorded at least once) and, if its last record has run,
 * that record's time. */
static bool event_stamp(rt_event *e, uint64_t *ns) {
    pthread_mutex_lock(&e->mu);
    uint64_t issued = e->issued, done = e->done, stamp = e->stamp_ns;
    pthread_mutex_unlock(&e->mu);
    *ns = done < issued ? UINT64_MAX : stamp;
    return issued > 0;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_event *a = NULL, *b = NULL;
    uint64_t ta = 0, tb = 0;
    /* In CANN's order, with its codes, and with no current device needed (hicann/runtime
     * src/acl/aclrt_impl/event.cpp: NULL arguments 100000; the handles; then
     * src/runtime/core/src/event/event.cc Event::ElapsedTime: an event never recorded is
     * RT_ERROR_EVENT_RECORDER_NULL, 507000, and a record not yet complete leaves its timestamp
     * invalid, RT_ERROR_EVENT_TIMESTAMP_INVALID, 107006; codes from
     * src/runtime/core/src/common/errcode_manage.cc). */
    if (ms == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "ms (output pointer) is NULL");
        goto out;
    }
    if (startEvent == NULL || endEvent == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "%s is NULL",
                    startEvent == NULL ? "startEvent" : "endEvent");
        goto out;
    }
    if ((rc = get_event(__func__, "startEvent", startEvent, &a)) != ACL_SUCCESS ||
        (rc = get_event(__func__, "endEvent", endEvent, &b)) != ACL_SUCCESS ||
        (rc = check_event_timed(__func__, a, "timed")) != ACL_SUCCESS ||
        (rc = check_event_timed(__func__, b, "timed")) != ACL_SUCCESS)
        goto out;
    bool rec_a = event_stamp(a, &ta), rec_b = event_stamp(b, &tb);
    if (!rec_a || !rec_b) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, __func__,
                    "%s %p has never been recorded (aclrtRecordEvent both events first)",
                    !rec_a ? "startEvent" : "endEvent", !rec_a ? startEvent : endEvent);
        goto out;
    }
    if (ta == UINT64_MAX || tb == UINT64_MAX) {
        rc = RT_ERR(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, __func__,
                    "%s %p: its last record has not completed, so it has no timestamp yet "
                    "(synchronize the event or its stream first)",
                    ta == UINT64_MAX ? "startEvent" : "endEvent",
                    ta == UINT64_MAX ? startEvent : endEvent);
        goto out;
    }
    *ms = (float)(((double)tb - (double)ta) / 1e6);
out:
    if (a != NULL)
        rt_obj_put(&a->hdr);
    if (b != NULL)
        rt_obj_put(&b->hdr);
    rt_leave();
    return rc;
}

/* When the event's last record completed, in microseconds of CLOCK_MONOTONIC (the device
 * counts from its start, the emulated one from the host's). CANN's order and codes
 * (src/acl/aclrt_impl/event.cpp: timestamp, then event, NULL: 100000; then
 * src/runtime/core/src/event/event.cc Event::GetTimeStamp: never recorded 507000, a record
 * not complete 107006), as aclrtEventElapsedTime. */
aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_event *e = NULL;
    uint64_t ns = 0;
    if (timestamp == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "timestamp (output pointer) is NULL");
    else if ((rc = get_event(__func__, "event", event, &e)) != ACL_SUCCESS ||
             (rc = check_event_timed(__func__, e, "timed")) != ACL_SUCCESS)
        ;
    else if (!event_stamp(e, &ns))
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, __func__, "event %p has never been recorded "
                    "(aclrtRecordEvent it first)", event);
    else if (ns == UINT64_MAX)
        rc = RT_ERR(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, __func__, "event %p: its last record "
                    "has not completed, so it has no timestamp yet (synchronize the event or "
                    "its stream first)", event);
    else
        *timestamp = ns / 1000;
    return event_call_end(NULL, e, rc);
}

/* ---- public: stream identity, stop and abort ---------------------------------------------- */

/* stream (NULL: the current device's default stream) with a reference, for the queries
 * (hicann/runtime src/runtime/api/impl/api_impl.cc GetStreamId, StreamGetPriority,
 * StreamGetFlags: the handle, then a current context, which only the default stream needs
 * for GetStreamId; a stream of another device is answered). *out NULL: the default stream,
 * which has id 0, priority 0 and no flags whether or not it was started yet. */
static aclError stream_for_query(aclrtStream stream, bool need_context, const char *fn,
                                 rt_stream **out) {
    aclError rc = rt_stream_valid(stream, fn);
    int dev;
    if (rc == ACL_SUCCESS && (need_context || stream == NULL))
        rc = rt_need_device(fn, &dev);
    *out = NULL;
    if (rc == ACL_SUCCESS && stream != NULL)
        rc = stream_of_any_device(stream, 0, fn, out);
    return rc;
}

/* What aclrtStreamGetId/GetPriority/GetFlags read. */
typedef enum { STREAM_ID, STREAM_PRIORITY, STREAM_FLAGS } stream_field;

/* The three queries: the ACL layer's NULL check of the output first
 * (src/acl/aclrt_impl/stream.cpp), then the stream (stream_for_query; GetStreamId alone needs
 * no current context for a stream it is given). */
static aclError stream_get(const char *fn, aclrtStream stream, stream_field field,
                           const char *arg, uint32_t *out) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_stream *s = NULL;
    if (out == NULL)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "%s (output pointer) is NULL", arg);
    else if ((rc = stream_for_query(stream, field != STREAM_ID, fn, &s)) == ACL_SUCCESS)
        *out = s == NULL                 ? 0 /* the default stream: id 0, highest priority */
               : field == STREAM_ID      ? (uint32_t)s->id
               : field == STREAM_PRIORITY ? (uint32_t)s->priority
                                          : s->flags;
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId) {
    /* an int32_t may be written through its unsigned type (C11 6.5p7) */
    return stream_get(__func__, stream, STREAM_ID, "streamId", (uint32_t *)streamId);
}

aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t *priority) {
    return stream_get(__func__, stream, STREAM_PRIORITY, "priority", priority);
}

aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t *flags) {
    return stream_get(__func__, stream, STREAM_FLAGS, "flags", flags);
}

/* Whether the SoC has the task scheduler's stream stop and abort (Atlas A2/A3 and Ascend 950;
 * aclrtStreamAbort's and aclrtStreamStop's product tables in 06_stream_management.md), else
 * 207000 as CANN's runtime returns (api_impl.cc StreamClear, context.cc StreamAbort). */
static aclError need_stream_control(const char *fn) {
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (soc == NULL)
        return ACL_ERROR_RT_INTERNAL_ERROR; /* the message names ACL_EMU_SOC */
    if (soc->npu_arch != 2201 && soc->npu_arch != 3510)
        return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                      "%s (%s) has no stream stop or abort (Atlas A2/A3 and Ascend 950 only)",
                      soc->name, soc->series);
    return ACL_SUCCESS;
}

/* aclrtStreamAbort (discard: the queued tasks too) and aclrtStreamStop. */
static aclError stop_stream(aclrtStream stream, bool discard, const char *fn) {
    aclError rc = rt_refuse_in_host_function(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    /* CANN's order: the handle (api_c_stream.cc), NULL (aclrtStreamStop: refused, api_error.cc
     * StreamStop; aclrtStreamAbort: as GetCurStream takes it, api_error.cc StreamAbort and
     * rt_check_null_stream), the context and the SoC (api_impl.cc StreamClear / StreamAbort),
     * then the stream's context. */
    if ((rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS ||
        (discard && (rc = rt_check_null_stream(stream, fn)) != ACL_SUCCESS))
        goto out;
    if (stream == NULL && !discard) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "stream is NULL (the default stream cannot "
                    "be stopped)");
        goto out;
    }
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS || (rc = need_stream_control(fn)) !=
        ACL_SUCCESS || (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    if (discard) {
        /* As CANN's Context::StreamAbort: 10 ms for the sends in flight, during which the
         * stream's tasks go on running; then the running task is killed and every task
         * queued by then is dropped (those queued during the call too). */
        struct timespec grace = {0, 10000000};
        nanosleep(&grace, NULL);
    }
    pthread_mutex_lock(&s->mu);
    uint64_t upto = atomic_load(&s->submitted);
    if (discard)
        s->discard_upto = upto;
    atomic_fetch_add(&s->cancels, 1);
    pthread_mutex_unlock(&s->mu);
    if (discard) /* the dropped tasks and the stopped one are gone when abort returns */
        stream_wait(s, upto, UINT64_MAX);
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtStreamAbort(aclrtStream stream) { return stop_stream(stream, true, __func__); }

aclError aclrtStreamStop(aclrtStream stream) { return stop_stream(stream, false, __func__); }

/* The last task the calling thread queued, on any stream; 0 before any (CANN's needs no
 * aclInit either). */
aclError aclrtGetThreadLastTaskId(uint32_t *taskId) {
    if (aclemu_fault(__func__))
        return rt_fail(ACL_ERROR_RT_INTERNAL_ERROR);
    if (taskId == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "taskId (output pointer) is NULL");
    *taskId = tl_last_task_id;
    return ACL_SUCCESS;
}

/* ---- internal API --------------------------------------------------------------------- */

aclError aclemu_stream_submit(aclrtStream stream, aclemu_task_fn run, aclemu_task_fn release,
                              void *arg, const char *caller) {
    const char *fn = caller != NULL ? caller : "aclemu_stream_submit";
    if (run == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "internal: no task function");
    aclError rc = rt_enter(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    if ((rc = rt_need_device(fn, &dev)) == ACL_SUCCESS &&
        (rc = rt_stream_get(stream, dev, fn, &s)) == ACL_SUCCESS) {
        rc = stream_push(s, run, release, arg, fn, true);
        rt_stream_put(s);
    }
    rt_leave();
    return rc;
}
