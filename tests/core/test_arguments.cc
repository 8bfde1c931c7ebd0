// Every rejected argument raises InvalidArgument naming it, touches no buffer and sends nothing:
// the communicator keeps working afterwards (every rank makes the same bad call, so no rank is
// left waiting). Also: mismatched calls between ranks raise MismatchError on every rank.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using Catch::Matchers::Contains;

namespace {

constexpr std::uint8_t kSentinel = 0xC3;

template <typename Call> void expectRejected(Call&& call, const std::string& mentions) {
  try {
    call();
    FAIL("expected InvalidArgument mentioning '" << mentions << "'");
  } catch (const InvalidArgument& error) {
    INFO(error.what());
    CHECK_THAT(error.what(), Contains(mentions));
  }
}

bool untouched(const std::vector<std::uint8_t>& buffer) {
  for (std::uint8_t b : buffer)
    if (b != kSentinel) return false;
  return true;
}

}  // namespace

TEST_CASE("arguments: bad allreduce arguments are rejected before anything is touched", "[arguments]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<std::uint8_t> a(4096, kSentinel), b(4096, kSentinel);
  const auto before = comm.callCount();

  expectRejected([&] { comm.allreduce(nullptr, b.data(), 4, DataType::kFloat32, ReduceOp::kSum); }, "send is null");
  expectRejected([&] { comm.allreduce(a.data(), nullptr, 4, DataType::kFloat32, ReduceOp::kSum); }, "recv is null");
  expectRejected([&] { comm.allreduce(a.data(), a.data() + 8, 16, DataType::kFloat32, ReduceOp::kSum); }, "overlap");
  expectRejected([&] { comm.allreduce(a.data() + 8, a.data(), 16, DataType::kFloat32, ReduceOp::kSum); }, "overlap");
  expectRejected([&] { comm.allreduce(a.data(), b.data(), 4, static_cast<DataType>(42), ReduceOp::kSum); }, "type=42");
  expectRejected([&] { comm.allreduce(a.data(), b.data(), 4, DataType::kInt32, static_cast<ReduceOp>(-1)); }, "op=-1");
  expectRejected(
      [&] {
        comm.allreduce(a.data(), b.data(), std::numeric_limits<std::size_t>::max() / 2, DataType::kFloat64,
                       ReduceOp::kSum);
      },
      "exceeds the address space");

  CHECK(untouched(a));
  CHECK(untouched(b));
  CHECK(comm.callCount() == before);  // nothing was sent: no call number was used

  // Null buffers are fine with count 0, and adjacent (non-overlapping) buffers are fine.
  comm.allreduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum);
  std::vector<float> pair(8, 1.0f);
  comm.allreduce(pair.data(), pair.data() + 4, 4, DataType::kFloat32, ReduceOp::kSum);
  CHECK(pair[4] == static_cast<float>(comm.size()));
  CHECK(pair[0] == 1.0f);
}

TEST_CASE("arguments: bad broadcast and allgather arguments are rejected", "[arguments]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<std::uint8_t> a(1024, kSentinel), b(1024 * 8, kSentinel);
  expectRejected([&] { comm.broadcast(a.data(), 4, DataType::kInt32, -1); }, "root=-1");
  expectRejected([&] { comm.broadcast(a.data(), 4, DataType::kInt32, comm.size()); },
                 "root=" + std::to_string(comm.size()));
  expectRejected([&] { comm.broadcast(nullptr, 4, DataType::kInt32, 0); }, "buf is null");
  expectRejected([&] { comm.broadcast(a.data(), 4, static_cast<DataType>(10), 0); }, "type=10");
  expectRejected([&] { comm.allgather(nullptr, b.data(), 4, DataType::kInt8); }, "send is null");
  expectRejected([&] { comm.allgather(b.data() + 1, b.data(), 4, DataType::kInt8); }, "overlap");
  CHECK(untouched(a));
  CHECK(untouched(b));
  comm.barrier();  // still usable
}

TEST_CASE("arguments: bad reducescatter and allgather arguments are rejected", "[arguments]") {
  Communicator comm(MPI_COMM_WORLD);
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::uint8_t> a(64 * n, kSentinel), b(64 * n, kSentinel);
  const auto before = comm.callCount();
  auto reduceScatter = [&](const void* send, void* recv, std::size_t count) {
    comm.reduceScatter(send, recv, count, DataType::kInt8, ReduceOp::kSum);
  };
  expectRejected([&] { reduceScatter(nullptr, b.data(), 4); }, "send is null");
  expectRejected([&] { reduceScatter(a.data(), nullptr, 4); }, "recv is null");
  expectRejected([&] { comm.reduceScatter(a.data(), b.data(), 4, DataType::kInt8, static_cast<ReduceOp>(9)); }, "op=9");
  expectRejected([&] { comm.reduceScatter(a.data(), b.data(), 4, static_cast<DataType>(77), ReduceOp::kSum); },
                 "type=77");
  // recv may be this rank's block of send (in place), nothing else inside it.
  const std::size_t own = 4 * static_cast<std::size_t>(comm.rank());
  expectRejected([&] { reduceScatter(a.data(), a.data() + own + 1, 4); }, "this rank's block");
  if (n > 1) expectRejected([&] { reduceScatter(a.data(), a.data() + (own + 4) % (4 * n), 4); }, "this rank's block");
  expectRejected([&] { reduceScatter(a.data(), b.data(), (std::size_t{1} << 62) / n); }, "exceeds the address space");
  // send may be this rank's block of recv (in place), nothing else inside it.
  expectRejected([&] { comm.allgather(b.data() + own + 1, b.data(), 4, DataType::kInt8); }, "this rank's block");
  expectRejected([&] { comm.allgather(a.data(), nullptr, 4, DataType::kInt8); }, "recv is null");
  expectRejected([&] { comm.allgather(a.data(), b.data(), (std::size_t{1} << 62) / n, DataType::kInt8); },
                 "exceeds the address space");
  CHECK(untouched(a));
  CHECK(untouched(b));
  CHECK(comm.callCount() == before);
  // Count 0 with null buffers is fine; in place is fine.
  comm.reduceScatter(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum);
  comm.allgather(nullptr, nullptr, 0, DataType::kFloat32);
  std::vector<std::int32_t> blocks(2 * n, 1);
  comm.reduceScatter(blocks.data(), blocks.data() + 2 * comm.rank(), 2, DataType::kInt32, ReduceOp::kSum);
  CHECK(blocks[2 * comm.rank()] == comm.size());
  comm.allgather(blocks.data() + 2 * comm.rank(), blocks.data(), 2, DataType::kInt32);
  for (std::int32_t v : blocks) CHECK(v == comm.size());
}

TEST_CASE("arguments: malformed environment variables name the variable", "[arguments][options]") {
  setenv("RINGSYNC_RING_SEGMENT_BYTES", "lots", 1);
  CHECK_THROWS_WITH(Options::fromEnvironment(), Contains("RINGSYNC_RING_SEGMENT_BYTES"));
  setenv("RINGSYNC_RING_SEGMENT_BYTES", "16", 1);
  CHECK_THROWS_WITH(Options::fromEnvironment(), Contains("ringSegmentBytes"));
  unsetenv("RINGSYNC_RING_SEGMENT_BYTES");
  setenv("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES", "32", 1);
  CHECK_THROWS_WITH(Options::fromEnvironment(), Contains("ringSegmentBytesAcrossNodes"));
  unsetenv("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES");
  setenv("RINGSYNC_RING_DEPTH_ACROSS_NODES", "1", 1);
  CHECK_THROWS_WITH(Options::fromEnvironment(), Contains("RINGSYNC_RING_DEPTH_ACROSS_NODES"));
  unsetenv("RINGSYNC_RING_DEPTH_ACROSS_NODES");
  setenv("RINGSYNC_ALGO", "butterfly", 1);
  CHECK_THROWS_WITH(Options::fromEnvironment(), Contains("RINGSYNC_ALGO"));
  unsetenv("RINGSYNC_ALGO");
  setenv("RINGSYNC_TIMEOUT_SECONDS", "-3", 1);
  CHECK_THROWS_AS(Options::fromEnvironment(), InvalidArgument);
  unsetenv("RINGSYNC_TIMEOUT_SECONDS");
  setenv("RINGSYNC_RING_SEGMENT_BYTES", "512K", 1);
  setenv("RINGSYNC_CHECK", "0", 1);
  setenv("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES", "32K", 1);
  setenv("RINGSYNC_RING_DEPTH_ACROSS_NODES", "8", 1);
  const Options options = Options::fromEnvironment();
  CHECK(options.ringSegmentBytes == 512 * 1024);
  CHECK_FALSE(options.checkCalls);
  CHECK(options.ringSegmentBytesAcrossNodes == 32 * 1024);
  CHECK(options.ringDepthAcrossNodes == 8);
  unsetenv("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES");
  unsetenv("RINGSYNC_RING_DEPTH_ACROSS_NODES");
  unsetenv("RINGSYNC_RING_SEGMENT_BYTES");
  unsetenv("RINGSYNC_CHECK");
}

TEST_CASE("arguments: ranks that disagree raise MismatchError on every rank, naming them", "[arguments][mismatch]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("a single rank cannot disagree with itself");
    return;
  }
  const int odd = comm.size() - 1;                                   // the rank that makes a different call
  for (std::size_t base : {std::size_t{16}, std::size_t{100000}}) {  // direct and ring paths
    std::vector<float> data(base + 8, 1.0f);
    const std::size_t count = comm.rank() == odd ? base + 8 : base;
    std::string message;
    try {
      comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    } catch (const MismatchError& error) {
      message = error.what();
    }
    INFO("rank " << comm.rank() << ": " << message);
    const std::string culprit = "rank " + std::to_string(odd) + " called allreduce";
    REQUIRE(test::allRanks(message.find(culprit) != std::string::npos));
    CHECK_THAT(message, Contains("count=" + std::to_string(base + 8)) && Contains("count=" + std::to_string(base)));
  }
  // Different kinds of call: one rank broadcasts while the others all-reduce.
  std::string message;
  int value = 1;
  try {
    if (comm.rank() == odd) {
      comm.broadcast(&value, 1, DataType::kInt32, 0);
    } else {
      comm.allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
    }
  } catch (const MismatchError& error) {
    message = error.what();
  }
  REQUIRE(test::allRanks(message.find("called broadcast") != std::string::npos));
  // One rank reduce-scatters while the others all-gather: MismatchError on every rank, recv untouched.
  message.clear();
  std::vector<float> send(4 * comm.size(), 1.0f), recv(4 * comm.size(), -1.0f);
  try {
    if (comm.rank() == odd) {
      comm.reduceScatter(send.data(), recv.data(), 4, DataType::kFloat32, ReduceOp::kSum);
    } else {
      comm.allgather(send.data(), recv.data(), 4, DataType::kFloat32);
    }
  } catch (const MismatchError& error) {
    message = error.what();
  }
  INFO("rank " << comm.rank() << ": " << message);
  REQUIRE(test::allRanks(message.find("called reducescatter") != std::string::npos));
  bool recvUntouched = true;
  for (float v : recv) recvUntouched = recvUntouched && v == -1.0f;
  REQUIRE(test::allRanks(recvUntouched));
  // Nothing moved, so the communicator is still in step and usable.
  comm.allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
  CHECK(value == comm.size());
}
