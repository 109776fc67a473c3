// SPDX-License-Identifier: Apache-2.0
// ds-plan passes: the graph passes, in the order a pipeline runs them, from the one registry.
#include <algorithm>
#include <iostream>
#include <memory>

#include "apps/ds-plan/command.h"
#include "core/json/document.h"
#include "sim/passes/pipeline.h"

namespace dsp::app {

Command AddPassesCommand(CLI::App& root) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* app = root.add_subcommand(
      "passes", "list the graph passes (visualize graph --passes/--dump-after take these names)");
  app->add_option("--format", *format, "output format")->check(CLI::IsMember({"text", "json"}));
  return Command{app, [format] {
                   const auto& passes = sim::passes::RegisteredPasses();
                   if (*format == "json") {
                     Json list = Json::array();
                     for (const auto& p : passes) {
                       list.push_back({{"name", p.name}, {"description", p.description}});
                     }
                     std::cout << list.dump(2) << "\n";
                     return kExitOk;
                   }
                   size_t width = 0;
                   for (const auto& p : passes) width = std::max(width, p.name.size());
                   for (const auto& p : passes) {
                     std::cout << p.name << std::string(width + 2 - p.name.size(), ' ')
                               << p.description << "\n";
                   }
                   return kExitOk;
                 }};
}

}  // namespace dsp::app
