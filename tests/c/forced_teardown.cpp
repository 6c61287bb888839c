// The teardown CANN programs commonly end with (the vendor's runtime examples do): worker
// threads each set the device and never reset it, streams are destroyed with
// aclrtDestroyStreamForce while work may still be queued on them, and one
// aclrtResetDeviceForce releases every set of the device at once. Written against the public
// headers only (acl/acl.h); tests/test_cpp_runtime.py builds it against the emulator's
// prefix and checks what it prints.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "check.h"

namespace {

constexpr int kWorkers = 3;
constexpr size_t kBytes = 1 << 20;

// A worker sets the device (and leaves it set, as the examples' threads do), creates a stream
// and queues a memset and a copy on it without waiting for them.
void Worker(void *src, void *dst, int value, aclrtStream *stream) {
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtCreateStream(stream));
    CHECK(aclrtMemsetAsync(src, kBytes, value, kBytes, *stream));
    CHECK(aclrtMemcpyAsync(dst, kBytes, src, kBytes, ACL_MEMCPY_DEVICE_TO_DEVICE, *stream));
}

}  // namespace

int main() {
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    std::vector<void *> src(kWorkers), dst(kWorkers);
    for (int i = 0; i < kWorkers; i++) {
        CHECK(aclrtMalloc(&src[i], kBytes, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclrtMalloc(&dst[i], kBytes, ACL_MEM_MALLOC_HUGE_FIRST));
    }
    std::vector<aclrtStream> streams(kWorkers, nullptr);
    std::vector<std::thread> threads;
    for (int i = 0; i < kWorkers; i++)
        threads.emplace_back(Worker, src[i], dst[i], i + 1, &streams[i]);
    for (auto &t : threads)
        t.join();
    std::printf("workers queued their copies\n");

    // Forced destroys with no synchronize before them; the memory the copies used is freed
    // right after, as the vendor's examples free theirs.
    for (int i = 0; i < kWorkers; i++)
        CHECK(aclrtDestroyStreamForce(streams[i]));
    std::printf("destroy a destroyed stream: %d\n", aclrtDestroyStreamForce(streams[0]));
    aclGetRecentErrMsg();
    for (int i = 0; i < kWorkers; i++) {
        CHECK(aclrtFree(src[i]));
        CHECK(aclrtFree(dst[i]));
    }

    // Four sets (main and three workers), one forced reset: the device is released, so a
    // plain reset finds nothing left to release.
    CHECK(aclrtResetDeviceForce(0));
    std::printf("plain reset after the forced one: %d\n", aclrtResetDevice(0));
    aclGetRecentErrMsg();
    void *p = nullptr;
    std::printf("malloc with the device released: %d\n",
                aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    aclGetRecentErrMsg();

    // Set again, the device works as new.
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));
    CHECK(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemsetAsync(p, 64, 7, 64, stream));
    CHECK(aclrtSynchronizeStream(stream));
    unsigned char back[64] = {0};
    CHECK(aclrtMemcpy(back, sizeof back, p, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST));
    std::printf("device set again: byte %d\n", back[63]);
    CHECK(aclrtFree(p));
    CHECK(aclrtDestroyStreamForce(stream));
    CHECK(aclrtResetDeviceForce(0));
    CHECK(aclFinalize());
    std::printf("done\n");
    return 0;
}
