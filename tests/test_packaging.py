"""Packaging: a wheel built from the source tree alone (what `pip install .` does) carries the
generated cffi module and a built emulator, and works from its own location in a fresh
interpreter; and no build output is tracked by git.

The wheel is built without build isolation (the virtual environment already has setuptools and
cffi; isolation would need the network) from a copy of the files git would ship (tracked and
untracked-but-not-ignored), so nothing built in the working tree can leak into it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EMULATOR_FILES = ("lib64/libascendcl.so", "lib64/libacl_rt.so", "lib64/libnnopbase.so",
                  "lib64/libopapi.so", "lib64/libopapi_nn.so", "lib64/libopapi_math.so",
                  "include/acl/acl.h",
                  "include/aclnn/acl_meta.h", "include/aclnnop/aclnn_layer_norm_backward.h",
                  "include/aclnnop/aclnn_add.h", "include/aclemu/aclemu.h")


def git(*args: str) -> list[str]:
    if not (ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.split("\0" if "-z" in args else "\n") if line]


def test_git_tracks_no_build_output():
    # Tracked files that .gitignore would ignore: build outputs committed by mistake.
    assert git("ls-files", "-ci", "--exclude-standard") == []
    tracked = git("ls-files")
    bad = [f for f in tracked
           if f.endswith((".so", ".o", ".pyc", ".tmp", ".egg-info", ".whl"))
           or f == "acl_py/_ffi.py"
           or f.startswith(("acl_py/_emulator/", "build/", "dist/", ".venv/", "tests/.build/"))
           or "/__pycache__/" in f or "egg-info/" in f]
    assert bad == []
    # The generated files really are ignored, so they cannot be added by `git add .`.
    probe = ["acl_py/_ffi.py", "acl_py/_emulator/lib64/libascendcl.so", "build/x", ".venv/x",
             "acl_py/__pycache__/x.pyc", "tests/.build/prog"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *probe], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert sorted(ignored) == sorted(probe)


def source_copy(src: Path) -> Path:
    """The files git would ship (tracked, and untracked but not ignored), copied to ``src``."""
    for rel in git("ls-files", "-z", "--cached", "--others", "--exclude-standard"):
        path = ROOT / rel
        if path.is_file():  # a tracked file deleted in the working tree is skipped
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / rel)
    assert not (src / "acl_py" / "_ffi.py").exists() and not (src / "acl_py" / "_emulator").exists()
    return src


def pip_wheel(src: Path, dist: Path, **env_updates: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ACL_PY_NO_EMULATOR"}
    env.update(env_updates)
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--no-cache-dir", "-q", "-w", str(dist),
                           str(src)], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory) -> tuple[Path, str]:
    """The wheel, and the build's output (pip, setuptools, the emulator build)."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    # -O0 (appended after build.py's -O3, so it wins) cuts the emulator's compile time from
    # ~150 s to ~8 s on 2 busy cores; what is tested here is the packaging, not the optimizer.
    proc = pip_wheel(source_copy(tmp / "src"), dist, ACL_EMU_CFLAGS="-O0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(dist.glob("acl_py-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build) -> Path:
    return wheel_build[0]


def test_wheel_is_tagged_for_every_python_of_the_platform(wheel):
    # It carries native code (the emulator) but no CPython extension: the tag is
    # py3-none-<platform>, so one file installs on any Python 3 of this platform.
    platform_tag = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert wheel.name == f"acl_py-{acl_py_version()}-py3-none-{platform_tag}.whl"
    meta = zipfile.ZipFile(wheel)
    wheel_file = next(n for n in meta.namelist() if n.endswith(".dist-info/WHEEL"))
    text = meta.read(wheel_file).decode()
    assert f"Tag: py3-none-{platform_tag}" in text
    assert "Root-Is-Purelib: false" in text


def test_wheel_build_is_free_of_deprecation_warnings(wheel_build):
    _, log = wheel_build
    assert "deprecat" not in log.lower(), log


def test_wheel_carries_the_license(wheel):
    z = zipfile.ZipFile(wheel)
    license_file = next(n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
    assert z.read(license_file) == (ROOT / "LICENSE").read_bytes()
    metadata = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
    assert b"License-Expression: Apache-2.0" in metadata


def acl_py_version() -> str:
    import acl_py
    return acl_py.__version__


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("acl_py/__init__.py", "acl_py/_ffi.py", "acl_py/_loader.py", "acl_py/cli.py",
              "acl_py/__main__.py", "acl_py/py.typed",
              *(f"acl_py/_emulator/{e}" for e in EMULATOR_FILES)):
        assert f in names, f"{f} missing from {wheel.name}"
    # A CPython extension would make the py3-none tag a lie.
    assert not [n for n in names if n.endswith((".pyd", ".abi3.so"))
                or (n.endswith(".so") and ".cpython-" in n)]
    assert not [n for n in names if n.startswith(("tests/", "emulator/", "bindings/"))]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "acl-py = acl_py.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_wheel_works_from_its_own_location(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    for so in (site / "acl_py" / "_emulator" / "lib64").glob("*.so"):
        so.chmod(0o755)  # zipfile drops permission bits; pip would restore them
    # A fresh interpreter that sees only the unpacked wheel and the dependencies: -S skips
    # site-packages' .pth files, so the editable install of the source tree is invisible.
    deps = sysconfig.get_paths()["purelib"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACL_PY_EMULATOR_PREFIX", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), deps])
    env["ACL_PY_BACKEND"] = "emulator"  # the wheel's own emulator, even on a CANN machine
    code = textwrap.dedent("""
        import json, sys
        import acl_py, acl_py._ffi
        from acl_py import _loader, info
        data = info.collect()
        print(json.dumps({"acl_py": acl_py.__file__, "ffi": acl_py._ffi.__file__,
                          "prefix": str(_loader.emulator_prefix()), "info": data,
                          "editable": any("__editable__" in repr(f) for f in sys.meta_path)}))
    """)
    proc = subprocess.run([sys.executable, "-S", "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    here = str(site)
    assert not out["editable"]
    assert out["acl_py"].startswith(here) and out["ffi"].startswith(here)
    assert out["prefix"] == str(site / "acl_py" / "_emulator")
    data = out["info"]
    assert data["backend"] == "emulator" and data["error"] is None
    assert data["missing_symbols"] == []
    assert all(p.startswith(here) for p in data["libraries"].values())
    assert data["device_count"] >= 1
    # `acl-py sample` finds the ports the wheel carries in acl_py/_samples, by their
    # declarations, and runs them from there.
    def sample(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-S", "-m", "acl_py", "sample", *args], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    listed = sample("--list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == sorted(
        p.stem for p in (ROOT / "samples").glob("*.py") if "VENDOR_EXAMPLE" in p.read_text())
    shown = sample("rms_norm", "--show")
    assert shown.stdout.strip() == str(site / "acl_py" / "_samples" / "rms_norm.py")
    ran = sample("rms_norm")
    assert ran.returncode == 0 and ran.stdout.startswith("result[0] is: 0.000000\n"), ran


def test_install_without_a_c_compiler_says_how_to_proceed(tmp_path):
    proc = pip_wheel(source_copy(tmp_path / "src"), tmp_path / "dist",
                     CC=str(tmp_path / "no-such-cc"))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no C compiler found" in out and "no-such-cc" in out
    assert "ACL_PY_NO_EMULATOR=1" in out and "gcc" in out
    assert not list((tmp_path / "dist").glob("*.whl"))
