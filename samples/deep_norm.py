"""The vendor's aclnnDeepNorm C++ example (hicann/ops-nn norm/deep_norm/examples/
test_aclnn_deep_norm.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes h = x * alpha + gx over the last dim of [3, 1, 4] tensors (x = 1..12, gx = rows
of 2s, 4s and 6s ending in 4, 6, 8), with beta and gamma [0, 1, 2, 3], alpha 0.3 and epsilon
1e-6 (both floats), into meanOut and rstdOut ([3, 1, 1]) and yOut ([3, 1, 4]), which start
as the example's host data (0, 1, 2 and 1..12); then it prints mean, rstd and y, each after
a "== pdx output" header. Its progress line and headers end with no newline, so each header
runs into the first result line after it, as the C++ program prints them. acl-py checks
every status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and the
runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    (an empty line)
    Use aclnnDeepNorm Port.== pdx outputresult[0] is: 3.250000
    result[1] is: 6.950000
    ...
    result[11] is: 5.487685
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import DEEP_NORM

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

SHAPE, STAT_SHAPE, PARAM_SHAPE = (3, 1, 4), (3, 1, 1), (4,)

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnDeepNorm",
    "example": "hicann/ops-nn norm/deep_norm/examples/test_aclnn_deep_norm.cpp",
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

        # 2. The example's arguments: alpha and epsilon are floats (0.3 and 1e-6 rounded to
        # float, then widened to the doubles phase one takes). CreateAclTensor per tensor
        # (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), all float, in the example's
        # order: x, gx, beta, gamma, then meanOut, rstdOut and yOut with their host data.
        alpha = float(np.float32(0.3))
        epsilon = float(np.float32(1e-6))
        x = create_acl_tensor(range(1, 13), SHAPE)
        gx = create_acl_tensor([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8], SHAPE)
        beta = create_acl_tensor([0, 1, 2, 3], PARAM_SHAPE)
        gamma = create_acl_tensor([0, 1, 2, 3], PARAM_SHAPE)
        mean = create_acl_tensor([0, 1, 2], STAT_SHAPE)
        rstd = create_acl_tensor([0, 1, 2], STAT_SHAPE)
        y = create_acl_tensor(range(1, 13), SHAPE)

        # 3. aclnnDeepNormGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnDeepNorm (phase two) on the stream, after which the
        # library releases the single-use executor.
        say("\nUse aclnnDeepNorm Port.")
        workspace = WorkspaceMalloc()
        DEEP_NORM.launch((x, gx, beta, gamma, alpha, epsilon, mean, rstd, y),
                         device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of each output, printed element by element after its header:
        # mean, rstd, y.
        for tensor in (mean, rstd, y):
            say("== pdx output")
            print_result("result[%d] is: %f", tensor)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both; the example frees gamma's memory before beta's), aclrtFree of the workspace,
        # aclrtDestroyStream.
        release(x, gx, gamma, beta, mean, rstd, y, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
