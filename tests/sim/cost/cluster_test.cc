// SPDX-License-Identifier: Apache-2.0
// ParseCluster: the presets parse with the documented figures and validate against
// schemas/cluster.schema.json; every kind of mistake is reported at its JSON pointer.
#include "sim/cost/cluster.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "core/schema/embedded.h"

namespace dsp::sim {
namespace {

Json LoadPreset(const std::string& file) {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/samples/clusters/" + file);
  EXPECT_TRUE(in.good()) << "cannot open samples/clusters/" << file;
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

Cluster ParseOrDie(const std::string& file) {
  Result<Cluster> c = ParseCluster(LoadPreset(file));
  if (!c.ok()) {
    ADD_FAILURE() << file << ": " << c.error().message;
    return Cluster{};
  }
  return *c;
}

bool MatchesSchema(const Json& doc) {
  Json schema_json = Json::parse(schemas::k_cluster_schema_json);
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_json);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::adapters::NlohmannJsonAdapter target(doc);
  return validator.validate(schema, target, nullptr);
}

std::string ErrorOf(const Json& doc) {
  Result<Cluster> c = ParseCluster(doc);
  return c.ok() ? std::string("<parsed>") : c.error().message;
}

TEST(ClusterTest, H100Preset) {
  Cluster c = ParseOrDie("h100-sxm.json");
  EXPECT_EQ(c.gpu.peak_bf16_flops_per_second, 989e12);  // dense, not the sparse 1979
  EXPECT_EQ(c.gpu.hbm_bytes, 81559.0 * (1 << 20));  // what CUDA reports of an H100 80GB HBM3
  EXPECT_EQ(c.gpu.hbm_bytes_per_second, 3.35e12);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.intra_node.busbw_bytes_per_second, 370e9);
  EXPECT_EQ(c.inter_node.busbw_bytes_per_second, 48e9);
  // A ring step over the network waits longer than one over NVLink (NCCL's hwLat table).
  EXPECT_GT(c.inter_node.hop_latency_seconds, c.intra_node.hop_latency_seconds);
  EXPECT_EQ(c.gpu.sm_count, 132);
  // Its own rail fit, on H100 DeepSpeed ZeRO-3 runs (CalibrateModernCliTest re-runs it), not the
  // 1.66 rails fitted on 2021 Selene A100 runs.
  EXPECT_DOUBLE_EQ(c.inter_node.max_rails, 4.6154);
  EXPECT_EQ(c.host.zero3_fetch_seconds, 0);  // carried by the rail fit (docs/validation.md)
  EXPECT_GT(c.memory.reserved_bytes, 0);
  EXPECT_GT(c.host_to_device_bytes_per_second, 0);
  // bf16: the rate fitted on DGX H100 NeMo runs (CalibrateModernCliTest re-runs the fit); FP8:
  // cuBLASLt FP8 8192^3 at 1,290.1 TFLOP/s on H100 SXM (cited in the file).
  EXPECT_DOUBLE_EQ(c.efficiency.matmul, 0.6753);
  EXPECT_DOUBLE_EQ(c.efficiency.fp8_matmul, 0.652);
  EXPECT_EQ(c.gpu.peak_fp8_flops_per_second, 1979e12);  // dense, not the sparse 3958
  // cuDNN's and FlashAttention-2's H100 figures of the FlashAttention-3 paper (cited in the file).
  EXPECT_DOUBLE_EQ(c.efficiency.attention, 0.51);  // forward and backward at head dim 128, 4K
  EXPECT_DOUBLE_EQ(c.efficiency.attention_flash2, 0.316);
  EXPECT_DOUBLE_EQ(c.efficiency.memory, 0.8);
  EXPECT_FALSE(c.name.empty());
  EXPECT_EQ(c.gpu.name, "H100 SXM5 80GB");
}

// No preset carries a figure fitted on another machine or era: only the A100 presets keep the rail
// figure fitted on A100 Selene runs; the H100 80GB preset has its own, fitted on H100 runs.
TEST(ClusterTest, OnlyTheA100PresetsCarryTheSeleneRailFit) {
  for (const char* name : {"h100-96gb-hbm2e.json", "h200.json", "b200.json", "gb200-nvl72.json"}) {
    EXPECT_EQ(ParseOrDie(name).inter_node.max_rails, 0) << name;
  }
  EXPECT_NE(ParseOrDie("h100-sxm.json").inter_node.max_rails, ParseOrDie("a100-80gb.json").inter_node.max_rails);
  for (const char* name : {"a100-80gb.json", "selene-a100-80gb.json"}) {
    EXPECT_GT(ParseOrDie(name).inter_node.max_rails, 0) << name;
    EXPECT_EQ(ParseOrDie(name).gpu.peak_fp8_flops_per_second, 0) << name;  // Ampere: no FP8
  }
}

TEST(ClusterTest, B200Preset) {
  Cluster c = ParseOrDie("b200.json");
  EXPECT_EQ(c.gpu.peak_bf16_flops_per_second, 2.25e15);  // dense; 4.5 PFLOPS is with sparsity
  EXPECT_EQ(c.gpu.peak_fp8_flops_per_second, 4.5e15);
  // What CUDA reports (178.35 GiB, pytorch/ao PR #4002), not the DGX guide's 180 GB per GPU.
  EXPECT_EQ(c.gpu.hbm_bytes, 191.5e9);
  EXPECT_EQ(c.intra_node.busbw_bytes_per_second, 682e9);
  EXPECT_EQ(c.inter_node.busbw_bytes_per_second, 48e9);
  EXPECT_EQ(c.gpu.sm_count, 148);
  // No B200 measurement of memory-bound kernels or attention: the defaults apply.
  EXPECT_DOUBLE_EQ(c.efficiency.memory, 0.8);
  EXPECT_DOUBLE_EQ(c.efficiency.attention, 0);
}

TEST(ClusterTest, Gb200Nvl72IsOneNvlinkDomainOf72) {
  Cluster c = ParseOrDie("gb200-nvl72.json");
  EXPECT_EQ(c.gpus_per_node, 72);  // groups inside the rack use NVLink
  EXPECT_EQ(c.gpu.peak_bf16_flops_per_second, 2.5e15);
  EXPECT_EQ(c.gpu.peak_fp8_flops_per_second, 5e15);
  EXPECT_EQ(c.gpu.hbm_bytes, 186e9);
  EXPECT_EQ(c.intra_node.busbw_bytes_per_second, 680e9);
}

TEST(ClusterTest, TorchtitanH100With96GbOfHbm2e) {
  Cluster c = ParseOrDie("h100-96gb-hbm2e.json");
  EXPECT_EQ(c.gpu.hbm_bytes, 94.0 * (1ull << 30));  // 94 GiB: what torchtitan reports of these GPUs
  EXPECT_EQ(c.gpu.hbm_bytes_per_second, 2.4e12);
  EXPECT_EQ(c.gpu.peak_bf16_flops_per_second, 989e12);  // an upper bound under the 500 W cap
  // The clock its GEMMs sustain under the cap: fitted on its runs (CalibrateModernCliTest).
  EXPECT_GT(c.gpu.compute_clock_ratio, 0.5);
  EXPECT_LT(c.gpu.compute_clock_ratio, 1.0);
  // Every other preset runs at the clock its efficiencies were measured at.
  for (const char* name : {"h100-sxm.json", "h200.json", "a100-80gb.json", "b200.json"}) {
    EXPECT_EQ(ParseOrDie(name).gpu.compute_clock_ratio, 1.0) << name;
  }
}

TEST(ClusterTest, H200Preset) {
  Cluster c = ParseOrDie("h200.json");
  EXPECT_EQ(c.gpu.peak_bf16_flops_per_second, 989e12);  // same compute as H100
  EXPECT_EQ(c.gpu.hbm_bytes, 141e9);
  EXPECT_EQ(c.gpu.hbm_bytes_per_second, 4.8e12);
  EXPECT_EQ(c.intra_node.busbw_bytes_per_second, 370e9);
  EXPECT_EQ(c.inter_node.busbw_bytes_per_second, 48e9);
  // Fitted to the one-GPU steps of docs/measurements/h200-fit (GpuStepsTest checks the fit).
  EXPECT_EQ(c.host.forward_seconds_per_kernel, 4.11e-5);
  EXPECT_EQ(c.host.backward_seconds_per_kernel, 5.05e-5);
}

// The host's per-kernel issue times: absent means not modelled; a negative or an implausible
// figure (milliseconds per kernel: a unit mistake) is refused at its pointer.
TEST(ClusterTest, HostLaunchFigures) {
  Json doc = LoadPreset("h100-sxm.json");
  Result<Cluster> c = ParseCluster(doc);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host.forward_seconds_per_kernel, 0);
  EXPECT_EQ(c->host.backward_seconds_per_kernel, 0);
  doc["host"] = {{"forward_seconds_per_kernel", 3e-5}, {"backward_seconds_per_kernel", 2e-5}};
  EXPECT_TRUE(MatchesSchema(doc));
  c = ParseCluster(doc);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host.forward_seconds_per_kernel, 3e-5);
  EXPECT_EQ(c->host.backward_seconds_per_kernel, 2e-5);
  doc["host"]["forward_seconds_per_kernel"] = -1e-6;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc).rfind("/host/forward_seconds_per_kernel: ", 0), 0u) << ErrorOf(doc);
  doc["host"]["forward_seconds_per_kernel"] = 0.5;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_NE(ErrorOf(doc).find("outside what a machine has"), std::string::npos) << ErrorOf(doc);
  doc["host"] = {{"forward_us", 30}};
  EXPECT_EQ(ErrorOf(doc).rfind("/host/forward_us", 0), 0u) << ErrorOf(doc);
}

TEST(ClusterTest, A100Preset) {
  Cluster c = ParseOrDie("a100-80gb.json");
  EXPECT_EQ(c.gpu.peak_bf16_flops_per_second, 312e12);
  EXPECT_EQ(c.gpu.hbm_bytes, 80e9);
  EXPECT_EQ(c.gpu.hbm_bytes_per_second, 2.039e12);
  EXPECT_EQ(c.intra_node.busbw_bytes_per_second, 240e9);
  EXPECT_EQ(c.inter_node.busbw_bytes_per_second, 24e9);  // HDR, half of NDR
}

// Every cluster file under samples/clusters/, sorted.
std::vector<std::string> Presets() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DSP_SOURCE_DIR) + "/samples/clusters")) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ClusterTest, PresetsMatchTheSchema) {
  const std::vector<std::string> presets = Presets();
  EXPECT_GE(presets.size(), 10u);
  for (const std::string& f : presets) EXPECT_TRUE(MatchesSchema(LoadPreset(f))) << f;
}

// Appends the JSON pointer of every number in `o` (and its objects) that has neither its own
// `_<key>_source` nor an object-wide `_source` beside it.
void FiguresWithoutSource(const Json& o, const std::string& at, std::vector<std::string>* missing) {
  for (const auto& [key, value] : o.items()) {
    if (key.front() == '_') continue;
    if (value.is_object()) FiguresWithoutSource(value, at + "/" + key, missing);
    if (value.is_number() && !o.contains("_" + key + "_source") && !o.contains("_source")) {
      missing->push_back(at + "/" + key);
    }
  }
}

// Issue 32: a preset lists a source for every figure, and a figure `calibrate` fitted says so
// (cmd_calibrate.cc FittedSource) rather than keeping the text of the figure it replaced.
TEST(ClusterTest, EveryFigureOfEveryPresetHasASource) {
  for (const std::string& f : Presets()) {
    std::vector<std::string> missing;
    FiguresWithoutSource(LoadPreset(f), "", &missing);
    EXPECT_TRUE(missing.empty()) << f << ": no source for " << testing::PrintToString(missing);
  }
  const Json calibrated = LoadPreset("selene-a100-80gb-calibrated.json");
  const std::string fitted = calibrated["efficiency"]["_matmul_source"].get<std::string>();
  EXPECT_EQ(fitted.rfind("fitted by ds-plan calibrate", 0), 0u) << fitted;
  EXPECT_NE(fitted.find("before the fit 0.8,"), std::string::npos) << fitted;
  const Json clocked = LoadPreset("h100-96gb-hbm2e-calibrated.json");
  EXPECT_EQ(clocked["gpu"]["_compute_clock_ratio_source"].get<std::string>().rfind("fitted by ds-plan calibrate", 0), 0u);
}

TEST(ClusterTest, EfficiencyDefaultsWhenAbsent) {
  Json doc = LoadPreset("h100-sxm.json");
  doc.erase("efficiency");
  EXPECT_TRUE(MatchesSchema(doc));
  Result<Cluster> c = ParseCluster(doc);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_DOUBLE_EQ(c->efficiency.matmul, 0.75);
  EXPECT_DOUBLE_EQ(c->efficiency.memory, 0.8);
  doc["efficiency"] = {{"matmul", 0.5}};
  ASSERT_TRUE(ParseCluster(doc).ok());
  EXPECT_DOUBLE_EQ(ParseCluster(doc)->efficiency.matmul, 0.5);
  EXPECT_DOUBLE_EQ(ParseCluster(doc)->efficiency.memory, 0.8);
}

// Host memory per node and the pageable-copy rate are optional; the pageable rate defaults to PCIe
// / 6 (DeepSpeed PR #5301's measured speed-up of pinned over pageable copies).
TEST(ClusterTest, HostMemoryAndPageableCopyRate) {
  Json doc = LoadPreset("h100-sxm.json");
  Result<Cluster> c = ParseCluster(doc);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->host_memory_bytes, 2e12);
  EXPECT_DOUBLE_EQ(c->PageableCopyBytesPerSecond(), 50e9 / 6);
  doc["pageable_copy_bytes_per_second"] = 12e9;
  doc.erase("host_memory_bytes");
  EXPECT_TRUE(MatchesSchema(doc));
  c = ParseCluster(doc);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->PageableCopyBytesPerSecond(), 12e9);
  EXPECT_EQ(c->host_memory_bytes, 0);  // not given: not checked
  doc["host_memory_bytes"] = -1;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc), "/host_memory_bytes: must be greater than 0, got -1");
}

// CPU Adam's node rate is optional (no node limit when absent) and must be positive.
TEST(ClusterTest, CpuAdamNodeRateIsOptional) {
  Json doc = LoadPreset("h100-sxm.json");
  ASSERT_TRUE(ParseCluster(doc).ok());
  EXPECT_EQ(ParseCluster(doc)->cpu_optimizer_node_params_per_second, 0);
  doc["cpu_optimizer_node_params_per_second"] = 8e8;
  EXPECT_TRUE(MatchesSchema(doc));
  ASSERT_TRUE(ParseCluster(doc).ok());
  EXPECT_DOUBLE_EQ(ParseCluster(doc)->cpu_optimizer_node_params_per_second, 8e8);
  doc["cpu_optimizer_node_params_per_second"] = 0;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_FALSE(ParseCluster(doc).ok());
  doc["cpu_optimizer_node_params_per_second"] = 10;  // positive, but no host: a unit mistake
  EXPECT_TRUE(MatchesSchema(doc));
  EXPECT_FALSE(ParseCluster(doc).ok());
}

// A figure no machine has (a unit mistake, a typo) is refused with its pointer and the range.
TEST(ClusterTest, FiguresOutsideAMachinesRangeAreErrors) {
  for (auto [pointer, value] : {std::pair{"/gpu/peak_bf16_flops_per_second", 1e-300},
                                {"/gpu/hbm_bytes", 80.0},  // GB instead of bytes
                                {"/intra_node/busbw_bytes_per_second", 1e300},
                                {"/efficiency/matmul", 1e-9},
                                {"/gpu/compute_clock_ratio", 3.0}}) {
    Json doc = LoadPreset("h100-sxm.json");
    doc[Json::json_pointer(pointer)] = value;
    const std::string error = ErrorOf(doc);
    EXPECT_EQ(error.rfind(std::string(pointer) + ": ", 0), 0u) << error;
    EXPECT_NE(error.find("outside what a machine has"), std::string::npos) << error;
  }
}

TEST(ClusterTest, NamesAreShortEnoughToShow) {
  Json doc = LoadPreset("h100-sxm.json");
  doc["gpu"]["name"] = std::string(100000, 'g');
  EXPECT_EQ(ErrorOf(doc), "/gpu/name: a name of 1 to 200 characters, got 100000");
}

TEST(ClusterTest, MissingKeyNamesThePointer) {
  Json doc = LoadPreset("h100-sxm.json");
  doc["gpu"].erase("hbm_bytes");
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc), "/gpu/hbm_bytes: required key is missing");

  doc = LoadPreset("h100-sxm.json");
  doc.erase("inter_node");
  EXPECT_EQ(ErrorOf(doc), "/inter_node: required key is missing");

  doc = LoadPreset("h100-sxm.json");
  doc["intra_node"].erase("latency_seconds");
  EXPECT_EQ(ErrorOf(doc), "/intra_node/latency_seconds: required key is missing");
}

// compute_capability came later (the bf16 check): a cluster file written without it still parses,
// as the schema says, and leaves the capability unknown (0) so no GPU check runs on a guess.
TEST(ClusterTest, ComputeCapabilityIsOptional) {
  Json doc = LoadPreset("h100-sxm.json");
  ASSERT_TRUE(doc["gpu"].contains("compute_capability"));
  doc["gpu"].erase("compute_capability");
  EXPECT_TRUE(MatchesSchema(doc));
  Result<Cluster> c = ParseCluster(doc);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->gpu.compute_capability, 0);
  EXPECT_EQ(ParseOrDie("h100-sxm.json").gpu.compute_capability, 90);
}

TEST(ClusterTest, BadTypesAndValuesNameThePointer) {
  Json doc = LoadPreset("h100-sxm.json");
  doc["gpu"]["peak_bf16_flops_per_second"] = "989e12";
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc), "/gpu/peak_bf16_flops_per_second: expected a number, got a string");

  doc = LoadPreset("h100-sxm.json");
  doc["gpus_per_node"] = 8.5;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc), "/gpus_per_node: expected an integer, got a number 8.5");

  doc = LoadPreset("h100-sxm.json");
  doc["inter_node"]["busbw_bytes_per_second"] = 0;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc), "/inter_node/busbw_bytes_per_second: must be greater than 0, got 0");

  doc = LoadPreset("h100-sxm.json");
  doc["efficiency"]["matmul"] = 75;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_NE(ErrorOf(doc).find("/efficiency/matmul: is a fraction"), std::string::npos) << ErrorOf(doc);

  doc = LoadPreset("h100-sxm.json");
  doc["intra_node"] = 370e9;
  EXPECT_EQ(ErrorOf(doc), "/intra_node: expected an object, got a number");

  EXPECT_EQ(ErrorOf(Json::array()), "/: a cluster description is a JSON object, got an array");
}

TEST(ClusterTest, UnknownKeysAreErrorsButNotesAreIgnored) {
  Json doc = LoadPreset("h100-sxm.json");
  doc["intra_node"]["busbw_bytes_per_sec"] = 1;
  EXPECT_FALSE(MatchesSchema(doc));
  EXPECT_NE(ErrorOf(doc).find("/intra_node/busbw_bytes_per_sec: unknown key, did you mean \"busbw_bytes_per_second\"?"),
            std::string::npos)
      << ErrorOf(doc);

  doc = LoadPreset("h100-sxm.json");
  doc["_comment"] = "anything";
  doc["gpu"]["_note"] = {1, 2};
  EXPECT_TRUE(MatchesSchema(doc));
  EXPECT_EQ(ErrorOf(doc), "<parsed>");
}

// Issue 36: max_rails 1e-300 gave a 63-digit step time and "FITS". A collective drives at least
// one rail; 0 (or absent) means one per GPU of the node.
TEST(ClusterTest, MaxRailsBelowOneRailIsRefused) {
  Json doc = LoadPreset("h100-sxm.json");
  for (double bad : {1e-300, 0.5, -1.0}) {
    doc["inter_node"]["max_rails"] = bad;
    EXPECT_NE(ErrorOf(doc).find("/inter_node/max_rails"), std::string::npos) << bad;
  }
  for (double good : {0.0, 1.0, 1.66, 8.0}) {
    doc["inter_node"]["max_rails"] = good;
    EXPECT_EQ(ErrorOf(doc), "<parsed>") << good;
  }
}

}  // namespace
}  // namespace dsp::sim
