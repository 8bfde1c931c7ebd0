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
// (src/call_pipeline.cc); it knows nothing of CUDA: the copies go through StagingMemory (the
// device layer's pinned memory, collectives/staged_cuda.h; plain memory in tests), so the control
// flow is tested on machines without a GPU.
#pragma once

#include <cstddef>
#include <functional>

#include "collectives/call.h"
#include "collectives/staging_memory.h"

namespace ringsync::detail {

// Where a call's bytes sit in the staging buffer: the rank's input is downloaded to
// [downloadAt, +downloadBytes), the host collective runs in place over the buffer (its send at
// hostSendAt, its recv at hostRecvAt), and the rank's output is uploaded from [uploadAt, +uploadBytes).
//   allreduce       the whole buffer in and out
//   reducescatter   every block in; this rank's block (in place in the host buffer) out
//   allgather       this rank's block in, at its place; every block out
//   broadcast       the root's buffer in; every other rank's out
struct StagedLayout {
  std::size_t hostBytes = 0;
  std::size_t downloadAt = 0, downloadBytes = 0;
  std::size_t hostSendAt = 0, hostRecvAt = 0;
  std::size_t uploadAt = 0, uploadBytes = 0;
};
StagedLayout stagedLayout(const Call& call, int rank, int size);

// The host collective, run on the staged bytes (a Call over host memory, no stream).
using HostStep = std::function<void(const Call& hostCall)>;

// Downloads the input, runs `runOnHost`, uploads the output (stagedLayout).
void stagedRun(StagingMemory& memory, const Call& call, int rank, int size, const HostStep& runOnHost);

}  // namespace ringsync::detail
