// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what `ds-plan check` does with a plan snapshot before it simulates anything
// (sim/plan/snapshot.h, sim/plan/diff.h): read the recorded inputs back, render the snapshot as
// `plan` writes it, and compare it with itself and with an empty one leaf by leaf. The input is
// one JSON text, read by the bounded parser every input goes through. See docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json/document.h"
#include "sim/plan/diff.h"
#include "sim/plan/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dsp::ParsedJson parsed =
      dsp::ParseJsonLenient("plan.json", std::string(reinterpret_cast<const char*>(data), size));
  if (!parsed.ok) return 0;
  const dsp::Json& doc = parsed.doc.root;
  (void)dsp::sim::ReadSnapshotInputs(doc);
  (void)dsp::sim::RenderPlanSnapshot(doc);
  (void)dsp::sim::ComparePlanSnapshots(doc, doc, 1.0);
  (void)dsp::sim::ComparePlanSnapshots(doc, dsp::Json::object(), 1.0);
  (void)dsp::sim::DiffJsonLeaves(doc, dsp::Json::object());
  return 0;
}
