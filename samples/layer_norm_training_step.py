"""A transformer layer's LayerNorm, forward and backward, as one training step on the device.

Activations [batch, sequence, hidden] in bf16 or fp16 with float32 master weight and bias,
as mixed-precision training keeps them. Everything stays on the device between the two
operators: the forward (``acl_py.layer_norm``) writes the output and the float32 statistics
(mean, rstd shaped [batch, sequence, 1]); the backward (``acl_py.layer_norm_backward``) takes
those very tensors, with the upstream gradient, and gives grad_input (in the activations'
dtype) and grad_weight/grad_bias (float32, for the optimizer). Both run on one stream, each
through a reusable plan (phase one once); the host synchronizes once, at the end, and copies
the results back.

Check: the same step in NumPy float64 (acl_py.reference: the forward, then the backward fed
the reference's own statistics) bounds every element of all five results by
``RTOL[dtype] * magnitude + half an ulp`` of its dtype; printed as the worst element's
error / its bound (<= 1 passes).

    python samples/layer_norm_training_step.py [--dtype bf16|fp16|both] [--batch 4]
                                               [--seq 256] [--hidden 1024] [--steps 3]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import acl_py
from acl_py import reference
from acl_py.dtypes import bfloat16

DTYPES = {"bf16": bfloat16, "fp16": lambda: np.dtype(np.float16)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtype", choices=["bf16", "fp16", "both"], default="both")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--steps", type=int, default=3, help="training steps run (same tensors)")
    p.add_argument("--eps", type=float, default=1e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perturb-reference", type=float, default=0.0, metavar="X",
                   help="self-test of the check: add X * (1 + |value|) to one expected element "
                        "of each result; the check must then FAIL")
    return p.parse_args(argv)


def make_data(dt, batch, seq, hidden, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((batch, seq, hidden), dtype=np.float32) * 1.5 + 0.2).astype(dt)
    dy = (rng.standard_normal((batch, seq, hidden), dtype=np.float32) * 0.05).astype(dt)
    weight = (1 + 0.1 * rng.standard_normal(hidden, dtype=np.float32)).astype(np.float32)
    bias = (0.02 * rng.standard_normal(hidden, dtype=np.float32)).astype(np.float32)
    return x, dy, weight, bias


def training_step(x, dy, weight, bias, eps, steps):
    """Forward and backward on the device; returns the five results as NumPy arrays."""
    hidden = (x.shape[-1],)
    with acl_py.Stream() as stream:
        X, DY, W, B = (acl_py.DeviceTensor.from_numpy(a) for a in (x, dy, weight, bias))
        with acl_py.LayerNorm(X, hidden, W, B, eps) as forward, \
                acl_py.LayerNormBackward(DY, X, hidden, forward.mean, forward.rstd, W, B) \
                as backward:
            for _ in range(steps):
                forward.run(stream)
                backward.run(stream)   # the stream orders it after the forward
            stream.synchronize()
            results = [t.to_numpy() for t in (forward.out, forward.mean, forward.rstd,
                                              backward.grad_input, backward.grad_weight)]
            results.append(backward.grad_bias.to_numpy())
        for t in (X, DY, W, B):
            t.close()
    return results


def reference_step(x, dy, weight, bias, eps):
    """The same step in float64, and the error scales of each result."""
    hidden = (x.shape[-1],)
    out, mean, rstd = reference.layer_norm(x, hidden, weight, bias, eps)
    fscale = reference.layer_norm_error_scale(x, hidden, weight, bias, eps)
    grads = reference.layer_norm_backward(dy, x, hidden, mean, rstd, weight)
    bscale = reference.error_scale(dy, x, hidden, mean, rstd, weight)
    return [out, mean, rstd, *grads], [*fscale, *bscale]


def main(argv=None) -> int:
    args = parse_args(argv)
    names = ("out", "mean", "rstd", "grad_input", "grad_weight", "grad_bias")
    ok = True
    for label in (["bf16", "fp16"] if args.dtype == "both" else [args.dtype]):
        dt = DTYPES[label]()
        x, dy, weight, bias = make_data(dt, args.batch, args.seq, args.hidden, args.seed)
        got = training_step(x, dy, weight, bias, args.eps, args.steps)
        expected, scales = reference_step(x, dy, weight, bias, args.eps)
        print(f"{label}: LayerNorm forward + backward, [{args.batch}, {args.seq}, "
              f"{args.hidden}], {args.steps} step(s) on one stream")
        for name, g, e, s in zip(names, got, expected, scales):
            if args.perturb_reference:
                e = e.copy()
                e.flat[e.size // 2] += args.perturb_reference * (1 + abs(e.flat[e.size // 2]))
            ratio = reference.max_error_ratio(g.reshape(e.shape), e, s, dt)
            good = ratio <= 1.0
            ok &= good
            print(f"  {name:<11} {str(g.dtype):<8} {str(g.shape):<16} error/bound "
                  f"{ratio:.3g}  {'ok' if good else 'FAIL'}")
    print("PASS" if ok else "FAIL: results outside the reference's bound")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
