"""The vendor's aclnnInstanceNorm C++ example (hicann/ops-nn norm/instance_norm_v3/examples/
arch20/test_aclnn_instance_norm.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes x = [1, 8, 4, 4] of 0.77 (NCHW, eps 1e-5) with gamma 1.5 and beta 0.5 per channel
and prints y's 128 values, then mean's and variance's 8 (under the header "rstd output", the
example's own wording: the operator's third output is the variance). acl-py checks every
status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and the
runtime's message.

The operator runs on the Atlas inference series only (arch20: Ascend 310P): ``acl-py sample``
runs this port as Ascend310P3 on the emulator (its declaration's "soc"); run directly, set
``ACL_EMU_SOC=Ascend310P3`` (the default part refuses it in phase one, 161002, as the
device's op_api does). Runs on the emulator by default, on the device where CANN is
installed (``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints
on the same part::

    Use aclnnInstanceNorm Non-Bias Port.==== InstanceNorm non-bias: y outputresult[0] is: ...
    result[1] is: 0.500000
    ...
"""
from __future__ import annotations

import acl_py
from acl_py.ops import INSTANCE_NORM

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

N, C, H, W = 1, 8, 4, 4

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnInstanceNorm",
    "example": "hicann/ops-nn norm/instance_norm_v3/examples/arch20/"
               "test_aclnn_instance_norm.cpp",
    "soc": "Ascend310P3",
}


def say(text):
    """LOG_PRINT (printf) of a line the example ends with no newline."""
    print(text, end="")


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: x [1, 8, 4, 4] (0.77), gamma and beta [8] (1.5,
        # 0.5), y [1, 8, 4, 4], mean and variance [1, 8, 1, 1] (zeros); dataFormat "NCHW",
        # eps 1e-5 (a double).
        x = create_acl_tensor([0.77] * (N * C * H * W), (N, C, H, W))
        gamma = create_acl_tensor([1.5] * C, (C,))
        beta = create_acl_tensor([0.5] * C, (C,))
        y = create_acl_tensor([0] * (N * C * H * W), (N, C, H, W))
        mean = create_acl_tensor([0] * (N * C), (N, C, 1, 1))
        variance = create_acl_tensor([0] * (N * C), (N, C, 1, 1))
        data_format, eps = "NCHW", 1e-5

        # 3. aclnnInstanceNormGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnInstanceNorm (phase two) on the stream, after which
        # the library releases the single-use executor.
        say("\nUse aclnnInstanceNorm Non-Bias Port.")
        workspace = WorkspaceMalloc()
        INSTANCE_NORM.launch((x, gamma, beta, data_format, eps, y, mean, variance),
                             device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of y, mean and variance, each printed element by element after
        # its header.
        for name, tensor in (("y", y), ("mean", mean), ("rstd", variance)):
            say(f"==== InstanceNorm non-bias: {name} output")
            print_result("result[%d] is: %f", tensor)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspace, aclrtDestroyStream.
        release(x, gamma, beta, y, mean, variance, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
