"""Opt-in: the vendor's own operator examples build UNCHANGED against the emulator's prefix
with the vendor's command line (its scripts/build_example.sh: the install's include/ and
lib64/, the operator library plus -lascendcl -lnnopbase) and print what they print on a
device. The files are read from vendor checkouts, never copied into this repository. One
variable for every opt-in vendor test (see tests/test_vendor_headers.py):

    ACL_PY_VENDOR_SOURCES=/path/to/dir   with ops-math/ (hicann/ops-math: math/add/examples,
                                         aclnnAdd), ops-nn/ (hicann/ops-nn:
                                         norm/layer_norm_v4/examples,
                                         norm/rms_norm/examples,
                                         norm/add_rms_norm/examples,
                                         norm/rms_norm_grad/examples,
                                         norm/group_norm/examples,
                                         norm/add_layer_norm/examples,
                                         norm/deep_norm/examples,
                                         norm/group_norm_silu/examples,
                                         norm/add_layer_norm_grad/examples,
                                         norm/batch_norm_v3/examples,
                                         norm/deep_norm_grad/examples,
                                         norm/group_norm_grad/examples,
                                         norm/batch_norm_grad_v3/examples,
                                         norm/instance_norm_v3/examples/arch20, run on
                                         an Atlas inference part,
                                         norm/rms_norm_quant/examples,
                                         norm/add_rms_norm_quant/examples,
                                         norm/add_rms_norm_dynamic_quant/examples
                                         (built; its run refused: below),
                                         norm/sync_batch_norm_gather_stats_with_counts/
                                         examples, norm/batch_norm_elemt/examples,
                                         norm/bn_training_reduce/examples,
                                         norm/add_layer_norm_quant/examples, run on
                                         Ascend 950;
                                         ops-math math/reduce_std_with_mean/examples) and
                                         runtime/
                                         (hicann/runtime: example/1_basic_features/device/
                                         2_device_P2P, run on two emulated devices;
                                         example/2_advanced_features/callback;
                                         example/1_basic_features/device, context and
                                         memory/0..6;
                                         example/0_quickstart)


                                         example/1_basic_features/device, context,
                                         memory/0..6 and 9, stream, event/
                                         0_event_status; example/3_memory_advanced/
                                         host_register/0_simple_zero_copy;
                                         example/0_quickstart/3_cross_version/
                                         0_runtime_compatibility; example/
                                         2_advanced_features/kernel/
                                         1_launch_kernel_with_reslimit; example/
                                         2_advanced_features/built_in_task)

The Python ports of the operator examples (samples/layer_norm.py, fast_layer_norm.py,
rms_norm.py, add.py, add_rms_norm.py, rms_norm_grad.py, group_norm.py, add_layer_norm.py,
deep_norm.py, group_norm_silu.py, group_norm_silu_v2.py, add_layer_norm_grad.py, batch_norm.py,
deep_norm_grad.py, group_norm_backward.py, batch_norm_backward.py,
batch_norm_reduce_backward.py, batch_norm_elemt_backward.py, instance_norm.py,
rms_norm_quant.py, batch_norm_elemt.py, batch_norm_stats.py,
add_rms_norm_quant.py, add_layer_norm_quant.py) print byte for byte what the C++ examples
print, both on the emulator (instance_norm.py's on Ascend310P3, add_layer_norm_quant.py's on
Ascend950PR_9599, each the operator's only part;
batch_norm_gather_stats_with_counts.py cannot: its example reads host data past its
vectors).

The runtime examples' Ascend C kernels (example/kernel_func, compiled by the CANN toolchain
into their `kernels` library) cannot exist on the emulator: tests/c/vendor_kernels.cpp stands
in for that library, queuing each kernel's effect on the stream; tests/c/vendor_binary_kernels.cpp
stands in for the kernel binary calls and file of host_register/0_simple_zero_copy. The
examples' own sources are compiled as they are.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from acl_py import _loader
from acl_py import sample as _sample

VARIABLE = "ACL_PY_VENDOR_SOURCES"
VENDOR = os.environ.get(VARIABLE)


def _checkout(name):
    """<ACL_PY_VENDOR_SOURCES>/<name> when the variable is set (a missing one fails the test
    that needs it, naming the path: a typo must not pass as a skip)."""
    return os.path.join(VENDOR, name) if VENDOR else None


OPS_MATH = _checkout("ops-math")
OPS_NN = _checkout("ops-nn")
RUNTIME = _checkout("runtime")
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, ".build")
KERNELS = os.path.join(HERE, "c", "vendor_kernels.cpp")


def compile_example(checkout, relpath, libraries, includes=(), sources=(), name=None,
                    flags=()):
    """g++ checkout/relpath (plus ``sources``: the vendor's, relative to the checkout, or
    absolute) against the emulator prefix and the vendor's own ``includes`` (relative to the
    checkout), with the compiler ``flags`` added; returns (the executable's path, the finished
    compiler run)."""
    source = os.path.join(checkout, relpath)
    if not os.path.exists(source):
        pytest.fail(f"{source} does not exist: {VARIABLE}={VENDOR!r} does not hold the "
                    f"{os.path.basename(checkout)} checkout")
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    prefix = str(_loader.emulator_prefix().resolve())
    os.makedirs(BUILD, exist_ok=True)
    exe = os.path.join(BUILD, name or ("vendor_" + os.path.basename(relpath)[:-4] + "_" +
                                       "_".join(libraries)))
    cmd = [gxx, *flags, source, *(os.path.join(checkout, f) for f in sources),
           f"-I{prefix}/include",
           *(f"-I{os.path.join(checkout, d)}" for d in includes), f"-L{prefix}/lib64",
           *(f"-l{lib}" for lib in libraries), "-lascendcl", "-lnnopbase", "-pthread",
           f"-Wl,-rpath,{prefix}/lib64", "-o", exe]
    return exe, subprocess.run(cmd, capture_output=True, text=True)


def build_and_run(checkout, relpath, libraries, includes=(), env=None, sources=(), name=None,
                  cwd=None, flags=()):
    """Builds checkout/relpath (see compile_example), runs it (in ``cwd``, if given) with
    ``env`` added to an environment free of ``ACL_EMU_*``; returns its stdout."""
    exe, r = compile_example(checkout, relpath, libraries, includes, sources, name, flags)
    assert r.returncode == 0, f"{' '.join(r.args)}\n{r.stderr}"
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    run_env.update(env or {})
    run = subprocess.run([exe], capture_output=True, text=True, env=run_env, timeout=120,
                         cwd=cwd)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


# out = self + 1.2f * other on the examples' float32 inputs, printed with "%lf".
ADD_RESULTS = ["1.200000", "2.200000", "3.200000", "5.400000", "6.400000", "7.400000",
               "9.600000", "10.600000"]


def add_example_output() -> str:
    """What test_aclnn_add.cpp prints: ADD_RESULTS, one "result[%ld] is: %lf" line each."""
    return "".join(f"result[{i}] is: {v}\n" for i, v in enumerate(ADD_RESULTS))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-math checkout (ops-math/) to build its aclnnAdd examples "
                    "against the emulator")
@pytest.mark.parametrize("example", ["test_aclnn_add.cpp", "test_aclnn_inplace_add.cpp"])
def test_vendor_add_example(example):
    out = build_and_run(OPS_MATH, os.path.join("math", "add", "examples", example),
                        ["opapi_math"])
    printed = [line.split("is: ")[1] for line in out.splitlines() if "is: " in line]
    assert printed == ADD_RESULTS, out


def layer_norm_example_output() -> str:
    """The layer_norm_v4 examples' inputs (aclnnLayerNorm's, WithImplMode's and
    aclnnFastLayerNorm's: [1, 2, 32] of 2.0 over [32], weight 1, bias 0, eps 1e-5) through
    the documented formulas (docs/aclnnLayerNorm&aclnnLayerNormWithImplMode.md):
    out 0, mean 2, rstd = 1 / sqrt(eps) in float as the kernel computes it (eps cast to
    float), printed with %f."""
    rstd = np.float32(1) / np.sqrt(np.float32(1e-5))
    lines = [f"out result[{i}] is: {0.0:f}" for i in range(64)]
    lines += [f"mean result[{i}] is: {2.0:f}" for i in range(2)]
    lines += [f"rstd result[{i}] is: {float(rstd):f}" for i in range(2)]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnLayerNorm examples "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
@pytest.mark.parametrize("example", ["test_aclnn_layer_norm_v4.cpp",
                                     "test_aclnn_layer_norm_with_impl_mode.cpp",
                                     "test_aclnn_fast_layer_norm.cpp"])
def test_vendor_layer_norm_example(example, library):
    out = build_and_run(OPS_NN, os.path.join("norm", "layer_norm_v4", "examples", example),
                        [library])
    assert out == layer_norm_example_output()


def rms_norm_example_output() -> str:
    """The rms_norm example's inputs (x = gamma = 0..7 twice, x [2, 16], epsilon 1e-6)
    through the kernel's float32 chain (op_kernel/rms_norm.h): rstd = 1 / sqrt(sum(x^2) *
    (1/16) + eps), y = (x * rstd) * gamma; every step is exact or one IEEE rounding here, so
    the printed values are the device's. The example prints y with %f."""
    f = np.float32
    v = np.tile(np.arange(8, dtype=f), 2)
    rstd = f(1) / np.sqrt(f(np.sum(v * v)) * (f(1) / f(16)) + f(1e-6))
    y = np.concatenate([(v * rstd) * v] * 2)
    return "".join(f"result[{i}] is: {float(y[i]):f}\n" for i in range(32))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnRmsNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_rms_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "rms_norm", "examples",
                                             "test_aclnn_rms_norm.cpp"), [library])
    assert out == rms_norm_example_output()


def add_rms_norm_example_output() -> str:
    """The add_rms_norm example's inputs (x1 = x2 = gamma = 0..7 twice, x1 [2, 16], epsilon
    1e-6, FLOAT) through the kernel's float32 chain (op_kernel/add_rms_norm.h): x = x1 + x2,
    rstd = 1 / sqrt(sum(x * x * (1/16)) + eps), y = (x * rstd) * gamma; the squares, their
    scaling by 1/16 and their sum are exact here and the rest are single IEEE roundings, so
    the printed values are the device's. The example prints y with %f."""
    f = np.float32
    v = np.tile(np.arange(8, dtype=f), 2)
    x = v + v
    rstd = f(1) / np.sqrt(f(np.sum((x * x) * (f(1) / f(16)))) + f(1e-6))
    y = np.concatenate([(x * rstd) * v] * 2)
    return "".join(f"y result[{i}] is: {float(y[i]):f}\n" for i in range(32))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnAddRmsNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_add_rms_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "add_rms_norm", "examples",
                                             "test_aclnn_add_rms_norm.cpp"), [library])
    assert out == add_rms_norm_example_output()


def gemma_rms_norm_example_output() -> str:
    """The gemma_rms_norm example's inputs (x = gamma = 0..7 twice, x [2, 16], epsilon 1e-6 as
    a float) through the kernel's float32 chain (norm/rms_norm/op_kernel/rms_norm.h with
    is_gemma): rstd = 1 / sqrt(sum(x^2) * (1/16) + eps), y = (x * rstd) * (gamma + 1); the
    squares, their sum and gamma + 1 are exact here and the rest single IEEE roundings, so the
    printed values are the device's. The example prints y with %f."""
    f = np.float32
    v = np.tile(np.arange(8, dtype=f), 2)
    rstd = f(1) / np.sqrt(f(np.sum(v * v)) * (f(1) / f(16)) + f(1e-6))
    y = np.concatenate([(v * rstd) * (v + f(1))] * 2)
    return "".join(f"result[{i}] is: {float(y[i]):f}\n" for i in range(32))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnGemmaRmsNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_gemma_rms_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "gemma_rms_norm", "examples",
                                             "test_aclnn_gemma_rms_norm.cpp"), [library])
    assert out == gemma_rms_norm_example_output()


def inplace_add_rms_norm_example_output() -> str:
    """The inplace_add_rms_norm example's inputs (x1Ref = x2Ref = gamma = 0..7 twice, [2, 16],
    epsilon 1e-6 as a float) through AddRmsNorm's float32 chain
    (:func:`add_rms_norm_example_output`: the same kernel), y written into x1Ref and x1 + x2
    into x2Ref. The example prints x1Ref's 32 values, then x2Ref's, with %f."""
    f = np.float32
    v = np.tile(np.arange(8, dtype=f), 2)
    x = v + v
    rstd = f(1) / np.sqrt(f(np.sum((x * x) * (f(1) / f(16)))) + f(1e-6))
    y = np.concatenate([(x * rstd) * v] * 2)
    return "".join(f"{name} result[{i}] is: {float(val):f}\n"
                   for name, vals in (("x1Ref", y), ("x2Ref", np.concatenate([x] * 2)))
                   for i, val in enumerate(vals))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnInplaceAddRmsNorm "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_inplace_add_rms_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "inplace_add_rms_norm", "examples",
                                             "test_aclnn_inplace_add_rms_norm.cpp"), [library])
    assert out == inplace_add_rms_norm_example_output()


def rms_norm_grad_example_output() -> str:
    """The rms_norm_grad example's inputs (dy = x = 1..32 as [2, 1, 16], rstd [2] = 1, 2,
    gamma = 1..16) through the kernel's float32 chain (op_kernel/
    rms_norm_grad_split_n_high_precision.h): xr = x * rstd, dyg = dy * gamma,
    mean = sum(dyg * xr) * (1/16), dx = (dyg - xr * mean) * rstd, dgamma = sum over the rows
    of dy * xr. Every product and sum here is an integer below 2^24 (so exact whatever the
    order of the sums) and the rest one IEEE rounding each: the printed values are the
    device's. The example prints dx's 32 values, then dgamma's 16, with %f (the docs show no
    output to compare with)."""
    f = np.float32
    v = np.arange(1, 33, dtype=f).reshape(2, 16)
    g, rstd = np.arange(1, 17, dtype=f), np.array([[1], [2]], f)
    xr, dyg = v * rstd, v * g
    mean = (dyg * xr).sum(axis=1, keepdims=True, dtype=f) * (f(1) / f(16))
    dx = ((dyg - xr * mean) * rstd).reshape(-1)
    dgamma = (v * xr).sum(axis=0, dtype=f)
    return "".join(f"result[{i}] is: {float(val):f}\n" for vals in (dx, dgamma)
                   for i, val in enumerate(vals))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnRmsNormGrad example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_rms_norm_grad_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "rms_norm_grad", "examples",
                                             "test_aclnn_rms_norm_grad.cpp"), [library])
    assert out == rms_norm_grad_example_output()


def group_norm_example_output() -> str:
    """The GroupNorm example's inputs (self [2, 3, 4] = 1..24, gamma = beta = 2, group 1, eps
    1e-5, FLOAT) through the Atlas A2 kernel's float32 chain (ops-nn norm/group_norm_silu
    op_kernel, which aclnnGroupNorm runs there): per group mean = sum(x) * (1/12),
    rstd = 1 / sqrt(sum(x^2) * (1/12) - mean^2 + eps), out = x * scale + bias with
    scale = rstd * gamma, bias = -scale * mean + beta; the sums of these integers are exact in
    any order and the rest are single IEEE roundings, so the printed values are the device's
    (Atlas A2/A3). The example prints out, meanOut and rstdOut with %f."""
    f = np.float32
    x = np.arange(1, 25, dtype=f).reshape(2, 12)
    num_rec = f(1) / f(12)
    mean = np.sum(x, axis=1, dtype=f) * num_rec
    sq = np.sum(x * x, axis=1, dtype=f)
    rstd = f(1) / np.sqrt(sq * num_rec - mean * mean + f(1e-5))
    scale = rstd * f(2)
    bias = -scale * mean + f(2)
    out = (x * scale[:, None]) + bias[:, None]
    return "".join(
        [f"outResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(out.ravel())] +
        [f"meanResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(mean)] +
        [f"rstdResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(rstd)])


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnGroupNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_group_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "group_norm", "examples",
                                             "test_aclnn_GroupNorm.cpp"), [library])
    assert out == group_norm_example_output()


def group_norm_silu_example_output() -> str:
    """The GroupNormSilu examples' inputs (V1, and V2 with activateSilu true: GroupNorm's
    example's data and group, no N/C/HxW) through the Atlas A2 kernel's float32 chain:
    GroupNorm's (:func:`group_norm_example_output`), then Silu on the unrounded out,
    out / (1 + exp(-out)) (op_kernel/group_norm_silu_*.h: Muls -1, Exp, Adds 1, Div), exp
    taken correctly rounded to float32."""
    f = np.float32
    x = np.arange(1, 25, dtype=f).reshape(2, 12)
    num_rec = f(1) / f(12)
    mean = np.sum(x, axis=1, dtype=f) * num_rec
    sq = np.sum(x * x, axis=1, dtype=f)
    rstd = f(1) / np.sqrt(sq * num_rec - mean * mean + f(1e-5))
    scale = rstd * f(2)
    bias = -scale * mean + f(2)
    y = (x * scale[:, None]) + bias[:, None]
    out = y / (np.exp(-y.astype(np.float64)).astype(f) + f(1))
    return "".join(
        [f"outResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(out.ravel())] +
        [f"meanResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(mean)] +
        [f"rstdResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(rstd)])


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnGroupNormSilu examples "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
@pytest.mark.parametrize("example", ["test_aclnn_group_norm_silu.cpp",
                                     "test_aclnn_group_norm_silu_v2.cpp"])
def test_vendor_group_norm_silu_examples(library, example):
    out = build_and_run(OPS_NN, os.path.join("norm", "group_norm_silu", "examples", example),
                        [library])
    assert out == group_norm_silu_example_output()


ADD_LAYER_NORM_HEADERS = ("y", "mean", "rstd", "x")


def add_layer_norm_example_output() -> str:
    """The add_layer_norm example's inputs (x1 = rows of 1 and 2, x2 = rows of 4 and -3, as
    [1, 2, 8]; gamma 2, beta 0.1, biasOptional 0.5, epsilon float(1e-6), FLOAT) through the
    kernel's float32 chain (op_kernel/add_layer_norm_kernel.h): x = x1 + x2 (+ bias),
    mean = sum(x * (1/8)), d = x - mean, rstd = 1 / sqrt(sum(d * d * (1/8)) + eps),
    y = (d * rstd) * gamma + beta. Every row is constant, so the sums are exact (d = 0) and
    the rest single IEEE roundings: the printed values are the device's. The example prints
    two progress lines with no newline, then per call (without, then with the bias) y, mean,
    rstd and x, each after a header that ends with no newline."""
    f = np.float32
    eps = f(1e-6)
    text = "\nUse aclnnAddLayerNorm Non-biasOptional Port.\nUse aclnnAddLayerNorm biasOptional Port."
    for title, bias in (("non-biasOptional", f(0)), ("biasOptional", f(0.5))):
        x = np.repeat(np.array([1 + 4, 2 - 3], f) + bias, 8).reshape(2, 8)
        mean = (x * (f(1) / f(8))).sum(axis=1, dtype=f)
        d = x - mean[:, None]
        rstd = f(1) / np.sqrt((d * d * (f(1) / f(8))).sum(axis=1, dtype=f) + eps)
        y = (d * rstd[:, None]) * f(2) + f(0.1)
        for name, vals in zip(ADD_LAYER_NORM_HEADERS, (y, mean, rstd, x)):
            text += f"==== AddLayerNorm {title}: {name} output"
            text += "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(vals.ravel()))
    return text


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnAddLayerNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_add_layer_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "add_layer_norm", "examples",
                                             "test_aclnn_add_layer_norm.cpp"), [library])
    assert out == add_layer_norm_example_output()


# What the vendor's P2P example prints on two linked devices (its README's sample output: the
# pattern value is glibc's first rand() % 256), and on a pair without a link.
P2P_LINKED = ["[INFO]  Start to run device_P2P sample.",
              "[INFO]  Device 0 to device 1 memcpy success.",
              "[INFO]  Device 1 to host memcpy success.",
              "[INFO]  The data read from the memory is 103, verify success!",
              "[INFO]  Run the device_P2P sample successfully."]
P2P_UNLINKED = ["[INFO]  Start to run device_P2P sample.",
                "[ERROR]  The device does not support peer access feature.",
                "[INFO]  Run the device_P2P sample successfully."]


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its device P2P example "
                    "against the emulator")
@pytest.mark.parametrize("env,expected", [({"ACL_EMU_DEVICE_COUNT": "2"}, P2P_LINKED),
                                          ({"ACL_EMU_DEVICE_COUNT": "2",
                                            "ACL_EMU_NO_PEER": "0:1"}, P2P_UNLINKED)])
def test_vendor_p2p_example(env, expected):
    out = build_and_run(RUNTIME, os.path.join("example", "1_basic_features", "device",
                                              "2_device_P2P", "main.cpp"), [],
                        includes=["example"], env=env)
    assert out.splitlines() == expected, out


CALLBACK = os.path.join("example", "2_advanced_features", "callback")


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its callback examples "
                    "against the emulator")
def test_vendor_callback_hostfunc_example():
    """1_callback_hostfunc: EasyOP, then a host function, on one stream; what its README says
    a device prints (the result: EasyOP's one block incremented the 0 it was given)."""
    out = build_and_run(RUNTIME, os.path.join(CALLBACK, "1_callback_hostfunc", "main.cpp"), [],
                        includes=["example"], sources=[KERNELS], name="vendor_callback_hostfunc")
    assert out.splitlines() == [
        "[INFO]  Hostfunc callback!!!",
        "[INFO]  After assigning the task through the created stream, the current result is: 1.",
        "[INFO]  Resource cleanup completed."], out


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its callback examples "
                    "against the emulator")
def test_vendor_simple_callback_example_needs_the_compact_runtime():
    """0_simple_callback also calls aclrtSubscribeHostFunc, aclrtProcessHostFunc and
    aclrtUnSubscribeHostFunc, which only CANN's compact runtime implements (hicann/runtime
    src/acl/aclrt_c/runtime/host_func.c, library ascendcl_c) and which its own README and
    docs/zh/api_ref/24_other_APIs.md mark unsupported on every product but IPV350; it also
    launches a host function on a stream subscribed with aclrtSubscribeReport, which the full
    runtime refuses (107011, src/runtime/api/impl/api_error.cc LaunchHostFunc). acl-py
    declares none of the three (a full install's runtime, which the emulator is), so the
    example does not build: this checks it fails on exactly those names, so that declaring
    them later brings this test up for review."""
    _exe, r = compile_example(RUNTIME, os.path.join(CALLBACK, "0_simple_callback", "main.cpp"),
                              [], includes=["example", CALLBACK,
                                            os.path.join(CALLBACK, "0_simple_callback")],
                              sources=[os.path.join(CALLBACK, "0_simple_callback",
                                                    "callback_sample.cpp"),
                                       os.path.join(CALLBACK, "callback_utils.cpp"), KERNELS],
                              name="vendor_simple_callback")
    assert r.returncode != 0
    missing = set(re.findall(r"\u2018(\w+)\u2019 was not declared", r.stderr))
    missing |= set(re.findall(r"'(\w+)' was not declared", r.stderr))
    assert missing == {"aclrtSubscribeHostFunc", "aclrtProcessHostFunc",
                       "aclrtUnSubscribeHostFunc"}, r.stderr


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-math and ops-nn checkouts to read their operator headers")
def test_every_vendor_operator_header_is_understood(tmp_path):
    """acl_py.aclnn reads every operator header of the ops-math and ops-nn checkouts: each two-phase pair is found, its prototypes parse,
    every parameter type has a converter and both become cffi function pointer types."""
    from acl_py.aclnn import _convert
    from acl_py.aclnn._catalog import Catalog, function_pointer
    include = tmp_path / "include" / "aclnnop"
    include.mkdir(parents=True)
    for checkout in (OPS_MATH, OPS_NN):
        assert os.path.isdir(checkout), f"{VARIABLE}={VENDOR!r} has no {checkout}"
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


# ---- example/1_basic_features: device, context and memory (helper block: devctx) ----------

BASIC = os.path.join("example", "1_basic_features")
NEEDS_RUNTIME = pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory "
                                   "with the hicann/runtime checkout (runtime/) to build its "
                                   "basic examples against the emulator")


def basic_example(folder, env=None, libraries=(), name=None):
    """Builds and runs example/1_basic_features/<folder>/main.cpp as its CMakeLists.txt does
    (the example/ folder on the include path; its Ascend C kernels from
    tests/c/vendor_kernels.cpp); returns its stdout lines."""
    out = build_and_run(RUNTIME, os.path.join(BASIC, folder, "main.cpp"), list(libraries),
                        includes=["example"], env=env, sources=[KERNELS],
                        name=name or "vendor_" + folder.replace("/", "_"))
    return out.splitlines()


@NEEDS_RUNTIME
def test_vendor_device_normal_example():
    """device/0_device_normal: aclnnAdd on a stream (the emulator's ops-math library, as the
    ops-math examples link it), then the device reset with aclrtResetDeviceForce."""
    lines = basic_example("device/0_device_normal", libraries=["opapi_math"])
    assert lines == (["[INFO]  Start to run device_normal sample."] +
                     [f"[INFO]  result[{i}] is: {v}" for i, v in enumerate(ADD_RESULTS)] +
                     ["[INFO]  Run the device_normal sample successfully."])


@NEEDS_RUNTIME
def test_vendor_device_multi_thread_example():
    """device/1_device_multi_thread on the part and device count of its README's run
    (Ascend910_9362, two devices): what the README shows, plus the three lines it leaves out
    (utilization: idle, memory not measured; CANN's priority range; the part's vector cores),
    and the AddKernel results of the limited run (one vector core)."""
    lines = basic_example("device/1_device_multi_thread",
                          env={"ACL_EMU_SOC": "Ascend910_9362", "ACL_EMU_DEVICE_COUNT": "2"})
    assert lines == [
        "[INFO]  Start to run device_multi_thread sample.",
        "[INFO]  Current Ascend chipset platform is: Ascend910_9362.",
        "[INFO]  Get device count success. deviceCount: 2.",
        "[INFO]  Query device status success. deviceStatus: 0.",
        "[INFO]  RunMode is ACL_HOST.",
        "[INFO]  Get device utilizationRate success. cubeUtilization 0, vectorUtilization 0, "
        "aicpuUtilization 0,memoryUtilization -1.",
        "[INFO]  Get stream priorityRange success. leastPriority 7, greatestPriority 0.",
        "[INFO]  Get device info success. vectorCoreNum 40.",
        "[INFO]  Get device resLimit success. VECTOR_CORE 1.",
        "[INFO]  The results (first 10 elements) of the kernel function:",
        *(f"[INFO]  Result: hostDst[{i}]: {2 * i:f} Expected value: {2 * i:f}"
          for i in range(10)),
        "[INFO]  Run the device_multi_thread sample successfully."]


@NEEDS_RUNTIME
def test_vendor_context_query_example():
    """context/0_context_query: a created context made current, its default stream (a handle),
    and the calling thread's core limits: the part's totals (Ascend910B2: 24 cube (AI) cores,
    48 vector cores), none being set."""
    lines = basic_example("context/0_context_query")
    assert len(lines) == 5, lines
    assert lines[0] == "[INFO]  Get current context successfully"
    assert re.fullmatch(r"\[INFO\]  Get current default stream successfully, "
                        r"stream=0x[0-9a-f]+", lines[1]), lines[1]
    assert lines[2:] == ["[INFO]  Get current thread cube core limit: 24",
                         "[INFO]  Get current thread vector core limit: 48",
                         "[INFO]  [SUCCESS] Context query sample completed successfully"]


ADDRESS = re.compile(r"0x[0-9a-f]+")
MEMORY_EXAMPLES = {
    # folder: (the host's lines with addresses as 0x..., the kernels' printf lines in order)
    "memory/0_h2h_memory_copy": (
        ["Allocate memory on the host memory 0x... successfully",
         "Allocate memory on the host memory 0x... successfully",
         "Write the data 123 to the virtual address 0x...", "Source data: 123",
         "Copy memory from memory 0x... to memory 0x...", "Destination data: 123"], []),
    "memory/1_h2d_sync_memory_copy": (
        ["Allocate memory on the host memory 0x... successfully",
         "Allocate memory on the device memory 0x... successfully",
         "Write the data 123 to the virtual memory 0x...", "Source data: 123",
         "Copy memory from memory 0x... to memory 0x..."], ["Destination data: 123"]),
    "memory/3_d2h_sync_memory_copy": (
        ["Allocate memory on the host memory 0x... successfully",
         "Allocate memory on the device memory 0x... successfully",
         "Write the data 123 to the virtual memory 0x...",
         "Copy memory from memory 0x... to memory 0x...", "Destination data: 123"],
        ["Source data: 123"]),
    "memory/5_d2d_sync_memory_copy": (
        ["Allocate memory on the device memory 0x... successfully",
         "Allocate memory on the device memory 0x... successfully",
         "Write the data 123 to the virtual memory 0x...",
         "Copy memory from memory 0x... to memory 0x..."],
        ["Source data: 123", "Destination data: 123"]),
}
# The asynchronous copies print what their synchronous twins print.
MEMORY_EXAMPLES["memory/2_h2d_async_memory_copy"] = MEMORY_EXAMPLES["memory/1_h2d_sync_memory_copy"]
MEMORY_EXAMPLES["memory/4_d2h_async_memory_copy"] = MEMORY_EXAMPLES["memory/3_d2h_sync_memory_copy"]
MEMORY_EXAMPLES["memory/6_d2d_async_memory_copy"] = MEMORY_EXAMPLES["memory/5_d2d_sync_memory_copy"]


@NEEDS_RUNTIME
@pytest.mark.parametrize("folder", sorted(MEMORY_EXAMPLES))
def test_vendor_memory_copy_example(folder):
    """memory/0..6: the lines of each README, addresses aside. The kernels' AscendC::printf
    lines come from the device's printf thread, so where they fall among the host's lines is
    not fixed (each README shows one run); they are checked in their own order, and the
    host's lines in theirs."""
    lines = basic_example(folder)
    host = [ADDRESS.sub("0x...", line[len("[INFO]  "):]) for line in lines
            if line.startswith("[INFO]  ")]
    kernel = [line for line in lines if not line.startswith("[")]
    want_host, want_kernel = MEMORY_EXAMPLES[folder]
    if folder == "memory/5_d2d_sync_memory_copy" and kernel[1:] == ["Destination data: 0"]:
        # The kernel writing the source runs on the example's stream, and aclrtMemcpy copies
        # at once, with no stream synchronization (docs/zh/api_ref/11-03_memory_copy_and_set.md;
        # the comment in 3_d2h_sync_memory_copy says the same race): the README shows a run
        # where the kernel finished first; here the copy may come first and carry the fresh
        # destination's zeros (docs/emulator.md, "Device information").
        kernel[1] = "Destination data: 123"
    assert (host, kernel) == (want_host, want_kernel), lines
    assert len(lines) == len(host) + len(kernel), lines

# ---- the quick-start, error, version, event-timestamp and exception examples ----------------

QUICKSTART = os.path.join("example", "0_quickstart")


def readme_sample_output(example_dir):
    """The lines of the "Sample Output" block of the example's README_en.md, each as a regular
    expression: the README's "..." stands for the values a device prints (addresses, sizes,
    times, ids)."""
    path = os.path.join(RUNTIME, example_dir, "README_en.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"## Sample Output\s*```text\n(.*?)```", text, re.S)
    assert block, f"{path} has no Sample Output block"
    return [re.compile(".+".join(re.escape(part) for part in line.split("...")) + r"\Z")
            for line in block.group(1).splitlines()]


def assert_prints_readme(out, patterns):
    """Every README line is printed, in the README's order (the README leaves some of the
    program's lines out, so the others may come between)."""
    lines = out.splitlines()
    at = 0
    for pattern in patterns:
        while at < len(lines) and not pattern.match(lines[at]):
            at += 1
        assert at < len(lines), f"no line matching {pattern.pattern!r} in order in:\n{out}"
        at += 1


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its quick-start examples "
                    "against the emulator")
def test_vendor_hello_cann_example():
    """0_hello_cann: aclnnAdd through an aclDataBuffer-described output, every line of its
    README's sample output, with the sums it prints."""
    example = os.path.join(QUICKSTART, "0_hello_cann")
    out = build_and_run(RUNTIME, os.path.join(example, "main.cpp"), ["opapi"],
                        includes=["example"], name="vendor_hello_cann")
    assert_prints_readme(out, readme_sample_output(example))
    assert out.rstrip().endswith("Sample run successfully!"), out


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its quick-start examples "
                    "against the emulator")
def test_vendor_system_info_example():
    """2_system_info, run as set_env.sh sets an install up (ASCEND_HOME_PATH at the install,
    here the prefix): its README's lines with the prefix's runtime version (9.1.0; the README
    shows an 8.x placeholder) and number, the float16 round trip and the element sizes."""
    example = os.path.join(QUICKSTART, "2_system_info")
    prefix = str(_loader.emulator_prefix().resolve())
    out = build_and_run(RUNTIME, os.path.join(example, "main.cpp"), [], includes=["example"],
                        env={"ASCEND_HOME_PATH": prefix}, name="vendor_system_info")
    assert out.splitlines() == [
        "[INFO]  ACL init successfully",
        "[INFO]  CANN package [runtime] version string: 9.1.0",
        "[INFO]  CANN package [runtime] version number: 90100000",
        "[INFO]  Current run mode: ACL_HOST",
        "[INFO]  Float conversion: 1.625000 -> 0x3e80 -> 1.625000",
        "[INFO]  Data type size: ACL_FLOAT=4, ACL_FLOAT16=2, ACL_INT64=8",
        "[INFO]  ACL finalize successfully"], out
    assert_prints_readme(out, [p for p in readme_sample_output(example)
                               if "version" not in p.pattern])


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its quick-start examples "
                    "against the emulator")
def test_vendor_error_handling_example():
    """1_error_handling: aclrtGetRunMode(nullptr) is refused by CANN's ACL layer (100000)
    before its runtime, so the thread's last error stays 0 (peek and get); the message is read
    once (then NULL); the device has no fault. The README's lines with those values (its
    "[ERROR] " has one space where the example's ERROR_LOG prints two)."""
    example = os.path.join(QUICKSTART, "1_error_handling")
    out = build_and_run(RUNTIME, os.path.join(example, "main.cpp"), [], includes=["example"],
                        name="vendor_error_handling")
    lines = out.splitlines()
    assert lines[:3] == ["[INFO]  ACL init and set device successfully",
                         "[INFO]  Current run mode: ACL_HOST",
                         "[INFO]  Triggering an expected invalid-parameter error with "
                         "aclrtGetRunMode(nullptr)"], out
    assert re.fullmatch(r"\[ERROR\]  Diagnostics: ret=100000, peekErr=0, lastErr=0, "
                        r"recentErrMsg=aclrtGetRunMode: .*runMode.*", lines[3]), out
    assert lines[4:] == [
        "[INFO]  Verbose error info: errorType=0, tryRepair=0, hasDetail=0",
        "[INFO]  After diagnostics are consumed once: peekErr=0, lastErr=0, recentErrMsg=<null>",
        "[INFO]  ACL finalize successfully"], out
    assert_prints_readme(out.replace("[ERROR]  ", "[ERROR] "), readme_sample_output(example))



# ---- example/1_basic_features: stream/, event/0_event_status, memory/9_multistream_sync_memory
# (their kernels are tests/c/vendor_kernels.cpp's stand-ins; LongOP takes 2 s there; BASIC and
# NEEDS_RUNTIME as above).


def run_basic(relpath, name, sources=(KERNELS,), includes=("example",), cwd=None):
    return build_and_run(RUNTIME, os.path.join(BASIC, relpath, "main.cpp"), [],
                         includes=list(includes), sources=list(sources), name=name,
                         cwd=cwd).splitlines()


@NEEDS_RUNTIME
def test_vendor_simple_stream_example():
    """stream/0_simple_stream: EasyOP on the default stream, on a created stream, then 3000
    times in a row; its README's output."""
    assert run_basic(os.path.join("stream", "0_simple_stream"), "vendor_simple_stream") == [
        "[INFO]  Use default stream assigning task.",
        "[INFO]  Applied resource successfully, begin assigning task.",
        "[INFO]  After assigning the task through the default stream, the current result is: 1.",
        "[INFO]  Use created stream assigning task.",
        "[INFO]  After assigning the task through the created stream, the current result is: 2.",
        "[INFO]  Begin 3000 task.",
        "[INFO]  After synchronize, stream status is: 0.",
        "[INFO]  After loop, the current result is: 3002.",
        "[INFO]  Resource cleanup completed."]


@NEEDS_RUNTIME
def test_vendor_event_status_example():
    """event/0_event_status: an event recorded after LongOP is not complete until the stream
    is synchronized; its README's output."""
    assert run_basic(os.path.join("event", "0_event_status"), "vendor_event_status") == [
        "[INFO]  After create event, current event status is 0.",
        "[INFO]  Applied resource successfully, begin assigning task.",
        "[INFO]  Begin a long task.",
        "[INFO]  0 is incompleted, 1 is completed.",
        "[INFO]  After record but before synchronize, current event status is 0.",
        "[INFO]  After synchronize, current event status is 1.",
        "[INFO]  The answer is 1.",
        "[INFO]  Resource cleanup completed."]


def _multi_stream_part(method, wait_line, timeout_line):
    head = [f"[INFO]  Use {method} synchronize.",
            "[INFO]  Applied resource successfully, begin assigning task.",
            "[INFO]  Begin a long task, num += 1.",
            f"[INFO]  {wait_line}",
            "[INFO]  Begin a short task, num *= 2.",
            "[INFO]  The answer is 2."]
    if timeout_line:
        head += ["[INFO]  Simulate timeout, wait 1000ms, the task will fail.", timeout_line]
    return head + ["[INFO]  Resource cleanup completed."]


@NEEDS_RUNTIME
def test_vendor_multi_stream_example():
    """stream/2_multi_stream: stream 2's ShortOP waits for stream 1's LongOP through a stream
    synchronize, an event (aclrtStreamWaitEvent, aclrtResetEvent) and a notify
    (aclrtRecordNotify, aclrtWaitAndResetNotify), so 0 + 1 then * 2 is 2 each time; a second
    LongOP outlasts the 1000 ms synchronizes (507046, 507047). Its README elides the event part
    ("..."): that part prints what the other two do, with its own names and codes."""
    assert run_basic(os.path.join("stream", "2_multi_stream"), "vendor_multi_stream") == (
        _multi_stream_part("stream", "Stream synchronize.",
                           "[ERROR]  Operation failed: aclrtSynchronizeStreamWithTimeout(stream1, "
                           "kWaitTimeMs) returned error code 507046")
        + _multi_stream_part("event", "Event synchronize.",
                             "[ERROR]  Operation failed: aclrtSynchronizeEventWithTimeout(event, "
                             "kWaitTimeMs) returned error code 507047")
        + _multi_stream_part("notify", "Stream synchronize.", None))


@NEEDS_RUNTIME
def test_vendor_stream_config_query_example():
    """stream/3_stream_config_query looks its configuration calls up with dlsym:
    aclrtCreateStreamConfigHandle, aclrtDestroyStreamConfigHandle, aclrtSetStreamConfigOpt and
    aclrtCreateStreamV2 exist only in CANN's compact runtime (hicann/runtime
    src/acl/aclrt_c/runtime/stream.c; their API reference lists IPV350 only), so a full
    install, which the emulator is, prints the skip its README documents for a runtime without
    them, after one warning per missing name (the README shows the first)."""
    assert run_basic(os.path.join("stream", "3_stream_config_query"), "vendor_stream_config",
                     sources=()) == [
        *(f"[WARN]  Symbol {name} is not exported by the current Runtime library."
          for name in ("aclrtCreateStreamConfigHandle", "aclrtDestroyStreamConfigHandle",
                       "aclrtSetStreamConfigOpt", "aclrtCreateStreamV2")),
        "[INFO]  [SKIP] Stream config query sample skipped because the current Runtime library "
        "does not export all stream config APIs."]


@NEEDS_RUNTIME
def test_vendor_multistream_sync_memory_example(tmp_path):
    """memory/9_multistream_sync_memory: stream A's aclrtValueWait (EQ 100) holds it until
    stream B's aclrtValueWrite of 100, written a second after the wait was queued; the waiting
    thread reads the flag file the writing thread wrote meanwhile. The two threads print
    concurrently: the lines are those of its README (plus file_ops.cpp's reading lines, which
    the README leaves out), in an order the example makes certain."""
    (tmp_path / "file").mkdir()  # run.sh makes it: the flag file is file/flag.txt
    out = run_basic(os.path.join("memory", "9_multistream_sync_memory"), "vendor_value_wait",
                    sources=[os.path.join(BASIC, "memory", "9_multistream_sync_memory",
                                          "file_ops.cpp")],
                    includes=["example", os.path.join(BASIC, "memory")], cwd=tmp_path)
    addresses = set(re.findall(r"virtual memory = (0x[0-9a-f]+)", "\n".join(out)))
    assert len(addresses) == 1, out
    text = [re.sub(r"0x[0-9a-f]+", "0x...", line) for line in out]
    assert sorted(text) == sorted([
        "[INFO]  Allocate memory on the device successfully",
        "[INFO]  Create Stream A successfully",
        "[INFO]  Create Stream B successfully",
        "[INFO]  Stream A: wait for data at virtual memory = 0x... to meet the condition",
        "[INFO]  Start writing to file/flag.txt",
        "[INFO]  Flag value after the writing thread starts: 123",
        "[INFO]  Stream B: write data at virtual memory = 0x...",
        "[INFO]  Stream B: the data in the specified memory has met the condition, all tasks "
        "are complete",
        "[INFO]  Stream A: the data in the specified memory has met the condition, all tasks "
        "are complete",
        "[INFO]  Start reading from file/flag.txt",
        "[INFO]  Read data successfully",
        "[INFO]  Flag value read by the waiting thread: 123"]), out
    at = {line: i for i, line in enumerate(text)}
    assert text[:4] == ["[INFO]  Allocate memory on the device successfully",
                        "[INFO]  Create Stream A successfully",
                        "[INFO]  Create Stream B successfully",
                        "[INFO]  Stream A: wait for data at virtual memory = 0x... to meet the "
                        "condition"], out
    stream_a_done = at["[INFO]  Stream A: the data in the specified memory has met the "
                       "condition, all tasks are complete"]
    assert at["[INFO]  Stream B: write data at virtual memory = 0x..."] < stream_a_done
    assert stream_a_done < at["[INFO]  Flag value read by the waiting thread: 123"]


# What stream/1_stream_with_failure_mode's README shows, with what it leaves out: the program's
# "Launching a long task ..." lines, its aclrtFree and aclrtDestroyStreamForce results, and the
# stream state callback's lines (see the test).
FAILURE_MODE = [
    "[INFO]  Assigning task without failure mode.",
    "[ERROR]  Operation failed: aclrtSynchronizeStream(stream) returned error code 507035",
    "[INFO]  Without failure mode, the result is 2.",
    "[INFO]  Assigning task with failure mode.",
    "[ERROR]  Operation failed: aclrtSynchronizeStream(stream) returned error code 507035",
    "[INFO]  After set failure mode, the current result is: 1.",
    "[INFO]  Launching a long task on the device-use-only stream before aclrtStreamStop.",
    "[INFO]  aclrtStreamStop returned 0.",
    "[INFO]  aclrtSynchronizeStream(after stop) returned 0.",
    "[INFO]  aclrtFree(stopScratch) returned 0.",
    "[INFO]  aclrtDestroyStreamForce(stopStream) returned 0.",
    "[INFO]  Launching a long task on the regular stream before aclrtStreamAbort.",
    "[INFO]  aclrtStreamAbort returned 0.",
    "[INFO]  aclrtSynchronizeStream(after abort) returned 507035 after stream abort, which is "
    "expected.",
    "[INFO]  aclrtFree(abortScratch) returned 0.",
    "[INFO]  aclrtDestroyStreamForce(abortStream) returned 0.",
    "[INFO]  Resource cleanup completed.",
    "[INFO]  Run the stream_with_failure_mode sample successfully."]


@NEEDS_RUNTIME
def test_vendor_stream_failure_mode_example():
    """stream/1_stream_with_failure_mode: ErrorOP between two EasyOPs fails the stream with
    507035 (continue: both EasyOPs ran, 2; stop on failure: the second did not, 1); a
    device-use-only stream (aclrtCreateStreamWithConfig) takes no task from the host
    (LongOP's launch is refused), aclrtStreamStop succeeds and its synchronize returns at once
    with 0; aclrtStreamAbort kills the running LongOP, whose stream then reports 507035.

    Where the emulator's output differs from the README's: the README leaves out lines the
    program prints (above), and shows 507000 (a WARN line) for the synchronize after the stop,
    where CANN's runtime returns 0 for any stream of that flag (hicann/runtime src/runtime/api/
    impl/api_error.cc StreamSynchronize, and aclrtSynchronizeStream's API reference). The
    stream state callback prints a line after each stream is created and before it is
    destroyed: the device's default stream, created in aclrtSetDevice (the callback is
    registered before it) and not destroyed while it is registered (it is removed before the
    reset), then the three created streams. CANN's aclrtCreateContext would add a line for
    the context's own default stream (the emulator's contexts share the device's)."""
    out = run_basic(os.path.join("stream", "1_stream_with_failure_mode"), "vendor_failure_mode")
    callback = re.compile(r"\[INFO\]  Stream state callback from stream_failure_mode_sample: "
                          r"stream=(0x[0-9a-f]+) state=([12])$")
    states = [(m.group(1), m.group(2)) for m in map(callback.match, out) if m]
    assert [line for line in out if not callback.match(line)] == FAILURE_MODE, out
    created = [s for s, state in states if state == "1"]
    destroyed = [s for s, state in states if state == "2"]
    assert len(created) == 4 and sorted(created[1:]) == sorted(destroyed), out
    # each stream's creation is reported before its first use, its destruction before its
    # destroy call's result
    assert out.index(f"[INFO]  Stream state callback from stream_failure_mode_sample: "
                     f"stream={created[1]} state=1") < out.index(FAILURE_MODE[0]), out
    for stream, name in zip(created[2:], ("stopStream", "abortStream")):
        assert out.index(f"[INFO]  Stream state callback from stream_failure_mode_sample: "
                         f"stream={stream} state=2") == \
            out.index(f"[INFO]  aclrtDestroyStreamForce({name}) returned 0.") - 1, out


@NEEDS_RUNTIME
def test_vendor_event_timestamp_example():
    """1_event_timestamp: ShortOP doubles 0, LongOP adds 1; each task's events give
    timestamps (microseconds) whose difference is the elapsed time it prints. Its README
    says "Begin a short task." twice; the program prints "Begin a long task." the second
    time."""
    lines = run_basic(os.path.join("event", "1_event_timestamp"), "vendor_event_timestamp")
    out = "\n".join(lines)
    number = r"(\d+)"
    expected = [r"Begin a short task\.", r"After completing the short task, the answer is 0\.",
                r"After synchronize, check the time\.", rf"Start event timestamp: {number}\.",
                rf"End event timestamp: {number}\.",
                r"The short task consume time (\d+\.\d{6}) ms\.",
                r"Begin a long task\.", r"After completing the long task, the answer is 1\.",
                r"After synchronize, check the time\.", rf"Start event timestamp: {number}\.",
                rf"End event timestamp: {number}\.",
                r"The short task consume time (\d+\.\d{6}) ms\.",
                r"Resource cleanup completed\."]
    assert len(lines) == len(expected), out
    values = []
    for line, pattern in zip(lines, expected):
        m = re.fullmatch(r"\[INFO\]  " + pattern, line)
        assert m, (pattern, line)
        values += m.groups()
    s1, e1, ms1, s2, e2, ms2 = values
    for start, end, ms in ((s1, e1, ms1), (s2, e2, ms2)):
        assert int(start) <= int(end)
        # the timestamps (whole microseconds) and the elapsed time measure one interval
        assert abs((int(end) - int(start)) - float(ms) * 1000) <= 2, out
    assert int(e1) <= int(s2)


EXCEPTION_OCCURRED = "[INFO]  Exception occurred, callback function."
EXCEPTION_CALLBACK = [
    re.escape(EXCEPTION_OCCURRED),
    r"\[INFO\]  The error task id is (\d+)\.",
    r"\[INFO\]  The error stream id is (\d+)\.",
    r"\[INFO\]  The error thread id is (\d+)\.",
    r"\[INFO\]  The error device id is 0\.",
    r"\[INFO\]  The error code id is 507035\.",
    # no kernel arguments or function on an emulated task: CANN's answers for a task that is
    # not a kernel (0xFFFFFFFF, printed as -1; 107000)
    r"\[INFO\]  Exception args query ret=-1, devArgsPtr=\(nil\), devArgsLen=0",
    r"\[INFO\]  Exception func handle query ret=107000, funcHandle=\(nil\)"]


@NEEDS_RUNTIME
def test_vendor_callback_exception_example():
    """2_callback_exception: EasyOP, then ErrorOP (a trap: 507035, as the vendor's stream
    example reports it) on a stream in ACL_STOP_ON_FAILURE mode. The exception callback runs
    once, with the failed task's ids, before the synchronize reports 507035; the callback
    queued after the failure never runs (the stream stopped), and unsubscribing still works.
    The callback runs on the runtime's thread, so its lines may come before or after the main
    thread's "The last task id" line; everything else is in the README's order."""
    example = os.path.join(CALLBACK, "2_callback_exception")
    out = build_and_run(RUNTIME, os.path.join(example, "main.cpp"), [],
                        includes=["example", CALLBACK, example],
                        sources=[os.path.join(example, "exception_callback_sample.cpp"),
                                 os.path.join(CALLBACK, "callback_utils.cpp"), KERNELS],
                        name="vendor_callback_exception")
    lines = out.splitlines()
    at = lines.index(EXCEPTION_OCCURRED)
    n = len(EXCEPTION_CALLBACK)
    block, rest = lines[at:at + n], lines[:at] + lines[at + n:]
    ids = []
    for line, pattern in zip(block, EXCEPTION_CALLBACK):
        m = re.fullmatch(pattern, line)
        assert m, (pattern, line)
        ids += m.groups()
    task_id, _stream_id, _thread_id = ids
    assert rest[0] == ("[INFO]  Begin an easy task and an error task. The error task will "
                       "trigger the exception callback.")
    assert rest[1] == f"[INFO]  The last task id is: {task_id}.", out  # ErrorOP's, the last
    sync = rest.index("[ERROR]  aclrtSynchronizeStream(stream_) returned error code 507035")
    assert at < lines.index(rest[sync]), out  # the callback ran before the report
    assert rest[sync + 1:] == [
        "[INFO]  Post synchronize diagnostics verbose error info: errorType=0, tryRepair=0, "
        "hasDetail=0",
        rest[sync + 2],  # the diagnostics line, checked below
        "[INFO]  After assigning the task, the current num is: 1.",
        "[INFO]  Thread exit",
        "[INFO]  Run the callback_exception sample successfully."], out
    assert re.fullmatch(r"\[ERROR\]  Post synchronize diagnostics runtime diagnostics: "
                        r"peekErr=507035, lastErr=507035, recentErrMsg=aclrtSynchronizeStream: "
                        r".*ErrorOP.*", rest[sync + 2]), out
    assert "After error still callback" not in out
    readme = readme_sample_output(example)
    assert_prints_readme("\n".join(rest[:2] + block + rest[2:]), readme)


# ---- example/3_memory_advanced/host_register/0_simple_zero_copy ----------------------------

ZERO_COPY = os.path.join("example", "3_memory_advanced", "host_register", "0_simple_zero_copy")
BINARY_KERNELS = os.path.join(HERE, "c", "vendor_binary_kernels.cpp")
KERNEL_API = os.path.join(HERE, "c", "vendor_kernel_api.h")


@NEEDS_RUNTIME
def test_vendor_simple_zero_copy_example(tmp_path):
    """host_register/0_simple_zero_copy: three aclrtMallocHost buffers registered with
    aclrtHostRegisterV2(ACL_HOST_REG_MAPPED), their device addresses from
    aclrtHostGetDevicePointer given to the add_custom kernel, the result read on the host, then
    aclrtHostUnregister; its README's output. The registration calls are the emulator's; the
    kernel binary calls it loads and launches add_custom with (aclrtBinaryLoadFromFile ...
    aclrtLaunchKernelWithConfig), which the emulator does not provide, and the kernel file are
    tests/c/vendor_binary_kernels.cpp's stand-ins, declared by tests/c/vendor_kernel_api.h,
    force-included: the example's sources compile as they are."""
    kernel = tmp_path / "out" / "fatbin" / "simple_zero_copy_kernel"
    kernel.mkdir(parents=True)
    (kernel / "simple_zero_copy_kernel.o").write_bytes(b"stand-in for the Ascend C kernel file")
    out = build_and_run(RUNTIME, os.path.join(ZERO_COPY, "main.cpp"), [],
                        includes=["example", ZERO_COPY],
                        sources=[os.path.join(ZERO_COPY, "simple_zero_copy.cpp"), BINARY_KERNELS],
                        name="vendor_simple_zero_copy", cwd=tmp_path,
                        flags=["-std=c++17", "-Wall", "-Werror", "-include", KERNEL_API,
                               f"-I{os.path.dirname(KERNEL_API)}"])
    assert out.splitlines() == [
        "[INFO]  Start to run simple_zero_copy sample.",
        "[INFO]  Registered three Host buffers and obtained their Device mapping addresses.",
        "[INFO]  Verified 16384 FP16 additions through mapped Host memory.",
        "[INFO]  Run the simple_zero_copy sample successfully."]


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/runtime checkout (runtime/) to build its quick-start examples "
                    "against the emulator")
def test_vendor_runtime_compatibility_example():
    """3_cross_version/0_runtime_compatibility, run as set_env.sh sets an install up: the
    runtime version, the CANN attributes, aclrtCheckArchCompatibility of the device's own part
    (1) and the task-update capability; its README's lines with the emulated part's name
    (Ascend910B2; the README's run was on an Ascend910B3)."""
    example = os.path.join(QUICKSTART, "3_cross_version", "0_runtime_compatibility")
    prefix = str(_loader.emulator_prefix().resolve())
    out = build_and_run(RUNTIME, os.path.join(example, "main.cpp"), [], includes=["example"],
                        env={"ASCEND_HOME_PATH": prefix}, name="vendor_runtime_compatibility")
    assert out.splitlines() == [
        "[INFO]  CANN package [runtime] version string: 9.1.0",
        "[INFO]  CANN package [runtime] version number: 90100000",
        "[INFO]  CANN attribute count: 3",
        "[INFO]  CANN attribute ACL_CANN_ATTR_INF_NAN support value: 1",
        "[INFO]  CANN attribute ACL_CANN_ATTR_BF16 support value: 1",
        "[INFO]  CANN attribute ACL_CANN_ATTR_JIT_COMPILE support value: 1",
        "[INFO]  Architecture compatibility for Ascend910B2: 1",
        "[INFO]  Device capability ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV: 1",
        "[INFO]  [SUCCESS] Runtime compatibility sample completed successfully"], out
    assert_prints_readme(out.replace("Ascend910B2", "Ascend910B3"),
                         [p for p in readme_sample_output(example)
                          if not p.pattern.startswith(r"\[SUCCESS\]")])


@NEEDS_RUNTIME
def test_vendor_launch_kernel_with_reslimit_example():
    """2_advanced_features/kernel/1_launch_kernel_with_reslimit: the process's cube core limit
    set to 8 and read back, then the print kernel launched on that many blocks (its
    AscendC::printf lines from tests/c/vendor_kernels.cpp's stand-in): its README's lines."""
    example = os.path.join("example", "2_advanced_features", "kernel",
                           "1_launch_kernel_with_reslimit")
    out = build_and_run(RUNTIME, os.path.join(example, "main.cpp"), [], includes=["example"],
                        sources=[KERNELS], name="vendor_launch_kernel_with_reslimit")
    assert out.splitlines() == [
        "[INFO]  ACL initialized.", "[INFO]  Device 0 selected.", "[INFO]  Stream created.",
        "[INFO]  Device resource limit type 0 set to 8.",
        "[INFO]  Current device resource limit type 0 is 8.", *["Hello World"] * 8,
        "[INFO]  Run the launch_kernel_with_reslimit sample successfully."], out
    assert_prints_readme(out, readme_sample_output(example)[3:-1])  # run.sh's lines aside


# ---- example/2_advanced_features/built_in_task: aclrtReduceAsync, aclrtRandomNumAsync -------

BUILT_IN = os.path.join("example", "2_advanced_features", "built_in_task")


@NEEDS_RUNTIME
@pytest.mark.parametrize("part", ["Ascend910B2", "Ascend910A"])
def test_vendor_reduce_task_example(part):
    """0_reduce_task: a float32 sum of 1..4 into 1..4 on a stream, the lines its source and
    README expect (2, 4, 6, 8), on a part of its README's list and on the Atlas training
    series (float32 sums are the one reduce it has)."""
    out = build_and_run(RUNTIME, os.path.join(BUILT_IN, "0_reduce_task", "main.cpp"), [],
                        includes=["example"], env={"ACL_EMU_SOC": part},
                        name="vendor_reduce_task_" + part)
    assert out.splitlines() == [f"Reduce SUM result[{i}] = {2 * (i + 1)}.000000"
                                for i in range(4)] + ["Sample Run Successfully."]


@NEEDS_RUNTIME
def test_vendor_random_num_task_example():
    """1_random_num_task on Atlas A2 (its README's parts), unchanged (its uniform tasks pass
    structs it leaves partly uninitialized, as the runtime allows): the five headings and
    five numbers each, of the distribution asked (the values are the emulator's, not a
    device's: its README shows none)."""
    import ml_dtypes
    out = build_and_run(RUNTIME, os.path.join(BUILT_IN, "1_random_num_task", "main.cpp"), [],
                        includes=["example"], name="vendor_random_num_task")
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("Gen ")]
    assert [lines[i] for i in heads] == [
        "Gen normal distribution random num, data type: float ",
        "Gen truncated normal distribution random num, data type: BF16 ",
        "Gen uniform distribution random num, data type: FP16 ",
        "Gen uniform distribution random num, data type: INT32 ",
        "Gen dropout bitmask, output data type: UINT8 "], out
    assert lines[-1] == "Sample Run Successfully."

    def values(k):
        rows = lines[heads[k] + 1:heads[k] + 6]
        assert [r.split(" = ")[0] for r in rows] == [f"Random result[{i}]" for i in range(5)]
        return [r.split(" = ")[1] for r in rows]
    normal = [float(v) for v in values(0)]
    assert len(set(normal)) == 5 and all(-10 < v < 16 for v in normal)   # mean 3, stddev 2
    bf16 = np.array([int(v, 16) for v in values(1)], np.uint16).view(ml_dtypes.bfloat16)
    assert all(-3.0 <= float(v) <= 5.0 for v in bf16)   # mean 1, stddev 2, within 2 stddevs
    fp16 = np.array([int(v, 16) for v in values(2)], np.uint16).view(np.float16)
    assert all(1.0 <= float(v) <= 2.0 for v in fp16)
    assert all(1 <= int(v) <= 100 for v in values(3))
    assert all(0 <= int(v) <= 255 for v in values(4))


# ---- the Python ports of the operator examples (samples/) ----------------------------------

def deep_norm_example_output() -> str:
    """The deep_norm example's inputs (x = 1..12 and gx as [3, 1, 4], beta = gamma =
    [0, 1, 2, 3], alpha float(0.3), epsilon float(1e-6), FLOAT) through the kernel's float32
    chain (op_kernel/deep_norm.cpp): h = x * alpha (rounded) + gx, mean = sum(h) * (1/4),
    d = h - mean, rstd = 1 / sqrt(sum(d * d) * (1/4) + eps), y = (d * rstd) * gamma + beta,
    the sums of four terms in the emulator's order (tests/test_emulator_add_layer_norm.py
    lane_sum; the device's order may differ in a last bit, which six printed decimals do not
    show here). On an Atlas A2/A3 or 950 part: the device writes all three (an Atlas inference
    part would leave them as the example's host data: rows of 16 bytes). The example prints a
    progress line, then mean, rstd and y, each after a header that ends with no newline."""
    from test_emulator_add_layer_norm import lane_sum
    f = np.float32
    x = np.arange(1, 13, dtype=f).reshape(3, 4)
    gx = np.array([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8], f).reshape(3, 4)
    p = np.arange(4, dtype=f)
    h = x * f(0.3) + gx
    avg = f(1.0 / 4)
    mean = lane_sum(h) * avg
    d = h - mean[:, None]
    rstd = f(1) / np.sqrt(lane_sum(d * d) * avg + f(1e-6))
    y = (d * rstd[:, None]) * p + p
    text = "\nUse aclnnDeepNorm Port."
    for vals in (mean, rstd, y):
        text += "== pdx output"
        text += "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(vals.ravel()))
    return text


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnDeepNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_deep_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "deep_norm", "examples",
                                             "test_aclnn_deep_norm.cpp"), [library])
    assert out == deep_norm_example_output()


def add_layer_norm_grad_example_output() -> str:
    """The add_layer_norm_grad example's inputs: dy 1..12 as floats, and x1, x2, rstd, mean,
    gamma and dsumOptional int32 vectors copied into FLOAT tensors (their bit patterns read as
    float32: subnormals, or 0), shapes [3, 1, 4] / [3, 1, 1] / [4], through the kernel's
    float32 chain (op_kernel/add_layer_norm_grad_cut_n.h MainCompute): x = x1 + x2,
    g = dy * gamma, xc = x + (-mean), pdVar = sum(g * (xc * r^3)) * -(1/4),
    pdMean = sum(-(g * r)) * (1/4), dx = (xc * pdVar + g * r) + pdMean + dsum,
    dgamma = sum over rows of dy * (xc * r), dbeta = sum over rows of dy. Every product with
    a subnormal is 0 or subnormal, so dx and dgamma print as 0.000000 and dbeta holds the
    column sums of dy, exact: the printed values are the device's."""
    f = np.float32
    bits = lambda v: np.array(v, np.int32).view(f)  # noqa: E731
    dy = np.arange(1, 13, dtype=f).reshape(3, 4)
    x = bits(range(1, 13)).reshape(3, 4) + bits([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8]
                                                 ).reshape(3, 4)
    r, mean = bits([0, 1, 2]).reshape(3, 1), bits([0, 1, 2]).reshape(3, 1)
    gamma, dsum = bits([0, 1, 2, 3]), bits(range(1, 13)).reshape(3, 4)
    ras = f(1) / f(4)
    g = dy * gamma
    xc = x + mean * f(-1)
    pd_var = (g * (xc * (r * r * r))).sum(axis=1, dtype=f, keepdims=True) * -ras
    pd_mean = ((g * r) * f(-1)).sum(axis=1, dtype=f, keepdims=True) * ras
    dx = ((xc * pd_var + g * r) + pd_mean) + dsum
    dgamma = (dy * (xc * r)).sum(axis=0, dtype=f)
    dbeta = dy.sum(axis=0, dtype=f)
    text = "\nUse aclnnAddLayerNormGrad Port."
    for name, vals in (("pdx", dx), ("pdgamma", dgamma), ("pdbeta", dbeta)):
        text += f"== {name} output"
        text += "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(vals.ravel()))
    return text


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnAddLayerNormGrad "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_add_layer_norm_grad_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "add_layer_norm_grad", "examples",
                                             "test_aclnn_add_layer_norm_grad.cpp"), [library])
    assert out == add_layer_norm_grad_example_output()


def batch_norm_example_output() -> str:
    """The batch_norm_v3 example's inputs (self [1, 2, 4] = 0..7, weight 1, bias 0, runningMean
    0, runningVar 1, training, momentum 0.1, eps 1e-5, FLOAT, ND) through the chain Atlas A2
    runs for it (two channels, below BatchNormV3's 64: BNTrainingReduce + BNTrainingUpdate,
    docs/emulator.md): per channel mean = sum(x) * (1/4), var = sum(x^2) * (1/4) - mean^2,
    k = weight / sqrt(var + eps), out = x * k + (bias - k * mean); the sums of these integers
    are exact in any order and the rest are single IEEE roundings. The example prints out
    with %f."""
    f = np.float32
    x = np.arange(8, dtype=f).reshape(2, 4)
    rec = f(1.0 / 4)
    mean = np.sum(x, axis=1, dtype=f) * rec
    var = np.sum(x * x, axis=1, dtype=f) * rec - mean * mean
    k = f(1) / np.sqrt(var + f(1e-5))
    out = x * k[:, None] + (f(0) - k * mean)[:, None]
    return "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(out.ravel()))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnBatchNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "batch_norm_v3", "examples",
                                             "test_aclnn_batch_norm_v3.cpp"), [library])
    assert out == batch_norm_example_output()


def deep_norm_grad_example_output() -> str:
    """The deep_norm_grad example's inputs (dy = x = 1..12 and gx as [3, 1, 4], gamma
    [0, 1, 2, 3], mean = rstd = [0, 1, 2] as [3, 1, 1], alpha float(0.3), FLOAT) through the
    kernel's float32 chain (op_kernel/deep_norm_grad_large_n_small_d.h MainCompute):
    xc = (x * alpha (rounded) + gx) - mean, g = dy * gamma, dvar = sum((xc * r^3) * g) * k,
    dmean = sum(g * r) * k with k = -1.0f / 4, dgx = (xc * dvar + dmean) + g * r,
    dx = dgx * alpha, dbeta and dgamma the column sums of dy and (xc * r) * dy in row order
    (one row a core). Any order of the rows' four-term sums, and Ascend 950's order of dgx's
    adds ((g * r + xc * dvar) + dmean), give this text, so it is the device's on Atlas A2/A3
    and Ascend 950 (an Atlas inference part leaves pdx and pdgx as the example's host data:
    rows of 16 bytes). The example prints pdx, pdgx, pdbeta and pdgamma, each after a header
    that ends with no newline."""
    from test_emulator_add_layer_norm import lane_sum
    f = np.float32
    dy = np.arange(1, 13, dtype=f).reshape(3, 4)
    gx = np.array([2, 2, 2, 4, 4, 4, 6, 6, 6, 8, 8, 8], f).reshape(3, 4)
    gamma, r = np.arange(4, dtype=f), np.arange(3, dtype=f).reshape(3, 1)
    alpha, k = f(0.3), f(-1) / f(4)
    xc = (dy * alpha + gx) - r        # x is dy's data; mean's values are rstd's
    g = dy * gamma
    dvar = lane_sum((xc * (r * r * r)) * g) * k
    dmean = lane_sum(g * r) * k
    dgx = (xc * dvar[:, None] + dmean[:, None]) + g * r
    dx = dgx * alpha
    dbeta, dgamma = np.zeros(4, f), np.zeros(4, f)
    for row in range(3):
        dbeta += dy[row]
        dgamma += (xc[row] * r[row]) * dy[row]
    text = "\nUse aclnnDeepNormGrad Port."
    for name, vals in (("pdx", dx), ("pdgx", dgx), ("pdbeta", dbeta), ("pdgamma", dgamma)):
        text += f"== {name} output"
        text += "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(vals.ravel()))
    return text


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnDeepNormGrad example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_deep_norm_grad_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "deep_norm_grad", "examples",
                                             "test_aclnn_deep_norm_grad.cpp"), [library])
    assert out == deep_norm_grad_example_output()


def group_norm_backward_example_output() -> str:
    """The group_norm_grad example's inputs (gradOut = input = 1..24 as [2, 3, 4], mean 6.5,
    18.5, rstd 0.2896827 twice, gamma ones, N 2, C 3, HxW 4, group 1, FLOAT) through the
    Atlas A2 kernel's float32 chain (op_kernel/group_norm_grad.h, mode 0: a whole group in
    UB): x_hat = x * r + (-m * r); per channel dbeta_c = sum(dy), dgamma_c = sum(x_hat * dy);
    c1 = sum(dbeta_c * gamma) / 12, c2 = sum(dgamma_c * gamma) / 12; for channels 0 and 2
    (their first element block-aligned) dx = dy * (r * gamma) - (x_hat * (r * c2) + r * c1),
    for channel 1 dx = dy * (r * gamma) - (x * ((r * r) * c2) + (r * c1 - ((m * r) * r) *
    c2)); dgamma and dbeta (0 + sample 0) + sample 1. The sums of 4 and 3 values are taken
    pairwise ((a + c) + (b + d), (a + c) + b): the emulator's order for ReduceSum (the
    device's own is not in the sources), which the near-zero dx (dy equals x) and dgamma's
    last digits rest on. The example prints gradInput's 24 values, then gradGammaOut's 3 and
    gradBetaOut's 3, with %f."""
    f = np.float32

    def pairwise(v):
        v = list(v)
        return (v[0] + v[2]) + (v[1] + v[3]) if len(v) == 4 else (v[0] + v[2]) + v[1]

    x = np.arange(1, 25, dtype=f).reshape(2, 3, 4)
    dy = x.copy()
    m, r = np.array([6.5, 18.5], f), np.array([0.2896827, 0.2896827], f)
    gamma = np.ones(3, f)
    dx = np.empty_like(x)
    dgamma, dbeta = np.zeros((2, 3), f), np.zeros((2, 3), f)
    for n in range(2):
        xhat = x[n] * r[n] + (f(-1) * m[n]) * r[n]
        db = np.array([pairwise(dy[n, j]) for j in range(3)], f)
        dg = np.array([pairwise(xhat[j] * dy[n, j]) for j in range(3)], f)
        dgamma[n], dbeta[n] = dg, db
        c1, c2 = pairwise(db * gamma) / f(12), pairwise(dg * gamma) / f(12)
        for j in range(3):
            scale = r[n] * gamma[j]
            if j * 4 % 8 == 0:
                xo = xhat[j] * (r[n] * c2) + r[n] * c1
            else:
                xo = x[n, j] * ((r[n] * r[n]) * c2) + (r[n] * c1 - ((m[n] * r[n]) * r[n]) * c2)
            dx[n, j] = dy[n, j] * scale - xo
    zero = f(0)
    sums = [(zero + a[0]) + a[1] for a in (dgamma, dbeta)]
    return "".join(
        [f"gradInputResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(dx.ravel())] +
        [f"gradGammaOutResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(sums[0])] +
        [f"gradBetaOutResultData[{i}] is: {float(v):f}\n" for i, v in enumerate(sums[1])])


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnGroupNormBackward "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_group_norm_backward_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "group_norm_grad", "examples",
                                             "test_aclnn_group_norm_grad.cpp"), [library])
    assert out == group_norm_backward_example_output()


def batch_norm_backward_example_output() -> str:
    """The batch_norm_grad_v3 example's inputs (gradOut = self = [1, 2, 4] = 0..7, weight 1,
    runningMean 0, runningVar 1, saveMean 0, saveInvstd 1, training, eps 1e-5, outputMask all
    true, FLOAT, ND) through the chain Atlas A2 runs for it (BNTrainingUpdateGrad +
    BNTrainingReduceGrad, saveInvstd taken as the variance: docs/emulator.md): per channel
    q = sqrt(var + eps), rs = 1 / q, ds = sum(dy * ((x - mean) * rs)), db = sum(dy) in the
    emulator's ReduceSum order (four values: (a + c) + (b + d); the device's own is not in
    the sources), n = 1/4, dx = ((dy + ((ds * -n) / q) * x) + ((mean / q) * (ds * n) +
    db * -n)) * (weight / q). The example prints gradIn with %f."""
    from test_emulator_group_norm import lane_sum
    f = np.float32
    x = np.arange(8, dtype=f).reshape(2, 4)
    dy, mean, var, w, e = x, f(0), f(1), f(1), f(1e-5)
    q = np.sqrt(var + e)
    rs = f(1) / q
    ds = lane_sum(dy * ((x - mean) * rs))
    db = lane_sum(dy)
    n = f(1.0 / 4)
    mult = (ds * -n) / q
    add = (mean / q) * (ds * n) + db * -n
    dx = ((dy + mult[:, None] * x) + add[:, None]) * (w / q)
    return "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(dx.ravel()))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnBatchNormBackward "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_backward_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "batch_norm_grad_v3", "examples",
                                             "test_aclnn_batch_norm_backward.cpp"), [library])
    assert out == batch_norm_backward_example_output()


def batch_norm_reduce_backward_example_output() -> str:
    """The sync_batch_norm_backward_reduce example's inputs (gradOut [4, 2] = 1, 1, 1, 2, 2, 2,
    3, 3, input [4, 2] = 0..7, mean 1, invstd 1, weight 1, every flag true, FLOAT, ND) through
    the op_api's float32 chain (docs/emulator.md): per channel sdx = sum(dy * x), sdy =
    sum(dy) in the emulator's ReduceSum order, sumDyXmu = sdx - mean * sdy, gradWeight =
    sumDyXmu * invstd, gradBias = sdy. The example prints sumDy, sumDyXmu, gradWeight and
    gradBias with %f, each indexed from 0."""
    from test_emulator_group_norm import lane_sum
    f = np.float32
    dy = np.array([1, 1, 1, 2, 2, 2, 3, 3], f).reshape(4, 2).T
    x = np.arange(8, dtype=f).reshape(4, 2).T
    sdy = lane_sum(dy)
    xmu = lane_sum(dy * x) - f(1) * sdy
    outs = (sdy, xmu, xmu * f(1), sdy)
    return "".join(f"result[{i}] is: {float(v):f}\n" for o in outs for i, v in enumerate(o))
def batch_norm_elemt_example_output() -> str:
    """The batch_norm_elemt example's inputs (self [2, 4, 2] = 0..15, mean 1..4, invstd 5..8,
    eps 1e-2, no weight or bias, FLOAT) through Atlas A2's chain (docs/emulator.md): the
    op_api's variance var = (1 / (invstd * invstd)) - eps in FLOAT, then BNInfer,
    k = 1 / sqrt(var + eps), out = x * k + (0 - k * mean); single IEEE roundings. Printed
    with %f."""
    f = np.float32
    x = np.arange(16, dtype=f).reshape(2, 4, 2)
    mean, inv, eps = np.arange(1, 5, dtype=f), np.arange(5, 9, dtype=f), f(1e-2)
    var = (f(1) / (inv * inv)) - eps
    k = f(1) / np.sqrt(var + eps)
    shift = f(0) - k * mean
    out = x * k[None, :, None] + shift[None, :, None]
    return "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(out.ravel()))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnBatchNormElemt "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_elemt_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "batch_norm_elemt", "examples",
                                             "test_aclnn_batch_norm_elemt.cpp"), [library])
    assert out == batch_norm_elemt_example_output()


def batch_norm_stats_example_output() -> str:
    """The batch_norm_stats example's input ([2, 3] = 1..6, eps 1e-5, FLOAT) through Atlas
    A2's chain (docs/emulator.md): per channel of 2 values, cof = 1 / 2, mean = sum(x) * cof,
    invstd = sqrt(1 / (sum((x - mean)^2 * cof) + eps)), single float32 roundings. The example
    prints mean, then invstd, both as "mean result[%ld] is: %f"."""
    f = np.float32
    rows = np.arange(1, 7, dtype=f).reshape(2, 3).T
    cof = f(1) / f(2)
    mean = (rows[:, 0] + rows[:, 1]) * cof
    d = rows - mean[:, None]
    sq = (d * d) * cof
    inv = np.sqrt(f(1) / ((sq[:, 0] + sq[:, 1]) + f(1e-5)))
    return "".join(f"mean result[{i}] is: {float(v):f}\n" for o in (mean, inv)
                   for i, v in enumerate(o))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-math checkout (ops-math/) to build its aclnnBatchNormStats "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_math"])
def test_vendor_batch_norm_stats_example(library):
    out = build_and_run(OPS_MATH, os.path.join("math", "reduce_std_with_mean", "examples",
                                               "test_aclnn_batch_norm_stats.cpp"), [library])
    assert out == batch_norm_stats_example_output()


def batch_norm_gather_stats_with_counts_port_output() -> str:
    """What samples/batch_norm_gather_stats_with_counts.py prints: its example's data (the
    eight means the C++ example reads past its host vector given as 0) through Atlas A2's
    chain: meanAll = sum over the ranks in order of (mean * count) / 10, in FLOAT."""
    f = np.float32
    mean = np.array(list(range(8)) + [0] * 8, f).reshape(4, 4)
    counts = np.arange(1, 5, dtype=f)
    total = f(counts.sum())
    acc = (mean[0] * counts[0]) / total
    for n in range(1, 4):
        acc = acc + (mean[n] * counts[n]) / total
    return "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(acc))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its "
                    "aclnnBatchNormReduceBackward example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_reduce_backward_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "sync_batch_norm_backward_reduce",
                                             "examples",
                                             "test_aclnn_batch_norm_reduce_backward.cpp"),
                        [library])
    assert out == batch_norm_reduce_backward_example_output()


def batch_norm_reduce_example_output() -> str:
    """The bn_training_reduce example's input (x [1, 2, 3, 4] NCHW FLOAT, all ones): per
    channel the sum of its 12 ones, exact in float32 in any order. The example prints sum
    only, with %f."""
    return "".join(f"result[{i}] is: {12.0:f}\n" for i in range(2))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnBatchNormReduce "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_reduce_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "bn_training_reduce", "examples",
                                             "test_aclnn_batch_norm_reduce.cpp"), [library])
    assert out == batch_norm_reduce_example_output()


def batch_norm_elemt_backward_example_output() -> str:
    """The sync_batch_norm_backward_elemt example's inputs (gradOut = input = [1, 2, 4] = 0..7,
    weight 1, mean 0, invstd 1, sumDy 0, sumDyXmu 1, counter (5, 5), FLOAT, ND) through the
    op_api's float32 chain (docs/emulator.md): count = 10, meanDy = 0 / 10, meanDyXmu =
    1 / 10, gradInput = ((dy - meanDy) - (x - mean) * (meanDyXmu * (invstd * invstd))) *
    (invstd * weight). The example prints gradInput with %f."""
    f = np.float32
    x = np.arange(8, dtype=f)
    count = f(5) + f(5)
    mdy, mdyx = f(0) / count, f(1) / count
    gi = ((x - mdy) - (x - f(0)) * (mdyx * (f(1) * f(1)))) * (f(1) * f(1))
    return "".join(f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(gi))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its "
                    "aclnnBatchNormElemtBackward example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_elemt_backward_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "sync_batch_norm_backward_elemt",
                                             "examples",
                                             "test_aclnn_batch_norm_elemt_backward.cpp"),
                        [library])
    assert out == batch_norm_elemt_backward_example_output()


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its "
                    "aclnnBatchNormGatherStatsWithCounts example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_batch_norm_gather_stats_with_counts_example(library):
    """The example builds unchanged and runs; its 8 mean values for a [4, 4] tensor make the
    host copy read past the vector (the last two ranks' means are the heap's), so only its
    first two ranks are known: meanAll's four lines are printed, each a number."""
    out = build_and_run(OPS_NN, os.path.join("norm", "sync_batch_norm_gather_stats_with_counts",
                                             "examples",
                                             "test_aclnn_BatchNormGatherStatsWithCounts.cpp"),
                        [library])
    lines = out.splitlines()
    assert len(lines) == 4, out
    for i, line in enumerate(lines):
        assert re.fullmatch(rf"result\[{i}\] is: \S+", line), line


# aclnnInstanceNorm runs on the Atlas inference series only (its op_api's CheckPlatform): its
# example and port run on the part its port declares (samples/instance_norm.py's "soc")
INSTANCE_NORM_PART = {"ACL_EMU_SOC": _sample.ports()["instance_norm"].soc}


# aclnnAddLayerNormQuant runs on Ascend 950 only (its op_api's CheckPlatform): its example
# and port run on the part its port declares (samples/add_layer_norm_quant.py's "soc")
ADD_LAYER_NORM_QUANT_PART = {"ACL_EMU_SOC": _sample.ports()["add_layer_norm_quant"].soc}
ADD_LAYER_NORM_QUANT_HEADERS = tuple(f"==== AddLayerNormQuant {name} output\n"
                                     for name in ("y1", "y2", "x", "outScale1", "outScale2"))


def add_layer_norm_quant_example_output() -> str:
    """The add_layer_norm_quant example on Ascend 950 (it prints the part's name first, and
    skips any other part): its inputs (x1, x2 [8, 16], gamma, beta, bias, scales1, scales2
    [16], all FLOAT 0x3A = 58; no zero points; static, epsilon 1e-6, additionalOutput and
    divMode true) through the full-load kernel
    (arch35/add_layer_norm_static_quant_regbase_full_load_kernel.h: docs/emulator.md): x =
    (x2 + bias) + x1 = 174, every x / 16 = 10.875 and every partial sum exact, so mean = x,
    d = 0, var = 0, v = (0 * rstd) * gamma + beta = 58, y1 = y2 = rint(v / 58) = 1; the out
    scales are not written in static mode (the zeros the example copied in). y1, y2 printed
    with %d, x and the scales with %f, each after its header line."""
    f = np.float32
    fill = f(0x3A)
    x = (np.full((8, 16), fill, f) + fill) + fill
    mean = np.sum(x / f(16), axis=1, dtype=f)
    d = x - mean[:, None]
    assert not d.any()
    var = np.sum((d * d) / f(16), axis=1, dtype=f)
    rstd = f(1) / np.sqrt(var + f(1e-6))
    v = ((d * rstd[:, None]) * fill) + fill
    y = np.clip(np.rint(v / fill), -128, 127).astype(np.int8)
    parts = [f"Current SOC: {ADD_LAYER_NORM_QUANT_PART['ACL_EMU_SOC']}\n"]
    for header, values, fmt in zip(ADD_LAYER_NORM_QUANT_HEADERS,
                                   (y, y, x, np.zeros(8, f), np.zeros(8, f)),
                                   ("%d", "%d", "%f", "%f", "%f")):
        parts.append(header + "".join(f"result[{i}] is: {fmt % v}\n"
                                      for i, v in enumerate(values.ravel())))
    return "".join(parts)


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnAddLayerNormQuant "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_add_layer_norm_quant_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "add_layer_norm_quant", "examples",
                                             "test_aclnn_add_layer_norm_quant.cpp"), [library],
                        env=ADD_LAYER_NORM_QUANT_PART)
    assert out == add_layer_norm_quant_example_output()


def instance_norm_example_output() -> str:
    """The instance_norm_v3 arch20 example's inputs (x = [1, 8, 4, 4] of 0.77, gamma 1.5,
    beta 0.5, NCHW, eps 1e-5, FLOAT) through the emulator's chain (the kernel is not public:
    docs/emulator.md): each row's 16 values times 1/16 (exact: a power of two) summed in the
    lanes' order give mean = 0.77f exactly, so x - mean, the variance and (x - mean) * rstd
    are 0 and y = 0 * 1.5 + 0.5. Printed with %f after headers the example ends without a
    newline (its variance under "rstd output")."""
    from test_emulator_group_norm import lane_sum
    f = np.float32
    row = np.full((1, 16), 0.77, f)
    inv = f(1) / f(16)
    mean = lane_sum((row * inv).astype(f))[0]
    d = (row[0] - mean).astype(f)
    var = lane_sum(((d * d).astype(f) * inv).astype(f)[None])[0]
    rstd = f(1) / np.sqrt(f(var + f(1e-5)))
    y = (((d * rstd).astype(f) * f(1.5)).astype(f) + f(0.5)).astype(f)
    lines = ["\nUse aclnnInstanceNorm Non-Bias Port."]
    for name, values in (("y", np.tile(y, 8)), ("mean", [mean] * 8), ("rstd", [var] * 8)):
        lines.append(f"==== InstanceNorm non-bias: {name} output")
        lines += [f"result[{i}] is: {float(v):f}\n" for i, v in enumerate(values)]
    return "".join(lines)


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnInstanceNorm example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_instance_norm_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "instance_norm_v3", "examples", "arch20",
                                             "test_aclnn_instance_norm.cpp"), [library],
                        env=INSTANCE_NORM_PART)
    assert out == instance_norm_example_output()


def rms_norm_quant_example_output() -> str:
    """The rms_norm_quant example's inputs (x [3, 5] FLOAT16 0..14, gamma = beta = [1, 5]
    0..4, scale 1, offset 1, epsilon 1e-6, y INT8) through the kernel's float32 chain
    (op_kernel/rms_norm_quant.cpp, rows of at most 8192: docs/emulator.md): factor =
    1 / sqrt(sum(x * x * (float)(1.0 / 5)) + eps), v = ((x * factor) * gamma + beta) * (1 / 1)
    + 1, rounded to FLOAT16, clamped to [-128, 127], rounded to even. No value is near a half,
    so the summation order does not matter: the printed values are the device's. The example
    prints y with %d."""
    f = np.float32
    x = np.arange(15, dtype=f).reshape(3, 5)
    g = np.arange(5, dtype=f)
    factor = f(1) / np.sqrt(np.sum((x * x) * f(1.0 / 5), axis=1, dtype=f) + f(1e-6))
    v = ((x * factor[:, None]) * g + g) * (f(1) / f(1)) + f(1)
    y = np.rint(np.clip(v.astype(np.float16).astype(f), -128, 127)).astype(np.int8)
    return "".join(f"result[{i}] is: {int(q)}\n" for i, q in enumerate(y.ravel()))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnRmsNormQuant example "
                    "against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_rms_norm_quant_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "rms_norm_quant", "examples",
                                             "test_aclnn_rms_norm_quant.cpp"), [library])
    assert out == rms_norm_quant_example_output()


def add_rms_norm_quant_example_output() -> str:
    """The add_rms_norm_quant example's inputs (x1, x2 [64, 2] and gamma [2] FLOAT16 zeros,
    scales1 [2] FLOAT 1, zeroPoints1 [2] INT32 100, no scales2, epsilon 1e-6, divMode true)
    through the kernel's chain (op_kernel/add_rms_norm_quant*.h: docs/emulator.md): x = 0,
    rstd = 1 / sqrt(0 + eps), y = half(half(0 * rstd) * 0) = 0, y1 = int8(rint(0 / 1 + 100)).
    The example prints y1 with %d."""
    f = np.float32
    x = np.zeros((64, 2), np.float16).astype(f)
    rstd = f(1) / np.sqrt(np.sum((x * x) * f(1 / 2), axis=1, dtype=f) + f(1e-6))
    y = (x * rstd[:, None]).astype(np.float16) * np.zeros(2, np.float16)
    q = np.clip(np.rint(y.astype(f) / f(1) + f(100)), -128, 127).astype(np.int8)
    return "".join(f"result[{i}] is: {int(v)}\n" for i, v in enumerate(q.ravel()))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its aclnnAddRmsNormQuant "
                    "example against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
def test_vendor_add_rms_norm_quant_example(library):
    out = build_and_run(OPS_NN, os.path.join("norm", "add_rms_norm_quant", "examples",
                                             "test_aclnn_add_rms_norm_quant.cpp"), [library])
    assert out == add_rms_norm_quant_example_output()


def add_rms_norm_dynamic_quant_example_output(beta: bool = False) -> str:
    """The add_rms_norm_dynamic_quant example's inputs (x1, x2 [2, 8] FLOAT16 0x3800 = 0.5,
    gamma and both smooth scales [8] FLOAT16 0x3e00 = 1.5, epsilon 1e-6 as a float) through
    Atlas A2's chain (op_kernel/add_rms_norm_dynamic_quant_*_kernel.h: docs/emulator.md):
    s = 1 in float, rstd = 1 / sqrt(sum(s * s) * (1 / 8) + eps), t = ((s * rstd) * gamma) *
    smooth1 (the V2 example, ``beta``: beta [8] FLOAT16 1.5 added after gamma, betaFlag),
    y1 = rint(t * (127 / max|t|)) per row: every value its row's maximum, 127. What the
    example prints on a device (y1 with %d)."""
    f = np.float32
    half = np.full((2, 8), 0x3800, np.uint16).view(np.float16)
    g = np.full(8, 0x3e00, np.uint16).view(np.float16).astype(f)
    s = half.astype(f) + half.astype(f)
    rstd = f(1) / np.sqrt(np.sum(s * s, axis=1, dtype=f) * f(1.0 / 8.0) + f(1e-6))
    n = (s * rstd[:, None]) * g
    t = ((n + g) if beta else n) * g
    q = f(127) / np.max(np.abs(t), axis=1)
    y1 = np.clip(np.rint(t * q[:, None]), -128, 127).astype(np.int8)
    return "".join(f"result[{i}] is: {int(v)}\n" for i, v in enumerate(y1.ravel()))


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn checkout (ops-nn/) to build its "
                    "aclnnAddRmsNormDynamicQuant and V2 examples against the emulator")
@pytest.mark.parametrize("library", ["opapi", "opapi_nn"])
@pytest.mark.parametrize("example,beta", [("test_aclnn_add_rms_norm_dynamic_quant.cpp", False),
                                          ("test_aclnn_add_rms_norm_dynamic_quant_v2.cpp", True)],
                         ids=["v1", "v2"])
def test_vendor_add_rms_norm_dynamic_quant_examples(library, example, beta):
    """The V1 example and the V2 one (beta, no outputMask) build unchanged against the
    emulator and print what a device prints. Each allocates every tensor's device memory from
    a vector of 16-bit words, so its FLOAT scale1 and scale2 [2] ask for 4 bytes for their 8:
    the runtime's rounding of each allocation (64 bytes for 4) holds them, as on a device."""
    exe, r = compile_example(OPS_NN, os.path.join("norm", "add_rms_norm_dynamic_quant",
                                                  "examples", example), [library])
    assert r.returncode == 0, f"{' '.join(r.args)}\n{r.stderr}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    run = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == add_rms_norm_dynamic_quant_example_output(beta), run.stdout


SAMPLES = os.path.join(os.path.dirname(HERE), "samples")

# (port under samples/, checkout, the C++ example it ports, its operator library)
EXAMPLE_PORTS = [
    ("layer_norm.py", "ops-nn",
     os.path.join("norm", "layer_norm_v4", "examples", "test_aclnn_layer_norm_v4.cpp"),
     "opapi_nn"),
    ("fast_layer_norm.py", "ops-nn",
     os.path.join("norm", "layer_norm_v4", "examples", "test_aclnn_fast_layer_norm.cpp"),
     "opapi_nn"),
    ("rms_norm.py", "ops-nn", os.path.join("norm", "rms_norm", "examples",
                                           "test_aclnn_rms_norm.cpp"), "opapi_nn"),
    ("add.py", "ops-math", os.path.join("math", "add", "examples", "test_aclnn_add.cpp"),
     "opapi_math"),
    ("add_rms_norm.py", "ops-nn", os.path.join("norm", "add_rms_norm", "examples",
                                               "test_aclnn_add_rms_norm.cpp"), "opapi_nn"),
    ("rms_norm_grad.py", "ops-nn", os.path.join("norm", "rms_norm_grad", "examples",
                                                "test_aclnn_rms_norm_grad.cpp"), "opapi_nn"),
    ("group_norm.py", "ops-nn", os.path.join("norm", "group_norm", "examples",
                                             "test_aclnn_GroupNorm.cpp"), "opapi_nn"),
    ("gemma_rms_norm.py", "ops-nn", os.path.join("norm", "gemma_rms_norm", "examples",
                                                 "test_aclnn_gemma_rms_norm.cpp"), "opapi_nn"),
    ("inplace_add_rms_norm.py", "ops-nn",
     os.path.join("norm", "inplace_add_rms_norm", "examples",
                  "test_aclnn_inplace_add_rms_norm.cpp"), "opapi_nn"),
    ("add_layer_norm.py", "ops-nn", os.path.join("norm", "add_layer_norm", "examples",
                                                 "test_aclnn_add_layer_norm.cpp"), "opapi_nn"),
    ("deep_norm.py", "ops-nn", os.path.join("norm", "deep_norm", "examples",
                                            "test_aclnn_deep_norm.cpp"), "opapi_nn"),
    ("group_norm_silu.py", "ops-nn", os.path.join("norm", "group_norm_silu", "examples",
                                                  "test_aclnn_group_norm_silu.cpp"), "opapi_nn"),
    ("group_norm_silu_v2.py", "ops-nn",
     os.path.join("norm", "group_norm_silu", "examples", "test_aclnn_group_norm_silu_v2.cpp"),
     "opapi_nn"),
    ("add_layer_norm_grad.py", "ops-nn",
     os.path.join("norm", "add_layer_norm_grad", "examples",
                  "test_aclnn_add_layer_norm_grad.cpp"), "opapi_nn"),
    ("batch_norm.py", "ops-nn", os.path.join("norm", "batch_norm_v3", "examples",
                                             "test_aclnn_batch_norm_v3.cpp"), "opapi_nn"),
    ("deep_norm_grad.py", "ops-nn", os.path.join("norm", "deep_norm_grad", "examples",
                                                 "test_aclnn_deep_norm_grad.cpp"), "opapi_nn"),
    ("group_norm_backward.py", "ops-nn",
     os.path.join("norm", "group_norm_grad", "examples", "test_aclnn_group_norm_grad.cpp"),
     "opapi_nn"),
    ("batch_norm_backward.py", "ops-nn",
     os.path.join("norm", "batch_norm_grad_v3", "examples",
                  "test_aclnn_batch_norm_backward.cpp"), "opapi_nn"),
    ("batch_norm_reduce_backward.py", "ops-nn",
     os.path.join("norm", "sync_batch_norm_backward_reduce", "examples",
                  "test_aclnn_batch_norm_reduce_backward.cpp"), "opapi_nn"),
    ("batch_norm_elemt_backward.py", "ops-nn",
     os.path.join("norm", "sync_batch_norm_backward_elemt", "examples",
                  "test_aclnn_batch_norm_elemt_backward.cpp"), "opapi_nn"),
    ("instance_norm.py", "ops-nn",
     os.path.join("norm", "instance_norm_v3", "examples", "arch20",
                  "test_aclnn_instance_norm.cpp"), "opapi_nn"),
    ("rms_norm_quant.py", "ops-nn", os.path.join("norm", "rms_norm_quant", "examples",
                                                 "test_aclnn_rms_norm_quant.cpp"), "opapi_nn"),
    ("batch_norm_elemt.py", "ops-nn",
     os.path.join("norm", "batch_norm_elemt", "examples", "test_aclnn_batch_norm_elemt.cpp"),
     "opapi_nn"),
    ("batch_norm_stats.py", "ops-math",
     os.path.join("math", "reduce_std_with_mean", "examples",
                  "test_aclnn_batch_norm_stats.cpp"), "opapi_math"),
    ("add_rms_norm_quant.py", "ops-nn",
     os.path.join("norm", "add_rms_norm_quant", "examples",
                  "test_aclnn_add_rms_norm_quant.cpp"), "opapi_nn"),
    ("add_layer_norm_quant.py", "ops-nn",
     os.path.join("norm", "add_layer_norm_quant", "examples",
                  "test_aclnn_add_layer_norm_quant.cpp"), "opapi_nn"),
    ("add_rms_norm_dynamic_quant_v2.py", "ops-nn",
     os.path.join("norm", "add_rms_norm_dynamic_quant", "examples",
                  "test_aclnn_add_rms_norm_dynamic_quant_v2.cpp"), "opapi_nn"),
]
# the part a port and its example run on, where the default has no kernel for it
PORT_PARTS = {"instance_norm.py": INSTANCE_NORM_PART,
              "add_layer_norm_quant.py": ADD_LAYER_NORM_QUANT_PART}


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with the "
                    "hicann/ops-nn and hicann/ops-math checkouts to compare the Python ports "
                    "with the C++ examples built against the emulator")
@pytest.mark.parametrize("port,checkout,example,library", EXAMPLE_PORTS,
                         ids=[p[0] for p in EXAMPLE_PORTS])
def test_python_port_prints_what_the_cpp_example_prints(port, checkout, example, library):
    """The port and the C++ example it ports, both on the emulator: byte for byte the same."""
    part = PORT_PARTS.get(port, {})
    cpp = build_and_run(_checkout(checkout), example, [library], env=part)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env["ACL_PY_BACKEND"] = "emulator"
    env.update(part)
    run = subprocess.run([sys.executable, os.path.join(SAMPLES, port)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == cpp
    assert run.stderr == ""
