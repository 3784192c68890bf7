#include "tools/verbs/registry.h"

namespace parasim {

std::vector<Verb> Verbs() {
#define PARASIM_VERB_ENTRY(f) f(),
  return {PARASIM_VERBS(PARASIM_VERB_ENTRY)};
#undef PARASIM_VERB_ENTRY
}

}  // namespace parasim
