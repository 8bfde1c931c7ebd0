// Values that let every rank check a collective's result without a reference copy, shared by the
// tests and the bench: rank-dependent inputs that are small integers (exact in every DataType),
// the exact result over n ranks, and one element of any DataType read and written as a double
// (float16 and bfloat16 through the library's own conversion, so a check never disagrees with the
// library about rounding).
#pragma once

#include <cstddef>

#include "ringsync/types.h"

namespace ringsync::closed_form {

// Element `i` of a host buffer of `type`, as a double, and the reverse. Integers wrap modulo
// 2^bits, as the library's integer sums do; half types round to nearest even.
double loadElement(const void* data, std::size_t i, DataType type);
void storeElement(void* data, std::size_t i, DataType type, double value);

// All-reduce over n ranks: rank r's input element i, and the result every rank must hold, as
// `type` stores it. Signed types (floats included) are shifted so that the inputs include
// negative values:
//   sum/avg: x = r + i%7 (- 3)          -> sum = n(i%7) + n(n-1)/2 (- 3n); avg = sum / n,
//                                           integers truncating toward zero
//   prod:    x = 1 + (r+i)%2            -> 2^(number of r with r+i odd)
//   min/max: x = (r+i)%n + i%5 (- 5)    -> min = i%5 (- 5), max = i%5 + n-1 (- 5)
double allreduceInput(ReduceOp op, DataType type, int rank, int ranks, std::size_t i);
double allreduceExpected(ReduceOp op, DataType type, int ranks, std::size_t i);
// Both repeat after this many elements (a multiple of 7, 5, 2 and n), so a buffer can be filled
// and checked by tiling one period.
std::size_t allreducePeriod(int ranks);

// Broadcast and all-gather: element i of what `rank` sends (the root's buffer, a rank's block).
// Never 0, so a zeroed buffer differs from it everywhere, and it depends on the rank, so data from
// the wrong root or in the wrong block is caught. Repeats after kRankValuePeriod elements.
double rankValue(int rank, std::size_t i);
inline constexpr std::size_t kRankValuePeriod = 97;

}  // namespace ringsync::closed_form
