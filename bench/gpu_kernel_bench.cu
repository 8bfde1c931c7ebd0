// Bandwidth of ringsync's CUDA kernels against a device-to-device cudaMemcpy of the same bytes on
// the same GPU (the target: >= 80% of the copy's bandwidth). Bandwidth counts bytes read plus
// written: copy and divide (kAvg's division by the rank count) move 2S, reduce (out = a + b) 3S, pack/unpack 2S.
// Medians of several timed repetitions (CUDA events around `iters` back-to-back launches on one stream).
//
//   gpu_kernel_bench [-b 1M] [-e 1G] [-d float] [-n 20] [-r 7] [--tensors 256]
// Rank-free: run it without mpirun. Prints a table and exits non-zero when a kernel's result is wrong.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include "cuda/device_memory.h"
#include "cuda/elementwise_kernels.h"
#include "cuda/pack_kernels.h"
#include "gpu_args.h"
#include "perf_pattern.h"
#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {

struct Args : bench::GpuSweepArgs {
  DataType type = DataType::kFloat32;
  std::size_t tensors = 256;
};

Args parseArgs(int argc, char** argv) {
  Args args{{std::size_t{1} << 20, std::size_t{1} << 30, 20, 7}};
  std::string type = "float32";
  CLI::App app("gpu_kernel_bench: ringsync's CUDA kernels against a device-to-device copy (sizes double)");
  app.add_option("-d", type, "data type");
  app.add_option("--tensors", args.tensors, "tensors per pack/unpack launch")->check(CLI::PositiveNumber);
  bench::parseGpuSweepArgs(app, argc, argv, args);
  const auto parsed = parseDataType(type);
  if (!parsed) throw InvalidArgument("-d " + type + ": unknown type");
  args.type = *parsed;
  return args;
}

// Median over `repetitions` of the seconds per launch of `iterations` launches of `body`.
double medianSeconds(const Args& args, cudaStream_t stream, const std::function<void()>& body) {
  cuda::Event start(true), stop(true);
  body();  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < args.repetitions; ++r) {
    start.record(stream);
    for (int i = 0; i < args.iterations; ++i) body();
    stop.record(stream);
    stop.synchronize();
    samples.push_back(stop.millisecondsSince(start) / 1e3 / args.iterations);
  }
  return bench::median(samples);
}

// Fills `count` elements with the small integer `value` (exact in every type) via the host.
void fill(void* device, std::size_t count, DataType type, double value) {
  std::vector<std::byte> host(count * dataTypeSize(type));
  bench::PeriodicPattern(type, 1024, [value](std::size_t) { return value; }).fill(host.data(), count);
  RINGSYNC_CHECK_CUDA(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice));
  // A pageable cudaMemcpy may return before its DMA lands (ordered only on the legacy stream,
  // which the benchmark's stream does not wait for).
  RINGSYNC_CHECK_CUDA(cudaDeviceSynchronize());
}

// True when the first and last element of `device` equal those of a buffer filled with `value`.
bool holds(const void* device, std::size_t count, DataType type, double value) {
  const std::size_t size = dataTypeSize(type);
  cuda::DeviceBuffer reference(2 * size);
  fill(reference.data(), 2, type, value);
  std::vector<unsigned char> want(2 * size), got(2 * size);
  RINGSYNC_CHECK_CUDA(cudaMemcpy(want.data(), reference.data(), 2 * size, cudaMemcpyDeviceToHost));
  RINGSYNC_CHECK_CUDA(cudaMemcpy(got.data(), device, size, cudaMemcpyDeviceToHost));
  RINGSYNC_CHECK_CUDA(cudaMemcpy(got.data() + size, static_cast<const unsigned char*>(device) + (count - 1) * size,
                                 size, cudaMemcpyDeviceToHost));
  return got == want;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parseArgs(argc, argv);
  cudaDeviceProp properties{};
  int device = 0;
  RINGSYNC_CHECK_CUDA(cudaGetDevice(&device));
  RINGSYNC_CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
  std::printf("# gpu_kernel_bench: %s, type %s, %d launches x %d repetitions (median)\n", properties.name,
              dataTypeName(args.type), args.iterations, args.repetitions);
  std::printf("# GB/s = (bytes read + bytes written) / time; ratio = kernel GB/s / copy GB/s\n");
  std::printf("# %12s %10s %10s %6s %10s %6s %10s %6s %10s %6s %s\n", "bytes", "copy", "reduce", "ratio", "divide",
              "ratio", "pack", "ratio", "unpack", "ratio", "check");
  cuda::Stream stream;
  const std::size_t size = dataTypeSize(args.type);
  bool allRight = true;
  for (std::size_t bytes = args.minBytes; bytes <= args.maxBytes; bytes *= 2) {
    const std::size_t count = bytes / size;
    cuda::DeviceBuffer a(bytes), b(bytes), out(bytes), buffer(bytes);
    fill(a.data(), count, args.type, 1);
    fill(b.data(), count, args.type, 2);
    // `tensors` equal slices of `a`, packed densely into `buffer`.
    const std::size_t tensors = std::max<std::size_t>(1, std::min(args.tensors, count));
    std::vector<cuda::PackEntry> entries;
    for (std::size_t t = 0, offset = 0; t < tensors; ++t) {
      const std::size_t n = count / tensors + (t < count % tensors ? 1 : 0);
      entries.push_back({a.as<unsigned char>() + offset * size, offset, n});
      offset += n;
    }
    cuda::PackPlan plan(entries.data(), entries.size(), args.type);
    cudaStream_t s = stream.get();
    const double copy = medianSeconds(args, s, [&] {
      RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(out.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, s));
    });
    const double reduce = medianSeconds(args, s, [&] {
      cuda::reduce(out.data(), a.data(), b.data(), count, args.type, ReduceOp::kSum, s);
    });
    stream.synchronize();
    bool right = holds(out.data(), count, args.type, 3);
    const double divide = medianSeconds(args, s, [&] { cuda::divide(out.data(), b.data(), count, args.type, 2, s); });
    stream.synchronize();
    right = right && holds(out.data(), count, args.type, 1);
    const double pack = medianSeconds(args, s, [&] { plan.pack(buffer.data(), 1.0, s); });
    stream.synchronize();
    right = right && holds(buffer.data(), count, args.type, 1);
    const double unpack = medianSeconds(args, s, [&] { plan.unpack(buffer.data(), 1.0, s); });
    stream.synchronize();
    right = right && holds(a.data(), count, args.type, 1);
    allRight = allRight && right;
    auto gbps = [&](double moved, double seconds) { return moved / seconds / 1e9; };
    const double copyBw = gbps(2.0 * bytes, copy);
    std::printf("  %12zu %10.1f %10.1f %6.2f %10.1f %6.2f %10.1f %6.2f %10.1f %6.2f %s\n", bytes, copyBw,
                gbps(3.0 * bytes, reduce), gbps(3.0 * bytes, reduce) / copyBw, gbps(2.0 * bytes, divide),
                gbps(2.0 * bytes, divide) / copyBw, gbps(2.0 * bytes, pack), gbps(2.0 * bytes, pack) / copyBw,
                gbps(2.0 * bytes, unpack), gbps(2.0 * bytes, unpack) / copyBw, right ? "ok" : "WRONG");
    std::fflush(stdout);
  }
  std::printf("# %s\n", allRight ? "all results right" : "FAILED: some kernel results were wrong");
  return allRight ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "gpu_kernel_bench: %s\n", error.what());
  return 2;
}
