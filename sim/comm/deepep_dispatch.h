// SPDX-License-Identifier: Apache-2.0
// DeepEP's normal (high-throughput) dispatch and combine, as NeMo AutoModel's DeepEP experts run
// them (nemo_automodel/components/moe/megatron/fused_a2a.py at NVIDIA-NeMo/Automodel 8d9bfb90:
// Buffer.get_dispatch_layout, then Buffer.dispatch / Buffer.combine). Unlike a plain all-to-all of
// k rows per token, DeepEP sends a token once to every rank that holds at least one of its experts
// (is_token_in_rank) and, across nodes, once over RDMA to every node that does
// (num_tokens_per_rdma_rank), to the GPU of the same local index there, which forwards it over
// NVLink (deepseek-ai/DeepEP README, "normal kernels"; DeepSeek-V3 technical report, arXiv
// 2412.19437, section 3.2.2). The combine sends each rank's locally reduced row back the same
// way. So the bytes depend on how many distinct ranks and nodes a token's k experts fall on,
// which depends on the router.
#pragma once

#include <cstdint>

#include "core/layout/groups.h"
#include "sim/comm/group_links.h"
#include "sim/cost/cluster.h"

namespace dsp::sim {

// How a token's k experts are chosen, for the fan-out.
enum class MoeRouting {
  kUniform,       // a learned router, modelled as k distinct experts drawn uniformly (from the
                  // topk_group of n_group expert groups drawn uniformly first, where the model
                  // limits its routing to groups: DeepSeek-V3's 4 of 8)
  kFakeBalanced,  // AutoModel's FakeBalancedGate (moe/layers.py): token t gets experts
                  // (t k + j) mod E, j < k: k consecutive experts, so few ranks and one node
};

// Per token, averaged over tokens and over the source ranks of the group.
struct DispatchFanout {
  double ranks = 0;         // distinct EP ranks holding one of its experts: DeepEP rows sent
  double nodes = 0;         // distinct nodes among them
  double remote_nodes = 0;  // ... other than the source rank's: RDMA rows sent
  int group_nodes = 1;       // nodes the group spans
  int ranks_per_node = 1;    // the fewest group members on one of them
};

// `group` is one EP group's global ranks in order; member i holds the contiguous experts
// [i E / ep, (i + 1) E / ep) (the experts' Shard(0) placement over the EP mesh).
DispatchFanout DeepEpFanout(int64_t experts, int64_t top_k, const RankGroup& group, int gpus_per_node,
                            MoeRouting routing, int64_t n_group = 1, int64_t topk_group = 1);

// Seconds of one dispatch (or one combine) of `tokens` tokens of `row_bytes` each from every rank
// of one group: inside a node, an all-to-all of the fan-out's rows over NVLink (`g.link`, the
// group's own); across nodes, the RDMA rows through the rank's own NIC (`inter_node.busbw`, capped
// by `max_rails` NICs a node) and the NVLink forwarding (`intra_node.busbw`), which DeepEP
// pipelines, so the slower of the two, plus the call's latency.
double DeepEpCallSeconds(const DispatchFanout& fanout, double tokens, double row_bytes, const GroupLinkInfo& g,
                         const LinkSpec& intra_node, const LinkSpec& inter_node);

}  // namespace dsp::sim
