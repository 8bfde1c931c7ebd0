// More than 2^31 elements: MPI's int counts must be split, never truncated. Label `large`.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

TEST_CASE("large: all-reduce of more than 2^31 int8 elements", "[large]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = (std::size_t{1} << 31) + 1021;
  std::vector<std::int8_t> data(count);
  // x_r[i] = (r + i) % 3 - 1, so the sum over n ranks is small and has a closed form.
  for (std::size_t i = 0; i < count; ++i)
    data[i] = static_cast<std::int8_t>((static_cast<std::size_t>(comm.rank()) + i) % 3) - 1;
  comm.allreduce(data.data(), data.data(), count, DataType::kInt8, ReduceOp::kSum);
  const int n = comm.size();
  int expectedByResidue[3] = {0, 0, 0};  // the sum depends only on i % 3
  for (int residue = 0; residue < 3; ++residue)
    for (int r = 0; r < n; ++r) expectedByResidue[residue] += (r + residue) % 3 - 1;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += data[i] != expectedByResidue[i % 3];
  INFO("rank " << comm.rank() << ": " << wrong << " wrong of " << count);
  REQUIRE(test::allRanks(wrong == 0));
  // The last elements (beyond 2^31) are the ones an int count would lose.
  REQUIRE(test::identicalOnAllRanks(data.data() + count - 4096, 4096));
}
