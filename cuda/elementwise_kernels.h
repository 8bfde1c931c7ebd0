// Element-wise reduce and divide on device memory, for every DataType (float16/bfloat16
// computed in float32, rounded once). Leaves of the layer tree: each launcher enqueues one kernel
// on `stream` (nullptr: the legacy default stream) and returns; none synchronises. Accesses are
// 16 bytes wide where the pointers allow (same address modulo 16), scalar at the edges.
// `out` may be an input exactly (in place), never a partial overlap. Results equal the host
// reductions of collectives/reduce_kernels.h bit for bit.
#pragma once

#include <cstddef>

#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::cuda {

// out[i] = a[i] op b[i]. kAvg reduces as kSum (the division by the rank count happens once, in
// divide()). Integer sums and products wrap around.
void reduce(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op,
            CUstream_st* stream);

// out[i] = in[i] / divisor: integers truncate toward zero, floating point divides exactly rounded.
void divide(void* out, const void* in, std::size_t count, DataType type, int divisor, CUstream_st* stream);

// Blocks to launch for `work` independent items of 256 threads each on the current device: enough
// to fill every SM several times over, never more than the work needs (grid-stride loops do the rest).
unsigned gridFor(std::size_t work);
constexpr unsigned kBlockThreads = 256;

}  // namespace ringsync::cuda
