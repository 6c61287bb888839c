"""``out=`` entries of every declared operator (:data:`acl_py.ops.DECLARED`, so an operator
declared later is covered with no change here) are checked against what its declaration says
each output is, and agree with phase one, output by output and dtype by dtype:

* an entry of a dtype phase one refuses (on device tensors, where phase one decides) is
  refused by the NumPy call before any C call, as an AclTypeError naming ``out[k] (name)``;
  on device tensors the refusal names it too and carries phase one's code;
* an entry of a dtype phase one accepts is accepted by the NumPy call (no false refusal:
  LayerNorm's and LayerNormBackward's outputs take any of the three, the device casts);
* an entry of the wrong shape is refused the same ways, as an AclArgumentError, and shape by
  shape (the declared one and its neighbours: dims dropped, added, merged, set to 1 or
  doubled, the whole flattened), for the first smoke case's inputs and for one row and no rows
  of them, the NumPy call accepts exactly the shapes phase one accepts (no false refusal:
  RmsNorm's rstd ``[2]`` for x ``[2, 16]``; a refusal of its own names ``out[k]``; no shape
  phase one refuses that Python lets through: LayerNorm's ``[M]`` statistics on Ascend 950),
  for one output given and for two outputs of one shape given together (a rule relating
  them: Ascend 950's mean = rstd), on every part the emulator models;
* entries of the declared dtypes and shapes are filled with the operator's results.

Every test runs under the suite's leak check (conftest ``no_leaks``): nothing is left alive
after a refusal.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import acl_py
from acl_py import smoke
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import DECLARED, OutputNotWritten

from _part_runs import other_parts, run_on_parts, runs_here

# The float dtypes this part computes (the Atlas training and inference series have no
# BFLOAT16: phase one refuses it in any tensor, an output's entry too)
FLOATS = ("float32", "float16") + (("bfloat16",) if acl_py.soc.supports_bfloat16() else ())
REFUSED_EVERYWHERE = "float64"    # no aclnn norm operator takes a DOUBLE tensor


def _np_dtype(name):
    return acl_py.dtypes.bfloat16() if name == "bfloat16" else np.dtype(name)


def _np_name(dtype):
    return "bfloat16" if dtype == acl_py.dtypes.bfloat16() else np.dtype(dtype).name


def _values(declared):
    """Small NumPy inputs of the operator, in declaration order: its first smoke case's, and
    LayerNormBackward's (whose matrix lives in acl_py.smoke) from a case of that matrix."""
    if declared.smoke_cases:
        return tuple(declared.smoke_cases[0][1]())
    assert declared.short_name == "LayerNormBackward", \
        f"{declared.short_name} has no smoke case to take its inputs from"
    v = smoke.make_inputs(smoke.Case("out-check", (4, 64)))
    return (v["grad_out"], v["input"], (64,), v["mean"], v["rstd"], v["weight"], v["bias"],
            (True, True, True))


def _written_by(declared, k):
    """The inputs of :func:`_values`, or where those leave output k unwritten, the first
    smoke case's that writes it if one does: the op_api may compare no shape of an output it
    does not write (AddLayerNormQuant's out scales in static mode: aclnn_add_layer_norm_quant
    .cpp CheckShapeRel and CheckShapeEqs check them in dynamic mode only; their emptiness,
    test_out_shapes_agree_with_phase_one covers). An output no case writes on this part
    (AddRmsNorm's rstd on the Atlas inference parts) keeps the first case's inputs."""
    values = _values(declared)
    if declared.unwritten_outputs(values)[k] is None:
        return values
    cases = (tuple(make()) for _, make in declared.smoke_cases)
    return next((v for v in cases if declared.unwritten_outputs(v)[k] is None), values)


def _outputs():
    """Every output with an out= entry of its own (one written in place into an input, as
    InplaceAddRmsNorm's y and x, takes None only: tests/test_inplace_add_rms_norm.py), of the
    operators with a kernel on this part: another's could never run here, so it is no test
    (its refusal: test_declared_parts); the parts with the kernel run it."""
    for name, declared in DECLARED.items():
        for k, spec in enumerate(declared.outputs):
            if spec.into is None and runs_here(declared):
                yield pytest.param(name, k, id=f"{name}-out[{k}]-{spec.py}")


def _with(declared, k, entry):
    return tuple(entry if j == k else None for j in range(len(declared.outputs)))


def _device_call(declared, values, k, entry):
    """The call on device tensors with ``entry`` (NumPy) as out[k] on the device: None when
    phase one took it, else the refusal (checked to name out[k] and carry phase one's code;
    Python's own, with no code, for an output the part does not write: phase one never sees
    its entry)."""
    try:
        _device_run(declared, values, _with(declared, k, entry))
    except (AclTypeError, AclArgumentError) as e:
        if declared.unwritten_outputs(values)[k] is not None:
            assert e.code is None, e
        else:
            assert e.code is not None and e.call == f"{declared.name}GetWorkspaceSize", e
        return e
    return None


def _device_run(declared, values, out):
    """The call on device tensors with the ``out`` entries (NumPy, or None) on the device;
    every tensor made here closed again, whatever the call raised."""
    made = []

    def device(v):
        if not isinstance(v, np.ndarray):
            return v
        made.append(acl_py.DeviceTensor.from_numpy(v))
        return made[-1]
    try:
        args = tuple(device(v) for v in values)
        given = tuple(device(o) for o in out)
        results = declared.call(args, out=given)
        made.extend(r for r in results if r is not None and r not in given)
    finally:
        for t in made:
            t.close()


def _host_call(emulator, declared, values, k, entry):
    """The NumPy call with ``entry`` as out[k]: None when it ran, else its refusal, which no C
    call preceded."""
    emulator.reset_call_counts()
    try:
        declared.call(values, out=_with(declared, k, entry))
    except (AclTypeError, AclArgumentError) as e:
        assert f"{declared.name}GetWorkspaceSize" not in emulator.call_counts(), e
        assert e.code is None, e     # Python's own finding, not phase one's
        return e
    return None


@pytest.mark.parametrize("name,k", list(_outputs()))
def test_out_dtypes_agree_with_phase_one(emulator, name, k):
    declared = DECLARED[name]
    spec = declared.outputs[k]
    values = _values(declared)
    a = declared.bind(values, np.ndarray)
    shape = spec.shape(a)
    accepted = []
    # an output of a dtype of its own (RmsNormQuant's int8 y) is tried beside the floats
    own = (_np_name(spec.dtype(a)),) if _np_name(spec.dtype(a)) not in FLOATS else ()
    for dtype in FLOATS + own + (REFUSED_EVERYWHERE,):
        entry = np.zeros(shape, _np_dtype(dtype))
        on_device = _device_call(declared, values, k, entry)
        on_host = _host_call(emulator, declared, values, k, entry)
        assert (on_device is None) == (on_host is None), (dtype, on_device, on_host)
        for refusal in (on_device, on_host):
            if refusal is not None:
                assert type(refusal) is AclTypeError, refusal
                assert refusal.argument == f"out[{k}] ({spec.py})", refusal
                assert dtype in str(refusal), refusal
        if on_host is None:
            accepted.append(dtype)
    assert REFUSED_EVERYWHERE not in accepted
    default = spec.dtype(a)
    assert any(_np_dtype(d) == default for d in accepted)
    # What the declaration says: any of its dtypes for these arguments on this part (those
    # the part has) where the device casts, else exactly one; an output of a dtype of its own
    # is tried beside the floats.
    dtypes = spec.out_dtypes(a)
    assert accepted == [d for d in FLOATS + own if (d in dtypes if dtypes is not None else
                                                    _np_dtype(d) == default)]


@pytest.mark.parametrize("name,k", list(_outputs()))
def test_out_of_the_wrong_shape_is_refused_naming_it(emulator, name, k):
    declared = DECLARED[name]
    spec = declared.outputs[k]
    values = _written_by(declared, k)
    a = declared.bind(values, np.ndarray)
    shape = spec.shape(a)
    entry = np.zeros(shape[:-1] + (shape[-1] + 1,), spec.dtype(a))   # one element more a row
    for refusal in (_device_call(declared, values, k, entry),
                    _host_call(emulator, declared, values, k, entry)):
        assert type(refusal) is AclArgumentError, refusal
        assert refusal.argument == f"out[{k}] ({spec.py})", refusal


@pytest.mark.parametrize("name", [name for name, declared in DECLARED.items()
                                  if runs_here(declared)])   # (as _outputs)
def test_out_entries_of_the_declared_dtypes_and_shapes_receive_the_results(name):
    declared = DECLARED[name]
    values = _values(declared)
    a = declared.bind(values, np.ndarray)
    # NaN where the entry can hold it (an integer one: its minimum), to see what is written
    out = tuple(None if spec.into is not None else
                np.full(spec.shape(a), _unwritten_fill(spec.dtype(a)), spec.dtype(a))
                for spec in declared.outputs)
    values = tuple(v.copy() if isinstance(v, np.ndarray) else v for v in values)
    # in place: the input array itself; an output the part does not write: None, its entry
    # untouched
    unwritten = declared.unwritten_outputs(values)
    given = tuple(None if why is not None else
                  values[[i.py for i in declared.inputs].index(spec.into)]
                  if spec.into is not None else o
                  for spec, o, why in zip(declared.outputs, out, unwritten))
    results = declared.call(values, out=out)
    assert all(r is o for r, o in zip(results, given))
    assert all((o == _unwritten_fill(o.dtype)).all() | np.isnan(o).all()
               for o, why in zip(out, unwritten) if why is not None and o is not None)
    values = _values(declared)   # the inputs as they were (an in-place call wrote into them)
    for check in declared.check_outputs(values, results):
        if not isinstance(check, OutputNotWritten):
            assert check.problem is None and check.error_ratio <= 1, check


def _unwritten_fill(dtype):
    return np.iinfo(dtype).min if np.dtype(dtype).kind in "iu" else np.nan


def _neighbour_shapes(shape):
    """``shape`` and shapes near it: each dim dropped, set to 1 or doubled; a 1 inserted
    anywhere; adjacent dims merged; reversed; flattened ([n], [n, 1], [1, n]); rank 0."""
    n = math.prod(shape)
    found = {shape, (n,), (n, 1), (1, n), shape[::-1], ()}
    for i in range(len(shape)):
        found |= {shape[:i] + shape[i + 1:], shape[:i] + (1,) + shape[i + 1:],
                  shape[:i] + (2 * shape[i],) + shape[i + 1:]}
    for i in range(len(shape) + 1):
        found.add(shape[:i] + (1,) + shape[i:])
    for i in range(len(shape) - 1):
        found.add(shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:])
    return sorted(found, key=lambda s: (len(s), s))


def _refusal(call):
    """None when ``call()`` ran, else its refusal as ``(type, argument, code)``: an argument
    error of Python's or a phase-one refusal it explained (argument named), or phase one's
    typed error (argument None)."""
    try:
        call()
    except (AclTypeError, AclArgumentError) as e:
        return type(e).__name__, e.argument, e.code, e.codes
    except AclError as e:
        return type(e).__name__, None, e.code, None
    return None


def _rows(declared, values, n):
    """``values`` with their first ``n`` rows: every array input sharing the first input's
    leading dim cut to ``n`` (GroupNorm's ``n`` argument too)."""
    lead = values[declared._first_index].shape[0]
    cut = [v[:n] if isinstance(v, np.ndarray) and v.ndim >= 2 and v.shape[0] == lead else v
           for v in values]
    names = [a.py for a in declared.inputs]
    if "n" in names:
        cut[names.index("n")] = n
    return tuple(cut)


def _shapes_agree(emulator, declared, values, ks, shape):
    """With ``shape`` given for each output in ``ks`` (the others default), the NumPy call
    refuses exactly what phase one refuses on device tensors: Python's refusal comes first,
    naming one of them, with no C call; on device tensors Python names the same one after
    phase one refused (its code carried; none where the part does not write the output:
    phase one never sees the entry). A refusal of phase one's that Python does not explain
    is a gap in the declaration's rule (``output(fits=...)``) and fails. True when the call
    ran."""
    a = declared.bind(values, np.ndarray)
    out = tuple(np.zeros(shape, declared.outputs[k].dtype(a)) if k in ks else None
                for k in range(len(declared.outputs)))
    on_device = _refusal(lambda: _device_run(declared, values, out))
    emulator.reset_call_counts()
    on_host = _refusal(lambda: declared.call(values, out=out))
    where = (declared.short_name, values[declared._first_index].shape, ks, shape, on_device,
             on_host)
    assert (on_device is None) == (on_host is None), where
    if on_host is None:
        return True
    assert on_host[2] is None, ("phase one refused what Python let through",) + where
    assert f"{declared.name}GetWorkspaceSize" not in emulator.call_counts(), where
    if on_device[2] is not None and on_host[3] is not None and on_device[2] not in on_host[3]:
        # Python's first rule is a later stage's (output(later=)): the device refused an
        # earlier one first, which the device call's diagnosis names (or raises as it is)
        assert on_device[1] != on_host[1], where
        return False
    assert on_host[:2] == on_device[:2], where
    assert on_host[0] == "AclArgumentError", where
    k = next(k for k in ks if on_host[1] == f"out[{k}] ({declared.outputs[k].py})")
    # whether the part writes it with these entries (an op_api returning before its kernel
    # for an empty tensor writes none: InstanceNorm's, AddRmsNormDynamicQuant's)
    unwritten = declared.unwritten_outputs(values, out=out)[k] is not None
    assert (on_device[2] is None) == unwritten, where
    return False


def _inputs_taken(declared, ks):
    """The first smoke case's inputs, one row of them and no rows, where every output of
    ``ks`` is requested and the part's phase one takes them."""
    first = _values(declared)
    for values in (first, _rows(declared, first, 1), _rows(declared, first, 0)):
        a = declared.bind(values, np.ndarray)
        if any(declared.outputs[k].when is not None and not declared.outputs[k].when(a)
               for k in ks):
            continue    # not requested
        if _refusal(lambda: _device_run(declared, values, (None,) * len(declared.outputs))):
            continue    # inputs this part refuses (RmsNormGrad: no rows)
        yield values, a


@pytest.mark.parametrize("name,k", list(_outputs()))
def test_out_shapes_agree_with_phase_one(emulator, name, k):
    """Shape by shape, for one output given (:func:`_shapes_agree`)."""
    declared = DECLARED[name]
    tried = 0
    for values, a in _inputs_taken(declared, (k,)):
        for shape in _neighbour_shapes(declared.outputs[k].shape(a)):
            _shapes_agree(emulator, declared, values, (k,), shape)
            tried += 1
    assert tried >= 10


def _output_pairs():
    """Every two outputs with an out= entry of their own and the same default shape for the
    first smoke case (LayerNorm's mean and rstd: Ascend 950's phase one relates them), of
    the operators with a kernel on this part (the others' parts run theirs: the child below)."""
    for name, declared in DECLARED.items():
        if not runs_here(declared):
            continue
        a = declared.bind(_values(declared), np.ndarray)
        ks = [k for k, spec in enumerate(declared.outputs) if spec.into is None and
              (spec.when is None or spec.when(a))]
        for i, k1 in enumerate(ks):
            for k2 in ks[i + 1:]:
                if declared.outputs[k1].shape(a) == declared.outputs[k2].shape(a):
                    yield pytest.param(name, k1, k2, id=f"{name}-out[{k1}]-out[{k2}]")


@pytest.mark.parametrize("name,k1,k2", list(_output_pairs()))
def test_out_shapes_given_together_agree_with_phase_one(emulator, name, k1, k2):
    """Shape by shape, for two outputs of one default shape given the same shape together
    (:func:`_shapes_agree`): a rule relating outputs is Python's too."""
    declared = DECLARED[name]
    tried = 0
    for values, a in _inputs_taken(declared, (k1, k2)):
        for shape in _neighbour_shapes(declared.outputs[k1].shape(a)):
            _shapes_agree(emulator, declared, values, (k1, k2), shape)
            tried += 1
    assert tried >= 10


# Every part the emulator models: its phase ones differ (outputs Ascend310P3 does not write,
# whose entries Python checks; Ascend 950's statistics shapes in LayerNorm's phase one).
test_out_shapes_on_parts_with_their_own_rules = run_on_parts(
    other_parts(), "out_shapes_agree or out_shapes_given")


def test_rms_norm_takes_an_rstd_of_x_rank_less_the_normalized_dims():
    """The docs' rank rule (x's rank) is not phase one's: any rank up to x's with each dim 1
    or x's passes the tiling, holding a value per row; the device writes the same values."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    g = rng.standard_normal(16).astype(np.float32)
    y, rstd = acl_py.rms_norm(x, g)
    for shape in ((2,), (2, 1)):
        r = np.full(shape, np.nan, np.float32)
        assert acl_py.rms_norm(x, g, out=(None, r))[1] is r
        assert np.array_equal(r.reshape(2, 1), rstd)
    x3 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g3 = np.ones((4, 5), np.float32)
    want = acl_py.rms_norm(x3, g3)[1]
    for shape in ((2, 3), (2, 3, 1), (2, 3, 1, 1)):
        r = np.full(shape, np.nan, np.float32)
        acl_py.rms_norm(x3, g3, out=(None, r))
        assert np.array_equal(r.reshape(want.shape), want)
    with pytest.raises(AclArgumentError) as ei:    # a dim that is neither 1 nor x's
        acl_py.rms_norm(x3, g3, out=(None, np.empty((6,), np.float32)))
    assert ei.value.argument == "out[1] (rstd)" and "each dim 1 or x's" in str(ei.value)


def test_a_refused_out_entry_names_the_output_and_the_dtype_it_must_have():
    x = np.ones((2, 4), np.float32)
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm(x, np.ones(4, np.float32), out=(np.empty((2, 4), np.float16), None))
    assert ei.value.argument == "out[0] (y)"
    assert "dtype float16 != float32 (the dtype y has for these arguments)" in str(ei.value)


def test_a_plan_refuses_an_out_entry_of_another_dtype_before_any_c_call(emulator):
    x = acl_py.DeviceTensor.from_numpy(np.ones((2, 4), np.float32))
    gamma = acl_py.DeviceTensor.from_numpy(np.ones(4, np.float32))
    with acl_py.DeviceTensor.empty((2, 4), np.float16) as y:
        emulator.reset_call_counts()
        with pytest.raises(AclTypeError) as ei:
            acl_py.RmsNorm(x, gamma, out=(y, None))
    assert ei.value.argument == "out[0] (y)" and ei.value.code is None
    assert "aclnnRmsNormGetWorkspaceSize" not in emulator.call_counts()
    x.close()
    gamma.close()


def test_an_output_declared_with_one_dtype_or_an_inputs_has_it_whatever_the_arguments():
    """``output(dtype=...)`` takes a NumPy type (itself callable: it must not be called with
    the arguments), a dtype, a name or a rule; ``shape_of``/``dtype_of`` give an input's."""
    from acl_py.ops._declare import dtype_of, output, shape_of

    class Args(dict):
        __getattr__ = dict.__getitem__

    a = Args(x=np.empty((3, 5), np.float16))
    for given in (np.int8, np.dtype(np.int8), "int8"):
        arg = output("yOut", shape=shape_of("x"), dtype=given)
        assert arg.dtype(a) == np.dtype(np.int8) and arg.shape(a) == (3, 5)
    bf16 = output("yOut", shape=shape_of("x"), dtype=acl_py.dtypes.bfloat16())
    assert bf16.dtype(a) == acl_py.dtypes.bfloat16()
    like = output("yOut", shape=shape_of("x"), dtype=dtype_of("x"))
    assert like.dtype(a) == np.dtype(np.float16)
    rule = output("yOut", shape=shape_of("x"), dtype=lambda a: a.x.dtype.newbyteorder(">"))
    assert rule.dtype(a) == np.dtype(">f2")
