/*
 * Host functions on streams: aclrtLaunchHostFunc (the runtime's own thread runs them) and the
 * callback model, aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport /
 * aclrtUnSubscribeReport (a thread of the program runs them, inside aclrtProcessReport).
 *
 * A host function is a stream task: when the stream's worker reaches it, it becomes a report
 * queued for the thread that processes the stream's reports, and a blocking one holds the
 * worker (later tasks) until that thread has run it. aclrtLaunchHostFunc's reports always
 * block (hicann/runtime src/runtime/api/impl/api_impl.cc LaunchHostFunc launches with isBlock
 * true) and are run by one thread per device the emulator starts on first use (CANN: one per
 * context, created by the first aclrtLaunchHostFunc; the emulator's streams belong to
 * devices). Facts, statuses and their order: hicann/runtime src/acl/aclrt_impl/callback.cpp,
 * src/runtime/api/api_c.cc, src/runtime/api/impl/api_error.cc and api_impl.cc,
 * src/runtime/core/src/utils/subscribe.cc, errcode_manage.cc for the codes.
 *
 * Locking: g_cb_mu guards everything here (leaf, apart from rt_stream_get/put and handle
 * checks made before taking it). A report's function runs with no lock held. Nothing here
 * takes the process life lock while waiting, so aclFinalize draining a stream whose blocking
 * report waits for aclrtProcessReport never deadlocks with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

/* CANN refuses a 1025th subscribed thread (docs/zh/api_ref/12_execution_control.md,
 * aclrtSubscribeReport); its group allocator's failure is RT_ERROR_SUBSCRIBE_GROUP, 507000. */
#define RT_MAX_REPORT_THREADS 1024

typedef enum { SUB_USER = 1, SUB_RUNTIME = 2 } sub_kind;

typedef struct rt_report {
    aclrtCallback fn;
    void *arg;
    bool block;
    bool done;                  /* g_cb_mu; a blocking report's stream task waits for it */
    struct rt_cb_thread *to;    /* the processing thread, set when the stream reaches it */
    const void *stream;         /* the stream's handle (its pending count) */
    struct rt_report *next;     /* the thread's queue */
} rt_report;

typedef struct rt_cb_thread {
    uint64_t tid;               /* pthread_self() of the processing thread, as CANN's */
    int device;
    int streams;                /* subscriptions */
    int waiting;                /* aclrtProcessReport calls waiting on cv */
    bool runtime;               /* the emulator's own host-function thread */
    rt_report *head, *tail;
    pthread_cond_t cv;          /* a report queued, or the last subscription gone */
    struct rt_cb_thread *next;
} rt_cb_thread;

typedef struct rt_sub {
    const void *stream;         /* the handle, or the default rt_stream */
    int device;
    sub_kind kind;
    rt_cb_thread *thread;
    uint64_t pending;           /* callbacks launched and not yet processed */
    struct rt_sub *next;
} rt_sub;

static pthread_mutex_t g_cb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;  /* a blocking report ran */
static rt_cb_thread *g_threads;
static rt_sub *g_subs;
static int g_user_threads;
static struct {
    rt_cb_thread *thread;       /* the device's host-function thread, once started */
    pthread_t pt;
    bool stop;
} g_runner[RT_MAX_DEVICES];

/* Set while this thread runs a host function or callback: the vendor forbids it runtime
 * calls that allocate, free, synchronize or launch (docs/zh/api_ref/12_execution_control.md,
 * aclrtLaunchCallback and aclrtLaunchHostFunc, 约束说明). */
static _Thread_local const char *tl_running;

bool rt_in_host_function(void) { return tl_running != NULL; }

aclError rt_refuse_in_host_function(const char *fn) {
    if (tl_running == NULL)
        return ACL_SUCCESS;
    return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                  "called from inside a host function run by %s: a host function must not "
                  "allocate, free, synchronize or launch work (CANN: it may fail or deadlock); "
                  "do it on another thread after the stream has run the function",
                  tl_running);
}

const char *rt_host_function_begin(const char *runner) {
    const char *outer = tl_running;
    tl_running = runner;
    return outer;
}

void rt_host_function_end(const char *outer) { tl_running = outer; }

/* ---- lookups (g_cb_mu) ---------------------------------------------------------------- */

static rt_sub *find_sub(const void *stream) {
    for (rt_sub *s = g_subs; s != NULL; s = s->next)
        if (s->stream == stream)
            return s;
    return NULL;
}

static rt_cb_thread *find_thread(uint64_t tid, bool runtime) {
    for (rt_cb_thread *t = g_threads; t != NULL; t = t->next)
        if (t->tid == tid && t->runtime == runtime)
            return t;
    return NULL;
}

static void unlink_thread(rt_cb_thread *t) {
    for (rt_cb_thread **p = &g_threads; *p != NULL; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            return;
        }
}

/* Frees a user thread's record once nothing refers to it. */
static void maybe_free_thread(rt_cb_thread *t) {
    if (t->runtime || t->streams > 0 || t->waiting > 0 || t->head != NULL)
        return;
    unlink_thread(t);
    g_user_threads--;
    pthread_cond_destroy(&t->cv);
    free(t);
}

static rt_cb_thread *new_thread(uint64_t tid, int dev, bool runtime) {
    rt_cb_thread *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->tid = tid;
    t->device = dev;
    t->runtime = runtime;
    pthread_cond_init(&t->cv, NULL);
    t->next = g_threads;
    g_threads = t;
    return t;
}

static void drop_sub(rt_sub *sub) {
    for (rt_sub **p = &g_subs; *p != NULL; p = &(*p)->next)
        if (*p == sub) {
            *p = sub->next;
            break;
        }
    rt_cb_thread *t = sub->thread;
    free(sub);
    if (t != NULL) {
        t->streams--;
        if (t->streams == 0)
            pthread_cond_broadcast(&t->cv); /* a waiting aclrtProcessReport returns 107012 */
        maybe_free_thread(t);
    }
}

/* ---- running reports ------------------------------------------------------------------ */

/* Runs the reports queued for t (all of them, as CANN processes a batch), g_cb_mu held on
 * entry and exit, released around each function. */
static void run_queued(rt_cb_thread *t, const char *who) {
    while (t->head != NULL) {
        rt_report *r = t->head;
        t->head = r->next;
        if (t->head == NULL)
            t->tail = NULL;
        pthread_mutex_unlock(&g_cb_mu);
        const char *outer = rt_host_function_begin(who);
        r->fn(r->arg);
        rt_host_function_end(outer);
        pthread_mutex_lock(&g_cb_mu);
        rt_sub *sub = find_sub(r->stream);
        if (sub != NULL && sub->pending > 0)
            sub->pending--;
        if (r->block) {
            r->done = true;  /* the stream task frees it */
            pthread_cond_broadcast(&g_done_cv);
        } else {
            free(r);
        }
    }
}

/* The stream task of a report: hands it to the stream's processing thread when the stream
 * reaches it; a blocking one waits until it has run. */
/* A callback's stream task. It owns the report until the stream reaches it (ran); a report
 * the stream drops instead (a failed task stopped it: ACL_STOP_ON_FAILURE) never reaches the
 * thread, and is released here, no longer pending (else aclrtUnSubscribeReport would wait
 * for a callback that will never run). */
typedef struct {
    rt_report *r;
    bool ran;
    bool block; /* r->block, kept here: once a non-blocking report ran, its processing
                 * thread has freed it (run_queued), maybe before this task's release */
} rt_report_task;

static void report_task(void *arg) {
    rt_report_task *w = arg;
    rt_report *r = w->r;
    w->ran = true;
    pthread_mutex_lock(&g_cb_mu);
    rt_sub *sub = find_sub(r->stream);
    rt_cb_thread *t = sub != NULL ? sub->thread : NULL;
    if (t == NULL) {
        /* Unsubscribed meanwhile: refused while callbacks are pending, so only a stream
         * being destroyed gets here; its callback is dropped, as CANN frees the queue. */
        if (r->block)
            r->done = true;
        else
            free(r);
        pthread_mutex_unlock(&g_cb_mu);
        return;
    }
    r->to = t;
    r->next = NULL;
    if (t->tail != NULL)
        t->tail->next = r;
    else
        t->head = r;
    t->tail = r;
    pthread_cond_broadcast(&t->cv);
    if (r->block)
        while (!r->done)
            pthread_cond_wait(&g_done_cv, &g_cb_mu);
    pthread_mutex_unlock(&g_cb_mu);
}

static void report_release(void *arg) {
    rt_report_task *w = arg;
    rt_report *r = w->r;
    if (!w->ran) {
        pthread_mutex_lock(&g_cb_mu);
        rt_sub *sub = find_sub(r->stream);
        if (sub != NULL && sub->pending > 0)
            sub->pending--;
        pthread_mutex_unlock(&g_cb_mu);
        free(r);
    } else if (w->block) {
        free(r);
    }
    free(w);
}

static void *runner_main(void *arg) {
    int dev = (int)(intptr_t)arg;
    pthread_mutex_lock(&g_cb_mu);
    rt_cb_thread *t = g_runner[dev].thread;
    for (;;) {
        while (t->head == NULL && !g_runner[dev].stop)
            pthread_cond_wait(&t->cv, &g_cb_mu);
        if (t->head == NULL)
            break;
        run_queued(t, "aclrtLaunchHostFunc's thread");
    }
    pthread_mutex_unlock(&g_cb_mu);
    return NULL;
}

/* The device's host-function thread, started on first use (g_cb_mu held). */
static rt_cb_thread *runner(int dev) {
    if (g_runner[dev].thread != NULL)
        return g_runner[dev].thread;
    rt_cb_thread *t = new_thread(0, dev, true);
    if (t == NULL)
        return NULL;
    g_runner[dev].thread = t;
    g_runner[dev].stop = false;
    if (pthread_create(&g_runner[dev].pt, NULL, runner_main, (void *)(intptr_t)dev) != 0) {
        g_runner[dev].thread = NULL;
        unlink_thread(t);
        pthread_cond_destroy(&t->cv);
        free(t);
        return NULL;
    }
    t->tid = (uint64_t)g_runner[dev].pt;
    return t;
}

/* ---- hooks for the stream and device modules ------------------------------------------ */

/* A stream was drained and is going away (aclrtDestroyStream, device teardown): its
 * subscription ends with it (hicann/runtime src/runtime/core/src/stream/stream.cc,
 * UnsubscribeStreamReportOnTearDown). */
void rt_callback_stream_gone(const void *stream) {
    pthread_mutex_lock(&g_cb_mu);
    rt_sub *sub = find_sub(stream);
    if (sub != NULL)
        drop_sub(sub);
    pthread_mutex_unlock(&g_cb_mu);
}

/* The device's streams are gone (its teardown, life write lock held): stops and joins its
 * host-function thread; reports of user threads for the device that were never processed
 * are dropped. */
void rt_callback_device_gone(int dev) {
    pthread_mutex_lock(&g_cb_mu);
    rt_cb_thread *t = g_runner[dev].thread;
    pthread_t pt = g_runner[dev].pt;
    if (t != NULL) {
        g_runner[dev].stop = true;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&g_cb_mu);
    if (t == NULL)
        return;
    if (!pthread_equal(pt, pthread_self()))
        pthread_join(pt, NULL);
    else
        pthread_detach(pt);
    pthread_mutex_lock(&g_cb_mu);
    g_runner[dev].thread = NULL;
    unlink_thread(t);
    pthread_cond_destroy(&t->cv);
    free(t);
    for (rt_cb_thread *u = g_threads; u != NULL;) {
        rt_cb_thread *next = u->next;
        if (u->device == dev) {
            while (u->head != NULL) { /* never processed: non-blocking ones only */
                rt_report *r = u->head;
                u->head = r->next;
                if (r->block) {
                    r->done = true;
                    pthread_cond_broadcast(&g_done_cv);
                } else {
                    free(r);
                }
            }
            u->tail = NULL;
            maybe_free_thread(u);
        }
        u = next;
    }
    pthread_mutex_unlock(&g_cb_mu);
}

/* ---- launching ------------------------------------------------------------------------ */

static aclError launch(const char *fn, aclrtStream stream, aclrtCallback func, void *arg,
                       bool block, bool host_func) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_stream *s = NULL;
    rt_report *r = NULL;
    if ((rc = rt_refuse_in_host_function(fn)) != ACL_SUCCESS ||
        (rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS)
        goto out;
    if (func == NULL) { /* RT_ERROR_INVALID_VALUE (api_error.cc), 107000 */
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "fn is NULL");
        goto out;
    }
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    r = calloc(1, sizeof *r);
    if (r == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    r->fn = func;
    r->arg = arg;
    r->block = block;
    r->stream = s;
    pthread_mutex_lock(&g_cb_mu);
    rt_sub *sub = find_sub(s);
    if (host_func) {
        if (sub != NULL && sub->kind == SUB_USER) {
            pthread_mutex_unlock(&g_cb_mu);
            rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, fn,
                        "stream %p has a thread subscribed with aclrtSubscribeReport: its host "
                        "callbacks go through aclrtLaunchCallback; the two callback interfaces "
                        "cannot be mixed on one stream", stream);
            goto out;
        }
        if (sub == NULL) {
            rt_cb_thread *t = runner(dev);
            sub = t != NULL ? calloc(1, sizeof *sub) : NULL;
            if (sub == NULL) {
                pthread_mutex_unlock(&g_cb_mu);
                rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, fn,
                            "cannot start the host-function thread (out of threads or memory)");
                goto out;
            }
            sub->stream = s;
            sub->device = dev;
            sub->kind = SUB_RUNTIME;
            sub->thread = t;
            t->streams++;
            sub->next = g_subs;
            g_subs = sub;
        }
    } else {
        if (sub != NULL && sub->kind == SUB_RUNTIME) {
            pthread_mutex_unlock(&g_cb_mu);
            rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, fn,
                        "stream %p runs host functions of aclrtLaunchHostFunc: the two callback "
                        "interfaces cannot be mixed on one stream", stream);
            goto out;
        }
        if (sub == NULL) { /* RT_ERROR_STREAM_NO_CB_REG, 107015 */
            pthread_mutex_unlock(&g_cb_mu);
            rc = RT_ERR(ACL_ERROR_RT_STREAM_NO_CB_REG, fn,
                        "stream %p has no thread subscribed to process its callbacks (call "
                        "aclrtSubscribeReport first)", stream);
            goto out;
        }
    }
    sub->pending++;
    pthread_mutex_unlock(&g_cb_mu);
    rt_report_task *w = malloc(sizeof *w);
    if (w != NULL)
        *w = (rt_report_task){r, false, r->block};
    rc = w != NULL ? rt_stream_push(s, report_task, report_release, w, fn)
                   : RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
    if (rc != ACL_SUCCESS) {
        free(w);
        pthread_mutex_lock(&g_cb_mu);
        sub = find_sub(s);
        if (sub != NULL && sub->pending > 0)
            sub->pending--;
        pthread_mutex_unlock(&g_cb_mu);
        goto out;
    }
    r = NULL; /* the stream owns it */
out:
    free(r);
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
    return launch(__func__, stream, fn, args, true, true);
}

aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                             aclrtStream stream) {
    /* The ACL layer checks the block type before anything else (callback.cpp), 100000. */
    if (blockType != ACL_CALLBACK_BLOCK && blockType != ACL_CALLBACK_NO_BLOCK) {
        if (aclemu_fault(__func__))
            return ACL_ERROR_RT_INTERNAL_ERROR;
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                      "blockType %d is neither ACL_CALLBACK_NO_BLOCK (0) nor ACL_CALLBACK_BLOCK "
                      "(1)", (int)blockType);
    }
    return launch(__func__, stream, fn, userData, blockType == ACL_CALLBACK_BLOCK, false);
}

/* ---- subscriptions -------------------------------------------------------------------- */

/* The stream a subscription call names: NULL is the current device's default stream. */
static aclError sub_stream(const char *fn, aclrtStream stream, rt_stream **out) {
    aclError rc = rt_stream_valid(stream, fn);
    if (rc != ACL_SUCCESS)
        return rc;
    if (stream == NULL) {
        int dev;
        if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS)
            return rc;
        return rt_stream_get(NULL, dev, fn, out);
    }
    if (!rt_handle_acquire(stream, ACLEMU_KIND_STREAM))
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                      "stream %p is not a live stream (never created or already destroyed)",
                      stream);
    *out = stream;
    return ACL_SUCCESS;
}

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_stream *s = NULL;
    if ((rc = sub_stream(__func__, stream, &s)) != ACL_SUCCESS)
        goto out;
    int dev = rt_stream_device(s);
    pthread_mutex_lock(&g_cb_mu);
    rt_sub *sub = find_sub(s);
    rt_cb_thread *t = find_thread(threadId, false);
    if (sub != NULL && sub->kind == SUB_RUNTIME) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, __func__,
                    "stream %p runs host functions of aclrtLaunchHostFunc: the two callback "
                    "interfaces cannot be mixed on one stream", stream);
    } else if (sub != NULL) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, __func__,
                    "stream %p already has a thread subscribed (%llu): one thread per stream, "
                    "so that its callbacks run in order", stream,
                    (unsigned long long)sub->thread->tid);
    } else if (t != NULL && t->device != dev) {
        rc = RT_ERR(ACL_ERROR_RT_THREAD_SUBSCRIBE, __func__,
                    "threadId %llu processes callbacks of device %d's streams; a thread serves "
                    "streams of one device only, and stream %p is on device %d",
                    (unsigned long long)threadId, t->device, stream, dev);
    } else if (t == NULL && g_user_threads >= RT_MAX_REPORT_THREADS) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, __func__,
                    "%d threads are subscribed already, the most CANN supports",
                    RT_MAX_REPORT_THREADS);
    } else {
        if (t == NULL && (t = new_thread(threadId, dev, false)) != NULL)
            g_user_threads++;
        sub = t != NULL ? calloc(1, sizeof *sub) : NULL;
        if (sub == NULL) {
            if (t != NULL)
                maybe_free_thread(t);
            rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
        } else {
            sub->stream = s;
            sub->device = dev;
            sub->kind = SUB_USER;
            sub->thread = t;
            t->streams++;
            sub->next = g_subs;
            g_subs = sub;
        }
    }
    pthread_mutex_unlock(&g_cb_mu);
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_stream *s = NULL;
    if ((rc = sub_stream(__func__, stream, &s)) != ACL_SUCCESS)
        goto out;
    pthread_mutex_lock(&g_cb_mu);
    rt_sub *sub = find_sub(s);
    if (sub != NULL && sub->kind == SUB_RUNTIME) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, __func__,
                    "stream %p runs host functions of aclrtLaunchHostFunc, no subscribed thread",
                    stream);
    } else if (sub == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, __func__,
                    "stream %p has no subscribed thread (aclrtSubscribeReport)", stream);
    } else if (sub->thread->tid != threadId) {
        rc = RT_ERR(ACL_ERROR_RT_THREAD_SUBSCRIBE, __func__,
                    "threadId %llu is not the thread subscribed to stream %p (%llu is)",
                    (unsigned long long)threadId, stream,
                    (unsigned long long)sub->thread->tid);
    } else if (sub->pending > 0) {
        /* Stricter than the device: CANN's order is to unsubscribe once the stream's work has
         * run (docs/zh/api_ref/12_execution_control.md, aclrtUnSubscribeReport, step 6); a
         * device would leave the pending callbacks unprocessed, and a blocking one would hold
         * the stream for ever. */
        rc = RT_ERR(ACL_ERROR_RT_STREAM_SUBSCRIBE, __func__,
                    "stream %p has %llu callback(s) launched and not processed yet: "
                    "synchronize the stream, with its thread still calling aclrtProcessReport, "
                    "before unsubscribing", stream, (unsigned long long)sub->pending);
    } else {
        drop_sub(sub);
    }
    pthread_mutex_unlock(&g_cb_mu);
out:
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}

static void deadline_after(struct timespec *ts, int32_t ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Takes no life lock: a blocking callback's stream may be drained by aclFinalize meanwhile,
 * and the thread processing it must get through. */
aclError aclrtProcessReport(int32_t timeout) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_RT_INTERNAL_ERROR;
    if (timeout < -1 || timeout == 0) /* callback.cpp: the ACL layer's check, 100000 */
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                      "timeout %d: -1 waits for ever, a value > 0 that many milliseconds",
                      (int)timeout);
    uint64_t me = (uint64_t)pthread_self();
    struct timespec deadline;
    if (timeout > 0)
        deadline_after(&deadline, timeout);
    pthread_mutex_lock(&g_cb_mu);
    rt_cb_thread *t = find_thread(me, false);
    if (t == NULL || t->streams == 0) { /* RT_ERROR_SUBSCRIBE_THREAD, 107012 */
        pthread_mutex_unlock(&g_cb_mu);
        return RT_ERR(ACL_ERROR_RT_THREAD_SUBSCRIBE, __func__,
                      "the calling thread (%llu) is subscribed to no stream "
                      "(aclrtSubscribeReport)", (unsigned long long)me);
    }
    aclError rc = ACL_SUCCESS;
    t->waiting++;
    while (t->head == NULL && t->streams > 0) {
        int e = timeout > 0 ? pthread_cond_timedwait(&t->cv, &g_cb_mu, &deadline)
                            : pthread_cond_wait(&t->cv, &g_cb_mu);
        if (e == ETIMEDOUT && t->head == NULL)
            break;
    }
    if (t->head != NULL)
        run_queued(t, "aclrtProcessReport");
    else if (t->streams == 0)
        rc = RT_ERR(ACL_ERROR_RT_THREAD_SUBSCRIBE, __func__,
                    "the calling thread's last subscription ended while it waited");
    else /* RT_ERROR_REPORT_TIMEOUT, 507012 */
        rc = RT_ERR(ACL_ERROR_RT_REPORT_TIMEOUT, __func__,
                    "no callback to process within %d ms", (int)timeout);
    t->waiting--;
    maybe_free_thread(t);
    pthread_mutex_unlock(&g_cb_mu);
    return rc;
}
