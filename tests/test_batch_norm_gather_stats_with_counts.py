"""acl_py.batch_norm_gather_stats_with_counts / acl_py.BatchNormGatherStatsWithCounts
(aclnnBatchNormGatherStatsWithCounts through the declarative operator layer) against the
float64 reference for each dtype the part takes, the running statistics written in place (and
left alone without running_mean), its argument errors (typed, naming the argument, nothing
leaked: the autouse leak check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann). Every part runs it, so the file runs whole on each. The chain with
acl_py.batch_norm_elemt, as SyncBatchNorm runs it: tests/test_sync_batch_norm.py.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import BATCH_NORM_GATHER_STATS_WITH_COUNTS, part_of

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, other_parts, run_on_parts

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
OP = acl_py.batch_norm_gather_stats_with_counts


def make(n=4, c=6, dt=F32, seed=0):
    """input (dt), mean and invstd (N, C) (dt), running_mean and running_var (dt), counts."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, c, 3)).astype(dt)
    mean = (rng.standard_normal((n, c)) + 0.5).astype(dt)
    inv = (rng.random((n, c)) + 0.5).astype(dt)
    rm = (rng.standard_normal(c) * 0.1).astype(dt)
    rv = (rng.random(c) + 1).astype(dt)
    counts = rng.integers(1, 50, n).astype(F32)
    return x, mean, inv, rm, rv, counts


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, mean, inv, counts, rm, rv, momentum, eps):
    """results against the reference; rm and rv the values before the call (None: not
    updated)."""
    exp = reference.batch_norm_gather_stats_with_counts(mean, inv, counts, rm, rv, momentum,
                                                        eps)
    mag = reference.batch_norm_gather_stats_with_counts_error_scale(mean, inv, counts, rm, rv,
                                                                    momentum, eps)
    for got, e, m, name in zip(results, exp, mag, ("mean_all", "invstd_all", "running_mean",
                                                   "running_var")):
        if e is None:
            assert got is None, name
            continue
        reference.assert_close(host(got), e, m, mean.dtype, name)


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, dt):
    x, mean, inv, rm, rv, counts = make(dt=dt)
    before = rm.copy(), rv.copy()
    args = (x, mean, inv, rm, rv, 0.2, 1e-4, counts)
    if path == "device":
        args = tuple(acl_py.DeviceTensor.from_numpy(a) if isinstance(a, np.ndarray) else a
                     for a in args)
    res = OP(*args)
    assert len(res) == 4
    assert res[2] is args[3] and res[3] is args[4]   # the running statistics, in place
    assert host(res[0]).dtype == dt and host(res[0]).shape == (6,)
    check(res, mean, inv, counts, *before, 0.2, 1e-4)


def test_float32_outputs_beside_16_bit_statistics():
    x, mean, inv, rm, rv, counts = make(dt=F16)
    res = OP(x, mean, inv, rm, rv, 0.1, 1e-5, counts, out=(np.empty(6, F32),
                                                            np.empty(6, F32), None, None))
    assert res[0].dtype == F32 and res[1].dtype == F32
    check(res, mean, inv, counts, *make(dt=F16)[3:5], 0.1, 1e-5)


def test_without_running_mean_nothing_is_updated():
    x, mean, inv, rm, rv, counts = make()
    res = OP(x, mean, inv, None, None, 0.1, 1e-5, counts)
    assert res[2:] == (None, None)
    check(res, mean, inv, counts, None, None, 0.1, 1e-5)
    kept = rv.copy()
    res = OP(x, mean, inv, None, rv, 0.1, 1e-5, counts)
    assert res[2:] == (None, None) and np.array_equal(rv, kept)


def test_one_rank_gives_its_own_statistics():
    x, mean, inv, _, _, counts = make(n=1)
    m, i = OP(x, mean, inv, None, None, 0.1, 1e-5, counts)[:2]
    assert np.allclose(m, mean[0], rtol=1e-6) and np.allclose(i, inv[0], rtol=1e-5)


@pytest.mark.parametrize("path", ["numpy", "device"])
def test_empty_mean_gives_zero_and_nan(path):
    x = np.zeros((2, 3, 2), F32)
    mean = inv = np.zeros((0, 3), F32)
    counts = np.zeros(0, F32)
    args = (x, mean, inv, None, None, 0.1, 1e-5, counts)
    if path == "device":
        args = tuple(acl_py.DeviceTensor.from_numpy(a) if isinstance(a, np.ndarray) else a
                     for a in args)
    m, i = (host(r) for r in OP(*args)[:2])
    assert (m == 0).all() and np.isnan(i).all()


ERRORS = [
    (dict(input=np.ones((2, 6, 3), np.int32)), AclTypeError, "input"),
    (dict(counts=np.ones(4, np.int64)), AclTypeError, "counts"),
    (dict(mean=[[0.0] * 6] * 4), AclTypeError, "mean"),
    (dict(momentum="a lot"), AclTypeError, "momentum"),
    (dict(input=np.ones(6, F32)), AclArgumentError, "input"),
    (dict(mean=np.ones((4, 5), F32)), AclArgumentError, "mean"),
    (dict(invstd=np.ones((3, 6), F32)), AclArgumentError, "invstd"),
    (dict(counts=np.ones(3, F32)), AclArgumentError, "counts"),
    (dict(running_mean=np.ones(5, F32)), AclArgumentError, "running_mean"),
    (dict(running_var=None), AclArgumentError, "running_var"),
    (dict(out=(None,)), AclArgumentError, "out"),
    (dict(out=(np.empty(5, F32), None, None, None)), AclArgumentError, "out[0] (mean_all)"),
    (dict(out=(None, None, np.empty(6, F32), None)), AclArgumentError,
     "out[2] (running_mean_out)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, mean, inv, rm, rv, counts = make()
    case = dict(dict(input=x, mean=mean, invstd=inv, running_mean=rm, running_var=rv,
                     momentum=0.1, eps=1e-5, counts=counts), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        OP(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize" not in emulator.call_counts()


def test_shared_running_statistics_are_refused():
    x, mean, inv, rm, rv, counts = make()
    both = np.ones(12, F32)
    with pytest.raises(AclArgumentError) as ei:
        OP(x, mean, inv, both[:6], both[3:9], 0.1, 1e-5, counts)
    assert ei.value.argument == "running_var"


def test_device_refusal_names_the_argument_and_carries_the_code():
    x, mean, inv, rm, rv, counts = (acl_py.DeviceTensor.from_numpy(a) for a in make())
    bad = acl_py.DeviceTensor.from_numpy(np.ones(3, F32))
    with pytest.raises(AclArgumentError) as ei:
        OP(x, mean, inv, rm, rv, 0.1, 1e-5, bad)
    assert ei.value.argument == "counts"
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize"
    assert "first dims" in ei.value.message


def test_operator_rules_surface_as_its_typed_error():
    """The part's own rules: on Ascend 950 the fused kernel's (a float16 invstd beside a
    float32 mean: 561002, stricter; running statistics of another dtype: 561103), which the
    other parts take; no BF16 on the Atlas training and inference parts."""
    x, mean, inv, rm, rv, counts = make()
    arch = part_of().npu_arch
    if arch == 3510:
        with pytest.raises(AclError) as ei:
            OP(x, mean, inv.astype(F16), rm, rv, 0.1, 1e-5, counts)
        assert ei.value.code == 561002 and "invstd dtype FLOAT16" in ei.value.message
        with pytest.raises(AclError) as ei:
            OP(x, mean, inv, rm.astype(F16), rv.astype(F16), 0.1, 1e-5, counts)
        assert ei.value.code == 561103 and "runningMean dtype FLOAT16" in ei.value.message
        return
    inv16 = inv.astype(F16)
    check(OP(x, mean, inv16, rm.copy(), rv.copy(), 0.1, 1e-5, counts), mean, inv16, counts,
          rm, rv, 0.1, 1e-5)
    if arch != 2201:
        with pytest.raises(AclError) as ei:
            OP(*make(dt=BF16)[:5], 0.1, 1e-5, make()[5])
        assert ei.value.code == 161002 and "not supported on" in ei.value.message


def test_plan_updates_the_running_statistics_at_each_run():
    x, mean, inv, rm, rv, counts = make()
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in (x, mean, inv, rm, rv, counts)]
    with acl_py.Stream() as s, acl_py.BatchNormGatherStatsWithCounts(
            *devs[:5], 0.5, 1e-5, devs[5]) as plan:
        # the device's workspace: tests/test_emulator_workspace_size_bn_stats.py states it
        assert plan.mode == "repeatable" and plan.workspace_size > 0
        for _ in range(3):
            before = plan.running_mean_out.to_numpy(), plan.running_var_out.to_numpy()
            plan.run(s)
            s.synchronize()
            check(plan.outputs, mean, inv, counts, *before, 0.5, 1e-5)
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    d = BATCH_NORM_GATHER_STATS_WITH_COUNTS
    assert [p.name for p in d.params] == [
        "input", "mean", "invstd", "runningMean", "runningVar", "momentum", "eps", "counts",
        "meanAll", "invstdAll"]
    assert [o.py for o in d.outputs] == ["mean_all", "invstd_all", "running_mean_out",
                                         "running_var_out"]
    assert d.smoke_cases
    for case in d.smoke_cases:
        running = case[1]()[3] is not None
        ratios = d.run_smoke_case(case)
        assert [r is not None for r in ratios] == [True, True, running, running], case[0]
        assert all(r <= 1 for r in ratios if r is not None), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.zeros((2, 3, 4), np.float32)
m = np.array([[0, 1, 2], [4, 5, 6]], np.float32); v = np.array([[1, 2, 3], [1, 1, 1]], np.float32)
k = np.array([2, 6], np.float32)
ma, ia, _, _ = acl_py.batch_norm_gather_stats_with_counts(x, m, v, None, None, 0.1, 1e-5, k)
e = reference.batch_norm_gather_stats_with_counts(m, v, k, None, None, 0.1, 1e-5)
assert np.allclose(ma, e[0], rtol=1e-6) and np.allclose(ia, e[1], rtol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
