"""emulator/build.py as a person meets it: the long compile reports progress (a line per step
and a heartbeat in logs, a status line on a terminal), and without a C compiler the build
stops with what to do. A stand-in compiler (a shell script that writes its -o file after a
pause) keeps this to seconds: what is tested is the reporting, not gcc."""
from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "emulator" / "build.py"


def load_build():
    spec = importlib.util.spec_from_file_location("acl_py_emulator_build_progress", BUILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAKE_CC = """#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; fi
  shift
done
sleep 0.1
: > "$out"
"""


@pytest.fixture
def fake_cc(tmp_path) -> Path:
    cc = tmp_path / "fake-cc"
    cc.write_text(FAKE_CC)
    cc.chmod(0o755)
    return cc


def run_build(*args: str, **env_updates: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_updates)
    return subprocess.run([sys.executable, str(BUILD), *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_build_reports_each_step(fake_cc, tmp_path):
    prefix = tmp_path / "prefix"
    proc = run_build("--prefix", str(prefix), "--force", CC=str(fake_cc))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    build = load_build()
    sources = sorted(p.relative_to(build.SRC).as_posix() for p in build.SRC.rglob("*.c"))
    total = len(sources) + len(build.LIBRARIES)
    assert lines[0].startswith(f"emulator: compiling {len(sources)} files with {fake_cc}")
    steps = [line for line in lines if line.startswith("emulator: [")]
    assert len(steps) == total
    assert steps[-1].startswith(f"emulator: [{total}/{total}] link ")
    assert {line.split("] ")[1].split(" (")[0] for line in steps[:len(sources)]} == set(sources)
    assert lines[-1].startswith("emulator: built in ")
    assert (prefix / "lib64" / "libascendcl.so").exists()
    # Up to date: nothing to do, nothing printed.
    again = run_build("--prefix", str(prefix), CC=str(fake_cc))
    assert again.returncode == 0 and again.stdout == ""
    quiet = run_build("--prefix", str(prefix), "--force", "--quiet", CC=str(fake_cc))
    assert quiet.returncode == 0 and quiet.stdout == ""


def test_heartbeat_names_what_is_still_compiling():
    build = load_build()
    out = io.StringIO()
    with build._Progress(3, quiet=False, stream=out, heartbeat=0.05) as progress:
        progress.started("ops/layer_norm_backward.c")
        time.sleep(0.3)
        progress.finished("ops/layer_norm_backward.c")
    lines = out.getvalue().splitlines()
    beats = [line for line in lines if "running ops/layer_norm_backward.c" in line]
    assert beats and beats[0].startswith("emulator: 0/3 steps done, ")
    # the ticker runs until the block ends, so a heartbeat may follow the step's own line
    done = [i for i, line in enumerate(lines)
            if line.startswith("emulator: [1/3] ops/layer_norm_backward.c (")]
    assert len(done) == 1 and done[0] > lines.index(beats[0])


def test_terminal_gets_one_status_line():
    build = load_build()

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    with build._Progress(2, quiet=False, stream=out) as progress:
        progress.started("runtime/device.c")
        time.sleep(0.7)   # the status line is redrawn every 0.5 s
        progress.finished("runtime/device.c")
    text = out.getvalue()
    assert "\n" not in text           # redrawn in place, never scrolled
    assert "\r\033[Kemulator: 0/2 steps done, " in text and "running runtime/device.c" in text


def test_without_a_c_compiler_the_error_says_what_to_do(tmp_path):
    proc = run_build("--prefix", str(tmp_path / "prefix"), "--force",
                     CC=str(tmp_path / "no-such-cc"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "no C compiler found" in proc.stderr and "no-such-cc" in proc.stderr
    assert "ACL_PY_NO_EMULATOR=1" in proc.stderr and "gcc" in proc.stderr
    assert not (tmp_path / "prefix" / "lib64").exists()


# A stand-in compiler that logs each file it compiles and, compiling the file named in
# $EDIT_DURING, appends a line to it: a source edited while the build runs.
LOGGING_CC = """#!/bin/sh
out=""
for a in "$@"; do :; done
src="$a"
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; fi
  shift
done
case "$src" in *.c) echo "$src" >> "$CC_LOG";; esac
if [ -n "$EDIT_DURING" ] && [ "$src" = "$EDIT_DURING" ]; then echo "/* edited */" >> "$src"; fi
: > "$out"
"""


def _small_tree(root: Path) -> tuple[Path, list[Path]]:
    """A source tree of the build's layout, one small file per folder (and the math
    helpers libopapi_math.so links), and its include folder."""
    src, inc = root / "src", root / "include"
    for rel in ("runtime/device.c", "meta/tensor.c", "ops/convert.c", "ops/bn_channels.c",
                "ops_math/add.c", "ops/phase_one.h"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(f"/* {rel} */\n")
    (inc / "aclnnop").mkdir(parents=True)
    (inc / "aclnnop" / "aclnn_x.h").write_text("/* header */\n")
    return src, [inc]


def test_staleness_is_judged_by_content_not_time(tmp_path, monkeypatch):
    # The build records a hash of its sources (and flags) taken before its first compile: a
    # source edited during the build, whose outputs end up newer than the edit, is rebuilt
    # next time; an untouched tree is not (nothing compiled); flags count too.
    build = load_build()
    src, incs = _small_tree(tmp_path / "tree")
    monkeypatch.setattr(build, "SRC", src)
    monkeypatch.setattr(build, "INCLUDES", incs)
    cc = tmp_path / "logging-cc"
    cc.write_text(LOGGING_CC)
    cc.chmod(0o755)
    log = tmp_path / "cc.log"
    edited = src / "ops" / "convert.c"
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("CC_LOG", str(log))
    monkeypatch.setenv("EDIT_DURING", str(edited))
    monkeypatch.delenv("ACL_EMU_CFLAGS", raising=False)
    prefix = tmp_path / "prefix"

    def compiled():
        text = log.read_text() if log.exists() else ""
        log.unlink(missing_ok=True)
        return text.split()

    build.build(prefix, quiet=True)
    assert len(compiled()) == 5 and edited.read_text().endswith("/* edited */\n")
    outs = [prefix / "lib64" / name for name, _, _ in build.LIBRARIES]
    assert min(p.stat().st_mtime for p in outs) >= edited.stat().st_mtime  # times say built
    monkeypatch.delenv("EDIT_DURING")
    build.build(prefix, quiet=True)          # the edit made during the build: built again
    assert len(compiled()) == 5
    build.build(prefix, quiet=True)          # nothing changed: nothing compiled
    assert compiled() == []
    # contents, not times: a touched file is up to date, an edit dated in the past is not
    os.utime(edited)
    build.build(prefix, quiet=True)
    assert compiled() == []
    (src / "ops" / "phase_one.h").write_text("/* changed */\n")
    os.utime(src / "ops" / "phase_one.h", (0, 0))
    build.build(prefix, quiet=True)
    assert len(compiled()) == 5
    monkeypatch.setenv("ACL_EMU_CFLAGS", "-DEXTRA")    # other flags: built again
    build.build(prefix, quiet=True)
    assert len(compiled()) == 5
    build.build(prefix, quiet=True)
    assert compiled() == []
