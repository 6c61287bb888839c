"""aclnnLayerNormBackward bit for bit against a NumPy model of the Atlas A2/A3 kernel.

On Atlas A2 and A3 (NpuArch 2201) the op_api runs the fused LayerNormGradV3 kernel
(hicann/ops-nn norm/layer_norm_grad_v3/op_host/op_api/aclnn_layer_norm_backward.cpp). Its
tiling takes the first capable of four templates (op_host/layer_norm_grad_v3_*_tiling.cpp):
SingleRead (768 <= N <= 12176), Transpose (N <= 64, not a multiple of 8 for FLOAT dy, of 16
otherwise), Common (N <= 768), Workspace (the rest). The model below is each template's chain
in float32 (op_kernel/layer_norm_grad_v3_{single_read,common,workspace}.h), vectorized across
rows:

* x_hat = (x - mean) * rstd, g = dy * gamma, the row sums S1 = sum(g), S2 = sum(g * x_hat);
  SingleRead and Workspace by the counter-mode ReduceSum (the tree of each repeat of 64
  floats, fold64, the repeats added in order from +0; Workspace per column chunk of the
  tiling's ubFormer, the chunks' sums added from +0), Common by 64 lane accumulators (the first
  64-column block, then each later block added lane by lane) and one fold64;
* gradInput ((g - x_hat * m3) - m2) * rstd with m = S * (1.0f / N) (Workspace: S / N), rounded
  to FLOAT16 to nearest even, to BF16 with ties away from zero (CAST_ROUND);
* gradWeight/gradBias: dy * x_hat and dy summed per core block of ceil(M / 48) rows in row
  order from +0, then the blocks in order.

The Transpose template is not modelled (docs/emulator.md): its shapes are only checked to be
chosen. Other parts run other kernels; these tests are Atlas A2/A3's.
"""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py.raw import lib
from acl_py.soc import soc_name

from _device_reduce import fold64, reduce_sum_count
from _part_runs import run_on_parts

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
ACL_DTYPE = {F32: 0, F16: 1, BF16: 27}
SINGLE_READ, WORKSPACE, TRANSPOSE, COMMON = 1, 2, 3, 4
A2_A3 = ("Ascend910B2", "Ascend910_9391")

pytestmark = pytest.mark.skipif(
    soc_name() not in A2_A3,
    reason=f"{soc_name()} runs another kernel than Atlas A2/A3's LayerNormGradV3, not modelled "
           "bit for bit (docs/emulator.md)")


def tiling(M, N, dt):
    """The emulator's port of the tiling (its test hook): template, rows per core block,
    blocks, Workspace's column chunk."""
    so = ctypes.CDLL(str(lib.backend.libraries["opapi"]))
    out = (ctypes.c_int64 * 4)()
    so.aclemu_layer_norm_backward_tiling(ctypes.c_int64(M), ctypes.c_int64(N),
                                         ctypes.c_int32(ACL_DTYPE[dt]), out)
    return tuple(out)


def reduce_count(v, chunk):
    """The counter-mode ReduceSum over each chunk of ``chunk`` columns, the chunks' sums added
    in order from +0 (rows vectorized)."""
    total = np.zeros(v.shape[0], F32)
    for c0 in range(0, v.shape[1], chunk):
        total = total + reduce_sum_count(v[:, c0:c0 + chunk])
    return total


def reduce_lanes(v):
    """Common's LastReduceSum: the row padded with +0 to colAlignV (N rounded up to 8); one
    fold64 of it when that is at most 64 columns, else 64 lane accumulators (the first block,
    then each later block added to the lanes it covers) and one fold64."""
    M, N = v.shape
    align = -(-N // 8) * 8
    padded = np.zeros((M, max(align, 64)), F32)
    padded[:, :N] = v
    acc = padded[:, :64].copy()
    for b in range(64, align, 64):
        blk = padded[:, b:min(b + 64, align)]
        acc[:, :blk.shape[1]] = acc[:, :blk.shape[1]] + blk
    return fold64(acc)


def round_bf16_ties_away(v):
    bits = v.astype(F32).view(np.uint32)
    return ((bits + np.uint32(0x8000)) >> np.uint32(16)).astype(np.uint16).view(BF16)


def model(dy, x, mean, rstd, gamma, tile):
    tmpl, block_rows, nblocks, chunk = tile
    M, N = dy.shape
    dyf, xf, gf = dy.astype(F32), x.astype(F32), gamma.astype(F32)
    mean, rstd = mean.astype(F32)[:, None], rstd.astype(F32)[:, None]
    xh = (xf - mean) * rstd
    g = dyf * gf
    gx = g * xh
    if tmpl == COMMON:
        s1, s2 = reduce_lanes(g), reduce_lanes(gx)
    else:  # SingleRead: one chunk of N columns
        s1, s2 = reduce_count(g, chunk), reduce_count(gx, chunk)
    if tmpl == WORKSPACE:
        m2, m3 = s1 / F32.type(N), s2 / F32.type(N)
    else:
        coff = F32.type(1) / F32.type(N)
        m2, m3 = s1 * coff, s2 * coff
    dx = ((g - xh * m3[:, None]) - m2[:, None]) * rstd
    dx = (dx if dy.dtype == F32 else dx.astype(F16) if dy.dtype == F16
          else round_bf16_ties_away(dx))
    grads = []
    for term in (dyf * xh, dyf):
        parts = np.zeros((nblocks, N), F32)
        for r in range(block_rows):  # each block's rows in order, the blocks side by side
            rows = np.arange(nblocks) * block_rows + r
            live = rows < M
            parts[live] = parts[live] + term[rows[live]]
        out = np.zeros(N, F32)
        for b in range(nblocks):
            out = out + parts[b]
        grads.append(out)
    return dx, grads[0], grads[1]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


def case(M, N, dt, gamma_dt, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((M, N)) * 1.5 + 0.25).astype(dt)
    dy = rng.standard_normal((M, N)).astype(dt)
    xf = x.astype(np.float64)
    mean = xf.mean(axis=1)
    rstd = 1.0 / np.sqrt(xf.var(axis=1) + 1e-5)
    gamma = (rng.standard_normal(N) * 0.5 + 1.0).astype(gamma_dt)
    return dy, x, mean.astype(F32), rstd.astype(F32), gamma


# (N, dtype of dy, the template it takes): the boundaries of plan 1.2
SHAPES = [
    (767, F32, COMMON), (768, F16, SINGLE_READ), (768, F32, SINGLE_READ),
    (12176, BF16, SINGLE_READ), (12177, F32, WORKSPACE), (16352, F16, WORKSPACE),
    (16353, F32, WORKSPACE), (16353, BF16, WORKSPACE),
    (63, F32, TRANSPOSE), (64, F32, COMMON), (65, F32, COMMON), (64, BF16, COMMON),
    (56, F32, COMMON), (56, F16, TRANSPOSE), (56, BF16, TRANSPOSE), (72, F16, COMMON),
    (128, F32, COMMON), (136, BF16, COMMON), (72, F32, COMMON), (24, F32, COMMON),
    (1000, F32, SINGLE_READ), (200, F16, COMMON),
]
ROWS = (1, 47, 48, 49, 97)


@pytest.mark.parametrize("N,dt,tmpl", SHAPES, ids=lambda v: getattr(v, "name", str(v)))
def test_the_tiling_chooses_the_vendor_template(N, dt, tmpl):
    for M in ROWS:
        t = tiling(M, N, dt)
        assert t[0] == tmpl
        block_rows = -(-M // 48)
        assert t[1:3] == (block_rows, -(-M // block_rows))
        assert t[3] == (min(8176, -(-N // 16) * 16) if tmpl == WORKSPACE else N)


BIT_SHAPES = [(N, dt, tmpl) for N, dt, tmpl in SHAPES if tmpl != TRANSPOSE]


@pytest.mark.parametrize("k", range(len(BIT_SHAPES)),
                         ids=[f"{n}-{d.name}" for n, d, _ in BIT_SHAPES])
def test_bit_for_bit_against_the_template_model(k):
    N, dt, tmpl = BIT_SHAPES[k]
    M = ROWS[k % len(ROWS)] if N < 12000 else ROWS[k % 3]  # the big rows stay small in M
    gamma_dt = F32 if dt == F32 or k % 2 else dt  # 16-bit dy: FLOAT and 16-bit gamma
    dy, x, mean, rstd, gamma = case(M, N, dt, gamma_dt, seed=k)
    tile = tiling(M, N, dt)
    assert tile[0] == tmpl
    out = (np.empty((M, N), dt), np.empty(N, F32), np.empty(N, F32))
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None, out=out)
    want = model(dy, x, mean, rstd, gamma, tile)
    for name, g, w in zip(("gradInput", "gradWeight", "gradBias"), got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(bits(g), bits(w), err_msg=f"{name} M={M} N={N}")


def test_zero_rows_keep_the_sign_of_the_kernels_sums():
    """dy all -0: each lane's first value is the row's own (-0), so the sums are -0, and
    gradInput's ((g - x_hat*m3) - m2) * rstd takes those signs (Common's lanes)."""
    M, N = 3, 40
    dy = np.full((M, N), -0.0, F32)
    x = np.linspace(-2, 2, M * N, dtype=F32).reshape(M, N)
    mean, rstd = np.zeros(M, F32), np.ones(M, F32)
    gamma = np.ones(N, F32)
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None)
    want = model(dy, x, mean, rstd, gamma, tiling(M, N, F32))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(bits(g), bits(w))


test_on_other_parts = run_on_parts([p for p in A2_A3 if p != soc_name()], "not other_parts")
