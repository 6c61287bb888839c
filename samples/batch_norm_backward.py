"""The vendor's aclnnBatchNormBackward C++ example (hicann/ops-nn norm/batch_norm_grad_v3/
examples/test_aclnn_batch_norm_backward.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes gradOut = self = [1, 2, 4] (0..7) in training (eps 1e-5) with weight 1, runningMean 0,
runningVar 1, saveMean 0 and saveInvstd 1, asks for all three gradients (outputMask true,
true, true) and prints gradIn's 8 values. acl-py checks every status: a failure raises a typed
``acl_py.AclError`` naming the call, its code and the runtime's message.

What saveInvstd's 1 means depends on the part (docs/emulator.md): the variance on Atlas A2
(the emulator's default part, rstd = 1 / sqrt(1 + eps)), the rstd itself on Ascend 950; the
last digits printed follow. Runs on the emulator by default, on the device where CANN is
installed (``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints
on the same part::

    result[0] is: -1.499992
    result[1] is: -3.999945
    ...
    result[7] is: -218.996689
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_BACKWARD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormBackward",
    "example": "hicann/ops-nn norm/batch_norm_grad_v3/examples/"
               "test_aclnn_batch_norm_backward.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: gradOut and self [1, 2, 4] (0..7), weight [2]
        # (1, 1), rMean [2] (0, 0), rVar [2] (1, 1), sMean [2] (0, 0), sVar [2] (1, 1); then
        # aclCreateBoolArray(outMask: true, true, true); then gradIn [1, 2, 4], gradWeight
        # and gradBias [2] (zeros); training true, eps 1e-5 (a double).
        grad_out = create_acl_tensor(range(8), (1, 2, 4))
        self_ = create_acl_tensor(range(8), (1, 2, 4))
        weight = create_acl_tensor([1, 1], (2,))
        r_mean = create_acl_tensor([0, 0], (2,))
        r_var = create_acl_tensor([1, 1], (2,))
        s_mean = create_acl_tensor([0, 0], (2,))
        s_var = create_acl_tensor([1, 1], (2,))
        out_mask = acl_py.BoolArray((True, True, True))
        grad_in = create_acl_tensor([0] * 8, (1, 2, 4))
        grad_weight = create_acl_tensor([0, 0], (2,))
        grad_bias = create_acl_tensor([0, 0], (2,))
        training, eps = True, 1e-5

        # 3. aclnnBatchNormBackwardGetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnBatchNormBackward (phase two) on the stream,
        # after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_BACKWARD.launch((grad_out, self_, weight, r_mean, r_var, s_mean, s_var,
                                    training, eps, out_mask, grad_in, grad_weight, grad_bias),
                                   device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of gradIn, printed element by element.
        print_result("result[%d] is: %f", grad_in)

        # 6. aclDestroyTensor of every tensor and aclDestroyBoolArray(outMask), 7. aclrtFree
        # of every tensor's memory (a tensor's close() does both), aclrtFree of the
        # workspace, aclrtDestroyStream.
        release(grad_out, self_, weight, r_mean, r_var, s_mean, s_var)
        out_mask.close()
        release(grad_in, grad_weight, grad_bias, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
