// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_INSTALL_LAYOUT_H_
#define WARPSCOPE_CLI_INSTALL_LAYOUT_H_

#include <string>

namespace warpscope::cli {

// Where the `warpscope` binary finds the files it loads or runs, from the directory it runs
// from (`bin_dir`). Two layouts:
//   installed (the package, `cmake --install`): <bin_dir>/../lib/warpscope/ exists and holds
//     libwarpscope_cupti.so, libwarpscope_nccl.so, sim/ and the helper programs (warpscope-demo-workload,
//     warpscope-fake-inference), as /usr/lib/warpscope/ does for /usr/bin/warpscope;
//   build tree: <bin_dir>/../lib/libwarpscope_{cupti,nccl}.so, <bin_dir>/../lib/sim/ and the helper
//     programs beside the binary.
// Both: the shipped scenarios in <bin_dir>/../share/warpscope/scenarios/.
// Nothing is checked beyond the choice of layout: a missing file is the caller's error.
struct InstallLayout {
  std::string cupti_inject;   // libwarpscope_cupti.so (CUDA_INJECTION64_PATH)
  std::string nccl_plugin;    // libwarpscope_nccl.so (NCCL_PROFILER_PLUGIN)
  std::string sim_dir;        // libnvidia-ml.so.1, libcupti.so and the demo cubin of --simulate
  std::string helper_dir;     // warpscope-demo-workload, warpscope-fake-inference
  std::string scenarios_dir;  // <name>.yaml of --simulate NAME
};

InstallLayout FindInstallLayout(const std::string& bin_dir);

// FindInstallLayout(base::ExecutableDir()).
InstallLayout OwnInstallLayout();

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_INSTALL_LAYOUT_H_
