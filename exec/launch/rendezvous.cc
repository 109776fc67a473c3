// SPDX-License-Identifier: Apache-2.0
#include "exec/launch/rendezvous.h"

#include "exec/launch/plan_hash.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace dsp::exec {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBeat = std::chrono::milliseconds(200);
constexpr auto kDiagnoseWindow = std::chrono::milliseconds(1500);

std::string FirstLine(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

std::string ToString(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

std::string RankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

c10::intrusive_ptr<c10d::Store> Client(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(env.master_port);
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> s = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
  // The agent's store is shared with torchrun itself; workers use rendezvous.py's prefix.
  if (env.use_agent_store) s = c10::make_intrusive<c10d::PrefixStore>(env.StorePrefix(), s);
  return c10::make_intrusive<c10d::PrefixStore>("ds-plan/", s);
}

}  // namespace

Result<std::unique_ptr<Rendezvous>> Rendezvous::Join(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  std::unique_ptr<Rendezvous> r(new Rendezvous());
  r->env_ = env;
  r->timeout_ = timeout;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    if (!env.use_agent_store && env.rank == 0) {
      // Same as torch.distributed.rendezvous._create_c10d_store without the agent: rank 0 serves.
      c10d::TCPStoreOptions o;
      o.port = static_cast<uint16_t>(env.master_port);
      o.isServer = true;
      o.numWorkers = env.world_size;
      o.waitWorkers = false;  // arrivals are checked (and missing ranks named) by CheckSamePlan
      o.timeout = timeout;
      o.multiTenant = true;
      r->server_ = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    }
    r->store_ = Client(env, timeout);
    r->hb_store_ = Client(env, timeout);
  } catch (const std::exception& e) {
    std::string who = env.use_agent_store ? "torchrun's agent store" : (env.rank == 0 ? "the store this rank hosts" : "the store hosted by rank 0");
    return Error{"rank " + std::to_string(env.rank) + ": cannot reach " + who + " at " + where + ": " +
                 FirstLine(e.what())};
  }
  r->StartHeartbeat();
  return r;
}

std::unique_ptr<Rendezvous> Rendezvous::InProcess() {
  std::unique_ptr<Rendezvous> r(new Rendezvous());
  r->env_ = LaunchEnv{};
  r->store_ = c10::make_intrusive<c10d::HashStore>();
  r->hb_store_ = r->store_;
  r->StartHeartbeat();
  return r;
}

Rendezvous::~Rendezvous() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
}

namespace {

// "HOST PID" of this process, so a peer on the same host can tell a stopped rank from a dead one.
std::string WhoAmI() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + " " + std::to_string(getpid());
}

// What /proc says about a silent rank on this host: stopped (SIGSTOP, a debugger), gone, or
// running but silent. "" when the rank runs elsewhere or its record is missing.
std::string LocalProcessState(const std::string& who) {
  const size_t space = who.rfind(' ');
  if (space == std::string::npos || who.substr(0, space) != WhoAmI().substr(0, WhoAmI().rfind(' '))) return "";
  const std::string pid = who.substr(space + 1);
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return "exited or was killed (pid " + pid + " is gone)";
  // Field 3, after the parenthesised command name: R, S, D, T (stopped), t (traced), Z (zombie).
  const size_t close = line.rfind(')');
  const char state = close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
  if (state == 'T' || state == 't') return "is stopped (pid " + pid + ": SIGSTOP, Ctrl-Z or a debugger), not dead";
  if (state == 'Z') return "exited (pid " + pid + " is a zombie)";
  return std::string("is alive but silent (pid ") + pid + ", state " + state + ")";
}

}  // namespace

void Rendezvous::StartHeartbeat() {
  const std::string key = "hb/" + std::to_string(env_.rank);
  hb_store_->set("who/" + std::to_string(env_.rank), Bytes(WhoAmI()));
  hb_store_->add(key, 1);
  heartbeat_ = std::thread([this, key] {
    while (!stop_) {
      std::this_thread::sleep_for(kBeat);
      try {
        hb_store_->add(key, 1);
      } catch (const std::exception&) {
        return;  // the store is gone; Diagnose on the other side reports it
      }
    }
  });
}

std::string Rendezvous::Diagnose(const std::vector<int>& ranks) {
  try {
    auto sample = [&] {
      std::vector<int64_t> v;
      for (int r : ranks) {
        const std::string key = "hb/" + std::to_string(r);
        v.push_back(hb_store_->check({key}) ? hb_store_->add(key, 0) : -1);
      }
      return v;
    };
    auto before = sample();
    std::this_thread::sleep_for(kDiagnoseWindow);
    auto after = sample();
    std::vector<int> never, silent, failed;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (after[i] < 0) {
        never.push_back(ranks[i]);
      } else if (hb_store_->check({"failed/" + std::to_string(ranks[i])})) {
        failed.push_back(ranks[i]);  // gave up after its own error: a consequence, not the cause
      } else if (after[i] == before[i]) {
        silent.push_back(ranks[i]);
      }
    }
    std::string out;
    if (silent.empty() && never.empty() && !failed.empty()) {
      // Pass on the first one's reason: it usually names the rank that really died.
      std::string why = ToString(hb_store_->get("failed/" + std::to_string(failed[0])));
      out = RankList(failed) + " stopped after an error of " + (failed.size() == 1 ? "its" : "their") + " own (" +
            why.substr(why.find(": ") == std::string::npos ? 0 : why.find(": ") + 2) + ")";
    }
    if (!silent.empty()) {
      // On one host /proc tells stopped from dead; across hosts the heartbeat alone cannot.
      std::string known;
      for (int r : silent) {
        const std::string key = "who/" + std::to_string(r);
        const std::string state = hb_store_->check({key}) ? LocalProcessState(ToString(hb_store_->get(key))) : "";
        if (!state.empty()) known += (known.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " " + state;
      }
      out += RankList(silent) + (silent.size() == 1 ? " is" : " are") + " not responding (no heartbeat for " +
             std::to_string(kDiagnoseWindow.count()) + " ms: " +
             (known.empty() ? std::string("stopped, hung or dead") : known) + ")";
    }
    if (!never.empty()) out += (out.empty() ? "" : "; ") + RankList(never) + " never joined";
    return out;
  } catch (const std::exception& e) {
    if (!env_.use_agent_store) {
      return "the store hosted by rank 0 at " + env_.master_addr + ":" + std::to_string(env_.master_port) +
             " is unreachable (rank 0 died or was killed)";
    }
    return "torchrun's agent store is unreachable: " + FirstLine(e.what());
  }
}

Status Rendezvous::CheckSamePlan(const std::string& hash, const std::string& description) {
  const int world = env_.world_size;
  try {
    store_->set("plan/" + std::to_string(env_.rank), Bytes(hash + "\n" + description));
    const auto deadline = Clock::now() + timeout_;
    std::vector<int> missing;
    for (;;) {
      missing.clear();
      for (int r = 0; r < world; ++r) {
        if (!store_->check({"plan/" + std::to_string(r)})) missing.push_back(r);
      }
      if (missing.empty()) break;
      if (Clock::now() > deadline) {
        return Error{"rank " + std::to_string(env_.rank) + ": " + RankList(missing) + " never arrived within " +
                     std::to_string(timeout_.count() / 1000.0).substr(0, 4) + " s (--timeout); " +
                     "WORLD_SIZE is " + std::to_string(world) + " but only " +
                     std::to_string(world - missing.size()) + " ranks joined"};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::vector<std::string> differ;
    for (int r = 0; r < world; ++r) {
      std::string v = ToString(store_->get("plan/" + std::to_string(r)));
      std::string other = v.substr(0, v.find('\n'));
      if (other != hash) {
        differ.push_back("rank " + std::to_string(r) + " has plan " + other + ", which differs in " +
                         PlanFieldsDiffer(description, v.substr(v.find('\n') + 1)));
      }
    }
    if (!differ.empty()) {
      std::string msg = "rank " + std::to_string(env_.rank) + " has plan " + hash + " but ";
      for (size_t i = 0; i < differ.size(); ++i) msg += (i ? "; " : "") + differ[i];
      return Error{msg + ": every rank must run ds-plan run with the same config, model and flags"};
    }
  } catch (const std::exception& e) {
    return Error{"rank " + std::to_string(env_.rank) + ": plan check through the store failed: " + FirstLine(e.what())};
  }
  return Status::Ok();
}

void Rendezvous::Abort(const std::string& message) {
  try {
    hb_store_->set("failed/" + std::to_string(env_.rank), Bytes(message));
  } catch (const std::exception&) {
    // The store is gone already; nothing left to tell.
  }
  if (server_) std::this_thread::sleep_for(2 * kDiagnoseWindow);
}

Status Rendezvous::Finish() {
  try {
    // Rank 0 reports before this; the others wait for it, because torchrun stops every worker as
    // soon as one exits non-zero (a parity failure exits 1 on every rank) and would otherwise kill
    // rank 0 before its report is out.
    if (env_.rank == 0) {
      store_->set("reported", Bytes("1"));
    } else {
      store_->wait({"reported"}, timeout_);
    }
    store_->add("finished", 1);
    if (server_) {
      const auto deadline = Clock::now() + timeout_;
      while (store_->add("finished", 0) < env_.world_size) {
        if (Clock::now() > deadline) return Error{"rank 0: not every rank finished within the timeout"};
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } catch (const std::exception& e) {
    return Error{"rank " + std::to_string(env_.rank) + ": closing handshake failed: " + FirstLine(e.what())};
  }
  return Status::Ok();
}

}  // namespace dsp::exec
