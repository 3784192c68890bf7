#!/usr/bin/env bash
# Regenerates the validation tables of docs/MODEL.md from `parasim validate --markdown`: the
# table of tests/validation/NAME.yaml goes between <!-- validation:NAME:begin --> and
# <!-- validation:NAME:end -->.
# Usage: tools/regen_model_doc.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bazel build //tools:parasim >/dev/null 2>&1
doc=docs/MODEL.md
for file in tests/validation/*.yaml tests/validation/regimes/*.yaml; do
  name="$(basename "$file" .yaml)"
  grep -q "<!-- validation:$name:begin -->" "$doc" || continue
  table="$(bazel-bin/tools/parasim validate "$file" --markdown)"
  tmp="$(mktemp "$doc.XXXXXX")"
  awk -v table="$table" -v begin="<!-- validation:$name:begin -->" \
      -v end="<!-- validation:$name:end -->" '
    $0 == begin { print; print table; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' "$doc" >"$tmp"
  mv "$tmp" "$doc"
done
echo "updated $doc"
