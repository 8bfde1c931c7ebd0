// allreduce_perf: ringsync's all-reduce, nccl-tests style.
//   mpirun -np 2 build/bin/allreduce_perf -b 8 -e 256M -f 4 --compare mpi
// busbw = algbw * 2(n-1)/n: the bytes each rank's link carries in a bandwidth-optimal all-reduce.
#include "closed_form.h"
#include "perf_harness.h"
#include "perf_pattern.h"

namespace ringsync::bench {
namespace {

class AllreducePerf final : public PerfCollective {
 public:
  PerfToolTraits traits() const override { return {"allreduce_perf", true, false}; }
  const char* collectiveName() const override { return "allreduce"; }
  const char* baselineName() const override { return "MPI_Allreduce"; }
  double busFactor(int ranks) const override { return 2.0 * (ranks - 1) / ranks; }
  const char* opColumn(const PerfArgs& args) const override { return reduceOpName(args.op); }

  void fillInput(void* data, std::size_t count, const PerfContext& c) const override {
    const PeriodicPattern input(c.args.type, closed_form::allreducePeriod(c.ranks), [&](std::size_t i) {
      return closed_form::allreduceInput(c.args.op, c.args.type, c.rank, c.ranks, i);
    });
    input.fill(data, count);
  }

  std::size_t countWrong(const void* result, std::size_t count, const PerfContext& c) const override {
    const PeriodicPattern expected(c.args.type, closed_form::allreducePeriod(c.ranks), [&](std::size_t i) {
      return closed_form::allreduceExpected(c.args.op, c.args.type, c.ranks, i);
    });
    return expected.countMismatches(result, count);
  }

  void run(Communicator& comm, const void* send, void* recv, std::size_t count, const PerfArgs& args,
           PerfStream& where) const override {
    comm.allreduce(send, recv, count, args.type, args.op, where.stream());
  }

  void runMpi(const MpiBaseline& mpi, const void* send, void* recv, std::size_t count,
              const PerfArgs& args) const override {
    mpi.allreduce(send, recv, count, args.type, args.op);
  }
};

}  // namespace
}  // namespace ringsync::bench

int main(int argc, char** argv) { return ringsync::bench::runPerf(argc, argv, ringsync::bench::AllreducePerf{}); }
