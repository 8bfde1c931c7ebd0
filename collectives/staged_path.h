// The staged path for device buffers when NCCL cannot serve them (TensorFlow's soft placement for
// collectives): device -> host staging memory -> the host collective, in place -> device.
//
// Stream semantics: the download is ordered after the work already on the caller's stream and
// completes before the host collective starts (the host needs the bytes); the upload is enqueued
// on the caller's stream and the call returns without waiting for it, like an NCCL call. Without
// a stream (nullptr) the call returns only once the result is in device memory.
//
// Every rank runs the host collective even for count 0, so sequence numbers and fingerprints stay
// in step with ranks that took another route for the same call. This file knows nothing of CUDA:
// the copies go through StagingMemory (CUDA with pinned memory in staged_cuda.h; plain memory in
// tests), so the algorithm is tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <functional>

struct CUstream_st;

namespace ringsync::detail {

class StagingMemory {
 public:
  virtual ~StagingMemory() = default;
  // Host memory for at least `bytes`, reused across calls. Waits until earlier uploads out of it
  // have completed, so it may be overwritten.
  virtual void* hostBuffer(std::size_t bytes) = 0;
  // device -> host, ordered after the work on `stream`; returns once the bytes are on the host.
  virtual void download(void* host, const void* device, std::size_t bytes, CUstream_st* stream) = 0;
  // host -> device, enqueued on `stream`; hostBuffer() and finish() wait for it.
  virtual void upload(void* device, const void* host, std::size_t bytes, CUstream_st* stream) = 0;
  // Returns once the last upload has completed.
  virtual void finish() = 0;
};

// The host collective, run in place on the staged bytes.
using HostStep = std::function<void(void* hostData)>;

// recv = allreduce(send): download send, run `allreduceInPlace`, upload into recv.
void stagedAllreduce(StagingMemory& memory, const void* send, void* recv, std::size_t bytes, CUstream_st* stream,
                     const HostStep& allreduceInPlace);

// The root downloads buf, every rank runs `broadcastInPlace`, the others upload the result
// (the root's buffer already holds it).
void stagedBroadcast(StagingMemory& memory, void* buf, std::size_t bytes, bool isRoot, CUstream_st* stream,
                     const HostStep& broadcastInPlace);

}  // namespace ringsync::detail
