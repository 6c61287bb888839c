/*
 * CANN attributes: aclGetCannAttributeList and aclGetCannAttribute (acl/acl_base_rt.h).
 *
 * As CANN's ACL layer answers them (hicann/runtime src/acl/aclrt_impl/acl.cpp,
 * src/acl/utils/cann_info_utils.cpp CannInfoUtils): an attribute is available when the
 * installed runtime is recent enough (its requirements, src/acl/config/swFeatureList.json:
 * INF_NAN and BF16 from runtime 7.1, JIT_COMPILE from 6.4) and, for INF_NAN and BF16, the part's
 * platform configuration says so ([SoCInfo] support_inf_nan, support_bf16 of
 * src/platform/platform_config: 1 on Atlas A2/A3 and Ascend 950, 0 on the others, the parts
 * that compute BFLOAT16 here). The runtime's version is the "Version=" line of
 * share/info/runtime/version.info of the install libascendcl.so lies in (its lib64/'s parent,
 * else the nearest of up to 8 directories above the library holding that file), read once:
 * major.minor as 1000 * major + 10 * minor. The list is in attribute order. Without a
 * readable version file both calls fail with 500000 ACL_ERROR_INTERNAL_ERROR and the next call
 * tries again. The emulator's prefix has no data/ascendcl_config/swFeatureList.json: the
 * requirements are these constants. Neither call needs aclInit.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_internal.h"

#define SEARCH_DEPTH 8
#define RUNTIME_VERSION_FILE "share/info/runtime/version.info"

static const struct {
    aclCannAttr attr;
    int32_t min_runtime; /* 1000 * major + 10 * minor */
    bool needs_soc;      /* support_inf_nan / support_bf16 of the part */
} REQUIREMENTS[] = {
    {ACL_CANN_ATTR_INF_NAN, 7010, true},
    {ACL_CANN_ATTR_BF16, 7010, true},
    {ACL_CANN_ATTR_JIT_COMPILE, 6040, false},
};
#define N_ATTRS (sizeof REQUIREMENTS / sizeof REQUIREMENTS[0])

static pthread_mutex_t g_attr_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_attr_ready;                 /* g_attr_mu */
static aclCannAttr g_attr_list[N_ATTRS];  /* the available ones, in order */
static size_t g_attr_n;
static int32_t g_attr_available[N_ATTRS]; /* by REQUIREMENTS index */

static bool regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The runtime version file of the install holding this library into path (cap bytes). */
static bool find_version_file(char *path, size_t cap) {
    Dl_info info;
    if (dladdr((void *)&aclGetCannAttribute, &info) == 0 || info.dli_fname == NULL)
        return false;
    char *lib = realpath(info.dli_fname, NULL);
    if (lib == NULL)
        return false;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lib);
    free(lib);
    char *slash = strrchr(dir, '/'); /* dir: lib64 */
    if (slash == NULL)
        return false;
    *slash = '\0';
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s", dir);
    slash = strrchr(prefix, '/');
    if (slash != NULL) {
        *slash = '\0';
        if ((size_t)snprintf(path, cap, "%s/%s", prefix, RUNTIME_VERSION_FILE) < cap &&
            regular_file(path))
            return true;
    }
    for (int depth = 0; depth < SEARCH_DEPTH && dir[0] != '\0'; depth++) {
        if ((size_t)snprintf(path, cap, "%s/%s", dir, RUNTIME_VERSION_FILE) < cap &&
            regular_file(path))
            return true;
        slash = strrchr(dir, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
    }
    return false;
}

/* The version as CannInfoUtils::ParseVersionInfo reads it; false when there is none. */
static bool read_runtime_version(const char *path, int32_t *version) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char line[4096];
    bool ok = false;
    while (!ok && fgets(line, sizeof line, f) != NULL) {
        const char *at = strstr(line, "Version=");
        if (at == NULL)
            continue;
        at += strlen("Version=");
        char *end;
        long major = strtol(at, &end, 10);
        if (end == at || *end != '.')
            break;
        const char *m = end + 1;
        long minor = strtol(m, &end, 10);
        if (end == m)
            break;
        *version = (int32_t)(1000 * major + 10 * minor);
        ok = true;
    }
    fclose(f);
    return ok;
}

static aclError initialize(const char *fn) { /* g_attr_mu held */
    if (g_attr_ready)
        return ACL_SUCCESS;
    char path[PATH_MAX];
    int32_t version = 0;
    if (!find_version_file(path, sizeof path))
        return RT_ERR(ACL_ERROR_INTERNAL_ERROR, fn,
                      "no %s in the install libascendcl.so lies in: the runtime's version "
                      "decides which attributes are available", RUNTIME_VERSION_FILE);
    if (!read_runtime_version(path, &version))
        return RT_ERR(ACL_ERROR_INTERNAL_ERROR, fn, "%.300s has no \"Version=major.minor\" line",
                      path);
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (soc == NULL)
        return ACL_ERROR_INTERNAL_ERROR; /* message set */
    g_attr_n = 0;
    for (size_t i = 0; i < N_ATTRS; i++) {
        bool ok = version >= REQUIREMENTS[i].min_runtime && (!REQUIREMENTS[i].needs_soc || soc->bf16);
        g_attr_available[i] = ok ? 1 : 0;
        if (ok)
            g_attr_list[g_attr_n++] = REQUIREMENTS[i].attr;
    }
    g_attr_ready = true;
    return ACL_SUCCESS;
}

aclError aclGetCannAttributeList(const aclCannAttr **cannAttrList, size_t *num) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INTERNAL_ERROR;
    if (cannAttrList == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "cannAttrList is NULL");
    if (num == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "num is NULL");
    pthread_mutex_lock(&g_attr_mu);
    aclError rc = initialize(__func__);
    if (rc == ACL_SUCCESS) {
        *cannAttrList = g_attr_list;
        *num = g_attr_n;
    }
    pthread_mutex_unlock(&g_attr_mu);
    return rc;
}

aclError aclGetCannAttribute(aclCannAttr cannAttr, int32_t *value) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INTERNAL_ERROR;
    if (value == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "value is NULL");
    pthread_mutex_lock(&g_attr_mu);
    aclError rc = initialize(__func__);
    size_t i = 0;
    while (rc == ACL_SUCCESS && i < N_ATTRS && REQUIREMENTS[i].attr != cannAttr)
        i++;
    if (rc == ACL_SUCCESS && i == N_ATTRS)
        rc = RT_ERR(ACL_ERROR_INVALID_PARAM, __func__,
                    "cannAttr %d is no aclCannAttr (ACL_CANN_ATTR_INF_NAN 0, ACL_CANN_ATTR_BF16 "
                    "1, ACL_CANN_ATTR_JIT_COMPILE 2)", (int)cannAttr);
    else if (rc == ACL_SUCCESS)
        *value = g_attr_available[i];
    pthread_mutex_unlock(&g_attr_mu);
    return rc;
}
