// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/cupti_search.h"

#include <glob.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <string_view>

namespace warpscope::cupti_inject {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

void AddOnce(std::vector<std::string>& out, std::string s) {
  if (std::find(out.begin(), out.end(), s) == out.end()) {
    out.push_back(std::move(s));
  }
}

// "/x/lib/python3.11/site-packages" for any path below a site-packages or dist-packages folder.
std::vector<std::string> PythonEnvironments(const std::vector<std::string>& loaded) {
  std::vector<std::string> envs;
  for (const std::string& path : loaded) {
    for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
      const size_t at = path.find(marker);
      if (at != std::string::npos) {
        AddOnce(envs, path.substr(0, at + marker.size() - 1));
      }
    }
  }
  return envs;
}

std::vector<std::string> PythonLibDirs(const std::vector<std::string>& loaded) {
  std::vector<std::string> dirs;
  for (const std::string& env : PythonEnvironments(loaded)) {
    // PyTorch's CUDA 12 wheels depend on nvidia-cuda-cupti-cu12 (nvidia/cuda_cupti/lib); the
    // CUDA 13 wheels put every component in nvidia/cu13/lib.
    dirs.push_back(env + "/nvidia/cuda_cupti/lib");
    dirs.push_back(env + "/nvidia/cu13/lib");
  }
  return dirs;
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      out.emplace_back(g.gl_pathv[i]);
    }
  }
  globfree(&g);
  return out;
}

// Newest toolkit first, by numeric version: cuda-13.0, cuda-12.10, cuda-12.4.
bool NewerToolkit(const std::string& a, const std::string& b) {
  auto version = [](const std::string& dir) {
    std::vector<long> parts;
    const size_t dash = dir.rfind("cuda-");
    if (dash == std::string::npos) {
      return parts;
    }
    std::string_view v(dir);
    v.remove_prefix(dash + 5);
    long n = 0;
    bool any = false;
    for (char c : v) {
      if (c >= '0' && c <= '9') {
        n = n * 10 + (c - '0');
        any = true;
      } else if (c == '.') {
        parts.push_back(n);
        n = 0;
      } else {
        break;
      }
    }
    if (any) {
      parts.push_back(n);
    }
    return parts;
  };
  return version(a) > version(b);
}

std::vector<std::string> ToolkitLibDirs(const std::string& root) {
  std::vector<std::string> toolkits = {root + "/usr/local/cuda"};
  std::vector<std::string> versioned = Glob(root + "/usr/local/cuda-*");
  std::sort(versioned.begin(), versioned.end(), NewerToolkit);
  toolkits.insert(toolkits.end(), versioned.begin(), versioned.end());
  std::vector<std::string> dirs;
  for (const std::string& t : toolkits) {
    AddOnce(dirs, t + "/extras/CUPTI/lib64");
    for (std::string& d : Glob(t + "/targets/*/lib")) {
      AddOnce(dirs, std::move(d));
    }
    AddOnce(dirs, t + "/lib64");
  }
  return dirs;
}

void AddPresent(const std::vector<std::string>& dirs, std::vector<std::string>& out) {
  for (const std::string& dir : dirs) {
    for (const char* soname : kCuptiSonames) {
      std::string path = dir + "/" + soname;
      if (IsFile(path)) {
        AddOnce(out, std::move(path));
      }
    }
  }
}

bool HoldsCupti(const std::string& dir) {
  for (const char* soname : kCuptiSonames) {
    if (IsFile(dir + "/" + soname)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> CuptiCandidates(const CuptiSearch& search) {
  std::vector<std::string> out;
  if (!search.configured.empty()) {
    out.push_back(search.configured);
    return out;
  }
  for (const std::string& path : search.loaded) {
    if (Basename(path).starts_with("libcupti.so")) {
      AddOnce(out, path);
    }
  }
  AddPresent(PythonLibDirs(search.loaded), out);
  if (search.sonames) {
    for (const char* soname : kCuptiSonames) {
      AddOnce(out, soname);
    }
  }
  AddPresent(ToolkitLibDirs(search.root), out);
  return out;
}

std::vector<std::string> CuptiPlacesSearched(const CuptiSearch& search) {
  std::vector<std::string> out;
  if (!search.configured.empty()) {
    return out;
  }
  for (const std::string& dir : PythonLibDirs(search.loaded)) {
    if (!HoldsCupti(dir)) {
      out.push_back(dir);
    }
  }
  bool toolkit_cupti = false;
  for (const std::string& dir : ToolkitLibDirs(search.root)) {
    toolkit_cupti = toolkit_cupti || HoldsCupti(dir);
  }
  if (!toolkit_cupti) {
    out.push_back(search.root + "/usr/local/cuda*/extras/CUPTI/lib64");
    out.push_back(search.root + "/usr/local/cuda*/targets/*/lib");
  }
  return out;
}

std::vector<std::string> LoadedObjectPaths() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
          static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &out);
  return out;
}

}  // namespace warpscope::cupti_inject
