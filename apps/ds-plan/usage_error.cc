// SPDX-License-Identifier: Apache-2.0
// UsageError (command.h), shared by ds-plan and ds-plan-exec so both report usage the same way.
#include <iostream>

#include "apps/ds-plan/command.h"
#include "apps/ds-plan/terminal_color.h"

namespace dsp::app {

int UsageError(const std::string& message) {
  if (ColorFor(stderr)) {
    std::cerr << "\033[1mds-plan:\033[0m \033[1;31merror:\033[0m " << message << "\n";
  } else {
    std::cerr << "ds-plan: error: " << message << "\n";
  }
  return kExitUsage;
}

}  // namespace dsp::app
