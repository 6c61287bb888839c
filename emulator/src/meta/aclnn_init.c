/*
 * aclnnInit / aclnnFinalize (aclnn/aclnn_base.h): the operator library's own initialization,
 * lighter than aclInit, which covers it (hicann/opbase docs/en/api/nnopbase/aclnn/aclnnInit.md:
 * either may be called, both without failure). CANN's (src/nnopbase/common/api/aclnn_init.cpp)
 * loads the operator packages and reads the optional JSON file's
 * op_debug_config.enable_debug_kernel, returning success whatever configPath is: NULL, empty,
 * a path that does not exist and a file that does not parse all leave the debug kernels off.
 * aclnnFinalize releases the AI CPU and tiling resources and returns success. Neither touches
 * the runtime (aclInit/aclFinalize), so the two pairs are independent, in any order.
 *
 * The emulator has no packages or debug kernels: it takes every configPath, as CANN does. The
 * docs allow each call once per process ("aclnnInit can be called only once in a process";
 * aclnnFinalize likewise): stricter than CANN's code, which repeats them without complaint, a
 * second aclnnInit (also after aclnnFinalize) or a second aclnnFinalize is refused with 161002
 * and changes nothing. An aclnnFinalize before any aclnnInit finalizes nothing and succeeds
 * (as CANN's, and as aclFinalize before aclInit), and does not use up the one call.
 */
#include <pthread.h>

#include "meta_internal.h"
#include "aclnn/aclnn_base.h"

#define ERRV(fmt, ...) aclemu_set_error("%s: " fmt, __func__, ##__VA_ARGS__)

static pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_initialized; /* a successful aclnnInit happened (g_init_mu) */
static bool g_finalized;   /* a successful aclnnFinalize after it (g_init_mu) */

aclnnStatus aclnnInit(const char *configPath) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    pthread_mutex_lock(&g_init_mu);
    bool again = g_initialized;
    g_initialized = true;
    pthread_mutex_unlock(&g_init_mu);
    if (again) {
        ERRV("aclnnInit was already called in this process (it may be called once per "
             "process; aclInit may be called besides it)");
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnFinalize(void) {
    if (aclemu_fault(__func__))
        return ACLNN_ERR_INNER;
    pthread_mutex_lock(&g_init_mu);
    bool again = g_finalized;
    if (g_initialized)
        g_finalized = true;
    pthread_mutex_unlock(&g_init_mu);
    if (again) {
        ERRV("aclnnFinalize was already called in this process (it may be called once per "
             "process, after aclnnInit)");
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}
