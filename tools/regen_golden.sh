#!/usr/bin/env bash
# Rewrites tests/golden/ from the parasim binary: `run --json`, `memory --json` and (for
# scenarios with a sweep block) `sweep --json --jobs 2` of every example scenario; of a serving
# scenario `serve --json` (and `serve --sweep --json --jobs 2` with a sweep block). Run it after a
# change that is meant to move predictions, and say in the commit which moved and why.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bazel build //tools:parasim >&2
exe=bazel-bin/tools/parasim
mkdir -p tests/golden
for f in scenarios/*.yaml; do
  stem=$(basename "$f" .yaml)
  if grep -q '^serving:' "$f"; then
    # A serving scenario: serve's JSON, and with a sweep block the sweep's.
    "$exe" serve --json "$f" >"tests/golden/$stem.serve.json"
    if grep -q '^sweep:' "$f"; then
      "$exe" serve --sweep --json --jobs 2 "$f" >"tests/golden/$stem.serve-sweep.json"
    fi
    continue
  fi
  "$exe" run --json "$f" >"tests/golden/$stem.run.json"
  "$exe" memory --json "$f" >"tests/golden/$stem.memory.json"
  if grep -q '^sweep:' "$f"; then
    "$exe" sweep --json --jobs 2 "$f" >"tests/golden/$stem.sweep.json"
  fi
done
echo "tests/golden: $(ls tests/golden | wc -l) files" >&2
