// SPDX-License-Identifier: Apache-2.0
// Activation memory of one transformer layer and of the output layer: what forward saves for
// backward, per rank, in bytes.
//
// Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv 2205.05198), §4 and Table 2: 16-bit activations, 1-byte
// dropout masks; per layer sbh(34 + 5as/h) without parallelism, sbh(10 + 24/t + 5as/(ht)) with
// tensor parallelism, sbh/t (34 + 5as/h) with TP + sequence parallelism, the 5as/h term dropped by
// selective recompute, 2sbh per layer with full recompute. Generalised term by term (see
// activation_memory.cc) to GQA (k/v have kv_heads x head_dim columns), gated (SwiGLU) MLPs with
// three projections, models without dropout, Ulysses SP and MoE layers.
#pragma once

#include "sim/frameworks/framework.h"

#include <cstdint>

#include "sim/cost/workload.h"

namespace dsp::sim {

// The shape of one layer as one rank runs it.
struct LayerShape {
  int64_t seq_len = 0;      // s: tokens of one sequence, before Ulysses splits it
  int64_t micro_batch = 1;  // b
  int64_t hidden = 0;       // h
  int64_t heads = 0;        // a
  int64_t kv_heads = 0;     // = heads without GQA
  int64_t head_dim = 0;     // h / a for GPT and llama
  int64_t ffn = 0;          // width of the dense MLP (4h in GPT-3)
  bool gated_mlp = false;   // SwiGLU: gate, up and down projections
  bool dropout = true;      // Korthikanti's 1-byte masks; llama-family models train without dropout
  bool flash_attention = false;  // FlashAttention/SDPA: no scores saved, only the softmax
                                 // statistics (4 bytes per head and query)
  bool vocab_parallel = false;   // Megatron's parallel lm_head: logits split over t
  // The output projection saves the whole sequence's input though the final norm runs sequence-
  // parallel: torchtitan's TP plan (parallelize_llama.py apply_tp: "output" is
  // ColwiseParallel(input_layouts=Shard(1)), so F.linear saves the all-gathered norm output;
  // float8 skips "output"). Megatron's ColumnParallelLinear saves its shard and gathers again in
  // backward.
  bool lm_head_input_gathered = false;
  bool fused_loss = false;       // EngineSettings::fused_loss: the logits never whole
  bool tiled_mlp = false;        // EngineSettings::tiled_mlp: a dense MLP saves its input only
  // The model is transformers' eager PyTorch modules (what DeepSpeed trains), not Megatron's fused
  // ones: LlamaRMSNorm upcasts to fp32 and saves that copy (4 bytes per element) beside the bf16
  // output; the attention output is made contiguous for o_proj (a second copy beside the one SDPA
  // saves); the gated MLP saves act_fn's output as well as its input; eager attention keeps the
  // fp32 softmax and its bf16 cast (6 bytes per score); the loss upcasts the logits to fp32
  // (ForCausalLMLoss) and log_softmax saves its fp32 output. Measured on an H200 with transformers
  // 5.17 (docs/validation.md, "One GPU, measured").
  bool hf_eager = false;
  // EngineSettings::te_modules: TransformerEngine's norms and attention, Megatron's fused SwiGLU;
  // the loss stays PyTorch's (hf_eager's).
  bool te_modules = false;
  bool eager_modules() const { return hf_eager && !te_modules; }
  // DeepCompile runs the transformers modules through torch.compile: Inductor's partitioner, not
  // eager autograd, decides what is saved. Its norms are counted as before the eager norms' bf16
  // copies were (4 bytes per element) and q/k norms add nothing: not measured.
  bool compiled = false;
  bool rms_norm = true;          // RMSNorm (the fp32 upcast above); LayerNorm runs fused
  bool bf16_loss = false;        // EngineSettings::bf16_loss: the loss keeps no fp32 logits
  bool compiled_loss = false;    // EngineSettings::compiled_loss(): Inductor's fused cross-entropy
  // The eager fp32 loss as torchtitan runs it (FrameworkProfile::torchtitan_loss): `loss_parallel`,
  // DTensor's cross-entropy on vocab-sharded logits (tp > 1); `logits_freed_before_backward`, the
  // training loop drops its reference to the 16-bit logits before backward (not under a pipeline,
  // whose stage keeps its output until that micro-batch's backward).
  bool loss_parallel = false;
  bool logits_freed_before_backward = false;
  // torchtitan's TP: the full-sequence blocks (tokens x hidden, bf16) each row-parallel GEMM frees
  // within its layer: 2 without AsyncTP (the partial sum and funcol's reduce_scatter_tensor copy of
  // it, torch.cat of its chunks), 1 with it (_fused_matmul_reduce_scatter's stacked partials); they
  // stay cached into the loss (sim/cost/loss_allocations.h).
  int tp_partial_blocks = 0;
  // q_norm/k_norm (Qwen3, Gemma 3): RMSNorm over each head of q and k, a·d + g·d elements a token.
  int64_t qk_norm_cols = 0;
  // TransformerEngine FP8 linears (megatron-lm --fp8): each GEMM saves its input for backward as
  // the fp8 tensor it cast (1 byte: LayerNormLinear's ln_out, Linear's input, the activation output
  // feeding fc2), while the fused attention keeps its bf16 output beside o_proj's fp8 copy and the
  // pre-activation fc1 output stays bf16 (transformer_engine/pytorch/module/linear.py _Linear,
  // layernorm_linear.py _LayerNormLinear, v1.11-v2.2).
  bool fp8_saved_inputs = false;
  // torchtitan's op-level selective activation checkpointing under --recompute selective
  // (FrameworkProfile::op_level_sac): a dense layer keeps its input, the outputs of every other
  // matmul (q_proj, v_proj, the gate projection, the down projection) and the fused attention's
  // output and statistics; the rest is recomputed in backward (sim/cost/recompute_policy.h).
  bool op_sac = false;

  // Per-layer attention shape where it is not plain (G)QA; 0 means "as heads x head_dim".
  int64_t qk_head_dim = 0;      // MLA: nope + rope (192 for DeepSeek-V3); q and k widths per head
  int64_t v_head_dim = 0;       // MLA: v_head_dim (128); v and the attention output per head
  int64_t latent_cols = 0;      // MLA: q_a and kv_a outputs and their norms, saved per token
                                // (replicated over TP: the down projections are not split)
  int64_t window = 0;           // sliding window / chunk: keys per query of materialized scores
  // Gated DeltaNet layer (qwen3_next) when linear_value_cols > 0: no scores, no KV; replicated.
  int64_t linear_key_cols = 0;    // linear_num_key_heads x linear_key_head_dim
  int64_t linear_value_cols = 0;  // linear_num_value_heads x linear_value_head_dim
  int64_t linear_value_heads = 0;

  int tp = 1;                // tensor-parallel size t
  bool megatron_sp = false;  // Megatron sequence parallelism: norms/dropout sharded over t too.
                             // DeepSpeed's AutoTP does not do this; kept for the paper's formulas.
  int ulysses_sp = 1;        // DeepSpeed-Ulysses: every tensor holds s/sp tokens (all heads) or
                             // a/sp heads (all tokens), both 1/sp of the unsplit size
  // ulysses_sp is context parallelism (--cp): every tensor holds s/cp tokens and all heads; K/V
  // heads are not replicated and no all-to-all runs.
  ContextParallel context_parallel = ContextParallel::kNone;

  // MoE layer when num_experts > 0: the MoE block replaces the dense MLP.
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t expert_ffn = 0;          // width of one routed expert
  int64_t shared_expert_ffn = 0;   // 0: no shared expert
  bool expert_parallel = false;    // AutoEP: experts whole on ep ranks, tokens moved by all-to-all
  // Megatron-Core's experts (megatron-lm --ep): tokens enter sequence-parallel (s/t per rank), the
  // expert-TP group all-gathers each rank's dispatched rows (etp x of them), experts split over
  // etp, the shared expert over t.
  bool megatron_experts = false;
  int etp = 1;
  double capacity_factor = 0;      // 0: dropless (expected load); else each expert pads to capacity
};

struct LayerActivations {
  double attention_bytes = 0;  // input norm output, q/k/v, scores, attention output, masks
  double mlp_bytes = 0;        // dense MLP, or router + dispatched tokens + experts + shared expert
  double norm_bytes = 0;       // inputs of the two norms
  double checkpoint_bytes = 0; // kFull: the layer input, the only tensor kept
  double total_bytes() const { return attention_bytes + mlp_bytes + norm_bytes + checkpoint_bytes; }
};

// Tokens this rank holds of one micro-batch: s·b/ulysses_sp.
double LocalTokens(const LayerShape& shape);

// Token-expert assignments one rank's experts process per micro-batch. With AutoEP the ep·T tokens
// of an EP group pick top_k experts each and a rank owns num_experts/ep of them, so it receives
// ep·T·k/ep = T·k (uniform routing; with a capacity factor c every expert is padded to
// c·T_group·k/E, i.e. c·T·k per rank). Under AutoEP+AutoTP folding every TP peer routes the same
// tokens and dispatches only every tp-th assignment (ep_tp_dispatch.partition_assignments), so /tp.
// Megatron's experts receive k x the s/tp tokens of each EP peer, all-gathered over etp: T·k·etp/tp.
// Without AutoEP all experts are local (TP-sharded by AutoTP) and process all T·k assignments.
double ExpertAssignmentsPerRank(const LayerShape& shape);

// Saved activations of one layer for one micro-batch. kFull keeps only the layer input (2sbh,
// divided by t with Megatron SP); the working set of the layer being recomputed is the caller's.
LayerActivations LayerActivationBytes(const LayerShape& shape, Recompute recompute);

// Final norm, lm_head input and logits for the loss. Megatron's theoretical_memory_usage.py
// counts 4·s·b·h·(1 + V/h) for "output layer and CE" (Megatron-LM megatron/training/theoretical_memory_usage.py): the hidden part
// is split by t only with Megatron SP, the vocab part by t always (vocab-parallel lm_head).
double OutputLayerActivationBytes(const LayerShape& shape, int64_t vocab_size);

// DeepSpeed's TiledMLP (shape.tiled_mlp, a dense layer): the ffn-wide tensors of the one sequence
// shard its backward is running, live during that layer's backward only (a working set, not saved).
double TiledMlpShardBytes(const LayerShape& shape);

}  // namespace dsp::sim
