/*
 * The handle registry: a hash set of live handles keyed by address, with a kind per entry,
 * so a garbage or destroyed handle is recognised without being dereferenced. Each
 * registration also gets a generation (a process-wide serial), so whoever keeps a handle can
 * tell it from a later object at the same address. Open
 * addressing with linear probing and tombstones; one mutex (every operation is O(1) and
 * nothing else is called while it is held). Live counts per kind are atomics read lock-free
 * by aclemuGetLiveObjects.
 */
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "rt_internal.h"

#define TOMB ((const void *)1)

typedef struct {
    const void *key; /* NULL: empty; TOMB: deleted */
    int kind;
    uint64_t gen;    /* this registration's serial, never 0 */
} entry;

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static entry *g_tab;
static size_t g_cap, g_used /* live */, g_filled /* live + tombstones */;
static uint64_t g_last_gen; /* g_reg_mu */
static _Atomic int64_t g_count[ACLEMU_KIND_COUNT];

static inline size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static entry *lookup(const void *p) { /* g_reg_mu held; NULL when absent */
    if (g_cap == 0)
        return NULL;
    size_t mask = g_cap - 1;
    for (size_t i = hash_ptr(p) & mask;; i = (i + 1) & mask) {
        entry *e = &g_tab[i];
        if (e->key == NULL)
            return NULL;
        if (e->key == p)
            return e;
    }
}

static bool grow(void) { /* g_reg_mu held; rehash so that at most half the slots are used */
    size_t ncap = 256;
    while ((g_used + 1) * 2 > ncap)
        ncap *= 2;
    if (ncap < g_cap) /* never shrink: rehashing at the same size just drops tombstones */
        ncap = g_cap;
    entry *nt = calloc(ncap, sizeof *nt);
    if (nt == NULL)
        return false;
    for (size_t i = 0; i < g_cap; i++) {
        const void *k = g_tab[i].key;
        if (k == NULL || k == TOMB)
            continue;
        size_t j = hash_ptr(k) & (ncap - 1);
        while (nt[j].key != NULL)
            j = (j + 1) & (ncap - 1);
        nt[j] = g_tab[i];
    }
    free(g_tab);
    g_tab = nt;
    g_cap = ncap;
    g_filled = g_used;
    return true;
}

void aclemu_handle_register(const void *p, aclemu_kind kind) {
    if (p == NULL || p == TOMB || (int)kind < 0 || kind >= ACLEMU_KIND_COUNT)
        return;
    pthread_mutex_lock(&g_reg_mu);
    entry *e = lookup(p);
    if (e != NULL) { /* a stale entry for a reused address (cannot happen if every destroy
                        unregisters first); re-kind it */
        atomic_fetch_sub(&g_count[e->kind], 1);
        e->kind = (int)kind;
        e->gen = ++g_last_gen;
        atomic_fetch_add(&g_count[kind], 1);
        pthread_mutex_unlock(&g_reg_mu);
        return;
    }
    if ((g_filled + 1) * 4 > g_cap * 3 && !grow()) {
        pthread_mutex_unlock(&g_reg_mu);
        return; /* out of memory: the handle reads as not live, which is safe */
    }
    size_t mask = g_cap - 1, i = hash_ptr(p) & mask;
    while (g_tab[i].key != NULL && g_tab[i].key != TOMB)
        i = (i + 1) & mask;
    if (g_tab[i].key == NULL)
        g_filled++;
    g_tab[i].key = p;
    g_tab[i].kind = (int)kind;
    g_tab[i].gen = ++g_last_gen;
    g_used++;
    atomic_fetch_add(&g_count[kind], 1);
    pthread_mutex_unlock(&g_reg_mu);
}

bool aclemu_handle_check(const void *p, aclemu_kind kind) {
    if (p == NULL)
        return false;
    pthread_mutex_lock(&g_reg_mu);
    entry *e = lookup(p);
    bool ok = e != NULL && e->kind == (int)kind;
    pthread_mutex_unlock(&g_reg_mu);
    return ok;
}

uint64_t aclemu_handle_generation(const void *p, aclemu_kind kind) {
    if (p == NULL)
        return 0;
    pthread_mutex_lock(&g_reg_mu);
    entry *e = lookup(p);
    uint64_t gen = e != NULL && e->kind == (int)kind ? e->gen : 0;
    pthread_mutex_unlock(&g_reg_mu);
    return gen;
}

bool aclemu_handle_unregister(const void *p, aclemu_kind kind) {
    if (p == NULL)
        return false;
    pthread_mutex_lock(&g_reg_mu);
    entry *e = lookup(p);
    bool ok = e != NULL && e->kind == (int)kind;
    if (ok) {
        e->key = TOMB;
        g_used--;
        atomic_fetch_sub(&g_count[kind], 1);
    }
    pthread_mutex_unlock(&g_reg_mu);
    return ok;
}

bool rt_handle_acquire(const void *p, aclemu_kind kind) {
    if (p == NULL)
        return false;
    pthread_mutex_lock(&g_reg_mu);
    entry *e = lookup(p);
    bool ok = e != NULL && e->kind == (int)kind;
    if (ok) /* only runtime kinds (stream, event, context) start with an rt_obj */
        atomic_fetch_add(&((rt_obj *)(uintptr_t)p)->refs, 1);
    pthread_mutex_unlock(&g_reg_mu);
    return ok;
}

void rt_obj_put(rt_obj *o) {
    if (atomic_fetch_sub(&o->refs, 1) == 1)
        o->free_fn(o);
}

int64_t rt_handle_count(aclemu_kind kind) { return atomic_load(&g_count[kind]); }

/* ---- introspection --------------------------------------------------------------------- */

const char *aclemuVersion(void) { return "aclemu 0.1.0 (acl-py CPU emulator of CANN)"; }

int aclemuGetLiveObjects(aclemuLiveObjects *out) {
    if (out == NULL) {
        aclemu_set_error("aclemuGetLiveObjects: out is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    memset(out, 0, sizeof *out);
    rt_memory_stats(&out->device_allocations, &out->host_allocations, &out->device_bytes);
    out->tensors = rt_handle_count(ACLEMU_KIND_TENSOR);
    out->int_arrays = rt_handle_count(ACLEMU_KIND_INT_ARRAY);
    out->bool_arrays = rt_handle_count(ACLEMU_KIND_BOOL_ARRAY);
    out->executors = rt_handle_count(ACLEMU_KIND_EXECUTOR);
    out->streams = rt_handle_count(ACLEMU_KIND_STREAM) - rt_live_default_streams();
    out->events = rt_handle_count(ACLEMU_KIND_EVENT);
    out->contexts = rt_handle_count(ACLEMU_KIND_CONTEXT);
    out->scalars = rt_handle_count(ACLEMU_KIND_SCALAR);
    out->float_arrays = rt_handle_count(ACLEMU_KIND_FLOAT_ARRAY);
    out->tensor_lists = rt_handle_count(ACLEMU_KIND_TENSOR_LIST);
    out->scalar_lists = rt_handle_count(ACLEMU_KIND_SCALAR_LIST);
    out->data_buffers = rt_handle_count(ACLEMU_KIND_DATA_BUFFER);
    out->notifies = rt_handle_count(ACLEMU_KIND_NOTIFY);
    out->host_registrations = rt_host_registrations();
    return ACL_SUCCESS;
}

/* ---- small shared helpers ------------------------------------------------------------- */

uint64_t rt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rt_cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

struct timespec rt_timespec(uint64_t ns) {
    return (struct timespec){(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
}

void rt_spin_step(unsigned i) {
    /* Pause first; past a few hundred rounds yield instead, so that on an oversubscribed
     * machine the thread being waited for gets the core. */
    if (i < 512)
        rt_cpu_relax();
    else
        sched_yield();
}

void rt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

__attribute__((destructor)) static void handles_fini(void) {
    /* Live handles at exit are the program's leak, not ours; the table itself is freed so
     * leak checkers see only what the program left behind. */
    pthread_mutex_lock(&g_reg_mu);
    free(g_tab);
    g_tab = NULL;
    g_cap = g_used = g_filled = 0;
    pthread_mutex_unlock(&g_reg_mu);
}
