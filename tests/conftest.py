"""Shared fixtures for the whole suite.

* ``acl_session`` (session, autouse): ``acl_py.init()`` once, ``acl_py.finalize()`` at the end.
* ``no_leaks`` (autouse): on the emulator, ``acl_py.emulator.live_objects()`` must be back to
  its starting counts after every test. Both snapshots are taken after
  ``acl_py.release_unused()`` (garbage collection, every stream synchronized so stream-ordered
  frees have run, memory pools emptied), so only what a test really leaked shows. Opt out
  with ``@pytest.mark.no_leak_check`` (say why). Skipped on real CANN (no introspection).
* ``emulator``: the ``acl_py.emulator`` module; skips the test on real CANN.
* ``run_python``: runs Python source in a fresh interpreter (same environment plus extras)
  and returns the CompletedProcess; for exit-time and finalize tests.
* the tests a file runs on other parts (``_part_runs.run_on_parts``): one child process per
  part runs every file's selection (plugin ``_part_runs.PartRuns``).
* ``hardware`` marker: skipped, with what is missing, unless the backend is real CANN with a
  device. ``slow`` marker: skipped unless ``--soak`` is given.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import pytest

import acl_py
from acl_py import _loader

from _part_runs import PLUGIN_NAME, PartRuns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _drop_inherited_visible_devices():
    """The emulator honours ASCEND_RT_VISIBLE_DEVICES as CANN's runtime does, and the suite's
    emulator runs choose their device counts themselves: a value inherited from the shell is
    dropped for them (before the runtime reads it), and kept for a real device."""
    if "ASCEND_RT_VISIBLE_DEVICES" not in os.environ:
        return
    from acl_py.smoke import runs_on_emulator
    try:
        backend = _loader.choose_backend()
    except _loader.LibraryNotFoundError:
        return
    if runs_on_emulator(backend):
        del os.environ["ASCEND_RT_VISIBLE_DEVICES"]


_drop_inherited_visible_devices()


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help="run the long-running tests marked slow (full soak)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "no_leak_check: skip the live-object leak check for this test (say why)")
    config.pluginmanager.register(PartRuns(config), PLUGIN_NAME)


def _backend_or_reason():
    try:
        return _loader.library().backend, None
    except Exception as e:  # the emulator is not built, or CANN=required and absent
        return None, f"no CANN libraries found and no usable emulator: {e}"


def hardware_skip_reason():
    """Why hardware tests cannot run here, or None when they can."""
    backend, reason = _backend_or_reason()
    if backend is None:
        return reason
    if backend.is_emulator:
        return f"no CANN libraries found (backend is the emulator: {backend.reason})"
    from acl_py.smoke import on_npu
    if not on_npu():
        return (f"the CANN libraries under {backend.root} are the acl-py emulator's (its "
                f"prefix as the CANN root): no NPU to test")
    try:
        n = acl_py.device_count()
    except Exception as e:
        return f"CANN found under {backend.root} but counting devices failed: {e}"
    if n == 0:
        return f"CANN found under {backend.root} but no Ascend device is visible"
    return None


def pytest_collection_modifyitems(config, items):
    hardware = [it for it in items if "hardware" in it.keywords]
    if hardware:
        reason = hardware_skip_reason()
        if reason:
            for it in hardware:
                it.add_marker(pytest.mark.skip(reason=reason))
    if not config.getoption("--soak"):
        skip_slow = pytest.mark.skip(reason="long-running soak: run with --soak")
        for it in items:
            if "slow" in it.keywords:
                it.add_marker(skip_slow)


def emulator_active():
    backend, _ = _backend_or_reason()
    return backend is not None and backend.is_emulator


@pytest.fixture(scope="session", autouse=True)
def acl_session():
    """acl-py initialized for the whole session."""
    acl_py.init()
    yield
    acl_py.finalize()


@pytest.fixture
def emulator():
    """The acl_py.emulator module (the test is skipped on real CANN)."""
    if not emulator_active():
        pytest.skip("needs the emulator backend (introspection / fault injection)")
    from acl_py import emulator as emu
    return emu


def _settle():
    from acl_py import runtime
    if not runtime.is_initialized():
        acl_py.init()  # a test finalized in-process: start the next one initialized
    acl_py.release_unused()


@pytest.fixture(autouse=True)
def no_leaks(request, acl_session):
    if request.node.get_closest_marker("no_leak_check") or not emulator_active():
        yield
        return
    from acl_py import emulator as emu
    _collect_frozen_garbage_of_other_modules(request.module)
    emu.set_faults(None)
    _settle()
    gc.freeze()     # see below
    before = emu.live_objects()
    yield
    emu.set_faults(None)   # a failing test must not leave faults armed for the next
    _settle()
    after = emu.live_objects()
    leaked = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not leaked, f"live objects changed during the test (before, after): {leaked}"
    # Every object alive now was just found reachable by a full collection; freezing them
    # (gc.freeze: the collector stops traversing them) makes the next test's collections
    # cost what that test allocates, not the whole suite's heap (about 90,000 objects after
    # collection: 50-90 ms a collection, several per test, most of the suite's run time).
    gc.freeze()


_frozen_in = [None]


def _collect_frozen_garbage_of_other_modules(module):
    """Objects frozen during one test module (above) that become cyclic garbage later, the
    module's own fixtures when they tear down, are collected only when unfrozen: each test
    module starts with everything unfrozen, so its first settle collects them."""
    if _frozen_in[0] is not module:
        gc.unfreeze()
        _frozen_in[0] = module


@pytest.fixture
def run_python(tmp_path):
    """run_python(source, env=None, timeout=120) -> CompletedProcess (text mode)."""
    def run(source, env=None, timeout=120):
        script = tmp_path / "script.py"
        script.write_text(textwrap.dedent(source))
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=timeout, env=full_env, cwd=str(tmp_path))
    return run
