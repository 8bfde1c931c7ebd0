// A host whose link goes down in the middle of all-reduces (run_netns_test.sh link_down: 2 hosts
// x 1 rank, 1 MiB, the ring; link_down_hierarchical: 2 hosts x 2 ranks, 4 MiB, the hierarchical
// all-reduce; the script takes hostB's veth down once `<dir>/ready` exists). Every rank must raise
// TimeoutError naming ranks on the other host; each writes what happened to `<dir>/rank<r>.txt` for the
// script to judge ("timeout <seconds in the failing call> <message>"), because neither MPI nor
// mpirun's output can be relied on across a dead link. Exits with _Exit: MPI_Finalize could wait
// for the unreachable peer.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {
void report(const std::string& dir, int rank, const std::string& line) {
  std::ofstream(dir + "/rank" + std::to_string(rank) + ".txt") << line << "\n";
}
}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: netns_link_down <dir> [elements, default 2^18]\n");
    std::_Exit(2);
  }
  const std::string dir = argv[1];
  const std::size_t elements = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : std::size_t{1} << 18;
  Communicator comm(MPI_COMM_WORLD, Options::fromEnvironment());
  const int rank = comm.rank(), n = comm.size();
  std::vector<float> data(elements);  // large enough for many messages across the link per call
  auto callStart = std::chrono::steady_clock::now();
  try {
    for (int call = 0; call < 100000; ++call) {
      for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(rank + static_cast<int>(i % 7));
      callStart = std::chrono::steady_clock::now();
      comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
      for (std::size_t i = 0; i < data.size(); ++i)
        if (data[i] != static_cast<float>(n * static_cast<int>(i % 7) + n * (n - 1) / 2)) {
          report(dir, rank, "wrong value at call " + std::to_string(call) + " element " + std::to_string(i));
          std::_Exit(1);
        }
      if (call == 10 && rank == 0) std::ofstream(dir + "/ready") << "ready\n";
    }
    report(dir, rank, "no error in 100000 calls");
  } catch (const TimeoutError& error) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - callStart).count();
    report(dir, rank, "timeout " + std::to_string(seconds) + " " + error.what());
    std::_Exit(0);
  } catch (const std::exception& error) {
    report(dir, rank, std::string("other error: ") + error.what());
  }
  std::_Exit(1);
}
