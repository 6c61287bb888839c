"""Helpers shared by the reliability tests (test_faults, test_oom, test_soak, test_concurrency,
test_lifetime_abuse, test_hostile_input): input generation, the reference check, and settling
the process so live-object counts can be compared."""
from __future__ import annotations

import contextlib
import gc
import math

import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.arguments import clear_shared_arrays
from acl_py.soc import supports_bfloat16

try:
    from ml_dtypes import bfloat16 as BF16
except ImportError:  # pragma: no cover - ml_dtypes is a dependency of acl-py
    BF16 = None

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
BF16 = np.dtype(BF16)
# the dtypes the emulated part computes (no BFLOAT16 on the Atlas training and inference
# series: acl_py.soc.supports_bfloat16)
DTYPES = (F32, F16, BF16) if supports_bfloat16() else (F32, F16)
MASKS = tuple((a, b, c) for a in (True, False) for b in (True, False) for c in (True, False))


def lnb():
    """acl_py.layer_norm_backward (top level once re-exported, else from acl_py.ops)."""
    f = getattr(acl_py, "layer_norm_backward", None)
    if f is None:
        from acl_py.ops import layer_norm_backward as f
    return f


def plan_cls():
    c = getattr(acl_py, "LayerNormBackward", None)
    if c is None:
        from acl_py.ops import LayerNormBackward as c
    return c


def settle():
    """Everything acl-py could still legitimately hold, released: garbage collected, every
    stream synchronized (stream-ordered frees run), failed releases retried, pools emptied,
    the operator's cached argument arrays dropped. What remains live is what objects hold."""
    gc.collect()
    acl_py.release_unused()     # drops the shared argument arrays too (its "caches" step)
    gc.collect()


def live():
    from acl_py import emulator
    settle()
    return emulator.live_objects()


def make_case(rng, shape, ns_len, dtype, *, weight=True, weight_f32=False, stat_f32=True):
    """NumPy inputs of one LayerNormBackward problem: input of ``shape`` normalized over its
    last ``ns_len`` dims, statistics from the forward formula (batch dims then ones)."""
    dtype = np.dtype(dtype)
    ns = tuple(shape[len(shape) - ns_len:])
    x = rng.standard_normal(shape).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    mean, rstd = reference.layer_norm_stats(x, ns)
    sdt = F32 if stat_f32 else dtype
    case = {"grad_out": dy, "input": x, "normalized_shape": ns,
            "mean": mean.astype(sdt), "rstd": rstd.astype(sdt), "weight": None}
    if weight:
        case["weight"] = (1.0 + 0.5 * rng.standard_normal(ns)).astype(F32 if weight_f32
                                                                     else dtype)
    return case


def call_args(case):
    return (case["grad_out"], case["input"], case["normalized_shape"], case["mean"],
            case["rstd"], case["weight"])


def to_device(case, stream=None):
    d = dict(case)
    for k in ("grad_out", "input", "mean", "rstd", "weight"):
        if case[k] is not None:
            d[k] = acl_py.DeviceTensor.from_numpy(case[k])
    return d


def close_case(d):
    for k in ("grad_out", "input", "mean", "rstd", "weight"):
        t = d.get(k)
        if isinstance(t, acl_py.DeviceTensor):
            t.close()


def check(outs, case, mask=(True, True, True), what=""):
    """Each output against the float64 reference within reference's tolerance; ``None``
    exactly where the mask is false. Returns the worst error ratio."""
    exp = reference.layer_norm_backward(*call_args(case), output_mask=mask)
    mag = reference.error_scale(*call_args(case), output_mask=mask)
    assert len(outs) == 3, what
    worst = 0.0
    for k, name in enumerate(("grad_input", "grad_weight", "grad_bias")):
        if not mask[k]:
            assert outs[k] is None, f"{what}: {name} masked off but returned"
            continue
        got = outs[k]
        if isinstance(got, acl_py.DeviceTensor):
            got = got.to_numpy()
        assert got is not None, f"{what}: {name} requested but None"
        assert got.shape == exp[k].shape, (what, name, got.shape, exp[k].shape)
        worst = max(worst, reference.assert_close(got, exp[k], mag[k], case["input"].dtype,
                                                  f"{what} {name}"))
    return worst


def random_problem(rng, max_elems=4096):
    """(shape, ns_len, dtype, mask, weight?, weight_f32?, stat_f32?) drawn at random: ranks
    1..4, sizes up to ``max_elems``, empty dims now and then."""
    rank = int(rng.integers(1, 5))
    ns_len = int(rng.integers(1, rank + 1))
    shape = []
    budget = max_elems
    for _ in range(rank):
        d = int(rng.integers(0 if rng.random() < 0.03 else 1, max(2, int(budget ** (1 / rank)) * 2)))
        shape.append(d)
        budget = max(1, budget // max(d, 1))
    while math.prod(shape) > max_elems:
        i = int(np.argmax(shape))
        shape[i] //= 2
    dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
    mask = MASKS[int(rng.integers(0, 8))]
    return (tuple(shape), ns_len, dtype, mask, bool(rng.random() < 0.8),
            bool(rng.random() < 0.5), bool(rng.random() < 0.7))


@contextlib.contextmanager
def switched_out_in_submit(stream, other_threads):
    """Inside the block, the next submission numbered on ``stream`` (an acl_py.Stream: by
    ``submit``, or by ``enqueue`` for the work it enqueues) runs ``other_threads()`` right
    after taking its number, before returning it: what other threads do while this one is
    switched out between numbering a submission and recording its uses. Asserts it ran."""
    from acl_py.stream import StreamState
    race = [other_threads]

    class SwitchedOutInSubmit(StreamState):
        __slots__ = ()

        def submit(self, keep=None):
            seq = super().submit(keep)
            if race:
                race.pop()()
            return seq

        def enqueue(self, fn, *args):
            status = super().enqueue(fn, *args)
            if race and not status:
                race.pop()()
            return status

    st = stream.state
    st.__class__ = SwitchedOutInSubmit
    try:
        yield
    finally:
        st.__class__ = StreamState
    assert not race, "no submission was numbered"


@pytest.fixture(autouse=True)
def _drop_cached_arrays():
    """Imported by each reliability module (autouse there). Operator calls share argument
    arrays across calls by design (acl_py.arguments.shared_array); they are dropped after each
    test so the suite's leak check (conftest.no_leaks, which settles with release_unused only)
    compares like with like."""
    yield
    clear_shared_arrays()
