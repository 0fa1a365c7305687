// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/request_body.h"

#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include <climits>
#include <string>

namespace warpscope::server {

base::Result<BodyEncoding> BodyEncodingOf(std::string_view content_type, std::string_view note) {
  if (content_type.substr(0, 16) == "application/json") {
    return BodyEncoding::kJson;
  }
  if (content_type.substr(0, 22) == "application/x-protobuf") {
    return BodyEncoding::kProtobuf;
  }
  return base::Error(
      base::Unsupported("Content-Type must be application/x-protobuf or application/json{}, got "
                        "'{}'",
                        note, content_type));
}

base::Status ParseProtobufBody(std::string_view bytes, google::protobuf::MessageLite& message,
                               const BodyMessage& names) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return base::InvalidArgument("{}: {} bytes is too large to decode", names.what, bytes.size());
  }
  bool parsed = false;
  {
    google::protobuf::LogSilencer silence;
    parsed = message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  if (!parsed) {
    return base::InvalidArgument("{}: the body ({} bytes{}) is not a valid {}", names.what,
                                 bytes.size(), names.size_note, names.protobuf);
  }
  return base::OkStatus();
}

base::Status ParseJsonBody(std::string_view json, google::protobuf::Message& message,
                           const BodyMessage& names) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  google::protobuf::LogSilencer silence;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &message, options);
  if (!status.ok()) {
    return base::InvalidArgument("{}: the body is not valid {}: {}", names.what, names.json,
                                 status.ToString());
  }
  return base::OkStatus();
}

}  // namespace warpscope::server
