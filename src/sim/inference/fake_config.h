// SPDX-License-Identifier: Apache-2.0
// What a fake engine is told besides its argv: the traffic, vLLM's naming era and the clock, as
// a JSON document (the file named by WARPSCOPE_FAKE_INFERENCE_CONFIG), so that the argv stays
// the engine's own. Every key is optional:
//
//   {"traffic": {"requests_per_second": 2, "queue_seconds": [0.002], "ttft_seconds": [0.04],
//                "itl_seconds": [0.015], "prompt_tokens": [512], "output_tokens": [128],
//                "prefix_hit_percent": 25, "step_seconds": 0.02, "kv_cache_tokens": 200000},
//    "vllm_names": "v1" | "legacy",
//    "clock": "real" | "manual"}
//
// "manual": time stands at 0 until a test sets it (PUT /warpscope-fake/time, body: seconds).
#ifndef WARPSCOPE_SIM_INFERENCE_FAKE_CONFIG_H_
#define WARPSCOPE_SIM_INFERENCE_FAKE_CONFIG_H_

#include <string>
#include <string_view>

#include "base/status.h"
#include "sim/inference/exposition.h"
#include "sim/inference/traffic_model.h"

namespace warpscope::sim::inference {

// The environment variables of warpscope-fake-inference.
inline constexpr char kConfigEnv[] = "WARPSCOPE_FAKE_INFERENCE_CONFIG";
// A path the fake writes its bound port to ("PORT\n") once it listens: a regular file (written
// atomically) or a FIFO the starter reads.
inline constexpr char kPortFileEnv[] = "WARPSCOPE_FAKE_INFERENCE_PORT_FILE";
// The manual clock's endpoint.
inline constexpr char kTimePath[] = "/warpscope-fake/time";

struct FakeConfig {
  TrafficConfig traffic;
  VllmNames vllm_names = VllmNames::kV1;
  bool manual_clock = false;
};

// Parses and validates; errors name the key and the fix.
[[nodiscard]] base::Result<FakeConfig> ParseFakeConfig(std::string_view json_text);

}  // namespace warpscope::sim::inference

#endif  // WARPSCOPE_SIM_INFERENCE_FAKE_CONFIG_H_
