"""The README's Python examples run as printed (a user copies them first)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path):
    # A fresh interpreter: the examples call acl_py.init()/finalize() themselves. Run as a
    # script file, as a user saves it: multiprocessing's spawn workers import it.
    example = tmp_path / "example.py"
    example.write_text(BLOCKS[index])
    env = dict(os.environ)
    env["PYTHONPATH"] = str(README.parent) + os.pathsep + env.get("PYTHONPATH", "")
    # Two emulated devices: the examples of copies between devices then copy something.
    env.setdefault("ACL_EMU_DEVICE_COUNT", "2")
    # The part the examples are written for, the emulator's default (README: ACL_EMU_SOC),
    # whatever part the test process emulates: they use BF16 and operators an Atlas training
    # or inference part has no kernel, dtype or output for.
    env["ACL_EMU_SOC"] = "Ascend910B2"
    r = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=str(README.parent))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr == ""
