// UsageError (command.h), shared by ds-plan and ds-plan-exec so both report usage the same way.
#include <iostream>

#include "apps/ds-plan/command.h"

namespace dsp::app {

int UsageError(const std::string& message) {
  std::cerr << "ds-plan: error: " << message << "\n";
  return kExitUsage;
}

}  // namespace dsp::app
