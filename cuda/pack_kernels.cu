#include "cuda/pack_kernels.h"

#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.h"
#include "cuda/element_traits.h"
#include "cuda/elementwise_kernels.h"
#include "cuda/type_dispatch.h"

namespace ringsync::cuda {
namespace kernels {
namespace {

constexpr std::size_t kChunkBytes = 32 * 1024;  // 128 B per thread of a 256-thread block

struct CopyFn {
  template <typename S> __device__ __forceinline__ S operator()(S x) const { return x; }
};
template <typename T> struct MultiplyFn {
  using E = Element<T>;
  typename E::Compute factor;
  __device__ __forceinline__ typename E::Storage operator()(typename E::Storage x) const {
    return E::narrow(E::widen(x) * factor);
  }
};

// One block per chunk (grid-stride over chunks); a chunk moves between its tensor and the fusion
// buffer in 16-byte vectors when both ends share their alignment, element by element otherwise.
template <typename S, bool kPack, typename F>
__global__ void packKernel(const PackEntry* chunks, std::size_t chunkCount, S* buffer, F f) {
  constexpr std::size_t kLanes = Vec16<S>::kLanes;
  for (std::size_t c = blockIdx.x; c < chunkCount; c += gridDim.x) {
    const PackEntry chunk = chunks[c];
    S* tensor = static_cast<S*>(chunk.tensor);
    S* slot = buffer + chunk.bufferOffset;
    const S* src = kPack ? tensor : slot;
    S* dst = kPack ? slot : tensor;
    const auto d = reinterpret_cast<std::uintptr_t>(dst);
    const VectorSplit split = splitForVectors(chunk.count, sizeof(S), d, reinterpret_cast<std::uintptr_t>(src), d);
    auto* dstV = reinterpret_cast<Vec16<S>*>(dst + split.head);
    const auto* srcV = reinterpret_cast<const Vec16<S>*>(src + split.head);
    for (std::size_t v = threadIdx.x; v < split.vectors; v += blockDim.x) {
      const Vec16<S> x = srcV[v];
      Vec16<S> r;
#pragma unroll
      for (int k = 0; k < Vec16<S>::kLanes; ++k) r.lane[k] = f(x.lane[k]);
      dstV[v] = r;
    }
    const std::size_t scalars = split.scalars(kLanes);
    for (std::size_t s = threadIdx.x; s < scalars; s += blockDim.x) {
      const std::size_t i = split.scalarIndex(s, kLanes);
      dst[i] = f(src[i]);
    }
  }
}

template <typename T> constexpr bool kScalable = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                                 std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <bool kPack> void launchPack(const void* chunks, std::size_t chunkCount, const void* buffer, DataType type,
                                      double factor, cudaStream_t stream) {
  const auto* table = static_cast<const PackEntry*>(chunks);
  const unsigned grid = gridFor(chunkCount * kBlockThreads);
  dispatchElement(type, [&](auto tag) {
    using T = decltype(tag);
    using S = typename Element<T>::Storage;
    S* slots = static_cast<S*>(const_cast<void*>(buffer));  // only read when unpacking
    if constexpr (kScalable<T>) {
      if (factor != 1.0) {
        using C = typename Element<T>::Compute;
        packKernel<S, kPack>
            <<<grid, kBlockThreads, 0, stream>>>(table, chunkCount, slots, MultiplyFn<T>{static_cast<C>(factor)});
        return;
      }
    }
    packKernel<S, kPack><<<grid, kBlockThreads, 0, stream>>>(table, chunkCount, slots, CopyFn{});
  });
  RINGSYNC_CHECK_CUDA(cudaGetLastError());
}

// The entries cut into chunks of at most kChunkBytes; each chunk is a PackEntry of its own.
std::vector<PackEntry> cutIntoChunks(const PackEntry* entries, std::size_t entryCount, std::size_t elementBytes) {
  const std::size_t chunkElements = kChunkBytes / elementBytes;
  std::vector<PackEntry> chunks;
  for (std::size_t e = 0; e < entryCount; ++e) {
    for (std::size_t start = 0; start < entries[e].count; start += chunkElements) {
      const std::size_t count = entries[e].count - start < chunkElements ? entries[e].count - start : chunkElements;
      chunks.push_back(
          {static_cast<char*>(entries[e].tensor) + start * elementBytes, entries[e].bufferOffset + start, count});
    }
  }
  return chunks;
}

}  // namespace
}  // namespace kernels

PackPlan::PackPlan(const PackEntry* hostEntries, std::size_t entryCount, DataType type)
    : entryCount_(entryCount), type_(type) {
  if (!isValid(type))
    throw InvalidArgument("PackPlan: type=" + std::to_string(static_cast<int>(type)) + " is not a DataType");
  if (entryCount > 0 && hostEntries == nullptr)
    throw InvalidArgument("PackPlan: entries is null with entryCount=" + std::to_string(entryCount));
  for (std::size_t e = 0; e < entryCount; ++e) {
    if (hostEntries[e].tensor == nullptr && hostEntries[e].count > 0)
      throw InvalidArgument("PackPlan: entry " + std::to_string(e) +
                            " has a null tensor with count=" + std::to_string(hostEntries[e].count));
    totalCount_ += hostEntries[e].count;
  }
  const std::vector<PackEntry> chunks = kernels::cutIntoChunks(hostEntries, entryCount, dataTypeSize(type));
  chunkCount_ = chunks.size();
  if (chunkCount_ == 0) return;
  const std::size_t bytes = chunkCount_ * sizeof(PackEntry);
  RINGSYNC_CHECK_CUDA(cudaMalloc(&deviceEntries_, bytes));
  const cudaError_t copied = cudaMemcpy(deviceEntries_, chunks.data(), bytes, cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) {
    cudaFree(deviceEntries_);
    deviceEntries_ = nullptr;
    throwCudaError("cudaMemcpy(deviceEntries_, chunks.data(), bytes, cudaMemcpyHostToDevice)", __FILE__, __LINE__,
                   copied);
  }
}

PackPlan::~PackPlan() {
  if (deviceEntries_) cudaFree(deviceEntries_);
}

void PackPlan::pack(void* fusionBuffer, double scale, CUstream_st* stream) const {
  if (chunkCount_ == 0) return;
  if (fusionBuffer == nullptr) throw InvalidArgument("PackPlan::pack: fusionBuffer is null");
  kernels::launchPack<true>(deviceEntries_, chunkCount_, fusionBuffer, type_, scale, stream);
}

void PackPlan::unpack(const void* fusionBuffer, double scale, CUstream_st* stream) const {
  if (chunkCount_ == 0) return;
  if (fusionBuffer == nullptr) throw InvalidArgument("PackPlan::unpack: fusionBuffer is null");
  kernels::launchPack<false>(deviceEntries_, chunkCount_, fusionBuffer, type_, scale, stream);
}

}  // namespace ringsync::cuda
