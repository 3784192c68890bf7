#!/usr/bin/env python3
"""Measures one-GPU training steps of GPT-style models in PyTorch, to set against `parasim run`.

The model mirrors the layer graph of models/layer_graph.cc op for op: learned positions,
LayerNorm, fused QKV, attention (materialised softmax + dropout, or PyTorch's fused
scaled_dot_product_attention, which dispatches to FlashAttention on Hopper), output projection,
dropout + residual, LayerNorm, fc1, GeLU, fc2, dropout + residual; tied LM head, fp32
cross-entropy. Mixed precision as parasim's 16-byte rule counts it: fp32 parameters and
gradients, bf16 autocast, Adam (fused) with two fp32 moments = 16 bytes per parameter.

Each configuration runs `--micro-batches` forward/backward passes and one optimizer step; the
step time is the median of timed steps after warm-up (CUDA events), the peak memory is
torch.cuda.max_memory_allocated over the timed steps. Output: one JSON object per line.

Usage: python3 torch_step.py [--out FILE] [--steps 8] [--configs NAME,...]
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# name: (layers, hidden, heads, vocab, seq, micro_batch, attention)
# Shapes of gpt3 XL (1.3B) and a 350M-class GPT (Brown et al. 2020, Table 2.1).
CONFIGS = {
    "gpt3-1.3b-b2-standard": (24, 2048, 16, 50257, 2048, 2, "standard"),
    "gpt3-1.3b-b4-flash": (24, 2048, 16, 50257, 2048, 4, "flash"),
    "gpt3-1.3b-b8-flash": (24, 2048, 16, 50257, 2048, 8, "flash"),
    "gpt3-350m-b4-standard": (24, 1024, 16, 50257, 2048, 4, "standard"),
    "gpt3-350m-b8-flash": (24, 1024, 16, 50257, 2048, 8, "flash"),
    "gpt-2.7b-b4-flash": (32, 2560, 32, 50257, 2048, 4, "flash"),
}


class Block(nn.Module):
    def __init__(self, h, heads, attention, p_drop):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.p = p_drop
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        if self.attention == "flash":
            a = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p, is_causal=True)
        else:
            # Materialised as Megatron's fused scale-mask-softmax keeps it: 16-bit scores (eager
            # autocast would run the softmax in fp32 and double the largest tensor).
            with torch.autocast("cuda", enabled=False):
                scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
                mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
                p = torch.softmax(scores.masked_fill_(mask, float("-inf")), dim=-1)
                a = torch.matmul(F.dropout(p, self.p), v)
        x = x + F.dropout(self.proj(a.transpose(1, 2).reshape(b, s, h)), self.p)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), self.p)


class Gpt(nn.Module):
    def __init__(self, layers, h, heads, vocab, seq, attention):
        super().__init__()
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(h, heads, attention, 0.1) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = F.dropout(self.wte(idx) + self.wpe(pos), 0.1)
        for blk in self.blocks:
            x = blk(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def measure(name, cfg, steps, micro_batches):
    layers, h, heads, vocab, seq, mb, attention = cfg
    torch.manual_seed(0)
    model = Gpt(layers, h, heads, vocab, seq, attention).cuda()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    data = torch.randint(0, vocab, (micro_batches, mb, seq + 1), device="cuda")

    def step():
        for i in range(micro_batches):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(data[i, :, :-1], data[i, :, 1:]) / micro_batches
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    out = {
        "name": name, "layers": layers, "hidden": h, "heads": heads, "vocab": vocab,
        "seq_len": seq, "micro_batch": mb, "micro_batches": micro_batches,
        "attention": attention, "params": params,
        "step_time_s": times[len(times) // 2], "step_time_min_s": times[0],
        "step_time_max_s": times[-1],
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
    }
    del model, opt, data
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="-")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    o = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_step.py: no CUDA device", file=sys.stderr)
        return 2
    f = sys.stdout if o.out == "-" else open(o.out, "w")
    for name in o.configs.split(","):
        t0 = time.time()
        r = measure(name, CONFIGS[name], o.steps, o.micro_batches)
        print(json.dumps(r), file=f, flush=True)
        print(f"{name}: {r['step_time_s']:.4f} s, peak {r['peak_memory_bytes'] / 2**30:.2f} GiB "
              f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
