// Host functions on streams through the public headers only: aclrtLaunchHostFunc (order
// against copies on the stream, the thread that runs it, the stream held until it returns)
// and the callback model (aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport /
// aclrtUnSubscribeReport), with the statuses CANN returns for misuse. tests/test_cpp_runtime.py
// builds it against the emulator's prefix and checks what it prints.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "check.h"

namespace {

constexpr size_t kBytes = 4096;

struct Probe {
    const unsigned char *host = nullptr;  // pinned host memory the copy before wrote
    unsigned char seen = 0;               // what the function saw there
    pthread_t thread{};
    std::atomic<int> runs{0};
    aclError refused = ACL_SUCCESS;       // a runtime call made from inside
    int sleep_ms = 0;
};

void Look(void *arg) {
    auto *p = static_cast<Probe *>(arg);
    if (p->sleep_ms > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(p->sleep_ms));
    if (p->host != nullptr)
        p->seen = p->host[0];
    p->thread = pthread_self();
    void *mem = nullptr;
    p->refused = aclrtMalloc(&mem, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    p->runs++;
}

void Count(void *arg) { static_cast<std::atomic<int> *>(arg)->fetch_add(1); }

int Code(aclError rc) { return static_cast<int>(rc); }

}  // namespace

int main() {
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));
    void *dev = nullptr;
    void *host = nullptr;
    void *back = nullptr;
    CHECK(aclrtMalloc(&dev, kBytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMallocHost(&host, kBytes));
    CHECK(aclrtMallocHost(&back, kBytes));

    // Order: memset 7 -> copy back -> host function reads it -> memset 9 -> copy back over it:
    // the function sees 7 (not 0: it ran after the first copy; not 9: before the second).
    Probe probe;
    probe.host = static_cast<unsigned char *>(back);
    probe.sleep_ms = 50;  // the later copy must wait for the function
    std::memset(back, 0, kBytes);
    CHECK(aclrtMemsetAsync(dev, kBytes, 7, kBytes, stream));
    CHECK(aclrtMemcpyAsync(back, kBytes, dev, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK(aclrtLaunchHostFunc(stream, Look, &probe));
    CHECK(aclrtMemsetAsync(dev, kBytes, 9, kBytes, stream));
    CHECK(aclrtMemcpyAsync(back, kBytes, dev, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK(aclrtSynchronizeStream(stream));
    std::printf("host function saw %d, later copy %d, runs %d\n", probe.seen,
                static_cast<unsigned char *>(back)[0], probe.runs.load());
    std::printf("host function thread is the caller: %s\n",
                pthread_equal(probe.thread, pthread_self()) ? "yes" : "no");
    std::printf("aclrtMalloc inside a host function: %d\n", Code(probe.refused));

    // One thread runs every host function of the device's streams.
    aclrtStream other = nullptr;
    CHECK(aclrtCreateStream(&other));
    Probe a, b;
    CHECK(aclrtLaunchHostFunc(stream, Look, &a));
    CHECK(aclrtLaunchHostFunc(other, Look, &b));
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtSynchronizeStream(other));
    std::printf("two streams, one host-function thread: %s\n",
                pthread_equal(a.thread, b.thread) ? "yes" : "no");

    // The default stream too.
    std::atomic<int> count{0};
    CHECK(aclrtLaunchHostFunc(nullptr, Count, &count));
    CHECK(aclrtSynchronizeStream(nullptr));
    std::printf("default stream: %d\n", count.load());

    // Refusals.
    std::printf("NULL fn: %d\n", Code(aclrtLaunchHostFunc(stream, nullptr, nullptr)));
    std::printf("not a stream: %d\n",
                Code(aclrtLaunchHostFunc(reinterpret_cast<aclrtStream>(&count), Count, &count)));
    std::printf("callback on a host-function stream: %d\n",
                Code(aclrtLaunchCallback(Count, &count, ACL_CALLBACK_BLOCK, stream)));
    std::printf("subscribe a host-function stream: %d\n",
                Code(aclrtSubscribeReport(static_cast<uint64_t>(pthread_self()), stream)));

    // The callback model on a fresh stream.
    aclrtStream cb = nullptr;
    CHECK(aclrtCreateStream(&cb));
    std::printf("callback, no thread subscribed: %d\n",
                Code(aclrtLaunchCallback(Count, &count, ACL_CALLBACK_BLOCK, cb)));
    std::printf("bad block type: %d\n",
                Code(aclrtLaunchCallback(Count, &count, static_cast<aclrtCallbackBlockType>(5),
                                         cb)));
    std::printf("process, not subscribed: %d\n", Code(aclrtProcessReport(10)));
    std::printf("process, timeout 0: %d\n", Code(aclrtProcessReport(0)));
    std::printf("process, timeout -2: %d\n", Code(aclrtProcessReport(-2)));

    std::atomic<bool> loop{true};
    std::atomic<int> timeouts{0};
    pthread_t reporter_id{};
    std::atomic<bool> started{false};
    std::vector<pthread_t> ran_on;
    Probe in_cb;
    std::thread reporter([&] {
        reporter_id = pthread_self();
        started = true;
        while (loop) {
            aclError rc = aclrtProcessReport(20);
            if (rc == ACL_ERROR_RT_REPORT_TIMEOUT)
                timeouts++;
        }
    });
    while (!started)
        std::this_thread::yield();
    uint64_t tid = static_cast<uint64_t>(reporter_id);
    CHECK(aclrtSubscribeReport(tid, cb));
    std::printf("subscribe twice: %d\n", Code(aclrtSubscribeReport(tid, cb)));
    std::printf("host function on a subscribed stream: %d\n",
                Code(aclrtLaunchHostFunc(cb, Count, &count)));
    count = 0;
    in_cb.host = static_cast<unsigned char *>(back);
    CHECK(aclrtMemsetAsync(dev, kBytes, 3, kBytes, cb));
    CHECK(aclrtMemcpyAsync(back, kBytes, dev, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, cb));
    CHECK(aclrtLaunchCallback(Look, &in_cb, ACL_CALLBACK_BLOCK, cb));
    for (int i = 0; i < 5; i++)
        CHECK(aclrtLaunchCallback(Count, &count, ACL_CALLBACK_NO_BLOCK, cb));
    CHECK(aclrtLaunchCallback(Count, &count, ACL_CALLBACK_BLOCK, cb));
    CHECK(aclrtSynchronizeStream(cb));
    // Non-blocking callbacks may still be queued for the thread: wait for them.
    for (int i = 0; i < 500 && count.load() < 6; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::printf("callback saw %d on the subscribed thread: %s; callbacks run %d\n", in_cb.seen,
                pthread_equal(in_cb.thread, reporter_id) ? "yes" : "no", count.load());
    std::printf("aclrtMalloc inside a callback: %d\n", Code(in_cb.refused));
    std::printf("unsubscribe, wrong thread: %d\n",
                Code(aclrtUnSubscribeReport(tid + 1, cb)));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    std::printf("timeouts while idle: %s\n", timeouts.load() > 0 ? "yes" : "no");
    CHECK(aclrtUnSubscribeReport(tid, cb));
    std::printf("unsubscribe twice: %d\n", Code(aclrtUnSubscribeReport(tid, cb)));
    loop = false;
    reporter.join();

    // A blocking callback holds the stream until a thread processes it.
    CHECK(aclrtSubscribeReport(static_cast<uint64_t>(pthread_self()), cb));
    count = 0;
    CHECK(aclrtLaunchCallback(Count, &count, ACL_CALLBACK_BLOCK, cb));
    CHECK(aclrtMemsetAsync(dev, kBytes, 5, kBytes, cb));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    aclrtStreamStatus status;
    CHECK(aclrtStreamQuery(cb, &status));
    std::printf("blocked stream complete: %s\n",
                status == ACL_STREAM_STATUS_COMPLETE ? "yes" : "no");
    std::printf("unsubscribe with a callback pending: %d\n",
                Code(aclrtUnSubscribeReport(static_cast<uint64_t>(pthread_self()), cb)));
    CHECK(aclrtProcessReport(1000));
    CHECK(aclrtSynchronizeStream(cb));
    std::printf("after processing: callbacks run %d\n", count.load());
    CHECK(aclrtUnSubscribeReport(static_cast<uint64_t>(pthread_self()), cb));

    // A stream destroyed with its thread subscribed ends the subscription.
    CHECK(aclrtSubscribeReport(static_cast<uint64_t>(pthread_self()), cb));
    CHECK(aclrtDestroyStream(cb));
    std::printf("process after the stream's destroy: %d\n", Code(aclrtProcessReport(10)));

    // aclrtSetStreamFailureMode (the vendor's callback examples set it): the same mode again
    // succeeds, stop back to continue does not.
    CHECK(aclrtSetStreamFailureMode(other, ACL_STOP_ON_FAILURE));
    CHECK(aclrtSetStreamFailureMode(other, ACL_STOP_ON_FAILURE));
    CHECK(aclrtSetStreamFailureMode(nullptr, ACL_CONTINUE_ON_FAILURE));
    std::printf("failure mode stop -> continue: %d\n",
                Code(aclrtSetStreamFailureMode(other, ACL_CONTINUE_ON_FAILURE)));
    std::printf("failure mode, not a stream: %d\n",
                Code(aclrtSetStreamFailureMode(reinterpret_cast<aclrtStream>(&count),
                                               ACL_STOP_ON_FAILURE)));

    // A host function pending at aclFinalize runs before the runtime goes.
    Probe last;
    last.sleep_ms = 30;
    CHECK(aclrtLaunchHostFunc(other, Look, &last));
    CHECK(aclrtFree(dev));
    CHECK(aclrtFreeHost(host));
    CHECK(aclrtFreeHost(back));
    CHECK(aclrtDestroyStreamForce(stream));
    CHECK(aclrtResetDeviceForce(0));
    CHECK(aclFinalize());
    std::printf("pending at finalize ran: %d\n", last.runs.load());
    std::printf("done\n");
    return 0;
}
