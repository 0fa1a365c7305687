// SPDX-License-Identifier: Apache-2.0
// Test helper for code that loads the NVML simulator (src/sim/nvml): writes a scenario into a
// fresh temporary directory, points WARPSCOPE_SIM_SCENARIO at it, and keeps the simulator
// library open with its manual clock at t = 0, so the code under test (which dlopens the same
// path and therefore gets the same instance) sees a deterministic simulated time that only the
// test moves with SetTime(). The simulator is loaded once per test process and never unloaded.
//
// The simulator paths come from the compile definitions WARPSCOPE_NVML_SIM_PATH and
// WARPSCOPE_NVML_SIM_LEGACY_PATH (see warpscope_nvml_use_simulator() in src/nvml/CMakeLists.txt);
// kSimPath / kLegacySimPath are "" when the simulator target does not exist.
//
//   SimEnvironment sim(R"(name: t
//   devices: [{name: "NVIDIA H100", architecture: hopper}])");
//   ASSERT_TRUE(sim.ok()) << sim.error();
//   auto lib = NvmlLibrary::Load(sim.library_path());
//   sim.SetTime(30.0);
#ifndef WARPSCOPE_NVML_TESTING_SIM_ENVIRONMENT_H_
#define WARPSCOPE_NVML_TESTING_SIM_ENVIRONMENT_H_

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

namespace warpscope::nvml::testing {

#ifdef WARPSCOPE_NVML_SIM_PATH
inline constexpr std::string_view kSimPath = WARPSCOPE_NVML_SIM_PATH;
#else
inline constexpr std::string_view kSimPath = "";
#endif
#ifdef WARPSCOPE_NVML_SIM_LEGACY_PATH
inline constexpr std::string_view kLegacySimPath = WARPSCOPE_NVML_SIM_LEGACY_PATH;
#else
inline constexpr std::string_view kLegacySimPath = "";
#endif

class SimEnvironment {
 public:
  explicit SimEnvironment(std::string_view scenario_yaml, std::string_view library = kSimPath)
      : library_path_(library) {
    if (library_path_.empty()) {
      error_ = "the NVML simulator target is not part of this build";
      return;
    }
    std::string templ = (std::filesystem::temp_directory_path() / "warpscope-nvml-XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = templ;
    scenario_path_ = dir_ + "/scenario.yaml";
    {
      std::ofstream out(scenario_path_);
      out << scenario_yaml;
    }
    setenv("WARPSCOPE_SIM_SCENARIO", scenario_path_.c_str(), 1);
    handle_ = KeepLoaded(library_path_);
    if (handle_ == nullptr) {
      const char* e = dlerror();
      error_ = e == nullptr ? "dlopen failed" : e;
      return;
    }
    set_time_ = reinterpret_cast<void (*)(long long)>(dlsym(handle_, "warpscope_sim_set_time_ns"));
    if (set_time_ == nullptr) {
      error_ = "the simulator does not export warpscope_sim_set_time_ns";
      return;
    }
    set_time_(0);
  }
  ~SimEnvironment() {
    unsetenv("WARPSCOPE_SIM_SCENARIO");
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  SimEnvironment(const SimEnvironment&) = delete;
  SimEnvironment& operator=(const SimEnvironment&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& library_path() const { return library_path_; }
  const std::string& scenario_path() const { return scenario_path_; }
  const std::string& dir() const { return dir_; }

  // Simulated time in seconds since the start of the scenario.
  void SetTime(double seconds) {
    if (set_time_ != nullptr) {
      set_time_(static_cast<long long>(seconds * 1e9));
    }
  }

 private:
  // The simulator stays loaded for the rest of the test process: its global state is never
  // destroyed by design, and unloading it per test would show up as leaks under ASan. NVML
  // state still starts afresh: the scenario is read again when the init count goes 0 -> 1.
  static void* KeepLoaded(const std::string& path) {
    static std::mutex mu;
    static std::map<std::string, void*> handles;
    std::lock_guard lock(mu);
    void*& handle = handles[path];
    if (handle == nullptr) {
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    return handle;
  }

  std::string library_path_;
  std::string dir_;
  std::string scenario_path_;
  std::string error_;
  void* handle_ = nullptr;
  void (*set_time_)(long long) = nullptr;
};

}  // namespace warpscope::nvml::testing

#endif  // WARPSCOPE_NVML_TESTING_SIM_ENVIRONMENT_H_
