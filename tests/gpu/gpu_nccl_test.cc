// The NCCL backend through the public API on device buffers (label `gpu`; one rank per GPU, so
// CTest runs it at 1 rank on a one-GPU machine): every type and op, with the caller's stream and
// without, in place, broadcast, pointer classification (device, managed, pinned host), and the
// forced backends. Says SKIPPED without a GPU.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/device_memory.h"
#include "gpu_collective_checks.h"
#include "gpu_test_support.h"
#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {
Options withBackend(BackendChoice backend) {
  Options options;
  options.backend = backend;
  return options;
}
}  // namespace

TEST_CASE("nccl: all-reduce of device buffers, every type and op", "[gpu][nccl]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  cuda::Stream stream;
  std::string problems;
  for (DataType type : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      for (std::size_t count :
           {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1021}, std::size_t{(1 << 20) + 7}})
        for (CUstream_st* s : {stream.get(), static_cast<CUstream_st*>(nullptr)})
          problems += test::checkDeviceAllreduce(comm, type, op, count, count % 2 == 0, s, "nccl");
  INFO(problems);
  REQUIRE(problems.empty());
  REQUIRE(comm.lastPlacement().algorithm == "nccl");
}

TEST_CASE("nccl: reduce-scatter and all-gather of device buffers, every type and op", "[gpu][nccl]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD, withBackend(BackendChoice::kNccl));
  cuda::Stream stream;
  std::string problems;
  for (DataType type : kAllDataTypes) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1021}, std::size_t{(1 << 18) + 3}}) {
      for (CUstream_st* s : {stream.get(), static_cast<CUstream_st*>(nullptr)}) {
        for (ReduceOp op : kAllReduceOps)
          problems += test::checkDeviceReduceScatter(comm, type, op, count, count % 2 == 1, s, "nccl");
        problems += test::checkDeviceAllgather(comm, type, count, count % 2 == 1, s, "nccl");
      }
    }
  }
  INFO(problems);
  REQUIRE(problems.empty());
}

TEST_CASE("nccl: broadcast of device buffers", "[gpu][nccl]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD, withBackend(BackendChoice::kNccl));
  cuda::Stream stream;
  std::string problems;
  for (int root = 0; root < comm.size(); ++root)
    for (DataType type : {DataType::kInt8, DataType::kBFloat16, DataType::kFloat64})
      for (std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{300001}})
        problems += test::checkDeviceBroadcast(comm, type, count, root, stream.get(), "nccl");
  INFO(problems);
  REQUIRE(problems.empty());
}

TEST_CASE("nccl: managed memory is a device buffer, pinned host memory a host buffer", "[gpu][nccl]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  void* managedMemory = nullptr;
  void* pinnedMemory = nullptr;
  RINGSYNC_CHECK_CUDA(cudaMallocManaged(&managedMemory, 64 * sizeof(float)));
  RINGSYNC_CHECK_CUDA(cudaMallocHost(&pinnedMemory, 64 * sizeof(float)));
  auto* managed = static_cast<float*>(managedMemory);
  auto* pinned = static_cast<float*>(pinnedMemory);
  for (int i = 0; i < 64; ++i) managed[i] = pinned[i] = 1.0f;
  comm.allreduce(managed, managed, 64, DataType::kFloat32, ReduceOp::kSum);
  const std::string managedBackend = comm.lastPlacement().backend;
  comm.allreduce(pinned, pinned, 64, DataType::kFloat32, ReduceOp::kSum);
  const std::string pinnedBackend = comm.lastPlacement().backend;
  const float n = static_cast<float>(comm.size());
  const bool ok = managedBackend == "nccl" && pinnedBackend == "host-ring" && managed[63] == n && pinned[0] == n;
  cudaFree(managed);
  cudaFreeHost(pinned);
  INFO("managed ran on " << managedBackend << ", pinned on " << pinnedBackend);
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("nccl: forced backends on device buffers", "[gpu][nccl]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  cuda::DeviceBuffer buffer(1024 * sizeof(float));
  Communicator ring(MPI_COMM_WORLD, withBackend(BackendChoice::kRing));
  CHECK_THROWS_WITH(ring.allreduce(buffer.data(), buffer.data(), 1024, DataType::kFloat32, ReduceOp::kSum),
                    Catch::Contains("RINGSYNC_BACKEND=ring"));
  CHECK(ring.callCount() == 0);
  Communicator nccl(MPI_COMM_WORLD, withBackend(BackendChoice::kNccl));
  REQUIRE(test::checkDeviceAllreduce(nccl, DataType::kFloat32, ReduceOp::kMax, 4099, false, nullptr, "nccl").empty());
  Communicator staged(MPI_COMM_WORLD, withBackend(BackendChoice::kStaged));
  REQUIRE(
      test::checkDeviceAllreduce(staged, DataType::kFloat32, ReduceOp::kMax, 4099, false, nullptr, "staged").empty());
  // Host and device buffers in one call are refused before anything runs.
  std::vector<float> host(1024);
  CHECK_THROWS_AS(nccl.allreduce(host.data(), buffer.data(), 1024, DataType::kFloat32, ReduceOp::kSum),
                  InvalidArgument);
}

// allgather takes host buffers only: a device buffer is rejected before anything is sent -- no
// fingerprint round, no NCCL bootstrap (the call number does not advance, and a host collective
// right after it still matches on every rank).
TEST_CASE("nccl: a device-buffer allgather is rejected before any collective work", "[gpu][nccl]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);  // auto backend: the first device call would bootstrap NCCL
  cuda::DeviceBuffer device(sizeof(float) * 4 * static_cast<std::size_t>(comm.size()));
  const std::uint64_t before = comm.callCount();
  float* d = static_cast<float*>(device.data());
  REQUIRE_THROWS_AS(comm.allgather(d, d + 4 * comm.rank(), 4, DataType::kFloat32), InvalidArgument);
  REQUIRE(comm.callCount() == before);
  float x = 1.0f;
  comm.allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum);
  REQUIRE(x == static_cast<float>(comm.size()));
}
