// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/inference_source.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "agent/sources/inference/inference_metrics.h"
#include "agent/sources/inference/prom_text.h"
#include "base/logging.h"

namespace warpscope::agent::inference {
namespace {

namespace m = inference_metrics;

double Seconds(base::Duration d) { return std::chrono::duration<double>(d).count(); }

bool IsLoopback(std::string_view host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

}  // namespace

base::Result<StaticInferenceTarget> ParseInferenceTarget(std::string_view spec) {
  StaticInferenceTarget t;
  size_t comma = spec.find(',');
  t.url = std::string(spec.substr(0, comma));
  if (auto scrape = ParseScrapeUrl(t.url); !scrape) {
    return base::Error(scrape.error().WithContext("--inference-targets"));
  }
  while (comma != std::string_view::npos) {
    const size_t next = spec.find(',', comma + 1);
    const std::string_view option = spec.substr(comma + 1, next - comma - 1);
    comma = next;
    if (option.starts_with("engine=")) {
      t.engine = EngineFromName(option.substr(7));
      if (!t.engine) {
        return base::Error(base::InvalidArgument(
            "--inference-targets '{}': unknown engine '{}'; expected vllm, sglang, trtllm or tgi",
            spec, option.substr(7)));
      }
    } else if (option.starts_with("pid=")) {
      const std::string_view digits = option.substr(4);
      int pid = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
      if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) {
        return base::Error(base::InvalidArgument(
            "--inference-targets '{}': pid '{}' is not a process id; expected pid=PID", spec,
            digits));
      }
      t.pid = pid;
    } else {
      return base::Error(
          base::InvalidArgument("--inference-targets '{}': unknown option '{}'; expected "
                                "URL[,engine=vllm|sglang|trtllm|tgi][,pid=PID]",
                                spec, option));
    }
  }
  return t;
}

std::map<int, std::vector<std::pair<int, std::string>>> GpuProcessesOf(const model::Frame& frame) {
  std::map<int, std::vector<std::pair<int, std::string>>> gpus;
  for (const model::SeriesPoint& s : frame.series) {
    const std::string_view uuid = s.labels.Get(model::attr::kGpuUuid);
    if (uuid.empty()) continue;
    auto identity = model::ParseProcessEntityId(s.entity);
    if (!identity) continue;
    const int index = std::atoi(std::string(s.labels.Get(model::attr::kGpuIndex)).c_str());
    auto& list = gpus[identity->pid];
    std::pair<int, std::string> gpu(index, std::string(uuid));
    if (std::find(list.begin(), list.end(), gpu) == list.end()) list.push_back(std::move(gpu));
  }
  return gpus;
}

InferenceSource::InferenceSource(InferenceSourceOptions options, const base::Clock& clock,
                                 model::ProcessResolver* resolver, SourceErrorHook on_error)
    : options_(std::move(options)),
      clock_(clock),
      resolver_(resolver),
      on_error_(std::move(on_error)) {}

base::Status InferenceSource::Start() {
  for (const StaticInferenceTarget& t : options_.targets) {
    auto scrape = ParseScrapeUrl(t.url);
    if (!scrape) return scrape.error();
    static_targets_.push_back(t);
    static_scrape_.push_back(*scrape);
  }
  return base::OkStatus();
}

std::vector<InferenceSource::Target> InferenceSource::Targets() {
  const base::Duration mono = clock_.Monotonic();
  if (options_.discover &&
      (!last_discovery_ || mono - *last_discovery_ >= options_.rediscover_interval)) {
    const size_t before = processes_.size();
    processes_ = DiscoverServingProcesses(options_.host_root + "/proc");
    last_discovery_ = mono;
    if (processes_.size() != before) {
      WARPSCOPE_LOG(INFO, "inference: {} serving process(es) found", processes_.size());
    }
  }
  // The processes static targets name by pid, read again at each rediscovery (their children,
  // the GPU workers, may change), and whenever one was not found.
  bool missing = pid_processes_.size() != static_targets_.size();
  for (size_t i = 0; !missing && i < static_targets_.size(); ++i) {
    missing = static_targets_[i].pid && !pid_processes_[i];
  }
  if (missing || !last_pid_read_ || mono - *last_pid_read_ >= options_.rediscover_interval) {
    pid_processes_.assign(static_targets_.size(), std::nullopt);
    for (size_t i = 0; i < static_targets_.size(); ++i) {
      if (!static_targets_[i].pid) continue;
      pid_processes_[i] =
          ReadServingProcess(options_.target_pid_root + "/proc", *static_targets_[i].pid);
      if (!pid_processes_[i]) {
        WARPSCOPE_LOG_FIRST_N(WARNING, 1, "inference: {}: no process {} in {}/proc",
                              static_targets_[i].url, *static_targets_[i].pid,
                              options_.target_pid_root);
      }
    }
    last_pid_read_ = mono;
  }
  std::vector<Target> targets;
  std::set<int> claimed;  // discovered processes a static target names
  for (size_t i = 0; i < static_targets_.size(); ++i) {
    Target t{static_targets_[i].url, static_scrape_[i], static_targets_[i].engine, "", {}, nullptr};
    if (const auto& named = pid_processes_[i]) {
      t.process = &*named;
      if (named->serving_command) {
        t.default_model = named->command.model;
        t.limits = named->command.limits;
        if (!t.engine) t.engine = named->command.engine;
      }
      claimed.insert(named->pid);
      targets.push_back(std::move(t));
      continue;
    }
    if (static_targets_[i].pid) {  // gone: scraped as a server of no local process
      targets.push_back(std::move(t));
      continue;
    }
    for (const ServingProcess& p : processes_) {
      if (IsLoopback(t.scrape.host) &&
          std::binary_search(p.listen_ports.begin(), p.listen_ports.end(), t.scrape.port)) {
        t.process = &p;
        t.default_model = p.command.model;
        t.limits = p.command.limits;
        if (!t.engine) t.engine = p.command.engine;
        claimed.insert(p.pid);
      }
    }
    targets.push_back(std::move(t));
  }
  for (const ServingProcess& p : processes_) {
    if (p.url.empty() || claimed.contains(p.pid)) continue;
    auto scrape = ParseScrapeUrl(p.url);
    if (!scrape) continue;
    targets.push_back(
        Target{p.url, *scrape, p.command.engine, p.command.model, p.command.limits, &p});
  }
  return targets;
}

std::string InferenceSource::EntityId(const Target& t) const {
  if (t.process != nullptr) {
    model::ProcessInfo info;
    info.pid = t.process->pid;
    info.start_ticks = t.process->start_ticks;
    return model::ProcessEntityId(info);
  }
  return fmt::format("inference/{}:{}", t.scrape.host, t.scrape.port);
}

std::string InferenceSource::GpuUuids(const ServingProcess& p) const {
  std::vector<std::pair<int, std::string>> gpus;
  auto add = [&](int pid) {
    auto it = gpus_.find(pid);
    if (it == gpus_.end()) return;
    for (const auto& g : it->second) {
      if (std::find(gpus.begin(), gpus.end(), g) == gpus.end()) gpus.push_back(g);
    }
  };
  add(p.pid);
  for (int pid : p.descendants) add(pid);
  std::sort(gpus.begin(), gpus.end());
  std::string out;
  for (const auto& [index, uuid] : gpus) out += (out.empty() ? "" : ",") + uuid;
  return out;
}

void InferenceSource::ScrapeOne(const Target& t, base::TimePoint now, base::Duration timeout) {
  const base::Duration start = clock_.Monotonic();
  auto body = Scrape(t.scrape, timeout, options_.max_body_bytes);
  if (!body) {
    Report(body.error().code() == base::StatusCode::kResourceExhausted ? "too_large"
                                                                       : "scrape_failed");
    WARPSCOPE_VLOG(1, "inference: {}", body.error().message());
    return;
  }
  ParseLimits limits;
  limits.max_bytes = options_.max_body_bytes;
  auto exposition = ParsePromText(*body, limits);
  if (!exposition) {
    Report(exposition.error().code() == base::StatusCode::kResourceExhausted ? "too_large"
                                                                             : "parse_failed");
    WARPSCOPE_LOG_FIRST_N(WARNING, 1, "inference: {}: {}", t.url, exposition.error().message());
    return;
  }
  const std::optional<Engine> engine = t.engine ? t.engine : DetectEngine(*exposition);
  if (!engine) {
    Report("unknown_engine");
    WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                          "inference: {} serves no vllm:, sglang:, trtllm_ or tgi_ metric; name "
                          "the engine with --inference-targets URL,engine=...",
                          t.url);
    return;
  }
  auto snapshot = Normalize(*engine, *exposition, t.default_model);
  if (!snapshot) {
    Report("parse_failed");
    WARPSCOPE_LOG_FIRST_N(WARNING, 1, "inference: {}: {}", t.url, snapshot.error().message());
    return;
  }
  const std::string id = EntityId(t);
  size_t samples = 0;
  for (const Family& f : exposition->families) samples += f.samples.size();
  pending_.AddValue(m::kScrapeDuration, id, Seconds(clock_.Monotonic() - start));
  pending_.AddValue(m::kScrapeSamples, id, static_cast<double>(samples));
  State& state = states_[t.url + "|" + id];
  const double seconds = state.models.empty() ? 0 : Seconds(now - state.time);
  for (const ModelSnapshot& model : snapshot->models) {
    const ModelSnapshot* prev = nullptr;
    for (const ModelSnapshot& p : state.models) {
      if (p.model == model.model) prev = &p;
    }
    WriteWindow(seconds > 0 ? prev : nullptr, model, seconds, t.limits, id, pending_);
  }
  state.models = std::move(snapshot->models);
  state.time = now;
  state.seen = true;
  PendingEntity e;
  if (t.process != nullptr) e.process = *t.process;
  e.static_id = t.process == nullptr ? id : "";
  e.engine = *engine;
  e.endpoint = t.url;
  pending_entities_.push_back(std::move(e));
}

void InferenceSource::Poll(base::TimePoint now, model::SampleSink& /*out*/) {
  pending_.Clear();
  pending_entities_.clear();
  const std::vector<Target> targets = Targets();
  for (auto& [key, state] : states_) state.seen = false;
  // Scrapes share 80 % of the poll deadline, so that a slow server cannot make the cycle late.
  const base::Duration budget = deadline_ * 4 / 5;
  const base::Duration begin = clock_.Monotonic();
  for (size_t i = 0; i < targets.size(); ++i) {
    const base::Duration left = budget - (clock_.Monotonic() - begin);
    const base::Duration share = left / static_cast<int64_t>(targets.size() - i);
    if (share <= base::Duration(0)) {
      Report("scrape_failed");
      continue;
    }
    ScrapeOne(targets[i], now, share);
  }
  std::erase_if(states_, [](const auto& kv) { return !kv.second.seen; });
}

void InferenceSource::Finish(base::TimePoint /*now*/, model::SampleSink& out) {
  for (const PendingEntity& e : pending_entities_) {
    model::Entity entity;
    if (e.process) {
      const model::ProcessInfo* info =
          resolver_ != nullptr ? resolver_->Resolve(e.process->pid) : nullptr;
      model::ProcessInfo fallback;
      if (info == nullptr || info->start_ticks != e.process->start_ticks) {
        fallback.pid = e.process->pid;
        fallback.container_pid = e.process->pid;
        fallback.start_ticks = e.process->start_ticks;
        fallback.executable = e.process->comm;
        fallback.command_line = e.process->command_line.substr(0, 256);
        info = &fallback;
      }
      entity = model::MakeProcessEntity(*info);
      entity.attributes.Set(m::kAttrGpuUuids, GpuUuids(*e.process));
    } else {
      entity.kind = model::EntityKind::kProcess;
      entity.id = e.static_id;
      entity.parent = options_.host_id;
      entity.attributes.Set(m::kAttrGpuUuids, "");
    }
    entity.attributes.Set(m::kAttrEngine, EngineName(e.engine));
    entity.attributes.Set(m::kAttrEndpoint, e.endpoint);
    out.AddEntity(entity);
  }
  pending_.ReplayInto(out);
}

}  // namespace warpscope::agent::inference
