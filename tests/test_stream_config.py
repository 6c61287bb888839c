"""Stream priority, flags, id, abort and stop (``Stream(priority=, flags=)``,
``Stream.priority``, ``.flags``, ``.id``, ``Stream.abort()``, ``Stream.stop()``):
aclrtCreateStreamWithConfig, aclrtStreamGetPriority, aclrtStreamGetFlags, aclrtStreamGetId,
aclrtStreamAbort, aclrtStreamStop."""
from __future__ import annotations

import time

import numpy as np
import pytest

import acl_py
from acl_py import AclArgumentError, AclError, AclTypeError, ClosedError, Stream, StreamFlag
from acl_py import DeviceTensor, default_stream
from acl_py.errors import NotSupportedError


def controls_streams(call):
    """Whether this part has the task scheduler's stream control (aclrtStreamAbort,
    aclrtStreamStop: Atlas A2/A3 and Ascend 950), asked by ``call``, an abort or a stop of an
    idle stream; on a part without it the refusal is checked (207000, the runtime's
    StreamAbort/StreamClear: hicann/runtime src/runtime/api/impl/api_error.cc)."""
    try:
        call()
    except NotSupportedError as e:
        assert e.code == 207000
        return False
    return True


def test_a_stream_keeps_its_priority_and_flags():
    with Stream(priority=5, flags=StreamFlag.FAST_LAUNCH | StreamFlag.FAST_SYNC) as s:
        assert s.priority == 5
        assert s.flags == StreamFlag.FAST_LAUNCH | StreamFlag.FAST_SYNC
        assert isinstance(s.flags, StreamFlag)
        assert s.id > 0
        with Stream() as t:
            assert (t.priority, t.flags) == (0, StreamFlag(0))
            assert t.id not in (0, s.id)
        x = np.arange(8, dtype=np.float32)      # an ordinary stream for work
        with DeviceTensor.from_numpy(x, s) as d:
            assert np.array_equal(d.to_numpy(s), x)


def test_the_default_stream_answers_too():
    d = default_stream()
    assert (d.priority, d.flags, d.id) == (0, StreamFlag(0), 0)


@pytest.mark.parametrize("priority", [-1, 8, 2**40])
def test_a_priority_outside_0_to_7_is_refused(priority):
    with pytest.raises(AclArgumentError) as info:
        Stream(priority=priority)
    assert info.value.argument == "priority"


@pytest.mark.parametrize("kwargs,argument", [({"priority": "high"}, "priority"),
                                             ({"priority": True}, "priority"),
                                             ({"flags": 1.0}, "flags"),
                                             ({"flags": None}, "flags")])
def test_wrong_types_are_refused(kwargs, argument):
    with pytest.raises(AclTypeError) as info:
        Stream(**kwargs)
    assert info.value.argument == argument


@pytest.mark.parametrize("flags", [0x40, -1, 0x80 | StreamFlag.HUGE])
def test_bits_that_are_no_flag_are_refused(flags):
    with pytest.raises(AclArgumentError) as info:
        Stream(flags=flags)
    assert info.value.argument == "flags"


def test_a_device_use_only_stream_takes_no_host_work():
    with Stream(flags=StreamFlag.DEVICE_USE_ONLY) as s:
        assert s.flags == StreamFlag.DEVICE_USE_ONLY
        with pytest.raises(AclError) as info:
            DeviceTensor.from_numpy(np.ones(4, dtype=np.float32), s)
        assert info.value.code == 507000
        s.synchronize()


def test_properties_of_a_closed_stream_raise():
    s = Stream()
    s.close()
    for name in ("priority", "flags", "id"):
        with pytest.raises(ClosedError):
            getattr(s, name)
    with pytest.raises(ClosedError):
        s.abort()


def test_abort_of_an_idle_stream():
    with Stream() as s:
        controls_streams(s.abort)
        s.synchronize()


def test_abort_drops_the_queued_work_and_the_stream_goes_on(emulator):
    x = np.arange(16, dtype=np.float32)
    with Stream() as s, DeviceTensor.from_numpy(np.zeros(16, dtype=np.float32), s) as d:
        s.synchronize()
        if not controls_streams(s.abort):
            return                            # refused: nothing to abort with
        emulator.set_faults("aclrtMemcpyAsync:1:hang")
        d.copy_from_numpy(x, s)               # hangs on the stream
        d.copy_from_numpy(x + 1, s)           # queued behind it: dropped
        s.abort()
        emulator.set_faults(None)
        with pytest.raises(AclError) as info:  # the ended copy's failure, once
            s.synchronize()
        assert info.value.code == 507035
        assert np.array_equal(d.to_numpy(s), np.zeros(16, dtype=np.float32))
        d.copy_from_numpy(x, s)
        assert np.array_equal(d.to_numpy(s), x)


ABORT_SCRIPT = """
import acl_py
from acl_py.errors import NotSupportedError
with acl_py.Stream() as s:
    try:
        s.abort()
    except NotSupportedError as e:
        print("refused", e.code)
"""


def test_abort_is_not_supported_on_an_atlas_inference_part(run_python, emulator):
    r = run_python(ABORT_SCRIPT, env={"ACL_EMU_SOC": "Ascend310P3"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["refused", "207000"]


def test_stream_flag_bits_are_cann_s():
    from acl_py.raw import lib
    assert acl_py.StreamFlag is StreamFlag
    assert [int(f) for f in StreamFlag] == [
        lib.ACL_STREAM_FAST_LAUNCH, lib.ACL_STREAM_FAST_SYNC, lib.ACL_STREAM_PERSISTENT,
        lib.ACL_STREAM_HUGE, lib.ACL_STREAM_CPU_SCHEDULE, lib.ACL_STREAM_DEVICE_USE_ONLY]


def test_stop_ends_the_running_task_and_the_queued_work_runs(emulator):
    x = np.arange(16, dtype=np.float32)
    with Stream() as s, DeviceTensor.from_numpy(np.zeros(16, dtype=np.float32), s) as d:
        s.synchronize()
        if not controls_streams(s.stop):
            return                            # refused: nothing to stop with
        emulator.set_faults("aclrtMemcpyAsync:1:hang")
        d.copy_from_numpy(x, s)               # hangs on the stream: ended by the stop
        d.copy_from_numpy(x + 1, s)           # queued behind it: runs
        time.sleep(0.2)                       # the hang has started: a stop ends a running task
        s.stop()
        emulator.set_faults(None)
        with pytest.raises(AclError) as info:  # the ended copy's failure, once
            s.synchronize()
        assert info.value.code == 507035
        assert np.array_equal(d.to_numpy(s), x + 1)
        s.stop()                               # an idle stream: nothing to end
        s.synchronize()


def test_stop_refuses_a_default_stream_and_a_closed_one():
    with pytest.raises(acl_py.AclArgumentError, match="default stream") as e:
        acl_py.default_stream().stop()
    assert e.value.argument == "stream"
    s = Stream()
    s.close()
    with pytest.raises(acl_py.ClosedError):
        s.stop()


STOP_SCRIPT = ABORT_SCRIPT.replace("abort", "stop")


def test_stop_is_not_supported_on_an_atlas_inference_part(run_python, emulator):
    r = run_python(STOP_SCRIPT, env={"ACL_EMU_SOC": "Ascend310P3"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["refused", "207000"]
