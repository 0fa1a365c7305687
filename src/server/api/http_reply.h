// SPDX-License-Identifier: Apache-2.0
// How the HTTP handlers read parameters and write answers: JSON bodies, JSON errors
// {"error": "..."}, and the HTTP status of a base::Status. Private to src/server/api/.
#ifndef WARPSCOPE_SERVER_API_HTTP_REPLY_H_
#define WARPSCOPE_SERVER_API_HTTP_REPLY_H_

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"
#include "server/query/query_params.h"

namespace warpscope::server::api_internal {

// InvalidArgument 400, NotFound 404, PermissionDenied 403, ResourceExhausted 413,
// Unavailable 503, anything else 500.
int HttpStatusFor(const base::Status& s);

// The request's query-string parameters.
Params ParamsOf(const httplib::Request& req);

void SendJson(httplib::Response& res, int status, const nlohmann::json& body);
// {"error": message} with `status`.
void SendError(httplib::Response& res, int status, std::string_view message);
// {"error": the status's message} with HttpStatusFor(status).
void SendStatus(httplib::Response& res, const base::Status& status);
// The answer with 200, or its error as SendStatus writes it.
void SendAnswer(httplib::Response& res, const base::Result<nlohmann::json>& answer);

}  // namespace warpscope::server::api_internal

#endif  // WARPSCOPE_SERVER_API_HTTP_REPLY_H_
