/*
 * Stream state callbacks (aclrtRegStreamStateCallback): process-wide functions, each under a
 * unique name, that the runtime calls after it creates a stream and before it destroys one.
 *
 * As CANN's runtime (hicann/runtime src/runtime/core/src/stream/
 * stream_state_callback_manager.cc): a NULL callback removes the name (a name never
 * registered too, without complaint); registering a name that is registered already is
 * refused (RT_ERROR_INVALID_VALUE, 107000); the callbacks run in the order of their names
 * (a std::map there), on the thread that creates or destroys the stream, from a copy of the
 * table taken under its lock, so a callback may register or remove callbacks.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

typedef struct {
    char *name;
    aclrtStreamStateCallback fn;
    void *args;
} state_cb;

static pthread_mutex_t g_cb_mu = PTHREAD_MUTEX_INITIALIZER;
static state_cb *g_cbs; /* sorted by name (g_cb_mu) */
static size_t g_n_cbs, g_cap_cbs;

aclError aclrtRegStreamStateCallback(const char *regName, aclrtStreamStateCallback callback,
                                     void *args) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    /* CANN's ACL layer: regName must not be NULL (hicann/runtime src/acl/aclrt_impl/
     * callback.cpp aclrtRegStreamStateCallbackImpl). */
    if (regName == NULL) {
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "regName is NULL");
        goto out;
    }
    pthread_mutex_lock(&g_cb_mu);
    size_t i = 0;
    while (i < g_n_cbs && strcmp(g_cbs[i].name, regName) < 0)
        i++;
    bool found = i < g_n_cbs && strcmp(g_cbs[i].name, regName) == 0;
    if (callback == NULL) {
        if (found) {
            free(g_cbs[i].name);
            memmove(&g_cbs[i], &g_cbs[i + 1], (g_n_cbs - i - 1) * sizeof *g_cbs);
            g_n_cbs--;
        }
    } else if (found) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "regName \"%s\" is registered already (remove it first with a NULL callback)",
                    regName);
    } else {
        char *name = strdup(regName);
        if (name != NULL && g_n_cbs == g_cap_cbs) {
            size_t cap = g_cap_cbs ? 2 * g_cap_cbs : 4;
            state_cb *v = realloc(g_cbs, cap * sizeof *v);
            if (v == NULL) {
                free(name);
                name = NULL;
            } else {
                g_cbs = v;
                g_cap_cbs = cap;
            }
        }
        if (name == NULL) {
            rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, __func__, "out of host memory");
        } else {
            memmove(&g_cbs[i + 1], &g_cbs[i], (g_n_cbs - i) * sizeof *g_cbs);
            g_cbs[i] = (state_cb){name, callback, args};
            g_n_cbs++;
        }
    }
    pthread_mutex_unlock(&g_cb_mu);
out:
    rt_leave();
    return rc;
}

void rt_stream_state_notify(void *stream, aclrtStreamState state) {
    pthread_mutex_lock(&g_cb_mu);
    size_t n = g_n_cbs;
    state_cb *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy != NULL)
        memcpy(copy, g_cbs, n * sizeof *copy);
    pthread_mutex_unlock(&g_cb_mu);
    if (copy == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        copy[i].fn(stream, state, copy[i].args);
    free(copy);
}
