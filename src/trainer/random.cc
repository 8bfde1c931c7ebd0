#include "random.h"

#include <cmath>
#include <numeric>
#include <utility>

namespace ringsync::trainer {

namespace {
// splitmix64's finaliser: spreads (seed, stream) pairs that differ in one bit over the whole word.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

Rng::Rng(std::uint64_t seed, std::uint64_t stream) : engine_(mix(seed) ^ mix(~stream)) {}

double Rng::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  const double kTwoPi = 6.283185307179586;
  const double u1 = 1.0 - uniform();  // (0, 1]: log() stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

std::uint64_t Rng::below(std::uint64_t bound) {
  // Rejection keeps it unbiased: draw until the value falls below the largest multiple of bound.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
  std::uint64_t value = engine_();
  while (value >= limit) value = engine_();
  return value % bound;
}

std::vector<std::uint32_t> epochOrder(std::size_t count, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::uint32_t> order(count);
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(seed, epoch + 1);  // stream 0 is left for the initial weights
  for (std::size_t i = count; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace ringsync::trainer
