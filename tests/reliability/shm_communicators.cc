// Many communicators on one node, all alive at once, each all-reducing exactly: what a program with
// an averager per model, or torch groups, holds. Run by run_small_shm.sh inside a mount namespace
// whose /dev/shm is a small tmpfs (a container's 64 MB by default): where the segments no longer
// fit, every rank must keep working (shared-memory rounds with smaller slots, or point-to-point),
// never die of SIGBUS, and all ranks of a communicator must choose alike.
//   shm_communicators <communicators> [<at least this many take split at 64 KiB> [<at most this many>]]
// Prints, on rank 0, one line per communicator with the algorithm its 64 KiB all-reduce took: split
// through shared-memory rounds, the ring where its rounds went through MPI point-to-point.
// Exit status: the number of wrong results or disagreements over all ranks (0: passed).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "closed_form.h"
#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {

// One all-reduce of the closed form's input; the number of wrong elements on this rank.
std::size_t wrongElements(Communicator& comm, std::size_t count) {
  const int n = comm.size();
  const DataType type = DataType::kFloat32;
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(closed_form::allreduceInput(ReduceOp::kSum, type, comm.rank(), n, i));
  comm.allreduce(data.data(), data.data(), count, type, ReduceOp::kSum);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i)
    wrong += data[i] != static_cast<float>(closed_form::allreduceExpected(ReduceOp::kSum, type, n, i));
  return wrong;
}

// Whether every rank of MPI_COMM_WORLD took the same algorithm (its name, hashed).
bool sameOnEveryRank(const std::string& algorithm) {
  unsigned long hash = 5381;
  for (char c : algorithm) hash = hash * 33 + static_cast<unsigned char>(c);
  unsigned long range[2] = {hash, ~hash};
  MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
  return range[0] == hash && ~range[1] == hash;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  const int communicators = argc > 1 ? std::atoi(argv[1]) : 16;
  const int wantSplit = argc > 2 ? std::atoi(argv[2]) : 0;
  const int mostSplit = argc > 3 ? std::atoi(argv[3]) : communicators;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long long failures = 0;
  int split = 0;
  {
    // Every other one a duplicate() of the first, as a GradientAverager or a torch group makes.
    std::vector<std::unique_ptr<Communicator>> comms;
    for (int c = 0; c < communicators; ++c)
      comms.push_back(c % 2 == 1 ? std::make_unique<Communicator>(comms.front()->duplicate())
                                 : std::make_unique<Communicator>(MPI_COMM_WORLD, Options::fromEnvironment()));
    for (int c = 0; c < communicators; ++c) {
      Communicator& comm = *comms[static_cast<std::size_t>(c)];
      std::string algorithm;
      for (std::size_t count : {std::size_t{1}, std::size_t{1021}, std::size_t{16387}, std::size_t{300001}}) {
        failures += static_cast<long long>(wrongElements(comm, count));
        if (!sameOnEveryRank(comm.lastPlacement().algorithm)) {
          std::fprintf(stderr, "rank %d: communicator %d, count %zu: ranks took different algorithms (%s here)\n", rank,
                       c, count, comm.lastPlacement().algorithm.c_str());
          ++failures;
        }
        if (count == 16387) algorithm = comm.lastPlacement().algorithm;
      }
      split += algorithm == "split";
      if (rank == 0) std::printf("communicator %d: 64 KiB all-reduce took %s\n", c, algorithm.c_str());
    }
  }
  if (split < wantSplit || split > mostSplit) {
    if (rank == 0)
      std::printf("%d of %d communicators took split (shared-memory rounds of 64 KiB), expected %d to %d\n", split,
                  communicators, wantSplit, mostSplit);
    ++failures;
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("shm_communicators: %d communicators, %lld failures\n", communicators, failures);
  return failures == 0 ? 0 : 1;
}
