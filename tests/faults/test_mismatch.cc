// Fault 2: one rank passes a different count, type, op, root or kind of call. Every rank must
// raise MismatchError naming the odd rank and both calls, on the direct small-message path, the
// ring and the chain broadcast alike; nothing may move (every buffer byte-for-byte as before),
// and the communicator must keep working afterwards. Ranks whose RINGSYNC_* settings differ are
// caught the same way.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "call_spec.h"
#include "fault_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using faults::CallSpec;

namespace {

constexpr std::size_t kSmall = 16;       // direct exchange (64 B of float32)
constexpr std::size_t kMid = 100000;     // split all-reduce, direct broadcast (400 KB of float32)
constexpr std::size_t kLarge = 2500000;  // ring / chain (10 MB of float32)

struct Scenario {
  std::string name;
  CallSpec usual;  // what every other rank calls
  CallSpec odd;    // what the odd rank calls
};

std::vector<Scenario> scenarios(int n) {
  using faults::allgatherSpec;
  using faults::allreduceSpec;
  using faults::broadcastSpec;
  using faults::reduceScatterSpec;
  const DataType f32 = DataType::kFloat32;
  return {
      {"count, direct", allreduceSpec(kSmall, f32, ReduceOp::kSum), allreduceSpec(kSmall + 8, f32, ReduceOp::kSum)},
      {"count, ring", allreduceSpec(kLarge, f32, ReduceOp::kSum), allreduceSpec(kLarge + 8, f32, ReduceOp::kSum)},
      {"count, direct vs ring", allreduceSpec(kSmall, f32, ReduceOp::kSum), allreduceSpec(kLarge, f32, ReduceOp::kSum)},
      {"count, split", allreduceSpec(kMid, f32, ReduceOp::kSum), allreduceSpec(kMid + 8, f32, ReduceOp::kSum)},
      {"count, direct vs split", allreduceSpec(kSmall, f32, ReduceOp::kSum), allreduceSpec(kMid, f32, ReduceOp::kSum)},
      {"count, split vs ring", allreduceSpec(kMid, f32, ReduceOp::kSum), allreduceSpec(kLarge, f32, ReduceOp::kSum)},
      {"op, split", allreduceSpec(kMid, f32, ReduceOp::kAvg), allreduceSpec(kMid, f32, ReduceOp::kSum)},
      {"root, direct (400 KB)", broadcastSpec(kMid, f32, n - 1), broadcastSpec(kMid, f32, 0)},
      {"type, direct (same bytes)", allreduceSpec(kSmall, f32, ReduceOp::kSum),
       allreduceSpec(kSmall, DataType::kInt32, ReduceOp::kSum)},
      {"type, ring (same bytes)", allreduceSpec(kLarge, DataType::kFloat16, ReduceOp::kSum),
       allreduceSpec(kLarge, DataType::kBFloat16, ReduceOp::kSum)},
      {"op, direct", allreduceSpec(kSmall, f32, ReduceOp::kSum), allreduceSpec(kSmall, f32, ReduceOp::kMax)},
      {"op, ring", allreduceSpec(kLarge, f32, ReduceOp::kAvg), allreduceSpec(kLarge, f32, ReduceOp::kSum)},
      {"root, direct", broadcastSpec(kSmall, f32, 0), broadcastSpec(kSmall, f32, n - 1)},
      {"root, chain", broadcastSpec(kLarge, f32, n - 1), broadcastSpec(kLarge, f32, 0)},
      {"type, chain broadcast", broadcastSpec(kLarge, DataType::kInt64, 0),
       broadcastSpec(kLarge, DataType::kFloat64, 0)},
      {"broadcast vs allreduce, direct", allreduceSpec(kSmall, f32, ReduceOp::kSum), broadcastSpec(kSmall, f32, 0)},
      {"broadcast vs allreduce, ring", allreduceSpec(kLarge, f32, ReduceOp::kSum), broadcastSpec(kLarge, f32, 0)},
      {"allgather vs allreduce", allreduceSpec(kSmall, f32, ReduceOp::kSum), faults::allgatherSpec(kSmall, f32)},
      {"barrier vs allreduce", allreduceSpec(kSmall, f32, ReduceOp::kSum), faults::barrierSpec()},
      {"broadcast vs barrier", faults::barrierSpec(), broadcastSpec(kLarge, f32, 0)},
      {"reducescatter vs allgather, one round", reduceScatterSpec(kSmall, f32, ReduceOp::kSum),
       allgatherSpec(kSmall, f32)},
      {"reducescatter vs allgather, ring", reduceScatterSpec(kLarge, f32, ReduceOp::kSum), allgatherSpec(kLarge, f32)},
      {"reducescatter count, ring", reduceScatterSpec(kLarge, f32, ReduceOp::kSum),
       reduceScatterSpec(kLarge + 8, f32, ReduceOp::kSum)},
      {"reducescatter op, one round", reduceScatterSpec(kSmall, f32, ReduceOp::kAvg),
       reduceScatterSpec(kSmall, f32, ReduceOp::kMax)},
      {"reducescatter vs allreduce, ring", allreduceSpec(kLarge, f32, ReduceOp::kSum),
       reduceScatterSpec(kLarge, f32, ReduceOp::kSum)},
      {"allgather count, ring", allgatherSpec(kLarge, f32), allgatherSpec(kLarge + 8, f32)},
      {"allgather type, one round (same bytes)", allgatherSpec(kSmall, f32), allgatherSpec(kSmall, DataType::kInt32)},
  };
}

// The communicator still works and is in step: an exact all-reduce, the same call count everywhere.
bool stillWorks(Communicator& comm) {
  std::vector<std::int64_t> value(5, comm.rank() + 1);
  comm.allreduce(value.data(), value.data(), value.size(), DataType::kInt64, ReduceOp::kSum);
  const std::int64_t n = comm.size();
  const long long calls = static_cast<long long>(comm.callCount());
  return value[4] == n * (n + 1) / 2 && test::sumOverRanks(calls) == calls * n && !comm.aborted();
}

// Every scenario with each rank in turn the odd one: MismatchError naming both calls on every
// rank, every buffer untouched, the communicator in step afterwards.
void checkScenarios(Communicator& comm, const std::vector<Scenario>& all, const std::string& label) {
  const int n = comm.size();
  double slowest = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Scenario& s = all[i];
    const int odd = static_cast<int>(i % static_cast<std::size_t>(n));  // rank 0 is the odd one too
    const std::uint64_t sequence = comm.callCount();
    faults::PatternBuffers buffers(kLarge + 8, n);
    const faults::Outcome outcome = faults::attempt(
        [&] { faults::runSpec(comm, comm.rank() == odd ? s.odd : s.usual, buffers); });
    // "rank 2 called <odd>; ranks 0, 1 called <usual>", or the other way round when rank 0 is odd.
    const std::string oddText = faults::rankList({odd}) + " called " + faults::describeSpec(s.odd, sequence);
    const std::string usualText = faults::rankList(faults::ranksExcept(n, odd)) + " called " +
                                  faults::describeSpec(s.usual, sequence);
    const bool named = outcome.message.find(oddText) != std::string::npos &&
                       outcome.message.find(usualText) != std::string::npos;
    // Every rank takes part in the check that the communicator still works, whatever its own
    // verdict: a rank skipping it would leave the others to time out there, hiding what went wrong.
    std::string brokenAfterwards;  // empty while the communicator still works
    try {
      if (!stillWorks(comm)) brokenAfterwards = "a wrong all-reduce or call count";
    } catch (const std::exception& error) {
      brokenAfterwards = error.what();
    }
    const bool ok = outcome.error == "MismatchError" && named && buffers.untouched() && brokenAfterwards.empty();
    slowest = std::max(slowest, outcome.seconds);
    INFO(s.name << ", rank " << comm.rank() << " (odd rank " << odd << "): " << outcome.error << ": " << outcome.message
                << "\n  expected to contain: " << oddText << "\n  and: " << usualText
                << "\n  buffers untouched: " << buffers.untouched()
                << "\n  the communicator afterwards: " << (brokenAfterwards.empty() ? "works" : brokenAfterwards));
    REQUIRE(test::allRanks(ok));
  }
  faults::report(label + " np=" + std::to_string(n) + ": " + std::to_string(all.size()) +
                 " scenarios, MismatchError on every rank, slowest after " +
                 std::to_string(faults::maxOverRanks(slowest)) + " s");
}

}  // namespace

TEST_CASE("mismatch: every rank raises MismatchError naming the odd rank and both calls", "[faults][mismatch]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("a single rank cannot disagree with itself");
    return;
  }
  checkScenarios(comm, scenarios(comm.size()), "mismatch");
}

TEST_CASE("mismatch: Rabenseifner's all-reduce in pieces", "[faults][mismatch][rabenseifner]") {
  // A network latency of 1 byte makes the flat butterfly's pieces 100 x 2 log2 n bytes
  // (rabenseifner_allreduce.cc): both calls of each scenario take many pieces, and the first
  // piece's check must stop every rank before anything is written.
  Options options;
  options.algorithm = Algorithm::kRabenseifner;
  options.networkLatencyBytes = 1;
  Communicator comm(MPI_COMM_WORLD, options);
  if (comm.size() == 1) {
    SUCCEED("a single rank cannot disagree with itself");
    return;
  }
  const DataType f32 = DataType::kFloat32;
  const std::vector<Scenario> pieces = {
      {"count, in pieces", faults::allreduceSpec(4093, f32, ReduceOp::kSum),
       faults::allreduceSpec(4101, f32, ReduceOp::kSum)},
      {"op, in pieces", faults::allreduceSpec(4093, f32, ReduceOp::kAvg),
       faults::allreduceSpec(4093, f32, ReduceOp::kSum)},
      {"type, in pieces (same bytes)", faults::allreduceSpec(4093, f32, ReduceOp::kSum),
       faults::allreduceSpec(4093, DataType::kInt32, ReduceOp::kSum)},
  };
  checkScenarios(comm, pieces, "mismatch, Rabenseifner in pieces");
  REQUIRE(comm.lastPlacement().algorithm == "rabenseifner");
}

TEST_CASE("mismatch: ranks with different RINGSYNC_* settings are refused, not corrupted", "[faults][mismatch]") {
  const int n = test::worldSize();
  if (n == 1) {
    SUCCEED("a single rank cannot disagree with itself");
    return;
  }
  const int odd = n - 1;
  struct Variant {
    const char* name;
    const char* variable;  // what the error must name
    void (*change)(Options&);
    std::size_t count;  // float32 elements of the all-reduce tried
  };
  const Variant variants[] = {
      {"segment size", "RINGSYNC_RING_SEGMENT_BYTES=65536 on rank", [](Options& o) { o.ringSegmentBytes = 64 * 1024; },
       kLarge},
      {"segment size across nodes", "RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES=32768 on rank",
       [](Options& o) { o.ringSegmentBytesAcrossNodes = 32 * 1024; }, kLarge},
      {"small-message threshold", "RINGSYNC_SMALL_BYTES=1024 on rank", [](Options& o) { o.smallBytes = 1024; },
       1000},  // 4000 B: direct vs ring
      {"network latency", "RINGSYNC_NETWORK_LATENCY_BYTES=45000 on rank",
       [](Options& o) { o.networkLatencyBytes = 45000; }, kSmall},
      {"reduce to link ratio", "RINGSYNC_REDUCE_TO_LINK_RATIO=1.250000 on rank",
       [](Options& o) { o.reduceToLinkRatio = 1.25; }, kSmall},
      {"algorithm", "RINGSYNC_ALGO=direct on rank", [](Options& o) { o.algorithm = Algorithm::kDirect; }, 1000},
      {"call checks", "RINGSYNC_CHECK=0 on rank", [](Options& o) { o.checkCalls = false; }, kSmall},
      {"finite check", "RINGSYNC_CHECK_FINITE=1 on rank", [](Options& o) { o.checkFinite = true; }, kLarge},
  };
  for (const Variant& v : variants) {
    Options options = Options::fromEnvironment();
    if (test::worldRank() == odd) v.change(options);
    // Caught when the communicator is built, on every rank, before any call could truncate or
    // miss a message; it names the setting.
    faults::PatternBuffers buffers(kLarge, n);
    const faults::Outcome outcome = faults::attempt([&] {
      Communicator comm(MPI_COMM_WORLD, options);
      faults::runSpec(comm, faults::allreduceSpec(v.count, DataType::kFloat32, ReduceOp::kSum), buffers);
    });
    INFO(v.name << ", rank " << test::worldRank() << ": " << outcome.error << ": " << outcome.message);
    const bool ok = outcome.error == "MismatchError" && outcome.message.find(v.variable) != std::string::npos &&
                    outcome.message.find(faults::rankList({odd})) != std::string::npos && buffers.untouched();
    REQUIRE(test::allRanks(ok));
  }
}
