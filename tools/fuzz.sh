#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (Bazel --config=fuzz) and runs each for SECONDS
# (default 60) from its seed corpus in tests/fuzz/corpus/, two at a time. Prints executions and
# findings per target; crash inputs land in fuzz-out/TARGET/. Exit 1 when a target found one.
# Usage: tools/fuzz.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
targets=(units scenario validation nccl plan plan_property serving import trace torchtitan)
# tools/bazel installs clang (with libFuzzer) when missing.
tools/bazel build --config=fuzz $(printf '//tests/fuzz:%s_fuzz ' "${targets[@]}") >&2 || exit 1
found=0
run() {
  local t="$1" out="fuzz-out/$1"
  rm -rf "$out" && mkdir -p "$out/corpus"
  cp tests/fuzz/corpus/"$t"/* "$out/corpus/"
  (cd "$out" && ../../bazel-bin/tests/fuzz/"${t}"_fuzz -max_total_time="$secs" -max_len=65536 \
     -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 corpus >log.txt 2>&1)
  local execs crashes
  execs=$(grep -E '^stat::number_of_executed_units' "$out/log.txt" | awk '{print $2}')
  crashes=$(ls "$out" | grep -cE '^(crash|leak|timeout|oom)-' || true)
  echo "$t: ${execs:-0} executions in ${secs} s, ${crashes} findings"
  [ "$crashes" -eq 0 ]
}
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  run "${targets[i]}" & a=$!
  if [ $((i + 1)) -lt ${#targets[@]} ]; then run "${targets[i + 1]}" & b=$!; else b=""; fi
  wait $a || found=1
  [ -n "$b" ] && { wait $b || found=1; }
done
exit $found
