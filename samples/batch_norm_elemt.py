"""The vendor's aclnnBatchNormElemt C++ example (hicann/ops-nn norm/batch_norm_elemt/examples/
test_aclnn_batch_norm_elemt.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes self [2, 4, 2] (0..15) with mean [1, 2, 3, 4] and invstd [5, 6, 7, 8] (eps 1e-2,
no weight or bias) and prints out's 16 values. acl-py checks every status: a failure raises a
typed ``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints on the
same part::

    result[0] is: -5.000000
    result[1] is: 0.000000
    ...
    result[15] is: 88.000000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_ELEMT

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormElemt",
    "example": "hicann/ops-nn norm/batch_norm_elemt/examples/test_aclnn_batch_norm_elemt.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: input [2, 4, 2] (0..15), mean [4] (1..4),
        # invstd [4] (5..8), out [2, 4, 2] (zeros); eps 1e-2 (a double).
        input_ = create_acl_tensor(range(16), (2, 4, 2))
        mean = create_acl_tensor([1, 2, 3, 4], (4,))
        invstd = create_acl_tensor([5, 6, 7, 8], (4,))
        out = create_acl_tensor([0] * 16, (2, 4, 2))
        eps = 1e-2

        # 3. aclnnBatchNormElemtGetWorkspaceSize (phase one; weight and bias nullptr) ->
        # workspace size and executor; aclrtMalloc(workspace) only when the size is > 0 (the
        # two-phase wrapper calls `workspace` only then); aclnnBatchNormElemt (phase two) on
        # the stream, after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_ELEMT.launch((input_, None, None, mean, invstd, eps, out), device=device.id,
                                stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of out, printed element by element.
        print_result("result[%d] is: %f", out)

        # 6. aclDestroyTensor of every tensor, 7. aclrtFree of every tensor's memory (a
        # tensor's close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(input_, mean, invstd, out, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
