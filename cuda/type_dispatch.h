// Host-side dispatch from a DataType to the element tag the kernels are templated on
// (include from .cu files only, after element_traits.h).
#pragma once

#include <cstdint>
#include <string>

#include "cuda/element_traits.h"
#include "ringsync/errors.h"
#include "ringsync/types.h"

namespace ringsync::cuda::kernels {

// Calls fn(Tag{}) with Tag one of int8_t .. double, Float16, BFloat16.
template <typename Fn> void dispatchElement(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8: return fn(std::int8_t{});
    case DataType::kUInt8: return fn(std::uint8_t{});
    case DataType::kInt32: return fn(std::int32_t{});
    case DataType::kUInt32: return fn(std::uint32_t{});
    case DataType::kInt64: return fn(std::int64_t{});
    case DataType::kUInt64: return fn(std::uint64_t{});
    case DataType::kFloat16: return fn(Float16{});
    case DataType::kBFloat16: return fn(BFloat16{});
    case DataType::kFloat32: return fn(float{});
    case DataType::kFloat64: return fn(double{});
  }
  throw InvalidArgument("cuda kernels: type=" + std::to_string(static_cast<int>(type)) + " is not a DataType");
}

}  // namespace ringsync::cuda::kernels
