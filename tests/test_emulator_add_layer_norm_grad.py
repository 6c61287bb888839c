"""The emulator's aclnnAddLayerNormGrad through raw calls: phase one's checks, codes and
messages (hicann/ops-nn norm/add_layer_norm_grad: docs/aclnnAddLayerNormGrad.md's code table,
the dtypes of op_host/add_layer_norm_grad_def.cpp, the rules of
op_host/add_layer_norm_grad_tiling.cpp; the stricter choices in docs/emulator.md), and the
device's numbers: against the float64 reference for every dtype, with and without dsum, and
bit for bit against the kernel's chain (op_kernel/add_layer_norm_grad_cut_n.h MainCompute:
everything in float32, x = x1 + x2, pdVar and pdMean as row sums, dx rounded once) written in
NumPy with the emulator's fixed order of a row's sums and the kernel's staging of dgamma/dbeta
(rows per core and per pass from the tiling); rows too long for the UB as _cut_d.h sums them
(pieces of the tiling's dInnerLength, their float sums added in order);
bits independent of layout and thread count; the other parts in their own processes.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import ADD_LAYER_NORM_GRAD
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_add_layer_norm import lane_sum
from _emu_aclnn import SOC, rstd_shape, run_phase_two
from _part_runs import PARTS, only_where, other_parts, run_on_parts, runs_here
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnAddLayerNormGradGetWorkspaceSize
P2 = lib.aclnnAddLayerNormGrad
CALL = "aclnnAddLayerNormGradGetWorkspaceSize"
TILING = 561002        # ACLNN_ERR_INNER_TILING_ERROR
NO_KERNEL = 561003     # ACLNN_ERR_INNER_FIND_KERNEL_ERROR
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
BF16_PART = ARCH in (2201, 3510)
DTYPES = [F32, F16, BF16] if BF16_PART else [F32, F16]
# op_host/add_layer_norm_grad_def.cpp configures no ascend910: there every call is refused
# (test_no_kernel_on_atlas_training_parts), and the tests of the kernel's work are not defined
# (the parts with the kernel run them)
where_it_runs = only_where(runs_here(ADD_LAYER_NORM_GRAD))
NAMES = ["dy", "x1", "x2", "rstd", "mean", "gamma", "dsumOptional", "dxOut", "dgammaOut",
         "dbetaOut"]


def phase_one(*args, ws=True, ex=True):
    return aclnn_phase_one(P1, *args, ws=ws, ex=ex)


def rand(rng, shape, dt, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(rng, shape, gdims, dt, dsum=False):
    """dy, x1, x2, rstd, mean, gamma, dsum: mean and rstd those of x1 + x2 (float32)."""
    gs = shape[len(shape) - gdims:]
    dy, x1, x2 = rand(rng, shape, dt), rand(rng, shape, dt, 1.5, 0.25), rand(rng, shape, dt)
    g = rand(rng, gs, dt, 0.5, 1.0)
    _, mean, rstd, _ = reference.add_layer_norm(x1, x2, g, np.zeros(gs))
    ds = rand(rng, shape, dt, 0.5) if dsum else None
    return dy, x1, x2, rstd.astype(F32), mean.astype(F32), g, ds


def call(arena, dy, x1, x2, rstd, mean, g, ds=None, kinds=("contig",) * 10, between=None):
    """Runs the operator; (dx, dgamma, dbeta) read back (outputs start at a sentinel);
    ``between`` is called after phase one, before phase two."""
    ins = [DevView(arena, v, kind=k) if v is not None else None
           for v, k in zip((dy, x1, x2, rstd, mean, g, ds), kinds)]
    outs = [DevView(arena, shape=s, dtype=d, kind=k, sentinel=-77.0)
            for s, d, k in zip((dy.shape, g.shape, g.shape), (dy.dtype, F32, F32), kinds[7:])]
    first = phase_one(*ins, *outs)
    if between:
        between()
    run_phase_two(arena, P2, first)
    return tuple(v.read() for v in outs)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


# Each part's vector cores and UB bytes, what the tiling reads (GetCoreNumAiv,
# GetCoreMemSize(UB)): hicann/runtime src/platform/platform_config/{cann,cann-dev}/<part>.ini
# vector_core_cnt, ub_size
CORES_UB = {"Ascend910B2": (48, 196608), "Ascend910_9391": (48, 196608),
            "Ascend950PR_9599": (72, 253952), "Ascend310P3": (7, 262144)}


def tiling(n, dt, dsum):
    """(rows per pass, the cut-D piece or None) as op_host/add_layer_norm_grad_tiling.cpp (and
    _arch35) AddLayerNormGradTilingImpl sets them from the UB less 1280 bytes: nAvailInUb, the
    rows that fit after the buffers held once; where none fits, the cut-D path: one row a pass,
    in pieces of dInnerLength, the UB over every buffer's share of an element (FLOAT: its floats
    less 16 over 9 buffers, 10 with dsum; FLOAT16/BF16: its bytes over 5 16-bit and 7 float
    buffers, 6 and 8 with dsum), through the tiling's ROUND_DOWN, (x - f + 1) // f * f."""
    avail = CORES_UB[SOC][1] - 512 - 512 - 256
    r8, r16 = -(-n // 8) * 8, -(-n // 16) * 16
    c = 5 if dsum else 4
    if dt == F32:  # in floats: gamma, dgamma, dbeta and a spare row; dy, x1, x2, dx (+ dsum)
        nd, per = avail // 4 - r8 * 4, r8 * (c + 1) + 16
        piece, f = (avail // 4 - 16) // (4 + c + 1), 8
    else:          # in bytes: the float copies and the 16-bit rows
        nd, per = avail - (r8 * 12 + r16 * 2), 64 + r8 * c * 4 + r16 * c * 2
        piece, f = avail // ((c + 1) * 2 + (c + 3) * 4), 16
    if nd >= 0 and nd // per >= 1:
        return nd // per, None
    return 1, (piece - f + 1) // f * f


def split(m, n, dt, dsum):
    """(rows per core, rows per pass): nInOneCoreLength = ceil(M / cores), and tiling()'s."""
    return -(-m // CORES_UB[SOC][0]), tiling(n, dt, dsum)[0]


def row_sums(t, piece=None):
    """A row's sum of its terms: the cut-N kernel's one reduction (lane_sum, the emulator's
    order); the cut-D kernel's (add_layer_norm_grad_cut_d.h MainComputeFirstPart; arch35/ the
    same) reduces each piece alike and adds the pieces' float32 sums in order onto 0.0f."""
    if piece is None:
        return lane_sum(t)
    acc = np.zeros(t.shape[0], np.float32)
    for c in range(0, t.shape[1], piece):
        acc = acc + lane_sum(t[:, c:c + piece])
    return acc


def staged_sums(v, per_core, per_pass, deterministic=False):
    """Column sums of float32 rows (M, N) as the kernel stages dgamma/dbeta
    (op_kernel/add_layer_norm_grad_cut_n.h CutNProcess, PrecisionCompute, CopyOut;
    add_layer_norm_determinstic_compute.h): a core's rows in passes, a pass's sums from zero
    over its rows in order. Deterministic: each pass added onto the core's zeroed workspace
    row, then the cores' rows added in core order onto zeros; otherwise each pass added onto
    the zeroed output, core after core (one order of the device's atomic adds)."""
    m = v.shape[0]
    out = np.zeros(v.shape[1], np.float32)
    for c0 in range(0, m, per_core):
        ws = np.zeros(v.shape[1], np.float32)
        for p0 in range(c0, min(c0 + per_core, m), per_pass):
            acc = np.zeros(v.shape[1], np.float32)
            for row in v[p0:min(p0 + per_pass, c0 + per_core, m)]:
                acc = acc + row
            if deterministic:
                ws = ws + acc
            else:
                out = out + acc
        if deterministic:
            out = ws + out
    return out


def device_chain(dy, x1, x2, rstd, mean, g, ds=None, deterministic=False, sums=None,
                 cut_d=True):
    """(dx, dgamma, dbeta) as the kernel makes them (see the module doc), in float32; ``sums``
    replaces the kernel's staging of the column sums; ``cut_d`` False takes the cut-N row
    (one reduction, its dx order) where the tiling picks cut-D."""
    f = np.float32
    n = g.size
    rows = lambda a: a.astype(f).reshape(-1, n)  # noqa: E731
    dyf, x = rows(dy), rows(x1) + rows(x2)
    r = rstd.astype(f).reshape(-1, 1)
    gam = g.astype(f).reshape(n)
    ras = f(1) / f(n)
    gg = dyf * gam
    xc = x + mean.astype(f).reshape(-1, 1) * f(-1)
    r3 = r * r * r
    piece = tiling(n, dy.dtype, ds is not None)[1] if cut_d else None
    pd_var = row_sums(gg * (xc * r3), piece) * -ras
    pd_mean = row_sums((gg * r) * f(-1), piece) * ras
    if piece is not None and ARCH != 3510:
        # add_layer_norm_grad_cut_d.h MainComputeSecondPart: pdMean joins before g * r
        dx = (xc * pd_var[:, None] + pd_mean[:, None]) + gg * r
    else:  # cut_n.h MainCompute; arch35/add_layer_norm_grad_cut_d.h keeps its order
        dx = (xc * pd_var[:, None] + gg * r) + pd_mean[:, None]
    if ds is not None:
        dx = dx + rows(ds)
    stage = split(dyf.shape[0], n, dy.dtype, ds is not None) + (deterministic,)
    sums = sums or (lambda v: staged_sums(v, *stage))  # noqa: E731
    dgamma, dbeta = sums(dyf * (xc * r)), sums(dyf)
    return dx.astype(dy.dtype).reshape(dy.shape), dgamma.reshape(g.shape), dbeta.reshape(g.shape)


# ---- numbers ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dsum", [False, True], ids=["no_dsum", "dsum"])
def test_numbers_against_float64_reference(arena, dt, dsum):
    rng = np.random.default_rng(3 + dsum)
    args = inputs(rng, (3, 5, 96), 1, dt, dsum)
    got = call(arena, *args)
    exp = reference.add_layer_norm_grad(*args)
    mag = reference.add_layer_norm_grad_error_scale(*args)
    assert [a.dtype for a in got] == [dt, F32, F32]
    for a, e, m, odt in zip(got, exp, mag, (dt, F32, F32)):
        bound = 1e-5 * m + reference.half_ulp(e, odt.name) + 1e-30
        assert (np.abs(a.astype(np.float64) - e) <= bound).all()


@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,gdims", [((7, 33), 1), ((2, 3, 181), 1), ((40, 4, 5), 2),
                                         ((181,), 1)], ids=str)
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, dt, shape, gdims):
    rng = np.random.default_rng(sum(shape))
    args = inputs(rng, shape, gdims, dt, dsum=shape[0] % 2 == 0)
    got = call(arena, *args)
    exp = device_chain(*args)
    for a, e in zip(got, exp):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert (bits(a) == bits(e)).all()


@where_it_runs
@pytest.mark.parametrize("kinds", [("strided",) * 10, ("offset",) * 10,
                                   ("contig", "strided", "offset", "contig", "strided",
                                    "offset", "strided", "offset", "contig", "strided")],
                         ids=["strided", "offset", "mixed"])
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    args = inputs(np.random.default_rng(5), (6, 40), 1, F16, dsum=True)
    want = call(arena, *args)
    got = call(arena, *args, kinds=kinds)
    for a, e in zip(got, want):
        assert (bits(a) == bits(e)).all()


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs(np.random.default_rng(6), (100, 200), 1, F32, dsum=True)
    before = lib.aclemuGetNumThreads()
    try:
        lib.aclemuSetNumThreads(1)
        one = call(arena, *args)
        lib.aclemuSetNumThreads(4)
        four = call(arena, *args)
    finally:
        lib.aclemuSetNumThreads(before)
    for a, e in zip(one, four):
        assert (bits(a) == bits(e)).all()


# Shapes whose cores take several passes, or (8000 floats a row) one row a pass on the cut-D
# path, over several cores on every part
STAGED = [((487, 2000), F32, False), ((1000, 1000), F16, True), ((150, 8000), F32, True)]


def wide_inputs(shape, dt, dsum):
    """inputs() with dy spread over eight decades, so the order of a column's sum shows."""
    rng = np.random.default_rng(shape[0])
    args = list(inputs(rng, shape, 1, dt, dsum))
    args[0] = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-4, 4, shape)).astype(dt)
    return args


def plain_sum(v):
    """Column sums of float32 rows, every row in order onto zeros."""
    acc = np.zeros(v.shape[1], np.float32)
    for row in v:
        acc = acc + row
    return acc


@where_it_runs
@pytest.mark.parametrize("shape,dt,dsum", STAGED, ids=str)
def test_dgamma_dbeta_follow_the_kernel_staging(arena, shape, dt, dsum):
    """Outside deterministic mode: each pass's sums added onto the outputs core after core,
    bit for bit. The data is such that a plain row-order sum gives other bits, but on the
    cut-D path: one row a pass, core after core, is every row in order."""
    args = wide_inputs(shape, dt, dsum)
    _, dgamma, dbeta = call(arena, *args)
    _, want_g, want_b = device_chain(*args)
    assert (bits(dgamma) == bits(want_g)).all() and (bits(dbeta) == bits(want_b)).all()
    _, plain_g, plain_b = device_chain(*args, sums=plain_sum)
    one_row_passes = split(*shape, dt, dsum)[1] == 1
    for w, p in ((want_g, plain_g), (want_b, plain_b)):
        assert (bits(w) == bits(p)).all() == one_row_passes


# Rows too long for the UB on every part: 2 to 3 pieces of dInnerLength (4416 to 7232)
CUT_D = [((3, 12000), F32, False), ((2, 14000), F32, True), ((3, 10000), F16, False),
         ((2, 9000), F16, True)] + ([((2, 11000), BF16, True)] if BF16_PART else [])


@where_it_runs
@pytest.mark.parametrize("shape,dt,dsum", CUT_D, ids=str)
def test_cut_d_rows_sum_in_pieces(arena, shape, dt, dsum):
    """The cut-D kernel's pdVar and pdMean: each piece of dInnerLength reduced, the pieces'
    float sums added in order onto zero; its dx adds pdMean before g * r off Ascend 950.
    Bit for bit; the data is such that one reduction of the whole row (and, off Ascend 950,
    the cut-N order of dx's terms) gives other bits."""
    per_pass, piece = tiling(shape[1], dt, dsum)
    assert per_pass == 1 and piece < shape[1] <= 3 * piece
    args = wide_inputs(shape, dt, dsum)
    got = call(arena, *args)
    want = device_chain(*args)
    for a, e in zip(got, want):
        assert (bits(a) == bits(e)).all()
    whole = device_chain(*args, cut_d=False)[0]
    assert (bits(whole) != bits(want[0])).any()


@where_it_runs
def test_cut_d_piece_sizes():
    """dInnerLength for the parts' UBs (hicann/runtime platform_config ub_size), worked by
    hand from AddLayerNormGradTilingImpl: e.g. Ascend910B2's 196608 bytes, FLOAT without dsum:
    (195328 / 4 - 16) / 9 = 5424, ROUND_DOWN to 8 gives 5416 (not 5424)."""
    want = {"Ascend910B2": (5416, 4872, 5120, 4416), "Ascend910_9391": (5416, 4872, 5120, 4416),
            "Ascend950PR_9599": (7008, 6304, 6624, 5712),
            "Ascend310P3": (7232, 6512, 6848, 5904)}[SOC]
    got = tuple(tiling(10 ** 5, dt, ds)[1] for dt in (F32, F16) for ds in (False, True))
    assert got == want


@where_it_runs
def test_dgamma_and_dbeta_are_overwritten(arena):
    """The kernel zeroes dgamma and dbeta before its cores add into them (InitGmData): the
    outputs' old contents (here the sentinel) never reach the result."""
    args = inputs(np.random.default_rng(7), (3, 8), 1, F32)
    _, dgamma, dbeta = call(arena, *args)
    assert (bits(dbeta) == bits(staged_sums(args[0], *split(3, 8, F32, False)))).all()
    assert (bits(dgamma) == bits(device_chain(*args)[1])).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), dt=F32, dsum=True, over=None, sdt=F32,
          odt=F32, acl=None):
    """The ten arguments; ``over`` replaces shapes by name, ``acl`` dtypes by index."""
    over = dict(over or {})
    st = rstd_shape(shape, len(gshape))
    shapes = {"dy": shape, "x1": shape, "x2": shape, "rstd": st, "mean": st, "gamma": gshape,
              "dsumOptional": shape, "dxOut": shape, "dgammaOut": gshape, "dbetaOut": gshape}
    shapes.update(over)
    dts = [dt, dt, dt, sdt, sdt, dt, dt, dt, odt, odt]
    acl = acl or {}
    out = []
    for i, name in enumerate(NAMES):
        if name == "dsumOptional" and not dsum:
            out.append(None)
        elif i < 7:
            out.append(DevView(arena, np.ones(shapes[name], dts[i]), acl_dtype=acl.get(i)))
        else:
            out.append(DevView(arena, shape=shapes[name], dtype=dts[i], acl_dtype=acl.get(i)))
    return out


def refused(args, code, *words):
    rc, _, ex = phase_one(*args)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    assert msg.startswith(CALL + ": "), msg
    for w in words:
        assert w in msg, msg
    return msg


def accepted(args):
    rc, _, ex = phase_one(*args)
    assert rc == OK, (rc, last_msg())  # its size: test_emulator_workspace_size_add_ln.py
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    args = views(arena)
    args[0] = None
    assert phase_one(*args, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(*args, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 7, 8, 9], ids=lambda k: NAMES[k])
def test_each_required_tensor(arena, k):
    args = views(arena)
    args[k] = None
    rc, _, ex = phase_one(*args)
    assert rc == NULLPTR and ex == ffi.NULL
    assert f"{NAMES[k]} is NULL" in last_msg()


@where_it_runs
def test_dsum_is_optional(arena):
    accepted(views(arena, dsum=False))
    accepted(views(arena))


@where_it_runs
def test_part_dtype_table(arena):
    """One dtype for dy, x1, x2, gamma, dsum and dx (FLOAT, FLOAT16, and BF16 outside the
    Atlas inference parts); rstd, mean, dgamma, dbeta FLOAT."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, dt=dt))
        if dt in DTYPES:
            assert rc == OK, (dt, last_msg())
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


@where_it_runs
@pytest.mark.parametrize("case,words", [
    (dict(sdt=F16), ("rstd dtype FLOAT16", "FLOAT")),
    (dict(odt=F16), ("dgammaOut dtype FLOAT16", "FLOAT")),
    (dict(acl={1: lib.ACL_FLOAT16}), ("x1 dtype FLOAT16 must be dy's dtype FLOAT",)),
    (dict(acl={5: lib.ACL_FLOAT16}), ("gamma dtype FLOAT16 must be dy's",)),
    (dict(acl={6: lib.ACL_FLOAT16}), ("dsumOptional dtype FLOAT16 must be dy's",)),
    (dict(acl={7: lib.ACL_FLOAT16}), ("dxOut dtype FLOAT16 must be dy's",)),
    (dict(acl={0: lib.ACL_INT32}), ("dy dtype ACL_INT32 is not supported",)),
], ids=["rstd", "dgamma", "x1", "gamma", "dsum", "dx", "int32"])
def test_dtype_refusals(arena, case, words):
    refused(views(arena, **case), INVALID, *words)


@where_it_runs
@pytest.mark.parametrize("case,words", [
    (dict(shape=(2, 1, 1, 1, 1, 1, 1, 1, 16)), ("x1 rank 9",)),
    (dict(over={"rstd": (4,)}), ("rstd rank 1 != dy rank 2",)),
    (dict(over={"mean": (4,)}), ("mean rank 1 != dy rank 2",)),
    (dict(over={"dgammaOut": (1, 16)}), ("dgammaOut rank 2 != gamma rank 1",)),
    (dict(over={"dbetaOut": (1, 16)}), ("dbetaOut rank 2 != gamma rank 1",)),
    (dict(gshape=(4, 16), over={"dgammaOut": (4, 16), "dbetaOut": (4, 16), "rstd": (1, 1, 1),
                               "mean": (1, 1, 1)}), ("rstd rank 3 != dy rank 2",)),
    (dict(gshape=(2, 4, 16), over={"dgammaOut": (2, 4, 16), "dbetaOut": (2, 4, 16),
                                  "rstd": (1, 1), "mean": (1, 1)}), ("dy rank 2 < gamma rank 3",)),
    (dict(over={"x1": (4, 8)}), ("x1 shape [4,8] != dy shape [4,16]",)),
    (dict(over={"x2": (2, 16)}), ("x2 shape",)),
    (dict(over={"dxOut": (4, 8)}), ("dxOut shape",)),
    (dict(over={"rstd": (2, 1)}), ("rstd shape [2,1] != mean shape [4,1]",)),
    (dict(over={"gamma": (8,)}), ("gamma shape [8] must equal the last 1 dims of dy",)),
    (dict(over={"mean": (2, 1), "rstd": (2, 1)}), ("mean shape [2,1] must be dy's batch",)),
    (dict(over={"dgammaOut": (8,)}), ("dgammaOut shape [8] != gamma shape [16]",)),
    (dict(over={"dbetaOut": (8,)}), ("dbetaOut shape",)),
    (dict(over={"dsumOptional": (1, 16)}), ("dsumOptional shape [1,16] != dy shape",)),
    (dict(shape=(0, 16)), ("has a zero dim",)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_shape_refusals(arena, case, words):
    refused(views(arena, **case), TILING, *words)


@where_it_runs
def test_every_output_empty_runs_nothing(arena):
    """gamma (hence dgamma, dbeta) and dx empty: the framework skips the tiling and the
    kernel; the shape rules still hold (stricter, docs/emulator.md)."""
    args = views(arena, shape=(4, 0), gshape=(0,))
    rc, ws, ex = phase_one(*args)
    assert rc == OK and ws == 0, last_msg()
    assert P2(ffi.NULL, 0, ex, arena.stream) == OK
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    refused(views(arena, shape=(4, 0), gshape=(0,), over={"x2": (4, 1)}), TILING, "x2 shape")


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    dx = args[7]
    arena.destroy_tensor(dx.handle)
    try:
        refused(args, INVALID, "dxOut", "not a live aclTensor")
    finally:
        dx.handle = arena.tensor(dx.shape, dx.dtype, dx.strides, dx.offset, dx.n, dx.ptr)


# ---- the part -----------------------------------------------------------------------------------

@only_where(ARCH == 1001)   # the Atlas training parts (their own run or their child)
def test_no_kernel_on_atlas_training_parts(arena):
    """op_host/add_layer_norm_grad_def.cpp configures no ascend910: the framework's kernel
    lookup fails (561003) for every call, before it compares dtypes."""
    refused(views(arena), NO_KERNEL, "not supported on", SOC)
    refused(views(arena, acl={0: lib.ACL_INT32}), NO_KERNEL)


test_on_other_parts = run_on_parts(
    other_parts(set(PARTS) - {"Ascend910_9391"}), lambda part: (
        "no_kernel or part_dtype_table" if part == "Ascend910A" else
        "part_dtype_table or bit_for_bit and 181 or reference or staging or cut_d"))
