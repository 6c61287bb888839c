"""The vendor's aclnnInplaceAddRmsNorm C++ example (hicann/ops-nn
norm/inplace_add_rms_norm/examples/test_aclnn_inplace_add_rms_norm.cpp), ported to acl-py's
objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
adds x1Ref and x2Ref ([2, 16], each row 0..7 twice), normalizes the sum with gamma [16] (0..7
twice) and epsilon 1e-6, the device writing y into x1Ref and the sum into x2Ref; it prints
x1Ref's 32 values, then x2Ref's (rstd is written too, not printed). acl-py checks every
status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and the
runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    x1Ref result[0] is: 0.000000
    x1Ref result[1] is: 0.239046
    ...
    x1Ref result[31] is: 11.713241
    x2Ref result[0] is: 0.000000
    ...
    x2Ref result[31] is: 14.000000
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import INPLACE_ADD_RMS_NORM

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnInplaceAddRmsNorm",
    "example": ("hicann/ops-nn norm/inplace_add_rms_norm/examples/"
                "test_aclnn_inplace_add_rms_norm.cpp"),
}

ROW = [0, 1, 2, 3, 4, 5, 6, 7] * 2


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: x1Ref and x2Ref [2, 16], gamma [16], rstd [2, 1]
        # (starting as 1, 2). The example's epsilon is a float: 1e-6 rounded to float, then
        # widened to the double phase one takes.
        x1_ref = create_acl_tensor(ROW * 2, (2, 16))
        x2_ref = create_acl_tensor(ROW * 2, (2, 16))
        gamma = create_acl_tensor(ROW, (16,))
        rstd = create_acl_tensor([1, 2], (2, 1))
        epsilon = float(np.float32(1e-6))

        # 3. aclnnInplaceAddRmsNormGetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnInplaceAddRmsNorm (phase two) on the stream, after
        # which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        INPLACE_ADD_RMS_NORM.launch((x1_ref, x2_ref, gamma, epsilon, rstd), device=device.id,
                                    stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of x1Ref (now y), then of x2Ref (now x1 + x2), printed element
        # by element.
        print_result("x1Ref result[%d] is: %f", x1_ref)
        print_result("x2Ref result[%d] is: %f", x2_ref)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspace, aclrtDestroyStream.
        release(x1_ref, x2_ref, gamma, rstd, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
