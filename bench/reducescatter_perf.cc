// reducescatter_perf: ringsync's reduce-scatter, nccl-tests style.
//   mpirun -np 2 build/bin/reducescatter_perf -b 8 -e 256M -f 4 --compare mpi
// The size column is the whole array (every rank's input); each rank receives size/n.
// busbw = algbw * (n-1)/n: the bytes each rank's link carries in a bandwidth-optimal reduce-scatter.
#include "closed_form.h"
#include "perf_harness.h"
#include "perf_pattern.h"

namespace ringsync::bench {
namespace {

class ReduceScatterPerf final : public PerfCollective {
 public:
  PerfToolTraits traits() const override { return {"reducescatter_perf", true, false}; }
  const char* collectiveName() const override { return "reducescatter"; }
  const char* baselineName() const override { return "MPI_Reduce_scatter_block"; }
  const char* note() const override { return "in place: recv is this rank's block of send"; }
  double busFactor(int ranks) const override { return static_cast<double>(ranks - 1) / ranks; }
  const char* opColumn(const PerfArgs& args) const override { return reduceOpName(args.op); }

  PerfShape shape(std::size_t count, const PerfContext& c) const override {
    const std::size_t block = count / static_cast<std::size_t>(c.ranks);
    return {block, block * static_cast<std::size_t>(c.ranks), block, 0, block * static_cast<std::size_t>(c.rank)};
  }

  void fillInput(void* data, std::size_t count, const PerfContext& c) const override {
    const PeriodicPattern input(c.args.type, closed_form::allreducePeriod(c.ranks), [&](std::size_t i) {
      return closed_form::allreduceInput(c.args.op, c.args.type, c.rank, c.ranks, i);
    });
    input.fill(data, count);
  }

  // This rank's block: the reduced array from element rank · block on.
  std::size_t countWrong(const void* result, std::size_t count, const PerfContext& c) const override {
    const std::size_t period = closed_form::allreducePeriod(c.ranks);
    const std::size_t first = static_cast<std::size_t>(c.rank) * count;
    const PeriodicPattern expected(c.args.type, period, [&](std::size_t i) {
      return closed_form::allreduceExpected(c.args.op, c.args.type, c.ranks, (first + i) % period);
    });
    return expected.countMismatches(result, count);
  }

  void run(Communicator& comm, const void* send, void* recv, std::size_t count, const PerfArgs& args,
           PerfStream& where) const override {
    comm.reduceScatter(send, recv, count, args.type, args.op, where.stream());
  }

  void runMpi(const MpiBaseline& mpi, const void* send, void* recv, std::size_t count,
              const PerfArgs& args) const override {
    mpi.reduceScatter(send, recv, count, args.type, args.op);
  }
};

}  // namespace
}  // namespace ringsync::bench

int main(int argc, char** argv) { return ringsync::bench::runPerf(argc, argv, ringsync::bench::ReduceScatterPerf{}); }
