"""The CANN path on the emulator's prefix for the operator tests: a child process with
ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann (no ACL_EMU_* or other ASCEND_* variable of the
suite's), bound like any CANN install, touching no aclemu symbol."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PRELUDE = """
import numpy as np, acl_py
from acl_py import reference
from acl_py._loader import library
assert not library().backend.is_emulator
"""


def run_on_cann_path(emulator, body):
    """Runs ``body`` (Python, with ``np``, ``acl_py`` and ``reference`` imported) in that child
    process; it must pass its asserts, after which "ok" is printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACL_EMU_", "ASCEND_"))}
    env.update(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(emulator.prefix()),
               PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    src = _PRELUDE + body + 'print("ok")\n'
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
