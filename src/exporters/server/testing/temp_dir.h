// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_SERVER_TESTING_TEMP_DIR_H_
#define WARPSCOPE_EXPORTERS_SERVER_TESTING_TEMP_DIR_H_

#include <dirent.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace warpscope::exporters::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its content on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/warpscope_push_XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) {
      path_ = tmpl;
    }
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Names in the directory that end with `suffix`, sorted.
  std::vector<std::string> Files(const std::string& suffix = "") const {
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

}  // namespace warpscope::exporters::testing

#endif  // WARPSCOPE_EXPORTERS_SERVER_TESTING_TEMP_DIR_H_
