// Test only: stands in for the kernel binary calls (tests/c/vendor_kernel_api.h) and the Ascend C
// kernel file of the vendor's host_register/0_simple_zero_copy example (hicann/runtime
// example/kernel_func/add_custom.cpp, built by the CANN toolchain into
// out/fatbin/simple_zero_copy_kernel/simple_zero_copy_kernel.o, which cannot exist on the
// emulator). The "binary" is any existing file whose name is that kernel file's; it has one
// function, add_custom(x, y, z): z = x + y on 8 * 2048 FLOAT16 elements, split over the launch's
// blocks, queued on the stream as one task through the emulator's internal submit entry point.
// The kernel reads and writes through the device addresses it is given, as the device does.
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "vendor_kernel_api.h"

extern "C" aclError aclemu_stream_submit(aclrtStream stream, void (*run)(void *),
                                         void (*release)(void *), void *arg,
                                         const char *caller);

namespace {

constexpr uint32_t kTotalLength = 8 * 2048;  // add_custom.cpp TOTAL_LENGTH
constexpr const char *kKernelFile = "simple_zero_copy_kernel.o";

struct Function;
struct Args;

struct Binary {  // owns its functions and their argument lists (freed by aclrtBinaryUnLoad)
    std::vector<Function *> functions;
    std::vector<Args *> args;
};

struct Function {
    Binary *binary;
};

struct Args {
    Function *function;
    std::vector<uint8_t> bytes;
    bool finalized = false;
};

struct AddLaunch {
    uint32_t blocks;
    uint16_t *x, *y, *z;
};

void RunAdd(void *arg) {
    auto *l = static_cast<AddLaunch *>(arg);
    uint32_t per_block = kTotalLength / l->blocks;
    for (uint32_t b = 0; b < l->blocks; b++)
        for (uint32_t i = b * per_block; i < (b + 1) * per_block; i++)
            l->z[i] = aclFloatToFloat16(aclFloat16ToFloat(l->x[i]) + aclFloat16ToFloat(l->y[i]));
}

void ReleaseAdd(void *arg) { delete static_cast<AddLaunch *>(arg); }

}  // namespace

extern "C" aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions *,
                                            aclrtBinHandle *binHandle) {
    struct stat st;
    if (binPath == nullptr || binHandle == nullptr)
        return ACL_ERROR_INVALID_PARAM;
    std::string path(binPath);
    if (stat(binPath, &st) != 0 || path.size() < std::strlen(kKernelFile) ||
        path.compare(path.size() - std::strlen(kKernelFile), std::string::npos, kKernelFile) != 0)
        return ACL_ERROR_INVALID_FILE;
    *binHandle = new Binary();
    return ACL_SUCCESS;
}

extern "C" aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
    auto *b = static_cast<Binary *>(binHandle);
    if (b == nullptr)
        return ACL_ERROR_INVALID_PARAM;
    for (Args *a : b->args)
        delete a;
    for (Function *f : b->functions)
        delete f;
    delete b;
    return ACL_SUCCESS;
}

extern "C" aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                           aclrtFuncHandle *funcHandle) {
    if (binHandle == nullptr || kernelName == nullptr || funcHandle == nullptr)
        return ACL_ERROR_INVALID_PARAM;
    if (std::strcmp(kernelName, "add_custom") != 0)
        return ACL_ERROR_RT_PARAM_INVALID;
    auto *b = static_cast<Binary *>(binHandle);
    b->functions.push_back(new Function{b});
    *funcHandle = b->functions.back();
    return ACL_SUCCESS;
}

extern "C" aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle) {
    if (funcHandle == nullptr || argsHandle == nullptr)
        return ACL_ERROR_INVALID_PARAM;
    auto *f = static_cast<Function *>(funcHandle);
    auto *a = new Args{f, {}, false};
    f->binary->args.push_back(a);
    *argsHandle = a;
    return ACL_SUCCESS;
}

extern "C" aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param,
                                          size_t paramSize, aclrtParamHandle *paramHandle) {
    auto *a = static_cast<Args *>(argsHandle);
    if (a == nullptr || param == nullptr || paramHandle == nullptr || a->finalized)
        return ACL_ERROR_INVALID_PARAM;
    auto *p = static_cast<uint8_t *>(param);
    *paramHandle = reinterpret_cast<void *>(a->bytes.size() + 1);
    a->bytes.insert(a->bytes.end(), p, p + paramSize);
    return ACL_SUCCESS;
}

extern "C" aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle) {
    auto *a = static_cast<Args *>(argsHandle);
    if (a == nullptr)
        return ACL_ERROR_INVALID_PARAM;
    a->finalized = true;
    return ACL_SUCCESS;
}

extern "C" aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                                aclrtStream stream, aclrtLaunchKernelCfg *,
                                                aclrtArgsHandle argsHandle, void *) {
    auto *a = static_cast<Args *>(argsHandle);
    if (funcHandle == nullptr || a == nullptr || !a->finalized ||
        a->bytes.size() != 3 * sizeof(void *) || numBlocks == 0 ||
        kTotalLength % numBlocks != 0)
        return ACL_ERROR_INVALID_PARAM;
    void *ptrs[3];
    std::memcpy(ptrs, a->bytes.data(), sizeof ptrs);
    auto *l = new AddLaunch{numBlocks, static_cast<uint16_t *>(ptrs[0]),
                            static_cast<uint16_t *>(ptrs[1]), static_cast<uint16_t *>(ptrs[2])};
    aclError rc = aclemu_stream_submit(stream, RunAdd, ReleaseAdd, l, "aclrtLaunchKernelWithConfig");
    if (rc != ACL_SUCCESS)
        delete l;
    return rc;
}
