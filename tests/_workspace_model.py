"""The vendor's rules for phase one's workspace size, stated independently of the emulator's
code, for the workspace-size tests of every operator.

opbase's MaxAllocator (hicann/opbase src/nnopbase/composite_op/mem_mgr/memory_allocator.cpp)
places every tensor of the op_api's kernel graph that lives in the workspace: each kernel's
tiling workspaces (alive during that kernel) and each executor-allocated L0 output (alive
from its kernel to its last reader). Each takes its size + 32 bytes rounded up to 512; the
tensors of one kernel never share memory; the size is the sum of the buckets.
"""
from __future__ import annotations

import ctypes

from acl_py.raw import ffi, lib

MiB16 = 16 * 1024 * 1024
SOC = ffi.string(lib.aclrtGetSocName()).decode()
CORES = ctypes.CDLL(str(lib.backend.libraries["ascendcl"])).aclemu_soc_vector_cores()
# the part's NPU architecture, by its name (the emulator's runtime/soc.c table)
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
# platform_ascendc's GetLibApiWorkSpaceSize (asc-devkit impl/utils/tiling/platform/
# platform_ascendc.cpp): 16 MiB on DAV_2201 and DAV_3510, 2 MiB on the other architectures.
LIB_API_WORKSPACE = MiB16 if ARCH in (2201, 3510) else 2 * 1024 * 1024


def align(nbytes):
    return (nbytes + 32 + 511) // 512 * 512


def ceil_to(n, k):
    return -(-n // k) * k


def max_allocator(tensors):
    """opbase's MaxAllocator over (bytes, first kernel, last kernel) in graph order: a tensor
    joins the last bucket whose latest tenant's lifetime is apart from its own (never one of
    the same kernel), else opens one; buckets are as large as their largest tenant."""
    buckets = []  # [size, (start, end) of the latest tenant]
    for nbytes, start, end in tensors:
        fits = [b for b in buckets if b[1][0] != start and
                (b[1][1] < start if start > b[1][0] else end < b[1][0])]
        if fits:
            fits[-1][0] = max(fits[-1][0], align(nbytes))
            fits[-1][1] = (start, end)
        else:
            buckets.append([align(nbytes), (start, end)])
    return sum(b[0] for b in buckets)


# The helper kernels' own tilings are public only for Ascend 950 (ops-math's op_host/arch35
# directories): its Cast (on AI Core; math/cast/op_host/arch35/cast_tiling.cpp), Fill
# (conversion/fill/op_host/arch35/fill_tiling_arch35.cpp) and OnesLike (math/ones_like/op_host/
# arch35/ones_like_tiling_arch35.cpp) ask 16 MiB each, its ZerosLike 0 bytes (math/zero_op/
# op_host/arch35/zeros_like_tiling_arch35.cpp), still a {0}-shaped tensor for the allocator.
# On the other parts they are TBE kernels: none public, none counted.
def helper_ws(kernel, nbytes=MiB16):
    """Helper kernel ``kernel``'s tiling workspace as graph entries (Ascend 950 only)."""
    return [(nbytes, kernel, kernel)] if ARCH == 3510 else []


# The one cast pair these tests reach that Ascend 950 runs on AI CPU (absent from cast.cpp's
# regbase AI Core list), whose memory is not the executor's workspace: none. Every other pair
# they cast is on AI Core.
CAST_ON_AICPU_950 = {("INT16", "DOUBLE")}


def cast_ws(kernel, src="FLOAT", dst="FLOAT16"):
    """A Cast kernel's tiling workspace as graph entries."""
    return [] if (src, dst) in CAST_ON_AICPU_950 else helper_ws(kernel)
