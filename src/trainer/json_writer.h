// A small JSON text builder for the metrics file (--json): objects and arrays of numbers,
// strings and booleans, with strings escaped and non-finite numbers written as null.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringsync::trainer {

std::string jsonString(const std::string& text);  // quoted and escaped
std::string jsonNumber(double value);             // shortest round-trip form; null if not finite

class JsonObject {
 public:
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, std::uint64_t value);
  JsonObject& add(const std::string& key, int value);
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonObject& addRaw(const std::string& key, const std::string& json);  // already JSON text
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

std::string jsonArray(const std::vector<std::string>& elements);  // elements already JSON text

}  // namespace ringsync::trainer
