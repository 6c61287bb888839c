"""The vendor's aclnnLayerNormBackward C++ sample, ported to acl-py's objects.

Same data, same steps in the same order as the C++ program (tests/c/layer_norm_backward_sample.cpp
follows the vendor's call sequence; samples/layer_norm_backward_raw.py is the line-by-line cffi
port). Each step's comment names the C++ calls it ports; the C++ helpers every port shares
(CreateAclTensor, the workspace's aclrtMalloc, the result loop) are in samples/example_helpers.py.
acl-py checks every status for you: a failure raises a typed ``acl_py.AclError`` carrying the
call, the code and the runtime's message, and objects left open are still released in a valid
order at exit.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly the sample's eight lines::

    out result[0] is: -2.000000
    ...
    db result[1] is: 8.000000
"""
from __future__ import annotations

import acl_py
from acl_py.ops import LAYER_NORM_BACKWARD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnLayerNormBackward",
    "example": "hicann/ops-nn norm/layer_norm_grad_v3/examples/test_aclnn_layer_norm_grad_v3.cpp",
}


def main():
    # 1. aclInit(NULL).
    acl_py.init()
    # 1. aclrtSetDevice(0): the calling thread's device (acl-py resets it in finalize()).
    with acl_py.Device(0) as device:
        # 1. aclrtCreateStream.
        stream = acl_py.Stream()

        # 2-3. Per tensor: aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor, all FLOAT;
        # xShape={2,2}, meanShape={2,1}, weight/bias {2}; the outputs start as zeros.
        grad_out = create_acl_tensor([2, 3, 4, 5], (2, 2))
        x = create_acl_tensor([2, 3, 4, 5], (2, 2))
        mean = create_acl_tensor([2, 3], (2, 1))
        rstd = create_acl_tensor([4, 5], (2, 1))
        weight = create_acl_tensor([1, 1], (2,))
        bias = create_acl_tensor([0, 0], (2,))
        grad_input = create_acl_tensor([0, 0, 0, 0], (2, 2))
        grad_weight = create_acl_tensor([0, 0], (2,))
        grad_bias = create_acl_tensor([0, 0], (2,))

        # 4. aclCreateIntArray(normShape={2}), aclCreateBoolArray(outputMask={true,true,true}).
        normalized_shape = acl_py.IntArray([2])
        output_mask = acl_py.BoolArray([True, True, True])

        # 5. aclnnLayerNormBackwardGetWorkspaceSize (phase one) -> workspace size, executor;
        # 6. aclrtMalloc(workspace) only when the size is > 0: the two-phase wrapper calls
        #    `workspace` only then (a direct aclrtMalloc, HUGE_FIRST, like the sample);
        # 7. aclnnLayerNormBackward (phase two) on the stream; the library releases the
        #    single-use executor; acl-py frees the workspace once the stream is past it.
        workspace = WorkspaceMalloc()
        LAYER_NORM_BACKWARD.launch(
            (grad_out, x, normalized_shape, mean, rstd, weight, bias, output_mask,
             grad_input, grad_weight, grad_bias),
            device=device.id, stream=stream, allocator=workspace)

        # 8. aclrtSynchronizeStream.
        stream.synchronize()

        # 9. aclrtMemcpy D2H of each output, and print.
        print_result("out result[%d] is: %f", grad_input)
        print_result("dw result[%d] is: %f", grad_weight)
        print_result("db result[%d] is: %f", grad_bias)

        # 10. aclDestroyTensor + aclrtFree of every tensor, aclDestroyIntArray,
        # aclDestroyBoolArray, aclrtFree(workspace), aclrtDestroyStream.
        release(grad_out, x, mean, rstd, weight, bias, grad_input, grad_weight, grad_bias,
                normalized_shape, output_mask, workspace, stream)
    # 10. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
