// SPDX-License-Identifier: Apache-2.0
// The insights confusion matrix: every shipped scenario (scenarios/*.yaml), run through the
// agent, the server's ingest and storage and the insights engine with its default rules,
// raises exactly the rules kExpectations gives it, on exactly those entities, each firing by
// its deadline, and no other rule on any entity at any time, not even as a pending finding.
// Scenarios named <set>-node<N> run together as one fleet, one host each. The matrix is printed
// at the end (docs/insights.md, "Which scenario raises what").
//
// Time is simulated (sim_fleet.h): the agents collect every 1 s and push every 10 s and the
// server evaluates every 10 s, as under `warpscope up --simulate`, but an hour of a scenario
// takes seconds. A scenario without a row in kExpectations fails the test, so that a new one
// cannot be forgotten.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/testing/temp_dir.h"
#include "fmt/format.h"
#include "sim_fleet.h"

namespace warpscope::test {
namespace {

using nlohmann::json;

struct Expected {
  std::string rule;
  std::string entity;  // as Label() names it: "gpu 3", "pid 81002", "node2/gpu 0", "cluster"
  double deadline_min;  // simulated minutes since the start by which it must be firing
};

struct SetExpectation {
  std::string set;     // a scenario's name, or <set> for <set>-node<N> files
  double minutes;      // how long to run it (simulated)
  std::vector<Expected> expected;
  std::string why;     // what the scenario's story is, or why a rule is not expected
};

// Every rule of the product the engine evaluates, or will: the matrix's columns.
const std::vector<std::string> kRules = {
    "input_bound",   "memory_bound",    "tensor_cores_idle", "underpowered",
    "thermal_outlier", "cooling_failure", "power_drop",        "hardware_errors",
    "memory_leak",   "idle_allocated",  "fleet_regression",
    "inference_overprovisioned", "inference_queueing", "inference_slow_first_token",
    "inference_memory_bound"};

std::vector<Expected> OnGpus(const std::string& rule, std::initializer_list<int> gpus,
                             double deadline_min, const std::string& host = "") {
  std::vector<Expected> out;
  for (int g : gpus) {
    out.push_back({rule, (host.empty() ? "" : host + "/") + fmt::format("gpu {}", g),
                   deadline_min});
  }
  return out;
}

// Rule 13's findings on the serving processes of `gpus`, one each (as Label() names them).
std::vector<Expected> OnServers(const std::string& rule, std::initializer_list<int> gpus,
                                double deadline_min) {
  std::vector<Expected> out;
  for (int g : gpus) out.push_back({rule, fmt::format("vllm of gpu {}", g), deadline_min});
  return out;
}

std::vector<Expected> Join(std::initializer_list<std::vector<Expected>> parts) {
  std::vector<Expected> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Scenario sets run at the same time (each with its own server and host processes).
constexpr int kParallelSets = 4;

constexpr std::initializer_list<int> kAll8 = {0, 1, 2, 3, 4, 5, 6, 7};

// The expectations: one row per shipped scenario (or fleet). Deadlines leave a minute or two
// past the rule's window and hold after the fault begins (docs/insights.md, "Rules").
const std::vector<SetExpectation>& Expectations() {
  static const std::vector<SetExpectation> table = {
      {"healthy-8xh100", 20, {}, "busy, healthy training: the baseline, nothing fires"},
      {"allocator-warmup", 15, {},
       "memory grows only while the allocator warms up (first 4 min): not a leak"},
      {"cooling-failure", 14,
       Join({OnGpus("cooling_failure", {2}, 7), OnGpus("power_drop", {2}, 8.5),
             OnGpus("thermal_outlier", {2}, 11)}),
       "GPU 2 heats 12.5 °C/min from 5m, throttles to ~320 W at 7m and stays hot"},
      {"dataloader-bound", 12, OnGpus("input_bound", kAll8, 9),
       "ranks saturate their CPUs while the GPUs are ~30 % busy; underpowered judges only GPUs "
       "at least 80 % busy (the input_bound finding names the cause)"},
      {"fleet-regression", 60, {{"fleet_regression", "cluster", 50}},
       "three hosts decline together from 10m to 50m; no GPU stands out"},
      {"hardware-errors", 12,
       Join({OnGpus("hardware_errors", {6}, 5), OnGpus("hardware_errors", {3}, 6)}),
       "GPU 6: uncorrectable ECC and XIDs from 4m, GPU 3: NVLink XID 74 at 5m; GPU 1's "
       "correctable ECC is no finding"},
      {"idle-allocated", 12, OnGpus("idle_allocated", kAll8, 11),
       "61 GiB held per GPU at ~0 % utilisation"},
      {"inference-overprovisioned", 12, OnServers("inference_overprovisioned", {0, 1, 2, 3}, 11),
       "~12 % busy L40S, each GPU's fake vLLM (up's) at ~3 % of its batch: over-provisioned "
       "once 80 % of the 10-minute window is under 30 %"},
      {"memory-bound", 13, OnGpus("memory_bound", kAll8, 12),
       "DRAM ~92 % busy at low SM occupancy"},
      {"memory-leak", 16,
       {{"memory_leak", "pid 81000", 16}, {"memory_leak", "pid 81001", 16},
        {"memory_leak", "pid 81002", 16}, {"memory_leak", "pid 81003", 16},
        {"memory_leak", "pid 81004", 16}, {"memory_leak", "pid 81005", 16},
        {"memory_leak", "pid 81006", 16}, {"memory_leak", "pid 81007", 16}},
       "each rank's process grows ~0.33 GiB/min after a 2-minute load"},
      {"mig-node", 12, OnGpus("hardware_errors", {0}, 9),
       "XID 43 in GPU 0's MIG instance at 8m; the idle MIG instance is not judged (the engine "
       "reads whole GPUs)"},
      {"old-driver", 12, {}, "compatibility only: busy A100s on an old driver"},
      {"power-brake", 20, OnGpus("power_drop", {0, 1, 2, 3}, 7),
       "GPUs 0-3 braked from ~650 to ~290 W at 6m, released at 16m"},
      {"tensor-idle", 14, OnGpus("tensor_cores_idle", kAll8, 12),
       "FP32 matmuls: tensor pipes ~2 % busy on fully busy GPUs"},
      {"thermal-outlier", 10, OnGpus("thermal_outlier", {5}, 9),
       "GPU 5 runs ~9 °C above its peers at the same power"},
      {"training-straggler", 12, {},
       "GPU 5's lower SM clock (~1650 MHz, applications clocks) at ~605 W and its peers' "
       "temperature: no GPU rule. Its rank's straggling (training_straggler) needs the steps of "
       "up's ddp workloads, which this NVML-only run has not (DemoUpTest runs them)"},
      {"xid-crash", 10, OnGpus("hardware_errors", {4}, 6),
       "XID 79 on GPU 4 at 5m; the job dies at 6m"},
  };
  return table;
}

// The scenario sets in scenarios/: name -> files, <set>-node<N> grouped under <set>.
std::map<std::string, std::vector<std::filesystem::path>> ShippedSets() {
  std::map<std::string, std::vector<std::filesystem::path>> sets;
  const std::regex node(R"((.+)-node(\d+))");
  for (const auto& e : std::filesystem::directory_iterator(WARPSCOPE_SOURCE_DIR "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    const std::string stem = e.path().stem().string();
    std::smatch m;
    sets[std::regex_match(stem, m, node) ? m[1].str() : stem].push_back(e.path());
  }
  for (auto& [name, files] : sets) std::sort(files.begin(), files.end());
  return sets;
}

// The host name of a scenario file in its set: "node<N>" in a fleet, else the scenario's name.
std::string HostnameOf(const std::filesystem::path& file) {
  static const std::regex node(R"(.+-(node\d+))");
  const std::string stem = file.stem().string();
  std::smatch m;
  return std::regex_match(stem, m, node) ? m[1].str() : stem;
}

std::string Attr(const json& f, const char* key) {
  const json& a = f["attributes"];
  return a.is_object() && a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
}

// How the matrix names a finding's entity: "gpu 3", "gpu 0 gi 9", "pid 81002", a serving
// process by its GPUs ("vllm of gpu 0"), or the kind for an entity that stands for many hosts
// ("cluster"); prefixed with the host in a fleet.
std::string Label(const json& f, bool fleet) {
  const std::string kind = f.value("kind", "");
  std::string name;
  if (kind == "gpu") {
    name = "gpu " + Attr(f, "gpu.index");
  } else if (kind == "mig") {
    name = "gpu " + Attr(f, "gpu.index") + " gi " + Attr(f, "mig.gpu_instance_id");
  } else if (kind == "process" && !Attr(f, "inference.engine").empty()) {
    // A serving process, by the GPUs it serves: its pid is the fake server's, unknown here.
    std::string gpus;
    const json& evidence = f.contains("evidence") ? f["evidence"] : json::object();
    for (const json& g : evidence.value("gpus", json::array())) {
      gpus += (gpus.empty() ? "" : ",") + g.value("index", std::string("?"));
    }
    name = gpus.empty() ? "pid " + Attr(f, "process.pid")
                        : Attr(f, "inference.engine") + " of gpu " + gpus;
  } else if (kind == "process") {
    name = "pid " + Attr(f, "process.pid");
  } else {
    return kind;
  }
  return fleet ? f.value("host", "") + "/" + name : name;
}

struct Seen {
  double first_pending_min = -1;
  double first_firing_min = -1;
  std::string last_state;
  std::set<std::string> ids;
  std::string summary;
};

struct SetResult {
  std::map<std::pair<std::string, std::string>, Seen> seen;  // (rule, entity label)
  std::string error;
  double wall_s = 0;
};

SetResult RunSet(const SetExpectation& expectation,
                 const std::vector<std::filesystem::path>& files) {
  SetResult result;
  const auto wall_start = std::chrono::steady_clock::now();
  base::TempDir dir("warpscope_confusion_");
  std::vector<SimHost> hosts;
  for (const auto& f : files) hosts.push_back({f.string(), HostnameOf(f)});
  auto fleet = SimFleet::Start(hosts, dir.path());
  if (!fleet) {
    result.error = fleet.error().message();
    return result;
  }
  const bool is_fleet = files.size() > 1;
  base::Status st = (*fleet)->RunUntil(
      std::chrono::seconds(static_cast<int64_t>(expectation.minutes * 60)),
      [&](base::Duration t, const json& answer) {
        const double minute = base::ToSeconds(t) / 60;
        for (const json& f : answer["insights"]) {
          Seen& s = result.seen[{f.value("rule", ""), Label(f, is_fleet)}];
          const std::string state = f.value("state", "");
          if (state == "pending" && s.first_pending_min < 0) s.first_pending_min = minute;
          if (state == "firing" && s.first_firing_min < 0) s.first_firing_min = minute;
          s.ids.insert(f.value("id", ""));
          if (s.summary.empty() || state == "firing") s.summary = f.value("summary", "");
        }
        // The state at the end: that of the newest finding of each (rule, entity).
        for (auto& [key, s] : result.seen) s.last_state = "";
        for (const json& f : answer["insights"]) {
          Seen& s = result.seen[{f.value("rule", ""), Label(f, is_fleet)}];
          if (s.last_state.empty() || f.value("state", "") != "resolved") {
            s.last_state = f.value("state", "");
          }
        }
      });
  (*fleet)->Stop();
  if (!st.ok()) result.error = st.message();
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

// What went wrong in one set; empty when it raised exactly its expectations in time.
std::vector<std::string> Check(const SetExpectation& e, const SetResult& r) {
  std::vector<std::string> problems;
  if (!r.error.empty()) return {"did not run: " + r.error};
  std::set<std::pair<std::string, std::string>> expected;
  for (const Expected& x : e.expected) {
    expected.insert({x.rule, x.entity});
    auto it = r.seen.find({x.rule, x.entity});
    if (it == r.seen.end() || it->second.first_firing_min < 0) {
      problems.push_back(fmt::format("{} on {}: expected firing by {} min, never fired{}", x.rule,
                                     x.entity, x.deadline_min,
                                     it == r.seen.end() ? "" : " (pending only)"));
    } else if (it->second.first_firing_min > x.deadline_min) {
      problems.push_back(fmt::format("{} on {}: fired at {:.1f} min, after its deadline {} min",
                                     x.rule, x.entity, it->second.first_firing_min,
                                     x.deadline_min));
    }
  }
  for (const auto& [key, s] : r.seen) {
    if (expected.count(key) != 0) continue;
    problems.push_back(fmt::format("{} on {}: not expected, but {} at {:.1f} min: {}", key.first,
                                   key.second, s.first_firing_min >= 0 ? "fired" : "pending",
                                   s.first_firing_min >= 0 ? s.first_firing_min
                                                           : s.first_pending_min,
                                   s.summary));
  }
  return problems;
}

// One matrix cell: "-" (neither expected nor raised), "✓ 6.2" (expected, fired at 6.2 min on
// every expected entity, the latest of them), "✗ miss", "✗ 8/8 +2 extra"…
std::string Cell(const SetExpectation& e, const SetResult& r, const std::string& rule) {
  size_t want = 0, fired_in_time = 0, extra = 0;
  double latest = 0;
  for (const Expected& x : e.expected) {
    if (x.rule != rule) continue;
    ++want;
    auto it = r.seen.find({x.rule, x.entity});
    if (it != r.seen.end() && it->second.first_firing_min >= 0 &&
        it->second.first_firing_min <= x.deadline_min) {
      ++fired_in_time;
      latest = std::max(latest, it->second.first_firing_min);
    }
  }
  for (const auto& [key, s] : r.seen) {
    if (key.first != rule) continue;
    bool is_expected = std::any_of(e.expected.begin(), e.expected.end(), [&](const Expected& x) {
      return x.rule == key.first && x.entity == key.second;
    });
    extra += !is_expected;
  }
  if (want == 0 && extra == 0) return "-";
  std::string cell;
  if (want > 0 && fired_in_time == want && extra == 0) {
    return fmt::format("✓ {:.1f}{}", latest, want > 1 ? fmt::format(" ({})", want) : "");
  }
  if (want > 0) cell = fmt::format("✗ {}/{}", fired_in_time, want);
  if (extra > 0) cell += fmt::format("{}✗ +{} unexpected", cell.empty() ? "" : " ", extra);
  return cell;
}

std::string Matrix(const std::vector<SetExpectation>& sets, const std::map<std::string, SetResult>& results) {
  std::string out = "| scenario |";
  for (const auto& rule : kRules) out += " " + rule + " |";
  out += " wall s |\n|---|";
  for (size_t i = 0; i < kRules.size(); ++i) out += "---|";
  out += "---|\n";
  for (const SetExpectation& e : sets) {
    auto it = results.find(e.set);
    if (it == results.end()) continue;
    out += fmt::format("| {} ({:.0f} min) |", e.set, e.minutes);
    for (const auto& rule : kRules) out += " " + Cell(e, it->second, rule) + " |";
    out += fmt::format(" {:.1f} |\n", it->second.wall_s);
  }
  return out;
}

TEST(InsightsConfusionTest, EveryShippedScenarioRaisesExactlyItsRules) {
  const auto shipped = ShippedSets();
  ASSERT_FALSE(shipped.empty()) << "no scenarios in " WARPSCOPE_SOURCE_DIR "/scenarios";
  std::map<std::string, const SetExpectation*> by_name;
  for (const SetExpectation& e : Expectations()) by_name[e.set] = &e;
  for (const auto& [name, files] : shipped) {
    EXPECT_TRUE(by_name.count(name))
        << "scenario " << name << " has no row in Expectations() (insights_confusion_test.cc): "
        << "add the (rule, entity, deadline) it must raise, or an empty list and why";
  }
  for (const SetExpectation& e : Expectations()) {
    EXPECT_TRUE(shipped.count(e.set)) << "Expectations() has a row for " << e.set
                                      << ", which is no scenario in scenarios/: remove it";
  }

  // The simulated hosts' /proc trees are rewritten every simulated second and the server's
  // storage takes a batch every step: in memory (tmpfs) where there is one and TMPDIR does not
  // say otherwise, since on a busy disk those small writes, not the code, set the pace. Set
  // before any thread starts; the host processes inherit it.
  if (std::getenv("TMPDIR") == nullptr && access("/dev/shm", W_OK) == 0) {
    setenv("TMPDIR", "/dev/shm", 1);
  }
  // WARPSCOPE_CONFUSION_ONLY=set,set runs only those rows (to rerun one while changing it).
  const char* only_env = std::getenv("WARPSCOPE_CONFUSION_ONLY");
  const std::string only = only_env == nullptr ? "" : "," + std::string(only_env) + ",";
  std::vector<const SetExpectation*> todo;
  for (const SetExpectation& e : Expectations()) {
    if (shipped.count(e.set) == 0) continue;
    if (!only.empty() && only.find("," + e.set + ",") == std::string::npos) continue;
    todo.push_back(&e);
  }
  // Longest first (simulated host-minutes): the three-host hour sets the wall time.
  auto cost = [&](const SetExpectation* e) { return e->minutes * shipped.at(e->set).size(); };
  std::stable_sort(todo.begin(), todo.end(),
                   [&](const auto* a, const auto* b) { return cost(a) > cost(b); });
  // Sets are independent (a server and hosts each), and a step mostly waits for a push to be
  // stored: a few at a time keep two cores busy.
  std::map<std::string, SetResult> results;
  std::mutex mu;
  size_t next = 0;
  std::vector<std::jthread> workers;
  for (int i = 0; i < kParallelSets; ++i) {
    workers.emplace_back([&] {
      while (true) {
        const SetExpectation* e;
        {
          std::lock_guard lock(mu);
          if (next == todo.size()) return;
          e = todo[next++];
        }
        SetResult r = RunSet(*e, shipped.at(e->set));
        std::lock_guard lock(mu);
        results[e->set] = std::move(r);
      }
    });
  }
  workers.clear();  // joins
  for (const SetExpectation* e : todo) {
    for (const std::string& problem : Check(*e, results[e->set])) {
      ADD_FAILURE() << e->set << ": " << problem;
    }
  }
  std::printf("\nInsights confusion matrix (✓ minutes to fire, simulated; (n) entities):\n%s\n",
              Matrix(Expectations(), results).c_str());
}

}  // namespace
}  // namespace warpscope::test
