// SPDX-License-Identifier: Apache-2.0
// The agent's end of the CUDA kernel profiler's socket: accepts injected processes
// (libwarpscope_cupti.so) on a unix stream socket, decodes their wire frames and aggregates them
// into per-window profiles. The NCCL profiler plugin (libwarpscope_nccl.so) connects to the same
// socket: a connection whose Hello says Component::kNccl never becomes a CUDA process profile;
// its communicators, operations and counters go to an NcclAggregator (nccl_aggregator.h), whose
// metrics join the self-metrics and whose windows close with the profiles'. Controls reach the
// library they are for (kSetNcclProxyDetail the NCCL plugin, collection on/off both, the others
// the CUDA library), for controls_on_connect and SendControl alike. Both libraries' records of a
// pid also feed a StepTracker (step_tracker.h): the steps it cuts (every second and at every
// window) wait for TakeSteps(); its metrics join the self-metrics.
//
// One listener thread serves every connection with poll(2): non-blocking reads into a
// StreamDecoder per connection (at most `max_reads_per_wakeup` reads per connection per round,
// so one flooding process cannot starve the others), conversion (wire_convert.h), and a
// ProfileBuilder + profiling::Symbolizer that only this thread touches. Other threads talk to it
// through a mutex-guarded request list and an eventfd: FinishWindow() and SendControl() post
// requests and return at once. A connection that sends a corrupt stream, or whose undecoded bytes
// exceed `max_buffered_bytes`, is closed and counted; the others carry on.
//
// A connecting process's /proc/<pid>/maps is read at accept (it is alive then), and each stack
// is symbolized on arrival (ELF files are opened while the process likely still runs): a process
// that exits before its window closes keeps its function names. The builder resolves the stacks
// again from these warm caches at FinishWindow. A pid whose last connection
// closed is forgotten (builder and symbolizer) right after the next window that includes it.
// Completed cubins are disassembled by a worker thread (profiling::SassDisassembler) when nvdisasm
// or cuobjdump is on the path, once per crc; the SASS comes back to the listener thread.
//
// The socket: missing parent directories are created 0755; the socket is made 0666 so every
// local user's applications can connect (frames are bounds-checked; the peer's pid comes from
// SO_PEERCRED, not from what it claims). A stale socket file (nobody accepting) is replaced; a
// live one (another agent) is refused. Stop() removes the socket file if it is still ours.
//
// Thread contract: every public method is thread-safe.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_LISTENER_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_LISTENER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "agent/sources/cuda_profiler/listen_socket.h"
#include "agent/sources/cuda_profiler/nccl_aggregator.h"
#include "agent/sources/cuda_profiler/profile_builder.h"
#include "agent/sources/cuda_profiler/step_tracker.h"
#include "agent/sources/cuda_profiler/wire_convert.h"
#include "base/status.h"
#include "cupti/wire.h"
#include "model/sample_sink.h"
#include "profiling/sass_disassembly.h"
#include "profiling/symbolizer.h"

namespace warpscope::agent::cuda_profiler {

class ListenerInputSink;

// The self-metrics of one moment, recorded on the listener thread and replayed on the agent
// main sequence.
class RecordedSamples final : public model::SampleSink {
 public:
  void AddEntity(const model::Entity& entity) override { entities_.push_back(entity); }
  void AddValue(const model::MetricDesc& metric, std::string_view entity_id,
                const model::Labels& labels, double value) override {
    values_.push_back(Value{&metric, std::string(entity_id), labels, value});
  }
  void AddEvent(const model::Event& event) override { events_.push_back(event); }
  void ReplayInto(model::SampleSink& out) const;
  size_t values() const { return values_.size(); }

 private:
  struct Value {
    const model::MetricDesc* metric;
    std::string entity_id;
    model::Labels labels;
    double value;
  };
  std::vector<model::Entity> entities_;
  std::vector<Value> values_;
  std::vector<model::Event> events_;
};

// Which library a control is for: the proxy detail only the NCCL plugin (`nccl`); collection on
// and off both; the others only the CUDA library.
bool ControlApplies(bool nccl, ::warpscope::cupti::wire::ControlOp op);

class ProfileListener {
 public:
  struct Options {
    std::string socket_path;
    // Identify processes by SO_PEERCRED (the pid in the agent's namespace). False: trust the
    // pid in Hello (tests where every client is this process).
    bool use_peer_pid = true;
    size_t max_connections = 1024;  // more are accepted and closed at once, counted
    // Undecoded bytes a connection may hold (a frame is at most 1 MiB + header).
    size_t max_buffered_bytes = wire::kMaxPayload + wire::kHeaderSize + (64u << 10);
    size_t read_chunk = 64u << 10;
    int max_reads_per_wakeup = 8;
    size_t max_output_bytes = 64u << 10;  // Control bytes queued per connection
    // Sent to every process after its Hello (e.g. a rate, PC sampling on).
    std::vector<wire::Control> controls_on_connect;
    ConnectionConverter::Options converter;
    ProfileBuilder::Options builder;
    NcclAggregator::Options nccl;
    StepTracker::Options steps;
    size_t max_pending_steps = 10000;  // cut steps waiting for TakeSteps; beyond: dropped, counted
    profiling::Symbolizer::Options symbolizer;  // host_root also locates /proc/<pid>/stat
    bool symbolize_on_arrival = true;
    bool disassemble = true;  // run nvdisasm/cuobjdump on cubins when found
    profiling::SassDisassembler::Options sass;
    size_t max_sass_queue = 8;  // cubins waiting for the disassembler; beyond: dropped, counted
    // Called on the listener thread with every decoded message after it was applied (a stack is
    // symbolized by then), with the process's pid (0 before Hello). For tests and debugging;
    // must not block.
    std::function<void(int32_t pid, const wire::Message& message)> observer;
  };

  struct Stats {
    uint64_t accepted = 0;
    uint64_t refused_over_cap = 0;
    uint64_t closed = 0;           // every connection closed, for any reason
    uint64_t closed_corrupt = 0;   // decode error
    uint64_t closed_overflow = 0;  // more than max_buffered_bytes undecoded
    uint64_t open = 0;
    uint64_t hellos = 0;       // CUDA library connections
    uint64_t nccl_hellos = 0;  // NCCL plugin connections
    uint64_t nccl_records = 0; // NcclCollective records received
    uint64_t steps = 0;          // training steps cut (step_tracker.h)
    uint64_t steps_dropped = 0;  // cut, but max_pending_steps were waiting
    uint64_t messages = 0;
    uint64_t bytes = 0;
    uint64_t unknown_frames = 0;
    uint64_t notices = 0;
    uint64_t unnamed_kernels = 0;
    uint64_t cubins = 0;  // completed cubins
    uint64_t cubins_dropped = 0;
    uint64_t sass_done = 0;
    uint64_t sass_failed = 0;  // tool failed or missing, or queue full
    uint64_t controls_sent = 0;
    uint64_t controls_dropped = 0;  // output buffer full, or no such process
    uint64_t windows = 0;
    uint64_t processes_forgotten = 0;
    uint64_t loops = 0;  // turns of the listener thread; each publishes these stats at its end
  };

  // Binds and listens, then starts the threads. Unavailable when another agent is listening on
  // the path; InvalidArgument for a path that is too long or not a socket;
  // also Unavailable when the directory or socket cannot be created (the message names the
  // flag).
  [[nodiscard]] static base::Result<std::unique_ptr<ProfileListener>> Start(Options options);
  ~ProfileListener();
  ProfileListener(const ProfileListener&) = delete;
  ProfileListener& operator=(const ProfileListener&) = delete;

  // Asks the listener thread to finish the window [start_ns, end_ns); the future holds one
  // profile per process that reported anything (empty after Stop).
  std::future<std::vector<profiling::WindowProfile>> FinishWindow(int64_t start_ns, int64_t end_ns);

  // Sends `control` to process `pid`, or to every connected process when `pid` is empty (and
  // remembers nothing: processes that connect later get only `controls_on_connect`).
  void SendControl(std::optional<int32_t> pid, const wire::Control& control);

  // The self-metrics as of the last window or the last second, whichever is later.
  void EmitSelfMetrics(model::SampleSink& out) const;
  // The training steps cut since the last call (each step once; step_tracker.h). Steps are cut
  // every second and at every window.
  std::vector<model::TrainingStep> TakeSteps();

  Stats stats() const;
  // Pids with an open connection that sent Hello.
  std::vector<int32_t> connected_pids() const;
  // Waits until `done(stats())` holds (checked after every change) or `timeout` passes.
  bool WaitUntil(const std::function<bool(const Stats&)>& done, std::chrono::milliseconds timeout);
  // Waits until no connection is open, counting those that connected before this call but are
  // still waiting to be accepted: a short-lived process can connect, send its records and exit
  // before the listener thread first runs. False when `timeout` passed first.
  bool WaitUntilAllClosed(std::chrono::milliseconds timeout);

  const std::string& socket_path() const { return options_.socket_path; }

  // Stops the threads, closes every connection and removes the socket file. Idempotent.
  void Stop();

 private:
  struct Connection;
  struct Request;

  explicit ProfileListener(Options options);
  void Loop();
  void Accept();
  void ReadFrom(Connection& c);
  void WriteTo(Connection& c);
  void Close(Connection& c);
  void HandleNccl(Connection& c, const wire::Message& message);
  void HandleRequests();
  void HandleSass();
  void Queue(Connection& c, const wire::Control& control);
  void WarmSymbolizer(int32_t pid);
  void SymbolizeOnArrival(int32_t pid, const std::vector<uint64_t>& pcs);
  void SnapshotMetrics();
  ListenerInputSink InputSink();  // the builder's input, tee'd to the step tracker
  void CollectSteps(int64_t now_ns);
  void ForgetSteps(int32_t pid);  // a process without open connections: its ended steps
  void QueueSteps(std::vector<model::TrainingStep> steps);
  void Publish();  // copies stats_ for other threads; notifies waiters
  void SassWorker();

  Options options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  uint64_t socket_inode_ = 0;

  // Listener thread only.
  std::unique_ptr<profiling::Symbolizer> symbolizer_;
  std::unique_ptr<ProfileBuilder> builder_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::string read_buffer_;
  std::map<int32_t, int> live_by_pid_;
  std::vector<int32_t> closed_pids_;  // to forget after the next window
  NcclAggregator nccl_;
  std::map<int32_t, int> nccl_live_by_pid_;
  StepTracker steps_;  // a pid is forgotten once neither library's connection is open
  std::vector<int32_t> nccl_closed_pids_;
  std::map<int32_t, std::vector<std::string>> notices_logged_;
  std::unordered_set<uint64_t> cubins_seen_;  // crcs queued or done (bounded)
  uint64_t closed_unnamed_ = 0;
  uint64_t closed_cubins_dropped_ = 0;
  Stats stats_;
  std::chrono::steady_clock::time_point last_snapshot_{};
  bool sass_available_ = false;

  // Shared, under mu_.
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Request>> requests_;
  Stats published_;
  std::vector<int32_t> published_pids_;
  std::shared_ptr<const RecordedSamples> metrics_;
  std::vector<model::TrainingStep> pending_steps_;
  bool stopping_ = false;
  std::vector<std::pair<uint64_t, std::string>> sass_queue_;  // (crc, cubin)
  std::vector<std::pair<uint64_t, base::Result<profiling::FunctionSass>>> sass_results_;
  std::condition_variable sass_cv_;

  std::thread thread_;
  std::thread sass_thread_;
  std::once_flag stop_once_;
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_LISTENER_H_
