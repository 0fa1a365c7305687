// SPDX-License-Identifier: Apache-2.0
#include "pyframes/splice.h"

#include <utility>

namespace warpscope::pyframes {

NativeKind ClassifyNativeSymbol(std::string_view symbol) {
  if (symbol.starts_with("py::")) {
    return NativeKind::kPerfTrampoline;
  }
  // An outlined piece of a function: _PyEval_EvalFrameDefault.cold, .part.0, .lto_priv.0.
  const std::string_view base = symbol.substr(0, symbol.find('.'));
  if (base == "_PyEval_EvalFrameDefault") {
    return NativeKind::kEvalLoop;
  }
  if (base.starts_with("_TAIL_CALL_")) {
    return NativeKind::kEvalHelper;
  }
  return NativeKind::kOther;
}

SpliceStats SpliceStacks(std::span<const NativeKind> native, std::span<const PythonFrame> python,
                         std::vector<SplicedFrame>* out) {
  out->clear();
  SpliceStats st;
  std::vector<std::pair<uint32_t, uint32_t>> groups;  // [begin, end) into `python`
  uint32_t begin = 0;
  for (uint32_t i = 0; i < python.size(); ++i) {
    if (python[i].eval_entry) {
      groups.emplace_back(begin, i + 1);
      begin = i + 1;
    }
  }
  if (begin < python.size()) {
    groups.emplace_back(begin, static_cast<uint32_t>(python.size()));
  }
  std::vector<uint32_t> evals;
  for (uint32_t i = 0; i < native.size(); ++i) {
    if (native[i] == NativeKind::kEvalLoop) {
      evals.push_back(i);
    }
  }
  st.eval_frames = static_cast<uint32_t>(evals.size());
  st.python_groups = static_cast<uint32_t>(groups.size());
  if (python.empty()) {
    for (uint32_t i = 0; i < native.size(); ++i) {
      out->push_back({false, i});
    }
    return st;
  }
  // For each native frame, the Python frames that replace it (none: kept as is).
  std::vector<std::pair<uint32_t, uint32_t>> replace(native.size(), {0, 0});
  std::vector<bool> replaced(native.size(), false);
  if (groups.size() == evals.size()) {
    for (size_t g = 0; g < groups.size(); ++g) {
      replace[evals[g]] = groups[g];
      replaced[evals[g]] = true;
    }
  } else if (!evals.empty()) {
    st.mismatch = true;
    replace[evals.back()] = {0, static_cast<uint32_t>(python.size())};
    replaced[evals.back()] = true;
  } else {
    st.python_unplaced = true;
  }
  for (uint32_t i = 0; i < native.size(); ++i) {
    if (native[i] == NativeKind::kEvalHelper || native[i] == NativeKind::kPerfTrampoline) {
      continue;
    }
    if (!replaced[i]) {
      out->push_back({false, i});
      continue;
    }
    for (uint32_t p = replace[i].first; p < replace[i].second; ++p) {
      out->push_back({true, p});
    }
  }
  if (st.python_unplaced) {
    for (uint32_t p = 0; p < python.size(); ++p) {
      out->push_back({true, p});
    }
  }
  return st;
}

}  // namespace warpscope::pyframes
