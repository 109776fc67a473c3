// SPDX-License-Identifier: Apache-2.0
// The JSON extensions DeepSpeed's loader accepts and strict loaders reject. The scan blanks them
// out with spaces (keeping every byte offset and newline), so the strict parser sees plain JSON
// and all reported positions still match the user's file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dsp {

struct LenientScan {
  std::vector<size_t> comment_offsets;
  std::vector<size_t> trailing_comma_offsets;
  std::optional<size_t> unterminated_comment;  // offset of a /* that never closes
};

// Rewrites `text` in place.
LenientScan BlankLenientSyntax(std::string& text);

}  // namespace dsp
