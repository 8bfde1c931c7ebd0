// Host buffers never reach CUDA on a machine without a GPU. Runs under LD_PRELOAD of the call
// counter (cuda_call_counter.cc), which counts every CUDA runtime and NCCL function libringsync
// calls (check_interposer.cmake keeps that list complete). On a machine with an NVIDIA driver the
// library may ask cudaGetDeviceCount once and resolve its driver entry points once (the driver's
// pointer queries are not runtime calls), and must create no CUDA context.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/driver_api.h"
#include "ringsync/ringsync.h"
#include "src/device_path.h"
#include "src/device_probe.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

using CallsFn = long (*)(const char*);
using CalledFn = void (*)(char*, size_t);

CallsFn counter() { return reinterpret_cast<CallsFn>(dlsym(RTLD_DEFAULT, "ringsync_cuda_calls")); }

std::string calledNames() {
  auto called = reinterpret_cast<CalledFn>(dlsym(RTLD_DEFAULT, "ringsync_cuda_called"));
  char names[4096] = {};
  if (called) called(names, sizeof names);
  return names;
}

// Every kind of host-buffer call a trainer makes, on several kinds of host memory.
void hostWorkload() {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  float onStack[17];
  for (float& x : onStack) x = 1.0f;
  comm.allreduce(onStack, onStack, 17, DataType::kFloat32, ReduceOp::kSum);
  auto onHeap = std::make_unique<double[]>(100000);
  comm.allreduce(onHeap.get(), onHeap.get(), 100000, DataType::kFloat64, ReduceOp::kMax);
  std::vector<std::int8_t> send(1000, 1), recv(1000);
  comm.allreduce(send.data(), recv.data(), send.size(), DataType::kInt8, ReduceOp::kSum);
  // A stream argument with host buffers: ignored, the host ring runs.
  comm.allreduce(send.data(), recv.data(), send.size(), DataType::kInt8, ReduceOp::kSum,
                 reinterpret_cast<CUstream_st*>(0x1));
  comm.allreduce(nullptr, nullptr, 0, DataType::kUInt32, ReduceOp::kMin);
  comm.broadcast(onHeap.get(), 100000, DataType::kFloat64, n - 1);
  std::vector<std::int32_t> all(static_cast<std::size_t>(n));
  std::int32_t mine = comm.rank();
  comm.allgather(&mine, all.data(), 1, DataType::kInt32);
  comm.barrier();
  Communicator other = comm.duplicate();
  other.allreduce(onStack, onStack, 17, DataType::kFloat32, ReduceOp::kAvg);
  (void)comm.lastPlacement();
  CHECK(onStack[3] == static_cast<float>(n));
  CHECK(recv[999] == n);
}

}  // namespace

TEST_CASE("host path: the call counter is loaded and counts", "[cuda-free]") {
  const CallsFn calls = counter();
  REQUIRE(test::allRanks(calls != nullptr));  // LD_PRELOAD=libringsync_cuda_call_counter.so missing?
  const long before = calls(nullptr);
  int devices = 0;
  cudaGetDeviceCount(&devices);  // the test's own call: must be seen
  cudaGetLastError();
  REQUIRE(test::allRanks(calls(nullptr) - before == 2 && calls("cudaGetDeviceCount") >= 1));
}

TEST_CASE("host path: host-buffer collectives make no CUDA or NCCL call without a GPU", "[cuda-free]") {
  const CallsFn calls = counter();
  REQUIRE(test::allRanks(calls != nullptr));
  const long before = calls(nullptr);
  const long countBefore = calls("cudaGetDeviceCount");
  const long entryPointsBefore = calls("cudaGetDriverEntryPointByVersion");
  hostWorkload();
  const long made = calls(nullptr) - before;
  INFO("CUDA/NCCL functions called so far: " << calledNames());
  if (detail::gpuDriverPresent()) {
    WARN(
        "an NVIDIA driver is present: checking that host buffers cost at most cudaGetDeviceCount (once) and the "
        "driver entry points (once), and that no CUDA context was created");
    const long counts = calls("cudaGetDeviceCount") - countBefore;
    const long entryPoints = calls("cudaGetDriverEntryPointByVersion") - entryPointsBefore;
    // No context: a host-only program on a GPU node must not hold memory on (or be refused by) GPU 0.
    const bool noContext = !cuda::anyContextExists(detail::visibleGpuCount());
    REQUIRE(test::allRanks(made == counts + entryPoints && counts <= 1 && entryPoints <= 5 && noContext));
  } else {
    REQUIRE(test::allRanks(made == 0));
  }
}

TEST_CASE("host path: without a GPU every rank agrees NCCL is unusable, with no CUDA call", "[cuda-free]") {
  if (detail::gpuDriverPresent()) {
    WARN("SKIPPED: an NVIDIA driver is present (the gpu-labelled tests cover the bootstrap there)");
    return;
  }
  const CallsFn calls = counter();
  REQUIRE(test::allRanks(calls != nullptr));
  const long before = calls(nullptr);
  Communicator comm(MPI_COMM_WORLD);  // for its duplicated MPI communicator
  Options options;
  detail::Logger logger(LogLevel::kWarn, comm.rank());
  auto device = detail::makeDevicePath({comm.mpiComm(), comm.rank(), comm.size(), comm.localRank(), &options, &logger});
  float x = 0;
  std::string why;
  detail::Deadline deadline(detail::CallHeader{}, options.timeoutSeconds, 0, {});
  device->decideNccl(deadline);  // collective: the probes travel by MPI
  const bool usable = device->ncclUsable(&why);
  INFO(why);
  const bool ok = !usable && why == "rank 0: no NVIDIA driver on this machine" && device->device() == -1 &&
                  detail::classifyPointer(&x) == detail::MemoryKind::kHost && device->ncclDecided() &&
                  device->ncclUsable(&why) == false;
  REQUIRE(test::allRanks(ok && calls(nullptr) == before));
}
