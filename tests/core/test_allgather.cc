// All-gather over every DataType x block count x in/out-of-place x algorithm, checked against
// closed-form values (every rank's block in rank order, bit-identical everywhere) and against
// MPI_Allgather.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "closed_form.h"
#include "ringsync/ringsync.h"
#include "src/selection_constants.h"
#include "support/test_support.h"

using namespace ringsync;
using ringsync::test::TypedBuffer;

namespace {

constexpr std::size_t kSmallSegmentBytes = 4096;

// Wrong elements of one all-gather of `count` elements per rank (0: right).
std::size_t runOne(Communicator& comm, DataType type, std::size_t count, bool inPlace) {
  const int n = comm.size(), rank = comm.rank();
  const std::size_t total = count * static_cast<std::size_t>(n), own = count * static_cast<std::size_t>(rank);
  TypedBuffer send(type, count), recv(type, total);
  recv.fill(0xA5);
  for (std::size_t j = 0; j < count; ++j) send.set(j, closed_form::rankValue(rank, j));
  if (inPlace)
    for (std::size_t j = 0; j < count; ++j) recv.set(own + j, closed_form::rankValue(rank, j));
  const void* in = inPlace ? static_cast<const std::byte*>(recv.data()) + own * dataTypeSize(type) : send.data();
  comm.allgather(in, recv.data(), count, type);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < total; ++i)
    wrong += recv.get(i) != closed_form::rankValue(static_cast<int>(i / count), i % count);
  return wrong;
}

void sweep(const Options& options, const char* expectedAlgorithm) {
  Communicator comm(MPI_COMM_WORLD, options);
  const auto n = static_cast<std::size_t>(comm.size());
  for (DataType type : kAllDataTypes) {
    std::vector<std::size_t> counts = test::interestingCounts(comm.size(), type, options.ringSegmentBytes);
    for (std::size_t& count : counts) count = std::min(count, ((std::size_t{1} << 20) + 7) / n);
    for (std::size_t count : counts) {
      for (bool inPlace : {false, true}) {
        const std::size_t wrong = runOne(comm, type, count, inPlace);
        INFO(dataTypeName(type) << " count=" << count << (inPlace ? " in place" : "")
                                << " algo=" << algorithmName(options.algorithm) << ": rank " << comm.rank() << " has "
                                << wrong << " wrong; ran " << comm.lastPlacement().algorithm);
        REQUIRE(test::allRanks(wrong == 0));
        if (expectedAlgorithm != nullptr && n > 1) REQUIRE(comm.lastPlacement().algorithm == expectedAlgorithm);
      }
    }
  }
}

}  // namespace

TEST_CASE("allgather: automatic algorithm, every type and count", "[allgather]") {
  Options options;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;
  sweep(options, nullptr);
}

TEST_CASE("allgather: ring forced, every type and count, depth 2", "[allgather][ring]") {
  Options options;
  options.algorithm = Algorithm::kRing;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;
  options.ringDepth = 2;
  options.ringDepthAcrossNodes = 2;
  sweep(options, "ring");
}

TEST_CASE("allgather: recursive doubling forced (RINGSYNC_ALGO=rabenseifner), every type and count",
          "[allgather][rabenseifner]") {
  // np=3: rank 2 hands rank 0 its block and gets the whole array back at the end.
  Options options;
  options.algorithm = Algorithm::kRabenseifner;
  sweep(options, "recursive_doubling");
}

TEST_CASE("allgather: rounds forced, every count (blocks past a round in slices)", "[allgather][direct]") {
  Options options;
  options.algorithm = Algorithm::kDirect;
  options.smallBytes = detail::kMaxSmallBytes;
  sweep(options, "direct");
}

TEST_CASE("allgather: agrees with MPI_Allgather", "[allgather]") {
  Communicator comm(MPI_COMM_WORLD);
  const auto n = static_cast<std::size_t>(comm.size());
  for (std::size_t count : {std::size_t{3}, std::size_t{200003}}) {
    std::vector<double> send(count), ours(count * n), theirs(count * n);
    for (std::size_t j = 0; j < count; ++j) send[j] = comm.rank() * 0.5 + static_cast<double>(j);
    comm.allgather(send.data(), ours.data(), count, DataType::kFloat64);
    MPI_Allgather(send.data(), static_cast<int>(count), MPI_DOUBLE, theirs.data(), static_cast<int>(count), MPI_DOUBLE,
                  MPI_COMM_WORLD);
    REQUIRE(test::allRanks(ours == theirs));
  }
}
