// RINGSYNC_CHECK_FINITE=1: an all-reduce whose input holds NaN or Inf on some ranks raises
// NonFiniteError on every rank naming exactly those ranks, on the direct and the ring path and for
// every floating-point type; integers are never flagged; the communicator keeps working.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "call_spec.h"
#include "fault_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using test::TypedBuffer;

namespace {

struct Poison {
  const char* name;
  DataType type;
  std::size_t count;
  std::function<bool(int rank, int n)> poisoned;  // which ranks put a non-finite value in
  double value;
  std::size_t where;  // element index (counted from the end when it is past count)
};

std::vector<int> poisonedRanks(const Poison& p, int n) {
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r)
    if (p.poisoned(r, n)) ranks.push_back(r);
  return ranks;
}

bool stillWorks(Communicator& comm) {
  double value = 0.5 * comm.rank();
  comm.allreduce(&value, &value, 1, DataType::kFloat64, ReduceOp::kSum);
  return value == 0.25 * comm.size() * (comm.size() - 1) && !comm.aborted();
}

}  // namespace

TEST_CASE("nonfinite: NaN or Inf in some ranks' input is named on every rank", "[faults][nonfinite]") {
  REQUIRE(Options::fromEnvironment().checkFinite);
  Communicator comm(MPI_COMM_WORLD);
  const Poison cases[] = {
      {"float32 NaN, direct", DataType::kFloat32, 16, [](int r, int n) { return r == n - 1; }, NAN, 5},
      {"float64 +Inf at the end, split", DataType::kFloat64, 100000, [](int r, int n) { return r == 0 || r == n - 1; },
       INFINITY, 99999},
      {"float16 NaN everywhere, direct", DataType::kFloat16, 100, [](int, int) { return true; }, NAN, 0},
      {"bfloat16 -Inf, split", DataType::kBFloat16, 300000, [](int r, int n) { return r == 1 % n; }, -INFINITY, 150001},
      {"float32 NaN in the last split chunk", DataType::kFloat32, 200003, [](int r, int n) { return r == n / 2; }, NAN,
       200002},
      {"float32 NaN in the last ring chunk (12 MB)", DataType::kFloat32, 3000001,
       [](int r, int n) { return r == n / 2; }, NAN, 3000000},
  };
  for (const Poison& p : cases) {
    for (bool inPlace : {true, false}) {
      const std::uint64_t sequence = comm.callCount();
      TypedBuffer send(p.type, p.count), recv(p.type, p.count);
      for (std::size_t i = 0; i < p.count; ++i) send.set(i, 1.0);
      if (p.poisoned(comm.rank(), comm.size())) send.set(p.where, p.value);
      const faults::Outcome outcome = faults::attempt(
          [&] { comm.allreduce(send.data(), inPlace ? send.data() : recv.data(), p.count, p.type, ReduceOp::kSum); });
      const std::string expected = faults::describeSpec(faults::allreduceSpec(p.count, p.type, ReduceOp::kSum),
                                                        sequence) +
                                   ": input holds NaN or Inf on " + faults::rankList(poisonedRanks(p, comm.size())) +
                                   " (RINGSYNC_CHECK_FINITE=1)";
      const bool ok = outcome.error == "NonFiniteError" && outcome.message == expected && stillWorks(comm);
      INFO(p.name << (inPlace ? " in place" : "") << ", rank " << comm.rank() << ": " << outcome.error << ": "
                  << outcome.message << "\n  expected: " << expected);
      REQUIRE(test::allRanks(ok));
    }
  }
}

TEST_CASE("nonfinite: finite inputs and integer bit patterns of NaN pass", "[faults][nonfinite]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  // 0x7fc00000 is a float32 NaN's bit pattern: as int32 it is an ordinary number.
  std::vector<std::int32_t> integers(1000, 0x7fc00000 / 8);
  comm.allreduce(integers.data(), integers.data(), integers.size(), DataType::kInt32, ReduceOp::kMax);
  std::vector<float> finite(100000, 1e30f);  // large but finite; the sum overflows only past 3.4e38
  comm.allreduce(finite.data(), finite.data(), finite.size(), DataType::kFloat32, ReduceOp::kMax);
  const bool ok = integers[999] == 0x7fc00000 / 8 && finite[99999] == 1e30f && n >= 1;
  REQUIRE(test::allRanks(ok));
}
