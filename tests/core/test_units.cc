// Single-process pieces: half conversions, ring geometry, reduce kernels, backend selection, how
// waits give the core away, RINGSYNC_SPIN_WAIT, the pointer classification rules, the collective table.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "collectives/algorithm_table.h"
#include "collectives/call.h"
#include "collectives/collective_kinds.h"
#include "collectives/half.h"
#include "collectives/reduce_kernels.h"
#include "collectives/chunk_layout.h"
#include "collectives/idle_wait.h"
#include "collectives/ring_config.h"
#include "collectives/transfer_constants.h"
#include "ringsync/options.h"
#include "ringsync/errors.h"
#include "src/averager/overlap_policy.h"
#include "src/backend_selection.h"
#include "src/staged_path.h"
#include "src/pointer_rules.h"

using namespace ringsync;
using namespace ringsync::detail;

TEST_CASE("half: float16 round trip and rounding", "[units][half]") {
  // Every float16 bit pattern that is not NaN survives float16 -> float -> float16.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float value = float16ToFloat(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) {
      CHECK(std::isnan(float16ToFloat(floatToFloat16(value))));
      continue;
    }
    REQUIRE(floatToFloat16(value) == bits);
  }
  CHECK(float16ToFloat(0x3c00) == 1.0f);
  CHECK(float16ToFloat(0x7bff) == 65504.0f);
  CHECK(float16ToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(floatToFloat16(65520.0f) == 0x7c00);  // ties to even rounds up to Inf here
  CHECK(floatToFloat16(65519.0f) == 0x7bff);
  CHECK(floatToFloat16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie -> even
  CHECK(floatToFloat16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(floatToFloat16(std::ldexp(1.0f, -25)) == 0x0000);  // tie below the smallest subnormal -> 0
  CHECK(floatToFloat16(std::ldexp(1.5f, -25)) == 0x0001);
}

TEST_CASE("half: bfloat16 round trip and rounding", "[units][half]") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float value = bfloat16ToFloat(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) continue;
    REQUIRE(floatToBfloat16(value) == bits);
  }
  CHECK(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);  // tie -> even
  CHECK(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(std::isnan(bfloat16ToFloat(floatToBfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("ring geometry: chunks and segments tile the buffer exactly", "[units][geometry]") {
  for (int ranks : {1, 2, 3, 4, 7}) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1021}, std::size_t{100003}}) {
      for (std::size_t segmentBytes : {std::size_t{64}, std::size_t{4096}}) {
        const RingGeometry geometry(count, ranks, 4, segmentBytes);
        std::size_t next = 0;
        for (int c = 0; c < ranks; ++c) {
          for (std::size_t s = 0; s < geometry.segmentsPerChunk(); ++s) {
            const ElementRange range = geometry.segment(c, s);
            REQUIRE(range.begin == next);
            REQUIRE(range.count * 4 <= segmentBytes);
            next += range.count;
          }
        }
        REQUIRE(next == count);
      }
    }
  }
}

TEST_CASE("ring config: between two single-rank nodes a chunk of 192-400 KiB goes whole, nothing else changes",
          "[units][geometry]") {
  const RingConfig base{63 * 1024, 16};
  const std::size_t from = detail::kAcrossTwoRanksWholeChunkFromBytes,
                    upTo = detail::kAcrossTwoRanksWholeChunkUpToBytes;
  auto config = [&](bool acrossNodes, int ranks, std::size_t count, std::size_t elementBytes) {
    return ringConfigFor(base, acrossNodes, ranks, count, elementBytes);
  };
  // The trainer's 804 KB bucket between two single-rank hosts: two chunks of 401,408 bytes.
  const RingConfig trainer = config(true, 2, 200704, 4);
  REQUIRE(trainer.segmentBytes == 401408);
  REQUIRE(trainer.depth == 2);
  REQUIRE(RingGeometry(200704, 2, 4, trainer.segmentBytes).segmentsPerChunk() == 1);
  // The bounds, by the largest chunk (counts that do not divide evenly round up).
  REQUIRE(config(true, 2, 2 * from / 4, 4).segmentBytes == from);
  REQUIRE(config(true, 2, 2 * from / 4 - 2, 4).segmentBytes == base.segmentBytes);
  REQUIRE(config(true, 2, 2 * upTo / 4, 4).segmentBytes == upTo);
  REQUIRE(config(true, 2, 2 * upTo / 4 + 1, 4).segmentBytes == base.segmentBytes);  // a chunk of upTo + 4
  REQUIRE(config(true, 2, 2 * (from / 8) - 1, 8).segmentBytes == from);             // float64, uneven
  // Whatever the chunk, any other ring (one node, more ranks, inside an algorithm) keeps its settings.
  for (std::size_t count : {std::size_t{1000}, std::size_t{200704}, std::size_t{1} << 22}) {
    REQUIRE(config(false, 2, count, 4).segmentBytes == base.segmentBytes);
    REQUIRE(config(false, 2, count, 4).depth == base.depth);
  }
  REQUIRE(config(true, 1, 200704, 4).segmentBytes == base.segmentBytes);
  // The first receive holds any call's first segment: a whole chunk across nodes, else a segment.
  REQUIRE(earlyReceiveBytes(base, true) == upTo);
  REQUIRE(earlyReceiveBytes(base, false) == base.segmentBytes);
  REQUIRE(earlyReceiveBytes(RingConfig{1 << 20, 2}, true) == std::size_t{1} << 20);
}

TEST_CASE("reduce kernels: wrap-around, truncating average, half accumulation", "[units][kernels]") {
  std::vector<std::int8_t> a{127, -128, 5}, b{1, -1, -9}, out(3);
  reduceElements(out.data(), a.data(), b.data(), 3, DataType::kInt8, ReduceOp::kSum);
  CHECK(out == std::vector<std::int8_t>{-128, 127, -4});
  std::vector<std::int32_t> x{7, -7}, y{0, 0}, z(2);
  sumAndDivideElements(z.data(), x.data(), y.data(), 2, DataType::kInt32, 2);
  CHECK(z == std::vector<std::int32_t>{3, -3});  // truncation toward zero
  std::vector<std::uint16_t> h1{floatToFloat16(2048.0f)}, h2{floatToFloat16(1.0f)}, h3(1);
  reduceElements(h3.data(), h1.data(), h2.data(), 1, DataType::kFloat16, ReduceOp::kSum);
  CHECK(float16ToFloat(h3[0]) == 2048.0f);  // 2049 is not representable: rounds to even
  std::vector<float> f{1.0f, std::numeric_limits<float>::infinity()};
  CHECK(containsNonFinite(f.data(), 2, DataType::kFloat32));
  CHECK_FALSE(containsNonFinite(f.data(), 1, DataType::kFloat32));
}

TEST_CASE("backend selection: soft placement and forced backends", "[units][backend]") {
  auto route = [](MemoryKind kind, BackendChoice forced, bool nccl) {
    return chooseRoute({"allreduce", kind, kind, forced, nccl, "no GPU"});
  };
  CHECK(route(MemoryKind::kHost, BackendChoice::kAuto, true) == Route::kHostRing);
  CHECK(route(MemoryKind::kHost, BackendChoice::kRing, false) == Route::kHostRing);
  CHECK(route(MemoryKind::kDevice, BackendChoice::kAuto, true) == Route::kNccl);
  CHECK(route(MemoryKind::kDevice, BackendChoice::kAuto, false) == Route::kStaged);
  CHECK(route(MemoryKind::kDevice, BackendChoice::kStaged, true) == Route::kStaged);
  CHECK_THROWS_WITH(route(MemoryKind::kDevice, BackendChoice::kNccl, false), Catch::Contains("RINGSYNC_BACKEND=nccl"));
  CHECK_THROWS_AS(route(MemoryKind::kDevice, BackendChoice::kRing, true), InvalidArgument);
  CHECK_THROWS_WITH(route(MemoryKind::kHost, BackendChoice::kNccl, true), Catch::Contains("host buffer"));
  CHECK_THROWS_AS(chooseRoute({"allreduce", MemoryKind::kHost, MemoryKind::kDevice, BackendChoice::kAuto, true, ""}),
                  InvalidArgument);
}

namespace {
std::chrono::nanoseconds timeIdle(IdleWait& wait, int polls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < polls; ++i) wait.idle();
  return std::chrono::steady_clock::now() - start;
}
}  // namespace

TEST_CASE("idle wait: sleeps once a wait is long, never when spinning is forced", "[units][wait]") {
  using std::chrono::milliseconds;
  IdleWaitPolicy policy;
  policy.spinFor = policy.yieldFor = std::chrono::nanoseconds(0);
  policy.sleepStep = milliseconds(20);
  IdleWait yielding(policy);
  // The first kPollsBeforeClock polls read no clock; the next starts the wait's clock, which is
  // read 16 polls later, past the spin and yield phases: from then on every poll sleeps.
  CHECK(timeIdle(yielding, static_cast<int>(IdleWait::kPollsBeforeClock) + 18) >= milliseconds(40));
  // Progress starts a new wait: its first poll does not sleep, whatever came before.
  yielding.progressed();
  policy.spinOnly = true;
  policy.sleepStep = std::chrono::seconds(100);  // a single sleep would hang the test
  IdleWait spinning(policy);
  CHECK(timeIdle(spinning, 1000) < std::chrono::seconds(100));
  // A long spin phase: the first polls of a wait neither yield nor sleep.
  policy.spinOnly = false;
  policy.spinFor = std::chrono::seconds(100);
  IdleWait patient(policy);
  CHECK(timeIdle(patient, 1000) < std::chrono::seconds(100));
}

TEST_CASE("options: RINGSYNC_SPIN_WAIT", "[units][wait]") {
  CHECK_FALSE(Options{}.spinWait);
  setenv("RINGSYNC_SPIN_WAIT", "1", 1);
  CHECK(Options::fromEnvironment().spinWait);
  CHECK_THAT(Options::fromEnvironment().describe(), Catch::Contains("RINGSYNC_SPIN_WAIT=1"));
  setenv("RINGSYNC_SPIN_WAIT", "sometimes", 1);
  CHECK_THROWS_WITH(Options::fromEnvironment(), Catch::Contains("RINGSYNC_SPIN_WAIT=\"sometimes\""));
  unsetenv("RINGSYNC_SPIN_WAIT");
  CHECK_FALSE(Options::fromEnvironment().spinWait);
}

TEST_CASE("MpiEnvironment asked Open MPI to yield when idle", "[units][wait]") {
  // The test runner initialised MPI through ringsync::MpiEnvironment; CTest sets neither variable.
  const char* spin = std::getenv("RINGSYNC_SPIN_WAIT");
  if (spin && std::string(spin) == "1") return;
  const char* yield = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  REQUIRE(yield != nullptr);
}

// The rules the CUDA build's classifier applies to the driver's answers (src/pointer_rules.h),
// with the driver simulated: no GPU is needed to check them.
TEST_CASE("pointer classification: the driver's answers, no context created, errors never read as host",
          "[units][pointer]") {
  float x = 0;
  int asked = 0;
  auto answering = [&asked](bool ok, int type, int ordinal, std::string error = {}) {
    return [&asked, ok, type, ordinal, error] {
      ++asked;
      DriverPointerAnswer answer;
      answer.succeeded = ok;
      answer.memoryType = type;
      answer.deviceOrdinal = ordinal;
      answer.error = error;
      return answer;
    };
  };
  // No CUDA context in the process: host, and the driver is not even asked.
  PointerPlace place = placeFromDriver(&x, false, answering(true, kDriverMemoryDevice, 3));
  CHECK(place.kind == MemoryKind::kHost);
  CHECK(place.device == -1);
  CHECK(asked == 0);
  // Memory CUDA does not know, and pinned host memory: host.
  CHECK(placeFromDriver(&x, true, answering(true, kDriverMemoryUnknown, -1)).kind == MemoryKind::kHost);
  CHECK(placeFromDriver(&x, true, answering(true, kDriverMemoryHost, 0)).kind == MemoryKind::kHost);
  CHECK(asked == 2);
  // Device and managed memory: device, on the driver's ordinal.
  place = placeFromDriver(&x, true, answering(true, kDriverMemoryDevice, 1));
  CHECK(place.kind == MemoryKind::kDevice);
  CHECK(place.device == 1);
  place = placeFromDriver(&x, true, answering(true, kDriverMemoryUnified, 0));
  CHECK(place.kind == MemoryKind::kDevice);
  CHECK(place.device == 0);
  // A failed query is an error naming the pointer and the driver's error, never "host".
  CHECK_THROWS_AS(placeFromDriver(&x, true, answering(false, kDriverMemoryUnknown, -1, "CUDA_ERROR_INVALID_CONTEXT")),
                  BackendError);
  CHECK_THROWS_WITH(placeFromDriver(&x, true, answering(false, kDriverMemoryUnknown, -1, "CUDA_ERROR_INVALID_CONTEXT")),
                    Catch::Contains("CUDA_ERROR_INVALID_CONTEXT") && Catch::Contains("pointer"));
  // Device memory without a device, a CUDA array, an unknown type: errors.
  CHECK_THROWS_AS(placeFromDriver(&x, true, answering(true, kDriverMemoryDevice, -1)), BackendError);
  CHECK_THROWS_AS(placeFromDriver(&x, true, answering(true, kDriverMemoryArray, 0)), InvalidArgument);
  CHECK_THROWS_WITH(placeFromDriver(&x, true, answering(true, 7, 0)), Catch::Contains("CUmemorytype 7"));
}

TEST_CASE("collective table: one row per kind, and what the pipeline derives from it", "[units][collectives]") {
  for (const CollectiveKind kind : {CollectiveKind::kAllreduce, CollectiveKind::kBroadcast, CollectiveKind::kAllgather,
                                    CollectiveKind::kBarrier, CollectiveKind::kReduceScatter}) {
    REQUIRE(findCollective(kind) != nullptr);
    CHECK(traitsOf(kind).kind == kind);
    CHECK(std::string(collectiveName(kind)) == traitsOf(kind).name);
  }
  const auto bogus = static_cast<CollectiveKind>(99);
  CHECK(findCollective(bogus) == nullptr);
  CHECK(std::string(collectiveName(bogus)) == "unknown-collective");
  CHECK_THROWS_AS(traitsOf(bogus), InvalidArgument);

  // Elements of send and recv for count 5 over 3 ranks.
  const Call reduceScatter{CollectiveKind::kReduceScatter, nullptr, nullptr, 5, DataType::kFloat32};
  const Call allgather{CollectiveKind::kAllgather, nullptr, nullptr, 5, DataType::kFloat32};
  const Call allreduce{CollectiveKind::kAllreduce, nullptr, nullptr, 5, DataType::kFloat32};
  CHECK(reduceScatter.sendCount(3) == 15);
  CHECK(reduceScatter.recvCount(3) == 5);
  CHECK(allgather.sendCount(3) == 5);
  CHECK(allgather.recvCount(3) == 15);
  CHECK(allreduce.sendCount(3) == 5);
  CHECK(allreduce.recvCount(3) == 5);
  CHECK(reduceScatter.reduces());
  CHECK(allreduce.reduces());
  CHECK_FALSE(allgather.reduces());

  // The staged layout on rank 1 of 3, 20-byte blocks: the smaller side at this rank's block.
  const StagedLayout rs = stagedLayout(reduceScatter, 1, 3);
  CHECK(rs.hostBytes == 60);
  CHECK((rs.downloadAt == 0 && rs.downloadBytes == 60 && rs.hostSendAt == 0));
  CHECK((rs.hostRecvAt == 20 && rs.uploadAt == 20 && rs.uploadBytes == 20));
  const StagedLayout ag = stagedLayout(allgather, 1, 3);
  CHECK(ag.hostBytes == 60);
  CHECK((ag.downloadAt == 20 && ag.downloadBytes == 20 && ag.hostSendAt == 20));
  CHECK((ag.hostRecvAt == 0 && ag.uploadAt == 0 && ag.uploadBytes == 60));
  Call broadcast{CollectiveKind::kBroadcast, nullptr, nullptr, 5, DataType::kFloat32};
  broadcast.root = 2;
  const StagedLayout atRoot = stagedLayout(broadcast, 2, 3), elsewhere = stagedLayout(broadcast, 0, 3);
  CHECK((atRoot.downloadBytes == 20 && atRoot.uploadBytes == 0));
  CHECK((elsewhere.downloadBytes == 0 && elsewhere.uploadBytes == 20));

  // The header's description, from the table: a root only where the kind has one.
  CallHeader header;
  header.kind = CollectiveKind::kBroadcast;
  header.sequence = 3;
  header.count = 8;
  header.dataType = DataType::kInt32;
  header.root = 1;
  CHECK(describeCall(header) == "broadcast #3 count=8 int32 root=1");
  header.kind = CollectiveKind::kBarrier;
  CHECK(describeCall(header) == "barrier #3");

  // A collective the selection has no rule for runs its first algorithm.
  CHECK(firstAlgorithmOf(CollectiveKind::kBarrier).id == AlgorithmId::kRoundBarrier);
  CHECK(firstAlgorithmOf(CollectiveKind::kAllreduce).id == AlgorithmId::kDirectAllreduce);
}

TEST_CASE("overlap policy: the CPUs a rank can count on", "[units][averager]") {
  using ringsync::detail::cpusPerRank;
  CHECK(cpusPerRank(1, 2, 2) == 1);    // mpirun -np 2 on 2 cores: bound one core each
  CHECK(cpusPerRank(2, 2, 2) == 1);    // unbound, 2 ranks share 2 CPUs
  CHECK(cpusPerRank(2, 2, 4) == 0.5);  // --oversubscribe -np 4 on 2 CPUs
  CHECK(cpusPerRank(2, 2, 1) == 2);    // one rank: a CPU to spare
  CHECK(cpusPerRank(8, 16, 4) == 4);   // bound to a socket of 8 shared with another rank
  CHECK(cpusPerRank(64, 64, 8) == 8);  // unbound on a big node
  CHECK(cpusPerRank(4, 4, 0) == 4);    // no count of the node's ranks: counted as one
}
