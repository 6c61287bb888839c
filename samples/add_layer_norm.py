"""The vendor's aclnnAddLayerNorm C++ example (hicann/ops-nn norm/add_layer_norm/examples/
test_aclnn_add_layer_norm.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
adds x1 ([1, 2, 8]: a row of ones, a row of twos) and x2 (a row of fours, a row of -3s),
once without and once with biasOptional ([8] of 0.5), and normalizes each sum over its last
dim with gamma 2, beta 0.1, epsilon 1e-6 and additionalOutput true; then it prints y, mean,
rstd and x of the first call, then of the second. Its progress lines and headers end with no
newline, so each header runs into the first result line after it, as the C++ program prints
them. acl-py checks every status: a failure raises a typed ``acl_py.AclError`` naming the
call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    (an empty line)
    Use aclnnAddLayerNorm Non-biasOptional Port.
    Use aclnnAddLayerNorm biasOptional Port.==== AddLayerNorm non-biasOptional: y outputresult[0] is: 0.100000
    result[1] is: 0.100000
    ...
    result[15] is: -0.500000
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import ADD_LAYER_NORM

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

SHAPE, STAT_SHAPE = (1, 2, 8), (1, 2, 1)

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnAddLayerNorm",
    "example": "hicann/ops-nn norm/add_layer_norm/examples/test_aclnn_add_layer_norm.cpp",
}


def say(text):
    """LOG_PRINT (printf) of a line the example ends with no newline."""
    print(text, end="")


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. The example's arguments: epsilon a float (1e-6 rounded to float, then widened to
        # the double phase one takes), additionalOutput true. CreateAclTensor per tensor
        # (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), all float, in the example's
        # order: x1 and x2 [1, 2, 8], beta, gamma and biasOptional [8]; then y, mean, rstd and
        # x of the call without biasOptional ([1, 2, 8], [1, 2, 1], [1, 2, 1], [1, 2, 8],
        # starting as zeros), then those of the call with it.
        epsilon = float(np.float32(1e-6))
        additional_output = True
        x1 = create_acl_tensor([1] * 8 + [2] * 8, SHAPE)
        x2 = create_acl_tensor([4] * 8 + [-3] * 8, SHAPE)
        beta = create_acl_tensor([0.1] * 8, (8,))
        gamma = create_acl_tensor([2] * 8, (8,))
        bias = create_acl_tensor([0.5] * 8, (8,))
        outputs = [[create_acl_tensor(np.zeros(shape), shape)
                    for shape in (SHAPE, STAT_SHAPE, STAT_SHAPE, SHAPE)] for _call in range(2)]

        # 3. Per call: aclnnAddLayerNormGetWorkspaceSize (phase one) -> workspace size and
        # executor; aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper
        # calls `workspace` only then); aclnnAddLayerNorm (phase two) on the stream, after
        # which the library releases the single-use executor. 3.1 without biasOptional
        # (nullptr), 3.2 with it.
        workspaces = []
        for title, bias_optional, (y, mean, rstd, x) in (
                ("Non-biasOptional", None, outputs[0]), ("biasOptional", bias, outputs[1])):
            say(f"\nUse aclnnAddLayerNorm {title} Port.")
            workspaces.append(WorkspaceMalloc())
            ADD_LAYER_NORM.launch((x1, x2, gamma, beta, bias_optional, epsilon,
                                   additional_output, y, mean, rstd, x), device=device.id,
                                  stream=stream, allocator=workspaces[-1])

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of each output, printed element by element after its header:
        # 5.1 the call without biasOptional, 5.2 the call with it.
        for title, results in (("non-biasOptional", outputs[0]),
                               ("biasOptional", outputs[1])):
            for name, tensor in zip(("y", "mean", "rstd", "x"), results):
                say(f"==== AddLayerNorm {title}: {name} output")
                print_result("result[%d] is: %f", tensor)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does
        # both), aclrtFree of the workspaces, aclrtDestroyStream.
        release(x1, x2, beta, gamma, bias, *outputs[0], *outputs[1], *workspaces, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
