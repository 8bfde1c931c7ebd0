// allgather_perf: ringsync's all-gather, nccl-tests style.
//   mpirun -np 2 build/bin/allgather_perf -b 8 -e 256M -f 4 --compare mpi
// The size column is the whole array (every rank's block); each rank sends size/n.
// busbw = algbw * (n-1)/n: the bytes each rank's link carries in a bandwidth-optimal all-gather.
#include "closed_form.h"
#include "perf_harness.h"
#include "perf_pattern.h"

namespace ringsync::bench {
namespace {

class AllgatherPerf final : public PerfCollective {
 public:
  PerfToolTraits traits() const override { return {"allgather_perf", false, false}; }
  const char* collectiveName() const override { return "allgather"; }
  const char* baselineName() const override { return "MPI_Allgather"; }
  const char* note() const override { return "in place: send is this rank's block of recv"; }
  double busFactor(int ranks) const override { return static_cast<double>(ranks - 1) / ranks; }
  const char* opColumn(const PerfArgs&) const override { return "none"; }

  PerfShape shape(std::size_t count, const PerfContext& c) const override {
    const std::size_t block = count / static_cast<std::size_t>(c.ranks);
    return {block, block, block * static_cast<std::size_t>(c.ranks), block * static_cast<std::size_t>(c.rank), 0};
  }

  void fillInput(void* data, std::size_t count, const PerfContext& c) const override {
    const PeriodicPattern input(c.args.type, closed_form::kRankValuePeriod,
                                [&](std::size_t i) { return closed_form::rankValue(c.rank, i); });
    input.fill(data, count);
  }

  // Every rank's block in rank order.
  std::size_t countWrong(const void* result, std::size_t count, const PerfContext& c) const override {
    const std::size_t block = count / static_cast<std::size_t>(c.ranks);
    std::size_t wrong = 0;
    for (int r = 0; r < c.ranks && block > 0; ++r) {
      const PeriodicPattern expected(c.args.type, closed_form::kRankValuePeriod,
                                     [&](std::size_t i) { return closed_form::rankValue(r, i); });
      wrong += expected.countMismatches(static_cast<const std::byte*>(result) +
                                            static_cast<std::size_t>(r) * block * dataTypeSize(c.args.type),
                                        block);
    }
    return wrong;
  }

  void run(Communicator& comm, const void* send, void* recv, std::size_t count, const PerfArgs& args,
           PerfStream& where) const override {
    comm.allgather(send, recv, count, args.type, where.stream());
  }

  void runMpi(const MpiBaseline& mpi, const void* send, void* recv, std::size_t count,
              const PerfArgs& args) const override {
    mpi.allgather(send, recv, count, args.type);
  }
};

}  // namespace
}  // namespace ringsync::bench

int main(int argc, char** argv) { return ringsync::bench::runPerf(argc, argv, ringsync::bench::AllgatherPerf{}); }
