// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_SERVER_BATCH_ENCODER_H_
#define WARPSCOPE_EXPORTERS_SERVER_BATCH_ENCODER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/frame.h"
#include "warpscope/v1/batch.pb.h"

namespace warpscope::exporters {

// Turns one closed export window (a model::Frame) into the agent -> server wire message
// `warpscope.v1.Batch` (proto/warpscope/v1/batch.proto):
//
// - version = kBatchVersion, agent_id and host from the options (host defaults to the id of the
//   frame's host entity), tags in option order, start/end of the window in Unix ns.
// - `sequence` is supplied by the caller (the exporter owns numbering; see ServerExporter), not
//   taken from Frame::sequence, which restarts with the agent.
// - metrics: a dictionary with one entry per distinct MetricDesc key, in order of first use by a
//   series; Series.metric is the index into it. Series whose `metric` is null are skipped.
// - entities, series, events and training steps: every field copied; times as Unix ns (0 for an
//   unset time).
//
// Stateless and thread-safe: Encode() may be called from any thread.
class BatchEncoder {
 public:
  static constexpr uint32_t kBatchVersion = 1;

  struct Options {
    std::string agent_id;  // required by the server
    std::string host;      // empty: the id of the frame's first host entity, if any
    std::vector<std::pair<std::string, std::string>> tags;  // --tags, in order
  };

  explicit BatchEncoder(Options options) : options_(std::move(options)) {}

  // The message for `frame`, numbered `sequence`.
  v1::Batch ToProto(const model::Frame& frame, uint64_t sequence) const;
  // ToProto() serialised (protobuf binary, the body of POST /api/v1/ingest/batch).
  std::string Encode(const model::Frame& frame, uint64_t sequence) const;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_SERVER_BATCH_ENCODER_H_
