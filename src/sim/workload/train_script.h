// SPDX-License-Identifier: Apache-2.0
// The Python program every demo workload runs in its embedded interpreter (train_script.cc).
#ifndef WARPSCOPE_SIM_WORKLOAD_TRAIN_SCRIPT_H_
#define WARPSCOPE_SIM_WORKLOAD_TRAIN_SCRIPT_H_

namespace warpscope::sim::workload {

// Source text, compiled under the file name kTrainScriptFile; it imports the `simcuda` module.
extern const char kTrainScript[];
inline constexpr char kTrainScriptFile[] = "train.py";

}  // namespace warpscope::sim::workload

#endif  // WARPSCOPE_SIM_WORKLOAD_TRAIN_SCRIPT_H_
