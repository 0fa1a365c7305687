// SPDX-License-Identifier: Apache-2.0
// Tests only: a gzip'd pprof read back into rows a test can compare frame by frame, with the
// generated protobuf (so the check does not trust our own encoder's reading of itself).
#ifndef WARPSCOPE_PROFILING_TESTING_PPROF_ROWS_H_
#define WARPSCOPE_PROFILING_TESTING_PPROF_ROWS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/gzip.h"
#include "perftools/profiles.pb.h"

namespace warpscope::profiling {

struct PprofFrame {
  std::string name;
  std::string file;
  int64_t line = 0;
  bool inlined = false;  // a line of a location other than its last
};

// One sample: frames root first (a location's inlined lines as frames of their own), their names joined with ';', values, numeric and string labels.
struct PprofRow {
  std::vector<PprofFrame> frames;
  std::string stack;
  std::vector<int64_t> values;
  std::map<std::string, int64_t> labels;
  std::map<std::string, std::string> str_labels;

  // Index of the first frame named `name` (or whose name contains `part`), or -1.
  int IndexOf(const std::string& name) const {
    for (size_t i = 0; i < frames.size(); ++i) {
      if (frames[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  int IndexContaining(const std::string& part) const {
    for (size_t i = 0; i < frames.size(); ++i) {
      if (frames[i].name.find(part) != std::string::npos) return static_cast<int>(i);
    }
    return -1;
  }
};

struct PprofRows {
  perftools::profiles::Profile profile;
  std::vector<PprofRow> rows;
  std::string Str(int64_t index) const { return profile.string_table(static_cast<int>(index)); }
};

// Reads a gzip'd pprof; malformed input fails the calling test.
inline PprofRows ReadPprofGz(const std::string& gz) {
  PprofRows d;
  auto raw = base::GzipDecompress(gz, 1u << 30);
  EXPECT_TRUE(raw.has_value()) << raw.error().message();
  EXPECT_TRUE(d.profile.ParseFromString(raw.value_or("")));
  std::map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : d.profile.function()) functions[f.id()] = &f;
  std::map<uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : d.profile.location()) locations[l.id()] = &l;
  for (const auto& s : d.profile.sample()) {
    PprofRow row;
    for (int i = s.location_id_size() - 1; i >= 0; --i) {  // leaf first on the wire
      const auto* loc = locations.at(s.location_id(i));
      EXPECT_GE(loc->line_size(), 1);
      // Several lines: functions inlined there, innermost first (the last line is the caller).
      for (int k = loc->line_size() - 1; k >= 0; --k) {
        const auto* fn = functions.at(loc->line(k).function_id());
        row.frames.push_back(PprofFrame{d.Str(fn->name()), d.Str(fn->filename()),
                                        loc->line(k).line(), k < loc->line_size() - 1});
        row.stack += (row.stack.empty() ? "" : ";") + row.frames.back().name;
      }
    }
    row.values.assign(s.value().begin(), s.value().end());
    for (const auto& l : s.label()) {
      if (l.str() != 0) {
        row.str_labels[d.Str(l.key())] = d.Str(l.str());
      } else {
        row.labels[d.Str(l.key())] = l.num();
      }
    }
    d.rows.push_back(std::move(row));
  }
  return d;
}

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_TESTING_PPROF_ROWS_H_
