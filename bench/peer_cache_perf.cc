// peer_cache_perf: one node's all-reduce time split by where the two ranks' cores are, within one
// launch. Before each call, node-local ranks 0 and 1 bounce a cache line through shared memory
// (1,000 round trips): 70-80 ns a round trip when their cores share a last-level cache, 300-550 ns
// when they do not (another CCD or socket, or a VM whose vCPUs the host placed apart). The calls are
// then grouped by that latency, so a launch that changed state midway shows both (bench/RESULTS.md
// section 16.10: the cause of issue 35's bimodal averager).
//
//   mpirun -np 2 build/bin/peer_cache_perf [--bytes N] [--iters N]
// Compare RINGSYNC_SHM_STREAMING=0 (ordinary stores always) with the default (auto).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>
#include <mpi.h>

#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {

double nowNs() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The two ranks of `pair` take turns incrementing `line`: the mean round trip, in ns.
double bounce(std::atomic<long>& line, int pairRank, long& turn, int trips) {
  const double start = nowNs();
  for (int i = 0; i < trips; ++i, turn += 2) {
    if (pairRank == 0) {
      line.store(turn + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != turn + 2) {
      }
    } else {
      while (line.load(std::memory_order_acquire) != turn + 1) {
      }
      line.store(turn + 2, std::memory_order_release);
    }
  }
  return (nowNs() - start) / trips;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"peer_cache_perf: all-reduce time grouped by the cache distance of node-local ranks 0 and 1"};
  std::size_t bytes = 1 << 20;
  int iters = 400;
  app.add_option("--bytes", bytes, "all-reduce size in bytes (float32)")->check(CLI::PositiveNumber);
  app.add_option("--iters", iters, "calls")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  MpiEnvironment mpi(&argc, &argv);
  Communicator comm(MPI_COMM_WORLD);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int nodeRank = 0, nodeSize = 0;
  MPI_Comm_rank(node, &nodeRank);
  MPI_Comm_size(node, &nodeSize);
  if (nodeSize < 2) {
    if (comm.rank() == 0) std::printf("peer_cache_perf: needs 2 ranks on one node (mpirun -np 2)\n");
    return 2;
  }
  std::atomic<long>* line = nullptr;
  MPI_Win window;
  MPI_Win_allocate_shared(nodeRank == 0 ? 4096 : 0, 1, MPI_INFO_NULL, node, &line, &window);
  MPI_Aint size;
  int unit;
  MPI_Win_shared_query(window, 0, &size, &unit, &line);
  if (nodeRank == 0) line->store(0);
  MPI_Barrier(node);

  // Every rank holds 1.0 everywhere: the average stays 1.0, so every call is checked exactly.
  std::vector<float> data(bytes / sizeof(float), 1.0f);
  std::vector<double> near, far;
  long turn = 0, wrong = 0;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(node);
    const double roundTrip = nodeRank < 2 ? bounce(*line, nodeRank, turn, 1000) : 0;
    const double start = nowNs();
    comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kAvg);
    const double micros = (nowNs() - start) / 1e3;
    wrong += std::count_if(data.begin(), data.end(), [](float x) { return x != 1.0f; });
    if (i >= 5) (roundTrip < 150 ? near : far).push_back(micros);
  }
  long wrongAll = 0;
  MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (comm.rank() == 0)
    std::printf(
        "bytes %zu | round trip < 150 ns (a shared cache): %zu calls, median %.1f us | >= 150 ns (beyond "
        "it): %zu calls, median %.1f us | wrong %ld\n",
        bytes, near.size(), median(near), far.size(), median(far), wrongAll);
  MPI_Win_free(&window);
  MPI_Comm_free(&node);
  return wrongAll == 0 ? 0 : 1;
}
