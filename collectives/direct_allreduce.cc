#include "direct_allreduce.h"

#include <cstring>

#include "reduce_kernels.h"

namespace ringsync::detail {

void directReduce(const HeaderExchange& exchange, void* recv, std::size_t count, DataType type, ReduceOp op) {
  const int size = exchange.size();
  if (count == 0) return;
  // The exchange keeps a copy of this rank's own contribution, so `recv` may alias `send`.
  if (size == 1) {
    std::memcpy(recv, exchange.payload(0), count * dataTypeSize(type));
    return;
  }
  reduceElements(recv, exchange.payload(0), exchange.payload(1), count, type, op);
  for (int r = 2; r < size; ++r) reduceElements(recv, recv, exchange.payload(r), count, type, op);
  if (op == ReduceOp::kAvg) divideElements(recv, count, type, size);
}

}  // namespace ringsync::detail
