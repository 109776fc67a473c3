// SPDX-License-Identifier: Apache-2.0
// The dials of explore's knobs pane: the settings a person turns while planning (parallel sizes,
// ZeRO stage and offload, batch, sequence, recompute, precision, buckets, the world), each a
// config key or a session knob, with the values stepping walks through: divisors of the world for
// parallel sizes, the stages DeepSpeed accepts, powers of two for batch and sequence.
#pragma once

#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/util/result.h"
#include "sim/session/session.h"

namespace dsp::sim {

struct Dial {
  std::string label;  // "tensor parallel"
  std::string key;    // a dotted config key or a knob (KnobKeys)
};

const std::vector<Dial>& Dials();

// The value in effect (DeepSpeed's default when the key is unset), as the pane shows it.
std::string DialValue(const Session& session, const Dial& dial);
// Whether the config (or the command line, for knobs) sets it explicitly.
bool DialIsSet(const Session& session, const Dial& dial);
// The values stepping walks through, in order; empty when the dial does not apply (expert
// parallel on a dense model).
std::vector<Json> DialChoices(const Session& session, const Dial& dial);
// Moves to the neighbouring choice (direction -1 or +1) as one edit. When the config states all
// three of train_batch_size, micro batch and accumulation, train_batch_size follows the new layout
// so the edit changes what was asked, not the batch triple's consistency.
Result<std::string> StepDial(Session& session, const Dial& dial, int direction);
// Sets a typed value (Enter in the pane) with the same batch rule.
Result<std::string> SetDial(Session& session, const Dial& dial, const std::string& value);

}  // namespace dsp::sim
