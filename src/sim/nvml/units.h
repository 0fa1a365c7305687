// SPDX-License-Identifier: Apache-2.0
// Parsers for the quantities a simulator scenario writes as YAML scalars. All return plain
// doubles in base units (bytes, seconds, watts) or an InvalidArgument Status whose message says
// what was expected; callers add the file and key path.
#ifndef WARPSCOPE_SIM_NVML_UNITS_H_
#define WARPSCOPE_SIM_NVML_UNITS_H_

#include <string_view>

#include "base/status.h"

namespace warpscope::sim {

// The unit a scenario value is written in.
enum class Unit {
  kNumber,   // plain number: percent, MHz, °C, KB/s, counts, bitmasks
  kBytes,    // "80GiB", "500MiB", "10GB", or a plain number of bytes
  kWatts,    // "700W", "0.7kW", or a plain number of watts
  kSeconds,  // "30s", "5m", "1h", "250ms", "1m30s"; a bare 0 means 0s
};

// A short phrase for error messages, e.g. "a size such as 80GiB or 512MiB".
std::string_view UnitHint(Unit unit);

// A finite number: decimal, scientific ("20e9") or hexadecimal integer ("0x2330").
[[nodiscard]] base::Result<double> ParseNumber(std::string_view text);
// Bytes. Suffixes KiB MiB GiB TiB are powers of 1024, KB MB GB TB powers of 1000, B is 1.
// Whitespace between the number and the suffix is allowed. Negative sizes are rejected.
[[nodiscard]] base::Result<double> ParseBytes(std::string_view text);
// Seconds, from base::ParseDuration syntax. A bare number other than 0 is rejected so that a
// forgotten unit cannot silently mean nanoseconds or hours.
[[nodiscard]] base::Result<double> ParseSeconds(std::string_view text);
// Watts: a plain number, or a number with a W or kW suffix.
[[nodiscard]] base::Result<double> ParseWatts(std::string_view text);
// Dispatches on `unit`.
[[nodiscard]] base::Result<double> ParseQuantity(std::string_view text, Unit unit);

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_UNITS_H_
