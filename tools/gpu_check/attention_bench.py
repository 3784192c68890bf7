#!/usr/bin/env python3
"""Times fused (flash) attention on one GPU and writes parasim measurement rows.

The calibration program (tools/calibrate) times materialised attention only: a fused kernel's
speed is that of the library a team installs. This script times PyTorch's scaled-dot-product
attention with one backend (FlashAttention-2 or cuDNN's fused attention, which Transformer
Engine uses on Hopper), causal, bf16, forward and forward + backward, and writes the
`attention:` rows of a measurements file (hardware/measurements.h) for `parasim fit`:

    python3 tools/gpu_check/attention_bench.py --backend cudnn --out flash-cudnn.yaml
    parasim fit flash-cudnn.yaml --out profile.yaml      # attention_flash: {forward, backward}

Shapes: (micro-batch, heads on one GPU, sequence, head dim) of the H100 weak-scaling runs
(tests/validation/regimes) and of Llama-style layers.
"""
import argparse
import sys

import torch

from gpu_timing import require_gpu, timed, warm_up, write_measurements
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [
    (4, 16, 4096, 128),  # GPT 1.7B, micro-batch 4, seq 4096
    (2, 16, 4096, 128),  # GPT 7.1B at TP2 (32 heads / 2), micro-batch 2
    (1, 12, 4096, 128),  # GPT 16B at TP4 (48 / 4)
    (1, 7, 4096, 128),  # GPT 32B at TP8 (56 / 8)
    (8, 32, 2048, 128),  # Llama-style 8B layer, seq 2048
    (1, 8, 8192, 128),  # Llama 3 70B at TP8, seq 8192
]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=sorted(BACKENDS), default="cudnn")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    if not require_gpu("attention_bench"):
        return 2
    warm_up()
    rows = []
    for b, h, s, d in SHAPES:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16,
                               requires_grad=True) for _ in range(3))
        grad = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        with sdpa_kernel(BACKENDS[args.backend]):
            def fwd():
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

            def fwd_bwd():
                o = fwd()
                o.backward(grad)

            try:
                tf, sf = timed(fwd, args.runs)
                tfb, sfb = timed(fwd_bwd, args.runs)
            except RuntimeError as e:  # the backend refuses the shape
                print(f"{b}x{h}x{s}x{d}: {args.backend} refused: {e}", file=sys.stderr)
                continue
        tb = tfb - tf
        flops = 4 * b * h * s * s * d / 2  # causal: half of 4 b h s^2 d
        print(f"{args.backend} b{b} h{h} s{s} d{d}: fwd {tf * 1e3:.3f} ms "
              f"({flops / tf / 1e12:.0f} TFLOP/s), bwd {tb * 1e3:.3f} ms "
              f"({2 * flops / tb / 1e12:.0f} TFLOP/s)", file=sys.stderr)
        rows.append(f"  - {{kind: flash, batch: {b * h}, seq: {s}, head_dim: {d}, causal: true, "
                    f"forward: {tf * 1e6:.6g}us, backward: {tb * 1e6:.6g}us, "
                    f"spread: {100 * max(sf, sfb):.3g}%}}")
    write_measurements(args.out, f"tools/gpu_check/attention_bench.py --backend {args.backend}: "
                       f"PyTorch {torch.__version__} scaled_dot_product_attention, causal, bf16",
                       "attention", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
