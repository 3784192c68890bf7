// The views of a serving validation (scenarios/serving_validate.h) that `parasim validate`
// prints for a file of serving cases: JSON, text, and the Markdown table of docs/SERVING.md.
#pragma once

#include <string>

#include "scenarios/serving_validate.h"
#include "sim/json.h"

namespace parasim {

Json ServingValidationJson(const ServingValidationReport& r);
std::string ServingValidationText(const std::string& file, const ServingValidationReport& r);
std::string ServingValidationMarkdown(const ServingValidationReport& r);

}  // namespace parasim
