#include "call_spec.h"

namespace ringsync::faults {

CallSpec allreduceSpec(std::size_t count, DataType type, ReduceOp op) {
  return {CallSpec::Kind::kAllreduce, count, type, op, 0};
}
CallSpec broadcastSpec(std::size_t count, DataType type, int root) {
  return {CallSpec::Kind::kBroadcast, count, type, ReduceOp::kSum, root};
}
CallSpec allgatherSpec(std::size_t count, DataType type) {
  return {CallSpec::Kind::kAllgather, count, type, ReduceOp::kSum, 0};
}
CallSpec reduceScatterSpec(std::size_t count, DataType type, ReduceOp op) {
  return {CallSpec::Kind::kReduceScatter, count, type, op, 0};
}
CallSpec barrierSpec() { return {CallSpec::Kind::kBarrier, 0, DataType::kFloat32, ReduceOp::kSum, 0}; }

std::string describeSpec(const CallSpec& spec, std::uint64_t sequence) {
  const std::string number = " #" + std::to_string(sequence);
  const std::string shape = " count=" + std::to_string(spec.count) + " " + dataTypeName(spec.type);
  switch (spec.kind) {
    case CallSpec::Kind::kAllreduce: return "allreduce" + number + shape + " " + reduceOpName(spec.op);
    case CallSpec::Kind::kBroadcast: return "broadcast" + number + shape + " root=" + std::to_string(spec.root);
    case CallSpec::Kind::kAllgather: return "allgather" + number + shape;
    case CallSpec::Kind::kBarrier: return "barrier" + number;
    case CallSpec::Kind::kReduceScatter: return "reducescatter" + number + shape + " " + reduceOpName(spec.op);
  }
  return "?";
}

PatternBuffers::PatternBuffers(std::size_t maxCount, int ranks)
    : send_(maxCount * 8), recv_(maxCount * 8 * static_cast<std::size_t>(ranks)) {
  for (std::size_t i = 0; i < send_.size(); ++i) send_[i] = static_cast<std::uint8_t>(i * 7 + 1);
  for (std::size_t i = 0; i < recv_.size(); ++i) recv_[i] = static_cast<std::uint8_t>(i * 13 + 5);
  sendBefore_ = send_;
  recvBefore_ = recv_;
}

void runSpec(Communicator& comm, const CallSpec& spec, PatternBuffers& buffers) {
  switch (spec.kind) {
    case CallSpec::Kind::kAllreduce:
      return comm.allreduce(buffers.send(), buffers.recv(), spec.count, spec.type, spec.op);
    case CallSpec::Kind::kBroadcast: return comm.broadcast(buffers.recv(), spec.count, spec.type, spec.root);
    case CallSpec::Kind::kAllgather: return comm.allgather(buffers.send(), buffers.recv(), spec.count, spec.type);
    case CallSpec::Kind::kBarrier: return comm.barrier();
    case CallSpec::Kind::kReduceScatter:
      return comm.reduceScatter(buffers.recv(), buffers.send(), spec.count, spec.type, spec.op);
  }
}

}  // namespace ringsync::faults
