/*
 * Memory-copy roofline for the kernel-throughput section: `threads` threads each memcpy their
 * contiguous slice of a `mib`-MiB buffer into another (both far larger than the caches), the
 * whole copy repeated `reps` times. Bandwidth counts each byte read once and written once
 * (2 x size per copy), the same convention run.py uses for the kernel's effective bandwidth.
 *
 * Usage: roofline MIB THREADS REPS
 * Prints: "bytes=<n> threads=<t> median_s=<x> best_s=<x> median_gbps=<x> best_gbps=<x>"
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char *dst;
    const char *src;
    size_t n;
} slice;

static void *copy_slice(void *arg) {
    slice *s = arg;
    memcpy(s->dst, s->src, s->n);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MIB THREADS REPS\n", argv[0]);
        return 2;
    }
    size_t bytes = (size_t)atol(argv[1]) << 20;
    int threads = atoi(argv[2]), reps = atoi(argv[3]);
    if (bytes == 0 || threads < 1 || threads > 256 || reps < 1) return 2;
    char *src = malloc(bytes), *dst = malloc(bytes);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!src || !dst || !t) return 1;
    /* Touch every page first so page faults are not timed (the kernel's buffers are warm too). */
    memset(src, 1, bytes);
    memset(dst, 0, bytes);

    pthread_t tid[256];
    slice sl[256];
    size_t per = (bytes / (size_t)threads) & ~(size_t)63;
    for (int r = 0; r < reps; ++r) {
        double t0 = now_s();
        for (int i = 0; i < threads; ++i) {
            size_t off = per * (size_t)i;
            sl[i].dst = dst + off;
            sl[i].src = src + off;
            sl[i].n = (i == threads - 1) ? bytes - off : per;
            if (i > 0) pthread_create(&tid[i], NULL, copy_slice, &sl[i]);
        }
        copy_slice(&sl[0]);
        for (int i = 1; i < threads; ++i) pthread_join(tid[i], NULL);
        t[r] = now_s() - t0;
    }
    if (dst[bytes - 1] != 1) return 1; /* keeps the copy observable */
    qsort(t, (size_t)reps, sizeof(double), cmp_d);
    double med = t[reps / 2], best = t[0];
    printf("bytes=%zu threads=%d median_s=%.6f best_s=%.6f median_gbps=%.3f best_gbps=%.3f\n",
           bytes, threads, med, best, 2.0 * (double)bytes / med / 1e9,
           2.0 * (double)bytes / best / 1e9);
    free(src);
    free(dst);
    free(t);
    return 0;
}
