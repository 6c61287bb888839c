"""The loader (acl_py/_loader.py): backend choice, the CANN search order and its error, that only
absolute paths are ever opened (nothing planted in the current directory or on a relative path
is loaded, even through the dynamic linker's own dependency search), that what `info` prints is
what is mapped, and that a missing symbol names itself and its library.

Backend choice is tested in-process (it only looks at the file system); anything that opens
libraries runs in a fresh interpreter, because a process binds one backend for its lifetime.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acl_py import _loader
from acl_py._ffi import LIBRARY_OF

ROOT = Path(__file__).resolve().parent.parent
ARCH = platform.machine()
ROOT_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_CUSTOM_PATH")
# The CANN install roots, written out independently: a user's install under $HOME, then a root
# install, in the vendor's order (hicann/runtime example/common/resolve_cann_env.sh).
DOCUMENTED_DEFAULT_ROOTS = ("~/Ascend/cann", "~/Ascend/ascend-toolkit/latest",
                            "/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest",
                            "/opt/Ascend/cann")
ALL_NAMES = ("libascendcl.so", "libnnopbase.so", "libopapi.so", "libopapi_nn.so")


# ---- helpers ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def emu_prefix() -> Path:
    prefix = _loader.emulator_prefix()
    missing = [n for n in ALL_NAMES if not (prefix / "lib64" / n).is_file()]
    assert not missing, (f"the emulator is not built under {prefix} (missing {missing}): "
                         f"run `make build`")
    return prefix


def base_env(**updates: str) -> dict[str, str]:
    """The test process's environment without any backend choice or CANN root (a sanitizer
    run's ACL_PY_EMULATOR_PREFIX and LD_PRELOAD are kept), plus `updates`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ROOT_VARIABLES and k not in ("ACL_PY_BACKEND", "ACL_EMU_FAIL")}
    env.update(updates)
    return env


def run_py(code: str, env: dict[str, str], cwd: Path | None = None) -> dict:
    """Runs `code` in a fresh interpreter; it must print one JSON object as its last line."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          cwd=str(cwd or ROOT), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


MAPPED_LIBS = """
def mapped():
    # Every file the process has mapped, from the kernel: what was really loaded.
    out = set()
    with open('/proc/self/maps') as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith('/'):
                out.add(parts[5].strip())
    return sorted(out)
"""


def with_mapped(code: str) -> str:
    return MAPPED_LIBS + textwrap.dedent(code)


def fake_root(root: Path, names=("libascendcl.so", "libnnopbase.so", "libopapi.so"),
              sub: str = "lib64") -> Path:
    """A directory laid out like a CANN install, with empty files for libraries (enough for
    backend choice, which never opens them)."""
    d = root / sub
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_bytes(b"")
    return root


@pytest.fixture
def no_cann(monkeypatch, tmp_path):
    """No CANN anywhere: the root variables unset and the default roots moved to tmp_path."""
    for var in ROOT_VARIABLES + ("ACL_PY_BACKEND",):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_loader, "DEFAULT_ROOTS",
                        (str(tmp_path / "default-a"), str(tmp_path / "default-b")))
    return tmp_path


def compile_library(src: str, out: Path) -> Path:
    c = out.with_suffix(".c")
    c.write_text(textwrap.dedent(src))
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", str(out), str(c)],
                   check=True, capture_output=True)
    return out


# ---- backend choice (in-process, nothing opened) -------------------------------------------

def test_default_roots_and_variables_are_the_documented_ones():
    assert _loader.DEFAULT_ROOTS == DOCUMENTED_DEFAULT_ROOTS
    assert _loader.ROOT_VARIABLES == ROOT_VARIABLES


@pytest.mark.parametrize("value", ["gpu", "CANN2", "emu"])
def test_bad_backend_value(no_cann, monkeypatch, value):
    monkeypatch.setenv("ACL_PY_BACKEND", value)
    with pytest.raises(_loader.LibraryNotFoundError) as e:
        _loader.choose_backend()
    msg = str(e.value)
    assert repr(value.lower()) in msg and "auto, cann, emulator" in msg


@pytest.mark.parametrize("value", ["", "auto", " Auto "])
def test_auto_without_cann_uses_the_emulator(no_cann, monkeypatch, emu_prefix, value):
    monkeypatch.setenv("ACL_PY_BACKEND", value)
    b = _loader.choose_backend()
    assert b.name == "emulator" and b.is_emulator
    assert b.root == emu_prefix
    assert "no CANN" in b.reason
    assert b.libraries["ascendcl"] == emu_prefix / "lib64" / "libascendcl.so"
    assert all(p.is_absolute() and p.parent == emu_prefix / "lib64"
               for p in b.libraries.values())


def test_emulator_choice_skips_the_cann_search(no_cann, monkeypatch, emu_prefix):
    fake_root(no_cann / "cann")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(no_cann / "cann"))
    monkeypatch.setenv("ACL_PY_BACKEND", "EMULATOR")
    b = _loader.choose_backend()
    assert b.name == "emulator" and b.reason == "ACL_PY_BACKEND=emulator"


def test_cann_without_cann_lists_every_place_searched(no_cann, monkeypatch):
    roots = {var: no_cann / var.lower() for var in ROOT_VARIABLES}
    for var, path in roots.items():
        monkeypatch.setenv(var, str(path))
    monkeypatch.setenv("ACL_PY_BACKEND", "cann")
    with pytest.raises(_loader.LibraryNotFoundError) as e:
        _loader.choose_backend()
    msg = str(e.value)
    every_root = [*roots.values(), Path(no_cann / "default-a"), Path(no_cann / "default-b")]
    for root in every_root:
        for lib_dir in (root / "lib64", root / f"{ARCH}-linux" / "lib64"):
            for name in ALL_NAMES:
                assert str(lib_dir / name) in msg, f"{lib_dir / name} not listed:\n{msg}"
    # In the documented order.
    positions = [msg.index(str(r / "lib64" / "libascendcl.so")) for r in every_root]
    assert positions == sorted(positions)
    assert "ASCEND_HOME_PATH" in msg and "set_env.sh" in msg


def test_cann_error_names_the_real_default_roots(monkeypatch):
    for var in ROOT_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ACL_PY_BACKEND", "cann")
    if any(Path(r).expanduser().exists() for r in DOCUMENTED_DEFAULT_ROOTS):
        pytest.skip("a CANN install root exists on this machine")
    with pytest.raises(_loader.LibraryNotFoundError) as e:
        _loader.choose_backend()
    for r in DOCUMENTED_DEFAULT_ROOTS:
        assert f"{Path(r).expanduser()}/lib64/libascendcl.so" in str(e.value)


def test_a_users_install_under_home_is_found(no_cann, monkeypatch):
    # A non-root install goes to $HOME/Ascend; without set_env.sh sourced it is found there.
    monkeypatch.setattr(_loader, "DEFAULT_ROOTS", DOCUMENTED_DEFAULT_ROOTS[:2])  # the $HOME ones
    monkeypatch.setenv("HOME", str(no_cann / "home"))
    root = fake_root(no_cann / "home" / "Ascend" / "ascend-toolkit" / "latest")
    b = _loader.choose_backend()
    assert b.name == "cann" and b.root == root
    monkeypatch.setenv("HOME", "")  # no usable $HOME: those roots are skipped, not relative
    roots, _notes = _loader.search_roots()
    assert all(r.is_absolute() for r in roots) and not any("~" in str(r) for r in roots)


def test_search_order_first_root_with_all_libraries_wins(no_cann, monkeypatch):
    home, toolkit, custom = (fake_root(no_cann / n) for n in ("home", "toolkit", "custom"))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(toolkit))
    monkeypatch.setenv("ASCEND_CUSTOM_PATH", str(custom))
    assert _loader.choose_backend().root == toolkit
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    b = _loader.choose_backend()
    assert b.name == "cann" and b.root == home and "CANN found under" in b.reason
    # A root missing one library is passed over.
    (home / "lib64" / "libnnopbase.so").unlink()
    assert _loader.choose_backend().root == toolkit


def test_arch_layout_and_split_operator_library(no_cann, monkeypatch):
    root = fake_root(no_cann / "cann", ("libascendcl.so", "libnnopbase.so", "libopapi_nn.so"),
                     sub=f"{ARCH}-linux/lib64")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(root))
    monkeypatch.setenv("ACL_PY_BACKEND", "cann")
    b = _loader.choose_backend()
    lib_dir = root / f"{ARCH}-linux" / "lib64"
    assert b.libraries == {"ascendcl": lib_dir / "libascendcl.so",
                           "nnopbase": lib_dir / "libnnopbase.so",
                           "opapi": lib_dir / "libopapi_nn.so"}


def test_install_with_libacl_rt_only_is_found(no_cann, monkeypatch):
    """The runtime package installs libacl_rt.so and, optionally, libascendcl.so, its
    compatibility library (hicann/runtime scripts/package/module/ascend/RuntimeSo.xml). An
    install without libascendcl.so was not found before ("CANN libraries ... not found");
    libascendcl.so stays first where both are installed."""
    root = fake_root(no_cann / "cann", ("libacl_rt.so", "libnnopbase.so", "libopapi_nn.so"))
    monkeypatch.setenv("ASCEND_HOME_PATH", str(root))
    monkeypatch.setenv("ACL_PY_BACKEND", "cann")
    b = _loader.choose_backend()
    assert b.name == "cann" and b.root == root
    assert b.libraries["ascendcl"] == root / "lib64" / "libacl_rt.so"
    fake_root(root, ("libascendcl.so",))
    assert _loader.choose_backend().libraries["ascendcl"] == root / "lib64" / "libascendcl.so"
    for name in ("libascendcl.so", "libacl_rt.so"):
        (root / "lib64" / name).unlink()
    with pytest.raises(_loader.LibraryNotFoundError) as e:
        _loader.choose_backend()
    for name in ("libascendcl.so", "libacl_rt.so"):
        assert str(root / "lib64" / name) in str(e.value)


def test_relative_root_is_ignored_and_reported(no_cann, monkeypatch, emu_prefix):
    # A complete (fake) install on a relative path from the current directory.
    fake_root(no_cann / "rel" / "cann")
    monkeypatch.chdir(no_cann)
    monkeypatch.setenv("ASCEND_HOME_PATH", "rel/cann")
    monkeypatch.setenv("ACL_PY_BACKEND", "cann")
    with pytest.raises(_loader.LibraryNotFoundError) as e:
        _loader.choose_backend()
    assert "$ASCEND_HOME_PATH='rel/cann': ignored, not an absolute path" in str(e.value)
    monkeypatch.setenv("ACL_PY_BACKEND", "auto")
    b = _loader.choose_backend()
    assert b.name == "emulator"
    assert "$ASCEND_HOME_PATH='rel/cann': ignored, not an absolute path" in b.searched
    assert not any("rel/cann" in str(p) for p in b.libraries.values())


def test_relative_emulator_prefix_is_refused(no_cann, monkeypatch):
    monkeypatch.setenv("ACL_PY_EMULATOR_PREFIX", "acl_py/_emulator")
    monkeypatch.setenv("ACL_PY_BACKEND", "emulator")
    with pytest.raises(_loader.LibraryNotFoundError, match="not an absolute path"):
        _loader.choose_backend()


def test_unbuilt_emulator_says_how_to_build(no_cann, monkeypatch):
    monkeypatch.setenv("ACL_PY_EMULATOR_PREFIX", str(no_cann / "nothing-here"))
    with pytest.raises(_loader.LibraryNotFoundError, match="make build"):
        _loader.choose_backend()


# ---- opening libraries (subprocesses) --------------------------------------------------------

def test_emulator_prefix_as_cann_root_binds_no_emulator_symbol(emu_prefix):
    # The emulator's tree is laid out like a CANN install; found through ASCEND_HOME_PATH it is
    # driven exactly as real CANN would be, and the emulator-only API is not bound.
    out = run_py("""
        import json
        from acl_py import _loader
        from acl_py._ffi import ffi
        lib = _loader.library()
        res = {"backend": lib.backend.name, "root": str(lib.backend.root),
               "missing": lib.check_symbols(), "init": lib.aclInit(ffi.NULL)}
        n = ffi.new("uint32_t *")
        res["count_status"] = lib.aclrtGetDeviceCount(n)
        res["count"] = n[0]
        errors = {}
        for name in ("aclemuVersion", "aclemuGetLiveObjects", "aclemuSetFaults"):
            try:
                getattr(lib, name)
                errors[name] = None
            except _loader.SymbolNotFoundError as e:
                errors[name] = str(e)
        res["emulator_only"] = errors
        res["finalize"] = lib.aclFinalize()
        print(json.dumps(res))
    """, base_env(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(emu_prefix),
                  ACL_EMU_DEVICE_COUNT="2"))
    assert out["backend"] == "cann" and out["root"] == str(emu_prefix)
    assert out["missing"] == []
    assert (out["init"], out["count_status"], out["count"], out["finalize"]) == (0, 0, 2, 0)
    for name, err in out["emulator_only"].items():
        assert err is not None, f"{name} was bound on the cann backend"
        assert name in err and "emulator-only" in err and "cann" in err


PLANTED = """
#include <stdio.h>
#include <stdlib.h>
/* Announces itself when loaded, and would return a tell-tale status if ever called. */
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("PLANTED-LIBRARY-WAS-LOADED", "a");
    if (f) { fputs(__FILE__ "\\n", f); fclose(f); }
}
int aclInit(const char *p) { (void)p; return 4242; }
int aclFinalize(void) { return 4242; }
"""


@pytest.fixture(scope="module")
def planted_dir(tmp_path_factory) -> Path:
    """A directory holding CANN-named libraries that must never be loaded: in the directory
    itself, in lib64/ and <arch>-linux/lib64/ below it, and in a relative 'cann' root."""
    d = tmp_path_factory.mktemp("planted")
    lib = compile_library(PLANTED, d / "planted.so")
    for sub in ("", "lib64", f"{ARCH}-linux/lib64", "cann/lib64"):
        (d / sub).mkdir(parents=True, exist_ok=True)
        for name in ALL_NAMES:
            shutil.copy(lib, d / sub / name)
    return d


@pytest.mark.parametrize("variant", [
    {},                                               # auto: emulator (no CANN here)
    {"ACL_PY_BACKEND": "emulator"},
    {"ASCEND_HOME_PATH": "."},                        # relative roots: ignored
    {"ASCEND_HOME_PATH": "cann", "ASCEND_TOOLKIT_HOME": "./", "ASCEND_CUSTOM_PATH": "lib64/.."},
    # The dynamic linker searches LD_LIBRARY_PATH for a library's dependencies (libnnopbase.so
    # needs libascendcl.so): "." and an empty element both mean the current directory, and a
    # set_env.sh appending to an empty LD_LIBRARY_PATH leaves exactly such an empty element.
    {"LD_LIBRARY_PATH": ".:lib64"},
    {"LD_LIBRARY_PATH": ":/nonexistent:"},
], ids=["auto", "emulator", "home-dot", "relative-roots", "ld-path-dot", "ld-path-empty"])
def test_planted_library_in_cwd_is_never_loaded(emu_prefix, planted_dir, variant):
    env = base_env(**variant)
    if os.environ.get("LD_LIBRARY_PATH") and "LD_LIBRARY_PATH" in variant:
        env["LD_LIBRARY_PATH"] = variant["LD_LIBRARY_PATH"] + ":" + os.environ["LD_LIBRARY_PATH"]
    out = run_py(with_mapped("""
        import json, os
        from acl_py import _loader
        from acl_py._ffi import ffi
        lib = _loader.library()
        init = lib.aclInit(ffi.NULL)
        # Bind one function of every library, so each is really resolved.
        lib.aclCreateTensor, lib.aclnnLayerNormBackward
        res = {"init": init, "finalize": lib.aclFinalize(), "mapped": mapped(),
               "libraries": {k: str(v) for k, v in lib.backend.libraries.items()},
               "marker": os.path.exists("PLANTED-LIBRARY-WAS-LOADED")}
        print(json.dumps(res))
    """), env, cwd=planted_dir)
    here = str(planted_dir.resolve())
    assert not out["marker"], "a planted library's constructor ran"
    assert (out["init"], out["finalize"]) == (0, 0)
    assert not [p for p in out["mapped"] if p.startswith(here)], out["mapped"]
    # What is mapped under CANN's names is exactly the emulator's files.
    cann_named = sorted(p for p in out["mapped"] if os.path.basename(p) in ALL_NAMES)
    assert cann_named == sorted(out["libraries"].values())
    assert all(p.startswith(str(emu_prefix)) for p in cann_named)


def test_resolved_paths_are_what_info_prints(emu_prefix, tmp_path):
    env = base_env(ACL_PY_BACKEND="emulator")
    out = run_py(with_mapped("""
        import json
        from acl_py import info
        data = info.collect()
        print(json.dumps({"info": data, "mapped": mapped()}))
    """), env, cwd=tmp_path)
    libs = out["info"]["libraries"]
    assert set(libs) == {"ascendcl", "nnopbase", "opapi"}
    mapped_cann = sorted(p for p in out["mapped"] if os.path.basename(p) in ALL_NAMES)
    assert mapped_cann == sorted(os.path.realpath(p) for p in libs.values())
    # The command prints the same thing.
    proc = subprocess.run([sys.executable, "-m", "acl_py", "info", "--json"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["libraries"] == libs
    text = subprocess.run([sys.executable, "-m", "acl_py", "info"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120).stdout
    for path in libs.values():
        assert path in text


@pytest.fixture(scope="module")
def prefix_without_operator(emu_prefix, tmp_path_factory) -> Path:
    """A CANN-like root whose operator library lacks the operator symbols."""
    root = tmp_path_factory.mktemp("partial-cann")
    (root / "lib64").mkdir()
    for name in ("libascendcl.so", "libnnopbase.so"):
        shutil.copy(emu_prefix / "lib64" / name, root / "lib64" / name)
    compile_library("int acl_py_test_placeholder(void) { return 0; }\n",
                    root / "lib64" / "libopapi.so")
    return root


def test_missing_symbol_names_symbol_and_library(prefix_without_operator):
    opapi = prefix_without_operator / "lib64" / "libopapi.so"
    out = run_py("""
        import json
        from acl_py import _loader
        lib = _loader.library()
        res = {"missing": lib.check_symbols(), "opapi": str(lib.backend.libraries["opapi"])}
        # The other libraries still work.
        res["tensor_fn"] = lib.aclCreateTensor is not None
        try:
            lib.aclnnLayerNormBackward
            res["error"] = None
        except _loader.SymbolNotFoundError as e:
            res["error"] = str(e)
            res["is_attribute_error"] = isinstance(e, AttributeError)
        print(json.dumps(res))
    """, base_env(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(prefix_without_operator)))
    assert out["opapi"] == str(opapi)
    want = sorted(n for n, role in LIBRARY_OF.items() if role == "opapi")
    assert {"aclnnLayerNormBackward", "aclnnLayerNormBackwardGetWorkspaceSize",
            "aclnnAdd", "aclnnAddGetWorkspaceSize"} <= set(want)
    assert sorted(out["missing"]) == want
    assert out["tensor_fn"]
    assert out["error"] == f"symbol aclnnLayerNormBackward not found in {opapi}"
    assert out["is_attribute_error"]
    # `info` reports the gap and fails.
    proc = subprocess.run([sys.executable, "-m", "acl_py", "info"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env=base_env(ACL_PY_BACKEND="cann",
                                       ASCEND_HOME_PATH=str(prefix_without_operator)))
    assert proc.returncode == 1
    assert f"MISSING {len(want)}" in proc.stdout and "aclnnLayerNormBackward" in proc.stdout


def test_unloadable_library_is_a_clear_error(tmp_path):
    root = fake_root(tmp_path / "cann")  # empty files: not ELF objects
    proc = subprocess.run(
        [sys.executable, "-c", "from acl_py import _loader; _loader.library()"],
        env=base_env(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(root)), cwd=tmp_path,
        capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "LibraryNotFoundError" in proc.stderr
    assert f"cannot open {root / 'lib64' / 'libascendcl.so'}" in proc.stderr


# ---- a real install's layout and environment ------------------------------------------------

def _install_tree(root: Path, prefix: Path, names: dict[str, str]) -> Path:
    """A CANN-like install at `root` whose lib64/ holds the emulator's libraries under the
    given names ({name in the tree: emulator file}), its headers, and an opp/ directory."""
    (root / "lib64").mkdir(parents=True)
    for name, source in names.items():
        shutil.copy(prefix / "lib64" / source, root / "lib64" / name)
    shutil.copytree(prefix / "include", root / "include")
    (root / "opp").mkdir()
    return root


def test_split_install_never_loads_libopapi_so_beside_the_split_libraries(emu_prefix, tmp_path):
    # A release in transition ships the deprecated all-in-one libopapi.so (here one that lacks
    # the math operators, as a frozen one would) beside libopapi_nn.so and libopapi_math.so;
    # the vendor does not support using it together with them (hicann/ops-nn
    # docs/zh/op_api_list.md). Only the split set may be mapped, by the raw binding and by
    # acl_py.aclnn alike.
    root = _install_tree(tmp_path / "cann", emu_prefix, {
        "libascendcl.so": "libascendcl.so", "libnnopbase.so": "libnnopbase.so",
        "libopapi.so": "libopapi_nn.so", "libopapi_nn.so": "libopapi_nn.so",
        "libopapi_math.so": "libopapi_math.so"})
    out = run_py(with_mapped("""
        import json
        import numpy as np
        from acl_py import _loader, aclnn
        lib = _loader.library()
        res = {"opapi": str(lib.backend.libraries["opapi"]), "missing": lib.check_symbols()}
        out = np.zeros(2, np.float32)
        aclnn.Add(np.ones(2, np.float32), np.ones(2, np.float32), 1.0, out)
        res["sum"] = out.tolist()
        res["aclnn"] = {"Add": aclnn.Add.library.name,
                        "LayerNormBackward": aclnn.LayerNormBackward.library.name}
        res["mapped"] = [p for p in mapped() if "libopapi" in p]
        print(json.dumps(res))
    """), base_env(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(root)), cwd=tmp_path)
    lib64 = root / "lib64"
    assert out["opapi"] == str(lib64 / "libopapi_nn.so") and out["missing"] == []
    assert out["sum"] == [2.0, 2.0]
    assert out["aclnn"] == {"Add": "libopapi_math.so", "LayerNormBackward": "libopapi_nn.so"}
    assert sorted(out["mapped"]) == [str(lib64 / "libopapi_math.so"),
                                     str(lib64 / "libopapi_nn.so")]


def test_operator_libraries_of_each_release_layout(tmp_path):
    def libs(*names):
        d = tmp_path / "-".join(names or ("none",))
        d.mkdir()
        for n in names:
            (d / n).write_bytes(b"")
        return [p.name for p in _loader.operator_libraries(d)]
    assert libs("libopapi.so") == ["libopapi.so"]                     # before the split
    assert libs("libopapi_math.so", "libopapi_nn.so", "libopapi_cv.so") == [
        "libopapi_nn.so", "libopapi_cv.so", "libopapi_math.so"]
    assert libs("libopapi.so", "libopapi_math.so", "libopapi_nn.so") == [
        "libopapi_nn.so", "libopapi_math.so"]                          # never mixed
    assert libs() == []


DEPENDENT = """
int cann_test_dependency(void);
int aclInit(const char *p) { (void)p; return cann_test_dependency(); }
"""


@pytest.mark.parametrize("dependency", ["libruntime_test_dep.so", "libascend_hal.so"])
def test_set_env_not_sourced_names_the_missing_library_and_the_script(emu_prefix, tmp_path,
                                                                       dependency):
    # A toolkit under ascend-toolkit/latest whose runtime needs a library of its own lib64/
    # (or the driver's) that is not on LD_LIBRARY_PATH: what happens when set_env.sh was not
    # sourced. The error says which library, which script to source, and why Python cannot
    # fix it itself.
    root = _install_tree(tmp_path / "ascend-toolkit" / "8.0" , emu_prefix,
                         {"libnnopbase.so": "libnnopbase.so",
                          "libopapi_nn.so": "libopapi_nn.so"})
    (tmp_path / "ascend-toolkit" / "latest").symlink_to(root)
    script = tmp_path / "ascend-toolkit" / "set_env.sh"
    script.write_text("# the toolkit's environment script\n")
    lib64 = root / "lib64"
    compile_library("int cann_test_dependency(void) { return 0; }\n", lib64 / dependency)
    c = lib64 / "ascendcl.c"
    c.write_text(DEPENDENT)
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o",
                    str(lib64 / "libascendcl.so"), str(c), f"-L{lib64}",
                    f"-l:{dependency}"], check=True, capture_output=True)
    latest = tmp_path / "ascend-toolkit" / "latest"
    proc = subprocess.run(
        [sys.executable, "-c", "from acl_py import _loader; _loader.library()"],
        env=base_env(ACL_PY_BACKEND="auto", ASCEND_HOME_PATH=str(latest)), cwd=tmp_path,
        capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    err = proc.stderr
    assert f"cannot open {latest / 'lib64' / 'libascendcl.so'}" in err
    assert f"Run `source {script}`" in err and "ACL_PY_BACKEND=emulator" in err
    assert "LD_LIBRARY_PATH" in err
    if dependency == "libascend_hal.so":
        assert "libascend_hal.so is the NPU driver's library" in err
    else:
        assert f"{dependency}, a library it needs, is not on LD_LIBRARY_PATH" in err


def test_install_variables_get_set_env_values_when_unset(emu_prefix, tmp_path):
    # Libraries loadable (LD_LIBRARY_PATH set by hand, a container's ENV) but set_env.sh not
    # sourced: the operator libraries would find no kernels (ASCEND_OPP_PATH unset). The
    # loader gives the unset variables set_env.sh's values before opening anything, where
    # the C library's getenv (what the vendor's libraries call) sees them; a variable the
    # user set is kept; `info` says what was set.
    root = _install_tree(tmp_path / "cann", emu_prefix, {
        n: n for n in ("libascendcl.so", "libnnopbase.so", "libopapi_nn.so",
                       "libopapi_math.so")})
    code = """
        import ctypes, json
        from acl_py import _loader, info
        lib = _loader.library()
        getenv = ctypes.CDLL(None).getenv
        getenv.restype = ctypes.c_char_p
        seen = {v: (getenv(v.encode()) or b"").decode() for v, _ in _loader.INSTALL_VARIABLES}
        print(json.dumps({"seen": seen, "set": lib.backend.environment,
                          "text": info.format_text(info.collect())}))
    """
    env = base_env(ACL_PY_BACKEND="cann", ASCEND_TOOLKIT_HOME=str(root))
    for var, _ in _loader.INSTALL_VARIABLES:
        env.pop(var, None)
    out = run_py(code, env, cwd=tmp_path)
    want = {"ASCEND_HOME_PATH": str(root), "ASCEND_OPP_PATH": str(root / "opp"),
            "ASCEND_AICPU_PATH": str(root)}
    assert out["seen"] == want and out["set"] == want
    assert f"note       set ASCEND_OPP_PATH={root / 'opp'} (unset; set_env.sh's value)" \
        in out["text"]
    env["ASCEND_OPP_PATH"] = "/somewhere/else/opp"
    out = run_py(code, env, cwd=tmp_path)
    assert out["seen"]["ASCEND_OPP_PATH"] == "/somewhere/else/opp"
    assert "ASCEND_OPP_PATH" not in out["set"]
    # The emulator's prefix (no opp/) used as the install: nothing is set.
    env = base_env(ACL_PY_BACKEND="cann", ASCEND_TOOLKIT_HOME=str(emu_prefix))
    for var, _ in _loader.INSTALL_VARIABLES:
        env.pop(var, None)
    assert run_py(code, env, cwd=tmp_path)["set"] == {}


def test_the_toolkits_driver_stub_is_named_when_the_runtime_sees_no_device(tmp_path):
    # Toolkit installed, driver not: set_env.sh puts the toolkit's link-time stub
    # libascend_hal.so (devlib/) on LD_LIBRARY_PATH, the runtime loads and counts no device.
    # info names the driver library in use and says it is the stub; smoke's no-device failure
    # says so too. (The stub is mapped by hand here; the device count fails by injection.)
    devlib = tmp_path / "cann" / f"{ARCH}-linux" / "devlib" / "linux" / ARCH
    devlib.mkdir(parents=True)
    stub = compile_library("int halGetDeviceInfo(void) { return 1; }\n",
                           devlib / "libascend_hal.so")
    out = run_py(f"""
        import ctypes, io, json
        ctypes.CDLL({str(stub)!r})
        from acl_py import info, smoke
        text = info.format_text(info.collect())
        out = io.StringIO()
        status = smoke.main(["--quick"], out=out, err=io.StringIO())
        print(json.dumps({{"info": text, "smoke": out.getvalue(), "status": status}}))
    """, base_env(ACL_PY_BACKEND="emulator", ACL_EMU_FAIL="aclrtGetDeviceCount:2"))
    assert f"driver     {stub}" in out["info"]
    assert f"note       the NPU driver library in use is the toolkit's stub {stub}" in out["info"]
    assert out["status"] == 1
    assert "counting the devices failed" in out["smoke"]
    assert f"the NPU driver library in use is the toolkit's stub {stub}" in out["smoke"]
