"""The vendor's aclnnBatchNormReduceBackward C++ example (hicann/ops-nn
norm/sync_batch_norm_backward_reduce/examples/test_aclnn_batch_norm_reduce_backward.cpp), ported
to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes gradOut [4, 2] (1, 1, 1, 2, 2, 2, 3, 3) and input [4, 2] (0..7), mean 1, invstd 1 and
weight 1 per channel, asks for every output (inputG, weightG, biasG true) and prints sumDy,
sumDyXmu, gradWeight and gradBias, two values each. acl-py checks every status: a failure
raises a typed ``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: 7.000000
    result[1] is: 8.000000
    result[0] is: 21.000000
    ...
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_REDUCE_BACKWARD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormReduceBackward",
    "example": "hicann/ops-nn norm/sync_batch_norm_backward_reduce/examples/"
               "test_aclnn_batch_norm_reduce_backward.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: gradOut [4, 2], input [4, 2] (0..7), mean,
        # invstd, weight [2] (1, 1); inputG, weightG, biasG true; then sumDy, sumDyXmu,
        # gradWeight, gradBias [2] (1, 1).
        grad_out = create_acl_tensor([1, 1, 1, 2, 2, 2, 3, 3], (4, 2))
        input_ = create_acl_tensor(range(8), (4, 2))
        mean = create_acl_tensor([1, 1], (2,))
        invstd = create_acl_tensor([1, 1], (2,))
        weight = create_acl_tensor([1, 1], (2,))
        input_g = weight_g = bias_g = True
        sum_dy = create_acl_tensor([1, 1], (2,))
        sum_dy_xmu = create_acl_tensor([1, 1], (2,))
        grad_weight = create_acl_tensor([1, 1], (2,))
        grad_bias = create_acl_tensor([1, 1], (2,))

        # 3. aclnnBatchNormReduceBackwardGetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnBatchNormReduceBackward (phase two) on the
        # stream, after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_REDUCE_BACKWARD.launch((grad_out, input_, mean, invstd, weight, input_g,
                                           weight_g, bias_g, sum_dy, sum_dy_xmu, grad_weight,
                                           grad_bias),
                                          device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of each output, printed element by element (PrintOutResult).
        for result in (sum_dy, sum_dy_xmu, grad_weight, grad_bias):
            print_result("result[%d] is: %f", result)

        # 6. aclDestroyTensor of every tensor, 7. aclrtFree of every tensor's memory (a
        # tensor's close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(grad_out, input_, mean, invstd, weight, sum_dy, sum_dy_xmu, grad_weight,
                grad_bias, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
