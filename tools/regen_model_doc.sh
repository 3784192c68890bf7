#!/usr/bin/env bash
# Regenerates the validation table of docs/MODEL.md from `parasim validate --markdown`.
# Usage: tools/regen_model_doc.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bazel build //tools:parasim >/dev/null
table="$(bazel-bin/tools/parasim validate tests/validation/megatron-sc21-table1.yaml --markdown)"
doc=docs/MODEL.md
tmp="$(mktemp "$doc.XXXXXX")"
awk -v table="$table" '
  /<!-- validation:begin -->/ { print; print table; skip = 1; next }
  /<!-- validation:end -->/ { skip = 0 }
  !skip { print }
' "$doc" >"$tmp"
mv "$tmp" "$doc"
echo "updated $doc"
