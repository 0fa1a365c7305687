// SPDX-License-Identifier: Apache-2.0
#include "server/storage/label_codec.h"

namespace warpscope::server {
namespace {

void AppendEscaped(std::string& out, std::string_view s) {
  // Runs without a special character are appended whole: the series key is built for every
  // sample ingested.
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' || c == ',' || c == '=') {
      out.append(s.data() + run, i - run);
      out.push_back('\\');
      run = i;  // the character itself starts the next run
    }
  }
  out.append(s.data() + run, s.size() - run);
}

}  // namespace

void AppendEncodedLabels(std::string& out, const model::Labels& labels) {
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) {
      out.push_back(',');
    }
    first = false;
    AppendEscaped(out, key);
    out.push_back('=');
    AppendEscaped(out, value);
  }
}

std::string EncodeLabels(const model::Labels& labels) {
  std::string out;
  AppendEncodedLabels(out, labels);
  return out;
}

model::Labels DecodeLabels(std::string_view text) {
  model::Labels labels;
  std::string key;
  std::string value;
  std::string* current = &key;
  bool have_pair = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      current->push_back(text[++i]);
      have_pair = true;
    } else if (c == '=' && current == &key) {
      current = &value;
      have_pair = true;
    } else if (c == ',') {
      labels.Set(key, value);
      key.clear();
      value.clear();
      current = &key;
      have_pair = false;
    } else {
      current->push_back(c);
      have_pair = true;
    }
  }
  if (have_pair) {
    labels.Set(key, value);
  }
  return labels;
}

}  // namespace warpscope::server
