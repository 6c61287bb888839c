"""acl_py.inplace_add_rms_norm / acl_py.InplaceAddRmsNorm (aclnnInplaceAddRmsNorm through the
declarative operator layer, its in-place outputs declared ``output(..., into=...)``): y written
into x1 and x1 + x2 into x2, on device tensors and written back into NumPy arrays, the same
bits as acl_py.add_rms_norm and within the float64 reference's bounds; the in-place rules
(read-only or overlapping arrays, out= entries of in-place results) and argument errors (typed,
naming the argument, no C call, nothing leaked: the autouse leak check); the plan; the CANN
path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import INPLACE_ADD_RMS_NORM

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, gdims, dt=F32, seed=0):
    rng = np.random.default_rng(seed)
    x1 = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (rng.standard_normal(shape[len(shape) - gdims:]) * 0.5 + 1).astype(dt)
    return x1, x2, g


def bits(a):
    return np.asarray(a).view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_results_land_in_x1_and_x2(path, dt):
    """The call returns (x1, rstd, x2), the very objects given, holding AddRmsNorm's y and x
    bit for bit (the same kernels), within the float64 reference's bounds."""
    x1, x2, g = make((3, 5, 67), 1, dt)
    why = INPLACE_ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-4))
    want = acl_py.add_rms_norm(x1, x2, g, 1e-4)
    exp = reference.add_rms_norm(x1, x2, g, 1e-4)
    mag = reference.add_rms_norm_error_scale(x1, x2, g, 1e-4)
    if path == "numpy":
        a1, a2 = x1.copy(), x2.copy()
        res = acl_py.inplace_add_rms_norm(a1, a2, g, 1e-4)
        assert res[0] is a1 and res[2] is a2
        got = res
    else:
        D1, D2, G = (acl_py.DeviceTensor.from_numpy(a) for a in (x1, x2, g))
        res = acl_py.inplace_add_rms_norm(D1, D2, G, 1e-4)
        assert res[0] is D1 and res[2] is D2
        got = tuple(None if t is None else t.to_numpy() for t in res)
    for name, a, w, e, m, unwritten in zip(("y", "rstd", "x"), got, want, exp, mag, why):
        if unwritten is not None:   # the part does not write it (the declaration)
            assert a is None and w is None, name
            continue
        assert np.array_equal(bits(a), bits(w)), name
        reference.assert_close(a.reshape(e.shape), e, m, dt, name)


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
def test_strided_and_byte_swapped_numpy_arrays_are_written_back():
    x1, x2, g = make((4, 6, 32), 1, F32, seed=1)
    want = acl_py.add_rms_norm(x1, x2, g)
    big = np.repeat(x1, 2, axis=2)
    a1 = big[:, :, ::2]                          # a strided view of the caller's array
    a2 = x2.astype(x2.dtype.newbyteorder(">"))   # another byte order
    acl_py.inplace_add_rms_norm(a1, a2, g)
    assert np.array_equal(a1, want[0]) and np.array_equal(big[:, :, 1::2], x1)
    assert np.array_equal(a2, want[2])


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
def test_given_rstd():
    x1, x2, g = make((2, 8), 1)
    r = np.full((2, 1), -1.0, F32)
    want = reference.add_rms_norm(x1, x2, g)[1]
    why = INPLACE_ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-6))
    res = acl_py.inplace_add_rms_norm(x1, x2, g, out=(None, r, None))
    if why[1] is None:
        assert res[1] is r and np.allclose(r, want, rtol=1e-6)
    else:   # not written on this part: None, the caller's array left as it was
        assert res[1] is None and (r == -1).all()


def _readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


ERRORS = [
    (dict(x1=_readonly(np.ones((2, 4), F32))), AclArgumentError, "x1"),
    (dict(x2=_readonly(np.ones((2, 4), F32))), AclArgumentError, "x2"),
    (dict(x1=np.ones((2, 4), np.float64)), AclTypeError, "x1"),
    (dict(x2=np.ones((2, 4), F16)), AclTypeError, "x2"),
    (dict(x2=np.ones((2, 5), F32)), AclArgumentError, "x2"),
    (dict(gamma=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(epsilon=-1e-6), AclArgumentError, "epsilon"),
    (dict(out=(np.empty((2, 4), F32), None, None)), AclArgumentError, "out[0] (y)"),
    (dict(out=(None, None, np.empty((2, 4), F32))), AclArgumentError, "out[2] (x)"),
    (dict(out=(None, np.empty((2, 4), F32), None)), AclArgumentError, "out[1] (rstd)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x1, x2, g = make((2, 4), 1)
    case = dict(dict(x1=x1, x2=x2, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.inplace_add_rms_norm(**case)
    assert ei.value.argument == argument and type(ei.value) is exc, ei.value
    assert "aclnnInplaceAddRmsNormGetWorkspaceSize" not in emulator.call_counts()


def test_overlapping_numpy_arrays_are_refused_untouched(emulator):
    """x1 and x2 sharing memory cannot each receive their result: refused before any copy."""
    buf = np.arange(12, dtype=F32).reshape(2, 6)
    emulator.reset_call_counts()
    with pytest.raises(AclArgumentError) as ei:
        acl_py.inplace_add_rms_norm(buf[:, :4], buf[:, 2:], np.ones(4, F32))
    assert ei.value.argument == "x2" and "shares memory with x1" in str(ei.value)
    assert np.array_equal(buf, np.arange(12, dtype=F32).reshape(2, 6))
    assert "aclnnInplaceAddRmsNormGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
def test_device_refusal_names_the_argument_and_carries_the_code():
    """Phase one's 561002 (the tiling's rstd rule) for a given rstd of the wrong shape: named
    by the Python checks; the device tensors are left as they were."""
    x1, x2, g = make((2, 4), 1)
    D1, D2, G = (acl_py.DeviceTensor.from_numpy(a) for a in (x1, x2, g))
    with pytest.raises(AclArgumentError) as ei:
        acl_py.inplace_add_rms_norm(D1, D2, G, out=(None, acl_py.DeviceTensor.empty((2,), F32),
                                                    None))
    written = INPLACE_ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-6))[1] is None
    # where the part does not write rstd the device never sees that tensor: the Python
    # check of the out= entry refuses it
    assert ei.value.argument == "out[1] (rstd)" and ei.value.code == (561002 if written
                                                                       else None)
    assert np.array_equal(D1.to_numpy(), x1) and np.array_equal(D2.to_numpy(), x2)


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
def test_operator_rules_surface_as_its_typed_error():
    x1, x2, g = make((1,) * 9 + (2,), 1)
    with pytest.raises(AclError) as ei:
        acl_py.inplace_add_rms_norm(x1, x2, g)
    assert ei.value.code == 561002 and "x1Ref rank 10" in ei.value.message


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
def test_plan_runs_in_place_and_rebinds_its_results():
    """Each run overwrites x1 and x2 (refilled here between runs); rebinding x1 moves the
    plan's y with it."""
    x1, x2, g = make((8, 96), 1, F16)
    D1, D2, G = (acl_py.DeviceTensor.from_numpy(a) for a in (x1, x2, g))
    want = acl_py.add_rms_norm(x1, x2, g, 1e-5)
    with acl_py.Stream() as s, acl_py.InplaceAddRmsNorm(D1, D2, G, 1e-5) as plan:
        assert plan.y is D1 and plan.x is D2 and plan.outputs == (D1, plan.rstd, D2)
        for _ in range(2):
            D1.buffer.copy_from_host(x1)
            D2.buffer.copy_from_host(x2)
            plan.run(s)
            s.synchronize()
            assert np.array_equal(bits(D1.to_numpy()), bits(want[0]))
            assert np.array_equal(bits(D2.to_numpy()), bits(want[2]))
        E1 = acl_py.DeviceTensor.from_numpy(x1)
        plan.rebind(x1=E1)
        assert plan.y is E1
        D2.buffer.copy_from_host(x2)
        plan.run(s)
        s.synchronize()
        assert np.array_equal(bits(E1.to_numpy()), bits(want[0]))


@only_where(runs_here(INPLACE_ADD_RMS_NORM))
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in INPLACE_ADD_RMS_NORM.params] == ["x1Ref", "x2Ref", "gamma",
                                                             "epsilon", "rstdOut"]
    assert [a.py for a in INPLACE_ADD_RMS_NORM.inputs] == ["x1", "x2", "gamma", "epsilon"]
    assert [o.py for o in INPLACE_ADD_RMS_NORM.outputs] == ["y", "rstd", "x"]
    for case in INPLACE_ADD_RMS_NORM.smoke_cases:
        why = INPLACE_ADD_RMS_NORM.unwritten_outputs(case[1]())
        assert all(r <= 1 if w is None else r is None for r, w in
                   zip(INPLACE_ADD_RMS_NORM.run_smoke_case(case), why)), case[0]
    assert not INPLACE_ADD_RMS_NORM.runs_on("Ascend910A")
    assert INPLACE_ADD_RMS_NORM.runs_on("Ascend310P3")


def test_into_must_name_a_written_input():
    from acl_py.ops import Declared, output, tensor
    with pytest.raises(ValueError, match="written=True"):
        Declared("aclnnX", (tensor("a"), output("y", into="a")), register=False)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); x2 = np.cos(x1)
g = np.full(16, 0.5, np.float32)
e = reference.add_rms_norm(x1, x2, g)
a1, a2 = x1.copy(), x2.copy()
y, rstd, x = acl_py.inplace_add_rms_norm(a1, a2, g)
assert y is a1 and x is a2
assert np.allclose(a1, e[0], rtol=1e-5) and np.allclose(rstd, e[1], rtol=1e-5)
assert np.array_equal(a2, x1 + x2)
""")
