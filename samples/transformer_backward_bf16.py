"""LayerNorm backward of a transformer layer in bf16, on device tensors, checked and timed.

The shapes of a mid-sized training step: activations [batch, sequence, hidden] in bfloat16,
the forward's saved statistics (mean, rstd) in float32, float32 master weights (so the weight
and bias gradients come back in float32, as an optimizer wants them). The data goes to the
device once; the operator runs there on a stream; the results are copied back once and checked
against the NumPy float64 reference.

Check: every output element within ``RTOL[bf16] * magnitude + half a ulp of its dtype`` of the
reference (acl_py.reference; RTOL = 8e-3 for bfloat16 inputs, where magnitude is the size of
the terms the float32-accumulated result is computed from), reported as the worst element's
error / its bound (<= 1 passes).

Timing: median over ``--repeats`` runs of the one-call API (phase one, workspace, phase two per
call) and of the reusable plan (phase one once), each measured with device events around the
launch, plus the wall time of launch + synchronize.

    python samples/transformer_backward_bf16.py [--batch 8] [--seq 512] [--hidden 1024]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import acl_py
from acl_py import reference
from acl_py.dtypes import bfloat16


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=5, help="timed runs per variant (median)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perturb-reference", type=float, default=0.0, metavar="X",
                   help="self-test of the check: add X * (1 + |value|) to one expected element "
                        "of each output; the check must then FAIL")
    return p.parse_args(argv)


def make_data(batch, seq, hidden, seed):
    rng = np.random.default_rng(seed)
    bf16 = bfloat16()
    x = (rng.standard_normal((batch, seq, hidden), dtype=np.float32) * 1.5 + 0.2).astype(bf16)
    dy = (rng.standard_normal((batch, seq, hidden), dtype=np.float32) * 0.05).astype(bf16)
    # The forward pass's saved statistics, float32 as LayerNorm kernels keep them.
    mean, rstd = reference.layer_norm_stats(x, (hidden,))
    weight = (1 + 0.1 * rng.standard_normal(hidden, dtype=np.float32)).astype(np.float32)
    bias = (0.02 * rng.standard_normal(hidden, dtype=np.float32)).astype(np.float32)
    return dict(grad_out=dy, input=x, mean=mean.astype(np.float32),
                rstd=rstd.astype(np.float32), weight=weight, bias=bias)


def timed(stream, launch, repeats):
    """Median event time (device) and wall time (launch + synchronize) of ``launch()``, in ms,
    after one untimed warm-up run."""
    launch()
    stream.synchronize()
    device_ms, wall_ms = [], []
    for _ in range(repeats):
        start, end = acl_py.Event(), acl_py.Event()
        try:
            t0 = time.perf_counter()
            start.record(stream)
            launch()
            end.record(stream)
            stream.synchronize()
            wall_ms.append((time.perf_counter() - t0) * 1e3)
            device_ms.append(start.elapsed_ms(end))
        finally:
            start.close()
            end.close()
    return statistics.median(device_ms), statistics.median(wall_ms)


def main(argv=None) -> int:
    args = parse_args(argv)
    shape = [args.batch, args.seq, args.hidden]
    host = make_data(args.batch, args.seq, args.hidden, args.seed)
    m, n = args.batch * args.seq, args.hidden
    backend = acl_py.backend().name

    with acl_py.Device(0), acl_py.Stream() as stream:
        dev = {k: acl_py.DeviceTensor.from_numpy(v, stream=stream) for k, v in host.items()}
        norm = (args.hidden,)
        call_args = (dev["grad_out"], dev["input"], norm, dev["mean"], dev["rstd"],
                     dev["weight"], dev["bias"])

        # Correctness: one call, results copied back once.
        grad_input, grad_weight, grad_bias = acl_py.layer_norm_backward(*call_args,
                                                                        stream=stream)
        stream.synchronize()
        got = [grad_input.to_numpy(), grad_weight.to_numpy(), grad_bias.to_numpy()]

        # Timing: the one-call API, then the reusable plan writing into the same outputs.
        out = (grad_input, grad_weight, grad_bias)
        call_dev, call_wall = timed(
            stream, lambda: acl_py.layer_norm_backward(*call_args, out=out, stream=stream),
            args.repeats)
        with acl_py.LayerNormBackward(*call_args, out=out) as plan:
            plan_dev, plan_wall = timed(stream, lambda: plan.run(stream), args.repeats)
        for t in (*dev.values(), *out):
            t.close()

    want = reference.layer_norm_backward(host["grad_out"], host["input"], norm, host["mean"],
                                         host["rstd"], host["weight"])
    magnitude = reference.error_scale(host["grad_out"], host["input"], norm, host["mean"],
                                      host["rstd"], host["weight"])
    if args.perturb_reference:
        want = [w.copy() for w in want]
        for w in want:
            w.flat[w.size // 3] += args.perturb_reference * (1 + abs(w.flat[w.size // 3]))
    ratios = [reference.max_error_ratio(g, w, s, bfloat16())
              for g, w, s in zip(got, want, magnitude)]
    ok = all(r <= 1.0 for r in ratios)

    # Bytes each call must move at least once: dy, x, weight, mean, rstd in; the outputs out.
    moved = (2 * m * n * 2 + 2 * m * 4 + n * 4) + (m * n * 2 + 2 * n * 4)
    print(f"LayerNormBackward bf16, input {shape} (M={m}, N={n}), mean/rstd/weight float32, "
          f"backend {backend}")
    print("outputs: " + ", ".join(f"{name} {a.dtype} {list(a.shape)}" for name, a in
                                  zip(("grad_input", "grad_weight", "grad_bias"), got)))
    print("error / tolerance vs NumPy float64 (<= 1 passes): "
          + ", ".join(f"{name} {r:.3g}" for name, r in
                      zip(("grad_input", "grad_weight", "grad_bias"), ratios))
          + f" -> check: {'PASS' if ok else 'FAIL'}")
    for label, dev_ms, wall_ms in (("layer_norm_backward()", call_dev, call_wall),
                                   ("LayerNormBackward plan", plan_dev, plan_wall)):
        rate = f"{moved / (dev_ms * 1e-3) / 1e9:7.1f} GB/s effective" if dev_ms > 0 else ""
        print(f"{label:<24} median of {args.repeats}: {dev_ms:8.3f} ms (events), "
              f"{wall_ms:8.3f} ms wall {rate}".rstrip())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
