// The staged path's two CUDA steps, timed alone, in 1..N processes sharing one GPU at once:
//   download: cudaMemcpyAsync device -> pinned host on a non-blocking stream, then
//             cudaStreamSynchronize (what the staged path (stagedRun) does before the host collective)
//   upload:   cudaMemcpyAsync pinned host -> device, an event recorded behind it, then
//             cudaEventSynchronize (what the next call's hostBuffer() waits for)
// On the first H100 run (RESULTS 9) staged all-reduces of 8 B-16 KiB took ~200 us at 2 ranks and
// ~550 us at 4, in ~27 us steps, where 32 KiB took 29 us. If these two steps alone show the same
// cliff at 2 processes and not at 1, the cost is the GPU switching between the processes' contexts
// (no MPS), not ringsync. Every rank runs the same sizes in step (a barrier before each
// repetition); the figure is the slowest rank's median time per step.
// The second H100 session (RESULTS 9) found it in the upload (H2D copies up to 16 KiB: ~273 us at 2
// processes, ~547 us at 4, gone under MPS) and, with the three columns below, in any GPU work of a
// process's context (an empty kernel waits as long): the GPU's time slices between the contexts.
//   upload/ssync: the same copy waited for with cudaStreamSynchronize instead of the event
//   upload/kernel: no copy engine: a kernel reads the pinned host memory (mapped, UVA) and writes the device
//   kernel:       an empty kernel and cudaStreamSynchronize (any GPU work in the process's context)
//
//   mpirun -np 1|2|4 gpu_staging_latency [-b 8] [-e 256K] [-n 100] [-r 7]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include "cuda/device_memory.h"
#include "gpu_args.h"

using namespace ringsync;
using Clock = std::chrono::steady_clock;

namespace {

__global__ void copyFromMappedHost(unsigned char* device, const unsigned char* host, std::size_t bytes) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < bytes;
       i += std::size_t{gridDim.x} * blockDim.x)
    device[i] = host[i];
}

__global__ void emptyKernel() {}

// Seconds per step: `iterations` steps after a barrier, `repetitions` times, median.
template <typename Step> double timeStep(const bench::GpuSweepArgs& args, Step step) {
  step();  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < args.repetitions; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    for (int i = 0; i < args.iterations; ++i) step();
    samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / args.iterations);
  }
  return bench::median(samples);
}

double slowestRank(double seconds) {
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bench::GpuSweepArgs args{8, std::size_t{256} << 10, 100, 7};
  CLI::App app("gpu_staging_latency: the staged path's download and upload steps, timed alone (sizes x2)");
  bench::parseGpuSweepArgs(app, argc, argv, args);
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("SKIPPED: no CUDA device\n");
    MPI_Finalize();
    return 0;
  }
  RINGSYNC_CHECK_CUDA(cudaSetDevice(rank % devices));
  {
    cuda::DeviceBuffer device(args.maxBytes);
    cuda::PinnedBuffer host(args.maxBytes);
    cuda::Stream stream;
    cuda::Event uploaded;
    RINGSYNC_CHECK_CUDA(cudaMemset(device.data(), 1, args.maxBytes));
    RINGSYNC_CHECK_CUDA(cudaDeviceSynchronize());
    if (rank == 0) {
      std::printf(
          "# gpu_staging_latency: %d process(es) on %d GPU(s), %d steps x %d repetitions (median, slowest rank)\n",
          size, devices, args.iterations, args.repetitions);
      std::printf("# %12s %14s %14s %14s %14s %14s\n", "bytes", "download (us)", "upload (us)", "upload/ssync",
                  "upload/kernel", "kernel (us)");
    }
    for (std::size_t bytes = args.minBytes; bytes <= args.maxBytes; bytes *= 2) {
      const double download = slowestRank(timeStep(args, [&] {
        RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(host.data(), device.data(), bytes, cudaMemcpyDeviceToHost, stream.get()));
        stream.synchronize();
      }));
      const double upload = slowestRank(timeStep(args, [&] {
        RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream.get()));
        uploaded.record(stream.get());
        uploaded.synchronize();
      }));
      const double uploadStreamSync = slowestRank(timeStep(args, [&] {
        RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream.get()));
        stream.synchronize();
      }));
      const double uploadKernel = slowestRank(timeStep(args, [&] {
        const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((bytes + 255) / 256, 132));
        copyFromMappedHost<<<blocks, 256, 0, stream.get()>>>(static_cast<unsigned char*>(device.data()),
                                                             static_cast<const unsigned char*>(host.data()), bytes);
        RINGSYNC_CHECK_CUDA(cudaGetLastError());
        stream.synchronize();
      }));
      const double kernel = slowestRank(timeStep(args, [&] {
        emptyKernel<<<1, 1, 0, stream.get()>>>();
        RINGSYNC_CHECK_CUDA(cudaGetLastError());
        stream.synchronize();
      }));
      if (rank == 0)
        std::printf("  %12zu %14.2f %14.2f %14.2f %14.2f %14.2f\n", bytes, download * 1e6, upload * 1e6,
                    uploadStreamSync * 1e6, uploadKernel * 1e6, kernel * 1e6);
      if (bytes == 0) break;
    }
  }
  MPI_Finalize();
  return 0;
}
