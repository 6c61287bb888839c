"""Child process of benchmarks/run.py: peak host memory of one NumPy-level
``acl_py.layer_norm_backward`` call (VmHWM; ``getrusage``'s ru_maxrss is reported too, see
:func:`peak_rss` for why it is not the figure).

Run in a fresh process so the peak belongs to this call alone. The baseline is taken after
acl-py is imported and the device opened (a tiny warm-up call loads every library and code
path), so the growth measured is the call's own: its inputs, the device copies (on the
emulator device memory is host memory, and counted), the outputs, and anything extra.
Inputs are made without temporaries (float32 generated directly; mean/rstd are small), so the
process's peak is set by the call, not by the set-up.

Usage: python peak_rss.py M N   -> prints one JSON object
"""
from __future__ import annotations

import json
import resource
import sys

import numpy as np

# Benchmark the source tree this file lives in (make bench runs from it), whatever an
# installed copy of acl_py in the environment may be.
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))


def current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak_rss() -> int:
    """Peak RSS of this process: VmHWM, the high-water mark of this address space. It agrees
    with getrusage's ru_maxrss except that Linux carries ru_maxrss over from the parent across
    fork + execve (so a child of a large benchmark process would report the parent's peak);
    VmHWM starts afresh with the new address space."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    m, n = int(sys.argv[1]), int(sys.argv[2])
    import acl_py
    lnb = acl_py.layer_norm_backward

    # Warm-up: loads the libraries, opens the device, builds every cache the call path uses.
    w_small = np.ones(4, np.float32)
    lnb(np.ones((2, 4), np.float32), np.ones((2, 4), np.float32), (4,),
        np.zeros((2, 1), np.float32), np.ones((2, 1), np.float32), w_small, w_small)
    rng = np.random.default_rng(0)
    rng.standard_normal(16, dtype=np.float32)   # the generator's own set-up, before the baseline
    rss0 = current_rss()
    peak_setup = peak_rss()

    dy = rng.standard_normal((m, n), dtype=np.float32)
    x = rng.standard_normal((m, n), dtype=np.float32)
    mean = rng.standard_normal((m, 1), dtype=np.float32) * 0.1
    rstd = rng.random((m, 1), dtype=np.float32) + 0.5
    weight = rng.random(n, dtype=np.float32) + 0.5
    bias = np.zeros(n, np.float32)
    inputs = [dy, x, mean, rstd, weight, bias]
    rss_inputs = current_rss()

    outs = lnb(dy, x, (n,), mean, rstd, weight, bias)
    peak = peak_rss()
    ru_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    in_bytes = sum(a.nbytes for a in inputs)
    out_bytes = sum(o.nbytes for o in outs if o is not None)
    # Sanity: the result must be what was asked for, or the figure means nothing.
    assert outs[0].shape == (m, n) and np.isfinite(outs[2]).all()
    np.testing.assert_allclose(outs[2], dy.sum(axis=0, dtype=np.float64), rtol=1e-4, atol=1e-3)
    # The workspace phase one asks for is device memory too (host memory on the emulator).
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in inputs]
    with acl_py.LayerNormBackward(dev[0], dev[1], (n,), *dev[2:]) as plan:
        workspace = int(plan.workspace_size)
    print(json.dumps({
        "workspace_bytes": workspace,
        "m": m, "n": n, "rss_baseline": rss0, "peak_before_inputs": peak_setup,
        "rss_with_inputs": rss_inputs, "peak": peak, "input_bytes": in_bytes,
        "output_bytes": out_bytes, "ru_maxrss": ru_maxrss,
    }))


if __name__ == "__main__":
    main()
