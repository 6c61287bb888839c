"""The emulator kernels give the same bits whichever CPU runs them, and whatever the layout.

On x86-64 the hot loops are compiled three times (x86-64-v4 = AVX-512 with VL/BW, AVX2 (+ F16C
for the row loops), and the baseline) and one is picked per CPU; the row loops convert
contiguous FLOAT16/BF16 rows in registers (emulator/src/ops/row_vectors.h), other layouts go through one of three
conversion paths picked at run time (AVX-512 or F16C conversion instructions, or portable
integer code: emulator/src/ops/convert.c). A result must not depend on the machine: a user
comparing runs across hosts, or CI against a laptop, must see identical outputs. This builds
the emulator twice more without run-time selection (plain x86-64: portable conversions, lane
by lane; -march=x86-64-v3: F16C, and FMA allowed, so contraction must stay off) and compares
every output byte of the same calls with the default build's (on an AVX-512 machine: AVX-512
loops and conversions): for each dtype and each specialization of the row loop
(in-register/gathered inputs, fused/converted gradInput, non-temporal stores, each output
subset), for every dtype mix of input, statistics, weight, gradInput and gradWeight/gradBias
acl-py accepts, and for BF16 under both tie rules (Atlas A2/A3, 950); within each build, the
same data as contiguous rows and as strided views must give the same bits. The forward
(aclnnLayerNorm, its row loops in emulator/src/ops/layer_norm_rows.h) likewise: each dtype,
contiguous rows against strided views (every vector width's tail, non-temporal out), full and
partial row groups, tail tiles, with and without weight/bias, strided input/out, and its dtype
mixes of weight, out and mean/rstd; on Atlas A2 and on Ascend 950 (its two_pass_perf,
regbase_two_pass and Welford rows, emulator/src/ops/layer_norm_perf_rows.h), NaN signs
included: rows holding NaNs of both signs and Infs, and a NaN weight and bias at one column;
BF16 rows of 1024 and 4096 on Atlas A2 (its single_read template, layer_norm_rows.h
single_read_rows).
tests/test_conversions.py checks the conversion paths themselves on every bit pattern class.

The variant builds take ~15 s each (both run at once) and are kept in tests/.build, rebuilt
only when the emulator's sources change.
"""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from acl_py import _loader

ROOT = Path(__file__).resolve().parent.parent


def _emulator_build_module():
    """emulator/build.py, loaded by path (a plain `import build` could meet pypa's build)."""
    spec = importlib.util.spec_from_file_location("acl_py_emulator_build",
                                                  ROOT / "emulator" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

VARIANTS = {
    "baseline": ("-DACLEMU_NO_CLONES", "-g0"),
    "x86-64-v3": ("-DACLEMU_NO_CLONES", "-march=x86-64-v3", "-g0"),
}

# Runs in a fresh interpreter against one emulator prefix; prints {case: sha256 of outputs}.
DIGEST = textwrap.dedent("""
    import hashlib, json, os
    import numpy as np
    from ml_dtypes import bfloat16
    import acl_py as acl

    rng = np.random.default_rng(2026)
    out = {}

    def dev(a, transposed=False):
        # transposed: the same values in column-major storage (a strided view)
        if transposed:
            return acl.DeviceTensor.from_numpy(np.ascontiguousarray(a.T)).T
        return acl.DeviceTensor.from_numpy(a)

    def case(name, dt, m, n, mask=(True, True, True), weight=True, tin=False, tdx=False,
             stat_dt=None, w_dt=None, dx_dt=None, dw_dt=None):
        stat_dt, w_dt, dx_dt, dw_dt = (d or dt for d in (stat_dt, w_dt, dx_dt, dw_dt))
        x = rng.standard_normal((m, n)).astype(dt)
        dy = rng.standard_normal((m, n)).astype(dt)
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=1, keepdims=True)
        rstd = 1.0 / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)
        w = (rng.random(n) + 0.5).astype(w_dt) if weight else None
        args = [dev(dy, tin), dev(x, tin), (n,), dev(mean.astype(stat_dt)),
                dev(rstd.astype(stat_dt)), dev(w) if weight else None, None, mask]
        gi = (acl.DeviceTensor.zeros((n, m), dx_dt).T if tdx
              else acl.DeviceTensor.zeros((m, n), dx_dt))
        outs = (gi, acl.DeviceTensor.zeros((n,), dw_dt), acl.DeviceTensor.zeros((n,), dw_dt))
        acl.layer_norm_backward(*args, out=outs)
        h = hashlib.sha256()
        for o, on in zip(outs, mask):
            if on:
                h.update(np.ascontiguousarray(o.to_numpy()).view(np.uint8).tobytes())
        out[name] = h.hexdigest()

    def pair(name, dt, m, n, mask=(True, True, True), special=False):
        # the same data through the row kernel's in-register conversions (contiguous rows)
        # and through convert.h (strided views): the bits must not depend on the layout
        x = rng.standard_normal((m, n)).astype(dt)
        dy = rng.standard_normal((m, n)).astype(dt)
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=1, keepdims=True).astype(np.float32)
        rstd = (1.0 / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)).astype(np.float32)
        w = (rng.random(n) + 0.5).astype(np.float32)
        if special:
            mean, rstd, w = specials(x, dy, m, n)
            name = "special-" + name
        got = []
        for t in (False, True):
            gi = acl.DeviceTensor.zeros((n, m), dt).T if t else acl.DeviceTensor.zeros((m, n), dt)
            outs = (gi, acl.DeviceTensor.zeros((n,), np.float32),
                    acl.DeviceTensor.zeros((n,), np.float32))
            acl.layer_norm_backward(dev(dy, t), dev(x, t), (n,), dev(mean), dev(rstd), dev(w),
                                    None, mask, out=outs)
            got.append(b"".join(np.ascontiguousarray(o.to_numpy()).view(np.uint8).tobytes()
                                for o, on in zip(outs, mask) if on))
        out["pair-" + name + "-layouts"] = "same" if got[0] == got[1] else "differ"
        out["pair-" + name] = hashlib.sha256(got[0]).hexdigest()

    def specials(x, dy, m, n):
        # rows holding NaN and Inf together (x, gradOut, both), so NaNs of either sign meet
        # in the row sums, gradInput and the column sums: their signs must not depend on the
        # build either; statistics of the finite values, an infinite weight
        x[0, 3], x[0, n - 1], dy[0, 1] = np.nan, np.inf, -np.inf
        x[1, 2], dy[1, 2], dy[1, n // 2] = -np.inf, np.nan, np.inf
        dy[2, 0], dy[2, n - 1], x[2, n // 3] = np.inf, -np.inf, -np.nan
        x[m - 1, n - 2], dy[m - 1, n - 2] = np.inf, np.inf
        mean = np.nan_to_num(x.astype(np.float64), nan=0, posinf=0, neginf=0).mean(
            axis=1, keepdims=True).astype(np.float32)
        rstd = (rng.random((m, 1)) + 0.5).astype(np.float32)
        w = (rng.random(n) + 0.5).astype(np.float32)
        w[n // 4] = np.inf
        return mean, rstd, w

    dtypes = (("fp32", np.float32), ("fp16", np.float16), ("bf16", bfloat16))
    if os.environ.get("DIGEST_ONLY") == "arch35":  # Ascend 950's arch35 templates
        for dname, dt in dtypes:
            # Recompute: one row block, 6144-column blocks with a folded tail, 128-row
            # gradWeight blocks with a fold and tail tiles; GroupedReduceBigM (M > 4096,
            # N < 512): its 64-column row blocks, cores and tail columns; GroupedReduceBigN
            # (M < 512, N > 8192): its cores' row sums and their RA reduction
            for m, n in ((5, 33), (37, 1000), (3, 6200), (131, 600), (4100, 70), (4200, 300),
                         (40, 8200)):
                pair(f"{dname}-{m}x{n}", dt, m, n, special=True)
                pair(f"{dname}-{m}x{n}", dt, m, n)
        print(json.dumps(out))
        raise SystemExit
    if os.environ.get("DIGEST_ONLY") == "bf16":  # the other part's BF16 tie rule
        for m, n in ((37, 1000), (5, 17)):
            pair(f"bf16-{m}x{n}", bfloat16, m, n)
        print(json.dumps(out))
        raise SystemExit
    for dname, dt in dtypes:
        # every vector width's tail, tile boundaries, and gradInput large enough to be
        # written with non-temporal stores (8 MiB; rows aligned to the vector, then not)
        for m, n in ((3, 1), (4, 15), (5, 33), (3, 513), (37, 1000)):
            pair(f"{dname}-{m}x{n}", dt, m, n)
        pair(f"{dname}-37x1000-dx-only", dt, 37, 1000, (True, False, False))
        big = 2048 if dt is np.float32 else 4096
        pair(f"{dname}-{big}x1040-streamed", dt, big, 1040, (True, False, False))
        pair(f"{dname}-{big}x1041-streamed-unaligned", dt, big, 1041, (True, False, False))
    for dname, dt in dtypes:
        for m, n in ((70, 1543), (37, 1000), (5, 17)):  # tail tiles, >1 block, tiny
            k = f"{dname}-{m}x{n}"
            case(k + "-all", dt, m, n)
            case(k + "-dx-only", dt, m, n, (True, False, False))
            case(k + "-dw-db-only", dt, m, n, (False, True, True))
            case(k + "-no-weight", dt, m, n, weight=False)
            case(k + "-strided-dx", dt, m, n, tdx=True)
            case(k + "-strided-inputs", dt, m, n, tin=True)
            case(k + "-strided-dx-only", dt, m, n, (True, False, False), tin=True, tdx=True)
    # every dtype mix acl-py passes on: statistics and weight FLOAT or input's dtype, outputs
    # of any dtype
    for dname, dt in dtypes:
        params = (("same", dt), ("fp32", np.float32)) if dt is not np.float32 else (("same", dt),)
        for sname, sdt in params:
            for wname, wdt in params:
                for xname, xdt in dtypes:
                    for gname, gdt in dtypes:
                        case(f"mix-in-{dname}-stats-{sname}-w-{wname}-dx-{xname}-dwdb-{gname}",
                             dt, 37, 1000, stat_dt=sdt, w_dt=wdt, dx_dt=xdt, dw_dt=gdt)
    print(json.dumps(out))
""")

# The forward's cases, run the same way.
DIGEST_FORWARD = textwrap.dedent("""
    import hashlib, json
    import numpy as np
    from ml_dtypes import bfloat16
    import acl_py as acl

    rng = np.random.default_rng(2027)
    out = {}

    def dev(a, transposed=False):
        if transposed:
            return acl.DeviceTensor.from_numpy(np.ascontiguousarray(a.T)).T
        return acl.DeviceTensor.from_numpy(a)

    def case(name, dt, m, n, weight=True, bias=True, tin=False, ty=False, w_dt=None,
             y_dt=None, s_dt=np.float32):
        w_dt, y_dt = w_dt or dt, y_dt or dt
        x = (rng.standard_normal((m, n)) * 2 + 0.5).astype(dt)
        w = dev((rng.random(n) + 0.5).astype(w_dt)) if weight else None
        b = dev(rng.standard_normal(n).astype(w_dt)) if bias else None
        y = acl.DeviceTensor.zeros((n, m), y_dt).T if ty else acl.DeviceTensor.zeros((m, n), y_dt)
        outs = (y, acl.DeviceTensor.zeros((m, 1), s_dt), acl.DeviceTensor.zeros((m, 1), s_dt))
        acl.layer_norm(dev(x, tin), (n,), w, b, 1e-5, out=outs)
        h = hashlib.sha256()
        for o in outs:
            h.update(np.ascontiguousarray(o.to_numpy()).view(np.uint8).tobytes())
        out[name] = h.hexdigest()

    def pair(name, dt, m, n, special=False):
        # the same data through the row kernel's in-register conversions (contiguous rows, out
        # stored by the kernel) and through convert.h (strided views): the same bits.
        # special: NaN and Inf rows, and weights from 2^-140 to 2^120 (subnormal, overflowing
        # and tied results in every lane)
        x = (rng.standard_normal((m, n)) * 2 + 0.5).astype(dt)
        w = (rng.random(n) + 0.5).astype(dt)
        b = rng.standard_normal(n).astype(dt)
        if special:
            x[0, 7], x[1, 3], x[2, 5] = np.nan, np.inf, -np.inf
            # rows holding NaNs of both signs with Infs (two NaNs meet in the sums, in
            # (x - mean) * rstd and its multiply-add: x86 keeps the first operand's, whose
            # order the compiler picks per build unless the kernel fixes it), and a NaN of
            # each sign in weight and bias at one column
            nneg = -np.float32(np.nan)
            x[3, 2], x[3, 9] = np.nan, np.inf
            x[4, 1], x[4, 6], x[4, 8] = nneg, np.inf, -np.inf
            x[5, 0], x[5, 4], x[5, 11] = np.inf, np.nan, nneg
            w = (2.0 ** rng.integers(-140, 120, n) * (1 + 2.0 ** -8)).astype(dt)
            b[::3] = 0
            w[12], b[12] = np.nan, nneg
        got = []
        for t in (False, True):
            y = acl.DeviceTensor.zeros((n, m), dt).T if t else acl.DeviceTensor.zeros((m, n), dt)
            outs = (y, acl.DeviceTensor.zeros((m, 1), np.float32),
                    acl.DeviceTensor.zeros((m, 1), np.float32))
            acl.layer_norm(dev(x, t), (n,), dev(w), dev(b), 1e-5, out=outs)
            got.append(b"".join(np.ascontiguousarray(o.to_numpy()).view(np.uint8).tobytes()
                                for o in outs))
        out["pair-" + name + "-layouts"] = "same" if got[0] == got[1] else "differ"
        out["pair-" + name] = hashlib.sha256(got[0]).hexdigest()

    dtypes = (("fp32", np.float32), ("fp16", np.float16), ("bf16", bfloat16))
    for dname, dt in dtypes:
        # every vector width's tail, tile boundaries, and out large enough to be written with
        # non-temporal stores (8 MiB; rows aligned to the vector, then not)
        for m, n in ((3, 1), (4, 15), (5, 33), (3, 513)):
            pair(f"{dname}-{m}x{n}", dt, m, n)
        pair(f"{dname}-37x1000-special", dt, 37, 1000, special=True)
        pair(f"{dname}-9x1024-special", dt, 9, 1024, special=True)  # BF16: single_read
        big = 2048 if dt is np.float32 else 4096
        pair(f"{dname}-{big}x1040-streamed", dt, big, 1040)
        pair(f"{dname}-{big}x1041-streamed-unaligned", dt, big, 1041)
        # Ascend 950: rows past two_pass_perf's UB, the regbase_two_pass template's (its
        # library sums: a tail ending inside a register)
        long = 9100 if dt is np.float32 else 16400
        pair(f"{dname}-6x{long}-special", dt, 6, long, special=True)
        # ... and past regbase_two_pass's, the Welford template's (a partial last tile)
        longer = 10536 if dt is np.float32 else 21024
        pair(f"{dname}-6x{longer}-special", dt, 6, longer, special=True)
    for dname, dt in dtypes:
        # partial row groups and tail tiles, a small row, N = 1024 and 4096 (BF16: LayerNormV4's
        # single_read template)
        for m, n in ((70, 1543), (9, 1024), (3, 4096), (5, 17)):
            k = f"{dname}-{m}x{n}"
            case(k, dt, m, n)
            case(k + "-no-weight", dt, m, n, weight=False)
            case(k + "-no-bias", dt, m, n, bias=False)
            case(k + "-strided-input", dt, m, n, tin=True)
            case(k + "-strided-out", dt, m, n, ty=True)
        for wname, wdt in (("same", dt), ("fp32", np.float32)):
            for yname, ydt in dtypes:
                case(f"mix-in-{dname}-w-{wname}-out-{yname}-stats-same", dt, 37, 1000,
                     w_dt=wdt, y_dt=ydt, s_dt=dt)
    print(json.dumps(out))
""")


def _digests(prefix: Path, script: str = DIGEST, soc: str | None = None,
             only: str | None = "bf16") -> dict:
    # the default digests are the A2 part's (every dtype: BF16 too), whatever this process's;
    # another part's, only the cases DIGEST_ONLY names (`only`: a dtype, or "arch35", Ascend
    # 950's backward templates; None: all)
    env = dict(os.environ, ACL_PY_BACKEND="emulator", ACL_PY_EMULATOR_PREFIX=str(prefix),
               ACL_EMU_NUM_THREADS="2", ACL_EMU_SOC="Ascend910B2")
    if soc is not None:
        env.update(ACL_EMU_SOC=soc)
        if only is not None:
            env.update(DIGEST_ONLY=only)
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def variant_prefixes():
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"the kernel clones exist on x86-64 only (this is {platform.machine()})")
    if os.environ.get("ACL_EMU_CFLAGS"):
        pytest.skip("ACL_EMU_CFLAGS is set: the variant builds would not differ only in the "
                    "clones")
    base = ROOT / "tests" / ".build"
    emu_build = _emulator_build_module()

    def one(name):
        prefix = base / f"emulator-{name}"
        emu_build.build(prefix, quiet=True, extra_cflags=VARIANTS[name])
        return prefix

    with ThreadPoolExecutor(len(VARIANTS)) as pool:
        return dict(zip(VARIANTS, pool.map(one, VARIANTS)))


@pytest.mark.no_leak_check  # every call runs in a child process
def test_clones_and_baseline_give_identical_bits(variant_prefixes):
    backend = _loader.library().backend
    if backend.name != "emulator":
        pytest.skip(f"the backend is {backend.name}, not the emulator")
    # the A2 part (every case); another 950's BF16 tie rule; Ascend 950's arch35 templates
    for soc, only, count in ((None, None, 3 * 8 * 2 + 3 * 3 * 7 + (1 + 4 + 4) * 3 * 3),
                             ("Ascend950DT_950x", "bf16", 2 * 2),
                             ("Ascend950PR_9599", "arch35", 3 * 7 * 4)):
        default = _digests(Path(backend.root), soc=soc, only=only)
        assert len(default) == count
        differ = sorted(k for k, v in default.items() if v == "differ")
        assert not differ, f"{soc}: contiguous and strided views give different bits: {differ}"
        for name, prefix in variant_prefixes.items():
            other = _digests(prefix, soc=soc, only=only)
            diff = sorted(k for k in default if other.get(k) != default[k])
            assert not diff, f"{soc}: {name} build differs from the default build in: {diff}"


@pytest.mark.no_leak_check  # every call runs in a child process
def test_forward_clones_and_baseline_give_identical_bits(variant_prefixes):
    backend = _loader.library().backend
    if backend.name != "emulator":
        pytest.skip(f"the backend is {backend.name}, not the emulator")
    # Ascend 950 runs the two_pass_perf template's rows for most of these shapes (layer_norm.c,
    # layer_norm_perf_rows.h), every dtype, regbase_two_pass's and Welford's for the longest
    for soc in (None, "Ascend950PR_9599"):
        default = _digests(Path(backend.root), DIGEST_FORWARD, soc=soc, only=None)
        assert len(default) == 3 * (2 * 10 + 4 * 5 + 2 * 3)
        differ = sorted(k for k, v in default.items() if v == "differ")
        assert not differ, f"{soc}: contiguous and strided views give different bits: {differ}"
        for name, prefix in variant_prefixes.items():
            other = _digests(prefix, DIGEST_FORWARD, soc=soc, only=None)
            diff = sorted(k for k in default if other.get(k) != default[k])
            assert not diff, f"{soc}: {name} build differs from the default build in: {diff}"
