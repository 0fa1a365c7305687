// SPDX-License-Identifier: Apache-2.0
// The OTLP exporter against a small independent receiver on 127.0.0.1:0. The receiver parses
// bodies with nlohmann::json on its own, without the encoder's code.
#include "exporters/otlp/otlp_exporter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

using nlohmann::json;

class FakeOtlpReceiver {
 public:
  struct Request {
    std::string path;
    std::string content_type;
    std::string authorization;
    std::string content_encoding;
    json body;
  };

  // Answers the n-th request with statuses[n] (the last one repeats).
  explicit FakeOtlpReceiver(std::vector<int> statuses) : statuses_(std::move(statuses)) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      Request r;
      r.path = req.path;
      r.content_type = req.get_header_value("Content-Type");
      r.authorization = req.get_header_value("Authorization");
      r.content_encoding = req.get_header_value("Content-Encoding");
      r.body = json::parse(req.body, nullptr, false);
      requests_.push_back(std::move(r));
      const size_t n = requests_.size() - 1;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !blocked_; });
      res.status = statuses_[std::min(n, statuses_.size() - 1)];
      res.set_content(res.status == 200 ? "{}" : R"({"message":"try later"})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) {
      std::this_thread::yield();
    }
  }
  ~FakeOtlpReceiver() {
    Release();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // While blocked, requests are recorded but not answered.
  void Block() {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocked_ = false;
    }
    cv_.notify_all();
  }
  bool WaitForRequests(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return requests_.size() >= n; });
  }

 private:
  std::vector<int> statuses_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> requests_;
  bool blocked_ = false;
};

OtlpExporter::Options FastOptions(const std::string& url) {
  OtlpExporter::Options o;
  o.endpoint = url;
  o.initial_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(5);
  o.timeout = std::chrono::seconds(5);
  o.encoder.service_version = "9.9.9";
  o.encoder.resource_attributes = {{"cluster", "c1"}};
  return o;
}

std::unique_ptr<OtlpExporter> MakeExporter(const OtlpExporter::Options& o) {
  auto e = OtlpExporter::Create(o);
  EXPECT_TRUE(e.has_value()) << e.error().ToString();
  return std::move(*e);
}

std::map<std::string, std::string> AttrMap(const json& attributes) {
  std::map<std::string, std::string> out;
  for (const auto& kv : attributes) {
    const json& v = kv.at("value");
    out[kv.at("key").get<std::string>()] =
        v.contains("stringValue") ? v["stringValue"].get<std::string>() : v.dump();
  }
  return out;
}

const json* Metric(const json& body, const std::string& name) {
  for (const auto& rm : body.at("resourceMetrics")) {
    for (const auto& sm : rm.at("scopeMetrics")) {
      for (const auto& m : sm.at("metrics")) {
        if (m.at("name") == name) {
          return &m;
        }
      }
    }
  }
  return nullptr;
}

TEST(OtlpExporterTest, DeliversAWindowTheReceiverCanRead) {
  FakeOtlpReceiver receiver({200});
  auto o = FastOptions(receiver.url());
  o.headers = {{"Authorization", "Bearer s3cret"}};
  auto exporter = MakeExporter(o);
  model::Frame frame = sample::MakeSampleFrame({.gpus = 8, .processes = 4});

  EXPECT_EQ(exporter->Export(frame), ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));

  auto reqs = receiver.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/metrics");
  EXPECT_EQ(reqs[0].content_type, "application/json");
  EXPECT_EQ(reqs[0].authorization, "Bearer s3cret");
  const json& body = reqs[0].body;
  ASSERT_FALSE(body.is_discarded());

  auto resource = AttrMap(body["resourceMetrics"][0]["resource"]["attributes"]);
  EXPECT_EQ(resource["host.name"], "node1");
  EXPECT_EQ(resource["service.name"], "warpscope-agent");
  EXPECT_EQ(resource["service.version"], "9.9.9");
  EXPECT_EQ(resource["cluster"], "c1");
  EXPECT_FALSE(resource["service.instance.id"].empty());

  const json* temp = Metric(body, "hw.gpu.temperature");
  ASSERT_NE(temp, nullptr);
  EXPECT_EQ((*temp)["unit"], "Cel");
  const json& points = (*temp)["gauge"]["dataPoints"];
  ASSERT_EQ(points.size(), 8u);
  std::map<std::string, double> by_gpu;
  for (const auto& p : points) {
    by_gpu[AttrMap(p["attributes"])["hw.id"]] = p["asDouble"].get<double>();
    EXPECT_EQ(p["timeUnixNano"], std::to_string(base::ToUnixNanos(frame.end)));
  }
  for (int g = 0; g < 8; ++g) {
    EXPECT_DOUBLE_EQ(by_gpu[sample::SampleGpuUuid(g)], sample::SampleGpuTemperatureCelsius(g));
  }

  const json* energy = Metric(body, "hw.energy");
  ASSERT_NE(energy, nullptr);
  EXPECT_EQ((*energy)["sum"]["aggregationTemporality"], 2);
  EXPECT_EQ((*energy)["sum"]["isMonotonic"], true);
  EXPECT_EQ((*energy)["sum"]["dataPoints"].size(), 8u);

  EXPECT_NE(Metric(body, "hw.gpu.temperature.max"), nullptr);

  auto stats = exporter->stats();
  EXPECT_EQ(stats.sent, 1u);
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(stats.dropped, 0u);
}

TEST(OtlpExporterTest, RetriesOn503ThenSucceeds) {
  FakeOtlpReceiver receiver({503, 200});
  auto exporter = MakeExporter(FastOptions(receiver.url()));
  ASSERT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));

  EXPECT_EQ(receiver.requests().size(), 2u);
  auto stats = exporter->stats();
  EXPECT_EQ(stats.sent, 1u);
  EXPECT_EQ(stats.retries, 1u);
  EXPECT_EQ(stats.failed, 0u);
}

TEST(OtlpExporterTest, DoesNotRetryA400) {
  FakeOtlpReceiver receiver({400, 200});
  auto exporter = MakeExporter(FastOptions(receiver.url()));
  ASSERT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));

  EXPECT_EQ(receiver.requests().size(), 1u);
  auto stats = exporter->stats();
  EXPECT_EQ(stats.sent, 0u);
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.retries, 0u);
}

TEST(OtlpExporterTest, GivesUpAfterMaxAttempts) {
  FakeOtlpReceiver receiver({429});
  auto o = FastOptions(receiver.url());
  o.max_attempts = 3;
  auto exporter = MakeExporter(o);
  ASSERT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));

  EXPECT_EQ(receiver.requests().size(), 3u);
  EXPECT_EQ(exporter->stats().failed, 1u);
  EXPECT_EQ(exporter->stats().retries, 2u);
}

TEST(OtlpExporterTest, UsesAnExplicitPath) {
  FakeOtlpReceiver receiver({200});
  auto exporter = MakeExporter(FastOptions(receiver.url() + "/custom/metrics"));
  ASSERT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));
  ASSERT_EQ(receiver.requests().size(), 1u);
  EXPECT_EQ(receiver.requests()[0].path, "/custom/metrics");
}

TEST(OtlpExporterTest, CompressesBodiesWhenAsked) {
  FakeOtlpReceiver receiver({200});
  auto o = FastOptions(receiver.url());
  o.gzip = true;
  auto exporter = MakeExporter(o);
  ASSERT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 2, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));
  auto reqs = receiver.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].content_encoding, "gzip");
  ASSERT_FALSE(reqs[0].body.is_discarded());  // the receiver inflated and parsed it
  EXPECT_NE(Metric(reqs[0].body, "hw.gpu.temperature"), nullptr);
}

TEST(OtlpExporterTest, FullQueueDropsTheOldestAndExportNeverBlocks) {
  FakeOtlpReceiver receiver({200});
  receiver.Block();
  auto o = FastOptions(receiver.url());
  o.max_queue = 2;
  auto exporter = MakeExporter(o);
  model::Frame frame = sample::MakeSampleFrame({.gpus = 1, .processes = 0});

  ASSERT_EQ(exporter->Export(frame), ExportResult::kSuccess);
  ASSERT_TRUE(receiver.WaitForRequests(1));  // the worker is now stuck in its POST
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(exporter->Export(frame), ExportResult::kSuccess);
  }
  EXPECT_EQ(exporter->stats().dropped, 2u);
  EXPECT_EQ(exporter->stats().queued, 2u);

  receiver.Release();
  exporter->Shutdown(std::chrono::seconds(10));
  EXPECT_EQ(exporter->stats().sent, 3u);
  EXPECT_EQ(receiver.requests().size(), 3u);
}

TEST(OtlpExporterTest, ShutdownGivesUpWithinItsTimeoutWhenTheReceiverHangs) {
  FakeOtlpReceiver receiver({200});
  receiver.Block();
  auto exporter = MakeExporter(FastOptions(receiver.url()));
  model::Frame frame = sample::MakeSampleFrame({.gpus = 1, .processes = 0});
  ASSERT_EQ(exporter->Export(frame), ExportResult::kSuccess);
  ASSERT_TRUE(receiver.WaitForRequests(1));
  ASSERT_EQ(exporter->Export(frame), ExportResult::kSuccess);

  exporter->Shutdown(std::chrono::milliseconds(50));

  auto stats = exporter->stats();
  EXPECT_EQ(stats.sent, 0u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_EQ(stats.dropped + stats.failed, 2u);
  EXPECT_EQ(exporter->Export(frame), ExportResult::kDropped);
  receiver.Release();
}

TEST(OtlpExporterTest, UnreachableReceiverIsRetriedThenCountedAsFailed) {
  // A port that was free a moment ago: connections are refused at once.
  int port = 0;
  {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port = ntohs(addr.sin_port);
    close(fd);
  }
  auto o = FastOptions("http://127.0.0.1:" + std::to_string(port));
  o.max_attempts = 2;
  auto exporter = MakeExporter(o);
  ASSERT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));
  auto stats = exporter->stats();
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.retries, 1u);
}

}  // namespace
}  // namespace warpscope::exporters

namespace warpscope::exporters {
namespace {

TEST(OtlpExporterTest, HttpProtobufPostsTheProtobufEncoding) {
  FakeOtlpReceiver receiver({200});
  auto o = FastOptions(receiver.url());
  o.protocol = OtlpProtocol::kHttpProtobuf;
  auto exporter = MakeExporter(o);
  EXPECT_EQ(exporter->Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
            ExportResult::kSuccess);
  exporter->Shutdown(std::chrono::seconds(10));
  auto reqs = receiver.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].content_type, "application/x-protobuf");
  EXPECT_TRUE(reqs[0].body.is_discarded());  // not JSON
  EXPECT_EQ(exporter->stats().sent, 1u);
}

}  // namespace
}  // namespace warpscope::exporters
