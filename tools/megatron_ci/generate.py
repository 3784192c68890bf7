#!/usr/bin/env python3
"""Build parasim validation files from the measured runs of NVIDIA/Megatron-LM's functional tests.

Input: a snapshot of https://github.com/NVIDIA/Megatron-LM, either a git directory (read with
`git --git-dir=... ls-tree / cat-file`, no work tree needed) or an extracted source tree.
Output: tests/validation/megatron-ci/<group>.yaml (one file per GPU x family, plus the
host-bound group) and tests/validation/megatron-ci/subsets.yaml.

The numbers written are facts recorded in the public repository (each test's golden values); this
script only selects, summarises and reformats them. See README.md beside it for the rules.

Usage:
  tools/megatron_ci/generate.py --source /path/to/Megatron-LM.git [--rev HEAD]
  tools/megatron_ci/generate.py --source /path/to/extracted/tree --commit <40-hex>
Options --out DIR (default: tests/validation/megatron-ci under this checkout) and
--inventory FILE (a JSON dump of every golden file seen, for analysis) are optional.
Requires Python 3.9+ and PyYAML. Deterministic: the same snapshot gives byte-identical files.
"""

import argparse
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

CASES_DIR = "tests/functional_tests/test_cases"
RECIPES_DIR = "tests/test_utils/recipes"
# Where recipes lived over the repository's history (searched for cases no longer scheduled).
HISTORY_DIRS = (RECIPES_DIR, "tests/functional_tests/jet_recipes")
REPO = "NVIDIA/Megatron-LM"

# The three DGX platforms whose goldens make the corpus, and the parasim catalog ids they map to.
PLATFORM_GPU = {
    "dgx_h100": "h100-sxm5-80gb",
    "dgx_gb200": "gb200",
    "dgx_a100": "a100-sxm4-80gb",
}
PLATFORM_SHORT = {"dgx_h100": "h100", "dgx_gb200": "gb200", "dgx_a100": "a100"}
# Recipes live in two folders; the h100/ folder's recipes also launch the dgx_a100 jobs (their
# spec's default platform is dgx_a100; a product names dgx_h100 to run there).
RECIPE_FOLDER = {"dgx_h100": "h100", "dgx_a100": "h100", "dgx_gb200": "gb200"}
GOLDEN_RE = re.compile(r"golden_values_(dev|lts)_(dgx_h100|dgx_gb200|dgx_a100)\.json")

# ---- measurement rules ---------------------------------------------------------------------
# Warm-up: samples at steps below WARMUP_FROM are dropped; the step time is the median of every
# finite iteration-time sample from there to the end of the golden series. Runs whose series ends
# at step <= SHORT_RUN_LAST use the shorter warm-up.
WARMUP_FROM = 10
SHORT_RUN_LAST = 25
SHORT_WARMUP_FROM = 5
# Host-bound group: a run whose model is tiny. At --hidden-size <= 1024 the model math of a step,
# counted at the GPU's datasheet dense BF16 rate, is at most ~19% of the measured step in every
# case of the corpus (median ~1.5%); the rest is launch, Python, synchronisation and collective
# latency. No case of the corpus (RL runs aside) lies between 1024 and 2688, so the threshold is
# not fine-tuned. The step time is not part of the rule: tiny models also run 1-8 s steps (GB200
# single-tray runs, FP8 TP-overlap tests), and that length is not GPU work either.
HOST_BOUND_MAX_HIDDEN = 1024
# Training subset: cases whose sha256(name) taken mod TRAIN_MOD is 0 (about one in three).
TRAIN_MOD = 3

# Vocabulary sizes of the tokenizer files the launch arguments name (the files are not public; the
# path's file name and the tokenizer's own publication give the size), by --tokenizer-model's
# file name. (Tokenizer types whose size parasim's import knows itself, Llama2Tokenizer's 32,000
# among them, need no row.)
TOKENIZER_VOCAB = {
    "nemotron_2_256k.model": (
        256000, "nemotron_2_256k.model: the Nemotron tokenizer of 256,000 SentencePiece tokens "
        "(Nemotron-4 15B Technical Report, arXiv:2402.16819, Sec. 2.2)"),
}

# Scale of a run whose node count is not public (release tests, launched from NVIDIA's internal
# recipes), inferred from its own measurement: mem-allocated-bytes between steps is the model state
# that stays resident (bf16 weights, fp32 gradient buffer, and the distributed optimizer's fp32
# main weights and Adam moments, 12 bytes a parameter split over the data-parallel ranks), so it
# falls with the data-parallel size. The script asks parasim (`parasim memory` of the imported
# scenario, last stage: params + grads + optimizer bytes) for that state at each candidate node
# count and keeps the one within SCALE_FIT of the measurement when every other candidate is at
# least SCALE_MARGIN off and SCALE_RATIO times further off: a scale the measurement singles out.
# Where it does not (a small optimizer share, a state parasim does not match), the case stays
# unscaled. The inferred cases are listed in subsets.yaml under `scale_inferred`; their peak
# memory is not an independent check (its resident part chose the scale).
SCALE_CANDIDATES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SCALE_FIT = 0.075
SCALE_MARGIN = 0.12
SCALE_RATIO = 2.5
# ... and only where the measured step is one a run of that GPU at that scale can have: model FLOPs
# at most the highest model-FLOP utilisation Megatron-LM has published, 56.3% (GPT 1T on 3072
# A100, README "Training Speed and Scalability" table, 2022; its 2024 H100 table peaks at 49%).
# A golden file whose step would need more was recorded on other hardware or at another scale.
SCALE_MFU_CEILING = 0.563

# Environment set by the CI launcher (tests/functional_tests/shell_test_utils/_run_training.sh)
# when the case's ENV_VARS leave them unset. Written as each file's defaults.
LAUNCHER_ENV = {
    "NCCL_PROTO": "simple",
    "NCCL_ALGO": "Ring",
    "NCCL_COLLNET_ENABLE": "0",
    "NCCL_NVLS_ENABLE": "0",
    "NCCL_BUFFSIZE": "4194304",
    "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",
}
# ENV_VARS that steer only the test harness, logging, or file locations: left out of `env`.
ENV_IRRELEVANT = {
    "ARTIFACTS_ROOT", "ENABLE_LIGHTWEIGHT_MODE", "HF_HOME", "MODEL_BF16_CKPT", "N_REPEAT",
    "N_REPEATS", "NCCL_DEBUG", "NON_DETERMINSTIC_RESULTS", "NVTE_ALLOW_UNSAFE_PICKLE_EXTRA_STATE",
    "PTQ_QUANTIZED_CKPT", "PYTHONWARNINGS", "QUANTIZATION_TYPE_DEBUG", "RECORD_CHECKPOINTS",
    "SKIP_PYTEST", "THROUGHPUT_START_STEP", "TOKENIZER",
}
# Environment variable names whose `${NAME}` in an argument marks a file location.
PATHLIKE_VAR = re.compile(r"PATH|DIR|CKPT|CHECKPOINT|BLEND|DATA|WANDB|OUTPUT|ROOT|HOME|PROMPT")
ENV_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


# ---- reading a snapshot --------------------------------------------------------------------
class GitSnapshot:
    """Files of one commit of a git directory, read without a work tree."""

    def __init__(self, git_dir, rev):
        self.git_dir = git_dir
        self.commit = self._git("rev-parse", rev + "^{commit}").strip()
        listing = self._git("ls-tree", "-r", "--name-only", self.commit, "--", CASES_DIR, RECIPES_DIR)
        self._paths = sorted(p for p in listing.splitlines() if p)
        self.commit_date = self._git("show", "-s", "--format=%cI", self.commit).strip()
        self._row_cache = {}

    def _git(self, *args):
        return subprocess.run(["git", "--git-dir=" + self.git_dir] + list(args), check=True,
                              stdout=subprocess.PIPE).stdout.decode("utf-8")

    def paths(self):
        return self._paths

    def history_rows(self, case):
        """Recipe rows of the newest earlier commit whose recipes named `case` (None if none).

        `git log -S` lists the commits that changed how often the name occurs in the recipe
        folders; a removal leaves the rows in the parent, an addition in the commit itself."""
        log = self._git("log", "--format=%H", "-S" + case, self.commit, "--", *HISTORY_DIRS)
        for c in log.split():
            for rev in (c + "^", c):
                rows = self._rows_at(rev)
                if any(r[2] == case for r in rows):
                    return rows
        return None

    def former_names(self, golden_path):
        """Earlier case names of a golden file, following its renames (`git log --follow`, at
        least 90% similar content: the same measured series). CI once named cases with cadence,
        platform and scale tokens, e.g. gpt3_mr_mcore_te_tp2_pp2_dgx_a100_1N8G."""
        log = self._git("log", "-M90%", "--follow", "--format=", "--name-only", self.commit,
                        "--", golden_path)
        out = []
        for p in log.split():
            parts = p.split("/")
            if len(parts) >= 2 and parts[-2] not in out and p != golden_path:
                out.append(parts[-2])
        return out

    def _rows_at(self, rev):
        if rev not in self._row_cache:
            try:
                sha = self._git("rev-parse", "--verify", "-q", rev + "^{commit}").strip()
            except subprocess.CalledProcessError:
                self._row_cache[rev] = []
                return []
            listing = self._git("ls-tree", "-r", "--name-only", sha, "--", *HISTORY_DIRS)
            files = [p for p in listing.splitlines() if p.endswith(".yaml")]
            texts = self.read_many(files, sha)
            self._row_cache[rev] = [("%s@%s" % (r[0], sha[:12]),) + tuple(r[1:])
                                    for r in rows_from_texts(texts)]
        return self._row_cache[rev]

    def read_many(self, paths, commit=None):
        """Contents of many files in one `git cat-file --batch` call, as {path: text}."""
        if not paths:
            return {}
        request = "".join("%s:%s\n" % (commit or self.commit, p) for p in paths).encode("utf-8")
        raw = subprocess.run(["git", "--git-dir=" + self.git_dir, "cat-file", "--batch"],
                             input=request, check=True, stdout=subprocess.PIPE).stdout
        out, at = {}, 0
        for p in paths:
            eol = raw.index(b"\n", at)
            header = raw[at:eol].decode("utf-8").split()
            if len(header) < 3 or header[1] != "blob":
                raise RuntimeError("cannot read %s at %s: %s" % (p, self.commit, header))
            size = int(header[2])
            out[p] = raw[eol + 1:eol + 1 + size].decode("utf-8")
            at = eol + 1 + size + 1
        return out


class TreeSnapshot:
    """Files of an extracted source tree; the commit it came from is given by the caller."""

    def __init__(self, root, commit):
        self.root = root
        self.commit = commit
        self.commit_date = ""
        found = []
        for sub in (CASES_DIR, RECIPES_DIR):
            base = os.path.join(root, sub)
            for dirpath, _, files in os.walk(base):
                for f in files:
                    found.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
        self._paths = sorted(found)

    def paths(self):
        return self._paths

    def history_rows(self, case):
        return None  # an extracted tree has no history

    def former_names(self, golden_path):
        return []

    def read_many(self, paths):
        out = {}
        for p in paths:
            with open(os.path.join(self.root, p), encoding="utf-8") as fh:
                out[p] = fh.read()
        return out


def open_snapshot(source, rev, commit):
    if os.path.isfile(os.path.join(source, "HEAD")) and os.path.isdir(os.path.join(source, "objects")):
        snap = GitSnapshot(source, rev)
    elif os.path.isdir(os.path.join(source, ".git")):
        snap = GitSnapshot(os.path.join(source, ".git"), rev)
    else:
        if not commit or not re.fullmatch(r"[0-9a-f]{40}", commit):
            sys.exit("an extracted tree needs --commit <40 hex digits> (the snapshot it came from)")
        snap = TreeSnapshot(source, commit)
    if commit and snap.commit != commit:
        sys.exit("snapshot is at %s, --commit asked for %s" % (snap.commit, commit))
    return snap


# ---- recipes: which nodes and GPUs each (case, environment, platform) ran on ----------------
def recipe_rows(snap):
    """[(recipe path, model family, test case, environment, platform, nodes, gpus)]."""
    files = [p for p in snap.paths() if p.startswith(RECIPES_DIR + "/") and p.endswith(".yaml")
             and p.count("/") == RECIPES_DIR.count("/") + 2]
    return rows_from_texts(snap.read_many(files))


def launch_facts(spec):
    """(processes per node, training script) that a recipe's script launches. The CI launcher
    starts GPUS_PER_NODE processes per node, 8 unless the recipe exports it; the gb200 recipes
    export GPUS_PER_NODE={gpus}, the h100/ recipes leave the default of 8 (even where spec.gpus
    says 1, as the GRPO recipes do)."""
    script = str(spec.get("script") or "")
    gpus = int(spec.get("gpus", 8))
    m = re.search(r"GPUS_PER_NODE=(\{gpus\}|\d+)", script)
    per_node = gpus if m and m.group(1) == "{gpus}" else int(m.group(1)) if m else 8
    t = re.search(r"TRAINING_SCRIPT_PATH=([A-Za-z0-9_./-]+)", script)
    return per_node, (t.group(1) if t else None)


def rows_from_texts(texts):
    """Rows (path, family, case, environment, platform, nodes, processes per node, spec.gpus,
    training script) of the recipes in {path: text}. A product commented out in a recipe
    (`# - test_case: [name]`) still tells which recipe, hence which spec, ran the case: it gives
    a row with environment and platform None."""
    rows = []
    for path, text in sorted(texts.items()):
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
            continue
        spec = doc["spec"]
        per_node, script = launch_facts(spec)
        nodes, gpus = int(spec.get("nodes", 1)), int(spec.get("gpus", 8))
        for entry in doc.get("products") or []:
            if not isinstance(entry, dict) or "products" not in entry:
                continue
            case = entry["test_case"][0]
            for block in entry["products"]:
                keys = sorted(k for k in block if k != "cadence" and isinstance(block[k], list))
                for combo in itertools.product(*[block[k] for k in keys]):
                    merged = dict(spec)
                    merged.update(zip(keys, combo))
                    rows.append((path, merged.get("model"), case, merged.get("environment"),
                                 merged.get("platforms"), int(merged.get("nodes", 1)), per_node,
                                 int(merged.get("gpus", 8)), script))
        for m in re.finditer(r"^[ \t]*#[ \t]*-[ \t]*test_case:[ \t]*\[[ \t]*([A-Za-z0-9_.-]+)[ \t]*\]",
                             text, re.M):
            rows.append((path + " (commented out)", spec.get("model"), m.group(1), None, None,
                         nodes, per_node, gpus, script))
    return rows


def recipe_class(path):
    """Which platforms a recipe file launches: gb200, or h100 (dgx_h100 and dgx_a100)."""
    return "gb200" if "gb200" in path.split("@")[0] else "h100"


def pick_row(rows, family, case, env, platform):
    """The row for this golden file among `rows`: same environment and platform, else same
    platform, else any row of a recipe of that platform's class (its spec gives nodes and GPUs
    for every row), active rows before commented-out ones."""
    mine = [r for r in rows if r[1:3] == (family, case)]
    for r in mine:
        if r[3:5] == (env, platform):
            return r, ""
    for r in mine:
        if r[4] == platform:
            return r, " (its %s row; no %s row)" % (r[3], env)
    same_class = [r for r in mine if recipe_class(r[0]) == RECIPE_FOLDER[platform]]
    for r in sorted(same_class, key=lambda r: (r[3] is None, r[0])):
        return r, " spec (the case has no %s row there)" % platform
    return None, ""


def scale_suffix(name, platform):
    """(nodes, gpus per node) from a _<N>N<G>G token of a case name, if it fits the platform."""
    m = re.search(r"_(\d+)N(\d+)G(?=_|$)", name)
    if not m:
        return None
    nodes, gpus = int(m.group(1)), int(m.group(2))
    if platform == "dgx_gb200" and gpus > 4:
        return None  # an 8-GPU node is not a GB200 tray: the token described another platform
    return nodes, gpus


def family_default(rows, family, case, platform):
    """(nodes, gpus, recipes) when every functional-test recipe of this family and platform class
    at the snapshot agrees on the scale (GB200 keeps separate *-1node recipes for `_1node` cases)."""
    one_node = case.endswith("_1node")
    scales, files = set(), set()
    for r in rows:
        path = r[0]
        name = path.rsplit("/", 1)[-1]
        if r[1] != family or recipe_class(path) != RECIPE_FOLDER[platform]:
            continue
        if any(w in name for w in ("perf", "inference", "grpo", "unit", "ckpt", "grads", "flextron")):
            continue
        if ("1node" in name) != one_node:
            continue
        scales.add((r[5], r[6]))
        files.add(path.split(" ")[0])
    if len(scales) == 1:
        n, g = scales.pop()
        return n, g, sorted(files)
    return None


def find_scale(snap, rows, family, case, env, platform, golden_path, test_type):
    """(nodes, gpus per node, how it was found) for one golden file, or (None, None, why)."""
    def from_row(r, how):
        if r[6] != r[7]:
            how += "; %d processes per node (the launcher's GPUS_PER_NODE), spec.gpus says %d" % (r[6], r[7])
        return r[5], r[6], "recipe %s%s" % (r[0], how), r[8]

    r, how = pick_row(rows, family, case, env, platform)
    if r:
        return from_row(r, how)
    old = snap.history_rows(case)
    if old:
        r, how = pick_row(old, family, case, env, platform)
        if r:
            return from_row(r, how + ", the last commit whose recipes named the case")
    ng = scale_suffix(case, platform)
    if ng:
        return ng[0], ng[1], "case name token _%dN%dG" % ng, None
    for former in snap.former_names(golden_path):
        ng = scale_suffix(former, platform)
        if ng:
            return ng[0], ng[1], "former case name %s (the golden file's rename history)" % former, None
        old = snap.history_rows(former)
        if old:
            r, how = pick_row(old, family, former, env, platform)
            if r:
                return from_row(r, how + " for the former name %s" % former)
    if test_type != "release":
        fd = family_default(rows, family, case, platform)
        if fd:
            return fd[0], fd[1], ("INFERRED: no recipe names the case; every %s functional recipe of "
                                  "family %s (%s) runs %dx%d" % (RECIPE_FOLDER[platform], family,
                                                                 ", ".join(fd[2]), fd[0], fd[1])), None
    return None, None, "no public recipe names the case, now or in the history", None


# ---- model_config.yaml: the launch arguments exactly as the CI launcher builds them ---------
def mapping_entries(node):
    """Key/value node pairs of a YAML mapping, with `<<` merge keys expanded (explicit keys win)."""
    merged, explicit = {}, {}
    order = []
    for k, v in node.value:
        if k.tag == "tag:yaml.org,2002:merge":
            sources = v.value if isinstance(v, yaml.SequenceNode) else [v]
            for src in sources:
                for kk, vv in mapping_entries(src):
                    if kk not in merged and kk not in explicit:
                        merged[kk] = vv
                        order.append(kk)
        else:
            if k.value not in explicit and k.value not in merged:
                order.append(k.value)
            explicit[k.value] = v
    return [(k, explicit.get(k, merged.get(k))) for k in order]


def unquote_like_xargs(text):
    """The launcher passes each value through `xargs` (trims, collapses blanks, drops quotes)."""
    try:
        return " ".join(shlex.split(text))
    except ValueError:
        return " ".join(text.split())


def is_true(node):
    return isinstance(node, yaml.ScalarNode) and node.value in ("true", "True", "TRUE") and (
        node.style is None or node.value == "true")


def render_flag(flag, node):
    """argv tokens for one MODEL_ARGS entry, or [] when the launcher drops it."""
    if not isinstance(node, yaml.ScalarNode):
        raise ValueError("%s: a %s value; the launcher passes scalars only" % (flag, node.id))
    if node.value == "" and node.style is not None:
        return []
    if is_true(node):
        return [flag]
    value = unquote_like_xargs(node.value)
    if value == "true":
        return [flag]
    if re.fullmatch(r"\([^)]+\)", value):
        return [flag, value]
    if re.fullmatch(r"\[[^\]]+\]", value):
        return [flag] + value[1:-1].split()
    if any(c in value for c in " |()"):
        return [flag, value]
    return [flag] + (value.split() or [value])


PATH_FLAG = re.compile(r"^--(load|save)$|-(path|paths|dir|file|files|model|checkpoint|load)$")


def scrub_path(flag, token):
    """Replace a file location by "<path>"; other tokens stay as written. A location is a value
    of a flag that names one (--load, --data-path, --vocab-file, --tokenizer-model, ...), a token
    that starts like a path, or one built from a path-like ${VAR} of the launcher."""
    if token.startswith("--"):
        return token
    refs = ENV_REF.findall(token)
    if refs and any(PATHLIKE_VAR.search(r) for r in refs):
        return "<path>"
    if PATH_FLAG.search(flag) or token.startswith(("/", "./", "../", "~/")):
        return "<path>"
    return token


def parse_config(text):
    """(argv, env, meta) from one model_config.yaml."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is None or not isinstance(root, yaml.MappingNode):
        raise ValueError("not a mapping")
    top = dict(mapping_entries(root))
    args_node = top.get("MODEL_ARGS")
    if not isinstance(args_node, yaml.MappingNode):
        raise ValueError("MODEL_ARGS is not a mapping of flags")
    argv, templated = [], []
    tokenizer_file = None
    for flag, node in mapping_entries(args_node):
        if flag == "--tokenizer-model" and isinstance(node, yaml.ScalarNode):
            tokenizer_file = node.value.strip().rstrip("/").rsplit("/", 1)[-1]
        for tok in render_flag(flag, node):
            clean = scrub_path(flag, tok)
            if clean == tok and ENV_REF.search(tok):
                templated.append(flag)
            argv.append(clean)
    env = {}
    env_node = top.get("ENV_VARS")
    if isinstance(env_node, yaml.MappingNode):
        for name, node in mapping_entries(env_node):
            if not isinstance(node, yaml.ScalarNode) or name in ENV_IRRELEVANT:
                continue
            if "/" in node.value or ENV_REF.search(node.value):
                continue
            env[name] = node.value
    meta = {}
    for key in ("TEST_TYPE", "MODE", "LAUNCHER"):
        node = top.get(key)
        if isinstance(node, yaml.ScalarNode):
            meta[key] = node.value
    meta["has_before_script"] = "BEFORE_SCRIPT" in top
    meta["later_runs_differ"] = sorted(k for k in top if re.fullmatch(r"MODEL_ARGS_\d+", k))
    gpn = None
    mev = top.get("MODEL_ENV_VARS")
    if isinstance(mev, yaml.MappingNode):
        first = dict(mapping_entries(mev)).get("MODEL_ARGS")
        if isinstance(first, yaml.MappingNode):
            g = dict(mapping_entries(first)).get("GPUS_PER_NODE")
            if isinstance(g, yaml.ScalarNode):
                gpn = int(g.value)
    meta["gpus_per_node_override"] = gpn
    meta["templated"] = templated
    meta["tokenizer_file"] = tokenizer_file
    return argv, env, meta


def tokenizer_vocab(flags, meta):
    """(vocabulary, source) of a known tokenizer file the arguments name without --vocab-size."""
    if "--vocab-size" in flags:
        return None
    return TOKENIZER_VOCAB.get(meta.get("tokenizer_file"))


def flag_values(argv):
    """{flag: [values]} from an argv list (a flag with no value maps to [])."""
    out, cur = {}, None
    for tok in argv:
        if tok.startswith("--"):
            cur = tok
            out[cur] = []
        elif cur is not None:
            out[cur].append(tok)
    return out


def int_flag(flags, name, default):
    vals = flags.get(name)
    if vals:
        try:
            return int(vals[0])
        except ValueError:
            return default
    return default


def model_kind(flags):
    """dense, moe or hybrid (a Mamba/attention hybrid stack, MoE or not)."""
    if any(f in flags for f in ("--hybrid-layer-pattern", "--hybrid-override-pattern",
                                "--is-hybrid-model", "--hybrid-attention-ratio",
                                "--hybrid-mlp-ratio")):
        return "hybrid"
    spec = " ".join(flags.get("--spec", []))
    if "hybrid" in spec or "mamba" in spec:
        return "hybrid"
    if int_flag(flags, "--num-experts", 0) > 0:
        return "moe"
    return "dense"


# ---- golden values ---------------------------------------------------------------------------
def metric_series(metric):
    """{step: float or None} from one metric of a golden file (dict or older list layout)."""
    vals = metric.get("values")
    if isinstance(vals, list):
        start, every = int(metric["start_step"]), int(metric["step_interval"])
        pairs = [(start + i * every, v) for i, v in enumerate(vals)]
    else:
        pairs = [(int(k), v) for k, v in vals.items()]
    out = {}
    for step, v in pairs:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[step] = float(v)
        else:
            out[step] = None
    return dict(sorted(out.items()))


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def quantile(xs, q):
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def step_time(series):
    """(median seconds, first step used, last step used, samples, p10, p90) or None."""
    finite = {s: v for s, v in series.items() if v is not None}
    if not finite:
        return None
    last = max(finite)
    start = SHORT_WARMUP_FROM if last <= SHORT_RUN_LAST else WARMUP_FROM
    used = [(s, v) for s, v in finite.items() if s >= start]
    if not used:
        return None
    vals = [v for _, v in used]
    return (median(vals), used[0][0], used[-1][0], len(vals), quantile(vals, 0.1),
            quantile(vals, 0.9))


# ---- output ----------------------------------------------------------------------------------
def q(s):
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(s, ensure_ascii=False)


def fmt_seconds(x):
    return "%.6gs" % x


def fmt_gib(b):
    return "%.4fGiB" % (b / 2.0 ** 30)


def case_subset(name):
    h = int(hashlib.sha256(name.encode("utf-8")).hexdigest()[:12], 16)
    return "training" if h % TRAIN_MOD == 0 else "held_out"


def case_files(snap):
    """Every file of a test case's folder (<CASES_DIR>/<family>/<case>/<file>)."""
    return [p for p in snap.paths()
            if p.startswith(CASES_DIR + "/") and p.count("/") == CASES_DIR.count("/") + 3]


def configs_of(snap, goldens):
    """The model_config.yaml beside each of `goldens` that the snapshot holds."""
    return sorted({p.rsplit("/", 1)[0] + "/model_config.yaml" for p in goldens}
                  & set(snap.paths()))


def build(snap):
    rows = recipe_rows(snap)
    goldens = case_files(snap)
    wanted = sorted(p for p in goldens if GOLDEN_RE.fullmatch(p.rsplit("/", 1)[1]))
    other_goldens = sorted(p for p in goldens if p.rsplit("/", 1)[1].startswith("golden_values")
                           and not GOLDEN_RE.fullmatch(p.rsplit("/", 1)[1]))
    configs = configs_of(snap, wanted)
    texts = snap.read_many(wanted + configs)

    cases, skipped = [], []
    for path in wanted:
        family, case, fname = path.split("/")[-3:]
        env_name, platform = GOLDEN_RE.fullmatch(fname).groups()
        record = {"path": path, "family_dir": family, "case": case, "environment": env_name,
                  "platform": platform}
        text = texts[path]
        if not text.strip():
            skipped.append(dict(record, reason="empty golden file"))
            continue
        golden = json.loads(text)
        it = golden.get("iteration-time")
        series = metric_series(it) if isinstance(it, dict) else {}
        st = step_time(series)
        if st is None:
            skipped.append(dict(record, reason="no finite iteration-time" if not it else
                                "iteration-time has no finite sample after warm-up",
                                metrics=sorted(golden)))
            continue
        cfg_path = path.rsplit("/", 1)[0] + "/model_config.yaml"
        if cfg_path not in texts:
            skipped.append(dict(record, reason="no model_config.yaml"))
            continue
        try:
            argv, envv, meta = parse_config(texts[cfg_path])
        except ValueError as e:
            skipped.append(dict(record, reason="model_config.yaml: %s" % e))
            continue
        flags = flag_values(argv)
        nodes, gpn, scale_from, script = find_scale(snap, rows, family, case, env_name, platform,
                                                    path, meta.get("TEST_TYPE"))
        if meta["gpus_per_node_override"]:
            gpn = meta["gpus_per_node_override"]
            scale_from += "; GPUS_PER_NODE=%d from MODEL_ENV_VARS" % gpn
        mem = golden.get("mem-max-allocated-bytes")
        mem_series = metric_series(mem) if isinstance(mem, dict) else {}
        mem_finite = {s: v for s, v in mem_series.items() if v is not None}
        alloc = golden.get("mem-allocated-bytes")
        alloc_finite = {s: v for s, v in (metric_series(alloc) if isinstance(alloc, dict) else {}).items()
                        if v is not None}
        tp = int_flag(flags, "--tensor-model-parallel-size", 1)
        pp = int_flag(flags, "--pipeline-model-parallel-size", 1)
        cp = int_flag(flags, "--context-parallel-size", 1)
        hidden = int_flag(flags, "--hidden-size", 0)
        kind = "rl" if script and "train_rl" in script else model_kind(flags)
        host_bound = 0 < hidden <= HOST_BOUND_MAX_HIDDEN
        name = "%s/%s (%s, %s)" % (family, case, platform, env_name)
        record.update(
            name=name, argv=argv, env=envv, meta=meta, kind=kind, host_bound=host_bound,
            gpu=PLATFORM_GPU[platform], nodes=nodes, gpus_per_node=gpn, scale_from=scale_from,
            hidden=hidden, layers=int_flag(flags, "--num-layers", 0), tp=tp, pp=pp, cp=cp,
            ep=int_flag(flags, "--expert-model-parallel-size", 1),
            step_s=st[0], step_first=st[1], step_last=st[2], step_n=st[3], step_p10=st[4],
            step_p90=st[5], series_first=min(series), series_last=max(series),
            series_every=(it.get("step_interval") if isinstance(it, dict) else None),
            nan_samples=sum(1 for v in series.values() if v is None),
            peak_bytes=(max(mem_finite.values()) if mem_finite else None),
            peak_steps=((min(mem_finite), max(mem_finite)) if mem_finite else None),
            alloc_bytes=(max(alloc_finite.values()) if alloc_finite else None),
            log_interval=int_flag(flags, "--log-interval", 1), script=script,
            vocab=tokenizer_vocab(flags, meta), scale_inferred=None,
            subset=case_subset("%s/%s" % (family, case)))
        record["dp"] = data_parallel(record)
        record["golden_sha"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        cases.append(record)
    # A golden file copied verbatim into another case is one measurement, not two: say so.
    by_sha = {}
    for c in cases:
        by_sha.setdefault(c["golden_sha"], []).append(c)
    for group in by_sha.values():
        for c in group:
            c["same_golden_as"] = [o["path"] for o in group if o is not c]
    return cases, skipped, other_goldens, rows


def data_parallel(c):
    """The data-parallel size of case `c` at its scale, or None (no scale, or GPUs that
    tp x pp x cp does not divide)."""
    if c["nodes"] is None:
        return None
    world, model = c["nodes"] * c["gpus_per_node"], c["tp"] * c["pp"] * c["cp"]
    return world // model if world % model == 0 else None


def import_scenario(parasim, c, nodes, gpus_per_node, workdir):
    """Case `c` imported at `nodes` into a scenario file in `workdir` (its path), or None where
    the arguments do not import at that scale."""
    script = os.path.join(workdir, "launch.sh")
    with open(script, "w", encoding="utf-8") as fh:
        for k, v in sorted(dict(LAUNCHER_ENV, **c["env"]).items()):
            fh.write("export %s=%s\n" % (k, shlex.quote(v)))
        fh.write("torchrun %s %s\n" % (c.get("script") or "pretrain_gpt.py",
                                        " ".join(shlex.quote(t) for t in c["argv"])))
    scenario = os.path.join(workdir, "scenario-%d.yaml" % nodes)
    cmd = [parasim, "import", "megatron", script, "--gpu", c["gpu"], "--nodes", str(nodes),
           "--gpus-per-node", str(gpus_per_node), "--out", scenario]
    if c["platform"] == "dgx_gb200":
        cmd += ["--nvlink-domain", "72"]
    if c["vocab"]:
        cmd += ["--vocab", str(c["vocab"][0])]
    if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        return None
    return scenario


def resident_bytes(parasim, scenario):
    """parasim's resident model state of an imported scenario (last stage: weights, gradients,
    optimizer state), or None."""
    r = subprocess.run([parasim, "memory", scenario, "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        return None
    last = json.loads(r.stdout.decode("utf-8"))["stages"][-1]
    return last["params_bytes"] + last["grads_bytes"] + last["optimizer_bytes"]


def implied_mfu(parasim, scenario, step_s):
    """The model-FLOP utilisation a step of `step_s` seconds would mean for an imported scenario
    (parasim's count of the step's model FLOPs over the GPUs' datasheet dense rate), or None."""
    r = subprocess.run([parasim, "run", scenario, "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        return None
    d = json.loads(r.stdout.decode("utf-8"))
    return d["mfu"] * d["step_time_s"] / step_s


def infer_scales(cases, parasim, workdir):
    """Sets nodes (and scale_inferred) of the unscaled cases whose resident memory singles out one
    scale (SCALE_* above); returns how many."""
    found = 0
    for c in cases:
        if c["nodes"] is not None or c["alloc_bytes"] is None or c["kind"] == "rl":
            continue
        gpn = c["gpus_per_node"] or (4 if c["platform"] == "dgx_gb200" else 8)
        errors = []
        for n in SCALE_CANDIDATES:
            scenario = import_scenario(parasim, c, n, gpn, workdir)
            b = resident_bytes(parasim, scenario) if scenario else None
            if b is not None:
                errors.append((abs(b / c["alloc_bytes"] - 1), n, b, scenario))
        if not errors:
            continue
        errors.sort()
        best, rest = errors[0], errors[1:]
        if not rest:  # one scale imports: nothing to single it out against
            continue
        if best[0] > SCALE_FIT or any(e[0] < max(SCALE_MARGIN, SCALE_RATIO * best[0]) for e in rest):
            continue
        # A step shorter than the model's FLOPs at the GPUs' peak is no run of this GPU at this
        # scale (a golden file recorded elsewhere): the case stays unscaled, and says why.
        mfu = implied_mfu(parasim, best[3], c["step_s"])
        if mfu is None:
            c["scale_from"] += ("; its resident memory gives %d nodes x %d, where parasim run "
                                "failed, so left unscaled" % (best[1], gpn))
            continue
        if mfu > SCALE_MFU_CEILING:
            c["scale_from"] += (
                "; its resident memory gives %d nodes x %d, where the measured step would mean "
                "%.0f%% model-FLOP utilisation, above the %.1f%% Megatron-LM has ever published: "
                "not a run of %s at that scale, so left unscaled" % (
                    best[1], gpn, 100 * mfu, 100 * SCALE_MFU_CEILING, c["gpu"]))
            continue
        c["nodes"], c["gpus_per_node"] = best[1], gpn
        c["dp"] = data_parallel(c)
        c["scale_from"] = (
            "INFERRED from the run's mem-allocated-bytes between steps (%d B), no public recipe "
            "naming the case: parasim's resident model state at %d nodes x %d is %+.1f%% off it, "
            "every other node count the arguments import at (%s) at least %.0f%% (%s)" % (
                int(c["alloc_bytes"]), best[1], gpn, 100 * (best[2] / c["alloc_bytes"] - 1),
                "/".join(str(e[1]) for e in sorted(rest, key=lambda e: e[1])),
                100 * rest[0][0],
                "; ".join("%d: %+.1f%%" % (e[1], 100 * (e[2] / c["alloc_bytes"] - 1))
                          for e in sorted(errors, key=lambda e: e[1]))))
        c["scale_from"] += "; the measured step is %.0f%% model-FLOP utilisation there" % (100 * mfu)
        c["scale_inferred"] = True
        found += 1
    return found


def group_of(c):
    if c["kind"] == "rl":
        return "rl"
    if c["host_bound"]:
        return "host-bound"
    return "%s-%s" % (PLATFORM_SHORT[c["platform"]], c["kind"])


def note_for(c):
    fname = c["path"].rsplit("/", 1)[1]
    parts = ["%s: iteration-time median of %d samples, steps %d..%d (series %d..%d); p10..p90 %s..%s"
             % (fname, c["step_n"], c["step_first"], c["step_last"], c["series_first"],
                c["series_last"], fmt_seconds(c["step_p10"]), fmt_seconds(c["step_p90"]))]
    if c["nan_samples"]:
        parts.append("%d nan samples dropped" % c["nan_samples"])
    if c["log_interval"] != 1:
        parts.append("--log-interval %d: each sample is the mean over that many steps" % c["log_interval"])
    if c["peak_bytes"] is not None:
        parts.append("peak = max mem-max-allocated-bytes over steps %d..%d = %d B (last rank)"
                     % (c["peak_steps"][0], c["peak_steps"][1], int(c["peak_bytes"])))
    else:
        parts.append("no mem-max-allocated-bytes in this golden file")
    if c["alloc_bytes"] is not None:
        parts.append("mem-allocated-bytes (between steps) up to %d B" % int(c["alloc_bytes"]))
    parts.append("scale: " + c["scale_from"])
    if c["vocab"]:
        parts.append("vocab: " + c["vocab"][1])
    if c["nodes"] is None:
        flags = flag_values(c["argv"])
        ep = int_flag(flags, "--expert-model-parallel-size", 1)
        etp = int_flag(flags, "--expert-tensor-parallel-size", c["tp"])
        need = c["pp"] * math.lcm(c["tp"] * c["cp"], ep * etp)
        parts.append("nodes not public; the parallel sizes need a multiple of %d GPUs" % need)
    elif c["dp"] is None:
        parts.append("nodes*gpus_per_node does not divide by tp*pp*cp = %d" % (c["tp"] * c["pp"] * c["cp"]))
    meta = c["meta"]
    parts.append("TEST_TYPE %s" % meta.get("TEST_TYPE", "?"))
    if c.get("script"):
        parts.append("script %s" % c["script"])
    if meta["has_before_script"]:
        parts.append("the case runs a BEFORE_SCRIPT (see its model_config.yaml)")
    if meta["later_runs_differ"]:
        parts.append("later runs use %s; the goldens are the first run's" % ", ".join(meta["later_runs_differ"]))
    if meta["templated"]:
        parts.append("templated by the launcher: %s" % ", ".join(sorted(set(meta["templated"]))))
    flags = flag_values(c["argv"])
    for f in ("--rampup-batch-size", "--step-batch-size-schedule"):
        if f in flags:
            parts.append("%s: the global batch may change during the run" % f)
    if c.get("same_golden_as"):
        parts.append("golden file byte-identical to %s" % ", ".join(c["same_golden_as"]))
    return "; ".join(parts)


def emit_case(c, out):
    out.append("  - name: %s" % q(c["name"]))
    out.append("    import:")
    out.append("      megatron: [%s]" % ", ".join(q(t) for t in c["argv"]))
    out.append("      env: {%s}" % ", ".join("%s: %s" % (q(k), q(v)) for k, v in sorted(c["env"].items())))
    out.append("      gpu: %s" % c["gpu"])
    if c["nodes"] is not None:
        out.append("      nodes: %d" % c["nodes"])
    if c["vocab"]:
        out.append("      vocab: %d" % c["vocab"][0])
    out.append("      gpus_per_node: %d" % c["gpus_per_node"] if c["gpus_per_node"] else
               "      gpus_per_node: %d" % (4 if c["platform"] == "dgx_gb200" else 8))
    if c["platform"] == "dgx_gb200":
        # A DGX GB200 is an NVL72 rack: its trays of 4 GPUs share one NVLink domain of 72.
        out.append("      nvlink_domain: 72")
    out.append("    measured:")
    out.append("      step_time: %s" % fmt_seconds(c["step_s"]))
    if c["peak_bytes"] is not None:
        out.append("      peak_memory: %s" % fmt_gib(c["peak_bytes"]))
        # Logged by global rank world_size-1 only: the last pipeline stage.
        out.append("      peak_memory_stage: last")
    out.append("      note: %s" % q(note_for(c)))


GROUP_TEXT = {
    "dense": "dense transformers (GPT, Llama-style, BERT, T5, LLaVA): no --num-experts, no hybrid layer pattern",
    "moe": "mixture-of-experts transformers: --num-experts > 0 (Mixtral, DeepSeek-V3 proxies with MLA/MTP, Qwen-style)",
    "hybrid": "Mamba/attention hybrids (a --hybrid-layer-pattern or hybrid --spec), with or without MoE layers",
}


def header(snap, group, n):
    c = snap.commit
    lines = [
        "# Generated by tools/megatron_ci/generate.py; do not edit by hand (re-run the script).",
        "#",
        "# Primary source: https://github.com/%s at commit %s%s" % (
            REPO, c, (" (%s)" % snap.commit_date) if snap.commit_date else ""),
        "#   measured series: %s/<family>/<case>/golden_values_{dev,lts}_dgx_{h100,gb200,a100}.json" % CASES_DIR,
        "#   launch arguments: %s/<family>/<case>/model_config.yaml (MODEL_ARGS, ENV_VARS)" % CASES_DIR,
        "#   nodes and GPUs per node: %s/{h100,gb200}/*.yaml (spec.nodes, spec.gpus)" % RECIPES_DIR,
        "# The numbers are facts recorded in that public repository; the selection and this file are ours.",
        "#",
    ]
    if group == "host-bound":
        lines += [
            "# Group: host-bound, every GPU and family: --hidden-size <= %d (tiny models)." % HOST_BOUND_MAX_HIDDEN,
            "#   At these sizes the model math of a step, even at the datasheet dense BF16 rate, is at",
            "#   most ~19% of the measured step (median ~1.5%): the step is kernel launches, Python,",
            "#   synchronisation and collective latency. The rule ignores the step's length on purpose:",
            "#   12-layer, 512-wide GPTs take a median 0.2 s on one DGX H100 or A100 and on two GB200",
            "#   trays, but 1.7 s on one GB200 tray (4 GPUs); that difference is not GPU work.",
        ]
    elif group == "rl":
        lines.append("# Group: rl, reinforcement-learning (GRPO) runs of train_rl.py, every GPU: an iteration")
        lines.append("#   holds rollout generation (inference) as well as the training step, so it is no")
        lines.append("#   training step time; kept apart from the step-time groups.")
    else:
        gpu, kind = group.split("-", 1)
        lines.append("# Group: %s, %s; --hidden-size > %d (the rest is in host-bound.yaml)."
                     % (gpu.upper() if gpu != "gb200" else "GB200", GROUP_TEXT[kind], HOST_BOUND_MAX_HIDDEN))
    lines += [
        "# %d cases, one per (case, platform, dev|lts container) golden file." % n,
        "#",
        "# Rules:",
        "# - step_time: iteration-time is the wall-clock seconds per training step on the last rank,",
        "#   averaged over --log-interval steps (1 in nearly every case); evaluation and checkpoint",
        "#   saving are outside it. Warm-up: samples before step %d are dropped (before step %d when"
        % (WARMUP_FROM, SHORT_WARMUP_FROM),
        "#   the series ends at step %d or earlier); step_time is the median of every finite sample"
        % SHORT_RUN_LAST,
        "#   from there to the series' end. The note gives the steps used and the p10..p90 spread.",
        "# - peak_memory: the largest mem-max-allocated-bytes in the series, i.e. PyTorch's",
        "#   allocated_bytes.all.peak (never reset) as logged by the one rank that writes TensorBoard,",
        "#   global rank world_size-1: the LAST pipeline stage (last TP, CP and DP rank). It counts",
        "#   tensors only: no CUDA context, NCCL buffers or allocator reserve/fragmentation. Compare",
        "#   it with the last stage's prediction, not the largest stage's.",
        "# - import.megatron: MODEL_ARGS in file order, rendered as the CI launcher",
        "#   (shell_test_utils/_run_training.sh) does: `true` gives the bare flag, `[a b]` gives",
        "#   separate values, other values one token each. File locations are \"<path>\"; values",
        "#   still templated with ${VAR} are left as written. The launcher also sets --exit-interval",
        "#   (= --train-iters) and, under Slurm, --exit-duration-in-mins; neither is added here.",
        "# - import.env: the case's ENV_VARS that can change speed or memory (harness-only,",
        "#   logging and path variables dropped); defaults.import.env holds the launcher's own",
        "#   settings, which apply where the case sets none.",
        "# - nodes, gpus_per_node: the recipe row for this case, environment and platform; else",
        "#   the same case's row in the recipe folder of that platform (h100/ launches dgx_a100",
        "#   too; a commented-out entry still names its recipe); else the same, in the newest",
        "#   earlier commit whose recipes named the case; else a _<N>N<G>G token of the case's name",
        "#   or of a former name of its golden file (git log --follow); else, marked INFERRED in",
        "#   the note, the one scale all functional recipes of the family and platform share.",
        "#   gpus_per_node is the processes per node the launcher starts (GPUS_PER_NODE: the gb200",
        "#   recipes export spec.gpus, the h100/ recipes leave the launcher's default of 8). Where",
        "#   no scale is public (release tests, run from NVIDIA's internal recipes), the one the",
        "#   run's own resident memory singles out (INFERRED from mem-allocated-bytes, in the note;",
        "#   subsets.yaml's scale_inferred), else `nodes` is absent and subsets.yaml lists the case",
        "#   under `unscaled`.",
        "# - gpu: dgx_h100 -> h100-sxm5-80gb, dgx_gb200 -> gb200 (4 GPUs per node, nvlink_domain 72:",
        "#   a DGX GB200 is an NVL72 rack),",
        "#   dgx_a100 -> a100-sxm4-80gb.",
    ]
    return lines


def write_outputs(snap, cases, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    groups = {}
    for c in cases:
        groups.setdefault(group_of(c), []).append(c)
    written = {}
    for g in sorted(groups):
        members = sorted(groups[g], key=lambda c: (c["family_dir"], c["case"], c["platform"], c["environment"]))
        out = header(snap, g, len(members))
        out += ["source: %s" % q("%s functional-test goldens at %s" % (REPO, snap.commit)),
                "defaults:", "  import:",
                "    env: {%s}" % ", ".join("%s: %s" % (q(k), q(v)) for k, v in sorted(LAUNCHER_ENV.items())),
                "cases:"]
        for c in members:
            emit_case(c, out)
        text = "\n".join(out) + "\n"
        doc = yaml.safe_load(text)  # self-check: the file parses and holds every case once
        assert len(doc["cases"]) == len(members)
        assert len({x["name"] for x in doc["cases"]}) == len(members)
        path = os.path.join(out_dir, g + ".yaml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        written[g] = len(members)
    # Remove group files a previous snapshot produced and this one does not.
    for f in sorted(os.listdir(out_dir)):
        if f.endswith(".yaml") and f != "subsets.yaml" and f[:-5] not in groups:
            os.remove(os.path.join(out_dir, f))

    by_case = {}
    for c in cases:
        by_case.setdefault("%s/%s" % (c["family_dir"], c["case"]), []).append(c)
    training, held_out, unscaled, inferred = [], [], [], []
    for key in sorted(by_case):
        if any(c.get("scale_inferred") for c in by_case[key]):
            inferred.append(key)
        if any(c["nodes"] is None for c in by_case[key]):
            unscaled.append(key)
        if all(c["nodes"] is None for c in by_case[key]):
            continue
        if by_case[key][0]["subset"] == "training":
            training.append(key)
        else:
            held_out.append(key)
    lines = [
        "# Generated by tools/megatron_ci/generate.py from https://github.com/%s at %s." % (REPO, snap.commit),
        "# Training and held-out subsets of the megatron-ci corpus, by case (<family>/<case>): every",
        "# golden file of a case (each platform, dev and lts) falls in its case's subset, so no run of a",
        "# held-out case is seen in fitting. Rule: the first 12 hex digits of sha256(\"<family>/<case>\")",
        "# read as an integer; 0 mod %d -> training, else held_out. `unscaled`: cases with a golden" % TRAIN_MOD,
        "# file of no known node count (release tests); a case none of whose files has one is in",
        "# neither subset (validate reports such files as failed). `scale_inferred`: cases whose node count",
        "# was inferred from their own resident memory (generate.py, SCALE_*); they are in training or",
        "# held_out by the rule above, and listed here too so they can be reported apart.",
        "# Counts: %d training, %d held_out, %d unscaled cases; %d scale_inferred." % (
            len(training), len(held_out), len(unscaled), len(inferred)),
        "training:",
    ] + ["  - %s" % k for k in training] + ["held_out:"] + ["  - %s" % k for k in held_out] + \
        ["unscaled:"] + ["  - %s" % k for k in unscaled] + \
        ["scale_inferred:"] + ["  - %s" % k for k in inferred]
    with open(os.path.join(out_dir, "subsets.yaml"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return written, (len(training), len(held_out), len(unscaled), len(inferred))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "tests", "validation", "megatron-ci"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="Megatron-LM git dir, checkout, or extracted tree")
    ap.add_argument("--rev", default="HEAD", help="revision to read from a git dir (default HEAD)")
    ap.add_argument("--commit", help="expected commit (required for an extracted tree)")
    ap.add_argument("--out", default=default_out, help="output folder (default %(default)s)")
    ap.add_argument("--inventory", help="also write every case and skipped golden file as JSON here")
    ap.add_argument("--parasim", default=os.path.normpath(os.path.join(here, "..", "..", "bazel-bin", "tools", "parasim")),
                    help="the parasim binary that infers the release tests' scale (default %(default)s)")
    a = ap.parse_args()
    if not os.access(a.parasim, os.X_OK):
        sys.exit("no parasim binary at %s: build it (tools/bazel build //tools:parasim) or give --parasim" % a.parasim)
    snap = open_snapshot(a.source, a.rev, a.commit)
    cases, skipped, other_goldens, rows = build(snap)
    with tempfile.TemporaryDirectory() as workdir:
        inferred = infer_scales(cases, a.parasim, workdir)
    written, subsets = write_outputs(snap, cases, a.out)
    if a.inventory:
        with open(a.inventory, "w", encoding="utf-8") as fh:
            json.dump({"commit": snap.commit, "commit_date": snap.commit_date, "cases": cases,
                       "skipped": skipped, "other_goldens": other_goldens,
                       "recipe_rows": rows}, fh, indent=1, sort_keys=True)
    print("commit %s: %d cases in %d files (%s); %d golden files skipped; subsets %d/%d/%d, %d scale_inferred; "
          "%d golden files scaled by their memory"
          % (snap.commit, len(cases), len(written),
             ", ".join("%s %d" % kv for kv in sorted(written.items())), len(skipped), *subsets, inferred))


if __name__ == "__main__":
    main()
