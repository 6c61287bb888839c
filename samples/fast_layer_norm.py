"""The vendor's aclnnFastLayerNorm C++ example (hicann/ops-nn norm/layer_norm_v4/examples/
test_aclnn_fast_layer_norm.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes x [1, 2, 32], all 2.0, over its last dim with weight 1, bias 0 and eps 1e-5, and
prints out (64 values), then mean and rstd (2 each). acl-py checks every status: a failure
raises a typed ``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    out result[0] is: 0.000000
    ...
    rstd result[1] is: 316.227783
"""
from __future__ import annotations

import acl_py
from acl_py.ops import FAST_LAYER_NORM

from example_helpers import WorkspaceMalloc, copy_to_device, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnFastLayerNorm",
    "example": "hicann/ops-nn norm/layer_norm_v4/examples/test_aclnn_fast_layer_norm.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensorMem per tensor (aclrtMalloc + aclrtMemcpy H2D), all float:
        # x [1, 2, 32] of 2.0; weight [32] of 1.0 and bias [32] of 0.0; out [1, 2, 32] and
        # mean/rstd [1, 2, 1], all 0.0.
        x = copy_to_device([2.0] * 64, (1, 2, 32))
        weight = copy_to_device([1.0] * 32, (32,))
        bias = copy_to_device([0.0] * 32, (32,))
        out = copy_to_device([0.0] * 64, (1, 2, 32))
        mean = copy_to_device([0.0] * 2, (1, 2, 1))
        rstd = copy_to_device([0.0] * 2, (1, 2, 1))
        eps = 1e-5

        # 2. Then the descriptors, in the example's order: aclCreateTensor(x),
        # aclCreateIntArray(normShape = {32}), aclCreateTensor of weight, bias, out, mean, rstd
        # (ACL_FLOAT, ND, contiguous; reading .handle creates the aclTensor).
        x.handle
        normalized_shape = acl_py.IntArray([32])
        for tensor in (weight, bias, out, mean, rstd):
            tensor.handle

        # 3. aclnnFastLayerNormGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnFastLayerNorm (phase two) on the stream, after which
        # the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        FAST_LAYER_NORM.launch((x, normalized_shape, weight, bias, eps, out, mean, rstd),
                               device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of out, mean and rstd in turn, each printed element by element.
        print_result("out result[%d] is: %f", out)
        print_result("mean result[%d] is: %f", mean)
        print_result("rstd result[%d] is: %f", rstd)

        # 6. aclDestroyTensor / aclDestroyIntArray in the example's order, and 7. aclrtFree
        # of every tensor's memory (a tensor's close() does both), aclrtFree of the
        # workspace, aclrtDestroyStream.
        release(x, normalized_shape, weight, bias, out, mean, rstd, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
