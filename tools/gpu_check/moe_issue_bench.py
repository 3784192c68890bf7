"""How long a dropless MoE layer's experts take when the host issues them one expert at a time.

Megatron-Core's dropless MoE learns each expert's token count on the host (a device-to-host
synchronisation) and Transformer Engine's grouped Linear then issues a GEMM, and under FP8 its
quantization, per local expert. Where those kernels are shorter than the host takes to issue
them, the GPU waits. docs/MODEL.md ("Megatron-Bridge on B200 and GB200") reads a cost of
0.13-1.24 ms per local expert, layer and micro-batch out of NVIDIA's published runs; this
measures the per-expert host cost on the GPU at hand, for the replay to price.

For each (local experts, tokens per expert) it times one layer's expert work forward and
backward (fc1 with gate and up, the activation, fc2; their input and weight gradients), issued
expert by expert from Python right after a synchronisation, against the same kernels replayed
from a CUDA graph (the GPU's own time). It prints JSON lines:

  {"experts": 16, "tokens": 2048, "hidden": 2048, "ffn": 768, "dtype": "bf16",
   "issued_ms": ..., "graph_ms": ..., "gap_per_expert_ms": ...}

  python3 tools/gpu_check/moe_issue_bench.py [--dtype bf16|fp8] [--out FILE]
"""
import argparse
import json
import statistics
import sys
import time

import torch

from gpu_timing import require_gpu, timed, warm_up


def layer(xs, w1s, w2s, grads):
    """One MoE layer's experts, forward and backward, one expert after another (six GEMMs and a
    few element-wise kernels a local expert, as a grouped Linear without a grouped kernel issues
    them)."""
    for x, w1, w2, g in zip(xs, w1s, w2s, grads):
        h = x @ w1  # fc1: gate and up
        a, b = h.chunk(2, dim=-1)
        act = torch.nn.functional.silu(a) * b
        y = act @ w2  # fc2
        d_act = g @ w2.t()  # fc2 input gradient
        _ = act.t() @ g  # fc2 weight gradient
        d_h = torch.cat([d_act * b, d_act * a], dim=-1)  # the activation's backward, roughly
        _ = d_h @ w1.t()  # fc1 input gradient
        _ = x.t() @ d_h  # fc1 weight gradient
        del y


def issued_seconds(fn, runs):
    """Median wall time of `fn` issued from the host after a synchronisation, until the GPU is done."""
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", choices=["bf16"], default="bf16")
    ap.add_argument("--hidden", type=int, default=2048)  # Qwen3 30B-A3B
    ap.add_argument("--ffn", type=int, default=768)  # its expert width
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not require_gpu("moe_issue_bench"):
        return 1
    warm_up()
    dev, dt = "cuda", torch.bfloat16
    rows = []
    for experts in (4, 8, 16, 32):
        for tokens in (512, 2048, 8192):
            xs = [torch.randn(tokens, args.hidden, device=dev, dtype=dt) for _ in range(experts)]
            w1s = [torch.randn(args.hidden, 2 * args.ffn, device=dev, dtype=dt) for _ in range(experts)]
            w2s = [torch.randn(args.ffn, args.hidden, device=dev, dtype=dt) for _ in range(experts)]
            grads = [torch.randn(tokens, args.hidden, device=dev, dtype=dt) for _ in range(experts)]
            fn = lambda: layer(xs, w1s, w2s, grads)  # noqa: E731
            for _ in range(3):
                fn()
            issued = issued_seconds(fn, args.runs)
            graph, _ = timed(fn, args.runs, batch=2)
            row = {
                "experts": experts,
                "tokens": tokens,
                "hidden": args.hidden,
                "ffn": args.ffn,
                "dtype": args.dtype,
                "issued_ms": round(issued * 1e3, 4),
                "graph_ms": round(graph * 1e3, 4),
                "gap_per_expert_ms": round(max(issued - graph, 0) / experts * 1e3, 4),
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
