"""The vendor's aclnnAddLayerNormQuant C++ example (hicann/ops-nn norm/add_layer_norm_quant/
examples/test_aclnn_add_layer_norm_quant.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
prints the part's name and stops (a skip, exit status 0) on any part but Ascend 950, the only
one its op_api runs on; there it fills every FLOAT input with 0x3A read as a number (58.0):
x1 and x2 [8, 16], gamma, beta, bias, scales1 and scales2 [16] (no zero points); static
quantMode, epsilon 1e-6, additionalOutput and divMode true; it prints y1 and y2 (int8, every
row constant: the normalized sum is 0, so y = beta and y / scales = 1), x (x1 + x2 + bias =
174) and the two out scales (never written in static mode: the zeros copied in). acl-py checks
every status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and the
runtime's message.

The emulator runs this port as Ascend950PR_9599 (``acl-py sample``). On the device where CANN
is installed (``ACL_PY_BACKEND=auto|cann|emulator``) it prints exactly what the C++ example
prints::

    Current SOC: Ascend950PR_9599
    ==== AddLayerNormQuant y1 output
    result[0] is: 1
    ...
    ==== AddLayerNormQuant x output
    result[0] is: 174.000000
    ...
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import ADD_LAYER_NORM_QUANT

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported), and the part
# the emulator runs it as (the op_api runs on Ascend 950 only).
VENDOR_EXAMPLE = {
    "operator": "aclnnAddLayerNormQuant",
    "example": "hicann/ops-nn norm/add_layer_norm_quant/examples/"
               "test_aclnn_add_layer_norm_quant.cpp",
    "soc": "Ascend950PR_9599",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # CheckHardwareSupport: aclrtGetSocName; any part but Ascend 950 is a skip.
        soc = acl_py.soc_name()
        print(f"Current SOC: {soc}")
        if "Ascend950" not in soc and "ascend950" not in soc:
            print(f"Warning: This operator only supports Ascend950, current SOC '{soc}' is not "
                  f"supported. Skip test.")
            print("\n=== Test SKIPPED (hardware not supported) ===")
            stream.close()
            acl_py.finalize()
            return

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), in
        # the example's order: x1, x2 [8, 16], gamma, beta, bias, s1, s2 [16], all FLOAT 0x3A
        # (58.0); y1, y2 [8, 16] INT8 zeros, x [8, 16] FLOAT zeros, outScales1 and outScales2
        # [8] FLOAT zeros.
        fill, n, rows = float(0x3A), 16, 8
        x1 = create_acl_tensor([fill] * (rows * n), (rows, n))
        x2 = create_acl_tensor([fill] * (rows * n), (rows, n))
        gamma = create_acl_tensor([fill] * n, (n,))
        beta = create_acl_tensor([fill] * n, (n,))
        bias = create_acl_tensor([fill] * n, (n,))
        s1 = create_acl_tensor([fill] * n, (n,))
        s2 = create_acl_tensor([fill] * n, (n,))
        y1 = create_acl_tensor([0] * (rows * n), (rows, n), np.int8)
        y2 = create_acl_tensor([0] * (rows * n), (rows, n), np.int8)
        x = create_acl_tensor([0] * (rows * n), (rows, n))
        out_scales1 = create_acl_tensor([0] * rows, (rows,))
        out_scales2 = create_acl_tensor([0] * rows, (rows,))
        eps, additional_out, div_mode, quant_mode = 1e-6, True, True, "static"

        # 3. aclnnAddLayerNormQuantGetWorkspaceSize (phase one; zeroPoints1 and zeroPoints2
        # NULL) -> workspace size and executor; aclrtMalloc(workspace) only when the size is
        # > 0; aclnnAddLayerNormQuant (phase two) on the stream, after which the library
        # releases the single-use executor.
        workspace = WorkspaceMalloc()
        ADD_LAYER_NORM_QUANT.launch((x1, x2, gamma, beta, bias, s1, s2, None, None, quant_mode,
                                     eps, additional_out, div_mode, y1, y2, x, out_scales1,
                                     out_scales2),
                                    device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of each output, printed element by element after its header.
        for header, tensor, fmt in (("y1", y1, "%d"), ("y2", y2, "%d"), ("x", x, "%f"),
                                    ("outScale1", out_scales1, "%f"),
                                    ("outScale2", out_scales2, "%f")):
            print(f"==== AddLayerNormQuant {header} output")
            print_result("result[%d] is: " + fmt, tensor)

        # 6. aclDestroyTensor and aclrtFree of every tensor (a tensor's close() does both),
        # aclrtFree of the workspace, aclrtDestroyStream.
        release(x1, x2, beta, gamma, bias, s1, s2, y1, y2, x, out_scales1, out_scales2,
                workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()

if __name__ == "__main__":
    main()
