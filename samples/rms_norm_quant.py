"""The vendor's aclnnRmsNormQuant C++ example (hicann/ops-nn norm/rms_norm_quant/examples/
test_aclnn_rms_norm_quant.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
normalizes x [3, 5] (float16 0..14) with gamma and beta [1, 5] (float16 0..4 each), adds beta,
quantizes with scale [1] = 1.0 (float16) and offset [1] = 1 (int8), epsilon 1e-6, and prints
y's 15 int8 values. acl-py checks every status: a failure raises a typed ``acl_py.AclError``
naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: 1
    result[1] is: 2
    ...
    result[14] is: 10
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import RMS_NORM_QUANT

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnRmsNormQuant",
    "example": "hicann/ops-nn norm/rms_norm_quant/examples/test_aclnn_rms_norm_quant.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), in
        # the example's order: x [3, 5] float16 0..14, gamma [1, 5] and beta [1, 5] float16
        # 0..4, scale [1] float16 1, offset [1] int8 1, y [3, 5] int8 zeros; epsilon 1e-6.
        x = create_acl_tensor(range(15), (3, 5), np.float16)
        gamma = create_acl_tensor(range(5), (1, 5), np.float16)
        beta = create_acl_tensor(range(5), (1, 5), np.float16)
        scale = create_acl_tensor([1], (1,), np.float16)
        offset = create_acl_tensor([1], (1,), np.int8)
        y = create_acl_tensor([0] * 15, (3, 5), np.int8)
        epsilon = 1e-6

        # 3. aclnnRmsNormQuantGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0; aclnnRmsNormQuant (phase two) on
        # the stream, after which the library releases the single-use executor.
        workspace = WorkspaceMalloc()
        RMS_NORM_QUANT.launch((x, gamma, beta, scale, offset, epsilon, y), device=device.id,
                              stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of y, printed element by element.
        print_result("result[%d] is: %d", y)

        # 6. aclDestroyTensor and aclrtFree of every tensor (a tensor's close() does both),
        # aclrtFree of the workspace, aclrtDestroyStream.
        release(x, gamma, beta, scale, offset, y, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
