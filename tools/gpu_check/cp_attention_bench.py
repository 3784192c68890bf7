#!/usr/bin/env python3
"""Times the attention one rank runs under all-gather context parallelism (Llama 3's CP, 2024:
K and V all-gathered, each rank's queries in two load-balanced chunks), on one GPU, to set
against parasim's replay of the same layout (tools/gpu_check/README.md).

The sequence of `--seq` tokens is cut into 2 x cp chunks; rank r holds chunks r and 2cp-1-r,
and each chunk attends to the keys before it and to itself (a causal mask aligned to the
lower right: chunk i's queries against the first (i + 1) x chunk keys). Heads are one tensor-
parallel rank's (`--heads` query heads, `--kv-heads` key/value heads, grouped), bf16, head
dim 128. For each rank listed, the forward and the backward of its two chunks (median of
timed runs, CUDA events), the causal FLOPs they do, and the rate. Output: JSON lines.

With `--whole` the sequence runs as one causal attention (no CP), and `--qk-dim`/`--v-dim` set
the head dims (DeepSeek's MLA: 192 and 128).

Usage: python3 cp_attention_bench.py [--seq 131072] [--cp 16] [--heads 16] [--kv-heads 1]
                                     [--ranks 0,8,15] [--whole] [--qk-dim D] [--v-dim D]
                                     [--out FILE]
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

from gpu_timing import timed


def median_ms(fn, reps):
    """The median of `reps` timed calls of `fn` (gpu_timing.timed), in milliseconds."""
    return timed(fn, reps)[0] * 1e3


def chunk(q_len, kv_len, heads, kv_heads, d, backend, reps, dv=None):
    dev, dt = "cuda", torch.bfloat16
    dv = dv or d
    q = torch.randn(1, heads, q_len, d, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(1, kv_heads, kv_len, d, device=dev, dtype=dt)
    v = torch.randn(1, kv_heads, kv_len, dv, device=dev, dtype=dt)
    # Grouped heads as Transformer Engine runs them: each K/V head serves heads / kv_heads queries.
    k = k.repeat_interleave(heads // kv_heads, dim=1).requires_grad_()
    v = v.repeat_interleave(heads // kv_heads, dim=1).requires_grad_()
    mask = causal_lower_right(q_len, kv_len) if kv_len != q_len else None
    causal = mask is None

    def fwd():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    o = fwd()
    g = torch.randn_like(o)
    f_ms = median_ms(fwd, reps)
    b_ms = median_ms(lambda: torch.autograd.grad(fwd(), (q, k, v), g), reps) - f_ms
    # Causal FLOPs: 2 (d + dv) per (query, key) pair of the lower-right triangle, per head.
    pairs = q_len * kv_len - q_len * (q_len - 1) / 2
    return f_ms, b_ms, 2 * (d + dv) * heads * pairs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=131072)
    ap.add_argument("--cp", type=int, default=16)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--ranks", default="0,8,15")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--qk-dim", type=int, default=128)
    ap.add_argument("--v-dim", type=int, default=0, help="value head dim (0: as --qk-dim; MLA: 128)")
    ap.add_argument("--whole", action="store_true",
                    help="one causal sequence of --seq tokens (no context parallelism)")
    ap.add_argument("--out")
    a = ap.parse_args()
    n = 2 * a.cp
    c = a.seq // n
    out = open(a.out, "a") if a.out else None
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        for r in (int(x) for x in a.ranks.split(",")):
            try:
                spans = [(a.seq, a.seq)] if a.whole else [(c, (i + 1) * c) for i in (r, n - 1 - r)]
                parts = [chunk(ql, kl, a.heads, a.kv_heads, a.qk_dim, backend, a.reps, a.v_dim)
                         for ql, kl in spans]
            except Exception as ex:  # a backend that refuses the shape: say so, go on
                rec = {"backend": name, "rank": r, "error": f"{type(ex).__name__}: {ex}"[:300]}
            else:
                f_ms = sum(p[0] for p in parts)
                b_ms = sum(p[1] for p in parts)
                flops = sum(p[2] for p in parts)
                rec = {"backend": name, "rank": r, "seq": a.seq, "cp": 1 if a.whole else a.cp,
                       "heads": a.heads, "kv_heads": a.kv_heads, "qk_dim": a.qk_dim,
                       "v_dim": a.v_dim or a.qk_dim, "chunk": a.seq if a.whole else c,
                       "forward_ms": round(f_ms, 3),
                       "backward_ms": round(b_ms, 3), "causal_flops": flops,
                       "forward_tflops": round(flops / f_ms / 1e9, 1),
                       # parasim's convention (models/layer_graph.cc, attention_bench.py):
                       # the backward's FLOPs are twice the forward's.
                       "backward_tflops": round(2 * flops / b_ms / 1e9, 1)}
            rec.update(meta)
            print(json.dumps(rec), flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()


if __name__ == "__main__":
    sys.exit(main())
