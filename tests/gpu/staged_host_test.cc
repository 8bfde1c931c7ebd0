// The staged path's host side, on any machine: src/staged_path.h driven through a stand-in
// StagingMemory whose "device" is ordinary memory and whose uploads stay pending until waited for
// (as an upload on a CUDA stream does), with the real Communicator's host ring as the host step.
// Checks the results (closed forms, every type and op; all-reduce, reduce-scatter, all-gather,
// broadcast), the order of the steps, that the caller's stream is passed through, that a call
// without a stream completes before returning, and that count 0 still runs the host collective so
// every rank stays in step.
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

// The host step: the staged call run by the real Communicator on the staged host bytes.
detail::HostStep hostStep(Communicator& comm, FakeStagingMemory& memory) {
  return [&comm, &memory](const detail::Call& c) {
    memory.step();
    switch (c.kind) {
      case detail::CollectiveKind::kAllreduce: return comm.allreduce(c.send, c.recv, c.count, c.type, c.op);
      case detail::CollectiveKind::kReduceScatter: return comm.reduceScatter(c.send, c.recv, c.count, c.type, c.op);
      case detail::CollectiveKind::kAllgather: return comm.allgather(c.send, c.recv, c.count, c.type);
      case detail::CollectiveKind::kBroadcast: return comm.broadcast(c.recv, c.count, c.type, c.root);
      case detail::CollectiveKind::kBarrier: return comm.barrier();
    }
  };
}

// One staged reducing call: all-reduce (count elements) or reduce-scatter (blocks of count).
bool checkReducing(Communicator& comm, FakeStagingMemory& memory, detail::CollectiveKind kind, DataType type,
                   ReduceOp op, std::size_t count, bool inPlace, CUstream_st* stream) {
  const int n = comm.size(), rank = comm.rank();
  const bool scatter = kind == detail::CollectiveKind::kReduceScatter;
  const std::size_t inCount = scatter ? count * static_cast<std::size_t>(n) : count;
  const std::size_t outBegin = scatter ? count * static_cast<std::size_t>(rank) : 0;  // where out's element 0 sits
  TypedBuffer send(type, inCount), recv(type, count);
  for (std::size_t i = 0; i < inCount; ++i) send.set(i, closed_form::allreduceInput(op, type, rank, n, i));
  recv.fill(0xA5);
  void* out = inPlace ? static_cast<std::byte*>(send.data()) + outBegin * dataTypeSize(type) : recv.data();
  memory.log.clear();
  memory.expectedStream = stream;
  const std::uint64_t before = comm.callCount();
  detail::stagedRun(memory, detail::Call{kind, send.data(), out, count, type, op, -1, stream}, rank, n,
                    hostStep(comm, memory));
  const bool orderOk = memory.log == expectedLog(inCount > 0, count > 0, stream != nullptr);
  memory.finish();  // the caller waiting on its stream
  bool valuesOk = comm.callCount() == before + 1;
  for (std::size_t i = 0; i < count && valuesOk; ++i)
    valuesOk = closed_form::loadElement(out, i, type) == closed_form::allreduceExpected(op, type, n, outBegin + i);
  UNSCOPED_INFO(detail::collectiveName(kind)
                << " " << test::describe(type, op, count, inPlace) << (stream ? " with stream" : " without stream")
                << ": log " << memory.log << (valuesOk ? "" : ", wrong values"));
  return orderOk && valuesOk && memory.streamsOk;
}

bool checkAllgather(Communicator& comm, FakeStagingMemory& memory, DataType type, std::size_t count, bool inPlace,
                    CUstream_st* stream) {
  const int n = comm.size(), rank = comm.rank();
  const std::size_t total = count * static_cast<std::size_t>(n), own = count * static_cast<std::size_t>(rank);
  TypedBuffer send(type, count), recv(type, total);
  recv.fill(0xA5);
  for (std::size_t i = 0; i < count; ++i) send.set(i, closed_form::rankValue(rank, i));
  if (inPlace)
    for (std::size_t i = 0; i < count; ++i) recv.set(own + i, closed_form::rankValue(rank, i));
  const void* in = inPlace ? static_cast<const std::byte*>(recv.data()) + own * dataTypeSize(type) : send.data();
  memory.log.clear();
  memory.expectedStream = stream;
  detail::stagedRun(memory,
                    detail::Call{detail::CollectiveKind::kAllgather, in, recv.data(), count, type, ReduceOp::kSum, -1,
                                 stream},
                    rank, n, hostStep(comm, memory));
  const bool orderOk = memory.log == expectedLog(count > 0, total > 0, stream != nullptr);
  memory.finish();
  bool valuesOk = true;
  for (std::size_t i = 0; i < total && valuesOk; ++i)
    valuesOk = recv.get(i) == closed_form::rankValue(static_cast<int>(i / count), i % count);
  UNSCOPED_INFO("allgather " << dataTypeName(type) << " count=" << count << (inPlace ? " in place" : "") << ": log "
                             << memory.log << (valuesOk ? "" : ", wrong values"));
  return orderOk && valuesOk && memory.streamsOk;
}

}  // namespace

TEST_CASE("staged host side: allreduce and reducescatter for every type and op", "[staged]") {
  Communicator comm(MPI_COMM_WORLD);
  FakeStagingMemory memory;
  const auto n = static_cast<std::size_t>(comm.size());
  bool ok = true;
  for (auto kind : {detail::CollectiveKind::kAllreduce, detail::CollectiveKind::kReduceScatter})
    for (DataType type : kAllDataTypes)
      for (ReduceOp op : kAllReduceOps)
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, n - 1, n + 1, std::size_t{1021}, std::size_t{70001}})
          for (CUstream_st* stream : {kCallerStream, static_cast<CUstream_st*>(nullptr)})
            ok = checkReducing(comm, memory, kind, type, op, count, count % 2 == 1, stream) && ok;
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("staged host side: allgather for every type", "[staged]") {
  Communicator comm(MPI_COMM_WORLD);
  FakeStagingMemory memory;
  const auto n = static_cast<std::size_t>(comm.size());
  bool ok = true;
  for (DataType type : kAllDataTypes)
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, n + 1, std::size_t{70001}})
      for (CUstream_st* stream : {kCallerStream, static_cast<CUstream_st*>(nullptr)})
        ok = checkAllgather(comm, memory, type, count, count % 2 == 1, stream) && ok;
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
        detail::stagedRun(memory,
                          detail::Call{detail::CollectiveKind::kBroadcast, buf.data(), buf.data(), count,
                                       DataType::kInt32, ReduceOp::kSum, root, stream},
                          comm.rank(), comm.size(), hostStep(comm, memory));
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
  auto sumInPlace = [&](std::vector<float>& data) {
    const detail::Call call{detail::CollectiveKind::kAllreduce,
                            data.data(),
                            data.data(),
                            data.size(),
                            DataType::kFloat32,
                            ReduceOp::kSum,
                            -1,
                            kCallerStream};
    detail::stagedRun(memory, call, comm.rank(), comm.size(), hostStep(comm, memory));
  };
  memory.expectedStream = kCallerStream;
  sumInPlace(first);
  // No wait by the caller: the second call must complete the first upload before reusing the buffer.
  sumInPlace(second);
  memory.finish();
  const float n = static_cast<float>(comm.size());
  REQUIRE(test::allRanks(memory.log == "HDSUFHDSUF" && first[99] == n && second[0] == 2.0f * n));
}
