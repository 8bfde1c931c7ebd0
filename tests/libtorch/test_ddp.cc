// ringsync::torch::DistributedDataParallel on 1-3 ranks, against closed forms: rank r's gradient
// of parameter element i at step s is c = r + 1 + s + i % 7, so the average over n ranks is
// (n + 1) / 2 + s + i % 7, exact in every float type. Each test case holds the same on every rank
// (decided collectively before a REQUIRE).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "ddp_test_support.h"
#include "ringsync/errors.h"
#include "ringsync/torch.h"
#include "support/test_support.h"

namespace rt = ringsync::torch;
using ringsync::Communicator;
using ringsync::test::allRanks;
using ringsync::testing::backwardClosedForm;
using ringsync::testing::gradientsAreAverages;
using ringsync::testing::ParameterModule;

TEST_CASE("ddp: every float dtype averaged, gradients in the buckets until set_to_none", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  // float16 .. float64, counts 0, 1, a prime, and one above the 1 MiB bucket (a bucket of its own).
  ParameterModule module({{torch::kHalf, 1021},
                          {torch::kBFloat16, 1},
                          {torch::kFloat, 0},
                          {torch::kFloat, 300007},
                          {torch::kDouble, 77},
                          {torch::kFloat, 13},
                          {torch::kHalf, 5}});
  rt::DistributedDataParallelOptions options;
  options.overlap = GENERATE(true, false);
  rt::DistributedDataParallel ddp(comm, module, options);
  CHECK(ddp.overlapping() == *options.overlap);
  CHECK(ddp.parameterCount() == 7);
  for (bool setToNone : {false, true}) {
    for (int step = 0; step < 3; ++step) {
      module.zero_grad(setToNone);
      backwardClosedForm(module, comm.rank(), step);
      ddp.synchronize();
      INFO("set_to_none=" << setToNone << " step " << step);
      REQUIRE(allRanks(gradientsAreAverages(module, comm.size(), step)));
    }
    if (!setToNone) {
      // Gradient views: the two small float32 parameters share one bucket, back to back.
      const torch::Tensor a = module.parameter(3).grad(), b = module.parameter(5).grad();
      const torch::Tensor c = module.parameter(2).grad();
      CHECK(c.is_alias_of(b));
      CHECK_FALSE(a.is_alias_of(b));  // the big one has its own bucket
    }
  }
  // A bucket the core packed (these are too small for the split all-reduce) was switched to
  // copying its new gradients into the bucket after its first step: no pack pass afterwards.
  for (const ringsync::BucketTiming& t : ddp.lastStepBuckets()) CHECK(std::string(t.path) != "packed");
}

TEST_CASE("ddp: after zero_grad(set_to_none) CPU gradients are averaged where backward put them", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  // One bucket of two tensors, large enough for the split all-reduce on more than one rank (which
  // reduces the tensors where they lie), within its shared-memory slot.
  ParameterModule module({{torch::kFloat, 20000}, {torch::kFloat, 30001}});
  rt::DistributedDataParallelOptions options;
  options.overlap = true;  // the hooks hand each gradient over during backward
  rt::DistributedDataParallel ddp(comm, module, options);
  REQUIRE(ddp.bucketCount() == 1);
  // One rank, or ranks across nodes (the ring): the core packs the bucket, so it is copied into the
  // bucket from the second step on.
  const bool inPlace = comm.size() > 1 && comm.localSize() == comm.size();
  bool ok = true;
  std::string paths;
  for (int step = 0; step < 4; ++step) {
    module.zero_grad();  // set_to_none: backward allocates both .grad tensors anew
    backwardClosedForm(module, comm.rank(), step);
    const torch::Tensor made = module.parameter(0).grad();
    ddp.synchronize();
    ok = ok && gradientsAreAverages(module, comm.size(), step);
    // Averaged in the tensor backward made, not copied into the bucket.
    if (inPlace) ok = ok && module.parameter(0).grad().is_same(made) && !made.is_alias_of(module.parameter(1).grad());
    paths += std::string(ddp.lastStepBuckets().at(0).path) + " ";
  }
  INFO("paths: " << paths);
  CHECK(paths == (inPlace ? "scattered scattered scattered scattered " : "packed in place in place in place "));
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: overlap unset, GradientAverager's rule decides (host buckets)", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  // The rule itself is tested with the averager (test_averager, test_units); here DDP hands it on.
  std::vector<float> buffer(10);
  const ringsync::GradientAverager plain(comm, {{buffer.data(), buffer.size(), ringsync::DataType::kFloat32}});
  ParameterModule module({{torch::kFloat, 1000}, {torch::kDouble, 3}});
  rt::DistributedDataParallel ddp(comm, module);
  CHECK(ddp.overlapping() == plain.overlapping());
  bool ok = true;
  for (int step = 0; step < 2; ++step) {
    module.zero_grad();
    backwardClosedForm(module, comm.rank(), step);
    ddp.synchronize();
    ok = ok && gradientsAreAverages(module, comm.size(), step);
  }
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: CUDA parameters on this rank's GPU (SKIPPED without one)", "[torch][ddp][gpu]") {
#ifndef RINGSYNC_TEST_TORCH_WITH_CUDA
  SUCCEED("SKIPPED: this ringsync::torch carries no CUDA tensors (ringsync or libtorch built without CUDA)");
#else
  if (!torch::cuda::is_available()) {
    WARN("SKIPPED: no CUDA device (torch::cuda::is_available() is false)");
    return;
  }
  Communicator comm(MPI_COMM_WORLD);
  const int device = comm.cudaDevice() >= 0 ? comm.cudaDevice() : 0;
  ParameterModule module({{torch::kHalf, 1021}, {torch::kFloat, 300007}, {torch::kDouble, 77}, {torch::kBFloat16, 5}});
  module.to(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device)));
  rt::DistributedDataParallel ddp(comm, module);
  bool ok = true;
  for (bool setToNone : {true, false}) {
    for (int step = 0; step < 3; ++step) {
      module.zero_grad(setToNone);
      backwardClosedForm(module, comm.rank(), step);
      ddp.synchronize();
      ok = ok && gradientsAreAverages(module, comm.size(), step);
    }
  }
  REQUIRE(allRanks(ok));
#endif
}

TEST_CASE("ddp: zero_grad(false) keeps the gradients in place", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 100}, {torch::kFloat, 7}});
  rt::DistributedDataParallel ddp(comm, module);
  backwardClosedForm(module, comm.rank(), 0);
  ddp.synchronize();
  void* where = module.parameter(0).grad().data_ptr();
  bool ok = true;
  for (int step = 1; step < 4; ++step) {
    module.zero_grad(/*set_to_none=*/false);
    backwardClosedForm(module, comm.rank(), step);
    ddp.synchronize();
    ok = ok && gradientsAreAverages(module, comm.size(), step) && module.parameter(0).grad().data_ptr() == where;
  }
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: construction copies rank 0's parameters and buffers", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  const double rank = comm.rank();
  ParameterModule module({{torch::kFloat, 10}, {torch::kDouble, 3}});
  {
    const torch::NoGradGuard noGrad;
    module.parameter(0).fill_(rank + 0.5);
    module.parameter(1).fill_(-rank);
  }
  torch::Tensor count = module.register_buffer("count", torch::full({4}, comm.rank() + 10, torch::kLong));
  torch::Tensor flags = module.register_buffer("flags", torch::full({3}, comm.rank() == 0, torch::kBool));
  torch::Tensor shorts = module.register_buffer("shorts", torch::full({5}, comm.rank() * 3, torch::kShort));
  rt::DistributedDataParallel ddp(comm, module);
  bool ok = torch::equal(module.parameter(0), torch::full({10}, 0.5f)) &&
            torch::equal(module.parameter(1), torch::zeros({3}, torch::kDouble)) &&
            torch::equal(count, torch::full({4}, 10, torch::kLong)) && flags.all().item<bool>() &&
            torch::equal(shorts, torch::zeros({5}, torch::kShort));
  count.fill_(comm.rank() + 20);
  ddp.broadcastBuffers();
  ok = ok && torch::equal(count, torch::full({4}, 20, torch::kLong));
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: ranks with different models get MismatchError naming them", "[torch][ddp][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("one rank cannot disagree with itself");
    return;
  }
  const bool odd = comm.rank() == 1;
  std::string message;
  try {
    ParameterModule extra(odd ? std::vector<ringsync::testing::ParameterSpec>{{torch::kFloat, 4}, {torch::kFloat, 4}}
                              : std::vector<ringsync::testing::ParameterSpec>{{torch::kFloat, 4}});
    rt::DistributedDataParallel ddp(comm, extra);
  } catch (const ringsync::MismatchError& e) {
    message = e.what();
  }
  INFO(message);
  bool named = message.find("rank 1 holds 2 parameters and 0 buffers, rank 0 1 and 0") != std::string::npos;
  try {
    ParameterModule shaped({{torch::kFloat, 4}, {odd ? torch::kDouble : torch::kFloat, 6}});
    rt::DistributedDataParallel ddp(comm, shaped);
    message.clear();
  } catch (const ringsync::MismatchError& e) {
    message = e.what();
  }
  INFO(message);
  named = named &&
          message.find("rank(s) 1 differ from rank 0 first at tensor 1 (this rank's is 'p1'") != std::string::npos;
  REQUIRE(allRanks(named));
}

TEST_CASE("ddp: a parameter without a gradient on some rank counts as zero", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 9}, {torch::kDouble, 6}});
  rt::DistributedDataParallel ddp(comm, module);
  module.zero_grad();
  // Parameter 1 takes part in rank 0's loss only.
  torch::Tensor loss = (module.parameter(0) * 2.0f).sum().to(torch::kDouble);
  if (comm.rank() == 0) loss = loss + (module.parameter(1) * 3.0).sum();
  loss.backward();
  ddp.synchronize();
  const bool ok = torch::equal(module.parameter(0).grad(), torch::full({9}, 2.0f)) &&
                  torch::equal(module.parameter(1).grad(), torch::full({6}, 3.0 / comm.size(), torch::kDouble));
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: noSync() accumulates micro-batches, the next backward starts the buckets", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 12}, {torch::kFloat, 5}});
  rt::DistributedDataParallel ddp(comm, module);
  module.zero_grad();
  {
    auto accumulating = ddp.noSync();
    backwardClosedForm(module, comm.rank(), 0);
    backwardClosedForm(module, comm.rank(), 1);
    CHECK_THROWS_AS(ddp.synchronize(), ringsync::InvalidArgument);
  }
  backwardClosedForm(module, comm.rank(), 2);
  ddp.synchronize();
  // Summed over steps 0, 1, 2 and averaged over ranks: 3 (n + 1) / 2 + 3 + 3 (i % 7).
  bool ok = true;
  const int n = comm.size();
  for (std::size_t p = 0; p < 2; ++p) {
    const torch::Tensor i = torch::arange(module.parameter(p).numel(), torch::kDouble);
    ok = ok && torch::equal(module.parameter(p).grad().to(torch::kDouble), 3.0 * (n + 1) / 2 + 3 + 3 * (i % 7));
  }
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: a second backward before synchronize() is refused by name", "[torch][ddp][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 8}});
  rt::DistributedDataParallel ddp(comm, module);
  module.zero_grad();
  backwardClosedForm(module, comm.rank(), 0);
  std::string message;
  try {
    backwardClosedForm(module, comm.rank(), 1);
  } catch (const ringsync::InvalidArgument& e) {
    message = e.what();
  }
  INFO(message);
  bool ok = message.find("parameter 'p0' received a second gradient before synchronize()") != std::string::npos;
  ddp.synchronize();  // the step that was started completes
  ok = ok && gradientsAreAverages(module, comm.size(), 0);
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: a gradient of the wrong shape is refused before anything is sent", "[torch][ddp][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 8}, {torch::kFloat, 3}});
  rt::DistributedDataParallel ddp(comm, module);
  module.parameter(1).mutable_grad() = torch::zeros({4});
  std::string message;
  try {
    ddp.synchronize();
  } catch (const ringsync::InvalidArgument& e) {
    message = e.what();
  }
  INFO(message);
  bool ok = message.find("parameter 'p1' has a gradient that is a float32 tensor of shape [4] on cpu") !=
            std::string::npos;
  module.zero_grad();
  backwardClosedForm(module, comm.rank(), 0);
  ddp.synchronize();
  ok = ok && gradientsAreAverages(module, comm.size(), 0);
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: destroyed, it leaves the hooks and valid gradients behind", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 6}});
  {
    rt::DistributedDataParallel ddp(comm, module);
    backwardClosedForm(module, comm.rank(), 0);
    ddp.synchronize();
  }
  bool ok = gradientsAreAverages(module, comm.size(), 0);  // the view outlives its bucket's owner
  module.zero_grad();
  backwardClosedForm(module, comm.rank(), 0);  // no hook: this rank's own gradient
  const torch::Tensor i = torch::arange(6, torch::kDouble);
  ok = ok && torch::equal(module.parameter(0).grad().to(torch::kDouble), comm.rank() + 1 + (i % 7));
  REQUIRE(allRanks(ok));
}

TEST_CASE("ddp: a parameter registered under two names is averaged once", "[torch][ddp]") {
  Communicator comm(MPI_COMM_WORLD);
  ParameterModule module({{torch::kFloat, 11}});
  module.register_parameter("tied", module.parameter(0));  // tied weights: one tensor, two names
  rt::DistributedDataParallel ddp(comm, module);
  module.zero_grad();
  const torch::Tensor mine = ringsync::testing::closedForm(11, comm.rank(), 0);
  (module.parameter(0).to(torch::kDouble) * mine).sum().backward();
  ddp.synchronize();
  const torch::Tensor expected = ringsync::testing::closedForm(11, (comm.size() - 1) / 2.0, 0);
  REQUIRE(allRanks(ddp.parameterCount() == 1 && torch::equal(module.parameter(0).grad().to(torch::kDouble), expected)));
}
