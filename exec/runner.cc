// SPDX-License-Identifier: Apache-2.0
// RunPlan: join the run, check every rank holds the same plan, build every process group of the
// plan's tables, then train the tiny model sharded and unsharded side by side and compare.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/plan/pipe_schedule.h"
#include "exec/bench.h"
#include "exec/checkpoint/run_checkpoint.h"
#include "exec/comm/comm.h"
#include "exec/launch/env.h"
#include "exec/launch/rendezvous.h"
#include "exec/model/collective_functions.h"
#include "exec/model/tiny_model.h"
#include "exec/optim/data_parallel.h"
#include "exec/optim/zero3.h"
#include "exec/run.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

namespace dsp::exec {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string ModeName(const Plan& plan) {
  std::string out = "dp" + std::to_string(plan.derived.dp);
  if (plan.sizes.tp > 1) out += " x tp" + std::to_string(plan.sizes.tp);
  if (plan.sizes.sp > 1) out += " x sp" + std::to_string(plan.sizes.sp);
  if (plan.sizes.pp > 1) out += " x pp" + std::to_string(plan.sizes.pp);
  if (plan.sizes.expert_parallel) {
    out += std::string(plan.sizes.tp > 1 ? ", folded" : ",") + " ep" + std::to_string(plan.sizes.ep) + " (edp" +
           std::to_string(plan.derived.edp) + ")";
  }
  out += ", zero-" + std::to_string(plan.zero_stage);
  return out;
}

// What the executor can run today; everything else is refused up front with the reason.
Status CheckSupported(const RunOptions& o) {
  const Plan& plan = o.plan;
  if (plan.sizes.pp > 1) {
    if (plan.sizes.sp > 1 || plan.sizes.expert_parallel) {
      // The layouts tune searches: with pp > 1 it plans tp and dp only (sim/tune/tune.cc), as DeepSpeed's
      // PipelineModule topology (runtime/pipe/topology.py) has pipe, data and model axes only.
      return Error{"pipeline stages run with data and tensor parallelism in ds-plan run (the layouts tune plans with "
                   "pp > 1), not with Ulysses sp or AutoEP"};
    }
    if (o.tiny.layers % plan.sizes.pp != 0) return Error{"the tiny model's layers do not split over the pipeline stages"};
  }
  if (o.fault == Fault::kPpStaleActivation && (plan.sizes.pp <= 1 || o.grad_accum < 2)) {
    return Error{"--inject pp-stale-activation makes a stage reuse the previous micro-batch's activation: it needs "
                 "--pp 2 or more and gradient_accumulation_steps 2 or more"};
  }
  const bool folded = plan.sizes.expert_parallel && plan.sizes.tp > 1;
  // validate rejects folding with ZeRO-3 (ep-fold-zero3) before this point.
  if (plan.zero_stage == 3 && folded) return Error{"AutoEP+AutoTP folding with ZeRO stage 3 is not run"};
  if (o.fault == Fault::kSkipTpShardOnSave && (o.save_dir.empty() || plan.sizes.tp <= 1)) {
    return Error{"--inject skip-tp-shard-on-save drops the tensor-parallel shards from a checkpoint: it needs --save "
                 "and tensor_parallel.autotp_size > 1"};
  }
  if (o.fault == Fault::kExpertGradsOverDp && (plan.zero_stage != 3 || !plan.sizes.expert_parallel)) {
    return Error{"--inject expert-grads-over-dp breaks ZeRO-3's expert partitioning: it needs a config with "
                 "zero_optimization.stage 3 and expert_parallel enabled"};
  }
  if (folded && plan.groups.expert_layout != ExpertLayout::kFolding) {
    return Error{"AutoEP with autotp_size > 1 runs only with DeepSpeed's folding layout in ds-plan run"};
  }
  if ((o.fault == Fault::kSkipTpCancel || o.fault == Fault::kSumRouterGrads || o.fault == Fault::kWrongEpGroup) &&
      !folded) {
    return Error{"--inject " + FaultName(o.fault) + " breaks the folded TP x EP gradient contract: it needs a config "
                 "with expert_parallel enabled and tensor_parallel.autotp_size > 1"};
  }
  if (o.dtype == Dtype::kBf16 && o.backend == Backend::kNccl) {
    return Error{"--dtype bf16 runs on the gloo backend only: the NCCL communicator stages fp32 buffers "
                 "(exec/comm/nccl_comm.cc); use --backend gloo"};
  }
  if (plan.sizes.etp > 1) return Error{"expert tensor parallelism (etp > 1) is not implemented in ds-plan run"};
  if (o.fault == Fault::kNoCopyAllreduce && plan.sizes.tp <= 1) {
    return Error{"--inject no-copy-allreduce needs tensor parallelism (tensor_parallel.autotp_size > 1)"};
  }
  return Status::Ok();
}

int PositionOf(const std::vector<int>& group, int rank) {
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == rank) return static_cast<int>(i);
  }
  return -1;
}

// The EP group DeepSpeed's non-folded tp-mode path (B) gives `rank`, in creation order: chunks of
// the TP-lane-major order [lane 0 of every TP group, lane 1, ...] (deepspeed/utils/groups.py _create_expert_data_and_model_parallel).
std::vector<int> LaneMajorEpGroup(const Plan& plan, int rank) {
  const int tp = plan.sizes.tp, ep = plan.sizes.ep, stage = plan.derived.stage, start = rank / stage * stage;
  std::vector<int> order;
  for (int lane = 0; lane < tp; ++lane) {
    for (int g = 0; g < stage / tp; ++g) order.push_back(start + g * tp + lane);
  }
  for (size_t i = 0; i < order.size(); i += ep) {
    std::vector<int> chunk(order.begin() + i, order.begin() + i + ep);
    if (std::find(chunk.begin(), chunk.end(), rank) != chunk.end()) return chunk;
  }
  return {};
}

// Folding's partition-dispatch needs the folded EP groups exactly (consecutive ranks, member order
// = EP rank). Like DeepSpeed's "Cached expert-parallel group ... does not match folding spec", a
// different group is refused before any token moves, naming the family it would corrupt.
Status VerifyFoldedEpGroup(const Plan& plan, int rank, const std::vector<int>& used, const std::string& source) {
  const int ep = plan.sizes.ep, first = rank / ep * ep;
  std::vector<int> spec;
  for (int j = 0; j < ep; ++j) spec.push_back(first + j);
  if (used == spec) return Status::Ok();
  auto list = [](const std::vector<int>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  return Error{"rank " + std::to_string(rank) + ": routed_experts: the EP group " + list(used) + " (" + source +
               ") does not match the folding spec's EP group " + list(spec) +
               ": partition-dispatch would send tp peers' assignments to the wrong expert owners"};
}

struct Groups {
  std::map<GroupKind, std::unique_ptr<Comm>> mine;  // the group of each kind containing this rank
  std::unique_ptr<Comm> world;
  std::unique_ptr<Comm> pipe_prev, pipe_next;  // PipeLinks
  Comm* get(GroupKind k) const {
    auto it = mine.find(k);
    return it == mine.end() ? nullptr : it->second.get();
  }
};

// Every rank walks the tables in the same order and joins the groups it belongs to, so two ranks
// that share several groups create them in the same order (ProcessGroupGloo's constructor is a
// collective over the group's members).
Result<Groups> BuildGroups(const RunOptions& o, const CommContext& ctx) {
  Groups g;
  auto make = [&](const std::string& name, const std::vector<int>& ranks) {
    // NCCL also for groups of one, so a single-GPU check still initialises real communicators.
    return o.backend == Backend::kNccl ? MakeNcclComm(ctx, name, ranks) : MakeGlooComm(ctx, name, ranks);
  };
  for (const auto& [kind, groups] : o.plan.groups.groups) {
    for (const auto& ranks : groups) {
      if (PositionOf(ranks, ctx.global_rank) < 0) continue;
      auto c = make(GroupName(std::string(GroupKindName(kind)), ranks), ranks);
      if (!c.ok()) return c.error();
      g.mine[kind] = std::move(c).value();
    }
  }
  // The parity statistics are gathered over all ranks; always Gloo (a few floats per step).
  std::vector<int> all(o.plan.groups.world);
  for (int r = 0; r < o.plan.groups.world; ++r) all[r] = r;
  // Pipeline links: every pair of neighbouring stages, in table order (a collective over the pair).
  for (const auto& stages : o.plan.groups.groups.count(GroupKind::kPp) ? o.plan.groups.groups.at(GroupKind::kPp)
                                                                       : std::vector<std::vector<int>>{}) {
    for (size_t s = 0; s + 1 < stages.size(); ++s) {
      const std::vector<int> pair{stages[s], stages[s + 1]};
      if (PositionOf(pair, ctx.global_rank) < 0) continue;
      auto c = make(GroupName("pp_p2p", pair), pair);
      if (!c.ok()) return c.error();
      (pair[0] == ctx.global_rank ? g.pipe_next : g.pipe_prev) = std::move(c).value();
    }
  }
  auto w = MakeGlooComm(ctx, GroupName("world", all), all);
  if (!w.ok()) return w.error();
  g.world = std::move(w).value();
  return g;
}


// The point-to-point links of this rank's pipeline stage: two-rank groups [stage - 1, stage] and
// [stage, stage + 1] of its pp group (DeepSpeed's PipelineParallelGrid.p2p_groups, over which
// runtime/pipe/p2p.py sends as broadcasts where send/recv is unavailable). Group rank 0 is the
// lower stage. Null at the pipeline's ends.
struct PipeLinks {
  Comm* prev = nullptr;
  Comm* next = nullptr;
};

// One step through the pipeline: this stage executes DeepSpeed's TrainSchedule instruction stream
// (core/plan/pipe_schedule.h, runtime/pipe/engine.py _exec_schedule) over `micro_steps`
// micro-batches. Activations travel to the next stage and input gradients back, each as a
// blocking broadcast over the pair's link; the schedule's steps pair neighbours in one order, so
// no rank waits on a transfer its peer has not reached. ReduceGrads and OptimizerStep are left
// to the caller's optimizer, which runs them once the stream is done. Returns the summed
// micro-batch losses on the last stage, 0 elsewhere.
// `stale`: the pp-stale-activation fault, the last stage running each micro-batch on the
// activation it received for the previous one.
at::Tensor PipelineStep(TinyModel& model, const ShardComms& comms, const PipeLinks& links, int64_t stages,
                        int64_t stage, const at::Tensor& inputs, const at::Tensor& targets, int64_t replica,
                        int64_t dp, int64_t micro, int64_t micro_steps, bool stale) {
  const int64_t seq = inputs.size(1);
  const double denominator = static_cast<double>(micro * micro_steps * seq);
  auto slice = [&](const at::Tensor& t, int64_t j) { return t.narrow(0, (j * dp + replica) * micro, micro); };
  const at::TensorOptions act_options = at::TensorOptions().dtype(model.dtype());
  at::Tensor loss = at::zeros({}, at::kFloat);
  // Per micro-batch in flight: the received activation (a leaf whose gradient goes back), the
  // stage's output (the loss on the last stage), the output's gradient from the next stage.
  std::map<int64_t, at::Tensor> received, outputs, output_grads;
  at::Tensor previous;
  for (const auto& cmds : TrainSchedule(micro_steps, stages, stage)) {
    for (const PipeInstruction& c : cmds) {
      const int64_t m = c.micro_batch;
      switch (c.op) {
        case PipeOp::kRecvActivation: {
          at::Tensor act = at::zeros({micro, seq, model.hidden()}, act_options);
          ThrowIfError(links.prev->Broadcast(act, 0));
          at::Tensor used = stale && model.last_stage() && previous.defined() ? previous : act;
          previous = act;
          received[m] = used.detach().clone().requires_grad_(true);
          break;
        }
        case PipeOp::kForwardPass: {
          at::Tensor in = model.first_stage() ? slice(inputs, m) : received.at(m);
          at::Tensor out = model.StageForward(in, model.last_stage() ? slice(targets, m) : at::Tensor(),
                                              denominator, comms);
          if (model.last_stage()) loss += out.detach().to(at::kFloat);
          outputs[m] = out;
          break;
        }
        case PipeOp::kSendActivation: {
          at::Tensor send = outputs.at(m).detach().contiguous().clone();
          ThrowIfError(links.next->Broadcast(send, 0));
          break;
        }
        case PipeOp::kRecvGrad: {
          at::Tensor g = at::zeros_like(outputs.at(m).detach());
          ThrowIfError(links.next->Broadcast(g, 1));
          output_grads[m] = g;
          break;
        }
        case PipeOp::kBackwardPass: {
          if (model.last_stage()) {
            outputs.at(m).backward();
          } else {
            outputs.at(m).backward(output_grads.at(m));
            output_grads.erase(m);
          }
          outputs.erase(m);
          break;
        }
        case PipeOp::kSendGrad: {
          at::Tensor g = received.at(m).grad().contiguous().clone();
          ThrowIfError(links.prev->Broadcast(g, 1));
          received.erase(m);
          break;
        }
        case PipeOp::kLoadMicroBatch:   // the slices above are the loaded micro-batch
        case PipeOp::kReduceTiedGrads:  // no tied weights in the tiny decoder
        case PipeOp::kReduceGrads:      // the caller's optimizer step
        case PipeOp::kOptimizerStep:
          break;
      }
    }
  }
  return loss;
}

// One model of the run (the main one or a companion) and everything it owns.
struct Lane {
  TinyConfig tiny;
  std::unique_ptr<TinyModel> model;
  std::unique_ptr<Zero3Partitions> zero3;
  std::optional<DataParallelSgd> sgd;
  std::vector<ParamFamily> present;
  ModelParity parity;
};

Result<RunReport> RunJoined(const RunOptions& o, const LaunchEnv* env, Rendezvous& rv, Clock::time_point t0,
                            std::chrono::milliseconds timeout) {
  RunReport report;
  report.world_size = env->world_size;
  report.backend = o.backend == Backend::kNccl ? "nccl" : "gloo";
  report.fault = FaultName(o.fault);
  report.mode = ModeName(o.plan);
  report.tp = o.plan.sizes.tp;
  report.sp = o.plan.sizes.sp;
  report.ep = o.plan.sizes.expert_parallel ? o.plan.sizes.ep : 1;
  report.pp = o.plan.sizes.pp;
  report.micro_batches = o.micro_batches();
  if (report.pp > 1) {
    for (int64_t stage = 0; stage < report.pp; ++stage) {
      const auto stream = TrainSchedule(report.micro_batches, report.pp, stage);
      report.schedule_steps = static_cast<int64_t>(stream.size());
      for (const auto& cmds : stream) {
        for (const PipeInstruction& c : cmds) {
          report.pipe_transfers += c.op == PipeOp::kSendActivation || c.op == PipeOp::kSendGrad;
        }
      }
    }
  }
  report.dp = o.plan.derived.dp;
  report.zero_stage = o.plan.zero_stage;
  report.main.model_label = o.model_label;
  report.main.tiny = o.tiny;
  report.steps = o.steps;
  report.seed = o.seed;
  report.tolerances = o.tolerances;
  report.dtype = DtypeName(o.dtype);
  report.comm_dtype = o.dtype == Dtype::kFp32 ? "fp32" : GlooBf16Support();
  report.recompute = !o.recompute ? "none" : o.cpu_checkpointing ? "full, cpu_checkpointing" : "full";
  report.plan_hash = HashHex(PlanHash(o.fingerprint));
  if (auto s = rv.CheckSamePlan(report.plan_hash, PlanFields(o.fingerprint));
      !s.ok()) {
    return s.error();
  }

  CommContext ctx;
  ctx.store = rv.store();
  ctx.global_rank = env->rank;
  ctx.local_rank = env->local_rank;
  ctx.timeout = timeout;
  ctx.diagnose = [&rv](const std::vector<int>& ranks) { return rv.Diagnose(ranks); };
  const int rank = env->rank;
  if (o.plan.sizes.expert_parallel && o.plan.sizes.tp > 1) {
    std::vector<int> used;
    std::string source = "the plan's folding table";
    if (o.fault == Fault::kWrongEpGroup) {
      used = LaneMajorEpGroup(o.plan, rank);
      source = "the non-folded lane-major layout, injected";
    } else {
      for (const auto& g : o.plan.groups.groups.at(GroupKind::kEp)) {
        if (PositionOf(g, rank) >= 0) used = g;
      }
    }
    if (auto s = VerifyFoldedEpGroup(o.plan, rank, used, source); !s.ok()) return s.error();
  }
  auto groups = BuildGroups(o, ctx);
  if (!groups.ok()) return groups.error();
  auto position = [&](GroupKind k) { return PositionInGroup(o.plan, k, rank); };
  ShardLayout layout;
  layout.tp = o.plan.sizes.tp;
  layout.tp_rank = position(GroupKind::kTp);
  layout.ep = o.plan.sizes.expert_parallel ? o.plan.sizes.ep : 1;
  layout.ep_rank = position(GroupKind::kEp);
  layout.pp = o.plan.sizes.pp;
  layout.pp_rank = position(GroupKind::kPp);
  Comm* pp_comm = groups->get(GroupKind::kPp);
  if (layout.pp > 1 && pp_comm == nullptr) return Error{"internal: no pipeline group for rank " + std::to_string(rank)};
  const PipeLinks links{groups->pipe_prev.get(), groups->pipe_next.get()};
  // Micro-batches per step: one with no pipeline (the run's contract), gradient_accumulation_steps
  // through the pipeline.
  const int64_t micro_steps = o.micro_batches();
  const int64_t replica = position(GroupKind::kDp), sp_rank = position(GroupKind::kSp);
  const int64_t dp = o.plan.derived.dp, sp = o.plan.sizes.sp;
  ShardComms comms;
  comms.tp = groups->get(GroupKind::kTp);
  comms.sp = groups->get(GroupKind::kSp);
  comms.ep = groups->get(GroupKind::kEp);
  comms.no_copy_allreduce = o.fault == Fault::kNoCopyAllreduce;
  // Dense gradients: over sp_dp with Ulysses (sum over sp, mean over dp), else dense dp.
  Comm* dense = sp > 1 ? groups->get(GroupKind::kSpDp) : groups->get(GroupKind::kDp);
  Comm* edp = groups->get(GroupKind::kEdp);
  if (dense == nullptr) return Error{"internal: no dense data-parallel group for rank " + std::to_string(rank)};
  report.seconds_setup = Seconds(t0, Clock::now());
  if (o.bench) {
    std::map<GroupKind, Comm*> mine;
    for (const auto& [kind, comm] : groups->mine) mine[kind] = comm.get();
    auto results = MeasureCollectives(mine, o);
    if (!results.ok()) return results.error();
    report.bench = std::move(results).value();
    report.seconds_total = Seconds(t0, Clock::now());
    if (rank == 0 && o.report_sink) o.report_sink(report);
    if (auto s = rv.Finish(); !s.ok()) return s.error();
    return report;
  }

  // One lane per model: the main one, then each companion (--model twice), each with its own
  // tiny decoder, reference, shards and optimizer state; nothing mutable is shared between them.
  std::vector<Lane> lanes;
  lanes.emplace_back();
  lanes.back().tiny = o.tiny;
  lanes.back().parity.model_label = o.model_label;
  for (const CompanionModel& c : o.companions) {
    lanes.emplace_back();
    lanes.back().tiny = c.tiny;
    lanes.back().parity.model_label = c.model_label;
  }
  int64_t first_step = 0;
  for (Lane& lane : lanes) {
    lane.parity.tiny = lane.tiny;
    lane.model = std::make_unique<TinyModel>(lane.tiny, o.seed, layout, o.dtype == Dtype::kBf16 ? at::kBFloat16 : at::kFloat);
    TinyModel& model = *lane.model;
    model.SetCheckpointing(o.recompute, o.cpu_checkpointing);
    if (!o.load_dir.empty()) {
      auto resumed = LoadRun(o, model);
      if (!resumed.ok()) return resumed.error();
      first_step = *resumed;
      report.resumed_from_step = first_step;
    }
    ReduceGroup dense_group{dense, static_cast<double>(dp), {}}, expert_group{edp, static_cast<double>(dp), {}};
    for (size_t i = 0; i < model.params().size(); ++i) {
      const Param& p = model.params()[i];
      if (!p.local.defined()) continue;
      (p.expert && edp != nullptr ? expert_group : dense_group).params.push_back(static_cast<int>(i));
    }
    std::vector<ReduceGroup> reduce{dense_group};
    if (!expert_group.params.empty()) reduce.push_back(expert_group);
    FoldingReduction folding;
    if (o.plan.sizes.expert_parallel && o.plan.sizes.tp > 1) {
      folding.tp = comms.tp;
      folding.skip_tp_cancel = o.fault == Fault::kSkipTpCancel;
      folding.sum_router_grads = o.fault == Fault::kSumRouterGrads;
    }
    // ZeRO-3 partitions what each group reduces over that group. The fault sums the routed
    // experts' gradients over dp, whose ranks hold other experts, instead of their edp group.
    if (o.plan.zero_stage == 3) {
      lane.zero3 = std::make_unique<Zero3Partitions>(model, reduce,
                                                     o.fault == Fault::kExpertGradsOverDp ? dense : nullptr);
      Zero3Partitions* z = lane.zero3.get();
      model.SetWeightHook([z](int param, const at::Tensor& x, WeightOp op) { return z->Apply(param, x, std::move(op)); });
    } else {
      lane.sgd.emplace(model, static_cast<int>(o.plan.zero_stage), o.lr, reduce, folding);
    }
    for (ParamFamily f : kAllParamFamilies) {
      for (const auto& p : model.params()) {
        if (p.family == f) {
          lane.present.push_back(f);
          break;
        }
      }
    }
  }

  const auto t1 = Clock::now();
  const int last_step = static_cast<int>(first_step) + o.steps;
  for (int step = static_cast<int>(first_step); step < last_step; ++step) {
    for (size_t lane_index = 0; lane_index < lanes.size(); ++lane_index) {
      Lane& lane = lanes[lane_index];
      TinyModel& model = *lane.model;
      const TinyConfig& t = lane.tiny;
      const int64_t rows = dp * t.micro_batch * micro_steps, seq = t.seq_len, chunk = seq / sp;
      at::Tensor data = RunBatch(o.seed, step, rows, seq + 1, t.vocab);
      at::Tensor inputs = data.narrow(1, 0, seq), targets = data.narrow(1, 1, seq);
      at::Tensor ref_loss = model.ReferenceLoss(inputs, targets, static_cast<double>(rows * seq));
      ref_loss.backward();
      at::Tensor li = inputs.narrow(0, replica * t.micro_batch, t.micro_batch).narrow(1, sp_rank * chunk, chunk);
      at::Tensor lt = targets.narrow(0, replica * t.micro_batch, t.micro_batch).narrow(1, sp_rank * chunk, chunk);
      // Test hook (tests/exec): this rank disappears mid-run, as after `kill -9` or an OOM kill.
      if (const char* k = std::getenv("DSP_RUN_TEST_KILL_RANK"); k != nullptr && std::atoi(k) == rank) std::raise(SIGKILL);
      // ... or freezes, as under SIGSTOP or Ctrl-Z: alive, connections open, no heartbeat.
      if (const char* k = std::getenv("DSP_RUN_TEST_STOP_RANK"); k != nullptr && std::atoi(k) == rank) std::raise(SIGSTOP);
      if (o.dtype == Dtype::kBf16) model.PinShardRouting(replica * t.micro_batch, t.micro_batch, sp_rank * chunk, chunk);
      at::Tensor loss;
      try {
        if (layout.pp > 1) {
          loss = PipelineStep(model, comms, links, layout.pp, layout.pp_rank, inputs, targets, replica, dp,
                              t.micro_batch, micro_steps, o.fault == Fault::kPpStaleActivation);
        } else {
          loss = model.ShardedLoss(li, lt, static_cast<double>(t.micro_batch * seq), comms);
          loss.backward();
        }
      } catch (const CollectiveError& e) {
        return Error{e.what()};
      }
      FamilyDiffs diffs;
      if (lane.zero3 != nullptr) {
        try {
          if (auto s = lane.zero3->Step(o.lr, diffs); !s.ok()) return s.error();
        } catch (const CollectiveError& e) {
          return Error{e.what()};
        }
      } else if (auto s = lane.sgd->Step(diffs); !s.ok()) {
        return s.error();
      }

      // The global loss: replica means summed over sp, averaged over dp (tp ranks agree).
      at::Tensor global = loss.detach().reshape({1}).clone();
      if (auto s = dense->AllReduceSum(global); !s.ok()) return s.error();
      global /= static_cast<double>(dp);
      // Only the last stage computes the loss: every stage reports it.
      if (layout.pp > 1) {
        if (auto s = pp_comm->Broadcast(global, static_cast<int>(layout.pp - 1)); !s.ok()) return s.error();
      }
      // Per family the max over ranks of [grad diff, grad ref, weight diff, weight ref].
      const std::vector<ParamFamily>& present = lane.present;
      at::Tensor stats = at::zeros({1, static_cast<int64_t>(present.size()) * 4}, at::kFloat);
      for (size_t i = 0; i < present.size(); ++i) {
        const FamilyDiff& d = diffs[present[i]];
        stats[0][4 * i] = d.grad_abs;
        stats[0][4 * i + 1] = d.grad_ref;
        stats[0][4 * i + 2] = d.weight_abs;
        stats[0][4 * i + 3] = d.weight_ref;
      }
      auto all = groups->world->AllGather(stats);
      if (!all.ok()) return all.error();
      at::Tensor m = std::get<0>(all->max(0));

      ModelParity& parity = lane.parity;
      StepParity sp_report;
      sp_report.step = step + 1;
      sp_report.loss = global.item<double>();
      sp_report.ref_loss = ref_loss.item<double>();
      const auto& tol = o.tolerances;
      sp_report.loss_ok = std::abs(sp_report.loss - sp_report.ref_loss) <= tol.atol + tol.rtol * std::abs(sp_report.ref_loss);
      sp_report.ok = sp_report.loss_ok;
      for (size_t i = 0; i < present.size(); ++i) {
        FamilyParity f;
        f.family = std::string(ParamFamilyName(present[i]));
        f.grad_max_abs = m[4 * i].item<double>();
        f.grad_ref_max = m[4 * i + 1].item<double>();
        f.weight_max_abs = m[4 * i + 2].item<double>();
        f.weight_ref_max = m[4 * i + 3].item<double>();
        f.ok = f.grad_max_abs <= tol.atol + tol.rtol * f.grad_ref_max &&
               f.weight_max_abs <= tol.atol + tol.rtol * f.weight_ref_max;
        if (!f.ok) {
          sp_report.ok = false;
          if (std::find(parity.failing_families.begin(), parity.failing_families.end(), f.family) ==
              parity.failing_families.end()) {
            parity.failing_families.push_back(f.family);
          }
        }
        sp_report.families.push_back(f);
      }
      if (!sp_report.ok && parity.first_failing_step == 0) {
        parity.first_failing_step = sp_report.step;
        for (const auto& f : sp_report.families) {
          if (!f.ok) parity.first_failing_families.push_back(f.family);
        }
      }
      parity.loss_ok = parity.loss_ok && sp_report.loss_ok;
      parity.ok = parity.ok && sp_report.ok;
      if (rank == 0 && o.step_sink && lane_index == 0) o.step_sink(sp_report, last_step, Seconds(t1, Clock::now()));
      parity.step_reports.push_back(std::move(sp_report));
    }
  }
  for (Lane& lane : lanes) std::sort(lane.parity.failing_families.begin(), lane.parity.failing_families.end());
  // The main model's parity is the report's own; the companions follow it, and `ok` covers all.
  report.main = std::move(lanes.front().parity);
  report.ok = report.main.ok;
  for (size_t i = 1; i < lanes.size(); ++i) {
    report.ok = report.ok && lanes[i].parity.ok;
    report.companions.push_back(std::move(lanes[i].parity));
  }
  TinyModel& model = *lanes.front().model;
  std::unique_ptr<Zero3Partitions>& zero3 = lanes.front().zero3;
  report.seconds_steps = Seconds(t1, Clock::now());
  report.seconds_total = Seconds(t0, Clock::now());
  if (!o.save_dir.empty()) {
    if (auto s = SaveRun(o, rank, last_step, model, zero3.get(), groups->world.get()); !s.ok()) return s.error();
    report.saved_to = o.save_dir;
  }
  report.recomputed_layers = model.checkpoint_counters().recomputed;
  report.offloaded_inputs = model.checkpoint_counters().offloaded;
  if (rank == 0 && o.report_sink) o.report_sink(report);
  if (auto s = rv.Finish(); !s.ok()) return s.error();
  return report;
}

Result<RunReport> RunPlanImpl(const RunOptions& o) {
  const auto t0 = Clock::now();
  if (auto s = CheckSupported(o); !s.ok()) return s.error();
  auto env = ReadLaunchEnv();
  if (!env.ok()) return env.error();
  if (env->world_size != o.plan.groups.world) {
    return Error{"WORLD_SIZE is " + std::to_string(env->world_size) + " but the plan was built for " +
                 std::to_string(o.plan.groups.world) + " ranks"};
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
  auto rdv = Rendezvous::Join(*env, timeout);
  if (!rdv.ok()) return rdv.error();
  Result<RunReport> r = Error{""};
  try {
    r = RunJoined(o, &*env, **rdv, t0, timeout);
  } catch (const std::exception& e) {
    std::string what = e.what();
    r = Error{"rank " + std::to_string(env->rank) + ": internal error in ds-plan run: " + what.substr(0, what.find('\n'))};
  }
  if (!r.ok()) (*rdv)->Abort(r.error().message);
  return r;
}

}  // namespace

Result<RunReport> RunPlan(const RunOptions& options) {
  try {
    return RunPlanImpl(options);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return Error{"internal error in ds-plan run: " + what.substr(0, what.find('\n'))};
  }
}

}  // namespace dsp::exec
