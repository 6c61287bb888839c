"""The NumPy models of the device's vector reductions (tests/_device_reduce.py), which the
operator tests compare the emulator's bits against, checked against the order the Ascend C
ReduceSum reference writes out: within a 64-lane repeat lanes 0 + 1, 2 + 3, ..., then those
sums pairwise; across the repeats of the count form, in order."""
from __future__ import annotations

import numpy as np
import pytest

from _device_reduce import (fold64, half_interval_sum, lane_blocks_sum, reduce_sum_count,
                            reduce_sum_count_m200)

f = np.float32


def adjacent_tree(values):
    """The reference's tree written out on Python scalars, each add rounded to float32."""
    level = [f(v) for v in values]
    while len(level) > 1:
        level = [f(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def test_fold64_is_the_adjacent_pair_tree():
    rng = np.random.default_rng(7)
    v = (rng.standard_normal((50, 64)) * 10.0 ** rng.integers(-3, 6, (50, 64))).astype(f)
    want = np.array([adjacent_tree(row) for row in v], f)
    assert np.array_equal(fold64(v).view(np.uint32), want.view(np.uint32))


def test_fold64_is_not_a_halving_tree():
    # 1e8 absorbs a 1 in float32: adjacent pairs give (1e8 + 1) + (-1e8 + 1) = 0; a halving
    # tree (lane l + lane l + s, s = 32, 16, ..., 1) pairs lanes 0 and 2, 1 and 3, giving 2.
    v = np.zeros((1, 64), f)
    v[0, :4] = (1e8, 1, -1e8, 1)
    assert fold64(v)[0] == 0.0


@pytest.mark.parametrize("n", [1, 63, 64, 65, 128, 200])
def test_reduce_sum_count_adds_the_repeats_in_order(n):
    rng = np.random.default_rng(n)
    t = (rng.standard_normal((3, n)) * 1e3).astype(f)
    for row, got in zip(t, reduce_sum_count(t)):
        acc = f(0)
        for i in range(0, n, 64):
            acc = f(acc + adjacent_tree(np.pad(row[i:i + 64], (0, 64 - len(row[i:i + 64])))))
        assert got.view(np.uint32) == acc.view(np.uint32)


@pytest.mark.parametrize("n", [1, 63, 64, 100, 128, 200, 4096, 4160, 8192, 8255])
def test_reduce_sum_count_m200_reduces_the_repeat_results_again(n):
    """The Atlas inference parts' count form (asc-devkit dav_m200 ReduceSumImpl): the whole
    repeats' trees, those results in trees of 64 (counter mode), then one more tree of those
    when there are several; a partial last repeat's tree alone, then the tree of the two."""
    rng = np.random.default_rng(n)
    t = (rng.standard_normal((2, n)) * 1e3).astype(f)

    def tree(vals):
        return adjacent_tree(list(vals) + [0.0] * (64 - len(vals)))
    for row, got in zip(t, reduce_sum_count_m200(t)):
        reps = n // 64
        if reps == 0:
            want = tree(row)
        else:
            results = [tree(row[64 * r:64 * r + 64]) for r in range(reps)]
            groups = [tree(results[k:k + 64]) for k in range(0, reps, 64)]
            want = groups[0] if len(groups) == 1 else tree(groups)
            if n % 64:
                want = tree([want, tree(row[64 * reps:])])
        assert got.view(np.uint32) == f(want).view(np.uint32)
    if n == 8255:  # not the counter-mode order of Atlas A2/A3
        assert not np.array_equal(reduce_sum_count_m200(t), reduce_sum_count(t))


@pytest.mark.parametrize("n", [5, 64, 65, 100, 256, 300])
def test_half_interval_sum_folds_onto_the_front(n):
    rng = np.random.default_rng(n)
    t = (rng.standard_normal((3, n)) * 1e3).astype(f)
    for row, got in zip(t, half_interval_sum(t)):
        v = [f(x) for x in row]
        if n > 64:
            body = 1 << (n.bit_length() - 1)
            for i in range(n - body):
                v[i] = f(v[i] + v[body + i])
            while body > 64:
                body //= 2
                for i in range(body):
                    v[i] = f(v[i] + v[i + body])
            v = v[:64]
        want = adjacent_tree(v + [f(0)] * (64 - len(v)))
        assert got.view(np.uint32) == want.view(np.uint32)


@pytest.mark.parametrize("n", [1, 64, 65, 200])
def test_lane_blocks_sum_accumulates_each_lane_in_order(n):
    rng = np.random.default_rng(n)
    t = (rng.standard_normal((3, n)) * 1e3).astype(f)
    for row, got in zip(t, lane_blocks_sum(t)):
        lanes = [f(0)] * 64
        for i, v in enumerate(row):
            lanes[i % 64] = f(v + lanes[i % 64])
        assert got.view(np.uint32) == adjacent_tree(lanes).view(np.uint32)
