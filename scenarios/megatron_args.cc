#include "scenarios/megatron_args.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

#include "scenarios/shell_branches.h"
#include "sim/io.h"
#include "sim/yaml_reader.h"

namespace parasim {
namespace {

// A shell word, or an operator: `(` and `)` of an array assignment, or the end of a command.
struct Word {
  ArgToken tok;
  enum class Kind { kWord, kOpen, kClose, kEnd } kind = Kind::kWord;
  int quote_at = -1;  // the length of tok.text where the word's first quote opened; -1: none
};

// Splits shell text into words with their places (see ShellLexer::Run).
class ShellLexer {
 public:
  // `literal_pipes`: `|` and `&` are characters of a word (a plain list of flags, where a
  // pipeline layout `Et*7|t*7mL` is written unquoted), not command separators.
  explicit ShellLexer(const std::string& text, bool literal_pipes = false)
      : s_(text), literal_pipes_(literal_pipes) {}

  // Quotes removed, backslash-newline joined, `#` comments dropped. Unquoted newlines, `;`,
  // `&&`, `||` and `|` end a command, except inside `NAME=( ... )`; `(` and `)` are operators.
  // Redirections (`> f`, `2>&1`, `< f`, `&> f`) are dropped with their targets.
  std::vector<Word> Run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (!literal_pipes_ && IsRedirection()) {
        Redirection();
      } else if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        Advance(2);
      } else if (c == '\\' && i_ + 1 < s_.size()) {
        Start();
        cur_.text += s_[i_ + 1];
        Advance(2);
      } else if (c == '\'' || c == '"') {
        Start();
        if (quote_at_ < 0) quote_at_ = static_cast<int>(cur_.text.size());
        Quoted(c);
      } else if (c == '#' && !in_word_) {
        while (i_ < s_.size() && s_[i_] != '\n') Advance(1);
      } else if (c == ' ' || c == '\t' || c == '\r') {
        Finish();
        Advance(1);
      } else if (c == '\n' || c == ';' || (!literal_pipes_ && (c == '|' || c == '&'))) {
        Finish();
        // The separator's character: `&&` and `||` join a condition (ShellBranches).
        if (depth_ == 0) out_.push_back({{std::string(1, c), line_, col_}, Word::Kind::kEnd});
        drop_next_ = false;  // a redirection without a target
        Advance(1);
      } else if (c == '(' || c == ')') {
        Finish();
        depth_ = std::max(0, depth_ + (c == '(' ? 1 : -1));
        out_.push_back(
            {{std::string(1, c), line_, col_}, c == '(' ? Word::Kind::kOpen : Word::Kind::kClose});
        Advance(1);
      } else {
        Start();
        cur_.text += c;
        Advance(1);
      }
    }
    Finish();
    out_.push_back({{}, Word::Kind::kEnd});
    return out_;
  }

 private:
  void Advance(size_t n) {
    for (size_t k = 0; k < n && i_ < s_.size(); ++k, ++i_) {
      if (s_[i_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }
  void Start() {
    if (in_word_) return;
    in_word_ = true;
    cur_ = {"", line_, col_};
    quote_at_ = -1;
    dropping_ = drop_next_;
    drop_next_ = false;
  }
  void Finish() {
    if (in_word_ && !dropping_) out_.push_back({cur_, Word::Kind::kWord, quote_at_});
    in_word_ = false;
    dropping_ = false;
  }
  // `>`, `<`, or `&>` here, outside a word's quotes.
  bool IsRedirection() const {
    const char c = s_[i_];
    return c == '>' || c == '<' || (c == '&' && i_ + 1 < s_.size() && s_[i_ + 1] == '>');
  }
  // A redirection: a file-descriptor number just before it (`2>`) goes, the operator
  // (`>`, `>>`, `>&`, `&>`, `<`, `<<`, `>|`) goes, and so does the word after it.
  void Redirection() {
    const bool fd = in_word_ && quote_at_ < 0 && !cur_.text.empty() &&
                    std::all_of(cur_.text.begin(), cur_.text.end(),
                                [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
    if (fd) in_word_ = false;
    Finish();
    Advance(1);
    for (int k = 0; k < 2 && i_ < s_.size() && std::string_view("<>&|").find(s_[i_]) != s_.npos;
         ++k) {
      Advance(1);
    }
    drop_next_ = true;
  }
  void Quoted(char q) {
    Advance(1);
    while (i_ < s_.size() && s_[i_] != q) {
      if (q == '"' && s_[i_] == '\\' && i_ + 1 < s_.size()) Advance(1);
      cur_.text += s_[i_];
      Advance(1);
    }
    Advance(1);
  }

  const std::string& s_;
  bool literal_pipes_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
  int depth_ = 0;
  bool in_word_ = false;
  int quote_at_ = -1;
  bool drop_next_ = false;  // the next word is a redirection's target
  bool dropping_ = false;   // the word being read is one
  ArgToken cur_;
  std::vector<Word> out_;
};

bool IsName(const std::string& s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

// A script's variables: `NAME=value` (one token) and `NAME=( ... )` (an array).
using Vars = std::map<std::string, std::vector<ArgToken>>;

// The variable a whole word names ($X, ${X}, ${X[@]}, ${X[*]}), or "".
std::string WholeReference(const std::string& w) {
  if (w.size() < 2 || w[0] != '$') return "";
  std::string name = w.substr(1);
  if (name.front() == '{' && name.back() == '}') name = name.substr(1, name.size() - 2);
  for (const char* tail : {"[@]", "[*]"}) {
    if (name.size() > 3 && name.compare(name.size() - 3, 3, tail) == 0) {
      name.resize(name.size() - 3);
    }
  }
  return IsName(name) ? name : "";
}

// `${X}` and `$X` of known one-token variables inside a word, `${X:-default}` the default where
// X is unknown; others stay as written.
std::string Substitute(const std::string& w, const Vars& vars) {
  std::string out;
  for (size_t i = 0; i < w.size();) {
    if (w[i] != '$') {
      out += w[i++];
      continue;
    }
    size_t j = i + 1;
    std::string name;
    if (j < w.size() && w[j] == '{') {
      const size_t close = w.find('}', j);
      if (close == std::string::npos) break;
      name = w.substr(j + 1, close - j - 1);
      j = close + 1;
    } else {
      while (j < w.size() && (std::isalnum(static_cast<unsigned char>(w[j])) || w[j] == '_')) {
        name += w[j++];
      }
    }
    const size_t dash = name.find(":-");
    auto it = vars.find(name.substr(0, dash));
    if (it != vars.end() && it->second.size() == 1) {
      out += it->second[0].text;
    } else if (dash != std::string::npos && dash > 0 &&
               (IsName(name.substr(0, dash)) ||  // a variable, or a positional parameter
                name.find_first_not_of("0123456789") == dash)) {
      out += name.substr(dash + 2);
    } else {
      out += w.substr(i, j - i);
    }
    i = j;
  }
  return out;
}

// A value split at blanks, as the shell splits an unquoted expansion; each part keeps its
// place: a column past the value's start, or on a later line of a quoted value that spans
// several (`ARGS="` then a flag a line) its line and column there.
void SplitFields(const ArgToken& t, std::vector<ArgToken>* out) {
  size_t at = 0;
  int line = t.line;
  size_t counted = 0;  // newlines counted up to here
  while (at < t.text.size()) {
    const size_t start = t.text.find_first_not_of(" \t\n", at);
    if (start == std::string::npos) break;
    const size_t end = std::min(t.text.find_first_of(" \t\n", start), t.text.size());
    line += static_cast<int>(std::count(t.text.begin() + static_cast<long>(counted),
                                        t.text.begin() + static_cast<long>(start), '\n'));
    counted = start;
    const size_t nl = t.text.rfind('\n', start);
    const int col =
        nl == std::string::npos ? t.col + static_cast<int>(start) : static_cast<int>(start - nl);
    out->push_back({t.text.substr(start, end - start), line, col});
    at = end;
  }
}

// One command's words with the variables expanded: `"$X"` and `"${X[@]}"` give the values as
// they are, an unquoted `$X` or `${X[@]}` the values split at blanks.
std::vector<ArgToken> Expand(const std::vector<Word>& cmd, const Vars& vars) {
  std::vector<ArgToken> out;
  for (const Word& w : cmd) {
    if (w.kind != Word::Kind::kWord) {
      out.push_back(w.tok);
      continue;
    }
    const std::string name = WholeReference(w.tok.text);
    auto it = name.empty() ? vars.end() : vars.find(name);
    if (it != vars.end()) {
      for (const ArgToken& t : it->second) {
        if (w.quote_at >= 0) {
          out.push_back(t);
        } else {
          SplitFields(t, &out);
        }
      }
    } else {
      out.push_back({Substitute(w.tok.text, vars), w.tok.line, w.tok.col});
    }
  }
  return out;
}

// A count given to torchrun (`8`, or `1:4` for an elastic range: its first), else 0.
int LauncherCount(const std::string& v) {
  int n = 0;
  for (char c : v) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    n = n * 10 + (c - '0');
    if (n > (1 << 24)) return 0;
  }
  return n;
}

// torchrun's options before the program: the cluster's shape.
void ReadLauncher(const std::vector<ArgToken>& before, MegatronArgs* out) {
  for (size_t i = 0; i < before.size(); ++i) {
    std::string opt = before[i].text, value;
    const size_t eq = opt.find('=');
    if (eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt.resize(eq);
    } else if (i + 1 < before.size()) {
      value = before[i + 1].text;
    }
    std::replace(opt.begin(), opt.end(), '_', '-');
    if (opt == "--nnodes") out->nodes = LauncherCount(value);
    if (opt == "--nproc-per-node") out->gpus_per_node = LauncherCount(value);
  }
}

bool EndsWithPy(const std::string& s) {
  return s.size() > 3 && s.compare(s.size() - 3, 3, ".py") == 0;
}

// Words that open or continue a compound command (`if ...; then NAME=v`): skipped before an
// assignment or a program.
bool IsKeyword(const std::string& w) {
  for (const char* k : {"then", "else", "elif", "do", "{", "!", "time", "exec"}) {
    if (w == k) return true;
  }
  return false;
}

// One `NAME=v`, `NAME+=v`, `NAME=( ... )` or `NAME+=( ... )` at cmd[*i] (moved past it); false
// when cmd[*i] is no assignment.
bool AssignOne(const std::vector<Word>& cmd, size_t* i, bool exported, const Vars& vars, Vars* out,
               std::vector<std::pair<std::string, std::string>>* env) {
  const std::string& w = cmd[*i].tok.text;
  const size_t eq = w.find('=');
  if (cmd[*i].kind != Word::Kind::kWord || eq == std::string::npos) return false;
  const bool append = eq > 0 && w[eq - 1] == '+';
  const std::string name = w.substr(0, append ? eq - 1 : eq);
  if (!IsName(name)) return false;
  std::vector<ArgToken>& var = (*out)[name];
  if (eq + 1 == w.size() && *i + 1 < cmd.size() && cmd[*i + 1].kind == Word::Kind::kOpen) {
    size_t close = *i + 2;
    while (close < cmd.size() && cmd[close].kind != Word::Kind::kClose) ++close;
    std::vector<Word> items(cmd.begin() + static_cast<long>(*i) + 2,
                            cmd.begin() + static_cast<long>(std::min(close, cmd.size())));
    std::vector<ArgToken> values = Expand(items, vars);
    if (!append) var.clear();
    var.insert(var.end(), values.begin(), values.end());
    *i = close;
    return true;
  }
  const ArgToken& t = cmd[*i].tok;
  // The value's place: past `NAME=`, and past a quote that opens it.
  const int col =
      t.col + static_cast<int>(eq) + 1 + (cmd[*i].quote_at == static_cast<int>(eq) + 1 ? 1 : 0);
  ArgToken value{Substitute(w.substr(eq + 1), vars), t.line, col};
  if (append && !var.empty()) {
    var[0].text += value.text;  // the shell appends a string to the first element
  } else {
    var = {value};
  }
  if (exported) env->push_back({name, var[0].text});
  return true;
}

// Records a command that only assigns (`NAME=v`, `export NAME=v`, `NAME=( ... )`, `NAME+=...`);
// false for any other command.
bool Assign(const std::vector<Word>& cmd, const Vars& vars, Vars* out,
            std::vector<std::pair<std::string, std::string>>* env) {
  size_t i = 0;
  while (i < cmd.size() && IsKeyword(cmd[i].tok.text)) ++i;
  const bool exported = i < cmd.size() && cmd[i].tok.text == "export";
  if (exported) ++i;
  if (i >= cmd.size()) return false;
  for (; i < cmd.size(); ++i) {
    if (!AssignOne(cmd, &i, exported, vars, out, env)) return false;
  }
  return true;
}

// Whether a command runs a program rather than testing or printing: `[ -f x.py ]`,
// `test -f x.py` and `echo x.py` name a script without running it.
bool RunsProgram(const std::vector<ArgToken>& cmd) {
  size_t i = 0;
  while (i < cmd.size() && (IsKeyword(cmd[i].text) || cmd[i].text == "if" ||
                            cmd[i].text == "while" || cmd[i].text == "until")) {
    ++i;
  }
  if (i >= cmd.size()) return false;
  for (const char* t : {"[", "[[", "test", "echo", "printf", "ls", "cat", "mkdir", "cd", "cp", "mv",
                        "rm", "touch", "chmod", "wget", "curl"}) {
    if (cmd[i].text == t) return false;
  }
  return true;
}

// A launch script, or a plain list of flags (a text without a `*.py` command, read again with
// `|` as a character).
StatusOr<MegatronArgs> FromShell(std::string file, const std::string& text, bool plain = false) {
  std::vector<Word> words = ShellLexer(text, plain).Run();
  Vars vars;
  MegatronArgs shape;
  std::vector<ArgToken> program_args, all;
  bool found = false;
  std::vector<Word> cmd;
  ShellBranches branches;
  std::string sep, before;  // the separators since the last command, and before this one
  for (const Word& w : words) {
    if (w.kind != Word::Kind::kEnd) {
      if (cmd.empty())
        before = sep.find("&&") != sep.npos ? "&&" : sep.find("||") != sep.npos ? "||" : "";
      cmd.push_back(w);
      continue;
    }
    if (cmd.empty()) {
      sep += w.tok.text;
      continue;
    }
    sep = w.tok.text;
    // The command's words expanded once: the branch reader's, and the program's where it is
    // no assignment (an assignment changes only the variables after it).
    std::vector<ArgToken> expanded = Expand(cmd, vars);
    if (!plain) {
      std::vector<std::string> texts;
      for (const ArgToken& t : expanded) texts.push_back(t.text);
      PARASIM_ASSIGN_OR_RETURN(bool runs, branches.Step(texts, cmd.front().tok.line, before, file));
      if (!runs) {
        cmd.clear();
        continue;
      }
    }
    if (Assign(cmd, vars, &vars, &shape.env)) {
      branches.SetsSomething();
    } else {
      auto py = std::find_if(expanded.begin(), expanded.end(),
                             [](const ArgToken& t) { return EndsWithPy(t.text); });
      if (py != expanded.end() && !found && RunsProgram(expanded)) {
        branches.SetsSomething();
        found = true;
        ReadLauncher({expanded.begin(), py}, &shape);
        shape.program = *py;
        program_args.assign(py + 1, expanded.end());
      }
      all.insert(all.end(), expanded.begin(), expanded.end());
    }
    cmd.clear();
  }
  if (!found && !plain) return FromShell(std::move(file), text, true);
  PARASIM_ASSIGN_OR_RETURN(MegatronArgs out,
                           ArgsFromTokens(std::move(file), found ? program_args : all));
  out.env = std::move(shape.env);
  out.nodes = shape.nodes;
  out.gpus_per_node = shape.gpus_per_node;
  out.program = std::move(shape.program);
  return out;
}

// The entries of a YAML mapping in order, `<<` merge keys expanded (explicit keys win).
std::vector<std::pair<YAML::Node, YAML::Node>> Entries(const YAML::Node& map) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (kv.first.Scalar() != "<<") seen.insert(kv.first.Scalar());
  }
  std::vector<std::pair<YAML::Node, YAML::Node>> out;
  for (const auto& kv : map) {
    if (kv.first.Scalar() != "<<") {
      out.push_back({kv.first, kv.second});
      continue;
    }
    std::vector<YAML::Node> sources;
    if (kv.second.IsSequence()) {
      for (const auto& s : kv.second) sources.push_back(s);
    } else {
      sources.push_back(kv.second);
    }
    for (const YAML::Node& src : sources) {
      if (!src.IsMap()) continue;
      for (const auto& e : Entries(src)) {
        if (seen.insert(e.first.Scalar()).second) out.push_back(e);
      }
    }
  }
  return out;
}

// A value as `xargs` passes it on: quotes dropped, runs of blanks one blank, ends trimmed.
std::string XargsText(const std::string& raw) {
  std::string out;
  char quote = 0;
  bool blank = false;
  for (char c : raw) {
    if (quote == 0 && (c == '"' || c == '\'')) {
      quote = c;
    } else if (c == quote) {
      quote = 0;
    } else if (quote == 0 && std::isspace(static_cast<unsigned char>(c))) {
      blank = !out.empty();
    } else {
      if (blank) out += ' ';
      blank = false;
      out += c;
    }
  }
  return out;
}

// One MODEL_ARGS entry as the CI launcher renders it: `true` the bare flag; `[a b]` separate
// values; `(...)`, or a value with blanks, `|` or parentheses, one token; else split at blanks.
std::vector<ArgToken> RenderEntry(const YAML::Node& key, const YAML::Node& value) {
  const ArgToken flag{key.Scalar(), key.Mark().line + 1, key.Mark().column + 1};
  const std::string raw = value.IsScalar() ? value.Scalar() : "";
  const bool plain = value.Tag() != "!";  // a quoted scalar carries the "!" tag
  if (raw.empty() && !plain) return {};
  if (raw == "true" || (plain && (raw == "True" || raw == "TRUE"))) return {flag};
  std::vector<ArgToken> out{flag};
  const int line = value.Mark().line + 1, col = value.Mark().column + 1;
  // The launcher passes values through xargs: quotes dropped, blanks collapsed.
  std::string joined = XargsText(raw);
  if (joined.size() >= 2 && joined.front() == '[' && joined.back() == ']') {
    std::string item;
    for (char c : joined.substr(1, joined.size() - 2) + " ") {
      if (c != ' ') {
        item += c;
      } else if (!item.empty()) {
        out.push_back({std::move(item), line, col});
        item.clear();
      }
    }
    return out;
  }
  out.push_back({joined, line, col});  // one token, blanks and all, as the launcher quotes it
  return out;
}

StatusOr<MegatronArgs> FromModelConfig(std::string file, const YAML::Node& root) {
  YAML::Node args = root["MODEL_ARGS"];
  YamlContext ctx{file, {}};
  if (!args.IsMap()) {
    return ctx.ErrorAt(args.IsDefined() ? args : root, "MODEL_ARGS",
                       "expected a mapping from flag to value ('--num-layers: 32')");
  }
  std::vector<ArgToken> tokens;
  for (const auto& [k, v] : Entries(args)) {
    if (!v.IsScalar() && !v.IsNull()) {
      return ctx.ErrorAt(v, "MODEL_ARGS." + k.Scalar(),
                         "expected one value (a scalar); the CI launcher passes scalars only");
    }
    for (ArgToken& t : RenderEntry(k, v)) tokens.push_back(std::move(t));
  }
  PARASIM_ASSIGN_OR_RETURN(MegatronArgs out, ArgsFromTokens(file, tokens));
  // ENV_VARS is optional (a config may set no environment): a key the mapping lacks is an
  // undefined node, which yaml-cpp refuses to type.
  YAML::Node env = root["ENV_VARS"];
  if (env.IsDefined() && env.IsMap()) {
    for (const auto& [k, v] : Entries(env)) {
      if (v.IsScalar()) out.env.push_back({k.Scalar(), v.Scalar()});
    }
  }
  return out;
}

}  // namespace

std::string MegatronArgs::Where(const MegatronArg& a) const {
  return a.line > 0 ? fmt::format("{}:{}:{}", file, a.line, a.col) : file;
}

Status MegatronArgs::ErrorAt(const MegatronArg& a, const std::string& message) const {
  return InvalidArgument(fmt::format("{}: error: {}", Where(a), message));
}

StatusOr<MegatronArgs> ArgsFromTokens(std::string file, const std::vector<ArgToken>& tokens) {
  MegatronArgs out;
  out.file = std::move(file);
  for (const ArgToken& t : tokens) {
    if (t.text.rfind("--", 0) == 0 && t.text.size() > 2) {
      MegatronArg a{t.text, {}, t.line, t.col};
      const size_t eq = a.flag.find('=');
      if (eq != std::string::npos) {
        a.values.push_back(a.flag.substr(eq + 1));
        a.flag.resize(eq);
      }
      out.args.push_back(std::move(a));
      continue;
    }
    if (out.args.empty()) {
      MegatronArg at{"", {}, t.line, t.col};
      return out.ErrorAt(at,
                         fmt::format("'{}' comes before any flag; expected Megatron-LM "
                                     "arguments such as '--num-layers 32'",
                                     t.text.size() <= 60 ? t.text : t.text.substr(0, 57) + "..."));
    }
    out.args.back().values.push_back(t.text);
  }
  return out;
}

StatusOr<MegatronArgs> ParseMegatronArgs(std::string file, const std::string& raw) {
  // A UTF-8 byte-order mark and CRLF line ends (a file saved on Windows) read as the plain
  // text: the mark is no character of the first word, a CR no character of a line's last.
  std::string text = raw.rfind("\xEF\xBB\xBF", 0) == 0 ? raw.substr(3) : raw;
  for (size_t at = text.find("\r\n"); at != std::string::npos; at = text.find("\r\n", at)) {
    text.erase(at, 1);
  }
  // A YAML mapping with MODEL_ARGS is a functional-test config; anything else is shell text.
  // Equal keys are kept: the CI launcher passes every MODEL_ARGS entry (yq to_entries), and
  // argparse keeps the last (14 of Megatron-LM's own configs repeat one).
  StatusOr<YAML::Node> yaml =
      ParseYaml(text, file, "keys MODEL_ARGS and ENV_VARS", /*duplicate_keys=*/true);
  if (yaml.ok() && yaml->IsMap() && (*yaml)["MODEL_ARGS"].IsDefined()) {
    return FromModelConfig(std::move(file), *yaml);
  }
  // A file that opens a MODEL_ARGS mapping is meant as a config: its YAML error is the error.
  const bool config = text.rfind("MODEL_ARGS:", 0) == 0 || text.find("\nMODEL_ARGS:") != text.npos;
  if (!yaml.ok() && config) return yaml.status();
  return FromShell(std::move(file), text);
}

StatusOr<MegatronArgs> ReadMegatronArgs(const std::string& path) {
  PARASIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseMegatronArgs(path, text);
}

}  // namespace parasim
