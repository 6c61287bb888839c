/*
 * Per-thread error messages, fault injection and call counting.
 *
 * aclemu_fault runs at the top of every public entry point, so it must be cheap: counters
 * live in a fixed open-addressing table keyed by the *address* of the name literal each call
 * site passes (__func__), found with one hash and usually one probe, updated with atomics and
 * no lock. Only the first call through a new address takes a mutex (to resolve its name
 * against the fault spec and against other addresses with the same name, which share one
 * counter). The table keeps the address, so a name must have static storage (a literal or
 * __func__), as every call site's does.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* ---- errors ------------------------------------------------------------------------------ */

#define MSG_CAP 1024
static _Thread_local char tl_msg[MSG_CAP];
static _Thread_local char tl_out[MSG_CAP]; /* what the last aclGetRecentErrMsg returned */
static _Thread_local bool tl_has_msg;

void aclemu_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    va_end(ap);
    tl_has_msg = true;
}

/* Returns the message and clears it: a second call returns NULL until the next failure. The
 * text stays valid until this thread's next aclGetRecentErrMsg. Not counted or faulted: it
 * reports errors, and an injected failure here would overwrite the one it must return. */
const char *aclGetRecentErrMsg(void) {
    if (!tl_has_msg)
        return NULL;
    memcpy(tl_out, tl_msg, sizeof tl_out);
    tl_has_msg = false;
    return tl_out;
}

/* ---- fault injection and call counts ------------------------------------------------------ */

#define SLOTS 1024 /* power of two; public functions number in the tens */
#define NAME_MAX_LEN 128
#define SPEC_MAX 256

typedef struct slot {
    _Atomic(const char *) key;   /* address of the caller's name literal; NULL = empty */
    _Atomic int ready;           /* canon resolved */
    struct slot *canon;          /* slot holding the counter for this name (maybe itself) */
    _Atomic int64_t count;       /* calls since the last reset (canonical slots only) */
    _Atomic int64_t fail_at;     /* call number that fails; 0 = none (canonical slots only) */
    _Atomic int task_kind;       /* RT_TASK_FAULT_*: the call's task fails or hangs instead */
    _Atomic int64_t task_arg;    /* its status code, or the hang's milliseconds (-1: until
                                  * released) */
    _Atomic uint64_t first_seq;  /* order of the first call since the last reset */
} slot;

static slot g_slots[SLOTS];
static pthread_mutex_t g_fault_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_seq = 1;

typedef struct {
    char name[NAME_MAX_LEN];
    int64_t n;
    int task_kind;    /* RT_TASK_FAULT_NONE: the call itself fails */
    int64_t task_arg;
} spec_entry;
static spec_entry g_spec[SPEC_MAX];
static int g_nspec; /* guarded by g_fault_mu */

static inline size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 40) & (SLOTS - 1);
}

/* The spec's entry for name, or NULL (g_fault_mu held). */
static const spec_entry *spec_lookup(const char *name) {
    for (int i = 0; i < g_nspec; i++)
        if (strcmp(g_spec[i].name, name) == 0)
            return &g_spec[i];
    return NULL;
}

/* Copies name's entry of the spec into its canonical slot (g_fault_mu held). */
static void arm_slot(slot *s, const char *name) {
    const spec_entry *e = spec_lookup(name);
    atomic_store(&s->task_kind, e != NULL ? e->task_kind : RT_TASK_FAULT_NONE);
    atomic_store(&s->task_arg, e != NULL ? e->task_arg : 0);
    atomic_store(&s->fail_at, e != NULL ? e->n : 0);
}

/* First call through a new name address: find the canonical slot for the name. */
static void resolve(slot *s, const char *name) {
    pthread_mutex_lock(&g_fault_mu);
    slot *canon = s;
    for (size_t i = 0; i < SLOTS; i++) {
        slot *o = &g_slots[i];
        if (o == s || !atomic_load(&o->ready))
            continue;
        if (o->canon == o && strcmp(atomic_load(&o->key), name) == 0) {
            canon = o;
            break;
        }
    }
    s->canon = canon;
    if (canon == s)
        arm_slot(s, name);
    atomic_store_explicit(&s->ready, 1, memory_order_release);
    pthread_mutex_unlock(&g_fault_mu);
}

static slot *find_slot(const char *name) {
    size_t h = hash_ptr(name);
    for (size_t i = 0; i < SLOTS; i++) {
        slot *s = &g_slots[(h + i) & (SLOTS - 1)];
        const char *k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == NULL) {
            const char *expected = NULL;
            if (atomic_compare_exchange_strong(&s->key, &expected, name)) {
                resolve(s, name);
                return s;
            }
            k = expected; /* lost the race: someone claimed it, maybe for this name */
        }
        if (k == name) {
            while (!atomic_load_explicit(&s->ready, memory_order_acquire))
                rt_cpu_relax(); /* the claimer is resolving it (a few microseconds at most) */
            return s;
        }
    }
    return NULL; /* table full: cannot happen with the public API's few dozen names */
}

static _Thread_local const char *tl_call;
/* The task fault of the public call in progress on this thread, for the task it queues. */
static _Thread_local int tl_task_kind;
static _Thread_local int64_t tl_task_arg;

const char *aclemu_current_call(void) { return tl_call; }

int rt_take_task_fault(int64_t *arg) {
    int kind = tl_task_kind;
    *arg = tl_task_arg;
    tl_task_kind = RT_TASK_FAULT_NONE;
    return kind;
}

/* Bumped by every aclemuSetFaults: a hung task is released when it changes. */
static _Atomic uint64_t g_fault_generation;

uint64_t rt_fault_generation(void) { return atomic_load(&g_fault_generation); }

bool aclemu_fault(const char *func) {
    tl_call = func;
    tl_task_kind = RT_TASK_FAULT_NONE;
    slot *s = find_slot(func);
    if (s == NULL)
        return false;
    slot *c = s->canon;
    int64_t n = atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed) + 1;
    if (n == 1)
        atomic_store_explicit(&c->first_seq, atomic_fetch_add(&g_seq, 1), memory_order_relaxed);
    int64_t at = atomic_load_explicit(&c->fail_at, memory_order_relaxed);
    if (at != 0 && n == at) {
        int kind = atomic_load_explicit(&c->task_kind, memory_order_relaxed);
        if (kind != RT_TASK_FAULT_NONE) { /* the call succeeds; the task it queues does not */
            tl_task_kind = kind;
            tl_task_arg = atomic_load_explicit(&c->task_arg, memory_order_relaxed);
            return false;
        }
        aclemu_set_error("%s: injected fault (call %lld)", func, (long long)n);
        return true;
    }
    return false;
}

bool rt_fault_deferred(const char *fn, char *buf, size_t cap) {
    if (!aclemu_fault(fn))
        return false;
    snprintf(buf, cap, "%s", aclGetRecentErrMsg());
    return true;
}

aclError rt_fault_report(const char *buf) {
    aclemu_set_error("%s, reported after the wait", buf);
    return ACL_ERROR_RT_INTERNAL_ERROR;
}

static void reset_counts_locked(void) {
    for (size_t i = 0; i < SLOTS; i++) {
        atomic_store(&g_slots[i].count, 0);
        atomic_store(&g_slots[i].first_seq, 0);
    }
}

/* Parses "name:n[,name:n...]" (spaces around tokens allowed) into out; false if malformed,
 * with *why set to a description. */
static bool parse_spec(const char *spec, spec_entry *out, int *nout, char *why, size_t whycap) {
    int n = 0;
    const char *p = spec;
    while (*p) {
        while (isspace((unsigned char)*p) || *p == ',')
            p++;
        if (!*p)
            break;
        const char *name = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        size_t len = (size_t)(p - name);
        while (isspace((unsigned char)*p))
            p++;
        if (len == 0 || len >= NAME_MAX_LEN || *p != ':') {
            snprintf(why, whycap, "expected name:n at \"%.40s\"", name);
            return false;
        }
        p++;
        while (isspace((unsigned char)*p))
            p++;
        if (!isdigit((unsigned char)*p)) {
            snprintf(why, whycap, "expected a call number after \"%.*s:\"", (int)len, name);
            return false;
        }
        char *end;
        long long v = strtoll(p, &end, 10);
        if (v < 1) {
            snprintf(why, whycap, "call number for %.*s must be >= 1", (int)len, name);
            return false;
        }
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        int kind = RT_TASK_FAULT_NONE;
        int64_t arg = 0;
        if (*p == ':') { /* the task the call queues fails or hangs: fail[=code], hang[=ms] */
            p++;
            while (isspace((unsigned char)*p))
                p++;
            if (strncmp(p, "fail", 4) == 0 && !isalnum((unsigned char)p[4])) {
                kind = RT_TASK_FAULT_FAIL;
                arg = RT_TASK_FAULT_DEFAULT_CODE;
                p += 4;
            } else if (strncmp(p, "hang", 4) == 0 && !isalnum((unsigned char)p[4])) {
                kind = RT_TASK_FAULT_HANG;
                arg = -1;
                p += 4;
            } else {
                snprintf(why, whycap, "expected fail or hang after \"%.*s:%lld:\"", (int)len,
                         name, v);
                return false;
            }
            if (*p == '=') {
                p++;
                if (!isdigit((unsigned char)*p)) {
                    snprintf(why, whycap, "expected a number after %.*s:%lld:%s=", (int)len, name,
                             v, kind == RT_TASK_FAULT_FAIL ? "fail" : "hang");
                    return false;
                }
                long long a = strtoll(p, &end, 10);
                p = end;
                if (kind == RT_TASK_FAULT_FAIL ? (a < 1 || a > INT32_MAX) : a > INT32_MAX) {
                    snprintf(why, whycap, "%s value %lld out of range (%s)",
                             kind == RT_TASK_FAULT_FAIL ? "fail" : "hang", a,
                             kind == RT_TASK_FAULT_FAIL ? "a status code, 1..2147483647"
                                                        : "milliseconds, 0..2147483647");
                    return false;
                }
                arg = a;
            }
            while (isspace((unsigned char)*p))
                p++;
        }
        if (*p && *p != ',') {
            snprintf(why, whycap, "unexpected \"%.20s\" after %.*s:%lld", p, (int)len, name, v);
            return false;
        }
        if (n == SPEC_MAX) {
            snprintf(why, whycap, "more than %d entries", SPEC_MAX);
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (strlen(out[i].name) == len && memcmp(out[i].name, name, len) == 0) {
                snprintf(why, whycap, "%.*s is named twice", (int)len, name);
                return false;
            }
        }
        memcpy(out[n].name, name, len);
        out[n].name[len] = '\0';
        out[n].n = v;
        out[n].task_kind = kind;
        out[n].task_arg = arg;
        n++;
    }
    *nout = n;
    return true;
}

int aclemuSetFaults(const char *spec) {
    static spec_entry parsed[SPEC_MAX]; /* guarded by g_fault_mu */
    char why[160];
    int n = 0;
    pthread_mutex_lock(&g_fault_mu);
    if (spec != NULL && !parse_spec(spec, parsed, &n, why, sizeof why)) {
        pthread_mutex_unlock(&g_fault_mu);
        aclemu_set_error("aclemuSetFaults: spec \"%.200s\" is malformed: %s", spec, why);
        return ACL_ERROR_INVALID_PARAM;
    }
    memcpy(g_spec, parsed, sizeof(spec_entry) * (size_t)n);
    g_nspec = n;
    for (size_t i = 0; i < SLOTS; i++) {
        slot *s = &g_slots[i];
        if (atomic_load(&s->ready) && s->canon == s)
            arm_slot(s, atomic_load(&s->key));
    }
    reset_counts_locked();
    atomic_fetch_add(&g_fault_generation, 1);
    pthread_mutex_unlock(&g_fault_mu);
    return ACL_SUCCESS;
}

void aclemuResetCallCounts(void) {
    pthread_mutex_lock(&g_fault_mu);
    reset_counts_locked();
    pthread_mutex_unlock(&g_fault_mu);
}

static int by_seq(const void *a, const void *b) {
    uint64_t x = atomic_load(&(*(slot *const *)a)->first_seq);
    uint64_t y = atomic_load(&(*(slot *const *)b)->first_seq);
    return x < y ? -1 : x > y;
}

size_t aclemuGetCallCounts(char *buf, size_t cap) {
    slot *list[SLOTS];
    size_t n = 0;
    pthread_mutex_lock(&g_fault_mu);
    for (size_t i = 0; i < SLOTS; i++) {
        slot *s = &g_slots[i];
        if (atomic_load(&s->ready) && s->canon == s && atomic_load(&s->count) > 0)
            list[n++] = s;
    }
    qsort(list, n, sizeof list[0], by_seq);
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        char item[NAME_MAX_LEN + 32];
        int len = snprintf(item, sizeof item, "%s%s:%lld", i ? "," : "",
                           atomic_load(&list[i]->key), (long long)atomic_load(&list[i]->count));
        if (buf != NULL && need < cap)
            snprintf(buf + need, cap - need, "%s", item);
        need += (size_t)len;
    }
    if (buf != NULL && cap > 0 && n == 0)
        buf[0] = '\0';
    pthread_mutex_unlock(&g_fault_mu);
    return need;
}

/* ACL_EMU_FAIL is read once when the library loads, before any call can be counted. */
__attribute__((constructor)) static void fault_from_env(void) {
    const char *spec = getenv("ACL_EMU_FAIL");
    if (spec == NULL || *spec == '\0')
        return;
    if (aclemuSetFaults(spec) != ACL_SUCCESS) {
        /* No caller to return a code to: say so loudly rather than run without the faults. */
        fprintf(stderr, "aclemu: ignoring ACL_EMU_FAIL: %s\n", aclGetRecentErrMsg());
    }
}
