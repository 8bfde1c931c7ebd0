// The collectives the backend hands to MPI (ringsync has no algorithm of its own for them):
// gather, scatter and all-to-all, as MPI_Igather / MPI_Iscatter / MPI_Ialltoallv on a duplicate of
// the group's MPI communicator (apart from ringsync's own traffic), polled under ringsync's
// deadline. Each goes after a fingerprint round (call_fingerprint.h): ranks that disagree raise
// MismatchError before MPI sees the call. They run on the group's progress thread, in the order
// issued, like every collective of the group. Buffers are host tensors, contiguous (the caller
// stages CUDA and strided tensors). At a TimeoutError the buffers are left to MPI for good (an MPI
// collective cannot be cancelled).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <mpi.h>

#include "call_fingerprint.h"
#include "ringsync/options.h"

namespace ringsync::torch_backend {

// A group's MPI communicator for MPI's own calls (collectives here, and point-to-point).
class MpiSide {
 public:
  // Duplicates `comm` (collective over it); MPI errors on the duplicate are returned, not fatal.
  MpiSide(MPI_Comm comm, const Options& options);
  ~MpiSide();  // frees the duplicate unless MPI is finalised
  MpiSide(const MpiSide&) = delete;
  MpiSide& operator=(const MpiSide&) = delete;

  MPI_Comm comm() const { return comm_; }
  const Options& options() const { return options_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The next call's fingerprint, numbered (progress thread only).
  CallFingerprint fingerprint(::c10d::OpType kind, const at::Tensor& like, std::uint64_t count, int root = -1,
                              int op = -1);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  Options options_;
  int rank_ = 0;
  int size_ = 0;
  std::uint64_t calls_ = 0;
};

// recvBlock (root only; size * send's elements) = every rank's send, rank by rank.
void gatherThroughMpi(MpiSide& side, const at::Tensor& send, const at::Tensor& recvBlock, int root);
// recv = root's sendBlock[rank], sendBlock (root only) holding size * recv's elements.
void scatterThroughMpi(MpiSide& side, const at::Tensor& sendBlock, const at::Tensor& recv, int root);
// recv's part from rank r (recvCounts[r] elements, in rank order) = rank r's part for this rank.
void alltoallThroughMpi(MpiSide& side, const at::Tensor& send, const std::vector<std::int64_t>& sendCounts,
                        const at::Tensor& recv, const std::vector<std::int64_t>& recvCounts, const char* call);
// The fingerprint round of a call carried by ringsync's own algorithms (reduce: its root).
void agreeThroughMpi(MpiSide& side, const CallFingerprint& call, const char* name);

}  // namespace ringsync::torch_backend
