// parasim as a Python module (pybind11): one function per verb of the CLI's table
// (tools/verbs/registry.h), taking the verb's positional input(s) and its flags as keyword
// arguments, and returning what the verb's --json prints, as dicts and lists built straight from
// its JSON tree.
//
//   import parasim
//   r = parasim.run("scenarios/gpt3-175b-1024-a100.yaml", set={"parallelism.tp": 4})
//   r["step_time_s"]
//   rows = parasim.sweep("scenarios/gpt3-175b-1024-a100-sweep.yaml", jobs=2)["results"]
//   parasim.scale("scenarios/llama2-7b-ddp-8-a100.yaml", gpus=[2, 4, 8])
//
// A flag's keyword is its name without the dashes ("--max-layouts" -> max_layouts; "--from" is
// from_), its default the CLI's. A scenario is a path or a dict shaped like the YAML file. Bad
// input raises parasim.Error (a ValueError) whose message is the CLI's "file:line:col: error:
// ..."; a dict's messages name "<dict>" and count lines in its JSON form (one key per line). The
// simulation runs in C++ with the GIL released.
#include <dlfcn.h>
#include <fmt/core.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/utf8.h"
#include "tools/verbs/registry.h"

namespace py = pybind11;

namespace parasim {
namespace {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A JSON value as Python's json.loads would read its Dump: integral numbers as ints.
py::object ToPython(const Json& j) {
  switch (j.kind()) {
    case Json::Kind::kNull:
      return py::none();
    case Json::Kind::kBool:
      return py::bool_(j.bool_value());
    case Json::Kind::kNumber: {
      const double d = j.number();
      if (!std::isfinite(d)) return py::none();  // Dump writes null
      if (d == std::floor(d) && std::fabs(d) < 9e15) return py::int_(static_cast<int64_t>(d));
      return py::float_(d);
    }
    case Json::Kind::kString: {
      // As the CLI's JSON writes it: bytes that are not UTF-8 (a file name's) as U+FFFD.
      const std::string& s = j.string_value();
      PyObject* str = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
      if (str == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::str>(str);
    }
    case Json::Kind::kArray: {
      py::list out;
      for (const Json& item : j.items()) out.append(ToPython(item));
      return out;
    }
    case Json::Kind::kObject: {
      py::dict out;
      for (const auto& [key, value] : j.fields()) out[py::str(key)] = ToPython(value);
      return out;
    }
  }
  return py::none();
}

// A path (str or os.PathLike, its bytes as the OS names it: os.fsencode, so that a file name
// that is not UTF-8 reaches the file), or anything else as its str(). A NUL byte would cut the
// C++ side's path where Python's open() refuses it: refused alike.
std::string PathOrStr(py::handle value) {
  std::string out;
  if (py::isinstance<py::bytes>(value)) {
    out = value.cast<std::string>();  // a bytes path, as open() takes it
  } else if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__")) {
    py::object os = py::module_::import("os");
    out = os.attr("fsencode")(os.attr("fspath")(value)).cast<std::string>();
  } else {
    out = py::str(value).cast<std::string>();
  }
  if (out.find('\0') != std::string::npos) throw py::value_error("embedded null byte");
  return out;
}

// A list flag's values: None, a str or path, a dict {"key": value} (--set's "key=value", a value
// that is not a string written as JSON, which the YAML reader takes as it would), or a list.
std::vector<std::string> ListOf(const Flag& f, py::handle value) {
  std::vector<std::string> out;
  if (value.is_none()) return out;
  if (py::isinstance<py::dict>(value)) {
    py::object dumps = py::module_::import("json").attr("dumps");
    for (auto [key, v] : value.cast<py::dict>()) {
      // ensure_ascii=False: the YAML reader takes the characters, not JSON's surrogate pairs.
      out.push_back(PathOrStr(py::str(key)) + "=" +
                    (py::isinstance<py::str>(v)
                         ? PathOrStr(v)
                         : dumps(v, py::arg("ensure_ascii") = false).cast<std::string>()));
    }
  } else if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__")) {
    out.push_back(PathOrStr(value));
  } else {
    for (py::handle item : value) out.push_back(PathOrStr(item));
  }
  if (f.delimiter == 0) return out;
  std::vector<std::string> split;  // as the CLI splits --params a,b
  for (const std::string& s : out) {
    size_t at = 0;
    for (size_t c; (c = s.find(f.delimiter, at)) != std::string::npos; at = c + 1) {
      split.push_back(s.substr(at, c - at));
    }
    split.push_back(s.substr(at));
  }
  return split;
}

// A string flag: None, a str or path, or a list joined by commas (gpus=[8, 16, 64]).
std::string StringOf(py::handle value) {
  if (value.is_none()) return "";
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::string out;
    for (py::handle item : value) out += (out.empty() ? "" : ",") + PathOrStr(item);
    return out;
  }
  return PathOrStr(value);
}

// A document: a path, or a dict that travels as JSON text (which is YAML).
Document DocumentOf(py::handle value) {
  if (value.is_none()) return {};
  if (py::isinstance<py::dict>(value)) {
    py::object dumps = py::module_::import("json").attr("dumps");
    return {
        "<dict>",
        dumps(value, py::arg("indent") = 1, py::arg("ensure_ascii") = false).cast<std::string>()};
  }
  return {PathOrStr(value), std::nullopt};
}

// A Python argument as the value of flag `f`, of the type of its default.
FlagValue ValueOf(const std::string& verb, const Flag& f, py::handle value) {
  try {
    return std::visit(
        [&](const auto& like) -> FlagValue {
          using T = std::decay_t<decltype(like)>;
          if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            return ListOf(f, value);
          } else if constexpr (std::is_same_v<T, std::string>) {
            return StringOf(value);
          } else if constexpr (std::is_same_v<T, Document>) {
            return DocumentOf(value);
          } else {
            return value.cast<T>();  // bool, int, int64_t
          }
        },
        f.default_value);
  } catch (const py::cast_error&) {
    throw py::type_error(
        fmt::format("{}(): {}={} is not a {}", verb, f.python, py::repr(value).cast<std::string>(),
                    std::holds_alternative<bool>(f.default_value) ? "bool" : "number"));
  }
}

// The flags' values from a call's arguments: positionals in order, then keywords.
std::vector<FlagValue> ValuesOf(const Verb& verb, const py::args& args, const py::kwargs& kwargs) {
  std::vector<FlagValue> values = verb.Defaults();
  std::vector<bool> given(values.size(), false);
  std::vector<size_t> positional;
  for (size_t i = 0; i < verb.flags.size(); ++i) {
    if (verb.flags[i].positional) positional.push_back(i);
  }
  if (args.size() > positional.size()) {
    throw py::type_error(fmt::format("{}() takes {} positional argument(s) but {} were given",
                                     verb.name, positional.size(), args.size()));
  }
  for (size_t a = 0; a < args.size(); ++a) {
    values[positional[a]] = ValueOf(verb.name, verb.flags[positional[a]], args[a]);
    given[positional[a]] = true;
  }
  for (auto [key, value] : kwargs) {
    const std::string name = py::str(key).cast<std::string>();
    auto it = std::find_if(verb.flags.begin(), verb.flags.end(),
                           [&](const Flag& f) { return !f.python.empty() && f.python == name; });
    if (it == verb.flags.end()) {
      throw py::type_error(
          fmt::format("{}() got an unexpected keyword argument '{}'", verb.name, name));
    }
    const size_t i = it - verb.flags.begin();
    if (given[i]) {
      throw py::type_error(fmt::format("{}() got multiple values for '{}'", verb.name, name));
    }
    values[i] = ValueOf(verb.name, *it, value);
    given[i] = true;
  }
  for (size_t i : positional) {
    if (verb.flags[i].required && !given[i]) {
      throw py::type_error(
          fmt::format("{}() missing required argument '{}'", verb.name, verb.flags[i].python));
    }
  }
  return values;
}

// This module's file (calibrate looks for its program from there, as the CLI from its binary).
std::string ModuleFile() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ModuleFile), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

// Runs a verb as its --json would, and returns the JSON tree as Python objects.
py::object Call(const Verb& verb, const py::args& args, const py::kwargs& kwargs) {
  const std::vector<FlagValue> values = ValuesOf(verb, args, kwargs);
  const VerbContext ctx{.json = true, .self = ModuleFile(), .every_layout = true};
  StatusOr<std::unique_ptr<VerbResult>> result = Status::Ok();
  std::string notes;
  Json json;
  {
    py::gil_scoped_release release;
    result = verb.run(values, ctx);
    if (result.ok()) {
      notes = (*result)->Notes();
      json = (*result)->ToJson();
    }
  }
  if (!result.ok()) {
    // A message may quote a path that is not UTF-8: Python's str of it takes U+FFFD, as the
    // CLI's JSON does (a strict decode raised UnicodeDecodeError in place of parasim.Error).
    const std::string message = ReplaceInvalidUtf8(result.status().message());
    if (result.status().exit_code() == 2) throw InputError(message);
    throw std::runtime_error(message);
  }
  if (!notes.empty()) fmt::print(stderr, "{}", notes);
  // A sweep's 'layouts': every replayed layout as a flat record (what pandas.DataFrame wants),
  // from its JSON view (VerbContext::every_layout).
  return ToPython(json);
}

// A default as Python writes it.
std::string Repr(const FlagValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x.empty() ? "None" : "'" + x + "'";
        } else {
          return "None";
        }
      },
      v);
}

// "run(scenario, *, set=None, timing=False, ...)" and the help of each argument.
std::string DocOf(const Verb& verb) {
  std::string sig, args;
  bool star = false;
  for (const Flag& f : verb.flags) {
    if (f.python.empty()) continue;
    if (!f.positional && !star) {
      sig += sig.empty() ? "*" : ", *";
      star = true;
    }
    sig += (sig.empty() ? "" : ", ") + f.python + (f.required ? "" : "=" + Repr(f.default_value));
    args += fmt::format("  {}: {}\n", f.python, f.help);
  }
  return fmt::format("{}({})\n\n{}.\nReturns what `parasim {} --json` prints.\n\n{}", verb.name,
                     sig, verb.help, verb.name, args);
}

}  // namespace
}  // namespace parasim

PYBIND11_MODULE(parasim, m) {
  namespace py = pybind11;
  py::options options;
  options.disable_function_signatures();  // each verb's docstring opens with its own
  m.doc() =
      "parasim: a discrete-event cluster simulator for planning large-model training.\n"
      "One function per CLI verb, returning what the verb prints with --json.";
  py::register_exception<parasim::InputError>(m, "Error", PyExc_ValueError);
  for (parasim::Verb& v : parasim::Verbs()) {
    auto verb = std::make_shared<const parasim::Verb>(std::move(v));
    // A verb named by a Python keyword (`import`) is also reachable as NAME_.
    const std::string alias = verb->name == "import" ? verb->name + "_" : "";
    for (const std::string& name : {verb->name, alias}) {
      if (name.empty()) continue;
      m.def(
          name.c_str(),
          [verb](const py::args& args, const py::kwargs& kwargs) {
            return parasim::Call(*verb, args, kwargs);
          },
          parasim::DocOf(*verb).c_str());
    }
  }
}
