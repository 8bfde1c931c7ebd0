// Broadcast from every root, every type, the interesting counts, both algorithms (direct for
// small messages, pipelined chain for large), checked exactly and for bit-identical results.
#include <catch2/catch.hpp>

#include "closed_form.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using ringsync::test::TypedBuffer;

TEST_CASE("broadcast: every root, type and count", "[broadcast]") {
  Options options;
  options.ringSegmentBytes = 4096;
  Communicator comm(MPI_COMM_WORLD, options);
  for (DataType type : kAllDataTypes) {
    for (std::size_t count : test::interestingCounts(comm.size(), type, options.ringSegmentBytes)) {
      for (int root = 0; root < comm.size(); ++root) {
        TypedBuffer buf(type, count);
        if (comm.rank() == root) {
          for (std::size_t i = 0; i < count; ++i) buf.set(i, closed_form::rankValue(root, i));
        } else {
          buf.fill(0x5A);
        }
        comm.broadcast(buf.data(), count, type, root);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < count; ++i) wrong += buf.get(i) != closed_form::rankValue(root, i);
        INFO(dataTypeName(type) << " count=" << count << " root=" << root << ": " << wrong << " wrong on rank "
                                << comm.rank() << " via " << comm.lastPlacement().algorithm);
        REQUIRE(test::allRanks(wrong == 0 && test::identicalOnAllRanks(buf.data(), buf.bytes())));
      }
    }
  }
}

TEST_CASE("broadcast: large buffer with default options uses the chain", "[broadcast]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = (std::size_t{5} << 20) + 3;
  std::vector<std::uint8_t> buf(count);
  const int root = comm.size() - 1;
  for (std::size_t i = 0; i < count; ++i) buf[i] = comm.rank() == root ? static_cast<std::uint8_t>(i * 7) : 0;
  comm.broadcast(buf.data(), count, DataType::kUInt8, root);
  bool ok = true;
  for (std::size_t i = 0; i < count; ++i) ok = ok && buf[i] == static_cast<std::uint8_t>(i * 7);
  REQUIRE(test::allRanks(ok));
  if (comm.size() > 1) CHECK(std::string(comm.lastPlacement().algorithm) == "chain");
}
