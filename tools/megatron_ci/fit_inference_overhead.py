#!/usr/bin/env python3
"""Fit the host time per iteration of Megatron-LM's dynamic inference engine on the training
subset of tests/validation/serving/megatron-ci/ (train.yaml), once for the runs without CUDA
graphs and once for the runs with them, and print the two overheads for generate_inference.py's
FITTED_OVERHEAD_MS.

For each engine mode: the `serving.engine.iteration_overhead` at which the mean log error of the
mode's training cases' throughput is zero, by bisection (a longer overhead lowers every predicted
throughput). Held-out cases (heldout.yaml) are never read.

Usage: tools/megatron_ci/fit_inference_overhead.py [--parasim bazel-bin/tools/parasim] [--file F]
"""

import argparse
import json
import math
import os
import subprocess
import tempfile

import yaml


def mean_log_error(parasim, path, overhead_ms):
    r = subprocess.run([parasim, "validate", "--json", path, "--set",
                        "serving.engine.iteration_overhead=%.6fms" % overhead_ms],
                       capture_output=True, text=True, check=True)
    errs = [c["tokens_per_s"]["error"] for c in json.loads(r.stdout)["cases"]
            if c.get("status") == "ok"]
    return sum(math.log1p(e) for e in errs) / len(errs), len(errs)


def fit(parasim, path):
    """(overhead in ms, cases fitted): bisection to 0.01 ms, the precision printed."""
    lo, hi = 0.0, 1000.0  # ms: no overhead predicts too fast; a second a step too slow
    n = 0
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        err, n = mean_log_error(parasim, path, mid)
        if err > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2, n


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parasim", default=os.path.join(root, "bazel-bin", "tools", "parasim"))
    ap.add_argument("--file", default=os.path.join(root, "tests", "validation", "serving",
                                                   "megatron-ci", "train.yaml"))
    a = ap.parse_args()
    with open(a.file, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    for graphs in (False, True):
        cases = [c for c in doc["cases"]
                 if bool(c["scenario"]["serving"]["engine"]["cuda_graphs"]) == graphs]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mode.yaml")
            with open(path, "w", encoding="utf-8") as fh:
                yaml.safe_dump(dict(doc, cases=cases), fh, sort_keys=False)
            x, n = fit(a.parasim, path)
        print("cuda_graphs %-5s: %.2f ms over %d training cases" % (graphs, x, n))


if __name__ == "__main__":
    main()
