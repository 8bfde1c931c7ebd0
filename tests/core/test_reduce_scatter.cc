// Reduce-scatter over every DataType x ReduceOp x block count x in/out-of-place x algorithm, checked
// against closed-form expectations (MPI_Reduce_scatter_block semantics: rank r holds block r of
// the reduced array), against MPI_Reduce_scatter_block itself, and on a sub-communicator.
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

constexpr std::size_t kSmallSegmentBytes = 4096;  // many segments per block at modest counts

struct Outcome {
  std::size_t wrong = 0;
  std::size_t firstWrong = 0;
  double got = 0, want = 0;
};

Outcome runOne(Communicator& comm, DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  const int n = comm.size(), rank = comm.rank();
  // Inputs and expectations repeat (closed_form.h): one period, tabulated.
  const std::size_t period = closed_form::allreducePeriod(n);
  std::vector<double> input(period), expected(period);
  for (std::size_t i = 0; i < period; ++i) {
    input[i] = closed_form::allreduceInput(op, type, rank, n, i);
    expected[i] = closed_form::allreduceExpected(op, type, n, i);
  }
  const std::size_t total = count * static_cast<std::size_t>(n), own = count * static_cast<std::size_t>(rank);
  TypedBuffer send(type, total), recv(type, count);
  for (std::size_t i = 0; i < total; ++i) send.set(i, input[i % period]);
  recv.fill(0xA5);
  std::byte* ownBlock = static_cast<std::byte*>(send.data()) + own * dataTypeSize(type);
  void* out = inPlace ? static_cast<void*>(ownBlock) : recv.data();
  comm.reduceScatter(send.data(), out, count, type, op);
  Outcome outcome;
  for (std::size_t j = 0; j < count; ++j) {
    const double got = closed_form::loadElement(out, j, type), want = expected[(own + j) % period];
    if (got != want && outcome.wrong++ == 0) outcome = {1, j, got, want};
  }
  // Out of place, send is only read.
  for (std::size_t i = 0; !inPlace && i < total; ++i)
    if (send.get(i) != input[i % period] && outcome.wrong++ == 0) outcome = {1, i, send.get(i), input[i % period]};
  return outcome;
}

void sweep(const Options& options, const char* expectedAlgorithm) {
  Communicator comm(MPI_COMM_WORLD, options);
  const auto n = static_cast<std::size_t>(comm.size());
  for (DataType type : kAllDataTypes) {
    std::vector<std::size_t> counts = test::interestingCounts(comm.size(), type, options.ringSegmentBytes);
    for (std::size_t& count : counts)
      count = std::min(count, ((std::size_t{1} << 20) + 7) / n);  // the input is n blocks
    for (ReduceOp op : kAllReduceOps) {
      for (std::size_t count : counts) {
        for (bool inPlace : {false, true}) {
          const Outcome outcome = runOne(comm, type, op, count, inPlace);
          INFO(test::describe(type, op, count, inPlace)
               << " algo=" << algorithmName(options.algorithm) << ": rank " << comm.rank() << " has " << outcome.wrong
               << " wrong, first at " << outcome.firstWrong << " got " << outcome.got << " want " << outcome.want
               << "; ran " << comm.lastPlacement().algorithm);
          REQUIRE(test::allRanks(outcome.wrong == 0));
          if (expectedAlgorithm != nullptr && n > 1) REQUIRE(comm.lastPlacement().algorithm == expectedAlgorithm);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("reducescatter: automatic algorithm, every type, op and count", "[reducescatter]") {
  Options options;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;
  sweep(options, nullptr);
}

TEST_CASE("reducescatter: ring forced, every type, op and count, depth 2", "[reducescatter][ring]") {
  Options options;
  options.algorithm = Algorithm::kRing;
  options.ringSegmentBytes = kSmallSegmentBytes;
  options.ringSegmentBytesAcrossNodes = kSmallSegmentBytes;
  options.ringDepth = 2;
  options.ringDepthAcrossNodes = 2;
  sweep(options, "ring");
}

TEST_CASE("reducescatter: recursive halving forced (RINGSYNC_ALGO=rabenseifner), every type, op and count",
          "[reducescatter][rabenseifner]") {
  // np=3: rank 2 hands rank 0 its whole input and gets its block back at the end.
  Options options;
  options.algorithm = Algorithm::kRabenseifner;
  sweep(options, "recursive_halving");
}

TEST_CASE("reducescatter: rounds forced, every count (blocks past a round in slices)", "[reducescatter][direct]") {
  Options options;
  options.algorithm = Algorithm::kDirect;
  options.smallBytes = detail::kMaxSmallBytes;
  sweep(options, "direct");
}

TEST_CASE("reducescatter: default options at the round's largest block and one element past it (in slices)",
          "[reducescatter]") {
  Communicator comm(MPI_COMM_WORLD);
  const auto n = static_cast<std::size_t>(comm.size());
  if (n == 1) return;
  const std::size_t slotBytes = std::min(detail::kMaxSmallBytes, detail::kDirectRoundBytes / (n - 1));
  const std::size_t largest = slotBytes / 4 / (n - 1);  // float32 blocks: n-1 of them in the round
  for (std::size_t count : {largest, largest + 1}) {
    for (bool inPlace : {false, true}) {
      const Outcome outcome = runOne(comm, DataType::kFloat32, ReduceOp::kAvg, count, inPlace);
      REQUIRE(test::allRanks(outcome.wrong == 0));
      REQUIRE(comm.lastPlacement().algorithm == "direct");  // past the round: in slices
    }
  }
}

TEST_CASE("reducescatter: agrees with MPI_Reduce_scatter_block for float32 and float64", "[reducescatter]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = 25013;
  const auto n = static_cast<std::size_t>(comm.size());
  const struct {
    ReduceOp op;
    MPI_Op mpiOp;
  } pairs[] = {{ReduceOp::kSum, MPI_SUM}, {ReduceOp::kMax, MPI_MAX}};
  for (const auto& pair : pairs) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat64}) {
      TypedBuffer input(type, count * n), ours(type, count), theirs(type, count);
      for (std::size_t i = 0; i < count * n; ++i)
        input.set(i, closed_form::allreduceInput(pair.op, type, comm.rank(), comm.size(), i));
      comm.reduceScatter(input.data(), ours.data(), count, type, pair.op);
      MPI_Reduce_scatter_block(input.data(), theirs.data(), static_cast<int>(count),
                               type == DataType::kFloat32 ? MPI_FLOAT : MPI_DOUBLE, pair.mpiOp, MPI_COMM_WORLD);
      INFO(dataTypeName(type) << " " << reduceOpName(pair.op));
      REQUIRE(test::allRanks(ours.raw() == theirs.raw()));
    }
  }
}

TEST_CASE("reducescatter: a communicator over a subset of ranks", "[reducescatter]") {
  MPI_Comm half = MPI_COMM_NULL;
  const int world = test::worldRank();
  MPI_Comm_split(MPI_COMM_WORLD, world % 2, world, &half);
  {
    Communicator comm(half);
    const std::size_t count = 1000, n = static_cast<std::size_t>(comm.size());
    std::vector<std::int64_t> send(count * n), recv(count);
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = world * 1000 + static_cast<std::int64_t>(i);
    comm.reduceScatter(send.data(), recv.data(), count, DataType::kInt64, ReduceOp::kSum);
    bool ok = true;
    for (std::size_t j = 0; j < count; ++j) {
      std::int64_t expected = 0;
      for (int r = world % 2; r < test::worldSize(); r += 2)
        expected += r * 1000 + static_cast<std::int64_t>(static_cast<std::size_t>(comm.rank()) * count + j);
      ok = ok && recv[j] == expected;
    }
    REQUIRE(test::allRanks(ok));
  }
  MPI_Comm_free(&half);
}
