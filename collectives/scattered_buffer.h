// One logical array of elements that is stored as several spans in memory: a GradientAverager
// bucket whose gradients were allocated one by one. Element i of the array is element
// (i - start of its span) of the span that holds it; spans follow each other in index order.
//
// An algorithm that reads and writes its buffer through forEach() reduces the gradients where they
// lie, so the bucket needs no copy into a fused buffer before the exchange and none back after it
// (the split all-reduce does this; other algorithms get the array packed by the core).
#pragma once

#include <cstddef>
#include <vector>

#include "round_transport.h"

namespace ringsync::detail {

struct Span {
  void* data = nullptr;
  std::size_t count = 0;  // elements
};

class ScatteredBuffer {
 public:
  // Empty spans are dropped. The spans must not overlap (the averager checked its gradients).
  ScatteredBuffer(const std::vector<Span>& spans, std::size_t elementBytes);

  std::size_t count() const { return count_; }
  std::size_t elementBytes() const { return elementBytes_; }
  const std::vector<Span>& spans() const { return spans_; }

  // Calls fn(std::byte* data, std::size_t index, std::size_t length) for every stored run of the
  // elements [begin, begin + length), in index order (`index` is the run's first element).
  template <typename Fn> void forEach(std::size_t begin, std::size_t length, Fn&& fn) const {
    if (length == 0) return;
    const std::size_t end = begin + length;
    for (std::size_t s = spanHolding(begin); s < spans_.size() && starts_[s] < end; ++s) {
      const std::size_t from = begin > starts_[s] ? begin : starts_[s];
      const std::size_t to = end < starts_[s] + spans_[s].count ? end : starts_[s] + spans_[s].count;
      fn(static_cast<std::byte*>(spans_[s].data) + (from - starts_[s]) * elementBytes_, from, to - from);
    }
  }

  // The elements of two ranges, the first then the second, as payload pieces in order (what the
  // split's rounds send; a length may be 0). Valid until the next call.
  const std::vector<PayloadPiece>& pieces(std::size_t begin1, std::size_t length1, std::size_t begin2,
                                          std::size_t length2) const;

  // Copies elements [0, count) into `packed` and back.
  void gather(void* packed) const;
  void scatter(const void* packed) const;

 private:
  std::size_t spanHolding(std::size_t index) const;  // the span index `index` falls in

  std::vector<Span> spans_;
  std::vector<std::size_t> starts_;  // the first element of each span
  std::size_t elementBytes_;
  std::size_t count_ = 0;
  mutable std::vector<PayloadPiece> pieces_;  // reserved for every span plus a split: no allocation per call
};

}  // namespace ringsync::detail
