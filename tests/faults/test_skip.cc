// Fault 1: one rank skips a collective. Every other rank must raise TimeoutError naming the call
// and exactly that rank, within RINGSYNC_TIMEOUT_SECONDS + 2 s (a bound on the failure path, set
// small by CTest), after which its communicator refuses further calls with AbortedError saying
// why. Covered for every kind of call (the ring reduce-scatter and all-gather included) and both all-reduce algorithms,
// with the skipping rank moving around the ring (rank 0 included).
#include <catch2/catch.hpp>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "fault_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using Catch::Matchers::Contains;

namespace {

constexpr double kSlackSeconds = 2.0;  // the error comes within the deadline plus this (scheduling on a loaded node)
// float32 counts past what one node's shared-memory rounds carry (src/selection_constants.h): 12 MB all-reduces
// take the ring, 4 MB broadcasts the chain.
constexpr std::size_t kRingCount = 3000000;
constexpr std::size_t kChainCount = 1000000;

struct Scenario {
  const char* name;
  std::function<void(Communicator&, std::vector<float>&)> call;
  std::string (*describe)(std::uint64_t sequence);  // the call as the error message names it
};

std::vector<Scenario> scenarios() {
  return {
      {"direct allreduce",
       [](Communicator& c, std::vector<float>& b) {
         c.allreduce(b.data(), b.data(), 16, DataType::kFloat32, ReduceOp::kSum);
       },
       [](std::uint64_t s) { return "allreduce #" + std::to_string(s) + " count=16 float32 sum"; }},
      {"split allreduce",
       [](Communicator& c, std::vector<float>& b) {
         c.allreduce(b.data(), b.data(), 300000, DataType::kFloat32, ReduceOp::kAvg);
       },
       [](std::uint64_t s) { return "allreduce #" + std::to_string(s) + " count=300000 float32 avg"; }},
      {"ring allreduce",
       [](Communicator& c, std::vector<float>& b) {
         c.allreduce(b.data(), b.data(), kRingCount, DataType::kFloat32, ReduceOp::kAvg);
       },
       [](std::uint64_t s) {
         return "allreduce #" + std::to_string(s) + " count=" + std::to_string(kRingCount) + " float32 avg";
       }},
      {"chain broadcast",
       [](Communicator& c, std::vector<float>& b) {
         c.broadcast(b.data(), kChainCount, DataType::kFloat32, c.size() - 1);
       },
       [](std::uint64_t s) {
         return "broadcast #" + std::to_string(s) + " count=" + std::to_string(kChainCount) + " float32 root=";
       }},
      {"allgather",
       [](Communicator& c, std::vector<float>& b) {
         c.allgather(b.data(), b.data() + 4096 * c.size(), 4096, DataType::kFloat32);
       },
       [](std::uint64_t s) { return "allgather #" + std::to_string(s) + " count=4096 float32"; }},
      {"ring reducescatter",
       [](Communicator& c, std::vector<float>& b) {
         const std::size_t block = kRingCount / static_cast<std::size_t>(c.size());
         c.reduceScatter(b.data(), b.data() + block * static_cast<std::size_t>(c.rank()), block, DataType::kFloat32,
                         ReduceOp::kSum);
       },
       [](std::uint64_t s) { return "reducescatter #" + std::to_string(s) + " count="; }},
      {"ring allgather",
       [](Communicator& c, std::vector<float>& b) {
         const std::size_t block = kRingCount / static_cast<std::size_t>(c.size());
         c.allgather(b.data() + block * static_cast<std::size_t>(c.rank()), b.data(), block, DataType::kFloat32);
       },
       [](std::uint64_t s) { return "allgather #" + std::to_string(s) + " count="; }},
      {"barrier", [](Communicator& c, std::vector<float>&) { c.barrier(); },
       [](std::uint64_t s) { return "barrier #" + std::to_string(s); }},
  };
}

}  // namespace

TEST_CASE("skip: the others time out naming the call and the rank that skipped it", "[faults][timeout]") {
  const int n = test::worldSize();
  if (n == 1) {
    SUCCEED("a single rank has no peer to wait for");
    return;
  }
  const double timeout = Options::fromEnvironment().timeoutSeconds;
  REQUIRE(timeout > 0);
  REQUIRE(timeout <= 5);  // CTest sets it small: this test waits for it once per scenario

  const std::vector<Scenario> all = scenarios();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Scenario& scenario = all[i];
    const int skipper = static_cast<int>((i + static_cast<std::size_t>(n) - 1) % static_cast<std::size_t>(n));
    Communicator comm(MPI_COMM_WORLD);
    comm.barrier();  // #0: everyone is in step before the fault
    const std::uint64_t sequence = comm.callCount();
    std::vector<float> buffer(kRingCount + 4096 * static_cast<std::size_t>(n + 1), 1.0f);

    faults::Outcome outcome;
    if (comm.rank() != skipper) outcome = faults::attempt([&] { scenario.call(comm, buffer); });
    faults::Outcome after;
    if (comm.rank() != skipper) after = faults::attempt([&] { comm.barrier(); });

    std::ostringstream why;
    bool ok = true;
    if (comm.rank() == skipper) {
      ok = !comm.aborted();  // it made no call, so it has nothing to report
    } else {
      const std::string named = "waiting for rank(s) " + std::to_string(skipper) + " (";
      ok = outcome.error == "TimeoutError" && outcome.message.find(scenario.describe(sequence)) != std::string::npos &&
           outcome.message.find(named) != std::string::npos && outcome.seconds >= timeout &&
           outcome.seconds <= timeout + kSlackSeconds && comm.aborted() && after.error == "AbortedError" &&
           after.message.find("timed out") != std::string::npos && after.message.find(named) != std::string::npos;
      why << outcome.error << " after " << outcome.seconds << " s: " << outcome.message << " | then " << after.error
          << ": " << after.message;
    }
    INFO(scenario.name << ", rank " << comm.rank() << " (rank " << skipper << " skipped): " << why.str());
    const double worst = faults::maxOverRanks(comm.rank() == skipper ? 0.0 : outcome.seconds);
    faults::report("skip " + std::string(scenario.name) + " np=" + std::to_string(n) +
                   " skipper=" + std::to_string(skipper) + ": TimeoutError after at most " + std::to_string(worst) +
                   " s (RINGSYNC_TIMEOUT_SECONDS=" + std::to_string(timeout) + ")");
    REQUIRE(test::allRanks(ok));
  }
}
