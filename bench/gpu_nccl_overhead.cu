// What ringsync's NCCL path adds per call over calling ncclAllReduce directly (target: <= 2 us),
// at 1 rank on one GPU, 8 B to 256 MiB of float32. Two NCCL communicators on the same GPU: the
// one ringsync bootstraps inside its Communicator, and one this program creates; each side
// enqueues `iters` in-place sums on the same stream, interleaved, repeated (medians).
//   enqueue: host time to issue one call (where ringsync's checks, classification and
//            fingerprinting live; the GPU keeps running behind it)
//   total:   time per call including completion (stream synchronised after the loop)
//
//   mpirun -np 1 gpu_nccl_overhead [-b 8] [-e 256M] [-n 200] [-r 9]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "cuda/device_memory.h"
#include "gpu_args.h"
#include "perf_buffers.h"
#include "ringsync/ringsync.h"

using namespace ringsync;
using Clock = std::chrono::steady_clock;

namespace {

bench::GpuSweepArgs parseArgs(int argc, char** argv) {
  bench::GpuSweepArgs args{8, std::size_t{256} << 20, 200, 9};
  CLI::App app("gpu_nccl_overhead: ringsync's NCCL path against a bare ncclAllReduce, 1 rank (sizes x4)");
  bench::parseGpuSweepArgs(app, argc, argv, args);
  return args;
}

void checkNccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) throw BackendError(std::string(call) + " failed: " + ncclGetErrorString(result));
}

struct Sample {
  double enqueue;  // seconds per call, host side
  double total;    // seconds per call, until the stream drained
};

Sample timeCalls(int iterations, cudaStream_t stream, const std::function<void()>& call) {
  RINGSYNC_CHECK_CUDA(cudaStreamSynchronize(stream));
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) call();
  const auto issued = Clock::now();
  RINGSYNC_CHECK_CUDA(cudaStreamSynchronize(stream));
  const auto done = Clock::now();
  return {std::chrono::duration<double>(issued - start).count() / iterations,
          std::chrono::duration<double>(done - start).count() / iterations};
}

}  // namespace

int main(int argc, char** argv) try {
  MpiEnvironment mpi(&argc, &argv);
  const bench::GpuSweepArgs args = parseArgs(argc, argv);
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() != 1) throw InvalidArgument("run at 1 rank: this compares against a 1-rank ncclAllReduce");
  // The bare NCCL communicator and the buffer on the GPU ringsync's own NCCL communicator uses.
  const int device = comm.cudaDevice();
  if (const std::string why = bench::useDevice(device); !why.empty()) throw BackendError(why);
  ncclComm_t bare = nullptr;
  checkNccl(ncclCommInitAll(&bare, 1, &device), "ncclCommInitAll");
  cudaDeviceProp properties{};
  RINGSYNC_CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
  std::printf("# gpu_nccl_overhead: %s, float32 sum in place, %d calls x %d repetitions (medians, interleaved)\n",
              properties.name, args.iterations, args.repetitions);
  std::printf("# %12s %12s %12s %12s %12s %12s %12s\n", "bytes", "nccl enq us", "rs enq us", "enq +us", "nccl tot us",
              "rs tot us", "tot +us");
  cuda::Stream stream;
  cuda::DeviceBuffer data(args.maxBytes);
  RINGSYNC_CHECK_CUDA(cudaMemset(data.data(), 0, args.maxBytes));
  cudaStream_t s = stream.get();
  for (std::size_t bytes = args.minBytes; bytes <= args.maxBytes; bytes *= 4) {
    const std::size_t count = bytes / sizeof(float);
    auto ncclCall = [&] {
      checkNccl(ncclAllReduce(data.data(), data.data(), count, ncclFloat32, ncclSum, bare, s), "ncclAllReduce");
    };
    auto ringsyncCall = [&] { comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum, s); };
    const int iterations = bytes >= (std::size_t{16} << 20) ? std::max(10, args.iterations / 20) : args.iterations;
    timeCalls(iterations, s, ncclCall);  // warm-up (first ringsync call also bootstraps NCCL)
    timeCalls(iterations, s, ringsyncCall);
    std::vector<double> ncclEnqueue, ringsyncEnqueue, ncclTotal, ringsyncTotal;
    for (int r = 0; r < args.repetitions; ++r) {
      const Sample n = timeCalls(iterations, s, ncclCall);
      const Sample g = timeCalls(iterations, s, ringsyncCall);
      ncclEnqueue.push_back(n.enqueue * 1e6);
      ncclTotal.push_back(n.total * 1e6);
      ringsyncEnqueue.push_back(g.enqueue * 1e6);
      ringsyncTotal.push_back(g.total * 1e6);
    }
    const double ne = bench::median(ncclEnqueue), ge = bench::median(ringsyncEnqueue), nt = bench::median(ncclTotal),
                 gt = bench::median(ringsyncTotal);
    std::printf("  %12zu %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", bytes, ne, ge, ge - ne, nt, gt, gt - nt);
    std::fflush(stdout);
  }
  const Placement placement = comm.lastPlacement();
  std::printf("# ringsync placement: backend %s, device %d\n", placement.backend.c_str(), placement.device);
  ncclCommDestroy(bare);
  return placement.backend == "nccl" ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "gpu_nccl_overhead: %s\n", error.what());
  return 2;
}
