// SPDX-License-Identifier: Apache-2.0
#include "sim/graph/verifier.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace dsp::sim::graph {

std::vector<Error> VerifyGraphErrors(const Graph& graph) {
  std::vector<Error> errors;
  auto fail = [&errors](const Node* n, const std::string& message) {
    errors.push_back(Error{"%" + n->name + ": " + message});
  };
  // Position of every node already visited: an argument must be in here when its user is checked.
  std::unordered_map<const Node*, size_t> position;
  std::unordered_set<std::string> names;
  size_t outputs = 0;
  size_t index = 0;
  for (const Node* n : graph) {
    if (!names.insert(n->name).second) fail(n, "duplicate node name");
    if (n->op.empty()) fail(n, "node has no op");
    if (n->op == ops::kOutput) {
      ++outputs;
      if (!n->users.empty()) fail(n, "the output is used by %" + n->users.front()->name);
    } else if (!n->shape) {
      fail(n, "node has no shape");
    }
    if (n->op == ops::kPlaceholder && !n->args.empty()) fail(n, "placeholder has arguments");
    for (size_t a = 0; a < n->args.size(); ++a) {
      const Node* arg = n->args[a];
      // mul(%x, %x) is one use: report each distinct operand once.
      if (std::find(n->args.begin(), n->args.begin() + a, arg) != n->args.begin() + a) continue;
      if (!graph.Contains(arg)) {
        fail(n, "argument %" + arg->name + " is not in the graph");
        continue;
      }
      if (position.count(arg) == 0) {
        fail(n, "argument %" + arg->name + " is defined later (use before definition)");
      }
      if (std::find(arg->users.begin(), arg->users.end(), n) == arg->users.end()) {
        fail(n, "uses %" + arg->name + " but is missing from its users");
      }
    }
    for (size_t i = 0; i < n->users.size(); ++i) {
      const Node* user = n->users[i];
      if (std::find(n->users.begin(), n->users.begin() + i, user) != n->users.begin() + i) {
        fail(n, "user %" + user->name + " is listed twice");
        continue;
      }
      if (!graph.Contains(user)) {
        fail(n, "dangling user %" + user->name + " is not in the graph");
        continue;
      }
      if (std::find(user->args.begin(), user->args.end(), n) == user->args.end()) {
        fail(n, "lists %" + user->name + " as a user but it does not use this node");
      }
    }
    position.emplace(n, index++);
  }
  if (outputs != 1) {
    errors.push_back(
        Error{"graph has " + std::to_string(outputs) + " output nodes; it needs exactly one"});
  }
  return errors;
}

Status VerifyGraph(const Graph& graph) {
  std::vector<Error> errors = VerifyGraphErrors(graph);
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const Error& e : errors) {
    if (!message.empty()) message += '\n';
    message += e.message;
  }
  return Error{message};
}

}  // namespace dsp::sim::graph
