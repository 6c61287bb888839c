/*
 * aclsysGetVersionStr and aclsysGetVersionNum: an installed package's version, read where a
 * CANN install records it and where CANN's runtime reads it (hicann/runtime
 * src/acl/aclrt_impl/acl.cpp, GetPkgVersionContent and CalculateVersionNum):
 * $ASCEND_HOME_PATH/share/info/<pkgName>/version.info, the text after "Version=" on the first
 * line holding it, trimmed of blanks. A name with '-' is tried again with '_' (and one with
 * '_' with '-'). The emulator's build records its packages' versions in its prefix
 * (emulator/build.py VERSION_INFO), so with ASCEND_HOME_PATH pointing at the prefix, as
 * set_env.sh points it at an install, the calls answer as an install's runtime does.
 *
 * The driver's and firmware's versions come from the driver's install (/etc/ascend_install.info
 * in CANN); the emulator has no driver, so both are 100003, as on a machine without one.
 * Neither call needs aclInit.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define VERSION_KEY "Version="
#define LINE_CAP 4096

/* The version of pkg (one spelling) into out (cap bytes): ACL_SUCCESS or 100003, the message
 * set naming fn unless quiet (a first spelling whose alternative is still to be tried). */
static aclError read_version(const char *fn, const char *pkg, char *out, size_t cap,
                             bool quiet) {
    if (strcmp(pkg, "driver") == 0 || strcmp(pkg, "firmware") == 0)
        return quiet ? ACL_ERROR_INVALID_FILE
                     : RT_ERR(ACL_ERROR_INVALID_FILE, fn,
                              "pkgName \"%s\": the emulator has no NPU driver install (no "
                              "/etc/ascend_install.info package) to read its version from", pkg);
    const char *home = getenv("ASCEND_HOME_PATH");
    if (home == NULL || home[0] == '\0')
        return quiet ? ACL_ERROR_INVALID_FILE
                     : RT_ERR(ACL_ERROR_INVALID_FILE, fn,
                              "ASCEND_HOME_PATH is not set: it names the install whose "
                              "share/info/<pkgName>/version.info holds the version (set_env.sh "
                              "sets it; for the emulator, its prefix)");
    char *root = realpath(home, NULL);
    if (root == NULL)
        return quiet ? ACL_ERROR_INVALID_FILE
                     : RT_ERR(ACL_ERROR_INVALID_FILE, fn, "ASCEND_HOME_PATH (\"%.200s\") does "
                              "not exist", home);
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/share/info/%s/version.info", root, pkg);
    free(root);
    FILE *f = (n > 0 && (size_t)n < sizeof path) ? fopen(path, "r") : NULL;
    if (f == NULL)
        return quiet ? ACL_ERROR_INVALID_FILE
                     : RT_ERR(ACL_ERROR_INVALID_FILE, fn, "pkgName \"%.100s\": no version file "
                              "%.300s (no such package installed?)", pkg, path);
    char line[LINE_CAP];
    bool found = false;
    while (fgets(line, sizeof line, f) != NULL) {
        const char *at = strstr(line, VERSION_KEY);
        if (at == NULL)
            continue;
        const char *b = at + strlen(VERSION_KEY), *e = b + strlen(b);
        /* Trimmed as CANN trims: blanks off both ends, unless the text is nothing but blanks
         * (then it stays as it is). */
        const char *fb = b, *fe = e;
        while (fb < fe && strchr(" \t\r\n", *fb) != NULL)
            fb++;
        if (fb < fe) {
            while (strchr(" \t\r\n", fe[-1]) != NULL)
                fe--;
            b = fb;
            e = fe;
        }
        if (e > b) {
            size_t len = (size_t)(e - b);
            if (len >= cap) {
                fclose(f);
                return RT_ERR(ACL_ERROR_INTERNAL_ERROR, fn, "the version in %.300s is %zu "
                              "characters, more than ACL_PKG_VERSION_MAX_SIZE - 1 (%zu)", path,
                              len, cap - 1);
            }
            memcpy(out, b, len);
            out[len] = '\0';
            found = true;
        }
        break;
    }
    fclose(f);
    if (!found)
        return quiet ? ACL_ERROR_INVALID_FILE
                     : RT_ERR(ACL_ERROR_INVALID_FILE, fn, "%.300s has no \"" VERSION_KEY "\" "
                              "line with a version", path);
    return ACL_SUCCESS;
}

/* The package's version string, trying the other spelling of '-' / '_' (see the top). */
static aclError package_version(const char *fn, const char *pkg, char *out, size_t cap) {
    char alt[256];
    size_t len = strlen(pkg);
    bool has_alt = len < sizeof alt && (strchr(pkg, '-') != NULL || strchr(pkg, '_') != NULL);
    if (has_alt) {
        char from = strchr(pkg, '-') != NULL ? '-' : '_', to = from == '-' ? '_' : '-';
        for (size_t i = 0; i <= len; i++)
            alt[i] = pkg[i] == from ? to : pkg[i];
    }
    aclError rc = read_version(fn, pkg, out, cap, has_alt);
    if (rc == ACL_ERROR_INVALID_FILE && has_alt)
        rc = read_version(fn, alt, out, cap, false);
    return rc;
}

aclError aclsysGetVersionStr(char *pkgName, char *versionStr) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INVALID_FILE;
    if (versionStr == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "versionStr (output buffer) is NULL");
    if (pkgName == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "pkgName is NULL");
    return package_version(__func__, pkgName, versionStr, ACL_PKG_VERSION_MAX_SIZE);
}

/* ---- the version as a number (CalculateVersionNum) ---- */

/* std::stoi on s[0, n): leading blanks, a sign, then digits (the rest ignored); false when
 * there are no digits or the number does not fit an int. */
static bool leading_int(const char *s, size_t n, long *out) {
    char buf[64];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (end == buf || errno == ERANGE || v > INT_MAX || v < INT_MIN)
        return false;
    *out = v;
    return true;
}

/* "X.Y.Z" and an optional pre-release suffix ("rc1", "-beta.2", ...): ACL_SUCCESS with *num,
 * else 500000 naming fn. */
static aclError version_number(const char *fn, const char *v, int32_t *num) {
    const char *dot1 = strchr(v, '.');
    const char *dot2 = dot1 != NULL ? strchr(dot1 + 1, '.') : NULL;
    const char *patch = dot2 != NULL ? dot2 + 1 : NULL, *end = patch;
    while (end != NULL && isdigit((unsigned char)*end))
        end++;
    long major, minor, pnum;
    if (dot1 == NULL || dot1 == v || dot2 == NULL || dot2 == dot1 + 1 || end == patch ||
        !leading_int(v, (size_t)(dot1 - v), &major) ||
        !leading_int(dot1 + 1, (size_t)(dot2 - dot1 - 1), &minor) ||
        !leading_int(patch, (size_t)(end - patch), &pnum))
        return RT_ERR(ACL_ERROR_INTERNAL_ERROR, fn, "version \"%.100s\" is not X.Y.Z (numbers) "
                      "with an optional alpha, beta or rc suffix", v);
    int64_t value = (int64_t)major * 10000000 + (int64_t)minor * 100000 + (int64_t)pnum * 1000;
    if (*end != '\0') {
        /* The suffix: "alpha", else "beta", else "rc" (any case) after at most one other
         * character, then an optional number after at most one '.' or '-'. */
        char lower[LINE_CAP];
        size_t n = strlen(end);
        for (size_t i = 0; i <= n; i++)
            lower[i] = (char)tolower((unsigned char)end[i]);
        static const struct { const char *word; int weight; } KEYS[] = {
            {"alpha", 300}, {"beta", 200}, {"rc", 100}};
        const char *at = NULL;
        int weight = 0;
        size_t wlen = 0;
        for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0] && at == NULL; k++)
            if ((at = strstr(lower, KEYS[k].word)) != NULL) {
                weight = KEYS[k].weight;
                wlen = strlen(KEYS[k].word);
            }
        const char *pre = at != NULL ? end + (at - lower) + wlen : NULL;
        const char *digits = pre;
        while (digits != NULL && (*digits == '.' || *digits == '-'))
            digits++;
        long pre_num = 0;
        char *stop = NULL;
        bool ok = at != NULL && at - lower <= 1;
        if (ok && *pre != '\0') {
            errno = 0;
            pre_num = isdigit((unsigned char)*digits) ? strtol(digits, &stop, 10) : 0;
            ok = isdigit((unsigned char)*digits) && digits - pre <= 1 && *stop == '\0' &&
                 errno != ERANGE && pre_num <= INT_MAX;
        }
        if (!ok)
            return RT_ERR(ACL_ERROR_INTERNAL_ERROR, fn, "version \"%.100s\": suffix \"%.60s\" "
                          "is not alpha, beta or rc with an optional number", v, end);
        value += pre_num - weight;
    }
    *num = (int32_t)value;
    return ACL_SUCCESS;
}

aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INVALID_FILE;
    if (versionNum == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "versionNum (output pointer) is NULL");
    if (pkgName == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "pkgName is NULL");
    char v[LINE_CAP]; /* no ACL_PKG_VERSION_MAX_SIZE limit here: CANN has none either */
    aclError rc = package_version(__func__, pkgName, v, sizeof v);
    return rc != ACL_SUCCESS ? rc : version_number(__func__, v, versionNum);
}
