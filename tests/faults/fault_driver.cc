// A small MPI program that injects the faults which end the whole job, run by
// expect_job_failure.sh (the job must fail, and fast):
//   fault_driver kill <rank>   that rank SIGKILLs itself in the middle of a 64 MiB all-reduce
//                              (fault 3: Open MPI must tear the job down, nothing may hang)
//   fault_driver throw <rank>  that rank throws in user code between collectives and the
//                              program's handler calls MPI_Abort (fault 4: a clean abort)
// Just before injecting, the faulty rank prints "FAULT-AT <unix seconds>" so the script can
// measure the time from the fault to the end of the job.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {

constexpr std::size_t kLargeCount = std::size_t{16} << 20;  // 64 MiB of float32
constexpr double kRunSeconds = 30;                          // far beyond the script's limit

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void announceFault(int rank, const std::string& what) {
  std::printf("FAULT-AT %.3f rank %d %s\n", unixSeconds(), rank, what.c_str());
  std::fflush(stdout);
}

// Fault 3. A helper thread of the victim waits until the main thread is inside an all-reduce
// (after one has completed, so every connection is up), lets it run a little, and SIGKILLs the
// process: no handler runs, no message is sent, exactly like a node losing a process.
int runKill(Communicator& comm, int victim) {
  std::atomic<int> callsStarted{0};
  std::atomic<bool> inCall{false};
  std::thread killer;
  if (comm.rank() == victim) {
    killer = std::thread([&] {
      while (callsStarted.load() < 2 || !inCall.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      announceFault(comm.rank(), "SIGKILL during allreduce #" + std::to_string(callsStarted.load() - 1) + " of " +
                                     std::to_string(kLargeCount * 4 >> 20) + " MiB");
      std::raise(SIGKILL);
    });
  }
  std::vector<float> data(kLargeCount, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < kRunSeconds) {
    callsStarted.fetch_add(1);
    inCall.store(true);
    comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kAvg);
    inCall.store(false);
  }
  if (killer.joinable()) killer.join();
  std::printf("rank %d: every all-reduce completed; the fault was never injected\n", comm.rank());
  return 0;  // the script expects a failure: reaching this is the test failing
}

// Fault 4. Three steps of "training", then user code throws on one rank while the others are
// already inside the next all-reduce. The handler is what a careful program does.
int runThrow(Communicator& comm, int thrower) {
  std::vector<float> gradient(4096);
  try {
    for (int step = 0; step < 10; ++step) {
      if (comm.rank() == thrower && step == 3) throw std::runtime_error("bad batch at step 3");
      for (float& g : gradient) g = static_cast<float>(comm.rank() + step);
      comm.allreduce(gradient.data(), gradient.data(), gradient.size(), DataType::kFloat32, ReduceOp::kAvg);
    }
  } catch (const std::exception& error) {
    announceFault(comm.rank(), std::string("user code threw: ") + error.what() + "; calling MPI_Abort");
    MPI_Abort(MPI_COMM_WORLD, 42);
  }
  std::printf("rank %d: all steps completed\n", comm.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: fault_driver kill|throw <rank>\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int rank = std::atoi(argv[2]);
  try {
    Communicator comm(MPI_COMM_WORLD);
    if (mode == "kill") return runKill(comm, rank);
    if (mode == "throw") return runThrow(comm, rank);
    std::fprintf(stderr, "fault_driver: unknown mode '%s'\n", mode.c_str());
    return 2;
  } catch (const Error& error) {
    // A survivor that notices the fault itself (a transport error or its deadline) ends the job
    // the same way: loudly, naming what failed.
    std::fprintf(stderr, "fault_driver rank ?: ringsync %s: %s; calling MPI_Abort\n", errorCodeName(error.code()),
                 error.what());
    MPI_Abort(MPI_COMM_WORLD, 43);
  }
  return 1;
}
