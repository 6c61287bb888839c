// Re-pointing repeatable executors at new device memory through the public headers only:
// aclSetInputTensorAddr / aclSetOutputTensorAddr / aclSetTensorAddr, their Dynamic (tensor
// list) forms and the reserved Acl-prefixed twins, on aclnnAdd, aclnnLayerNorm and
// aclnnLayerNormBackward executors. For each operator a repeatable executor runs on buffers
// A, is re-pointed at buffers B, runs again, and its results are compared bit for bit with a
// single-use executor's on copies of B; A's results must be untouched. Then the refusals,
// with their statuses (and the message where it holds no address). tests/test_tensor_addr.py
// builds it against the emulator's prefix and checks what it prints; built with
// -DACL_PY_EMULATOR it also prints the emulator's live object counts at the end.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_layer_norm.h"
#include "aclnnop/aclnn_layer_norm_backward.h"
#include "check.h"
#ifdef ACL_PY_EMULATOR
#include "aclemu/aclemu.h"
#endif

namespace {

aclrtStream g_stream = nullptr;
std::vector<void *> g_buffers;          // every device buffer, freed at the end
std::vector<const aclTensor *> g_tensors;  // every tensor not owned by a list

size_t Bytes(const std::vector<int64_t> &shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n * sizeof(float);
}

void *Upload(const std::vector<float> &host) {
    void *dev = nullptr;
    size_t bytes = host.size() * sizeof(float);
    CHECK(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    g_buffers.push_back(dev);
    return dev;
}

void *Zeros(const std::vector<int64_t> &shape) {
    return Upload(std::vector<float>(Bytes(shape) / sizeof(float), 0.0f));
}

std::vector<float> Download(const void *dev, const std::vector<int64_t> &shape) {
    std::vector<float> host(Bytes(shape) / sizeof(float));
    CHECK(aclrtMemcpy(host.data(), Bytes(shape), dev, Bytes(shape), ACL_MEMCPY_DEVICE_TO_HOST));
    return host;
}

aclTensor *Tensor(const std::vector<int64_t> &shape, void *dev, bool listed = false) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
    aclTensor *t = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0,
                                   ACL_FORMAT_ND, shape.data(), shape.size(), dev);
    if (t == nullptr) {
        std::printf("FAILED aclCreateTensor: %s\n", aclGetRecentErrMsg());
        std::exit(1);
    }
    if (!listed) g_tensors.push_back(t);
    return t;
}

std::vector<float> Data(size_t n, float scale, float shift) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = scale * std::sin(0.7f * static_cast<float>(i) + shift);
    return v;
}

bool Same(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

const char *YesNo(bool b) { return b ? "yes" : "no"; }

// A refusal: its status, and the message when `with_message` (one naming no address).
void Refused(const char *what, aclnnStatus rc, bool with_message) {
    const char *m = aclGetRecentErrMsg();
    if (with_message)
        std::printf("%s: %d (%s)\n", what, static_cast<int>(rc), m ? m : "");
    else
        std::printf("%s: %d\n", what, static_cast<int>(rc));
}

void Run(aclnnStatus (*phase_two)(void *, uint64_t, aclOpExecutor *, aclrtStream),
         aclOpExecutor *ex, void *ws, uint64_t ws_size) {
    CHECK(phase_two(ws, ws_size, ex, g_stream));
    CHECK(aclrtSynchronizeStream(g_stream));
}

void *Workspace(uint64_t size) {
    if (size == 0) return nullptr;
    void *ws = nullptr;
    CHECK(aclrtMalloc(&ws, size, ACL_MEM_MALLOC_HUGE_FIRST));
    g_buffers.push_back(ws);
    return ws;
}

// ---- aclnnAdd ---------------------------------------------------------------------------

void AddCase() {
    const std::vector<int64_t> shape = {4, 8};
    const size_t n = 32;
    float one = 1.0f;
    aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
    void *a1 = Upload(Data(n, 1, 0)), *b1 = Upload(Data(n, 2, 1)), *o1 = Zeros(shape);
    void *a2 = Upload(Data(n, 3, 2)), *b2 = Upload(Data(n, 4, 3)), *o2 = Zeros(shape);
    aclTensor *ta = Tensor(shape, a1), *tb = Tensor(shape, b1), *to = Tensor(shape, o1);
    uint64_t ws_size = 0;
    aclOpExecutor *ex = nullptr;
    CHECK(aclnnAddGetWorkspaceSize(ta, tb, alpha, to, &ws_size, &ex));
    CHECK(aclSetAclOpExecutorRepeatable(ex));
    // the workspace phase one asks (none on most parts; Ascend 950's AI Core Add takes 16 MiB)
    void *ws = Workspace(ws_size);
    const uint64_t ex_ws_size = ws_size;
    Run(aclnnAdd, ex, ws, ex_ws_size);
    std::vector<float> first = Download(o1, shape);

    CHECK(aclSetInputTensorAddr(ex, 0, ta, a2));
    CHECK(AclSetInputTensorAddr(ex, 1, tb, b2));   // the reserved twin
    CHECK(aclSetTensorAddr(ex, 2, to, o2));        // index over inputs, then outputs
    Run(aclnnAdd, ex, ws, ex_ws_size);

    // a single-use executor on copies of B, for comparison
    void *a3 = Upload(Data(n, 3, 2)), *b3 = Upload(Data(n, 4, 3)), *o3 = Zeros(shape);
    aclTensor *ta3 = Tensor(shape, a3), *tb3 = Tensor(shape, b3), *to3 = Tensor(shape, o3);
    aclOpExecutor *once = nullptr;
    CHECK(aclnnAddGetWorkspaceSize(ta3, tb3, alpha, to3, &ws_size, &once));
    Run(aclnnAdd, once, Workspace(ws_size), ws_size);
    std::printf("add: re-pointed run matches a fresh one: %s\n",
                YesNo(Same(Download(o2, shape), Download(o3, shape))));
    std::printf("add: the first run's results untouched: %s, differ: %s\n",
                YesNo(Same(Download(o1, shape), first)),
                YesNo(!Same(first, Download(o2, shape))));

    // refusals on this repeatable executor
    Refused("input index past the inputs", aclSetInputTensorAddr(ex, 2, ta, a1), true);
    Refused("output index past the outputs", aclSetOutputTensorAddr(ex, 1, to, o1), true);
    Refused("tensor index past all tensors", AclSetTensorAddr(ex, 3, to, o1), true);
    Refused("another input's tensor", aclSetInputTensorAddr(ex, 1, ta, a1), false);
    Refused("a tensor the executor does not have", aclSetInputTensorAddr(ex, 0, ta3, a1), false);
    Refused("NULL tensor", aclSetInputTensorAddr(ex, 0, nullptr, a1), false);
    Refused("address not 32-byte aligned",
            aclSetInputTensorAddr(ex, 0, ta, static_cast<char *>(a1) + 4), false);
    // a refused call changed nothing: the executor still runs on B
    Run(aclnnAdd, ex, ws, ex_ws_size);
    std::printf("add: refusals changed nothing: %s\n",
                YesNo(Same(Download(o2, shape), Download(o3, shape))));

    // NULL executor: 561103, but the tensor's address is updated first (CANN's order), and
    // the executor, which reads the tensor, runs on it
    Refused("NULL executor", aclSetOutputTensorAddr(nullptr, 0, to, o1), false);
    CHECK(aclrtMemset(o1, Bytes(shape), 0, Bytes(shape)));
    Run(aclnnAdd, ex, ws, ex_ws_size);
    std::printf("add: after a NULL executor the tensor's new address is used: %s\n",
                YesNo(Same(Download(o1, shape), Download(o3, shape))));

    // tensor lists: a list owns its elements; the executor's input 0 is one of them
    void *l1 = Upload(Data(n, 5, 4)), *l2 = Upload(Data(n, 5, 4));
    aclTensor *tl = Tensor(shape, l1, true);
    const aclTensor *items[] = {tl};
    aclTensorList *list = aclCreateTensorList(items, 1);
    aclOpExecutor *lex = nullptr;
    CHECK(aclnnAddGetWorkspaceSize(tl, tb, alpha, to, &ws_size, &lex));
    CHECK(aclSetAclOpExecutorRepeatable(lex));
    CHECK(aclSetDynamicInputTensorAddr(lex, 0, 0, list, l2));
    CHECK(aclrtMemset(l1, Bytes(shape), 0, Bytes(shape)));  // the old buffer no longer read
    Run(aclnnAdd, lex, Workspace(ws_size), ws_size);
    CHECK(AclSetDynamicTensorAddr(lex, 0, 0, list, l1));
    CHECK(aclSetDynamicTensorAddr(lex, 0, 0, list, l2));
    Refused("relativeIndex past the list", aclSetDynamicInputTensorAddr(lex, 0, 1, list, l2),
            true);
    Refused("irIndex past the outputs", aclSetDynamicOutputTensorAddr(lex, 1, 0, list, l2),
            true);
    Refused("NULL list", aclSetDynamicTensorAddr(lex, 0, 0, nullptr, l2), false);
    Refused("list element not the output's tensor",
            AclSetDynamicOutputTensorAddr(lex, 0, 0, list, l2), false);
    CHECK(aclDestroyAclOpExecutor(lex));
    CHECK(aclDestroyTensorList(list));  // and tl with it

    // a single-use executor: refused (whether it would see the address depends on CANN's
    // operator cache), and it still runs once on phase one's addresses
    aclOpExecutor *single = nullptr;
    CHECK(aclnnAddGetWorkspaceSize(ta3, tb3, alpha, to3, &ws_size, &single));
    aclnnStatus rc = aclSetInputTensorAddr(single, 0, ta3, a1);
    const char *m = aclGetRecentErrMsg();
    std::printf("single-use executor: %d, says single-use: %s\n", static_cast<int>(rc),
                YesNo(m != nullptr && std::strstr(m, "single-use") != nullptr));
    Run(aclnnAdd, single, Workspace(ws_size), ws_size);

    // a destroyed executor
    CHECK(aclDestroyAclOpExecutor(ex));
    Refused("destroyed executor", aclSetTensorAddr(ex, 0, ta, a1), false);
    CHECK(aclDestroyScalar(alpha));
}

// ---- aclnnLayerNorm -------------------------------------------------------------------------

void LayerNormCase() {
    const std::vector<int64_t> x_shape = {6, 16}, p_shape = {16}, s_shape = {6, 1};
    const int64_t ns[] = {16};
    aclIntArray *norm = aclCreateIntArray(ns, 1);
    void *x1 = Upload(Data(96, 2, 0)), *w = Upload(Data(16, 1, 1)), *b = Upload(Data(16, 1, 2));
    void *y1 = Zeros(x_shape), *m1 = Zeros(s_shape), *r1 = Zeros(s_shape);
    void *x2 = Upload(Data(96, 3, 5)), *y2 = Zeros(x_shape), *m2 = Zeros(s_shape),
         *r2 = Zeros(s_shape);
    aclTensor *tx = Tensor(x_shape, x1), *tw = Tensor(p_shape, w), *tb = Tensor(p_shape, b);
    aclTensor *ty = Tensor(x_shape, y1), *tm = Tensor(s_shape, m1), *tr = Tensor(s_shape, r1);
    uint64_t ws_size = 0;
    aclOpExecutor *ex = nullptr;
    CHECK(aclnnLayerNormGetWorkspaceSize(tx, norm, tw, tb, 1e-5, ty, tm, tr, &ws_size, &ex));
    CHECK(aclSetAclOpExecutorRepeatable(ex));
    void *ws = Workspace(ws_size);
    Run(aclnnLayerNorm, ex, ws, ws_size);
    std::vector<float> first = Download(y1, x_shape);
    CHECK(aclSetTensorAddr(ex, 0, tx, x2));
    CHECK(aclSetOutputTensorAddr(ex, 0, ty, y2));
    CHECK(aclSetOutputTensorAddr(ex, 1, tm, m2));
    CHECK(aclSetTensorAddr(ex, 5, tr, r2));
    Run(aclnnLayerNorm, ex, ws, ws_size);

    void *x3 = Upload(Data(96, 3, 5)), *y3 = Zeros(x_shape), *m3 = Zeros(s_shape),
         *r3 = Zeros(s_shape);
    aclTensor *tx3 = Tensor(x_shape, x3), *ty3 = Tensor(x_shape, y3), *tm3 = Tensor(s_shape, m3),
              *tr3 = Tensor(s_shape, r3);
    aclOpExecutor *once = nullptr;
    CHECK(aclnnLayerNormGetWorkspaceSize(tx3, norm, tw, tb, 1e-5, ty3, tm3, tr3, &ws_size,
                                         &once));
    Run(aclnnLayerNorm, once, Workspace(ws_size), ws_size);
    std::printf("layer norm: re-pointed run matches a fresh one: %s\n",
                YesNo(Same(Download(y2, x_shape), Download(y3, x_shape)) &&
                      Same(Download(m2, s_shape), Download(m3, s_shape)) &&
                      Same(Download(r2, s_shape), Download(r3, s_shape))));
    std::printf("layer norm: the first run's results untouched: %s\n",
                YesNo(Same(Download(y1, x_shape), first)));
    CHECK(aclDestroyAclOpExecutor(ex));

    // an optional input given as NULL keeps its index, and has no address to update
    aclOpExecutor *nw = nullptr;
    CHECK(aclnnLayerNormGetWorkspaceSize(tx, norm, nullptr, tb, 1e-5, ty, tm, tr, &ws_size,
                                         &nw));
    CHECK(aclSetAclOpExecutorRepeatable(nw));
    Refused("an optional input given as NULL", aclSetInputTensorAddr(nw, 1, tw, w), true);
    CHECK(aclSetInputTensorAddr(nw, 2, tb, b));   // bias: index 2 all the same
    CHECK(aclDestroyAclOpExecutor(nw));
    CHECK(aclDestroyIntArray(norm));
}

// ---- aclnnLayerNormBackward -----------------------------------------------------------------

void LayerNormBackwardCase() {
    const std::vector<int64_t> x_shape = {8, 32}, p_shape = {32}, s_shape = {8, 1};
    const int64_t ns[] = {32};
    const bool mask_values[] = {true, true, true};
    aclIntArray *norm = aclCreateIntArray(ns, 1);
    aclBoolArray *mask = aclCreateBoolArray(mask_values, 3);
    std::vector<float> mean(8, 0.1f), rstd(8, 1.5f);
    void *mean_d = Upload(mean), *rstd_d = Upload(rstd), *w = Upload(Data(32, 1, 3));
    void *dy1 = Upload(Data(256, 1, 0)), *x1 = Upload(Data(256, 2, 1));
    void *dx1 = Zeros(x_shape), *dw1 = Zeros(p_shape), *db1 = Zeros(p_shape);
    void *dy2 = Upload(Data(256, 3, 2)), *x2 = Upload(Data(256, 4, 3));
    void *dx2 = Zeros(x_shape), *dw2 = Zeros(p_shape), *db2 = Zeros(p_shape);
    aclTensor *tdy = Tensor(x_shape, dy1), *tx = Tensor(x_shape, x1), *tm = Tensor(s_shape, mean_d),
              *tr = Tensor(s_shape, rstd_d), *tw = Tensor(p_shape, w);
    aclTensor *tdx = Tensor(x_shape, dx1), *tdw = Tensor(p_shape, dw1),
              *tdb = Tensor(p_shape, db1);
    uint64_t ws_size = 0;
    aclOpExecutor *ex = nullptr;
    CHECK(aclnnLayerNormBackwardGetWorkspaceSize(tdy, tx, norm, tm, tr, tw, nullptr, mask, tdx,
                                                 tdw, tdb, &ws_size, &ex));
    CHECK(aclSetAclOpExecutorRepeatable(ex));
    void *ws = Workspace(ws_size);
    Run(aclnnLayerNormBackward, ex, ws, ws_size);
    std::vector<float> first = Download(dx1, x_shape);
    // gradOut, input are inputs 0 and 1; biasOptional (NULL) is input 5; outputs follow
    CHECK(aclSetInputTensorAddr(ex, 0, tdy, dy2));
    CHECK(aclSetInputTensorAddr(ex, 1, tx, x2));
    CHECK(aclSetTensorAddr(ex, 6, tdx, dx2));
    CHECK(AclSetOutputTensorAddr(ex, 1, tdw, dw2));
    CHECK(aclSetOutputTensorAddr(ex, 2, tdb, db2));
    Run(aclnnLayerNormBackward, ex, ws, ws_size);

    void *dy3 = Upload(Data(256, 3, 2)), *x3 = Upload(Data(256, 4, 3));
    void *dx3 = Zeros(x_shape), *dw3 = Zeros(p_shape), *db3 = Zeros(p_shape);
    aclTensor *tdy3 = Tensor(x_shape, dy3), *tx3 = Tensor(x_shape, x3),
              *tdx3 = Tensor(x_shape, dx3), *tdw3 = Tensor(p_shape, dw3),
              *tdb3 = Tensor(p_shape, db3);
    aclOpExecutor *once = nullptr;
    CHECK(aclnnLayerNormBackwardGetWorkspaceSize(tdy3, tx3, norm, tm, tr, tw, nullptr, mask,
                                                 tdx3, tdw3, tdb3, &ws_size, &once));
    Run(aclnnLayerNormBackward, once, Workspace(ws_size), ws_size);
    std::printf("layer norm backward: re-pointed run matches a fresh one: %s\n",
                YesNo(Same(Download(dx2, x_shape), Download(dx3, x_shape)) &&
                      Same(Download(dw2, p_shape), Download(dw3, p_shape)) &&
                      Same(Download(db2, p_shape), Download(db3, p_shape))));
    std::printf("layer norm backward: the first run's results untouched: %s\n",
                YesNo(Same(Download(dx1, x_shape), first)));
    Refused("biasOptional given as NULL", aclSetInputTensorAddr(ex, 5, tw, w), true);
    Refused("input index past the inputs", aclSetInputTensorAddr(ex, 6, tdx, dx1), true);
    CHECK(aclDestroyAclOpExecutor(ex));
    CHECK(aclDestroyIntArray(norm));
    CHECK(aclDestroyBoolArray(mask));
}

}  // namespace

int main() {
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtCreateStream(&g_stream));
    AddCase();
    LayerNormCase();
    LayerNormBackwardCase();
    for (const aclTensor *t : g_tensors) CHECK(aclDestroyTensor(t));
    for (void *p : g_buffers) CHECK(aclrtFree(p));
    CHECK(aclrtDestroyStream(g_stream));
#ifdef ACL_PY_EMULATOR
    aclemuLiveObjects live{};
    CHECK(aclemuGetLiveObjects(&live));
    std::printf("live: %lld tensors, %lld lists, %lld executors, %lld scalars, %lld arrays, "
                "%lld device allocations\n",
                static_cast<long long>(live.tensors), static_cast<long long>(live.tensor_lists),
                static_cast<long long>(live.executors), static_cast<long long>(live.scalars),
                static_cast<long long>(live.int_arrays + live.bool_arrays),
                static_cast<long long>(live.device_allocations));
#endif
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("done\n");
    return 0;
}
