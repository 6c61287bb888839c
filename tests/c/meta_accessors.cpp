/* The acl_meta.h accessors, aclInitTensor, the raw tensor address and aclnnInit/aclnnFinalize
 * as a CANN program calls them: each call's success, each NULL or invalid argument's status and
 * message, and ownership as the docs say (the shape and stride arrays released with delete[],
 * every object destroyed; the emulator's live-object counts at the end prove nothing leaked).
 * Run as `meta_accessors` (everything), `meta_accessors init-twice`, `meta_accessors
 * finalize-first`: aclnnInit and aclnnFinalize may be called once per process.
 * Output is compared line by line by tests/test_emulator_accessors.py. */
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclemu/aclemu.h"

static void status(const char *what, aclnnStatus s) {
    const char *m = aclGetRecentErrMsg();
    if (s == 0)
        std::printf("%s: 0\n", what);
    else
        std::printf("%s: %d (%s)\n", what, s, m ? m : "no message");
}

static void print_array(const char *what, const int64_t *v, uint64_t n) {
    std::printf("%s: [", what);
    for (uint64_t i = 0; i < n; i++)
        std::printf(i ? ", %lld" : "%lld", (long long)v[i]);
    std::printf("]\n");
}

/* Every accessor of a tensor, printed; the arrays released with delete[] as the docs do. */
static void describe(const char *name, const aclTensor *t) {
    int64_t *dims = nullptr, *strides = nullptr, *storage = nullptr;
    uint64_t ndims = 99, nstrides = 99, nstorage = 99;
    int64_t offset = -1;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    void *addr = reinterpret_cast<void *>(1);
    if (aclGetViewShape(t, &dims, &ndims) != 0 || aclGetViewStrides(t, &strides, &nstrides) != 0 ||
        aclGetStorageShape(t, &storage, &nstorage) != 0 || aclGetViewOffset(t, &offset) != 0 ||
        aclGetDataType(t, &dtype) != 0 || aclGetFormat(t, &format) != 0 ||
        aclGetRawTensorAddr(t, &addr) != 0) {
        std::printf("%s: an accessor failed: %s\n", name, aclGetRecentErrMsg());
        return;
    }
    std::printf("%s:\n", name);
    print_array("  view shape", dims, ndims);
    print_array("  strides", strides, nstrides);
    print_array("  storage shape", storage, nstorage);
    std::printf("  offset %lld, dtype %d, format %d, addr %s, arrays non-NULL: %s\n",
                (long long)offset, (int)dtype, (int)format, addr ? "set" : "NULL",
                dims && strides && storage ? "yes" : "no");
    delete[] dims;
    delete[] strides;
    delete[] storage;
}

static void accessors() {
    void *dev = nullptr;
    aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    // A [2, 3] view with strides {4, 1} at offset 5 of a 16-element storage.
    int64_t view[] = {2, 3}, stride[] = {4, 1}, storage[] = {16};
    aclTensor *t = aclCreateTensor(view, 2, ACL_FLOAT16, stride, 5, ACL_FORMAT_NCL, storage, 1,
                                   dev);
    describe("strided view", t);
    aclTensor *scalar = aclCreateTensor(nullptr, 0, ACL_INT64, nullptr, 0, ACL_FORMAT_ND,
                                        nullptr, 0, nullptr);
    describe("rank 0, no address", scalar);

    // NULL arguments: 161001, the message naming the argument.
    int64_t *p = nullptr;
    uint64_t n = 0;
    int64_t i64 = 0;
    aclDataType dt;
    aclFormat fmt;
    void *addr = nullptr;
    status("aclGetViewShape(NULL tensor)", aclGetViewShape(nullptr, &p, &n));
    status("aclGetViewShape(NULL viewDims)", aclGetViewShape(t, nullptr, &n));
    status("aclGetViewShape(NULL viewDimsNum)", aclGetViewShape(t, &p, nullptr));
    status("aclGetStorageShape(NULL storageDims)", aclGetStorageShape(t, nullptr, &n));
    status("aclGetStorageShape(NULL storageDimsNum)", aclGetStorageShape(t, &p, nullptr));
    status("aclGetViewStrides(NULL stridesValue)", aclGetViewStrides(t, nullptr, &n));
    status("aclGetViewStrides(NULL stridesNum)", aclGetViewStrides(t, &p, nullptr));
    status("aclGetViewOffset(NULL offset)", aclGetViewOffset(t, nullptr));
    status("aclGetFormat(NULL format)", aclGetFormat(t, nullptr));
    status("aclGetDataType(NULL tensor)", aclGetDataType(nullptr, &dt));
    status("aclGetDataType(NULL dataType)", aclGetDataType(t, nullptr));
    status("aclGetRawTensorAddr(NULL addr)", aclGetRawTensorAddr(t, nullptr));
    status("aclSetRawTensorAddr(NULL tensor)", aclSetRawTensorAddr(nullptr, dev));
    status("aclInitTensor(NULL tensor)", aclInitTensor(nullptr, view, 2, ACL_FLOAT, nullptr, 0,
                                                       ACL_FORMAT_ND, storage, 1, dev));

    // The raw address: the storage's base, whatever the offset; NULL may be set.
    aclGetRawTensorAddr(t, &addr);
    std::printf("raw address is the storage base: %s\n", addr == dev ? "yes" : "no");
    status("aclSetRawTensorAddr(base + 64)",
           aclSetRawTensorAddr(t, static_cast<char *>(dev) + 64));
    aclGetRawTensorAddr(t, &addr);
    std::printf("raw address moved by 64: %s\n",
                addr == static_cast<char *>(dev) + 64 ? "yes" : "no");
    status("aclSetRawTensorAddr(base + 8)", aclSetRawTensorAddr(t, static_cast<char *>(dev) + 8));
    aclGetRawTensorAddr(t, &addr);
    std::printf("unchanged after the refusal: %s\n",
                addr == static_cast<char *>(dev) + 64 ? "yes" : "no");
    status("aclSetRawTensorAddr(NULL)", aclSetRawTensorAddr(t, nullptr));
    aclGetRawTensorAddr(t, &addr);
    std::printf("raw address now NULL: %s\n", addr == nullptr ? "yes" : "no");

    // aclInitTensor: everything replaced.
    int64_t view2[] = {3, 2}, storage2[] = {3, 2};
    status("aclInitTensor(all)", aclInitTensor(t, view2, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND,
                                               storage2, 2, dev));
    describe("re-initialized", t);
    // Left out: the view shape (kept, with its contiguous strides recomputed: {3, 1} becomes
    // {2, 1}), the storage, the address.
    int64_t view3[] = {2, 2}, stride3[] = {3, 1};
    aclInitTensor(t, view3, 2, ACL_FLOAT, stride3, 1, ACL_FORMAT_ND, storage2, 2, dev);
    status("aclInitTensor(NULL dims, storage, address)",
           aclInitTensor(t, nullptr, 0, ACL_INT32, nullptr, 2, ACL_FORMAT_NCHW, nullptr, 0,
                         nullptr));
    describe("kept shape, storage and address", t);
    int64_t stride1[] = {1};
    status("aclInitTensor(kept rank-2 shape, 1 stride)",
           aclInitTensor(t, nullptr, 1, ACL_INT32, stride1, 0, ACL_FORMAT_ND, nullptr, 0,
                         nullptr));
    int64_t negative[] = {2, -1};
    status("aclInitTensor(negative dim)",
           aclInitTensor(t, negative, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage2, 2, dev));
    int64_t big[] = {7, 1};
    status("aclInitTensor(view outside the storage)",
           aclInitTensor(t, big, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage2, 2, dev));
    status("aclInitTensor(unaligned address)",
           aclInitTensor(t, view2, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage2, 2,
                         static_cast<char *>(dev) + 4));
    describe("unchanged after the refusals", t);

    // Array and list sizes.
    int64_t ints[] = {1, 2, 3};
    float floats[] = {1.5f, 2.5f};
    bool bools[] = {true, false, true, true};
    aclIntArray *ia = aclCreateIntArray(ints, 3);
    aclFloatArray *fa = aclCreateFloatArray(floats, 2);
    aclBoolArray *ba = aclCreateBoolArray(bools, 4);
    aclIntArray *empty = aclCreateIntArray(nullptr, 5);
    float one = 1.0f;
    aclScalar *scalars[] = {aclCreateScalar(&one, ACL_FLOAT), nullptr,
                            aclCreateScalar(&one, ACL_FLOAT)};
    aclScalarList *sl = aclCreateScalarList(scalars, 3);
    aclTensor *elems[] = {aclCreateTensor(view, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, view, 2,
                                          nullptr)};
    aclTensorList *tl = aclCreateTensorList(elems, 1);
    uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
    aclGetIntArraySize(ia, &a);
    aclGetFloatArraySize(fa, &b);
    aclGetBoolArraySize(ba, &c);
    aclGetIntArraySize(empty, &d);
    aclGetScalarListSize(sl, &e);
    aclGetTensorListSize(tl, &f);
    std::printf("sizes: int %llu, float %llu, bool %llu, empty int %llu, scalar list %llu, "
                "tensor list %llu\n", (unsigned long long)a, (unsigned long long)b,
                (unsigned long long)c, (unsigned long long)d, (unsigned long long)e,
                (unsigned long long)f);
    status("aclGetIntArraySize(NULL array)", aclGetIntArraySize(nullptr, &a));
    status("aclGetFloatArraySize(NULL size)", aclGetFloatArraySize(fa, nullptr));
    status("aclGetBoolArraySize(NULL array)", aclGetBoolArraySize(nullptr, &a));
    status("aclGetTensorListSize(NULL tensorList)", aclGetTensorListSize(nullptr, &a));
    status("aclGetScalarListSize(NULL size)", aclGetScalarListSize(sl, nullptr));
    // A handle of another kind, or destroyed: 161002.
    status("aclGetIntArraySize(a bool array)",
           aclGetIntArraySize(reinterpret_cast<const aclIntArray *>(ba), &a));
    aclDestroyIntArray(ia);
    aclDestroyFloatArray(fa);
    aclDestroyBoolArray(ba);
    aclDestroyIntArray(empty);
    aclDestroyScalarList(sl);
    aclDestroyTensorList(tl);
    aclDestroyTensor(scalar);
    aclDestroyTensor(t);
    status("aclGetViewShape(destroyed tensor)", aclGetViewShape(t, &p, &n));
    status("aclGetViewOffset(destroyed tensor)", aclGetViewOffset(t, &i64));
    status("aclGetFormat(destroyed tensor)", aclGetFormat(t, &fmt));
    status("aclSetRawTensorAddr(destroyed tensor)", aclSetRawTensorAddr(t, dev));
    status("aclInitTensor(destroyed tensor)", aclInitTensor(t, view, 2, ACL_FLOAT, nullptr, 0,
                                                            ACL_FORMAT_ND, storage, 1, dev));
    aclrtFree(dev);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    if (std::strcmp(mode, "init-twice") == 0) {
        status("aclnnInit(missing file)", aclnnInit("/nonexistent/acl.json"));
        status("aclnnInit again", aclnnInit(nullptr));
        status("aclnnFinalize", aclnnFinalize());
        status("aclnnInit after aclnnFinalize", aclnnInit(nullptr));
        status("aclnnFinalize again", aclnnFinalize());
        return 0;
    }
    if (std::strcmp(mode, "finalize-first") == 0) {
        status("aclnnFinalize before aclnnInit", aclnnFinalize());
        status("aclnnInit", aclnnInit(""));
        status("aclnnFinalize", aclnnFinalize());
        return 0;
    }
    // aclnnInit and aclInit both, in either order; each pair finalized on its own.
    status("aclnnInit(NULL)", aclnnInit(nullptr));
    status("aclInit(NULL)", aclInit(nullptr));
    status("aclrtSetDevice(0)", aclrtSetDevice(0));
    accessors();
    aclemuLiveObjects live;
    aclemuGetLiveObjects(&live);
    std::printf("live at the end: tensors %lld, int arrays %lld, float arrays %lld, "
                "bool arrays %lld, scalars %lld, tensor lists %lld, scalar lists %lld, "
                "device allocations %lld\n", (long long)live.tensors,
                (long long)live.int_arrays, (long long)live.float_arrays,
                (long long)live.bool_arrays, (long long)live.scalars,
                (long long)live.tensor_lists, (long long)live.scalar_lists,
                (long long)live.device_allocations);
    status("aclrtResetDevice(0)", aclrtResetDevice(0));
    status("aclFinalize", aclFinalize());
    status("aclnnFinalize", aclnnFinalize());
    return 0;
}
