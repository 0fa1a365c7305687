// SPDX-License-Identifier: Apache-2.0
// Tests only: a gzip'd pprof read back into rows a test can compare frame by frame, with the
// generated protobuf (so the check does not trust our own encoder's reading of itself).
#ifndef WARPSCOPE_AGENT_SOURCES_CUPTI_TESTING_PPROF_ROWS_H_
#define WARPSCOPE_AGENT_SOURCES_CUPTI_TESTING_PPROF_ROWS_H_

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "perftools/profiles.pb.h"

namespace warpscope::agent::cupti {

struct PprofFrame {
  std::string name;
  std::string file;
  int64_t line = 0;
};

// One sample: frames root first, their names joined with ';', values, numeric and string labels.
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

inline std::string GunzipForTest(const std::string& gz) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  EXPECT_EQ(inflateInit2(&zs, 15 + 32), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  inflateEnd(&zs);
  EXPECT_EQ(rc, Z_STREAM_END);
  return out;
}

// Reads a gzip'd pprof; malformed input fails the calling test.
inline PprofRows ReadPprofGz(const std::string& gz) {
  PprofRows d;
  EXPECT_TRUE(d.profile.ParseFromString(GunzipForTest(gz)));
  std::map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : d.profile.function()) functions[f.id()] = &f;
  std::map<uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : d.profile.location()) locations[l.id()] = &l;
  for (const auto& s : d.profile.sample()) {
    PprofRow row;
    for (int i = s.location_id_size() - 1; i >= 0; --i) {  // leaf first on the wire
      const auto* loc = locations.at(s.location_id(i));
      EXPECT_EQ(loc->line_size(), 1);
      const auto* fn = functions.at(loc->line(0).function_id());
      row.frames.push_back(PprofFrame{d.Str(fn->name()), d.Str(fn->filename()), loc->line(0).line()});
      row.stack += (row.stack.empty() ? "" : ";") + row.frames.back().name;
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

}  // namespace warpscope::agent::cupti

#endif  // WARPSCOPE_AGENT_SOURCES_CUPTI_TESTING_PPROF_ROWS_H_
