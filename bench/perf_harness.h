// The harness every bench binary shares (nccl-tests' common.cu, in small pieces): parse the
// flags, make the Communicator, sweep the sizes, and for each size check once, warm up, time the
// out-of-place and in-place forms (and, with --compare mpi, MPI's own collective on the same
// buffers in the same run), then print the row. A collective only says what its data, its buffer
// shape and its bus factor are (allreduce_perf.cc, broadcast_perf.cc, reducescatter_perf.cc,
// allgather_perf.cc).
#pragma once

#include <cstddef>

#include "perf_args.h"
#include "perf_buffers.h"
#include "perf_mpi.h"
#include "ringsync/communicator.h"

namespace ringsync::bench {

struct PerfContext {
  int rank;
  int ranks;
  const PerfArgs& args;
};

// How one row's buffers look, nccl-tests' getCollByteCount: a row of `count` elements (its size
// column: count · element bytes, the whole array) is a call of callCount elements that reads
// inputCount and writes resultCount of this rank's elements. In place, one buffer holds both: the
// input at inPlaceInputOffset, the result at inPlaceResultOffset (elements).
struct PerfShape {
  std::size_t callCount;
  std::size_t inputCount;
  std::size_t resultCount;
  std::size_t inPlaceInputOffset = 0;
  std::size_t inPlaceResultOffset = 0;
};

class PerfCollective {
 public:
  virtual ~PerfCollective() = default;
  virtual PerfToolTraits traits() const = 0;
  virtual const char* collectiveName() const = 0;  // "allreduce"
  virtual const char* baselineName() const = 0;    // "MPI_Allreduce"
  virtual const char* note() const { return ""; }  // printed in the header when not empty
  // busbw = algbw * busFactor (nccl-tests: 2(n-1)/n for all-reduce, 1 for broadcast).
  virtual double busFactor(int ranks) const = 0;
  virtual const char* opColumn(const PerfArgs& args) const = 0;
  // The buffers of a row of `count` elements: by default one call over `count` elements in and out.
  virtual PerfShape shape(std::size_t count, const PerfContext&) const { return {count, count, count}; }

  // This rank's starting contents of the buffer the collective reads (host memory, inputCount).
  virtual void fillInput(void* data, std::size_t count, const PerfContext& context) const = 0;
  // Elements of this rank's result (resultCount) that differ from the closed form.
  virtual std::size_t countWrong(const void* result, std::size_t count, const PerfContext& context) const = 0;

  // One call of shape().callCount elements; in place, send and recv lie in one buffer as shape()
  // says (the same pointer for all-reduce and broadcast). Device work goes on `where.stream()`.
  virtual void run(Communicator& comm, const void* send, void* recv, std::size_t count, const PerfArgs& args,
                   PerfStream& where) const = 0;
  virtual void runMpi(const MpiBaseline& mpi, const void* send, void* recv, std::size_t count,
                      const PerfArgs& args) const = 0;
};

// main() of a bench binary: returns the process exit status (non-zero on any wrong value, bad
// flags, or a backend that cannot run here).
int runPerf(int argc, char** argv, const PerfCollective& collective);

}  // namespace ringsync::bench
