"""The vendor's aclnnBatchNorm C++ example (hicann/ops-nn norm/batch_norm_v3/examples/
test_aclnn_batch_norm_v3.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes self [1, 2, 4] (0..7) in training (momentum 0.1, eps 1e-5) with weight 1, bias 0,
runningMean 0 and runningVar 1 (updated in place), saveMean and saveInvstd [2], and prints
out's 8 values. acl-py checks every status: a failure raises a typed ``acl_py.AclError``
naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: -1.341635
    result[1] is: -0.447212
    ...
    result[7] is: 1.341635
"""
from __future__ import annotations

import acl_py
from acl_py.ops import BATCH_NORM

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnBatchNorm",
    "example": "hicann/ops-nn norm/batch_norm_v3/examples/test_aclnn_batch_norm_v3.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor),
        # all float, in the example's order: self [1, 2, 4] (0..7), weight [2] (1, 1), bias
        # [2] (0, 0), rMean [2] (0, 0), rVar [2] (1, 1), out [1, 2, 4] (zeros), mean and var
        # [2] (1, 1); training true, momentum 0.1, eps 1e-5 (doubles).
        self_ = create_acl_tensor(range(8), (1, 2, 4))
        weight = create_acl_tensor([1, 1], (2,))
        bias = create_acl_tensor([0, 0], (2,))
        r_mean = create_acl_tensor([0, 0], (2,))
        r_var = create_acl_tensor([1, 1], (2,))
        out = create_acl_tensor([0] * 8, (1, 2, 4))
        mean = create_acl_tensor([1, 1], (2,))
        var = create_acl_tensor([1, 1], (2,))
        training, momentum, eps = True, 0.1, 1e-5

        # 3. aclnnBatchNormGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnBatchNorm (phase two) on the stream, after which the
        # library releases the single-use executor.
        workspace = WorkspaceMalloc()
        BATCH_NORM.launch((self_, weight, bias, r_mean, r_var, training, momentum, eps, out,
                           mean, var), device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of out, printed element by element.
        print_result("result[%d] is: %f", out)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspace, aclrtDestroyStream.
        release(self_, weight, bias, r_mean, r_var, out, mean, var, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
