#!/usr/bin/env python3
"""The MLPerf Inference datasets' output lengths, read from the submissions' own logs.

Each submission's TEST06 compliance run (mlcommons/inference compliance/TEST06) keeps its
accuracy log whole: 100 samples, each with the `token_count` the system generated. The outputs
are the model's greedy answers, so a sample's count is nearly the same from every submitter;
different submitters ran different sets of 100. This script pools them by sample (the median
count of a qsl_idx over the submissions that ran it) and prints, per benchmark, the distinct
samples, the mean, the quantiles and the standard deviation of the log length (the `sigma` of
a lognormal with these samples' spread).

Usage: tools/mlperf/output_lengths.py GIT_DIR [COMMIT]
  GIT_DIR: a clone (or bare mirror) of mlcommons/inference_results_v5.1; COMMIT defaults to HEAD.
Read by tests/validation/serving (the output spreads of its files' defaults).
"""
import collections
import json
import math
import statistics
import subprocess
import sys

# The benchmark folders that share a dataset (llama2-70b-99 and -99.9 run the same prompts).
DATASETS = {
    "llama2-70b-99": "llama2-70b",
    "llama2-70b-99.9": "llama2-70b",
    "llama2-70b-interactive-99": "llama2-70b",
    "llama2-70b-interactive-99.9": "llama2-70b",
    "llama3.1-405b": "llama3.1-405b",
    "llama3_1-405b": "llama3.1-405b",
    "llama3.1-405b-interactive": "llama3.1-405b",
    "llama3.1-8b": "llama3.1-8b",
    "llama3.1-8b-interactive": "llama3.1-8b",
    "mixtral-8x7b": "mixtral-8x7b",
}


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                          capture_output=True, text=True).stdout


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) == 3 else "HEAD"
    paths = [p for p in git(git_dir, "ls-tree", "-r", "--name-only", commit).split("\n")
             if p.endswith("TEST06/accuracy/mlperf_log_accuracy.json") and p.startswith("closed/")]
    counts = collections.defaultdict(lambda: collections.defaultdict(list))
    runs = collections.Counter()
    unread = []
    for path in paths:
        parts = path.split("/")
        dataset = DATASETS.get(parts[4])  # closed/<submitter>/compliance/<system>/<benchmark>/...
        if dataset is None:
            continue
        try:
            log = json.loads(git(git_dir, "show", "%s:%s" % (commit, path)))
        except json.JSONDecodeError:  # a log cut short by its submitter: not counted
            unread.append(path)
            continue
        runs[dataset] += 1
        for entry in log:
            if entry.get("token_count"):
                counts[dataset][entry["qsl_idx"]].append(entry["token_count"])
    print("mlcommons/inference_results_v5.1 at %s, closed division TEST06 accuracy logs" %
          git(git_dir, "rev-parse", commit).strip())
    for dataset in sorted(counts):
        lengths = sorted(statistics.median(v) for v in counts[dataset].values())
        n = len(lengths)
        quantile = lambda q: lengths[min(n - 1, int(q * n))]
        logs = [math.log(x) for x in lengths]
        print("%-14s runs %3d samples %3d mean %7.1f  p1 %5d p10 %5d p50 %5d p90 %5d p99 %5d max %5d"
              "  sigma(log) %.2f" % (dataset, runs[dataset], n, statistics.mean(lengths),
                                      quantile(0.01), quantile(0.10), quantile(0.5), quantile(0.9),
                                      quantile(0.99), lengths[-1], statistics.pstdev(logs)))
    for path in unread:
        print("not JSON, left out: " + path)


if __name__ == "__main__":
    main()
