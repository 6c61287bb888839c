// Stand-ins for the vendor runtime examples' kernels (hicann/runtime example/kernel_func:
// kernel_ops.h declares them, easy_OP.cpp and long_OP.cpp are Ascend C compiled by the
// CANN toolchain into the examples' `kernels` library, which cannot exist on the emulator;
// kernel_add.h declares AddDo, whose kernel is kernel_add.cpp).
// Each queues the kernel's effect on the stream as one task, through the emulator's internal
// submit entry point, so the examples' own sources build unchanged and see their kernels run
// in stream order. Test code only: tests/test_vendor_examples.py links it in.
#include <cstdint>
#include <cstdio>

#include "acl/acl.h"

extern "C" aclError aclemu_stream_submit(aclrtStream stream, void (*run)(void *),
                                         void (*release)(void *), void *arg,
                                         const char *caller);

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

// long_OP.cpp: each block spins on the same float arithmetic, then adds 1 if the result is
// positive.
void RunLong(void *arg) {
    auto *l = static_cast<Launch *>(arg);
    for (uint32_t b = 0; b < l->blocks; b++) {
        volatile float temp = 0.0f;
        for (int i = 0; i < 10000; i++) {
            temp = temp + 0.00002f;
            temp = temp * 0.02f;
            for (int j = 0; j < 25000; j++) {
                float t = temp;
                t = t * t - 0.000002f;
                t = t + (t * 0.05f);
                t = t * t + 0.00001f;
                temp = t > 1.0f ? 0.0f : t;
            }
            temp = temp - 0.00003f * temp;
        }
        l->x[b] += temp > 0.0f ? 1 : 0;
    }
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
