"""The vendor's aclnnAddRmsNormQuant C++ example (hicann/ops-nn norm/add_rms_norm_quant/
examples/test_aclnn_add_rms_norm_quant.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
adds x1 and x2 [64, 2] (float16 zeros), normalizes the sum with gamma [2] (float16 zeros),
quantizes it with scales1 [2] = 1.0 (float32) and zeroPoints1 [2] = 100 (int32), without
scales2 and zeroPoints2, axis -1, epsilon 1e-6, divMode true, and prints y1's 128 int8
values. acl-py checks every status: a failure raises a typed ``acl_py.AclError`` naming the
call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: 100
    result[1] is: 100
    ...
    result[127] is: 100
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import ADD_RMS_NORM_QUANT

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnAddRmsNormQuant",
    "example": "hicann/ops-nn norm/add_rms_norm_quant/examples/"
               "test_aclnn_add_rms_norm_quant.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), in
        # the example's order: x1 and x2 [64, 2] float16 zeros, gamma [2] float16 zeros,
        # scales1 [2] float32 1, zeroPoints1 [2] int32 100, y1 and y2 [64, 2] int8 zeros, x
        # [64, 2] float16 zeros; epsilon 1e-6, axis -1, divMode true.
        x1 = create_acl_tensor([0] * 128, (64, 2), np.float16)
        x2 = create_acl_tensor([0] * 128, (64, 2), np.float16)
        gamma = create_acl_tensor([0] * 2, (2,), np.float16)
        scales1 = create_acl_tensor([1] * 2, (2,), np.float32)
        zero_points1 = create_acl_tensor([100] * 2, (2,), np.int32)
        y1 = create_acl_tensor([0] * 128, (64, 2), np.int8)
        y2 = create_acl_tensor([0] * 128, (64, 2), np.int8)
        x = create_acl_tensor([0] * 128, (64, 2), np.float16)
        epsilon, axis, div_mode = 1e-6, -1, True

        # 3. aclnnAddRmsNormQuantGetWorkspaceSize (phase one; scales2 and zeroPoints2 NULL) ->
        # workspace size and executor; aclrtMalloc(workspace) only when the size is > 0;
        # aclnnAddRmsNormQuant (phase two) on the stream, after which the library releases the
        # single-use executor.
        workspace = WorkspaceMalloc()
        ADD_RMS_NORM_QUANT.launch((x1, x2, gamma, scales1, None, zero_points1, None, axis,
                                   epsilon, div_mode, y1, y2, x),
                                  device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of y1, printed element by element.
        print_result("result[%d] is: %d", y1)

        # 6. aclDestroyTensor and aclrtFree of every tensor (a tensor's close() does both),
        # aclrtFree of the workspace, aclrtDestroyStream.
        release(x1, x2, gamma, scales1, zero_points1, y1, y2, x, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
