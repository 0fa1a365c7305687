// SPDX-License-Identifier: Apache-2.0
// How every ingest path reads a request body: its encoding from the Content-Type, and the parse
// of a protobuf message or of its JSON mapping, with the checks and the error wording the
// decoders share (native batches, OTLP/HTTP metrics, remote write).
#ifndef WARPSCOPE_SERVER_INGEST_REQUEST_BODY_H_
#define WARPSCOPE_SERVER_INGEST_REQUEST_BODY_H_

#include <string_view>

#include "base/status.h"

namespace google::protobuf {
class Message;
class MessageLite;
}  // namespace google::protobuf

namespace warpscope::server {

enum class BodyEncoding { kProtobuf, kJson };

// The encoding a Content-Type names: application/x-protobuf or application/json (parameters
// such as "; charset=utf-8" may follow). Anything else is Unsupported, for an HTTP 415:
// "Content-Type must be application/x-protobuf or application/json<note>, got '<type>'", where
// `note` names the protocol (e.g. " (OTLP/HTTP)").
[[nodiscard]] base::Result<BodyEncoding> BodyEncodingOf(std::string_view content_type,
                                                        std::string_view note = {});

// What the parse errors call the message. Every error starts with "<what>: ".
struct BodyMessage {
  std::string_view what;       // "batch", "OTLP metrics", "remote write"
  std::string_view size_note;  // after the byte count when the bytes are not the message
  // "<what>: the body (<n> bytes<size_note>) is not a valid <protobuf>"
  std::string_view protobuf;
  // "<what>: the body is not valid <json>: <the parser's reason>"
  std::string_view json;
};

// Parses `bytes` into `message`. protobuf's own log lines (one per bad string field) are
// silenced: the failure is reported to the caller instead, and a bad client must not be able to
// flood the server's log. Errors (InvalidArgument): more than INT_MAX bytes ("<what>: <n> bytes
// is too large to decode"), bytes that are not the message. Thread-safe.
[[nodiscard]] base::Status ParseProtobufBody(std::string_view bytes,
                                             google::protobuf::MessageLite& message,
                                             const BodyMessage& names);

// Parses the protobuf JSON mapping of `message` from `json`: lowerCamel or original field
// names, enums as names or numbers, 64-bit integers as strings or numbers; unknown fields are
// ignored so that newer senders can add fields. Errors (InvalidArgument) quote the parser.
[[nodiscard]] base::Status ParseJsonBody(std::string_view json, google::protobuf::Message& message,
                                         const BodyMessage& names);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_INGEST_REQUEST_BODY_H_
