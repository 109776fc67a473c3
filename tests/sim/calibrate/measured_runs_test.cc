// SPDX-License-Identifier: Apache-2.0
// The cost model against measured training runs: every row of samples/runs/published-runs.tsv
// (Korthikanti et al. 2022 Table 5, Narayanan et al. 2021 Tables 1 and 2) on the calibrated
// Selene cluster, the held-out rows it was not fitted to, the ZeRO-3 scaling the papers report,
// and memory verdicts for layouts that trained or ran out of memory.
#include "sim/calibrate/measured_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "core/util/file_io.h"
#include "sim/calibrate/calibrate.h"

namespace dsp::sim {
namespace {

std::string Source(const std::string& relative) {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(text.ok()) << relative;
  return text.ok() ? *text : std::string();
}

std::vector<MeasuredRun> Runs(const std::string& file) {
  auto runs = ParseMeasuredRuns(Source("samples/runs/" + file));
  EXPECT_TRUE(runs.ok()) << (runs.ok() ? "" : runs.error().message);
  return runs.ok() ? *runs : std::vector<MeasuredRun>{};
}

Cluster Selene() {
  const Json doc = Json::parse(Source("samples/clusters/selene-a100-80gb-calibrated.json"));
  auto c = ParseCluster(doc);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? *c : Cluster{};
}

const MeasuredRun& Named(const std::vector<MeasuredRun>& runs, const std::string& id) {
  for (const MeasuredRun& r : runs) {
    if (r.run_id == id) return r;
  }
  ADD_FAILURE() << "no run " << id;
  static const MeasuredRun kNone;
  return kNone;
}

double Predict(const MeasuredRun& run, const Cluster& c) {
  auto p = PredictRun(run, c);
  EXPECT_TRUE(p.ok()) << run.run_id << ": " << (p.ok() ? "" : p.error().message);
  return p.ok() ? p->seconds : 0;
}

TEST(MeasuredRunsTest, EveryPublishedRunIsThere) {
  const std::vector<MeasuredRun> runs = Runs("published-runs.tsv");
  ASSERT_EQ(runs.size(), 22u);
  std::set<std::string> ids;
  for (const MeasuredRun& r : runs) ids.insert(r.run_id);
  EXPECT_EQ(ids.size(), runs.size());
  // Korthikanti Table 5's eight and Narayanan's Table 1 (10) and Table 2 (4).
  int korth = 0, table1 = 0, table2 = 0;
  for (const std::string& id : ids) {
    korth += id.starts_with("korth22-");
    table1 += id.starts_with("nara21-t1-");
    table2 += id.starts_with("nara21-t2-");
  }
  EXPECT_EQ(korth, 8);
  EXPECT_EQ(table1, 10);
  EXPECT_EQ(table2, 4);
}

TEST(MeasuredRunsTest, StepTimeWithin8PercentOnAverageAnd20AtWorst) {
  const Cluster selene = Selene();
  double sum = 0, worst = 0;
  std::string worst_id;
  const std::vector<MeasuredRun> runs = Runs("published-runs.tsv");
  for (const MeasuredRun& run : runs) {
    auto p = PredictRun(run, selene);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const double e = std::fabs(p->error);
    EXPECT_LE(e, 0.20) << run.run_id << ": predicted " << p->seconds << " s, measured "
                       << run.measured_seconds << " s";
    sum += e;
    if (e > worst) {
      worst = e;
      worst_id = run.run_id;
    }
    // Every one of these runs trained on 80 GB GPUs.
    EXPECT_TRUE(p->memory.fits) << run.run_id << ": peak " << p->memory.peak_bytes;
  }
  EXPECT_LE(sum / runs.size(), 0.08) << "worst " << worst_id << " at " << worst;
}

TEST(MeasuredRunsTest, HeldOutRunsTheFitNeverSaw) {
  // Narayanan et al. 2021 Table 2's other eight rows: within 10% each. MT-NLG's production
  // throughput (Smith et al. 2022 §2.4, figures quoted second-hand) is predicted ~20% fast: the
  // DeepSpeed pipeline engine's own overheads are not modelled (docs/validation.md).
  const Cluster selene = Selene();
  for (const MeasuredRun& run : Runs("held-out-runs.tsv")) {
    const double predicted = Predict(run, selene);
    const double e = predicted / run.measured_seconds - 1;
    if (run.run_id.starts_with("nara21-")) {
      EXPECT_LE(std::fabs(e), 0.10) << run.run_id << ": " << predicted << " vs " << run.measured_seconds;
    } else {
      EXPECT_LE(std::fabs(e), 0.25) << run.run_id << ": " << predicted << " vs " << run.measured_seconds;
    }
  }
}

// Mean and worst |step-time error| of the 53 BLOOM runs on a cluster; every one of them trained,
// so every one must fit.
std::pair<double, double> BloomErrors(const Cluster& cluster) {
  const std::vector<MeasuredRun> runs = Runs("bloom-held-out-runs.tsv");
  EXPECT_EQ(runs.size(), 53u);
  double sum = 0, worst = 0;
  for (const MeasuredRun& run : runs) {
    auto p = PredictRun(run, cluster);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    if (!p.ok()) continue;
    EXPECT_TRUE(p->memory.fits) << run.run_id;
    sum += std::fabs(p->error);
    worst = std::max(worst, std::fabs(p->error));
  }
  return {sum / std::max<double>(1, static_cast<double>(runs.size())), worst};
}

TEST(MeasuredRunsTest, BloomRunsOnAnotherMachine) {
  // 53 BLOOM-176B runs (the production run, the reshaping runs and the 2022 layout sweep,
  // bigscience-workshop/bigscience) on Jean Zay with Megatron-DeepSpeed, never fitted
  // (docs/validation.md, "BLOOM on another machine"). The Jean Zay preset carries datasheet and
  // microbenchmark figures only: 19.2 % mean, 34.5 % worst, all too fast (the best GEMM shape
  // of a 2025 torch bounds the rate of a 2022 training step from above).
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/clusters/jean-zay-a100-80gb.json");
  ASSERT_TRUE(text.ok());
  Cluster jean_zay = ParseCluster(Json::parse(*text)).value();
  const auto [own_mean, own_worst] = BloomErrors(jean_zay);
  EXPECT_LE(own_mean, 0.20);
  EXPECT_LE(own_worst, 0.35);
  // Selene's fitted GPU and rail figures carried over to Jean Zay's network (an experiment, not a
  // preset: a figure fitted on one machine stays out of another's): 7.4 % mean, 25.4 % worst.
  const Cluster selene = Selene();
  jean_zay.efficiency.matmul = selene.efficiency.matmul;
  jean_zay.efficiency.memory = selene.efficiency.memory;
  jean_zay.inter_node.max_rails = selene.inter_node.max_rails;
  const auto [carried_mean, carried_worst] = BloomErrors(jean_zay);
  EXPECT_LE(carried_mean, 0.12);
  EXPECT_LE(carried_worst, 0.30);
  EXPECT_LT(carried_mean, own_mean);
}

TEST(MeasuredRunsTest, Zero3StaysFlatFrom384To1536AndLosesToPtdp) {
  // At a fixed global batch of 1536, ZeRO-3 without model parallelism measured 81.6 s on 384 GPUs
  // and 66.7 s on 1536 (a 1.22x speed-up for 4x the GPUs): the gathers move the same bytes per
  // rank at any scale, and the old releases fetch synchronously. PTD-P (TP 8 x PP 12) measured
  // 20.8 s on 1536.
  const std::vector<MeasuredRun> runs = Runs("published-runs.tsv");
  const Cluster selene = Selene();
  const MeasuredRun& z384 = Named(runs, "nara21-t2-zero3-175b-384");
  const MeasuredRun& z1536 = Named(runs, "nara21-t2-zero3-175b-1536");
  const MeasuredRun& ptdp = Named(runs, "nara21-t2-ptdp-175b-1536");
  const double measured_speedup = z384.measured_seconds / z1536.measured_seconds;
  const double predicted_speedup = Predict(z384, selene) / Predict(z1536, selene);
  EXPECT_LE(predicted_speedup, measured_speedup * 1.10);
  EXPECT_GE(predicted_speedup, measured_speedup * 0.90);
  EXPECT_LT(Predict(ptdp, selene), 0.5 * Predict(z1536, selene));
}

TEST(MeasuredRunsTest, LayoutsThatRanOutOfMemoryDoNotFit) {
  // Narayanan et al. 2021 Table 2: 530B under ZeRO-3 with micro-batch 4 did not fit on 560 GPUs
  // (they ran 640). The 640-GPU run itself fits.
  std::vector<MeasuredRun> runs = Runs("held-out-runs.tsv");
  MeasuredRun z530 = Named(runs, "nara21-t2-zero3-530b-640");
  auto fits = PredictRun(z530, Selene());
  ASSERT_TRUE(fits.ok());
  EXPECT_TRUE(fits->memory.fits);
  z530.gpus = z530.dp = 560;
  z530.global_batch = 2240;
  auto oom = PredictRun(z530, Selene());
  ASSERT_TRUE(oom.ok());
  EXPECT_FALSE(oom->memory.fits) << oom->memory.peak_bytes;

  // BLOOM's 2022 layout sweep (bigscience-workshop/bigscience chronicles-prequel.md): 176B on 384
  // A100 with TP 8 and no pipeline ran out of memory.
  MeasuredRun bloom = Named(runs, "nara21-t2-ptdp-175b-768");
  bloom.model_type = "bloom";
  bloom.hidden = 14336;
  bloom.heads = 112;
  bloom.layers = 70;
  bloom.ffn = 4 * 14336;
  bloom.vocab = 250880;
  bloom.gpus = 384;
  bloom.tp = 8;
  bloom.pp = 1;
  bloom.dp = 48;
  bloom.micro_batch = 1;
  bloom.global_batch = 48;
  bloom.dropout = 0;
  bloom.precision = "bf16";
  bloom.engine = Engine::kMegatronDeepSpeed;
  bloom.zero_stage = 1;
  auto bloom_oom = PredictRun(bloom, Selene());
  ASSERT_TRUE(bloom_oom.ok()) << bloom_oom.error().message;
  EXPECT_FALSE(bloom_oom->memory.fits);
}

TEST(MeasuredRunsTest, ValidationDocShowsTheCurrentPredictions) {
  // docs/validation.md holds `ds-plan calibrate samples/runs/published-runs.tsv --cluster
  // samples/clusters/selene-a100-80gb-calibrated.json --no-fit --format markdown` verbatim, and the
  // same for held-out-runs.tsv; this recomputes every row of both.
  const std::string doc = Source("docs/validation.md");
  const Cluster selene = Selene();
  std::vector<MeasuredRun> runs = Runs("published-runs.tsv");
  for (MeasuredRun& run : Runs("held-out-runs.tsv")) runs.push_back(std::move(run));
  for (const MeasuredRun& run : runs) {
    const double predicted = Predict(run, selene);
    char row[256];
    std::snprintf(row, sizeof row, "| %s | %.2f | %.2f | %+.1f%% |", run.run_id.c_str(),
                  run.measured_seconds, predicted, 100 * (predicted / run.measured_seconds - 1));
    EXPECT_NE(doc.find(row), std::string::npos) << row;
  }
}

TEST(MeasuredRunsTest, BadRowsNameTheLineAndColumn) {
  const std::string header =
      "run_id\tlayers\thidden\theads\tffn\tvocab\tseq_len\tgpus\ttp\tpp\tdp\tmicro_batch\t"
      "global_batch\tmeasured_iter_s\n";
  auto bad = ParseMeasuredRuns(header + "x\t2\t64\t4\t256\t100\t128\t8\t2\t2\t3\t1\t8\t1.0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("'dp'"), std::string::npos) << bad.error().message;
  auto word = ParseMeasuredRuns(header + "x\t2\t64\t4\t256\t100\t128\t8\t2\t2\t2\t1\t8\tfast\n");
  ASSERT_FALSE(word.ok());
  EXPECT_NE(word.error().message.find("measured_iter_s"), std::string::npos);
  EXPECT_FALSE(ParseMeasuredRuns("").ok());
  EXPECT_FALSE(ParseMeasuredRuns(header).ok());
  auto ok = ParseMeasuredRuns(header + "x\t2\t64\t4\t256\t100\t128\t8\t2\t2\t2\t1\t8\t1.0\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->front().engine, Engine::kMegatronLm);  // the default of the published rows
}

// Issue 36: a measured step of 1e-300 s was fitted, writing a cluster that gave 82.5 % MFU.
TEST(MeasuredRunsTest, AStepTimeNoRunHasIsRefused) {
  const std::string tsv = Source("samples/runs/published-runs.tsv");
  const std::string header = tsv.substr(0, tsv.find('\n') + 1);
  std::string row = tsv.substr(header.size(), tsv.find('\n', header.size()) - header.size() + 1);
  // measured_iter_s is the 24th column.
  std::vector<std::string> cells;
  std::stringstream in(row.substr(0, row.size() - 1));
  for (std::string c; std::getline(in, c, '\t');) cells.push_back(c);
  ASSERT_GT(cells.size(), 24u);
  for (const char* bad : {"1e-300", "0.0001", "1e9"}) {
    cells[23] = bad;
    std::string edited;
    for (size_t i = 0; i < cells.size(); ++i) edited += (i ? "\t" : "") + cells[i];
    auto runs = ParseMeasuredRuns(header + edited + "\n");
    ASSERT_FALSE(runs.ok()) << bad;
    EXPECT_NE(runs.error().message.find("measured_iter_s"), std::string::npos) << runs.error().message;
  }
}

}  // namespace
}  // namespace dsp::sim
