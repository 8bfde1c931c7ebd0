// The staged path for device buffers when NCCL cannot serve them (TensorFlow's soft placement for
// collectives): device -> host staging memory -> the host collective, in place -> device.
//
// Stream semantics: the download is ordered after the work already on the caller's stream and
// completes before the host collective starts (the host needs the bytes); the upload is enqueued
// on the caller's stream and the call returns without waiting for it, like an NCCL call. Without
// a stream (nullptr) the call returns only once the result is in device memory.
//
// Every rank runs the host collective even for count 0, so sequence numbers and fingerprints stay
// in step with ranks that took another route for the same call. The Communicator core composes it
// (src/communicator_impl.cc); it knows nothing of CUDA: the copies go through StagingMemory (the
// device layer's pinned memory, collectives/staged_cuda.h; plain memory in tests), so the control
// flow is tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <functional>

#include "collectives/staging_memory.h"

namespace ringsync::detail {

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
