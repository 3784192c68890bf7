"""Tests of the parasim Python module against the CLI's --json: one function per verb, the same
data as dicts, and bad input raising parasim.Error with the CLI's file:line:col message.

Prints "[unittest] test cases: N | P passed | F failed" for .ci/run's count.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import parasim

RUNFILES = os.environ.get("TEST_SRCDIR", "") + "/" + os.environ.get("TEST_WORKSPACE", "parasim")
os.chdir(RUNFILES)
CLI = "tools/parasim"
EXAMPLE = "scenarios/gpt3-175b-1024-a100.yaml"
SEVEN = "scenarios/llama2-7b-ddp-8-a100.yaml"

# A small scenario as a dict: the same keys as a YAML file.
SMALL = {
    "name": "small",
    "cluster": {"gpu": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8,
                "intra_node": "nvlink3-a100"},
    "model": "llama2-7b",
    "training": {"seq_len": 2048, "global_batch": 16, "micro_batch": 1, "precision": "bf16",
                 "optimizer": "adam", "recompute": "selective"},
    "parallelism": {"tp": 2, "pp": 1, "dp": 4, "zero": 1},
}
SWEPT = dict(SMALL, sweep={"tp": [1, 2, 4], "micro_batch": [1, 2]})
# The same scenario with a layout that does not divide the cluster: bad input at a line.
BAD = dict(SMALL, parallelism={"tp": 3, "pp": 1, "dp": 4})
LOCATED = r"^<dict>:\d+:\d+: error: "

# Keys measured on the wall clock, not predicted (tests/golden_test.cc drops the same).
WALL_CLOCK = {"elapsed_s", "layouts_per_second", "valid_layouts_per_second", "replays_per_second"}

# Measured step times of three small jobs (tests/cli_test.cc's `fit --runs` case).
RUNS = """source: our jobs
defaults:
  cluster: {gpu: a100-sxm4-80gb, nodes: 1, gpus_per_node: 8, intra_node: nvlink3-a100}
  model: gpt3-1.3b
  training: {seq_len: 2048}
cases:
  - name: dp8
    scenario: {parallelism: {dp: 8}, training: {global_batch: 32, micro_batch: 4}}
    measured: {step_time: 1.1s}
  - name: tp2
    scenario: {parallelism: {tp: 2, dp: 4}, training: {global_batch: 32, micro_batch: 2}}
    measured: {step_time: 1.3s}
  - name: dp8-big
    scenario: {parallelism: {dp: 8}, training: {global_batch: 64, micro_batch: 4}}
    measured: {step_time: 2.1s}
"""


def kernel(name, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur}


# A Kineto trace of one step on one rank: a GEMM, flash attention, an element-wise kernel and
# an NCCL all-reduce (tests/traces/kineto-step.json is the CLI tests' fuller one).
TRACE = {"traceEvents": [
    kernel("ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", 1000, 400),
    kernel("flash_fwd_kernel", 1400, 300),
    kernel("vectorized_elementwise_kernel", 1700, 100),
    kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 1900, 250),
]}


def cli(*args):
    out = subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def cli_error(*args):
    """The CLI's exit code and message for bad input."""
    out = subprocess.run([CLI, *args], capture_output=True, text=True)
    return out.returncode, out.stderr.strip()


def predicted(d):
    """A result without its wall-clock keys."""
    return {k: v for k, v in d.items() if k not in WALL_CLOCK}


class Files:
    """A temporary folder with files of the tests' documents."""

    def __init__(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))  # JSON is YAML
        return path

    def path(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        shutil.rmtree(self.dir)


class VerbTest(unittest.TestCase):
    def setUp(self):
        self.files = Files()

    def tearDown(self):
        self.files.close()

    def assertRaisesLocated(self, fn, *args, **kwargs):
        with self.assertRaises(parasim.Error) as e:
            fn(*args, **kwargs)
        self.assertRegex(str(e.exception), LOCATED)
        return e.exception


class RunTest(VerbTest):
    def test_path_matches_cli(self):
        self.assertEqual(parasim.run(EXAMPLE), cli("run", EXAMPLE))

    def test_set_matches_cli(self):
        got = parasim.run(EXAMPLE, set={"parallelism.tp": 4, "parallelism.dp": 32,
                                        "training.recompute": "selective"})
        want = cli("run", EXAMPLE, "--set", "parallelism.tp=4", "--set", "parallelism.dp=32",
                   "--set", "training.recompute=selective")
        self.assertEqual(got, want)
        self.assertEqual(got["layout"]["tp"], 4)
        self.assertIsInstance(got["layout"]["tp"], int)
        self.assertEqual(parasim.run(EXAMPLE, set=["parallelism.tp=4", "parallelism.dp=32",
                                                   "training.recompute=selective"]), want)

    def test_dict_matches_cli_on_the_same_document(self):
        self.assertEqual(parasim.run(SMALL), cli("run", self.files.write("small.yaml", SMALL)))

    def test_flags_are_keywords(self):
        self.assertEqual(parasim.run(SEVEN, ops=True), cli("run", SEVEN, "--ops"))
        svg = self.files.path("t.svg")
        parasim.run(SEVEN, svg=svg)
        with open(svg) as f:
            self.assertTrue(f.read().startswith("<svg"))

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.run, BAD)
        self.assertTrue(issubclass(parasim.Error, ValueError))
        with self.assertRaises(parasim.Error) as e:
            parasim.run("no/such/file.yaml")
        self.assertIn("no/such/file.yaml:1:1: error:", str(e.exception))
        with self.assertRaises(parasim.Error) as e:
            parasim.run(EXAMPLE, set={"parallelism.tpp": 2})
        self.assertIn("tpp", str(e.exception))
        with self.assertRaises(parasim.Error) as e:
            parasim.run(EXAMPLE, timing=True, repeat=0)
        self.assertEqual(str(e.exception), "--repeat=0:1:1: error: expected a value from 1 to 100000")

    def test_text_beyond_ascii_and_nul_bytes(self):
        # A character outside the BMP in a dict scenario went as a JSON surrogate pair, which the
        # YAML reader refused ("invalid unicode: 55357"); the same name in a file ran.
        named = dict(SMALL, name="run \U0001F600")
        self.assertEqual(parasim.run(named)["scenario"], "run \U0001F600")
        self.assertEqual(parasim.run(SMALL, set={"name": "\U0001F600"})["scenario"], "\U0001F600")
        # A NUL cut the path where Python's open() refuses it ('s.yaml\0x' read s.yaml).
        for call in (lambda: parasim.run(SEVEN + "\0garbage"),
                     lambda: parasim.run(SEVEN, trace="out.json\0zzz"),
                     lambda: parasim.run(SEVEN, set=["name=a\0b"])):
            with self.assertRaises(ValueError) as e:
                call()
            self.assertIn("embedded null byte", str(e.exception))
        # A path that is not UTF-8: read as the OS names it; an error quoting it is still
        # parasim.Error (it was UnicodeDecodeError), the bad byte as U+FFFD.
        missing = os.fsdecode(b"missing\xff.yaml")
        with self.assertRaises(parasim.Error) as e:
            parasim.run(missing)
        self.assertIn("missing\ufffd.yaml", str(e.exception))
        odd = self.files.write("odd.yaml", SMALL)
        named = os.path.join(os.path.dirname(odd), os.fsdecode(b"odd\xff.yaml"))
        shutil.copy(odd, named)
        self.assertEqual(parasim.run(named), parasim.run(odd))
        self.assertEqual(parasim.run(os.fsencode(odd)), parasim.run(odd))

    def test_arguments_are_checked_as_python_checks_them(self):
        with self.assertRaises(TypeError):
            parasim.run()
        with self.assertRaises(TypeError):
            parasim.run(EXAMPLE, bogus=1)
        with self.assertRaises(TypeError):
            parasim.run(EXAMPLE, {"parallelism.tp": 4})  # flags are keywords
        with self.assertRaises(TypeError):
            parasim.run(EXAMPLE, repeat="many")
        self.assertTrue(parasim.run.__doc__.startswith("run(scenario, *, set=None, "))


class MemoryTest(VerbTest):
    def test_matches_cli(self):
        self.assertEqual(parasim.memory(EXAMPLE), cli("memory", EXAMPLE))
        got = parasim.memory(SMALL)
        self.assertEqual(got, cli("memory", self.files.write("small.yaml", SMALL)))
        self.assertIn("fits", got)

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.memory, BAD)


class SweepTest(VerbTest):
    def test_matches_cli(self):
        got = parasim.sweep(SWEPT, jobs=1)
        want = cli("sweep", self.files.write("swept.yaml", SWEPT), "--jobs", "1")
        self.assertEqual(predicted({k: v for k, v in got.items() if k != "layouts"}),
                         predicted(want))

    def test_rows_are_uniform_records(self):
        got = parasim.sweep(SWEPT, jobs=1)
        rows = got["results"]
        self.assertGreater(len(rows), 1)
        self.assertEqual(len({tuple(sorted(r)) for r in rows}), 1)  # one column set: a table
        times = [r["step_time_s"] for r in rows]
        self.assertEqual(times, sorted(times))
        # 'layouts': every replayed layout as a flat record (what pandas.DataFrame wants), the
        # ranked ones first in the results' order, not only the top rows.
        got = parasim.sweep(dict(SWEPT, sweep=dict(SWEPT["sweep"], dp="auto", top=2)), jobs=1,
                            exhaustive=True)
        rows = got["results"]
        times = [r["step_time_s"] for r in rows]
        self.assertEqual(len(rows), 2)
        flat = got["layouts"]
        self.assertEqual(len(flat), got["replayed"])
        self.assertGreater(len(flat), len(rows))
        self.assertEqual([f["step_time_s"] for f in flat[:len(rows)]], times)
        self.assertEqual([f["tp"] for f in flat[:len(rows)]], [r["layout"]["tp"] for r in rows])
        self.assertEqual([f["rank"] for f in flat[:got["feasible"]]],
                         list(range(1, got["feasible"] + 1)))
        for f in flat:
            self.assertFalse(any(isinstance(v, (dict, list)) for v in f.values()))
            self.assertIn("exposed_dp_s", f)
        self.assertEqual(flat[0]["peak_memory_bytes"], max(rows[0]["peak_memory_bytes"]))
        # A throughput sweep computes no goodput factor: none, not 1 (every row read 1).
        self.assertTrue(all(f["goodput"] is None for f in flat))

    def test_robust(self):
        self.assertNotIn("robustness", parasim.sweep(SWEPT, jobs=1))
        got = parasim.sweep(SWEPT, jobs=1, robust=True)["robustness"]
        # One node: no scale-out fabric to swing.
        self.assertEqual(got["swung"], 10)
        self.assertEqual(len(got["swings"]), 10)
        self.assertEqual(got["held"], sum(w["holds"] for w in got["swings"]))
        self.assertEqual({w["parameter"] for w in got["swings"]},
                         {"gemm", "attention", "memory", "intra", "host"})

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.sweep, dict(SWEPT, model="no-such-model"))
        with self.assertRaises(parasim.Error) as e:
            parasim.sweep(SWEPT, max_layouts=0)
        self.assertIn("--max-layouts=0:1:1: error:", str(e.exception))


class ScaleTest(VerbTest):
    def test_matches_cli(self):
        got = parasim.scale(SEVEN, gpus=[2, 4, 8], jobs=2)
        self.assertEqual(got, cli("scale", SEVEN, "--gpus", "2,4,8", "--jobs", "2"))
        self.assertEqual(parasim.scale(SEVEN, gpus="2,4,...,8", jobs=2), got)
        self.assertEqual([p["gpus"] for p in got["points"]], [2, 4, 8])

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.scale, BAD, gpus=[8])
        with self.assertRaises(parasim.Error) as e:
            parasim.scale(SEVEN, gpus=[8, 4])
        code, message = cli_error("scale", SEVEN, "--gpus", "8,4")
        self.assertEqual((code, str(e.exception)), (2, message))


class ValidateTest(VerbTest):
    DOC = {"source": "a test", "cases": [
        {"name": "one", "scenario": SMALL, "measured": {"step_time": "1.0s"}}]}

    def test_matches_cli(self):
        got = parasim.validate(self.DOC, jobs=1)
        self.assertEqual(got, cli("validate", self.files.write("v.yaml", self.DOC), "--jobs", "1"))
        self.assertEqual(len(got["cases"]), 1)
        self.assertIsNotNone(got["cases"][0]["predicted_s"])

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.validate, {"source": "a test", "cases": 3})


class FitTest(VerbTest):
    def test_runs_match_cli(self):
        runs = self.files.write("runs.yaml", RUNS)
        got = parasim.fit(runs=runs, params="sustained_factor,launch_overhead", jobs=2)
        want = cli("fit", "--runs", runs, "--params", "sustained_factor,launch_overhead", "--jobs", "2")
        self.assertEqual(got, want)
        self.assertEqual([p["name"] for p in got["params"]], ["sustained_factor", "launch_overhead"])

    def test_bad_input(self):
        with self.assertRaises(parasim.Error) as e:
            parasim.fit()
        self.assertEqual(str(e.exception), cli_error("fit")[1])
        with self.assertRaises(parasim.Error) as e:
            parasim.fit(["no/such.log"])
        self.assertIn("no/such.log:1:1: error:", str(e.exception))


class CalibrateTest(VerbTest):
    def setUp(self):
        super().setUp()
        # A stand-in for the calibration program (which needs CUDA and a GPU): it notes its
        # arguments and refuses, as the real one does where no GPU is usable.
        self.args = self.files.path("args.txt")
        program = self.files.write(
            "calibrate.sh", f"#!/bin/sh\necho \"$@\" > {self.args}\n"
                            "echo 'no usable CUDA GPU here' >&2\nexit 2\n")
        os.chmod(program, 0o755)
        os.environ["PARASIM_CALIBRATE"] = program

    def tearDown(self):
        os.environ.pop("PARASIM_CALIBRATE")
        super().tearDown()

    def test_refusal_raises_the_cli_message_with_the_same_arguments(self):
        out = self.files.path("m.yaml")
        with self.assertRaises(parasim.Error) as e:
            parasim.calibrate(quick=True, out=out, only=["gemm", "memory"])
        with open(self.args) as f:
            python_args = f.read()
        code, message = cli_error("calibrate", "--quick", "--out", out, "--only", "gemm,memory")
        with open(self.args) as f:
            self.assertEqual(f.read(), python_args)
        self.assertEqual(python_args, f"--out {out} --quick --only gemm,memory\n")
        self.assertEqual(code, 2)
        self.assertEqual(message.splitlines()[-1], str(e.exception))
        self.assertEqual(str(e.exception), "calibrate: the calibration program refused (see above)")

    def test_bad_input(self):
        with self.assertRaises(parasim.Error) as e:
            parasim.calibrate(only="gemm;rm")
        self.assertEqual(str(e.exception), cli_error("calibrate", "--only", "gemm;rm")[1])
        self.assertRegex(str(e.exception), r"^calibrate:1:1: error: --only 'gemm;rm'")

class ReportTest(VerbTest):
    def test_matches_cli(self):
        out = self.files.path("r.html")
        want = cli("report", EXAMPLE, "--out", out, "--set-b", "training.recompute=selective")
        with open(out) as f:
            cli_html = f.read()
        got = parasim.report(EXAMPLE, out=out, set_b={"training.recompute": "selective"})
        self.assertEqual(got, want)
        with open(out) as f:
            self.assertEqual(f.read(), cli_html)

    def test_from_a_sweep(self):
        results = self.files.write("sweep.json", parasim.sweep(SWEPT, jobs=1))
        got = parasim.report(from_=results, out=self.files.path("s.html"))
        self.assertEqual(got, {"out": self.files.path("s.html")})
        with open(got["out"]) as f:
            self.assertIn("<h1>Sweep: small</h1>", f.read())

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.report, BAD, out=self.files.path("r.html"))
        with self.assertRaises(parasim.Error) as e:
            parasim.report()
        self.assertEqual(str(e.exception), cli_error("report")[1])


class DiffTest(VerbTest):
    def test_matches_cli(self):
        got = parasim.diff(EXAMPLE, set_b={"training.recompute": "selective"})
        want = cli("diff", EXAMPLE, "--set-b", "training.recompute=selective")
        self.assertEqual(got, want)
        rows = {r["what"]: r for r in got["rows"]}
        self.assertLess(rows["step time"]["b"], rows["step time"]["a"])
        self.assertTrue(got["reason"].startswith("A is behind B"))
        self.assertEqual(parasim.diff(SMALL, SMALL)["rows"][0]["a"],
                         parasim.diff(SMALL, SMALL)["rows"][0]["b"])

    def test_bad_input(self):
        self.assertRaisesLocated(parasim.diff, SMALL, BAD)
        with self.assertRaises(parasim.Error) as e:
            parasim.diff(SMALL)
        self.assertIn("<dict>:1:1: error: nothing to compare", str(e.exception))


class CompareTest(VerbTest):
    def test_matches_cli(self):
        trace = self.files.write("step.json", TRACE)
        got = parasim.compare(SEVEN, trace=trace)
        self.assertEqual(got, cli("compare", SEVEN, "--trace", trace))
        self.assertEqual(got["kernels"], 4)
        kinds = {k["kind"]: k["measured_s"] for k in got["kinds"]}
        self.assertAlmostEqual(kinds["GEMM"], 400e-6)
        self.assertAlmostEqual(kinds["idle"], 100e-6)

    def test_bad_input(self):
        trace = self.files.write("step.json", TRACE)
        self.assertRaisesLocated(parasim.compare, BAD, trace=trace)
        with self.assertRaises(parasim.Error) as e:
            parasim.compare(SEVEN)  # no trace
        self.assertIn("compare:1:1: error: give the profiler trace", str(e.exception))
        with self.assertRaises(parasim.Error) as e:
            parasim.compare(SEVEN, trace=self.files.write("not.json", {"hello": [1]}))
        self.assertIn("not.json:1:1: error: ", str(e.exception))


class CatalogTest(VerbTest):
    def test_matches_cli(self):
        got = parasim.catalog()
        self.assertEqual(got, cli("catalog"))
        self.assertIn("h100-sxm5-80gb", {g["id"] for g in got["gpus"]})


SERVE = "scenarios/llama3-70b-serve-8-h100.yaml"
LAUNCH = "tests/fixtures/megatron/train_gpt.sh"


class ServeTest(VerbTest):
    def test_matches_cli(self):
        got = parasim.serve(SERVE)
        self.assertEqual(predicted(got), predicted(cli("serve", SERVE)))
        self.assertGreater(got["tokens_per_s"], 0)
        self.assertLessEqual(got["ttft_s"]["p50"], got["ttft_s"]["p99"])

    def test_bad_input(self):
        bad = {"name": "x", "cluster": {"gpu": "h100-sxm5-80gb", "nodes": 1},
               "model": "llama3-70b", "serving": {"tp": 3}}
        e = self.assertRaisesLocated(parasim.serve, bad)
        self.assertIn("unknown key 'tp'", str(e))


class ImportTest(VerbTest):
    def test_matches_cli(self):
        got = parasim.import_("megatron", LAUNCH, gpu="h100-sxm5-80gb", nodes=2)
        want = cli("import", "megatron", LAUNCH, "--gpu", "h100-sxm5-80gb", "--nodes", "2")
        self.assertEqual(got, want)
        self.assertIn("cluster.gpu", got["keys"])
        # What it wrote is a scenario the other verbs take.
        path = self.files.write("imported.yaml", got["scenario"])
        self.assertGreater(parasim.run(path)["step_time_s"], 0)

    def test_bad_input(self):
        with self.assertRaises(parasim.Error) as e:
            parasim.import_("megatron", LAUNCH, gpu="no-such-gpu", nodes=2)
        self.assertIn("unknown GPU 'no-such-gpu'", str(e.exception))
        self.assertEqual(cli_error("import", "megatron", LAUNCH, "--gpu", "no-such-gpu")[0], 2)


class ModuleTest(unittest.TestCase):
    def test_one_function_per_verb(self):
        for verb in ["run", "memory", "sweep", "scale", "validate", "fit", "calibrate", "report",
                     "diff", "compare", "catalog", "serve"]:
            self.assertTrue(callable(getattr(parasim, verb)), verb)
            self.assertIn(f"parasim {verb} --json", getattr(parasim, verb).__doc__)
        # `import` is a Python keyword: also parasim.import_.
        self.assertIs(callable(parasim.import_), True)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"[unittest] test cases: {result.testsRun} | {result.testsRun - failed} passed"
          f" | {failed} failed | {len(result.skipped)} skipped")
    sys.exit(1 if failed else 0)
