// Megatron-LM launch arguments as `parasim import megatron` reads them, each token located at
// its file:line:col. Three inputs are accepted (ReadMegatronArgs tells them apart):
// - a functional-test model_config.yaml of Megatron-LM's CI: MODEL_ARGS (a mapping from flag to
//   value) and ENV_VARS, rendered as the CI launcher renders them: `true` gives the bare flag, a
//   value in `[a b]` separate values, any other value one token;
// - a launch script: shell lines with backslash continuations, `NAME=value` and `NAME=( ... )`
//   assignments that later `$NAME` / `${NAME[@]}` expand, and a command that runs a `*.py`
//   program (torchrun, python -m torch.distributed.run, python): the tokens after the program
//   are Megatron's, torchrun's --nnodes and --nproc-per-node before it give the cluster's shape;
// - a plain file of `--flag value` tokens (comments with #).
//
//   PARASIM_ASSIGN_OR_RETURN(MegatronArgs a, ReadMegatronArgs("model_config.yaml"));
//   for (const MegatronArg& arg : a.args) fmt::print("{} {}\n", a.Where(arg), arg.flag);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/status.h"

namespace parasim {

// One token of the input and where it was written (1-based; 0 when it has no place, such as a
// token a validation file's list gave without marks).
struct ArgToken {
  std::string text;
  int line = 0;
  int col = 0;
};

// One flag and its values, in the order given. `--flag=value` is read as `--flag value`.
struct MegatronArg {
  std::string flag;
  std::vector<std::string> values;
  int line = 0;
  int col = 0;
};

struct MegatronArgs {
  std::string file;  // for messages
  std::vector<MegatronArg> args;
  std::vector<std::pair<std::string, std::string>> env;  // ENV_VARS, or a script's exports
  // The launcher's own shape (torchrun --nnodes, --nproc-per-node); 0 = not given.
  int nodes = 0;
  int gpus_per_node = 0;
  // The `*.py` program a launch script runs (pretrain_gpt.py, ...), where it is written; empty
  // text for a model_config.yaml or a flag list, which name none.
  ArgToken program;
  // "file:line:col" of an argument (or "file" when it has no place).
  std::string Where(const MegatronArg& a) const;
  // "file:line:col: error: MESSAGE" at an argument.
  Status ErrorAt(const MegatronArg& a, const std::string& message) const;
};

// Groups tokens into flags and their values: a token that starts with `--` opens a flag, the
// tokens after it up to the next flag are its values. A value before any flag is an error.
StatusOr<MegatronArgs> ArgsFromTokens(std::string file, const std::vector<ArgToken>& tokens);

// Reads a model_config.yaml, a launch script or a flag list (`text` holds the file's contents;
// `file` names it in messages).
StatusOr<MegatronArgs> ParseMegatronArgs(std::string file, const std::string& text);
StatusOr<MegatronArgs> ReadMegatronArgs(const std::string& path);

}  // namespace parasim
