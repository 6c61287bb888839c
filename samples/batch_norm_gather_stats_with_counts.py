"""The vendor's aclnnBatchNormGatherStatsWithCounts C++ example (hicann/ops-nn
norm/sync_batch_norm_gather_stats_with_counts/examples/
test_aclnn_BatchNormGatherStatsWithCounts.cpp), ported to acl-py's objects.

The same steps in the same order as the C++ program; each step's comment names the C++ calls
it ports (the helpers every port shares are in samples/example_helpers.py). The example
gathers 4 ranks' statistics of 4 channels (input [2, 4, 2], mean and invstd [4, 4], counts
1..4, runningMean 1..4, runningVar 5..8, momentum 1e-2, eps 1e-4) and prints meanAll's 4
values. Its data has one defect the port cannot copy: the host vector of mean holds 8 values
(0..7) for the 16 of [4, 4], so its aclrtMemcpy reads 32 bytes past the vector (and meanAll's
and invstdAll's initial data, 2 values for 4, likewise, though the call overwrites them):
the C++ example's last two ranks' means are whatever follows in its heap. The port gives
those eight means as 0. acl-py checks every status: a failure raises a typed
``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints::

    result[0] is: 0.800000
    result[1] is: 1.100000
    result[2] is: 1.400000
    result[3] is: 1.700000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM_GATHER_STATS_WITH_COUNTS

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNormGatherStatsWithCounts",
    "example": "hicann/ops-nn norm/sync_batch_norm_gather_stats_with_counts/examples/"
               "test_aclnn_BatchNormGatherStatsWithCounts.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: input [2, 4, 2] (0..15), mean [4, 4] (0..7, then
        # the eight values the example reads past its vector: 0 here), rMean [4] (1..4), rVar
        # [4] (5..8), counts [4] (1..4), invstd [4, 4] (1, 2, 3, 4 per row), meanAll and
        # invstdAll [4] (zeros); momentum 1e-2, eps 1e-4 (doubles).
        input_ = create_acl_tensor(range(16), (2, 4, 2))
        mean = create_acl_tensor(list(range(8)) + [0] * 8, (4, 4))
        r_mean = create_acl_tensor([1, 2, 3, 4], (4,))
        r_var = create_acl_tensor([5, 6, 7, 8], (4,))
        counts = create_acl_tensor([1, 2, 3, 4], (4,))
        invstd = create_acl_tensor([1] * 4 + [2] * 4 + [3] * 4 + [4] * 4, (4, 4))
        mean_all = create_acl_tensor([0] * 4, (4,))
        invstd_all = create_acl_tensor([0] * 4, (4,))
        momentum, eps = 1e-2, 1e-4

        # 3. aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize (phase one) -> workspace size
        # and executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase
        # wrapper calls `workspace` only then); aclnnBatchNormGatherStatsWithCounts (phase
        # two) on the stream, after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM_GATHER_STATS_WITH_COUNTS.launch(
            (input_, mean, invstd, r_mean, r_var, momentum, eps, counts, mean_all, invstd_all),
            device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of meanAll, printed element by element.
        print_result("result[%d] is: %f", mean_all)

        # 6. aclDestroyTensor of every tensor, 7. aclrtFree of every tensor's memory (a
        # tensor's close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(input_, mean, r_mean, r_var, counts, invstd, mean_all, invstd_all, workspace,
                stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
