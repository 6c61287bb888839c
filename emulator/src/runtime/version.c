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

/* ---- the deprecated forms: aclrtGetVersion, aclsysGetCANNVersion ---- */

/* The interface version the runtime was built with: ACL_MAJOR_VERSION, ACL_MINOR_VERSION,
 * ACL_PATCH_VERSION of its acl_rt.h (hicann/runtime src/acl/aclrt_impl/acl_rt_impl_base.cpp
 * aclrtGetVersionImpl), each output checked for NULL in that order. */
aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
    if (aclemu_fault(__func__))
        return ACL_ERROR_INVALID_PARAM;
    if (majorVersion == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "majorVersion (output pointer) is NULL");
    if (minorVersion == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "minorVersion (output pointer) is NULL");
    if (patchVersion == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, __func__, "patchVersion (output pointer) is NULL");
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
}

/* The package each aclCANNPackageName reads (acl.cpp kMapToPkgName); NULL: the driver's. */
static const char *cann_package(aclCANNPackageName name) {
    switch (name) {
    case ACL_PKG_NAME_CANN:
    case ACL_PKG_NAME_RUNTIME: return "runtime";
    case ACL_PKG_NAME_COMPILER: return "bisheng-compiler";
    case ACL_PKG_NAME_HCCL: return "hccl";
    case ACL_PKG_NAME_TOOLKIT: return "oam-tools";
    case ACL_PKG_NAME_OPP:
    case ACL_PKG_NAME_OPP_KERNEL: return "ops-legacy";
    default: return NULL;
    }
}

/* *version from the package's version text as acl.cpp FillinPackageVersion splits it: the
 * first '-' becomes '.' with the dots after it dropped ("8.5.0-beta.1" -> "8.5.0.beta1"), then
 * at least two '.'-separated parts, missing ones "0", none of the first four empty; each
 * copied truncated to its field. false when the text does not split so. */
static bool split_version(const char *text, aclCANNPackageVersion *version) {
    char v[LINE_CAP];
    const char *dash = strchr(text, '-');
    size_t n = 0;
    for (const char *p = text; *p != '\0' && n + 1 < sizeof v; p++) {
        if (p == dash)
            v[n++] = '.';
        else if (!(dash != NULL && p > dash && *p == '.'))
            v[n++] = *p;
    }
    v[n] = '\0';
    /* the parts: every '.' separates two (acl StringUtils::Split keeps empty ones, a
     * trailing '.' included) */
    const char *parts[4] = {"0", "0", "0", "0"};
    size_t lens[4] = {1, 1, 1, 1};
    int count = 0;
    for (const char *b = v;;) {
        const char *e = strchr(b, '.');
        if (count < 4) {
            parts[count] = b;
            lens[count] = e != NULL ? (size_t)(e - b) : strlen(b);
        }
        count++;
        if (e == NULL)
            break;
        b = e + 1;
    }
    memset(version, 0, sizeof *version); /* cleared whether or not the text splits */
    if (count < 2)
        return false;
    for (int i = 0; i < 4; i++)
        if (lens[i] == 0)
            return false;
    memcpy(version->version, v, n < ACL_PKG_VERSION_MAX_SIZE ? n : ACL_PKG_VERSION_MAX_SIZE - 1);
    char *fields[4] = {version->majorVersion, version->minorVersion, version->releaseVersion,
                       version->patchVersion};
    for (int i = 0; i < 4; i++)
        memcpy(fields[i], parts[i],
               lens[i] < ACL_PKG_VERSION_PARTS_MAX_SIZE ? lens[i]
                                                        : ACL_PKG_VERSION_PARTS_MAX_SIZE - 1);
    return true;
}

/* acl.cpp aclsysGetCANNVersionImpl: NULL version 100000; a name outside the enum 100000;
 * the driver's version: 100003 (no driver install, see the top); otherwise
 * $ASCEND_HOME_PATH/share/info/<package>/version.info (a '-' in the package name tried as '_'
 * when the file is missing), its first line holding "Version=", the rest of that line as it
 * is (not trimmed, unlike aclsysGetVersionStr's): 100003 when any of it is missing or the text
 * does not split into parts. */
aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version) {
    static const char *const fn = "aclsysGetCANNVersion";
    if (aclemu_fault(fn))
        return ACL_ERROR_INVALID_FILE;
    if (version == NULL)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "version (output pointer) is NULL");
    if ((int)name < (int)ACL_PKG_NAME_CANN || (int)name > (int)ACL_PKG_NAME_DRIVER)
        return RT_ERR(ACL_ERROR_INVALID_PARAM, fn, "name %d is not an aclCANNPackageName "
                      "(ACL_PKG_NAME_CANN 0 .. ACL_PKG_NAME_DRIVER 7)", (int)name);
    const char *pkg = cann_package(name);
    if (pkg == NULL)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "ACL_PKG_NAME_DRIVER: the emulator has no NPU "
                      "driver install (no /etc/ascend_install.info) to read its version from");
    const char *home = getenv("ASCEND_HOME_PATH");
    if (home == NULL)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "ASCEND_HOME_PATH is not set: it names the "
                      "install whose share/info/<package>/version.info holds the version");
    char path[PATH_MAX], real[PATH_MAX];
    snprintf(path, sizeof path, "%s/share/info/%s/version.info", home, pkg);
    if (realpath(path, real) == NULL && strchr(pkg, '-') != NULL) {
        char alt[64];
        snprintf(alt, sizeof alt, "%s", pkg);
        for (char *c = alt; *c != '\0'; c++)
            if (*c == '-')
                *c = '_';
        snprintf(path, sizeof path, "%s/share/info/%s/version.info", home, alt);
    }
    FILE *f = realpath(path, real) != NULL ? fopen(path, "r") : NULL;
    if (f == NULL)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "package \"%s\" (name %d): no version file "
                      "%.300s (no such package installed?)", pkg, (int)name, path);
    char line[LINE_CAP];
    const char *text = NULL;
    while (fgets(line, sizeof line, f) != NULL) {
        char *at = strstr(line, VERSION_KEY);
        if (at == NULL)
            continue;
        at += strlen(VERSION_KEY);
        at[strcspn(at, "\n")] = '\0'; /* the line as std::getline gives it */
        text = at;
        break;
    }
    fclose(f);
    if (text == NULL || *text == '\0')
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "%.300s has no \"" VERSION_KEY "\" line with "
                      "a version", path);
    if (!split_version(text, version))
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "version \"%.100s\" in %.300s does not split "
                      "into at least two '.'-separated parts, none of the first four empty",
                      text, path);
    return ACL_SUCCESS;
}
