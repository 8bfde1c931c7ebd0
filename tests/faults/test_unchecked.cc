// RINGSYNC_CHECK=0 turns the call fingerprints off. What must still hold when ranks then disagree
// about a count: no hang (everything ends within the deadline), every rank raises an error, and a
// communicator whose messages may still be in flight is aborted rather than left to read them as
// the next call's data.
#include <catch2/catch.hpp>

#include <vector>

#include "fault_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

bool stillWorks(Communicator& comm) {
  std::vector<std::int32_t> value(3, 1);
  comm.allreduce(value.data(), value.data(), value.size(), DataType::kInt32, ReduceOp::kSum);
  return value[2] == comm.size();
}

}  // namespace

TEST_CASE(
    "unchecked: a count mismatch on a path with a round (direct; RINGSYNC_ALGO=mpi) is still refused on every rank",
    "[faults][unchecked]") {
  REQUIRE_FALSE(Options::fromEnvironment().checkCalls);
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  if (n == 1) return;
  const int odd = n - 1;
  std::vector<float> data(32, 1.0f);
  const std::size_t count = comm.rank() == odd ? 24 : 16;
  const faults::Outcome outcome = faults::attempt(
      [&] { comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum); });
  INFO("rank " << comm.rank() << ": " << outcome.error << ": " << outcome.message);
  // The payload sizes are compared even without fingerprints; the exchange completed, so nothing is
  // in flight and the communicator stays usable.
  const bool ok = outcome.error == "MismatchError" && !comm.aborted() && stillWorks(comm);
  REQUIRE(test::allRanks(ok));
}

// Without fingerprints the ring itself notices a message of the wrong size (ring_pipeline.cc
// finishReceive). Segments are still in flight then, so the rank must abort (BackendError), not
// raise a MismatchError that leaves the communicator usable for a call that could consume them.
TEST_CASE("unchecked: a count mismatch inside the ring aborts every rank's communicator", "[faults][unchecked]") {
  Options ringOnly = Options::fromEnvironment();  // RINGSYNC_CHECK=0 from the test's environment
  ringOnly.algorithm = Algorithm::kRing;          // 400 KB would take the direct exchange otherwise
  Communicator comm(MPI_COMM_WORLD, ringOnly);
  const int n = comm.size();
  if (n == 1) {
    SUCCEED("a single rank cannot disagree with itself");
    return;
  }
  const double timeout = Options::fromEnvironment().timeoutSeconds;
  const int odd = n - 1;
  std::vector<float> data(200000, 1.0f);
  const std::size_t count = comm.rank() == odd ? 100008 : 100000;
  const faults::Outcome outcome = faults::attempt(
      [&] { comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum); });
  const faults::Outcome next = faults::attempt([&] { comm.barrier(); });
  INFO("rank " << comm.rank() << ": " << outcome.error << " after " << outcome.seconds << " s: " << outcome.message
               << " | next call: " << next.error << ": " << next.message);
  const bool ok = !outcome.returned() && outcome.seconds <= timeout + 2.0 && next.error == "AbortedError";
  REQUIRE(test::allRanks(ok));
}
