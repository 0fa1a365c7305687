// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/otlp_attributes.h"

#include <fmt/format.h>

namespace warpscope::server::ingest_internal {
namespace {

namespace common = ::opentelemetry::proto::common::v1;
using KeyValues = google::protobuf::RepeatedPtrField<common::KeyValue>;

// Nested attribute values are rendered at most this deep.
constexpr int kMaxValueDepth = 8;

}  // namespace

void AppendHex(std::string_view bytes, std::string& out) {
  for (unsigned char c : bytes) {
    out += fmt::format("{:02x}", c);
  }
}

// An attribute value as text: strings as they are, numbers in decimal, bools as true/false,
// bytes in hex, arrays as [a,b] and key-value lists as {k=v,...}.
void AppendValue(const common::AnyValue& v, int depth, std::string& out) {
  if (depth > kMaxValueDepth) {
    out += "...";
    return;
  }
  switch (v.value_case()) {
    case common::AnyValue::kStringValue:
      out += v.string_value();
      return;
    case common::AnyValue::kBoolValue:
      out += v.bool_value() ? "true" : "false";
      return;
    case common::AnyValue::kIntValue:
      out += std::to_string(v.int_value());
      return;
    case common::AnyValue::kDoubleValue:
      out += fmt::format("{}", v.double_value());
      return;
    case common::AnyValue::kBytesValue:
      AppendHex(v.bytes_value(), out);
      return;
    case common::AnyValue::kArrayValue: {
      out += '[';
      for (int i = 0; i < v.array_value().values_size(); ++i) {
        if (i > 0) {
          out += ',';
        }
        AppendValue(v.array_value().values(i), depth + 1, out);
      }
      out += ']';
      return;
    }
    case common::AnyValue::kKvlistValue: {
      out += '{';
      for (int i = 0; i < v.kvlist_value().values_size(); ++i) {
        const common::KeyValue& kv = v.kvlist_value().values(i);
        if (i > 0) {
          out += ',';
        }
        out += kv.key();
        out += '=';
        AppendValue(kv.value(), depth + 1, out);
      }
      out += '}';
      return;
    }
    case common::AnyValue::VALUE_NOT_SET:
      return;
  }
}

// Attributes as sorted labels; empty keys are dropped, the first of a repeated key wins.
model::Labels ToLabels(const KeyValues& kvs) {
  model::Labels out;
  std::string value;
  for (const common::KeyValue& kv : kvs) {
    if (kv.key().empty() || out.Has(kv.key())) {
      continue;
    }
    value.clear();
    AppendValue(kv.value(), 0, value);
    out.Set(kv.key(), value);
  }
  return out;
}

}  // namespace warpscope::server::ingest_internal
