/* Event flags from C++ (public headers only): aclrtCreateEventWithFlag's timing and waiting
 * events, aclrtCreateEventExWithFlag's event that needs no reset, aclrtRecordEventWithFlag and
 * aclrtStreamWaitEventWithFlag, and the codes for what a flag does not allow. */
#include <unistd.h>

#include <cstdio>
#include <initializer_list>

#include "check.h"

static void sleep_20ms(void *) { usleep(20000); }

int main() {
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream a = nullptr, b = nullptr;
    CHECK(aclrtCreateStream(&a));
    CHECK(aclrtCreateStream(&b));

    aclrtEvent start = nullptr, end = nullptr, sync = nullptr, ex = nullptr;
    CHECK(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE));
    CHECK(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC));
    CHECK(aclrtCreateEventWithFlag(&sync, ACL_EVENT_SYNC));
    CHECK(aclrtCreateEventExWithFlag(&ex, ACL_EVENT_SYNC));

    /* timing: two TIME_LINE records around 20 ms of work */
    CHECK(aclrtRecordEventWithFlag(start, a, ACL_EVENT_RECORD_DEFAULT));
    CHECK(aclrtLaunchHostFunc(a, sleep_20ms, nullptr));
    CHECK(aclrtRecordEvent(end, a));
    /* b waits for a's work through a SYNC event, with a 30 s limit */
    CHECK(aclrtStreamWaitEventWithFlag(b, end, 30, ACL_EVENT_WAIT_DEFAULT));
    CHECK(aclrtSynchronizeStream(b));
    aclrtEventRecordedStatus status;
    CHECK(aclrtQueryEventStatus(end, &status));
    std::printf("end recorded before b passed its wait: %s\n",
                status == ACL_EVENT_RECORDED_STATUS_COMPLETE ? "yes" : "no");
    float ms = 0.0f;
    CHECK(aclrtEventElapsedTime(&ms, start, end));
    std::printf("elapsed >= 15 ms: %s\n", ms >= 15.0f ? "yes" : "no");

    /* an Ex event: complete before any record, recorded twice without a reset */
    CHECK(aclrtQueryEventStatus(ex, &status));
    std::printf("ex event before a record: %s\n",
                status == ACL_EVENT_RECORDED_STATUS_COMPLETE ? "complete" : "not ready");
    CHECK(aclrtStreamWaitEvent(b, ex));
    CHECK(aclrtRecordEvent(ex, a));
    CHECK(aclrtRecordEvent(ex, a));
    CHECK(aclrtSynchronizeEvent(ex));

    /* what the flags do not allow */
    std::printf("wait for a TIME_LINE-only event: %d\n", aclrtStreamWaitEvent(b, start));
    std::printf("reset an Ex event: %d\n", aclrtResetEvent(ex, a));
    std::printf("record EXTERNAL after DEFAULT records: %d\n",
                aclrtRecordEventWithFlag(ex, a, ACL_EVENT_RECORD_EXTERNAL));
    aclrtEvent fresh = nullptr;
    CHECK(aclrtCreateEventExWithFlag(&fresh, ACL_EVENT_SYNC));
    std::printf("record EXTERNAL outside a capture: %d\n",
                aclrtRecordEventWithFlag(fresh, a, ACL_EVENT_RECORD_EXTERNAL));
    CHECK(aclrtDestroyEvent(fresh));
    aclrtEvent bad = nullptr;
    std::printf("create with EXTERNAL | SYNC: %d\n",
                aclrtCreateEventWithFlag(&bad, ACL_EVENT_EXTERNAL | ACL_EVENT_SYNC));
    std::printf("wait flag 2: %d\n", aclrtStreamWaitEventWithFlag(b, sync, 0, 2));

    /* a SYNC event is reset and waited for again */
    CHECK(aclrtRecordEvent(sync, a));
    CHECK(aclrtSynchronizeStream(a));
    CHECK(aclrtResetEvent(sync, a));
    CHECK(aclrtSynchronizeStream(a));
    CHECK(aclrtQueryEventStatus(sync, &status));
    std::printf("sync event after its reset: %s\n",
                status == ACL_EVENT_RECORDED_STATUS_COMPLETE ? "complete" : "not ready");

    for (aclrtEvent e : {start, end, sync, ex})
        CHECK(aclrtDestroyEvent(e));
    CHECK(aclrtDestroyStream(a));
    CHECK(aclrtDestroyStream(b));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("done\n");
    return 0;
}
