// The C++ half of allreduce_overhead.py, loaded there with ctypes: the loops the Python call is
// compared against, timed in C++ on the caller's array. Bench code, so it is built with the bench
// (bench/CMakeLists.txt) against libringsync, not shipped in the ringsync Python module.
//
// A C interface (ctypes calls it without the GIL): no exception crosses it; a failure prints why
// and returns a negative time or a null handle.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <limits>

#include <mpi.h>

#include "ringsync/communicator.h"
#include "ringsync/options.h"

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

extern "C" {

// Collective over MPI_COMM_WORLD (MPI already initialised by `import ringsync`): a Communicator with
// the options from the environment, as ringsync.Communicator() makes it.
void* ringsync_loops_open() {
  try {
    return new ringsync::Communicator(MPI_COMM_WORLD, ringsync::Options::fromEnvironment());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ringsync_loops_open: %s\n", error.what());
    return nullptr;
  }
}

// Collective; before MPI is finalised.
void ringsync_loops_close(void* comm) { delete static_cast<ringsync::Communicator*>(comm); }

// Seconds for `iterations` in-place float32 sums of `data` through Communicator::allreduce.
double ringsync_loops_allreduce(void* comm, float* data, std::size_t count, std::size_t iterations) {
  try {
    auto& communicator = *static_cast<ringsync::Communicator*>(comm);
    const auto start = Clock::now();
    for (std::size_t i = 0; i < iterations; ++i)
      communicator.allreduce(data, data, count, ringsync::DataType::kFloat32, ringsync::ReduceOp::kSum);
    return secondsSince(start);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ringsync_loops_allreduce: %s\n", error.what());
    return -1;
  }
}

// The same with MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD, the host baseline.
double ringsync_loops_mpi_allreduce(float* data, std::size_t count, std::size_t iterations) {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    std::fprintf(stderr, "ringsync_loops_mpi_allreduce: count %zu exceeds MPI's int\n", count);
    return -1;
  }
  const auto start = Clock::now();
  for (std::size_t i = 0; i < iterations; ++i) {
    if (MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
      std::fprintf(stderr, "ringsync_loops_mpi_allreduce: MPI_Allreduce failed\n");
      return -1;
    }
  }
  return secondsSince(start);
}

}  // extern "C"
