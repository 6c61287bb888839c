// The vendor's aclnnLayerNormBackward C++ sample, rewritten by acl-py from its documented call
// sequence (shared/CANN_ABI.md, last section), so the test suite can check that the Python
// ports print byte for byte what a C++ program prints against the same libraries.
//
// Build (tests/test_samples.py does this against the emulator prefix; on a CANN machine use
// $ASCEND_HOME_PATH instead of P):
//   g++ layer_norm_backward_sample.cpp -I$P/include -L$P/lib64 -Wl,-rpath,$P/lib64
//       -lascendcl -lnnopbase -lopapi
//
// Every status is checked. On a failure the program names the call, its status and the
// runtime's message on stderr, still releases everything it created (in the sample's order),
// and exits with 1.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_layer_norm_backward.h"

namespace {

int Fail(const char *call, long status) {
  const char *msg = aclGetRecentErrMsg();
  std::fprintf(stderr, "%s failed: status %ld (%s)\n", call, status,
               (msg != nullptr && msg[0] != '\0') ? msg : "no message");
  return 1;
}

#define CHECK_STATUS(call)                                   \
  do {                                                       \
    long status_ = static_cast<long>(call);                  \
    if (status_ != 0) return Fail(#call, status_);           \
  } while (0)

#define CHECK_NOT_NULL(ptr, what)                            \
  do {                                                       \
    if ((ptr) == nullptr) return Fail(what, -1);             \
  } while (0)

// Everything the sample creates, so that the release step runs on the error paths too.
struct Resources {
  bool initialized = false;
  bool deviceSet = false;
  int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  std::vector<void *> buffers;        // device buffers of the tensors, in creation order
  std::vector<aclTensor *> tensors;   // their aclTensors
  aclIntArray *normArray = nullptr;
  aclBoolArray *mask = nullptr;
  aclOpExecutor *executor = nullptr;  // set until phase two is called (then the library's)
  void *workspace = nullptr;
};

int64_t ShapeSize(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The sample's CreateAclTensor: device buffer (HUGE_FIRST), host data copied over, then a
// contiguous ND tensor (strides in elements, offset 0, storage dims = view dims).
int CreateAclTensor(Resources *res, const std::vector<float> &hostData,
                    const std::vector<int64_t> &shape, void **deviceAddr, aclDataType dataType,
                    aclTensor **tensor) {
  size_t size = static_cast<size_t>(ShapeSize(shape)) * sizeof(float);
  CHECK_STATUS(aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST));
  res->buffers.push_back(*deviceAddr);
  CHECK_STATUS(aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE));
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0,
                            ACL_FORMAT_ND, shape.data(), shape.size(), *deviceAddr);
  CHECK_NOT_NULL(*tensor, "aclCreateTensor");
  res->tensors.push_back(*tensor);
  return 0;
}

int CopyBack(const char *label, const std::vector<int64_t> &shape, void *deviceAddr) {
  int64_t n = ShapeSize(shape);
  std::vector<float> result(static_cast<size_t>(n), 0.0f);
  size_t size = result.size() * sizeof(float);
  CHECK_STATUS(aclrtMemcpy(result.data(), size, deviceAddr, size, ACL_MEMCPY_DEVICE_TO_HOST));
  for (int64_t i = 0; i < n; i++) {
    std::printf("%s result[%ld] is: %f\n", label, static_cast<long>(i),
                static_cast<double>(result[static_cast<size_t>(i)]));
  }
  return 0;
}

int Run(Resources *res) {
  // 1. Init: aclInit, aclrtSetDevice, aclrtCreateStream.
  CHECK_STATUS(aclInit(nullptr));
  res->initialized = true;
  CHECK_STATUS(aclrtSetDevice(res->deviceId));
  res->deviceSet = true;
  CHECK_STATUS(aclrtCreateStream(&res->stream));

  // 2. Data: the sample's shapes and values, all FLOAT.
  std::vector<int64_t> dyShape = {2, 2}, xShape = {2, 2};
  std::vector<int64_t> meanShape = {2, 1}, rstdShape = {2, 1};
  std::vector<int64_t> weightShape = {2}, biasShape = {2};
  std::vector<int64_t> dxShape = {2, 2}, dwShape = {2}, dbShape = {2};
  std::vector<float> dyHost = {2, 3, 4, 5}, xHost = {2, 3, 4, 5};
  std::vector<float> meanHost = {2, 3}, rstdHost = {4, 5};
  std::vector<float> weightHost = {1, 1}, biasHost = {0, 0};
  std::vector<float> dxHost = {0, 0, 0, 0}, dwHost = {0, 0}, dbHost = {0, 0};
  std::vector<int64_t> normShape = {2};
  bool maskData[3] = {true, true, true};

  // 3. Tensors: one device buffer + aclTensor each, outputs included.
  void *dyAddr = nullptr, *xAddr = nullptr, *meanAddr = nullptr, *rstdAddr = nullptr;
  void *weightAddr = nullptr, *biasAddr = nullptr;
  void *dxAddr = nullptr, *dwAddr = nullptr, *dbAddr = nullptr;
  aclTensor *dy = nullptr, *x = nullptr, *mean = nullptr, *rstd = nullptr;
  aclTensor *weight = nullptr, *bias = nullptr, *dx = nullptr, *dw = nullptr, *db = nullptr;
  if (CreateAclTensor(res, dyHost, dyShape, &dyAddr, ACL_FLOAT, &dy) != 0) return 1;
  if (CreateAclTensor(res, xHost, xShape, &xAddr, ACL_FLOAT, &x) != 0) return 1;
  if (CreateAclTensor(res, meanHost, meanShape, &meanAddr, ACL_FLOAT, &mean) != 0) return 1;
  if (CreateAclTensor(res, rstdHost, rstdShape, &rstdAddr, ACL_FLOAT, &rstd) != 0) return 1;
  if (CreateAclTensor(res, weightHost, weightShape, &weightAddr, ACL_FLOAT, &weight) != 0) {
    return 1;
  }
  if (CreateAclTensor(res, biasHost, biasShape, &biasAddr, ACL_FLOAT, &bias) != 0) return 1;
  if (CreateAclTensor(res, dxHost, dxShape, &dxAddr, ACL_FLOAT, &dx) != 0) return 1;
  if (CreateAclTensor(res, dwHost, dwShape, &dwAddr, ACL_FLOAT, &dw) != 0) return 1;
  if (CreateAclTensor(res, dbHost, dbShape, &dbAddr, ACL_FLOAT, &db) != 0) return 1;

  // 4. Arrays: normalizedShape and outputMask.
  res->normArray = aclCreateIntArray(normShape.data(), normShape.size());
  CHECK_NOT_NULL(res->normArray, "aclCreateIntArray");
  res->mask = aclCreateBoolArray(maskData, 3);
  CHECK_NOT_NULL(res->mask, "aclCreateBoolArray");

  // 5. Phase one: workspace size and executor.
  uint64_t workspaceSize = 0;
  CHECK_STATUS(aclnnLayerNormBackwardGetWorkspaceSize(dy, x, res->normArray, mean, rstd, weight,
                                                      bias, res->mask, dx, dw, db,
                                                      &workspaceSize, &res->executor));

  // 6. Workspace, only when phase one asks for one.
  if (workspaceSize > 0) {
    CHECK_STATUS(aclrtMalloc(&res->workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
  }

  // 7. Phase two: enqueue on the stream. From this call on the single-use executor is the
  // library's: it releases it whether phase two succeeds or fails (CANN's
  // CommonOpExecutorRun), so it is never destroyed here after the call.
  aclOpExecutor *executor = res->executor;
  res->executor = nullptr;
  CHECK_STATUS(aclnnLayerNormBackward(res->workspace, workspaceSize, executor, res->stream));

  // 8. Wait for the stream.
  CHECK_STATUS(aclrtSynchronizeStream(res->stream));

  // 9. Copy the three outputs back and print them.
  if (CopyBack("out", dxShape, dxAddr) != 0) return 1;
  if (CopyBack("dw", dwShape, dwAddr) != 0) return 1;
  if (CopyBack("db", dbShape, dbAddr) != 0) return 1;
  return 0;
}

// 10. Release: tensors, arrays, device buffers, workspace, stream, device, runtime; whatever
// exists, in that order. Every status is checked; returns 1 if any release failed.
int Release(Resources *res) {
  int rc = 0;
#define RELEASE(call)                                        \
  do {                                                       \
    long status_ = static_cast<long>(call);                  \
    if (status_ != 0) rc = Fail(#call, status_);             \
  } while (0)
  if (res->executor != nullptr) RELEASE(aclDestroyAclOpExecutor(res->executor));
  for (aclTensor *t : res->tensors) RELEASE(aclDestroyTensor(t));
  if (res->normArray != nullptr) RELEASE(aclDestroyIntArray(res->normArray));
  if (res->mask != nullptr) RELEASE(aclDestroyBoolArray(res->mask));
  for (void *p : res->buffers) RELEASE(aclrtFree(p));
  if (res->workspace != nullptr) RELEASE(aclrtFree(res->workspace));
  if (res->stream != nullptr) RELEASE(aclrtDestroyStream(res->stream));
  if (res->deviceSet) RELEASE(aclrtResetDevice(res->deviceId));
  if (res->initialized) RELEASE(aclFinalize());
#undef RELEASE
  return rc;
}

}  // namespace

int main() {
  Resources res;
  int rc = Run(&res);
  int releaseRc = Release(&res);
  return (rc != 0 || releaseRc != 0) ? 1 : 0;
}

