"""The device's rounding, through ``acl_py.layer_norm_backward`` and the float64 reference.

The device computes every output in float32; gradInput is then rounded to input's dtype and
cast to its own, gradWeight/gradBias are cast from float32 (docs/emulator.md, "Numbers").
``acl_py.reference`` models that chain (``device_rounding``, ``rounding_dtype``) and bounds
each output by it (``error_bound(..., output=...)``): these tests hold every dtype pair to
that tight bound and check what distinguishes the chain from a single rounding.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference

from _part_runs import bf16_where_it_runs, only_where

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (F32, F16, BF16)
OUTPUTS = reference.OUTPUTS
PAIRS = bf16_where_it_runs(itertools.product(DTYPES, DTYPES))  # BF16 where the part has it


def _case(in_dt, shape=(24, 300), seed=5):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(in_dt)
    dy = rng.standard_normal(shape).astype(in_dt)
    mean, rstd = reference.layer_norm_stats(x, shape[-1:])
    w = (rng.standard_normal(shape[-1:]) * 0.5 + 1).astype(F32)
    return dy, x, mean.astype(F32), rstd.astype(F32), w


@pytest.mark.parametrize("in_dt,out_dt", PAIRS, ids=[f"{i}-to-{o}" for i, o in PAIRS])
def test_every_dtype_pair_within_the_device_rounding_bound(in_dt, out_dt):
    dy, x, mean, rstd, w = _case(in_dt)
    n = x.shape[-1]
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in (dy, x, mean, rstd, w)]
    outs = (acl_py.DeviceTensor.empty(x.shape, out_dt), acl_py.DeviceTensor.empty((n,), out_dt),
            acl_py.DeviceTensor.empty((n,), out_dt))
    try:
        acl_py.layer_norm_backward(dev[0], dev[1], (n,), dev[2], dev[3], dev[4], out=outs)
        got = [o.to_numpy() for o in outs]
    finally:
        for t in (*dev, *outs):
            t.close()
    expected = reference.layer_norm_backward(dy, x, (n,), mean, rstd, w)
    magnitude = reference.error_scale(dy, x, (n,), mean, rstd, w)
    for k, name in enumerate(OUTPUTS):
        reference.assert_close(got[k], expected[k], magnitude[k], in_dt, name, output=name)
    # gradInput in a wider dtype holds input's values only (one rounding would not)
    if in_dt != F32 and out_dt == F32:
        assert np.array_equal(got[0].astype(in_dt).astype(F32), got[0])
        # and the tight bound is tighter than a single rounding could meet: the f64 reference
        # rounded once to float32 is far from most outputs
        once = expected[0].astype(F32)
        assert np.mean(got[0] != once) > 0.9
    # the modelled chain applied to the reference agrees with all but boundary cases
    if in_dt != F32 or out_dt != F32:
        model = reference.device_rounding(expected[0], in_dt, out_dt, "grad_input")
        assert np.mean(model.astype(np.float64) == got[0].astype(np.float64)) > 0.97


def test_numpy_path_wider_grad_input_is_the_input_dtype_result_widened():
    dy, x, mean, rstd, w = _case(F16, (8, 64))
    a = acl_py.layer_norm_backward(dy, x, (64,), mean, rstd, w)
    b = acl_py.layer_norm_backward(dy, x, (64,), mean, rstd, w,
                                   out=(np.empty(x.shape, F32), None, None))
    assert a[0].dtype == F16 and b[0].dtype == F32
    assert np.array_equal(a[0].astype(F32), b[0])


@only_where(acl_py.supports_bfloat16())   # the parts with BF16 run it
def test_bfloat16_ties_through_the_python_call():
    """gradInput = -gradOut * weight exactly (N = 1, rstd = 1, input - mean = 1); with
    weight 1 + 2^-8 every power-of-two gradOut gives a BF16 tie: away from zero on the Atlas
    A2/A3 parts (the default), to even on Ascend 950."""
    dy = np.array([[1], [-2], [0.25]], BF16)
    x = np.array([[3], [0], [-1]], BF16)
    mean = x.astype(F32) - 1
    rstd = np.ones((3, 1), F32)
    w = np.array([1 + 2.0 ** -8], F32)
    gi, _, _ = acl_py.layer_norm_backward(dy, x, (1,), mean, rstd, w)
    away = not acl_py.soc_name().startswith("Ascend950")
    step = (1 + 2.0 ** -7) if away else 1.0
    assert gi.astype(np.float64).ravel().tolist() == [-1 * step, 2 * step, -0.25 * step]
    exact = -(dy.astype(np.float64) * (1 + 2.0 ** -8))
    model = reference.device_rounding(exact, BF16, BF16, "grad_input", bf16_ties_away=away)
    assert np.array_equal(model.astype(np.float64), gi.astype(np.float64))


@only_where(acl_py.supports_bfloat16())
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_bfloat16_ties_across_whole_vectors(strided):
    """The same ties over rows of 4 x 16 + 5 columns: contiguous rows are rounded in vector
    registers by the row kernel, strided views through the conversion routines; both must
    apply the part's tie rule on every lane and on the row's tail. Per group of four columns
    gradOut is (a, a, -a, -a) and input - mean is (1, -1, 1, -1), so both row sums are 0 and
    gradInput = gradOut * weight exactly, a BF16 tie for weight 1 + 2^-8."""
    m, n = 3, 69
    a = 2.0 ** (np.arange(n) // 4 % 9 - 4 + np.arange(m)[:, None])
    sign = np.tile([1, 1, -1, -1], n // 4 + 1)[:n]
    dy = (a * sign).astype(BF16)
    dy[:, -1] = 0  # the last column sits alone in its group: a zero keeps the sums at 0
    x = np.tile(np.tile([1, -1], n // 2 + 1)[:n], (m, 1)).astype(BF16)
    mean, rstd = np.zeros((m, 1), F32), np.ones((m, 1), F32)
    w = np.full(n, 1 + 2.0 ** -8, F32)

    def dev(v):
        if strided:  # the same values in column-major storage
            return acl_py.DeviceTensor.from_numpy(np.ascontiguousarray(v.T)).T
        return acl_py.DeviceTensor.from_numpy(v)

    gi = (acl_py.DeviceTensor.zeros((n, m), BF16).T if strided
          else acl_py.DeviceTensor.zeros((m, n), BF16))
    acl_py.layer_norm_backward(dev(dy), dev(x), (n,), acl_py.DeviceTensor.from_numpy(mean),
                               acl_py.DeviceTensor.from_numpy(rstd),
                               acl_py.DeviceTensor.from_numpy(w), None, (True, False, False),
                               out=(gi, None, None))
    away = not acl_py.soc_name().startswith("Ascend950")
    exact = dy.astype(np.float64) * (1 + 2.0 ** -8)
    want = reference.device_rounding(exact, BF16, BF16, "grad_input", bf16_ties_away=away)
    got = gi.to_numpy()
    assert np.array_equal(got.astype(np.float64), want.astype(np.float64))
    # every nonzero value was a tie: the rule decided each one
    step = (1 + 2.0 ** -7) if away else 1.0
    assert np.array_equal(got.astype(np.float64), dy.astype(np.float64) * step)


def test_reference_rounding_model():
    ties = np.array([1 + 2.0 ** -8, -(1 + 2.0 ** -8), 2 + 2.0 ** -7, 1 + 3 * 2.0 ** -8])
    away = reference.device_rounding(ties, BF16, F32, "grad_input")
    even = reference.device_rounding(ties, BF16, F32, "grad_input", bf16_ties_away=False)
    assert away.tolist() == [1 + 2.0 ** -7, -(1 + 2.0 ** -7), 2 + 2.0 ** -6, 1 + 2 * 2.0 ** -7]
    assert even.tolist() == [1.0, -1.0, 2.0, 1 + 2 * 2.0 ** -7]
    # grad_weight/grad_bias skip the input's dtype: float32, then the output's
    assert reference.device_rounding(ties, BF16, F32, "grad_weight").tolist() == \
        ties.astype(F32).tolist()
    # fp16 intermediate, then bf16: 1 + 2^-8 + 2^-11 is an fp16 tie (to even: 1 + 2^-8),
    # which is a bf16 tie (the cast, to even: 1); rounded once it would be 1 + 2^-7
    v = np.array([1 + 2.0 ** -8 + 2.0 ** -11])
    assert reference.device_rounding(v, F16, BF16, "grad_input").astype(F32).tolist() == [1.0]
    assert reference.device_rounding(v, F32, BF16, "grad_input").astype(F32).tolist() == \
        [1 + 2.0 ** -7]
    assert reference.rounding_dtype("grad_input", F16) == "float16"
    assert reference.rounding_dtype("grad_bias", BF16) == "float32"
    with pytest.raises(ValueError):
        reference.rounding_dtype("grad_x", F32)


def test_bound_adds_the_output_rounding_only_when_it_can_lose_bits():
    e = np.array([1.0])
    m = np.zeros(1)
    fp16_to_f32 = reference.error_bound(e, m, F16, F32, output="grad_input")
    fp16_to_fp16 = reference.error_bound(e, m, F16, F16, output="grad_input")
    fp16_to_bf16 = reference.error_bound(e, m, F16, BF16, output="grad_input")
    assert fp16_to_f32[0] == fp16_to_fp16[0] == 2.0 ** -11
    assert fp16_to_bf16[0] == 2.0 ** -11 + 2.0 ** -8
    assert reference.error_bound(e, m, F16, F32, output="grad_weight")[0] == 2.0 ** -24
