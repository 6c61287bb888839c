"""The vendor's aclnnGroupNormSiluV2 C++ example (hicann/ops-nn
norm/group_norm_silu/examples/test_aclnn_group_norm_silu_v2.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes self [2, 3, 4] (1..24) over one group per sample (group 1, eps 1e-5) with gamma
and beta [3] (all 2), applies Silu (activateSilu true), and prints out's 24 values, then
meanOut's 2 and rstdOut's 2. acl-py checks every status: a failure raises a typed
``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``; Atlas A2/A3, Atlas inference and Ascend 950 parts:
the Atlas training series has no kernel). Prints exactly what the C++ example prints::

    outResultData[0] is: -0.277505
    ...
    rstdResultData[1] is: 0.289682
"""
from __future__ import annotations

import acl_py
from acl_py.ops import GROUP_NORM_SILU_V2

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnGroupNormSiluV2",
    "example": "hicann/ops-nn norm/group_norm_silu/examples/test_aclnn_group_norm_silu_v2.cpp",
}

DATA = [float(v) for v in range(1, 25)]


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: self [2, 3, 4] (1..24), gamma and beta [3]
        # (2, 2, 2), out [2, 3, 4] (starting as a copy of self's data), meanOut and rstdOut
        # [2, 1] (starting as 2, 2); group 1, eps 1e-5 (a double), activateSilu true.
        self_ = create_acl_tensor(DATA, (2, 3, 4))
        gamma = create_acl_tensor([2.0, 2, 2], (3,))
        beta = create_acl_tensor([2.0, 2, 2], (3,))
        out = create_acl_tensor(DATA, (2, 3, 4))
        mean_out = create_acl_tensor([2.0, 2], (2, 1))
        rstd_out = create_acl_tensor([2.0, 2], (2, 1))
        group, eps, activate_silu = 1, 0.00001, True

        # 3. aclnnGroupNormSiluV2GetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnGroupNormSiluV2 (phase two) on the stream, after
        # which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        GROUP_NORM_SILU_V2.launch((self_, gamma, beta, group, eps, activate_silu, out,
                                   mean_out, rstd_out),
                                  device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of out, meanOut and rstdOut, each printed element by element.
        print_result("outResultData[%d] is: %f", out)
        print_result("meanResultData[%d] is: %f", mean_out)
        print_result("rstdResultData[%d] is: %f", rstd_out)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspace, aclrtDestroyStream.
        release(self_, gamma, beta, out, mean_out, rstd_out, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
