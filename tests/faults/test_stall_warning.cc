// Stall warning: with RINGSYNC_STALL_WARN_SECONDS=1 and one rank arriving 2 s late, every waiting
// rank logs exactly one warning naming the stalled call and the late rank, and then the call
// completes with the exact result (a stall is not an error).
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "call_spec.h"
#include "closed_form.h"
#include "fault_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

constexpr auto kLateBy = std::chrono::seconds(2);

// Runs `spec` with exact inputs and reports whether this rank got the exact result.
bool runExact(Communicator& comm, const faults::CallSpec& spec) {
  const int n = comm.size();
  std::vector<float> data(spec.count);
  if (spec.kind == faults::CallSpec::Kind::kAllreduce) {
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<float>(closed_form::allreduceInput(ReduceOp::kSum, DataType::kFloat32, comm.rank(), n, i));
    comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    for (std::size_t i = 0; i < data.size(); ++i)
      if (data[i] != closed_form::allreduceExpected(ReduceOp::kSum, DataType::kFloat32, n, i)) return false;
    return true;
  }
  const bool root = comm.rank() == spec.root;
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = root ? static_cast<float>(closed_form::rankValue(spec.root, i)) : 0.0f;
  comm.broadcast(data.data(), data.size(), DataType::kFloat32, spec.root);
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data[i] != closed_form::rankValue(spec.root, i)) return false;
  return true;
}

}  // namespace

TEST_CASE("stall: a peer 2 s late draws one warning naming the call, then the call succeeds", "[faults][stall]") {
  const int n = test::worldSize();
  if (n == 1) {
    SUCCEED("a single rank never waits for a peer");
    return;
  }
  const Options options = Options::fromEnvironment();
  REQUIRE(options.stallWarnSeconds == 1.0);
  REQUIRE(options.timeoutSeconds > 2.0 * std::chrono::duration<double>(kLateBy).count());
  const faults::CallSpec specs[] = {faults::allreduceSpec(16, DataType::kFloat32, ReduceOp::kSum),
                                    faults::allreduceSpec(300000, DataType::kFloat32, ReduceOp::kSum),
                                    faults::broadcastSpec(200000, DataType::kFloat32, 0)};
  for (std::size_t i = 0; i < std::size(specs); ++i) {
    const faults::CallSpec& spec = specs[i];
    const int late = static_cast<int>((i + static_cast<std::size_t>(n) - 1) % static_cast<std::size_t>(n));
    Communicator comm(MPI_COMM_WORLD);
    comm.barrier();
    const std::string call = faults::describeSpec(spec, comm.callCount());
    std::string logged;
    faults::Outcome outcome;
    bool exact = false;
    if (comm.rank() == late) {
      std::this_thread::sleep_for(kLateBy);
      outcome = faults::attempt([&] { exact = runExact(comm, spec); });
    } else {
      faults::StderrCapture capture;
      outcome = faults::attempt([&] { exact = runExact(comm, spec); });
      logged = capture.stop();
    }
    // "[ringsync rank 0] warn: stalled: allreduce #1 count=16 float32 sum has been waiting 1 s for rank(s) 2"
    // (the whole seconds waited are not checked: a loaded machine may read the clock late).
    const std::string warning = "[ringsync rank " + std::to_string(comm.rank()) + "] warn: stalled: " + call +
                                " has been waiting ";
    const std::string culprit = " s for rank(s) " + std::to_string(late) + "\n";
    const std::size_t at = logged.find(warning);
    const std::size_t lineEnd = at == std::string::npos ? at : logged.find('\n', at);
    const bool namesLate = lineEnd != std::string::npos &&
                           logged.compare(lineEnd + 1 - culprit.size(), culprit.size(), culprit) == 0;
    bool ok = outcome.returned() && exact;
    if (comm.rank() != late)
      ok = ok && namesLate && faults::occurrences(logged, "stalled") == 1 && outcome.seconds >= 1.5;
    INFO(call << ", rank " << comm.rank() << " (rank " << late << " late): " << outcome.error << " " << outcome.message
              << " after " << outcome.seconds << " s, exact " << exact << "\n  logged: " << logged
              << "  expected once: " << warning << "..." << culprit);
    REQUIRE(test::allRanks(ok));
  }
}
