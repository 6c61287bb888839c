"""The vendor's aclnnGroupNormBackward C++ example (hicann/ops-nn norm/group_norm_grad/
examples/test_aclnn_group_norm_grad.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes gradOut and input [2, 3, 4] (both 1..24), mean and rstd [2, 1] (6.5, 18.5 and
0.2896827 twice), gamma [3] (ones), N 2, C 3, HxW 4, group 1 and outputMask (true, true,
true), all FLOAT, and prints gradInput's 24 values, then gradGammaOut's 3 and gradBetaOut's 3.
acl-py checks every status: a failure raises a typed ``acl_py.AclError`` naming the call, its
code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    gradInputResultData[0] is: 0.000000
    ...
    gradBetaOutResultData[2] is: 100.000000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import GROUP_NORM_BACKWARD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnGroupNormBackward",
    "example": "hicann/ops-nn norm/group_norm_grad/examples/test_aclnn_group_norm_grad.cpp",
}

RAMP = [float(v) for v in range(1, 25)]


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all FLOAT, in the example's order: gradOut, input, mean, rstd, gamma; then
        # aclCreateBoolArray(outputMask); then the outputs gradInput, gradGammaOut,
        # gradBetaOut (zeros); N 2, C 3, HxW 4, group 1.
        grad_out = create_acl_tensor(RAMP, (2, 3, 4))
        input_ = create_acl_tensor(RAMP, (2, 3, 4))
        mean = create_acl_tensor([6.5, 18.5], (2, 1))
        rstd = create_acl_tensor([0.2896827, 0.2896827], (2, 1))
        gamma = create_acl_tensor([1.0, 1.0, 1.0], (3,))
        output_mask = acl_py.BoolArray((True, True, True))
        grad_input = create_acl_tensor([0.0] * 24, (2, 3, 4))
        grad_gamma = create_acl_tensor([0.0] * 3, (3,))
        grad_beta = create_acl_tensor([0.0] * 3, (3,))
        n, c, hxw, group = 2, 3, 4, 1

        # 3. aclnnGroupNormBackwardGetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnGroupNormBackward (phase two) on the stream,
        # after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        GROUP_NORM_BACKWARD.launch((grad_out, input_, mean, rstd, gamma, n, c, hxw, group,
                                    output_mask, grad_input, grad_gamma, grad_beta),
                                   device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of gradInput, gradGammaOut and gradBetaOut, each printed element
        # by element.
        print_result("gradInputResultData[%d] is: %f", grad_input)
        print_result("gradGammaOutResultData[%d] is: %f", grad_gamma)
        print_result("gradBetaOutResultData[%d] is: %f", grad_beta)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does both),
        # aclrtFree of the workspace, aclrtDestroyStream. (The example never destroys
        # outputMask; acl-py destroys it with its object.)
        release(grad_out, input_, mean, rstd, gamma, grad_input, grad_gamma, grad_beta,
                workspace, stream)
        output_mask.close()
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
