// The pieces added to make the host path fast keep the library's promises:
//  - the vectorised 16-bit float kernels (F16C where the CPU has it) give the same bits as the
//    scalar conversions in half.h, and the non-finite scan finds a NaN/Inf at any position;
//  - RequestGroup's inline slots and its heap fallback, and discarding a message that is longer
//    than its receive (what a mismatched early ring segment can be);
//  - the shared-memory header rounds (payloads, slot reuse, a silent rank named in the timeout);
//  - the ring that sends its first segment while the call fingerprints travel: when the calls
//    disagree (another count, type, or another kind of collective) every rank still raises
//    MismatchError, and the communicator is still in step afterwards (exact results).
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "closed_form.h"
#include "collectives/half.h"
#include "collectives/round_transport.h"
#include "collectives/reduce_kernels.h"
#include "collectives/transport.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::detail;

namespace {

// Every finite float16 / bfloat16 pattern (NaNs excluded: their payloads are not specified).
std::vector<std::uint16_t> finiteHalves(bool bfloat) {
  std::vector<std::uint16_t> values;
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = bfloat ? bfloat16ToFloat(h) : float16ToFloat(h);
    if (std::isfinite(f)) values.push_back(h);
  }
  return values;
}

float widenScalar(bool bfloat, std::uint16_t h) { return bfloat ? bfloat16ToFloat(h) : float16ToFloat(h); }
std::uint16_t narrowScalar(bool bfloat, float f) { return bfloat ? floatToBfloat16(f) : floatToFloat16(f); }

// Element i of `a` against a shuffled copy as `b`: sums that round, overflow and go subnormal.
void checkHalfKernels(bool bfloat) {
  const DataType type = bfloat ? DataType::kBFloat16 : DataType::kFloat16;
  const std::vector<std::uint16_t> a = finiteHalves(bfloat);
  std::vector<std::uint16_t> b = a;
  std::shuffle(b.begin(), b.end(), std::mt19937(12345));
  std::vector<std::uint16_t> out(a.size()), quotient(a.size());
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
    reduceElements(out.data(), a.data(), b.data(), a.size(), type, op);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const float x = widenScalar(bfloat, a[i]), y = widenScalar(bfloat, b[i]);
      const float r = op == ReduceOp::kSum    ? x + y
                      : op == ReduceOp::kProd ? x * y
                      : op == ReduceOp::kMin  ? (y < x ? y : x)
                                              : (x < y ? y : x);
      const std::uint16_t want = narrowScalar(bfloat, r);
      if (std::isnan(widenScalar(bfloat, want))) continue;  // inf - inf etc.: NaN payloads may differ
      wrong += out[i] != want;
    }
    INFO(dataTypeName(type) << " " << reduceOpName(op));
    CHECK(wrong == 0);
  }
  sumAndDivideElements(quotient.data(), a.data(), b.data(), a.size(), type, 3);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float sum = widenScalar(bfloat, narrowScalar(bfloat, widenScalar(bfloat, a[i]) + widenScalar(bfloat, b[i])));
    const std::uint16_t want = narrowScalar(bfloat, sum / 3);
    if (!std::isnan(widenScalar(bfloat, want))) wrong += quotient[i] != want;
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("perf kernels: 16-bit float reductions match half.h bit for bit", "[perf][kernels]") {
  checkHalfKernels(false);
  checkHalfKernels(true);
}

TEST_CASE("perf kernels: a NaN or Inf is found at every position", "[perf][kernels]") {
  for (DataType type : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const std::size_t elementBytes = dataTypeSize(type);
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{300}}) {
      std::vector<std::uint8_t> data(count * elementBytes, 0);  // all +0.0
      CHECK_FALSE(containsNonFinite(data.data(), count, type));
      for (std::size_t at = 0; at < count; at += (at < 40 ? 1 : 97)) {
        std::vector<std::uint8_t> bad = data;
        const std::uint64_t inf = type == DataType::kFloat64   ? 0x7ff0000000000000ull
                                  : type == DataType::kFloat32 ? 0x7f800000ull
                                  : type == DataType::kFloat16 ? 0x7c00ull
                                                               : 0x7f80ull;
        std::memcpy(bad.data() + at * elementBytes, &inf, elementBytes);  // little-endian low bytes
        INFO(dataTypeName(type) << " count=" << count << " inf at " << at);
        CHECK(containsNonFinite(bad.data(), count, type));
      }
    }
  }
}

TEST_CASE("perf transport: inline and heap request slots; a too-long message is discarded", "[perf][transport]") {
  MPI_Comm self = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_SELF, &self);
  MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
  CallHeader call;
  Deadline deadline(call, 30.0, 0.0, nullptr);
  for (std::size_t pairs : {std::size_t{3}, std::size_t{20}}) {  // 6 slots inline, 40 on the heap
    RequestGroup group(self, 2 * pairs);
    std::vector<int> in(pairs, -1), out(pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
      out[i] = static_cast<int>(i * 3 + 1);
      group.recv(i, &in[i], sizeof(int), 0, kTagRing);
    }
    for (std::size_t i = 0; i < pairs; ++i) group.send(pairs + i, &out[i], sizeof(int), 0, kTagRing);
    group.waitAll(deadline);
    CHECK(in == out);
    CHECK(group.receivedBytes(0) == sizeof(int));
  }
  RequestGroup group(self, 2);
  std::vector<char> big(100, 'x'), small(10, 0);
  group.recv(0, small.data(), small.size(), 0, kTagRing);
  group.send(1, big.data(), big.size(), 0, kTagRing);
  REQUIRE_NOTHROW(group.waitDiscarding(0, deadline));
  group.wait(1, deadline);
  CHECK_FALSE(group.active(0));
  group.recv(0, small.data(), small.size(), 0, kTagRing);  // withdrawn: nothing will match it
  group.cancel(0);
  CHECK_FALSE(group.active(0));
  MPI_Comm_free(&self);
}

TEST_CASE("perf exchange: shared-memory rounds carry every rank's header and payload", "[perf][exchange]") {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int rank = test::worldRank(), size = test::worldSize();
  {
    RoundTransport exchange(comm, rank, size, RoundCapacity{256, 256});
    CHECK(exchange.sharedMemory() == (size > 1));  // the tests run every rank on one node
    std::size_t wrong = 0;
    for (std::uint64_t round = 0; round < 7; ++round) {  // both slot parities, several times
      CallHeader mine;
      mine.sequence = round;
      mine.count = static_cast<std::uint64_t>(rank);
      std::vector<std::uint8_t> payload((round * 37 + static_cast<std::uint64_t>(rank) * 11) % 257);
      for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(rank * 31 + i + round);
      CallHeader call;
      Deadline deadline(call, 30.0, 0.0, nullptr);
      exchange.run(mine, payload.data(), payload.size(), deadline);
      for (int r = 0; r < size; ++r) {
        const std::size_t bytes = (round * 37 + static_cast<std::uint64_t>(r) * 11) % 257;
        wrong += exchange.header(r).sequence != round || exchange.header(r).count != static_cast<std::uint64_t>(r);
        wrong += exchange.payloadBytes(r) != bytes;
        for (std::size_t i = 0; i < std::min(bytes, exchange.payloadBytes(r)); ++i)
          wrong += exchange.payload(r)[i] != static_cast<std::byte>(static_cast<std::uint8_t>(r * 31 + i + round));
      }
    }
    INFO("rank " << rank << ": " << wrong << " wrong");
    REQUIRE(test::allRanks(wrong == 0));
  }
  if (size > 1) {
    // A rank that never publishes its round is named in the timeout, not waited for forever.
    RoundTransport exchange(comm, rank, size, RoundCapacity{0, 0});
    std::string message;
    if (rank != size - 1) {
      CallHeader call;
      Deadline deadline(call, 0.5, 0.0, nullptr);
      try {
        exchange.run(call, nullptr, 0, deadline);
      } catch (const TimeoutError& error) {
        message = error.what();
      }
    } else {
      message = "rank " + std::to_string(size - 1);  // the silent one
    }
    INFO("rank " << rank << ": " << message);
    REQUIRE(
        test::allRanks(message.find("rank(s) " + std::to_string(size - 1)) != std::string::npos || rank == size - 1));
    MPI_Barrier(comm);
  }
  MPI_Comm_free(&comm);
}

namespace {

constexpr std::size_t kRingCount = 200000;  // 800 KB of float32: the ring, several segments

// Every rank makes `mine` or, on rank `odd`, `other`; all must raise MismatchError naming `odd`.
template <typename Mine, typename Other> void expectMismatch(Communicator& comm, int odd, Mine&& mine, Other&& other) {
  std::string message;
  try {
    if (comm.rank() == odd) {
      other();
    } else {
      mine();
    }
  } catch (const MismatchError& error) {
    message = error.what();
  }
  INFO("rank " << comm.rank() << ": " << message);
  REQUIRE(test::allRanks(message.find("rank " + std::to_string(odd)) != std::string::npos));
}

// The communicator is in step: a ring and a direct all-reduce give the exact sums.
void expectInStep(Communicator& comm) {
  const int n = comm.size();
  for (std::size_t count : {kRingCount, std::size_t{5}}) {
    std::vector<float> data(count);
    for (std::size_t i = 0; i < count; ++i)
      data[i] = static_cast<float>(closed_form::allreduceInput(ReduceOp::kSum, DataType::kFloat32, comm.rank(), n, i));
    comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i)
      wrong += data[i] != closed_form::allreduceExpected(ReduceOp::kSum, DataType::kFloat32, n, i);
    INFO("count " << count << ": " << wrong << " wrong on rank " << comm.rank());
    REQUIRE(test::allRanks(wrong == 0));
  }
}

}  // namespace

TEST_CASE("perf ring: mismatches around the early first segment leave every rank in step", "[perf][mismatch]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("a single rank cannot disagree with itself");
    return;
  }
  std::vector<float> a(kRingCount * 2, 1.0f);
  std::vector<double> d(kRingCount, 1.0);
  auto ring = [&] { comm.allreduce(a.data(), a.data(), kRingCount, DataType::kFloat32, ReduceOp::kSum); };
  for (int odd : {comm.size() - 1, 0}) {
    SECTION("another count on rank " + std::to_string(odd)) {
      expectMismatch(comm, odd, ring,
                     [&] { comm.allreduce(a.data(), a.data(), kRingCount * 2, DataType::kFloat32, ReduceOp::kSum); });
    }
    SECTION("another type (other segment sizes) on rank " + std::to_string(odd)) {
      expectMismatch(comm, odd, ring,
                     [&] { comm.allreduce(d.data(), d.data(), kRingCount, DataType::kFloat64, ReduceOp::kSum); });
    }
    SECTION("a direct all-reduce on rank " + std::to_string(odd)) {
      expectMismatch(comm, odd, ring,
                     [&] { comm.allreduce(a.data(), a.data(), 3, DataType::kFloat32, ReduceOp::kSum); });
    }
    SECTION("a barrier on rank " + std::to_string(odd)) {
      expectMismatch(comm, odd, ring, [&] { comm.barrier(); });
    }
    SECTION("a chain broadcast on rank " + std::to_string(odd)) {
      expectMismatch(comm, odd, ring, [&] { comm.broadcast(a.data(), kRingCount, DataType::kFloat32, 0); });
    }
    SECTION("everyone else broadcasts, rank " + std::to_string(odd) + " runs the ring") {
      expectMismatch(
          comm, odd, [&] { comm.broadcast(a.data(), kRingCount, DataType::kFloat32, 0); }, ring);
    }
  }
  expectInStep(comm);
}

TEST_CASE("perf ring: RINGSYNC_CHECK=0 runs the ring without the fingerprint round", "[perf][ring]") {
  Options options;
  options.checkCalls = false;
  Communicator comm(MPI_COMM_WORLD, options);
  expectInStep(comm);
}
