"""The vendor's aclnnLayerNormBackward C++ sample, ported one call for one through acl-py's raw
cffi layer (``acl_py.raw``), for people who port C code line by line.

Each block names the C++ step it ports (tests/c/layer_norm_backward_sample.cpp is the C++
program). Nothing here is managed for you: as in C, every status is checked by hand and every
object is released explicitly. For the Pythonic version see samples/layer_norm_backward.py.

Prints exactly the sample's eight lines:
    out result[0] is: -2.000000
    ...
    db result[1] is: 8.000000
"""
from __future__ import annotations

import sys

from acl_py.raw import ffi, lib

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnLayerNormBackward",
    "example": "hicann/ops-nn norm/layer_norm_grad_v3/examples/test_aclnn_layer_norm_grad_v3.cpp",
    "via": "raw cffi calls, one for one",
}


class SampleError(RuntimeError):
    pass


def check(status: int, call: str) -> None:
    """CHECK_RET: a non-zero status stops the sample with the call, status and message."""
    if status != 0:
        msg = lib.aclGetRecentErrMsg()
        text = ffi.string(msg).decode(errors="replace") if msg != ffi.NULL else ""
        raise SampleError(f"{call} failed: status {status} ({text or 'no message'})")


def check_not_null(ptr, call: str):
    if ptr == ffi.NULL:
        check(-1, call)
    return ptr


def shape_size(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class Resources:
    """Everything the sample creates, so that the release step runs on the error paths too
    (as in the C++ program)."""

    def __init__(self):
        self.initialized = False
        self.device_set = False
        self.device_id = 0
        self.stream = ffi.NULL
        self.buffers = []       # device buffers of the tensors, in creation order
        self.tensors = []       # their aclTensors
        self.norm_array = ffi.NULL
        self.mask = ffi.NULL
        self.executor = ffi.NULL  # set until phase two is called (then the library's)
        self.workspace = ffi.NULL


def create_acl_tensor(res: Resources, host_data: list[float], shape: list[int], data_type: int):
    """CreateAclTensor: aclrtMalloc (HUGE_FIRST) + aclrtMemcpy H2D + aclCreateTensor with
    contiguous strides (in elements), offset 0, ACL_FORMAT_ND, storage dims = view dims."""
    size = shape_size(shape) * ffi.sizeof("float")
    device_addr = ffi.new("void **")
    check(lib.aclrtMalloc(device_addr, size, lib.ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")
    res.buffers.append(device_addr[0])
    host = ffi.new("float[]", host_data)
    check(lib.aclrtMemcpy(device_addr[0], size, host, size, lib.ACL_MEMCPY_HOST_TO_DEVICE),
          "aclrtMemcpy")
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = shape[i + 1] * strides[i + 1]
    dims = ffi.new("int64_t[]", shape)
    tensor = lib.aclCreateTensor(dims, len(shape), data_type, ffi.new("int64_t[]", strides), 0,
                                 lib.ACL_FORMAT_ND, dims, len(shape), device_addr[0])
    check_not_null(tensor, "aclCreateTensor")
    res.tensors.append(tensor)
    return device_addr[0], tensor


def copy_back(label: str, shape: list[int], device_addr) -> None:
    """aclrtMemcpy D2H, then the sample's LOG_PRINT("%s result[%ld] is: %f")."""
    n = shape_size(shape)
    size = n * ffi.sizeof("float")
    result = ffi.new("float[]", n)
    check(lib.aclrtMemcpy(result, size, device_addr, size, lib.ACL_MEMCPY_DEVICE_TO_HOST),
          "aclrtMemcpy")
    for i in range(n):
        print("%s result[%d] is: %f" % (label, i, result[i]))


def run(res: Resources) -> None:
    # 1. Init: aclInit(NULL), aclrtSetDevice(0), aclrtCreateStream.
    check(lib.aclInit(ffi.NULL), "aclInit")
    res.initialized = True
    check(lib.aclrtSetDevice(res.device_id), "aclrtSetDevice")
    res.device_set = True
    stream_p = ffi.new("aclrtStream *")
    check(lib.aclrtCreateStream(stream_p), "aclrtCreateStream")
    res.stream = stream_p[0]

    # 2. Data: the sample's shapes and values, all FLOAT.
    dy_shape, x_shape = [2, 2], [2, 2]
    mean_shape, rstd_shape = [2, 1], [2, 1]
    weight_shape, bias_shape = [2], [2]
    dx_shape, dw_shape, db_shape = [2, 2], [2], [2]
    norm_shape = [2]

    # 3. Tensors: one device buffer + aclTensor each, outputs included.
    _, dy = create_acl_tensor(res, [2, 3, 4, 5], dy_shape, lib.ACL_FLOAT)
    _, x = create_acl_tensor(res, [2, 3, 4, 5], x_shape, lib.ACL_FLOAT)
    _, mean = create_acl_tensor(res, [2, 3], mean_shape, lib.ACL_FLOAT)
    _, rstd = create_acl_tensor(res, [4, 5], rstd_shape, lib.ACL_FLOAT)
    _, weight = create_acl_tensor(res, [1, 1], weight_shape, lib.ACL_FLOAT)
    _, bias = create_acl_tensor(res, [0, 0], bias_shape, lib.ACL_FLOAT)
    dx_addr, dx = create_acl_tensor(res, [0, 0, 0, 0], dx_shape, lib.ACL_FLOAT)
    dw_addr, dw = create_acl_tensor(res, [0, 0], dw_shape, lib.ACL_FLOAT)
    db_addr, db = create_acl_tensor(res, [0, 0], db_shape, lib.ACL_FLOAT)

    # 4. Arrays: aclCreateIntArray(normalizedShape), aclCreateBoolArray(outputMask).
    res.norm_array = check_not_null(
        lib.aclCreateIntArray(ffi.new("int64_t[]", norm_shape), len(norm_shape)),
        "aclCreateIntArray")
    res.mask = check_not_null(lib.aclCreateBoolArray(ffi.new("bool[]", [True, True, True]), 3),
                              "aclCreateBoolArray")

    # 5. Phase one: aclnnLayerNormBackwardGetWorkspaceSize.
    workspace_size_p = ffi.new("uint64_t *")
    executor_p = ffi.new("aclOpExecutor **")
    check(lib.aclnnLayerNormBackwardGetWorkspaceSize(
        dy, x, res.norm_array, mean, rstd, weight, bias, res.mask, dx, dw, db,
        workspace_size_p, executor_p), "aclnnLayerNormBackwardGetWorkspaceSize")
    res.executor = executor_p[0]
    workspace_size = workspace_size_p[0]

    # 6. Workspace: aclrtMalloc only when phase one asks for one.
    if workspace_size > 0:
        workspace_p = ffi.new("void **")
        check(lib.aclrtMalloc(workspace_p, workspace_size, lib.ACL_MEM_MALLOC_HUGE_FIRST),
              "aclrtMalloc")
        res.workspace = workspace_p[0]

    # 7. Phase two: aclnnLayerNormBackward. From this call on the single-use executor is the
    # library's: it releases it whether phase two succeeds or fails (CANN's
    # CommonOpExecutorRun), so it is never destroyed here after the call.
    executor, res.executor = res.executor, ffi.NULL
    check(lib.aclnnLayerNormBackward(res.workspace, workspace_size, executor, res.stream),
          "aclnnLayerNormBackward")

    # 8. aclrtSynchronizeStream.
    check(lib.aclrtSynchronizeStream(res.stream), "aclrtSynchronizeStream")

    # 9. aclrtMemcpy D2H of each output, and print.
    copy_back("out", dx_shape, dx_addr)
    copy_back("dw", dw_shape, dw_addr)
    copy_back("db", db_shape, db_addr)


def release(res: Resources) -> list[str]:
    """10. Release whatever exists, in the sample's order: aclDestroyTensor each,
    aclDestroyIntArray, aclDestroyBoolArray, aclrtFree each buffer and the workspace,
    aclrtDestroyStream, aclrtResetDevice(0), aclFinalize(). Returns the failures."""
    failures = []

    def attempt(status, call):
        try:
            check(status, call)
        except SampleError as e:
            failures.append(str(e))

    if res.executor != ffi.NULL:
        attempt(lib.aclDestroyAclOpExecutor(res.executor), "aclDestroyAclOpExecutor")
    for t in res.tensors:
        attempt(lib.aclDestroyTensor(t), "aclDestroyTensor")
    if res.norm_array != ffi.NULL:
        attempt(lib.aclDestroyIntArray(res.norm_array), "aclDestroyIntArray")
    if res.mask != ffi.NULL:
        attempt(lib.aclDestroyBoolArray(res.mask), "aclDestroyBoolArray")
    for p in res.buffers:
        attempt(lib.aclrtFree(p), "aclrtFree")
    if res.workspace != ffi.NULL:
        attempt(lib.aclrtFree(res.workspace), "aclrtFree")
    if res.stream != ffi.NULL:
        attempt(lib.aclrtDestroyStream(res.stream), "aclrtDestroyStream")
    if res.device_set:
        attempt(lib.aclrtResetDevice(res.device_id), "aclrtResetDevice")
    if res.initialized:
        attempt(lib.aclFinalize(), "aclFinalize")
    return failures


def main() -> int:
    res = Resources()
    errors = []
    try:
        run(res)
    except SampleError as e:
        errors.append(str(e))
    errors += release(res)
    for e in errors:
        print(f"layer_norm_backward_raw: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
