// SPDX-License-Identifier: Apache-2.0
// ds-plan simulate with the engines of 2026: --engine fsdp2, --cp, --ep and --fp8, and what each
// engine refuses.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/util/file_io.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;

constexpr const char* kZero3 = "samples/configs/zero3-llama.json";

std::string TempConfig(const std::string& name, const std::string& text) { return testing::WriteTempFile(name, text); }

std::string Llama8b(const std::string& zero) {
  return TempConfig("engines-" + zero + ".json",
                    R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 8, "bf16": {"enabled": true},
                        "zero_optimization": {"stage": )" + zero + "}}");
}

Json Simulate(const std::string& args) {
  auto r = RunCli("simulate " + args + " --format json", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  Json doc = Json::parse(r.output, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.output;
  return doc;
}

const std::string kModel = " --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json";

// simulate with `args` is a usage error (exit 2) whose message says `says`.
void ExpectUsageError(const std::string& args, const std::string& says) {
  auto r = RunCli("simulate " + args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
}

TEST(SimulateEnginesCliTest, Fsdp2RunsZeroThreeUnderAPipelineWithContextParallelism) {
  // DeepSpeed's PipelineEngine refuses ZeRO-3 with pipeline stages; FSDP2 shards every stage.
  const std::string config = Llama8b("3");
  auto refused = RunCli("simulate " + config + kModel + " --nodes 2 --pp 2");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("zero-stage-pipeline"), std::string::npos) << refused.output;
  const Json j = Simulate(config + kModel + " --nodes 4 --pp 2 --tp 2 --cp 2 --engine fsdp2 --virtual-stages 2");
  EXPECT_EQ(j["layout"]["dp"], 4);
  EXPECT_GT(j["time"]["step_seconds"].get<double>(), 0);
  // The report lists collectives by kind and group: K/V all-gathered over the CP group, gradients
  // reduce-scattered over dp_shard x cp.
  bool kv = false, fsdp = false;
  for (const Json& c : j["collectives"]) {
    kv = kv || (c["kind"] == "all_gather" && c["group"] == "sp");
    fsdp = fsdp || (c["kind"] == "reduce_scatter" && c["group"] == "sp_dp");
  }
  EXPECT_TRUE(kv && fsdp) << j["collectives"].dump();
}

TEST(SimulateEnginesCliTest, Fp8ShortensAMegatronStepAndAddsWeightCopies) {
  const std::string config = Llama8b("1");
  const std::string base = config + kModel + " --nodes 1 --engine megatron-lm --tp 2 --megatron-sp";
  const Json bf16 = Simulate(base);
  const Json fp8 = Simulate(base + " --fp8");
  EXPECT_LT(fp8["time"]["step_seconds"].get<double>(), bf16["time"]["step_seconds"].get<double>());
  EXPECT_GT(fp8["memory"]["buffers_bytes"].get<double>(), bf16["memory"]["buffers_bytes"].get<double>());
}

TEST(SimulateEnginesCliTest, EachEngineRefusesWhatItDoesNotHave) {
  struct Case {
    std::string flags, says;
  };
  const std::string config = Llama8b("1");
  for (const Case& c : {Case{" --cp 2", "--cp needs --engine megatron-lm or fsdp2"},
                        Case{" --ep 2", "--ep needs --engine megatron-lm or fsdp2"},
                        Case{" --fp8", "--fp8 needs --engine"},
                        Case{" --engine megatron-deepspeed --fp8", "--fp8 needs --engine"},
                        Case{" --engine fsdp2 --cp 2 --cp-comm-type a2a", "--cp-comm-type is Megatron-Core's"},
                        Case{" --engine megatron-lm --ep 2", "the model has no routed experts"},
                        Case{" --engine fsdp2 --cp 4 --seq-len 4100", "2 x cp load-balanced chunks"},
                        Case{" --world-size 16 --engine megatron-lm --cp 16 --cp-comm-type a2a", "must divide by --cp 16"},
                        Case{" --engine fsdp2 --fp8 --cluster samples/clusters/a100-80gb.json", "no FP8 tensor cores"}}) {
    const std::string cluster =
        c.flags.find("--cluster") == std::string::npos ? " --cluster samples/clusters/h100-sxm.json" : "";
    auto r = RunCli("simulate " + config + " --model samples/models/llama-3-8b.json" + cluster + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.flags << "\n" << r.output;
  }
}

// What the config asks of ZeRO must be what the engine's optimizer does.
TEST(SimulateEnginesCliTest, ZeroStagesAndOffloadTheEngineDoesNotHaveAreRefused) {
  struct Case {
    std::string zero, engine, says;
  };
  for (const Case& c : {Case{"3", "megatron-lm", "runs ZeRO stage 1 at most"},
                        Case{"1", "fsdp2", "has no ZeRO stage 1"}}) {
    auto r = RunCli("simulate " + Llama8b(c.zero) + kModel + " --engine " + c.engine);
    EXPECT_EQ(r.exit_code, 2) << c.engine << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
  }
  auto offload = RunCli("simulate samples/configs/zero3-offload.json" + kModel + " --engine fsdp2");
  EXPECT_EQ(offload.exit_code, 2) << offload.output;
  EXPECT_NE(offload.output.find("ZeRO-Offload only"), std::string::npos) << offload.output;
}

// A size that does not divide the ranks is a plan error (exit 1) that names the flag.
TEST(SimulateEnginesCliTest, AContextParallelSizeThatDoesNotDivideIsAPlanError) {
  auto r = RunCli("simulate " + Llama8b("1") + kModel + " --engine fsdp2 --cp 16");  // 8 ranks
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--cp, --ep and --etp stand for"), std::string::npos) << r.output;
}

TEST(SimulateEnginesCliTest, ExpertParallelismFromTheCommandLine) {
  const std::string config = Llama8b("1");
  const Json j = Simulate(config + " --model samples/models/qwen3-30b-a3b.json --cluster samples/clusters/h100-sxm.json"
                                   " --nodes 1 --engine megatron-lm --ep 8");
  EXPECT_EQ(j["layout"]["ep"], 8);
  // 128 experts: --ep 3 does not divide them; Megatron's MoE with TP needs sequence parallelism;
  // torchtitan's expert-tensor parallelism is not modelled.
  for (const char* flags : {" --engine megatron-lm --ep 3", " --engine megatron-lm --ep 8 --tp 2",
                            " --engine fsdp2 --ep 8 --tp 2"}) {
    auto r = RunCli("simulate " + config + " --model samples/models/qwen3-30b-a3b.json --cluster "
                    "samples/clusters/h100-sxm.json --nodes 2" + std::string(flags));
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
  }
  bool dispatch = false;
  for (const Json& c : j["collectives"]) dispatch = dispatch || (c["kind"] == "all_to_all" && c["group"] == "ep");
  EXPECT_TRUE(dispatch);
}

// Megatron-Core's MoE options (core_v0.12.0): --expert-tensor-parallel-size defaults to the
// tensor-parallel size (arguments.py validate_args), the dispatchers of token_dispatcher.py, and
// what the options refuse.
TEST(SimulateEnginesCliTest, MegatronExpertTensorParallelismAndTokenDispatchers) {
  const std::string config = Llama8b("1");
  const std::string moe = " --model samples/models/qwen3-30b-a3b.json --cluster samples/clusters/h100-sxm.json"
                          " --nodes 2 --engine megatron-lm --tp 2 --megatron-sp --ep 8";
  const Json folded = Simulate(config + moe);
  EXPECT_EQ(folded["layout"]["etp"], 2);  // the default: --tp
  EXPECT_EQ(folded["layout"]["edp"], 1);
  const Json whole = Simulate(config + moe + " --etp 1");
  EXPECT_EQ(whole["layout"]["etp"], 1);
  EXPECT_EQ(whole["layout"]["edp"], 2);
  auto kinds = [](const Json& j, const std::string& group) {
    std::string out;
    for (const Json& c : j["collectives"]) {
      if (c["group"] == group) out += c["kind"].get<std::string>() + " ";
    }
    return out;
  };
  EXPECT_NE(kinds(folded, "ep").find("all_to_all"), std::string::npos);
  const Json gathered = Simulate(config + moe + " --moe-token-dispatcher allgather");
  EXPECT_EQ(kinds(gathered, "ep").find("all_to_all"), std::string::npos) << kinds(gathered, "ep");
  EXPECT_NE(kinds(gathered, "ep").find("reduce_scatter"), std::string::npos);
  // 128 experts per rank group of 8: a grouped GEMM pays the wave tail once, never slower.
  const Json grouped = Simulate(config + moe + " --moe-grouped-gemm");
  EXPECT_LE(grouped["time"]["compute_seconds"].get<double>(), folded["time"]["compute_seconds"].get<double>());
  struct Case {
    std::string flags, says;
  };
  for (const Case& c : {Case{" --engine megatron-lm --etp 2", "it needs --ep"},
                        Case{" --engine fsdp2 --ep 8 --etp 2", "--etp needs --engine megatron-lm"},
                        Case{" --engine fsdp2 --ep 8 --moe-grouped-gemm", "are Megatron-Core's"},
                        Case{" --engine megatron-lm --tp 8 --megatron-sp --ep 8 --etp 5", "does not divide the experts' width"},
                        Case{" --engine megatron-lm --fp8-param-gather", "--fp8-param-gather needs --fp8"},
                        Case{" --engine megatron-deepspeed --fp8-param-gather", "needs --engine megatron-lm or fsdp2"},
                        Case{" --engine megatron-lm --ep 8 --etp 2", "above --tp 1"},
                        Case{" --engine megatron-lm --tp 2", "needs --megatron-sp"}}) {
    auto r = RunCli("simulate " + config + " --model samples/models/qwen3-30b-a3b.json --cluster "
                    "samples/clusters/h100-sxm.json --nodes 2" + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.flags << "\n" << r.output;
  }
  // Megatron's --fp8-param-gather needs the distributed optimizer (stage 1).
  ExpectUsageError(Llama8b("0") + kModel + " --engine megatron-lm --fp8 --fp8-param-gather",
                   "ZeRO stage 0 gathers no parameters");
}

// torchtitan's async TP (parallelism.enable_async_tensor_parallel): --tp-comm-overlap under fsdp2,
// only compiled (parallelize.py "Async TP requires --training.compile"), and only with TP.
TEST(SimulateEnginesCliTest, AsyncTpNeedsCompileAndHidesTheTensorParallelCollectives) {
  // One node: the data-parallel reduce-scatters across nodes would bound backward either way.
  const std::string args = Llama8b("3") + kModel + " --nodes 1 --engine fsdp2 --tp 8 --torch-compile";
  const Json vanilla = Simulate(args);
  const Json async = Simulate(args + " --tp-comm-overlap");
  EXPECT_LT(async["time"]["step_seconds"].get<double>(), vanilla["time"]["step_seconds"].get<double>());
  EXPECT_EQ(async["memory"]["peak_bytes"], vanilla["memory"]["peak_bytes"]);
  ExpectUsageError(Llama8b("3") + kModel + " --nodes 2 --engine fsdp2 --tp 8 --tp-comm-overlap",
                   "it needs --torch-compile");
  ExpectUsageError(Llama8b("3") + kModel + " --nodes 2 --engine fsdp2 --torch-compile --tp-comm-overlap",
                   "needs --tp of 2 or more");
  ExpectUsageError(Llama8b("3") + kModel + " --nodes 2 --engine deepspeed --tp-comm-overlap",
                   "or fsdp2 with --torch-compile");
  ExpectUsageError(Llama8b("3") + kModel + " --nodes 1 --engine fsdp2 --tp 8 --torch-compile --te-modules --tp-comm-overlap",
                   "not with --te-modules");
}

// NeMo's fp8_params: lighter weights and a lighter parameter all-gather than --fp8 alone.
TEST(SimulateEnginesCliTest, Fp8ParamGatherLightensMegatronWeights) {
  const std::string args = Llama8b("1") + kModel + " --nodes 2 --engine megatron-lm --fp8";
  const Json cached = Simulate(args);
  const Json fp8_params = Simulate(args + " --fp8-param-gather");
  EXPECT_LT(fp8_params["memory"]["parameters_bytes"].get<double>(), cached["memory"]["parameters_bytes"].get<double>());
  EXPECT_LT(fp8_params["memory"]["peak_bytes"].get<double>(), cached["memory"]["peak_bytes"].get<double>());
}

// Megatron-LM keeps an fp32 main_grad per parameter; NeMo's distributed_fused_adam with
// grad_sync_dtype bf16 keeps a bf16 buffer: 2 bytes a parameter less, and half the bytes reduced.
TEST(SimulateEnginesCliTest, Bf16GradBufferHalvesMegatronGradients) {
  const std::string args = Llama8b("1") + kModel + " --nodes 2 --engine megatron-lm";
  const Json fp32 = Simulate(args);
  const Json bf16 = Simulate(args + " --bf16-grad-buffer");
  EXPECT_DOUBLE_EQ(2 * bf16["memory"]["gradients_bytes"].get<double>(), fp32["memory"]["gradients_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(bf16["memory"]["parameters_bytes"].get<double>(), fp32["memory"]["parameters_bytes"].get<double>());
  auto reduced = [](const Json& j) {
    double bytes = 0;
    for (const Json& c : j["collectives"]) {
      if (c["group"] == "dp" && c["kind"] == "reduce_scatter") {
        bytes += c["bytes_per_call"].get<double>() * c["calls_per_step"].get<double>();
      }
    }
    return bytes;
  };
  EXPECT_GT(reduced(fp32), 0);
  EXPECT_DOUBLE_EQ(2 * reduced(bf16), reduced(fp32));
  ExpectUsageError(Llama8b("1") + kModel + " --bf16-grad-buffer",
                   "--bf16-grad-buffer is Megatron-Core's gradient buffer");
}

// NeMo's distributed_fused_adam with dtype: bf16 keeps the master copy and both moments in bf16:
// 6 bytes a parameter over the data-parallel group instead of 12.
TEST(SimulateEnginesCliTest, Bf16OptimizerStatesHalveMegatronOptimizerStates) {
  const std::string args = Llama8b("1") + kModel + " --nodes 2 --engine megatron-lm";
  const Json fp32 = Simulate(args);
  const Json bf16 = Simulate(args + " --bf16-optimizer-states");
  EXPECT_DOUBLE_EQ(2 * bf16["memory"]["optimizer_states_bytes"].get<double>(),
                   fp32["memory"]["optimizer_states_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(bf16["memory"]["gradients_bytes"].get<double>(), fp32["memory"]["gradients_bytes"].get<double>());
  auto deepspeed = RunCli("simulate " + Llama8b("3") + kModel + " --bf16-optimizer-states");
  EXPECT_EQ(deepspeed.exit_code, 2) << deepspeed.output;
  EXPECT_NE(deepspeed.output.find("--bf16-optimizer-states is NeMo's distributed_fused_adam dtype"),
            std::string::npos)
      << deepspeed.output;
  // Under FSDP2 torch's optimizers keep their states in the parameters' dtype.
  ExpectUsageError(Llama8b("3") + kModel + " --engine fsdp2 --bf16-optimizer-states", "needs --bf16-params");
}

double CollectiveBytes(const Json& report, const std::string& kind) {
  for (const Json& c : report["collectives"]) {
    if (c["kind"] == kind) return c["bytes_per_call"].get<double>();
  }
  ADD_FAILURE() << "no " << kind << " collective";
  return 0;
}

// A model cast to bf16 before fully_shard (NeMo AutoModel's MoE models: initialize_weights(dtype=
// torch.bfloat16)) keeps bf16 shards and gradients: the shard is the optimizer's master (2 bytes,
// not 4), the sharded gradient 2 bytes, the reduce-scatter still fp32 (reduce_dtype=torch.float32);
// with --bf16-optimizer-states torch's Adam keeps bf16 moments too: 6 bytes a parameter, not 12.
TEST(SimulateEnginesCliTest, Bf16ParamsKeepFsdp2ShardsGradientsAndMomentsInBf16) {
  const std::string args = Llama8b("3") + kModel + " --engine fsdp2";
  const Json fp32 = Simulate(args);
  const Json bf16 = Simulate(args + " --bf16-params");
  const Json pure = Simulate(args + " --bf16-params --bf16-optimizer-states");
  const double states = fp32["memory"]["optimizer_states_bytes"].get<double>();
  EXPECT_DOUBLE_EQ(bf16["memory"]["optimizer_states_bytes"].get<double>(), states * 10 / 12);
  EXPECT_DOUBLE_EQ(pure["memory"]["optimizer_states_bytes"].get<double>(), states * 6 / 12);
  EXPECT_DOUBLE_EQ(2 * bf16["memory"]["gradients_bytes"].get<double>(), fp32["memory"]["gradients_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(CollectiveBytes(bf16, "reduce_scatter"), CollectiveBytes(fp32, "reduce_scatter"));
  EXPECT_LT(bf16["time"]["optimizer_seconds"].get<double>(), fp32["time"]["optimizer_seconds"].get<double>());
  ExpectUsageError(Llama8b("3") + kModel + " --bf16-params", "--bf16-params is FSDP2's parameter dtype");
}

// F.cross_entropy on the 16-bit logits (MaskedCrossEntropy(fp32_upcast=False)) keeps 2 + 2 bytes
// per logit through forward and adds 2 + 2 in backward: 8, not the upcast's 12 (fsdp2's upcast
// loss is torchtitan's, whose loop frees the logits before backward: 4 + 4 + 4).
TEST(SimulateEnginesCliTest, Bf16LossKeepsEightBytesPerLogit) {
  const std::string args = Llama8b("3") + kModel + " --engine fsdp2 --recompute none --seq-len 4096";
  const Json upcast = Simulate(args);
  const Json bf16 = Simulate(args + " --bf16-loss");
  const double logits = 4096.0 * 128256;  // one sequence of Llama 3's vocabulary
  EXPECT_DOUBLE_EQ(upcast["memory"]["activations_bytes"].get<double>() - bf16["memory"]["activations_bytes"].get<double>(),
                   4 * logits);
  EXPECT_LT(bf16["time"]["step_seconds"].get<double>(), upcast["time"]["step_seconds"].get<double>());
  ExpectUsageError(Llama8b("1") + kModel + " --engine megatron-lm --bf16-loss",
                   "fused vocab-parallel cross-entropy");
}

// TransformerEngine's modules (NeMo AutoModel's BackendConfig te) save what Megatron's fused ones
// do: per layer each RMSNorm keeps its 16-bit input (2 bytes per element, not LlamaRMSNorm's fp32
// upcast and bf16 product, 6), the MLP three ffn-wide tensors (not four: the fused SwiGLU keeps no
// act_fn output) and attention no contiguous copy of its output for o_proj; the final norm too.
// The loss stays the script's PyTorch cross-entropy, in AutoModel's loop (which keeps its model
// output through backward, SimInput's automodel_loop): --bf16-loss still saves 6 bytes a logit.
TEST(SimulateEnginesCliTest, TeModulesSaveWhatFusedKernelsSaveAndKeepThePyTorchLoss) {
  const std::string args = Llama8b("3") + kModel + " --engine fsdp2 --recompute none --seq-len 4096";
  const Json eager = Simulate(args);
  const Json te = Simulate(args + " --te-modules");
  const Json te_bf16_loss = Simulate(args + " --te-modules --bf16-loss");
  const double tokens = 4096, h = 4096, ffn = 14336, layers = 32;
  const double per_layer = 2 * (6 - 2) * tokens * h + 2 * tokens * ffn + 2 * tokens * h;
  EXPECT_NEAR(eager["memory"]["activations_bytes"].get<double>() - te["memory"]["activations_bytes"].get<double>(),
              layers * per_layer + (6 - 2) * tokens * h - 2 * tokens * 128256, 1e3);  // AutoModel's loop keeps the logits
  EXPECT_NEAR(te["memory"]["activations_bytes"].get<double>() - te_bf16_loss["memory"]["activations_bytes"].get<double>(),
              6 * tokens * 128256, 1e3);
  // Fused norms and SwiGLU move fewer bytes than the eager ones.
  EXPECT_LT(te["time"]["step_seconds"].get<double>(), eager["time"]["step_seconds"].get<double>());
  ExpectUsageError(Llama8b("3") + kModel + " --te-modules", "--te-modules is NeMo AutoModel's");
}

// NeMo AutoModel's expert wrapping (moe/parallelizer.py apply_fsdp): where expert parallelism covers
// a stage's data-parallel ranks (edp 1) the experts stay out of fully_shard, so under a pipeline
// (no resharding) they have no bf16 gathered copy (2 bytes); over a larger ep_shard mesh they are
// wrapped without a mixed-precision policy and gathered in their own bf16. torchtitan always wraps
// them with the blocks' policy and, since its stage module is the FSDP root, accumulates every
// gradient unsharded in fp32 (4 bytes) until the stage's last backward; AutoModel wraps
// model.model, so FSDP's hooks reduce-scatter every micro-batch and nothing accumulates.
TEST(SimulateEnginesCliTest, AutomodelExpertsStayOutOfFsdpWhereExpertParallelismCoversTheRanks) {
  const std::string model = " --model samples/models/qwen3-30b-a3b.json --cluster samples/clusters/h100-sxm.json";
  const double routed_per_layer = 128.0 * 3 * 2048 * 768;
  auto buffers = [&](const std::string& args) { return Simulate(args)["memory"]["buffers_bytes"].get<double>(); };
  // 8 GPUs, 2 stages of 24 layers, dp 4, ep 4: edp 1.
  const std::string one = Llama8b("3") + model + " --world-size 8 --engine fsdp2 --pp 2 --ep 4 --bf16-params";
  const double saved_one = buffers(one) - buffers(one + " --automodel-experts");
  // 16 GPUs: dp 8, ep 4, edp 2.
  const std::string two = Llama8b("3") + model + " --world-size 16 --engine fsdp2 --pp 2 --ep 4 --bf16-params";
  const double saved_two = buffers(two) - buffers(two + " --automodel-experts");
  // Both save the fp32 accumulation of every gradient (the experts' 4 bytes and the rest's); edp 1
  // also saves the experts' gathered bf16 copy.
  EXPECT_NEAR(saved_one - saved_two, 2 * 24 * routed_per_layer / 4, 1e3);
  // Qwen3-30B-A3B's attention and router: 2048 x (4096 + 512 + 512) + 4096 x 2048 + 2048 x 128 a layer.
  const double dense_per_layer = 2048.0 * (4096 + 512 + 512) + 4096.0 * 2048 + 2048.0 * 128;
  EXPECT_GT(saved_two, 4 * 24 * (routed_per_layer / 4 + dense_per_layer));
  ExpectUsageError(Llama8b("1") + model + " --engine megatron-lm --ep 8 --automodel-experts",
                   "--automodel-experts is how NeMo AutoModel wraps experts");
}

// --torch-compile (torchtitan's per-block torch.compile) fuses the blocks' memory-bound chains: the
// step is shorter; under --fp8 torchao's input casts fuse too. The loss is compiled as well
// (compile.components ["model", "loss"]), which keeps no fp32 logits: the peak drops by 8 bytes a
// logit (12, the eager loss with the logits freed before backward, to 4). --eager-loss (torchtitan before April 2025) keeps the eager loss and its memory. Only
// fsdp2 has it (DeepSpeed's compiler is compile.deepcompile in its config).
TEST(SimulateEnginesCliTest, TorchCompileFusesTheBlocksUnderFsdp2Only) {
  const std::string args = Llama8b("3") + kModel + " --world-size 8 --engine fsdp2";
  const Json eager = Simulate(args), compiled = Simulate(args + " --torch-compile");
  const Json blocks = Simulate(args + " --torch-compile --eager-loss");
  EXPECT_LT(compiled["time"]["step_seconds"].get<double>(), blocks["time"]["step_seconds"].get<double>());
  EXPECT_LT(blocks["time"]["step_seconds"].get<double>(), eager["time"]["step_seconds"].get<double>());
  EXPECT_DOUBLE_EQ(blocks["memory"]["peak_bytes"].get<double>(), eager["memory"]["peak_bytes"].get<double>());
  // seq 4096, micro-batch 1, Llama-3-8B's 128,256-token vocabulary.
  EXPECT_NEAR(eager["memory"]["peak_bytes"].get<double>() - compiled["memory"]["peak_bytes"].get<double>(),
              8.0 * 4096 * 128256, 1e6);
  const Json fp8 = Simulate(args + " --fp8"), fp8_compiled = Simulate(args + " --fp8 --torch-compile");
  EXPECT_LT(fp8_compiled["time"]["step_seconds"].get<double>(), fp8["time"]["step_seconds"].get<double>());
  ExpectUsageError(Llama8b("3") + kModel + " --world-size 8 --torch-compile", "--torch-compile is torchtitan's");
  ExpectUsageError(args + " --eager-loss", "--eager-loss says torch.compile leaves the loss out");
}

// DeepEP (--te-modules) sends a token once to each rank holding one of its experts. NeMo
// AutoModel's FakeBalancedGate gives token t the experts (t k + j) mod E: Qwen3-30B-A3B's 8
// consecutive experts are one rank's 16 on EP 8, so one row a token; a learned router spreads them
// over about 5.3 ranks.
TEST(SimulateEnginesCliTest, FakeBalancedGateSendsDeepEpOneRowPerToken) {
  const std::string model = Llama8b("3") +
                            " --model samples/models/qwen3-30b-a3b.json --cluster samples/clusters/h100-sxm.json "
                            "--world-size 8 --engine fsdp2 --te-modules";
  const std::string args = model + " --ep 8";
  auto dispatch_bytes = [](const Json& out) {  // the dispatch is the first all-to-all over EP
    for (const Json& c : out["collectives"]) {
      if (c["kind"] == "all_to_all" && c["group"] == "ep") return c["bytes_per_call"].get<double>();
    }
    return 0.0;
  };
  const double gate = dispatch_bytes(Simulate(args + " --fake-balanced-gate"));
  const double router = dispatch_bytes(Simulate(args));
  EXPECT_DOUBLE_EQ(gate, 4096.0 * 2048 * 2);  // seq 4096, micro-batch 1, h 2048, bf16
  EXPECT_NEAR(router / gate, 5.3, 0.05);
  ExpectUsageError(model + " --fake-balanced-gate", "--fake-balanced-gate routes tokens to expert-parallel");
  ExpectUsageError(Llama8b("1") + " --model samples/models/qwen3-30b-a3b.json --cluster h100-sxm --world-size 8 "
                   "--engine megatron-lm --ep 8 --fake-balanced-gate",
                   "--fake-balanced-gate is NeMo AutoModel's FakeBalancedGate");
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

// plan records --engine, --cp, --ep and --fp8 with the rest of the flags, and check replays them.
// --pp-schedule-micro-batches: torchtitan and NeMo AutoModel call their pipeline schedule once per
// local batch (torchtitan train.py; AutoModel recipes/llm/benchmark.py, one
// _forward_backward_step per local batch), so 8 micro-batches as 2 calls of 4 pay two fills and
// drains. The report says how many calls; the JSON matches its schema (engine fsdp2 included).
TEST(SimulateEnginesCliTest, PipelineScheduleCallsEachPayTheBubble) {
  const std::string args = Llama8b("3") + kModel + " --nodes 2 --engine fsdp2 --pp 4 --virtual-stages 2";
  const Json one = Simulate(args);
  const Json two = Simulate(args + " --pp-schedule-micro-batches 4");
  EXPECT_EQ(one["engine"]["pipeline_schedule_calls"], 1);
  EXPECT_EQ(two["engine"]["pipeline_schedule_calls"], 2);
  const double bubble = one["time"]["pipeline_bubble_seconds"].get<double>();
  ASSERT_GT(bubble, 0);
  EXPECT_NEAR(two["time"]["pipeline_bubble_seconds"].get<double>(), 2 * bubble, 1e-9);
  // Each call's last backward reduce-scatters (and reshards, so the next call gathers again).
  auto calls_of = [](const Json& doc, const char* kind) {
    double calls = 0;
    for (const Json& c : doc["collectives"]) {
      if (c["kind"] == kind && c["group"] == "dp") calls += c["calls_per_step"].get<double>();
    }
    return calls;
  };
  ASSERT_GT(calls_of(one, "reduce_scatter"), 0);
  ASSERT_GT(calls_of(one, "all_gather"), 0);
  EXPECT_DOUBLE_EQ(calls_of(two, "reduce_scatter"), 2 * calls_of(one, "reduce_scatter"));
  EXPECT_DOUBLE_EQ(calls_of(two, "all_gather"), 2 * calls_of(one, "all_gather"));
  auto exposed = [](const Json& doc) {
    double sum = 0;
    for (const auto& [kind, seconds] : doc["time"]["exposed_communication_seconds"].items()) sum += seconds.get<double>();
    return sum;
  };
  EXPECT_NEAR(two["time"]["step_seconds"].get<double>() - one["time"]["step_seconds"].get<double>(),
              bubble + exposed(two) - exposed(one), 1e-9);
  // NeMo AutoModel's MoE parallelizer shards model.model, not the stage's module
  // (components/moe/parallelizer.py apply_fsdp), so torch's stage runs a plain backward and FSDP
  // reduce-scatters and reshards after every micro-batch, whatever the calls: 8 a step here where
  // torchtitan's stage (an FSDPModule, no_sync until the call's last backward) runs one.
  const std::string moe = TempConfig("engines-moe-calls.json",
                                     R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 8,
                                         "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})") +
                          " --model samples/models/qwen3-30b-a3b.json --cluster samples/clusters/h100-sxm.json "
                          "--nodes 2 --engine fsdp2 --pp 2 --ep 8 --bf16-params";
  const Json tt = Simulate(moe), am_one = Simulate(moe + " --automodel-experts");
  const Json am_two = Simulate(moe + " --automodel-experts --pp-schedule-micro-batches 4");
  EXPECT_EQ(am_two["engine"]["pipeline_schedule_calls"], 2);
  ASSERT_GT(calls_of(tt, "reduce_scatter"), 0);
  EXPECT_DOUBLE_EQ(calls_of(am_one, "reduce_scatter"), 8 * calls_of(tt, "reduce_scatter"));
  EXPECT_DOUBLE_EQ(calls_of(am_one, "all_gather"), 8 * calls_of(tt, "all_gather"));
  EXPECT_DOUBLE_EQ(calls_of(am_two, "reduce_scatter"), calls_of(am_one, "reduce_scatter"));
  EXPECT_EQ(testing::SchemaErrors(schemas::k_simulate_report_schema_json, two), "");
  auto text = RunCli("simulate " + args + " --pp-schedule-micro-batches 4");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("2 pipeline schedule calls of 4 micro-batches"), std::string::npos) << text.output;
  ExpectUsageError(args + " --pp-schedule-micro-batches 3", "does not divide the step's 8 micro-batches");
  ExpectUsageError(Llama8b("3") + kModel + " --nodes 2 --engine fsdp2 --pp-schedule-micro-batches 4",
                   "it needs --pp");
  ExpectUsageError(Llama8b("1") + kModel + " --nodes 2 --engine megatron-lm --pp 4 --pp-schedule-micro-batches 4",
                   "use it with --engine fsdp2");
  ExpectUsageError(Llama8b("1") + kModel + " --nodes 2 --pp 4 --pp-schedule-micro-batches 4",
                   "use it with --engine fsdp2");  // DeepSpeed's PipelineEngine: one train_batch
  ExpectUsageError(args + " --pp-schedule-micro-batches 0", "not in range");
  // A call of all 8 is the default's one call, and says so.
  auto whole = RunCli("simulate " + args + " --pp-schedule-micro-batches 8");
  EXPECT_NE(whole.output.find("1 pipeline schedule call of 8 micro-batches"), std::string::npos) << whole.output;
  EXPECT_EQ(Simulate(args + " --pp-schedule-micro-batches 8")["time"], one["time"]);
  // The config's _ds_plan note carries it (explore writes it), and the command line wins.
  const std::string noted = TempConfig(
      "engines-noted-calls.json",
      R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 8, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3},
          "_ds_plan": {"engine": "fsdp2", "pipeline_stages": 4, "virtual_pipeline_stages": 2,
                       "pp_schedule_micro_batches": 4}})");
  auto from_note = RunCli("simulate " + noted + kModel + " --nodes 2 --format json", /*merge_stderr=*/false);
  ASSERT_EQ(from_note.exit_code, 0) << from_note.output;
  EXPECT_EQ(Json::parse(from_note.output)["engine"]["pipeline_schedule_calls"], 2);
  EXPECT_EQ(Simulate(noted + kModel + " --nodes 2 --pp-schedule-micro-batches 2")["engine"]["pipeline_schedule_calls"], 4);
  auto noted_text = RunCli("simulate " + noted + kModel + " --nodes 2");
  EXPECT_NE(noted_text.output.find("pipeline schedule calls of 4 micro-batches"), std::string::npos) << noted_text.output;
}

TEST(SimulateEnginesCliTest, PlanAndCheckRecordTheEngineFlags) {
  // check reads only files inside the directory it runs in (the source tree): the build tree.
  const std::string dir = std::string(DSP_BUILD_DIR) + "/engines-plan-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/ds_config.json";
  std::filesystem::copy_file(Llama8b("3"), config, std::filesystem::copy_options::overwrite_existing);
  const std::string snapshot = dir + "/fsdp2.plan.json";
  auto planned =
      RunCli("plan " + config + kModel + " --nodes 2 --engine fsdp2 --tp 2 --cp 2 --fp8 --torch-compile --eager-loss -o " +
             snapshot);
  ASSERT_EQ(planned.exit_code, 0) << planned.output;
  auto text = ReadFile(snapshot);
  ASSERT_TRUE(text.ok());
  const Json doc = Json::parse(*text);
  EXPECT_EQ(doc["inputs"]["engine"], "fsdp2");
  EXPECT_EQ(doc["inputs"]["cp"], 2);
  EXPECT_EQ(doc["inputs"]["fp8"], true);
  EXPECT_EQ(doc["inputs"]["torch_compile"], true);
  EXPECT_EQ(doc["inputs"]["eager_loss"], true);
  EXPECT_TRUE(doc["inputs"]["pp_schedule_micro_batches"].is_null());
  auto checked = RunCli("check " + snapshot + " --format json", false);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  // Megatron's MoE options and FP8 parameters are recorded and replayed too.
  const std::string moe = dir + "/moe.plan.json";
  auto moe_planned = RunCli("plan " + config + " --model samples/models/qwen3-30b-a3b.json --cluster "
                            "samples/clusters/h100-sxm.json --nodes 2 --engine megatron-lm --tp 2 --megatron-sp "
                            "--ep 8 --etp 1 --moe-token-dispatcher allgather --moe-grouped-gemm -o " + moe +
                            " --set zero_optimization.stage=1");
  ASSERT_EQ(moe_planned.exit_code, 0) << moe_planned.output;
  const Json moe_doc = Json::parse(*ReadFile(moe));
  EXPECT_EQ(moe_doc["inputs"]["etp"], 1);
  EXPECT_EQ(moe_doc["inputs"]["moe_token_dispatcher"], "allgather");
  EXPECT_EQ(moe_doc["inputs"]["moe_grouped_gemm"], true);
  EXPECT_EQ(moe_doc["inputs"]["fp8_param_gather"], false);
  EXPECT_EQ(moe_doc["inputs"]["fake_balanced_gate"], false);
  EXPECT_EQ(moe_doc["inputs"]["torch_compile"], false);
  auto moe_checked = RunCli("check " + moe + " --format json", false);
  EXPECT_EQ(moe_checked.exit_code, 0) << moe_checked.output;
  // The schedule's calls are recorded, replayed, and a change of them is a changed plan.
  const std::string piped = dir + "/piped.plan.json";
  auto piped_planned = RunCli("plan " + config + kModel + " --nodes 2 --engine fsdp2 --pp 4 "
                              "--pp-schedule-micro-batches 2 -o " + piped);
  ASSERT_EQ(piped_planned.exit_code, 0) << piped_planned.output;
  Json piped_doc = Json::parse(*ReadFile(piped));
  EXPECT_EQ(piped_doc["inputs"]["pp_schedule_micro_batches"], 2);
  EXPECT_EQ(testing::SchemaErrors(schemas::k_plan_schema_json, piped_doc), "");
  auto piped_checked = RunCli("check " + piped + " --format json", false);
  EXPECT_EQ(piped_checked.exit_code, 0) << piped_checked.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dsp
