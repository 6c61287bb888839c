/*
 * The floor for acl-py's host overhead: the same LayerNormBackward calls acl-py makes, from C++
 * (C written as C++: the vendor's aclnn headers are C++ only), against the same libraries
 * (compiled by benchmarks/run.py against the emulator prefix, -O2).
 *
 * Problem: the tiny 2 x 8 fp32 case (normalizedShape [8], mean/rstd [2,1], weight and bias
 * [8], every output requested). Every handle (tensors, arrays, the stream, device buffers) is
 * created once, before the timed loop, because that is what a careful C programmer does and
 * what acl-py's caches are meant to match; only the per-call work is timed.
 *
 * Modes (one timed call = everything listed, ending with aclrtSynchronizeStream):
 *   oneshot         phase one, workspace from a buffer reused across calls (grown only when
 *                   phase one asks for more), phase two. This is the floor for
 *                   acl_py.layer_norm_backward: acl-py's workspace allocator reuses memory, so
 *                   the fair C peer reuses too (the cheapest correct C loop).
 *   oneshot-malloc  phase one, aclrtMalloc of the workspace when its size is > 0, phase two,
 *                   synchronize, aclrtFree (the vendor sample's pattern; informational).
 *   oneshot-outputs as oneshot, but the 3 outputs are made per call: aclrtMalloc +
 *                   aclCreateTensor each before phase one, aclDestroyTensor + aclrtFree each
 *                   after the synchronize (the floor for acl_py.layer_norm_backward returning
 *                   new outputs).
 *   plan            phase one once + aclSetAclOpExecutorRepeatable before the loop; each call
 *                   is phase two on the same executor (floor for acl_py.LayerNormBackward).
 *
 * Usage: overhead MODE ITERS WARMUP
 * Prints one line: "mode=<m> iters=<n> median_ns=<x> p10_ns=<x> p90_ns=<x> mean_ns=<x>
 * workspace=<bytes>". Exit status 1 (with the reason on stderr) on any failing call.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_layer_norm_backward.h"

#define M 2
#define N 8

static void die(const char *what, long code) {
    const char *msg = aclGetRecentErrMsg();
    fprintf(stderr, "overhead: %s failed with %ld: %s\n", what, code, msg ? msg : "(no message)");
    exit(1);
}

#define CHECK(call)                                                                          \
    do {                                                                                     \
        long rc_ = (long)(call);                                                             \
        if (rc_ != 0) die(#call, rc_);                                                       \
    } while (0)

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Device buffer holding `n` floats copied from host, and a contiguous ND tensor over it. */
static aclTensor *make_tensor(const int64_t *dims, uint64_t ndim, const float *host, void **dev) {
    int64_t strides[8];
    int64_t n = 1;
    for (int64_t i = (int64_t)ndim - 1; i >= 0; --i) {
        strides[i] = n;
        n *= dims[i];
    }
    size_t bytes = (size_t)n * sizeof(float);
    CHECK(aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    if (host) CHECK(aclrtMemcpy(*dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    aclTensor *t = aclCreateTensor(dims, ndim, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, ndim,
                                   *dev);
    if (!t) die("aclCreateTensor", -1);
    return t;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s oneshot|oneshot-malloc|oneshot-outputs|plan ITERS WARMUP\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    int plan = strcmp(mode, "plan") == 0;
    int per_call_malloc = strcmp(mode, "oneshot-malloc") == 0;
    int per_call_outputs = strcmp(mode, "oneshot-outputs") == 0;
    if (!plan && !per_call_malloc && !per_call_outputs && strcmp(mode, "oneshot") != 0) {
        fprintf(stderr, "overhead: unknown mode %s\n", mode);
        return 2;
    }
    long iters = atol(argv[2]), warmup = atol(argv[3]);
    if (iters < 1 || warmup < 0) {
        fprintf(stderr, "overhead: ITERS must be >= 1 and WARMUP >= 0\n");
        return 2;
    }

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));

    float dy[M * N], x[M * N], mean[M], rstd[M], w[N], b[N];
    for (int i = 0; i < M * N; ++i) {
        dy[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
        x[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
    }
    for (int i = 0; i < M; ++i) { mean[i] = 0.01f * (float)i; rstd[i] = 1.0f + 0.1f * (float)i; }
    for (int i = 0; i < N; ++i) { w[i] = 1.0f + 0.05f * (float)i; b[i] = 0.0f; }

    const int64_t x_dims[2] = {M, N}, stat_dims[2] = {M, 1}, n_dims[1] = {N};
    void *d_dy, *d_x, *d_mean, *d_rstd, *d_w, *d_b, *d_gi, *d_gw, *d_gb;
    aclTensor *t_dy = make_tensor(x_dims, 2, dy, &d_dy);
    aclTensor *t_x = make_tensor(x_dims, 2, x, &d_x);
    aclTensor *t_mean = make_tensor(stat_dims, 2, mean, &d_mean);
    aclTensor *t_rstd = make_tensor(stat_dims, 2, rstd, &d_rstd);
    aclTensor *t_w = make_tensor(n_dims, 1, w, &d_w);
    aclTensor *t_b = make_tensor(n_dims, 1, b, &d_b);
    aclTensor *t_gi = make_tensor(x_dims, 2, NULL, &d_gi);
    aclTensor *t_gw = make_tensor(n_dims, 1, NULL, &d_gw);
    aclTensor *t_gb = make_tensor(n_dims, 1, NULL, &d_gb);
    aclIntArray *norm = aclCreateIntArray(n_dims, 1);
    const bool mask_v[3] = {true, true, true};
    aclBoolArray *mask = aclCreateBoolArray(mask_v, 3);
    if (!norm || !mask) die("aclCreateIntArray/aclCreateBoolArray", -1);

    uint64_t ws_size = 0;
    aclOpExecutor *exec = NULL;
    void *ws = NULL;          /* reused workspace (oneshot, plan) */
    uint64_t ws_cap = 0;
    uint64_t ws_seen = 0;

    if (plan) {
        CHECK(aclnnLayerNormBackwardGetWorkspaceSize(t_dy, t_x, norm, t_mean, t_rstd, t_w, t_b,
                                                     mask, t_gi, t_gw, t_gb, &ws_size, &exec));
        CHECK(aclSetAclOpExecutorRepeatable(exec));
        if (ws_size > 0) CHECK(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST));
        ws_cap = ws_seen = ws_size;
    }

    if (per_call_outputs) { /* made per call in the loop */
        CHECK(aclDestroyTensor(t_gi));
        CHECK(aclDestroyTensor(t_gw));
        CHECK(aclDestroyTensor(t_gb));
        CHECK(aclrtFree(d_gi));
        CHECK(aclrtFree(d_gw));
        CHECK(aclrtFree(d_gb));
    }

    int64_t *samples = (int64_t *)malloc(sizeof(int64_t) * (size_t)iters);
    if (!samples) return 1;
    for (long i = -warmup; i < iters; ++i) {
        int64_t t0 = now_ns();
        if (plan) {
            CHECK(aclnnLayerNormBackward(ws, ws_size, exec, stream));
            CHECK(aclrtSynchronizeStream(stream));
        } else {
            if (per_call_outputs) {
                t_gi = make_tensor(x_dims, 2, NULL, &d_gi);
                t_gw = make_tensor(n_dims, 1, NULL, &d_gw);
                t_gb = make_tensor(n_dims, 1, NULL, &d_gb);
            }
            CHECK(aclnnLayerNormBackwardGetWorkspaceSize(t_dy, t_x, norm, t_mean, t_rstd, t_w,
                                                         t_b, mask, t_gi, t_gw, t_gb, &ws_size,
                                                         &exec));
            if (per_call_malloc) {
                void *w1 = NULL;
                if (ws_size > 0) CHECK(aclrtMalloc(&w1, ws_size, ACL_MEM_MALLOC_HUGE_FIRST));
                CHECK(aclnnLayerNormBackward(w1, ws_size, exec, stream));
                CHECK(aclrtSynchronizeStream(stream));
                if (w1) CHECK(aclrtFree(w1));
            } else {
                if (ws_size > ws_cap) {
                    if (ws) CHECK(aclrtFree(ws)); /* nothing is in flight: synchronized below */
                    CHECK(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST));
                    ws_cap = ws_size;
                }
                CHECK(aclnnLayerNormBackward(ws_size > 0 ? ws : NULL, ws_size, exec, stream));
                CHECK(aclrtSynchronizeStream(stream));
            }
            if (per_call_outputs && i < iters - 1) { /* the last call's are checked below */
                aclTensor *outs[3] = {t_gi, t_gw, t_gb};
                void *mem[3] = {d_gi, d_gw, d_gb};
                for (int k = 0; k < 3; ++k) {
                    CHECK(aclDestroyTensor(outs[k]));
                    CHECK(aclrtFree(mem[k]));
                }
            }
            ws_seen = ws_size;
        }
        int64_t t1 = now_ns();
        if (i >= 0) samples[i] = t1 - t0;
    }

    /* The result must be right, or the timing means nothing: check gradBias = column sums. */
    float gb[N];
    CHECK(aclrtMemcpy(gb, sizeof gb, d_gb, sizeof gb, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int j = 0; j < N; ++j) {
        float want = dy[j] + dy[N + j];
        float diff = gb[j] - want;
        if (diff > 1e-5f || diff < -1e-5f) {
            fprintf(stderr, "overhead: gradBias[%d] = %g, expected %g\n", j, gb[j], want);
            return 1;
        }
    }

    int64_t sum = 0;
    for (long i = 0; i < iters; ++i) sum += samples[i];
    qsort(samples, (size_t)iters, sizeof(int64_t), cmp_i64);
    printf("mode=%s iters=%ld median_ns=%lld p10_ns=%lld p90_ns=%lld mean_ns=%lld workspace=%llu\n",
           mode, iters, (long long)samples[iters / 2], (long long)samples[iters / 10],
           (long long)samples[(iters * 9) / 10], (long long)(sum / iters),
           (unsigned long long)ws_seen);
    free(samples);

    if (plan) CHECK(aclDestroyAclOpExecutor(exec));
    if (ws) CHECK(aclrtFree(ws));
    aclTensor *ts[] = {t_dy, t_x, t_mean, t_rstd, t_w, t_b, t_gi, t_gw, t_gb};
    void *ds[] = {d_dy, d_x, d_mean, d_rstd, d_w, d_b, d_gi, d_gw, d_gb};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) {
        CHECK(aclDestroyTensor(ts[i]));
        CHECK(aclrtFree(ds[i]));
    }
    CHECK(aclDestroyIntArray(norm));
    CHECK(aclDestroyBoolArray(mask));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}
