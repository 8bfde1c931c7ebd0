// The invalid half of the randomised API driver: null pointers, overlapping buffers, bad roots,
// absurd counts, wrapping pointers, values outside DataType and ReduceOp.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <limits>

#include "random_calls.h"
#include "ringsync/errors.h"

namespace ringsync::faults {
namespace {

constexpr std::size_t kArenaBytes = 4096;  // each of the two buffers an invalid call is given

// An invalid call on two sentinel-filled arenas, and what its InvalidArgument must mention.
struct BadCall {
  const char* call;  // the message starts with "<call>: "
  std::string mentions;
  std::function<void(Communicator&, std::uint8_t* a, std::uint8_t* b)> run;
};

template <typename T> T pick(RandomCalls& r, std::initializer_list<T> values) {
  return *(values.begin() + r.below(values.size()));
}

std::size_t absurdCount(RandomCalls& r, DataType type) {
  const std::size_t size = dataTypeSize(type);
  return pick<std::size_t>(r, {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / size, ((std::size_t{1} << 57) / size) + 1,
                               std::size_t{1} << 62});
}

BadCall drawAllreduce(RandomCalls& r) {
  const DataType type = pick(r, {DataType::kInt8, DataType::kFloat16, DataType::kFloat32, DataType::kFloat64});
  const ReduceOp op = pick(r, {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg});
  const std::size_t size = dataTypeSize(type);
  const std::size_t count = 1 + r.below(kArenaBytes / 2 / size);
  switch (r.below(7)) {
    case 0:
      return {"allreduce", "send is null",
              [=](Communicator& c, auto*, auto* b) { c.allreduce(nullptr, b, count, type, op); }};
    case 1:
      return {"allreduce", "recv is null",
              [=](Communicator& c, auto* a, auto*) { c.allreduce(a, nullptr, count, type, op); }};
    case 2: {
      // Partially overlapping: recv starts 1 .. bytes-1 bytes after send (or before it).
      const std::size_t overlapCount = std::max<std::size_t>(count, 2);
      const std::size_t shift = 1 + r.below(overlapCount * size - 1);
      const bool recvFirst = r.chance(0.5);
      return {"allreduce", "overlap", [=](Communicator& c, auto* a, auto*) {
                c.allreduce(recvFirst ? a + shift : a, recvFirst ? a : a + shift, overlapCount, type, op);
              }};
    }
    case 3: {
      const int bad = pick(r, {-1, 10, 42, 1000});
      return {"allreduce", "type=" + std::to_string(bad),
              [=](Communicator& c, auto* a, auto* b) { c.allreduce(a, b, count, static_cast<DataType>(bad), op); }};
    }
    case 4: {
      const int bad = pick(r, {-1, 5, 99});
      return {"allreduce", "op=" + std::to_string(bad),
              [=](Communicator& c, auto* a, auto* b) { c.allreduce(a, b, count, type, static_cast<ReduceOp>(bad)); }};
    }
    case 5: {
      const std::size_t absurd = absurdCount(r, type);
      return {"allreduce", "exceeds the address space",
              [=](Communicator& c, auto* a, auto* b) { c.allreduce(a, b, absurd, type, op); }};
    }
    default: {
      // A garbage pointer whose range runs past the top of the address space.
      const auto* wild = reinterpret_cast<const void*>(UINTPTR_MAX - 63);
      return {"allreduce", "wraps around",
              [=](Communicator& c, auto*, auto* b) { c.allreduce(wild, b, count + 64, type, op); }};
    }
  }
}

BadCall drawBroadcast(RandomCalls& r, int ranks) {
  const DataType type = pick(r, {DataType::kUInt8, DataType::kBFloat16, DataType::kInt32, DataType::kUInt64});
  const std::size_t count = 1 + r.below(kArenaBytes / dataTypeSize(type));
  switch (r.below(4)) {
    case 0: {
      const int root = pick(r, {-1, ranks, ranks + 7, INT_MIN, INT_MAX});
      return {"broadcast", "root=" + std::to_string(root),
              [=](Communicator& c, auto* a, auto*) { c.broadcast(a, count, type, root); }};
    }
    case 1:
      return {"broadcast", "buf is null", [=](Communicator& c, auto*, auto*) { c.broadcast(nullptr, count, type, 0); }};
    case 2: {
      const int bad = pick(r, {-1, 10, 77});
      return {"broadcast", "type=" + std::to_string(bad),
              [=](Communicator& c, auto* a, auto*) { c.broadcast(a, count, static_cast<DataType>(bad), 0); }};
    }
    default: {
      const std::size_t absurd = absurdCount(r, type);
      return {"broadcast", "exceeds the address space",
              [=](Communicator& c, auto* a, auto*) { c.broadcast(a, absurd, type, 0); }};
    }
  }
}

BadCall drawAllgather(RandomCalls& r, int ranks) {
  const DataType type = pick(r, {DataType::kInt8, DataType::kFloat32, DataType::kInt64});
  const std::size_t size = dataTypeSize(type);
  const std::size_t count = 1 + r.below(kArenaBytes / size / static_cast<std::size_t>(ranks));
  switch (r.below(5)) {
    case 0:
      return {"allgather", "send is null",
              [=](Communicator& c, auto*, auto* b) { c.allgather(nullptr, b, count, type); }};
    case 1:
      return {"allgather", "recv is null",
              [=](Communicator& c, auto* a, auto*) { c.allgather(a, nullptr, count, type); }};
    case 2:  // send inside recv but not this rank's own block (one byte in, so no rank's block)
      return {"allgather", "overlap", [=](Communicator& c, auto*, auto* b) { c.allgather(b + 1, b, count, type); }};
    case 3: {
      // Fits one rank's block but not count * ranks elements.
      const std::size_t absurd =
          pick<std::size_t>(r, {((std::size_t{1} << 57) / size) / static_cast<std::size_t>(ranks) + 1, SIZE_MAX});
      return {"allgather", "exceeds the address space",
              [=](Communicator& c, auto* a, auto* b) { c.allgather(a, b, absurd, type); }};
    }
    default: {
      const int bad = pick(r, {-1, 10, 12345});
      return {"allgather", "type=" + std::to_string(bad),
              [=](Communicator& c, auto* a, auto* b) { c.allgather(a, b, count, static_cast<DataType>(bad)); }};
    }
  }
}

BadCall drawReduceScatter(RandomCalls& r, int ranks) {
  const DataType type = pick(r, {DataType::kInt8, DataType::kFloat32, DataType::kInt64});
  const std::size_t size = dataTypeSize(type);
  const std::size_t count = 1 + r.below(kArenaBytes / size / static_cast<std::size_t>(ranks));
  switch (r.below(5)) {
    case 0:
      return {"reducescatter", "send is null",
              [=](Communicator& c, auto*, auto* b) { c.reduceScatter(nullptr, b, count, type, ReduceOp::kSum); }};
    case 1:
      return {"reducescatter", "recv is null",
              [=](Communicator& c, auto* a, auto*) { c.reduceScatter(a, nullptr, count, type, ReduceOp::kSum); }};
    case 2:  // recv inside send but not this rank's own block (one byte in, so no rank's block)
      return {"reducescatter", "overlap",
              [=](Communicator& c, auto* a, auto*) { c.reduceScatter(a, a + 1, count, type, ReduceOp::kSum); }};
    case 3: {
      const int bad = pick(r, {-1, 5, 999});
      return {"reducescatter", "op=" + std::to_string(bad), [=](Communicator& c, auto* a, auto* b) {
                c.reduceScatter(a, b, count, type, static_cast<ReduceOp>(bad));
              }};
    }
    default: {
      const std::size_t absurd =
          pick<std::size_t>(r, {((std::size_t{1} << 57) / size) / static_cast<std::size_t>(ranks) + 1, SIZE_MAX});
      return {"reducescatter", "exceeds the address space",
              [=](Communicator& c, auto* a, auto* b) { c.reduceScatter(a, b, absurd, type, ReduceOp::kSum); }};
    }
  }
}

}  // namespace

StepResult RandomCalls::invalidStep(Communicator& comm) {
  // Everything is drawn on every rank, callers or not, so the sequence stays the same everywhere.
  const std::uint64_t kind = below(4);
  const BadCall bad = kind == 0   ? drawAllreduce(*this)
                      : kind == 1 ? drawBroadcast(*this, ranks_)
                      : kind == 2 ? drawAllgather(*this, ranks_)
                                  : drawReduceScatter(*this, ranks_);
  const std::vector<int> callers = drawCallers();
  bool caller = false;
  for (int r : callers) caller = caller || r == comm.rank();
  if (!caller) return {};

  std::vector<std::uint8_t> a(kArenaBytes), b(kArenaBytes);
  for (std::size_t i = 0; i < kArenaBytes; ++i) {
    a[i] = static_cast<std::uint8_t>(i * 7 + 3);
    b[i] = static_cast<std::uint8_t>(i * 11 + 5);
  }
  const std::vector<std::uint8_t> aBefore = a, bBefore = b;
  const std::uint64_t callsBefore = comm.callCount();
  std::string wrong;
  try {
    bad.run(comm, a.data(), b.data());
    wrong = "was accepted";
  } catch (const InvalidArgument& error) {
    const std::string message = error.what();
    if (message.rfind(std::string(bad.call) + ": ", 0) != 0 || message.find(bad.mentions) == std::string::npos)
      wrong = "raised '" + message + "'";
  } catch (const std::exception& error) {
    wrong = std::string("raised something else than InvalidArgument: ") + error.what();
  }
  if (wrong.empty() && (a != aBefore || b != bBefore)) wrong = "touched a buffer";
  if (wrong.empty() && comm.callCount() != callsBefore) wrong = "used a call number";
  if (!wrong.empty())
    wrong = std::string("invalid ") + bad.call + " expected to mention '" + bad.mentions + "' " + wrong;
  return {true, true, wrong};
}

}  // namespace ringsync::faults
