// SPDX-License-Identifier: Apache-2.0
// A planning session: one DeepSpeed config being edited against a model, a cluster and the knobs
// outside the config, re-evaluated after every edit (validate's findings, layout, group tables,
// memory per rank, step time). Edits are JSON patches on the config document with an undo stack;
// a pinned baseline makes every number a delta. `ds-plan explore`'s full-screen and line modes are
// thin front ends over this object.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json/document.h"
#include "core/model/model_spec.h"
#include "core/util/result.h"
#include "sim/cost/cluster.h"
#include "sim/session/evaluation.h"
#include "sim/tune/tune.h"

namespace dsp::sim {

// Keys a session edits like config keys but that live outside DeepSpeed's config: the world
// (world_size, nodes, gpus_per_node), pp, seq_len, recompute, and `precision` (bf16 | fp16 | fp32,
// a shorthand that sets the bf16 and fp16 sections together).
const std::vector<std::string>& KnobKeys();
bool IsKnobKey(std::string_view key);

class Session {
 public:
  // Evaluates the config as given. `config_text` is what diagnostics point into until the first
  // edit; after it, diagnostics point into the edited document as `show config` prints it.
  Session(std::string config_path, std::string config_text, ModelSpec model, Cluster cluster, PlanKnobs knobs);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Evaluation& now() const { return EvaluationAt(at_); }
  // The latest evaluation with numbers at or before the current edit (nullptr: none yet), so an
  // edit that breaks the config keeps the last good memory and step time on screen.
  const Evaluation* last_good() const;
  const Json& config() const { return entry().config; }
  const PlanKnobs& knobs() const { return entry().knobs; }
  const ModelSpec& model() const { return model_; }
  const Cluster& cluster() const { return cluster_; }
  const std::string& config_path() const { return config_path_; }
  // The text the current diagnostics' line:column point into: the file as opened, or the edited
  // document printed with two-space indent.
  std::string ConfigText() const { return at_ == 0 ? original_text_ : config().dump(2) + "\n"; }
  // The config as `write` would save it (the knobs DeepSpeed's config lacks go under "_ds_plan").
  Json ConfigToWrite() const;
  std::string ConfigTextToWrite() const;

  // "KEY=VALUE": a config key (JSON pointer or dotted name) or a knob. VALUE is JSON, or a bare
  // string. An edit that makes the config invalid is applied (undo takes it back); one that cannot
  // be applied at all (not KEY=VALUE, a knob out of range) is an error and changes nothing. The
  // result says what changed, with deltas against the pinned baseline (else the state before).
  Result<std::string> Set(std::string_view assignment);
  // Several assignments as one edit (one undo step). `adjust` sees the result before it is
  // evaluated and may change the config further in the same edit (a dial keeps train_batch_size
  // consistent with the new layout).
  using Adjust = std::function<void(Json& config, const PlanKnobs& knobs, const Cluster& cluster)>;
  Result<std::string> SetAll(const std::vector<std::pair<std::string, Json>>& assignments, std::string what,
                             const Adjust& adjust = {});
  Result<std::string> Unset(std::string_view key);
  Result<std::string> Undo();
  Result<std::string> Redo();
  bool can_undo() const { return at_ > 0; }
  bool can_redo() const { return at_ + 1 < history_.size(); }
  int64_t edits() const { return static_cast<int64_t>(at_); }

  // The baseline every number is compared with.
  void Pin();
  void Unpin() { baseline_.reset(); }
  const Evaluation* baseline() const { return baseline_ ? baseline_->evaluation.get() : nullptr; }
  const Json* baseline_config() const { return baseline_ ? &baseline_->config : nullptr; }

  // tune from the current state: the same world, node size, sequence length and samples per step.
  Result<TuneResult> Tune(int top, const std::function<void(int64_t, int64_t)>& progress = {}) const;
  // Makes the current config realise a tuned plan, keeping everything the plan does not decide
  // (optimizer, clipping, bucket sizes, presets): one edit.
  Result<std::string> Apply(const TunedPlan& plan);

  // Writes ConfigTextToWrite atomically. An existing file needs `force`; a config with errors is
  // refused (nothing written is ever a config DeepSpeed rejects).
  Status Write(const std::string& path, bool force);
  // Whether the config or knobs differ from what was opened or last written.
  bool dirty() const;
  const std::string& written_path() const { return written_path_; }
  // Edits whose evaluation is held in memory: the newest kHeldEvaluations (and the opened file);
  // older ones keep their config and knobs and are evaluated again when undo reaches them, so
  // 10,000 edits hold tens of evaluations, not 10,000 (about 0.4 MB each).
  size_t evaluations_held() const;
  static constexpr size_t kHeldEvaluations = 64;

 private:
  struct Entry {
    Json config;
    PlanKnobs knobs;
    std::string what;  // the edit that led here
    std::shared_ptr<const Evaluation> evaluation;
  };
  const Entry& entry() const { return history_[at_]; }
  // The evaluation of history entry `i`, computed again if it was let go.
  const Evaluation& EvaluationAt(size_t i) const;
  std::shared_ptr<const Evaluation> EvaluateState(const Json& config, const PlanKnobs& knobs) const;
  Result<std::string> Commit(Json config, PlanKnobs knobs, std::string what);

  std::string config_path_;
  std::string original_text_;
  ModelSpec model_;
  Cluster cluster_;
  mutable std::vector<Entry> history_;  // mutable: evaluations are let go and recomputed
  size_t at_ = 0;
  std::shared_ptr<const Entry> baseline_;
  Json saved_config_;
  PlanKnobs saved_knobs_;
  std::string written_path_;
};

// What an edit did to the numbers, for line mode's one-line answer: "valid, FITS 61.2 GB,
// step 12.3 s (-4.1 %)".
std::string OneLineVerdict(const Evaluation& now, const Evaluation* before);

}  // namespace dsp::sim
