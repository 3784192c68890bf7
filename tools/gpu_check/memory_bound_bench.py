#!/usr/bin/env python3
"""Achieved HBM bandwidth of a training step's memory-bound kernels, against a plain copy.

parasim prices a memory-bound op as its bytes over the catalog's HBM bandwidth times
`memory_efficiency`, which the catalog takes from a streaming copy. This times the kinds of
memory-bound kernels a Megatron-style step runs (copy, residual add, LayerNorm forward and
backward, GeLU, dropout, an fp32 softmax over vocabulary rows) at training sizes, in bf16, each
replayed from a CUDA graph, and prints the bandwidth each reached: the bytes it must move
(each input read once, each output written once) over its time. Run it on two GPUs (an H100
and an H200) to see how far an HBM upgrade carries a step's memory-bound work.

Output: one JSON object per op and size and line (op, rows, cols, bytes, seconds, GB/s).

Usage: python3 memory_bound_bench.py [--out FILE] [--runs 20]
"""
import argparse
import json

import torch
import torch.nn.functional as F

from gpu_timing import finish, require_gpu, timed, warm_up

# Rows x columns of the activations: 16K tokens (4 sequences of 4,096) at hidden 2,048 and 8,192,
# 64K tokens at 8,192, and 16K tokens of a 131,072-token vocabulary's logits.
SHAPES = [(16384, 2048), (16384, 8192), (65536, 8192)]
LOGITS = (16384, 131072)


def ops(rows, cols):
    """name -> (callable, bytes it must move) for one activation shape, bf16."""
    dt = torch.bfloat16
    x = torch.randn(rows, cols, device="cuda", dtype=dt)
    y = torch.empty_like(x)
    r = torch.randn_like(x)
    w = torch.randn(cols, device="cuda", dtype=dt)
    b = torch.randn(cols, device="cuda", dtype=dt)
    dy = torch.randn_like(x)
    xg = x.clone().requires_grad_(True)
    n = x.numel()
    e = x.element_size()

    def ln_fwd_bwd():
        out = F.layer_norm(xg, (cols,), w, b)
        torch.autograd.grad(out, xg, dy)

    return {
        # read x, write y
        "copy": (lambda: y.copy_(x), 2 * n * e),
        # read x and the residual, write the sum
        "add": (lambda: torch.add(x, r, out=y), 3 * n * e),
        # forward reads x and writes y; backward reads x, dy and writes dx
        "layer_norm_fwd_bwd": (ln_fwd_bwd, 5 * n * e),
        # read x, write y
        "gelu_tanh": (lambda: F.gelu(x, approximate="tanh"), 2 * n * e),
        # read x, write y and a one-byte mask
        "dropout": (lambda: F.dropout(x, 0.1, training=True), 2 * n * e + n),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="JSON lines file to write")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    if not require_gpu("memory_bound_bench"):
        return 1
    warm_up()
    rows_out = []
    for rows, cols in SHAPES:
        for name, (fn, nbytes) in ops(rows, cols).items():
            t, spread = timed(fn, args.runs, batch=10)
            row = {"op": name, "rows": rows, "cols": cols, "bytes": nbytes, "seconds": t,
                   "spread": round(spread, 4), "gb_s": round(nbytes / t / 1e9, 1)}
            print(json.dumps(row), flush=True)
            rows_out.append(row)
        torch.cuda.empty_cache()
    # The fp32 softmax of Megatron's vocab cross-entropy, after its cast of the bf16 logits.
    rows, cols = LOGITS
    logits = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    nbytes = logits.numel() * (2 + 4 + 4 + 4)
    t, spread = timed(lambda: torch.softmax(logits.float(), dim=-1), args.runs, batch=4)
    row = {"op": "softmax_fp32", "rows": rows, "cols": cols, "bytes": nbytes, "seconds": t,
           "spread": round(spread, 4), "gb_s": round(nbytes / t / 1e9, 1),
           "note": "logits.float() (read bf16, write fp32), then softmax (read and write fp32)"}
    print(json.dumps(row), flush=True)
    rows_out.append(row)
    finish(rows_out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
