"""Deterministic mode: the runtime's system parameter options and what the operators do with
the deterministic level.

Stated from the vendor's sources, independently of the emulator's C code:
- hicann/runtime src/acl/aclrt_impl/context.cpp: aclrtCtx{Get,Set}SysParamOpt take options
  0..2, aclrt{Get,Set}SysParamOpt 0..3, else 100000; a NULL value pointer 100000;
  src/runtime/api/impl/api_error.cc and api/api_c.cc: values outside [0, 4) for
  ACL_OPT_DETERMINISTIC, [0, 2) for the others, 107000; the ctx calls act on the current
  context (none: 107002), which answers 107021 for an option it never set; rtCtxSetSysParamOpt
  also stores the process's value; the process's values start at 0.
- hicann/opbase indv_executor_utils.h GetGlobalDeterministic, individual_op_api.cpp
  NnopbaseMatchArgs: phase one reads the process's level (1 with strong consistency on
  reads as 2) and the executor keeps it; the tilings get it as GetDeterministic().
- hicann/ops-nn norm/rms_norm_grad/op_host/rms_norm_grad_tiling.cpp SetTilingDataAndWorkspace:
  GetDeterministic() == 1 adds each used core's dgamma row (col_val_align + 8 floats instead of
  8), SetChunkWorkspace a chunk of it for inputs of 500 MiB on Ascend910B/Ascend910_93;
  op_kernel/rms_norm_grad_common.h FinalProcessDeterministic adds the cores' rows in core
  order. norm/add_layer_norm_grad/op_host/add_layer_norm_grad_tiling.cpp (and _arch35): the
  level times numCore x roundUpNumLastDimFloat x 2 bytes on top of 16 + 20 MiB; its kernels
  (op_kernel/add_layer_norm_grad_cut_n.h, _cut_d.h, arch35/) stage dgamma/dbeta per core in
  the workspace at any level above 0 and add the cores' rows in core order
  (add_layer_norm_determinstic_compute.h), else add each pass atomically into the outputs.
  norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp: aclnnBatchNorm's kernels (BatchNormV3
  on Ascend 950) read no level.
"""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import acl_py
from acl_py.errors import AclArgumentError, AclError, AclTypeError, InvalidParameterError
from acl_py.raw import ffi, lib

from test_emulator_op import F16, F32, OK, DevView, arena, last_msg, stream  # noqa: F401
from _emu_aclnn import phase_one, workspace_attempt
from _part_runs import other_parts, run_on_parts
from _workspace_model import ARCH, CORES, SOC, MiB16, ceil_to
from test_emulator_workspace_size_rms import GRAD, grad_expected, ws_of
import test_emulator_add_layer_norm_grad as alng
import test_emulator_workspace_size_bn as bn

DET, DEBUG, STRONG, EARLY = 0, 1, 2, 3
PARAM, RT_PARAM, CTX_NULL, NOT_SET = 100000, 107000, 107002, 107021


@pytest.fixture(autouse=True)
def _level_off():
    """Every test starts and ends with the process's options off, as a process starts."""
    for opt in (DET, STRONG):
        assert lib.aclrtSetSysParamOpt(opt, 0) == OK
    yield
    for opt in (DET, STRONG):
        assert lib.aclrtSetSysParamOpt(opt, 0) == OK


def get(fn, opt):
    v = ffi.new("int64_t *", -7)
    rc = fn(opt, v)
    return rc, v[0]


# ---- the runtime's calls ----------------------------------------------------------------------

def test_process_value_starts_off_and_keeps_what_is_set(stream):
    assert get(lib.aclrtGetSysParamOpt, DET) == (OK, 0)
    for level in (1, 2, 3, 0):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        assert get(lib.aclrtGetSysParamOpt, DET) == (OK, level)
    assert lib.aclrtSetSysParamOpt(EARLY, 1) == OK
    assert get(lib.aclrtGetSysParamOpt, EARLY) == (OK, 1)
    assert lib.aclrtSetSysParamOpt(EARLY, 0) == OK


@pytest.mark.parametrize("opt,value", [(DET, 4), (DET, -1), (DEBUG, 2), (STRONG, 2),
                                       (EARLY, -1), (DET, 1 << 40)])
def test_values_out_of_range_are_107000(stream, opt, value):
    for setter in (lib.aclrtSetSysParamOpt, lib.aclrtCtxSetSysParamOpt):
        if setter is lib.aclrtCtxSetSysParamOpt and opt == EARLY:
            continue
        assert setter(opt, value) == RT_PARAM
        msg = last_msg()
        assert "value" in msg and str(value) in msg
    assert get(lib.aclrtGetSysParamOpt, opt) == (OK, 0)


@pytest.mark.parametrize("opt", [4, 99, 0xFFFFFFFF])  # the last: -1 as C reads it
def test_unknown_options_are_100000(stream, opt):
    for call in (lib.aclrtSetSysParamOpt, lib.aclrtCtxSetSysParamOpt):
        assert call(opt, 0) == PARAM
        assert "opt" in last_msg()
    for call in (lib.aclrtGetSysParamOpt, lib.aclrtCtxGetSysParamOpt):
        assert get(call, opt)[0] == PARAM


def test_kernel_early_start_is_no_context_option(stream):
    assert lib.aclrtCtxSetSysParamOpt(EARLY, 1) == PARAM
    assert get(lib.aclrtCtxGetSysParamOpt, EARLY)[0] == PARAM


def test_null_value_pointers_are_100000(stream):
    assert lib.aclrtGetSysParamOpt(DET, ffi.NULL) == PARAM
    assert lib.aclrtCtxGetSysParamOpt(DET, ffi.NULL) == PARAM
    assert "NULL" in last_msg()


def test_context_value_is_per_context_and_sets_the_process_value(stream):
    # acl-py's default context, current on this thread: nothing set there yet
    assert get(lib.aclrtCtxGetSysParamOpt, DET)[0] == NOT_SET
    assert lib.aclrtCtxSetSysParamOpt(DET, 1) == OK
    assert get(lib.aclrtCtxGetSysParamOpt, DET) == (OK, 1)
    assert get(lib.aclrtGetSysParamOpt, DET) == (OK, 1)  # rtCtxSetSysParamOpt stores it too
    with acl_py.Context(0) as ctx:
        ctx.set_current()
        assert get(lib.aclrtCtxGetSysParamOpt, DET)[0] == NOT_SET  # no fallback
        assert lib.aclrtCtxSetSysParamOpt(DET, 3) == OK
        assert get(lib.aclrtCtxGetSysParamOpt, DET) == (OK, 3)
        assert get(lib.aclrtGetSysParamOpt, DET) == (OK, 3)
        assert lib.aclrtSetSysParamOpt(DET, 2) == OK  # the process's only
        assert get(lib.aclrtCtxGetSysParamOpt, DET) == (OK, 3)
    ctx_of_device = ffi.new("aclrtContext *")
    assert lib.aclrtGetCurrentContext(ctx_of_device) == OK
    assert lib.aclrtSetCurrentContext(ctx_of_device[0]) == OK
    assert get(lib.aclrtCtxGetSysParamOpt, DET) == (OK, 1)


def test_context_calls_need_a_current_context(stream):
    out = {}

    def body():  # a new thread: no device set on it, so no current context
        out["set"] = lib.aclrtCtxSetSysParamOpt(DET, 1)
        out["get"] = get(lib.aclrtCtxGetSysParamOpt, DET)[0]
        out["process"] = get(lib.aclrtGetSysParamOpt, DET)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out == {"set": CTX_NULL, "get": CTX_NULL, "process": (OK, 0)}


# ---- operators: phase one reads the level -----------------------------------------------------

SPLIT_N = 6080  # BUFFER_SIZE_SPLIT_N_HIGH_PRECISION: longer rows take the split-D key (2)
CHUNK_SOCS = ("Ascend910B2", "Ascend910_9391")  # SocVersion ASCEND910B and ASCEND910_93


def rms_grad_det_expected(M, N, dtype=F32):
    """rms_norm_grad_tiling.cpp at GetDeterministic() == 1: (col_val_align + 8) floats per
    used core + 16 MiB; SetChunkWorkspace instead (chunk + 8 + block_factor floats per used
    core) on Ascend910B/Ascend910_93 for split-D rows when the inputs (dy, x, rstd, gamma,
    summed in uint32 as the tiling does) reach 500 MiB and the cores' rows pass 5% of them,
    the chunk (5% less block_factor floats, per core) in whole 4096 floats, at least one.
    Ascend 950's regbase tilings read no deterministic flag."""
    if ARCH == 3510:
        return grad_expected(M, N)
    rows = -(-M // CORES)
    used = -(-M // rows)
    col_align = ceil_to(N, 8 if dtype == F32 else 16)
    size = 4 if dtype == F32 else 2
    total = (M * N * size * 2 + M * 4 + N * size) % 2 ** 32
    enable = int(total * 0.05)
    if (SOC in CHUNK_SOCS and N > SPLIT_N and total >= 500 * 2 ** 20
            and used * col_align * 4 > enable):
        chunk = (enable - rows * 4) % 2 ** 64 // (used * 4) % 2 ** 32 // 4096 * 4096 or 4096
        return (chunk + 8 + rows) * used * 4 + MiB16
    return (col_align + 8) * used * 4 + MiB16


def grad_views(arena, M, N, seed=5):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(F32)
    rstd = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6))
    return [DevView(arena, rng.standard_normal((M, N)).astype(F32)), DevView(arena, x),
            DevView(arena, rstd.astype(F32)), DevView(arena, rng.standard_normal(N).astype(F32)),
            DevView(arena, shape=(M, N), dtype=F32), DevView(arena, shape=(N,), dtype=F32)]


# on the Atlas training series gamma's element count is a multiple of 64 (the tiling refuses
# another: test_emulator_rms_norm_grad), so a shape of another could never run there: no test
SHAPES = [(m, n) for m, n in [(3, 64), (100, 64), (5, 640), (2 * 64 * 64, 64), (7, 6144),
                              (9, 100)] if ARCH != 1001 or n % 64 == 0]


@pytest.mark.parametrize("M,N", SHAPES, ids=[f"{m}x{n}" for m, n in SHAPES])
def test_rms_norm_grad_size_by_level(arena, M, N):
    """Only level 1 is deterministic to this tiling (GetDeterministic() == 1: the generated
    interface hands the level itself, so 2 and 3 size as off)."""
    for level, expected in ((0, grad_expected(M, N)), (1, rms_grad_det_expected(M, N)),
                            (2, grad_expected(M, N)), (3, grad_expected(M, N))):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        assert ws_of(phase_one(GRAD[0], *grad_views(arena, M, N))) == expected, level


def test_strong_consistency_lifts_level_one(arena):
    """Level 1 with option 2 on reads as 2 (GetGlobalDeterministic), so not this tiling's 1."""
    assert lib.aclrtSetSysParamOpt(DET, 1) == OK
    assert lib.aclrtSetSysParamOpt(STRONG, 1) == OK
    assert ws_of(phase_one(GRAD[0], *grad_views(arena, 5, 64))) == grad_expected(5, 64)


MiB500 = 500 * 2 ** 20  # SetChunkWorkspace's WORKSPACE_LIMIT on the inputs


def described(arena, M, N, dtype):
    """dy, x, rstd, gamma, dxOut, dgammaOut of M rows of N as descriptors with no memory
    behind them (a NULL address, as CANN's own examples create tensors): phase one reads
    descriptors only, so inputs of gigabytes cost nothing here; nothing is launched."""
    spec = (((M, N), dtype), ((M, N), dtype), ((M, 1), F32), ((N,), dtype), ((M, N), dtype),
            ((N,), F32))
    return [arena.tensor(shape, dt, [math.prod(shape[i + 1:]) for i in range(len(shape))], 0,
                         math.prod(shape), ffi.NULL) for shape, dt in spec]


def _at_500(M, size):
    """The first N whose inputs (M x N twice, M rstd floats, N gamma values) reach 500 MiB."""
    return (MiB500 - 4 * M) // (2 * M * size + size) + 1


# (name, dtype, M, N, whether SetChunkWorkspace chunks on Ascend910B/Ascend910_93)
CHUNK_CASES = [
    ("f16-rows-per-core-at-500MiB", F16, CORES, _at_500(CORES, 2), True),
    ("f16-rows-per-core-below-500MiB", F16, CORES, _at_500(CORES, 2) - 1, False),
    ("f32-3-rows-per-core", F32, 3 * CORES - 1, _at_500(3 * CORES - 1, 4), True),
    ("f16-25-rows-per-core-within-5pct", F16, 25 * CORES, _at_500(25 * CORES, 2), False),
    # past 4 GiB the tiling's uint32 sum wraps: to below 500 MiB, then to just above it
    ("f32-wraps-below-500MiB", F32, CORES, 2 ** 32 // (8 * CORES) + 1, False),
    ("f32-wraps-above-500MiB", F32, CORES, (2 ** 32 + MiB500 + 2 ** 20) // (8 * CORES), True),
]


@pytest.mark.parametrize("name,dtype,M,N,chunks", CHUNK_CASES, ids=[c[0] for c in CHUNK_CASES])
def test_rms_norm_grad_chunked_size_by_level(arena, name, dtype, M, N, chunks):
    """SetChunkWorkspace's rows (split-D, N > 6080) at level 1 against the plain rule, on
    descriptors of 0.5 to 4.3 GB; levels 0 and 2 are the non-deterministic 8 floats per
    core."""
    if ARCH == 1001:
        N = ceil_to(N, 64)  # gamma's element count must be a multiple of 64 there
    assert N > SPLIT_N
    used = -(-M // -(-M // CORES))
    plain = (ceil_to(N, 8 if dtype == F32 else 16) + 8) * used * 4 + MiB16
    expected = rms_grad_det_expected(M, N, dtype)
    if ARCH != 3510:  # the case is what its name says (the rule's own check)
        assert (expected < plain) == (chunks and SOC in CHUNK_SOCS), (expected, plain)
    for level, want in ((0, grad_expected(M, N)), (1, expected), (2, grad_expected(M, N))):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        assert ws_of(phase_one(GRAD[0], *described(arena, M, N, dtype))) == want, level


def test_context_setting_reaches_the_operators(arena):
    assert lib.aclrtCtxSetSysParamOpt(DET, 1) == OK
    assert ws_of(phase_one(GRAD[0], *grad_views(arena, 5, 64))) == rms_grad_det_expected(5, 64)


def dgamma_core_order(dy, x, rstd, cores):
    """dgamma as the deterministic kernel forms it, in float32: each core sums dy * (x * rstd)
    over its block of ceil(M / cores) rows in row order, then FinalProcessDeterministic adds
    the cores' rows in core order onto zeros."""
    M = x.shape[0]
    per = -(-M // cores)
    out = np.zeros(x.shape[1], F32)
    for c0 in range(0, M, per):
        acc = np.zeros(x.shape[1], F32)
        for r in range(c0, min(c0 + per, M)):
            acc = acc + dy[r] * (x[r] * rstd[r])
        out = acc + out
    return out


def test_rms_norm_grad_deterministic_run_keeps_its_phase_one_level(arena):
    """Phase one at level 1 sizes the deterministic workspace; switching the level off before
    the launch changes nothing (the executor keeps its level): a short workspace is still
    refused, the exact one runs. dgamma is the cores' rows added in core order, bit for bit,
    the same on every run, and dx matches float64."""
    M, N = 100, 64
    results = []
    for attempt in ("short", "exact", "exact"):
        assert lib.aclrtSetSysParamOpt(DET, 1) == OK
        args = grad_views(arena, M, N)
        rc, ws, ex = phase_one(GRAD[0], *args)
        assert rc == OK, last_msg()
        assert ws == rms_grad_det_expected(M, N)
        assert lib.aclrtSetSysParamOpt(DET, 0) == OK
        if workspace_attempt(arena, GRAD[1], ex, ws, attempt):
            results.append((args[4].read().copy(), args[5].read().copy()))
            dy, x, rstd, g = (a.read() for a in args[:4])
    (dx1, dg1), (dx2, dg2) = results
    assert dx1.tobytes() == dx2.tobytes() and dg1.tobytes() == dg2.tobytes()
    cores = CORES if ARCH != 3510 else None
    if cores:
        assert dg1.tobytes() == dgamma_core_order(dy, x, rstd, cores).tobytes()
    d64, x64, r64, g64 = (a.astype(np.float64) for a in (dy, x, rstd, g))
    xr, dyg = x64 * r64, d64 * g64
    np.testing.assert_allclose(dx1, (dyg - xr * (dyg * xr).mean(1, keepdims=True)) * r64,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dg1, (d64 * xr).sum(0), rtol=1e-5, atol=1e-5)


def alng_expected(M, N, level):
    """add_layer_norm_grad_tiling.cpp: 16 MiB + 20 MiB + level x numCore x roundUp(N, 8)
    floats' bytes x 2, numCore = ceil(M / ceil(M / cores))."""
    used = -(-M // -(-M // CORES))
    return MiB16 + 20 * 1024 * 1024 + level * used * ceil_to(N, 8) * 4 * 2


@alng.where_it_runs
@pytest.mark.parametrize("shape", [(4, 16), (3, 100), (300, 20)], ids=str)
def test_add_layer_norm_grad_size_by_level(arena, shape):
    for level in (0, 1, 2, 3):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        args = alng.views(arena, shape=shape, gshape=shape[-1:])
        assert ws_of(alng.phase_one(*args)) == alng_expected(*shape, level), level
    empty = alng.views(arena, shape=(4, 0), gshape=(0,))
    assert ws_of(alng.phase_one(*empty)) == 0


U32 = 2 ** 32


def alng_uint32_expected(M, N, level):
    """The tiling's own sizes in its uint32 (None: refused, 561002). Atlas A2/A3 and inference
    (add_layer_norm_grad_tiling.cpp): numLastDim and numFirstDim are uint32 products, so
    modulo 2^32, and a numLastDim of 0 is refused (BasicCheck); Ascend 950 (_arch35.cpp)
    refuses either past 2^32 - 1, and a core's nInOneCoreLength x numLastDim past it. numCore
    = CEIL_DIV(numFirstDim, CEIL_DIV(numFirstDim, cores)), CEIL_DIV's x + y - 1 wrapping in
    uint32; the deterministic rows take roundUp(numLastDim, 8) floats (a uint64 count)."""
    if ARCH == 3510 and (N >= U32 or M >= U32):
        return None
    n, m = N % U32, M % U32
    if n == 0:
        return None
    cdiv = lambda x, y: (x + y - 1) % U32 // y if y else 0  # noqa: E731
    num_core = cdiv(m, cdiv(m, CORES))
    per_core = (m + num_core - 1) % U32 // num_core if num_core else 0
    if ARCH == 3510 and per_core * n >= U32:
        return None
    return MiB16 + 20 * 1024 * 1024 + level * num_core * ceil_to(n, 8) * 4 * 2


def alng_described(arena, batch, gshape, dt=F16):
    """aclnnAddLayerNormGrad's ten arguments (no dsum) as descriptors with no memory behind
    them, as described() does for RmsNormGrad: dy, x1, x2, dxOut of batch + gshape, rstd and
    mean of batch then ones, gamma, dgammaOut and dbetaOut of gshape."""
    shape, st = batch + gshape, batch + (1,) * len(gshape)
    spec = [(shape, dt)] * 3 + [(st, F32)] * 2 + [(gshape, dt), None, (shape, dt),
                                                  (gshape, F32), (gshape, F32)]
    return [None if x is None else
            arena.tensor(x[0], x[1], [math.prod(x[0][i + 1:]) for i in range(len(x[0]))], 0,
                         math.prod(x[0]), ffi.NULL) for x in spec]


# (name, batch dims, gamma's shape): element counts past what the tiling's uint32 holds
UINT32_CASES = [
    ("n-2^32-wraps-to-0", (1,), (65536, 65536)),
    ("n-wraps-to-64", (5,), (U32 + 64,)),
    ("n-just-below-2^32", (3,), (U32 - 8,)),
    ("m-wraps-to-5", (U32 + 5,), (16,)),
    ("m-product-wraps-to-65536", (65536, 65537), (16,)),
    ("m-2^32-1-first-ceil-div-wraps", (U32 - 1,), (16,)),  # numCore 0
    ("m-2^32-100-second-ceil-div-wraps", (U32 - 100,), (16,)),  # numCore 0
    ("per-core-past-2^32", (4 * 72,), (2 ** 30 + 8,)),
]


@alng.where_it_runs
@pytest.mark.parametrize("name,batch,gshape", UINT32_CASES, ids=[c[0] for c in UINT32_CASES])
def test_add_layer_norm_grad_uint32_size_by_level(arena, name, batch, gshape):
    """Phase one on descriptors of up to 2^33 elements: the deterministic workspace from the
    tiling's wrapped numLastDim and numCore, or its refusal (561002), at levels 0..3."""
    M, N = math.prod(batch), math.prod(gshape)
    for level in (0, 1, 2, 3):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        want = alng_uint32_expected(M, N, level)
        rc, ws, ex = alng.phase_one(*alng_described(arena, batch, gshape))
        msg = last_msg()
        if want is None:
            assert rc == alng.TILING and ex == ffi.NULL, (rc, msg)
            assert "uint32" in msg and msg.startswith(alng.CALL), msg
        else:
            assert (rc, ws) == (OK, want), (level, msg)
            assert lib.aclDestroyAclOpExecutor(ex) == OK
    if name == "n-wraps-to-64" and ARCH != 3510:  # the wrapped count, not the true one
        assert want != alng_expected(M, N, 3)


@pytest.mark.parametrize("shape", [(2, 64, 3), (4, 3, 5), (2, 64, 2, 2, 3)], ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
def test_batch_norm_size_same_at_every_level(arena, shape, training):
    """aclnnBatchNorm's graph reads no level: on Ascend 950 the op_api runs BatchNormV3 in
    both modes (aclnn_batch_norm.cpp BatchNormProcRegbase), whose tilings never ask
    GetDeterministic(); BNTrainingReduce (whose arch35 tiling has the deterministic
    templates) sits only on BatchNormProc's path, which Ascend 950 never takes; elsewhere it
    and its partners are TBE kernels (no public workspaces)."""
    want = bn.bn_expected(shape, training)
    for level in (0, 1, 2, 3):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        assert bn.bn_size(arena, shape, training=training) == want, level


def test_batch_norm_same_results_at_all_levels(arena):
    """And the kernels' numbers do not change with it, bit for bit."""
    outs = []
    for level in (0, 1):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        args = bn.bn_views(arena, (3, 64, 5), data=True)
        rc, ws, ex = bn.bn_phase_one(arena, args)
        assert rc == OK, last_msg()
        assert workspace_attempt(arena, bn.BN_P2, ex, ws, "exact")
        outs.append(b"".join(args[i].read().tobytes() for i in (3, 4, 8, 9, 10)))
    assert outs[0] == outs[1]


@alng.where_it_runs
@pytest.mark.parametrize("shape,dt,dsum", alng.STAGED, ids=str)
def test_add_layer_norm_grad_core_order_by_level(arena, shape, dt, dsum):
    """Levels 1..3 (isDeterministicKey non-zero): each core's passes staged in its workspace
    row, the rows added in core order onto zeros (FinalProcessDeterministic), bit for bit;
    level 0: the passes added straight onto the outputs, core after core. The data is such
    that the two orders give different bits (each core takes several passes)."""
    args = alng.wide_inputs(shape, dt, dsum)
    staged = alng.device_chain(*args, deterministic=True)
    atomic = alng.device_chain(*args)
    for s, a in zip(staged[1:], atomic[1:]):
        assert (alng.bits(s) != alng.bits(a)).any()
    for level in (0, 1, 2, 3):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        got = alng.call(arena, *args)
        for g, e in zip(got[1:], (staged if level else atomic)[1:]):
            assert (alng.bits(g) == alng.bits(e)).all(), level


@alng.where_it_runs
def test_add_layer_norm_grad_run_keeps_its_phase_one_level(arena):
    """The executor keeps the level phase one read: switching it before the launch changes
    neither the workspace the run takes nor the order of dgamma/dbeta."""
    args = alng.wide_inputs(*alng.STAGED[0])
    for level, other in ((1, 0), (0, 2)):
        assert lib.aclrtSetSysParamOpt(DET, level) == OK
        got = alng.call(arena, *args, between=lambda: lib.aclrtSetSysParamOpt(DET, other))
        want = alng.device_chain(*args, deterministic=level > 0)
        for g, e in zip(got[1:], want[1:]):
            assert (alng.bits(g) == alng.bits(e)).all(), level


# ---- the Python API ---------------------------------------------------------------------------

def test_python_api_sets_and_reads_the_process_level(stream):
    assert acl_py.get_deterministic() is acl_py.Deterministic.OFF
    acl_py.set_deterministic()
    assert acl_py.get_deterministic() is acl_py.Deterministic.ON
    assert get(lib.aclrtGetSysParamOpt, DET) == (OK, 1)
    acl_py.set_deterministic(acl_py.Deterministic.BATCH_CONSISTENCY)
    assert acl_py.get_deterministic() == 3
    acl_py.set_deterministic(False)
    assert acl_py.get_deterministic() == 0
    with acl_py.deterministic(2):
        assert acl_py.get_deterministic() is acl_py.Deterministic.STRONG_CONSISTENCY
    assert acl_py.get_deterministic() is acl_py.Deterministic.OFF


@pytest.mark.parametrize("level", [4, -1, 1 << 40])
def test_python_api_refused_levels(stream, level):
    acl_py.set_deterministic(1)
    with pytest.raises(InvalidParameterError) as e:
        acl_py.set_deterministic(level)
    assert e.value.code == RT_PARAM and e.value.parameter == "level"
    assert "107000" in str(e.value) and str(level) in str(e.value)
    assert acl_py.get_deterministic() == 1  # nothing changed
    with pytest.raises(InvalidParameterError):
        with acl_py.deterministic(level):
            pass
    assert acl_py.get_deterministic() == 1


@pytest.mark.parametrize("level,cls", [("1", AclTypeError), (1.0, AclTypeError),
                                       (None, AclTypeError), (1 << 63, AclArgumentError)])
def test_python_api_refuses_what_is_no_int64(stream, level, cls):
    with pytest.raises(cls) as e:
        acl_py.set_deterministic(level)
    assert e.value.argument == "level" and not isinstance(e.value, AclError)
    assert acl_py.get_deterministic() == 0


def test_python_api_governs_the_operators(stream):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 64)).astype(F32)
    dy = rng.standard_normal((40, 64)).astype(F32)
    g = rng.standard_normal(64).astype(F32)
    rstd = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6))
    rstd = rstd.astype(F32)
    with acl_py.deterministic():
        runs = [acl_py.rms_norm_grad(dy, x, rstd, g) for _ in range(2)]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*runs))
    ref = acl_py.reference.rms_norm_grad(dy, x, rstd, g)
    for got, want in zip(runs[0], ref):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.no_leak_check  # runs in a child process
def test_python_api_on_the_cann_path(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: the public runtime calls only."""
    from _cann_path import run_on_cann_path
    run_on_cann_path(emulator, """
from acl_py.errors import InvalidParameterError
assert acl_py.get_deterministic() == 0
with acl_py.deterministic():
    assert acl_py.get_deterministic() == 1
    x = np.linspace(-2, 2, 128, dtype=np.float32).reshape(2, 64)
    r = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6)).astype('f4')
    dx, dg = acl_py.rms_norm_grad(x, x, r, np.ones(64, np.float32))
    e = reference.rms_norm_grad(x, x, r, np.ones(64, np.float32))
    assert np.allclose(dx, e[0], rtol=1e-5, atol=1e-5) and np.allclose(dg, e[1], rtol=1e-5)
try:
    acl_py.set_deterministic(4)
    raise AssertionError("level 4 accepted")
except InvalidParameterError as err:
    assert err.code == 107000 and err.parameter == "level"
assert acl_py.get_deterministic() == 0
""")


test_on_other_parts = run_on_parts(other_parts(), "size or core_order or keeps or levels")
