#include "tessera/byte_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace tessera {

Result<uint64_t> parse_byte_size(std::string_view text) {
  const std::string orig(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return invalid_argument("invalid size '" + orig + "' (expected e.g. 512MiB or 2GiB)");
  double number = 0;
  try {
    number = std::stod(std::string(text.substr(0, i)));
  } catch (...) {
    return invalid_argument("invalid size '" + orig + "'");
  }
  std::string unit(text.substr(i));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else return invalid_argument("invalid size unit in '" + orig + "' (use B, KiB, MiB, GiB or TiB)");
  const double bytes = number * mult;
  if (!std::isfinite(bytes) || bytes >= 1.8e19) return invalid_argument("size '" + orig + "' is too large");
  return static_cast<uint64_t>(bytes);
}

std::string format_byte_size(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", v, kUnits[u]);
}

}  // namespace tessera
