// SPDX-License-Identifier: Apache-2.0
// The serving engines the fakes stand for, and their command lines: what a fake understands of
// the argv it is started with (the engine's own), so that /proc/<pid>/cmdline reads like the
// real server's.
#ifndef WARPSCOPE_SIM_INFERENCE_ENGINE_COMMAND_H_
#define WARPSCOPE_SIM_INFERENCE_ENGINE_COMMAND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::sim::inference {

enum class Engine { kVllm, kSglang, kTrtllm, kTgi };

// "vllm", "sglang", "trtllm", "tgi": the values of the `inference.engine` attribute.
std::string_view EngineName(Engine engine);
// The path the engine serves its exposition on: /metrics, or /prometheus/metrics (TensorRT-LLM).
std::string_view MetricsPath(Engine engine);

struct EngineCommand {
  Engine engine = Engine::kVllm;
  std::string model;  // what the engine reports as the model name
  std::string host = "0.0.0.0";
  int port = 0;                         // 0: any free port
  uint32_t max_num_seqs = 0;            // the batch limit in sequences (requests)
  uint32_t max_num_batched_tokens = 0;  // the batch limit in tokens per step
  uint32_t max_model_len = 8192;        // vLLM's token-count histogram range
  uint32_t tensor_parallel_size = 1;
};

// Reads an engine's argv:
//   vllm serve MODEL [--port P] [--host H] [--max-num-seqs N] [--max-num-batched-tokens N]
//        [--served-model-name NAME] [--max-model-len N] [--tensor-parallel-size N]
//   python3 -m vllm.entrypoints.openai.api_server --model MODEL [same options]
//   python3 -m sglang.launch_server --model-path MODEL [--port P] [--host H]
//        [--max-running-requests N] [--chunked-prefill-size N] [--served-model-name NAME] [--tp N]
//   trtllm-serve [serve] MODEL [--port P] [--host H] [--max_batch_size N] [--max_num_tokens N]
//        [--tp_size N]
//   text-generation-launcher --model-id MODEL [--port P] [--hostname H]
//        [--max-concurrent-requests N] [--max-batch-prefill-tokens N] [--num-shard N]
// The program is recognised by argv[0]'s file name (any python3* or python for `-m`). Options
// take `--opt value` or `--opt=value`; options not listed are accepted and ignored, as real
// command lines carry many. Defaults are each engine's own (docs/design/inference.md). Errors
// name the argument and what was expected.
[[nodiscard]] base::Result<EngineCommand> ParseEngineCommand(const std::vector<std::string>& argv);

}  // namespace warpscope::sim::inference

#endif  // WARPSCOPE_SIM_INFERENCE_ENGINE_COMMAND_H_
