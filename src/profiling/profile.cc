// SPDX-License-Identifier: Apache-2.0
#include "profiling/profile.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <map>

namespace warpscope::profiling {
namespace {

void HashInto(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

// Appends `v` as raw bytes: sample keys only need to be unambiguous, not readable.
template <typename T>
void AppendRaw(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void AppendString(std::string& key, std::string_view s) {
  AppendRaw(key, static_cast<uint32_t>(s.size()));
  key.append(s);
}

}  // namespace

std::vector<Frame> StackFrames(const Profile& profile, const Sample& sample) {
  std::vector<Frame> out;
  out.reserve(sample.stack.size());
  for (uint32_t id : sample.stack) out.push_back(profile.frames[id]);
  return out;
}

size_t ProfileAggregator::FrameHash::operator()(const Frame& f) const {
  std::hash<std::string_view> hs;
  size_t h = hs(f.function);
  HashInto(h, hs(f.file));
  HashInto(h, std::hash<int64_t>()(f.line));
  HashInto(h, hs(f.system_name));
  HashInto(h, hs(f.module));
  HashInto(h, hs(f.build_id));
  HashInto(h, static_cast<size_t>(f.kind));
  HashInto(h, f.inlined ? 1 : 0);
  return h;
}

ProfileAggregator::ProfileAggregator(std::vector<ValueType> sample_types) {
  profile_.sample_types = std::move(sample_types);
}

uint32_t ProfileAggregator::InternFrame(const Frame& frame) {
  auto it = frame_ids_.find(frame);
  if (it != frame_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(profile_.frames.size());
  profile_.frames.push_back(frame);
  frame_ids_.emplace(frame, id);
  return id;
}

size_t ProfileAggregator::Add(std::span<const uint32_t> stack, std::span<const int64_t> values,
                              std::span<const Label> labels) {
  key_.clear();
  AppendRaw(key_, static_cast<uint32_t>(stack.size()));
  key_.append(reinterpret_cast<const char*>(stack.data()), stack.size_bytes());
  for (const Label& l : labels) {
    AppendString(key_, l.key);
    AppendString(key_, l.str);
    AppendRaw(key_, l.num);
  }
  auto [it, inserted] = sample_ids_.try_emplace(key_, profile_.samples.size());
  const size_t nvalues = profile_.sample_types.size();
  if (inserted) {
    Sample s;
    s.stack.assign(stack.begin(), stack.end());
    s.values.assign(nvalues, 0);
    s.labels.assign(labels.begin(), labels.end());
    profile_.samples.push_back(std::move(s));
  }
  std::vector<int64_t>& sums = profile_.samples[it->second].values;
  for (size_t i = 0; i < nvalues && i < values.size(); ++i)
    sums[i] = WrappingAdd(sums[i], values[i]);
  return it->second;
}

std::vector<ValueType> UnionSampleTypes(std::span<const Profile> profiles) {
  std::vector<ValueType> out;
  for (const Profile& p : profiles) {
    for (const ValueType& t : p.sample_types) {
      if (std::find(out.begin(), out.end(), t) == out.end()) {
        out.push_back(t);
      }
    }
  }
  return out;
}

Profile WidenSampleTypes(Profile profile, const std::vector<ValueType>& types) {
  if (profile.sample_types == types) {
    return profile;
  }
  // Where each of the profile's types goes; -1: dropped.
  std::vector<int64_t> to(profile.sample_types.size(), -1);
  for (size_t i = 0; i < profile.sample_types.size(); ++i) {
    auto it = std::find(types.begin(), types.end(), profile.sample_types[i]);
    if (it != types.end()) {
      to[i] = it - types.begin();
    }
  }
  for (Sample& s : profile.samples) {
    std::vector<int64_t> values(types.size(), 0);
    for (size_t i = 0; i < s.values.size() && i < to.size(); ++i) {
      if (to[i] >= 0) {
        values[static_cast<size_t>(to[i])] = s.values[i];
      }
    }
    s.values = std::move(values);
  }
  profile.sample_types = types;
  return profile;
}

std::string SampleTypesString(const std::vector<ValueType>& types) {
  std::string out;
  for (const ValueType& t : types) {
    if (!out.empty()) out += ", ";
    out += t.type + "/" + t.unit;
  }
  return "[" + out + "]";
}

base::Result<Profile> Merge(std::span<const Profile> profiles) {
  if (profiles.empty()) return base::Error(base::InvalidArgument("merge: no profiles to merge"));
  ProfileAggregator merged(profiles[0].sample_types);
  Profile& out = merged.mutable_profile();
  out.default_sample_type = profiles[0].default_sample_type;
  out.period_type = profiles[0].period_type;
  out.period = profiles[0].period;
  int64_t first = 0;
  int64_t last = 0;
  bool have_time = false;
  std::vector<uint32_t> ids;
  std::vector<uint32_t> stack;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const Profile& p = profiles[i];
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
    ids.clear();
    for (const Frame& f : p.frames) ids.push_back(merged.InternFrame(f));
    for (const Sample& s : p.samples) {
      stack.clear();
      for (uint32_t id : s.stack) stack.push_back(ids[id]);
      merged.Add(stack, s.values, s.labels);
    }
  }
  if (have_time) {
    out.time_nanos = first;
    out.duration_nanos = last - first;
  }
  return std::move(merged).Take();
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

}  // namespace warpscope::profiling
