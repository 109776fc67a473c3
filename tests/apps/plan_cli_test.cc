// SPDX-License-Identifier: Apache-2.0
// ds-plan plan and check from the command line: the snapshot's schema and determinism, check on an
// unchanged plan, the diffs a changed tp, ZeRO stage or batch size produce, the tolerance, and
// every usage error. Each test works on copies of a sample in its own temporary directory.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "sim/plan/snapshot.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;
using testing::SchemaErrors;
using testing::ShellQuote;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Spit(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// A path as plan records it: relative to the directory the CLI runs in (the source directory).
std::string Relative(const fs::path& p) { return p.lexically_relative(fs::path(DSP_SOURCE_DIR)).generic_string(); }

// Replaces the one occurrence of `from`; fails the test when it is not there exactly once.
void Edit(const fs::path& p, const std::string& from, const std::string& to) {
  std::string text = Slurp(p);
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << p;
  ASSERT_EQ(text.find(from, at + 1), std::string::npos) << from << " twice in " << p;
  Spit(p, text.replace(at, from.size(), to));
}

class PlanCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // Inside the working tree: check reads only files inside the directory it runs in (the
    // source directory here), and build/ is ignored by git.
    dir_ = fs::path(DSP_SOURCE_DIR) / "build" / "test-tmp" / ("plan-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_ = dir_ / "ds_config.json";
    fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/configs/folding-tp2-ep4.json", config_);
    plan_ = dir_ / "plan.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string PlanArgs(const fs::path& out) const {
    return "plan " + ShellQuote(config_.string()) +
           " --model samples/models/mixtral-8x7b.json --cluster samples/clusters/h100-sxm.json"
           " --nodes 2 --gpus-per-node 4 -o " + ShellQuote(out.string());
  }
  void WritePlan() {
    auto r = RunCli(PlanArgs(plan_));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  testing::CliResult Check(const std::string& flags = "") const {
    return RunCli("check " + ShellQuote(plan_.string()) + flags);
  }

  fs::path dir_, config_, plan_;
};

TEST_F(PlanCheckTest, SnapshotMatchesItsSchemaAndRecordsItsInputs) {
  WritePlan();
  Json doc = Json::parse(Slurp(plan_));
  EXPECT_EQ(SchemaErrors(schemas::k_plan_schema_json, doc), "") << doc.dump(2);
  // Recorded relative to the directory plan ran in, the one check will run in.
  EXPECT_EQ(doc["inputs"]["config"]["path"], Relative(config_));
  EXPECT_EQ(doc["inputs"]["config"]["content"]["tensor_parallel"]["autotp_size"], 2);
  EXPECT_EQ(doc["inputs"]["nodes"], 2);
  EXPECT_TRUE(doc["inputs"]["world_size"].is_null());
  EXPECT_EQ(doc["layout"]["tp"], 2);
  EXPECT_EQ(doc["layout"]["edp"], 2);
  // The same tables `ds-plan groups` prints for this layout.
  EXPECT_EQ(doc["groups"]["tables"]["tp"], Json::parse("[[0,1],[2,3],[4,5],[6,7]]"));
  EXPECT_EQ(doc["groups"]["tables"]["edp"], Json::parse("[[0,4],[1,5],[2,6],[3,7]]"));
  auto groups = RunCli("groups " + ShellQuote(config_.string()) + " --nodes 2 --gpus-per-node 4 --format json", false);
  ASSERT_EQ(groups.exit_code, 0) << groups.output;
  EXPECT_EQ(doc["groups"]["tables"], Json::parse(groups.output)["groups"]);
  EXPECT_GT(doc["memory"]["peak_bytes"].get<double>(), 0);
  EXPECT_GT(doc["collectives"]["all_to_all"]["ep"]["bytes_per_step"].get<double>(), 0);
}

TEST_F(PlanCheckTest, SameInputsGiveTheSameBytes) {
  WritePlan();
  auto again = RunCli(PlanArgs(dir_ / "again.json"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(Slurp(plan_), Slurp(dir_ / "again.json"));
  // -o - prints the same snapshot.
  auto stdout_only = RunCli(PlanArgs("-"), false);
  EXPECT_EQ(stdout_only.output, Slurp(plan_));
}

TEST_F(PlanCheckTest, UnchangedPlanPasses) {
  WritePlan();
  auto r = Check();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ok, the plan recomputed from its inputs matches (tolerance 1%)"), std::string::npos)
      << r.output;
  auto j = RunCli("check " + ShellQuote(plan_.string()) + " --format json", false);
  ASSERT_EQ(j.exit_code, 0) << j.output;
  Json report = Json::parse(j.output);
  EXPECT_EQ(SchemaErrors(schemas::k_plan_check_report_schema_json, report), "") << report.dump(2);
  EXPECT_TRUE(report["ok"].get<bool>());
  EXPECT_TRUE(report["differences"].empty());
}

TEST_F(PlanCheckTest, ChangedTensorParallelSizeFailsWithGroupDiff) {
  WritePlan();
  Edit(config_, "\"autotp_size\": 2", "\"autotp_size\": 4");
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/tensor_parallel/autotp_size: 2 -> 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tp: 4 groups of 2 -> 2 groups of 4; first difference: group 0 [0,1] -> [0-3]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("layout.tp: 2 -> 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory.peak_bytes: "), std::string::npos) << r.output;

  auto j = RunCli("check " + ShellQuote(plan_.string()) + " --format json", false);
  EXPECT_EQ(j.exit_code, 1);
  Json report = Json::parse(j.output);
  EXPECT_EQ(SchemaErrors(schemas::k_plan_check_report_schema_json, report), "") << report.dump(2);
  EXPECT_FALSE(report["ok"].get<bool>());
  ASSERT_EQ(report["changed_inputs"].size(), 1u);
  EXPECT_EQ(report["changed_inputs"][0]["input"], "config");
}

TEST_F(PlanCheckTest, ChangedZeroStageFails) {
  WritePlan();
  Edit(config_, "\"stage\": 1", "\"stage\": 2");
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/zero_optimization/stage: 1 -> 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("layout.zero_stage: 1 -> 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory.gradients_bytes: "), std::string::npos) << r.output;
  // ZeRO does not move ranks between groups.
  EXPECT_EQ(r.output.find("group tables:"), std::string::npos) << r.output;
}

TEST_F(PlanCheckTest, ChangedBatchSizeFails) {
  WritePlan();
  Edit(config_, "\"train_batch_size\": 64", "\"train_batch_size\": 128");
  Edit(config_, "\"gradient_accumulation_steps\": 4", "\"gradient_accumulation_steps\": 8");
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/train_batch_size: 64 -> 128"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resolved.grad_accum: 4 -> 8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resolved.samples_per_step: 32 -> 64"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("time.step_seconds: "), std::string::npos) << r.output;
}

TEST_F(PlanCheckTest, ConfigEditThatKeepsThePlanIsANote) {
  WritePlan();
  // Reformatting (and a key the plan does not read) changes the hash, not the plan.
  Edit(config_, "\"gradient_clipping\": 1.0", "\"gradient_clipping\":   0.5");
  auto r = Check();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("inputs changed since the snapshot (notes):"), std::string::npos) << r.output;
  // Values as DeepSpeed reads the file: hjson makes the whole 1.0 the integer 1.
  EXPECT_NE(r.output.find("/gradient_clipping: 1 -> 0.5"), std::string::npos) << r.output;
}

TEST_F(PlanCheckTest, ChangedClusterFileAndVersionAreNotes) {
  const fs::path cluster = dir_ / "cluster.json";
  fs::copy_file(fs::path(DSP_SOURCE_DIR) / "samples/clusters/h100-sxm.json", cluster);
  auto r = RunCli("plan " + ShellQuote(config_.string()) + " --model samples/models/mixtral-8x7b.json --cluster " +
                  ShellQuote(cluster.string()) + " --world-size 8 -o " + ShellQuote(plan_.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Spit(cluster, Slurp(cluster) + "\n");  // same cluster, different bytes
  Json doc = Json::parse(Slurp(plan_));
  doc["ds_plan_version"] = "0.0.1";
  Spit(plan_, doc.dump(2));
  auto c = Check();
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("  cluster " + Relative(cluster) + ": sha256 "), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("ds-plan 0.0.1 wrote the snapshot, this is "), std::string::npos) << c.output;
}

// Scales one recorded float of the snapshot, as if the cost model had moved it.
void ScaleRecorded(const fs::path& plan, const std::string& pointer, double factor) {
  Json doc = Json::parse(Slurp(plan));
  Json::json_pointer p(pointer);
  doc[p] = doc[p].get<double>() * factor;
  Spit(plan, doc.dump(2) + "\n");
}

TEST_F(PlanCheckTest, ToleranceDecides) {
  WritePlan();
  ScaleRecorded(plan_, "/time/step_seconds", 1.005);  // today's value is 0.5% lower
  auto within = Check();
  EXPECT_EQ(within.exit_code, 0) << within.output;
  EXPECT_NE(within.output.find("within tolerance:\n  time.step_seconds: "), std::string::npos) << within.output;
  EXPECT_NE(within.output.find("(-0.50%)"), std::string::npos) << within.output;

  auto strict = Check(" --tolerance 0.25");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_NE(strict.output.find("values:\n  time.step_seconds: "), std::string::npos) << strict.output;

  ScaleRecorded(plan_, "/memory/peak_bytes", 1.05);  // 5%: beyond the default 1%
  auto beyond = Check();
  EXPECT_EQ(beyond.exit_code, 1) << beyond.output;
  EXPECT_NE(beyond.output.find("memory.peak_bytes: "), std::string::npos) << beyond.output;
  EXPECT_EQ(Check(" --tolerance 10").exit_code, 0);
}

TEST_F(PlanCheckTest, ConfigThatNoLongerValidatesFails) {
  WritePlan();
  Edit(config_, "\"autoep_size\": 4", "\"autoep_size\": 3");
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the recorded inputs no longer give a plan"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/expert_parallel/autoep_size: 4 -> 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[ep-fold-width-divides-stage]"), std::string::npos) << r.output;  // validate's error

  auto j = RunCli("check " + ShellQuote(plan_.string()) + " --format json", false);
  EXPECT_EQ(j.exit_code, 1);
  Json report = Json::parse(j.output);
  EXPECT_EQ(SchemaErrors(schemas::k_plan_check_report_schema_json, report), "") << report.dump(2);
  EXPECT_FALSE(report["ok"].get<bool>());
  EXPECT_FALSE(report["recomputed"].get<bool>());
}

TEST_F(PlanCheckTest, PlanRefusesToOverwriteWithoutForce) {
  Spit(plan_, "mine\n");
  auto r = RunCli(PlanArgs(plan_));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("exists: pass --force to replace it"), std::string::npos) << r.output;
  EXPECT_EQ(Slurp(plan_), "mine\n");
  auto forced = RunCli(PlanArgs(plan_) + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_EQ(Check().exit_code, 0);
}

TEST_F(PlanCheckTest, PlanUsageErrors) {
  const std::string out = " -o " + ShellQuote((dir_ / "x.json").string());
  EXPECT_EQ(RunCli("plan " + ShellQuote(config_.string()) +
                   " --model samples/models/mixtral-8x7b.json --cluster samples/clusters/h100-sxm.json")
                .exit_code,
            2);  // no -o
  EXPECT_EQ(RunCli("plan - --model samples/models/mixtral-8x7b.json --cluster samples/clusters/h100-sxm.json" + out)
                .exit_code,
            2);  // standard input cannot be re-read by check
  EXPECT_EQ(RunCli("plan does/not/exist.json --model samples/models/mixtral-8x7b.json "
                   "--cluster samples/clusters/h100-sxm.json" + out)
                .exit_code,
            2);
  // A config with errors is a finding (exit 1), and nothing is written.
  EXPECT_EQ(RunCli("plan samples/configs/invalid/batch-mismatch.json --model samples/models/llama-3-8b.json "
                   "--cluster samples/clusters/h100-sxm.json --world-size 8" + out)
                .exit_code,
            1);
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
}

// check reads only files inside the directory it runs in: a snapshot that records an absolute
// path, a ".." or a symlink out of it is refused before anything is read or printed (issue 16:
// a pull request could make CI print any file the runner can read).
TEST_F(PlanCheckTest, RecordedPathsMustStayInsideTheWorkingDirectory) {
  WritePlan();
  const Json good = Json::parse(Slurp(plan_));
  fs::create_symlink("/etc", dir_ / "outside");
  for (const std::string& path : {std::string("/etc/passwd"), std::string("../../etc/passwd"),
                                  Relative(dir_ / "outside" / "passwd")}) {
    Json doc = good;
    doc["inputs"]["config"]["path"] = path;
    Spit(plan_, doc.dump(2));
    auto c = Check();
    EXPECT_EQ(c.exit_code, 2) << path << "\n" << c.output;
    EXPECT_NE(c.output.find("check reads only files inside the directory it runs in"), std::string::npos)
        << c.output;
    EXPECT_EQ(c.output.find("root:"), std::string::npos) << c.output;  // nothing of the file is shown
  }
  // Recorded flags get the command line's ranges.
  Json doc = good;
  doc["inputs"]["world_size"] = int64_t{1} << 31;
  Spit(plan_, doc.dump(2));
  auto huge = Check();
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_NE(huge.output.find("/inputs/world_size must be between 1 and 1048576"), std::string::npos) << huge.output;
  // plan says when it records a path check would refuse.
  const fs::path elsewhere = fs::temp_directory_path() / ("ds-plan-outside-" + std::to_string(getpid()) + ".json");
  fs::copy_file(config_, elsewhere, fs::copy_options::overwrite_existing);
  auto outside = RunCli("plan " + ShellQuote(elsewhere.string()) +
                        " --model samples/models/mixtral-8x7b.json --cluster samples/clusters/h100-sxm.json"
                        " --nodes 2 --gpus-per-node 4 -o " + ShellQuote((dir_ / "outside.plan.json").string()));
  EXPECT_EQ(outside.exit_code, 0) << outside.output;
  EXPECT_NE(outside.output.find("is outside the working directory"), std::string::npos) << outside.output;
  fs::remove(elsewhere);
}

TEST_F(PlanCheckTest, CheckUsageErrors) {
  EXPECT_EQ(RunCli("check " + ShellQuote((dir_ / "missing.json").string())).exit_code, 2);
  Spit(dir_ / "garbage.json", "not json");
  EXPECT_EQ(RunCli("check " + ShellQuote((dir_ / "garbage.json").string())).exit_code, 2);
  Spit(dir_ / "no-version.json", "{\"inputs\": {}}");
  EXPECT_EQ(RunCli("check " + ShellQuote((dir_ / "no-version.json").string())).exit_code, 2);
  Spit(dir_ / "future.json", "{\"schema_version\": 99}");
  auto future = RunCli("check " + ShellQuote((dir_ / "future.json").string()));
  EXPECT_EQ(future.exit_code, 2);
  EXPECT_NE(future.output.find("schema_version 99 is not supported"), std::string::npos) << future.output;
  // Found by the fuzz regression under ASan: 20,000-deep nesting overflowed the stack when the
  // tree was copied; the bounded parser refuses it (exit 2, not a signal).
  Spit(dir_ / "deep.json", "{\"schema_version\": 1, \"x\": " + std::string(20000, '[') + std::string(20000, ']') + "}");
  auto deep = RunCli("check " + ShellQuote((dir_ / "deep.json").string()));
  EXPECT_EQ(deep.exit_code, 2) << deep.output.substr(0, 500);
  EXPECT_NE(deep.output.find("not a plan snapshot"), std::string::npos) << deep.output.substr(0, 500);

  WritePlan();
  EXPECT_EQ(Check(" --tolerance -1").exit_code, 2);
  EXPECT_EQ(Check(" --format xml").exit_code, 2);
  // A recorded input that is gone is an IO error, not a finding.
  fs::remove(config_);
  auto gone = Check();
  EXPECT_EQ(gone.exit_code, 2) << gone.output;
  EXPECT_NE(gone.output.find("recorded config"), std::string::npos) << gone.output;
}

// A snapshot records every flag that moves a number: the README's Megatron-LM simulate example
// (engine, Megatron tp, materialized attention) planned and checked with unchanged inputs passes,
// and the recorded engine flags are what check replays (issue 36: it failed with 37 differences).
TEST_F(PlanCheckTest, EngineFlagsAreRecordedAndReplayed) {
  const std::string megatron =
      "plan samples/configs/gpt3-ptdp.json --model samples/models/gpt3-175b-megatron.json --cluster "
      "samples/clusters/a100-80gb.json --world-size 1536 --pp 12 --engine megatron-lm --tp 8 --megatron-sp "
      "--virtual-stages 2 --recompute full --attention materialized --seq-len 2048 --deepspeed-version 0.18 -o " +
      ShellQuote(plan_.string());
  auto r = RunCli(megatron);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json snapshot = Json::parse(Slurp(plan_));
  EXPECT_EQ(SchemaErrors(schemas::k_plan_schema_json, snapshot), "");
  const Json& in = snapshot["inputs"];
  EXPECT_EQ(in["engine"], "megatron-lm");
  EXPECT_EQ(in["tp"], 8);
  EXPECT_EQ(in["megatron_sp"], true);
  EXPECT_EQ(in["virtual_stages"], 2);
  EXPECT_EQ(in["attention"], "materialized");
  EXPECT_EQ(in["deepspeed_version"], "0.18");
  auto c = Check();
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("ok, the plan recomputed from its inputs matches"), std::string::npos) << c.output;
  // A snapshot written before the engine flags were recorded replays the defaults it ran with.
  Json old = snapshot;
  for (const char* key : {"engine", "tp", "megatron_sp", "virtual_stages", "attention", "attn_impl", "deepspeed_version"}) {
    old["inputs"].erase(key);
  }
  auto inputs = sim::ReadSnapshotInputs(old);
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  EXPECT_EQ(inputs->engine, "deepspeed");
  EXPECT_EQ(inputs->megatron_tp, 0);
  EXPECT_EQ(inputs->attention, "flash");
}

// Issue 36 item 7: check reads only regular files, shows only a DeepSpeed config's keys and
// values, and escapes what it prints.
TEST_F(PlanCheckTest, CheckShowsNothingOfAFileThatIsNotAConfig) {
  WritePlan();
  const fs::path creds = dir_ / "creds.yml";
  Spit(creds, "token: s3cr3t-value\n");
  Json snapshot = Json::parse(Slurp(plan_));
  snapshot["inputs"]["config"]["path"] = Relative(creds);
  Spit(plan_, snapshot.dump(2));
  auto r = Check();
  EXPECT_EQ(r.output.find("s3cr3t"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("config " + Relative(creds) + ": sha256"), std::string::npos) << r.output;

  // A FIFO would block the read for ever: refused at once.
  const fs::path fifo = dir_ / "config.fifo";
  ASSERT_EQ(std::system(("mkfifo " + ShellQuote(fifo.string())).c_str()), 0);
  snapshot["inputs"]["config"]["path"] = Relative(fifo);
  Spit(plan_, snapshot.dump(2));
  auto f = Check();
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_NE(f.output.find("is not a regular file"), std::string::npos) << f.output;

  // A key with a terminal escape in it is printed escaped.
  snapshot["inputs"]["config"]["path"] = Relative(config_);
  Spit(plan_, snapshot.dump(2));
  Json config = Json::parse(Slurp(config_));
  config["\x1b]0;owned\x07"] = 1;
  Spit(config_, config.dump(2));
  auto e = Check();
  EXPECT_EQ(e.output.find('\x1b'), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("\\x1b]0;owned\\x07"), std::string::npos) << e.output;
}

}  // namespace
}  // namespace dsp
