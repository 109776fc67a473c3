// SPDX-License-Identifier: Apache-2.0
// Small string helpers shared by diagnostics and rules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dsp {

// Levenshtein distance, used for "did you mean" suggestions.
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// `text` cut to at most `max_bytes` (at a UTF-8 boundary) with "... (N bytes)" appended, so a
// message that quotes a user's value never grows with it; unchanged when it already fits.
std::string ClipForDisplay(std::string_view text, size_t max_bytes);

// `text` with every control character (C0, DEL) written as \xNN, so a key or path from a file
// cannot move the cursor, recolour or retitle the terminal it is printed to.
std::string EscapeControl(std::string_view text);

// "a, b and c" / "a, b or c".
std::string JoinList(const std::vector<std::string>& items, std::string_view last_sep = " and ");

// Decimal list of the positive divisors of n: "1, 2, 4, 8".
std::string DivisorList(long long n);

// One number through a printf format with exactly one double conversion ("%.2f", "%.1f %%").
std::string FormatNumber(const char* format, double value);

// Bytes as decimal gigabytes with two decimals: "12.35 GB".
std::string FormatGb(double bytes);

// JSON pointer helpers (RFC 6901).
std::string PointerEscape(std::string_view token);
std::string PointerJoin(std::string_view parent, std::string_view token);
std::string PointerParent(std::string_view pointer);
std::vector<std::string> PointerTokens(std::string_view pointer);

}  // namespace dsp
