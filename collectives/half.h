// float16 (IEEE binary16) and bfloat16 <-> float32 conversions, round-to-nearest-even.
// Half types are reduced by widening both operands to float32 and rounding the result once per
// step, as NCCL does.
#pragma once

#include <cstdint>
#include <cstring>

namespace ringsync::detail {

inline std::uint32_t floatBits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float floatFromBits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline float bfloat16ToFloat(std::uint16_t value) { return floatFromBits(std::uint32_t{value} << 16); }

inline std::uint16_t floatToBfloat16(float value) {
  const std::uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  const std::uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + roundingBias) >> 16);
}

inline float float16ToFloat(std::uint16_t value) {
  const std::uint32_t sign = std::uint32_t{value & 0x8000u} << 16;
  const std::uint32_t exponent = (value >> 10) & 0x1fu;
  const std::uint32_t mantissa = value & 0x3ffu;
  if (exponent == 0x1f) return floatFromBits(sign | 0x7f800000u | (mantissa << 13));  // Inf/NaN
  if (exponent != 0) return floatFromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float32.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

inline std::uint16_t floatToFloat16(float value) {
  const std::uint32_t bits = floatBits(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (magnitude < 0x38800000u) {
    // Result is subnormal or zero: round |value| / 2^-24 to the nearest integer, ties to even.
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign;  // below half the smallest subnormal
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14..24
    std::uint32_t result = mantissa >> shift;
    const std::uint32_t remainder = mantissa & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits, ties to even.
  const std::uint32_t rebased = magnitude - (112u << 23);
  const std::uint32_t roundingBias = 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | ((rebased + roundingBias) >> 13));
}

}  // namespace ringsync::detail
