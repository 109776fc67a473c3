// SPDX-License-Identifier: Apache-2.0
#include "exec/launch/plan_hash.h"

#include <gtest/gtest.h>

namespace dsp::exec {
namespace {

PlanFingerprint Base() {
  PlanFingerprint fp;
  fp.config_text = "{\"tensor_parallel\": {\"autotp_size\": 2}}";
  fp.model_text = "";
  fp.world_size = 4;
  fp.flags = {"steps=3", "backend=gloo", "seed=1", "inject=none"};
  return fp;
}

TEST(PlanHashTest, SameInputsSameHash) {
  EXPECT_EQ(PlanHash(Base()), PlanHash(Base()));
  EXPECT_EQ(HashHex(PlanHash(Base())).size(), 16u);
  EXPECT_EQ(HashHex(0x1234), "0000000000001234");
}

TEST(PlanHashTest, EveryFieldCounts) {
  const uint64_t base = PlanHash(Base());
  auto fp = Base();
  fp.config_text += " ";
  EXPECT_NE(PlanHash(fp), base) << "config bytes";
  fp = Base();
  fp.model_text = "{}";
  EXPECT_NE(PlanHash(fp), base) << "model";
  fp = Base();
  fp.world_size = 8;
  EXPECT_NE(PlanHash(fp), base) << "world";
  fp = Base();
  fp.flags[2] = "seed=2";
  EXPECT_NE(PlanHash(fp), base) << "flags";
  fp = Base();
  fp.flags.push_back("");
  EXPECT_NE(PlanHash(fp), base) << "an extra empty flag";
}

TEST(PlanHashTest, FieldBoundariesMatter) {
  // Length prefixes: moving bytes between fields changes the hash.
  PlanFingerprint a = Base(), b = Base();
  a.config_text = "ab";
  a.model_text = "c";
  b.config_text = "a";
  b.model_text = "bc";
  EXPECT_NE(PlanHash(a), PlanHash(b));
}

}  // namespace
}  // namespace dsp::exec
