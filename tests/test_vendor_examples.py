"""Opt-in: the vendor's own aclnnAdd examples (hicann/ops-math math/add/examples/*.cpp) build
UNCHANGED against the emulator's prefix with the vendor's command line (its
scripts/build_example.sh: -lopapi_math -lascendcl -lnnopbase) and print what they print on a
device. Set ACL_PY_VENDOR_OPS_MATH to a checkout of hicann/ops-math to run them; the files
are read from there, never copied into this repository."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from acl_py import _loader

CHECKOUT = os.environ.get("ACL_PY_VENDOR_OPS_MATH")
BUILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".build")

# out = self + 1.2f * other on the examples' float32 inputs, printed with "%lf".
ADD_RESULTS = ["1.200000", "2.200000", "3.200000", "5.400000", "6.400000", "7.400000",
               "9.600000", "10.600000"]

pytestmark = pytest.mark.skipif(
    not CHECKOUT, reason="set ACL_PY_VENDOR_OPS_MATH to a hicann/ops-math checkout to build "
    "its aclnnAdd examples against the emulator")


@pytest.mark.parametrize("example", ["test_aclnn_add.cpp", "test_aclnn_inplace_add.cpp"])
def test_vendor_add_example(example):
    source = os.path.join(CHECKOUT, "math", "add", "examples", example)
    if not os.path.exists(source):
        pytest.fail(f"{source} does not exist: ACL_PY_VENDOR_OPS_MATH={CHECKOUT!r} is not an "
                    f"ops-math checkout")
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    prefix = str(_loader.emulator_prefix().resolve())
    os.makedirs(BUILD, exist_ok=True)
    exe = os.path.join(BUILD, example[:-4])
    cmd = [gxx, source, f"-I{prefix}/include", f"-L{prefix}/lib64", "-lopapi_math",
           "-lascendcl", "-lnnopbase", f"-Wl,-rpath,{prefix}/lib64", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    run = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    printed = [line.split("is: ")[1] for line in run.stdout.splitlines() if "is: " in line]
    assert printed == ADD_RESULTS, run.stdout


def test_every_vendor_operator_header_is_understood(tmp_path):
    """acl_py.aclnn reads every operator header of the checkout(s) (ACL_PY_VENDOR_OPS_MATH,
    and ACL_PY_VENDOR_OPS_NN when set): each two-phase pair is found, its prototypes parse,
    every parameter type has a converter and both become cffi function pointer types."""
    from acl_py.aclnn import _convert
    from acl_py.aclnn._catalog import Catalog, function_pointer
    include = tmp_path / "include" / "aclnnop"
    include.mkdir(parents=True)
    for checkout in filter(None, (CHECKOUT, os.environ.get("ACL_PY_VENDOR_OPS_NN"))):
        for root, _dirs, files in os.walk(checkout):
            if os.path.basename(root) != "op_api":
                continue
            for f in files:
                if f.startswith("aclnn_") and f.endswith(".h") and not (include / f).exists():
                    os.symlink(os.path.join(root, f), include / f)
    catalog = Catalog(tmp_path)
    names = catalog.names()
    assert len(names) > 100
    for name in names:
        spec = catalog.spec(name)
        for p in spec.params:
            _convert.converter_for(p)
        function_pointer(spec.phase_one, 1)
        function_pointer(spec.phase_two, 1)
