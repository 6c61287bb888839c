// A program in the shape of CANN's own operator samples that skip aclInit (e.g. hicann/ops-math
// math/accumulate_nv2/examples, hicann/ops-nn experimental/activation/softsign/examples):
// aclnnInit, then aclrtSetDevice, a stream, device memory, one aclnnAdd (out = a + alpha * b)
// and the result read back, then everything released and the device reset, aclnnFinalize, and
// neither aclInit nor aclFinalize anywhere. CANN's runtime calls do not check that aclInit ran
// (hicann/runtime src/acl/aclrt_impl: only the dump calls do), so every call must succeed.
// Built with -DACL_PY_EMULATOR it also prints the emulator's live object counts at the end.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"
#include "check.h"
#ifdef ACL_PY_EMULATOR
#include "aclemu/aclemu.h"
#endif

int main() {
    CHECK(aclnnInit(nullptr));
    uint32_t count = 0;
    CHECK(aclrtGetDeviceCount(&count));
    std::printf("device count: %u\n", count);
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));

    const std::vector<int64_t> shape{2, 3};
    const std::vector<int64_t> strides{3, 1};
    const std::vector<float> a{1, 2, 3, 4, 5, 6};
    const std::vector<float> b{0.5f, -1, 2, 10, 0, -6};
    const size_t bytes = a.size() * sizeof(float);
    void *dev[3] = {nullptr, nullptr, nullptr};
    for (void *&p : dev) CHECK(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev[0], bytes, a.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(dev[1], bytes, b.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    aclTensor *t[3];
    for (int i = 0; i < 3; i++)
        t[i] = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0,
                               ACL_FORMAT_ND, shape.data(), shape.size(), dev[i]);
    float two = 2.0f;
    aclScalar *alpha = aclCreateScalar(&two, ACL_FLOAT);

    uint64_t ws_size = 0;
    aclOpExecutor *executor = nullptr;
    CHECK(aclnnAddGetWorkspaceSize(t[0], t[1], alpha, t[2], &ws_size, &executor));
    void *ws = nullptr;
    if (ws_size > 0) CHECK(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclnnAdd(ws, ws_size, executor, stream));
    CHECK(aclrtSynchronizeStream(stream));

    std::vector<float> out(a.size());
    CHECK(aclrtMemcpy(out.data(), bytes, dev[2], bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    std::printf("out:");
    for (float v : out) std::printf(" %g", static_cast<double>(v));
    std::printf("\n");

    for (aclTensor *x : t) CHECK(aclDestroyTensor(x));
    CHECK(aclDestroyScalar(alpha));
    if (ws != nullptr) CHECK(aclrtFree(ws));
    for (void *p : dev) CHECK(aclrtFree(p));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclnnFinalize());
#ifdef ACL_PY_EMULATOR
    aclemuLiveObjects live{};
    CHECK(aclemuGetLiveObjects(&live));
    std::printf("live: %lld device allocations, %lld streams, %lld tensors, %lld scalars, "
                "%lld executors\n",
                static_cast<long long>(live.device_allocations),
                static_cast<long long>(live.streams), static_cast<long long>(live.tensors),
                static_cast<long long>(live.scalars), static_cast<long long>(live.executors));
#endif
    std::printf("done\n");
    return 0;
}
