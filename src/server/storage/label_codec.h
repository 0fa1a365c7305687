// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_STORAGE_LABEL_CODEC_H_
#define WARPSCOPE_SERVER_STORAGE_LABEL_CODEC_H_

#include <string>
#include <string_view>

#include "model/labels.h"

namespace warpscope::server {

// Labels as one text column: "k=v,k=v" in key order, with '\', ',' and '=' escaped by a
// backslash. Equal label sets encode to equal strings, so the text can be part of a unique key.
// Readable in the sqlite3 shell.
std::string EncodeLabels(const model::Labels& labels);
// Appends EncodeLabels(labels) to `out`.
void AppendEncodedLabels(std::string& out, const model::Labels& labels);
// Inverse of EncodeLabels. Text that EncodeLabels cannot produce is decoded best-effort (a pair
// without '=' becomes a key with an empty value).
model::Labels DecodeLabels(std::string_view text);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_LABEL_CODEC_H_
