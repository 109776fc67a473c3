// SPDX-License-Identifier: Apache-2.0
// ParseCluster: reads a cluster description (schemas/cluster.schema.json) by hand rather than
// through valijson, so that every error names the exact JSON pointer and the value that would work,
// and so sim/ does not depend on the schema library. Keys starting with "_" are notes (sources,
// comments) and are ignored; any other unknown key is an error, because a typo such as
// "busbw_bytes_per_sec" would otherwise silently leave a figure at its default.
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/util/text.h"
#include "sim/cost/cluster.h"

#include <algorithm>

namespace dsp::sim {
namespace {

// Order of magnitude, not a measurement: the ZeRO-Offload paper (Ren et al. 2021) reports its
// CPU-Adam updating about a billion parameters in a few tenths of a second on a two-socket host;
// shared by 8 GPU processes that is a few hundred million parameters per second each.
constexpr double kDefaultCpuOptimizerParamsPerSecond = 5e8;

// Efficiency defaults when the file has no "efficiency" section (see docs/simulate.md):
// large bf16 GEMMs reach about three quarters of the dense tensor-core peak on H100-class parts,
// and memory-bound kernels about 80 % of HBM bandwidth (llm-analysis calls 0.9 "aggressive").
constexpr double kDefaultMatmulEfficiency = 0.75;
constexpr double kDefaultMemoryEfficiency = 0.8;

std::string TypeName(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Walks one object: typed reads that record the first error, then an unknown-key check.
class ObjectReader {
 public:
  ObjectReader(const Json& obj, std::string pointer, std::string* error)
      : obj_(obj), pointer_(std::move(pointer)), error_(error) {}

  bool ok() const { return error_->empty(); }

  const Json* Get(const std::string& key, bool required) {
    known_.push_back(key);
    if (!ok()) return nullptr;
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) Fail(PointerJoin(pointer_, key), "required key is missing");
      return nullptr;
    }
    return &*it;
  }

  // A finite number > 0 (or in (0, 1] when `fraction`).
  void Number(const std::string& key, double* out, bool required, bool fraction = false) {
    const Json* v = Get(key, required);
    if (v == nullptr) return;
    std::string p = PointerJoin(pointer_, key);
    if (!v->is_number()) return Fail(p, "expected a number, got " + TypeName(*v));
    double x = v->get<double>();
    if (!std::isfinite(x) || x <= 0) return Fail(p, "must be greater than 0, got " + v->dump());
    if (fraction && x > 1) return Fail(p, "is a fraction of the peak: must be in (0, 1], got " + v->dump());
    *out = x;
  }

  // A finite number >= 0 (or below 1 when `fraction`).
  void NonNegative(const std::string& key, double* out, bool fraction = false) {
    const Json* v = Get(key, false);
    if (v == nullptr) return;
    std::string p = PointerJoin(pointer_, key);
    if (!v->is_number()) return Fail(p, "expected a number, got " + TypeName(*v));
    double x = v->get<double>();
    if (!std::isfinite(x) || x < 0) return Fail(p, "must be 0 or more, got " + v->dump());
    if (fraction && x >= 1) return Fail(p, "is a fraction: must be in [0, 1), got " + v->dump());
    *out = x;
  }

  void Integer(const std::string& key, int* out, int max, bool required = true) {
    const Json* v = Get(key, required);
    if (v == nullptr) return;
    std::string p = PointerJoin(pointer_, key);
    if (!v->is_number_integer()) return Fail(p, "expected an integer, got " + TypeName(*v) + " " + v->dump());
    auto x = v->get<long long>();
    if (x < 1 || x > max) return Fail(p, "must be between 1 and " + std::to_string(max) + ", got " + v->dump());
    *out = static_cast<int>(x);
  }

  void String(const std::string& key, std::string* out, bool required = true) {
    const Json* v = Get(key, required);
    if (v == nullptr) return;
    if (!v->is_string()) return Fail(PointerJoin(pointer_, key), "expected a string, got " + TypeName(*v));
    *out = v->get<std::string>();
  }

  // Runs `read` on the sub-object `key`.
  void Object(const std::string& key, bool required, const std::function<void(ObjectReader&)>& read) {
    const Json* v = Get(key, required);
    if (v == nullptr) return;
    std::string p = PointerJoin(pointer_, key);
    if (!v->is_object()) return Fail(p, "expected an object, got " + TypeName(*v));
    ObjectReader sub(*v, p, error_);
    read(sub);
    sub.RejectUnknownKeys();
  }

  void RejectUnknownKeys() {
    if (!ok()) return;
    for (const auto& [key, value] : obj_.items()) {
      if (!key.empty() && key[0] == '_') continue;  // a note, e.g. "_source"
      bool known = false;
      for (const auto& k : known_) known = known || k == key;
      if (known) continue;
      std::string guess = ClosestMatch(key, known_);
      return Fail(PointerJoin(pointer_, key),
                  "unknown key" + (guess.empty() ? std::string() : ", did you mean \"" + guess + "\"?") +
                      " (notes go in keys starting with \"_\")");
    }
  }

 private:
  void Fail(const std::string& pointer, const std::string& message) {
    if (error_->empty()) *error_ = (pointer.empty() ? "/" : pointer) + ": " + message;
  }

  const Json& obj_;
  std::string pointer_;
  std::string* error_;
  std::vector<std::string> known_;
};

void ReadLink(ObjectReader& r, LinkSpec* link) {
  r.Number("busbw_bytes_per_second", &link->busbw_bytes_per_second, true);
  r.Number("latency_seconds", &link->latency_seconds, true);
  r.NonNegative("hop_latency_seconds", &link->hop_latency_seconds);
}

void ReadNetwork(ObjectReader& r, LinkSpec* link) {
  ReadLink(r, link);
  r.NonNegative("max_rails", &link->max_rails);
}

// What a real machine can have, generously: a figure outside these bounds is a typo or a unit
// error (GB for bytes), and would make step times overflow to infinity or vanish.
struct Range {
  const char* pointer;
  double value;
  double lo, hi;
  bool given;
};

std::string Show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Status CheckRanges(const Json& json, const Cluster& c) {
  // Names are shown in every report: keep them readable.
  for (auto [pointer, name] : {std::pair{"/name", &c.name}, {"/gpu/name", &c.gpu.name}}) {
    if (name->empty() || name->size() > 200) {
      return Error{std::string(pointer) + ": a name of 1 to 200 characters, got " +
                   std::to_string(name->size())};
    }
  }
  auto given = [&](const char* pointer) { return json.contains(Json::json_pointer(pointer)); };
  const Range ranges[] = {
      {"/gpu/peak_bf16_flops_per_second", c.gpu.peak_bf16_flops_per_second, 1e9, 1e17, true},
      {"/gpu/hbm_bytes", c.gpu.hbm_bytes, 1e6, 1e14, true},
      {"/gpu/hbm_bytes_per_second", c.gpu.hbm_bytes_per_second, 1e8, 1e15, true},
      {"/gpu/kernel_overhead_seconds", c.gpu.kernel_overhead_seconds, 0, 1, true},
      {"/gpu/compute_clock_ratio", c.gpu.compute_clock_ratio, 0.1, 1.5, true},
      {"/intra_node/busbw_bytes_per_second", c.intra_node.busbw_bytes_per_second, 1e6, 1e14, true},
      {"/intra_node/latency_seconds", c.intra_node.latency_seconds, 1e-9, 1, true},
      {"/intra_node/hop_latency_seconds", c.intra_node.hop_latency_seconds, 0, 1, true},
      {"/inter_node/busbw_bytes_per_second", c.inter_node.busbw_bytes_per_second, 1e6, 1e14, true},
      {"/inter_node/latency_seconds", c.inter_node.latency_seconds, 1e-9, 1, true},
      {"/inter_node/hop_latency_seconds", c.inter_node.hop_latency_seconds, 0, 1, true},
      {"/inter_node/max_rails", c.inter_node.max_rails, 0, 1024, true},
      {"/host_to_device_bytes_per_second", c.host_to_device_bytes_per_second, 1e6, 1e13, true},
      {"/pageable_copy_bytes_per_second", c.pageable_copy_bytes_per_second, 1e5, 1e13,
       given("/pageable_copy_bytes_per_second")},
      {"/host_memory_bytes", c.host_memory_bytes, 1e6, 1e16, given("/host_memory_bytes")},
      {"/cpu_optimizer_params_per_second", c.cpu_optimizer_params_per_second, 1e3, 1e13, true},
      {"/cpu_optimizer_node_params_per_second", c.cpu_optimizer_node_params_per_second, 1e3, 1e14,
       given("/cpu_optimizer_node_params_per_second")},
      {"/efficiency/matmul", c.efficiency.matmul, 0.01, 1, true},
      {"/efficiency/memory", c.efficiency.memory, 0.01, 1, true},
      {"/efficiency/attention", c.efficiency.attention, 0.01, 1, given("/efficiency/attention")},
      {"/efficiency/fp8_matmul", c.efficiency.fp8_matmul, 0.01, 1, given("/efficiency/fp8_matmul")},
      {"/gpu/peak_fp8_flops_per_second", c.gpu.peak_fp8_flops_per_second, 0, 1e17,
       given("/gpu/peak_fp8_flops_per_second")},
      {"/memory/reserved_bytes", c.memory.reserved_bytes, 0, 1e14, true},
      {"/host/forward_seconds_per_kernel", c.host.forward_seconds_per_kernel, 0, 1e-2, true},
      {"/host/backward_seconds_per_kernel", c.host.backward_seconds_per_kernel, 0, 1e-2, true},
      {"/host/zero3_fetch_seconds", c.host.zero3_fetch_seconds, 0, 1e-1, true},
  };
  // max_rails: rails one collective drives per node; 0 or absent means one per GPU of the node.
  if (c.inter_node.max_rails != 0 && !(c.inter_node.max_rails >= 1)) {
    return Error{"/inter_node/max_rails: " + Show(c.inter_node.max_rails) +
                 " is less than one rail; give the rails a collective drives (at least 1), or 0 for one per GPU"};
  }
  for (const Range& r : ranges) {
    if (!r.given) continue;
    if (!(r.value >= r.lo && r.value <= r.hi)) {
      return Error{std::string(r.pointer) + ": " + Show(r.value) + " is outside what a machine has [" +
                   Show(r.lo) + ", " + Show(r.hi) + "] (a unit mistake? figures are in bytes, seconds " +
                   "and FLOP/s)"};
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Cluster> ParseCluster(const Json& json) {
  if (!json.is_object()) return Error{"/: a cluster description is a JSON object, got " + TypeName(json)};
  Cluster c;
  c.efficiency = {kDefaultMatmulEfficiency, kDefaultMemoryEfficiency};
  std::string error;
  std::string compute_capability;
  ObjectReader root(json, "", &error);
  root.String("name", &c.name);
  root.Object("gpu", true, [&](ObjectReader& r) {
    r.String("name", &c.gpu.name);
    r.Number("peak_bf16_flops_per_second", &c.gpu.peak_bf16_flops_per_second, true);
    r.NonNegative("peak_fp8_flops_per_second", &c.gpu.peak_fp8_flops_per_second);
    r.Number("hbm_bytes", &c.gpu.hbm_bytes, true);
    r.Number("hbm_bytes_per_second", &c.gpu.hbm_bytes_per_second, true);
    r.Integer("sm_count", &c.gpu.sm_count, 100000, /*required=*/false);
    // Optional: cluster files written before it existed stay valid; the bf16 check then has no GPU to judge.
    r.String("compute_capability", &compute_capability, /*required=*/false);
    r.NonNegative("kernel_overhead_seconds", &c.gpu.kernel_overhead_seconds);
    r.Number("compute_clock_ratio", &c.gpu.compute_clock_ratio, false);
  });
  root.Integer("gpus_per_node", &c.gpus_per_node, 1024);
  root.Object("intra_node", true, [&](ObjectReader& r) { ReadLink(r, &c.intra_node); });
  root.Object("inter_node", true, [&](ObjectReader& r) { ReadNetwork(r, &c.inter_node); });
  root.Number("host_to_device_bytes_per_second", &c.host_to_device_bytes_per_second, true);
  c.cpu_optimizer_params_per_second = kDefaultCpuOptimizerParamsPerSecond;
  root.Number("cpu_optimizer_params_per_second", &c.cpu_optimizer_params_per_second, false);
  root.Number("cpu_optimizer_node_params_per_second", &c.cpu_optimizer_node_params_per_second, false);
  root.Number("host_memory_bytes", &c.host_memory_bytes, false);
  root.Number("pageable_copy_bytes_per_second", &c.pageable_copy_bytes_per_second, false);
  root.Object("efficiency", false, [&](ObjectReader& r) {
    r.Number("matmul", &c.efficiency.matmul, false, /*fraction=*/true);
    r.Number("memory", &c.efficiency.memory, false, /*fraction=*/true);
    r.Number("attention", &c.efficiency.attention, false, /*fraction=*/true);
    r.Number("attention_flash2", &c.efficiency.attention_flash2, false, /*fraction=*/true);
    r.Number("fp8_matmul", &c.efficiency.fp8_matmul, false, /*fraction=*/true);
  });
  root.Object("memory", false, [&](ObjectReader& r) {
    r.NonNegative("reserved_bytes", &c.memory.reserved_bytes);
    r.NonNegative("fragmentation", &c.memory.fragmentation, /*fraction=*/true);
  });
  root.Object("host", false, [&](ObjectReader& r) {
    r.NonNegative("forward_seconds_per_kernel", &c.host.forward_seconds_per_kernel);
    r.NonNegative("backward_seconds_per_kernel", &c.host.backward_seconds_per_kernel);
    r.NonNegative("zero3_fetch_seconds", &c.host.zero3_fetch_seconds);
  });
  root.RejectUnknownKeys();
  if (!error.empty()) return Error{error};
  const Json* gpu_json = json.contains("gpu") ? &json["gpu"] : nullptr;
  if (gpu_json != nullptr && gpu_json->is_object() && gpu_json->contains("compute_capability")) {
    // NVIDIA's notation: "8.0", "9.0", "10.0": one or two digits, a dot, one digit.
    const std::string& cc = compute_capability;
    const size_t dot = cc.find('.');
    auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
    const bool digits = dot != std::string::npos && dot > 0 && dot <= 2 && dot + 2 == cc.size() &&
                        std::all_of(cc.begin(), cc.begin() + static_cast<std::ptrdiff_t>(dot), digit) &&
                        digit(cc[dot + 1]);
    if (!digits) {
      return Error{"/gpu/compute_capability: \"" + compute_capability.substr(0, 20) +
                   "\" is not a CUDA compute capability (major.minor, such as \"8.0\" for A100 or \"9.0\" for H100)"};
    }
    c.gpu.compute_capability = std::stoi(compute_capability.substr(0, dot)) * 10 + (compute_capability[dot + 1] - '0');
  }
  if (Status ranges = CheckRanges(json, c); !ranges.ok()) return ranges.error();
  return c;
}

}  // namespace dsp::sim
