// SPDX-License-Identifier: Apache-2.0
#include "pyframes/splice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warpscope::pyframes {
namespace {

// Splices and renders the result innermost first: native frames by symbol, Python frames as
// "py:<function>".
std::string Render(const std::vector<std::string>& native, const std::vector<PythonFrame>& py,
                   SpliceStats* stats = nullptr) {
  std::vector<NativeKind> kinds;
  for (const std::string& s : native) {
    kinds.push_back(ClassifyNativeSymbol(s));
  }
  std::vector<SplicedFrame> out;
  const SpliceStats st = SpliceStacks(kinds, py, &out);
  if (stats != nullptr) {
    *stats = st;
  }
  std::string text;
  for (const SplicedFrame& f : out) {
    text += (f.python ? "py:" + py[f.index].function : native[f.index]) + " ";
  }
  return text;
}

PythonFrame Py(const std::string& function, bool entry) {
  PythonFrame f;
  f.function = function;
  f.file = "train.py";
  f.eval_entry = entry;
  return f;
}

TEST(SpliceTest, ClassifiesTheEvalLoopAndItsPieces) {
  EXPECT_EQ(ClassifyNativeSymbol("_PyEval_EvalFrameDefault"), NativeKind::kEvalLoop);
  EXPECT_EQ(ClassifyNativeSymbol("_PyEval_EvalFrameDefault.cold"), NativeKind::kEvalLoop);
  EXPECT_EQ(ClassifyNativeSymbol("_PyEval_EvalFrameDefault.part.0"), NativeKind::kEvalLoop);
  // Wrappers that call the eval loop are native frames of their own.
  EXPECT_EQ(ClassifyNativeSymbol("PyEval_EvalFrameEx"), NativeKind::kOther);
  EXPECT_EQ(ClassifyNativeSymbol("_PyEval_Vector"), NativeKind::kOther);
  EXPECT_EQ(ClassifyNativeSymbol("_PyEval_EvalFrameDefaultX"), NativeKind::kOther);
  EXPECT_EQ(ClassifyNativeSymbol("_TAIL_CALL_LOAD_FAST"), NativeKind::kEvalHelper);
  EXPECT_EQ(ClassifyNativeSymbol("py::Trainer.step:/app/train.py"), NativeKind::kPerfTrampoline);
  EXPECT_EQ(ClassifyNativeSymbol("at::native::add"), NativeKind::kOther);
}

// 3.9/3.10: one eval-loop call per Python frame, so every frame is an entry.
TEST(SpliceTest, ThreeTenOneEvalFramePerPythonFrame) {
  const std::vector<std::string> native = {"kernel_fn",
                                           "at::native::add",
                                           "_PyEval_EvalFrameDefault",
                                           "_PyFunction_Vectorcall",
                                           "_PyEval_EvalFrameDefault",
                                           "_PyEval_EvalFrameDefault",
                                           "PyRun_SimpleFile",
                                           "main"};
  const std::vector<PythonFrame> py = {Py("forward", true), Py("step", true), Py("<module>", true)};
  SpliceStats st;
  EXPECT_EQ(Render(native, py, &st),
            "kernel_fn at::native::add py:forward _PyFunction_Vectorcall py:step py:<module> "
            "PyRun_SimpleFile main ");
  EXPECT_EQ(st.eval_frames, 3u);
  EXPECT_EQ(st.python_groups, 3u);
  EXPECT_FALSE(st.mismatch);
}

// 3.11+: one eval-loop call runs Python-to-Python calls inline; a C call back into Python
// (torch calling a Python hook, map() calling a lambda) starts another.
TEST(SpliceTest, ThreeElevenEntryFramesGroupPythonFrames) {
  const std::vector<std::string> native = {"at::native::add",
                                           "_PyEval_EvalFrameDefault",
                                           "torch::autograd::call_hook",
                                           "_PyEval_EvalFrameDefault",
                                           "Py_RunMain",
                                           "main"};
  const std::vector<PythonFrame> py = {Py("hook_inner", false), Py("hook", true),
                                       Py("forward", false), Py("step", false),
                                       Py("<module>", true)};
  SpliceStats st;
  EXPECT_EQ(Render(native, py, &st),
            "at::native::add py:hook_inner py:hook torch::autograd::call_hook py:forward py:step "
            "py:<module> Py_RunMain main ");
  EXPECT_EQ(st.python_groups, 2u);
  EXPECT_FALSE(st.mismatch);
}

TEST(SpliceTest, FramesAfterTheLastEntryFormTheOutermostGroup) {
  // A walk cut by its depth limit: the outermost group has no entry mark.
  const std::vector<std::string> native = {"_PyEval_EvalFrameDefault", "call",
                                           "_PyEval_EvalFrameDefault", "main"};
  const std::vector<PythonFrame> py = {Py("a", true), Py("b", false)};
  EXPECT_EQ(Render(native, py), "py:a call py:b main ");
}

TEST(SpliceTest, DisagreeingCountsPutEveryPythonFrameAtTheOutermostEvalFrame) {
  const std::vector<std::string> native = {"_PyEval_EvalFrameDefault", "call_hook",
                                           "_PyEval_EvalFrameDefault", "main"};
  const std::vector<PythonFrame> py = {Py("a", true), Py("b", true), Py("c", true)};  // torn
  SpliceStats st;
  EXPECT_EQ(Render(native, py, &st), "_PyEval_EvalFrameDefault call_hook py:a py:b py:c main ");
  EXPECT_TRUE(st.mismatch);
  EXPECT_EQ(st.eval_frames, 2u);
  EXPECT_EQ(st.python_groups, 3u);
}

TEST(SpliceTest, NoEvalFramePutsPythonFramesOutermost) {
  // The native unwind stopped before reaching the interpreter.
  const std::vector<std::string> native = {"memcpy", "[unwind stopped]"};
  SpliceStats st;
  EXPECT_EQ(Render(native, {Py("load", true)}, &st), "memcpy [unwind stopped] py:load ");
  EXPECT_TRUE(st.python_unplaced);
}

TEST(SpliceTest, NoPythonFramesLeaveTheNativeStackAlone) {
  const std::vector<std::string> native = {"_TAIL_CALL_CALL", "_PyEval_EvalFrameDefault",
                                           "py::f:/a.py", "main"};
  SpliceStats st;
  EXPECT_EQ(Render(native, {}, &st), "_TAIL_CALL_CALL _PyEval_EvalFrameDefault py::f:/a.py main ");
  EXPECT_FALSE(st.mismatch);
}

TEST(SpliceTest, TrampolinesAndHelpersGoWhenPythonFramesArePlaced) {
  const std::vector<std::string> native = {"sleep", "_TAIL_CALL_CALL", "_PyEval_EvalFrameDefault",
                                           "py::f:/a.py", "main"};
  EXPECT_EQ(Render(native, {Py("f", true)}), "sleep py:f main ");
}

TEST(SpliceTest, EmptyInputs) {
  std::vector<SplicedFrame> out = {{true, 3}};
  const SpliceStats st = SpliceStacks({}, {}, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(st.mismatch);
}

}  // namespace
}  // namespace warpscope::pyframes
