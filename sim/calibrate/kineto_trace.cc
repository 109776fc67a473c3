// SPDX-License-Identifier: Apache-2.0
#include "sim/calibrate/kineto_trace.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/util/file_io.h"

namespace dsp::sim {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ContainsAny(const std::string& haystack, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles) {
    if (haystack.find(n) != std::string::npos) return true;
  }
  return false;
}

bool IsGpuEvent(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

struct Interval {
  double begin = 0, end = 0;
};

// Sorts and merges overlapping intervals in place.
void Merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  v = std::move(out);
}

double Length(const std::vector<Interval>& merged) {
  double total = 0;
  for (const Interval& i : merged) total += i.end - i.begin;
  return total;
}

// Length of `x` covered by the merged (sorted, disjoint) intervals `cover`.
double Covered(const Interval& x, const std::vector<Interval>& cover) {
  auto it = std::upper_bound(cover.begin(), cover.end(), x.begin,
                             [](double t, const Interval& i) { return t < i.end; });
  double covered = 0;
  for (; it != cover.end() && it->begin < x.end; ++it) {
    covered += std::max(0.0, std::min(x.end, it->end) - std::max(x.begin, it->begin));
  }
  return covered;
}

bool Inside(double t, const std::vector<Interval>& merged) {
  auto it = std::upper_bound(merged.begin(), merged.end(), t,
                             [](double v, const Interval& i) { return v < i.end; });
  return it != merged.end() && it->begin <= t;
}

double Number(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : 0;
}

std::string Text(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return "";
}

// Bytes of one element of the "dtype" PyTorch records for a collective (c10 ScalarType names).
double DtypeBytes(const std::string& dtype) {
  const std::string d = Lower(dtype);
  if (d == "double" || d == "long" || d == "complexfloat") return 8;
  if (d == "float" || d == "int") return 4;
  if (d == "bfloat16" || d == "half" || d == "short") return 2;
  if (d == "byte" || d == "char" || d == "bool" || ContainsAny(d, {"float8"})) return 1;
  return 0;
}

// A CPU range inside which every launched kernel belongs to the optimizer step: torch.optim's own
// record_function (every torch.optim.Optimizer subclass, FusedAdam and DeepSpeed's CPU/GPU
// optimizers included) and the annotation scripts/gpu-ground-truth.py puts around its whole
// mixed-precision step (gradient casts and the copy back to bf16, as DeepSpeed's BF16_Optimizer
// step does them).
bool IsOptimizerRange(const std::string& name) {
  return name.rfind("Optimizer.step#", 0) == 0 || name == "ds_plan::optimizer_step";
}

}  // namespace

const char* TraceClassName(TraceClass c) {
  switch (c) {
    case TraceClass::kGemm: return "gemm";
    case TraceClass::kAttention: return "attention";
    case TraceClass::kMemoryBound: return "memory-bound";
    case TraceClass::kOptimizer: return "optimizer";
    case TraceClass::kHostCopy: return "host copies";
    case TraceClass::kCommunication: return "communication";
  }
  return "memory-bound";
}

TraceClass ClassifyKernel(const std::string& name, const std::string& cat) {
  const std::string n = Lower(name);
  if (cat == "gpu_memcpy") {
    return ContainsAny(n, {"htod", "dtoh", "pinned", "pageable", "host"}) ? TraceClass::kHostCopy
                                                                           : TraceClass::kMemoryBound;
  }
  if (cat == "gpu_memset") return TraceClass::kMemoryBound;
  if (n.rfind("nccl", 0) == 0) return TraceClass::kCommunication;
  // cuDNN's SDPA ("cudnn_generated_fort_native_sdpa_..."), FlashAttention ("flash_fwd_kernel",
  // "pytorch_flash::"), PyTorch's memory-efficient attention ("fmha_cutlassF_..."), TE's fused attn.
  if (ContainsAny(n, {"flash", "fmha", "sdpa", "attention", "attn"})) return TraceClass::kAttention;
  // "prepare_grouped_gemm_data" only writes the grouped GEMM's pointer table.
  if (n.find("prepare_grouped_gemm") == std::string::npos &&
      ContainsAny(n, {"gemm", "nvjet", "xmma", "cublas", "gemv", "wgmma", "cutlass", "conv"})) {
    return TraceClass::kGemm;
  }
  // Fused optimizers by name ("FusedAdamMathFunctor", DeepSpeed's multi_tensor_adam / lion / lamb
  // kernels); "lamb" never as part of a C++ "lambda".
  std::string no_lambda = n;
  for (size_t at = no_lambda.find("lambda"); at != std::string::npos; at = no_lambda.find("lambda", at)) {
    no_lambda.replace(at, 6, "_");
  }
  if (ContainsAny(no_lambda, {"adam", "lion", "lamb", "adagrad", "sgd_"})) return TraceClass::kOptimizer;
  return TraceClass::kMemoryBound;
}

std::string CollectiveOfKernel(const std::string& name, const std::string& collective_arg) {
  std::string a = Lower(collective_arg);
  a.erase(std::remove(a.begin(), a.end(), '_'), a.end());
  for (const std::string& s : {a, Lower(name)}) {
    if (s.find("allreduce") != std::string::npos) return "all_reduce";
    if (s.find("allgather") != std::string::npos) return "all_gather";
    if (s.find("reducescatter") != std::string::npos) return "reduce_scatter";
    if (s.find("alltoall") != std::string::npos) return "all_to_all";
    if (s.find("broadcast") != std::string::npos) return "broadcast";
    if (ContainsAny(s, {"sendrecv", "send", "recv"})) return "send_recv";
  }
  return "other";
}

Result<Json> ReadTraceFile(const std::string& path, size_t max_bytes) {
  auto raw = ReadFile(path, max_bytes);
  if (!raw.ok()) return raw.error();
  std::string text = std::move(raw).value();
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
      static_cast<unsigned char>(text[1]) == 0x8b) {
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Error{path + ": cannot start gzip decompression"};
    std::string out;
    std::array<char, 1 << 16> buf{};
    z.next_in = reinterpret_cast<Bytef*>(text.data());
    z.avail_in = static_cast<uInt>(text.size());
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      z.next_out = reinterpret_cast<Bytef*>(buf.data());
      z.avail_out = static_cast<uInt>(buf.size());
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) {
        inflateEnd(&z);
        return Error{path + ": not a valid gzip stream (zlib error " + std::to_string(rc) + ")"};
      }
      out.append(buf.data(), buf.size() - z.avail_out);
      if (out.size() > max_bytes) {
        inflateEnd(&z);
        return Error{path + ": more than " + std::to_string(max_bytes >> 20) +
                     " MiB once decompressed; trace fewer steps (torch.profiler schedule active=1)"};
      }
      if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
        inflateEnd(&z);
        return Error{path + ": the gzip stream is truncated"};
      }
    }
    inflateEnd(&z);
    text = std::move(out);
  }
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{path + ": not JSON (a PyTorch profiler trace is a Chrome trace JSON file)"};
  return doc;
}

std::string AttentionKernelOf(const std::string& name) {
  const std::string n = Lower(name);
  if (ContainsAny(n, {"cudnn", "sm90", "sm100"})) return "cudnn";
  if (n.find("flash") != std::string::npos) return "flash2";
  return "";
}

Result<TraceSummary> SummarizeTrace(const Json& trace) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    return Error{"no \"traceEvents\" array: not a Chrome trace of the PyTorch profiler"};
  }
  TraceSummary s;
  if (auto props = trace.find("deviceProperties"); props != trace.end() && props->is_array() &&
                                                    !props->empty() && (*props)[0].is_object()) {
    s.gpu = Text((*props)[0], "name");
  }
  const Json& events = trace["traceEvents"];

  // Pass 1: launch times by correlation id, optimizer ranges, profiler steps.
  std::unordered_map<int64_t, double> launch_ts;
  std::vector<Interval> optimizer;
  int64_t steps = 0;
  for (const Json& e : events) {
    if (!e.is_object()) continue;
    const std::string cat = Text(e, "cat"), name = Text(e, "name");
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (auto args = e.find("args"); args != e.end() && args->is_object()) {
        launch_ts[static_cast<int64_t>(Number(*args, "correlation"))] = Number(e, "ts");
      }
    } else if (cat == "cpu_op" || cat == "user_annotation") {
      if (IsOptimizerRange(name)) optimizer.push_back({Number(e, "ts"), Number(e, "ts") + Number(e, "dur")});
      if (name.rfind("ProfilerStep#", 0) == 0) ++steps;
    }
  }
  Merge(optimizer);
  s.steps = std::max<int64_t>(steps, 1);

  // Pass 2: the GPU events.
  struct Comm {
    Interval at;
    std::pair<std::string, std::string> key;  // kind, group
  };
  std::vector<Interval> all, compute;
  std::vector<Comm> comm;
  std::map<std::pair<std::string, std::string>, TraceCollective> by_collective;
  std::map<std::string, double> attention_time;  // by AttentionKernelOf
  for (const Json& e : events) {
    if (!e.is_object()) continue;
    const std::string cat = Text(e, "cat");
    if (!IsGpuEvent(cat)) continue;
    const std::string name = Text(e, "name");
    const double ts = Number(e, "ts"), dur = std::max(0.0, Number(e, "dur"));
    const Json empty = Json::object();
    auto a = e.find("args");
    const Json& args = (a != e.end() && a->is_object()) ? *a : empty;
    TraceClass c = ClassifyKernel(name, cat);
    if (c == TraceClass::kMemoryBound || c == TraceClass::kGemm) {
      auto launched = launch_ts.find(static_cast<int64_t>(Number(args, "correlation")));
      if (launched != launch_ts.end() && Inside(launched->second, optimizer)) c = TraceClass::kOptimizer;
    }
    ++s.kernels;
    s.seconds[c] += dur * 1e-6;
    if (c == TraceClass::kAttention) attention_time[AttentionKernelOf(name)] += dur;
    const Interval at{ts, ts + dur};
    all.push_back(at);
    if (c == TraceClass::kCommunication) {
      const std::string kind = CollectiveOfKernel(name, Text(args, "Collective name"));
      const std::string group = Text(args, "Process Group Ranks");
      TraceCollective& tc = by_collective[{kind, group}];
      tc.kind = kind;
      tc.group = group;
      tc.calls += 1;
      tc.seconds += dur * 1e-6;
      tc.bytes += std::max(Number(args, "In msg nelems"), Number(args, "Out msg nelems")) *
                  DtypeBytes(Text(args, "dtype"));
      comm.push_back({at, {kind, group}});
    } else if (c != TraceClass::kHostCopy) {
      compute.push_back(at);
    }
  }
  if (s.kernels == 0) return Error{"no GPU kernel in the trace: profile with ProfilerActivity.CUDA"};

  Merge(compute);
  for (Comm& c : comm) {
    by_collective[c.key].exposed_seconds += (c.at.end - c.at.begin - Covered(c.at, compute)) * 1e-6;
  }
  for (auto& [key, tc] : by_collective) s.collectives.push_back(tc);

  double first = all.front().begin, last = all.front().end;
  for (const Interval& i : all) {
    first = std::min(first, i.begin);
    last = std::max(last, i.end);
  }
  s.span_seconds = (last - first) * 1e-6;
  Merge(all);
  s.busy_seconds = Length(all) * 1e-6;
  double most = 0;
  for (const auto& [family, us] : attention_time) {
    if (!family.empty() && us > most) most = us, s.attention_kernel = family;
  }
  return s;
}

}  // namespace dsp::sim
