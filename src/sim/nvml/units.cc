// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "base/file_util.h"
#include "base/time.h"

namespace warpscope::sim {
namespace {

// Splits "80GiB" into "80" and "GiB". The number part is everything up to the first letter that
// cannot belong to a number (an 'e' followed by a digit or sign is an exponent; "0x" is hex).
void SplitNumberAndSuffix(std::string_view text, std::string_view& number,
                          std::string_view& suffix) {
  size_t i = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    i = 2;
    while (i < text.size() && std::isxdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
  } else {
    while (i < text.size()) {
      char c = text[i];
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-') {
        ++i;
        continue;
      }
      if ((c == 'e' || c == 'E') && i + 1 < text.size() &&
          (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' ||
           text[i + 1] == '+')) {
        i += 2;
        continue;
      }
      break;
    }
  }
  number = base::TrimWhitespace(text.substr(0, i));
  suffix = base::TrimWhitespace(text.substr(i));
}

}  // namespace

std::string_view UnitHint(Unit unit) {
  switch (unit) {
    case Unit::kNumber:
      return "a number such as 42 or 20e9";
    case Unit::kBytes:
      return "a size such as 80GiB, 512MiB, 10GB or a plain number of bytes";
    case Unit::kWatts:
      return "a power in watts such as 700 or 650W";
    case Unit::kSeconds:
      return "a duration such as 30s, 5m, 1h or 250ms";
  }
  return "a value";
}

base::Result<double> ParseNumber(std::string_view text) {
  text = base::TrimWhitespace(text);
  if (text.empty()) {
    return base::Error(base::InvalidArgument("empty value; expected a number"));
  }
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), v, 16);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return base::Error(base::InvalidArgument("'{}' is not a hexadecimal number", text));
    }
    return static_cast<double>(v);
  }
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') {
    digits.remove_prefix(1);
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
      return base::Error(base::InvalidArgument("'{}' has two signs; it is not a number", text));
    }
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || !std::isfinite(v)) {
    return base::Error(base::InvalidArgument("'{}' is not a number", text));
  }
  return v;
}

base::Result<double> ParseBytes(std::string_view text) {
  std::string_view number, suffix;
  SplitNumberAndSuffix(base::TrimWhitespace(text), number, suffix);
  auto v = ParseNumber(number);
  if (!v) {
    return base::Error(
        base::InvalidArgument("'{}' is not a size; write e.g. 80GiB or 512MiB", text));
  }
  double scale = 0;
  if (suffix.empty() || suffix == "B") {
    scale = 1;
  } else if (suffix == "KiB") {
    scale = 1024.0;
  } else if (suffix == "MiB") {
    scale = 1024.0 * 1024;
  } else if (suffix == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (suffix == "TiB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else if (suffix == "KB" || suffix == "kB") {
    scale = 1e3;
  } else if (suffix == "MB") {
    scale = 1e6;
  } else if (suffix == "GB") {
    scale = 1e9;
  } else if (suffix == "TB") {
    scale = 1e12;
  } else {
    return base::Error(base::InvalidArgument(
        "'{}' has unknown size unit '{}'; use B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, "
        "GB, TB (powers of 1000)",
        text, suffix));
  }
  if (*v < 0) {
    return base::Error(base::InvalidArgument("size '{}' is negative", text));
  }
  if (!std::isfinite(*v * scale)) {
    return base::Error(base::InvalidArgument("size '{}' is too large", text));
  }
  return *v * scale;
}

base::Result<double> ParseSeconds(std::string_view text) {
  text = base::TrimWhitespace(text);
  auto plain = ParseNumber(text);
  if (plain) {
    if (*plain == 0) {
      return 0.0;
    }
    return base::Error(base::InvalidArgument(
        "duration '{}' has no unit; write e.g. {}s, {}m or {}ms", text, text, text, text));
  }
  auto d = base::ParseDuration(text);
  if (!d) {
    return base::Error(d.error());
  }
  return base::ToSeconds(*d);
}

base::Result<double> ParseWatts(std::string_view text) {
  std::string_view number, suffix;
  SplitNumberAndSuffix(base::TrimWhitespace(text), number, suffix);
  auto v = ParseNumber(number);
  if (!v) {
    return base::Error(base::InvalidArgument("'{}' is not a power; write e.g. 700 or 650W", text));
  }
  if (suffix.empty() || suffix == "W") {
    return *v;
  }
  if (suffix == "kW") {
    if (!std::isfinite(*v * 1000)) {
      return base::Error(base::InvalidArgument("power '{}' is too large", text));
    }
    return *v * 1000;
  }
  if (suffix == "mW") {
    return *v / 1000;
  }
  return base::Error(
      base::InvalidArgument("'{}' has unknown power unit '{}'; use W or kW", text, suffix));
}

base::Result<double> ParseQuantity(std::string_view text, Unit unit) {
  switch (unit) {
    case Unit::kNumber:
      return ParseNumber(text);
    case Unit::kBytes:
      return ParseBytes(text);
    case Unit::kWatts:
      return ParseWatts(text);
    case Unit::kSeconds:
      return ParseSeconds(text);
  }
  return base::Error(base::Internal("unknown unit"));
}

}  // namespace warpscope::sim
