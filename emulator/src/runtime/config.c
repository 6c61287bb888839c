/*
 * aclInit's configuration file, checked the way CANN checks it before using it (hicann/runtime
 * src/acl/aclrt_impl/acl_rt_impl_base.cpp GetStrFromConfigPath, src/acl/common/json_parser.cpp):
 * - a path that does not resolve, is not a regular file, cannot be read or is larger than
 *   10 MiB: ACL_ERROR_INVALID_FILE (100003);
 * - an empty file: accepted (nothing to parse);
 * - text (up to its first NUL byte) that is not one JSON value, or nests objects or arrays more
 *   than 10 deep: ACL_ERROR_PARSE_FILE (100006).
 * The emulator uses none of the settings; a file that passes here configures nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_internal.h"

#define MAX_CONFIG_BYTES (10L * 1024 * 1024)
#define MAX_DEPTH 10

typedef struct {
    const char *p, *end;
    int objects, arrays; /* current nesting */
    const char *why;
} json;

static void skip_ws(json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool fail(json *j, const char *why) {
    if (j->why == NULL)
        j->why = why;
    return false;
}

static bool literal(json *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return fail(j, "unexpected character");
    j->p += n;
    return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool number(json *j) {
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || !is_digit(*j->p))
        return fail(j, "malformed number");
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && is_digit(*j->p))
            j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || !is_digit(*j->p))
            return fail(j, "malformed number");
        while (j->p < j->end && is_digit(*j->p))
            j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || !is_digit(*j->p))
            return fail(j, "malformed number");
        while (j->p < j->end && is_digit(*j->p))
            j->p++;
    }
    return true;
}

static bool string(json *j) {
    j->p++; /* the opening quote */
    while (j->p < j->end) {
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"')
            return true;
        if (c < 0x20)
            return fail(j, "control character in a string");
        if (c == '\\') {
            if (j->p >= j->end)
                break;
            char e = *j->p++;
            if (e == 'u') {
                for (int k = 0; k < 4; k++, j->p++)
                    if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p))
                        return fail(j, "malformed \\u escape");
            } else if (!strchr("\"\\/bfnrt", e)) {
                return fail(j, "unknown escape in a string");
            }
        }
    }
    return fail(j, "unterminated string");
}

static bool value(json *j);

static bool container(json *j, char close, int *depth) {
    if (++*depth > MAX_DEPTH)
        return fail(j, close == '}' ? "objects nested more than 10 deep"
                                    : "arrays nested more than 10 deep");
    j->p++; /* the opening bracket */
    skip_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        --*depth;
        return true;
    }
    for (;;) {
        if (close == '}') {
            skip_ws(j);
            if (j->p >= j->end || *j->p != '"')
                return fail(j, "an object key must be a string");
            if (!string(j))
                return false;
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':')
                return fail(j, "':' expected after an object key");
            j->p++;
        }
        if (!value(j))
            return false;
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            --*depth;
            return true;
        }
        return fail(j, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static bool value(json *j) {
    skip_ws(j);
    if (j->p >= j->end)
        return fail(j, "unexpected end of text");
    switch (*j->p) {
    case '{': return container(j, '}', &j->objects);
    case '[': return container(j, ']', &j->arrays);
    case '"': return string(j);
    case 't': return literal(j, "true");
    case 'f': return literal(j, "false");
    case 'n': return literal(j, "null");
    default: return number(j);
    }
}

aclError rt_check_config(const char *fn, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "configPath \"%.200s\": %s", path,
                      strerror(errno));
    if (!S_ISREG(st.st_mode))
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "configPath \"%.200s\" is not a regular file",
                      path);
    if (st.st_size > MAX_CONFIG_BYTES)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn,
                      "configPath \"%.200s\" is %lld bytes, more than the 10 MiB allowed", path,
                      (long long)st.st_size);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "configPath \"%.200s\" cannot be opened: %s",
                      path, strerror(errno));
    char *text = malloc((size_t)st.st_size + 1);
    size_t n = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (text == NULL)
        return RT_ERR(ACL_ERROR_INVALID_FILE, fn, "out of host memory reading configPath");
    text[n] = '\0';
    size_t len = strlen(text); /* CANN parses the text up to its first NUL */
    aclError rc = ACL_SUCCESS;
    if (len > 0) {
        json j = {text, text + len, 0, 0, NULL};
        bool ok = value(&j);
        if (ok) {
            skip_ws(&j);
            ok = j.p == j.end || fail(&j, "text after the JSON value");
        }
        if (!ok)
            rc = RT_ERR(ACL_ERROR_PARSE_FILE, fn,
                        "configPath \"%.200s\" is not valid JSON: %s at byte %td", path, j.why,
                        j.p - text);
    }
    free(text);
    return rc;
}
