// A collective described as data, so that fault tests can make one rank call something else than
// the others: what to call, how to run it on a rank's buffers, and the text ringsync's errors use
// for it ("allreduce #3 count=16 float32 sum"), written out independently of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringsync/communicator.h"
#include "ringsync/types.h"

namespace ringsync::faults {

struct CallSpec {
  enum class Kind { kAllreduce, kBroadcast, kAllgather, kBarrier, kReduceScatter };
  Kind kind = Kind::kAllreduce;
  std::size_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
};

CallSpec allreduceSpec(std::size_t count, DataType type, ReduceOp op);
CallSpec broadcastSpec(std::size_t count, DataType type, int root);
CallSpec allgatherSpec(std::size_t count, DataType type);
CallSpec reduceScatterSpec(std::size_t count, DataType type, ReduceOp op);
CallSpec barrierSpec();

// "allreduce #<sequence> count=16 float32 sum", as MismatchError and TimeoutError name calls.
std::string describeSpec(const CallSpec& spec, std::uint64_t sequence);

// Two host buffers filled with distinct byte patterns, large enough for any CallSpec of up to
// `maxCount` elements on `ranks` ranks, with a snapshot to prove a failed call touched nothing.
class PatternBuffers {
 public:
  PatternBuffers(std::size_t maxCount, int ranks);
  void* send() { return send_.data(); }
  void* recv() { return recv_.data(); }
  bool untouched() const { return send_ == sendBefore_ && recv_ == recvBefore_; }

 private:
  std::vector<std::uint8_t> send_, recv_, sendBefore_, recvBefore_;
};

// Runs `spec` out of place (allreduce, allgather; reducescatter from recv() into send(), recv()
// being the larger) or on recv() (broadcast).
void runSpec(Communicator& comm, const CallSpec& spec, PatternBuffers& buffers);

}  // namespace ringsync::faults
