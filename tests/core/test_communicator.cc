// Communicator life cycle: ranks and node-local ranks, duplicate(), barrier, allgather, moves,
// MpiEnvironment, and that the caller's communicator is never used for ringsync's traffic.
#include <catch2/catch.hpp>

#include <numeric>

#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

TEST_CASE("communicator: rank, size and node-local rank", "[communicator]") {
  Communicator comm(MPI_COMM_WORLD);
  CHECK(comm.rank() == test::worldRank());
  CHECK(comm.size() == test::worldSize());
  // All ranks of a test run share this node.
  CHECK(comm.localSize() == comm.size());
  CHECK(comm.localRank() == comm.rank());
  int compare = MPI_UNEQUAL;
  MPI_Comm_compare(comm.mpiComm(), MPI_COMM_WORLD, &compare);
  CHECK(compare == MPI_CONGRUENT);  // a duplicate, not the caller's communicator itself
  CHECK(comm.mpiThreadLevel() == MPI_THREAD_MULTIPLE);
}

TEST_CASE("communicator: barrier and allgather", "[communicator]") {
  Communicator comm(MPI_COMM_WORLD);
  for (int i = 0; i < 5; ++i) comm.barrier();
  std::vector<std::int32_t> mine(3);
  std::iota(mine.begin(), mine.end(), comm.rank() * 10);
  std::vector<std::int32_t> all(3 * static_cast<std::size_t>(comm.size()), -1);
  comm.allgather(mine.data(), all.data(), mine.size(), DataType::kInt32);
  bool ok = true;
  for (int r = 0; r < comm.size(); ++r)
    for (int k = 0; k < 3; ++k) ok = ok && all[static_cast<std::size_t>(r * 3 + k)] == r * 10 + k;
  REQUIRE(test::allRanks(ok));

  // In place: this rank's block of recv is the send buffer.
  std::vector<std::int32_t> inPlace(static_cast<std::size_t>(comm.size()), -1);
  inPlace[static_cast<std::size_t>(comm.rank())] = comm.rank() * comm.rank();
  comm.allgather(&inPlace[static_cast<std::size_t>(comm.rank())], inPlace.data(), 1, DataType::kInt32);
  ok = true;
  for (int r = 0; r < comm.size(); ++r) ok = ok && inPlace[static_cast<std::size_t>(r)] == r * r;
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("communicator: duplicate has its own sequence and traffic", "[communicator]") {
  Communicator comm(MPI_COMM_WORLD);
  Communicator other = comm.duplicate();
  std::vector<float> a(1000, 1.0f), b(1000, 2.0f);
  comm.allreduce(a.data(), a.data(), a.size(), DataType::kFloat32, ReduceOp::kSum);
  other.allreduce(b.data(), b.data(), b.size(), DataType::kFloat32, ReduceOp::kSum);
  CHECK(a[999] == static_cast<float>(comm.size()));
  CHECK(b[0] == 2.0f * static_cast<float>(comm.size()));
  CHECK(comm.callCount() == 1);
  CHECK(other.callCount() == 1);
}

TEST_CASE("communicator: moves keep working, moved-from objects refuse", "[communicator]") {
  Communicator first(MPI_COMM_WORLD);
  Communicator second = std::move(first);
  double value = 1.5;
  second.allreduce(&value, &value, 1, DataType::kFloat64, ReduceOp::kMax);
  CHECK(value == 1.5);
  CHECK_THROWS_AS(first.barrier(), InvalidArgument);  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("communicator: MpiEnvironment does not re-initialise or finalise a running MPI", "[communicator]") {
  {
    MpiEnvironment nested;
    CHECK_FALSE(nested.ownsMpi());
    CHECK(nested.providedThreadLevel() == MPI_THREAD_MULTIPLE);
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  CHECK(finalized == 0);
}

TEST_CASE("communicator: placement is reported for host buffers", "[communicator]") {
  Communicator comm(MPI_COMM_WORLD);
  int value = 1;
  comm.allreduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
  const Placement placement = comm.lastPlacement();
  CHECK(placement.backend == "host-ring");
  CHECK(placement.algorithm == "direct");
  CHECK(placement.device == -1);
}
