// SPDX-License-Identifier: Apache-2.0
// Tests only: a fresh directory under $TMPDIR (or /tmp), removed with its content on
// destruction. Every test that needs files uses this one.
#ifndef WARPSCOPE_BASE_TESTING_TEMP_DIR_H_
#define WARPSCOPE_BASE_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace warpscope::base {

class TempDir {
 public:
  // `prefix` names the directory ("<prefix>XXXXXX") so that a leftover one says whose it is.
  explicit TempDir(std::string_view prefix = "warpscope_test_") {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" +
                       std::string(prefix) + "XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) {
      path_ = tmpl;
    }
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // "" when the directory could not be created (tests check it before use).
  const std::string& path() const { return path_; }
  // Names in the directory that end with `suffix`, sorted.
  std::vector<std::string> Files(std::string_view suffix = "") const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
      std::string name = entry.path().filename().string();
      if (name.size() >= suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        out.push_back(std::move(name));
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string path_;
};

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_TESTING_TEMP_DIR_H_
