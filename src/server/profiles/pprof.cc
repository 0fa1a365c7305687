// SPDX-License-Identifier: Apache-2.0
#include "server/profiles/pprof.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <queue>
#include <unordered_map>

#include "perftools/profiles.pb.h"

namespace warpscope::server::profiles {
namespace {

namespace pb = perftools::profiles;

bool IsGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

base::Result<std::string> Gunzip(std::string_view data, size_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    return base::Error(base::Internal("pprof: cannot initialise zlib"));
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[64 * 1024];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return base::Error(base::InvalidArgument(
          "pprof: bad gzip data ({}): send the .pb.gz file as written by the profiler",
          zs.msg != nullptr ? zs.msg : (rc == Z_BUF_ERROR ? "truncated" : "corrupt")));
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&zs);
      return base::Error(base::InvalidArgument(
          "pprof: inflates to more than {} bytes: profile too large", max_bytes));
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      return base::Error(base::InvalidArgument("pprof: gzip data is truncated"));
    }
  }
  inflateEnd(&zs);
  return out;
}

base::Result<std::string> Gzip(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return base::Error(base::Internal("pprof: cannot initialise zlib"));
  }
  std::string out;
  out.resize(deflateBound(&zs, data.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return base::Error(base::Internal("pprof: gzip failed ({})", rc));
  out.resize(zs.total_out);
  return out;
}

}  // namespace

base::Result<DecodedProfile> DecodePprof(std::string_view data, const DecodeOptions& options) {
  std::string inflated;
  if (IsGzip(data)) {
    WARPSCOPE_ASSIGN_OR_RETURN(inflated, Gunzip(data, options.max_uncompressed_bytes));
    data = inflated;
  }
  if (data.empty()) return base::Error(base::InvalidArgument("pprof: empty profile"));
  pb::Profile p;
  if (!p.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return base::Error(base::InvalidArgument(
        "pprof: not a perftools.profiles.Profile (protobuf parse failed): send a pprof .pb.gz"));
  }
  const auto& strings = p.string_table();
  auto str = [&](int64_t i, std::string_view what) -> base::Result<std::string> {
    if (i < 0 || i >= strings.size()) {
      return base::Error(base::InvalidArgument(
          "pprof: {} refers to string {} but the string table has {} entries", what, i,
          strings.size()));
    }
    return strings[static_cast<int>(i)];
  };
  DecodedProfile out;
  for (const auto& vt : p.sample_type()) {
    ValueType t;
    WARPSCOPE_ASSIGN_OR_RETURN(t.type, str(vt.type(), "sample_type.type"));
    WARPSCOPE_ASSIGN_OR_RETURN(t.unit, str(vt.unit(), "sample_type.unit"));
    out.sample_types.push_back(std::move(t));
  }
  if (p.has_period_type()) {
    WARPSCOPE_ASSIGN_OR_RETURN(out.period_type.type, str(p.period_type().type(), "period_type"));
    WARPSCOPE_ASSIGN_OR_RETURN(out.period_type.unit, str(p.period_type().unit(), "period_type"));
  }
  out.period = p.period();
  out.time_nanos = p.time_nanos();
  out.duration_nanos = p.duration_nanos();

  std::unordered_map<uint64_t, const pb::Function*> functions;
  for (const auto& f : p.function()) {
    if (f.id() == 0 || !functions.emplace(f.id(), &f).second) {
      return base::Error(base::InvalidArgument("pprof: function id {} is zero or repeated",
                                               f.id()));
    }
  }
  // Each location expands to its frames, outermost first.
  std::unordered_map<uint64_t, std::vector<Frame>> locations;
  for (const auto& loc : p.location()) {
    std::vector<Frame> frames;
    for (int i = loc.line_size() - 1; i >= 0; --i) {
      const pb::Line& line = loc.line(i);
      auto fn = functions.find(line.function_id());
      if (fn == functions.end()) {
        return base::Error(base::InvalidArgument(
            "pprof: location {} refers to unknown function {}", loc.id(), line.function_id()));
      }
      Frame f;
      WARPSCOPE_ASSIGN_OR_RETURN(f.function, str(fn->second->name(), "function.name"));
      WARPSCOPE_ASSIGN_OR_RETURN(f.file, str(fn->second->filename(), "function.filename"));
      f.line = line.line();
      frames.push_back(std::move(f));
    }
    if (frames.empty()) frames.push_back(Frame{fmt::format("0x{:x}", loc.address()), "", 0});
    if (loc.id() == 0 || !locations.emplace(loc.id(), std::move(frames)).second) {
      return base::Error(base::InvalidArgument("pprof: location id {} is zero or repeated",
                                               loc.id()));
    }
  }
  out.samples.reserve(static_cast<size_t>(p.sample_size()));
  for (int s = 0; s < p.sample_size(); ++s) {
    const pb::Sample& sample = p.sample(s);
    if (static_cast<size_t>(sample.value_size()) != out.sample_types.size()) {
      return base::Error(base::InvalidArgument(
          "pprof: sample {} has {} values but the profile has {} sample types", s,
          sample.value_size(), out.sample_types.size()));
    }
    Sample decoded;
    decoded.values.assign(sample.value().begin(), sample.value().end());
    // location_id is leaf first; the stack is root first.
    for (int i = sample.location_id_size() - 1; i >= 0; --i) {
      auto loc = locations.find(sample.location_id(i));
      if (loc == locations.end()) {
        return base::Error(base::InvalidArgument("pprof: sample {} refers to unknown location {}",
                                                 s, sample.location_id(i)));
      }
      decoded.stack.insert(decoded.stack.end(), loc->second.begin(), loc->second.end());
    }
    out.samples.push_back(std::move(decoded));
  }
  return out;
}

std::string SampleTypesString(const std::vector<ValueType>& types) {
  std::string out;
  for (const ValueType& t : types) {
    if (!out.empty()) out += ", ";
    out += t.type + "/" + t.unit;
  }
  return "[" + out + "]";
}

base::Result<DecodedProfile> Merge(std::span<const DecodedProfile> profiles) {
  if (profiles.empty()) return base::Error(base::InvalidArgument("merge: no profiles to merge"));
  DecodedProfile out;
  out.sample_types = profiles[0].sample_types;
  out.period_type = profiles[0].period_type;
  out.period = profiles[0].period;
  int64_t first = 0;
  int64_t last = 0;
  bool have_time = false;
  std::map<std::vector<Frame>, size_t> index;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const DecodedProfile& p = profiles[i];
    if (p.sample_types != out.sample_types) {
      return base::Error(base::InvalidArgument(
          "merge: profile {} has sample types {} but profile 0 has {}; merge profiles of one "
          "kind only (filter with kind=)",
          i, SampleTypesString(p.sample_types), SampleTypesString(out.sample_types)));
    }
    if (p.time_nanos != 0) {
      int64_t end = p.time_nanos + p.duration_nanos;
      first = have_time ? std::min(first, p.time_nanos) : p.time_nanos;
      last = have_time ? std::max(last, end) : end;
      have_time = true;
    }
    for (const Sample& s : p.samples) {
      auto [it, inserted] = index.emplace(s.stack, out.samples.size());
      if (inserted) {
        out.samples.push_back(s);
        continue;
      }
      std::vector<int64_t>& values = out.samples[it->second].values;
      for (size_t v = 0; v < values.size(); ++v) values[v] += s.values[v];
    }
  }
  if (have_time) {
    out.time_nanos = first;
    out.duration_nanos = last - first;
  }
  return out;
}

namespace {

struct ArenaNode {
  std::string name;
  size_t parent = 0;
  std::vector<int64_t> self;
  std::vector<int64_t> total;
  std::map<std::string, size_t> children;
};

}  // namespace

FlameNode FlameTree(const DecodedProfile& profile, const FlameTreeOptions& options) {
  const size_t nvalues = profile.sample_types.size();
  const size_t key = options.sort_value < nvalues ? options.sort_value : 0;
  auto sort_key = [&](const std::vector<int64_t>& total) {
    return key < total.size() ? total[key] : 0;
  };
  std::vector<ArenaNode> arena;
  arena.push_back(ArenaNode{"root", 0, std::vector<int64_t>(nvalues), std::vector<int64_t>(nvalues),
                            {}});
  for (const Sample& s : profile.samples) {
    size_t cur = 0;
    auto add = [&](size_t n, bool self) {
      for (size_t v = 0; v < nvalues && v < s.values.size(); ++v) {
        arena[n].total[v] += s.values[v];
        if (self) arena[n].self[v] += s.values[v];
      }
    };
    add(0, s.stack.empty());
    for (size_t d = 0; d < s.stack.size(); ++d) {
      const std::string& name = s.stack[d].function;
      auto it = arena[cur].children.find(name);
      size_t next;
      if (it == arena[cur].children.end()) {
        next = arena.size();
        arena[cur].children.emplace(name, next);
        arena.push_back(ArenaNode{name, cur, std::vector<int64_t>(nvalues),
                                  std::vector<int64_t>(nvalues), {}});
      } else {
        next = it->second;
      }
      cur = next;
      add(cur, d + 1 == s.stack.size());
    }
  }

  // Keep the largest nodes first (a node is only reachable once its parent is kept); each kept
  // node with children left out costs one "(other)" node.
  const size_t max_nodes = std::max<size_t>(options.max_nodes, 2);
  std::vector<bool> kept(arena.size(), false);
  std::vector<size_t> left(arena.size(), 0);  // children not kept yet, for kept nodes
  kept[0] = true;
  left[0] = arena[0].children.size();
  size_t kept_count = 1;
  size_t pending = left[0] > 0 ? 1 : 0;
  auto cmp = [&](size_t a, size_t b) {
    return sort_key(arena[a].total) < sort_key(arena[b].total);
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(cmp)> frontier(cmp);
  for (const auto& [name, c] : arena[0].children) frontier.push(c);
  while (!frontier.empty()) {
    size_t n = frontier.top();
    size_t parent = arena[n].parent;
    size_t next_pending = pending - (left[parent] == 1 ? 1 : 0) +
                          (arena[n].children.empty() ? 0 : 1);
    if (kept_count + 1 + next_pending > max_nodes) break;
    frontier.pop();
    kept[n] = true;
    ++kept_count;
    --left[parent];
    left[n] = arena[n].children.size();
    pending = next_pending;
    for (const auto& [name, c] : arena[n].children) frontier.push(c);
  }

  auto build = [&](auto&& self_fn, size_t n) -> FlameNode {
    FlameNode node{arena[n].name, arena[n].self, arena[n].total, {}};
    FlameNode other{"(other)", std::vector<int64_t>(nvalues), std::vector<int64_t>(nvalues), {}};
    bool folded = false;
    for (const auto& [name, c] : arena[n].children) {
      if (kept[c]) {
        node.children.push_back(self_fn(self_fn, c));
        continue;
      }
      folded = true;
      for (size_t v = 0; v < nvalues; ++v) {
        other.self[v] += arena[c].total[v];
        other.total[v] += arena[c].total[v];
      }
    }
    if (folded) node.children.push_back(std::move(other));
    std::stable_sort(node.children.begin(), node.children.end(),
                     [&](const FlameNode& a, const FlameNode& b) {
                       int64_t ka = sort_key(a.total);
                       int64_t kb = sort_key(b.total);
                       return ka != kb ? ka > kb : a.name < b.name;
                     });
    return node;
  };
  return build(build, 0);
}

nlohmann::json FlameNodeJson(const FlameNode& node) {
  nlohmann::json children = nlohmann::json::array();
  for (const FlameNode& c : node.children) children.push_back(FlameNodeJson(c));
  return {{"name", node.name}, {"self", node.self}, {"total", node.total}, {"children", children}};
}

base::Result<size_t> FindSampleType(const std::vector<ValueType>& types,
                                    std::string_view index_or_name) {
  size_t index = 0;
  const char* end = index_or_name.data() + index_or_name.size();
  auto [ptr, ec] = std::from_chars(index_or_name.data(), end, index);
  if (ec == std::errc() && ptr == end && index < types.size()) return index;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].type == index_or_name) return i;
  }
  return base::Error(base::InvalidArgument(
      "value={}: not a sample type of this profile; use an index below {} or one of {}",
      index_or_name, types.size(), SampleTypesString(types)));
}

base::Result<std::string> EncodePprof(const DecodedProfile& profile) {
  pb::Profile p;
  std::unordered_map<std::string, int64_t> strings;
  auto intern = [&](const std::string& s) -> int64_t {
    auto [it, inserted] = strings.emplace(s, p.string_table_size());
    if (inserted) p.add_string_table(s);
    return it->second;
  };
  intern("");
  for (const ValueType& t : profile.sample_types) {
    auto* vt = p.add_sample_type();
    vt->set_type(intern(t.type));
    vt->set_unit(intern(t.unit));
  }
  if (!profile.period_type.type.empty() || !profile.period_type.unit.empty()) {
    p.mutable_period_type()->set_type(intern(profile.period_type.type));
    p.mutable_period_type()->set_unit(intern(profile.period_type.unit));
  }
  p.set_period(profile.period);
  p.set_time_nanos(profile.time_nanos);
  p.set_duration_nanos(profile.duration_nanos);
  std::map<std::pair<std::string, std::string>, uint64_t> functions;
  std::map<Frame, uint64_t> locations;
  auto location_of = [&](const Frame& f) -> uint64_t {
    auto it = locations.find(f);
    if (it != locations.end()) return it->second;
    auto [fit, new_fn] = functions.emplace(std::make_pair(f.function, f.file),
                                           functions.size() + 1);
    if (new_fn) {
      auto* fn = p.add_function();
      fn->set_id(fit->second);
      fn->set_name(intern(f.function));
      fn->set_system_name(fn->name());
      fn->set_filename(intern(f.file));
    }
    uint64_t id = locations.size() + 1;
    locations.emplace(f, id);
    auto* loc = p.add_location();
    loc->set_id(id);
    auto* line = loc->add_line();
    line->set_function_id(fit->second);
    line->set_line(f.line);
    return id;
  };
  for (const Sample& s : profile.samples) {
    if (s.values.size() != profile.sample_types.size()) {
      return base::Error(base::InvalidArgument(
          "pprof encode: a sample has {} values but the profile has {} sample types",
          s.values.size(), profile.sample_types.size()));
    }
    auto* out = p.add_sample();
    for (auto it = s.stack.rbegin(); it != s.stack.rend(); ++it) {
      out->add_location_id(location_of(*it));
    }
    for (int64_t v : s.values) out->add_value(v);
  }
  std::string bytes;
  if (!p.SerializeToString(&bytes)) {
    return base::Error(base::Internal("pprof encode: protobuf serialisation failed"));
  }
  return Gzip(bytes);
}

}  // namespace warpscope::server::profiles
