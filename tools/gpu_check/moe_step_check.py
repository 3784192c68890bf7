"""Does the host's per-expert issue time show in a dropless MoE step's forward, its backward, or both?

A stack of layers, each a dense MLP and a dropless MoE block (router, token counts learned on
the host, permutation, experts issued one at a time from Python, combine), trained with
autograd. The forward synchronises once a layer (the token counts); the backward does not, so
its host may run ahead of the GPU behind the dense layers' long kernels. For each dense width it
prints, per pass, the wall time, the host's issue time (until the call returns) and the GPU's
busy time (the profiler's kernel durations summed):

  {"dense_ffn": 8192, "pass": "backward", "wall_ms": ..., "host_ms": ..., "gpu_ms": ...,
   "kernels": ...}

A pass whose wall time is its GPU time hides the host; one whose wall time is the host's or the
sum of both exposes it. docs/MODEL.md ("Dropless experts issued from the host") reads them.

  python3 tools/gpu_check/moe_step_check.py [--out FILE]
"""
import argparse
import json
import statistics
import sys
import time

import torch

from gpu_timing import cuda_kernels, finish, require_gpu, warm_up

TOKENS, HIDDEN, EXPERTS, TOP_K, EXPERT_FFN, LAYERS = 4096, 2048, 16, 2, 768, 8


def make_params(dense_ffn):
    def p(*shape):
        return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) / shape[0] ** 0.5
                ).requires_grad_()

    return [dict(d1=p(HIDDEN, dense_ffn), d2=p(dense_ffn, HIDDEN), router=p(HIDDEN, EXPERTS),
                 w1=[p(HIDDEN, 2 * EXPERT_FFN) for _ in range(EXPERTS)],
                 w2=[p(EXPERT_FFN, HIDDEN) for _ in range(EXPERTS)]) for _ in range(LAYERS)]


def forward(x, params):
    for lp in params:
        x = x + torch.relu(x @ lp["d1"]) @ lp["d2"]
        probs = torch.softmax((x @ lp["router"]).float(), dim=-1)
        w, idx = torch.topk(probs, TOP_K, dim=-1)
        flat = idx.flatten()
        counts = torch.bincount(flat, minlength=EXPERTS).tolist()  # the synchronisation
        order = torch.argsort(flat, stable=True)
        src = order // TOP_K
        parts = x.index_select(0, src).split(counts)
        outs = []
        for part, w1, w2 in zip(parts, lp["w1"], lp["w2"]):
            a, b = (part @ w1).chunk(2, dim=-1)
            outs.append((torch.nn.functional.silu(a) * b) @ w2)
        y = torch.cat(outs) * w.flatten()[order].unsqueeze(-1).to(x.dtype)
        x = x + torch.zeros_like(x).index_add(0, src, y)
    return x.float().square().mean()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dense", default="1024,8192,32768", help="dense MLP widths")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not require_gpu("moe_step_check"):
        return 1
    warm_up()
    rows = []
    x0 = torch.randn(TOKENS, HIDDEN, device="cuda", dtype=torch.bfloat16)
    for dense in (int(v) for v in args.dense.split(",")):
        params = make_params(dense)
        walls = {"forward": [], "backward": []}
        hosts = {"forward": [], "backward": []}
        for i in range(args.runs + 2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = forward(x0, params)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            loss.backward()
            t3 = time.perf_counter()
            torch.cuda.synchronize()
            t4 = time.perf_counter()
            for lp in params:  # fresh gradients each step, as after an optimizer's zero_grad
                for t in [lp["d1"], lp["d2"], lp["router"], *lp["w1"], *lp["w2"]]:
                    t.grad = None
            if i >= 2:
                walls["forward"].append(t2 - t0)
                hosts["forward"].append(t1 - t0)
                walls["backward"].append(t4 - t2)
                hosts["backward"].append(t3 - t2)
        fwd_kernels, fwd_gpu = cuda_kernels(lambda: forward(x0, params))
        loss = forward(x0, params)
        torch.cuda.synchronize()
        bwd_kernels, bwd_gpu = cuda_kernels(loss.backward)
        for lp in params:
            for t in [lp["d1"], lp["d2"], lp["router"], *lp["w1"], *lp["w2"]]:
                t.grad = None
        for name, gpu, kernels in (("forward", fwd_gpu, fwd_kernels),
                                   ("backward", bwd_gpu, bwd_kernels)):
            row = {"dense_ffn": dense, "pass": name, "layers": LAYERS, "experts": EXPERTS,
                   "tokens_per_expert": TOKENS * TOP_K // EXPERTS,
                   "wall_ms": round(statistics.median(walls[name]) * 1e3, 3),
                   "host_ms": round(statistics.median(hosts[name]) * 1e3, 3),
                   "gpu_ms": round(gpu, 3), "kernels": kernels}
            rows.append(row)
            print(json.dumps(row), flush=True)
        del params
        torch.cuda.empty_cache()
    finish(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
