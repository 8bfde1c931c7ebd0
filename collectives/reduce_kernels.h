// Element-wise reductions on host memory, for every DataType x ReduceOp. These are the inner
// loops of the host ring: they run on a segment just received (still in cache) and must keep up
// with memcpy, so each (type, op) pair is its own simple loop the compiler vectorises.
#pragma once

#include <cstddef>

#include "ringsync/types.h"

namespace ringsync::detail {

// out[i] = a[i] op b[i]. `out` may be `a` or `b` (exactly), not a partial overlap. kAvg reduces as
// kSum (the division happens once, see divideElements). Integer sums and products wrap around.
void reduceElements(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op);

// out[i] = (a[i] + b[i]) / divisor: the last reduce-scatter step of kAvg, fused.
void sumAndDivideElements(void* out, const void* a, const void* b, std::size_t count, DataType type, int divisor);

// data[i] /= divisor. Integers truncate toward zero; half types divide in float32, round once.
void divideElements(void* data, std::size_t count, DataType type, int divisor);

// True when a floating-point buffer holds a NaN or an infinity (always false for integers).
bool containsNonFinite(const void* data, std::size_t count, DataType type);

}  // namespace ringsync::detail
