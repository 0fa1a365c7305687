// SPDX-License-Identifier: Apache-2.0
// OTLP attributes as text, the same way for every OTLP receiver (metrics, traces). Private to
// server/ingest.
#ifndef WARPSCOPE_SERVER_INGEST_OTLP_ATTRIBUTES_H_
#define WARPSCOPE_SERVER_INGEST_OTLP_ATTRIBUTES_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <string>
#include <string_view>

#include "model/labels.h"
#include "opentelemetry/proto/common/v1/common.pb.h"

namespace warpscope::server::ingest_internal {

// Appends `bytes` as lowercase hex digits.
void AppendHex(std::string_view bytes, std::string& out);

// An attribute value as text: strings as they are, numbers in decimal, bools as true/false,
// bytes in hex, arrays as [a,b] and key-value lists as {k=v,...} (nested at most 8 deep).
void AppendValue(const ::opentelemetry::proto::common::v1::AnyValue& v, int depth,
                 std::string& out);

// Attributes as sorted labels; empty keys are dropped, the first of a repeated key wins.
model::Labels ToLabels(
    const google::protobuf::RepeatedPtrField<::opentelemetry::proto::common::v1::KeyValue>& kvs);

}  // namespace warpscope::server::ingest_internal

#endif  // WARPSCOPE_SERVER_INGEST_OTLP_ATTRIBUTES_H_
