#include "json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ringsync::trainer {

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

JsonObject& JsonObject::addRaw(const std::string& key, const std::string& json) {
  body_ += (body_.empty() ? "" : ", ") + jsonString(key) + ": " + json;
  return *this;
}

JsonObject& JsonObject::add(const std::string& key, double value) { return addRaw(key, jsonNumber(value)); }
JsonObject& JsonObject::add(const std::string& key, std::uint64_t value) { return addRaw(key, std::to_string(value)); }
JsonObject& JsonObject::add(const std::string& key, int value) { return addRaw(key, std::to_string(value)); }
JsonObject& JsonObject::add(const std::string& key, bool value) { return addRaw(key, value ? "true" : "false"); }
JsonObject& JsonObject::add(const std::string& key, const std::string& value) { return addRaw(key, jsonString(value)); }

std::string jsonArray(const std::vector<std::string>& elements) {
  std::string out = "[";
  for (std::size_t i = 0; i < elements.size(); ++i) out += (i ? ", " : "") + elements[i];
  return out + "]";
}

}  // namespace ringsync::trainer
