// SPDX-License-Identifier: Apache-2.0
// Folded stacks ("main;work;spin 123\n"), the text format of flamegraph.pl, speedscope and
// inferno, from the profile model.
#ifndef WARPSCOPE_PROFILING_FOLDED_H_
#define WARPSCOPE_PROFILING_FOLDED_H_

#include <cstddef>
#include <string>

#include "profiling/profile.h"

namespace warpscope::profiling {

// A frame's name in folded stacks: Python frames "fn (file.py:12)" (base name of the file; no
// ":line" when unknown), kernels "name_[k]", JIT code "name_[j]" (the suffixes flamegraph.pl
// colours by), others their function name; ';' and line breaks become spaces.
std::string FoldedName(const Frame& frame);

// One line per distinct stack with a positive total of sample type `value` (root first, frame
// names joined by ';', then a space and the total), sorted by the stack text. "" when no sample
// has a positive value or `value` is out of range.
std::string FoldedStacks(const Profile& profile, size_t value);

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_FOLDED_H_
