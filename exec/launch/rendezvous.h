// SPDX-License-Identifier: Apache-2.0
// Joining the run: the c10d store (torchrun's agent store, or our own on rank 0), a heartbeat so a
// failed collective can name the rank that died, the start-up check that every rank holds the same
// plan, and the closing handshake that keeps rank 0's store alive until everyone is done.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "core/util/result.h"
#include "exec/launch/env.h"

namespace dsp::exec {

class Rendezvous {
 public:
  // Connects to (or, without the agent store, rank 0 hosts) the store at MASTER_ADDR:MASTER_PORT.
  // `run_prefix` separates this run's keys from anything else in a shared store.
  static Result<std::unique_ptr<Rendezvous>> Join(const LaunchEnv& env, std::chrono::milliseconds timeout);
  // world=1 in one process on a c10d::HashStore (unit tests).
  static std::unique_ptr<Rendezvous> InProcess();

  ~Rendezvous();

  c10::intrusive_ptr<c10d::Store> store() const { return store_; }
  const LaunchEnv& env() const { return env_; }

  // Publishes `hash` (+ a one-line description) and waits for every rank's. Errors name the ranks
  // that never arrived within the timeout and the ranks whose plan differs from this rank's.
  Status CheckSamePlan(const std::string& hash, const std::string& description);

  // Which of `ranks` stopped answering: samples their heartbeat counters twice, ~1.5 s apart.
  // "" when all are alive (the failure then lies elsewhere).
  std::string Diagnose(const std::vector<int>& ranks);

  // This rank gives up with `message`: peers' Diagnose then reports it as failed-after-an-error
  // rather than dead, and rank 0 (the store host without the agent) keeps the store up for a few
  // seconds so the others can still diagnose and report.
  void Abort(const std::string& message);

  // Closing handshake, after rank 0 has printed its report: the other ranks wait for rank 0 to say
  // so, then every rank reports completion and rank 0 (the store host without torchrun's agent)
  // waits for all of them.
  Status Finish();

 private:
  Rendezvous() = default;
  void StartHeartbeat();

  LaunchEnv env_;
  std::chrono::milliseconds timeout_{60000};
  c10::intrusive_ptr<c10d::Store> store_;      // used by the run
  c10::intrusive_ptr<c10d::Store> hb_store_;   // own connection, so a long wait never delays a beat
  c10::intrusive_ptr<c10d::Store> server_;     // kept alive on rank 0 without the agent store
  std::thread heartbeat_;
  std::atomic<bool> stop_{false};
};

}  // namespace dsp::exec
