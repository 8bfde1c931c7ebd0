// <ringsync/torch_c10d.h> on 1-3 ranks: a c10d::ProcessGroup made by makeProcessGroup, driven
// through torch's own c10d API (pg->allreduce(tensors)->wait(), ...) with CPU tensors, against
// closed forms. Rank r's values are built from r and the element index i, so every result is an
// exact integer in its dtype. Each test case holds the same on every rank (decided collectively
// before a REQUIRE).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "ringsync/errors.h"
#include "ringsync/torch_c10d.h"
#include "support/test_support.h"

namespace rt = ringsync::torch;
using Catch::Matchers::Contains;
using ringsync::test::allRanks;

namespace {

// 0, 1, ..., count - 1 in `dtype`.
at::Tensor indices(int64_t count, at::ScalarType dtype) { return torch::arange(count, torch::dtype(dtype)); }

// The single-tensor all-gather and reduce-scatter by the names every supported torch has (newer
// ones call them all_gather_single and reduce_scatter_single, and mark these deprecated).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
c10::intrusive_ptr<::c10d::Work> allgatherSingle(::c10d::ProcessGroup& pg, at::Tensor& out, at::Tensor& in) {
  return pg._allgather_base(out, in);
}
c10::intrusive_ptr<::c10d::Work> reduceScatterSingle(::c10d::ProcessGroup& pg, at::Tensor& out, at::Tensor& in) {
  return pg._reduce_scatter_base(out, in);
}
#pragma GCC diagnostic pop

// The message of the ringsync::InvalidArgument that `call` throws ("" if it throws none).
template <typename Call> std::string invalidArgumentMessage(Call call) {
  try {
    call();
  } catch (const ringsync::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("c10d: makeProcessGroup takes rank and size from MPI", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(pg->getRank() == rank);
  CHECK(pg->getSize() == size);
  CHECK(pg->getBackend(c10::DeviceType::CPU)->getBackendName() == "ringsync");
  CHECK(pg->getBackend(c10::DeviceType::CUDA) == pg->getBackend(c10::DeviceType::CPU));
}

TEST_CASE("c10d: allreduce SUM and AVG", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  const int64_t r = pg->getRank(), n = pg->getSize();
  // float64: (r + 1) + i, summed n(n + 1)/2 + n*i; int64: (r + 1) * i, summed i * n(n + 1)/2.
  std::vector<at::Tensor> sum64{indices(1001, at::kDouble) + (r + 1)};
  std::vector<at::Tensor> sumInt{indices(777, at::kLong) * (r + 1)};
  pg->allreduce(sum64)->wait();
  pg->allreduce(sumInt)->wait();
  const at::Tensor wantSum64 = indices(1001, at::kDouble) * n + n * (n + 1) / 2;
  const at::Tensor wantSumInt = indices(777, at::kLong) * (n * (n + 1) / 2);
  // float32 AVG of 2(r + 1): n + 1 exactly; a non-contiguous view (every other element) too.
  std::vector<at::Tensor> avg{torch::full({4096}, 2.0f * static_cast<float>(r + 1))};
  at::Tensor strided = torch::full({64, 2}, 2.0f * static_cast<float>(r + 1)).select(1, 0);
  std::vector<at::Tensor> avgStrided{strided};
  ::c10d::AllreduceOptions average;
  average.reduceOp = ::c10d::ReduceOp::AVG;
  pg->allreduce(avg, average)->wait();
  pg->allreduce(avgStrided, average)->wait();
  const bool ok = torch::equal(sum64[0], wantSum64) && torch::equal(sumInt[0], wantSumInt) &&
                  torch::equal(avg[0], torch::full({4096}, static_cast<float>(n + 1))) &&
                  torch::equal(strided, torch::full({64}, static_cast<float>(n + 1)));
  REQUIRE(allRanks(ok));
}

TEST_CASE("c10d: broadcast from the last rank", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  const int64_t r = pg->getRank(), n = pg->getSize();
  std::vector<at::Tensor> tensors{indices(37, at::kFloat) + 10 * r};
  ::c10d::BroadcastOptions options;
  options.rootRank = n - 1;
  pg->broadcast(tensors, options)->wait();
  REQUIRE(allRanks(torch::equal(tensors[0], indices(37, at::kFloat) + 10 * (n - 1))));
}

TEST_CASE("c10d: allgather, as a list and into one tensor", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  const int64_t r = pg->getRank(), n = pg->getSize();
  std::vector<at::Tensor> input{indices(5, at::kInt) + 100 * r};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int64_t k = 0; k < n; ++k) outputs[0].push_back(torch::full({5}, -1, torch::kInt));
  pg->allgather(outputs, input)->wait();
  at::Tensor whole = torch::full({n * 5}, -1, torch::kInt);
  allgatherSingle(*pg, whole, input[0])->wait();
  bool ok = true;
  for (int64_t k = 0; k < n; ++k) {
    const at::Tensor want = indices(5, at::kInt) + 100 * k;  // rank k's input
    ok = ok && torch::equal(outputs[0][k], want) && torch::equal(whole.slice(0, k * 5, (k + 1) * 5), want);
  }
  REQUIRE(allRanks(ok));
}

TEST_CASE("c10d: reduce_scatter, as a list and from one tensor", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  const int64_t r = pg->getRank(), n = pg->getSize();
  // Rank q's block for rank k: 100q + k + i. Rank r receives the sum over q of 100q + r + i:
  // 100 n(n - 1)/2 + n(r + i).
  std::vector<std::vector<at::Tensor>> inputs(1);
  for (int64_t k = 0; k < n; ++k) inputs[0].push_back(indices(6, at::kDouble) + 100 * r + k);
  std::vector<at::Tensor> output{torch::full({6}, -1.0, torch::kDouble)};
  pg->reduce_scatter(output, inputs)->wait();
  at::Tensor whole = torch::cat(inputs[0]);
  at::Tensor single = torch::full({6}, -1.0, torch::kDouble);
  reduceScatterSingle(*pg, single, whole)->wait();
  const at::Tensor want = (indices(6, at::kDouble) + r) * n + 100 * n * (n - 1) / 2;
  REQUIRE(allRanks(torch::equal(output[0], want) && torch::equal(single, want)));
}

TEST_CASE("c10d: barrier, then send and recv around a ring", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  const int r = pg->getRank(), n = pg->getSize();
  pg->barrier()->wait();
  if (n == 1) {
    SUCCEED("SKIPPED: send/recv around a ring needs 2 ranks or more");
    return;
  }
  const int next = (r + 1) % n, previous = (r + n - 1) % n;
  std::vector<at::Tensor> received{torch::full({9}, -1, torch::kLong)};
  std::vector<at::Tensor> sent{indices(9, at::kLong) + 3 * r + 1};
  auto receiving = pg->recv(received, previous, /*tag=*/7);
  auto sending = pg->send(sent, next, /*tag=*/7);
  sending->wait();
  receiving->wait();
  REQUIRE(allRanks(torch::equal(received[0], indices(9, at::kLong) + 3 * previous + 1)));
}

TEST_CASE("c10d: a dtype ringsync cannot carry is InvalidArgument naming it, at the call", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  std::vector<at::Tensor> tensors{torch::ones({3}, torch::kShort)};
  const std::string message = invalidArgumentMessage([&] { pg->allreduce(tensors); });
  INFO(message);
  CHECK_THAT(message, Contains("torch.int16"));
  CHECK(torch::equal(tensors[0], torch::ones({3}, torch::kShort)));  // untouched
  // Nothing was sent: the group goes on.
  std::vector<at::Tensor> after{torch::ones({3})};
  pg->allreduce(after)->wait();
  REQUIRE(allRanks(torch::equal(after[0], torch::full({3}, static_cast<float>(pg->getSize())))));
}

TEST_CASE("c10d: ranks that disagree on the size are a MismatchError naming the ranks", "[torch][c10d]") {
  auto pg = rt::makeProcessGroup();
  const int r = pg->getRank(), n = pg->getSize();
  if (n == 1) {
    SUCCEED("SKIPPED: a mismatch needs 2 ranks or more");
    return;
  }
  std::vector<at::Tensor> tensors{torch::ones({r == 0 ? 4 : 5})};
  auto work = pg->allreduce(tensors);
  std::string message;
  try {
    work->wait();
  } catch (const ringsync::MismatchError& e) {
    message = e.what();
  }
  const std::string others = n == 2 ? "rank 1 called" : "ranks 1, 2 called";
  INFO("rank " << r << ": " << message);
  REQUIRE(allRanks(message.find("rank 0 called") != std::string::npos && message.find(others) != std::string::npos));
  // Nothing moved, so the group stays usable.
  std::vector<at::Tensor> after{torch::ones({3})};
  pg->allreduce(after)->wait();
  REQUIRE(allRanks(torch::equal(after[0], torch::full({3}, static_cast<float>(n)))));
}
