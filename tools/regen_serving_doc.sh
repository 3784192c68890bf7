#!/usr/bin/env bash
# Regenerates the MLPerf validation tables of docs/SERVING.md from `parasim validate --markdown
# --search`: the table of tests/validation/serving/SUBSET/FILE.yaml goes under its heading
# "### `SUBSET/FILE.yaml`", replacing what lies between that heading and the next one.
# Usage: tools/regen_serving_doc.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bazel build //tools:parasim >/dev/null 2>&1
doc=docs/SERVING.md
tmp="$(mktemp "$doc.XXXXXX")"
skip=0
while IFS= read -r line || [ -n "$line" ]; do
  if [[ "$line" =~ ^\#\#\#\ \`((train|heldout|reference)/mlperf-[^\`]+\.yaml)\`$ ]]; then
    printf '%s\n\n' "$line"
    bazel-bin/tools/parasim validate --markdown --search "tests/validation/serving/${BASH_REMATCH[1]}"
    printf '\n'
    skip=1
    continue
  fi
  if [ "$skip" -eq 1 ] && [[ "$line" =~ ^\# ]]; then skip=0; fi
  [ "$skip" -eq 1 ] || printf '%s\n' "$line"
done <"$doc" >"$tmp"
mv "$tmp" "$doc"
echo "updated $doc"
