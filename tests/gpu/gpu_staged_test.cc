// The staged backend on device buffers (label `gpu`), at 1, 2 and 4 ranks sharing one GPU: forced
// with RINGSYNC_BACKEND=staged, and chosen by soft placement when NCCL declines ranks that share a
// GPU. Every type and op, the counts every collective is tested with, with and without a stream.
// Says SKIPPED without a GPU.
#include <catch2/catch.hpp>

#include <string>

#include "cuda/device_memory.h"
#include "gpu_collective_checks.h"
#include "gpu_test_support.h"
#include "ringsync/ringsync.h"

using namespace ringsync;

TEST_CASE("staged: all-reduce of device buffers, every type, op and count", "[gpu][staged]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Options options;
  options.backend = BackendChoice::kStaged;
  options.ringSegmentBytes = 4096;             // several segments per chunk at modest counts
  options.ringSegmentBytesAcrossNodes = 4096;  // the same cut should the ranks span nodes
  Communicator comm(MPI_COMM_WORLD, options);
  const auto n = static_cast<std::size_t>(comm.size());
  cuda::Stream stream;
  std::string problems;
  for (DataType type : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      for (std::size_t count :
           {std::size_t{0}, std::size_t{1}, n - 1, n, n + 1, std::size_t{1021}, std::size_t{100003}})
        for (CUstream_st* s : {stream.get(), static_cast<CUstream_st*>(nullptr)})
          problems += test::checkDeviceAllreduce(comm, type, op, count, count % 2 == 1, s, "staged");
  INFO(problems);
  REQUIRE(problems.empty());
}

TEST_CASE("staged: reduce-scatter and all-gather of device buffers, every type, op and count", "[gpu][staged]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Options options;
  options.backend = BackendChoice::kStaged;
  options.ringSegmentBytes = 4096;
  options.ringSegmentBytesAcrossNodes = 4096;
  Communicator comm(MPI_COMM_WORLD, options);
  const auto n = static_cast<std::size_t>(comm.size());
  cuda::Stream stream;
  std::string problems;
  for (DataType type : kAllDataTypes)
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, n + 1, std::size_t{1021}, std::size_t{100003}})
      for (CUstream_st* s : {stream.get(), static_cast<CUstream_st*>(nullptr)}) {
        for (ReduceOp op : kAllReduceOps)
          problems += test::checkDeviceReduceScatter(comm, type, op, count, count % 2 == 1, s, "staged");
        problems += test::checkDeviceAllgather(comm, type, count, count % 2 == 1, s, "staged");
      }
  INFO(problems);
  REQUIRE(problems.empty());
}

TEST_CASE("staged: broadcast of device buffers from every root", "[gpu][staged]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Options options;
  options.backend = BackendChoice::kStaged;
  Communicator comm(MPI_COMM_WORLD, options);
  cuda::Stream stream;
  std::string problems;
  for (int root = 0; root < comm.size(); ++root)
    for (std::size_t count : {std::size_t{0}, std::size_t{7}, std::size_t{1 << 20}})
      for (CUstream_st* s : {stream.get(), static_cast<CUstream_st*>(nullptr)})
        problems += test::checkDeviceBroadcast(comm, DataType::kFloat32, count, root, s, "staged");
  INFO(problems);
  REQUIRE(problems.empty());
}

TEST_CASE("staged: soft placement takes it when ranks share a GPU", "[gpu][staged]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);  // RINGSYNC_BACKEND=auto
  // NCCL needs one GPU per rank: with more ranks on this node than GPUs it must be declined.
  const bool shared = comm.localSize() > test::cudaDevices();
  const std::string want = shared ? "staged" : "nccl";
  std::string problems;
  for (DataType type : {DataType::kFloat16, DataType::kInt64, DataType::kFloat32})
    problems += test::checkDeviceAllreduce(comm, type, ReduceOp::kSum, 12345, false, nullptr, want);
  INFO(problems);
  REQUIRE(problems.empty());
}
