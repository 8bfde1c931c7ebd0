// broadcast_perf: ringsync's broadcast, nccl-tests style.
//   mpirun -np 2 build/bin/broadcast_perf -b 8 -e 256M -f 4 -r 0 --compare mpi
// busbw = algbw: every link carries the message once in a pipelined broadcast.
#include <cstring>

#include "closed_form.h"
#include "perf_harness.h"
#include "perf_pattern.h"

namespace ringsync::bench {
namespace {

class BroadcastPerf final : public PerfCollective {
 public:
  PerfToolTraits traits() const override { return {"broadcast_perf", false, true}; }
  const char* collectiveName() const override { return "broadcast"; }
  const char* baselineName() const override { return "MPI_Bcast"; }
  const char* note() const override {
    return "ringsync broadcasts in place; out-of-place = the root copies send into recv, then broadcasts recv";
  }
  double busFactor(int) const override { return 1.0; }
  const char* opColumn(const PerfArgs&) const override { return "none"; }

  // The root holds the values; every other rank starts from a sentinel that differs from them.
  void fillInput(void* data, std::size_t count, const PerfContext& c) const override {
    const bool root = c.rank == c.args.root;
    const PeriodicPattern input(c.args.type, closed_form::kRankValuePeriod,
                                [&](std::size_t i) { return root ? closed_form::rankValue(c.args.root, i) : 0.0; });
    input.fill(data, count);
  }

  std::size_t countWrong(const void* result, std::size_t count, const PerfContext& c) const override {
    const PeriodicPattern expected(c.args.type, closed_form::kRankValuePeriod,
                                   [&](std::size_t i) { return closed_form::rankValue(c.args.root, i); });
    return expected.countMismatches(result, count);
  }

  void run(Communicator& comm, const void* send, void* recv, std::size_t count, const PerfArgs& args,
           PerfStream& where) const override {
    if (send != recv && comm.rank() == args.root) where.copy(recv, send, count * dataTypeSize(args.type));
    comm.broadcast(recv, count, args.type, args.root, where.stream());
  }

  void runMpi(const MpiBaseline& mpi, const void* send, void* recv, std::size_t count,
              const PerfArgs& args) const override {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (send != recv && rank == args.root) std::memcpy(recv, send, count * dataTypeSize(args.type));
    mpi.broadcast(recv, count, args.type, args.root);
  }
};

}  // namespace
}  // namespace ringsync::bench

int main(int argc, char** argv) { return ringsync::bench::runPerf(argc, argv, ringsync::bench::BroadcastPerf{}); }
