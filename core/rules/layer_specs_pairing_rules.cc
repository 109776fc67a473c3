// SPDX-License-Identifier: Apache-2.0
// The column/row contract of DeepSpeed's sharded layers, checked over the projections a --model
// has (Megatron's f/g pairing):
//   column-parallel (LinearLayer): weight split on the output dim; forward is identity on the
//     input, so each rank ends with 1/TP of the output features; backward all-reduces the input
//     gradient.
//   row-parallel (LinearAllreduce): weight split on the input dim; it needs the input already split
//     the same way and all-reduces (sums) its output in forward.
// So inside a block every column projection (q/k/v, gate/up, expert w1/w3) must feed a row-parallel
// projection (o, down, expert w2), and a row projection needs every projection feeding it to be
// column-parallel, unless the column output is gathered (gather_output). Anything else leaves a
// rank with a partial activation where a full one is expected, or the reverse.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/config/parallel_config.h"
#include "core/rules/tensor_parallel_internal.h"
#include "core/util/text.h"

namespace dsp::autotp {
namespace {

const std::set<std::string>& ColumnLeaves() {
  static const std::set<std::string> leaves = {
      "q_proj",  "k_proj",       "v_proj",   "qkv_proj", "query_key_value", "gate_proj",
      "up_proj", "gate_up_proj", "w1",       "w3",       "dense_h_to_4h",   "c_attn",
      "c_fc",    "fc1",          "q_b_proj", "kv_b_proj"};
  return leaves;
}

const std::set<std::string>& RowLeaves() {
  static const std::set<std::string> leaves = {"o_proj",        "down_proj", "w2",  "dense",
                                               "dense_4h_to_h", "c_proj",    "fc2", "out_proj"};
  return leaves;
}

enum class Side { kReplicated, kColumn, kGathered, kRow };

struct Proj {
  size_t param = 0;
  std::string leaf;
  Side side = Side::kReplicated;
  int spec = -1;
};

struct Finding {
  std::string id;
  std::string pointer;
  std::string label;          // of the spec the finding is reported at
  std::string partner;        // the other side of the pair; "" when there is none in the block
  std::string partner_state;  // how the partner (or the listed feeders) is partitioned
  std::vector<std::string> leaves = {};  // the projections concerned
  std::string example = {};              // a parameter name from the first block
  int blocks = 0;
};

std::string Escaped(const std::string& leaf) { return "\".*\\\\." + leaf + "\\\\.weight$\""; }

std::string Describe(const Proj& p, const std::vector<LayerSpec>& specs,
                     const std::vector<ParamTensor>& params) {
  switch (p.side) {
    case Side::kColumn:
      return "column-parallel too (" + specs[p.spec].label + ")";
    case Side::kGathered:
      return "column-parallel with gather_output (" + specs[p.spec].label + ")";
    case Side::kRow:
      return "row-parallel (" + specs[p.spec].label + ")";
    case Side::kReplicated:
      break;
  }
  if (p.spec >= 0) return "replicated (" + specs[p.spec].label + " is a skip spec)";
  return "replicated (no spec matches " + params[p.param].name + ")";
}

}  // namespace

void CheckPairing(RuleContext& ctx, const std::vector<LayerSpec>& specs,
                  const std::vector<int>& winner, const std::vector<ParamTensor>& params,
                  const std::vector<bool>& universe) {
  auto side_of = [&](size_t i) {
    int s = winner[i];
    if (s < 0 || specs[s].kind == PartitionKind::kSkip) return Side::kReplicated;
    if (specs[s].kind == PartitionKind::kRow) return Side::kRow;
    return specs[s].gather_output ? Side::kGathered : Side::kColumn;
  };

  // Blocks: projections grouped by their parent module, in model order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<Proj>> blocks;
  std::map<std::string, size_t> by_module;  // module name -> param index (for the q/k norms)
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].name;
    if (!universe[i] || !name.ends_with(".weight")) continue;
    std::string module = name.substr(0, name.size() - 7);
    by_module[module] = i;
    size_t dot = module.rfind('.');
    std::string parent = dot == std::string::npos ? "" : module.substr(0, dot);
    std::string leaf = dot == std::string::npos ? module : module.substr(dot + 1);
    if (parent.empty() && (leaf == "lm_head" || leaf == "embed_out") && side_of(i) == Side::kRow) {
      // auto_tp.py _create_row_parallel_layer builds LmHeadLinearAllreduce for the head.
      const ParallelConfig& pc = ctx.parallel();
      if (pc.deepcompile && std::find(pc.compile_passes.begin(), pc.compile_passes.end(), "autotp") !=
                                pc.compile_passes.end()) {
        ctx.Report("compile-autotp-lm-head-row", specs[winner[i]].pointer,
                   name + " is row-parallel (" + specs[winner[i]].label +
                       "), which DeepSpeed builds as LmHeadLinearAllreduce, and the autotp compile "
                       "pass raises NotImplementedError \"AutoTP compile pass cannot rewrite '" +
                       leaf + "' (LmHeadLinearAllreduce)\" (tp_compile.py "
                       "defer_collectives_to_compiler)",
                   "make the head column-parallel with \"gather_output\": true, skip it, or drop "
                   "\"autotp\" from compile.passes");
      } else {
        ReportSpec(ctx, "tp-lm-head-row-backward", specs[winner[i]].pointer,
                   name + " is row-parallel (" + specs[winner[i]].label +
                       "): DeepSpeed builds LmHeadLinearAllreduce, whose forward slices its "
                       "rank's H/TP of the hidden states and sums the logits with "
                       "inference_all_reduce, which autograd does not see (module_inject/layers.py "
                       "LmHeadLinearAllreduce.forward): in backward each rank's hidden-state "
                       "gradient holds only its own slice and nothing gathers the rest",
                   "make the head column-parallel with \"gather_output\": true (what "
                   "transformers' tp_plan asks for: colwise_gather_output), or skip it");
      }
      continue;
    }
    if (parent.empty() && (leaf == "lm_head" || leaf == "embed_out") &&
        side_of(i) == Side::kColumn) {
      ctx.Report(
          "tp-missing-row-partner", specs[winner[i]].pointer,
          name + " is column-parallel (" + specs[winner[i]].label +
              ") without gather_output: "
              "each rank computes the logits of its 1/TP slice of the vocabulary and nothing "
              "gathers them before the loss",
          "set \"gather_output\": true on " + specs[winner[i]].label +
              ", or make the lm_head spec row-parallel (DeepSpeed then uses "
              "LmHeadLinearAllreduce)");
      continue;
    }
    if (!ColumnLeaves().contains(leaf) && !RowLeaves().contains(leaf)) continue;
    if (!blocks.contains(parent)) order.push_back(parent);
    blocks[parent].push_back(Proj{i, leaf, side_of(i), winner[i]});
  }

  // One finding per (spec, partner, partner state), counted over blocks.
  std::map<std::string, Finding> findings;
  std::vector<std::string> finding_order;
  for (const auto& parent : order) {
    const auto& projs = blocks[parent];
    std::map<std::string, Finding> local;
    std::vector<std::string> local_order;
    auto note = [&](const std::string& key, const Proj& p, Finding f) {
      auto [it, added] = local.emplace(key, std::move(f));
      if (added) local_order.push_back(key);
      std::vector<std::string>& leaves = it->second.leaves;
      if (std::find(leaves.begin(), leaves.end(), p.leaf) == leaves.end()) leaves.push_back(p.leaf);
      if (it->second.example.empty()) it->second.example = params[p.param].name;
    };
    std::vector<const Proj*> cols, rows;
    for (const Proj& p : projs) (ColumnLeaves().contains(p.leaf) ? cols : rows).push_back(&p);
    for (const Proj& p : projs) {
      const bool col_role = ColumnLeaves().contains(p.leaf);
      const LayerSpec* spec = p.spec >= 0 ? &specs[p.spec] : nullptr;
      if (p.side == Side::kColumn) {
        const auto& consumers = col_role ? rows : std::vector<const Proj*>{};
        if (consumers.empty()) {
          note("A|" + spec->pointer + "|-", p,
               Finding{"tp-missing-row-partner", spec->pointer, spec->label, "", ""});
        }
        for (const Proj* q : consumers) {
          if (q->side == Side::kRow) continue;
          note("A|" + spec->pointer + "|" + q->leaf + "|" + std::to_string(int(q->side)), p,
               Finding{"tp-missing-row-partner", spec->pointer, spec->label, q->leaf,
                       Describe(*q, specs, params)});
        }
      } else if (p.side == Side::kRow) {
        const auto& feeders = col_role ? std::vector<const Proj*>{} : cols;
        if (feeders.empty()) {
          note("B|" + spec->pointer + "|" + p.leaf + "|-", p,
               Finding{"tp-missing-column-partner", spec->pointer, spec->label, "", ""});
        }
        for (const Proj* q : feeders) {
          if (q->side == Side::kColumn) continue;
          // Grouped by the feeder's state: the leaves listed are the feeders, the partner the row
          // layer.
          std::string key =
              "B|" + spec->pointer + "|" + p.leaf + "|" + std::to_string(int(q->side));
          auto [it, added] =
              local.emplace(key, Finding{"tp-missing-column-partner", spec->pointer, spec->label,
                                         p.leaf, Describe(*q, specs, params)});
          if (added) local_order.push_back(key);
          auto& leaves = it->second.leaves;
          if (std::find(leaves.begin(), leaves.end(), q->leaf) == leaves.end())
            leaves.push_back(q->leaf);
          if (it->second.example.empty()) it->second.example = params[p.param].name;
        }
      }
    }
    for (const auto& key : local_order) {
      auto [it, added] = findings.emplace(key, local[key]);
      if (added) finding_order.push_back(key);
      ++it->second.blocks;
    }
  }
  for (const auto& key : finding_order) {
    const Finding& f = findings[key];
    const std::string where = f.blocks > 1 ? " (in " + std::to_string(f.blocks) + " blocks)" : "";
    const std::string leaves = JoinList(f.leaves);
    const bool many = f.leaves.size() > 1;
    if (f.id == "tp-missing-row-partner" && f.partner.empty()) {
      ctx.Report(
          f.id, f.pointer,
          leaves + " (e.g. " + f.example + ") " + (many ? "are" : "is") + " column-parallel (" +
              f.label +
              ") but no row-parallel projection follows in the block, so the 1/TP output slices "
              "reach the rest of the model ungathered" +
              where,
          "make the spec row-parallel or skip, or set gather_output on " + f.label);
    } else if (f.id == "tp-missing-row-partner") {
      ctx.Report(f.id, f.pointer,
                 leaves + " (e.g. " + f.example + ") " + (many ? "are" : "is") +
                     " column-parallel (" + f.label + ") but the partner " + f.partner + " is " +
                     f.partner_state +
                     ": a column-parallel layer "
                     "leaves each rank 1/TP of the output features and only a row-parallel partner "
                     "takes that "
                     "split input and all-reduces the result, so " +
                     f.partner + " gets a partial input" + where,
                 "make " + f.partner + " row-parallel ({\"patterns\": [" + Escaped(f.partner) +
                     "], \"partition_type\": \"row\"}), or leave " + leaves + " replicated");
    } else if (f.partner.empty()) {
      ctx.Report(f.id, f.pointer,
                 leaves + " (e.g. " + f.example + ") " + (many ? "are" : "is") + " row-parallel (" +
                     f.label +
                     ") but nothing column-parallel splits its input: a row-parallel layer shards "
                     "its input "
                     "dimension and expects the input already divided across the TP ranks" +
                     where,
                 "make it column-parallel (it opens its block), or leave it replicated");
    } else {
      ctx.Report(f.id, f.pointer,
                 f.example + " is row-parallel (" + f.label + ") but " + leaves + ", which feed" +
                     (many ? "" : "s") + " it, " + (many ? "are " : "is ") + f.partner_state +
                     ": a row-parallel layer shards its input dimension and expects every "
                     "projection feeding "
                     "it to be column-parallel, so the shapes no longer line up" +
                     where,
                 "make " + leaves + " column-parallel, or leave " + f.partner + " replicated");
    }
  }

  // Qwen3-style q_norm/k_norm: replicated, applied per head to sharded heads.
  const ModelSpec* model = ctx.options().model;
  if (model == nullptr || !model->qk_norm) return;
  std::map<std::string, std::pair<int, std::string>>
      norm_findings;  // spec pointer -> (count, example)
  std::vector<std::string> norm_order;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].name;
    for (const char* which : {"q", "k"}) {
      std::string suffix = std::string(".self_attn.") + which + "_norm.weight";
      if (!name.ends_with(suffix)) continue;
      std::string proj =
          name.substr(0, name.size() - suffix.size()) + ".self_attn." + which + "_proj";
      auto it = by_module.find(proj);
      if (it == by_module.end() || side_of(it->second) != Side::kColumn) continue;
      int norm_spec = winner[i];
      if (norm_spec >= 0 && specs[norm_spec].grad_allreduce) continue;
      const std::string& pointer = specs[winner[it->second]].pointer;
      auto [f, added] = norm_findings.emplace(pointer, std::make_pair(0, name));
      if (added) norm_order.push_back(pointer);
      ++f->second.first;
    }
  }
  const bool available = ctx.version() >= kGradAllreduceRelease;
  for (const auto& pointer : norm_order) {
    const auto& [count, example] = norm_findings[pointer];
    std::string msg = example + " (and " + std::to_string(count - 1) +
                      " more q/k norms) normalizes "
                      "attention heads that are sharded across the TP ranks, but stays replicated "
                      "without grad_allreduce: each rank computes only its own heads' share of the "
                      "gradient and nothing sums them over the TP group, so the replicas silently "
                      "drift apart after the first optimizer step";
    std::string hint =
        "put {\"patterns\": [\".*\\\\.self_attn\\\\.[qk]_norm\\\\.weight$\"], "
        "\"partition_type\": \"skip\", \"grad_allreduce\": true} first in layer_specs";
    if (available) {
      ctx.Report("tp-qk-norm-grad-allreduce", pointer, msg, hint);
    } else {
      ctx.ReportAs(Severity::kWarning, "tp-qk-norm-grad-allreduce", pointer,
                   msg + "; DeepSpeed " + ctx.version().ToString() +
                       " has no grad_allreduce (added in " + kGradAllreduceRelease.ToString() + ")",
                   "upgrade DeepSpeed, or leave q_proj/k_proj replicated");
    }
  }
}

std::vector<RuleInfo> ModelMatchRuleInfos() {
  return {
      {"tp-spec-pattern-unmatched", Severity::kWarning, "tensor_parallel",
       "a layer-spec pattern matches no parameter of --model",
       "DeepSpeed tests every 2-D weight's name (module name + \".weight\") with re.match, which "
       "anchors at the start of the name but not at its end. A pattern that matches none of the "
       "model's names partitions nothing; the usual causes are a missing leading .*, a $ right "
       "after the module name, or names from another architecture. Specs whose model_types "
       "exclude the model are not checked.",
       ""},
      {"tp-preset-model-mismatch", Severity::kWarning, "tensor_parallel",
       "the AutoTP preset matches nothing in --model",
       "tensor_parallel.preset_model selects built-in layer specs for one architecture family; "
       "used on another, none of its patterns match and nothing is partitioned by it.",
       ""},
      {"tp-spec-shadowed", Severity::kWarning, "tensor_parallel",
       "a layer spec that never wins because an earlier spec matches first",
       "AutoTPConfig.find_matching_spec uses the first matching spec (and logs a warning when "
       "several match). A custom spec whose parameters are all claimed by earlier specs has no "
       "effect.",
       ""},
      {"tp-strict-unmatched", Severity::kError, "tensor_parallel",
       "strict_mode with weights no spec matches",
       "With partition_config.strict_mode, AutoTP._replace_with_config raises ValueError \"No "
       "matching spec for <name>\" for every 2-D weight module without a spec (embeddings and, "
       "with AutoEP, the MoE blocks AutoEP replaced are not checked).",
       ""},
      {"tp-spec-shape-mismatch", Severity::kError, "tensor_parallel",
       "a layer spec shape that does not fit the weight it matches",
       "When a spec with shape is applied, _infer_subparam_logical_shapes (module_inject/"
       "layers.py) infers the logical shape: the product must equal the weight's numel (one -1 "
       "inferred), the last entry must equal the input width and the others must multiply to the "
       "output width; n > 0 at partition_dim must divide that dimension. Any mismatch is a "
       "ValueError while the engine builds the layer.",
       ""},
      {"tp-fused-qkv-unequal-split", Severity::kError, "tensor_parallel",
       "an equal sub-parameter split of a fused qkv weight whose q, k and v blocks differ",
       "A spec shape (3, -1) on a fused qkv_proj / query_key_value weight cuts it into three equal "
       "sub-parameters before sharding each (module_inject/layers.py, the sub-param path; the "
       "built-in phi3 preset does this, AutoTPPresets.phi3 in module_inject/autotp_config.py). "
       "With grouped-query attention the q block has num_attention_heads x head_dim rows and k "
       "and v num_key_value_heads x head_dim each, so the equal thirds cross the block "
       "boundaries and every rank gets mixed q/k/v rows; DeepSpeed raises nothing. The fused-QKV "
       "path that splits phi3 correctly (fusedqkv_utils.py, phi3type) is switched off whenever a "
       "preset or partition_config is used (auto_tp.py). A nested shape [[q, kv, kv], -1] "
       "describes the blocks.",
       ""},
      {"tp-missing-row-partner", Severity::kError, "tensor_parallel",
       "a column-parallel projection whose row-parallel partner is not row-parallel",
       "A column-parallel layer (LinearLayer) splits the weight's output dimension: forward is "
       "identity on the input and each rank keeps 1/TP of the output features; backward "
       "all-reduces the input gradient. Only a row-parallel partner (LinearAllreduce) takes that "
       "split activation and sums its output over the TP group. Pairs: q/k/v_proj -> o_proj, "
       "gate/up_proj -> down_proj, expert w1/w3 -> w2, dense_h_to_4h -> dense_4h_to_h, "
       "query_key_value -> dense. A column lm_head needs gather_output. With AutoEP enabled the "
       "MoE "
       "blocks are AutoEP's and are not checked.",
       ""},
      {"tp-lm-head-row-backward", Severity::kWarning, "tensor_parallel",
       "a row-parallel lm_head in training",
       "A row spec on lm_head / embed_out makes DeepSpeed build LmHeadLinearAllreduce "
       "(auto_tp.py _create_row_parallel_layer). Its forward slices the rank's share of the "
       "hidden features and sums the logits with dist.inference_all_reduce, outside autograd "
       "(module_inject/layers.py LmHeadLinearAllreduce.forward; the class carries a TODO about "
       "training). Backward therefore returns a hidden-state gradient that is zero outside the "
       "rank's slice, and no collective gathers the other slices: the layers below train on a "
       "partial gradient.",
       ""},
      {"compile-autotp-lm-head-row", Severity::kError, "compile",
       "a row-parallel lm_head under the autotp compile pass",
       "tp_compile.py lists LmHeadLinearAllreduce in UNSUPPORTED_LAYERS, and "
       "defer_collectives_to_compiler raises NotImplementedError for any TensorParallel_Layer "
       "that is neither column- nor row-parallel: the pass is all-or-nothing.",
       ""},
      {"tp-missing-column-partner", Severity::kError, "tensor_parallel",
       "a row-parallel projection fed by projections that are not column-parallel",
       "A row-parallel layer splits the weight's input dimension and expects its input already "
       "split across the TP ranks, which only column-parallel producers (without gather_output) "
       "deliver. If o_proj is row-parallel, q_proj, k_proj and v_proj all have to be column-"
       "parallel; likewise gate/up for down_proj and w1/w3 for w2.",
       ""},
      {"tp-hf-plan-unsupported", Severity::kError, "tensor_parallel",
       "AutoTP would convert a transformers tp_plan that DeepSpeed rejects",
       "With autotp_size > 1 and neither tensor_parallel.preset_model nor a non-empty "
       "partition_config, DeepSpeedEngine._apply_autotp_partitioning (runtime/engine.py) merges the "
       "model config's base_model_tp_plan with the CausalLM class's _tp_plan (_get_hf_tp_plan) and "
       "converts it with TPPlanConverter.convert (module_inject/tp_plan_converter.py). Since 0.19.6 "
       "(PR #8204) any style outside colwise, colwise_rep, colwise_gather_output, rowwise and "
       "replicated_with_grad_allreduce raises ValueError for the whole plan (the docstring still "
       "describes skipping such entries; the code raises). transformers 5 plans MoE experts as "
       "packed_colwise / moe_tp_experts (mixtral, qwen3_moe, deepseek_v2/v3, qwen3_next, "
       "qwen3_5_moe), llama4's experts as packed_rowwise, DeepSeek-V2's latent projection as "
       "mla_kv_a_proj and phi3's row layers as rowwise_split_input. Releases 0.18.9 to 0.19.5 log "
       "the styles and fall back to the heuristic AutoTP.tp_parser instead (a warning).",
       "Modelled for transformers >= 5.1 (PR #42809 renamed colwise_rep) and single-model "
       "checkpoints; with --transformers-version below 5.1, or a multimodal checkpoint, the plan "
       "is not checked."},
      {"tp-head-params-unsharded", Severity::kError, "tensor_parallel",
       "per-head parameters AutoTP leaves whole while the heads split",
       "AutoTP replaces modules with a 2-D weight only (AutoTP._replace_module in "
       "module_inject/auto_tp.py). gpt_oss's self_attn.sinks [num_attention_heads] is a raw "
       "parameter of the attention module, so with q/k/v column-parallel each rank computes "
       "num_attention_heads / TP heads but keeps every sink, and the eager attention's torch.cat "
       "of the [B, N/TP, S, S] scores with the [B, N, S, 1] sinks fails.",
       ""},
      {"tp-qk-norm-grad-allreduce", Severity::kError, "tensor_parallel",
       "q/k norms over sharded heads without grad_allreduce",
       "Qwen3-style q_norm/k_norm weights are shared by all heads. When q_proj/k_proj are "
       "column-parallel each rank normalizes only its own heads, so the norm's gradient on each "
       "rank is a partial sum. The layer spec option grad_allreduce (skip specs) registers a hook "
       "that SUMs it over the TP group (AutoTP.register_replicated_grad_hooks); without it the TP "
       "replicas silently diverge after the first step.",
       "grad_allreduce exists since 0.19.6 (PR #8204); older releases have no fix (warning)."},
  };
}

}  // namespace dsp::autotp
