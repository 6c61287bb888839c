"""The vendor's aclnnAddRmsNormDynamicQuantV2 C++ example (hicann/ops-nn
norm/add_rms_norm_dynamic_quant/examples/test_aclnn_add_rms_norm_dynamic_quant_v2.cpp), ported
to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
adds x1 and x2 [2, 8] (float16 0.5, its host words 0x3800), normalizes the sum with gamma [8]
(float16 1.5, 0x3e00), adds betaOptional [8] (float16 1.5, 0x3e00), multiplies the result by
smoothScale1 and smoothScale2 [8] (float16 1.5), quantizes each row dynamically into y1 and y2
[2, 8] (int8) with the scales scale1 and scale2 [2] (float32), epsilon 1e-6, no outputMask
(NULL: y1 always, y2 with both smooth scales), and prints y1's 16 int8 values: every row's
values are equal, so each is the row's maximum, 127. acl-py checks every status: a failure
raises a typed ``acl_py.AclError`` naming the call, its code and the runtime's message.

One difference from the C++ program: it allocates each tensor's device memory from its host
vector, which is of 16-bit words for every tensor, so its float32 scales [2] ask for 4 bytes
for their 8 (the runtime rounds each allocation up, to 64 bytes for those 4, which hides it,
on a device as on the emulator: docs/emulator.md, "Memory"). The port allocates each tensor's
own bytes.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints what the C++ example prints on a device::

    result[0] is: 127
    result[1] is: 127
    ...
    result[15] is: 127
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import ADD_RMS_NORM_DYNAMIC_QUANT_V2

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnAddRmsNormDynamicQuantV2",
    "example": "hicann/ops-nn norm/add_rms_norm_dynamic_quant/examples/"
               "test_aclnn_add_rms_norm_dynamic_quant_v2.cpp",
}


def halves(word, count):
    """``count`` float16 values of the 16-bit pattern ``word`` (the example's host data)."""
    return np.full(count, word, np.uint16).view(np.float16)


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), in
        # the example's order: x1 and x2 [2, 8] float16 0x3800 (0.5), gamma, beta,
        # smoothScale1 and smoothScale2 [8] float16 0x3e00 (1.5), y1 and y2 [2, 8] int8 zeros,
        # x [2, 8] float16 zeros, scale1 and scale2 [2] float32 zeros; epsilon 1e-6 (a float,
        # passed as double).
        x1 = create_acl_tensor(halves(0x3800, 16), (2, 8), np.float16)
        x2 = create_acl_tensor(halves(0x3800, 16), (2, 8), np.float16)
        gamma = create_acl_tensor(halves(0x3e00, 8), (8,), np.float16)
        beta = create_acl_tensor(halves(0x3e00, 8), (8,), np.float16)
        smooth1 = create_acl_tensor(halves(0x3e00, 8), (8,), np.float16)
        smooth2 = create_acl_tensor(halves(0x3e00, 8), (8,), np.float16)
        y1 = create_acl_tensor([0] * 16, (2, 8), np.int8)
        y2 = create_acl_tensor([0] * 16, (2, 8), np.int8)
        x = create_acl_tensor([0] * 16, (2, 8), np.float16)
        scale1 = create_acl_tensor([0] * 2, (2,), np.float32)
        scale2 = create_acl_tensor([0] * 2, (2,), np.float32)
        epsilon = float(np.float32(1e-6))

        # 3. aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize (phase one; outputMask nullptr) ->
        # workspace size and executor; aclrtMalloc(workspace) only when the size is > 0;
        # aclnnAddRmsNormDynamicQuantV2 (phase two) on the stream, after which the library
        # releases the single-use executor.
        workspace = WorkspaceMalloc()
        ADD_RMS_NORM_DYNAMIC_QUANT_V2.launch((x1, x2, gamma, smooth1, smooth2, beta, epsilon,
                                              None, y1, y2, x, scale1, scale2),
                                             device=device.id, stream=stream,
                                             allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of y1, printed element by element.
        print_result("result[%d] is: %d", y1)

        # 6. aclDestroyTensor of every tensor, aclrtFree of every device buffer (a tensor's
        # close() does both), aclrtFree of the workspace, aclrtDestroyStream.
        release(x1, x2, gamma, beta, smooth1, smooth2, y1, y2, x, scale1, scale2, workspace,
                stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
