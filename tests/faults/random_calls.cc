#include "random_calls.h"

#include <climits>
#include <cstdint>
#include <functional>
#include <limits>

#include "closed_form.h"
#include "ringsync/errors.h"
#include "support/test_support.h"

namespace ringsync::faults {
namespace {

using test::TypedBuffer;

constexpr std::size_t kGuard = 16;  // elements past `count` that no call may write
constexpr std::uint8_t kSentinel = 0xA5;

DataType drawType(RandomCalls& r) { return kAllDataTypes[r.below(std::size(kAllDataTypes))]; }
ReduceOp drawOp(RandomCalls& r) { return kAllReduceOps[r.below(std::size(kAllReduceOps))]; }

std::string describeShape(const char* call, std::size_t count, DataType type) {
  return std::string(call) + " count=" + std::to_string(count) + " " + dataTypeName(type);
}

// First index in [from, to) where `buffer` holds something else than `want(i)`, as text.
std::string firstWrong(const TypedBuffer& buffer, std::size_t from, std::size_t to,
                       const std::function<double(std::size_t)>& want) {
  for (std::size_t i = from; i < to; ++i)
    if (buffer.get(i) != want(i))
      return "element " + std::to_string(i) + " is " + std::to_string(buffer.get(i)) + ", expected " +
             std::to_string(want(i));
  return "";
}

std::string guardWrong(const TypedBuffer& buffer, std::size_t fromByte) {
  for (std::size_t b = fromByte; b < buffer.bytes(); ++b)
    if (buffer.raw()[b] != kSentinel) return "byte " + std::to_string(b) + " past the end was written";
  return "";
}

StepResult allreduceStep(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  const int n = comm.size();
  TypedBuffer send(type, count + kGuard), recv(type, count + kGuard);
  send.fill(kSentinel);
  recv.fill(kSentinel);
  for (std::size_t i = 0; i < count; ++i) send.set(i, closed_form::allreduceInput(op, type, comm.rank(), n, i));
  const std::vector<std::uint8_t> sendBefore = send.raw();
  comm.allreduce(send.data(), inPlace ? send.data() : recv.data(), count, type, op);
  const TypedBuffer& result = inPlace ? send : recv;
  auto want = [&](std::size_t i) { return closed_form::allreduceExpected(op, type, n, i); };
  StepResult step{true, false, firstWrong(result, 0, count, want)};
  if (step.wrong.empty()) step.wrong = guardWrong(result, count * dataTypeSize(type));
  if (step.wrong.empty() && !inPlace && send.raw() != sendBefore) step.wrong = "the send buffer was modified";
  if (!step.wrong.empty())
    step.wrong = describeShape("allreduce", count, type) + " " + reduceOpName(op) + (inPlace ? " in place: " : ": ") +
                 step.wrong;
  return step;
}

StepResult broadcastStep(Communicator& comm, DataType type, std::size_t count, int root) {
  TypedBuffer buf(type, count + kGuard);
  buf.fill(kSentinel);
  if (comm.rank() == root)
    for (std::size_t i = 0; i < count; ++i) buf.set(i, closed_form::rankValue(root, i));
  comm.broadcast(buf.data(), count, type, root);
  StepResult step{true, false,
                  firstWrong(buf, 0, count, [&](std::size_t i) { return closed_form::rankValue(root, i); })};
  if (step.wrong.empty()) step.wrong = guardWrong(buf, count * dataTypeSize(type));
  if (!step.wrong.empty())
    step.wrong = describeShape("broadcast", count, type) + " root=" + std::to_string(root) + ": " + step.wrong;
  return step;
}

StepResult allgatherStep(Communicator& comm, DataType type, std::size_t count, bool inPlace) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  const std::size_t own = static_cast<std::size_t>(comm.rank()) * count;
  TypedBuffer send(type, count), recv(type, n * count + kGuard);
  recv.fill(kSentinel);
  for (std::size_t i = 0; i < count; ++i) send.set(i, closed_form::rankValue(comm.rank(), i));
  if (inPlace)
    for (std::size_t i = 0; i < count; ++i) recv.set(own + i, closed_form::rankValue(comm.rank(), i));
  const void* source = inPlace ? static_cast<const void*>(static_cast<const std::uint8_t*>(recv.data()) +
                                                          own * dataTypeSize(type))
                               : send.data();
  comm.allgather(source, recv.data(), count, type);
  auto want = [&](std::size_t i) { return closed_form::rankValue(static_cast<int>(i / count), i % count); };
  StepResult step{true, false, firstWrong(recv, 0, n * count, want)};
  if (step.wrong.empty()) step.wrong = guardWrong(recv, n * count * dataTypeSize(type));
  if (!step.wrong.empty()) step.wrong = describeShape("allgather", count, type) + ": " + step.wrong;
  return step;
}

StepResult reduceScatterStep(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  const int n = comm.size();
  const std::size_t total = count * static_cast<std::size_t>(n), own = count * static_cast<std::size_t>(comm.rank());
  TypedBuffer send(type, total + kGuard), recv(type, count + kGuard);
  send.fill(kSentinel);
  recv.fill(kSentinel);
  for (std::size_t i = 0; i < total; ++i) send.set(i, closed_form::allreduceInput(op, type, comm.rank(), n, i));
  const std::vector<std::uint8_t> sendBefore = send.raw();
  void* out = inPlace ? static_cast<std::uint8_t*>(send.data()) + own * dataTypeSize(type) : recv.data();
  comm.reduceScatter(send.data(), out, count, type, op);
  auto want = [&](std::size_t i) { return closed_form::allreduceExpected(op, type, n, i); };
  // In place the result is send's own block; out of place recv, and send unchanged.
  StepResult step{true, false,
                  inPlace ? firstWrong(send, own, own + count, want)
                          : firstWrong(recv, 0, count, [&](std::size_t j) { return want(own + j); })};
  if (step.wrong.empty())
    step.wrong = inPlace ? guardWrong(send, total * dataTypeSize(type)) : guardWrong(recv, count * dataTypeSize(type));
  if (step.wrong.empty() && !inPlace && send.raw() != sendBefore) step.wrong = "the send buffer was modified";
  if (!step.wrong.empty())
    step.wrong = describeShape("reducescatter", count, type) + " " + reduceOpName(op) +
                 (inPlace ? " in place: " : ": ") + step.wrong;
  return step;
}

}  // namespace

std::size_t RandomCalls::drawCount() {
  const std::size_t n = static_cast<std::size_t>(ranks_);
  switch (below(8)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return n - 1;
    case 3: return n + 1;
    case 4: return 1021;
    case 5: return 5000 + below(70000);  // the ring for most types
    default: return 1 + below(3000);     // the direct exchange for most types
  }
}

std::vector<int> RandomCalls::drawCallers() {
  std::vector<int> callers;
  for (int r = 0; r < ranks_; ++r)
    if (chance(0.5)) callers.push_back(r);
  if (callers.empty()) callers.push_back(static_cast<int>(below(static_cast<std::uint64_t>(ranks_))));
  return callers;
}

StepResult RandomCalls::validStep(Communicator& comm) {
  const std::uint64_t kind = below(11);
  const DataType type = drawType(*this);
  const std::size_t count = drawCount();
  if (kind == 10) return reduceScatterStep(comm, type, drawOp(*this), count % 20000, chance(0.5));
  if (kind < 6) {
    const ReduceOp op = drawOp(*this);
    return allreduceStep(comm, type, op, count, chance(0.5));
  }
  if (kind < 8) return broadcastStep(comm, type, count, static_cast<int>(below(static_cast<std::uint64_t>(ranks_))));
  if (kind < 9) return allgatherStep(comm, type, count % 4000, chance(0.5));
  comm.barrier();
  return {true, false, ""};
}

}  // namespace ringsync::faults
