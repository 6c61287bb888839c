"""The vendor's aclnnDeepNormGrad C++ example (hicann/ops-nn norm/deep_norm_grad/examples/
test_aclnn_deep_norm_grad.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
takes dy = x = 1..12 and gx (rows of 2s, 4s and 6s ending in 4, 6, 8) as [3, 1, 4], gamma
[0, 1, 2, 3], mean = rstd = [0, 1, 2] as [3, 1, 1] and alpha 0.3 (a float), all FLOAT; its
outputs pdx and pdgx ([3, 1, 4]) start as 1..12, pdbeta and pdgamma ([4]) as [0, 1, 2, 3].
It prints pdx, pdgx, pdbeta and pdgamma, each after a header that ends with no newline, as
the C++ program does. acl-py checks every status: a failure raises a typed
``acl_py.AclError`` naming the call, its code and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    (an empty line)
    Use aclnnDeepNormGrad Port.== pdx outputresult[0] is: 0.000000
    ...
    == pdbeta outputresult[0] is: 15.000000
    ...
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import DEEP_NORM_GRAD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

SHAPE, STAT_SHAPE, GAMMA_SHAPE = (3, 1, 4), (3, 1, 1), (4,)

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnDeepNormGrad",
    "example": "hicann/ops-nn norm/deep_norm_grad/examples/test_aclnn_deep_norm_grad.cpp",
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

        # 2. The example's arguments: alpha is a float (0.3 rounded to float, then widened to
        # the double phase one takes). CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy
        # H2D + aclCreateTensor), all FLOAT, in the example's order: dy, x, gx, gamma, mean,
        # rstd, then the outputs pdx, pdgx, pdbeta, pdgamma with their host data.
        alpha = float(np.float32(0.3))
        ramp = range(1, 13)
        dy = create_acl_tensor(ramp, SHAPE)
        x = create_acl_tensor(ramp, SHAPE)
        gx = create_acl_tensor([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8], SHAPE)
        gamma = create_acl_tensor([0, 1, 2, 3], GAMMA_SHAPE)
        mean = create_acl_tensor([0, 1, 2], STAT_SHAPE)
        rstd = create_acl_tensor([0, 1, 2], STAT_SHAPE)
        pdx = create_acl_tensor(ramp, SHAPE)
        pdgx = create_acl_tensor(ramp, SHAPE)
        pdbeta = create_acl_tensor([0, 1, 2, 3], GAMMA_SHAPE)
        pdgamma = create_acl_tensor([0, 1, 2, 3], GAMMA_SHAPE)

        # 3. aclnnDeepNormGradGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnDeepNormGrad (phase two) on the stream, after which the
        # library releases the single-use executor.
        say("\nUse aclnnDeepNormGrad Port.")
        workspace = WorkspaceMalloc()
        DEEP_NORM_GRAD.launch((dy, x, gx, gamma, mean, rstd, alpha, pdx, pdgx, pdbeta, pdgamma),
                              device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of each output, printed element by element after its header.
        for name, tensor in (("pdx", pdx), ("pdgx", pdgx), ("pdbeta", pdbeta),
                             ("pdgamma", pdgamma)):
            say(f"== {name} output")
            print_result("result[%d] is: %f", tensor)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does both),
        # aclrtFree of the workspace, aclrtDestroyStream.
        release(dy, x, gx, gamma, mean, rstd, pdx, pdgx, pdbeta, pdgamma, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
