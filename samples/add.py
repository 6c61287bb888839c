"""The vendor's aclnnAdd C++ example (hicann/ops-math math/add/examples/test_aclnn_add.cpp),
ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
computes out = self + alpha * other on two float [4, 2] tensors with a float alpha of 1.2 and
prints out's 8 values. acl-py has no hand-written Add: the call goes through
``acl_py.aclnn.Add``, which reads the prototype from the install's aclnnop/aclnn_add.h and
binds it to the operator library exporting it (libopapi_math.so, or libopapi.so before the
split), the way a port of any vendor example of an operator reaches it. acl-py checks every
status: a failure raises a typed ``acl_py.AclError`` naming the call, its code and the
runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    result[0] is: 1.200000
    ...
    result[7] is: 10.600000
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py import aclnn

from example_helpers import create_acl_tensor, print_result

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnAdd",
    "example": "hicann/ops-math math/add/examples/test_aclnn_add.cpp",
}


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0):
        stream = acl_py.Stream()

        # 2. CreateAclTensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor) of self and
        # other, float [4, 2]; aclCreateScalar(&alphaValue, ACL_FLOAT) with alphaValue 1.2f;
        # then CreateAclTensor of out, float [4, 2] of zeros.
        self_ = create_acl_tensor([0, 1, 2, 3, 4, 5, 6, 7], (4, 2))
        other = create_acl_tensor([1, 1, 1, 2, 2, 2, 3, 3], (4, 2))
        alpha = acl_py.Scalar(1.2, np.float32)
        out = create_acl_tensor([0] * 8, (4, 2))

        # 3. aclnnAddGetWorkspaceSize (phase one) -> workspace size and executor; the
        # workspace only when the size is > 0 (acl_py.aclnn takes it from the device's memory
        # pool where the example calls aclrtMalloc, and frees it in stream order where the
        # example calls aclrtFree); aclnnAdd (phase two) on the stream, after which the library
        # releases the single-use executor.
        aclnn.Add(self_, other, alpha, out, stream=stream)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of out, printed element by element (the example's "%lf" prints
        # as "%f" does).
        print_result("result[%d] is: %f", out)

        # 6. aclDestroyTensor / aclDestroyScalar in the example's order, and 7. aclrtFree of
        # every tensor's memory (a tensor's close() does both), aclrtDestroyStream.
        self_.close()
        other.close()
        alpha.close()
        out.close()
        stream.close()
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
