// SPDX-License-Identifier: Apache-2.0
// A cluster description: what one GPU can do and how fast its links are. Read from cluster.json
// (schemas/cluster.schema.json); presets under samples/clusters/. Units are in the names.
#pragma once

#include <string>

#include "core/json/document.h"
#include "core/util/result.h"

namespace dsp::sim {

struct GpuSpec {
  std::string name;                      // "H100 SXM"
  double peak_bf16_flops_per_second = 0; // dense tensor-core peak (not the sparse figure)
  double hbm_bytes = 0;                  // usable device memory
  double hbm_bytes_per_second = 0;       // HBM bandwidth
  int sm_count = 0;                      // streaming multiprocessors: GEMM wave quantization (0 = off)
  // CUDA compute capability as major * 10 + minor ("8.0" -> 80; 0 = not given): bf16 tensor cores
  // need 8.0 (Ampere), and torch before 2.4 reports bf16 unsupported below it.
  int compute_capability = 0;
  double kernel_overhead_seconds = 0;    // fixed cost of every kernel (launch, ramp-up, tail)
  // The clock tensor-core-bound kernels (GEMMs, fused attention) sustain, relative to the one the
  // cluster's efficiencies were measured at: a GPU run under a lower power limit than the
  // measurement's clocks down on them (HBM-bound kernels hardly draw the power). 1 = the same;
  // `ds-plan calibrate --fit gpu.compute_clock_ratio` fits it from runs on the machine.
  double compute_clock_ratio = 1.0;
  // Dense FP8 tensor-core peak (H100/H200 SXM 1979 TFLOP/s, B200 4500). 0: the GPU has no FP8
  // tensor cores (A100, V100) and --fp8 is refused; absent (-1): twice the bf16 peak, Hopper's and
  // Blackwell's ratio, with a note. Fp8PeakFlops() resolves it.
  double peak_fp8_flops_per_second = -1;
  bool fp8_peak_given() const { return peak_fp8_flops_per_second >= 0; }
  double Fp8PeakFlops() const {
    return peak_fp8_flops_per_second >= 0 ? peak_fp8_flops_per_second : 2.0 * peak_bf16_flops_per_second;
  }
};

// One level of the network, as NCCL sees it: bus bandwidth per GPU (nccl-tests' busbw, what a
// large collective achieves) and a per-call latency.
struct LinkSpec {
  double busbw_bytes_per_second = 0;
  double latency_seconds = 0;      // per call: launch and the algorithm's fixed start-up
  double hop_latency_seconds = 0;  // per algorithm step over this link (NCCL's per-hop latency):
                                   // a ring of n ranks takes n - 1 steps (2(n - 1) to all-reduce)
  // Network only: how many of a node's rails one collective drives at once (NCCL runs one ring
  // channel per rail when k ranks of the group share a node); 0 = as many as the group has ranks
  // on the node.
  double max_rails = 0;
};

// Measured efficiency factors (1.0 = datasheet peak); defaults and their measurements are in docs/cost-model.md.
struct Efficiency {
  double matmul = 0.0;     // achieved / peak for large GEMMs
  double memory = 0.0;     // achieved / peak HBM bandwidth for memory-bound operators
  double attention = 0.0;  // achieved / peak for fused attention (cuDNN, FlashAttention-3); 0 = same as matmul
  double attention_flash2 = 0.0;  // ... for FlashAttention-2's kernels; 0 = same as attention
  double fp8_matmul = 0.0;  // achieved / FP8 peak for FP8 GEMMs; 0 = same as matmul (an assumption)
};

// How long the host takes to issue one kernel of an eager PyTorch step (the Python module code,
// the dispatcher, the launch): in forward, and in autograd's backward (C++, fewer layers of
// Python). When a phase's kernels are shorter than that, the GPU waits for the host and the phase
// takes the host's time. A property of the host CPU and the framework's eager code, so measured on
// the machine: docs/validation.md "One GPU, measured". 0 = not modelled (the GPU never waits).
struct HostLaunch {
  double forward_seconds_per_kernel = 0;
  double backward_seconds_per_kernel = 0;
  // DeepSpeed ZeRO-3 (eager, not DeepCompile): the host's work for each module whose parameters
  // it all-gathers (the pre-forward/pre-backward hooks' fetch_sub_module and the post hooks'
  // release_sub_module, Python bookkeeping per parameter, the all-gather's launch). The host waits
  // for the gathers it issued (partitioned_param_coordinator.py fetch_sub_module synchronizes on
  // the oldest fetch event once more than __max_ongoing_fetch_events = 2 are outstanding), so the
  // gather stream idles for this between gathers. 0 = not modelled.
  double zero3_fetch_seconds = 0;
};

// Device memory a training process cannot use for tensors: the CUDA context, NCCL's and cuBLAS's
// workspaces (reserved_bytes), and what PyTorch's caching allocator loses to fragmentation (a
// fraction of the tensors it holds). The verdict compares peak x (1 + fragmentation) +
// reserved_bytes with the HBM.
struct MemoryAllowance {
  double reserved_bytes = 0;
  double fragmentation = 0;
};

struct Cluster {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 8;
  LinkSpec intra_node;     // NVLink / NVSwitch
  LinkSpec inter_node;     // network, per GPU (one rail per GPU)
  double host_to_device_bytes_per_second = 0;  // PCIe, for CPU offload traffic (pinned host memory)
  // Copies to and from pageable (unpinned) host memory: staged through a driver buffer and
  // synchronous. 0 = host_to_device / 6, the speed-up DeepSpeed measured when ZeRO-Offload's
  // host-to-device copies moved to pinned memory (PR #5301, one GPU).
  double pageable_copy_bytes_per_second = 0;
  double PageableCopyBytesPerSecond() const {
    return pageable_copy_bytes_per_second > 0 ? pageable_copy_bytes_per_second
                                              : host_to_device_bytes_per_second / 6.0;
  }
  // Parameters per second that DeepSpeed's CPU Adam updates for one GPU's partition, one process
  // on its own (what the node's ranks together get is cpu_optimizer_node_params_per_second). Used
  // only with offload_optimizer.
  double cpu_optimizer_params_per_second = 0;
  // Parameters per second CPU Adam updates on one node's host, all its ranks together; 0 = not
  // given (each rank at cpu_optimizer_params_per_second). DeepSpeed's launcher sets no
  // OMP_NUM_THREADS (launcher/launch.py does only with --bind_cores_to_rank), so every rank's CPU
  // Adam (csrc/adam/cpu_adam_impl.cpp, `#pragma omp parallel for` over each tile) spreads over all
  // the host's cores at once with the node's other ranks: together they get the host's rate, not
  // one process's rate each. A rank gets min(cpu_optimizer_params_per_second, this / ranks on the node).
  double cpu_optimizer_node_params_per_second = 0;
  // Host memory of one node, shared by its GPUs' offloaded states and host checkpoints; 0 = not
  // given (not checked).
  double host_memory_bytes = 0;
  Efficiency efficiency;
  MemoryAllowance memory;
  HostLaunch host;
};

// Errors name the missing or invalid key (JSON pointer).
Result<Cluster> ParseCluster(const Json& json);

}  // namespace dsp::sim
