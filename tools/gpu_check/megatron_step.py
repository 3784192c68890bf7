#!/usr/bin/env python3
"""Times the per-GPU compute of Megatron-LM-style GPT runs on one GPU, to set against parasim's
op-level replay of the same layout (tools/gpu_check/README.md, "Megatron-style compute").

Unlike torch_step.py (eager PyTorch, autocast, fp32 weights), this mirrors how Megatron-Core
runs a layer: bf16 weights (no per-micro-batch casts), element-wise ops fused (torch.compile
stands in for Transformer Engine's fused LayerNorm and bias-GeLU), fused causal attention
(PyTorch SDPA, cuDNN backend where it takes the shape, as Transformer Engine prefers on
Hopper), hidden dropout 0.1, the LM head and Megatron's fp32 vocab cross-entropy (softmax kept
for the backward).

A configuration may be a tensor-parallel shard: `tp` divides heads and the FFN as Megatron's
column/row-parallel linears do, and with `sp` the LayerNorms, dropouts and residuals run on
s/tp tokens. The collectives are not run (one GPU): the all-gather before QKV and fc1 is
stood in for by a copy (`repeat`) and the reduce-scatter after the output projection and fc2
by taking the first s/tp tokens, so GEMM and attention shapes are the shard's. The profiler's
per-kind kernel sums (GEMM, attention, other) are what to compare; "other" includes the copies.

Output: one JSON object per configuration and line: forward and backward milliseconds per
micro-batch (median of timed iterations, CUDA events), peak memory, the kernel-kind sums of one
profiled micro-batch and its ten largest kernels.

Usage: python3 megatron_step.py [--out FILE] [--iters 8] [--configs NAME,...] [--eager]
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# name: layers to run, hidden, heads, ffn, vocab (0 = no LM head), seq, micro-batch, tp, sp.
# The shapes are the Megatron-LM README's H100 weak-scaling table
# (tests/validation/regimes/megatron-lm-h100-weak-scaling.yaml) and the micro-batch parasim's
# sweep picks for each case. Shards run a few layers: each layer is the same.
CONFIGS = {
    "mcore-1.7b-mb4": dict(layers=24, h=2048, heads=16, ffn=8192, vocab=131072, seq=4096, mb=4,
                           tp=1, sp=False),
    "mcore-1.7b-mb1": dict(layers=24, h=2048, heads=16, ffn=8192, vocab=131072, seq=4096, mb=1,
                           tp=1, sp=False),
    "mcore-7.1b-tp2-mb4-layers": dict(layers=4, h=4096, heads=32, ffn=16384, vocab=0, seq=4096,
                                      mb=4, tp=2, sp=True),
    "mcore-16b-tp4-mb4-layers": dict(layers=4, h=6144, heads=48, ffn=24576, vocab=0, seq=4096,
                                     mb=4, tp=4, sp=True),
    "mcore-32b-tp8-mb4-layers": dict(layers=4, h=7168, heads=56, ffn=28672, vocab=0, seq=4096,
                                     mb=4, tp=8, sp=True),
    "mcore-119b-tp8-mb1-layers": dict(layers=4, h=10240, heads=80, ffn=40960, vocab=0, seq=4096,
                                      mb=1, tp=8, sp=True),
}


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, tp = c["h"], c["tp"]
        self.tp = tp
        self.sp = c["sp"]
        self.heads = c["heads"] // tp
        self.d = h // c["heads"]
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h // tp)
        self.proj = nn.Linear(h // tp, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, c["ffn"] // tp)
        self.fc2 = nn.Linear(c["ffn"] // tp, h)

    def gather(self, x):  # stands in for the sequence-parallel all-gather
        return x.repeat(1, self.tp, 1) if self.sp and self.tp > 1 else x

    def scatter(self, x):  # stands in for the reduce-scatter (or the all-reduce without sp)
        return x[:, : x.shape[1] // self.tp] if self.sp and self.tp > 1 else x

    def forward(self, x):
        b = x.shape[0]
        y = self.gather(self.ln1(x))
        s = y.shape[1]
        q, k, v = self.qkv(y).view(b, s, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b, s, self.heads * self.d)
        x = x + F.dropout(self.scatter(self.proj(a)), 0.1, self.training)
        y = self.gather(self.ln2(x))
        y = self.fc2(F.gelu(self.fc1(y), approximate="tanh"))
        return x + F.dropout(self.scatter(y), 0.1, self.training)


class VocabCrossEntropy(torch.autograd.Function):
    """Megatron's vocab_parallel_cross_entropy at tp=1: fp32 logits, max, exp, sum, the softmax
    kept for the backward (softmax - one-hot)."""

    @staticmethod
    def forward(ctx, logits, target):
        z = logits.float()
        z -= z.max(dim=-1, keepdim=True)[0]
        predicted = z.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        z.exp_()
        total = z.sum(dim=-1)
        z /= total.unsqueeze(-1)
        ctx.save_for_backward(z, target)
        return torch.log(total) - predicted

    @staticmethod
    def backward(ctx, grad):
        softmax, target = ctx.saved_tensors
        softmax.scatter_add_(-1, target.unsqueeze(-1),
                             -torch.ones_like(target, dtype=softmax.dtype).unsqueeze(-1))
        softmax.mul_(grad.unsqueeze(-1))
        return softmax.to(torch.bfloat16), None


class Model(nn.Module):
    def __init__(self, c, compile_blocks):
        super().__init__()
        self.c = c
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        # One compiled forward for every block (same shapes; the block is an argument).
        self.step = torch.compile(Block.forward) if compile_blocks else None
        if c["vocab"]:
            self.wte = nn.Embedding(c["vocab"], c["h"])
            self.wpe = nn.Embedding(c["seq"], c["h"])
            self.ln_f = nn.LayerNorm(c["h"])
            self.head = nn.Linear(c["h"], c["vocab"], bias=False)

    def forward(self, x, target):
        if self.c["vocab"]:
            x = self.wte(x) + self.wpe.weight[: x.shape[1]]
        for blk in self.blocks:
            x = self.step(blk, x) if self.step else blk(x)
        if not self.c["vocab"]:
            return x.float().square().mean()
        logits = self.head(self.ln_f(x))
        return VocabCrossEntropy.apply(logits, target).mean()


def kind(name):
    n = name.lower()
    if any(k in n for k in ("flash", "fmha", "cudnn", "attn", "attention", "sdpa")):
        return "attention"
    if any(k in n for k in ("gemm", "nvjet", "cutlass", "xmma", "wgmma", "cublas", "matmul")):
        return "gemm"
    return "other"


def profile(fn, trace_path):
    from torch.profiler import ProfilerActivity, profile as prof_ctx
    with prof_ctx(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    if trace_path:
        p.export_chrome_trace(trace_path)
    sums, per = {"gemm": 0.0, "attention": 0.0, "other": 0.0}, {}
    for e in p.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        sums[kind(e.name)] += us
        per[e.name] = per.get(e.name, 0.0) + us
    top = sorted(per.items(), key=lambda kv: -kv[1])[:10]
    return ({k: round(v / 1000, 3) for k, v in sums.items()},
            [[n[:90], round(v / 1000, 3)] for n, v in top])


def run(name, c, iters, use_compile, trace_dir, seconds=0):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Model(c, use_compile).to(dev, torch.bfloat16).train()
    s_in = c["seq"] // c["tp"] if c["sp"] and c["tp"] > 1 else c["seq"]
    if c["vocab"]:
        x = torch.randint(0, c["vocab"], (c["mb"], c["seq"]), device=dev)
    else:
        x = torch.randn(c["mb"], s_in, c["h"], device=dev, dtype=torch.bfloat16,
                        requires_grad=True)
    target = torch.randint(0, max(c["vocab"], 1), (c["mb"], c["seq"]), device=dev)

    def micro_batch(times=None):  # appends its (start, forward done, backward done) events
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record()
        loss = model(x, target)
        e[1].record()
        loss.backward()
        e[2].record()
        if times is not None:
            times.append(e)

    t0 = time.time()
    for _ in range(3):
        micro_batch()
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    torch.cuda.reset_peak_memory_stats()
    events = []
    for _ in range(iters):
        micro_batch(events)
    torch.cuda.synchronize()
    fwd = statistics.median(a.elapsed_time(b) for a, b, _ in events)
    bwd = statistics.median(b.elapsed_time(c2) for _, b, c2 in events)
    trace = f"{trace_dir}/{name}.json" if trace_dir else None
    sums, top = profile(micro_batch, trace)
    r = {"config": name, **c, "compiled": use_compile, "forward_ms": round(fwd, 3),
         "backward_ms": round(bwd, 3), "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
         "warmup_s": round(warm_s, 1), "kernel_ms": sums, "top_kernels": top}
    if seconds:
        r["sustained"] = sustained(micro_batch, seconds)
    return r


def sustained(work, seconds):
    """Runs `work` back to back for `seconds` and compares the last tenth of the run with its
    first second: how much the GPU's clocks give under a sustained load of this mix."""
    t0 = time.time()
    times, stamps = [], []
    while time.time() - t0 < seconds:
        events = []
        for _ in range(4):
            work(events)
        torch.cuda.synchronize()
        for a, _, c2 in events:
            times.append(a.elapsed_time(c2))
            stamps.append(time.time() - t0)
    first = [t for t, s in zip(times, stamps) if s <= 1.0] or times[:4]
    last = [t for t, s in zip(times, stamps) if s >= 0.9 * seconds] or times[-4:]
    return {"seconds": round(stamps[-1], 1), "iterations": len(times),
            "first_s_ms": round(statistics.median(first), 3),
            "last_tenth_ms": round(statistics.median(last), 3),
            "ratio": round(statistics.median(first) / statistics.median(last), 4)}


def gemm_burn(seconds, n=8192):
    """An n^3 bf16 GEMM back to back (random inputs), as the catalog's sustained factor was
    measured: the first second against the last tenth."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)

    def work(events):
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record()
        for _ in range(10):
            torch.mm(a, b)
        e[1].record()
        e[2].record()
        events.append(e)

    for _ in range(3):
        work([])
    r = sustained(work, seconds)
    r["tflops_first"] = round(10 * 2 * n**3 / r["first_s_ms"] / 1e9, 1)
    r["tflops_last"] = round(10 * 2 * n**3 / r["last_tenth_ms"] / 1e9, 1)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--eager", action="store_true", help="no torch.compile (element-wise unfused)")
    ap.add_argument("--trace-dir", help="write each configuration's profiled micro-batch here")
    ap.add_argument("--seconds", type=float, default=0,
                    help="then run each configuration back to back this long (sustained clocks)")
    ap.add_argument("--gemm-seconds", type=float, default=0,
                    help="first run an 8192^3 bf16 GEMM back to back this long")
    a = ap.parse_args()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = open(a.out, "a") if a.out else None
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda}
    print(json.dumps(meta), flush=True)
    if a.gemm_seconds:
        line = json.dumps({"config": "gemm-8192-burn", **gemm_burn(a.gemm_seconds), **meta})
        print(line, flush=True)
        if out:
            out.write(line + "\n")
    for name in a.configs.split(","):
        c = CONFIGS[name]
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
            try:
                r = run(name, c, a.iters, not a.eager, a.trace_dir, a.seconds)
            except Exception as ex:  # report and go on to the next configuration
                r = {"config": name, "error": f"{type(ex).__name__}: {ex}"[:400]}
        r.update(meta)
        line = json.dumps(r)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
