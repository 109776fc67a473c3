// SPDX-License-Identifier: Apache-2.0
// Plain-text views of a session for explore's line mode (and its golden transcripts): the summary,
// memory, step time, collectives, a rank's groups, diagnostics, the diff against the pinned
// baseline and tune's list. Every number is the session's; nothing here computes a plan.
#pragma once

#include <string>

#include "sim/session/session.h"
#include "sim/tune/tune.h"

namespace dsp::sim {

// "world 64 (8 nodes x 8): tp=1 dp=64 ... zero=3" from validate's layout line.
std::string LayoutLine(const Evaluation& e);
std::string RenderSummary(const Session& session);
std::string RenderMemory(const Session& session);
std::string RenderTime(const Session& session);
std::string RenderCollectives(const Session& session);
// The groups containing `rank`, with the ranks it talks to and whether they cross a node.
std::string RenderRankGroups(const Session& session, int64_t rank);
std::string RenderDiagnostics(const Session& session);
// The baseline against now: every number with its delta, then the config keys that changed.
std::string RenderDiff(const Session& session);
std::string RenderTune(const TuneResult& result);

}  // namespace dsp::sim
