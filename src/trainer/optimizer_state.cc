#include "optimizer_state.h"

#include <algorithm>

namespace ringsync::trainer {
namespace {

// Copies `owned`'s slices between the full layout and the packed one, in either direction.
template <typename Copy> void forEachSlice(const Ownership& owned, const ModelLayout& layout, Copy&& copy) {
  std::size_t packed = 0;
  for (std::size_t t = 0; t < owned.size(); ++t) {
    copy(layout.tensor(t).offset + owned[t].begin, packed, owned[t].count());
    packed += owned[t].count();
  }
}

}  // namespace

std::vector<float> gatherMomentum(Communicator& comm, const GradientSync& sync, const ModelLayout& layout,
                                  const std::vector<float>& owned) {
  if (!sync.sharded()) return owned;
  const int ranks = comm.size();
  std::vector<Ownership> ownership;
  std::size_t largest = 0;
  for (int r = 0; r < ranks; ++r) {
    ownership.push_back(sync.ownership(r));
    largest = std::max(largest, stateCount(ownership.back()));
  }
  std::vector<float> mine(owned);
  mine.resize(largest, 0.0f);
  std::vector<float> all(largest * static_cast<std::size_t>(ranks));
  comm.allgather(mine.data(), all.data(), largest, DataType::kFloat32);
  std::vector<float> full(layout.parameterCount());
  for (int r = 0; r < ranks; ++r) {
    const float* theirs = all.data() + static_cast<std::size_t>(r) * largest;
    forEachSlice(ownership[static_cast<std::size_t>(r)], layout,
                 [&](std::size_t at, std::size_t packed, std::size_t count) {
                   std::copy(theirs + packed, theirs + packed + count, full.begin() + static_cast<std::ptrdiff_t>(at));
                 });
  }
  return full;
}

std::vector<float> ownedMomentum(const Ownership& owned, const ModelLayout& layout, const std::vector<float>& full) {
  std::vector<float> packed(stateCount(owned));
  forEachSlice(owned, layout, [&](std::size_t at, std::size_t into, std::size_t count) {
    std::copy(full.begin() + static_cast<std::ptrdiff_t>(at), full.begin() + static_cast<std::ptrdiff_t>(at + count),
              packed.begin() + static_cast<std::ptrdiff_t>(into));
  });
  return packed;
}

}  // namespace ringsync::trainer
