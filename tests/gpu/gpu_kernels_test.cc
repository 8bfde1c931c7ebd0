// The CUDA kernels against the host reference (collectives/reduce_kernels.h) on random inputs, for
// every type and op, odd sizes and unaligned offsets (vector body, scalar head and tail, and
// pointers that disagree modulo 16), checking the bytes around each output stay untouched.
// Needs a GPU (label `gpu`); says SKIPPED otherwise.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "collectives/half.h"
#include "collectives/reduce_kernels.h"
#include "cuda/device_memory.h"
#include "cuda/elementwise_kernels.h"
#include "cuda/pack_kernels.h"
#include "gpu_test_support.h"
#include "ringsync/ringsync.h"

using namespace ringsync;
using Bytes = std::vector<unsigned char>;

namespace {

constexpr std::size_t kGuardElements = 8;  // around every region, to catch stray writes
constexpr unsigned char kSentinel = 0xA5;

// Finite random values in [-8, 8] for floating point, any bit pattern for integers.
Bytes randomValues(DataType type, std::size_t count, std::mt19937_64& rng) {
  const std::size_t size = dataTypeSize(type);
  Bytes bytes(count * size);
  std::uniform_real_distribution<double> real(-8.0, 8.0);
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char* p = bytes.data() + i * size;
    const double v = real(rng);
    if (type == DataType::kFloat16) {
      const std::uint16_t h = detail::floatToFloat16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else if (type == DataType::kBFloat16) {
      const std::uint16_t h = detail::floatToBfloat16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else if (type == DataType::kFloat32) {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else if (type == DataType::kFloat64) {
      std::memcpy(p, &v, 8);
    } else {
      const std::uint64_t bits = rng();
      std::memcpy(p, &bits, size);
    }
  }
  return bytes;
}

// A device region of `count` elements at element offset `offset` inside a sentinel-filled
// allocation (so offsets 1, 3 ... give addresses that are not 16-byte aligned).
struct Region {
  Region(DataType t, std::size_t n, std::size_t elementOffset)
      : type(t),
        count(n),
        offset(elementOffset + kGuardElements),
        memory((n + elementOffset + 2 * kGuardElements) * dataTypeSize(t)) {
    RINGSYNC_CHECK_CUDA(cudaMemset(memory.data(), kSentinel, memory.bytes()));
  }
  void* data() const { return memory.as<unsigned char>() + offset * dataTypeSize(type); }
  void upload(const Bytes& bytes) const {
    RINGSYNC_CHECK_CUDA(cudaMemcpy(data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    // cudaMemcpy from pageable memory (and the constructor's cudaMemset) may return before the
    // bytes land, ordered only on the legacy default stream, which the kernels' non-blocking
    // stream does not wait for: wait here.
    RINGSYNC_CHECK_CUDA(cudaDeviceSynchronize());
  }
  Bytes whole() const {
    Bytes all(memory.bytes());
    RINGSYNC_CHECK_CUDA(cudaMemcpy(all.data(), memory.data(), all.size(), cudaMemcpyDeviceToHost));
    return all;
  }
  // The region's bytes, and whether everything around it still holds the sentinel.
  Bytes download(bool* guardsIntact) const {
    const Bytes all = whole();
    const std::size_t begin = offset * dataTypeSize(type), end = begin + count * dataTypeSize(type);
    bool intact = true;
    for (std::size_t i = 0; i < all.size(); ++i)
      intact = intact && (i >= begin && i < end ? true : all[i] == kSentinel);
    *guardsIntact = intact;
    return Bytes(all.begin() + static_cast<std::ptrdiff_t>(begin), all.begin() + static_cast<std::ptrdiff_t>(end));
  }
  DataType type;
  std::size_t count;
  std::size_t offset;
  cuda::DeviceBuffer memory;
};

struct Offsets {
  std::size_t out, a, b;
};
constexpr Offsets kOffsets[] = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {0, 1, 2}, {2, 0, 1}};
// RINGSYNC_GPU_TEST_SMALL=1 (scripts/gpu_verify.sh under compute-sanitizer, where every launch
// is far slower) keeps the sizes that exercise head, vectors and tail, and drops the large one.
std::vector<std::size_t> testCounts() {
  std::vector<std::size_t> counts = {1, 3, 7, 15, 16, 17, 31, 1023, 4097};
  const char* small = std::getenv("RINGSYNC_GPU_TEST_SMALL");
  if (!small || std::string(small) != "1") counts.push_back(65539);
  return counts;
}

// Host reference of the pack kernels' scaling: widen, multiply by the factor in the compute type, round once.
Bytes scaleOnHost(DataType type, const Bytes& in, double factor) {
  Bytes out = in;
  const std::size_t count = in.size() / dataTypeSize(type);
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char* p = out.data() + i * dataTypeSize(type);
    if (type == DataType::kFloat64) {
      double v;
      std::memcpy(&v, p, 8);
      v *= factor;
      std::memcpy(p, &v, 8);
    } else if (type == DataType::kFloat32) {
      float v;
      std::memcpy(&v, p, 4);
      v *= static_cast<float>(factor);
      std::memcpy(p, &v, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const bool half = type == DataType::kFloat16;
      const float v = (half ? detail::float16ToFloat(h) : detail::bfloat16ToFloat(h)) * static_cast<float>(factor);
      h = half ? detail::floatToFloat16(v) : detail::floatToBfloat16(v);
      std::memcpy(p, &h, 2);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("kernels: reduce equals the host reduction, every type, op, size and alignment", "[gpu][kernels]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  std::mt19937_64 rng(12345);
  cuda::Stream stream;
  std::size_t cases = 0, failures = 0;
  for (DataType type : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      for (std::size_t count : testCounts())
        for (const Offsets& at : kOffsets)
          for (bool inPlace : {false, true}) {
            const Bytes a = randomValues(type, count, rng), b = randomValues(type, count, rng);
            Region ra(type, count, at.a), rb(type, count, at.b), ro(type, count, at.out);
            ra.upload(a);
            rb.upload(b);
            void* out = inPlace ? ra.data() : ro.data();
            cuda::reduce(out, ra.data(), rb.data(), count, type, op, stream.get());
            stream.synchronize();
            Bytes want(a.size());
            detail::reduceElements(want.data(), a.data(), b.data(), count, type, op);
            bool guards = true;
            const Bytes got = (inPlace ? ra : ro).download(&guards);
            ++cases;
            if (got != want || !guards) {
              ++failures;
              UNSCOPED_INFO(dataTypeName(type) << " " << reduceOpName(op) << " count=" << count << " offsets=" << at.out
                                               << "," << at.a << "," << at.b << (inPlace ? " in place" : "")
                                               << (guards ? "" : " (wrote outside the output)"));
            }
          }
  INFO(failures << " of " << cases << " cases differ from the host reference");
  REQUIRE(failures == 0);
}

TEST_CASE("kernels: divide equals the host reference", "[gpu][kernels]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  std::mt19937_64 rng(777);
  std::size_t failures = 0;
  for (DataType type : kAllDataTypes)
    for (std::size_t count : testCounts())
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
        const Bytes in = randomValues(type, count, rng);
        Region rin(type, count, offset), rout(type, count, (offset + 1) % 4);
        for (int divisor : {1, 3, 4, 7}) {
          rin.upload(in);
          cuda::divide(rout.data(), rin.data(), count, type, divisor, nullptr);
          Bytes want = in;
          detail::divideElements(want.data(), count, type, divisor);
          bool guards = true;
          if (rout.download(&guards) != want || !guards) {
            ++failures;
            UNSCOPED_INFO("divide " << dataTypeName(type) << " count=" << count << " offset=" << offset << " by "
                                    << divisor);
          }
        }
      }
  RINGSYNC_CHECK_CUDA(cudaDeviceSynchronize());
  REQUIRE(failures == 0);
}

TEST_CASE("kernels: pack and unpack many tensors in one launch", "[gpu][kernels][pack]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  std::mt19937_64 rng(99);
  const std::size_t sizes[] = {0, 1, 3, 17, 1000, 40000, 8191};
  std::size_t failures = 0;
  for (DataType type : kAllDataTypes) {
    const std::size_t size = dataTypeSize(type);
    // Tensors at odd element offsets inside one allocation; buffer slots dense with a gap of 3.
    std::vector<cuda::PackEntry> entries;
    std::size_t tensorCursor = 1, bufferCursor = 0;
    for (std::size_t e = 0; e < 40; ++e) {
      const std::size_t count = sizes[rng() % std::size(sizes)];
      entries.push_back({reinterpret_cast<void*>(tensorCursor), bufferCursor, count});
      tensorCursor += count + 1 + e % 3;
      bufferCursor += count + (e % 4 == 0 ? 3 : 0);
    }
    Region tensors(type, tensorCursor, 0), buffer(type, bufferCursor, 1);
    for (auto& entry : entries)
      entry.tensor = static_cast<unsigned char*>(tensors.data()) + reinterpret_cast<std::size_t>(entry.tensor) * size;
    const Bytes tensorValues = randomValues(type, tensorCursor, rng);
    for (double factor : {1.0, 0.5}) {
      tensors.upload(tensorValues);
      RINGSYNC_CHECK_CUDA(cudaMemset(buffer.data(), 0, bufferCursor * size));
      cuda::PackPlan plan(entries.data(), entries.size(), type);
      plan.pack(buffer.data(), factor, nullptr);
      // Reference: the fusion buffer as the host would fill it.
      Bytes want(bufferCursor * size, 0);
      for (const auto& entry : entries) {
        const std::size_t from = (static_cast<unsigned char*>(entry.tensor) -
                                  static_cast<unsigned char*>(tensors.data()));
        Bytes piece(tensorValues.begin() + static_cast<std::ptrdiff_t>(from),
                    tensorValues.begin() + static_cast<std::ptrdiff_t>(from + entry.count * size));
        if (isFloatingPoint(type) && factor != 1.0) piece = scaleOnHost(type, piece, factor);
        std::memcpy(want.data() + entry.bufferOffset * size, piece.data(), piece.size());
      }
      bool guards = true;
      if (buffer.download(&guards) != want || !guards) {
        ++failures;
        UNSCOPED_INFO("pack " << dataTypeName(type) << " factor " << factor);
      }
      // Unpack back (scaled again), onto zeroed tensors: every tensor element comes from the buffer.
      RINGSYNC_CHECK_CUDA(cudaMemset(tensors.data(), 0, tensorCursor * size));
      plan.unpack(buffer.data(), factor, nullptr);
      Bytes tensorsWant(tensorCursor * size, 0);
      for (const auto& entry : entries) {
        const std::size_t to = (static_cast<unsigned char*>(entry.tensor) -
                                static_cast<unsigned char*>(tensors.data()));
        Bytes piece(want.begin() + static_cast<std::ptrdiff_t>(entry.bufferOffset * size),
                    want.begin() + static_cast<std::ptrdiff_t>((entry.bufferOffset + entry.count) * size));
        if (isFloatingPoint(type) && factor != 1.0) piece = scaleOnHost(type, piece, factor);
        std::memcpy(tensorsWant.data() + to, piece.data(), piece.size());
      }
      if (tensors.download(&guards) != tensorsWant || !guards) {
        ++failures;
        UNSCOPED_INFO("unpack " << dataTypeName(type) << " factor " << factor);
      }
      CHECK(plan.entryCount() == entries.size());
    }
  }
  REQUIRE(failures == 0);
}

TEST_CASE("kernels: an empty plan and count 0 launch nothing", "[gpu][kernels]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  cuda::PackPlan empty(nullptr, 0, DataType::kFloat32);
  empty.pack(nullptr, 1.0, nullptr);
  empty.unpack(nullptr, 1.0, nullptr);
  cuda::reduce(nullptr, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, nullptr);
  CHECK(empty.totalCount() == 0);
  CHECK_THROWS_AS(cuda::PackPlan(nullptr, 2, DataType::kFloat32), InvalidArgument);
  RINGSYNC_CHECK_CUDA(cudaDeviceSynchronize());
}
