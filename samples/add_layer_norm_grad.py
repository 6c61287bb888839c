"""The vendor's aclnnAddLayerNormGrad C++ example (hicann/ops-nn norm/add_layer_norm_grad/
examples/test_aclnn_add_layer_norm_grad.cpp), ported to acl-py's objects.

Same data, same steps in the same order as the C++ program; each step's comment names the C++
calls it ports (the helpers every port shares are in samples/example_helpers.py). The example
creates every tensor as FLOAT, dy from float data but the others from int32 vectors: their
bytes are int32 bit patterns read as float32 (tiny subnormals, 0 where the int is 0), which
this port reproduces (int32 arrays viewed as float32). Shapes: dy, x1, x2, dsumOptional and
pdx [3, 1, 4]; rstd and mean [3, 1, 1]; gamma, pdgamma and pdbeta [4]. It prints pdx, pdgamma
and pdbeta, each after a header that ends with no newline, as the C++ program does. acl-py
checks every status: a failure raises a typed ``acl_py.AclError`` naming the call, its code
and the runtime's message.

Runs on the emulator by default, on the device where CANN is installed
(``ACL_PY_BACKEND=auto|cann|emulator``). Prints exactly what the C++ example prints::

    (an empty line)
    Use aclnnAddLayerNormGrad Port.== pdx outputresult[0] is: 0.000000
    ...
    == pdbeta outputresult[0] is: 15.000000
    ...
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.ops import ADD_LAYER_NORM_GRAD

from example_helpers import WorkspaceMalloc, create_acl_tensor, print_result, release

SHAPE, STAT_SHAPE, GAMMA_SHAPE = (3, 1, 4), (3, 1, 1), (4,)

# The C++ example this file ports (`acl-py sample --list`; read, not imported).
VENDOR_EXAMPLE = {
    "operator": "aclnnAddLayerNormGrad",
    "example": "hicann/ops-nn norm/add_layer_norm_grad/examples/"
               "test_aclnn_add_layer_norm_grad.cpp",
}


def int32_bits(values):
    """An int32 host vector copied into a FLOAT tensor, as the example does: its bytes read as
    float32."""
    return np.array(values, dtype=np.int32).view(np.float32)


def say(text):
    """LOG_PRINT (printf) of a line the example ends with no newline."""
    print(text, end="")


def main():
    # 1. Init: aclInit(nullptr), aclrtSetDevice(0) (acl-py resets it in finalize()),
    # aclrtCreateStream.
    acl_py.init()
    with acl_py.Device(0) as device:
        stream = acl_py.Stream()

        # 2. CreateAclTensor per tensor (aclrtMalloc + aclrtMemcpy H2D + aclCreateTensor), all
        # FLOAT, in the example's order: dy (float data), x1, x2, rstd, mean, gamma,
        # dsumOptional, then the outputs pdx, pdgamma, pdbeta (int32 data).
        ramp = list(range(1, 13))
        dy = create_acl_tensor(np.array(ramp, np.float32), SHAPE)
        x1 = create_acl_tensor(int32_bits(ramp), SHAPE)
        x2 = create_acl_tensor(int32_bits([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8]), SHAPE)
        rstd = create_acl_tensor(int32_bits([0, 1, 2]), STAT_SHAPE)
        mean = create_acl_tensor(int32_bits([0, 1, 2]), STAT_SHAPE)
        gamma = create_acl_tensor(int32_bits([0, 1, 2, 3]), GAMMA_SHAPE)
        dsum = create_acl_tensor(int32_bits(ramp), SHAPE)
        pdx = create_acl_tensor(int32_bits(ramp), SHAPE)
        pdgamma = create_acl_tensor(int32_bits([0, 1, 2, 3]), GAMMA_SHAPE)
        pdbeta = create_acl_tensor(int32_bits([0, 1, 2, 3]), GAMMA_SHAPE)

        # 3. aclnnAddLayerNormGradGetWorkspaceSize (phase one) -> workspace size and executor;
        # aclrtMalloc(workspace) only when the size is > 0 (the two-phase wrapper calls
        # `workspace` only then); aclnnAddLayerNormGrad (phase two) on the stream, after which
        # the library releases the single-use executor.
        say("\nUse aclnnAddLayerNormGrad Port.")
        workspace = WorkspaceMalloc()
        ADD_LAYER_NORM_GRAD.launch((dy, x1, x2, rstd, mean, gamma, dsum, pdx, pdgamma, pdbeta),
                                   device=device.id, stream=stream, allocator=workspace)

        # 4. aclrtSynchronizeStream.
        stream.synchronize()

        # 5. aclrtMemcpy D2H of each output, printed element by element after its header.
        for name, tensor in (("pdx", pdx), ("pdgamma", pdgamma), ("pdbeta", pdbeta)):
            say(f"== {name} output")
            print_result("result[%d] is: %f", tensor)

        # 6. aclDestroyTensor and 7. aclrtFree of every tensor (a tensor's close() does both),
        # aclrtFree of the workspace, aclrtDestroyStream.
        release(dy, x1, x2, rstd, mean, gamma, dsum, pdx, pdgamma, pdbeta, workspace, stream)
    # 7. aclrtResetDevice(0) and aclFinalize(): acl-py resets every device it set, then
    # finalizes, when the last init() is matched by finalize().
    acl_py.finalize()


if __name__ == "__main__":
    main()
