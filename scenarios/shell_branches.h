// Which commands of a launch script's `if ... then ... elif ... else ... fi` bash runs, where
// the conditions are plain tests of values the script sets (`[[ "$DTYPE" == "fp8" ]]`,
// `[ -z "$X" ]`, joined by && and ||): the Megatron-LM import reads only those. A condition it
// cannot evaluate (a file test, a command's status) leaves every branch read, and branches
// that then both set something are an error at the `if`: parasim cannot tell which one runs.
//
//   ShellBranches b;
//   for each command (its words expanded, the separator before it):
//     PARASIM_ASSIGN_OR_RETURN(bool read, b.Step(words, separator));
//     if (read) ... assignments and the program's flags ...
//   PARASIM_RETURN_IF_ERROR(b.Finish(file));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/status.h"

namespace parasim {

class ShellBranches {
 public:
  // A command's words with their line (after variable expansion), and the separator that came
  // before it: "&&", "||", or "" for a new line or `;`. Returns whether the command runs (its
  // leading then/else/elif/if/fi keywords aside); a condition's own words never "run".
  StatusOr<bool> Step(const std::vector<std::string>& words, int line, const std::string& sep,
                      const std::string& file);
  // After a command that runs and sets something (an assignment, the training program): its
  // branch counts as setting flags. An `echo` in both branches of a condition it cannot
  // evaluate is no conflict; assignments in both are.
  void SetsSomething();
  // An `if` left open at the end of the script is no error (a fragment); nothing to check.

 private:
  struct Frame {
    int line = 0;                // the `if`
    bool testing = true;         // reading a condition (after if / elif, before then)
    std::optional<bool> chain;   // the condition so far; nullopt: cannot tell
    std::optional<bool> taken;   // whether the current branch runs; nullopt: cannot tell
    bool earlier_taken = false;  // a branch before it ran
    bool earlier_unknown = false;
    int branches_with_content = 0;
    bool branch_has_content = false;
  };
  // Whether every enclosing branch runs (or cannot be told not to).
  bool Active() const;
  static std::optional<bool> Test(const std::vector<std::string>& words);
  void Open(std::optional<bool> first);
  void EndBranch();
  std::vector<Frame> frames_;
};

}  // namespace parasim
