// SPDX-License-Identifier: Apache-2.0
// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex. Plan snapshots record the hash of every
// input file so `ds-plan check` can say which input changed; SHA-256 rather than a faster
// non-cryptographic hash because users can compare it with `sha256sum` by hand.
#pragma once

#include <string>
#include <string_view>

namespace dsp {

std::string Sha256Hex(std::string_view data);

}  // namespace dsp
