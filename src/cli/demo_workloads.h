// SPDX-License-Identifier: Apache-2.0
// The demo workloads of `warpscope up --simulate`: one warpscope-demo-workload process per
// scenario GPU process that names a `workload:` (docs/simulator.md), started before the agent
// so that the simulator reports their pids (WARPSCOPE_SIM_PIDS) and metrics, processes and
// profiles of one GPU name one process.
//
// A workload `inference` runs under a fake vLLM (warpscope-fake-inference started as `vllm serve
// ...`, src/sim/inference/): the fake is the parent of the workload process, as vLLM's API server
// is of its engine and GPU worker, and serves vLLM's metrics of a traffic that matches the
// scenario (low load: batch efficiency far below 30 %). Its log is inference-gpu<N>.log and its
// port is written to inference-gpu<N>.port in the log directory.
//
// Lifetime: the processes form one process group of their own (a terminal's Ctrl-C reaches
// `up` only, which stops them); each asks the kernel for SIGKILL when `up` dies
// (PR_SET_PDEATHSIG), so not even a `kill -9` of `up` leaves one behind. Stop() (also run by
// the destructor) sends SIGTERM to the group, waits up to 5 s, then SIGKILLs what is left and
// reaps every child. Not thread-safe: one thread, the one that called Start (the kernel ties
// PR_SET_PDEATHSIG to the thread that forked).
#ifndef WARPSCOPE_CLI_DEMO_WORKLOADS_H_
#define WARPSCOPE_CLI_DEMO_WORKLOADS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::cli {

struct DemoWorkload {
  unsigned scenario_pid = 0;  // the pid the scenario gives the GPU process
  unsigned device = 0;        // its GPU's NVML index
  std::string workload;       // sim/nvml/workloads.h
  double slowdown_percent = 0;  // `ddp`: how much longer this rank computes than its peers
  pid_t pid = 0;              // the process running it (0 before Start)
  pid_t server_pid = 0;       // `inference`: the fake vLLM, the workload's parent
  int server_port = 0;        // `inference`: the port it serves /metrics on
};

// The argv and the JSON config (sim/inference/fake_config.h) of the fake vLLM of an `inference`
// workload: Llama 3.1 8B served with vLLM's defaults on 127.0.0.1, a free port, and ~1.5
// requests per second: about 7 requests running of --max-num-seqs 256.
std::vector<std::string> InferenceServerArgv();
std::string InferenceServerConfigJson();

// The `ddp` workloads of `workloads` form one torchrun job on this host: each gets the
// launcher's variables (TORCHELASTIC_RUN_ID=`job_id`, RANK and LOCAL_RANK in list order,
// WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), NCCL_PROFILER_PLUGIN=`nccl_plugin`
// and WARPSCOPE_CUPTI_KERNELS=all (every kernel record reaches the agent's step breakdown, not only
// the sampled launches': the demo's ranks launch under a thousand kernels a second).
// Returns one "KEY=VALUE" list per workload, empty for the others.
std::vector<std::vector<std::string>> DdpJobEnvironment(const std::vector<DemoWorkload>& workloads,
                                                        const std::string& job_id,
                                                        const std::string& nccl_plugin);

// The extra arguments of a `ddp` workload's warpscope-demo-workload: its slowdown, the job's
// largest (the pace of every rank) and the job's step-0 time.
std::vector<std::string> DdpArguments(const std::vector<DemoWorkload>& workloads,
                                      const DemoWorkload& self, uint64_t epoch_ns);

// Which workloads `up --workloads` runs: "all", "none" or GPU indices ("3" or "0,3").
// Returns the subset of `all` selected, or an error naming the bad value.
[[nodiscard]] base::Result<std::vector<DemoWorkload>> SelectDemoWorkloads(
    const std::vector<DemoWorkload>& all, const std::string& selection);

// The scenario's workload processes, read through the simulator library's
// warpscope_sim_list_workloads (sim/nvml/hooks.h), so that cli never links the simulator.
[[nodiscard]] base::Result<std::vector<DemoWorkload>> ListDemoWorkloads(
    const std::string& sim_library, const std::string& scenario_path);

class DemoWorkloads {
 public:
  struct Options {
    std::string program;         // warpscope-demo-workload
    std::string inject_library;  // libwarpscope_cupti.so (CUDA_INJECTION64_PATH)
    std::string cupti_library;   // the CUPTI simulator (WARPSCOPE_CUPTI_LIBRARY)
    std::string agent_socket;    // WARPSCOPE_AGENT_SOCKET
    std::string log_dir;         // each process's stdout and stderr: workload-gpu<N>.log
    // warpscope-fake-inference, needed when a workload is `inference`
    std::string inference_program;
    // `ddp` workloads: the NCCL profiler plugin (NCCL_PROFILER_PLUGIN), the job's run id
    // (TORCHELASTIC_RUN_ID) and when its step 0 begins (CLOCK_REALTIME ns; 0: 2 s from now).
    std::string nccl_plugin;
    std::string job_id = "warpscope-demo";
    uint64_t job_epoch_ns = 0;
  };
  [[nodiscard]] static base::Result<std::unique_ptr<DemoWorkloads>> Start(
      const Options& options, std::vector<DemoWorkload> workloads);
  ~DemoWorkloads();
  DemoWorkloads(const DemoWorkloads&) = delete;
  DemoWorkloads& operator=(const DemoWorkloads&) = delete;

  void Stop();
  const std::vector<DemoWorkload>& workloads() const { return workloads_; }
  // "SCENARIO_PID=PID,..." for WARPSCOPE_SIM_PIDS.
  std::string PidMap() const;

 private:
  DemoWorkloads() = default;
  std::vector<DemoWorkload> workloads_;
  pid_t group_ = 0;
};

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_DEMO_WORKLOADS_H_
