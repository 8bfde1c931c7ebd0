#include "blockwise_through_allreduce.h"

#include <cstring>
#include <string>

#include "recursive_doubling_allreduce.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

std::byte* scratchFor(AlgorithmContext& context, const Call& call, std::size_t bytes) {
  if (context.pieceScratch == nullptr)
    throw InvalidArgument(std::string(collectiveName(call.kind)) + ": this algorithm needs the communicator's scratch");
  context.pieceScratch->reserve(bytes);
  return context.pieceScratch->data();
}

}  // namespace

void reduceScatterThroughAllreduce(AlgorithmContext& context, const Call& call) {
  const std::size_t total = call.sendCount(context.size), bytes = total * call.elementBytes();
  std::byte* whole = scratchFor(context, call, bytes);
  if (bytes > 0) std::memcpy(whole, call.send, bytes);
  recursiveDoublingAllreduce(context, Call{CollectiveKind::kAllreduce, whole, whole, total, call.type, call.op});
  if (call.count > 0)
    std::memcpy(call.recv, whole + static_cast<std::size_t>(context.rank) * call.blockBytes(), call.blockBytes());
}

void allgatherThroughAllreduce(AlgorithmContext& context, const Call& call) {
  const std::size_t bytes = call.recvCount(context.size) * call.elementBytes();
  std::byte* whole = scratchFor(context, call, bytes);
  if (bytes > 0) {
    std::memset(whole, 0, bytes);
    std::memcpy(whole + static_cast<std::size_t>(context.rank) * call.blockBytes(), call.send, call.blockBytes());
  }
  recursiveDoublingAllreduce(context,
                             Call{CollectiveKind::kAllreduce, whole, whole, bytes, DataType::kUInt8, ReduceOp::kSum});
  if (bytes > 0) std::memcpy(call.recv, whole, bytes);
}

}  // namespace ringsync::detail
