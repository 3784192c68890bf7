// The parts of the Megatron-LM flag table (scenarios/megatron_flags.h), one per use, each kept in
// its own file; MegatronFlags() joins and sorts them. Internal to the megatron_flags library.
#pragma once

#include <span>

#include "scenarios/megatron_flags.h"

namespace parasim::megatron_rows {

std::span<const MegatronFlag> Mapped();
std::span<const MegatronFlag> Refused();
std::span<const MegatronFlag> NotModelled();
std::span<const MegatronFlag> NoEffect();

}  // namespace parasim::megatron_rows
