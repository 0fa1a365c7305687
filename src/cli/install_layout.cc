// SPDX-License-Identifier: Apache-2.0
#include "cli/install_layout.h"

#include <filesystem>
#include <system_error>

#include "base/file_util.h"

namespace warpscope::cli {

namespace fs = std::filesystem;

InstallLayout FindInstallLayout(const std::string& bin_dir) {
  const fs::path bin(bin_dir);
  const fs::path prefix = bin.parent_path();
  std::error_code ec;
  // The FHS keeps a package's private libraries and programs in /usr/lib/<package>/, not in
  // /usr/lib/ and /usr/bin/; a build tree has no such directory.
  const fs::path private_dir = prefix / "lib" / "warpscope";
  const bool installed = fs::is_directory(private_dir, ec);
  const fs::path lib = installed ? private_dir : prefix / "lib";
  InstallLayout layout;
  layout.cupti_inject = (lib / "libwarpscope_cupti.so").string();
  layout.nccl_plugin = (lib / "libwarpscope_nccl.so").string();
  layout.sim_dir = (lib / "sim").string();
  layout.helper_dir = installed ? private_dir.string() : bin.string();
  layout.scenarios_dir = (prefix / "share" / "warpscope" / "scenarios").string();
  return layout;
}

InstallLayout OwnInstallLayout() { return FindInstallLayout(base::ExecutableDir()); }

}  // namespace warpscope::cli
