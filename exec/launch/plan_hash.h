// SPDX-License-Identifier: Apache-2.0
// Every rank must run the same plan: a rank started with another config, model or flag would build
// different groups and deadlock (or, worse, silently compute something else). The hash covers
// everything that shapes the run and is exchanged through the store at start-up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsp::exec {

struct PlanFingerprint {
  std::string config_text;  // the config file's bytes
  std::string model_text;   // the model file's bytes ("" for the built-in tiny model)
  int world_size = 0;
  std::vector<std::string> flags;  // "steps=3", "seed=1", "backend=gloo", "inject=..."
};

// FNV-1a 64 over length-prefixed fields (so "ab"+"c" and "a"+"bc" differ).
uint64_t PlanHash(const PlanFingerprint& fp);

// 16 lowercase hex digits.
std::string HashHex(uint64_t hash);

// The fingerprint field by field, "config=HASH;model=HASH;world_size=4;steps=3;seed=1;...", so
// ranks whose plans differ can say in what (PlanFieldsDiffer).
std::string PlanFields(const PlanFingerprint& fp);

// The fields of `theirs` that differ from `ours`, "seed=2 (here seed=1), config=... (here ...)";
// "" when they agree.
std::string PlanFieldsDiffer(const std::string& ours, const std::string& theirs);

}  // namespace dsp::exec
