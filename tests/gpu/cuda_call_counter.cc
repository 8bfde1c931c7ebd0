// An LD_PRELOAD interposer that counts calls into the CUDA runtime and NCCL, then forwards them to
// the real libraries (dlsym RTLD_NEXT). It proves that host-buffer collectives make no CUDA call at
// all on a machine without a GPU: the test reads the counts through ringsync_cuda_calls().
// check_interposer.cmake fails the build's tests if libringsync ever calls a CUDA or NCCL function
// that is not interposed here, so the proof cannot silently go stale.
// (The fat-binary registration that CUDA code runs when the library is loaded, __cudaRegister*,
// is not counted: it records the kernels and does not touch the driver.)
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <dlfcn.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace {

struct Counter {
  const char* name;
  std::atomic<long> calls{0};
};

std::mutex& registryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<Counter*>& registry() {
  static std::vector<Counter*> counters;
  return counters;
}

Counter* registerCounter(const char* name) {
  auto* counter = new Counter{name};  // lives for the whole process, like the symbol it counts
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().push_back(counter);
  return counter;
}

void* realSymbol(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (!symbol) {
    std::fprintf(stderr, "cuda_call_counter: no real %s behind the interposer\n", name);
    std::abort();
  }
  return symbol;
}

}  // namespace

// Calls of `name` so far (nullptr: of every interposed function).
extern "C" long ringsync_cuda_calls(const char* name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  long total = 0;
  for (const Counter* counter : registry())
    if (!name || std::strcmp(name, counter->name) == 0) total += counter->calls.load();
  return total;
}

// Comma-separated names of the functions called so far (for failure messages).
extern "C" void ringsync_cuda_called(char* out, size_t bytes) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::string text;
  for (const Counter* counter : registry())
    if (counter->calls.load() > 0) text += (text.empty() ? "" : ",") + std::string(counter->name);
  std::snprintf(out, bytes, "%s", text.c_str());
}

#define RINGSYNC_INTERPOSE(ret, name, params, args)                        \
  extern "C" ret name params {                                             \
    static Counter* counter = registerCounter(#name);                      \
    counter->calls.fetch_add(1);                                           \
    static auto real = reinterpret_cast<ret(*) params>(realSymbol(#name)); \
    return real args;                                                      \
  }

// --- CUDA runtime -------------------------------------------------------------------------------
RINGSYNC_INTERPOSE(cudaError_t, cudaGetDeviceCount, (int* count), (count))
RINGSYNC_INTERPOSE(cudaError_t, cudaGetDevice, (int* device), (device))
RINGSYNC_INTERPOSE(cudaError_t, cudaSetDevice, (int device), (device))
RINGSYNC_INTERPOSE(cudaError_t, cudaGetDeviceProperties, (cudaDeviceProp * prop, int device), (prop, device))
RINGSYNC_INTERPOSE(cudaError_t, cudaDeviceGetAttribute, (int* value, cudaDeviceAttr attr, int device),
                   (value, attr, device))
RINGSYNC_INTERPOSE(cudaError_t, cudaDeviceGetPCIBusId, (char* id, int len, int device), (id, len, device))
RINGSYNC_INTERPOSE(cudaError_t, cudaDeviceSynchronize, (), ())
RINGSYNC_INTERPOSE(cudaError_t, cudaDriverGetVersion, (int* version), (version))
RINGSYNC_INTERPOSE(cudaError_t, cudaRuntimeGetVersion, (int* version), (version))
RINGSYNC_INTERPOSE(cudaError_t, cudaPointerGetAttributes, (cudaPointerAttributes * attributes, const void* ptr),
                   (attributes, ptr))
RINGSYNC_INTERPOSE(cudaError_t, cudaGetDriverEntryPointByVersion,
                   (const char* symbol, void** function, unsigned int version, unsigned long long flags,
                    cudaDriverEntryPointQueryResult* status),
                   (symbol, function, version, flags, status))
RINGSYNC_INTERPOSE(cudaError_t, cudaGetLastError, (), ())
RINGSYNC_INTERPOSE(cudaError_t, cudaPeekAtLastError, (), ())
RINGSYNC_INTERPOSE(const char*, cudaGetErrorName, (cudaError_t error), (error))
RINGSYNC_INTERPOSE(const char*, cudaGetErrorString, (cudaError_t error), (error))
RINGSYNC_INTERPOSE(cudaError_t, cudaMalloc, (void** ptr, size_t size), (ptr, size))
RINGSYNC_INTERPOSE(cudaError_t, cudaFree, (void* ptr), (ptr))
RINGSYNC_INTERPOSE(cudaError_t, cudaMallocHost, (void** ptr, size_t size), (ptr, size))
RINGSYNC_INTERPOSE(cudaError_t, cudaFreeHost, (void* ptr), (ptr))
RINGSYNC_INTERPOSE(cudaError_t, cudaHostAlloc, (void** ptr, size_t size, unsigned int flags), (ptr, size, flags))
RINGSYNC_INTERPOSE(cudaError_t, cudaHostRegister, (void* ptr, size_t size, unsigned int flags), (ptr, size, flags))
RINGSYNC_INTERPOSE(cudaError_t, cudaHostUnregister, (void* ptr), (ptr))
RINGSYNC_INTERPOSE(cudaError_t, cudaMallocManaged, (void** ptr, size_t size, unsigned int flags), (ptr, size, flags))
RINGSYNC_INTERPOSE(cudaError_t, cudaMallocAsync, (void** ptr, size_t size, cudaStream_t stream), (ptr, size, stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaFreeAsync, (void* ptr, cudaStream_t stream), (ptr, stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaMemGetInfo, (size_t * free, size_t* total), (free, total))
RINGSYNC_INTERPOSE(cudaError_t, cudaMemcpy, (void* dst, const void* src, size_t bytes, cudaMemcpyKind kind),
                   (dst, src, bytes, kind))
RINGSYNC_INTERPOSE(cudaError_t, cudaMemcpyAsync,
                   (void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream),
                   (dst, src, bytes, kind, stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaMemset, (void* ptr, int value, size_t bytes), (ptr, value, bytes))
RINGSYNC_INTERPOSE(cudaError_t, cudaMemsetAsync, (void* ptr, int value, size_t bytes, cudaStream_t stream),
                   (ptr, value, bytes, stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamCreate, (cudaStream_t * stream), (stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamCreateWithFlags, (cudaStream_t * stream, unsigned int flags), (stream, flags))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamDestroy, (cudaStream_t stream), (stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamSynchronize, (cudaStream_t stream), (stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamQuery, (cudaStream_t stream), (stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamWaitEvent, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
                   (stream, event, flags))
RINGSYNC_INTERPOSE(cudaError_t, cudaStreamGetDevice, (cudaStream_t stream, int* device), (stream, device))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventCreate, (cudaEvent_t * event), (event))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventCreateWithFlags, (cudaEvent_t * event, unsigned int flags), (event, flags))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventDestroy, (cudaEvent_t event), (event))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventSynchronize, (cudaEvent_t event), (event))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventQuery, (cudaEvent_t event), (event))
RINGSYNC_INTERPOSE(cudaError_t, cudaEventElapsedTime, (float* ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end))
RINGSYNC_INTERPOSE(cudaError_t, cudaLaunchKernel,
                   (const void* func, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream),
                   (func, grid, block, args, shared, stream))
// What the <<<>>> syntax compiles to: every kernel launch starts with __cudaPushCallConfiguration.
extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, CUstream_st* stream);
extern "C" cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream);
extern "C" cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* func);
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                          cudaStream_t stream);
RINGSYNC_INTERPOSE(unsigned, __cudaPushCallConfiguration, (dim3 grid, dim3 block, size_t shared, CUstream_st* stream),
                   (grid, block, shared, stream))
RINGSYNC_INTERPOSE(cudaError_t, __cudaPopCallConfiguration, (dim3 * grid, dim3* block, size_t* shared, void* stream),
                   (grid, block, shared, stream))
RINGSYNC_INTERPOSE(cudaError_t, __cudaGetKernel, (cudaKernel_t * kernel, const void* func), (kernel, func))
RINGSYNC_INTERPOSE(cudaError_t, __cudaLaunchKernel,
                   (cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream),
                   (kernel, grid, block, args, shared, stream))

// --- NCCL ---------------------------------------------------------------------------------------
RINGSYNC_INTERPOSE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id), (id))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int ranks, ncclUniqueId id, int rank),
                   (comm, ranks, id, rank))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommInitRankConfig,
                   (ncclComm_t * comm, int ranks, ncclUniqueId id, int rank, ncclConfig_t* config),
                   (comm, ranks, id, rank, config))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* state), (comm, state))
RINGSYNC_INTERPOSE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count), (comm, count))
RINGSYNC_INTERPOSE(const char*, ncclGetErrorString, (ncclResult_t result), (result))
RINGSYNC_INTERPOSE(const char*, ncclGetLastError, (ncclComm_t comm), (comm))
RINGSYNC_INTERPOSE(ncclResult_t, ncclAllReduce,
                   (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                    cudaStream_t stream),
                   (send, recv, count, type, op, comm, stream))
RINGSYNC_INTERPOSE(ncclResult_t, ncclBroadcast,
                   (const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                    cudaStream_t stream),
                   (send, recv, count, type, root, comm, stream))
RINGSYNC_INTERPOSE(ncclResult_t, ncclReduceScatter,
                   (const void* send, void* recv, size_t recvcount, ncclDataType_t type, ncclRedOp_t op,
                    ncclComm_t comm, cudaStream_t stream),
                   (send, recv, recvcount, type, op, comm, stream))
RINGSYNC_INTERPOSE(ncclResult_t, ncclAllGather,
                   (const void* send, void* recv, size_t sendcount, ncclDataType_t type, ncclComm_t comm,
                    cudaStream_t stream),
                   (send, recv, sendcount, type, comm, stream))
RINGSYNC_INTERPOSE(ncclResult_t, ncclGroupStart, (), ())
RINGSYNC_INTERPOSE(ncclResult_t, ncclGroupEnd, (), ())
