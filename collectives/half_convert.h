// Whole arrays of float16 <-> float32, round-to-nearest-even: the F16C instructions (8 values per
// instruction) when the CPU has them, chosen at run time so that the library still runs without
// them; half.h's exact scalar conversions otherwise and for the tail. F16C's rounding gives the
// same bits as half.h for every non-NaN value. Used by the reduction kernels (widening a block of
// float16 operands, rounding the result back) and by the averager's float16 wire format.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringsync::detail {

using Float16ToFloat32Fn = void (*)(const std::uint16_t* in, float* out, std::size_t count);
using Float32ToFloat16Fn = void (*)(const float* in, std::uint16_t* out, std::size_t count);

// The conversions for this CPU, chosen on the first call. A caller converting many small blocks
// (the reduction kernels: 256 values at a time) keeps the pointer instead of calling through.
Float16ToFloat32Fn float16ToFloat32Converter();
Float32ToFloat16Fn float32ToFloat16Converter();

// One array with the above (the averager: once per bucket).
void convertFloat16ToFloat32(const std::uint16_t* in, float* out, std::size_t count);
void convertFloat32ToFloat16(const float* in, std::uint16_t* out, std::size_t count);

}  // namespace ringsync::detail
