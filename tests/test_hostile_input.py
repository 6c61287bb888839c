"""Hostile input, property-based (hypothesis, bounded): shapes, dtypes, strides, masks, None
arguments and wrong types for ``layer_norm_backward``, the raw phase one, and the
constructors. Each case either matches the float64 reference or raises the documented error.

Which of the two is decided by ``expected_status`` below: an independent re-statement of the
vendor's phase-one check list (docs/emulator.md, "aclnnLayerNormBackward"), written here from
the document, never by calling the library's own checks. The raw phase-one test checks the exact code in the documented order;
the Python-level test accepts the Python-boundary error (``AclArgumentError``/``AclTypeError``,
naming the argument) or the operator's typed error with the code the list gives.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import acl_py
from acl_py import errors
from acl_py.raw import ffi, lib

from _reliability import (_drop_cached_arrays, BF16, F16, F32, check,  # noqa: F401
                          lnb, settle)

pytestmark = pytest.mark.usefixtures("emulator")

OK, NULLPTR, INVALID = 0, 161001, 161002
SUPPORTED = (F32, F16, BF16)
ANY_DTYPES = SUPPORTED + (np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int8))
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

NAMES = ("grad_out", "input", "mean", "rstd", "weight", "bias", "grad_input", "grad_weight",
         "grad_bias")


def expected_status(t, ns, mask, bf16=True):
    """The vendor's phase-one checks (docs/emulator.md "aclnnLayerNormBackward"),
    in order. ``t``: name -> (shape, dtype) or None (NULL); ``ns``: the normalizedShape values
    or None; ``mask``: tuple of bools or None; ``bf16``: whether the part has BFLOAT16."""
    # 1. required arguments
    if any(t[k] is None for k in ("grad_out", "input", "mean", "rstd")) or ns is None \
            or mask is None:
        return NULLPTR
    # 2. mask length
    if len(mask) != 3:
        return INVALID
    # 3. a requested output missing
    outs = ("grad_input", "grad_weight", "grad_bias")
    for k, name in enumerate(outs):
        if mask[k] and t[name] is None:
            return NULLPTR
    # 4. dtypes of every given tensor, requested or not: FLOAT/FLOAT16/BF16 (BF16 only on a
    #    part that has it); gradOut = input; weight/bias input's dtype or FLOAT; mean/rstd
    #    not narrower than input (FLOAT input: FLOAT; 16-bit input: any of the three)
    given_ = {k: v for k, v in t.items() if v is not None}
    allowed = SUPPORTED if bf16 else (F32, F16)
    if any(dt not in allowed for _s, dt in given_.values()):
        return INVALID
    in_dt = t["input"][1]
    if t["grad_out"][1] != in_dt:
        return INVALID
    for k in ("weight", "bias"):
        if k in given_ and given_[k][1] not in (in_dt, F32):
            return INVALID
    if in_dt == F32 and (t["mean"][1] != F32 or t["rstd"][1] != F32):
        return INVALID
    # 5. ranks and shapes; an output whose mask entry is false is not looked at
    wanted = {name: t[name] for k, name in enumerate(outs) if mask[k]}
    checked = [t[k] for k in ("grad_out", "input", "mean", "rstd")] + list(wanted.values())
    if any(len(s) > 8 for s, _dt in checked) or len(ns) > 8:
        return INVALID
    if len(ns) < 1:
        return INVALID
    x = t["input"][0]
    if len(x) < len(ns) or tuple(x[len(x) - len(ns):]) != tuple(ns):
        return INVALID
    for k in ("weight", "bias"):
        if k in given_ and tuple(given_[k][0]) != tuple(ns):
            return INVALID
    if tuple(t["grad_out"][0]) != tuple(x):
        return INVALID
    if tuple(t["mean"][0]) != tuple(t["rstd"][0]):
        return INVALID
    m = math.prod(x[:len(x) - len(ns)])
    n = math.prod(ns)
    if math.prod(t["mean"][0]) != m:
        return INVALID
    if "grad_input" in wanted and tuple(wanted["grad_input"][0]) != tuple(x):
        return INVALID
    for k in ("grad_weight", "grad_bias"):
        if k in wanted and math.prod(wanted[k][0]) != n:
            return INVALID
    return OK


# ---- strategies -------------------------------------------------------------------------------

def _perturb(draw, shape):
    """Usually the shape itself; sometimes one dim changed, added or dropped."""
    r = draw(st.integers(0, 9))
    shape = list(shape)
    if r == 0 and shape:
        i = draw(st.integers(0, len(shape) - 1))
        shape[i] = draw(st.integers(0, 5))
    elif r == 1:
        shape.insert(draw(st.integers(0, len(shape))), draw(st.integers(1, 3)))
    elif r == 2 and shape:
        shape.pop(draw(st.integers(0, len(shape) - 1)))
    return tuple(shape)


@st.composite
def problems(draw, outputs=False):
    rank = draw(st.sampled_from([1, 1, 2, 2, 2, 3, 3, 4, 9]))
    dims = tuple(draw(st.integers(0 if draw(st.integers(0, 15)) == 0 else 1, 5))
                 for _ in range(rank))
    if rank == 9:
        dims = tuple(min(d, 1) or 1 for d in dims)
    ns_len = draw(st.sampled_from([1, 1, 1, 2, 2, 0, rank, rank + 1]))
    ns = tuple(dims[max(0, rank - ns_len):]) if ns_len <= rank else (1,) + dims
    if draw(st.integers(0, 9)) == 0:
        ns = _perturb(draw, ns)
    if draw(st.integers(0, 19)) == 0:
        ns = tuple(ns) + (1,) * 8   # length > 8
    batch = dims[:max(0, rank - len(ns))]
    in_dt = draw(st.sampled_from(SUPPORTED if draw(st.integers(0, 9)) else ANY_DTYPES))

    def dt_like(base, float_ok=True, any_width=False):
        r = draw(st.integers(0, 11))
        if r == 0:
            return draw(st.sampled_from(ANY_DTYPES))
        if r <= 3 and float_ok:
            return F32
        if r == 4 and any_width:  # statistics: the other 16-bit type is as wide
            return draw(st.sampled_from(SUPPORTED))
        return base

    stat = batch + (1,) * min(len(ns), max(0, rank - len(batch)))
    t = {
        "grad_out": (_perturb(draw, dims) if draw(st.integers(0, 9)) == 0 else dims,
                     dt_like(in_dt, float_ok=False)),
        "input": (dims, in_dt),
        "mean": (_perturb(draw, stat) if draw(st.integers(0, 9)) == 0 else stat,
                 dt_like(in_dt, any_width=True)),
    }
    t["rstd"] = (_perturb(draw, t["mean"][0]) if draw(st.integers(0, 9)) == 0
                 else t["mean"][0], dt_like(t["mean"][1] if t["mean"][1] in SUPPORTED
                                            else in_dt))
    for k in ("weight", "bias"):
        t[k] = None if draw(st.booleans()) else (
            _perturb(draw, ns) if draw(st.integers(0, 9)) == 0 else ns, dt_like(in_dt))
    mask_len = draw(st.sampled_from([3] * 12 + [2, 4]))
    mask = tuple(draw(st.booleans()) for _ in range(mask_len))
    for k, name in enumerate(("grad_input", "grad_weight", "grad_bias")):
        if not outputs:
            t[name] = None
            continue
        want = dims if k == 0 else ns
        on = k >= len(mask) or mask[k]
        r = draw(st.integers(0, 11))
        if r == 0:
            t[name] = None
        elif r == 1:
            t[name] = (_perturb(draw, want), in_dt)
        elif r == 2 and k:
            t[name] = ((math.prod(want),), F32)   # N elements, another shape: allowed
        else:
            t[name] = (want, draw(st.sampled_from(SUPPORTED)) if r == 3 else in_dt)
        if not on and draw(st.booleans()):
            t[name] = None
    for k in ("grad_out", "input", "mean", "rstd"):
        if draw(st.integers(0, 29)) == 0:
            t[k] = None
    if draw(st.integers(0, 29)) == 0:
        ns = None
    if draw(st.integers(0, 29)) == 0:
        mask = None
    return t, ns, mask


def _host(shape, dt, rng, positive=False):
    a = rng.standard_normal(shape) if math.prod(shape) else np.zeros(shape)
    if positive:
        a = np.abs(a) + 0.5
    return a.astype(dt)


# ---- the raw phase one: the exact code, in order ------------------------------------------------

@SETTINGS
@given(problems(outputs=True))
def test_raw_phase_one_follows_the_check_list(p):
    t, ns, mask = p
    made = []
    try:
        handles = {}
        for k in NAMES:
            if t[k] is None:
                handles[k] = ffi.NULL
                continue
            shape, dt = t[k]
            tensor = acl_py.DeviceTensor.empty(shape, dt)
            made.append(tensor)
            handles[k] = tensor.handle
        ia = acl_py.IntArray(ns) if ns is not None else None
        ba = acl_py.BoolArray(mask) if mask is not None else None
        made += [a for a in (ia, ba) if a is not None]
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(
            handles["grad_out"], handles["input"], ia.handle if ia is not None else ffi.NULL,
            handles["mean"], handles["rstd"], handles["weight"], handles["bias"],
            ba.handle if ba is not None else ffi.NULL, handles["grad_input"], handles["grad_weight"],
            handles["grad_bias"], ws, ex)
        msg = ffi.string(lib.aclGetRecentErrMsg() or ffi.new("char[]", b"")).decode() \
            if rc else ""
        want = expected_status(t, ns, mask, acl_py.supports_bfloat16())
        assert rc == want, f"{p}: phase one returned {rc} ({msg}), the check list says {want}"
        if rc == 0:
            assert ex[0] != ffi.NULL
            assert lib.aclDestroyAclOpExecutor(ex[0]) == 0
        else:
            assert ex[0] == ffi.NULL and msg.startswith("aclnnLayerNormBackward"), msg
    finally:
        for o in made:
            o.close()


# ---- the Python call: the reference or the documented error --------------------------------------

def _python_call(t, ns, mask, rng, device, wrong):
    args = {}
    for k in ("grad_out", "input", "mean", "rstd", "weight", "bias"):
        if t[k] is None:
            args[k] = None
            continue
        shape, dt = t[k]
        a = _host(shape, dt, rng, positive=(k == "rstd"))
        if wrong == k:
            a = a.tolist() if a.ndim else float(a)   # a plain list where an array belongs
        args[k] = a
    if wrong == "ns_str":
        ns = "abc"
    if wrong == "mask_int":
        mask = (1, 0, 1)
    hosts = dict(args)
    made = []
    if device:
        for k, a in args.items():
            if isinstance(a, np.ndarray):
                d = acl_py.DeviceTensor.from_numpy(a)
                made.append(d)
                args[k] = d
    return args, hosts, ns, mask, made


@settings(SETTINGS, max_examples=80)
@given(problems(), st.booleans(), st.sampled_from([None] * 12 + ["input", "mean", "weight",
                                                                  "ns_str", "mask_int"]),
       st.integers(0, 2 ** 32 - 1))
def test_python_call_matches_reference_or_raises_documented_error(p, device, wrong, seed):
    t, ns, mask = p
    rng = np.random.default_rng(seed)
    if wrong == "weight" and t["weight"] is None:
        wrong = None
    args, hosts, ns_arg, mask_arg, made = _python_call(t, ns, mask, rng, device, wrong)
    # The Python call allocates the requested outputs itself (input's shape and dtype;
    # normalized_shape and weight's dtype): rule 3 cannot fire, the output rules hold.
    t = dict(t)
    if t["input"] is not None and ns is not None and mask is not None and len(mask) == 3:
        wdt = t["weight"][1] if t["weight"] is not None else t["input"][1]
        for k, name in enumerate(("grad_input", "grad_weight", "grad_bias")):
            if mask[k]:
                t[name] = (t["input"][0], t["input"][1]) if k == 0 else (ns, wdt)
    want = expected_status(t, ns, mask, acl_py.supports_bfloat16())
    if wrong is not None and not (wrong in ("input", "mean") and t[wrong] is None):
        want = "type"
    if mask is None or ns is None:
        # The Python API has defaults, not NULLs: None for these is a wrong type.
        want = "type"
    try:
        try:
            outs = lnb()(args["grad_out"], args["input"], ns_arg, args["mean"], args["rstd"],
                         args["weight"], args["bias"], output_mask=mask_arg)
        except (errors.AclArgumentError, errors.OperatorParameterError) as e:
            assert want != OK, f"{p} wrong={wrong}: valid by the check list, raised {e!r}"
            if isinstance(e, errors.OperatorParameterError):
                assert want in (NULLPTR, INVALID) and e.code == want, \
                    f"{p} wrong={wrong}: {e!r}, the check list says {want}"
                assert e.message, e
            else:
                assert e.argument, e
            if want == "type":
                assert isinstance(e, (TypeError, errors.AclArgumentError)), e
            return
        assert want == OK, f"{p} wrong={wrong}: the check list says {want}, the call succeeded"
        if device:
            acl_py.default_stream().synchronize()
            outs = tuple(o.to_numpy() if o is not None else None for o in outs)
        case = {"grad_out": hosts["grad_out"], "input": hosts["input"],
                "normalized_shape": ns, "mean": hosts["mean"], "rstd": hosts["rstd"],
                "weight": hosts["weight"]}
        # outputs of the NumPy call take the weight's dtype; reference tolerance by input's
        check(outs, case, mask, what=str(p))
    finally:
        for d in made:
            d.close()
        if device:
            settle()


# ---- constructors -------------------------------------------------------------------------------

_VALUES = st.one_of(st.integers(-2 ** 64, 2 ** 64), st.booleans(), st.floats(allow_nan=True),
                    st.text(max_size=2), st.none(), st.just(np.int32(3)), st.just(np.bool_(True)))


@SETTINGS
@given(st.lists(_VALUES, max_size=6) | _VALUES)
def test_int_array_constructor(values):
    try:
        seq = list(values)
    except TypeError:
        seq = None
    if isinstance(values, (str, bytes)):
        seq = None
    ok = seq is not None and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
        and -2 ** 63 <= int(v) < 2 ** 63 for v in seq)
    try:
        a = acl_py.IntArray(values)
    except errors.AclArgumentError as e:
        assert not ok, f"{values!r} is valid, raised {e!r}"
        if seq is None or any(not isinstance(v, (int, np.integer))
                              or isinstance(v, (bool, np.bool_)) for v in seq):
            assert isinstance(e, TypeError), e
        return
    assert ok, f"{values!r} accepted"
    assert a.values == tuple(int(v) for v in seq)
    a.close()


@SETTINGS
@given(st.lists(_VALUES, max_size=6) | _VALUES)
def test_bool_array_constructor(values):
    try:
        seq = None if isinstance(values, (str, bytes)) else list(values)
    except TypeError:
        seq = None
    ok = seq is not None and all(isinstance(v, (bool, np.bool_)) for v in seq)
    try:
        a = acl_py.BoolArray(values)
    except errors.AclArgumentError as e:
        assert not ok and isinstance(e, TypeError), (values, e)
        return
    assert ok, f"{values!r} accepted"
    assert a.values == tuple(bool(v) for v in seq)
    a.close()


@SETTINGS
@given(st.one_of(st.integers(-10, 1 << 20), st.floats(0, 100), st.booleans(), st.none(),
                 st.text(max_size=2), st.just(np.int64(64))))
def test_device_buffer_constructor(nbytes):
    is_int = isinstance(nbytes, (int, np.integer)) and not isinstance(nbytes, bool)
    try:
        b = acl_py.DeviceBuffer(nbytes)
    except errors.AclArgumentError as e:
        assert not (is_int and nbytes >= 0), (nbytes, e)
        assert isinstance(e, TypeError) == (not is_int), (nbytes, e)
        return
    assert is_int and nbytes >= 0
    assert b.nbytes == nbytes
    b.close()


@st.composite
def views(draw):
    nbytes = draw(st.integers(0, 512))
    rank = draw(st.integers(0, 4))
    shape = [draw(st.integers(-1 if draw(st.integers(0, 19)) == 0 else 0, 6))
             for _ in range(rank)]
    strides = None if draw(st.booleans()) else [
        draw(st.integers(-1 if draw(st.integers(0, 19)) == 0 else 0, 40))
        for _ in range(rank + (1 if draw(st.integers(0, 19)) == 0 else 0))]
    offset = draw(st.integers(-1 if draw(st.integers(0, 19)) == 0 else 0, 64))
    dtype = draw(st.sampled_from(ANY_DTYPES + ("not-a-dtype", np.dtype("U3"), 0)))
    return nbytes, tuple(shape), strides, offset, dtype


@SETTINGS
@given(views())
def test_device_tensor_view_constructor(v):
    nbytes, shape, strides, offset, dtype = v
    # restatement: dims/strides/offset non-negative ints, one stride per dim, a dtype CANN has,
    # and the view's last element inside the buffer
    try:
        dt = np.dtype(dtype) if not isinstance(dtype, int) else None
    except TypeError:
        dt = None
    ok = dt is not None and dt.kind in "fiub" and dt.itemsize in (1, 2, 4, 8) and \
        all(d >= 0 for d in shape) and offset >= 0
    if strides is None:
        st_ = []
        acc = 1
        for d in reversed(shape):
            st_.insert(0, acc)
            acc *= max(d, 1)
    else:
        st_ = list(strides)
        ok = ok and len(st_) == len(shape) and all(s >= 0 for s in st_)
    if ok:
        n = math.prod(shape)
        end = 0 if n == 0 else offset + sum((d - 1) * s for d, s in zip(shape, st_)) + 1
        ok = end <= nbytes // dt.itemsize
    buf = acl_py.DeviceBuffer(nbytes)
    try:
        try:
            t = acl_py.DeviceTensor(buf, shape, dtype, strides, offset)
        except errors.AclArgumentError as e:
            assert not ok, f"{v}: valid, raised {e!r}"
            return
        assert ok, f"{v}: accepted"
        assert t.shape == shape and t.offset == offset
        if math.prod(shape) and buf.nbytes:
            t.handle   # the aclTensor is created from it without complaint
        t.close()
    finally:
        buf.close()
