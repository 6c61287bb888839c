"""The vendor's aclnnBatchNormReduce C++ example (hicann/ops-nn norm/bn_training_reduce/
examples/test_aclnn_batch_norm_reduce.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
sums per channel a 4-D x [1, 2, 3, 4] of ones described as NCHW (the op_api reads x's layout
from its storage format; sum and squareSum are ND) and prints sum's 2 values only. acl-py
checks every status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and
the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: 12.000000
    result[1] is: 12.000000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_REDUCE

from example_helpers import (WorkspaceMalloc, copy_to_device, create_acl_tensor, print_result,
                             release)

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormReduce",
    "example": "hicann/ops-nn norm/bn_training_reduce/examples/"
               "test_aclnn_batch_norm_reduce.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: x [1, 2, 3, 4] of ones, its aclTensor in
        # ACL_FORMAT_NCHW (a view of the memory described in that format: acl-py's tensors
        # are ND otherwise), sum [2] and squareSum [2] (zeros, ND).
        x_memory = copy_to_device([1.0] * 24, (1, 2, 3, 4))
        x = x_memory.with_format("NCHW")
        x.handle  # aclCreateTensor
        sum_ = create_acl_tensor([0, 0], (2,))
        square_sum = create_acl_tensor([0, 0], (2,))

        # 3. aclnnBatchNormReduceGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnBatchNormReduce (phase two) on the stream, after which
        # the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_REDUCE.launch((x, sum_, square_sum), device=device.id, stream=stream,
                                 allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of sum, printed element by element (squareSum is not read).
        print_result("result[%d] is: %f", sum_)

        # 6. aclDestroyTensor of every tensor, 7. aclrtFree of every tensor's memory (a
        # tensor's close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(x, x_memory, sum_, square_sum, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
