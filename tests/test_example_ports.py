"""The Python ports of the vendor's C++ operator examples (samples/layer_norm.py,
fast_layer_norm.py, rms_norm.py, add.py, add_rms_norm.py, rms_norm_grad.py, group_norm.py,
gemma_rms_norm.py, inplace_add_rms_norm.py, add_layer_norm.py, deep_norm.py,
group_norm_silu.py, group_norm_silu_v2.py, batch_norm.py, deep_norm_grad.py,
group_norm_backward.py, batch_norm_backward.py, batch_norm_reduce_backward.py,
batch_norm_elemt_backward.py, instance_norm.py, rms_norm_quant.py, batch_norm_elemt.py,
batch_norm_gather_stats_with_counts.py, batch_norm_stats.py, batch_norm_reduce.py,
add_rms_norm_quant.py, add_rms_norm_dynamic_quant.py, add_rms_norm_dynamic_quant_v2.py,
add_layer_norm_quant.py) print
exactly what the examples print on a device (batch_norm_gather_stats_with_counts.py with the
eight means its example reads past its host vector given; add_rms_norm_dynamic_quant.py and its
V2 with the scales' whole 8 bytes allocated, where their examples allocate 4).

The expected text comes from tests/test_vendor_examples.py, which derives it from the examples'
data through the kernels' float32 chains (the device's numbers); here it is also checked
against the float64 references, so that a slip there cannot make a port and its expectation
agree on a wrong text. Each port runs in a subprocess (it owns the runtime, aclInit to
aclFinalize): on the emulator backend, and on the CANN path with the emulator's prefix as the
install. The opt-in vendor test compares each port with the C++ example itself built against
the emulator; tests/test_hardware.py runs the ports on a device.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from acl_py import reference
from acl_py._loader import emulator_prefix

from test_samples import EXAMPLE_PART, ROOT, SAMPLES, TIMEOUT, emulator_env, run
from test_vendor_examples import (ADD_LAYER_NORM_HEADERS, add_example_output,
                                  add_layer_norm_example_output, add_rms_norm_example_output,
                                  batch_norm_backward_example_output,
                                  batch_norm_elemt_backward_example_output,
                                  batch_norm_elemt_example_output,
                                  batch_norm_gather_stats_with_counts_port_output,
                                  batch_norm_stats_example_output,
                                  batch_norm_reduce_backward_example_output,
                                  batch_norm_reduce_example_output,
                                  batch_norm_example_output,
                                  deep_norm_example_output, deep_norm_grad_example_output,
                                  group_norm_backward_example_output,
                                  gemma_rms_norm_example_output, group_norm_example_output,
                                  group_norm_silu_example_output,
                                  inplace_add_rms_norm_example_output, INSTANCE_NORM_PART,
                                  instance_norm_example_output,
                                  layer_norm_example_output, rms_norm_example_output,
                                  rms_norm_grad_example_output, rms_norm_quant_example_output,
                                  add_rms_norm_quant_example_output,
                                  add_rms_norm_dynamic_quant_example_output,
                                  ADD_LAYER_NORM_QUANT_HEADERS, ADD_LAYER_NORM_QUANT_PART,
                                  add_layer_norm_quant_example_output)


def layer_norm_reference():
    """out, mean, rstd of the layer_norm_v4 example's data in float64, in printed order."""
    out, mean, rstd = reference.layer_norm(np.full((1, 2, 32), 2.0), [32], np.ones(32),
                                           np.zeros(32), 1e-5)
    return [out, mean, rstd]


def rms_norm_reference():
    """y of the rms_norm example's data in float64 (rstd is not printed)."""
    row = np.tile(np.arange(8.0), 2)
    y, _rstd = reference.rms_norm(np.stack([row, row]), row, 1e-6)
    return [y]


def rms_norm_grad_reference():
    """dx, then dgamma, of the rms_norm_grad example's data in float64."""
    v = np.arange(1.0, 33.0).reshape(2, 1, 16)
    dx, dgamma = reference.rms_norm_grad(v, v, np.array([1.0, 2.0]), np.arange(1.0, 17.0))
    return [dx, dgamma]


def add_rms_norm_reference():
    """y of the add_rms_norm example's data in float64 (its epsilon is float(1e-6))."""
    row = np.tile(np.arange(8.0), 2)
    x = np.stack([row, row])
    y, _rstd, _x = reference.add_rms_norm(x, x, row, float(np.float32(1e-6)))
    return [y]


def group_norm_reference():
    """out, then mean and rstd, of the group_norm example's data in float64."""
    out, mean, rstd = reference.group_norm(np.arange(1.0, 25.0).reshape(2, 3, 4),
                                           np.full(3, 2.0), np.full(3, 2.0), 2, 3, 4, 1, 1e-5)
    return [out, mean, rstd]


def group_norm_silu_reference():
    """out, then mean and rstd, of the group_norm_silu examples' data in float64 (GroupNorm's
    example's data, Silu applied)."""
    return list(reference.group_norm_silu(np.arange(1.0, 25.0).reshape(2, 3, 4),
                                          np.full(3, 2.0), np.full(3, 2.0), 1, 1e-5))


def gemma_rms_norm_reference():
    """y of the gemma_rms_norm example's data in float64 (rstd is not printed)."""
    row = np.tile(np.arange(8.0), 2)
    y, _rstd = reference.gemma_rms_norm(np.stack([row, row]), row, float(np.float32(1e-6)))
    return [y]


def inplace_add_rms_norm_reference():
    """x1Ref (y), then x2Ref (x1 + x2), of the inplace_add_rms_norm example's data."""
    row = np.tile(np.arange(8.0), 2)
    x = np.stack([row, row])
    y, _rstd, s = reference.add_rms_norm(x, x, row, float(np.float32(1e-6)))
    return [y, s]


def add_layer_norm_reference():
    """y, mean, rstd and x of the add_layer_norm example's data in float64, without the bias,
    then with it (its epsilon is float(1e-6))."""
    x1 = np.repeat([[1.0], [2.0]], 8, axis=1).reshape(1, 2, 8)
    x2 = np.repeat([[4.0], [-3.0]], 8, axis=1).reshape(1, 2, 8)
    g, b, eps = np.full(8, 2.0), np.full(8, 0.1), float(np.float32(1e-6))
    return [v for bias in (None, np.full(8, 0.5))
            for v in reference.add_layer_norm(x1, x2, g, b, bias, eps)]


def deep_norm_reference():
    """mean, rstd and y of the deep_norm example's data in float64 (its alpha and epsilon
    are float(0.3) and float(1e-6))."""
    x = np.arange(1.0, 13.0).reshape(3, 1, 4)
    gx = np.array([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8.0]).reshape(3, 1, 4)
    p = np.arange(4.0)
    return list(reference.deep_norm(x, gx, p, p, float(np.float32(0.3)),
                                    float(np.float32(1e-6))))


def batch_norm_reference():
    """out of the batch_norm_v3 example's data in float64 (training, weight 1, bias 0)."""
    x = np.arange(8.0).reshape(1, 2, 4)
    return [reference.batch_norm(x, np.ones(2), np.zeros(2), np.zeros(2), np.ones(2), True,
                                 0.1, 1e-5)[0]]


def deep_norm_grad_reference():
    """dx, dgx, dbeta and dgamma of the deep_norm_grad example's data in float64 (its alpha is
    float(0.3); mean and rstd as given: [0, 1, 2])."""
    dy = np.arange(1.0, 13.0).reshape(3, 1, 4)
    gx = np.array([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8.0]).reshape(3, 1, 4)
    stat = np.arange(3.0).reshape(3, 1, 1)
    return list(reference.deep_norm_grad(dy, dy, gx, np.arange(4.0), stat, stat,
                                         float(np.float32(0.3))))


def group_norm_backward_reference():
    """gradInput, gradGammaOut and gradBetaOut of the group_norm_grad example's data in
    float64 (its mean and rstd as the float32 values it passes)."""
    x = np.arange(1.0, 25.0).reshape(2, 3, 4)
    mean = np.float32([6.5, 18.5]).astype(np.float64)
    rstd = np.float32([0.2896827] * 2).astype(np.float64)
    return list(reference.group_norm_backward(x, x, mean, rstd, np.ones(3), 2, 3, 4, 1))


def batch_norm_backward_reference():
    """gradIn of the batch_norm_grad_v3 example's data in float64 (training; saveInvstd 1 as
    the emulator's default part takes it: the variance)."""
    x = np.arange(8.0).reshape(1, 2, 4)
    return [reference.batch_norm_backward(x, x, np.ones(2), None, None, np.zeros(2),
                                          np.ones(2), True, 1e-5, saved="var")[0]]


def batch_norm_reduce_backward_reference():
    """sumDy, sumDyXmu, gradWeight, gradBias of the sync_batch_norm_backward_reduce example's
    data in float64."""
    dy = np.array([1, 1, 1, 2, 2, 2, 3, 3.0]).reshape(4, 2)
    return list(reference.batch_norm_reduce_backward(dy, np.arange(8.0).reshape(4, 2),
                                                     np.ones(2), np.ones(2), np.ones(2)))


def batch_norm_elemt_backward_reference():
    """gradInput of the sync_batch_norm_backward_elemt example's data in float64."""
    x = np.arange(8.0).reshape(1, 2, 4)
    return list(reference.batch_norm_elemt_backward(x, x, np.zeros(2), np.ones(2), np.ones(2),
                                                    np.zeros(2), np.ones(2), np.full(2, 5.0)))


def instance_norm_reference():
    """y, mean and variance of the instance_norm_v3 example's data in float64 (the variance
    printed under the example's "rstd output")."""
    x = np.full((1, 8, 4, 4), np.float32(0.77), np.float64)
    return list(reference.instance_norm(x, np.full(8, 1.5), np.full(8, 0.5), "NCHW", 1e-5))


def rms_norm_quant_reference():
    """y of the rms_norm_quant example's data in float64, quantized (int8 values)."""
    x = np.arange(15.0).reshape(3, 5)
    g = np.arange(5.0)
    return [reference.rms_norm_quant(x, g, g, np.ones(1), np.ones(1), 1e-6)[0]]


def add_layer_norm_quant_reference():
    """y1, y2, x of the add_layer_norm_quant example's data in float64 (int8 values), then
    the two out scales it prints unwritten (zeros)."""
    v = np.full(16, 58.0)
    x = np.full((8, 16), 58.0)
    y1, y2, xs, _, _ = reference.add_layer_norm_quant(x, x, v, v, v, v, v)
    return [y1, y2, xs, np.zeros(8), np.zeros(8)]


def add_rms_norm_quant_reference():
    """y1 of the add_rms_norm_quant example's data in float64, quantized (int8 values)."""
    z = np.zeros((64, 2))
    return [reference.add_rms_norm_quant(z, z, np.zeros(2), np.ones(2), None,
                                         np.full(2, 100.0))[0]]


def add_rms_norm_dynamic_quant_reference(beta=False):
    """y1 of the add_rms_norm_dynamic_quant example's data in float64, quantized (int8
    values); ``beta``: the V2 example's, beta [8] 1.5."""
    half = np.full((2, 8), 0.5)
    g = np.full(8, 1.5)
    return [reference.add_rms_norm_dynamic_quant(half, half, g, g, g, 1e-6,
                                                 beta=g if beta else None)[0]]


def batch_norm_elemt_reference():
    """out of the batch_norm_elemt example's data in float64."""
    x = np.arange(16.0).reshape(2, 4, 2)
    return [reference.batch_norm_elemt(x, None, None, np.arange(1.0, 5), np.arange(5.0, 9))]


def batch_norm_stats_reference():
    """mean and invstd of the batch_norm_stats example's data in float64, in printed order."""
    return list(reference.batch_norm_stats(np.arange(1.0, 7).reshape(2, 3), 1e-5))


def batch_norm_reduce_reference():
    """sum of the batch_norm_reduce example's data in float64 (the example prints sum only)."""
    return [reference.batch_norm_reduce(np.ones((1, 2, 3, 4)), "NCHW")[0]]


def batch_norm_gather_stats_with_counts_reference():
    """meanAll of the gather example's data (the port's: the unread means 0) in float64."""
    mean = np.array(list(range(8)) + [0] * 8, float).reshape(4, 4)
    inv = np.repeat(np.arange(1.0, 5), 4).reshape(4, 4)
    return [reference.batch_norm_gather_stats_with_counts(mean, inv, np.arange(1.0, 5))[0]]


def add_reference():
    """out = self + 1.2 * other of the add example's data in float64."""
    return [np.arange(8.0) + 1.2 * np.array([1, 1, 1, 2, 2, 2, 3, 3.0])]


class Port:
    """A port: its script under samples/, the expected text, the float64 values it prints (in
    order), the phase-one call an injected fault makes fail, and the relative tolerance of
    the device's float32 chain against the float64 values (``atol``: beside printf's 6
    decimals, where a result near 0 carries the absolute error of the terms it came from)."""

    def __init__(self, script, expected, reference_values, phase_one, rtol=1e-6, headers=(),
                 prelude="", atol=1e-6, part=None):
        self.script = script
        # the part the port runs on: Atlas A2 (EXAMPLE_PART) unless the operator has no
        # kernel there
        self.part = EXAMPLE_PART if part is None else part
        self.atol = atol
        self.expected = expected
        self.reference_values = reference_values
        self.phase_one = phase_one
        self.rtol = rtol
        self.headers = headers   # text the example prints beside its result lines
        self.prelude = prelude   # what it prints before its first phase one

    def result_lines(self):
        """The expected text's result lines, the headers taken out."""
        text = self.expected()
        for h in self.headers:
            assert h in text, h
            text = text.replace(h, "")
        return text.splitlines()

    def __repr__(self):
        return self.script


PORTS = [
    Port("layer_norm.py", layer_norm_example_output, layer_norm_reference,
         "aclnnLayerNormGetWorkspaceSize"),
    # the same example data and kernel as layer_norm.py's
    Port("fast_layer_norm.py", layer_norm_example_output, layer_norm_reference,
         "aclnnFastLayerNormGetWorkspaceSize"),
    Port("rms_norm.py", rms_norm_example_output, rms_norm_reference,
         "aclnnRmsNormGetWorkspaceSize"),
    Port("add.py", add_example_output, add_reference, "aclnnAddGetWorkspaceSize"),
    Port("add_rms_norm.py", add_rms_norm_example_output, add_rms_norm_reference,
         "aclnnAddRmsNormGetWorkspaceSize"),
    Port("rms_norm_grad.py", rms_norm_grad_example_output, rms_norm_grad_reference,
         "aclnnRmsNormGradGetWorkspaceSize"),
    # The device's one-pass variance, mean(x^2) - mean^2, cancels: for the second group
    # (13..24) mean(x^2) is 30 times the variance, so rstd and out carry 30 float32 ulps.
    Port("group_norm.py", group_norm_example_output, group_norm_reference,
         "aclnnGroupNormGetWorkspaceSize", rtol=1e-5),
    # GroupNorm's chain, then Silu (slope below 1.1): out near 0 (silu(-0.027) = -0.0137)
    # keeps GroupNorm's absolute error, 30 ulps of the O(1) terms it is made of
    Port("group_norm_silu.py", group_norm_silu_example_output, group_norm_silu_reference,
         "aclnnGroupNormSiluGetWorkspaceSize", rtol=1e-5, atol=5e-6),
    Port("group_norm_silu_v2.py", group_norm_silu_example_output, group_norm_silu_reference,
         "aclnnGroupNormSiluV2GetWorkspaceSize", rtol=1e-5, atol=5e-6),
    Port("gemma_rms_norm.py", gemma_rms_norm_example_output, gemma_rms_norm_reference,
         "aclnnGemmaRmsNormGetWorkspaceSize"),
    Port("inplace_add_rms_norm.py", inplace_add_rms_norm_example_output,
         inplace_add_rms_norm_reference, "aclnnInplaceAddRmsNormGetWorkspaceSize"),
    Port("add_layer_norm.py", add_layer_norm_example_output, add_layer_norm_reference,
         "aclnnAddLayerNormGetWorkspaceSize",
         headers=("\nUse aclnnAddLayerNorm Non-biasOptional Port.",
                  "\nUse aclnnAddLayerNorm biasOptional Port.") +
         tuple(f"==== AddLayerNorm {call}: {name} output"
               for call in ("non-biasOptional", "biasOptional")
               for name in ADD_LAYER_NORM_HEADERS),
         prelude="\nUse aclnnAddLayerNorm Non-biasOptional Port."),
    Port("deep_norm.py", deep_norm_example_output, deep_norm_reference,
         "aclnnDeepNormGetWorkspaceSize",
         headers=("\nUse aclnnDeepNorm Port.", "== pdx output"),   # the header, three times
         prelude="\nUse aclnnDeepNorm Port."),
    # the one-pass variance of 4..7: mean(x^2) is 25 times the variance (25 float32 ulps)
    Port("batch_norm.py", batch_norm_example_output, batch_norm_reference,
         "aclnnBatchNormGetWorkspaceSize", rtol=1e-5),
    # gradInput is 0 (gradOut equals input): the float32 chain leaves what its cancellations
    # leave, up to 12 float32 ulps of the O(10) terms; gradGammaOut sums 24 such terms
    Port("group_norm_backward.py", group_norm_backward_example_output,
         group_norm_backward_reference, "aclnnGroupNormBackwardGetWorkspaceSize", rtol=1e-5,
         atol=1e-5),
    # gradIn sums terms of up to 31 times its size (channel 1: x * sum(dy * x) / 4 against
    # dy): float32 ulps of those terms
    Port("batch_norm_backward.py", batch_norm_backward_example_output,
         batch_norm_backward_reference, "aclnnBatchNormBackwardGetWorkspaceSize", rtol=1e-5,
         atol=1e-5),
    Port("batch_norm_reduce_backward.py", batch_norm_reduce_backward_example_output,
         batch_norm_reduce_backward_reference, "aclnnBatchNormReduceBackwardGetWorkspaceSize"),
    Port("batch_norm_elemt_backward.py", batch_norm_elemt_backward_example_output,
         batch_norm_elemt_backward_reference, "aclnnBatchNormElemtBackwardGetWorkspaceSize"),
    # the Atlas inference series only; a constant input: y is beta, the variance 0
    Port("instance_norm.py", instance_norm_example_output, instance_norm_reference,
         "aclnnInstanceNormGetWorkspaceSize",
         headers=("\nUse aclnnInstanceNorm Non-Bias Port.",) +
         tuple(f"==== InstanceNorm non-bias: {name} output" for name in ("y", "mean", "rstd")),
         prelude="\nUse aclnnInstanceNorm Non-Bias Port.", part=INSTANCE_NORM_PART),
    # int8 values: none of the example's lands near a half, so the float64 ones are the same
    Port("rms_norm_quant.py", rms_norm_quant_example_output, rms_norm_quant_reference,
         "aclnnRmsNormQuantGetWorkspaceSize", rtol=0, atol=0),
    # int8 values: every one is the zero point (the normalized sum is 0)
    Port("add_rms_norm_quant.py", add_rms_norm_quant_example_output,
         add_rms_norm_quant_reference, "aclnnAddRmsNormQuantGetWorkspaceSize", rtol=0,
         atol=0),
    # Ascend 950 only; int8 values: every one is 1 (the normalized sum is 0: y = beta =
    # scales); the out scales are not written in static mode
    Port("add_layer_norm_quant.py", add_layer_norm_quant_example_output,
         add_layer_norm_quant_reference, "aclnnAddLayerNormQuantGetWorkspaceSize", rtol=0,
         atol=0, headers=(f"Current SOC: {ADD_LAYER_NORM_QUANT_PART['ACL_EMU_SOC']}\n",) +
         ADD_LAYER_NORM_QUANT_HEADERS, part=ADD_LAYER_NORM_QUANT_PART,
         prelude=f"Current SOC: {ADD_LAYER_NORM_QUANT_PART['ACL_EMU_SOC']}\n"),
    # int8 values: every one is its row's maximum, 127
    Port("add_rms_norm_dynamic_quant.py", add_rms_norm_dynamic_quant_example_output,
         add_rms_norm_dynamic_quant_reference, "aclnnAddRmsNormDynamicQuantGetWorkspaceSize",
         rtol=0, atol=0),
    # V2: beta added after gamma, no outputMask; again every value its row's maximum, 127
    Port("add_rms_norm_dynamic_quant_v2.py",
         lambda: add_rms_norm_dynamic_quant_example_output(beta=True),
         lambda: add_rms_norm_dynamic_quant_reference(beta=True),
         "aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize", rtol=0, atol=0),
    # the variance made from invstd (1 / 25 - 0.01) and added back: a few float32 ulps
    Port("batch_norm_elemt.py", batch_norm_elemt_example_output, batch_norm_elemt_reference,
         "aclnnBatchNormElemtGetWorkspaceSize", rtol=1e-5, atol=1e-5),
    Port("batch_norm_gather_stats_with_counts.py",
         batch_norm_gather_stats_with_counts_port_output,
         batch_norm_gather_stats_with_counts_reference,
         "aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize"),
    # both printed as "mean result[i]": mean, then invstd = 1 / sqrt(2.25 + 1e-5)
    Port("batch_norm_stats.py", batch_norm_stats_example_output, batch_norm_stats_reference,
         "aclnnBatchNormStatsGetWorkspaceSize"),
    # x described as NCHW (a format view of its memory); the example prints sum only
    Port("batch_norm_reduce.py", batch_norm_reduce_example_output, batch_norm_reduce_reference,
         "aclnnBatchNormReduceGetWorkspaceSize"),
]
ports = pytest.mark.parametrize("port", PORTS, ids=repr)

# "result[i] is: v", "y result[i] is: v" or "outResultData[i] is: v" (the GroupNorm example's;
# "gradInputResultData[i] is: v" its backward's)
LINE = re.compile(r"(?:\w+ )?(?:result|[a-z][A-Za-z]*ResultData)\[(\d+)\] is: "
                  r"(-?\d+\.\d{6}|-?\d+)")


@ports
def test_expected_lines_agree_with_the_float64_reference(port):
    """The float32 chain's text is the float64 reference's values within float32 rounding
    (a few ulps, the port's rtol) and printf's 6 decimals; the indices count up per printed tensor."""
    lines = port.result_lines()
    expected = np.concatenate([np.ravel(v) for v in port.reference_values()])
    assert len(lines) == expected.size
    values, indices = [], []
    for line in lines:
        m = LINE.fullmatch(line)
        assert m, line
        indices.append(int(m.group(1)))
        values.append(float(m.group(2)))
    starts = [i for i, k in enumerate(indices) if k == 0]
    for a, b in zip(starts, starts[1:] + [len(indices)]):
        assert indices[a:b] == list(range(b - a))
    np.testing.assert_allclose(values, expected, rtol=port.rtol, atol=port.atol)


@ports
def test_port_prints_what_the_example_prints(port):
    proc = run([sys.executable, str(SAMPLES / port.script)], env=emulator_env(**port.part))
    assert proc.stdout == port.expected()
    assert proc.stderr == ""


@ports
def test_port_runs_on_the_cann_path(port):
    """The emulator's prefix as a CANN install (ASCEND_HOME_PATH, ACL_PY_BACKEND=cann): the
    port uses nothing emulator-only and prints the same text."""
    env = emulator_env(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(emulator_prefix()),
                       **port.part)
    proc = run([sys.executable, str(SAMPLES / port.script)], env=env)
    assert proc.stdout == port.expected()
    assert proc.stderr == ""


@ports
def test_port_stops_on_a_failing_call(port):
    """acl-py checks every status for the port: an injected phase-one failure stops it with
    the call and its code named, before any result is printed."""
    proc = subprocess.run([sys.executable, str(SAMPLES / port.script)], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env(ACL_EMU_FAIL=f"{port.phase_one}:1", **port.part))
    assert proc.returncode == 1, proc
    assert port.phase_one in proc.stderr and "561000" in proc.stderr, proc.stderr
    assert proc.stdout == port.prelude
