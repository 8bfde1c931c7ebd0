#include "cuda/elementwise_kernels.h"

#include <string>

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.h"
#include "cuda/element_traits.h"
#include "cuda/type_dispatch.h"

namespace ringsync::cuda {
namespace kernels {
namespace {

// out = f(a, b) over a VectorSplit: whole vectors first (grid-stride), then the scalar edges.
template <typename S, typename F> __global__ void binaryKernel(S* out, const S* a, const S* b, VectorSplit split, F f) {
  constexpr std::size_t kLanes = Vec16<S>::kLanes;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  auto* outV = reinterpret_cast<Vec16<S>*>(out + split.head);
  const auto* aV = reinterpret_cast<const Vec16<S>*>(a + split.head);
  const auto* bV = reinterpret_cast<const Vec16<S>*>(b + split.head);
  for (std::size_t v = first; v < split.vectors; v += stride) {
    const Vec16<S> x = aV[v], y = bV[v];
    Vec16<S> r;
#pragma unroll
    for (int k = 0; k < Vec16<S>::kLanes; ++k) r.lane[k] = f(x.lane[k], y.lane[k]);
    outV[v] = r;
  }
  const std::size_t scalars = split.scalars(kLanes);
  for (std::size_t s = first; s < scalars; s += stride) {
    const std::size_t i = split.scalarIndex(s, kLanes);
    out[i] = f(a[i], b[i]);
  }
}

// out = f(in), same structure.
template <typename S, typename F> __global__ void unaryKernel(S* out, const S* in, VectorSplit split, F f) {
  constexpr std::size_t kLanes = Vec16<S>::kLanes;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  auto* outV = reinterpret_cast<Vec16<S>*>(out + split.head);
  const auto* inV = reinterpret_cast<const Vec16<S>*>(in + split.head);
  for (std::size_t v = first; v < split.vectors; v += stride) {
    const Vec16<S> x = inV[v];
    Vec16<S> r;
#pragma unroll
    for (int k = 0; k < Vec16<S>::kLanes; ++k) r.lane[k] = f(x.lane[k]);
    outV[v] = r;
  }
  const std::size_t scalars = split.scalars(kLanes);
  for (std::size_t s = first; s < scalars; s += stride) {
    const std::size_t i = split.scalarIndex(s, kLanes);
    out[i] = f(in[i]);
  }
}

template <typename T, typename Op> struct ReduceFn {
  using E = Element<T>;
  __device__ __forceinline__ typename E::Storage operator()(typename E::Storage x, typename E::Storage y) const {
    return E::narrow(Op::apply(E::widen(x), E::widen(y)));
  }
};

template <typename T> struct DivideFn {
  using E = Element<T>;
  int divisor;
  __device__ __forceinline__ typename E::Storage operator()(typename E::Storage x) const {
    using C = typename E::Compute;
    return E::narrow(static_cast<C>(E::widen(x) / divisor));
  }
};

template <typename S> std::size_t workItems(const VectorSplit& split) {
  const std::size_t scalars = split.scalars(Vec16<S>::kLanes);
  return split.vectors > scalars ? split.vectors : scalars;
}

template <typename T, typename Op>
void launchReduce(void* out, const void* a, const void* b, std::size_t count, cudaStream_t stream) {
  using S = typename Element<T>::Storage;
  const VectorSplit split = splitForVectors(count, sizeof(S), reinterpret_cast<std::uintptr_t>(out),
                                            reinterpret_cast<std::uintptr_t>(a), reinterpret_cast<std::uintptr_t>(b));
  binaryKernel<<<gridFor(workItems<S>(split)), kBlockThreads, 0, stream>>>(static_cast<S*>(out),
                                                                           static_cast<const S*>(a),
                                                                           static_cast<const S*>(b), split,
                                                                           ReduceFn<T, Op>{});
}

template <typename T, typename F>
void launchUnary(void* out, const void* in, std::size_t count, F f, cudaStream_t stream) {
  using S = typename Element<T>::Storage;
  const auto o = reinterpret_cast<std::uintptr_t>(out);
  const VectorSplit split = splitForVectors(count, sizeof(S), o, reinterpret_cast<std::uintptr_t>(in), o);
  unaryKernel<<<gridFor(workItems<S>(split)), kBlockThreads, 0, stream>>>(static_cast<S*>(out),
                                                                          static_cast<const S*>(in), split, f);
}

}  // namespace
}  // namespace kernels

unsigned gridFor(std::size_t work) {
  // Cached per thread for the last device asked about: cudaDeviceGetAttribute is cheap, but a
  // launcher on the hot path should not ask every time.
  thread_local int cachedDevice = -1;
  thread_local unsigned cachedMaxBlocks = 0;
  int device = 0;
  RINGSYNC_CHECK_CUDA(cudaGetDevice(&device));
  if (device != cachedDevice) {
    int sms = 0;
    RINGSYNC_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cachedMaxBlocks = static_cast<unsigned>(sms) * 8u;  // 8 blocks of 256 threads fill an SM
    cachedDevice = device;
  }
  const std::size_t needed = (work + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(needed < cachedMaxBlocks ? (needed ? needed : 1) : cachedMaxBlocks);
}

void reduce(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op,
            CUstream_st* stream) {
  if (count == 0) return;
  using namespace kernels;
  dispatchElement(type, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return launchReduce<T, SumOp>(out, a, b, count, stream);
      case ReduceOp::kProd: return launchReduce<T, ProdOp>(out, a, b, count, stream);
      case ReduceOp::kMin: return launchReduce<T, MinOp>(out, a, b, count, stream);
      case ReduceOp::kMax: return launchReduce<T, MaxOp>(out, a, b, count, stream);
    }
    throw InvalidArgument("cuda::reduce: op=" + std::to_string(static_cast<int>(op)) + " is not a ReduceOp");
  });
  RINGSYNC_CHECK_CUDA(cudaGetLastError());
}

void divide(void* out, const void* in, std::size_t count, DataType type, int divisor, CUstream_st* stream) {
  if (divisor == 0) throw InvalidArgument("cuda::divide: divisor=0");
  if (count == 0) return;
  using namespace kernels;
  dispatchElement(type, [&](auto tag) {
    using T = decltype(tag);
    launchUnary<T>(out, in, count, DivideFn<T>{divisor}, stream);
  });
  RINGSYNC_CHECK_CUDA(cudaGetLastError());
}

}  // namespace ringsync::cuda
