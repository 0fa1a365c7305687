// SPDX-License-Identifier: Apache-2.0
#include "server/api/http_reply.h"

namespace warpscope::server::api_internal {

using nlohmann::json;

int HttpStatusFor(const base::Status& s) {
  switch (s.code()) {
    case base::StatusCode::kInvalidArgument:
      return 400;
    case base::StatusCode::kNotFound:
      return 404;
    case base::StatusCode::kPermissionDenied:
      return 403;
    case base::StatusCode::kResourceExhausted:
      return 413;
    case base::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

Params ParamsOf(const httplib::Request& req) {
  Params p;
  for (const auto& [k, v] : req.params) {
    p.emplace(k, v);
  }
  return p;
}

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void SendError(httplib::Response& res, int status, std::string_view message) {
  SendJson(res, status, json{{"error", message}});
}

void SendStatus(httplib::Response& res, const base::Status& status) {
  SendError(res, HttpStatusFor(status), status.message());
}

void SendAnswer(httplib::Response& res, const base::Result<json>& answer) {
  if (!answer) {
    SendStatus(res, answer.error());
    return;
  }
  SendJson(res, 200, *answer);
}

}  // namespace warpscope::server::api_internal
