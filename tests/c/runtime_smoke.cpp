// A CANN runtime program written against the public headers only (acl/acl.h): it allocates,
// copies there and back, runs asynchronous copies on two streams timed by events and of
// pageable memory, checks an error path, and releases everything. tests/test_cpp_runtime.py builds it against the
// emulator's prefix and checks what it prints.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "check.h"

int main() {
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    uint32_t count = 0;
    CHECK(aclrtGetDeviceCount(&count));
    std::printf("device count: %u\n", count);
    size_t free_before = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total));

    // Synchronous round trip: host -> device -> device -> host.
    const size_t n = 4096, bytes = n * sizeof(float);
    std::vector<float> host(n), back(n, 0.0f);
    for (size_t i = 0; i < n; i++) host[i] = 0.5f * static_cast<float>(i);
    void *dev_a = nullptr, *dev_b = nullptr;
    CHECK(aclrtMalloc(&dev_a, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&dev_b, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    size_t free_after = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total));
    std::printf("device bytes in use: %zu\n", free_before - free_after);
    CHECK(aclrtMemcpy(dev_a, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(dev_b, bytes, dev_a, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(aclrtMemcpy(back.data(), bytes, dev_b, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    std::printf("sync round trip: %s\n",
                std::memcmp(host.data(), back.data(), bytes) == 0 ? "ok" : "MISMATCH");

    // Asynchronous copies on two streams, pinned host memory, events around each.
    aclrtStream streams[2];
    aclrtEvent start[2], stop[2];
    void *pin_in[2], *pin_out[2], *dev[2];
    for (int s = 0; s < 2; s++) {
        CHECK(aclrtCreateStream(&streams[s]));
        CHECK(aclrtCreateEvent(&start[s]));
        CHECK(aclrtCreateEvent(&stop[s]));
        CHECK(aclrtMallocHost(&pin_in[s], bytes));
        CHECK(aclrtMallocHost(&pin_out[s], bytes));
        CHECK(aclrtMalloc(&dev[s], bytes, ACL_MEM_MALLOC_HUGE_FIRST));
        float *in = static_cast<float *>(pin_in[s]);
        for (size_t i = 0; i < n; i++) in[i] = static_cast<float>(s * 1000 + static_cast<int>(i % 97));
        std::memset(pin_out[s], 0, bytes);
    }
    for (int s = 0; s < 2; s++) {
        CHECK(aclrtRecordEvent(start[s], streams[s]));
        CHECK(aclrtMemsetAsync(dev[s], bytes, 0, bytes, streams[s]));
        CHECK(aclrtMemcpyAsync(dev[s], bytes, pin_in[s], bytes, ACL_MEMCPY_HOST_TO_DEVICE,
                               streams[s]));
        CHECK(aclrtMemcpyAsync(pin_out[s], bytes, dev[s], bytes, ACL_MEMCPY_DEVICE_TO_HOST,
                               streams[s]));
        CHECK(aclrtRecordEvent(stop[s], streams[s]));
    }
    for (int s = 0; s < 2; s++) {
        CHECK(aclrtSynchronizeEvent(stop[s]));
        float ms = -1.0f;
        CHECK(aclrtEventElapsedTime(&ms, start[s], stop[s]));
        bool same = std::memcmp(pin_in[s], pin_out[s], bytes) == 0;
        std::printf("stream %d: %s, elapsed %s\n", s, same ? "ok" : "MISMATCH",
                    ms >= 0.0f ? "non-negative" : "NEGATIVE");
    }
    CHECK(aclrtSynchronizeStream(streams[0]));
    CHECK(aclrtSynchronizeStream(streams[1]));

    // Asynchronous copies of pageable memory (a std::vector): each returns once its copy is
    // done, after the work queued before it on the stream; no synchronize is needed.
    std::vector<float> page_in(n), page_out(n, 0.0f);
    for (size_t i = 0; i < n; i++) page_in[i] = static_cast<float>(i % 89);
    CHECK(aclrtMemsetAsync(dev_a, bytes, 0, bytes, streams[0]));
    CHECK(aclrtMemcpyAsync(dev_a, bytes, page_in.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE,
                           streams[0]));
    std::fill(page_in.begin(), page_in.end(), -1.0f);  // the copy is done: free to reuse
    CHECK(aclrtMemcpyAsync(page_out.data(), bytes, dev_a, bytes, ACL_MEMCPY_DEVICE_TO_HOST,
                           streams[0]));
    bool page_ok = true;
    for (size_t i = 0; i < n; i++) page_ok = page_ok && page_out[i] == static_cast<float>(i % 89);
    std::printf("pageable async round trip: %s\n", page_ok ? "ok" : "MISMATCH");

    // Errors are codes with a message, never a crash; nothing is copied.
    aclError rc = aclrtMemcpy(back.data(), 16, dev_a, 32, ACL_MEMCPY_DEVICE_TO_HOST);
    const char *msg = aclGetRecentErrMsg();
    std::printf("count > destMax: %d (%s)\n", rc, msg ? msg : "no message");
    rc = aclrtMemcpyAsync(dev_a, bytes, host.data(), bytes, ACL_MEMCPY_DEVICE_TO_HOST,
                          streams[0]);
    std::printf("pageable source, kind device to host: %d\n", rc);
    rc = aclrtFree(static_cast<char *>(dev_a) + 64);
    std::printf("free interior pointer: %d\n", rc);

    for (int s = 0; s < 2; s++) {
        CHECK(aclrtDestroyEvent(start[s]));
        CHECK(aclrtDestroyEvent(stop[s]));
        CHECK(aclrtFree(dev[s]));
        CHECK(aclrtFreeHost(pin_in[s]));
        CHECK(aclrtFreeHost(pin_out[s]));
        CHECK(aclrtDestroyStream(streams[s]));
    }
    CHECK(aclrtFree(dev_a));
    CHECK(aclrtFree(dev_b));
    rc = aclrtFree(dev_a);
    std::printf("double free: %d\n", rc);
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total));
    std::printf("device bytes in use at the end: %zu\n", free_before - free_after);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("done\n");
    return 0;
}
