"""What a Device is and what it may use: ``Device.attributes``, ``status``,
``stream_priority_range``, ``utilization()``, the process's core limits
(``core_limits``, ``limit_cores``, ``reset_core_limits``) and ``acl_py.run_mode()``. On the
emulator the figures are the part's (docs/emulator.md, "Device information")."""
from __future__ import annotations

import pytest

import acl_py
from acl_py import AclArgumentError, AclTypeError

# The default part, Ascend910B2: its platform configuration's figures.
ASCEND910B2 = dict(ai_cpu_cores=6, ai_cores=24, cube_cores=24, vector_cores=48,
                   l2_cache_size=192 << 20, npu_arch=2201)


@pytest.fixture
def dev():
    d = acl_py.Device(0)
    yield d
    d.reset_core_limits()


def test_run_mode_is_host_on_a_server():
    assert acl_py.run_mode() == "host"


def test_attributes(dev, emulator):
    a = dev.attributes
    assert isinstance(a, acl_py.DeviceAttributes)
    if acl_py.soc_name() == "Ascend910B2":
        assert {k: getattr(a, k) for k in ASCEND910B2} == ASCEND910B2
    assert a.total_memory == dev.mem_info().total
    assert a.cube_cores is None or a.cube_cores <= a.ai_cores


def test_status_priority_range_and_utilization(dev, emulator):
    assert dev.status == "normal"
    assert dev.stream_priority_range == acl_py.StreamPriorityRange(least=7, greatest=0)
    u = dev.utilization()
    assert u == acl_py.Utilization(cube=0, vector=0, aicpu=0, memory=None)


def test_core_limits_set_read_and_reset(dev):
    a = dev.attributes
    assert dev.core_limits == acl_py.CoreLimits(cube=a.ai_cores, vector=a.vector_cores)
    vector = min(1, a.vector_cores)     # 0, the only limit, on a part without (Ascend910A)
    dev.limit_cores(vector=vector)
    assert dev.core_limits == (a.ai_cores, vector)
    dev.limit_cores(cube=2)
    assert dev.core_limits == (2, vector)
    assert dev.attributes.cube_cores == 2       # the runtime's platform figure follows it
    assert dev.attributes.ai_cores == a.ai_cores
    dev.limit_cores(cube=a.ai_cores, vector=0)
    assert dev.core_limits == (a.ai_cores, 0)
    dev.reset_core_limits()
    assert dev.core_limits == (a.ai_cores, a.vector_cores)


def test_a_core_limit_above_the_total_names_the_argument_and_the_status(dev):
    total = dev.attributes.vector_cores
    with pytest.raises(AclArgumentError) as e:
        dev.limit_cores(vector=total + 1)
    assert e.value.argument == "vector"
    assert e.value.code == 107000 and e.value.call == "aclrtSetDeviceResLimit"
    assert dev.core_limits.vector == total   # nothing changed


@pytest.mark.parametrize("kwargs,argument,error", [
    ({"cube": -1}, "cube", AclArgumentError),
    ({"vector": 2 ** 32}, "vector", AclArgumentError),
    ({"cube": 1.0}, "cube", AclTypeError),
    ({"vector": True}, "vector", AclTypeError),
    ({"cube": "1"}, "cube", AclTypeError),
])
def test_bad_core_limits_are_refused_before_any_change(dev, kwargs, argument, error):
    before = dev.core_limits
    with pytest.raises(error) as e:
        dev.limit_cores(**{"cube": 1, "vector": 1, **kwargs})
    assert e.value.argument == argument
    assert dev.core_limits == before
