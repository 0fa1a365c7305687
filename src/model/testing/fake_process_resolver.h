// SPDX-License-Identifier: Apache-2.0
// Tests only: a ProcessResolver over a fixed table of processes.
#ifndef WARPSCOPE_MODEL_TESTING_FAKE_PROCESS_RESOLVER_H_
#define WARPSCOPE_MODEL_TESTING_FAKE_PROCESS_RESOLVER_H_

#include <map>
#include <utility>

#include "model/process.h"

namespace warpscope::model {

class FakeProcessResolver : public ProcessResolver {
 public:
  void Add(ProcessInfo info) { table_[info.pid] = std::move(info); }
  // The process left /proc (it exited, or is exiting).
  void Remove(int pid) { table_.erase(pid); }
  const ProcessInfo* Resolve(int pid) override {
    auto it = table_.find(pid);
    return it == table_.end() ? nullptr : &it->second;
  }

 private:
  std::map<int, ProcessInfo> table_;
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_TESTING_FAKE_PROCESS_RESOLVER_H_
