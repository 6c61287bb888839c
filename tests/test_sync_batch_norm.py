"""SyncBatchNorm's forward as torch runs it, on one device standing for every rank: each rank's
local per-channel mean and invstd (from acl_py.batch_norm_stats, as torch takes them; or in
NumPy, or from acl_py.batch_norm's saved statistics on this part), gathered with acl_py.batch_norm_gather_stats_with_counts, then each rank's input
normalized with acl_py.batch_norm_elemt. The ranks' outputs together are plain BatchNorm of
the whole batch (the float64 reference of acl_py.reference.batch_norm), and so are the
gathered statistics and the running statistics' update. Every part runs it.
"""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.ops import part_of
from acl_py.ops.batch_norm import saved_statistic

from _part_runs import other_parts, run_on_parts

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
EPS, MOMENTUM = 1e-5, 0.1


def batch(dt, sizes=(3, 1, 5, 2), c=6, spatial=(4, 3), seed=0):
    """The whole batch [sum(sizes), C, ...] and its split into ranks of ``sizes`` samples."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((sum(sizes), c) + spatial) * 1.5 + 0.75).astype(dt)
    return x, np.split(x, np.cumsum(sizes)[:-1])


def local_stats_numpy(xs):
    """Each rank's mean and invstd (float64, rounded to float32) and count, as a rank's
    aclnnBatchNormStats gives them."""
    rows = [np.moveaxis(x.astype(np.float64), 1, 0).reshape(x.shape[1], -1) for x in xs]
    mean = np.stack([r.mean(axis=1) for r in rows]).astype(F32)
    invstd = np.stack([1 / np.sqrt(r.var(axis=1) + EPS) for r in rows]).astype(F32)
    return mean, invstd, np.array([r.shape[1] for r in rows], F32)


def local_stats_batch_norm_stats(xs):
    """Each rank's statistics from acl_py.batch_norm_stats (aclnnBatchNormStats), its count
    the values per channel."""
    stats = [acl_py.batch_norm_stats(x, EPS) for x in xs]
    counts = np.array([x.size // x.shape[1] for x in xs], F32)
    return np.stack([m for m, _ in stats]), np.stack([i for _, i in stats]), counts


def local_stats_batch_norm(xs):
    """Each rank's statistics from acl_py.batch_norm in training: save_mean, and save_invstd
    as this part writes it (the rstd on Ascend 950, the variance elsewhere: made an invstd)."""
    means, invs = [], []
    for x in xs:
        _, sm, si, _, _ = acl_py.batch_norm(x, eps=EPS)
        means.append(sm)
        invs.append(si if saved_statistic(part_of()) == "invstd"
                    else (1 / np.sqrt(si.astype(np.float64) + EPS)).astype(F32))
    counts = np.array([x.size // x.shape[1] for x in xs], F32)
    return np.stack(means), np.stack(invs), counts


def sync_batch_norm(xs, stats, w, b, rm, rv):
    mean, invstd, counts = stats
    mean_all, invstd_all, rm_out, rv_out = acl_py.batch_norm_gather_stats_with_counts(
        xs[0], mean, invstd, rm, rv, MOMENTUM, EPS, counts)
    assert rm_out is rm and rv_out is rv
    ys = [acl_py.batch_norm_elemt(x, w, b, mean_all, invstd_all, EPS) for x in xs]
    return np.concatenate(ys), mean_all, invstd_all


@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
@pytest.mark.parametrize("source", ["batch_norm_stats", "numpy", "batch_norm"])
def test_ranks_together_are_batch_norm_of_the_whole_batch(dt, source):
    x, xs = batch(dt)
    c = x.shape[1]
    rng = np.random.default_rng(1)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(dt)
    b = (0.5 * rng.standard_normal(c)).astype(dt)
    rm0 = (0.1 * rng.standard_normal(c)).astype(F32)
    rv0 = (1 + rng.random(c)).astype(F32)
    rm, rv = rm0.copy(), rv0.copy()
    stats = {"batch_norm_stats": local_stats_batch_norm_stats, "numpy": local_stats_numpy,
             "batch_norm": local_stats_batch_norm}[source](xs)
    y, mean_all, invstd_all = sync_batch_norm(xs, stats, w, b, rm, rv)
    args = (x, w, b, rm0, rv0, True, MOMENTUM, EPS)
    out, mean, rstd, rm_ref, rv_ref = reference.batch_norm(*args)
    mag = reference.batch_norm_error_scale(*args)
    assert y.dtype == dt and y.shape == x.shape
    reference.assert_close(y, out, mag[0], dt, "output")
    reference.assert_close(mean_all, mean, mag[1], F32, "mean_all")
    reference.assert_close(invstd_all, rstd, mag[2], F32, "invstd_all")
    reference.assert_close(rm, rm_ref, mag[3], F32, "running_mean")
    reference.assert_close(rv, rv_ref, mag[4], F32, "running_var")


def test_on_device_tensors_queued_on_one_stream():
    """The same chain on DeviceTensors, every call queued on one stream, synchronized once: each
    rank's aclnnBatchNormStats writes its row of the stacked statistics in place (out= views
    of one [ranks, C] tensor each)."""
    x, xs = batch(F32, sizes=(2, 2, 4), c=5, spatial=(7,))
    c = x.shape[1]
    mean = acl_py.DeviceTensor.from_numpy(np.zeros((len(xs), c), F32))
    invstd = acl_py.DeviceTensor.from_numpy(np.zeros((len(xs), c), F32))
    counts = acl_py.DeviceTensor.from_numpy(
        np.array([a.size // c for a in xs], F32))
    D = [acl_py.DeviceTensor.from_numpy(a) for a in xs]
    with acl_py.Stream() as s:
        for k, d in enumerate(D):
            acl_py.batch_norm_stats(d, EPS, stream=s, out=(mean[k], invstd[k]))
        mean_all, invstd_all, _, _ = acl_py.batch_norm_gather_stats_with_counts(
            D[0], mean, invstd, None, None, MOMENTUM, EPS, counts, stream=s)
        ys = [acl_py.batch_norm_elemt(d, None, None, mean_all, invstd_all, EPS, stream=s)
              for d in D]
        s.synchronize()
    y = np.concatenate([t.to_numpy() for t in ys])
    out = reference.batch_norm(x, eps=EPS)[0]
    reference.assert_close(y, out, reference.batch_norm_error_scale(x, eps=EPS)[0], F32)


test_on_other_parts = run_on_parts(other_parts(), "ranks_together or device_tensors")
