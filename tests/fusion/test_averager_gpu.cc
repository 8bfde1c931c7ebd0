// GradientAverager on device gradients (label `gpu`): buckets packed by the batched kernel on the
// averager's stream after events recorded on the caller's "backward" stream, all-reduced through
// NCCL (1 rank) or the staged path (ranks sharing one GPU), with and without overlap, device and
// host gradients in one list. Without a GPU it is compiled and linked, and says SKIPPED.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "cuda/device_memory.h"
#include "fusion_model.h"
#include "gpu_test_support.h"

using namespace ringsync;
using test::Model;

namespace {

// Device copies of a host model's gradients: the host model holds inputs and, after
// copyBack(), results.
struct DeviceGradients {
  DeviceGradients(Model& host, const std::vector<GradientBuffer>& shapes) : host_(host) {
    for (const GradientBuffer& g : shapes) {
      memory_.emplace_back(g.count * dataTypeSize(g.type));
      buffers_.push_back({memory_.back().data(), g.count, g.type});
    }
  }
  // "Backward": each gradient is written on `stream` and marked ready there, last first.
  void produce(GradientAverager& averager, cudaStream_t stream) {
    for (std::size_t g = buffers_.size(); g-- > 0;) {
      RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(buffers_[g].data, host_.data(g), bytes(g), cudaMemcpyHostToDevice, stream));
      averager.markReady(g, stream);
    }
  }
  void copyBack() {
    for (std::size_t g = 0; g < buffers_.size(); ++g)
      RINGSYNC_CHECK_CUDA(cudaMemcpy(host_.data(g), buffers_[g].data, bytes(g), cudaMemcpyDeviceToHost));
  }
  std::size_t bytes(std::size_t g) const { return buffers_[g].count * dataTypeSize(buffers_[g].type); }

  Model& host_;
  std::vector<cuda::DeviceBuffer> memory_;
  std::vector<GradientBuffer> buffers_;
};

}  // namespace

TEST_CASE("averager on device gradients: exact averages, with and without overlap", "[gpu][fusion]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  std::vector<test::Layer> layers = test::floatLayers({300, 1, 0, 5000, 64, 1000, 17});
  layers.push_back({DataType::kFloat16, 129});
  layers.push_back({DataType::kFloat64, 70});
  cuda::Stream backward;
  for (bool overlap : {true, false}) {
    Model host(layers);
    DeviceGradients device(host, host.buffers());
    GradientAveragerOptions options;
    options.bucketBytes = 1024;
    options.firstBucketBytes = 256;
    options.overlap = overlap;
    GradientAverager averager(comm, device.buffers_, options);
    std::string wrong;
    for (int step = 0; step < 3; ++step) {
      host.fill(comm.rank(), step, ReduceOp::kAvg);
      device.produce(averager, backward.get());
      averager.synchronize();
      device.copyBack();
      if (wrong.empty()) wrong = host.check(comm.size(), step, ReduceOp::kAvg);
    }
    INFO("overlap " << overlap << ": " << wrong);
    REQUIRE(test::allRanks(wrong.empty()));
  }
}

TEST_CASE("averager on device gradients: host and device gradients in one list", "[gpu][fusion]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  Model onDevice(test::floatLayers({100, 2000, 3})), onHost(test::floatLayers({50, 7}));
  DeviceGradients device(onDevice, onDevice.buffers());
  std::vector<GradientBuffer> all = device.buffers_;
  for (const GradientBuffer& g : onHost.buffers()) all.push_back(g);
  GradientAverager averager(comm, all, GradientAveragerOptions{});
  onDevice.fill(comm.rank(), 0, ReduceOp::kSum);
  onHost.fill(comm.rank(), 0, ReduceOp::kSum);
  for (std::size_t g = 0; g < 3; ++g)
    RINGSYNC_CHECK_CUDA(cudaMemcpy(device.buffers_[g].data, onDevice.data(g), device.bytes(g), cudaMemcpyHostToDevice));
  averager.averageAll();  // default stream, then synchronize
  device.copyBack();
  // Both checked against the average (the averager's default op).
  const std::string wrong = onDevice.check(comm.size(), 0, ReduceOp::kAvg) +
                            onHost.check(comm.size(), 0, ReduceOp::kAvg);
  INFO(wrong);
  REQUIRE(test::allRanks(wrong.empty()));
}

// One NCCL communicator at a time per GPU (src/device_epochs.h): between an averager's first
// markReady and synchronize(), a device collective on another Communicator is refused on every
// rank, touching nothing; afterwards it runs.
TEST_CASE("averager on device gradients: other device collectives wait for synchronize", "[gpu][fusion]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  Model host(test::floatLayers({100, 30}));
  DeviceGradients device(host, host.buffers());
  GradientAverager averager(comm, device.buffers_, GradientAveragerOptions{});
  cuda::DeviceBuffer other(sizeof(float));
  const float one = 1.0f;
  RINGSYNC_CHECK_CUDA(cudaMemcpy(other.data(), &one, sizeof one, cudaMemcpyHostToDevice));
  host.fill(comm.rank(), 0, ReduceOp::kAvg);
  averager.markReady(1, nullptr);
  bool refused = false;
  try {
    comm.allreduce(other.data(), other.data(), 1, DataType::kFloat32, ReduceOp::kSum);
  } catch (const InvalidArgument& error) {
    refused = std::string(error.what()).find("synchronize") != std::string::npos;
  }
  averager.markReady(0, nullptr);
  averager.synchronize();
  comm.allreduce(other.data(), other.data(), 1, DataType::kFloat32, ReduceOp::kSum);
  float sum = 0;
  RINGSYNC_CHECK_CUDA(cudaMemcpy(&sum, other.data(), sizeof sum, cudaMemcpyDeviceToHost));
  REQUIRE(test::allRanks(refused && sum == static_cast<float>(comm.size())));
}
