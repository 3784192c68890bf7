"""Tests of the parasim Python module against the CLI's --json (the same data, as dicts).

Prints "[unittest] test cases: N | P passed | F failed" for .ci/run's count.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import parasim

RUNFILES = os.environ.get("TEST_SRCDIR", "") + "/" + os.environ.get("TEST_WORKSPACE", "parasim")
os.chdir(RUNFILES)
CLI = "tools/parasim"
EXAMPLE = "scenarios/gpt3-175b-1024-a100.yaml"

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


def cli(*args):
    out = subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


class ModuleTest(unittest.TestCase):
    def test_run_path_matches_cli(self):
        self.assertEqual(parasim.run(EXAMPLE), cli("run", EXAMPLE))

    def test_run_set_matches_cli(self):
        got = parasim.run(EXAMPLE, set={"parallelism.tp": 4, "parallelism.dp": 32,
                                        "training.recompute": "selective"})
        want = cli("run", EXAMPLE, "--set", "parallelism.tp=4", "--set", "parallelism.dp=32",
                   "--set", "training.recompute=selective")
        self.assertEqual(got, want)
        self.assertEqual(got["layout"]["tp"], 4)
        self.assertEqual(parasim.run(EXAMPLE, set=["parallelism.tp=4", "parallelism.dp=32",
                                                   "training.recompute=selective"]), want)

    def test_run_dict_matches_cli_on_the_same_document(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            json.dump(SMALL, f)  # JSON is YAML
        try:
            self.assertEqual(parasim.run(SMALL), cli("run", f.name))
        finally:
            os.unlink(f.name)

    def test_memory(self):
        got = parasim.memory(SMALL)
        self.assertIn("fits", got)
        self.assertEqual(got, parasim.memory(dict(SMALL)))

    def test_sweep_rows_are_uniform_records(self):
        doc = dict(SMALL, sweep={"tp": [1, 2, 4], "micro_batch": [1, 2]})
        got = parasim.sweep(doc, jobs=1)
        rows = got["results"]
        self.assertGreater(len(rows), 1)
        self.assertEqual(len({tuple(sorted(r)) for r in rows}), 1)  # one column set: a table
        times = [r["step_time_s"] for r in rows]
        self.assertEqual(times, sorted(times))
        # 'layouts': the same results as flat records (what pandas.DataFrame wants).
        flat = got["layouts"]
        self.assertEqual(len(flat), len(rows))
        self.assertEqual([f["step_time_s"] for f in flat], times)
        self.assertEqual([f["tp"] for f in flat], [r["layout"]["tp"] for r in rows])
        for f in flat:
            self.assertFalse(any(isinstance(v, (dict, list)) for v in f.values()))
            self.assertIn("exposed_dp_s", f)
        self.assertEqual(flat[0]["peak_memory_bytes"], max(rows[0]["peak_memory_bytes"]))

    def test_sweep_robust(self):
        doc = dict(SMALL, sweep={"tp": [1, 2, 4], "micro_batch": [1, 2]})
        self.assertNotIn("robustness", parasim.sweep(doc, jobs=1))
        got = parasim.sweep(doc, jobs=1, robust=True)["robustness"]
        # One node: no scale-out fabric to swing.
        self.assertEqual(got["swung"], 10)
        self.assertEqual(len(got["swings"]), 10)
        self.assertEqual(got["held"], sum(w["holds"] for w in got["swings"]))
        self.assertEqual({w["parameter"] for w in got["swings"]},
                         {"gemm", "attention", "memory", "intra", "host"})

    def test_diff_matches_cli(self):
        got = parasim.diff(EXAMPLE, set_b={"training.recompute": "selective"})
        want = cli("diff", EXAMPLE, "--set-b", "training.recompute=selective")
        self.assertEqual(got, want)
        rows = {r["what"]: r for r in got["rows"]}
        self.assertLess(rows["step time"]["b"], rows["step time"]["a"])
        self.assertTrue(got["reason"].startswith("A is behind B"))
        self.assertEqual(parasim.diff(SMALL, SMALL)["rows"][0]["a"],
                         parasim.diff(SMALL, SMALL)["rows"][0]["b"])

    def test_validate_dict(self):
        doc = {"source": "a test", "cases": [
            {"name": "one", "scenario": SMALL, "measured": {"step_time": "1.0s"}}]}
        got = parasim.validate(doc, jobs=1)
        self.assertEqual(len(got["cases"]), 1)
        self.assertIsNotNone(got["cases"][0]["predicted_s"])

    def test_bad_dict_raises_located_error(self):
        bad = dict(SMALL, parallelism={"tp": 3, "pp": 1, "dp": 4})
        with self.assertRaises(parasim.Error) as e:
            parasim.run(bad)
        self.assertRegex(str(e.exception), r"^<dict>:\d+:\d+: error: ")
        self.assertTrue(issubclass(parasim.Error, ValueError))

    def test_missing_file_raises_with_its_path(self):
        with self.assertRaises(parasim.Error) as e:
            parasim.run("no/such/file.yaml")
        self.assertIn("no/such/file.yaml:1:1: error:", str(e.exception))

    def test_bad_set_raises(self):
        with self.assertRaises(parasim.Error) as e:
            parasim.run(EXAMPLE, set={"parallelism.tpp": 2})
        self.assertIn("tpp", str(e.exception))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"[unittest] test cases: {result.testsRun} | {result.testsRun - failed} passed"
          f" | {failed} failed | {len(result.skipped)} skipped")
    sys.exit(1 if failed else 0)
