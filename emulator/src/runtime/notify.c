/*
 * Notifies (aclrtCreateNotify): a flag of one device that a stream sets (aclrtRecordNotify)
 * and another stream waits for and clears (aclrtWaitAndResetNotify), both as tasks in stream
 * order (hicann/runtime docs/zh/api_ref/08_notify_management.md).
 *
 * Argument checks and codes as CANN's (src/acl/aclrt_impl/notify.cpp: a NULL notify, 100000;
 * src/runtime/api/api_c_event.cc rtsNotifyCreate: flag ACL_NOTIFY_DEFAULT or
 * ACL_NOTIFY_DEVICE_USE_ONLY, else 107000, then the current device). A device holds a limited
 * number of notifies (aclrtCreateNotify's constraints, per product); past it 207009.
 * A wait that times out (timeout seconds, 0: no limit) fails its task with
 * ACL_ERROR_RT_TASK_TIMEOUT, reported at the stream's next synchronize; a wait also ends when
 * its stream is aborted, stopped or destroyed. Notifies left at aclrtResetDevice are destroyed
 * with the device's streams and events.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

typedef struct rt_notify {
    rt_obj hdr;
    int device;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool set;                      /* recorded and not yet waited for (mu) */
    struct rt_notify *prev, *next; /* the device's notify list (g_dev_mu) */
} rt_notify;

static rt_notify *g_notifies[RT_MAX_DEVICES]; /* g_dev_mu */
static int g_n_notifies[RT_MAX_DEVICES];      /* g_dev_mu */

/* The most notifies one device holds (aclrtCreateNotify's constraints in
 * 08_notify_management.md): Ascend 950 65535, Atlas A2/A3 8192, the others 1024. */
static int max_notifies(void) {
    const aclemu_soc *soc = aclemu_soc_info("aclrtCreateNotify");
    if (soc != NULL && soc->npu_arch == 3510)
        return 65535;
    if (soc != NULL && soc->npu_arch == 2201)
        return 8192;
    return 1024;
}

static void notify_free(rt_obj *o) {
    rt_notify *n = (rt_notify *)o;
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    free(n);
}

static void unlink_notify(rt_notify *n) { /* g_dev_mu held */
    g_n_notifies[n->device]--;
    if (n->prev)
        n->prev->next = n->next;
    else if (g_notifies[n->device] == n)
        g_notifies[n->device] = n->next;
    if (n->next)
        n->next->prev = n->prev;
    n->prev = n->next = NULL;
}

aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag) {
    aclError rc = rt_refuse_in_host_function(__func__);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(__func__, ACL_ERROR_RT_MEMORY_ALLOCATION);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    if (notify == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "notify (output pointer) is NULL");
        goto out;
    }
    if (flag != ACL_NOTIFY_DEFAULT && flag != ACL_NOTIFY_DEVICE_USE_ONLY) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "flag %llu is neither ACL_NOTIFY_DEFAULT (0) nor ACL_NOTIFY_DEVICE_USE_ONLY "
                    "(1)", (unsigned long long)flag);
        goto out;
    }
    if ((rc = rt_need_device(__func__, &dev)) != ACL_SUCCESS)
        goto out;
    int limit = max_notifies();
    pthread_mutex_lock(&g_dev_mu);
    bool full = g_n_notifies[dev] >= limit;
    if (!full)
        g_n_notifies[dev]++;
    pthread_mutex_unlock(&g_dev_mu);
    if (full) {
        rc = RT_ERR(ACL_ERROR_RT_NO_NOTIFY_RESOURCE, __func__,
                    "device %d holds %d notifies, the most its SoC allows", dev, limit);
        goto out;
    }
    rt_notify *n = calloc(1, sizeof *n);
    if (n == NULL) {
        pthread_mutex_lock(&g_dev_mu);
        g_n_notifies[dev]--;
        pthread_mutex_unlock(&g_dev_mu);
        rc = RT_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION, __func__, "out of host memory");
        goto out;
    }
    atomic_init(&n->hdr.refs, 1);
    n->hdr.free_fn = notify_free;
    n->device = dev;
    pthread_mutex_init(&n->mu, NULL);
    rt_cond_init_monotonic(&n->cv);
    pthread_mutex_lock(&g_dev_mu);
    n->next = g_notifies[dev];
    if (n->next)
        n->next->prev = n;
    g_notifies[dev] = n;
    pthread_mutex_unlock(&g_dev_mu);
    aclemu_handle_register(n, ACLEMU_KIND_NOTIFY);
    *notify = n;
out:
    rt_leave();
    return rc;
}

static aclError get_notify(const char *fn, aclrtNotify notify, rt_notify **out) {
    if (notify == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "notify is NULL");
    if (!rt_handle_acquire(notify, ACLEMU_KIND_NOTIFY))
        return RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, fn,
                      "notify %p is not a live notify (never created or already destroyed)",
                      notify);
    *out = notify;
    return ACL_SUCCESS;
}

aclError aclrtDestroyNotify(aclrtNotify notify) {
    aclError rc = rt_refuse_in_host_function(__func__);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    rt_notify *n = NULL;
    if ((rc = get_notify(__func__, notify, &n)) != ACL_SUCCESS)
        goto out;
    if (!aclemu_handle_unregister(n, ACLEMU_KIND_NOTIFY)) {
        rc = RT_ERR(ACL_ERROR_RT_INVALID_HANDLE, __func__,
                    "notify %p is not a live notify (already destroyed)", notify);
        goto out;
    }
    pthread_mutex_lock(&g_dev_mu);
    unlink_notify(n);
    pthread_mutex_unlock(&g_dev_mu);
    rt_obj_put(&n->hdr); /* the registry's; queued records and waits keep it until they ran */
out:
    if (n != NULL)
        rt_obj_put(&n->hdr);
    rt_leave();
    return rc;
}

void rt_notifies_teardown(int dev) { /* life write lock held, the device's streams drained */
    pthread_mutex_lock(&g_dev_mu);
    rt_notify *list = g_notifies[dev];
    g_notifies[dev] = NULL;
    g_n_notifies[dev] = 0;
    pthread_mutex_unlock(&g_dev_mu);
    while (list != NULL) {
        rt_notify *next = list->next;
        list->prev = list->next = NULL;
        if (aclemu_handle_unregister(list, ACLEMU_KIND_NOTIFY))
            rt_obj_put(&list->hdr);
        list = next;
    }
}

typedef struct {
    rt_notify *n;
    uint32_t timeout_s; /* waits only: 0 for ever */
} notify_task;

static void record_run(void *arg) {
    rt_notify *n = ((notify_task *)arg)->n;
    pthread_mutex_lock(&n->mu);
    n->set = true;
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

static void wait_run(void *arg) {
    notify_task *t = arg;
    rt_notify *n = t->n;
    uint64_t deadline = t->timeout_s == 0 ? UINT64_MAX
                                           : rt_now_ns() + (uint64_t)t->timeout_s * 1000000000ull;
    pthread_mutex_lock(&n->mu);
    while (!n->set) {
        pthread_mutex_unlock(&n->mu);
        if (aclemu_task_cancelled()) /* its stream was aborted, stopped or is being destroyed */
            return;
        if (rt_now_ns() >= deadline) {
            aclemu_task_fail(ACL_ERROR_RT_TASK_TIMEOUT,
                             "the notify was not recorded within the wait's timeout");
            return;
        }
        pthread_mutex_lock(&n->mu);
        /* short slices: a stop, an abort or a destroy is noticed within milliseconds */
        uint64_t until = rt_now_ns() + 2000000ull;
        struct timespec ts = rt_timespec(until < deadline ? until : deadline);
        if (!n->set)
            pthread_cond_timedwait(&n->cv, &n->mu, &ts);
    }
    n->set = false;
    pthread_mutex_unlock(&n->mu);
}

static void task_release(void *arg) {
    notify_task *t = arg;
    rt_obj_put(&t->n->hdr);
    free(t);
}

/* aclrtRecordNotify and aclrtWaitAndResetNotify. */
static aclError enqueue(aclrtNotify notify, aclrtStream stream, aclemu_task_fn run,
                        uint32_t timeout_s, const char *fn) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev;
    rt_notify *n = NULL;
    rt_stream *s = NULL;
    /* The NULL notify (ACL layer), the handles, the context, the stream's. */
    if ((rc = get_notify(fn, notify, &n)) != ACL_SUCCESS ||
        (rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS ||
        (rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS)
        goto out;
    if (n->device != dev) {
        rc = RT_ERR(ACL_ERROR_RT_STREAM_CONTEXT, fn,
                    "notify %p belongs to device %d but the calling thread's device is %d",
                    notify, n->device, dev);
        goto out;
    }
    notify_task *t = malloc(sizeof *t);
    if (t == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    t->n = n;
    t->timeout_s = timeout_s;
    atomic_fetch_add(&n->hdr.refs, 1);
    if ((rc = rt_stream_push(s, run, task_release, t, fn)) != ACL_SUCCESS)
        task_release(t);
out:
    if (s != NULL)
        rt_stream_put(s);
    if (n != NULL)
        rt_obj_put(&n->hdr);
    rt_leave();
    return rc;
}

aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream) {
    return enqueue(notify, stream, record_run, 0, __func__);
}

aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout) {
    /* rtsNotifyWaitAndReset: UINT32_MAX also waits for ever */
    return enqueue(notify, stream, wait_run, timeout == UINT32_MAX ? 0 : timeout, __func__);
}
