/*
 * The kernel thread pool behind aclemu_parallel_for.
 *
 * One job at a time: the caller publishes it, wakes the workers, and takes chunks itself
 * alongside them (chunks are claimed with an atomic counter). A caller that finds the pool
 * busy with another caller's job (several stream workers launching kernels at once) runs its
 * chunks itself, in order. Either way each chunk index runs exactly once with the same
 * boundaries, so results never depend on the thread count or on who ran what.
 */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "rt_internal.h"

#define MAX_THREADS 256

static struct {
    pthread_mutex_t mu;
    pthread_cond_t start_cv, done_cv;
    pthread_t threads[MAX_THREADS];
    int nthreads;        /* workers started (mu) */
    uint64_t gen;        /* job generation (mu) */
    bool open;           /* the current job accepts workers (mu) */
    int active;          /* workers inside the current job (mu) */
    bool stop;           /* mu */
    int max_workers;     /* workers the current job may use (mu) */
    int64_t n, chunks;
    aclemu_range_fn body;
    void *ctx;
    _Atomic int64_t next, done;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER,
       .start_cv = PTHREAD_COND_INITIALIZER,
       .done_cv = PTHREAD_COND_INITIALIZER};

static _Atomic bool g_busy;
static _Atomic int g_threads;  /* 0: not yet decided */
static int g_default_threads;

static int default_threads(void) {
    const char *s = getenv("ACL_EMU_NUM_THREADS");
    if (s != NULL && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end == '\0' && v >= 1)
            return v > MAX_THREADS ? MAX_THREADS : (int)v;
    }
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n < 1)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > MAX_THREADS ? MAX_THREADS : n;
}

__attribute__((constructor)) static void pool_init(void) {
    g_default_threads = default_threads();
    atomic_store(&g_threads, g_default_threads);
}

void aclemuSetNumThreads(int n) {
    atomic_store(&g_threads, n < 1 ? g_default_threads : (n > MAX_THREADS ? MAX_THREADS : n));
}

int aclemuGetNumThreads(void) { return atomic_load(&g_threads); }

static inline int64_t bound(int64_t c, int64_t n, int64_t chunks) {
    return (int64_t)((__int128)c * n / chunks);
}

/* Claims and runs chunks of the current job until none is left. */
static void take_chunks(void) {
    int64_t c;
    while ((c = atomic_fetch_add(&P.next, 1)) < P.chunks) {
        P.body(P.ctx, c, bound(c, P.n, P.chunks), bound(c + 1, P.n, P.chunks));
        if (atomic_fetch_add(&P.done, 1) + 1 == P.chunks) {
            pthread_mutex_lock(&P.mu);
            pthread_cond_broadcast(&P.done_cv);
            pthread_mutex_unlock(&P.mu);
        }
    }
}

static void *pool_worker(void *arg) {
    int index = (int)(intptr_t)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&P.mu);
    for (;;) {
        while (!P.stop && (P.gen == seen || !P.open))
            pthread_cond_wait(&P.start_cv, &P.mu);
        if (P.stop)
            break;
        seen = P.gen;
        if (index >= P.max_workers)
            continue;
        P.active++;
        pthread_mutex_unlock(&P.mu);
        take_chunks();
        pthread_mutex_lock(&P.mu);
        if (--P.active == 0)
            pthread_cond_broadcast(&P.done_cv);
    }
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

static void run_inline(int64_t n, int64_t chunks, aclemu_range_fn body, void *ctx) {
    for (int64_t c = 0; c < chunks; c++)
        body(ctx, c, bound(c, n, chunks), bound(c + 1, n, chunks));
}

void aclemu_parallel_for(int64_t n, int64_t chunks, aclemu_range_fn body, void *ctx) {
    if (body == NULL || chunks < 1)
        return;
    if (n < 0)
        n = 0;
    int threads = aclemuGetNumThreads();
    bool expected = false;
    if (threads <= 1 || chunks == 1 || !atomic_compare_exchange_strong(&g_busy, &expected, true)) {
        run_inline(n, chunks, body, ctx);
        return;
    }
    int want = threads - 1;
    if ((int64_t)want > chunks - 1)
        want = (int)(chunks - 1);
    pthread_mutex_lock(&P.mu);
    while (P.nthreads < want) { /* started lazily, kept for the life of the process */
        if (pthread_create(&P.threads[P.nthreads], NULL, pool_worker,
                           (void *)(intptr_t)P.nthreads) != 0)
            break;
        P.nthreads++;
    }
    P.max_workers = want < P.nthreads ? want : P.nthreads;
    P.n = n;
    P.chunks = chunks;
    P.body = body;
    P.ctx = ctx;
    atomic_store(&P.next, 0);
    atomic_store(&P.done, 0);
    P.gen++;
    P.open = true;
    pthread_cond_broadcast(&P.start_cv);
    pthread_mutex_unlock(&P.mu);

    take_chunks();

    if (atomic_load(&P.done) < chunks) { /* others still running theirs: spin, then sleep */
        uint64_t t0 = rt_now_ns();
        for (unsigned i = 1; atomic_load(&P.done) < chunks; i++) {
            rt_spin_step(i);
            if ((i & 63) == 0 && rt_now_ns() - t0 > RT_SPIN_NS)
                break;
        }
    }
    pthread_mutex_lock(&P.mu);
    while (atomic_load(&P.done) < chunks)
        pthread_cond_wait(&P.done_cv, &P.mu);
    P.open = false; /* late wakers skip this job; wait for those inside to leave it */
    while (P.active > 0)
        pthread_cond_wait(&P.done_cv, &P.mu);
    pthread_mutex_unlock(&P.mu);
    atomic_store(&g_busy, false);
}

__attribute__((destructor)) static void pool_fini(void) {
    /* Join the workers so leak checkers see a clean exit; skipped if a job is running (a
     * stream worker still inside a kernel at exit), where joining could wait on it. */
    bool expected = false;
    if (!atomic_compare_exchange_strong(&g_busy, &expected, true))
        return;
    pthread_mutex_lock(&P.mu);
    P.stop = true;
    pthread_cond_broadcast(&P.start_cv);
    int n = P.nthreads;
    pthread_mutex_unlock(&P.mu);
    for (int i = 0; i < n; i++)
        pthread_join(P.threads[i], NULL);
}
