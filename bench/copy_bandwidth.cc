// copy_bandwidth: the memory-traffic bound of the host ring, measured the way the ring uses memory.
// Every rank copies S bytes between two pre-touched buffers at the same time as the others (they
// share the memory system), and reports X = S/t per rank (a copy moves 2S: read + write), median
// over repetitions, the slowest rank's time. The ring's traffic per rank, each received segment
// reduced while still in cache: reduce-scatter, n-1 steps of S/n, reads the peer's chunk and its own
// and writes the sum (3S/n); all-gather, n-1 steps, copies S/n (2S/n): 5(n-1)S/n in all, so
// t >= 5(n-1)S/(2nX) and busbw = S/t * 2(n-1)/n <= 4X/5, with X measured at the same n
// (at np=2: 2.5 S per rank, busbw <= 0.8 X).
//   mpirun -np 2 build/bin/copy_bandwidth [-b 2M -e 128M -f 4 -n 9]
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "perf_args.h"

namespace {

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// S/t of one rank's copies of `bytes`, all ranks copying together; the slowest rank's time counts.
double copyRate(std::size_t bytes, int repetitions) {
  std::vector<char> source(bytes, 1), target(bytes, 0);  // touched here, outside the timed loop
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    std::memcpy(target.data(), source.data(), bytes);
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    seconds.push_back(elapsed);
    source[i % bytes] = target[(i * 7) % bytes];  // keep the copy observable
  }
  return static_cast<double>(bytes) / medianOf(seconds) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string first = "2M", last = "128M";
  int factor = 4, repetitions = 9;
  CLI::App app("copy_bandwidth: memcpy rate per rank with every rank copying at once");
  app.add_option("-b", first, "smallest size");
  app.add_option("-e", last, "largest size");
  app.add_option("-f", factor, "size factor");
  app.add_option("-n", repetitions, "repetitions per size (median)");
  CLI11_PARSE(app, argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0)
    std::printf("# copy_bandwidth: %d ranks copying at once; X = S/t per rank (GB/s); ring busbw bound = 0.8 X\n",
                size);
  if (rank == 0) std::printf("# %12s %10s %12s\n", "bytes", "X", "ring bound");
  for (std::size_t bytes = ringsync::bench::parseSize(first); bytes <= ringsync::bench::parseSize(last);
       bytes *= static_cast<std::size_t>(factor)) {
    const double rate = copyRate(bytes, repetitions);
    if (rank == 0) std::printf("  %12zu %10.2f %12.2f\n", bytes, rate, 0.8 * rate);
  }
  MPI_Finalize();
  return 0;
}
