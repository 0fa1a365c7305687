// SPDX-License-Identifier: Apache-2.0
// What the clickhouse_storage*.cc files share: time conversions, names and small helpers.
#ifndef WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_INTERNAL_H_
#define WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_INTERNAL_H_

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/time.h"
#include "model/entity.h"
#include "model/metric.h"
#include "server/storage/backend_common.h"
#include "server/storage/storage.h"

namespace warpscope::server::clickhouse_internal {

using namespace backend_common;  // NOLINT(google-build-using-namespace)
int64_t ParseInt(std::string_view s);
uint64_t ParseUint(std::string_view s);
double ParseDouble(std::string_view s);

// A strictly increasing version for ReplacingMergeTree rows and marks: wall-clock nanoseconds,
// bumped past the previous value handed out by this process.
uint64_t NextVersion();

// The series' identity hashed (FNV-1a, 64 bits): the key of its rows in every table.
uint64_t SeriesId(std::string_view host, std::string_view entity, std::string_view labels);

// ClickHouse's RowBinary row format, which it parses several times faster than JSONEachRow:
// the columns in the table's order, numbers little-endian, a string as its length (unsigned
// LEB128) and its bytes.
template <typename T>
inline void AppendRowBinary(std::string& out, T v) {
  static_assert(std::endian::native == std::endian::little, "RowBinary is little-endian");
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
inline void AppendRowBinary(std::string& out, std::string_view s) {
  for (uint64_t n = s.size();; n >>= 7) {
    const auto low = static_cast<uint8_t>(n & 0x7f);
    if (n < 0x80) {
      out.push_back(static_cast<char>(low));
      break;
    }
    out.push_back(static_cast<char>(low | 0x80));
  }
  out.append(s);
}

// The time blocks that lead the sort keys of `samples` (10 minutes) and `rollup_1m` (an hour),
// so that a time range reads its blocks only: ClickHouse 18.16 prunes parts and granules under
// FINAL by the key's own expression only, not through `start` (clickhouse_storage.cc, kSchema).
inline constexpr int64_t kSampleBlockMs = 10 * 60'000;
inline constexpr int64_t kMinuteBlockMs = 60 * 60'000;
// The block of `table`'s rows (0 for a table without one).
int64_t BlockOf(std::string_view table);
// `start >= from AND start < to`, with the same range on the table's block expression for
// ClickHouse to prune by (from < to).
std::string StartRange(std::string_view table, int64_t from, int64_t to);

// Windows written within this long of a series' last_seen still find the series in a query
// range, rate seeds included (as SqliteStorage's kLastSeenSlackMs).
inline constexpr int64_t kLastSeenSlackMs = 20 * 60'000;

}  // namespace warpscope::server::clickhouse_internal

#endif  // WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_INTERNAL_H_
