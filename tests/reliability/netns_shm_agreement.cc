// Two simulated hosts x 2 ranks where hostB's /dev/shm is read-only or small (run_netns_shm.sh):
// every rank makes the same calls and must choose the same algorithm, with the same round
// capacities and piece sizes, whatever each node could map: exact results, bit-identical on
// every rank, no MismatchError, no timeout. (Before the ranks agreed on these at construction,
// hostA took recursive doubling at 25,000 floats while hostB, whose node rounds had fallen back
// to 32 KiB point-to-point slots, took the hierarchical all-reduce: MismatchError and timeouts.)
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "closed_form.h"
#include "netns_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::netns_test;

namespace {

// Whether every rank of `comm` holds the same string (hashed).
bool sameEverywhere(const std::string& text, MPI_Comm comm) {
  unsigned long hash = 5381;
  for (char c : text) hash = hash * 33 + static_cast<unsigned char>(c);
  unsigned long range[2] = {hash, ~hash};
  MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_UNSIGNED_LONG, MPI_MAX, comm);
  return range[0] == hash && ~range[1] == hash;
}

// The sizes of the review that broke (25,000, 100,003 and 300,000 floats) and the limits around.
const std::size_t kCounts[] = {1021, 16385, 25000, 100003, 131073, 300000, (1u << 20) + 5, 3u << 20};

void allreducesAgree(Communicator& comm, MPI_Comm group) {
  for (std::size_t count : kCounts) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
      REQUIRE(exactAllreduce(comm, DataType::kFloat32, op, count, op == ReduceOp::kAvg, group));
      INFO("count " << count << ": rank " << comm.rank() << " took " << comm.lastPlacement().algorithm);
      REQUIRE(sameEverywhere(comm.lastPlacement().algorithm, group));
    }
  }
}

bool exactBroadcast(Communicator& comm, std::size_t bytes, int root, MPI_Comm group) {
  std::vector<unsigned char> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<unsigned char>(comm.rank() == root ? (i * 7 + 3) % 251 : 0);
  comm.broadcast(data.data(), bytes, DataType::kUInt8, root);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += data[i] != static_cast<unsigned char>((i * 7 + 3) % 251);
  return test::allRanks(wrong == 0 && sameEverywhere(comm.lastPlacement().algorithm, group), group);
}

}  // namespace

TEST_CASE("netns shm: automatic choice agrees on every rank with hostB's /dev/shm unusable or small", "[netns]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  allreducesAgree(comm, MPI_COMM_WORLD);
}

TEST_CASE("netns shm: forced algorithms fall back alike on every rank", "[netns]") {
  for (Algorithm algorithm : {Algorithm::kHierarchical, Algorithm::kRecursiveDoubling, Algorithm::kDirect}) {
    Communicator comm(MPI_COMM_WORLD, forced(algorithm));
    allreducesAgree(comm, MPI_COMM_WORLD);
  }
}

TEST_CASE("netns shm: ranks numbered across the hosts alternately", "[netns]") {
  MPI_Comm interleaved = interleavedAcrossHosts();
  {
    Communicator comm(interleaved, forced(Algorithm::kAuto));
    allreducesAgree(comm, interleaved);
  }
  MPI_Comm_free(&interleaved);
}

TEST_CASE("netns shm: broadcasts in node-round pieces agree", "[netns]") {
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kHierarchical}) {
    Communicator comm(MPI_COMM_WORLD, forced(algorithm));
    for (std::size_t bytes : {std::size_t{100000}, std::size_t{(3u << 20) + 1}})
      for (int root : {0, comm.size() - 1}) REQUIRE(exactBroadcast(comm, bytes, root, MPI_COMM_WORLD));
  }
}
