"""The vendor's aclnnGemmaRmsNorm C++ example (hicann/ops-nn norm/gemma_rms_norm/examples/
test_aclnn_gemma_rms_norm.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes x [2, 16] (each row 0..7 twice) with gamma [16] (0..7 twice; Gemma scales by
1 + gamma) and epsilon 1e-6, and prints y's 32 values (rstd is computed too, not printed).
acl-py checks every status: a failure raises a typed ``acl_py.AclError`` naming the call, its
code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``; the operator has kernels on Atlas A2/A3 and Ascend
950). Prints exactly what the C++ example prints::

    result[0] is: 0.000000
    result[1] is: 0.478091
    ...
    result[31] is: 13.386559
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import GEMMA_RMS_NORM

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnGemmaRmsNorm",
    "example": "hicann/ops-nn norm/gemma_rms_norm/examples/test_aclnn_gemma_rms_norm.cpp",
}

ROW = [0, 1, 2, 3, 4, 5, 6, 7] * 2


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: x [2, 16], gamma [16], y [2, 16] (starting as a
        # copy of x's data), rstd [2, 1] (starting as 1, 2). The example's epsilon is a float:
        # 1e-6 rounded to float, then widened to the double phase one takes.
        x = create_acl_tensor(ROW * 2, (2, 16))
        gamma = create_acl_tensor(ROW, (16,))
        y = create_acl_tensor(ROW * 2, (2, 16))
        rstd = create_acl_tensor([1, 2], (2, 1))
        epsilon = float(np.float32(1e-6))

        # 3. aclnnGemmaRmsNormGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnGemmaRmsNorm (phase two) on the stream, after which
        # the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        GEMMA_RMS_NORM.launch((x, gamma, epsilon, y, rstd), device=device.id, stream=stream,
                              allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of y, printed element by element.
        print_result("result[%d] is: %f", y)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspace, aclrtDestroyStream.
        release(x, gamma, y, rstd, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
