// SPDX-License-Identifier: Apache-2.0
// ConfigPassesValidation (tune's in-memory path) gives ValidateText's verdict on every sample
// config, valid and broken, at several world sizes.
#include "core/validate/validator.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/util/file_io.h"

namespace dsp {
namespace {

TEST(ValidatorTest, InMemoryVerdictMatchesValidateText) {
  int compared = 0, rejected = 0;
  const std::filesystem::path root = std::filesystem::path(DSP_SOURCE_DIR) / "samples/configs";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".json") continue;
    auto text = ReadFile(entry.path().string());
    ASSERT_TRUE(text.ok());
    Json config = Json::parse(*text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (config.is_discarded()) continue;  // the syntax-error sample has no in-memory form
    for (int64_t world : {4, 8, 16}) {
      ValidateOptions o;
      o.world_size = world;
      o.gpus_per_node = 8;
      const bool text_verdict = ValidateText(entry.path().string(), *text, o).valid();
      EXPECT_EQ(ConfigPassesValidation(config, o), text_verdict) << entry.path() << " at " << world;
      ++compared;
      rejected += text_verdict ? 0 : 1;
    }
  }
  EXPECT_GT(compared, 30);
  EXPECT_GT(rejected, 10);  // the broken samples are there and are rejected both ways
}

}  // namespace
}  // namespace dsp
