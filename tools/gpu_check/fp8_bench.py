#!/usr/bin/env python3
"""Times the FP8 quantisation kernels of the two FP8 training recipes on one GPU.

An FP8 GEMM needs its bf16 inputs cast to E4M3 with scales. parasim prices that cast as a
memory-bound kernel (read 2 bytes, write 1 byte per element, plus the scales): this script
measures it as the recipes run it, so that `docs/MODEL.md` can set the priced time beside the
measured one:

- tensorwise (Transformer Engine's per-tensor scaling): the amax of the tensor, then the cast;
  with delayed scaling the amax comes from history and only the cast runs.
- blockwise (DeepSeek-V3, arXiv 2412.19437 Sec. 3.3.2): activations and gradients scaled per
  1x128 tile, weights per 128x128 block, each cast one fused kernel (torch.compile/Triton).

It writes `memory:` rows of a measurements file (hardware/measurements.h; `bytes` is what the
kernel reads plus writes) and prints the achieved GB/s:

    python3 tools/gpu_check/fp8_bench.py --out fp8-quantize.yaml
"""
import argparse
import sys

import torch

from gpu_timing import require_gpu, timed, warm_up, write_measurements

# Tensors a DeepSeek-V3 layer casts for one micro-batch of 4096 tokens (hidden 7168, MLA
# output 128 x 128, expert intermediate 2048, tokens per expert 8192 at EP64), and a weight.
ACTIVATIONS = [(4096, 7168), (4096, 16384), (8192, 7168), (8192, 2048), (16384, 7168)]
WEIGHTS = [(7168, 18432), (4096, 7168), (2048, 7168)]
E4M3_MAX = 448.0


def cast_tensorwise(x, scale):
    return (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def amax(x):
    return x.abs().amax().float()


def cast_1x128(x):
    rows, cols = x.shape
    t = x.float().view(rows, cols // 128, 128)
    s = t.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / E4M3_MAX
    return (t / s).to(torch.float8_e4m3fn).view(rows, cols), s.squeeze(-1)


def cast_128x128(w):
    rows, cols = w.shape
    t = w.float().view(rows // 128, 128, cols // 128, 128)
    s = t.abs().amax(dim=(1, 3), keepdim=True).clamp(min=1e-12) / E4M3_MAX
    return (t / s).to(torch.float8_e4m3fn).view(rows, cols), s.squeeze()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    if not require_gpu("fp8_bench"):
        return 2
    compiled = {}
    for name, fn in (("tensorwise", cast_tensorwise), ("amax", amax), ("1x128", cast_1x128),
                     ("128x128", cast_128x128)):
        try:
            compiled[name] = torch.compile(fn, dynamic=False)
        except Exception as e:  # no Triton: eager kernels (slower, several passes)
            print(f"torch.compile unavailable ({e}); timing eager {name}", file=sys.stderr)
            compiled[name] = fn
    warm_up()
    rows = []

    def row(kernel, shape, nbytes, t, spread):
        n = shape[0] * shape[1]
        print(f"{kernel:24s} {shape[0]:6d} x {shape[1]:6d}: {t * 1e6:8.1f} us, "
              f"{nbytes / t / 1e9:6.0f} GB/s ({nbytes / n:.3f} B/elt)", file=sys.stderr)
        rows.append(f"  - {{kernel: {kernel}, bytes: {int(nbytes)}B, time: {t * 1e6:.6g}us, "
                    f"spread: {100 * spread:.3g}%}}")

    for shape in ACTIVATIONS:
        a = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
        n = a.numel()
        scale = torch.tensor(1.0, device="cuda")
        t, s = timed(lambda: compiled["tensorwise"](a, scale), args.runs, 20)
        row("fp8-cast-tensorwise", shape, 3 * n, t, s)  # read bf16, write e4m3
        t, s = timed(lambda: compiled["amax"](a), args.runs, 20)
        row("fp8-amax", shape, 2 * n, t, s)
        t, s = timed(lambda: compiled["1x128"](a), args.runs, 20)
        row("fp8-cast-1x128", shape, 3 * n + 4 * n // 128, t, s)
    for shape in WEIGHTS:
        w = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
        n = w.numel()
        t, s = timed(lambda: compiled["128x128"](w), args.runs, 20)
        row("fp8-cast-128x128", shape, 3 * n + 4 * n // (128 * 128), t, s)
    write_measurements(args.out, f"tools/gpu_check/fp8_bench.py: PyTorch {torch.__version__}, "
                       "torch.compile casts bf16 -> e4m3 (tensorwise, 1x128 tiles, 128x128 blocks)",
                       "memory", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
