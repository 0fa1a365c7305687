// SPDX-License-Identifier: Apache-2.0
// Tests only: a Perfetto trace read back independently of our encoder. `protoc
// --decode=perfetto.protos.Trace` decodes it against the schema subset in
// test/data/perfetto/trace_subset.proto (Perfetto's names and field numbers); the text it prints
// is then read the way trace processor reads a trace: interned names resolved per sequence
// (SEQ_INCREMENTAL_STATE_CLEARED starts over, SEQ_NEEDS_INCREMENTAL_STATE before any clear is
// an error), events sorted by timestamp keeping file order among equal ones, and each slice end
// closing the innermost open slice of its track.
//
// protoc comes from Debian's protobuf-compiler (scripts/setup.sh); tests call
// WARPSCOPE_REQUIRE_PEER(ProtocAvailable(), ...) first.
#ifndef WARPSCOPE_PROFILING_TESTING_PERFETTO_ROWS_H_
#define WARPSCOPE_PROFILING_TESTING_PERFETTO_ROWS_H_

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/testing/temp_dir.h"

namespace warpscope::profiling::testing {

inline constexpr const char* kProtocSetup =
    "install Debian's protobuf-compiler (scripts/setup.sh) so that `protoc` is on PATH";

inline bool ProtocAvailable() { return system("protoc --version >/dev/null 2>&1") == 0; }

// One node of protoc's text format: `name: value` or `name { children }`.
struct TextNode {
  std::string name;
  std::string value;
  std::vector<TextNode> children;

  const TextNode* Child(const std::string& n) const {
    for (const TextNode& c : children) {
      if (c.name == n) return &c;
    }
    return nullptr;
  }
  std::vector<const TextNode*> All(const std::string& n) const {
    std::vector<const TextNode*> out;
    for (const TextNode& c : children) {
      if (c.name == n) out.push_back(&c);
    }
    return out;
  }
  std::string Get(const std::string& n) const {
    const TextNode* c = Child(n);
    return c != nullptr ? c->value : "";
  }
  uint64_t Uint(const std::string& n) const {
    const TextNode* c = Child(n);
    return c != nullptr ? std::stoull(c->value) : 0;
  }
};

// Undoes protoc's C escaping of a quoted string.
inline std::string Unquote(const std::string& v) {
  if (v.size() < 2 || v.front() != '"') return v;
  std::string out;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    if (v[i] != '\\') {
      out.push_back(v[i]);
      continue;
    }
    const char c = v[++i];
    if (c >= '0' && c <= '7') {
      int code = 0;
      for (int k = 0; k < 3 && i < v.size() - 1 && v[i] >= '0' && v[i] <= '7'; ++k, ++i) {
        code = code * 8 + (v[i] - '0');
      }
      --i;
      out.push_back(static_cast<char>(code));
    } else {
      out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c);
    }
  }
  return out;
}

inline TextNode ParseText(const std::string& text) {
  TextNode root;
  std::vector<TextNode*> stack = {&root};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line == "}") {
      stack.pop_back();
    } else if (line.size() > 2 && line.substr(line.size() - 2) == " {") {
      stack.back()->children.push_back({line.substr(0, line.size() - 2), "", {}});
      stack.push_back(&stack.back()->children.back());
    } else if (size_t colon = line.find(": "); colon != std::string::npos) {
      stack.back()->children.push_back(
          {line.substr(0, colon), Unquote(line.substr(colon + 2)), {}});
    }
  }
  return root;
}

// protoc's decoding of `bytes`; "" with `error` set when protoc fails.
inline std::string ProtocDecode(const std::string& bytes, std::string& error) {
  base::TempDir dir;
  const std::string in = dir.path() + "/trace.pb";
  const std::string out = dir.path() + "/trace.txt";
  const std::string err = dir.path() + "/protoc.err";
  if (!base::WriteFile(in, bytes).ok()) {
    error = "cannot write " + in;
    return "";
  }
  const std::string schema_dir = std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/perfetto";
  const std::string cmd = "protoc --decode=perfetto.protos.Trace -I" + schema_dir + " " +
                          schema_dir + "/trace_subset.proto <" + in + " >" + out + " 2>" + err;
  if (system(cmd.c_str()) != 0) {
    error = "protoc failed: " + base::ReadFile(err).value_or("");
    return "";
  }
  return base::ReadFile(out).value_or("");
}

struct PerfettoTrack {
  uint64_t uuid = 0;
  uint64_t parent = 0;
  std::string name;  // the track's name, or its process's / thread's
  int64_t pid = -1;  // process and thread tracks
  int64_t tid = -1;  // thread tracks
  bool counter = false;
};

struct PerfettoSlice {
  uint64_t track = 0;
  std::string type;  // TYPE_SLICE_BEGIN (a slice, closed by its end), TYPE_INSTANT, TYPE_COUNTER
  std::string category;
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  double counter = 0;
  std::map<std::string, std::string> args;  // debug annotations, values as text
  std::vector<uint64_t> flows;
  std::vector<uint64_t> terminating_flows;
};

struct PerfettoTraceRows {
  std::string error;  // what was wrong (protoc failure, interning, nesting), "" when valid
  std::map<uint64_t, PerfettoTrack> tracks;
  std::vector<PerfettoSlice> slices;  // by start time
  size_t packets = 0;

  std::vector<const PerfettoSlice*> Named(const std::string& name) const {
    std::vector<const PerfettoSlice*> out;
    for (const PerfettoSlice& s : slices) {
      if (s.name == name) out.push_back(&s);
    }
    return out;
  }
  const PerfettoTrack* TrackNamed(const std::string& name) const {
    for (const auto& [uuid, t] : tracks) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
};

inline PerfettoTraceRows ReadPerfettoTrace(const std::string& bytes) {
  PerfettoTraceRows rows;
  const std::string text = ProtocDecode(bytes, rows.error);
  if (!rows.error.empty()) return rows;
  const TextNode root = ParseText(text);
  using Table = std::map<uint64_t, std::string>;
  struct Sequence {
    bool cleared = false;
    std::map<std::string, Table> tables;  // InternedData field -> iid -> string
  };
  std::map<uint64_t, Sequence> sequences;
  struct Raw {
    PerfettoSlice slice;
    bool end = false;
  };
  std::vector<Raw> raw;
  auto fail = [&](const std::string& why) {
    if (rows.error.empty()) rows.error = why;
  };
  for (const TextNode* p : root.All("packet")) {
    ++rows.packets;
    Sequence& seq = sequences[p->Uint("trusted_packet_sequence_id")];
    const uint64_t flags = p->Uint("sequence_flags");
    if (flags & 1) {
      seq.cleared = true;
      seq.tables.clear();
    }
    if ((flags & 2) && !seq.cleared) fail("SEQ_NEEDS_INCREMENTAL_STATE before a clear");
    if (const TextNode* interned = p->Child("interned_data")) {
      for (const TextNode& entry : interned->children) {
        const std::string value = entry.Child("str") ? entry.Get("str") : entry.Get("name");
        seq.tables[entry.name][entry.Uint("iid")] = value;
      }
    }
    auto lookup = [&](const std::string& table, uint64_t iid) {
      auto& t = seq.tables[table];
      auto it = t.find(iid);
      if (it == t.end()) fail("iid " + std::to_string(iid) + " not in " + table);
      return it == t.end() ? std::string() : it->second;
    };
    if (const TextNode* d = p->Child("track_descriptor")) {
      PerfettoTrack t;
      t.uuid = d->Uint("uuid");
      t.parent = d->Uint("parent_uuid");
      t.name = d->Get("name");
      t.counter = d->Child("counter") != nullptr;
      if (const TextNode* proc = d->Child("process")) {
        t.pid = std::stoll(proc->Get("pid"));
        t.name = proc->Get("process_name");
      }
      if (const TextNode* th = d->Child("thread")) {
        t.pid = std::stoll(th->Get("pid"));
        t.tid = std::stoll(th->Get("tid"));
        t.name = th->Get("thread_name");
      }
      auto [it, inserted] = rows.tracks.emplace(t.uuid, t);
      if (!inserted && (it->second.name != t.name || it->second.parent != t.parent ||
                        it->second.pid != t.pid || it->second.tid != t.tid)) {
        fail("track uuid " + std::to_string(t.uuid) + " describes two tracks: " + it->second.name +
             " and " + t.name);
      }
    }
    const TextNode* e = p->Child("track_event");
    if (e == nullptr) continue;
    Raw r;
    r.slice.type = e->Get("type");
    r.end = r.slice.type == "TYPE_SLICE_END";
    r.slice.track = e->Uint("track_uuid");
    r.slice.start_ns = r.slice.end_ns = static_cast<int64_t>(p->Uint("timestamp"));
    if (e->Child("name_iid")) r.slice.name = lookup("event_names", e->Uint("name_iid"));
    if (e->Child("category_iids")) {
      r.slice.category = lookup("event_categories", e->Uint("category_iids"));
    }
    if (e->Child("double_counter_value")) {
      r.slice.counter = std::stod(e->Get("double_counter_value"));
    }
    for (const TextNode* f : e->All("flow_ids")) r.slice.flows.push_back(std::stoull(f->value));
    for (const TextNode* f : e->All("terminating_flow_ids")) {
      r.slice.terminating_flows.push_back(std::stoull(f->value));
    }
    for (const TextNode* a : e->All("debug_annotations")) {
      const std::string key = lookup("debug_annotation_names", a->Uint("name_iid"));
      std::string value;
      for (const char* field : {"uint_value", "int_value", "double_value", "string_value"}) {
        if (a->Child(field)) value = a->Get(field);
      }
      if (a->Child("string_value_iid")) {
        value = lookup("debug_annotation_string_values", a->Uint("string_value_iid"));
      }
      r.slice.args[key] = value;
    }
    raw.push_back(std::move(r));
  }
  // Trace processor's order: by timestamp, file order among equal ones.
  std::stable_sort(raw.begin(), raw.end(),
                   [](const Raw& a, const Raw& b) { return a.slice.start_ns < b.slice.start_ns; });
  std::map<uint64_t, std::vector<size_t>> open;  // track -> slices not yet ended
  for (Raw& r : raw) {
    if (!rows.tracks.count(r.slice.track)) {
      fail("event on undescribed track " + std::to_string(r.slice.track));
    }
    if (r.end) {
      auto& stack = open[r.slice.track];
      if (stack.empty()) {
        fail("slice end without a begin on track " + std::to_string(r.slice.track));
        continue;
      }
      rows.slices[stack.back()].end_ns = r.slice.start_ns;
      stack.pop_back();
      continue;
    }
    if (r.slice.type == "TYPE_SLICE_BEGIN") open[r.slice.track].push_back(rows.slices.size());
    rows.slices.push_back(std::move(r.slice));
  }
  for (const auto& [track, stack] : open) {
    if (!stack.empty()) fail("slice never ended on track " + std::to_string(track));
  }
  return rows;
}

}  // namespace warpscope::profiling::testing

#endif  // WARPSCOPE_PROFILING_TESTING_PERFETTO_ROWS_H_
