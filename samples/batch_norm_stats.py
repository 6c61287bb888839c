"""The vendor's aclnnBatchNormStats C++ example (hicann/ops-math math/reduce_std_with_mean/
examples/test_aclnn_batch_norm_stats.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes the per-channel statistics of input [2, 3] (1..6, eps 1e-5) and prints mean's 3 values,
then invstd's 3 values under the same "mean result" label, as the C++ program does. acl-py
checks every status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and
the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints on the
same part::

    mean result[0] is: 2.500000
    ...
    mean result[2] is: 0.666665
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_STATS

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormStats",
    "example": "hicann/ops-math math/reduce_std_with_mean/examples/"
               "test_aclnn_batch_norm_stats.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: input [2, 3] (1..6), mean [3] and invstd [3]
        # (zeros); eps 1e-5 (a double).
        input_ = create_acl_tensor([1, 2, 3, 4, 5, 6], (2, 3))
        mean = create_acl_tensor([0, 0, 0], (3,))
        invstd = create_acl_tensor([0, 0, 0], (3,))
        eps = 1e-5

        # 3. aclnnBatchNormStatsGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnBatchNormStats (phase two) on the stream, after which
        # the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_STATS.launch((input_, eps, mean, invstd), device=device.id, stream=stream,
                                allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of mean, then of invstd, each printed element by element (the
        # example labels both "mean result").
        print_result("mean result[%d] is: %f", mean)
        print_result("mean result[%d] is: %f", invstd)

        # 6. aclDestroyTensor of every tensor, 7. aclrtFree of every tensor's memory (a
        # tensor's close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(input_, mean, invstd, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
