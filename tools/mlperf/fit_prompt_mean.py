#!/usr/bin/env python3
"""Fits an MLPerf dataset's mean prompt length on a validation file's Offline cases.

The mean log error of the file's Offline cases (predicted over measured tokens a second) is read
at the starting mean x 0.92, 0.94, ..., 1.08 and a line through those nine points gives the
mean where it is zero. (Bisection stalls: the error is not monotone within a percent, since the
sampled prompt lengths change with the mean.) tests/validation/serving/subsets.yaml states the
results and which files they are fitted on: the training subset's alone.

Usage: tools/mlperf/fit_prompt_mean.py PARASIM FILE START [--set KEY=VALUE ...]
  e.g. tools/mlperf/fit_prompt_mean.py bazel-bin/tools/parasim \
         tests/validation/serving/train/mlperf-llama3.1-405b.yaml 8400
"""
import json
import math
import subprocess
import sys


def mean_log_error(parasim, path, mean, extra):
    out = subprocess.run([parasim, "validate", "--json", path, "--set",
                          "serving.requests.input_tokens.lognormal.mean=%d" % mean, *extra],
                         check=True, capture_output=True, text=True).stdout
    errors = [c["error"] for c in json.loads(out)["cases"]
              if c["name"].endswith("-offline") and c.get("status") == "ok"]
    if not errors:
        sys.exit("%s: no Offline case predicted" % path)
    return sum(math.log1p(e) for e in errors) / len(errors), len(errors)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    parasim, path, start, extra = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    xs, ys = [], []
    for step in range(-8, 9, 2):
        mean = round(start * (1 + step / 100))
        y, cases = mean_log_error(parasim, path, mean, extra)
        xs.append(mean)
        ys.append(y)
        print("mean %6d: mean log error %+.4f over %d Offline cases" % (mean, y, cases))
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    root = mx - my / slope
    scatter = math.sqrt(sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys)) / len(xs))
    print("fitted mean %.1f tokens (the points' scatter about the line: %.4f)" % (root, scatter))


if __name__ == "__main__":
    main()
