// SPDX-License-Identifier: Apache-2.0
// The PyTorch profiler (Kineto) trace reader: kernel classes by name and launch context, exposed
// communication, profiler steps; checked on small traces written here, on the H200 traces
// scripts/gpu-ground-truth.py recorded (docs/measurements/h200-steps/traces) and on a public
// 2-rank DDP trace from Holistic Trace Analysis' test data (tests/data/traces/SOURCES.md).
#include "sim/calibrate/kineto_trace.h"

#include <gtest/gtest.h>

#include <string>

namespace dsp::sim {
namespace {

std::string Path(const std::string& relative) { return std::string(DSP_SOURCE_DIR) + "/" + relative; }

// An all-reduce over ranks 0 and 1 with its calls and kernel time.
void ExpectAllReduceOnRanks01(const TraceCollective& c, int64_t calls, double seconds, double tolerance) {
  EXPECT_EQ(c.kind, "all_reduce");
  EXPECT_EQ(c.group, "[0, 1]");
  EXPECT_EQ(c.calls, calls);
  EXPECT_NEAR(c.seconds, seconds, tolerance);
}

TEST(KinetoTraceTest, ClassifiesKernelsByName) {
  // Names as they appear in the H200 traces (cuBLAS 13 nvjet GEMMs, cuDNN SDPA, CUTLASS grouped
  // GEMM, torch's fused AdamW) and in NCCL's kernels.
  EXPECT_EQ(ClassifyKernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "kernel"), TraceClass::kGemm);
  EXPECT_EQ(ClassifyKernel("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26", "kernel"),
            TraceClass::kAttention);
  EXPECT_EQ(ClassifyKernel("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", "kernel"),
            TraceClass::kAttention);
  EXPECT_EQ(ClassifyKernel("_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13"
                           "GemmUniversalINS5_17GroupProblemShape",
                           "kernel"),
            TraceClass::kGemm);
  EXPECT_EQ(ClassifyKernel("void at::cuda::detail::prepare_grouped_gemm_data<cutlass::bfloat16_t>", "kernel"),
            TraceClass::kMemoryBound);
  EXPECT_EQ(ClassifyKernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                           "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
                           "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>>",
                           "kernel"),
            TraceClass::kOptimizer);
  // A C++ lambda in an elementwise kernel's name is not the LAMB optimizer.
  EXPECT_EQ(ClassifyKernel("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
                           "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>>",
                           "kernel"),
            TraceClass::kMemoryBound);
  EXPECT_EQ(ClassifyKernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "kernel"),
            TraceClass::kCommunication);
  EXPECT_EQ(ClassifyKernel("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy"), TraceClass::kHostCopy);
  EXPECT_EQ(ClassifyKernel("Memcpy DtoD (Device -> Device)", "gpu_memcpy"), TraceClass::kMemoryBound);
  EXPECT_EQ(ClassifyKernel("Memset (Device)", "gpu_memset"), TraceClass::kMemoryBound);
}

TEST(KinetoTraceTest, NamesCollectivesFromTheArgumentOrTheKernel) {
  EXPECT_EQ(CollectiveOfKernel("ncclDevKernel_Generic", "_reduce_scatter_base"), "reduce_scatter");
  EXPECT_EQ(CollectiveOfKernel("ncclDevKernel_SendRecv(ncclDevKernelArgs)", "all_to_allv"), "all_to_all");
  EXPECT_EQ(CollectiveOfKernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgs)", ""), "all_gather");
  EXPECT_EQ(CollectiveOfKernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", ""), "send_recv");
  EXPECT_EQ(CollectiveOfKernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t", ""), "broadcast");
}

// A hand-made trace: a GEMM, an all-reduce half hidden behind it, an elementwise kernel launched
// inside torch.optim's step annotation, over two profiler steps.
Json SmallTrace() {
  return Json::parse(R"({
    "deviceProperties": [{"name": "Test GPU"}],
    "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 500},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "ts": 500, "dur": 500},
      {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "ts": 300, "dur": 50},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 5, "args": {"correlation": 1}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 5, "args": {"correlation": 2}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 310, "dur": 5, "args": {"correlation": 3}},
      {"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "ts": 100, "dur": 100, "args": {"correlation": 1}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ts": 150, "dur": 100,
       "args": {"correlation": 2, "Collective name": "allreduce", "Process Group Ranks": "[0, 1]",
                "In msg nelems": 1000, "Out msg nelems": 1000, "dtype": "BFloat16"}},
      {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": 400, "dur": 20,
       "args": {"correlation": 3}}
    ]})");
}

TEST(KinetoTraceTest, SplitsTimeAndExposesCommunicationNotHiddenByCompute) {
  auto s = SummarizeTrace(SmallTrace());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->gpu, "Test GPU");
  EXPECT_EQ(s->steps, 2);
  EXPECT_EQ(s->kernels, 3);
  EXPECT_NEAR(s->seconds.at(TraceClass::kGemm), 100e-6, 1e-12);
  // Launched inside Optimizer.step#: the optimizer's, whatever its name.
  EXPECT_NEAR(s->seconds.at(TraceClass::kOptimizer), 20e-6, 1e-12);
  ASSERT_EQ(s->collectives.size(), 1u);
  const TraceCollective& ar = s->collectives[0];
  ExpectAllReduceOnRanks01(ar, 1, 100e-6, 1e-12);
  EXPECT_NEAR(ar.exposed_seconds, 50e-6, 1e-12);  // 150-200 under the GEMM, 200-250 alone
  EXPECT_DOUBLE_EQ(ar.bytes, 2000);
  EXPECT_NEAR(s->span_seconds, 320e-6, 1e-12);  // 100 .. 420
  EXPECT_NEAR(s->busy_seconds, 170e-6, 1e-12);  // 100-250 and 400-420
  EXPECT_NEAR(s->PerStep(s->idle_seconds()), 75e-6, 1e-12);
}

TEST(KinetoTraceTest, RefusesWhatIsNotAGpuTrace) {
  EXPECT_FALSE(SummarizeTrace(Json::parse(R"({"foo": 1})")).ok());
  auto cpu_only = SummarizeTrace(Json::parse(R"({"traceEvents": [{"cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1}]})"));
  ASSERT_FALSE(cpu_only.ok());
  EXPECT_NE(cpu_only.error().message.find("no GPU kernel"), std::string::npos);
  auto missing = ReadTraceFile(Path("tests/data/traces/no-such-trace.json.gz"));
  EXPECT_FALSE(missing.ok());
}

// The H200 traces: every GPU event lands in one class, and the traced step is the step the script
// timed with CUDA events (the median of six, docs/measurements/h200-steps/steps.tsv): the kernels
// fill 90 % of it or more (the rest are host gaps: GPU idle) and the GPU span is at most 15 % longer (the
// profiler's own launch overhead widens the host gaps of the 2,400-kernel Llama-3.2-1B step).
TEST(KinetoTraceTest, H200TraceSpanIsTheTimedStep) {
  struct Case {
    const char* trace;
    double median_ms;
  };
  for (const Case& c : {Case{"llama-3-8b-4layers-mb1-s8192-none-sdpa", 177.391},
                        Case{"llama-3-8b-4layers-mb1-s8192-full-sdpa", 200.934},
                        Case{"llama-3.2-1b-mb1-s4096-none-sdpa", 103.188},
                        Case{"qwen3-30b-a3b-4layers-mb1-s8192-none-sdpa", 156.645}}) {
    auto doc = ReadTraceFile(Path("docs/measurements/h200-steps/traces/") + c.trace + ".trace.json.gz");
    ASSERT_TRUE(doc.ok()) << doc.error().message;
    auto s = SummarizeTrace(*doc);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->gpu, "NVIDIA H200");
    EXPECT_EQ(s->steps, 1);
    EXPECT_GE(s->span_seconds * 1e3 / c.median_ms, 0.97) << c.trace;
    EXPECT_LE(s->span_seconds * 1e3 / c.median_ms, 1.15) << c.trace;
    EXPECT_GE(s->busy_seconds * 1e3 / c.median_ms, 0.90) << c.trace;
    EXPECT_LE(s->busy_seconds * 1e3 / c.median_ms, 1.03) << c.trace;
    double classes = 0;
    for (const auto& [k, v] : s->seconds) classes += v;
    // One stream: the kernels never overlap, so their sum is the union.
    EXPECT_NEAR(classes, s->busy_seconds, 0.01 * s->busy_seconds) << c.trace;
    // One GPU: no collective, no host copy beyond the loss's one scalar.
    EXPECT_TRUE(s->collectives.empty()) << c.trace;
    EXPECT_GT(s->seconds[TraceClass::kGemm], 0.2 * s->busy_seconds) << c.trace;
    EXPECT_GT(s->seconds[TraceClass::kAttention], 0.0) << c.trace;
    EXPECT_GT(s->seconds[TraceClass::kOptimizer], 0.0) << c.trace;
    // torch 2.11's sdpa ran cuDNN's kernels on the H200.
    EXPECT_EQ(s->attention_kernel, "cudnn") << c.trace;
  }
}

TEST(KinetoTraceTest, NamesTheAttentionKernelFamily) {
  EXPECT_EQ(AttentionKernelOf("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128"), "cudnn");
  EXPECT_EQ(AttentionKernelOf("void flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwd<...>>"), "cudnn");
  EXPECT_EQ(AttentionKernelOf("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>"), "flash2");
  EXPECT_EQ(AttentionKernelOf("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>"), "flash2");
  EXPECT_EQ(AttentionKernelOf("fmha_cutlassF_bf16_aligned_64x128_rf_sm80"), "");
}

// A trace ds-plan did not write: rank 0 of a 2-rank DDP run (Holistic Trace Analysis test data).
// Expected figures computed from the file with Python's json module: 15 NCCL all-reduce kernels
// (46.76 ms) and 6 broadcasts on process group [0, 1], 3 ProfilerStep annotations, 3774 GPU events.
TEST(KinetoTraceTest, ReadsAPublicMultiGpuTrace) {
  auto doc = ReadTraceFile(Path("tests/data/traces/hta-ddp-2rank-rank0.trace.json.gz"));
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  auto s = SummarizeTrace(*doc);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->gpu, "NVIDIA A100-PG509-200");
  EXPECT_EQ(s->steps, 3);
  EXPECT_EQ(s->kernels, 3774);
  ASSERT_EQ(s->collectives.size(), 2u);
  const TraceCollective& ar = s->collectives[0];
  ExpectAllReduceOnRanks01(ar, 15, 46.762159e-3, 1e-8);
  EXPECT_DOUBLE_EQ(ar.bytes, 306684384.0);  // fp32 gradient buckets, "In msg nelems" x 4
  EXPECT_LE(ar.exposed_seconds, ar.seconds);
  EXPECT_GT(ar.exposed_seconds, 0.0);
  EXPECT_EQ(s->collectives[1].kind, "broadcast");
  EXPECT_EQ(s->collectives[1].calls, 6);
  EXPECT_NEAR(s->span_seconds, 660.551e-3, 1e-5);
}

}  // namespace
}  // namespace dsp::sim
