// The cost of RINGSYNC_TIMELINE per call, measured in one process so that launch-to-launch noise
// cancels: two communicators over the same ranks, one recording a timeline and one not, take turns
// running blocks of 8-byte all-reduces; the report gives the median per-call time of each and the
// median of the per-block differences, plus the heap allocations counted while the recording
// communicator ran (operator new is replaced below, which counts the library's allocations too).
//   mpirun -np 2 build/bin/timeline_overhead [blocks=200] [calls per block=500] [timeline path]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "ringsync/ringsync.h"

namespace {
std::atomic<unsigned long long> allocations{0};
}  // namespace

void* operator new(std::size_t bytes) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Seconds per call of `calls` 8-byte all-reduces on `comm` (the slowest rank's time); adds the
// heap allocations made during the calls to `*allocated`.
double block(ringsync::Communicator& comm, int calls, float* value, unsigned long long* allocated) {
  comm.barrier();
  const unsigned long long before = allocations.load();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    comm.allreduce(value, value, 2, ringsync::DataType::kFloat32, ringsync::ReduceOp::kMax);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
  *allocated += allocations.load() - before;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  ringsync::MpiEnvironment mpi(&argc, &argv);
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 200;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 500;
  ringsync::Options off = ringsync::Options::fromEnvironment();
  off.timelinePath.clear();
  ringsync::Options on = off;
  on.timelinePath = argc > 3 ? argv[3] : "/tmp/ringsync-timeline-overhead.json";
  int rank = 0;
  double offMedian = 0, onMedian = 0, differenceMedian = 0;
  unsigned long long onAllocations = 0, offAllocations = 0;
  long long onCalls = 0;
  {
    ringsync::Communicator plain(MPI_COMM_WORLD, off);
    ringsync::Communicator recording(MPI_COMM_WORLD, on);
    rank = plain.rank();
    float value[2] = {1.0f, 2.0f};
    unsigned long long warmUp = 0;
    block(plain, calls, value, &warmUp);
    block(recording, calls, value, &warmUp);
    std::vector<double> offTimes, onTimes, differences;
    for (int b = 0; b < blocks; ++b) {
      // Alternate which goes first, so neither always follows the barrier's wake-up.
      const bool onFirst = b % 2 == 1;
      double a = 0, c = 0;
      const auto runPlain = [&] { a = block(plain, calls, value, &offAllocations); };
      const auto runRecording = [&] { c = block(recording, calls, value, &onAllocations); };
      if (onFirst) {
        runRecording();
        runPlain();
      } else {
        runPlain();
        runRecording();
      }
      onCalls += calls;
      offTimes.push_back(a);
      onTimes.push_back(c);
      differences.push_back(c - a);
    }
    offMedian = median(offTimes);
    onMedian = median(onTimes);
    differenceMedian = median(differences);
  }  // the timeline is written at MPI_Finalize, outside the measurement
  if (rank == 0)
    std::printf(
        "# timeline_overhead: %d blocks x %d 8-byte all-reduces\n"
        "# off %.3f us/call  on %.3f us/call  median per-block difference %+.3f us/call\n"
        "# heap allocations during the timed calls: %llu recording, %llu not, in %lld calls each\n",
        blocks, calls, offMedian * 1e6, onMedian * 1e6, differenceMedian * 1e6, onAllocations, offAllocations, onCalls);
  std::fflush(stdout);
  return 0;
}
