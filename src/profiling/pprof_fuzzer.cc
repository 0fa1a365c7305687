// SPDX-License-Identifier: Apache-2.0
// Fuzz target for DecodePprof (docs/design/fuzzing.md): the server decodes every profile agents
// send, so the decoder must take any bytes.
//
// Invariants:
//   - Decoding never crashes or throws; an error is InvalidArgument with a message.
//   - A decoded profile is consistent: every sample has one value per sample type and names
//     frames that exist.
//   - EncodePprof accepts it, and decoding that gives the same profile back (the same samples
//     with the same stacks of frames; inlined frames may come back at other indices).
//   - Merging it with itself doubles every total; the flame tree's root total is the sum of the
//     samples' values (sums modulo 2^64, as the code adds them).
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "profiling/flame_tree.h"
#include "profiling/pprof.h"

namespace {

using warpscope::base::StatusCode;
namespace profiling = warpscope::profiling;

void CheckConsistent(const profiling::Profile& p) {
  for (size_t s = 0; s < p.samples.size(); ++s) {
    const profiling::Sample& sample = p.samples[s];
    WARPSCOPE_FUZZ_CHECK(sample.values.size() == p.sample_types.size(),
                         "sample {} has {} values for {} types", s, sample.values.size(),
                         p.sample_types.size());
    for (uint32_t id : sample.stack) {
      WARPSCOPE_FUZZ_CHECK(id < p.frames.size(), "sample {} names frame {} of {}", s, id,
                           p.frames.size());
    }
  }
}

// decode(encode(p)) against p: equal but for where inlined frames sit in `frames`, equal frames
// that several locations' lines decoded to (the encoder interns them once) and inlined frames
// that no sample names.
bool SameProfile(const profiling::Profile& a, const profiling::Profile& b) {
  if (a.sample_types != b.sample_types || a.default_sample_type != b.default_sample_type ||
      a.period_type != b.period_type || a.period != b.period || a.time_nanos != b.time_nanos ||
      a.duration_nanos != b.duration_nanos || a.samples.size() != b.samples.size()) {
    return false;
  }
  for (size_t i = 0; i < a.samples.size(); ++i) {
    const profiling::Sample& x = a.samples[i];
    const profiling::Sample& y = b.samples[i];
    if (x.values != y.values || x.labels != y.labels ||
        profiling::StackFrames(a, x) != profiling::StackFrames(b, y)) {
      return false;
    }
  }
  // Frames no sample names: every one that is not inlined comes back (inlined ones only come
  // with the locations of stacks).
  std::vector<profiling::Frame> fa, fb;
  for (auto [from, to] : {std::pair{&a, &fa}, std::pair{&b, &fb}}) {
    for (const profiling::Frame& f : from->frames) {
      if (!f.inlined) to->push_back(f);
    }
  }
  for (auto* f : {&fa, &fb}) {
    std::sort(f->begin(), f->end());
    f->erase(std::unique(f->begin(), f->end()), f->end());
  }
  return fa == fb;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto decoded = profiling::DecodePprof(warpscope::fuzz::AsText(data, size),
                                        {.max_uncompressed_bytes = 16u << 20});
  if (!decoded) {
    WARPSCOPE_FUZZ_CHECK(decoded.error().code() == StatusCode::kInvalidArgument,
                         "error is not InvalidArgument: {}", decoded.error().ToString());
    WARPSCOPE_FUZZ_CHECK(!decoded.error().message().empty(), "failed silently");
    return 0;
  }
  const profiling::Profile& p = *decoded;
  CheckConsistent(p);

  auto encoded = profiling::EncodePprof(p);
  WARPSCOPE_FUZZ_CHECK(encoded.has_value(), "a decoded profile does not encode: {}",
                       encoded.error().ToString());
  auto again = profiling::DecodePprof(*encoded);
  WARPSCOPE_FUZZ_CHECK(again.has_value(), "the re-encoded profile does not decode: {}",
                       again.error().ToString());
  WARPSCOPE_FUZZ_CHECK(SameProfile(*again, p), "decode(encode(p)) != p ({} vs {} samples, {} vs {} frames)",
                       again->samples.size(), p.samples.size(), again->frames.size(),
                       p.frames.size());

  // Sums modulo 2^64, as the aggregator, Merge and FlameTree add (WrappingAdd): exact whenever
  // the true sums fit, and defined when they do not.
  std::vector<uint64_t> totals(p.sample_types.size(), 0);
  for (const profiling::Sample& s : p.samples) {
    for (size_t v = 0; v < totals.size(); ++v) totals[v] += static_cast<uint64_t>(s.values[v]);
  }
  profiling::FlameNode root = profiling::FlameTree(p, {.max_nodes = 64});
  for (size_t v = 0; v < totals.size(); ++v) {
    WARPSCOPE_FUZZ_CHECK(v < root.total.size() && static_cast<uint64_t>(root.total[v]) == totals[v],
                         "flame tree root total differs from the samples' sum (value {})", v);
  }
  std::vector<profiling::Profile> twice{p, p};
  auto merged = profiling::Merge(twice);
  WARPSCOPE_FUZZ_CHECK(merged.has_value(), "merge of a profile with itself failed: {}",
                       merged.error().ToString());
  std::vector<uint64_t> merged_totals(totals.size(), 0);
  for (const profiling::Sample& s : merged->samples) {
    for (size_t v = 0; v < totals.size(); ++v) {
      merged_totals[v] += static_cast<uint64_t>(s.values[v]);
    }
  }
  for (size_t v = 0; v < totals.size(); ++v) {
    WARPSCOPE_FUZZ_CHECK(merged_totals[v] == 2 * totals[v],
                         "merge of a profile with itself does not double value {}", v);
  }
  return 0;
}
