"""The vendor's aclnnBatchNormElemtBackward C++ example (hicann/ops-nn
norm/sync_batch_norm_backward_elemt/examples/test_aclnn_batch_norm_elemt_backward.cpp), ported
to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes gradOut = input = [1, 2, 4] (0..7), weight 1, mean 0, invstd 1, sumDy 0, sumDyXmu 1 per
channel and counter (5, 5) (a total count of 10), and prints gradInput's 8 values. acl-py
checks every status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and
the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: 0.000000
    result[1] is: 0.900000
    ...
    result[7] is: 6.300000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_ELEMT_BACKWARD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormElemtBackward",
    "example": "hicann/ops-nn norm/sync_batch_norm_backward_elemt/examples/"
               "test_aclnn_batch_norm_elemt_backward.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: gradOut and input [1, 2, 4] (0..7), weight [2]
        # (1, 1), mean (0, 0), invstd (1, 1), sumDy (0, 0), sumDyXmu (1, 1), counter (5, 5),
        # gradInput [1, 2, 4] (zeros).
        grad_out = create_acl_tensor(range(8), (1, 2, 4))
        input_ = create_acl_tensor(range(8), (1, 2, 4))
        weight = create_acl_tensor([1, 1], (2,))
        mean = create_acl_tensor([0, 0], (2,))
        invstd = create_acl_tensor([1, 1], (2,))
        sum_dy = create_acl_tensor([0, 0], (2,))
        sum_dy_xmu = create_acl_tensor([1, 1], (2,))
        counter = create_acl_tensor([5, 5], (2,))
        grad_input = create_acl_tensor([0] * 8, (1, 2, 4))

        # 3. aclnnBatchNormElemtBackwardGetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnBatchNormElemtBackward (phase two) on the stream,
        # after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_ELEMT_BACKWARD.launch((grad_out, input_, mean, invstd, weight, sum_dy,
                                          sum_dy_xmu, counter, grad_input),
                                         device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of gradInput, printed element by element.
        print_result("result[%d] is: %f", grad_input)

        # 6. aclDestroyTensor of every tensor, 7. aclrtFree of every tensor's memory (a
        # tensor's close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(grad_out, input_, weight, mean, invstd, sum_dy, sum_dy_xmu, counter,
                grad_input, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
