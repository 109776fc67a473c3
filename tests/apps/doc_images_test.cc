// SPDX-License-Identifier: Apache-2.0
// The pictures in docs/passes.md are generated from the samples: each case of
// docs/images/cases.txt is rendered again and must match the checked-in SVG byte for byte (the
// renderer is deterministic), parse as XML and name every collective it draws.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"
#include "tests/sim/render/xml_check.h"

namespace dsp {
namespace {

struct ImageCase {
  std::string name;
  std::string args;
};

void PrintTo(const ImageCase& c, std::ostream* os) { *os << c.name; }

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<ImageCase> LoadCases() {
  std::vector<ImageCase> cases;
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/docs/images/cases.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty() || Trim(line)[0] == '#') continue;
    const size_t bar = line.find('|');
    if (bar != std::string::npos) cases.push_back({Trim(line.substr(0, bar)), Trim(line.substr(bar + 1))});
  }
  return cases;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class DocImageTest : public ::testing::TestWithParam<ImageCase> {};

TEST_P(DocImageTest, PictureIsCurrent) {
  const ImageCase& c = GetParam();
  const std::string committed = Read(std::string(DSP_SOURCE_DIR) + "/docs/images/" + c.name + ".svg");
  ASSERT_FALSE(committed.empty()) << "missing docs/images/" << c.name << ".svg: run scripts/update-doc-images.sh";
  std::string dir = (std::filesystem::temp_directory_path() / "dsp-docimg-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string out = dir + "/" + c.name + ".svg";
  auto r = testing::RunCli("visualize graph " + c.args + " -o " + out);
  const std::string fresh = Read(out);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(testing::XmlWellFormedError(fresh), "");
  EXPECT_TRUE(fresh == committed) << "docs/images/" << c.name
                                  << ".svg is out of date: run scripts/update-doc-images.sh";
}

INSTANTIATE_TEST_SUITE_P(Docs, DocImageTest, ::testing::ValuesIn(LoadCases()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// The pass pictures show what each pass inserted.
TEST(DocImagesTest, PicturesShowTheInsertedCollectives) {
  const std::string dir = std::string(DSP_SOURCE_DIR) + "/docs/images/";
  EXPECT_EQ(Read(dir + "llama-before.svg").find("copy_to_tp"), std::string::npos);
  EXPECT_NE(Read(dir + "llama-autotp.svg").find("layers_0_self_attn_q_proj_copy_to_tp"), std::string::npos);
  EXPECT_NE(Read(dir + "llama-autosp.svg").find("a2a_o_0"), std::string::npos);
  EXPECT_NE(Read(dir + "llama-zero3.svg").find("allgather_layers_0_self_attn_q_proj_weight"), std::string::npos);
  EXPECT_NE(Read(dir + "mixtral-autoep.svg").find("layers_0_block_sparse_moe_restore"), std::string::npos);
  EXPECT_NE(Read(dir + "mixtral-all.svg").find("tp_average_grad_layers_0_block_sparse_moe_gate_weight"),
            std::string::npos);
}

}  // namespace
}  // namespace dsp
