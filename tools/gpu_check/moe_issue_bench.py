"""How long a dropless MoE layer's experts take when the host issues them one expert at a time.

Megatron-Core's dropless MoE learns each expert's token count on the host (a device-to-host
synchronisation) and Transformer Engine's grouped Linear then issues a GEMM, and under FP8 its
quantization, per local expert. Where those kernels are shorter than the host takes to issue
them, the GPU waits. docs/MODEL.md ("Megatron-Bridge on B200 and GB200") reads a cost of
0.13-1.24 ms per local expert, layer and micro-batch out of NVIDIA's published runs; this
measures the per-expert host cost on the GPU at hand, for the replay to price.

For each (mode, local experts, tokens per expert) it times one layer's expert work forward and
backward (fc1 with gate and up, the activation, fc2; their input and weight gradients):
- `issued_ms`: issued from Python right after a synchronisation, until the GPU is done;
- `host_ms`: how long Python took to issue it (the GPU may still be busy);
- `graph_ms`: the same kernels replayed from a CUDA graph (the GPU's own time);
- `kernels`: the kernels one layer launches (counted by the profiler).

Modes:
- `bf16`: bf16 GEMMs expert by expert;
- `fp8`: per-tensor current scaling as Transformer Engine's Float8CurrentScaling recipe runs it:
  each GEMM operand's amax, scale and E4M3 cast (the gradients' in E5M2), then `_scaled_mm`;
- `grouped`: bf16 through `torch._grouped_mm`, one kernel per GEMM for all experts (where this
  PyTorch has it), the floor a grouped kernel gives;
- `streams4`: `bf16` with the experts spread over four CUDA streams, as Transformer Engine's
  multi-stream cuBLAS runs them (its num_streams).

It also prints the host's cost of one eager op and the GPU's cost of one tiny kernel from a
graph (`{"probe": ...}` lines). JSON lines:

  python3 tools/gpu_check/moe_issue_bench.py [--modes bf16,fp8,grouped] [--out FILE]
"""
import argparse
import json
import statistics
import sys
import time

import torch

from gpu_timing import cuda_kernels, finish, require_gpu, timed, warm_up

E4M3_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
E5M2_MAX = 57344.0  # torch.finfo(torch.float8_e5m2).max


def bf16_expert(x, w1, w2, g):
    """One expert forward and backward: six GEMMs and the SwiGLU's element-wise kernels."""
    h = x @ w1  # fc1: gate and up
    a, b = h.chunk(2, dim=-1)
    act = torch.nn.functional.silu(a) * b
    _ = act @ w2  # fc2
    d_act = g @ w2.t()  # fc2 input gradient
    _ = act.t() @ g  # fc2 weight gradient
    d_h = torch.cat([d_act * b, d_act * a], dim=-1)  # the activation's backward, roughly
    _ = d_h @ w1.t()  # fc1 input gradient
    _ = x.t() @ d_h  # fc1 weight gradient


def quantize(t, fmt, fmax):
    """Current per-tensor scaling: amax, scale, cast (Transformer Engine's Float8CurrentScaling)."""
    amax = t.abs().amax().float().clamp(min=1e-12)
    scale = fmax / amax
    return (t.float() * scale).to(fmt), scale.reciprocal()


def mm8(a, b, fmt_a=torch.float8_e4m3fn, max_a=E4M3_MAX, fmt_b=torch.float8_e4m3fn,
        max_b=E4M3_MAX):
    """a @ b in FP8: both operands quantized, b laid out column-major as cuBLASLt wants it."""
    qa, sa = quantize(a, fmt_a, max_a)
    qb, sb = quantize(b.t().contiguous(), fmt_b, max_b)
    return torch._scaled_mm(qa, qb.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


def fp8_expert(x, w1, w2, g):
    """The same expert with every GEMM in FP8; gradients in E5M2 (the hybrid format)."""
    h = mm8(x, w1)
    a, b = h.chunk(2, dim=-1)
    act = torch.nn.functional.silu(a) * b
    _ = mm8(act, w2)
    d_act = mm8(g, w2.t(), torch.float8_e5m2, E5M2_MAX)
    _ = mm8(act.t().contiguous(), g, torch.float8_e4m3fn, E4M3_MAX, torch.float8_e5m2, E5M2_MAX)
    d_h = torch.cat([d_act * b, d_act * a], dim=-1)
    _ = mm8(d_h, w1.t(), torch.float8_e5m2, E5M2_MAX)
    _ = mm8(x.t().contiguous(), d_h, torch.float8_e4m3fn, E4M3_MAX, torch.float8_e5m2, E5M2_MAX)


def grouped_layer(x, w1, w2, g, offs):
    """All experts at once: x and g are the experts' rows stacked, w1 and w2 stacked weights."""
    gm = torch._grouped_mm
    h = gm(x, w1, offs=offs)
    a, b = h.chunk(2, dim=-1)
    act = torch.nn.functional.silu(a) * b
    _ = gm(act, w2, offs=offs)
    d_act = gm(g, w2.transpose(-2, -1), offs=offs)
    d_h = torch.cat([d_act * b, d_act * a], dim=-1)
    _ = gm(d_h, w1.transpose(-2, -1), offs=offs)
    # The weight gradients: one (K, N) product per expert over its rows.
    _ = gm(act.t(), g, offs=offs)
    _ = gm(x.t(), d_h, offs=offs)


def host_and_issued(fn, runs):
    """Medians of the host's issue time and of the time until the GPU is done, both from a
    synchronisation, seconds."""
    host, issued = [], []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append(t1 - t0)
        issued.append(t2 - t0)
    return statistics.median(host), statistics.median(issued)


def kernel_count(fn):
    """Kernels one call of `fn` launches, as the profiler lists them (0 without a profiler)."""
    try:
        return cuda_kernels(fn)[0]
    except Exception as e:  # noqa: BLE001 - no profiler: the row goes without its count
        print(f"no kernel count ({e})", file=sys.stderr)
        return 0


def probes():
    """The host's time per eager op (a one-element add) and the GPU's per tiny kernel in a graph."""
    a = torch.zeros(1, device="cuda")
    n = 2000
    for _ in range(100):
        a.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        a.add_(1)
    host = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    gpu, _ = timed(lambda: [a.add_(1) for _ in range(100)], 20, batch=2)
    rows = [{"probe": "eager_op_host_us", "value": round(host * 1e6, 3)},
            {"probe": "graph_tiny_kernel_us", "value": round(gpu / 100 * 1e6, 3)}]
    # A dropless dispatcher's per-layer work: route, count tokens per expert, learn the counts
    # on the host (the synchronisation), permute the tokens, and combine them back.
    experts, top_k, hidden = 128, 8, 2048  # Qwen3 30B-A3B
    wr = torch.randn(hidden, experts, device="cuda", dtype=torch.bfloat16)
    for tokens in (4096, 16384):
        x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)

        def dispatch():
            probs = torch.softmax((x @ wr).float(), dim=-1)
            w, idx = torch.topk(probs, top_k, dim=-1)
            flat = idx.flatten()
            counts = torch.bincount(flat, minlength=experts).tolist()
            order = torch.argsort(flat, stable=True)
            src = order // top_k
            y = x.index_select(0, src)
            out = torch.zeros_like(x)
            out.index_add_(0, src, y * w.flatten()[order].unsqueeze(-1).to(y.dtype))
            return counts

        for _ in range(5):
            dispatch()
        host, issued = host_and_issued(dispatch, 20)
        rows.append({"probe": "dropless_dispatch_ms", "tokens": tokens, "experts": experts,
                     "top_k": top_k, "host_ms": round(host * 1e3, 4),
                     "issued_ms": round(issued * 1e3, 4)})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="bf16,fp8,grouped")
    ap.add_argument("--shapes", default="2048x768,4096x1536",
                    help="hidden x expert width: Qwen3 30B-A3B, Qwen3 235B-A22B")
    ap.add_argument("--experts", default="4,8,16,32")
    ap.add_argument("--tokens", default="512,2048,8192")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if not require_gpu("moe_issue_bench"):
        return 1
    warm_up()
    dev, dt = "cuda", torch.bfloat16
    rows = probes()
    for r in rows:
        print(json.dumps(r), flush=True)
    modes = args.modes.split(",")
    if "grouped" in modes and not hasattr(torch, "_grouped_mm"):
        print("no torch._grouped_mm in this PyTorch; grouped mode skipped", file=sys.stderr)
        modes.remove("grouped")
    for shape in args.shapes.split(","):
        hidden, ffn = (int(v) for v in shape.split("x"))
        for experts in (int(v) for v in args.experts.split(",")):
            for tokens in (int(v) for v in args.tokens.split(",")):
                xs = [torch.randn(tokens, hidden, device=dev, dtype=dt) for _ in range(experts)]
                w1s = [torch.randn(hidden, 2 * ffn, device=dev, dtype=dt) / hidden**0.5
                       for _ in range(experts)]
                w2s = [torch.randn(ffn, hidden, device=dev, dtype=dt) / ffn**0.5
                       for _ in range(experts)]
                gs = [torch.randn(tokens, hidden, device=dev, dtype=dt) for _ in range(experts)]
                for mode in modes:
                    if mode == "grouped":
                        x, g = torch.cat(xs), torch.cat(gs)
                        w1, w2 = torch.stack(w1s), torch.stack(w2s)
                        offs = torch.arange(1, experts + 1, device=dev, dtype=torch.int32) * tokens

                        def fn():
                            grouped_layer(x, w1, w2, g, offs)
                    elif mode == "streams4":
                        streams = [torch.cuda.Stream() for _ in range(4)]

                        def fn():
                            main = torch.cuda.current_stream()
                            for st in streams:
                                st.wait_stream(main)
                            for i, e in enumerate(zip(xs, w1s, w2s, gs)):
                                with torch.cuda.stream(streams[i % len(streams)]):
                                    bf16_expert(*e)
                            for st in streams:
                                main.wait_stream(st)
                    else:
                        expert = bf16_expert if mode == "bf16" else fp8_expert

                        def fn():
                            for e in zip(xs, w1s, w2s, gs):
                                expert(*e)
                    try:
                        for _ in range(3):
                            fn()
                        torch.cuda.synchronize()
                        host, issued = host_and_issued(fn, args.runs)
                        graph, _ = timed(fn, args.runs, batch=2)
                        kernels = kernel_count(fn)
                    except Exception as e:  # noqa: BLE001 - report and go on with the others
                        print(f"{mode} {shape} {experts}x{tokens}: {e}", file=sys.stderr)
                        continue
                    row = {
                        "mode": mode,
                        "experts": experts,
                        "tokens": tokens,
                        "hidden": hidden,
                        "ffn": ffn,
                        "kernels": kernels,
                        "host_ms": round(host * 1e3, 4),
                        "issued_ms": round(issued * 1e3, 4),
                        "graph_ms": round(graph * 1e3, 4),
                        "gap_per_expert_ms": round(max(issued - graph, 0) / experts * 1e3, 4),
                        "host_us_per_kernel": round(host / kernels * 1e6, 3) if kernels else None,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                del xs, w1s, w2s, gs
                torch.cuda.empty_cache()
    finish(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
