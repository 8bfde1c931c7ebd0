// Runs a fixed sequence of collectives (and a few GradientAverager steps) with RINGSYNC_TIMELINE
// set by the caller, for check_timeline.py to compare the written trace against.
//   timeline_driver calls      allreduce 8 B (direct), 64 KiB (split), 16 MiB (split in pieces), broadcast,
//                              allgather, barrier, then 2 averager steps of 3 gradients
//   timeline_driver straggler  the last rank sleeps 30 ms before each of 8 barriers
//   timeline_driver straggler_doubling  the same before 8 all-reduces forced through recursive
//                              doubling (no round: who came last rides on its call summary)
//   timeline_driver mismatch   call 2 has another count on rank 1: MismatchError, exit 3
//   timeline_driver skip       rank 1 skips call 2: rank 0 times out (aborted), exit 4
// Every rank writes what lastPlacement() said of each call to <timeline>.expected.<rank>, one
// "<kind> <algorithm> <backend>" line per call, for the checker.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {

struct Expected {
  std::FILE* file;
  void note(const char* kind, const Communicator& comm) {
    const Placement placement = comm.lastPlacement();
    std::fprintf(file, "%s %s %s\n", kind, placement.algorithm.c_str(), placement.backend.c_str());
  }
};

void runCalls(Communicator& comm, Expected& expected) {
  for (std::size_t count : {std::size_t{2}, std::size_t{16} * 1024, std::size_t{4} * 1024 * 1024}) {
    std::vector<float> data(count, 1.0f);
    comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    expected.note("allreduce", comm);
  }
  std::vector<int> values(5, comm.rank());
  comm.broadcast(values.data(), values.size(), DataType::kInt32, comm.size() - 1);
  expected.note("broadcast", comm);
  std::vector<int> gathered(values.size() * static_cast<std::size_t>(comm.size()));
  comm.allgather(values.data(), gathered.data(), values.size(), DataType::kInt32);
  expected.note("allgather", comm);
  comm.barrier();
  expected.note("barrier", comm);

  std::vector<std::vector<float>> gradients{std::vector<float>(100, 1.0f), std::vector<float>(7, 2.0f),
                                            std::vector<float>(1000, 3.0f)};
  std::vector<GradientBuffer> buffers;
  for (auto& g : gradients) buffers.push_back({g.data(), g.size(), DataType::kFloat32});
  GradientAverager averager(comm, buffers);
  std::fprintf(expected.file, "buckets %zu\n", averager.bucketCount());
  for (int step = 0; step < 2; ++step) {
    for (std::size_t g = gradients.size(); g-- > 0;) averager.markReady(g);
    averager.synchronize();
  }
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "calls";
  int status = 0;
  {
    Options options = Options::fromEnvironment();
    if (mode == "straggler_doubling") options.algorithm = Algorithm::kRecursiveDoubling;
    Communicator comm(MPI_COMM_WORLD, options);
    const std::string path = comm.options().timelinePath;
    // Without a timeline (the RINGSYNC_LOG=info report test) the notes are not wanted.
    const std::string notes = path.empty() ? "/dev/null" : path + ".expected." + std::to_string(comm.rank());
    std::FILE* file = std::fopen(notes.c_str(), "w");
    if (file == nullptr) return 2;
    Expected expected{file};
    try {
      if (mode == "calls") {
        runCalls(comm, expected);
      } else if (mode == "straggler") {
        for (int i = 0; i < 8; ++i) {
          if (comm.rank() == comm.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
          comm.barrier();
          expected.note("barrier", comm);
        }
      } else if (mode == "straggler_doubling") {
        std::vector<float> data(16, 1.0f);
        for (int i = 0; i < 8; ++i) {
          if (comm.rank() == comm.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
          comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
          expected.note("allreduce", comm);
        }
      } else if (mode == "mismatch" || mode == "skip") {
        std::vector<float> data(64, 1.0f);
        for (int call = 0; call < 4; ++call) {
          if (mode == "skip" && call == 2 && comm.rank() == 1) continue;
          const std::size_t count = (mode == "mismatch" && call == 2 && comm.rank() == 1) ? 32 : 64;
          comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
          expected.note("allreduce", comm);
        }
      }
    } catch (const MismatchError& error) {
      std::fprintf(stderr, "rank %d: expected failure: %s\n", comm.rank(), error.what());
      status = 3;
    } catch (const TimeoutError& error) {
      std::fprintf(stderr, "rank %d: expected failure: %s\n", comm.rank(), error.what());
      status = 4;
    }
    std::fclose(file);
  }  // the communicator ends here: the timeline is written
  return status;
}
