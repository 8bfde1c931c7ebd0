// A model's gradients for the averager tests: typed host buffers, separate or in one arena,
// filled with rank-dependent integer values whose sum and average have closed forms (exact in
// every type), and checked against them.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "closed_form.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

namespace ringsync::test {

struct Layer {
  DataType type;
  std::size_t count;
};

inline std::vector<Layer> floatLayers(const std::vector<std::size_t>& counts) {
  std::vector<Layer> layers;
  for (std::size_t c : counts) layers.push_back({DataType::kFloat32, c});
  return layers;
}

class Model {
 public:
  // Separate allocations per gradient, or (float32 only) one arena with the gradients back to back.
  explicit Model(std::vector<Layer> layers, bool arena = false) : layers_(std::move(layers)) {
    std::size_t total = 0;
    for (const Layer& l : layers_) total += l.count;
    if (arena) arena_.assign(total, 0.0f);
    own_.reserve(layers_.size());  // pointers into own_ must stay put
    std::size_t offset = 0;
    for (const Layer& l : layers_) {
      own_.emplace_back(l.type, arena ? 0 : l.count);
      pointers_.push_back(arena ? static_cast<void*>(arena_.data() + offset) : own_.back().data());
      offset += l.count;
    }
  }

  std::vector<GradientBuffer> buffers() const {
    std::vector<GradientBuffer> out;
    for (std::size_t g = 0; g < layers_.size(); ++g) out.push_back({pointers_[g], layers_[g].count, layers_[g].type});
    return out;
  }
  std::size_t size() const { return layers_.size(); }

  // Element i of gradient g at `step` is rank's closed-form input j = 5g + i + step over the ranks
  // of MPI_COMM_WORLD.
  void fill(int rank, int step, ReduceOp op) {
    const int ranks = worldSize();
    for (std::size_t g = 0; g < layers_.size(); ++g) {
      TypedBuffer values(layers_[g].type, layers_[g].count);
      for (std::size_t i = 0; i < values.count(); ++i)
        values.set(i, closed_form::allreduceInput(op, values.type(), rank, ranks, index(g, i, step)));
      if (values.bytes() > 0) std::memcpy(pointers_[g], values.data(), values.bytes());
    }
  }

  // "" when every element holds the closed-form result over `ranks` ranks, else the first difference.
  // With `ranges`, only the elements [ranges[g].begin, ranges[g].end) of gradient g are checked.
  std::string check(int ranks, int step, ReduceOp op, const std::vector<ShardRange>* ranges = nullptr) const {
    for (std::size_t g = 0; g < layers_.size(); ++g) {
      TypedBuffer values(layers_[g].type, layers_[g].count);
      if (values.bytes() > 0) std::memcpy(values.data(), pointers_[g], values.bytes());
      const std::size_t first = ranges ? (*ranges)[g].begin : 0;
      const std::size_t last = ranges ? (*ranges)[g].end : values.count();
      for (std::size_t i = first; i < last; ++i) {
        const double want = closed_form::allreduceExpected(op, values.type(), ranks, index(g, i, step));
        if (values.get(i) != want)
          return "gradient " + std::to_string(g) + " (" + dataTypeName(values.type()) + ") element " +
                 std::to_string(i) + ": got " + std::to_string(values.get(i)) + ", want " + std::to_string(want);
      }
    }
    return "";
  }

  // The gradients' bytes, concatenated (to compare runs bit for bit).
  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> out;
    for (std::size_t g = 0; g < layers_.size(); ++g) {
      const auto* p = static_cast<const std::uint8_t*>(pointers_[g]);
      if (layers_[g].count > 0) out.insert(out.end(), p, p + layers_[g].count * dataTypeSize(layers_[g].type));
    }
    return out;
  }

  void* data(std::size_t g) { return pointers_[g]; }
  // Gradient g lies at `data` from now on (memory the caller owns, `layers[g].count` elements):
  // fill, check and bytes use it there, as a framework that reallocates its gradients would.
  void pointTo(std::size_t g, void* data) { pointers_[g] = data; }

  // Every byte of every tensor set to `byte` (stale values a gather must overwrite).
  void scramble(std::uint8_t byte) {
    for (std::size_t g = 0; g < layers_.size(); ++g)
      if (layers_[g].count > 0) std::memset(pointers_[g], byte, layers_[g].count * dataTypeSize(layers_[g].type));
  }

  // Elements [range.begin, range.end) of tensor g copied from `other` (a model of the same layers).
  void copyRange(const Model& other, std::size_t g, ShardRange range) {
    const std::size_t size = dataTypeSize(layers_[g].type);
    if (!range.empty())
      std::memcpy(static_cast<std::uint8_t*>(pointers_[g]) + range.begin * size,
                  static_cast<const std::uint8_t*>(other.pointers_[g]) + range.begin * size, range.count() * size);
  }

 private:
  static std::size_t index(std::size_t g, std::size_t i, int step) {
    return 5 * g + i + static_cast<std::size_t>(step);
  }

  std::vector<Layer> layers_;
  std::vector<float> arena_;
  std::vector<TypedBuffer> own_;
  std::vector<void*> pointers_;
};

}  // namespace ringsync::test
