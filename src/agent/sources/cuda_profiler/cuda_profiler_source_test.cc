// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/cuda_profiler_source.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/testing/temp_dir.h"
#include "model/testing/collecting_sink.h"
#include "profiling/testing/fake_profile_exporter.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace w = ::warpscope::cupti::wire;
using namespace std::chrono_literals;

TEST(CudaProfilerSourceTest, FinishesWindowsAtTheIntervalAndAtStop) {
  base::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string& templ = tmp.path();
  CudaProfilerSource::Options options;
  options.listener.socket_path = templ + "/cupti.sock";
  options.listener.use_peer_pid = false;
  options.listener.disassemble = false;
  options.window = 10s;
  auto exporter = std::make_unique<profiling::FakeProfileExporter>();
  profiling::FakeProfileExporter& fake = *exporter;
  std::vector<std::unique_ptr<profiling::ProfileExporter>> exporters;
  exporters.push_back(std::move(exporter));
  base::FakeClock clock;
  std::vector<std::string> errors;
  CudaProfilerSource source(options, std::move(exporters), clock,
                            [&](std::string_view reason) { errors.emplace_back(reason); });
  ASSERT_TRUE(source.Start().ok());
  ProfileListener& listener = *source.listener();

  // A process reports through the wire (as bytes over the socket).
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, options.listener.socket_path.data(),
              options.listener.socket_path.size());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string bytes;
  w::Hello hello;
  hello.pid = 321;
  hello.exe = "/usr/bin/app";
  w::Encode(hello, &bytes);
  w::Encode(w::KernelName{1, "k"}, &bytes);
  w::KernelAggregate agg;
  agg.entries.push_back(w::KernelAggregateEntry{1, 0, 7, 4, 4000, 0, 0});
  w::Encode(agg, &bytes);
  w::Encode(w::Notice{w::Severity::kWarning, 0, "something to know"}, &bytes);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ASSERT_TRUE(listener.WaitUntil([](const auto& s) { return s.messages >= 4; }, 10s));

  model::CollectingSink out;
  const base::TimePoint t0 = clock.Now();
  source.Poll(t0, out);  // opens the first window
  source.Poll(t0 + 5s, out);
  EXPECT_EQ(listener.stats().windows, 0u);
  source.Poll(t0 + 10s, out);
  ASSERT_EQ(fake.windows().size(), 1u);
  {
    const auto& first = fake.windows()[0].get();
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].pid, 321);
    EXPECT_EQ(first[0].start_ns, base::ToUnixNanos(t0));
    EXPECT_EQ(first[0].end_ns, base::ToUnixNanos(t0 + 10s));
    EXPECT_EQ(first[0].gpu_time_ns, 4000u);
  }
  // The self-metrics snapshot taken with the window reaches the next Poll.
  out.Clear();
  source.Poll(t0 + 11s, out);
  EXPECT_TRUE(out.Has("profiler.cuda.launches.seen"));
  EXPECT_EQ(errors, (std::vector<std::string>{"notice"}));
  // Profiles an exporter dropped are reported as deltas, once each.
  fake.set_dropped(2);
  source.Poll(t0 + 12s, out);
  source.Poll(t0 + 13s, out);
  EXPECT_EQ(errors, (std::vector<std::string>{"notice", "profile_dropped", "profile_dropped"}));

  agg.entries[0].total_ns = 1000;
  bytes.clear();
  w::Encode(agg, &bytes);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ASSERT_TRUE(listener.WaitUntil([](const auto& s) { return s.messages >= 5; }, 10s));
  source.Stop();  // the final window
  close(fd);
  EXPECT_EQ(fake.begin_stop_calls(), 1);
  EXPECT_EQ(fake.stop_calls(), 1);
  auto windows = fake.windows();
  ASSERT_EQ(windows.size(), 2u);
  ASSERT_EQ(windows[1].get().size(), 1u);
  EXPECT_EQ(windows[1].get()[0].gpu_time_ns, 1000u);
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler
