// ShardedGradientAverager on device gradients and parameters (label `gpu`): each bucket packed by
// the batched kernel (or in place) and reduce-scattered on the averager's stream after the events of
// the caller's "backward" stream, the owned ranges unpacked; the parameters' shards "updated" on
// the caller's stream, marked there, all-gathered, and waited for on another stream (or the host).
// NCCL at 1 rank, the staged path for ranks sharing one GPU. Without a GPU it is compiled and
// linked, and says SKIPPED.
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

// Device copies of a host model's tensors (one allocation each, or one arena).
struct DeviceTensors {
  DeviceTensors(Model& host, bool arena) : host_(host) {
    const std::vector<GradientBuffer> shapes = host.buffers();
    std::size_t total = 0;
    for (const GradientBuffer& g : shapes) total += g.count * dataTypeSize(g.type);
    if (arena) memory_.emplace_back(total);
    std::size_t offset = 0;
    for (const GradientBuffer& g : shapes) {
      if (!arena) memory_.emplace_back(g.count * dataTypeSize(g.type));
      buffers_.push_back({static_cast<std::byte*>(memory_.back().data()) + (arena ? offset : 0), g.count, g.type});
      offset += g.count * dataTypeSize(g.type);
    }
  }
  std::size_t bytes(std::size_t g) const { return buffers_[g].count * dataTypeSize(buffers_[g].type); }
  void upload(std::size_t g, cudaStream_t stream) {
    RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(buffers_[g].data, host_.data(g), bytes(g), cudaMemcpyHostToDevice, stream));
  }
  void download() {
    for (std::size_t g = 0; g < buffers_.size(); ++g)
      RINGSYNC_CHECK_CUDA(cudaMemcpy(host_.data(g), buffers_[g].data, bytes(g), cudaMemcpyDeviceToHost));
  }

  Model& host_;
  std::vector<cuda::DeviceBuffer> memory_;
  std::vector<GradientBuffer> buffers_;
};

}  // namespace

TEST_CASE("sharded averager on device buffers: exact shards, identical gathered parameters", "[gpu][fusion][shard]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = static_cast<std::size_t>(comm.size());
  std::vector<test::Layer> layers = test::floatLayers({300, 1, 0, 5000, 64, 1000, n + 1, 5 * n});
  layers.push_back({DataType::kFloat16, 129});
  layers.push_back({DataType::kFloat64, 70});
  cuda::Stream backward, forward;
  for (bool arena : {false, true})
    for (bool overlap : {true, false})
      for (bool hostWait : {false, true}) {
        // An arena needs one type: float32 only.
        const std::vector<test::Layer> used(layers.begin(), arena ? layers.end() - 2 : layers.end());
        Model grads(used), params(used);
        DeviceTensors deviceGrads(grads, arena), deviceParams(params, arena);
        GradientAveragerOptions options;
        options.bucketBytes = 1024;
        options.firstBucketBytes = 256;
        options.overlap = overlap;
        ShardedGradientAverager averager(comm, deviceGrads.buffers_, deviceParams.buffers_, options);
        std::string wrong;
        for (int step = 0; step < 2; ++step) {
          grads.fill(comm.rank(), step, ReduceOp::kAvg);
          params.scramble(static_cast<std::uint8_t>(0x31 + comm.rank()));
          for (std::size_t g = 0; g < used.size(); ++g) deviceParams.upload(g, backward.get());
          for (std::size_t g = used.size(); g-- > 0;) {
            deviceGrads.upload(g, backward.get());
            averager.markReady(g, backward.get());
          }
          averager.synchronize();
          for (std::size_t g = 0; g < used.size(); ++g) {  // the update: the averaged shard into the parameter
            const ShardRange own = averager.shard(g);
            const std::size_t size = dataTypeSize(used[g].type);
            if (!own.empty())
              RINGSYNC_CHECK_CUDA(
                  cudaMemcpyAsync(static_cast<std::byte*>(deviceParams.buffers_[g].data) + own.begin * size,
                                  static_cast<std::byte*>(deviceGrads.buffers_[g].data) + own.begin * size,
                                  own.count() * size, cudaMemcpyDeviceToDevice, backward.get()));
            averager.markUpdated(g, backward.get());
          }
          for (std::size_t g = 0; g < used.size(); ++g)
            hostWait ? averager.waitForParameter(g) : averager.waitForParameter(g, forward.get());
          averager.gatherParameters();
          forward.synchronize();
          deviceParams.download();
          if (wrong.empty()) wrong = params.check(comm.size(), step, ReduceOp::kAvg);
        }
        const std::vector<std::uint8_t> bytes = params.bytes();
        INFO("arena " << arena << " overlap " << overlap << " host wait " << hostWait << ": " << wrong);
        REQUIRE(test::allRanks(wrong.empty() && test::identicalOnAllRanks(bytes.data(), bytes.size())));
      }
}
