#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (Bazel --config=fuzz) and runs each for SECONDS
# (default 60) from its seed corpus (tests/fuzz/corpus/ and the files seeds() names), two at a
# time. Prints executions and findings per target; crash inputs land in fuzz-out/TARGET/. Exit 1
# when a target found one.
# Usage: tools/fuzz.sh [SECONDS]
# FUZZ_BUILD_FLAGS adds Bazel flags to the build: .ci/run's 15-second smoke run builds at -O0
# (--copt=-O0, the last -O wins), which halves the compile (clang 14, strategies/scale.cc 21.9 s
# -> 10.2 s; the 11 targets 357 s -> 212 s on 2 cores, 2026-12-02) for fewer executions a second.
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
read -r -a extra <<<"${FUZZ_BUILD_FLAGS:-}"
targets=(units scenario validation nccl plan plan_property serving serving_validation import trace torchtitan)
# tools/bazel installs clang (with libFuzzer) when missing.
tools/bazel build --config=fuzz "${extra[@]}" $(printf '//tests/fuzz:%s_fuzz ' "${targets[@]}") >&2 || exit 1
found=0
# Seeds the tree keeps elsewhere (examples, test fixtures), beside tests/fuzz/corpus/TARGET.
seeds() {
  case "$1" in
    scenario) echo scenarios/nemotron3-nano-hybrid-64-h100.yaml ;;
    serving) echo scenarios/llama3-70b-serve-8-h100.yaml tests/bad_inputs/serve_*.yaml ;;
    import) echo tests/fixtures/megatron/llama_flags.txt tests/fixtures/megatron/train_gpt.sh \
      tests/fixtures/megatron/moe_model_config.yaml ;;
    torchtitan) echo tests/fixtures/torchtitan/llama3_8b.toml ;;
    trace) echo tests/traces/kineto-step.json tests/fixtures/traces/bad/*.json \
      tests/fixtures/traces/two-ranks/* ;;
  esac
}
run() {
  local t="$1" out="fuzz-out/$1"
  rm -rf "$out" && mkdir -p "$out/corpus"
  if [ -d tests/fuzz/corpus/"$t" ]; then cp tests/fuzz/corpus/"$t"/* "$out/corpus/"; fi
  # shellcheck disable=SC2046
  for f in $(seeds "$t"); do cp "$f" "$out/corpus/"; done
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
