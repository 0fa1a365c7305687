// SPDX-License-Identifier: Apache-2.0
#include "server/insights/finding_store.h"

#include <cstdio>

#include "base/file_util.h"

namespace warpscope::server::insights {
namespace {

constexpr int kVersion = 1;
// Findings are bounded by the tracker (open ones per rule and entity, 1,000 resolved), so the
// file stays small; a larger one is not ours.
constexpr size_t kMaxFileBytes = 64u << 20;

}  // namespace

base::Result<std::vector<Finding>> FileFindingStore::Load() {
  base::Result<std::string> text = base::ReadFile(path_, kMaxFileBytes);
  if (!text) {
    if (text.error().code() == base::StatusCode::kNotFound) return std::vector<Finding>{};
    return base::Error(text.error());
  }
  auto unreadable = [this](const std::string& why) -> base::Status {
    const std::string aside = path_ + ".unreadable";
    std::rename(path_.c_str(), aside.c_str());
    return base::InvalidArgument("{}: {}; moved it to {} and starting with no findings", path_, why,
                                 aside);
  };
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return base::Error(unreadable("not JSON"));
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int>() != kVersion) {
    return base::Error(unreadable("not a version 1 findings file"));
  }
  auto list = doc.find("findings");
  if (list == doc.end() || !list->is_array()) return base::Error(unreadable("no findings list"));
  std::vector<Finding> out;
  out.reserve(list->size());
  for (const nlohmann::json& j : *list) {
    base::Result<Finding> f = FindingFromJson(j);
    if (!f) return base::Error(unreadable(f.error().message()));
    out.push_back(std::move(*f));
  }
  return out;
}

base::Status FileFindingStore::Save(const std::vector<Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const Finding& f : findings) list.push_back(FindingJson(f, /*for_storage=*/true));
  nlohmann::json doc = {{"version", kVersion}, {"findings", std::move(list)}};
  return base::WriteFileAtomically(path_, doc.dump());
}

}  // namespace warpscope::server::insights
