// parasim as a Python module (pybind11): the CLI's verbs, returning what their --json prints
// as Python dicts and lists.
//
//   import parasim
//   r = parasim.run("scenarios/gpt3-175b-1024-a100.yaml", set={"parallelism.tp": 4})
//   r["step_time_s"]
//   rows = parasim.sweep("scenarios/gpt3-175b-1024-a100-sweep.yaml")["results"]
//
// A scenario is a path or a dict shaped like the YAML file. Bad input raises parasim.Error (a
// ValueError) whose message is the CLI's "file:line:col: error: ..."; a dict's messages name
// "<dict>" and count lines in its JSON form (one key per line). The simulation runs in C++ with
// the GIL released; Python only converts the finished JSON.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace py = pybind11;

namespace parasim {
namespace {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A path (str or os.PathLike) or a dict: the dict travels as JSON text, which is YAML.
void SetInput(const py::object& doc, CommonOptions* opt) {
  if (py::isinstance<py::dict>(doc)) {
    opt->file = "<dict>";
    opt->text =
        py::module_::import("json").attr("dumps")(doc, py::arg("indent") = 1).cast<std::string>();
    return;
  }
  opt->file = py::module_::import("os").attr("fspath")(doc).cast<std::string>();
}

// set={"parallelism.tp": 4} or ["parallelism.tp=4"]: the CLI's --set overrides. A value that is
// not a string is written as JSON (true, [1, 2]), which the YAML reader takes as it would.
std::vector<std::string> SetsOf(const py::object& set) {
  std::vector<std::string> sets;
  if (set.is_none()) return sets;
  if (py::isinstance<py::dict>(set)) {
    py::object dumps = py::module_::import("json").attr("dumps");
    for (auto [key, value] : set.cast<py::dict>()) {
      std::string v = py::isinstance<py::str>(value) ? value.cast<std::string>()
                                                     : dumps(value).cast<std::string>();
      sets.push_back(py::str(key).cast<std::string>() + "=" + v);
    }
    return sets;
  }
  if (py::isinstance<py::str>(set)) return {set.cast<std::string>()};
  for (py::handle item : set) sets.push_back(py::str(item).cast<std::string>());
  return sets;
}

using Verb = Status (*)(const CommonOptions&);

// Runs a verb with --json into a string and hands Python the parsed result.
py::object Call(Verb verb, CommonOptions opt) {
  std::string out;
  opt.json = true;
  opt.json_out = &out;
  Status st = Status::Ok();
  {
    py::gil_scoped_release release;
    st = verb(opt);
  }
  if (!st.ok()) {
    if (st.exit_code() == 2) throw InputError(st.message());
    throw std::runtime_error(st.message());
  }
  return py::module_::import("json").attr("loads")(out);
}

// sweep's results as flat records, one per layout, for pandas.DataFrame: the run object's
// numbers, its layout's keys beside them, exposed communication as exposed_<kind>_s, and the
// worst stage's peak memory.
py::list FlatLayouts(const py::list& results) {
  py::list rows;
  for (py::handle h : results) {
    py::dict r = py::reinterpret_borrow<py::dict>(h);
    py::dict row;
    for (auto [k, v] : r) {
      if (py::isinstance<py::dict>(v) || py::isinstance<py::list>(v)) continue;
      row[k] = v;
    }
    if (r.contains("layout")) {
      for (auto [k, v] : r["layout"].cast<py::dict>()) row[k] = v;
    }
    if (r.contains("exposed_comm_s")) {
      for (auto [k, v] : r["exposed_comm_s"].cast<py::dict>()) {
        row[py::str("exposed_" + py::str(k).cast<std::string>() + "_s")] = v;
      }
    }
    if (r.contains("peak_memory_bytes")) {
      double peak = 0;
      for (py::handle b : r["peak_memory_bytes"]) peak = std::max(peak, b.cast<double>());
      row["peak_memory_bytes"] = peak;
    }
    rows.append(row);
  }
  return rows;
}

CommonOptions Options(const py::object& doc, const py::object& set, int jobs = 0) {
  CommonOptions opt;
  opt.jobs = jobs;
  SetInput(doc, &opt);
  opt.sets = SetsOf(set);
  return opt;
}

}  // namespace
}  // namespace parasim

PYBIND11_MODULE(parasim, m) {
  using parasim::Call;
  using parasim::CommonOptions;
  using parasim::Options;
  namespace py = pybind11;
  m.doc() =
      "parasim: a discrete-event cluster simulator for planning large-model training.\n"
      "Each function returns what the matching CLI verb prints with --json.";
  py::register_exception<parasim::InputError>(m, "Error", PyExc_ValueError);

  m.def(
      "run",
      [](const py::object& scenario, const py::object& set, bool ops, bool full) {
        CommonOptions opt = Options(scenario, set);
        opt.ops = ops;
        opt.full = full;
        return Call(parasim::RunCommand, opt);
      },
      py::arg("scenario"), py::arg("set") = py::none(), py::arg("ops") = false,
      py::arg("full") = false,
      "Predicts one training step of the scenario's layout (parasim run --json).");
  m.def(
      "memory",
      [](const py::object& scenario, const py::object& set) {
        return Call(parasim::MemoryCommand, Options(scenario, set));
      },
      py::arg("scenario"), py::arg("set") = py::none(),
      "Memory per GPU and per pipeline stage (parasim memory --json).");
  m.def(
      "sweep",
      [](const py::object& scenario, const py::object& set, int jobs, bool robust) {
        CommonOptions opt = Options(scenario, set, jobs);
        opt.robust = robust;
        py::dict out = Call(parasim::SweepCommand, opt);
        out["layouts"] = parasim::FlatLayouts(out["results"]);
        return out;
      },
      py::arg("scenario"), py::arg("set") = py::none(), py::arg("jobs") = 0,
      py::arg("robust") = false,
      "Replays every layout of the scenario's sweep block and ranks them (parasim sweep "
      "--json; jobs=0 uses every core), plus 'layouts': the results as flat records, one per "
      "layout, so pandas.DataFrame(parasim.sweep(path)['layouts']) is a table. robust=True "
      "adds 'robustness' (sweep --robust): the leaders ranked again under each swing of the "
      "cost model's least certain rates.");
  m.def(
      "diff",
      [](const py::object& a, const py::object& b, const py::object& set, const py::object& set_a,
         const py::object& set_b) {
        CommonOptions opt = Options(a, set);
        if (!b.is_none()) {
          CommonOptions other = Options(b, py::none());
          opt.vs = other.file;
          opt.vs_text = other.text;
        }
        opt.sets_a = parasim::SetsOf(set_a);
        opt.sets_b = parasim::SetsOf(set_b);
        return Call(parasim::DiffCommand, opt);
      },
      py::arg("a"), py::arg("b") = py::none(), py::arg("set") = py::none(),
      py::arg("set_a") = py::none(), py::arg("set_b") = py::none(),
      "Two what-ifs side by side (parasim diff --json): B, or A again under set_b; 'rows' holds "
      "what moved (step time by component, memory per stage, MFU), 'reason' the one-line why.");
  m.def(
      "validate",
      [](const py::object& file, const py::object& set, int jobs) {
        return Call(parasim::ValidateCommand, Options(file, set, jobs));
      },
      py::arg("file"), py::arg("set") = py::none(), py::arg("jobs") = 0,
      "Predicts every case of a validation file and compares (parasim validate --json).");
}
