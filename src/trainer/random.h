// Deterministic random numbers: the same bits on every rank, compiler and standard library
// (std::normal_distribution and std::shuffle are implementation-defined, so they are not used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace ringsync::trainer {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Two seeds mixed into one stream (e.g. the run's seed and an epoch number).
  Rng(std::uint64_t seed, std::uint64_t stream);

  double uniform();                          // [0, 1) with 53 random bits
  double normal();                           // standard normal (Box-Muller)
  std::uint64_t below(std::uint64_t bound);  // uniform in [0, bound), bound > 0

 private:
  std::mt19937_64 engine_;
};

// The order in which epoch `epoch` visits `count` samples: a Fisher-Yates shuffle that depends only
// on (seed, epoch), so every rank computes the same order without communicating.
std::vector<std::uint32_t> epochOrder(std::size_t count, std::uint64_t seed, std::uint64_t epoch);

}  // namespace ringsync::trainer
