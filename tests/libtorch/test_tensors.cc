// <ringsync/torch.h> below DistributedDataParallel: the dtype table, one-tensor collectives with
// their refusals, the bucket plan, and which NCCL the process loaded.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <torch/torch.h>

#include "ringsync/errors.h"
#include "ringsync/torch.h"
#include "src/torch/bucket_layout.h"
#include "support/test_support.h"

namespace rt = ringsync::torch;
using ringsync::Communicator;
using ringsync::DataType;
using ringsync::ReduceOp;
using ringsync::test::allRanks;

TEST_CASE("tensors: every ringsync dtype maps to torch's and back", "[torch][tensors]") {
  for (DataType type : ringsync::kAllDataTypes) {
    INFO(ringsync::dataTypeName(type));
    CHECK(rt::dataTypeOf(rt::scalarTypeOf(type)) == type);
  }
  CHECK_FALSE(rt::dataTypeOf(torch::kBool).has_value());
  CHECK_FALSE(rt::dataTypeOf(torch::kShort).has_value());
  CHECK_FALSE(rt::dataTypeOf(torch::kComplexFloat).has_value());
}

TEST_CASE("tensors: allreduce sums every dtype exactly, broadcast copies any dtype", "[torch][tensors]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size(), r = comm.rank();
  bool ok = true;
  for (DataType type : ringsync::kAllDataTypes) {
    // rank r holds r + 1 + i % 7: the sum is n (n + 1) / 2 + n (i % 7), exact in every type here.
    const torch::Tensor i = torch::arange(13, torch::kDouble);
    const torch::Tensor t = (r + 1 + i.remainder(7)).to(rt::scalarTypeOf(type));
    rt::allreduce(comm, t, ReduceOp::kSum);
    const bool same = torch::equal(t.to(torch::kDouble), n * (n + 1) / 2.0 + n * i.remainder(7));
    if (!same) std::printf("rank %d: allreduce of %s wrong\n", r, ringsync::dataTypeName(type));
    ok = ok && same;
  }
  for (torch::Dtype dtype : {torch::kShort, torch::kBool, torch::kComplexFloat, torch::kFloat8_e4m3fn}) {
    const torch::Tensor t = torch::full({9}, r == 0 ? 1 : 0, torch::kInt).to(dtype);
    rt::broadcast(comm, t, /*root=*/0);
    ok = ok && torch::equal(t.to(torch::kInt), torch::ones({9}, torch::kInt));
  }
  REQUIRE(allRanks(ok));
}

TEST_CASE("tensors: what ringsync cannot carry is refused by name, nothing sent", "[torch][tensors][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  const auto refusal = [&](const torch::Tensor& t) -> std::string {
    try {
      rt::allreduce(comm, t, ReduceOp::kSum);
    } catch (const ringsync::InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  const std::string transposed = refusal(torch::ones({3, 4}).t());
  const std::string boolean = refusal(torch::ones({4}, torch::kBool));
  const std::string undefined = refusal(torch::Tensor());
  INFO(transposed << "\n" << boolean << "\n" << undefined);
  bool ok = transposed.find("float32 tensor of shape [4, 3] on cpu is not a contiguous dense tensor") !=
                std::string::npos &&
            boolean.find("torch dtype Bool tensor of shape [4]") != std::string::npos &&
            undefined.find("the tensor is undefined") != std::string::npos;
  // The ranks are still in step: the next call is the first one anybody sent.
  const torch::Tensor t = torch::ones({5});
  rt::allreduce(comm, t, ReduceOp::kSum);
  ok = ok && torch::equal(t, torch::full({5}, static_cast<float>(comm.size())));
  REQUIRE(allRanks(ok));
}

TEST_CASE("bucket plan: reverse order, a small first bucket, one dtype per bucket", "[torch][unit]") {
  using ringsync::torch::detail::ParameterShape;
  const c10::Device cpu(c10::kCPU);
  // float32 sizes in elements; parameter 4 is double, parameter 1 alone fills a bucket.
  const std::vector<ParameterShape> shapes = {{100, torch::kFloat, cpu}, {5000, torch::kFloat, cpu},
                                              {30, torch::kFloat, cpu},  {40, torch::kFloat, cpu},
                                              {10, torch::kDouble, cpu}, {50, torch::kFloat, cpu}};
  const auto buckets = ringsync::torch::detail::planBuckets(shapes, /*bucketBytes=*/1000, /*firstBucketBytes=*/300);
  // Walking back from parameter 5: {5} (200 bytes) is the first bucket, closed when 3 would take it
  // past 300; double {4} has a bucket of its own kind; {1} (20000 bytes) is alone; {3, 2, 0} (680
  // bytes) stays under 1000. Launch order: by lowest parameter, descending.
  REQUIRE(buckets.size() == 4);
  CHECK((buckets[0].parameters == std::vector<std::size_t>{5}));
  CHECK(buckets[0].count == 50);
  CHECK((buckets[1].parameters == std::vector<std::size_t>{4}));
  CHECK(buckets[1].dtype == torch::kDouble);
  CHECK((buckets[2].parameters == std::vector<std::size_t>{1}));
  CHECK((buckets[3].parameters == std::vector<std::size_t>{0, 2, 3}));
  CHECK((buckets[3].offsets == std::vector<std::size_t>{0, 100, 130}));
  CHECK(buckets[3].count == 170);
  std::set<std::size_t> seen;
  for (const auto& b : buckets) seen.insert(b.parameters.begin(), b.parameters.end());
  CHECK(seen.size() == shapes.size());
}

TEST_CASE("the process loads torch's NCCL, not the toolkit's", "[torch][cuda-runtime]") {
#ifdef RINGSYNC_TEST_TORCH_NCCL
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> loaded;
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash != std::string::npos && line.find("libnccl.so") != std::string::npos) loaded.insert(line.substr(slash));
  }
  INFO("expected " << RINGSYNC_TEST_TORCH_NCCL);
  for (const std::string& path : loaded) INFO("loaded " << path);
  REQUIRE((loaded == std::set<std::string>{RINGSYNC_TEST_TORCH_NCCL}));
#else
  SUCCEED("SKIPPED: this build links no NCCL of torch's (no CUDA in ringsync, or torch brings none)");
#endif
}
