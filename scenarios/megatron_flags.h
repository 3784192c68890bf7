// The Megatron-LM flags `parasim import megatron` knows, one row per flag: how it maps onto
// scenario keys, or why it is not modelled, or that it changes neither time nor memory. The
// importer (scenarios/megatron_import.h) reads the mapped flags; every other flag it meets is
// listed at the end of the scenario it writes, with its row's reason, never dropped silently. A
// flag without a row is an error that suggests the nearest known one (a misspelt flag would
// otherwise vanish into the list).
//
//   const MegatronFlag* f = FindMegatronFlag("--sequence-parallel");
//   f->use == FlagUse::kMapped, f->why == "parallelism.sp"
//
// The rows cover every flag of the Megatron-LM CI corpus (tests/validation/megatron-ci, 340
// flags) and the common flags it lacks; the meanings are our own words, read from Megatron-LM's
// megatron/training/arguments.py and megatron/core/transformer/transformer_config.py.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace parasim {

// What a flag does to a scenario.
enum class FlagUse : uint8_t {
  kMapped,       // read into scenario keys (`why` names them)
  kNoEffect,     // logging, data, checkpoints, learning rate: neither step time nor memory
  kNotModelled,  // changes time or memory in a way parasim does not model (`why` says how)
  kRefused,      // describes a model parasim cannot build: the import fails naming it
};

// How many values a flag takes.
enum class FlagArity : uint8_t {
  kBare,  // a switch: --sequence-parallel
  kOne,   // one value: --num-layers 32
  kList,  // one or more: --recompute-modules core_attn mlp
};

struct MegatronFlag {
  std::string_view name;  // "--num-layers"
  FlagArity arity;
  FlagUse use;
  std::string_view why;  // the keys it maps to, or why it is not modelled, or what it is
};

// Every row, sorted by name.
std::span<const MegatronFlag> MegatronFlags();
// The row of `name` ("--num-layers"), or null.
const MegatronFlag* FindMegatronFlag(std::string_view name);
// The nearest known flag to an unknown one ("--num-layer" -> "--num-layers"), or "".
std::string NearestMegatronFlag(std::string_view name);
std::string_view FlagUseName(FlagUse u);  // mapped, no effect, not modelled, refused

}  // namespace parasim
