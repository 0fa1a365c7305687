// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/pc_sampling.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace warpscope::cupti_inject {

// PC records per buffer: one GetData round returns at most this many, and Collect asks up to 64
// rounds per window.
constexpr size_t kPcsPerBuffer = 512;
constexpr size_t kMaxStallReasons = 1024;

void PcBuffer::Allocate(const abi::PcSamplingLayout& l, size_t pcs, size_t reasons_per_pc) {
  layout = l;
  num_pcs = pcs;
  num_reasons = reasons_per_pc;
  records.assign((pcs * layout.pc_record_size + 7) / 8, 0);
  reasons.assign(pcs * reasons_per_pc, abi::CUpti_PCSamplingStallReason{});
  Reset();
}

void PcBuffer::Reset() {
  data = abi::CUpti_PCSamplingData{};
  data.size = layout.data_size;
  data.collectNumPcs = num_pcs;
  data.pPcData = reinterpret_cast<abi::CUpti_PCSamplingPCData*>(records.data());
  std::fill(records.begin(), records.end(), 0);
  for (size_t i = 0; i < num_pcs; ++i) {
    auto* r = Record(i);
    r->size = layout.pc_record_size;
    r->stallReason = reasons.data() + i * num_reasons;
    r->stallReasonCount = 0;
    r->functionName = nullptr;
  }
}

uint32_t PcBuffer::CorrelationId(size_t i) const {
  if (!layout.has_correlation_id) {
    return 0;
  }
  uint32_t id = 0;
  std::memcpy(&id,
              reinterpret_cast<const uint8_t*>(records.data()) + i * layout.pc_record_size +
                  offsetof(abi::CUpti_PCSamplingPCData, correlationId),
              sizeof(id));
  return id;
}

PcSampler::PcSampler(const CuptiApi* api, uint32_t cupti_version, Notifier notify,
                     Clock realtime_ns, PcContextGuard guard)
    : api_(api),
      cupti_version_(cupti_version),
      layout_(abi::PcSamplingLayoutFor(cupti_version)),
      guard_(guard),
      notify_(notify),
      realtime_ns_(realtime_ns) {}

template <typename F>
abi::CUptiResult PcSampler::InContext(abi::CUcontext ctx, F&& call) {
  const bool pushed = guard_.push != nullptr && guard_.pop != nullptr && guard_.push(ctx);
  const abi::CUptiResult r = call();
  if (pushed) {
    guard_.pop();
  }
  return r;
}

void PcSampler::TrackContexts(std::span<const abi::CUcontext> contexts) {
  std::erase_if(contexts_, [&](const std::unique_ptr<Context>& pc) {
    return std::find(contexts.begin(), contexts.end(), pc->ctx) == contexts.end();
  });
  for (auto* ctx : contexts) {
    if (std::none_of(contexts_.begin(), contexts_.end(),
                     [ctx](const std::unique_ptr<Context>& p) { return p->ctx == ctx; })) {
      auto pc = std::make_unique<Context>();
      pc->ctx = ctx;
      pc->device = static_cast<uint32_t>(contexts_.size());
      contexts_.push_back(std::move(pc));
    }
  }
}

void PcSampler::OnConnected(MessageSink& out) {
  for (auto& pc : contexts_) {
    if (pc->enabled) {
      out.Emit(pc->stall_reasons);
    }
  }
}

void PcSampler::Step(uint64_t now_ns, bool wanted, const Schedule& schedule, MessageSink& out) {
  wanted =
      wanted && api_->cuptiPCSamplingEnable != nullptr && api_->cuptiPCSamplingGetData != nullptr;
  if (wanted && layout_.pc_record_size == 0) {
    if (!layout_refused_) {
      layout_refused_ = true;
      notify_(wire::Severity::kWarning, 0,
              "PC sampling is off: CUPTI API version " + std::to_string(cupti_version_) +
                  " has a PC record layout this library does not know (known: 18-28, CUDA "
                  "11.8-12.9, and 13.x)");
    }
    wanted = false;
  }
  if (!wanted) {
    for (auto& pc : contexts_) {
      if (running_) {
        StopAndCollect(*pc, out);
      }
      Disable(*pc, out);
    }
    running_ = false;
    return;
  }
  for (auto& pc : contexts_) {
    if (!pc->enabled && !pc->failed) {
      Enable(*pc, schedule, out);
    }
  }
  if (!running_ && now_ns >= next_window_ns_) {
    for (auto& pc : contexts_) {
      if (pc->enabled && api_->cuptiPCSamplingStart != nullptr) {
        abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc->ctx};
        InContext(pc->ctx, [&] { return api_->cuptiPCSamplingStart(&p); });
      }
    }
    running_ = true;
    window_start_realtime_ns_ = realtime_ns_();
    next_window_ns_ = now_ns + static_cast<uint64_t>(schedule.interval_ms) * 1'000'000;
    window_start_ns_ = now_ns;
  } else if (running_ &&
             now_ns >= window_start_ns_ + static_cast<uint64_t>(schedule.window_ms) * 1'000'000) {
    for (auto& pc : contexts_) {
      StopAndCollect(*pc, out);
    }
    running_ = false;
  }
}

void PcSampler::Enable(Context& pc, const Schedule& schedule, MessageSink& out) {
  abi::CUpti_PCSamplingContextParams ep{sizeof(ep), nullptr, pc.ctx};
  abi::CUptiResult r = InContext(pc.ctx, [&] { return api_->cuptiPCSamplingEnable(&ep); });
  // Anything but success (not supported, no permission) disables PC sampling on this context.
  // The stall reasons are asked for after Enable, which creates CUPTI's sampling state.
  size_t num = 0;
  abi::CUpti_PCSamplingGetNumStallReasonsParams np{sizeof(np), nullptr, pc.ctx, &num};
  abi::CUptiResult nr = abi::kSuccess;
  if (r == abi::kSuccess) {
    nr = api_->cuptiPCSamplingGetNumStallReasons == nullptr
             ? abi::kErrorNotSupported
             : InContext(pc.ctx, [&] { return api_->cuptiPCSamplingGetNumStallReasons(&np); });
  }
  if (r != abi::kSuccess || nr != abi::kSuccess || num == 0 || num > kMaxStallReasons) {
    pc.failed = true;
    const abi::CUptiResult code = r != abi::kSuccess ? r : nr;
    std::string why =
        r == abi::kErrorInsufficientPrivileges
            ? "; profiling permission is restricted to administrators (the "
              "driver's default since the CVE-2024-0090 fix): load the nvidia module with "
              "NVreg_RestrictProfilingToAdminUsers=0 or run with CAP_SYS_ADMIN"
            : "; it needs profiling permission (NVreg_RestrictProfilingToAdminUsers=0 "
              "or CAP_SYS_ADMIN) and a GPU of compute capability 7.0 or newer";
    notify_(wire::Severity::kWarning, static_cast<uint32_t>(code),
            "PC sampling could not be enabled on a CUDA context (" + ResultString(*api_, code) +
                ")" + why);
    if (r == abi::kSuccess && api_->cuptiPCSamplingDisable != nullptr) {
      abi::CUpti_PCSamplingContextParams dp{sizeof(dp), nullptr, pc.ctx};
      InContext(pc.ctx, [&] { return api_->cuptiPCSamplingDisable(&dp); });
    }
    return;
  }
  std::vector<uint32_t> indices(num);
  std::vector<std::vector<char>> storage(num, std::vector<char>(abi::kStallReasonNameMax));
  std::vector<char*> names(num);
  for (size_t i = 0; i < num; ++i) {
    names[i] = storage[i].data();
  }
  abi::CUpti_PCSamplingGetStallReasonsParams sp{sizeof(sp), nullptr,        pc.ctx,
                                                num,        indices.data(), names.data()};
  wire::StallReasons reasons;
  reasons.device = pc.device;
  if (api_->cuptiPCSamplingGetStallReasons != nullptr &&
      InContext(pc.ctx, [&] { return api_->cuptiPCSamplingGetStallReasons(&sp); }) ==
          abi::kSuccess) {
    for (size_t i = 0; i < num; ++i) {
      storage[i].back() = '\0';
      reasons.reasons.push_back({indices[i], names[i]});
    }
  }
  pc.config_buffer.Allocate(layout_, kPcsPerBuffer, num);
  pc.get_buffer.Allocate(layout_, kPcsPerBuffer, num);
  std::vector<abi::CUpti_PCSamplingConfigurationInfo> attrs;
  abi::CUpti_PCSamplingConfigurationInfo a{};
  a.attributeType = abi::kPcSamplingAttrCollectionMode;
  a.attributeData.collectionMode = abi::kPcSamplingCollectionModeContinuous;
  attrs.push_back(a);
  a = {};
  a.attributeType = abi::kPcSamplingAttrEnableStartStopControl;
  a.attributeData.enableStartStopControl = 1;
  attrs.push_back(a);
  a = {};
  a.attributeType = abi::kPcSamplingAttrOutputDataFormat;
  a.attributeData.outputDataFormat = abi::kPcSamplingOutputDataFormatParsed;
  attrs.push_back(a);
  a = {};
  a.attributeType = abi::kPcSamplingAttrSamplingDataBuffer;
  a.attributeData.samplingDataBuffer = &pc.config_buffer.data;
  attrs.push_back(a);
  if (schedule.period != 0) {
    a = {};
    a.attributeType = abi::kPcSamplingAttrSamplingPeriod;
    a.attributeData.samplingPeriod = schedule.period;
    attrs.push_back(a);
  }
  abi::CUpti_PCSamplingConfigurationInfoParams cp{sizeof(cp), nullptr, pc.ctx, attrs.size(),
                                                  attrs.data()};
  if (api_->cuptiPCSamplingSetConfigurationAttribute != nullptr) {
    r = InContext(pc.ctx, [&] { return api_->cuptiPCSamplingSetConfigurationAttribute(&cp); });
    if (r != abi::kSuccess) {
      notify_(wire::Severity::kWarning, static_cast<uint32_t>(r),
              "PC sampling configuration was refused (" + ResultString(*api_, r) + ")");
    }
  }
  pc.enabled = true;
  pc.stall_reasons = std::move(reasons);
  out.Emit(pc.stall_reasons);
}

void PcSampler::StopAndCollect(Context& pc, MessageSink& out) {
  if (pc.enabled && api_->cuptiPCSamplingStop != nullptr) {
    abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc.ctx};
    InContext(pc.ctx, [&] { return api_->cuptiPCSamplingStop(&p); });
    Collect(pc, out);
  }
}

void PcSampler::AppendSamples(PcBuffer& buffer, wire::PcSamples* msg, std::vector<char*>* names) {
  msg->total_samples += buffer.data.totalSamples;
  msg->dropped_samples += buffer.data.droppedSamples;
  dropped_ += buffer.data.droppedSamples;
  const size_t n = std::min(buffer.data.totalNumPcs, buffer.num_pcs);
  for (size_t i = 0; i < n; ++i) {
    auto& d = *buffer.Record(i);
    const size_t reasons = std::min(d.stallReasonCount, buffer.num_reasons);
    for (size_t r = 0; r < reasons; ++r) {
      if (d.stallReason[r].samples == 0) {
        continue;
      }
      msg->samples.push_back(
          wire::PcSample{d.cubinCrc, d.functionName != nullptr ? d.functionName : "", d.pcOffset,
                         d.stallReason[r].pcSamplingStallReasonIndex, d.stallReason[r].samples});
    }
    if (d.functionName != nullptr) {
      names->push_back(d.functionName);  // CUPTI's, possibly shared by several records
    }
    d.functionName = nullptr;
  }
}

void PcSampler::FreeNames(std::vector<char*>* names) {
  std::sort(names->begin(), names->end());
  names->erase(std::unique(names->begin(), names->end()), names->end());
  for (char* name : *names) {
    std::free(name);  // the caller frees each string once, after reading every record
  }
  names->clear();
}

void PcSampler::Collect(Context& pc, MessageSink& out) {
  wire::PcSamples msg;
  msg.device = pc.device;
  msg.window_start_ns = window_start_realtime_ns_;
  msg.window_end_ns = realtime_ns_();
  std::vector<char*> names;
  for (int round = 0; round < 64; ++round) {
    pc.get_buffer.Reset();
    abi::CUpti_PCSamplingGetDataParams p{};
    p.size = sizeof(p);
    p.ctx = pc.ctx;
    p.pcSamplingData = &pc.get_buffer.data;
    if (InContext(pc.ctx, [&] { return api_->cuptiPCSamplingGetData(&p); }) != abi::kSuccess) {
      break;
    }
    AppendSamples(pc.get_buffer, &msg, &names);
    if (pc.get_buffer.data.remainingNumPcs == 0) {
      break;
    }
  }
  FreeNames(&names);
  out.Emit(msg);
}

void PcSampler::Disable(Context& pc, MessageSink& out) {
  if (!pc.enabled || api_->cuptiPCSamplingDisable == nullptr) {
    return;
  }
  abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc.ctx};
  InContext(pc.ctx, [&] { return api_->cuptiPCSamplingDisable(&p); });
  pc.enabled = false;
  // Whatever CUPTI still held went to the configured buffer.
  if (pc.config_buffer.data.totalNumPcs > 0) {
    wire::PcSamples msg;
    msg.device = pc.device;
    msg.window_start_ns = window_start_realtime_ns_;
    msg.window_end_ns = realtime_ns_();
    std::vector<char*> names;
    AppendSamples(pc.config_buffer, &msg, &names);
    FreeNames(&names);
    out.Emit(msg);
  }
  pc.config_buffer.Reset();
}

}  // namespace warpscope::cupti_inject
