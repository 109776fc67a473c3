// SPDX-License-Identifier: Apache-2.0
// What a rule sees: the parsed document, typed reads, the parallel settings, the command-line
// facts (world size, model, sequence length, DeepSpeed version), and a way to report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config_view.h"
#include "core/config/consumer.h"
#include "core/config/deepspeed_version.h"
#include "core/config/package_version.h"
#include "core/config/parallel_config.h"
#include "core/diag/diagnostic.h"
#include "core/json/document.h"

namespace dsp {

struct ModelSpec;

struct ValidateOptions {
  std::optional<int64_t> world_size;     // --world-size, or nodes x gpus-per-node
  std::optional<int64_t> gpus_per_node;  // marks groups that cross nodes
  int64_t pp = 1;                        // pipeline stages (from PipelineModule, not the config)
  int64_t mpu_tp = 1;                    // Megatron's tensor-model-parallel size (an mpu), not AutoTP
  // The pipeline runtime is not DeepSpeed's PipelineEngine but one that shards parameters across
  // stages (PyTorch FSDP2 under torch.distributed.pipelining): zero-stage-pipeline does not apply.
  bool pipeline_allows_sharded_zero = false;
  // --cp of the megatron-lm and fsdp2 engines: context-parallel ranks share their samples.
  int64_t context_parallel = 1;
  std::optional<int64_t> seq_len;        // --seq-len
  const ModelSpec* model = nullptr;      // --model
  DeepSpeedVersion version = DeepSpeedVersion::Newest();
  Consumer consumer = Consumer::kUnspecified;  // --consumer: who reads the file and builds what
  std::optional<PackageVersion> torch_version;         // --torch-version
  std::optional<PackageVersion> transformers_version;  // --transformers-version
  // --attn-impl: the attention implementation transformers runs ("sdpa", "flash_attention_2",
  // "eager", ...); unset: the model config's _attn_implementation, else unknown.
  std::optional<std::string> attn_implementation;
  // The GPU the job runs on (simulate and plan's --cluster): its name and CUDA compute capability
  // as major * 10 + minor (80 for "8.0"); 0 when not known.
  std::string gpu_name;
  int gpu_compute_capability = 0;
};

class RuleContext {
 public:
  // `doc` holds the values as DeepSpeed's pydantic sections read them; `raw` (default: doc's root)
  // the values as written, for the few DeepSpeed compares before pydantic sees them.
  RuleContext(const JsonDocument& doc, const ValidateOptions& options, const Json* raw = nullptr)
      : doc_(doc), view_(doc.root), raw_(raw != nullptr ? *raw : doc.root), parallel_(ReadParallelConfig(view_)),
        options_(options) {}

  const JsonDocument& doc() const { return doc_; }
  const ConfigView& raw() const { return raw_; }
  const ConfigView& view() const { return view_; }
  const ParallelConfig& parallel() const { return parallel_; }
  const ValidateOptions& options() const { return options_; }
  const DeepSpeedVersion& version() const { return options_.version; }
  std::optional<int64_t> world() const { return options_.world_size; }

  // Reports with the rule's registered severity. Unknown ids are a programming error (abort in tests).
  void Report(std::string_view rule_id, const std::string& pointer, std::string message,
              std::string hint = {});
  void ReportAs(Severity severity, std::string_view rule_id, const std::string& pointer,
                std::string message, std::string hint = {});
  // A check whose outcome depends on the launch context (--consumer): at the rule's severity when
  // `condition` holds, not at all when it does not, and without --consumer as a warning whose
  // message names the condition (never an error: the same file may train under another launcher).
  void ReportIf(Condition condition, std::string_view rule_id, const std::string& pointer,
                std::string message, std::string hint = {});

  // Reports at the key rather than the value (unknown/deprecated style findings).
  void ReportKey(std::string_view rule_id, const std::string& pointer, std::string message,
                 std::string hint = {});

  std::vector<Diagnostic>& diagnostics() { return diags_; }

 private:
  const JsonDocument& doc_;
  ConfigView view_;
  ConfigView raw_;
  ParallelConfig parallel_;
  const ValidateOptions& options_;
  std::vector<Diagnostic> diags_;
};

// "zero_optimization.stage" from "/zero_optimization/stage", for messages.
std::string DottedName(const std::string& pointer);

}  // namespace dsp
