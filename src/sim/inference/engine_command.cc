// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/engine_command.h"

#include <charconv>
#include <map>
#include <optional>

namespace warpscope::sim::inference {

namespace {

// argv[i..] as options: "--name value" or "--name=value"; a flag followed by another option (or
// nothing) has an empty value. Positional arguments go to `positional`.
struct Options {
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;
};

Options ReadOptions(const std::vector<std::string>& argv, size_t first) {
  Options out;
  for (size_t i = first; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!a.starts_with("--")) {
      out.positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      out.values[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argv.size() && !argv[i + 1].starts_with("--")) {
      out.values[a] = argv[++i];
    } else {
      out.values[a] = "";
    }
  }
  return out;
}

std::optional<std::string> Get(const Options& o, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = o.values.find(n);
    if (it != o.values.end()) return it->second;
  }
  return std::nullopt;
}

base::Status ReadUint(const Options& o, std::initializer_list<const char*> names, uint32_t max,
                      uint32_t& out) {
  auto v = Get(o, names);
  if (!v) return base::OkStatus();
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n > max) {
    return base::InvalidArgument("{} '{}': expected a whole number from 0 to {}", *names.begin(),
                                 *v, max);
  }
  out = n;
  return base::OkStatus();
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Which engine, and where its options start.
base::Result<std::pair<Engine, size_t>> Recognise(const std::vector<std::string>& argv) {
  const std::string prog = argv.empty() ? "" : BaseName(argv[0]);
  if (prog == "vllm" && argv.size() > 1 && argv[1] == "serve") return std::pair{Engine::kVllm, 2};
  if (prog == "trtllm-serve") {
    return std::pair{Engine::kTrtllm, argv.size() > 1 && argv[1] == "serve" ? size_t{2} : 1};
  }
  if (prog == "text-generation-launcher") return std::pair{Engine::kTgi, 1};
  if (prog.starts_with("python") && argv.size() > 2 && argv[1] == "-m") {
    if (argv[2] == "vllm.entrypoints.openai.api_server") return std::pair{Engine::kVllm, 3};
    if (argv[2] == "sglang.launch_server") return std::pair{Engine::kSglang, 3};
  }
  return base::Error(base::InvalidArgument(
      "'{}' is not a serving engine's command line; start the fake as `vllm serve MODEL`, "
      "`python3 -m vllm.entrypoints.openai.api_server --model MODEL`, `python3 -m "
      "sglang.launch_server --model-path MODEL`, `trtllm-serve MODEL` or "
      "`text-generation-launcher --model-id MODEL` (argv[0] chosen by the starter)",
      argv.empty() ? std::string() : argv[0] + (argv.size() > 1 ? " " + argv[1] : "")));
}

}  // namespace

std::string_view EngineName(Engine engine) {
  switch (engine) {
    case Engine::kVllm:
      return "vllm";
    case Engine::kSglang:
      return "sglang";
    case Engine::kTrtllm:
      return "trtllm";
    case Engine::kTgi:
      return "tgi";
  }
  return "";
}

std::string_view MetricsPath(Engine engine) {
  return engine == Engine::kTrtllm ? "/prometheus/metrics" : "/metrics";
}

base::Result<EngineCommand> ParseEngineCommand(const std::vector<std::string>& argv) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto recognised, Recognise(argv));
  const auto [engine, first] = recognised;
  const Options o = ReadOptions(argv, first);
  EngineCommand c;
  c.engine = engine;
  uint32_t port = 0;
  base::Status st;
  switch (engine) {
    case Engine::kVllm:
      c.model = o.positional.empty() ? Get(o, {"--model"}).value_or("") : o.positional[0];
      port = 8000;
      c.max_num_seqs = 256;
      c.max_num_batched_tokens = 8192;
      if (auto name = Get(o, {"--served-model-name"})) c.model = *name;
      st = ReadUint(o, {"--max-num-seqs"}, 1 << 20, c.max_num_seqs);
      if (st.ok())
        st = ReadUint(o, {"--max-num-batched-tokens"}, 1 << 24, c.max_num_batched_tokens);
      if (st.ok()) st = ReadUint(o, {"--max-model-len"}, 1 << 24, c.max_model_len);
      if (st.ok())
        st = ReadUint(o, {"--tensor-parallel-size", "-tp"}, 1024, c.tensor_parallel_size);
      break;
    case Engine::kSglang:
      c.model = Get(o, {"--model-path", "--model"}).value_or("");
      port = 30000;
      c.max_num_seqs = 256;
      c.max_num_batched_tokens = 8192;
      if (auto name = Get(o, {"--served-model-name"})) c.model = *name;
      st = ReadUint(o, {"--max-running-requests"}, 1 << 20, c.max_num_seqs);
      if (st.ok()) st = ReadUint(o, {"--chunked-prefill-size"}, 1 << 24, c.max_num_batched_tokens);
      if (st.ok()) st = ReadUint(o, {"--tp", "--tp-size"}, 1024, c.tensor_parallel_size);
      break;
    case Engine::kTrtllm:
      c.model = o.positional.empty() ? "" : o.positional[0];
      port = 8000;
      c.max_num_seqs = 2048;
      c.max_num_batched_tokens = 8192;
      st = ReadUint(o, {"--max_batch_size"}, 1 << 20, c.max_num_seqs);
      if (st.ok()) st = ReadUint(o, {"--max_num_tokens"}, 1 << 24, c.max_num_batched_tokens);
      if (st.ok()) st = ReadUint(o, {"--tp_size"}, 1024, c.tensor_parallel_size);
      break;
    case Engine::kTgi:
      c.model = Get(o, {"--model-id"}).value_or("");
      port = 3000;
      c.max_num_seqs = 128;
      c.max_num_batched_tokens = 4096;
      if (auto host = Get(o, {"--hostname"})) c.host = *host;
      st = ReadUint(o, {"--max-concurrent-requests"}, 1 << 20, c.max_num_seqs);
      if (st.ok())
        st = ReadUint(o, {"--max-batch-prefill-tokens"}, 1 << 24, c.max_num_batched_tokens);
      if (st.ok()) st = ReadUint(o, {"--num-shard"}, 1024, c.tensor_parallel_size);
      break;
  }
  if (!st.ok()) return base::Error(st);
  if (st = ReadUint(o, {"--port"}, 65535, port); !st.ok()) return base::Error(st);
  c.port = static_cast<int>(port);
  if (engine != Engine::kTgi) {
    if (auto host = Get(o, {"--host"})) c.host = *host;
  }
  if (c.model.empty()) {
    return base::Error(base::InvalidArgument(
        "{}: no model on the command line; name one as the real engine takes it (e.g. `vllm "
        "serve meta-llama/Llama-3.1-8B-Instruct`)",
        EngineName(engine)));
  }
  return c;
}

}  // namespace warpscope::sim::inference
