// SPDX-License-Identifier: Apache-2.0
#include "core/config/package_version.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

TEST(PackageVersionTest, ComparesAsPackagingDoes) {
  auto v = [](const char* t) { return *PackageVersion::Parse(t); };
  EXPECT_TRUE(v("2.6.0+cu124") >= v("2.6"));
  EXPECT_TRUE(v("2.6.0a0+gitabc") < v("2.6"));
  EXPECT_TRUE(v("5.10.1.dev0") < v("5.10.1"));
  EXPECT_TRUE(v("5.8.0rc1") < v("5.8.0"));
  EXPECT_TRUE(v("2.10") >= v("2.9"));
  EXPECT_FALSE(PackageVersion::Parse("latest"));
  EXPECT_FALSE(PackageVersion::Parse("2.x"));
}

}  // namespace
}  // namespace dsp
