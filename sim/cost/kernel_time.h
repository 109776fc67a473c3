// SPDX-License-Identifier: Apache-2.0
// The time of one kernel on one GPU: a roofline of the operator's FLOPs at the cluster's matmul
// or attention rate and its HBM bytes at the memory rate, GEMM wave quantization over the SMs, and
// a fixed cost per launch. The one pricing function of the cost model: the closed form
// (step_time.cc) and the event schedule (sim/schedule/program.cc) both price every operator with
// it, so they can differ only by what the schedule simulates (overlap, ordering, contention).
// Formulas and sources: docs/cost-model.md "Step time".
#pragma once

#include "sim/cost/cluster.h"
#include "sim/cost/flops.h"
#include "sim/frameworks/attention_kernel.h"

namespace dsp::sim {

/// The rates a cluster's GPU runs kernels at (datasheet peaks x the cluster's efficiencies).
struct KernelRates {
  double matmul_flops_per_second = 0;
  double fp8_matmul_flops_per_second = 0;  // FP8 peak x fp8_matmul efficiency (matmul's if unset)
  double attention_flops_per_second = 0;
  double hbm_bytes_per_second = 0;
  double kernel_overhead_seconds = 0;
  int sm_count = 0;
  // The fused attention kernel the rates are for, and whether the GPU is a Hopper (sm90), where
  // the attention rate follows the shape measured on an H100 (attention_shape.h).
  AttentionKernel attention_kernel = AttentionKernel::kCudnn;
  bool hopper = false;
};
/// An unset (<= 0) efficiency means "datasheet peak", so a hand-filled Cluster still gives
/// finite times; an unset attention efficiency is the matmul one, an unset attention_flash2 the
/// attention one. `attention`: the kernel the run executes (kFramework unresolved: kCudnn's rate).
KernelRates KernelRatesOf(const Cluster& cluster, AttentionKernel attention = AttentionKernel::kCudnn);

struct KernelTime {
  double seconds = 0;
  double memory_bound_seconds = 0;  // = seconds when HBM traffic, not FLOPs, bounds the kernel
  double launches = 0;              // kernels the host issues for it
};

/// Roofline per kernel plus its fixed cost: max(FLOPs / rate, bytes / HBM) + overhead x launches.
/// `backward`: the operator's backward kernels (two GEMMs for a matmul, FlashAttention's
/// recomputing backward, 1.5 x the traffic of a memory-bound kernel).
KernelTime KernelTimeOf(const OperatorCost& op, const KernelRates& rates, bool backward);

/// KernelTimeOf(op, KernelRatesOf(cluster), backward).seconds.
double KernelSeconds(const OperatorCost& op, const Cluster& cluster, bool backward);

}  // namespace dsp::sim
