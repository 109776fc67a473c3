// SPDX-License-Identifier: Apache-2.0
// Every source file carries the project's SPDX license identifier (issue 16), and the LICENSE file
// is the Apache License 2.0 it names (the license of DeepSpeed, whose behaviour ds-plan models).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace dsp {
namespace {

namespace fs = std::filesystem;

std::string Head(const fs::path& p, size_t bytes) {
  std::ifstream in(p);
  std::string text(bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(bytes));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

TEST(LicenseTest, EverySourceFileHasAnSpdxHeader) {
  const fs::path root = DSP_SOURCE_DIR;
  size_t checked = 0;
  for (const char* dir : {"apps", "core", "sim", "exec", "bench", "tests", "scripts", "schemas", "fuzz"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      const fs::path& p = entry.path();
      const std::string ext = p.extension().string();
      if (ext != ".cc" && ext != ".h" && ext != ".sh" && ext != ".py" && p.filename() != "CMakeLists.txt") continue;
      ++checked;
      EXPECT_NE(Head(p, 300).find("SPDX-License-Identifier: Apache-2.0"), std::string::npos) << p;
    }
  }
  EXPECT_GT(checked, 300u);
  EXPECT_NE(Head(root / "LICENSE", 200).find("Apache License"), std::string::npos);
  EXPECT_NE(Head(root / "LICENSE", 200).find("Version 2.0, January 2004"), std::string::npos);
}

}  // namespace
}  // namespace dsp
