// The staged path's host side, on any machine: collectives/staged_path.h driven through a stand-in
// StagingMemory whose "device" is ordinary memory and whose uploads stay pending until waited for
// (as an upload on a CUDA stream does), with the real Communicator's host ring as the host step.
// Checks the results (closed forms, every type and op), the order of the steps, that the caller's
// stream is passed through, that a call without a stream completes before returning, and that
// count 0 still runs the host collective so every rank stays in step.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "closed_form.h"
#include "src/staged_path.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using test::TypedBuffer;

namespace {

CUstream_st* const kCallerStream = reinterpret_cast<CUstream_st*>(0x5eed);

class FakeStagingMemory final : public detail::StagingMemory {
 public:
  void* hostBuffer(std::size_t bytes) override {
    finish();  // the contract: earlier uploads out of the buffer have completed
    log += 'H';
    if (bytes > host_.size()) host_.resize(bytes);
    return host_.data();
  }
  void download(void* host, const void* device, std::size_t bytes, CUstream_st* stream) override {
    log += 'D';
    streamsOk = streamsOk && stream == expectedStream;
    std::memcpy(host, device, bytes);
  }
  void upload(void* device, const void* host, std::size_t bytes, CUstream_st* stream) override {
    log += 'U';
    streamsOk = streamsOk && stream == expectedStream;
    pending_ = {device, host, bytes};  // lands in "device" memory only once waited for
  }
  void finish() override {
    if (!pending_.bytes) return;
    log += 'F';
    std::memcpy(pending_.device, pending_.host, pending_.bytes);
    pending_ = {};
  }
  void step() { log += 'S'; }

  std::string log;
  CUstream_st* expectedStream = nullptr;
  bool streamsOk = true;

 private:
  struct Upload {
    void* device = nullptr;
    const void* host = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<std::byte> host_;
  Upload pending_;
};

// The log one call should leave: the pending upload of a call with a stream is completed by the
// caller's own wait (finish() below), after the call returned.
std::string expectedLog(bool downloads, bool uploads, bool withStream) {
  std::string log = "H";
  if (downloads) log += 'D';
  log += 'S';
  if (uploads) log += withStream ? "U" : "UF";
  return log;
}

bool checkAllreduce(Communicator& comm, FakeStagingMemory& memory, DataType type, ReduceOp op, std::size_t count,
                    bool inPlace, CUstream_st* stream) {
  TypedBuffer send(type, count), recv(type, count);
  for (std::size_t i = 0; i < count; ++i)
    send.set(i, closed_form::allreduceInput(op, type, comm.rank(), comm.size(), i));
  recv.fill(0xA5);
  TypedBuffer& out = inPlace ? send : recv;
  memory.log.clear();
  memory.expectedStream = stream;
  const std::uint64_t before = comm.callCount();
  detail::stagedAllreduce(memory, send.data(), out.data(), send.bytes(), stream, [&](void* host) {
    memory.step();
    comm.allreduce(host, host, count, type, op);
  });
  const bool orderOk = memory.log == expectedLog(count > 0, count > 0, stream != nullptr);
  memory.finish();  // the caller waiting on its stream
  bool valuesOk = comm.callCount() == before + 1;
  for (std::size_t i = 0; i < count && valuesOk; ++i)
    valuesOk = out.get(i) == closed_form::allreduceExpected(op, type, comm.size(), i);
  UNSCOPED_INFO(test::describe(type, op, count, inPlace) << (stream ? " with stream" : " without stream")
                << ": log " << memory.log << (valuesOk ? "" : ", wrong values"));
  return orderOk && valuesOk && memory.streamsOk;
}

}  // namespace

TEST_CASE("staged host side: allreduce for every type and op", "[staged]") {
  Communicator comm(MPI_COMM_WORLD);
  FakeStagingMemory memory;
  const auto n = static_cast<std::size_t>(comm.size());
  bool ok = true;
  for (DataType type : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, n - 1, n + 1, std::size_t{1021}, std::size_t{70001}})
        for (CUstream_st* stream : {kCallerStream, static_cast<CUstream_st*>(nullptr)})
          ok = checkAllreduce(comm, memory, type, op, count, count % 2 == 1, stream) && ok;
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("staged host side: broadcast from every root", "[staged]") {
  Communicator comm(MPI_COMM_WORLD);
  FakeStagingMemory memory;
  bool ok = true;
  for (int root = 0; root < comm.size(); ++root)
    for (std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{65537}})
      for (CUstream_st* stream : {kCallerStream, static_cast<CUstream_st*>(nullptr)}) {
        std::vector<std::int32_t> buf(count);
        for (std::size_t i = 0; i < count; ++i) buf[i] = static_cast<std::int32_t>(comm.rank() == root ? 7 * i + 1 : 0);
        memory.log.clear();
        memory.expectedStream = stream;
        const bool isRoot = comm.rank() == root;
        detail::stagedBroadcast(memory, buf.data(), count * sizeof(std::int32_t), isRoot, stream, [&](void* host) {
          memory.step();
          comm.broadcast(host, count, DataType::kInt32, root);
        });
        ok = ok && memory.log == expectedLog(isRoot && count > 0, !isRoot && count > 0, stream != nullptr);
        memory.finish();
        for (std::size_t i = 0; i < count; ++i) ok = ok && buf[i] == static_cast<std::int32_t>(7 * i + 1);
        ok = ok && memory.streamsOk;
      }
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("staged host side: the staging buffer is reused only after the last upload landed", "[staged]") {
  Communicator comm(MPI_COMM_WORLD);
  FakeStagingMemory memory;
  std::vector<float> first(100, 1.0f), second(100, 2.0f);
  auto sumInPlace = [&](std::size_t count) {
    return [&comm, &memory, count](void* host) {
      memory.step();
      comm.allreduce(host, host, count, DataType::kFloat32, ReduceOp::kSum);
    };
  };
  memory.expectedStream = kCallerStream;
  detail::stagedAllreduce(memory, first.data(), first.data(), 400, kCallerStream, sumInPlace(100));
  // No wait by the caller: the second call must complete the first upload before reusing the buffer.
  detail::stagedAllreduce(memory, second.data(), second.data(), 400, kCallerStream, sumInPlace(100));
  memory.finish();
  const float n = static_cast<float>(comm.size());
  REQUIRE(test::allRanks(memory.log == "HDSUFHDSUF" && first[99] == n && second[0] == 2.0f * n));
}
