// The calls of the randomised API driver (fault 5). Every rank draws the same sequence from the
// same seed, so they agree on each step without talking: which collective, its shape, and, for an
// invalid call, which ranks make it (the others skip it, as a rejected call sends nothing).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ringsync/communicator.h"

namespace ringsync::faults {

// The result of one step on this rank: whether it made a call, and the first thing found wrong.
struct StepResult {
  bool called = false;
  bool invalid = false;
  std::string wrong;  // empty when everything was as expected
};

class RandomCalls {
 public:
  RandomCalls(std::uint64_t seed, int ranks) : rng_(seed), ranks_(ranks) {}

  // A valid collective with an exact expected result, checked on this rank (results, untouched
  // send buffer, untouched bytes past the end of recv).
  StepResult validStep(Communicator& comm);
  // An invalid call made by a random non-empty subset of ranks: InvalidArgument on each of them,
  // every buffer byte-for-byte as before and no call number used.
  StepResult invalidStep(Communicator& comm);

  std::uint64_t below(std::uint64_t bound) { return std::uniform_int_distribution<std::uint64_t>(0, bound - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

 private:
  std::size_t drawCount();
  std::vector<int> drawCallers();

  std::mt19937_64 rng_;
  int ranks_;
};

}  // namespace ringsync::faults
