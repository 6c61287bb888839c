"""The bytes an aclrtMalloc block holds: what CANN's runtime asks its driver for, the request
plus 32 and the part's padding rounded down to 32 (hicann/runtime
src/acl/aclrt_impl/memory.cpp GetAlignedAndPaddingSize; its unit test,
tests/ut/acl/testcase/acl_common_unittest.cpp, gives 64 for 1 and for 32 with the padding, 32
without). Copies, memsets and an operator's tensor views may use all of them, as on a device,
and nothing past them."""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from test_emulator_op import Arena, last_msg, no_leaks, stream  # noqa: F401  (fixtures)

from _part_runs import other_parts, run_on_parts

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw calls against the emulator's rules")

H2D, D2H = lib.ACL_MEMCPY_HOST_TO_DEVICE, lib.ACL_MEMCPY_DEVICE_TO_HOST
HUGE_FIRST, HUGE1G = lib.ACL_MEM_MALLOC_HUGE_FIRST, lib.ACL_MEM_MALLOC_HUGE1G_ONLY
# request -> bytes, written out per the runtime's rule: 32 of rounding plus 32 of padding
# (padding_size of the parts' platform files), none on Ascend 950 (padding_size=0) or for the
# 1 GiB huge-page policies, which the runtime does not pad
PADDED = {1: 64, 4: 64, 31: 64, 32: 64, 33: 96, 64: 96, 65: 128, 100: 160, 4096: 4128}
UNPADDED = {1: 32, 4: 32, 31: 32, 32: 32, 33: 64, 64: 64, 65: 96, 100: 128, 4096: 4096}


def expected_bytes(policy):
    no_padding = policy == HUGE1G or short_soc_version(soc_name()) == "Ascend950"
    return UNPADDED if no_padding else PADDED


def malloc(size, policy=HUGE_FIRST):
    p = ffi.new("void **")
    assert lib.aclrtMalloc(p, size, policy) == 0, last_msg()
    return p[0]


@pytest.mark.parametrize("policy", [HUGE_FIRST, HUGE1G], ids=["huge_first", "huge1g"])
def test_a_block_holds_the_runtimes_rounded_bytes(stream, policy):  # noqa: F811
    for size, held in expected_bytes(policy).items():
        p = malloc(size, policy)
        try:
            data = np.arange(held, dtype=np.uint32).astype(np.uint8)
            assert lib.aclrtMemcpy(p, held, ffi.from_buffer(data), held, H2D) == 0, last_msg()
            back = np.zeros(held, np.uint8)
            assert lib.aclrtMemcpy(ffi.from_buffer(back), held, p, held, D2H) == 0, last_msg()
            np.testing.assert_array_equal(back, data)
            assert lib.aclrtMemset(p, held, 7, held) == 0, last_msg()
            attrs = ffi.new("aclrtPtrAttributes *")
            end = ffi.cast("char *", p) + held
            assert lib.aclrtPointerGetAttributes(end - 1, attrs) == 0, last_msg()
            # one byte more: refused, the message giving both sizes
            more = np.zeros(held + 1, np.uint8)
            assert lib.aclrtMemcpy(p, held + 1, ffi.from_buffer(more), held + 1, H2D) == 107000
            msg = last_msg()
            assert f"{held} bytes" in msg and f"{size} requested" in msg, msg
            assert lib.aclrtMemset(p, held + 1, 7, held + 1) == 107000
            assert lib.aclrtPointerGetAttributes(end, attrs) == 107000
        finally:
            assert lib.aclrtFree(p) == 0


def test_the_live_counts_add_up_the_requested_bytes(stream):  # noqa: F811
    free0, total = ffi.new("size_t *"), ffi.new("size_t *")
    assert lib.aclrtGetMemInfo(lib.ACL_HBM_MEM, free0, total) == 0
    p = malloc(33)
    try:
        free1 = ffi.new("size_t *")
        assert lib.aclrtGetMemInfo(lib.ACL_HBM_MEM, free1, total) == 0
        assert free0[0] - free1[0] == 33
    finally:
        assert lib.aclrtFree(p) == 0


def add_into(arena, out_elems, out_ptr):
    """aclnnAdd of two float32 [out_elems] tensors (1 and 2) into `out_ptr`: phase one, then
    phase two's status."""
    ones = np.ones(out_elems, np.float32)
    x, y = arena.malloc(ones.nbytes), arena.malloc(ones.nbytes)
    arena.h2d(x, ones)
    arena.h2d(y, 2 * ones)
    tx, ty, tout = (arena.tensor([out_elems], None, [1], 0, out_elems, ptr, lib.ACL_FLOAT)
                    for ptr in (x, y, out_ptr))
    alpha = lib.aclCreateScalar(ffi.new("float *", 1.0), lib.ACL_FLOAT)
    try:
        ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
        assert lib.aclnnAddGetWorkspaceSize(tx, ty, alpha, tout, ws, ex) == 0, last_msg()
        # the device's workspace (Ascend 950's Add asks for 16 MiB: workspace_size_add_ln)
        wsp = arena.malloc(ws[0]) if ws[0] else ffi.NULL
        rc = lib.aclnnAdd(wsp, ws[0], ex[0], arena.stream)
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        return rc
    finally:
        assert lib.aclDestroyScalar(alpha) == 0


def test_an_operator_may_write_into_the_rounding(stream):  # noqa: F811
    """The vendor's AddRmsNormDynamicQuant example's case: a float32 output asked 4 bytes
    where it needs more. Phase two runs while the view lies in what the runtime allocated
    (161002 past it), and the values land there."""
    arena = Arena(stream)
    try:
        held = expected_bytes(HUGE_FIRST)[4]
        out = arena.malloc(4)
        assert add_into(arena, held // 4, out) == 0, last_msg()
        got = np.zeros(held // 4, np.float32)
        arena.d2h(got, out)
        np.testing.assert_array_equal(got, np.full(held // 4, 3, np.float32))
        assert add_into(arena, held // 4 + 1, out) == 161002
        assert "not inside one live device allocation" in last_msg()
    finally:
        arena.close()


test_on_other_parts = run_on_parts(other_parts(), "rounded or rounding or requested")
