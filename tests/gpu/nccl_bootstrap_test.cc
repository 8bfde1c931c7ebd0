// The MPI side of the NCCL bootstrap (collectives/nccl_bootstrap.cc), on any machine: ranks that
// cannot use NCCL make every rank decline it with the same reason (so no rank sends a collective
// through NCCL while another takes the host ring), and a rank that never joins the bootstrap is a
// TimeoutError rather than a hang. Ranks without a device make no CUDA or NCCL call here. Also the
// poll of the non-blocking NCCL communicator (nccl_settle.h), with NCCL's state simulated.
#include <catch2/catch.hpp>

#include <mpi.h>

#include <string>

#include "collectives/nccl_communicator.h"
#include "collectives/nccl_settle.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

// The bootstrap waits under the deadline of the device call that triggers it.
detail::Deadline callDeadline(double timeoutSeconds) {
  return detail::Deadline(detail::CallHeader{}, timeoutSeconds, 0, {});
}

detail::NcclBootstrapInputs withoutDevice(MPI_Comm comm, detail::Deadline& deadline) {
  detail::NcclBootstrapInputs in{comm, test::worldRank(), test::worldSize(), -1, {}, &deadline};
  in.deviceWhy = "no device on rank " + std::to_string(in.rank);
  return in;
}

}  // namespace

TEST_CASE("nccl bootstrap: every rank declines with the first failing rank's reason", "[nccl-bootstrap]") {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::string why;
  detail::Deadline deadline = callDeadline(30);
  const auto nccl = detail::bootstrapNccl(withoutDevice(comm, deadline), &why);
  INFO(why);
  REQUIRE(test::allRanks(nccl == nullptr && why == "rank 0: no device on rank 0"));
  MPI_Comm_free(&comm);
}

TEST_CASE("nccl bootstrap: a rank that never joins is a TimeoutError, not a hang", "[nccl-bootstrap]") {
  if (test::worldSize() < 2) {
    WARN("needs 2 ranks");
    return;
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::string outcome = "ok";
  if (test::worldRank() == 0) {
    try {
      std::string why;
      detail::Deadline deadline = callDeadline(0.3);
      detail::bootstrapNccl(withoutDevice(comm, deadline), &why);
      outcome = "no timeout";
    } catch (const TimeoutError& error) {
      const std::string text = error.what();
      if (text.find("NCCL bootstrap") == std::string::npos ||
          text.find("RINGSYNC_TIMEOUT_SECONDS") == std::string::npos)
        outcome = "unexpected message: " + text;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);  // join only after rank 0 gave up; completes its abandoned exchange
    std::string why;
    detail::Deadline deadline = callDeadline(30);
    if (detail::bootstrapNccl(withoutDevice(comm, deadline), &why) != nullptr || why.rfind("rank 0: ", 0) != 0)
      outcome = "late joiner got: " + why;
  }
  INFO(outcome);
  REQUIRE(test::allRanks(outcome == "ok"));
  MPI_Comm_free(&comm);
}

// The type/op tables NCCL calls go through: a wrong entry would pass every 1-rank GPU test (where
// each reduction is the identity), so each entry is checked here, on any machine.
TEST_CASE("nccl tables: every DataType and ReduceOp maps to its NCCL counterpart", "[nccl-tables]") {
  CHECK(detail::ncclTypeOf(DataType::kInt8) == ncclInt8);
  CHECK(detail::ncclTypeOf(DataType::kUInt8) == ncclUint8);
  CHECK(detail::ncclTypeOf(DataType::kInt32) == ncclInt32);
  CHECK(detail::ncclTypeOf(DataType::kUInt32) == ncclUint32);
  CHECK(detail::ncclTypeOf(DataType::kInt64) == ncclInt64);
  CHECK(detail::ncclTypeOf(DataType::kUInt64) == ncclUint64);
  CHECK(detail::ncclTypeOf(DataType::kFloat16) == ncclFloat16);
  CHECK(detail::ncclTypeOf(DataType::kBFloat16) == ncclBfloat16);
  CHECK(detail::ncclTypeOf(DataType::kFloat32) == ncclFloat32);
  CHECK(detail::ncclTypeOf(DataType::kFloat64) == ncclFloat64);
  CHECK(detail::ncclOpOf(ReduceOp::kSum) == ncclSum);
  CHECK(detail::ncclOpOf(ReduceOp::kProd) == ncclProd);
  CHECK(detail::ncclOpOf(ReduceOp::kMin) == ncclMin);
  CHECK(detail::ncclOpOf(ReduceOp::kMax) == ncclMax);
  // Not ncclAvg (which multiplies by fl(1/n)): a sum, divided afterwards like the host path.
  CHECK(detail::ncclOpOf(ReduceOp::kAvg) == ncclSum);
  CHECK_THROWS_AS(detail::ncclTypeOf(static_cast<DataType>(99)), InvalidArgument);
  CHECK_THROWS_AS(detail::ncclOpOf(static_cast<ReduceOp>(99)), InvalidArgument);
}

// ringsync's NCCL communicators are non-blocking: init and calls may answer ncclInProgress, which
// is polled under the call's deadline. NCCL's state is simulated here (no GPU needed).
TEST_CASE("nccl settle: in-progress is polled until it settles, and times out under the deadline", "[nccl-settle]") {
  int polls = 0;
  detail::Deadline deadline = callDeadline(30);
  auto settlesAfter = [&polls](int inProgress, ncclResult_t settled) {
    return [&polls, inProgress, settled] { return polls++ < inProgress ? ncclInProgress : settled; };
  };
  CHECK(detail::awaitNcclSettled(settlesAfter(3, ncclSuccess), deadline, "test") == ncclSuccess);
  CHECK(polls == 4);
  polls = 0;
  CHECK(detail::awaitNcclSettled(settlesAfter(0, ncclRemoteError), deadline, "test") == ncclRemoteError);
  CHECK(polls == 1);
  polls = 0;
  // A state that never settles (a peer died inside NCCL's init): TimeoutError naming what was awaited.
  detail::Deadline shortDeadline = callDeadline(0.3);
  CHECK_THROWS_AS(detail::awaitNcclSettled(settlesAfter(1 << 30, ncclSuccess), shortDeadline, "NCCL's init (test)"),
                  TimeoutError);
  detail::Deadline another = callDeadline(0.3);
  CHECK_THROWS_WITH(detail::awaitNcclSettled(settlesAfter(1 << 30, ncclSuccess), another, "NCCL's init (test)"),
                    Catch::Contains("NCCL's init (test)"));
  CHECK(polls > 1);
}
