// SPDX-License-Identifier: Apache-2.0
// A PyTorch profiler (Kineto) Chrome trace, read for what the cost model predicts: the GPU time of
// one training step split into the classes ds-plan prices separately (GEMMs, fused attention,
// memory-bound kernels, the optimizer step, host copies, each NCCL collective and its group) and
// the time the GPU sat idle. What `ds-plan compare` and `calibrate --trace` read.
//
// The trace format is torch.profiler's export_chrome_trace (Kineto's ChromeTraceLogger): events
// of `cat` "kernel", "gpu_memcpy" and "gpu_memset" run on the GPU with `ts`/`dur` in microseconds;
// "cuda_runtime"/"cuda_driver" launches carry the `correlation` that ties a kernel to the CPU time
// it was launched at; torch.optim wraps every optimizer's step in a record_function named
// "Optimizer.step#<Class>.step" (torch/optim/optimizer.py, Optimizer.profile_hook_step); NCCL
// kernels carry "Collective name", "Process Group Ranks", "In msg nelems" and "dtype" since
// PyTorch 2.1 (record_param_comms, torch/csrc/distributed/c10d/ParamCommsUtils.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/util/result.h"

namespace dsp::sim {

// What bounds a kernel's time, as the cost model prices it.
enum class TraceClass { kGemm, kAttention, kMemoryBound, kOptimizer, kHostCopy, kCommunication };

// "gemm", "attention", "memory-bound", "optimizer", "host copies", "communication".
const char* TraceClassName(TraceClass c);

// The class of a GPU event by its kernel name and `cat` alone (no launch context): NCCL kernels,
// then fused attention (FlashAttention, cuDNN SDPA, memory-efficient attention), then tensor-core
// GEMMs and convolutions (cuBLAS nvjet/xmma/gemm, CUTLASS), then fused optimizers; the rest is
// memory-bound. Host-device memcpys are host copies.
TraceClass ClassifyKernel(const std::string& name, const std::string& cat);

// The family of a fused-attention kernel by its name, as --attention names it: "cudnn" for cuDNN's
// SDPA ("cudnn_generated_fort_native_sdpa_sm90_flash_*") and FlashAttention-3's Hopper kernels
// ("flash::FlashAttnFwdSm90"), "flash2" for FlashAttention-2 ("flash_fwd_kernel",
// "pytorch_flash::flash_bwd_dq_dk_dv_loop_kernel"), "" for the rest (memory-efficient attention).
std::string AttentionKernelOf(const std::string& name);

// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv" (the
// names of sim/comm/collectives.h CollectiveKindName), from the kernel's "Collective name" argument
// where the trace has one, else from the NCCL kernel name; "other" when neither says.
std::string CollectiveOfKernel(const std::string& name, const std::string& collective_arg);

struct TraceCollective {
  std::string kind;   // CollectiveOfKernel
  std::string group;  // "Process Group Ranks" ("[0, 1]"), or "" when the trace does not say
  int64_t calls = 0;
  double seconds = 0;          // kernel time, summed
  double exposed_seconds = 0;  // the part no compute kernel overlaps
  double bytes = 0;            // message bytes, summed (larger of in/out elements x dtype size)
};

struct TraceSummary {
  std::string gpu;       // deviceProperties[0].name, "" if absent
  int64_t steps = 1;     // ProfilerStep#N annotations, 1 when there are none
  int64_t kernels = 0;   // GPU events (kernels, memcpys, memsets)
  double span_seconds = 0;  // first GPU event's start to the last one's end
  double busy_seconds = 0;  // the union of every GPU event's interval
  std::map<TraceClass, double> seconds;  // summed durations per class
  std::vector<TraceCollective> collectives;  // sorted by kind, then group
  // The attention kernel family that took the most attention time (AttentionKernelOf), "" if none.
  std::string attention_kernel;
  // Per step: totals divided by `steps`.
  double PerStep(double total) const { return total / static_cast<double>(steps < 1 ? 1 : steps); }
  double idle_seconds() const { return span_seconds - busy_seconds; }
};

// Reads a trace file, plain JSON or gzip-compressed (".gz", or the gzip magic bytes), at most
// `max_bytes` once decompressed. Errors name the file.
Result<Json> ReadTraceFile(const std::string& path, size_t max_bytes = size_t{512} << 20);

// Classifies every GPU event of a parsed trace. Errors: no "traceEvents" array, or no GPU event
// (a CPU-only trace has nothing to compare).
Result<TraceSummary> SummarizeTrace(const Json& trace);

}  // namespace dsp::sim
