"""The vendor's aclnnRmsNormGrad C++ example (hicann/ops-nn norm/rms_norm_grad/examples/
test_aclnn_rms_norm_grad.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes dy = x = 1..32 as [2, 1, 16], the forward's rstd [2] = 1, 2 and gamma [16] = 1..16, and
prints dx's 32 values, then dgamma's 16, both as "result[i]". acl-py checks every status: a
failure raises a typed ``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: -1155.000000
    ...
    result[31] is: -1617920.000000
    result[0] is: 579.000000
    ...
    result[15] is: 2304.000000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import RMS_NORM_GRAD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

ONE_TO_32 = list(range(1, 33))
ONE_TO_16 = list(range(1, 17))

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnRmsNormGrad",
    "example": "hicann/ops-nn norm/rms_norm_grad/examples/test_aclnn_rms_norm_grad.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: dy and x [2, 1, 16] of 1..32, rstd [2] of 1, 2,
        # gamma [16] of 1..16, then the outputs dx [2, 1, 16] (starting as 1..32) and
        # dgamma [16] (starting as 1..16).
        dy = create_acl_tensor(ONE_TO_32, (2, 1, 16))
        x = create_acl_tensor(ONE_TO_32, (2, 1, 16))
        rstd = create_acl_tensor([1, 2], (2,))
        gamma = create_acl_tensor(ONE_TO_16, (16,))
        dx = create_acl_tensor(ONE_TO_32, (2, 1, 16))
        dgamma = create_acl_tensor(ONE_TO_16, (16,))

        # 3. aclnnRmsNormGradGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnRmsNormGrad (phase two) on the stream, after which the
        # library releases the single-use executor.
        workspace = WorkspaceMalloc()
        RMS_NORM_GRAD.launch((dy, x, rstd, gamma, dx, dgamma), device=device.id,
                             stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of dx, printed element by element; then the same for dgamma
        # (the example prints both as "result[i]").
        print_result("result[%d] is: %f", dx)
        print_result("result[%d] is: %f", dgamma)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspace, aclrtDestroyStream.
        release(dy, x, rstd, gamma, dx, dgamma, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
