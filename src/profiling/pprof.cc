// SPDX-License-Identifier: Apache-2.0
#include "profiling/pprof.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/gzip.h"
#include "perftools/profiles.pb.h"
#include "profiling/frame_kind.h"

namespace warpscope::profiling {
namespace {

namespace pb = perftools::profiles;

// A frame whose kind its other fields do not imply (frame_kind.h) points to a mapping named
// "[warpscope:<kind>]", followed by " <module>" when the frame has a module.
constexpr std::string_view kKindTag = "[warpscope:";

std::string TaggedMappingName(FrameKind kind, std::string_view module) {
  std::string out = fmt::format("{}{}]", kKindTag, FrameKindName(kind));
  if (!module.empty()) {
    out += ' ';
    out += module;
  }
  return out;
}

// The kind and module of a mapping named by TaggedMappingName; nullopt for any other name (and
// for a tag naming "unknown" or no kind at all: such a name is a module like any other).
std::optional<std::pair<FrameKind, std::string>> ParseTaggedMappingName(std::string_view name) {
  if (!name.starts_with(kKindTag)) {
    return std::nullopt;
  }
  const size_t close = name.find(']');
  auto kind = ParseFrameKind(name.substr(kKindTag.size(), close - kKindTag.size()));
  if (close == std::string_view::npos || !kind || *kind == FrameKind::kUnknown) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(close + 1);
  if (!rest.empty() && rest.front() != ' ') {
    return std::nullopt;
  }
  return std::make_pair(*kind, std::string(rest.empty() ? rest : rest.substr(1)));
}

base::Result<std::string> Inflate(std::string_view data, size_t max_bytes) {
  auto inflated = base::GzipDecompress(data, max_bytes);
  if (inflated) return inflated;
  if (inflated.error().code() == base::StatusCode::kResourceExhausted) {
    return base::Error(base::InvalidArgument(
        "pprof: inflates to more than {} bytes: profile too large", max_bytes));
  }
  return base::Error(base::InvalidArgument(
      "pprof: bad gzip data ({}): send the .pb.gz file as written by the profiler",
      inflated.error().message()));
}

// Reads one pprof message into a Profile; the string table and ids are checked as they are used.
class Decoder {
 public:
  Decoder(const pb::Profile& p, const DecodeOptions& options) : p_(p), options_(options) {}

  base::Result<Profile> Run() {
    WARPSCOPE_RETURN_IF_ERROR(Header());
    WARPSCOPE_RETURN_IF_ERROR(Tables());
    WARPSCOPE_RETURN_IF_ERROR(Locations());
    WARPSCOPE_RETURN_IF_ERROR(Samples());
    return std::move(out_);
  }

 private:
  base::Result<std::string> Str(int64_t i, std::string_view what) const {
    const auto& strings = p_.string_table();
    if (i < 0 || i >= strings.size()) {
      return base::Error(
          base::InvalidArgument("pprof: {} refers to string {} but the string table has {} entries",
                                what, i, strings.size()));
    }
    return strings[static_cast<int>(i)];
  }

  base::Status Header() {
    for (const auto& vt : p_.sample_type()) {
      ValueType t;
      WARPSCOPE_ASSIGN_OR_RETURN(t.type, Str(vt.type(), "sample_type.type"));
      WARPSCOPE_ASSIGN_OR_RETURN(t.unit, Str(vt.unit(), "sample_type.unit"));
      out_.sample_types.push_back(std::move(t));
    }
    if (p_.has_period_type()) {
      WARPSCOPE_ASSIGN_OR_RETURN(out_.period_type.type,
                                 Str(p_.period_type().type(), "period_type"));
      WARPSCOPE_ASSIGN_OR_RETURN(out_.period_type.unit,
                                 Str(p_.period_type().unit(), "period_type"));
    }
    // Only a hint for viewers: an index that does not resolve means "the first".
    if (auto d = Str(p_.default_sample_type(), "default_sample_type")) {
      out_.default_sample_type = std::move(*d);
    }
    out_.period = p_.period();
    out_.time_nanos = p_.time_nanos();
    out_.duration_nanos = p_.duration_nanos();
    return base::OkStatus();
  }

  base::Status Tables() {
    for (const auto& f : p_.function()) {
      if (f.id() == 0 || !functions_.emplace(f.id(), &f).second) {
        return base::Error(
            base::InvalidArgument("pprof: function id {} is zero or repeated", f.id()));
      }
    }
    // Mappings only name a frame's module: a repeated id keeps its first entry.
    for (const auto& m : p_.mapping()) mappings_.emplace(m.id(), &m);
    return base::OkStatus();
  }

  struct MappingInfo {
    std::string module;
    std::string build_id;
    std::optional<FrameKind> kind;  // from a "[warpscope:<kind>]" name
  };

  // The module, build id and kind tag of a location's mapping; empty when it has none or its
  // references do not resolve (a profile is not refused for what only labels its frames).
  MappingInfo ModuleOf(const pb::Location& loc) const {
    auto m = mappings_.find(loc.mapping_id());
    if (loc.mapping_id() == 0 || m == mappings_.end()) return {};
    auto file = Str(m->second->filename(), "mapping.filename");
    auto build_id = Str(m->second->build_id(), "mapping.build_id");
    if (!file || !build_id) return {};
    if (auto tagged = ParseTaggedMappingName(*file)) {
      return {std::move(tagged->second), std::move(*build_id), tagged->first};
    }
    return {std::move(*file), std::move(*build_id), std::nullopt};
  }

  // The tagged kind, else the one the frame's fields imply.
  static void SetKind(Frame& f, const std::optional<FrameKind>& tag) {
    f.kind = tag ? *tag : InferFrameKind(f);
  }

  uint32_t Intern(Frame frame) {
    auto [it, inserted] = frame_ids_.emplace(frame, static_cast<uint32_t>(out_.frames.size()));
    if (inserted) out_.frames.push_back(std::move(frame));
    return it->second;
  }

  // Each location expands to its frames, outermost first.
  base::Status Locations() {
    for (const auto& loc : p_.location()) {
      auto [module, build_id, tag] = ModuleOf(loc);
      std::vector<uint32_t> frames;
      for (int i = loc.line_size() - 1; i >= 0; --i) {
        const pb::Line& line = loc.line(i);
        auto fn = functions_.find(line.function_id());
        if (fn == functions_.end()) {
          return base::Error(base::InvalidArgument(
              "pprof: location {} refers to unknown function {}", loc.id(), line.function_id()));
        }
        Frame f;
        WARPSCOPE_ASSIGN_OR_RETURN(f.function, Str(fn->second->name(), "function.name"));
        WARPSCOPE_ASSIGN_OR_RETURN(f.system_name,
                                   Str(fn->second->system_name(), "function.system_name"));
        if (f.system_name == f.function) f.system_name.clear();
        WARPSCOPE_ASSIGN_OR_RETURN(f.file, Str(fn->second->filename(), "function.filename"));
        f.line = line.line();
        f.inlined = i != loc.line_size() - 1;  // lines are innermost first; the last is the caller
        f.module = module;
        f.build_id = build_id;
        SetKind(f, tag);
        frames.push_back(Intern(std::move(f)));
      }
      if (frames.empty()) {
        Frame f{fmt::format("0x{:x}", loc.address()), "", 0};
        f.module = module;
        f.build_id = build_id;
        SetKind(f, tag);
        frames.push_back(Intern(std::move(f)));
      }
      if (loc.id() == 0 || !locations_.emplace(loc.id(), std::move(frames)).second) {
        return base::Error(
            base::InvalidArgument("pprof: location id {} is zero or repeated", loc.id()));
      }
    }
    return base::OkStatus();
  }

  base::Status Samples() {
    out_.samples.reserve(static_cast<size_t>(p_.sample_size()));
    for (int s = 0; s < p_.sample_size(); ++s) {
      const pb::Sample& sample = p_.sample(s);
      if (static_cast<size_t>(sample.value_size()) != out_.sample_types.size()) {
        return base::Error(base::InvalidArgument(
            "pprof: sample {} has {} values but the profile has {} sample types", s,
            sample.value_size(), out_.sample_types.size()));
      }
      Sample decoded;
      decoded.values.assign(sample.value().begin(), sample.value().end());
      // location_id is leaf first; the stack is root first.
      for (int i = sample.location_id_size() - 1; i >= 0; --i) {
        auto loc = locations_.find(sample.location_id(i));
        if (loc == locations_.end()) {
          return base::Error(base::InvalidArgument("pprof: sample {} refers to unknown location {}",
                                                   s, sample.location_id(i)));
        }
        decoded.stack.insert(decoded.stack.end(), loc->second.begin(), loc->second.end());
      }
      if (options_.keep_labels) {
        for (const auto& l : sample.label()) {
          Label label;
          WARPSCOPE_ASSIGN_OR_RETURN(label.key, Str(l.key(), "label.key"));
          WARPSCOPE_ASSIGN_OR_RETURN(label.str, Str(l.str(), "label.str"));
          label.num = label.str.empty() ? l.num() : 0;
          decoded.labels.push_back(std::move(label));
        }
      }
      out_.samples.push_back(std::move(decoded));
    }
    return base::OkStatus();
  }

  const pb::Profile& p_;
  const DecodeOptions& options_;
  Profile out_;
  std::unordered_map<uint64_t, const pb::Function*> functions_;
  std::unordered_map<uint64_t, const pb::Mapping*> mappings_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> locations_;
  std::map<Frame, uint32_t> frame_ids_;
};

// The string table of the message being encoded.
class StringTable {
 public:
  explicit StringTable(pb::Profile& p) : p_(p) { Id(""); }
  int64_t Id(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    int64_t id = p_.string_table_size();
    p_.add_string_table(std::string(s));
    ids_.emplace(std::string(s), id);
    return id;
  }

 private:
  pb::Profile& p_;
  std::map<std::string, int64_t, std::less<>> ids_;
};

}  // namespace

base::Result<Profile> DecodePprof(std::string_view data, const DecodeOptions& options) {
  std::string inflated;
  if (base::IsGzip(data)) {
    WARPSCOPE_ASSIGN_OR_RETURN(inflated, Inflate(data, options.max_uncompressed_bytes));
    data = inflated;
  }
  if (data.empty()) return base::Error(base::InvalidArgument("pprof: empty profile"));
  pb::Profile p;
  if (!p.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return base::Error(base::InvalidArgument(
        "pprof: not a perftools.profiles.Profile (protobuf parse failed): send a pprof .pb.gz"));
  }
  return Decoder(p, options).Run();
}

base::Result<std::string> EncodePprof(const Profile& profile) {
  pb::Profile p;
  StringTable strings(p);
  for (const ValueType& t : profile.sample_types) {
    auto* vt = p.add_sample_type();
    vt->set_type(strings.Id(t.type));
    vt->set_unit(strings.Id(t.unit));
  }
  if (!profile.period_type.type.empty() || !profile.period_type.unit.empty()) {
    p.mutable_period_type()->set_type(strings.Id(profile.period_type.type));
    p.mutable_period_type()->set_unit(strings.Id(profile.period_type.unit));
  }
  p.set_period(profile.period);
  if (!profile.default_sample_type.empty()) {
    p.set_default_sample_type(strings.Id(profile.default_sample_type));
  }
  p.set_time_nanos(profile.time_nanos);
  p.set_duration_nanos(profile.duration_nanos);

  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, uint64_t> functions;
  // Keyed by (mapping name as written, build id).
  std::map<std::pair<std::string, std::string_view>, uint64_t> mappings;
  std::vector<uint64_t> function_of(profile.frames.size());
  std::vector<uint64_t> mapping_of(profile.frames.size());  // 0: none
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    const Frame& f = profile.frames[i];
    const std::string& system = f.system_name.empty() ? f.function : f.system_name;
    auto [fit, new_fn] =
        functions.emplace(std::make_tuple(std::string_view(f.function), std::string_view(system),
                                          std::string_view(f.file)),
                          functions.size() + 1);
    if (new_fn) {
      pb::Function* fn = p.add_function();
      fn->set_id(fit->second);
      fn->set_name(strings.Id(f.function));
      fn->set_system_name(strings.Id(system));
      fn->set_filename(strings.Id(f.file));
    }
    function_of[i] = fit->second;
    const bool tagged = f.kind != FrameKind::kUnknown && InferFrameKind(f) != f.kind;
    if (!f.module.empty() || !f.build_id.empty() || tagged) {
      std::string name = tagged ? TaggedMappingName(f.kind, f.module) : f.module;
      auto [mit, new_map] = mappings.emplace(
          std::make_pair(std::move(name), std::string_view(f.build_id)), mappings.size() + 1);
      if (new_map) {
        pb::Mapping* m = p.add_mapping();
        m->set_id(mit->second);
        m->set_filename(strings.Id(mit->first.first));
        m->set_build_id(strings.Id(f.build_id));
        m->set_has_functions(true);
      }
      mapping_of[i] = mit->second;
    }
  }
  // A location of `run`: frames of the stack, the caller first and the frames inlined into it
  // after; its lines are innermost first, as pprof orders them.
  auto add_location = [&](uint64_t id, std::span<const uint32_t> run) {
    pb::Location* loc = p.add_location();
    loc->set_id(id);
    if (mapping_of[run.front()] != 0) loc->set_mapping_id(mapping_of[run.front()]);
    for (auto it = run.rbegin(); it != run.rend(); ++it) {
      pb::Line* line = loc->add_line();
      line->set_function_id(function_of[*it]);
      line->set_line(profile.frames[*it].line);
    }
  };
  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    if (!profile.frames[i].inlined) add_location(i + 1, std::span(&i, 1));
  }
  std::map<std::vector<uint32_t>, uint64_t> runs;  // locations with inlined frames
  std::vector<uint64_t> location_ids;
  for (const Sample& s : profile.samples) {
    if (s.values.size() != profile.sample_types.size()) {
      return base::Error(base::InvalidArgument(
          "pprof encode: a sample has {} values but the profile has {} sample types",
          s.values.size(), profile.sample_types.size()));
    }
    for (uint32_t id : s.stack) {
      if (id >= profile.frames.size()) {
        return base::Error(base::InvalidArgument(
            "pprof encode: a sample names frame {} but the profile has {} frames", id,
            profile.frames.size()));
      }
    }
    location_ids.clear();
    for (size_t j = 0; j < s.stack.size();) {
      size_t k = j + 1;
      while (k < s.stack.size() && profile.frames[s.stack[k]].inlined) ++k;
      std::span<const uint32_t> run(s.stack.data() + j, k - j);
      if (run.size() == 1 && !profile.frames[run[0]].inlined) {
        location_ids.push_back(run[0] + 1);
      } else {
        auto [it, added] = runs.emplace(std::vector<uint32_t>(run.begin(), run.end()),
                                        profile.frames.size() + runs.size() + 1);
        if (added) add_location(it->second, run);
        location_ids.push_back(it->second);
      }
      j = k;
    }
    pb::Sample* out = p.add_sample();
    for (auto it = location_ids.rbegin(); it != location_ids.rend(); ++it) {
      out->add_location_id(*it);
    }
    for (int64_t v : s.values) out->add_value(v);
    for (const Label& l : s.labels) {
      pb::Label* label = out->add_label();
      label->set_key(strings.Id(l.key));
      if (l.str.empty()) {
        label->set_num(l.num);
      } else {
        label->set_str(strings.Id(l.str));
      }
    }
  }
  std::string bytes;
  if (!p.SerializeToString(&bytes)) {
    return base::Error(base::Internal("pprof encode: protobuf serialisation failed"));
  }
  return base::GzipCompress(bytes, /*level=*/-1);
}

}  // namespace warpscope::profiling
