#!/usr/bin/env python3
"""A GPU's large-GEMM rate under a sustained load: an 8192^3 bf16 GEMM back to back for
`--seconds`, the median batch of ten in the run's last tenth, with nvidia-smi's clocks and power
sampled beside it (when it is on the PATH). It compares GPUs' sustained rates (an H100's against
an H200's), not a GPU's sustained factor.

The first batches (timed from an idle GPU after two to bring the clocks up) are printed too, but
they are not a short-burst rate: at a 700 W cap an H100's clocks fall within the first tens of
milliseconds of back-to-back GEMMs (2026-11-26: 697 TFLOP/s first, 688.5 sustained). The
catalog's sustained factor (hardware/spec.h) comes from GEMMs timed alone with idle gaps between
them (`parasim calibrate --only contention`) against the same GEMM after 30 s.

Output: one JSON object (and the device's line), rates in TFLOP/s.

Usage: python3 gemm_sustained.py [--seconds 30] [--n 8192] [--peak 989.4] [--out FILE]
"""
import argparse
import json
import shutil
import statistics
import subprocess
import time

import torch

from gpu_timing import finish, require_gpu


def batches(a, b, count):
    """`count` batches of ten GEMMs, each timed between CUDA events: milliseconds each."""
    events = []
    for _ in range(count):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            torch.mm(a, b)
        e1.record()
        events.append((e0, e1))
    torch.cuda.synchronize()
    return [e0.elapsed_time(e1) for e0, e1 in events]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--peak", type=float, default=989.4, help="the bf16 peak, TFLOP/s")
    ap.add_argument("--out", help="JSON lines file to write")
    args = ap.parse_args()
    if not require_gpu("gemm_sustained"):
        return 1
    n = args.n
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    tflops = lambda ms: round(10 * 2 * n**3 / ms / 1e9, 1)  # noqa: E731 - ten GEMMs a batch
    smi = None
    if shutil.which("nvidia-smi"):
        smi = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
             "-lms", "500"], stdout=subprocess.PIPE, text=True)
    batches(a, b, 2)  # clocks up from idle
    first = statistics.median(batches(a, b, 5))
    t0 = time.time()
    last = []
    while time.time() - t0 < args.seconds:
        times = batches(a, b, 8)
        if time.time() - t0 >= 0.9 * args.seconds:
            last += times
    sustained = statistics.median(last)
    row = {"gemm": f"{n}^3 bf16", "first_ms": round(first, 3), "sustained_ms": round(sustained, 3),
           "seconds": round(time.time() - t0, 1), "tflops_first": tflops(first),
           "tflops_sustained": tflops(sustained),
           "sustained_of_peak": round(tflops(sustained) / args.peak, 4)}
    if smi:
        smi.terminate()
        samples = [l.split(",") for l in smi.communicate()[0].splitlines() if "," in l]
        clocks = [float(s[0]) for s in samples]
        power = [float(s[1]) for s in samples]
        row["sm_mhz_median"] = statistics.median(clocks) if clocks else None
        row["power_w_median"] = statistics.median(power) if power else None
    print(json.dumps(row), flush=True)
    finish([row], args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
