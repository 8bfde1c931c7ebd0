// RINGSYNC_ALGO=mpi on 8-bit integers: sums wrap modulo 256, as every other algorithm of ringsync
// does (types.h), not saturate as Open MPI's vectorised built-in sum does (op/avx: 100 + 100 as
// int8 gave 127 in the vectorised part of a buffer and -56 in its tail). Exact against the
// wrapped closed form, and bit for bit the same as ringsync's own algorithm for every op.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

Options withAlgorithm(Algorithm algorithm) {
  Options options = Options::fromEnvironment();
  options.algorithm = algorithm;
  return options;
}

// Large enough to overflow 8 bits from 2 ranks on: 100..102 (int8), 200..202 (uint8).
template <typename T> T input(int rank, std::size_t i) {
  const int base = sizeof(T) == 1 && static_cast<T>(-1) > 0 ? 200 : 100;
  return static_cast<T>(base + static_cast<int>((static_cast<std::size_t>(rank) + i) % 3));
}

// The sum over `ranks` ranks, wrapped to T as two's complement (modulo 256).
template <typename T> T wrappedSum(int ranks, std::size_t i) {
  long long sum = 0;
  for (int r = 0; r < ranks; ++r) sum += input<T>(r, i);
  return static_cast<T>(static_cast<std::uint8_t>(sum & 0xff));
}

template <typename T> std::vector<T> reduced(Communicator& comm, std::size_t count, DataType type, ReduceOp op) {
  std::vector<T> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = input<T>(comm.rank(), i);
  comm.allreduce(data.data(), data.data(), count, type, op);
  return data;
}

template <typename T> void checkType(DataType type) {
  Communicator mpi(MPI_COMM_WORLD, withAlgorithm(Algorithm::kMpi));
  Communicator own(MPI_COMM_WORLD, withAlgorithm(Algorithm::kAuto));
  // Short counts, Open MPI's vectorised widths and a tail, and a large buffer.
  for (std::size_t count :
       {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}, std::size_t{1021}, std::size_t{300001}}) {
    const std::vector<T> sum = reduced<T>(mpi, count, type, ReduceOp::kSum);
    REQUIRE(mpi.lastPlacement().algorithm == "mpi");
    std::size_t wrong = 0, firstWrong = count;
    for (std::size_t i = 0; i < count; ++i)
      if (sum[i] != wrappedSum<T>(mpi.size(), i)) {
        ++wrong;
        if (firstWrong == count) firstWrong = i;
      }
    INFO(dataTypeName(type) << " sum, count " << count << ": " << wrong << " wrong on rank " << mpi.rank()
                            << (wrong ? ", first at " + std::to_string(firstWrong) + ": " +
                                            std::to_string(static_cast<int>(sum[firstWrong])) + " instead of " +
                                            std::to_string(static_cast<int>(wrappedSum<T>(mpi.size(), firstWrong)))
                                      : std::string()));
    REQUIRE(test::allRanks(wrong == 0));
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      INFO(dataTypeName(type) << " " << reduceOpName(op) << ", count " << count);
      REQUIRE(test::allRanks(reduced<T>(mpi, count, type, op) == reduced<T>(own, count, type, op)));
    }
  }
}

}  // namespace

TEST_CASE("RINGSYNC_ALGO=mpi: int8 sums wrap as ringsync's own algorithms do", "[mpi][int8]") {
  checkType<std::int8_t>(DataType::kInt8);
}

TEST_CASE("RINGSYNC_ALGO=mpi: uint8 sums wrap as ringsync's own algorithms do", "[mpi][int8]") {
  checkType<std::uint8_t>(DataType::kUInt8);
}
