#!/usr/bin/env python3
"""Build parasim serving validation files from the inference tests of NVIDIA/Megatron-LM's CI.

Input: the same snapshot as generate.py (a git directory or an extracted tree) and a built
`parasim` binary, whose `import megatron` maps each case's model flags onto a model block (the
training import's own mapping; the flags of the inference engine are read here instead).
Output: tests/validation/serving/megatron-ci/{train,heldout}.yaml, one case per golden file that
records a throughput, and in each file's head the inference goldens of that subset that make no
case, with the reason.

The numbers written are facts recorded in the public repository (the goldens' throughput,
request counts, prompt and output lengths, latencies; the configs' flags); this script selects,
summarises and reformats them. README.md beside it gives the rules.

Usage:
  tools/megatron_ci/generate_inference.py --source /path/to/Megatron-LM.git \
      [--parasim bazel-bin/tools/parasim] [--out DIR]
Requires Python 3.9+ and PyYAML. Deterministic: the same snapshot gives byte-identical files.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

import yaml

from generate import (CASES_DIR, GOLDEN_RE, PLATFORM_GPU, REPO, case_files, case_subset,
                      configs_of, flag_values, int_flag, open_snapshot, parse_config, q)

# Flags of the inference driver (examples/inference/, its engine, sampling and harness), read
# by this script, not by the import (which knows training flags alone). Any other flag the import
# does not know makes the case inexpressible, with the import's message as the reason.
ENGINE_FLAG_PREFIXES = ("--inference-",)
ENGINE_FLAGS = {
    "--async-mode", "--decode-only-cuda-graphs", "--enable-chunked-prefill",
    "--enable-cuda-graph", "--flash-decode", "--incoming-requests-per-sec",
    "--incoming-requests-per-step", "--no-record-throughput", "--no-rl-persist-cuda-graphs",
    "--num-tokens-to-generate", "--output-every-n-results", "--output-path", "--prompt-file",
    "--prompt-file-num-truncate", "--prompts", "--return-log-probs",
    "--rl-kv-cache-management-mode", "--stop-words", "--suspend-resume-interval",
    "--suspend-timeout", "--temperature", "--termination-id", "--top-n-logprobs", "--top_k",
    "--top_p", "--use-coordinator", "--use-flashinfer-fused-rope", "--use-legacy-static-engine",
}
# Engine flags mapped onto serving keys (the rest of ENGINE_FLAGS present in a case are named
# in its note as not modelled, sampling and harness flags aside).
MAPPED_ENGINE_FLAGS = {
    "--enable-chunked-prefill", "--enable-cuda-graph", "--decode-only-cuda-graphs",
    "--inference-dynamic-batching-max-tokens", "--inference-dynamic-batching-max-requests",
    "--inference-dynamic-batching-block-size", "--inference-dynamic-batching-prefix-caching",
    "--num-tokens-to-generate", "--prompts", "--prompt-file", "--prompt-file-num-truncate",
    "--incoming-requests-per-sec", "--inference-repeat-n",
}
HARNESS_FLAGS = {
    "--output-path", "--temperature", "--top_k", "--inference-ckpt-non-strict",
    "--no-record-throughput", "--output-every-n-results", "--inference-max-seq-length",
    "--inference-dynamic-batching-buffer-size-gb", "--termination-id",
    "--inference-logging-step-interval",
}
# megatron/core/inference/contexts/dynamic_context.py at the pinned commit: DEFAULT_MAX_TOKENS.
DEFAULT_MAX_TOKENS = 16384
# megatron/training/arguments.py: --inference-dynamic-batching-block-size default.
DEFAULT_BLOCK_SIZE = 256
# megatron/core/tokenizers/text/libraries/tiktoken_tokenizer.py: DEFAULT_TIKTOKEN_MAX_VOCAB = 2**17,
# the vocabulary of a TikTokenizer whose size the arguments leave to its model file.
TIKTOKEN_VOCAB = 131072
# megatron/core/inference/config.py: cuda_graph_max_tokens = 512 (--inference-cuda-graph-max-tokens).
CUDA_GRAPH_MAX_TOKENS = 512
# megatron/core/transformer/transformer_config.py: transformer_impl = "transformer_engine".
TRANSFORMER_IMPL = "transformer_engine"
# The engine's host time per step (Python scheduling, bookkeeping, sampling), per op of the layer
# graph it runs outside a CUDA graph and per graph it launches (in framework ops of the GPU's host,
# GpuSpec::host_op_time), fitted together on the training subset alone (train.yaml) by
# tools/megatron_ci/fit_inference_overhead.py at the pinned commit (2026-12-01): 0.01 ms, 9.652 and
# 5.311 (331 us a call and 182 us a layer's graph on a DGX H100's host) over the 12 training cases,
# with CUDA graphs or without (the step's 0.01 ms stated as 0: no step overhead is wanted). Until
# then one overhead a step for each mode: 90.1 ms without graphs, 5.9 ms with them.
FITTED_OVERHEAD_MS = 0
FITTED_HOST_OPS_PER_OP = 9.65
FITTED_HOST_OPS_PER_GRAPH = 5.31
# Speculative decoding, which the replay does not model.
SPECULATIVE_FLAGS = ("--mtp-num-layers",)


def inference_goldens(snap):
    return sorted(p for p in case_files(snap) if "inference" in p.split("/")[-2]
                  and GOLDEN_RE.fullmatch(p.rsplit("/", 1)[1]))


def is_engine_flag(flag):
    return flag in ENGINE_FLAGS or flag.startswith(ENGINE_FLAG_PREFIXES)


def split_argv(argv):
    """(model argv for the import, {engine flag: [values]})."""
    model, engine, cur_engine = [], {}, False
    for tok in argv:
        if tok.startswith("--"):
            cur_engine = is_engine_flag(tok)
            if cur_engine:
                engine[tok] = []
                continue
        elif cur_engine:
            engine[list(engine)[-1]].append(tok)
            continue
        model.append(tok)
    return model, engine


def import_model(parasim, model_argv, gpu, gpus, vocab):
    """The model block `parasim import megatron` builds from model_argv, or (None, error)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "args.sh")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("python pretrain_gpt.py %s\n" % " ".join(shlex.quote(t) for t in model_argv))
        cmd = [parasim, "import", "megatron", path, "--gpu", gpu, "--nodes", "1",
               "--gpus-per-node", str(gpus)]
        if vocab:
            cmd += ["--vocab", str(vocab)]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "exit %d" % r.returncode
        return None, msg.split("error: ", 1)[-1]
    return yaml.safe_load(r.stdout)["model"], None


def requests_of(golden, engine):
    """(count, prompt tokens a request, output tokens a request, how each was read)."""
    reqs = [v for k, v in golden.items() if k.isdigit() and isinstance(v, dict)]
    if "--prompt-file" in engine:
        count = int_flag(engine, "--prompt-file-num-truncate", 0)
        how = "count: --prompt-file-num-truncate %d" % count
    else:
        count = 1 if "--prompts" in engine else 0
        how = "count: one --prompts string"
    ids = [int(k) for k in golden if k.isdigit()]
    if ids and max(ids) + 1 > count:
        count, how = max(ids) + 1, "count: the golden's highest request id + 1"
    if not count:
        return None
    prefill = golden.get("lifetime_prefill_token_count")
    if isinstance(prefill, (int, float)) and prefill > 0:
        prompt = prefill / count
        how += "; prompt: lifetime_prefill_token_count %d / %d requests" % (prefill, count)
    else:
        lens = [len(r["prompt_logprobs"]) + 1 for r in reqs if r.get("prompt_logprobs")]
        if not lens:
            return None
        prompt = statistics.mean(lens)
        how += "; prompt: the golden requests' prompt log-probs + 1 (%d requests)" % len(lens)
    outs = [len(r["generated_tokens"]) for r in reqs if r.get("generated_tokens")]
    if outs:
        output = statistics.mean(outs)
        how += "; output: the golden's %d request(s) generated %s tokens" % (
            len(outs), "/".join(str(o) for o in sorted(set(outs))))
    else:
        output = int_flag(engine, "--num-tokens-to-generate", 0)
        how += "; output: --num-tokens-to-generate"
    return count, max(1, round(prompt)), max(1, round(output)), how


def graph_capture(engine, flags, ep, max_tokens, max_requests):
    """(serving.engine.cuda_graphs, cuda_graph_max_tokens or None) as the dynamic engine captures
    graphs (megatron/core/inference/contexts/dynamic_context.py at the pinned commit): none without
    --enable-cuda-graph or a --cuda-graph-impl; decode steps alone under --decode-only-cuda-graphs,
    and where expert parallelism runs the training all-to-all dispatcher (Transformer Engine's) or
    the NCCL one (force_disable_non_decode_cuda_graphs); otherwise prompt and mixed steps too, up to
    cuda_graph_max_tokens clamped to [max_requests, max_tokens] (max_tokens with
    --inference-cuda-graph-all-prefills)."""
    if not ("--enable-cuda-graph" in engine or
            engine.get("--inference-cuda-graph-impl", ["none"])[0] != "none"):
        return False, None
    impl = flags.get("--transformer-impl", [TRANSFORMER_IMPL])[0]
    dispatcher = engine.get("--inference-moe-token-dispatcher-type", [None])[0]
    if "--decode-only-cuda-graphs" in engine or \
            (ep > 1 and (impl == "transformer_engine" or dispatcher == "nccl")):
        return True, None
    if "--inference-cuda-graph-all-prefills" in engine:
        return "mixed", max_tokens
    largest = int_flag(engine, "--inference-cuda-graph-max-tokens", CUDA_GRAPH_MAX_TOKENS)
    return "mixed", min(max(largest, max_requests), max_tokens)


def graph_scope(engine, flags):
    """serving.engine.cuda_graph_scope: a graph a layer, the local implementation's default
    (megatron/core/transformer/cuda_graph_config.py, normalize_inference_cuda_graph_scope), or one
    an iteration under --inference-cuda-graph-scope block (or the deprecated
    --cuda-graph-modules full_iteration_inference it migrates to)."""
    scope = engine.get("--inference-cuda-graph-scope", [""])[0]
    if scope == "block" or "full_iteration_inference" in flags.get("--cuda-graph-modules", []):
        return "whole"
    return "layer"


def engine_block(engine, flags, ep, count):
    max_tokens = int_flag(engine, "--inference-dynamic-batching-max-tokens", DEFAULT_MAX_TOKENS)
    max_requests = int_flag(engine, "--inference-dynamic-batching-max-requests", count)
    graphs, largest = graph_capture(engine, flags, ep, max_tokens, max_requests)
    out = {
        "max_num_tokens": max_tokens,
        "max_seqs": max_requests,
        "chunked_prefill": "--enable-chunked-prefill" in engine,
        "cuda_graphs": graphs,
    }
    if largest is not None:
        out["cuda_graph_max_tokens"] = largest
    if graphs:
        out["cuda_graph_scope"] = graph_scope(engine, flags)
    out["block_size"] = int_flag(engine, "--inference-dynamic-batching-block-size",
                                 DEFAULT_BLOCK_SIZE)
    out["iteration_overhead"] = "%gms" % FITTED_OVERHEAD_MS
    out["host_ops_per_op"] = FITTED_HOST_OPS_PER_OP
    out["host_ops_per_graph"] = FITTED_HOST_OPS_PER_GRAPH
    return out


def build_case(path, golden, cfg_text, parasim):
    """(case dict, None) or (None, reason)."""
    thr = golden.get("throughput")
    if not isinstance(thr, list) or not [t for t in thr if isinstance(t, (int, float))]:
        keys = sorted(k for k in golden if not k.isdigit())
        return None, "no throughput in the golden (it holds %s)" % (", ".join(keys) or
                                                                    "request outputs only")
    argv, _, _ = parse_config(cfg_text)
    model_argv, engine = split_argv(argv)
    flags = flag_values(model_argv)
    # The CUDA-graph implementation is a training flag too; the import reads it as such.
    if flags.get("--cuda-graph-impl"):
        engine["--inference-cuda-graph-impl"] = flags["--cuda-graph-impl"]
    for f in SPECULATIVE_FLAGS:
        if f in flags:
            return None, "%s: speculative decoding (multi-token prediction), not modelled" % f
    tp = int_flag(flags, "--tensor-model-parallel-size", 1)
    pp = int_flag(flags, "--pipeline-model-parallel-size", 1)
    ep = int_flag(flags, "--expert-model-parallel-size", 1)
    if ep > 1 and tp % ep != 0:
        return None, "EP %d outside the TP %d ranks: a serving layout's EP divides its TP" % (ep, tp)
    reqs = requests_of(golden, engine)
    if reqs is None:
        return None, ("no prompt length: the golden records neither lifetime_prefill_token_count "
                      "nor prompt log-probs")
    count, prompt, output, how = reqs
    platform = GOLDEN_RE.fullmatch(path.rsplit("/", 1)[1]).group(2)
    vocab = None
    if flags.get("--tokenizer-type", [""])[0] == "TikTokenizer" and "--vocab-size" not in flags:
        vocab = TIKTOKEN_VOCAB
    model, err = import_model(parasim, model_argv, PLATFORM_GPU[platform], tp * pp, vocab)
    if err:
        return None, "the import refuses the model flags: " + err
    samples = [t for t in thr if isinstance(t, (int, float))]
    steady = samples[1:] if len(samples) > 1 else samples
    fp8 = "--fp8-format" in flags
    serving = {
        "precision": "fp8" if fp8 else "bf16",
        "requests": {"arrival": "offline", "count": count, "input_tokens": prompt,
                     "output_tokens": output},
        "engine": engine_block(engine, flags, ep, count),
    }
    measured = {"tokens_per_s": round(statistics.median(steady), 3)}
    reqs_in = [v for k, v in golden.items() if k.isdigit() and isinstance(v, dict)]
    if count == 1 and reqs_in and isinstance(reqs_in[0].get("ttft"), float):
        r = reqs_in[0]
        measured["ttft_p50"] = "%.2fms" % (r["ttft"] * 1e3)
        if isinstance(r.get("latency"), float) and output > 1:
            measured["tpot_p50"] = "%.3fms" % ((r["latency"] - r["ttft"]) / (output - 1) * 1e3)
    not_modelled = sorted(f for f in engine if f not in MAPPED_ENGINE_FLAGS and
                          f not in HARNESS_FLAGS and f != "--inference-cuda-graph-impl")
    if "--inference-dynamic-batching-prefix-caching" in engine:
        not_modelled.insert(0, "prefix caching (hit rate 0: the engine is reset before each "
                               "trial and a trial's prompts share no prefix)")
    note = ("%s: throughput = output tokens / wall time of one trial of every request "
            "(examples/inference/advanced/gpt_dynamic_inference.py); median of samples 2..%d of %d "
            "(the first is warm-up, as tests/functional_tests/python_test_utils/"
            "test_inference_regular_pipeline.py drops it), range %.4g..%.4g; %s; one replica of "
            "TP %d x PP %d (the script's throughput is rank 0's)"
            % (path.rsplit("/", 1)[1], len(samples), len(samples), min(steady), max(steady), how,
               tp, pp))
    if vocab:
        note += "; vocabulary %d: TikTokenizer's DEFAULT_TIKTOKEN_MAX_VOCAB" % vocab
    if "--use-checkpoint-args" in flags:
        note += "; --use-checkpoint-args: the checkpoint's own model arguments override the flags"
    if not_modelled:
        note += "; not modelled: " + ", ".join(not_modelled)
    if measured.get("ttft_p50"):
        note += "; ttft_p50 and tpot_p50: the golden request's ttft and (latency - ttft) / (output - 1)"
    family, case = path.split("/")[-3:-1]
    env_name = GOLDEN_RE.fullmatch(path.rsplit("/", 1)[1]).group(1)
    scenario = {
        "cluster": {"gpu": PLATFORM_GPU[platform], "nodes": 1, "gpus_per_node": tp * pp},
        "model": model,
        "serving": serving,
        "parallelism": {"tp": tp, "pp": pp, "ep": ep, "replicas": 1},
    }
    measured["note"] = note
    return {"name": "%s/%s (%s, %s)" % (family, case, platform, env_name),
            "source": "%s %s" % (REPO, path), "scenario": scenario, "measured": measured}, None


def emit(cases, skipped, snap, subset, n_all):
    out = [
        "# Generated by tools/megatron_ci/generate_inference.py from https://github.com/%s at %s"
        % (REPO, snap.commit),
        "# (%s). Do not edit: regenerate (tools/megatron_ci/README.md)." % (snap.commit_date or "tree"),
        "# Megatron-LM's inference functional tests whose goldens record a throughput, %s subset"
        % subset,
        "# (tests/validation/serving/subsets.yaml, megatron_inference_%s): %d cases here of %d"
        % (subset, len(cases), n_all),
        "# generated over both subsets. Inference goldens of this subset that make no case:",
    ]
    for path, reason in skipped:
        out.append("#   %s: %s" % (path[len(CASES_DIR) + 1:], reason))
    if not skipped:
        out.append("#   (none)")
    out += ["source: %s" % q("%s inference functional-test goldens at %s (%s subset)"
                             % (REPO, snap.commit, subset)), "cases:"]
    for c in cases:
        out.append("  - name: %s" % q(c["name"]))
        out.append("    source: %s" % q(c["source"] + " (commit %s)" % snap.commit))
        out.append("    scenario:")
        for k, v in c["scenario"].items():
            out.append("      %s: %s" % (k, q(v)))  # one line: JSON is valid YAML
        out.append("    measured:")
        for k, v in c["measured"].items():
            out.append("      %s: %s" % (k, q(v) if isinstance(v, str) and k == "note" else v))
    return "\n".join(out) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="Megatron-LM git dir, checkout, or extracted tree")
    ap.add_argument("--rev", default="HEAD", help="revision to read from a git dir (default HEAD)")
    ap.add_argument("--commit", help="expected commit (required for an extracted tree)")
    ap.add_argument("--parasim", default=os.path.join(root, "bazel-bin", "tools", "parasim"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "validation", "serving", "megatron-ci"))
    a = ap.parse_args()
    if not os.access(a.parasim, os.X_OK):
        sys.exit("no parasim binary at %s: tools/bazel build //tools:parasim, or --parasim" % a.parasim)
    snap = open_snapshot(a.source, a.rev, a.commit)
    goldens = inference_goldens(snap)
    configs = configs_of(snap, goldens)
    texts = snap.read_many(goldens + configs)
    by_subset = {"training": ([], []), "held_out": ([], [])}
    for path in goldens:
        family, case = path.split("/")[-3:-1]
        cases, skipped = by_subset[case_subset("%s/%s" % (family, case))]
        cfg = path.rsplit("/", 1)[0] + "/model_config.yaml"
        if cfg not in texts:
            skipped.append((path, "no model_config.yaml"))
            continue
        c, reason = build_case(path, json.loads(texts[path] or "{}"), texts[cfg], a.parasim)
        if c:
            cases.append(c)
        else:
            skipped.append((path, reason))
    os.makedirs(a.out, exist_ok=True)
    n_all = sum(len(v[0]) for v in by_subset.values())
    for subset, fname in (("training", "train.yaml"), ("held_out", "heldout.yaml")):
        cases, skipped = by_subset[subset]
        text = emit(cases, skipped, snap, subset, n_all)
        assert len(yaml.safe_load(text)["cases"]) == len(cases)
        with open(os.path.join(a.out, fname), "w", encoding="utf-8") as fh:
            fh.write(text)
        print("%s: %d cases, %d goldens without a case" % (fname, len(cases), len(skipped)))


if __name__ == "__main__":
    main()
