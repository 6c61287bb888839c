"""acl_py.aclnn: operators declared at run time from the backend's headers. Results equal the
hand-written wrappers and NumPy; arguments converted by C type; errors name the parameter;
discovery, binding to the library exporting each symbol (split libraries included), and the
clear error for a header nothing exports."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import aclnn, errors
from acl_py._loader import library

from _part_runs import bf16_where_it_runs
from _workspace_model import ARCH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMULATOR = library().backend.is_emulator
needs_emulator = pytest.mark.skipif(not EMULATOR, reason="emulator prefix layout and rules")
RNG = np.random.default_rng(5)


# ---- Add vs NumPy ----------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((4, 2), (4, 2)), ((3, 1, 5), (4, 1)), ((), (2, 3)),
                                   ((2, 0, 3), (1, 3))])
def test_add_broadcasts_like_numpy(sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    out = np.empty(np.broadcast_shapes(sa, sb), np.float32)
    aclnn.Add(a, b, 1.5, out)
    exp = a.astype(np.float64) + 1.5 * b.astype(np.float64)
    np.testing.assert_allclose(out, exp, rtol=2e-7, atol=1e-6)


BF16 = np.dtype(ml_dtypes.bfloat16)


# the BF16 case only where the part has BF16 (elsewhere refused: test_emulator_add)
@pytest.mark.parametrize("da,db,dout,alpha", bf16_where_it_runs([
    (np.float16, np.float16, np.float16, 1), (np.float16, np.float32, np.float32, 2.5),
    (BF16, BF16, BF16, 3),
    (np.int32, np.int64, np.int64, 7), (np.int8, np.uint8, np.int16, 1),
    (np.float64, np.int32, np.float64, 0.25), (np.bool_, np.bool_, np.bool_, True),
    (np.complex64, np.complex64, np.complex64, 2),
]))
def test_add_dtypes_and_alpha(da, db, dout, alpha):
    a = (RNG.standard_normal((3, 4)) * 10).astype(da)
    b = (RNG.standard_normal((4,)) * 10).astype(db)
    out = np.zeros((3, 4), dout)
    aclnn.Add(self=a, other=b, alpha=alpha, out=out)
    exp = a.astype(np.complex128) + alpha * b.astype(np.complex128)
    if np.dtype(dout) == np.bool_:
        np.testing.assert_array_equal(out, a | b)
        return
    tol = {np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 2e-2}.get(
        np.dtype(dout), 1e-6)
    np.testing.assert_allclose(out.astype(np.complex128), exp, rtol=tol, atol=tol)


def test_add_device_tensors_stay_on_the_stream():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with acl_py.Stream() as s:
        x = acl_py.DeviceTensor.from_numpy(a, s)
        y = acl_py.DeviceTensor.from_numpy(np.ones(3, np.float32), s)
        out = acl_py.DeviceTensor.empty((2, 3), np.float32)
        aclnn.Add(x, y, acl_py.Scalar(2, np.int64), out, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(out.to_numpy(), a + 2)
        # in place: selfRef receives the result
        aclnn.InplaceAdd(x, y, 1.0, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(x.to_numpy(), a + 1)
        aclnn.Adds(x, 0.5, 2, out, stream=s)
        s.synchronize()
        np.testing.assert_array_equal(out.to_numpy(), a + 2)
        for t in (x, y, out):
            t.close()


def test_inplace_numpy_array_receives_the_result():
    a = np.arange(4, dtype=np.float32)
    aclnn.InplaceAdds(a, 1.0, 1.0)
    np.testing.assert_array_equal(a, np.arange(4) + 1)


# ---- LayerNormBackward: identical to the hand-written wrapper --------------------------------

def test_byte_swapped_numpy_arrays_in_and_out():
    """NumPy arguments of another byte order are staged in the device's and the result is
    written back in the out array's own (raw bytes would read as other numbers)."""
    a = RNG.standard_normal((3, 5)).astype(">f4")
    b = RNG.standard_normal((3, 5)).astype("<f4")
    out = np.zeros((3, 5), ">f4")
    aclnn.Add(a, b, 0.5, out)
    want = a.astype(np.float64) + 0.5 * b.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm_backward_equals_the_wrapper(dtype):
    m, n = 6, 32
    x = RNG.standard_normal((m, n)).astype(dtype)
    dy = RNG.standard_normal((m, n)).astype(dtype)
    mean = x.astype(np.float32).mean(1, keepdims=True)
    rstd = (1 / np.sqrt(x.astype(np.float32).var(1, keepdims=True) + 1e-5)).astype(np.float32)
    w = RNG.standard_normal(n).astype(dtype)
    b = np.zeros(n, dtype)
    want = acl_py.layer_norm_backward(dy, x, (n,), mean, rstd, w, b)
    gi, gw, gb = np.empty_like(x), np.empty_like(w), np.empty_like(w)
    aclnn.LayerNormBackward(dy, x, [n], mean, rstd, w, b, [True, True, True], gi, gw, gb)
    for got, exp in zip((gi, gw, gb), want):
        np.testing.assert_array_equal(got, exp)
    # DeviceTensors, a masked output passed as None
    T = acl_py.DeviceTensor.from_numpy
    tens = [T(v) for v in (dy, x, mean, rstd, w, b)]
    gi_d = acl_py.DeviceTensor.empty(x.shape, dtype)
    aclnn.LayerNormBackward(tens[0], tens[1], (n,), tens[2], tens[3], tens[4], tens[5],
                            (True, False, False), gi_d, None, None)
    np.testing.assert_array_equal(gi_d.to_numpy(), want[0])
    for t in tens + [gi_d]:
        t.close()


# ---- arguments and errors ------------------------------------------------------------------

def test_errors_name_the_parameter():
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(errors.AclTypeError, match="alpha"):
        aclnn.Add(a, a, "one", a)
    with pytest.raises(errors.AclTypeError, match="other"):
        aclnn.Add(a, [1, 2, 3], 1.0, a)
    with pytest.raises(errors.AclTypeError, match="missing argument.*out"):
        aclnn.Add(a, a, 1.0)
    with pytest.raises(errors.AclTypeError, match="no parameter 'bogus'"):
        aclnn.Add(a, a, 1.0, a, bogus=1)
    with pytest.raises(errors.AclTypeError, match="given twice"):
        aclnn.Add(a, a, 1.0, a, self=a)
    with pytest.raises(errors.AclArgumentError, match="takes 4 arguments"):
        aclnn.Add(a, a, 1.0, a, a)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(errors.AclArgumentError, match="out.*read-only"):
        aclnn.Add(a, a, 1.0, ro)


def test_library_errors_carry_code_message_and_parameter():
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(errors.OperatorParameterError) as ei:
        aclnn.Add(a, np.zeros((4,), np.float32), 1.0, a)
    e = ei.value
    assert e.code == 161002 and e.call == "aclnnAddGetWorkspaceSize"
    if EMULATOR:
        assert "broadcast" in e.message and e.parameter == "self"
    with pytest.raises(errors.OperatorParameterError) as ei:
        aclnn.Add(a, a, None, a)  # NULL alpha
    assert ei.value.code == 161001


def test_help_shows_the_prototype():
    doc = aclnn.Add.__doc__
    assert "aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor " \
           "*other, const aclScalar *alpha, aclTensor *out, uint64_t *workspaceSize, " \
           "aclOpExecutor **executor)" in doc
    assert aclnn.Add.parameters == ("self", "other", "alpha", "out")
    assert "Add" in dir(aclnn)


def test_unknown_operator_is_an_attribute_error():
    with pytest.raises(AttributeError, match="aclnnNoSuchOp"):
        aclnn.NoSuchOp
    assert not hasattr(aclnn, "NoSuchOp")


def test_importing_acl_py_reads_no_header(run_python):
    r = run_python("""
        import sys
        import acl_py
        print("acl_py.aclnn" in sys.modules, "acl_py.aclnn._header" in sys.modules)
    """)
    assert r.stdout.split() == ["False", "False"], r.stderr


# ---- install trees: split libraries, a header nothing exports --------------------------------

EXTRA_HEADER = """
#include "aclnn/acl_meta.h"
/* an operator this install declares but does not ship */
aclnnStatus aclnnFrobnicateGetWorkspaceSize(const aclTensor *self, double eps, aclTensor *out,
                                            uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFrobnicate(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                            aclrtStream stream);
"""


def _tree(tmp_path, libs):
    prefix = acl_py.emulator.prefix() if EMULATOR else None
    root = tmp_path / "cann"
    (root / "lib64").mkdir(parents=True)
    for name in libs:
        os.symlink(prefix / "lib64" / name, root / "lib64" / name)
    shutil.copytree(prefix / "include", root / "include")
    (root / "include" / "aclnnop" / "aclnn_frobnicate.h").write_text(EXTRA_HEADER)
    return root


def _in_tree(root, source):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACL_EMU_", "ASCEND_"))}
    env.update(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(root),
               PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          env=env, timeout=120, cwd=str(root))


@needs_emulator
def test_split_libraries_and_a_header_nothing_exports(tmp_path):
    root = _tree(tmp_path, ["libascendcl.so", "libnnopbase.so", "libopapi_nn.so",
                            "libopapi_math.so"])
    r = _in_tree(root, """
import json
import numpy as np
from acl_py import aclnn
res = {"add": aclnn.Add.library.name, "lnb": aclnn.LayerNormBackward.library.name}
out = np.zeros(2, np.float32)
aclnn.Add(np.ones(2, np.float32), np.ones(2, np.float32), 1.0, out)
res["sum"] = out.tolist()
try:
    aclnn.Frobnicate
except aclnn.SymbolNotExportedError as e:
    res["error"] = str(e)
print(json.dumps(res))
""")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["add"] == "libopapi_math.so" and res["lnb"] == "libopapi_nn.so"
    assert res["sum"] == [2.0, 2.0]
    err = res["error"]
    assert "aclnnFrobnicateGetWorkspaceSize" in err and "aclnn_frobnicate.h" in err
    for lib in ("libopapi_nn.so", "libopapi_math.so"):
        assert str(root / "lib64" / lib) in err
    # `acl-py ops` lists it as not exported and fails; --json carries the same
    r = _in_tree(root, "import sys; from acl_py.cli import main; sys.exit(main(['ops']))")
    assert r.returncode == 1
    assert "Frobnicate" in r.stdout and "NOT EXPORTED" in r.stdout
    r = _in_tree(root, "import sys; from acl_py.cli import main; sys.exit(main(['ops', "
                       "'--json']))")
    ops = {o["name"]: o for o in json.loads(r.stdout)["operators"]}
    assert ops["Frobnicate"]["library"] is None
    assert ops["Add"]["library"].endswith("libopapi_math.so")
    assert [p["name"] for p in ops["Frobnicate"]["parameters"]] == ["self", "eps", "out"]


def test_ops_command_lists_the_operators():
    r = subprocess.run([sys.executable, "-m", "acl_py", "ops", "--json"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    ops = {o["name"]: o for o in json.loads(r.stdout)["operators"]}
    assert {"Add", "Adds", "InplaceAdd", "InplaceAdds", "LayerNormBackward"} <= set(ops)
    assert [p["name"] for p in ops["Add"]["parameters"]] == ["self", "other", "alpha", "out"]
    assert ops["Add"]["parameters"][2]["type"] == "const aclScalar *"


# ---- header parsing and conversion by C type ---------------------------------------------------

def test_header_parsing():
    from acl_py.aclnn import _header
    text = """
    /* a comment mentioning aclnnFakeGetWorkspaceSize(int x); */
    #ifndef X
    #define ACLNN_API __attribute__((visibility("default")))
    #endif
    #ifdef __cplusplus
    extern "C" {
    #endif
    // line comment
    ACLNN_API aclnnStatus aclnnFooGetWorkspaceSize(
        const aclTensor* self,   // trailing comment
        const aclTensorList *tensors, const aclScalar* alpha, double eps, int64_t dim,
        bool keepDim, const char *mode, aclDataType dtype, const int64_t dims[],
        aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor);
    ACLNN_API aclnnStatus aclnnFoo(void* workspace, uint64_t workspaceSize,
                                   aclOpExecutor* executor, aclrtStream stream);
    int notAnOperator(void);
    """
    protos = _header.prototypes(text)
    assert set(protos) == {"aclnnFooGetWorkspaceSize", "aclnnFoo"}
    p = protos["aclnnFooGetWorkspaceSize"].params
    assert [(x.name, x.base) for x in p] == [
        ("self", "aclTensor*"), ("tensors", "aclTensorList*"), ("alpha", "aclScalar*"),
        ("eps", "double"), ("dim", "int64_t"), ("keepDim", "bool"), ("mode", "char*"),
        ("dtype", "aclDataType"), ("dims", "int64_t*"), ("out", "aclTensor*"),
        ("workspaceSize", "uint64_t*"), ("executor", "aclOpExecutor**")]
    assert p[0].ctype == "const aclTensor *" and p[0].is_const and not p[9].is_const
    # the index's cheap scan also sees names a comment mentions; looking them up tells
    assert _header.operator_names(text) == ["Fake", "Foo"]


def test_conversion_by_c_type():
    from acl_py.aclnn import _convert
    from acl_py.aclnn._header import parse_param
    conv = lambda decl: _convert.converter_for(parse_param(decl, "f", 0))  # noqa: E731
    call = _convert.Call("aclnnFoo", 0, None)
    assert conv("double eps")(1, call) == 1.0
    assert conv("int32_t dim")(-3, call) == -3
    with pytest.raises(errors.AclArgumentError, match="dim.*out of range"):
        conv("int32_t dim")(2 ** 31, call)
    with pytest.raises(errors.AclTypeError, match="keepDim"):
        conv("bool keepDim")(1, call)
    assert conv("aclDataType dtype")(np.float16, call) == 1
    assert conv("aclDataType dtype")(27, call) == 27
    s = conv("const char *mode")("mean", call)
    from acl_py.raw import ffi
    assert ffi.string(s) == b"mean"
    # Converters return phase one's C values; the call holds what they live in.
    ia = conv("const aclIntArray *dims")([1, 2], call)
    assert isinstance(call.keep[-1], acl_py.IntArray) and call.keep[-1].values == (1, 2)
    assert ia == call.keep[-1].handle
    assert conv("const aclIntArray *dims")([1, 2], call) == ia  # cached by value
    assert conv("const aclIntArray *dims")((1, 2), call) == ia
    fa = conv("const aclFloatArray *scales")([0.5, 2], call)
    assert isinstance(call.keep[-1], acl_py.FloatArray) and call.keep[-1].values == (0.5, 2.0)
    with pytest.raises(errors.AclTypeError, match=r"flags\[1\]"):
        conv("const aclBoolArray *flags")([True, 1], call)
    sl = conv("const aclScalarList *scalars")([1, 2.5], call)
    sl_obj = call.created[-1]
    assert isinstance(sl_obj, acl_py.ScalarList) and sl_obj.dtypes[1] == np.float64
    assert sl == sl_obj.handle
    tl = conv("const aclTensorList *tensors")([np.ones(2, np.float32), None], call)
    tl_obj = call.created[-1]
    assert isinstance(tl_obj, acl_py.TensorList) and len(tl_obj) == 2 and tl_obj[1] is None
    assert tl == tl_obj.handle
    # the staged tensor's memory counts as used by the launch
    assert call.allocs == [tl_obj[0].allocation]
    with pytest.raises(errors.AclTypeError, match=r"tensors\[0\]"):
        conv("const aclTensorList *tensors")([[1, 2]], call)
    assert conv("const aclTensorList *tensors")(None, call) == ffi.NULL
    with pytest.raises(TypeError, match="cannot pass"):
        conv("someStruct value")
    for o in (sl_obj, tl_obj, *call.staged):
        o.close()
    # [1, 2] as an IntArray and as a FloatArray are different arrays; 1 and 1.0 are one.
    from acl_py.arguments import clear_shared_arrays
    assert conv("const aclFloatArray *scales")([1, 2], call) != ia
    assert conv("const aclFloatArray *scales")([0.5, 2.0], call) == fa
    clear_shared_arrays()


def test_prepare_runs_a_repeatable_executor():
    a = np.arange(6, dtype=np.float32)
    with acl_py.Stream() as s:
        x = acl_py.DeviceTensor.from_numpy(a)
        with aclnn.InplaceAdds.prepare(x, 1.0, 2.0) as ex:
            for _ in range(3):
                ex.run(s)
            s.synchronize()
        np.testing.assert_array_equal(x.to_numpy(), a + 6)
        with pytest.raises(errors.AclTypeError, match="selfRef"):
            aclnn.InplaceAdds.prepare(a, 1.0, 2.0)
        x.close()


def test_prepared_executor_keeps_what_it_runs_on(emulator):
    """aclnn.X.prepare makes the executor's own copies: closing the caller's tensors, scalar
    and tensor list after it changes nothing for its runs, and its close gives everything
    back (the same rule as acl_py.ops.Operator.prepare's)."""
    a, b = np.arange(6, dtype=np.float32), np.full(6, 10, np.float32)
    x, y, out = (acl_py.DeviceTensor.from_numpy(v) for v in (a, b, np.zeros(6, np.float32)))
    alpha = acl_py.Scalar(2.0)
    s = acl_py.Stream()
    acl_py.release_unused()
    before = emulator.live_objects()
    ex = aclnn.Add.prepare(x, y, alpha, out)
    assert ex.mode == "repeatable"
    # its workspace: Ascend 950's AI Core Add asks for one (16 MiB and more), the other parts'
    # TBE Add none (tests/test_emulator_workspace_size_add_ln.py has the sizes)
    workspaces = 1 if ARCH == 3510 else 0
    assert (ex.workspace_size > 0) == bool(workspaces), ex.workspace_size
    x.close(), y.close(), alpha.close()
    acl_py.release_unused()
    kept = emulator.live_objects()
    # x's and y's memory is kept for the executor; its own descriptors of the three tensors
    assert kept["device_allocations"] == before["device_allocations"] + workspaces
    assert kept["tensors"] == before["tensors"] + 3 and kept["executors"] == 1
    for _ in range(2):
        ex.run(s)
    s.synchronize()
    np.testing.assert_array_equal(out.to_numpy(), a + 2 * b)
    ex.close()
    s.synchronize()
    acl_py.release_unused()
    after = emulator.live_objects()
    assert after["device_allocations"] == before["device_allocations"] - 2
    assert (after["tensors"], after["executors"]) == (before["tensors"], 0)
    out.close()
    s.close()


def test_prepared_per_run_executor_runs_on_its_converted_arguments(emulator):
    """Where the library refuses a repeatable executor, each run is phase one and two on the
    C values converted once by prepare (a sequence made into a TensorList, a number into a
    Scalar), still valid after the caller closed its tensors."""
    a = [np.full(4, k, np.float32) for k in (1, 2, 3)]
    xs = [acl_py.DeviceTensor.from_numpy(v) for v in a]
    out = acl_py.DeviceTensor.zeros(4)
    s = acl_py.Stream()
    with emulator.inject_faults("aclSetAclOpExecutorRepeatable:1"):
        ex = aclnn.Add.prepare(xs[0], xs[1], 3, out)
    assert ex.mode == "per-run"
    emulator.reset_call_counts()
    xs[0].close()
    for _ in range(2):
        ex.run(s)
    s.synchronize()
    np.testing.assert_array_equal(out.to_numpy(), a[0] + 3 * a[1])
    counts = emulator.call_counts()
    assert counts["aclnnAddGetWorkspaceSize"] == 2 and counts["aclnnAdd"] == 2, counts
    assert "aclCreateScalar" not in counts and "aclCreateTensor" not in counts, counts
    ex.close()
    with pytest.raises(errors.ClosedError):
        ex.run(s)
    for t in (*xs, out):
        t.close()
    s.close()


def test_tensor_on_another_device_is_named(run_python):
    proc = run_python("""
        import numpy as np, acl_py
        from acl_py import aclnn
        x = acl_py.DeviceTensor.from_numpy(np.ones(4, np.float32), device=0)
        y = acl_py.DeviceTensor.from_numpy(np.ones(4, np.float32), device=1)
        out = acl_py.DeviceTensor.zeros(4, device=0)
        for call in (aclnn.Add, aclnn.Add.prepare):
            try:
                call(x, y, 1.0, out)
            except acl_py.AclArgumentError as e:
                print(e.argument, "|", e.problem)
        # a tensor list's element, through the aclnn converters and the operator layer
        from acl_py.aclnn import _convert
        from acl_py.aclnn._header import parse_param
        from acl_py.ops._two_phase import Operator, argument
        conv = _convert.converter_for(parse_param("const aclTensorList *tensors", "f", 0))
        lst = acl_py.TensorList([x, y])
        for attempt in (lambda: conv([x, y], _convert.Call("aclnnCat", 0, None)),
                        lambda: conv(lst, _convert.Call("aclnnCat", 0, None)),
                        lambda: Operator("aclnnCat", [argument("tensors")]).c_arguments(
                            (lst,), 0)):
            try:
                attempt()
            except acl_py.AclArgumentError as e:
                print(e.argument, "|", e.problem)
    """, env={"ACL_EMU_DEVICE_COUNT": "2", "ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "other | aclnnAdd: tensor is on device 1, the launch on device 0"] * 2 + [
        "tensors[1] | aclnnCat: tensor is on device 1, the launch on device 0"] * 2 + [
        "tensors | aclnnCat: tensor is on device 1, the launch on device 0"], proc.stdout


def test_failures_lose_nothing(emulator):
    a = np.ones((2, 3), np.float32)
    out = np.zeros((2, 3), np.float32)
    before = emulator.live_objects()
    # phase two fails: the executor is destroyed, staged tensors and scalars released
    with emulator.inject_faults("aclnnAdd:1"):
        with pytest.raises(errors.AclError) as ei:
            aclnn.Add(a, a, 2.0, out)
    assert ei.value.call == "aclnnAdd" and "injected" in ei.value.message
    # a conversion fails after an array was staged
    with pytest.raises(errors.AclTypeError, match="alpha"):
        aclnn.Add(a, a, object(), out)
    # the output's array is untouched by a failed call
    assert (out == 0).all()
    acl_py.release_unused()
    after = emulator.live_objects()
    assert {k: after[k] - before[k] for k in before if after[k] != before[k]} == {}
    aclnn.Add(a, a, 2.0, out)  # and the next call works
    assert (out == 3).all()


@pytest.mark.skipif(not hasattr(acl_py, "layer_norm"), reason="acl_py.layer_norm not built")
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm_equals_the_wrapper(dtype):
    m, n = 5, 48
    x = RNG.standard_normal((m, n)).astype(dtype)
    w = RNG.standard_normal(n).astype(dtype)
    b = RNG.standard_normal(n).astype(dtype)
    want = acl_py.layer_norm(x, (n,), w, b, 1e-5)
    out = np.empty_like(x)
    mean = np.empty((m, 1), np.float32)
    rstd = np.empty((m, 1), np.float32)
    aclnn.LayerNorm(x, [n], w, b, 1e-5, out, mean, rstd)
    np.testing.assert_array_equal(out, want[0])
    np.testing.assert_array_equal(mean.reshape(want[1].shape), want[1])
    np.testing.assert_array_equal(rstd.reshape(want[2].shape), want[2])


def test_first_use_from_many_threads():
    """Threads racing to the first use of operators and calling them: one binding each,
    right results."""
    import threading
    from acl_py.aclnn import _operators
    _operators.clear()
    errs, ops = [], []

    def work(k):
        try:
            a = np.full(16, k, np.float32)
            out = np.empty(16, np.float32)
            for _ in range(20):
                op = aclnn.operator("Add")
                ops.append(op)
                op(a, a, 0.5, out)
                assert (out == 1.5 * k).all()
        except BaseException as e:  # reported by the main thread
            errs.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errs, errs
    assert len({id(o) for o in ops}) == 1


CUSTOM_HEADER = """
#include "aclnn/acl_meta.h"
aclnnStatus aclnnIncrementGetWorkspaceSize(const aclTensor *self, aclTensor *out,
                                           uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnIncrement(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                           aclrtStream stream);
"""

# A custom operator built on the installed ones: out = self + 1 through aclnnAdds.
CUSTOM_SOURCE = r"""
#include <stdint.h>
typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclOpExecutor aclOpExecutor;
typedef int32_t aclnnStatus;
aclScalar *aclCreateScalar(void *value, int dataType);
aclnnStatus aclDestroyScalar(const aclScalar *scalar);
aclnnStatus aclnnAddsGetWorkspaceSize(const aclTensor *, const aclScalar *, const aclScalar *,
                                      aclTensor *, uint64_t *, aclOpExecutor **);
aclnnStatus aclnnAdds(void *, uint64_t, aclOpExecutor *, void *);

aclnnStatus aclnnIncrementGetWorkspaceSize(const aclTensor *self, aclTensor *out,
                                           uint64_t *ws, aclOpExecutor **ex) {
    float one = 1.0f;
    aclScalar *s = aclCreateScalar(&one, 0);
    aclnnStatus rc = aclnnAddsGetWorkspaceSize(self, s, s, out, ws, ex);
    aclDestroyScalar(s);
    return rc;
}
aclnnStatus aclnnIncrement(void *w, uint64_t n, aclOpExecutor *ex, void *stream) {
    return aclnnAdds(w, n, ex, stream);
}
"""


def test_custom_packages_of_opp_vendors_follow_config_ini(tmp_path, monkeypatch):
    """Without ASCEND_CUSTOM_OPP_PATH, the packages of <opp>/vendors are the ones its
    config.ini lists, in its load_priority order, as the vendor's operator library loads
    them (hicann/opbase op_kernel_lib.cpp GetVendorNames); <opp> is $ASCEND_OPP_PATH, else
    <root>/opp. They used to be every directory there, in name order."""
    from acl_py.aclnn._catalog import custom_operator_packages
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH", raising=False)
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    vendors = tmp_path / "opp" / "vendors"
    for name in ("alpha", "beta", "gamma"):
        (vendors / name).mkdir(parents=True)
    assert custom_operator_packages(tmp_path) == []      # no config.ini: none loaded
    (vendors / "config.ini").write_text("# packages\r\nload_priority=gamma,alpha,absent\r\n"
                                        "other_priority=beta\n")
    assert custom_operator_packages(tmp_path) == [vendors / "gamma", vendors / "alpha"]
    other = tmp_path / "elsewhere"
    (other / "vendors" / "beta").mkdir(parents=True)
    (other / "vendors" / "config.ini").write_text("load_priority=beta\n")
    monkeypatch.setenv("ASCEND_OPP_PATH", str(other))
    assert custom_operator_packages(tmp_path) == [other / "vendors" / "beta"]
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", f"{vendors / 'beta'}:relative/ignored")
    assert custom_operator_packages(tmp_path) == [vendors / "beta"]


@needs_emulator
def test_custom_operator_package(tmp_path):
    """A custom operator package laid out as the vendor's tools install one
    (<pkg>/op_api/include/aclnn_*.h, <pkg>/op_api/lib/libcust_opapi.so), found through
    ASCEND_CUSTOM_OPP_PATH."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    prefix = acl_py.emulator.prefix()
    pkg = tmp_path / "acme"
    (pkg / "op_api" / "include").mkdir(parents=True)
    (pkg / "op_api" / "lib").mkdir(parents=True)
    (pkg / "op_api" / "include" / "aclnn_increment.h").write_text(CUSTOM_HEADER)
    src = tmp_path / "increment.c"
    src.write_text(CUSTOM_SOURCE)
    lib = pkg / "op_api" / "lib" / "libcust_opapi.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src), f"-L{prefix}/lib64",
                    "-lopapi_math", "-lnnopbase", f"-Wl,-rpath,{prefix}/lib64"], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.update(ASCEND_CUSTOM_OPP_PATH=str(pkg),
               PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", """
import json, numpy as np
from acl_py import aclnn
out = np.zeros(3, np.float32)
aclnn.Increment(np.arange(3, dtype=np.float32), out)
print(json.dumps({"out": out.tolist(), "lib": str(aclnn.Increment.library),
                  "ops": [o["name"] for o in aclnn.operators()]}))
"""], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["out"] == [1.0, 2.0, 3.0]
    assert res["lib"] == str(lib)
    assert "Increment" in res["ops"] and "Add" in res["ops"]
