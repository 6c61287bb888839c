// Stand-ins for the vendor runtime examples' kernels (hicann/runtime example/kernel_func:
// kernel_ops.h declares them; easy_OP.cpp, long_OP.cpp, short_OP.cpp and error_OP.cpp are
// Ascend C compiled by the CANN toolchain into the examples' `kernels` library, which cannot
// exist on the emulator; kernel_add.h declares AddDo, whose kernel is kernel_add.cpp;
// kernel_print.cpp is PrintDo's).
// Each queues the kernel's effect on the stream as one task, through the emulator's internal
// submit entry point, so the examples' own sources build unchanged and see their kernels run
// in stream order. Test code only: tests/test_vendor_examples.py links it in.
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "acl/acl.h"

extern "C" aclError aclemu_stream_submit(aclrtStream stream, void (*run)(void *),
                                         void (*release)(void *), void *arg,
                                         const char *caller);
extern "C" bool aclemu_task_cancelled(void);
extern "C" void aclemu_task_fail(aclError status, const char *what);

namespace {

struct Launch {
    uint32_t blocks;
    uint32_t *x;
};

// easy_OP.cpp: each block increments its element.
void RunEasy(void *arg) {
    auto *l = static_cast<Launch *>(arg);
    for (uint32_t i = 0; i < l->blocks; i++)
        l->x[i] += 1;
}

// long_OP.cpp: each block runs the same float arithmetic (10000 rounds of 25000 steps), then
// adds 1 if the result is positive. The stand-in gets the kernel's exact result quickly (once a
// step or a round leaves the value unchanged, every later one does too: each is a function of
// the value alone) and takes LONG_OP_MS, a device-like duration longer than the examples'
// 1000 ms timeouts, polling so that aclrtStreamStop/Abort (or a destroy) ends it midway, as
// they end a running kernel; then it adds nothing.
constexpr int LONG_OP_MS = 2000;

float LongOpRound(float temp) {
    temp += 0.00002f;
    temp *= 0.02f;
    for (int j = 0; j < 25000; j++) {
        float t = temp * temp - 0.000002f;
        t = t + (t * 0.05f);
        t = t * t + 0.00001f;
        t = t > 1.0f ? 0.0f : t;
        if (t == temp)
            break;
        temp = t;
    }
    temp -= 0.00003f * temp;
    return temp;
}

float LongOpValue() {
    float temp = 0.0f;
    for (int i = 0; i < 10000; i++) {
        float next = LongOpRound(temp);
        if (next == temp)
            break;
        temp = next;
    }
    return temp;
}

void RunLong(void *arg) {
    auto *l = static_cast<Launch *>(arg);
    for (int waited = 0; waited < LONG_OP_MS; waited += 2) {
        if (aclemu_task_cancelled())
            return;
        struct timespec nap = {0, 2000000};
        nanosleep(&nap, nullptr);
    }
    uint32_t add = LongOpValue() > 0.0f ? 1 : 0;
    for (uint32_t b = 0; b < l->blocks; b++)
        l->x[b] += add;
}

// short_OP.cpp: each block doubles its element.
void RunShort(void *arg) {
    auto *l = static_cast<Launch *>(arg);
    for (uint32_t i = 0; i < l->blocks; i++)
        l->x[i] *= 2;
}

// error_OP.cpp: the kernel traps; a device reports the vector core's exception (the vendor's
// stream example's README: 507035).
void RunError(void *) {
    aclemu_task_fail(ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "ErrorOP trapped (asm(\"trap\"))");
}

void Release(void *arg) { delete static_cast<Launch *>(arg); }

// write_read_value.cpp: block i writes value to devPtr[i] (DeviceWrite) or reads devPtr[i]
// (DeviceRead), and prints it with AscendC::printf, which the device's printf thread puts on
// the program's stdout.
struct Value {
    uint32_t blocks;
    int *ptr;
    int value;
};

void RunWrite(void *arg) {
    auto *v = static_cast<Value *>(arg);
    for (uint32_t i = 0; i < v->blocks; i++) {
        v->ptr[i] = v->value;
        std::printf("Source data: %d\n", v->value);
    }
}

void RunRead(void *arg) {
    auto *v = static_cast<Value *>(arg);
    for (uint32_t i = 0; i < v->blocks; i++)
        std::printf("Destination data: %d\n", v->ptr[i]);
}

void ReleaseValue(void *arg) { delete static_cast<Value *>(arg); }

// kernel_add.cpp: dst = srcA + srcB over totalSize floats, split evenly among the blocks.
struct Add {
    const float *a, *b;
    float *dst;
    uint32_t n;
};

void RunAdd(void *arg) {
    auto *t = static_cast<Add *>(arg);
    for (uint32_t i = 0; i < t->n; i++)
        t->dst[i] = t->a[i] + t->b[i];
}

void ReleaseAdd(void *arg) { delete static_cast<Add *>(arg); }

// kernel_print.cpp: each block prints "Hello World" with AscendC::printf.
void RunPrint(void *arg) {
    auto *l = static_cast<Launch *>(arg);
    for (uint32_t i = 0; i < l->blocks; i++)
        std::printf("Hello World\n");
}

void Submit(void (*run)(void *), uint32_t blockDim, void *stream, uint32_t *x,
            const char *name) {
    auto *l = new Launch{blockDim, x};
    if (aclemu_stream_submit(stream, run, Release, l, name) != ACL_SUCCESS)
        delete l;
}

}  // namespace

void EasyOP(uint32_t blockDim, void *stream, uint32_t *x) {
    Submit(RunEasy, blockDim, stream, x, "EasyOP");
}

void LongOP(uint32_t blockDim, void *stream, uint32_t *x) {
    Submit(RunLong, blockDim, stream, x, "LongOP");
}

void WriteDo(uint32_t blockDim, void *stream, int *devPtr, int value) {
    auto *v = new Value{blockDim, devPtr, value};
    if (aclemu_stream_submit(stream, RunWrite, ReleaseValue, v, "DeviceWrite") != ACL_SUCCESS)
        delete v;
}

void ReadDo(uint32_t blockDim, void *stream, int *devPtr) {
    auto *v = new Value{blockDim, devPtr, 0};
    if (aclemu_stream_submit(stream, RunRead, ReleaseValue, v, "DeviceRead") != ACL_SUCCESS)
        delete v;
}

void AddDo(uint32_t blockDim, void *stream, float *srcA, float *srcB, float *dst,
           uint32_t totalSize) {
    auto *t = new Add{srcA, srcB, dst, totalSize};
    if (aclemu_stream_submit(stream, RunAdd, ReleaseAdd, t, "AddKernel") != ACL_SUCCESS)
        delete t;
}

void ShortOP(uint32_t blockDim, void *stream, uint32_t *x) {
    Submit(RunShort, blockDim, stream, x, "ShortOP");
}

void ErrorOP(uint32_t blockDim, void *stream) {
    Submit(RunError, blockDim, stream, nullptr, "ErrorOP");
}

void PrintDo(uint32_t blockDim, void *stream) {
    Submit(RunPrint, blockDim, stream, nullptr, "KernelPrint");
}
