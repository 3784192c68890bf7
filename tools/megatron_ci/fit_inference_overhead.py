#!/usr/bin/env python3
"""Fit the host time of Megatron-LM's dynamic inference engine on the training subset of
tests/validation/serving/megatron-ci/ (train.yaml), and print the three figures for
generate_inference.py's FITTED_OVERHEAD_MS, FITTED_HOST_OPS_PER_OP and FITTED_HOST_OPS_PER_GRAPH.

The replay charges each step `serving.engine.iteration_overhead` (the engine's Python scheduling,
bookkeeping and sampling); for every op of the layer graph it runs outside a CUDA graph (a
module's call, a collective's) `serving.engine.host_ops_per_op` framework ops of the GPU's host
(the catalog's host_op_time, fitted on training runs); and for every CUDA graph it launches (one
a layer: Megatron-Core's graphs are layer-scoped) `serving.engine.host_ops_per_graph`. A stage
takes at least its calls' and launches' time. The three are fitted together, one set for every
run with or without CUDA graphs: the set whose throughput log errors have the least sum of
squares, the overhead for each pair of host figures the one at which their mean is zero (by
bisection: a longer overhead lowers every predicted throughput), each host figure by
golden-section search (the graph's outside the call's). Held-out cases (heldout.yaml) are never
read.

Usage: tools/megatron_ci/fit_inference_overhead.py [--parasim bazel-bin/tools/parasim] [--file F]
"""

import argparse
import json
import math
import os
import subprocess

import yaml


def log_errors(parasim, path, overhead_ms, per_op, per_graph):
    r = subprocess.run([parasim, "validate", "--json", path,
                        "--set", "serving.engine.iteration_overhead=%.6fms" % overhead_ms,
                        "--set", "serving.engine.host_ops_per_op=%.6f" % per_op,
                        "--set", "serving.engine.host_ops_per_graph=%.6f" % per_graph],
                       capture_output=True, text=True, check=True)
    return [math.log1p(c["tokens_per_s"]["error"]) for c in json.loads(r.stdout)["cases"]
            if c.get("status") == "ok"]


def overhead_for(parasim, path, per_op, per_graph):
    """(overhead in ms at which the mean log error is zero, to 0.01 ms; its log errors)."""
    lo, hi = 0.0, 1000.0  # ms: no overhead predicts too fast; a second a step too slow
    errs = log_errors(parasim, path, lo, per_op, per_graph)
    if sum(errs) <= 0:  # the host time alone is already too slow
        return lo, errs
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        errs = log_errors(parasim, path, mid, per_op, per_graph)
        if sum(errs) > 0:
            lo = mid
        else:
            hi = mid
    x = (lo + hi) / 2
    return x, log_errors(parasim, path, x, per_op, per_graph)


def golden(f, a, b, tol):
    """The argument in [a, b] at which f (unimodal) is least, to tol."""
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(parasim, path):
    """(overhead ms, ops a call, ops a graph, cases, rms log error)."""
    memo = {}

    def sse(per_op, per_graph):
        key = (round(per_op, 3), round(per_graph, 3))
        if key not in memo:
            x, errs = overhead_for(parasim, path, *key)
            memo[key] = (sum(e * e for e in errs), x, len(errs))
        return memo[key][0]

    def best_op(per_graph):  # framework ops a call: from none to a hundred
        return golden(lambda k: sse(k, per_graph), 0.0, 100.0, 0.01)

    per_graph = golden(lambda g: sse(best_op(g), g), 0.0, 20.0, 0.01)
    per_op = best_op(per_graph)
    key = (round(per_op, 3), round(per_graph, 3))
    sse(*key)
    total, x, n = memo[key]
    return x, key[0], key[1], n, math.sqrt(total / n)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parasim", default=os.path.join(root, "bazel-bin", "tools", "parasim"))
    ap.add_argument("--file", default=os.path.join(root, "tests", "validation", "serving",
                                                   "megatron-ci", "train.yaml"))
    a = ap.parse_args()
    with open(a.file, encoding="utf-8") as fh:
        yaml.safe_load(fh)  # fail here, not in parasim, on a file that is not YAML
    x, k, g, n, rms = fit(a.parasim, a.file)
    print("iteration_overhead %.2f ms, host_ops_per_op %.3f, host_ops_per_graph %.3f over %d "
          "training cases (rms log error %.4f)" % (x, k, g, n, rms))


if __name__ == "__main__":
    main()
