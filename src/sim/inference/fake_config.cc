// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/fake_config.h"

#include <nlohmann/json.hpp>

namespace warpscope::sim::inference {

namespace {

using nlohmann::json;

template <typename T>
base::Status ReadList(const json& traffic, const char* key, std::vector<T>& out) {
  if (!traffic.contains(key)) return base::OkStatus();
  const json& v = traffic[key];
  if (!v.is_array()) {
    return base::InvalidArgument("traffic.{}: expected a list of numbers, e.g. [0.04, 0.08]", key);
  }
  out.clear();
  for (const json& x : v) {
    if (!x.is_number() || (std::is_integral_v<T> && !x.is_number_unsigned())) {
      return base::InvalidArgument("traffic.{}: {} is not a {}", key, x.dump(),
                                   std::is_integral_v<T> ? "whole number" : "number");
    }
    out.push_back(x.get<T>());
  }
  return base::OkStatus();
}

template <typename T>
base::Status ReadNumber(const json& traffic, const char* key, T& out) {
  if (!traffic.contains(key)) return base::OkStatus();
  const json& v = traffic[key];
  if (!v.is_number() || (std::is_integral_v<T> && !v.is_number_unsigned())) {
    return base::InvalidArgument("traffic.{}: {} is not a {}", key, v.dump(),
                                 std::is_integral_v<T> ? "whole number" : "number");
  }
  out = v.get<T>();
  return base::OkStatus();
}

base::Status ReadTraffic(const json& t, TrafficConfig& c) {
  if (!t.is_object()) return base::InvalidArgument("traffic: expected an object of settings");
  static const char* const kKeys[] = {"requests_per_second", "queue_seconds", "ttft_seconds",
                                      "itl_seconds",         "prompt_tokens", "output_tokens",
                                      "prefix_hit_percent",  "step_seconds",  "kv_cache_tokens"};
  for (const auto& [key, value] : t.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return base::InvalidArgument(
          "traffic.{}: unknown key; known keys: requests_per_second, queue_seconds, "
          "ttft_seconds, itl_seconds, prompt_tokens, output_tokens, prefix_hit_percent, "
          "step_seconds, kv_cache_tokens",
          key);
    }
  }
  base::Status st = ReadNumber(t, "requests_per_second", c.requests_per_second);
  if (st.ok()) st = ReadList(t, "queue_seconds", c.queue_seconds);
  if (st.ok()) st = ReadList(t, "ttft_seconds", c.ttft_seconds);
  if (st.ok()) st = ReadList(t, "itl_seconds", c.itl_seconds);
  if (st.ok()) st = ReadList(t, "prompt_tokens", c.prompt_tokens);
  if (st.ok()) st = ReadList(t, "output_tokens", c.output_tokens);
  if (st.ok()) st = ReadNumber(t, "prefix_hit_percent", c.prefix_hit_percent);
  if (st.ok()) st = ReadNumber(t, "step_seconds", c.step_seconds);
  if (st.ok()) st = ReadNumber(t, "kv_cache_tokens", c.kv_cache_tokens);
  return st;
}

}  // namespace

base::Result<FakeConfig> ParseFakeConfig(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return base::Error(base::InvalidArgument(
        "{}: not a JSON object; write e.g. {{\"traffic\": {{\"requests_per_second\": 2}}}}",
        kConfigEnv));
  }
  FakeConfig c;
  for (const auto& [key, value] : doc.items()) {
    if (key == "traffic") {
      if (base::Status st = ReadTraffic(value, c.traffic); !st.ok()) return base::Error(st);
    } else if (key == "vllm_names") {
      if (value == "v1") {
        c.vllm_names = VllmNames::kV1;
      } else if (value == "legacy") {
        c.vllm_names = VllmNames::kLegacy;
      } else {
        return base::Error(
            base::InvalidArgument("vllm_names: {} is neither \"v1\" nor \"legacy\"", value.dump()));
      }
    } else if (key == "clock") {
      if (value != "real" && value != "manual") {
        return base::Error(
            base::InvalidArgument("clock: {} is neither \"real\" nor \"manual\"", value.dump()));
      }
      c.manual_clock = value == "manual";
    } else {
      return base::Error(
          base::InvalidArgument("{}: unknown key; known keys: traffic, vllm_names, clock", key));
    }
  }
  if (base::Status st = c.traffic.Validate(); !st.ok()) return base::Error(st);
  return c;
}

}  // namespace warpscope::sim::inference
