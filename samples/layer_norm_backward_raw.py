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


def create_acl_tensor(host_data: list[float], shape: list[int], data_type: int):
    """CreateAclTensor: aclrtMalloc (HUGE_FIRST) + aclrtMemcpy H2D + aclCreateTensor with
    contiguous strides (in elements), offset 0, ACL_FORMAT_ND, storage dims = view dims."""
    size = shape_size(shape) * ffi.sizeof("float")
    device_addr = ffi.new("void **")
    check(lib.aclrtMalloc(device_addr, size, lib.ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")
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


def main() -> int:
    # 1. Init: aclInit(NULL), aclrtSetDevice(0), aclrtCreateStream.
    device_id = 0
    check(lib.aclInit(ffi.NULL), "aclInit")
    check(lib.aclrtSetDevice(device_id), "aclrtSetDevice")
    stream_p = ffi.new("aclrtStream *")
    check(lib.aclrtCreateStream(stream_p), "aclrtCreateStream")
    stream = stream_p[0]

    # 2. Data: the sample's shapes and values, all FLOAT.
    dy_shape, x_shape = [2, 2], [2, 2]
    mean_shape, rstd_shape = [2, 1], [2, 1]
    weight_shape, bias_shape = [2], [2]
    dx_shape, dw_shape, db_shape = [2, 2], [2], [2]
    norm_shape = [2]

    # 3. Tensors: one device buffer + aclTensor each, outputs included.
    dy_addr, dy = create_acl_tensor([2, 3, 4, 5], dy_shape, lib.ACL_FLOAT)
    x_addr, x = create_acl_tensor([2, 3, 4, 5], x_shape, lib.ACL_FLOAT)
    mean_addr, mean = create_acl_tensor([2, 3], mean_shape, lib.ACL_FLOAT)
    rstd_addr, rstd = create_acl_tensor([4, 5], rstd_shape, lib.ACL_FLOAT)
    weight_addr, weight = create_acl_tensor([1, 1], weight_shape, lib.ACL_FLOAT)
    bias_addr, bias = create_acl_tensor([0, 0], bias_shape, lib.ACL_FLOAT)
    dx_addr, dx = create_acl_tensor([0, 0, 0, 0], dx_shape, lib.ACL_FLOAT)
    dw_addr, dw = create_acl_tensor([0, 0], dw_shape, lib.ACL_FLOAT)
    db_addr, db = create_acl_tensor([0, 0], db_shape, lib.ACL_FLOAT)

    # 4. Arrays: aclCreateIntArray(normalizedShape), aclCreateBoolArray(outputMask).
    norm_array = check_not_null(
        lib.aclCreateIntArray(ffi.new("int64_t[]", norm_shape), len(norm_shape)),
        "aclCreateIntArray")
    mask = check_not_null(lib.aclCreateBoolArray(ffi.new("bool[]", [True, True, True]), 3),
                          "aclCreateBoolArray")

    # 5. Phase one: aclnnLayerNormBackwardGetWorkspaceSize.
    workspace_size_p = ffi.new("uint64_t *")
    executor_p = ffi.new("aclOpExecutor **")
    check(lib.aclnnLayerNormBackwardGetWorkspaceSize(
        dy, x, norm_array, mean, rstd, weight, bias, mask, dx, dw, db,
        workspace_size_p, executor_p), "aclnnLayerNormBackwardGetWorkspaceSize")
    workspace_size = workspace_size_p[0]

    # 6. Workspace: aclrtMalloc only when phase one asks for one.
    workspace_addr = ffi.NULL
    if workspace_size > 0:
        workspace_p = ffi.new("void **")
        check(lib.aclrtMalloc(workspace_p, workspace_size, lib.ACL_MEM_MALLOC_HUGE_FIRST),
              "aclrtMalloc")
        workspace_addr = workspace_p[0]

    # 7. Phase two: aclnnLayerNormBackward (the library releases the single-use executor).
    check(lib.aclnnLayerNormBackward(workspace_addr, workspace_size, executor_p[0], stream),
          "aclnnLayerNormBackward")

    # 8. aclrtSynchronizeStream.
    check(lib.aclrtSynchronizeStream(stream), "aclrtSynchronizeStream")

    # 9. aclrtMemcpy D2H of each output, and print.
    copy_back("out", dx_shape, dx_addr)
    copy_back("dw", dw_shape, dw_addr)
    copy_back("db", db_shape, db_addr)

    # 10. Release: aclDestroyTensor each, aclDestroyIntArray, aclDestroyBoolArray, aclrtFree each
    # buffer and the workspace, aclrtDestroyStream, aclrtResetDevice(0), aclFinalize().
    for t in (dy, x, mean, rstd, weight, bias, dx, dw, db):
        check(lib.aclDestroyTensor(t), "aclDestroyTensor")
    check(lib.aclDestroyIntArray(norm_array), "aclDestroyIntArray")
    check(lib.aclDestroyBoolArray(mask), "aclDestroyBoolArray")
    for p in (dy_addr, x_addr, mean_addr, rstd_addr, weight_addr, bias_addr,
              dx_addr, dw_addr, db_addr):
        check(lib.aclrtFree(p), "aclrtFree")
    if workspace_size > 0:
        check(lib.aclrtFree(workspace_addr), "aclrtFree")
    check(lib.aclrtDestroyStream(stream), "aclrtDestroyStream")
    check(lib.aclrtResetDevice(device_id), "aclrtResetDevice")
    check(lib.aclFinalize(), "aclFinalize")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SampleError as e:
        print(f"layer_norm_backward_raw: {e}", file=sys.stderr)
        sys.exit(1)
